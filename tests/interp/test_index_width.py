"""32-bit index arithmetic (launch resources ``index_bits 32``; ``intent_eqsat.ir.index_bounds``; the Triton
``IDX`` constexpr): the bounds hold on every index value the GPU IR interpreter computes, the narrowed Triton kernel
computes what the 64-bit one does, the launcher falls back to 64 bits when a bound reaches 2**31, and the optimizer
narrows streaming programs while contract programs keep 64 bits."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat.errors import InterpretError
from intent_eqsat.ir import interpret as ir_interpret
from intent_eqsat.ir.core import Module
from intent_eqsat.ir.index_bounds import INDEX32_LIMIT, index_bounds
from intent_eqsat.ir.launch import BinOp, Sym, ViewMeta, evaluate
from intent_eqsat.providers.launch_resources import LaunchResources
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.triton import serialize

from tests.interp.helpers import LOOSE, ROOT, SMALL, assert_matches, copy_args, generic_inputs, gir_kernels, \
    load_gir, run_launcher
from tests.interp.programs import PROGRAMS

#: the interpreter module (``intent_eqsat.ir.interpret`` the attribute is the function)
_interp = importlib.import_module("intent_eqsat.ir.interpret")

#: constructed corpus programs whose index arithmetic the bounds cover (checked: a bound exists for each)
NARROWED_CORPUS = ("softmax", "layernorm", "rmsnorm", "row_sum", "cumsum", "stencil3", "transpose", "gemv",
                   "maxpool2d", "conv2d_strided", "group_mean", "masked_fill")


#: the launch resources that permit 32-bit index arithmetic (beside the program, issue 22 item 3)
IDX32 = LaunchResources(index_bits=32)


def _constructed(name: str) -> Module:
    from intent_eqsat import pipeline
    kir = pipeline.load(str(ROOT / "examples" / "corpus" / f"{name}.kir"))
    return pipeline.construct(kir, target="sm90", options=pipeline.make_options(None))


def _cases() -> list:
    out = [pytest.param(("gir", str(p), k), id=f"{p.stem}:{k}") for p, k in gir_kernels()
           if p.stem != "errors"]                                   # the refusal fixtures
    out += [pytest.param(("kir", n, None), id=n) for n in NARROWED_CORPUS]
    out += [pytest.param(("builder", n, None), id=f"builder:{n}") for n in sorted(PROGRAMS)]
    return out


def _load(case) -> tuple[Module, str, dict, dict]:
    """(the narrowed module, its kernel, inputs, parameters)."""
    kind, where, kernel = case
    params: dict = {}
    if kind == "builder":
        build, kernel, make_inputs, _, params = PROGRAMS[where]
        m = build()
        args = make_inputs(np.random.default_rng(3))
    else:
        m = load_gir(Path(where)) if kind == "gir" else _constructed(where)
        kernel = kernel or m.kernels[0].name
        # constructed programs run one program per output element: the corpus tests' tiny sizes
        args = generic_inputs(m, kernel, np.random.default_rng(3), *(() if kind == "gir" else (SMALL,)))
    return m, kernel, args, dict(params)


def _reference(m: Module, kernel: str, args: dict, params: dict) -> dict:
    try:
        return ir_interpret(m, kernel, copy_args(args), params)
    except InterpretError as e:
        pytest.skip(f"the IR interpreter refuses these inputs (a refusal fixture?): {str(e)[:150]}")


def _launch_symbols(m: Module, kernel: str, args: dict, params: dict) -> tuple[dict, dict]:
    """(symbols, views) a LaunchExpr is evaluated with at this launch: shape symbols, scalars, parameters."""
    k = m.kernel(kernel)
    syms = {p.name: p.default for p in m.params}
    syms.update(params)
    views = {}
    products = []
    for a in k.abi:
        if a.private:
            continue
        if a.is_view:
            arr = np.asarray(args[a.name])
            views[a.name] = ViewMeta(tuple(arr.shape), tuple(s // arr.itemsize for s in arr.strides))
            for axis, e in enumerate(a.value.type.shape):
                if isinstance(e, Sym):
                    syms.setdefault(e.name, arr.shape[axis])
                elif isinstance(e, BinOp) and e.op == "*":
                    products.append((e, arr.shape[axis]))
        else:
            syms[a.name] = args[a.name]
    for e, extent in products:                 # ``G * CPG``: the one unknown factor is the extent over the others
        for unknown, known in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(unknown, Sym) and unknown.name not in syms:
                syms[unknown.name] = extent // int(evaluate(known, syms))
    return syms, views


@pytest.mark.parametrize("case", _cases())
def test_bounds_hold_on_every_index_value(case, monkeypatch) -> None:
    m, kernel, args, params = _load(case)
    bounds = index_bounds(m.kernel(kernel), [p.name for p in m.params])
    if bounds is None:
        pytest.skip("index values from memory or carried state: the program stays 64-bit")
    seen = [0]
    conform = _interp._Interpreter.conform

    def probe(self, v, t, op):
        out = conform(self, v, t, op)
        if getattr(t, "dtype", None) == "index":
            a = np.asarray(out)
            if a.size:
                seen[0] = max(seen[0], int(np.abs(a.astype(np.int64)).max()))
        return out

    monkeypatch.setattr(_interp._Interpreter, "conform", probe)
    _reference(m, kernel, args, params)
    syms, views = _launch_symbols(m, kernel, args, params)
    bound = max(int(evaluate(b, syms, views)) for b in bounds)
    assert seen[0] > 0, "the probe saw no index value"
    assert seen[0] <= bound, f"an index value of magnitude {seen[0]} exceeds the bound {bound}"


def test_the_bounds_cover_the_streaming_corpus() -> None:
    """Each kernel the narrowed tests run really has bounds (a rule regression would silently skip them)."""
    programs = {n: _constructed(n) for n in NARROWED_CORPUS}
    missing = [n for n, m in programs.items() if index_bounds(m.kernels[0], [p.name for p in m.params]) is None]
    assert not missing, f"no index bounds for {missing}"


def test_index_values_from_memory_have_no_bound() -> None:
    """embedding_gather turns loaded i64 ids into index coordinates: nothing bounds them."""
    m = _constructed("embedding_gather")
    assert index_bounds(m.kernels[0]) is None
    src = serialize(m, m.kernels[0].name, "sm90", launch_resources=IDX32)
    assert "IDX" not in src and "tl.int64" in src


@pytest.mark.usefixtures("interpret_mode")
@pytest.mark.parametrize("case", _cases())
def test_narrowed_triton_matches_the_ir_interpreter(case, gen_dir) -> None:
    m, kernel, args, params = _load(case)
    k = m.kernel(kernel)
    if any(a.is_view and a.value.type.dtype == "bf16" for a in k.abi):
        pytest.skip("bf16 arithmetic is wrong under Triton 3.6's interpreter (DESIGN.md): covered by AOT")
    if index_bounds(k, [p.name for p in m.params]) is None:
        pytest.skip("no index bounds: the program stays 64-bit")
    src = serialize(m, kernel, "sm90", params or None, launch_resources=IDX32)
    assert "IDX: tl.constexpr" in src and "_idx = tl.int32 if _index_bound < 2147483648 else tl.int64" in src
    want = _reference(m, kernel, args, params)
    got = run_launcher(load_source(src, gen_dir, kernel + "_idx32"), args, params or None)
    for name, w in want.items():
        rtol, atol = LOOSE.get((kernel, name), (None, None))
        assert_matches(got[name], w, f"{kernel}:{name}, 32-bit index arithmetic vs the IR interpreter", rtol, atol)


class _Capture:
    """Stands in for the @triton.jit kernel: records the arguments of the launch (every argument by position, in
    the signature's order: the index dtype constexpr comes last)."""

    def __init__(self) -> None:
        self.args: tuple = ()

    def __getitem__(self, grid):
        def call(*args, **kwargs):
            self.args = args
        return call


@pytest.mark.usefixtures("interpret_mode")
def test_launcher_picks_64_bits_when_a_bound_reaches_2_to_the_31(gen_dir) -> None:
    torch = pytest.importorskip("torch")
    import triton.language as tl
    m = _constructed("softmax")
    mod = load_source(serialize(m, "softmax", "sm90", launch_resources=IDX32), gen_dir, "softmax_idx_guard")
    cap = _Capture()
    setattr(mod, mod.KERNEL.__name__, cap)
    dt = getattr(torch, {"f32": "float32", "f16": "float16"}[m.kernels[0].abi[0].value.type.dtype])

    def launch(rows: int, cols: int, row_stride: int):
        """A launch on (rows, cols) views whose rows are row_stride elements apart (meta tensors: no memory)."""
        x = torch.empty_strided((rows, cols), (row_stride, 1), dtype=dt, device="meta")
        mod.launch(x, torch.empty((rows, cols), dtype=dt, device="meta"))
        assert list(mod.SIGNATURE)[-1] == mod.INDEX_CONSTEXPR
        return cap.args[-1]

    assert launch(1024, 1024, 1024) == tl.int32
    assert launch(64, 512, 1 << 24) == tl.int32                # last offset 63 * 2**24 + 511 < 2**31
    assert launch(200, 512, 1 << 24) == tl.int64               # 199 * 2**24: past 2**31
    assert INDEX32_LIMIT == 2 ** 31
    # the choice is made once per value of what the bounds read (shapes, strides, symbols), then looked up
    assert sorted(map(str, mod.INDEX_WIDTHS.values())) == sorted(map(str, (tl.int32, tl.int32, tl.int64)))
    mod.INDEX_WIDTHS.clear()
    assert launch(64, 512, 1 << 24) == tl.int32 and launch(64, 512, 1 << 25) == tl.int64   # 63 * 2**25 >= 2**31
    assert launch(64, 512, 1 << 24) == tl.int32 and len(mod.INDEX_WIDTHS) == 2


def test_the_optimizer_narrows_streaming_programs_and_keeps_contracts_64_bit() -> None:
    from intent_eqsat import api
    soft = api.compile(ROOT / "bench" / "suite" / "softmax_f32.kir", sizes={"M": 32768, "N": 8192})
    gemm = api.compile(ROOT / "bench" / "suite" / "gemm_bf16.kir", sizes={"M": 4096, "N": 4096, "K": 4096})
    assert soft.launch_resources["softmax_f32"].index_bits == 32      # beside the program, not in it
    assert "IDX: tl.constexpr" in soft.source and "index_bits" not in _text(soft.program)
    assert gemm.launch_resources["gemm_bf16"].index_bits == 64
    assert "IDX" not in gemm.source and "tl.program_id(0).to(tl.int64)" in gemm.source


def _text(m: Module) -> str:
    from intent_eqsat.ir import print_module
    return print_module(m)


@pytest.mark.usefixtures("interpret_mode")
def test_arguments_named_like_the_launchers_builtins_do_not_shadow_them(gen_dir) -> None:
    """Views called ``max`` and ``_idx`` (legal in GPU IR text) must not shadow the ``max(...)`` the launcher
    evaluates the index bounds with, nor the ``_idx`` it picks the index dtype into."""
    path = ROOT / "tests" / "cpu" / "ir" / "programs" / "softmax.gir"
    from intent_eqsat.ir import parse_module
    m = parse_module(path.read_text().replace("%X", "%max").replace("%Y", "%_idx"), str(path))
    kernel = m.kernels[0].name
    src = serialize(m, kernel, "sm90", launch_resources=IDX32)
    assert "def launch(max_, _idx_, *" in src and "_index_bound = max(" in src
    torch = pytest.importorskip("torch")
    args = generic_inputs(m, kernel, np.random.default_rng(5))
    want = ir_interpret(m, kernel, copy_args(args))
    tensors = {n: torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for n, a in args.items()}
    mod = load_source(src, gen_dir, kernel + "_shadow")
    mod.launch(*(tensors[a.name] for a in m.kernels[0].abi if not a.private))   # positional: the names are taken
    for name, w in want.items():
        assert_matches(tensors[name].numpy(), w, f"{kernel}:{name}")
