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
from typing import Callable, Iterator

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


def _number(node: m.Node, prefix: str, counter: Iterator[int]) -> m.Node:
    node = dataclasses.replace(node, id=f"{prefix}.e{next(counter)}")
    return replace_children(node, lambda c: _number(c, prefix, counter))


def _number_below(node: m.Node, own_id: str) -> m.Node:
    counter = count()
    node = dataclasses.replace(node, id=own_id)
    return replace_children(node, lambda c: _number(c, own_id, counter))


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
