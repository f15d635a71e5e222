"""Triton legalization and provider verifier (SPEC TGT-6, TGT-7, PASS-5).

:func:`legalize` checks one kernel of a (shared-verified) GPU IR module against the Triton surface and a target's
capabilities *before* anything is printed, and records the few surface decisions the serializer then prints
mechanically (which contracts are ``tl.dot`` and which are the exact expansion, which buffer accesses are
functional updates). It never re-reads KIR and never rebuilds ownership, ranges, coordinates or validity: those
are already explicit in the program (TGT-7).

Checks, in TGT-9 order (the first failure is raised):

* shared legality -- declared parameters only; every LaunchExpr symbol resolves to a parameter, an ABI scalar or
  a view shape symbol; fragment extents are constants once parameters are bound (IR-10 invariant 4);
* provider surface -- every op has a spelling (:mod:`spellings`); fragment extents are powers of two and at most
  2**20 members; the op-specific conditions of the spelling table;
* hardware capability -- dtypes, atomics and matrix-unit forms queried from the :class:`Target`;
* compilation cost -- no fragment holds more than ``max_elements_per_thread`` members per thread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Module, Op, Region, Value, location, walk
from intent_eqsat.ir.index_bounds import index_bounds
from intent_eqsat.ir.launch import BinOp, Const, Dim, LaunchExpr, Stride, Sym, Tuple, TupleGet, children, evaluate
from intent_eqsat.ir.spec import SPECS, WRITE_ACCESSES, access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType
from intent_eqsat.providers.errors import (CompilationCostUnsupported, HardwareCapabilityUnsupported,
                                           ProviderSurfaceUnsupported, SharedLegalityUnsupported)
from intent_eqsat.providers.targets import Target, get_target
from intent_eqsat.providers.launch_resources import LaunchResources
from intent_eqsat.providers.triton.spellings import SPELLINGS

#: Triton's TRITON_MAX_TENSOR_NUMEL
MAX_NUMEL = 1 << 20
#: default compilation-cost bound: fragment members per thread (Triton unrolls every member into straight-line code)
MAX_ELEMENTS_PER_THREAD = 2048
#: the largest broadcast product the exact contract expansion may materialize
MAX_EXPANSION_NUMEL = 1 << 15
#: Triton's minimum K of tl.dot by operand bit width (triton/backends/*/compiler.py min_dot_size)
_MIN_DOT_K = {"cuda": {8: 32, 16: 16, 32: 16}, "hip": {8: 1, 16: 1, 32: 1}}
#: dot input precisions the Triton backend accepts (CUDAOptions / HIPOptions.allowed_dot_input_precisions)
_DOT_PRECISIONS = {"cuda": ("ieee", "tf32", "bf16x3"), "hip": ("ieee",)}
#: operand dtype -> accumulator dtype tl.dot computes in
_DOT_FORMS = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}
#: memory order -> Triton sem
SEMS = {"relaxed": "relaxed", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
#: sharing domain -> Triton scope
SCOPES = {"program": "cta", "device": "gpu", "system": "sys"}
#: Triton atomics by element dtype (tl.atomic_* accepted types)
_TRITON_ATOMIC_DTYPES = {
    "add": ("i32", "u32", "i64", "u64", "index", "f16", "bf16", "f32", "f64"),
    "max": ("i32", "u32", "i64", "u64", "index"), "min": ("i32", "u32", "i64", "u64", "index"),
    "and": ("i32", "u32", "i64", "u64", "index"), "or": ("i32", "u32", "i64", "u64", "index"),
    "xor": ("i32", "u32", "i64", "u64", "index"),
    "xchg": ("i32", "u32", "i64", "u64", "index", "f32", "f64"),
    "cas": ("i16", "u16", "f16", "bf16", "i32", "u32", "i64", "u64", "index", "f32", "f64"),
}


@dataclass
class ContractPlan:
    """How one contract is spelled: ``dot`` (with operand permutations) or the exact ``expand``sion."""

    form: str                                   # "dot" | "expand"
    lhs_perm: tuple[int, ...]
    rhs_perm: tuple[int, ...]
    batch: int                                  # number of batch axes
    work: str                                   # accumulator computation dtype
    operand: str                                # operand dtype fed to tl.dot ("" for expand)
    sizes: tuple[int, int, int, int] = (1, 1, 1, 1)   # Bt, Mt, Kt, Nt (expand)


#: launch options of a program whose space binds no resources (Triton's own defaults)
DEFAULT_WARPS = 4
DEFAULT_STAGES = 3


@dataclass
class KernelPlan:
    """Everything the serializer needs beyond the program itself, all derived from the current GPU IR."""

    module: Module
    kernel: Kernel
    target: Target
    params: dict[str, int]
    num_warps: int
    num_stages: int
    scalars: list[str] = field(default_factory=list)
    shape_syms: list[str] = field(default_factory=list)
    shape_binding: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: symbols that only appear inside a product extent (``CPG`` of ``[N, CPG * G]``): view, axis, other factors
    shape_products: dict[str, tuple[str, int, tuple[LaunchExpr, ...]]] = field(default_factory=dict)
    defs: dict[str, Op] = field(default_factory=dict)
    contracts: dict[int, ContractPlan] = field(default_factory=dict)
    buffer_access: dict[int, str] = field(default_factory=dict)     # id(op) -> identity | scalar | workspace
    buffers: dict[str, Op] = field(default_factory=dict)            # buffer value name -> alloc
    workspace_allocs: dict[str, Op] = field(default_factory=dict)   # private view name -> alloc
    records: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the launch permits 32-bit index arithmetic (``LaunchResources.index_bits`` 32) and these LaunchExprs bound
    #: every index value (:func:`intent_eqsat.ir.index_bounds.index_bounds`): the launcher picks 32 bits when all are
    #: below 2**31. None: 64-bit index arithmetic at every launch.
    index_bounds: list[LaunchExpr] | None = None

    @property
    def backend(self) -> str:
        return self.target.triton_backend

    def static_shape(self, t: Type) -> tuple[int, ...]:
        if isinstance(t, (FragmentType, BufferType)):
            return tuple(int(evaluate(e, self.params)) for e in t.shape)
        return ()


def legalize(module: Module, kernel_name: str, target: "Target | str", params: dict[str, int] | None = None, *,
             launch_resources: LaunchResources | None = None, num_warps: int | None = None,
             num_stages: int | None = None,
             max_elements_per_thread: int = MAX_ELEMENTS_PER_THREAD) -> KernelPlan:
    """Run the Triton provider verifier on one kernel; return the plan the serializer prints, or raise one of the
    four :class:`~intent_eqsat.providers.errors.Unsupported` kinds.

    ``launch_resources`` holds the kernel's launch resources chosen beside the program (issue 22 item 3):
    ``num_warps`` / ``num_stages`` default to its ``threads`` over the target's warp size and its ``stages``, else to
    :data:`DEFAULT_WARPS` / :data:`DEFAULT_STAGES`; its ``index_bits`` 32 lets the launcher pick 32-bit index
    arithmetic where the bounds prove it exact (None or 64: 64 bits)."""
    target = get_target(target)
    try:
        kernel = module.kernel(kernel_name)
    except KeyError:
        raise SharedLegalityUnsupported(f"module has no kernel {kernel_name!r}") from None
    loc = location(kernel)
    if not target.supports_provider("triton"):
        raise HardwareCapabilityUnsupported(f"target {target.name} has no Triton source form", loc)
    launch = launch_resources or LaunchResources()
    if num_warps is None:
        threads = launch.threads
        if threads is not None and threads % target.warp_size:
            raise HardwareCapabilityUnsupported(
                f"the program's {threads} threads are not a whole number of {target.warp_size}-lane warps on "
                f"{target.name}", loc)
        num_warps = threads // target.warp_size if threads is not None else DEFAULT_WARPS
    if num_stages is None:
        num_stages = launch.stages if launch.stages is not None else DEFAULT_STAGES
    if num_stages <= 0:
        raise SharedLegalityUnsupported(f"num_stages={num_stages}: must be positive", loc)
    if num_warps <= 0 or num_warps & (num_warps - 1) or num_warps > target.max_warps_per_block:
        raise HardwareCapabilityUnsupported(
            f"num_warps={num_warps}: must be a power of two <= {target.max_warps_per_block} on {target.name}", loc)
    declared = {p.name: p for p in module.params}
    bound = {p.name: int(p.default) for p in module.params}
    for k, v in (params or {}).items():
        if k not in declared:
            raise SharedLegalityUnsupported(f"parameter {k!r} is not declared by the module "
                                            f"(declared: {', '.join(declared) or 'none'})", loc)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SharedLegalityUnsupported(f"parameter {k} must be bound to an integer, not {v!r}", loc)
        bound[k] = int(v)
    plan = KernelPlan(module, kernel, target, bound, num_warps, num_stages)
    _Checker(plan, max_elements_per_thread).run()
    if launch.index_bits == 32:
        plan.index_bounds = index_bounds(kernel, declared)
    return plan


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class _Checker:
    def __init__(self, plan: KernelPlan, max_elements_per_thread: int):
        self.p = plan
        self.k = plan.kernel
        self.max_ept = max_elements_per_thread
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
        views = {a.name: a for a in k.abi if a.is_view}
        self.views = views
        for a in k.abi:
            if a.is_view:
                continue
            if not isinstance(a.value.type, ScalarType):
                raise self.shared(f"ABI argument %{a.name} is neither a view nor a scalar")
            if a.value.type.dtype == "f64":
                raise self.surface(f"f64 by-value scalar %{a.name}: Triton passes Python floats as fp32")
            p.scalars.append(a.name)
            if a.name in p.params:
                raise self.shared(f"ABI scalar %{a.name} has the name of a physical parameter")
        for a in k.abi:
            if not a.is_view:
                continue
            for axis, e in enumerate(a.value.type.shape):
                if isinstance(e, Sym) and e.name not in p.params and e.name not in p.scalars \
                        and e.name not in p.shape_binding:
                    p.shape_binding[e.name] = (a.name, axis)
                    p.shape_syms.append(e.name)
        # a symbol appearing only inside a product extent is bound by division once its co-factors are known
        # (the IR interpreter's rule), e.g. CPG of view<f32, [N, CPG * G]> with G bound by another view
        known = set(p.params) | set(p.scalars) | set(p.shape_binding)
        progress = True
        while progress:
            progress = False
            for a in k.abi:
                if not a.is_view:
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
                    p.shape_syms.append(name)
                    known.add(name)
                    progress = True
        # every LaunchExpr of the kernel's interface resolves
        for a in k.abi:
            if a.is_view:
                for e in a.value.type.shape:
                    self.check_le(e, f"the shape of %{a.name}")
                for e in a.strides or ():
                    self.check_le(e, f"the strides of %{a.name}")
                self.check_le(a.offset, f"the offset of %{a.name}")
            elif a.producer is not None:
                self.check_le(a.producer, f"the producer of %{a.name}")
        if not k.space.segments:
            raise self.shared("the program space has no segment")
        for i, seg in enumerate(k.space.segments):
            for e in seg.extents:
                self.check_le(e, f"segment {i}'s extents")
            if seg.group_size is not None:
                self.check_le(seg.group_size, f"segment {i}'s group size")
            if seg.order == "grouped" and (not 1 <= seg.group_axis < len(seg.extents) or seg.group_size is None):
                raise self.surface(f"segment {i}: grouped order needs a group size and a row axis before its group "
                                  f"axis")
        if k.space.launch is not None:
            self.check_le(k.space.launch, "the launched program count")
        for arg in k.body.args:
            self.check_type(arg.type, None)
        # def map, records, buffers (for the access-pattern decisions)
        for op in walk(k.body):
            for r in op.results:
                p.defs[r.name] = op
            if op.name == "record":
                p.records[op.result.name] = tuple(op.attrs["fields"])
            if op.name == "alloc":
                p.buffers[op.result.name] = op
                arg = op.attrs.get("arg")
                if arg is not None:
                    p.workspace_allocs[str(arg)] = op
        self.region(k.body)
        if self.cost_failure is not None:
            msg, where = self.cost_failure
            raise CompilationCostUnsupported(msg, where)

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
                raise self.shared(f"{what}: symbol {e.name!r} is not a declared parameter, an ABI scalar or a view "
                                  f"shape symbol (SPEC IR-3.1)", op)
            return
        if isinstance(e, (Dim, Stride)):
            a = self.views.get(e.view)
            if a is None or not 0 <= e.axis < a.value.type.rank:
                raise self.shared(f"{what}: {e} does not name an axis of a view argument", op)
            return
        for c in children(e):
            self.check_le(c, what, op)

    def static(self, e: LaunchExpr) -> int | None:
        if _param_only(e, self.p.params):
            v = evaluate(e, self.p.params)
            return None if isinstance(v, tuple) else int(v)
        return None

    def check_type(self, t: Type, op: Op | None) -> None:
        if isinstance(t, TupleType):
            for i in t.items:
                self.check_type(i, op)
            return
        if isinstance(t, ViewType):
            if not self.p.target.supports_dtype(t.dtype):
                raise self.hardware(f"element type {t.dtype} is not supported by {self.p.target.name}", op)
            return
        if not isinstance(t, (ScalarType, FragmentType, BufferType)):
            raise self.shared(f"unknown value type {t}", op)
        if not dtypes.is_dtype(t.dtype):
            raise self.shared(f"unknown element type {t.dtype}", op)
        if isinstance(t, ScalarType):
            if not self.p.target.supports_dtype(t.dtype):
                raise self.hardware(f"element type {t.dtype} is not supported by {self.p.target.name}", op)
            return
        if isinstance(t, BufferType) and t.scope == "workspace":
            return                                  # lives in memory (a private view), not in a fragment
        shape = []
        for e in t.shape:
            v = self.static(e)
            if v is None:
                raise self.shared(f"fragment extent {e} of {t} is not a constant once physical parameters are bound "
                                  f"(IR-10 invariant 4)", op)
            shape.append(v)
        for v in shape:
            if not is_pow2(v):
                raise self.surface(f"fragment {t} has extent {v} with the bound parameters; Triton blocks need "
                                   f"power-of-two extents (bound: {self.p.params})", op)
        numel = math.prod(shape)
        if numel > MAX_NUMEL:
            raise self.surface(f"fragment {t} has {numel} members; Triton's limit is {MAX_NUMEL}", op)
        if not self.p.target.supports_dtype(t.dtype):
            raise self.hardware(f"element type {t.dtype} is not supported by {self.p.target.name}", op)
        self.cost(numel, f"fragment {t} ({numel} members)", op)

    def cost(self, numel: int, what: str, op: Op | None) -> None:
        threads = self.p.num_warps * self.p.target.warp_size
        per_thread = -(-numel // threads)
        if per_thread > self.max_ept and self.cost_failure is None:
            self.cost_failure = (f"{what} is {per_thread} members per thread with {self.p.num_warps} warps, above "
                                 f"the compilation-cost bound of {self.max_ept} (Triton unrolls every member)",
                                 self.loc(op))

    # -- ops ---------------------------------------------------------------------------------------------------
    def op(self, op: Op) -> None:
        if op.name not in SPECS:
            raise self.shared(f"op {op.name!r} is not part of the shared GPU IR", op)
        if op.name not in SPELLINGS:
            raise self.surface(f"op {op.name!r} has no Triton spelling", op)
        for r in op.results:
            self.check_type(r.type, op)
        for v in op.operands:
            if isinstance(v.type, ViewType) and v.name not in self.views:
                raise self.shared(f"%{v.name} is a view but not a view argument of the kernel", op)
        if op.name in WRITE_ACCESSES and op.operands and op.operands[0].name in self.views \
                and self.views[op.operands[0].name].access == "read":
            raise self.shared(f"{op.name} writes view %{op.operands[0].name}, whose ABI access mode is read", op)
        handler = getattr(self, "op_" + op.name, None)
        if handler is None and SPECS[op.name].category in ("unary", "binary"):
            handler = self.elementwise
        if handler is not None:
            handler(op)
        for r in op.regions:
            self.region(r)

    def elementwise(self, op: Op) -> None:
        """Ops undefined on a dtype (the IR interpreter refuses them too) are shared-illegal."""
        dt = op.operands[0].type.dtype
        name = op.name
        if dt == "i1":
            ok = name in ("not", "and", "or", "xor", "max", "min")
        elif dtypes.is_float(dt):
            ok = name not in ("not", "and", "or", "xor", "shl", "shr")
        else:
            ok = SPECS[name].category == "binary" or name in ("neg", "not", "abs", "floor", "ceil")
        if not ok:
            raise self.shared(f"{name} is undefined on {dt}", op)

    def op_launch(self, op: Op) -> None:
        e = op.attrs["expr"]
        self.check_le(e, "launch expression", op)
        if isinstance(e, Tuple) or (isinstance(e, TupleGet) and not isinstance(e.tuple_expr, Tuple)):
            raise self.surface(f"launch value {e} is not a scalar expression Triton can print", op)

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

    # accesses
    def _view_dtype(self, op: Op) -> str:
        return op.operands[0].type.dtype

    def _atomic(self, op: Op, kind: str, dtype: str, scope: str) -> None:
        if dtype not in _TRITON_ATOMIC_DTYPES[kind]:
            raise self.surface(f"Triton has no atomic {kind} on {dtype}", op)
        if not self.p.target.supports_atomic(kind, dtype, scope):
            raise self.hardware(f"{self.p.target.name} has no atomic {kind} on {dtype} at scope {scope}", op)

    def _order(self, op: Op) -> str:
        order = op.attrs["order"]
        if order not in SEMS:
            raise self.surface(f"memory order {order}: Triton atomics have no sequentially consistent form "
                               f"(sem is relaxed/acquire/release/acq_rel)", op)
        return SCOPES[op.attrs["domain"]]

    def op_scatter_reduce(self, op: Op) -> None:
        comb = op.attrs["combine"]
        dt = self._view_dtype(op)
        if comb == "mul":
            raise self.surface("scatter_reduce combine=mul: Triton has no atomic multiply", op)
        if comb in ("max", "min") and dtypes.is_float(dt):
            raise self.surface(f"scatter_reduce combine={comb} on {dt}: Triton's float atomic max/min does not "
                               f"propagate NaN (our max/min do)", op)
        self._atomic(op, comb, dt, "gpu")

    def op_atomic_rmw(self, op: Op) -> None:
        scope = self._order(op)
        kind = op.attrs["kind"]
        dt = self._view_dtype(op)
        if kind in ("max", "min") and dtypes.is_float(dt):
            raise self.surface(f"atomic {kind} on {dt}: Triton's float atomic max/min does not propagate NaN", op)
        self._atomic(op, kind, dt, scope)

    def op_atomic_cas(self, op: Op) -> None:
        scope = self._order(op)
        if op.attrs.get("valid") and isinstance(op.operands[-1].type, FragmentType):
            raise self.surface("atomic_cas with per-member validity: tl.atomic_cas has no mask", op)
        self._atomic(op, "cas", self._view_dtype(op), scope)

    def op_atomic_load(self, op: Op) -> None:
        scope = self._order(op)
        dt = self._view_dtype(op)
        self._atomic(op, "add" if dtypes.is_float(dt) else "or", dt, scope)

    def op_atomic_store(self, op: Op) -> None:
        scope = self._order(op)
        self._atomic(op, "xchg", self._view_dtype(op), scope)

    def op_alloc(self, op: Op) -> None:
        t = op.result.type
        if not isinstance(t, BufferType):
            raise self.shared(f"alloc makes a buffer, not {t}", op)
        if t.scope == "workspace":
            arg = op.attrs.get("arg")
            a = self.views.get(str(arg)) if arg is not None else None
            if a is None or not a.private:
                raise self.surface("a workspace buffer needs its private view ABI argument (the launcher "
                                   "allocates it); none is named", op)

    def _buffer_access(self, op: Op) -> None:
        buf = op.operands[0]
        alloc = self.p.buffers.get(buf.name)
        if alloc is None:
            raise self.surface(f"%{buf.name} is not produced by an alloc of this kernel", op)
        t = alloc.result.type
        if t.scope == "workspace":
            self.p.buffer_access[id(op)] = "workspace"
            return
        n_coords, _ = access_layout(op.name, len(op.operands), bool(op.attrs.get("valid")))
        coords = op.operands[1:1 + n_coords]
        shape = self.p.static_shape(t)
        if all(isinstance(c.type, ScalarType) for c in coords):
            self.p.buffer_access[id(op)] = "scalar"
            return
        if all(self._identity_coord(c, i, shape) for i, c in enumerate(coords)):
            self.p.buffer_access[id(op)] = "identity"
            return
        raise self.surface(f"{op.name} on a {t.scope}-scope buffer with coordinates that are neither all scalars "
                           f"nor the identity ranges of the buffer: a Triton block cannot be indexed dynamically",
                           op)

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

    # structured
    def op_reduce(self, op: Op) -> None:
        comb = op.attrs["combine"]
        for v in op.operands:
            dt = v.type.dtype
            if comb in ("and", "or", "xor") and dtypes.is_float(dt):
                raise self.shared(f"reduce combine={comb} is undefined on {dt}", op)
            if comb in ("add", "mul") and dt == "i1":
                raise self.shared(f"reduce combine={comb} is undefined on i1", op)
        if comb == "region":
            self._combiner(op)

    def op_scan(self, op: Op) -> None:
        self.op_reduce(op)

    def _combiner(self, op: Op) -> None:
        if len(op.regions) != 1:
            raise self.shared(f"{op.name} combine=region needs one combiner region", op)
        region = op.regions[0]
        defined = {a.name for a in region.args}
        for inner in walk(region):
            if inner.regions or inner.name in ("launch", "range") or \
                    SPECS[inner.name].category not in ("unary", "binary", "compare", "select", "cast", "const",
                                                       "terminator"):
                raise self.surface(f"combiner region op {inner.name}: a Triton combine function holds only "
                                   f"elementwise ops", inner)
            for v in inner.operands:
                if v.name not in defined:
                    raise self.surface(f"combiner region reads %{v.name} from outside: Triton combine functions "
                                       f"cannot capture values", inner)
            for r in inner.results:
                defined.add(r.name)

    def op_argreduce(self, op: Op) -> None:
        if op.attrs.get("tie", "lowest") != "lowest":
            raise self.shared(f"unknown tie rule {op.attrs.get('tie')!r}", op)

    def op_histogram(self, op: Op) -> None:
        dt = op.operands[0].type.dtype
        if not dtypes.is_int(dt):
            raise self.shared(f"histogram of {dt} values: values must be integers", op)
        t = op.result.type
        if not isinstance(t, FragmentType) or t.rank != 1:
            raise self.shared(f"histogram result must be a rank-1 fragment, not {t}", op)

    def op_scaled_contract(self, op: Op) -> None:
        raise self.surface("scaled_contract: tl.dot_scaled takes microscaling formats (e2m1/e4m3/e5m2 with e8m0 "
                           "scales) that the IR's dtypes cannot express faithfully", op)

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
        lf = tuple(i for i in range(len(ls)) if i not in lc + lb)
        rf = tuple(i for i in range(len(rs)) if i not in rc + rb)
        backend = self.p.backend
        if prec != "ieee" and work == "f32" and lhs.type.dtype == "f32":
            if prec not in _DOT_PRECISIONS[backend]:
                raise self.surface(f"contract precision={prec}: Triton's {backend} backend has no {prec} dot input "
                                   f"precision (allowed: {', '.join(_DOT_PRECISIONS[backend])})", op)
            if not self.p.target.supports_contract("f32", "f32", prec):
                raise self.hardware(f"{self.p.target.name}'s matrix unit has no {prec} form", op)
        opd = lhs.type.dtype
        dot_ok = (opd == rhs.type.dtype and _DOT_FORMS.get(opd) == work and len(lc) == 1 and len(lb) <= 1
                  and len(lb) == len(rb) and len(lf) == 1 and len(rf) == 1)
        if dot_ok:
            k = ls[lc[0]]
            min_k = _MIN_DOT_K[backend][dtypes.BITS[opd]]
            dot_ok = k >= min_k
        if dot_ok:
            if not self.p.target.supports_contract(opd, work, prec):
                raise self.hardware(f"{self.p.target.name}'s matrix unit has no {opd} x {opd} -> {work} form", op)
            self.p.contracts[id(op)] = ContractPlan("dot", lb + lf + lc, rb + rc + rf, len(lb), work, opd)
            return
        if prec == "bf16x3":
            raise self.surface("contract precision=bf16x3 is spelled only by tl.dot (K >= 16, one paired axis), "
                               f"not for {lhs.type} x {rhs.type}", op)
        bt = math.prod(ls[i] for i in lb)
        mt = math.prod(ls[i] for i in lf)
        kt = math.prod(ls[i] for i in lc)
        nt = math.prod(rs[i] for i in rf)
        if bt * mt * kt * nt > MAX_EXPANSION_NUMEL:
            raise self.surface(f"contract {lhs.type} x {rhs.type} has no tl.dot form (operands {opd}/"
                               f"{rhs.type.dtype}, accumulator {acc_dt}, K={kt}) and its exact expansion would "
                               f"materialize {bt * mt * kt * nt} products (bound {MAX_EXPANSION_NUMEL})", op)
        self.cost(bt * mt * kt * nt, f"the contract expansion ({bt * mt * kt * nt} products)", op)
        self.p.contracts[id(op)] = ContractPlan("expand", lb + lf + lc, rb + rc + rf, len(lb), work, "",
                                                (bt, mt, kt, nt))


def _product_factors(e: LaunchExpr) -> list[LaunchExpr] | None:
    """The Sym/Const factors of a pure product, or None."""
    if isinstance(e, (Sym, Const)):
        return [e]
    if isinstance(e, BinOp) and e.op == "*":
        a, b = _product_factors(e.lhs), _product_factors(e.rhs)
        return None if a is None or b is None else a + b
    return None


def _param_only(e: LaunchExpr, params: dict[str, int]) -> bool:
    if isinstance(e, Sym):
        return e.name in params
    if isinstance(e, (Dim, Stride)):
        return False
    return all(_param_only(c, params) for c in children(e))


__all__ = ["legalize", "KernelPlan", "ContractPlan", "MAX_ELEMENTS_PER_THREAD", "MAX_NUMEL", "SEMS", "SCOPES",
           "is_pow2"]
