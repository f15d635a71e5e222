"""A roofline cost model over the target capability object (DESIGN "Loops multiply cost"; issue 4 item 3).

One implementation serves two uses:

- :class:`CostModel` ``.node_cost`` is the extractor's per-node cost (``(node_id, node, child_costs) -> float``)
  over egglog's JSON export (:func:`intent_eqsat.extract.extractor.extract`);
- :func:`estimate` costs a decoded GPU IR kernel: it encodes the kernel to its term, views the term as a one-node-
  per-class export, and runs the same model (so an extracted program and its estimate agree).

What the model computes (per kernel; ``P`` programs, per-program work ``w``, all rates from the target)::

    per program:   bytes (global loads/stores/atomics; a load counts once per program instance per loop
                   iteration, at least target-independent ``min_transaction_bytes``), tensor-core contract flops,
                   FMA/ALU flops (2 per lane-op, f32 and f64 pipes), special-function ops, load steps
    loops:         body x trip count (trip = ceil((ub - lb) / step) from the LaunchExpr bounds at ``sizes``)
    footprint:     warps = clamp(pow2(ceil(max fragment elements / (warp_size * elems_per_thread))), 1, max_warps)
                   (a program without tensor-core work may take more, up to max_warps and its largest fragment's
                   lanes, where the issue factor below lowers its time by more than ``more_warps_gain``; the
                   factor picks warps only: the kernel's cost is the time without it, see ``finish``)
                   (in a program that accumulates a tensor-core contract: its largest accumulator over
                   contract_elems_per_thread, at least the target's matrix_unit_warps; the operand tiles are
                   staged through shared memory)
                   registers/thread = ceil(peak register words / threads) + base_registers  (rounded up)
                   shared memory = the operand bytes of every tensor-core contract, pipeline_stages copies of
                                   an operand read from memory, none of a left operand computed in registers
                                   (flash attention's weights P), one of a right one
                                   + program/iteration-scope buffers
    occupancy:     programs_per_sm = min(registers_per_sm // (regs/thread * threads), smem_per_sm // smem,
                                         max_warps_per_sm // warps, max_programs_per_sm)
                   slots = sm_count * programs_per_sm;  waves = ceil(P / slots)
    quantization:  eff = (waves - 1) * slots + ceil(last_wave / sm_count) * sm_count;  q = eff / P
                   (SM-granular: P = sm_count + 1 costs two SM-rounds, a single program uses one SM's share)
    L2 reuse:      a load whose coordinates depend on the program-coordinate set C is fetched from DRAM
                   distinct(C) times per wave of c = min(P, slots) programs (the rest hit L2), distinct() from
                   the segment extents and program order (row-major / grouped); if that wave working set exceeds
                   ``l2_bytes`` the excess misses
    time:          t_dram = dram_bytes / memory_bandwidth
                   t_l2   = bytes / (l2_bytes_per_clock_per_sm * sm_count * clock_hz)
                   t_tensor = sum flops / peak.tensor(operand dtype, precision)  (or the FMA pipe if the matrix
                              unit does not take the operands or an extent is below ``min_mma_extent``)
                   t_alu  = alu flops / peak.fma_f32 (+ f64 flops / peak.fma_f64);  t_sfu = sfu ops / peak.sfu
                            (when choosing the warps of a program without tensor-core work: both x max(1,
                            issue_warps / resident warps per SM), resident = warps, at most the largest fragment's
                            elements / warp_size, x min(programs_per_sm, P / min(P, sm_count)): an SM issues at
                            peak only from enough warps)
                   t_latency = waves * steps * memory_latency_s / pipeline_stages
                   roof   = q * max(t_dram, t_l2, t_tensor, t_alu, t_sfu)
                   total  = max(roof, t_latency) + w * (the other terms, q-scaled, and the smaller of
                            roof / t_latency)   (imperfect overlap; also breaks ties), w = overlap_penalty, or
                            max(overlap_penalty, serial_overlap_penalty / programs_per_sm) when a program has at most 2 x
                            pipeline_stages load steps (its phases are serial: only co-resident programs overlap them;
                            calibrated on the H200 row-kernel sweep of 2026-11-30, where [2, 8192] row tiles with
                            one program per SM ran 1.2-1.6x slower than [1, 8192] ones with two)
    illegal (inf): a fragment dtype the target does not support; a fragment extent that is not a power of two when
                   the target's providers need it (Triton's tl.arange and cuTile tiles both do); one fragment beyond
                   what a program's registers can hold; a contract whose operands exceed ``smem_per_block``; the
                   whole program's registers/thread, registers/block or shared memory beyond the target's limits;
                   zero programs per SM; more programs than the grid can launch.

Read from the target: ``sm_count``, ``warp_size``, ``max_threads_per_block``, ``registers_per_sm``,
``registers_per_block``, ``max_registers_per_thread``, ``smem_per_sm``, ``smem_per_block``, ``l2_bytes``,
``memory_bandwidth``, ``clock_hz``, ``max_grid``, ``peak`` (tensor by dtype, fma_f32, fma_f64, sfu),
``supports_contract``, ``supports_dtype``, ``providers`` (and ``max_warps_per_sm`` / ``max_programs_per_sm`` if a
target defines them; otherwise :class:`CostParams` supplies them). No target or kernel name is ever read.

The extractor's per-node cost. Each e-class's best node carries a *summary* (mirrored from the extractor's own
choice rule, so it always describes the term the extractor would rebuild): the distinct ops below it (DAG-aware:
a shared value is counted once), each placed where decode places it — in its original region when that region
is in the term (provenance), else in the outermost region where its operands are defined (loop invariants are
hoisted) — plus footprint maxima. A Region absorbs the ops placed in it into its body; a ``for`` multiplies the
body by its trip count; an ``execution_group`` records its per-program work with the program count of its
segment; the ``Kernel`` node turns its groups into the time above. Inner e-classes compare alternatives by a
monotone proxy (the summed per-unit device-seconds of the per-program work, plus a latency term); the Kernel
node's cost is the modelled time itself, so alternatives that differ in tiling, grid or resources (which differ at
the Kernel node) are ranked by the full model.

Simplifications (calibration, issue 7, tunes :class:`CostParams`):

- memory and compute inside one program are summed for the inner proxy, overlapped (max) for the kernel time;
- masked-off members of a load/store are counted as moved; coalescing/strides are ignored (a fragment access moves
  its bytes, a scalar access at least ``min_transaction_bytes``); gathers cost like loads;
- a register estimate is: loop-carried fragments along the loop nest + the largest single op inside, an
  element-wise op counting its result twice and a ``reduce`` its source and result (an operand is live while the
  result is computed; calibrated on the H200: a [2, 8192] f32 row tile with 4 warps ran 1.7x slower than a
  [1, 8192] one, spilling) (a contract accumulating into a carried accumulator adds nothing; its operands count
  in shared memory); live-in values that are not carried are not counted; ``index`` is 32 bits, ``i1`` one byte;
- ``if`` costs its dearer branch; ``while`` runs ``default_size`` times; a combiner region runs once per member;
  scalar ops cost a full warp of lanes, fragment ops one lane per element;
- an unknown trip count bound uses ``default_size`` (1024), like an unknown shape symbol; a program coordinate in a
  loop bound takes its mean value (so a causal bound ``(pm + 1) * BM`` averages to half the keys); when several
  kernel variants in one e-graph give one coordinate different extents, the largest is used (no invented narrowing)
  and a loop iv of an enclosing loop is unknown;
- an execution group's program count comes from the segment of the Kernel node above it (the largest, if one
  group sits under several kernels with different segments);
- groups share one footprint (the max over groups) and the quantization of the total program count; a grid-stride
  kernel's programs are its ``launch`` count and its traversal loop does not multiply the groups;
- L2 reuse is only modelled inside one wave, through which program coordinates a load's coordinates read, and for
  a program's repeated passes over one view (the largest load of the view is its first pass; the others re-read
  it from L2 while the wave's first-pass footprint fits; calibrated on the H200 softmax row-tile sweep).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Iterable, Mapping

from intent_eqsat.ir import launch as L
from intent_eqsat.ir.dtypes import BITS
from intent_eqsat.ir.spec import ACCESS_PAYLOAD, BINARY_OPS, READ_ACCESSES, UNARY_OPS
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, Type, ViewType
from intent_eqsat.rules.egraph import Export
from intent_eqsat.rules.sorts import SIGNATURES
from intent_eqsat.rules.terms import T, _literal, from_json_choice, walk_terms

INF = math.inf


# ------------------------------------------------------------------------------------------------ parameters

@dataclass(frozen=True)
class CostParams:
    """Constants of the model that the target object does not state (calibration data, SPEC PASS-6)."""

    default_size: int = 1024                  # unknown shape symbol / trip count bound
    elems_per_thread: int = 32                # fragment elements per thread when choosing warps
    #: accumulator members per thread in a program with a tensor-core contract (H200 sweep 2026-11-30: a 64x128
    #: accumulator ran 11-13% faster with 4 warps than with 8, with K tiles of 64 and of 128; a 128x256 one needs 8)
    contract_elems_per_thread: int = 64
    max_warps: int = 8                        # most warps of one program (bound into its launch resources)
    #: resident warps per SM that issue its ALU/SFU work at peak (2 per scheduler of an H100/H200 SM); fitted on
    #: H100 warp sweeps of lone looped-statistic programs (2026-12-06: BatchNorm2d, one 4096-member program per SM,
    #: 4 warps 0.380 ms, 8 warps 0.195 ms; GroupNorm(8), 1024 members, 1 warp 0.066 ms, 4 warps 0.027 ms)
    issue_warps: int = 8
    #: a program without matrix work takes more warps than its footprint needs only if the model's time drops by
    #: more than this fraction (otherwise the fewer warps, which leave registers and SM slots to other programs)
    more_warps_gain: float = 0.02
    base_registers: int = 32                  # addresses, indices, loop state per thread
    register_granularity: int = 8             # registers are allocated in multiples of this per thread
    pipeline_stages: int = 3                  # buffered copies of contract operands; latency overlap in loops
    #: index width of a program with matrix-unit work: 32-bit offsets made every tensor-core GEMM of the H200 suite
    #: 3-7% slower (2026-11-30, bench/results/h200_index_2026-11-30/), the others 1.02-1.07x faster
    #: (``extract.resources``); a tuning file's measured ``index_bits`` wins
    matrix_unit_index_bits: int = 64
    max_programs_per_sm: int = 32             # resident programs (CTAs/workgroups) per SM, if the target is silent
    max_warps_per_sm: int = 64                # resident warps per SM, if the target is silent
    min_transaction_bytes: int = 32           # one memory sector: the least a scalar access moves
    memory_latency_s: float = 6e-7            # DRAM load latency
    l2_bytes_per_clock_per_sm: float = 64.0   # L2 -> SM bandwidth
    min_mma_extent: int = 16                  # smallest M/N/K the matrix unit takes
    pow2_providers: frozenset = frozenset(("triton", "cutile"))   # providers whose fragments need 2^k extents
    overlap_penalty: float = 0.1              # fraction of the non-dominant terms that does not overlap
    #: the same for a program whose phases run one after the other (few load steps), divided by the programs
    #: resident on one SM (fitted on the H200 row sweep of 2026-11-30: softmax bf16 [1, 8192] rows, 2 per SM,
    #: 0.42 ms; [2, 8192] rows, 1 per SM, 0.54 ms; DRAM time 0.32 ms, other terms 0.42 ms)
    serial_overlap_penalty: float = 0.5
    eps: float = 1e-15                        # per-op proxy epsilon (keeps extraction acyclic)
    max_cost_increases: int = 16              # per e-class: later increases of a chosen node's cost are ignored


DEFAULT_PARAMS = CostParams()


# ------------------------------------------------------------------------------------------------- breakdown

@dataclass
class CostBreakdown:
    """The model's verdict on one kernel. ``total`` is seconds (``inf`` when illegal, with ``reason``)."""

    total: float
    legal: bool = True
    reason: str = ""
    programs: int = 0
    programs_per_sm: int = 0
    slots: int = 0
    waves: int = 0
    quantization: float = 1.0
    warps: int = 0
    registers_per_thread: int = 0
    smem_bytes: int = 0
    occupancy: float = 0.0
    bytes: float = 0.0                   # global traffic (loads + stores + atomics), the reuse-counted bytes moved
    dram_bytes: float = 0.0              # after the in-wave L2 reuse model
    flops_tensor: float = 0.0
    flops_alu: float = 0.0               # FMA/ALU pipes (f32 and f64), 2 per lane-op
    sfu_ops: float = 0.0
    steps: float = 0.0                   # load steps per program (latency rounds)
    t_dram: float = 0.0
    t_l2: float = 0.0
    t_tensor: float = 0.0
    t_alu: float = 0.0
    t_sfu: float = 0.0
    t_latency: float = 0.0
    bound: str = ""

    @property
    def breakdown(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name != "total" and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[f.name] = float(v)
        return out


def illegal(reason: str) -> CostBreakdown:
    return CostBreakdown(total=INF, legal=False, reason=reason)


# ---------------------------------------------------------------------------------------------------- work

# vector slots of a Work
TRAFFIC, WRITES, TFLOPS, ALU, ALU64, SFU, T_TENSOR, STEPS = range(8)
_NV = 8
_ZV = (0.0,) * _NV


class Work:
    """Per-execution work: a vector of amounts and the read bytes keyed by (the program-coordinate mask their
    coordinates depend on, the view read), each as ``(bytes, first-pass bytes)``: the bytes of all loads of that
    view and the bytes of the largest single load (one pass over the data; further loads of the same view re-read
    it), for the L2 reuse model."""

    __slots__ = ("v", "reads")

    def __init__(self, v: tuple = _ZV, reads: dict | None = None):
        self.v = v
        self.reads = reads or {}

    def __add__(self, other: "Work") -> "Work":
        if other is ZERO:
            return self
        if self is ZERO:
            return other
        reads = dict(self.reads)
        for k, (b, first) in other.reads.items():
            b0, f0 = reads.get(k, (0.0, 0.0))
            reads[k] = (b0 + b, max(f0, first))
        return Work(tuple(a + b for a, b in zip(self.v, other.v)), reads)

    def scale(self, k: float) -> "Work":
        if k == 1.0 or self is ZERO:
            return self
        return Work(tuple(a * k for a in self.v), {m: (b * k, f * k) for m, (b, f) in self.reads.items()})

    def __repr__(self) -> str:
        return f"Work({self.v}, {self.reads})"


ZERO = Work()


def _work(**kw: float) -> Work:
    reads = kw.pop("reads", None)
    v = [0.0] * _NV
    for k, x in kw.items():
        v[globals()[k.upper()]] = float(x)
    return Work(tuple(v), reads)


# ------------------------------------------------------------------------------------------------- summaries

class Entry:
    """One op placed somewhere in the program: where (``fdepth`` = deepest region depth whose arguments it reads;
    ``homes`` = region node ids that hold it by provenance or statement order), its work per execution, its proxy."""

    __slots__ = ("fdepth", "homes", "work", "proxy", "is_load")

    def __init__(self, fdepth: int, homes, work: Work, proxy: float, is_load: bool):
        self.fdepth = fdepth
        self.homes = homes
        self.work = work
        self.proxy = proxy
        self.is_load = is_load


class Group:
    """One execution group: its program count and segment, per-program work and footprint."""

    __slots__ = ("programs", "extents", "order", "group_size", "work", "proxy", "peak", "elems", "smem", "acc")

    def __init__(self, programs, extents, order, group_size, work, proxy, peak, elems, smem, acc=0):
        self.programs = programs
        self.extents = extents
        self.order = order
        self.group_size = group_size
        self.work = work
        self.proxy = proxy
        self.peak = peak
        self.elems = elems
        self.smem = smem
        self.acc = acc                    # largest tensor-core accumulator (elements)


class Summary:
    """What the model knows about the chosen term below one node."""

    __slots__ = ("pending", "groups", "mask", "cmask", "peak", "elems", "smem", "extra", "body", "body_proxy",
                 "regions", "cost", "breakdown", "acc")

    def __init__(self, pending=None, groups=None, mask=0, cmask=0, peak=0.0, elems=0, smem=None, extra=0.0,
                 body=ZERO, body_proxy=0.0, regions=(), breakdown=None, acc=0):
        self.pending: dict = pending if pending is not None else {}
        self.groups: dict = groups if groups is not None else {}
        self.mask = mask                  # bit d: reads an argument of a region at depth d
        self.cmask = cmask                # bit i: reads program coordinate i (args of the execution group)
        self.peak = peak                  # register words
        self.elems = elems                # largest fragment
        self.smem: dict = smem if smem is not None else {}
        self.extra = extra                # proxy of region bodies not yet consumed by their op
        self.body = body                  # Region: absorbed per-execution work
        self.body_proxy = body_proxy
        self.regions = regions            # Regions list: region summaries in order
        self.breakdown = breakdown        # Kernel
        self.acc = acc                    # largest tensor-core accumulator (elements; its operands are staged
                                          # through shared memory, so it alone sizes a contract program's warps)
        self.cost = (sum(e.proxy for e in self.pending.values()) + sum(g.proxy for g in self.groups.values())
                     + extra)


EMPTY = Summary()


def _union(a: dict, b: dict) -> dict:
    if not b or a is b:
        return a
    if not a:
        return b
    return a | b


def merge(a: Summary, b: Summary) -> Summary:
    if b is EMPTY or a is b:
        return a
    if a is EMPTY:
        return b
    return Summary(_union(a.pending, b.pending), _union(a.groups, b.groups), a.mask | b.mask, a.cmask | b.cmask,
                   max(a.peak, b.peak), max(a.elems, b.elems), _union(a.smem, b.smem), a.extra + b.extra,
                   regions=a.regions + b.regions, acc=max(a.acc, b.acc))


# --------------------------------------------------------------------------------------------------- helpers

_NEUTRAL = frozenset(op for op, (sort, _) in SIGNATURES.items()
                     if sort in ("LE", "LEs", "Strs", "Ty", "Tys", "A", "As", "AMap", "Seg", "Segs"))

#: special functions: (SFU ops, extra ALU lane-ops) per element, f32
_SPECIAL = {"exp": (1, 1), "exp2": (1, 0), "log": (1, 1), "log2": (1, 0), "sqrt": (1, 0), "rsqrt": (1, 0),
            "sin": (1, 2), "cos": (1, 2), "tanh": (2, 1), "erf": (0, 10), "sigmoid": (2, 2), "recip": (1, 0),
            "pow": (2, 1), "log1p": (1, 4), "expm1": (1, 4)}
_F64_SPECIAL_ALU = 20          # polynomial expansions on the f64 pipe
_INT_DIV_ALU = 10              # integer division/remainder is emulated
_FREE = frozenset(("const", "launch", "range", "broadcast", "reshape", "extract", "tuple", "record", "get",
                   "field", "bitcast", "yield"))
_MOVE = frozenset(("transpose", "join"))
_GLOBAL_READS = frozenset(("load", "gather", "atomic_load"))
_GLOBAL_WRITES = frozenset(("store", "scatter", "atomic_store"))
_GLOBAL_RMW = frozenset(("scatter_reduce", "atomic_rmw", "atomic_cas"))


def _pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _next_pow2(n: float) -> int:
    n = max(1, int(math.ceil(n)))
    return 1 << (n - 1).bit_length()


def _ceil_div(a: float, b: float) -> int:
    return int(-(-a // b))


def _mem_bytes(dtype: str) -> float:
    return max(BITS.get(dtype, 32), 8) / 8.0


def _reg_bytes(dtype: str) -> float:
    if dtype == "index":
        return 4.0
    return max(BITS.get(dtype, 32), 8) / 8.0


@dataclass
class _TyInfo:
    """A decoded type with its evaluated extents."""

    type: Type
    dtype: str | None
    extents: tuple[int, ...]
    elems: int
    words: float
    is_fragment: bool
    problem: str | None = None


@dataclass
class _OpStatic:
    name: str
    attrs: dict
    operands: list[str]               # operand e-classes
    results: list[_TyInfo]
    work: Work
    peak: float
    elems: int
    smem: float
    problem: str | None
    vals_index: int                   # child index of the operand list
    regions_index: int | None


@dataclass
class _GroupInfo:
    programs: int
    extents: tuple[int, ...]
    order: str
    group_size: int | None


# ------------------------------------------------------------------------------------------------ the model

class CostModel:
    """The cost model over one e-graph export (or one term, see :func:`estimate`).

    ``sizes`` binds shape symbols, ABI scalars and physical parameters (overriding ``params`` defaults: a
    :class:`~intent_eqsat.ir.core.Module`, a list of ``ParamDecl`` or a name -> int mapping); ``abi`` (a kernel or
    its ABI list) resolves ``dim(view, axis)``; ``homes`` (see :func:`homes_from_provenance`) places original ops
    where decode puts them. Use ``node_cost`` with :func:`~intent_eqsat.extract.extractor.extract` (after
    :meth:`reset`, or through :meth:`extract`), and :meth:`evaluate` for the exact breakdown of a choice.
    """

    def __init__(self, export: Export, target: Any, sizes: Mapping[str, int] | None = None, *,
                 params: Any = None, abi: Any = None, homes: Mapping[str, frozenset] | None = None,
                 provider: str | None = None, cost_params: CostParams = DEFAULT_PARAMS):
        from intent_eqsat.extract.extractor import extract as _extract
        from intent_eqsat.providers.targets import get_target
        target = get_target(target)
        self.export = export
        self.nodes = export.nodes
        self.classes = export.classes
        self._eclass_of = getattr(export, "eclass_of", None)
        self.ecl: Mapping[str, str] = self._eclass_of or {nid: n["eclass"] for nid, n in self.nodes.items()}
        self.target = target
        self.cp = cost_params
        self.env = _param_env(params)
        self.env.update(dict(sizes or {}))
        self.views = _abi_views(abi)
        self.homes = dict(homes or {})
        self._pow2 = self._needs_pow2(provider)
        t = target
        self.sms = int(t.sm_count)
        self.warp = int(t.warp_size)
        self.max_warps = max(1, min(self.cp.max_warps, t.max_threads_per_block // t.warp_size))
        self.max_warps_per_sm = int(getattr(t, "max_warps_per_sm", 0) or self.cp.max_warps_per_sm)
        self.max_programs_per_sm = int(getattr(t, "max_programs_per_sm", 0) or self.cp.max_programs_per_sm)
        self.bw = float(t.memory_bandwidth)
        self.l2_bw = self.cp.l2_bytes_per_clock_per_sm * self.sms * float(t.clock_hz)
        self.fma32 = float(t.peak.fma_f32)
        self.fma64 = float(t.peak.fma_f64) or self.fma32 / 64
        self.sfu = float(t.peak.sfu) or self.fma32 / 8
        # largest fragment (words) one program can hold in registers
        threads = self.max_warps * self.warp
        self.max_frag_words = min(float(t.registers_per_block) - self.cp.base_registers * threads,
                                  float(t.max_registers_per_thread - self.cp.base_registers) * threads)
        # caches (static per export)
        # what depends on the export alone is computed once per export and shared by its models (one model per
        # tile binding and size environment; ``Export.statics``)
        statics = getattr(export, "statics", None)
        statics = statics if isinstance(statics, dict) else {}
        if "small" not in statics:
            statics["small"] = _extract(export)[0]
        self._small: dict[str, str] = statics["small"]
        self._term_memo: dict[str, T] = statics.setdefault("terms", {})
        self._ty_memo: dict[str, _TyInfo] = {}
        self._val_ty_memo: dict[str, _TyInfo] = {}
        self._list_memo: dict[str, list[str]] = statics.setdefault("lists", {})
        self._attr_memo: dict[str, dict] = statics.setdefault("attrs", {})
        self._static_memo: dict[str, _OpStatic] = {}
        self._value_memo: dict[str, float | None] = {}
        self._trip_memo: dict[str, float] = {}
        self._arg_memo: dict[str, Summary] = {}
        self._le_memo: dict[str, float | None] = {}
        self._carried_arg: dict[str, bool] = {}
        self._copies_memo: dict[str, int] = {}
        self._var_memo: dict[str, int] = {}
        self._scan_structure()
        self.reset()

    # -------------------------------------------------------------------------------------- configuration
    def _needs_pow2(self, provider: str | None) -> bool:
        if provider is not None:
            return provider in self.cp.pow2_providers
        provs = set(getattr(self.target, "providers", ()) or ())
        return bool(provs) and provs <= set(self.cp.pow2_providers)

    # --------------------------------------------------------------------------------- export structure
    def _child_class(self, nid: str, i: int) -> str:
        return self.ecl[self.nodes[nid]["children"][i]]

    def _lit(self, nid: str, i: int, kind: str) -> Any:
        return _literal(self.nodes[self.nodes[nid]["children"][i]]["op"], kind)

    def _term(self, cls: str) -> T:
        hit = self._term_memo.get(cls)
        if hit is None:
            if self._eclass_of is not None:
                hit = from_json_choice(self.nodes, self._small, cls, self._term_memo, eclass_of=self._eclass_of)
            else:
                hit = from_json_choice(self.nodes, self._small, cls, self._term_memo)
        return hit

    def _list(self, cls: str) -> list[str]:
        """Item classes of a cons list class (following the smallest choice)."""
        hit = self._list_memo.get(cls)
        if hit is not None:
            return hit
        out: list[str] = []
        seen: set[str] = set()
        cur = cls
        while cur in self._small and cur not in seen:
            seen.add(cur)
            nid = self._small[cur]
            ch = self.nodes[nid]["children"]
            if len(ch) < 2:
                break
            out.append(self.ecl[ch[0]])
            cur = self.ecl[ch[-1]]
        self._list_memo[cls] = out
        return out

    def _all_list_items(self, cls: str) -> set[str]:
        """Item classes of every cons node reachable from a list class (all alternatives)."""
        out: set[str] = set()
        seen: set[str] = set()
        stack = [cls]
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            for nid in self.classes.get(c, ()):
                ch = self.nodes[nid]["children"]
                if len(ch) == 2:
                    out.add(self.ecl[ch[0]])
                    stack.append(self.ecl[ch[1]])
        return out

    def _attrs(self, cls: str) -> dict:
        hit = self._attr_memo.get(cls)
        if hit is None:
            from intent_eqsat.rules.decode import amap_of
            try:
                hit = amap_of(self._term(cls))
            except (ValueError, KeyError, TypeError):
                hit = {}
            self._attr_memo[cls] = hit
        return hit

    def _scan_structure(self) -> None:
        """Program counts of execution groups, statement homes, coordinate extents, carried arguments."""
        self._group_info: dict[str, _GroupInfo] = {}
        self._kernel_segs: dict[str, list] = {}      # Kernel node -> its own (extents, order, group size) per segment
        self._group_seg: dict[str, int] = {}         # execution_group Stmt node -> its segment index
        self._stmt_homes: dict[str, frozenset] = {}
        self._coord_ext: dict[int, int] = {}
        self._group_regions: set[str] = set()
        stmt_homes: dict[str, set[str]] = {}
        for nid, node in self.nodes.items():
            op = node["op"]
            if op == "Region":
                for sc in self._all_list_items(self._child_class(nid, 2)):
                    stmt_homes.setdefault(sc, set()).add(nid)
            elif op == "Kernel":
                segs = []
                for seg_cls in self._list(self._child_class(nid, 1)):
                    sn = self._small.get(seg_cls)
                    if sn is None:
                        continue
                    ext = tuple(max(0, int(self._eval_le_class(c) or 0)) for c in self._list(self._child_class(sn, 0)))
                    order = self._lit(sn, 1, "str")
                    g = self._eval_le_class(self._child_class(sn, 2))
                    segs.append((ext, order, None if g is None else max(1, int(g))))
                self._kernel_segs[nid] = segs
                for ext, _, _ in segs:
                    for i, e in enumerate(ext):
                        self._coord_ext[i] = max(self._coord_ext.get(i, 0), e)
                body = self._child_class(nid, 3)
                for rnid in self.classes.get(body, ()):
                    for sc in self._all_list_items(self._child_class(rnid, 2)):
                        for snid in self.classes.get(sc, ()):
                            if self.nodes[snid]["op"] != "Stmt" or self._lit(snid, 1, "str") != "execution_group":
                                continue
                            seg = self._attrs(self._child_class(snid, 3)).get("segment", 0)
                            if not isinstance(seg, int) or not 0 <= seg < len(segs):
                                continue
                            self._group_seg[snid] = seg
                            ext, order, g = segs[seg]
                            info = _GroupInfo(math.prod(ext), ext, order, g)
                            old = self._group_info.get(snid)
                            if old is None or info.programs > old.programs:
                                self._group_info[snid] = info
                            regs = self._list(self._child_class(snid, 5))
                            if regs:
                                self._group_regions.add(regs[0])
        self._stmt_homes = {k: frozenset(v) for k, v in stmt_homes.items()}

    # ------------------------------------------------------------------------------------ LaunchExprs
    def _eval_le_class(self, cls: str) -> float | None:
        if cls in self._le_memo:
            return self._le_memo[cls]
        from intent_eqsat.rules.decode import le_of
        try:
            e = le_of(self._term(cls))
        except (ValueError, KeyError, TypeError):
            e = None
        v = None if e is None else self.eval_le(e)
        self._le_memo[cls] = v
        return v

    def eval_le(self, e: L.LaunchExpr) -> float | None:
        """Value of a LaunchExpr at ``sizes``/param defaults; unknown symbols take ``default_size``."""
        if isinstance(e, L.Const):
            return int(e.value)
        if isinstance(e, L.Sym):
            v = self.env.get(e.name)
            return self.cp.default_size if v is None else v
        if isinstance(e, L.Dim):
            shape = self.views.get(e.view)
            if shape is None or e.axis >= len(shape):
                return self.cp.default_size
            return self.eval_le(shape[e.axis])
        if isinstance(e, L.Stride):
            return 1
        if isinstance(e, L.Not):
            v = self.eval_le(e.operand)
            return None if v is None else int(not v)
        if isinstance(e, L.Select):
            c = self.eval_le(e.cond)
            return None if c is None else self.eval_le(e.if_true if c else e.if_false)
        if isinstance(e, L.TupleGet) and isinstance(e.tuple_expr, L.Tuple) and e.index < len(e.tuple_expr.items):
            return self.eval_le(e.tuple_expr.items[e.index])
        if isinstance(e, L.BinOp):
            a, b = self.eval_le(e.lhs), self.eval_le(e.rhs)
            if a is None or b is None:
                return None
            try:
                return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
                        "%": lambda: a % b, "ceil_div": lambda: -((-a) // b), "min": lambda: min(a, b),
                        "max": lambda: max(a, b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
                        "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
                        ">=": lambda: int(a >= b), "&&": lambda: int(bool(a) and bool(b)),
                        "||": lambda: int(bool(a) or bool(b))}[e.op]()
            except ZeroDivisionError:
                return None
        return None

    # ------------------------------------------------------------------------------------------- types
    def _ty(self, cls: str) -> _TyInfo:
        hit = self._ty_memo.get(cls)
        if hit is not None:
            return hit
        from intent_eqsat.rules.decode import ty_of
        try:
            ty = ty_of(self._term(cls))
        except (ValueError, KeyError, TypeError):
            ty = ScalarType("f32")
        hit = self._ty_info(ty)
        self._ty_memo[cls] = hit
        return hit

    def _ty_info(self, ty: Type) -> _TyInfo:
        if isinstance(ty, FragmentType):
            ext = []
            problem = None
            for s in ty.shape:
                v = self.eval_le(s)
                v = self.cp.default_size if v is None else int(v)
                ext.append(v)
                if self._pow2 and not _pow2(v):
                    problem = f"fragment extent {v} of {ty} is not a power of two (the target's providers need it)"
            elems = math.prod(ext)
            if problem is None and not self.target.supports_dtype(ty.dtype):
                problem = f"the target has no {ty.dtype} fragments"
            words = elems * _reg_bytes(ty.dtype) / 4.0
            if problem is None and words > self.max_frag_words:
                problem = (f"fragment {ty} ({elems} elements) exceeds the registers of one program "
                           f"({int(self.max_frag_words)} words)")
            return _TyInfo(ty, ty.dtype, tuple(ext), elems, words, True, problem)
        if isinstance(ty, ScalarType):
            return _TyInfo(ty, ty.dtype, (), 1, _reg_bytes(ty.dtype) / 4.0, False)
        if isinstance(ty, (ViewType, BufferType)):
            ext = tuple(int(self.eval_le(s) or self.cp.default_size) for s in ty.shape)
            return _TyInfo(ty, ty.dtype, ext, math.prod(ext), 0.0, False)
        if isinstance(ty, TupleType):
            infos = [self._ty_info(x) for x in ty.items]
            return _TyInfo(ty, None, (), sum(i.elems for i in infos), sum(i.words for i in infos), False,
                           next((i.problem for i in infos if i.problem), None))
        return _TyInfo(ty, None, (), 1, 1.0, False)

    _TY_CHILD = {"Arg": 2, "Op": 3, "Res": 2, "SRes": 2}

    def _val_ty(self, cls: str) -> _TyInfo:
        hit = self._val_ty_memo.get(cls)
        if hit is not None:
            return hit
        hit = _TyInfo(ScalarType("f32"), "f32", (), 1, 1.0, False)
        for nid in self.classes.get(cls, ()):
            i = self._TY_CHILD.get(self.nodes[nid]["op"])
            if i is not None:
                hit = self._ty(self._child_class(nid, i))
                break
        self._val_ty_memo[cls] = hit
        return hit

    def _copies(self, cls: str, left: bool) -> int:
        """Shared-memory copies of a contract operand: ``pipeline_stages`` for one read from memory (directly or
        through casts: a pipelined loop keeps that many loads in flight); for a value computed in registers (flash
        attention's weights P), none as the left operand (the matrix units take it from registers: mma.sync,
        wgmma) and one unpipelined copy as the right one."""
        hit = self._copies_memo.get(cls)
        if hit is None:
            hit = self.cp.pipeline_stages if self._read_from_memory(cls, 0) else -1
            self._copies_memo[cls] = hit
        return hit if hit >= 0 else (0 if left else 1)

    def _read_from_memory(self, cls: str, depth: int) -> bool:
        for nid in self.classes.get(cls, ()):
            if self.nodes[nid]["op"] != "Op":
                continue
            name = self._lit(nid, 0, "str")
            if name in READ_ACCESSES:
                return True
            if name == "cast" and depth < 2:
                operands = self._list(self._child_class(nid, 1))
                if operands and self._read_from_memory(operands[0], depth + 1):
                    return True
        return False

    def _is_carried_arg(self, cls: str) -> bool:
        hit = self._carried_arg.get(cls)
        if hit is None:
            hit = False
            for nid in self.classes.get(cls, ()):
                if self.nodes[nid]["op"] == "Arg" and self._lit(nid, 0, "i64") >= 2 and self._lit(nid, 1, "i64") >= 1:
                    hit = True
            self._carried_arg[cls] = hit
        return hit

    # ----------------------------------------------------------------------------------- value analysis
    def _value(self, cls: str, guard: frozenset = frozenset()) -> float | None:
        """Numeric value of a scalar SSA class where it is launch-known; a program coordinate takes its mean."""
        if cls in self._value_memo:
            return self._value_memo[cls]
        if cls in guard:
            return None
        guard = guard | {cls}
        out = None
        for nid in self.classes.get(cls, ()):
            node = self.nodes[nid]
            if node["op"] == "Arg":
                depth, index = self._lit(nid, 0, "i64"), self._lit(nid, 1, "i64")
                if depth == 1 and index in self._coord_ext:
                    out = (self._coord_ext[index] - 1) / 2.0
            elif node["op"] == "Op":
                out = self._op_value(nid, guard)
            if out is not None:
                break
        self._value_memo[cls] = out
        return out

    def _op_value(self, nid: str, guard: frozenset) -> float | None:
        name = self._lit(nid, 0, "str")
        attrs = self._attrs(self._child_class(nid, 2))
        if name == "const":
            v = attrs.get("value")
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if name == "launch":
            e = attrs.get("expr")
            return self.eval_le(e) if isinstance(e, L.LaunchExpr) else None
        ops = self._list(self._child_class(nid, 1))
        if name == "cast" and len(ops) == 1:
            return self._value(ops[0], guard)
        if len(ops) != 2 or name not in ("add", "sub", "mul", "div", "floordiv", "rem", "mod", "min", "max"):
            return None
        a, b = self._value(ops[0], guard), self._value(ops[1], guard)
        if name == "min":                      # an unknown side leaves the other as the bound
            return b if a is None else a if b is None else min(a, b)
        if a is None or b is None:
            return None
        if name == "add":
            return a + b
        if name == "sub":
            return a - b
        if name == "mul":
            return a * b
        if name == "max":
            return max(a, b)
        if b == 0:
            return None
        if name == "div":
            return a / b
        if name == "floordiv":
            return float(a // b)
        return math.fmod(a, b) if name == "rem" else a % b

    def trip_count(self, nid: str) -> float:
        """Trip count of a ``for``/``region_fold``/``region_scan`` node from its (lb, ub, step) operands."""
        hit = self._trip_memo.get(nid)
        if hit is not None:
            return hit
        node = self.nodes[nid]
        vals_i = 2 if node["op"] == "Stmt" else 1
        ops = self._list(self._child_class(nid, vals_i))
        trip = float(self.cp.default_size)
        if len(ops) >= 3:
            lb, ub, step = (self._value(c) for c in ops[:3])
            lb = 0.0 if lb is None else lb
            if step is None or step <= 0:
                step = 1.0
            if ub is None:
                trip = math.ceil(self.cp.default_size / step)
            else:
                trip = max(0.0, math.ceil((ub - lb) / step - 1e-9))
        self._trip_memo[nid] = trip
        return trip

    # -------------------------------------------------------------------------------------- op statics
    def _static(self, nid: str) -> _OpStatic:
        hit = self._static_memo.get(nid)
        if hit is not None:
            return hit
        node = self.nodes[nid]
        op = node["op"]
        if op == "Op":
            name = self._lit(nid, 0, "str")
            vals_i, attrs_i, regions_i = 1, 2, None
            results = [self._ty(self._child_class(nid, 3))]
        else:
            off = 1 if op == "Stmt" else 0
            name = self._lit(nid, off, "str")
            vals_i, attrs_i, regions_i = off + 1, off + 2, off + 4
            results = [self._ty(c) for c in self._list(self._child_class(nid, off + 3))]
        attrs = self._attrs(self._child_class(nid, attrs_i))
        operands = self._list(self._child_class(nid, vals_i))
        work, peak, elems, smem, problem = self._op_work(name, attrs, operands, results, nid if op == "Op" else None)
        hit = _OpStatic(name, attrs, operands, results, work, peak, elems, smem, problem, vals_i, regions_i)
        self._static_memo[nid] = hit
        return hit

    def _lanes(self, elems: int) -> float:
        return float(max(elems, self.warp))

    def _alu(self, lane_ops: float, dtype: str | None) -> Work:
        if dtype in ("f64", "i64", "u64"):
            return _work(alu64=2.0 * lane_ops) if dtype == "f64" else _work(alu=4.0 * lane_ops)
        return _work(alu=2.0 * lane_ops)

    # ------------------------------------------------------------------------------------------ variance
    def _variance_node(self, nid: str, guard: frozenset = frozenset()) -> int:
        """Bit i set when the value of this Op node varies along its result axis i. Broadcast members are
        copies: a per-thread compiler computes an elementwise op once per distinct member, so ALU work and
        registers count the varying members only."""
        name = self._lit(nid, 0, "str")
        res = self._ty(self._child_class(nid, 3))
        rank = len(res.extents)
        full = (1 << rank) - 1
        if rank == 0 or name in ("const", "launch"):
            return 0
        if name == "range":
            return full
        ops = self._list(self._child_class(nid, 1))
        if name == "broadcast":
            dims = self._attrs(self._child_class(nid, 2)).get("dims", ())
            v = self._variance_class(ops[0], guard) if ops else 0
            out = 0
            for i, d in enumerate(dims):
                if v >> i & 1 and isinstance(d, int) and 0 <= d < rank:
                    out |= 1 << d
            return out
        if name == "transpose":
            perm = self._attrs(self._child_class(nid, 2)).get("perm", ())
            v = self._variance_class(ops[0], guard) if ops else full
            return sum(1 << j for j, p in enumerate(perm) if isinstance(p, int) and v >> p & 1) if perm else full
        if name in UNARY_OPS or name in BINARY_OPS or name in ("cmp", "select", "cast"):
            out = 0
            for c in ops:
                ti = self._val_ty(c)
                if not ti.is_fragment:
                    continue
                if len(ti.extents) != rank:
                    return full
                out |= self._variance_class(c, guard)
            return out
        return full

    def _variance_class(self, cls: str, guard: frozenset = frozenset()) -> int:
        hit = self._var_memo.get(cls)
        if hit is not None:
            return hit
        ti = self._val_ty(cls)
        out = (1 << len(ti.extents)) - 1 if ti.is_fragment else 0
        if ti.is_fragment and cls not in guard:
            for nid in self.classes.get(cls, ()):
                if self.nodes[nid]["op"] == "Op":
                    out = self._variance_node(nid, guard | {cls})
                    break
        self._var_memo[cls] = out
        return out

    def _op_work(self, name: str, attrs: dict, operands: list[str], results: list[_TyInfo], nid: str | None = None):
        """(work per execution, register words, largest fragment elements, shared memory bytes, problem)."""
        problem = next((r.problem for r in results if r.problem), None)
        elems = max((r.elems for r in results if r.is_fragment), default=0)
        peak = max((r.words for r in results), default=0.0)
        out_elems = results[0].elems if results else 1
        if nid is not None and problem is None and results and results[0].is_fragment:
            var = self._variance_node(nid)
            r = results[0]
            out_elems = math.prod(e for i, e in enumerate(r.extents) if var >> i & 1)
            peak = out_elems * _reg_bytes(r.dtype or "f32") / 4.0
        out_dtype = results[0].dtype if results else None
        cp = self.cp
        if problem is not None:
            return ZERO, peak, elems, 0.0, problem
        if name in _FREE or name in ("execution_group", "if", "while", "for", "region_fold", "region_scan"):
            if name == "for":
                return self._alu(3 * self.warp, "i32"), 0.0, elems, 0.0, None    # carried: counted by the loop
            return ZERO, peak, elems, 0.0, None
        if name in _MOVE:
            return self._alu(self._lanes(out_elems), out_dtype), peak, elems, 0.0, None
        if name in UNARY_OPS or name in BINARY_OPS or name in ("cmp", "select", "cast"):
            peak *= 2.0                        # an operand fragment is live while the result is computed
        if name in UNARY_OPS or name in BINARY_OPS:
            lanes = self._lanes(out_elems)
            approx = bool(attrs.get("approximate"))
            if name in _SPECIAL or (name == "div" and out_dtype in ("f16", "bf16", "f32", "f64")):
                sfu, alu = _SPECIAL.get(name, (1, 2))
                if approx:
                    alu = min(alu, 1)
                if out_dtype == "f64":
                    return _work(alu64=2.0 * lanes * _F64_SPECIAL_ALU), peak, elems, 0.0, None
                return _work(sfu=lanes * sfu, alu=2.0 * lanes * alu), peak, elems, 0.0, None
            if name in ("div", "rem", "mod", "floordiv"):
                return self._alu(lanes * _INT_DIV_ALU, out_dtype), peak, elems, 0.0, None
            return self._alu(lanes, out_dtype), peak, elems, 0.0, None
        if name in ("cmp", "select", "cast"):
            dt = self._val_ty(operands[-1]).dtype if operands else out_dtype
            return self._alu(self._lanes(out_elems), dt if name == "cmp" else out_dtype), peak, elems, 0.0, None
        if name in _GLOBAL_READS or name in _GLOBAL_WRITES or name in _GLOBAL_RMW or name in (
                "buffer_load", "buffer_store"):
            return self._access_work(name, attrs, operands, results, peak, elems)
        if name == "alloc":
            r = results[0]
            if isinstance(r.type, BufferType) and r.type.scope in ("program", "iteration"):
                return ZERO, 0.0, elems, r.elems * _mem_bytes(r.dtype or "f32"), None
            return ZERO, 0.0, elems, 0.0, None
        if name in ("contract", "scaled_contract"):
            return self._contract_work(name, attrs, operands, results, peak, elems)
        if name in ("reduce", "scan", "argreduce", "histogram"):
            src = self._val_ty(operands[0]) if operands else results[0]
            n_comp = max(1, len(operands) if name in ("reduce", "scan") else 1)
            factor = {"reduce": 1.0, "scan": 2.0, "argreduce": 2.0, "histogram": 2.0}[name]
            work = self._alu(self._lanes(src.elems) * n_comp * factor, src.dtype)
            return work, peak + src.words, max(elems, src.elems if src.is_fragment else 0), 0.0, None
        return self._alu(self._lanes(out_elems), out_dtype), peak, elems, 0.0, None

    def _access_work(self, name, attrs, operands, results, peak, elems):
        cp = self.cp
        payload = ACCESS_PAYLOAD.get(name, 0)
        valid = bool(attrs.get("valid"))
        ncoords = len(operands) - 1 - payload - (1 if valid else 0)
        if name in ("load", "gather", "atomic_load", "buffer_load", "atomic_rmw", "atomic_cas"):
            moved = results[0] if results else _TyInfo(ScalarType("f32"), "f32", (), 1, 1.0, False)
        else:
            moved = self._val_ty(operands[1 + ncoords]) if len(operands) > 1 + ncoords else \
                _TyInfo(ScalarType("f32"), "f32", (), 1, 1.0, False)
        nbytes = max(moved.elems * _mem_bytes(moved.dtype or "f32"), float(cp.min_transaction_bytes))
        addr = self._alu(self._lanes(moved.elems), "i32")
        resource = self._val_ty(operands[0]) if operands else None
        if name in ("buffer_load", "buffer_store") and resource is not None and isinstance(resource.type, BufferType) \
                and resource.type.scope != "workspace":
            return addr + addr, peak, elems, 0.0, None             # on-chip buffer: no global traffic
        # reads are keyed by the coordinates' program-coordinate mask later (the node summary knows it)
        if name in _GLOBAL_WRITES or name == "buffer_store":
            return addr + _work(traffic=nbytes, writes=nbytes), peak, elems, 0.0, None
        if name in _GLOBAL_RMW:
            return addr + addr + _work(traffic=2 * nbytes, writes=nbytes, reads={-1: (nbytes, nbytes)}), peak, elems, \
                0.0, None
        return addr + _work(traffic=nbytes, reads={-1: (nbytes, nbytes)}), peak, elems, 0.0, None

    def _contract_work(self, name, attrs, operands, results, peak, elems):
        t = self.target
        lhs_i, rhs_i = (0, 2) if name == "scaled_contract" else (0, 1)
        lhs, rhs = self._val_ty(operands[lhs_i]), self._val_ty(operands[rhs_i])
        lc, rc = tuple(attrs.get("lhs_contract", ())), tuple(attrs.get("rhs_contract", ()))
        lb, rb = tuple(attrs.get("lhs_batch", ())), tuple(attrs.get("rhs_batch", ()))
        le, re_ = lhs.extents, rhs.extents

        def prod(ext, axes):
            return math.prod(ext[a] for a in axes if a < len(ext))

        k = prod(le, lc)
        b = prod(le, lb)
        m = prod(le, [i for i in range(len(le)) if i not in lc and i not in lb])
        n = prod(re_, [i for i in range(len(re_)) if i not in rc and i not in rb])
        flops = 2.0 * b * m * n * k
        od, ad = lhs.dtype or "f32", results[0].dtype or "f32"
        precision = attrs.get("precision", "ieee")
        rate = t.peak.tensor(od, precision) if t.supports_contract(od, ad, precision) else 0.0
        own_peak = 0.0 if self._is_carried_arg(operands[-1]) else peak
        elems = max(elems, lhs.elems, rhs.elems)
        # shared memory: every tiled contract is staged through it, whether the matrix unit or the FMA pipe
        # computes it (Triton's pipeliner buffers the operand loads of any tl.dot, ieee f32 included: fp32 GEMM
        # chains with 128x256x64 tiles once asked 262-352 KB and failed at launch, issue 26 item 5), at the
        # operands' own dtypes, ``pipeline_stages`` copies of an operand read from memory
        smem = 0.0
        tiled = min(m, n, k) >= self.cp.min_mma_extent
        if tiled:
            smem = (lhs.elems * _mem_bytes(od) * self._copies(operands[lhs_i], left=True)
                    + rhs.elems * _mem_bytes(rhs.dtype or od) * self._copies(operands[rhs_i], left=False))
            if smem > t.smem_per_block:
                return ZERO, own_peak, elems, smem, (
                    f"contract operands {lhs.type} x {rhs.type} need {int(smem)} bytes of shared memory "
                    f"({self.cp.pipeline_stages} stages for the operands read from memory) > smem_per_block "
                    f"{t.smem_per_block}")
        if rate > 0 and tiled:
            return _work(tflops=flops, t_tensor=flops / rate), own_peak, elems, smem, None
        # no matrix-unit form: a legal FMA expansion (operands in registers, staged through shared memory when tiled)
        w = _work(alu64=flops) if ad == "f64" else _work(alu=flops)
        return w, max(own_peak, lhs.words + rhs.words), elems, smem, None

    # ----------------------------------------------------------------------------------------- proxies
    def proxy(self, w: Work) -> float:
        v = w.v
        return (v[TRAFFIC] / self.bw + v[T_TENSOR] + v[ALU] / self.fma32 + v[ALU64] / self.fma64 + v[SFU] / self.sfu
                + v[STEPS] * self.cp.memory_latency_s / (self.cp.pipeline_stages * self.sms))

    # ------------------------------------------------------------------------------------ summarizing
    def summarize(self, nid: str, node: dict, kids: list[Summary]) -> Summary | None:
        """The summary of one node given its children's summaries; None when the node is illegal."""
        op = node["op"]
        if op == "Arg":
            hit = self._arg_memo.get(nid)
            if hit is None:
                depth, index = self._lit(nid, 0, "i64"), self._lit(nid, 1, "i64")
                hit = Summary(mask=(1 << depth) if depth >= 0 else 0, cmask=(1 << index) if depth == 1 else 0)
                self._arg_memo[nid] = hit
            return hit
        if op in ("ValsCons", "StmtsCons"):
            return merge(kids[0], kids[1])
        if op == "RegionsCons":
            out = merge(kids[0], kids[1])
            if out is kids[0] or out is kids[1]:
                out = Summary(out.pending, out.groups, out.mask, out.cmask, out.peak, out.elems, out.smem,
                              out.extra, acc=out.acc)
            out.regions = (kids[0],) + kids[1].regions
            return out
        if op in ("Res", "SRes"):
            return kids[0]
        if op == "Region":
            return self._region(nid, kids)
        if op in ("Op", "Multi", "Stmt"):
            return self._op_summary(nid, node, kids)
        if op == "Kernel":
            return self._kernel(nid, kids)
        return EMPTY

    def _region(self, nid: str, kids: list[Summary]) -> Summary:
        depth = self._lit(nid, 0, "i64")
        inner = merge(kids[2], kids[3])
        absorb_all = depth <= 1 or self.nodes[nid]["eclass"] in self._group_regions
        body = ZERO
        body_proxy = 0.0
        loads = False
        escaped: dict = {}
        for key, e in inner.pending.items():
            if absorb_all or e.fdepth >= depth or (e.homes is not None and nid in e.homes):
                body = body + e.work
                body_proxy += e.proxy
                loads = loads or e.is_load
            else:
                escaped[key] = e
        if loads:
            step = _work(steps=1.0)
            body = body + step
            body_proxy += self.proxy(step)
        return Summary(escaped, inner.groups, inner.mask & ((1 << depth) - 1) if depth > 0 else 0, inner.cmask,
                       inner.peak, inner.elems, inner.smem, extra=body_proxy, body=body, body_proxy=body_proxy,
                       acc=inner.acc)

    def _op_summary(self, nid: str, node: dict, kids: list[Summary]) -> Summary | None:
        st = self._static(nid)
        if st.problem is not None:
            return None
        operands = kids[st.vals_index]
        regions = kids[st.regions_index] if st.regions_index is not None else EMPTY
        regs = regions.regions
        base = merge(operands, regions)
        name = st.name
        work = st.work
        peak = max(base.peak, st.peak)
        elems = max(base.elems, st.elems)
        acc = base.acc
        if name in ("contract", "scaled_contract") and work.v[TFLOPS] > 0 and st.results:
            acc = max(acc, st.results[0].elems)
        smem = base.smem
        if st.smem:
            smem = dict(smem)
            smem[nid] = st.smem
        if name == "for" and regions.smem:
            # the contracts of one loop body are staged together (summed); sibling loops reuse the shared memory
            # (the program's footprint is the largest entry: an unchecked full-tile loop and its tail loop,
            # intent_eqsat.ir.tail_split, are costed once)
            smem = dict(operands.smem)
            smem[nid] = sum(regions.smem.values())
        if work.reads:                                 # key this access's reads by its program coordinates and view
            cm = operands.cmask
            view = st.operands[0] if st.operands else ""
            work = Work(work.v, {(cm, view): b for b in work.reads.values()})
        if name == "execution_group":
            info = self._group_info.get(nid) or _GroupInfo(1, (1,), "row_major", None)
            r = regs[0] if regs else EMPTY
            g = Group(info.programs, info.extents, info.order, info.group_size, r.body, info.programs * r.body_proxy,
                      r.peak, r.elems, max(r.smem.values(), default=0), r.acc)
            groups = dict(base.groups)
            groups[nid] = g
            return Summary(dict(base.pending), groups, base.mask, 0, 0.0, 0, {}, 0.0)
        if regs:
            if name == "for":
                r = regs[0]
                trip = self.trip_count(nid)
                work = work.scale(trip) + r.body.scale(trip)
                carried = sum(x.words for x in st.results)
                peak = max(peak, carried + r.peak)
            elif name == "while":
                n = float(self.cp.default_size)
                work = work + _sum_work(r.body for r in regs).scale(n)
            elif name == "if":
                work = work + max(regs, key=lambda r: r.body_proxy).body
            elif name in ("region_fold", "region_scan"):
                work = work + _sum_work(r.body for r in regs).scale(self.trip_count(nid))
            elif name in ("reduce", "scan"):
                src = self._val_ty(st.operands[0]) if st.operands else None
                n = (max(src.elems, self.warp) / self.warp) if src is not None else 1.0
                work = work + _sum_work(r.body for r in regs).scale(n)
            else:
                work = work + _sum_work(r.body for r in regs)
        proxy = self.proxy(work) + self.cp.eps
        if node["op"] == "Stmt":
            homes = self._stmt_homes.get(node["eclass"])
            fdepth = -1 if homes else _fdepth(base.mask)
        else:
            homes = self.homes.get(nid)
            fdepth = _fdepth(base.mask)
        entry = Entry(fdepth, homes, work, proxy, bool(st.work.reads))
        pending = dict(base.pending)
        pending[nid] = entry
        return Summary(pending, base.groups, base.mask, base.cmask, peak, elems, smem, 0.0, acc=acc)

    def _kernel(self, nid: str, kids: list[Summary]) -> Summary:
        launch = self._eval_le_class(self._child_class(nid, 2))
        body = kids[3]
        bd = self.finish([self._own_segment(nid, key, g) for key, g in body.groups.items()], launch)
        s = Summary(breakdown=bd)
        s.cost = bd.total
        return s

    def _own_segment(self, kernel_nid: str, group_nid: str, g: Group) -> Group:
        """``g`` with the program space of this Kernel node's own segment: kernels that differ only in their
        program mapping (row-major / grouped order, PASS-3.2) share one body and so one execution_group node.
        A grouped order pays its decode (two more integer divisions/remainders and three ops per program)."""
        segs = self._kernel_segs.get(kernel_nid)
        si = self._group_seg.get(group_nid)
        if segs is None or si is None or not 0 <= si < len(segs):
            return g
        ext, order, gsz = segs[si]
        if order != "grouped" and (ext, order, gsz) == (g.extents, g.order, g.group_size):
            return g
        programs = math.prod(ext)
        work = g.work
        if order == "grouped":
            work = work + self._alu(self._lanes(1) * (2 * _INT_DIV_ALU + 3), "i32")
        proxy = g.proxy / g.programs * programs if g.programs else g.proxy
        return Group(programs, ext, order, gsz, work, proxy, g.peak, g.elems, g.smem, g.acc)

    # -------------------------------------------------------------------------------------- the kernel
    def finish(self, groups: list[Group], launch: float | None = None) -> CostBreakdown:
        """Occupancy, quantization, L2 reuse and time of a kernel with these execution groups."""
        t, cp = self.target, self.cp
        if not groups:
            return CostBreakdown(total=0.0, bound="empty")
        total_p = sum(g.programs for g in groups)
        programs = int(launch) if launch is not None and launch > 0 else total_p
        if programs <= 0:
            return CostBreakdown(total=0.0, programs=0, bound="empty")
        grid_cap = math.prod(t.max_grid)
        if programs > grid_cap:
            return illegal(f"{programs} programs exceed the grid limit {grid_cap}")
        elems = max(g.elems for g in groups)
        peak = max(g.peak for g in groups)
        smem = int(max(g.smem for g in groups))
        # a program that accumulates a tensor-core contract holds its accumulator at more members per thread
        # (sized by the accumulator alone), and at least the warps that issue one matrix instruction together
        mma = any(g.work.v[TFLOPS] > 0 for g in groups)
        acc = max(g.acc for g in groups)
        if mma and acc:          # its operand tiles are staged through shared memory: the accumulator sizes it
            warps = min(self.max_warps, _next_pow2(acc / (self.warp * cp.contract_elems_per_thread)))
        else:
            warps = min(self.max_warps, _next_pow2(elems / (self.warp * cp.elems_per_thread)) if elems else 1)
        if mma:
            warps = min(self.max_warps, max(warps, int(getattr(t, "matrix_unit_warps", 1) or 1)))
            return self._timed(groups, programs, total_p, warps, peak, smem, elems, issue_bound=False)
        # a program without matrix work may take more warps than its footprint needs where too few warps share an
        # SM to issue its ALU work at peak (`_timed`'s issue factor): the fewest warps within `more_warps_gain` of
        # the best issue-aware time win. The kernel's cost stays the footprint's time, without the issue factor:
        # the term decides a program's warps but not yet the ranking of programs. Ranked with it, unsized compiles
        # (every symbol at `default_size`) turned blocked 1-D kernels into one element per program (stencil3,
        # histogram: 32 one-warp programs against 1024 scalar ones, within 1%), and two user norms took other
        # tiles that ran 0.84x-0.94x (H100 2026-12-06). A kernel whose SMs already hold `issue_warps` warps keeps
        # its footprint warps: more warps there change only the programs per SM (the model's in-wave L2 reuse then
        # favoured fewer resident programs, measured 1.5x-2.3x slower: softmax/layernorm/cumsum rows).
        plain = self._timed(groups, programs, total_p, warps, peak, smem, elems, issue_bound=False)
        if not plain.legal or self._resident_warps(warps, elems, plain.programs_per_sm, programs) >= cp.issue_warps:
            return plain
        best = self._timed(groups, programs, total_p, warps, peak, smem, elems)
        w = warps * 2
        while w <= min(self.max_warps, max(warps, _next_pow2(elems / self.warp))):
            alt = self._timed(groups, programs, total_p, w, peak, smem, elems)
            if alt.legal and alt.total < best.total * (1.0 - cp.more_warps_gain):
                best = alt
            w *= 2
        if best.warps == warps:
            return plain
        # launched with best's warps: its resource and occupancy fields; plain's times and total
        return replace(plain, warps=best.warps, registers_per_thread=best.registers_per_thread,
                       programs_per_sm=best.programs_per_sm, slots=best.slots, waves=best.waves,
                       quantization=best.quantization, occupancy=best.occupancy)

    def _resident_warps(self, warps: int, elems: float, programs_per_sm: int, programs: int) -> float:
        """Warps per SM that issue a program's work: its warps, at most its largest fragment's lanes (a warp past
        them repeats the scalar work and issues no share of it), times the programs resident on one SM."""
        useful = min(warps, max(1, _ceil_div(int(elems), self.warp)))
        return useful * min(float(programs_per_sm), programs / min(programs, self.sms))

    def _timed(self, groups: list[Group], programs: int, total_p: int, warps: int, peak: float,
               smem: int, elems: float, issue_bound: bool = True) -> CostBreakdown:
        """The modelled time of these execution groups launched as ``programs`` programs of ``warps`` warps.
        ``issue_bound``: their ALU/SFU work is issued at the resident warps' share of the SM's peak (not for a
        program with tensor-core work: its warps are sized by its accumulator, calibrated without this term)."""
        t, cp = self.target, self.cp
        threads = warps * self.warp
        regs = int(math.ceil(peak / threads)) + cp.base_registers
        regs = _ceil_div(regs, cp.register_granularity) * cp.register_granularity
        if regs > t.max_registers_per_thread:
            return illegal(f"{regs} registers per thread > max_registers_per_thread {t.max_registers_per_thread} "
                           f"({int(peak)} words over {threads} threads)")
        if regs * threads > t.registers_per_block:
            return illegal(f"{regs * threads} registers per program > registers_per_block {t.registers_per_block}")
        if smem > t.smem_per_block:
            return illegal(f"{smem} bytes of shared memory > smem_per_block {t.smem_per_block}")
        ppsm = min(self.max_programs_per_sm, t.registers_per_sm // (regs * threads),
                   self.max_warps_per_sm // warps, t.smem_per_sm // smem if smem else 1 << 30)
        if ppsm <= 0:
            return illegal("no program fits on one SM")
        slots = self.sms * ppsm
        waves = _ceil_div(programs, slots)
        last = programs - (waves - 1) * slots
        eff = (waves - 1) * slots + _ceil_div(last, self.sms) * self.sms
        quant = eff / programs
        # totals
        traffic = writes = tflops = alu = alu64 = sfu = t_tensor = steps = dram = 0.0
        for g in groups:
            p, v = g.programs, g.work.v
            traffic += p * v[TRAFFIC]
            writes += p * v[WRITES]
            tflops += p * v[TFLOPS]
            alu += p * v[ALU]
            alu64 += p * v[ALU64]
            sfu += p * v[SFU]
            t_tensor += p * v[T_TENSOR]
            steps += p * v[STEPS]
            dram += p * v[WRITES] + self._dram_reads(g, min(g.programs, slots) or 1)
        steps_avg = steps / total_p if total_p else 0.0
        t_dram = dram / self.bw
        t_l2 = traffic / self.l2_bw
        # ALU and special-function work is issued by the resident warps: an SM issues at its peak only with
        # `issue_warps` warps resident (2 per scheduler); fewer (a lone program of few warps per SM) issue a
        # proportional share (H100 sweeps, docs/perf.md "Warps for programs alone on an SM")
        issue = max(1.0, cp.issue_warps / self._resident_warps(warps, elems, ppsm, programs)) if issue_bound else 1.0
        t_alu = (alu / self.fma32 + alu64 / self.fma64) * issue
        t_sfu = sfu / self.sfu * issue
        terms = {"dram": t_dram, "l2": t_l2, "tensor": t_tensor, "alu": t_alu, "sfu": t_sfu}
        bound = max(terms, key=terms.get)
        roof = quant * terms[bound]
        t_lat = waves * steps_avg * cp.memory_latency_s / cp.pipeline_stages
        if t_lat > roof:
            bound = "latency"
        rest = quant * (sum(terms.values()) - terms[bound]) if bound != "latency" else quant * sum(terms.values())
        # a program with a handful of load steps (at most two pipelines' worth: whole-row passes) runs its phases
        # (load, reduce, compute, store) one after the other: only the other programs resident on its SM overlap
        # them (one resident program: none); a long loop of loads keeps `stages` of them in flight itself
        serial = steps_avg <= 2 * cp.pipeline_stages
        overlap = max(cp.overlap_penalty, cp.serial_overlap_penalty / ppsm) if serial else cp.overlap_penalty
        total = max(roof, t_lat) + overlap * (rest + min(roof, t_lat))
        return CostBreakdown(
            total=total, programs=programs, programs_per_sm=ppsm, slots=slots, waves=waves, quantization=quant,
            warps=warps, registers_per_thread=regs, smem_bytes=smem,
            occupancy=min(1.0, ppsm * warps / self.max_warps_per_sm), bytes=traffic, dram_bytes=dram,
            flops_tensor=tflops, flops_alu=alu + alu64, sfu_ops=sfu, steps=steps_avg, t_dram=t_dram, t_l2=t_l2,
            t_tensor=t_tensor, t_alu=t_alu, t_sfu=t_sfu, t_latency=t_lat, bound=bound)

    def _dram_reads(self, g: Group, c: int) -> float:
        """DRAM bytes of a group's reads: per wave of c programs, each view's first pass is fetched distinct(C)
        times (the rest hit L2 while the wave's working set fits); a program's further passes over the same view
        re-read what its first pass fetched, and hit L2 when the wave's first-pass footprint fits in it."""
        reads = g.work.reads
        if not reads:
            return 0.0
        steps = max(g.work.v[STEPS], 1.0)
        l2 = float(self.target.l2_bytes)
        dist = {cm: _distinct(g.extents, g.order, g.group_size, cm, c) for cm, _ in reads}
        ws = sum(dist[cm] * b / steps for (cm, _), (b, _) in reads.items())
        miss = max(0.0, 1.0 - l2 / ws) if ws > 0 else 0.0
        footprint = sum(dist[cm] * first for (cm, _), (_, first) in reads.items())
        reread_miss = max(0.0, 1.0 - l2 / footprint) if footprint > 0 else 0.0
        out = 0.0
        for (cm, _), (b, first) in reads.items():
            f = dist[cm] / c
            out += g.programs * (first * (f + (1.0 - f) * miss) + (b - first) * reread_miss)
        return out

    # ------------------------------------------------------------------------------------- extraction
    def reset(self) -> None:
        """Forget the mirrored extraction state (call before each extraction with ``node_cost``)."""
        self.best_cost: dict[str, float] = {}
        self.best_node: dict[str, str] = {}
        self.best_sum: dict[str, Summary] = {}
        self.node_costs: dict[str, float] = {}
        self._bumps: dict[str, int] = {}

    def node_cost(self, node_id: str, node: dict, child_costs: list[float]) -> float:
        """The extractor's cost: seconds at a Kernel node, a monotone per-program proxy elsewhere."""
        op = node["op"]
        if op in _NEUTRAL:
            return sum(child_costs) + 1e-18
        if any(c == INF for c in child_costs):
            c = INF
            s = None
        else:
            kids = [self.best_sum.get(self.ecl[ch], EMPTY) for ch in node["children"]]
            s = self.summarize(node_id, node, kids)
            c = INF if s is None else s.cost
        ec = node["eclass"]
        cur = self.best_cost.get(ec, INF)
        if self.best_node.get(ec) == node_id and c > cur:
            # DAG-aware costs are not monotone in the children's (sharing can be lost): bound the increases so
            # the extractor's fixpoint always terminates; evaluate() re-costs the final choice exactly
            n = self._bumps.get(ec, 0)
            if n >= self.cp.max_cost_increases:
                self.node_costs[node_id] = cur
                return cur
            self._bumps[ec] = n + 1
        self.node_costs[node_id] = c
        if c < cur - 1e-12 or (self.best_node.get(ec) == node_id and c != cur):
            self.best_cost[ec] = c
            self.best_node[ec] = node_id
            self.best_sum[ec] = s
        return c

    def extract(self, forced: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, float]]:
        """Run the extractor with this model; ``forced[eclass] = node id`` excludes the class's other nodes."""
        from intent_eqsat.extract.extractor import extract as _extract
        self.reset()
        if not forced:
            return _extract(self.export, self.node_cost)
        forced = dict(forced)

        def cost(nid: str, node: dict, child_costs: list[float]) -> float:
            want = forced.get(node["eclass"])
            if want is not None and want != nid:
                child_costs = [INF]                   # mirrored as an infinite node
            return self.node_cost(nid, node, child_costs)

        return _extract(self.export, cost)

    def share_results(self, choice: Mapping[str, str], root: str | None = None,
                      max_swaps: int = 8) -> tuple[dict[str, str], float | None]:
        """Reuse results of region ops the chosen program already runs (DAG sharing the greedy extractor misses).

        The extractor picks each e-class's node by that node's own cost, so a class that could be a ``Res`` of a
        multi-result op the program computes anyway (e.g. the running maximum of a one-pass online loop whose
        other result the program already uses) still picks a cheaper standalone op - and the program runs both.
        Here every reachable class with a ``Res`` alternative whose ``Multi`` class is already chosen in the
        program is tried with that node; a swap is kept when :meth:`evaluate` (exact, DAG-aware) gets cheaper.
        Returns the new choice and its exact total, or ``(choice, None)`` when no swap paid."""
        from intent_eqsat.extract.choice import CyclicChoice, reachable
        root = root or self.export.root
        nodes = self.nodes
        res_alts: dict[str, list[str]] = {}
        for cls, members in self.export.classes.items():
            if len(members) > 1:
                alts = [nid for nid in members if nodes[nid]["op"] == "Res"]
                if alts:
                    res_alts[cls] = alts
        current = dict(choice)
        best: float | None = None
        swapped = False
        for _ in range(max_swaps):
            try:
                reach = reachable(self.export, current, root)
            except CyclicChoice:
                break
            multis = {c for c in reach if nodes[current[c]]["op"] == "Multi"}
            trials = [(c, nid) for c in reach for nid in res_alts.get(c, ())
                      if nid != current[c] and self.ecl[nodes[nid]["children"][0]] in multis]
            if not trials:
                break
            if best is None:
                best = self.evaluate(current, root).total
            for c, nid in trials:
                trial = dict(current)
                trial[c] = nid
                try:
                    reachable(self.export, trial, root)
                except CyclicChoice:
                    continue
                total = self.evaluate(trial, root).total
                if total < best * (1.0 - 1e-9):
                    current, best, swapped = trial, total, True
                    break
            else:
                break
        return (current, best) if swapped else (choice, None)

    def evaluate(self, choice: Mapping[str, str], root: str | None = None) -> CostBreakdown:
        """The exact breakdown of the program that ``choice`` selects below ``root`` (default: the export root)."""
        root = root or self.export.root
        memo: dict[str, Summary | None] = {}
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            cls, done = stack.pop()
            if cls in memo:
                continue
            nid = choice.get(cls)
            if nid is None:                          # a primitive (or unchosen) class
                memo[cls] = EMPTY
                continue
            node = self.nodes[nid]
            kids_cls = [self.ecl[c] for c in node["children"]]
            if not done:
                stack.append((cls, True))
                stack.extend((k, False) for k in kids_cls if k not in memo)
                continue
            if node["op"] in _NEUTRAL:
                memo[cls] = EMPTY
            elif any(memo.get(k, EMPTY) is None for k in kids_cls):
                memo[cls] = None
            else:
                memo[cls] = self.summarize(nid, node, [memo.get(k, EMPTY) for k in kids_cls])
        s = memo.get(root)
        if s is None:
            return illegal(self.explain_illegal(choice, root) or "an op of the program is illegal on this target")
        if s.breakdown is None:
            raise ValueError(f"e-class {root} is not a Kernel")
        return s.breakdown

    def explain_illegal(self, choice: Mapping[str, str], root: str | None = None) -> str:
        """The first illegal op's reason in the chosen program (for remarks)."""
        seen: set[str] = set()
        stack = [root or self.export.root]
        while stack:
            cls = stack.pop()
            if cls in seen or cls not in choice:
                continue
            seen.add(cls)
            nid = choice[cls]
            node = self.nodes[nid]
            if node["op"] in ("Op", "Multi", "Stmt"):
                st = self._static(nid)
                if st.problem:
                    return st.problem
            stack.extend(self.ecl[c] for c in node["children"])
        return ""


def _sum_work(ws: Iterable[Work]) -> Work:
    out = ZERO
    for w in ws:
        out = out + w
    return out


def _fdepth(mask: int) -> int:
    return mask.bit_length() - 1


def _distinct(extents: tuple[int, ...], order: str, group: int | None, cmask: int, c: int) -> float:
    """How many distinct values of the program coordinates in ``cmask`` a run of ``c`` consecutive programs has."""
    if cmask <= 0 or not extents:
        return 1.0
    rank = len(extents)
    per: dict[int, float] = {}
    if order == "grouped" and rank == 2 and group:
        e0, e1 = extents
        g = max(1, min(group, e0))
        per[0] = min(e0, c, g * _ceil_div(c, g * max(e1, 1)))
        per[1] = min(e1, _ceil_div(c, g))
    else:
        inner = 1
        for i in reversed(range(rank)):
            per[i] = min(extents[i], max(1, _ceil_div(c, inner)))
            inner *= max(extents[i], 1)
    d = 1.0
    for i in range(rank):
        if cmask >> i & 1:
            d *= per[i]
    return max(1.0, min(d, float(c)))


# ---------------------------------------------------------------------------------------------- parameters

def _param_env(params: Any) -> dict[str, int]:
    if params is None:
        return {}
    if isinstance(params, Mapping):
        return {str(k): int(v) for k, v in params.items()}
    plist = getattr(params, "params", params)
    out: dict[str, int] = {}
    for p in plist or ():
        out[p.name] = int(p.default)
    return out


def _abi_views(abi: Any) -> dict[str, tuple]:
    if abi is None:
        return {}
    items = getattr(abi, "abi", abi)
    out = {}
    for a in items:
        ty = a.value.type
        if isinstance(ty, ViewType):
            out[a.name] = ty.shape
    return out


# --------------------------------------------------------------------------------------- term -> "export"

def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def term_export(root: T) -> tuple[Export, dict[int, str]]:
    """A one-node-per-class export of a term (node ids = class ids), and term id -> node id. The export's
    ``statics`` hold what a cost model would otherwise rebuild from it: each class's term (the subterm itself:
    terms are hash-consed, so rebuilding gives the same object) and its choice (its one node)."""
    nodes: dict[str, dict] = {}
    classes: dict[str, list[str]] = {}
    ids: dict[int, str] = {}
    prims: dict[tuple, str] = {}
    terms: dict[str, T] = {}

    def prim(v: Any) -> str:
        key = (type(v).__name__, v)
        hit = prims.get(key)
        if hit is None:
            hit = f"primitive-{len(prims)}"
            nodes[hit] = {"op": _quote(v) if isinstance(v, str) else str(int(v)), "children": [], "eclass": hit}
            prims[key] = hit
        return hit

    def visit(term: T) -> None:
        nid = f"t{len(ids)}"
        children = [ids[id(a)] if isinstance(a, T) else prim(a) for a in term.args]
        nodes[nid] = {"op": term.op, "children": children, "eclass": nid}
        classes[nid] = [nid]
        ids[id(term)] = nid
        terms[nid] = term

    walk_terms(root, visit)
    statics = {"small": {nid: nid for nid in terms}, "terms": terms}
    return Export(nodes, classes, ids[id(root)], statics=statics), ids


def match_terms(export: Export, root: T) -> dict[int, str]:
    """Term id -> the export node that is that term (by structure), for every subterm found in the e-graph."""
    ecl = getattr(export, "eclass_of", None) or {nid: n["eclass"] for nid, n in export.nodes.items()}
    index: dict[tuple, str] = {}
    for nid, node in export.nodes.items():
        if node["op"] not in SIGNATURES:
            continue
        key = [node["op"]]
        for c in node["children"]:
            cn = export.nodes.get(c)
            if cn is not None and cn["op"] not in SIGNATURES:
                key.append(("p", cn["op"]))
            else:
                key.append(("c", ecl[c]))
        index[tuple(key)] = nid
    found: dict[int, str] = {}

    def visit(term: T) -> None:
        key = [term.op]
        for a in term.args:
            if isinstance(a, T):
                nid = found.get(id(a))
                if nid is None:
                    return
                key.append(("c", export.nodes[nid]["eclass"]))
            else:
                key.append(("p", _quote(a) if isinstance(a, str) else str(int(a))))
        nid = index.get(tuple(key))
        if nid is not None:
            found[id(term)] = nid

    walk_terms(root, visit)
    return found


def homes_from_provenance(prov: Any, term_to_node: Mapping[int, str]) -> dict[str, frozenset]:
    """Node id -> the Region node ids where decode places that original op (SPEC: decode's provenance rule)."""
    out: dict[str, frozenset] = {}
    for tid, rids in prov.homes.items():
        nid = term_to_node.get(tid)
        if nid is None:
            continue
        regions = frozenset(term_to_node[r] for r in rids if r in term_to_node)
        if regions:
            out[nid] = regions
    return out


# --------------------------------------------------------------------------------------------- front doors

def model_for_graph(graph: Any, target: Any, sizes: Mapping[str, int] | None = None, *, params: Any = None,
                    provider: str | None = None, cost_params: CostParams = DEFAULT_PARAMS,
                    export: Export | None = None) -> CostModel:
    """A :class:`CostModel` for a :class:`~intent_eqsat.rules.egraph.KernelGraph` (its export, ABI and provenance)."""
    export = export or graph.export()
    homes = homes_from_provenance(graph.prov, match_terms(export, graph.term))
    return CostModel(export, target, sizes, params=params, abi=graph.kernel, homes=homes, provider=provider,
                     cost_params=cost_params)


def estimate(kernel: Any, target: Any, sizes: Mapping[str, int] | None = None, *, params: Any = None,
             provider: str | None = None, cost_params: CostParams = DEFAULT_PARAMS) -> CostBreakdown:
    """The model's breakdown of one decoded GPU IR kernel on ``target`` (a Target or a target name).

    ``sizes`` binds shape symbols and physical parameters (overriding the ``params`` defaults: a Module, a list of
    ``ParamDecl`` or a mapping); unknown symbols take ``CostParams.default_size``.
    """
    from intent_eqsat.providers.targets import get_target
    target = get_target(target)
    export, homes = _encoded(kernel)
    model = CostModel(export, target, sizes, params=params, abi=kernel, homes=homes,
                      provider=provider, cost_params=cost_params)
    return model.evaluate({c: ns[0] for c, ns in export.classes.items()})


_LAST_ENCODED: list = []


def _encoded(kernel: Any) -> tuple[Export, dict[str, frozenset]]:
    """The one-node-per-class export of ``kernel`` and its op homes, kept for the last kernel seen: tile binding
    costs one kernel at hundreds of bindings (``optimizer.tiles.choose``), and the encoding does not depend on them
    (it was 40% of the binding phase of causal attention). Kernels are values nobody mutates; the cache holds
    the kernel itself, so an identity hit is the same kernel."""
    if _LAST_ENCODED and _LAST_ENCODED[0] is kernel:
        return _LAST_ENCODED[1], _LAST_ENCODED[2]
    from intent_eqsat.rules.encode import encode_kernel
    term, prov = encode_kernel(kernel)
    export, ids = term_export(term)
    homes = homes_from_provenance(prov, ids)
    _LAST_ENCODED[:] = [kernel, export, homes]
    return export, homes


def estimate_module(module: Any, target: Any = None, sizes: Mapping[str, int] | None = None, *,
                    provider: str | None = None, cost_params: CostParams = DEFAULT_PARAMS) -> dict[str, CostBreakdown]:
    """:func:`estimate` for every kernel of a module (target default: the module's; params: its declarations)."""
    return {k.name: estimate(k, target if target is not None else module.target, sizes, params=module.params,
                             provider=provider, cost_params=cost_params) for k in module.kernels}


__all__ = ["CostParams", "CostBreakdown", "CostModel", "Work", "estimate", "estimate_module", "model_for_graph",
           "term_export", "match_terms", "homes_from_provenance", "DEFAULT_PARAMS"]


class RooflineCost:
    """The optimizer's default cost: this model on ``target`` at problem ``sizes`` (unknown symbols take
    ``CostParams.default_size``). ``bind(export)`` gives the per-export model whose ``node_cost`` the extractor
    uses; ``breakdown`` gives the chosen program's cost terms (for reports and ``explain``). ``calibration`` (an
    :class:`intent_eqsat.extract.calibration.Calibration`): measured times that re-rank the tile bindings of a
    measured structure at measured sizes (the optimizer applies it when it binds the tile parameters)."""

    def __init__(self, target: Any, sizes: Mapping[str, int] | None = None, *, provider: str | None = None,
                 cost_params: CostParams = DEFAULT_PARAMS, calibration: Any = None):
        self.target = target
        self.sizes = dict(sizes or {})
        self.provider = provider
        self.cost_params = cost_params
        self.calibration = calibration
        self._models: dict[int, CostModel] = {}

    def bind(self, export: Export) -> CostModel:
        model = self._models.get(id(export))
        if model is None or model.export is not export:
            model = CostModel(export, self.target, self.sizes, provider=self.provider, cost_params=self.cost_params)
            self._models = {id(export): model}
        return model

    def breakdown(self, export: Export, choice: Mapping[str, str], root: str) -> dict[str, float]:
        out = self.bind(export).evaluate(choice, root)
        return {"total": out.total, **out.breakdown}
