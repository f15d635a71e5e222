"""A loop that runs exactly once is its body (``intent_eqsat.ir.single_trip``, applied by ``tiles.bind``): a
reduction tile as wide as a constant extent leaves no loop, a narrower one keeps it, and both programs still equal
the KIR float64 reference (GEMM with a literal K; attention with a literal head dimension, whose query-by-key
contraction then sits directly in the key loop)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.ir.core import Module
from intent_eqsat.ir.single_trip import constant_ints, inline_single_trip_loops, runs_once
from intent_eqsat.pipeline import make_options
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import assert_matches_reference, ops_named

GEMM_K32 = """
kernel gemm_k32(A: f32[M, 32], B: f32[32, N], C: out f32[M, N]) {
  C[m, n] = sum(k: A[m, k] * B[k, n])
}
"""

ATTENTION_D32 = """
kernel attention_d32(Q: bf16[Z, H, S, 32], K: bf16[Z, H, T, 32], V: bf16[Z, H, T, 32], scale: f32,
                     O: out bf16[Z, H, S, 32]) {
  let s[z, h, i, j] = sum(d: cast<f32>(Q[z, h, i, d]) * cast<f32>(K[z, h, j, d])) * scale
  let mx[z, h, i] = max(j: s[z, h, i, j])
  let p[z, h, i, j] = exp(s[z, h, i, j] - mx[z, h, i])
  O[z, h, i, d] = cast<bf16>(sum(j: p[z, h, i, j] * cast<f32>(V[z, h, j, d])) / sum(j: p[z, h, i, j]))
}
"""


def _optimize(text: str, tiles: tuple, options=None):
    module = kir.parse(text, filename="<test>")
    result = optimize(construct(module, options=make_options(options)), target="sm90", tile_candidates=tiles)
    ir.verify(result.program)
    return module, result


def _rebound(result, **binding):
    """The pick's own program with its tile parameters bound to ``binding`` (as ``bench/tile_sweep.py`` does)."""
    (kr,) = result.kernels.values()
    (base,) = [c for c in kr.candidates if c.forbidden is None and c.term is not None][:1]
    kernel = replace(base, params={**kr.binding, **binding}).decode()
    program = Module(result.program.target, result.program.options, list(result.program.params), [kernel])
    ir.verify(program)
    return program


def _reduce_loops(program) -> list:
    return [op for op in ops_named(program.kernels[0].body.ops, "for") if op.attrs.get("reduce") == "add"]


def test_a_k_tile_as_wide_as_the_literal_extent_leaves_no_k_loop():
    module, result = _optimize(GEMM_K32, (16, 32))
    whole = _rebound(result, TILE_K=32)
    assert not _reduce_loops(whole), ir.print_module(whole)
    (contract,) = ops_named(whole.kernels[0].body.ops, "contract")
    assert [str(e) for e in contract.operands[0].type.shape][-1] == "32"
    assert_matches_reference(module, whole, seeds=(1, 2), sizes={"M": 45, "N": 70})
    halves = _rebound(result, TILE_K=16)
    (loop,) = _reduce_loops(halves)                 # two iterations: the loop stays
    assert not runs_once(loop, constant_ints(halves.kernels[0])) and ops_named(loop.regions[0].ops, "contract")
    assert_matches_reference(module, halves, seeds=(1, 2), sizes={"M": 45, "N": 70})


def test_a_loop_with_a_symbolic_bound_is_kept():
    module, result = _optimize(GEMM_K32.replace("32]", "K]").replace("[32,", "[K,").replace("gemm_k32", "gemm"),
                               (32,))
    kernel = result.program.kernels[0]
    assert _reduce_loops(result.program)
    assert inline_single_trip_loops(kernel) == kernel


@pytest.mark.slow
def test_flash_attention_with_a_literal_head_dim_contracts_scores_in_the_key_loop():
    module, result = _optimize(ATTENTION_D32, (32,), {"numerics": "relaxed_normalization"})
    program = result.program                        # TILE_K = 32 = the head dimension
    key_loops = [op for op in ops_named(program.kernels[0].body.ops, "for") if len(op.results) == 3]
    assert len(key_loops) == 2                          # the full key tiles and the tail (ir.tail_split)
    for key_loop in key_loops:
        assert not ops_named(key_loop.regions[0].ops, "for"), "a loop is left inside the key loop"
        assert len([op for op in key_loop.regions[0].ops if op.name == "contract"]) == 2
    assert_matches_reference(module, program, seeds=(5,), sizes={"Z": 1, "H": 2, "S": 37, "T": 70})
