"""A deliberately unbounded group (test fixture of the blow-up control): ``x -> (x + k) - k`` on index values.

Reads: index-typed values.

Legality: always (wrapping integer arithmetic: ``(x + 1) - 1 == x`` for every index value).

Rewrites: every index value's e-class gains ``sub(add(x, 1), 1)`` and ``sub(add(x, 2), 2)``; each new ``add`` is a
new index value, so the e-graph doubles every iteration and never saturates - the scheduler's node, time and
iteration limits must stop it.

Preserves: every value, control, effects, the ABI and compile options.

Invalidates: nothing (extraction keeps the smaller ``x``).

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import String, i64, rewrite, ruleset, var

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, Ty, Val, Vals

GROUP = "unbounded"
ORDER = 90
SCHEDULE = "backoff"
RULESET = ruleset(name=GROUP)

INDEX = Ty.scalar("index")


def _grow(x: Val, k: int) -> Val:
    c = P.const_of(A.int_(k), INDEX)
    return P.binary("sub", P.binary("add", x, c, AMap.nil(), INDEX), c, AMap.nil(), INDEX)


def rules():
    d, i = var("d", i64), var("i", i64)
    name = var("name", String)
    ops = var("ops", Vals)
    attrs = var("attrs", AMap)
    arg = Val.arg(d, i, INDEX)
    val = Val.op(name, ops, attrs, INDEX)
    out = []
    for k in (1, 2):
        out.append(named(f"unbounded.grow_arg_{k}", rewrite(arg).to(_grow(arg, k)),
                         f"x = (x + {k}) - {k} for an index argument"))
        out.append(named(f"unbounded.grow_op_{k}", rewrite(val).to(_grow(val, k)),
                         f"x = (x + {k}) - {k} for an index value"))
    return out
