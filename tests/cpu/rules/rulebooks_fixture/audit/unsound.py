"""Operand commutation (test fixture of ``rules audit``, with a DELIBERATELY UNSOUND rule planted in it).

The group looks like a routine rulebook about subtraction: ``x - y`` is ``x + (-y)`` (true bit for bit in IEEE
arithmetic), and "subtraction commutes" - which is wrong (``x - y = -(y - x)``, not ``y - x``), a slip of the kind
an author makes when copying an ``add`` rule. The audit must find ``unsound.sub_commute`` on any corpus kernel with a
subtraction (softmax: ``X - max``), name it and its ``file:line``, and clear ``unsound.sub_add_neg``, which fires on
the same subtractions. ``unsound.neg_neg`` is sound but never fires on the corpus (no kernel negates twice): the
audit lists it as never fired.

Reads: pure ``sub`` / ``neg`` values.

Legality: always (that is the bug: ``sub`` does not commute).

Rewrites: the e-class of ``sub(x, y)`` gains ``add(x, neg(y))`` and ``sub(y, x)`` (unsound); ``neg(neg(x))`` gains
``x``.

Preserves: (claimed) every value, control, effects, the ABI and compile options.

Invalidates: def-use of the rewritten ops.

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import rewrite, rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import AMap, Ty, Val

GROUP = "unsound"
ORDER = 33
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def rules():
    x, y = vars_("x y", Val)
    a, a2 = vars_("a a2", AMap)
    ty = var("ty", Ty)
    return [
        named("unsound.sub_add_neg",
              rewrite(P.binary("sub", x, y, a, ty)).to(P.binary("add", x, P.unary("neg", y, a, ty), a, ty)),
              "x - y = x + (-y)"),
        named("unsound.sub_commute",
              rewrite(P.binary("sub", x, y, a, ty)).to(P.binary("sub", y, x, a, ty)),
              "x - y = y - x (WRONG: planted for the audit tests)"),
        named("unsound.neg_neg",
              rule(P.unary("neg", P.unary("neg", x, a2, ty), a, ty), P.ValTy(x, ty))
              .then(union(P.unary("neg", P.unary("neg", x, a2, ty), a, ty)).with_(x)),
              "-(-x) = x"),
    ]
