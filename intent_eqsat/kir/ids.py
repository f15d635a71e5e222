"""Stable ids for KIR nodes, derived from position only.

Numbering (why positional: the parser and the builder must agree, and re-parsing printed text must reproduce ids):

* a kernel's id is its name; its parameters are ``<kernel>.p0, .p1, ...``; its statements ``<kernel>.s0, ...``;
* every node below a statement (expressions, bindings, blocks, block lets) is ``<stmt>.e<n>``, numbered in
  pre-order (a node before its children, children in source order), starting at ``e0``;
* a combiner's id is its name and the nodes below it are ``<combiner>.e<n>`` (identity first, then the body);
* the module's id is ``module``.
"""
from __future__ import annotations

import dataclasses
from itertools import count
from typing import Callable

from intent_eqsat.kir import model as m


def replace_children(node: m.Node, fn: Callable[[m.Node], m.Node]) -> m.Node:
    """Rebuild ``node`` with every direct child replaced by ``fn(child)`` (fields not holding nodes are kept)."""
    changes = {}
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if isinstance(v, m.Node):
            changes[f.name] = fn(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, m.Node) for x in v):
            changes[f.name] = tuple(fn(x) for x in v)
    return dataclasses.replace(node, **changes) if changes else node


def _child_slots(node: m.Node) -> list[tuple[str, bool, tuple[m.Node, ...]]]:
    """The fields of ``node`` holding nodes, as (field name, holds a tuple, the nodes), in field order (the order
    of :func:`replace_children`)."""
    slots = []
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if isinstance(v, m.Node):
            slots.append((f.name, False, (v,)))
        elif isinstance(v, tuple) and v and all(isinstance(x, m.Node) for x in v):
            slots.append((f.name, True, v))
    return slots


def _number_below(root: m.Node, own_id: str) -> m.Node:
    """``root`` with id ``own_id`` and the nodes below it numbered ``<own_id>.e<n>`` in pre-order.

    Iterative (an explicit stack of half-rebuilt nodes), so that a builder-made tree of any depth is numbered and
    then refused by the verifier's depth check rather than overflowing the Python stack here."""
    counter = count()

    def open_(node: m.Node, node_id: str) -> list:
        node = dataclasses.replace(node, id=node_id)
        slots = _child_slots(node)
        pending = [c for _, _, nodes in slots for c in nodes]
        return [node, slots, pending, 0, []]   # node, its slots, children to number, next child, rebuilt children

    stack = [open_(root, own_id)]
    while True:
        frame = stack[-1]
        node, slots, pending, i, rebuilt = frame
        if i < len(pending):
            frame[3] = i + 1
            stack.append(open_(pending[i], f"{own_id}.e{next(counter)}"))
            continue
        stack.pop()
        changes, k = {}, 0
        for name, is_tuple, nodes in slots:
            part = rebuilt[k:k + len(nodes)]
            k += len(nodes)
            changes[name] = tuple(part) if is_tuple else part[0]
        built = dataclasses.replace(node, **changes) if changes else node
        if not stack:
            return built
        stack[-1][4].append(built)


def assign_ids(module: m.KirModule) -> m.KirModule:
    """Return ``module`` with every node's ``id`` set from its position (idempotent)."""
    items: list[m.Kernel | m.Combiner] = []
    for item in module.items:
        if isinstance(item, m.Kernel):
            params = tuple(dataclasses.replace(p, id=f"{item.name}.p{i}") for i, p in enumerate(item.params))
            body = tuple(_number_below(s, f"{item.name}.s{i}") for i, s in enumerate(item.body))
            items.append(dataclasses.replace(item, id=item.name, params=params, body=body))
        else:
            items.append(_number_below(item, item.name))
    return dataclasses.replace(module, id="module", items=tuple(items))


def index_by_id(module: m.KirModule) -> dict[str, m.Node]:
    """Map every id in ``module`` to its node (for diagnostics and analyses)."""
    return {n.id: n for n in m.walk(module)}
