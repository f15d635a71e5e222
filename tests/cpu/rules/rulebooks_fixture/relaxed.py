"""Numerics-gated identity (test fixture of compile-option facts): ``x + 0.0 -> x`` only with relaxed numerics.

Reads: the compile option fact ``OptNumerics``; pure ``add`` values, operand types (``ValTy``) and ``const``
values and op origins (``HasAttr``).

Legality: ``numerics = relaxed_normalization`` (``x + 0.0`` is ``+0.0`` for ``x = -0.0``, so the rewrite changes a
sign bit and needs the numeric permission); the other operand has the sum's type. With ``numerics = source`` the
group only records a remark at the op: missing numeric permission.

Rewrites: the sum's e-class gains the other operand.

Preserves: every value up to the sign of zero, control, effects, the ABI and compile options.

Invalidates: def-use of the removed ``add``.

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import String, rule, ruleset, union, var, vars_

from intent_eqsat.rules import facts as F
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, Ty, Val

GROUP = "relaxed"
ORDER = 31
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def rules():
    x, c = vars_("x c", Val)
    a = var("a", AMap)
    ty = var("ty", Ty)
    origin = var("origin", String)
    s = P.binary("add", x, c, a, ty)
    return [
        named("relaxed.add_zero", rule(s, *P.const_facts(c, A.float_("0.0")), P.ValTy(x, ty),
                                       F.OptNumerics("relaxed_normalization")).then(union(s).with_(x)),
              "x + 0.0 = x up to the sign of zero (needs numerics=relaxed_normalization)"),
        named("relaxed.add_zero_remark", rule(s, *P.const_facts(c, A.float_("0.0")), P.ValTy(x, ty),
                                              P.HasAttr(a, "origin", A.str_(origin)), F.OptNumerics("source"))
              .then(F.Remark("relaxed.add_zero not applied: missing numeric permission (numerics=source)",
                             origin)),
              "no rewrite without permission; the remark says why, at the op"),
    ]
