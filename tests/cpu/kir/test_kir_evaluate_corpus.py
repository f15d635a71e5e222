"""The reference evaluator on every corpus kernel against independent NumPy formulas, on small odd shapes.

Float inputs are evaluated with ``float64=True`` where the point is the *formula*, and in the declared dtype where
the point is the dtype contract (f16/bf16 rounding, f32 accumulation)."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from intent_eqsat.kir import evaluate

from .kir_testlib import CORPUS_FILES, load

SHAPES = [(1, 1), (3, 5), (7, 4), (2, 9)]


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


def test_every_corpus_file_has_a_reference_test():
    tested = {n[len("test_"):] for n in globals() if n.startswith("test_")}
    stems = {p.stem for p in CORPUS_FILES}
    assert len(stems) >= 26
    assert stems <= tested, f"no reference test for {sorted(stems - tested)}"


@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (3, 5, 7), (4, 9, 2)])
def test_gemm(rng, M, K, N):
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = evaluate(load("gemm"), "gemm", {"A": A, "B": B})["C"]
    assert C.dtype == np.float16
    # Contract: f32 products of the f16 operands (exact), accumulated in f32 in member order, rounded once.
    prods = A[:, :, None].astype(np.float32) * B[None, :, :].astype(np.float32)
    acc = np.zeros((M, N), np.float32)
    for k in range(K):
        acc = acc + prods[:, k, :].astype(np.float32)
    np.testing.assert_array_equal(C, acc.astype(np.float16))
    C64 = evaluate(load("gemm"), "gemm", {"A": A, "B": B}, float64=True)["C"]
    np.testing.assert_array_equal(C64, (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float16))


def test_gemm_bias_relu(rng):
    A = rng.standard_normal((5, 3)).astype(np.float16)
    B = rng.standard_normal((3, 7)).astype(np.float16)
    bias = rng.standard_normal(7).astype(np.float32)
    C = evaluate(load("gemm_bias_relu"), "gemm_bias_relu", {"A": A, "B": B, "bias": bias}, float64=True)["C"]
    ref = np.maximum(A.astype(np.float64) @ B.astype(np.float64) + bias, 0)
    np.testing.assert_array_equal(C, ref.astype(np.float16))
    assert (C >= 0).all()


def test_linear(rng):
    X = rng.standard_normal((5, 9)).astype(np.float16)
    W = rng.standard_normal((4, 9)).astype(np.float16)               # [out_features, in_features]
    bias = rng.standard_normal(4).astype(np.float32)
    Y = evaluate(load("linear"), "linear", {"X": X, "W": W, "bias": bias}, float64=True)["Y"]
    close(Y, (X.astype(np.float64) @ W.astype(np.float64).T + bias).astype(np.float32))


def test_batched_gemm(rng):
    A, B = rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 4, 7))
    C = evaluate(load("batched_gemm"), "batched_gemm", {"A": A, "B": B}, float64=True)["C"]
    close(C, (A @ B).astype(np.float32))


def test_gemv(rng):
    A, x = rng.standard_normal((7, 5)), rng.standard_normal(5)
    close(evaluate(load("gemv"), "gemv", {"A": A, "x": x}, float64=True)["y"], A @ x)


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax(rng, shape):
    X = rng.standard_normal(shape).astype(np.float32) * 3
    Y = evaluate(load("softmax"), "softmax", {"X": X})["Y"]
    e = np.exp(X.astype(np.float64) - X.max(axis=1, keepdims=True))
    close(Y, e / e.sum(axis=1, keepdims=True), 1e-6)


def test_layernorm(rng):
    X, g, b = rng.standard_normal((3, 7)), rng.standard_normal(7), rng.standard_normal(7)
    Y = evaluate(load("layernorm"), "layernorm", {"X": X, "gamma": g, "beta": b, "eps": 1e-5}, float64=True)["Y"]
    mu = X.mean(axis=1, keepdims=True)
    ref = (X - mu) / np.sqrt(X.var(axis=1, keepdims=True) + 1e-5) * g + b
    close(Y, ref.astype(np.float32), 1e-6)


def test_rmsnorm(rng):
    X, w = rng.standard_normal((5, 9)).astype(np.float16), rng.standard_normal(9).astype(np.float16)
    Y = evaluate(load("rmsnorm"), "rmsnorm", {"X": X, "w": w, "eps": 1e-6})["Y"]
    x = X.astype(np.float64)
    ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w.astype(np.float64)
    assert Y.dtype == np.float16
    close(Y, ref, 2e-3)


@pytest.mark.parametrize("shape", SHAPES)
def test_row_sum(rng, shape):
    X = rng.standard_normal(shape)
    close(evaluate(load("row_sum"), "row_sum", {"X": X}, float64=True)["S"], X.sum(axis=1))


def test_row_max(rng):
    X = rng.standard_normal((4, 7)).astype(np.float32)
    X[2, 3] = np.nan
    R = evaluate(load("row_max"), "row_max", {"X": X})["R"]
    np.testing.assert_array_equal(R, np.max(X, axis=1))  # NaN propagates like np.max
    assert np.isnan(R[2])


def test_argmax(rng):
    X = rng.integers(0, 3, (6, 7)).astype(np.float32)  # many ties
    X[4, :] = [1, 2, np.nan, 2, np.nan, 9, 0]            # the first NaN wins
    X[5, :] = -np.inf
    I = evaluate(load("argmax"), "argmax", {"X": X})["I"]
    assert I.dtype == np.int64
    ref = []
    for row in X:
        nan = np.flatnonzero(np.isnan(row))
        ref.append(nan[0] if nan.size else int(np.flatnonzero(row == row.max())[0]))
    np.testing.assert_array_equal(I, ref)
    assert I[4] == 2 and I[5] == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_cumsum(rng, shape):
    X = rng.standard_normal(shape)
    close(evaluate(load("cumsum"), "cumsum", {"X": X}, float64=True)["Y"], np.cumsum(X, axis=1))


@pytest.mark.parametrize("shape", SHAPES)
def test_cumsum_exclusive(rng, shape):
    X = rng.standard_normal(shape)
    ref = np.cumsum(X, axis=1) - X
    close(evaluate(load("cumsum_exclusive"), "cumsum_exclusive", {"X": X}, float64=True)["Y"], ref)


@pytest.mark.parametrize("shape", SHAPES)
def test_cumsum_reversed(rng, shape):
    X = rng.standard_normal(shape)
    ref = np.flip(np.cumsum(np.flip(X, 1), axis=1), 1)
    close(evaluate(load("cumsum_reversed"), "cumsum_reversed", {"X": X}, float64=True)["Y"], ref)


def test_cumprod(rng):
    X = rng.uniform(0.5, 1.5, (3, 7))
    close(evaluate(load("cumprod"), "cumprod", {"X": X}, float64=True)["Y"], np.cumprod(X, axis=1))


def test_tuple_scan(rng):
    X = rng.integers(0, 4, (5, 9)).astype(np.float32)
    out = evaluate(load("tuple_scan"), "running_argmax", {"X": X})
    np.testing.assert_array_equal(out["V"], np.maximum.accumulate(X, axis=1))
    for i in range(5):
        for j in range(9):
            prefix = X[i, : j + 1]
            assert out["I"][i, j] == np.flatnonzero(prefix == prefix.max())[0]


def test_linear_recurrence(rng):
    A, B = rng.uniform(-1, 1, (3, 8)), rng.standard_normal((3, 8))
    H = evaluate(load("linear_recurrence"), "linear_recurrence", {"A": A, "B": B}, float64=True)["H"]
    ref = np.zeros_like(B)
    for i in range(3):
        h = 0.0
        for t in range(8):
            h = A[i, t] * h + B[i, t]
            ref[i, t] = h
    close(H, ref, 1e-6)


@pytest.mark.parametrize("n,bins", [(1, 1), (17, 5), (40, 3)])
def test_histogram(rng, n, bins):
    X = rng.integers(0, bins, n).astype(np.int32)
    H = evaluate(load("histogram"), "histogram", {"X": X, "B": bins})["H"]
    assert H.dtype == np.int32
    np.testing.assert_array_equal(H, np.bincount(X, minlength=bins))


def test_embedding_gather(rng):
    E, idx = rng.standard_normal((6, 3)), rng.integers(0, 6, 11)
    Out = evaluate(load("embedding_gather"), "embedding_gather", {"E": E, "idx": idx}, float64=True)["Out"]
    close(Out, E[idx])


def test_scatter_add(rng):
    Src, idx, Out0 = rng.standard_normal((9, 3)), rng.integers(0, 4, 9), rng.standard_normal((4, 3))
    Out = evaluate(load("scatter_add"), "scatter_add", {"Src": Src, "idx": idx, "Out": Out0}, float64=True)["Out"]
    ref = Out0.copy()
    np.add.at(ref, idx, Src)
    close(Out, ref)


def _attention_ref(Q, K, V, scale, causal):
    s = np.einsum("bhid,bhjd->bhij", Q, K) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ V


def test_attention(rng):
    Q, K, V = (rng.standard_normal(s).astype(np.float16) for s in [(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)])
    O = evaluate(load("attention"), "attention", {"Q": Q, "K": K, "V": V, "scale": 0.5}, float64=True)["O"]
    ref = _attention_ref(*(x.astype(np.float64) for x in (Q, K, V)), 0.5, causal=False)
    np.testing.assert_array_equal(O, ref.astype(np.float16))


def test_causal_attention(rng):
    Q, K, V = (rng.standard_normal((1, 2, 5, 3)).astype(ml_dtypes.bfloat16) for _ in range(3))
    O = evaluate(load("causal_attention"), "causal_attention", {"Q": Q, "K": K, "V": V, "scale": 0.7})["O"]
    assert O.dtype == ml_dtypes.bfloat16
    ref = _attention_ref(*(x.astype(np.float64) for x in (Q, K, V)), 0.7, causal=True)
    close(O.astype(np.float64), ref, 3e-2)
    # Row 0 sees only key 0: its output is exactly V[..., 0, :].
    np.testing.assert_array_equal(O[..., 0, :], V[..., 0, :])


def test_elementwise_chain(rng):
    X, R = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    Y = evaluate(load("elementwise_chain"), "elementwise_chain", {"X": X, "R": R, "a": 1.5, "b": -0.25},
                 float64=True)["Y"]
    t = X * 1.5 - 0.25
    erf = np.vectorize(math.erf)
    close(Y, 0.5 * t * (1 + erf(t / math.sqrt(2))) + R)


def test_transpose(rng):
    X = rng.standard_normal((3, 7)).astype(np.float32)
    np.testing.assert_array_equal(evaluate(load("transpose"), "transpose", {"X": X})["Y"], X.T)


def test_masked_fill(rng):
    X, mask = rng.standard_normal((4, 5)).astype(np.float32), rng.integers(0, 2, (4, 5)).astype(bool)
    Y = evaluate(load("masked_fill"), "masked_fill", {"X": X, "mask": mask, "value": -7.0})["Y"]
    np.testing.assert_array_equal(Y, np.where(mask, np.float32(-7.0), X))


def _conv_ref(X, Wt, s, d, p, OH, OW):
    N, C, H, W = X.shape
    F, _, KH, KW = Wt.shape
    Y = np.zeros((N, F, OH, OW))
    for n in range(N):
        for f in range(F):
            for h in range(OH):
                for w in range(OW):
                    acc = 0.0
                    for c in range(C):
                        for kh in range(KH):
                            for kw in range(KW):
                                y, x = h * s + kh * d - p, w * s + kw * d - p
                                if 0 <= y < H and 0 <= x < W:
                                    acc += X[n, c, y, x] * Wt[f, c, kh, kw]
                    Y[n, f, h, w] = acc
    return Y


def test_conv2d_3x3(rng):
    X, Wt = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((3, 3, 3, 3))
    Y = evaluate(load("conv2d_3x3"), "conv2d_3x3", {"X": X, "Wt": Wt}, float64=True)["Y"]
    close(Y, _conv_ref(X, Wt, 1, 1, 1, 5, 4))


@pytest.mark.parametrize("s,d,p,OH,OW", [(1, 1, 0, 3, 2), (2, 1, 1, 3, 3), (1, 2, 2, 5, 4)])
def test_conv2d_strided(rng, s, d, p, OH, OW):
    X, Wt = rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((3, 2, 3, 3))
    inputs = {"X": X, "Wt": Wt, "s": s, "d": d, "p": p, "OH": OH, "OW": OW}
    Y = evaluate(load("conv2d_strided"), "conv2d_strided", inputs, float64=True)["Y"]
    close(Y, _conv_ref(X, Wt, s, d, p, OH, OW))


def test_maxpool2d(rng):
    X = rng.standard_normal((2, 3, 6, 10)).astype(np.float32)
    Y = evaluate(load("maxpool2d"), "maxpool2d", {"X": X})["Y"]
    np.testing.assert_array_equal(Y, X.reshape(2, 3, 3, 2, 5, 2).max(axis=(3, 5)))


def test_group_mean(rng):
    X = rng.standard_normal((3, 12))
    Mean = evaluate(load("group_mean"), "group_mean", {"X": X, "G": 4}, float64=True)["Mean"]
    close(Mean, X.reshape(3, 4, 3).mean(axis=2))


@pytest.mark.parametrize("n", [1, 2, 7])
def test_stencil3(rng, n):
    X = rng.standard_normal(n)
    Y = evaluate(load("stencil3"), "stencil3", {"X": X}, float64=True)["Y"]
    padded = np.concatenate([[0.0], X, [0.0]])
    close(Y, 0.25 * padded[:-2] + 0.5 * X + 0.25 * padded[2:])


@pytest.mark.parametrize("N", [1, 4, 9, 13])
def test_region_fold(rng, N):
    S, V = rng.standard_normal((3, N)) * 4, rng.standard_normal((3, N))
    O = evaluate(load("region_fold"), "online_softmax_sum", {"S": S, "V": V}, float64=True)["O"]
    p = np.exp(S - S.max(axis=1, keepdims=True))
    close(O, (p * V).sum(axis=1) / p.sum(axis=1), 1e-6)


@pytest.mark.parametrize("N", [1, 4, 5, 11])
def test_region_scan(rng, N):
    X = rng.standard_normal((3, N))
    Y = evaluate(load("region_scan"), "chunked_cumsum", {"X": X}, float64=True)["Y"]
    close(Y, np.cumsum(X, axis=1))
