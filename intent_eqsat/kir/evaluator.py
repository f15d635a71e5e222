"""The NumPy reference evaluator: the semantic oracle every later stage is compared against.

It is written to be obviously correct rather than fast (it runs on small shapes):

* An expression is evaluated over a *frame*: one NumPy axis per index variable in scope (the statement's free
  indices, then the indices of enclosing reductions, innermost last). Every value is a 0-d array or an array with
  exactly one axis per frame index (size 1 where it does not depend on it), so broadcasting lines up by name.
* Reductions, scans and scatter-updates run **sequentially in index order** with an explicit Python loop over the
  reduced members; that order is the reference order. ``sum``/``prod`` (and ``add``/``mul`` scan carries) of f16 /
  bf16 values accumulate in f32 and round once at the end; every other pointwise f16/bf16 operation is computed in
  f32 and rounded to its dtype once (see ``dtypes.op_dtype``). Integer arithmetic wraps.
* ``max``/``min`` propagate NaN. ``argmax``/``argmin``: ties give the lowest index; NaN counts as the maximum
  (argmax) / minimum (argmin), so the first NaN wins; an empty domain gives -1.
* ``where``: loads under a false condition are not performed (an *active mask* travels with the frame); a load
  whose subscript is out of bounds where it is active raises :class:`KirEvalError`, as does an integer division by
  zero.
* Each statement evaluates its whole right-hand side before writing (snapshot semantics). Scatter-updates apply
  their members in row-major order of the statement's domain.
* ``float64=True`` keeps every float value in float64 (casts between float types do not round) and converts the
  outputs to their declared dtypes at the end.

This module runs a kernel whose module is already verified (its facts); :func:`intent_eqsat.kir.evaluate.evaluate`
verifies first. The KIR verifier uses it too, to judge combiner laws on reachable states, so it must not import
the verifier (no import cycle).
"""
from __future__ import annotations

import math
from collections import ChainMap
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from intent_eqsat.errors import KirEvalError
from intent_eqsat.kir import dtypes as dt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import dim_str, dim_symbols, dim_value, is_product
from intent_eqsat.kir.infer import BUILTIN_COMBINERS, KernelFacts, ModuleFacts, Ref, where_of

Value = Any  # np.ndarray, or a tuple of np.ndarray for tuple-typed values
_ERF = np.frompyfunc(math.erf, 1, 1)


@dataclass(frozen=True)
class Frame:
    """Evaluation scope: ``axes`` are (var key, start, stop); ``active`` is the mask of members whose loads and
    divisions happen; ``chunk`` restricts chunk-local reductions; ``env`` holds block locals and region states."""

    axes: tuple[tuple[str, int, int], ...] = ()
    active: np.ndarray = field(default_factory=lambda: np.array(True))
    chunk: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    env: Mapping[str, Value] = field(default_factory=dict)

    @property
    def nd(self) -> int:
        return len(self.axes)

    def axis_of(self, key: str) -> int:
        for a in range(len(self.axes) - 1, -1, -1):
            if self.axes[a][0] == key:
                return a
        raise KeyError(key)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(stop - start for _, start, stop in self.axes)


def lift(v: Value, nd: int) -> Value:
    """Give a value computed in an outer frame the trailing size-1 axes of a deeper frame."""
    if isinstance(v, tuple):
        return tuple(lift(x, nd) for x in v)
    return v.reshape(v.shape + (1,) * (nd - v.ndim)) if 0 < v.ndim < nd else v


def _bcast(v: Value, shape: tuple[int, ...]) -> Value:
    if isinstance(v, tuple):
        return tuple(_bcast(x, shape) for x in v)
    return np.broadcast_to(v if v.ndim else v.reshape((1,) * len(shape)), shape)


def _astype(v: Value, dtypes: Any) -> Value:
    if isinstance(v, tuple):
        return tuple(np.asarray(x).astype(d) for x, d in zip(v, dtypes))
    return np.asarray(v).astype(dtypes)


class _KernelEval:
    def __init__(self, kf: KernelFacts, facts: ModuleFacts, float64: bool):
        self.kf = kf
        self.facts = facts
        self.f64 = float64
        self.types: Mapping[str, m.Type] = ChainMap(dict(kf.types), dict(facts.combiner_types))
        self.refs: Mapping[str, Ref] = ChainMap(dict(kf.refs), dict(facts.combiner_refs))
        self.sym: dict[str, int] = {}
        self.views: dict[str, np.ndarray] = {}
        self.scalars: dict[str, np.ndarray] = {}
        self.lets: dict[str, Value] = {}

    # ------------------------------------------------------------------------------------------ dtypes

    def np_t(self, t: m.Type) -> Any:
        if isinstance(t, tuple):
            return tuple(dt.numpy_dtype(x, self.f64) for x in t)
        return dt.numpy_dtype(t, self.f64)

    def op_t(self, t: str) -> np.dtype:
        return dt.op_dtype(t, self.f64)

    def type_of(self, e: m.Node) -> m.Type:
        t = self.types[e.id]
        return dt.materialize(t) if isinstance(t, str) else tuple(dt.materialize(x) for x in t)

    # ------------------------------------------------------------------------------------------ inputs

    def run(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        self.bind(inputs)
        for s in self.kf.kernel.body:
            if isinstance(s, m.Let):
                self.let(s)
            else:
                self.assign(s)
        return {p.name: self.views[p.name].astype(dt.NUMPY[p.dtype])
                for p in self.kf.kernel.params if p.is_view and p.access != "in"}

    def bind(self, inputs: Mapping[str, Any]) -> None:
        k = self.kf.kernel
        names = {p.name for p in k.params} | set(self.kf.symbols)
        for key in inputs:
            if key not in names:
                raise KirEvalError(f"kernel {k.name!r} has no parameter or shape symbol named {key!r}")
        for s in self.kf.symbols:
            if s in inputs:
                self.sym[s] = int(inputs[s])
                if self.sym[s] < 0:
                    raise KirEvalError(f"shape symbol {s!r} must be >= 0, got {self.sym[s]}")
        arrays = {}
        for p in k.params:
            if p.dims is None:
                if p.name not in inputs:
                    raise KirEvalError(f"missing input scalar {p.name!r}", where_of(p))
                v = np.asarray(inputs[p.name])
                if v.ndim != 0:
                    raise KirEvalError(f"scalar {p.name!r} must be a number, got shape {v.shape}", where_of(p))
                self.scalars[p.name] = v.astype(self.np_t(p.dtype))
                continue
            if p.name not in inputs:
                if p.access != "out":
                    raise KirEvalError(f"missing input view {p.name!r}", where_of(p))
                continue
            a = np.asarray(inputs[p.name])
            if a.ndim != len(p.dims):
                raise KirEvalError(f"view {p.name!r} has {len(p.dims)} dimension(s), got an array of shape "
                                   f"{a.shape}", where_of(p))
            arrays[p.name] = a
        self.solve_symbols(arrays)
        for p in k.params:
            if p.dims is None:
                continue
            shape = tuple(int(d.evaluate(self.sym)) for d in self.kf.dims[p.name])
            if p.access == "out":
                self.views[p.name] = np.zeros(shape, self.np_t(p.dtype))
            else:
                self.views[p.name] = np.array(arrays[p.name]).astype(self.np_t(p.dtype))

    def solve_symbols(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Bind shape symbols from the input shapes (a product dim like G*CPG binds its one unknown factor)."""
        k = self.kf.kernel
        progress = True
        while progress:
            progress = False
            for p in k.params:
                if p.name not in arrays or p.dims is None:
                    continue
                for axis, d in enumerate(p.dims):
                    if not is_product(d):           # checked below, once its symbols are known (kir.dims)
                        continue
                    size = arrays[p.name].shape[axis]
                    known = 1
                    unknown = []
                    for f in d:
                        if isinstance(f, int):
                            known *= f
                        elif f in self.sym:
                            known *= self.sym[f]
                        else:
                            unknown.append(f)
                    if len(set(unknown)) == 1 and len(unknown) == 1:
                        if known == 0 or size % known:
                            raise KirEvalError(f"axis {axis} of {p.name!r} has size {size}, not a multiple of "
                                               f"{known}", where_of(p))
                        self.sym[unknown[0]] = size // known
                        progress = True
                    elif not unknown and known != size:
                        raise KirEvalError(f"axis {axis} of {p.name!r} has size {size} but its declared extent "
                                           f"{'*'.join(map(str, d))} is {known}", where_of(p))
        missing = [s for s in self.kf.symbols if s not in self.sym]
        if missing:
            raise KirEvalError(f"shape symbol(s) {', '.join(missing)} of kernel {k.name!r} are not determined by the "
                               f"inputs; pass them as inputs['{missing[0]}'] = <int>")
        try:
            self.sym = self.kf.shape_env(self.sym)
        except ZeroDivisionError as e:
            raise KirEvalError(f"kernel {k.name!r}: {e}") from None
        for p in k.params:
            for axis, d in enumerate(p.dims or ()):
                if is_product(d):
                    continue
                want = dim_value(d, self.sym)
                if want < 0:
                    raise KirEvalError(f"axis {axis} of {p.name!r} would have {dim_str(d)} = {want} elements with "
                                       f"{', '.join(f'{s}={self.sym[s]}' for s in dim_symbols(d))}", where_of(p))
                if p.name in arrays and arrays[p.name].shape[axis] != want:
                    raise KirEvalError(f"axis {axis} of {p.name!r} has size {arrays[p.name].shape[axis]} but its "
                                       f"declared extent {dim_str(d)} is {want}", where_of(p))

    # -------------------------------------------------------------------------------------- statements

    def domain_frame(self, stmt: m.Stmt) -> Frame:
        axes = []
        for key in self.kf.stmt_vars[stmt.id]:
            axes.append((key, *self.var_range(key)))
        return Frame(axes=tuple(axes))

    def var_range(self, key: str) -> tuple[int, int]:
        """The evaluated half-open range of an index variable (empty when hi <= lo)."""
        info = self.kf.vars[key]
        lo, hi = int(info.lo.evaluate(self.sym)), int(info.hi.evaluate(self.sym))
        return lo, max(lo, hi)

    def let(self, s: m.Let) -> None:
        frame = self.domain_frame(s)
        v = _bcast(self.expr(s.value, frame), frame.shape)
        self.lets[s.name] = _astype(v, self.np_t(self.kf.lets[s.name].type))

    def assign(self, s: m.Assign) -> None:
        frame = self.domain_frame(s)
        shape = frame.shape
        p = self.kf.kernel.param(s.target)
        assert p is not None
        target = self.views[s.target]
        value = np.asarray(_bcast(self.expr(s.value, frame), shape)).astype(target.dtype)
        subs = []
        for axis, e in enumerate(s.subs):
            sub = np.broadcast_to(self.expr(e, frame), shape)
            bad = (sub < 0) | (sub >= target.shape[axis])
            if bad.any():
                raise KirEvalError(f"write to {s.target!r}: subscript {axis} takes value {int(sub[bad][0])} outside "
                                   f"0..{target.shape[axis]}", where_of(e))
            subs.append(sub)
        index = tuple(subs)
        if s.collide == "unique" and len(subs) and value.size:
            flat = np.ravel_multi_index(tuple(x.ravel() for x in subs), target.shape)
            if len(np.unique(flat)) != flat.size:
                raise KirEvalError(f"'collide unique' violated: two members of the domain write the same element of "
                                   f"{s.target!r}", where_of(s))
        if s.op == "=":
            target[index] = value
            return
        op = m.UPDATE_OPS[s.op]
        if p.dtype in ("f16", "bf16") and not self.f64 or not subs:
            # Sequential read-modify-write in row-major member order, each update rounded to the target dtype.
            for member in np.ndindex(*shape):
                t = tuple(int(x[member]) for x in subs)
                target[t] = self.builtin(op, target[t], value[member], p.dtype)
            return
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[op]
        ufunc.at(target, index, value)  # unbuffered, in member order

    # ------------------------------------------------------------------------------------- expressions

    def expr(self, e: m.Expr, f: Frame) -> Value:
        if isinstance(e, m.Num):
            return np.asarray(e.value).astype(self.np_t(self.type_of(e)))
        if isinstance(e, m.Name):
            return self.name(e, f)
        if isinstance(e, m.Access):
            return self.access(e, f)
        if isinstance(e, m.Unary):
            x = self.expr(e.x, f)
            if e.op == "not":
                return np.logical_not(x)
            t = self.type_of(e)
            return np.negative(x.astype(self.op_t(t))).astype(self.np_t(t))
        if isinstance(e, m.Binary):
            return self.binary(e, f)
        if isinstance(e, m.Call):
            return self.call(e, f)
        if isinstance(e, m.Cast):
            return self.expr(e.x, f).astype(self.np_t(e.dtype))
        if isinstance(e, m.Where):
            cond = self.expr(e.cond, f)
            value = self.expr(e.value, replace(f, active=f.active & cond))
            fill = self.expr(e.fill, replace(f, active=f.active & ~cond))
            return self.select(cond, value, fill, self.type_of(e))
        if isinstance(e, m.TupleExpr):
            t = self.type_of(e)
            return tuple(self.expr(x, f).astype(self.np_t(tx)) for x, tx in zip(e.elems, t))
        if isinstance(e, m.Proj):
            return self.expr(e.x, f)[e.index]
        if isinstance(e, m.Reduce):
            return self.reduce(e, f)
        if isinstance(e, m.Scan):
            return self.scan(e, f)
        if isinstance(e, m.RegionFold):
            return self.region_fold(e, f)
        if isinstance(e, m.RegionScan):
            return self.region_scan(e, f)
        raise TypeError(f"not an expression: {e!r}")

    def name(self, e: m.Name, f: Frame) -> Value:
        ref = self.refs[e.id]
        if ref.kind == "index":
            a = f.axis_of(ref.target)
            _, start, stop = f.axes[a]
            shape = [1] * f.nd
            shape[a] = stop - start
            return np.arange(start, stop, dtype=np.int64).reshape(shape)
        if ref.kind == "symbol":
            return np.asarray(self.sym[ref.target], dtype=np.int64)
        if ref.kind == "scalar":
            return self.scalars[ref.target]
        if ref.kind == "let":
            return self.lets[ref.target]
        return lift(f.env[ref.target], f.nd)

    def access(self, e: m.Access, f: Frame) -> Value:
        ref = self.refs[e.id]
        arr = self.views[e.name] if ref.kind == "view" else self.lets[e.name]
        comps = arr if isinstance(arr, tuple) else (arr,)
        dims = comps[0].shape
        subs = [np.asarray(self.expr(x, f)) for x in e.subs]
        shape = np.broadcast_shapes(f.active.shape, *(s.shape for s in subs))
        active = np.broadcast_to(f.active, shape)
        index = []
        for axis, (sub, x) in enumerate(zip(subs, e.subs)):
            sub = np.broadcast_to(sub, shape)
            bad = active & ((sub < 0) | (sub >= dims[axis]))
            if bad.any():
                raise KirEvalError(f"read of {e.name!r}: subscript {axis} takes value {int(sub[bad][0])} outside "
                                   f"0..{dims[axis]}", where_of(x))
            index.append(np.clip(sub, 0, max(dims[axis] - 1, 0)))
        if not subs:
            out = tuple(c[()] for c in comps)
        elif any(d == 0 for d in dims):
            out = tuple(np.zeros(shape, c.dtype) for c in comps)
        else:
            out = tuple(c[tuple(index)] for c in comps)
        out = tuple(np.asarray(o) for o in out)
        return out if isinstance(arr, tuple) else out[0]

    def binary(self, e: m.Binary, f: Frame) -> Value:
        a, b = self.expr(e.a, f), self.expr(e.b, f)
        if e.op == "and":
            return np.logical_and(a, b)
        if e.op == "or":
            return np.logical_or(a, b)
        ta, tb = self.type_of(e.a), self.type_of(e.b)
        t = dt.promote(ta, tb) or ta  # type: ignore[arg-type]
        ot = self.op_t(t)
        a, b = a.astype(ot), b.astype(ot)
        if e.op in ("lt", "le", "gt", "ge", "eq", "ne"):
            return {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                    "eq": np.equal, "ne": np.not_equal}[e.op](a, b)
        if e.op in ("floordiv", "mod") and dt.is_int(t):
            zero = np.broadcast_to(f.active, np.broadcast_shapes(f.active.shape, b.shape)) & (b == 0)
            if zero.any():
                raise KirEvalError("integer division by zero", where_of(e))
            b = np.where(b == 0, np.ones_like(b), b)
        with np.errstate(all="ignore"):
            r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                 "floordiv": np.floor_divide, "mod": np.mod}[e.op](a, b)
        return np.asarray(r).astype(self.np_t(self.type_of(e)))

    def call(self, e: m.Call, f: Frame) -> Value:
        args = [self.expr(x, f) for x in e.args]
        t = self.type_of(e)
        if e.fn == "select":
            return self.select(args[0], args[1], args[2], t)
        ot = self.op_t(t)  # type: ignore[arg-type]
        xs = [np.asarray(x).astype(ot) for x in args]
        with np.errstate(all="ignore"):
            r = _apply_fn(e.fn, xs, ot)
        return np.asarray(r).astype(self.np_t(t))

    def select(self, c: np.ndarray, a: Value, b: Value, t: m.Type) -> Value:
        if isinstance(t, tuple):
            return tuple(np.where(c, x, y).astype(self.np_t(tx)) for x, y, tx in zip(a, b, t))
        return np.where(c, a, b).astype(self.np_t(t))

    # ---------------------------------------------------------------------------------------- combiners

    def builtin(self, op: str, a: Any, b: Any, t: str) -> Any:
        """One builtin combine step, computed in the op dtype (f32 for f16/bf16)."""
        ot = self.op_t(t)
        a, b = np.asarray(a).astype(ot), np.asarray(b).astype(ot)
        with np.errstate(all="ignore"):
            return {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[op](a, b)

    def identity(self, combine: str, t: m.Type) -> Value:
        if combine in BUILTIN_COMBINERS:
            v = {"add": 0, "mul": 1, "max": dt.lowest(t), "min": dt.highest(t)}[combine]  # type: ignore[arg-type]
            return np.asarray(v).astype(self.op_t(t))  # type: ignore[arg-type]
        c = self.facts.combiners[combine]
        return self.expr(c.identity, Frame())

    def combine(self, combine: str, a: Value, b: Value, t: m.Type) -> Value:
        """``combine(a, b)`` where ``a`` holds the earlier members."""
        if combine in BUILTIN_COMBINERS:
            return self.builtin(combine, a, b, t)  # type: ignore[arg-type]
        c = self.facts.combiners[combine]
        pa, pb = c.params
        return self.block(c.body, Frame(env={pa: a, pb: b}))

    def block(self, b: m.Block, f: Frame) -> Value:
        env = dict(f.env)
        for x in b.lets:
            env[x.id] = self.expr(x.value, replace(f, env=env))
        return self.expr(b.result, replace(f, env=env))

    def carried(self, v: Value, t: m.Type) -> Value:
        """Round a carried value to its storage dtype."""
        return _astype(v, self.np_t(t))

    # ------------------------------------------------------------------------------------ reductions

    def bound_range(self, key: str, f: Frame) -> tuple[int, int]:
        if key in f.chunk:
            return f.chunk[key]
        if any(k == key for k, _, _ in f.axes):
            _, start, stop = f.axes[f.axis_of(key)]
            return start, stop
        return self.var_range(key)

    def reduce(self, e: m.Reduce, f: Frame) -> Value:
        keys = [self.kf.bind_keys[b.id] for b in e.binds]
        new_axes = tuple((k, *self.bound_range(k, f)) for k in keys)
        inner = replace(f, axes=f.axes + new_axes, active=lift(f.active, f.nd + len(keys)))
        body = lift(self.expr(e.body, inner), inner.nd)
        nb = len(keys)
        sizes = tuple(stop - start for _, start, stop in new_axes)
        members = int(np.prod(sizes)) if sizes else 1

        common = np.broadcast_shapes(*((1,) * inner.nd,), *(np.shape(x) for x in _as_tuple(body)))
        outer = tuple(common[: inner.nd - nb])

        def flat(v: np.ndarray) -> np.ndarray:
            full = np.broadcast_to(v if v.ndim else v.reshape((1,) * inner.nd), outer + sizes)
            return full.reshape(outer + (members,))

        t = self.type_of(e)
        vals = tuple(flat(x) for x in body) if isinstance(body, tuple) else flat(body)
        if e.op in ("argmax", "argmin"):
            return self.arg_reduce(e.op, vals, members, self.type_of(e.body))  # type: ignore[arg-type]
        combine = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}.get(e.op, e.combine or "")
        acc = self.identity(combine, t)
        for i in range(members):
            acc = self.combine(combine, acc, _take_last(vals, i), t)
        return self.carried(acc, t)

    def arg_reduce(self, op: str, vals: np.ndarray, members: int, t: str) -> np.ndarray:
        best = None
        idx = np.full(vals.shape[:-1], -1, dtype=np.int64)
        for i in range(members):
            v = vals[..., i].astype(self.op_t(t))
            if best is None:
                best, idx = v, np.zeros(v.shape, dtype=np.int64)
                continue
            better = (v > best) if op == "argmax" else (v < best)
            if dt.is_float(t):
                better = better | (np.isnan(v) & ~np.isnan(best))
            best = np.where(better, v, best)
            idx = np.where(better, i, idx)
        return idx

    def scan(self, e: m.Scan, f: Frame) -> Value:
        t = self.type_of(e)
        a = f.axis_of(self.kf.bind_keys[e.id])
        body = lift(self.expr(e.body, f), f.nd)
        n = f.shape[a]

        # One common shape for every tuple component, with the scanned axis at full length.
        shape = list(np.broadcast_shapes(*((1,) * f.nd,), *(np.shape(x) for x in _as_tuple(body))))
        shape[a] = n

        def full(v: np.ndarray) -> np.ndarray:
            return np.broadcast_to(v if v.ndim else v.reshape((1,) * f.nd), shape)

        vals = tuple(full(x) for x in body) if isinstance(body, tuple) else full(body)
        comps = vals if isinstance(vals, tuple) else (vals,)
        outs = [np.zeros(c.shape, d) for c, d in zip(comps, _as_tuple(self.np_t(t)))]
        carry = self.identity(e.combine, t)
        order = range(n - 1, -1, -1) if e.reverse else range(n)
        for i in order:
            x = _take_axis(vals, i, a)
            if e.exclusive:
                _put_axis(outs, i, a, self.carried(carry, t))
            carry = self.combine(e.combine, x, carry, t) if e.reverse else self.combine(e.combine, carry, x, t)
            if not e.exclusive:
                _put_axis(outs, i, a, self.carried(carry, t))
        return tuple(outs) if isinstance(t, tuple) else outs[0]

    # --------------------------------------------------------------------------------------- regions

    def region_fold(self, e: m.RegionFold, f: Frame) -> Value:
        key = self.kf.bind_keys[e.bind.id]
        lo, hi = self.bound_range(key, f)
        tstate = self.type_of(e.summarize)
        state = self.identity(e.combine, tstate)
        for c0 in range(lo, hi, e.chunk):
            chunk = {**f.chunk, key: (c0, min(c0 + e.chunk, hi))}
            s = self.block(e.summarize, replace(f, chunk=chunk))
            state = self.combine(e.combine, state, s, tstate)
        state = self.carried(state, tstate)
        if e.finalize is None or e.state is None:
            return state
        return self.block(e.finalize, replace(f, env={**f.env, e.state: state}))

    def region_scan(self, e: m.RegionScan, f: Frame) -> Value:
        key = self.kf.bind_keys[e.id]
        a = f.axis_of(key)
        _, lo, hi = f.axes[a]
        t = self.type_of(e)
        tstate = self.type_of(e.summarize)
        out = tuple(np.zeros(f.shape, d) for d in _as_tuple(self.np_t(t)))
        state = self.identity(e.combine, tstate)
        for c0 in range(lo, hi, e.chunk):
            c1 = min(c0 + e.chunk, hi)
            axes = list(f.axes)
            axes[a] = (key, c0, c1)
            cf = replace(f, axes=tuple(axes), chunk={**f.chunk, key: (c0, c1)})
            s = self.block(e.summarize, cf)
            emitted = self.block(e.emit, replace(cf, env={**f.env, e.state: self.carried(state, tstate)}))
            cshape = cf.shape
            for o, v in zip(out, _as_tuple(emitted)):
                sl = [slice(None)] * f.nd
                sl[a] = slice(c0 - lo, c1 - lo)
                o[tuple(sl)] = _bcast(lift(np.asarray(v), f.nd), cshape)
            state = self.combine(e.combine, state, s, tstate)
        return out if isinstance(t, tuple) else out[0]


def _as_tuple(v: Any) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _take_last(vals: Value, i: int) -> Value:
    if isinstance(vals, tuple):
        return tuple(v[..., i] for v in vals)
    return vals[..., i]


def _take_axis(vals: Value, i: int, a: int) -> Value:
    if isinstance(vals, tuple):
        return tuple(np.take(v, [i], axis=a) for v in vals)
    return np.take(vals, [i], axis=a)


def _put_axis(outs: list[np.ndarray], i: int, a: int, v: Value) -> None:
    for o, x in zip(outs, _as_tuple(v)):
        sl = [slice(None)] * o.ndim
        sl[a] = slice(i, i + 1)
        o[tuple(sl)] = np.broadcast_to(x, o[tuple(sl)].shape)


def _apply_fn(fn: str, xs: list[np.ndarray], ot: np.dtype) -> np.ndarray:
    x = xs[0]
    if fn == "exp":
        return np.exp(x)
    if fn == "exp2":
        return np.exp2(x)
    if fn == "log":
        return np.log(x)
    if fn == "log2":
        return np.log2(x)
    if fn == "log1p":           # log(1 + x) without the rounding of 1 + x (accurate for small x)
        return np.log1p(x)
    if fn == "expm1":           # exp(x) - 1 without the cancellation (accurate for small x)
        return np.expm1(x)
    if fn == "sqrt":
        return np.sqrt(x)
    if fn == "rsqrt":
        return 1 / np.sqrt(x)
    if fn == "sin":
        return np.sin(x)
    if fn == "cos":
        return np.cos(x)
    if fn == "tanh":
        return np.tanh(x)
    if fn == "abs":
        return np.abs(x)
    if fn == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if fn == "erf":
        return np.asarray(_ERF(x.astype(np.float64)), dtype=np.float64).astype(ot)
    if fn == "floor":
        return np.floor(x)
    if fn == "ceil":
        return np.ceil(x)
    if fn == "max":
        return np.maximum(x, xs[1])
    if fn == "min":
        return np.minimum(x, xs[1])
    if fn == "pow":
        return np.power(x, xs[1])
    raise ValueError(f"unknown function {fn}")
