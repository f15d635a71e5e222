"""Canonical analyses of immutable KIR, keyed by stable ids (SPEC PASS-2).

``analyze(module)`` verifies the module and returns frozen facts per kernel:

* ``domains``: every index variable (key ``<stmt>/<name>`` for free indices, the :class:`Bind` id for reduction and
  fold indices) with its role and half-open range over shape symbols; ``statement_domains`` lists each statement's
  free indices in order; ``views``/``lets`` give shapes;
* ``types``: the concrete type of every expression id;
* ``provenance``: for each index variable, the view/let axes it subscripts (directly, or inside an index
  expression) — the coordinate provenance later stages map to program coordinates;
* ``effects``: per statement, what it writes (let, store or update), its collision semantics, whether its target
  index is injective, and what it reads;
* ``lets``: def-use of every let and whether it has a sole use;
* ``reductions``/``scans``/``sums_of_products``/``folds``/``region_scans``: schemas of the structured ops. A sum of
  products is reported *structurally* (a ``sum`` whose body is a product); recognising it as a contraction is a
  rule's job, not the front end's.

Construction reads these facts once; they are not a second authority after it (PASS-2).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from intent_eqsat.kir import dtypes as dt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.infer import BUILTIN_COMBINERS, KernelFacts, ModuleFacts
from intent_eqsat.kir.poly import Poly
from intent_eqsat.kir.printer import print_expr
from intent_eqsat.kir.verify import Data, SubscriptPolys, _KernelChecks, check


@dataclass(frozen=True)
class Domain:
    key: str
    name: str
    role: str  # free | reduce | fold
    stmt: str
    lo: Poly
    hi: Poly

    @property
    def extent(self) -> Poly:
        return self.hi - self.lo


@dataclass(frozen=True)
class ViewInfo:
    name: str
    param_id: str
    dtype: str
    access: str  # in | out | inout
    shape: tuple[Poly, ...]


@dataclass(frozen=True)
class AxisUse:
    """Index variable use in ``target[..., <subscript>, ...]`` at ``axis``; ``direct`` when the subscript is the
    variable alone."""

    target: str
    axis: int
    access: str
    direct: bool
    subscript: str


@dataclass(frozen=True)
class Effect:
    stmt: str
    kind: str  # let | store | update
    target: str
    op: str | None
    collide: str | None
    injective: bool
    full_write: bool
    data_dependent_target: bool
    reads: tuple[str, ...]


@dataclass(frozen=True)
class LetUse:
    name: str
    stmt: str
    type: m.Type
    shape: tuple[Poly, ...]
    uses: tuple[str, ...]  # ids of the Access/Name nodes reading it
    use_stmts: tuple[str, ...]

    @property
    def sole_use(self) -> bool:
        return len(self.uses) == 1


@dataclass(frozen=True)
class ReduceSchema:
    id: str
    op: str
    combine: str
    keys: tuple[str, ...]
    identity: str
    dtype: m.Type
    acc_dtype: m.Type
    body: str
    chunk_local: bool


@dataclass(frozen=True)
class ScanSchema:
    id: str
    key: str
    combine: str
    exclusive: bool
    reverse: bool
    identity: str
    dtype: m.Type
    carry_dtype: m.Type
    body: str
    chunk_local: bool


@dataclass(frozen=True)
class SumOfProducts:
    """``sum(k...: a * b)``: the factors, the summed keys, and how the other indices split between the factors."""

    id: str
    lhs: str
    rhs: str
    reduction_keys: tuple[str, ...]
    lhs_keys: tuple[str, ...]
    rhs_keys: tuple[str, ...]
    shared_keys: tuple[str, ...]  # in both factors and not summed (batch-like)
    dtype: m.Type


@dataclass(frozen=True)
class RegionSchema:
    """A region fold (``kind == "fold"``) or region scan (``"scan"``)."""

    id: str
    kind: str
    key: str
    chunk: int
    combine: str
    summary_type: m.Type
    identity: str
    state: str | None
    has_finalize: bool
    dtype: m.Type


@dataclass(frozen=True)
class KernelAnalysis:
    kernel: str
    symbols: tuple[str, ...]
    views: Mapping[str, ViewInfo]
    scalars: Mapping[str, str]
    domains: Mapping[str, Domain]
    statement_domains: Mapping[str, tuple[str, ...]]
    types: Mapping[str, m.Type]
    provenance: Mapping[str, tuple[AxisUse, ...]]
    effects: Mapping[str, Effect]
    lets: Mapping[str, LetUse]
    reductions: Mapping[str, ReduceSchema]
    scans: Mapping[str, ScanSchema]
    sums_of_products: Mapping[str, SumOfProducts]
    regions: Mapping[str, RegionSchema]


@dataclass(frozen=True)
class ModuleAnalysis:
    kernels: Mapping[str, KernelAnalysis]


def analyze(module: m.KirModule, facts: ModuleFacts | None = None) -> ModuleAnalysis:
    """Verify ``module`` and compute the canonical analyses of every kernel (``facts``: what ``check(module)``
    already returned, so that a caller that verified the module does not verify it again)."""
    facts = check(module) if facts is None else facts
    return ModuleAnalysis(MappingProxyType({k: _analyze_kernel(kf, facts) for k, kf in facts.kernels.items()}))


def _frozen(d: dict) -> Mapping:
    return MappingProxyType(dict(d))


def _identity(combine: str, t: m.Type, facts: ModuleFacts) -> str:
    if combine in BUILTIN_COMBINERS:
        v = {"add": 0, "mul": 1, "max": dt.lowest(t), "min": dt.highest(t)}[combine]  # type: ignore[arg-type]
        return str(v)
    return print_expr(facts.combiners[combine].identity)


def _acc(op: str, t: m.Type) -> m.Type:
    return "f32" if op in ("add", "mul") and t in ("f16", "bf16") else t


def _index_keys(e: m.Node, kf: KernelFacts) -> tuple[str, ...]:
    keys: list[str] = []
    for n in m.walk(e):
        ref = kf.refs.get(n.id) if isinstance(n, m.Name) else None
        if ref is not None and ref.kind == "index" and ref.target not in keys:
            keys.append(ref.target)
    return tuple(keys)


def _analyze_kernel(kf: KernelFacts, facts: ModuleFacts) -> KernelAnalysis:
    k = kf.kernel
    views = {p.name: ViewInfo(p.name, p.id, p.dtype, p.access, kf.dims[p.name]) for p in k.params if p.is_view}
    scalars = {p.name: p.dtype for p in k.params if not p.is_view}
    domains = {key: Domain(key, v.name, v.role, v.stmt, v.lo, v.hi) for key, v in kf.vars.items()}

    provenance: dict[str, list[AxisUse]] = {key: [] for key in kf.vars}
    for site in kf.sites:
        direct = isinstance(site.sub, m.Name)
        for key in _index_keys(site.sub, kf):
            provenance.setdefault(key, []).append(
                AxisUse(site.target, site.axis, site.access, direct, print_expr(site.sub)))

    checks = _KernelChecks(kf)
    polys = SubscriptPolys(kf)
    effects: dict[str, Effect] = {}
    uses: dict[str, list[tuple[str, str]]] = {name: [] for name in kf.lets}
    for s in k.body:
        reads: list[str] = []
        for n in m.walk(s):
            ref = kf.refs.get(n.id) if isinstance(n, (m.Name, m.Access)) else None
            if ref is not None and ref.kind in ("view", "let"):
                if ref.target not in reads:
                    reads.append(ref.target)
                if ref.kind == "let":
                    uses[ref.target].append((n.id, s.id))
        if isinstance(s, m.Let):
            effects[s.id] = Effect(s.id, "let", s.name, None, None, True, True, False, tuple(reads))
            continue
        data_dep = False
        for sub in s.subs:
            try:
                polys.poly(sub)
            except Data:
                data_dep = True
        effects[s.id] = Effect(s.id, "store" if s.op == "=" else "update", s.target, s.op, s.collide,
                               checks.injective(s) is None, checks.full_store(s), data_dep, tuple(reads))
    lets = {name: LetUse(name, info.stmt, info.type, info.shape, tuple(u for u, _ in uses[name]),
                         tuple(dict.fromkeys(st for _, st in uses[name])))
            for name, info in kf.lets.items()}

    reductions: dict[str, ReduceSchema] = {}
    scans: dict[str, ScanSchema] = {}
    sops: dict[str, SumOfProducts] = {}
    regions: dict[str, RegionSchema] = {}
    types = kf.types
    for s in k.body:
        for n in m.walk(s):
            if isinstance(n, m.Reduce):
                keys = tuple(kf.bind_keys[b.id] for b in n.binds)
                t = types[n.id]
                combine = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}.get(n.op, n.combine or n.op)
                ident = _identity(combine, t, facts) if n.op not in ("argmax", "argmin") else "-1"
                chunk_local = any(key != b.id for key, b in zip(keys, n.binds))
                reductions[n.id] = ReduceSchema(n.id, n.op, combine, keys, ident, t, _acc(combine, t), n.body.id,
                                                chunk_local)
                if n.op == "sum" and isinstance(n.body, m.Binary) and n.body.op == "mul":
                    a, b = _index_keys(n.body.a, kf), _index_keys(n.body.b, kf)
                    shared = tuple(x for x in a if x in b and x not in keys)
                    sops[n.id] = SumOfProducts(n.id, n.body.a.id, n.body.b.id, keys, a, b, shared, t)
            elif isinstance(n, m.Scan):
                t = types[n.id]
                key = kf.bind_keys[n.id]
                in_region = any(isinstance(x, m.RegionScan) and kf.bind_keys[x.id] == key for x in m.walk(s))
                scans[n.id] = ScanSchema(n.id, key, n.combine, n.exclusive, n.reverse, _identity(n.combine, t, facts),
                                         t, _acc(n.combine, t), n.body.id, in_region)
            elif isinstance(n, (m.RegionFold, m.RegionScan)):
                st = types[n.summarize.id]
                fold = isinstance(n, m.RegionFold)
                key = kf.bind_keys[n.bind.id] if isinstance(n, m.RegionFold) else kf.bind_keys[n.id]
                regions[n.id] = RegionSchema(n.id, "fold" if fold else "scan", key, n.chunk, n.combine, st,
                                             _identity(n.combine, st, facts), n.state,
                                             fold and n.finalize is not None, types[n.id])
    return KernelAnalysis(
        kernel=k.name, symbols=kf.symbols, views=_frozen(views), scalars=_frozen(scalars), domains=_frozen(domains),
        statement_domains=_frozen(dict(kf.stmt_vars)), types=kf.types,
        provenance=_frozen({key: tuple(v) for key, v in provenance.items()}), effects=_frozen(effects),
        lets=_frozen(lets), reductions=_frozen(reductions), scans=_frozen(scans), sums_of_products=_frozen(sops),
        regions=_frozen(regions))
