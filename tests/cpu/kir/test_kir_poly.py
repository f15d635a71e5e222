"""The small polynomial / interval toolkit behind shape equality and range proofs."""
from __future__ import annotations

from intent_eqsat.kir.poly import Interval, Poly, interval_of, provably_nonneg, prove_nonneg

N, M = Poly.atom("N"), Poly.atom("M")


def test_canonical_equality_and_printing():
    assert (N + 1) - 1 == N and N * M == M * N and N - N == Poly() and Poly.const(3) == 3
    assert str(N * M - 1) == "M*N - 1" and str(2 * N - M + 3) == "-M + 2*N + 3"
    assert (N + M).evaluate({"N": 2, "M": 5}) == 7


def test_sign_test_is_sound_for_symbols_at_least_one():
    assert provably_nonneg(N - 1) and provably_nonneg(N * M - N) and provably_nonneg(Poly.const(0))
    assert not provably_nonneg(N - 2) and not provably_nonneg(N - M)


def test_intervals_and_facts():
    atoms = {"N": Interval(N, N), "@i": Interval(Poly(), N - 1), "@k": Interval(Poly(), Poly.const(2))}
    i, k = Poly.atom("@i"), Poly.atom("@k")
    assert interval_of(i + k, atoms) == Interval(Poly(), N + 1)
    assert interval_of(-2 * i, atoms) == Interval(-2 * N + 2, Poly())
    assert interval_of(i * k, atoms) == Interval(Poly(), 2 * N - 2)
    assert interval_of(i * Poly.atom("$s"), atoms).hi is None
    assert not prove_nonneg(N - 1 - (i + 1), atoms)
    assert prove_nonneg(N - 1 - (i + 1), atoms, facts=[N - (i + 1) - 1])
