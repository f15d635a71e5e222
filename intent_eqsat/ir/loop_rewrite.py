"""Helpers the post-binding loop passes share (``ir.tail_split``, ``ir.range_skip``, ``ir.unswitch``,
``ir.program_order``): the op defining each value, fresh SSA names, the width of a ``range``, an inner-first walk that lets a pass replace an op by a list of ops, a renamed copy of a loop body and
checks replaced by ``true``."""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable, Iterator

from intent_eqsat.ir.core import Kernel, Op, Region, Segment, Value
from intent_eqsat.ir.launch import Const
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.ir.types import FragmentType


def defining_ops(kernel: Kernel) -> dict[str, Op]:
    """SSA name -> the op whose result it is, over the whole kernel (names are unique in a kernel)."""
    from intent_eqsat.ir.core import walk
    return {v.name: op for op in walk(kernel.body) for v in op.results}


class FreshNames:
    """Fresh SSA names that no value of the kernel uses."""

    def __init__(self, kernel: Kernel):
        from intent_eqsat.ir.core import walk
        self.used = {a.name for a in kernel.body.args}
        for op in walk(kernel.body):
            self.used.update(v.name for v in op.results)
            for r in op.regions:
                self.used.update(a.name for a in r.args)
        self.n = itertools.count()

    def fresh(self, base: str) -> str:
        while True:
            name = f"{base}_t{next(self.n)}"
            if name not in self.used:
                self.used.add(name)
                return name


def range_width(op: Op | None) -> int | None:
    """N for ``range() : frag<index, [N]>`` starting at 0."""
    if op is None or op.name != "range" or op.attrs.get("start", 0) != 0:
        return None
    t = op.result.type
    if not isinstance(t, FragmentType) or len(t.shape) != 1 or not isinstance(t.shape[0], Const):
        return None
    return int(t.shape[0].value)


def rewrite_ops(kernel: Kernel, fn: Callable[[Op], "list[Op] | None"]) -> Kernel:
    """``kernel`` with every op (its regions rewritten first) replaced by ``fn(op)``; None keeps the op."""
    def rewrite(region: Region) -> list[Op]:
        ops: list[Op] = []
        for op in region.ops:
            op = replace(op, regions=[Region(list(r.args), rewrite(r)) for r in op.regions])
            new = fn(op)
            ops.extend([op] if new is None else new)
        return ops

    return replace(kernel, body=Region(list(kernel.body.args), rewrite(kernel.body)))


def clone_region(region: Region, names: FreshNames, rename: dict[str, Value]) -> Region:
    """``region`` with every value it defines renamed (uses follow ``rename``)."""
    def new(v: Value) -> Value:
        rename[v.name] = Value(names.fresh(v.name), v.type)
        return rename[v.name]

    args = [new(a) for a in region.args]
    ops = []
    for op in region.ops:
        operands = [rename.get(v.name, v) for v in op.operands]
        regions = [clone_region(r, names, rename) for r in op.regions]
        results = [new(v) for v in op.results]
        ops.append(replace(op, operands=operands, results=results, regions=regions))
    return Region(args, ops)


def checks_true(body: Region, checks: list[Value]) -> Region:
    """``body`` with the ops defining ``checks`` replaced by the constant ``true`` of the same type."""
    names = {v.name for v in checks}
    return Region(body.args, [Op("const", [], list(o.results), {"value": True})
                              if o.results and o.results[0].name in names else o for o in body.ops])



def operands_read(op: Op) -> Iterator[Value]:
    """Every operand ``op`` and the ops of its nested regions read."""
    yield from op.operands
    for r in op.regions:
        for inner in r.ops:
            yield from operands_read(inner)


def writes(op: Op) -> bool:
    """``op`` itself has an effect beyond reading (an op the spec does not know counts as writing)."""
    return SPECS[op.name].effect not in ("none", "read") if op.name in SPECS else True


def dependent_names(region: Region, coord: Value) -> set[str]:
    """``coord``'s name and the names of ``region``'s top-level values that read it (directly, through operands or
    nested regions, or through other such values)."""
    dep = {coord.name}
    for op in region.ops:
        if any(v.name in dep for v in operands_read(op)):
            dep.update(v.name for v in op.results)
    return dep


def with_group_segment(kernel: Kernel, gi: int, group: Op, segment: Segment) -> Kernel:
    """``kernel`` with top-level op ``gi`` replaced by the execution group ``group`` and that group's segment by
    ``segment``."""
    segments = list(kernel.space.segments)
    segments[group.attrs["segment"]] = segment
    ops = list(kernel.body.ops)
    ops[gi] = group
    return replace(kernel, space=replace(kernel.space, segments=tuple(segments)),
                   body=Region(list(kernel.body.args), ops))


def group_segment(kernel: Kernel, gi: int) -> tuple[Op, Segment, Region] | None:
    """Top-level op ``gi`` as an execution group with its segment and region, when the segment index is valid, the
    segment has rank >= 2 and as many coordinates as the region has arguments, and the region ends with an empty
    yield (the groups the coordinate-moving passes take); None otherwise."""
    group = kernel.body.ops[gi]
    si = group.attrs.get("segment")
    segs = kernel.space.segments
    if group.name != "execution_group" or not isinstance(si, int) or si >= len(segs):
        return None
    seg, region = segs[si], group.regions[0]
    if len(seg.extents) < 2 or len(region.args) != len(seg.extents) or not region.ops \
            or region.ops[-1].name != "yield" or region.ops[-1].operands:
        return None
    return group, seg, region


__all__ = ["FreshNames", "checks_true", "clone_region", "dependent_names", "group_segment", "operands_read",
           "range_width", "rewrite_ops", "with_group_segment", "writes"]
