"""A :class:`~intent_eqsat.api.CompiledKernel` as plain data, and the API's on-disk compile cache (issue 24 item 3).

**Plain form.** :func:`plain` turns a compiled kernel into JSON-able data: the KIR text, the printed GPU IR of the
serialized program (and of the constructed one and of every KIR specialization), the generated sources, the
predicted cost and its terms, the candidates' costs and parameters, the remarks as text, the report, and the
optimizer's own explanation as text. :func:`restore_fields` gives the kernel's fields back from it (the programs
parsed back from their GIR text; ``intent_eqsat.api.restore_kernel`` makes the kernel). Pickling a ``CompiledKernel`` goes through this form, so a pickle holds no e-graph, no imported
module and nothing tied to the process; the same form is what the cache stores.

**The cache.** ``compile()`` looks up and stores kernels by the batch's cache key (:func:`intent_eqsat.batch.cache.job_key`:
the KIR text's digest, target, provider, options, whether the optimizer runs, rulebooks and their versions, sizes,
tuning files' digests, the search budget, KIR specializations, and the tool version with a fingerprint of the
package's sources), so an edit of the compiler or of a rulebook misses. Entries live in the batch's folder layout,
``<dir>/<key[:2]>/<key>.kernel.json``, written atomically. On a miss the batch's own entry of the same key
(``<key>.json``, written by ``intent-eqsat batch --cache-dir <dir>``) is used when present: a batch over a corpus
fills the cache that Python callers then read (it lacks the constructed program and the optimizer's explanation).
Only successes are stored; a compile that raises is never cached.

The folder is ``cache=`` of ``compile()`` when a path, else ``$INTENT_EQSAT_CACHE_DIR``, else
``$XDG_CACHE_HOME/intent-eqsat`` (``~/.cache/intent-eqsat``). ``cache=False`` or ``$INTENT_EQSAT_CACHE=off``
turns it off. A compile whose inputs cannot be keyed (rulebooks or a calibration given as Python objects rather
than paths) is not cached.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from intent_eqsat import ir, kir, pipeline
from intent_eqsat.providers.launch_resources import LaunchResources

if TYPE_CHECKING:
    from intent_eqsat.api import CompiledKernel

#: /2: the launch resources are a field beside the program (issue 22 item 3), no longer in its text
FORMAT = "intent-eqsat.compiled-kernel/2"
CACHE_ENV = "INTENT_EQSAT_CACHE"
CACHE_DIR_ENV = "INTENT_EQSAT_CACHE_DIR"
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class PlainCost:
    """A predicted cost as plain data: the total and the named terms (``pipeline.cost_total`` /
    ``cost_breakdown`` read them as they read the cost model's own result)."""

    total: float
    breakdown: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    """A runner-up as plain data: its predicted cost and bound parameters."""

    cost: PlainCost | None
    params: dict | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class PlainRemark:
    """A remark restored from text (``str()`` gives the text, as for the optimizer's remark objects)."""

    text: str

    def __str__(self) -> str:
        return self.text


# --------------------------------------------------------------------------------------------- plain form

def _cost_dict(cost: Any, breakdown: Any = None) -> dict | None:
    total = pipeline.cost_total(cost)
    if total is None:
        return None
    return {"total": total, "breakdown": pipeline.cost_breakdown(cost) or dict(breakdown or {})}


def _cost_of(data: Any) -> PlainCost | None:
    """A :class:`PlainCost` from :func:`_cost_dict` data, or from a bare total (a batch result's candidates)."""
    if data is None:
        return None
    if isinstance(data, Mapping):
        return PlainCost(float(data["total"]), dict(data.get("breakdown") or {}))
    return PlainCost(float(data))


def plain(ck: "CompiledKernel") -> dict:
    """The JSON-able form of ``ck`` (see the module docstring)."""
    explain = ck.optimizer_explain
    own = getattr(ck._optimizer_result, "explain", None)
    if explain is None and callable(own):
        explain = str(own())
    cost = _cost_dict(ck.cost)
    return {
        "format": FORMAT,
        "status": "ok",
        "kir": ck.kir_text,
        "filename": ck.kir.filename if ck.kir is not None else None,
        "kernel_name": ck.kernel_name,
        "provider": ck.provider,
        "target": ck.target,
        "options": pipeline.options_dict(ck.options),
        "kernels": [{"name": name, "source": src} for name, src in ck.sources.items()],
        "program": ir.print_module(ck.program),
        "constructed": ir.print_module(ck.constructed) if ck.constructed is not None else None,
        "launch_resources": {name: r.as_dict() for name, r in ck.launch_resources.items()},
        "specializations": [{"of": of, "kernel": s.kernel, "values": dict(s.values), "params": s.params,
                             "launch_resources": (s.launch_resources.as_dict()
                                                  if s.launch_resources is not None else None),
                             "program": ir.print_module(s.module)}
                            for of, specs in ck.specializations.items() for s in specs],
        "cost": cost["total"] if cost else None,
        "cost_breakdown": cost["breakdown"] if cost else {},
        "candidates": [{"cost": _cost_dict(getattr(c, "cost", c), getattr(c, "breakdown", None)),
                        "params": pipeline.to_plain(getattr(c, "params", None)),
                        "kernel": getattr(c, "kernel", None)} for c in ck.candidates],
        "remarks": [str(r) for r in ck.remarks],
        "report": pipeline.to_plain(ck.report) or {},
        "optimizer_status": ck.optimizer_status,
        "explain": explain,
    }


def restore_fields(data: Mapping[str, Any], *, kir_text: str | None = None, filename: str | None = None,
                   kernel: str | None = None, provider: str | None = None, target: str | None = None,
                   options: Any = None) -> dict[str, Any]:
    """The fields of a :class:`~intent_eqsat.api.CompiledKernel` (its constructor's keywords) from :func:`plain`
    data or from a batch result of the same key (whose missing fields the keyword arguments give).
    ``intent_eqsat.api.restore_kernel`` makes the kernel; this module does not import the API (no cycle)."""
    text = data.get("kir") or kir_text
    name = data.get("filename") or filename
    module = kir.parse(text, filename=name) if text is not None else None
    specs: dict[str, list] = {}
    for s in data.get("specializations") or ():
        specs.setdefault(s["of"], []).append(ir.Specialization(
            values=tuple((k, int(v)) for k, v in s["values"].items()), module=ir.parse_module(s["program"]),
            kernel=s["kernel"], params=s.get("params"),
            launch_resources=LaunchResources.from_dict(s.get("launch_resources"))))
    cost = data.get("cost")
    candidates = []
    for c in data.get("candidates") or ():
        if isinstance(c, Mapping):
            candidates.append(Candidate(cost=_cost_of(c.get("cost")), params=c.get("params"),
                                        kernel=c.get("kernel")))
        else:                                        # a batch result keeps the total only
            candidates.append(Candidate(cost=_cost_of(c)))
    sources = {k["name"]: k["source"] for k in data["kernels"]}
    return dict(
        program=ir.parse_module(data["program"]), sources=sources,
        kernel_name=data.get("kernel_name") or kernel or next(iter(sources)),
        provider=data.get("provider") or provider, target=data.get("target") or target,
        options=pipeline.make_options(data.get("options") if data.get("options") is not None else options),
        cost=PlainCost(float(cost), dict(data.get("cost_breakdown") or {})) if cost is not None else None,
        candidates=candidates, remarks=[PlainRemark(r) for r in data.get("remarks") or ()],
        report=dict(data.get("report") or {}), kir=module, kir_text=text,
        constructed=ir.parse_module(data["constructed"]) if data.get("constructed") else None,
        optimizer_status=data.get("optimizer_status") or "ran",
        specializations=specs, optimizer_explain=data.get("explain"),
        launch_resources={n: LaunchResources.from_dict(r) for n, r in (data.get("launch_resources") or {}).items()})


# ----------------------------------------------------------------------------------------------- the cache

def cache_dir(cache: Any) -> Path | None:
    """The cache folder for ``compile(cache=...)``: None when caching is off."""
    if cache is False:
        return None
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache)
    if cache not in (None, True):
        raise pipeline.UsageError(f"cache must be True, False or a folder, got {cache!r}")
    if cache is None and os.environ.get(CACHE_ENV, "").strip().lower() in _OFF:
        return None
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "intent-eqsat"


def _keyable(value: Any) -> bool:
    if value is None or isinstance(value, (str, os.PathLike)):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(v, (str, os.PathLike)) for v in value)


def key_of(text: str, *, target: str, provider: str, options: Any, rulebooks: Any, optimize: bool,
           sizes: Any, calibration: Any, specialize: Any, budget: Any, kernel: str | None = None) -> str | None:
    """The batch cache key of this compile, or None when an input cannot be keyed. ``kernel``: the compile of that
    kernel alone (``compile(kernel=...)`` of a file of several); None, every kernel of the file (the batch's key,
    unchanged)."""
    from intent_eqsat.batch.cache import job_key

    if not (_keyable(rulebooks) and _keyable(calibration)):
        return None
    if budget is not None and not isinstance(budget, (str, Mapping)) and not hasattr(budget, "key"):
        return None
    as_paths = (lambda v: [str(p) for p in ([v] if isinstance(v, (str, os.PathLike)) else v)] if v else None)
    job = {"kind": "compile", "text": text, "target": target, "provider": provider,
           "options": pipeline.options_dict(pipeline.make_options(options)), "optimize": optimize,
           "rulebooks": as_paths(rulebooks), "sizes": dict(sizes) if sizes else None,
           "calibration": as_paths(calibration), "budget": budget,
           "specialize": pipeline.make_specialize(specialize) or None}
    if kernel is not None:
        job["kernel"] = kernel
    versions = pipeline.rulebook_versions(job["rulebooks"]) if optimize else None
    return job_key(job, versions)


def lookup(root: Path, key: str) -> dict | None:
    """The stored kernel of ``key`` (this API's entry, else the batch's), or None."""
    for name in (f"{key}.kernel.json", f"{key}.json"):
        try:
            entry = json.loads((root / key[:2] / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result = entry.get("result") if isinstance(entry, dict) else None
        if entry.get("key") == key and isinstance(result, dict) and result.get("status") == "ok" and \
                result.get("program") and result.get("kernels"):
            return result
    return None


def store(root: Path, key: str, data: dict) -> None:
    """Write the entry atomically; a folder that refuses it costs a recompile next time, nothing else."""
    from intent_eqsat.atomic import write_atomic

    try:
        write_atomic(root / key[:2] / f"{key}.kernel.json",
                     json.dumps({"key": key, "format": FORMAT, "result": data}, indent=1) + "\n")
    except OSError:
        pass


__all__ = ["plain", "restore_fields", "cache_dir", "key_of", "lookup", "store", "Candidate", "PlainCost", "PlainRemark", "FORMAT",
           "CACHE_ENV", "CACHE_DIR_ENV"]
