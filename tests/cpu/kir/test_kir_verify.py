"""KIR verifier: each illegal kernel is rejected with a KirError at the exact file:line:col of the offending token
and a message that says what is wrong; legal variants of the same kernels are accepted."""
from __future__ import annotations

import pytest

from intent_eqsat.errors import KirError
from intent_eqsat.kir import parse, verify

from .kir_testlib import rejects


def accepts(text: str) -> None:
    verify(parse(text, "ok.kir"))


# ----------------------------------------------------------------------------- the five required negatives


def test_reduction_index_also_free():
    rejects("kernel softmax(X: f32[M, N], Y: out f32[M, N]) {\n"
            "  Y[m, n] = X[m, n] / sum(n: X[m, n])\n"
            "}\n", 2, 27, "reduction index 'n' is also a free index of the statement")
    accepts("kernel softmax(X: f32[M, N], Y: out f32[M, N]) {\n  Y[m, n] = X[m, n] / sum(k: X[m, k])\n}\n")


def test_non_associative_builtin_combiner_in_scan():
    rejects("kernel k(X: f32[M, N], Y: out f32[M, N]) {\n"
            "  Y[i, j] = scan(j: X[i, j], combine=sub)\n"
            "}\n", 2, 38, "combiner 'sub' is not associative", "a scan needs an associative combiner")


def test_named_combiner_declared_associative_but_is_not():
    err = rejects("combiner diff(a: f32, b: f32) associative identity 0.0 {\n"
                  "  a - b\n"
                  "}\n"
                  "kernel k(X: f32[M, N], Y: out f32[M, N]) {\n"
                  "  Y[i, j] = scan(j: X[i, j], combine=diff)\n"
                  "}\n", 1, 31, "combiner 'diff' is declared associative but",
                  "combine(combine(x, y), z) != combine(x, combine(y, z)) for x=")
    assert "y=" in err.message and "z=" in err.message


def test_combiner_not_declared_associative():
    rejects("combiner plus(a: f32, b: f32) identity 0.0 {\n  a + b\n}\n"
            "kernel k(X: f32[M, N], Y: out f32[M, N]) {\n"
            "  Y[i, j] = scan(j: X[i, j], combine=plus)\n"
            "}\n", 5, 38, "combiner 'plus' is not declared associative")


def test_reduce_needs_commutative_combiner():
    rejects("combiner plus(a: f32, b: f32) associative identity 0.0 {\n  a + b\n}\n"
            "kernel k(X: f32[M, N], Y: out f32[M]) {\n"
            "  Y[i] = reduce(j: X[i, j], combine=plus)\n"
            "}\n", 5, 37, "combiner 'plus' is not declared commutative")


def test_wrong_identity():
    rejects("combiner plus(a: f32, b: f32) associative identity 1.0 {\n  a + b\n}\n"
            "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[j] = scan(j: X[j], combine=plus)\n}\n",
            1, 31, "declared associative with identity 1.0 but combine(identity, x)")


def test_shape_mismatch():
    rejects("kernel k(X: f32[M, N], bias: f32[K], Y: out f32[M, N]) {\n"
            "  Y[m, n] = X[m, n] + bias[n]\n"
            "}\n", 2, 28, "shape mismatch: index 'n' ranges over 0..N (from Y axis 1)",
            "subscripts bias axis 0, whose extent is K")


def test_shape_mismatch_between_inputs():
    rejects("kernel gemm(A: f32[M, K], B: f32[L, N], C: out f32[M, N]) {\n"
            "  C[m, n] = sum(k: A[m, k] * B[k, n])\n"
            "}\n", 2, 32, "shape mismatch: index 'k' ranges over 0..K (from A axis 1)", "B axis 0")


def test_out_of_domain_subscript_without_predicate():
    rejects("kernel shift(X: f32[N], Y: out f32[N]) {\n"
            "  Y[i] = X[i + 1]\n"
            "}\n", 2, 12, "out-of-domain subscript: i + 1 (values in [1, N])", "at or above N on X axis 0",
            "guard it with 'where'")
    accepts("kernel shift(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i + 1] where i + 1 < N else 0.0\n}\n")


def test_out_of_domain_below_zero_and_unknown_scalar_offset():
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i - 1]\n}\n", 2, 12,
            "out-of-domain subscript: i - 1", "below 0")
    rejects("kernel k(X: f32[N], off: i32, Y: out f32[N]) {\n  Y[i] = X[i + off]\n}\n", 2, 12,
            "out-of-domain subscript: i + off (values in [?, ?])")
    accepts("kernel k(X: f32[N], off: i32, Y: out f32[N]) {\n"
            "  Y[i] = X[i + off] where 0 <= i + off && i + off < N else 0.0\n}\n")


def test_guard_must_cover_both_sides():
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i - 1] where i < N else 0.0\n}\n", 2, 12,
            "below 0")


def test_scatter_without_collision_semantics():
    rejects("kernel k(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n"
            "  Y[idx[i]] += X[i]\n"
            "}\n", 2, 3, "scatter without collision semantics", "index 'i' cannot be recovered",
            "add 'collide add'")
    rejects("kernel k(X: f32[N], Y: out f32[4]) {\n  Y[j] = 0.0\n  Y[i % 4] = X[i]\n}\n", 3, 3,
            "scatter without collision semantics", "'collide any'")
    accepts("kernel k(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n  Y[idx[i]] += X[i] collide add\n}\n")
    accepts("kernel k(X: f32[N], Y: inout f32[2*N]) {\n  Y[2*i + 1] += X[i]\n}\n")


def test_collision_kind_must_match_update():
    rejects("kernel k(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n"
            "  Y[idx[i]] += X[i] collide max\n"
            "}\n", 2, 29, "'collide max' does not match the update '+='")
    rejects("kernel k(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n"
            "  Y[idx[i]] = X[i] collide add\n"
            "}\n", 2, 28, "'collide add' combines colliding updates")


# ------------------------------------------------------------------------------------- other checks


def test_unbound_index():
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n  Y[m] = X[m, k]\n}\n", 2, 15,
            "unbound index or unknown name 'k'")


def test_cannot_infer_extent():
    rejects("kernel k(Y: out f32[N]) {\n  Y[i] = sum(k: 1.0)\n}\n", 2, 14,
            "cannot infer the extent of index 'k'", "'k in 0..N'")
    accepts("kernel k(Y: out f32[N]) {\n  Y[i] = sum(k in 0..3: 1.0)\n}\n")


def test_type_errors():
    rejects("kernel k(X: f32[N], Y: out f16[N]) {\n  Y[i] = X[i] * 2.0\n}\n", 2, 10,
            "type mismatch: storing f32 into f16 view 'Y'; use cast<f16>(...)")
    rejects("kernel k(X: i32[N], Y: out i32[N]) {\n  Y[i] = X[i] / 2\n}\n", 2, 15, "'/' on integers")
    rejects("kernel k(X: i32[N], Y: out f32[N]) {\n  Y[i] = exp(X[i])\n}\n", 2, 10,
            "exp needs a floating-point argument, got i32")
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i] where X[i] else 0.0\n}\n", 2, 21,
            "the condition of 'where' must be bool, got f32")
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i + 0.5]\n}\n", 2, 12,
            "subscript 0 of 'X' must be an integer, got f32")
    rejects("kernel k(X: bool[N], Y: out f32[N]) {\n  Y[i] = X[i] + 1.0\n}\n", 2, 15, "'+' cannot combine bool and")


def test_rank_and_access_mode():
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n  Y[m] = X[m]\n}\n", 2, 10,
            "view 'X' has 2 dimension(s) but is subscripted with 1")
    rejects("kernel k(X: f32[N]) {\n}\n", 1, 1, "has no out or inout view")
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i]\n  X[i] = 0.0\n}\n", 3, 3,
            "cannot write input view 'X'")


def test_out_view_must_be_written_before_read_or_update():
    rejects("kernel k(X: i32[N], H: out i32[B]) {\n  H[X[i]] += 1 collide add\n}\n", 2, 3,
            "out view 'H' is updated before it is fully written")
    rejects("kernel k(X: f32[N], Y: out f32[N], Z: out f32[N]) {\n  Z[i] = Y[i]\n  Y[i] = X[i]\n}\n", 2, 10,
            "out view 'Y' is read before it is fully written")
    rejects("kernel k(X: f32[N], Y: out f32[N], Z: out f32[N]) {\n  Y[i] = X[i]\n}\n", 1, 36,
            "out view 'Z' is never written")


def test_scan_rules():
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n  Y[i] = sum(j: cumsum(j: X[i, j]))\n}\n", 2, 17,
            "a scan cannot be nested inside a reduction")
    rejects("kernel k(X: f32[M, N], Y: out f32[M, N]) {\n  Y[i, j] = cumsum(k: X[i, j])\n}\n", 2, 20,
            "scan index 'k' must be a free index of the statement")


def test_region_rules():
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n"
            "  Y[i] = region_fold(n by 4, combine=add) {\n"
            "    X[i, n]\n"
            "  }\n"
            "}\n", 3, 10, "chunk index 'n' may only be used inside a reduction over the chunk")
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n"
            "  Y[i] = 1.0 + region_fold(n by 4, combine=add) {\n"
            "    sum(n: X[i, n])\n"
            "  }\n"
            "}\n", 2, 16, "region_fold must be the whole right-hand side of a statement")
    rejects("kernel k(X: f32[M, N], Y: out f32[M]) {\n"
            "  Y[i] = region_fold(n by 4, combine=div) {\n"
            "    sum(n: X[i, n])\n"
            "  }\n"
            "}\n", 2, 38, "combiner 'div' is not associative: a region fold needs")


def test_names_must_be_distinct():
    rejects("kernel k(X: f32[N], X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i]\n}\n", 1, 21,
            "duplicate parameter 'X'")
    rejects("kernel k(X: f32[N], N: f32, Y: out f32[N]) {\n  Y[i] = X[i]\n}\n", 1, 10,
            "shape symbol 'N' of 'X' is also the name of a parameter")
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  let t[i] = X[i]\n  let t[i] = X[i]\n  Y[i] = t[i]\n}\n",
            3, 3, "let 't' is already defined")
    rejects("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[X] = 0.0\n}\n", 2, 5, "view 'X' needs subscripts")


def test_builtin_and_guarded_forms_accepted():
    accepts("kernel k(X: f32[N], Y: out f32[N]) {\n"
            "  Y[i] = (X[i - 1] where i >= 1 else 0.0) + (X[i + 1] where i + 1 < N else 0.0)\n}\n")
    accepts("kernel k(X: f32[N, G*C], Y: out f32[N, G, C]) {\n  Y[n, g, c] = X[n, g*C + c]\n}\n")
    accepts("kernel k(X: f32[N], Y: out f32[M]) {\n  Y[j] = X[j // 2] where j // 2 < N else 0.0\n}\n")
    accepts("kernel k(X: f32[2*N], Y: out f32[N]) {\n  Y[i] = X[2*i] + X[2*i + 1]\n}\n")
    accepts("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[(i + 1) % N]\n}\n")


def test_builder_made_errors_are_located_by_id():
    from intent_eqsat.kir import builder as kb

    k = kb.KernelBuilder("k")
    Y = k.view("Y", "f32", "N", access="out")
    i = kb.idx("i")
    k.let("sum", [i], kb.lit(1.0))
    k.assign(Y[i], 1.0)
    with pytest.raises(KirError) as info:
        verify(kb.module(k))
    assert info.value.location == "k.s0" and "let name 'sum' is a reserved word" in info.value.message
    k = kb.KernelBuilder("k")
    X, Y = k.view("X", "f33", "N"), k.view("Y", "f32", "N", access="out")
    k.assign(Y[i], 1.0)
    with pytest.raises(KirError, match="parameter 'X' has an invalid type"):
        verify(kb.module(k))
