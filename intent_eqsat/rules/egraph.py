"""One kernel in an egglog e-graph: build it from the GPU IR, run rule schedules, export it for extraction.

The e-graph is the search space; the Python kernel stays the authority (DESIGN). ``KernelGraph.export()`` reads
the e-graph back through egglog's JSON serialization by the pinned constructor names, which the extractor walks in
Python (fast on large graphs, no per-node Python callback inside egglog).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from egglog import EGraph

from intent_eqsat.ir.core import Kernel
from intent_eqsat.rules.encode import encode_kernel
from intent_eqsat.rules.sorts import CONSTRUCTORS, SIGNATURES
from intent_eqsat.rules.terms import T, to_egglog_program


@dataclass
class Export:
    """The e-graph as plain data: ``nodes[id] = {op, children, eclass}`` and the root e-class."""

    nodes: dict[str, dict[str, Any]]
    classes: dict[str, list[str]]
    root: str
    #: e-class of every node id that may appear as a child (constructor, primitive or rule-only function)
    eclass_of: dict[str, str] | None = None
    #: what a cost model derives from the export alone, whatever the sizes (the smallest term of each class, its
    #: decoded terms, lists and attributes): tile binding costs one export at hundreds of size environments
    #: (``intent_eqsat.extract.cost.CostModel``); never part of equality
    statics: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.nodes)


_LEAF = {"LE": ("LeNone",), "LEs": ("LEsNil",), "Strs": ("StrsNil",), "Ty": ("TyScalar", ""), "Tys": ("TysNil",),
         "A": ("AInt", 0), "As": ("AsNil",), "AMap": ("AMapNil",), "Vals": ("ValsNil",), "Stmts": ("StmtsNil",),
         "Regions": ("RegionsNil",), "Segs": ("SegsNil",)}


def _leaf(sort: str) -> Any:
    if sort in _LEAF:
        op, *args = _LEAF[sort]
        return CONSTRUCTORS[op](*[(_leaf(k) if k not in ("i64", "str") else a)
                                  for k, a in zip(SIGNATURES[op][1], args)])
    if sort == "Val":
        return CONSTRUCTORS["Arg"](0, 0, _leaf("Ty"))
    if sort == "Region":
        return CONSTRUCTORS["Region"](0, _leaf("Tys"), _leaf("Stmts"), _leaf("Vals"), _leaf("AMap"))
    if sort == "Multi":
        return CONSTRUCTORS["Multi"]("", _leaf("Vals"), _leaf("AMap"), _leaf("Tys"), _leaf("Regions"))
    if sort == "Stmt":
        return CONSTRUCTORS["Stmt"](-1, "", _leaf("Vals"), _leaf("AMap"), _leaf("Tys"), _leaf("Regions"))
    if sort == "Seg":
        return CONSTRUCTORS["Seg"](_leaf("LEs"), "", _leaf("LE"))
    raise KeyError(sort)


def declare_constructors(egraph: EGraph) -> None:
    """Make egglog know every constructor (egglog-python declares functions on first use), by registering one
    small witness application of each. Witnesses are inert: no kernel refers to them."""
    witnesses = []
    for op, (_, kinds) in SIGNATURES.items():
        args = [0 if k == "i64" else ("" if k == "str" else _leaf(k)) for k in kinds]
        witnesses.append(CONSTRUCTORS[op](*args))
    egraph.register(*witnesses)


class KernelGraph:
    """An e-graph holding one kernel (``root``) plus whatever facts rules derive."""

    def __init__(self, kernel: Kernel, egraph: EGraph | None = None):
        self.kernel = kernel
        self.term, self.prov = encode_kernel(kernel)
        self.egraph = egraph or EGraph()
        declare_constructors(self.egraph)
        self.add(self.term)

    def add(self, term: T, prefix: str = "k") -> str:
        """Insert a term through egglog program text (one ``let`` per distinct subterm); returns its let name."""
        text, root = to_egglog_program(term, prefix=f"{prefix}{id(term)}_")
        self.run_text(text)
        return root

    def run_text(self, text: str) -> None:
        eg = self.egraph._egraph
        eg.run_program(*eg.parse_program(text))

    def egg_name(self, fn: Any) -> str:
        """The egglog name of a Python-declared function or relation (declaring it if needed)."""
        return self.egraph._callable_to_egg(fn)[1]

    def fact(self, relation: Any, *args: T | int) -> None:
        """Assert ``relation(args...)`` where term arguments are inserted first."""
        parts = []
        for a in args:
            parts.append(self.add(a, prefix="f") if isinstance(a, T) else str(int(a)))
        self.run_text(f"({self.egg_name(relation)} {' '.join(parts)})")

    def export(self) -> Export:
        ser = self.egraph._egraph.serialize([], max_functions=None, max_calls_per_function=None,
                                            include_temporary_functions=False)
        data = json.loads(ser.to_json())
        nodes: dict[str, dict[str, Any]] = {}
        classes: dict[str, list[str]] = {}
        root = None
        eclass_of = {nid: node["eclass"] for nid, node in data["nodes"].items()}
        for nid, node in data["nodes"].items():
            op = node["op"]
            if op not in SIGNATURES and not nid.startswith("primitive-"):
                continue
            if node.get("subsumed"):          # replaced by a rule (egglog ``subsume``): never extracted
                continue
            nodes[nid] = node
            if op in SIGNATURES:
                classes.setdefault(node["eclass"], []).append(nid)
            if op == "Kernel":
                name_node = data["nodes"][node["children"][0]]
                if name_node["op"] == f'"{self.kernel.name}"':
                    root = node["eclass"]
        if root is None:
            raise RuntimeError(f"kernel {self.kernel.name} is missing from its e-graph export")
        return Export(nodes, classes, root, eclass_of)
