"""A blocking loop nested in a tile loop runs as its body under a launch-visible guard (loop unswitching; SPEC
PASS-4 "blocking loops", TGT-4 "guarded mixed range", IR-3 "dispatch guards are explicit structured control").

Why: attention with a size-symbol head dimension ``D`` keeps ``for d0 in [0, D) step TILE_K`` (the score's
contraction) inside the key loop. When ``D <= TILE_K`` at launch the inner loop runs once, but the program does not
know it: a provider compiler sees a loop nest, and Triton software-pipelines only the innermost loop, so the key
loop's key/value loads stay unpipelined and the query tile is re-loaded on every key tile (H200, 2026-11-30: the
same program with a literal head dimension, where ``ir.single_trip`` inlines the loop at bind time, ran 1.46x the
size-symbol one; docs/perf.md). This pass gives the size-symbol program that form under a guard: the outer loop
is copied, once with each guarded inner loop inlined (run when ``lb < ub <= lb + step`` holds for all of them) and
once as it was (every other launch). The inlined copy keeps the head-dim lane checks (``d < D``); a third copy for
``D == TILE_K`` with the bound a constant and those checks folded was measured and not kept (H200 sweep 14,
2026-11-30: d64 3% slower, full d128 4.5% faster, causal d128 equal; what a literal head dimension adds beyond
this, ~5% on causal d64, needs ``D`` and the output tile's coordinate over it both constant: docs/perf.md).

Declaration (SPEC PASS-1):

- Reads: ``for`` ops (the *outer* loops) that the provider compiler software-pipelines once their guarded loops
  are inlined (a load feeds a ``contract``'s A or B operand through the body: ``ir.pipelining``) and, strictly
  inside, ``for`` ops with constant lower bound and step and
  an upper bound produced by a ``launch`` of a non-constant LaunchExpr (the *guarded* loops). Runs after the tile
  parameters are bound and the ranges narrowed (``optimizer.optimize``), on the final loop structure.
- Legality: the guarded loop has no ``narrowing`` record (a narrowed loop keeps its range proof where the verifier
  looks for it) and its step is > 1 (a step of 1 runs once only for a one-element extent: no gain worth a copy).
- Rewrites: the outer loop becomes ``if guard { outer loop with the guarded loops inlined at iv = lb } else {
  outer loop }``, with ``guard = (lb < ub) && (ub <= lb + step)`` over every guarded loop (one ``launch`` of a
  bool LaunchExpr: launch-visible, the same value in every program instance; outer loops of one region with the
  same guard share it). Each branch is a renamed copy; the ``if`` results take the outer loop's result names, so
  its uses are unchanged. A rewritten outer loop is not looked into further (the guard sits on the outermost loop
  that inlining makes pipelined); a loop that is not rewritten is.
- Preserves: every value (under the guard each inlined loop runs exactly once, the body with iv = lb and the
  carried values their inits; otherwise the original loop), effects and their order, the ABI, the program space,
  the narrowing records of the copied loops and their proofs (the copies run the same ranges), origins.
- Invalidates: code size (the outer loop is printed twice), loop nesting depth in the guarded branch.
- Verifier: the shared GPU verifier on the bound kernel (``optimizer.optimize``).

**Sibling loops that re-read one view** (:func:`unswitch_sibling_loops`). Why: a row program whose row is one tile
(softmax, layernorm compiled for ``N = 8192`` with 8192-wide row tiles) still keeps its passes over the row as
loops, ``for n0 in [0, N) step 8192`` (max, sum) and ``for t in [0, ceil_div(N, 8192)) step 1`` (normalize), because
``N`` is a size symbol. Each pass loads the row again (from L2), where torch.compile's persistent reduction holds it
in registers. With the loops run once under a launch guard, the loads of one view sit in one block with identical
operands and the provider compiler merges them (H200, 2026-11-30, the bench picks with their passes run once:
softmax f32 1.18x, bf16 1.33x, layernorm f32 1.19x, bf16 1.10x faster; rmsnorm, whose second pass is its only
re-read, 0.99x / 1.00x; docs/perf.md).

- Reads: the ``for`` ops directly in an ``execution_group`` region that the provider does not software-pipeline,
  with their nested loops inlined (``ir.pipelining``: those are the first part's business) and run once under a
  launch guard: constant lower bound and step, an upper bound from
  a ``launch`` of a non-constant LaunchExpr; a step of one only up to a tile count ``ceil_div(N, c)``, c > 1 (a
  step-1 loop over a plain extent such as attention's scalar key loop runs once only for one key: not worth a copy).
- Legality: two or more of those loops load the same view (what the guarded branch saves is that re-read); no
  ``narrowing`` record on them.
- Rewrites: the region's ops from the first such loop to its end become ``if guard { those ops with the loops
  inlined at iv = lb } else { those ops }``, ``guard`` the conjunction of each loop's ``lb < ub <= lb + step`` (one
  ``launch`` of a bool LaunchExpr). The ``if`` has no results: everything after the first loop is inside it.
- Preserves: every value and effect and their order in each branch (under the guard each loop runs exactly once),
  the ABI, the program space, origins; the region's terminator.
- Invalidates: code size (the tail of the region is printed twice).
- Verifier: the shared GPU verifier on the bound kernel (``optimizer.optimize``).
"""
from __future__ import annotations

from dataclasses import replace

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, simplify
from intent_eqsat.ir.loop_rewrite import FreshNames, clone_region, defining_ops
from intent_eqsat.ir.pipelining import software_pipelined
from intent_eqsat.ir.single_trip import constant_ints, inline_loops
from intent_eqsat.ir.types import ScalarType


def single_trip_guard(loop: Op, constants: dict[str, int], defs: dict[str, Op]) -> LaunchExpr | None:
    """The condition under which ``loop`` runs exactly once, ``lb < ub && ub <= lb + step`` (None: ``loop`` is not
    a guarded loop of the module docstring: those step by more than one)."""
    if loop.name != "for" or len(loop.operands) < 3 or constants.get(loop.operands[2].name, 0) <= 1:
        return None
    return _once_guard(loop, constants, defs)


def _guarded_inside(outer: Op, constants: dict[str, int], defs: dict[str, Op]) -> dict[int, LaunchExpr]:
    """id(loop) -> guard, for the guarded loops strictly inside ``outer``."""
    found: dict[int, LaunchExpr] = {}
    for op in walk(outer.regions[0]):
        guard = single_trip_guard(op, constants, defs)
        if guard is not None:
            found[id(op)] = guard
    return found


def _conjunction(guards: list[LaunchExpr]) -> LaunchExpr:
    out: list[LaunchExpr] = []
    for g in guards:
        if g not in out:                      # one term per distinct guard (two loops over [0, D) share one)
            out.append(g)
    expr = out[0]
    for g in out[1:]:
        expr = BinOp("&&", expr, g)
    return expr


def unswitch_single_trip_loops(kernel: Kernel) -> Kernel:
    """``kernel`` with every tile loop that holds guarded loops split into a guarded copy without them and the
    original (see the module docstring)."""
    constants = constant_ints(kernel)
    defs = defining_ops(kernel)
    names = FreshNames(kernel)

    def copy(outer: Op) -> tuple[list[Op], list[Value]]:
        """A renamed copy of ``outer``: its ops and its results."""
        rename: dict[str, Value] = {}
        cloned = clone_region(Region([], [outer]), names, rename)
        return cloned.ops, [rename[r.name] for r in outer.results]

    def unswitch(outer: Op, guards: dict[LaunchExpr, Value]) -> list[Op] | None:
        """``[launch guard,] if`` for ``outer``; ``guards``: the guard values already defined in its region (the
        loops that ``tail_split`` / ``range_skip`` made of one key loop share one)."""
        guarded = _guarded_inside(outer, constants, defs)
        # worth a copy where inlining the guarded loops lets the provider pipeline the outer loop (ir.pipelining)
        if not guarded or not software_pipelined(outer, through=lambda op: id(op) in guarded):
            return None
        expr = _conjunction(list(guarded.values()))
        new: list[Op] = []
        guard = guards.get(expr)
        if guard is None:
            guard = guards[expr] = Value(names.fresh("single_trip"), ScalarType("i1"))
            new.append(Op("launch", [], [guard], {"expr": expr}, loc=outer.loc))
        # the guarded copy: the same walk order finds the copied loops, so pair them with the originals by position
        originals = [op for op in walk(outer.regions[0]) if op.name == "for"]
        then_ops, then_results = copy(outer)
        copies = [op for op in walk(then_ops[0].regions[0]) if op.name == "for"]
        inline_ids = {id(c) for c, o in zip(copies, originals) if id(o) in guarded}
        then_ops = inline_loops(Region([], then_ops), lambda op: id(op) in inline_ids)
        else_ops, else_results = copy(outer)
        branch = Op("if", [guard], list(outer.results), {},
                    [Region([], then_ops + [Op("yield", then_results, [], {})]),
                     Region([], else_ops + [Op("yield", else_results, [], {})])], loc=outer.loc)
        return new + [branch]

    def rewrite(region: Region) -> list[Op]:
        ops: list[Op] = []
        guards: dict[LaunchExpr, Value] = {}
        for op in region.ops:
            if op.name == "for":
                new = unswitch(op, guards)
                if new is not None:
                    ops.extend(new)
                    continue
            ops.append(replace(op, regions=[Region(list(r.args), rewrite(r)) for r in op.regions]))
        return ops

    return replace(kernel, body=Region(list(kernel.body.args), rewrite(kernel.body)))


def _once_guard(loop: Op, constants: dict[str, int], defs: dict[str, Op]) -> LaunchExpr | None:
    """``lb < ub && ub <= lb + step`` for a ``for`` with constant lower bound and step and a launch-visible,
    non-constant upper bound that one step can cover at a real size: a tile loop (step > 1) or a loop over tile
    indices (step 1 up to ``ceil_div(n, c)``, c > 1). A step-1 loop over a plain extent runs once only when the
    extent is 1: no guard (None)."""
    if loop.name != "for" or "narrowing" in loop.attrs or len(loop.operands) < 3:
        return None
    lb, step = constants.get(loop.operands[0].name), constants.get(loop.operands[2].name)
    ub_op = defs.get(loop.operands[1].name)
    if lb is None or step is None or step < 1 or ub_op is None or ub_op.name != "launch":
        return None
    ub = ub_op.attrs.get("expr")
    if not isinstance(ub, LaunchExpr) or isinstance(simplify(ub), Const):
        return None
    if step == 1 and not _tile_count(simplify(ub)):
        return None
    return BinOp("&&", BinOp("<", Const(lb), ub), BinOp("<=", ub, Const(lb + step)))


def _tile_count(expr: LaunchExpr) -> bool:
    """``ceil_div(n, c)`` with a constant c > 1: how many tiles of c cover n."""
    return isinstance(expr, BinOp) and expr.op == "ceil_div" and isinstance(expr.rhs, Const) \
        and isinstance(expr.rhs.value, int) and expr.rhs.value > 1


def _views_loaded(loop: Op) -> set[str]:
    return {op.operands[0].name for op in walk(loop.regions[0]) if op.name == "load"}


def unswitch_sibling_loops(kernel: Kernel) -> Kernel:
    """``kernel`` with each execution group whose sibling loops re-read a view split at its first such loop into a
    guarded copy with the loops run once and the original (see "Sibling loops" in the module docstring)."""
    constants = constant_ints(kernel)
    defs = defining_ops(kernel)
    names = FreshNames(kernel)

    def split(region: Region) -> list[Op] | None:
        guarded: dict[int, LaunchExpr] = {}
        for op in region.ops:
            # a loop the provider pipelines (with its inner loops inlined) is the first part's business
            if op.name != "for" or software_pipelined(op, through=lambda inner: True):
                continue
            guard = _once_guard(op, constants, defs)
            if guard is not None:
                guarded[id(op)] = guard
        loops = [op for op in region.ops if id(op) in guarded]
        seen: set[str] = set()
        reread = False
        for loop in loops:
            views = _views_loaded(loop)
            reread |= bool(views & seen)
            seen |= views
        if not reread:
            return None
        first = next(i for i, op in enumerate(region.ops) if id(op) in guarded)
        end = len(region.ops) - 1 if region.ops and region.ops[-1].name == "yield" else len(region.ops)
        tail = region.ops[first:end]
        expr = _conjunction([guarded[id(op)] for op in loops])
        cond = Value(names.fresh("runs_once"), ScalarType("i1"))
        then_ops = clone_region(Region([], tail), names, {}).ops
        inline = {id(c) for c, o in zip(then_ops, tail) if id(o) in guarded}
        then_ops = inline_loops(Region([], then_ops), lambda op: id(op) in inline)
        else_ops = clone_region(Region([], tail), names, {}).ops
        loc = region.ops[first].loc
        branch = Op("if", [cond], [], {}, [Region([], then_ops + [Op("yield", [], [], {})]),
                                          Region([], else_ops + [Op("yield", [], [], {})])], loc=loc)
        return region.ops[:first] + [Op("launch", [], [cond], {"expr": expr}, loc=loc), branch] + region.ops[end:]

    def rewrite(region: Region) -> list[Op]:
        ops: list[Op] = []
        for op in region.ops:
            if op.name == "execution_group":
                body = op.regions[0]
                new = split(body)
                ops.append(replace(op, regions=[Region(list(body.args), new if new is not None else body.ops)]))
                continue
            ops.append(replace(op, regions=[Region(list(r.args), rewrite(r)) for r in op.regions]))
        return ops

    return replace(kernel, body=Region(list(kernel.body.args), rewrite(kernel.body)))


__all__ = ["single_trip_guard", "unswitch_sibling_loops", "unswitch_single_trip_loops"]
