"""The batch runner: inputs -> jobs -> cache / executor -> artifacts and reports in the output directory.

Output directory layout (``--out DIR``)::

    DIR/<stem>/<kernel>.<provider>.py     generated source, one per kernel (compile)
    DIR/<stem>/<stem>.<provider>.gir      the GPU IR program that was serialized (compile)
    DIR/report.json, DIR/report.md       every job: status, error kind + file:line:col, cost, times, cached
    DIR/plots/*.png                      predicted cost, compile time, e-graph size vs compile time
    DIR/.cache/                          the content-addressed cache (``--cache-dir`` moves it)
    DIR/.batch-manifest.jsonl            the files the batch wrote (:mod:`intent_eqsat.batch.outputs`)

``<stem>`` is the input's file stem and ``<kernel>`` the kernel's name, each made a safe, bounded, unique name
(:func:`~intent_eqsat.batch.outputs.unique_names`: ``-<hash>`` appended when two inputs share a stem, or when a name
is ``..``, too long, not portable or one of the batch's own). No artifact is written whose folder resolves outside
DIR. Every file is written atomically; stale temporaries of a killed earlier run are removed first; artifacts of a
job that now fails are removed (only files the manifest records the batch writing), so the directory never shows a
result the report does not. The driver never dies on an input: an input it cannot read or an artifact it cannot
write is that job's located error.
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
from intent_eqsat.batch import outputs
from intent_eqsat.batch import report as rep
from intent_eqsat.atomic import remove_stale_temps, write_atomic
from intent_eqsat.batch.cache import Cache, job_key, source_fingerprint, tool_version
from intent_eqsat.batch.executors import Executor, make_executor
from intent_eqsat.batch.outputs import Manifest, OutputError
from intent_eqsat.batch.pool import kernel_location

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


def _stems(paths: Sequence[str], reserved: Sequence[str] = outputs.RESERVED) -> dict[str, str]:
    """Each input's artifact folder name: its stem, made safe and unique (``-<hash of the path>`` on a clash)."""
    return dict(zip(paths, outputs.unique_names([(Path(p).stem, p) for p in paths], reserved)))


def read_input(path: str, shown: str) -> tuple[str | None, dict | None]:
    """The input's text, read by the reader ``compile`` uses (:func:`~intent_eqsat.pipeline.read_source`), or the
    error ``compile`` gives for it as report data: a ``UsageError`` at stage ``load``, located at the first byte
    that is not UTF-8 (else at 1:1)."""
    try:
        return pipeline.read_source(path, shown), None
    except pipeline.UsageError as err:
        err.stage = "load"  # type: ignore[attr-defined]
        return None, pipeline.describe_error(err, None, shown)


# ----------------------------------------------------------------------------------------------- progress

class Progress:
    """Batch progress on stderr: a tqdm bar with its ETA on a terminal (the jobs done so far give the rate), one
    line per finished job otherwise (piped output, CI logs)."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = self.failed = self.cached = 0
        self.bar: Any = None
        if self.enabled and self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=self.stream, unit="job", dynamic_ncols=True, desc="batch")

    def update(self, entry: dict) -> None:
        self.done += 1
        self.failed += entry["status"] in rep.FAILED
        self.cached += bool(entry.get("cached"))
        if not self.enabled:
            return
        what = f"{entry['file']} ({entry.get('provider') or entry.get('kind')}) {entry['status']}"
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.failed} failed, {self.cached} cached; {what}", refresh=False)
            self.bar.update(1)
        else:
            self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {what}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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

def _make_jobs(cfg: BatchConfig, paths: list[str], reserved: Sequence[str] = outputs.RESERVED) \
        -> tuple[list[dict], list[dict]]:
    """(jobs to run, their entries' base) — one job per (input, provider) for compile, per input for check. A job's
    path is the input's display path (:func:`~intent_eqsat.batch.outputs.display_path`); the runner reads it."""
    hook = os.environ.get(HOOK_ENV) or None
    jobs, bases = [], []
    stems = _stems(paths, reserved)
    opts = pipeline.options_dict(pipeline.make_options(cfg.options))
    budget = pipeline.make_budget(cfg.budget).as_dict()
    for path in paths:
        shown = outputs.display_path(path)
        text, read_error = read_input(path, shown)
        variants = cfg.providers if cfg.kind == "compile" else [None]
        for provider in variants:
            job = {"kind": cfg.kind, "path": shown, "text": text, "target": cfg.target, "provider": provider,
                   "options": opts, "rulebooks": cfg.rulebooks, "optimize": cfg.optimize, "debug_hook": hook,
                   "sizes": dict(sorted(cfg.sizes.items())) if cfg.sizes else None,
                   "calibration": list(cfg.calibration) if cfg.calibration else None,
                   "budget": budget,
                   "specialize": ({k: list(v) for k, v in cfg.specialize.items()}
                                  if cfg.specialize and cfg.kind == "compile" else None)}
            if cfg.kind == "check":
                job["seeds"] = cfg.seeds
            jobs.append(job)
            bases.append({"file": shown, "stem": stems[path], "kind": cfg.kind, "provider": provider,
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
    manifest = None
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(out)
            manifest = Manifest(out) if cfg.kind == "compile" else None
        except OSError as err:
            raise pipeline.UsageError(f"cannot use the output folder {out}: {err}") from None
    cache = None
    if cfg.use_cache:
        cache_root = cfg.cache_dir or (out / ".cache" if out is not None else None)
        cache = Cache(cache_root) if cache_root is not None else None
    source_fingerprint.cache_clear()    # the tool version as the sources are now (a long-lived process)
    rb_versions = pipeline.rulebook_versions(cfg.rulebooks)
    jobs, bases = _make_jobs(cfg, paths, _reserved(out, cfg.cache_dir))
    entries: list[dict | None] = [None] * len(jobs)
    progress = Progress(len(jobs), enabled=cfg.progress)
    keys: list[str | None] = [None] * len(jobs)

    def finish(i: int, result: dict, cached: bool) -> None:
        entry = _entry(bases[i], result, cached, keys[i])
        if cache is not None and not cached and keys[i] is not None:
            try:
                cache.put(keys[i], jobs[i]["path"], result)
            except OSError:     # the cache saves time only: a folder that refuses it costs a recompile next time
                pass
        if manifest is not None:
            assert out is not None
            try:
                _write_artifacts(out, entry, result, manifest)
            except (OSError, OutputError) as err:   # this job's error, never the batch's
                result = _output_error_result(jobs[i], err, result)
                entry = _entry(bases[i], result, cached, keys[i])
                try:
                    _write_artifacts(out, entry, result, manifest)    # nothing to write: removes its old files
                except (OSError, OutputError):
                    pass
        entries[i] = entry
        progress.update(entry)
        if on_entry is not None:
            on_entry(entry)

    todo: list[int] = []
    for i, job in enumerate(jobs):
        if job["text"] is None:
            finish(i, _read_error_result(bases[i]["read_error"]), False)
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
        if manifest is not None:
            manifest.close()
    done = [e for e in entries if e is not None]
    result = BatchResult(entries=done, out=out, wall_s=time.monotonic() - t0,
                         allow_unsupported=cfg.allow_unsupported)
    if out is not None and cfg.write_reports:
        write_reports(cfg, result, executor)
    return result


def _reserved(out: Path | None, cache_dir: Path | None) -> list[str]:
    """The batch's own names in the output folder: the reports, plots, cache, manifest, and the first folder of
    ``--cache-dir`` when it lies inside the output folder."""
    names = list(outputs.RESERVED)
    if out is not None and cache_dir is not None:
        try:
            rel = Path(os.path.realpath(cache_dir)).relative_to(os.path.realpath(out))
        except ValueError:
            rel = None
        if rel is not None and rel.parts:
            names.append(rel.parts[0])
    return names


def _read_error_result(error: dict) -> dict:
    return {"status": "error", "phases": {}, "time_s": None, "error": error}


def _output_error_result(job: dict, err: BaseException, result: dict) -> dict:
    """A job whose artifacts could not be written: an ``OutputError`` (stage ``write``) at its kernel."""
    message = err.message if isinstance(err, OutputError) else f"cannot write an artifact: {err}"
    return {"status": "error", "phases": result.get("phases") or {}, "time_s": result.get("time_s"), "error": {
        "kind": "OutputError", "stage": "write", "location": kernel_location(job), "program_location": None,
        "message": message}}


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


def _write_artifacts(out: Path, entry: dict, result: dict, manifest: Manifest) -> None:
    """Write (or, for a failed job, remove) the job's source files and program; record paths and hashes.

    Every file is recorded in the manifest before it is written and checked to stay inside ``out``; what an
    earlier run recorded for this folder and provider and this run does not write is removed. Raises
    :class:`OutputError` (the job's files removed) when a file cannot be written."""
    stem, provider = entry["stem"], entry["provider"]
    d = out / stem
    planned: list[tuple[str, str, dict]] = []       # (file name, content, the record that names it)
    if result["status"] == "ok":
        kernels = list(zip(entry["kernels"], result.get("kernels") or []))
        names = outputs.unique_names([(kr["name"], kr["name"]) for _, kr in kernels], fallback="kernel")
        planned += [(f"{n}.{provider}.py", kr["source"], k) for n, (k, kr) in zip(names, kernels)]
        programs: list[tuple[str, str, dict]] = []
        if result.get("program") is not None:
            entry["program"] = {}
            programs.append((stem, result["program"], entry["program"]))
        # each specialization's own program, for audit
        programs += [(sr["kernel"], sr["program"], spec)
                     for spec, sr in zip(entry["specializations"], result.get("specializations") or [])]
        names = outputs.unique_names([(raw, raw) for raw, _, _ in programs], fallback="kernel")
        planned += [(f"{n}.{provider}.gir", text, rec) for n, (_, text, rec) in zip(names, programs)]
    wanted = {name for name, _, _ in planned}
    old = set(manifest.owned(stem, provider))
    manifest.record(stem, provider, old | wanted)
    try:
        for name, text, _ in planned:
            manifest.check_inside(d / name)
            try:
                write_atomic(d / name, text)
            except OSError as err:
                raise OutputError(f"cannot write {d / name}: {err.strerror or err}") from err
    except BaseException:
        entry.pop("program", None)
        manifest.record(stem, provider, manifest.remove(stem, old | wanted))
        raise
    manifest.record(stem, provider, wanted | set(manifest.remove(stem, old - wanted)))
    for name, text, rec in planned:
        rec["artifact"] = f"{stem}/{name}"
        rec["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_reports(cfg: BatchConfig, result: BatchResult, executor: Executor | None = None) -> dict:
    out = result.out
    assert out is not None
    ex = executor or make_executor(cfg.executor, cfg.jobs, cfg.scheduler)
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
        "wall_s": round(result.wall_s, 3),
    }
    try:
        rep.write_json(out / "report.json", header, result.entries)
    except OSError as err:
        raise pipeline.UsageError(f"cannot write {out / 'report.json'}: {err}") from None
    plots = _plots(out, result.entries) if cfg.plots else {}
    try:
        rep.write_markdown(out / "report.md", header, result.entries, plots)
    except OSError as err:
        raise pipeline.UsageError(f"cannot write {out / 'report.md'}: {err}") from None
    return plots


def _plots(out: Path, entries: list[dict]) -> dict:
    """The plots, or why none were drawn: a plot never stops the reports (nor writes outside ``out``)."""
    names = ("cost", "compile_time", "egraph_vs_time")
    why = None
    if not outputs.inside(out, out / "plots" / "compile_time.png"):
        why = f"{out / 'plots'} resolves outside the output folder"
    else:
        try:
            return rep.write_plots(out, entries)
        except Exception as err:  # matplotlib on odd labels, a full disk: say so in report.md
            why = f"plotting failed: {type(err).__name__}: {err}"
    return {**{n: None for n in names}, **{f"{n}_why": why for n in names}}


__all__ = ["BatchConfig", "BatchResult", "collect_inputs", "run_batch", "write_reports", "Progress", "HOOK_ENV"]
