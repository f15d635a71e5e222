"""All-false ranges of blocked loops skipped after binding (``intent_eqsat.ir.range_skip``, SPEC PASS-3.5): a
blocked causal kernel's key loops stop at the end of the program's row tile when, with the mask false in every lane,
the body provably yields its carried values unchanged; source numerics use only the exact laws; a body that is not
the identity keeps its whole range; without the narrowing group nothing is skipped. Every program still equals the
KIR float64 reference on shapes that end in partial tiles."""
from __future__ import annotations

import os

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.pipeline import make_options
from intent_eqsat.rules import optimize, registry
from tests.cpu.rules.reference import ROOT, assert_matches_reference, ops_named

RELAXED = {"numerics": "relaxed_normalization"}
CAUSAL = os.path.join(ROOT, "bench", "suite", "causal_attention_bf16.kir")
SIZES = {"Z": 1, "H": 2, "S": 45, "T": 45, "D": 20}

CAUSAL_SUM = """
kernel causal_sum(X: f32[M, N], Y: out f32[M]) {
  Y[i] = sum(j: X[i, j] where j <= i else 0.0)
}
"""
# the masked-out members contribute 1.0 each: the all-false range is not the identity and must stay
CAUSAL_ONES = """
kernel causal_ones(X: f32[M, N], Y: out f32[M]) {
  Y[i] = sum(j: X[i, j] where j <= i else 1.0)
}
"""


def _optimize(module, options=None, rulebooks=None, tiles=(8,)):
    result = optimize(construct(module, options=make_options(options)), target="sm90", tile_candidates=tiles,
                      rulebooks=rulebooks)
    ir.verify(result.program)
    return result


def _skipped(program) -> list:
    """The loops whose all-false range was removed, and the others' narrowing kinds (None: no record)."""
    return [("skipped" if "all_false_skipped" in op.attrs["narrowing"]["proof"] else op.attrs["narrowing"]["kind"])
            if "narrowing" in op.attrs else None
            for op in ops_named(program.kernels[0].body.ops, "for") if op.attrs.get("reduce")]


def _causal():
    with open(CAUSAL) as f:
        return kir.parse(f.read(), filename=CAUSAL)


@pytest.mark.slow
def test_causal_attention_key_loops_stop_at_the_row_tile_under_relaxed_numerics():
    module = _causal()
    result = _optimize(module, RELAXED)
    kernel = result.program.kernels[0]
    key_loops = [op for op in ops_named(kernel.body.ops, "for") if op.attrs.get("reduce") in ("max", "add")
                 and op.attrs.get("origin", "").split(".")[1] in ("s1", "s3")]
    assert len(key_loops) == 3, ir.print_module(result.program)          # max, mass, moment
    producers = {r.name: op for op in ir.walk(kernel.body) for r in op.results}
    for loop in key_loops:
        assert "all_false_skipped" in loop.attrs["narrowing"]["proof"], loop.attrs
        assert producers[loop.operands[1].name].name == "min"              # min(T, max(0, row tile end))
    assert_matches_reference(module, result.program, seeds=(3, 4), sizes=SIZES)


@pytest.mark.slow
def test_source_numerics_skip_only_what_the_exact_laws_prove():
    """max(acc, -inf) = acc is exact, so the maximum's loop stops early; the mass and moment loops would need
    -inf - m = -inf and 0 * v = 0, which hold only for finite data: they keep their whole range."""
    module = _causal()
    result = _optimize(module)
    origins = {op.attrs.get("origin", "").split(".")[1]: op for op in ops_named(result.program.kernels[0].body.ops,
                                                                                 "for") if op.attrs.get("reduce")}
    assert "all_false_skipped" in origins["s1"].attrs["narrowing"]["proof"]
    sums = [op for op in ops_named(result.program.kernels[0].body.ops, "for")
            if op.attrs.get("reduce") == "add" and op.attrs.get("origin", "").startswith("causal_attention_bf16.s3")]
    assert sums and not any("narrowing" in op.attrs for op in sums)
    assert_matches_reference(module, result.program, seeds=(5,), sizes=SIZES)


@pytest.mark.slow
def test_without_the_narrowing_group_nothing_is_skipped():
    names = [g for g in registry.load().names if g != "narrowing"]
    result = _optimize(_causal(), RELAXED, rulebooks=names)
    assert not any("narrowing" in op.attrs for op in ir.walk(result.program.kernels[0].body))


def test_a_blocked_causal_sum_skips_and_a_body_that_is_not_the_identity_does_not():
    summed = kir.parse(CAUSAL_SUM)
    res = _optimize(summed, tiles=(32,))
    assert "skipped" in _skipped(res.program), ir.print_module(res.program)
    assert_matches_reference(summed, res.program, seeds=(1, 2), sizes={"M": 70, "N": 75})
    ones = kir.parse(CAUSAL_ONES)
    res = _optimize(ones, tiles=(32,))
    assert "skipped" not in _skipped(res.program)
    assert_matches_reference(ones, res.program, seeds=(1, 2), sizes={"M": 70, "N": 75})
