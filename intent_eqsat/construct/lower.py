"""Lowering of KIR expressions to GPU IR values at one point of the logical domain (SPEC PASS-3.1).

Construction gives every statement *scalar ownership*: one program instance per member of its free domain. Inside
that program every KIR expression is lowered at the program's point:

* index variables are SSA ``index`` scalars (program coordinates or loop induction variables);
* a view read is a ``load`` (``gather`` when a coordinate depends on loaded data) with explicit coordinates; under a
  ``where`` it carries validity ``cond && in-bounds`` and a fill, so a masked-out member touches no memory (IR-6);
* a let is rematerialized at the point where it is read (the optimizer decides later whether to materialize it),
  once per point: a later read at the same coordinates and predicate reuses the lowered value wherever lowering it
  again would give the same program (:meth:`Lowerer.let_g`), so ``let t_j = t_{j-1} + t_{j-1}`` lowers in linear,
  not exponential, time, while a let read inside another statement's loop is still recomputed there;
* a reduction is an ordered ``for`` loop nest carrying its accumulator (f16/bf16 sums and products accumulate in
  f32, as the reference does); argmax/argmin carry (best, index) with ties to the lowest index and the first NaN
  winning;
* a scan at point ``p`` is the ordered loop over the members up to ``p`` (down to ``p`` when reversed; ``p`` itself
  excluded when exclusive), combining in the reference's order;
* a region fold is a ``region_fold`` over fixed chunks with the summarizer and combiner as regions (IR-8); a region
  scan at ``p`` folds the chunks before ``p``'s chunk and applies the emitter to the incoming state.

Nothing here looks at kernel names; the forms follow from the KIR node kinds alone.

The lowering functions are generators run by :func:`drive`: a recursive step ``yield``s the sub-generator whose
result it needs instead of calling it, and the driver keeps the pending steps on an explicit stack. So neither deep
expressions nor long let chains (``let t_j = f(t_{j-1})`` for 10,000 lets, each read inlined into the next) nor
deeply nested loops grow the Python stack; :meth:`Lowerer.value` and :meth:`Lowerer.index` are the plain entry
points.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from intent_eqsat.errors import ConstructionError
from intent_eqsat.construct.emitter import Emitter, Step, done, drive
from intent_eqsat.ir.core import Value
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, Sym
from intent_eqsat.ir.types import ScalarType
from intent_eqsat.kir import dtypes as kdt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.infer import BUILTIN_COMBINERS, KernelFacts, ModuleFacts
from intent_eqsat.kir.poly import Poly

INDEX = ScalarType("index")
I1 = ScalarType("i1")

Lowered = Any  # a Value, or a list of Values for tuple-typed expressions

_CMP = {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne"}
_REDUCE_COMBINE = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}
#: builtin combiners whose reduction loops are marked ``reduce`` (associative and commutative)
_REASSOCIABLE = ("add", "mul", "max", "min")
#: ops one execution group may emit; more means lets rematerialized in loop after loop (their copies multiply)
MAX_CONSTRUCTED_OPS = 200_000


def gpu_dtype(t: str) -> str:
    """KIR scalar dtype -> GPU IR element type (KIR ``bool`` is the predicate type ``i1``)."""
    t = kdt.materialize(t)
    return "i1" if t == "bool" else t


def poly_to_launch(p: Poly, where: str = "", quotients: Mapping[str, tuple[Poly, Poly]] | None = None) \
        -> LaunchExpr:
    """A KIR shape polynomial (integer coefficients over shape symbols) as a LaunchExpr; an atom of ``quotients``
    (the floor quotient of an arithmetic dim, ``"(H // 2)"``: kir.dims) is its ``num // den``."""
    quotients = quotients or {}

    def atom_expr(atom: str) -> LaunchExpr:
        if atom in quotients:
            num, den = quotients[atom]
            return BinOp("//", poly_to_launch(num, where, quotients), poly_to_launch(den, where, quotients))
        return Sym(atom)

    out: LaunchExpr | None = None
    # positive terms first, so that H - 2 prints as H - 2 (not 0 - 2 + H) in IR text and launcher messages
    for mono, coef in sorted(p.terms, key=lambda t: t[1] < 0):
        if coef.denominator != 1:
            raise ConstructionError(f"extent {p} has a fractional coefficient", where or None)
        c = int(coef)
        term: LaunchExpr | None = None
        for atom in mono:
            term = atom_expr(atom) if term is None else BinOp("*", term, atom_expr(atom))
        mag = abs(c)
        if term is None:
            term = Const(mag)
        elif mag != 1:
            term = BinOp("*", Const(mag), term)
        if out is None:
            out = term if c >= 0 else BinOp("-", Const(0), term)
        else:
            out = BinOp("+" if c >= 0 else "-", out, term)
    return out if out is not None else Const(0)


@dataclass(frozen=True)
class Tables:
    """Per-kernel lookup tables shared by the lowerers of all worksets of one kernel (built once: copying them per
    workset made construction quadratic in the number of statements)."""

    types: dict[str, Any]
    refs: dict[str, Any]
    lets: dict[str, m.Let]

    @staticmethod
    def of(facts: ModuleFacts, kf: KernelFacts) -> "Tables":
        return Tables(types={**facts.combiner_types, **kf.types}, refs={**facts.combiner_refs, **kf.refs},
                      lets={s.name: s for s in kf.kernel.body if isinstance(s, m.Let)})


@dataclass
class Env:
    """What names mean at the current point.

    ``vars``: index-variable key -> index Value; ``chunk``: key -> (lo, hi) of the chunk a chunk-local reduction or
    scan over that key ranges over; ``locals``/``states``: block locals (by LocalLet id) and region/combiner states
    (by name); ``valid``: the predicate under which loads happen (None = unconditional).
    """

    vars: dict[str, Value] = field(default_factory=dict)
    chunk: dict[str, tuple[Value, Value]] = field(default_factory=dict)
    locals: dict[str, Lowered] = field(default_factory=dict)
    states: dict[str, Lowered] = field(default_factory=dict)
    valid: Value | None = None


class Lowerer:
    """Lowers the expressions of one kernel; ``em`` is the emitter of the execution group being built."""

    def __init__(self, facts: ModuleFacts, kf: KernelFacts, em: Emitter, abi: dict[str, Value],
                 tables: Tables | None = None):
        self.facts = facts
        self.kf = kf
        self.em = em
        self.abi = abi
        #: compile option ``subscript_checks``: data-dependent coordinates of reads and writes carry ``checked``
        #: (docs/gpu_ir.md), so an out-of-range member touches no memory and the launch reports it (issue 25.2)
        self.subscript_checks = True
        tables = tables or Tables.of(facts, kf)
        self.types = tables.types
        self.refs = tables.refs
        self.lets = tables.lets
        #: index values that range over exactly ``[0, hi)`` (program coordinates and reduction induction
        #: variables of a variable whose lower bound is 0), by value name -> ``hi``
        self.spans: dict[str, LaunchExpr] = {}
        #: lowered lets by (let name, coordinate value names, predicate value name) -> (value, where its values
        #: live, whether its lowering was pure, the region it was lowered in); see :meth:`let_g`
        self.let_memo: dict[tuple, tuple[Lowered, list, bool, Any]] = {}
        #: reuses of impure lowered lets (they make the reading let's lowering impure too)
        self.impure_reuses = 0

    def record_span(self, v: Value, key: str) -> None:
        """Note that ``v`` ranges over the whole domain of index variable ``key`` when that domain starts at 0."""
        info = self.kf.vars[key]
        if not info.lo.terms:
            self.spans[v.name] = poly_to_launch(info.hi, quotients=self.kf.quotients)

    # -------------------------------------------------------------------------------------------- helpers

    def ktype(self, e: m.Node) -> Any:
        t = self.types[e.id]
        return kdt.materialize(t) if isinstance(t, str) else tuple(kdt.materialize(x) for x in t)

    def dtype(self, e: m.Node) -> str:
        t = self.ktype(e)
        if isinstance(t, tuple):
            raise ConstructionError(f"expected a scalar value, got a tuple {t}", e.loc or e.id)
        return gpu_dtype(t)

    def origin(self, e: m.Node):
        """Context manager-free origin switch: returns the previous origin so callers can restore it."""
        prev = self.em.origin
        if e.id:
            self.em.origin = e.id
        return prev

    def const(self, value: Any, dtype: str) -> Value:
        if dtype == "i1":
            value = bool(value)
        elif dtype in ("f16", "bf16", "f32", "f64"):
            value = float(value)
        else:
            value = int(value)
        return self.em.pure("const", [], ScalarType(dtype), value=value)

    def coerce(self, v: Value, dtype: str) -> Value:
        if v.type.dtype == dtype:
            return v
        return self.em.pure("cast", [v], ScalarType(dtype))

    def binary(self, op: str, a: Value, b: Value) -> Value:
        return self.em.pure(op, [a, b], a.type)

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        return self.em.pure("cmp", [a, b], I1, pred=pred)

    def select(self, c: Value, a: Value, b: Value) -> Value:
        return self.em.pure("select", [c, a, b], a.type)

    def launch(self, expr: LaunchExpr) -> Value:
        return self.em.pure("launch", [], INDEX, expr=expr)

    def and_valid(self, a: Value | None, b: Value | None) -> Value | None:
        if a is None:
            return b
        if b is None:
            return a
        return self.em.pure("and", [a, b], I1)

    def extent(self, key: str) -> tuple[Value, Value]:
        info = self.kf.vars[key]
        q = self.kf.quotients
        return self.launch(poly_to_launch(info.lo, quotients=q)), self.launch(poly_to_launch(info.hi, quotients=q))

    # ------------------------------------------------------------------------------------ entry points

    def value(self, e: m.Expr, env: Env) -> Lowered:
        """``e`` lowered at the point ``env`` (a Value, or a list of Values for a tuple)."""
        return drive(self.value_g(e, env))

    def index(self, e: m.Expr, env: Env) -> Value:
        """A subscript expression as an ``index`` value."""
        return drive(self.index_g(e, env))

    def loop(self, lo: Value, hi: Value, inits: list[Value], body: Callable[[Value, list[Value]], list[Value]],
             hint: str = "k", reduce: str | None = None) -> list[Value]:
        """:meth:`loop_g` with a plain (non-generator) ``body``."""
        return drive(self.loop_g(lo, hi, inits, lambda iv, carried: done(body(iv, carried)), hint, reduce))

    # --------------------------------------------------------------------------------------- index mode

    def index_g(self, e: m.Expr, env: Env) -> Step:
        prev = self.origin(e)
        try:
            if isinstance(e, m.Num):
                return self.const(int(e.value), "index")
            if isinstance(e, m.Name):
                ref = self.refs.get(e.id)
                if ref is not None and ref.kind == "index":
                    return env.vars[ref.target]
                if ref is not None and ref.kind == "symbol":
                    return self.launch(Sym(e.name))
                return self.coerce((yield self.value_g(e, env)), "index")
            if isinstance(e, m.Unary) and e.op == "neg":
                zero = self.const(0, "index")
                return self.binary("sub", zero, (yield self.index_g(e.x, env)))
            if isinstance(e, m.Binary) and e.op in ("add", "sub", "mul", "floordiv", "mod"):
                a = yield self.index_g(e.a, env)
                b = yield self.index_g(e.b, env)
                return self.binary(e.op, a, b)
            return self.coerce((yield self.value_g(e, env)), "index")
        finally:
            self.em.origin = prev

    # --------------------------------------------------------------------------------------- value mode

    def value_g(self, e: m.Expr, env: Env) -> Step:
        prev = self.origin(e)
        try:
            if isinstance(e, m.Num):
                return self.const(e.value, self.dtype(e))
            if isinstance(e, m.Name):
                return (yield self.name_g(e, env))
            if isinstance(e, m.Access):
                return (yield self.access_g(e, env))
            if isinstance(e, m.Unary):
                x = yield self.value_g(e.x, env)
                if e.op == "not":
                    return self.em.pure("not", [x], I1)
                return self.em.pure("neg", [self.coerce(x, self.dtype(e))], ScalarType(self.dtype(e)))
            if isinstance(e, m.Binary):
                return (yield self.binary_g(e, env))
            if isinstance(e, m.Call):
                return (yield self.call_g(e, env))
            if isinstance(e, m.Cast):
                x = yield self.value_g(e.x, env)
                return self.coerce(x, gpu_dtype(e.dtype))
            if isinstance(e, m.Where):
                return (yield self.where_g(e, env))
            if isinstance(e, m.TupleExpr):
                out: list[Value] = []
                for x in e.elems:
                    v = yield self.value_g(x, env)
                    out.extend(v if isinstance(v, list) else [v])
                return out
            if isinstance(e, m.Proj):
                x = yield self.value_g(e.x, env)
                return x[e.index]
            if isinstance(e, m.Reduce):
                return (yield self.reduce_g(e, env))
            if isinstance(e, m.Scan):
                return (yield self.scan_g(e, env))
            if isinstance(e, m.RegionFold):
                return (yield self.region_fold_g(e, env))
            if isinstance(e, m.RegionScan):
                return (yield self.region_scan_g(e, env))
            raise ConstructionError(f"cannot lower KIR node {type(e).__name__}", e.loc or e.id)
        finally:
            self.em.origin = prev

    def typed(self, v: Lowered, e: m.Node) -> Lowered:
        """Coerce a lowered value to the type inference gave node ``e``."""
        t = self.ktype(e)
        if isinstance(t, tuple):
            return [self.coerce(x, gpu_dtype(tx)) for x, tx in zip(v, t)]
        return self.coerce(v, gpu_dtype(t))

    def name_g(self, e: m.Name, env: Env) -> Step:
        ref = self.refs.get(e.id)
        if ref is None:
            raise ConstructionError(f"unresolved name {e.name!r}", e.loc or e.id)
        if ref.kind == "index":
            return self.coerce(env.vars[ref.target], self.dtype(e))
        if ref.kind == "symbol":
            return self.coerce(self.launch(Sym(e.name)), self.dtype(e))
        if ref.kind == "scalar":
            return self.typed(self.abi[ref.target], e)
        if ref.kind == "let":
            return self.typed((yield self.let_g(ref.target, [], env)), e)
        if ref.kind == "local":
            return self.typed(env.locals[ref.target], e)
        if ref.kind == "state":
            return self.typed(env.states[ref.target], e)
        raise ConstructionError(f"name {e.name!r} refers to a {ref.kind}", e.loc or e.id)

    def access_g(self, e: m.Access, env: Env) -> Step:
        p = self.kf.kernel.param(e.name)
        if p is not None and p.is_view:
            return (yield self.load_g(e, env))
        return self.typed((yield self.let_g(e.name, list(e.subs), env)), e)

    def load_g(self, e: m.Access, env: Env) -> Step:
        view = self.abi[e.name]
        coords = []
        for s in e.subs:
            coords.append((yield self.index_g(s, env)))
        data_dependent = any(isinstance(n, m.Access) for s in e.subs for n in m.walk(s))
        dtype = view.type.dtype
        checked = self.checked_axes(e.subs) if data_dependent else []
        extra: dict[str, Any] = {"checked": checked} if checked else {}
        if env.valid is None:
            return self.em.pure("gather" if data_dependent else "load", [view, *coords], ScalarType(dtype),
                                valid=False, **extra)
        # A read whose every coordinate ranges over exactly its view's axis is in bounds whatever the predicate: it
        # touches no memory it could not, and the predicate's select discards its value where the predicate fails
        # (the where's fill), so it is read unconditionally. Scores read this way stay the same term under and
        # outside the predicate (the summary relations of online renormalization compare them).
        if all(self.spans.get(c.name) == view.type.shape[axis] for axis, c in enumerate(coords)):
            return self.em.pure("gather" if data_dependent else "load", [view, *coords], ScalarType(dtype),
                                valid=False, **extra)
        # Under a predicate: the member reads memory only where the predicate holds and it is in bounds (a checked
        # coordinate is not masked here: where the predicate holds, outside its view is an error, not a fill).
        valid = env.valid
        for axis, c in enumerate(coords):
            if axis in checked:
                continue
            lo_ok = self.cmp("ge", c, self.const(0, "index"))
            hi_ok = self.cmp("lt", c, self.launch(view.type.shape[axis]))
            valid = self.and_valid(valid, self.and_valid(lo_ok, hi_ok))
        fill: Any = False if dtype == "i1" else (0.0 if dtype in ("f16", "bf16", "f32", "f64") else 0)
        return self.em.pure("gather" if data_dependent else "load", [view, *coords, valid], ScalarType(dtype),
                            valid=True, fill=fill, **extra)

    def checked_axes(self, subs: Sequence[m.Expr]) -> list[int]:
        """The coordinate positions of an access whose subscripts read data (``H[X[i]]``, ``E[idx[i], d]``): those the
        run time checks, when the compile option ``subscript_checks`` is on. Affine subscripts are proven in range
        by the KIR verifier and are never checked."""
        if not self.subscript_checks:
            return []
        return [axis for axis, s in enumerate(subs) if any(isinstance(n, m.Access) for n in m.walk(s))]

    def let_g(self, name: str, subs: Sequence[m.Expr], env: Env) -> Step:
        """Rematerialize let ``name`` at the point given by ``subs`` (its index variables rebound).

        A let read again at the same coordinates under the same predicate reuses the value lowered first, where
        lowering it again would give the same program: when that lowering was pure (every op it emitted is shared
        by the emitter, so a second lowering returns the very same values) and its values are still in scope, or
        when the read is in the same region as the first one (its loops would be duplicates that the canonical
        form merges). A let whose loops would sit in another region (a summary read inside a consumer's loop) is
        still recomputed there: that choice is the optimizer's (the remat rulebook). So a chain of lets each read
        several times lowers in time linear in its length, not exponential."""
        let = self.lets[name]
        info = self.kf.lets[name]
        inner = Env(valid=env.valid)
        for key, sub in zip(info.indices, subs):
            inner.vars[key] = yield self.index_g(sub, env)
        em = self.em
        memo_key = (name, tuple(v.name for v in inner.vars.values()),
                    env.valid.name if env.valid is not None else None)
        hit = self.let_memo.get(memo_key)
        if hit is not None:
            out, homes, pure, region = hit
            if em.still_visible(homes) and (pure or region is em.current):
                if not pure:
                    self.impure_reuses += 1   # the reader is no more pure than what it reuses
                return out
        before = em.unshared + self.impure_reuses
        prev = self.origin(let)
        try:
            out = self.typed((yield self.value_g(let.value, inner)), let.value)
        finally:
            em.origin = prev
        if em.emitted > MAX_CONSTRUCTED_OPS:
            raise ConstructionError(
                f"construction of this statement emits more than {MAX_CONSTRUCTED_OPS} ops: lets read inside "
                f"several loops each are recomputed in every loop (here {name!r}); materialize them by splitting the "
                f"kernel, or read them outside the loops", let.loc or let.id)
        pure = em.unshared + self.impure_reuses == before
        self.let_memo[memo_key] = (out, em.homes(out if isinstance(out, list) else [out]), pure, em.current)
        return out

    def binary_g(self, e: m.Binary, env: Env) -> Step:
        if e.op in ("and", "or"):
            a = yield self.value_g(e.a, env)
            b = yield self.value_g(e.b, env)
            return self.em.pure(e.op, [a, b], I1)
        ta, tb = self.ktype(e.a), self.ktype(e.b)
        common = gpu_dtype(kdt.promote(ta, tb) or ta)
        a = self.coerce((yield self.value_g(e.a, env)), common)
        b = self.coerce((yield self.value_g(e.b, env)), common)
        if e.op in _CMP:
            return self.cmp(_CMP[e.op], a, b)
        out = self.binary(e.op, a, b)
        return self.coerce(out, self.dtype(e))

    def call_g(self, e: m.Call, env: Env) -> Step:
        if e.fn == "select":
            c = yield self.value_g(e.args[0], env)
            a = self.typed((yield self.value_g(e.args[1], env)), e)
            b = self.typed((yield self.value_g(e.args[2], env)), e)
            if isinstance(a, list):
                return [self.select(c, x, y) for x, y in zip(a, b)]
            return self.select(c, a, b)
        t = self.dtype(e)
        args = []
        for x in e.args:
            args.append(self.coerce((yield self.value_g(x, env)), t))
        return self.em.pure(e.fn, args, ScalarType(t))

    def where_g(self, e: m.Where, env: Env) -> Step:
        cond = yield self.value_g(e.cond, env)
        inner = replace(env, valid=self.and_valid(env.valid, cond))
        v = self.typed((yield self.value_g(e.value, inner)), e)
        f = self.typed((yield self.value_g(e.fill, env)), e)
        if isinstance(v, list):
            return [self.select(cond, x, y) for x, y in zip(v, f)]
        return self.select(cond, v, f)

    # ----------------------------------------------------------------------------------- combiners

    def identity_g(self, combine: str, t: Any) -> Step:
        """The combiner's identity as values of the carried types."""
        if combine in BUILTIN_COMBINERS:
            v = {"add": 0, "mul": 1, "max": kdt.lowest(t), "min": kdt.highest(t)}[combine]
            return [self.const(v, gpu_dtype(t))]
        c = self.facts.combiners[combine]
        v = self.typed((yield self.value_g(c.identity, Env())), c.identity)
        return v if isinstance(v, list) else [v]

    def combine_g(self, combine: str, acc: list[Value], x: list[Value], t: Any) -> Step:
        """``combine(acc, x)`` with ``acc`` holding the earlier members (the reference's order)."""
        if combine in BUILTIN_COMBINERS:
            a, b = acc[0], self.coerce(x[0], acc[0].type.dtype)
            return [self.em.pure(combine, [a, b], a.type)]
        c = self.facts.combiners[combine]
        pa, pb = c.params
        ta = c.type
        av: Lowered = acc if isinstance(ta, tuple) else acc[0]
        bv: Lowered = x if isinstance(ta, tuple) else x[0]
        out = yield self.block_g(c.body, Env(states={pa: av, pb: bv}))
        out = self.typed(out, c.body)
        return out if isinstance(out, list) else [out]

    def block_g(self, b: m.Block, env: Env) -> Step:
        env = replace(env, locals=dict(env.locals))
        for x in b.lets:
            prev = self.origin(x)
            try:
                env.locals[x.id] = self.typed((yield self.value_g(x.value, env)), x)
            finally:
                self.em.origin = prev
        return (yield self.value_g(b.result, env))

    @staticmethod
    def as_list(v: Lowered) -> list[Value]:
        return v if isinstance(v, list) else [v]

    def carried_types(self, combine: str, t: Any) -> Any:
        """Accumulate f16/bf16 sums and products in f32 (the reference's accumulation dtype)."""
        if combine in ("add", "mul") and t in ("f16", "bf16"):
            return "f32"
        return t

    # ------------------------------------------------------------------------------------- loops

    def loop_g(self, lo: Value, hi: Value, inits: list[Value], body: Callable[[Value, list[Value]], Step],
               hint: str = "k", reduce: str | None = None) -> Step:
        """``for iv in [lo, hi)`` carrying ``inits``; the step ``body(iv, carried)`` gives the next carried values.
        ``reduce`` marks the loop as the ordered realization of an ordinary KIR reduction (its members may be
        reassociated)."""
        step = self.const(1, "index")
        region = yield self.em.region_g([INDEX] + [v.type for v in inits],
                                        lambda iv, *carried: body(iv, list(carried)), hints=[hint])
        attrs = {"reduce": reduce} if reduce else {}
        op = self.em.op_with_regions("for", [lo, hi, step, *inits], [v.type for v in inits], [region], **attrs)
        return op.results

    def bounds(self, key: str, env: Env) -> tuple[Value, Value]:
        if key in env.chunk:
            return env.chunk[key]
        return self.extent(key)

    def reduce_g(self, e: m.Reduce, env: Env) -> Step:
        keys = [self.kf.bind_keys[b.id] for b in e.binds]
        t = self.ktype(e)
        if e.op in ("argmax", "argmin"):
            return (yield self.arg_reduce_g(e, keys[0], env))
        combine = _REDUCE_COMBINE.get(e.op, e.combine or "")
        ct = self.carried_types(combine, t)
        inits = yield self.identity_g(combine, ct)

        def nest(level: int, inner_env: Env, carried: list[Value]) -> Step:
            lo, hi = self.bounds(keys[level], inner_env)

            def body(iv: Value, acc: list[Value]) -> Step:
                if keys[level] not in inner_env.chunk:
                    self.record_span(iv, keys[level])
                env2 = replace(inner_env, vars={**inner_env.vars, keys[level]: iv})
                if level + 1 < len(keys):
                    return (yield nest(level + 1, env2, acc))
                x = self.as_list((yield self.value_g(e.body, env2)))
                return (yield self.combine_g(combine, acc, x, ct))

            # an ordinary reduction with a builtin associative+commutative combiner (SPEC PASS-4: reassociable)
            reassoc = combine if combine in _REASSOCIABLE and len(carried) == 1 and level + 1 == len(keys) else None
            return (yield self.loop_g(lo, hi, carried, body, hint=e.binds[level].name, reduce=reassoc))

        out = yield nest(0, env, inits)
        return self.typed(out if isinstance(t, tuple) else out[0], e)

    def arg_reduce_g(self, e: m.Reduce, key: str, env: Env) -> Step:
        bt = self.ktype(e.body)
        vt = gpu_dtype(bt)
        lo, hi = self.bounds(key, env)
        best0 = self.const(kdt.lowest(bt) if e.op == "argmax" else kdt.highest(bt), vt)
        idx0 = self.const(-1, "i64")
        is_float = vt in ("f16", "bf16", "f32", "f64")

        def body(iv: Value, carried: list[Value]) -> Step:
            best, idx = carried
            v = self.coerce((yield self.value_g(e.body, replace(env, vars={**env.vars, key: iv}))), vt)
            first = self.cmp("eq", idx, self.const(-1, "i64"))
            better = self.cmp("gt" if e.op == "argmax" else "lt", v, best)
            if is_float:
                # The first NaN wins: a NaN member beats any non-NaN best, and nothing beats a NaN best.
                v_nan = self.cmp("ne", v, v)
                best_ok = self.cmp("eq", best, best)
                better = self.em.pure("or", [better, self.em.pure("and", [v_nan, best_ok], I1)], I1)
            take = self.em.pure("or", [first, better], I1)
            member = self.binary("sub", iv, lo)
            return [self.select(take, v, best), self.select(take, self.coerce(member, "i64"), idx)]

        _, idx = yield self.loop_g(lo, hi, [best0, idx0], body, hint=e.binds[0].name)
        return self.coerce(idx, self.dtype(e))

    def scan_g(self, e: m.Scan, env: Env) -> Step:
        """The scan's value at the current point: an ordered loop over the members up to it."""
        key = self.kf.bind_keys[e.id]
        p = env.vars[key]
        lo, hi = self.bounds(key, env)
        t = self.ktype(e)
        ct = self.carried_types(e.combine, t) if not isinstance(t, tuple) else t
        one = self.const(1, "index")
        if not e.reverse:
            start, stop = lo, (p if e.exclusive else self.binary("add", p, one))
        else:
            # A suffix scan counts its trips u in [0, hi - first) and reads the member at hi - 1 - u: the member
            # then depends on the point only through the trip count, as a prefix scan's does (the blocking
            # group's suffix lifting relies on it: rulebooks/blocking.py).
            first = self.binary("add", p, one) if e.exclusive else p
            start, stop = self.const(0, "index"), self.binary("sub", hi, first)
            last = self.binary("sub", hi, one)
        inits = yield self.identity_g(e.combine, ct)

        def body(iv: Value, acc: list[Value]) -> Step:
            x = self.as_list((yield self.value_g(e.body, replace(env, vars={**env.vars, key: iv}))))
            return (yield self.combine_g(e.combine, acc, x, ct))

        def rbody(u: Value, acc: list[Value]) -> Step:
            # Suffix scan in the reference's order: members from the last one down, combine(x, carry).
            iv = self.binary("sub", last, u)
            x = self.as_list((yield self.value_g(e.body, replace(env, vars={**env.vars, key: iv}))))
            if e.combine in BUILTIN_COMBINERS:      # the member widened to the carried type (an f16/bf16 sum's f32)
                x = [self.coerce(v, a.type.dtype) for v, a in zip(x, acc)]
            return (yield self.combine_g(e.combine, x, acc, ct))

        out = yield self.loop_g(start, stop, inits, rbody if e.reverse else body, hint=f"{e.var}_s")
        return self.typed(out if isinstance(t, tuple) else out[0], e)

    def fold_chunks_g(self, combine: str, tstate: Any, summarize: m.Block, key: str, chunk: int,
                      lo: Value, hi: Value, env: Env) -> Step:
        """``region_fold`` over chunks of ``chunk`` members of ``[lo, hi)`` (IR-8): summarize each, combine."""
        ttuple = tstate if isinstance(tstate, tuple) else (tstate,)
        inits = yield self.identity_g(combine, tstate)
        step = self.const(chunk, "index")
        chunk_v = step

        def summ(seg: Value) -> Step:
            end = self.em.pure("min", [self.binary("add", seg, chunk_v), hi], INDEX)
            out = yield self.block_g(summarize, replace(env, chunk={**env.chunk, key: (seg, end)}))
            return [self.coerce(v, gpu_dtype(tx)) for v, tx in zip(self.as_list(out), ttuple)]

        def comb(*args: Value) -> Step:
            n = len(ttuple)
            return (yield self.combine_g(combine, list(args[:n]), list(args[n:]), tstate))

        types = [ScalarType(gpu_dtype(tx)) for tx in ttuple]
        r_summ = yield self.em.region_g([INDEX], summ, hints=["seg"])
        r_comb = yield self.em.region_g(types + types, comb)
        op = self.em.op_with_regions("region_fold", [lo, hi, step, *inits], types, [r_summ, r_comb])
        return op.results

    def region_fold_g(self, e: m.RegionFold, env: Env) -> Step:
        key = self.kf.bind_keys[e.bind.id]
        lo, hi = self.bounds(key, env)
        tstate = self.ktype(e.summarize)
        state = yield self.fold_chunks_g(e.combine, tstate, e.summarize, key, e.chunk, lo, hi, env)
        sv: Lowered = state if isinstance(tstate, tuple) else state[0]
        if e.finalize is None or e.state is None:
            return self.typed(sv, e)
        out = yield self.block_g(e.finalize, replace(env, states={**env.states, e.state: sv}))
        return self.typed(out, e)

    def region_scan_g(self, e: m.RegionScan, env: Env) -> Step:
        """The region scan's value at the current point ``p``: fold the chunks before ``p``'s chunk into the
        incoming state, then apply the emitter inside ``p``'s chunk (chunk boundaries are the author's)."""
        key = self.kf.bind_keys[e.id]
        p = env.vars[key]
        lo, hi = self.bounds(key, env)
        chunk = self.const(e.chunk, "index")
        rel = self.binary("sub", p, lo)
        cstart = self.binary("add", lo, self.binary("mul", self.binary("floordiv", rel, chunk), chunk))
        cend = self.em.pure("min", [self.binary("add", cstart, chunk), hi], INDEX)
        tstate = self.ktype(e.summarize)
        state = yield self.fold_chunks_g(e.combine, tstate, e.summarize, key, e.chunk, lo, cstart, env)
        sv: Lowered = state if isinstance(tstate, tuple) else state[0]
        emit_env = replace(env, chunk={**env.chunk, key: (cstart, cend)}, states={**env.states, e.state: sv})
        return self.typed((yield self.block_g(e.emit, emit_env)), e)
