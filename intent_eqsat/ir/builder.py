"""A Python builder for GPU IR programs (used by construction, rules' decode, and hand-written test programs).

Region-holding ops take callbacks that build the region and return the values to yield, so a program reads top
to bottom like its text form::

    mb = ModuleBuilder("sm90")
    mb.param("BM", 64, (32, 64, 128))
    kb = mb.kernel("copy", origin="copy")
    X = kb.view("X", "f32", ["N"], access="read"); Y = kb.view("Y", "f32", ["N"], access="write")
    kb.segment([ceil_div("N", "BM")])
    def group(r, coords):
        (p,) = coords
        i = r.add(r.broadcast(r.mul(p, r.launch("BM")), frag("index", "BM")), r.range(frag("index", "BM")))
        ok = r.cmp("lt", i, r.broadcast(r.launch("N"), frag("index", "BM")))
        r.store(Y, [i], r.load(X, [i], valid=ok, fill=0.0), valid=ok)
    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    module = mb.build()
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from intent_eqsat.ir.core import (AbiArg, CompileOptions, Kernel, Module, Op, ParamDecl, ProgramSpace, Region,
                                  Segment, Value)
from intent_eqsat.ir.launch import Const, LaunchExpr, as_le
from intent_eqsat.ir.spec import SPECS, normalize_attrs
from intent_eqsat.ir.types import (BufferType, FragmentType, ScalarType, TupleType, Type, ViewType, like,
                                   value_shape)

INDEX = ScalarType("index")
I1 = ScalarType("i1")


class _Names:
    """Fresh SSA names for one kernel (``%v0``, ``%v1``...; hints become ``%hint``, ``%hint_1``...)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.counter = 0

    def fresh(self, hint: str | None = None) -> str:
        if hint and hint not in self.used:
            self.used.add(hint)
            return hint
        base = hint or "v"
        while True:
            name = f"{base}{self.counter}" if not hint else f"{base}_{self.counter}"
            self.counter += 1
            if name not in self.used:
                self.used.add(name)
                return name

    def reserve(self, name: str) -> None:
        if name in self.used:
            raise ValueError(f"value name %{name} used twice")
        self.used.add(name)


class RegionBuilder:
    """Appends ops to one region."""

    def __init__(self, names: _Names, region: Region, origin: str | None = None):
        self.names = names
        self.region = region
        self.origin = origin

    # -- generic ---------------------------------------------------------------------------------------------
    def op(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
           attrs: dict[str, Any] | None = None, regions: Sequence[Region] = (), hint: str | None = None) -> Op:
        if name not in SPECS:
            raise ValueError(f"unknown op {name!r}")
        attrs = dict(attrs or {})
        if self.origin is not None and "origin" not in attrs:
            attrs["origin"] = self.origin
        results = [Value(self.names.fresh(hint), t) for t in result_types]
        op = Op(name, list(operands), results, normalize_attrs(name, attrs), list(regions))
        self.region.ops.append(op)
        return op

    def value(self, name: str, operands: Sequence[Value], result_type: Type, hint: str | None = None,
              **attrs: Any) -> Value:
        return self.op(name, operands, [result_type], attrs, hint=hint).result

    def sub_region(self, arg_types: Sequence[Type], build: Callable[..., Any], hints: Sequence[str] = ()) -> Region:
        """Build a nested region: ``build(rb, *args)`` returns the values to yield (or None for none)."""
        args = [Value(self.names.fresh(hints[i] if i < len(hints) else None), t) for i, t in enumerate(arg_types)]
        region = Region(args, [])
        rb = RegionBuilder(self.names, region, self.origin)
        out = build(rb, *args)
        rb.yield_(list(out) if out is not None else [])
        return region

    def with_origin(self, origin: str | None) -> "RegionBuilder":
        return RegionBuilder(self.names, self.region, origin)

    # -- constants -------------------------------------------------------------------------------------------
    def const(self, value: int | float | bool, type_: Type | str = "f32", hint: str | None = None) -> Value:
        t = ScalarType(type_) if isinstance(type_, str) else type_
        return self.value("const", [], t, hint, value=value)

    def index(self, value: int) -> Value:
        return self.const(value, INDEX)

    def launch(self, expr: LaunchExpr | int | str, type_: Type = INDEX, hint: str | None = None) -> Value:
        return self.value("launch", [], type_, hint, expr=as_le(expr))

    def range(self, type_: FragmentType, start: int = 0, hint: str | None = None) -> Value:
        return self.value("range", [], type_, hint, start=start)

    # -- elementwise -----------------------------------------------------------------------------------------
    def unary(self, name: str, x: Value, **flags: Any) -> Value:
        return self.value(name, [x], x.type, **flags)

    def binary(self, name: str, a: Value, b: Value, **flags: Any) -> Value:
        t = a.type if isinstance(a.type, FragmentType) or not isinstance(b.type, FragmentType) else b.type
        return self.value(name, [a, b], t, **flags)

    def add(self, a: Value, b: Value) -> Value:
        return self.binary("add", a, b)

    def sub(self, a: Value, b: Value) -> Value:
        return self.binary("sub", a, b)

    def mul(self, a: Value, b: Value) -> Value:
        return self.binary("mul", a, b)

    def div(self, a: Value, b: Value) -> Value:
        return self.binary("div", a, b)

    def max(self, a: Value, b: Value) -> Value:
        return self.binary("max", a, b)

    def min(self, a: Value, b: Value) -> Value:
        return self.binary("min", a, b)

    def exp(self, x: Value) -> Value:
        return self.unary("exp", x)

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        shape_src = a if isinstance(a.type, FragmentType) else b
        return self.value("cmp", [a, b], like(shape_src.type, "i1"), pred=pred)

    def and_(self, a: Value, b: Value) -> Value:
        return self.binary("and", a, b)

    def select(self, c: Value, a: Value, b: Value) -> Value:
        t = next((v.type for v in (a, b, c) if isinstance(v.type, FragmentType)), a.type)
        return self.value("select", [c, a, b], like(t, a.type.dtype))

    def cast(self, x: Value, dtype: str) -> Value:
        return self.value("cast", [x], like(x.type, dtype))

    # -- shape -----------------------------------------------------------------------------------------------
    def broadcast(self, x: Value, type_: FragmentType, dims: Sequence[int] | None = None) -> Value:
        if dims is None:
            rank_in = len(value_shape(x.type))
            dims = tuple(range(type_.rank - rank_in, type_.rank)) if rank_in else ()
        return self.value("broadcast", [x], type_, dims=tuple(dims))

    def expand(self, x: Value, type_: FragmentType, dims: Sequence[int]) -> Value:
        return self.broadcast(x, type_, dims)

    # -- accesses --------------------------------------------------------------------------------------------
    def load(self, view: Value, coords: Sequence[Value], valid: Value | None = None, fill: Any = None,
             type_: Type | None = None, op: str = "load", hint: str | None = None) -> Value:
        t = type_ or _access_type(view, coords)
        operands = [view, *coords] + ([valid] if valid is not None else [])
        attrs: dict[str, Any] = {"valid": valid is not None}
        if fill is not None:
            attrs["fill"] = fill
        return self.value(op, operands, t, hint, **attrs)

    def store(self, view: Value, coords: Sequence[Value], value: Value, valid: Value | None = None,
              op: str = "store", **attrs: Any) -> Op:
        operands = [view, *coords, value] + ([valid] if valid is not None else [])
        return self.op(op, operands, [], {"valid": valid is not None, **attrs})

    def alloc(self, type_: BufferType, init: Any, hint: str | None = None, **attrs: Any) -> Value:
        return self.value("alloc", [], type_, hint, init=init, **attrs)

    # -- structured ------------------------------------------------------------------------------------------
    def reduce(self, xs: Sequence[Value], axes: Sequence[int], combine: str, identity: Sequence[Any],
               combiner: Callable[..., Any] | None = None) -> list[Value]:
        res_types = [_drop_axes(x.type, axes) for x in xs]
        regions = []
        if combiner is not None:
            scalar_types = [ScalarType(x.type.dtype) for x in xs]
            regions = [self.sub_region(scalar_types * 2, combiner)]
        return self.op("reduce", xs, res_types, {"axes": tuple(axes), "combine": combine,
                                                 "identity": tuple(identity)}, regions).results

    def scan(self, xs: Sequence[Value], axis: int, combine: str, identity: Sequence[Any], reverse: bool = False,
             exclusive: bool = False, combiner: Callable[..., Any] | None = None) -> list[Value]:
        regions = []
        if combiner is not None:
            scalar_types = [ScalarType(x.type.dtype) for x in xs]
            regions = [self.sub_region(scalar_types * 2, combiner)]
        return self.op("scan", xs, [x.type for x in xs],
                       {"axis": axis, "combine": combine, "identity": tuple(identity), "reverse": reverse,
                        "exclusive": exclusive}, regions).results

    def contract(self, lhs: Value, rhs: Value, acc: Value, lhs_contract: Sequence[int] = (1,),
                 rhs_contract: Sequence[int] = (0,), **attrs: Any) -> Value:
        return self.value("contract", [lhs, rhs, acc], acc.type, lhs_contract=tuple(lhs_contract),
                          rhs_contract=tuple(rhs_contract), **attrs)

    # -- control ---------------------------------------------------------------------------------------------
    def execution_group(self, segment: int, pid: Value, build: Callable[..., Any], rank: int,
                        hints: Sequence[str] = ()) -> Op:
        region = self.sub_region([INDEX] * rank, lambda rb, *coords: build(rb, list(coords)), hints)
        return self.op("execution_group", [pid], [], {"segment": segment}, [region])

    def for_(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value], build: Callable[..., Any],
             hints: Sequence[str] = (), **attrs: Any) -> list[Value]:
        """``build(rb, iv, carried_list)`` returns the next carried values."""
        types = [INDEX] + [v.type for v in inits]
        region = self.sub_region(types, lambda rb, iv, *carried: build(rb, iv, list(carried)), hints)
        return self.op("for", [lb, ub, step, *inits], [v.type for v in inits], attrs, [region]).results

    def if_(self, cond: Value, then: Callable[..., Any], else_: Callable[..., Any]) -> list[Value]:
        then_r = self.sub_region([], then)
        else_r = self.sub_region([], else_)
        types = [v.type for v in then_r.ops[-1].operands]
        return self.op("if", [cond], types, {}, [then_r, else_r]).results

    def yield_(self, values: Sequence[Value] = ()) -> Op:
        return self.op("yield", list(values), [], {})


def _access_type(resource: Value, coords: Sequence[Value]) -> Type:
    dtype = resource.type.dtype
    frags = [c.type for c in coords if isinstance(c.type, FragmentType)]
    if frags:
        return FragmentType(dtype, frags[0].shape, frags[0].axes)
    return ScalarType(dtype)


def _drop_axes(t: Type, axes: Sequence[int]) -> Type:
    if not isinstance(t, FragmentType):
        return t
    keep = [i for i in range(t.rank) if i not in axes]
    if not keep:
        return ScalarType(t.dtype)
    return FragmentType(t.dtype, tuple(t.shape[i] for i in keep),
                        None if t.axes is None else tuple(t.axes[i] for i in keep))


class KernelBuilder:
    def __init__(self, name: str, origin: str):
        self.name = name
        self.origin = origin
        self.names = _Names()
        self.abi: list[AbiArg] = []
        self.segments: list[Segment] = []
        self.launch: LaunchExpr | None = None
        self.body_region: Region | None = None

    def view(self, name: str, dtype: str, shape: Sequence[Any], access: str = "read",
             strides: Sequence[Any] | None = None, offset: Any = 0, alias: str | None = None,
             private: bool = False) -> Value:
        self.names.reserve(name)
        v = Value(name, ViewType(dtype, tuple(as_le(s) for s in shape)))
        self.abi.append(AbiArg(v, access, None if strides is None else tuple(as_le(s) for s in strides),
                               as_le(offset), alias, private))
        return v

    def scalar(self, name: str, dtype: str, private: bool = False, producer: Any = None) -> Value:
        self.names.reserve(name)
        v = Value(name, ScalarType(dtype))
        self.abi.append(AbiArg(v, None, None, Const(0), None, private,
                               None if producer is None else as_le(producer)))
        return v

    def segment(self, extents: Sequence[Any], order: str = "row_major", group_size: Any = None) -> int:
        self.segments.append(Segment(tuple(as_le(e) for e in extents), order,
                                     None if group_size is None else as_le(group_size)))
        return len(self.segments) - 1

    def body(self, build: Callable[[RegionBuilder, Value], Any], pid_name: str = "pid") -> None:
        self.names.reserve(pid_name)
        pid = Value(pid_name, INDEX)
        region = Region([a.value for a in self.abi] + [pid], [])
        rb = RegionBuilder(self.names, region)
        build(rb, pid)
        rb.yield_([])
        self.body_region = region

    def build(self) -> Kernel:
        if self.body_region is None:
            raise ValueError(f"kernel {self.name} has no body")
        return Kernel(self.name, self.origin, list(self.abi), ProgramSpace(tuple(self.segments), self.launch),
                      self.body_region)


class ModuleBuilder:
    def __init__(self, target: str = "sm90", options: CompileOptions | None = None):
        self.target = target
        self.options = options or CompileOptions()
        self.params: list[ParamDecl] = []
        self.kernels: list[KernelBuilder] = []

    def param(self, name: str, default: int, candidates: Sequence[int]) -> LaunchExpr:
        self.params.append(ParamDecl(name, default, tuple(candidates)))
        return as_le(name)

    def kernel(self, name: str, origin: str | None = None) -> KernelBuilder:
        kb = KernelBuilder(name, origin or name)
        self.kernels.append(kb)
        return kb

    def build(self) -> Module:
        return Module(self.target, self.options, list(self.params), [k.build() for k in self.kernels])


__all__ = ["ModuleBuilder", "KernelBuilder", "RegionBuilder", "INDEX", "I1", "TupleType"]
