"""Name resolution, type inference and index-domain inference for KIR kernels and combiners (the facts the
verifier, the evaluator and the analyses share).

What it decides, keyed by stable ids:

* ``refs``: what every :class:`Name`/:class:`Access` refers to (view, scalar, symbol, let, index variable, block
  local, combiner/region state);
* ``types``: the concrete type of every expression (weak literals get the type they adopt, see ``dtypes.py``);
* ``vars``: every index variable's half-open domain ``[lo, hi)`` as polynomials over shape symbols. A free index
  of a statement has key ``<stmt id>/<name>``; a reduction or region-fold index has the key of its :class:`Bind`
  node. An explicit ``in lo..hi`` wins; otherwise the first *direct use* (the variable alone as a subscript, the
  left-hand side first) gives ``[0, extent of that axis)``;
* ``sites``: every subscript position with its axis extent and the ``where`` conditions guarding it, for the
  verifier's range and shape checks.

Everything that makes a kernel ill-formed at this level (unknown names, type errors, a reduction index that is also
free, a scan over a bound index, ...) raises :class:`KirError` at the offending token.
"""
import dataclasses
from types import MappingProxyType
from typing import Mapping

from intent_eqsat.errors import KirError
from intent_eqsat.kir import dtypes as dt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.facts import (  # noqa: F401  (re-exported: the facts live in facts.py)
    check_identifier,
    BUILTIN_COMBINERS, NON_ASSOCIATIVE, KernelFacts, LetInfo, ModuleFacts, Ref, Site, VarInfo, kir_error, start_node,
    where_of,
)
from intent_eqsat.kir.dims import DimExpr, dim_poly, dim_str, dim_symbols
from intent_eqsat.kir.poly import Poly
from intent_eqsat.kir.printer import type_str
from intent_eqsat.kir.typer import MAX_INDICES, Ctx, ExprTyper, Typing, fits, is_scalar


def infer_module(module: m.KirModule) -> ModuleFacts:
    """Resolve, type and size every kernel and combiner of ``module`` (raises :class:`KirError`)."""
    seen: dict[str, m.Node] = {}
    for item in module.items:
        if item.name in seen:
            kind = "kernel" if isinstance(seen[item.name], m.Kernel) else "combiner"
            raise kir_error(f"duplicate name {item.name!r}: a {kind} of that name is already defined", item)
        seen[item.name] = item
    combiners: dict[str, m.Combiner] = {}
    ctypes: dict[str, m.Type] = {}
    crefs: dict[str, Ref] = {}
    for c in module.combiners:
        if c.name in BUILTIN_COMBINERS or c.name in NON_ASSOCIATIVE:
            raise kir_error(f"combiner name {c.name!r} is a builtin combiner name", c)
        _Combiners(c, ctypes, crefs).check()
        combiners[c.name] = c
    for k in module.kernels:
        check_identifier(k.name, k, "kernel", reserved_ok=True)
    kernels = {k.name: KernelInference(k, combiners).run() for k in module.kernels}
    return ModuleFacts(module, MappingProxyType(kernels), MappingProxyType(combiners), MappingProxyType(ctypes),
                       MappingProxyType(crefs))


# --------------------------------------------------------------------------------------------- combiners


class _Combiners:
    """Types a combiner's identity and body (pointwise code over its two parameters)."""

    def __init__(self, c: m.Combiner, out: dict[str, m.Type], refs: dict[str, Ref]):
        self.c = c
        self.out = out
        self.refs = refs

    def check(self) -> None:
        c = self.c
        typing = Typing()
        walker = ExprTyper(typing, kernel=None, combiners={})
        ctx = Ctx(stmt=c.id, scope={})
        _check_constant(c.identity)
        ti = walker.expr(c.identity, ctx)
        if not fits(c.identity, ti, c.type):
            raise kir_error(f"identity of combiner {c.name!r} has type {type_str(ti)}, expected {type_str(c.type)}",
                            c.identity)
        typing.coerce(c.identity, c.type)
        a, b = c.params
        if any(t not in m.DTYPES for t in (c.type if isinstance(c.type, tuple) else (c.type,))):
            raise kir_error(f"combiner {c.name!r} has an invalid type {c.type!r}", c)
        for name in (c.name, a, b):
            check_identifier(name, c, "combiner", reserved_ok=name == c.name)
        scope = {a: Ref("state", a), b: Ref("state", b)}
        walker.state_types = {a: c.type, b: c.type}
        tb = walker.block(c.body, dataclasses.replace(ctx, scope=scope))
        if not fits(c.body.result, tb, c.type):
            raise kir_error(f"body of combiner {c.name!r} has type {type_str(tb)}, expected {type_str(c.type)}",
                            start_node(c.body.result))
        typing.coerce(c.body.result, c.type)
        typing.types[c.body.id] = c.type
        self.out.update(typing.types)
        self.refs.update(walker.combiner_refs)


def _check_constant(e: m.Expr) -> None:
    ok = (isinstance(e, m.Num) or (isinstance(e, m.Unary) and e.op == "neg" and isinstance(e.x, m.Num))
          or (isinstance(e, m.Cast) and isinstance(e.x, m.Num)))
    if isinstance(e, m.TupleExpr):
        for x in e.elems:
            _check_constant(x)
        return
    if not ok:
        raise kir_error("a combiner identity must be a literal or a tuple of literals", start_node(e))


# ------------------------------------------------------------------------------------------------ kernels


class KernelInference:
    """Kernel-level tables (parameters, shape symbols, lets, index variables, sites) filled statement by statement;
    the expression walker (``typer.py``) reads and extends them."""

    def __init__(self, kernel: m.Kernel, combiners: Mapping[str, m.Combiner]):
        self.kernel = kernel
        self.combiners = combiners
        self.symbols: list[str] = []
        self.dims: dict[str, tuple[Poly, ...]] = {}
        self.quotients: dict[str, tuple[Poly, Poly]] = {}     # floor-quotient atoms of arithmetic dims (kir.dims)
        self.refs: dict[str, Ref] = {}
        self.vars: dict[str, VarInfo] = {}
        self.bind_keys: dict[str, str] = {}
        self.stmt_vars: dict[str, tuple[str, ...]] = {}
        self.lets: dict[str, LetInfo] = {}
        self.sites: list[Site] = []
        self.direct_uses: list[tuple[str, Poly, m.Node, str]] = []
        self.typing = Typing()
        self.walker = ExprTyper(self.typing, self, combiners)
        self._free: list[str] = []
        self._stmt: str = ""
        self._stmt_vars: list[str] = []   # keys of the index variables the current statement added, in order

    def run(self) -> KernelFacts:
        self.params()
        for s in self.kernel.body:
            self.statement(s)
        return KernelFacts(
            kernel=self.kernel, symbols=tuple(self.symbols), dims=MappingProxyType(self.dims),
            types=MappingProxyType(self.typing.types), refs=MappingProxyType(self.refs),
            vars=MappingProxyType(self.vars), bind_keys=MappingProxyType(self.bind_keys),
            stmt_vars=MappingProxyType(self.stmt_vars), lets=MappingProxyType(self.lets), sites=tuple(self.sites),
            quotients=MappingProxyType(self.quotients))

    def params(self) -> None:
        names: set[str] = set()
        for p in self.kernel.params:
            check_identifier(p.name, p, "parameter")
            if p.dtype not in m.DTYPES or p.access not in ("in", "out", "inout") or (p.dims is None and
                                                                                     p.access != "in"):
                raise kir_error(f"parameter {p.name!r} has an invalid type ({p.access} {p.dtype})", p)
            if p.name in names:
                raise kir_error(f"duplicate parameter {p.name!r}", p)
            names.add(p.name)
        for p in self.kernel.params:
            if p.dims is None:
                continue
            polys = []
            for d in p.dims:
                if isinstance(d, DimExpr):
                    self.check_dim_expr(d, p)
                elif not isinstance(d, tuple) or not d:
                    raise kir_error(f"dimension {d!r} of {p.name!r} is neither a product nor a DimExpr", p)
                for f in dim_symbols(d):
                    check_identifier(f, p, "shape symbol")
                    if f in names:
                        raise kir_error(f"shape symbol {f!r} of {p.name!r} is also the name of a parameter", p)
                    if f not in self.symbols:
                        self.symbols.append(f)
                for f in (d if isinstance(d, tuple) else ()):
                    if isinstance(f, bool) or not isinstance(f, (int, str)):
                        raise kir_error(f"dimension factor {f!r} of {p.name!r} is neither a symbol nor an int", p)
                    if isinstance(f, int) and f < 1:
                        raise kir_error(f"dimension of {p.name!r} must be positive, got {f}", p)
                polys.append(dim_poly(d, self.quotients))
            self.dims[p.name] = tuple(polys)

    def check_dim_expr(self, d: DimExpr, p: m.Param) -> None:
        """An arithmetic dim's leaves are symbols and non-negative ints; a divisor is a positive int or a symbol
        expression (its value is checked at run time)."""
        for t in (d.a, d.b):
            if isinstance(t, DimExpr):
                self.check_dim_expr(t, p)
            elif isinstance(t, bool) or not isinstance(t, (int, str)):
                raise kir_error(f"dimension term {t!r} of {p.name!r} is neither a symbol nor an int", p)
            elif isinstance(t, int) and t < 0:
                raise kir_error(f"dimension {dim_str(d)} of {p.name!r} has a negative literal {t}", p)
        if d.op == "//" and isinstance(d.b, int) and d.b < 1:
            raise kir_error(f"dimension {dim_str(d)} of {p.name!r} divides by {d.b}", p)

    # -------------------------------------------------------------------------------------- helpers

    def check_fresh_index(self, name: str, node: m.Node, what: str = "index") -> None:
        """An index/local/state name must not be a parameter, shape symbol or let of the kernel."""
        check_identifier(name, node, what)
        if self.kernel.param(name) is not None:
            raise kir_error(f"{what} name {name!r} is already the name of a parameter", node)
        if name in self.symbols:
            raise kir_error(f"{what} name {name!r} is already the name of a shape symbol", node)
        if name in self.lets:
            raise kir_error(f"{what} name {name!r} is already the name of a let", node)

    def add_var(self, info: VarInfo) -> None:
        """Record a new index variable of the current statement."""
        self.vars[info.key] = info
        self._stmt_vars.append(info.key)

    def new_free(self, name: str, node: m.Node) -> str:
        key = f"{self._stmt}/{name}"
        if key not in self.vars:
            self.check_fresh_index(name, node)
            self.add_var(VarInfo(key, name, "free", self._stmt, Poly(), Poly(), False, node.loc))
            self._free.append(name)
        return key

    def symbolic(self, e: m.Expr) -> Poly:
        """A range bound: an integer expression of shape symbols (+, -, *, literals)."""
        if isinstance(e, m.Num) and e.kind == "int":
            self.typing.set(e, "i64")
            return Poly.const(int(e.text))
        if isinstance(e, m.Name) and e.name in self.symbols:
            self.refs[e.id] = Ref("symbol", e.name)
            self.typing.set(e, "i64")
            return Poly.atom(e.name)
        if isinstance(e, m.Unary) and e.op == "neg":
            self.typing.set(e, "i64")
            return -self.symbolic(e.x)
        if isinstance(e, m.Binary) and e.op in ("add", "sub", "mul"):
            a, b = self.symbolic(e.a), self.symbolic(e.b)
            self.typing.set(e, "i64")
            return a + b if e.op == "add" else (a - b if e.op == "sub" else a * b)
        raise kir_error("a range bound must be an integer expression of shape symbols and literals", start_node(e))

    # ----------------------------------------------------------------------------------- statements

    def statement(self, s: m.Stmt) -> None:
        self._stmt = s.id
        self._free = []
        self._stmt_vars = []
        self.direct_uses = []
        if isinstance(s, m.Let):
            self.let(s)
        else:
            self.assign(s)

    def let(self, s: m.Let) -> None:
        check_identifier(s.name, s, "let")
        if s.name in self.lets:
            raise kir_error(f"let {s.name!r} is already defined", s)
        if self.kernel.param(s.name) is not None or s.name in self.symbols:
            raise kir_error(f"let {s.name!r} has the name of a parameter or shape symbol", s)
        scope: dict[str, Ref] = {}
        keys = []
        if len(s.indices) > MAX_INDICES:
            raise kir_error(f"too many index variables: let {s.name!r} has {len(s.indices)} indices (at most "
                            f"{MAX_INDICES})", s)
        for b in s.indices:
            if b.name in scope:
                raise kir_error(f"index {b.name!r} appears twice in let {s.name!r}", b)
            self.check_fresh_index(b.name, b)
            key = f"{s.id}/{b.name}"
            lo, hi, explicit = Poly(), Poly(), False
            if b.lo is not None and b.hi is not None:
                lo, hi, explicit = self.symbolic(b.lo), self.symbolic(b.hi), True
                if lo != Poly():
                    raise kir_error(f"the index of a let ranges from 0 (got {b.name} in {lo}..{hi})", b)
            self.add_var(VarInfo(key, b.name, "free", s.id, lo, hi, explicit, b.loc))
            self.bind_keys[b.id] = key
            scope[b.name] = Ref("index", key)
            keys.append(key)
        ctx = Ctx(stmt=s.id, scope=MappingProxyType(scope), free=frozenset(scope), top=True)
        self.walker.expr(s.value, ctx)
        t = self.typing.materialize(s.value)
        self.finish_domains(s)
        self.stmt_vars[s.id] = tuple(keys)
        shape = tuple(self.vars[k].extent for k in keys)
        self.lets[s.name] = LetInfo(s.name, s.id, t, tuple(keys), shape)

    def assign(self, s: m.Assign) -> None:
        if s.op not in ("=", *m.UPDATE_OPS) or (s.collide is not None and s.collide not in m.COLLIDE_KINDS):
            raise kir_error(f"invalid assignment operator {s.op!r} or collision kind {s.collide!r}", s)
        p = self.kernel.param(s.target)
        if p is None or not p.is_view:
            what = "a by-value scalar" if p is not None else (
                "a let" if s.target in self.lets else "not a parameter")
            raise kir_error(f"cannot assign to {s.target!r}: it is {what}; only out/inout views are written", s)
        if p.access == "in":
            raise kir_error(f"cannot write input view {s.target!r}; declare it 'out' or 'inout'", s)
        if len(s.subs) != len(self.dims[s.target]):
            raise kir_error(f"view {s.target!r} has {len(self.dims[s.target])} dimension(s) but is subscripted with "
                            f"{len(s.subs)}", s)
        lhs_ctx = Ctx(stmt=s.id, scope=MappingProxyType({}), lhs=True)
        shape = self.dims[s.target]
        for axis, sub in enumerate(s.subs):
            ts = self.walker.expr(sub, lhs_ctx)
            if not (is_scalar(ts) and dt.is_int(ts)):  # type: ignore[arg-type]
                raise kir_error(f"subscript {axis} of {s.target!r} must be an integer, got {type_str(ts)}",
                                start_node(sub))
            self.typing.coerce(sub, "i64" if ts == dt.WEAK_INT else ts)
            self.sites.append(Site(s.id, s.target, axis, sub, shape[axis], (), s.id, True))
            if isinstance(sub, m.Name) and self.refs.get(sub.id, Ref("", "")).kind == "index":
                self.direct_uses.append((self.refs[sub.id].target, shape[axis], sub, f"{s.target} axis {axis}"))
        free = tuple(self._free)
        if len(free) > MAX_INDICES:
            raise kir_error(f"too many index variables: the statement has {len(free)} free indices (at most "
                            f"{MAX_INDICES})", s)
        scope = {n: Ref("index", f"{s.id}/{n}") for n in free}
        ctx = Ctx(stmt=s.id, scope=MappingProxyType(scope), free=frozenset(free), top=True)
        tv = self.walker.expr(s.value, ctx)
        want = p.dtype
        if not fits(s.value, tv, want):
            if isinstance(tv, tuple):
                raise kir_error(f"cannot store a tuple ({type_str(tv)}) into view {s.target!r}", start_node(s.value))
            raise kir_error(f"type mismatch: storing {type_str(tv)} into {want} view {s.target!r}; "
                            f"use cast<{want}>(...)",
                            start_node(s.value))
        self.typing.coerce(s.value, want)
        if s.op != "=" and want == "bool":
            raise kir_error(f"'{s.op}' needs a numeric view, {s.target!r} is bool", s)
        self.check_collide(s)
        self.finish_domains(s)
        self.stmt_vars[s.id] = tuple(f"{s.id}/{n}" for n in free)

    def check_collide(self, s: m.Assign) -> None:
        if s.collide is None:
            return
        here = s.collide_loc or where_of(s)
        if s.op == "=" and s.collide not in ("any", "unique"):
            raise KirError(f"'collide {s.collide}' combines colliding updates; write the statement as an update "
                           f"(e.g. '+=' for add) or use 'collide any' / 'collide unique' for a store", here)
        if s.op != "=" and s.collide not in (m.UPDATE_OPS[s.op], "unique"):
            raise KirError(f"'collide {s.collide}' does not match the update '{s.op}' (use 'collide "
                           f"{m.UPDATE_OPS[s.op]}' or 'collide unique')", here)

    def finish_domains(self, s: m.Stmt) -> None:
        """Give every index variable of the statement its domain: explicit range, else its first direct use."""
        first: dict[str, tuple[Poly, str]] = {}
        for key, extent, _node, what in self.direct_uses:
            first.setdefault(key, (extent, what))
        for key in self._stmt_vars:   # (not all of self.vars: that made inference quadratic in statements)
            info = self.vars[key]
            if info.explicit:
                self.vars[key] = dataclasses.replace(info, source="its explicit range")
                continue
            if key not in first:
                hint = (f"give it explicitly, e.g. '{info.name} in 0..N'" if info.role != "free" or isinstance(s, m.Let)
                        else "use it directly as a subscript of a view or let somewhere in the statement")
                raise KirError(f"cannot infer the extent of index {info.name!r}: it never subscripts a view or let "
                               f"axis directly; {hint}", info.loc or where_of(s))
            extent, what = first[key]
            self.vars[key] = dataclasses.replace(info, lo=Poly(), hi=extent, source=what)
