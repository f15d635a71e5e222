"""A prefix re-summed by every tile program becomes a running value carried across the tiles of one program
(issue 27 item 4, SPEC PASS-3.4 "remat vs materialize", PASS-4 "order-preserving reassociation of scan").

Why: blocking lifts a scan over a tile ``[j0, j0 + T)`` of its axis to ``c(prefix(j0), tile_scan)``, where
``prefix(j0)`` is a reduction loop over ``[0, j0)`` (``rulebooks/blocking.py``). Each tile program recomputes its
own prefix, so a row of ``N`` members costs ``N^2 / (2T)`` loads: at 32768 columns and ``T = 256`` every program
re-reads half its row on average, 64 times the data the scan needs. When the rows alone fill the GPU, one program
per row tile that walks its column tiles in order can carry the prefix instead: tile ``t + 1``'s prefix is tile
``t``'s prefix combined with the members of tile ``t`` (``O(N)`` work). Which form is faster depends on how many
row tiles there are (few rows: the re-summing programs parallelize, the carried loop does not), so the cost model
chooses between the two kernels.

Declaration (SPEC PASS-1):

- Reads: execution groups of row-major segments of rank >= 2 without grouped order; the group's top-level ops and
  which of them read a group coordinate ``a_k`` (directly or through their operands and regions); *prefix loops*:
  top-level ``for`` loops marked ``reduce = c`` (c in add, mul, max, min) with one carry, lower bound the launch
  constant 0, constant step ``S``, upper bound ``mul(a_k, T)`` with ``T`` a launch constant multiple of ``S``, and
  a body (with its nested regions) that reads ``a_k`` only through that bound (or a scalar broadcast of it) as the
  right operand of ``cmp lt`` whose left operand is the loop's lane coordinate (its induction variable, or
  ``add(broadcast(iv), range)`` with a range at most ``S`` wide); the cost model (``PassContext.cost``) of the
  kernel before and after.
- Legality: every chunk ``[u, u + S)`` of a prefix loop lies below its bound (``lb = 0`` and ``T % S == 0``), so
  the lane check is all-true in every iteration and the member of iteration ``u`` does not depend on ``a_k``:
  ``prefix(a_k + 1)`` is ``prefix(a_k)``'s fold continued over ``[a_k T, (a_k + 1) T)`` in the same order (bitwise
  equal, not just up to reassociation). The group's effects are region-free and every one reads ``a_k`` (each
  program's writes happen in its own column iteration, as distinct as they were across programs); no nested
  region writes. Applied only where the cost model prices the new kernel below the old (always when no model is
  given, as in ``intent-eqsat opt --group``).
- Rewrites: the segment loses its extent ``E_k``; the group loses coordinate ``a_k``; ops that do not read ``a_k``
  stay where they were (before the loop); the others move into ``for a_k in [0, E_k)`` carrying one running value
  per prefix loop, initialized with the prefix loop's initial value (the prefix of tile 0 is empty); inside, the
  prefix loop's result is the carried value, and after the iteration's effects the carried value is continued by
  a copy of the prefix loop over ``w in [0, min(T, (E_k - 1) T - a_k T))`` reading member ``a_k T + w`` (empty in
  the last iteration, so no member past the last tile is read; counted from 0 so the cost model's trip count does
  not depend on the column loop's induction variable, which it cannot evaluate).
- Preserves: every stored value bit for bit (same members, same fold order); the set of effects (each element is
  written once by the same expression; effects of different programs were unordered, now they run in column
  order inside one program); the public ABI and compile options.
- Invalidates: the segment's extents and the launch grid, the group's coordinates, loop counts and live ranges (a
  carried value per prefix loop), the launch resources (chosen after this group) and every cost term.
- Verifier: the shared GPU verifier after the group (dominance of the hoisted values, the loop's carried types,
  the stores' conflict-freedom across the remaining programs).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.launch import Const, LaunchExpr, simplify
from intent_eqsat.ir.loop_rewrite import FreshNames, clone_region, group_segment, range_width, \
    with_group_segment
from intent_eqsat.ir.loop_rewrite import dependent_names as _dependent, operands_read as _reads, \
    writes as _writes
from intent_eqsat.ir.types import ScalarType

INDEX = ScalarType("index")
COMBINERS = ("add", "mul", "max", "min")


@dataclass
class _Prefix:
    """A prefix loop of a group: the loop, its bound ``mul(a_k, T)`` and the scalar broadcasts of that bound its
    body reads."""

    loop: Op
    bound: Value
    tile: int
    bound_views: list[Op]


def _const_of(v: Value, defs: dict[str, Op]) -> int | None:
    """The integer a ``launch``/``const`` scalar holds, None when it is not one."""
    op = defs.get(v.name)
    if op is None or op.operands:
        return None
    if op.name == "launch" and isinstance(op.attrs.get("expr"), Const):
        return int(op.attrs["expr"].value)
    if op.name == "const" and isinstance(op.attrs.get("value"), int) and not isinstance(op.attrs["value"], bool):
        return int(op.attrs["value"])
    return None


def _lane_of(v: Value, iv: Value, step: int, defs: dict[str, Op]) -> bool:
    """``v`` is the loop's lane coordinate: its induction variable, or ``add(broadcast(iv), range)`` with the range
    at most ``step`` wide (lanes ``[u, u + W)``, ``W <= S``)."""
    if v.name == iv.name:
        return True
    op = defs.get(v.name)
    if op is None or op.name != "add" or len(op.operands) != 2:
        return False
    kinds = []
    for x in op.operands:
        d = defs.get(x.name)
        if d is not None and d.name == "broadcast" and d.operands[0].name == iv.name and not d.attrs.get("dims"):
            kinds.append("iv")
        elif (w := range_width(d)) is not None and w <= step:
            kinds.append("range")
    return sorted(kinds) == ["iv", "range"]


def _prefix(op: Op, coord: Value, dep: set[str], defs: dict[str, Op], region: Region) -> _Prefix | None:
    """``op`` as a prefix loop over ``[0, mul(coord, T))`` (module docstring, Reads/Legality), else None."""
    if op.name != "for" or op.attrs.get("reduce") not in COMBINERS or len(op.operands) != 4 or len(op.results) != 1:
        return None
    lb, ub, step, init = op.operands
    if _const_of(lb, defs) != 0 or init.name in dep or step.name in dep:
        return None
    s = _const_of(step, defs)
    bound = defs.get(ub.name)
    if s is None or s <= 0 or bound is None or bound.name != "mul":
        return None
    a, b = bound.operands
    t = _const_of(b, defs) if a.name == coord.name else _const_of(a, defs) if b.name == coord.name else None
    if t is None or t <= 0 or t % s:
        return None
    read = {v.name for v in _reads(op)}
    views = [o for o in region.ops if o.name == "broadcast" and o.operands[0].name == ub.name
             and not o.attrs.get("dims") and o.result.name in read]
    allowed = {ub.name} | {o.result.name for o in views}
    iv = op.regions[0].args[0]

    def clean(r: Region) -> bool:
        for inner in r.ops:
            for i, v in enumerate(inner.operands):
                if v.name not in dep:
                    continue
                if not (v.name in allowed and inner.name == "cmp" and inner.attrs.get("pred") == "lt" and i == 1
                        and _lane_of(inner.operands[0], iv, s, defs)):
                    return False
            if not all(clean(x) for x in inner.regions):
                return False
        return True

    if not clean(op.regions[0]) or any(_writes(x) for x in walk(op.regions[0])):
        return None
    return _Prefix(op, ub, t, views)


def _carry_group(kernel: Kernel, gi: int, names: FreshNames, defs: dict[str, Op]) -> Kernel | None:
    """The kernel with execution group ``gi``'s prefix loops carried across one of its coordinates, or None."""
    found = group_segment(kernel, gi)
    if found is None:
        return None
    group, seg, region = found
    if seg.order != "row_major" or seg.group_size is not None or seg.descending:
        return None
    body_ops = region.ops[:-1]
    for k, coord in enumerate(region.args):
        dep = _dependent(region, coord)
        prefixes = [p for op in body_ops if (p := _prefix(op, coord, dep, defs, region)) is not None]
        if not prefixes:
            continue
        effects = [op for op in body_ops if _writes(op)]
        if any(op.regions or not any(v.name in dep for v in op.operands) for op in effects) or \
                any(_writes(x) for op in body_ops if op.regions for x in walk(op.regions[0])):
            continue
        return _rewrite(kernel, gi, k, prefixes, dep, names, defs)
    return None


def _rewrite(kernel: Kernel, gi: int, k: int, prefixes: list[_Prefix], dep: set[str], names: FreshNames,
             defs: dict[str, Op]) -> Kernel:
    group = kernel.body.ops[gi]
    region = group.regions[0]
    seg = kernel.space.segments[group.attrs["segment"]]
    extent = seg.extents[k]
    coord = region.args[k]
    origin = group.attrs.get("origin")
    tagged = {"origin": origin} if origin else {}
    by_loop = {id(p.loop): p for p in prefixes}

    def launch(e: LaunchExpr, base: str, into: list[Op]) -> Value:
        v = Value(names.fresh(base), INDEX)
        into.append(Op("launch", [], [v], {"expr": simplify(e)}))
        return v

    before: list[Op] = []
    zero = launch(Const(0), "col_lb", before)
    trips = launch(extent, "col_trips", before)
    one = launch(Const(1), "col_step", before)
    iv = Value(names.fresh(coord.name), INDEX)
    runs = [Value(names.fresh("run"), p.loop.results[0].type) for p in prefixes]
    rename: dict[str, Value] = {coord.name: iv}
    for p, run in zip(prefixes, runs):
        rename[p.loop.results[0].name] = run
    inside: list[Op] = []
    for op in region.ops[:-1]:
        if op.results and op.results[0].name not in dep or (not op.results and not _writes(op)):
            before.append(op)
            continue
        if id(op) in by_loop:
            continue
        results = []
        for v in op.results:
            rename[v.name] = Value(names.fresh(v.name), v.type)
            results.append(rename[v.name])
        inside.append(replace(op, operands=[rename.get(v.name, v) for v in op.operands], results=results,
                              regions=[clone_region(r, names, rename) for r in op.regions]))
    # continue each running value over this column tile: members [j0, j0 + span), span = min(T, (E - 1) T - j0)
    # (0 in the last iteration), counted from 0 so the trip count reads no induction variable
    nexts = []
    for p, run in zip(prefixes, runs):
        loop = p.loop
        start = rename[p.bound.name]
        tile = launch(Const(p.tile), "tile", inside)
        last = launch((extent - 1) * p.tile, "last_start", inside)
        left = Value(names.fresh("cols_left"), INDEX)
        inside.append(Op("sub", [last, start], [left]))
        span = Value(names.fresh("span"), INDEX)
        inside.append(Op("min", [tile, left], [span]))
        end = Value(names.fresh("prefix_end"), INDEX)
        inside.append(Op("add", [start, span], [end]))
        sub = {p.bound.name: end}
        for view in p.bound_views:
            v = Value(names.fresh(view.result.name), view.result.type)
            inside.append(replace(view, operands=[end], results=[v]))
            sub[view.result.name] = v
        lb, _, step, _ = loop.operands
        body = loop.regions[0]
        offset = Value(names.fresh("offset"), INDEX)
        member = Value(names.fresh(body.args[0].name), INDEX)
        sub[body.args[0].name] = member
        cloned = clone_region(Region(body.args[1:], body.ops), names, sub)
        cloned = Region([offset] + cloned.args, [Op("add", [start, offset], [member])] + cloned.ops)
        cont = Value(names.fresh(loop.results[0].name), loop.results[0].type)
        inside.append(replace(loop, operands=[lb, span, step, run], results=[cont], regions=[cloned]))
        nexts.append(cont)
    inside.append(Op("yield", nexts, [], dict(tagged)))
    body = Region([iv] + runs, inside)
    results = [Value(names.fresh("carried"), r.type) for r in runs]
    col_loop = Op("for", [zero, trips, one] + [p.loop.operands[3] for p in prefixes], results, dict(tagged), [body])
    new_region = Region([a for i, a in enumerate(region.args) if i != k], before + [col_loop, region.ops[-1]])
    new_group = replace(group, regions=[new_region])
    return with_group_segment(kernel, gi, new_group,
                              replace(seg, extents=tuple(e for i, e in enumerate(seg.extents) if i != k)))


def carry_prefix_loops(kernel: Kernel, cost: Callable[[Kernel], float] | None = None) -> Kernel:
    """``kernel`` with each execution group's prefix loops carried across the column tiles of one program where
    the cost model prices that lower (module docstring); unchanged otherwise."""
    from intent_eqsat.ir.loop_rewrite import defining_ops
    out = kernel
    for gi, op in enumerate(kernel.body.ops):
        if op.name != "execution_group":
            continue
        new = _carry_group(out, gi, FreshNames(out), defining_ops(out))
        if new is None:
            continue
        if cost is None or cost(new) < cost(out):
            out = new
    return out


__all__ = ["carry_prefix_loops"]
