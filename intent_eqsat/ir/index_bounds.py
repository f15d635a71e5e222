"""Magnitude bounds of a kernel's index arithmetic, as launch-time expressions (SPEC IR-3.1, PASS-6, TGT-4).

A program launched with ``index_bits 32`` (its launch resources, :mod:`intent_eqsat.providers.launch_resources`)
may compute its ``index`` values in 32-bit integers when the launch proves that none of them can overflow. This
module derives that proof obligation from the program alone: a list of LaunchExprs over the kernel's sizes, scalars
and strides such that, at any launch where every one of them evaluates below ``2**31``, every ``index`` value the
program computes -- and every intermediate the providers compute for it: element offsets ``coord * stride`` summed
over a view's axes, program-coordinate decoding, loop counters one step past their bound -- lies in ``(-2**31,
2**31)``. The launch wrapper evaluates them (they are LaunchExprs, so host code can, IR-10 invariant 10) and
launches the 64-bit program otherwise.

The bounds are interval arithmetic on magnitudes: ``|a + b| <= |a| + |b|``, ``|a * b| <= |a| * |b|``, a decoded
program coordinate is below its segment extent, ``range(N)`` below ``start + N``, a loop variable below its
bounds plus one step. A quotient by a constant or a parameter is
bounded by ``a // d + 1``. Bounds are built from sums, products, maxima and such quotients of leaves that are at
least 1 (sizes and strides enter as ``max(x, 1)``, other scalars as ``max(x, -x, 1)``), so a bound that occurs
inside another under sums, products and maxima only is at most that one and is dropped.

No bound exists (:func:`index_bounds` returns None, the program stays 64-bit) when an index value comes from memory
(``load``/``gather``/atomics of index type, ``bitcast``), is carried by a loop or a ``while``, is reduced or scanned
(the combine functions are printed outside the kernel body), is an arg-reduce position, or has a type the rules
below do not cover: the analysis only narrows what it can prove.
"""
from __future__ import annotations

from typing import Iterable

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Op, Region, Value
from intent_eqsat.ir.launch import BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet, \
    free_symbols, product
from intent_eqsat.ir.spec import ACCESS_OPS, access_layout
from intent_eqsat.ir.types import FragmentType, ScalarType, Type

#: an index computation narrowed to 32 bits is exact while every bound is below this
INDEX32_LIMIT = 1 << 31
#: magnitude of a value converted to ``index`` from a narrower integer type
_CAST_FROM = {"i1": 1, "i8": 1 << 7, "u8": (1 << 8) - 1, "i16": 1 << 15, "u16": (1 << 16) - 1, "i32": 1 << 31}


class _NoBound(Exception):
    """An index value the rules cannot bound (the program then keeps 64-bit index arithmetic)."""


def _is_index(t: Type) -> bool:
    return isinstance(t, (ScalarType, FragmentType)) and t.dtype == "index"


def _has_index(t: Type) -> bool:
    if _is_index(t):
        return True
    return any(_has_index(c) for c in getattr(t, "items", ()) or ())


# ------------------------------------------------------------------------------------------- bound algebra
# Bounds are LaunchExprs built only by these constructors: constants fold, so parameter-only parts of a bound are
# numbers once the parameters are bound.

def _const(e: LaunchExpr) -> int | None:
    return int(e.value) if isinstance(e, Const) and not isinstance(e.value, bool) else None


def _add(a: LaunchExpr, b: LaunchExpr) -> LaunchExpr:
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return Const(ca + cb)
    return BinOp("+", a, b)


def _mul(a: LaunchExpr, b: LaunchExpr) -> LaunchExpr:
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return Const(ca * cb)
    if ca == 1:
        return b
    if cb == 1:
        return a
    return BinOp("*", a, b)


def _max(*xs: LaunchExpr) -> LaunchExpr:
    """The maximum of bounds (all >= 1, so a constant 1 beside a symbolic bound adds nothing)."""
    consts = [c for c in (_const(x) for x in xs) if c is not None]
    rest: list[LaunchExpr] = []
    for x in xs:
        if _const(x) is None and x not in rest:
            rest.append(x)
    rest = [x for x in rest if not any(o != x and _contains(o, x) for o in rest)]
    top = max(consts) if consts else 1
    items = rest + ([Const(top)] if top > 1 or not rest else [])
    out = items[0]
    for x in items[1:]:
        out = BinOp("max", out, x)
    return out


def _at_least_one(x: LaunchExpr) -> LaunchExpr:
    return BinOp("max", x, Const(1))


def _quotient(a: LaunchExpr, divisor: LaunchExpr | None) -> LaunchExpr:
    """A bound of ``|x // d|`` and ``|ceil_div(x, d)|`` for ``|x| <= a``: ``a // d + 1`` when the divisor is a
    known positive constant or parameter, else ``a`` (any divisor of magnitude >= 1)."""
    if divisor is None:
        return a
    ca, cd = _const(a), _const(divisor)
    if cd is not None:
        if cd <= 0:
            return a
        if ca is not None:
            return Const(ca // cd + 1)
        if cd == 1:
            return a
    return _add(BinOp("//", a, divisor), Const(1))


def magnitude(e: LaunchExpr, positive: frozenset[str], nonneg: frozenset[str],
              intermediates: list[LaunchExpr] | None = None) -> LaunchExpr:
    """A bound (>= 1) of ``|e|``. Bounds of the intermediates a provider computes while evaluating ``e`` (floor
    division and modulo helpers compute ``a - (a // b) * b``) are appended to ``intermediates``.

    ``positive`` names the symbols known to be at least 1 (physical parameters: tile sizes, group sizes), ``nonneg``
    those known to be non-negative (view shape symbols); any other symbol may be negative."""
    inter = intermediates if intermediates is not None else []

    def m(x: LaunchExpr) -> LaunchExpr:
        return magnitude(x, positive, nonneg, inter)

    if isinstance(e, Const):
        return Const(max(abs(int(e.value)), 1))
    if isinstance(e, Sym):
        if e.name in positive:
            return e
        if e.name in nonneg:
            return _at_least_one(e)
        return BinOp("max", BinOp("max", e, BinOp("-", Const(0), e)), Const(1))
    if isinstance(e, (Dim, Stride)):
        return _at_least_one(e)                 # extents and strides of views (torch strides are never negative)
    if isinstance(e, Not):
        return m(e.operand)
    if isinstance(e, Select):
        return _max(*(m(x) for x in (e.cond, e.if_true, e.if_false)))
    if isinstance(e, BinOp):
        a, b = m(e.lhs), m(e.rhs)
        if e.op in ("+", "-"):
            return _add(a, b)
        if e.op == "*":
            return _mul(a, b)
        if e.op in ("//", "%", "ceil_div"):
            inter.append(_add(a, b))
            if e.op == "%":
                return b
            known = e.rhs if isinstance(e.rhs, Const) or (isinstance(e.rhs, Sym) and e.rhs.name in positive) \
                else None
            return _quotient(a, known)
        return _max(a, b)                      # min, max, comparisons, && and ||
    if isinstance(e, TupleGet) and isinstance(e.tuple_expr, Tuple):
        return m(e.tuple_expr.items[e.index])
    raise _NoBound(f"no magnitude rule for the LaunchExpr {e}")


# ------------------------------------------------------------------------------------------------ analysis

class _Bounds:
    def __init__(self, kernel: Kernel, params: frozenset[str]):
        self.k = kernel
        self.params = params
        views = [a for a in kernel.abi if a.is_view]
        self.nonneg = frozenset(s for a in views for e in a.value.type.shape for s in free_symbols(e))
        self.abi = {a.name: a for a in kernel.abi}
        self.env: dict[str, LaunchExpr] = {}
        self.consts: dict[str, int] = {}
        self.terms: list[LaunchExpr] = []

    def mag(self, e: LaunchExpr) -> LaunchExpr:
        return magnitude(e, self.params, self.nonneg, self.terms)

    def of(self, v: Value) -> LaunchExpr:
        b = self.env.get(v.name)
        if b is None:
            raise _NoBound(f"%{v.name} has no bound")
        return b

    def set(self, v: Value, bound: LaunchExpr) -> None:
        self.env[v.name] = bound
        self.terms.append(bound)

    def run(self) -> list[LaunchExpr]:
        k = self.k
        space = k.space
        grid = self.mag(space.grid)
        # program-coordinate decoding: the linear coordinate, segment offsets and lengths, the grouped order's
        # group-row arithmetic, all bounded by the space's total plus one group's rows and columns
        decode = self.mag(space.total)
        for seg in space.segments:
            if seg.order == "grouped" and seg.group_size is not None and 1 <= seg.group_axis < len(seg.extents):
                g = self.mag(seg.group_size)
                rows = self.mag(product(seg.extents[:seg.group_axis]))
                decode = _add(decode, _add(_mul(g, self.mag(seg.extents[seg.group_axis])), _add(rows, g)))
        self.terms.append(_max(grid, decode))
        for a in k.abi:
            if not a.is_view and _is_index(a.value.type):
                self.env[a.name] = self.mag(Sym(a.name))
        self.env[k.pid.name] = grid
        self.region(k.body)
        return _prune(self.terms)

    def region(self, region: Region) -> None:
        for op in region.ops:
            self.op(op)

    def op(self, op: Op) -> None:
        name = op.name
        if name in ACCESS_OPS:
            self.access(op)
        handler = getattr(self, "op_" + name, None)
        if handler is not None:
            handler(op)
            return
        if any(_has_index(r.type) for r in op.results):
            if name in ACCESS_OPS or name == "bitcast":
                raise _NoBound(f"{name} produces index values from memory or from raw bits")
            self.elementwise(op)
        for r in op.regions:
            raise _NoBound(f"{name} has a region the rules do not follow")

    # -- values ---------------------------------------------------------------------------------------------
    def elementwise(self, op: Op) -> None:
        name = op.name
        xs = [self.of(v) for v in op.operands if _is_index(v.type)]
        res = op.results[0]
        if name in ("add", "sub"):
            b = _add(xs[0], xs[1])
        elif name in ("div", "floordiv", "rem", "mod"):
            self.terms.append(_add(xs[0], xs[1]))            # the floor-division helpers' intermediates
            c = self._const_of(op.operands[1])
            b = xs[1] if name in ("rem", "mod") else _quotient(xs[0], Const(c) if c is not None else None)
        elif name == "mul":
            b = _mul(xs[0], xs[1])
        elif name in ("min", "max", "join"):
            b = _max(*xs)
        elif name in ("neg", "abs", "floor", "ceil", "broadcast", "reshape", "transpose", "extract", "shr"):
            b = xs[0]
        elif name == "select":
            b = _max(*xs)
        elif name in ("and", "or", "xor"):
            b = _mul(Const(2), _add(xs[0], xs[1]))
        elif name == "shl":
            shift = self._const_of(op.operands[1])
            if shift is None or not 0 <= shift < 62:
                raise _NoBound("shl by a non-constant amount")
            b = _mul(xs[0], Const(1 << shift))
        else:
            raise _NoBound(f"no bound rule for {name} of index values")
        self.set(res, b)

    def _const_of(self, v: Value) -> int | None:
        return self.consts.get(v.name)

    def op_const(self, op: Op) -> None:
        if isinstance(op.result.type, ScalarType) and dtypes.is_int(op.result.type.dtype):
            self.consts[op.result.name] = int(op.attrs["value"])
        if _is_index(op.result.type):
            self.set(op.result, Const(max(abs(int(op.attrs["value"])), 1)))

    def op_launch(self, op: Op) -> None:
        if _is_index(op.result.type):
            self.set(op.result, self.mag(op.attrs["expr"]))

    def op_range(self, op: Op) -> None:
        t = op.result.type
        if _is_index(t):
            n = self.mag(t.shape[0])
            self.set(op.result, _add(Const(abs(int(op.attrs.get("start", 0)))), n))

    def op_cast(self, op: Op) -> None:
        if not _is_index(op.result.type):
            return
        src = op.operands[0].type.dtype
        if src == "index":
            self.set(op.result, self.of(op.operands[0]))
        elif src in _CAST_FROM:
            self.set(op.result, Const(_CAST_FROM[src]))
        else:
            raise _NoBound(f"index converted from {src}")

    # -- accesses -------------------------------------------------------------------------------------------
    def access(self, op: Op) -> None:
        """An access's element offset ``offset + sum(coord_i * stride_i)`` over its index coordinates."""
        a = self.abi.get(op.operands[0].name)
        if a is None or not a.is_view:
            return                                  # a register buffer: its coordinates are bounded values
        n_coords, _ = access_layout(op.name, len(op.operands), bool(op.attrs.get("valid")))
        total = self.mag(a.offset)
        for i, c in enumerate(op.operands[1:1 + n_coords]):
            if not _is_index(c.type):
                continue                            # other integer coordinates stay 64-bit in the providers
            stride = a.strides[i] if a.strides is not None else Stride(a.name, i)
            total = _add(total, _mul(self.of(c), self.mag(stride)))
        self.terms.append(total)

    # -- control --------------------------------------------------------------------------------------------
    def op_execution_group(self, op: Op) -> None:
        seg = self.k.space.segments[int(op.attrs["segment"])]
        self.of(op.operands[0])
        region = op.regions[0]
        for arg, ext in zip(region.args, seg.extents):
            self.set(arg, self.mag(ext))
        self.region(region)

    def _loop_var(self, op: Op, arg: Value) -> None:
        lb, ub, step = (self.of(v) for v in op.operands[:3])
        self.set(arg, _add(_max(lb, ub), step))

    def op_for(self, op: Op) -> None:
        body = op.regions[0]
        if any(_has_index(a.type) for a in body.args[1:]):
            raise _NoBound("a loop carries an index value")
        self._loop_var(op, body.args[0])
        self.region(body)

    def op_region_fold(self, op: Op) -> None:
        if any(_has_index(r.type) for r in op.results):
            raise _NoBound("a region fold carries an index value")
        summarize, combine = op.regions
        self._loop_var(op, summarize.args[0])
        self.region(summarize)
        self.region(combine)

    def op_region_scan(self, op: Op) -> None:
        if any(_has_index(r.type) for r in op.results):
            raise _NoBound("a region scan carries an index value")
        summarize, combine, emit = op.regions
        self._loop_var(op, summarize.args[0])
        self.env[emit.args[0].name] = self.env[summarize.args[0].name]
        self.region(emit)
        self.region(summarize)
        self.region(combine)

    def op_if(self, op: Op) -> None:
        then_r, else_r = op.regions
        self.region(then_r)
        self.region(else_r)
        for i, r in enumerate(op.results):
            if _has_index(r.type):
                ys = [reg.ops[-1].operands[i] for reg in (then_r, else_r)]
                self.set(r, _max(*(self.of(y) for y in ys)))

    def op_while(self, op: Op) -> None:
        if any(_has_index(v.type) for v in op.operands):
            raise _NoBound("a while loop carries an index value")
        for r in op.regions:
            self.region(r)

    def op_yield(self, op: Op) -> None:
        pass

    def _no_index(self, op: Op) -> None:
        if any(_has_index(v.type) for v in [*op.operands, *op.results]):
            raise _NoBound(f"{op.name} of index values (combine functions run outside the kernel body)")

    op_reduce = op_scan = op_argreduce = op_histogram = _no_index

    def op_alloc(self, op: Op) -> None:
        if any(_has_index(r.type) for r in op.results):
            raise _NoBound("a buffer of index values")


def _contains(big: LaunchExpr, small: LaunchExpr) -> bool:
    """``small`` occurs in ``big`` under sums, products and maxima only (so ``small <= big``: every such operand
    is >= 1); a quotient's operands are not followed (``a // d + 1`` can be below ``a``)."""
    if big == small:
        return True
    if isinstance(big, BinOp) and big.op in ("+", "*", "max"):
        return _contains(big.lhs, small) or _contains(big.rhs, small)
    return False


def _prune(terms: list[LaunchExpr]) -> list[LaunchExpr]:
    """Distinct bounds, without any that is a sub-expression of another (every sub-expression of a bound is at
    most the bound: bounds are sums, products and maxima of terms >= 1), constants folded into one."""
    distinct: list[LaunchExpr] = []
    for t in terms:
        if t not in distinct:
            distinct.append(t)
    consts = [c for c in (_const(t) for t in distinct) if c is not None]
    symbolic = [t for t in distinct if _const(t) is None]
    kept = [t for t in symbolic if not any(o is not t and o != t and _contains(o, t) for o in symbolic)]
    if consts:
        kept.append(Const(max(consts)))
    return kept


def index_bounds(kernel: Kernel, params: Iterable[str] = ()) -> list[LaunchExpr] | None:
    """The launch-time bounds of every index value of ``kernel`` (see the module docstring), or None when some
    index value has none. ``params`` names the module's physical parameters (positive; the bounds keep them as
    symbols, so they hold for every Config of the candidate set)."""
    try:
        return _Bounds(kernel, frozenset(params)).run()
    except _NoBound:
        return None


__all__ = ["INDEX32_LIMIT", "index_bounds", "magnitude"]
