"""A blocking loop nested in a tile loop runs as its body under a launch guard (``intent_eqsat.ir.unswitch``, run by
``optimizer.optimize`` after the ranges are narrowed): attention with a size-symbol head dimension gets, per key loop,
an ``if`` whose guarded branch contracts the scores directly in the key loop and whose other branch is the loop
nest as it was; both branches equal the KIR float64 reference (a head dimension within one tile takes the guarded
branch, a wider one the other). A loop with nothing nested is left alone."""
from __future__ import annotations

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.ir.launch import evaluate
from intent_eqsat.ir.unswitch import single_trip_guard, unswitch_single_trip_loops
from intent_eqsat.pipeline import make_options
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import assert_matches_reference, corpus, ops_named

ATTENTION = """
kernel attention(Q: bf16[Z, H, S, D], K: bf16[Z, H, T, D], V: bf16[Z, H, T, D], scale: f32,
                 O: out bf16[Z, H, S, D]) {
  let s[z, h, i, j] = sum(d: cast<f32>(Q[z, h, i, d]) * cast<f32>(K[z, h, j, d])) * scale
  let mx[z, h, i] = max(j: s[z, h, i, j])
  let p[z, h, i, j] = exp(s[z, h, i, j] - mx[z, h, i])
  O[z, h, i, d] = cast<bf16>(sum(j: p[z, h, i, j] * cast<f32>(V[z, h, j, d])) / sum(j: p[z, h, i, j]))
}
"""

GEMM = """
kernel gemm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
  C[m, n] = sum(k: A[m, k] * B[k, n])
}
"""


def _optimize(text: str, tiles: tuple, options=None):
    module = kir.parse(text, filename="<test>")
    result = optimize(construct(module, options=make_options(options)), target="sm90", tile_candidates=tiles)
    ir.verify(result.program)
    return module, result


def _loops_inside(op) -> list:
    return [o for region in op.regions for o in ops_named(region.ops, "for")]


@pytest.mark.slow
def test_size_symbol_head_dim_attention_is_unswitched_and_both_branches_match_the_reference():
    module, result = _optimize(ATTENTION, (32,), {"numerics": "relaxed_normalization"})
    program = result.program                        # TILE_K = 32: one head-dim tile when D <= 32
    kernel = program.kernels[0]
    branches = ops_named(kernel.body.ops, "if")
    assert len(branches) == 2, ir.print_module(program)     # the full key tiles and the tail (ir.tail_split)
    assert branches[0].operands[0] == branches[1].operands[0]        # one guard value for both
    defs = {v.name: op for op in ops_named(kernel.body.ops) for v in op.results}
    for branch in branches:
        guard = defs[branch.operands[0].name]
        assert guard.name == "launch"
        assert [evaluate(guard.attrs["expr"], {"D": d}) for d in (0, 1, 32, 33, 64)] == \
            [False, True, True, False, False]
        guarded, original = branch.regions
        (key_loop,) = [op for op in guarded.ops if op.name == "for"]
        assert not _loops_inside(key_loop), "the guarded branch keeps a loop inside the key loop"
        assert len([op for op in key_loop.regions[0].ops if op.name == "contract"]) == 2
        (kept,) = [op for op in original.ops if op.name == "for"]
        (inner,) = _loops_inside(kept)
        assert single_trip_guard(inner, *_facts(kernel)) == guard.attrs["expr"]
    sizes = {"Z": 1, "H": 2, "S": 37, "T": 70}
    assert_matches_reference(module, program, seeds=(5,), sizes={**sizes, "D": 24})    # the guarded branch
    assert_matches_reference(module, program, seeds=(6,), sizes={**sizes, "D": 40})    # two head-dim tiles


def _facts(kernel):
    from intent_eqsat.ir.single_trip import constant_ints
    defs = {v.name: op for op in ops_named(kernel.body.ops) for v in op.results}
    return constant_ints(kernel), defs


def test_a_loop_with_no_loop_inside_is_left_alone():
    _, result = _optimize(GEMM, (32,))
    kernel = result.program.kernels[0]
    assert ops_named(kernel.body.ops, "for") and not ops_named(kernel.body.ops, "if")
    assert unswitch_single_trip_loops(kernel) == kernel


@pytest.mark.slow
def test_row_passes_compiled_for_one_tile_rows_run_once_under_a_guard():
    """Compiled for rows of 256 (``sizes``), softmax's passes over the row are whole-row tile loops; with the
    ``remat`` group they run once under ``N <= 256`` (``ir.unswitch.unswitch_sibling_loops``): the KIR float64
    reference agrees for rows within the tile and wider ones. A row sum (one pass, nothing re-read) keeps its loop."""
    from intent_eqsat import pipeline
    rows = {"M": 32768, "N": 256}
    res = pipeline.run(corpus("softmax"), provider=None, sizes=rows)
    kernel = res.program.kernels[0]
    guards = [op for op in ops_named(kernel.body.ops, "launch") if op.results[0].name.startswith("runs_once")]
    assert len(guards) == 1, ir.print_module(res.program)
    assert [evaluate(guards[0].attrs["expr"], {"N": n}) for n in (200, 256, 300)] == [True, True, False]
    for n in (200, 300):
        assert_matches_reference(res.kir, res.program, seeds=(n,), sizes={"M": 9, "N": n})
    res = pipeline.run(corpus("row_sum"), provider=None, sizes=rows)
    assert "runs_once" not in ir.print_module(res.program)
    without = pipeline.run(corpus("softmax"), provider=None, sizes=rows,
                           rulebooks=["neutralize", "blocking", "reduction", "mapping", "online", "online_tiles",
                                      "contraction", "narrowing"])
    assert "runs_once" not in ir.print_module(without.program)      # the pass belongs to the remat group
