"""Helpers for writing rules over the term encoding (``sorts.py``), and the two base analyses rules read.

Building patterns by hand means spelling cons lists and sorted attribute maps; these helpers do it::

    x, c = vars_("x c", Val)
    a, ca = vars_("a ca", AMap)
    ty, cty = vars_("ty cty", Ty)
    lhs = binary("mul", x, c, a, ty)                                   # Val.op("mul", [x, c], a, ty)
    rule(lhs, *const_facts(c, A.float_("1.0")), ValTy(x, ty)).then(union(lhs).with_(x))

The helpers only *build* egglog expressions for rule patterns and right-hand sides (the Python API is safe there);
programs are never inserted through them (``KernelGraph.add`` inserts program text).

Base analyses (``ANALYSIS``; a group lists it in its ``ANALYSES`` to have it saturated before each iteration):

- ``HasAttr(m: AMap, key: String, value: A)``: the attribute map ``m`` holds ``key = value`` (attribute maps are
  key-sorted cons lists, so a pattern cannot name one key without spelling the others; match ``HasAttr`` instead).
- ``ValTy(v: Val, ty: Ty)``: the type of value ``v`` (every ``Val`` constructor carries it as its last argument;
  the relation makes it available for a bare pattern variable).

Both are monotone relations over existing terms (bottom: absent; join: union of facts), so they terminate.
"""
from __future__ import annotations

import itertools
from typing import Sequence

from egglog import String, eq, i64, relation, rule, ruleset, var

from intent_eqsat.rules.encode import float_text
from intent_eqsat.rules.sorts import LE, LEs, A, AMap, As, Multi, Stmt, Strs, Ty, Tys, Val, Vals

# ------------------------------------------------------------------------------------------ list builders


def vals(*xs: Val) -> Vals:
    """``Vals.cons(x0, Vals.cons(x1, ... Vals.nil()))``."""
    out = Vals.nil()
    for x in reversed(xs):
        out = Vals.cons(x, out)
    return out


def tys(*xs: Ty) -> Tys:
    out = Tys.nil()
    for x in reversed(xs):
        out = Tys.cons(x, out)
    return out


def les(*xs: LE) -> LEs:
    out = LEs.nil()
    for x in reversed(xs):
        out = LEs.cons(x, out)
    return out


def strs(*xs: str) -> Strs:
    out = Strs.nil()
    for x in reversed(xs):
        out = Strs.cons(x, out)
    return out


def alist(*xs: A) -> A:
    out = As.nil()
    for x in reversed(xs):
        out = As.cons(x, out)
    return A.list_(out)


def amap(**items: A) -> AMap:
    """An attribute map with exactly these keys (key-sorted, as ``encode`` builds them). Decode fills in the
    defaults of missing attributes (``approximate``/``flush_to_zero`` = false), so new ops may omit them."""
    out = AMap.nil()
    for k in sorted(items, reverse=True):
        out = AMap.cons(k, items[k], out)
    return out


# ------------------------------------------------------------------------------------------ attribute values


def a_float(x: float) -> A:
    """The attribute term of a float exactly as ``encode`` writes it (``1.0``, ``-inf``, ``nan``)."""
    return A.float_(float_text(float(x)))


def a_int(x: int) -> A:
    return A.int_(int(x))


def a_bool(x: bool) -> A:
    return A.bool_(int(bool(x)))


def a_str(x: str) -> A:
    return A.str_(x)


# ------------------------------------------------------------------------------------------ value builders


def scalar(dtype: str) -> Ty:
    return Ty.scalar(dtype)


def op(name: str, operands: Sequence[Val] | Vals, attrs: AMap, ty: Ty) -> Val:
    """``Val.op(name, operands, attrs, ty)`` (operands as a Python sequence or a ``Vals`` pattern)."""
    ops = operands if isinstance(operands, Vals) else vals(*operands)
    return Val.op(name, ops, attrs, ty)


def unary(name: str, x: Val, attrs: AMap, ty: Ty) -> Val:
    return Val.op(name, vals(x), attrs, ty)


def binary(name: str, a: Val, b: Val, attrs: AMap, ty: Ty) -> Val:
    return Val.op(name, vals(a, b), attrs, ty)


def const(attrs: AMap, ty: Ty) -> Val:
    """A ``const`` op (its value is the ``value`` attribute; see :func:`const_facts`)."""
    return Val.op("const", Vals.nil(), attrs, ty)


def const_of(value: A, ty: Ty) -> Val:
    """A new ``const`` with exactly ``value`` (for right-hand sides)."""
    return Val.op("const", Vals.nil(), amap(value=value), ty)


# ------------------------------------------------------------------------------------------ fresh variables

_COUNTER = itertools.count()


def fresh(sort: type, hint: str = "v"):
    """A pattern variable with a name no other helper call uses."""
    return var(f"_{hint}{next(_COUNTER)}", sort)


# ------------------------------------------------------------------------------------------ base analyses

#: attribute map ``m`` holds ``key = value``
HasAttr = relation("HasAttr", AMap, String, A, egg_fn="HasAttr")
#: value ``v`` has type ``ty``
ValTy = relation("ValTy", Val, Ty, egg_fn="ValTy")


def const_facts(c: Val, value: A, ty: Ty | None = None) -> list:
    """Facts matching ``c`` as a ``const`` whose ``value`` attribute is ``value`` (needs ``ANALYSIS``)."""
    m = fresh(AMap, "cattrs")
    t = ty if ty is not None else fresh(Ty, "cty")
    return [eq(c).to(const(m, t)), HasAttr(m, "value", value)]


def attr_facts(attrs: AMap, key: str, value: A) -> list:
    """Facts: ``attrs`` holds ``key = value`` (needs ``ANALYSIS``)."""
    return [HasAttr(attrs, key, value)]


ANALYSIS = ruleset(name="patterns")


def _analysis_rules() -> list[tuple[str, object, str]]:
    k, k2 = var("k", String), var("k2", String)
    v, v2 = var("v", A), var("v2", A)
    t = var("t", AMap)
    name = var("name", String)
    ops = var("ops", Vals)
    attrs = var("attrs", AMap)
    ty = var("ty", Ty)
    d, i = var("d", i64), var("i", i64)
    multi = var("multi", Multi)
    stmt = var("stmt", Stmt)
    out = [
        ("patterns.has_attr_head", rule(AMap.cons(k, v, t), name="patterns.has_attr_head")
         .then(HasAttr(AMap.cons(k, v, t), k, v)), "cons(k, v, t) holds k = v"),
        ("patterns.has_attr_tail", rule(HasAttr(t, k2, v2), AMap.cons(k, v, t), name="patterns.has_attr_tail")
         .then(HasAttr(AMap.cons(k, v, t), k2, v2)), "cons(k, v, t) holds what t holds"),
        ("patterns.ty_arg", rule(Val.arg(d, i, ty), name="patterns.ty_arg").then(ValTy(Val.arg(d, i, ty), ty)),
         "Arg(d, i, ty) : ty"),
        ("patterns.ty_op", rule(Val.op(name, ops, attrs, ty), name="patterns.ty_op")
         .then(ValTy(Val.op(name, ops, attrs, ty), ty)), "Op(.., ty) : ty"),
        ("patterns.ty_res", rule(Val.res(multi, i, ty), name="patterns.ty_res")
         .then(ValTy(Val.res(multi, i, ty), ty)), "Res(.., ty) : ty"),
        ("patterns.ty_sres", rule(Val.sres(stmt, i, ty), name="patterns.ty_sres")
         .then(ValTy(Val.sres(stmt, i, ty), ty)), "SRes(.., ty) : ty"),
    ]
    return out


ANALYSIS_RULES = _analysis_rules()
for _name, _rule, _law in ANALYSIS_RULES:
    ANALYSIS.append(_rule)

__all__ = ["vals", "tys", "les", "strs", "alist", "amap", "a_float", "a_int", "a_bool", "a_str", "scalar", "op",
           "unary", "binary", "const", "const_of", "fresh", "HasAttr", "ValTy", "const_facts", "attr_facts",
           "ANALYSIS", "ANALYSIS_RULES"]
