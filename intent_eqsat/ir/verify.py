"""The shared GPU verifier (SPEC IR-10, PASS-5): a table of checkable rules, one per invariant.

Each entry of :data:`CHECKS` is a small function that inspects a module and yields the
:class:`~intent_eqsat.ir.verify_errors.VerificationError` s it finds; its docstring cites the SPEC clause it
enforces. A stage is an ordered tuple of check names (:data:`STAGES`): ``shared`` runs IR-10 invariants 1..12 and
the PASS-5 ``declared_params`` check; ``construction`` runs the same and additionally demands an origin on every op
that computes or moves data (see :func:`check_construction_origins`).

:func:`verify` runs the checks of a stage in order and raises the first failure; :func:`collect` returns every
failure of every check. Checks run in invariant order and a check leaves to its owner what another invariant
describes (e.g. invariant 3 does not re-derive a contract's result shape when invariant 8 finds its axes broken),
so a program that breaks exactly one invariant is reported under that invariant.

Locations are ``kernel gemm, op #12 (load) from gemm.s0`` (the pre-order op index of
:func:`intent_eqsat.ir.core.walk`); an op parsed from text appends `` at file:line:col``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from intent_eqsat.errors import IntentError, SourceLocation
from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import ACCESS_MODES, ORDERS, Kernel, Module, Op, Region, Value, location, walk
from intent_eqsat.ir.launch_probe import Finding, probe
from intent_eqsat.ir.launch import (BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet,
                                    children, equivalent, evaluate, product)
from intent_eqsat.ir.spec import (ACCESS_OPS, ACCESS_PAYLOAD, ATOMIC_ACCESSES, BINARY_OPS, CMP_PREDICATES,
                                  COMBINERS, COMMON_ATTRS, MEMORY_ORDERS, READ_ACCESSES, RMW_KINDS,
                                  SHARING_DOMAINS, SPECS, UNARY_OPS, WRITE_ACCESSES, access_layout)
from intent_eqsat.ir.types import (BUFFER_SCOPES, BufferType, FragmentType, ScalarType, TupleType, Type, ViewType,
                                   static_extent, value_shape)
from intent_eqsat.ir.verify_errors import PASS5_CHECKS, VerificationError

Errors = Iterator[VerificationError]

NARROWING_KINDS = ("all_true", "mixed", "all_false_skipped")
#: attribute keys that record side decisions; execution may never depend on them (IR-10 invariant 12)
SIDE_RECORD_KEYS = ("role", "roles", "decision", "decisions", "plan")
#: unary ops defined on floating point only; bitwise ops on integers and i1; shifts on integers
FLOAT_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid", "floor",
               "ceil", "recip", "log1p", "expm1")
BITWISE = ("and", "or", "xor", "not")
SHIFTS = ("shl", "shr")
#: non-atomic writes: two program instances writing one element this way conflict (IR-9)
PLAIN_WRITES = ("store", "scatter", "buffer_store")
#: the ops that need no origin at the construction stage (see check_construction_origins)
HELPER_CATEGORIES = ("terminator", "const", "shape")
ORIGIN_FREE_OPS = ("execution_group", "if")


# ============================================================================================ the check table

@dataclass(frozen=True)
class Check:
    """One rule of the verifier: ``fn(ctx)`` yields the failures it finds (nothing = the rule holds).

    ``invariant`` is the IR-10 invariant number (1..12) or a PASS-5 check name; ``pass5`` names the PASS-5
    shared-verifier item the rule belongs to.
    """

    name: str
    invariant: int | str
    pass5: str
    fn: Callable[["_Ctx"], Errors]

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


CHECKS: dict[str, Check] = {}


def _check(name: str, invariant: int | str, pass5: str) -> Callable[[Callable[["_Ctx"], Errors]],
                                                                     Callable[["_Ctx"], Errors]]:
    assert pass5 in PASS5_CHECKS, pass5

    def register(fn: Callable[["_Ctx"], Errors]) -> Callable[["_Ctx"], Errors]:
        CHECKS[name] = Check(name, invariant, pass5, fn)
        return fn

    return register


# ================================================================================================== context

class _KernelInfo:
    """Per-kernel facts every check reads: op indices, parents, definitions."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.ops: list[Op] = list(walk(kernel.body))
        self.index = {id(op): i for i, op in enumerate(self.ops)}
        #: id(op) -> (the region holding it, the op owning that region or None for the body)
        self.parent: dict[int, tuple[Region, Op | None]] = {}
        #: id(region) -> owning op (None for the body)
        self.region_owner: dict[int, Op | None] = {id(kernel.body): None}
        #: value name -> defining op (None for region arguments)
        self.def_op: dict[str, Op | None] = {}
        #: value name -> the op whose region declares it as an argument (None for body args)
        self.arg_owner: dict[str, Op | None] = {a.name: None for a in kernel.body.args}
        self._index_region(kernel.body, None)
        self._labels: dict[tuple, dict[str, frozenset]] = {}

    def _index_region(self, region: Region, owner: Op | None) -> None:
        self.region_owner[id(region)] = owner
        for op in region.ops:
            self.parent[id(op)] = (region, owner)
            for r in op.results:
                self.def_op.setdefault(r.name, op)
            for sub in op.regions:
                for a in sub.args:
                    self.arg_owner.setdefault(a.name, op)
                self._index_region(sub, op)

    @property
    def pid(self) -> Value | None:
        return self.kernel.body.args[-1] if self.kernel.body.args else None

    def ancestors(self, op: Op) -> Iterator[Op]:
        """Enclosing ops, innermost first."""
        _, owner = self.parent.get(id(op), (None, None))
        while owner is not None:
            yield owner
            _, owner = self.parent.get(id(owner), (None, None))

    def enclosing_group(self, op: Op) -> Op | None:
        return next((a for a in self.ancestors(op) if a.name == "execution_group"), None)

    def loop_depth_in_group(self, op: Op) -> int:
        """Number of for/while loops between ``op`` and its execution group (or the body)."""
        n = 0
        for a in self.ancestors(op):
            if a.name == "execution_group":
                break
            if a.name in ("for", "while"):
                n += 1
        return n

    def where(self, op: Op) -> str:
        loc = location(self.kernel, op, self.index.get(id(op), -1))
        if isinstance(op.loc, SourceLocation):
            loc += f" at {op.loc}"
        return loc

    def labels(self, seeds: dict[str, frozenset]) -> dict[str, frozenset]:
        """Def-use reachability: value name -> the seed labels it depends on (see :func:`_propagate`)."""
        key = tuple(sorted((k, tuple(sorted(map(str, v)))) for k, v in seeds.items()))
        if key not in self._labels:
            self._labels[key] = _propagate(self.ops, seeds)
        return self._labels[key]


class _Ctx:
    def __init__(self, module: Module):
        self.module = module
        self.infos = [_KernelInfo(k) for k in module.kernels]
        self.param_names = {p.name for p in module.params}
        self._probes: dict[int, list[Finding]] = {}

    def probe(self, info: _KernelInfo) -> list[Finding]:
        """What the launch probes of the kernel show (:mod:`intent_eqsat.ir.launch_probe`), computed once."""
        key = id(info.kernel)
        if key not in self._probes:
            self._probes[key] = probe(self.module, info.kernel)
        return self._probes[key]

    def err(self, invariant: int | str, message: str, info: _KernelInfo | None = None, op: Op | None = None,
            where: str | None = None) -> VerificationError:
        if where is None:
            if info is None:
                where = "module"
            elif op is None:
                where = location(info.kernel)
            else:
                where = info.where(op)
        return VerificationError(invariant, message, where)


# ============================================================================================ small helpers

def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _ints(x: Any) -> tuple[int, ...] | None:
    if isinstance(x, (tuple, list)) and all(_is_int(i) for i in x):
        return tuple(x)
    return None


def _dtype(v: Value) -> str | None:
    return getattr(v.type, "dtype", None)


def _is_int_dtype(dt: str | None) -> bool:
    return dt is not None and dtypes.is_int(dt)


def _tstr(t: Type) -> str:
    try:
        return str(t)
    except Exception:  # a malformed type still needs a message
        return repr(t)


def _shape_str(shape: tuple[LaunchExpr, ...]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _is_value_type(t: Type) -> bool:
    return isinstance(t, (ScalarType, FragmentType))


def _broadcastable(shape: tuple[LaunchExpr, ...], target: tuple[LaunchExpr, ...]) -> bool:
    """A scalar broadcasts to anything; a fragment must match the target rank, each extent equal or 1."""
    if not shape:
        return True
    return len(shape) == len(target) and all(a == b or a == Const(1) for a, b in zip(shape, target))


def _yield_of(region: Region) -> Op | None:
    return region.ops[-1] if region.ops and region.ops[-1].name == "yield" else None


def _yielded(region: Region) -> list[Value]:
    y = _yield_of(region)
    return list(y.operands) if y is not None else []


def _access_parts(op: Op) -> tuple[Value, list[Value], list[Value], Value | None] | None:
    """(resource, coordinates, payload, validity) of an access, or None if the layout cannot be split."""
    valid = op.attrs.get("valid", False)
    if not isinstance(valid, bool) or not op.operands:
        return None
    n_payload = ACCESS_PAYLOAD[op.name]
    n_coords = len(op.operands) - 1 - n_payload - (1 if valid else 0)
    if n_coords < 0:
        return None
    resource = op.operands[0]
    coords = op.operands[1:1 + n_coords]
    payload = op.operands[1 + n_coords:1 + n_coords + n_payload]
    validity = op.operands[-1] if valid else None
    return resource, list(coords), list(payload), validity


def _access_shape(op: Op, parts: tuple) -> tuple[LaunchExpr, ...]:
    """The shape of the accessed member set: the result's (reads/RMW) or the payload's (writes)."""
    if op.name in READ_ACCESSES or op.name in ("atomic_rmw", "atomic_cas"):
        return value_shape(op.results[0].type) if op.results else ()
    payload = parts[2]
    return value_shape(payload[0].type) if payload else ()


def _static_count(extents: Iterable[LaunchExpr]) -> int | None:
    n = 1
    for e in extents:
        v = static_extent(e) if isinstance(e, LaunchExpr) else None
        if v is None:
            return None
        n *= v
    return n


def _drop_axes(t: Type, axes: Iterable[int]) -> Type:
    axes = set(axes)
    if not isinstance(t, FragmentType):
        return t
    keep = [i for i in range(t.rank) if i not in axes]
    if not keep:
        return ScalarType(t.dtype)
    return FragmentType(t.dtype, tuple(t.shape[i] for i in keep))


def _same_type(a: Type, b: Type) -> bool:
    """Types agree; fragment axis labels are provenance, not part of compatibility."""
    if isinstance(a, FragmentType) and isinstance(b, FragmentType):
        return a.dtype == b.dtype and a.shape == b.shape
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.items) == len(b.items) and all(_same_type(x, y) for x, y in zip(a.items, b.items))
    return a == b


def _axes_ok(axes: tuple[int, ...] | None, rank: int, allow_empty: bool = True) -> bool:
    return axes is not None and (allow_empty or bool(axes)) and len(set(axes)) == len(axes) and \
        all(0 <= a < rank for a in axes)


def _contract_layout(op: Op) -> tuple[FragmentType, FragmentType, Type, dict[str, tuple[int, ...]]] | None:
    """(lhs, rhs, acc, axes) when the contract's schema is intact (invariant 8 owns the details), else None."""
    if op.name == "contract":
        if len(op.operands) != 3:
            return None
        lhs, rhs, acc = (v.type for v in op.operands)
    else:
        if len(op.operands) != 5:
            return None
        lhs, rhs, acc = op.operands[0].type, op.operands[2].type, op.operands[4].type
    if not (isinstance(lhs, FragmentType) and isinstance(rhs, FragmentType)):
        return None
    axes = {k: _ints(op.attrs.get(k, ())) for k in ("lhs_contract", "rhs_contract", "lhs_batch", "rhs_batch")}
    if any(v is None for v in axes.values()):
        return None
    lc, rc, lb, rb = axes["lhs_contract"], axes["rhs_contract"], axes["lhs_batch"], axes["rhs_batch"]
    if len(lc) != len(rc) or len(lb) != len(rb):
        return None
    if not (_axes_ok(lc + lb, lhs.rank) and _axes_ok(rc + rb, rhs.rank)):
        return None
    if any(lhs.shape[a] != rhs.shape[b] for a, b in zip(lc + lb, rc + rb)):
        return None
    return lhs, rhs, acc, axes  # type: ignore[return-value]


def _contract_result_shape(lhs: FragmentType, rhs: FragmentType, axes: dict) -> tuple[LaunchExpr, ...]:
    lc, rc, lb, rb = axes["lhs_contract"], axes["rhs_contract"], axes["lhs_batch"], axes["rhs_batch"]
    batch = [lhs.shape[a] for a in lb]
    lfree = [lhs.shape[i] for i in range(lhs.rank) if i not in lc and i not in lb]
    rfree = [rhs.shape[i] for i in range(rhs.rank) if i not in rc and i not in rb]
    return tuple(batch + lfree + rfree)


# =========================================================================================== def-use labels

def _propagate(ops: list[Op], seeds: dict[str, frozenset]) -> dict[str, frozenset]:
    """Fixpoint of def-use dependence: a value carries the labels of every seed it (transitively) depends on.

    Plain ops: results depend on operands. ``for``: the induction variable on lb/ub/step; carried value i on
    init i and yield i; results on both and on the bounds. ``if``: results on the condition and the yields.
    ``while``: cond args on operands and body yields, body args and results on cond yields. ``execution_group``:
    region args on the program coordinate. Other region ops: everything on operands and yields.
    """
    lab: dict[str, set] = {k: set(v) for k, v in seeds.items()}

    def get(v: Value) -> set:
        return lab.get(v.name, set())

    def add(v: Value, s: Iterable) -> bool:
        cur = lab.setdefault(v.name, set())
        before = len(cur)
        cur.update(s)
        return len(cur) != before

    changed = True
    while changed:
        changed = False
        for op in ops:
            if not op.regions:
                src = set().union(*(get(v) for v in op.operands)) if op.operands else set()
                for r in op.results:
                    changed |= add(r, src)
            elif op.name == "for" and op.regions[0].args:
                body = op.regions[0]
                bounds = set().union(*(get(v) for v in op.operands[:3]))
                changed |= add(body.args[0], bounds)
                ys = _yielded(body)
                for i, init in enumerate(op.operands[3:]):
                    s = set(get(init))
                    if i < len(ys):
                        s |= get(ys[i])
                    if i + 1 < len(body.args):
                        changed |= add(body.args[i + 1], s)
                    if i < len(op.results):
                        changed |= add(op.results[i], s | bounds)
            elif op.name == "if":
                cond = get(op.operands[0]) if op.operands else set()
                for i, r in enumerate(op.results):
                    s = set(cond)
                    for reg in op.regions:
                        ys = _yielded(reg)
                        if i < len(ys):
                            s |= get(ys[i])
                    changed |= add(r, s)
            elif op.name == "while" and len(op.regions) == 2:
                cond_r, body_r = op.regions
                cys, bys = _yielded(cond_r), _yielded(body_r)
                for i, a in enumerate(cond_r.args):
                    s = set(get(op.operands[i])) if i < len(op.operands) else set()
                    if i < len(bys):
                        s |= get(bys[i])
                    changed |= add(a, s)
                for j, a in enumerate(body_r.args):
                    if j + 1 < len(cys):
                        changed |= add(a, get(cys[j + 1]))
                for j, r in enumerate(op.results):
                    s = set(get(cys[0])) if cys else set()
                    if j + 1 < len(cys):
                        s |= get(cys[j + 1])
                    changed |= add(r, s)
            elif op.name == "execution_group":
                src = set().union(*(get(v) for v in op.operands)) if op.operands else set()
                for a in op.regions[0].args:
                    changed |= add(a, src)
            else:
                src = set().union(*(get(v) for v in op.operands)) if op.operands else set()
                for reg in op.regions:
                    for y in _yielded(reg):
                        src |= get(y)
                for reg in op.regions:
                    for a in reg.args:
                        changed |= add(a, src)
                for r in op.results:
                    changed |= add(r, src)
    return {k: frozenset(v) for k, v in lab.items()}


# ====================================================================================== LaunchExpr helpers

def _le_nodes(e: LaunchExpr) -> Iterator[LaunchExpr]:
    yield e
    for c in children(e):
        yield from _le_nodes(c)


def _attr_launch_exprs(x: Any) -> Iterator[LaunchExpr]:
    """Every LaunchExpr in an attribute value (nested in tuples and dicts)."""
    if isinstance(x, LaunchExpr):
        yield x
    elif isinstance(x, (tuple, list)):
        for i in x:
            yield from _attr_launch_exprs(i)
    elif isinstance(x, dict):
        for i in x.values():
            yield from _attr_launch_exprs(i)


def _le_leaves(e: LaunchExpr) -> Iterator[LaunchExpr]:
    if isinstance(e, (Const, Sym, Dim, Stride)):
        yield e
        return
    for c in children(e):
        yield from _le_leaves(c)


def _le_problem(e: Any, syms: dict[str, str], views: dict[str, int],
                params: dict[str, tuple[int, ...]] | None = None) -> str | None:
    """Why ``e`` is not a launch-visible LaunchExpr (IR-3.1), or None. ``syms``: allowed name -> its kind;
    ``params``: the candidate values of the declared parameters (to find divisors that are zero)."""
    if not isinstance(e, LaunchExpr):
        return f"{e!r} is not a LaunchExpr (a kernel value or device data cannot size the grid)"
    stack = [e]
    while stack:
        n = stack.pop()
        if not isinstance(n, (Const, Sym, Dim, Stride, BinOp, Not, Select, Tuple, TupleGet)):
            return f"{n!r} is not a LaunchExpr node"
        if isinstance(n, Sym) and n.name not in syms:
            return f"symbol {n.name!r} is not a declared parameter, a by-value ABI scalar or a view shape symbol"
        if isinstance(n, BinOp) and n.op in ("//", "%", "ceil_div"):
            zero = _zero_divisor(n.rhs, params or {})
            if zero is not None:
                return f"{n} divides by zero{zero}"
        if isinstance(n, (Dim, Stride)):
            if n.view not in views:
                return f"{type(n).__name__.lower()}({n.view}, {n.axis}) names no ABI view"
            if not 0 <= n.axis < views[n.view]:
                return f"{type(n).__name__.lower()}({n.view}, {n.axis}): axis out of range for a rank-" \
                       f"{views[n.view]} view"
        stack.extend(children(n))
    return None


#: how many parameter assignments a divisor over parameters is evaluated at
_MAX_PARAM_ASSIGNMENTS = 256


def _zero_divisor(d: LaunchExpr, params: dict[str, tuple[int, ...]]) -> str | None:
    """How the divisor ``d`` is zero at every launch or at a parameter choice ("" when it is zero whatever the
    parameters; " with BM=64": zero at that candidate), or None when it can be non-zero everywhere (a divisor over
    sizes or scalars is their caller's business: ``ceil_div(N, BM)`` is the norm)."""
    names = sorted(s.name for s in _le_leaves(d) if isinstance(s, Sym))
    if any(isinstance(x, (Dim, Stride)) for x in _le_leaves(d)) or any(n not in params for n in names):
        return None
    domains = [params[n] for n in names]
    if math.prod(len(c) for c in domains) > _MAX_PARAM_ASSIGNMENTS:
        return None
    for combo in itertools.product(*domains):
        binding = dict(zip(names, combo))
        try:
            v = evaluate(d, binding)
        except IntentError:
            continue                        # a zero divisor inside the divisor: reported for that node
        if v == 0 and not isinstance(v, bool):
            return "" if not names else " with " + ", ".join(f"{k}={x}" for k, x in binding.items())
    return None


def _closed_value(e: Any, defaults: dict[str, int]) -> int | None:
    """The value of an integer LaunchExpr over constants and declared parameters (at their defaults), or None."""
    if not isinstance(e, LaunchExpr):
        return None
    if any(isinstance(x, (Dim, Stride)) or (isinstance(x, Sym) and x.name not in defaults) for x in _le_leaves(e)):
        return None
    try:
        v = evaluate(e, defaults)
    except IntentError:
        return None
    return v if _is_int(v) else None


# ========================================================================================= integer literals

def _unrepresentable(v: Any, dtype: str | None) -> str | None:
    """Why the number ``v`` (a fill, an init, an identity) is not a value of ``dtype``, or None."""
    if dtype is None or not (dtypes.is_int(dtype) or dtype == "i1") or not _is_number(v) and not isinstance(v, bool):
        return None
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer()):
            return f"not a value of {dtype}"
        v = int(v)
    lo, hi = dtypes.int_range(dtype)
    if not lo <= int(v) <= hi:
        return f"outside the range of {dtype} [{lo}, {hi}]"
    return None


def _literal_problem(x: Any) -> str | None:
    """The first integer in ``x`` (an attribute value, a LaunchExpr, a type) outside the signed 64-bit range."""
    stack = [x]
    while stack:
        n = stack.pop()
        if _is_int(n):
            if not dtypes.in_i64(n):
                return f"integer {n} is outside the signed 64-bit range [-2**63, 2**63 - 1] (the range of " \
                       "index arithmetic, of LaunchExprs and of the optimizer's e-graph)"
        elif isinstance(n, Const):
            stack.append(n.value)
        elif isinstance(n, LaunchExpr):
            stack.extend(children(n))
        elif isinstance(n, (tuple, list)):
            stack.extend(n)
        elif isinstance(n, dict):
            stack.extend(n.values())
        elif isinstance(n, (FragmentType, ViewType, BufferType)):
            stack.extend(n.shape)
        elif isinstance(n, TupleType):
            stack.extend(n.items)
    return None


@_check("literals", "literals", "shapes_params")
def check_literals(ctx: _Ctx) -> Errors:
    """PASS-5 (shapes and parameters), IR-3.1, IR-4: every integer literal is a signed 64-bit integer.

    Parameter defaults and candidates, LaunchExpr constants (segments, the launch count, ABI shapes, strides,
    offsets and producers, fragment/buffer extents, ``$(...)`` attributes) and integer attributes lie in
    ``[-2**63, 2**63 - 1]``: ``index`` arithmetic and the optimizer's e-graph (egglog ``i64``) hold no more, so a
    larger literal would be an overflow, not a program. (A ``const`` must also fit its own element type: IR-10
    (3).) The text parser rejects such literals at their token already.
    """
    for p in ctx.module.params:
        msg = _literal_problem((p.default, tuple(p.candidates)))
        if msg:
            yield ctx.err("literals", f"parameter {p.name}: {msg}", where=f"param {p.name}")
    for info in ctx.infos:
        k = info.kernel
        for i, seg in enumerate(k.space.segments):
            msg = _literal_problem((seg.extents, seg.group_size, seg.group_axis))
            if msg:
                yield ctx.err("literals", msg, where=f"{location(k)}, segment {i}")
        msg = _literal_problem((k.space.launch,))
        if msg:
            yield ctx.err("literals", msg, where=f"{location(k)}, space")
        for a in k.abi:
            msg = _literal_problem((a.value.type, a.strides, a.offset, a.producer))
            if msg:
                yield ctx.err("literals", msg, where=f"{location(k)}, abi %{a.name}")
        for op in info.ops:
            values = [*op.results, *(a for r in op.regions for a in r.args)]
            msg = _literal_problem((op.attrs, tuple(v.type for v in values)))
            if msg:
                yield ctx.err("literals", msg, info, op)


# ====================================================================================== undefined arithmetic

@_check("arithmetic", "arithmetic", "shapes_params")
def check_arithmetic(ctx: _Ctx) -> Errors:
    """PASS-5 (shapes and parameters), IR-7, IR-5: no integer arithmetic that provably has no value.

    At a launch probe (:mod:`intent_eqsat.ir.launch_probe`: a concrete legal launch, a program instance and loop
    iterations that really execute there) no integer ``div``/``rem``/``mod``/``floordiv`` divides by zero, no
    shift leaves ``[0, bits)``, no integer ``pow`` has a negative exponent, no ``for``/``region_fold``/
    ``region_scan`` has a step below 1 and every ``launch`` value can be evaluated and fits its type. Values
    computed from device data or by-value scalars are not judged here.
    """
    domains = {p.name: tuple(c for c in p.candidates if _is_int(c)) or (p.default,) for p in ctx.module.params}
    for info in ctx.infos:
        for f in ctx.probe(info):
            if f.kind != "arithmetic":
                continue
            expr = f.op.attrs.get("expr") if f.op.name == "launch" else None
            if isinstance(expr, LaunchExpr) and (_literal_problem(expr) or any(
                    isinstance(n, BinOp) and n.op in ("//", "%", "ceil_div") and _zero_divisor(n.rhs, domains)
                    is not None for n in _le_nodes(expr))):
                continue                    # a literal or a zero divisor the literals check or IR-10 (10) names
            yield ctx.err("arithmetic", f.message, info, f.op)


# ================================================================================================ invariant 1

@_check("one_body", 1, "coverage")
def check_one_body(ctx: _Ctx) -> Errors:
    """IR-10 (1), IR-2: exactly one executable kernel body per KIR specialization.

    The module has at least one kernel; kernel names and origins (the KIR specialization) are unique; the body's
    arguments are the ABI values followed by the program coordinate; the body is non-empty and ends in ``yield``;
    every op is a legal form of the spec table (known name; operand, result and region counts in range).
    Ops named ``kir.*`` are left to invariant 12 (KIR clones).
    """
    if not ctx.module.kernels:
        yield ctx.err(1, "the module has no kernel (IR-2: one or more physical kernels)")
    names: dict[str, int] = {}
    origins: dict[str, str] = {}
    for info in ctx.infos:
        k = info.kernel
        if k.name in names:
            yield ctx.err(1, f"kernel name {k.name!r} is used by two kernels", info)
        names[k.name] = 1
        if not isinstance(k.origin, str) or not k.origin:
            yield ctx.err(1, "the kernel has no KIR origin (its specialization)", info)
        elif k.origin in origins:
            yield ctx.err(1, f"KIR specialization {k.origin!r} has two executable bodies: kernels "
                             f"{origins[k.origin]!r} and {k.name!r}", info)
        else:
            origins[k.origin] = k.name
        want = [a.value for a in k.abi]
        args = list(k.body.args)
        if args[:-1] != want or len(args) != len(want) + 1:
            yield ctx.err(1, "the body's arguments must be the ABI values in order followed by the program "
                             "coordinate", info)
        if not k.body.ops:
            yield ctx.err(1, "the kernel body is empty", info)
        elif k.body.ops[-1].name != "yield":
            yield ctx.err(1, f"the kernel body ends in {k.body.ops[-1].name}, not yield", info, k.body.ops[-1])
        for op in info.ops:
            if op.name.startswith("kir."):
                continue  # invariant 12
            spec = SPECS.get(op.name)
            if spec is None:
                yield ctx.err(1, f"op {op.name!r} is not in the spec table of the shared GPU IR", info, op)
                continue
            for what, n, (lo, hi) in (("operands", len(op.operands), spec.operands),
                                      ("results", len(op.results), spec.results),
                                      ("regions", len(op.regions), spec.regions)):
                if n < lo or (hi is not None and n > hi):
                    rng = f"{lo}" if hi == lo else f"{lo}..{'' if hi is None else hi}"
                    yield ctx.err(1, f"op {op.name} takes {rng} {what}, got {n}", info, op)


# ================================================================================================ invariant 2

@_check("coverage", 2, "coverage")
def check_coverage(ctx: _Ctx) -> Errors:
    """IR-10 (2), IR-3: complete program-space and result/effect coverage.

    At least one segment; every segment i has exactly one ``execution_group {segment = i}``, directly in the body
    (or, for a grid-stride space with ``launch``, under for/if but never inside another group); its region has
    one index argument per segment extent; its operand is the body's program coordinate, or, grid-stride, the
    induction variable of an enclosing ``for (pid, total, launch)`` loop. A grouped order has a group size and a
    group axis with at least one row axis before it; a row-major one has neither. Every public view with access
    write/readwrite is written by an access (a private view is a runtime-allocated workspace, reached through its
    workspace buffer).
    """
    for info in ctx.infos:
        k = info.kernel
        space = k.space
        if not space.segments:
            yield ctx.err(2, "the program space has no segment", info)
        for i, seg in enumerate(space.segments):
            where = f"{location(k)}, segment {i}"
            if seg.order not in ORDERS:
                yield ctx.err(2, f"unknown program order {seg.order!r}", where=where)
            if seg.order == "grouped":
                if seg.group_size is None:
                    yield ctx.err(2, "a grouped order needs a group size", where=where)
                else:
                    g = _closed_value(seg.group_size, {p.name: p.default for p in ctx.module.params
                                                       if _is_int(p.default)})
                    if g is not None and g <= 0:
                        at = "" if isinstance(seg.group_size, Const) else f" = {g} at the parameter defaults"
                        yield ctx.err(2, f"the group size {seg.group_size}{at} is not positive", where=where)
                if not 1 <= seg.group_axis < len(seg.extents):
                    yield ctx.err(2, f"a grouped order's group axis {seg.group_axis} needs a row axis before it in "
                                     f"a {len(seg.extents)}-D segment (1 <= axis < rank)", where=where)
            else:
                if seg.group_size is not None:
                    yield ctx.err(2, "a row-major segment takes no group size", where=where)
                if (seg.group_axis, seg.descending) != (1, False):
                    yield ctx.err(2, "a row-major segment takes no group axis or direction", where=where)
        groups: dict[int, list[Op]] = {}
        for op in info.ops:
            if op.name != "execution_group":
                continue
            seg_id = op.attrs.get("segment")
            if not _is_int(seg_id) or not 0 <= seg_id < len(space.segments):
                yield ctx.err(2, f"execution_group names segment {seg_id!r}, but the space has "
                                 f"{len(space.segments)} segment(s)", info, op)
                continue
            groups.setdefault(seg_id, []).append(op)
            seg = space.segments[seg_id]
            anc = list(info.ancestors(op))
            if any(a.name == "execution_group" for a in anc):
                yield ctx.err(2, "an execution_group is nested inside another execution_group", info, op)
            elif space.launch is None and anc:
                yield ctx.err(2, "without grid-stride traversal an execution_group sits directly in the body, "
                                 f"not under {anc[0].name}", info, op)
            elif space.launch is not None and any(a.name not in ("for", "if") for a in anc):
                yield ctx.err(2, "a grid-stride execution_group sits under for/if only", info, op)
            region = op.regions[0]
            if len(region.args) != len(seg.extents) or any(a.type != ScalarType("index") for a in region.args):
                yield ctx.err(2, f"the execution_group region has {len(region.args)} argument(s) but segment "
                                 f"{seg_id} has {len(seg.extents)} extent(s): one index coordinate each",
                              info, op)
            yield from _group_operand(ctx, info, op)
        for i in range(len(space.segments)):
            n = len(groups.get(i, []))
            if n != 1:
                where = f"{location(k)}, segment {i}"
                yield ctx.err(2, f"segment {i} has {n} execution_group ops; it needs exactly one", where=where)
        written = {op.operands[0].name for op in info.ops if op.name in WRITE_ACCESSES and op.operands}
        for a in k.abi:
            if a.is_view and not a.private and a.access in ("write", "readwrite") and a.name not in written:
                yield ctx.err(2, f"view %{a.name} has access {a.access} but no access writes it "
                                 "(its result is never produced)", where=f"{location(k)}, abi %{a.name}")


def _group_operand(ctx: _Ctx, info: _KernelInfo, op: Op) -> Errors:
    space = info.kernel.space
    pid = info.pid
    operand = op.operands[0]
    if space.launch is None:
        if pid is None or operand.name != pid.name:
            yield ctx.err(2, f"the execution_group operand %{operand.name} is not the program coordinate "
                             f"%{pid.name if pid else '?'}", info, op)
        return
    loop = info.arg_owner.get(operand.name)
    if loop is None or loop.name != "for" or loop.regions[0].args[0].name != operand.name:
        yield ctx.err(2, f"in a grid-stride space the execution_group operand %{operand.name} must be the "
                         "induction variable of an enclosing for loop", info, op)
        return
    lb, ub, step = loop.operands[:3]
    if pid is None or lb.name != pid.name:
        yield ctx.err(2, "the grid-stride loop must start at the program coordinate", info, loop)
    step_op = info.def_op.get(step.name)
    if step_op is None or step_op.name != "launch" or step_op.attrs.get("expr") != space.launch:
        yield ctx.err(2, f"the grid-stride loop must step by the launched program count {space.launch}",
                      info, loop)
    ub_op = info.def_op.get(ub.name)
    ub_expr = ub_op.attrs.get("expr") if ub_op is not None and ub_op.name == "launch" else None
    if not isinstance(ub_expr, LaunchExpr) or not (ub_expr == space.total or equivalent(ub_expr, space.total)):
        yield ctx.err(2, f"the grid-stride loop must run to the total program count {space.total}", info, loop)


# ================================================================================================ invariant 3

@_check("types", 3, "shapes_params")
def check_types(ctx: _Ctx) -> Errors:
    """IR-10 (3), IR-4, IR-7: every SSA value has a legal scalar/fragment/resource type consistent with its op.

    Element types are known; no rank-0 fragment (IR-4.1); views only as ABI arguments, buffers only from
    ``alloc``; the ABI holds views and scalars, the program coordinate is ``index``. Per op: elementwise results
    keep the operands' dtype and shape (scalars broadcast), cmp gives i1, select takes an i1 condition, cast keeps
    the shape, bitcast the bit width, broadcast/reshape/transpose/join/extract/tuple/get give the derived type,
    reads give the resource dtype, RMW/CAS give the payload type, coordinates are integers, contract gives the
    accumulator type over (batch, lhs free, rhs free), reduce drops its axes, scan keeps its operand types, control
    ops take index bounds and i1 conditions. Value-op attributes (pred, dims, perm, flags, ...) are well-formed.
    """
    for info in ctx.infos:
        k = info.kernel
        for a in k.abi:
            if not isinstance(a.value.type, (ViewType, ScalarType)):
                yield ctx.err(3, f"ABI argument %{a.name} is {_tstr(a.value.type)}: the ABI holds views and "
                                 "scalars", where=f"{location(k)}, abi %{a.name}")
            if a.is_view and a.access not in ACCESS_MODES:
                yield ctx.err(3, f"view %{a.name} has access mode {a.access!r}",
                              where=f"{location(k)}, abi %{a.name}")
        pid = info.pid
        if pid is not None and pid.type != ScalarType("index"):
            yield ctx.err(3, f"the program coordinate %{pid.name} is {_tstr(pid.type)}, not index", info)
        for v in [a.value for a in k.abi]:
            yield from _value_type(ctx, info, v, None)
        for op in info.ops:
            for reg in op.regions:
                for a in reg.args:
                    yield from _value_type(ctx, info, a, op, arg=True)
                    if isinstance(a.type, ViewType):
                        yield ctx.err(3, f"region argument %{a.name} is a view; views are ABI arguments only",
                                      info, op)
                    if isinstance(a.type, BufferType):
                        yield ctx.err(3, f"region argument %{a.name} is a buffer; buffers come from alloc only",
                                      info, op)
            for r in op.results:
                yield from _value_type(ctx, info, r, op)
                if isinstance(r.type, ViewType):
                    yield ctx.err(3, f"%{r.name} is a view; views are ABI arguments only", info, op)
                if isinstance(r.type, BufferType) and op.name != "alloc":
                    yield ctx.err(3, f"%{r.name} is a buffer made by {op.name}; buffers come from alloc only",
                                  info, op)
            if op.name in SPECS:
                msg = _op_type_problem(op, info)
                if msg:
                    yield ctx.err(3, msg, info, op)


def _value_type(ctx: _Ctx, info: _KernelInfo, v: Value, op: Op | None, arg: bool = False) -> Errors:
    t = v.type
    where_op = op

    def bad(msg: str) -> VerificationError:
        if where_op is None:
            return ctx.err(3, msg, info)
        return ctx.err(3, msg, info, where_op)

    if isinstance(t, TupleType):
        stack = list(t.items)
        while stack:
            it = stack.pop()
            if isinstance(it, TupleType):
                stack.extend(it.items)
            elif not _is_value_type(it) or not dtypes.is_dtype(it.dtype):
                yield bad(f"%{v.name} has an illegal tuple item type {_tstr(it)}")
        return
    if not isinstance(t, (ScalarType, FragmentType, ViewType, BufferType)):
        yield bad(f"%{v.name} has no legal type ({t!r})")
        return
    if not isinstance(t.dtype, str) or not dtypes.is_dtype(t.dtype):
        yield bad(f"%{v.name} has unknown element type {t.dtype!r}")
    if isinstance(t, FragmentType):
        if not t.shape:
            yield bad(f"%{v.name} is a rank-0 fragment; a scalar is never a disguised fragment (IR-4.1)")
        if t.axes is not None and len(t.axes) != len(t.shape):
            yield bad(f"%{v.name} names {len(t.axes)} provenance axes for a rank-{len(t.shape)} fragment")
    if isinstance(t, BufferType) and t.scope not in BUFFER_SCOPES:
        yield bad(f"buffer %{v.name} has unknown scope {t.scope!r}")


def _op_type_problem(op: Op, info: _KernelInfo) -> str | None:
    """The first type inconsistency of ``op`` (operands/attributes vs results), or None."""
    spec = SPECS[op.name]
    cat = spec.category
    ops_, res = op.operands, op.results
    if cat in ("unary", "binary", "cast"):
        for f in ("approximate", "flush_to_zero"):
            if f in op.attrs and not isinstance(op.attrs[f], bool):
                return f"flag {f} must be true or false, not {op.attrs[f]!r}"
    if cat in ("unary", "binary", "compare", "select", "cast"):
        for v in ops_:
            if not _is_value_type(v.type):
                return f"{op.name} takes scalars or fragments, but %{v.name} is {_tstr(v.type)}"
        if not _is_value_type(res[0].type):
            return f"{op.name} gives a scalar or fragment, not {_tstr(res[0].type)}"
        rt = res[0].type
        frags = [v.type for v in ops_ if isinstance(v.type, FragmentType)]
        if cat in ("cast",):
            if value_shape(rt) != value_shape(ops_[0].type):
                return f"{op.name} keeps the shape: operand {_tstr(ops_[0].type)}, result {_tstr(rt)}"
            if op.name == "bitcast" and dtypes.BITS.get(rt.dtype) != dtypes.BITS.get(ops_[0].type.dtype):
                return f"bitcast {ops_[0].type.dtype} -> {rt.dtype} changes the element width"
            return None
        want_shape = frags[0].shape if frags else ()
        for f in frags:
            if f.shape != want_shape:
                return f"{op.name} operands have shapes {_shape_str(want_shape)} and {_shape_str(f.shape)}"
        if value_shape(rt) != want_shape:
            return f"{op.name} result {_tstr(rt)} does not have the operands' shape {_shape_str(want_shape)}"
        data = ops_[1:] if cat == "select" else ops_
        dts = {v.type.dtype for v in data}
        if len(dts) != 1:
            return f"{op.name} operands have element types {', '.join(sorted(dts))}"
        dt = next(iter(dts))
        if cat == "select" and ops_[0].type.dtype != "i1":
            return f"select's condition must be i1, not {ops_[0].type.dtype}"
        if cat == "compare":
            if op.attrs.get("pred") not in CMP_PREDICATES:
                return f"cmp predicate {op.attrs.get('pred')!r} is not one of {', '.join(CMP_PREDICATES)}"
            if rt.dtype != "i1":
                return f"cmp gives i1, not {rt.dtype}"
            return None
        if rt.dtype != dt:
            return f"{op.name} of {dt} gives {rt.dtype}"
        if op.name in FLOAT_UNARY and not dtypes.is_float(dt):
            return f"{op.name} is defined on floating point, not {dt}"
        if op.name in BITWISE and not (dtypes.is_int(dt) or dt == "i1"):
            return f"{op.name} is defined on integers and i1, not {dt}"
        if op.name in SHIFTS and not dtypes.is_int(dt):
            return f"{op.name} is defined on integers, not {dt}"
        if dt == "i1" and op.name in (set(UNARY_OPS) | set(BINARY_OPS)) - set(BITWISE) - {"max", "min"}:
            return f"{op.name} is not defined on i1"
        return None
    if op.name == "const":
        v, t = op.attrs.get("value"), res[0].type
        if not isinstance(v, (int, float, bool)):
            return f"const value {v!r} is not a number"
        if not _is_value_type(t):
            return f"const gives a scalar or fragment, not {_tstr(t)}"
        if t.dtype == "i1" and v not in (0, 1, True, False):
            return f"i1 const {v!r} is not a boolean"
        if dtypes.is_int(t.dtype) and isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
            return f"{t.dtype} const {v!r} is not an integer"
        if dtypes.is_int(t.dtype) and not isinstance(v, bool):
            lo, hi = dtypes.int_range(t.dtype)
            if not lo <= v <= hi:
                return f"{t.dtype} const {v!r} is outside the range of {t.dtype} [{lo}, {hi}]"
        return None
    if op.name == "launch":
        t = res[0].type
        if not isinstance(op.attrs.get("expr"), LaunchExpr):
            return f"launch expr {op.attrs.get('expr')!r} is not a LaunchExpr"
        if not (isinstance(t, ScalarType) and (dtypes.is_int(t.dtype) or t.dtype == "i1")):
            return f"launch gives an integer or i1 scalar, not {_tstr(t)}"
        return None
    if op.name == "range":
        t = res[0].type
        if not (isinstance(t, FragmentType) and t.rank == 1 and dtypes.is_int(t.dtype)):
            return f"range gives a rank-1 integer fragment, not {_tstr(t)}"
        if not _is_int(op.attrs.get("start", 0)):
            return f"range start {op.attrs.get('start')!r} is not an integer"
        return None
    if op.name == "broadcast":
        x, t = ops_[0].type, res[0].type
        dims = _ints(op.attrs.get("dims"))
        if not (_is_value_type(x) and isinstance(t, FragmentType)):
            return f"broadcast takes a scalar or fragment to a fragment, not {_tstr(x)} -> {_tstr(t)}"
        if x.dtype != t.dtype:
            return f"broadcast changes the element type {x.dtype} -> {t.dtype}"
        xs = value_shape(x)
        if dims is None or len(dims) != len(xs):
            return f"broadcast dims {op.attrs.get('dims')!r} must give one result axis per operand axis " \
                   f"({len(xs)})"
        if list(dims) != sorted(set(dims)) or any(not 0 <= d < t.rank for d in dims):
            return f"broadcast dims {list(dims)} must be increasing result axes of a rank-{t.rank} fragment"
        for i, d in enumerate(dims):
            if xs[i] != t.shape[d] and xs[i] != Const(1):
                return f"broadcast operand axis {i} (extent {xs[i]}) does not fit result axis {d} " \
                       f"(extent {t.shape[d]})"
        return None
    if op.name == "reshape":
        x, t = ops_[0].type, res[0].type
        if not (_is_value_type(x) and _is_value_type(t)) or x.dtype != t.dtype:
            return f"reshape keeps the element type: {_tstr(x)} -> {_tstr(t)}"
        a, b = product(value_shape(x)), product(value_shape(t))
        if a != b and not equivalent(a, b):
            return f"reshape {_tstr(x)} -> {_tstr(t)} changes the element count"
        return None
    if op.name == "transpose":
        x, t = ops_[0].type, res[0].type
        perm = _ints(op.attrs.get("perm"))
        if not isinstance(x, FragmentType) or perm is None or sorted(perm) != list(range(x.rank)):
            return f"transpose perm {op.attrs.get('perm')!r} is not a permutation of the operand's axes"
        want = FragmentType(x.dtype, tuple(x.shape[p] for p in perm))
        if not _same_type(t, want):
            return f"transpose gives {_tstr(want)}, not {_tstr(t)}"
        return None
    if op.name == "join":
        a, b, t = ops_[0].type, ops_[1].type, res[0].type
        if not isinstance(a, FragmentType) or not _same_type(a, b):
            return f"join takes two fragments of one type, not {_tstr(a)} and {_tstr(b)}"
        want = FragmentType(a.dtype, a.shape + (Const(2),))
        if not _same_type(t, want):
            return f"join gives {_tstr(want)}, not {_tstr(t)}"
        return None
    if op.name == "extract":
        x, t = ops_[0].type, res[0].type
        idx = _ints(op.attrs.get("index"))
        if not isinstance(x, FragmentType) or idx is None or len(idx) != x.rank:
            return f"extract index {op.attrs.get('index')!r} must give one position per fragment axis"
        for i, e in zip(idx, x.shape):
            n = static_extent(e)
            if i < 0 or (n is not None and i >= n):
                return f"extract index {list(idx)} is outside {_tstr(x)}"
        if t != ScalarType(x.dtype):
            return f"extract gives {x.dtype}, not {_tstr(t)}"
        return None
    if op.name in ("tuple", "record"):
        t = res[0].type
        if op.name == "record":
            fields = op.attrs.get("fields")
            if not isinstance(fields, (tuple, list)) or len(fields) != len(ops_) or \
                    len(set(fields)) != len(fields) or not all(isinstance(f, str) for f in fields):
                return f"record fields {fields!r} must name each operand once"
        want = TupleType(tuple(v.type for v in ops_))
        if not _same_type(t, want):
            return f"{op.name} gives {_tstr(want)}, not {_tstr(t)}"
        return None
    if op.name in ("get", "field"):
        x, t = ops_[0].type, res[0].type
        if not isinstance(x, TupleType):
            return f"{op.name} takes a tuple or record, not {_tstr(x)}"
        if op.name == "get":
            i = op.attrs.get("index")
        else:
            src = info.def_op.get(ops_[0].name)
            fields = src.attrs.get("fields", ()) if src is not None and src.name == "record" else ()
            name = op.attrs.get("name")
            if name not in fields:
                return f"field {name!r} is not a field of the record %{ops_[0].name}"
            i = list(fields).index(name)
        if not _is_int(i) or not 0 <= i < len(x.items):
            return f"get index {i!r} is outside {_tstr(x)}"
        if not _same_type(t, x.items[i]):
            return f"{op.name} gives {_tstr(x.items[i])}, not {_tstr(t)}"
        return None
    if op.name in ACCESS_OPS:
        parts = _access_parts(op)
        if parts is None:
            return None  # the layout is invariant 5's
        resource, coords, payload, _ = parts
        for c in coords:
            if not _is_value_type(c.type) or not dtypes.is_int(c.type.dtype):
                return f"coordinate %{c.name} of {op.name} is {_tstr(c.type)}, not an integer/index value"
        rdt = getattr(resource.type, "dtype", None)
        if op.name in READ_ACCESSES and res:
            if not _is_value_type(res[0].type) or res[0].type.dtype != rdt:
                return f"{op.name} of {_tstr(resource.type)} gives {_tstr(res[0].type)}, not a {rdt} value"
        if op.name in ("atomic_rmw", "atomic_cas") and res and payload:
            if not _same_type(res[0].type, payload[-1].type):
                return f"{op.name} returns the old values, typed as its payload {_tstr(payload[-1].type)}, " \
                       f"not {_tstr(res[0].type)}"
        return None
    if op.name == "alloc":
        if not isinstance(res[0].type, BufferType):
            return f"alloc gives a buffer, not {_tstr(res[0].type)}"
        return None
    if op.name in ("contract", "scaled_contract"):
        lay = _contract_layout(op)
        if lay is None:
            return None  # the schema is invariant 8's
        lhs, rhs, acc, axes = lay
        want = _contract_result_shape(lhs, rhs, axes)
        if not isinstance(acc, FragmentType) or acc.shape != want:
            return f"{op.name} accumulator {_tstr(acc)} does not have the result shape {_shape_str(want)} " \
                   "(batch, lhs free, rhs free)"
        if not _same_type(res[0].type, acc):
            return f"{op.name} gives the accumulator type {_tstr(acc)}, not {_tstr(res[0].type)}"
        return None
    if op.name == "reduce":
        axes = _ints(op.attrs.get("axes"))
        for x, r in zip(ops_, res):
            if not isinstance(x.type, FragmentType) or not _axes_ok(axes, x.type.rank):
                return None  # invariant 8
            want = _drop_axes(x.type, axes)
            if not _same_type(r.type, want):
                return f"reduce over axes {list(axes)} of {_tstr(x.type)} gives {_tstr(want)}, not {_tstr(r.type)}"
        return None
    if op.name == "scan":
        for x, r in zip(ops_, res):
            if not _same_type(x.type, r.type):
                return f"scan keeps its operand type {_tstr(x.type)}, not {_tstr(r.type)}"
        return None
    if op.name in ("region_fold", "region_scan"):
        for v in ops_[:3]:
            if not (isinstance(v.type, ScalarType) and dtypes.is_int(v.type.dtype)):
                return f"{op.name} bounds are integer scalars; %{v.name} is {_tstr(v.type)}"
        for x, r in zip(ops_[3:], res):
            if not _same_type(x.type, r.type):
                return f"{op.name} result {_tstr(r.type)} does not have its initial value's type {_tstr(x.type)}"
        return None
    if op.name == "for":
        for v in ops_[:3]:
            if not (isinstance(v.type, ScalarType) and dtypes.is_int(v.type.dtype)):
                return f"for bounds are integer scalars; %{v.name} is {_tstr(v.type)}"
        inits = ops_[3:]
        if len(res) != len(inits):
            return f"for gives {len(res)} results for {len(inits)} carried values"
        for x, r in zip(inits, res):
            if not _same_type(x.type, r.type):
                return f"for result %{r.name} is {_tstr(r.type)} but its carried value is {_tstr(x.type)}"
        return None
    if op.name == "if":
        if ops_[0].type != ScalarType("i1"):
            return f"if takes a scalar i1 condition, not {_tstr(ops_[0].type)}"
        return None
    if op.name == "execution_group":
        if ops_[0].type != ScalarType("index"):
            return f"execution_group takes the index program coordinate, not {_tstr(ops_[0].type)}"
        return None
    return None


# ================================================================================================ invariant 4

_INT_OPS = ("+", "-", "*", "//", "%", "ceil_div", "min", "max")


@_check("extents", 4, "shapes_params")
def check_extents(ctx: _Ctx) -> Errors:
    """IR-10 (4), IR-4.2: fragment (and buffer) extents are constants or declared-parameter expressions.

    This covers fragments and program/iteration-private buffers (owned by one instance); a workspace buffer spans
    the invocation and is shaped like its private ABI view (invariant 7). Leaves are positive integer constants or
    symbols naming a declared module parameter; never an ABI scalar, a view shape symbol or view metadata
    (``dim``/``stride``); operations are integer arithmetic (or select); with every parameter at its default the
    extent is a positive integer.
    """
    defaults = {p.name: p.default for p in ctx.module.params}
    for info in ctx.infos:
        seen: set[str] = set()
        for op in info.ops:
            values = [(a, op) for reg in op.regions for a in reg.args] + [(r, op) for r in op.results]
            for v, owner in values:
                if v.name in seen or not isinstance(v.type, (FragmentType, BufferType)):
                    continue
                if isinstance(v.type, BufferType) and v.type.scope == "workspace":
                    continue  # an invocation workspace is shaped like its ABI view (invariants 7 and 10)
                seen.add(v.name)
                for e in v.type.shape:
                    msg = _extent_problem(e, ctx.param_names, defaults)
                    if msg:
                        yield ctx.err(4, f"extent {e} of %{v.name}: {msg}", info, owner)
                        break


def _extent_problem(e: Any, params: set[str], defaults: dict[str, int]) -> str | None:
    if not isinstance(e, LaunchExpr):
        return f"{e!r} is not a constant or parameter expression"
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Sym):
            if n.name not in params:
                return f"symbol {n.name!r} is not a declared parameter (ABI scalars and shape symbols are " \
                       "runtime values)"
        elif isinstance(n, (Dim, Stride)):
            return "view metadata is a runtime value, not a parameter"
        elif isinstance(n, Const):
            if not _is_int(n.value):
                return f"constant {n.value!r} is not an integer"
        elif isinstance(n, BinOp):
            if n.op not in _INT_OPS:
                return f"operator {n.op!r} does not give an integer extent"
        elif not isinstance(n, Select):
            return f"{type(n).__name__} does not give an integer extent"
        stack.extend(children(n))
    try:
        val = evaluate(e, defaults)
    except IntentError as exc:
        return f"cannot be evaluated at the parameter defaults ({exc.message})"
    if isinstance(val, bool) or not isinstance(val, int) or val <= 0:
        return f"is {val!r} at the parameter defaults; an extent is a positive integer"
    return None


# ================================================================================================ invariant 5

@_check("accesses", 5, "accesses")
def check_accesses(ctx: _Ctx) -> Errors:
    """IR-10 (5), IR-6: every access has a resource, coordinates, active set/validity and fill/effect.

    The resource is a view ABI value (buffer_load/store: an alloc'd buffer); one coordinate per resource axis,
    each broadcastable to the accessed member set (the result or payload shape); ``valid = true`` iff a trailing
    i1 validity operand broadcastable to that set; ``fill`` present iff the read is validated (an invalid load
    touches no memory and yields the fill); payload dtype = resource dtype; atomics carry a memory order legal for
    their kind and a sharing domain; RMW has a kind, scatter_reduce a combiner, both legal for the dtype.

    The validity composes the logical predicate *and the bounds* (IR-6): an access that provably goes out of bounds
    with a member its validity does not exclude is rejected. "Provably" means at a launch probe
    (:mod:`intent_eqsat.ir.launch_probe`): at a concrete legal launch the kernel's data-independent index
    arithmetic runs in a program instance and loop iteration that really execute, and a valid member lies outside
    the resource. Coordinates or validity computed from device data or by-value scalars are left to the run-time
    check (the interpreter's, a provider's).
    """
    for info in ctx.infos:
        broken = False
        for op in info.ops:
            if op.name not in ACCESS_OPS:
                continue
            msg = _access_problem(op)
            if msg:
                broken = True
                yield ctx.err(5, msg, info, op)
        if not broken:
            for f in ctx.probe(info):
                if f.kind == "bounds":
                    yield ctx.err(5, f.message, info, f.op)


def _access_problem(op: Op) -> str | None:
    valid = op.attrs.get("valid", False)
    if not isinstance(valid, bool):
        return f"valid must be true or false, not {valid!r}"
    parts = _access_parts(op)
    if parts is None:
        return f"{op.name} has too few operands for its layout (resource, coordinates, payload, validity)"
    resource, coords, payload, validity = parts
    rt = resource.type
    if op.name in ("buffer_load", "buffer_store"):
        if not isinstance(rt, BufferType):
            return f"{op.name} accesses a buffer, but %{resource.name} is {_tstr(rt)}"
    elif op.name in ATOMIC_ACCESSES and isinstance(rt, BufferType):
        if rt.scope != "workspace":   # SPEC IR-4.4: only a workspace is shared by program instances
            return f"{op.name} on %{resource.name} {_tstr(rt)}: atomics reach a view or a workspace buffer, " \
                   "not a program- or iteration-private buffer"
    elif not isinstance(rt, ViewType):
        return f"{op.name} accesses a view, but %{resource.name} is {_tstr(rt)}"
    if len(coords) != rt.rank:
        return f"{op.name} of rank-{rt.rank} %{resource.name} has {len(coords)} coordinate(s); it needs one " \
               "per axis"
    checked = op.attrs.get("checked")
    if checked is not None:      # data-dependent coordinates checked at run time (issue 25.2): distinct positions
        if not checked or sorted(set(checked)) != list(checked) or not all(0 <= a < len(coords) for a in checked):
            return f"checked = {list(checked)} must list distinct coordinate positions in increasing order, each " \
                   f"in [0, {len(coords)})"
    shape = _access_shape(op, parts)
    for c in coords:
        if not _broadcastable(value_shape(c.type), shape):
            return f"coordinate %{c.name} {_tstr(c.type)} does not broadcast to the accessed shape " \
                   f"{_shape_str(shape)}"
    for p in payload:
        if getattr(p.type, "dtype", None) != rt.dtype:
            return f"payload %{p.name} is {_tstr(p.type)} but %{resource.name} holds {rt.dtype}"
        if value_shape(p.type) != shape:
            return f"payload %{p.name} {_tstr(p.type)} does not have the accessed shape {_shape_str(shape)}"
    if validity is not None:
        if not _is_value_type(validity.type) or validity.type.dtype != "i1":
            return f"validity %{validity.name} is {_tstr(validity.type)}, not i1"
        if not _broadcastable(value_shape(validity.type), shape):
            return f"validity %{validity.name} {_tstr(validity.type)} does not broadcast to the accessed shape " \
                   f"{_shape_str(shape)}"
    if op.name in READ_ACCESSES:
        fill = op.attrs.get("fill")
        if valid and fill is None:
            return f"validated {op.name} has no fill (an invalid member touches no memory and yields the fill)"
        if not valid and fill is not None:
            return f"{op.name} without validity carries a fill {fill!r} that can never apply"
        if fill is not None and not isinstance(fill, (int, float, bool)):
            return f"fill {fill!r} is not a number"
        if fill is not None and _unrepresentable(fill, rt.dtype):
            return f"fill {fill!r} is {_unrepresentable(fill, rt.dtype)}"
    if op.name in ATOMIC_ACCESSES:
        order, domain = op.attrs.get("order"), op.attrs.get("domain")
        if order not in MEMORY_ORDERS:
            return f"{op.name} needs a memory order ({', '.join(MEMORY_ORDERS)}), not {order!r}"
        if domain not in SHARING_DOMAINS:
            return f"{op.name} needs a sharing domain ({', '.join(SHARING_DOMAINS)}), not {domain!r}"
        if op.name == "atomic_load" and order in ("release", "acq_rel"):
            return f"an atomic load cannot have {order} order"
        if op.name == "atomic_store" and order in ("acquire", "acq_rel"):
            return f"an atomic store cannot have {order} order"
    if op.name == "atomic_rmw":
        kind = op.attrs.get("kind")
        if kind not in RMW_KINDS:
            return f"atomic_rmw kind {kind!r} is not one of {', '.join(RMW_KINDS)}"
        if kind in ("and", "or", "xor") and not (dtypes.is_int(rt.dtype) or rt.dtype == "i1"):
            return f"atomic_rmw {kind} is not defined on {rt.dtype}"
    if op.name == "scatter_reduce":
        comb = op.attrs.get("combine")
        if comb not in COMBINERS:
            return f"scatter_reduce needs a combiner ({', '.join(COMBINERS)}), not {comb!r}"
        if comb in ("and", "or", "xor") and not (dtypes.is_int(rt.dtype) or rt.dtype == "i1"):
            return f"scatter_reduce {comb} is not defined on {rt.dtype}"
    return None


# ================================================================================================ invariant 6

@_check("regions", 6, "control")
def check_regions(ctx: _Ctx) -> Errors:
    """IR-10 (6), IR-5: every region has complete arguments, yields and dominance.

    Region arguments match the parent's schema (for: index iv + carried values typed as the inits; if: none;
    while: cond(carried) / body(cond's values); reduce/scan combiner: 2n scalars of the operand dtypes;
    region_fold: summarize(index), combine(2k); region_scan: summarize(index), combine(k + s), emit(index, k);
    execution_group arity belongs to invariant 2). Every region ends in exactly one ``yield`` (none elsewhere)
    giving the right count and types (for: the carried values; if: the results; while: (i1, values) and the
    carried values; combiners: n scalars; groups and the body: nothing). Every operand is defined earlier in the
    same region or an enclosing one, with the type it was defined with; value names are unique in the kernel.
    """
    for info in ctx.infos:
        k = info.kernel
        names: set[str] = set()
        for a in k.body.args:
            if a.name in names:
                yield ctx.err(6, f"value name %{a.name} is defined twice", info)
            names.add(a.name)
        for op in info.ops:
            for v in [a for reg in op.regions for a in reg.args] + list(op.results):
                if v.name in names:
                    yield ctx.err(6, f"value name %{v.name} is defined twice", info, op)
                names.add(v.name)
        yield from _dominance(ctx, info, k.body, {a.name: a for a in k.body.args})
        for region, owner in [(k.body, None)] + [(r, op) for op in info.ops for r in op.regions]:
            for i, op in enumerate(region.ops):
                if op.name == "yield" and i != len(region.ops) - 1:
                    yield ctx.err(6, "yield is not the last op of its region", info, op)
            if owner is not None and _yield_of(region) is None:
                yield ctx.err(6, f"a region of {owner.name} does not end in yield", info, owner)
        if _yield_of(k.body) is not None and _yield_of(k.body).operands:
            yield ctx.err(6, "the kernel body yields values; it yields nothing", info, _yield_of(k.body))
        for op in info.ops:
            if op.name in SPECS and op.regions:
                msg = _region_problem(op)
                if msg:
                    where = op
                    if msg[0] is not None:
                        where = msg[0]
                    yield ctx.err(6, msg[1], info, where)


def _dominance(ctx: _Ctx, info: _KernelInfo, region: Region, visible: dict[str, Value]) -> Errors:
    scope = dict(visible)
    for a in region.args:
        scope[a.name] = a
    for op in region.ops:
        for v in op.operands:
            d = scope.get(v.name)
            if d is None:
                where = "in a nested or sibling region, or later" if v.name in info.def_op or \
                    v.name in info.arg_owner else "nowhere"
                yield ctx.err(6, f"operand %{v.name} does not dominate its use: it is defined {where}", info, op)
            elif d.type != v.type:
                yield ctx.err(6, f"operand %{v.name} is used as {_tstr(v.type)} but defined as {_tstr(d.type)}",
                              info, op)
        for r in op.regions:
            yield from _dominance(ctx, info, r, scope)
        for r in op.results:
            scope[r.name] = r


def _types_match(values: list[Value], types: list[Type]) -> bool:
    return len(values) == len(types) and all(_same_type(v.type, t) for v, t in zip(values, types))


def _fmt_types(types: Iterable[Type]) -> str:
    return "(" + ", ".join(_tstr(t) for t in types) + ")"


def _region_problem(op: Op) -> tuple[Op | None, str] | None:
    """(op to blame or None for ``op``, message) for the first region-schema problem of ``op``."""
    regs = op.regions
    if op.name == "for":
        body = regs[0]
        inits = [v.type for v in op.operands[3:]]
        want = [ScalarType("index")] + inits
        if not _types_match(body.args, want):
            return None, f"for region arguments {_fmt_types(a.type for a in body.args)} must be " \
                         f"(index iv, carried {_fmt_types(inits)[1:-1]})"
        ys = _yielded(body)
        if not _types_match(ys, inits):
            return _yield_of(body), f"for body yields {_fmt_types(v.type for v in ys)}; the carried values " \
                                    f"are {_fmt_types(inits)}"
        return None
    if op.name == "if":
        for r in regs:
            if r.args:
                return None, "if regions take no arguments"
        for r in regs:
            ys = _yielded(r)
            if not _types_match(ys, [v.type for v in op.results]):
                return _yield_of(r), f"if branch yields {_fmt_types(v.type for v in ys)}; the results are " \
                                     f"{_fmt_types(v.type for v in op.results)}"
        return None
    if op.name == "while":
        cond, body = regs
        if not _types_match(cond.args, [v.type for v in op.operands]):
            return None, "while cond region arguments must match the initial values"
        cys = _yielded(cond)
        if not cys or cys[0].type != ScalarType("i1"):
            return _yield_of(cond), "while cond region yields (i1 condition, values...)"
        vals = [v.type for v in cys[1:]]
        if not _types_match(body.args, vals):
            return None, f"while body region arguments must be the cond region's values {_fmt_types(vals)}"
        if not _types_match(_yielded(body), [v.type for v in op.operands]):
            return _yield_of(body), "while body yields the carried values typed as the initial values"
        if not _types_match(op.results, vals):
            return None, f"while results must be the cond region's values {_fmt_types(vals)}"
        return None
    if op.name in ("reduce", "scan"):
        if not regs:
            return None
        scalars = [ScalarType(v.type.dtype) for v in op.operands if hasattr(v.type, "dtype")]
        if not _types_match(regs[0].args, scalars * 2):
            return None, f"{op.name} combiner takes 2n scalars {_fmt_types(scalars * 2)}, not " \
                         f"{_fmt_types(a.type for a in regs[0].args)}"
        if not _types_match(_yielded(regs[0]), scalars):
            return _yield_of(regs[0]), f"{op.name} combiner yields n scalars {_fmt_types(scalars)}"
        return None
    if op.name == "region_fold":
        summarize, combine = regs
        k = len(op.operands) - 3
        if not _types_match(summarize.args, [ScalarType("index")]):
            return None, "region_fold summarize region takes one index argument (the segment start)"
        if len(combine.args) != 2 * k:
            return None, f"region_fold combine region takes {2 * k} arguments (acc..., summary...), not " \
                         f"{len(combine.args)}"
        return None
    if op.name == "region_scan":
        summarize, combine, emit = regs
        k = len(op.operands) - 3
        s = len(_yielded(summarize))
        if not _types_match(summarize.args, [ScalarType("index")]):
            return None, "region_scan summarize region takes one index argument (the segment start)"
        if len(combine.args) != k + s:
            return None, f"region_scan combine region takes {k + s} arguments (state..., summary...), not " \
                         f"{len(combine.args)}"
        if len(emit.args) != 1 + k or (emit.args and emit.args[0].type != ScalarType("index")):
            return None, f"region_scan emit region takes (index, {k} incoming state values)"
        return None
    if op.name == "execution_group":
        if _yielded(regs[0]):
            return _yield_of(regs[0]), "an execution_group region yields nothing"
    return None


def _ticket_exempt(info: _KernelInfo, op: Op, labels: dict[str, frozenset],
                   buffers: dict[str, Type]) -> frozenset | None:
    found = _ticket_guard(info, op, labels, buffers)
    return None if found is None else found[0]


def _ticket_guard(info: _KernelInfo, op: Op, labels: dict[str, frozenset],
                  buffers: dict[str, Type]) -> tuple[frozenset, Op] | None:
    """The program-coordinate labels a write under a *ticket guard* need not depend on (None: no guard).

    The guard is an enclosing ``if(cmp eq(t, c))`` where ``t`` is a ticket: the old value of
    ``atomic_rmw{kind = add}(ctr, coords, 1)`` on a workspace buffer initialized to 0, executed once by every
    program instance (outside any loop or ``if`` of its group), the only write of that buffer, its coordinates
    computed without reading memory; and ``c`` reads no program coordinate. The instances that draw from one
    counter element draw distinct tickets, so at most one of them sees ``t == c``; the instances that differ only
    in coordinates the counter coordinates do not read share the element. Those coordinates are exempt: the
    last-arriver combine of a split reduction (SPEC IR-9: instances meet only through atomics; no barrier)."""
    for anc in info.ancestors(op):
        if anc.name != "if" or not anc.operands:
            continue
        cond = info.def_op.get(anc.operands[0].name)
        if cond is None or cond.name != "cmp" or cond.attrs.get("pred") != "eq" or len(cond.operands) != 2:
            continue
        for t, c in (cond.operands, cond.operands[::-1]):
            coords = _ticket_coords(info, t, buffers)
            if coords is not None and not labels.get(c.name):
                read = frozenset().union(*(labels.get(v.name, frozenset()) for v in coords))
                every = frozenset().union(*labels.values()) if labels else frozenset()
                return every - read, info.def_op[t.name]
    return None


#: ticket orders that make the last arriver's plain workspace reads see every program's earlier stores
_ORDERING_TICKETS = ("acq_rel", "seq_cst")


def _unordered_workspace_read(info: _KernelInfo, op: Op, labels: dict[str, frozenset],
                              buffers: dict[str, Type]) -> str | None:
    """Why a ``buffer_load`` of a workspace buffer may race with another instance's store (None: it cannot).

    A workspace is shared by the launch's instances (SPEC IR-4.4, IR-9), so a plain read of one is ordered after
    the other instances' stores only under a ticket guard (:func:`_ticket_guard`) whose draw is ``acq_rel`` (or
    ``seq_cst``): each instance's draw releases its earlier stores, the guarded instance's draw acquires them all.
    The split reductions' last-arriver combine reads its partials this way. A read of the very coordinates the
    instance itself stored just before (a ``buffer_store`` of the buffer earlier in the same region, with the same
    coordinate values) reads its own write and needs no guard."""
    bt = buffers.get(op.operands[0].name)
    if not (isinstance(bt, BufferType) and bt.scope == "workspace"):
        return None

    def coords(a: Op) -> list[str]:
        n, _ = access_layout(a.name, len(a.operands), bool(a.attrs.get("valid")))
        return [v.name for v in a.operands[1:1 + n]]
    region, _ = info.parent[id(op)]
    earlier = region.ops[:next(i for i, o in enumerate(region.ops) if o is op)]
    if any(w.name == "buffer_store" and w.operands[0].name == op.operands[0].name and coords(w) == coords(op)
           for w in earlier):
        return None
    found = _ticket_guard(info, op, labels, buffers)
    if found is None:
        return (f"buffer_load of workspace %{op.operands[0].name} outside a ticket guard: other program instances "
                f"may still be writing it (read it under if(cmp eq(ticket, c)) of an acq_rel ticket, or atomically)")
    order = found[1].attrs.get("order")
    if order not in _ORDERING_TICKETS:
        return (f"buffer_load of workspace %{op.operands[0].name} under a ticket drawn with order {order}: the draw "
                f"must be acq_rel (or seq_cst) to order the other instances' stores before this read")
    return None


def _ticket_coords(info: _KernelInfo, v: Value, buffers: dict[str, Type]) -> list[Value] | None:
    """The counter coordinates of ticket ``v`` (see :func:`_ticket_exempt`), None when ``v`` is no ticket."""
    rmw = info.def_op.get(v.name)
    if rmw is None or rmw.name != "atomic_rmw" or rmw.attrs.get("kind") != "add" or rmw.attrs.get("valid"):
        return None
    ctr = rmw.operands[0]
    bt = buffers.get(ctr.name)
    alloc = info.def_op.get(ctr.name)
    if not (isinstance(bt, BufferType) and bt.scope == "workspace" and alloc is not None
            and alloc.attrs.get("init") == 0):
        return None
    coords, one = rmw.operands[1:-1], rmw.operands[-1]
    if _const_value(info, one) != 1 or not all(isinstance(c.type, ScalarType) for c in coords):
        return None
    if any(_reads_memory(info, c) for c in coords):
        return None
    if any(a.name in ("for", "while", "if") for a in _until_group(info, rmw)):
        return None                       # drawn exactly once per instance
    writers = [o for o in info.ops if o.name in WRITE_ACCESSES and o.operands and o.operands[0].name == ctr.name]
    return list(coords) if writers == [rmw] else None


def _reads_memory(info: _KernelInfo, v: Value) -> bool:
    """Whether ``v``'s value depends on an access (its backward slice through defining ops)."""
    seen: set[str] = set()
    todo = [v]
    while todo:
        x = todo.pop()
        if x.name in seen:
            continue
        seen.add(x.name)
        d = info.def_op.get(x.name)
        if d is None:
            continue
        if d.name in ACCESS_OPS or d.regions:
            return True
        todo.extend(d.operands)
    return False


def _until_group(info: _KernelInfo, op: Op) -> Iterator[Op]:
    for a in info.ancestors(op):
        if a.name == "execution_group":
            return
        yield a


def _const_value(info: _KernelInfo, v: Value) -> Any:
    d = info.def_op.get(v.name)
    if d is None or d.name != "const" or not isinstance(v.type, ScalarType):
        return None
    return d.attrs.get("value")


# ================================================================================================ invariant 7

@_check("buffers", 7, "buffers")
def check_buffers(ctx: _Ctx) -> Errors:
    """IR-10 (7), IR-4.4: every buffer has an init or first-write obligation, a lifetime and an owner.

    ``alloc`` has ``init`` = a number (the full initial value) or ``first_write``; ``owner`` is a non-empty
    string; scope ``workspace`` names (``arg``) a private view ABI argument of its dtype and shape, other scopes
    name none;
    a ``program`` buffer is allocated outside loops of its execution group (initialized exactly once per
    instance) and an ``iteration`` buffer inside one; a buffer value is used only as the resource of
    buffer_load/buffer_store, or of atomics for a workspace (it never escapes its region); a ``first_write`` buffer is stored before any load in
    program order.
    """
    for info in ctx.infos:
        k = info.kernel
        abi = {a.name: a for a in k.abi}
        for op in info.ops:
            if op.name != "alloc" or not op.results:
                continue
            buf = op.results[0]
            bt = buf.type
            init = op.attrs.get("init")
            if not (init == "first_write" or _is_number(init) or isinstance(init, bool)):
                yield ctx.err(7, f"buffer %{buf.name} init {init!r} is neither a number (the full initial value) "
                                 "nor first_write", info, op)
            elif init != "first_write" and _unrepresentable(init, getattr(bt, "dtype", None)):
                yield ctx.err(7, f"buffer %{buf.name} init {init!r} is "
                                 f"{_unrepresentable(init, getattr(bt, 'dtype', None))}", info, op)
            owner = op.attrs.get("owner", "program")
            if not isinstance(owner, str) or not owner:
                yield ctx.err(7, f"buffer %{buf.name} has no ownership domain", info, op)
            if not isinstance(bt, BufferType):
                continue
            arg = op.attrs.get("arg")
            if bt.scope == "workspace":
                a = abi.get(arg) if isinstance(arg, str) else None
                if a is None or not a.is_view or not a.private:
                    yield ctx.err(7, f"workspace buffer %{buf.name} must name its private view ABI argument "
                                     f"(arg = {arg!r})", info, op)
                elif a.value.type.dtype != bt.dtype or a.value.type.shape != bt.shape:
                    yield ctx.err(7, f"workspace buffer %{buf.name} {_tstr(bt)} does not match its ABI argument "
                                     f"%{a.name} {_tstr(a.value.type)}", info, op)
            elif arg is not None:
                yield ctx.err(7, f"{bt.scope} buffer %{buf.name} names an ABI argument; only a workspace does",
                              info, op)
            depth = info.loop_depth_in_group(op)
            if bt.scope == "program" and depth:
                yield ctx.err(7, f"program buffer %{buf.name} is allocated inside a loop, so it would be "
                                 "re-initialized every iteration; use scope iteration", info, op)
            if bt.scope == "iteration" and not depth:
                yield ctx.err(7, f"iteration buffer %{buf.name} is allocated outside any loop", info, op)
            first: Op | None = None
            for use in info.ops:
                for i, v in enumerate(use.operands):
                    if v.name != buf.name:
                        continue
                    reaches = ("buffer_load", "buffer_store") + (ATOMIC_ACCESSES if bt.scope == "workspace" else ())
                    if use.name not in reaches or i != 0:
                        yield ctx.err(7, f"buffer %{buf.name} escapes: used as operand {i} of {use.name}; a "
                                         "buffer is only the resource of buffer_load/buffer_store (and of atomics "
                                         "for a workspace)", info, use)
                    elif first is None:
                        first = use
            if init == "first_write" and first is not None and first.name == "buffer_load":
                yield ctx.err(7, f"first_write buffer %{buf.name} is loaded before any store", info, first)


# ================================================================================================ invariant 8

@_check("structured", 8, "structured")
def check_structured(ctx: _Ctx) -> Errors:
    """IR-10 (8), IR-8: every structured op has complete operands, results and semantic schema.

    reduce: valid unique axes, one identity per component, components of one shape, a known combiner (region iff
    combine = region), bitwise combiners on integers; scan: valid axis, identities, combiner, bool direction and
    inclusivity; argreduce: valid axis, results (value of the operand dtype, integer index) without the axis;
    contract/scaled_contract: fragments, paired contract and batch axes valid/disjoint/equal in extent, operands
    both float or both integer with an accumulator of the same kind, known precision, positive scale block;
    histogram: integer input, validity iff valid = true, an integer rank-1 result; region_fold/region_scan:
    at least one identity/state value, results and region yields matching them.
    """
    for info in ctx.infos:
        for op in info.ops:
            if op.name in SPECS and SPECS[op.name].category == "structured":
                msg = _structured_problem(op)
                if msg:
                    yield ctx.err(8, msg, info, op)


def _combiner_problem(op: Op) -> str | None:
    comb = op.attrs.get("combine")
    if comb not in COMBINERS + ("region",):
        return f"{op.name} combiner {comb!r} is not one of {', '.join(COMBINERS)} or region"
    if (comb == "region") != bool(op.regions):
        return f"{op.name} has a combiner region iff combine = region (combine = {comb}, " \
               f"{len(op.regions)} region(s))"
    ident = op.attrs.get("identity")
    if not isinstance(ident, (tuple, list)) or len(ident) != len(op.operands) or \
            not all(isinstance(i, (int, float, bool)) for i in ident):
        return f"{op.name} needs one numeric identity per component ({len(op.operands)}), not {ident!r}"
    for i, v in zip(ident, op.operands):
        if _unrepresentable(i, _dtype(v)):
            return f"{op.name} identity {i!r} of %{v.name} is {_unrepresentable(i, _dtype(v))}"
    shapes = {value_shape(v.type) for v in op.operands}
    if len(shapes) != 1 or not all(isinstance(v.type, FragmentType) for v in op.operands):
        return f"{op.name} components are fragments of one shape"
    if comb in ("and", "or", "xor") and not all(_is_int_dtype(_dtype(v)) or _dtype(v) == "i1"
                                                 for v in op.operands):
        return f"{op.name} combiner {comb} is defined on integers and i1"
    return None


def _structured_problem(op: Op) -> str | None:
    ops_, res = op.operands, op.results
    if op.name == "reduce":
        msg = _combiner_problem(op)
        if msg:
            return msg
        axes = _ints(op.attrs.get("axes"))
        rank = ops_[0].type.rank
        if not _axes_ok(axes, rank, allow_empty=False):
            return f"reduce axes {op.attrs.get('axes')!r} must be distinct axes of a rank-{rank} fragment"
        if len(res) != len(ops_):
            return f"reduce gives one result per component ({len(ops_)}), not {len(res)}"
        return None
    if op.name == "scan":
        msg = _combiner_problem(op)
        if msg:
            return msg
        axis = op.attrs.get("axis")
        rank = ops_[0].type.rank
        if not _is_int(axis) or not 0 <= axis < rank:
            return f"scan axis {axis!r} is not an axis of a rank-{rank} fragment"
        for f in ("reverse", "exclusive"):
            if not isinstance(op.attrs.get(f, False), bool):
                return f"scan {f} must be true or false"
        if len(res) != len(ops_):
            return f"scan gives one result per component ({len(ops_)}), not {len(res)}"
        return None
    if op.name == "argreduce":
        x = ops_[0].type
        axis = op.attrs.get("axis")
        if not isinstance(x, FragmentType) or not _is_int(axis) or not 0 <= axis < x.rank:
            return f"argreduce axis {axis!r} is not an axis of {_tstr(x)}"
        if op.attrs.get("kind") not in ("max", "min"):
            return f"argreduce kind {op.attrs.get('kind')!r} is not max or min"
        if op.attrs.get("tie", "lowest") != "lowest" or op.attrs.get("nan", "propagate") not in ("propagate",
                                                                                                   "ignore"):
            return "argreduce tie is lowest and nan is propagate or ignore"
        want = _drop_axes(x, [axis])
        val, idx = res
        if not _same_type(val.type, want):
            return f"argreduce value result is {_tstr(want)}, not {_tstr(val.type)}"
        if value_shape(idx.type) != value_shape(want) or not _is_int_dtype(_dtype(idx)):
            return f"argreduce index result is an integer value shaped like {_tstr(want)}, not {_tstr(idx.type)}"
        return None
    if op.name in ("contract", "scaled_contract"):
        if op.name == "contract":
            lhs, rhs, acc = ops_
        else:
            lhs, _, rhs, _, acc = ops_
            sb = op.attrs.get("scale_block")
            if not _is_int(sb) or sb <= 0:
                return f"scaled_contract scale_block {sb!r} is not a positive integer"
            for x, s in ((ops_[0], ops_[1]), (ops_[2], ops_[3])):
                if not isinstance(s.type, FragmentType) or not isinstance(x.type, FragmentType) or \
                        s.type.rank != x.type.rank:
                    return f"scale %{s.name} must be a fragment of the rank of %{x.name}"
        for v in (lhs, rhs, acc):
            if not isinstance(v.type, FragmentType):
                return f"{op.name} operand %{v.name} is {_tstr(v.type)}, not a fragment"
        lt, rt, at = lhs.type, rhs.type, acc.type
        axes = {}
        for key in ("lhs_contract", "rhs_contract", "lhs_batch", "rhs_batch"):
            axes[key] = _ints(op.attrs.get(key, ()))
            if axes[key] is None:
                return f"{op.name} {key} {op.attrs.get(key)!r} is not a list of axes"
        lc, rc, lb, rb = axes["lhs_contract"], axes["rhs_contract"], axes["lhs_batch"], axes["rhs_batch"]
        if len(lc) != len(rc):
            return f"{op.name} pairs {len(lc)} lhs contract axes with {len(rc)} rhs axes"
        if len(lb) != len(rb):
            return f"{op.name} pairs {len(lb)} lhs batch axes with {len(rb)} rhs axes"
        if not _axes_ok(lc + lb, lt.rank):
            return f"{op.name} lhs axes {list(lc)} / batch {list(lb)} must be distinct axes of {_tstr(lt)}"
        if not _axes_ok(rc + rb, rt.rank):
            return f"{op.name} rhs axes {list(rc)} / batch {list(rb)} must be distinct axes of {_tstr(rt)}"
        for a, b in zip(lc + lb, rc + rb):
            if lt.shape[a] != rt.shape[b]:
                return f"{op.name} pairs lhs axis {a} (extent {lt.shape[a]}) with rhs axis {b} " \
                       f"(extent {rt.shape[b]})"
        kinds = {"float" if dtypes.is_float(t.dtype) else "int" if dtypes.is_int(t.dtype) else t.dtype
                 for t in (lt, rt)}
        if kinds not in ({"float"}, {"int"}):
            return f"{op.name} operands {lt.dtype} x {rt.dtype} must be both floating point or both integer"
        akind = "float" if dtypes.is_float(at.dtype) else "int" if dtypes.is_int(at.dtype) else at.dtype
        if {akind} != kinds:
            return f"{op.name} accumulator {at.dtype} must be a {next(iter(kinds))} type for " \
                   f"{lt.dtype} x {rt.dtype}"
        precisions = SPECS["contract"].attrs["precision"].choices
        if op.name == "contract" and op.attrs.get("precision", "ieee") not in precisions:
            return f"contract precision {op.attrs.get('precision')!r} is not one of {', '.join(precisions)}"
        if op.attrs.get("precision", "ieee") != "ieee" and (lt.dtype != "f32" or rt.dtype != "f32"):
            return f"{op.attrs.get('precision')} precision applies to f32 operands only"
        return None
    if op.name == "histogram":
        valid = op.attrs.get("valid", False)
        if not isinstance(valid, bool) or valid != (len(ops_) == 2):
            return "histogram has a validity operand iff valid = true"
        x = ops_[0]
        if not _is_value_type(x.type) or not dtypes.is_int(x.type.dtype):
            return f"histogram counts integer values, not {_tstr(x.type)}"
        if valid and (not _is_value_type(ops_[1].type) or ops_[1].type.dtype != "i1" or
                      not _broadcastable(value_shape(ops_[1].type), value_shape(x.type))):
            return f"histogram validity %{ops_[1].name} must be i1 shaped like its input"
        t = res[0].type
        if not (isinstance(t, FragmentType) and t.rank == 1 and dtypes.is_int(t.dtype)):
            return f"histogram gives a rank-1 integer fragment of bins, not {_tstr(t)}"
        return None
    if op.name in ("region_fold", "region_scan"):
        k = len(ops_) - 3
        if k < 1:
            return f"{op.name} needs at least one {'identity' if op.name == 'region_fold' else 'state'} value"
        if len(res) != k:
            return f"{op.name} gives {len(res)} results for {k} {'summary' if op.name == 'region_fold' else 'state'}" \
                   " value(s)"
        inits = [v.type for v in ops_[3:]]
        summarize, combine = op.regions[0], op.regions[1]
        if op.name == "region_fold" and not _types_match(_yielded(summarize), inits):
            return f"region_fold summarize yields {len(_yielded(summarize))} value(s); it yields the {k} " \
                   f"summary value(s) {_fmt_types(inits)}"
        if not _types_match(_yielded(combine), inits):
            return f"{op.name} combine yields {len(_yielded(combine))} value(s); it yields {k} value(s) " \
                   f"{_fmt_types(inits)}"
        if op.name == "region_scan" and _yielded(op.regions[2]):
            return "region_scan emit region yields nothing"
        return None
    return None


# ================================================================================================ invariant 9

@_check("conflicts", 9, "accesses")
def check_conflicts(ctx: _Ctx) -> Errors:
    """IR-10 (9), IR-9: non-atomic conflicting effects are illegal.

    No access writes a view whose access mode is ``read``; no view of an alias class with two or more views is
    written non-atomically; a plain write (store, scatter, buffer_store into a workspace buffer) inside an
    execution group has coordinates that depend (def-use) on every coordinate axis of its segment that can hold
    more than one program, and a plain write outside any group depends on the program coordinate unless one
    program is launched - otherwise several instances write the same elements. Atomics and scatter_reduce are
    exempt: they declare how collisions resolve. A ``buffer_load`` of a workspace buffer sits under an ``acq_rel``
    ticket guard (:func:`_unordered_workspace_read`). Within one plain write the valid members write distinct
    elements: two that provably write one element at a launch probe (:mod:`intent_eqsat.ir.launch_probe`) are a
    conflict too (data-dependent coordinates are the run time's to check).
    """
    for info in ctx.infos:
        k = info.kernel
        abi = {a.name: a for a in k.abi}
        classes: dict[str, list[str]] = {}
        for a in k.abi:
            if a.is_view and a.alias is not None:
                classes.setdefault(a.alias, []).append(a.name)
        seeds: dict[str, frozenset] = {}
        groups = [op for op in info.ops if op.name == "execution_group"]
        for gi, g in enumerate(groups):
            for j, arg in enumerate(g.regions[0].args):
                seeds[arg.name] = frozenset({(gi, j)})
        if info.pid is not None:
            seeds[info.pid.name] = seeds.get(info.pid.name, frozenset()) | {"pid"}
        labels = info.labels(seeds)
        buffers = {op.results[0].name: op.results[0].type for op in info.ops if op.name == "alloc" and op.results}
        for op in info.ops:
            if op.name == "buffer_load" and op.operands:
                msg = _unordered_workspace_read(info, op, labels, buffers)
                if msg is not None:
                    yield ctx.err(9, msg, info, op)
                continue
            if op.name not in WRITE_ACCESSES or not op.operands:
                continue
            res = op.operands[0]
            a = abi.get(res.name)
            if a is not None and a.is_view:
                if a.access == "read":
                    yield ctx.err(9, f"{op.name} writes %{a.name}, whose access mode is read", info, op)
                    continue
                mates = classes.get(a.alias, []) if a.alias is not None else []
                if len(mates) > 1 and op.name in PLAIN_WRITES:
                    others = ", ".join(f"%{m}" for m in mates if m != a.name)
                    yield ctx.err(9, f"non-atomic {op.name} into %{a.name}, which may alias {others} "
                                     f"(alias class {a.alias!r})", info, op)
                    continue
            if op.name not in PLAIN_WRITES:
                continue
            if op.name == "buffer_store":
                bt = buffers.get(res.name)
                if not (isinstance(bt, BufferType) and bt.scope == "workspace"):
                    continue  # program/iteration buffers are private to one instance
            parts = _access_parts(op)
            if parts is None:
                continue
            dep = set().union(*(labels.get(c.name, frozenset()) for c in parts[1])) if parts[1] else set()
            exempt = _ticket_exempt(info, op, labels, buffers) or frozenset()
            dep |= exempt    # coordinates whose instances the last-arriver guard reduces to one
            group = info.enclosing_group(op)
            if group is None:
                n = _static_count((k.space.grid,))
                if n != 1 and "pid" not in dep:
                    yield ctx.err(9, f"non-atomic {op.name} coordinates do not depend on the program coordinate: "
                                     "every program instance writes the same elements", info, op)
                continue
            gi = next(i for i, g in enumerate(groups) if g is group)
            seg_id = group.attrs.get("segment")
            seg = k.space.segments[seg_id]
            for j, (arg, ext) in enumerate(zip(group.regions[0].args, seg.extents)):
                if static_extent(ext) == 1:
                    continue
                if (gi, j) not in dep:
                    yield ctx.err(9, f"non-atomic {op.name} coordinates do not depend on program coordinate "
                                     f"%{arg.name} (axis {j} of segment {seg_id}, extent {ext}): the programs "
                                     "along that axis all write the same elements", info, op)
                    break
        for f in ctx.probe(info):
            if f.kind == "conflict":
                yield ctx.err(9, f.message, info, f.op)


# =============================================================================================== invariant 10

@_check("launch_exprs", 10, "shapes_params")
def check_launch_exprs(ctx: _Ctx) -> Errors:
    """IR-10 (10), IR-3, IR-3.1: grid extents never depend on device data.

    Segment extents, group sizes, the grid-stride launch count, ABI offsets/strides/producers, view shapes and
    the body's ``launch`` ops are LaunchExprs whose symbols name declared parameters, integer/bool by-value ABI
    scalars or view shape symbols, and whose ``dim``/``stride`` leaves name ABI views at valid axes. A private
    scalar has a producer (and only private scalars do); a producer never reads itself. No LaunchExpr (these, and
    those of attributes and workspace extents) divides by zero: a ``//``, ``%`` or ``ceil_div`` whose divisor is a
    constant zero, or zero at some candidate of the parameters it reads, is rejected. A view extent, a segment
    extent and the launched program count are never negative where they are constants (or parameter
    expressions, at the defaults).
    """
    for info in ctx.infos:
        k = info.kernel
        views = {a.name: a.value.type.rank for a in k.abi if a.is_view}
        shape_syms = {s.name for a in k.abi if a.is_view for e in a.value.type.shape
                      if isinstance(e, LaunchExpr) for s in _le_leaves(e) if isinstance(s, Sym)}
        syms: dict[str, str] = {s: "shape" for s in shape_syms}
        for a in k.abi:
            if isinstance(a.value.type, ScalarType) and (dtypes.is_int(a.value.type.dtype) or
                                                         a.value.type.dtype == "i1"):
                syms[a.name] = "scalar"
        for p in ctx.module.params:
            syms[p.name] = "param"
        domains = {p.name: tuple(c for c in p.candidates if _is_int(c)) or (p.default,) for p in ctx.module.params}
        defaults = {p.name: p.default for p in ctx.module.params if _is_int(p.default)}
        exprs: list[tuple[str, Any]] = []
        #: (where, what, expr) of the extents that may not be negative
        sizes: list[tuple[str, str, Any]] = []
        for i, seg in enumerate(k.space.segments):
            exprs += [(f"{location(k)}, segment {i}", e) for e in seg.extents]
            sizes += [(f"{location(k)}, segment {i}", f"extent {j}", e) for j, e in enumerate(seg.extents)]
            if seg.group_size is not None:
                exprs.append((f"{location(k)}, segment {i} group size", seg.group_size))
        if k.space.launch is not None:
            exprs.append((f"{location(k)}, space launch", k.space.launch))
            sizes.append((f"{location(k)}, space launch", "the launched program count", k.space.launch))
        for a in k.abi:
            w = f"{location(k)}, abi %{a.name}"
            if a.is_view:
                exprs += [(w, e) for e in a.value.type.shape]
                sizes += [(w, f"extent {j} of view %{a.name}", e) for j, e in enumerate(a.value.type.shape)]
                exprs.append((w, a.offset))
                exprs += [(w, e) for e in (a.strides or ())]
            if a.producer is not None:
                if not isinstance(a.value.type, ScalarType) or not a.private:
                    yield ctx.err(10, f"%{a.name} has a producer; only a private scalar argument does", where=w)
                own = {a.name}
                if isinstance(a.producer, LaunchExpr) and own & {s.name for s in _le_leaves(a.producer)
                                                                  if isinstance(s, Sym)}:
                    yield ctx.err(10, f"the producer of %{a.name} reads %{a.name} itself", where=w)
                exprs.append((w, a.producer))
            elif a.private and isinstance(a.value.type, ScalarType):
                yield ctx.err(10, f"private scalar %{a.name} has no producer, so the launcher cannot compute it",
                              where=w)
        for where, e in exprs:
            msg = _le_problem(e, syms, views, domains)
            if msg:
                yield ctx.err(10, msg, where=where)
        for where, what, e in sizes:
            v = _closed_value(e, defaults)
            if v is not None and v < 0:
                at = "" if isinstance(e, Const) else f" = {v} at the parameter defaults"
                yield ctx.err(10, f"{what} is {e}{at}; an extent is never negative", where=where)
        for op in info.ops:
            if op.name == "launch":
                msg = _le_problem(op.attrs.get("expr"), syms, views, domains)
                if msg:
                    yield ctx.err(10, msg, info, op)
                    continue
            for e in _attr_launch_exprs(op.attrs) if op.name != "launch" else ():
                zero = next((n for n in _le_nodes(e) if isinstance(n, BinOp) and n.op in ("//", "%", "ceil_div")
                             and _zero_divisor(n.rhs, domains) is not None), None)
                if zero is not None:
                    yield ctx.err(10, f"{zero} divides by zero{_zero_divisor(zero.rhs, domains)}", info, op)
                    break
            for v in [*op.results, *(a for r in op.regions for a in r.args)]:
                if isinstance(v.type, BufferType) and v.type.scope == "workspace":
                    msg = next((m for m in (_le_problem(e, syms, views, domains) for e in v.type.shape) if m),
                               None)
                    if msg:
                        yield ctx.err(10, f"extent of workspace %{v.name}: {msg}", info, op)


@_check("reduce_loops", "reduce_loops", "control")
def check_reduce_loops(ctx: _Ctx) -> Errors:
    """PASS-5 control (with IR-10 (6)), SPEC PASS-4 (reassociate ordinary reduce, never an ordered recurrence): a ``for`` marked
    ``reduce = c`` carries one value and yields ``c(carried, x)`` where ``x`` does not depend (def-use) on the
    carried value, so the loop's members may be reassociated; any other body would make the mark a lie."""
    for info in ctx.infos:
        for op in info.ops:
            if op.name != "for" or "reduce" not in op.attrs:
                continue
            comb = op.attrs["reduce"]
            region = op.regions[0] if op.regions else None
            if region is None or len(region.args) != 2 or not region.ops or len(op.results) != 1:
                yield ctx.err("reduce_loops", f"a reduce = {comb} loop must carry exactly one value", info, op)
                continue
            carried = region.args[1]
            y = region.ops[-1]
            prod = {r.name: o for o in region.ops for r in o.results}
            top = prod.get(y.operands[0].name) if y.name == "yield" and len(y.operands) == 1 else None
            # the member(s): combine(carried, x), or for a sum contract(a, b, carried) (acc + sum of products)
            if top is not None and comb == "add" and top.name == "contract" and len(top.operands) == 3 \
                    and top.operands[2].name == carried.name:
                members = top.operands[:2]
            elif top is not None and top.name == comb and len(top.operands) == 2 \
                    and top.operands[0].name == carried.name:
                members = top.operands[1:]
            else:
                yield ctx.err("reduce_loops", f"a reduce = {comb} loop must yield {comb}(%{carried.name}, x)", info, op)
                continue
            # local def-use inside the body (values of enclosing regions and the iv never depend on the carried
            # value of this loop; the kernel-wide propagation is coarser around region ops)
            tainted = {carried.name}
            for inner in walk(region):
                if any(v.name in tainted for v in inner.operands):
                    tainted.update(r.name for r in inner.results)
                    for reg in inner.regions:
                        tainted.update(a.name for a in reg.args)
            for x in members:
                if x.name in tainted:
                    yield ctx.err("reduce_loops", f"a reduce = {comb} loop's member %{x.name} depends on the carried value "
                                     f"%{carried.name} (an ordered recurrence is not a reduction)", info, op)
                    break


# =============================================================================================== invariant 11

@_check("narrowing", 11, "provenance")
def check_narrowing(ctx: _Ctx) -> Errors:
    """IR-10 (11), IR-8 (effective source range), PASS-4 range narrowing: every range narrowing carries a proof
    and has really rewritten loop, access and validity.

    ``for {narrowing = {kind, proof, source}}``: kind is all_true, mixed or all_false_skipped; proof and source
    are non-empty strings. ``all_true``: no validated access inside the loop has a validity that depends
    (def-use) on the loop's induction variable (the bound now guarantees it); ``mixed``: the predicate is kept:
    some access inside the loop still carries validity, or a select's condition reads the induction variable (a
    masked value whose reads are in bounds whatever the predicate); ``all_false_skipped``: the loop was removed,
    so such a ``for`` is illegal.
    """
    for info in ctx.infos:
        for op in info.ops:
            if op.name != "for" or "narrowing" not in op.attrs:
                continue
            n = op.attrs["narrowing"]
            if not isinstance(n, dict):
                yield ctx.err(11, f"narrowing must be a record {{kind, proof, source}}, not {n!r}", info, op)
                continue
            extra = sorted(set(n) - {"kind", "proof", "source"})
            if extra:
                yield ctx.err(11, f"narrowing has unknown field {extra[0]!r}", info, op)
            kind = n.get("kind")
            if kind not in NARROWING_KINDS:
                yield ctx.err(11, f"narrowing kind {kind!r} is not one of {', '.join(NARROWING_KINDS)}", info, op)
                continue
            for f in ("proof", "source"):
                if not isinstance(n.get(f), str) or not n.get(f).strip():
                    yield ctx.err(11, f"range narrowing ({kind}) carries no {f}", info, op)
            if kind == "all_false_skipped":
                yield ctx.err(11, "an all_false_skipped narrowing removes the loop, but the for is still here",
                              info, op)
                continue
            iv = op.regions[0].args[0] if op.regions and op.regions[0].args else None
            accesses = [a for a in walk(op.regions[0]) if a.name in ACCESS_OPS]
            validated = [(a, p[3]) for a in accesses for p in [_access_parts(a)] if p is not None and p[3]]
            needs_labels = iv is not None and (kind == "all_true" or kind == "mixed" and not validated)
            labels = info.labels({iv.name: frozenset({"iv"})}) if needs_labels else {}
            if kind == "mixed" and not validated and not any(
                    s.name == "select" and "iv" in labels.get(s.operands[0].name, frozenset())
                    for s in walk(op.regions[0])):
                yield ctx.err(11, "a mixed narrowing keeps its predicate, but no access inside the loop has "
                                  "validity and no select's condition reads the induction variable", info, op)
            if kind == "all_true" and iv is not None:
                for a, v in validated:
                    if "iv" in labels.get(v.name, frozenset()):
                        yield ctx.err(11, f"all_true narrowing did not rewrite the validity: {a.name} "
                                          f"{info.where(a)} still checks %{v.name}, which depends on the "
                                          f"induction variable %{iv.name}", info, op)
                        break


# =============================================================================================== invariant 12

@_check("no_kir", 12, "no_kir_ops")
def check_no_kir(ctx: _Ctx) -> Errors:
    """IR-10 (12), PASS-5 (no KIR ops or unresolved records), PASS-6: execution never depends on KIR clones,
    axis/role strings or side decision records.

    No op is a KIR op (``kir.*``); every attribute key belongs to the op's schema or COMMON_ATTRS (origin, tag,
    after); no role/decision/plan record; ``origin`` and ``tag`` are strings, tags are unique in the kernel and
    every ``after`` edge names the tag of an earlier op (pre-order) of the same kernel.
    """
    for info in ctx.infos:
        tags: dict[str, Op] = {}
        for op in info.ops:
            if op.name.startswith("kir."):
                yield ctx.err(12, f"{op.name} is a KIR op clone; the GPU program must not execute KIR", info, op)
                continue
            spec = SPECS.get(op.name)
            allowed = set(COMMON_ATTRS) | (set(spec.attrs) if spec else set())
            for key in op.attrs if spec is not None else ():  # an op outside the table is invariant 1's
                if key in SIDE_RECORD_KEYS:
                    yield ctx.err(12, f"attribute {key!r} is a side decision record; execution may not depend on "
                                      "it", info, op)
                elif key not in allowed:
                    yield ctx.err(12, f"attribute {key!r} is not in the schema of {op.name}", info, op)
            for key in ("origin", "tag"):
                if key in op.attrs and not isinstance(op.attrs[key], str):
                    yield ctx.err(12, f"{key} {op.attrs[key]!r} is not a string", info, op)
            after = op.attrs.get("after", ())
            if isinstance(after, str):
                after = (after,)
            if not isinstance(after, (tuple, list)):
                yield ctx.err(12, f"after {after!r} is not a list of tags", info, op)
                after = ()
            for t in after:
                if t not in tags:
                    yield ctx.err(12, f"dependence edge after {t!r} names no earlier tagged op", info, op)
            tag = op.attrs.get("tag")
            if isinstance(tag, str):
                if tag in tags:
                    yield ctx.err(12, f"tag {tag!r} is used twice", info, op)
                tags[tag] = op


# ==================================================================================== PASS-5 named checks

@_check("declared_params", "declared_params", "declared_params")
def check_declared_params(ctx: _Ctx) -> Errors:
    """PASS-5 (declared parameters), IR-2, PASS-6: compile-time physical parameters are declared with domains.

    Parameter names are unique and clash with no ABI argument (a view extent may name a parameter: the view then
    has that many elements); the dtype is an integer type;
    the candidate domain is non-empty, its members are distinct integers, and the default is one of them.
    """
    seen: set[str] = set()
    runtime = {a.name for info in ctx.infos for a in info.kernel.abi}
    for p in ctx.module.params:
        where = f"param {p.name}"
        if p.name in seen:
            yield ctx.err("declared_params", f"parameter {p.name} is declared twice", where=where)
        seen.add(p.name)
        if p.name in runtime:
            yield ctx.err("declared_params", f"parameter {p.name} has the name of an ABI argument", where=where)
        if not dtypes.is_int(p.dtype):
            yield ctx.err("declared_params", f"parameter {p.name} has non-integer type {p.dtype}", where=where)
        cands = tuple(p.candidates)
        if not cands:
            yield ctx.err("declared_params", f"parameter {p.name} has an empty candidate domain", where=where)
            continue
        if not all(_is_int(c) for c in cands):
            yield ctx.err("declared_params", f"parameter {p.name} candidates {list(cands)} are not all integers",
                          where=where)
        if len(set(cands)) != len(cands):
            yield ctx.err("declared_params", f"parameter {p.name} candidates {list(cands)} repeat a value",
                          where=where)
        if p.default not in cands:
            yield ctx.err("declared_params", f"parameter {p.name} default {p.default} is not one of its "
                                             f"candidates {list(cands)}", where=where)


def needs_origin(op: Op) -> bool:
    """The construction-stage origin rule: does ``op`` have to carry its KIR origin?

    Exempt (compiler-made structure and helper math): ``yield``; constants (const, launch, range); shape ops
    (broadcast, reshape, transpose, join, extract, tuple, record, get, field); ``execution_group`` (its origin is
    the kernel's) and ``if`` (dispatch guards); and elementwise math (unary, binary, compare, select, cast) whose
    result is ``index`` or ``i1`` - coordinate and validity arithmetic. Everything else - accesses, buffers,
    structured compute, loops and elementwise math on data values - realizes a KIR value and needs an origin.
    """
    spec = SPECS.get(op.name)
    if spec is None or spec.category in HELPER_CATEGORIES or op.name in ORIGIN_FREE_OPS:
        return False
    if spec.category in ("unary", "binary", "compare", "select", "cast") and op.results:
        return getattr(op.results[0].type, "dtype", None) not in ("index", "i1")
    return True


def _in_combiner(info: _KernelInfo, op: Op) -> bool:
    """Is ``op`` inside a typed combiner region (reduce/scan, or the combine region of region_fold/scan)?"""
    region, owner = info.parent.get(id(op), (None, None))
    while owner is not None:
        if owner.name in ("reduce", "scan"):
            return True
        if owner.name in ("region_fold", "region_scan") and len(owner.regions) > 1 and owner.regions[1] is region:
            return True
        region, owner = info.parent.get(id(owner), (None, None))
    return False


@_check("construction", "construction", "construction")
def check_construction_origins(ctx: _Ctx) -> Errors:
    """PASS-5 construction verifier (origin map, first complete program), IR-2 (origin map to KIR ids).

    Every op that :func:`needs_origin` carries a non-empty ``origin``, except inside typed combiner regions
    (reduce/scan combiners, region_fold/region_scan combine regions): those are pure helper regions (IR-7) whose
    owner carries the origin. (Coverage and the rest of the first complete program are the shared checks, which
    the construction stage also runs.)
    """
    for info in ctx.infos:
        for op in info.ops:
            if needs_origin(op) and not _in_combiner(info, op) and not (isinstance(op.origin, str) and op.origin):
                yield ctx.err("construction", f"{op.name} has no origin: the construction verifier needs the KIR "
                                              "id of every op that computes or moves data", info, op)


# ================================================================================================ driver

SHARED = ("one_body", "coverage", "types", "literals", "extents", "accesses", "regions", "reduce_loops", "buffers",
          "structured", "conflicts", "launch_exprs", "arithmetic", "narrowing", "no_kir", "declared_params")
#: one ordered table of rules per stage (STYLE 6)
STAGES: dict[str, tuple[str, ...]] = {
    "shared": SHARED,
    "construction": SHARED + ("construction",),
}


def _stage(stage: str) -> tuple[Check, ...]:
    if stage not in STAGES:
        raise IntentError(f"unknown verifier stage {stage!r}; expected one of {', '.join(STAGES)}")
    return tuple(CHECKS[n] for n in STAGES[stage])


def _run(check: Check, ctx: _Ctx, have_errors: bool) -> Iterator[VerificationError]:
    try:
        yield from check.fn(ctx)
    except VerificationError:
        raise
    except Exception as exc:  # a malformed program an earlier rule already reported, or one no rule anticipates
        if not have_errors:
            yield VerificationError(check.invariant, f"the program is too malformed to check "
                                                     f"({type(exc).__name__}: {exc})", "module")


def verify(module: Module, stage: str = "shared") -> None:
    """Run the stage's rules in order; raise the first :class:`VerificationError`."""
    ctx = _Ctx(module)
    for check in _stage(stage):
        for err in _run(check, ctx, False):
            raise err


def collect(module: Module, stage: str = "shared") -> list[VerificationError]:
    """Every failure of every rule of the stage, in rule order (later rules may repeat the effects of earlier
    failures)."""
    ctx = _Ctx(module)
    out: list[VerificationError] = []
    for check in _stage(stage):
        out.extend(_run(check, ctx, bool(out)))
    return out



__all__ = ["Check", "CHECKS", "STAGES", "SHARED", "verify", "collect", "needs_origin", "VerificationError"]
