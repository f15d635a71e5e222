"""The post-extraction groups are declared groups (issue 22 item 1, ``intent_eqsat.optimizer.passes``): listed by
``rules list``, shown with their PASS-1 declaration, run in ORDER after the rule groups, verified after each (a
failure names the group), reported with the rule groups, selectable by name, and validated by ``rules audit``
(a planted bug in one of them is caught)."""
from __future__ import annotations

import copy
import dataclasses
import types
from pathlib import Path

import pytest

from intent_eqsat import kir, optimizer
from intent_eqsat.construct import construct
from intent_eqsat.ir.core import walk
from intent_eqsat.optimizer import passes as P
from intent_eqsat.optimizer.optimize import GroupVerificationError
from intent_eqsat.rules import registry
from intent_eqsat.rules.registry import HEADINGS, RulebookError

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "corpus"


def _program(name: str):
    module = kir.parse((CORPUS / f"{name}.kir").read_text(), f"{name}.kir")
    return construct(module, target="sm90")


@pytest.fixture
def planted(monkeypatch):
    """Replace one pass's function (the registry is a tuple of frozen records: swap the record)."""
    def plant(name: str, run):
        monkeypatch.setattr(P, "_PASSES", tuple(dataclasses.replace(p, run=run) if p.name == name else p
                                                for p in P.all_passes()))
    return plant


def test_every_pass_is_declared_listed_and_ordered_after_the_rule_groups():
    rule_groups = registry.load().groups
    assert P.names() == ["tile_binding", "summary_owner", "carried_prefix", "split_reduction", "range_skip", "tail_split",
                         "unswitch_single_trip", "unswitch_siblings", "sibling_fusion", "program_order"]
    assert not set(P.names()) & {g.name for g in rule_groups}
    assert min(p.order for p in P.all_passes()) >= P.FIRST_PASS_ORDER > max(g.order for g in rule_groups)
    listed = {row["name"]: row for row in optimizer.list_rules()}
    for p in P.all_passes():
        for h in HEADINGS:
            assert getattr(p.declaration, h.lower()), (p.name, h)
        row = listed[p.name]
        assert row["group"] == p.name and row["law"] == p.summary
        path, line = row["location"].rsplit(":", 1)
        assert (ROOT / path).is_file() and int(line) > 0
        shown = optimizer.show_rule(p.name)
        assert shown.startswith(f"group {p.name} (ORDER {p.order}, post-extraction pass")
        assert all(f"{h}: " in shown for h in HEADINGS)
    assert "Legality: the guarded loop has no ``narrowing`` record" in optimizer.show_rule("unswitch_single_trip")
    assert "Legality: two or more of those loops load the same view" in optimizer.show_rule("unswitch_siblings")


def test_a_declaration_missing_a_heading_is_a_located_error():
    mod = types.ModuleType("fake_pass")
    mod.__doc__ = "A pass.\n\nDeclaration (SPEC PASS-1):\n\n- Reads: loops.\n- Legality: none.\n- Rewrites: x.\n"
    mod.__file__ = __file__
    with pytest.raises(RulebookError, match=r"lacks heading\(s\) Preserves:, Invalidates:, Verifier:"):
        P.declaration_of(mod, "s", after="Declaration (SPEC PASS-1)")


def test_the_report_counts_and_times_the_passes_beside_the_rule_groups():
    res = optimizer.optimize(_program("softmax"), target="sm90")
    assert res.report["groups"][-len(P.names()):] == P.names()
    changed = res.report["passes_changed"]
    assert changed["tile_binding"] == 1 and changed["unswitch_siblings"] == 1   # the row passes run once
    assert changed["tail_split"] == 0                                           # no matrix-unit loop to split
    assert not set(res.rules_fired) & set(P.names())                            # rules_fired: egglog rules
    runs = {g["group"]: g for g in res.report["kernels"]["softmax"]["groups"]}
    assert runs["unswitch_siblings"]["stop"] == "ran" and runs["unswitch_siblings"]["rules_fired"]
    assert runs["program_order"]["rules_fired"] == {}
    assert all(f"group:{n}" in res.report["phases"] for n in P.names())
    assert res.report["rule_locations"]["tail_split"].startswith("intent_eqsat/ir/tail_split.py:")
    assert "unswitch_siblings: ran" in res.trace()


def test_passes_follow_their_rule_group_or_their_own_name():
    blocked = optimizer.optimize(_program("softmax"), target="sm90", groups=["blocking", "reduction"])
    assert blocked.report["groups"] == ["blocking", "reduction", "tile_binding", "split_reduction",
                                        "unswitch_single_trip"]
    named = optimizer.optimize(_program("softmax"), target="sm90", groups=["blocking", "reduction",
                                                                            "unswitch_siblings"])
    assert named.report["groups"][-2:] == ["unswitch_single_trip", "unswitch_siblings"]
    assert named.report["passes_changed"]["unswitch_siblings"] == 1
    with pytest.raises(LookupError, match="no_such_group"):
        optimizer.optimize(_program("softmax"), target="sm90", groups=["no_such_group"])


def test_a_pass_that_breaks_the_program_is_named_by_the_verifier(planted):
    def drop_the_store(kernel, ctx):
        out = copy.deepcopy(kernel)
        for op in walk(out.body):
            for region in op.regions:
                region.ops[:] = [o for o in region.ops if o.name != "store"]
        return out

    planted("program_order", drop_the_store)
    with pytest.raises(GroupVerificationError) as ei:
        optimizer.optimize(_program("row_sum"), target="sm90")
    assert ei.value.group == "program_order" and "program_order" in str(ei.value)


def test_rules_audit_validates_a_pass_and_catches_a_planted_bug(planted):
    groups = registry.load().names + ["unswitch_siblings"]
    kwargs = dict(groups=groups, examples=2, programs=1, variants=False, shrink=False)
    sound = optimizer.audit([str(CORPUS / "softmax.kir")], **kwargs)
    ra = sound.rule("unswitch_siblings")
    assert sound.ok and ra.verdict == "ok" and ra.validated >= 1 and ra.kernels
    real = P.get("unswitch_siblings").run

    def sub_becomes_add(kernel, ctx):
        out = real(kernel, ctx)
        if out is kernel:
            return out
        out = copy.deepcopy(out)
        next(op for op in walk(out.body) if op.name == "sub").name = "add"
        return out

    planted("unswitch_siblings", sub_becomes_add)
    broken = optimizer.audit([str(CORPUS / "softmax.kir")], **kwargs)
    assert not broken.ok and broken.rule("unswitch_siblings").verdict == "UNSOUND"
    (failure,) = broken.failures
    assert failure.rules == ["unswitch_siblings"] and failure.kind == "mismatch" and failure.output == "Y"
    assert failure.locations[0].startswith("intent_eqsat/ir/unswitch.py:")
