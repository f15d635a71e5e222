"""The Python builder produces exactly the trees (and ids) the parser produces for the same kernels."""
from __future__ import annotations

from intent_eqsat.kir import builder as kb
from intent_eqsat.kir import model as m
from intent_eqsat.kir import print_kir, verify

from .kir_testlib import load


def assert_same(built: m.KirModule, stem: str) -> None:
    parsed = load(stem)
    assert built == parsed, f"\nbuilt:\n{print_kir(built)}\nparsed:\n{print_kir(parsed)}"
    assert [n.id for n in m.walk(built)] == [n.id for n in m.walk(parsed)]
    verify(built)


def test_gemm():
    k = kb.KernelBuilder("gemm")
    A, B = k.view("A", "f16", "M", "K"), k.view("B", "f16", "K", "N")
    C = k.view("C", "f16", "M", "N", access="out")
    i, j, kk = kb.idx("m", "n", "k")
    k.assign(C[i, j], kb.cast("f16", kb.sum_(kk, kb.cast("f32", A[i, kk]) * kb.cast("f32", B[kk, j]))))
    assert_same(kb.module(k), "gemm")


def test_gemm_bias_relu():
    k = kb.KernelBuilder("gemm_bias_relu")
    A, B = k.view("A", "f16", "M", "K"), k.view("B", "f16", "K", "N")
    bias = k.view("bias", "f32", "N")
    C = k.view("C", "f16", "M", "N", access="out")
    i, j, kk = kb.idx("m", "n", "k")
    k.assign(C[i, j], kb.cast("f16", kb.maximum(
        kb.sum_(kk, kb.cast("f32", A[i, kk]) * kb.cast("f32", B[kk, j])) + bias[j], 0.0)))
    assert_same(kb.module(k), "gemm_bias_relu")


def test_softmax():
    k = kb.KernelBuilder("softmax")
    X, Y = k.view("X", "f32", "M", "N"), k.view("Y", "f32", "M", "N", access="out")
    i, j, kk = kb.idx("m", "n", "k")
    mx = k.let("mx", [i], kb.max_(j, X[i, j]))
    e = k.let("e", [i, j], kb.exp(X[i, j] - mx[i]))
    k.assign(Y[i, j], e[i, j] / kb.sum_(kk, e[i, kk]))
    assert_same(kb.module(k), "softmax")


def test_causal_attention():
    k = kb.KernelBuilder("causal_attention")
    Q = k.view("Q", "bf16", "Z", "H", "S", "D")
    K = k.view("K", "bf16", "Z", "H", "T", "D")
    V = k.view("V", "bf16", "Z", "H", "T", "D")
    scale = k.scalar("scale", "f32")
    O = k.view("O", "bf16", "Z", "H", "S", "D", access="out")
    z, h, i, j, d = kb.idx("z", "h", "i", "j", "d")
    s = k.let("s", [z, h, i, j], (kb.sum_(d, Q[z, h, i, d] * K[z, h, j, d]) * scale).where(j <= i, -float("inf")))
    mx = k.let("mx", [z, h, i], kb.max_(j, s[z, h, i, j]))
    p = k.let("p", [z, h, i, j], kb.exp(s[z, h, i, j] - mx[z, h, i]))
    k.assign(O[z, h, i, d], kb.cast("bf16", kb.sum_(j, p[z, h, i, j] * V[z, h, j, d]) / kb.sum_(j, p[z, h, i, j])))
    assert_same(kb.module(k), "causal_attention")


def test_conv2d_3x3():
    k = kb.KernelBuilder("conv2d_3x3")
    X = k.view("X", "f32", "N", "C", "H", "W")
    Wt = k.view("Wt", "f32", "F", "C", 3, 3)
    Y = k.view("Y", "f32", "N", "F", "H", "W", access="out")
    n, f, h, w, c, kh, kw = kb.idx("n", "f", "h", "w", "c", "kh", "kw")
    H, W = kb.name("H"), kb.name("W")
    y, x = h + kh - 1, w + kw - 1
    inside = (kb.lit(0) <= y) & (y < H) & (kb.lit(0) <= x) & (x < W)
    k.assign(Y[n, f, h, w], kb.sum_([c, kh, kw], (X[n, c, y, x] * Wt[f, c, kh, kw]).where(inside, 0.0)))
    assert_same(kb.module(k), "conv2d_3x3")


def test_maxpool_group_mean_stencil():
    k = kb.KernelBuilder("maxpool2d")
    X = k.view("X", "f32", "N", "C", "2*OH", "2*OW")
    Y = k.view("Y", "f32", "N", "C", "OH", "OW", access="out")
    n, c, h, w = kb.idx("n", "c", "h", "w")
    k.assign(Y[n, c, h, w], kb.max_([kb.bind("kh", 0, 2), kb.bind("kw", 0, 2)],
                                   X[n, c, 2 * h + kb.name("kh"), 2 * w + kb.name("kw")]))
    assert_same(kb.module(k), "maxpool2d")

    k = kb.KernelBuilder("group_mean")
    X = k.view("X", "f32", "N", "G*CPG")
    M = k.view("Mean", "f32", "N", "G", access="out")
    n, g, c = kb.idx("n", "g", "c")
    cpg = kb.name("CPG")
    k.assign(M[n, g], kb.sum_(kb.bind("c", 0, "CPG"), X[n, g * cpg + c]) / cpg)
    assert_same(kb.module(k), "group_mean")

    k = kb.KernelBuilder("stencil3")
    X, Y = k.view("X", "f32", "N"), k.view("Y", "f32", "N", access="out")
    i = kb.idx("i")
    k.assign(Y[i], 0.25 * X[i - 1].where(i >= 1, 0.0) + 0.5 * X[i]
             + 0.25 * X[i + 1].where(i + 1 < kb.name("N"), 0.0))
    assert_same(kb.module(k), "stencil3")


def test_scans_and_argmax():
    for stem, kwargs in [("cumsum", {}), ("cumsum_exclusive", {"exclusive": True}),
                         ("cumsum_reversed", {"reverse": True})]:
        k = kb.KernelBuilder(stem)
        X, Y = k.view("X", "f32", "M", "N"), k.view("Y", "f32", "M", "N", access="out")
        i, j = kb.idx("i", "j")
        k.assign(Y[i, j], kb.cumsum(j, X[i, j], **kwargs))
        assert_same(kb.module(k), stem)
    k = kb.KernelBuilder("cumprod")
    X, Y = k.view("X", "f32", "M", "N"), k.view("Y", "f32", "M", "N", access="out")
    i, j = kb.idx("i", "j")
    k.assign(Y[i, j], kb.scan(j, X[i, j], combine="mul"))
    assert_same(kb.module(k), "cumprod")
    k = kb.KernelBuilder("argmax")
    X, I = k.view("X", "f32", "M", "N"), k.view("I", "i64", "M", access="out")
    i, j = kb.idx("m", "n")
    k.assign(I[i], kb.argmax(j, X[i, j]))
    assert_same(kb.module(k), "argmax")


def test_tuple_scan_with_combiner():
    a, b = kb.name("a"), kb.name("b")
    maxloc = kb.combiner("maxloc", ("a", "b"), ("f32", "i64"), kb.tuple_(-float("inf"), 0),
                         kb.select(b.proj(0) > a.proj(0), b, a), associative=True)
    k = kb.KernelBuilder("running_argmax")
    X = k.view("X", "f32", "M", "N")
    V, I = k.view("V", "f32", "M", "N", access="out"), k.view("I", "i64", "M", "N", access="out")
    i, j = kb.idx("i", "j")
    r = k.let("r", [i, j], kb.scan(j, kb.tuple_(X[i, j], j), combine="maxloc"))
    k.assign(V[i, j], r[i, j].proj(0))
    k.assign(I[i, j], r[i, j].proj(1))
    assert_same(kb.module(maxloc, k), "tuple_scan")


def test_regions():
    a, b = kb.name("a"), kb.name("b")
    mx = kb.name("mx")
    sa, sb = kb.name("sa"), kb.name("sb")
    online = kb.combiner(
        "online", ("a", "b"), ("f32", "f32", "f32"), kb.tuple_(-float("inf"), 0.0, 0.0),
        kb.block(kb.tuple_(mx, a.proj(1) * sa + b.proj(1) * sb, a.proj(2) * sa + b.proj(2) * sb), lets=[
            ("mx", kb.maximum(a.proj(0), b.proj(0))),
            ("sa", kb.select(a.proj(0).eq(mx), 1.0, kb.exp(a.proj(0) - mx))),
            ("sb", kb.select(b.proj(0).eq(mx), 1.0, kb.exp(b.proj(0) - mx))),
        ]), associative=True, commutative=True)
    k = kb.KernelBuilder("online_softmax_sum")
    S, V = k.view("S", "f32", "M", "N"), k.view("V", "f32", "M", "N")
    O = k.view("O", "f32", "M", access="out")
    i, n, cm, st = kb.idx("m", "n", "cm", "st")
    summary = kb.block(kb.tuple_(cm, kb.sum_(n, kb.exp(S[i, n] - cm)), kb.sum_(n, kb.exp(S[i, n] - cm) * V[i, n])),
                       lets=[("cm", kb.max_(n, S[i, n]))])
    k.assign(O[i], kb.region_fold(n, 4, "online", summary, state="st", finalize=st.proj(2) / st.proj(1)))
    assert_same(kb.module(online, k), "region_fold")

    k = kb.KernelBuilder("chunked_cumsum")
    X, Y = k.view("X", "f32", "M", "N"), k.view("Y", "f32", "M", "N", access="out")
    i, j = kb.idx("i", "j")
    k.assign(Y[i, j], kb.region_scan(j, 4, "add", kb.sum_(j, X[i, j]), "carry",
                                     kb.name("carry") + kb.cumsum(j, X[i, j])))
    assert_same(kb.module(k), "region_scan")


def test_scatter_and_histogram():
    k = kb.KernelBuilder("histogram")
    X, H = k.view("X", "i32", "N"), k.view("H", "i32", "B", access="out")
    b, i = kb.idx("b", "i")
    k.assign(H[b], 0)
    k.assign(H[X[i]], 1, op="+=", collide="add")
    assert_same(kb.module(k), "histogram")

    k = kb.KernelBuilder("scatter_add")
    Src, idx = k.view("Src", "f32", "N", "D"), k.view("idx", "i64", "N")
    Out = k.view("Out", "f32", "R", "D", access="inout")
    i, d = kb.idx("i", "d")
    k.assign(Out[idx[i], d], Src[i, d], op="+=", collide="add")
    assert_same(kb.module(k), "scatter_add")


def test_negative_literals_fold_like_the_parser():
    assert (-kb.lit(2)).node == m.Num(text="-2", kind="int")
    assert (-kb.name("x")).node == m.Unary(op="neg", x=m.Name(name="x"))
    assert kb.lit(float("nan")).node == m.Num(text="nan", kind="float")


def test_hand_assembled_tree_without_ids_still_evaluates():
    import numpy as np

    from intent_eqsat.kir import evaluate

    k = kb.KernelBuilder("twice")
    X, Y = k.view("X", "f32", "N"), k.view("Y", "f32", "N", access="out")
    i = kb.idx("i")
    k.assign(Y[i], X[i] * 2.0)
    raw = m.KirModule(items=(k.build(),))  # no ids assigned
    np.testing.assert_array_equal(evaluate(raw, "twice", {"X": np.arange(3.0)})["Y"], [0, 2, 4])
