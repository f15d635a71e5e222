"""Python builder for KIR: produces exactly the trees the parser produces for the same kernel.

Example (the same kernel as ``examples/corpus/gemm.kir``)::

    from intent_eqsat.kir import builder as kb
    k = kb.KernelBuilder("gemm")
    A, B = k.view("A", "f16", "M", "K"), k.view("B", "f16", "K", "N")
    C = k.view("C", "f16", "M", "N", access="out")
    m, n, kk = kb.idx("m", "n", "k")
    k.assign(C[m, n], kb.sum_(kk, A[m, kk] * B[kk, n]))
    module = kb.module(k)

Expressions are :class:`Ex` wrappers with Python operators (``+ - * / // %``, unary ``-``, ``< <= > >=``, ``&``
``|`` ``~`` for ``&& || !``; ``.eq()``/``.ne()`` for ``== !=``). Python numbers become literals. Nodes carry no
source location; ids are assigned by :func:`module`, exactly as for parsed text.
"""
from __future__ import annotations

from typing import Iterable, Sequence, Union

from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import Dim
from intent_eqsat.kir.ids import assign_ids
from intent_eqsat.kir.parser import parse_dim

Like = Union["Ex", int, float, bool]


def lit(v: int | float | bool) -> Ex:
    """A literal with the parser's canonical text (``-1`` is one literal, as in the text form)."""
    if isinstance(v, bool):
        return Ex(m.Num(text="true" if v else "false", kind="bool"))
    if isinstance(v, int):
        return Ex(m.Num(text=str(v), kind="int"))
    return Ex(m.Num(text="nan" if v != v else repr(float(v)), kind="float"))


def ex(v: Like) -> Ex:
    return v if isinstance(v, Ex) else lit(v)


def node(v: Like) -> m.Expr:
    return ex(v).node


class Ex:
    """An expression under construction."""

    __slots__ = ("node",)

    def __init__(self, node: m.Expr):
        self.node = node

    def _bin(self, op: str, other: Like, swap: bool = False) -> Ex:
        a, b = (node(other), self.node) if swap else (self.node, node(other))
        return Ex(m.Binary(op=op, a=a, b=b))

    def __add__(self, o: Like) -> Ex: return self._bin("add", o)
    def __radd__(self, o: Like) -> Ex: return self._bin("add", o, True)
    def __sub__(self, o: Like) -> Ex: return self._bin("sub", o)
    def __rsub__(self, o: Like) -> Ex: return self._bin("sub", o, True)
    def __mul__(self, o: Like) -> Ex: return self._bin("mul", o)
    def __rmul__(self, o: Like) -> Ex: return self._bin("mul", o, True)
    def __truediv__(self, o: Like) -> Ex: return self._bin("div", o)
    def __rtruediv__(self, o: Like) -> Ex: return self._bin("div", o, True)
    def __floordiv__(self, o: Like) -> Ex: return self._bin("floordiv", o)
    def __rfloordiv__(self, o: Like) -> Ex: return self._bin("floordiv", o, True)
    def __mod__(self, o: Like) -> Ex: return self._bin("mod", o)
    def __rmod__(self, o: Like) -> Ex: return self._bin("mod", o, True)
    def __lt__(self, o: Like) -> Ex: return self._bin("lt", o)
    def __le__(self, o: Like) -> Ex: return self._bin("le", o)
    def __gt__(self, o: Like) -> Ex: return self._bin("gt", o)
    def __ge__(self, o: Like) -> Ex: return self._bin("ge", o)
    def __and__(self, o: Like) -> Ex: return self._bin("and", o)
    def __or__(self, o: Like) -> Ex: return self._bin("or", o)

    def eq(self, o: Like) -> Ex:
        return self._bin("eq", o)

    def ne(self, o: Like) -> Ex:
        return self._bin("ne", o)

    def __invert__(self) -> Ex:
        return Ex(m.Unary(op="not", x=self.node))

    def __neg__(self) -> Ex:
        if isinstance(self.node, m.Num) and self.node.kind != "bool":
            return lit(-self.node.value)  # type: ignore[operator]
        return Ex(m.Unary(op="neg", x=self.node))

    def proj(self, index: int) -> Ex:
        """Tuple component ``x.index``."""
        return Ex(m.Proj(x=self.node, index=index))

    def where(self, cond: Like, fill: Like) -> Ex:
        """``self where cond else fill``."""
        return Ex(m.Where(value=self.node, cond=node(cond), fill=node(fill)))

    __hash__ = None  # type: ignore[assignment]


class Tensor:
    """A view parameter or a tensor let: subscript it to read (``X[i, j]``) or to name an assignment target."""

    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, subs: Like | tuple[Like, ...]) -> Ex:
        subs_t = subs if isinstance(subs, tuple) else (subs,)
        return Ex(m.Access(name=self.name, subs=tuple(node(s) for s in subs_t)))

    def all(self) -> Ex:
        """``T[]``: the element of a 0-d view."""
        return Ex(m.Access(name=self.name, subs=()))


def idx(*names: str) -> Ex | tuple[Ex, ...]:
    """Index variables (plain names)."""
    out = tuple(Ex(m.Name(name=n)) for n in names)
    return out[0] if len(out) == 1 else out


def name(n: str) -> Ex:
    """Any bare name: a shape symbol, scalar, 0-d let, block local or state."""
    return Ex(m.Name(name=n))


class BindSpec:
    """An index with an explicit range ``name in lo..hi`` (bounds: ints, symbol names or expressions)."""

    def __init__(self, n: str, lo: Like | str, hi: Like | str):
        self.bind = m.Bind(name=n, lo=_bound(lo), hi=_bound(hi))


def bind(n: str, lo: Like | str, hi: Like | str) -> BindSpec:
    return BindSpec(n, lo, hi)


def _bound(v: Like | str) -> m.Expr:
    return m.Name(name=v) if isinstance(v, str) else node(v)


def _bind(b: Ex | BindSpec | str) -> m.Bind:
    if isinstance(b, BindSpec):
        return b.bind
    if isinstance(b, str):
        return m.Bind(name=b)
    if not isinstance(b.node, m.Name):
        raise TypeError(f"expected an index name, got {b.node!r}")
    return m.Bind(name=b.node.name)


def _binds(bs: Ex | BindSpec | str | Sequence[Ex | BindSpec | str]) -> tuple[m.Bind, ...]:
    if isinstance(bs, (Ex, BindSpec, str)):
        return (_bind(bs),)
    return tuple(_bind(b) for b in bs)


# ----------------------------------------------------------------------------------------------- functions


def _call(fn: str, *args: Like) -> Ex:
    return Ex(m.Call(fn=fn, args=tuple(node(a) for a in args)))


def exp(x: Like) -> Ex: return _call("exp", x)
def exp2(x: Like) -> Ex: return _call("exp2", x)
def log(x: Like) -> Ex: return _call("log", x)
def log2(x: Like) -> Ex: return _call("log2", x)
def log1p(x: Like) -> Ex: return _call("log1p", x)
def expm1(x: Like) -> Ex: return _call("expm1", x)
def sqrt(x: Like) -> Ex: return _call("sqrt", x)
def rsqrt(x: Like) -> Ex: return _call("rsqrt", x)
def sin(x: Like) -> Ex: return _call("sin", x)
def cos(x: Like) -> Ex: return _call("cos", x)
def tanh(x: Like) -> Ex: return _call("tanh", x)
def abs_(x: Like) -> Ex: return _call("abs", x)
def sigmoid(x: Like) -> Ex: return _call("sigmoid", x)
def erf(x: Like) -> Ex: return _call("erf", x)
def floor(x: Like) -> Ex: return _call("floor", x)
def ceil(x: Like) -> Ex: return _call("ceil", x)
def maximum(a: Like, b: Like) -> Ex: return _call("max", a, b)
def minimum(a: Like, b: Like) -> Ex: return _call("min", a, b)
def pow_(a: Like, b: Like) -> Ex: return _call("pow", a, b)
def select(c: Like, a: Like, b: Like) -> Ex: return _call("select", c, a, b)


def cast(dtype: str, x: Like) -> Ex:
    return Ex(m.Cast(dtype=dtype, x=node(x)))


def where(value: Like, cond: Like, fill: Like) -> Ex:
    return Ex(m.Where(value=node(value), cond=node(cond), fill=node(fill)))


def tuple_(*elems: Like) -> Ex:
    return Ex(m.TupleExpr(elems=tuple(node(e) for e in elems)))


# -------------------------------------------------------------------------------------- structured ops

Binds = Union[Ex, BindSpec, str, Sequence[Union[Ex, BindSpec, str]]]


def _reduce(op: str, binds: Binds, body: Like, combine: str | None = None) -> Ex:
    return Ex(m.Reduce(op=op, binds=_binds(binds), body=node(body), combine=combine))


def sum_(binds: Binds, body: Like) -> Ex: return _reduce("sum", binds, body)
def prod_(binds: Binds, body: Like) -> Ex: return _reduce("prod", binds, body)
def max_(binds: Binds, body: Like) -> Ex: return _reduce("max", binds, body)
def min_(binds: Binds, body: Like) -> Ex: return _reduce("min", binds, body)
def argmax(binds: Binds, body: Like) -> Ex: return _reduce("argmax", binds, body)
def argmin(binds: Binds, body: Like) -> Ex: return _reduce("argmin", binds, body)
def reduce_(binds: Binds, body: Like, combine: str) -> Ex: return _reduce("reduce", binds, body, combine)


def _var(v: Ex | str) -> str:
    return v if isinstance(v, str) else _bind(v).name


def scan(var: Ex | str, body: Like, combine: str, exclusive: bool = False, reverse: bool = False) -> Ex:
    return Ex(m.Scan(var=_var(var), body=node(body), combine=combine, exclusive=exclusive, reverse=reverse))


def cumsum(var: Ex | str, body: Like, exclusive: bool = False, reverse: bool = False) -> Ex:
    return scan(var, body, "add", exclusive, reverse)


def cumprod(var: Ex | str, body: Like, exclusive: bool = False, reverse: bool = False) -> Ex:
    return scan(var, body, "mul", exclusive, reverse)


def cummax(var: Ex | str, body: Like, exclusive: bool = False, reverse: bool = False) -> Ex:
    return scan(var, body, "max", exclusive, reverse)


def cummin(var: Ex | str, body: Like, exclusive: bool = False, reverse: bool = False) -> Ex:
    return scan(var, body, "min", exclusive, reverse)


def block(result: Like, lets: Iterable[tuple[str, Like]] = ()) -> m.Block:
    """``{ let a = ...; ...; result }``."""
    return m.Block(lets=tuple(m.LocalLet(name=n, value=node(v)) for n, v in lets), result=node(result))


def _as_block(b: m.Block | Like) -> m.Block:
    return b if isinstance(b, m.Block) else block(b)


def region_fold(var: Ex | BindSpec | str, chunk: int, combine: str, summarize: m.Block | Like,
                state: str | None = None, finalize: m.Block | Like | None = None) -> Ex:
    return Ex(m.RegionFold(bind=_bind(var), chunk=chunk, combine=combine, summarize=_as_block(summarize),
                           state=state, finalize=None if finalize is None else _as_block(finalize)))


def region_scan(var: Ex | str, chunk: int, combine: str, summarize: m.Block | Like, state: str,
                emit: m.Block | Like) -> Ex:
    return Ex(m.RegionScan(var=_var(var), chunk=chunk, combine=combine, summarize=_as_block(summarize),
                           state=state, emit=_as_block(emit)))


# -------------------------------------------------------------------------------------------- kernels


def _dim(d: str | int) -> Dim:
    """A dim given as an int or as its KIR text (``"G*CPG"``, ``"H - 2"``)."""
    if isinstance(d, int):
        return (d,)
    return parse_dim(d)


class KernelBuilder:
    """Accumulates parameters and statements of one kernel, in order."""

    def __init__(self, name: str):
        self.name = name
        self.params: list[m.Param] = []
        self.body: list[m.Stmt] = []

    def view(self, n: str, dtype: str, *dims: str | int, access: str = "in") -> Tensor:
        """A view parameter ``n: [access] dtype[dims]``; a dim may be ``"G*CPG"`` or ``"H - 2"``."""
        self.params.append(m.Param(name=n, dtype=dtype, dims=tuple(_dim(d) for d in dims), access=access))
        return Tensor(n)

    def scalar(self, n: str, dtype: str) -> Ex:
        self.params.append(m.Param(name=n, dtype=dtype))
        return name(n)

    def let(self, n: str, indices: Sequence[Ex | BindSpec | str], value: Like) -> Tensor | Ex:
        """``let n[indices] = value``; returns a handle to read it (a bare name for a 0-d let)."""
        self.body.append(m.Let(name=n, indices=tuple(_bind(i) for i in indices), value=node(value)))
        return Tensor(n) if indices else name(n)

    def assign(self, target: Ex, value: Like, op: str = "=", collide: str | None = None) -> None:
        """``target op value [collide kind]`` where ``target`` is ``View[subs]``."""
        t = target.node
        if not isinstance(t, m.Access):
            raise TypeError("the target of an assignment is a subscripted view, e.g. C[m, n]")
        self.body.append(m.Assign(target=t.name, subs=t.subs, op=op, value=node(value), collide=collide))

    def build(self) -> m.Kernel:
        return m.Kernel(name=self.name, params=tuple(self.params), body=tuple(self.body))


def combiner(n: str, params: tuple[str, str], type: m.Type, identity: Like, body: m.Block | Like,
             associative: bool = True, commutative: bool = False) -> m.Combiner:
    return m.Combiner(name=n, params=params, type=type, associative=associative, commutative=commutative,
                      identity=node(identity), body=_as_block(body))


def module(*items: KernelBuilder | m.Kernel | m.Combiner) -> m.KirModule:
    """A module with stable ids, equal to the parsed text of the same kernels."""
    built = tuple(i.build() if isinstance(i, KernelBuilder) else i for i in items)
    return assign_ids(m.KirModule(items=built))
