"""exp of a difference as a quotient (test fixture of ``rules audit``: sound in exact arithmetic, unsound in
floating point). The audit must pass it on N(0, 1) inputs and catch it on the x100 instance (issue 25.9).

Reads: pure ``exp`` / ``sub`` values.

Legality: always (the bug: ``exp(a) / exp(b)`` overflows to inf / inf = NaN where ``exp(a - b)`` is finite).

Rewrites: the e-class of ``exp(a - b)`` gains ``exp(a) / exp(b)``.

Preserves: (claimed) every value.

Invalidates: def-use of the rewritten ops.

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import rewrite, ruleset, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import AMap, Ty, Val

GROUP = "expsplit"
ORDER = 34
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def rules():
    x, y = vars_("x y", Val)
    a, a2 = vars_("a a2", AMap)
    ty = var("ty", Ty)
    return [named("expsplit.exp_sub", rewrite(P.unary("exp", P.binary("sub", x, y, a, ty), a2, ty))
                  .to(P.binary("div", P.unary("exp", x, a2, ty), P.unary("exp", y, a2, ty), a2, ty)),
                  "exp(a - b) = exp(a) / exp(b) (WRONG in floating point: overflow)")]
