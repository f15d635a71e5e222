"""k-best distinct extractions: the ranked candidate list a provider turns into its Config set (issue 4 item 3).

Extract the best program; then, for every e-class on its path that has alternatives, force an alternative node
there (cheapest regret first: the node's own cost minus the class's best; classes of LaunchExprs, types and
attributes are skipped: their members are one value spelled differently) and cost the resulting program; keep the
``k`` cheapest distinct programs. Two modes:

- ``reextract=False`` (default, fast): the forced node is swapped into the best choice and the other classes keep
  their choices; the program is costed exactly (``CostModel.evaluate``) — one pass over the program per candidate.
  Alternatives at the root (tilings, grids: the usual Config variation) are exactly what a re-extraction gives.
- ``reextract=True``: the whole e-graph is re-extracted with the forced node (ancestors may re-choose), as many
  times as there are candidates tried (``max_tries``).

A candidate whose swapped choice is cyclic or illegal (infinite cost) is dropped. Distinct = a different set of
chosen nodes reachable from the root (so a different term).
"""
from __future__ import annotations

import math
from typing import Mapping

from intent_eqsat.extract.choice import CyclicChoice, _eclass_map, reachable, signature
from intent_eqsat.extract.cost import _NEUTRAL, CostModel
from intent_eqsat.extract.extractor import NodeCost, extract
from intent_eqsat.rules.egraph import Export
from intent_eqsat.rules.sorts import SIGNATURES

Choice = dict[str, str]


def additive_cost(export: Export, choice: Mapping[str, str], node_cost: NodeCost, root: str | None = None) -> float:
    """The tree cost of the chosen program under an additive ``node_cost`` (what ``extract`` minimizes)."""
    nodes = export.nodes
    ecl = _eclass_map(export)
    memo: dict[str, float] = {}
    for cls in reachable(export, choice, root):
        nid = choice[cls]
        node = nodes[nid]
        kids = [memo.get(ecl[c], 0.0) for c in node["children"]]
        memo[cls] = node_cost(nid, node, kids)
    return memo.get(root or export.root, math.inf)


def rank(export: Export, model: "CostModel | NodeCost", k: int = 4, *, reextract: bool = False,
         max_tries: int | None = None) -> list[tuple[float, Choice]]:
    """The ``k`` cheapest distinct extractions, best first, as ``(cost, choice)``.

    ``model`` is a :class:`CostModel` (costs are its modelled seconds) or any extractor ``node_cost`` (costs are
    additive tree costs). ``max_tries`` bounds the candidates costed (default ``8 * k``).
    """
    root = export.root
    max_tries = 8 * k if max_tries is None else max_tries
    if isinstance(model, CostModel):
        base, costs = model.extract()
        node_costs = dict(model.node_costs)

        def cost_of(choice: Choice) -> float:
            return model.evaluate(choice, root).total

        def forced_extract(cls: str, nid: str) -> Choice:
            return model.extract({cls: nid})[0]
    else:
        node_costs: dict[str, float] = {}

        def recording(nid: str, node: dict, kids: list[float]) -> float:
            c = model(nid, node, kids)
            node_costs[nid] = c
            return c

        base, costs = extract(export, recording)

        def cost_of(choice: Choice) -> float:
            return additive_cost(export, choice, model, root)

        def forced_extract(cls: str, nid: str) -> Choice:
            def forced(n: str, node: dict, kids: list[float]) -> float:
                return math.inf if node["eclass"] == cls and n != nid else model(n, node, kids)
            return extract(export, forced)[0]

    if root not in costs or not math.isfinite(costs[root]):
        return []
    out: dict[frozenset, tuple[float, Choice]] = {}
    best_cost = cost_of(base)
    out[signature(export, base, root)] = (best_cost, base)
    # alternatives on the chosen path, least regret first
    alts: list[tuple[float, str, str]] = []
    for cls in reachable(export, base, root):
        members = export.classes.get(cls, ())
        op = export.nodes[base[cls]]["op"]
        if len(members) < 2 or op not in SIGNATURES or op in _NEUTRAL:
            continue                          # equal LaunchExprs/types/attributes spelled differently: same program
        for nid in members:
            if nid == base[cls]:
                continue
            c = node_costs.get(nid, math.inf)
            if math.isfinite(c):
                alts.append((c - costs[cls], cls, nid))
    alts.sort()
    for _, cls, nid in alts[:max_tries]:
        if reextract:
            choice = forced_extract(cls, nid)
            if root not in choice:
                continue
        else:
            choice = dict(base)
            choice[cls] = nid
        try:
            sig = signature(export, choice, root)
        except CyclicChoice:
            continue
        if sig in out:
            continue
        c = cost_of(choice)
        if math.isfinite(c):
            out[sig] = (c, choice)
    ranked = sorted(out.values(), key=lambda x: x[0])
    return ranked[:k]


__all__ = ["rank", "reachable", "signature", "additive_cost", "CyclicChoice"]
