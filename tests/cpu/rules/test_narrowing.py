"""The narrowing rulebook (SPEC PASS-3.5, IR-10 (11)), ``rulebooks/narrowing.py``: a loop whose body
selects on ``iv <= x`` (x loop-invariant with exact bounds) is split into all-true / mixed / all-false ranges; the
all-true loop has no mask left, the all-false loop is removed only when value propagation proves its body is the
identity, the result verifies and equals the KIR float64 reference on odd shapes."""
from __future__ import annotations

import os

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.cost import RooflineCost
from intent_eqsat.ir.core import CompileOptions
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.optimizer import Limits, optimize
from intent_eqsat.providers.targets import SM90
from tests.cpu.rules.reference import assert_matches_reference, iv_dependent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NARROWING = "narrowing"
RELAXED = CompileOptions("relaxed_normalization", True, False)

CAUSAL_SUM = """
kernel causal_sum(X: f32[M, N], Y: out f32[M]) {
  Y[i] = sum(j: X[i, j] where j <= i else 0.0)
}
"""
CAUSAL_MAX = """
kernel causal_max(X: f32[M, N], Y: out f32[M]) {
  Y[i] = max(j: X[i, j] where j <= i else -inf)
}
"""
# the masked-out members contribute 1.0 each: the all-false range is not the identity and must stay
CAUSAL_ONES = """
kernel causal_ones(X: f32[M, N], Y: out f32[M]) {
  Y[i] = sum(j: X[i, j] where j <= i else 1.0)
}
"""
# CAUSAL_SUM at scalar ownership with its read validated by the predicate (the form of a read that could leave its
# view where the predicate is false; ``construct`` validates such reads, and reads in bounds whatever the predicate
# are not): the form the egglog split rules take (they need an access with validity, which the mixed range keeps)
SCALAR_SUM = """
module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
  kernel @causal_sum origin causal_sum {
    abi {
      %X: view<f32, [M, N]> read
      %Y: view<f32, [M]> write
    }
    space {
      segment [M] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {origin = causal_sum.s0, segment = 0} (%i: index) {
        %v0 = const() {origin = causal_sum.s0.e1, value = 0.0} : f32
        %v1 = launch() {expr = $(0), origin = causal_sum.s0.e1} : index
        %v2 = launch() {expr = $(N), origin = causal_sum.s0.e1} : index
        %v3 = const() {origin = causal_sum.s0.e1, value = 1} : index
        %v6 = cast(%i) {origin = causal_sum.s0.e9} : i64
        %v8 = const() {origin = causal_sum.s0.e4, value = 0} : index
        %v9 = cmp(%i, %v8) {origin = causal_sum.s0.e4, pred = ge} : i1
        %v10 = launch() {expr = $(M), origin = causal_sum.s0.e4} : index
        %v11 = cmp(%i, %v10) {origin = causal_sum.s0.e4, pred = lt} : i1
        %v12 = and(%v9, %v11) {origin = causal_sum.s0.e4} : i1
        %v21 = for(%v1, %v2, %v3, %v0) {origin = causal_sum.s0.e1, reduce = add} : f32 (%j: index, %v4: f32) {
          %v5 = cast(%j) {origin = causal_sum.s0.e8} : i64
          %v7 = cmp(%v5, %v6) {origin = causal_sum.s0.e7, pred = le} : i1
          %v13 = and(%v7, %v12) {origin = causal_sum.s0.e4} : i1
          %v14 = cmp(%j, %v8) {origin = causal_sum.s0.e4, pred = ge} : i1
          %v15 = cmp(%j, %v2) {origin = causal_sum.s0.e4, pred = lt} : i1
          %v16 = and(%v14, %v15) {origin = causal_sum.s0.e4} : i1
          %v17 = and(%v13, %v16) {origin = causal_sum.s0.e4} : i1
          %v18 = load(%X, %i, %j, %v17) {fill = 0.0, origin = causal_sum.s0.e4, valid = true} : f32
          %v19 = select(%v7, %v18, %v0) {origin = causal_sum.s0.e3} : f32
          %v20 = add(%v4, %v19) {origin = causal_sum.s0.e1} : f32
          yield(%v20) {origin = causal_sum.s0}
        }
        store(%Y, %i, %v21) {origin = causal_sum.s0}
        yield() {origin = causal_sum.s0}
      }
      yield()
    }
  }
}
"""
# the blocking group's output form of CAUSAL_SUM (query axis i blocked into the tile p*32 + range(32))
BLOCKED_SUM = """
module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
  kernel @causal_sum origin causal_sum {
    abi {
      %X: view<f32, [M, N]> read
      %Y: view<f32, [M]> write
    }
    space {
      segment [ceil_div(M, 32)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {origin = causal_sum.s0, segment = 0} (%v0: index) {
        %v1 = launch() {expr = $(32)} : index
        %v2 = mul(%v0, %v1) : index
        %v3 = broadcast(%v2) {dims = []} : frag<index, [32] axes [b0]>
        %v4 = range() : frag<index, [32] axes [b0]>
        %v5 = add(%v3, %v4) : frag<index, [32] axes [b0]>
        %v6 = launch() {expr = $(0), origin = causal_sum.s0.e1} : index
        %v7 = launch() {expr = $(N), origin = causal_sum.s0.e1} : index
        %v8 = const() {origin = causal_sum.s0.e1, value = 1} : index
        %v9 = const() {origin = causal_sum.s0.e1, value = 0.0} : f32
        %v10 = broadcast(%v9) {dims = []} : frag<f32, [32] axes [b0]>
        %v15 = cast(%v5) {origin = causal_sum.s0.e9} : frag<i64, [32] axes [b0]>
        %v18 = const() {origin = causal_sum.s0.e4, value = 0} : index
        %v19 = broadcast(%v18) {dims = []} : frag<index, [32] axes [b0]>
        %v20 = cmp(%v5, %v19) {origin = causal_sum.s0.e4, pred = ge} : frag<i1, [32] axes [b0]>
        %v21 = launch() {expr = $(M), origin = causal_sum.s0.e4} : index
        %v22 = broadcast(%v21) {dims = []} : frag<index, [32] axes [b0]>
        %v23 = cmp(%v5, %v22) {origin = causal_sum.s0.e4, pred = lt} : frag<i1, [32] axes [b0]>
        %v24 = and(%v20, %v23) {origin = causal_sum.s0.e4} : frag<i1, [32] axes [b0]>
        %v33 = cmp(%v5, %v22) {pred = lt} : frag<i1, [32] axes [b0]>
        %v38 = for(%v6, %v7, %v8, %v10) {origin = causal_sum.s0.e1, reduce = add} : frag<f32, [32] axes [b0]> (%j: index, %v12: frag<f32, [32] axes [b0]>) {
          %v13 = cast(%j) {origin = causal_sum.s0.e8} : i64
          %v14 = broadcast(%v13) {dims = []} : frag<i64, [32] axes [b0]>
          %v16 = cmp(%v14, %v15) {origin = causal_sum.s0.e7, pred = le} : frag<i1, [32] axes [b0]>
          %v17 = broadcast(%j) {dims = []} : frag<index, [32] axes [b0]>
          %v25 = and(%v16, %v24) {origin = causal_sum.s0.e4} : frag<i1, [32] axes [b0]>
          %v26 = cmp(%j, %v18) {origin = causal_sum.s0.e4, pred = ge} : i1
          %v27 = cmp(%j, %v7) {origin = causal_sum.s0.e4, pred = lt} : i1
          %v28 = and(%v26, %v27) {origin = causal_sum.s0.e4} : i1
          %v29 = broadcast(%v28) {dims = []} : frag<i1, [32] axes [b0]>
          %v30 = and(%v25, %v29) {origin = causal_sum.s0.e4} : frag<i1, [32] axes [b0]>
          %v34 = and(%v30, %v33) : frag<i1, [32] axes [b0]>
          %v35 = load(%X, %v5, %v17, %v34) {fill = 0.0, origin = causal_sum.s0.e4, valid = true} : frag<f32, [32] axes [b0]>
          %v36 = select(%v16, %v35, %v10) {origin = causal_sum.s0.e3} : frag<f32, [32] axes [b0]>
          %v37 = add(%v12, %v36) {origin = causal_sum.s0.e1} : frag<f32, [32] axes [b0]>
          yield(%v37) {origin = causal_sum.s0}
        }
        store(%Y, %v5, %v38, %v33) {origin = causal_sum.s0, valid = true}
        yield() {origin = causal_sum.s0}
      }
      yield()
    }
  }
}
"""


def _loops(kernel: ir.Kernel) -> list[ir.Op]:
    return [op for op in ir.walk(kernel.body) if op.name == "for"]


def _records(kernel: ir.Kernel) -> list[str]:
    return [op.attrs["narrowing"]["kind"] for op in _loops(kernel) if "narrowing" in op.attrs]


def _assert_all_true_unmasked(loop: ir.Op) -> None:
    """No select on, and no access validity reading, the induction variable (the mask and range checks are gone)."""
    dep = iv_dependent(loop)
    for op in ir.walk(loop.regions[0]):
        if op.name == "select":
            assert op.operands[0].name not in dep, f"the all-true loop still selects on the iv: {op}"
        if op.name in ("load", "gather") and op.attrs.get("valid"):
            assert op.operands[-1].name not in dep, f"the all-true loop's {op.name} validity reads the iv"


def _check(module: kir.KirModule, program: ir.Module, seeds=(5, 6), inputs=None, hi=37) -> None:
    assert_matches_reference(module, program, seeds=seeds, inputs=inputs, lo=2, hi=hi, min_rtol=1e-4, min_atol=1e-5)


def _optimize(src_or_module, options=None, rulebooks=(NARROWING,)):
    program = src_or_module if isinstance(src_or_module, ir.Module) else construct(src_or_module, options=options)
    return optimize(program, target="sm90", rulebooks=list(rulebooks))


def test_scalar_validated_sum_keeps_only_the_all_true_range_in_the_egraph():
    """The egglog rules on a validated read: the threshold i+1 is exact, so there is no mixed range; the all-false
    range ``[i+1, N)`` adds +0.0 to an accumulator that starts at +0.0 and is removed: one loop over ``[0, min(i+1,
    N))`` without the predicate, recorded with the predicate's KIR origin."""
    module = kir.parse(CAUSAL_SUM)
    res = _optimize(ir.parse_module(SCALAR_SUM))
    k = res.program.kernels[0]
    ir.verify(res.program)
    loops = _loops(k)
    assert len(loops) == 1 and _records(k) == ["all_true"]
    rec = loops[0].attrs["narrowing"]
    assert rec["source"] == "causal_sum.s0.e7" and "all_false_skipped" in rec["proof"]
    assert [str(o.name) for o in ir.walk(loops[0].regions[0]) if o.name in ("select", "cmp")] == []
    _assert_all_true_unmasked(loops[0])
    assert res.report["rules_fired"].get("narrowing.skip_below_point", 0) > 0
    _check(module, res.program)


def test_scalar_causal_sum_keeps_only_the_all_true_range():
    """Scalar ownership of i: the threshold i+1 is exact, so there is no mixed range; the all-false range
    ``[i+1, N)`` adds +0.0 to an accumulator that starts at +0.0 and is removed: one loop over ``[0, min(i+1, N))``
    without the predicate."""
    module = kir.parse(CAUSAL_SUM)
    res = _optimize(module)
    k = res.program.kernels[0]
    ir.verify(res.program)
    loops = _loops(k)
    assert len(loops) == 1 and _records(k) == ["all_true"]
    rec = loops[0].attrs["narrowing"]
    # X[i, j] is in bounds whatever the predicate (unvalidated, ``construct.lower``): the loop is narrowed once
    # bound (``ir.range_skip``), its source the check
    assert rec["source"].startswith("check %") and "all_false_skipped" in rec["proof"]
    assert [str(o.name) for o in ir.walk(loops[0].regions[0]) if o.name in ("select", "cmp")] == []
    _assert_all_true_unmasked(loops[0])
    _check(module, res.program)


def test_blocked_causal_sum_gets_three_ranges_with_the_all_false_range_gone():
    """Query tile i in [p*32, p*32+32): all-true [0, p*32+1), mixed [p*32+1, p*32+32), all-false removed."""
    module = kir.parse(CAUSAL_SUM)
    res = _optimize(ir.parse_module(BLOCKED_SUM))
    k = res.program.kernels[0]
    ir.verify(res.program)
    loops = _loops(k)
    assert _records(k) == ["all_true", "mixed"]
    true_loop, mixed_loop = loops
    _assert_all_true_unmasked(true_loop)
    assert any(o.name == "select" for o in ir.walk(mixed_loop.regions[0])), "the mixed range keeps the predicate"
    assert mixed_loop.operands[3].name == true_loop.results[0].name, "the mixed loop continues the all-true carry"
    assert mixed_loop.operands[0].name == true_loop.operands[1].name, "the mixed range starts where all-true ends"
    assert "all_false_skipped" in mixed_loop.attrs["narrowing"]["proof"]
    # the mixed loop stops at clamp(p*32 + 32) (a min), not at N: the all-false range is not traversed
    producers = {r.name: op for op in ir.walk(k.body) for r in op.results}
    assert producers[mixed_loop.operands[1].name].name == "min"
    _check(module, res.program, seeds=(5, 6, 7))


def test_blocked_through_the_blocking_group():
    """The same through ``[narrowing, blocking]`` from KIR (blocking runs first by ORDER). Deterministic limits:
    iterations, with time only as a far safety net (blocking must finish lifting on a loaded machine)."""
    module = kir.parse(CAUSAL_SUM)
    res = optimize(construct(module), target="sm90", rulebooks=[NARROWING, "blocking"],
                   limits=Limits(max_iterations=200), cost=RooflineCost(SM90, {"M": 16384, "N": 16384}))
    k = res.program.kernels[0]
    ir.verify(res.program)
    assert str(k.space.segments[0].extents[0]).startswith("ceil_div("), "blocking did not lift the kernel"
    kinds = _records(k)
    assert kinds and kinds[0] == "all_true", kinds
    _assert_all_true_unmasked(_loops(k)[0])
    _check(module, res.program)


def test_causal_max_removes_the_all_false_range_exactly():
    """max(acc, select(false, x, -inf)) = max(acc, -inf) = acc for every acc (NaN propagates, -0 kept): exact
    under the default (source) numerics."""
    module = kir.parse(CAUSAL_MAX)
    res = _optimize(module)
    k = res.program.kernels[0]
    ir.verify(res.program)
    assert _records(k) == ["all_true"] and len(_loops(k)) == 1
    _assert_all_true_unmasked(_loops(k)[0])
    _check(module, res.program)


def test_a_body_that_is_not_the_identity_keeps_its_all_false_range():
    module = kir.parse(CAUSAL_ONES)
    res = _optimize(module)
    k = res.program.kernels[0]
    ir.verify(res.program)
    assert not any(n.startswith("narrowing.skip") and c for n, c in res.report["rules_fired"].items())
    # whichever program the cost model picks, every j in [0, N) is still traversed
    for loop in _loops(k):
        if "narrowing" in loop.attrs:
            assert loop.attrs["narrowing"]["kind"] in ("all_true", "mixed")
            assert "all_false_skipped" not in loop.attrs["narrowing"]["proof"]
    assert "all_true" in _records(k), "the all-true range is split off (after binding: ``ir.range_skip``)"
    _check(module, res.program)


def _attention():
    with open(os.path.join(ROOT, "examples", "corpus", "causal_attention.kir")) as f:
        return kir.parse(f.read(), filename="causal_attention.kir")


def test_causal_attention_relaxed_all_false_ranges_gone_all_true_unmasked():
    """numerics=relaxed_normalization: every j loop keeps only its all-true range [0, min(i+1, T)), unmasked."""
    module = _attention()
    res = _optimize(module, options=RELAXED)
    k = res.program.kernels[0]
    ir.verify(res.program)
    j_loops = [op for op in _loops(k) if "narrowing" in op.attrs]
    # the max loop (rematerialized in both sums) and the two sums over j
    assert {op.attrs["origin"].split(".")[1] for op in j_loops} == {"s1", "s3"}
    assert len(j_loops) >= 3 and set(_records(k)) == {"all_true"}
    for loop in j_loops:
        assert "all_false_skipped" in loop.attrs["narrowing"]["proof"]
        _assert_all_true_unmasked(loop)
    assert not any(op.name == "select" for op in ir.walk(k.body))
    _check(module, res.program, seeds=(11, 12), hi=5)


def test_causal_attention_source_numerics_is_exact_for_inf_data():
    """Under the default numerics only the max loop loses its all-false range (exact); removing the sums' would
    need exp(-inf - m) * v = 0, false for v = inf: the reference gives NaN there, and so must we."""
    module = _attention()
    res = _optimize(module)
    ir.verify(res.program)
    skipped = {op.attrs["origin"].split(".")[1] for op in _loops(res.program.kernels[0])
               if "all_false_skipped" in op.attrs.get("narrowing", {}).get("proof", "")}
    assert skipped == {"s1"}                                                      # the max loop only
    inputs = random_inputs(module, "causal_attention", 3, lo=2, hi=5)
    v = inputs["V"]
    v[..., -1, :] = np.inf                   # key T-1 is masked out for every query i < T-1
    ref = kir.evaluate(module, "causal_attention", {n: (x.copy() if isinstance(x, np.ndarray) else x)
                                                     for n, x in inputs.items()})
    assert np.isnan(np.asarray(ref["O"], np.float64)).any()
    _check(module, res.program, inputs=inputs, seeds=(0,))
    relaxed = _optimize(module, options=RELAXED).program
    got = ir.interpret(relaxed, "causal_attention", {n: (x.copy() if isinstance(x, np.ndarray) else x)
                                                       for n, x in inputs.items()})
    # the numeric permission is what allows a different result on such data
    assert np.isnan(np.asarray(ref["O"], np.float64)).sum() > np.isnan(np.asarray(got["O"], np.float64)).sum()


def test_cost_model_prefers_the_split_program():
    """Fewer trips: the narrowed program is extracted because it is cheaper than the unsplit one."""
    program = ir.parse_module(SCALAR_SUM)
    plain = optimize(program, target="sm90", rulebooks=[NARROWING], groups=[])
    narrowed = _optimize(ir.parse_module(SCALAR_SUM))
    assert narrowed.cost.total < plain.cost.total


@pytest.mark.parametrize("bad", ["kind", "proof"])
def test_verifier_rejects_incomplete_records(bad):
    """The records this group writes are what IR-10 (11) checks; a damaged one is rejected."""
    res = _optimize(kir.parse(CAUSAL_SUM))
    loop = _loops(res.program.kernels[0])[0]
    rec = dict(loop.attrs["narrowing"])
    rec[bad] = "bogus" if bad == "kind" else ""
    loop.attrs["narrowing"] = rec
    with pytest.raises(ir.VerificationError):
        ir.verify(res.program)


def test_verifier_accepts_a_mixed_range_that_keeps_its_select_and_rejects_one_that_keeps_nothing():
    """IR-10 (11): a mixed range keeps its predicate. CAUSAL_ONES reads X[i, j] unvalidated (in bounds whatever the
    predicate): its mixed loop keeps the select on ``j <= i`` and verifies; the all-true loop relabelled mixed has
    neither a validity nor a select on the induction variable and is rejected."""
    res = _optimize(kir.parse(CAUSAL_ONES))
    ir.verify(res.program)
    loops = _loops(res.program.kernels[0])
    assert _records(res.program.kernels[0]) == ["all_true", "mixed"]
    assert not [op for op in ir.walk(loops[1].regions[0]) if op.name == "load" and op.attrs.get("valid")]
    loops[0].attrs["narrowing"] = {**loops[0].attrs["narrowing"], "kind": "mixed"}
    with pytest.raises(ir.VerificationError, match="mixed narrowing keeps its predicate"):
        ir.verify(res.program)
