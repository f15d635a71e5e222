"""Summaries computed once per owner: program coordinates that no summary reads become loops inside the program
(issue 27 item 3 "statistics computed once and shared", SPEC PASS-3.4 "remat vs materialize", PASS-4
"rematerialize pure values").

Why: construction writes a ``let`` summary (BatchNorm's per-channel mean and variance, GroupNorm's per-(sample,
group) statistics, LayerNorm's over the last three axes) into every program that reads it. With one program per
output element or row, every program recomputes the statistic over the whole reduced set: a BatchNorm of
32x64x56x56 re-reads 100k values per output row, 10^4 times the data. ``remat.column_loop_*`` moves only the last
program coordinate into a loop (the row summaries of a rank-2 tile grid); a statistic indexed by a middle axis
(``mean[c]`` of ``Y[n, c, h, w]``) needs the *other* coordinates moved: one program per channel, looping over
``(n, h)``, computes the statistic once and keeps it live across those loops. Fewer programs do the same
elementwise work, so which form is faster depends on the sizes; the cost model chooses among the subsets of the
coordinates that can move and the kernel as it was.

Declaration (SPEC PASS-1):

- Reads: execution groups of segments of rank >= 2 (a grouped or descending order is dropped: the order in which
  programs start does not change what they compute); their top-level ops and which group coordinates each reads
  (directly, through operands and nested regions);
  *summaries*: top-level region ops with results whose regions write nothing (reduction loops); the views the
  group's ``store`` ops write and every other op's operands; the cost model (``PassContext.cost``) of the kernel
  before and after.
- Legality: the moved coordinates ``Q`` are read by no summary and at least one coordinate stays; every op of the
  group that writes (itself or in a nested region) is a ``store`` or a region op whose writes are all stores, and
  reads every coordinate of ``Q`` (each loop iteration writes what one program wrote); no view a store writes is
  read or otherwise used by any op of the kernel (hoisting a load before another iteration's stores cannot change
  what it reads). Effects of different programs were unordered; running them in loop order inside one program is
  one of their schedules. Applied only where the cost model prices the new kernel below the old (always, with
  all movable coordinates, when no model is given, as in ``intent-eqsat opt --group``). The last coordinate alone
  of a segment of rank <= 4 is not tried: the remat group's ``column_loop`` rules offered that form in the e-graph
  and the extraction decided (its decision is reported).
- Rewrites: the segment loses the extents of ``Q`` and becomes row-major; the group loses those coordinates; its
  ops are placed in a nest ``for q1 in [0, E1) { .. for qm in [0, Em) { .. } }`` (``Q`` in coordinate order): an
  op reading none of ``Q`` before the nest (the summaries among them, computed once per program), one whose
  deepest read coordinate is ``qi`` inside loop ``i`` before loop ``i + 1``, in their original order; reads of
  ``qi`` become the loop's induction variable.
- Preserves: every value (each op computes what it computed in the program of the same coordinates); the set of
  effects, each element written once by the same expression; the public ABI and compile options.
- Invalidates: the segment's extents and the launch grid, the group's coordinates, loop counts and live ranges
  (summaries live across the nest), the launch resources (chosen after this group) and every cost term.
- Verifier: the shared GPU verifier after the group (dominance of the hoisted values, the stores' conflict-freedom
  across the remaining programs).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import Callable

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.launch import Const, LaunchExpr, simplify
from intent_eqsat.ir.loop_rewrite import FreshNames, clone_region, group_segment, with_group_segment
from intent_eqsat.ir.loop_rewrite import dependent_names as _dependent, operands_read as _reads, \
    writes as _writes
from intent_eqsat.ir.types import ScalarType

INDEX = ScalarType("index")
#: the most coordinates tried as a set (subsets of at most this many are costed: 2^3 - 1 kernels)
MAX_MOVED = 3
#: segments up to this rank had the last coordinate alone moved into a loop as an e-graph alternative
#: (``remat.column_loop_rank2..4``), costed at extraction and reported as a remat decision: not offered again here
REMAT_COLUMN_RANK = 4


def _writing_ops(op: Op) -> list[Op]:
    """``op`` and the ops of its regions that write."""
    inner = [x for r in op.regions for x in walk(r)]
    return [x for x in [op] + inner if _writes(x)]


def _reads_coord(op: Op, dep: set[str]) -> bool:
    return any(v.name in dep for v in _reads(op)) or any(v.name in dep for v in op.results)


def _movable(kernel: Kernel, gi: int) -> tuple[list[int], list[set[str]]] | None:
    """The coordinates of group ``gi`` that may move into loops and each coordinate's dependent names, or None
    when the group is not of the form (module docstring, Legality)."""
    found = group_segment(kernel, gi)
    if found is None:
        return None
    _, _, region = found
    body = region.ops[:-1]
    deps = [_dependent(region, a) for a in region.args]
    summaries = [op for op in body if op.regions and op.results and not _writing_ops(op)]
    if not summaries:
        return None
    movable = [k for k, dep in enumerate(deps) if not any(_reads_coord(op, dep) for op in summaries)]
    if not movable or len(movable) >= len(region.args):
        return None
    effects = [op for op in body if _writing_ops(op)]
    if not effects or any(x.name != "store" for op in effects for x in _writing_ops(op)):
        return None
    written = {x.operands[0].name for op in effects for x in _writing_ops(op)}
    for op in walk(kernel.body):
        used = op.operands[1:] if op.name == "store" else op.operands
        if any(v.name in written for v in used):
            return None
    movable = [k for k in movable if all(_reads_coord(op, deps[k]) for op in effects)]
    return (movable, deps) if movable else None


def _move(kernel: Kernel, gi: int, moved: tuple[int, ...], deps: list[set[str]]) -> Kernel:
    """The kernel with group ``gi``'s coordinates ``moved`` (ascending) turned into a loop nest (module
    docstring, Rewrites)."""
    names = FreshNames(kernel)
    group = kernel.body.ops[gi]
    region = group.regions[0]
    seg = kernel.space.segments[group.attrs["segment"]]
    origin = group.attrs.get("origin")
    tagged = {"origin": origin} if origin else {}

    def launch(e: LaunchExpr, base: str, into: list[Op]) -> Value:
        v = Value(names.fresh(base), INDEX)
        into.append(Op("launch", [], [v], {"expr": simplify(e)}))
        return v

    levels: list[list[Op]] = [[] for _ in range(len(moved) + 1)]
    bounds = []
    for k in moved:
        bounds.append((launch(Const(0), "own_lb", levels[0]), launch(seg.extents[k], "own_trips", levels[0]),
                       launch(Const(1), "own_step", levels[0])))
    rename: dict[str, Value] = {}
    ivs = []
    for k in moved:
        iv = Value(names.fresh(region.args[k].name), INDEX)
        rename[region.args[k].name] = iv
        ivs.append(iv)
    for op in region.ops[:-1]:
        level = max((i + 1 for i, k in enumerate(moved) if _reads_coord(op, deps[k])), default=0)
        if level == 0:
            levels[0].append(op)
            continue
        results = []
        for v in op.results:
            rename[v.name] = Value(names.fresh(v.name), v.type)
            results.append(rename[v.name])
        levels[level].append(replace(op, operands=[rename.get(v.name, v) for v in op.operands], results=results,
                                     regions=[clone_region(r, names, rename) for r in op.regions]))
    inner: list[Op] = []
    for i in range(len(moved), 0, -1):
        body = levels[i] + inner + [Op("yield", [], [], dict(tagged))]
        inner = [Op("for", list(bounds[i - 1]), [], dict(tagged), [Region([ivs[i - 1]], body)])]
    new_region = Region([a for k, a in enumerate(region.args) if k not in moved],
                        levels[0] + inner + [region.ops[-1]])
    return with_group_segment(kernel, gi, replace(group, regions=[new_region]),
                              replace(seg, extents=tuple(e for k, e in enumerate(seg.extents) if k not in moved),
                                      order="row_major", group_size=None, group_axis=1, descending=False))


def own_summaries(kernel: Kernel, cost: Callable[[Kernel], float] | None = None) -> Kernel:
    """``kernel`` with, in each execution group, the program coordinates no summary reads moved into loops where
    the cost model prices that lowest (module docstring); unchanged otherwise."""
    out = kernel
    for gi, op in enumerate(kernel.body.ops):
        if op.name != "execution_group":
            continue
        found = _movable(out, gi)
        if found is None:
            continue
        movable, deps = found
        if cost is None:
            out = _move(out, gi, tuple(movable), deps)
            continue
        best, best_cost = out, cost(out)
        rank = len(out.body.ops[gi].regions[0].args)
        for n in range(1, min(len(movable), MAX_MOVED) + 1):
            for moved in combinations(movable, n):
                if moved == (rank - 1,) and rank <= REMAT_COLUMN_RANK:
                    continue            # the e-graph offered it (remat.column_loop_*) and extraction chose
                new = _move(out, gi, moved, deps)
                c = cost(new)
                if c < best_cost:
                    best, best_cost = new, c
        out = best
    return out


__all__ = ["own_summaries"]
