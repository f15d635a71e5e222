"""The NumPy interpreter of the shared GPU IR (issue 2, item 6): what a physical kernel computes.

``interpret(module, kernel_name, args, params=None)`` runs every program instance of one kernel sequentially on
NumPy arrays and returns ``{view name: final contents}`` for every public ``write``/``readwrite`` view. The
semantics below are the reference the rest of the package (rewrites, serializers, translation validation) is
checked against; anything the interpreter cannot execute faithfully is an :class:`InterpretError` that names the
kernel, the op (``core.location``), the program coordinate and, for accesses, the offending coordinate.

Arguments and launch
  * ``args`` binds every public ABI argument by name. A view gets an array of the view's rank; it is copied (the
    caller's arrays are never modified) and converted to the view's element type. Arrays of views declared in the
    same alias class that share memory keep sharing it in the copies (IR-4.3); views without a common alias class
    are promised not to overlap, so their copies are independent. A by-value scalar gets a Python/NumPy scalar,
    converted to its dtype. Private (compiler-made) scalars are computed from their producer LaunchExpr unless
    given (and checked against it when given); private views (workspaces) are allocated with undefined contents
    unless given. Private views are not returned.
  * Shape symbols in view types (``view<f16, [M, K]>``) are bound from the arrays' shapes: the same symbol must
    have the same size everywhere, constant extents must match, other extent expressions must evaluate to the
    array's extent. Integer scalars bind their own names. ``params`` gives physical parameters; a missing one
    takes ``ParamDecl.default`` (values outside the candidate domain are allowed: tests use small blocks).
  * Declared view strides are checked against the arrays' element strides (axes of extent <= 1 excepted); the
    element offset describes the view's place in its allocation and is not used (each view is its own array).
  * Every LaunchExpr is evaluated with ``launch.evaluate`` over params, scalars and shape symbols and with
    ``ViewMeta`` (shape, element strides) of every view.

Program space
  ``grid = space.launch`` if set else the total of the segment lengths; the body runs once per linear program
  coordinate ``pid in range(grid)``, in increasing order, with region arguments = ABI values + pid. An
  ``execution_group(%lin) {segment = i}`` runs its region iff ``offset_i <= lin < offset_i + len_i``; its region
  arguments are the coordinates decoded from ``local = lin - offset_i``: ``row_major`` is ``unravel_index`` over the
  extents; ``grouped(G)`` (rank 2, groups of G rows along axis 0) is Triton's grouped ordering
  (``num_pid_in_group = G * E1``, ``group_id = local // num_pid_in_group``, ``first_m = group_id * G``,
  ``group_m = min(E0 - first_m, G)``, ``pm = first_m + (local % num_pid_in_group) % group_m``,
  ``pn = (local % num_pid_in_group) // group_m``); ``grouped(G, axis a[, descending])`` decodes the axes after
  ``a`` row-major first and groups the flattened axes before ``a`` against axis ``a``
  (``core.grouped_coordinates``).

Values
  Scalars are NumPy scalars of their dtype (``index`` -> int64, ``i1`` -> bool, ``bf16`` -> ml_dtypes.bfloat16);
  fragments are arrays of the declared shape (extents evaluated with the bound symbols); tuples are Python tuples,
  records keep their field names; views and buffers are memory objects. Every op result is converted to its
  declared type; a computed shape different from the declared one is an InterpretError.

Elementwise ops (unary, binary, cmp, select, cast, bitcast)
  Scalars broadcast against fragments. Floats: add/sub/mul/div are IEEE operations in the value's dtype (f16 and
  bf16 are computed in f32 and rounded once per op, which is exact for these operations); every other float
  function (exp, log, sqrt, tanh, erf, sigmoid, pow, recip, rsqrt, ...) is evaluated in float64 and rounded once to
  the dtype; ``rem`` is C ``fmod`` (sign of the dividend), ``mod``/``floordiv`` round toward -inf; max/min propagate
  NaN; comparisons with NaN are false except ``ne``. Integers wrap in their dtype; ``div`` truncates toward zero,
  ``rem`` has the sign of the dividend, ``floordiv``/``mod`` round toward -inf; integer division by zero, a
  negative integer exponent and a shift amount outside ``[0, bits)`` are InterpretErrors (undefined in C/LLVM).
  ``and``/``or``/``xor``/``not`` are bitwise on integers and logical on i1. ``approximate`` and ``flush_to_zero``
  are interpreted exactly (no approximation, no flushing): the flags only license a provider to be less precise.
  ``cast`` rounds to nearest even between floats, converts int->float by rounding, truncates float->int toward
  zero with PTX ``cvt.rzi`` saturation (NaN -> 0, out of range -> the nearest bound), wraps int->int and maps to
  i1 as ``x != 0``. ``bitcast`` reinterprets bits between types of equal width.

Shape ops
  ``broadcast{dims}``: operand axis i becomes result axis dims[i]; the other result axes (and operand axes of
  extent 1) are broadcast. ``reshape`` is row-major; ``transpose{perm}``: result axis i = operand axis perm[i];
  ``join`` stacks along a new last axis; ``extract{index}`` reads one member; ``tuple``/``get``, ``record``/``field``;
  ``range{start}`` = start + arange(n); ``const`` fills a fragment; ``launch{expr}`` evaluates a LaunchExpr.

Accesses (``resource, coords x rank, payload..., [valid]``)
  Coordinates (and payload, validity) broadcast to the access shape (the result's shape for reads). Members whose
  validity is false touch no memory: a read yields ``fill``, a write has no effect. A valid member whose coordinate
  lies outside the resource's bounds is an InterpretError ("unguarded out-of-bounds access"), never silent; at a
  ``checked`` coordinate (a data-dependent subscript) it says so, as the launcher's SubscriptOutOfRange would.
  ``store``/``scatter``/``buffer_store``: two valid members writing the same element is an InterpretError (the IR
  requires unique members; colliding writes need scatter_reduce or atomics). ``scatter_reduce{combine}``: members
  are combined into memory in row-major member order (``ufunc.at``, in the element dtype). ``atomic_rmw{kind}``
  returns the old values (0 for invalid members) and applies the members in row-major order, so colliding members
  see each other's updates; ``atomic_cas`` compares bit patterns and returns the old values; ``atomic_load`` is a
  load; ``atomic_store`` lets the last colliding member (row-major) win. Memory order and sharing domain have no
  observable effect in a sequential run. Any write to a ``read`` view is an InterpretError. A ``write`` view and
  a runtime-allocated workspace start undefined: reading an element this launch has not written is an
  InterpretError (elements never written keep the caller's contents in the returned array).

Buffers
  ``alloc`` makes a buffer of its type each time it executes (so a buffer lives in the region execution that
  allocated it); ``init`` is a number (full initial value) or ``first_write`` (undefined contents: a read of an
  element not yet written is an InterpretError). A ``workspace``-scope buffer is one instance per launch: the first
  execution creates and initialises it (backed by the private ABI view named by ``arg`` when given) and later
  executions return the same instance. ``buffer_load``/``buffer_store`` behave like load/store.

Structured ops
  ``reduce{axes, combine, identity}``: per component over the axes; a zero-extent reduction yields the identity
  (the identity is not otherwise combined in). Built-in combiners: ``add``/``mul`` on floats accumulate in f32 for
  f16/bf16/f32 (NumPy's pairwise summation) and f64 for f64, then round once; integers accumulate in their own
  dtype (wrapping); ``max``/``min`` propagate NaN; ``and``/``or``/``xor`` are bitwise/logical. ``combine = region``:
  the region (``a_0..a_{n-1}, b_0..b_{n-1}`` scalars, yielding n) is applied in a deterministic pairwise tree that
  keeps member order (a is always the earlier member), vectorised over all other members.
  ``scan{axis, combine, identity, reverse, exclusive}``: inclusive prefix along the axis (f16/bf16 sums accumulate
  in f32 and each output is rounded); ``exclusive`` shifts by one with the identity first; ``reverse`` is the scan
  of the reversed sequence (a suffix scan; the accumulated value is the region's left operand). Region combiners
  run sequentially in prefix order. A scan is never computed as a reduce and vice versa.
  ``argreduce{axis, kind, tie=lowest, nan}``: results (value, index in the declared index dtype); ties pick the
  lowest index; ``nan=propagate``: if the axis holds a NaN, the result is the first NaN (its index, value NaN);
  ``nan=ignore``: NaNs are skipped, an all-NaN axis gives index 0 and value NaN. An empty axis is an error.
  ``contract``: ``acc + sum(lhs * rhs)`` over the paired contract axes, with batch axes paired; result axes are
  batch, lhs free, rhs free. lhs/rhs are converted to the accumulator's computation dtype first: f32 for f16/bf16/
  f32 accumulators (f16/bf16 results are rounded once at the end), f64 for f64, the accumulator's own dtype for
  integers; the products are summed with ``np.einsum`` in that dtype and added to acc. ``precision = tf32`` rounds
  lhs and rhs to tf32 (10 mantissa bits, nearest even) first; ``precision = bf16x3`` splits each into bf16 halves
  (hi, lo) and sums hi*lo + lo*hi + hi*hi. An empty reduction returns acc.
  ``scaled_contract``: lhs and rhs are multiplied by their scales repeated ``scale_block`` times along each
  contracted axis (scales are plain numbers of their dtype), then contracted as above.
  ``histogram(values[, valid])``: counts of the valid integer values in ``[0, bins)`` (bins = the result extent);
  other values are ignored.
  ``region_fold(lb, ub, step, init...)``: ``acc = init; for seg in range(lb, ub, step): acc = combine(acc...,
  summarize(seg)...)``. ``region_scan(lb, ub, step, init...)``: ``state = init; for seg: emit(seg, state...);
  state = combine(state..., summarize(seg)...)``; results = the final state.

Control
  ``if`` on an i1 scalar runs one region and returns its yields; ``for(lb, ub, step, init...)`` iterates
  ``range(lb, ub, step)`` (step must be positive) with the region arguments (iv, carried...), a ``narrowing``
  attribute is only a proof record; ``while(init...)`` runs ``cond(carried...) -> (i1, values...)`` and, while the
  i1 holds, ``body(values...) -> carried...``; its results are the cond region's values at exit.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from intent_eqsat.errors import IntentError, InterpretError
from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Module, Op, Region, segment_coordinates, location
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, Sym, ViewMeta, evaluate
from intent_eqsat.ir.spec import SPECS, access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType

#: a guard against a ``while`` that never ends
MAX_WHILE_ITERATIONS = 1 << 24


def interpret(module: Module, kernel_name: str, args: dict[str, Any], params: dict[str, int] | None = None, *,
              max_ops: int | None = None) -> dict[str, np.ndarray]:
    """Run every program instance of ``kernel_name``; return the final contents of its written views.

    ``max_ops`` bounds the op executions of the run (an InterpretError once exceeded): a deterministic guard for
    callers that run programs they did not write (fuzzing), which may be legal but enormous."""
    try:
        kernel = module.kernel(kernel_name)
    except KeyError:
        names = ", ".join(k.name for k in module.kernels) or "none"
        raise InterpretError(f"no kernel named {kernel_name!r} in the module (kernels: {names})") from None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _Interpreter(module, kernel, dict(args), dict(params or {}), max_ops).run()


# --------------------------------------------------------------------------------------------- runtime objects


def place_axes(x: np.ndarray, dims: Sequence[int], rank: int) -> np.ndarray:
    """``broadcast{dims}``'s placement: operand axis i becomes axis ``dims[i]`` of a rank-``rank`` array, every
    other axis of extent 1 (ready for ``np.broadcast_to``). ``dims`` must be distinct axes below ``rank``."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    full = [1] * rank
    for i in order:
        full[dims[i]] = x.shape[i]
    return (np.transpose(x, order) if x.ndim else x).reshape(full)

class _Mem:
    """A view or a buffer: its array, its access mode and, when its contents start undefined, a written mask."""

    def __init__(self, name: str, kind: str, array: np.ndarray, access: str, undefined: bool):
        self.name = name
        self.kind = kind                      # "view" | "buffer"
        self.array = array
        self.access = access                  # read | write | readwrite
        self.nd = array if array.ndim else array.reshape(1)
        self.shape = array.shape
        self.written = np.zeros(self.nd.shape, bool) if undefined else None

    def describe(self) -> str:
        return f"{self.kind} %{self.name}"


class _Record:
    """The value of a ``record``: field names and values."""

    def __init__(self, fields: Sequence[str], values: Sequence[Any]):
        self.fields = tuple(fields)
        self.values = tuple(values)

    def __len__(self) -> int:
        return len(self.values)


class _NotVectorizable(Exception):
    """Internal: a combiner region cannot run on whole arrays of members at once."""


_UNDEFINED_FLOAT = np.nan

# ------------------------------------------------------------------------------------------------ dtype helpers


def _np(dtype: str) -> np.dtype:
    return dtypes.to_numpy(dtype)


def _work_float(dtype: str) -> np.dtype:
    """The dtype IEEE add/sub/mul/div of ``dtype`` are computed in (exactly rounded once back)."""
    return np.dtype(np.float64) if dtype == "f64" else np.dtype(np.float32)


def _is_floating(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt == _np("bf16")


def _convert(x: Any, dtype: str) -> np.ndarray:
    """The value conversion of ``cast`` (see the module docstring)."""
    a = np.asarray(x)
    dt = _np(dtype)
    if a.dtype == dt:
        return a
    if dtype == "i1":
        return (a.astype(np.float64) if _is_floating(a.dtype) else a) != 0
    if dtypes.is_int(dtype) and _is_floating(a.dtype):
        # PTX cvt.rzi semantics: truncate toward zero, saturate, NaN -> 0
        f = a.astype(np.float64)
        info = np.iinfo(dt)
        f = np.where(np.isnan(f), 0.0, np.trunc(f))
        out = np.clip(f, float(info.min), float(info.max)).astype(dt)
        out = np.where(f >= float(info.max), np.array(info.max, dt), out)
        return np.where(f <= float(info.min), np.array(info.min, dt), out).astype(dt)
    if dtypes.is_float(dtype) and a.dtype.kind in "iub":
        a = a.astype(np.float64)                         # exact for |x| < 2**53, then one rounding below
    if dtype == "bf16" and a.dtype == np.float64:
        return _f64_to_bf16(a)
    return a.astype(dt)


def _f64_to_bf16(a: np.ndarray) -> np.ndarray:
    """Round float64 to bfloat16 once (ml_dtypes goes through float32 and would round twice): round to float32
    with round-to-odd, then to bfloat16 with round-to-nearest-even, which is exact since f32 has >= 8 + 2 bits."""
    t = a.astype(np.float32)
    t64 = t.astype(np.float64)
    finite = np.isfinite(a)
    away = finite & (np.abs(t64) > np.abs(a))
    t = np.where(away, np.nextafter(t, np.float32(0)), t)
    inexact = finite & (t.astype(np.float64) != a)
    # (np.ascontiguousarray returns at least 1-d: reshape, so a scalar stays a 0-d value)
    bits = np.ascontiguousarray(t).view(np.uint32).reshape(t.shape) | inexact.astype(np.uint32)
    return bits.view(np.float32).astype(_np("bf16"))


def _number(value: Any, dtype: str, what: str) -> Any:
    """A Python number (an attribute: fill, identity, const value) as a NumPy scalar of ``dtype``."""
    if isinstance(value, (tuple, list, dict, str)) and not isinstance(value, bool):
        raise InterpretError(f"{what} {value!r} is not a number")
    if dtypes.is_int(dtype) or dtype == "i1":
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise InterpretError(f"{what} {value!r} is not representable in {dtype}")
            value = int(value)
        if dtype == "i1":
            if value not in (0, 1, True, False):
                raise InterpretError(f"{what} {value!r} is not a predicate (0/1/true/false)")
            return np.bool_(bool(value))
        info = np.iinfo(_np(dtype))
        if not info.min <= int(value) <= info.max:
            raise InterpretError(f"{what} {value!r} is out of range for {dtype}")
        return _np(dtype).type(int(value))
    return _convert(np.asarray(float(value), np.float64), dtype)[()]


def _tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to tf32 (10 explicit mantissa bits), nearest even; NaN/inf kept."""
    x = np.ascontiguousarray(x, np.float32)       # 0-d input comes back 1-d: callers pass fragments
    u = x.view(np.uint32)
    lsb = (u >> np.uint32(13)) & np.uint32(1)
    r = ((u + np.uint32(0xFFF) + lsb) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), r, x)


def _bf16_split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo): ``hi`` = x rounded to bf16 (nearest even), ``lo`` = (x - hi) rounded to bf16, both as float32
    (the operand split of ``precision = bf16x3``); NaN/inf kept in ``hi``, ``lo`` 0 there."""
    def to_bf16(v: np.ndarray) -> np.ndarray:           # ml_dtypes rounds to nearest even
        return np.asarray(v, np.float32).astype(_np("bf16")).astype(np.float32)
    x = np.asarray(x, np.float32)
    hi = to_bf16(x)
    with np.errstate(invalid="ignore"):
        lo = np.where(np.isfinite(x), to_bf16(x - hi), np.float32(0.0)).astype(np.float32)
    return hi, lo


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.size(x) else np.asarray(x, np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


_FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "erf": _erf, "sigmoid": _sigmoid, "floor": np.floor, "ceil": np.ceil, "recip": lambda x: 1.0 / x,
    "log1p": np.log1p, "expm1": np.expm1,
}
_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal}
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}
_VECTOR_CATEGORIES = ("unary", "binary", "compare", "select", "cast")
_VECTOR_OPS = ("const", "launch", "tuple", "record", "get", "field", "if", "yield")


# ----------------------------------------------------------------------------------------------- interpreter

class _Interpreter:
    def __init__(self, module: Module, kernel: Kernel, args: dict[str, Any], params: dict[str, Any],
                 max_ops: int | None = None):
        self.module = module
        self.max_ops = max_ops
        self.ops_left = max_ops
        self.kernel = kernel
        self.env: dict[str, Any] = {}
        self.pid: int | None = None
        self.group: tuple[int, tuple[int, ...]] | None = None
        self.batch: tuple[int, ...] | None = None
        self._le_cache: dict[LaunchExpr, Any] = {}
        self._shape_cache: dict[Type, tuple[int, ...]] = {}
        self._vec_cache: dict[int, bool] = {}
        self._workspaces: dict[int, _Mem] = {}
        self.handlers = self._handlers()
        self._bind(args, params)

    # -- errors --------------------------------------------------------------------------------------------
    def where(self, op: Op | None) -> str:
        loc = location(self.kernel, op)
        if op is not None and op.loc is not None:
            loc += f" at {op.loc}"
        if self.pid is not None:
            loc += f", program {self.pid}"
            if self.group is not None:
                loc += f" (segment {self.group[0]}, coordinates {self.group[1]})"
        return loc

    def error(self, op: Op | None, message: str) -> InterpretError:
        return InterpretError(message, self.where(op))

    # -- binding -------------------------------------------------------------------------------------------
    def _bind(self, args: dict[str, Any], params: dict[str, Any]) -> None:
        k = self.kernel
        symbols: dict[str, Any] = {}
        declared = {p.name for p in self.module.params}
        for name in params:
            if name not in declared:
                raise self.error(None, f"unknown physical parameter {name!r} (declared: "
                                       f"{', '.join(sorted(declared)) or 'none'})")
        for p in self.module.params:
            v = params.get(p.name, p.default)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise self.error(None, f"parameter {p.name} must be an integer, not {v!r}")
            symbols[p.name] = int(v)
        abi_names = {a.name for a in k.abi}
        for name in args:
            if name not in abi_names:
                raise self.error(None, f"argument {name!r} is not in the ABI of kernel {k.name} "
                                       f"({', '.join(a.name for a in k.abi)})")
        for a in k.abi:
            if a.name not in args and not a.private:
                raise self.error(None, f"missing argument {a.name!r} ({a.value.type})")

        def bind(name: str, value: int, what: str) -> None:
            if name in symbols and symbols[name] != value:
                raise self.error(None, f"symbol {name} is {symbols[name]} but {what} gives {value}")
            symbols[name] = value

        # views given by the caller: copies that keep the callers' aliasing
        arrays = {}
        for a in k.abi:
            if a.is_view and a.name in args:
                t = a.value.type
                arr = np.asarray(args[a.name])
                if arr.ndim != t.rank:
                    raise self.error(None, f"argument {a.name!r} has rank {arr.ndim}, the view {t} has rank "
                                           f"{t.rank}")
                arrays[a.name] = arr
        copies = _copy_arrays(arrays, {a.name: _np(a.value.type.dtype) for a in k.abi if a.name in arrays},
                              {a.name: a.alias for a in k.abi})
        for a in k.abi:
            if a.name in copies:
                for axis, e in enumerate(a.value.type.shape):
                    if isinstance(e, Sym):
                        bind(e.name, copies[a.name].shape[axis], f"axis {axis} of argument {a.name!r}")
        _solve_product_extents(k, copies, symbols, bind)
        # scalars
        scalars: dict[str, Any] = {}
        for a in k.abi:
            if not a.is_view and a.name in args:
                dt = a.value.type.dtype
                v = args[a.name]
                try:
                    scalars[a.name] = _scalar_arg(v, dt)
                except InterpretError as e:
                    raise self.error(None, f"argument {a.name!r}: {e.message}") from None
                if dtypes.is_int(dt) or dt == "i1":
                    bind(a.name, int(scalars[a.name]) if dt != "i1" else bool(scalars[a.name]),
                         f"argument {a.name!r}")
        self.symbols = symbols
        self.meta = {name: _meta(arr) for name, arr in copies.items()}
        for a in k.abi:
            if not a.is_view and a.name not in args:        # private scalar with its producer
                if a.producer is None:
                    raise self.error(None, f"private scalar {a.name!r} has no producer and was not given")
                v = self.le(a.producer, None)
                scalars[a.name] = _scalar_arg(v, a.value.type.dtype)
                if dtypes.is_int(a.value.type.dtype):
                    bind(a.name, int(v), f"the producer of {a.name!r}")
            elif not a.is_view and a.producer is not None:
                want = self.le(a.producer, None)
                if int(scalars[a.name]) != int(want):
                    raise self.error(None, f"private scalar {a.name!r} given as {scalars[a.name]} but its producer "
                                           f"{a.producer} gives {want}")
        self._le_cache.clear()
        # check every view extent, allocate workspaces, check declared strides
        self.mems: dict[str, _Mem] = {}
        for a in k.abi:
            if not a.is_view:
                continue
            t = a.value.type
            if a.name in copies:
                arr = copies[a.name]
                for axis, e in enumerate(t.shape):
                    want = self.le(e, None)
                    if want != arr.shape[axis]:
                        raise self.error(None, f"argument {a.name!r} has extent {arr.shape[axis]} on axis {axis} "
                                               f"but the view type {t} needs {want}")
                undefined = a.access == "write"
            else:
                shape = tuple(int(self.le(e, None)) for e in t.shape)
                arr = np.full(shape, _UNDEFINED_FLOAT if dtypes.is_float(t.dtype) else 0, _np(t.dtype))
                self.meta[a.name] = _meta(arr)
                undefined = True
            self.mems[a.name] = _Mem(a.name, "view", arr, a.access or "readwrite", undefined)
        for a in k.abi:
            if a.is_view and a.strides is not None:
                actual = self.meta[a.name].strides
                for axis, e in enumerate(a.strides):
                    want = self.le(e, None)
                    if self.meta[a.name].shape[axis] > 1 and want != actual[axis]:
                        raise self.error(None, f"argument {a.name!r} has element stride {actual[axis]} on axis "
                                               f"{axis} but the ABI declares {e} = {want}")
        self.abi_values = [self.mems[a.name] if a.is_view else scalars[a.name] for a in k.abi]

    # -- evaluation helpers --------------------------------------------------------------------------------
    def le(self, e: LaunchExpr, op: Op | None) -> Any:
        try:
            return self._le_cache[e]
        except KeyError:
            pass
        try:
            v = evaluate(e, self.symbols, self.meta)
        except IntentError as err:
            raise self.error(op, f"cannot evaluate LaunchExpr {e}: {err.message}") from None
        self._le_cache[e] = v
        return v

    def shape(self, t: Type, op: Op | None = None) -> tuple[int, ...]:
        s = self._shape_cache.get(t)
        if s is None:
            if isinstance(t, (FragmentType, ViewType, BufferType)):
                s = tuple(int(self.le(e, op)) for e in t.shape)
                if any(x < 0 for x in s):
                    raise self.error(op, f"type {t} has a negative extent {s}")
            else:
                s = ()
            self._shape_cache[t] = s
        return s

    def conform(self, value: Any, t: Type, op: Op | None) -> Any:
        """Convert a computed value to its declared type; a shape mismatch is an error."""
        if isinstance(t, (ViewType, BufferType)):
            if not isinstance(value, _Mem):
                raise self.error(op, f"expected a {t}, got {type(value).__name__}")
            return value
        if isinstance(t, TupleType):
            if not isinstance(value, (tuple, _Record)) or len(value) != len(t.items):
                raise self.error(op, f"expected a {t}, got {value!r}")
            items = value.values if isinstance(value, _Record) else value
            out = tuple(self.conform(v, it, op) for v, it in zip(items, t.items))
            return _Record(value.fields, out) if isinstance(value, _Record) else out
        if isinstance(value, (_Mem, tuple, _Record)):
            raise self.error(op, f"expected a {t}, got a {type(value).__name__}")
        want = self.shape(t, op)
        a = np.asarray(value)
        if a.shape != want:
            b = self.batch
            if b is None or (a.shape != b + want and a.shape != ()):
                raise self.error(op, f"computed shape {a.shape} does not match the declared type {t} "
                                     f"(shape {want})")
        dt = _np(t.dtype)
        if a.dtype != dt:
            a = _convert(a, t.dtype)
        return a[()] if a.ndim == 0 else a

    def val(self, v: Any) -> Any:
        return self.env[v.name]

    # -- running -------------------------------------------------------------------------------------------
    def run(self) -> dict[str, np.ndarray]:
        k = self.kernel
        if len(k.body.args) != len(k.abi) + 1:
            raise self.error(None, f"the body takes {len(k.body.args)} arguments; the ABI has {len(k.abi)} "
                                   f"values plus the program coordinate")
        self.segments = []
        offset = 0
        for i, seg in enumerate(k.space.segments):
            ext = tuple(int(self.le(e, None)) for e in seg.extents)
            if any(e < 0 for e in ext):
                raise self.error(None, f"segment {i} has a negative extent {ext}")
            length = int(np.prod(ext, dtype=np.int64)) if ext else 1
            g = None
            if seg.order == "grouped":
                if not 1 <= seg.group_axis < len(ext):
                    raise self.error(None, f"segment {i}: grouped order's axis {seg.group_axis} is not in "
                                           f"[1, {len(ext)})")
                if seg.group_size is None:
                    raise self.error(None, f"segment {i}: grouped order without a group size")
                g = int(self.le(seg.group_size, None))
                if g <= 0:
                    raise self.error(None, f"segment {i}: group size {g} is not positive")
            elif seg.order != "row_major":
                raise self.error(None, f"segment {i}: unknown program order {seg.order!r}")
            self.segments.append((offset, length, ext, seg, g))
            offset += length
        grid = int(self.le(k.space.grid, None))
        if grid < 0:
            raise self.error(None, f"negative grid {grid}")
        for pid in range(grid):
            self.pid = pid
            self.run_region(k.body, [*self.abi_values, np.int64(pid)], None)
        self.pid = None
        return {a.name: self.mems[a.name].array for a in k.abi
                if a.is_view and not a.private and a.access in ("write", "readwrite")}

    def run_region(self, region: Region, args: Sequence[Any], parent: Op | None) -> list[Any]:
        if len(args) != len(region.args):
            raise self.error(parent, f"region takes {len(region.args)} arguments, got {len(args)}")
        env = self.env
        for a, v in zip(region.args, args):
            env[a.name] = self.conform(v, a.type, parent)
        for op in region.ops:
            if op.name == "yield":
                return [env[v.name] for v in op.operands]
            self.run_op(op)
        return []

    def run_op(self, op: Op) -> None:
        if self.ops_left is not None:
            self.ops_left -= 1
            if self.ops_left < 0:
                raise self.error(op, f"the run exceeded max_ops = {self.max_ops} op executions")
        handler = self.handlers.get(op.name)
        if handler is None:
            raise self.error(op, f"op {op.name!r} is not part of the shared GPU IR")
        try:
            outs = handler(op)
            if outs is None:
                outs = []
            if len(outs) != len(op.results):
                raise self.error(op, f"op computed {len(outs)} results but declares {len(op.results)}")
            for r, v in zip(op.results, outs):
                self.env[r.name] = self.conform(v, r.type, op)
        except (InterpretError, _NotVectorizable):
            raise
        except IntentError as e:
            raise self.error(op, e.message) from e
        except Exception as e:  # noqa: BLE001 - any NumPy failure becomes a located InterpretError
            raise self.error(op, f"{type(e).__name__}: {e}") from e

    def _handlers(self) -> dict[str, Callable[[Op], list[Any] | None]]:
        h: dict[str, Callable[[Op], list[Any] | None]] = {}
        for name, spec in SPECS.items():
            m = getattr(self, "op_" + name, None)
            if m is None:
                m = {"unary": self.op_unary, "binary": self.op_binary}.get(spec.category)
            if m is None and name in ("load", "gather", "atomic_load", "buffer_load"):
                m = self.op_read
            if m is None and name in ("store", "scatter", "buffer_store", "atomic_store"):
                m = self.op_write
            if m is not None:
                h[name] = m
        return h

    # -- constants -----------------------------------------------------------------------------------------
    def op_const(self, op: Op) -> list[Any]:
        t = op.result.type
        if isinstance(t, TupleType):
            raise self.error(op, "a const is a scalar or a fragment")
        v = _number(op.attrs["value"], t.dtype, "const value")
        if isinstance(t, FragmentType):
            return [np.full(self.shape(t, op), v, _np(t.dtype))]
        return [v]

    def op_launch(self, op: Op) -> list[Any]:
        v = self.le(op.attrs["expr"], op)
        if isinstance(v, tuple):
            raise self.error(op, f"LaunchExpr {op.attrs['expr']} is a tuple, not a scalar")
        t = op.result.type
        if isinstance(t, FragmentType):
            return [np.full(self.shape(t, op), v, _np(t.dtype))]
        return [_number(v, t.dtype, "launch value")]

    def op_range(self, op: Op) -> list[Any]:
        t = op.result.type
        shape = self.shape(t, op)
        if len(shape) != 1:
            raise self.error(op, f"range makes a rank-1 fragment, not {t}")
        return [np.arange(shape[0], dtype=np.int64) + int(op.attrs.get("start", 0))]

    # -- elementwise ---------------------------------------------------------------------------------------
    def op_unary(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        dt = op.operands[0].type.dtype
        name = op.name
        if dtypes.is_float(dt):
            if name == "not":
                raise self.error(op, f"not is undefined on {dt}")
            return [_convert(_FLOAT_UNARY[name](x.astype(np.float64)), dt)]
        if name == "not":
            return [np.logical_not(x) if dt == "i1" else np.invert(x)]
        if dt == "i1":
            raise self.error(op, f"{name} is undefined on i1")
        if name == "neg":
            return [np.negative(x)]
        if name == "abs":
            return [np.abs(x) if dt not in dtypes.UNSIGNED_DTYPES else x]
        if name in ("floor", "ceil"):
            return [x]
        raise self.error(op, f"{name} is undefined on integer type {dt}")

    def op_binary(self, op: Op) -> list[Any]:
        a = np.asarray(self.val(op.operands[0]))
        b = np.asarray(self.val(op.operands[1]))
        dt = op.operands[0].type.dtype
        if op.operands[1].type.dtype != dt:
            raise self.error(op, f"operand types differ: {op.operands[0].type} and {op.operands[1].type}")
        return [_binary(self, op, op.name, a, b, dt)]

    def op_cmp(self, op: Op) -> list[Any]:
        a = np.asarray(self.val(op.operands[0]))
        b = np.asarray(self.val(op.operands[1]))
        if a.dtype == _np("bf16") or a.dtype == np.float16:
            a, b = a.astype(np.float32), b.astype(np.float32)
        return [_CMP[op.attrs["pred"]](a, b)]

    def op_select(self, op: Op) -> list[Any]:
        c, a, b = (np.asarray(self.val(v)) for v in op.operands)
        if c.dtype != np.bool_:
            raise self.error(op, f"select condition must be i1, not {op.operands[0].type}")
        if self.batch is not None and c.ndim == 0 and a.ndim == 0 and b.ndim == 0:
            return [a if c else b]
        return [np.where(c, a, b)]

    def op_cast(self, op: Op) -> list[Any]:
        return [_convert(self.val(op.operands[0]), op.result.type.dtype)]

    def op_bitcast(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        src, dst = op.operands[0].type.dtype, op.result.type.dtype
        if dtypes.BITS[src] != dtypes.BITS[dst] or "i1" in (src, dst):
            raise self.error(op, f"bitcast between {src} and {dst}: element widths differ")
        return [np.ascontiguousarray(x).view(_np(dst)).reshape(x.shape)]

    # -- shape ---------------------------------------------------------------------------------------------
    def op_broadcast(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        shape = self.shape(op.result.type, op)
        dims = tuple(int(d) for d in op.attrs["dims"])
        if len(dims) != x.ndim:
            raise self.error(op, f"dims {list(dims)} for an operand of rank {x.ndim}")
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            raise self.error(op, f"dims {list(dims)} are not distinct axes of the rank-{len(shape)} result")
        for i, d in enumerate(dims):
            if x.shape[i] not in (1, shape[d]):
                raise self.error(op, f"operand axis {i} of extent {x.shape[i]} cannot broadcast to result axis "
                                     f"{d} of extent {shape[d]}")
        return [np.broadcast_to(place_axes(x, dims, len(shape)), shape).copy()]

    def op_reshape(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        shape = self.shape(op.result.type, op)
        if x.size != int(np.prod(shape, dtype=np.int64)):
            raise self.error(op, f"cannot reshape {x.shape} ({x.size} members) to {shape}")
        return [x.reshape(shape)]

    def op_transpose(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        perm = tuple(int(p) for p in op.attrs["perm"])
        if sorted(perm) != list(range(x.ndim)):
            raise self.error(op, f"perm {list(perm)} is not a permutation of {x.ndim} axes")
        return [np.transpose(x, perm)]

    def op_join(self, op: Op) -> list[Any]:
        a, b = (np.asarray(self.val(v)) for v in op.operands)
        if a.shape != b.shape:
            raise self.error(op, f"join of different shapes {a.shape} and {b.shape}")
        return [np.stack([a, b], axis=-1)]

    def op_extract(self, op: Op) -> list[Any]:
        x = np.asarray(self.val(op.operands[0]))
        idx = tuple(int(i) for i in op.attrs["index"])
        if len(idx) != x.ndim or any(not 0 <= i < n for i, n in zip(idx, x.shape)):
            raise self.error(op, f"extract index {list(idx)} is outside a fragment of shape {x.shape}")
        return [x[idx]]

    def op_tuple(self, op: Op) -> list[Any]:
        return [tuple(self.val(v) for v in op.operands)]

    def op_record(self, op: Op) -> list[Any]:
        fields = op.attrs["fields"]
        if len(fields) != len(op.operands):
            raise self.error(op, f"{len(fields)} field names for {len(op.operands)} values")
        return [_Record(fields, [self.val(v) for v in op.operands])]

    def op_get(self, op: Op) -> list[Any]:
        t = self.val(op.operands[0])
        items = t.values if isinstance(t, _Record) else t
        i = int(op.attrs["index"])
        if not isinstance(items, tuple) or not 0 <= i < len(items):
            raise self.error(op, f"get index {i} outside a tuple of {len(items) if isinstance(items, tuple) else 0}")
        return [items[i]]

    def op_field(self, op: Op) -> list[Any]:
        r = self.val(op.operands[0])
        name = op.attrs["name"]
        if not isinstance(r, _Record) or name not in r.fields:
            raise self.error(op, f"no field {name!r} in {getattr(r, 'fields', 'a non-record')}")
        return [r.values[r.fields.index(name)]]

    # -- accesses ------------------------------------------------------------------------------------------
    def _access(self, op: Op) -> tuple[_Mem, list[np.ndarray], list[np.ndarray], np.ndarray | None]:
        if self.batch is not None:
            raise _NotVectorizable()
        mem = self.val(op.operands[0])
        if not isinstance(mem, _Mem):
            raise self.error(op, f"%{op.operands[0].name} is not a view or a buffer")
        has_valid = bool(op.attrs.get("valid", False))
        ncoord, npay = access_layout(op.name, len(op.operands), has_valid)
        if ncoord != len(mem.shape):
            raise self.error(op, f"{ncoord} coordinates for the rank-{len(mem.shape)} {mem.describe()}")
        coords = [np.asarray(self.val(v)) for v in op.operands[1:1 + ncoord]]
        payload = [np.asarray(self.val(v)) for v in op.operands[1 + ncoord:1 + ncoord + npay]]
        valid = np.asarray(self.val(op.operands[-1])) if has_valid else None
        for c, v in zip(coords, op.operands[1:1 + ncoord]):
            if c.dtype.kind not in "iu":
                raise self.error(op, f"coordinate %{v.name} is {v.type}, not an integer")
        if valid is not None and valid.dtype != np.bool_:
            raise self.error(op, f"validity %{op.operands[-1].name} is not i1")
        return mem, coords, payload, valid

    def _members(self, op: Op, mem: _Mem, coords: list[np.ndarray], valid: np.ndarray | None,
                 shape: tuple[int, ...]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """(the valid mask of the access shape, the valid members' coordinates in row-major member order)."""
        try:
            cs = [np.broadcast_to(c, shape) for c in coords]
            v = np.ones(shape, bool) if valid is None else np.broadcast_to(valid, shape)
        except ValueError:
            raise self.error(op, f"coordinates/validity of shapes {[c.shape for c in coords]} "
                                 f"do not broadcast to the access shape {shape}") from None
        inside = np.ones(shape, bool)
        for axis, c in enumerate(cs):
            inside &= (c >= 0) & (c < mem.shape[axis])
        bad = v & ~inside
        if bad.any():
            member = tuple(int(i) for i in np.argwhere(bad)[0])
            coord = tuple(int(c[member]) for c in cs)
            verb = {"read": "reads", "write": "writes"}.get(SPECS[op.name].effect, "updates")
            if any(not 0 <= coord[a] < mem.shape[a] for a in op.attrs.get("checked") or ()):
                raise self.error(op, f"data-dependent subscript out of range (a checked coordinate): member "
                                     f"{member} {verb} coordinate {coord} of {mem.describe()} with shape "
                                     f"{mem.shape}; the generated launcher raises SubscriptOutOfRange here")
            raise self.error(op, f"unguarded out-of-bounds access: member {member} {verb} coordinate "
                                 f"{coord} of {mem.describe()} with shape {mem.shape}"
                             + ("" if valid is None else " although its validity is true"))
        if not cs:
            return v, (np.zeros(int(np.count_nonzero(v)), np.intp),)
        return v, tuple(c[v] for c in cs)

    def _check_defined(self, op: Op, mem: _Mem, idx: tuple[np.ndarray, ...]) -> None:
        if mem.written is None:
            return
        unw = ~mem.written[idx]
        if unw.any():
            k = int(np.argmax(unw))
            coord = tuple(int(i[k]) for i in idx) if mem.shape else ()
            what = "first_write buffer" if mem.kind == "buffer" else (
                "write-only view" if mem.access == "write" else "uninitialised workspace")
            raise self.error(op, f"reads element {coord} of {what} %{mem.name} before this launch wrote it")

    def _check_writable(self, op: Op, mem: _Mem) -> None:
        if mem.access == "read":
            raise self.error(op, f"{op.name} writes {mem.describe()}, whose ABI access mode is read")

    def op_read(self, op: Op) -> list[Any]:
        mem, coords, _, valid = self._access(op)
        t = op.result.type
        shape = self.shape(t, op)
        v, idx = self._members(op, mem, coords, valid, shape)
        self._check_defined(op, mem, idx)
        dt = _np(t.dtype)
        data = mem.nd[idx]
        if v.all():
            return [data.reshape(shape).astype(dt, copy=False)]
        fill = op.attrs.get("fill")
        if fill is None:
            raise self.error(op, f"{op.name} has invalid members but no fill")
        out = np.full(shape, _number(fill, t.dtype, "fill"), dt)
        out[v] = data
        return [out]

    def _write_shape(self, op: Op, coords: list[np.ndarray], payload: list[np.ndarray],
                     valid: np.ndarray | None) -> tuple[int, ...]:
        shapes = [c.shape for c in coords] + [p.shape for p in payload] + ([valid.shape] if valid is not None
                                                                            else [])
        try:
            return np.broadcast_shapes(*shapes)
        except ValueError:
            raise self.error(op, f"coordinates/payload/validity shapes {shapes} do not broadcast") from None

    def _collision(self, op: Op, mem: _Mem, idx: tuple[np.ndarray, ...]) -> np.ndarray | None:
        """Flat element numbers of the members, or None when all are distinct."""
        if idx[0].size < 2:
            return None
        flat = np.ravel_multi_index(idx, mem.nd.shape)
        uniq, counts = np.unique(flat, return_counts=True)
        if len(uniq) == len(flat):
            return None
        return flat

    def op_write(self, op: Op) -> None:
        mem, coords, payload, valid = self._access(op)
        self._check_writable(op, mem)
        shape = self._write_shape(op, coords, payload, valid)
        v, idx = self._members(op, mem, coords, valid, shape)
        vals = _convert(np.broadcast_to(payload[0], shape)[v], _dtype_name(mem.array.dtype))
        flat = self._collision(op, mem, idx)
        if flat is not None:
            if op.name == "atomic_store":        # the last colliding member (row-major) wins
                last = np.unique(flat[::-1], return_index=True)[1]
                keep = np.sort(len(flat) - 1 - last)
                idx = tuple(i[keep] for i in idx)
                vals = vals[keep]
            else:
                dup = _first_duplicate(flat)
                coord = tuple(int(i[dup]) for i in idx) if mem.shape else ()
                kind = "a unique scatter" if op.name == "scatter" else f"a {op.name} (members must be unique)"
                raise self.error(op, f"collision in {kind}: two valid members write element {coord} of "
                                     f"{mem.describe()}")
        mem.nd[idx] = vals
        if mem.written is not None:
            mem.written[idx] = True
        return None

    def op_scatter_reduce(self, op: Op) -> None:
        mem, coords, payload, valid = self._access(op)
        self._check_writable(op, mem)
        shape = self._write_shape(op, coords, payload, valid)
        v, idx = self._members(op, mem, coords, valid, shape)
        self._check_defined(op, mem, idx)
        comb = op.attrs["combine"]
        dt = _dtype_name(mem.array.dtype)
        vals = _convert(np.broadcast_to(payload[0], shape)[v], dt)
        ufunc = _rmw_ufunc(self, op, comb, dt)
        ufunc.at(mem.nd, idx, vals)
        return None

    def op_atomic_rmw(self, op: Op) -> list[Any]:
        mem, coords, payload, valid = self._access(op)
        self._check_writable(op, mem)
        shape = self.shape(op.result.type, op)
        v, idx = self._members(op, mem, coords, valid, shape)
        self._check_defined(op, mem, idx)
        dt = _dtype_name(mem.array.dtype)
        vals = _convert(np.broadcast_to(payload[0], shape)[v], dt)
        kind = op.attrs["kind"]
        fn = (lambda old, new: new) if kind == "xchg" else _rmw_ufunc(self, op, kind, dt)
        old = mem.nd[idx].copy()
        if self._collision(op, mem, idx) is None:
            mem.nd[idx] = fn(old, vals)
        else:                                      # colliding members see each other, in row-major order
            for k in range(len(vals)):
                at = tuple(i[k] for i in idx)
                old[k] = mem.nd[at]
                mem.nd[at] = fn(mem.nd[at], vals[k])
        out = np.zeros(shape, mem.array.dtype)
        out[v] = old
        return [out]

    def op_atomic_cas(self, op: Op) -> list[Any]:
        mem, coords, payload, valid = self._access(op)
        self._check_writable(op, mem)
        shape = self.shape(op.result.type, op)
        v, idx = self._members(op, mem, coords, valid, shape)
        self._check_defined(op, mem, idx)
        dt = _dtype_name(mem.array.dtype)
        cmp = _convert(np.broadcast_to(payload[0], shape)[v], dt)
        new = _convert(np.broadcast_to(payload[1], shape)[v], dt)
        bits = np.dtype(f"u{mem.array.dtype.itemsize}") if mem.array.dtype != np.bool_ else np.dtype(np.bool_)
        old = mem.nd[idx].copy()
        if self._collision(op, mem, idx) is None:
            hit = old.view(bits) == cmp.view(bits)
            mem.nd[idx] = np.where(hit, new, old)
        else:
            for k in range(len(new)):
                at = tuple(i[k] for i in idx)
                old[k] = mem.nd[at]
                if np.asarray(old[k]).view(bits) == np.asarray(cmp[k]).view(bits):
                    mem.nd[at] = new[k]
        out = np.zeros(shape, mem.array.dtype)
        out[v] = old
        return [out]

    def op_alloc(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        t = op.result.type
        if not isinstance(t, BufferType):
            raise self.error(op, f"alloc makes a buffer, not {t}")
        if t.scope == "workspace" and id(op) in self._workspaces:
            return [self._workspaces[id(op)]]
        shape = self.shape(t, op)
        init = op.attrs["init"]
        dt = _np(t.dtype)
        arg = op.attrs.get("arg")
        if arg is not None:
            if arg not in self.mems:
                raise self.error(op, f"alloc names ABI argument {arg!r}, which is not a view of the kernel")
            arr = self.mems[arg].array
            if arr.shape != shape or arr.dtype != dt:
                raise self.error(op, f"workspace argument {arg!r} is {arr.dtype}{list(arr.shape)}, the buffer "
                                     f"is {t}")
        else:
            arr = np.empty(shape, dt)
        if isinstance(init, str):
            if init != "first_write":
                raise self.error(op, f"unknown buffer init {init!r} (a number or first_write)")
            if arg is None:
                arr[...] = _UNDEFINED_FLOAT if dtypes.is_float(t.dtype) else 0
            mem = _Mem(op.result.name, "buffer", arr, "readwrite", undefined=True)
        else:
            arr[...] = _number(init, t.dtype, "buffer init")
            mem = _Mem(op.result.name, "buffer", arr, "readwrite", undefined=False)
        if t.scope == "workspace":
            self._workspaces[id(op)] = mem
        return [mem]

    # -- structured ----------------------------------------------------------------------------------------
    def _components(self, op: Op) -> list[np.ndarray]:
        if self.batch is not None:
            raise _NotVectorizable()
        xs = [np.asarray(self.val(v)) for v in op.operands]
        if len({x.shape for x in xs}) > 1:
            raise self.error(op, f"components have different shapes {[x.shape for x in xs]}")
        return xs

    def op_reduce(self, op: Op) -> list[Any]:
        xs = self._components(op)
        rank = xs[0].ndim
        axes = sorted({int(a) % rank if rank else int(a) for a in op.attrs["axes"]})
        if any(not 0 <= a < rank for a in axes) or not axes:
            raise self.error(op, f"reduce axes {list(op.attrs['axes'])} for rank {rank}")
        identity = op.attrs["identity"]
        if len(identity) != len(xs):
            raise self.error(op, f"{len(identity)} identities for {len(xs)} components")
        dts = [v.type.dtype for v in op.operands]
        shape = xs[0].shape
        out_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
        if any(shape[a] == 0 for a in axes):
            return [np.full(out_shape, _number(idn, dt, "identity"), _np(dt)) for idn, dt in zip(identity, dts)]
        comb = op.attrs["combine"]
        if comb != "region":
            return [_builtin_reduce(self, op, comb, x, dt, tuple(axes)) for x, dt in zip(xs, dts)]
        if len(op.regions) != 1:
            raise self.error(op, "combine = region needs one combiner region")
        dest = list(range(rank - len(axes), rank))
        vals = [np.moveaxis(x, axes, dest).reshape(out_shape + (-1,)) for x in xs]
        n = vals[0].shape[-1]
        while n > 1:
            half = n // 2
            a = [v[..., 0:2 * half:2] for v in vals]
            b = [v[..., 1:2 * half:2] for v in vals]
            c = self.combine(op, op.regions[0], a, b, dts)
            if n % 2:
                c = [np.concatenate([ci, v[..., n - 1:n]], axis=-1) for ci, v in zip(c, vals)]
            vals = c
            n = half + n % 2
        return [v[..., 0] for v in vals]

    def op_scan(self, op: Op) -> list[Any]:
        xs = self._components(op)
        rank = xs[0].ndim
        axis = int(op.attrs["axis"])
        if not -rank <= axis < rank:
            raise self.error(op, f"scan axis {axis} for rank {rank}")
        axis %= rank
        identity = op.attrs["identity"]
        if len(identity) != len(xs):
            raise self.error(op, f"{len(identity)} identities for {len(xs)} components")
        dts = [v.type.dtype for v in op.operands]
        rev = bool(op.attrs.get("reverse", False))
        excl = bool(op.attrs.get("exclusive", False))
        vals = [np.moveaxis(x, axis, -1) for x in xs]
        if rev:
            vals = [v[..., ::-1] for v in vals]
        n = vals[0].shape[-1]
        comb = op.attrs["combine"]
        if n == 0:
            outs = [v.copy() for v in vals]
        elif comb != "region":
            outs = [_builtin_scan(self, op, comb, v, dt) for v, dt in zip(vals, dts)]
        else:
            if len(op.regions) != 1:
                raise self.error(op, "combine = region needs one combiner region")
            outs = [np.empty(v.shape, _np(dt)) for v, dt in zip(vals, dts)]
            acc = [v[..., 0] for v in vals]
            for o, a in zip(outs, acc):
                o[..., 0] = a
            for i in range(1, n):
                acc = self.combine(op, op.regions[0], acc, [v[..., i] for v in vals], dts)
                for o, a in zip(outs, acc):
                    o[..., i] = a
        if excl and n:
            outs = [np.concatenate([np.full(o.shape[:-1] + (1,), _number(idn, dt, "identity"), _np(dt)),
                                    o[..., :-1]], axis=-1) for o, idn, dt in zip(outs, identity, dts)]
        if rev:
            outs = [o[..., ::-1] for o in outs]
        return [np.moveaxis(o, -1, axis) for o in outs]

    def op_argreduce(self, op: Op) -> list[Any]:
        (x,) = self._components(op)
        rank = x.ndim
        axis = int(op.attrs["axis"])
        if not -rank <= axis < rank:
            raise self.error(op, f"argreduce axis {axis} for rank {rank}")
        x = np.moveaxis(x, axis % rank, -1)
        if x.shape[-1] == 0:
            raise self.error(op, "argreduce over an empty axis has no result")
        kind = op.attrs["kind"]
        if op.attrs.get("tie", "lowest") != "lowest":
            raise self.error(op, f"unknown tie rule {op.attrs.get('tie')!r}")
        nan_rule = op.attrs.get("nan", "propagate")
        if x.dtype.kind == "f" or x.dtype == _np("bf16"):
            f = x.astype(np.float64)
            isnan = np.isnan(f)
            key = np.where(isnan, -np.inf if kind == "max" else np.inf, f)
            best = key.max(axis=-1) if kind == "max" else key.min(axis=-1)
            idx = np.argmax((key == best[..., None]) & ~isnan, axis=-1)
            if nan_rule == "propagate":
                idx = np.where(isnan.any(axis=-1), np.argmax(isnan, axis=-1), idx)
            elif nan_rule != "ignore":
                raise self.error(op, f"unknown NaN rule {nan_rule!r}")
        else:
            idx = np.argmax(x, axis=-1) if kind == "max" else np.argmin(x, axis=-1)
        value = np.take_along_axis(x, idx[..., None], axis=-1)[..., 0]
        return [value, idx]

    def op_contract(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        lhs, rhs, acc = (np.asarray(self.val(v)) for v in op.operands)
        return [self._contract(op, lhs, rhs, acc)]

    def op_scaled_contract(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        lhs, ls, rhs, rs, acc = (np.asarray(self.val(v)) for v in op.operands)
        block = int(op.attrs["scale_block"])
        if block <= 0:
            raise self.error(op, f"scale_block {block} is not positive")
        work = _contract_dtype(self, op, op.operands[4].type.dtype)

        def scaled(x: np.ndarray, s: np.ndarray, contract: Sequence[int], what: str) -> np.ndarray:
            s = s.astype(work)
            for ax in contract:
                if s.ndim != x.ndim:
                    raise self.error(op, f"{what} scale has rank {s.ndim}, the operand {x.ndim}")
                if s.shape[ax] != x.shape[ax]:
                    s = np.repeat(s, block, axis=ax)
                    s = np.take(s, np.arange(x.shape[ax]), axis=ax) if s.shape[ax] >= x.shape[ax] else s
            if s.shape != x.shape:
                raise self.error(op, f"{what} scale of shape {s.shape} does not cover the operand {x.shape} "
                                     f"with scale_block {block}")
            return x.astype(work) * s

        lhs2 = scaled(lhs, ls, op.attrs["lhs_contract"], "lhs")
        rhs2 = scaled(rhs, rs, op.attrs["rhs_contract"], "rhs")
        return [self._contract(op, lhs2, rhs2, acc)]

    def _contract(self, op: Op, lhs: np.ndarray, rhs: np.ndarray, acc: np.ndarray) -> np.ndarray:
        lc = [int(a) for a in op.attrs["lhs_contract"]]
        rc = [int(a) for a in op.attrs["rhs_contract"]]
        lb = [int(a) for a in op.attrs.get("lhs_batch", ())]
        rb = [int(a) for a in op.attrs.get("rhs_batch", ())]
        if len(lc) != len(rc) or len(lb) != len(rb):
            raise self.error(op, "contract/batch axis lists of lhs and rhs must pair up")
        if len(set(lc + lb)) != len(lc + lb) or any(not 0 <= a < lhs.ndim for a in lc + lb) or \
                len(set(rc + rb)) != len(rc + rb) or any(not 0 <= a < rhs.ndim for a in rc + rb):
            raise self.error(op, f"bad contract/batch axes for lhs rank {lhs.ndim} and rhs rank {rhs.ndim}")
        letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        ls = [next(letters) for _ in range(lhs.ndim)]
        rs: list[str] = [""] * rhs.ndim
        for a, b in zip(lc + lb, rc + rb):
            if lhs.shape[a] != rhs.shape[b]:
                raise self.error(op, f"paired axes lhs {a} (extent {lhs.shape[a]}) and rhs {b} (extent "
                                     f"{rhs.shape[b]}) differ")
            rs[b] = ls[a]
        for i in range(rhs.ndim):
            if not rs[i]:
                rs[i] = next(letters)
        out = [ls[a] for a in lb] + [ls[i] for i in range(lhs.ndim) if i not in lc + lb] + \
              [rs[i] for i in range(rhs.ndim) if i not in rc + rb]
        acc_dt = op.operands[-1].type.dtype
        work = _contract_dtype(self, op, acc_dt)
        a = lhs.astype(work)
        b = rhs.astype(work)
        spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
        precision = op.attrs.get("precision", "ieee")
        if precision == "tf32" and work == np.float32:
            a, b = _tf32(a), _tf32(b)
        if precision == "bf16x3" and work == np.float32:
            (ah, al), (bh, bl) = _bf16_split(a), _bf16_split(b)
            prod = np.einsum(spec, ah, bl) + np.einsum(spec, al, bh) + np.einsum(spec, ah, bh)
        else:
            prod = np.einsum(spec, a, b)
        if prod.shape != acc.shape:
            raise self.error(op, f"contraction gives shape {prod.shape}, the accumulator is {acc.shape}")
        return (acc.astype(work) + prod.astype(work)).astype(_np(acc_dt))

    def op_histogram(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        x = np.asarray(self.val(op.operands[0]))
        if x.dtype.kind not in "iu":
            raise self.error(op, f"histogram of {op.operands[0].type}: values must be integers")
        keep = np.ones(x.shape, bool)
        if op.attrs.get("valid", False):
            keep = np.broadcast_to(np.asarray(self.val(op.operands[1]), bool), x.shape)
        rshape = self.shape(op.result.type, op)
        if len(rshape) != 1:
            raise self.error(op, f"histogram result must be a rank-1 fragment, not {op.result.type}")
        bins = rshape[0]
        v = x[keep].astype(np.int64)
        v = v[(v >= 0) & (v < bins)]
        return [np.bincount(v, minlength=bins)[:bins]]

    def op_region_fold(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        lb, ub, step = self._bounds(op)
        acc = [self.val(v) for v in op.operands[3:]]
        summarize, combine = op.regions
        for seg in range(lb, ub, step):
            s = self.run_region(summarize, [np.int64(seg)], op)
            acc = self.run_region(combine, [*acc, *s], op)
            if len(acc) != len(op.results):
                raise self.error(op, f"combine yields {len(acc)} values for {len(op.results)} results")
        return acc

    def op_region_scan(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        lb, ub, step = self._bounds(op)
        state = [self.val(v) for v in op.operands[3:]]
        summarize, combine, emit = op.regions
        for seg in range(lb, ub, step):
            self.run_region(emit, [np.int64(seg), *state], op)
            s = self.run_region(summarize, [np.int64(seg)], op)
            state = self.run_region(combine, [*state, *s], op)
            if len(state) != len(op.results):
                raise self.error(op, f"combine yields {len(state)} values for {len(op.results)} results")
        return state

    def combine(self, op: Op, region: Region, a: list[np.ndarray], b: list[np.ndarray], dts: list[str]) \
            -> list[np.ndarray]:
        """Apply a combiner region member-wise to whole arrays (vectorised when the region allows it)."""
        n = len(a)
        if len(region.args) != 2 * n:
            raise self.error(op, f"the combiner region takes {len(region.args)} arguments, not {2 * n}")
        batch = np.broadcast_shapes(*[np.shape(x) for x in a + b])
        outs: list[Any] | None = None
        if self._vectorizable(region):
            saved = self.batch
            self.batch = batch
            try:
                outs = self.run_region(region, [*a, *b], op)
            except _NotVectorizable:
                outs = None
            finally:
                self.batch = saved
        if outs is None:
            av = [np.broadcast_to(x, batch) for x in a]
            bv = [np.broadcast_to(x, batch) for x in b]
            cols: list[list[Any]] = [[] for _ in range(n)]
            for pos in np.ndindex(*batch):
                r = self.run_region(region, [x[pos] for x in av] + [x[pos] for x in bv], op)
                if len(r) != n:
                    raise self.error(op, f"the combiner yields {len(r)} values, not {n}")
                for c, v in zip(cols, r):
                    c.append(v)
            outs = [np.array(c, dtype=_np(dt)).reshape(batch) for c, dt in zip(cols, dts)]
        if len(outs) != n:
            raise self.error(op, f"the combiner yields {len(outs)} values, not {n}")
        return [np.broadcast_to(_convert(o, dt), batch) for o, dt in zip(outs, dts)]

    def _vectorizable(self, region: Region) -> bool:
        key = id(region)
        ok = self._vec_cache.get(key)
        if ok is None:
            ok = _region_is_scalar_pure(region)
            self._vec_cache[key] = ok
        return ok

    # -- control -------------------------------------------------------------------------------------------
    def _bounds(self, op: Op) -> tuple[int, int, int]:
        lb, ub, step = (int(self.val(v)) for v in op.operands[:3])
        if step <= 0:
            raise self.error(op, f"loop step {step} is not positive")
        return lb, ub, step

    def op_execution_group(self, op: Op) -> None:
        if self.batch is not None:
            raise _NotVectorizable()
        seg = int(op.attrs["segment"])
        if not 0 <= seg < len(self.segments):
            raise self.error(op, f"segment {seg} is not in the program space ({len(self.segments)} segments)")
        offset, length, ext, segment, g = self.segments[seg]
        lin = int(self.val(op.operands[0]))
        if not offset <= lin < offset + length:
            return None
        coords = segment_coordinates(lin - offset, ext, segment, g)
        saved = self.group
        self.group = (seg, tuple(int(c) for c in coords))
        try:
            self.run_region(op.regions[0], [np.int64(c) for c in coords], op)
        finally:
            self.group = saved
        return None

    def op_if(self, op: Op) -> list[Any]:
        c = np.asarray(self.val(op.operands[0]))
        if c.dtype != np.bool_:
            raise self.error(op, f"if condition must be i1, not {op.operands[0].type}")
        if c.ndim == 0:
            return self.run_region(op.regions[0 if bool(c) else 1], [], op)
        if self.batch is None:
            raise self.error(op, f"if condition must be a scalar, not {op.operands[0].type}")
        if c.all():
            return self.run_region(op.regions[0], [], op)
        if not c.any():
            return self.run_region(op.regions[1], [], op)
        t = self.run_region(op.regions[0], [], op)
        e = self.run_region(op.regions[1], [], op)
        return [np.where(c, x, y) for x, y in zip(t, e)]

    def op_for(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        lb, ub, step = self._bounds(op)
        carried = [self.val(v) for v in op.operands[3:]]
        body = op.regions[0]
        for iv in range(lb, ub, step):
            carried = self.run_region(body, [np.int64(iv), *carried], op)
            if len(carried) != len(op.results):
                raise self.error(op, f"the loop body yields {len(carried)} values for {len(op.results)} carried")
        return carried

    def op_while(self, op: Op) -> list[Any]:
        if self.batch is not None:
            raise _NotVectorizable()
        carried = [self.val(v) for v in op.operands]
        cond, body = op.regions
        for _ in range(MAX_WHILE_ITERATIONS):
            out = self.run_region(cond, carried, op)
            if not out:
                raise self.error(op, "the while condition region yields nothing")
            c = np.asarray(out[0])
            if c.dtype != np.bool_ or c.ndim:
                raise self.error(op, "the while condition must yield an i1 scalar first")
            if not bool(c):
                return out[1:]
            carried = self.run_region(body, out[1:], op)
        raise self.error(op, f"while loop did not finish within {MAX_WHILE_ITERATIONS} iterations")


# ------------------------------------------------------------------------------------------- free functions

def _dtype_name(dt: np.dtype) -> str:
    return dtypes.from_numpy(dt)


def _first_duplicate(flat: np.ndarray) -> int:
    seen: set[int] = set()
    for k, f in enumerate(flat.tolist()):
        if f in seen:
            return k
        seen.add(f)
    return 0


def _scalar_arg(v: Any, dtype: str) -> Any:
    a = np.asarray(v)
    if a.ndim != 0:
        raise InterpretError(f"a scalar argument of type {dtype} needs a scalar, not shape {a.shape}")
    if a.dtype.kind in "iub" or dtypes.is_float(dtype):
        if dtypes.is_float(dtype):
            return _convert(a, dtype)[()]
        return _number(a.item(), dtype, "scalar argument")
    return _number(float(a), dtype, "scalar argument")


def _meta(arr: np.ndarray) -> ViewMeta:
    item = arr.dtype.itemsize
    return ViewMeta(tuple(int(s) for s in arr.shape), tuple(int(s) // item for s in arr.strides))


def _copy_arrays(arrays: dict[str, np.ndarray], want: dict[str, np.dtype], alias: dict[str, str | None]) \
        -> dict[str, np.ndarray]:
    """Copy the views' arrays. Arrays of views in one alias class that share memory share it again in the copies;
    all other arrays are copied independently (views without a common alias class are promised not to overlap,
    so an array passed twice, e.g. as a placeholder for two outputs, becomes two arrays)."""
    out: dict[str, np.ndarray] = {}
    groups: dict[tuple[str, int], list[str]] = {}
    for name, a in arrays.items():
        if alias.get(name) is None or a.dtype != want[name]:
            continue
        groups.setdefault((alias[name], id(_root(a))), []).append(name)
    for names in groups.values():
        root = _root(arrays[names[0]])
        if len(names) < 2 or not (root.flags.c_contiguous or root.flags.f_contiguous):
            continue
        root_copy = np.array(root, copy=True, order="K")
        flat = root_copy.reshape(-1, order="A").view(np.uint8)
        base_addr = root.__array_interface__["data"][0]
        for n in names:
            a = arrays[n]
            if a.size == 0:
                continue
            off = a.__array_interface__["data"][0] - base_addr
            start = flat[off:off + a.dtype.itemsize].view(a.dtype)
            out[n] = np.lib.stride_tricks.as_strided(start, a.shape, a.strides, writeable=True)
    for n, a in arrays.items():
        if n not in out:
            out[n] = np.array(a, copy=True, order="K") if a.dtype == want[n] \
                else _convert(a, _dtype_name(want[n])).copy(order="K")
    return out


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _contract_dtype(interp: _Interpreter, op: Op, acc_dt: str) -> np.dtype:
    if dtypes.is_float(acc_dt):
        return _work_float(acc_dt)
    if dtypes.is_int(acc_dt):
        return _np(acc_dt)
    raise interp.error(op, f"contract accumulator type {acc_dt} is not a number type")


def _rmw_ufunc(interp: _Interpreter, op: Op, kind: str, dt: str) -> np.ufunc:
    if kind in ("and", "or", "xor") and dtypes.is_float(dt):
        raise interp.error(op, f"combine {kind} is undefined on {dt}")
    if dt == "i1" and kind in ("add", "mul"):
        raise interp.error(op, f"combine {kind} is undefined on i1")
    return _UFUNC[kind]


def _builtin_reduce(interp: _Interpreter, op: Op, comb: str, x: np.ndarray, dt: str, axes: tuple[int, ...]) \
        -> np.ndarray:
    if dtypes.is_float(dt):
        if comb in ("and", "or", "xor"):
            raise interp.error(op, f"combine {comb} is undefined on {dt}")
        w = x.astype(_work_float(dt))
        r = {"add": lambda: np.sum(w, axis=axes, dtype=w.dtype), "mul": lambda: np.prod(w, axis=axes,
                                                                                          dtype=w.dtype),
             "max": lambda: np.max(w, axis=axes), "min": lambda: np.min(w, axis=axes)}[comb]()
        return np.asarray(r).astype(_np(dt))
    if dt == "i1":
        if comb in ("add", "mul"):
            raise interp.error(op, f"combine {comb} is undefined on i1")
        f = {"max": np.logical_or, "or": np.logical_or, "min": np.logical_and, "and": np.logical_and,
             "xor": np.logical_xor}[comb]
        return f.reduce(x, axis=axes)
    f = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
         "or": np.bitwise_or, "xor": np.bitwise_xor}[comb]
    return f.reduce(x, axis=axes, dtype=x.dtype)


def _builtin_scan(interp: _Interpreter, op: Op, comb: str, x: np.ndarray, dt: str) -> np.ndarray:
    """Inclusive scan along the last axis."""
    if dtypes.is_float(dt):
        if comb in ("and", "or", "xor"):
            raise interp.error(op, f"combine {comb} is undefined on {dt}")
        w = x.astype(_work_float(dt))
        f = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[comb]
        return f.accumulate(w, axis=-1, dtype=w.dtype).astype(_np(dt))
    if dt == "i1":
        if comb in ("add", "mul"):
            raise interp.error(op, f"combine {comb} is undefined on i1")
        f = {"max": np.logical_or, "or": np.logical_or, "min": np.logical_and, "and": np.logical_and,
             "xor": np.logical_xor}[comb]
        return f.accumulate(x, axis=-1)
    f = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
         "or": np.bitwise_or, "xor": np.bitwise_xor}[comb]
    return f.accumulate(x, axis=-1, dtype=x.dtype)


def _binary(interp: _Interpreter, op: Op, name: str, a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    if dtypes.is_float(dt):
        if name in ("and", "or", "xor", "shl", "shr"):
            raise interp.error(op, f"{name} is undefined on {dt}")
        if name in ("add", "sub", "mul", "div"):
            w = _work_float(dt)
            x, y = a.astype(w), b.astype(w)
            r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}[name](x, y)
            return r.astype(_np(dt))
        x, y = a.astype(np.float64), b.astype(np.float64)
        r = {"rem": np.fmod, "mod": np.mod, "floordiv": np.floor_divide, "max": np.maximum, "min": np.minimum,
             "pow": np.power}[name](x, y)
        return _convert(r, dt)
    if dt == "i1":
        f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor, "max": np.logical_or,
             "min": np.logical_and}.get(name)
        if f is None:
            raise interp.error(op, f"{name} is undefined on i1")
        return f(a, b)
    npdt = _np(dt)
    x, y = a.astype(npdt), b.astype(npdt)
    if name in ("div", "rem", "floordiv", "mod"):
        if np.any(y == 0):
            raise interp.error(op, f"integer {name} by zero")
        if name == "floordiv":
            return np.floor_divide(x, y)
        if name == "mod":
            return np.mod(x, y)
        if name == "rem":
            return np.fmod(x, y)
        q = np.floor_divide(x, y)
        fix = (np.fmod(x, y) != 0) & ((x < 0) != (y < 0))
        return (q + fix.astype(npdt)).astype(npdt)
    if name == "pow":
        if np.any(y < 0):
            raise interp.error(op, "integer pow with a negative exponent")
        return np.power(x, y)
    if name in ("shl", "shr"):
        bits = dtypes.BITS[dt]
        if np.any((y < 0) | (y >= bits)):
            raise interp.error(op, f"shift amount outside [0, {bits}) in {name}")
        return np.left_shift(x, y) if name == "shl" else np.right_shift(x, y)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
         "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
    return f(x, y).astype(npdt)


def _scalar_like(t: Type) -> bool:
    if isinstance(t, ScalarType):
        return True
    if isinstance(t, TupleType):
        return all(_scalar_like(i) for i in t.items)
    return False


def _region_is_scalar_pure(region: Region) -> bool:
    """True when every op of the region (and nested regions) is a pure scalar op that NumPy can run member-wise."""
    if not all(_scalar_like(a.type) for a in region.args):
        return False
    for op in region.ops:
        spec = SPECS.get(op.name)
        if spec is None or (spec.category not in _VECTOR_CATEGORIES and op.name not in _VECTOR_OPS):
            return False
        if not all(_scalar_like(v.type) for v in op.operands) or not all(_scalar_like(r.type) for r in op.results):
            return False
        if not all(_region_is_scalar_pure(r) for r in op.regions):
            return False
    return True


__all__ = ["interpret", "MAX_WHILE_ITERATIONS"]


def _product_factors(e: Any) -> list[Any] | None:
    """The factors of a product of symbols and constants (None for any other expression)."""
    if isinstance(e, (Sym, Const)):
        return [e]
    if isinstance(e, BinOp) and e.op == "*":
        a, b = _product_factors(e.lhs), _product_factors(e.rhs)
        return None if a is None or b is None else a + b
    return None


def _solve_product_extents(k: Kernel, copies: dict[str, np.ndarray], symbols: dict[str, Any], bind) -> None:
    """Bind a symbol that appears only inside a product extent (``G*CPG``) once its other factors are known."""
    progress = True
    while progress:
        progress = False
        for a in k.abi:
            if a.name not in copies:
                continue
            for axis, e in enumerate(a.value.type.shape):
                factors = _product_factors(e)
                if factors is None or len(factors) < 2:
                    continue
                unknown = [f for f in factors if isinstance(f, Sym) and f.name not in symbols]
                if len({f.name for f in unknown}) != 1 or len(unknown) != 1:
                    continue
                known = 1
                for f in factors:
                    if isinstance(f, Const):
                        known *= int(f.value)
                    elif f.name in symbols:
                        known *= int(symbols[f.name])
                size = copies[a.name].shape[axis]
                if known and size % known == 0:
                    bind(unknown[0].name, size // known, f"axis {axis} of argument {a.name!r}")
                    progress = True
