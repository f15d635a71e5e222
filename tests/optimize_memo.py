"""A per-process memo of :func:`intent_eqsat.optimizer.optimize` for the test suite (installed by
``tests/conftest.py``): one optimizer run per distinct input; a repeat gets a deep copy of the first result.

Why it is sound here: the optimizer is a deterministic function of its inputs (issue 21: budgets in iterations and
rows, never seconds; the determinism tests compile in fresh processes, without this memo, and compare bytes). The
key is everything the result depends on: the program's text and options, the target, the options argument, the
rule and pass groups, the kernels, the limits, the tile-size domain, the candidate count, the cost model's sizes
(only the default cost model, with or without sizes, and no calibration, is memoized) and every
``INTENT_EQSAT_*`` environment variable. A call with anything the key cannot see (custom rulebooks or cost model,
callbacks, traces, snapshots, kept e-graphs) runs the optimizer. A test that may patch code (see
:func:`may_patch`) runs it too, and its result is not stored.
"""
from __future__ import annotations

import contextlib
import copy
import os
import sys
from pathlib import Path
from typing import Any, Iterator

#: key -> result; at most MAX_ENTRIES (about 1 MB each: an attention result), the oldest dropped first
_MEMO: dict[tuple, Any] = {}
MAX_ENTRIES = 256
_BYPASS = [False]
_PATCHING = ("monkeypatch", "mock", "setattr(")


def _key(program: Any, kw: dict) -> tuple | None:
    """The memo key of one call, or None when the call holds something the key cannot see."""
    from intent_eqsat import ir
    from intent_eqsat.extract.cost import RooflineCost

    if any(kw.get(k) for k in ("trace", "snapshots", "keep_graphs", "progress", "observe")):
        return None
    if kw.get("rulebooks") is not None:
        return None
    cost = kw.get("cost")
    if cost is not None and (type(cost) is not RooflineCost or cost.calibration is not None
                             or cost.cost_params is not None):
        return None
    if not isinstance(program, ir.Module):
        return None
    groups = kw.get("groups")
    kernels = kw.get("kernels")
    return (ir.print_module(program), repr(getattr(program, "options", None)), kw.get("target"),
            repr(kw.get("options")), None if groups is None else tuple(groups),
            None if kernels is None else tuple(sorted(kernels)), repr(kw.get("limits")),
            None if kw.get("tile_candidates") is None else tuple(kw["tile_candidates"]),
            kw.get("candidates", 3), kw.get("verify_each_group", True),
            None if cost is None else (cost.target.name if hasattr(cost.target, "name") else repr(cost.target),
                                       tuple(sorted(cost.sizes.items())), cost.provider),
            tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("INTENT_EQSAT_"))))


def install() -> None:
    """Replace ``optimize`` in the optimizer package and its module (``optimize_kir`` and the pipeline look it up
    there at call time; test modules import it after this runs)."""
    import intent_eqsat.optimizer as package

    module = sys.modules["intent_eqsat.optimizer.optimize"]
    original = module.optimize
    if getattr(original, "_memoized", False):
        return

    def optimize(*args: Any, **kw: Any) -> Any:
        key = _key(args[0], kw) if len(args) == 1 and not _BYPASS[0] else None
        if key is not None and key in _MEMO:
            return copy.deepcopy(_MEMO[key])
        result = original(*args, **kw)
        if key is not None:
            if len(_MEMO) >= MAX_ENTRIES:
                del _MEMO[next(iter(_MEMO))]
            _MEMO[key] = copy.deepcopy(result)
        return result

    optimize.__doc__ = original.__doc__
    optimize.__wrapped__ = original  # type: ignore[attr-defined]
    optimize._memoized = True  # type: ignore[attr-defined]
    module.optimize = optimize
    package.optimize = optimize


def may_patch(request: Any) -> bool:
    """Whether a test may patch the optimizer's code or environment: it requests ``monkeypatch``, or its module's
    text uses ``monkeypatch``, ``mock`` or ``setattr(``."""
    if "monkeypatch" in request.fixturenames:
        return True
    path = getattr(request.module, "__file__", None)
    if not path:
        return True
    text = _module_text(path)
    return any(p in text for p in _PATCHING)


_TEXTS: dict[str, str] = {}


def _module_text(path: str) -> str:
    if path not in _TEXTS:
        _TEXTS[path] = Path(path).read_text(encoding="utf-8", errors="replace")
    return _TEXTS[path]


@contextlib.contextmanager
def bypassed(flag: bool) -> Iterator[None]:
    """Run the body with the memo bypassed when ``flag``."""
    old = _BYPASS[0]
    _BYPASS[0] = flag or old
    try:
        yield
    finally:
        _BYPASS[0] = old
