"""The re-expression behind loop interchange (``contraction.interchange_*``): a value read inside the inner loop of
a perfect two-loop nest, re-expressed for the nest with its two loops exchanged.

Region arguments are numbered by region depth (``Val.arg(depth, index, type)``), so exchanging the loops at depths
``d`` (outer) and ``d + 1`` (inner) renames their induction variables ``Arg(d, 0)`` <-> ``Arg(d + 1, 0)``; the inner
loop's carried value ``Arg(d + 1, 1)`` stays (the new inner loop carries the same running value), arguments of
enclosing regions (depth < d) and of regions nested in the value (depth > d + 1) stay. The outer loop's carried
value ``Arg(d, 1)`` has no re-expression (the term never resolves): in the exchanged nest it is the running value
before the whole inner sweep, so a value reading it is not a member of the sum and the nest does not interchange.

A terminating structural recursion over pure terms (regions without statements), saturated with the
``contraction`` group's support analyses; private helper of ``rulebooks/contraction.py`` (not a group).
"""
from __future__ import annotations

from egglog import Bool, String, eq, function, i64, i64Like, ne, rule, union, var, vars_

from intent_eqsat.rules.sorts import AMap, Multi, Region, Regions, Stmts, Ty, Tys, Val, Vals


@function(egg_fn="ContractSwap")
def swap(v: Val, d: i64Like) -> Val:
    """``v`` (read inside the inner loop at depth ``d + 1``) with the loops at depths ``d`` and ``d + 1``
    exchanged."""


@function(egg_fn="ContractSwapVals")
def swap_vals(vs: Vals, d: i64Like) -> Vals: ...


@function(egg_fn="ContractSwapMulti")
def swap_multi(m: Multi, d: i64Like) -> Multi: ...


@function(egg_fn="ContractSwapRegions")
def swap_regions(rs: Regions, d: i64Like) -> Regions: ...


def rules() -> list[tuple]:
    """(name, egglog rule, law) of the re-expression."""
    d, e, i, dep = vars_("d e i dep", i64)
    t = var("t", Ty)
    ts, args = vars_("ts args", Tys)
    nm = var("nm", String)
    xs, rest, ys = vars_("xs rest ys", Vals)
    x = var("x", Val)
    attrs, ya = vars_("attrs ya", AMap)
    mu = var("mu", Multi)
    regs = var("regs", Regions)
    R = []

    def rw(name: str, sort: type, lhs, rhs, *conds) -> None:
        out = var(f"swap_{name}_out", sort)
        R.append((f"contraction.swap_{name}", rule(eq(out).to(lhs), *conds, name=f"contraction.swap_{name}").then(
            union(out).with_(rhs)), ""))

    rw("outer_iv", Val, swap(Val.arg(d, 0, t), d), Val.arg(d + 1, 0, t))
    rw("inner_iv", Val, swap(Val.arg(e, 0, t), d), Val.arg(d, 0, t), eq(e).to(d + 1))
    rw("inner_carried", Val, swap(Val.arg(e, i, t), d), Val.arg(e, i, t), eq(e).to(d + 1), ne(i).to(i64(0)))
    rw("enclosing", Val, swap(Val.arg(e, i, t), d), Val.arg(e, i, t), eq(e.bool_lt(d)).to(Bool(True)))
    rw("nested", Val, swap(Val.arg(e, i, t), d), Val.arg(e, i, t), eq(e.bool_gt(d + 1)).to(Bool(True)))
    rw("op", Val, swap(Val.op(nm, xs, attrs, t), d), Val.op(nm, swap_vals(xs, d), attrs, t))
    rw("res", Val, swap(Val.res(mu, i, t), d), Val.res(swap_multi(mu, d), i, t))
    rw("nil", Vals, swap_vals(Vals.nil(), d), Vals.nil())
    rw("cons", Vals, swap_vals(Vals.cons(x, rest), d), Vals.cons(swap(x, d), swap_vals(rest, d)))
    rw("multi", Multi, swap_multi(Multi.op(nm, xs, attrs, ts, regs), d),
       Multi.op(nm, swap_vals(xs, d), attrs, ts, swap_regions(regs, d)))
    rw("regions_nil", Regions, swap_regions(Regions.nil(), d), Regions.nil())
    rw("region", Regions, swap_regions(Regions.cons(Region.make(dep, args, Stmts.nil(), ys, ya), regs), d),
       Regions.cons(Region.make(dep, args, Stmts.nil(), swap_vals(ys, d), ya), swap_regions(regs, d)))
    laws = {
        "outer_iv": "the outer induction variable is the inner loop's after the exchange",
        "inner_iv": "the inner induction variable is the outer loop's after the exchange",
        "inner_carried": "the inner loop's carried value stays the inner loop's",
        "enclosing": "an argument of a region enclosing the nest is unchanged",
        "nested": "an argument of a region nested in the value is unchanged",
        "op": "a pure op: its operands re-expressed", "res": "a result of a pure region op",
        "nil": "[]", "cons": "each operand", "multi": "a pure region op: operands and regions",
        "regions_nil": "no regions", "region": "a pure region (no statements): its yields re-expressed",
    }
    return [(name, r, laws[name.removeprefix("contraction.swap_")]) for name, r, _ in R]
