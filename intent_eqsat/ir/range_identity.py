"""The all-false proof of ``ir.range_skip``: with a lane check false in every lane, does a loop body yield its carried
values unchanged? Local value propagation over abstract values (SPEC PASS-3.5 "all-false is skipped only if the
summarizer/reduction yields identity with no effect for every free lane (proved by local value propagation)").

The laws, and which hold only under ``numerics = relaxed_normalization``, are listed in ``ir.range_skip``'s
declaration; this module holds the propagation alone so that the loop rewrite reads apart from it.
"""
from __future__ import annotations

import math

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Op, Region, Value, walk
from intent_eqsat.ir.spec import WRITE_ACCESSES

#: abstract values of the propagation; the conditional ones carry the name of a carried value (``carry<i>``): ``m -
#: m`` is 0 unless ``m`` is -inf (then NaN), ``exp`` of it 1 unless ..., ``m == -inf`` the condition itself
FALSE, NEG_INF, ZERO, ONE = "false", "-inf", "0", "1"
ZERO_UNLESS_NEG_INF, ONE_UNLESS_NEG_INF, IS_NEG_INF = "0-unless-inf:", "1-unless-inf:", "is-inf:"


def value_dtype(v: Value) -> str:
    """The element dtype name of ``v`` (its type's name for a scalar without one)."""
    return str(getattr(v.type, "dtype", v.type))


def yields_carry_when_false(loop: Op, check: Op, defs: dict[str, Op], relaxed: bool) -> bool:
    """Local value propagation: with ``check`` false in every lane the body yields its carried values unchanged
    (``defs``: the kernel's value definitions, for constants defined outside the loop)."""
    body = loop.regions[0]
    abstract: dict[str, str] = {a.name: f"carry{i}" for i, a in enumerate(body.args[1:])}
    abstract[check.result.name] = FALSE

    def kind(v: Value, depth: int = 0) -> str | None:
        """FALSE / NEG_INF / ZERO / ONE / carry<i> (and the conditional kinds below) in every lane, or None."""
        if v.name in abstract:
            return abstract[v.name]
        op = defs.get(v.name)
        if op is None or depth > 8:
            return None
        if op.name == "const":
            c = op.attrs.get("value")
            if c is False:
                return FALSE
            if isinstance(c, float) and c == -math.inf:
                return NEG_INF
            if isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0:
                return ZERO
            if isinstance(c, float) and c == 1.0:
                return ONE
            return None
        if op.name == "broadcast":
            return kind(op.operands[0], depth + 1)
        return None

    for op in body.ops:
        if any(o.name in WRITE_ACCESSES for o in walk(Region([], [op]))):
            return False
        if op is check or len(op.results) != 1 and op.name != "yield":
            continue
        x = [kind(v) for v in op.operands]
        if op.name == "yield":
            return len(x) == len(body.args) - 1 and all(k == f"carry{i}" for i, k in enumerate(x))
        out = None
        if op.name == "and" and FALSE in x:
            out = FALSE
        elif op.name == "select" and len(x) == 3 and x[0] == FALSE:
            out = x[2]
        elif op.name == "select" and len(x) == 3 and x[1] is not None and x[1] == x[2]:
            out = x[1]                                  # both branches the same in every lane
        elif op.name == "select" and len(x) == 3 and x[0] is not None and x[0].startswith(IS_NEG_INF) and \
                x[1] == ONE and x[2] == ONE_UNLESS_NEG_INF + x[0][len(IS_NEG_INF):]:
            out = ONE                                   # c == -inf ? 1 : exp(c - c): 1 whatever c
        elif op.name == "reduce" and len(x) == 1 and (op.attrs.get("combine"), x[0]) in (("add", ZERO),
                                                                                         ("max", NEG_INF)):
            out = x[0]                                  # a reduction of its identity (+0 sums to +0)
        elif op.name == "max" and len(x) == 2 and NEG_INF in x:
            out = x[1] if x[0] == NEG_INF else x[0]
        elif op.name == "exp" and x == [NEG_INF]:
            out = ZERO
        elif op.name == "exp" and x[0] is not None and x[0].startswith(ZERO_UNLESS_NEG_INF):
            out = ONE_UNLESS_NEG_INF + x[0][len(ZERO_UNLESS_NEG_INF):]
        elif op.name == "cast" and x[0] in (ZERO, NEG_INF, ONE) and dtypes.is_float(value_dtype(op.result)):
            out = x[0]                                  # a float cast keeps +-0, -inf and 1
        elif op.name == "cmp" and op.attrs.get("pred") == "eq" and len(x) == 2 and NEG_INF in x and \
                (_other(x, NEG_INF) or "").startswith("carry"):
            out = IS_NEG_INF + _other(x, NEG_INF)       # the carried maximum is -inf (an empty row)
        elif op.name == "mul" and len(x) == 2 and ONE in x:
            out = x[1] if x[0] == ONE else x[0]         # x * 1 = x (NaN and -0 kept)
        elif op.name == "add" and len(x) == 2 and ZERO in x:
            other = x[1] if x[0] == ZERO else x[0]
            # x + (+-0) = x except x = -0 (-0 + +0 = +0): a carry never becomes -0 when its init is +0 and it only
            # ever adds (round to nearest: x + y = -0 only when both are -0)
            if other is not None and (relaxed or not other.startswith("carry") or
                                      _positive_zero(loop.operands[3 + int(other[5:])], defs)):
                out = other
        elif relaxed and op.name == "sub" and len(x) == 2 and x[0] == NEG_INF and x[1] != NEG_INF:
            out = NEG_INF                               # -inf - m = -inf: m neither -inf nor NaN (relaxed)
        elif relaxed and op.name == "sub" and len(x) == 2 and x[0] == x[1] and (x[0] or "").startswith("carry"):
            out = ZERO_UNLESS_NEG_INF + x[0]            # m - m = 0 for a running maximum m that is not -inf (relaxed)
        elif relaxed and op.name == "mul" and ZERO in x:
            out = ZERO                                  # 0 * v = 0: v finite (relaxed)
        elif relaxed and op.name == "contract" and len(x) == 3 and ZERO in x[:2] and x[2] is not None:
            out = x[2]                                  # acc + sum(0 * v) = acc: v finite (relaxed)
        if out is not None:
            abstract[op.result.name] = out
    return False


def _positive_zero(v: Value, defs: dict[str, Op]) -> bool:
    op = defs.get(v.name)
    while op is not None and op.name == "broadcast":
        op = defs.get(op.operands[0].name)
    c = op.attrs.get("value") if op is not None and op.name == "const" else None
    return isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0 and math.copysign(1.0, c) > 0


def _other(x: list, known: str) -> str | None:
    """The abstract value of a binary op's operand that is not ``known``."""
    return x[1] if x[0] == known else x[0]


__all__ = ["value_dtype", "yields_carry_when_false"]
