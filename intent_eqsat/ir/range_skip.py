"""A loop stops where its predicate is false in every lane and the body provably changes nothing (SPEC PASS-3.5
"all-false is skipped only if the summarizer/reduction yields identity with no effect for every free lane (proved by
local value propagation)", IR-10 (11)); run on blocked programs after the tile sizes are bound.

Why: the ``narrowing`` group splits predicate ranges on the e-graph, but only the scalar (unblocked) causal program
gets split there (issue 4 note); the blocked program the extractor picks still walks every key for every query
tile, half of them fully masked. Once the row tile is a literal, the all-false range of a causal key loop is
``[r0 + TB0, T)`` for a program whose rows are ``r0 + range(TB0)``.

Declaration (SPEC PASS-1):

- Reads: pure ``for`` ops with a constant step (the per-key loops of a blocked program, or tiled ones) and no
  ``narrowing`` record; at the top level of the body a check ``cmp(le|lt, J, R)`` where ``J`` is (through
  broadcasts and casts) the induction variable or ``iv + range(TN)`` (smallest lane ``iv``) and ``R`` is ``s +
  range(N)`` or ``s`` (largest lane ``s + N - 1``) for an index scalar ``s`` defined outside the loop and other than
  the loop's own bound; the compile option ``numerics``.
- Requires: with the check ``false`` in every lane, local value propagation proves the body yields its carried
  values unchanged: ``select(false, a, b) = b``, ``and(false, x) = false``, ``max(x, -inf) = x``, ``exp(-inf) = +0``,
  ``x + (+-0) = x``; and, only under ``numerics = relaxed_normalization`` (IEEE differs only for inf/NaN data):
  ``-inf - m = -inf`` and ``0 * v = 0``. No access of the body writes (stores, atomics).
- Rewrites: the loop's upper bound ``ub`` becomes ``min(ub, max(lb, B))`` with ``B = s + N`` (``le``) or
  ``s + N - 1`` (``lt``): every iteration starting from ``B`` on has the check false in every lane. The loop carries
  ``narrowing = {kind = mixed, proof = "all_false_skipped: ...", source}`` (it keeps its checks).
- Preserves: every carried result (exactly; under relaxed numerics up to inf/NaN in skipped data), effects (the
  body has none), the ABI.
- Invalidates: the loop's trip count (now dependent on the program coordinate), footprints.
- Verifier: the shared GPU verifier on the bound kernel (``check_narrowing``: a mixed loop keeps a validity).
"""
from __future__ import annotations

import math
from dataclasses import replace

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.loop_rewrite import FreshNames, range_width, rewrite_ops
from intent_eqsat.ir.single_trip import constant_ints
from intent_eqsat.ir.spec import ACCESS_OPS, WRITE_ACCESSES
from intent_eqsat.ir.types import ScalarType

INDEX = ScalarType("index")
#: abstract values of the propagation
FALSE, NEG_INF, ZERO = "false", "-inf", "0"


def _dtype(v: Value) -> str:
    return str(getattr(v.type, "dtype", v.type))


def _strip(v: Value, defs: dict[str, Op]) -> Value:
    """``v`` through broadcasts (any dims: the lanes keep their values) and casts between ``index`` and ``i64``
    (value preserving; other casts may not be, and stop the walk)."""
    op = defs.get(v.name)
    while op is not None and len(op.operands) == 1 and (
            op.name == "broadcast" or
            op.name == "cast" and {_dtype(op.operands[0]), _dtype(v)} <= {"index", "i64"}):
        v = op.operands[0]
        op = defs.get(v.name)
    return v


def _lanes_from(v: Value, defs: dict[str, Op]) -> tuple[Value, int] | None:
    """``v`` (through broadcasts and casts) is ``s`` or ``add(broadcast(s), range(N))``: (s, N - 1), the offset of
    its largest lane from ``s`` (its smallest lane is ``s`` itself)."""
    base = _strip(v, defs)
    op = defs.get(base.name)
    if op is not None and op.name == "add" and len(op.operands) == 2:
        for a, b in (op.operands, op.operands[::-1]):
            aop, width = defs.get(a.name), range_width(defs.get(b.name))
            if width is not None and aop is not None and aop.name == "broadcast" and not aop.attrs.get("dims"):
                return aop.operands[0], width - 1
    return base, 0


def _same_bound(a: Value, b: Value, defs: dict[str, Op]) -> bool:
    """The same value, or two ``launch`` ops of one LaunchExpr."""
    if a.name == b.name:
        return True
    oa, ob = defs.get(a.name), defs.get(b.name)
    return oa is not None and ob is not None and oa.name == ob.name == "launch" and \
        oa.attrs.get("expr") == ob.attrs.get("expr")


def _checks(loop: Op, defs: dict[str, Op]) -> list[tuple[Op, Value, int]]:
    """The body's ``J <= R`` / ``J < R`` checks with ``J``'s smallest lane the induction variable and ``R``'s lanes
    ``s + range(N)`` of an index scalar ``s`` defined outside the loop: (the cmp, s, offset) such that every lane is
    false once ``iv >= s + offset``. The loop's own bound check (``s`` = its upper bound) is not one: it is false
    only past the loop."""
    iv = loop.regions[0].args[0]
    inside = {v.name for o in walk(loop.regions[0]) for v in o.results} | {a.name for a in loop.regions[0].args}
    ub = _strip(loop.operands[1], defs)
    out = []
    for op in loop.regions[0].ops:
        if op.name != "cmp" or op.attrs.get("pred") not in ("le", "lt"):
            continue
        j = _lanes_from(op.operands[0], defs)
        r = _lanes_from(op.operands[1], defs)
        if j is None or r is None or j[0].name != iv.name:
            continue
        s, top = r
        if s.name in inside or str(s.type) != "index" or _same_bound(s, ub, defs):
            continue
        out.append((op, s, top + (1 if op.attrs["pred"] == "le" else 0)))
    return out


def yields_carry_when_false(loop: Op, check: Op, defs: dict[str, Op], relaxed: bool) -> bool:
    """Local value propagation: with ``check`` false in every lane the body yields its carried values unchanged
    (``defs``: the kernel's value definitions, for constants defined outside the loop)."""
    body = loop.regions[0]
    abstract: dict[str, str] = {a.name: f"carry{i}" for i, a in enumerate(body.args[1:])}
    abstract[check.result.name] = FALSE

    def kind(v: Value, depth: int = 0) -> str | None:
        """FALSE / NEG_INF / ZERO / carry<i> in every lane, or None (unknown)."""
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
        elif op.name == "reduce" and len(x) == 1 and (op.attrs.get("combine"), x[0]) in (("add", ZERO),
                                                                                         ("max", NEG_INF)):
            out = x[0]                                  # a reduction of its identity (+0 sums to +0)
        elif op.name == "max" and len(x) == 2 and NEG_INF in x:
            out = x[1] if x[0] == NEG_INF else x[0]
        elif op.name == "exp" and x == [NEG_INF]:
            out = ZERO
        elif op.name == "add" and len(x) == 2 and ZERO in x:
            other = x[1] if x[0] == ZERO else x[0]
            # x + (+-0) = x except x = -0 (-0 + +0 = +0): a carry never becomes -0 when its init is +0 and it only
            # ever adds (round to nearest: x + y = -0 only when both are -0)
            if other is not None and (relaxed or not other.startswith("carry") or
                                      _positive_zero(loop.operands[3 + int(other[5:])], defs)):
                out = other
        elif relaxed and op.name == "sub" and len(x) == 2 and x[0] == NEG_INF and x[1] != NEG_INF:
            out = NEG_INF                               # -inf - m = -inf: m neither -inf nor NaN (relaxed)
        elif relaxed and op.name == "mul" and ZERO in x:
            out = ZERO                                  # 0 * v = 0: v finite (relaxed)
        if out is not None:
            abstract[op.result.name] = out
    return False


def _positive_zero(v: Value, defs: dict[str, Op]) -> bool:
    op = defs.get(v.name)
    while op is not None and op.name == "broadcast":
        op = defs.get(op.operands[0].name)
    c = op.attrs.get("value") if op is not None and op.name == "const" else None
    return isinstance(c, (int, float)) and not isinstance(c, bool) and c == 0 and math.copysign(1.0, c) > 0


def _has_validated_access(loop: Op) -> bool:
    return any(o.name in ACCESS_OPS and o.attrs.get("valid") for o in walk(loop.regions[0]))


def skip_false_ranges(kernel: Kernel, relaxed: bool) -> Kernel:
    """``kernel`` with every loop's all-false tail removed where the body provably changes nothing there."""
    constants = constant_ints(kernel)
    defs = {v.name: op for op in walk(kernel.body) for v in op.results}
    names = FreshNames(kernel)

    def skip(op: Op) -> list[Op] | None:
        if op.name != "for" or "narrowing" in op.attrs or (constants.get(op.operands[2].name) or 0) < 1 or \
                not _has_validated_access(op):              # a mixed range keeps a validity (IR-10 (11))
            return None
        found = next((c for c in _checks(op, defs) if yields_carry_when_false(op, c[0], defs, relaxed)), None)
        if found is None:
            return None
        check, s, offset = found
        lb, ub = op.operands[:2]
        k, b, lo, new_ub = (Value(names.fresh(n), INDEX) for n in ("skip_off", "skip_b", "skip_lo", "skip_ub"))
        proof = (f"all_false_skipped: iterations from s + {offset} on have %{check.result.name} false in every "
                 f"lane (rows s + range); with it false the body yields its carried values unchanged (local "
                 f"value propagation{', relaxed numerics' if relaxed else ''})")
        return [Op("const", [], [k], {"value": offset}), Op("add", [s, k], [b]), Op("max", [lb, b], [lo]),
                Op("min", [ub, lo], [new_ub]),
                replace(op, operands=[lb, new_ub, *op.operands[2:]], attrs={**op.attrs, "narrowing": {
                    "kind": "mixed", "proof": proof, "source": f"check %{check.result.name} (iv <= rows)"}})]

    return rewrite_ops(kernel, skip)


__all__ = ["skip_false_ranges", "yields_carry_when_false"]
