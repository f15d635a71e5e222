"""Small symbolic polynomials and interval arithmetic for KIR shapes and subscripts.

Why not sympy: we need exactly three things — canonical equality of extents (``N`` vs ``N``), interval bounds of
affine-ish subscripts, and a *sound* sign test — and a 150-line class does them deterministically and fast.

A :class:`Poly` has :class:`Fraction` coefficients over *atoms* (strings): shape symbols (``N``), index variables,
by-value scalars or opaque subexpressions. Shape symbols are assumed to be integers >= 1 (an empty domain makes
every access claim vacuous, so this is sound for bounds checks).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping

Monomial = tuple[str, ...]  # sorted atoms, with repetition for powers


class Poly:
    """An immutable polynomial ``sum(c * prod(atoms))``; equal polys compare and hash equal."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, Fraction | int] | None = None):
        clean: dict[Monomial, Fraction] = {}
        if terms:
            for k, v in terms.items():
                if v != 0:  # (a Fraction is kept as it is: converting it again is the slow part of this class)
                    clean[k if len(k) < 2 else tuple(sorted(k))] = v if type(v) is Fraction else Fraction(v)
        self.terms: tuple[tuple[Monomial, Fraction], ...] = tuple(sorted(clean.items()))

    @staticmethod
    def const(c: int | Fraction) -> Poly:
        return Poly({(): c})

    @staticmethod
    def atom(name: str) -> Poly:
        return Poly({(name,): 1})

    def _dict(self) -> dict[Monomial, Fraction]:
        return dict(self.terms)

    def __add__(self, other: Poly | int) -> Poly:
        other = _lift(other)
        d = self._dict()
        for k, v in other.terms:
            d[k] = d.get(k, 0) + v
        return Poly(d)

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly({k: -v for k, v in self.terms})

    def __sub__(self, other: Poly | int) -> Poly:
        return self + (-_lift(other))

    def __rsub__(self, other: Poly | int) -> Poly:
        return _lift(other) - self

    def __mul__(self, other: Poly | int | Fraction) -> Poly:
        other = _lift(other)
        d: dict[Monomial, Fraction] = {}
        for k1, v1 in self.terms:
            for k2, v2 in other.terms:
                k = tuple(sorted(k1 + k2))
                d[k] = d.get(k, 0) + v1 * v2
        return Poly(d)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            other = Poly.const(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)

    def atoms(self) -> set[str]:
        return {a for k, _ in self.terms for a in k}

    def is_const(self) -> bool:
        return all(k == () for k, _ in self.terms)

    def const_value(self) -> Fraction:
        return dict(self.terms).get((), Fraction(0))

    def evaluate(self, env: Mapping[str, int]) -> Fraction:
        """The value with every atom replaced by ``env[atom]`` (KeyError when one is missing)."""
        total = Fraction(0)
        for k, v in self.terms:
            p = v
            for a in k:
                p *= env[a]
            total += p
        return total

    def exact_quotient(self, divisor: Poly) -> Poly | None:
        """``self / divisor`` when ``divisor`` is one term ``c * m`` (a positive constant times a monomial) that divides
        every term of ``self`` to an integer coefficient, else None. ``(G*CPG - 1 + 1) / CPG`` is ``G``: the bound
        ``c // CPG < G`` of a channel ``c`` in ``0..G*CPG`` (issue 27 item 7)."""
        if len(divisor.terms) != 1 or divisor.terms[0][1] <= 0:
            return None
        mono, c = divisor.terms[0]
        out: dict[Monomial, Fraction] = {}
        for k, v in self.terms:
            rest = list(k)
            for a in mono:
                if a not in rest:
                    return None
                rest.remove(a)
            q = v / c
            if q.denominator != 1:
                return None
            out[tuple(rest)] = q
        return Poly(out)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts: list[str] = []
        for k, v in sorted(self.terms, key=lambda kv: (kv[0] == (), kv[0])):
            mag = abs(v)
            body = "*".join(k)
            if not body:
                s = str(mag)
            elif mag == 1:
                s = body
            else:
                s = f"{mag}*{body}"
            sign = "-" if v < 0 else "+"
            parts.append(s if not parts and sign == "+" else (f"-{s}" if not parts else f"{sign} {s}"))
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Poly({self})"


def _lift(x: Poly | int | Fraction) -> Poly:
    return x if isinstance(x, Poly) else Poly.const(x)


def provably_nonneg(p: Poly) -> bool:
    """True only if ``p >= 0`` for every assignment of integers >= 1 to its atoms (a sufficient test: substitute
    ``a = 1 + t`` and require every coefficient to be >= 0)."""
    shifted = Poly()
    for k, v in p.terms:
        term = Poly.const(v)
        for a in k:
            term = term * Poly({(): 1, (a,): 1})
        shifted = shifted + term
    return all(v >= 0 for _, v in shifted.terms)


@dataclass(frozen=True)
class Interval:
    """A closed integer interval ``[lo, hi]`` with polynomial bounds over shape symbols; ``None`` = unknown."""

    lo: Poly | None
    hi: Poly | None

    def scale(self, c: Fraction) -> Interval:
        if c >= 0:
            return Interval(_mul(self.lo, c), _mul(self.hi, c))
        return Interval(_mul(self.hi, c), _mul(self.lo, c))

    def __add__(self, other: Interval) -> Interval:
        return Interval(_add(self.lo, other.lo), _add(self.hi, other.hi))


def _mul(p: Poly | None, c: Fraction | Poly) -> Poly | None:
    return None if p is None else p * c


def _add(a: Poly | None, b: Poly | None) -> Poly | None:
    return None if a is None or b is None else a + b


UNKNOWN = Interval(None, None)


def interval_of(p: Poly, atoms: Mapping[str, Interval]) -> Interval:
    """Bounds of ``p`` given bounds of its atoms (atoms missing from ``atoms`` are unknown).

    A monomial with several atoms is bounded only when every factor is provably non-negative."""
    total = Interval(Poly(), Poly())
    for k, c in p.terms:
        if not k:
            total = total + Interval(Poly.const(c), Poly.const(c))
            continue
        ivs = [atoms.get(a, UNKNOWN) for a in k]
        if len(ivs) == 1:
            iv = ivs[0]
        elif all(iv.lo is not None and provably_nonneg(iv.lo) for iv in ivs):
            lo: Poly | None = Poly.const(1)
            hi: Poly | None = Poly.const(1)
            for iv in ivs:
                lo = _mul(lo, iv.lo) if iv.lo is not None else None
                hi = _mul(hi, iv.hi) if hi is not None and iv.hi is not None else None
            iv = Interval(lo, hi)
        else:
            iv = UNKNOWN
        total = total + iv.scale(c)
    return total


def prove_nonneg(p: Poly, atoms: Mapping[str, Interval], facts: Iterable[Poly] = (),
                 refine: Mapping[str, Interval] | None = None) -> bool:
    """Is ``p >= 0`` everywhere, using atom bounds and, optionally, one of the known facts ``f >= 0``
    (``p = f + rest`` with ``rest`` provably non-negative)? This is how ``where`` guards discharge subscripts.

    ``refine`` bounds atoms that ``atoms`` keeps opaque (the floor quotient ``(H // 2)`` of an arithmetic dim:
    kir.dims): they are substituted only after the first round, so that an index over ``0..(H // 2)`` subscripting
    an axis of extent ``H // 2`` cancels exactly, while ``2*i + 1 < H`` still uses ``H // 2 <= H / 2``."""
    both = {**atoms, **refine} if refine else atoms
    for q in (p, *(p - f for f in facts)):
        lo = interval_of(q, atoms).lo
        for _ in range(SUBSTITUTION_ROUNDS if refine else 0):
            if lo is None or provably_nonneg(lo) or not any(a in refine for a in lo.atoms()):
                break
            lo = interval_of(lo, both).lo
        if lo is not None and provably_nonneg(lo):
            return True
    return False


#: how many times :func:`prove_nonneg` substitutes ``refine`` bounds into a bound that still holds such atoms
SUBSTITUTION_ROUNDS = 3
