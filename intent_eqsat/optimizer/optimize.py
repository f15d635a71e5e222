"""The e-graph optimizer: GPU IR module -> per kernel e-graph -> groups in PASS-3 order -> extract -> decode -> verify.

::

    res = optimize(program, target="sm90")            # program: a verified GPU IR module (construction output)
    res.program      # the extracted, decoded, verified module (same ABI, options, parameters)
    res.cost         # predicted cost (sum over kernels; a ProgramCost with .total/.breakdown when the cost
                     # object provides breakdown())
    res.launch_resources  # kernel name -> LaunchResources (threads, stages, index width) chosen beside the program
    res.candidates   # ranked runner-ups (Candidate: kernel, rank, cost, .decode(), .launch_resources())
    res.remarks      # strings with locations: limits hit, Remark(...) rows derived by rules
    res.report       # plain dict: groups, rules_fired, egraph_size, phases (seconds), per-kernel group runs;
                     # every wall-clock figure is under "phases" (and "trace"), so the rest is byte-stable

Kernels run one at a time in the process's shared e-graph (``schedule.Workspace``: rules are compiled once, each
kernel lives in a push/pop scope; ``keep_graphs=True`` gives each kernel a private e-graph instead). Per kernel:
encode (``KernelGraph``), insert the facts (compile options, target features; ``facts.py``), run the
groups (``schedule.py``); after each group the current best program is extracted, decoded and verified with the
shared GPU verifier, so a failure names the group (SPEC PASS-2) - :class:`GroupVerificationError`. The final program
is extracted with the cost function, decoded and verified again.

Cost functions (``cost=``): None (``extractor.size_cost`` until the cost model lands), a callable
``node_cost(node_id, node, child_costs) -> float``, or an object with ``node_cost`` - and optionally
``bind(export) -> node_cost`` (called once per extraction, for costs that read literal children such as tile sizes)
and ``breakdown(export, choice, root) -> dict`` (named cost terms of the chosen program).

Candidates: for each kernel, the e-classes of the chosen term whose best alternative node is cheapest are tried one
at a time with their chosen node forbidden; each re-extraction that gives a different term is a candidate (costs
are additive tree costs, so this finds the nearest runner-ups, not an exact k-best). ``candidates=0`` skips it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from intent_eqsat import ir
from intent_eqsat.errors import IntentError
from intent_eqsat.extract.decisions import Decision, materialization_decisions, program_axis_decision
from intent_eqsat.extract.extractor import chosen_classes, eclass, extract
from intent_eqsat.ir.core import CompileOptions, Kernel, Module, ParamDecl
from intent_eqsat.ir.printer import format_kernel
from intent_eqsat.ir.verify_errors import VerificationError
from intent_eqsat.providers.launch_resources import LaunchResources
from intent_eqsat.optimizer import passes as P
from intent_eqsat.rules import facts as F
from intent_eqsat.rules import registry as R
from intent_eqsat.optimizer import tiles as TILES
from intent_eqsat.rules.decode import decode_kernel
from intent_eqsat.rules.egraph import Export, KernelGraph
from intent_eqsat.rules.encode import Provenance
from intent_eqsat.rules import schedule as _schedule
from intent_eqsat.optimizer import size_buckets as SB
from intent_eqsat.rules.schedule import GroupRun, Limits, egraph_size, format_trace, make_limits, run_groups, workspace
from intent_eqsat.rules.terms import T, from_json_choice

NodeCost = Callable[[str, dict, list], float]
#: progress steps of a kernel after its groups: the tile binding, the size buckets (counted when planning is off)
STEPS_AFTER_GROUPS = 2


class OptimizeError(IntentError):
    """The optimizer could not produce a program (no finite-cost term, a term that does not decode)."""


class GroupVerificationError(VerificationError):
    """The program extracted after a transformation group fails the shared GPU verifier (``group`` names it;
    None = the final extraction)."""

    def __init__(self, group: str | None, kernel: str, err: VerificationError):
        self.group = group
        self.kernel = kernel
        self.cause = err
        stage = f"after transformation group '{group}'" if group else "after final extraction"
        super().__init__(err.invariant, f"kernel {kernel}, {stage}: {err.message}", err.location)


@dataclass(frozen=True)
class ProgramCost:
    """A predicted cost with named terms (what ``pipeline.cost_total`` / ``cost_breakdown`` read)."""

    total: float
    breakdown: dict[str, float] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.total)

    # Costs compare by their total, with each other and with plain numbers.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, float, ProgramCost)):
            return float(self) == float(other)
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        return float(self) < float(other)  # type: ignore[arg-type]

    def __le__(self, other: object) -> bool:
        return float(self) <= float(other)  # type: ignore[arg-type]

    def __gt__(self, other: object) -> bool:
        return float(self) > float(other)  # type: ignore[arg-type]

    def __ge__(self, other: object) -> bool:
        return float(self) >= float(other)  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]


@dataclass(eq=False)
class Candidate:
    """A runner-up program of one kernel: the best extraction with the chosen node of e-class ``forbidden``
    excluded."""

    kernel: str
    rank: int
    cost: float
    forbidden: str | None = None
    params: dict | None = None
    term: T | None = field(default=None, repr=False)
    _template: Kernel | None = field(default=None, repr=False)
    _prov: Provenance | None = field(default=None, repr=False)
    #: the launch resources of the bound kernel, chosen the way the optimizer chose its pick's
    _resources: Callable[[Kernel], LaunchResources | None] | None = field(default=None, repr=False)
    #: the post-extraction groups of a bound kernel (``_pass_runner``), as the optimizer ran them on its pick
    _finish: Callable[..., Kernel] | None = field(default=None, repr=False)
    #: its named cost terms, for the best other binding of the chosen program (None for the others: their
    #: totals are the extractor's, not the binding model's)
    breakdown: dict[str, float] | None = None

    def decode(self) -> Kernel:
        """The candidate as an explicit (unverified) GPU IR kernel (its tile parameters bound to ``params``, and
        when they all are, the post-extraction groups run as on the optimizer's pick)."""
        return self._bound()[0]

    def launch_resources(self) -> LaunchResources | None:
        """The launch resources the optimizer's cost model chooses for :meth:`decode`'s kernel (None while a tile
        parameter is unbound, or where the model rejects it)."""
        return self._bound()[1]

    def _bound(self) -> tuple[Kernel, LaunchResources | None]:
        if self.term is None or self._template is None:
            raise OptimizeError(f"candidate {self.rank} of kernel {self.kernel} has no term")
        k = decode_kernel(self.term, self._template, self._prov)
        if self.params:
            k = TILES.bind(k, {n: v for n, v in self.params.items() if n in TILES.NAMES},
                           Module("sm90", CompileOptions(), [], [k]))
        launch = None
        if not TILES.used(k):
            # resources are costed on one copy of each loop body, before the ranges are narrowed (as the pick's)
            if self._finish is not None:
                k = self._finish(k, early=True)
            if self._resources is not None:
                launch = self._resources(k)
            if self._finish is not None:
                k = self._finish(k)
        return k, launch

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "rank": self.rank, "cost": self.cost, "forbidden": self.forbidden,
                "params": self.params, "breakdown": self.breakdown}


@dataclass(eq=False)
class KernelResult:
    """What happened to one kernel."""

    name: str
    kernel: Kernel
    cost: float
    runs: list[GroupRun] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    snapshots: list[tuple[str, str]] = field(default_factory=list)   # (stage, kernel text): "input", group...
    egraph_size: int = 0
    remarks: list[str] = field(default_factory=list)
    breakdown: dict[str, float] | None = None
    graph: KernelGraph | None = field(default=None, repr=False)
    #: the tile parameters' values the cost model chose (``intent_eqsat.optimizer.tiles``)
    binding: dict[str, int] = field(default_factory=dict)
    #: remat/materialize decisions in the extracted program, with the modelled cost of the other form
    decisions: list[Decision] = field(default_factory=list)
    #: the extracted program's structure before its tile parameters are bound (tuning files key by it)
    fingerprint: str = ""
    #: the launch resources chosen for the pick (threads per program, pipeline stages, index width): beside the
    #: program, for the provider (issue 22 item 3); None: the provider's defaults
    launch_resources: LaunchResources | None = None
    #: other bindings for the size symbols the caller did not size, picked by the launcher (issue 24 item 4)
    size_buckets: ir.SizeBuckets | None = None
    #: the plan behind ``size_buckets`` with each variant's resources (report form)
    bucket_report: dict[str, Any] | None = None


@dataclass(eq=False)
class OptimizeResult:
    program: Module
    cost: Any
    costs: dict[str, float]
    candidates: list[Candidate]
    remarks: list[str]
    report: dict[str, Any]
    kernels: dict[str, KernelResult] = field(default_factory=dict, repr=False)
    params: dict | None = None

    @property
    def size_buckets(self) -> dict[str, ir.SizeBuckets]:
        """Kernel name -> the other tile bindings its launcher picks by the launch's sizes (issue 24 item 4)."""
        return {n: k.size_buckets for n, k in self.kernels.items() if k.size_buckets is not None}

    @property
    def launch_resources(self) -> dict[str, LaunchResources]:
        """Kernel name -> the launch resources chosen for it (a kernel without is left to the provider's
        defaults)."""
        return {n: k.launch_resources for n, k in self.kernels.items() if k.launch_resources is not None}

    @property
    def groups(self) -> list[str]:
        return list(self.report.get("groups", []))

    @property
    def rules_fired(self) -> dict[str, int]:
        return dict(self.report.get("rules_fired", {}))

    def trace(self) -> str:
        runs = [r for k in self.kernels.values() for r in k.runs]
        return format_trace(runs, self.report.get("rule_locations", {}))

    def explain(self) -> str:
        lines = []
        for k in self.kernels.values():
            lines.append(f"kernel {k.name}: cost {k.cost:g}, e-graph {k.egraph_size} rows")
            for r in k.runs:
                fired = ", ".join(f"{n} x{c}" for n, c in sorted(r.fired.items())) or "no rule matched"
                lines.append(f"  {r.group}: {r.stop} after {r.iterations} iterations; {fired}")
            for d in k.decisions:
                lines.append(f"  {d}")
            for c in k.candidates:
                lines.append(f"  candidate {c.rank}: cost {c.cost:g} (forbidding e-class {c.forbidden})")
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ costs

def default_cost(target: Any) -> Any:
    """The cost used when ``cost=None``: the roofline model of the target (``intent_eqsat.extract.cost``)."""
    from intent_eqsat.extract.cost import RooflineCost
    return RooflineCost(target)


def _node_cost(cost: Any, export: Export) -> NodeCost:
    bind = getattr(cost, "bind", None)
    if callable(bind):
        bound = bind(export)
        nc = getattr(bound, "node_cost", bound)
        if callable(nc):
            return nc
    nc = getattr(cost, "node_cost", None)
    if callable(nc):
        return nc
    if callable(cost):
        return cost
    raise TypeError(f"cost must be a node_cost callable or an object with node_cost, got {type(cost).__name__}")


def _breakdown(cost: Any, export: Export, choice: dict, root: str) -> dict[str, float] | None:
    fn = getattr(cost, "breakdown", None)
    if not callable(fn):
        return None
    out = fn(export, choice, root)
    return {str(k): float(v) for k, v in dict(out).items()} if out is not None else None


# ------------------------------------------------------------------------------------------------ extraction

def _extract_term(export: Export, node_cost: NodeCost, kernel: str, stage: str) -> tuple[T, float, dict, dict]:
    choice, cost = extract(export, node_cost)
    root_cost = cost.get(export.root, math.inf)
    if not math.isfinite(root_cost):
        raise OptimizeError(f"kernel {kernel}, {stage}: the e-graph has no finite-cost program (root cost "
                            f"{root_cost})")
    share = getattr(getattr(node_cost, "__self__", None), "share_results", None)
    if callable(share):                     # DAG sharing of multi-result ops (cost.CostModel.share_results)
        shared, total = share(choice, export.root)
        if total is not None:                 # a swap made the exactly-costed program cheaper
            choice, cost = shared, {**cost, export.root: total}
            root_cost = total
    return from_json_choice(export.nodes, choice, export.root, eclass_of=export.eclass_of), root_cost, choice, cost


def _candidates(export: Export, node_cost: NodeCost, choice: dict, cost: dict, best: T, k: int, kernel: str,
                template: Kernel, prov: Provenance) -> list[Candidate]:
    """Up to ``k`` runner-up terms: the chosen term with one e-class's choice banned, for the ``4 * k`` e-classes
    whose best alternative costs least more (a count, not a time: the same candidates on every machine)."""
    if k <= 0:
        return []
    deltas: list[tuple[float, str]] = []
    for ec in chosen_classes(export, choice, export.root):
        members = export.classes.get(ec, [])
        if len(members) < 2:
            continue
        alt = math.inf
        for nid in members:
            if nid == choice[ec]:
                continue
            node = export.nodes[nid]
            kids = [eclass(export, c) for c in node["children"]]
            if any(kc not in cost for kc in kids):
                continue
            alt = min(alt, node_cost(nid, node, [cost[kc] for kc in kids]))
        if math.isfinite(alt):
            deltas.append((alt - cost[ec], ec))
    deltas.sort()
    found: dict[int, tuple[float, str, T]] = {id(best): (cost[export.root], "", best)}
    for _, ec in deltas[: 4 * k]:
        if len(found) > k:
            break
        banned = choice[ec]

        def nc(nid: str, node: dict, kids: list, _b: str = banned) -> float:
            return math.inf if nid == _b else node_cost(nid, node, kids)

        ch2, cost2 = extract(export, nc)
        rc = cost2.get(export.root, math.inf)
        if not math.isfinite(rc):
            continue
        term = from_json_choice(export.nodes, ch2, export.root, eclass_of=export.eclass_of)
        if id(term) not in found:
            found[id(term)] = (rc, ec, term)
    ranked = sorted((v for key, v in found.items() if key != id(best)), key=lambda v: v[0])[:k]
    return [Candidate(kernel, i + 1, c, ec, None, term, template, prov) for i, (c, ec, term) in enumerate(ranked)]


# ------------------------------------------------------------------------------------------------ one kernel

def kernel_text(kernel: Kernel) -> str:
    return "\n".join(format_kernel(kernel, 0)) + "\n"


def _module_with(program: Module, kernel: Kernel, options: CompileOptions, target: str,
                 extra: Sequence[Any] = ()) -> Module:
    """``kernel`` alone in a module with ``program``'s params, ``extra`` declarations added (tile parameters the
    program does not declare already)."""
    have = {getattr(p, "name", None) for p in program.params}
    return Module(target, options, list(program.params) + [d for d in extra if d.name not in have], [kernel])


def _extraction_cost(cost: Any, tile_defaults: dict[str, int]) -> Any:
    """The cost the extractor uses: the model with the tile parameters at their defaults (structures are compared
    there; :mod:`intent_eqsat.optimizer.tiles` binds the sizes afterwards). A user's own sizes win."""
    from intent_eqsat.extract.cost import RooflineCost
    if isinstance(cost, RooflineCost):
        return RooflineCost(cost.target, {**tile_defaults, **cost.sizes}, provider=cost.provider,
                            cost_params=cost.cost_params)
    return cost


def _model_of(cost: Any, target: str) -> tuple[Any, dict, dict]:
    """(target, sizes, estimate keywords) of the roofline model behind ``cost`` (a custom cost: this target, no
    sizes, the default parameters): binding and resources are judged by the model the extractor used."""
    from intent_eqsat.extract.cost import RooflineCost
    if isinstance(cost, RooflineCost):
        return cost.target, dict(cost.sizes or {}), {"provider": cost.provider, "cost_params": cost.cost_params}
    return target, {}, {}


def _binding_breakdown(cost: Any, target: str,
                       tile_defaults: dict[str, int]) -> Callable[[Kernel, dict], dict[str, float]]:
    """The named cost terms of a decoded kernel at one tile binding (what :func:`_binding_cost` totals), so a
    report describes the bound program the totals rank, not the extraction before binding (issue 24 item 5)."""
    from intent_eqsat.extract.cost import estimate
    tgt, sizes, kw = _model_of(cost, target)

    def of(kernel: Kernel, binding: dict) -> dict[str, float]:
        out = estimate(kernel, tgt, {**tile_defaults, **sizes, **binding}, **kw)
        return {"total": float(out.total), **out.breakdown}
    return of


def _binding_cost(cost: Any, target: str, tile_defaults: dict[str, int]) -> Callable[[Kernel, dict], float]:
    """Cost of a decoded kernel at one tile binding (the same roofline model as the extractor's)."""
    from intent_eqsat.extract.cost import estimate
    tgt, sizes, kw = _model_of(cost, target)

    def of(kernel: Kernel, binding: dict) -> float:
        return float(estimate(kernel, tgt, {**tile_defaults, **sizes, **binding}, **kw).total)
    return of


#: ``on_pass(group, before, after, seconds)``, called after each post-extraction group
OnPass = Callable[[P.PassGroup, Kernel, Kernel, float], None]


def _pass_runner(selected: Sequence[P.PassGroup], options: CompileOptions, l2_bytes: int,
                 cost: Callable[[Kernel], float] | None = None) -> Callable[..., Kernel]:
    """The post-extraction groups that run on a bound kernel, in ORDER (:mod:`intent_eqsat.optimizer.passes`):
    with ``narrowing`` selected its range narrowing (``range_skip``, then ``tail_split``), then
    ``unswitch_single_trip`` on the final loop structure, ``unswitch_siblings`` with ``remat``, and last
    ``program_order`` with ``mapping``. ``finish(kernel, on_pass=None)``; the optimizer's pick passes ``on_pass``
    to verify and report each group, candidates and size-bucket variants run them plainly (verified as a whole).
    ``early=True`` runs the groups ordered before ``passes.RESOURCES_ORDER`` (``split_reduction``: they change what
    the launch resources are chosen for), ``early=False`` the rest."""
    ctx = P.PassContext(options, l2_bytes, cost)
    runnable = [p for p in selected if p.run is not None]

    def finish(kernel: Kernel, on_pass: OnPass | None = None, *, early: bool = False,
               cost_at: Callable[[Kernel], float] | None = None) -> Kernel:
        run_ctx = ctx if cost_at is None else replace(ctx, cost=cost_at)   # a size bucket's own sizes
        for p in runnable:
            if (p.order < P.RESOURCES_ORDER) != early:
                continue
            t0 = time.perf_counter()
            after = p.run(kernel, run_ctx)
            if on_pass is not None:
                on_pass(p, kernel, after, time.perf_counter() - t0)
            kernel = after
        return kernel
    return finish


def _resource_binder(cost: Any, target: str) -> Callable[[Kernel], LaunchResources | None]:
    """A bound kernel's launch resources from the same roofline model at the same sizes (the program is launched
    as it was costed; ``intent_eqsat.extract.resources``)."""
    from intent_eqsat.extract.resources import launch_resources
    tgt, sizes, kw = _model_of(cost, target)

    def bind(kernel: Kernel) -> LaunchResources | None:
        return launch_resources(kernel, tgt, sizes, **kw)
    return bind


def _resources_report(launch: LaunchResources | None) -> dict[str, int | None]:
    """The report form of a kernel's launch resources (None fields: the provider's defaults)."""
    return (launch or LaunchResources()).as_dict()


def _free_symbols(kernel: Kernel, sizes: Mapping[str, int]) -> list[str]:
    """The shape symbols of ``kernel``'s views that ``sizes`` does not give, in ABI order."""
    from intent_eqsat.ir.launch import free_symbols
    out: list[str] = []
    for a in kernel.abi:
        if not a.is_view:
            continue
        for e in a.value.type.shape:
            out.extend(s for s in sorted(free_symbols(e)) if s not in sizes and s not in out)
    return out


def _bucket_variants(decoded: Kernel, program: Module, options: CompileOptions, target: str, cost: Any,
                     doms: dict, tile_defaults: dict[str, int], tile_decls: list, finish: Callable[[Kernel], Kernel],
                     ranked: list) -> tuple[ir.SizeBuckets | None, dict | None]:
    """Other tile bindings of the extracted structure for the size symbols the caller did not size, and the
    launch-time table that picks among them (:mod:`intent_eqsat.optimizer.size_buckets`; issue 24 item 4). Each
    variant is bound, given its launch resources at the sizes it was chosen for, range-narrowed like the general
    kernel and verified (a failure names it). None without free symbols or without the roofline model."""
    from intent_eqsat.extract.cost import RooflineCost
    from intent_eqsat.providers.targets import get_target
    if not isinstance(cost, RooflineCost):
        return None, None
    free = _free_symbols(decoded, cost.sizes)
    if not free:
        return None, None
    tgt = get_target(target)
    warp = int(getattr(tgt, "warp_size", 32) or 32)

    def model_at(env: Mapping[str, int]) -> RooflineCost:
        return RooflineCost(cost.target, {**cost.sizes, **env}, provider=cost.provider, cost_params=cost.cost_params)

    def rank(env: Mapping[str, int], pool: Sequence[dict] | None) -> list[tuple[float, dict]]:
        at = _binding_cost(model_at(env), target, tile_defaults)
        if pool is None:      # with the whole-row tiles of this environment's extents among the candidates
            return TILES.choose(decoded, TILES.binding_domains(doms, tgt, env,
                                                               members=TILES.member_extent(decoded, env)),
                                lambda b: at(decoded, b), min_lanes=warp, keep=SB.POOL)
        return SB.rank_pool(pool, TILES.binding_domains(doms, tgt, env, members=TILES.member_extent(decoded, env)),
                            lambda b: at(decoded, b),
                            TILES.used(decoded), lambda b: TILES.too_narrow(b, warp))

    plan = SB.plan(free, dict(cost.sizes), ranked, rank)
    if plan is None:
        return None, None
    module = _module_with(program, decoded, options, target, tile_decls)
    variants, resources = [], [None]
    for i in range(1, len(plan.bindings)):
        env = dict(plan.envs[i])
        tiled = TILES.bind(decoded, dict(plan.bindings[i]), module)
        at_env = _binding_cost(model_at(env), target, tile_defaults)
        tiled = finish(tiled, early=True, cost_at=lambda k, at_env=at_env: at_env(k, {}))
        launch = _resource_binder(model_at(env), target)(tiled)
        bound = finish(tiled)
        bound = replace(bound, name=f"{decoded.name}__bucket{i}")
        bound_module = _module_with(program, bound, options, target)
        try:
            ir.verify(bound_module)
        except VerificationError as err:
            raise GroupVerificationError(f"size bucket variant {i}", decoded.name, err) from err
        variants.append(ir.SizeVariant(i, bound_module, bound.name, plan.bindings[i], launch))
        resources.append(_resources_report(launch))
    table = tuple((levels, v) for levels, v in plan.table if v != 0)
    buckets = ir.SizeBuckets(plan.symbols, SB.EDGES, table, tuple(variants))
    report = plan.as_dict()
    for v, r in zip(report["variants"], resources):
        if r is not None:
            v["resources"] = r
    return buckets, report


def _ranked_after_early_groups(decoded: Kernel, ranked: list[tuple[float, dict]], module: Module,
                               finish: Callable[..., Kernel],
                               cost_of: Callable[[Kernel], float]) -> list[tuple[float, dict]]:
    """The tile bindings re-ranked by the model's price of each bound program after the groups that run before the
    launch resources (``carried_prefix``, ``split_reduction``), when those groups change the best binding's program; ``ranked``
    unchanged otherwise.

    Why: a split multiplies the programs of a launch, so the cheapest binding of the unsplit program is not the
    cheapest once split (a 256 x 256 GEMM over K = 2^19: 32 x 32 tiles are the best unsplit, 64 programs; split
    over K, wide tiles that feed the matrix unit better win). Only when the split fires on the best binding: a
    binding whose program fills the GPU is left as ranked (the split is then dearer than it, and the re-ranking
    costs a bind and a split search per binding). The optimizer re-ranks only for a compile with ``sizes=``: at the
    model's default sizes the split is a guess already, and the re-ranking adds seconds to a row reduction's
    compile (2-core machine)."""
    if not ranked or not math.isfinite(ranked[0][0]):
        return ranked
    first = TILES.bind(decoded, ranked[0][1], module)
    if kernel_text(finish(first, early=True)) == kernel_text(first):
        return ranked
    rescored = []
    for c, b in ranked:
        if not math.isfinite(c):
            continue
        rescored.append((cost_of(finish(TILES.bind(decoded, b, module), early=True)), b))
    names = sorted(ranked[0][1])
    rescored.sort(key=lambda cb: (cb[0], tuple(cb[1].get(n, 0) for n in names)))
    return rescored + [cb for cb in ranked if not math.isfinite(cb[0])]


def _calibrated(cost: Any, target: str, decoded: Kernel, fp: str, ranked: list) -> tuple[list, Any, str | None]:
    """The tile bindings re-ranked by the cost's calibration (measured times of structure ``fp`` at these sizes),
    the measurement of the chosen binding (its launch resources are bound) and a remark saying what was used."""
    calibration = getattr(cost, "calibration", None)
    if calibration is None:
        return ranked, None, None
    from intent_eqsat.extract.calibration import binding_key
    reranked, used = calibration.rerank(fp, target, dict(getattr(cost, "sizes", {}) or {}), ranked,
                                        getattr(cost, "provider", None))
    if not used:                 # said, so a stale tuning file (a changed program structure) does not go unnoticed
        return ranked, None, (f"kernel {decoded.name}: the tuning files hold no measurement of this program "
                              f"structure ({fp}) at these sizes; the model alone ranks the tile bindings")
    best = used.get(binding_key(reranked[0][1]))
    remark = (f"kernel {decoded.name}: tile binding ranked with {len(used)} measured binding(s) of this program "
              f"structure ({fp}) at these sizes; pick {reranked[0][1]}"
              + (f" measured {best.seconds * 1e3:.4g} ms with {best.threads} threads, {best.stages} stages"
                 + (f", {best.index_bits}-bit index arithmetic" if best.index_bits else "")
                 if best is not None else " (not measured: model cost x the worst measured miss)"))
    return reranked, best, remark


def _phase(phases: dict, name: str, t0: float) -> float:
    now = time.perf_counter()
    phases[name] = phases.get(name, 0.0) + (now - t0)
    return now


def _optimize_kernel(kernel: Kernel, program: Module, *, target: str, options: CompileOptions, groups: list,
                     passes: Sequence[P.PassGroup], limits: Limits, observe: Callable[..., None] | None, cost: Any, facts: F.Facts, verify_each_group: bool,
                     n_candidates: int, snapshots: bool, keep_graph: bool,
                     phases: dict, egraph: Any = None, tick: Callable[[str], None] | None = None) -> KernelResult:
    t = time.perf_counter()
    # the kernel's wall-clock safety net (never a search limit: crossing it is a SearchTimeout; issue 21)
    deadline = _schedule.now() + limits.safety_seconds if limits.safety_seconds is not None else None
    from intent_eqsat.providers.targets import get_target
    # the input must not use the tile parameter names itself, unless it declares them as the tile parameters (a
    # program an earlier group left unbound: golden tests, ``intent-eqsat opt``)
    declared = {getattr(p, "name", None) for p in program.params if isinstance(p, ParamDecl)}
    clash = [n for n in TILES.used(kernel) if n not in declared]
    if clash:
        raise OptimizeError(f"kernel {kernel.name} uses the reserved tile parameter name(s) {', '.join(clash)}; "
                            f"rename those shape symbols")
    doms = TILES.domains(get_target(target), facts.tiles or (32, 64, 128))
    tile_defaults = TILES.defaults(doms)
    tile_decls = TILES.decls(doms)
    ext_cost = _extraction_cost(cost, tile_defaults)
    graph = KernelGraph(kernel, egraph=egraph)
    F.insert(graph.egraph, facts)
    for g in groups:
        if g.seed is not None:
            g.seed(graph)
    t = _phase(phases, "encode", t)
    res = KernelResult(kernel.name, kernel, math.nan)
    if snapshots:
        res.snapshots.append(("input", kernel_text(kernel)))

    last: dict[str, Any] = {}

    def current(stage: str, group: str | None) -> tuple[Kernel, T, float, dict, dict, Export]:
        size = egraph_size(graph.egraph)
        if last.get("size") == size and group is None:     # nothing ran since the last group's extraction
            return last["value"]
        t0 = time.perf_counter()
        export = graph.export()
        nc = _node_cost(ext_cost, export)
        term, rc, choice, costs = _extract_term(export, nc, kernel.name, stage)
        t1 = _phase(phases, "extract", t0)
        try:
            decoded = decode_kernel(term, kernel, graph.prov)
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise OptimizeError(f"kernel {kernel.name}, {stage}: the extracted term does not decode: {err}") \
                from err
        t2 = _phase(phases, "decode", t1)
        try:
            ir.verify(_module_with(program, decoded, options, target, tile_decls))
        except VerificationError as err:
            raise GroupVerificationError(group, kernel.name, err) from err
        _phase(phases, "verify", t2)
        last["size"], last["value"] = size, (decoded, term, rc, choice, costs, export)
        return last["value"]

    def after(group: R.Group, run: Any) -> None:
        phases["saturate"] = phases.get("saturate", 0.0) + run.seconds
        if tick is not None:
            tick(f"{kernel.name}: {group.name}")
        if run.remark:
            res.remarks.append(run.remark)
        if verify_each_group or snapshots or observe is not None:
            decoded = current(f"after group '{group.name}'", group.name)[0]
            if snapshots:
                res.snapshots.append((group.name, kernel_text(decoded)))
            if observe is not None:
                observe(kernel.name, group.name, last.get("observed", kernel), decoded)
                last["observed"] = decoded

    res.runs = run_groups(graph.egraph, groups, limits, kernel=kernel.name, deadline=deadline, after=after)
    decoded, term, rc, choice, costs, export = current("final extraction", None)
    res.egraph_size = egraph_size(graph.egraph)
    # bind the tile parameters (PASS-6): every binding of the parameters the program uses, by the cost model
    t = time.perf_counter()
    cost_at = _binding_cost(cost, target, tile_defaults)
    tgt = get_target(target)
    calibrated = getattr(cost, "calibration", None) is not None
    sizes = getattr(cost, "sizes", None)
    members = TILES.member_extent(decoded, sizes)
    ranked = TILES.choose(decoded, TILES.binding_domains(doms, tgt, sizes, members=members),
                          lambda b: cost_at(decoded, b), min_lanes=int(getattr(tgt, "warp_size", 32) or 32),
                          keep=1 << 30)
    from intent_eqsat.extract.calibration import fingerprint
    res.fingerprint = fingerprint(decoded)
    ranked, measured, remark = _calibrated(cost, target, decoded, res.fingerprint, ranked)
    if remark:
        res.remarks.append(remark)
    resources = _resource_binder(cost, target)
    finish = _pass_runner(passes, options, tgt.l2_bytes, lambda k: cost_at(k, {}))
    module_for_binding = _module_with(program, decoded, options, target, tile_decls)
    if measured is None and getattr(cost, "sizes", None):
        ranked = _ranked_after_early_groups(decoded, ranked, module_for_binding, finish, lambda k: cost_at(k, {}))
    ranked = ranked[:8]
    best_cost, best = ranked[0]
    # the runner-up binding's launched program (bound, its early groups run), whose terms the report shows beside
    # the pick's; made before the pick's own groups run, so those are the last post-extraction groups to run
    from intent_eqsat.extract.cost import RooflineCost
    runner = next((b for c, b in ranked[1:] if math.isfinite(c)), None)
    runner_bound = (finish(TILES.bind(decoded, runner, module_for_binding), early=True)
                    if runner is not None and isinstance(cost, RooflineCost) and n_candidates > 0 else None)

    def on_pass(group: P.PassGroup, before: Kernel, after: Kernel, seconds: float) -> None:
        """Verify and report one post-extraction group (SPEC PASS-2: after each group the program is verified,
        a failure names the group)."""
        changed = after is not before and kernel_text(after) != kernel_text(before)
        if changed:
            try:
                ir.verify(_module_with(program, after, options, target))
            except VerificationError as err:
                raise GroupVerificationError(group.name, kernel.name, err) from err
        if observe is not None:
            observe(kernel.name, group.name, before, after)
        res.runs.append(GroupRun(group.name, kernel.name, stop="ran", iterations=1, seconds=seconds,
                                 matches={group.name: int(changed)}))
        phases[f"group:{group.name}"] = phases.get(f"group:{group.name}", 0.0) + seconds
        if snapshots:
            res.snapshots.append((group.name, kernel_text(after)))

    # resources are costed on one copy of each loop body, then the ranges are narrowed (SPEC PASS-3.5)
    t0 = time.perf_counter()
    tiled = TILES.bind(decoded, best, module_for_binding)
    on_pass(P.get("tile_binding"), decoded, tiled, time.perf_counter() - t0)
    tiled = finish(tiled, on_pass, early=True)
    # the launch resources beside the program (issue 22 item 3): the model's, a tuning file's measured launch over them
    launch = resources(tiled)
    if measured is not None and (measured.threads or measured.stages or measured.index_bits):
        launch = LaunchResources(measured.threads or None, measured.stages or None,
                                 measured.index_bits or None).over(launch)
    bound = finish(tiled, on_pass)
    res.kernel, res.cost, res.binding = bound, (best_cost if math.isfinite(best_cost) else rc), best
    res.launch_resources = launch
    _phase(phases, "bind", t)
    if tick is not None:
        tick(f"{kernel.name}: tile binding")
    t = time.perf_counter()
    alt_bindings = [Candidate(kernel.name, 0, c, None, dict(b), term, kernel, graph.prov) for c, b in ranked[1:]
                    if math.isfinite(c)]
    alt_terms = _candidates(export, _node_cost(ext_cost, export), choice, costs, term, n_candidates, kernel.name,
                            kernel, graph.prov)
    for c in alt_terms:
        c.params = dict(best)
    for c in alt_bindings + alt_terms:
        c._resources, c._finish = resources, finish
    merged = sorted(alt_bindings + alt_terms, key=lambda c: c.cost) if n_candidates > 0 else []
    res.candidates = [replace(c, rank=i + 1) for i, c in enumerate(merged)]
    _phase(phases, "candidates", t)
    # the roofline model's terms of the bound pick and of the best other binding of the same program (the model
    # that ranked the bindings); a cost of the caller's own gives its own breakdown of the extraction
    if isinstance(cost, RooflineCost) and math.isfinite(best_cost):
        terms_at = _binding_breakdown(cost, target, tile_defaults)
        # the programs the ranking priced: bound, after the groups that run before the launch resources (a
        # statistic moved to its owner program, a split reduction); the unbound extraction's terms describe a
        # program that is never launched (LayerNorm(C,H,W): 343 us of terms beside a 12.6 us prediction)
        res.breakdown = terms_at(tiled, {})
        for c in res.candidates:
            if c.term is term and c.params is not None and math.isfinite(c.cost):
                if runner_bound is not None and c.params == runner:
                    c.breakdown = terms_at(runner_bound, {})
                break
    else:
        res.breakdown = _breakdown(ext_cost, export, choice, export.root)
    if measured is None and not calibrated and SB.enabled():
        t = time.perf_counter()
        res.size_buckets, res.bucket_report = _bucket_variants(
            decoded, program, options, target, cost, doms, tile_defaults, tile_decls, finish, ranked)
        _phase(phases, "buckets", t)
    if tick is not None:
        tick(f"{kernel.name}: size buckets")
    t = time.perf_counter()
    model = getattr(_node_cost(ext_cost, export), "__self__", None)
    if model is not None and hasattr(model, "evaluate") and hasattr(model, "extract"):
        res.decisions = materialization_decisions(export, model, choice)
        axis = program_axis_decision(export, model, choice, kernel.name)
        if axis is not None:
            res.decisions.append(axis)
    _phase(phases, "decisions", t)
    for msg, loc in F.remarks(graph.egraph):
        res.remarks.append(f"kernel {kernel.name}{', ' + loc if loc else ''}: {msg}")
    if keep_graph:
        res.graph = graph
    return res


# ------------------------------------------------------------------------------------------------ API

def _options(program: Module, options: Any) -> CompileOptions:
    if options is None:
        return program.options
    if isinstance(options, CompileOptions):
        return options
    from intent_eqsat.ir.options import make_options
    return make_options(options)


def optimize(program: Module, *, target: str | None = None, options: Any = None, rulebooks: Any = None,
             limits: "Limits | Mapping[str, Any] | None" = None, cost: Any = None, groups: Iterable[str] | None = None,
             kernels: Iterable[str] | None = None, verify_each_group: bool = True, candidates: int = 3,
             tile_candidates: Sequence[int] | None = None, trace: bool = False,
             snapshots: bool = False, keep_graphs: bool = False,
             progress: Callable[[str, int, int], None] | None = None,
             observe: Callable[[str, str, Kernel, Kernel], None] | None = None) -> OptimizeResult:
    """Optimize every kernel of ``program`` (a verified GPU IR module).

    ``target`` defaults to the module's target; ``options`` (CompileOptions or a mapping) to the module's options
    (SPEC PASS-1.1: never silently replaced). ``rulebooks``: see :func:`registry.load`; ``groups``: run only these
    groups (PASS-3 order kept). ``kernels``: optimize only these (the others pass through unchanged).
    ``limits``: the search budget (:class:`~intent_eqsat.rules.schedule.Limits` or a mapping for
    :func:`~intent_eqsat.rules.schedule.make_limits`; deterministic units, per kernel; ``report["budget"]``).
    ``tile_candidates`` overrides the target's tile-size domain (``TileCand`` facts). ``trace`` adds the per-rule
    table (STYLE item 5) as ``report["trace"]``; ``snapshots`` keeps the program text after each group
    (:mod:`intent_eqsat.optimizer.diff`); ``keep_graphs`` keeps each kernel's e-graph on ``result.kernels``.
    ``progress(label, done, total)`` is called after each step: per kernel, each group run, the tile binding and
    the size buckets (:data:`STEPS_AFTER_GROUPS`); the steps are counted, not timed, so they are the same on every
    machine (``intent_eqsat.progress`` draws them as a bar). ``observe(kernel, group, before, after)`` is called
    after each group with the program before and after it: for a rule group the extractions (tile parameters
    unbound), for a post-extraction group the pick (``rules audit`` validates the passes with it; golden tests
    and ``intent-eqsat opt`` read one group's output).
    ``groups`` may name post-extraction groups too (:mod:`intent_eqsat.optimizer.passes`).
    """
    from intent_eqsat.providers.targets import get_target

    t_start = time.perf_counter()
    if not isinstance(program, Module):
        raise TypeError(f"optimize takes an ir.Module, got {type(program).__name__}")
    limits = make_limits(limits)          # a bad field is a ValueError naming it (pipeline: a UsageError)
    tgt = get_target(target if target is not None else program.target)
    target_name = program.target if target is None else tgt.name
    opts = _options(program, options)
    reg = R.load(rulebooks)
    rule_names, pass_names = P.split_names(groups)
    selected = reg.select(rule_names)
    selected_passes = P.select([g.name for g in selected], pass_names)
    cost = cost if cost is not None else default_cost(tgt)
    the_facts = F.Facts.of(opts, tgt, tuple(tile_candidates) if tile_candidates is not None else None)
    wanted = set(kernels) if kernels is not None else None
    if wanted is not None:
        unknown = wanted - {k.name for k in program.kernels}
        if unknown:
            raise LookupError(f"no kernel named {', '.join(sorted(unknown))}")
    phases: dict[str, float] = {}
    steps = len(selected) + STEPS_AFTER_GROUPS
    todo = [k for k in program.kernels if wanted is None or k.name in wanted]
    done = [0]

    def tick(label: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(label, done[0], steps * len(todo))
    ws = None if keep_graphs else workspace()
    if ws is not None:
        t = time.perf_counter()
        ws.prepare(selected)
        _phase(phases, "prepare", t)
    results: dict[str, KernelResult] = {}
    out_kernels: list[Kernel] = []
    for k in program.kernels:
        if wanted is not None and k.name not in wanted:
            out_kernels.append(k)
            continue
        kw = dict(target=target_name, options=opts, groups=selected, passes=selected_passes, observe=observe,
                  limits=limits, cost=cost, facts=the_facts,
                  verify_each_group=verify_each_group, n_candidates=candidates, snapshots=snapshots,
                  keep_graph=keep_graphs, phases=phases, tick=tick)
        if ws is None:
            kr = _optimize_kernel(k, program, **kw)         # a private EGraph per kernel (kept on the result)
        else:
            t = time.perf_counter()
            egraph = ws.__enter__()
            _phase(phases, "scope", t)
            try:
                kr = _optimize_kernel(k, program, egraph=egraph, **kw)
            finally:
                t = time.perf_counter()
                ws.__exit__(None, None, None)
                _phase(phases, "scope", t)
        results[k.name] = kr
        out_kernels.append(kr.kernel)
    still = {n for k in out_kernels for n in TILES.used(k)}
    params = [p for p in program.params if not (isinstance(p, ParamDecl) and p.name in TILES.NAMES
                                                and p.name not in still)]
    out = Module(target_name, opts, params, out_kernels)
    t = time.perf_counter()
    if len(results) > 1 or wanted is not None:
        try:
            ir.verify(out)
        except VerificationError as err:
            raise GroupVerificationError(None, "module", err) from err
        _phase(phases, "verify", t)
    costs = {n: r.cost for n, r in results.items()}
    total = float(sum(costs.values()))
    breakdowns = [r.breakdown for r in results.values()]
    if breakdowns and all(b is not None for b in breakdowns):
        merged: dict[str, float] = {}
        for b in breakdowns:
            for key, v in b.items():
                merged[key] = merged.get(key, 0.0) + v
        cost_value: Any = ProgramCost(total, merged)
    else:
        cost_value = total
    cands = sorted((c for r in results.values() for c in r.candidates), key=lambda c: (c.cost, c.kernel, c.rank))
    remarks = [m for r in results.values() for m in r.remarks]
    runs = [run for r in results.values() for run in r.runs]
    pass_rules = {p.name: p.location for p in selected_passes}
    fired: dict[str, int] = {}          # rules that matched (egglog rules only)
    changed: dict[str, int] = {}        # post-extraction group -> kernels it changed
    for run in runs:
        into = changed if run.group in pass_rules else fired
        for name, n in run.fired.items():
            into[name] = into.get(name, 0) + n
    all_rules = [r for g in selected for r in g.rules]
    for run in runs:
        if run.group not in pass_rules:        # the passes' times are in phases already (on_pass)
            phases[f"group:{run.group}"] = phases.get(f"group:{run.group}", 0.0) + run.seconds
    phases["total"] = time.perf_counter() - t_start
    report: dict[str, Any] = {
        "target": target_name,
        "options": opts.key(),
        "rulebooks_version": reg.version,
        "groups": [g.name for g in selected] + [p.name for p in selected_passes],
        "rules_fired": fired,
        "egraph_size": sum(r.egraph_size for r in results.values()),
        "phases": {k: round(v, 6) for k, v in phases.items()},
        "summary": (f"{len(all_rules) + len(pass_rules)} rules, "
                    f"{sum(1 for r in all_rules if fired.get(r.name)) + len(changed)} matched"),
        "passes_changed": {n: changed.get(n, 0) for n in pass_rules},
        "limits": limits.as_dict(),
        "budget": limits.budget(),
        "facts": the_facts.as_dict(),
        "sizes": dict(getattr(cost, "sizes", None) or {}),
        "kernels": {n: {"cost": r.cost, "egraph_size": r.egraph_size, "binding": dict(r.binding),
                        "resources": _resources_report(r.launch_resources),
                        **({"size_buckets": r.bucket_report} if r.bucket_report else {}),
                        "decisions": [d.as_dict() for d in r.decisions],
                        "groups": [x.as_dict(timings=trace) for x in r.runs],
                        "candidates": [c.as_dict() for c in r.candidates]} for n, r in results.items()},
        "rule_locations": {**{r.name: r.location for r in all_rules}, **pass_rules},
    }
    res = OptimizeResult(out, cost_value, costs, cands, remarks, report, results)
    if trace:
        report["trace"] = res.trace()
    return res


def optimize_kir(kir_module: Any, *, target: str = "sm90", options: Any = None, **kwargs: Any) -> OptimizeResult:
    """Construct the first complete GPU program of a KIR module (SPEC PASS-3.1), then :func:`optimize` it."""
    from intent_eqsat.construct import construct

    from intent_eqsat.ir.options import make_options

    opts = make_options(options)
    program = construct(kir_module, target=target, options=opts)
    return optimize(program, target=target, options=opts, **kwargs)


def rules_list(rulebooks: Any = None) -> list[dict[str, str]]:
    """Every rule: name, group, law, ``file:line`` (run order); the post-extraction groups last, one row each
    (:mod:`intent_eqsat.optimizer.passes`)."""
    return [r.as_dict() for r in R.load(rulebooks).rules()] + [p.as_rule_dict() for p in P.all_passes()]


def rule_show(name: str, rulebooks: Any = None) -> str:
    """A rule's law, location, egglog text and its group's PASS-1 declaration; a group name shows the group.
    A post-extraction group's name shows its declaration. Unknown names raise LookupError."""
    reg = R.load(rulebooks)
    if name in P.names():
        return P.get(name).text()
    try:
        g = reg.group(name)
    except LookupError:
        g = None
    if g is not None:
        lines = [f"group {g.name} (ORDER {g.order}, schedule {g.schedule}) {g.path}", "", g.declaration.text(), "",
                 "rules:"]
        lines += [f"  {r.name}  {r.law}  [{r.location}]" for r in g.rules]
        return "\n".join(lines) + "\n"
    r = reg.rule(name)
    g = reg.group(r.group)
    lines = [f"rule {r.name}", f"law: {r.law}", f"at: {r.location}", "", r.egglog_text(), "",
             f"group {g.name} declaration:", g.declaration.text()]
    return "\n".join(lines) + "\n"


__all__ = ["optimize", "optimize_kir", "OptimizeResult", "KernelResult", "Candidate", "ProgramCost",
           "OptimizeError", "GroupVerificationError", "rules_list", "rule_show", "default_cost", "kernel_text"]
