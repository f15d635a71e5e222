"""The transformation-group registry (STYLE item 1, SPEC PASS-1): declarations parsed from the rulebook docstring,
GROUP == registry key, every rule named ``<group>.<name>``, clear errors when the contract is broken."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from intent_eqsat.rules import registry
from intent_eqsat.rules.registry import HEADINGS, RulebookError

HERE = Path(__file__).resolve().parent
FIXTURE = str(HERE / "rulebooks_fixture")
ROOT = HERE.parents[2]

DOC = '''"""A test group.

Reads: nothing.

Legality: always.

Rewrites: nothing much.

Preserves: everything.

Invalidates: nothing.

Verifier: the shared GPU verifier.
"""
'''

BODY = '''
from egglog import rewrite, ruleset, vars_
from intent_eqsat.rules.sorts import Ty, Val, Vals, AMap

GROUP = "{group}"
ORDER = 5
RULESET = ruleset(name="{group}_{tag}")


def rules():
    x, y = vars_("x y", Val)
    a = vars_("a", AMap)
    return [("{rule_name}", rewrite(Val.op("neg", Vals.cons(Val.op("neg", Vals.cons(x, Vals.nil()),
                                                                    AMap.nil(), Ty.scalar("f32")), Vals.nil()),
                                           AMap.nil(), Ty.scalar("f32"))).to(x), "-(-x) = x")]
'''


def _write(tmp_path: Path, stem: str, *, doc: str = DOC, group: str | None = None, rule_name: str | None = None,
           extra: str = "") -> Path:
    group = stem if group is None else group
    rule_name = f"{group}.neg_neg" if rule_name is None else rule_name
    p = tmp_path / f"{stem}.py"
    p.write_text(doc + BODY.format(group=group, rule_name=rule_name, tag=tmp_path.name) + textwrap.dedent(extra))
    return p


# ------------------------------------------------------------------------------------------------ fixture groups

def test_fixture_groups_load_in_pass3_order():
    reg = registry.load([FIXTURE])
    assert reg.names == ["identity", "relaxed", "strength", "unbounded"]
    assert [g.order for g in reg.groups] == sorted(g.order for g in reg.groups)
    ident = reg.group("identity")
    assert ident.declaration.reads.startswith("pure ``mul`` values")
    assert "x * 1 == x" in ident.declaration.legality
    assert ident.declaration.verifier == "the shared GPU verifier after the group."
    assert reg.group("unbounded").schedule == "backoff"
    for r in reg.rules():
        assert r.name.startswith(r.group + ".")
        path, line = r.location.rsplit(":", 1)
        assert path.endswith(".py") and int(line) > 0
        assert r.law
    assert len(reg.version) == 12 and reg.version == registry.version([FIXTURE])


def test_group_and_rule_lookup():
    reg = registry.load([FIXTURE])
    assert reg.rule("identity.mul_one_right_f").group == "identity"
    with pytest.raises(LookupError):
        reg.group("nope")
    with pytest.raises(LookupError):
        reg.rule("identity.nope")
    with pytest.raises(LookupError):
        reg.select(["identity", "nope"])
    assert [g.name for g in reg.select(["unbounded", "identity"])] == ["identity", "unbounded"]


# ------------------------------------------------------------------------------------------------ contract errors

def test_good_tmp_group_loads(tmp_path):
    reg = registry.load([str(_write(tmp_path, "good"))])
    assert reg.names == ["good"]
    loc = reg.group("good").rules[0].location
    assert "good.py:" in loc and int(loc.rsplit(":", 1)[1]) > 14


@pytest.mark.parametrize("missing", HEADINGS)
def test_missing_heading_is_an_error(tmp_path, missing):
    doc = DOC.replace(f"{missing}:", "Something:")
    with pytest.raises(RulebookError) as info:
        registry.load([str(_write(tmp_path, "nohead", doc=doc))])
    assert f"{missing}:" in str(info.value) and "nohead.py" in str(info.value)


def test_missing_docstring_is_an_error(tmp_path):
    with pytest.raises(RulebookError, match="no module docstring"):
        registry.load([str(_write(tmp_path, "nodoc", doc=""))])


def test_group_must_equal_registry_key(tmp_path):
    with pytest.raises(RulebookError) as info:
        registry.load([str(_write(tmp_path, "mapping2", group="mapping"))])
    assert "GROUP = 'mapping'" in str(info.value) and "'mapping2'" in str(info.value)


def test_rule_without_group_prefix_is_an_error(tmp_path):
    with pytest.raises(RulebookError, match="does not belong to its group"):
        registry.load([str(_write(tmp_path, "pfx", rule_name="other.neg_neg"))])
    with pytest.raises(RulebookError, match="does not belong to its group"):
        registry.load([str(_write(tmp_path, "pfx2", rule_name="neg_neg"))])


def test_unnamed_rule_in_ruleset_is_an_error(tmp_path):
    extra = '''
    from egglog import rewrite as _rw
    _x = vars_("z", Val)
    RULESET.append(_rw(Val.op("abs", Vals.cons(Val.op("abs", Vals.cons(list(_x)[0], Vals.nil()), AMap.nil(),
                   Ty.scalar("f32")), Vals.nil()), AMap.nil(), Ty.scalar("f32"))).to(
                   Val.op("abs", Vals.cons(list(vars_("w", Val))[0], Vals.nil()), AMap.nil(), Ty.scalar("f32"))))
    '''
    with pytest.raises(RulebookError, match="does not name"):
        registry.load([str(_write(tmp_path, "unnamed", extra=extra))])


def test_duplicate_rule_name_is_an_error(tmp_path):
    extra = '''
    _orig = rules
    def rules():
        return _orig() + _orig()
    '''
    with pytest.raises(RulebookError, match="used twice"):
        registry.load([str(_write(tmp_path, "dup", extra=extra))])


def test_bad_order_and_ruleset_are_errors(tmp_path):
    with pytest.raises(RulebookError, match="ORDER must be an int"):
        registry.load([str(_write(tmp_path, "badorder", extra="ORDER = '20'\n"))])
    with pytest.raises(RulebookError, match="RULESET must be an egglog ruleset"):
        registry.load([str(_write(tmp_path, "badrs", extra="RULESET = None\n"))])


def test_import_failure_names_the_file(tmp_path):
    p = tmp_path / "broken.py"
    p.write_text(DOC + "raise RuntimeError('half written')\n")
    with pytest.raises(RulebookError) as info:
        registry.load([str(p)])
    assert "broken.py" in str(info.value) and "half written" in str(info.value)


def test_version_follows_the_sources(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    va = registry.version([str(_write(a, "same"))])
    vb = registry.version([str(_write(b, "same", extra="# a comment changes the version\n"))])
    assert va != vb


def test_unknown_rulebook_name():
    """An unknown name, file or directory is a usage error (CLI exit 2) that is also a LookupError (issue 25.11)."""
    from intent_eqsat.errors import UsageError

    for bad in (["no_such_group_anywhere"], ["/no/such/dir/x.py"], ["rulebooks.no_such_module"]):
        with pytest.raises(UsageError) as info:
            registry.load(bad)
        assert isinstance(info.value, LookupError) and "no rulebook" in str(info.value)


def test_the_built_in_directory_beside_a_user_file_imports_each_module_once():
    """``--rulebooks rulebooks/,my.py``: the built-in files are the package's own modules, not second copies whose
    rules egglog would refuse to define again ("Shadowing is not allowed", issue 25.11); a program optimizes."""
    from intent_eqsat import construct, ir, kir, optimizer

    default = registry.load()
    both = registry.load([str(ROOT / "rulebooks"), str(HERE / "rulebooks_fixture" / "identity.py")])
    assert set(default.names) < set(both.names)
    for name in default.names:
        assert both.group(name).module is default.group(name).module
    source = (ROOT / "examples" / "corpus" / "row_sum.kir").read_text()
    module = kir.parse(source, "row_sum.kir")
    program = construct.construct(module, target="sm90")
    result = optimizer.optimize(program, target="sm90", rulebooks=[str(ROOT / "rulebooks") + "/",
                                                                   str(HERE / "rulebooks_fixture" / "identity.py")])
    ir.verify(result.program)


# ------------------------------------------------------------------------------------------------ the real rulebooks

REAL = sorted(p for p in (ROOT / "rulebooks").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("path", REAL, ids=[p.stem for p in REAL])
def test_every_rulebook_declares_all_six_headings(path):
    """Checked on the source (no import), so a half-written rulebook still gets this check."""
    tree = ast.parse(path.read_text())
    decl = registry.parse_declaration(ast.get_docstring(tree, clean=False), str(path))
    for h in HEADINGS:
        assert getattr(decl, h.lower())
    groups = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
              and any(isinstance(t, ast.Name) and t.id == "GROUP" for t in n.targets)]
    assert groups == [path.stem], f"{path}: GROUP must equal the module name"


def test_the_real_rulebooks_load():
    reg = registry.load()
    assert reg.names == sorted(reg.names, key=lambda n: (reg.group(n).order, n))
    for g in reg.groups:
        assert g.rules, f"group {g.name} has no rules"
        for r in g.rules:
            assert r.name.startswith(g.name + ".")


# ------------------------------------------------------------------------------------------------ CLI functions

def test_rules_list_and_show():
    from intent_eqsat import optimizer as R

    listed = R.list_rules([FIXTURE])
    names = [r["name"] for r in listed]
    assert "identity.mul_one_right_f" in names and "unbounded.grow_op_1" in names
    text = R.show_rule("identity.mul_one_right_f", [FIXTURE])
    assert "x * 1 = x" in text and "identity.py:" in text and "Legality:" in text and "Val.op" in text
    assert "rules:" in R.show_rule("identity", [FIXTURE])
    with pytest.raises(LookupError):
        R.show_rule("identity.nope", [FIXTURE])
