"""Reference-evaluator semantics beyond the corpus: dtype contract, predicates, runtime errors, scans, regions."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from intent_eqsat.errors import KirEvalError, SourceLocation
from intent_eqsat.kir import evaluate, parse


def run(text: str, kernel: str = "k", float64: bool = False, **inputs):
    return evaluate(parse(text, "t.kir"), kernel, inputs, float64=float64)


def test_where_skips_out_of_bounds_loads():
    text = "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i + 1] where i + 1 < N else -1.0\n}\n"
    np.testing.assert_array_equal(run(text, X=np.arange(4.0))["Y"], [1, 2, 3, -1])


def test_gather_out_of_range_is_a_located_runtime_error():
    text = "kernel k(E: f32[V], idx: i64[N], Y: out f32[N]) {\n  Y[i] = E[idx[i]]\n}\n"
    with pytest.raises(KirEvalError) as info:
        run(text, E=np.zeros(3), idx=np.array([0, 3]))
    assert info.value.location == SourceLocation("t.kir", 2, 12)
    assert "subscript 0 takes value 3 outside 0..3" in info.value.message


def test_guarded_gather_is_fine():
    text = ("kernel k(E: f32[V], idx: i64[N], Y: out f32[N]) {\n"
            "  Y[i] = E[idx[i]] where idx[i] < V else 0.0\n}\n")
    np.testing.assert_array_equal(run(text, E=np.ones(3), idx=np.array([0, 7]))["Y"], [1, 0])


def test_integer_division_floor_semantics_and_zero():
    text = ("kernel k(A: i32[N], B: i32[N], Q: out i32[N], R: out i32[N]) {\n"
            "  Q[i] = A[i] // B[i]\n  R[i] = A[i] % B[i]\n}\n")
    out = run(text, A=np.array([7, -7, 7, -7]), B=np.array([2, 2, -2, -2]))
    np.testing.assert_array_equal(out["Q"], [3, -4, -4, 3])
    np.testing.assert_array_equal(out["R"], [1, 1, -1, -1])
    with pytest.raises(KirEvalError, match="integer division by zero"):
        run(text, A=np.array([1]), B=np.array([0]))


def test_collide_unique_is_checked():
    text = "kernel k(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n  Y[idx[i]] = X[i] collide unique\n}\n"
    np.testing.assert_array_equal(run(text, X=np.array([1.0, 2.0]), idx=np.array([1, 0]), Y=np.zeros(2))["Y"],
                                  [2, 1])
    with pytest.raises(KirEvalError, match="'collide unique' violated"):
        run(text, X=np.array([1.0, 2.0]), idx=np.array([1, 1]), Y=np.zeros(2))


def test_scatter_max_and_collide_any():
    text = ("kernel k(X: f32[N], idx: i64[N], Y: out f32[R], Z: out f32[R]) {\n"
            "  Y[r] = -inf\n  Y[idx[i]] max= X[i] collide max\n"
            "  Z[r] = 0.0\n  Z[idx[i]] = X[i] collide any\n}\n")
    out = run(text, X=np.array([1.0, 5.0, 3.0]), idx=np.array([0, 0, 2]), R=3)
    np.testing.assert_array_equal(out["Y"], [5, -np.inf, 3])
    assert out["Z"][0] in (1.0, 5.0) and out["Z"][2] == 3.0


def test_f16_sum_accumulates_in_f32_but_f16_ops_round_each_time():
    text = ("kernel k(X: f16[3], S: out f16[1], T: out f16[1]) {\n"
            "  S[z] = sum(i: X[i])\n"
            "  T[z] = X[0] + X[1] + X[2]\n}\n")
    X = np.array([2048, 1, 1], np.float16)  # 2048 + 1 rounds back to 2048 in f16
    out = run(text, X=X)
    assert out["S"][0] == 2050 and out["T"][0] == 2048
    assert run(text, float64=True, X=X)["T"][0] == 2050


def test_bf16_and_casts():
    text = ("kernel k(X: f32[N], B: out bf16[N], I: out i32[N], C: out bool[N]) {\n"
            "  B[i] = cast<bf16>(X[i])\n  I[i] = cast<i32>(X[i])\n  C[i] = cast<bool>(X[i])\n}\n")
    X = np.array([1.00390625, -2.7, 0.0], np.float32)
    out = run(text, X=X)
    assert out["B"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out["B"], X.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(out["I"], [1, -2, 0])
    np.testing.assert_array_equal(out["C"], [True, True, False])


def test_weak_literals_keep_the_operand_dtype():
    text = "kernel k(X: f16[N], Y: out f16[N]) {\n  Y[i] = X[i] * 3 + 0.5\n}\n"
    np.testing.assert_array_equal(run(text, X=np.array([1, 2], np.float16))["Y"], np.array([3.5, 6.5], np.float16))


def test_argmin_nan_and_ties_and_empty():
    text = ("kernel k(X: f32[M, N], I: out i64[M], J: out i64[M]) {\n"
            "  I[m] = argmin(n: X[m, n])\n  J[m] = argmax(n: X[m, n])\n}\n")
    X = np.array([[3, 1, 1, 2], [2, np.nan, 0, np.nan]], np.float32)
    out = run(text, X=X)
    np.testing.assert_array_equal(out["I"], [1, 1])
    np.testing.assert_array_equal(out["J"], [0, 1])
    empty = run(text, X=np.zeros((2, 0), np.float32))
    np.testing.assert_array_equal(empty["I"], [-1, -1])


def test_empty_reductions_give_identities():
    text = ("kernel k(X: f32[M, N], S: out f32[M], P: out f32[M], A: out f32[M], B: out f32[M]) {\n"
            "  S[m] = sum(n: X[m, n])\n  P[m] = prod(n: X[m, n])\n  A[m] = max(n: X[m, n])\n"
            "  B[m] = min(n: X[m, n])\n}\n")
    out = run(text, X=np.zeros((1, 0)))
    assert (out["S"][0], out["P"][0], out["A"][0], out["B"][0]) == (0, 1, -np.inf, np.inf)


def test_integer_max_identity_and_wraparound():
    text = "kernel k(X: i8[N], A: out i8[1], S: out i8[1]) {\n  A[z] = max(i: X[i])\n  S[z] = sum(i: X[i])\n}\n"
    out = run(text, X=np.array([-100, -120], np.int8))
    assert out["A"][0] == -100
    assert out["S"][0] == np.int8(36)  # -220 wraps


def test_multi_index_reduction_and_explicit_ranges():
    text = "kernel k(X: f32[N, 3], Y: out f32[1]) {\n  Y[z] = sum(i in 1..N, j in 0..2: X[i, j])\n}\n"
    X = np.arange(12.0).reshape(4, 3)
    assert run(text, X=X)["Y"][0] == X[1:, :2].sum()


def test_scan_variants_with_max_and_exclusive_reverse():
    text = ("kernel k(X: f32[N], A: out f32[N], B: out f32[N]) {\n"
            "  A[j] = cummax(j: X[j])\n  B[j] = cumsum(j: X[j], exclusive, reverse)\n}\n")
    X = np.array([1.0, 3.0, 2.0, 5.0])
    out = run(text, X=X)
    np.testing.assert_array_equal(out["A"], [1, 3, 3, 5])
    np.testing.assert_array_equal(out["B"], [10, 7, 5, 0])


def test_reverse_scan_keeps_operands_in_index_order():
    # A non-commutative combiner: combine(l, r) keeps l (the earlier element), so a reverse inclusive scan
    # yields x[j] itself and a forward scan yields x[0].
    text = ("combiner first(l: f32, r: f32) associative identity nan {\n  select(l != l, r, l)\n}\n"
            "kernel k(X: f32[N], F: out f32[N], R: out f32[N]) {\n"
            "  F[j] = scan(j: X[j], combine=first)\n  R[j] = scan(j: X[j], combine=first, reverse)\n}\n")
    out = run(text, X=np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(out["F"], [4, 4, 4])
    np.testing.assert_array_equal(out["R"], [4, 5, 6])


def test_reduce_with_named_combiner():
    text = ("combiner sumsq(a: (f32, f32), b: (f32, f32)) associative commutative identity (0.0, 0.0) {\n"
            "  (a.0 + b.0, a.1 + b.1)\n}\n"
            "kernel k(X: f32[M, N], S: out f32[M], Q: out f32[M]) {\n"
            "  let r[m] = reduce(n: (X[m, n], X[m, n] * X[m, n]), combine=sumsq)\n"
            "  S[m] = r[m].0\n  Q[m] = r[m].1\n}\n")
    X = np.arange(6.0).reshape(2, 3)
    out = run(text, X=X)
    np.testing.assert_array_equal(out["S"], X.sum(1))
    np.testing.assert_array_equal(out["Q"], (X * X).sum(1))


def test_region_fold_chunk_boundaries_and_explicit_range():
    text = ("kernel k(X: f32[M, N], Y: out f32[M], C: out i64[M]) {\n"
            "  Y[m] = region_fold(n in 1..N by 3, combine=max) {\n    sum(n: X[m, n])\n  }\n"
            "  C[m] = region_fold(n by 3, combine=add) {\n    sum(n: cast<i64>(X[m, n] > -100.0))\n  }\n}\n")
    X = np.arange(16.0).reshape(2, 8)
    out = run(text, X=X, float64=True)
    # chunks of n in 1..8: [1,2,3], [4,5,6], [7]: max of the chunk sums.
    np.testing.assert_array_equal(out["Y"], [max(X[m, 1:4].sum(), X[m, 4:7].sum(), X[m, 7:].sum()) for m in range(2)])
    np.testing.assert_array_equal(out["C"], [8, 8])


def test_region_scan_exclusive_carry_and_emit_position():
    text = ("kernel k(X: f32[N], Y: out f32[N]) {\n"
            "  Y[j] = region_scan(j by 2, combine=add) {\n    sum(j: X[j])\n  } emit(s) {\n"
            "    s * 100.0 + cast<f32>(j)\n  }\n}\n")
    out = run(text, X=np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(out["Y"], [0, 1, 302, 303, 1004])


def test_snapshot_semantics_of_inout():
    text = "kernel k(X: inout f32[N]) {\n  X[i] = X[N - 1 - i]\n}\n"
    np.testing.assert_array_equal(run(text, X=np.arange(5.0))["X"], [4, 3, 2, 1, 0])


def test_zero_dim_views_and_0d_lets():
    text = "kernel k(X: f32[N], T: out f32[]) {\n  let s = sum(i: X[i])\n  T[] = s * 2.0\n}\n"
    out = run(text, X=np.arange(4.0))
    assert out["T"].shape == () and out["T"] == 12.0


def test_input_errors_are_located():
    text = "kernel k(X: f32[N, N], H: out i32[B]) {\n  H[b] = 0\n}\n"
    with pytest.raises(KirEvalError, match="missing input view 'X'"):
        run(text)
    with pytest.raises(KirEvalError, match="axis 1 of 'X' has size 3 but its declared extent N is 2"):
        run(text, X=np.zeros((2, 3)), B=1)
    with pytest.raises(KirEvalError, match=r"shape symbol\(s\) B"):
        run(text, X=np.zeros((2, 2)))
    with pytest.raises(KirEvalError, match="no parameter or shape symbol named 'Q'"):
        run(text, X=np.zeros((2, 2)), B=1, Q=3)


def test_product_dims_bind_the_unknown_factor():
    text = "kernel k(X: f32[G*C], Y: out f32[G]) {\n  Y[g] = X[g*C]\n}\n"
    np.testing.assert_array_equal(run(text, X=np.arange(6.0), G=3)["Y"], [0, 2, 4])
    with pytest.raises(KirEvalError, match="not a multiple of 4"):
        run(text, X=np.arange(6.0), G=4)
