"""Hypothesis strategies for the shared GPU IR: LaunchExprs and whole generated modules.

``modules()`` builds random but well-formed modules with :mod:`intent_eqsat.ir.builder`: random parameters, one or
two kernels with random views/scalars and one or two program-space segments (row_major or grouped), and bodies of
randomly nested ops drawn from the op table (constants, launch values, ranges, elementwise/compare/select/cast,
shape ops, accesses with and without validity, atomics, buffers, reduce/scan with and without combiner regions,
contract, for/if/while with carried values, region_fold/region_scan, execution groups), with attributes that need
quoting, origins, tags and dependence edges.

The programs are not meant to compute anything: they are well-typed enough for the parser's local type checks
(``_check_local_types``: elementwise operands agree in dtype and shape with the result, compare gives i1, select's
condition is i1) and every value is defined before it is used, in its own region or an enclosing one.
Float attributes never hold NaN, so ``parse(print(m)) == m`` is a meaningful structural comparison.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from hypothesis import strategies as st

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.builder import ModuleBuilder, RegionBuilder
from intent_eqsat.ir.core import ACCESS_MODES, NUMERICS, CompileOptions, Value
from intent_eqsat.ir.launch import (BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet)
from intent_eqsat.ir.spec import (BINARY_OPS, CMP_PREDICATES, COMBINERS, MEMORY_ORDERS, RMW_KINDS,
                                  SHARING_DOMAINS, SPECS, UNARY_OPS)
from intent_eqsat.ir.types import (BUFFER_SCOPES, BufferType, FragmentType, ScalarType, TupleType, Type, ViewType,
                                   like)

INDEX = ScalarType("index")
I1 = ScalarType("i1")

# ------------------------------------------------------------------------------------------------- LaunchExpr

INT_OPS = ("+", "-", "*", "//", "ceil_div", "%", "min", "max")
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
BOOL_OPS = ("&&", "||")


def int_launch_exprs(symbols: list[str], views: list[tuple[str, int]] | None = None, max_leaves: int = 8,
                     small: bool = False) -> st.SearchStrategy[LaunchExpr]:
    """Integer LaunchExprs over + - * // ceil_div % min max; leaves are int constants, the given symbols and
    dim/stride of the given (view, rank) pairs."""
    consts = st.integers(-8, 8) if small else st.integers(-(2 ** 40), 2 ** 40)
    leaves: list[st.SearchStrategy[LaunchExpr]] = [consts.map(Const)]
    if symbols:
        leaves.append(st.sampled_from(symbols).map(Sym))
    if views:
        leaves.append(st.sampled_from(views).flatmap(
            lambda va: st.builds(Dim, st.just(va[0]), st.integers(0, va[1] - 1))))
        leaves.append(st.sampled_from(views).flatmap(
            lambda va: st.builds(Stride, st.just(va[0]), st.integers(0, va[1] - 1))))

    def extend(children: st.SearchStrategy[LaunchExpr]) -> st.SearchStrategy[LaunchExpr]:
        return st.builds(BinOp, st.sampled_from(INT_OPS), children, children)

    return st.recursive(st.one_of(leaves), extend, max_leaves=max_leaves)


def launch_exprs(symbols: list[str], views: list[tuple[str, int]] | None = None,
                 max_leaves: int = 6) -> st.SearchStrategy[LaunchExpr]:
    """Any LaunchExpr: integer arithmetic plus comparisons, &&/||, !, select, tuple and tuple indexing."""
    ints = int_launch_exprs(symbols, views, max_leaves=max_leaves)

    def extend(children: st.SearchStrategy[LaunchExpr]) -> st.SearchStrategy[LaunchExpr]:
        return st.one_of(
            st.builds(BinOp, st.sampled_from(INT_OPS + CMP_OPS + BOOL_OPS), children, children),
            st.builds(Not, children),
            st.builds(Select, children, children, children),
            st.lists(children, min_size=0, max_size=3).map(lambda xs: Tuple(tuple(xs))),
            st.lists(children, min_size=1, max_size=3).flatmap(
                lambda xs: st.integers(0, len(xs) - 1).map(lambda i: TupleGet(Tuple(tuple(xs)), i))),
        )

    return st.recursive(st.one_of(ints, st.booleans().map(Const)), extend, max_leaves=max_leaves)


# --------------------------------------------------------------------------------------------- attribute values

#: strings that need quoting (keywords, spaces, quotes, backslashes, newlines, non-ASCII) and bare ones
quoted_strings = st.one_of(
    st.sampled_from(["true", "false", "inf", "nan", "", "a b", 'say "hi"', "back\\slash", "two\nlines",
                     "tab\there", "1abc", "-x", "$(M)", "%v", "{}", "[]", "#comment", "é", "x:y", "a,b"]),
    st.text(min_size=0, max_size=8),
)
bare_strings = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,8}", fullmatch=True).filter(
    lambda s: s not in ("true", "false", "inf", "nan"))
strings = st.one_of(bare_strings, quoted_strings)
finite_or_inf = st.one_of(st.floats(allow_nan=False, allow_infinity=True),
                          st.sampled_from([float("inf"), float("-inf"), -0.0, 0.0, 1e-300, 1.5e300]))
#: integer attributes cover the whole literal range of the IR (signed 64-bit) and its two ends
numbers_ = st.one_of(st.integers(-(2 ** 63), 2 ** 63 - 1), st.sampled_from([-(2 ** 63), 2 ** 63 - 1]),
                     finite_or_inf)


# ------------------------------------------------------------------------------------------------ modules

SHAPE_SYMBOLS = ["M", "N", "K", "L"]
PARAM_NAMES = ["BM", "BN", "BK", "G", "P0", "P1"]
VIEW_NAMES = ["A", "B", "C", "D"]
SCALAR_NAMES = ["n", "alpha", "ws_len"]
AXIS_NAMES = ["m", "n", "k", "i.0", "row", "_c"]

_BOOLS = st.booleans()


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


class _Ctx:
    """Per-kernel generation state: the draw function, symbols, fragment shapes, views and buffers in scope."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], symbols: list[str], shapes: list[tuple],
                 views: list[tuple[str, int]]):
        self.draw = draw
        self.symbols = symbols
        self.shapes = shapes
        self.views = views

    # Generation draws only from cached primitive strategies: building strategies per draw is what makes
    # hypothesis slow, and these programs need a few hundred draws each.
    def d(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.draw(strategy)

    def int(self, lo: int, hi: int) -> int:
        return self.draw(_ints(lo, hi))

    def bool(self) -> bool:
        return self.draw(_BOOLS)

    def chance(self, n: int) -> bool:
        """True with probability about 1/n."""
        return self.int(0, n - 1) == 0

    def pick(self, seq: Any) -> Any:
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def string(self) -> str:
        return self.draw(strings)

    def le(self, max_leaves: int = 3) -> LaunchExpr:
        """A random LaunchExpr of every node kind (integer arithmetic, comparisons, &&/||, !, select, tuples)."""
        budget = [max_leaves]

        def gen(depth: int) -> LaunchExpr:
            budget[0] -= 1
            k = self.int(0, 9) if depth < 3 and budget[0] > 0 else self.int(0, 3)
            if k == 0:
                return Const(self.int(-(2 ** 40), 2 ** 40))
            if k == 1:
                return Const(self.bool()) if self.chance(4) else Const(self.int(0, 64))
            if k == 2 or (k == 3 and not self.views):
                return Sym(self.pick(self.symbols))
            if k == 3:
                view, rank = self.pick(self.views)
                return (Dim if self.bool() else Stride)(view, self.int(0, rank - 1))
            if k <= 6:
                return BinOp(self.pick(INT_OPS + CMP_OPS + BOOL_OPS), gen(depth + 1), gen(depth + 1))
            if k == 7:
                return Not(gen(depth + 1)) if self.bool() else Select(gen(depth + 1), gen(depth + 1),
                                                                        gen(depth + 1))
            items = tuple(gen(depth + 1) for _ in range(self.int(0, 2)))
            if k == 8 or not items:
                return Tuple(items)
            return TupleGet(Tuple(items), self.int(0, len(items) - 1))

        return gen(0)

    def attr_value(self, depth: int = 0) -> Any:
        """A nested attribute value: numbers (never NaN), bools, strings, LaunchExprs, lists and dicts."""
        k = self.int(0, 6) if depth < 2 else self.int(0, 4)
        if k == 0:
            return self.d(numbers_)
        if k == 1:
            return self.bool()
        if k == 2:
            return self.string()
        if k == 3:
            return self.le(2)
        if k == 4:
            return self.int(-5, 5)
        if k == 5:  # lists are frozen to tuples by normalize_attrs, as the parser reads them
            items = [self.attr_value(depth + 1) for _ in range(self.int(0, 2))]
            return items if self.bool() else tuple(items)
        return {self.string(): self.attr_value(depth + 1) for _ in range(self.int(0, 2))}

    def dtype(self, choices: tuple[str, ...] = dtypes.ALL_DTYPES) -> str:
        return self.pick(choices)

    def shape(self) -> tuple:
        return self.pick(self.shapes)

    def frag_type(self, dtype: str, shape: tuple | None = None) -> FragmentType:
        shape = self.shape() if shape is None else shape
        axes = None
        if self.chance(4):
            axes = tuple(self.pick(AXIS_NAMES) for _ in shape)
        return FragmentType(dtype, shape, axes)

    def value_type(self, dtype: str | None = None) -> Type:
        dtype = dtype or self.dtype()
        return ScalarType(dtype) if self.bool() else self.frag_type(dtype)

    def common_attrs(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if self.chance(3):
            attrs["origin"] = self.string()
        if self.chance(5):
            attrs["tag"] = self.string()
        if self.chance(6):
            attrs["after"] = tuple(self.string() for _ in range(self.int(0, 2)))
        return attrs

    def const_value(self, dtype: str) -> Any:
        if dtype == "i1":
            return self.bool()
        if dtypes.is_float(dtype):
            return self.d(finite_or_inf)
        return self.int(-(2 ** 31), 2 ** 31)


class _Pool:
    """Values visible at a program point (a region sees its parents' values, never its children's)."""

    def __init__(self, values: list[Value], parent: "_Pool | None" = None):
        self.values = list(values)
        self.parent = parent

    def all(self) -> list[Value]:
        return self.values + (self.parent.all() if self.parent else [])

    def child(self, args: list[Value]) -> "_Pool":
        return _Pool(args, self)

    def add(self, v: Value) -> Value:
        self.values.append(v)
        return v


def _operand(c: _Ctx, r: RegionBuilder, pool: _Pool, t: Type) -> Value:
    """An existing value of type ``t`` or a fresh constant of it."""
    cands = [v for v in pool.all() if v.type == t]
    if cands and not c.chance(3):
        return c.pick(cands)
    attrs = {"value": c.const_value(t.dtype), **c.common_attrs()}
    return pool.add(r.op("const", [], [t], attrs).result)


def _coords(c: _Ctx, r: RegionBuilder, pool: _Pool, rank: int) -> tuple[list[Value], tuple | None]:
    """Index coordinates for a resource of ``rank``: scalars, or fragments of one shared shape (the access shape)."""
    shape = c.shape() if c.bool() else None
    coords = []
    for _ in range(rank):
        t = INDEX if shape is None or c.chance(4) else c.frag_type("index", shape)
        coords.append(_operand(c, r, pool, t))
    if shape is None or all(isinstance(x.type, ScalarType) for x in coords):
        return coords, None
    return coords, shape


def _flags(c: _Ctx) -> dict[str, Any]:
    out = {}
    if c.bool():
        out["approximate"] = c.bool()
    if c.bool():
        out["flush_to_zero"] = c.bool()
    return out


# op generators: each appends one op (and its regions) to r and adds its results to pool --------------------

def g_const(c, r, pool, depth):
    t = c.value_type()
    pool.add(r.op("const", [], [t], {"value": c.const_value(t.dtype), **c.common_attrs()}).result)


def g_launch(c, r, pool, depth):
    t = c.pick([INDEX, I1, ScalarType("i32"), ScalarType("i64")])
    pool.add(r.op("launch", [], [t], {"expr": c.le(), **c.common_attrs()}).result)


def g_range(c, r, pool, depth):
    attrs = c.common_attrs()
    if c.bool():
        attrs["start"] = c.int(-100, 100)
    pool.add(r.op("range", [], [c.frag_type("index", (c.shape()[0],))], attrs).result)


def g_unary(c, r, pool, depth):
    t = c.value_type()
    x = _operand(c, r, pool, t)
    pool.add(r.op(c.pick(UNARY_OPS), [x], [t], {**_flags(c), **c.common_attrs()}).result)


def g_binary(c, r, pool, depth):
    t = c.value_type()
    a = _operand(c, r, pool, t)
    b = _operand(c, r, pool, t if c.bool() or isinstance(t, ScalarType) else ScalarType(t.dtype))
    if c.bool():
        a, b = b, a
    pool.add(r.op(c.pick(BINARY_OPS), [a, b], [t], {**_flags(c), **c.common_attrs()}).result)


def g_cmp(c, r, pool, depth):
    t = c.value_type()
    a, b = _operand(c, r, pool, t), _operand(c, r, pool, t)
    attrs = {"pred": c.pick(CMP_PREDICATES), **c.common_attrs()}
    pool.add(r.op("cmp", [a, b], [like(t, "i1")], attrs).result)


def g_select(c, r, pool, depth):
    t = c.value_type()
    cond = _operand(c, r, pool, like(t, "i1") if c.bool() else I1)
    a, b = _operand(c, r, pool, t), _operand(c, r, pool, t)
    pool.add(r.op("select", [cond, a, b], [t], c.common_attrs()).result)


def g_cast(c, r, pool, depth):
    t = c.value_type()
    x = _operand(c, r, pool, t)
    if c.bool():
        pool.add(r.op("cast", [x], [like(t, c.dtype())], {**_flags(c), **c.common_attrs()}).result)
    else:
        same_width = tuple(d for d in dtypes.ALL_DTYPES if dtypes.BITS[d] == dtypes.BITS[t.dtype])
        pool.add(r.op("bitcast", [x], [like(t, c.dtype(same_width))], c.common_attrs()).result)


def g_broadcast(c, r, pool, depth):
    dt = c.dtype()
    shape = c.shape()
    if len(shape) >= 2 and c.bool():
        src = _operand(c, r, pool, c.frag_type(dt, (shape[0],)))
        dims = (0,)
    else:
        src = _operand(c, r, pool, ScalarType(dt))
        dims = ()
    pool.add(r.op("broadcast", [src], [c.frag_type(dt, shape)], {"dims": dims, **c.common_attrs()}).result)


def g_shape(c, r, pool, depth):
    dt = c.dtype()
    kind = c.pick(["reshape", "transpose", "join", "extract", "tuple", "record", "get", "field"])
    f = c.frag_type(dt)
    if kind == "reshape":
        x = _operand(c, r, pool, f)
        pool.add(r.op("reshape", [x], [c.frag_type(dt)], c.common_attrs()).result)
    elif kind == "transpose":
        x = _operand(c, r, pool, f)
        perm = list(range(f.rank))
        if c.bool():
            perm.reverse()
        pool.add(r.op("transpose", [x], [FragmentType(dt, tuple(f.shape[i] for i in perm))],
                      {"perm": tuple(perm), **c.common_attrs()}).result)
    elif kind == "join":
        a, b = _operand(c, r, pool, f), _operand(c, r, pool, f)
        pool.add(r.op("join", [a, b], [FragmentType(dt, f.shape + (Const(2),))], c.common_attrs()).result)
    elif kind == "extract":
        x = _operand(c, r, pool, f)
        idx = tuple(c.int(0, 3) for _ in f.shape)
        pool.add(r.op("extract", [x], [ScalarType(dt)], {"index": idx, **c.common_attrs()}).result)
    else:
        items = [_operand(c, r, pool, c.value_type()) for _ in range(c.int(1, 3))]
        tt = TupleType(tuple(v.type for v in items))
        if kind in ("tuple", "get"):
            tup = r.op("tuple", items, [tt], c.common_attrs()).result
        else:
            names = tuple(c.string() for _ in items)
            tup = r.op("record", items, [tt], {"fields": names, **c.common_attrs()}).result
        pool.add(tup)
        if kind == "get":
            i = c.int(0, len(items) - 1)
            pool.add(r.op("get", [tup], [items[i].type], {"index": i}).result)
        elif kind == "field":
            pool.add(r.op("field", [tup], [items[0].type], {"name": c.string()}).result)


def _validity(c, r, pool, shape) -> tuple[list[Value], bool]:
    if not c.bool():
        return [], False
    t = I1 if shape is None else FragmentType("i1", shape)
    return [_operand(c, r, pool, t)], True


def _resource(c, pool) -> Value | None:
    """A view or (half of the time, when one is in scope) a buffer to access."""
    views = [v for v in pool.all() if isinstance(v.type, ViewType)]
    buffers = [v for v in pool.all() if isinstance(v.type, BufferType)]
    if buffers and (not views or c.bool()):
        return c.pick(buffers)
    return c.pick(views) if views else None


def g_read(c, r, pool, depth):
    resource = _resource(c, pool)
    if resource is None:
        return g_const(c, r, pool, depth)
    is_buf = isinstance(resource.type, BufferType)
    name = "buffer_load" if is_buf else c.pick(["load", "gather", "atomic_load"])
    coords, shape = _coords(c, r, pool, resource.type.rank)
    valid, has = _validity(c, r, pool, shape)
    attrs: dict[str, Any] = {"valid": has, **c.common_attrs()}
    if has or c.bool():
        attrs["fill"] = c.const_value(resource.type.dtype)
    if name == "atomic_load":
        attrs["order"] = c.pick(MEMORY_ORDERS)
        attrs["domain"] = c.pick(SHARING_DOMAINS)
    rt = ScalarType(resource.type.dtype) if shape is None else c.frag_type(resource.type.dtype, shape)
    pool.add(r.op(name, [resource, *coords, *valid], [rt], attrs).result)


def g_write(c, r, pool, depth):
    resource = _resource(c, pool)
    if resource is None:
        return g_const(c, r, pool, depth)
    is_buf = isinstance(resource.type, BufferType)
    name = "buffer_store" if is_buf else c.pick(
        ["store", "scatter", "scatter_reduce", "atomic_rmw", "atomic_cas", "atomic_store"])
    coords, shape = _coords(c, r, pool, resource.type.rank)
    vt = ScalarType(resource.type.dtype) if shape is None else c.frag_type(resource.type.dtype, shape)
    payload = [_operand(c, r, pool, vt) for _ in range(2 if name == "atomic_cas" else 1)]
    valid, has = _validity(c, r, pool, shape)
    attrs: dict[str, Any] = {"valid": has, **c.common_attrs()}
    if name == "scatter_reduce":
        attrs["combine"] = c.pick(COMBINERS)
    if name.startswith("atomic"):
        attrs["order"] = c.pick(MEMORY_ORDERS)
        attrs["domain"] = c.pick(SHARING_DOMAINS)
    if name == "atomic_rmw":
        attrs["kind"] = c.pick(RMW_KINDS)
    results = [vt] if name in ("atomic_rmw", "atomic_cas") else []
    for v in r.op(name, [resource, *coords, *payload, *valid], results, attrs).results:
        pool.add(v)


def g_alloc(c, r, pool, depth):
    bt = BufferType(c.dtype(), c.shape(), c.pick(BUFFER_SCOPES))
    init = "first_write" if c.bool() else c.const_value(bt.dtype)
    attrs: dict[str, Any] = {"init": init, **c.common_attrs()}
    if c.bool():
        attrs["owner"] = c.string()
    if bt.scope == "workspace" and c.bool():
        attrs["arg"] = c.string()
    pool.add(r.op("alloc", [], [bt], attrs).result)


def _combiner(c, n: int) -> Callable[..., Any]:
    """A combiner region body: args a_0..a_{n-1}, b_0..b_{n-1}; yields n values (binary ops or args)."""
    def build(rb: RegionBuilder, *args: Value) -> list[Value]:
        out = []
        for i in range(n):
            a, b = args[i], args[n + i]
            if c.bool():
                out.append(rb.op(c.pick(BINARY_OPS), [a, b], [a.type], _flags(c)).result)
            else:
                out.append(c.pick([a, b]))
        return out
    return build


def _ranked_shape(c) -> tuple:
    return c.pick(c.shapes)  # every generated shape has rank >= 1


def g_reduce_scan(c, r, pool, depth):
    shape = _ranked_shape(c)
    xs = [_operand(c, r, pool, c.frag_type(c.dtype(), shape)) for _ in range(c.int(1, 2))]
    scalar_types = [ScalarType(x.type.dtype) for x in xs]
    use_region = c.bool()
    regions = [r.sub_region(scalar_types * 2, _combiner(c, len(xs)))] if use_region else []
    combine = "region" if use_region else c.pick(COMBINERS)
    identity = tuple(c.const_value(x.type.dtype) for x in xs)
    if c.bool():
        axes = tuple(i for i in range(len(shape)) if c.bool()) or (0,)
        keep = [i for i in range(len(shape)) if i not in axes]
        res = [ScalarType(x.type.dtype) if not keep else FragmentType(x.type.dtype, tuple(shape[i] for i in keep))
               for x in xs]
        op = r.op("reduce", xs, res, {"axes": axes, "combine": combine, "identity": identity,
                                      **c.common_attrs()}, regions)
    else:
        attrs = {"axis": c.int(0, len(shape) - 1), "combine": combine, "identity": identity, **c.common_attrs()}
        for flag in ("reverse", "exclusive"):
            if c.bool():
                attrs[flag] = c.bool()
        op = r.op("scan", xs, [x.type for x in xs], attrs, regions)
    for v in op.results:
        pool.add(v)


def g_argreduce(c, r, pool, depth):
    shape = _ranked_shape(c)
    x = _operand(c, r, pool, c.frag_type(c.dtype(dtypes.FLOAT_DTYPES), shape))
    attrs = {"axis": 0, "kind": c.pick(["max", "min"]), **c.common_attrs()}
    if c.bool():
        attrs["nan"] = c.pick(["propagate", "ignore"])
    keep = shape[1:]
    rv = ScalarType(x.type.dtype) if not keep else FragmentType(x.type.dtype, keep)
    ri = INDEX if not keep else FragmentType("index", keep)
    for v in r.op("argreduce", [x], [rv, ri], attrs).results:
        pool.add(v)


def g_contract(c, r, pool, depth):
    a_, b_, k_ = (c.pick([Sym(s) for s in c.symbols] + [Const(16)]) for _ in range(3))
    in_dt = c.dtype(("f16", "bf16", "f32"))
    lhs = _operand(c, r, pool, FragmentType(in_dt, (a_, k_)))
    rhs = _operand(c, r, pool, FragmentType(in_dt, (k_, b_)))
    acc_t = FragmentType("f32", (a_, b_))
    if c.chance(4):
        ls = _operand(c, r, pool, FragmentType("f32", (a_, Const(1))))
        rs = _operand(c, r, pool, FragmentType("f32", (Const(1), b_)))
        acc = _operand(c, r, pool, acc_t)
        pool.add(r.op("scaled_contract", [lhs, ls, rhs, rs, acc], [acc_t],
                      {"lhs_contract": (1,), "rhs_contract": (0,), "scale_block": 32,
                       **c.common_attrs()}).result)
        return
    acc = _operand(c, r, pool, acc_t)
    attrs = {"lhs_contract": (1,), "rhs_contract": (0,), **c.common_attrs()}
    if c.bool():
        attrs["precision"] = c.pick(["ieee", "tf32"])
    if c.bool():
        attrs["lhs_batch"], attrs["rhs_batch"] = (), ()
    pool.add(r.op("contract", [lhs, rhs, acc], [acc_t], attrs).result)


def g_histogram(c, r, pool, depth):
    shape = _ranked_shape(c)
    x = _operand(c, r, pool, c.frag_type("i32", shape))
    valid, has = _validity(c, r, pool, shape)
    pool.add(r.op("histogram", [x, *valid], [FragmentType("i32", (Const(16),))],
                  {"valid": has, **c.common_attrs()}).result)


def _carried(c, r, pool) -> list[Value]:
    return [_operand(c, r, pool, c.value_type()) for _ in range(c.int(0, 2))]


def _body(c, pool: _Pool, depth: int, yields: list[Type], max_ops: int = 3) -> Callable[..., Any]:
    """A region body: random ops in a child scope of ``pool``, yielding values of ``yields``."""
    def build(rb: RegionBuilder, *args: Value) -> list[Value]:
        inner = pool.child(list(args))
        gen_ops(c, rb, inner, depth + 1, c.int(0, max_ops))
        return [_operand(c, rb, inner, t) for t in yields]
    return build


def g_for(c, r, pool, depth):
    lb, ub, step = (_operand(c, r, pool, INDEX) for _ in range(3))
    inits = _carried(c, r, pool)
    types = [v.type for v in inits]
    region = r.sub_region([INDEX] + types, _body(c, pool, depth, types), hints=["iv"])
    attrs = c.common_attrs()
    if c.chance(3):
        attrs["narrowing"] = {c.pick(["kind", "proof", "lo", "hi", "note s", "true"]): c.attr_value()
                              for _ in range(c.int(0, 3))}
    for v in r.op("for", [lb, ub, step, *inits], types, attrs, [region]).results:
        pool.add(v)


def g_if(c, r, pool, depth):
    cond = _operand(c, r, pool, I1)
    types = [c.value_type() for _ in range(c.int(0, 2))]
    regions = [r.sub_region([], _body(c, pool, depth, types)) for _ in range(2)]
    for v in r.op("if", [cond], types, c.common_attrs(), regions).results:
        pool.add(v)


def g_while(c, r, pool, depth):
    inits = _carried(c, r, pool)
    types = [v.type for v in inits]
    cond_r = r.sub_region(types, _body(c, pool, depth, [I1] + types, max_ops=1))
    body_r = r.sub_region(types, _body(c, pool, depth, types))
    for v in r.op("while", inits, types, c.common_attrs(), [cond_r, body_r]).results:
        pool.add(v)


def g_region_fold_scan(c, r, pool, depth):
    lb, ub, step = (_operand(c, r, pool, INDEX) for _ in range(3))
    inits = [_operand(c, r, pool, c.value_type()) for _ in range(c.int(1, 2))]
    types = [v.type for v in inits]
    summarize = r.sub_region([INDEX], _body(c, pool, depth, types, max_ops=2), hints=["seg"])
    combine = r.sub_region(types * 2, _body(c, pool, depth, types, max_ops=2))
    if c.bool():
        op = r.op("region_fold", [lb, ub, step, *inits], types, c.common_attrs(), [summarize, combine])
    else:
        emit = r.sub_region([INDEX] + types, _body(c, pool, depth, [], max_ops=2))
        op = r.op("region_scan", [lb, ub, step, *inits], types, c.common_attrs(), [summarize, combine, emit])
    for v in op.results:
        pool.add(v)


LEAF_GENERATORS = [g_const, g_launch, g_range, g_unary, g_binary, g_cmp, g_select, g_cast, g_broadcast, g_shape,
                   g_read, g_write, g_alloc, g_reduce_scan, g_argreduce, g_contract, g_histogram]
REGION_GENERATORS = [g_for, g_if, g_while, g_region_fold_scan]
#: every op of the table the generator can produce (a test checks this covers spec.SPECS)
GENERATED_OPS = {"const", "launch", "range", *UNARY_OPS, *BINARY_OPS, "cmp", "select", "cast", "bitcast",
                 "broadcast", "reshape", "transpose", "join", "extract", "tuple", "record", "get", "field", "load",
                 "gather", "atomic_load", "buffer_load", "store", "scatter", "scatter_reduce", "atomic_rmw",
                 "atomic_cas", "atomic_store", "buffer_store", "alloc", "reduce", "scan", "argreduce", "contract",
                 "scaled_contract", "histogram", "for", "if", "while", "region_fold", "region_scan",
                 "execution_group", "yield"}


def gen_ops(c: _Ctx, r: RegionBuilder, pool: _Pool, depth: int, n: int) -> None:
    gens = LEAF_GENERATORS + (REGION_GENERATORS if depth < 2 else [])
    for _ in range(n):
        c.pick(gens)(c, r, pool, depth)


@st.composite
def modules(draw: Callable[[st.SearchStrategy[Any]], Any], max_kernels: int = 2):
    """A random well-formed module built with ModuleBuilder (see the module docstring)."""
    c0 = _Ctx(draw, [], [], [])
    options = CompileOptions(c0.pick(NUMERICS), c0.bool(), c0.bool())
    mb = ModuleBuilder(c0.pick(["sm90", "gfx942"]) if c0.bool() else c0.string(), options)
    params = [p for p in PARAM_NAMES if c0.chance(3)]
    for p in params:
        mb.param(p, c0.int(-4, 256), tuple(c0.int(-4, 256) for _ in range(c0.int(0, 4))))
    for ki in range(c0.int(1, max_kernels)):
        kb = mb.kernel(f"k{ki}" + ("" if c0.bool() else "_" + c0.pick(["gemm", "a.b", "x_1"]).replace(".", "_")),
                       origin=c0.string())
        views = [v for v in VIEW_NAMES if c0.bool()] or ["A"]
        scalars = [s for s in SCALAR_NAMES if c0.chance(3)]
        symbols = sorted(set(SHAPE_SYMBOLS[:c0.int(1, 4)]) | set(params) | set(scalars))
        shapes = [tuple(Sym(c0.pick(symbols)) if c0.bool() else Const(c0.int(1, 64)) for _ in range(c0.int(1, 2)))
                  for _ in range(c0.int(1, 3))]
        ranks_of = {vname: c0.int(1, 3) for vname in views}
        c = _Ctx(draw, symbols, shapes, sorted(ranks_of.items()))
        abi_values = []
        for vname in views:
            rank = ranks_of[vname]
            shape = [c.pick(symbols + [7, 128]) for _ in range(rank)]
            strides = [c.le(2) for _ in range(rank)] if c.bool() else None
            abi_values.append(kb.view(vname, c.dtype(), shape, access=c.pick(ACCESS_MODES), strides=strides,
                                      offset=c.le(2) if c.bool() else 0,
                                      alias=c.string() if c.chance(4) else None, private=c.chance(5)))
        for sname in scalars:
            private = c.bool()
            abi_values.append(kb.scalar(sname, c.dtype(dtypes.INT_DTYPES), private=private,
                                        producer=c.le(3) if private and c.bool() else None))
        ranks = []
        for _ in range(c.int(1, 2)):
            rank = c.int(1, 3)
            ranks.append(rank)
            extents = [c.le(2) for _ in range(rank)]
            if c.bool():
                kb.segment(extents, "grouped", c.le(2))
            else:
                kb.segment(extents, "row_major", c.le(2) if c.chance(6) else None)
        if c.chance(5):
            kb.launch = c.le(2)

        def body(r: RegionBuilder, pid: Value, c=c, ranks=ranks, abi_values=abi_values) -> None:
            pool = _Pool(abi_values + [pid])
            gen_ops(c, r, pool, 1, c.int(0, 2))
            for seg, rank in enumerate(ranks):
                def group(rb: RegionBuilder, *coords: Value) -> list[Value]:
                    gen_ops(c, rb, pool.child(list(coords)), 0, c.int(0, 6))
                    return []
                region = r.sub_region([INDEX] * rank, group, hints=[f"p{i}" for i in range(rank)])
                r.op("execution_group", [pid], [], {"segment": seg, **c.common_attrs()}, [region])

        kb.body(body)
    return mb.build()


__all__ = ["modules", "launch_exprs", "int_launch_exprs", "strings", "GENERATED_OPS", "SPECS"]
