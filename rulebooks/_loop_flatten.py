"""The re-expression behind loop flattening (``reduction.flatten_stat``): a value read inside the inner loop of a
perfect two-loop reduction nest, re-expressed for the one loop that enumerates the nest's members in the same
order.

The nest ``for a in [0, A) {for b in [0, B) {..}}`` at region depths ``d`` (outer) and ``d + 1`` (inner) becomes
``for g in [0, A * B)`` at depth ``d``, with ``a = g / B`` and ``b = g % B`` (row-major: member ``(a, b)`` is
member ``a * B + b``, so a running fold visits the members in the nest's order). Region arguments are numbered by
region depth (``Val.arg(depth, index, type)``): ``Arg(d, 0)`` becomes the quotient, ``Arg(d + 1, 0)`` the
remainder, arguments of enclosing regions (depth < d) stay. The carried values of both loops have no
re-expression (the term never resolves): a member reading a running value is not a member of the sum. A region op
written inside the nest is not followed (its depths would shift; the term never resolves) unless its free arguments
are ABI values and group coordinates only (it binds every other argument itself, so it is the same value wherever
it is placed: a statistic construction rematerialized inside the member); one written outside the nest is kept. No
shortcut for other values that merely read neither loop: terms are depth-indexed, and a loop written inside the
inner loop would keep regions one level too deep.

A terminating structural recursion over pure terms, saturated with the ``reduction`` group's analyses; private
helper of ``rulebooks/reduction.py`` (not a group).
"""
from __future__ import annotations

from egglog import Bool, String, eq, function, i64, i64Like, rule, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.sorts import AMap, Multi, Region, Regions, Stmts, Ty, Tys, Val, Vals


@function(egg_fn="ReduceFlat")
def flat(v: Val, d: i64Like, hi: Val, lo: Val) -> Val:
    """``v`` (read inside the inner loop at depth ``d + 1``) in the flattened loop at depth ``d``, where the outer
    induction variable is ``hi`` and the inner one ``lo``."""


@function(egg_fn="ReduceFlatVals")
def flat_vals(vs: Vals, d: i64Like, hi: Val, lo: Val) -> Vals: ...


def rules() -> list[tuple]:
    """(name, egglog rule, law) of the re-expression."""
    d, e, i, r, mk = vars_("d e i r mk", i64)
    t = var("t", Ty)
    ts = var("ts", Tys)
    nm = var("nm", String)
    xs, rest = vars_("xs rest", Vals)
    x, v, hi, lo = vars_("x v hi lo", Val)
    attrs, rya = vars_("attrs rya", AMap)
    rts = var("rts", Tys)
    rss = var("rss", Stmts)
    rys = var("rys", Vals)
    regs = var("regs", Regions)
    R = []

    def rw(name: str, sort: type, lhs, rhs, *conds) -> None:
        out = var(f"flat_{name}_out", sort)
        R.append((f"reduction.flat_{name}", rule(eq(out).to(lhs), *conds, name=f"reduction.flat_{name}").then(
            union(out).with_(rhs)), ""))

    rw("outer_iv", Val, flat(Val.arg(e, 0, t), d, hi, lo), hi, eq(e).to(d))
    rw("inner_iv", Val, flat(Val.arg(e, 0, t), d, hi, lo), lo, eq(e).to(d + 1))
    rw("enclosing", Val, flat(Val.arg(e, i, t), d, hi, lo), Val.arg(e, i, t), eq(e.bool_lt(d)).to(Bool(True)))
    rw("op", Val, flat(Val.op(nm, xs, attrs, t), d, hi, lo), Val.op(nm, flat_vals(xs, d, hi, lo), attrs, t))
    rw("res", Val, flat(Val.res(Multi.op(nm, xs, attrs, ts, Regions.nil()), i, t), d, hi, lo),
       Val.res(Multi.op(nm, flat_vals(xs, d, hi, lo), attrs, ts, Regions.nil()), i, t))
    # a region op written outside the nest (its region at depth <= d: placed at depth <= d - 1, where neither
    # loop's arguments exist; its own arguments may carry depth d) is the same value in the flattened loop; its
    # e-class holds no term written deeper (rules union loops of one depth; remat adds shallower forms only)
    rw("outside", Val, flat(v, d, hi, lo), v,
       eq(v).to(Val.res(Multi.op(nm, xs, attrs, ts, Regions.cons(Region.make(r, rts, rss, rys, rya), regs)), i, t)),
       eq(r.bool_le(d)).to(Bool(True)))
    # a region op whose free arguments are ABI values and group coordinates only (region depths 0 and 1: a
    # statistic the member reads, written where construction rematerialized it) binds every other argument it
    # reads itself, so it is the same value wherever it is placed
    rw("global", Val, flat(v, d, hi, lo), v,
       eq(v).to(Val.res(Multi.op(nm, xs, attrs, ts, Regions.cons(Region.make(r, rts, rss, rys, rya), regs)), i, t)),
       eq(mk).to(P.Dep(v)), eq(mk & ~((i64(3)) | (i64(3) << P.IV_BITS))).to(i64(0)))
    rw("nil", Vals, flat_vals(Vals.nil(), d, hi, lo), Vals.nil())
    rw("cons", Vals, flat_vals(Vals.cons(x, rest), d, hi, lo),
       Vals.cons(flat(x, d, hi, lo), flat_vals(rest, d, hi, lo)))
    laws = {
        "outer_iv": "the outer induction variable is the flattened index divided by the inner trip count",
        "inner_iv": "the inner induction variable is the flattened index modulo the inner trip count",
        "enclosing": "an argument of a region enclosing the nest is unchanged",
        "op": "a pure op: its operands re-expressed",
        "outside": "a region op written outside the nest is unchanged",
        "global": "a region op reading only ABI values and group coordinates is unchanged",
        "res": "a result of a region-less op: its operands re-expressed",
        "nil": "[]", "cons": "each operand",
    }
    return [(name, r, laws[name.removeprefix("reduction.flat_")]) for name, r, _ in R]
