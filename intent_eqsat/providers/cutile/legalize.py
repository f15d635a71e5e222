"""cuTile legalization and provider verifier (SPEC TGT-5, TGT-6, TGT-7, PASS-5).

:func:`legalize` checks one kernel of a GPU IR module against the cuTile surface and a target's capabilities
*before* anything is printed, and records the surface decisions the serializer then prints mechanically. It never
re-reads KIR and never rebuilds ownership, ranges, coordinates or validity: everything it decides is a relation it
*recognises and proves* on the current program.

Checks, raised in TGT-9 order of discovery (the first failure is raised; the compilation-cost bound is reported last):

* shared legality -- the module's shared GPU verifier (run on the one kernel); declared parameters only; every
  LaunchExpr symbol resolves to a parameter, an ABI scalar or a view shape symbol; fragment extents are constants once
  parameters are bound (IR-10 invariant 4);
* provider surface -- every op has a spelling (:mod:`.spellings`) and meets its conditions; fragment extents are
  powers of two (cuTile requires it of every tile dimension); views have no element offset (cuTile arrays have no
  offset form); the op-specific conditions of the spelling table;
* hardware capability -- the target has a cuTile source form, dtypes, atomics and matrix-unit forms, all queried
  from the :class:`~intent_eqsat.providers.targets.Target` object (never from its name);
* compilation cost -- no tile holds more than ``max_tile_elements`` members.

Grid (TGT-5 "at most 3-D block identity", IR-3): a program space of exactly one ``row_major`` segment of rank
``<= min(3, target.max_grid_rank)`` without grid-stride traversal is launched natively: grid = the segment's
extents, and the execution group whose operand is the program coordinate gets ``ct.bid(i)`` as region arguments (the
grid equals the segment exactly, so its guard is always true). Anything else (several segments, rank > 3, grouped
order, grid-stride) is launched on a 1-D grid of ``space.grid`` programs and every execution group is printed as its
guard plus the explicit row-major / grouped delinearization of ``lin - offset`` (IR-3: region arguments become pure
``delinearize(linear, extents)`` results).

Tile-space accesses (TGT-5 "fragments and coordinate relations -> tile-space indices"). A load/gather/store/scatter
(and a workspace buffer access) is printed as ``ct.load``/``ct.store`` at a tile-space index when all of the
following hold, otherwise it is printed element-wise as ``ct.gather``/``ct.scatter`` with ``mask``/``padding_value``
(both are the IR's relation verbatim):

1. *Coordinates.* Each coordinate (one per view axis ``j``) is either a scalar ``s`` (directly, or
   ``broadcast(s, dims=[])``): a *scalar axis*, tile extent 1, tile index ``s``; or ``broadcast(base, dims=[k])`` (or
   ``base`` itself for a rank-1 access) where ``base`` is a rank-1 fragment of extent ``B`` equal to
   ``start + range(B)`` (``add`` of a range with ``start = 0`` and ``broadcast(start, dims=[])`` or a scalar start, in
   either order), or ``range(B) {start = c}`` with ``c % B == 0``: a *tiled axis* mapped to fragment axis ``k`` with
   tile extent ``B``. The block start must be ``mul(q, b)`` (either order) with ``b`` statically ``B`` (tile index
   ``q``), a constant multiple of ``B`` (constant index), or the induction variable of a ``for`` / ``region_fold`` /
   ``region_scan`` whose lower bound and step are static multiples of ``B`` (tile index ``iv // B``).
2. *Coverage.* Every fragment axis is the image of exactly one tiled view axis (no broadcast access); the tile is
   loaded in view-axis order, scalar axes are dropped by ``ct.reshape`` and the rest reordered by ``ct.permute``.
3. *Validity* (validated accesses only). The validity is an ``and``-tree of terms, each ``cmp lt (x, E_j)`` (or
   ``gt (E_j, x)``), possibly built on the rank-1 base and broadcast, where ``x`` denotes the coordinate of view axis
   ``j`` and ``E_j`` is a ``launch`` (or its scalar broadcast) whose LaunchExpr equals the view's extent on axis ``j``
   (sympy-equivalent once parameters are bound), or ``cmp ge (x, 0)`` (vacuous: every start above is non-negative).
   Every tiled axis has such a term unless the tile provably lies inside the view on that axis. So the validity is
   *exactly* the view bounds and ``ct.load``'s out-of-bounds padding / ``ct.store``'s dropped members are the IR's
   invalid members.
4. *Non-empty intersection* (validated accesses only; cuTile leaves a tile entirely outside the array undefined,
   the IR defines it as all-invalid). On every axis the start is provably below the extent: ``q`` is an execution-
   group coordinate whose segment extent equals ``ceil_div(E_j, B)``; an induction variable's upper bound equals
   ``E_j`` (lower bound >= 0); a scalar coordinate is a group coordinate with segment extent ``E_j`` or an induction
   variable bounded by ``E_j``; a constant is below a static ``E_j``.
5. *Fill* (validated reads). The fill is one of cuTile's padding modes: 0 (ZERO), -0.0 (NEG_ZERO), nan, inf, -inf.

An unvalidated access needs only 1 and 2: the IR promises every member is in bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Module, Op, Region, Value, location, walk
from intent_eqsat.ir.launch import (BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet,
                                    children, equivalent, evaluate)
from intent_eqsat.ir.spec import SPECS, access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType
from intent_eqsat.ir.verify_errors import VerificationError
from intent_eqsat.providers.cutile.spellings import SPELLINGS
from intent_eqsat.providers.errors import (CompilationCostUnsupported, HardwareCapabilityUnsupported,
                                           ProviderSurfaceUnsupported, SharedLegalityUnsupported)
from intent_eqsat.providers.targets import Target, get_target

#: default compilation-cost bound: members of one tile
MAX_TILE_ELEMENTS = 1 << 20
#: the largest broadcast product the exact contract expansion / histogram compare may materialize
MAX_EXPANSION_NUMEL = 1 << 16
#: cuTile grid rank (ct.bid axes 0..2)
CUTILE_GRID_RANK = 3
#: memory order -> ct.MemoryOrder member (cuTile has no sequentially consistent order)
ORDERS = {"relaxed": "RELAXED", "acquire": "ACQUIRE", "release": "RELEASE", "acq_rel": "ACQ_REL"}
#: sharing domain -> ct.MemoryScope member, and the target-capability scope name it needs
SCOPES = {"program": "BLOCK", "device": "DEVICE", "system": "SYS"}
TARGET_SCOPES = {"program": "cta", "device": "gpu", "system": "sys"}
#: element dtypes cuTile's atomics accept (cuda.tile._ir.ops._ATOMIC_RMW_SPECS / _atomic_cas_core)
_I3264 = ("i32", "i64", "u32", "u64", "index")
CUTILE_ATOMIC_DTYPES = {
    "add": _I3264 + ("f16", "bf16", "f32", "f64"), "max": _I3264, "min": _I3264, "and": _I3264, "or": _I3264,
    "xor": _I3264, "xchg": _I3264 + ("f32", "f64"), "cas": _I3264 + ("f32", "f64"),
}
#: operand dtype -> accumulator (computation) dtype ct.mma takes (cuda.tile.mma's table, f16 acc via f32)
MMA_FORMS = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64", "i8": "i32", "u8": "i32"}


# ------------------------------------------------------------------------------------------------ plan records

@dataclass(frozen=True)
class IndexTerm:
    """One tile-space index: an SSA scalar (``value``), an induction variable divided by the tile extent
    (``div``: ``value // divisor``, exact because the variable is a multiple of it) or a constant."""

    kind: str                      # value | div | const
    value: str = ""
    divisor: int = 1
    const: int = 0


@dataclass(frozen=True)
class TileForm:
    index: tuple[IndexTerm, ...]        # one per view axis
    shape: tuple[int, ...]              # tile extent per view axis (1 on scalar axes)
    frag_axes: tuple[int | None, ...]   # fragment axis of each view axis (None: scalar axis)
    perm: tuple[int, ...] | None        # ct.permute after dropping scalar axes; None = identity
    padding: str | None                 # ct.PaddingMode member for validated reads


@dataclass
class AccessPlan:
    """How one access is spelled: ``tile`` (ct.load/ct.store at a tile-space index) or ``element``
    (ct.gather/ct.scatter/ct.atomic_* at element coordinates)."""

    form: str
    resource: str                       # the ABI view read/written (a workspace buffer's private view)
    shape: tuple[int, ...]              # static access shape
    tile: TileForm | None = None
    reason: str = ""                    # why the element form was chosen


@dataclass
class GridPlan:
    form: str                           # native | linear
    extents: tuple[LaunchExpr, ...]     # launched grid, per axis
    segment: int | None = None          # the natively launched segment
    reason: str = ""


@dataclass
class ContractPlan:
    """``mma`` (ct.mma on [B,]M,K x [B,]K,N after permute/reshape) or ``expand`` (exact broadcast-sum)."""

    form: str
    lhs_perm: tuple[int, ...]
    rhs_perm: tuple[int, ...]
    batch: bool
    sizes: tuple[int, int, int, int]    # Bt, Mt, Kt, Nt
    work: str                           # accumulator computation dtype
    feed: str                           # dtype fed to ct.mma: the operand dtype, the work dtype or tf32


@dataclass
class KernelPlan:
    """Everything the serializer needs beyond the program itself, all derived from the current GPU IR."""

    module: Module
    kernel: Kernel
    target: Target
    params: dict[str, int]
    grid: GridPlan | None = None
    scalars: list[str] = field(default_factory=list)
    shape_binding: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: symbols that only appear inside a product extent (``CPG`` of ``[N, G * CPG]``): view, axis, other factors;
    #: the launcher checks divisibility and binds ``CPG = X.shape[1] // G``, the kernel reads the same quotient
    shape_products: dict[str, tuple[str, int, tuple[LaunchExpr, ...]]] = field(default_factory=dict)
    defs: dict[str, Op] = field(default_factory=dict)
    arg_owner: dict[str, tuple[Op, int, int]] = field(default_factory=dict)
    accesses: dict[int, AccessPlan] = field(default_factory=dict)
    contracts: dict[int, ContractPlan] = field(default_factory=dict)
    buffers: dict[str, Op] = field(default_factory=dict)            # buffer value name -> alloc
    buffer_access: dict[int, str] = field(default_factory=dict)     # id(op) -> identity | scalar | workspace
    workspace_allocs: dict[str, Op] = field(default_factory=dict)   # private view name -> alloc
    records: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def static_shape(self, t: Type) -> tuple[int, ...]:
        if isinstance(t, (FragmentType, BufferType)):
            return tuple(int(evaluate(e, self.params)) for e in t.shape)
        return ()


def legalize(module: Module, kernel_name: str, target: "Target | str", params: dict[str, int] | None = None, *,
             verify: bool = True, max_tile_elements: int = MAX_TILE_ELEMENTS,
             max_expansion: int = MAX_EXPANSION_NUMEL) -> KernelPlan:
    """Run the cuTile provider verifier on one kernel; return the plan the serializer prints, or raise one of the
    four :class:`~intent_eqsat.providers.errors.Unsupported` kinds."""
    target = get_target(target)
    try:
        kernel = module.kernel(kernel_name)
    except KeyError:
        raise SharedLegalityUnsupported(f"module has no kernel {kernel_name!r}") from None
    loc = location(kernel)
    if not target.supports_provider("cutile") or not target.cutile_arch:
        raise HardwareCapabilityUnsupported(f"target {target.name} has no cuTile source form", loc)
    declared = {p.name for p in module.params}
    bound = {p.name: int(p.default) for p in module.params}
    for k, v in (params or {}).items():
        if k not in declared:
            raise SharedLegalityUnsupported(f"parameter {k!r} is not declared by the module "
                                            f"(declared: {', '.join(sorted(declared)) or 'none'})", loc)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SharedLegalityUnsupported(f"parameter {k} must be bound to an integer, not {v!r}", loc)
        bound[k] = int(v)
    if verify:
        from intent_eqsat.ir.verify import verify as shared_verify
        one = Module(module.target, module.options, list(module.params), [kernel])
        try:
            shared_verify(one)
        except VerificationError as e:
            raise SharedLegalityUnsupported(f"the shared GPU verifier rejects the kernel: {e.message}",
                                            e.location) from None
    plan = KernelPlan(module, kernel, target, bound)
    _Checker(plan, max_tile_elements, max_expansion).run()
    return plan


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def padding_mode(fill: object, dtype: str) -> str | None:
    """The ct.PaddingMode member whose padding value is exactly ``fill`` in ``dtype`` (None: no such mode)."""
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        return None
    f = float(fill)
    if dtypes.is_float(dtype):
        if math.isnan(f):
            return "NAN"
        if math.isinf(f):
            return "POS_INF" if f > 0 else "NEG_INF"
        if f == 0.0:
            return "NEG_ZERO" if math.copysign(1.0, f) < 0 else "ZERO"
        return None
    return "ZERO" if f == 0 else None


def subst_params(e: LaunchExpr, params: dict[str, int]) -> LaunchExpr:
    """``e`` with bound physical parameters replaced by their values."""
    if isinstance(e, Sym):
        return Const(params[e.name]) if e.name in params else e
    if isinstance(e, BinOp):
        return BinOp(e.op, subst_params(e.lhs, params), subst_params(e.rhs, params))
    if isinstance(e, Not):
        return Not(subst_params(e.operand, params))
    if isinstance(e, Select):
        return Select(subst_params(e.cond, params), subst_params(e.if_true, params), subst_params(e.if_false, params))
    if isinstance(e, Tuple):
        return Tuple(tuple(subst_params(i, params) for i in e.items))
    if isinstance(e, TupleGet):
        return TupleGet(subst_params(e.tuple_expr, params), e.index)
    return e


def _product_factors(e: LaunchExpr) -> list[LaunchExpr] | None:
    """The Sym/Const factors of a pure product, or None."""
    if isinstance(e, (Sym, Const)):
        return [e]
    if isinstance(e, BinOp) and e.op == "*":
        a, b = _product_factors(e.lhs), _product_factors(e.rhs)
        return None if a is None or b is None else a + b
    return None


def param_only(e: LaunchExpr, params: dict[str, int]) -> bool:
    if isinstance(e, Sym):
        return e.name in params
    if isinstance(e, (Dim, Stride)):
        return False
    return all(param_only(c, params) for c in children(e))


class _Checker:
    def __init__(self, plan: KernelPlan, max_tile_elements: int, max_expansion: int):
        self.p = plan
        self.k = plan.kernel
        self.max_tile = max_tile_elements
        self.max_expansion = max_expansion
        self.cost_failure: tuple[str, str] | None = None

    # -- helpers -----------------------------------------------------------------------------------------------
    def loc(self, op: Op | None = None) -> str:
        return location(self.k, op)

    def shared(self, msg: str, op: Op | None = None) -> SharedLegalityUnsupported:
        return SharedLegalityUnsupported(msg, self.loc(op))

    def surface(self, msg: str, op: Op | None = None) -> ProviderSurfaceUnsupported:
        return ProviderSurfaceUnsupported(msg, self.loc(op))

    def hardware(self, msg: str, op: Op | None = None) -> HardwareCapabilityUnsupported:
        return HardwareCapabilityUnsupported(msg, self.loc(op))

    # -- driver ------------------------------------------------------------------------------------------------
    def run(self) -> None:
        p, k = self.p, self.k
        self.views = {a.name: a for a in k.abi if a.is_view}
        for a in k.abi:
            if a.name in p.params:
                raise self.shared(f"ABI argument %{a.name} has the name of a physical parameter")
            if a.is_view:
                continue
            if not isinstance(a.value.type, ScalarType):
                raise self.shared(f"ABI argument %{a.name} is neither a view nor a scalar")
            p.scalars.append(a.name)
        for a in k.abi:
            if not a.is_view:
                continue
            for axis, e in enumerate(a.value.type.shape):
                if isinstance(e, Sym) and e.name not in p.params and e.name not in p.scalars \
                        and e.name not in p.shape_binding and not a.private:
                    p.shape_binding[e.name] = (a.name, axis)
        # a symbol appearing only inside a product extent is bound by division once its co-factors are known (the
        # IR interpreter's and the Triton launcher's rule), e.g. CPG of view<f32, [N, G * CPG]> with G bound by
        # another view
        known = set(p.params) | set(p.scalars) | set(p.shape_binding)
        progress = True
        while progress:
            progress = False
            for a in k.abi:
                if not a.is_view or a.private:
                    continue
                for axis, e in enumerate(a.value.type.shape):
                    factors = _product_factors(e)
                    if factors is None or len(factors) < 2:
                        continue
                    unknown = [f for f in factors if isinstance(f, Sym) and f.name not in known]
                    if len(unknown) != 1:
                        continue
                    name = unknown[0].name
                    p.shape_products[name] = (a.name, axis, tuple(f for f in factors if f is not unknown[0]))
                    p.shape_binding[name] = (a.name, axis)
                    known.add(name)
                    progress = True
        for a in k.abi:
            if a.is_view:
                for e in a.value.type.shape:
                    self.check_le(e, f"the shape of %{a.name}")
                for e in a.strides or ():
                    self.check_le(e, f"the strides of %{a.name}")
                self.check_le(a.offset, f"the offset of %{a.name}")
                if not (isinstance(a.offset, Const) and a.offset.value == 0):
                    raise self.surface(f"view %{a.name} has element offset {a.offset}: a cuTile array has no offset "
                                       f"form (pass the offset view as its own array)")
                self.check_type(a.value.type, None)
            else:
                if a.producer is not None:
                    self.check_le(a.producer, f"the producer of %{a.name}")
                self.check_type(a.value.type, None)
        if not k.space.segments:
            raise self.shared("the program space has no segment")
        for i, seg in enumerate(k.space.segments):
            for e in seg.extents:
                self.check_le(e, f"segment {i}'s extents")
            if seg.group_size is not None:
                self.check_le(seg.group_size, f"segment {i}'s group size")
            if seg.order == "grouped" and (not 1 <= seg.group_axis < len(seg.extents) or seg.group_size is None):
                raise self.shared(f"segment {i}: grouped order needs a group size and a row axis before its group "
                                  f"axis")
        if k.space.launch is not None:
            self.check_le(k.space.launch, "the launched program count")
        p.grid = self.grid_plan()
        for op in walk(k.body):
            for r in op.results:
                p.defs[r.name] = op
            for ri, region in enumerate(op.regions):
                for ai, arg in enumerate(region.args):
                    p.arg_owner[arg.name] = (op, ri, ai)
            if op.name == "record":
                p.records[op.result.name] = tuple(op.attrs["fields"])
            if op.name == "alloc":
                p.buffers[op.result.name] = op
                arg = op.attrs.get("arg")
                if arg is not None:
                    p.workspace_allocs[str(arg)] = op
        for a in k.abi:
            if a.is_view and a.private and a.name not in p.workspace_allocs:
                raise self.surface(f"private view %{a.name} is not named by any workspace alloc: the launcher would "
                                   f"not know its initial contents")
        self.region(k.body)
        if self.cost_failure is not None:
            msg, where = self.cost_failure
            raise CompilationCostUnsupported(msg, where)

    def grid_plan(self) -> GridPlan:
        space = self.k.space
        max_rank = min(CUTILE_GRID_RANK, self.p.target.max_grid_rank)
        if space.launch is not None:
            return GridPlan("linear", (space.grid,), None, "grid-stride traversal: a 1-D grid of the launched count")
        if len(space.segments) > 1:
            return GridPlan("linear", (space.total,), None,
                            f"{len(space.segments)} segments: a 1-D grid with explicit delinearization")
        seg = space.segments[0]
        if seg.order != "row_major":
            return GridPlan("linear", (space.total,), None,
                            f"{seg.order} program order: a 1-D grid with explicit decoding")
        if len(seg.extents) > max_rank:
            return GridPlan("linear", (space.total,), None,
                            f"rank-{len(seg.extents)} segment exceeds the {max_rank}-D grid: flattened to 1-D with "
                            f"explicit row-major delinearization")
        extents = seg.extents if seg.extents else (Const(1),)
        return GridPlan("native", tuple(extents), 0, f"one row-major rank-{len(seg.extents)} segment: ct.bid axes")

    def region(self, region: Region) -> None:
        for a in region.args:
            self.check_type(a.type, None)
        for op in region.ops:
            self.op(op)

    # -- LaunchExprs and types ----------------------------------------------------------------------------------
    def check_le(self, e: LaunchExpr, what: str, op: Op | None = None) -> None:
        p = self.p
        if isinstance(e, Sym):
            if e.name not in p.params and e.name not in p.scalars and e.name not in p.shape_binding:
                raise self.shared(f"{what}: symbol {e.name!r} is not a declared parameter, an ABI scalar, the shape "
                                  f"symbol of a public view axis or the one unknown factor of a public view's product "
                                  f"extent (SPEC IR-3.1)", op)
            return
        if isinstance(e, (Dim, Stride)):
            a = self.views.get(e.view)
            if a is None or not 0 <= e.axis < a.value.type.rank:
                raise self.shared(f"{what}: {e} does not name an axis of a view argument", op)
            return
        for c in children(e):
            self.check_le(c, what, op)

    def static_le(self, e: LaunchExpr) -> int | None:
        if param_only(e, self.p.params):
            v = evaluate(e, self.p.params)
            return None if isinstance(v, tuple) else int(v)
        return None

    def check_type(self, t: Type, op: Op | None) -> None:
        tgt = self.p.target
        if isinstance(t, TupleType):
            for i in t.items:
                self.check_type(i, op)
            return
        if not isinstance(t, (ScalarType, FragmentType, ViewType, BufferType)):
            raise self.shared(f"unknown value type {t}", op)
        if not dtypes.is_dtype(t.dtype):
            raise self.shared(f"unknown element type {t.dtype}", op)
        if not tgt.supports_dtype(t.dtype):
            raise self.hardware(f"element type {t.dtype} is not supported by target {tgt.name}", op)
        if isinstance(t, (ScalarType, ViewType)):
            return
        if isinstance(t, BufferType) and t.scope == "workspace":
            return                                  # lives in memory (a private view), not in a tile
        shape = []
        for e in t.shape:
            v = self.static_le(e)
            if v is None:
                raise self.shared(f"fragment extent {e} of {t} is not a constant once physical parameters are bound "
                                  f"(IR-10 invariant 4)", op)
            shape.append(v)
        for v in shape:
            if not is_pow2(v):
                raise self.surface(f"{t} has extent {v} with the bound parameters {self.p.params}: every cuTile "
                                   f"tile dimension must be a power of two", op)
        numel = math.prod(shape)
        if numel > self.max_tile and self.cost_failure is None:
            self.cost_failure = (f"{t} holds {numel} members, above the compilation-cost bound of {self.max_tile} "
                                 f"members per tile", self.loc(op))

    # -- ops ---------------------------------------------------------------------------------------------------
    def op(self, op: Op) -> None:
        if op.name not in SPECS:
            raise self.shared(f"op {op.name!r} is not part of the shared GPU IR", op)
        if op.name not in SPELLINGS:
            raise self.surface(f"op {op.name!r} has no cuTile spelling", op)
        for r in op.results:
            self.check_type(r.type, op)
        for v in op.operands:
            if isinstance(v.type, ViewType) and v.name not in self.views:
                raise self.shared(f"%{v.name} is a view but not a view argument of the kernel", op)
        handler = getattr(self, "op_" + op.name, None)
        if handler is None:
            cat = SPECS[op.name].category
            handler = {"unary": self.op_unary, "binary": self.op_binary}.get(cat)
        if handler is not None:
            handler(op)
        for r in op.regions:
            self.region(r)

    def op_launch(self, op: Op) -> None:
        e = op.attrs["expr"]
        self.check_le(e, "launch expression", op)
        if isinstance(e, Tuple) or (isinstance(e, TupleGet) and not isinstance(e.tuple_expr, Tuple)):
            raise self.surface(f"launch value {e} is a tuple expression; cuTile values are scalars or tiles", op)

    def op_range(self, op: Op) -> None:
        t = op.result.type
        if not isinstance(t, FragmentType) or t.rank != 1:
            raise self.shared(f"range makes a rank-1 fragment, not {t}", op)

    def op_field(self, op: Op) -> None:
        src = op.operands[0].name
        if src not in self.p.records:
            raise self.surface(f"field {op.attrs['name']!r} of %{src}: the record's field names are not visible "
                               f"(it is not produced by a record op in this kernel)", op)
        if op.attrs["name"] not in self.p.records[src]:
            raise self.shared(f"record %{src} has no field {op.attrs['name']!r}", op)

    def op_unary(self, op: Op) -> None:
        if op.name == "erf":
            raise self.surface("erf: cuTile has no error function and a series expansion would not be the IR's "
                               "correctly rounded value", op)
        if op.name in ("log1p", "expm1"):
            naive = "log(1 + x) rounds 1 + x" if op.name == "log1p" else "exp(x) - 1 cancels"
            raise self.surface(f"{op.name}: cuTile has no {op.name}, and {naive} (not the IR's value for small x)",
                               op)

    def op_binary(self, op: Op) -> None:
        dt = op.operands[0].type.dtype
        if dtypes.is_float(dt) and op.name == "rem":
            raise self.surface(f"rem on {dt}: cuTile spells only the Python (floor) float modulo; the C fmod the IR "
                               f"defines has no exact cuTile form", op)
        if dtypes.is_float(dt) and op.name == "mod":
            raise self.surface(f"mod on {dt}: cuTile's float % (fmod plus a correction in {dt}) differs from NumPy's "
                               f"mod in rounding and in the sign of zero results", op)
        if dtypes.is_float(dt) and op.name == "floordiv":
            raise self.surface(f"floordiv on {dt}: cuTile's float // is floor(a / b) of the rounded quotient, not "
                               f"NumPy's floor_divide", op)
        if op.name == "pow" and not dtypes.is_float(dt):
            raise self.surface(f"pow on {dt}: cuTile has no integer power", op)

    # -- accesses ---------------------------------------------------------------------------------------------
    def _parts(self, op: Op) -> tuple[Value, list[Value], list[Value], Value | None]:
        valid = bool(op.attrs.get("valid", False))
        n_coords, n_payload = access_layout(op.name, len(op.operands), valid)
        coords = op.operands[1:1 + n_coords]
        payload = op.operands[1 + n_coords:1 + n_coords + n_payload]
        return op.operands[0], list(coords), list(payload), (op.operands[-1] if valid else None)

    def access_shape(self, op: Op) -> tuple[int, ...]:
        _, coords, payload, valid = self._parts(op)
        if op.results and isinstance(op.results[0].type, (FragmentType, ScalarType)):
            return self.p.static_shape(op.results[0].type)
        shapes = [self.p.static_shape(v.type) for v in coords + payload + ([valid] if valid is not None else [])]
        try:
            import numpy as np
            return tuple(int(x) for x in np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise self.shared(f"{op.name}: coordinate/payload shapes {shapes} do not broadcast", op) from None

    def plan_access(self, op: Op, resource: str, rtype: Type, allow_tile: bool = True) -> AccessPlan:
        if op.attrs.get("checked"):
            # cuTile's gather/scatter skip out-of-range members but report nothing; the launcher would need a flag
            # read on the caller's stream (issue 25.2: the Triton provider prints it)
            raise self.surface(f"{op.name}: run-time checks of data-dependent subscripts (checked = "
                               f"{list(op.attrs['checked'])}) are not printed by the cuTile provider yet; compile "
                               f"with subscript_checks=false (out-of-range subscripts are then undefined) or use "
                               f"the Triton provider", op)
        _, coords, _payload, valid = self._parts(op)
        shape = self.access_shape(op)
        if len(coords) != len(rtype.shape):
            raise self.shared(f"{op.name} has {len(coords)} coordinates for a rank-{len(rtype.shape)} resource", op)
        fill = op.attrs.get("fill")
        is_read = op.name in ("load", "gather", "atomic_load", "buffer_load")
        tile, reason = None, "tile form not requested"
        if allow_tile:
            tile, reason = self.tile_form(rtype, coords, valid, shape, fill if is_read else None, is_read)
        if tile is not None:
            return AccessPlan("tile", resource, shape, tile)
        return AccessPlan("element", resource, shape, None, reason)

    def op_load(self, op: Op) -> None:
        self.p.accesses[id(op)] = self.plan_access(op, op.operands[0].name, op.operands[0].type)

    op_gather = op_load
    op_store = op_load
    op_scatter = op_load

    def _order(self, op: Op) -> tuple[str, str]:
        order = op.attrs["order"]
        if order not in ORDERS:
            raise self.surface(f"memory order {order}: cuTile atomics have no sequentially consistent order "
                               f"(relaxed/acquire/release/acq_rel)", op)
        return order, op.attrs["domain"]

    def _atomic(self, op: Op, kind: str, dtype: str, domain: str) -> None:
        if dtype not in CUTILE_ATOMIC_DTYPES[kind]:
            raise self.surface(f"cuTile has no atomic {kind} on {dtype} (ct.atomic_{kind} takes "
                               f"{', '.join(d for d in CUTILE_ATOMIC_DTYPES[kind] if d != 'index')})", op)
        scope = TARGET_SCOPES[domain]
        if not self.p.target.supports_atomic(kind, dtype, scope):
            raise self.hardware(f"target {self.p.target.name} has no atomic {kind} on {dtype} at scope {scope}", op)

    def _element(self, op: Op) -> None:
        self.p.accesses[id(op)] = self.plan_access(op, op.operands[0].name, op.operands[0].type, allow_tile=False)

    def op_scatter_reduce(self, op: Op) -> None:
        comb = op.attrs["combine"]
        dt = op.operands[0].type.dtype
        if comb == "mul":
            raise self.surface("scatter_reduce combine=mul: cuTile has no atomic multiply", op)
        if comb in ("max", "min") and dtypes.is_float(dt):
            raise self.surface(f"scatter_reduce combine={comb} on {dt}: cuTile has no float atomic {comb}", op)
        self._atomic(op, comb, dt, "device")
        self._element(op)

    def op_atomic_rmw(self, op: Op) -> None:
        _, domain = self._order(op)
        kind = op.attrs["kind"]
        dt = op.operands[0].type.dtype
        if kind in ("max", "min") and dtypes.is_float(dt):
            raise self.surface(f"atomic {kind} on {dt}: cuTile has no float atomic {kind}", op)
        self._atomic(op, kind, dt, domain)
        self._element(op)

    def op_atomic_cas(self, op: Op) -> None:
        _, domain = self._order(op)
        self._atomic(op, "cas", op.operands[0].type.dtype, domain)
        self._element(op)

    def op_atomic_store(self, op: Op) -> None:
        _, domain = self._order(op)
        self._atomic(op, "xchg", op.operands[0].type.dtype, domain)
        self._element(op)

    def op_atomic_load(self, op: Op) -> None:
        order, _ = self._order(op)
        if order not in ("relaxed", "acquire"):
            raise self.surface(f"atomic_load with order {order}: a cuTile load takes only relaxed or acquire", op)
        plan = self.plan_access(op, op.operands[0].name, op.operands[0].type)
        if plan.form != "tile":
            raise self.surface(f"atomic_load at element coordinates: cuTile's ordered loads are tile-space only "
                               f"({plan.reason})", op)
        self.p.accesses[id(op)] = plan

    def op_alloc(self, op: Op) -> None:
        t = op.result.type
        if not isinstance(t, BufferType):
            raise self.shared(f"alloc makes a buffer, not {t}", op)
        if t.scope == "workspace":
            arg = op.attrs.get("arg")
            a = self.views.get(str(arg)) if arg is not None else None
            if a is None or not a.private:
                raise self.surface("a workspace buffer needs its private view ABI argument (the launcher allocates "
                                   "it); none is named", op)
            if a.value.type.dtype != t.dtype or len(a.value.type.shape) != len(t.shape):
                raise self.shared(f"workspace buffer {t} does not match its private view {a.value.type}", op)
        init = op.attrs["init"]
        if init != "first_write" and (isinstance(init, bool) or not isinstance(init, (int, float))):
            raise self.shared(f"alloc init {init!r} is neither a number nor first_write", op)

    def _buffer_access(self, op: Op) -> None:
        buf = op.operands[0]
        alloc = self.p.buffers.get(buf.name)
        if alloc is None:
            raise self.surface(f"%{buf.name} is not produced by an alloc of this kernel: a cuTile tile buffer must "
                               f"be visible where it is updated", op)
        t = alloc.result.type
        if t.scope == "workspace":
            self.p.buffer_access[id(op)] = "workspace"
            self.p.accesses[id(op)] = self.plan_access(op, str(alloc.attrs["arg"]), t)
            return
        _, coords, _, _ = self._parts(op)
        shape = self.p.static_shape(t)
        if all(isinstance(c.type, ScalarType) for c in coords):
            self.p.buffer_access[id(op)] = "scalar"
            return
        if all(self._identity_coord(c, i, shape) for i, c in enumerate(coords)):
            self.p.buffer_access[id(op)] = "identity"
            return
        raise self.surface(f"{op.name} on a {t.scope}-scope buffer with coordinates that are neither all scalars nor "
                           f"the identity ranges of the buffer: a cuTile tile has no dynamic gather/scatter form", op)

    def _identity_coord(self, c: Value, axis: int, shape: tuple[int, ...]) -> bool:
        if not isinstance(c.type, FragmentType) or self.p.static_shape(c.type) != shape:
            return False
        d = self.p.defs.get(c.name)
        if d is not None and d.name == "range" and len(shape) == 1:
            return int(d.attrs.get("start", 0)) == 0
        if d is None or d.name != "broadcast" or tuple(d.attrs["dims"]) != (axis,):
            return False
        src = d.operands[0]
        r = self.p.defs.get(src.name)
        return r is not None and r.name == "range" and int(r.attrs.get("start", 0)) == 0 and \
            self.p.static_shape(src.type) == (shape[axis],)

    op_buffer_load = _buffer_access
    op_buffer_store = _buffer_access

    # -- structured ------------------------------------------------------------------------------------------
    def op_reduce(self, op: Op) -> None:
        comb = op.attrs["combine"]
        for v in op.operands:
            dt = v.type.dtype
            if comb in ("and", "or", "xor") and dtypes.is_float(dt):
                raise self.shared(f"{op.name} combine={comb} is undefined on {dt}", op)
            if comb in ("add", "mul") and dt == "i1":
                raise self.shared(f"{op.name} combine={comb} is undefined on i1", op)
        if comb == "region":
            self._combiner(op)
        elif len(op.operands) != 1:
            raise self.shared(f"{op.name} with a built-in combiner takes one operand, not {len(op.operands)}", op)

    def op_scan(self, op: Op) -> None:
        if op.attrs["combine"] == "region":
            raise self.surface("scan with a region combiner: ct.scan does not specify which combiner operand is the "
                               "earlier prefix, and an IR scan combiner is only associative (not commutative)", op)
        self.op_reduce(op)

    def _combiner(self, op: Op) -> None:
        if len(op.regions) != 1:
            raise self.shared(f"{op.name} combine=region needs one combiner region", op)
        region = op.regions[0]
        defined = {a.name for a in region.args}
        for inner in walk(region):
            if inner.regions or SPECS[inner.name].category not in ("unary", "binary", "compare", "select", "cast",
                                                                    "const", "terminator"):
                raise self.surface(f"combiner region op {inner.name}: a ct.reduce combiner holds only elementwise "
                                   f"scalar ops", inner)
            for v in inner.operands:
                if v.name not in defined and not isinstance(v.type, ScalarType):
                    raise self.surface(f"combiner region captures the non-scalar %{v.name}: a ct.reduce combiner "
                                       f"combines 0-d tiles", inner)
            for r in inner.results:
                defined.add(r.name)

    def op_argreduce(self, op: Op) -> None:
        if op.attrs.get("tie", "lowest") != "lowest":
            raise self.shared(f"unknown tie rule {op.attrs.get('tie')!r}", op)
        if not dtypes.is_int(op.results[1].type.dtype):
            raise self.shared(f"argreduce index result must be an integer, not {op.results[1].type}", op)

    def op_histogram(self, op: Op) -> None:
        dt = op.operands[0].type.dtype
        if not dtypes.is_int(dt):
            raise self.shared(f"histogram of {dt} values: values must be integers", op)
        t = op.result.type
        if not isinstance(t, FragmentType) or t.rank != 1:
            raise self.shared(f"histogram result must be a rank-1 fragment, not {t}", op)
        n = math.prod(self.p.static_shape(op.operands[0].type)) if isinstance(op.operands[0].type, FragmentType) \
            else 1
        bins = self.p.static_shape(t)[0]
        if n * bins > self.max_expansion:
            raise self.surface(f"histogram of {n} values into {bins} bins: cuTile has no histogram primitive and the "
                               f"compare-and-count form would materialize {n * bins} members (bound "
                               f"{self.max_expansion})", op)

    def op_scaled_contract(self, op: Op) -> None:
        raise self.surface("scaled_contract: ct.mma_scaled takes microscaling formats (e8m0 scales, e2m1/e4m3/e5m2 "
                           "operands) that the IR's dtypes cannot express faithfully", op)

    def op_contract(self, op: Op) -> None:
        lhs, rhs, acc = op.operands
        lc, rc = tuple(op.attrs["lhs_contract"]), tuple(op.attrs["rhs_contract"])
        lb, rb = tuple(op.attrs.get("lhs_batch", ())), tuple(op.attrs.get("rhs_batch", ()))
        prec = op.attrs.get("precision", "ieee")
        ls, rs = self.p.static_shape(lhs.type), self.p.static_shape(rhs.type)
        acc_dt = acc.type.dtype
        if dtypes.is_float(acc_dt):
            work = "f64" if acc_dt == "f64" else "f32"
        elif dtypes.is_int(acc_dt):
            work = acc_dt
        else:
            raise self.shared(f"contract accumulator type {acc_dt} is not a number type", op)
        if len(lc) != len(rc) or len(lb) != len(rb):
            raise self.shared("contract pairs a different number of lhs and rhs axes", op)
        lf = tuple(i for i in range(len(ls)) if i not in lc + lb)
        rf = tuple(i for i in range(len(rs)) if i not in rc + rb)
        bt = math.prod(ls[i] for i in lb)
        mt = math.prod(ls[i] for i in lf)
        kt = math.prod(ls[i] for i in lc)
        nt = math.prod(rs[i] for i in rf)
        lperm, rperm = lb + lf + lc, rb + rc + rf
        ld, rd = lhs.type.dtype, rhs.type.dtype
        tgt = self.p.target
        if prec == "bf16x3":
            raise self.surface("contract precision=bf16x3 has no ct.mma spelling here (compile with "
                               "fp32_contract=ieee or tf32)", op)
        if prec == "tf32" and work == "f32" and ld == "f32" and rd == "f32":
            if not tgt.supports_contract("f32", "f32", "tf32"):
                raise self.hardware(f"target {tgt.name}'s matrix unit has no tf32 form", op)
            self.p.contracts[id(op)] = ContractPlan("mma", lperm, rperm, bool(lb), (bt, mt, kt, nt), work, "tf32")
            return
        if ld == rd and MMA_FORMS.get(ld) == work:
            feed = ld
        elif dtypes.is_float(work) and MMA_FORMS.get(work) == work:
            feed = work                             # operands converted to the computation dtype (exact per IR)
        else:
            feed = ""
        if feed:
            if not tgt.supports_contract(feed, work, "ieee"):
                raise self.hardware(f"target {tgt.name}'s matrix unit has no {feed} x {feed} -> {work} form", op)
            self.p.contracts[id(op)] = ContractPlan("mma", lperm, rperm, bool(lb), (bt, mt, kt, nt), work, feed)
            return
        total = bt * mt * kt * nt
        if total > self.max_expansion:
            raise self.surface(f"contract {lhs.type} x {rhs.type} -> {acc.type} has no ct.mma form (operands {ld}/"
                               f"{rd}, computation in {work}) and its exact expansion would materialize {total} "
                               f"products (bound {self.max_expansion})", op)
        self.p.contracts[id(op)] = ContractPlan("expand", lperm, rperm, bool(lb), (bt, mt, kt, nt), work, "")

    def op_execution_group(self, op: Op) -> None:
        seg = int(op.attrs["segment"])
        if not 0 <= seg < len(self.k.space.segments):
            raise self.shared(f"execution_group names segment {seg}; the space has {len(self.k.space.segments)}", op)
        if len(op.regions[0].args) != len(self.k.space.segments[seg].extents):
            raise self.shared(f"execution_group of segment {seg} decodes {len(op.regions[0].args)} coordinates for "
                              f"a rank-{len(self.k.space.segments[seg].extents)} segment", op)

    # -- tile-space recognition (see the module docstring for the exact conditions) ---------------------------
    def static_value(self, v: Value) -> int | None:
        """The static integer value of an SSA scalar (a const, or a launch of parameters only)."""
        d = self.p.defs.get(v.name)
        if d is None or not isinstance(v.type, ScalarType):
            return None
        if d.name == "const":
            val = d.attrs["value"]
            if isinstance(val, bool) or not isinstance(val, (int, float)) or float(val) != int(val):
                return None
            return int(val)
        if d.name == "launch":
            return self.static_le(d.attrs["expr"])
        return None

    def le_of(self, v: Value) -> LaunchExpr | None:
        """The LaunchExpr an SSA scalar (or its scalar broadcast, or a fragment-typed launch) holds."""
        d = self.p.defs.get(v.name)
        if d is None:
            return None
        if d.name == "launch":
            return d.attrs["expr"]
        if d.name == "broadcast" and tuple(d.attrs["dims"]) == () and isinstance(d.operands[0].type, ScalarType):
            return self.le_of(d.operands[0])
        s = self.static_value(v) if isinstance(v.type, ScalarType) else None
        return Const(s) if s is not None else None

    def same_le(self, a: LaunchExpr, b: LaunchExpr) -> bool:
        pa, pb = subst_params(a, self.p.params), subst_params(b, self.p.params)
        return pa == pb or equivalent(pa, pb)

    def loop_of(self, v: Value) -> Op | None:
        """The for / region_fold / region_scan whose induction variable (or segment) ``v`` is."""
        owner = self.p.arg_owner.get(v.name)
        if owner is None:
            return None
        op, ri, ai = owner
        if ai != 0:
            return None
        if op.name == "for" or (op.name == "region_fold" and ri == 0) or (op.name == "region_scan" and ri in (0, 2)):
            return op
        return None

    def group_extent(self, v: Value) -> LaunchExpr | None:
        """The segment extent of the execution-group coordinate ``v``."""
        owner = self.p.arg_owner.get(v.name)
        if owner is None or owner[0].name != "execution_group":
            return None
        op, _, ai = owner
        return self.k.space.segments[int(op.attrs["segment"])].extents[ai]

    def _scalar_source(self, c: Value) -> Value | None:
        if isinstance(c.type, ScalarType):
            return c
        d = self.p.defs.get(c.name)
        if d is not None and d.name == "broadcast" and tuple(d.attrs["dims"]) == () and \
                isinstance(d.operands[0].type, ScalarType):
            return d.operands[0]
        return None

    def _base(self, c: Value, shape: tuple[int, ...]) -> tuple[Value, int] | None:
        """(rank-1 base value, fragment axis) of a tiled coordinate."""
        if not isinstance(c.type, FragmentType):
            return None
        d = self.p.defs.get(c.name)
        if d is not None and d.name == "broadcast" and len(d.attrs["dims"]) == 1:
            src = d.operands[0]
            k = int(d.attrs["dims"][0])
            if isinstance(src.type, FragmentType) and src.type.rank == 1 and \
                    self.p.static_shape(src.type) == (shape[k],):
                return src, k
            return None
        if c.type.rank == 1 and len(shape) == 1 and self.p.static_shape(c.type) == shape:
            return c, 0
        return None

    def _block(self, base: Value, b: int) -> tuple[IndexTerm, tuple] | None:
        """(tile index, start descriptor) of ``base = start + range(b)``; the descriptor feeds the bounds proof."""
        d = self.p.defs.get(base.name)
        if d is None:
            return None
        if d.name == "range":
            s0 = int(d.attrs.get("start", 0))
            return (IndexTerm("const", const=s0 // b), ("const", s0)) if s0 % b == 0 and s0 >= 0 else None
        if d.name != "add":
            return None
        x, y = d.operands
        for rng, other in ((x, y), (y, x)):
            rd = self.p.defs.get(rng.name)
            if rd is None or rd.name != "range" or int(rd.attrs.get("start", 0)) != 0:
                continue
            start = self._scalar_source(other)
            if start is None:
                continue
            return self._start(start, b)
        return None

    def _start(self, s: Value, b: int) -> tuple[IndexTerm, tuple] | None:
        sv = self.static_value(s)
        if sv is not None:
            return (IndexTerm("const", const=sv // b), ("const", sv)) if sv % b == 0 and sv >= 0 else None
        d = self.p.defs.get(s.name)
        if d is not None and d.name == "mul":
            for q, f in ((d.operands[0], d.operands[1]), (d.operands[1], d.operands[0])):
                if isinstance(q.type, ScalarType) and self.static_value(f) == b:
                    return IndexTerm("value", value=q.name), ("mul", q)
        loop = self.loop_of(s)
        if loop is not None:
            lb, step = self.static_value(loop.operands[0]), self.static_value(loop.operands[2])
            if lb is not None and step is not None and lb >= 0 and lb % b == 0 and step % b == 0 and step > 0:
                return IndexTerm("div", value=s.name, divisor=b), ("iv", s)
        return None

    def _below(self, desc: tuple, extent: LaunchExpr, b: int) -> bool:
        """Proof that the tile start on this axis is below ``extent`` (non-empty intersection)."""
        kind = desc[0]
        if kind == "const":
            ev = self.static_le(extent)
            return ev is not None and desc[1] < ev
        if kind == "mul":
            q = desc[1]
            ext = self.group_extent(q)
            if ext is not None:
                return self.same_le(ext, BinOp("ceil_div", extent, Const(b)))
            loop = self.loop_of(q)
            if loop is not None and loop.name == "for":
                lb, ub = self.static_value(loop.operands[0]), self.le_of(loop.operands[1])
                return lb is not None and lb >= 0 and ub is not None and \
                    self.same_le(ub, BinOp("ceil_div", extent, Const(b)))
            return False
        if kind in ("iv", "scalar"):
            s = desc[1]
            if kind == "scalar":
                sv = self.static_value(s)
                if sv is not None:
                    ev = self.static_le(extent)
                    return ev is not None and 0 <= sv < ev
                ext = self.group_extent(s)
                if ext is not None:
                    return self.same_le(ext, extent)
            loop = self.loop_of(s)
            if loop is None:
                return False
            lb, ub = self.static_value(loop.operands[0]), self.le_of(loop.operands[1])
            return lb is not None and lb >= 0 and ub is not None and self.same_le(ub, extent)
        return False

    def _inside(self, desc: tuple, extent: LaunchExpr, b: int) -> bool:
        """Proof that the whole tile lies inside the view on this axis (no bounds term needed)."""
        if desc[0] == "const":
            ev = self.static_le(extent)
            return ev is not None and desc[1] + b <= ev
        return False

    def _conjuncts(self, v: Value, out: list[Value]) -> None:
        d = self.p.defs.get(v.name)
        if d is not None and d.name == "and" and v.type.dtype == "i1":
            for o in d.operands:
                self._conjuncts(o, out)
        else:
            out.append(v)

    def _canon(self, c: Value, shape: tuple[int, ...]) -> tuple:
        s = self._scalar_source(c)
        if s is not None:
            return ("s", s.name)
        b = self._base(c, shape)
        if b is not None:
            return ("b", b[0].name, b[1])
        return ("v", c.name)

    def _term(self, w: Value, shape: tuple[int, ...]) -> tuple | None:
        """A validity conjunct as ("lt", canonical coordinate, extent LaunchExpr) or ("nonneg", coordinate)."""
        d = self.p.defs.get(w.name)
        if d is None:
            return None
        if d.name == "broadcast":
            src = d.operands[0]
            dims = tuple(d.attrs["dims"])
            if dims == () and isinstance(src.type, ScalarType):
                return self._term(src, ())
            if len(dims) == 1 and isinstance(src.type, FragmentType) and src.type.rank == 1:
                t = self._term(src, self.p.static_shape(src.type))
                if t is None:
                    return None
                if t[1][0] == "s":
                    return t
                if t[1][0] == "b" and t[1][2] == 0:
                    return (t[0], ("b", t[1][1], dims[0])) + t[2:]
            return None
        if d.name != "cmp":
            return None
        pred = d.attrs["pred"]
        x, y = d.operands
        if pred == "gt":
            x, y, pred = y, x, "lt"
        if pred == "lt":
            e = self.le_of(y)
            return None if e is None else ("lt", self._canon(x, shape), e)
        if pred == "ge":
            e = self.le_of(y)
            if e is not None and self.static_le(e) == 0:
                return ("nonneg", self._canon(x, shape))
        return None

    def tile_form(self, rtype: Type, coords: list[Value], valid: Value | None, shape: tuple[int, ...],
                  fill: object, is_read: bool) -> tuple[TileForm | None, str]:
        extents = rtype.shape
        index, tshape, faxes, descs, canons = [], [], [], [], []
        for j, c in enumerate(coords):
            s = self._scalar_source(c)
            if s is not None:
                index.append(IndexTerm("value", value=s.name))
                tshape.append(1)
                faxes.append(None)
                descs.append(("scalar", s))
                canons.append(("s", s.name))
                continue
            base = self._base(c, shape)
            if base is None:
                return None, f"coordinate {j} (%{c.name}) is neither a scalar nor a broadcast rank-1 block"
            bv, k = base
            b = shape[k]
            blk = self._block(bv, b)
            if blk is None:
                return None, f"coordinate {j} (%{c.name}) is not block_start + range({b}) with a provable tile index"
            index.append(blk[0])
            tshape.append(b)
            faxes.append(k)
            descs.append(blk[1])
            canons.append(("b", bv.name, k))
        tiled = [k for k in faxes if k is not None]
        if sorted(tiled) != list(range(len(shape))):
            return None, "the fragment axes are not covered one-to-one by tiled view axes (a broadcast access)"
        padding = None
        if valid is not None:
            if is_read:
                padding = padding_mode(fill, rtype.dtype)
                if padding is None:
                    return None, f"fill {fill!r} is not one of cuTile's padding modes"
            conj: list[Value] = []
            self._conjuncts(valid, conj)
            bounded = set()
            for w in conj:
                t = self._term(w, shape)
                if t is None:
                    return None, f"validity term %{w.name} is not a bound of the view"
                if t[0] == "nonneg":
                    if t[1] not in canons:
                        return None, f"validity term %{w.name} is not a bound of the view"
                    continue
                matched = [j for j, cn in enumerate(canons) if cn == t[1] and self.same_le(t[2], extents[j])]
                if not matched:
                    return None, f"validity term %{w.name} is not exactly the extent of the view axis it tests"
                bounded.update(matched)
            for j in range(len(coords)):
                if faxes[j] is not None and j not in bounded and not self._inside(descs[j], extents[j], tshape[j]):
                    return None, f"view axis {j} has no bounds term and is not provably inside the view"
                if not self._below(descs[j], extents[j], tshape[j]):
                    return None, (f"the tile on view axis {j} is not provably non-empty (cuTile leaves a tile "
                                  f"entirely outside the array undefined)")
        order = sorted(range(len(tiled)), key=lambda p: tiled[p])
        perm = tuple(order) if order != list(range(len(tiled))) else None
        return TileForm(tuple(index), tuple(tshape), tuple(faxes), perm, padding), ""


__all__ = ["legalize", "KernelPlan", "AccessPlan", "TileForm", "IndexTerm", "GridPlan", "ContractPlan",
           "MAX_TILE_ELEMENTS", "MAX_EXPANSION_NUMEL", "ORDERS", "SCOPES", "CUTILE_ATOMIC_DTYPES", "MMA_FORMS",
           "is_pow2", "padding_mode", "subst_params", "param_only"]
