"""``rules audit`` (issue 6): translation validation of rules on hypothesis-drawn instances of corpus kernels, firing
counts, rules that never fire. Must show: the audit finds a deliberately unsound rule planted in a test rulebook
(``rulebooks_fixture/audit/unsound.py``: ``x - y = y - x``) and clears the real blocking rules."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat import cli, ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.kir.inputs import random_inputs, tolerance
from intent_eqsat.optimizer import audit
from intent_eqsat.optimizer.audit import draw_instances

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CORPUS = ROOT / "examples" / "corpus"
UNSOUND = str(HERE / "rulebooks_fixture" / "audit" / "unsound.py")
SMALL = dict(examples=3, programs=3)


def _kernel(name: str) -> str:
    return str(CORPUS / f"{name}.kir")


def _line_of(path: str, needle: str) -> int:
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.fixture(scope="module")
def unsound_audit():
    return audit([_kernel("softmax"), _kernel("elementwise_chain")], rulebooks=[UNSOUND], **SMALL)


# ------------------------------------------------------------------------------------------------ the planted rule

def test_the_planted_unsound_rule_is_found_with_kernel_shapes_error_and_location(unsound_audit):
    res = unsound_audit
    assert res.ok is False
    bad = res.rule("unsound.sub_commute")
    assert bad.verdict == "UNSOUND"
    assert bad.fired > 0 and len(bad.kernels) == 1 and bad.kernels[0].endswith("softmax.kir:softmax")
    assert len(bad.failures) == 1
    f = bad.failures[0]
    assert f.rules == ["unsound.sub_commute"] and f.group == "unsound" and f.kernel == "softmax"
    line = _line_of(UNSOUND, 'named("unsound.sub_commute"')
    assert f.locations == [f"tests/cpu/rules/rulebooks_fixture/audit/unsound.py:{line}"]
    assert f.blame == "fails alone"            # sub_add_neg fired on the same subtractions and was cleared alone
    assert f.kind == "mismatch" and f.output == "Y"
    rtol, atol = tolerance("f32")
    assert (f.rtol, f.atol) == (rtol, atol)
    assert set(f.sizes) == {"M", "N"} and all(v >= 1 for v in f.sizes.values())
    assert f.max_error > atol
    # the reported instance is a real one: the constructed program equals the reference there (so the difference is
    # the rule's), and swapping a subtraction changes softmax by at least the reported order of magnitude
    module = kir.parse(Path(_kernel("softmax")).read_text())
    inputs = random_inputs(module, "softmax", f.input_seed, sizes=f.sizes)
    ref = kir.evaluate(module, "softmax", {k: v.copy() for k, v in inputs.items()}, float64=True)["Y"]
    got = ir.interpret(construct(module), "softmax", {k: v.copy() for k, v in inputs.items()})["Y"]
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    x = inputs["X"].astype(np.float64)
    swapped = np.exp(x.max(axis=1, keepdims=True) - x)
    swapped = swapped / swapped.sum(axis=1, keepdims=True)
    assert np.max(np.abs(swapped - ref)) > atol
    assert "unsound.sub_commute" in res.text() and f"unsound.py:{line}" in res.text()


def test_a_sound_rule_firing_on_the_same_kernel_is_cleared(unsound_audit):
    ok = unsound_audit.rule("unsound.sub_add_neg")
    assert ok.verdict == "ok" and ok.failures == []
    assert ok.fired > 0 and ok.validated > 0 and ok.programs > 0


def test_rules_that_never_fire_are_listed(unsound_audit):
    res = unsound_audit
    assert res.never_fired == ["unsound.neg_neg"]
    nn = res.rule("unsound.neg_neg")
    assert nn.verdict == "never fired" and nn.fired == 0 and nn.kernels == []
    assert "never fired: unsound.neg_neg" in res.text()


def test_json_report_schema(unsound_audit):
    d = json.loads(unsound_audit.to_json())
    assert set(d) == {"ok", "config", "summary", "rules", "never_fired", "failures", "kernels", "errors"}
    assert d["ok"] is False and d["never_fired"] == ["unsound.neg_neg"]
    assert d["config"]["groups"] == ["unsound"] and d["config"]["examples"] == 3 and d["config"]["target"] == "sm90"
    assert d["summary"]["rules"] == 3 and d["summary"]["unsound"] == 1 and d["summary"]["never_fired"] == 1
    for r in d["rules"]:
        assert set(r) == {"name", "group", "law", "location", "fired", "kernels", "validated", "programs", "verdict",
                          "failures", "options"}
        assert isinstance(r["fired"], int) and isinstance(r["kernels"], list)
    [f] = d["failures"]
    assert {"group", "file", "kernel", "kind", "program", "message", "rules", "locations", "blame", "output",
            "max_error", "rtol", "atol", "sizes", "input_seed", "tiles"} <= set(f)
    assert f["rules"] == ["unsound.sub_commute"] and isinstance(f["max_error"], float)
    ks = {k["kernel"]: k for k in d["kernels"]}
    assert set(ks) == {"softmax", "elementwise_chain"}
    assert len(ks["softmax"]["instances"]) == 3
    assert ks["softmax"]["stages"][0]["status"] == "failed"
    assert ks["elementwise_chain"]["stages"][0]["rules_fired"] == {}


# ------------------------------------------------------------------------------------------------ real rules

def test_blocking_rules_pass_on_corpus_kernels():
    res = audit([_kernel("transpose"), _kernel("row_sum")], rulebooks=["blocking"], **SMALL)
    assert res.ok, res.text()
    assert res.failures == [] and res.errors == []
    for name, kernel in (("blocking.ownership_rank2", "transpose"), ("blocking.ownership_rank1", "row_sum")):
        r = res.rule(name)
        assert r.verdict == "ok" and r.fired > 0 and r.validated > 0 and r.programs > 0, name
        assert any(k.endswith(f":{kernel}") for k in r.kernels)
    assert "blocking.ownership_rank4" in res.never_fired


def test_an_unsound_union_the_default_extraction_avoids_is_still_caught(tmp_path):
    """``x - y -> -(-(y - x))``: the wrong alternative is larger than the original, so the optimizer's own choice
    keeps the original; the novel / forced extractions must take it."""
    src = Path(UNSOUND).read_text().replace('GROUP = "unsound"', 'GROUP = "sneaky"').replace("unsound.", "sneaky.")
    src = src.replace('rewrite(P.binary("sub", x, y, a, ty)).to(P.binary("sub", y, x, a, ty))',
                      'rewrite(P.binary("sub", x, y, a, ty)).to(P.unary("neg", P.unary("neg", '
                      'P.binary("sub", y, x, a, ty), a, ty), a, ty))')
    assert "P.unary(\"neg\", P.unary(\"neg\", P.binary(\"sub\", y, x" in src
    start = src.index('        named("sneaky.neg_neg"')            # -(-x) = x would make the wrong term the smallest
    src = src[:start] + src[src.index('"-(-x) = x"),', start) + len('"-(-x) = x"),'):]
    path = tmp_path / "sneaky.py"
    path.write_text(src)
    res = audit([_kernel("softmax")], rulebooks=[str(path)], groups=["sneaky"], **SMALL)
    assert not res.ok
    [f] = res.failures
    assert f.rules == ["sneaky.sub_commute"] and f.kind == "mismatch"
    assert f.program != "default"
    assert res.rule("sneaky.sub_add_neg").verdict == "ok"


# ------------------------------------------------------------------------------------------------ instances

def test_instances_are_hypothesis_drawn_reproducible_and_bounded():
    a = draw_instances(["M", "N", "K"], 6, seed=3, min_size=1, max_size=17, max_elements=64)
    b = draw_instances(["M", "N", "K"], 6, seed=3, min_size=1, max_size=17, max_elements=64)
    assert a == b and len(a) == 6
    for inst in a:
        assert set(inst.sizes) == {"M", "N", "K"}
        assert all(1 <= v <= 17 for v in inst.sizes.values())
        assert math.prod(inst.sizes.values()) <= 64
    assert len({tuple(sorted(i.sizes.items())) for i in a}) == 6
    assert any(v % 2 == 1 and v > 1 for i in a for v in i.sizes.values())        # odd sizes (tails) included
    assert [math.prod(i.sizes.values()) for i in a] == sorted(math.prod(i.sizes.values()) for i in a)
    assert draw_instances(["M", "N", "K"], 6, seed=4) != a


# ------------------------------------------------------------------------------------------------ CLI

def test_cli_exit_codes_and_json(tmp_path, capsys):
    out = tmp_path / "audit.json"
    rc = cli.main(["rules", "audit", _kernel("softmax"), "--rulebooks", UNSOUND, "--examples", "2",
                   "--programs", "2", "--json", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 1
    assert "UNSOUND" in captured.out and "unsound.sub_commute" in captured.out
    d = json.loads(out.read_text())
    assert d["ok"] is False and d["failures"][0]["rules"] == ["unsound.sub_commute"]

    rc = cli.main(["rules", "audit", _kernel("transpose"), "--rulebooks", "blocking", "--examples", "2",
                   "--programs", "2"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "blocking.ownership_rank2" in captured.out and "all sound" in captured.out
    assert "audit [1/1]" in captured.err                       # progress on stderr

    for argv in (["rules", "audit", str(tmp_path / "missing.kir")],
                 ["rules", "audit", _kernel("softmax"), "--rulebooks", "no_such_rulebook"],
                 ["rules", "audit", _kernel("softmax"), "--rulebooks", UNSOUND, "--groups", "nope"],
                 ["rules", "audit", _kernel("softmax"), "--examples", "0"],
                 ["rules", "audit", _kernel("softmax"), "--target", "sm1"]):
        assert cli.main(argv) == 2, argv
        assert capsys.readouterr().err.startswith("intent-eqsat: ")


# ------------------------------------------------------------------------------------------------ issue 25.9

EXP_SPLIT = str(HERE / "rulebooks_fixture" / "audit" / "expsplit.py")


def test_inputs_cover_several_value_distributions():
    """Float inputs are drawn from N(0,1), x100, a wide range, signed zeros and near underflow; integer index
    views stay in range whatever the distribution."""
    from intent_eqsat.kir.inputs import VALUE_DISTRIBUTIONS

    module = kir.parse((CORPUS / "embedding_gather.kir").read_text())
    seen = {}
    for values in VALUE_DISTRIBUTIONS:
        x = random_inputs(module, "embedding_gather", 3, sizes={"V": 5, "D": 64, "N": 7}, values=values)
        assert x["idx"].min() >= 0 and x["idx"].max() < 5
        seen[values] = x["E"]
    assert np.abs(seen["normal"]).max() < 10 < np.abs(seen["large"]).max()
    assert np.abs(seen["mixed"]).max() > 10 and np.abs(seen["mixed"]).min() < 0.1
    sz = seen["signed_zero"]
    assert set(np.unique(sz).tolist()) <= {0.0, 1.0, -1.0, 2.0} and np.signbit(sz[sz == 0]).any()
    assert 0 < np.abs(seen["tiny"]).max() < 1e-15
    insts = draw_instances(["N"], 5, seed=1)
    assert [i.values for i in insts] == list(VALUE_DISTRIBUTIONS)


def test_an_overflow_unsound_rule_passes_on_normal_values_and_fails_on_large_ones():
    """``exp(a - b) -> exp(a) / exp(b)`` agrees with softmax's reference on N(0,1) inputs; the x100 instance
    gives NaN, so the audit names the rule and the value distribution (issue 25.9)."""
    normal_only = audit([_kernel("softmax")], rulebooks=[EXP_SPLIT], examples=1, programs=3, variants=False)
    assert normal_only.ok and normal_only.rule("expsplit.exp_sub").verdict == "ok"
    res = audit([_kernel("softmax")], rulebooks=[EXP_SPLIT], examples=2, programs=3, variants=False)
    assert not res.ok
    [f] = res.failures
    assert f.rules == ["expsplit.exp_sub"] and f.values == "large" and f.kind == "mismatch"
    assert "(large values)" in f.line()


def test_a_rule_gated_on_a_non_default_option_is_audited_under_it(tmp_path):
    """``relaxed.add_zero`` needs numerics=relaxed_normalization: under the default options it cannot fire, so the
    audit re-runs its group under the options one field away and reports it validated there, not "never fired"."""
    fixture = str(HERE / "rulebooks_fixture" / "relaxed.py")
    kernel = tmp_path / "scaled.kir"
    kernel.write_text("kernel scaled(X: f32[N, M], Y: out f32[N, M]) {\n  Y[i, j] = X[i, j] * 2.0 + 0.0\n}\n")
    corpus = [str(kernel)]
    res = audit(corpus, rulebooks=[fixture], **SMALL)
    add_zero = res.rule("relaxed.add_zero")
    relaxed_key = "numerics=relaxed_normalization,online_reduction=True,optimization_remarks=False"
    assert add_zero.fired > 0 and add_zero.validated > 0 and add_zero.verdict == "ok", res.text()
    assert add_zero.options == [relaxed_key]
    assert "relaxed.add_zero" not in res.never_fired
    assert res.config["option_variants"][0]["options"] == relaxed_key
    assert "relaxed.add_zero" in res.config["option_variants"][0]["newly_fired"]
    assert f"fired only under other compile options: relaxed.add_zero ({relaxed_key})" in res.text()
    assert any(k.options == relaxed_key for k in res.kernels)
    without = audit(corpus, rulebooks=[fixture], variants=False, **SMALL)
    assert "relaxed.add_zero" in without.never_fired
