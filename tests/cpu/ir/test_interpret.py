"""The NumPy interpreter on hand-written GPU programs (issue 2, "Must show"): each kernel is a text fixture under
``programs/`` and is compared with an independent NumPy reference on shapes that are not multiples of its block
sizes. Every fixture also round-trips through the printer and the parser."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from intent_eqsat.errors import IntentError, InterpretError
from intent_eqsat.ir import interpret, parse_module, print_module

PROGRAMS = Path(__file__).parent / "programs"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "gir"
FIXTURES = sorted(PROGRAMS.glob("*.gir")) + [EXAMPLES / "gemm.gir"]


def load(name: str):
    path = EXAMPLES / name if name == "gemm.gir" else PROGRAMS / name
    return parse_module(path.read_text(), str(path))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_round_trips(path: Path) -> None:
    module = parse_module(path.read_text(), str(path))
    text = print_module(module)
    again = parse_module(text)
    assert again == module
    assert print_module(again) == text


# (1) the seed GEMM ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("params", [{"BM": 16, "BN": 16, "BK": 8}, {"BM": 32, "BN": 8, "BK": 16}, {}],
                         ids=["16x16x8", "32x8x16", "defaults"])
def test_gemm_f16_inputs_f32_accumulator(params: dict[str, int]) -> None:
    rng = np.random.default_rng(1)
    M, K, N = 37, 23, 29
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    A_before = A.copy()
    out = interpret(load("gemm.gir"), "gemm", {"A": A, "B": B, "C": np.zeros((M, N), np.float16)}, params)
    assert set(out) == {"C"}
    C = out["C"]
    assert C.dtype == np.float16 and C.shape == (M, N)
    ref = A.astype(np.float32) @ B.astype(np.float32)
    # f16 output: within f16 rounding of the f32 result
    np.testing.assert_allclose(C.astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    assert np.array_equal(A, A_before)          # the caller's arrays are never modified


def test_gemm_accumulates_in_f32_not_f16() -> None:
    # 1 + 22 * 2**-11: an f16 accumulator stays at 1.0 (each 2**-11 is half an ulp and ties to even); the f32
    # accumulator keeps every term and the final cast rounds 1.0107421875 exactly
    K = 23
    A = np.ones((3, K), np.float16)
    B = np.full((K, 2), 2.0 ** -11, np.float16)
    B[0, :] = 1.0
    out = interpret(load("gemm.gir"), "gemm", {"A": A, "B": B, "C": np.zeros((3, 2), np.float16)},
                    {"BM": 16, "BN": 16, "BK": 8})
    assert np.all(out["C"] == np.float16(1.0 + 22 * 2.0 ** -11))
    f16_acc = np.float16(0.0)
    for k in range(K):
        f16_acc = np.float16(f16_acc + np.float16(A[0, k] * B[k, 0]))
    assert f16_acc == np.float16(1.0)


# (2) blocked row softmax -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("bc", [16, 32])
def test_blocked_row_softmax(bc: int) -> None:
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((6, 50)) * 4).astype(np.float32)
    X[1, :] = -1e30                                    # a row of huge negatives still normalises
    out = interpret(load("softmax.gir"), "softmax", {"X": X, "Y": np.zeros_like(X)}, {"BC": bc})
    x = X.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out["Y"], ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out["Y"].sum(axis=1), 1.0, rtol=1e-5)


# (3) inclusive / exclusive / reversed cumsum ------------------------------------------------------------------------

@pytest.mark.parametrize("params", [{"BR": 4, "BC": 8}, {"BR": 8, "BC": 16}])
def test_cumsum_inclusive_exclusive_reversed(params: dict[str, int]) -> None:
    rng = np.random.default_rng(3)
    X = rng.integers(-100, 100, (7, 29)).astype(np.int32)
    z = np.zeros_like(X)
    out = interpret(load("cumsum.gir"), "cumsum", {"X": X, "YI": z, "YE": z, "YR": z}, params)
    inclusive = np.cumsum(X, axis=1, dtype=np.int32)
    exclusive = np.concatenate([np.zeros((7, 1), np.int32), inclusive[:, :-1]], axis=1)
    suffix = np.cumsum(X[:, ::-1], axis=1, dtype=np.int32)[:, ::-1]
    assert np.array_equal(out["YI"], inclusive)
    assert np.array_equal(out["YE"], exclusive)
    assert np.array_equal(out["YR"], suffix)


# (4) histogram -------------------------------------------------------------------------------------------------

def test_histogram_ignores_out_of_range_and_tail() -> None:
    rng = np.random.default_rng(4)
    V = rng.integers(-4, 12, 53).astype(np.int32)     # 53 values, blocks of 16; bins [0, 8)
    H0 = rng.integers(0, 3, 8).astype(np.int32)        # readwrite: counts add to what is there
    out = interpret(load("histogram.gir"), "histogram", {"V": V, "H": H0}, {"BN": 16, "NB": 8})
    ref = H0 + np.bincount(V[(V >= 0) & (V < 8)], minlength=8)
    assert np.array_equal(out["H"], ref)


def test_histogram_bins_param_must_match_view() -> None:
    with pytest.raises(InterpretError, match="symbol NB"):
        interpret(load("histogram.gir"), "histogram", {"V": np.zeros(5, np.int32), "H": np.zeros(8, np.int32)},
                  {"NB": 16})


# (5) scatter-add ---------------------------------------------------------------------------------------------

def test_scatter_add_with_colliding_indices() -> None:
    rng = np.random.default_rng(5)
    N, M = 45, 7
    I = rng.integers(0, M, N).astype(np.int32)
    I[:10] = 3                                         # many collisions inside one program
    S = rng.standard_normal(N).astype(np.float32)
    O = rng.standard_normal(M).astype(np.float32)
    out = interpret(load("scatter_add.gir"), "scatter_add", {"I": I, "S": S, "O": O}, {"BN": 16})
    ref = O.copy()
    np.add.at(ref, I, S)
    np.testing.assert_allclose(out["O"], ref, rtol=1e-6, atol=1e-6)


# (6) argmax with ties and NaN ------------------------------------------------------------------------------------

def test_argmax_ties_and_nan_rules() -> None:
    rng = np.random.default_rng(6)
    X = rng.integers(0, 4, (9, 13)).astype(np.float32)   # small integers: many ties
    X[2, 5] = np.nan
    X[3, [4, 9]] = np.nan                                # two NaNs: propagate picks the first
    X[4, :] = 7.0                                        # all tied: lowest index 0
    X[5, :] = -np.inf                                    # all -inf: index 0, never a padded column
    X[6, 12] = 100.0                                     # max in the last real column
    X[7, 0] = np.nan                                     # NaN first
    z, zi = np.zeros(9, np.float32), np.zeros(9, np.int32)
    out = interpret(load("argmax.gir"), "argmax", {"X": X, "VP": z, "IP": zi, "VI": z, "II": zi},
                    {"BR": 4, "BC": 16})
    prop = np.argmax(X, axis=1)                          # NumPy's argmax: first NaN wins, ties lowest
    ign = np.nanargmax(X, axis=1)
    assert np.array_equal(out["IP"], prop)
    assert np.array_equal(out["II"], ign)
    assert out["IP"].dtype == np.int32
    np.testing.assert_array_equal(out["VP"], X[np.arange(9), prop])
    np.testing.assert_array_equal(out["VI"], X[np.arange(9), ign])
    assert np.isnan(out["VP"][[2, 3, 7]]).all() and not np.isnan(out["VI"]).any()
    assert out["IP"][3] == 4 and out["IP"][4] == 0 and out["IP"][5] == 0 and out["IP"][6] == 12


# (7) region fold: online softmax-weighted sum -----------------------------------------------------------------------

@pytest.mark.parametrize("bc", [16, 32])
def test_region_fold_online_softmax_weighted_sum(bc: int) -> None:
    rng = np.random.default_rng(7)
    S = (rng.standard_normal((5, 50)) * 5).astype(np.float32)
    S[0, 40:] += 30.0                                  # the max arrives late: earlier chunks are rescaled
    V = rng.standard_normal((5, 50)).astype(np.float32)
    out = interpret(load("online_softmax_fold.gir"), "online_softmax",
                    {"S": S, "V": V, "O": np.zeros(5, np.float32)}, {"BC": bc})
    s = S.astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = (p / p.sum(axis=1, keepdims=True) * V).sum(axis=1)
    np.testing.assert_allclose(out["O"], ref, rtol=1e-5, atol=1e-6)


# (8) region scan: chunked cumsum --------------------------------------------------------------------------------------

@pytest.mark.parametrize("bc", [8, 16])
def test_region_scan_chunked_cumsum(bc: int) -> None:
    rng = np.random.default_rng(8)
    X = rng.standard_normal((4, 29)).astype(np.float32)
    out = interpret(load("chunked_cumsum_scan.gir"), "chunked_cumsum",
                    {"X": X, "Y": np.zeros_like(X), "T": np.zeros(4, np.float32)}, {"BC": bc})
    np.testing.assert_allclose(out["Y"], np.cumsum(X.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["T"], X.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


# (9) two execution groups in one launch -------------------------------------------------------------------------------

def test_two_groups_in_one_launch() -> None:
    rng = np.random.default_rng(9)
    X = rng.standard_normal(37).astype(np.float32)
    W = rng.standard_normal((11, 19)).astype(np.float32)
    out = interpret(load("two_groups.gir"), "two_groups",
                    {"X": X, "Y": np.zeros_like(X), "W": W, "Z": np.zeros_like(W)}, {"B0": 16, "B1": 4, "B2": 8})
    assert np.array_equal(out["Y"], X)
    assert np.array_equal(out["Z"], 2 * W)


def test_two_groups_segment_boundaries() -> None:
    # N = 0: segment 0 is empty and every program belongs to segment 1
    W = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = interpret(load("two_groups.gir"), "two_groups",
                    {"X": np.zeros(0, np.float32), "Y": np.zeros(0, np.float32), "W": W, "Z": np.zeros_like(W)})
    assert np.array_equal(out["Z"], 2 * W) and out["Y"].shape == (0,)


# grouped program order ----------------------------------------------------------------------------------------------

def _triton_grouped(local: int, e0: int, e1: int, g: int) -> tuple[int, int]:
    in_group = g * e1
    first_m = (local // in_group) * g
    group_m = min(e0 - first_m, g)
    return first_m + (local % in_group) % group_m, (local % in_group) // group_m


@pytest.mark.parametrize("shape,g", [((23, 18), 2), ((23, 18), 4), ((9, 30), 3), ((16, 16), 1), ((5, 7), 8)])
def test_grouped_order_covers_every_tile_once(shape: tuple[int, int], g: int) -> None:
    rng = np.random.default_rng(10)
    X = rng.standard_normal(shape).astype(np.float32)
    bm = bn = 4
    tm, tn = -(-shape[0] // bm), -(-shape[1] // bn)
    args = {"X": X, "Y": np.zeros_like(X), "OWNER": np.zeros(shape, np.int64), "CNT": np.zeros((tm, tn), np.int32)}
    params = {"BM": bm, "BN": bn, "G": g}
    grouped = load("grouped_tiles.gir")
    text = (PROGRAMS / "grouped_tiles.gir").read_text().replace("order grouped(G)", "order row_major")
    row_major = parse_module(text)
    out_g = interpret(grouped, "tiles", args, params)
    out_r = interpret(row_major, "tiles", args, params)
    assert np.all(out_g["CNT"] == 1) and np.all(out_r["CNT"] == 1)
    assert np.array_equal(out_g["Y"], X) and np.array_equal(out_g["Y"], out_r["Y"])
    # the owner of each tile is the program that Triton's grouped ordering maps to it
    expect = np.zeros((tm, tn), np.int64)
    for pid in range(tm * tn):
        pm, pn = _triton_grouped(pid, tm, tn, g)
        expect[pm, pn] = pid
    assert np.array_equal(out_g["OWNER"][::bm, ::bn], expect)
    assert np.array_equal(out_r["OWNER"][::bm, ::bn], np.arange(tm * tn).reshape(tm, tn))


# (10) programs the interpreter refuses -------------------------------------------------------------------------------

ERRORS = [
    ("oob_load", lambda: {"X": np.zeros(13, np.float32), "Y": np.zeros(13, np.float32)},
     r"unguarded out-of-bounds access: member \(5,\) reads coordinate \(13,\) of view %X"),
    ("scatter_collision",
     lambda: {"I": np.array([0, 1, 2, 3, 2, 5, 6, 7]), "S": np.ones(8, np.float32), "O": np.zeros(9, np.float32)},
     r"collision in a unique scatter: two valid members write element \(2,\) of view %O"),
    ("write_read_view", lambda: {"X": np.zeros(8, np.float32)},
     r"store writes view %X, whose ABI access mode is read"),
    ("first_write_unwritten", lambda: {"Y": np.zeros(8, np.float32)},
     r"reads element \(4,\) of first_write buffer %buf before this launch wrote it"),
]


@pytest.mark.parametrize("kernel,args,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_refused_programs_raise_located_errors(kernel: str, args, message: str) -> None:
    module = load("errors.gir")
    with pytest.raises(InterpretError, match=message) as info:
        interpret(module, kernel, args(), {"B": 8})
    err = info.value
    assert isinstance(err, IntentError)
    text = str(err)
    assert text.startswith(f"kernel {kernel}, op #")          # kernel and op
    assert "program " in text and "errors.gir:" in text         # program coordinate and source position


def test_oob_error_names_the_tail_program() -> None:
    with pytest.raises(InterpretError) as info:
        interpret(load("errors.gir"), "oob_load", {"X": np.zeros(13, np.float32), "Y": np.zeros(13, np.float32)})
    assert "op #6 (load) from oob.x" in str(info.value)
    assert "program 1 (segment 0, coordinates (1,))" in str(info.value)


def test_unguarded_load_is_fine_when_in_bounds() -> None:
    X = np.arange(16, dtype=np.float32)
    out = interpret(load("errors.gir"), "oob_load", {"X": X, "Y": np.zeros(16, np.float32)})
    assert np.array_equal(out["Y"], X)
