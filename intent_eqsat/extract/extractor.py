"""Extraction: pick one e-node per e-class minimizing a cost, over the e-graph's JSON export.

Costs are additive over the chosen tree (a shared subterm is counted at every use, which is what a program that
recomputes it would pay; DAG-aware costs live in the cost model). The fixpoint runs in Python over plain dicts, so
it stays fast on large e-graphs (DESIGN: egglog's Python cost callback is ~0.1 ms per call, far too slow there).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # the rules package imports this module (optimize); import its pieces lazily to avoid a cycle
    from intent_eqsat.rules.egraph import Export

NodeCost = Callable[[str, dict, list[float]], float]


def size_cost(node_id: str, node: dict, child_costs: list[float]) -> float:
    """One per e-node: the smallest term."""
    return 1.0 + sum(child_costs)


def extract(export: Export, node_cost: NodeCost = size_cost) -> tuple[dict[str, str], dict[str, float]]:
    """``choice[eclass] = node id`` and ``cost[eclass]`` for every e-class with a finite-cost term."""
    from intent_eqsat.rules.sorts import SIGNATURES
    nodes = export.nodes
    ecl = export.eclass_of or {nid: n["eclass"] for nid, n in nodes.items()}
    cost: dict[str, float] = {}
    choice: dict[str, str] = {}
    # parents index: e-class -> nodes that have it as a child (for worklist propagation)
    parents: dict[str, list[str]] = {}
    for nid, node in nodes.items():
        if node["op"] not in SIGNATURES:
            continue
        for c in node["children"]:
            parents.setdefault(ecl[c], []).append(nid)
    primitive_classes = {node["eclass"] for nid, node in nodes.items() if node["op"] not in SIGNATURES}
    for pc in primitive_classes:
        cost[pc] = 0.0
    work = [nid for nid, node in nodes.items() if node["op"] in SIGNATURES]
    queued = set(work)
    while work:
        nid = work.pop()
        queued.discard(nid)
        node = nodes[nid]
        kids = [ecl[c] for c in node["children"]]
        if any(k not in cost for k in kids):
            continue
        c = node_cost(nid, node, [cost[k] for k in kids])
        ec = node["eclass"]
        if c < cost.get(ec, math.inf) - 1e-12 or (ec in choice and choice[ec] == nid and c != cost[ec]):
            cost[ec] = c
            choice[ec] = nid
            for p in parents.get(ec, ()):
                if p not in queued:
                    queued.add(p)
                    work.append(p)
    return choice, cost


def eclass(export: "Export", node_id: str) -> str:
    """The e-class of a node id (constructor, primitive or rule-only function node)."""
    ecl = getattr(export, "eclass_of", None)
    if ecl and node_id in ecl:
        return ecl[node_id]
    return export.nodes[node_id]["eclass"]


def is_primitive(export: "Export", node_id: str) -> bool:
    """A literal (i64, string) node: not an e-class of the term."""
    from intent_eqsat.rules.sorts import SIGNATURES
    node = export.nodes.get(node_id)
    return node is not None and node["op"] not in SIGNATURES


def chosen_classes(export: "Export", choice: dict, root: str) -> list[str]:
    """E-classes of the term ``choice`` selects below ``root``, root first (breadth-first, each once)."""
    out, seen, queue = [], {root}, [root]
    while queue:
        ec = queue.pop(0)
        out.append(ec)
        for child in export.nodes[choice[ec]]["children"]:
            if is_primitive(export, child):
                continue
            cc = eclass(export, child)
            if cc not in seen and cc in choice:
                seen.add(cc)
                queue.append(cc)
    return out

