"""A content-addressed cache of batch results.

The key of a job is the sha256 of a canonical JSON object holding everything its output depends on:

* the sha256 of the KIR text (the bytes of the file, not its path),
* the compile options (``CompileOptions.key()``), the target, the provider, and whether the optimizer runs,
* when the optimizer runs: the ``rulebooks`` argument and the rulebook versions
  (``intent_eqsat.rules.rulebook_versions()``, else ``"none"``), the problem sizes, the tuning files' digests and
  the search budget (``Limits.key()``: deterministic units, the wall-clock safety net left out),
* the tool version: the package version plus a fingerprint of the package's own source (every ``.py`` under
  ``intent_eqsat/`` and ``rulebooks/``), so that editing the compiler invalidates results even while the version
  number stays put (``$INTENT_EQSAT_TOOL_VERSION`` overrides it).

An entry is one JSON file ``<dir>/<key[:2]>/<key>.json`` written atomically. Results that are functions of the
key alone are stored: successes and located errors (a parse error is as deterministic as a success). Timeouts,
crashes, internal errors and search timeouts (the wall-clock safety net, :class:`~intent_eqsat.errors.SearchTimeout`)
are not (they may be transient). Because the key holds the text and not the path,
stored errors have their file name replaced by a placeholder that is substituted back on lookup.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from intent_eqsat.atomic import write_atomic

SCHEMA = 1
TOOL_VERSION_ENV = "INTENT_EQSAT_TOOL_VERSION"
_FILE_TOKEN = "\u0000KIR-FILE\u0000"
_CACHEABLE = ("ok", "error")
#: error kinds that are not functions of the key: a bug, or the search's wall-clock safety net (the machine's load)
_TRANSIENT_KINDS = ("InternalError", "SearchTimeout")


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """sha256 over the relative paths and bytes of the package's Python sources (and the rulebooks')."""
    pkg = Path(__file__).resolve().parents[1]            # the intent_eqsat package
    roots = [pkg]
    try:
        import rulebooks

        if getattr(rulebooks, "__file__", None):
            roots.append(Path(rulebooks.__file__).resolve().parent)
    except ImportError:
        pass
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            h.update(f"{root.name}/{p.relative_to(root).as_posix()}\n".encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def tool_version() -> str:
    """``<version>+src.<fingerprint>``, or ``$INTENT_EQSAT_TOOL_VERSION`` when set (a release build that wants
    caches shared across checkouts, or tests in a tree that others are editing)."""
    pinned = os.environ.get(TOOL_VERSION_ENV)
    if pinned:
        return pinned
    from intent_eqsat.version import __version__

    return f"{__version__}+src.{source_fingerprint()[:16]}"


def _size_buckets_enabled() -> bool:
    from intent_eqsat.optimizer.size_buckets import enabled
    return enabled()


def job_key(job: dict, rulebook_versions: Any) -> str:
    """The cache key of a job (see the module docstring); the path is deliberately not part of it."""
    from intent_eqsat import pipeline

    optimize = bool(job.get("optimize", job["kind"] == "compile"))
    ident = {
        "schema": SCHEMA,
        "kind": job["kind"],
        "kir_sha256": hashlib.sha256(job["text"].encode("utf-8")).hexdigest(),
        "options": pipeline.make_options(job.get("options")).key(),
        "target": job.get("target"),
        "provider": job.get("provider"),
        "optimize": optimize,
        # the rules matter only when the optimizer runs
        "rulebooks": job.get("rulebooks") if optimize else None,
        "rulebook_versions": rulebook_versions if optimize else "unused",
        # the problem sizes the cost model picked tiles for (only the optimizer reads them)
        "sizes": dict(sorted(job["sizes"].items())) if optimize and job.get("sizes") else None,
        # measured tile bindings re-rank the optimizer's pick: the tuning files' contents are part of the key
        "calibration": _file_digests(job.get("calibration")) if optimize and job.get("calibration") else None,
        # the search budget bounds the e-graph search (deterministic units; the safety net is not part of it)
        "budget": pipeline.make_budget(job.get("budget")).key() if optimize else None,
        # KIR specializations change the printed module (more kernels, a dispatching launcher)
        "specialize": {k: list(v) for k, v in sorted(job["specialize"].items())} if job.get("specialize") else None,
        # size bucket variants change the printed module ($INTENT_EQSAT_SIZE_BUCKETS)
        "size_buckets": _size_buckets_enabled() if optimize else None,
        "tool": tool_version(),
    }
    if job["kind"] == "check":
        ident["seeds"] = job.get("seeds")
        ident["gir"] = job["path"].endswith(".gir")
    return hashlib.sha256(json.dumps(ident, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _file_digests(paths: list) -> list[str]:
    """sha256 of each file's bytes (an unreadable file keys as its path and error: the job then fails itself)."""
    out = []
    for p in paths:
        try:
            out.append(hashlib.sha256(Path(p).read_bytes()).hexdigest())
        except OSError as err:
            out.append(f"{p}: {err}")
    return out


def _swap(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, str):
        return obj.replace(old, new) if old else obj
    if isinstance(obj, dict):
        return {k: _swap(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_swap(v, old, new) for v in obj]
    return obj


class Cache:
    """Results by key under ``root``; :meth:`get` returns None on a miss or an unreadable entry."""

    def __init__(self, root: "str | os.PathLike[str]"):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, path: str) -> dict | None:
        p = self._path(key)
        try:
            entry = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "result" not in entry:
            return None
        result = entry["result"]
        if result.get("error"):
            result["error"] = _swap(result["error"], _FILE_TOKEN, path)
        return result

    def put(self, key: str, path: str, result: dict) -> bool:
        """Store a result when it is cacheable; returns whether it was stored."""
        if result.get("status") not in _CACHEABLE:
            return False
        if result.get("error") and result["error"].get("kind") in _TRANSIENT_KINDS:
            return False
        stored = dict(result)
        if stored.get("error"):
            stored["error"] = _swap(stored["error"], path, _FILE_TOKEN)
        entry = {"key": key, "schema": SCHEMA, "result": stored}
        write_atomic(self._path(key), json.dumps(entry, indent=1) + "\n")
        return True


__all__ = ["Cache", "job_key", "tool_version", "source_fingerprint", "SCHEMA", "TOOL_VERSION_ENV"]
