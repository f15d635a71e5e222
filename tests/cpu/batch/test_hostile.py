"""Fault injection for the batch driver (issue 25 items 1, 3 and 6): hostile input names, a SIGKILLed worker,
unreadable and non-UTF-8 inputs, an output folder that links outside itself. The driver never dies on an input,
every job gets an outcome (ok or a located error), report.json is always written, and nothing outside ``--out``
changes, in a first run and in a warm-cache re-run."""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

from intent_eqsat import cli
from intent_eqsat.batch import outputs
from intent_eqsat.batch.report import FAILED

from .conftest import CORPUS, HOOKS, artifacts

LONG_KERNEL = "k" * 300
ROW_SUM = (CORPUS / "row_sum.kir").read_text()


def _tree(root: Path, skip: Path) -> dict[str, str]:
    """Every entry under ``root`` but inside ``skip``: its name -> type, mode and content (links by their target,
    never followed)."""
    seen: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        if here == skip:
            dirs[:] = []
            continue
        for name in sorted(dirs + files):
            p = here / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                what = "link " + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                what = "dir"
            else:
                try:
                    what = "file " + hashlib.sha256(p.read_bytes()).hexdigest()
                except OSError:
                    what = "unreadable"
            seen[ascii(str(p.relative_to(root)))] = f"{what} {stat.S_IMODE(st.st_mode):o}"
    return seen


def _unreadable(d: Path) -> Path | None:
    """A ``.kir`` input that cannot be read: mode 000, or (as root, who reads anything) a link to a /proc file
    that refuses reads; None when neither works here."""
    p = d / "unreadable.kir"
    p.write_text(ROW_SUM)
    p.chmod(0)
    try:
        p.read_bytes()
    except OSError:
        return p
    p.chmod(0o644)
    p.unlink()
    proc = Path("/proc/self/clear_refs")
    if proc.is_file():
        p.symlink_to(proc)
        try:
            p.read_bytes()
        except OSError:
            return p
        p.unlink()
    return None


def _hostile(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """The inputs (all passed as files: names that start with a dot are skipped in a folder) and, by file, the
    outcome each must have."""
    d = tmp_path / "in"
    d.mkdir()
    expect: dict[str, str] = {}

    def put(name: str, text: str, outcome: str = "ok") -> None:
        (d / name).write_text(text, encoding="utf-8")
        expect[str(d / name)] = outcome

    put("...kir", ROW_SUM)                                    # stem ".."
    put("..kir", (CORPUS / "softmax.kir").read_text())        # stem "."
    put("....kir", ROW_SUM)                                   # stem "..."
    put("report.json.kir", ROW_SUM)                           # the batch's own files
    put("report.md.kir", ROW_SUM)
    put("plots.kir", ROW_SUM)
    put("a b \u00fc \u03bb.kir", ROW_SUM)                       # spaces and unicode
    put("back\\slash.kir", ROW_SUM)
    put("cost $\\frac$.kir", ROW_SUM)                         # not matplotlib's math in a plot label
    put("x" * 250 + ".kir", ROW_SUM)                          # the longest name the file system takes
    put("long_kernel.kir", ROW_SUM.replace("row_sum", LONG_KERNEL))
    put("kill_row_max.kir", (CORPUS / "row_max.kir").read_text(), "WorkerCrash")
    (d / "latin1.kir").write_bytes(b"# caf\xe9\nkernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i]\n}\n")
    expect[str(d / "latin1.kir")] = "UsageError"
    put("row_sum.kir", ROW_SUM, "OutputError")                # its output folder links outside --out
    bad = _unreadable(d)
    if bad is not None:
        expect[str(bad)] = "UsageError"
    try:                                                      # a name that is not UTF-8
        raw = os.path.join(os.fsencode(d), b"\xff\xfe.kir")
        with open(raw, "wb") as f:
            f.write(ROW_SUM.encode())
        expect[os.fsdecode(raw)] = "ok"
    except OSError:                                           # a file system that wants UTF-8 names
        pass
    return sorted(expect), expect


def _batch(args: list[str], capsys) -> int:
    code = cli.main(["batch", *args, "--no-optimize", "--no-progress", "-j", "2", "--timeout", "60"])
    capsys.readouterr()
    return code


def _check_report(out: Path, inputs: list[str], expect: dict[str, str]) -> dict:
    report = json.loads((out / "report.json").read_text())
    assert (out / "report.md").is_file()
    entries = report["results"]
    assert len(entries) == len(inputs)
    root = out.resolve()
    for path, e in zip(inputs, entries):                      # in input order, one job per input
        shown = e["file"]
        assert shown == outputs.display_path(path)
        want = expect[path]
        if want == "ok":
            assert e["status"] == "ok", e
            for a in [k["artifact"] for k in e["kernels"]] + [e["program"]["artifact"]]:
                p = out / a
                assert p.is_file() and root in p.resolve().parents
                assert all(len(part.encode()) <= 120 for part in Path(a).parts)
            assert e["stem"].casefold() not in {n.casefold() for n in outputs.RESERVED}
        else:
            assert e["status"] in FAILED and e["error"]["kind"] == want, e
            assert re.fullmatch(re.escape(shown) + r":\d+:\d+", e["error"]["location"]), e["error"]
    return report


def test_hostile_inputs_never_kill_the_driver_nor_touch_anything_outside_out(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INTENT_EQSAT_WORKER_HOOK", f"{HOOKS}:inject")
    inputs, expect = _hostile(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "row_sum.triton.py").write_text("not the batch's\n")
    (out / "row_sum").symlink_to(elsewhere)                   # a link out of --out: refused, not followed
    for name in ("victim.triton.py", "victim.triton.gir", "...triton.gir"):   # what a glob cleanup would take
        (tmp_path / name).write_text("not the batch's\n")
    before = _tree(tmp_path, out)

    assert _batch([*inputs, "--out", str(out)], capsys) == 1
    assert _tree(tmp_path, out) == before
    report = _check_report(out, inputs, expect)
    by = {e["file"]: e for e in report["results"]}
    assert "SIGKILL" in by[str(tmp_path / "in" / "kill_row_max.kir")]["error"]["message"]
    latin = by[str(tmp_path / "in" / "latin1.kir")]["error"]
    assert latin["location"].endswith("latin1.kir:1:6") and latin["message"].startswith("cannot read ")
    assert "outside" in by[str(tmp_path / "in" / "row_sum.kir")]["error"]["message"]
    long = by[str(tmp_path / "in" / "long_kernel.kir")]
    assert long["kernels"][0]["name"] == LONG_KERNEL and (out / long["kernels"][0]["artifact"]).is_file()
    assert (out / "plots" / "compile_time.png").is_file()
    first = artifacts(out)

    # the same batch again, warm cache: every job that succeeded comes from the cache, nothing else changes
    assert _batch([*inputs, "--out", str(out)], capsys) == 1
    assert _tree(tmp_path, out) == before
    report = _check_report(out, inputs, expect)
    assert all(e["cached"] for e in report["results"] if e["status"] == "ok")
    assert artifacts(out) == first


def test_cleanup_removes_only_what_the_batch_recorded_writing(tmp_path, capsys):
    """A job that now fails takes its own earlier artifacts with it, never a file the batch did not write, and a
    manifest that names paths outside --out (edited, or from an older tool) is not obeyed."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "row_sum.kir").write_text(ROW_SUM)
    out = tmp_path / "out"
    assert _batch([str(src / "row_sum.kir"), "--out", str(out)], capsys) == 0
    assert (out / "row_sum" / "row_sum.triton.py").is_file()
    mine = out / "row_sum" / "mine.triton.py"
    mine.write_text("kept\n")
    victim = tmp_path / "victim.triton.py"
    victim.write_text("kept\n")
    with open(out / outputs.MANIFEST, "a", encoding="utf-8") as f:
        for d, name in (("..", "victim.triton.py"), ("row_sum", "../../victim.triton.py"), ("/", "etc")):
            f.write(json.dumps({"dir": d, "provider": "triton", "files": [name]}) + "\n")
    (src / "row_sum.kir").write_text(ROW_SUM.replace("X[m, n]", "X[m, q]"))
    assert _batch([str(src / "row_sum.kir"), "--out", str(out)], capsys) == 1
    assert not (out / "row_sum" / "row_sum.triton.py").exists()
    assert not (out / "row_sum" / "row_sum.triton.gir").exists()
    assert mine.read_text() == "kept\n" and victim.read_text() == "kept\n"


def test_output_names_are_safe_unique_and_bounded():
    names = outputs.unique_names([("..", "a"), (".", "b"), ("report.json", "c"), ("A b", "d"), ("a_b", "e"),
                                  ("x" * 300, "f"), ("x" * 300 + "y", "g"), ("Gemm", "h"), ("gemm", "i")],
                                 reserved=outputs.RESERVED)
    assert len({n.casefold() for n in names}) == len(names)
    for n in names:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", n) and len(n) <= outputs.MAX_NAME
        assert n.casefold() not in {r.casefold() for r in outputs.RESERVED}
    assert names[4] == "a_b" and names[7].startswith("Gemm-") and names[8].startswith("gemm-")
    # deterministic: the same inputs give the same names
    assert outputs.unique_names([("..", "a")]) == outputs.unique_names([("..", "a")])


def test_batch_reads_an_input_as_compile_does(tmp_path, capsys):
    """Text that is not UTF-8 is the error ``compile`` gives (a UsageError with its message; in the batch that
    job's, located at the bad byte); a byte order mark gets the same outcome in both, whatever the parser makes
    of it."""
    latin = tmp_path / "latin1.kir"
    latin.write_bytes(ROW_SUM.encode().replace(b"Row sums", b"Row s\xfcms"))
    bom = tmp_path / "bom.kir"
    bom.write_bytes(b"\xef\xbb\xbf" + ROW_SUM.encode())
    out = tmp_path / "out"
    _batch([str(latin), str(bom), "--out", str(out)], capsys)
    by = {Path(e["file"]).name: e for e in json.loads((out / "report.json").read_text())["results"]}

    assert cli.main(["compile", str(latin), "--no-optimize"]) == 2
    said = capsys.readouterr().err.strip()
    err = by["latin1.kir"]["error"]
    assert err["kind"] == "UsageError" and err["stage"] == "load" and err["location"] == f"{latin}:1:8"
    assert said == f"intent-eqsat: compile: {err['location']}: {err['message']}"

    code = cli.main(["compile", str(bom), "--no-optimize"])
    said = capsys.readouterr().err
    assert (code, by["bom.kir"]["status"]) in ((0, "ok"), (1, "error"))
    if code == 1:
        assert said.startswith(f"{by['bom.kir']['error']['location']}: {by['bom.kir']['error']['kind']}")
