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

from egglog import String, eq, function, i64, ne, relation, rule, ruleset, set_, var

from intent_eqsat.rules.encode import float_text
from intent_eqsat.rules.sorts import LE, LEs, A, AMap, As, Multi, Region, Regions, Stmt, Stmts, Strs, Ty, Tys, \
    Val, Vals

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


def broadcast(x: Val, dims: A, ty: Ty) -> Val:
    """``broadcast(x) {dims = dims} : ty`` (``dims`` an ``A.list_`` term, e.g. ``alist(A.int_(0))``)."""
    return Val.op("broadcast", vals(x), amap(dims=dims), ty)


def for1(lb: Val, ub: Val, step: Val, init: Val, attrs: AMap, ty: Ty, depth, body: Val, yield_attrs: AMap) -> Val:
    """Result 0 of a pure one-carry ``for`` (no statements) whose region, at ``depth``, yields ``body``."""
    return Val.res(Multi.op("for", vals(lb, ub, step, init), attrs, tys(ty),
                            Regions.cons(Region.make(depth, tys(Ty.scalar("index"), ty), Stmts.nil(), vals(body),
                                                     yield_attrs), Regions.nil())), 0, ty)


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

# ------------------------------------------------------------------------------------------ dependencies

#: ``Dep(v)``: bit ``d`` = ``v`` reads the induction variable (argument 0) of the region at depth ``d``; bit
#: ``IV_BITS + d`` = it reads any argument of that region
IV_BITS = 16


@function(egg_fn="NarrowDep", merge=lambda old, new: old & new)
def Dep(v: Val) -> i64:
    """Bitmask of the region arguments a value reads (see ``IV_BITS``). Merge = intersection: one term of the
    e-class that does not read an argument proves the value does not depend on it (so a law like
    ``select(false, a, fill) = fill`` never makes a constant look loop-variant); values only shrink, so it
    terminates."""


@function(egg_fn="NarrowVDep", merge=lambda old, new: old & new)
def VDep(vs: Vals) -> i64: ...


@function(egg_fn="NarrowRDep", merge=lambda old, new: old & new)
def RDep(rs: Regions) -> i64: ...


#: the dependency analysis (a group lists it in ``ANALYSES`` to read ``Dep``)
DEPS = ruleset(name="deps")


def _dep_rules() -> list[tuple[str, object, str]]:
    v, x = var("v", Val), var("x", Val)
    xs, rest, ys = var("xs", Vals), var("rest", Vals), var("ys", Vals)
    regs, rrest = var("regs", Regions), var("rrest", Regions)
    at, ya = var("at", AMap), var("ya", AMap)
    t = var("t", Ty)
    tys, args = var("tys", Tys), var("args", Tys)
    nm = var("nm", String)
    d, k, i, r, mk, kk = (var(n, i64) for n in ("d", "k", "i", "r", "mk", "kk"))
    own = ((i64(1) << r) - 1) | (((i64(1) << r) - 1) << IV_BITS)
    table = [
        ("dep_iv", rule(eq(v).to(Val.arg(d, 0, t))).then(set_(Dep(v)).to((i64(1) << d) | (i64(1) << (d + IV_BITS)))),
         "an induction variable reads itself"),
        ("dep_arg", rule(eq(v).to(Val.arg(d, k, t)), ne(k).to(i64(0))).then(set_(Dep(v)).to(i64(1) << (d + IV_BITS))),
         "a carried argument reads its region"),
        ("dep_nil", rule(eq(xs).to(Vals.nil())).then(set_(VDep(xs)).to(0)), "no operands"),
        ("dep_cons", rule(eq(xs).to(Vals.cons(x, rest)), eq(mk).to(Dep(x)), eq(kk).to(VDep(rest))).then(
            set_(VDep(xs)).to(mk | kk)), "operands"),
        ("dep_op", rule(eq(v).to(Val.op(nm, xs, at, t)), eq(mk).to(VDep(xs))).then(set_(Dep(v)).to(mk)),
         "an op reads what its operands read"),
        ("dep_rnil", rule(eq(regs).to(Regions.nil())).then(set_(RDep(regs)).to(0)), "no regions"),
        ("dep_rcons", rule(eq(regs).to(Regions.cons(Region.make(r, args, Stmts.nil(), ys, ya), rrest)),
                           eq(mk).to(VDep(ys)), eq(kk).to(RDep(rrest))).then(set_(RDep(regs)).to((mk & own) | kk)),
         "a pure region reads what its yields read, less its own arguments"),
        ("dep_res", rule(eq(v).to(Val.res(Multi.op(nm, xs, at, tys, regs), i, t)), eq(mk).to(VDep(xs)),
                         eq(kk).to(RDep(regs))).then(set_(Dep(v)).to(mk | kk)), "a region op's result"),
    ]
    return [(f"narrowing.{n}", r_, law) for n, r_, law in table]


DEP_RULES = _dep_rules()
for _name, _rule, _law in DEP_RULES:
    DEPS.append(_rule)

__all__ = ["vals", "tys", "les", "strs", "alist", "amap", "a_float", "a_int", "a_bool", "a_str", "scalar", "op",
           "unary", "binary", "const", "const_of", "broadcast", "for1", "fresh", "HasAttr", "ValTy", "const_facts", "attr_facts",
           "ANALYSIS", "ANALYSIS_RULES", "IV_BITS", "Dep", "VDep", "RDep", "DEPS", "DEP_RULES"]
