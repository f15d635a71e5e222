"""Expression typing for KIR: resolves names, types every node (weak literals adopt the type they meet, see
``dtypes.py``), binds reduction/scan/region indices and records subscript sites and direct uses.

The walker works for kernel statements (with a ``KernelInference`` holding the kernel-level tables) and for
combiner bodies (no kernel: only the two parameters and block lets are visible). Every ill-typed or ill-scoped
expression raises :class:`KirError` at the offending token.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from intent_eqsat.errors import KirError, SourceLocation
from intent_eqsat.kir import dtypes as dt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.facts import (
    BUILTIN_COMBINERS, NON_ASSOCIATIVE, Ref, Site, VarInfo, kir_error, start_node, where_of,
)
from intent_eqsat.kir.poly import Poly
from intent_eqsat.kir.printer import type_str

if TYPE_CHECKING:
    from intent_eqsat.kir.infer import KernelInference

FLOAT_ONLY_FUNCS = frozenset(m.UNARY_FUNCS) - {"abs"}
#: index variables (free and bound) one point of a statement may have in scope: the reference evaluator holds a
#: statement's domain as one NumPy array axis per variable, and NumPy broadcasts at most 32 axes
MAX_INDICES = 24

# ------------------------------------------------------------------------------------------------ types


def is_scalar(t: m.Type) -> bool:
    return isinstance(t, str)


def _promote(a: m.Type, b: m.Type) -> m.Type | None:
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return None
        out = [dt.promote(x, y) for x, y in zip(a, b)]
        return None if None in out else tuple(out)  # type: ignore[arg-type]
    return dt.promote(a, b)


def _materialize(t: m.Type) -> m.Type:
    return dt.materialize(t) if isinstance(t, str) else tuple(dt.materialize(x) for x in t)


def _has_weak(t: m.Type) -> bool:
    return dt.is_weak(t) if isinstance(t, str) else any(dt.is_weak(x) for x in t)


class Typing:
    """Type table with coercion of weak (literal) subtrees to the type they adopt."""

    def __init__(self) -> None:
        self.types: dict[str, m.Type] = {}

    def set(self, e: m.Node, t: m.Type) -> m.Type:
        self.types[e.id] = t
        return t

    def coerce(self, e: m.Expr, t: m.Type) -> None:
        """Give weak-typed ``e`` (and its weak operands) the concrete type ``t``."""
        cur = self.types.get(e.id)
        if cur is None or not _has_weak(cur):
            return
        if isinstance(t, tuple) and isinstance(cur, tuple):
            self.types[e.id] = tuple(c if not dt.is_weak(c) else x for c, x in zip(cur, t))
        else:
            self.types[e.id] = t
        if isinstance(e, m.Binary) and e.op in ("add", "sub", "mul", "div", "floordiv", "mod"):
            self.coerce(e.a, t)
            self.coerce(e.b, t)
        elif isinstance(e, m.Unary) and e.op == "neg":
            self.coerce(e.x, t)
        elif isinstance(e, m.Where):
            self.coerce(e.value, t)
            self.coerce(e.fill, t)
        elif isinstance(e, m.Call):
            for a in e.args[1:] if e.fn == "select" else e.args:
                self.coerce(a, t)
        elif isinstance(e, m.TupleExpr) and isinstance(t, tuple):
            for x, tx in zip(e.elems, t):
                self.coerce(x, tx)

    def materialize(self, e: m.Expr) -> m.Type:
        t = _materialize(self.types[e.id])
        self.coerce(e, t)
        return t


def fits(e: m.Expr, have: m.Type, want: m.Type) -> bool:
    """Can a value of type ``have`` be used where ``want`` is required (equal, or weak and convertible)?"""
    if isinstance(want, tuple) or isinstance(have, tuple):
        return (isinstance(want, tuple) and isinstance(have, tuple) and len(want) == len(have)
                and all(fits(e, h, w) for h, w in zip(have, want)))
    if have == want:
        return True
    if have == dt.WEAK_INT:
        return dt.is_numeric(want)
    if have == dt.WEAK_FLOAT:
        return dt.is_float(want)
    return False


def _check_vocabulary(e: m.Node) -> None:
    """Operator and dtype names of a node must be known (the parser guarantees it; hand-built trees may not)."""
    bad = None
    if isinstance(e, m.Unary) and e.op not in ("neg", "not"):
        bad = f"unknown unary operator {e.op!r}"
    elif isinstance(e, m.Binary) and e.op not in m.BINARY_OPS:
        bad = f"unknown binary operator {e.op!r}"
    elif isinstance(e, m.Call) and e.fn not in (*m.UNARY_FUNCS, *m.BINARY_FUNCS, "select"):
        bad = f"unknown function {e.fn!r}"
    elif isinstance(e, m.Cast) and e.dtype not in m.DTYPES:
        bad = f"unknown dtype {e.dtype!r}"
    elif isinstance(e, m.Reduce) and e.op not in m.REDUCE_OPS:
        bad = f"unknown reduction {e.op!r}"
    elif isinstance(e, (m.RegionFold, m.RegionScan)) and e.chunk < 1:
        bad = "the chunk size must be a positive integer"
    if bad:
        raise kir_error(bad, e)


# ----------------------------------------------------------------------------------------- walk context


@dataclass(frozen=True)
class Ctx:
    """Lexical context of an expression inside one statement."""

    stmt: str
    scope: Mapping[str, Ref]
    guards: tuple[m.Expr, ...] = ()
    free: frozenset[str] = frozenset()          # names of the statement's free indices
    chunk: Mapping[str, str] = field(default_factory=dict)       # chunk index usable only under a chunk-local reduction
    chunk_emit: Mapping[str, str] = field(default_factory=dict)  # region_scan index inside emit (direct use allowed)
    in_reduce: bool = False
    top: bool = False
    lhs: bool = False


class ExprTyper:
    """Walks expressions: resolves names, types nodes, records sites, direct uses and bindings."""

    def __init__(self, typing: Typing, kernel: KernelInference | None, combiners: Mapping[str, m.Combiner]):
        self.t = typing
        self.k = kernel
        self.combiners = combiners
        self.state_types: dict[str, m.Type] = {}
        self.local_types: dict[str, m.Type] = {}
        self.combiner_refs: dict[str, Ref] = {}

    # ------------------------------------------------------------------------------------------- names

    def name(self, e: m.Name, ctx: Ctx) -> m.Type:
        n = e.name
        if n in ctx.chunk:
            raise kir_error(f"chunk index {n!r} may only be used inside a reduction over the chunk "
                            f"(e.g. sum({n}: ...))", e)
        ref = ctx.scope.get(n)
        if ref is not None:
            (self.k.refs if self.k is not None else self.combiner_refs)[e.id] = ref
            if ref.kind == "index":
                return self.t.set(e, "i64")
            if ref.kind == "local":
                return self.t.set(e, self.local_types[ref.target])
            return self.t.set(e, self.state_types[ref.target])
        if self.k is not None:
            k = self.k
            p = k.kernel.param(n)
            if p is not None and p.is_view:
                raise kir_error(f"view {n!r} needs subscripts: {n}[...]", e)
            if p is not None:
                k.refs[e.id] = Ref("scalar", n)
                return self.t.set(e, p.dtype)
            if n in k.symbols:
                k.refs[e.id] = Ref("symbol", n)
                return self.t.set(e, "i64")
            if n in k.lets:
                info = k.lets[n]
                if info.indices:
                    raise kir_error(f"let {n!r} has {len(info.indices)} indices; write {n}[...]", e)
                k.refs[e.id] = Ref("let", n)
                return self.t.set(e, info.type)
            if ctx.lhs:
                key = k.new_free(n, e)
                k.refs[e.id] = Ref("index", key)
                return self.t.set(e, "i64")
            raise kir_error(f"unbound index or unknown name {n!r}: a free index must appear on the left-hand side, "
                            f"a reduction index must be bound by its reduction (e.g. sum({n}: ...))", e)
        raise kir_error(f"unknown name {n!r} in a combiner body (only its two parameters and its lets are visible)", e)

    def access(self, e: m.Access, ctx: Ctx) -> m.Type:
        if self.k is None:
            raise kir_error(f"a combiner body cannot read tensors ({e.name}[...])", e)
        k = self.k
        p = k.kernel.param(e.name)
        if p is not None and p.is_view:
            shape, elem, kind = k.dims[e.name], p.dtype, "view"
        elif e.name in k.lets and k.lets[e.name].indices:
            shape, elem, kind = k.lets[e.name].shape, k.lets[e.name].type, "let"
        elif p is not None or e.name in k.symbols or e.name in k.lets:
            raise kir_error(f"{e.name!r} is a scalar; it takes no subscripts", e)
        elif e.name in ctx.scope:
            raise kir_error(f"{e.name!r} is an index variable; it takes no subscripts", e)
        else:
            raise kir_error(f"unknown view or let {e.name!r}", e)
        if len(e.subs) != len(shape):
            raise kir_error(f"{kind} {e.name!r} has {len(shape)} dimension(s) but is subscripted with {len(e.subs)}", e)
        k.refs[e.id] = Ref(kind, e.name)
        for axis, sub in enumerate(e.subs):
            ts = self.expr(sub, ctx)
            if not (is_scalar(ts) and dt.is_int(ts)):  # type: ignore[arg-type]
                raise kir_error(f"subscript {axis} of {e.name!r} must be an integer, got {type_str(ts)}",
                                start_node(sub))
            self.t.coerce(sub, "i64" if ts == dt.WEAK_INT else ts)
            k.sites.append(Site(e.id, e.name, axis, sub, shape[axis], ctx.guards, ctx.stmt, ctx.lhs))
            if isinstance(sub, m.Name) and k.refs.get(sub.id, Ref("", "")).kind == "index":
                k.direct_uses.append((k.refs[sub.id].target, shape[axis], sub, f"{e.name} axis {axis}"))
        return self.t.set(e, elem)

    # ------------------------------------------------------------------------------------- expressions

    def expr(self, e: m.Expr, ctx: Ctx) -> m.Type:
        _check_vocabulary(e)
        top = ctx.top
        if top and not isinstance(e, (m.RegionFold, m.RegionScan)):
            ctx = dataclasses.replace(ctx, top=False)
        if isinstance(e, m.Num):
            return self.t.set(e, {"int": dt.WEAK_INT, "float": dt.WEAK_FLOAT, "bool": "bool"}[e.kind])
        if isinstance(e, m.Name):
            return self.name(e, ctx)
        if isinstance(e, m.Access):
            return self.access(e, ctx)
        if isinstance(e, m.Unary):
            return self.unary(e, ctx)
        if isinstance(e, m.Binary):
            return self.binary(e, ctx)
        if isinstance(e, m.Call):
            return self.call(e, ctx)
        if isinstance(e, m.Cast):
            tx = self.expr(e.x, ctx)
            if not is_scalar(tx):
                raise kir_error(f"cannot cast a tuple ({type_str(tx)})", e)
            self.t.materialize(e.x)
            return self.t.set(e, e.dtype)
        if isinstance(e, m.Where):
            return self.where(e, ctx)
        if isinstance(e, m.TupleExpr):
            ts = []
            for x in e.elems:
                tx = self.expr(x, ctx)
                if not is_scalar(tx):
                    raise kir_error("tuples cannot be nested", start_node(x))
                ts.append(tx)
            return self.t.set(e, tuple(ts))
        if isinstance(e, m.Proj):
            tx = self.expr(e.x, ctx)
            if not isinstance(tx, tuple):
                raise kir_error(f"'.{e.index}' needs a tuple value, got {type_str(tx)}", e)
            if e.index >= len(tx):
                raise kir_error(f"tuple component {e.index} out of range for {type_str(tx)}", e)
            return self.t.set(e, tx[e.index])
        if self.k is None:
            raise kir_error("a combiner body is pointwise: no reductions, scans or regions", e)
        if isinstance(e, m.Reduce):
            return self.reduce(e, ctx)
        if isinstance(e, m.Scan):
            return self.scan(e, ctx)
        if isinstance(e, (m.RegionFold, m.RegionScan)):
            if not top:
                kw = "region_fold" if isinstance(e, m.RegionFold) else "region_scan"
                raise kir_error(f"{kw} must be the whole right-hand side of a statement", e)
            return self.region_fold(e, ctx) if isinstance(e, m.RegionFold) else self.region_scan(e, ctx)
        raise kir_error(f"not an expression: {type(e).__name__}", e)

    def unary(self, e: m.Unary, ctx: Ctx) -> m.Type:
        tx = self.expr(e.x, ctx)
        if e.op == "not":
            if tx != "bool":
                raise kir_error(f"'!' needs a bool operand, got {type_str(tx)}", e)
            return self.t.set(e, "bool")
        if not (is_scalar(tx) and dt.is_numeric(tx)):  # type: ignore[arg-type]
            raise kir_error(f"unary '-' needs a numeric operand, got {type_str(tx)}", e)
        return self.t.set(e, tx)

    def binary(self, e: m.Binary, ctx: Ctx) -> m.Type:
        ta, tb = self.expr(e.a, ctx), self.expr(e.b, ctx)
        sym = m.BINARY_OPS[e.op]
        if not (is_scalar(ta) and is_scalar(tb)):
            raise kir_error(f"'{sym}' cannot be applied to tuples ({type_str(ta)}, {type_str(tb)})", e)
        if e.op in ("and", "or"):
            if ta != "bool" or tb != "bool":
                raise kir_error(f"'{sym}' needs bool operands, got {ta} and {tb}", e)
            return self.t.set(e, "bool")
        t = dt.promote(ta, tb)  # type: ignore[arg-type]
        if t is None:
            raise kir_error(f"'{sym}' cannot combine {ta} and {tb}; use cast<...>", e)
        if e.op in ("eq", "ne"):
            pass
        elif t == "bool":
            raise kir_error(f"'{sym}' needs numeric operands, got bool", e)
        if e.op == "div" and dt.is_int(t):
            raise kir_error("'/' on integers; use '//' for floor division or cast to a float type", e)
        if not dt.is_weak(t):
            self.t.coerce(e.a, t)
            self.t.coerce(e.b, t)
        if e.op in ("lt", "le", "gt", "ge", "eq", "ne"):
            if dt.is_weak(t):
                self.t.coerce(e.a, dt.materialize(t))
                self.t.coerce(e.b, dt.materialize(t))
            return self.t.set(e, "bool")
        return self.t.set(e, t)

    def call(self, e: m.Call, ctx: Ctx) -> m.Type:
        arity = 1 if e.fn in m.UNARY_FUNCS else (3 if e.fn == "select" else 2)
        if len(e.args) != arity:
            raise kir_error(f"{e.fn} takes {arity} argument(s), got {len(e.args)}", e)
        ts = [self.expr(a, ctx) for a in e.args]
        if e.fn == "select":
            if ts[0] != "bool":
                raise kir_error(f"the condition of select must be bool, got {type_str(ts[0])}", start_node(e.args[0]))
            t = _promote(ts[1], ts[2])
            if t is None:
                raise kir_error(f"select branches have incompatible types {type_str(ts[1])} and {type_str(ts[2])}", e)
            if not _has_weak(t):
                self.t.coerce(e.args[1], t)
                self.t.coerce(e.args[2], t)
            return self.t.set(e, t)
        for a, ta in zip(e.args, ts):
            if not (is_scalar(ta) and dt.is_numeric(ta)):  # type: ignore[arg-type]
                raise kir_error(f"{e.fn} needs numeric arguments, got {type_str(ta)}", start_node(a))
        if arity == 1:
            t = ts[0]
            if e.fn in FLOAT_ONLY_FUNCS:
                if dt.is_weak(t):  # type: ignore[arg-type]
                    t = dt.WEAK_FLOAT
                elif not dt.is_float(t):  # type: ignore[arg-type]
                    raise kir_error(f"{e.fn} needs a floating-point argument, got {t}; use cast<f32>(...)", e)
            return self.t.set(e, t)
        t = dt.promote(ts[0], ts[1])  # type: ignore[arg-type]
        if t is None:
            raise kir_error(f"{e.fn} cannot combine {ts[0]} and {ts[1]}", e)
        if e.fn == "pow" and not dt.is_float(t):
            if dt.is_weak(t):
                t = dt.WEAK_FLOAT
            else:
                raise kir_error(f"pow needs floating-point arguments, got {t}", e)
        if not dt.is_weak(t):
            self.t.coerce(e.args[0], t)
            self.t.coerce(e.args[1], t)
        return self.t.set(e, t)

    def where(self, e: m.Where, ctx: Ctx) -> m.Type:
        tc = self.expr(e.cond, ctx)
        if tc != "bool":
            raise kir_error(f"the condition of 'where' must be bool, got {type_str(tc)}", start_node(e.cond))
        tv = self.expr(e.value, dataclasses.replace(ctx, guards=ctx.guards + (e.cond,)))
        tf = self.expr(e.fill, ctx)
        t = _promote(tv, tf)
        if t is None:
            raise kir_error(f"'where' value and fill have incompatible types {type_str(tv)} and {type_str(tf)}", e)
        if not _has_weak(t):
            self.t.coerce(e.value, t)
            self.t.coerce(e.fill, t)
        return self.t.set(e, t)

    # ---------------------------------------------------------------------------------- structured ops

    def _bind_scope(self, binds: tuple[m.Bind, ...], ctx: Ctx, role: str) -> Ctx:
        """Bind reduction/fold indices: check names, record VarInfo (domains are finished later)."""
        assert self.k is not None
        k = self.k
        scope = dict(ctx.scope)
        chunk = dict(ctx.chunk)
        seen: set[str] = set()
        for b in binds:
            if b.name in seen:
                raise kir_error(f"index {b.name!r} is bound twice", b)
            seen.add(b.name)
            chunk_key = ctx.chunk.get(b.name) or ctx.chunk_emit.get(b.name)
            if chunk_key is not None and role == "reduce":
                if b.lo is not None:
                    raise kir_error(f"a reduction over the chunk index {b.name!r} ranges over the current chunk; "
                                    f"remove 'in lo..hi'", b)
                k.bind_keys[b.id] = chunk_key
                scope[b.name] = Ref("index", chunk_key)
                chunk.pop(b.name, None)
                continue
            k.check_fresh_index(b.name, b)
            prev = ctx.scope.get(b.name)
            if prev is not None:
                if prev.kind == "index" and b.name in ctx.free:
                    raise kir_error(f"reduction index {b.name!r} is also a free index of the statement", b)
                what = "an enclosing reduction index" if prev.kind == "index" else "a local value"
                raise kir_error(f"index {b.name!r} shadows {what} of the same name", b)
            lo, hi, explicit = Poly(), Poly(), False
            if b.lo is not None and b.hi is not None:
                lo, hi, explicit = k.symbolic(b.lo), k.symbolic(b.hi), True
            k.add_var(VarInfo(b.id, b.name, role, ctx.stmt, lo, hi, explicit, b.loc))
            k.bind_keys[b.id] = b.id
            scope[b.name] = Ref("index", b.id)
            in_scope = sum(1 for r in scope.values() if r.kind == "index")
            if in_scope > MAX_INDICES:
                raise kir_error(f"too many index variables in scope at {b.name!r}: {in_scope} (free and bound "
                                f"together; at most {MAX_INDICES})", b)
        return dataclasses.replace(ctx, scope=MappingProxyType(scope), chunk=MappingProxyType(chunk))

    def resolve_combiner(self, name: str, loc: SourceLocation | None, node: m.Node, what: str,
                         commutative: bool) -> m.Combiner | None:
        """Check a combiner reference; return the named combiner, or None for a builtin one."""
        here = loc or where_of(node)
        if name in BUILTIN_COMBINERS:
            return None
        if name in NON_ASSOCIATIVE:
            raise KirError(f"combiner {name!r} is not associative: {what} needs an associative combiner "
                           f"(add, mul, max, min, or a combiner declared associative)", here)
        c = self.combiners.get(name)
        if c is None:
            raise KirError(f"unknown combiner {name!r} (builtins: {', '.join(BUILTIN_COMBINERS)})", here)
        if not c.associative:
            raise KirError(f"combiner {name!r} is not declared associative: {what} needs an associative "
                           f"combiner", here)
        if commutative and not c.commutative:
            raise KirError(f"combiner {name!r} is not declared commutative: {what} reorders its members, so it "
                           f"needs a commutative combiner", here)
        return c

    def _combined(self, body: m.Expr, tb: m.Type, c: m.Combiner | None, name: str, node: m.Node) -> m.Type:
        """The carried type of a scan/reduce/region with combiner ``c`` over values ``body`` of type ``tb``."""
        if c is None:
            if not (is_scalar(tb) and dt.is_numeric(tb)):  # type: ignore[arg-type]
                raise kir_error(f"combiner {name!r} needs numeric scalar values, got {type_str(tb)}", start_node(body))
            return self.t.materialize(body)
        if not fits(body, tb, c.type):
            raise kir_error(f"combiner {name!r} combines {type_str(c.type)} values but the operand has type "
                            f"{type_str(tb)}", start_node(body))
        self.t.coerce(body, c.type)
        return c.type

    def reduce(self, e: m.Reduce, ctx: Ctx) -> m.Type:
        inner = self._bind_scope(e.binds, ctx, "reduce")
        tb = self.expr(e.body, dataclasses.replace(inner, in_reduce=True))
        if e.op in ("argmax", "argmin") and len(e.binds) != 1:
            raise kir_error(f"{e.op} binds exactly one index, got {len(e.binds)}", e)
        if e.op == "reduce":
            c = self.resolve_combiner(e.combine or "", e.combine_loc, e, "reduce", commutative=True)
            return self.t.set(e, self._combined(e.body, tb, c, e.combine or "", e))
        if not (is_scalar(tb) and dt.is_numeric(tb)):  # type: ignore[arg-type]
            raise kir_error(f"{e.op} needs numeric values, got {type_str(tb)}", start_node(e.body))
        t = self.t.materialize(e.body)
        return self.t.set(e, "i64" if e.op in ("argmax", "argmin") else t)

    def scan(self, e: m.Scan, ctx: Ctx) -> m.Type:
        here = e.var_loc or where_of(e)
        if ctx.in_reduce:
            raise kir_error("a scan cannot be nested inside a reduction or another scan", e)
        if e.var in ctx.chunk:
            raise KirError(f"cannot scan over the chunk index {e.var!r} in a summarizer (a summary is one value "
                           f"per chunk)", here)
        ref = ctx.scope.get(e.var)
        if e.var not in ctx.chunk_emit and (ref is None or ref.kind != "index" or e.var not in ctx.free):
            raise KirError(f"scan index {e.var!r} must be a free index of the statement (the scan's output is "
                           f"indexed by it)", here)
        assert ref is not None and self.k is not None
        self.k.bind_keys[e.id] = ref.target
        tb = self.expr(e.body, dataclasses.replace(ctx, in_reduce=True))
        c = self.resolve_combiner(e.combine, e.combine_loc, e, "a scan", commutative=False)
        return self.t.set(e, self._combined(e.body, tb, c, e.combine, e))

    def block(self, b: m.Block, ctx: Ctx) -> m.Type:
        scope = dict(ctx.scope)
        for x in b.lets:
            if self.k is not None:
                self.k.check_fresh_index(x.name, x, what="local")
            if x.name in scope or x.name in ctx.chunk:
                raise kir_error(f"local {x.name!r} shadows a name already in scope", x)
            tx = self.expr(x.value, dataclasses.replace(ctx, scope=MappingProxyType(scope)))
            tx = self.t.materialize(x.value)
            self.local_types[x.id] = tx
            self.t.set(x, tx)
            scope[x.name] = Ref("local", x.id)
        t = self.expr(b.result, dataclasses.replace(ctx, scope=MappingProxyType(scope)))
        return self.t.set(b, t)

    def _state_scope(self, ctx: Ctx, state: str, t: m.Type, node: m.Node) -> Ctx:
        assert self.k is not None
        self.k.check_fresh_index(state, node, what="state")
        if state in ctx.scope:
            raise kir_error(f"state {state!r} shadows a name already in scope", node)
        self.state_types[state] = t
        return dataclasses.replace(ctx, scope=MappingProxyType({**ctx.scope, state: Ref("state", state)}))

    def region_fold(self, e: m.RegionFold, ctx: Ctx) -> m.Type:
        ctx = dataclasses.replace(ctx, top=False)
        inner = self._bind_scope((e.bind,), ctx, "fold")
        key = e.bind.id
        # The fold index is only visible through chunk-local reductions inside the summarizer.
        scope = {n: r for n, r in inner.scope.items() if n != e.bind.name}
        summ_ctx = dataclasses.replace(inner, scope=MappingProxyType(scope),
                                       chunk=MappingProxyType({**ctx.chunk, e.bind.name: key}))
        ts = self.block(e.summarize, summ_ctx)
        c = self.resolve_combiner(e.combine, e.combine_loc, e, "a region fold", commutative=False)
        tstate = self._combined(e.summarize.result, ts, c, e.combine, e)
        self.t.set(e.summarize, tstate)
        if e.finalize is None or e.state is None:
            return self.t.set(e, tstate)
        fin_ctx = self._state_scope(ctx, e.state, tstate, e)
        self.block(e.finalize, fin_ctx)
        return self.t.set(e, self.t.materialize(e.finalize.result))

    def region_scan(self, e: m.RegionScan, ctx: Ctx) -> m.Type:
        ctx = dataclasses.replace(ctx, top=False)
        here = e.var_loc or where_of(e)
        ref = ctx.scope.get(e.var)
        if ref is None or ref.kind != "index" or e.var not in ctx.free:
            raise KirError(f"region_scan index {e.var!r} must be a free index of the statement", here)
        assert self.k is not None
        self.k.bind_keys[e.id] = ref.target
        summ_ctx = dataclasses.replace(ctx, chunk=MappingProxyType({**ctx.chunk, e.var: ref.target}))
        ts = self.block(e.summarize, summ_ctx)
        c = self.resolve_combiner(e.combine, e.combine_loc, e, "a region scan", commutative=False)
        tstate = self._combined(e.summarize.result, ts, c, e.combine, e)
        self.t.set(e.summarize, tstate)
        emit_ctx = self._state_scope(ctx, e.state, tstate, e)
        emit_ctx = dataclasses.replace(emit_ctx, chunk_emit=MappingProxyType({**ctx.chunk_emit, e.var: ref.target}))
        self.block(e.emit, emit_ctx)
        return self.t.set(e, self.t.materialize(e.emit.result))
