"""Lane ranges of loops narrowed after binding (``intent_eqsat.ir.range_skip``, SPEC PASS-3.5): causal attention's
one-pass key-tile loop runs the tiles below the row tile's diagonal without checks and stops after the diagonal
when, with the mask false in every lane, the body provably yields its carried values unchanged; source numerics use
only the exact laws; a body that is not the identity keeps its whole range; without the narrowing group nothing is
narrowed. Every program still equals the KIR float64 reference on shapes that end in partial tiles."""
from __future__ import annotations

import os

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.pipeline import make_options
from intent_eqsat.rules import registry
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import ROOT, assert_matches_reference, guarded_branch_ops, iv_dependent, ops_named

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


def _skipped_checks(program) -> set[str]:
    """The bounds (LaunchExpr text) the checks of the skipped loops compare the loop index with; '?' if other."""
    defs = {r.name: op for op in ir.walk(program.kernels[0].body) for r in op.results}
    out = set()
    for op in ops_named(program.kernels[0].body.ops, "for"):
        proof = op.attrs.get("narrowing", {}).get("proof", "")
        if "all_false_skipped" not in proof:
            continue
        check = defs.get(proof.split("have %")[1].split(" ")[0])
        bound = defs.get(check.operands[1].name) if check is not None and check.name == "cmp" else None
        src = defs.get(bound.operands[0].name) if bound is not None and bound.name == "broadcast" else None
        out.add(str(src.attrs["expr"]) if src is not None and src.name == "launch" else "?")
    return out


def _causal():
    with open(CAUSAL) as f:
        return kir.parse(f.read(), filename=CAUSAL)


@pytest.mark.slow
def test_causal_flash_attention_runs_unmasked_tiles_below_the_diagonal_and_stops_after_it():
    """Relaxed numerics: the one-pass key-tile loop is split into the tiles below the row tile's diagonal (every
    lane of the causal and tail checks true: no select on them, unmasked key/value reads) and the diagonal tiles,
    which stop at ``min(T, max(0, row tile end))`` (the tiles past it are all-false and, with the scores -inf, the
    online update yields its carry: m' = m, alpha = 1, weights 0)."""
    module = _causal()
    result = _optimize(module, RELAXED)
    guarded = guarded_branch_ops(result.program.kernels[0].body.ops)    # head dim within one tile (ir.unswitch)
    loops = [op for op in ops_named(guarded, "for") if len(op.results) == 3]
    assert [op.attrs["narrowing"]["kind"] for op in loops] == ["all_true", "mixed"], ir.print_module(result.program)
    below, diagonal = loops
    assert diagonal.operands[0] == below.operands[1] and diagonal.operands[3:] == below.results
    assert "all_false_skipped" in diagonal.attrs["narrowing"]["proof"]
    producers = {r.name: op for op in ops_named(guarded) for r in op.results}
    assert producers[diagonal.operands[1].name].name == "min"             # min(T, max(0, row tile end))
    dep = iv_dependent(below)
    assert not [op for op in ir.walk(below.regions[0]) if op.name == "select" and
                producers.get(op.operands[0].name, op).name in ("cmp", "and") and op.operands[0].name in dep and
                producers[op.operands[0].name].attrs.get("pred") != "eq"], "a select on a key check is left"
    assert not [op for op in ir.walk(below.regions[0]) if op.name == "load" and op.attrs.get("valid") and
                op.operands[-1].name in dep], "a key/value read still checks the key index"
    assert len([op for op in ir.walk(below.regions[0]) if op.name == "contract"]) == 2
    assert_matches_reference(module, result.program, seeds=(3, 4), sizes=SIZES)


@pytest.mark.slow
def test_source_numerics_skip_only_what_the_exact_laws_prove():
    """Without the numeric permission there is no one-pass loop; max(acc, -inf) = acc is exact, so the maximum's key
    loop stops early; the mass and moment loops would need -inf - m = -inf and 0 * v = 0, which hold only for finite
    data: they keep their whole range (split into the all-true keys and the rest, nothing removed)."""
    module = _causal()
    result = _optimize(module)
    loops = [op for op in ir.walk(result.program.kernels[0].body) if op.name == "for" and "narrowing" in op.attrs]
    skipped = {op.attrs.get("origin", "").split(".")[1] for op in loops
               if "all_false_skipped" in op.attrs["narrowing"]["proof"]}
    assert skipped == {"s1"}, skipped
    sums = [op for op in loops if op.attrs.get("origin", "").startswith("causal_attention_bf16.s3")]
    assert sums and {op.attrs["narrowing"]["kind"] for op in sums} == {"all_true", "mixed"}
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
    # a range may still be cut at the column bound j < N (split_reduction chunks the key loop, so a chunk's end can
    # pass N), never at the causal predicate, whose false members add 1.0 each
    assert _skipped_checks(res.program) <= {"N"}, ir.print_module(res.program)
    assert_matches_reference(ones, res.program, seeds=(1, 2), sizes={"M": 70, "N": 75})
