"""Strength reduction (test fixture of candidate ranking): ``x * 2.0`` is also ``x + x``.

Reads: pure ``mul`` values, their operands' types (``ValTy``) and ``const`` values (``HasAttr``).

Legality: the constant is exactly ``2.0`` and the other operand has the product's type; ``x * 2 == x + x`` holds
bit for bit in IEEE arithmetic (both are the correctly rounded 2x; -0.0, infinities and NaN included).

Rewrites: the product's e-class gains ``add(x, x)`` (with the product's attributes); both stay extractable, so
the extractor picks one and the other is a ranked candidate.

Preserves: every value bit for bit, control, effects, the ABI and compile options.

Invalidates: def-use of the replaced ``mul`` when the ``add`` is chosen.

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import AMap, Ty, Val

GROUP = "strength"
ORDER = 32
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def rules():
    x, c = vars_("x c", Val)
    a = var("a", AMap)
    ty = var("ty", Ty)
    prod = P.binary("mul", x, c, a, ty)
    return [named("strength.mul_two", rule(prod, *P.const_facts(c, P.a_float(2.0)), P.ValTy(x, ty))
                  .then(union(prod).with_(P.binary("add", x, x, a, ty))), "x * 2.0 = x + x")]
