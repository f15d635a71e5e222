"""Programs whose loops run longer at larger values of one coordinate start first, in L2-sized groups of rows
(program-order swizzling; SPEC PASS-3.2 "mapping": program order is a mapping choice, IR-3 "grouped" order).

Why: after range narrowing, a causal attention program's key loop stops at its query tile's diagonal, so the
program for query tile ``q`` runs ``q + 1`` key tiles. Launched row-major (query tiles fastest), the last wave holds
long programs next to idle SMs; started longest-first, the short ones fill the tail (longest-processing-time
scheduling). Taking the query tile outermost across all heads, though, makes every concurrent program read a
different head's keys and values: at S = 4096 that working set exceeds L2 and a d128 program ran 12% slower (H200,
2026-11-30, docs/perf.md "program order"). So the rows (the axes before the query-tile axis: batch and head) go in
groups of ``G`` whose streamed operands fill a quarter of L2, and inside a group the query tiles run from the last
down, the group's rows fastest. Measured on the H200 with the same programs otherwise (docs/perf.md): causal S1024
0.0936 -> 0.082 ms (best group sizes 32-64 = 8-16 MB of keys and values), S4096 d64 0.854 -> 0.807 ms (size symbol)
and 0.800 -> 0.768 ms (literal head dim; groups of 8-16 = 8-16 MB), d128 within 1% (groups of 4-8).

Declaration (SPEC PASS-1):

- Reads: the program space (exactly one ``row_major`` segment of rank >= 2, no grid-stride launch); the ``for`` ops
  inside its execution group whose body holds a ``contract`` (the matrix-unit loops whose trip counts make the
  work; a measured restriction, not a legality fact: taking every loop also reorders row scans over several column
  tiles, whose later tiles re-read the earlier ones of the same row, and those ran 2.27x slower on the H200,
  cumsum and cumprod at 4096 x 65536, the same at one tile per row; 2026-12-03, ``bench/scan_order_ab.py``,
  ``bench/results/h200_scan_order_2026-12-03/``. The reuse model below counts only the rows' data that does not
  depend on ``a``, which is right for attention's keys and values, not for a scan's prefix); how their bounds move
  with each segment coordinate (index arithmetic over the coordinates: ``add``,
  ``sub``, ``mul``/``floordiv`` by constants or physical parameters, ``min``, ``max``, ``cast``; launch values and
  constants are fixed); the views those loops read, with their shapes and dtypes; the target's L2 size. Runs after
  binding and the range passes (``optimizer.optimize``), with the ``mapping`` group in the rulebooks.
- Legality: one coordinate axis ``a >= 1`` along which at least one such loop's trip count grows (upper bound
  non-decreasing, lower bound non-increasing, one of them moving) and none shrinks or moves in a way the index
  arithmetic does not show; no atomic access or ``scatter_reduce`` in the kernel (their order is observable in
  floating-point results).
- Rewrites: the segment's order becomes ``grouped(G, axis a, descending)``: rows = the axes before ``a``, groups of
  ``G`` rows, the largest power of two <= ``(l2_bytes / 4) // row_bytes`` (in KiB; at least 1, at most 4096), where
  ``row_bytes`` is one row's share of the views the loops read at coordinates that depend on a row axis and not on
  ``a`` (a launch expression, evaluated per launch).
- Preserves: every program's coordinates and body (the order is a bijection on the same coordinate set, programs
  do not communicate), the ABI, values and effects.
- Invalidates: nothing the later passes read (serializers print the decode from the segment).
- Verifier: the shared GPU verifier on the bound kernel (``optimizer.optimize``).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Kernel, Op, Region, walk
from intent_eqsat.ir.launch import BinOp, Const, LaunchExpr, Select, Sym, product, simplify
from intent_eqsat.ir.loop_rewrite import defining_ops
from intent_eqsat.ir.single_trip import constant_ints
from intent_eqsat.ir.spec import ATOMIC_ACCESSES, READ_ACCESSES
from intent_eqsat.ir.types import ViewType

#: the share of L2 one group's streamed operands may fill (H200 sweep, 2026-11-30: the best group sizes at S1024,
#: S4096 d64 and d128 all held 8-16 MB of keys and values, 50 MB of L2)
L2_SHARE = 4

#: the largest group size (rows) the order takes: past it, groups are as good as one
MAX_GROUP = 1 << 12

#: how a value moves with one coordinate: +1 non-decreasing, -1 non-increasing, None in a way not tracked;
#: an axis absent from a trend does not move the value
Trend = dict[int, Optional[int]]


def order_by_work(kernel: Kernel, l2_bytes: int, params: frozenset[str] = frozenset()) -> Kernel:
    """``kernel`` with its segment in grouped, descending order along the axis its loops grow with (the module
    docstring); unchanged when nothing grows or the conditions do not hold. ``params``: the module's physical
    parameters, positive where they scale a coordinate (the optimizer runs this with them bound to literals)."""
    space = kernel.space
    if len(space.segments) != 1 or space.launch is not None:
        return kernel
    seg = space.segments[0]
    if seg.order != "row_major" or len(seg.extents) < 2:
        return kernel
    if any(op.name in ATOMIC_ACCESSES or op.name == "scatter_reduce" for op in walk(kernel.body)):
        return kernel
    group = next((op for op in kernel.body.ops if op.name == "execution_group"), None)
    if group is None:
        return kernel
    coords = [a.name for a in group.regions[0].args]
    loops = [op for op in walk(group.regions[0])
             if op.name == "for" and any(o.name == "contract" for o in walk(op.regions[0]))]
    defs = defining_ops(kernel)
    trends = _Trends(defs, coords, {a.name for a in kernel.abi}, constant_ints(kernel), params)
    axis = growing_axis([(trends.of(op.operands[0].name), trends.of(op.operands[1].name)) for op in loops],
                        len(coords))
    if axis is None or axis < 1:
        return kernel
    rows = product(seg.extents[:axis])
    per_row = _row_bytes(kernel, loops, _Dependence(defs, coords), axis, seg.extents[:axis])
    # in KiB: the group size's bound (what ir.index_bounds multiplies by the column extent) stays small
    budget = Const(l2_bytes // L2_SHARE // 1024)
    size = rows if per_row is None else \
        floor_power_of_two(BinOp("//", budget, BinOp("max", Const(1), per_row // Const(1024))))
    ordered = replace(seg, order="grouped", group_size=size, group_axis=axis, descending=True)
    return replace(kernel, space=replace(space, segments=(ordered,)))


def floor_power_of_two(e: LaunchExpr, cap: int = MAX_GROUP) -> LaunchExpr:
    """The largest power of two <= ``e`` (1 when ``e < 2``, ``cap`` at most): a select ladder, LaunchExprs have no
    bit operations. Groups of a power of two rows tile the usual batch x head counts exactly; a group size that does
    not (H200, causal S1024: 50 rows 0.0856 ms, 64 rows 0.0816 ms, 32 rows 0.0827 ms; S4096 d64: 12 rows 0.838 ms,
    16 rows 0.813 ms, 8 rows 0.814 ms) leaves a partial group and ran slower."""
    out: LaunchExpr = Const(1)
    power = 2
    while power <= cap:
        out = Select(BinOp(">=", e, Const(power)), Const(power), out)
        power *= 2
    return out


def growing_axis(bounds: list[tuple[Trend, Trend]], rank: int) -> int | None:
    """The one coordinate axis along which some loop's trip count grows and none shrinks or moves untracked (None:
    no such axis, or more than one)."""
    found = []
    for axis in range(rank):
        kinds = {_trip_trend(lb.get(axis, 0), ub.get(axis, 0)) for lb, ub in bounds}
        if "grows" in kinds and kinds <= {"grows", "fixed", "shifts"}:
            found.append(axis)
    return found[0] if len(found) == 1 else None


def _trip_trend(lb: int | None, ub: int | None) -> str:
    if lb is None or ub is None:
        return "untracked"
    if lb == ub:
        return "fixed" if lb == 0 else "shifts"      # both bounds move the same way: the trip count is not shown
    return "grows" if ub - lb > 0 else "shrinks"


class _Trends:
    """How index values move with each segment coordinate (the module docstring's index arithmetic). ABI values
    are fixed for a launch; another op's region argument (an induction variable, a carried value) is untracked."""

    def __init__(self, defs: dict[str, Op], coords: list[str], fixed: set[str], constants: dict[str, int],
                 positive: frozenset[str]):
        self.defs, self.rank, self.constants, self.positive = defs, len(coords), constants, positive
        self.memo: dict[str, Trend] = {c: {i: 1} for i, c in enumerate(coords)}
        self.memo.update({name: {} for name in fixed})

    def of(self, name: str) -> Trend:
        if name not in self.memo:
            op = self.defs.get(name)
            self.memo[name] = self._op(op) if op is not None else _untracked(set(range(self.rank)))
        return self.memo[name]

    def _op(self, op: Op) -> Trend:
        if op.name in ("const", "launch"):
            return {}
        args = [self.of(v.name) for v in op.operands]
        if op.name in ("add", "min", "max") and len(args) == 2:
            return _merge(args[0], args[1])
        if op.name == "sub" and len(args) == 2:
            return _merge(args[0], _scale(args[1], -1))
        if op.name == "cast" and len(args) == 1:
            return args[0]
        if op.name in ("mul", "floordiv") and len(args) == 2:
            c = self._sign(op.operands[1].name)
            if op.name == "mul" and c is None:
                c, args = self._sign(op.operands[0].name), args[::-1]
            if c is not None and (c > 0 or op.name == "mul"):
                return _scale(args[0], c)
        moved = set().union(*args) if args else set()
        return _untracked(moved) if moved else {}

    def _sign(self, name: str) -> int | None:
        """The sign of a launch-fixed factor: a constant's, +1 for a physical parameter (tile sizes are >= 1)."""
        if name in self.constants:
            c = self.constants[name]
            return (c > 0) - (c < 0)
        op = self.defs.get(name)
        expr = op.attrs.get("expr") if op is not None and op.name == "launch" else None
        return 1 if isinstance(expr, Sym) and expr.name in self.positive else None

def _merge(a: Trend, b: Trend) -> Trend:
    out: Trend = {}
    for axis in set(a) | set(b):
        x, y = a.get(axis, 0), b.get(axis, 0)
        out[axis] = None if x is None or y is None or x * y < 0 else (x or y)
    return {k: v for k, v in out.items() if v != 0}


def _scale(a: Trend, sign: int) -> Trend:
    return {} if sign == 0 else {k: (None if v is None else v * sign) for k, v in a.items()}


def _untracked(axes: set) -> Trend:
    return {axis: None for axis in axes}


class _Dependence:
    """The segment coordinates each value depends on, through its operands. A loop's induction variable takes its
    lower bound's and step's (the addresses it visits start and stride there; the upper bound only stops it, so a
    key loop running further for a later query tile still reads the same keys per iteration); another region
    argument or an op result with regions takes everything the op's operands and its regions' yields take."""

    def __init__(self, defs: dict[str, Op], coords: list[str]):
        self.defs, self.memo = defs, {c: frozenset({i}) for i, c in enumerate(coords)}
        self.owner: dict[str, tuple[Op, int]] = {}
        for op in defs.values():
            for region in op.regions:
                for i, a in enumerate(region.args):
                    self.owner.setdefault(a.name, (op, i))

    def of(self, name: str) -> frozenset:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = frozenset()          # a carried value reaching itself adds nothing
        out: frozenset = frozenset()
        if name in self.owner:
            op, index = self.owner[name]
            sources = [op.operands[0], op.operands[2]] if op.name == "for" and index == 0 else list(op.operands)
            out = out.union(*(self.of(v.name) for v in sources))
            if not (op.name == "for" and index == 0):
                out = out.union(*self._yielded(op))
        elif name in self.defs:
            op = self.defs[name]
            out = out.union(*(self.of(v.name) for v in op.operands), *self._yielded(op))
        self.memo[name] = out
        return out

    def _yielded(self, op: Op) -> list[frozenset]:
        return [self.of(v.name) for region in op.regions for y in _yields(region) for v in y.operands]


def _yields(region: Region) -> list[Op]:
    return [op for op in region.ops if op.name == "yield"]


def _row_bytes(kernel: Kernel, loops: list[Op], deps: _Dependence, axis: int,
               row_extents: tuple[LaunchExpr, ...]) -> LaunchExpr | None:
    """One row's share of the views the loops read at coordinates that depend on a row axis and not on ``axis``, in
    bytes: a view whose leading extents are the row extents (attention's keys ``[Z, H, T, D]`` over rows ``[Z, H]``)
    holds ``product(the rest)`` elements per row; any other its elements over the row count (elements first, so the
    launch arithmetic stays within the index width the views' own offsets need). None: no such view."""
    views = {a.name: a.value.type for a in kernel.abi if isinstance(a.value.type, ViewType)}
    read: list[str] = []
    for loop in loops:
        for op in walk(loop.regions[0]):
            if op.name not in READ_ACCESSES or not op.operands or op.operands[0].name not in views:
                continue
            moved = frozenset().union(*(deps.of(v.name) for v in op.operands[1:]))
            if axis not in moved and any(a < axis for a in moved) and op.operands[0].name not in read:
                read.append(op.operands[0].name)
    total: LaunchExpr | None = None
    exact = True
    for name in read:
        vt = views[name]
        if tuple(vt.shape[:len(row_extents)]) == tuple(row_extents):
            elements = product(vt.shape[len(row_extents):])
        else:
            elements, exact = product(vt.shape) // BinOp("max", Const(1), product(row_extents)), False
        share = elements * Const(max(1, dtypes.BITS[vt.dtype] // 8))
        total = share if total is None else total + share
    # a sum of products has no floor division: simplified exactly (4 * D * T for attention's keys and values)
    return simplify(total) if total is not None and exact else total
