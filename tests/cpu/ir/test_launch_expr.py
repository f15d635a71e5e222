"""LaunchExpr (SPEC IR-3.1): text round trip, evaluation from ABI values, sympy simplification, equivalence, and
rejection of everything a launch wrapper could not evaluate (device loads, kernel SSA values, floats, helpers)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intent_eqsat.errors import IntentError, LaunchExprError, ParseError
from intent_eqsat.ir import parse_module
from intent_eqsat.ir.core import Value
from intent_eqsat.ir.launch import (BinOp, Const, Dim, Not, Select, Stride, Sym, Tuple, TupleGet, ViewMeta, as_le,
                                    ceil_div, equivalent, evaluate, format_launch_expr, free_symbols, from_sympy,
                                    le_max, le_min, parse_launch_expr, product, simplify, to_sympy, total,
                                    views_read)
from intent_eqsat.ir.types import ScalarType, ViewType

from .strategies import int_launch_exprs, launch_exprs

ROOT = Path(__file__).resolve().parents[3]
SYMBOLS = ["M", "N", "K", "BM", "BN"]
VIEWS = [("A", 2), ("B", 1)]
P = parse_launch_expr


# ------------------------------------------------------------------------------------------------ text form

@pytest.mark.parametrize("text", [
    "ceil_div(M, BM)", "M + N * K", "(M + N) * K", "M - (N - K)", "M - N - K", "M // BM * BM", "M % (BM // 2)",
    "dim(A, 0) * stride(A, 1)", "select(M < 4, 1, 2)", "get(tuple(1, M), 1)", "tuple()", "!(M == N)", "!!true",
    "(-3) + M", "M * (-1)", "min(M, max(N, 3))", "true && false || M > 3", "M < N == K >= 2", "(M == N) < K",
    "M != N && !false",
    "ceil_div(M, BM) * ceil_div(N, BN)", "0 - M", "select(true, tuple(M, N), tuple(N, M))",
])
def test_canonical_text_is_a_fixed_point(text):
    assert format_launch_expr(P(text)) == text
    assert P(format_launch_expr(P(text))) == P(text)


@pytest.mark.parametrize("text, expected", [
    ("M+N*K", BinOp("+", Sym("M"), BinOp("*", Sym("N"), Sym("K")))),
    ("M - N - K", BinOp("-", BinOp("-", Sym("M"), Sym("N")), Sym("K"))),
    ("-3", Const(-3)),
    ("-M", BinOp("-", Const(0), Sym("M"))),
    ("((M))", Sym("M")),
    ("true", Const(True)),
    ("dim(A, 1)", Dim("A", 1)),
    ("stride(B, 0)", Stride("B", 0)),
    ("!M < N", BinOp("<", Not(Sym("M")), Sym("N"))),
    ("get(tuple(1, 2), 0)", TupleGet(Tuple((Const(1), Const(2))), 0)),
    ("a.b_c", Sym("a.b_c")),
    ("dim", Sym("dim")),  # a call name without a call is an ordinary symbol
])
def test_parse_structure(text, expected):
    assert P(text) == expected


@settings(max_examples=300, deadline=None)
@given(launch_exprs(SYMBOLS, VIEWS, max_leaves=12))
def test_print_parse_round_trip(e):
    text = format_launch_expr(e)
    assert P(text) == e
    assert format_launch_expr(P(text)) == text
    assert str(e) == text


def test_operator_sugar_and_helpers():
    M, BM = Sym("M"), Sym("BM")
    assert M + 1 == BinOp("+", M, Const(1))
    assert M - "N" == BinOp("-", M, Sym("N"))
    assert M * BM // 2 == BinOp("//", BinOp("*", M, BM), Const(2))
    assert ceil_div("M", "BM") == BinOp("ceil_div", M, BM)
    assert le_min(M, 3) == BinOp("min", M, Const(3)) and le_max(M, 3) == BinOp("max", M, Const(3))
    assert product([]) == Const(1) and total([]) == Const(0)
    assert product([M, BM, Const(2)]) == BinOp("*", BinOp("*", M, BM), Const(2))
    e = P("ceil_div(dim(A, 0), BM) + stride(B, 0) * N")
    assert free_symbols(e) == {"BM", "N"}
    assert views_read(e) == {"A", "B"}


# ----------------------------------------------------------------------------------------------- evaluation

def _abi_bindings(kernel, args: dict, params: dict) -> tuple[dict, dict]:
    """What a launch wrapper knows: parameters, by-value scalars, view shape symbols and view metadata."""
    symbols = dict(params)
    views = {}
    for a in kernel.abi:
        x = args[a.name]
        if isinstance(a.value.type, ViewType):
            arr = np.asarray(x)
            views[a.name] = ViewMeta(arr.shape, tuple(s // arr.itemsize for s in arr.strides))
            for ext, n in zip(a.value.type.shape, arr.shape):
                if isinstance(ext, Sym):
                    symbols[ext.name] = n
        else:
            symbols[a.name] = int(x)
    return symbols, views


def test_gemm_grid_evaluates_from_abi_values():
    m = parse_module((ROOT / "examples" / "gir" / "gemm.gir").read_text())
    (k,) = m.kernels
    args = {"A": np.zeros((100, 33), np.float16), "B": np.zeros((33, 70), np.float16),
            "C": np.zeros((100, 70), np.float16)}
    symbols, views = _abi_bindings(k, args, {"BM": 64, "BN": 32, "BK": 16})
    assert evaluate(k.space.grid, symbols, views) == 2 * 3
    assert [evaluate(e, symbols, views) for e in k.space.segments[0].extents] == [2, 3]
    # the same extents, written with host-visible view metadata instead of shape symbols
    assert evaluate(P("ceil_div(dim(A, 0), BM) * ceil_div(dim(B, 1), BN)"), symbols, views) == 6


def test_evaluate_scalars_dims_and_strides():
    views = {"A": ViewMeta((10, 7), (7, 1)), "B": ViewMeta((5,), (3,))}
    symbols = {"n": 9, "BM": 4, "flag": True}
    assert evaluate(P("ceil_div(n, BM)"), symbols) == 3
    assert evaluate(P("n // BM"), symbols) == 2 and evaluate(P("n % BM"), symbols) == 1
    assert evaluate(P("(-7) // 2"), {}) == -4 and evaluate(P("ceil_div(-7, 2)"), {}) == -3
    assert evaluate(P("dim(A, 0) * stride(A, 0) + stride(B, 0)"), symbols, views) == 73
    assert evaluate(P("select(flag && n > 8, dim(A, 1), 0)"), symbols, views) == 7
    assert evaluate(P("get(tuple(n, dim(B, 0)), 1)"), symbols, views) == 5
    assert evaluate(P("tuple(min(n, 3), max(n, 3))"), symbols) == (3, 9)
    assert evaluate(P("!(n == 9) || n != 9"), symbols) is False
    arr = np.zeros((4, 6), np.float32)[:, ::2]
    meta = ViewMeta(arr.shape, tuple(s // arr.itemsize for s in arr.strides))
    assert evaluate(P("dim(X, 1) * stride(X, 1) + stride(X, 0)"), {}, {"X": meta}) == 3 * 2 + 6


@pytest.mark.parametrize("text, symbols, views, message", [
    ("M + 1", {}, {}, "unbound symbol 'M'"),
    ("dim(A, 0)", {}, {}, "unknown view 'A'"),
    ("stride(A, 2)", {}, {"A": ViewMeta((1, 2), (2, 1))}, "axis 2 out of range"),
    ("M // (N - N)", {"M": 1, "N": 2}, {}, "division by zero"),
    ("ceil_div(M, 0)", {"M": 1}, {}, "division by zero"),
    ("M % 0", {"M": 1}, {}, "division by zero"),
    ("get(tuple(1), 3)", {}, {}, "bad tuple index"),
])
def test_evaluation_errors_are_launch_expr_errors(text, symbols, views, message):
    with pytest.raises(LaunchExprError, match=message) as info:
        evaluate(P(text), symbols, views)
    assert isinstance(info.value, IntentError)


# ------------------------------------------------------------------------------------------- simplification

@pytest.mark.parametrize("text, expected", [
    ("M + 0", "M"), ("M * BM // BM", "M"), ("M - M", "0"), ("(M * 2 + 2) // 2", "1 + M"),
    ("get(tuple(1, M + 0), 1)", "M"), ("select(M < N, M + 0, 2 * 3)", "select(M < N, M, 6)"),
    ("dim(A, 0) + dim(A, 0)", "2 * dim(A, 0)"), ("ceil_div(M, BM)", "ceil_div(M, BM)"),
    ("M % (N - N)", "M % 0"),  # sympy raises ZeroDivisionError on Mod(x, 0): the structure is kept
])
def test_simplify_examples(text, expected):
    assert format_launch_expr(simplify(P(text))) == expected


def _bindings():
    return st.fixed_dictionaries({
        "symbols": st.fixed_dictionaries({s: st.integers(1, 50) for s in SYMBOLS}),
        "dims": st.tuples(st.integers(1, 50), st.integers(1, 50), st.integers(1, 50)),
        "strides": st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
    })


def _eval(e, b):
    views = {"A": ViewMeta(b["dims"][:2], b["strides"][:2]), "B": ViewMeta(b["dims"][2:], b["strides"][2:])}
    return evaluate(e, b["symbols"], views)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_launch_exprs(SYMBOLS, VIEWS, max_leaves=7, small=True), st.lists(_bindings(), min_size=3, max_size=3))
def test_simplify_preserves_value(e, bindings):
    """evaluate(simplify(e)) == evaluate(e) for positive symbol/dim bindings and non-negative strides
    (bindings under which the original divides by zero are skipped)."""
    s = simplify(e)
    for b in bindings:
        try:
            want = _eval(e, b)
        except LaunchExprError:
            continue
        assert _eval(s, b) == want, (format_launch_expr(e), format_launch_expr(s), b)


def _commute(e):
    if isinstance(e, BinOp) and e.op in ("+", "*", "min", "max"):
        return BinOp(e.op, e.rhs, e.lhs)
    return BinOp("+", e, Const(0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_launch_exprs(SYMBOLS, VIEWS, max_leaves=5, small=True),
       int_launch_exprs(SYMBOLS, VIEWS, max_leaves=5, small=True),
       st.sampled_from(["commute", "simplify", "other"]), st.lists(_bindings(), min_size=3, max_size=3))
def test_equivalent_is_sound(a, other, how, bindings):
    """equivalent(a, b) implies equal values; commuting the root is always recognised."""
    b = {"commute": _commute(a), "simplify": simplify(a), "other": other}[how]
    values = []
    for bind in bindings:
        try:
            values.append((bind, _eval(a, bind)))
        except LaunchExprError:  # divides by zero under this binding
            continue
    if how == "commute" and values:  # (a literal 0 // 0 is nan to sympy, so equivalence is not provable)
        assert equivalent(a, b)
    if equivalent(a, b):
        for bind, want in values:
            assert _eval(b, bind) == want


@pytest.mark.parametrize("a, b, same", [
    ("M + N", "N + M", True), ("min(M, N)", "min(N, M)", True), ("M * BM // BM", "M", True),
    ("2 * (M + 1)", "M + M + 2", True), ("M // 2 * 2", "M", False), ("M", "N", False),
    ("dim(A, 0) + 1", "1 + dim(A, 0)", True), ("dim(A, 0)", "dim(A, 1)", False),
    ("M < N", "M < N", True),   # no integer form: structural comparison
    ("M < N", "N > M", False),  # ... which is conservative
    ("M % (N - N)", "M % 0", False),  # sympy cannot decide Mod(x, 0): structural, never an exception
])
def test_equivalent(a, b, same):
    assert equivalent(P(a), P(b)) is same


def test_sympy_translation_keeps_view_metadata_apart_from_symbols():
    e = P("dim(A, 0) + stride(A, 1) + dim__A__0")
    assert from_sympy(to_sympy(e)) == BinOp("+", BinOp("+", Dim("A", 0), Sym("dim__A__0")), Stride("A", 1)) or \
        equivalent(from_sympy(to_sympy(e)), e)
    assert free_symbols(from_sympy(to_sympy(e))) == {"dim__A__0"}
    assert views_read(from_sympy(to_sympy(e))) == {"A"}


# ------------------------------------------------------------------------------------------------ rejection

@pytest.mark.parametrize("text, col, message", [
    ("load(A, 0)", 1, "load(...) is not allowed in a LaunchExpr"),
    ("M + load(A, 0)", 5, "may not load device memory"),
    ("%x", 1, "cannot read the kernel SSA value %x"),
    ("ceil_div(M, %bm)", 13, "kernel SSA value %bm"),
    ("1.5", 1, "integer/bool only; found float 1.5"),
    ("M * 2.0", 5, "found float 2.0"),
    ("exp(M)", 1, "exp(...) is not allowed"),
    ("my_helper(M, N)", 1, "my_helper(...) is not allowed"),
    ("dim(A)", 6, "expected ','"),
    ("dim(true, 0)", 5, "expected a view name"),
    ("dim(A, -1)", 8, "an axis number"),
    ("M +", 4, "expected a LaunchExpr, found 'end of input'"),
    ("M N", 3, "unexpected 'N' after LaunchExpr"),
    ("(M", 3, "expected ')'"),
    ("M ** 2", 4, "expected a LaunchExpr"),
    ("M ^ 2", 3, "unexpected character '^'"),
])
def test_rejected_with_location(text, col, message):
    with pytest.raises(ParseError) as info:
        P(text, "launch.txt")
    err = info.value
    assert isinstance(err, IntentError)
    assert (err.location.file, err.location.line, err.location.col) == ("launch.txt", 1, col)
    assert message in err.message
    assert str(err).startswith(f"launch.txt:1:{col}: ")


def test_deep_nesting_is_a_located_error():
    with pytest.raises(ParseError) as info:
        P("(" * 5000 + "1" + ")" * 5000)
    assert info.value.location is not None and info.value.location.line == 1


@pytest.mark.parametrize("bad", [1.5, float("inf"), None, [1], (1, 2), {"M": 1}, object(), np.float32(2.0),
                                 b"M", Value("x", ScalarType("index")), 1j])
def test_as_le_rejects_other_objects(bad):
    with pytest.raises(LaunchExprError, match="not allowed in a LaunchExpr"):
        as_le(bad)


def test_as_le_accepts_allowed_leaves():
    assert as_le(3) == Const(3) and as_le(True) == Const(True) and as_le("M") == Sym("M")
    assert as_le(np.int64(5)) == Const(5) and type(as_le(np.int64(5)).value) is int
    assert as_le(np.bool_(True)) == Const(True)
    e = Dim("A", 0)
    assert as_le(e) is e


@pytest.mark.parametrize("make", [
    lambda: Const(1.5), lambda: Const("M"), lambda: Const(None),
    lambda: Sym("1x"), lambda: Sym("true"), lambda: Sym("%x"), lambda: Sym("a b"), lambda: Sym("M\n"),
    lambda: Dim("A", -1), lambda: Dim("A", 1.0), lambda: Stride("true", 0),
    lambda: BinOp("**", Sym("M"), Const(2)), lambda: BinOp("+", Sym("M"), 2), lambda: Not("M"),
    lambda: Select(Const(True), Const(1), 2.0), lambda: Tuple((Const(1), "M")), lambda: TupleGet(Tuple(()), -1),
])
def test_nodes_reject_what_ir_3_1_excludes(make):
    with pytest.raises(LaunchExprError):
        make()


def test_const_keeps_bool_and_int_apart():
    assert Const(True) != Const(1) and Const(False) != Const(0)
    assert Const(1) == Const(1) and hash(Const(1)) == hash(Const(1))
    assert len({Const(True), Const(1)}) == 2
    assert format_launch_expr(Const(True)) == "true" and format_launch_expr(Const(1)) == "1"
