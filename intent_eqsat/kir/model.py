"""The KIR data model: immutable syntax trees of kernels, statements and expressions.

Every node is a frozen dataclass. Two keyword-only fields sit on every node:

* ``id`` — a stable string derived from the node's position (``gemm.s0``, ``gemm.s0.e3``), assigned by
  :func:`intent_eqsat.kir.ids.assign_ids`. The same text always gives the same ids, so analyses and the GPU IR's
  origin map can key on them (SPEC PASS-2). Ids take part in equality.
* ``loc`` — the :class:`SourceLocation` of the node's first token (``None`` for builder-made nodes). Locations
  never take part in equality: ``parse(print_kir(m)) == m`` holds although the printed text has new positions.

The tree is syntax, not facts: dtypes of lets, extents of index variables and name resolution are computed by
``infer.py`` and exposed by ``analysis.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from intent_eqsat.errors import SourceLocation
from intent_eqsat.kir.dims import Dim

# A KIR type is a scalar dtype name ("f32") or a flat tuple of them (("f32", "i64")) for tuple combiners.
Type = Union[str, tuple[str, ...]]


@dataclass(frozen=True, kw_only=True)
class Node:
    """Base of every KIR node: a stable id and a source location (ignored by ``==``)."""

    id: str = ""
    loc: SourceLocation | None = field(default=None, compare=False, repr=False)


# ----------------------------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Num(Node):
    """A literal. ``text`` is canonical (``repr`` of the float, ``str`` of the int, ``true``/``false``,
    ``inf``/``-inf``/``nan``) so that NaN literals compare equal and printing is exact.
    ``kind`` is ``int``, ``float`` or ``bool``; literals are weakly typed (they adopt the other operand's dtype)."""

    text: str
    kind: str

    @property
    def value(self) -> int | float | bool:
        if self.kind == "bool":
            return self.text == "true"
        if self.kind == "int":
            return int(self.text)
        return float(self.text)


@dataclass(frozen=True)
class Name(Node):
    """A bare name: an index variable, a shape symbol, a by-value scalar, a 0-d let, a block-local let or a
    combiner/region state parameter. What it refers to is resolved by ``infer.py``."""

    name: str


@dataclass(frozen=True)
class Access(Node):
    """``name[subs...]``: an element of a view or of a tensor let. A subscript that itself reads a tensor is a
    gather (``E[idx[i], d]``)."""

    name: str
    subs: tuple[Expr, ...]


@dataclass(frozen=True)
class Unary(Node):
    """``-x`` (op ``neg``) or ``!x`` (op ``not``). A minus written directly before a number literal is folded into
    the literal by the parser and the builder, so ``-1`` is ``Num("-1")``."""

    op: str
    x: Expr


@dataclass(frozen=True)
class Binary(Node):
    """Infix arithmetic, comparison or logic. ``op`` is one of :data:`BINARY_OPS`' keys."""

    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Call(Node):
    """A pointwise function: unary math (``exp``, ...), binary ``max``/``min``/``pow`` or ``select(c, a, b)``."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cast(Node):
    """``cast<dtype>(x)``: an explicit conversion (round to nearest even for floats, truncation for float->int)."""

    dtype: str
    x: Expr


@dataclass(frozen=True)
class Where(Node):
    """``value where cond else fill``: a predicate. Where ``cond`` is false the result is ``fill`` and ``value`` is
    not evaluated (so its loads need not be in bounds there: this is the padding/guard construct)."""

    value: Expr
    cond: Expr
    fill: Expr


@dataclass(frozen=True)
class TupleExpr(Node):
    """``(a, b, ...)``: a flat tuple value, for tuple combiners."""

    elems: tuple[Expr, ...]


@dataclass(frozen=True)
class Proj(Node):
    """``x.k``: component ``k`` of a tuple value."""

    x: Expr
    index: int


@dataclass(frozen=True)
class Bind(Node):
    """An index variable introduced by a let, a reduction or a region fold, optionally with an explicit half-open
    range ``lo..hi`` (both expressions over shape symbols and integers)."""

    name: str
    lo: Expr | None = None
    hi: Expr | None = None


@dataclass(frozen=True)
class Reduce(Node):
    """``op(binds: body)`` with ``op`` in sum/prod/max/min/argmax/argmin, or ``reduce(binds: body, combine=c)``
    (``op == "reduce"``) with a named associative and commutative combiner."""

    op: str
    binds: tuple[Bind, ...]
    body: Expr
    combine: str | None = None
    combine_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Scan(Node):
    """``scan(var: body, combine=c[, exclusive][, reverse])``: the prefix combination along the free index
    ``var``. ``cumsum``/``cumprod``/``cummax``/``cummin`` are sugar for the builtin combiners."""

    var: str
    body: Expr
    combine: str
    exclusive: bool = False
    reverse: bool = False
    var_loc: SourceLocation | None = field(default=None, compare=False, repr=False)
    combine_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class LocalLet(Node):
    """``let name = value`` inside a block: a per-point scalar (or tuple) intermediate."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Block(Node):
    """``{ let ...; result }``: the body of a combiner or of a region's summarizer/finalizer/emitter."""

    lets: tuple[LocalLet, ...]
    result: Expr


@dataclass(frozen=True)
class RegionFold(Node):
    """``region_fold(n [in lo..hi] by C, combine=c) { summarize } [finalize(s) { finalize }]`` (SPEC IR-8).

    The bound index ``n`` is split into chunks of ``C`` consecutive members (the last may be shorter). Each chunk is
    summarized by ``summarize`` (reductions over ``n`` inside it range over the chunk only); the summaries are
    combined in order with ``combine`` starting from its identity; ``finalize`` maps the folded state ``s`` to the
    result (the identity map when absent)."""

    bind: Bind
    chunk: int
    combine: str
    summarize: Block
    state: str | None = None
    finalize: Block | None = None
    combine_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RegionScan(Node):
    """``region_scan(j by C, combine=c) { summarize } emit(s) { emit }`` (SPEC IR-8).

    ``j`` is a free index of the statement, split into chunks of ``C``. The state starts at the combiner's identity;
    for each chunk in order, ``emit`` produces the chunk's outputs (``j`` is the output position, reductions and
    scans over ``j`` inside it are chunk-local, ``s`` is the incoming state), then the state becomes
    ``combine(state, summarize(chunk))``."""

    var: str
    chunk: int
    combine: str
    summarize: Block
    state: str
    emit: Block
    var_loc: SourceLocation | None = field(default=None, compare=False, repr=False)
    combine_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


Expr = Union[
    Num, Name, Access, Unary, Binary, Call, Cast, Where, TupleExpr, Proj, Reduce, Scan, RegionFold, RegionScan
]

# ------------------------------------------------------------------------------------------------ statements


@dataclass(frozen=True)
class Let(Node):
    """``let name[i, j] = value``: a named intermediate over the free indices ``indices`` (a 0-d let when empty).
    Whether it is rematerialized or materialized is the optimizer's decision, not the author's."""

    name: str
    indices: tuple[Bind, ...]
    value: Expr


@dataclass(frozen=True)
class Assign(Node):
    """``target[subs] op value [collide kind]``: writes a view.

    ``op`` is ``=`` (store) or an update ``+=``/``*=``/``max=``/``min=`` (read-modify-write). The statement's free
    indices are the index variables that occur in ``subs``. ``collide`` declares what happens when two members of
    the domain hit the same element: ``add``/``mul``/``max``/``min`` (they combine; must match the update op),
    ``any`` (for ``=``: one unspecified write wins) or ``unique`` (the author asserts it never happens). It is
    required whenever the target index is not provably injective."""

    target: str
    subs: tuple[Expr, ...]
    op: str
    value: Expr
    collide: str | None = None
    collide_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


Stmt = Union[Let, Assign]

# --------------------------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Param(Node):
    """A kernel parameter. A view has ``dims`` (a tuple, possibly empty for a 0-d view) and an ``access`` of
    ``in``/``out``/``inout``; a by-value scalar has ``dims is None`` and access ``in``.
    Each dim is an int or a product of shape symbols and ints written as a tuple of factors, e.g. ``("G", "CPG")``
    for ``G*CPG``; a plain symbol is the 1-tuple ``("N",)`` and a plain int is ``(4,)``. Any other dim (``H - 2``,
    ``H // 2``) is a :class:`intent_eqsat.kir.dims.DimExpr` (kir/dims.py says how the two forms bind symbols)."""

    name: str
    dtype: str
    dims: tuple[Dim, ...] | None = None
    access: str = "in"

    @property
    def is_view(self) -> bool:
        return self.dims is not None


@dataclass(frozen=True)
class Kernel(Node):
    """``kernel name(params) { statements }``. Statements run in order; each evaluates its whole right-hand side
    before writing (snapshot semantics)."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


@dataclass(frozen=True)
class Combiner(Node):
    """``combiner name(a: T, b: T) [associative] [commutative] identity E { block }``: an author-defined combine
    function for scans, reductions and regions. ``a`` is always the earlier (lower-index) operand. The flags are
    claims the verifier checks by sampling; scans and region folds need ``associative``, ``reduce`` also needs
    ``commutative``."""

    name: str
    params: tuple[str, str]
    type: Type
    associative: bool
    commutative: bool
    identity: Expr
    body: Block
    associative_loc: SourceLocation | None = field(default=None, compare=False, repr=False)
    commutative_loc: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class KirModule(Node):
    """A ``.kir`` file: kernels and combiners in source order."""

    items: tuple[Kernel | Combiner, ...]
    filename: str | None = field(default=None, compare=False)

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return tuple(i for i in self.items if isinstance(i, Kernel))

    @property
    def combiners(self) -> tuple[Combiner, ...]:
        return tuple(i for i in self.items if isinstance(i, Combiner))

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel named {name!r} (have: {', '.join(k.name for k in self.kernels)})")

    def combiner(self, name: str) -> Combiner | None:
        for c in self.combiners:
            if c.name == name:
                return c
        return None


# ------------------------------------------------------------------------------------------- vocabularies

DTYPES = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u32", "bool")

# Infix operators: op name -> spelling.
BINARY_OPS = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "and": "&&", "or": "||",
}
UNARY_FUNCS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "abs", "sigmoid", "erf",
               "floor", "ceil", "log1p", "expm1")
BINARY_FUNCS = ("max", "min", "pow")
REDUCE_OPS = ("sum", "prod", "max", "min", "argmax", "argmin", "reduce")
SCAN_SUGAR = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}
UPDATE_OPS = {"+=": "add", "*=": "mul", "max=": "max", "min=": "min"}
COLLIDE_KINDS = ("add", "mul", "max", "min", "any", "unique")


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of ``node`` in source (pre-order) order; the basis of id numbering and of walks."""
    if isinstance(node, (Num, Name)):
        return ()
    if isinstance(node, Access):
        return node.subs
    if isinstance(node, (Unary, Cast)):
        return (node.x,)
    if isinstance(node, Binary):
        return (node.a, node.b)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Where):
        return (node.value, node.cond, node.fill)
    if isinstance(node, TupleExpr):
        return node.elems
    if isinstance(node, Proj):
        return (node.x,)
    if isinstance(node, Bind):
        return tuple(x for x in (node.lo, node.hi) if x is not None)
    if isinstance(node, Reduce):
        return (*node.binds, node.body)
    if isinstance(node, Scan):
        return (node.body,)
    if isinstance(node, LocalLet):
        return (node.value,)
    if isinstance(node, Block):
        return (*node.lets, node.result)
    if isinstance(node, RegionFold):
        return (node.bind, node.summarize) + ((node.finalize,) if node.finalize is not None else ())
    if isinstance(node, RegionScan):
        return (node.summarize, node.emit)
    if isinstance(node, Let):
        return (*node.indices, node.value)
    if isinstance(node, Assign):
        return (*node.subs, node.value)
    if isinstance(node, Combiner):
        return (node.identity, node.body)
    if isinstance(node, Kernel):
        return (*node.params, *node.body)
    if isinstance(node, KirModule):
        return node.items
    if isinstance(node, Param):
        return ()
    raise TypeError(f"not a KIR node: {node!r}")


#: deepest expression tree accepted (the parser and the verifier refuse deeper ones with a located error): every
#: pass walks expressions recursively, and long operator chains build deep trees
MAX_TREE_DEPTH = 100


def too_deep(node: Node, limit: int) -> Node | None:
    """The first node (in pre-order) more than ``limit`` levels below ``node``, or None (iterative: a tree of any
    depth is measured without recursion)."""
    stack: list[tuple[Node, int]] = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if depth > limit:
            return n
        stack.extend((c, depth + 1) for c in reversed(children(n)))
    return None


def walk(node: Node):
    """Yield ``node`` and all its descendants in pre-order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))
