"""A tiled matrix-unit loop runs its full tiles without the tail check (SPEC PASS-3.5 "all-true drops validity,
mixed keeps it", IR-10 (11), TGT-4 "proven ranges -> chosen loop bounds, unmasked all-valid body, guarded mixed
range"); the provably true lane checks that remain are folded away.

Why: a blocking loop ``for j0 in [lb, ub) step TN`` checks ``j0 + range(TN) < ub`` on every tile it loads, although
only the last tile can be partial. In the flash-attention key loop the check is a select over every score and a
mask on every key/value load: the same H200 program edited by hand without them ran 1.11-1.13x faster
(2026-11-30, d64, docs/perf.md); compiled with this pass, 1.09x. The split needs the tile width, so it runs after
the tile parameters are bound (:func:`intent_eqsat.optimizer.tiles.bind`) and the launch resources with them (the
resource model costs one copy of each loop body): ``optimizer.optimize._range_passes``, when the ``narrowing`` group is
in the rulebooks.

Declaration (SPEC PASS-1):

- Reads: ``for`` ops with constant lower bound and step ``TN > 1``, an upper bound ``ub`` produced by a ``launch``
  (a LaunchExpr over ABI scalars and shapes), that the provider compiler software-pipelines (a load in the body
  feeds a ``contract``'s A or B operand: ``ir.pipelining``; other loops are left as they are: not measured) and a
  tile-tail check ``cmp(lt, add(broadcast(
  iv), range(TN)), broadcast(ub))`` at its top level that is the condition of a ``select`` (arithmetic on every
  tile; a check that only masks loads is left: measured slower split, see ``_selects_on``).
- Legality: no ``narrowing`` record on the loop (one split per loop).
- Rewrites: the loop becomes two in sequence: ``for j0 in [lb, split) step TN`` with ``split = lb + max(0, (ub -
  lb) // TN) * TN``, where the tail check is replaced by ``true`` (``narrowing = all_true``; proof: every lane is
  ``j0 + r <= split - 1 < ub``), then the original loop over ``[split, ub)`` started from the first loop's results
  (``narrowing = mixed``: at most one tile, checked as before). The first loop's values get fresh names. Then, in the
  whole kernel, constant-true checks are folded: ``cmp(lt, add(broadcast(c), range(N)), broadcast(u))`` with
  constants ``c + N <= u`` is true, ``broadcast(true)`` is true, ``and(true, x) = x``, ``select(true, a, b) = a``,
  an access whose validity is true loses it (and a load its fill).
- Preserves: every value (the same iterations in the same order, split in two ranges; a check replaced only where
  it is true in every lane), effects, the ABI, the program space.
- Invalidates: loop bounds and count, access validity, code size (the body is printed twice).
- Verifier: the shared GPU verifier on the bound kernel (``check_narrowing``: the first loop's accesses no longer
  check the induction variable; the second keeps a validity).
"""
from __future__ import annotations

from dataclasses import replace

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, simplify
from intent_eqsat.ir.pipelining import software_pipelined
from intent_eqsat.ir.loop_rewrite import FreshNames, checks_true, clone_region, defining_ops, range_width, \
    rewrite_ops
from intent_eqsat.ir.single_trip import constant_ints
from intent_eqsat.ir.spec import ACCESS_OPS
from intent_eqsat.ir.types import ScalarType


def _lane_start_and_width(v: Value, defs: dict[str, Op]) -> tuple[Value, int] | None:
    """``v = add(broadcast(s), range(N))`` (either order) -> (s, N)."""
    op = defs.get(v.name)
    if op is None or op.name != "add" or len(op.operands) != 2:
        return None
    for a, b in (op.operands, op.operands[::-1]):
        bop, width = defs.get(a.name), range_width(defs.get(b.name))
        if width is not None and bop is not None and bop.name == "broadcast" and not bop.attrs.get("dims"):
            return bop.operands[0], width
    return None


def _broadcast_of(v: Value, defs: dict[str, Op]) -> Value | None:
    op = defs.get(v.name)
    if op is not None and op.name == "broadcast" and not op.attrs.get("dims"):
        return op.operands[0]
    return None


def _tail_checks(loop: Op, defs: dict[str, Op], step: int) -> list[Op]:
    """The body's top-level ``iv + range(step) < ub`` checks."""
    body = loop.regions[0]
    iv, ub = body.args[0], loop.operands[1]
    out = []
    for op in body.ops:
        if op.name != "cmp" or op.attrs.get("pred") != "lt":
            continue
        lanes = _lane_start_and_width(op.operands[0], defs)
        bound = _broadcast_of(op.operands[1], defs)
        if lanes is not None and lanes == (iv, step) and bound is not None and bound.name == ub.name:
            out.append(op)
    return out


def _source(check: Op, step: int) -> str:
    """The narrowing record's source: the check, by its SSA name (a KIR origin names the kernel, and the structure
    fingerprint of a program must not)."""
    return f"tile-tail check %{check.result.name} (iv + range({step}) < ub)"


def _splittable(loop: Op, constants: dict[str, int], defs: dict[str, Op]) -> list[Op]:
    if loop.name != "for" or "narrowing" in loop.attrs or len(loop.operands) < 3:
        return []
    lb, step = constants.get(loop.operands[0].name), constants.get(loop.operands[2].name)
    ub_op = defs.get(loop.operands[1].name)
    if lb is None or step is None or step <= 1 or ub_op is None or ub_op.name != "launch" or \
            not isinstance(ub_op.attrs.get("expr"), LaunchExpr):
        return []
    if not software_pipelined(loop):         # the loops the provider pipelines (ir.pipelining)
        return []
    checks = _tail_checks(loop, defs, step)
    return checks if any(_selects_on(c, loop.regions[0]) for c in checks) else []


def _selects_on(check: Op, body: Region) -> bool:
    """The check (through broadcasts and conjunctions) is the condition of a ``select`` in the body: it costs
    arithmetic on every tile, not only load predicates. A check that only masks loads is left alone: splitting such
    loops (every GEMM K loop) made the H200 GEMM suite slower (0.957x -> 0.893x cuBLAS, geometric mean of 7,
    2026-11-30 runs 16/17; two pipelined loops per program, the tail's on every program), while the flash-attention
    key loop, whose check selects every score, ran 1.09x faster split (sweep 6, docs/perf.md)."""
    derived = {check.result.name}
    for op in walk(body):
        if op.name in ("broadcast", "and") and any(v.name in derived for v in op.operands):
            derived.update(r.name for r in op.results)
        elif op.name == "select" and op.operands[0].name in derived:
            return True
    return False


def split_tile_tails(kernel: Kernel) -> Kernel:
    """``kernel`` with every matrix-unit tile loop split into its full tiles and its tail, then constant-true checks
    folded (see the module docstring)."""
    constants = constant_ints(kernel)
    defs = defining_ops(kernel)
    names = FreshNames(kernel)

    def split(op: Op) -> list[Op] | None:
        checks = _splittable(op, constants, defs)
        if not checks:
            return None
        lb, ub, step = op.operands[:3]
        lb_c, step_c = constants[lb.name], constants[step.name]
        ub_expr = simplify(defs[ub.name].attrs["expr"])
        source = _source(checks[0], step_c)
        if isinstance(ub_expr, Const):
            if (ub_expr.value - lb_c) % step_c:
                return None
            # every tile is full: the checks are true in place
            return [replace(op, regions=[checks_true(op.regions[0], [c.result for c in checks])], attrs={
                **op.attrs, "narrowing": {"kind": "all_true", "source": source, "proof": (
                    f"({ub_expr.value} - {lb_c}) is a multiple of the step {step_c}: every tile is full")}})]
        split_expr = simplify(BinOp("+", Const(lb_c), BinOp("*", BinOp("max", Const(0), BinOp(
            "//", BinOp("-", ub_expr, Const(lb_c)), Const(step_c))), Const(step_c))))
        split_at = Value(names.fresh(ub.name), ScalarType("index"))
        rename: dict[str, Value] = {}
        body = clone_region(op.regions[0], names, rename)
        body = checks_true(body, [rename[c.result.name] for c in checks])   # the full tiles' tail checks
        full_results = [Value(names.fresh(r.name), r.type) for r in op.results]
        proof = (f"iv in [{lb_c}, split) step {step_c}, split = {split_expr}: every lane iv + r (r < {step_c}) "
                 f"is <= split - 1 < ub")
        full = Op("for", [lb, split_at, step, *op.operands[3:]], full_results,
                  {**op.attrs, "narrowing": {"kind": "all_true", "proof": proof, "source": source}}, [body],
                  loc=op.loc)
        tail = replace(op, operands=[split_at, ub, step, *full_results], attrs={**op.attrs, "narrowing": {
            "kind": "mixed", "source": source,
            "proof": f"the last partial tile: iv in [split, ub), split = {split_expr}"}})
        return [Op("launch", [], [split_at], {"expr": split_expr}), full, tail]

    return fold_true_checks(rewrite_ops(kernel, split))


def fold_true_checks(kernel: Kernel) -> Kernel:
    """Constant-true lane checks folded, and accesses whose validity is then true unvalidated (module docstring)."""
    constants = constant_ints(kernel)
    defs = defining_ops(kernel)
    true: set[str] = set()
    subst: dict[str, Value] = {}

    def sub(v: Value) -> Value:
        return subst.get(v.name, v)

    def lane_check_true(op: Op) -> bool:
        lanes = _lane_start_and_width(op.operands[0], defs)
        bound = _broadcast_of(op.operands[1], defs)
        if lanes is None or bound is None:
            return False
        start, width = constants.get(lanes[0].name), constants.get(bound.name)
        return start is not None and width is not None and start + lanes[1] <= width

    def rewrite(region: Region) -> list[Op]:
        ops: list[Op] = []
        for op in region.ops:
            op = replace(op, operands=[sub(v) for v in op.operands],
                         regions=[Region(list(r.args), rewrite(r)) for r in op.regions])
            if op.name == "const" and op.attrs.get("value") is True:
                true.add(op.result.name)
            elif op.name == "broadcast" and op.operands[0].name in true:
                true.add(op.result.name)
            elif op.name == "cmp" and op.attrs.get("pred") == "lt" and lane_check_true(op):
                true.add(op.result.name)
            elif op.name == "and" and len(op.operands) == 2:
                a, b = op.operands
                for keep, drop in ((a, b), (b, a)):
                    if drop.name in true and keep.type == op.result.type:
                        subst[op.result.name] = keep
                        break
                if a.name in true and b.name in true:
                    true.add(op.result.name)
            elif op.name == "select" and op.operands[0].name in true and op.operands[1].type == op.result.type:
                subst[op.result.name] = op.operands[1]
            elif op.name in ACCESS_OPS and op.attrs.get("valid") and op.operands[-1].name in true:
                attrs = {k: v for k, v in op.attrs.items() if k not in ("valid", "fill")}
                op = replace(op, operands=op.operands[:-1], attrs=attrs)
            ops.append(op)
        return ops

    folded = replace(kernel, body=Region(list(kernel.body.args), rewrite(kernel.body)))
    return _drop_dead(folded, set(subst) | true)


def _drop_dead(kernel: Kernel, seeds: set[str]) -> Kernel:
    """``kernel`` without the pure ops this fold left unused: those defining ``seeds`` and, transitively, the pure
    producers only they used (other dead code is not this pass's business)."""
    from collections import Counter

    from intent_eqsat.ir.spec import SPECS

    def pure(op: Op) -> bool:
        spec = SPECS.get(op.name)
        return spec is not None and spec.effect == "none" and not op.regions and bool(op.results)

    ops = list(walk(kernel.body))
    uses = Counter(v.name for op in ops for v in op.operands)
    defs = {v.name: op for op in ops for v in op.results}
    dead: set[int] = set()
    work = [defs[n] for n in seeds if n in defs]
    while work:
        op = work.pop()
        if id(op) in dead or not pure(op) or any(uses[r.name] for r in op.results):
            continue
        dead.add(id(op))
        for v in op.operands:
            uses[v.name] -= 1
            if v.name in defs:
                work.append(defs[v.name])

    def prune(region: Region) -> Region:
        return Region(list(region.args), [replace(op, regions=[prune(r) for r in op.regions])
                                          for op in region.ops if id(op) not in dead])

    return replace(kernel, body=prune(kernel.body))


__all__ = ["split_tile_tails", "fold_true_checks"]
