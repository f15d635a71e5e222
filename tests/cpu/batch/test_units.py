"""Pieces of the batch runner on their own: atomic writes, the cache key and entries, input collection, the
worker pool's isolation, the progress line and the summary table."""
from __future__ import annotations

import io
import os

import pytest

from intent_eqsat import atomic
from intent_eqsat.batch import cache, report
from intent_eqsat.batch.pool import WorkerPool
from intent_eqsat.batch.runner import Progress, collect_inputs
from intent_eqsat.pipeline import UsageError

from .conftest import CORPUS, HOOKS, MALFORMED


# ------------------------------------------------------------------------------------------------ atomic

def test_write_atomic_replaces_whole_files_and_cleans_up_on_failure(tmp_path, monkeypatch):
    f = tmp_path / "d" / "a.txt"
    assert atomic.write_atomic(f, "one\n") is True
    assert atomic.write_atomic(f, "one\n") is False                  # same bytes: untouched
    assert f.read_text() == "one\n"

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic.write_atomic(f, "two\n" * 1000)
    assert f.read_text() == "one\n"                                  # the old content, whole
    assert sorted(p.name for p in f.parent.iterdir()) == ["a.txt"]   # no temporary left


def test_stale_temporaries_are_recognised_and_removed(tmp_path):
    (tmp_path / "k").mkdir()
    stale = tmp_path / "k" / ".gemm.triton.py.a1b2c3d4.tmp"
    stale.write_text("half")
    keep = tmp_path / "k" / "gemm.triton.py"
    keep.write_text("whole")
    assert atomic.is_temp(stale.name) and not atomic.is_temp(keep.name)
    assert atomic.remove_stale_temps(tmp_path) == [stale]
    assert keep.exists() and not stale.exists()


# ------------------------------------------------------------------------------------------------- cache

def _job(**kw):
    job = {"kind": "compile", "path": "a.kir", "text": (CORPUS / "gemm.kir").read_text(), "target": "sm90",
           "provider": "triton", "options": {}, "rulebooks": None}
    job.update(kw)
    return job


def test_cache_key_covers_what_the_output_depends_on_and_not_the_path(monkeypatch):
    base = cache.job_key(_job(), "none")
    assert cache.job_key(_job(path="elsewhere/b.kir"), "none") == base          # content-addressed
    assert cache.job_key(_job(options={"numerics": "source"}), "none") == base  # the same options
    for other in (_job(text=_job()["text"] + " "), _job(target="sm80"), _job(provider="cutile"),
                  _job(options={"numerics": "relaxed_normalization"}), _job(options={"online_reduction": False}),
                  _job(rulebooks=["blocking"]), _job(sizes={"M": 4096})):
        assert cache.job_key(other, "none") != base
    assert cache.job_key(_job(), {"blocking": "2"}) != base                      # rulebook versions
    off = cache.job_key(_job(optimize=False), "none")
    assert off != base                                                           # optimizer on / off
    assert cache.job_key(_job(optimize=False, rulebooks=["x"]), {"blocking": "2"}) == off  # rules unused
    assert cache.job_key(_job(optimize=False, sizes={"M": 4096}), "none") == off          # sizes unused
    assert cache.job_key(_job(sizes={"N": 2, "M": 1}), "none") == cache.job_key(_job(sizes={"M": 1, "N": 2}), "none")
    monkeypatch.setenv("INTENT_EQSAT_TOOL_VERSION", "0.1.1")
    assert cache.job_key(_job(), "none") != base                                 # the tool version
    monkeypatch.delenv("INTENT_EQSAT_TOOL_VERSION")
    assert cache.tool_version() == f"0.1.0+src.{cache.source_fingerprint()[:16]}"


def test_cache_key_covers_the_search_budget_but_not_the_safety_net():
    """Issue 21: the budget bounds the search, so it decides the program: part of the key when the optimizer runs.
    The wall-clock safety net never changes a program that is produced: not part of it."""
    from intent_eqsat.rules.schedule import Limits

    base = cache.job_key(_job(), "none")
    assert cache.job_key(_job(budget=Limits().as_dict()), "none") == base          # the default, spelled out
    assert cache.job_key(_job(budget={"iterations": 7}), "none") != base
    assert cache.job_key(_job(budget={"nodes": 1000}), "none") != base
    assert cache.job_key(_job(budget={"safety_seconds": 5.0}), "none") == base
    off = cache.job_key(_job(optimize=False), "none")
    assert cache.job_key(_job(optimize=False, budget={"iterations": 7}), "none") == off


def test_cache_key_covers_the_tuning_files_contents(tmp_path):
    """--calibration: the tuning files' bytes are part of the key when the optimizer runs (a new measurement may
    change the pick); not their paths, and not at all without the optimizer."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"format": "intent-eqsat-tuning/1", "measurements": []}')
    b.write_text(a.read_text())
    base = cache.job_key(_job(), "none")
    with_a = cache.job_key(_job(calibration=[str(a)]), "none")
    assert with_a != base
    assert cache.job_key(_job(calibration=[str(b)]), "none") == with_a            # same contents, other path
    b.write_text('{"format": "intent-eqsat-tuning/1", "measurements": [ ]}')
    assert cache.job_key(_job(calibration=[str(b)]), "none") != with_a
    off = cache.job_key(_job(optimize=False), "none")
    assert cache.job_key(_job(optimize=False, calibration=[str(a)]), "none") == off


def test_cache_stores_deterministic_results_and_relocates_errors(tmp_path):
    c = cache.Cache(tmp_path)
    err = {"status": "error", "phases": {}, "error": {"kind": "ParseError", "stage": "load",
                                                      "location": "x/bad.kir:3:1", "message": "x/bad.kir: oops"}}
    assert c.put("ab" * 32, "x/bad.kir", err)
    got = c.get("ab" * 32, "y/same_text.kir")
    assert got["error"]["location"] == "y/same_text.kir:3:1" and got["error"]["message"] == "y/same_text.kir: oops"
    for status in ("timeout", "crash"):
        assert not c.put("cd" * 32, "a.kir", {"status": status, "error": {"kind": "Timeout"}})
    assert not c.put("cd" * 32, "a.kir", {"status": "error", "error": {"kind": "InternalError"}})
    # the search's wall-clock safety net depends on the machine's load: never stored (issue 21)
    assert not c.put("cd" * 32, "a.kir", {"status": "error", "error": {"kind": "SearchTimeout"}})
    assert c.get("cd" * 32, "a.kir") is None
    (tmp_path / "ef").mkdir()
    (tmp_path / "ef" / ("ef" * 32 + ".json")).write_text("{not json")
    assert c.get("ef" * 32, "a.kir") is None                         # a damaged entry is a miss


# ------------------------------------------------------------------------------------------------ inputs

def test_collect_inputs_dirs_globs_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.kir").write_text("")
    (tmp_path / "sub" / "a.kir").write_text("")
    (tmp_path / "sub" / "notes.txt").write_text("")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.kir").write_text("")
    got = collect_inputs([str(tmp_path), str(tmp_path / "sub" / "*.kir"), str(tmp_path / "b.kir")])
    assert got == sorted([str(tmp_path / "b.kir"), str(tmp_path / "sub" / "a.kir")])
    with pytest.raises(UsageError):
        collect_inputs([str(tmp_path / "none*.kir")])


# -------------------------------------------------------------------------------------------------- pool

def test_pool_survives_timeout_crash_and_bad_input(tmp_path):
    text = (CORPUS / "row_sum.kir").read_text()
    job = {"kind": "compile", "text": text, "target": "sm90", "provider": "triton", "options": {},
           "debug_hook": f"{HOOKS}:inject"}
    with WorkerPool() as pool:
        slow = pool.run({**job, "path": "slow.kir"}, timeout=1.0)
        assert slow["status"] == "timeout" and slow["error"]["location"] == "slow.kir:2:1"
        crash = pool.run({**job, "path": "crash.kir"}, timeout=30)
        assert crash["status"] == "crash" and "SIGSEGV" in crash["error"]["message"]
        bad = pool.run({**job, "path": "bad.kir", "text": MALFORMED}, timeout=30)
        assert bad["status"] == "error" and bad["error"]["location"] == "bad.kir:4:1"
        ok = pool.run({**job, "path": "row_sum.kir"}, timeout=30)
        assert ok["status"] == "ok" and ok["kernels"][0]["name"] == "row_sum"
        again = pool.run({**job, "path": "row_sum.kir"}, timeout=30)
        assert again["kernels"] == ok["kernels"]
        assert pool.started == 3            # one fresh worker after the timeout, one after the crash


# ---------------------------------------------------------------------------------------- progress / table

def _entry(file, status, cached=False, error=None):
    return {"file": file, "provider": "triton", "kind": "compile", "status": status, "cached": cached,
            "error": error, "kernels": [{"name": "k"}] if status == "ok" else [], "cost": None,
            "compile_time_s": 0.5, "remarks": []}


def test_progress_lines_and_summary_table():
    buf = io.StringIO()
    p = Progress(2, stream=buf)
    p.update(_entry("a.kir", "ok", cached=True))
    p.update(_entry("b.kir", "error", error={"kind": "ParseError", "stage": "load", "location": "b.kir:1:2",
                                              "message": "bad"}))
    p.close()
    assert buf.getvalue().splitlines() == ["[1/2] a.kir (triton) ok", "[2/2] b.kir (triton) error"]

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    bar = Progress(2, stream=tty)                # a terminal: a tqdm bar with the counts, the last job and an ETA
    bar.update(_entry("a.kir", "ok", cached=True))
    bar.update(_entry("b.kir", "error"))
    bar.close()
    drawn = tty.getvalue()
    assert "2/2" in drawn and "1 failed, 1 cached; b.kir (triton) error" in drawn and "[1/2]" not in drawn
    table = report.summary_table([_entry("a.kir", "ok", cached=True),
                                  _entry("b.kir", "error", error={"kind": "ParseError", "stage": "load",
                                                                  "location": "b.kir:1:2", "message": "bad"})])
    assert "ok (cached)" in table and "ParseError [load] at b.kir:1:2: bad" in table
    assert table.splitlines()[0].split()[:6] == ["file", "provider", "status", "kernels", "cost_s", "time_s"]
    assert table.rstrip().endswith("2 jobs: 1 ok, 1 failed, 1 cached, 1 error")


def test_exit_code_partial_failure_and_allow_unsupported():
    from intent_eqsat.batch.runner import BatchResult

    ok = _entry("a.kir", "ok")
    unsupported = _entry("b.kir", "error", error={"kind": "ProviderSurfaceUnsupported", "location": "b.kir:2:1",
                                                   "message": "m", "unsupported_kind": "provider_surface"})
    parse = _entry("c.kir", "error", error={"kind": "ParseError", "location": "c.kir:1:1", "message": "m"})
    assert BatchResult([ok], None, 0.0).exit_code == 0
    assert BatchResult([ok, unsupported], None, 0.0).exit_code == 1
    assert BatchResult([ok, unsupported], None, 0.0, allow_unsupported=True).exit_code == 0
    assert BatchResult([ok, unsupported, parse], None, 0.0, allow_unsupported=True).exit_code == 1


def test_check_job_reports_a_mismatch_at_the_writing_statement(monkeypatch):
    import numpy as np

    from intent_eqsat import ir
    from intent_eqsat.batch import jobs

    real = ir.interpret

    def off_by_one(program, kernel, args, params=None):
        return {k: np.asarray(v) + 1 for k, v in real(program, kernel, args, params).items()}

    path = str(CORPUS / "softmax.kir")
    job = {"kind": "check", "path": path, "text": (CORPUS / "softmax.kir").read_text(), "seeds": 1}
    assert jobs.run_job(job)["status"] == "ok"
    monkeypatch.setattr(ir, "interpret", off_by_one)
    res = jobs.run_job(job)
    assert res["status"] == "error" and res["error"]["kind"] == "Mismatch"
    assert res["error"]["location"] == f"{path}:5:3"            # `Y[m, n] = ...`, the statement writing Y
    assert "elements differ from the reference" in res["error"]["message"]


def test_report_md_lists_remarks_and_states_the_costs_unit_and_sizes(tmp_path):
    """Issue 24 item 5: remarks reach report.md (not only report.json), and the cost column says what it is."""
    entries = [{"file": "a/softmax.kir", "provider": "triton", "status": "ok", "cached": False, "cost": 4.6e-06,
                "kernels": [{"name": "softmax"}], "compile_time_s": 1.0, "egraph_size": 10,
                "remarks": ["kernel softmax, softmax.s2.e6: online renormalization not applied"]},
               {"file": "b/row_sum.kir", "provider": "triton", "status": "ok", "cached": True, "cost": 1e-06,
                "kernels": [{"name": "row_sum"}], "compile_time_s": 0.0, "egraph_size": 5, "remarks": []}]
    header = {"tool": {"version": "t"}, "config": {"target": "sm90", "providers": ["triton"],
                                                   "sizes": {"M": 4096, "N": 8192}}}
    path = tmp_path / "report.md"
    report.write_markdown(path, header, entries, {})
    md = path.read_text()
    remarks = md.split("## Remarks", 1)[1].split("##", 1)[0]
    assert "- `a/softmax.kir` (triton): kernel softmax, softmax.s2.e6: online renormalization not applied" in remarks
    assert "row_sum" not in remarks
    assert ("time per launch in seconds on the target, at sizes `M=4096`, `N=8192` (other symbols: a window extent "
            "3, any other 1024;") in md
    assert "| predicted cost (s) |" in md
    header["config"].pop("sizes")
    report.write_markdown(path, header, entries[1:], {})
    md = path.read_text()
    assert "no `--sizes` given (every symbol: a window extent 3, any other 1024" in md and "## Remarks\n\nnone" in md
