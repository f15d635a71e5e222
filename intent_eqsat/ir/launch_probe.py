"""Launch probes: a kernel's index arithmetic run at sample launches, to find what provably goes wrong there
(SPEC IR-6: validity composed from logical predicate *and bounds*; IR-9; the shared verifier's out-of-bounds part
of IR-10 (5), its in-op collisions of IR-10 (9) and its ``arithmetic`` check).

A probe picks a concrete launch -- every physical parameter at its default, every view shape symbol a small
value -- and executes the part of the kernel that does not depend on device data: constants, ``launch`` values,
ranges, program coordinates, loop variables and the integer/predicate arithmetic over them, with the interpreter's
semantics (:mod:`intent_eqsat.ir.interpret`: same wrapping, same division rules). Everything else is *unknown*:
values loaded from memory, floats, by-value ABI scalars (their legal values are the caller's business) and what
is computed from them. At every access whose coordinates and validity are known it checks the members the
interpreter would check: a valid member outside the resource's extents is an out-of-bounds access, two valid
members of one plain write (``store``, ``scatter``, ``buffer_store``) on one element are a conflict. Integer
division by zero, a shift outside ``[0, bits)``, a negative integer exponent, a non-positive loop step and a
``launch`` value that cannot be evaluated (or does not fit its type) are undefined arithmetic.

Every finding is a witness: the launch is legal (views of the chosen shapes), the program instance and loop
iterations are ones the kernel really runs there (control flow is followed, never guessed), so the program fails
at that launch. The probe never reports what it cannot show: an access whose coordinates or validity depend on
device data or on a by-value scalar (a data-dependent subscript, checked at run time instead), a branch on an
unknown condition, a loop with unknown bounds, a ``while`` loop and the regions of reduce/scan combiners are
skipped. It is not complete either: it samples -- four launches (:func:`probe_launches`: small distinct sizes,
all ones, the small sizes in reverse, and sizes just above the largest fragment extent so that full tiles and
their unmasked fast paths run), a few program instances (all of a grid of at most 4; else the first two, the last
two and the first and last of every segment), a few iterations of each loop (all of a loop of at most 2, else the
first and the last; after a skipped iteration the loop-carried integers are unknown) -- and it stops at a
deterministic work budget (:data:`BUDGET` member operations per launch), keeping what it found.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from intent_eqsat.errors import IntentError
from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Module, Op, Region, segment_coordinates, walk
from intent_eqsat.ir.interpret import _binary, _convert, _number, place_axes
from intent_eqsat.ir.launch import LaunchExpr, Sym, ViewMeta, evaluate, free_symbols
from intent_eqsat.ir.spec import ACCESS_OPS, SPECS, access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType

#: shape-symbol values of the probe launches, in order of the symbols' names (see :func:`probe_launches`)
PROBE_VALUES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
#: a loop of at most this many iterations runs them all; a longer one runs its first and its last
FULL_TRIPS = 2
#: a grid of at most this many program instances runs them all; a larger one runs a sample
FULL_GRID = 4
#: work budget of one launch (member operations): the probe stops there, keeping what it found
BUDGET = 1 << 23
#: the largest fragment (members) the probe evaluates; a kernel with a larger one is not probed
MAX_MEMBERS = 1 << 20
#: integer ops whose operands can make them undefined (the interpreter's InterpretErrors)
_PARTIAL = ("div", "rem", "mod", "floordiv", "shl", "shr", "pow")
#: writes whose valid members must write distinct elements (atomics and scatter_reduce combine collisions)
_UNIQUE_WRITES = ("store", "scatter", "buffer_store")


@dataclass(frozen=True)
class Finding:
    """One thing that provably goes wrong at a probe launch: ``kind`` is ``bounds`` (an access out of bounds),
    ``conflict`` (two members of one plain write on one element) or ``arithmetic`` (undefined integer arithmetic);
    ``op`` is where; ``message`` says what, at which launch and program."""

    kind: str
    op: Op
    message: str


@dataclass(frozen=True)
class _Res:
    """A view or buffer and its extents at the probe launch."""

    name: str
    kind: str
    shape: tuple[int, ...]


class _Rec(tuple):
    """A record value: a tuple that remembers its field names."""

    fields: tuple[str, ...] = ()


class _Stop(Exception):
    """The probe of this launch ends (work budget spent, or a program it cannot follow)."""


class _Undefined(Exception):
    """Undefined integer arithmetic (raised by :func:`interpret._binary` through :class:`_Shim`)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _Shim:
    """Stands in for the interpreter when :func:`interpret._binary` reports an error."""

    @staticmethod
    def error(op: Op | None, message: str) -> _Undefined:
        return _Undefined(message)


def _int_like(dt: str | None) -> bool:
    return dt is not None and (dtypes.is_int(dt) or dt == "i1")


def _dtype(t: Type) -> str | None:
    return t.dtype if isinstance(t, (ScalarType, FragmentType)) else None


# ------------------------------------------------------------------------------------------------- launches

def probe_launches(module: Module, kernel: Kernel) -> list[dict[str, int]]:
    """The probe launches of ``kernel``: symbol bindings with the parameters at their defaults and the view shape
    symbols (in name order; with them the by-value integer scalars that name a view extent) at

    1. :data:`PROBE_VALUES` (2, 3, 5, ...: small, distinct, so partial tiles and mixed-up sizes show),
    2. all 1 (one element: every tile but its first member is a tail),
    3. the values of 1 in reverse order (so every two symbols compare both ways round),
    4. the largest fragment or buffer extent of the kernel plus the values of 3 (full tiles and their loops).
    """
    params = {p.name: int(p.default) for p in module.params}
    names: set[str] = set()
    for a in kernel.abi:
        if a.is_view:
            for e in a.value.type.shape:
                if isinstance(e, LaunchExpr):
                    names |= free_symbols(e)
    names -= set(params)
    largest = 1
    for op in walk(kernel.body):
        for v in [*op.results, *(a for r in op.regions for a in r.args)]:
            if isinstance(v.type, (FragmentType, BufferType)):
                for e in v.type.shape:
                    try:
                        x = evaluate(e, params)
                    except (IntentError, TypeError, ValueError, ArithmeticError):
                        continue
                    if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= MAX_MEMBERS:
                        largest = max(largest, x)
    ordered = sorted(names)
    values = [PROBE_VALUES[i % len(PROBE_VALUES)] + 41 * (i // len(PROBE_VALUES)) for i in range(len(ordered))]
    out = []
    for base, vs in ((0, values), (0, [1] * len(values)), (0, values[::-1]), (largest, values[::-1])):
        b = dict(params)
        b.update({s: base + v for s, v in zip(ordered, vs)})
        if b not in out:
            out.append(b)
    return out


def probe(module: Module, kernel: Kernel, launches: Iterable[dict[str, int]] | None = None) -> list[Finding]:
    """Run the probe launches (default :func:`probe_launches`) of ``kernel``; return what they show, at most one
    finding per op, in op order."""
    found: dict[int, Finding] = {}
    idle: dict[int, bool] = {}
    for binding in (probe_launches(module, kernel) if launches is None else launches):
        p = _Probe(module, kernel, binding, found, idle)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p.run()
        except _Stop:
            pass
        except (IntentError, ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError,
                MemoryError, RecursionError):
            pass                  # a program too malformed to follow: the structural checks report it
    order = {id(op): i for i, op in enumerate(walk(kernel.body))}
    return sorted(found.values(), key=lambda f: order.get(id(f.op), -1))


# -------------------------------------------------------------------------------------------------- the probe

class _Probe:
    def __init__(self, module: Module, kernel: Kernel, binding: dict[str, int], found: dict[int, Finding],
                 idle_ops: dict[int, bool] | None = None):
        self.module = module
        self.idle_ops = {} if idle_ops is None else idle_ops
        self.kernel = kernel
        self.found = found
        self.work = 0
        self.env: dict[str, Any] = {}
        self.pid = 0
        self._shapes: dict[int, tuple[Type, tuple[int, ...]]] = {}
        self.symbols: dict[str, Any] = dict(binding)
        self.launch_text = ", ".join(f"{k}={v}" for k, v in sorted(binding.items())
                                     if k not in {p.name for p in module.params}) or "with no shape symbols"
        self._matters: dict[int, bool] = {}

    # -- setup -----------------------------------------------------------------------------------------------
    def _bind(self) -> list[Any]:
        k = self.kernel
        meta: dict[str, ViewMeta] = {}
        for a in k.abi:
            if a.is_view:
                shape = tuple(evaluate(e, self.symbols) for e in a.value.type.shape)
                if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in shape):
                    raise _Stop()                   # no legal launch has these view extents
                strides = [1] * len(shape)
                for i in range(len(shape) - 2, -1, -1):
                    strides[i] = strides[i + 1] * max(shape[i + 1], 1)
                meta[a.name] = ViewMeta(shape, tuple(strides))
        self.meta = meta
        for a in k.abi:                             # private scalars: computed from their producers
            if not a.is_view and a.private and a.producer is not None:
                try:
                    v = evaluate(a.producer, self.symbols, meta)
                except (IntentError, ArithmeticError, TypeError):
                    continue
                if not isinstance(v, tuple):
                    self.symbols[a.name] = v
        values: list[Any] = []
        for a in k.abi:
            if a.is_view:
                values.append(_Res(a.name, "view", meta[a.name].shape))
            elif a.name in self.symbols and _int_like(a.value.type.dtype):
                values.append(self._scalar(self.symbols[a.name], a.value.type.dtype))
            else:
                values.append(None)                 # a by-value scalar: the caller's data
        return values

    @staticmethod
    def _scalar(v: Any, dtype: str) -> np.ndarray | None:
        try:
            return np.asarray(_number(v, dtype, "value"))
        except (IntentError, TypeError, ValueError, OverflowError):
            return None

    def le(self, e: LaunchExpr) -> Any:
        return evaluate(e, self.symbols, self.meta)

    def shape(self, t: Type) -> tuple[int, ...]:
        hit = self._shapes.get(id(t))
        if hit is not None:
            return hit[1]
        if isinstance(t, (FragmentType, BufferType, ViewType)):
            s = tuple(self.le(e) for e in t.shape)
            if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in s):
                raise _Stop()
            if math.prod(s) > MAX_MEMBERS:
                raise _Stop()
        else:
            s = ()
        self._shapes[id(t)] = (t, s)           # the type is kept alive, so its id stays its own
        return s

    def spend(self, n: int) -> None:
        self.work += n
        if self.work > BUDGET:
            raise _Stop()

    def report(self, kind: str, op: Op, message: str) -> None:
        if id(op) not in self.found:
            self.found[id(op)] = Finding(kind, op, f"{message} at the launch {self.launch_text} (program "
                                                   f"{self.pid})")

    # -- running ---------------------------------------------------------------------------------------------
    def run(self) -> None:
        k = self.kernel
        abi_values = self._bind()
        self.segments = []
        offset = 0
        for seg in k.space.segments:
            ext = tuple(self.le(e) for e in seg.extents)
            if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in ext):
                raise _Stop()
            length = math.prod(ext)
            g = None
            if seg.order == "grouped":
                g = self.le(seg.group_size) if seg.group_size is not None else None
                if not isinstance(g, int) or g <= 0 or not 1 <= seg.group_axis < len(ext):
                    raise _Stop()
            self.segments.append((offset, length, ext, seg, g))
            offset += length
        grid = self.le(k.space.grid)
        if isinstance(grid, bool) or not isinstance(grid, int) or grid <= 0:
            return
        if grid <= FULL_GRID:
            pids: Iterable[int] = range(grid)
        else:
            marks = {0, 1, grid - 2, grid - 1}
            for off, length, *_ in self.segments:
                if length:
                    marks |= {off % grid, (off + length - 1) % grid}
            pids = sorted(marks)
        for pid in pids:
            self.pid = pid
            self.env = {}
            self.region(k.body, [*abi_values, np.asarray(np.int64(pid))])

    def region(self, region: Region, args: Sequence[Any]) -> list[Any]:
        env = self.env
        for a, v in zip(region.args, args):
            env[a.name] = self.fit(v, a.type)
        for op in region.ops:
            if op.name == "yield":
                return [env.get(v.name) for v in op.operands]
            self.op(op)
        return []

    def matters(self, region: Region) -> bool:
        """Does running ``region`` check anything (an access, partial integer arithmetic, a loop step)?"""
        hit = self._matters.get(id(region))
        if hit is None:
            hit = any(op.name in ACCESS_OPS or op.name in _PARTIAL or op.name in ("for", "region_fold",
                                                                                  "region_scan", "launch")
                      or any(self.matters(r) for r in op.regions) for op in region.ops)
            self._matters[id(region)] = hit
        return hit

    def fit(self, v: Any, t: Type) -> Any:
        """``v`` as a value of type ``t`` (arrays keep size-1 axes where they are broadcast), or None."""
        if v is None:
            return None
        if isinstance(t, (ViewType, BufferType)):
            return v if isinstance(v, _Res) else None
        if isinstance(t, TupleType):
            if not isinstance(v, tuple) or len(v) != len(t.items):
                return None
            items = tuple(self.fit(x, it) for x, it in zip(v, t.items))
            if isinstance(v, _Rec):
                r = _Rec(items)
                r.fields = v.fields
                return r
            return items
        dt = _dtype(t)
        if isinstance(v, np.generic):
            v = np.asarray(v)
        if not _int_like(dt) or not isinstance(v, np.ndarray):
            return None
        shape = self.shape(t)
        if v.ndim == 0 and shape:
            v = v.reshape((1,) * len(shape))
        if v.ndim != len(shape) or any(a not in (1, b) for a, b in zip(v.shape, shape)):
            return None
        if v.dtype != dtypes.to_numpy(dt):
            v = np.asarray(_convert(v, dt))
        self.spend(v.size)
        return v

    def op(self, op: Op) -> None:
        self.spend(1)
        name = op.name
        if self.idle(op):                           # a float value: nothing to compute, nothing to check
            for r in op.results:
                self.env[r.name] = None
            return
        outs: list[Any] | None = None
        if name in ACCESS_OPS:
            self.access(op)
        else:
            handler = getattr(self, "op_" + name, None)
            if handler is None:
                category = SPECS[name].category if name in SPECS else None
                handler = getattr(self, f"cat_{category}", None)
            if handler is not None:
                outs = handler(op)
        env = self.env
        for i, r in enumerate(op.results):
            v = outs[i] if outs is not None and i < len(outs) else None
            env[r.name] = self.fit(v, r.type) if v is not None else None

    def idle(self, op: Op) -> bool:
        """Is ``op`` a region-free op that is no access and yields only floating-point values?"""
        hit = self.idle_ops.get(id(op))
        if hit is None:
            hit = not op.regions and op.name not in ACCESS_OPS and bool(op.results) and all(
                isinstance(r.type, (ScalarType, FragmentType)) and dtypes.is_float(r.type.dtype)
                for r in op.results)
            self.idle_ops[id(op)] = hit
        return hit

    def val(self, v: Any) -> Any:
        return self.env.get(v.name)

    # -- constants -------------------------------------------------------------------------------------------
    def op_const(self, op: Op) -> list[Any] | None:
        dt = _dtype(op.result.type)
        if not _int_like(dt):
            return None
        v = self._scalar(op.attrs.get("value"), dt)
        return None if v is None else [v]

    def op_launch(self, op: Op) -> list[Any] | None:
        dt = _dtype(op.result.type)
        if not _int_like(dt):
            return None
        expr = op.attrs.get("expr")
        try:
            v = self.le(expr)
        except IntentError as err:
            if "division by zero" in err.message:      # (unbound symbols: by-value scalars, the caller's data)
                self.report("arithmetic", op, f"LaunchExpr {expr} cannot be evaluated ({err.message})")
            return None
        if isinstance(v, tuple):
            return None
        s = self._scalar(v, dt)
        if s is None:
            self.report("arithmetic", op, f"LaunchExpr {expr} is {v}, which {dt} cannot hold")
        return None if s is None else [s]

    def op_range(self, op: Op) -> list[Any] | None:
        shape = self.shape(op.result.type)
        if len(shape) != 1 or not _int_like(_dtype(op.result.type)):
            return None
        start = op.attrs.get("start", 0)
        if isinstance(start, bool) or not isinstance(start, int):
            return None
        self.spend(shape[0])
        return [np.arange(shape[0], dtype=np.int64) + np.int64(start)]

    # -- elementwise -----------------------------------------------------------------------------------------
    def _known(self, op: Op) -> list[np.ndarray] | None:
        xs = [self.val(v) for v in op.operands]
        if any(not isinstance(x, np.ndarray) for x in xs):
            return None
        return xs

    def cat_unary(self, op: Op) -> list[Any] | None:
        dt = _dtype(op.operands[0].type)
        xs = self._known(op)
        if xs is None or not _int_like(dt):
            return None
        x = xs[0]
        if op.name == "not":
            return [np.logical_not(x) if dt == "i1" else np.invert(x)]
        if dt == "i1":
            return None
        if op.name == "neg":
            return [np.negative(x)]
        if op.name == "abs":
            return [np.abs(x) if dt not in dtypes.UNSIGNED_DTYPES else x]
        if op.name in ("floor", "ceil"):
            return [x]
        return None

    def cat_binary(self, op: Op) -> list[Any] | None:
        dt = _dtype(op.operands[0].type)
        xs = self._known(op)
        if xs is None or not _int_like(dt) or _dtype(op.operands[1].type) != dt:
            return None
        try:
            return [_binary(_Shim(), op, op.name, xs[0], xs[1], dt)]   # type: ignore[arg-type]
        except _Undefined as err:
            self.report("arithmetic", op, f"undefined integer arithmetic: {err.message}")
            return None

    def cat_compare(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None or not _int_like(_dtype(op.operands[0].type)):
            return None
        f = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
             "ne": np.not_equal}.get(op.attrs.get("pred"))
        return None if f is None else [f(xs[0], xs[1])]

    def cat_select(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None or xs[0].dtype != np.bool_ or not _int_like(_dtype(op.result.type)):
            return None
        return [np.where(xs[0], xs[1], xs[2])]

    def op_cast(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        src, dst = _dtype(op.operands[0].type), _dtype(op.result.type)
        if xs is None or not _int_like(src) or not _int_like(dst):
            return None
        return [np.asarray(_convert(xs[0], dst))]

    # -- shape -----------------------------------------------------------------------------------------------
    def op_broadcast(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None:
            return None
        x = xs[0]
        shape = self.shape(op.result.type)
        dims = tuple(int(d) for d in op.attrs.get("dims", ()))
        if len(dims) != x.ndim or len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            return None
        return [place_axes(x, dims, len(shape))]

    def op_reshape(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None:
            return None
        src, dst = self.shape(op.operands[0].type), self.shape(op.result.type)
        if math.prod(src) != math.prod(dst):
            return None
        self.spend(math.prod(src))
        return [np.broadcast_to(xs[0], src).reshape(dst)]

    def op_transpose(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        perm = tuple(int(p) for p in op.attrs.get("perm", ()))
        if xs is None or sorted(perm) != list(range(xs[0].ndim)):
            return None
        return [np.transpose(xs[0], perm)]

    def op_join(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None or xs[0].ndim != xs[1].ndim:
            return None
        common = np.broadcast_shapes(xs[0].shape, xs[1].shape)
        return [np.stack([np.broadcast_to(xs[0], common), np.broadcast_to(xs[1], common)], axis=-1)]

    def op_extract(self, op: Op) -> list[Any] | None:
        xs = self._known(op)
        if xs is None:
            return None
        x = xs[0]
        idx = tuple(int(i) for i in op.attrs.get("index", ()))
        shape = self.shape(op.operands[0].type)
        if len(idx) != x.ndim or any(not 0 <= i < n for i, n in zip(idx, shape)):
            return None
        return [np.asarray(x[tuple(i if n > 1 else 0 for i, n in zip(idx, x.shape))])]

    def op_tuple(self, op: Op) -> list[Any]:
        return [tuple(self.val(v) for v in op.operands)]

    def op_record(self, op: Op) -> list[Any]:
        r = _Rec(self.val(v) for v in op.operands)
        r.fields = tuple(op.attrs.get("fields", ()))
        return [r]

    def op_get(self, op: Op) -> list[Any] | None:
        t = self.val(op.operands[0])
        i = op.attrs.get("index")
        if not isinstance(t, tuple) or not isinstance(i, int) or not 0 <= i < len(t):
            return None
        return [t[i]]

    def op_field(self, op: Op) -> list[Any] | None:
        r = self.val(op.operands[0])
        name = op.attrs.get("name")
        if not isinstance(r, _Rec) or name not in r.fields:
            return None
        return [r[r.fields.index(name)]]

    # -- accesses and buffers --------------------------------------------------------------------------------
    def op_alloc(self, op: Op) -> list[Any] | None:
        t = op.result.type
        if not isinstance(t, BufferType):
            return None
        return [_Res(op.result.name, "buffer", self.shape(t))]

    def access(self, op: Op) -> None:
        has_valid = bool(op.attrs.get("valid", False))
        n_coords, n_payload = access_layout(op.name, len(op.operands), has_valid)
        res = self.val(op.operands[0])
        if not isinstance(res, _Res) or n_coords != len(res.shape):
            return
        # a coordinate computed from data is a data-dependent subscript (checked at run time, not here), and so is
        # one the access marks ``checked`` (the launch checks it itself, issue 25.2); the other axes are judged
        checked = op.attrs.get("checked") or ()
        coords = [self.val(v) for v in op.operands[1:1 + n_coords]]
        known = [isinstance(c, np.ndarray) and c.dtype.kind in "iu" and axis not in checked
                 for axis, c in enumerate(coords)]
        if not any(known):
            return
        valid = self.val(op.operands[-1]) if has_valid else np.asarray(True)
        if not isinstance(valid, np.ndarray) or valid.dtype != np.bool_:
            return                                  # a data-dependent validity
        members = op.results[0].type if op.results else op.operands[1 + n_coords].type
        shape = self.shape(members)
        inside = np.asarray(True)
        for c, extent, k in zip(coords, res.shape, known):
            if k:
                inside = inside & (c >= 0) & (c < extent)
        bad = valid & ~inside
        self.spend(bad.size)
        if not bad.any():
            if op.name in _UNIQUE_WRITES and all(known):
                self.unique(op, res, coords, valid, shape)
            return
        try:
            full = np.broadcast_to(bad, shape)
        except ValueError:
            return
        member = tuple(int(i) for i in np.argwhere(full)[0]) if full.ndim else ()
        parts = [str(int(np.broadcast_to(c, shape)[member])) if k else "?" for c, k in zip(coords, known)]
        coord = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"     # "?": a data-dependent one
        verb = {"read": "reads", "write": "writes"}.get(SPECS[op.name].effect, "updates")
        self.report("bounds", op, f"unguarded out-of-bounds access: member {member} {verb} coordinate {coord} of "
                                  f"{res.kind} %{res.name} with shape {res.shape}"
                    + (" although its validity is true" if has_valid else ""))

    def unique(self, op: Op, res: _Res, coords: list[np.ndarray], valid: np.ndarray, shape: tuple[int, ...]) -> None:
        """A plain write's valid members write distinct elements (the interpreter's collision rule)."""
        try:
            v = np.broadcast_to(valid, shape)
            idx = tuple(np.broadcast_to(c, shape)[v] for c in coords)
        except ValueError:
            return
        n = int(np.count_nonzero(v))
        self.spend(n + v.size)
        if n < 2:
            return
        flat = np.ravel_multi_index(idx, res.shape) if idx else np.zeros(n, np.intp)
        uniq, first, counts = np.unique(flat, return_index=True, return_counts=True)
        if len(uniq) == n:
            return
        k = int(first[np.argmax(counts > 1)])
        coord = tuple(int(i[k]) for i in idx)
        self.report("conflict", op, f"colliding members: two valid members of this {op.name} write element "
                                    f"{coord} of {res.kind} %{res.name} (plain writes need unique members)")

    # -- control ---------------------------------------------------------------------------------------------
    def op_execution_group(self, op: Op) -> None:
        seg = op.attrs.get("segment")
        lin = self.val(op.operands[0]) if op.operands else None
        if not isinstance(seg, int) or not 0 <= seg < len(self.segments) or not isinstance(lin, np.ndarray) \
                or lin.ndim:
            return None
        offset, length, ext, segment, g = self.segments[seg]
        lin = int(lin)
        if not offset <= lin < offset + length:
            return None
        coords = segment_coordinates(lin - offset, ext, segment, g)
        self.region(op.regions[0], [np.asarray(np.int64(c)) for c in coords])
        return None

    def op_if(self, op: Op) -> list[Any] | None:
        c = self.val(op.operands[0])
        if not isinstance(c, np.ndarray) or c.ndim or c.dtype != np.bool_:
            return None                             # a data-dependent branch: not followed
        return self.region(op.regions[0 if bool(c) else 1], [])

    def _trips(self, op: Op) -> list[int] | None:
        """The iterations the probe runs (None: unknown bounds or an undefined step)."""
        xs = [self.val(v) for v in op.operands[:3]]
        if any(not isinstance(x, np.ndarray) or x.ndim or x.dtype.kind not in "iu" for x in xs):
            return None
        lb, ub, step = (int(x) for x in xs)
        if step <= 0:
            self.report("arithmetic", op, f"loop step {step} is not positive")
            return None
        n = max(0, -((lb - ub) // step))
        if n <= FULL_TRIPS:
            return [lb + i * step for i in range(n)]
        return [lb, lb + (n - 1) * step]

    @staticmethod
    def _forget(values: list[Any]) -> list[Any]:
        """Loop-carried values after skipped iterations: resources stay, everything else is unknown."""
        return [v if isinstance(v, _Res) else None for v in values]

    def op_for(self, op: Op) -> list[Any] | None:
        body = op.regions[0]
        carried = [self.val(v) for v in op.operands[3:]]
        trips = self._trips(op)
        if trips is None:
            return None
        if not self.matters(body) and all(v is None for v in carried):
            return None
        prev = None
        for iv in trips:
            if prev is not None and iv != prev + int(self.val(op.operands[2])):
                carried = self._forget(carried)
            carried = self.region(body, [np.asarray(np.int64(iv)), *carried])
            prev = iv
        return carried

    def op_region_fold(self, op: Op) -> list[Any] | None:
        trips = self._trips(op)
        if trips is None:
            return None
        summarize, combine = op.regions
        acc = [self.val(v) for v in op.operands[3:]]
        prev = None
        for seg in trips:
            if prev is not None and seg != prev + int(self.val(op.operands[2])):
                acc = self._forget(acc)
            s = self.region(summarize, [np.asarray(np.int64(seg))])
            acc = self.region(combine, [*acc, *s])
            prev = seg
        return acc

    def op_region_scan(self, op: Op) -> list[Any] | None:
        trips = self._trips(op)
        if trips is None:
            return None
        summarize, combine, emit = op.regions
        state = [self.val(v) for v in op.operands[3:]]
        prev = None
        for seg in trips:
            if prev is not None and seg != prev + int(self.val(op.operands[2])):
                state = self._forget(state)
            self.region(emit, [np.asarray(np.int64(seg)), *state])
            s = self.region(summarize, [np.asarray(np.int64(seg))])
            state = self.region(combine, [*state, *s])
            prev = seg
        return state


__all__ = ["Finding", "probe", "probe_launches", "PROBE_VALUES", "BUDGET"]
