"""View dimensions: a product of shape symbols and integers (``N``, ``4``, ``G*CPG``), or an arithmetic dim over them
(``H - 2``, ``H // 2``, ``(H + 2*P - K) // S + 1``; issue 27 item 7).

A product is the tuple of its factors (``("G", "CPG")``), the form every consumer has always read; any other dim is
a :class:`DimExpr` tree of ``+ - * //`` over symbols and integers. The two forms differ in what they *determine*:
a symbol that is a whole dim is that axis's size, a product determines its one unknown factor (SPEC IR-6, the
binding rule shared by the evaluator, the launchers and the serializers), while an arithmetic dim determines
nothing: its symbols are bound elsewhere and the dim is checked against the view's shape at run time (and gives
the size of an ``out`` view that is allocated for the caller).

Floor division keeps the KIR meaning (floor); in the shape polynomials (:func:`dim_poly`) a quotient is an opaque
atom named by its text, ``"(H // 2)"``, recorded with its numerator and divisor so the evaluator, the verifier's
bounds and the construction can give it its value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

from intent_eqsat.kir.poly import Poly

#: the operators of an arithmetic dim, by their KIR spelling
DIM_OPS = ("+", "-", "*", "//")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2}


@dataclass(frozen=True)
class DimExpr:
    """``a op b`` for ``op`` in :data:`DIM_OPS`; leaves are shape symbols (``str``) and integers."""

    op: str
    a: "DimTerm"
    b: "DimTerm"

    def __post_init__(self) -> None:
        if self.op not in DIM_OPS:
            raise ValueError(f"dim operator {self.op!r} is not one of {', '.join(DIM_OPS)}")


DimTerm = Union[str, int, DimExpr]
#: one view dimension: the factors of a product, or an arithmetic expression
Dim = Union[tuple, DimExpr]


def is_product(d: Dim) -> bool:
    """Is ``d`` a product of factors (the form whose one unknown factor the view's shape determines)?"""
    return isinstance(d, tuple)


def dim_symbols(d: Dim | DimTerm) -> list[str]:
    """The shape symbols of ``d`` in order of first appearance (with no repeats)."""
    out: list[str] = []

    def visit(t) -> None:
        if isinstance(t, str):
            if t not in out:
                out.append(t)
        elif isinstance(t, DimExpr):
            visit(t.a)
            visit(t.b)
        elif isinstance(t, tuple):
            for f in t:
                visit(f)
    visit(d)
    return out


def dim_str(d: Dim | DimTerm) -> str:
    """KIR text of a dim; the parser reads it back to the same value (parentheses only where needed)."""
    if isinstance(d, tuple):
        return "*".join(str(f) for f in d)
    return _term_str(d, 0)


def _term_str(t: DimTerm, outer: int, right: bool = False) -> str:
    if not isinstance(t, DimExpr):
        return str(t)
    p = _PRECEDENCE[t.op]
    # the operators are left-associative: a right operand of the same precedence needs parentheses (a - (b - c))
    text = f"{_term_str(t.a, p)} {t.op} {_term_str(t.b, p, right=True)}"
    return f"({text})" if p < outer or (right and p == outer) else text


def dim_value(d: Dim | DimTerm, env: Mapping[str, int]) -> int:
    """The dim's value with the symbols of ``env`` (KeyError for a missing one); ``//`` is floor division."""
    if isinstance(d, tuple):
        v = 1
        for f in d:
            v *= env[f] if isinstance(f, str) else int(f)
        return v
    if isinstance(d, str):
        return int(env[d])
    if isinstance(d, int):
        return d
    a, b = dim_value(d.a, env), dim_value(d.b, env)
    if d.op != "//":
        return _ring_op(d.op, a, b)
    if b == 0:
        raise ZeroDivisionError(f"dimension {dim_str(d)} divides by zero")
    return a // b


def _ring_op(op: str, a, b):
    """``a op b`` for ``op`` in ``+ - *``, on ints or shape polynomials alike."""
    return a + b if op == "+" else (a - b if op == "-" else a * b)


def dim_poly(d: Dim | DimTerm, quotients: dict[str, tuple[Poly, Poly]]) -> Poly:
    """``d`` as a shape polynomial; each floor quotient becomes the atom ``"(<text>)"``, entered in ``quotients``
    as (numerator, divisor) polynomials, inner quotients first."""
    if isinstance(d, tuple):
        p = Poly.const(1)
        for f in d:
            p = p * (Poly.atom(f) if isinstance(f, str) else int(f))
        return p
    if isinstance(d, str):
        return Poly.atom(d)
    if isinstance(d, int):
        return Poly.const(d)
    a, b = dim_poly(d.a, quotients), dim_poly(d.b, quotients)
    if d.op != "//":
        return _ring_op(d.op, a, b)
    if b.is_const() and b.const_value() == 1:
        return a
    key = f"({_term_str(DimExpr('//', d.a, d.b), 0)})"
    quotients.setdefault(key, (a, b))
    return Poly.atom(key)


def with_quotients(env: Mapping[str, int], quotients: Mapping[str, tuple[Poly, Poly]]) -> dict[str, int]:
    """``env`` (symbol values) extended by the value of every quotient atom, so that a shape polynomial with
    quotients evaluates (:meth:`Poly.evaluate`). The quotients are in dependency order (:func:`dim_poly`)."""
    out = dict(env)
    for key, (num, den) in quotients.items():
        n, q = num.evaluate(out), den.evaluate(out)
        if n.denominator != 1 or q.denominator != 1 or q == 0:
            raise ZeroDivisionError(f"dimension {key} divides by {q}")
        out[key] = int(n) // int(q)
    return out


def fold_dim(d: Dim, values: Mapping[str, int]) -> Dim:
    """``d`` with the symbols of ``values`` replaced (specialization): a product keeps its factor form, the integer
    factors folded into one, first; an arithmetic dim that becomes constant is the 1-tuple of its value."""
    if isinstance(d, tuple):
        const = 1
        syms: list[str] = []
        for f in d:
            if isinstance(f, str) and f in values:
                const *= values[f]
            elif isinstance(f, str):
                syms.append(f)
            else:
                const *= int(f)
        if not syms:
            return (const,)
        return tuple(syms) if const == 1 else (const, *syms)
    folded = _fold_term(d, values)
    return (folded,) if isinstance(folded, (int, str)) else folded


def _fold_term(t: DimTerm, values: Mapping[str, int]) -> DimTerm:
    if isinstance(t, str):
        return values.get(t, t)
    if isinstance(t, int):
        return t
    a, b = _fold_term(t.a, values), _fold_term(t.b, values)
    if isinstance(a, int) and isinstance(b, int):
        return dim_value(DimExpr(t.op, a, b), {})
    return DimExpr(t.op, a, b)


__all__ = ["DIM_OPS", "Dim", "DimExpr", "DimTerm", "dim_poly", "dim_str", "dim_symbols", "dim_value", "fold_dim",
           "is_product", "with_quotients"]
