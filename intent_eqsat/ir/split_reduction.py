"""A reduction to a scalar is split across program instances in one launch, its partials combined by the last
program to finish (issue 27 items 1-2; SPEC IR-2 "a compiler-private workspace may become an extra kernel argument
allocated by the runtime", IR-4.4 workspace buffers, IR-9 "cross-instance conflicts only through atomics",
PASS-4 "reassociate ordinary reduce").

Why: a kernel whose output is a scalar (a loss with ``reduction="mean"``, a norm, ``X.max()``) is one program that
walks every member with one running scalar: at 2^30 members the model predicts minutes, and an f32 running sum stops
growing near 2^24 (an MSE of 0.1667 came out 0.0156). Split over ``P`` programs, each sums a contiguous chunk in a
``LANES``-wide fragment of partial sums; the last program to draw a ticket combines the ``P`` partials in program
order. Every f32 addition then adds a member to a partial of at most ``ceil(n / (P * LANES))`` members, then a tree
of ``log2(LANES)`` levels, then the ``P`` partials in a tree: the error bound is that of a blocked sum,
``(n / (P * LANES) + 2 log2(LANES)) * u * sum|x|`` (u = 2^-24), not ``n * u * sum|x|`` (docs/kir.md). The result
is the same bits on every run (the partials and their combination have a fixed order; no float atomics).

A second form takes a reduction whose kept extent does not fill the GPU (per-channel BatchNorm statistics of
``C = 64`` channels, the column sums of a tall matrix, a cross-entropy mean whose members are row logsumexps and so
do not lift to lanes): its outermost loop is chunked over a new last program axis of ``S`` programs, ``S`` the
cost model's cheapest of ``CHUNK_COUNTS``; each segment program's chunks draw tickets from their own counter
element.

Declaration (SPEC PASS-1):

- Reads: execution groups of a kernel without grid-stride traversal. Lane form: groups of one program (a segment
  with no extents); at the group's top level, *reduction nests*: ``for`` loops of step 1 with one float scalar
  carry, either marked ``reduce = c`` (c in add, mul, max, min) with a body ``yield(c(carried, x))``, or a loop
  whose body is only such a nest started from its carried value (``sum(i, j: ..)`` is a loop over ``i`` threading
  its total through the loop over ``j``); bounds that are ``launch`` or ``const`` values (LaunchExprs) defined
  outside the nest; the member ``x``'s ops; the views the member reads. Chunk form: any row-major group's
  top-level *reduction chains*: a ``for`` with one float or integer carry (a scalar or a fragment), constant step and
  LaunchExpr bounds, marked ``reduce = c`` or threading its carry through such a chain in its body (other body ops
  do not read the carry), writing nothing. Both: the cost model (``PassContext.cost``) of the kernel before and
  after (the chunk form only runs with a model; a split is kept at ``SPLIT_GAIN`` of the unsplit price or less).
- Legality: the nest's combine is an ordinary reduction (associative, commutative; its members independent of the
  carried value: the ``reduce`` mark the verifier checks), so its members may be regrouped (PASS-4); every member
  lifts to a ``LANES``-wide fragment (element-wise ops, casts, selects, compares, constants, loads and gathers of
  views the kernel only reads; no loop, structured op or effect in a member, no integer division of lifted
  values); no nest reads a value another nest or a later op computes; the group's other ops run after the nests
  (they read the nests' results and write the outputs). The last-arriver ticket makes those writes happen once:
  each program draws ``atomic_rmw add`` of 1 on a counter initialized to 0 by the launcher, so exactly one draws
  ``P - 1`` (the verifier's ticket guard, ``ir.verify._ticket_exempt``); its ``acq_rel`` draw orders every
  program's partial store (before its release) before the last arriver's plain reads of the partials (after its
  acquire), so those are ``buffer_load`` s, not per-element atomics (measured 1.5x-1.7x faster on the H200 at long
  K, docs/perf.md; the verifier refuses a workspace read outside a ticket guard). Chunk form: the chain's combiner is an
  ordinary reduction over the outer loop's iterations (each iteration's inner reduction starts from the carried
  value), so chunks of the outer range may be reduced apart and combined (PASS-4); the chunk size is a multiple of
  the step (tiles stay aligned); a segment program's chunks share a counter element indexed by its row-major
  coordinate. Applied only when the cost model prices the split kernel at most ``SPLIT_GAIN`` of the original
  (the lane form runs without a model).
- Rewrites: the group's segment becomes ``[P]`` with ``P = max(1, min(ceil_div(n, LANES * MIN_TILES),
  MAX_PROGRAMS))``, ``n`` the nest's member count (the product of its extents); program ``p`` runs the members
  ``[p * C, min(n, (p + 1) * C))``, ``C = ceil_div(ceil_div(n, P), LANES) * LANES``, ``LANES`` at a time (the
  nest's indices decoded from the flat member index by div/mod; lanes past the chunk take the identity and load
  nothing), combines its lanes with ``reduce``, stores the partial into a workspace buffer ``[P]`` (a new private
  ABI view), draws a ticket, and the program with ticket ``P - 1`` reads the partials (``buffer_load``)
  and combines them with the nest's initial value, then runs the group's other ops on the totals. Chunk form: the
  segment gains a last extent ``S``; chunk ``s`` runs the outer loop over ``[lb + s * Z, min(ub, lb + (s + 1) *
  Z))``, ``Z = ceil_div(ceil_div(ub - lb, S), step) * step``, from the identity, stores its partial into a
  workspace ``[K, S, ...]`` (``K`` the segment's programs), and the last chunk of a segment program folds the ``S``
  partials in chunk order from the chain's initial value.
- Preserves: the value of every reduction up to regrouping of its members, its combiner, dtype and NaN behaviour
  (max/min propagate NaN in every grouping); the public ABI and every output's writes (once, by the last program);
  the compile options. One launch: the workspace and the ticket counter are private ABI views the launcher
  allocates (the counter filled with 0), no second kernel, no barrier between programs.
- Invalidates: the segment's extents, the launch grid, the ABI's private arguments, the group's op structure,
  fragment shapes (``[LANES]`` members), the launch resources (chosen after this group) and every cost term.
- Verifier: the shared GPU verifier after the group (workspace buffers named by private views, the ticket guard of
  the output stores, conflict-freedom of the partial stores: each program writes its own element).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import AbiArg, Kernel, Op, Region, Segment, Value
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, ceil_div, le_max, le_min, simplify
from intent_eqsat.ir.loop_rewrite import FreshNames, clone_region
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, ViewType, static_extent

#: members each program combines per step: one fragment of partial sums. The model gives it 4 warps (32 members
#: per thread); measured on the H200 (2026-12-03, bench/scalar_reduction_warps.py, docs/perf.md) 1024 lanes at 4
#: warps streamed up to 1.34x faster, but the model gives 1024 lanes one warp, 1.1-3.6x slower than 4
LANES = 4096
#: a program reads at least this many fragments (1 measured as fast as 4 at 2^30 members, faster below 2^22)
MIN_TILES = 1
#: at most this many programs (<= LANES: the last program combines every partial in one fragment)
MAX_PROGRAMS = 1024
#: the program counts a reduction's outer loop may be chunked into (the second form; the cost model picks one)
CHUNK_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: a split is kept only where the model prices it at most this fraction of the unsplit kernel. Why: the model
#: charges the last arriver's combine (``if`` costs its dearer branch) as throughput spread over the GPU, but it runs
#: on one program per output after the others; H200 2026-12-03 (docs/perf.md): a 64 x 4096 x 4096 bf16 GEMM split
#: in 4 over K, modelled 0.56x the unsplit time, ran 1.43x slower; 256 x 256 x 2^19, modelled 0.10x, ran 0.20x
SPLIT_GAIN = 0.5
#: the chunk search stops after this many successive counts priced no better than the best so far (the price falls
#: while more programs fill the GPU and rises once the partials' traffic and the combine outweigh it)
RISES_TO_STOP = 2
COMBINERS = ("add", "mul", "max", "min")
_IDENTITY = {"add": 0.0, "mul": 1.0, "max": float("-inf"), "min": float("inf")}
#: carries a split may regroup: floats (ordinary reduce, PASS-4) and integers, whose add and mul wrap modulo 2^bits
#: and so regroup exactly, like max and min (an int32 count of matches, an int8 GEMM's int32 accumulator)
_SPLIT_DTYPES = dtypes.FLOAT_DTYPES + tuple(t for t in dtypes.INT_DTYPES if t != "index")
_LIFTABLE = ("unary", "binary", "compare", "select", "cast")
_INT_DIVISIONS = ("div", "rem", "mod", "floordiv")
INDEX = ScalarType("index")


def _identity(combine: str, dtype: str) -> float | int:
    """The combiner's identity in ``dtype``: a float's is ``_IDENTITY``'s, an integer's 0, 1 or its range's ends."""
    if dtypes.is_float(dtype):
        return _IDENTITY[combine]
    lo, hi = dtypes.int_range(dtype)
    return {"add": 0, "mul": 1, "max": lo, "min": hi}[combine]


@dataclass
class _Nest:
    """A reduction nest: loops outer -> inner over rectangular ranges, the innermost's combine and member."""

    loops: list[Op]
    combine: str
    member_ops: list[Op]          # the innermost body's ops before the combine
    member: Value                 # the member combined each step
    bounds: list[tuple[LaunchExpr, LaunchExpr]]

    @property
    def outer(self) -> Op:
        return self.loops[0]

    @property
    def dtype(self) -> str:
        return self.outer.results[0].type.dtype

    @property
    def ivs(self) -> list[Value]:
        return [loop.regions[0].args[0] for loop in self.loops]


def split_scalar_reductions(kernel: Kernel, cost: Callable[[Kernel], float] | None = None) -> Kernel:
    """``kernel`` with its groups' top-level reductions split across programs (the module docstring): a
    one-program group whose members lift is flattened and lane-blocked (:func:`_split_segment`); any other group
    whose reductions' outer loops may be chunked gets a new program axis of ``S`` chunks
    (:func:`_split_outer`), ``S`` the cheapest of :data:`CHUNK_COUNTS` by ``cost``. Each split is kept only where
    ``cost`` (the model's price of a kernel) says the kernel is cheaper; without a model only the first form
    runs."""
    if kernel.space.launch is not None:
        return kernel
    out = kernel
    names = FreshNames(kernel)
    for si, seg in enumerate(kernel.space.segments):
        split = None
        if all(static_extent(e) == 1 for e in seg.extents):
            split = _split_segment(out, si, names)
        if split is None and cost is not None:
            best, best_cost, worse = None, SPLIT_GAIN * cost(out), 0
            for chunks in CHUNK_COUNTS:
                cand = _split_outer(out, si, names, chunks)
                if cand is None:
                    break
                c = cost(cand)
                if c < best_cost:
                    best, best_cost, worse = cand, c, 0
                else:
                    worse += 1
                    if worse == RISES_TO_STOP:
                        break
            split = best
        if split is not None:
            out = split
    if out is kernel or (cost is not None and not cost(out) < SPLIT_GAIN * cost(kernel)):
        return kernel
    return out


# ------------------------------------------------------------------------------------------------ recognition

def _defs(region: Region, into: dict[str, Op]) -> dict[str, Op]:
    for op in region.ops:
        for v in op.results:
            into[v.name] = op
        for r in op.regions:
            _defs(r, into)
    return into


#: index arithmetic on launch values that is itself a launch value (a flattened nest's trip count ``H * W``)
_LAUNCH_ARITH = {"add": "+", "sub": "-", "mul": "*"}


def _launch_value(v: Value, defs: dict[str, Op]) -> LaunchExpr | None:
    """``v`` as a launch expression: a ``launch`` or integer ``const`` op, or sums, differences and products of
    such index values; None for anything else."""
    op = defs.get(v.name)
    if op is None or not isinstance(v.type, ScalarType) or v.type.dtype != "index":
        return None
    if op.name == "launch":
        return op.attrs["expr"]
    if op.name == "const" and isinstance(op.attrs.get("value"), int) and not isinstance(op.attrs["value"], bool):
        return Const(int(op.attrs["value"]))
    if op.name in _LAUNCH_ARITH and len(op.operands) == 2 and not op.regions:
        lhs, rhs = (_launch_value(x, defs) for x in op.operands)
        if lhs is not None and rhs is not None:
            return BinOp(_LAUNCH_ARITH[op.name], lhs, rhs)
    return None


def _one_carry_loop(op: Op, defs: dict[str, Op],
                    carried_in: Value | None) -> tuple[LaunchExpr, LaunchExpr, Const] | None:
    """(lb, ub, step) of a ``for`` with one float or integer carry (started from ``carried_in`` when given),
    LaunchExpr bounds and a positive constant step; None for any other op."""
    if op.name != "for" or len(op.operands) != 4 or len(op.results) != 1 or not op.regions:
        return None
    if carried_in is not None and op.operands[3].name != carried_in.name:
        return None
    t = op.results[0].type
    if not (isinstance(t, (ScalarType, FragmentType)) and t.dtype in _SPLIT_DTYPES):
        return None
    lb, ub = _launch_value(op.operands[0], defs), _launch_value(op.operands[1], defs)
    step = _launch_value(op.operands[2], defs)
    if lb is None or ub is None or not isinstance(step, Const) or int(step.value) < 1:
        return None
    return lb, ub, step


def _nest(op: Op, defs: dict[str, Op], carried_in: Value | None = None) -> _Nest | None:
    """The reduction nest rooted at ``op`` (None when it is not one)."""
    bounds = _one_carry_loop(op, defs, carried_in)
    if bounds is None or bounds[2] != Const(1) or not isinstance(op.results[0].type, ScalarType):
        return None
    lb, ub, _ = bounds
    body = op.regions[0]
    iv, carried = body.args
    ops = body.ops
    if not ops or ops[-1].name != "yield" or len(ops[-1].operands) != 1:
        return None
    result = ops[-1].operands[0]
    if len(ops) == 2 and ops[0].name == "for" and ops[0].results and ops[0].results[0].name == result.name:
        inner = _nest(ops[0], defs, carried)
        if inner is None or inner.combine is None:
            return None
        return _Nest([op] + inner.loops, inner.combine, inner.member_ops, inner.member, [(lb, ub)] + inner.bounds)
    comb = op.attrs.get("reduce")
    if comb not in COMBINERS:
        return None
    last = defs.get(result.name)
    if len(ops) < 2 or last is not ops[-2] or last.name != comb or len(last.operands) != 2:
        return None
    a, b = last.operands
    member = b if a.name == carried.name else a if b.name == carried.name else None
    if member is None or member.name == carried.name:
        return None
    return _Nest([op], comb, ops[:-2], member, [(lb, ub)])


def _reading_totals(op: Op, totals: dict[str, Value], names: FreshNames) -> Op:
    """``op`` (one of the group's other ops) reading the combined totals instead of the loops' results, in its
    regions too (a loop over the columns of a row that reads the row's statistic)."""
    regions = op.regions
    if any(v.name in totals for r in regions for inner in _walk(r.ops) for v in inner.operands):
        regions = [clone_region(r, names, dict(totals)) for r in regions]
    return replace(op, operands=[totals.get(v.name, v) for v in op.operands], regions=regions)


def _reads(ops: list[Op]) -> set[str]:
    """Names of the values ``ops`` (and their regions) read that they do not define."""
    defined: set[str] = set()
    used: set[str] = set()

    def walk(region_ops: list[Op]) -> None:
        for o in region_ops:
            used.update(v.name for v in o.operands)
            defined.update(v.name for v in o.results)
            for r in o.regions:
                defined.update(a.name for a in r.args)
                walk(r.ops)
    walk(ops)
    return used - defined


# ------------------------------------------------------------------------------------------------ rewriting

def _partition(region: Region, loops: list[Op], pure_cats: tuple[str, ...]) -> tuple[list[Op], list[Op]] | None:
    """(the group's pure ops that read no loop result: every program runs them first; the other ops: the last
    program runs them on the totals), or None when a loop reads a value of the second kind."""
    loop_ids = {id(op) for op in loops}
    later: set[str] = {op.results[0].name for op in loops}
    pre: list[Op] = []
    rest: list[Op] = []
    for op in region.ops[:-1]:
        if id(op) in loop_ids:
            continue
        pure = op.name in SPECS and SPECS[op.name].category in pure_cats and not op.regions
        if pure and not any(v.name in later for v in op.operands):
            pre.append(op)
        else:
            rest.append(op)
            later.update(v.name for v in op.results)
    if any(_reads([op]) & later for op in loops):
        return None
    return pre, rest



class _Builder:
    """Appends ops with fresh names (``names``) to ``ops``."""

    def __init__(self, names: FreshNames, ops: list[Op]):
        self.names, self.ops = names, ops

    def op(self, name: str, operands: list[Value], ty, attrs: dict | None = None, base: str = "s",
           regions: list[Region] | None = None) -> Value:
        v = Value(self.names.fresh(base), ty)
        self.ops.append(Op(name, list(operands), [v], dict(attrs or {}), list(regions or [])))
        return v

    def effect(self, name: str, operands: list[Value], attrs: dict | None = None) -> None:
        self.ops.append(Op(name, list(operands), [], dict(attrs or {})))

    def launch(self, e: LaunchExpr, base: str = "s") -> Value:
        return self.op("launch", [], INDEX, {"expr": e}, base)

    def const(self, value, ty, base: str = "c") -> Value:
        return self.op("const", [], ty, {"value": value}, base)

    def splat(self, v: Value, lanes: int) -> Value:
        return self.op("broadcast", [v], FragmentType(v.type.dtype, (Const(lanes),)), {"dims": ()}, v.name)


def _frag(dtype: str, lanes: int) -> FragmentType:
    return FragmentType(dtype, (Const(lanes),))


def _lift_member(nest: _Nest, b: _Builder, coords: dict[str, Value], ok: Value, abi: dict[str, AbiArg],
                 lanes: int) -> Value | None:
    """The member over a fragment of ``lanes`` members whose indices are ``coords`` (iv name -> index fragment),
    lanes where ``ok`` is false loading nothing; None when an op does not lift."""
    lifted: dict[str, Value] = dict(coords)
    scalar: dict[str, Value] = {}

    def arg(v: Value, want_frag: bool) -> Value:
        if v.name in lifted:
            return lifted[v.name]
        v = scalar.get(v.name, v)
        return b.splat(v, lanes) if want_frag else v

    for op in nest.member_ops:
        if op.regions or len(op.results) != 1:
            return None
        deps = any(v.name in lifted for v in op.operands)
        cat = SPECS[op.name].category if op.name in SPECS else None
        if not deps:
            if cat not in _LIFTABLE + ("const",) and op.name not in ("load", "gather"):
                return None
            if op.name in ("load", "gather") and getattr(abi.get(op.operands[0].name), "access", None) != "read":
                return None                # a view the kernel writes: its reads keep their program order
            r = Value(b.names.fresh(op.results[0].name), op.results[0].type)
            b.ops.append(replace(op, operands=[scalar.get(v.name, v) for v in op.operands], results=[r]))
            scalar[op.results[0].name] = r
            continue
        rt = op.results[0].type
        if not isinstance(rt, ScalarType):
            return None
        ft = _frag(rt.dtype, lanes)
        if cat in _LIFTABLE:
            if op.name in _INT_DIVISIONS and not dtypes.is_float(rt.dtype):
                return None
            r = Value(b.names.fresh(op.results[0].name), ft)
            b.ops.append(replace(op, operands=[arg(v, True) for v in op.operands], results=[r]))
        elif op.name in ("load", "gather"):
            view = abi.get(op.operands[0].name)
            if view is None or view.access != "read":
                return None
            valid = bool(op.attrs.get("valid", False))
            operands = [op.operands[0]] + [arg(v, True) for v in op.operands[1:len(op.operands) - int(valid)]]
            if valid:
                old = arg(op.operands[-1], True)
                operands.append(b.op("and", [ok, old], _frag("i1", lanes), base="ok"))
            else:
                operands.append(ok)
            attrs = dict(op.attrs, valid=True)
            attrs.setdefault("fill", 0 if not dtypes.is_float(rt.dtype) else 0.0)
            r = Value(b.names.fresh(op.results[0].name), ft)
            b.ops.append(replace(op, operands=operands, results=[r], attrs=attrs))
        else:
            return None
        lifted[op.results[0].name] = r
    if nest.member.name in lifted:
        return lifted[nest.member.name]
    return b.splat(scalar.get(nest.member.name, nest.member), lanes)


def _group(kernel: Kernel, si: int) -> tuple[int, Op, Region] | None:
    """(body position, op, region) of segment ``si``'s execution group."""
    gi = next((i for i, op in enumerate(kernel.body.ops)
               if op.name == "execution_group" and op.attrs.get("segment") == si), None)
    return None if gi is None else (gi, kernel.body.ops[gi], kernel.body.ops[gi].regions[0])


class _PrivateViews:
    """The kernel's ABI with compiler-private views appended (SPEC IR-2 workspaces), each named uniquely."""

    def __init__(self, kernel: Kernel):
        self.abi = list(kernel.abi)
        self._names = {a.name for a in kernel.abi}

    def add(self, base: str, ty: ViewType) -> str:
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        self.abi.append(AbiArg(Value(name, ty), "readwrite", private=True))
        return name


def _split_segment(kernel: Kernel, si: int, names: FreshNames) -> Kernel | None:
    body = kernel.body
    found = _group(kernel, si)
    if found is None:
        return None
    gi, group, region = found
    defs = _defs(body, {})
    abi = {a.name: a for a in kernel.abi}
    nests = [n for n in (_nest(op, defs) for op in region.ops) if n is not None]
    if not nests:
        return None
    # pure ops that read no nest result run first (the nests may read them); the others run in the last program
    parts = _partition(region, [n.outer for n in nests], ("const",) + _LIFTABLE)
    if parts is None:
        return None
    pre, rest = parts
    if region.args:                      # a one-program segment with extents [1, ...]: left as it is
        return None
    lanes = LANES
    b_out: list[Op] = list(pre)
    b = _Builder(names, b_out)
    # the segment's program count: the largest nest decides (each nest is split the same way)
    counts = [_product([BinOp("-", ub, lb) for lb, ub in n.bounds]) for n in nests]
    biggest = counts[0]
    for c in counts[1:]:
        biggest = le_max(biggest, c)
    # not simplified: the simplifier takes shape symbols as positive, and an empty input still needs its program
    programs = le_max(Const(1), simplify(le_min(ceil_div(biggest, lanes * MIN_TILES), Const(MAX_PROGRAMS))))
    local = Value(names.fresh("p"), INDEX)  # the new segment's coordinate: the program's chunk
    abi_out = _PrivateViews(kernel)
    partials: list[tuple[_Nest, Value, Value]] = []

    for n, count in zip(nests, counts):
        part = _partial(n, count, programs, local, b, abi, lanes)
        if part is None:
            return None
        ws_name = abi_out.add(f"partials{si}", ViewType(n.dtype, (programs,)))
        ws = b.op("alloc", [], BufferType(n.dtype, (programs,), "workspace"),
                  {"arg": ws_name, "init": "first_write"}, "ws")
        b.effect("buffer_store", [ws, local, part])
        partials.append((n, ws, part))
    ctr_name = abi_out.add(f"tickets{si}", ViewType("i32", (Const(1),)))
    ctr = b.op("alloc", [], BufferType("i32", (Const(1),), "workspace"), {"arg": ctr_name, "init": 0}, "tickets")
    zero = b.const(0, INDEX, "zero")
    one = b.const(1, ScalarType("i32"), "one")
    ticket = b.op("atomic_rmw", [ctr, zero, one], ScalarType("i32"),
                  {"kind": "add", "order": "acq_rel", "domain": "device"}, "ticket")
    p_last = b.launch(BinOp("-", programs, Const(1)), "last_program")
    p_last32 = b.op("cast", [p_last], ScalarType("i32"), base="last_program")
    is_last = b.op("cmp", [ticket, p_last32], ScalarType("i1"), {"pred": "eq"}, "is_last")
    # the last program: every nest's total, then the group's other ops on the totals
    then_ops: list[Op] = []
    tb = _Builder(names, then_ops)
    totals: dict[str, Value] = {}
    for n, ws, _ in partials:
        r = tb.op("range", [], _frag("index", lanes), {}, "r")
        np_ = tb.splat(tb.launch(programs, "programs"), lanes)
        okp = tb.op("cmp", [r, np_], _frag("i1", lanes), {"pred": "lt"}, "ok")
        ident = _identity(n.combine, n.dtype)
        # plain reads: the ticket's acq_rel draw orders them after every program's partial store (docs/gpu_ir.md)
        w = tb.op("buffer_load", [ws, r, okp], _frag(n.dtype, lanes), {"valid": True, "fill": ident}, "partials")
        tot = tb.op("reduce", [w], n.outer.results[0].type,
                    {"axes": (0,), "combine": n.combine, "identity": (ident,)}, "total")
        tot = tb.op(n.combine, [n.outer.operands[3], tot], n.outer.results[0].type, base="total")
        totals[n.outer.results[0].name] = tot
    for op in rest:
        then_ops.append(_reading_totals(op, totals, names))
    then_ops.append(Op("yield", [], [], {}))
    b.ops.append(Op("if", [is_last], [], {}, [Region([], then_ops), Region([], [Op("yield", [], [], {})])]))
    b.ops.append(region.ops[-1])
    new_group = replace(group, regions=[Region([local], b_out)])
    segs = list(kernel.space.segments)
    segs[si] = Segment((programs,), "row_major")
    ops = list(body.ops)
    ops[gi] = new_group
    args = [a.value for a in abi_out.abi] + [body.args[-1]]   # the body's arguments: the ABI values, then pid
    return replace(kernel, abi=abi_out.abi, space=replace(kernel.space, segments=tuple(segs)), body=Region(args, ops))


def _product(items: list[LaunchExpr]) -> LaunchExpr:
    out: LaunchExpr = Const(1)
    for e in items:
        out = BinOp("*", out, e)
    return simplify(out)


def _partial(n: _Nest, count: LaunchExpr, programs: LaunchExpr, p: Value, b: _Builder, abi: dict[str, AbiArg],
             lanes: int) -> Value | None:
    """This program's partial of nest ``n``: its chunk of the flat member range, ``lanes`` members per step."""
    chunk = BinOp("*", ceil_div(ceil_div(count, programs), lanes), Const(lanes))   # programs >= 1
    c = b.launch(chunk, "chunk")
    total = b.launch(count, "members")
    lo = b.op("mul", [p, c], INDEX, base="lo")
    hi0 = b.op("add", [lo, c], INDEX, base="hi")
    hi = b.op("min", [hi0, total], INDEX, base="hi")
    step = b.const(lanes, INDEX, "lanes")
    dt = n.dtype
    ident = _identity(n.combine, dt)
    acc0 = b.const(ident, _frag(dt, lanes), "acc")
    q0 = Value(b.names.fresh("q0"), INDEX)
    acc = Value(b.names.fresh("acc"), _frag(dt, lanes))
    body_ops: list[Op] = []
    lb_ = _Builder(b.names, body_ops)
    r = lb_.op("range", [], _frag("index", lanes), {}, "r")
    q = lb_.op("add", [lb_.splat(q0, lanes), r], _frag("index", lanes), base="q")
    ok = lb_.op("cmp", [q, lb_.splat(hi, lanes)], _frag("i1", lanes), {"pred": "lt"}, "ok")
    # decode the nest's indices from q (row-major over the extents; the outermost needs no mod)
    coords: dict[str, Value] = {}
    stride: LaunchExpr = Const(1)
    for depth in range(len(n.loops) - 1, -1, -1):
        lb, ub = n.bounds[depth]
        ext = simplify(BinOp("-", ub, lb))
        idx = q
        if stride != Const(1):
            idx = lb_.op("div", [idx, lb_.splat(lb_.launch(stride, "stride"), lanes)], _frag("index", lanes),
                         base="q")
        if depth > 0:
            idx = lb_.op("rem", [idx, lb_.splat(lb_.launch(ext, "extent"), lanes)], _frag("index", lanes),
                         base="q")
        if lb != Const(0):
            idx = lb_.op("add", [idx, lb_.splat(lb_.launch(lb, "lb"), lanes)], _frag("index", lanes), base="q")
        coords[n.ivs[depth].name] = idx
        stride = simplify(BinOp("*", stride, ext))
    x = _lift_member(n, lb_, coords, ok, abi, lanes)
    if x is None:
        return None
    x = lb_.op("select", [ok, x, lb_.const(ident, _frag(dt, lanes), "identity")], _frag(dt, lanes), base="member")
    nxt = lb_.op(n.combine, [acc, x], _frag(dt, lanes), base="acc")
    body_ops.append(Op("yield", [nxt], [], {}))
    loop_res = Value(b.names.fresh("acc"), _frag(dt, lanes))
    b.ops.append(Op("for", [lo, hi, step, acc0], [loop_res], {"reduce": n.combine}, [Region([q0, acc], body_ops)]))
    return b.op("reduce", [loop_res], ScalarType(dt),
                {"axes": (0,), "combine": n.combine, "identity": (ident,)}, "partial")


# ------------------------------------------------------------------------------------------ the outer split

@dataclass
class _Chain:
    """A reduction chain: an outer ``for`` whose carried value is combined with ``combine`` over its iterations
    (a ``reduce``-marked loop, or a loop threading its carry through such a chain in its body)."""

    outer: Op
    combine: str
    bounds: tuple[LaunchExpr, LaunchExpr, int]       # lb, ub, step


_WRITES = ("store", "scatter", "scatter_reduce", "atomic_rmw", "atomic_cas", "atomic_store", "buffer_store",
           "alloc")


def _chain(op: Op, defs: dict[str, Op], carried_in: Value | None = None) -> _Chain | None:
    bounds = _one_carry_loop(op, defs, carried_in)
    if bounds is None:
        return None
    lb, ub, step = bounds
    if any(o.name in _WRITES for o in _walk(op.regions[0].ops)):
        return None
    comb = op.attrs.get("reduce")
    if comb in COMBINERS:
        return _Chain(op, comb, (lb, ub, int(step.value)))
    body = op.regions[0]
    carried = body.args[1]
    last = body.ops[-1]
    if last.name != "yield" or len(last.operands) != 1:
        return None
    inner = defs.get(last.operands[0].name)
    if inner is None or not any(o is inner for o in body.ops):
        return None
    others = [o for o in body.ops[:-1] if o is not inner]
    if any(carried.name in {v.name for v in o.operands} for o in _walk(others)):
        return None
    sub = _chain(inner, defs, carried)
    return None if sub is None else _Chain(op, sub.combine, (lb, ub, int(step.value)))


def _lane_coords(b: _Builder, t) -> list[Value]:
    """The element coordinates of a fragment-typed carry ``t`` (one index fragment of ``t``'s shape per axis: a
    range along the axis, broadcast over the others); none for a scalar."""
    if not isinstance(t, FragmentType):
        return []
    shape, axes = tuple(t.shape), tuple(t.axes)
    if len(shape) == 1:
        return [b.op("range", [], FragmentType("index", shape, axes), {}, "r")]
    out = []
    for d, (ext, ax) in enumerate(zip(shape, axes)):
        r = b.op("range", [], FragmentType("index", (ext,), (ax,)), {}, "r")
        out.append(b.op("broadcast", [r], FragmentType("index", shape, axes), {"dims": (d,)}, "r"))
    return out


def _walk(ops: list[Op]):
    for o in ops:
        yield o
        for r in o.regions:
            yield from _walk(r.ops)


def _split_outer(kernel: Kernel, si: int, names: FreshNames, chunks: int) -> Kernel | None:
    """The group of segment ``si`` with a new last program axis of ``chunks`` programs: each chunk runs its share of
    every top-level reduction chain's outer loop from the identity and stores the partial into a workspace
    ``[K, chunks, ...]`` (``K`` the segment's programs); the last of a segment program's chunks to draw a ticket
    from its counter element combines the partials in chunk order and runs the group's other ops."""
    body = kernel.body
    found = _group(kernel, si)
    if found is None:
        return None
    gi, group, region = found
    seg = kernel.space.segments[si]
    if seg.order != "row_major" or len(region.args) != len(seg.extents):
        return None
    defs = _defs(body, {})
    chains = [c for c in (_chain(op, defs) for op in region.ops) if c is not None]
    if not chains:
        return None
    parts = _partition(region, [c.outer for c in chains], ("const", "shape") + _LIFTABLE)
    if parts is None:
        return None
    pre, rest = parts
    out: list[Op] = list(pre)
    b = _Builder(names, out)
    s_arg = Value(names.fresh("chunk"), INDEX)
    kept = list(region.args)
    # the segment program's linear index (the counter element and the workspace row)
    if kept:
        k_lin = kept[0]
        for arg, ext in zip(kept[1:], seg.extents[1:]):
            k_lin = b.op("add", [b.op("mul", [k_lin, b.launch(ext, "extent")], INDEX, base="k"), arg], INDEX,
                         base="k")
    else:
        k_lin = b.const(0, INDEX, "k")
    n_kept = _product(list(seg.extents))
    abi_out = _PrivateViews(kernel)

    partials = []
    for c in region.ops[:-1]:
        chain = next((ch for ch in chains if ch.outer is c), None)
        if chain is None:
            continue
        lb, ub, step = chain.bounds
        t = c.results[0].type
        ident = _identity(chain.combine, t.dtype)
        size = BinOp("*", ceil_div(ceil_div(BinOp("-", ub, lb), Const(chunks)), Const(step)), Const(step))
        lo = b.op("add", [b.launch(lb, "lb"), b.op("mul", [s_arg, b.launch(size, "chunk")], INDEX, base="lo")],
                  INDEX, base="lo")
        hi = b.op("min", [b.op("add", [lo, b.launch(size, "chunk")], INDEX, base="hi"), b.launch(ub, "ub")], INDEX,
                  base="hi")
        init = b.const(ident, t, "identity")
        part = Value(names.fresh(c.results[0].name), t)
        b.ops.append(replace(c, operands=[lo, hi, c.operands[2], init], results=[part]))
        shape = tuple(t.shape) if isinstance(t, FragmentType) else ()
        ws_name = abi_out.add(f"partials{si}", ViewType(t.dtype, (n_kept, Const(chunks)) + shape))
        ws = b.op("alloc", [], BufferType(t.dtype, (n_kept, Const(chunks)) + shape, "workspace"),
                  {"arg": ws_name, "init": "first_write"}, "ws")
        lanes = _lane_coords(b, t)
        b.effect("buffer_store", [ws, k_lin, s_arg] + lanes + [part])
        partials.append((c, chain, ws, lanes))
    ctr_name = abi_out.add(f"tickets{si}", ViewType("i32", (n_kept,)))
    ctr = b.op("alloc", [], BufferType("i32", (n_kept,), "workspace"), {"arg": ctr_name, "init": 0}, "tickets")
    one = b.const(1, ScalarType("i32"), "one")
    ticket = b.op("atomic_rmw", [ctr, k_lin, one], ScalarType("i32"),
                  {"kind": "add", "order": "acq_rel", "domain": "device"}, "ticket")
    last = b.const(chunks - 1, ScalarType("i32"), "last_chunk")
    is_last = b.op("cmp", [ticket, last], ScalarType("i1"), {"pred": "eq"}, "is_last")
    then_ops: list[Op] = []
    tb = _Builder(names, then_ops)
    totals: dict[str, Value] = {}
    zero = tb.const(0, INDEX, "zero")
    n_chunks = tb.const(chunks, INDEX, "chunks")
    one_i = tb.const(1, INDEX, "one")
    for c, chain, ws, lanes in partials:
        t = c.results[0].type
        j = Value(names.fresh("j"), INDEX)
        acc = Value(names.fresh("acc"), t)
        fold: list[Op] = []
        fb = _Builder(names, fold)
        w = fb.op("buffer_load", [ws, k_lin, j] + lanes, t, {}, "partial")      # ordered by the ticket (above)
        nxt = fb.op(chain.combine, [acc, w], t, base="acc")
        fold.append(Op("yield", [nxt], [], {}))
        tot = Value(names.fresh("total"), t)
        then_ops.append(Op("for", [zero, n_chunks, one_i, c.operands[3]], [tot], {}, [Region([j, acc], fold)]))
        totals[c.results[0].name] = tot
    for op in rest:
        then_ops.append(_reading_totals(op, totals, names))
    then_ops.append(Op("yield", [], [], {}))
    b.ops.append(Op("if", [is_last], [], {}, [Region([], then_ops), Region([], [Op("yield", [], [], {})])]))
    b.ops.append(region.ops[-1])
    segs = list(kernel.space.segments)
    segs[si] = replace(seg, extents=tuple(seg.extents) + (Const(chunks),))
    ops = list(body.ops)
    ops[gi] = replace(group, regions=[Region(kept + [s_arg], out)])
    args = [a.value for a in abi_out.abi] + [body.args[-1]]
    return replace(kernel, abi=abi_out.abi, space=replace(kernel.space, segments=tuple(segs)), body=Region(args, ops))


__all__ = ["split_scalar_reductions", "LANES", "MIN_TILES", "MAX_PROGRAMS", "CHUNK_COUNTS"]
