"""Text round trip: parse(print(m)) == m and print is a fixed point, on the corpus and on random trees."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intent_eqsat.kir import model as m
from intent_eqsat.kir import builder as kb
from intent_eqsat.kir import parse, print_kir
from intent_eqsat.kir.ids import index_by_id

from .kir_testlib import CORPUS_FILES


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_round_trip(path):
    text = path.read_text()
    assert text.startswith("#"), "each corpus file starts with a comment line"
    module = parse(text, str(path))
    printed = print_kir(module)
    again = parse(printed, "printed.kir")
    assert again == module
    assert print_kir(again) == printed
    assert len(module.kernels) == 1, "one kernel per corpus file"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_corpus_ids_are_stable_unique_and_located(path):
    a = parse(path.read_text(), str(path))
    b = parse(path.read_text(), "other-name.kir")
    ids_a = [n.id for n in m.walk(a)]
    assert ids_a == [n.id for n in m.walk(b)]
    assert all(ids_a) and len(set(ids_a)) == len(ids_a)
    for node in m.walk(a):
        assert node.loc is not None and node.loc.file == str(path) and node.loc.line >= 1
    index = index_by_id(a)
    k = a.kernels[0]
    assert index[k.name] is k
    assert index[f"{k.name}.s0"] is k.body[0]


def test_id_scheme_example():
    mod = parse("kernel gemm(A: f16[M, K], B: f16[K, N], C: out f16[M, N]) {\n"
                "  C[m, n] = sum(k: A[m, k] * B[k, n])\n}\n")
    s = mod.kernel("gemm").body[0]
    assert s.id == "gemm.s0"
    assert [x.id for x in s.subs] == ["gemm.s0.e0", "gemm.s0.e1"]
    red = s.value
    assert isinstance(red, m.Reduce) and red.id == "gemm.s0.e2"
    assert red.binds[0].id == "gemm.s0.e3" and red.body.id == "gemm.s0.e4"
    assert mod.kernel("gemm").params[2].id == "gemm.p2"


TRICKY = [
    "a - (b - c)", "(a - b) - c", "a / (b * c)", "-(1)", "-1", "- -x", "-(-1)", "a - -1", "-1 * x", "-(a * b)",
    "!(a < b) && c", "!!c", "!a", "(a where c else b) + 1", "a where c else b where d else e",
    "(a where c else b) where d else e", "x.0", "(-1).0", "(x.0).1", "a % b // c", "a < (b < c)", "(a < b) == c",
    "a || b && c", "(a || b) && c", "max(a, b)", "max(k: a)", "max(k, j: a)", "max(k in 0..N - 1: a)",
    "sum(k in 2*N..N*M: x)", "cast<bf16>(-x)", "select(c, (1, 2), (3, 4))", "-inf", "inf", "nan", "1e-05",
    "1e+20", "-0.0", "cumsum(j: x, exclusive, reverse)", "scan(j: x, combine=c, reverse)", "reduce(k: x, combine=c)",
    "X[i // 2, (i + 1) % 3, idx[i]]", "argmin(k: -x)",
]


@pytest.mark.parametrize("expr", TRICKY)
def test_expression_round_trip(expr):
    text = f"kernel k(Y: out f32[N]) {{\n  Y[i] = {expr}\n}}\n"
    mod = parse(text)
    printed = print_kir(mod)
    assert parse(printed) == mod
    assert print_kir(parse(printed)) == printed


def test_canonical_text_is_stable():
    text = "kernel k(X: f32[N],Y: out f32[N]){Y[i]=(X[i]+1.50)*2 # c\n}"
    assert print_kir(parse(text)) == "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = (X[i] + 1.5) * 2\n}\n"


# ---------------------------------------------------------------------- random trees through the builder

NAMES = st.sampled_from(["a", "b", "x", "N"])
LITS = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -2.25, 1e-7, float("inf"), float("-inf")]), st.booleans())


def _exprs() -> st.SearchStrategy[kb.Ex]:
    leaf = st.one_of(NAMES.map(kb.name), LITS.map(kb.lit))

    def extend(children: st.SearchStrategy[kb.Ex]) -> st.SearchStrategy[kb.Ex]:
        binop = st.sampled_from(sorted(m.BINARY_OPS))
        return st.one_of(
            st.tuples(binop, children, children).map(lambda t: kb.Ex(m.Binary(op=t[0], a=t[1].node, b=t[2].node))),
            children.map(lambda c: kb.Ex(m.Unary(op="neg", x=c.node))),
            children.map(lambda c: kb.Ex(m.Unary(op="not", x=c.node))),
            st.tuples(children, children, children).map(lambda t: kb.where(*t)),
            st.tuples(children, st.integers(0, 2)).map(lambda t: t[0].proj(t[1])),
            st.tuples(children, children).map(lambda t: kb.maximum(*t)),
            st.tuples(children, children).map(lambda t: kb.tuple_(*t)),
            children.map(lambda c: kb.cast("f16", c)),
            children.map(lambda c: kb.sum_(kb.bind("k", 0, "N"), c)),
            children.map(lambda c: kb.cumsum("j", c, exclusive=True)),
            st.tuples(children, children).map(lambda t: kb.Tensor("X")[t[0], t[1]]),
        )

    return st.recursive(leaf, extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_exprs())
def test_random_expression_trees_round_trip(e):
    k = kb.KernelBuilder("k")
    Y = k.view("Y", "f32", "N", access="out")
    k.assign(Y[kb.idx("i")], e)
    mod = kb.module(k)
    printed = print_kir(mod)
    assert parse(printed) == mod, printed
