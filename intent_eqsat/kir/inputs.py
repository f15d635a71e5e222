"""Random inputs for a KIR kernel, for translation validation (every later stage is compared on them).

Shape symbols get small random sizes (odd ones included); float views get values from one of
``VALUE_DISTRIBUTIONS`` (standard normal by default; large magnitudes that overflow ``exp``, a wide dynamic range,
signed zeros among small integers, or values near the dtype's underflow, so an audit sees more than N(0, 1): an
unsound ``exp(a - b) -> exp(a) / exp(b)`` agrees with the reference on N(0, 1) and gives NaN at x100); integer views
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


#: draws of the shape symbols before :func:`random_inputs` gives up finding sizes where every dim is >= 1
SIZE_DRAWS = 64


def _draw_sizes(kf: Any, sizes: dict[str, int], rng: np.random.Generator, lo: int, hi: int) -> dict[str, int]:
    """Symbol values (``sizes`` fixed, the others drawn in [lo, hi]) with every dim, arithmetic ones too
    (``H - 2``), at least ``min(lo, 1)`` and every divisor positive, and the quotient atoms' values added. A kernel
    whose dims need larger symbols than ``hi`` (``H - 12``) gets the range widened as the draws fail. (One draw per
    symbol, fixed ones too: the stream of random values is the one it always was for product dims.)"""
    least = min(lo, 1)
    for attempt in range(SIZE_DRAWS):
        top = hi + attempt
        sym = {s: int(sizes.get(s, rng.integers(lo, top + 1))) for s in kf.symbols}
        try:
            env = kf.shape_env(sym)
        except ZeroDivisionError:
            continue
        if all(d.evaluate(env) >= least for ds in kf.dims.values() for d in ds):
            return env
    raise ValueError(f"no sizes in [{lo}, {hi + SIZE_DRAWS}] make every dimension of kernel {kf.kernel.name!r} "
                     f"positive (fixed: {sizes})")


#: how float view values are drawn (``random_inputs(values=...)``), the default first
VALUE_DISTRIBUTIONS = ("normal", "large", "mixed", "signed_zero", "tiny")


def float_values(shape: tuple[int, ...], dtype: str, values: str, rng: np.random.Generator) -> np.ndarray:
    """Float values of ``dtype`` drawn from the distribution ``values`` (one of ``VALUE_DISTRIBUTIONS``):
    ``normal`` N(0, 1); ``large`` N(0, 1) x 100 (``exp`` overflows, products reach 1e4); ``mixed`` a random sign
    times 10^U(-3, 3); ``signed_zero`` +-0.0, +-1.0 and 2.0 (sign-of-zero rewrites show); ``tiny`` N(0, 1) times the
    square root of the dtype's smallest normal (products underflow to subnormals or zero)."""
    npdt = kdt.NUMPY[dtype]
    if values == "normal":
        x = rng.standard_normal(shape)
    elif values == "large":
        x = rng.standard_normal(shape) * 100.0
    elif values == "mixed":
        x = np.where(rng.integers(0, 2, shape) == 1, 1.0, -1.0) * 10.0 ** rng.uniform(-3.0, 3.0, shape)
    elif values == "signed_zero":
        x = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.0]), size=shape)
    elif values == "tiny":
        tiny = float(np.finfo(np.float32 if dtype == "bf16" else npdt).tiny)
        x = rng.standard_normal(shape) * np.sqrt(tiny)
    else:
        raise ValueError(f"unknown value distribution {values!r} (known: {', '.join(VALUE_DISTRIBUTIONS)})")
    return np.asarray(x).astype(npdt)


def random_inputs(module: m.KirModule, kernel_name: str, rng: np.random.Generator | int = 0,
                  sizes: dict[str, int] | None = None, lo: int = 1, hi: int = 9,
                  values: str = "normal") -> dict[str, Any]:
    """Inputs for every parameter of ``kernel_name``; ``sizes`` fixes shape symbols (others drawn in [lo, hi]);
    ``values`` names the distribution of float view values (``VALUE_DISTRIBUTIONS``)."""
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    facts = check(module)
    kf = facts.kernels[kernel_name]
    sym = _draw_sizes(kf, sizes or {}, rng, lo, hi)
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
            out[p.name] = float_values(shape, p.dtype, values, rng)
        elif p.dtype == "bool":
            out[p.name] = rng.integers(0, 2, shape).astype(bool)
        elif p.name in bounds:
            out[p.name] = rng.integers(0, max(bounds[p.name], 1), shape).astype(npdt)
        else:
            low = 0 if p.dtype.startswith("u") else -5
            out[p.name] = rng.integers(low, 6, shape).astype(npdt)
    return out


#: (rtol, atol) of an f32 result when the compile option ``fp32_contract`` lets f32 contractions round their
#: operands: tf32 keeps 10 mantissa bits (2^-11 relative per operand), bf16x3 about 16
FP32_CONTRACT_TOLERANCE = {"tf32": (1e-2, 1e-2), "bf16x3": (1e-3, 1e-3)}


def tolerance(dtype: str, options: Any = None) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of ``dtype`` with the reference (under compile ``options``: an f32
    result of a program allowed tf32/bf16x3 contractions gets that precision's tolerance)."""
    prec = getattr(options, "fp32_contract", "ieee") if options is not None else "ieee"
    if dtype == "f32" and prec in FP32_CONTRACT_TOLERANCE:
        return FP32_CONTRACT_TOLERANCE[prec]
    return {"f16": (2e-2, 2e-2), "bf16": (5e-2, 5e-2), "f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12)}.get(
        dtype, (0.0, 0.0))
