"""Lowering of KIR expressions to GPU IR values at one point of the logical domain (SPEC PASS-3.1).

Construction gives every statement *scalar ownership*: one program instance per member of its free domain. Inside
that program every KIR expression is lowered at the program's point:

* index variables are SSA ``index`` scalars (program coordinates or loop induction variables);
* a view read is a ``load`` (``gather`` when a coordinate depends on loaded data) with explicit coordinates; under a
  ``where`` it carries validity ``cond && in-bounds`` and a fill, so a masked-out member touches no memory (IR-6);
* a let is rematerialized at the point where it is read (the optimizer decides later whether to materialize it);
* a reduction is an ordered ``for`` loop nest carrying its accumulator (f16/bf16 sums and products accumulate in
  f32, as the reference does); argmax/argmin carry (best, index) with ties to the lowest index and the first NaN
  winning;
* a scan at point ``p`` is the ordered loop over the members up to ``p`` (down to ``p`` when reversed; ``p`` itself
  excluded when exclusive), combining in the reference's order;
* a region fold is a ``region_fold`` over fixed chunks with the summarizer and combiner as regions (IR-8); a region
  scan at ``p`` folds the chunks before ``p``'s chunk and applies the emitter to the incoming state.

Nothing here looks at kernel names; the forms follow from the KIR node kinds alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from intent_eqsat.errors import ConstructionError
from intent_eqsat.construct.emitter import Emitter
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


def gpu_dtype(t: str) -> str:
    """KIR scalar dtype -> GPU IR element type (KIR ``bool`` is the predicate type ``i1``)."""
    t = kdt.materialize(t)
    return "i1" if t == "bool" else t


def poly_to_launch(p: Poly, where: str = "") -> LaunchExpr:
    """A KIR shape polynomial (integer coefficients over shape symbols) as a LaunchExpr."""
    out: LaunchExpr | None = None
    for mono, coef in p.terms:
        if coef.denominator != 1:
            raise ConstructionError(f"extent {p} has a fractional coefficient", where or None)
        c = int(coef)
        term: LaunchExpr | None = None
        for atom in mono:
            term = Sym(atom) if term is None else BinOp("*", term, Sym(atom))
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

    def __init__(self, facts: ModuleFacts, kf: KernelFacts, em: Emitter, abi: dict[str, Value]):
        self.facts = facts
        self.kf = kf
        self.em = em
        self.abi = abi
        self.types = {**facts.combiner_types, **kf.types}
        self.refs = {**facts.combiner_refs, **kf.refs}
        self.lets = {s.name: s for s in kf.kernel.body if isinstance(s, m.Let)}
        #: index values that range over exactly ``[0, hi)`` (program coordinates and reduction induction
        #: variables of a variable whose lower bound is 0), by value name -> ``hi``
        self.spans: dict[str, LaunchExpr] = {}

    def record_span(self, v: Value, key: str) -> None:
        """Note that ``v`` ranges over the whole domain of index variable ``key`` when that domain starts at 0."""
        info = self.kf.vars[key]
        if not info.lo.terms:
            self.spans[v.name] = poly_to_launch(info.hi)

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
        return self.launch(poly_to_launch(info.lo)), self.launch(poly_to_launch(info.hi))

    # --------------------------------------------------------------------------------------- index mode

    def index(self, e: m.Expr, env: Env) -> Value:
        """A subscript expression as an ``index`` value."""
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
                return self.coerce(self.value(e, env), "index")
            if isinstance(e, m.Unary) and e.op == "neg":
                return self.binary("sub", self.const(0, "index"), self.index(e.x, env))
            if isinstance(e, m.Binary) and e.op in ("add", "sub", "mul", "floordiv", "mod"):
                return self.binary(e.op, self.index(e.a, env), self.index(e.b, env))
            return self.coerce(self.value(e, env), "index")
        finally:
            self.em.origin = prev

    # --------------------------------------------------------------------------------------- value mode

    def value(self, e: m.Expr, env: Env) -> Lowered:
        prev = self.origin(e)
        try:
            return self._value(e, env)
        finally:
            self.em.origin = prev

    def _value(self, e: m.Expr, env: Env) -> Lowered:
        if isinstance(e, m.Num):
            return self.const(e.value, self.dtype(e))
        if isinstance(e, m.Name):
            return self.name(e, env)
        if isinstance(e, m.Access):
            return self.access(e, env)
        if isinstance(e, m.Unary):
            x = self.value(e.x, env)
            if e.op == "not":
                return self.em.pure("not", [x], I1)
            return self.em.pure("neg", [self.coerce(x, self.dtype(e))], ScalarType(self.dtype(e)))
        if isinstance(e, m.Binary):
            return self.binary_expr(e, env)
        if isinstance(e, m.Call):
            return self.call(e, env)
        if isinstance(e, m.Cast):
            x = self.value(e.x, env)
            return self.coerce(x, gpu_dtype(e.dtype))
        if isinstance(e, m.Where):
            return self.where(e, env)
        if isinstance(e, m.TupleExpr):
            out: list[Value] = []
            for x in e.elems:
                v = self.value(x, env)
                out.extend(v if isinstance(v, list) else [v])
            return out
        if isinstance(e, m.Proj):
            x = self.value(e.x, env)
            return x[e.index]
        if isinstance(e, m.Reduce):
            return self.reduce(e, env)
        if isinstance(e, m.Scan):
            return self.scan(e, env)
        if isinstance(e, m.RegionFold):
            return self.region_fold(e, env)
        if isinstance(e, m.RegionScan):
            return self.region_scan(e, env)
        raise ConstructionError(f"cannot lower KIR node {type(e).__name__}", e.loc or e.id)

    def typed(self, v: Lowered, e: m.Node) -> Lowered:
        """Coerce a lowered value to the type inference gave node ``e``."""
        t = self.ktype(e)
        if isinstance(t, tuple):
            return [self.coerce(x, gpu_dtype(tx)) for x, tx in zip(v, t)]
        return self.coerce(v, gpu_dtype(t))

    def name(self, e: m.Name, env: Env) -> Lowered:
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
            return self.typed(self.let_at(ref.target, [], env), e)
        if ref.kind == "local":
            return self.typed(env.locals[ref.target], e)
        if ref.kind == "state":
            return self.typed(env.states[ref.target], e)
        raise ConstructionError(f"name {e.name!r} refers to a {ref.kind}", e.loc or e.id)

    def access(self, e: m.Access, env: Env) -> Lowered:
        p = self.kf.kernel.param(e.name)
        if p is not None and p.is_view:
            return self.load(e, env)
        return self.typed(self.let_at(e.name, list(e.subs), env), e)

    def load(self, e: m.Access, env: Env) -> Value:
        view = self.abi[e.name]
        coords = [self.index(s, env) for s in e.subs]
        data_dependent = any(isinstance(n, m.Access) for s in e.subs for n in m.walk(s))
        dtype = view.type.dtype
        if env.valid is None:
            return self.em.pure("gather" if data_dependent else "load", [view, *coords], ScalarType(dtype),
                                valid=False)
        # A read whose every coordinate ranges over exactly its view's axis is in bounds whatever the predicate: it
        # touches no memory it could not, and the predicate's select discards its value where the predicate fails
        # (the where's fill), so it is read unconditionally. Scores read this way stay the same term under and
        # outside the predicate (the summary relations of online renormalization compare them).
        if all(self.spans.get(c.name) == view.type.shape[axis] for axis, c in enumerate(coords)):
            return self.em.pure("gather" if data_dependent else "load", [view, *coords], ScalarType(dtype),
                                valid=False)
        # Under a predicate: the member reads memory only where the predicate holds and it is in bounds.
        valid = env.valid
        for axis, c in enumerate(coords):
            lo_ok = self.cmp("ge", c, self.const(0, "index"))
            hi_ok = self.cmp("lt", c, self.launch(view.type.shape[axis]))
            valid = self.and_valid(valid, self.and_valid(lo_ok, hi_ok))
        fill: Any = False if dtype == "i1" else (0.0 if dtype in ("f16", "bf16", "f32", "f64") else 0)
        return self.em.pure("gather" if data_dependent else "load", [view, *coords, valid], ScalarType(dtype),
                            valid=True, fill=fill)

    def let_at(self, name: str, subs: Sequence[m.Expr], env: Env) -> Lowered:
        """Rematerialize let ``name`` at the point given by ``subs`` (its index variables rebound)."""
        let = self.lets[name]
        info = self.kf.lets[name]
        inner = Env(valid=env.valid)
        for key, sub in zip(info.indices, subs):
            inner.vars[key] = self.index(sub, env)
        prev = self.origin(let)
        try:
            return self.typed(self.value(let.value, inner), let.value)
        finally:
            self.em.origin = prev

    def binary_expr(self, e: m.Binary, env: Env) -> Value:
        if e.op in ("and", "or"):
            return self.em.pure(e.op, [self.value(e.a, env), self.value(e.b, env)], I1)
        ta, tb = self.ktype(e.a), self.ktype(e.b)
        common = gpu_dtype(kdt.promote(ta, tb) or ta)
        a = self.coerce(self.value(e.a, env), common)
        b = self.coerce(self.value(e.b, env), common)
        if e.op in _CMP:
            return self.cmp(_CMP[e.op], a, b)
        out = self.binary(e.op, a, b)
        return self.coerce(out, self.dtype(e))

    def call(self, e: m.Call, env: Env) -> Lowered:
        if e.fn == "select":
            c = self.value(e.args[0], env)
            a, b = self.typed(self.value(e.args[1], env), e), self.typed(self.value(e.args[2], env), e)
            if isinstance(a, list):
                return [self.select(c, x, y) for x, y in zip(a, b)]
            return self.select(c, a, b)
        t = self.dtype(e)
        args = [self.coerce(self.value(x, env), t) for x in e.args]
        if e.fn in ("max", "min", "pow"):
            return self.em.pure(e.fn, args, ScalarType(t))
        return self.em.pure(e.fn, args, ScalarType(t))

    def where(self, e: m.Where, env: Env) -> Lowered:
        cond = self.value(e.cond, env)
        inner = replace(env, valid=self.and_valid(env.valid, cond))
        v = self.typed(self.value(e.value, inner), e)
        f = self.typed(self.value(e.fill, env), e)
        if isinstance(v, list):
            return [self.select(cond, x, y) for x, y in zip(v, f)]
        return self.select(cond, v, f)

    # ----------------------------------------------------------------------------------- combiners

    def identity(self, combine: str, t: Any) -> list[Value]:
        """The combiner's identity as values of the carried types."""
        if combine in BUILTIN_COMBINERS:
            v = {"add": 0, "mul": 1, "max": kdt.lowest(t), "min": kdt.highest(t)}[combine]
            return [self.const(v, gpu_dtype(t))]
        c = self.facts.combiners[combine]
        v = self.typed(self.value(c.identity, Env()), c.identity)
        return v if isinstance(v, list) else [v]

    def combine(self, combine: str, acc: list[Value], x: list[Value], t: Any) -> list[Value]:
        """``combine(acc, x)`` with ``acc`` holding the earlier members (the reference's order)."""
        if combine in BUILTIN_COMBINERS:
            a, b = acc[0], self.coerce(x[0], acc[0].type.dtype)
            return [self.em.pure(combine, [a, b], a.type)]
        c = self.facts.combiners[combine]
        pa, pb = c.params
        ta = c.type
        av: Lowered = acc if isinstance(ta, tuple) else acc[0]
        bv: Lowered = x if isinstance(ta, tuple) else x[0]
        out = self.block(c.body, Env(states={pa: av, pb: bv}))
        out = self.typed(out, c.body)
        return out if isinstance(out, list) else [out]

    def block(self, b: m.Block, env: Env) -> Lowered:
        env = replace(env, locals=dict(env.locals))
        for x in b.lets:
            prev = self.origin(x)
            try:
                env.locals[x.id] = self.typed(self.value(x.value, env), x)
            finally:
                self.em.origin = prev
        return self.value(b.result, env)

    @staticmethod
    def as_list(v: Lowered) -> list[Value]:
        return v if isinstance(v, list) else [v]

    def carried_types(self, combine: str, t: Any) -> Any:
        """Accumulate f16/bf16 sums and products in f32 (the reference's accumulation dtype)."""
        if combine in ("add", "mul") and t in ("f16", "bf16"):
            return "f32"
        return t

    # ------------------------------------------------------------------------------------- loops

    def loop(self, lo: Value, hi: Value, inits: list[Value], body, hint: str = "k",
             reduce: str | None = None) -> list[Value]:
        """``for iv in [lo, hi)`` carrying ``inits``; ``body(iv, carried) -> next carried``. ``reduce`` marks
        the loop as the ordered realization of an ordinary KIR reduction (its members may be reassociated)."""
        step = self.const(1, "index")
        region = self.em.region([INDEX] + [v.type for v in inits],
                                lambda iv, *carried: body(iv, list(carried)), hints=[hint])
        attrs = {"reduce": reduce} if reduce else {}
        op = self.em.op_with_regions("for", [lo, hi, step, *inits], [v.type for v in inits], [region], **attrs)
        return op.results

    def bounds(self, key: str, env: Env) -> tuple[Value, Value]:
        if key in env.chunk:
            return env.chunk[key]
        return self.extent(key)

    def reduce(self, e: m.Reduce, env: Env) -> Lowered:
        keys = [self.kf.bind_keys[b.id] for b in e.binds]
        t = self.ktype(e)
        if e.op in ("argmax", "argmin"):
            return self.arg_reduce(e, keys[0], env)
        combine = _REDUCE_COMBINE.get(e.op, e.combine or "")
        ct = self.carried_types(combine, t)
        inits = self.identity(combine, ct)

        def nest(level: int, inner_env: Env, carried: list[Value]) -> list[Value]:
            lo, hi = self.bounds(keys[level], inner_env)

            def body(iv: Value, acc: list[Value]) -> list[Value]:
                if keys[level] not in inner_env.chunk:
                    self.record_span(iv, keys[level])
                env2 = replace(inner_env, vars={**inner_env.vars, keys[level]: iv})
                if level + 1 < len(keys):
                    return nest(level + 1, env2, acc)
                x = self.as_list(self.value(e.body, env2))
                return self.combine(combine, acc, x, ct)

            # an ordinary reduction with a builtin associative+commutative combiner (SPEC PASS-4: reassociable)
            reassoc = combine if combine in _REASSOCIABLE and len(carried) == 1 and level + 1 == len(keys) else None
            return self.loop(lo, hi, carried, body, hint=e.binds[level].name, reduce=reassoc)

        out = nest(0, env, inits)
        res = self.typed(out if isinstance(t, tuple) else out[0], e)
        return res

    def arg_reduce(self, e: m.Reduce, key: str, env: Env) -> Value:
        bt = self.ktype(e.body)
        vt = gpu_dtype(bt)
        lo, hi = self.bounds(key, env)
        best0 = self.const(kdt.lowest(bt) if e.op == "argmax" else kdt.highest(bt), vt)
        idx0 = self.const(-1, "i64")
        is_float = vt in ("f16", "bf16", "f32", "f64")

        def body(iv: Value, carried: list[Value]) -> list[Value]:
            best, idx = carried
            v = self.coerce(self.value(e.body, replace(env, vars={**env.vars, key: iv})), vt)
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

        _, idx = self.loop(lo, hi, [best0, idx0], body, hint=e.binds[0].name)
        return self.coerce(idx, self.dtype(e))

    def scan(self, e: m.Scan, env: Env) -> Lowered:
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
            start, stop = (self.binary("add", p, one) if e.exclusive else p), hi
        inits = self.identity(e.combine, ct)

        def body(iv: Value, acc: list[Value]) -> list[Value]:
            x = self.as_list(self.value(e.body, replace(env, vars={**env.vars, key: iv})))
            return self.combine(e.combine, acc, x, ct)

        if not e.reverse:
            out = self.loop(start, stop, inits, body, hint=f"{e.var}_s")
        else:
            # Suffix scan in the reference's order: members from the last one down, combine(x, carry).
            def rbody(t_iv: Value, acc: list[Value]) -> list[Value]:
                iv = self.binary("sub", self.binary("sub", self.binary("add", start, stop), one), t_iv)
                x = self.as_list(self.value(e.body, replace(env, vars={**env.vars, key: iv})))
                return self.combine(e.combine, x, acc, ct)

            out = self.loop(start, stop, inits, rbody, hint=f"{e.var}_s")
        return self.typed(out if isinstance(t, tuple) else out[0], e)

    def fold_chunks(self, combine: str, tstate: Any, summarize: m.Block, key: str, chunk: int,
                    lo: Value, hi: Value, env: Env) -> list[Value]:
        """``region_fold`` over chunks of ``chunk`` members of ``[lo, hi)`` (IR-8): summarize each, combine."""
        ttuple = tstate if isinstance(tstate, tuple) else (tstate,)
        inits = self.identity(combine, tstate)
        step = self.const(chunk, "index")
        chunk_v = step

        def summ(seg: Value) -> list[Value]:
            end = self.em.pure("min", [self.binary("add", seg, chunk_v), hi], INDEX)
            out = self.block(summarize, replace(env, chunk={**env.chunk, key: (seg, end)}))
            return [self.coerce(v, gpu_dtype(tx)) for v, tx in zip(self.as_list(out), ttuple)]

        def comb(*args: Value) -> list[Value]:
            n = len(ttuple)
            return self.combine(combine, list(args[:n]), list(args[n:]), tstate)

        types = [ScalarType(gpu_dtype(tx)) for tx in ttuple]
        r_summ = self.em.region([INDEX], summ, hints=["seg"])
        r_comb = self.em.region(types + types, comb)
        op = self.em.op_with_regions("region_fold", [lo, hi, step, *inits], types, [r_summ, r_comb])
        return op.results

    def region_fold(self, e: m.RegionFold, env: Env) -> Lowered:
        key = self.kf.bind_keys[e.bind.id]
        lo, hi = self.bounds(key, env)
        tstate = self.ktype(e.summarize)
        state = self.fold_chunks(e.combine, tstate, e.summarize, key, e.chunk, lo, hi, env)
        sv: Lowered = state if isinstance(tstate, tuple) else state[0]
        if e.finalize is None or e.state is None:
            return self.typed(sv, e)
        return self.typed(self.block(e.finalize, replace(env, states={**env.states, e.state: sv})), e)

    def region_scan(self, e: m.RegionScan, env: Env) -> Lowered:
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
        state = self.fold_chunks(e.combine, tstate, e.summarize, key, e.chunk, lo, cstart, env)
        sv: Lowered = state if isinstance(tstate, tuple) else state[0]
        emit_env = replace(env, chunk={**env.chunk, key: (cstart, cend)}, states={**env.states, e.state: sv})
        return self.typed(self.block(e.emit, emit_env), e)
