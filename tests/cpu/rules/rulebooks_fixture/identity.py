"""Algebraic identities (test fixture of the registry and scheduler): a multiplication by one is its other operand.

Reads: pure ``mul`` values, their operands' types (``ValTy``) and the ``value`` attribute of ``const`` operands
(``HasAttr``), from the base analyses (``patterns.ANALYSIS``).

Legality: the constant is exactly 1 (float ``1.0`` or integer ``1``) and the other operand has the product's type
(no broadcast hides in the multiplication). ``x * 1 == x`` holds for every x, NaN, infinities and -0.0 included.

Rewrites: the product's e-class gains the other operand; extraction drops the ``mul`` and, when unused, the constant.

Preserves: every value bit for bit, control, effects, the ABI and compile options.

Invalidates: nothing beyond def-use of the removed ``mul``.

Verifier: the shared GPU verifier after the group.
"""
from __future__ import annotations

from egglog import rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, Ty, Val

GROUP = "identity"
ORDER = 30
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def rules():
    x, c = vars_("x c", Val)
    a = var("a", AMap)
    ty = var("ty", Ty)
    out = []
    for one, tag in ((A.float_("1.0"), "f"), (A.int_(1), "i")):
        right = P.binary("mul", x, c, a, ty)
        left = P.binary("mul", c, x, a, ty)
        out.append(named(f"identity.mul_one_right_{tag}",
                         rule(right, *P.const_facts(c, one), P.ValTy(x, ty)).then(union(right).with_(x)),
                         "x * 1 = x"))
        out.append(named(f"identity.mul_one_left_{tag}",
                         rule(left, *P.const_facts(c, one), P.ValTy(x, ty)).then(union(left).with_(x)),
                         "1 * x = x"))
    return out
