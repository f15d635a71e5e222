"""Generated Triton source runs under ``TRITON_INTERPRET=1`` on small odd shapes and matches the GPU IR's NumPy
interpreter (the semantic oracle) and independent NumPy references (issue 5, "Must show", first bullet).

Programs: the seed GEMM (examples/gir/gemm.gir) in several dtypes/orders/blockings, every kernel of the hand-written
fixtures under tests/cpu/ir/programs (generic random inputs), and the builder programs of :mod:`programs`.
"""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat.errors import InterpretError
from intent_eqsat.ir import interpret, parse_module, verify
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.triton import serialize

from tests.interp.helpers import GEMM, LOOSE, assert_matches, copy_args, generic_inputs, gir_kernels, load_gir, \
    run_launcher
from tests.interp.programs import ABI_GIR, PROGRAMS

pytestmark = pytest.mark.usefixtures("interpret_mode")

#: outputs whose provider spelling is licensed to differ more (tf32 inputs: the interpreter's tl.dot is f32)


def _generate(module, kernel: str, gen_dir, params=None, target: str = "sm90"):
    return load_source(serialize(module, kernel, target, params), gen_dir, kernel)


# -- the seed GEMM -------------------------------------------------------------------------------------------

def _gemm_text(dtype: str = "f16", order: str = "row_major", precision: str | None = None) -> str:
    text = GEMM.read_text().replace("view<f16", f"view<{dtype}").replace("frag<f16", f"frag<{dtype}")
    text = text.replace("order row_major", f"order {order}")
    if precision:
        text = text.replace("lhs_contract = [1]", f"lhs_contract = [1], precision = {precision}")
    return text


@pytest.mark.parametrize("dtype,order,precision,params", [
    ("f16", "row_major", None, {"BM": 32, "BN": 32, "BK": 16}),
    ("f16", "row_major", None, None),
    ("f16", "grouped(2)", None, {"BM": 32, "BN": 64, "BK": 16}),
    ("f32", "row_major", None, {"BM": 32, "BN": 32, "BK": 16}),
    ("f32", "row_major", "tf32", {"BM": 32, "BN": 32, "BK": 16}),
], ids=["f16-32x32x16", "f16-defaults", "f16-grouped", "f32-ieee", "f32-tf32"])
def test_seed_gemm(gen_dir, dtype, order, precision, params) -> None:
    m = parse_module(_gemm_text(dtype, order, precision))
    verify(m)
    rng = np.random.default_rng(5)
    M, K, N = 37, 45, 71
    npdt = np.float16 if dtype == "f16" else np.float32
    args = {"A": rng.standard_normal((M, K)).astype(npdt), "B": rng.standard_normal((K, N)).astype(npdt),
            "C": np.zeros((M, N), npdt)}
    got = run_launcher(_generate(m, "gemm", gen_dir, params), args)["C"]
    want = interpret(m, "gemm", copy_args(args), params)["C"]
    ref = args["A"].astype(np.float64) @ args["B"].astype(np.float64)
    if precision == "tf32":
        assert_matches(got, ref, "C vs float64", rtol=2e-2, atol=5e-2)
    else:
        assert_matches(got, want, "C vs the IR interpreter", rtol=2e-3 if dtype == "f16" else 1e-5,
                       atol=2e-3 if dtype == "f16" else 1e-4)
        assert_matches(got, ref, "C vs float64", rtol=5e-3 if dtype == "f16" else 1e-5,
                       atol=5e-3 if dtype == "f16" else 1e-4)


def test_gemm_launcher_checks_arguments(gen_dir) -> None:
    import torch
    m = parse_module(_gemm_text())
    mod = _generate(m, "gemm", gen_dir, {"BM": 32, "BN": 32, "BK": 16})
    A, B, C = torch.zeros(5, 7, dtype=torch.float16), torch.zeros(7, 3, dtype=torch.float16), \
        torch.zeros(5, 3, dtype=torch.float16)
    with pytest.raises(TypeError, match="A: expected a torch.float16"):
        mod.launch(A.float(), B, C)
    with pytest.raises(ValueError, match="B: extent 0 is 6, expected K = 7"):
        mod.launch(A, torch.zeros(6, 3, dtype=torch.float16), C)
    with pytest.raises(ValueError, match="not in the verified candidate set"):
        mod.launch(A, B, C, params={"BM": 48})
    mod.launch(A, B, C, params={"BM": 64, "BN": 32, "BK": 16})       # a declared, verified Config
    # an empty grid launches nothing
    mod.launch(torch.zeros(0, 7, dtype=torch.float16), B, torch.zeros(0, 3, dtype=torch.float16))


def test_launcher_rejects_written_views_that_overlap(gen_dir) -> None:
    """A stride-0 output, an output sharing storage with an input (an in-place "transpose"), and two views of one
    buffer that intersect are rejected before the launch, naming the views; disjoint slices of one buffer are
    accepted (issue 25.10). C is left untouched by a rejected launch."""
    import torch
    m = parse_module(_gemm_text("f32"))
    mod = _generate(m, "gemm", gen_dir, {"BM": 16, "BN": 16, "BK": 16})
    A, B = torch.ones(5, 7), torch.ones(7, 3)
    with pytest.raises(ValueError, match=r"written view C has overlapping elements \(shape \(5, 3\), strides "
                                         r"\(0, 0\)\)"):
        mod.launch(A, B, torch.zeros(1, 1).expand(5, 3))
    square = torch.ones(7, 7)
    with pytest.raises(ValueError, match="written view C overlaps the view A in memory"):
        mod.launch(square, torch.ones(7, 7), square.t())
    buf = torch.zeros(5 * 7 + 5 * 3)
    with pytest.raises(ValueError, match="written view C overlaps the view A"):
        mod.launch(buf[:35].view(5, 7), B, buf[30:45].view(5, 3))
    buf[:35] = 1.0
    mod.launch(buf[:35].view(5, 7), B, buf[35:].view(5, 3))          # disjoint parts of one buffer
    assert torch.equal(buf[35:], torch.full((15,), 7.0)) and torch.equal(buf[:35], torch.ones(35))


def test_gemm_strided_views(gen_dir) -> None:
    """Runtime strides come from the tensors (a transposed B and a column slice of A)."""
    import torch
    m = parse_module(_gemm_text("f32"))
    mod = _generate(m, "gemm", gen_dir, {"BM": 16, "BN": 16, "BK": 16})
    g = torch.Generator().manual_seed(0)
    A = torch.randn(21, 40, generator=g)[:, ::2]
    B = torch.randn(9, 20, generator=g).t()
    C = torch.zeros(21, 9)
    mod.launch(A, B, C)
    assert_matches(C.numpy(), (A.double() @ B.double()).numpy(), "C", rtol=1e-5, atol=1e-4)


# -- the hand-written fixtures -------------------------------------------------------------------------------

@pytest.mark.parametrize("path,kernel", gir_kernels(), ids=lambda x: getattr(x, "name", x))
def test_gir_fixture(gen_dir, path, kernel) -> None:
    m = load_gir(path)
    args = generic_inputs(m, kernel, np.random.default_rng(11))
    try:
        want = interpret(m, kernel, copy_args(args))
    except InterpretError as e:
        pytest.skip(f"the IR interpreter refuses generic inputs here (a refusal fixture?): {str(e)[:150]}")
    got = run_launcher(_generate(m, kernel, gen_dir), args)
    for name, w in want.items():
        assert_matches(got[name], w, f"{path.name}:{kernel}:{name}")


# -- builder programs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_builder_program(gen_dir, name) -> None:
    build, kernel, make_inputs, reference, params = PROGRAMS[name]
    m = build()
    verify(m)
    args = make_inputs(np.random.default_rng(3))
    got = run_launcher(_generate(m, kernel, gen_dir, params), args, params)
    want = interpret(m, kernel, copy_args(args), params)
    for out, w in want.items():
        rtol, atol = LOOSE.get((name, out), (None, None))
        assert_matches(got[out], w, f"{name}:{out} vs the IR interpreter", rtol, atol)
    if reference is not None:
        for out, w in reference(args).items():
            rtol, atol = LOOSE.get((name, out), (None, None))
            dt = got[out].dtype
            if dt == np.float32 and rtol is None:
                rtol, atol = 1e-4, 1e-5                  # float64 references: f32 rounding and reassociation
            assert_matches(got[out], w, f"{name}:{out} vs NumPy", rtol, atol)


def test_builder_programs_cover_the_required_kinds() -> None:
    from intent_eqsat.ir import walk
    ops = set()
    for build, *_ in PROGRAMS.values():
        for k in build().kernels:
            ops |= {op.name for op in walk(k.body)}
            if any(s.order == "grouped" for s in k.space.segments):
                ops.add("grouped")
            if k.space.launch is not None:
                ops.add("grid_stride")
            if len(k.space.segments) > 1:
                ops.add("two_segments")
    for need in ("reduce", "scan", "histogram", "scatter_reduce", "argreduce", "contract", "region_fold", "while",
                 "if", "for", "atomic_rmw", "atomic_cas", "atomic_load", "atomic_store", "alloc", "buffer_load",
                 "buffer_store", "transpose", "join", "reshape", "extract", "tuple", "record", "get", "field",
                 "bitcast", "grouped", "grid_stride", "two_segments"):
        assert need in ops, need


def test_flush_to_zero_flushes_subnormals(gen_dir) -> None:
    """flush_to_zero=true is spelled as an explicit flush of operands and result (Triton has no per-op FTZ):
    a subnormal product becomes a zero of the right sign; the interpreter (which never flushes) keeps it."""
    from intent_eqsat.ir.builder import ModuleBuilder
    from intent_eqsat.ir.launch import ceil_div
    from intent_eqsat.ir.types import frag
    mb = ModuleBuilder("sm90")
    mb.param("B", 16, (16,))
    kb = mb.kernel("ftz", origin="ftz")
    X = kb.view("X", "f32", ["N"], access="read")
    Y = kb.view("Y", "f32", ["N"], access="write")
    kb.segment([ceil_div("N", "B")])

    def group(r, coords):
        i = r.add(r.broadcast(r.mul(coords[0], r.launch("B")), frag("index", "B")), r.range(frag("index", "B")))
        ok = r.cmp("lt", i, r.broadcast(r.launch("N"), frag("index", "B")))
        x = r.load(X, [i], valid=ok, fill=0.0)
        half = r.broadcast(r.const(0.5, "f32"), frag("f32", "B"))
        r.store(Y, [i], r.binary("mul", x, half, flush_to_zero=True), valid=ok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    m = mb.build()
    X = np.array([1.0, -2e-38, 3e-38, 2.0, -1e-39], np.float32)
    got = run_launcher(_generate(m, "ftz", gen_dir), {"X": X, "Y": np.zeros_like(X)})["Y"]
    # -2e-38 * 0.5 is subnormal (flushed), 3e-38 * 0.5 is normal (kept), -1e-39 is a subnormal input (flushed)
    assert got.tolist() == [0.5, -0.0, np.float32(1.5e-38), 1.0, -0.0]
    assert np.signbit(got[1]) and np.signbit(got[4])
    kept = interpret(m, "ftz", {"X": X, "Y": np.zeros_like(X)})["Y"]
    assert kept[1] != 0                                   # the reference never flushes: FTZ is only a license


# -- ABI features: declared strides and offsets, dim/stride LaunchExprs, private scalars and workspaces -------



def test_abi_features(gen_dir) -> None:
    import torch
    m = parse_module(ABI_GIR)
    verify(m)
    src = serialize(m, "abi", "sm90")
    assert "torch.empty(" in src and "compiler-private workspace" in src and "compiler-private scalar" in src
    mod = load_source(src, gen_dir, "abi")
    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.standard_normal((5, 13)).astype(np.float32))
    Y = torch.zeros(5, 20)[:, :13]                               # a strided view: stride(Y, 0) = 20
    F = torch.arange(5, dtype=torch.int32)
    T, S = torch.zeros(5), torch.zeros(5, dtype=torch.int64)
    mod.launch(X, Y, F, T, S)
    assert torch.equal(Y, X)
    assert torch.allclose(T, X.sum(1) + 1.0, atol=1e-5)          # nb = ceil_div(13, 16) = 1
    assert S.tolist() == [20] * 5
    assert F.tolist() == [100, 1, 102, 3, 104]                   # only even rows swap (scalar validity)
    with pytest.raises(ValueError, match="stride 0 is 26, the kernel was built for C = 13"):
        mod.launch(torch.zeros(5, 26)[:, :13], Y, F, T, S)
