"""Term -> explicit GPU IR kernel (the inverse of ``encode``; exact on unchanged terms).

Values are emitted on demand: an op is placed in its original region when that region is open (provenance), and
otherwise in the outermost open region where all the region arguments it reads are defined (a new op made by a
rule). Each region's ops are then put in a dependency order that keeps the original order of original ops, effects
in their ``Stmt`` order and ``yield`` last. Original SSA names are kept where the term is unchanged; new values get
fresh names. The decoded program is fully explicit: nothing is left for a serializer to fill in (SPEC IR-1).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from intent_eqsat.ir import launch as L
from intent_eqsat.ir.core import Kernel, Op, ProgramSpace, Region, Value, segment_of_key
from intent_eqsat.ir.spec import normalize_attrs
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType
from intent_eqsat.rules.encode import Provenance
from intent_eqsat.rules.terms import T, list_items


# ------------------------------------------------------------------------------------------ leaf decoders

def le_of(term: T) -> L.LaunchExpr | None:
    op, a = term.op, term.args
    if op == "LeNone":
        return None
    if op == "LeInt":
        return L.Const(int(a[0]))
    if op == "LeBool":
        return L.Const(bool(a[0]))
    if op == "LeSym":
        return L.Sym(a[0])
    if op == "LeDim":
        return L.Dim(a[0], a[1])
    if op == "LeStride":
        return L.Stride(a[0], a[1])
    if op == "LeBin":
        return L.BinOp(a[0], le_of(a[1]), le_of(a[2]))
    if op == "LeNot":
        return L.Not(le_of(a[0]))
    if op == "LeSelect":
        return L.Select(le_of(a[0]), le_of(a[1]), le_of(a[2]))
    if op == "LeTuple":
        return L.Tuple(tuple(le_of(x) for x in list_items(a[0])))
    if op == "LeGet":
        return L.TupleGet(le_of(a[0]), a[1])
    raise ValueError(f"not a LaunchExpr term: {term!r}")


def les_of(term: T) -> tuple[L.LaunchExpr, ...]:
    return tuple(le_of(x) for x in list_items(term))


def ty_of(term: T) -> Type:
    op, a = term.op, term.args
    if op == "TyScalar":
        return ScalarType(a[0])
    if op == "TyFrag":
        return FragmentType(a[0], les_of(a[1]))
    if op == "TyFragAxes":
        return FragmentType(a[0], les_of(a[1]), tuple(list_items(a[2])))
    if op == "TyView":
        return ViewType(a[0], les_of(a[1]))
    if op == "TyBuffer":
        return BufferType(a[0], les_of(a[1]), a[2])
    if op == "TyTuple":
        return TupleType(tuple(ty_of(x) for x in list_items(a[0])))
    raise ValueError(f"not a type term: {term!r}")


def attr_of(term: T) -> Any:
    op, a = term.op, term.args
    if op == "AInt":
        return int(a[0])
    if op == "ABool":
        return bool(a[0])
    if op == "AFloat":
        return float(a[0])
    if op == "AStr":
        return a[0]
    if op == "ALe":
        return le_of(a[0])
    if op == "AList":
        return tuple(attr_of(x) for x in list_items(a[0]))
    if op == "ADict":
        return amap_of(a[0])
    raise ValueError(f"not an attribute term: {term!r}")


def amap_of(term: T) -> dict[str, Any]:
    return {k: attr_of(v) for k, v in list_items(term)}


# ---------------------------------------------------------------------------------------------- regions

@dataclass
class _Scope:
    term: T
    depth: int
    args: list[Value]
    ops: list[Op] = field(default_factory=list)
    memo: dict[int, Any] = field(default_factory=dict)   # term id -> Value (Op/Res/SRes) or Op (Multi/Stmt)
    deps: dict[int, set[int]] = field(default_factory=dict)  # id(op) -> ids of ops of this scope it needs


class _Decoder:
    def __init__(self, prov: Provenance | None, reserved: set[str]):
        self.prov = prov or Provenance()
        self.used: set[str] = set(reserved)
        self.counter = 0
        self.scopes: list[_Scope] = []
        self.free_depth_memo: dict[int, int] = {}

    # -- names -----------------------------------------------------------------------------------------
    def name(self, term: T | None, key: Any = None, scope: "_Scope | None" = None) -> str:
        wants: list[str] = []
        if key is not None:
            wants = self.prov.arg_names.get(key, [])
        elif term is not None and scope is not None:
            wants = self.prov.names.get((id(scope.term), id(term)), [])
        for want in wants:
            if want not in self.used:
                self.used.add(want)
                return want
        while True:
            cand = f"v{self.counter}"
            self.counter += 1
            if cand not in self.used:
                self.used.add(cand)
                return cand

    # -- placement -------------------------------------------------------------------------------------
    def free_depth(self, term: T) -> int:
        """The deepest region whose arguments ``term`` reads (region args bound inside it excluded); -1 if none."""
        hit = self.free_depth_memo.get(id(term))
        if hit is not None:
            return hit
        if term.op == "Arg":
            d = term.args[0]
        elif term.op == "Region":
            own = term.args[0]
            inner = max((self.free_depth(a) for a in term.args[1:] if isinstance(a, T)), default=-1)
            d = inner if inner < own else max(
                (self.free_depth(a) for a in self._region_outer_refs(term)), default=-1)
        else:
            d = max((self.free_depth(a) for a in term.args if isinstance(a, T)), default=-1)
        self.free_depth_memo[id(term)] = d
        return d

    def _region_outer_refs(self, region: T) -> list[T]:
        """Subterms of a region that may reference enclosing regions' args (its own args excluded)."""
        own = region.args[0]
        out: list[T] = []
        seen: set[int] = set()
        stack = [a for a in region.args[1:] if isinstance(a, T)]
        while stack:
            x = stack.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if x.op == "Arg":
                if x.args[0] < own:
                    out.append(x)
                continue
            stack.extend(a for a in x.args if isinstance(a, T))
        return out

    def target_scope(self, term: T) -> _Scope:
        homes = self.prov.homes.get(id(term))
        if homes:
            for s in reversed(self.scopes):
                if id(s.term) in homes:
                    return s
        depth = self.free_depth(term)
        if depth < 1 and len(self.scopes) > 1:
            depth = self.scopes[1].depth      # never hoist out of the execution group into the kernel body
        best = self.scopes[0]
        for s in self.scopes:
            if s.depth <= depth:
                best = s
        return best

    # -- values ----------------------------------------------------------------------------------------
    def lookup(self, term: T) -> Any:
        for s in reversed(self.scopes):
            if id(term) in s.memo:
                return s.memo[id(term)]
        return None

    def value(self, term: T) -> Value:
        if term.op == "Arg":
            depth, index = term.args[0], term.args[1]
            for s in reversed(self.scopes):
                if s.depth == depth:
                    return s.args[index]
            raise ValueError(f"region argument {index} of depth {depth} is not in scope")
        hit = self.lookup(term)
        if isinstance(hit, Value):
            return hit
        if term.op == "Op":
            name, operands, attrs, ty = term.args
            scope = self.target_scope(term)
            vals = [self.value(v) for v in list_items(operands)]
            result = Value(self.name(term, scope=scope), ty_of(ty))
            op = Op(name, vals, [result], normalize_attrs(name, amap_of(attrs)), [])
            self.place(scope, op, term)
            scope.memo[id(term)] = result
            return result
        if term.op == "Res":
            multi, index, _ = term.args
            op = self.multi(multi)
            return op.results[index]
        if term.op == "SRes":
            stmt, index, _ = term.args
            op = self.lookup(stmt)
            if op is None:
                raise ValueError("a statement result is used before its statement")
            return op.results[index]
        raise ValueError(f"not a value term: {term!r}")

    def multi(self, term: T) -> Op:
        hit = self.lookup(term)
        if isinstance(hit, Op):
            return hit
        name, operands, attrs, types, regions = term.args
        scope = self.target_scope(term)
        vals = [self.value(v) for v in list_items(operands)]
        saved = self.scopes
        self.scopes = self.scopes[: self.scopes.index(scope) + 1]
        try:
            rs = [self.region(r) for r in list_items(regions)]
        finally:
            self.scopes = saved
        results = [Value(self.name(None), ty_of(x)) for x in list_items(types)]
        op = Op(name, vals, results, normalize_attrs(name, amap_of(attrs)), rs)
        self._name_results(term, op, types, scope)
        self.place(scope, op, term)
        scope.memo[id(term)] = op
        return op

    def _name_results(self, term: T, op: Op, types: T, scope: _Scope) -> None:
        """Give each result its original name when the Res/SRes term of the original program is known."""
        from intent_eqsat.rules.terms import t as mk
        kind = "Res" if term.op == "Multi" else "SRes"
        for i, ty in enumerate(list_items(types)):
            rterm = mk(kind, term, i, ty)
            for want in self.prov.names.get((id(scope.term), id(rterm)), []):
                if want not in self.used:
                    self.used.discard(op.results[i].name)
                    self.used.add(want)
                    op.results[i] = Value(want, op.results[i].type)
                    break

    def stmt(self, term: T, scope: _Scope) -> Op:
        seq, name, operands, attrs, types, regions = term.args
        vals = [self.value(v) for v in list_items(operands)]
        rs = [self.region(r) for r in list_items(regions)]
        results = [Value(self.name(None), ty_of(x)) for x in list_items(types)]
        op = Op(name, vals, results, normalize_attrs(name, amap_of(attrs)), rs)
        self._name_results(term, op, types, scope)
        self.place(scope, op, term)
        scope.memo[id(term)] = op
        return op

    def place(self, scope: _Scope, op: Op, term: T) -> None:
        scope.ops.append(op)
        op._term_id = id(term)  # type: ignore[attr-defined]

    def region(self, term: T, args: list[Value] | None = None) -> Region:
        depth, arg_types, stmts, yields, yield_attrs = term.args
        if args is None:
            args = [Value(self.name(None, key=(id(term), i)), ty_of(x)) for i, x in enumerate(list_items(arg_types))]
        scope = _Scope(term, depth, args)
        self.scopes.append(scope)
        try:
            stmt_ops = self.original_order(term, scope, list_items(stmts))
            yvals = [self.value(v) for v in list_items(yields)]
        finally:
            self.scopes.pop()
        ops = self.order(scope, stmt_ops)
        ops.append(Op("yield", yvals, [], normalize_attrs("yield", amap_of(yield_attrs)), []))
        for op in ops:
            if hasattr(op, "_term_id"):
                del op._term_id
        return Region(args, ops)

    def original_order(self, term: T, scope: _Scope, stmts: list[T]) -> list[Op]:
        """Emit the region's original ops that it still uses in their original order (so names and positions of
        repeated computations come back exactly), interleaved with its effects in their order."""
        entries = self.prov.entries.get(id(term), [])
        reach: set[int] = set()
        if entries:
            from intent_eqsat.rules.terms import walk_terms
            walk_terms(term, lambda x: reach.add(id(x)))
        pending = [(pos, x) for pos, x in entries if x.op != "Stmt" and id(x) in reach]
        stmt_pos = {id(x): pos for pos, x in entries if x.op == "Stmt"}
        out: list[Op] = []
        k = 0
        for s in stmts:
            limit = stmt_pos.get(id(s))
            while k < len(pending) and (limit is None or pending[k][0] < limit):
                self.emit_entry(pending[k][1])
                k += 1
            out.append(self.stmt(s, scope))
        for _, x in pending[k:]:
            self.emit_entry(x)
        return out

    def emit_entry(self, x: T) -> None:
        if x.op == "Multi":
            self.multi(x)
        else:
            self.value(x)

    def order(self, scope: _Scope, stmt_ops: list[Op]) -> list[Op]:
        """Dependency order: original ops keep their original order, new ones come as early as they can, effects
        keep their program order."""
        ops = scope.ops
        producer: dict[str, int] = {}
        for i, op in enumerate(ops):
            for r in op.results:
                producer[r.name] = i
        deps: list[set[int]] = [set() for _ in ops]
        for i, op in enumerate(ops):
            for v in _uses(op):
                j = producer.get(v)
                if j is not None and j != i:
                    deps[i].add(j)
        stmt_idx = [i for i, op in enumerate(ops) if any(op is s for s in stmt_ops)]
        for a, b in zip(stmt_idx, stmt_idx[1:]):
            deps[b].add(a)
        users: list[list[int]] = [[] for _ in ops]
        for i, d in enumerate(deps):
            for j in d:
                users[j].append(i)
        indeg = [len(d) for d in deps]
        heap: list[tuple[int, int]] = []

        def prio(i: int) -> int:
            return self.prov.order.get((id(scope.term), getattr(ops[i], "_term_id", -1)), -1)

        for i in range(len(ops)):
            if indeg[i] == 0:
                heapq.heappush(heap, (prio(i), i))
        out: list[Op] = []
        while heap:
            _, i = heapq.heappop(heap)
            out.append(ops[i])
            for u in users[i]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(heap, (prio(u), u))
        if len(out) != len(ops):
            raise ValueError("cyclic dependencies while ordering decoded ops")
        return out


def _uses(op: Op) -> set[str]:
    """Names an op reads, including from inside its regions (values defined outside them)."""
    out = {v.name for v in op.operands}
    for r in op.regions:
        defined = {a.name for a in r.args}
        for inner in r.ops:
            defined.update(x.name for x in inner.results)
        for inner in r.ops:
            out.update(n for n in _uses(inner) if n not in defined)
    return out


def decode_kernel(term: T, template: Kernel, prov: Provenance | None = None) -> Kernel:
    """The explicit kernel of a ``Kernel`` term; ``template`` supplies the ABI (rules never change it)."""
    name, segs, launch, body = term.args
    segments = tuple(segment_of_key(les_of(s.args[0]), s.args[1], le_of(s.args[2])) for s in list_items(segs))
    space = ProgramSpace(segments, le_of(launch))
    reserved = {a.name for a in template.abi}
    dec = _Decoder(prov, reserved)
    pid_name = template.body.args[-1].name
    dec.used.add(pid_name)
    args = [a.value for a in template.abi] + [Value(pid_name, template.body.args[-1].type)]
    region = dec.region(body, args=args)
    return Kernel(name, template.origin, list(template.abi), space, region)
