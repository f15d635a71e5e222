"""Program mapping (SPEC PASS-3.2): a rank-2 grid of output tiles gets grouped program order through the egglog rule
of ``rulebooks/mapping.py``; the roofline cost model (L2 reuse by program order, plus the grouped decode's
integer work) keeps it only where it pays. Every extracted program verifies, equals its input / the KIR reference,
and the Triton serializer spells the grouped pid decode."""
from __future__ import annotations

import copy
import os

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.cost import RooflineCost, estimate
from intent_eqsat.kir.inputs import random_inputs, tolerance
from intent_eqsat.providers.targets import get_target
from intent_eqsat.providers.triton import serialize
from intent_eqsat.rules import facts as F
from intent_eqsat.optimizer import optimize
from intent_eqsat.rules import registry as R


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BOOK = "mapping"

#: examples/corpus/gemm.kir after blocking (ownership of 64 x 128 output tiles, tail validity, the K loop): the
#: extracted program of the blocking rulebook, kept as text so this test does not depend on blocking's run time
GEMM_BLOCKED = """module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
  kernel @gemm origin gemm {
    abi {
      %A: view<f16, [M, K]> read
      %B: view<f16, [K, N]> read
      %C: view<f16, [M, N]> write
    }
    space {
      segment [ceil_div(M, 64), ceil_div(N, 128)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {origin = gemm.s0, segment = 0} (%v0: index, %v1: index) {
        %v2 = launch() {expr = $(64)} : index
        %v3 = mul(%v0, %v2) : index
        %v4 = broadcast(%v3) {dims = []} : frag<index, [64] axes [b0]>
        %v5 = range() : frag<index, [64] axes [b0]>
        %v6 = add(%v4, %v5) : frag<index, [64] axes [b0]>
        %v7 = broadcast(%v6) {dims = [0]} : frag<index, [64, 128] axes [b0, b1]>
        %v8 = launch() {expr = $(128)} : index
        %v9 = mul(%v1, %v8) : index
        %v10 = broadcast(%v9) {dims = []} : frag<index, [128] axes [b1]>
        %v11 = range() : frag<index, [128] axes [b1]>
        %v12 = add(%v10, %v11) : frag<index, [128] axes [b1]>
        %v13 = broadcast(%v12) {dims = [1]} : frag<index, [64, 128] axes [b0, b1]>
        %v14 = launch() {expr = $(0), origin = gemm.s0.e3} : index
        %v15 = launch() {expr = $(K), origin = gemm.s0.e3} : index
        %v16 = const() {origin = gemm.s0.e3, value = 1} : index
        %v17 = const() {origin = gemm.s0.e3, value = 0.0} : f32
        %v18 = broadcast(%v17) {dims = []} : frag<f32, [64, 128] axes [b0, b1]>
        %v22 = launch() {expr = $(M)} : index
        %v23 = broadcast(%v22) {dims = []} : frag<index, [64] axes [b0]>
        %v24 = cmp(%v6, %v23) {pred = lt} : frag<i1, [64] axes [b0]>
        %v29 = launch() {expr = $(N)} : index
        %v30 = broadcast(%v29) {dims = []} : frag<index, [128] axes [b1]>
        %v31 = cmp(%v12, %v30) {pred = lt} : frag<i1, [128] axes [b1]>
        %v37 = for(%v14, %v15, %v16, %v18) {origin = gemm.s0.e3, reduce = add} : frag<f32, [64, 128] axes [b0, b1]> (%v19: index, %v20: frag<f32, [64, 128] axes [b0, b1]>) {
          %v21 = broadcast(%v19) {dims = []} : frag<index, [64] axes [b0]>
          %v25 = load(%A, %v6, %v21, %v24) {fill = 0.0, origin = gemm.s0.e7, valid = true} : frag<f16, [64] axes [b0]>
          %v26 = cast(%v25) {origin = gemm.s0.e6} : frag<f32, [64] axes [b0]>
          %v27 = broadcast(%v26) {dims = [0]} : frag<f32, [64, 128] axes [b0, b1]>
          %v28 = broadcast(%v19) {dims = []} : frag<index, [128] axes [b1]>
          %v32 = load(%B, %v28, %v12, %v31) {fill = 0.0, origin = gemm.s0.e11, valid = true} : frag<f16, [128] axes [b1]>
          %v33 = cast(%v32) {origin = gemm.s0.e10} : frag<f32, [128] axes [b1]>
          %v34 = broadcast(%v33) {dims = [1]} : frag<f32, [64, 128] axes [b0, b1]>
          %v35 = mul(%v27, %v34) {origin = gemm.s0.e5} : frag<f32, [64, 128] axes [b0, b1]>
          %v36 = add(%v20, %v35) {origin = gemm.s0.e3} : frag<f32, [64, 128] axes [b0, b1]>
          yield(%v36) {origin = gemm.s0}
        }
        %v38 = cast(%v37) {origin = gemm.s0.e2} : frag<f16, [64, 128] axes [b0, b1]>
        %v39 = broadcast(%v24) {dims = [0]} : frag<i1, [64, 128] axes [b0, b1]>
        %v40 = broadcast(%v31) {dims = [1]} : frag<i1, [64, 128] axes [b0, b1]>
        %v41 = and(%v39, %v40) : frag<i1, [64, 128] axes [b0, b1]>
        store(%C, %v7, %v13, %v38, %v41) {origin = gemm.s0, valid = true}
        yield() {origin = gemm.s0}
      }
      yield()
    }
  }
}"""

BIG = {"M": 4096, "N": 4096, "K": 4096}


def _gemm() -> ir.Module:
    module = ir.parse_module(GEMM_BLOCKED)
    ir.verify(module)
    return module


def _gemm_kir() -> kir.KirModule:
    with open(os.path.join(ROOT, "examples", "corpus", "gemm.kir")) as f:
        return kir.parse(f.read(), filename="gemm.kir")


def _optimize(module, sizes, target="sm90", books=(BOOK,)):
    tgt = get_target(target) if isinstance(target, str) else target
    return optimize(module, target=tgt, rulebooks=list(books), cost=RooflineCost(tgt, sizes=sizes))


def _segment(program: ir.Module):
    (seg,) = program.kernels[0].space.segments
    return seg


def _run(program: ir.Module, m: int, n: int, k: int, seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    args = {"A": rng.standard_normal((m, k)).astype(np.float16), "B": rng.standard_normal((k, n)).astype(np.float16),
            "C": np.zeros((m, n), np.float16)}
    return ir.interpret(program, "gemm", args)["C"]


def _with_groups(target: str, groups: tuple[int, ...]):
    """The target's capability object with its own group-size domain (``facts.group_candidates``)."""
    tgt = copy.copy(get_target(target))
    object.__setattr__(tgt, "group_candidates", groups)
    return tgt


def test_large_gemm_gets_grouped_order_because_the_cost_model_says_it_pays():
    module = _gemm()
    res = _optimize(module, BIG)
    seg = _segment(res.program)
    assert res.report["rules_fired"]["mapping.grouped_order"] == len(F.BASE_GROUP_SIZES)
    assert seg.order == "grouped" and int(seg.group_size.value) in F.BASE_GROUP_SIZES
    assert [str(e) for e in seg.extents] == ["ceil_div(M, 64)", "ceil_div(N, 128)"]
    ir.verify(res.program)
    # the body is untouched: only the program order changed
    assert ir.print_module(res.program).count("\n") == ir.print_module(module).count("\n")
    before, after = estimate(module.kernels[0], "sm90", BIG), estimate(res.program.kernels[0], "sm90", BIG)
    assert after.dram_bytes < 0.8 * before.dram_bytes and after.total < before.total
    assert after.flops_alu > before.flops_alu                   # the grouped decode is paid for
    np.testing.assert_array_equal(_run(res.program, 150, 300, 5), _run(module, 150, 300, 5))


@pytest.mark.parametrize("sizes", [{"M": 32, "N": 4096, "K": 4096}, {"M": 64, "N": 64, "K": 64}],
                         ids=["one-tile-row", "one-tile"])
def test_one_tile_row_keeps_row_major(sizes):
    """With one row of tiles every order touches the same tiles: grouping only adds its decode."""
    res = _optimize(_gemm(), sizes)
    assert res.report["rules_fired"]["mapping.grouped_order"] > 0          # offered ...
    seg = _segment(res.program)
    assert seg.order == "row_major" and seg.group_size is None             # ... and declined by the cost model
    assert any(c.decode().space.segments[0].order == "grouped" for c in res.candidates)   # the runner-up
    ir.verify(res.program)


def test_the_group_size_comes_from_the_target_domain_and_ragged_groups_are_covered():
    """The target's own domain is what the rule offers; with M = 64 * G + 70 the last group holds 2 of its G tile
    rows (group_m = min(E0 - first_m, G)) and every tile is still computed once."""
    res = _optimize(_gemm(), BIG, target=_with_groups("sm90", (8, 16)))
    assert res.report["facts"]["group_candidates"] == [8, 16]
    assert res.report["rules_fired"]["mapping.grouped_order"] == 2
    seg = _segment(res.program)
    assert seg.order == "grouped" and int(seg.group_size.value) in (8, 16)
    ir.verify(res.program)
    g = int(seg.group_size.value)
    module = _gemm()
    for m, n, k in ((64 * g + 70, 300, 2), (150, 129, 3)):
        np.testing.assert_array_equal(_run(res.program, m, n, k), _run(module, m, n, k))


def test_grouped_gemm_equals_the_kir_reference_on_odd_shapes():
    module = _gemm_kir()
    res = _optimize(_gemm(), BIG)
    assert _segment(res.program).order == "grouped"
    k = module.kernels[0]
    for seed in (11, 12):
        inputs = random_inputs(module, k.name, seed, lo=65, hi=300)
        copy_ = lambda: {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in inputs.items()}  # noqa
        ref = kir.evaluate(module, k.name, copy_())
        got = ir.interpret(res.program, k.name, copy_())
        rtol, atol = tolerance(k.param("C").dtype)
        np.testing.assert_allclose(np.asarray(got["C"], np.float64), np.asarray(ref["C"], np.float64),
                                   rtol=rtol, atol=atol)


def test_triton_spells_the_grouped_pid_decode():
    res = _optimize(_gemm(), BIG)
    src = serialize(res.program, "gemm", "sm90")
    assert "order grouped" in src
    assert "tl.minimum(" in src and "_in_group" in src and "_group_rows" in src
    row_major = serialize(_gemm(), "gemm", "sm90")
    assert "_in_group" not in row_major


@pytest.mark.parametrize("name", ["softmax", "transpose"])
def test_untiled_or_constructed_spaces_are_not_regrouped(name):
    """Constructed programs have scalar ownership ([M, N], no tile grid): the rule needs ceil_div tile counts."""
    with open(os.path.join(ROOT, "examples", "corpus", f"{name}.kir")) as f:
        module = construct(kir.parse(f.read(), filename=name))
    res = _optimize(module, BIG)
    assert res.report["rules_fired"].get("mapping.grouped_order", 0) == 0
    assert _segment(res.program).order == "row_major"


def test_the_rulebook_runs_after_blocking():
    reg = R.load([BOOK, "blocking"])
    assert reg.names == ["blocking", "mapping"]
    group = reg.group("mapping")
    assert group.order > reg.group("blocking").order
    assert [r.name for r in group.rules] == ["mapping.grouped_order"] and group.rules[0].law


def test_gemm_blocked_then_mapped_end_to_end():
    """The real pipeline: constructed GEMM -> blocking -> mapping, extracted at 4096^3."""
    module = _gemm_kir()
    res = _optimize(construct(module), BIG, books=("blocking", BOOK))
    ir.verify(res.program)
    seg = _segment(res.program)
    if all(str(e).startswith("ceil_div(") for e in seg.extents) and len(seg.extents) == 2:
        assert res.report["rules_fired"].get("mapping.grouped_order", 0) > 0
        assert seg.order == "grouped"
    np.testing.assert_allclose(np.asarray(_run(res.program, 150, 300, 5), np.float64),
                               np.asarray(_run(_gemm(), 150, 300, 5), np.float64), rtol=2e-3, atol=2e-3)
