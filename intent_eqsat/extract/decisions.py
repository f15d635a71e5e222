"""Rematerialize-vs-materialize decisions of an extraction, read back for the report (SPEC PASS-3.4; issue 4:
"softmax's report shows the remat/materialize decision and why").

``remat.materialize`` leaves both forms of an operand list in the e-graph: the consumer reads its own copy of a
loop written inside the consumer's loop region (recomputed for that consumer: *rematerialize*), or the same loop
written one region further out, shared with every other consumer out there (one value kept live across the loop:
*materialize*). The extractor picks one e-node per e-class; this module finds, in the chosen program, every
operand-list e-class that holds such a pair (two ``ValsCons`` with one tail whose heads are results of ``for`` ops
with the same attributes, their regions one depth apart), says which form was chosen, and costs the other by
extracting again with the chosen node banned. Nothing here is read from kernel or op names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from intent_eqsat.extract.extractor import chosen_classes, eclass


@dataclass(frozen=True)
class Decision:
    """One value's remat/materialize decision."""

    value: str                 # the loop's origin (KIR id) or its e-class
    decision: str              # "materialize" | "rematerialize"
    cost: float                # modelled kernel time of the extracted program
    alternative_cost: float    # modelled kernel time with the other form forced (inf: no legal program)
    copies: int = 1            # loops computing the value in the extracted program
    alternative_copies: int = 2
    kind: str = "value"        # "value": consumers share a loop or not; "program_axis": across programs

    @property
    def why(self) -> str:
        other = "rematerialize" if self.decision == "materialize" else "materialize"
        if self.kind == "program_axis":
            what = ("one program per tile of the leading axes computes them once and keeps them live across its "
                    "loop over the last axis" if self.decision == "materialize" else
                    "every program of the last axis recomputes them")
        else:
            what = (f"{self.copies} loop computes it for every consumer, kept live across the consumers' loops"
                    if self.decision == "materialize" else
                    f"{self.copies} loops recompute it, one per consumer")
        if not math.isfinite(self.alternative_cost):
            return f"{what}; {other} has no legal program under the cost model"
        ratio = self.alternative_cost / self.cost if self.cost > 0 else math.inf
        return (f"{what}: modelled {self.cost:.3g} s vs {self.alternative_cost:.3g} s to {other} "
                f"({ratio:.2f}x)")

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "decision": self.decision, "cost": self.cost,
                "alternative_cost": self.alternative_cost, "copies": self.copies,
                "alternative_copies": self.alternative_copies, "kind": self.kind, "why": self.why}

    def __str__(self) -> str:
        return f"{self.value}: {self.decision} ({self.why})"


def _lit(export: Any, nid: str) -> str:
    return export.nodes[nid]["op"]


def _loop_info(export: Any, choice: dict, val_class: str) -> tuple[str, int, str] | None:
    """(attrs class, first region depth, origin) of the ``for`` whose result the class's chosen node is."""
    nid = choice.get(val_class)
    if nid is None or export.nodes[nid]["op"] != "Res":
        return None
    multi = choice.get(eclass(export, export.nodes[nid]["children"][0]))
    if multi is None or export.nodes[multi]["op"] != "Multi":
        return None
    kids = export.nodes[multi]["children"]
    if _lit(export, kids[0]) != '"for"':
        return None
    regions = choice.get(eclass(export, kids[4]))
    if regions is None or export.nodes[regions]["op"] != "RegionsCons":
        return None
    region = choice.get(eclass(export, export.nodes[regions]["children"][0]))
    if region is None:
        return None
    depth = int(_lit(export, export.nodes[region]["children"][0]))
    attrs = eclass(export, kids[2])
    return attrs, depth, _origin(export, choice, attrs) or val_class


def _origin(export: Any, choice: dict, amap_class: str) -> str | None:
    """The ``origin`` attribute of an attribute-map e-class (following the chosen cons cells)."""
    cur = amap_class
    for _ in range(64):
        nid = choice.get(cur)
        if nid is None or export.nodes[nid]["op"] != "AMapCons":
            return None
        key, val, tail = export.nodes[nid]["children"]
        if _lit(export, key) == '"origin"':
            a = choice.get(eclass(export, val))
            if a is not None and export.nodes[a]["op"] == "AStr":
                return _lit(export, export.nodes[a]["children"][0]).strip('"')
            return None
        cur = eclass(export, tail)
    return None


def _operand_heads(export: Any, choice: dict, vals_class: str) -> list[str]:
    """The value classes of an operand list (following the chosen cons cells)."""
    out, cur = [], vals_class
    for _ in range(64):
        nid = choice.get(cur)
        if nid is None or export.nodes[nid]["op"] != "ValsCons":
            break
        head, cur = (eclass(export, c) for c in export.nodes[nid]["children"])
        out.append(head)
    return out


def _copies(export: Any, choice: dict, attrs_class: str) -> int:
    """How many distinct loops with these attributes the chosen program computes."""
    return sum(1 for ec in chosen_classes(export, choice, export.root)
               if (info := _loop_info(export, choice, ec)) is not None and info[0] == attrs_class)


def materialization_decisions(export: Any, model: Any, choice: dict, *, limit: int = 8) -> list[Decision]:
    """Every remat/materialize pair in the program ``choice`` extracts (at most ``limit``), with the modelled cost
    of the road not taken. ``model`` is a bound cost model (``extract.cost.CostModel``): ``extract(forced)`` re-runs
    the extraction with one e-class's node forced, ``evaluate(choice)`` costs a whole choice exactly.

    A pair is an op e-class holding two ``Op`` nodes of one name and attributes whose operands differ in exactly
    one position, there the results of two ``for`` ops with the same attributes whose regions are one depth apart
    (what ``remat.materialize_*`` unions). Which form shares is read from the whole program, not from the depth:
    a consumer's operand list can be shared with a consumer in another region, so the decision is
    "materialize" when the extracted program computes fewer loops with those attributes than the alternative."""
    root = export.root
    here = float(model.evaluate(choice, root).total)
    found: dict[str, Decision] = {}
    for ec in sorted(chosen_classes(export, choice, root)):
        if len(found) >= limit:
            break
        ops = [n for n in export.classes.get(ec, []) if export.nodes[n]["op"] == "Op"]
        chosen = choice[ec]
        if len(ops) < 2 or chosen not in ops:
            continue
        name, vals, attrs, _ = (eclass(export, c) for c in export.nodes[chosen]["children"])
        for other in ops:
            oname, ovals, oattrs, _ = (eclass(export, c) for c in export.nodes[other]["children"])
            if other == chosen or (oname, oattrs) != (name, attrs) or ovals == vals:
                continue
            alt_choice, _ = model.extract({ec: other})
            if alt_choice.get(ec) != other or root not in alt_choice:
                continue
            mine_heads = _operand_heads(export, choice, vals)
            their_heads = _operand_heads(export, alt_choice, ovals)
            diff = [(a, b) for a, b in zip(mine_heads, their_heads) if a != b]
            if len(mine_heads) != len(their_heads) or len(diff) != 1:
                continue
            mine, theirs = _loop_info(export, choice, diff[0][0]), _loop_info(export, alt_choice, diff[0][1])
            if mine is None or theirs is None or mine[0] != theirs[0] or abs(mine[1] - theirs[1]) != 1:
                continue
            n_mine, n_theirs = _copies(export, choice, mine[0]), _copies(export, alt_choice, mine[0])
            if n_mine == n_theirs:
                continue                     # both forms compute it equally often: no decision here
            alt = float(model.evaluate(alt_choice, root).total)
            decision = "materialize" if n_mine < n_theirs else "rematerialize"
            found.setdefault(mine[2], Decision(mine[2], decision, here, alt, n_mine, n_theirs))
            break
    return sorted(found.values(), key=lambda d: d.value)


def _rank(export: Any, choice: dict, kernel_node: str) -> int | None:
    """The number of axes of a kernel node's (first) segment, read through ``choice``."""
    segs = choice.get(eclass(export, export.nodes[kernel_node]["children"][1]))
    if segs is None or export.nodes[segs]["op"] != "SegsCons":
        return None
    seg = choice.get(eclass(export, export.nodes[segs]["children"][0]))
    if seg is None:
        return None
    n, cur = 0, eclass(export, export.nodes[seg]["children"][0])
    while (nid := choice.get(cur)) is not None and export.nodes[nid]["op"] == "LEsCons":
        n += 1
        cur = eclass(export, export.nodes[nid]["children"][1])
    return n


def program_axis_decision(export: Any, model: Any, choice: dict, kernel: str) -> Decision | None:
    """``remat.column_loop_*``: the kernel's e-class holds programs over a rank-r segment and programs over its
    first r - 1 axes that loop over the last one. Fewer axes materialize the values that do not read the last
    coordinate (computed once per program, live across the loop); more axes rematerialize them (every program of
    the last axis recomputes them). The alternative is the cheapest program of the other form."""
    root = export.root
    chosen = choice.get(root)
    if chosen is None:
        return None
    rank = _rank(export, choice, chosen)
    if rank is None:
        return None
    best: tuple[float, int] | None = None
    for other in export.classes.get(root, []):
        if other == chosen or export.nodes[other]["op"] != "Kernel":
            continue
        r = _rank(export, choice, other)
        if r is None or abs(r - rank) != 1:
            continue
        alt_choice, _ = model.extract({root: other})
        if alt_choice.get(root) != other:
            continue
        cost = float(model.evaluate(alt_choice, root).total)
        if math.isfinite(cost) and (best is None or cost < best[0]):
            best = (cost, r)
    if best is None:
        return None
    here = float(model.evaluate(choice, root).total)
    fewer = rank < best[1]
    return Decision(f"{kernel}: values that do not read the last program coordinate",
                    "materialize" if fewer else "rematerialize", here, best[0],
                    1 if fewer else 2, 2 if fewer else 1, kind="program_axis")


__all__ = ["Decision", "materialization_decisions", "program_axis_decision"]
