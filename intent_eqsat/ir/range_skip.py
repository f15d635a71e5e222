"""A loop runs its all-true iterations without its lane checks and stops where they are false in every lane and the
body provably changes nothing (SPEC PASS-3.5 "all_true/mixed/all_false ... all-false is skipped only if the
summarizer/reduction yields identity with no effect for every free lane (proved by local value propagation)",
IR-10 (11), TGT-4 "unmasked all-valid body, guarded mixed range"); run after the tile sizes are bound.

Why: the ``narrowing`` group splits predicate ranges on the e-graph, but only for scalar loops with a validated
read; blocked programs, and reads that are in bounds whatever the predicate (unvalidated, ``construct.lower``), are
narrowed here, once the row tile is a literal. Causal attention's one-pass key-tile loop (flash form) runs the tiles
below the row tile's diagonal unmasked, the diagonal tiles with their checks, and none past them.

Declaration (SPEC PASS-1):

- Reads: ``for`` ops with a constant step and no ``narrowing`` record; at the top level of the body lane checks
  ``cmp(le|lt, J, R)`` where ``J`` is (through broadcasts and casts between index and i64) the induction variable or
  ``iv + range(TN)`` and ``R`` is ``s + range(N)`` or ``s`` for an index scalar ``s`` defined outside the loop (the
  loop's own bound: a tile-tail check), and ``cmp(ge, J, lb)`` checks; the compile option ``numerics``.
- Legality: a check other than a tile tail (loops with tail checks only are ``ir.tail_split``'s). The all-true
  range: every access validity that reads the induction variable does so only through those checks (and, broadcast).
  The all-false range: with that check ``false`` in every lane, local value propagation (``ir.range_identity``)
  proves the body yields its carried values unchanged: ``select(false, a, b) = b``, ``and(false, x) = false``,
  ``max(x, -inf) = x``, ``exp(-inf) = +0``, ``x + (+-0) = x``, ``x * 1 = x``, float casts of 0, 1, -inf,
  ``select(m == -inf, 1, exp(m - m)) = 1``; and, only under ``numerics = relaxed_normalization`` (IEEE differs
  only for inf/NaN data): ``-inf - m = -inf``, ``0 * v = 0``, ``contract(0, v, acc) = acc`` and ``m - m = 0`` for a
  running maximum that is not -inf. No access of the body writes (stores, atomics).
- Rewrites: with ``end = min(ub, max(lb, s + N [+1]))`` where the all-false range is proven, else ``ub``; ``split =
  min(end, lb + ceil(max(0, min over the checks of s - (TN - 1) [+1] - lb) / step) * step)``: ``for iv in
  [lb, split)`` with every check ``true`` (folded: selects, validity; ``narrowing = all_true``), then the original
  loop over ``[split, end)`` from its results (``narrowing = mixed``, its proof saying whether the all-false range
  was removed). A scalar threshold (no mixed lanes) gives one all-true loop over ``[lb, end)``.
- Preserves: every carried result (exactly; under relaxed numerics up to inf/NaN in skipped data), effects (the
  body has none), the ABI.
- Invalidates: the loop's bounds and trip count (now dependent on the program coordinate), access validity,
  footprints, code size (the body is printed twice).
- Verifier: the shared GPU verifier on the bound kernel (``check_narrowing``: the all-true loop's validity does not
  read its induction variable; the mixed loop keeps its predicate, a validity or a select on it).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.loop_rewrite import FreshNames, checks_true, clone_region, defining_ops, range_width, \
    rewrite_ops
from intent_eqsat.ir.range_identity import value_dtype, yields_carry_when_false
from intent_eqsat.ir.single_trip import constant_ints
from intent_eqsat.ir.tail_split import fold_true_checks
from intent_eqsat.ir.spec import ACCESS_OPS
from intent_eqsat.ir.types import ScalarType

INDEX = ScalarType("index")


def _strip(v: Value, defs: dict[str, Op]) -> Value:
    """``v`` through broadcasts (any dims: the lanes keep their values) and casts between ``index`` and ``i64``
    (value preserving; other casts may not be, and stop the walk)."""
    op = defs.get(v.name)
    while op is not None and len(op.operands) == 1 and (
            op.name == "broadcast" or
            op.name == "cast" and {value_dtype(op.operands[0]), value_dtype(v)} <= {"index", "i64"}):
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


@dataclass(frozen=True)
class LaneCheck:
    """A top-level ``cmp(le|lt, J, R)`` of a loop body whose ``J`` lanes are ``iv + [0, j_top]`` and ``R`` lanes
    ``s + [0, r_top]`` for an index scalar ``s`` defined outside the loop (``tail``: ``s`` is the loop's own upper
    bound, the tile-tail check)."""

    op: Op
    s: Value
    j_top: int
    r_top: int
    tail: bool

    @property
    def strict(self) -> bool:
        return self.op.attrs["pred"] == "lt"

    def true_below(self) -> int:
        """Every lane is true while ``iv < s + true_below()`` (the largest J lane below the smallest R lane)."""
        return -self.j_top + (0 if self.strict else 1)

    def false_from(self) -> int:
        """Every lane is false once ``iv >= s + false_from()`` (the smallest J lane past the largest R lane)."""
        return self.r_top + (0 if self.strict else 1)


def _lane_checks(loop: Op, defs: dict[str, Op]) -> list[LaneCheck]:
    """The body's lane checks (``LaneCheck``)."""
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
        s, r_top = r
        if s.name in inside or str(s.type) != "index":
            continue
        out.append(LaneCheck(op, s, j[1], r_top, _same_bound(s, ub, defs)))
    return out


def _iv_dependent(region: Region) -> set[str]:
    """Names of the values of ``region`` that depend (def-use) on its induction variable."""
    dep = {region.args[0].name}
    for op in walk(region):
        if any(v.name in dep for v in op.operands):
            dep.update(r.name for r in op.results)
    return dep


def _lower_bound_checks(loop: Op, defs: dict[str, Op], constants: dict[str, int]) -> list[Op]:
    """The body's top-level ``cmp(ge, J, s)`` with ``J``'s smallest lane the induction variable and ``s`` the loop's
    lower bound (or a constant no larger): true in every iteration."""
    iv, lb = loop.regions[0].args[0], loop.operands[0]
    out = []
    for op in loop.regions[0].ops:
        if op.name != "cmp" or op.attrs.get("pred") != "ge":
            continue
        j, s = _lanes_from(op.operands[0], defs), _strip(op.operands[1], defs)
        if j is None or j[0].name != iv.name:
            continue
        if _same_bound(s, lb, defs) or (s.name in constants and lb.name in constants and
                                        constants[s.name] <= constants[lb.name]):
            out.append(op)
    return out


def _validity_only_from(loop: Op, checks: list[Op], defs: dict[str, Op]) -> bool:
    """Every access validity in the body that reads the induction variable does so only through ``checks``
    (through ``and`` and ``broadcast``): once they are ``true`` no validity reads it (IR-10 (11), all_true)."""
    dep = _iv_dependent(loop.regions[0])
    replaced = {c.result.name for c in checks}

    def clean(v: Value) -> bool:
        if v.name in replaced or v.name not in dep:
            return True
        op = defs.get(v.name)
        return op is not None and op.name in ("and", "broadcast") and all(clean(x) for x in op.operands)

    return all(clean(a.operands[-1]) for a in walk(loop.regions[0]) if a.name in ACCESS_OPS and a.attrs.get("valid"))


def _index_ops(names: FreshNames, steps: list[tuple[str, list, object]]) -> tuple[list[Op], dict[str, Value]]:
    """Index arithmetic as ops: each step (label, operands, op name or an int constant); operands are Values or
    labels of earlier steps."""
    ops, vals = [], {}
    for label, operands, what in steps:
        v = Value(names.fresh(label), INDEX)
        vals[label] = v
        if isinstance(what, int):
            ops.append(Op("const", [], [v], {"value": what}))
        else:
            ops.append(Op(what, [vals[o] if isinstance(o, str) else o for o in operands], [v]))
    return ops, vals


def narrow_lane_ranges(kernel: Kernel, relaxed: bool) -> Kernel:
    """``kernel`` with every loop that has a lane check other than its tile tail split into its all-true range
    (every check ``true``) and the rest, whose all-false end is removed where the body provably changes nothing
    there (see the module docstring)."""
    constants = constant_ints(kernel)
    defs = defining_ops(kernel)
    names = FreshNames(kernel)
    changed = []

    def narrow(op: Op) -> list[Op] | None:
        step = constants.get(op.operands[2].name) if op.name == "for" and len(op.operands) > 3 else None
        if step is None or step < 1 or "narrowing" in op.attrs:
            return None
        checks = _lane_checks(op, defs)
        if not any(not c.tail for c in checks):
            return None                                     # tile tails alone: ``ir.tail_split``
        lb, ub, st = op.operands[:3]
        ops: list[Op] = []
        skip = next((c for c in checks if not c.tail and yields_carry_when_false(op, c.op, defs, relaxed)), None)
        named = skip or next(c for c in checks if not c.tail)
        end = ub
        source = f"check %{named.op.result.name} (iv {'<' if named.strict else '<='} rows)"
        if skip is not None:
            ops, v = _index_ops(names, [("skip_off", [], skip.false_from()), ("skip_b", [skip.s, "skip_off"], "add"),
                                        ("skip_lo", [lb, "skip_b"], "max"), ("skip_ub", [ub, "skip_lo"], "min")])
            end = v["skip_ub"]
        skipped = (f"all_false_skipped: iterations from s + {skip.false_from()} on have %{skip.op.result.name} "
                   f"false in every lane (rows s + range); with it false the body yields its carried values "
                   f"unchanged (local value propagation{', relaxed numerics' if relaxed else ''})"
                   if skip is not None else "")
        mixed_attrs = {**op.attrs, "narrowing": {"kind": "mixed", "source": source, "proof": (
            skipped or "mixed: lanes of both truth values may meet in this range; the checks are kept")}}
        lower = _lower_bound_checks(op, defs, constants)
        if not _validity_only_from(op, [c.op for c in checks] + lower, defs):
            if skip is None:
                return None
            changed.append(op)
            return ops + [replace(op, operands=[lb, end, *op.operands[2:]], attrs=mixed_attrs)]
        rename: dict[str, Value] = {}
        body = clone_region(op.regions[0], names, rename)
        body = checks_true(body, [rename[c.result.name] for c in [x.op for x in checks] + lower])
        proof = (f"every lane of {', '.join('%' + c.op.result.name for c in checks)} is true"
                 + (f"; {', '.join('%' + c.result.name for c in lower)}: iv >= lb" if lower else ""))
        if skip is not None and skip.true_below() == skip.false_from() and \
                all(c.tail and c.j_top == 0 for c in checks if c is not skip):
            # a scalar threshold: the check turns false where it stops being true, no mixed range is left
            changed.append(op)
            return ops + [replace(op, operands=[lb, end, *op.operands[2:]], regions=[body], attrs={
                **op.attrs, "narrowing": {"kind": "all_true", "source": source, "proof": (
                    f"iv in [lb, s + {skip.false_from()}): {proof}; {skipped}")}})]
        # the all-true range: iterations below min over the checks of s + true_below, rounded up to the step grid
        steps: list = []
        bound = None
        for i, c in enumerate(checks):
            b = c.s
            if c.true_below():
                steps += [(f"true_off{i}", [], c.true_below()), (f"true_b{i}", [c.s, f"true_off{i}"], "add")]
                b = f"true_b{i}"
            if bound is not None:
                steps.append((f"true_min{i}", [bound, b], "min"))
                b = f"true_min{i}"
            bound = b
        steps += [("true_len", [bound, lb], "sub"), ("zero", [], 0), ("true_len0", ["true_len", "zero"], "max")]
        if step > 1:
            steps += [("step_m1", [], step - 1), ("true_up", ["true_len0", "step_m1"], "add"),
                      ("true_tiles", ["true_up", st], "floordiv"), ("true_span", ["true_tiles", st], "mul")]
        steps += [("true_end", [lb, "true_span" if step > 1 else "true_len0"], "add"),
                  ("split", ["true_end", end], "min")]
        more, v = _index_ops(names, steps)
        ops += more
        split = v["split"]
        true_results = [Value(names.fresh(r.name), r.type) for r in op.results]
        proof = f"iv in [lb, split) step {step}, split <= min over the checks of s + true_below: {proof}"
        all_true = Op("for", [lb, split, st, *op.operands[3:]], true_results,
                      {**op.attrs, "narrowing": {"kind": "all_true", "proof": proof, "source": source}}, [body],
                      loc=op.loc)
        rest = replace(op, operands=[split, end, st, *true_results], attrs=mixed_attrs)
        changed.append(op)
        return ops + [all_true, rest]

    out = rewrite_ops(kernel, narrow)
    return fold_true_checks(out) if changed else kernel


__all__ = ["LaneCheck", "narrow_lane_ranges", "yields_carry_when_false"]
