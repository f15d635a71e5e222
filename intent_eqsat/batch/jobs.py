"""One unit of batch work, as plain data in and plain data out (so it crosses process and machine boundaries).

A job is a dict::

    {"kind": "compile" | "check", "path": "<display path>", "text": "<file content>",
     "target": "sm90", "provider": "triton", "options": {...}, "rulebooks": None,
     "optimize": True,                  # compile: run the optimizer (check: interpret the optimized program)
     "specialize": None | {"D": [64]},  # compile: KIR specializations of the kernels that have the symbols
     "seeds": 2,                        # check: random input sets per kernel
     "debug_hook": None | "/path/to/file.py:function"}

:func:`run_job` never raises for a bad input: every failure of the pipeline becomes ``{"status": "error",
"error": {"kind", "stage", "location", "program_location", "message"}}`` with ``location`` = ``file:line:col``.
(Timeouts and crashes are the pool's business: it kills the worker and writes the result itself.)

``debug_hook`` is fault injection for tests (a slow or crashing kernel): the worker imports the named function
from the file and calls it with the job before running it. The runner sets it from ``$INTENT_EQSAT_WORKER_HOOK``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import time
import traceback
from typing import Any, Callable

from intent_eqsat import kir, pipeline

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_TIMEOUT = "timeout"
STATUS_CRASH = "crash"


def run_job(job: dict, on_stage: Callable[[str], None] | None = None) -> dict:
    """Run one job; return its plain-data result (``status``, ``error``, ``phases`` and kind-specific fields).

    ``on_stage(name)`` is called as each pipeline stage starts (the worker forwards it, so a timeout can say
    which stage was running)."""
    hook = job.get("debug_hook")
    if hook:
        _call_hook(hook, job)
    t0 = time.perf_counter()
    if job["kind"] == "compile":
        out = compile_job(job, on_stage)
    elif job["kind"] == "check":
        out = check_job(job, on_stage)
    else:
        raise ValueError(f"unknown job kind {job['kind']!r}")
    out["time_s"] = time.perf_counter() - t0
    return out


def _call_hook(spec: str, job: dict) -> None:
    path, _, name = spec.rpartition(":")
    key = "intent_eqsat_worker_hook_" + hashlib.sha256(path.encode()).hexdigest()[:12]
    mod_spec = importlib.util.spec_from_file_location(key, path)
    if mod_spec is None or mod_spec.loader is None:
        raise ImportError(f"cannot load worker hook {spec}")
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    getattr(mod, name)(job)


def _error_result(err: BaseException, module: Any, path: str, phases: dict) -> dict:
    error = pipeline.describe_error(err, module, path)
    if error["kind"] == "InternalError":
        error["traceback"] = "".join(traceback.format_exception(err))[-4000:]
    return {"status": STATUS_ERROR, "error": error, "phases": phases}


# --------------------------------------------------------------------------------------------------- compile

def compile_job(job: dict, on_stage: Callable[[str], None] | None = None) -> dict:
    """load -> verify -> construct -> optimize -> verify -> serialize(provider), in this process."""
    path = job["path"]
    phases: dict[str, float] = {}
    try:
        res = _run_pipeline(job, phases, on_stage)
    except Exception as err:  # every failure is a located report, never a crash of the batch
        return _error_result(err, None, path, phases)
    opt = res.optimized
    report = pipeline.to_plain(opt.report) or {}
    return {
        "status": STATUS_OK,
        "error": None,
        "phases": phases,
        "kernels": [{"name": name, "source": src} for name, src in res.sources.items()],
        "program": _print_program(res.program),
        # the launch resources the sources were printed with: beside the program, not in its text (issue 22)
        "launch_resources": {name: r.as_dict() for name, r in opt.launch_resources.items()},
        "specializations": [{"of": of, "kernel": s.kernel, "values": dict(s.values),
                             "launch_resources": (s.launch_resources.as_dict()
                                                  if s.launch_resources is not None else None),
                             "program": _print_program(s.module)}
                            for of, specs in res.specializations.items() for s in specs],
        "cost": pipeline.cost_total(opt.cost),
        "cost_breakdown": pipeline.cost_breakdown(opt.cost),
        "candidates": [pipeline.cost_total(getattr(c, "cost", c)) for c in opt.candidates],
        "remarks": [str(r) for r in opt.remarks],
        "optimizer_status": opt.status,
        "egraph_size": pipeline.egraph_size(report),
        "rules_fired": pipeline.to_plain(pipeline.report_value(report, "rules_fired", "rule_counts")),
        "groups": pipeline.to_plain(pipeline.report_value(report, "groups", "groups_run")),
        "report": report,
    }


def _run_pipeline(job: dict, phases: dict, on_stage: Callable[[str], None] | None) -> pipeline.PipelineResult:
    """The pipeline on the job's text; errors come back annotated with stage and KIR location."""
    if on_stage is not None:
        on_stage("load")
    t = time.perf_counter()
    try:
        module = kir.parse(job["text"], filename=job["path"])     # always text: the runner read the file
    except Exception as err:
        pipeline.annotate(err, "load", None, job["path"])
        raise
    load_s = time.perf_counter() - t
    res = pipeline.run(module, target=job["target"], provider=job["provider"], options=job.get("options"),
                       rulebooks=job.get("rulebooks"), filename=job["path"],
                       optimize_program=job.get("optimize", True), sizes=job.get("sizes"),
                       calibration=job.get("calibration"), on_stage=on_stage,
                       specialize=job.get("specialize"), specialize_unmatched_ok=True, budget=job.get("budget"))
    phases.update(res.timings)
    phases["load"] = load_s
    return res


def _print_program(program: Any) -> str | None:
    from intent_eqsat import ir

    return ir.print_module(program)


# ----------------------------------------------------------------------------------------------------- check

def check_job(job: dict, on_stage: Callable[[str], None] | None = None) -> dict:
    """The main job of the current pipeline: parse, verify, construct, verify, and run the GPU IR interpreter
    against the KIR reference on small random inputs (``seeds`` shapes per kernel). ``.gir`` input: parse and
    verify the GPU IR program."""
    path = job["path"]
    phases: dict[str, float] = {}
    if path.endswith(".gir"):
        return _check_gir(job, phases)
    module = None
    try:
        t = time.perf_counter()
        try:
            module = kir.parse(job["text"], filename=path)
        except Exception as err:
            pipeline.annotate(err, "load", None, path)
            raise
        phases["load"] = time.perf_counter() - t
        res = pipeline.run(module, target=job.get("target", "sm90"), provider=None, options=job.get("options"),
                           rulebooks=job.get("rulebooks"), filename=path, stop_after="verify_gir",
                           optimize_program=bool(job.get("optimize")), on_stage=on_stage)
        phases.update({k: v for k, v in res.timings.items() if k != "load"})
        program = res.program
        if on_stage is not None:
            on_stage("interpret")
        t = time.perf_counter()
        kernels = []
        for k in module.kernels:
            kernels.append(_compare(module, program, k.name, int(job.get("seeds", 2))))
        phases["interpret"] = time.perf_counter() - t
    except Exception as err:
        return _error_result(err, module, path, phases)
    return {"status": STATUS_OK, "error": None, "phases": phases, "kernels": kernels,
            "remarks": [str(r) for r in res.optimized.remarks] if job.get("optimize") else []}


class Mismatch(pipeline.IntentError):
    """The GPU IR interpreter's result differs from the KIR reference evaluator's."""


def _compare(module: Any, program: Any, kernel: str, seeds: int) -> dict:
    import numpy as np

    from intent_eqsat import ir, kir
    from intent_eqsat.kir.inputs import random_inputs, tolerance

    k = module.kernel(kernel)
    worst = 0.0
    for seed in range(seeds):
        inputs = random_inputs(module, kernel, seed, lo=1, hi=7)
        ref = kir.evaluate(module, kernel, _copy(inputs))
        got = ir.interpret(program, kernel, _copy(inputs))
        for name, r in ref.items():
            rtol, atol = tolerance(k.param(name).dtype)
            g = np.asarray(got.get(name), np.float64)
            r = np.asarray(r, np.float64)
            loc = _writer_loc(k, name)
            if g.shape != r.shape:
                raise Mismatch(f"{kernel}.{name} (seed {seed}): shape {g.shape} != reference {r.shape}", loc)
            ok = np.isclose(g, r, rtol=rtol, atol=atol, equal_nan=True) if rtol else \
                ((g == r) | (np.isnan(g) & np.isnan(r)))
            if not bool(np.all(ok)):
                bad = int(np.argmin(ok.reshape(-1)))
                raise Mismatch(f"{kernel}.{name} (seed {seed}): {int((~ok).sum())} of {ok.size} elements differ "
                               f"from the reference, first at flat index {bad}: {g.reshape(-1)[bad]!r} vs "
                               f"{r.reshape(-1)[bad]!r} (rtol {rtol}, atol {atol})", loc)
            finite = np.isfinite(g) & np.isfinite(r)
            if finite.any():
                worst = max(worst, float(np.max(np.abs(g[finite] - r[finite]))))
    return {"name": kernel, "seeds": seeds, "max_abs_err": worst}


def _writer_loc(kernel: Any, view: str) -> Any:
    from intent_eqsat.kir import model as m

    for s in kernel.body:
        if isinstance(s, m.Assign) and s.target == view and s.loc is not None:
            return s.loc
    return kernel.loc


def _copy(inputs: dict) -> dict:
    return {k: (v.copy() if hasattr(v, "copy") and not isinstance(v, (int, float)) else v)
            for k, v in inputs.items()}


def _check_gir(job: dict, phases: dict) -> dict:
    from intent_eqsat import ir

    path = job["path"]
    try:
        t = time.perf_counter()
        try:
            program = ir.parse_module(job["text"], filename=path)
        except Exception as err:
            pipeline.annotate(err, "load", None, path)
            raise
        phases["load"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            ir.verify(program)
        except Exception as err:
            pipeline.annotate(err, "verify_gir", None, path)
            raise
        phases["verify_gir"] = time.perf_counter() - t
    except Exception as err:
        return _error_result(err, None, path, phases)
    return {"status": STATUS_OK, "error": None, "phases": phases,
            "kernels": [{"name": k.name} for k in program.kernels], "remarks": []}


__all__ = ["run_job", "compile_job", "check_job", "Mismatch", "STATUS_OK", "STATUS_ERROR", "STATUS_TIMEOUT",
           "STATUS_CRASH"]
