"""Interned Python terms mirroring the egglog sorts (``sorts.py``), and the two conversions around them.

A :class:`T` is ``(op, args)`` where ``op`` is a pinned egglog constructor name and ``args`` are ints, strings or
other terms. Terms are interned (equal terms are the same object), so DAGs with heavy sharing stay linear to walk
and can key dictionaries by identity. ``to_egglog`` builds the egglog expression; ``from_json_choice`` rebuilds a
term from the e-graph's JSON export given one chosen e-node per e-class (the extractor's output).
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

from intent_eqsat.rules.sorts import CONSTRUCTORS, SIGNATURES

Arg = Any  # int | str | T


class T:
    """An interned term. Construct with :func:`t`."""

    __slots__ = ("op", "args", "_hash", "__weakref__")

    def __init__(self, op: str, args: tuple[Arg, ...]):
        self.op = op
        self.args = args
        self._hash = hash((op, tuple(id(a) if isinstance(a, T) else a for a in args)))

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(repr(a) if not isinstance(a, T) else a.op + '(...)' for a in self.args)})"

    # Interned and immutable: a copy is the term itself, and an unpickled term is this process's unique term of
    # the same structure, so identity-keyed tables (``encode.Provenance``) and ``t`` agree after either.
    def __copy__(self) -> "T":
        return self

    def __deepcopy__(self, memo: dict) -> "T":
        return self

    def __reduce__(self) -> tuple:
        return (t, (self.op, *self.args))


_TABLE: dict[tuple, T] = {}
_ECLASS_OF: Mapping[str, str] | None = None


def t(op: str, *args: Arg) -> T:
    """The unique term ``op(args...)`` (checked against the constructor's signature)."""
    sig = SIGNATURES.get(op)
    if sig is None:
        raise KeyError(f"unknown term constructor {op!r}")
    if len(sig[1]) != len(args):
        raise TypeError(f"{op} takes {len(sig[1])} arguments, got {len(args)}")
    key = (op,) + tuple(("T", id(a)) if isinstance(a, T) else (type(a).__name__, a) for a in args)
    found = _TABLE.get(key)
    if found is None:
        found = T(op, tuple(args))
        _TABLE[key] = found
    return found


def cons_list(nil: str, cons: str, items: list[Arg]) -> T:
    out = t(nil)
    for it in reversed(items):
        out = t(cons, it, out)
    return out


def list_items(term: T) -> list[Arg]:
    out = []
    while term.args:
        out.append(term.args[0] if len(term.args) == 2 else term.args[:-1])
        term = term.args[-1]
    return out


def to_egglog(term: T, memo: dict[int, Any] | None = None) -> Any:
    """The egglog expression of a term (memoized by identity, so shared subterms are built once)."""
    memo = {} if memo is None else memo
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return _to_egglog(term, memo)
    finally:
        sys.setrecursionlimit(limit)


def _to_egglog(term: T, memo: dict[int, Any]) -> Any:
    hit = memo.get(id(term))
    if hit is not None:
        return hit
    args = [_to_egglog(a, memo) if isinstance(a, T) else a for a in term.args]
    out = CONSTRUCTORS[term.op](*args)
    memo[id(term)] = out
    return out


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_egglog_program(root: T, prefix: str = "t") -> tuple[str, str]:
    """egglog commands defining ``root`` with one ``let`` per distinct subterm (linear in the DAG's size), and the
    name bound to the root. Text input keeps term construction out of egglog-python's expression caches."""
    names: dict[int, str] = {}
    lines: list[str] = []

    def visit(node: T) -> None:
        parts = [node.op]
        for a in node.args:
            if isinstance(a, T):
                parts.append(names[id(a)])
            elif isinstance(a, str):
                parts.append(_quote(a))
            else:
                parts.append(str(int(a)))
        name = f"${prefix}{len(names)}"
        names[id(node)] = name
        lines.append(f"(let {name} ({' '.join(parts)}))")

    walk_terms(root, visit)
    return "\n".join(lines), names[id(root)]


def _literal(text: str, kind: str) -> Arg:
    if kind == "i64":
        return int(text)
    if text.startswith('"') and text.endswith('"'):
        body = text[1:-1]
        return body.replace('\\"', '"').replace("\\\\", "\\")
    return text


def from_json_choice(nodes: Mapping[str, Mapping[str, Any]], choice: Mapping[str, str], root_class: str,
                     memo: dict[str, T] | None = None, eclass_of: Mapping[str, str] | None = None) -> T:
    """Rebuild the term rooted at e-class ``root_class`` using ``choice[eclass] -> node id`` (children are mapped
    to their e-classes through ``eclass_of`` when given: a child may be a rule-only function node)."""
    memo = {} if memo is None else memo
    global _ECLASS_OF
    _ECLASS_OF = eclass_of
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return _from_class(nodes, choice, root_class, memo)
    finally:
        sys.setrecursionlimit(limit)


def _from_class(nodes, choice, eclass: str, memo: dict[str, T]) -> T:
    hit = memo.get(eclass)
    if hit is not None:
        return hit
    node_id = choice[eclass]
    node = nodes[node_id]
    op = node["op"]
    _, kinds = SIGNATURES[op]
    args: list[Arg] = []
    for kind, child in zip(kinds, node["children"]):
        if kind in ("i64", "str"):
            args.append(_literal(nodes[child]["op"], kind))
        else:
            child_class = _ECLASS_OF[child] if _ECLASS_OF is not None else nodes[child]["eclass"]
            args.append(_from_class(nodes, choice, child_class, memo))
    out = t(op, *args)
    memo[eclass] = out
    return out


def walk_terms(root: T, fn: Callable[[T], None]) -> None:
    """Visit every distinct subterm once (post-order)."""
    seen: set[int] = set()
    stack: list[tuple[T, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            fn(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for a in node.args:
            if isinstance(a, T) and id(a) not in seen:
                stack.append((a, False))
