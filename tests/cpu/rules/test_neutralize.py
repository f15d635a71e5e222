"""Boundary neutralization (SPEC PASS-3.4 / PASS-3.5 all-true): in-bounds predicates proven by the interval analysis
fold to constants and accesses whose validity is proven all-true lose it, through egglog rules of
``rulebooks/neutralize.py``; predicates that are not proven (stencil edges, convolution padding, a causal
``j <= i``, tile tails, a predicate over an argument that two sibling regions bind differently) stay. Every extracted
program passes the shared verifier and computes what the input program / the KIR reference computes."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.cost import RooflineCost
from intent_eqsat.optimizer import optimize
from intent_eqsat.providers.targets import SM90
from intent_eqsat.rules import registry as R
from tests.cpu.rules.reference import assert_matches_reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BOOK = "neutralize"
CORPUS = sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir")))


# ----------------------------------------------------------------------------------------------- helpers

def _load(name: str) -> kir.KirModule:
    with open(os.path.join(ROOT, "examples", "corpus", f"{name}.kir")) as f:
        return kir.parse(f.read(), filename=f"{name}.kir")


def _matches_reference(module: kir.KirModule, program: ir.Module, seeds=(11, 12)) -> None:
    assert_matches_reference(module, program, seeds=seeds)


def _ops(program: ir.Module, name: str) -> list[ir.Op]:
    return [op for k in program.kernels for op in ir.walk(k.body) if op.name == name]


def _validated(program: ir.Module) -> list[ir.Op]:
    return [op for k in program.kernels for op in ir.walk(k.body) if op.attrs.get("valid")]


def _fired(res, rule: str) -> int:
    return res.report["rules_fired"].get(rule, 0)


def _analysis_keys() -> dict[str, str]:
    """Analysis rule name -> its key in the report (the scheduler names an unnamed egglog rewrite
    ``<ruleset>#<index>``)."""
    group = R.load([BOOK]).group("neutralize")
    out = {}
    for (kind, rules), rs in zip(group.module.analysis_rules(), group.analyses[1:]):
        for i, r in enumerate(rules):
            out[r.name] = r.name if getattr(r.egg.decl, "name", None) else f"neutralize_{kind}#{i}"
    return out


def _analysis_fired(res, rule: str) -> int:
    key = _analysis_keys()[rule]
    return sum(g["analysis_matches"].get(key, 0) for k in res.report["kernels"].values() for g in k["groups"])


# --------------------------------------------------------------------------------- hand-written programs

PROGRAM = """
module target "sm90" {{
  kernel @k origin k {{
    abi {{
      %X: view<f32, [N]> {xaccess}
      %W: view<f32, [T]> read
      %Y: view<f32, [N]> write
    }}
    space {{
      segment [N] order row_major
    }}
    body (%pid: index) {{
      execution_group(%pid) {{segment = 0}} (%i: index) {{
        %cm1 = const() {{value = -1}} : index
        %c0 = const() {{value = 0}} : index
        %c1 = const() {{value = 1}} : index
        %c2 = const() {{value = 2}} : index
        %c4 = const() {{value = 4}} : index
        %c8 = const() {{value = 8}} : index
        %n = launch() {{expr = $(N)}} : index
        %t = launch() {{expr = $(T)}} : index
        %zf = const() {{value = 0.0}} : f32
        %x = load(%X, %i) : f32
        %q = cmp(%x, %zf) {{pred = gt}} : i1
{lines}
        yield()
      }}
      yield()
    }}
  }}
}}
"""


def _program(lines: str, xaccess: str = "read") -> ir.Module:
    body = "\n".join("        " + ln.strip() for ln in lines.strip().splitlines())
    module = ir.parse_module(PROGRAM.format(lines=body, xaccess=xaccess))
    ir.verify(module)
    return module


def _run(module: ir.Module, n: int, t: int, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    args = {"X": rng.standard_normal(n).astype(np.float32), "W": rng.standard_normal(t).astype(np.float32),
            "Y": np.zeros(n, np.float32)}
    return ir.interpret(module, "k", args)


def _same_as_input(module: ir.Module, program: ir.Module) -> None:
    for n, t in ((7, 9), (13, 5), (1, 16)):
        want, got = _run(module, n, t), _run(program, n, t)
        for name, arr in want.items():
            np.testing.assert_array_equal(got[name], arr, err_msg=f"{name} at N={n}, T={t}")


def _sel(pred: str) -> str:
    return f"""
        %p = {pred} : i1
        %out = select(%p, %x, %zf) : f32
        store(%Y, %i, %out)"""


LOOP = """
        %s = for(%c0, %t, %c1, %zf) : f32 (%j: index, %acc: f32) {{
          {pred_lines}
          %w = load(%W, %j, %pj) {{fill = 0.0, valid = true}} : f32
          %sum = add(%acc, %w) : f32
          yield(%sum)
        }}
        store(%Y, %i, %s)"""

#: rule -> (program lines, rules that must fire, ops that must be gone from the extracted program)
CASES = {
    "cmp_lt_true": (_sel("cmp(%i, %n) {pred = lt}"), ["select_true"], ["cmp", "select"]),
    "cmp_lt_false": (_sel("cmp(%n, %i) {pred = lt}"), ["select_false"], ["cmp", "select"]),
    "cmp_le_true": (_sel("cmp(%i, %n) {pred = le}"), [], ["cmp", "select"]),
    "cmp_le_false": (_sel("cmp(%n, %i) {pred = le}"), [], ["cmp", "select"]),
    "cmp_gt_true": (_sel("cmp(%n, %i) {pred = gt}"), [], ["cmp", "select"]),
    "cmp_gt_false": (_sel("cmp(%i, %n) {pred = gt}"), [], ["cmp", "select"]),
    "cmp_ge_true": (_sel("cmp(%i, %c0) {pred = ge}"), [], ["cmp", "select"]),
    "cmp_ge_false": (_sel("cmp(%i, %n) {pred = ge}"), [], ["cmp", "select"]),
    "cmp_eq_false_0": (_sel("cmp(%i, %n) {pred = eq}"), [], ["cmp", "select"]),
    "cmp_eq_false_1": (_sel("cmp(%n, %i) {pred = eq}"), [], ["cmp", "select"]),
    "cmp_ne_true_0": (_sel("cmp(%i, %n) {pred = ne}"), [], ["cmp", "select"]),
    "cmp_ne_true_1": (_sel("cmp(%n, %i) {pred = ne}"), [], ["cmp", "select"]),
    "and_true_0": ("%b = cmp(%i, %n) {pred = lt} : i1" + _sel("and(%b, %q)"), [], ["and"]),
    "and_true_1": ("%b = cmp(%i, %n) {pred = lt} : i1" + _sel("and(%q, %b)"), [], ["and"]),
    "and_false_0": ("%b = cmp(%n, %i) {pred = lt} : i1" + _sel("and(%b, %q)"), ["select_false"], ["and", "select"]),
    "and_false_1": ("%b = cmp(%n, %i) {pred = lt} : i1" + _sel("and(%q, %b)"), ["select_false"], ["and", "select"]),
    "or_false_0": ("%b = cmp(%n, %i) {pred = lt} : i1" + _sel("or(%b, %q)"), [], ["or"]),
    "or_false_1": ("%b = cmp(%n, %i) {pred = lt} : i1" + _sel("or(%q, %b)"), [], ["or"]),
    "or_true_0": ("%b = cmp(%i, %n) {pred = lt} : i1" + _sel("or(%b, %q)"), ["select_true"], ["or", "select"]),
    "or_true_1": ("%b = cmp(%i, %n) {pred = lt} : i1" + _sel("or(%q, %b)"), ["select_true"], ["or", "select"]),
    "not_0": ("%b = cmp(%n, %i) {pred = lt} : i1" + _sel("not(%b)"), ["select_true"], ["not", "select"]),
    "not_1": ("%b = cmp(%i, %n) {pred = lt} : i1" + _sel("not(%b)"), ["select_false"], ["not", "select"]),
    "select_true": (_sel("cmp(%i, %n) {pred = lt}"), [], ["select"]),
    "select_false": (_sel("cmp(%i, %n) {pred = ge}"), [], ["select"]),
    "mask_operand_pure": ("""
        %p = cmp(%i, %n) {pred = lt} : i1
        %l = load(%X, %i, %p) {fill = 0.0, valid = true} : f32
        store(%Y, %i, %l)""", ["unmask_pure"], ["cmp"]),
    "unmask_pure": ("""
        %p = cmp(%i, %n) {pred = lt} : i1
        %l = load(%X, %i, %p) {fill = 0.0, valid = true} : f32
        store(%Y, %i, %l)""", [], ["cmp"]),
    "mask_operand_effect": ("""
        %p = cmp(%i, %c0) {pred = ge} : i1
        store(%Y, %i, %x, %p) {valid = true}""", ["unmask_effect"], ["cmp"]),
    "unmask_effect": ("""
        %p = cmp(%i, %c0) {pred = ge} : i1
        store(%Y, %i, %x, %p) {valid = true}""", [], ["cmp"]),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_folds_and_the_program_computes_the_same(rule):
    lines, also, gone = CASES[rule]
    module = _program(lines)
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    for r in [rule, *also]:
        assert _fired(res, f"neutralize.{r}") > 0, f"{r} did not fire: {res.report['rules_fired']}"
    ir.verify(res.program)
    left = {op.name for k in res.program.kernels for op in ir.walk(k.body)}
    for name in gone:
        assert name not in left, f"{name} left after {rule}:\n{ir.print_module(res.program)}"
    _same_as_input(module, res.program)


def test_an_effectful_load_loses_its_proven_mask():
    """X is read and written, so its load is an ordered effect (a Stmt): unmask_effect rewrites it in place."""
    module = _program("""
        %p = cmp(%i, %n) {pred = lt} : i1
        %l = load(%X, %i, %p) {fill = 0.0, valid = true} : f32
        %two = add(%l, %l) : f32
        store(%X, %i, %two)
        store(%Y, %i, %l)""", xaccess="readwrite")
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    assert _fired(res, "neutralize.unmask_effect") >= 1
    ir.verify(res.program)
    assert not _validated(res.program) and not _ops(res.program, "cmp")
    loads = _ops(res.program, "load")
    assert loads and all("fill" not in op.attrs and len(op.operands) == 2 for op in loads)
    rng = np.random.default_rng(0)
    for n in (5, 12):
        x = rng.standard_normal(n).astype(np.float32)
        want = ir.interpret(module, "k", {"X": x.copy(), "W": np.zeros(3, np.float32), "Y": np.zeros(n, np.float32)})
        got = ir.interpret(res.program, "k", {"X": x.copy(), "W": np.zeros(3, np.float32),
                                              "Y": np.zeros(n, np.float32)})
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


#: analysis rule -> a predicate it has to prove (the fold then happens)
ANALYSIS_CASES = {
    "add_ub": "%a = add(%i, %c1) : index\n%p = cmp(%a, %n) {pred = le} : i1",           # i + 1 <= N
    "add_lb_rev": "%a = add(%c1, %i) : index\n%p = cmp(%a, %c1) {pred = ge} : i1",      # 1 + i >= 1
    "sub_ub": "%a = sub(%i, %c1) : index\n%p = cmp(%a, %n) {pred = lt} : i1",           # i - 1 < N
    "sub_lb": "%a = sub(%i, %c1) : index\n%p = cmp(%a, %cm1) {pred = ge} : i1",         # i - 1 >= -1
    "sub_same_ub": "%a = sub(%i, %n) : index\n%p = cmp(%a, %c0) {pred = lt} : i1",      # i - N < 0
    "sub_same_lb": "%a = sub(%n, %i) : index\n%p = cmp(%a, %c1) {pred = ge} : i1",      # N - i >= 1
    "mul_lb": "%a = mul(%i, %c2) : index\n%p = cmp(%a, %c0) {pred = ge} : i1",          # 2i >= 0
    "mul_lb_rev": "%a = mul(%c2, %i) : index\n%p = cmp(%a, %c0) {pred = ge} : i1",
    "min_ub_x": "%a = min(%i, %t) : index\n%p = cmp(%a, %n) {pred = lt} : i1",          # min(i, T) < N
    "max_lb_y": "%a = max(%i, %c1) : index\n%p = cmp(%a, %c1) {pred = ge} : i1",        # max(i, 1) >= 1
    "min_lb": "%a = min(%i, %c2) : index\n%p = cmp(%a, %c0) {pred = ge} : i1",          # min(i, 2) >= 0
    "max_ub": "%m = sub(%i, %c1) : index\n%a = max(%i, %m) : index\n%p = cmp(%a, %n) {pred = lt} : i1",
    "cast_ub": "%a = cast(%i) : i64\n%b = cast(%n) : i64\n%p = cmp(%a, %b) {pred = lt} : i1",
}


@pytest.mark.parametrize("rule", sorted(ANALYSIS_CASES))
def test_each_interval_rule_proves_its_predicate(rule):
    lines = ANALYSIS_CASES[rule] + "\n%out = select(%p, %x, %zf) : f32\nstore(%Y, %i, %out)"
    module = _program(lines)
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    assert _analysis_fired(res, f"neutralize.{rule}") > 0, res.report["kernels"]["k"]["groups"][0]["analysis_matches"]
    ir.verify(res.program)
    assert not _ops(res.program, "cmp") and not _ops(res.program, "select"), ir.print_module(res.program)
    _same_as_input(module, res.program)


def test_a_loop_iv_is_bounded_by_its_loop_and_the_load_mask_goes():
    module = _program(LOOP.format(pred_lines="%pj = cmp(%j, %t) {pred = lt} : i1"))
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    assert _analysis_fired(res, "neutralize.loop_iv_multi") > 0 and _analysis_fired(res, "neutralize.loop_hi_multi")
    assert _fired(res, "neutralize.unmask_pure") == 1
    ir.verify(res.program)
    assert not _validated(res.program) and not _ops(res.program, "cmp")
    _same_as_input(module, res.program)


def test_fragment_range_predicates_fold_to_a_broadcast_constant():
    module = _program("""
        %r = range() : frag<index, [8]>
        %e = broadcast(%c8) {dims = []} : frag<index, [8]>
        %p = cmp(%r, %e) {pred = lt} : frag<i1, [8]>
        %z = broadcast(%c0) {dims = []} : frag<index, [8]>
        %g = cmp(%r, %z) {pred = ge} : frag<i1, [8]>
        %pg = and(%p, %g) : frag<i1, [8]>
        %xs = broadcast(%x) {dims = []} : frag<f32, [8]>
        %zs = broadcast(%zf) {dims = []} : frag<f32, [8]>
        %sel = select(%pg, %xs, %zs) : frag<f32, [8]>
        %out = extract(%sel) {index = [3]} : f32
        store(%Y, %i, %out)""")
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    for r in ("range_plain", "broadcast_lb", "broadcast_ub"):
        assert _analysis_fired(res, f"neutralize.{r}") > 0, r
    assert _fired(res, "neutralize.cmp_lt_true") and _fired(res, "neutralize.cmp_ge_true")
    ir.verify(res.program)
    assert not _ops(res.program, "cmp") and not _ops(res.program, "select")
    _same_as_input(module, res.program)


def test_segment_extents_of_a_constant_and_of_a_second_segment():
    text = """
module target "sm90" {
  kernel @k origin k {
    abi {
      %X: view<f32, [N]> read
      %Y: view<f32, [N]> write
      %Z: view<f32, [8]> write
    }
    space {
      segment [N] order row_major
      segment [8] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%i: index) {
        %x = load(%X, %i) : f32
        store(%Y, %i, %x)
        yield()
      }
      execution_group(%pid) {segment = 1} (%i2: index) {
        %c8 = const() {value = 8} : index
        %zf = const() {value = 1.5} : f32
        %p = cmp(%i2, %c8) {pred = lt} : i1
        store(%Z, %i2, %zf, %p) {valid = true}
        yield()
      }
      yield()
    }
  }
}
"""
    module = ir.parse_module(text)
    ir.verify(module)
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    # argument 0 at depth 1 is bound by two groups: [0, N) and [0, 8); the hull over both bounds it by neither N nor
    # 8, so the store keeps its mask
    assert _analysis_fired(res, "neutralize.seg_exts_n") > 0 and _analysis_fired(res, "neutralize.le_int") > 0
    assert _validated(res.program)
    ir.verify(res.program)
    # with the first group's extent also 8, both groups bound the argument below 8: the mask goes
    # (X and Y get extent 8 too: with [N] the first group would read past X at N < 8, which the verifier rejects)
    module8 = ir.parse_module(text.replace("segment [N] order", "segment [8] order").replace("[N]> ", "[8]> "))
    res8 = optimize(module8, target="sm90", rulebooks=[BOOK])
    assert not _validated(res8.program) and _fired(res8, "neutralize.unmask_effect") == 1
    ir.verify(res8.program)
    args = {"X": np.arange(8, dtype=np.float32), "Y": np.zeros(8, np.float32), "Z": np.zeros(8, np.float32)}
    want = ir.interpret(module8, "k", {k: v.copy() for k, v in args.items()})
    got = ir.interpret(res8.program, "k", {k: v.copy() for k, v in args.items()})
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


# ------------------------------------------------------------------------------------ what must stay

def test_sibling_loops_with_different_bounds_share_the_iv_and_keep_the_mask():
    """Both loops sit at depth 2, so their ivs are one term ``Arg(2, 0)`` and ``j < T`` is one term: it is true in the
    first loop (j < T) but not in the second (j < N, and N may exceed T). The hull over both loops bounds j by
    neither, so nothing folds; folding would read W out of bounds when N > T."""
    module = _program("""
        %s = for(%c0, %t, %c1, %zf) : f32 (%j: index, %acc: f32) {
          %pj = cmp(%j, %t) {pred = lt} : i1
          %w = load(%W, %j, %pj) {fill = 0.0, valid = true} : f32
          %sum = add(%acc, %w) : f32
          yield(%sum)
        }
        %s2 = for(%c0, %n, %c1, %s) : f32 (%j2: index, %acc2: f32) {
          %pj2 = cmp(%j2, %t) {pred = lt} : i1
          %w2 = load(%W, %j2, %pj2) {fill = 0.0, valid = true} : f32
          %sum2 = add(%acc2, %w2) : f32
          yield(%sum2)
        }
        store(%Y, %i, %s2)""")
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    ir.verify(res.program)
    assert _fired(res, "neutralize.cmp_lt_true") == 0
    assert len([op for op in _validated(res.program) if op.name == "load"]) >= 1
    _same_as_input(module, res.program)         # N = 13 > T = 5 reads past W if the mask were dropped


def test_a_loop_without_a_positive_constant_step_or_with_an_index_carry_bounds_nothing():
    module = _program("""
        %st = launch() {expr = $(T)} : index
        %s = for(%c0, %t, %st, %zf) : f32 (%j: index, %acc: f32) {
          %pj = cmp(%j, %t) {pred = lt} : i1
          %w = load(%W, %j, %pj) {fill = 0.0, valid = true} : f32
          %sum = add(%acc, %w) : f32
          yield(%sum)
        }
        %k = for(%c0, %c4, %c1, %c0) : index (%j3: index, %kk: index) {
          %nk = add(%kk, %c1) : index
          yield(%nk)
        }
        %pk = cmp(%k, %c4) {pred = le} : i1
        %out = select(%pk, %s, %zf) : f32
        store(%Y, %i, %out)""")
    res = optimize(module, target="sm90", rulebooks=[BOOK])
    assert _analysis_fired(res, "neutralize.loop_iv_unknown_step_multi") > 0
    assert _analysis_fired(res, "neutralize.no_bounds") > 0          # the index carry %kk
    ir.verify(res.program)
    assert _validated(res.program) and len(_ops(res.program, "cmp")) == 2
    _same_as_input(module, res.program)


def test_stencil_edges_stay_and_the_provable_halves_go():
    module = _load("stencil3")
    before = construct(module)
    res = optimize(before, target="sm90", rulebooks=[BOOK])
    ir.verify(res.program)
    preds = sorted(op.attrs["pred"] for op in _ops(res.program, "cmp"))
    # kept: i >= 1 and i + 1 < N (the KIR predicates), i - 1 >= 0 and i + 1 < N (the access bounds at the edges);
    # gone: i - 1 < N and i + 1 >= 0
    assert len(_ops(before, "cmp")) == 6 and preds == ["ge", "ge", "lt", "lt"]
    assert len([op for op in _validated(res.program) if op.name == "load"]) == 2
    _matches_reference(module, res.program)


def test_conv2d_keeps_only_the_padding_predicates():
    module = _load("conv2d_3x3")
    before = construct(module)
    res = optimize(before, target="sm90", rulebooks=[BOOK])
    ir.verify(res.program)
    cmps = _ops(res.program, "cmp")
    args = {a.name for k in res.program.kernels for op in ir.walk(k.body) for r in op.regions for a in r.args}
    # no predicate on a coordinate or a loop iv alone is left: only h + kh - 1 and w + kw - 1 against 0 / H / W
    assert all(op.operands[0].name not in args for op in cmps), ir.print_module(res.program)
    assert len(cmps) == 8 < len(_ops(before, "cmp"))
    # X[.., h + kh - 1, w + kw - 1] is validated by the padding predicate; Wt[f, c, kh, kw] is in bounds whatever
    # it, so the construction reads it unconditionally (docs/kir.md, Predicates)
    assert {op.operands[0].name for op in _validated(res.program)} == {"X"}
    assert [op for op in _ops(res.program, "load") if op.operands[0].name == "Wt"]
    _matches_reference(module, res.program)


def test_causal_attention_keeps_the_causal_mask_and_has_no_coordinate_bounds():
    """Every read of causal attention is in bounds whatever the causal predicate (its subscripts range over the
    views' axes), so the construction reads them unconditionally: no coordinate bounds to drop, the causal predicate
    j <= i stays (only in selects) and neutralize leaves the program as it is."""
    module = _load("causal_attention")
    before = construct(module)
    assert not _validated(before)
    res = optimize(before, target="sm90", rulebooks=[BOOK])
    ir.verify(res.program)
    cmps = _ops(res.program, "cmp")
    assert cmps and all(op.attrs["pred"] == "le" for op in cmps), "the causal predicate j <= i stays, alone"
    assert not _validated(res.program)
    _matches_reference(module, res.program)


@pytest.mark.parametrize("name", ["softmax", "gemm", "attention"])
def test_programs_without_in_bounds_predicates_are_left_alone(name):
    module = _load(name)
    before = construct(module)
    assert not _ops(before, "cmp") and not _validated(before)
    res = optimize(before, target="sm90", rulebooks=[BOOK])
    assert not any(n.startswith("neutralize.") and v for n, v in res.report["rules_fired"].items())
    assert ir.print_module(res.program) == ir.print_module(before)


def test_tile_tails_made_by_blocking_stay():
    """Neutralization runs before blocking: the constructed in-bounds mask is gone, and blocking's tail validity
    (coord < E, which nothing proves) is on every access of the blocked program."""
    module = _program("""
        %p = cmp(%i, %n) {pred = lt} : i1
        %l = load(%X, %i, %p) {fill = 0.0, valid = true} : f32
        %two = add(%l, %x) : f32
        store(%Y, %i, %two, %p) {valid = true}""")
    # at a size where blocking pays clearly (at the default 1024 members the two are within 1%: a coin flip)
    res = optimize(module, target="sm90", rulebooks=[BOOK, "blocking"], cost=RooflineCost(SM90, {"N": 1 << 22}))
    ir.verify(res.program)
    k = res.program.kernels[0]
    assert str(k.space.segments[0].extents[0]).startswith("ceil_div(")
    assert _fired(res, "neutralize.unmask_pure") == 1 and _fired(res, "neutralize.unmask_effect") == 1
    accesses = [op for op in ir.walk(k.body) if op.name in ("load", "store")]
    assert accesses and all(op.attrs.get("valid") for op in accesses)
    tails = _ops(res.program, "cmp")
    assert tails and all("origin" not in op.attrs and op.attrs["pred"] == "lt" for op in tails)
    _same_as_input(module, res.program)


def test_the_rulebook_declares_its_group():
    (group,) = R.load([BOOK]).groups
    assert group.name == "neutralize" and group.order == 15
    assert all(r.name.startswith("neutralize.") and r.law for r in group.rules)
    assert group.declaration.legality and group.declaration.verifier


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.basename(p)[:-4])
def test_corpus_with_neutralize_and_blocking_verifies_and_matches(path):
    with open(path) as f:
        module = kir.parse(f.read(), filename=path)
    res = optimize(construct(module), target="sm90", rulebooks=[BOOK, "blocking"])
    ir.verify(res.program)
    _matches_reference(module, res.program)
