"""The package's import graph has no cycle between modules (issue 22 item 4).

Every ``import`` and ``from ... import`` of every module counts, at module level or inside a function (a lazy
import is still a dependency); only imports under ``if TYPE_CHECKING:`` are left out (they exist for annotations
and never run). A cycle is reported with the modules in it. Between subpackages there is no cycle either, and every import goes
down the layer table ``LAYERS`` (or stays within a layer).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules(base: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((base / package).rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes inside ``if TYPE_CHECKING:`` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for inner in node.body:
                skip.update(id(n) for n in ast.walk(inner))
    return skip


def import_graph(base: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the modules of ``packages`` it imports (a name imported from a package counts as the package's
    ``__init__`` unless it is a submodule)."""
    mods: dict[str, Path] = {}
    for p in packages:
        mods.update(_modules(base, p))
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_only(tree)
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                here = name.split(".") if is_pkg else name.split(".")[:-1]
                base_name = node.module or ""
                if node.level:
                    pkg = here[:len(here) - node.level + 1]
                    base_name = ".".join(pkg + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base_name}.{a.name}"
                    targets.append(full if full in mods else base_name)
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_imports_itself_through_others() -> None:
    graph = import_graph(ROOT, ("intent_eqsat", "rulebooks"))
    assert len(graph) > 100                                  # the walk saw the package
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(
        " -> ".join(c) + f" (edges: {', '.join(f'{a}->{b}' for a in c for b in sorted(graph[a]) if b in c)})"
        for c in found)


#: the subpackages from the bottom up (issue 22 item 4): a package imports only packages of its own layer or below.
#: ``rules`` is the e-graph encoding and scheduler, ``extract`` the cost model and extraction over its export,
#: ``optimizer`` the orchestration on top of both; target capabilities (``providers.targets``) sit low.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "atomic", "version", "progress"),
    ("ir", "kir"),
    ("providers",),
    ("rules",),
    ("extract", "construct"),
    ("optimizer",),
    ("pipeline",),
    ("calling", "batch"),
    ("compile_cache",),
    ("api",),
    ("cli", ""),          # "": the package's own __init__
)


def _package_graph() -> dict[str, set[str]]:
    """subpackage (``rules``; ``""`` for ``intent_eqsat/__init__``) -> the subpackages its modules import."""
    packages: dict[str, set[str]] = {}
    for module, targets in import_graph(ROOT, ("intent_eqsat",)).items():
        mine = ".".join(module.split(".")[1:2])
        packages.setdefault(mine, set()).update(".".join(t.split(".")[1:2]) for t in targets)
    for name, targets in packages.items():
        targets.discard(name)
    return packages


def test_subpackages_form_no_cycle() -> None:
    packages = _package_graph()
    assert not cycles({k: set(v) for k, v in packages.items()}), cycles(packages)


def test_subpackages_import_only_their_layer_or_below() -> None:
    """No back edge: each import goes down the layer table (or stays in its layer); a new subpackage is placed."""
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    packages = _package_graph()
    assert set(packages) <= set(layer), f"subpackages not in LAYERS: {sorted(set(packages) - set(layer))}"
    back = sorted(f"{a or 'intent_eqsat'} -> {b}" for a, ts in packages.items() for b in ts if layer[b] > layer[a])
    assert not back, "imports up the layer table: " + "; ".join(back)


def test_a_planted_cycle_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from planted.b import g\n    return g\n")           # lazy, still counted
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nfrom . import c\nif TYPE_CHECKING:\n"
                              "    from planted.d import T\n")
    (pkg / "c.py").write_text("import planted.a\n")
    (pkg / "d.py").write_text("from planted.b import c\n")                                       # types only
    graph = import_graph(tmp_path, ("planted",))
    assert cycles(graph) == [["planted.a", "planted.b", "planted.c"]]
