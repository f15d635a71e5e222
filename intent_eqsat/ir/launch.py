"""LaunchExpr: the restricted, typed expressions of program-space extents, segment offsets and grids (SPEC IR-3.1).

Leaves: int/bool constants; symbols naming a bound physical parameter, a by-value ABI scalar or a view shape
symbol; ``dim(view, axis)`` / ``stride(view, axis)`` host-visible view metadata. Operations: effect-free integer and
boolean arithmetic, comparison, ``select``, ``min``/``max``, floor division ``//``, ``ceil_div``, ``%``, tuples and
tuple indexing. Nothing else: a LaunchExpr can never read device memory, call a helper or name a kernel SSA value,
so the launch wrapper and the kernel body can both evaluate it (IR-10 invariant 10).
"""
from __future__ import annotations

import functools
import numbers
import re
from dataclasses import dataclass
from typing import Mapping, Union

import numpy as np
import sympy

from intent_eqsat.errors import LaunchExprError, ParseError
from intent_eqsat.ir.lexer import TokenStream, tokenize

BINARY_OPS = ("+", "-", "*", "//", "%", "ceil_div", "min", "max", "==", "!=", "<", "<=", ">", ">=", "&&", "||")
_FUNC_BINARY = ("ceil_div", "min", "max")
_CMP = ("==", "!=", "<", "<=", ">", ">=")
#: names a Sym / a view may have: the lexer's identifiers, minus the boolean literals
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_RESERVED = ("true", "false")


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _RESERVED:
        raise LaunchExprError(f"{name!r} is not a valid {what} name in a LaunchExpr (an identifier other than "
                              f"true/false)")


def _check_index(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise LaunchExprError(f"{what} must be a non-negative integer, not {value!r}")
    return int(value)


def _check_node(value: object, what: str) -> None:
    if not isinstance(value, LaunchExpr):
        raise LaunchExprError(f"{what} of a LaunchExpr node must be a LaunchExpr, not {value!r} "
                              f"({type(value).__name__})")


class LaunchExpr:
    """Base class of LaunchExpr nodes. Nodes are frozen dataclasses: structural equality and hashing."""

    def __str__(self) -> str:
        return format_launch_expr(self)

    # Small operator sugar for builders (``ceil_div(Sym("M"), Sym("BM"))`` etc.).
    def __add__(self, other: "LEArg") -> "LaunchExpr":
        return BinOp("+", self, as_le(other))

    def __sub__(self, other: "LEArg") -> "LaunchExpr":
        return BinOp("-", self, as_le(other))

    def __mul__(self, other: "LEArg") -> "LaunchExpr":
        return BinOp("*", self, as_le(other))

    def __floordiv__(self, other: "LEArg") -> "LaunchExpr":
        return BinOp("//", self, as_le(other))


@dataclass(frozen=True, eq=False)
class Const(LaunchExpr):
    """An int or bool constant. ``Const(True) != Const(1)``: the printed forms differ, so structural equality
    keeps bool and int apart (Python's ``True == 1`` would not). NumPy integers/bools are coerced."""

    value: int | bool

    def __post_init__(self) -> None:
        v = self.value
        if isinstance(v, (bool, np.bool_)):
            object.__setattr__(self, "value", bool(v))
        elif isinstance(v, numbers.Integral):
            object.__setattr__(self, "value", int(v))
        else:
            raise LaunchExprError(f"a LaunchExpr constant is an int or a bool, not {v!r} ({type(v).__name__}) "
                                  f"(SPEC IR-3.1)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Const):
            return NotImplemented
        return type(self.value) is type(other.value) and self.value == other.value

    def __hash__(self) -> int:
        return hash((Const, type(self.value) is bool, self.value))

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Sym(LaunchExpr):
    """A physical parameter, a by-value ABI scalar or a view shape symbol, resolved by name."""

    name: str

    def __post_init__(self) -> None:
        _check_name(self.name, "symbol")

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Dim(LaunchExpr):
    view: str
    axis: int

    def __post_init__(self) -> None:
        _check_name(self.view, "view")
        object.__setattr__(self, "axis", _check_index(self.axis, "a dim() axis"))

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Stride(LaunchExpr):
    view: str
    axis: int

    def __post_init__(self) -> None:
        _check_name(self.view, "view")
        object.__setattr__(self, "axis", _check_index(self.axis, "a stride() axis"))

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class BinOp(LaunchExpr):
    op: str
    lhs: LaunchExpr
    rhs: LaunchExpr

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPS:
            raise LaunchExprError(f"{self.op!r} is not a LaunchExpr operator; allowed: {', '.join(BINARY_OPS)}")
        _check_node(self.lhs, "the left operand")
        _check_node(self.rhs, "the right operand")

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Not(LaunchExpr):
    operand: LaunchExpr

    def __post_init__(self) -> None:
        _check_node(self.operand, "the operand")

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Select(LaunchExpr):
    cond: LaunchExpr
    if_true: LaunchExpr
    if_false: LaunchExpr

    def __post_init__(self) -> None:
        for part in (self.cond, self.if_true, self.if_false):
            _check_node(part, "an operand of select")

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class Tuple(LaunchExpr):
    items: tuple[LaunchExpr, ...]

    def __post_init__(self) -> None:
        if isinstance(self.items, (list, tuple)):
            object.__setattr__(self, "items", tuple(self.items))
        else:
            raise LaunchExprError(f"tuple items must be a sequence of LaunchExprs, not {self.items!r}")
        for it in self.items:
            _check_node(it, "a tuple item")

    def __str__(self) -> str:
        return format_launch_expr(self)


@dataclass(frozen=True, eq=True)
class TupleGet(LaunchExpr):
    tuple_expr: LaunchExpr
    index: int

    def __post_init__(self) -> None:
        _check_node(self.tuple_expr, "the tuple")
        object.__setattr__(self, "index", _check_index(self.index, "a tuple index"))

    def __str__(self) -> str:
        return format_launch_expr(self)


LEArg = Union[LaunchExpr, int, bool, str]


def as_le(x: LEArg) -> LaunchExpr:
    """Coerce ints/bools (NumPy integers too) to Const and identifier strings to Sym; LaunchExprs pass through.

    Anything else (floats, None, containers, kernel values, ...) is a LaunchExprError (SPEC IR-3.1)."""
    if isinstance(x, LaunchExpr):
        return x
    if isinstance(x, (bool, np.bool_, numbers.Integral)):
        return Const(x)
    if isinstance(x, str):
        return Sym(x)
    raise LaunchExprError(f"{x!r} ({type(x).__name__}) is not allowed in a LaunchExpr: only int/bool constants, "
                          f"parameters, ABI scalars and view shape/stride metadata are (SPEC IR-3.1)")


def ceil_div(a: LEArg, b: LEArg) -> LaunchExpr:
    return BinOp("ceil_div", as_le(a), as_le(b))


def le_min(a: LEArg, b: LEArg) -> LaunchExpr:
    return BinOp("min", as_le(a), as_le(b))


def le_max(a: LEArg, b: LEArg) -> LaunchExpr:
    return BinOp("max", as_le(a), as_le(b))


def product(items: "list[LaunchExpr] | tuple[LaunchExpr, ...]") -> LaunchExpr:
    """Left-folded product; the empty product is 1."""
    out: LaunchExpr | None = None
    for it in items:
        out = it if out is None else BinOp("*", out, it)
    return out if out is not None else Const(1)


def total(items: "list[LaunchExpr] | tuple[LaunchExpr, ...]") -> LaunchExpr:
    out: LaunchExpr | None = None
    for it in items:
        out = it if out is None else BinOp("+", out, it)
    return out if out is not None else Const(0)


# --------------------------------------------------------------------------------------------------- queries

def free_symbols(e: LaunchExpr) -> set[str]:
    """Names of Sym leaves."""
    if isinstance(e, Sym):
        return {e.name}
    return set().union(*(free_symbols(c) for c in children(e))) if children(e) else set()


def views_read(e: LaunchExpr) -> set[str]:
    """Views whose dim/stride metadata the expression reads."""
    if isinstance(e, (Dim, Stride)):
        return {e.view}
    return set().union(*(views_read(c) for c in children(e))) if children(e) else set()


def children(e: LaunchExpr) -> tuple[LaunchExpr, ...]:
    if isinstance(e, BinOp):
        return (e.lhs, e.rhs)
    if isinstance(e, Not):
        return (e.operand,)
    if isinstance(e, Select):
        return (e.cond, e.if_true, e.if_false)
    if isinstance(e, Tuple):
        return e.items
    if isinstance(e, TupleGet):
        return (e.tuple_expr,)
    return ()


# ------------------------------------------------------------------------------------------------ evaluation

@dataclass(frozen=True)
class ViewMeta:
    """Host-visible metadata of one view argument."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]


def evaluate(e: LaunchExpr, symbols: Mapping[str, int | bool], views: Mapping[str, ViewMeta] | None = None):
    """Evaluate with Python integers. ``symbols`` binds parameters, ABI scalars and shape symbols."""
    views = views or {}
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Sym):
        if e.name not in symbols:
            raise LaunchExprError(f"unbound symbol {e.name!r} in LaunchExpr {format_launch_expr(e)}")
        return symbols[e.name]
    if isinstance(e, (Dim, Stride)):
        if e.view not in views:
            raise LaunchExprError(f"unknown view {e.view!r} in LaunchExpr {format_launch_expr(e)}")
        meta = views[e.view]
        seq = meta.shape if isinstance(e, Dim) else meta.strides
        if not 0 <= e.axis < len(seq):
            raise LaunchExprError(f"axis {e.axis} out of range for view {e.view!r} of rank {len(seq)}")
        return int(seq[e.axis])
    if isinstance(e, Not):
        return not evaluate(e.operand, symbols, views)
    if isinstance(e, Select):
        return evaluate(e.if_true if evaluate(e.cond, symbols, views) else e.if_false, symbols, views)
    if isinstance(e, Tuple):
        return tuple(evaluate(i, symbols, views) for i in e.items)
    if isinstance(e, TupleGet):
        t = evaluate(e.tuple_expr, symbols, views)
        if not isinstance(t, tuple) or not 0 <= e.index < len(t):
            raise LaunchExprError(f"bad tuple index {e.index} in {format_launch_expr(e)}")
        return t[e.index]
    if isinstance(e, BinOp):
        a = evaluate(e.lhs, symbols, views)
        b = evaluate(e.rhs, symbols, views)
        op = e.op
        if op in ("//", "%", "ceil_div") and b == 0:
            raise LaunchExprError(f"division by zero in LaunchExpr {format_launch_expr(e)}")
        return {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b, "%": lambda: a % b,
            "ceil_div": lambda: -((-a) // b), "min": lambda: min(a, b), "max": lambda: max(a, b),
            "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, "<=": lambda: a <= b,
            ">": lambda: a > b, ">=": lambda: a >= b, "&&": lambda: bool(a) and bool(b),
            "||": lambda: bool(a) or bool(b),
        }[op]()
    raise LaunchExprError(f"not a LaunchExpr node: {e!r}")


# ---------------------------------------------------------------------------------------------------- sympy

def to_sympy(e: LaunchExpr) -> sympy.Expr:
    """Translate integer arithmetic to sympy (symbols are positive integers: extents and parameters)."""
    if isinstance(e, Const):
        return sympy.Integer(int(e.value))
    if isinstance(e, Sym):
        return sympy.Symbol(e.name, integer=True, positive=True)
    if isinstance(e, Dim):
        return sympy.Symbol(f"dim({e.view}, {e.axis})", integer=True, positive=True)
    if isinstance(e, Stride):
        return sympy.Symbol(f"stride({e.view}, {e.axis})", integer=True, nonnegative=True)
    if isinstance(e, BinOp):
        a, b = to_sympy(e.lhs), to_sympy(e.rhs)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "//":
            return sympy.floor(a / b)
        if e.op == "ceil_div":
            return sympy.ceiling(a / b)
        if e.op == "%":
            return sympy.Mod(a, b)
        if e.op == "min":
            return sympy.Min(a, b)
        if e.op == "max":
            return sympy.Max(a, b)
    raise LaunchExprError(f"LaunchExpr {format_launch_expr(e)} has no integer sympy form")


_META_SYMBOL = re.compile(r"^(dim|stride)\((.+), (\d+)\)$")


def from_sympy(s: sympy.Expr) -> LaunchExpr:
    """Translate back the sympy forms ``to_sympy`` produces (and what simplification makes of them)."""
    if s.is_Integer:
        return Const(int(s))
    if s.is_Symbol:
        m = _META_SYMBOL.match(s.name)
        if m:  # dim/stride metadata: the name is not an identifier, so it never collides with a Sym
            return (Dim if m.group(1) == "dim" else Stride)(m.group(2), int(m.group(3)))
        return Sym(s.name)
    if isinstance(s, sympy.Add):
        terms = sorted(s.args, key=sympy.default_sort_key)
        pos = [t for t in terms if not _is_negative_term(t)]
        neg = [t for t in terms if _is_negative_term(t)]
        out = from_sympy(pos[0]) if pos else Const(0)
        for t in pos[1:]:
            out = BinOp("+", out, from_sympy(t))
        for t in neg:
            out = BinOp("-", out, from_sympy(-t))
        return out
    if isinstance(s, sympy.Mul):
        factors = sorted(s.args, key=sympy.default_sort_key)
        if any(f.is_Rational and not f.is_Integer for f in factors) or any(
                isinstance(f, sympy.Pow) and f.exp.is_negative for f in factors):
            raise LaunchExprError(f"non-integer expression {s} in LaunchExpr simplification")
        out = from_sympy(factors[0])
        for f in factors[1:]:
            out = BinOp("*", out, from_sympy(f))
        return out
    if isinstance(s, sympy.Pow) and s.exp.is_Integer and s.exp > 0:
        return product([from_sympy(s.base)] * int(s.exp))
    if isinstance(s, (sympy.floor, sympy.ceiling)):
        num, den = sympy.fraction(sympy.together(s.args[0]))
        op = "//" if isinstance(s, sympy.floor) else "ceil_div"
        return BinOp(op, from_sympy(sympy.expand(num)), from_sympy(den))
    if isinstance(s, sympy.Mod):
        return BinOp("%", from_sympy(s.args[0]), from_sympy(s.args[1]))
    if isinstance(s, (sympy.Min, sympy.Max)):
        args = sorted(s.args, key=sympy.default_sort_key)
        op = "min" if isinstance(s, sympy.Min) else "max"
        out = from_sympy(args[0])
        for a in args[1:]:
            out = BinOp(op, out, from_sympy(a))
        return out
    raise LaunchExprError(f"cannot express {s} as a LaunchExpr")


def _is_negative_term(t: sympy.Expr) -> bool:
    return bool(t.could_extract_minus_sign())


def simplify(e: LaunchExpr) -> LaunchExpr:
    """Simplify integer arithmetic with sympy; boolean/tuple structure is simplified in its integer leaves.

    The result evaluates to the same value for every binding of positive integer symbols; if sympy's form cannot
    be expressed back, the input is returned unchanged (simplification is an optimisation, never a requirement).
    """
    if isinstance(e, (Const, Sym, Dim, Stride)):
        return e
    if isinstance(e, BinOp) and e.op in BINARY_OPS and e.op not in _CMP and e.op not in ("&&", "||"):
        return _simplified_arithmetic(e)
    if isinstance(e, BinOp):
        return BinOp(e.op, simplify(e.lhs), simplify(e.rhs))
    if isinstance(e, Not):
        return Not(simplify(e.operand))
    if isinstance(e, Select):
        return Select(simplify(e.cond), simplify(e.if_true), simplify(e.if_false))
    if isinstance(e, Tuple):
        return Tuple(tuple(simplify(i) for i in e.items))
    if isinstance(e, TupleGet):
        inner = simplify(e.tuple_expr)
        if isinstance(inner, Tuple) and 0 <= e.index < len(inner.items):
            return inner.items[e.index]
        return TupleGet(inner, e.index)
    return e


@functools.lru_cache(maxsize=8192)
def _simplified_arithmetic(e: BinOp) -> LaunchExpr:
    """:func:`simplify` of an integer ``BinOp`` through sympy, memoized: expressions are immutable values with
    structural equality, and passes re-simplify the same extents many times (``summary_owner`` once per costed
    candidate of every tile binding: 5.6 s of sympy in one 30 s BatchNorm compile)."""
    try:
        out = from_sympy(sympy.simplify(to_sympy(e)))
    except Exception:  # noqa: BLE001 - sympy may raise anything (ZeroDivisionError for Mod(x, 0), ...);
        # simplification is an optimisation: keep the structure and simplify the operands
        return BinOp(e.op, simplify(e.lhs), simplify(e.rhs))
    return out if _size(out) <= _size(e) else e


def _size(e: LaunchExpr) -> int:
    return 1 + sum(_size(c) for c in children(e))


def equivalent(a: LaunchExpr, b: LaunchExpr) -> bool:
    """True when sympy proves the two integer expressions equal for all positive integer symbols."""
    try:
        return bool(sympy.simplify(to_sympy(a) - to_sympy(b)) == 0)
    except Exception:  # noqa: BLE001 - no integer form (booleans, tuples) or sympy gave up (e.g. Mod(x, 0))
        return a == b


# ---------------------------------------------------------------------------------------------- text form

_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "//": 6,
         "%": 6}


def format_launch_expr(e: LaunchExpr, parent_prec: int = 0) -> str:
    """Canonical text: infix for operators (minimal parentheses, left-associative), calls for the rest."""
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return "true" if e.value else "false"
        return str(e.value) if e.value >= 0 else f"({e.value})"
    if isinstance(e, Sym):
        return e.name
    if isinstance(e, Dim):
        return f"dim({e.view}, {e.axis})"
    if isinstance(e, Stride):
        return f"stride({e.view}, {e.axis})"
    if isinstance(e, Not):
        return f"!{format_launch_expr(e.operand, 9)}"
    if isinstance(e, Select):
        return f"select({format_launch_expr(e.cond)}, {format_launch_expr(e.if_true)}, " \
               f"{format_launch_expr(e.if_false)})"
    if isinstance(e, Tuple):
        inner = ", ".join(format_launch_expr(i) for i in e.items)
        return f"tuple({inner})"
    if isinstance(e, TupleGet):
        return f"get({format_launch_expr(e.tuple_expr)}, {e.index})"
    if isinstance(e, BinOp):
        if e.op in _FUNC_BINARY:
            return f"{e.op}({format_launch_expr(e.lhs)}, {format_launch_expr(e.rhs)})"
        p = _PREC[e.op]
        s = f"{format_launch_expr(e.lhs, p)} {e.op} {format_launch_expr(e.rhs, p + 1)}"
        return f"({s})" if p < parent_prec else s
    raise LaunchExprError(f"not a LaunchExpr node: {e!r}")


def parse_launch_expr(text: str, filename: str | None = None) -> LaunchExpr:
    """Parse the canonical text form; anything outside IR-3.1 is a located ParseError."""
    ts = TokenStream(tokenize(text, filename), filename)
    try:
        e = read_launch_expr(ts)
    except RecursionError:
        raise ts.error("LaunchExpr nested too deeply") from None
    if ts.peek().kind != "EOF":
        raise ts.error(f"unexpected {ts.peek().text!r} after LaunchExpr")
    return e


def read_launch_expr(ts: TokenStream, min_prec: int = 1) -> LaunchExpr:
    """Precedence-climbing reader over a shared token stream (used by the module parser too)."""
    lhs = _read_unary(ts)
    while True:
        tok = ts.peek()
        op = tok.text if tok.kind == "PUNCT" else None
        if op not in _PREC or _PREC[op] < min_prec:
            return lhs
        ts.next()
        rhs = read_launch_expr(ts, _PREC[op] + 1)
        lhs = BinOp(op, lhs, rhs)


def _read_unary(ts: TokenStream) -> LaunchExpr:
    tok = ts.peek()
    if ts.accept("!"):
        return Not(_read_unary(ts))
    if ts.accept("-"):
        if ts.peek().kind == "INT":
            return Const(ts.int_value(ts.next(), negative=True))
        inner = _read_unary(ts)
        if isinstance(inner, Const) and not isinstance(inner.value, bool):
            return Const(-inner.value)
        return BinOp("-", Const(0), inner)
    if ts.accept("("):
        e = read_launch_expr(ts)
        ts.expect(")")
        return e
    if tok.kind == "INT":
        ts.next()
        return Const(ts.int_value(tok))
    if tok.kind == "VALUE":
        raise ts.error(f"a LaunchExpr cannot read the kernel SSA value {tok.text} (SPEC IR-3.1): only constants, "
                       f"parameters, ABI scalars and view shape/stride metadata are allowed", tok)
    if tok.kind == "FLOAT":
        raise ts.error(f"a LaunchExpr is integer/bool only; found float {tok.text}", tok)
    if tok.kind == "IDENT":
        ts.next()
        name = tok.text
        if name == "true":
            return Const(True)
        if name == "false":
            return Const(False)
        if not ts.at("("):
            return Sym(name)
        ts.expect("(")
        if name in ("dim", "stride"):
            vtok = ts.expect_kind("IDENT", "a view name")
            view = vtok.text
            if view in _RESERVED:
                raise ts.error(f"expected a view name, found {view!r}", vtok)
            ts.expect(",")
            axis = ts.expect_int("an axis number")
            ts.expect(")")
            return Dim(view, axis) if name == "dim" else Stride(view, axis)
        if name in _FUNC_BINARY:
            a = read_launch_expr(ts)
            ts.expect(",")
            b = read_launch_expr(ts)
            ts.expect(")")
            return BinOp(name, a, b)
        if name == "select":
            c = read_launch_expr(ts)
            ts.expect(",")
            a = read_launch_expr(ts)
            ts.expect(",")
            b = read_launch_expr(ts)
            ts.expect(")")
            return Select(c, a, b)
        if name == "tuple":
            items = []
            if not ts.at(")"):
                items.append(read_launch_expr(ts))
                while ts.accept(","):
                    items.append(read_launch_expr(ts))
            ts.expect(")")
            return Tuple(tuple(items))
        if name == "get":
            t = read_launch_expr(ts)
            ts.expect(",")
            idx = ts.expect_int("a tuple index")
            ts.expect(")")
            return TupleGet(t, idx)
        raise ts.error(f"{name}(...) is not allowed in a LaunchExpr (SPEC IR-3.1): it may not load device memory "
                       f"or call helpers; allowed calls are dim, stride, ceil_div, min, max, select, tuple, get",
                       tok)
    shown = tok.text if tok.kind != "EOF" else "end of input"
    raise ts.error(f"expected a LaunchExpr, found {shown!r}", tok)


__all__ = [
    "LaunchExpr", "Const", "Sym", "Dim", "Stride", "BinOp", "Not", "Select", "Tuple", "TupleGet", "ViewMeta",
    "as_le", "ceil_div", "le_min", "le_max", "product", "total", "free_symbols", "views_read", "evaluate",
    "simplify", "equivalent", "to_sympy", "from_sympy", "format_launch_expr", "parse_launch_expr",
    "read_launch_expr", "ParseError",
]
