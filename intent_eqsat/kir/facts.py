"""The facts KIR inference produces, keyed by stable ids (shared by the verifier, evaluator and analyses).

* ``Ref``: what a :class:`Name`/:class:`Access` refers to;
* ``VarInfo``: an index variable and its half-open domain ``[lo, hi)`` over shape symbols. A free index of a
  statement has key ``<stmt id>/<name>``; a reduction or region-fold index has the key of its :class:`Bind`;
* ``Site``: one subscript position with its axis extent and the ``where`` conditions guarding it (``access`` is the
  :class:`Access` id, or the statement id for the written target of an assignment);
* ``KernelFacts`` / ``ModuleFacts``: everything above plus the type of every expression id.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from intent_eqsat.errors import KirError, SourceLocation
from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import with_quotients
from intent_eqsat.kir.poly import Poly

BUILTIN_COMBINERS = ("add", "mul", "max", "min")
# Builtin operations an author may try as a combiner but which are not associative.
NON_ASSOCIATIVE = ("sub", "div", "floordiv", "mod", "pow")
FLOAT_ONLY_FUNCS = frozenset(m.UNARY_FUNCS) - {"abs"}


@dataclass(frozen=True)
class Ref:
    """What a name denotes: ``kind`` in view/scalar/symbol/let/index/local/state; ``target`` is the param or let
    name, the index variable key, or the local let's id / state name."""

    kind: str
    target: str


@dataclass(frozen=True)
class VarInfo:
    """An index variable: ``role`` is ``free`` (parallel, of the statement), ``reduce`` or ``fold``."""

    key: str
    name: str
    role: str
    stmt: str
    lo: Poly
    hi: Poly
    explicit: bool
    loc: SourceLocation | None = field(compare=False)
    source: str = ""  # where the domain comes from: "explicit range" or "<view/let> axis <k>"

    @property
    def extent(self) -> Poly:
        return self.hi - self.lo


@dataclass(frozen=True)
class LetInfo:
    """A tensor (or 0-d) let: its defining statement, element type, free-index keys and shape."""

    name: str
    stmt: str
    type: m.Type
    indices: tuple[str, ...]
    shape: tuple[Poly, ...]


@dataclass(frozen=True)
class Site:
    """One subscript position ``target[..., sub, ...]`` (axis ``axis``) inside statement ``stmt``."""

    access: str
    target: str
    axis: int
    sub: m.Expr
    extent: Poly
    guards: tuple[m.Expr, ...]
    stmt: str
    is_lhs: bool


@dataclass(frozen=True)
class KernelFacts:
    kernel: m.Kernel
    symbols: tuple[str, ...]
    dims: Mapping[str, tuple[Poly, ...]]
    types: Mapping[str, m.Type]
    refs: Mapping[str, Ref]
    vars: Mapping[str, VarInfo]
    bind_keys: Mapping[str, str]
    stmt_vars: Mapping[str, tuple[str, ...]]
    lets: Mapping[str, LetInfo]
    sites: tuple[Site, ...]
    #: the floor-quotient atoms of arithmetic dims (``"(H // 2)"`` -> (numerator, divisor)), dependency order
    quotients: Mapping[str, tuple[Poly, Poly]] = field(default_factory=dict)

    def shape_env(self, symbols: Mapping[str, int]) -> dict[str, int]:
        """``symbols`` with the value of every quotient atom added: what a shape polynomial evaluates with."""
        return with_quotients(symbols, self.quotients)


@dataclass(frozen=True)
class ModuleFacts:
    module: m.KirModule
    kernels: Mapping[str, KernelFacts]
    combiners: Mapping[str, m.Combiner]
    combiner_types: Mapping[str, m.Type]
    combiner_refs: Mapping[str, Ref]


def where_of(node: m.Node) -> SourceLocation | str | None:
    """The location to report for ``node``: its source location, else its id (builder-made nodes)."""
    return node.loc if node.loc is not None else (node.id or None)


def kir_error(msg: str, node: m.Node | None = None, loc: SourceLocation | None = None) -> KirError:
    return KirError(msg, loc if loc is not None else (where_of(node) if node is not None else None))


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_identifier(name: str, node: m.Node, what: str, reserved_ok: bool = False) -> None:
    """Names must be printable identifiers (builder-made trees too), and not reserved words where the grammar
    forbids them, so that every verified module prints to text that parses back."""
    from intent_eqsat.kir.parser import RESERVED

    if not _IDENT.match(name):
        raise kir_error(f"{what} name {name!r} is not an identifier", node)
    if name in RESERVED and not reserved_ok:
        raise kir_error(f"{what} name {name!r} is a reserved word", node)


def start_node(e: m.Node) -> m.Node:
    """The leftmost node of an expression (whose location is where its text starts)."""
    while isinstance(e, (m.Binary, m.Where, m.Proj)):
        e = e.a if isinstance(e, m.Binary) else (e.value if isinstance(e, m.Where) else e.x)
    return e
