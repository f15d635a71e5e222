"""The combiner law check judges a combiner on the states its kernels can reach (issue 27 item 6).

Chan's mean/variance merge and a log-sum-exp merge are associative in exact arithmetic wherever a reduction runs
them; they used to be refused because the sample fed them states no kernel makes (a zero or negative count). Each
accepted kernel is then evaluated against float64 NumPy; combiners that break a law on reachable states, or whose
domain a use does not pin down, are still refused with the location of the claim."""
from __future__ import annotations

import numpy as np

from intent_eqsat.kir import evaluate, parse

from .kir_testlib import rejects

CHAN = ("combiner chan(a: (f32, f32, f32), b: (f32, f32, f32)) associative commutative identity (0.0, 0.0, 0.0) {\n"
        "  let n = a.0 + b.0\n"
        "  let d = b.1 - a.1\n"
        "  let w = select(n > 0.0, b.0 / n, 0.0)\n"
        "  (n, a.1 + d * w, a.2 + b.2 + d * d * a.0 * w)\n"
        "}\n")

LSE = ("combiner lse(a: (f32, f32), b: (f32, f32)) associative commutative identity (-inf, 0.0) {\n"
       "  let mx = max(a.0, b.0)\n"
       "  let safe = select(mx == -inf, 0.0, mx)\n"
       "  (mx, a.1 * exp(a.0 - safe) + b.1 * exp(b.0 - safe))\n"
       "}\n")


def _rng_rows(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 3 + 1


def test_chan_variance_over_rows_is_accepted_and_matches_numpy():
    text = CHAN + ("kernel var_rows(X: f32[M, N], V: out f32[M]) {\n"
                   "  let s[m] = reduce(n: (1.0, X[m, n], 0.0), combine=chan)\n"
                   "  V[m] = s[m].2 / N\n"
                   "}\n")
    x = _rng_rows((5, 37))
    got = evaluate(parse(text, "chan.kir"), "var_rows", {"X": x}, float64=True)["V"]
    np.testing.assert_allclose(got, np.var(x.astype(np.float64), axis=1), rtol=1e-6)


def test_chan_over_a_middle_axis_and_in_a_scan():
    text = CHAN + ("kernel var_mid(X: f32[B, K, N], V: out f32[B, N], R: out f32[B, K, N]) {\n"
                   "  let s[b, n] = reduce(k: (1.0, X[b, k, n], 0.0), combine=chan)\n"
                   "  V[b, n] = s[b, n].1\n"
                   "  let r[b, k, n] = scan(k: (1.0, X[b, k, n], 0.0), combine=chan)\n"
                   "  R[b, k, n] = r[b, k, n].2\n"
                   "}\n")
    x = _rng_rows((2, 9, 4)).astype(np.float64)
    out = evaluate(parse(text, "chan_mid.kir"), "var_mid", {"X": x}, float64=True)
    np.testing.assert_allclose(out["V"], x.mean(axis=1), rtol=1e-6)
    m2 = np.stack([((x[:, :k + 1] - x[:, :k + 1].mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
                   for k in range(9)], axis=1)
    np.testing.assert_allclose(out["R"], m2, rtol=1e-6, atol=1e-6)


def test_log_sum_exp_combiner_matches_numpy():
    text = LSE + ("kernel lse_rows(X: f32[M, N], Y: out f32[M]) {\n"
                  "  let s[m] = reduce(n: (X[m, n], 1.0), combine=lse)\n"
                  "  Y[m] = s[m].0 + log(s[m].1)\n"
                  "}\n")
    x = _rng_rows((4, 50)).astype(np.float64) * 10
    got = evaluate(parse(text, "lse.kir"), "lse_rows", {"X": x}, float64=True)["Y"]
    ref = np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)) + x.max(axis=1)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_chan_whose_count_a_use_leaves_free_is_refused():
    """The count is the value itself here: states with a zero combined count are reachable, where the guarded merge
    is not associative."""
    rejects(CHAN + "kernel k(X: f32[M, N], V: out f32[M]) {\n"
                   "  let s[m] = reduce(n: (X[m, n], X[m, n], 0.0), combine=chan)\n"
                   "  V[m] = s[m].2\n"
                   "}\n", 1, 55, "combiner 'chan' is declared associative but",
            "combine(combine(x, y), z) != combine(x, combine(y, z))")


def test_unused_combiner_is_judged_on_any_values():
    rejects(CHAN + "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i]\n}\n", 1, 55,
            "combiner 'chan' is declared associative but")


def test_combiner_not_associative_on_reachable_states_is_refused():
    """A running mean that halves the earlier state: members with a literal count do not make it associative."""
    rejects("combiner halve(a: (f32, f32), b: (f32, f32)) associative commutative identity (0.0, 0.0) {\n"
            "  (a.0 + b.0, 0.5 * a.1 + 0.5 * b.1)\n"
            "}\n"
            "kernel k(X: f32[M, N], Y: out f32[M]) {\n"
            "  let s[m] = reduce(n: (1.0, X[m, n]), combine=halve)\n"
            "  Y[m] = s[m].1\n"
            "}\n", 1, 46, "combiner 'halve' is declared associative but")
