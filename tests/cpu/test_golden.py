"""Golden tests per transformation group (issue 22 item 5, STYLE item 3): ``tests/golden/<group>/*.gir`` hold an
input program and the program after that group alone (``# CHECK:`` lines); every rule group and every
post-extraction group has at least one case; ``intent-eqsat opt`` runs them, ``--update`` rewrites them."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from intent_eqsat import cli, ir
from intent_eqsat.optimizer import golden
from intent_eqsat.optimizer import passes as P
from intent_eqsat.rules import registry

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
FILES = sorted(GOLDEN.glob("*/*.gir"))


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_golden_case(path: Path) -> None:
    results = golden.check_file(path)
    assert results
    for r in results:
        assert r.case.group == path.parent.name, f"{r.case.where()}: the case runs {r.case.group}"
        assert r.case.expected, f"{r.case.where()}: no CHECK lines (run intent-eqsat opt {path} --update)"
        assert r.ok, r.diff()
        if not r.case.remarks:        # a negative case: unchanged, with the remark that says why
            assert r.got != [line for _, line in r.case.input_lines], f"{r.case.where()}: the group changed nothing"


def test_every_group_has_a_golden_case() -> None:
    groups = set(registry.load().names) | set(P.names())
    have = {p.parent.name for p in FILES}
    assert groups <= have, f"groups without a golden case: {sorted(groups - have)}"
    assert have <= groups, f"golden folders that name no group: {sorted(have - groups)}"


def _a_case() -> Path:
    return GOLDEN / "tail_split" / FILES_BY_GROUP["tail_split"]


FILES_BY_GROUP = {p.parent.name: p.name for p in FILES}


def test_a_changed_expectation_fails_with_a_located_diff_and_update_restores_it(tmp_path: Path, capsys) -> None:
    src = _a_case()
    case = tmp_path / "case.gir"
    shutil.copy(src, case)
    text = case.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(golden.CHECK) and "for(" in ln)
    case.write_text(text.replace(line, line.replace("for(", "for_wrong("), 1))
    (bad,) = [r for r in golden.check_file(case) if not r.ok]
    assert f"{case}:{bad.case.line} expected" in bad.diff() and "for_wrong(" in bad.diff()
    assert cli.main(["opt", str(case), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "for_wrong(" in out and "0 of 1 case(s) match" in err
    assert cli.main(["opt", str(case), "--update"]) == 0
    assert case.read_text() == text
    assert cli.main(["opt", str(case), "--check"]) == 0


def test_opt_runs_one_group_on_a_gir_file(tmp_path: Path, capsys) -> None:
    (case,) = golden.parse_cases(_a_case().read_text(), str(_a_case()))
    program = tmp_path / "p.gir"
    program.write_text(ir.print_module(case.program()))
    assert cli.main(["opt", str(program), "--group", "tail_split"]) == 0
    assert capsys.readouterr().out.rstrip("\n").split("\n") == case.expected
    assert cli.main(["opt", str(program), "--group", "no_such_group"]) == 2
    assert "no_such_group" in capsys.readouterr().err
    assert cli.main(["opt", str(program), "--check"]) == 2                 # not a golden file: a usage error


def test_malformed_case_files_are_located_errors(tmp_path: Path) -> None:
    with pytest.raises(golden.GoldenError, match="exactly one '# RUN:' line") as ei:
        golden.parse_cases("module target \"sm90\" {\n}\n", "x.gir")
    assert str(ei.value.location) == "x.gir:1:1"
    with pytest.raises(golden.GoldenError, match="RUN field 'speed=3'") as ei:
        golden.parse_cases("# comment\n# RUN: group=blocking speed=3\n", "y.gir")
    assert str(ei.value.location) == "y.gir:2:1"
    two = "# RUN: group=a\n# -----\n# RUN: group=b\nmodule\n"
    assert [c.group for c in golden.parse_cases(two, "z.gir")] == ["a", "b"]
    assert golden.parse_cases(two, "z.gir")[1].input_lines == [(4, "module")]
