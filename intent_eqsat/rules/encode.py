"""GPU IR kernel -> term (and so -> egglog), with the side information that makes decoding exact.

Pure ops become a DAG of ``Op``/``Res`` values (equal computations share one node: the e-graph sees them once);
effectful ops become ``Stmt`` nodes in program order. An op is *effectful* when it writes, is atomic, allocates or
touches a buffer, reads a view the kernel also writes (its order against the writes matters), is an
``execution_group``, or holds a region with such an op.

The side information (:class:`Provenance`) keeps what only matters for printing the same program back: the SSA
names of the original values and the original position of each op in its region. It is diagnostics/provenance in
the sense of SPEC PASS-6: it never decides structure (decode places every value by its dependencies and only uses
the original names and order where the term is unchanged).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from intent_eqsat.ir import launch as L
from intent_eqsat.ir.core import Kernel, Op, Region, Value
from intent_eqsat.ir.spec import ATOMIC_ACCESSES, SPECS, WRITE_ACCESSES
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType
from intent_eqsat.rules.terms import T, cons_list, t


@dataclass
class Provenance:
    """Names and original positions of one kernel's ops, keyed by (region term id, term id): a pure computation
    that occurs in two sibling regions is one term with two homes, each with its own name and position."""

    names: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # (region, Op/Res/SRes) -> names
    arg_names: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # (region, index) -> names
    order: dict[tuple[int, int], int] = field(default_factory=dict)   # (region, Op/Multi/Stmt term) -> position
    homes: dict[int, list[int]] = field(default_factory=dict)         # Op/Multi term id -> region term ids
    entries: dict[int, list[tuple[int, T]]] = field(default_factory=dict)  # region -> (position, term) in order
    keep: list[T] = field(default_factory=list)                       # keeps keyed terms alive (ids stay valid)

    # Pickled with each term id replaced by the term's position in ``keep`` (every keyed term is kept), and the ids
    # of the unpickled (re-interned) terms put back: a pickled optimizer result decodes its candidates with the
    # same names and order in another process (a batch worker's result, a cached compile).
    def __getstate__(self) -> dict[str, Any]:
        pos = {id(term): i for i, term in enumerate(self.keep)}

        def pair(key: tuple[int, int], second_is_term: bool) -> tuple[int, int] | None:
            region = pos.get(key[0])
            second = pos.get(key[1]) if second_is_term else key[1]
            return None if region is None or second is None else (region, second)

        def pairs(table: dict, second_is_term: bool) -> list:
            return [(k2, v) for k, v in table.items() if (k2 := pair(k, second_is_term)) is not None]

        return {"keep": self.keep, "names": pairs(self.names, True), "arg_names": pairs(self.arg_names, False),
                "order": pairs(self.order, True),
                "homes": [(pos[k], [pos[r] for r in rs if r in pos]) for k, rs in self.homes.items() if k in pos],
                "entries": [(pos[k], v) for k, v in self.entries.items() if k in pos]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        keep = list(state["keep"])
        ident = [id(term) for term in keep]
        self.keep = keep
        self.names = {(ident[r], ident[x]): v for (r, x), v in state["names"]}
        self.arg_names = {(ident[r], i): v for (r, i), v in state["arg_names"]}
        self.order = {(ident[r], ident[x]): v for (r, x), v in state["order"]}
        self.homes = {ident[k]: [ident[r] for r in rs] for k, rs in state["homes"]}
        self.entries = {ident[k]: v for k, v in state["entries"]}


# ------------------------------------------------------------------------------------------ leaf encoders

def le_term(e: L.LaunchExpr) -> T:
    if isinstance(e, L.Const):
        return t("LeBool", int(e.value)) if isinstance(e.value, bool) else t("LeInt", int(e.value))
    if isinstance(e, L.Sym):
        return t("LeSym", e.name)
    if isinstance(e, L.Dim):
        return t("LeDim", e.view, e.axis)
    if isinstance(e, L.Stride):
        return t("LeStride", e.view, e.axis)
    if isinstance(e, L.BinOp):
        return t("LeBin", e.op, le_term(e.lhs), le_term(e.rhs))
    if isinstance(e, L.Not):
        return t("LeNot", le_term(e.operand))
    if isinstance(e, L.Select):
        return t("LeSelect", le_term(e.cond), le_term(e.if_true), le_term(e.if_false))
    if isinstance(e, L.Tuple):
        return t("LeTuple", les_term(e.items))
    if isinstance(e, L.TupleGet):
        return t("LeGet", le_term(e.tuple_expr), e.index)
    raise TypeError(f"not a LaunchExpr: {e!r}")


def les_term(items) -> T:
    return cons_list("LEsNil", "LEsCons", [le_term(x) for x in items])


def ty_term(ty: Type) -> T:
    if isinstance(ty, ScalarType):
        return t("TyScalar", ty.dtype)
    if isinstance(ty, FragmentType):
        if ty.axes is None:
            return t("TyFrag", ty.dtype, les_term(ty.shape))
        return t("TyFragAxes", ty.dtype, les_term(ty.shape), cons_list("StrsNil", "StrsCons", list(ty.axes)))
    if isinstance(ty, ViewType):
        return t("TyView", ty.dtype, les_term(ty.shape))
    if isinstance(ty, BufferType):
        return t("TyBuffer", ty.dtype, les_term(ty.shape), ty.scope)
    if isinstance(ty, TupleType):
        return t("TyTuple", tys_term(ty.items))
    raise TypeError(f"not a type: {ty!r}")


def tys_term(types) -> T:
    return cons_list("TysNil", "TysCons", [ty_term(x) for x in types])


def float_text(v: float) -> str:
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


def attr_term(v: Any) -> T:
    if isinstance(v, bool):
        return t("ABool", int(v))
    if isinstance(v, int):
        return t("AInt", v)
    if isinstance(v, float):
        return t("AFloat", float_text(v))
    if isinstance(v, str):
        return t("AStr", v)
    if isinstance(v, L.LaunchExpr):
        return t("ALe", le_term(v))
    if isinstance(v, (tuple, list)):
        return t("AList", cons_list("AsNil", "AsCons", [attr_term(x) for x in v]))
    if isinstance(v, dict):
        return t("ADict", amap_term(v))
    raise TypeError(f"cannot encode attribute value {v!r}")


def amap_term(attrs: dict[str, Any]) -> T:
    out = t("AMapNil")
    for k, v in sorted(attrs.items(), reverse=True):
        out = t("AMapCons", k, attr_term(v), out)
    return out


# ---------------------------------------------------------------------------------------------- kernels

def written_resources(kernel: Kernel) -> set[str]:
    """Names of views/buffers some op of the kernel writes (their reads are ordered effects)."""
    from intent_eqsat.ir.core import walk
    out: set[str] = set()
    for op in walk(kernel.body):
        if op.name in WRITE_ACCESSES and op.operands:
            out.add(op.operands[0].name)
    return out


def is_effectful(op: Op, written: set[str]) -> bool:
    spec = SPECS[op.name]
    if op.name == "execution_group" or spec.effect in ("write", "rmw", "alloc") or op.name in ATOMIC_ACCESSES:
        return True
    if op.name in ("buffer_load", "buffer_store"):
        return True
    if spec.effect == "read" and op.operands and op.operands[0].name in written:
        return True
    return any(is_effectful(inner, written) for r in op.regions for inner in r.ops)


class _Encoder:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.written = written_resources(kernel)
        self.values: dict[str, T] = {}
        self.prov = Provenance()
        self.seq = 0
        self.binds: list[tuple[T, str]] = []

    def keep(self, term: T) -> T:
        self.prov.keep.append(term)
        return term

    def region(self, region: Region, depth: int) -> T:
        args = []
        for i, a in enumerate(region.args):
            term = t("Arg", depth, i, ty_term(a.type))
            self.values[a.name] = term
            args.append(term)
        stmts: list[T] = []
        placed: list[tuple[int, T]] = []            # (position, Op/Multi/Stmt term) defined in this region
        outer_binds = self.binds
        self.binds = []                             # (Op/Res/SRes term, SSA name) defined in this region
        yields: list[T] = []
        yield_attrs = t("AMapNil")
        for pos, op in enumerate(region.ops):
            if op.name == "yield":
                yields = [self.values[v.name] for v in op.operands]
                yield_attrs = amap_term(op.attrs)
                continue
            term = self.op(op, depth, stmts)
            placed.append((pos, term))
        rterm = t("Region", depth, tys_term([a.type for a in region.args]), cons_list("StmtsNil", "StmtsCons", stmts),
                  cons_list("ValsNil", "ValsCons", yields), yield_attrs)
        self.keep(rterm)
        for i, a in enumerate(region.args):
            self.prov.arg_names.setdefault((id(rterm), i), []).append(a.name)
        self.prov.entries.setdefault(id(rterm), placed)
        for pos, term in placed:
            self.prov.order.setdefault((id(rterm), id(term)), pos)
            homes = self.prov.homes.setdefault(id(term), [])
            if id(rterm) not in homes:
                homes.append(id(rterm))
        for term, name in self.binds:
            self.prov.names.setdefault((id(rterm), id(term)), []).append(name)
        self.binds = outer_binds
        return rterm

    def op(self, op: Op, depth: int, stmts: list[T]) -> T:
        operands = cons_list("ValsNil", "ValsCons", [self.values[v.name] for v in op.operands])
        attrs = amap_term(op.attrs)
        regions = cons_list("RegionsNil", "RegionsCons", [self.region(r, depth + 1) for r in op.regions])
        if is_effectful(op, self.written):
            stmt = self.keep(t("Stmt", self.seq, op.name, operands, attrs, tys_term([r.type for r in op.results]),
                               regions))
            self.seq += 1
            stmts.append(stmt)
            for i, r in enumerate(op.results):
                self.bind(r, t("SRes", stmt, i, ty_term(r.type)))
            return stmt
        if len(op.results) == 1 and not op.regions:
            term = t("Op", op.name, operands, attrs, ty_term(op.result.type))
            self.bind(op.result, term)
            return term
        multi = self.keep(t("Multi", op.name, operands, attrs, tys_term([r.type for r in op.results]), regions))
        for i, r in enumerate(op.results):
            self.bind(r, t("Res", multi, i, ty_term(r.type)))
        return multi

    def bind(self, value: Value, term: T) -> None:
        self.values[value.name] = self.keep(term)
        self.binds.append((term, value.name))


def encode_kernel(kernel: Kernel) -> tuple[T, Provenance]:
    """The kernel's term (``Kernel(name, segments, launch, body)``) and its provenance."""
    enc = _Encoder(kernel)
    body = enc.region(kernel.body, 0)
    segs = cons_list("SegsNil", "SegsCons", [
        t("Seg", les_term(s.extents), s.order_key, le_term(s.group_size) if s.group_size is not None else t("LeNone"))
        for s in kernel.space.segments])
    launch = le_term(kernel.space.launch) if kernel.space.launch is not None else t("LeNone")
    root = enc.keep(t("Kernel", kernel.name, segs, launch, body))
    return root, enc.prov
