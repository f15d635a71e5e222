"""Shared helpers of the provider tests: program discovery, generic inputs, running generated Triton code."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from intent_eqsat.ir import parse_module
from intent_eqsat.ir.core import Module, walk
from intent_eqsat.ir.dtypes import to_numpy
from intent_eqsat.ir.launch import evaluate
from intent_eqsat.ir.loop_rewrite import defining_ops

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gir" / "gemm.gir"
PROGRAM_DIR = ROOT / "tests" / "cpu" / "ir" / "programs"
#: odd symbol sizes that are not multiples of any block
SIZES = (13, 11, 7, 19, 5, 9, 17, 3)
#: tiny shapes: constructed programs are one program per output element, and Triton's interpreter is ~50 us/op
SMALL = (3, 2, 4, 2, 3, 2)
#: (builder program, output) -> (rtol, atol) where the Triton result is compared more loosely (tf32 dot)
LOOSE = {("shapes", "DOT32"): (2e-2, 2e-2)}


def gir_kernels() -> list[tuple[Path, str]]:
    """(file, kernel) for every kernel of the hand-written programs (absent directory: none)."""
    out = []
    for path in sorted(PROGRAM_DIR.glob("*.gir")) if PROGRAM_DIR.is_dir() else []:
        try:
            m = parse_module(path.read_text(), str(path))
        except Exception:                                   # a fixture being edited: not ours to judge
            continue
        out.extend((path, k.name) for k in m.kernels)
    return out


def load_gir(path: Path) -> Module:
    return parse_module(path.read_text(), str(path))


def generic_inputs(m: Module, kernel: str, rng: np.random.Generator, sizes: tuple[int, ...] = SIZES) \
        -> dict[str, Any]:
    """Random inputs from the ABI alone: shape symbols get small sizes (odd by default), float views normal
    values, integer views values in [0, smallest symbol) (usable as indices), write views zeros, scalars 3 / 0.5."""
    from intent_eqsat.ir.launch import free_symbols
    k = m.kernel(kernel)
    params = {p.name: p.default for p in m.params}
    scalars = {a.name for a in k.abi if not a.is_view}
    syms: dict[str, int] = {}
    for a in k.abi:
        if a.is_view:
            for e in a.value.type.shape:
                for name in sorted(free_symbols(e)):
                    if name not in syms and name not in params and name not in scalars:
                        syms[name] = sizes[len(syms) % len(sizes)]
    lo = min(syms.values()) if syms else 4
    args: dict[str, Any] = {}
    for a in k.abi:
        if a.private:
            continue
        t = a.value.type
        if not a.is_view:
            args[a.name] = 0.5 if t.dtype.startswith(("f", "b")) else syms.get(a.name, 3)
            continue
        shape = tuple(int(evaluate(e, {**params, **syms})) for e in t.shape)
        dt = to_numpy(t.dtype)
        if a.access == "write":
            x = np.zeros(shape, dt)
        elif t.dtype in ("f16", "f32", "f64"):
            x = rng.standard_normal(shape).astype(dt)
        elif t.dtype == "i1":
            x = rng.integers(0, 2, shape).astype(bool)
        else:
            x = rng.integers(0, lo, shape).astype(dt)
        args[a.name] = x
    return args


def copy_args(args: dict[str, Any]) -> dict[str, Any]:
    return {n: (a.copy() if isinstance(a, np.ndarray) else a) for n, a in args.items()}


def run_launcher(mod, args: dict[str, Any], params: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """Call the generated ``launch`` on torch CPU tensors (under TRITON_INTERPRET=1); return every array back."""
    import torch
    t = {n: (torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a) for n, a in args.items()}
    mod.launch(**t, params=params or None)
    return {n: v.numpy() for n, v in t.items() if isinstance(v, torch.Tensor)}


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    if dtype == np.float16:
        return 2e-3, 2e-3
    if dtype == np.float32:
        return 2e-5, 1e-5
    return 1e-12, 1e-12


def assert_matches(got: np.ndarray, want: np.ndarray, what: str, rtol: float | None = None,
                   atol: float | None = None) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    if got.dtype.kind in "iub":
        assert np.array_equal(got, want.astype(got.dtype)), f"{what}: {got} vs {want}"
        return
    r, a = tolerance(got.dtype)
    r, a = rtol if rtol is not None else r, atol if atol is not None else a
    g, w = got.astype(np.float64), want.astype(np.float64)
    close = np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
    if not close.all():
        bad = np.argwhere(~close)[:5].tolist()
        raise AssertionError(f"{what}: {int((~close).sum())} of {close.size} members differ (rtol={r}, atol={a}); "
                             f"first at {bad}: got {g[~close][:5]}, want {w[~close][:5]}")


def numel(shape) -> int:
    return math.prod(shape)


def loop_steps(module: Module, kernel: str, symbol: str) -> list:
    """The constant steps of the ``for`` ops of ``kernel`` whose upper bound is the size ``symbol`` (None: a step
    that is not a constant): 1 where a loop still takes one member (a key, a K index) per iteration."""
    k = module.kernel(kernel)
    defs = defining_ops(k)
    out = []
    for op in walk(k.body):
        if op.name != "for":
            continue
        ub = defs.get(op.operands[1].name)
        if ub is None or ub.name != "launch" or str(ub.attrs.get("expr")) != symbol:
            continue
        step = defs.get(op.operands[2].name)
        out.append(step.attrs.get("value") if step is not None and step.name == "const" else None)
    return out
