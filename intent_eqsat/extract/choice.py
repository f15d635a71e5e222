"""A choice (one node per e-class) as a program: the e-classes it reaches from the root, children first, and
whether it is cyclic. Shared by the cost model's exact evaluation and the ranking of candidates
(:mod:`intent_eqsat.extract.rank`), below both of them in the import graph."""
from __future__ import annotations

from typing import Mapping

from intent_eqsat.rules.egraph import Export


class CyclicChoice(ValueError):
    """A choice whose chosen nodes reach their own class again (no finite term)."""


def _eclass_map(export: Export) -> Mapping[str, str]:
    return getattr(export, "eclass_of", None) or {nid: n["eclass"] for nid, n in export.nodes.items()}


def reachable(export: Export, choice: Mapping[str, str], root: str | None = None) -> list[str]:
    """E-classes (with a chosen node) reachable from the root under ``choice``, children before parents (DFS
    post-order, the root last); raises :class:`CyclicChoice` if the chosen nodes form a cycle."""
    root = root or export.root
    nodes = export.nodes
    ecl = _eclass_map(export)
    order: list[str] = []
    state: dict[str, int] = {}                 # 1 = on the DFS path, 2 = done
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        cls, i = stack.pop()
        nid = choice.get(cls)
        if nid is None:
            state[cls] = 2
            continue
        kids = nodes[nid]["children"]
        if i == 0:
            if state.get(cls) == 2:
                continue
            if state.get(cls) == 1:
                raise CyclicChoice(f"e-class {cls} reaches itself")
            state[cls] = 1
        if i < len(kids):
            stack.append((cls, i + 1))
            k = ecl[kids[i]]
            if state.get(k) == 1:
                raise CyclicChoice(f"e-class {k} reaches itself")
            if state.get(k) != 2:
                stack.append((k, 0))
        else:
            state[cls] = 2
            order.append(cls)
    return order


def signature(export: Export, choice: Mapping[str, str], root: str | None = None) -> frozenset:
    return frozenset(choice[c] for c in reachable(export, choice, root))
