"""Random inputs for a KIR kernel, for translation validation (every later stage is compared on them).

Shape symbols get small random sizes (odd ones included); float views get standard-normal values; integer views
that are used inside a subscript (index tensors: gathers, scatters, histogram bins) get values inside the extent
of every axis they address, so the kernel is well-defined on them; other integer views get small signed values;
bool views random bits; by-value scalars moderate positive values. Output views are passed (zero-filled) so that
symbols only they determine are fixed.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from intent_eqsat.kir import dtypes as kdt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.verify import check


def _index_ranges(kernel: m.Kernel, dims: dict[str, tuple[Any, ...]], sym: dict[str, int]) -> dict[str, int]:
    """View name -> the exclusive upper bound its values must respect (the smallest extent they subscript)."""
    bound: dict[str, int] = {}
    for node in m.walk(kernel):
        if not isinstance(node, (m.Access, m.Assign)):
            continue
        target = node.name if isinstance(node, m.Access) else node.target
        if target not in dims:
            continue
        for axis, sub in enumerate(node.subs):
            if not isinstance(sub, m.Access):
                continue
            extent = int(dims[target][axis].evaluate(sym))
            bound[sub.name] = min(bound.get(sub.name, extent), extent)
    return bound


def random_inputs(module: m.KirModule, kernel_name: str, rng: np.random.Generator | int = 0,
                  sizes: dict[str, int] | None = None, lo: int = 1, hi: int = 9) -> dict[str, Any]:
    """Inputs for every parameter of ``kernel_name``; ``sizes`` fixes shape symbols (others drawn in [lo, hi])."""
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    facts = check(module)
    kf = facts.kernels[kernel_name]
    sym = {s: int((sizes or {}).get(s, rng.integers(lo, hi + 1))) for s in kf.symbols}
    bounds = _index_ranges(kf.kernel, dict(kf.dims), sym)
    out: dict[str, Any] = {}
    for p in kf.kernel.params:
        if not p.is_view:
            if kdt.is_float(p.dtype):
                out[p.name] = float(rng.uniform(0.25, 1.5))
            elif p.dtype == "bool":
                out[p.name] = bool(rng.integers(0, 2))
            else:
                out[p.name] = int(rng.integers(1, 4))
            continue
        shape = tuple(int(d.evaluate(sym)) for d in kf.dims[p.name])
        npdt = kdt.NUMPY[p.dtype]
        if p.access == "out":
            out[p.name] = np.zeros(shape, npdt)
        elif kdt.is_float(p.dtype):
            out[p.name] = rng.standard_normal(shape).astype(npdt)
        elif p.dtype == "bool":
            out[p.name] = rng.integers(0, 2, shape).astype(bool)
        elif p.name in bounds:
            out[p.name] = rng.integers(0, max(bounds[p.name], 1), shape).astype(npdt)
        else:
            low = 0 if p.dtype.startswith("u") else -5
            out[p.name] = rng.integers(low, 6, shape).astype(npdt)
    return out


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of ``dtype`` with the reference."""
    return {"f16": (2e-2, 2e-2), "bf16": (5e-2, 5e-2), "f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12)}.get(
        dtype, (0.0, 0.0))
