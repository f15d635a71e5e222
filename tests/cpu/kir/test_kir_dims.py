"""Arithmetic dims, quotient subscripts and kept size-1 axes (issue 27 item 7): the shapes PyTorch users write for
valid and strided convolutions (``H - 2``, ``(H + 2 - 3) // 2 + 1``, ``(H - KH) // 2 + 1`` with the window from the
weight's shape), pools (``H // 2``), padding (``H + 2``), crops
(``M - 2``), ``keepdim`` reductions (``Y: out f32[M, 1]`` written as ``Y[m, 0]``), group statistics read per channel
(``Mean[n, c // CPG]``) and nearest upsampling (``X[n, i // 2]``).

Each kernel parses, prints back to itself, verifies, evaluates, and is optimized to a GPU IR program whose NumPy
interpretation equals the KIR float64 reference at random sizes (the sizes drawn so that every dim is positive);
the errors name the file, line and column and what is wrong."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.errors import KirError, KirEvalError, ParseError
from intent_eqsat.kir import builder
from intent_eqsat.kir.dims import DimExpr, dim_str, dim_value
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import assert_matches_reference

KERNELS = """\
kernel conv1d_valid(X: f32[N, H], K: f32[3], Y: out f32[N, H - 2]) {
  Y[n, i] = sum(k: X[n, i + k] * K[k])
}
kernel max_pool1d(X: f32[N, L], Y: out f32[N, L // 2]) {
  Y[n, i] = max(k in 0..2: X[n, 2*i + k])
}
kernel avg_pool2d(X: f32[B, C, H, W], Y: out f32[B, C, H // 2, W // 2]) {
  Y[b, c, i, j] = sum(kh in 0..2, kw in 0..2: X[b, c, 2*i + kh, 2*j + kw]) / 4.0
}
kernel pad1(X: f32[N, H], Y: out f32[N, H + 2]) {
  Y[n, i] = X[n, i - 1] where 1 <= i && i <= H else 0.0
}
kernel conv2d_s2p1(X: f32[N, C, H, W], K: f32[F, C, 3, 3],
                   Y: out f32[N, F, (H + 2 - 3) // 2 + 1, (W + 2 - 3) // 2 + 1]) {
  Y[n, f, i, j] = sum(c, kh, kw: (X[n, c, 2*i + kh - 1, 2*j + kw - 1]
                      where 0 <= 2*i + kh - 1 && 2*i + kh - 1 < H && 0 <= 2*j + kw - 1 && 2*j + kw - 1 < W
                      else 0.0) * K[f, c, kh, kw])
}
kernel conv2d_k_s2(X: f32[N, C, H, W], K: f32[F, C, KH, KW],
                   Y: out f32[N, F, (H - KH) // 2 + 1, (W - KW) // 2 + 1]) {
  Y[n, f, i, j] = sum(c, kh, kw: X[n, c, 2*i + kh, 2*j + kw] * K[f, c, kh, kw])
}
kernel crop(X: f32[M, N], Y: out f32[M - 2, N - 2]) {
  Y[i, j] = X[i + 1, j + 1]
}
kernel sum_keepdim(X: f32[M, N], Y: out f32[M, 1]) {
  Y[m, 0] = sum(n: X[m, n])
}
kernel mean_hw_keepdim(X: f32[B, C, H, W], Y: out f32[B, C, 1, 1]) {
  Y[b, c, 0, 0] = sum(h, w: X[b, c, h, w]) / (H * W)
}
kernel group_apply(X: f32[N, G*CPG, S], Mean: f32[N, G], Y: out f32[N, G*CPG, S]) {
  Y[n, c, s] = X[n, c, s] - Mean[n, c // CPG]
}
kernel upsample2(X: f32[N, H], Y: out f32[N, 2*H]) {
  Y[n, i] = X[n, i // 2]
}
kernel row_scale(X: f32[N, H*W], R: f32[H], Y: out f32[N, H*W]) {
  Y[n, p] = X[n, p] * R[p // W]
}
"""

NAMES = ["conv1d_valid", "max_pool1d", "avg_pool2d", "pad1", "conv2d_s2p1", "conv2d_k_s2", "crop", "sum_keepdim",
         "mean_hw_keepdim", "group_apply", "upsample2", "row_scale"]


def _module() -> kir.KirModule:
    return kir.parse(KERNELS, filename="dims.kir")


def _only(module: kir.KirModule, name: str) -> kir.KirModule:
    return dataclasses.replace(module, items=(module.kernel(name),))


def test_dims_parse_to_products_or_expressions_and_print_back() -> None:
    module = _module()
    y = module.kernel("conv2d_s2p1").param("Y")
    assert y.dims[:2] == (("N",), ("F",))
    assert isinstance(y.dims[2], DimExpr) and dim_str(y.dims[2]) == "(H + 2 - 3) // 2 + 1"
    assert module.kernel("upsample2").param("Y").dims[1] == (2, "H")           # a product stays a product
    assert dim_value(y.dims[2], {"H": 9}) == 5 and dim_value(y.dims[2], {"H": 10}) == 5
    again = kir.parse(kir.print_kir(module), filename="again.kir")
    assert again == module
    for text, want in [("H - (K - 1)", "H - (K - 1)"), ("(H - 1) * 2", "(H - 1) * 2"), ("2*(G*CPG)", "2*G*CPG"),
                       ("H - K - 1", "H - K - 1")]:
        m = kir.parse(f"kernel k(X: f32[H, K, G, CPG], Y: out f32[{text}]) {{\n  Y[i] = 0.0\n}}\n")
        assert dim_str(m.kernels[0].param("Y").dims[0]) == want


def test_the_builder_takes_the_same_dim_text() -> None:
    kb = builder.KernelBuilder("crop")
    x = kb.view("X", "f32", "M", "N")
    y = kb.view("Y", "f32", "M - 2", "N - 2", access="out")
    i, j = builder.idx("i", "j")
    kb.assign(y[i, j], x[i + 1, j + 1])
    built = builder.module(kb)
    assert built.kernels[0].param("Y").dims == _module().kernel("crop").param("Y").dims
    kir.verify(built)


@pytest.mark.parametrize("name", NAMES)
def test_the_kernels_verify_and_match_the_reference_after_optimization(name) -> None:
    module = _only(_module(), name)
    kir.verify(module)
    result = optimize(construct(module), target="sm90")
    ir.verify(result.program)
    assert_matches_reference(module, result.program, seeds=(3, 4), lo=1, hi=9)


def test_random_sizes_keep_every_dim_positive() -> None:
    module = _only(_module(), "crop")
    for seed in range(20):
        ins = random_inputs(module, "crop", seed, lo=1, hi=3)
        assert ins["X"].shape[0] >= 3 and ins["X"].shape[1] >= 3 and min(ins["Y"].shape) >= 1


def test_the_evaluator_checks_an_arithmetic_dim_against_the_array() -> None:
    module = _only(_module(), "conv1d_valid")
    x, k = np.ones((2, 7), np.float32), np.ones(3, np.float32)
    out = kir.evaluate(module, "conv1d_valid", {"X": x, "K": k})
    assert out["Y"].shape == (2, 5) and np.all(out["Y"] == 3.0)
    with pytest.raises(KirEvalError, match=r"dims.kir:1:46: axis 1 of 'Y' has size 6 but its declared extent "
                                           r"H - 2 is 5"):
        kir.evaluate(module, "conv1d_valid", {"X": x, "K": k, "Y": np.zeros((2, 6), np.float32)})
    with pytest.raises(KirEvalError, match=r"axis 1 of 'Y' would have H - 2 = -1 elements with H=1"):
        kir.evaluate(module, "conv1d_valid", {"X": np.ones((2, 1), np.float32), "K": k})


@pytest.mark.parametrize("text,line,col,fragments", [
    # the read X[n, i + k] with i < H - 1 and k < 3 runs past H
    ("kernel k(X: f32[N, H], K: f32[3], Y: out f32[N, H - 1]) {\n  Y[n, i] = sum(k: X[n, i + k] * K[k])\n}\n",
     2, 25, ["out-of-domain subscript: i + k", "at or above H on X axis 1"]),
    # 2*i + 1 for i < (H + 1) // 2 reaches H when H is odd
    ("kernel k(X: f32[N, H], Y: out f32[N, (H + 1) // 2]) {\n  Y[n, i] = max(k in 0..2: X[n, 2*i + k])\n}\n",
     2, 33, ["out-of-domain subscript: 2 * i + k", "on X axis 1"]),
    # c // CPG with c over G*CPG + 1 channels reaches G
    ("kernel k(X: f32[N, G*CPG + 1], M: f32[N, G], Y: out f32[N, G*CPG + 1], Z: out f32[N, G*CPG]) {\n"
     "  Y[n, c] = X[n, c] - M[n, c // CPG]\n  Z[n, c] = 0.0\n}\n",
     2, 28, ["out-of-domain subscript: c // CPG", "at or above G on M axis 1"]),
    # H appears in no whole dim or product: nothing determines it (dim errors point at the view parameter)
    ("kernel k(X: f32[N], Y: out f32[H - 2]) {\n  Y[i] = 0.0\n}\n",
     1, 21, ["shape symbol 'H' cannot be determined", "dimension H - 2 of 'Y'", "determines no symbol"]),
    ("kernel k(X: f32[N], Y: out f32[N // 0]) {\n  Y[i] = 0.0\n}\n", 1, 21, ["divides by 0"]),
    # Y[m, 1] on a size-1 axis is out of range; Y[m, 0] on a size-2 axis writes half the view
    ("kernel k(X: f32[M, N], Y: out f32[M, 2]) {\n  Y[m, 0] = sum(n: X[m, n])\n}\n",
     2, 3, ["out view 'Y' is updated before it is fully written"]),
])
def test_errors_say_where_and_what(text, line, col, fragments) -> None:
    with pytest.raises(KirError) as info:
        kir.verify(kir.parse(text, filename="bad.kir"))
    msg = str(info.value)
    assert msg.startswith(f"bad.kir:{line}:{col}: "), msg
    for f in fragments:
        assert f in msg, (f, msg)


@pytest.mark.parametrize("text,col,fragment", [
    ("kernel k(X: f32[H - -1], Y: out f32[H]) {\n  Y[i] = 0.0\n}\n", 21, "expected a dimension"),
    ("kernel k(X: f32[(H - 1], Y: out f32[H]) {\n  Y[i] = 0.0\n}\n", 23, "an operator (+ - * //) or ')'"),
    ("kernel k(X: f32[H" + " + 1" * 40 + "], Y: out f32[H]) {\n  Y[i] = 0.0\n}\n", 17,
     "dimension has 40 operators (at most 32)"),
])
def test_dim_syntax_errors_are_located(text, col, fragment) -> None:
    with pytest.raises(ParseError) as info:
        kir.parse(text, filename="bad.kir")
    assert str(info.value).startswith(f"bad.kir:1:{col}: ") and fragment in str(info.value), str(info.value)


def test_specializing_a_symbol_folds_the_arithmetic_dims() -> None:
    from intent_eqsat.kir.specialize import specialize

    module = specialize(_only(_module(), "conv2d_s2p1"), "conv2d_s2p1", {"H": 9})
    y = module.kernels[0].param("Y")
    assert y.dims[2] == (5,) and dim_str(y.dims[3]) == "(W + 2 - 3) // 2 + 1"
    kir.verify(module)
