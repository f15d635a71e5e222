"""The batch runner: inputs -> jobs -> cache / executor -> artifacts and reports in the output directory.

Output directory layout (``--out DIR``)::

    DIR/<stem>/<kernel>.<provider>.py     generated source, one per kernel (compile)
    DIR/<stem>/<stem>.<provider>.gir      the GPU IR program that was serialized (compile)
    DIR/report.json, DIR/report.md       every job: status, error kind + file:line:col, cost, times, cached
    DIR/plots/*.png                      predicted cost, compile time, e-graph size vs compile time
    DIR/.cache/                          the content-addressed cache (``--cache-dir`` moves it)

``<stem>`` is the input's file stem (with ``-<hash of its path>`` appended when two inputs share a stem). Every
file is written atomically; stale temporaries of a killed earlier run are removed first; artifacts of a job that
now fails are removed, so the directory never shows a result the report does not.
"""
from __future__ import annotations

import glob
import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from intent_eqsat import pipeline
from intent_eqsat.batch import report as rep
from intent_eqsat.batch.atomic import remove_stale_temps, write_atomic
from intent_eqsat.batch.cache import Cache, job_key, source_fingerprint, tool_version
from intent_eqsat.batch.executors import Executor, make_executor

HOOK_ENV = "INTENT_EQSAT_WORKER_HOOK"


# ------------------------------------------------------------------------------------------------- inputs

def collect_inputs(args: Sequence[str], exts: tuple[str, ...] = (".kir",)) -> list[str]:
    """Expand directories (recursively, files with ``exts``), globs and plain files; sorted, deduplicated.

    Raises :class:`~intent_eqsat.pipeline.UsageError` for an argument that names nothing."""
    found: dict[str, None] = {}
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            hits = sorted(str(q) for q in p.rglob("*") if q.is_file() and q.suffix in exts
                          and not any(part.startswith(".") for part in q.relative_to(p).parts))
            if not hits:
                raise pipeline.UsageError(f"{arg}: no {'/'.join(exts)} files in this directory")
        elif p.is_file():
            hits = [str(p)]
        else:
            hits = sorted(h for h in glob.glob(arg, recursive=True) if Path(h).is_file() and Path(h).suffix in exts)
            if not hits:
                raise pipeline.UsageError(f"{arg}: no such file, directory or matching {'/'.join(exts)} files")
        for h in hits:
            found.setdefault(os.path.normpath(h), None)
    return sorted(found)


def _stems(paths: Sequence[str]) -> dict[str, str]:
    count: dict[str, int] = {}
    for p in paths:
        count[Path(p).stem] = count.get(Path(p).stem, 0) + 1
    return {p: (Path(p).stem if count[Path(p).stem] == 1 else
                f"{Path(p).stem}-{hashlib.sha256(p.encode()).hexdigest()[:8]}") for p in paths}


# ----------------------------------------------------------------------------------------------- progress

class Progress:
    """One status line on stderr: redrawn in place on a terminal, one line per finished job otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = self.failed = self.cached = 0
        self.t0 = time.monotonic()

    def update(self, entry: dict) -> None:
        self.done += 1
        self.failed += entry["status"] in rep.FAILED
        self.cached += bool(entry.get("cached"))
        if not self.enabled:
            return
        what = f"{entry['file']} ({entry.get('provider') or entry.get('kind')}) {entry['status']}"
        counts = f"{self.done}/{self.total} done, {self.failed} failed, {self.cached} cached"
        if self.tty:
            width = 30
            fill = int(width * self.done / self.total)
            line = f"\r[{'#' * fill}{'.' * (width - fill)}] {counts} {time.monotonic() - self.t0:.1f}s  {what}"
            self.stream.write(line[:200].ljust(120))
        else:
            self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {what}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ------------------------------------------------------------------------------------------------- config

@dataclass
class BatchConfig:
    inputs: list[str]
    out: Path | None
    kind: str = "compile"                       # "compile" or "check"
    target: str = "sm90"
    providers: list[str] = field(default_factory=lambda: ["triton"])
    options: dict = field(default_factory=dict)
    rulebooks: Any = None
    jobs: int = 1
    timeout: float | None = 600.0
    executor: str = "process"
    scheduler: str | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    progress: bool = True
    plots: bool = True
    seeds: int = 2                              # check: random inputs per kernel
    optimize: bool | None = None                # run the optimizer (default: yes for compile, no for check)
    write_reports: bool = True
    allow_unsupported: bool = False             # exit code: a declared Unsupported rejection is not a failure
    sizes: dict | None = None                   # compile: the problem sizes the cost model picks tiles for
    calibration: list | None = None             # compile: tuning files that re-rank measured tile bindings
    specialize: dict | None = None              # compile: symbol -> values (pipeline.make_specialize), SPEC IR-2
    budget: Any = None                          # the search budget per kernel (pipeline.make_budget; None: default)


@dataclass
class BatchResult:
    entries: list[dict]
    out: Path | None
    wall_s: float
    allow_unsupported: bool = False

    @property
    def failed(self) -> list[dict]:
        return [e for e in self.entries if e["status"] in rep.FAILED]

    @property
    def exit_code(self) -> int:
        """0 when every job succeeded, 1 otherwise (a partial failure). With ``allow_unsupported``, jobs that
        failed with one of the four Unsupported kinds (TGT-9: a declared rejection) do not count."""
        failed = [e for e in self.failed
                  if not (self.allow_unsupported and (e.get("error") or {}).get("unsupported_kind"))]
        return 1 if failed else 0


# -------------------------------------------------------------------------------------------------- run

def _make_jobs(cfg: BatchConfig, paths: list[str]) -> tuple[list[dict], list[dict]]:
    """(jobs to run, their entries' base) — one job per (input, provider) for compile, per input for check."""
    hook = os.environ.get(HOOK_ENV) or None
    jobs, bases = [], []
    stems = _stems(paths)
    opts = pipeline.options_dict(pipeline.make_options(cfg.options))
    budget = pipeline.make_budget(cfg.budget).as_dict()
    for path in paths:
        try:
            text: str | None = Path(path).read_text(encoding="utf-8")
            read_error = None
        except (OSError, UnicodeDecodeError) as err:
            text, read_error = None, f"cannot read the file: {err}"
        variants = cfg.providers if cfg.kind == "compile" else [None]
        for provider in variants:
            job = {"kind": cfg.kind, "path": path, "text": text, "target": cfg.target, "provider": provider,
                   "options": opts, "rulebooks": cfg.rulebooks, "optimize": cfg.optimize, "debug_hook": hook,
                   "sizes": dict(sorted(cfg.sizes.items())) if cfg.sizes else None,
                   "calibration": list(cfg.calibration) if cfg.calibration else None,
                   "budget": budget,
                   "specialize": ({k: list(v) for k, v in cfg.specialize.items()}
                                  if cfg.specialize and cfg.kind == "compile" else None)}
            if cfg.kind == "check":
                job["seeds"] = cfg.seeds
            jobs.append(job)
            bases.append({"file": path, "stem": stems[path], "kind": cfg.kind, "provider": provider,
                          "read_error": read_error})
    return jobs, bases


def run_batch(cfg: BatchConfig, executor: Executor | None = None,
              on_entry: Callable[[dict], None] | None = None) -> BatchResult:
    """Run a batch; write artifacts and reports under ``cfg.out`` (when set); never raises for a bad input."""
    t0 = time.monotonic()
    if cfg.optimize is None:
        cfg.optimize = cfg.kind == "compile"
    cfg.target = pipeline.check_target(cfg.target)
    for p in cfg.providers:
        pipeline.check_provider(p)
    paths = cfg.inputs
    out = cfg.out
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(out)
    cache = None
    if cfg.use_cache:
        cache_root = cfg.cache_dir or (out / ".cache" if out is not None else None)
        cache = Cache(cache_root) if cache_root is not None else None
    source_fingerprint.cache_clear()    # the tool version as the sources are now (a long-lived process)
    rb_versions = pipeline.rulebook_versions(cfg.rulebooks)
    jobs, bases = _make_jobs(cfg, paths)
    entries: list[dict | None] = [None] * len(jobs)
    progress = Progress(len(jobs), enabled=cfg.progress)
    keys: list[str | None] = [None] * len(jobs)

    def finish(i: int, result: dict, cached: bool) -> None:
        entry = _entry(bases[i], result, cached, keys[i])
        if cache is not None and not cached and keys[i] is not None:
            cache.put(keys[i], jobs[i]["path"], result)
        if out is not None and cfg.kind == "compile":
            _write_artifacts(out, entry, result)
        entries[i] = entry
        progress.update(entry)
        if on_entry is not None:
            on_entry(entry)

    todo: list[int] = []
    for i, job in enumerate(jobs):
        if job["text"] is None:
            finish(i, _read_error_result(job, bases[i]["read_error"]), False)
            continue
        keys[i] = job_key(job, rb_versions)
        hit = cache.get(keys[i], job["path"]) if cache is not None else None
        if hit is not None:
            finish(i, hit, True)
        else:
            todo.append(i)
    try:
        if todo:
            ex = executor or make_executor(cfg.executor, cfg.jobs, cfg.scheduler)
            ex.map([jobs[i] for i in todo], cfg.timeout, lambda j, res: finish(todo[j], res, False))
    finally:
        progress.close()
        if out is not None:
            remove_stale_temps(out)
    done = [e for e in entries if e is not None]
    result = BatchResult(entries=done, out=out, wall_s=time.monotonic() - t0,
                         allow_unsupported=cfg.allow_unsupported)
    if out is not None and cfg.write_reports:
        write_reports(cfg, result, executor)
    return result


def _read_error_result(job: dict, why: str) -> dict:
    return {"status": "error", "phases": {}, "time_s": None, "error": {
        "kind": "ReadError", "stage": "load", "location": f"{job['path']}:1:1", "program_location": None,
        "message": why}}


def _entry(base: dict, result: dict, cached: bool, key: str | None) -> dict:
    e = {k: v for k, v in base.items() if k != "read_error"}
    e.update({
        "status": result["status"],
        "cached": cached,
        "key": key,
        "error": result.get("error"),
        "kernels": [{"name": k["name"]} for k in result.get("kernels") or []],
        "specializations": [{k: s[k] for k in ("kernel", "of", "values")}
                            for s in result.get("specializations") or []],
        "cost": result.get("cost"),
        "cost_breakdown": result.get("cost_breakdown") or {},
        "candidates": result.get("candidates") or [],
        "remarks": result.get("remarks") or [],
        "optimizer_available": bool(result.get("optimizer_available")),
        "optimizer_status": result.get("optimizer_status"),
        "egraph_size": result.get("egraph_size"),
        "rules_fired": result.get("rules_fired"),
        "groups": result.get("groups"),
        "compile_time_s": result.get("time_s"),
        "phases": _ordered_phases(result.get("phases") or {}),
    })
    if result.get("kernels") and "max_abs_err" in (result["kernels"][0] or {}):
        e["kernels"] = [dict(k) for k in result["kernels"]]
    return e


def _ordered_phases(phases: dict) -> dict:
    order = list(pipeline.STAGES) + ["interpret"]
    return {k: phases[k] for k in sorted(phases, key=lambda k: (order.index(k) if k in order else len(order), k))}


def _write_artifacts(out: Path, entry: dict, result: dict) -> None:
    """Write (or, for a failed job, remove) the job's source files and program; record paths and hashes."""
    stem, provider = entry["stem"], entry["provider"]
    d = out / stem
    wanted: set[str] = set()
    if result["status"] == "ok":
        for k, kr in zip(entry["kernels"], result.get("kernels") or []):
            name = f"{_safe(kr['name'])}.{provider}.py"
            write_atomic(d / name, kr["source"])
            wanted.add(name)
            k["artifact"] = f"{stem}/{name}"
            k["sha256"] = hashlib.sha256(kr["source"].encode("utf-8")).hexdigest()
        if result.get("program") is not None:
            name = f"{stem}.{provider}.gir"
            write_atomic(d / name, result["program"])
            wanted.add(name)
            entry["program"] = {"artifact": f"{stem}/{name}",
                                "sha256": hashlib.sha256(result["program"].encode("utf-8")).hexdigest()}
        for spec, sr in zip(entry["specializations"], result.get("specializations") or []):
            name = f"{_safe(sr['kernel'])}.{provider}.gir"     # each specialization's own program, for audit
            write_atomic(d / name, sr["program"])
            wanted.add(name)
            spec["artifact"] = f"{stem}/{name}"
            spec["sha256"] = hashlib.sha256(sr["program"].encode("utf-8")).hexdigest()
    if d.is_dir():
        for p in d.iterdir():     # what an earlier run wrote for this provider and this run did not
            if p.is_file() and p.name not in wanted and (p.name.endswith(f".{provider}.py")
                                                         or p.name.endswith(f".{provider}.gir")):
                p.unlink()
        if not any(d.iterdir()):
            d.rmdir()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name) or "kernel"


def write_reports(cfg: BatchConfig, result: BatchResult, executor: Executor | None = None) -> dict:
    out = result.out
    assert out is not None
    ex = executor or make_executor(cfg.executor, cfg.jobs, cfg.scheduler)
    optimizer_available = any(e.get("optimizer_available") for e in result.entries)
    header = {
        "tool": {"name": "intent-eqsat", "version": tool_version()},
        "config": {"kind": cfg.kind, "target": cfg.target,
                   "providers": cfg.providers if cfg.kind == "compile" else [],
                   "options": pipeline.make_options(cfg.options).key(), "rulebooks": cfg.rulebooks,
                   "rulebook_versions": pipeline.rulebook_versions(cfg.rulebooks), "optimize": cfg.optimize,
                   "sizes": cfg.sizes, "calibration": cfg.calibration,
                   "budget": pipeline.make_budget(cfg.budget).as_dict(),
                   "specialize": ({k: list(v) for k, v in cfg.specialize.items()}
                                  if cfg.specialize and cfg.kind == "compile" else None),
                   "timeout_s": cfg.timeout,
                   "executor": ex.describe(), "cache": bool(cfg.use_cache)},
        "optimizer_available": optimizer_available,
        "wall_s": round(result.wall_s, 3),
    }
    rep.write_json(out / "report.json", header, result.entries)
    plots = rep.write_plots(out, result.entries) if cfg.plots else {}
    rep.write_markdown(out / "report.md", header, result.entries, plots)
    return plots


__all__ = ["BatchConfig", "BatchResult", "collect_inputs", "run_batch", "write_reports", "Progress", "HOOK_ENV"]
