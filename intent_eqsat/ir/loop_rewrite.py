"""Helpers the post-binding loop passes share (``ir.tail_split``, ``ir.range_skip``, ``ir.unswitch``,
``ir.program_order``): the op defining each value, fresh SSA names, the width of a ``range``, an inner-first walk that lets a pass replace an op by a list of ops, a renamed copy of a loop body and
checks replaced by ``true``."""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable

from intent_eqsat.ir.core import Kernel, Op, Region, Value
from intent_eqsat.ir.launch import Const
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


__all__ = ["FreshNames", "checks_true", "clone_region", "range_width", "rewrite_ops"]
