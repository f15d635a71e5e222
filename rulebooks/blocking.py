"""Blocking of ownership (SPEC PASS-3.3): scalar ownership of a segment becomes fragment (tile) ownership.

Reads: the kernel's program space (one row-major segment), its execution group's region, the element types of
values, the attributes of a prefix loop's bounds and step (``IndexLeafAttr``), the dependency analysis
``patterns.Dep`` (which region arguments a loop reads). Tile sizes are the symbolic
parameters ``TILE_B0``/``TILE_B1``: the optimizer binds them after extraction from the target's candidate domain
(candidates at least as wide as the target's warp), by the cost model (``intent_eqsat.optimizer.tiles``).

Legality: one execution group whose effects are stores / unique scatters / scatter-reduces of values
made of element-wise ops, constants, launch values, loads and gathers (with or without validity) and pure ordered
loops carrying one non-index value whose bounds are uniform across the tile's lanes, or prefix loops (a KIR scan's
point loop): ``for k in [0, j + 1)`` (or ``[0, j)``, an exclusive scan) step 1 over a blocked coordinate ``j``
yielding ``c(carried, m(k))`` for a float combiner ``c`` in add, mul, max, min, with ``m`` independent of the
carried value (it must lift without it) and, lifted over the ownership tile, not varying along ``j`` (it reads the
point only through ``k``); or suffix loops (a reverse scan's point loop as construction builds it): ``for u in [0,
hi - j)`` (``[0, hi - (j + 1))``, exclusive) step 1 yielding ``c(m(hi - 1 - u), carried)``, ``hi`` uniform, under
the same conditions. Every construct without a lifting rule leaves its ``lift`` term
unresolved: the variant then has no finite-cost term and extraction keeps the unblocked program, so a rule never
produces a partial program.

Rewrites: the segment's last one or two axes ``E`` -- or, where the seeded fact ``ReuseAxis(segs, a)`` holds
(``reuse_axes``: one read reads axis ``a`` but neither of the last two, another reads the last axis but not ``a``),
axis ``a`` and the last one (``ownership_rank<r>_axes<a><r-1>``, issue 26 item 2: a convolution's output channels
with its columns) -- become ``ceil_div(E, T)``; their region arguments
become tile coordinates ``p*T + range(T)`` (fragment axes ``b0``, ``b1``); every value is re-typed over exactly
the tile axes it depends on (fragments carry their axis provenance), operands are broadcast to the union of their
operands' axes, and loads/gathers/stores/scatters get the tail validity ``coord < E`` of their axes (loads a fill).
A pure loop nested in another loop runs per lane of the whole tile when it reads an enclosing loop's argument
(``Dep``) or a blocked coordinate, else it is its own lifting (a statistic rematerialized inside a consumer: one
lifting per value, so ``remat``'s unions never merge a scalar with its per-lane copy); one at the top of the group
runs per lane only when it reads a blocked coordinate (``OwnMask``, a demand-driven analysis of the coordinates its term reads, a
region with statements counted as reading all): one that reads none (a BatchNorm channel statistic under a tile
of (h, w)) is its own lifting, one scalar loop broadcast where it is used, and is marked ``OwnStat`` with its parts
so the reduction group blocks its scalar reduction loops. In a rank-0 segment (a loss reduced to one number) a
reduction loop nested in another loop's member and started from a value (a cross-entropy's per-row max and sum) is
marked ``OwnStat`` too (``scalar_group_member_stat``). A loop's bounds, initial value and yield are lifted
(demanded) only once it is known to run per lane; its parts are read from one ``ForLoop`` row per loop e-node.
A prefix loop over the tile ``j in [j0, j0 + T)`` becomes ``c(for k in [0, j0): c(acc, m(k)), scan_c(m(j0 +
range(T))))``: the uniform prefix (marked ``reduce = c``, so the reduction group blocks it) combined with the
inclusive (exclusive) scan of the tile's own members along ``j``'s axis (SPEC PASS-4 "order-preserving
reassociation of scan": the same members in the same order, grouped once; a member past the segment's end reads
its fill and reaches only lanes past the end, which are not written). A suffix loop over the tile becomes ``c(for u
in [0, hi - j0 - T): c(acc, m(hi - 1 - u)), rscan_c(m(j0 + range(T)) where j < hi else identity))``: the uniform
suffix past the tile (marked ``reduce = c``, carried over the other ownership axes) combined with the reverse
inclusive (exclusive) tile scan; members past the end reach every earlier lane, so they are the identity.

Preserves: the value written to every element (each element still has exactly one writing lane computing the same
expression, in the same order inside its lane; a prefix loop's sum up to that regrouping); effect order; the ABI;
compile options.

Invalidates: program-space extents and coordinates, fragment shapes, access validity, footprint/occupancy facts.

Verifier: the shared GPU verifier after the group, with the tile parameters declared (tile grid covering the
segment with tail validity, fragment extents the declared parameters, accesses well-typed), and again after the
optimizer wrote the chosen binding in as literals.
"""
from __future__ import annotations

import itertools

from egglog import Bool, String, StringLike, eq, function, i64, i64Like, ne, relation, rewrite, rule, ruleset, \
    set_, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.terms import T as _Term, cons_list, list_items, t as _T
from intent_eqsat.rules.sorts import A, AMap, As, LE, LEs, Multi, Region, Regions, Seg, Segs, KernelT, Stmt, \
    Stmts, Strs, Ty, Tys, Val, Vals

#: the tile-size parameters blocking introduces (bound by the optimizer, see ``intent_eqsat.optimizer.tiles``)
TILE_PARAMS = ("TILE_B0", "TILE_B1")

GROUP = "blocking"
ORDER = 20
RULESET = ruleset(name=GROUP)

NBITS = 3                       # b0, b1: the blocked group axes; b2: a blocked reduction axis (rulebooks.reduction)
ALL_MASKS = range(1 << NBITS)

#: segment lists of scalar ownership (the optimizer marks the constructed kernel's): blocking applies once
Unblocked = relation("Unblocked", Segs)
#: ``ReuseAxis(segs, a)``: axis ``a`` of the segment list's one segment is worth a tile with the last axis
#: (``reuse_axes``, seeded)
ReuseAxis = relation("BlockReuseAxis", Segs, i64)
#: loop-carried types containing no ``index`` (index-typed carried values are not lifted)
NoIndexTys = relation("NoIndexTys", Tys)
#: an access's ``valid`` attribute (its operand layout depends on it)
HasValid = relation("HasValid", AMap, i64)
#: ``IndexLeafAttr(m, key, value)``: an attribute of the bound or step (``const``/``launch``) of a candidate prefix
#: loop. Derived for those maps only (``patterns.HasAttr`` walks every map of the e-graph, which cost blocking
#: ~15% more compile time when listed in its analyses)
IndexLeafAttr = relation("BlockIndexLeafAttr", AMap, String, A)
_LeafAttrWalk = relation("BlockLeafAttrWalk", AMap, AMap)
#: ``ScanIdentity(combiner, dtype, value)``: the combiners a prefix loop may be scanned with, and their identities
ScanIdentity = relation("BlockScanIdentity", String, String, A)
_SCAN_IDENTITY = {"add": "0.0", "mul": "1.0", "max": "-inf", "min": "inf"}

_ELEMENTWISE = {
    1: ("neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid",
        "floor", "ceil", "recip", "log1p", "expm1", "cast", "bitcast"),
    2: ("add", "sub", "mul", "div", "rem", "mod", "floordiv", "max", "min", "pow", "and", "or", "xor", "shl", "shr",
        "cmp"),
    3: ("select",),
}
_FILL_T = tuple((fdt, _T("AFloat", "0.0")) for fdt in ("f16", "bf16", "f32", "f64")) + \
    tuple((idt, _T("AInt", 0)) for idt in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")) + \
    (("i1", _T("ABool", 0)),)
INDEX = Ty.scalar("index")


class LiftCtx(__import__("egglog").Expr, egg_sort="IeLiftCtx"):
    """What lifting substitutes. ``own``: group axis ``i`` of the execution group becomes ``coords[i]`` (a tile
    coordinate fragment for a blocked axis, the uniform index for another); ``tails`` are the tail masks of b0, b1
    (b2 unused); ``tiles`` the tile sizes of b0, b1, b2 (1 when unused); ``full`` the mask of a written lane (all
    blocked axes)."""

    @classmethod
    def own(cls, coords: Vals, tails: Vals, tiles: LEs, full: i64Like) -> LiftCtx: ...

    @classmethod
    def red(cls, depth: i64Like, coord: Val, tail: Val, tiles: LEs) -> LiftCtx:
        """A reduction loop's members over a tile of its iterations (``rulebooks.reduction``): the loop's induction
        variable ``Arg(depth, 0)`` becomes ``coord`` (``k0 + range(TR)`` over axis ``b2``), ``tail`` its
        ``k < ub`` mask, ``tiles`` the sizes of b0, b1, b2."""

    @classmethod
    def red_in(cls, depth: i64Like, coord: Val, tail: Val, tiles: LEs, inner: i64Like, acc: Ty) -> LiftCtx:
        """Inside a reduction loop nested in a member lifted by ``red(depth, coord, tail, tiles)`` (e.g. a score
        that is itself a sum over ``d``): as ``red``; the nested loop's induction variable ``Arg(inner, 0)`` stays,
        its accumulator ``Arg(inner, 1)`` becomes of the widened type ``acc``."""

    @classmethod
    def scan(cls, depth: i64Like, coord: Val, tail: Val, tiles: LEs, bit: i64Like) -> LiftCtx:
        """A prefix loop's member over the tile of the blocked axis it scans (``lift_prefix_scan``): the loop's
        induction variable ``Arg(depth, 0)`` becomes that axis's tile coordinate ``coord`` (axis mask ``bit``),
        ``tail`` its in-segment mask; the member was lifted over the ownership tile first."""


@function
def lift(v: Val, c: LiftCtx) -> Val:
    """``v`` computed over the tile: a value typed over exactly the tile axes it depends on."""


#: a pure single-carry ``for`` loop and its parts (lb, ub, step, init, yield, attrs, body depth, iv type, dtype,
#: region attrs), one row per loop e-node, so the lifting rules join one row instead of the nested loop pattern
ForLoop = relation("BlockForLoop", Val, Val, Val, Val, Val, Val, AMap, i64, Ty, String, AMap)
#: a loop at the top of the execution group whose lifting is asked for, and the parts of it (demand of the
#: uniformity analysis below)
OwnWant = relation("BlockOwnWant", Val, LiftCtx)
OwnWantVals = relation("BlockOwnWantVals", Vals, LiftCtx)
OwnWantRegions = relation("BlockOwnWantRegions", Regions, LiftCtx)

#: ``OwnStat(v)``: ``v`` is, or is part of, a top-level loop that a tiled program computes once for all its lanes
#: (``lift_for_uniform``): the reduction group blocks its scalar reduction loops over lanes (``BLOCKED_CARRIES``)
OwnStat = relation("BlockOwnStat", Val)
OwnStatVals = relation("BlockOwnStatVals", Vals)
OwnStatRegions = relation("BlockOwnStatRegions", Regions)
#: ``InScalarGroup(v)``: ``v`` is computed by the one program of a rank-0 segment (a loss, a norm to a scalar)
InScalarGroup = relation("BlockInScalarGroup", Val)
InScalarGroupVals = relation("BlockInScalarGroupVals", Vals)
InScalarGroupRegions = relation("BlockInScalarGroupRegions", Regions)
InScalarGroupStmts = relation("BlockInScalarGroupStmts", Stmts)


@function(merge=lambda old, new: old | new)
def OwnMask(v: Val, c: LiftCtx) -> i64:
    """The tile axes of ownership context ``c`` that ``v`` depends on: the union of the masks of the blocked
    coordinates it reads (0: every lane computes the same value). A part the analysis does not follow (a region
    with statements, a statement's result) counts as every axis of ``c``."""


@function(merge=lambda old, new: old | new)
def OwnMaskVals(xs: Vals, c: LiftCtx) -> i64: ...


@function(merge=lambda old, new: old | new)
def OwnMaskRegions(rs: Regions, c: LiftCtx) -> i64: ...


@function(merge=lambda old, new: old)
def MaskOf(v: Val) -> i64:
    """Bitmask of the tile axes a value ranges over, read from its type (scalar: 0; ``frag<..> axes [b0, b2]``:
    0b101)."""


@function(merge=lambda old, new: old)
def AxesMask(axes: Strs) -> i64:
    """Bitmask of axis labels ``b0``, ``b1``, ``b2``."""


#: constant tables (seeded per kernel by ``seed``; the rules are parameterized by them instead of being generated
#: per op / mask / dtype, which keeps egglog's per-iteration cost down)
#: op names lifted element-wise
Elementwise = relation("Elementwise", String)
#: value reads lifted with tail validity (load, gather) and effects lifted per lane (store, scatter, scatter_reduce)
ReadOp = relation("BlockReadOp", String)
WriteOp = relation("BlockWriteOp", String)
#: the zero fill attribute of an element type
ZeroOf = relation("BlockZeroOf", String, A)
#: BcastDims(sub, mask, dims): a value over axes ``sub`` broadcast to axes ``mask`` takes ``dims``
BcastDims = relation("BlockBcastDims", i64, i64, A)


@function
def lift_list(xs: Vals, c: LiftCtx) -> Vals:
    """Every value of ``xs`` lifted (operand lists are lifted as a list, so a rule joins one list instead of one
    ``lift`` per operand: egglog's join cost grew with the product of the per-operand matches)."""


@function(merge=lambda old, new: old)
def MaskOfVals(xs: Vals) -> i64:
    """Union of the axis masks of a list's values."""


@function
def bcast_list(xs: Vals, to: i64Like, tiles: LEs) -> Vals:
    """Every value of ``xs`` broadcast to mask ``to``."""


@function
def snoc(xs: Vals, g: Val) -> Vals:
    """``xs`` with ``g`` appended (a validity operand added to an access)."""


@function
def guard_last(xs: Vals, g: Val, mask: i64Like, tiles: LEs) -> Vals:
    """``xs`` with its last value (an access's validity) and-ed with ``g`` over ``mask``."""


@function(merge=lambda old, new: old)
def DtypeOf(v: Val) -> String:
    """Element type of any value (read from its type)."""


@function
def frag_ty(dt: String, mask: i64Like, tiles: LEs) -> Ty:
    """The type over mask's axes: scalar for 0, else ``frag<dt, [T_b...]> axes [b...]``."""


@function
def bcast_to(x: Val, frm: i64Like, to: i64Like, tiles: LEs) -> Val:
    """``x`` (over mask ``frm``) broadcast to mask ``to`` (``frm`` must be a subset)."""


@function
def tail(mask: i64Like, c: LiftCtx) -> Val:
    """And of the tail masks of mask's axes, broadcast to mask."""


@function
def nth(vs: Vals, i: i64Like) -> Val: ...


@function
def ctx_tiles(c: LiftCtx) -> LEs:
    """The tile sizes (T_b0, T_b1, T_b2) of a lifting context."""


@function
def lift_stmts(s: Stmts, c: LiftCtx) -> Stmts: ...


@function
def mark_valid(m: AMap) -> AMap:
    """Attributes with ``valid = true``."""


@function
def mark_reduce(m: AMap, comb: StringLike) -> AMap:
    """``m`` with ``reduce = comb`` (appended: ``reduce`` sorts after every other key of a ``for``)."""


@function
def mark_valid_fill(m: AMap, fill: A) -> AMap:
    """Attributes with ``valid = true`` and a fill (an existing fill is kept)."""


# ------------------------------------------------------------------------------------------------ helpers

def _vals(*xs) -> Vals:
    out = Vals.nil()
    for x in reversed(xs):
        out = Vals.cons(x, out)
    return out


def _les(*xs) -> LEs:
    out = LEs.nil()
    for x in reversed(xs):
        out = LEs.cons(x, out)
    return out


def _amap(**kv) -> AMap:
    out = AMap.nil()
    for k in sorted(kv, reverse=True):
        out = AMap.cons(k, kv[k], out)
    return out


def _ints(xs) -> A:
    items = As.nil()
    for d in reversed(list(xs)):
        items = As.cons(A.int_(d), items)
    return A.list_(items)


def _bits(mask: int) -> list[int]:
    return [b for b in range(NBITS) if mask >> b & 1]


def _launch(e: LE) -> Val:
    return Val.op("launch", Vals.nil(), _amap(expr=A.le(e)), INDEX)


def _frag(dt, mask: int, tiles: list) -> Ty:
    """The fragment type over ``mask`` (Python-side twin of ``frag_ty`` for rule right-hand sides)."""
    bits = _bits(mask)
    axes = Strs.nil()
    for b in reversed(bits):
        axes = Strs.cons(f"b{b}", axes)
    return Ty.frag_axes(dt, _les(*[tiles[b] for b in bits]), axes)


def _line_coord(start: Val, tile: LE, bit: int, tiles: list) -> Val:
    """``start + range(T)`` as a fragment over axis ``bit``."""
    ty = _frag("index", 1 << bit, tiles)
    return Val.op("add", _vals(Val.op("broadcast", _vals(start), _amap(dims=_ints([])), ty),
                               Val.op("range", Vals.nil(), AMap.nil(), ty)), AMap.nil(), ty)


def _lt(x: Val, bound: Val, bit: int, tiles: list) -> Val:
    b = Val.op("broadcast", _vals(bound), _amap(dims=_ints([])), _frag("index", 1 << bit, tiles))
    return Val.op("cmp", _vals(x, b), _amap(pred=A.str_("lt")), _frag("i1", 1 << bit, tiles))


# -------------------------------------------------------------------------------------------- ownership

#: the largest segment rank ownership blocking takes (one rule per rank; 3-D convolutions' [N, C, D, H, W]
#: outputs are rank 5, issue 26 item 2); a higher-rank segment stays one program per element
MAX_RANK = 8


def _ownership_rules():
    kname = var("kname", String)
    argtys, gargs = vars_("argtys gargs", Tys)
    gstmts = var("gstmts", Stmts)
    gyields, yields = vars_("gyields yields", Vals)
    gattrs, gya, ya = vars_("gattrs gya ya", AMap)
    pid = var("pid", Val)
    seq = var("seq", i64)
    lau = var("lau", LE)
    es = list(vars_(" ".join(f"e{i}" for i in range(MAX_RANK)), LE))
    out = []
    for rank in range(1, MAX_RANK + 1):
        exts = es[:rank]
        group = Stmt.op(seq, "execution_group", _vals(pid), gattrs, Tys.nil(),
                        Regions.cons(Region.make(1, gargs, gstmts, gyields, gya), Regions.nil()))
        body = Region.make(0, argtys, Stmts.cons(group, Stmts.nil()), yields, ya)
        segs = Segs.cons(Seg.make(_les(*exts), "row_major", LE.none()), Segs.nil())
        kernel = KernelT.make(kname, segs, lau, body)
        for blocked in _blockings(rank):
            out.append(_ownership_rule(rank, blocked, kernel, segs, kname, lau, argtys, yields, ya, pid, seq, gattrs,
                                       gargs, gstmts, gyields, gya, exts))
    return out


def _blockings(rank: int) -> list[list[int]]:
    """The axis sets ownership blocking offers for a rank-``rank`` segment: the last two axes, and for rank >= 3
    each other axis with the last (issue 26 item 2: a convolution's ``Y[n, f, i, j]`` needs ``f`` and ``j`` in one
    tile for a contraction; the cost model chooses)."""
    if rank == 1:
        return [[0]]
    return [[rank - 2, rank - 1]] + [[a, rank - 1] for a in range(rank - 2)]


def _ownership_rule(rank, blocked, kernel, segs, kname, lau, argtys, yields, ya, pid, seq, gattrs, gargs, gstmts,
                    gyields, gya, exts):
    n_blocked = len(blocked)
    # symbolic tile sizes (physical parameters, SPEC PASS-3.3 "parameterized fragments"): the optimizer binds
    # them after extraction from the target's candidate domain (one lifted body serves every binding)
    tiles = [LE.sym(TILE_PARAMS[b]) for b in range(n_blocked)] + [LE.int_(1)] * (NBITS - n_blocked)
    coords, tails = [], []
    for axis in range(rank):
        if axis in blocked:
            bit = blocked.index(axis)
            start = Val.op("mul", _vals(Val.arg(1, axis, INDEX), _launch(tiles[bit])), AMap.nil(), INDEX)
            c = _line_coord(start, tiles[bit], bit, tiles)
            coords.append(c)
            tails.append(_lt(c, _launch(exts[axis]), bit, tiles))
        else:
            coords.append(Val.arg(1, axis, INDEX))
    while len(tails) < NBITS:
        tails.append(Val.arg(0, 0, INDEX))        # never used: no value has these bits in ownership lifting
    full = (1 << n_blocked) - 1
    ctx = LiftCtx.own(_vals(*coords), _vals(*tails), _les(*tiles), full)
    new_exts = [exts[a] if a not in blocked else LE.bin("ceil_div", exts[a], tiles[blocked.index(a)])
                for a in range(rank)]
    new_group = Stmt.op(seq, "execution_group", _vals(pid), gattrs, Tys.nil(),
                        Regions.cons(Region.make(1, gargs, lift_stmts(gstmts, ctx), gyields, gya), Regions.nil()))
    new_kernel = KernelT.make(kname, Segs.cons(Seg.make(_les(*new_exts), "row_major", LE.none()), Segs.nil()),
                              lau, Region.make(0, argtys, Stmts.cons(new_group, Stmts.nil()), yields, ya))
    default = blocked == list(range(rank - n_blocked, rank))
    name = f"blocking.ownership_rank{rank}" + ("" if default else "_axes" + "".join(map(str, blocked)))
    which = f"its last {n_blocked} axes" if default else f"its axes {blocked[0]} and {blocked[1]}"
    gate = [] if default else [ReuseAxis(segs, i64(blocked[0]))]
    return (name, rule(kernel, Unblocked(segs), *gate, name=name).then(union(kernel).with_(new_kernel)),
            f"one program per member of a rank-{rank} segment == one program per tile of {which}, with tail "
            f"validity")


# ------------------------------------------------------------------------------------------------- lift

def _lift_rules():
    """The structural support of the rewrites: lifting values and effects over a context (table-driven: one rule
    per construct shape, parameterized by seeded relations, because egglog's per-iteration cost grows with the
    number of rules times the table sizes)."""
    dt, key, nm = vars_("dt key nm", String)
    x, y, z, v, o, la, lb, lc, w = vars_("x y z v o la lb lc w", Val)
    xs, rest, coords, tails = vars_("xs rest coords tails", Vals)
    attrs, m = vars_("attrs m", AMap)
    a, vo, dims, zf = vars_("a vo dims zf", A)
    tiles = var("tiles", LEs)
    d, k, i, seq, ma, mb, mc, mo, full, sub, msk = vars_("d k i seq ma mb mc mo full sub msk", i64)

    t = var("t", Ty)
    s_, ss = vars_("s_ ss", Stmts)
    regs = var("regs", Regions)
    c = var("c", LiftCtx)
    tl = list(vars_(" ".join(f"t{b}" for b in range(NBITS)), LE))
    ax, ax2 = vars_("ax ax2", Strs)
    sh = var("sh", LEs)
    R = []

    def add(name, r, law):
        R.append((f"blocking.{name}", r, law))

    own = LiftCtx.own(coords, tails, tiles, full)
    add("nth0", rewrite(nth(Vals.cons(x, rest), 0)).to(x), "nth(x:rest, 0) = x")
    add("nth_succ", rewrite(nth(Vals.cons(x, rest), i)).to(nth(rest, i - 1), ne(i).to(i64(0))),
        "nth(x:rest, i) = nth(rest, i-1)")
    # contexts: every lifting rule reads the context's tile sizes through ctx_tiles
    add("ctx_tiles_own", rule(eq(c).to(own)).then(union(ctx_tiles(c)).with_(tiles)), "tiles of an ownership ctx")
    # types: element type and axis mask of every value, read from its type
    add("axes_nil", rule(eq(ax).to(Strs.nil())).then(set_(AxesMask(ax)).to(0)), "no axes")
    for b in range(NBITS):
        add(f"axes_b{b}", rule(eq(ax).to(Strs.cons(f"b{b}", ax2)), eq(mo).to(AxesMask(ax2))).then(
            set_(AxesMask(ax)).to(mo | (1 << b))), f"axis b{b}")
    for kind, pat in (("op", Val.op(nm, xs, attrs, t)), ("res", Val.res(var("mu", Multi), i, t)),
                      ("arg", Val.arg(d, k, t)), ("sres", Val.sres(var("st", Stmt), i, t))):
        add(f"type_scalar_{kind}", rule(eq(v).to(pat), eq(t).to(Ty.scalar(dt))).then(
            set_(DtypeOf(v)).to(dt), set_(MaskOf(v)).to(0)), "a scalar is uniform over the tile")
        add(f"type_frag_{kind}", rule(eq(v).to(pat), eq(t).to(Ty.frag_axes(dt, sh, ax)), eq(mo).to(AxesMask(ax)))
            .then(set_(DtypeOf(v)).to(dt), set_(MaskOf(v)).to(mo)), "a fragment ranges over its axes")
    # types over masks, broadcasts between masks (dims from the seeded BcastDims table), tail masks
    tiles_pat = _les(*tl)
    for mask in ALL_MASKS:
        add(f"frag_ty_{mask}", rewrite(frag_ty(dt, mask, tiles_pat)).to(
            Ty.scalar(dt) if mask == 0 else _frag(dt, mask, tl)), f"the type over axes {_bits(mask)}")
    add("bcast_same", rewrite(bcast_to(x, msk, msk, tiles)).to(x), "broadcast to itself")
    add("bcast", rule(eq(y).to(bcast_to(x, sub, msk, tiles)), BcastDims(sub, msk, dims), eq(dt).to(DtypeOf(x))).then(
        union(y).with_(Val.op("broadcast", _vals(x), AMap.cons("dims", dims, AMap.nil()), frag_ty(dt, msk, tiles)))),
        "broadcast from a subset of the tile axes")
    for mask in ALL_MASKS:
        if not mask:
            continue
        expr = None
        for b in _bits(mask):
            one = bcast_to(nth(tails, b), 1 << b, mask, tiles)
            expr = one if expr is None else Val.op("and", _vals(expr, one), AMap.nil(), frag_ty("i1", mask, tiles))
        add(f"tail_own_{mask}", rewrite(tail(mask, own)).to(expr), f"tail validity over axes {_bits(mask)}")
    # demand: lifting an op lifts its operands first
    add("demand_op", rule(eq(y).to(lift(Val.op(nm, xs, attrs, t), c))).then(lift_list(xs, c)), "lift operands")
    add("lift_list_nil", rewrite(lift_list(Vals.nil(), c)).to(Vals.nil()), "lift [] = []")
    add("lift_list_cons", rewrite(lift_list(Vals.cons(x, rest), c)).to(Vals.cons(lift(x, c), lift_list(rest, c))),
        "lift each operand")
    add("mask_vals_nil", rule(eq(xs).to(Vals.nil())).then(set_(MaskOfVals(xs)).to(0)), "no values, no axes")
    add("mask_vals_cons", rule(eq(xs).to(Vals.cons(x, rest)), eq(ma).to(MaskOf(x)), eq(mb).to(MaskOfVals(rest))).then(
        set_(MaskOfVals(xs)).to(ma | mb)), "axes of a list: the union of its values' axes")
    add("bcast_list_nil", rewrite(bcast_list(Vals.nil(), msk, tiles)).to(Vals.nil()), "broadcast [] = []")
    add("bcast_list_cons", rule(eq(xs).to(bcast_list(Vals.cons(x, rest), msk, tiles)), eq(ma).to(MaskOf(x))).then(
        union(xs).with_(Vals.cons(bcast_to(x, ma, msk, tiles), bcast_list(rest, msk, tiles)))),
        "broadcast each value")
    add("snoc_nil", rewrite(snoc(Vals.nil(), z)).to(Vals.cons(z, Vals.nil())), "[] + [g] = [g]")
    add("snoc_cons", rewrite(snoc(Vals.cons(x, rest), z)).to(Vals.cons(x, snoc(rest, z))), "(x:r) + [g] = x:(r + [g])")
    add("guard_last_one", rewrite(guard_last(Vals.cons(x, Vals.nil()), z, msk, tiles)).to(
        Vals.cons(Val.op("and", _vals(x, z), AMap.nil(), frag_ty("i1", msk, tiles)), Vals.nil())),
        "the last value (the validity) and-ed with the tail")
    add("guard_last_more", rewrite(guard_last(Vals.cons(x, Vals.cons(w, rest)), z, msk, tiles)).to(
        Vals.cons(x, guard_last(Vals.cons(w, rest), z, msk, tiles))), "earlier values are kept")
    # substituted arguments
    add("arg_coord", rewrite(lift(Val.arg(1, k, INDEX), own)).to(nth(coords, k)),
        "group axis k -> its tile coordinate (a uniform index for an unblocked axis)")
    add("arg_abi", rewrite(lift(Val.arg(0, k, t), c)).to(Val.arg(0, k, t)), "ABI values are uniform")
    add("arg_deep_own", rewrite(lift(Val.arg(d, k, t), own)).to(Val.arg(d, k, t), ne(d).to(i64(0)),
                                                                  ne(d).to(i64(1)), ne(k).to(i64(1))),
        "loop induction variables inside the group stay uniform")
    # values: unchanged when their mask does not grow; rebuilt over the union of their operands' axes otherwise
    for leaf in ("const", "launch", "range"):
        add(f"lift_{leaf}", rewrite(lift(Val.op(leaf, Vals.nil(), attrs, t), c)).to(
            Val.op(leaf, Vals.nil(), attrs, t)), f"a {leaf} does not depend on any substituted value")
    add("lift_broadcast", rule(eq(y).to(lift(o, c)), eq(o).to(Val.op("broadcast", _vals(x), attrs, t)),
                               eq(tiles).to(ctx_tiles(c)), eq(la).to(lift(x, c)), eq(ma).to(MaskOf(la)),
                               eq(mo).to(MaskOf(o))).then(
        union(y).with_(bcast_to(la, ma, ma | mo, tiles))), "a broadcast re-targets its lifted operand")
    lxs = var("lxs", Vals)
    ml = var("ml", i64)
    facts = [eq(y).to(lift(o, c)), eq(o).to(Val.op(nm, xs, attrs, t)), Elementwise(nm), eq(lxs).to(lift_list(xs, c)),
             eq(ml).to(MaskOfVals(lxs)), eq(mo).to(MaskOf(o))]
    add("lift_elementwise_same", rule(*facts, eq(mo | ml).to(mo)).then(union(y).with_(Val.op(nm, lxs, attrs, t))),
        "an element-wise op over unchanged axes")
    add("lift_elementwise", rule(*facts, ne(mo | ml).to(mo), eq(tiles).to(ctx_tiles(c)), eq(dt).to(DtypeOf(o))).then(
        union(y).with_(Val.op(nm, bcast_list(lxs, mo | ml, tiles), attrs, frag_ty(dt, mo | ml, tiles)))),
        "an element-wise op lifts over the union of its operands' axes")
    # loads and gathers (view, coordinates..., [validity]): the coordinates (and validity) lifted as one list
    view = var("view", Val)
    for valid in (0, 1):
        facts = [eq(y).to(lift(o, c)), eq(o).to(Val.op(nm, Vals.cons(view, rest), attrs, t)), ReadOp(nm),
                 HasValid(attrs, valid), eq(lxs).to(lift_list(rest, c)), eq(ml).to(MaskOfVals(lxs)),
                 eq(mo).to(MaskOf(o))]
        total = mo | ml
        listed = bcast_list(lxs, total, tiles)
        ops = guard_last(listed, tail(total, c), total, tiles) if valid else snoc(listed, tail(total, c))
        tag = f"read_{'valid' if valid else 'plain'}"
        add(f"lift_{tag}", rule(*facts, ne(total).to(mo), eq(tiles).to(ctx_tiles(c)), eq(dt).to(DtypeOf(o)),
                                ZeroOf(dt, zf)).then(union(y).with_(
            Val.op(nm, Vals.cons(view, ops), mark_valid_fill(attrs, zf), frag_ty(dt, total, tiles)))),
            "a load/gather over the tile reads only the lanes inside the segment (tail validity, fill)")
        add(f"lift_{tag}_same", rule(*facts, eq(total).to(mo)).then(union(y).with_(o)),
            "a load/gather at unchanged coordinates is unchanged")
    # pure single-carry loops: the accumulator becomes a lane fragment; bounds stay uniform
    lb_, ub_, st_, y0 = vars_("lb_ ub_ st_ y0", Val)
    ivt = var("ivt", Ty)
    rya = var("rya", AMap)
    loop = Val.res(Multi.op("for", _vals(lb_, ub_, st_, x), attrs, Tys.cons(Ty.scalar(dt), Tys.nil()),
                            Regions.cons(Region.make(d, Tys.cons(ivt, Tys.cons(Ty.scalar(dt), Tys.nil())),
                                                     Stmts.nil(), _vals(y0), rya), Regions.nil())),
                   0, Ty.scalar(dt))
    # The loop's parts as one row (``ForLoop``), found once per loop e-node: the rules below (and the prefix/suffix
    # scan rules) join that row instead of the nested loop pattern, whose nine atoms' delta joins the analyses re-ran
    # every step as lists and types grew (causal attention's compile 30% faster, the same program; docs/status.md).
    lv = var("lv", Val)
    is_loop = ForLoop(lv, lb_, ub_, st_, x, y0, attrs, d, ivt, dt, rya)
    add("for_loop", rule(eq(lv).to(loop)).then(is_loop), "a pure single-carry loop's parts")
    add("lift_loop_acc", rule(eq(y).to(lift(Val.arg(d, 1, Ty.scalar(dt)), own)), ne(d).to(i64(0)),
                              ne(d).to(i64(1)), ne(dt).to(String("index"))).then(
        union(y).with_(Val.arg(d, 1, frag_ty(dt, full, tiles)))),
        "inside a lifted loop its accumulator argument is a lane fragment")
    # A loop at the top of the group (region depth 2) that reads no blocked coordinate is the same in every lane
    # (a BatchNorm channel statistic under a tile of (h, w)): it stays one scalar loop, broadcast where it is used,
    # so the reduction group can block it (a per-lane loop over the [T0, T1] tile would do T0 * T1 times the work).
    # ``OwnMask`` is a demand-driven analysis over the loop's term. Not done: a loop reading some of the blocked
    # coordinates (BatchNorm1d's statistic under a tile of (c, l)) still runs per lane of the whole tile; lifting
    # it in a context whose lanes are only its axes made the remat group's extraction ill-typed.
    mr = var("mr", Regions)
    xs2, ys2 = vars_("xs2 ys2", Vals)
    cs = var("cs", Vals)
    add("own_want_loop", rule(is_loop, eq(y).to(lift(lv, own)), eq(d.bool_ge(i64(2))).to(Bool(True))).then(
        OwnWant(lv, own)), "ask which tile axes a loop ranges over")
    add("own_want_op", rule(OwnWant(v, c), eq(v).to(Val.op(nm, xs, attrs, t))).then(OwnWantVals(xs, c)),
        "an op: its operands")
    add("own_want_res", rule(OwnWant(v, c), eq(v).to(Val.res(Multi.op(nm, xs, attrs, var("rts", Tys), mr), i, t))
                             ).then(OwnWantVals(xs, c), OwnWantRegions(mr, c)), "a region op: operands and regions")
    add("own_want_cons", rule(OwnWantVals(Vals.cons(x, rest), c)).then(OwnWant(x, c), OwnWantVals(rest, c)),
        "each value of a list")
    add("own_want_region", rule(OwnWantRegions(Regions.cons(Region.make(d, var("ra", Tys), s_, ys2, rya), regs), c)
                                ).then(OwnWantVals(ys2, c), OwnWantRegions(regs, c)), "each region's yields")
    own_d = LiftCtx.own(cs, tails, tiles, full)
    m1, m2 = vars_("m1 m2", i64)
    add("own_mask_abi", rule(OwnWant(v, c), eq(v).to(Val.arg(0, k, t))).then(set_(OwnMask(v, c)).to(0)),
        "an ABI value is the same in every lane")
    add("own_mask_inner_arg", rule(OwnWant(v, c), eq(v).to(Val.arg(d, k, t)), eq(d.bool_gt(i64(1))).to(Bool(True))
                                   ).then(set_(OwnMask(v, c)).to(0)),
        "an argument of a region inside a top-level loop (the loop's own or a nested one) is the loop's business")
    add("own_mask_coord", rule(OwnWant(v, own_d), eq(v).to(Val.arg(1, k, INDEX)),
                               eq(m1).to(MaskOf(lift(v, own_d)))).then(set_(OwnMask(v, own_d)).to(m1)),
        "a coordinate ranges over the axes of its tile coordinate (none when the context does not block it)")
    add("own_mask_nil", rule(OwnWantVals(Vals.nil(), c)).then(set_(OwnMaskVals(Vals.nil(), c)).to(0)), "[]")
    add("own_mask_cons", rule(OwnWantVals(xs2, c), eq(xs2).to(Vals.cons(x, rest)), eq(m1).to(OwnMask(x, c)),
                              eq(m2).to(OwnMaskVals(rest, c))).then(set_(OwnMaskVals(xs2, c)).to(m1 | m2)),
        "a list: the union of its values' axes")
    add("own_mask_op", rule(OwnWant(v, c), eq(v).to(Val.op(nm, xs, attrs, t)), eq(m1).to(OwnMaskVals(xs, c))).then(
        set_(OwnMask(v, c)).to(m1)), "an op: its operands' axes")
    add("own_mask_regions_nil", rule(OwnWantRegions(Regions.nil(), c)).then(
        set_(OwnMaskRegions(Regions.nil(), c)).to(0)), "no regions")
    add("own_mask_region", rule(OwnWantRegions(mr, c), eq(mr).to(Regions.cons(Region.make(
        d, var("ra", Tys), Stmts.nil(), ys2, rya), regs)), eq(m1).to(OwnMaskVals(ys2, c)),
        eq(m2).to(OwnMaskRegions(regs, c))).then(set_(OwnMaskRegions(mr, c)).to(m1 | m2)),
        "pure regions: their yields' axes")
    add("own_mask_stmts", rule(OwnWantRegions(mr, own_d), eq(mr).to(Regions.cons(Region.make(
        d, var("ra", Tys), Stmts.cons(var("st1", Stmt), ss), ys2, rya), regs))).then(
        set_(OwnMaskRegions(mr, own_d)).to(full)), "a region with statements is not followed: every axis")
    add("own_mask_res", rule(OwnWant(v, c), eq(v).to(Val.res(Multi.op(nm, xs, attrs, var("rts", Tys), mr), i, t)),
                             eq(m1).to(OwnMaskVals(xs, c)), eq(m2).to(OwnMaskRegions(mr, c))).then(
        set_(OwnMask(v, c)).to(m1 | m2)), "a region op: its operands' and regions' axes")
    add("own_mask_sres", rule(OwnWant(v, own_d), eq(v).to(Val.sres(var("st2", Stmt), i, t))).then(
        set_(OwnMask(v, own_d)).to(full)), "a statement's result is not followed: every axis")
    # Demand: a loop's parts are lifted only once the loop is known to run per lane (the gates of the
    # ``lift_for*`` rules below; a prefix or suffix loop reads its scanned coordinate, so it varies). A uniform
    # loop is its own lifting, so lifting its body is work no extraction reads -- and a statistic's class also
    # holds the reduction group's flattened and member-tiled forms, whose ``div``/``rem`` coordinates and tile
    # fragments cost the blocking analyses a never-saturating 0.5-7.6 s per step (GroupNorm compiled in 169 s
    # with an ungated demand, 25 s with this gate; docs/status.md, issue 27).
    mk = var("mk", i64)
    enclosing = ((i64(1) << d) - 4) | (((i64(1) << d) - 4) << P.IV_BITS)      # region depths 2 .. d - 1
    for tag, gate in (("", [eq(d.bool_gt(i64(2))).to(Bool(True)), eq(mk).to(P.Dep(lv)),
                             ne(mk & enclosing).to(i64(0))]),
                      ("_varying", [eq(d.bool_ge(i64(2))).to(Bool(True)), eq(m1).to(OwnMask(lv, own)),
                                    ne(m1).to(i64(0))])):
        add(f"demand_for{tag}", rule(is_loop, eq(y).to(lift(lv, own)), *gate).then(
            lift(x, own), lift(y0, own), lift(lb_, own), lift(ub_, own), lift(st_, own)),
            "lift the bounds, initial value and yield of a loop that runs per lane")
    add("lift_for_uniform", rule(is_loop, eq(y).to(lift(lv, own)), eq(d).to(i64(2)),
                                 eq(OwnMask(lv, own)).to(i64(0)), ne(dt).to(String("index"))).then(
        union(y).with_(lv), OwnStat(lv)),
        "a top-level loop that reads no blocked coordinate is the same in every lane: it is its own lifting")
    # A nested loop likewise when it reads no argument of the regions between the group and itself (no enclosing
    # loop's induction variable or lane-fragment accumulator: ``Dep``) and no blocked coordinate. Its lifting must
    # be one of the two, never both: equal values get one lifting, and a per-lane lifting of a copy nested in a
    # consumer would be merged with the uniform lifting of the same loop at the top once ``remat`` shows the two
    # equal (an e-class of a scalar and its [T0, T1] broadcast: ill-typed extractions).
    add("lift_for_uniform_nested", rule(is_loop, eq(y).to(lift(lv, own)), eq(d.bool_gt(i64(2))).to(Bool(True)),
                                        eq(OwnMask(lv, own)).to(i64(0)), eq(mk).to(P.Dep(lv)),
                                        eq(mk & enclosing).to(i64(0)), ne(dt).to(String("index"))).then(
        union(y).with_(lv)),
        "a nested loop that reads nothing of its enclosing loops nor a blocked coordinate is its own lifting")
    # A group of a rank-0 segment (a loss, a norm to a scalar) is one program: every value it computes is computed
    # once. A reduction loop nested in another loop's member there (a cross-entropy's per-row max and sum: started
    # from a value, not from the enclosing loop's carry) is a statistic computed once per member, marked ``OwnStat``
    # so the reduction group blocks it over a tile of its members. The top-level loops and the nests continuing an
    # enclosing carry are left to ``split_reduction`` (which lane-blocks a one-program nest whose members lift).
    kn0 = var("kn0", String)
    la0, gs0 = vars_("la0 gs0", LE)
    ord0 = var("ord0", String)
    at0, ga0 = vars_("at0 ga0", Tys)
    ys0, gy0, px0 = vars_("ys0 gy0 px0", Vals)
    ya0, gya0, gat0 = vars_("ya0 gya0 gat0", AMap)
    sq0 = var("sq0", i64)
    gst0 = var("gst0", Stmts)
    scalar_group = KernelT.make(kn0, Segs.cons(Seg.make(LEs.nil(), ord0, gs0), Segs.nil()), la0, Region.make(
        0, at0, Stmts.cons(Stmt.op(sq0, "execution_group", px0, gat0, Tys.nil(),
                                   Regions.cons(Region.make(1, ga0, gst0, gy0, gya0), Regions.nil())), Stmts.nil()),
        ys0, ya0))
    add("scalar_group", rule(eq(var("k0", KernelT)).to(scalar_group)).then(InScalarGroupStmts(gst0)),
        "the values of a rank-0 segment's one program")
    add("scalar_group_stmts", rule(InScalarGroupStmts(Stmts.cons(Stmt.op(sq0, nm, xs, attrs, var("sts", Tys), regs),
                                                                 s_))).then(
        InScalarGroupVals(xs), InScalarGroupRegions(regs), InScalarGroupStmts(s_)), "each statement's operands")
    add("scalar_group_op", rule(InScalarGroup(v), eq(v).to(Val.op(nm, xs, attrs, t))).then(InScalarGroupVals(xs)),
        "an op's operands")
    add("scalar_group_res", rule(InScalarGroup(v), eq(v).to(Val.res(Multi.op(nm, xs, attrs, var("rts0", Tys), mr),
                                                                     i, t))).then(
        InScalarGroupVals(xs), InScalarGroupRegions(mr)), "a region op's operands and regions")
    add("scalar_group_cons", rule(InScalarGroupVals(Vals.cons(x, rest))).then(InScalarGroup(x),
                                                                              InScalarGroupVals(rest)), "each value")
    add("scalar_group_region", rule(InScalarGroupRegions(Regions.cons(Region.make(d, var("ra0", Tys), s_, ys2, rya),
                                                                      regs))).then(
        InScalarGroupVals(ys2), InScalarGroupRegions(regs)), "each region's yields")
    x00 = var("x00", Val)
    add("scalar_group_member_stat", rule(
        InScalarGroup(v), eq(v).to(P.for1(var("lb0", Val), var("ub0", Val), var("st0", Val), x00, attrs, t, d,
                                          var("bd0", Val), rya)),
        eq(d.bool_gt(i64(2))).to(Bool(True)), eq(x00).to(Val.op(var("nm0", String), var("xs0", Vals),
                                                                 var("at00", AMap), var("t0", Ty)))).then(OwnStat(v)),
        "a loop nested in a member of a rank-0 segment's reduction, started from a value, is computed once per "
        "member")
    add("own_stat_op", rule(OwnStat(v), eq(v).to(Val.op(nm, xs, attrs, t))).then(OwnStatVals(xs)),
        "a statistic's ops: their operands")
    add("own_stat_res", rule(OwnStat(v), eq(v).to(Val.res(Multi.op(nm, xs, attrs, var("rts", Tys), mr), i, t))).then(
        OwnStatVals(xs), OwnStatRegions(mr)), "a statistic's region ops: operands and regions")
    add("own_stat_cons", rule(OwnStatVals(Vals.cons(x, rest))).then(OwnStat(x), OwnStatVals(rest)), "each value")
    add("own_stat_region", rule(OwnStatRegions(Regions.cons(Region.make(d, var("ra", Tys), s_, ys2, rya), regs))
                                ).then(OwnStatVals(ys2), OwnStatRegions(regs)), "each region's yields")
    # Legality: the trip range must be the same for every lane (a scan's `for k in [0, j+1)` over a blocked j is
    # not: its bounds vary per lane, so it has no lifting and the kernel stays at scalar ownership).
    for tag, gate, law in (("", [eq(d.bool_gt(i64(2))).to(Bool(True)), eq(mk).to(P.Dep(lv)),
                                 ne(mk & enclosing).to(i64(0))],
                            "a pure ordered loop nested in another, reading an enclosing loop, runs per lane"),
                           ("_nested_varying", [eq(d.bool_gt(i64(2))).to(Bool(True)), eq(m1).to(OwnMask(lv, own)),
                                                ne(m1).to(i64(0))],
                            "a pure ordered loop nested in another that varies over the tile runs per lane"),
                           ("_varying", [eq(d).to(i64(2)), eq(m1).to(OwnMask(lv, own)), ne(m1).to(i64(0))],
                            "a pure ordered loop at the top of the group that varies over the tile runs per lane")):
        add(f"lift_for{tag}", rule(is_loop, eq(y).to(lift(lv, own)), *gate, eq(la).to(lift(x, own)),
                             eq(ma).to(MaskOf(la)), eq(lb).to(lift(y0, own)), eq(mb).to(MaskOf(lb)),
                             eq(MaskOf(lift(lb_, own))).to(i64(0)), eq(MaskOf(lift(ub_, own))).to(i64(0)),
                             eq(MaskOf(lift(st_, own))).to(i64(0)),
                             ne(dt).to(String("index"))).then(
            union(y).with_(Val.res(Multi.op(
                "for", _vals(lb_, ub_, st_, bcast_to(la, ma, full, tiles)), attrs,
                Tys.cons(frag_ty(dt, full, tiles), Tys.nil()),
                Regions.cons(Region.make(d, Tys.cons(ivt, Tys.cons(frag_ty(dt, full, tiles), Tys.nil())), Stmts.nil(),
                                         _vals(bcast_to(lb, mb, full, tiles)), rya), Regions.nil())), 0,
                frag_ty(dt, full, tiles)))),
            law)
    # Prefix loops (KIR scans: SPEC PASS-3.3 "separate ... scan axes", PASS-4 "order-preserving reassociation of
    # scan"): `for k in [0, j + 1): c (+) m(k)` over a blocked j has per-lane bounds, so lift_for does not apply. Over
    # the tile j in [j0, j0 + T) it equals the uniform prefix `for k in [0, j0): c (+) m(k)` combined with the
    # inclusive scan of m over the tile's own coordinates (m read at k = j): the same members in the same order,
    # regrouped once. `for k in [0, j)` (an exclusive scan) likewise, with an exclusive tile scan (its first lane is
    # the identity, exact against the prefix). (+) is add, mul, max or min on a float (``ScanIdentity``). Lanes past
    # the segment's end read filled members, which reach only lanes past the end (not written).
    kj, mj, ms, mlm = vars_("kj mj ms mlm", i64)
    one, lm, ls, st0, jc, jt = vars_("one lm ls st0 jc jt", Val)
    lat, oat, sat, aat, bat, rat, jat, ca = vars_("lat oat sat aat bat rat jat ca", AMap)
    jty, bty, rty = vars_("jty bty rty", Ty)
    mv = var("mv", Val)
    comb = var("comb", String)
    ident = var("ident", A)
    ptiles = var("ptiles", LEs)
    leaf_map, rest_map = vars_("leaf_map rest_map", AMap)
    scan_ctx = LiftCtx.scan(d, jc, tail(mj, own), tiles, mj)
    below = ms & (mj - i64(1))          # the scan axis: the number of member axes below the scanned one
    prefix = Val.res(Multi.op(
        "for", _vals(lb_, st0, st_, bcast_to(la, ma, full, tiles)), mark_reduce(attrs, comb),
        Tys.cons(frag_ty(dt, full, tiles), Tys.nil()),
        Regions.cons(Region.make(d, Tys.cons(ivt, Tys.cons(frag_ty(dt, full, tiles), Tys.nil())), Stmts.nil(),
                                 _vals(bcast_to(lb, mb, full, tiles)), rya), Regions.nil())), 0,
        frag_ty(dt, full, tiles))
    for excl, ub_pattern, ub_facts in (
            (0, Val.op("add", _vals(Val.arg(1, kj, INDEX), one), aat, INDEX),
             [eq(one).to(Val.op("const", Vals.nil(), oat, INDEX))]),
            (1, Val.arg(1, kj, INDEX), [])):
        kind = "exclusive" if excl else "inclusive"
        shape = [is_loop, eq(y).to(lift(lv, own)), eq(lb_).to(Val.op("launch", Vals.nil(), lat, INDEX)),
                 eq(st_).to(Val.op("const", Vals.nil(), sat, INDEX)), eq(ub_).to(ub_pattern), *ub_facts]
        walks = [_LeafAttrWalk(lat, lat), _LeafAttrWalk(sat, sat)] + ([_LeafAttrWalk(oat, oat)] if not excl else [])
        add(f"index_leaf_attrs_{kind}", rule(*shape).then(*walks),
            "the attributes of a candidate prefix loop's bounds and step are read by the prefix-scan rule")
        facts = shape + [
            IndexLeafAttr(lat, "expr", A.le(LE.int_(0))), IndexLeafAttr(sat, "value", A.int_(1)),
            *([IndexLeafAttr(oat, "value", A.int_(1))] if not excl else []),
            eq(y0).to(Val.op(comb, _vals(Val.arg(d, 1, Ty.scalar(dt)), mv), ca, Ty.scalar(dt))),
            ScanIdentity(comb, dt, ident),
            eq(jc).to(nth(coords, kj)),
            eq(jc).to(Val.op("add", _vals(Val.op("broadcast", _vals(st0), bat, bty),
                                          Val.op("range", Vals.nil(), rat, rty)), jat, jty)),
            eq(mj).to(MaskOf(jc)),
        ]
        add(f"demand_prefix_scan_{kind}", rule(*facts, eq(lm).to(lift(mv, own))).then(lift(lm, scan_ctx)),
            "lift a prefix loop's member over the tile of the axis it scans")
        scanned = Val.op("scan", _vals(ls), _amap(axis=A.int_((below & i64(1)) + ((below >> i64(1)) & i64(1))),
                                                  combine=A.str_(comb), exclusive=A.bool_(excl),
                                                  identity=A.list_(As.cons(ident, As.nil()))),
                         frag_ty(dt, ms, tiles))
        add(f"lift_prefix_scan_{kind}", rule(
            *facts, eq(mlm).to(MaskOf(lm)), eq(mlm & mj).to(i64(0)), eq(la).to(lift(x, own)), eq(ma).to(MaskOf(la)),
            eq(lb).to(lift(y0, own)), eq(mb).to(MaskOf(lb)), eq(lm).to(lift(mv, own)),
            eq(ls).to(lift(lm, scan_ctx)), eq(ms).to(MaskOf(ls)), ne(ms & mj).to(i64(0)),
            eq(full | ms).to(full)).then(
            union(y).with_(Val.op(comb, _vals(prefix, bcast_to(scanned, ms, full, tiles)), ca,
                                  frag_ty(dt, full, tiles)))),
            f"for k in [0, j{'' if excl else '+1'}): c (+) m(k) over j in [j0, j0+T) == (for k in [0, j0): c (+) "
            f"m(k)) (+) {kind}_scan(m(j0 + range(T)))")
    for excl in (0, 1):
        _suffix_scan_rules(add, excl)
    # the scan context: the loop variable -> the scanned axis's coordinates; other regions' arguments are uniform
    add("ctx_tiles_scan", rule(eq(c).to(LiftCtx.scan(d, jc, jt, ptiles, mj))).then(union(ctx_tiles(c)).with_(ptiles)),
        "tiles of a scan ctx")
    add("scan_iv", rewrite(lift(Val.arg(d, 0, INDEX), LiftCtx.scan(d, jc, jt, ptiles, mj))).to(jc),
        "the prefix loop's variable -> the scanned axis's tile coordinates")
    add("scan_other_arg", rewrite(lift(Val.arg(k, i, t), LiftCtx.scan(d, jc, jt, ptiles, mj))).to(
        Val.arg(k, i, t), ne(k).to(d), ne(k).to(i64(0))), "other regions' arguments stay as they are")
    add("index_leaf_attr_walk", rule(_LeafAttrWalk(leaf_map, AMap.cons(key, a, rest_map))).then(
        IndexLeafAttr(leaf_map, key, a), _LeafAttrWalk(leaf_map, rest_map)), "one attribute per cons cell")
    add("mark_reduce_nil", rewrite(mark_reduce(AMap.nil(), comb)).to(_amap(reduce=A.str_(comb))),
        "add reduce = <combiner>")
    add("mark_reduce_other", rewrite(mark_reduce(AMap.cons(key, vo, m), comb)).to(
        AMap.cons(key, vo, mark_reduce(m, comb)), ne(key).to(String("reduce"))), "other keys are kept")
    add("scan_tail", rule(eq(v).to(tail(msk, LiftCtx.scan(d, jc, jt, ptiles, mj))), ne(msk & mj).to(i64(0))).then(
        union(v).with_(bcast_to(jt, mj, msk, ptiles))), "members past the scanned axis's end are invalid")
    # effects: stores / scatters / scatter-reduces write every lane of the accumulator shape under the tail
    for valid in (0, 1):
        stmt = Stmt.op(seq, nm, Vals.cons(view, rest), attrs, Tys.nil(), regs)
        pattern = lift_stmts(Stmts.cons(stmt, ss), own)
        tag = f"write_{'valid' if valid else 'plain'}"
        if not valid:
            add("demand_write", rule(eq(s_).to(pattern), WriteOp(nm)).then(lift_list(rest, own)),
                "lift the operands of a store/scatter")
        listed = bcast_list(lxs, full, tiles)
        ops = guard_last(listed, tail(full, own), full, tiles) if valid else snoc(listed, tail(full, own))
        add(f"lift_{tag}", rule(eq(s_).to(pattern), WriteOp(nm), HasValid(attrs, valid),
                                eq(lxs).to(lift_list(rest, own)), eq(ml).to(MaskOfVals(lxs))).then(
            union(s_).with_(Stmts.cons(Stmt.op(seq, nm, Vals.cons(view, ops), mark_valid(attrs), Tys.nil(), regs),
                                       lift_stmts(ss, own)))),
            "a store/scatter over the tile writes every lane inside the segment once")
    add("lift_stmts_nil", rewrite(lift_stmts(Stmts.nil(), var("cg", LiftCtx))).to(Stmts.nil()), "lift [] = []")
    # attribute plumbing
    add("has_valid_true", rule(eq(m).to(AMap.cons("valid", A.bool_(1), attrs))).then(HasValid(m, 1)), "valid")
    add("has_valid_false", rule(eq(m).to(AMap.cons("valid", A.bool_(0), attrs))).then(HasValid(m, 0)), "not valid")
    add("has_valid_walk", rule(eq(m).to(AMap.cons(key, a, attrs)), HasValid(attrs, k)).then(HasValid(m, k)),
        "validity flag further down the attributes")
    add("mark_valid_nil", rewrite(mark_valid(AMap.nil())).to(_amap(valid=A.bool_(1))), "add valid = true")
    add("mark_valid_key", rewrite(mark_valid(AMap.cons("valid", vo, m))).to(AMap.cons("valid", A.bool_(1), m)),
        "valid := true")
    add("mark_valid_other", rewrite(mark_valid(AMap.cons(key, vo, m))).to(AMap.cons(key, vo, mark_valid(m)),
                                                                           ne(key).to(String("valid"))),
        "other keys are kept")
    add("mark_fill_nil", rewrite(mark_valid_fill(AMap.nil(), a)).to(_amap(fill=a, valid=A.bool_(1))),
        "add fill and valid")
    add("mark_fill_existing", rewrite(mark_valid_fill(AMap.cons("fill", vo, m), a)).to(
        AMap.cons("fill", vo, mark_valid(m))), "an existing fill is kept")
    add("mark_fill_at_valid", rewrite(mark_valid_fill(AMap.cons("valid", vo, m), a)).to(
        AMap.cons("fill", a, AMap.cons("valid", A.bool_(1), m))), "fill goes in before valid")
    add("mark_fill_other", rewrite(mark_valid_fill(AMap.cons(key, vo, m), a)).to(
        AMap.cons(key, vo, mark_valid_fill(m, a)), ne(key).to(String("valid")), ne(key).to(String("fill"))),
        "other keys are kept")
    return R


@function
def _suffix_scan(ls: Val, lb: Val, la: Val, jt: Val, hl: Val, st0: Val, lb_: Val, st_: Val, attrs: AMap,
                 rya: AMap, d: i64Like, ivt: Ty, comb: StringLike, ca: AMap, dt: StringLike, ident: A, full: i64Like,
                 rest: i64Like, tiles: LEs, tile: LE, mj: i64Like, excl: i64Like) -> Val:
    """A suffix loop lifted over a tile, pending its parts (``_suffix_scan_rules``): ``ls`` the tile's members
    over the scan context, ``lb`` / ``la`` the suffix loop's step and initial value over the axes ``rest``, ``jt``
    the scanned axis's tail mask, ``hl`` the loop's ``hi``, ``st0`` the tile start, ``tile`` its size; the rest is
    the original loop's; ``excl`` 1 for an exclusive scan. Rewritten into the lifted value once the parts are
    lifted (two stages: one rule joining the loop's shape and the lifted parts at once took egglog seconds per
    iteration)."""


def _suffix_scan_rules(add, excl: int) -> None:
    """Suffix loops (KIR reverse scans, SPEC PASS-3.3/PASS-4 "order-preserving reassociation of scan"): construction
    counts a reverse scan's trips ``u in [0, hi - j)`` (``[0, hi - (j + 1))`` when exclusive) and reads the member
    at ``k = hi - 1 - u``, combining ``c(m(k), carried)`` (members in increasing index order, the last first). Over
    the tile ``j in [j0, j0 + T)`` of a blocked axis this is ``c(S, rscan(m(j0 + range(T))))``: the uniform suffix
    ``S`` past the tile (``u in [0, hi - j0 - T)``, the same loop with a uniform trip count, marked ``reduce = c``
    so the reduction group blocks it) combined with the reverse inclusive (exclusive) scan of the tile's own
    members. ``c`` is one of the commutative float combiners of ``ScanIdentity``, so ``S``'s step may be written
    ``c(carried, m)`` and ``S`` may stand left of the tile's part (the same members, regrouped). ``S`` carries the
    ownership axes other than the scanned one (all of them when the scanned axis is the only one): it does not vary
    along the scanned axis, and a tile-shaped carry would let ``contraction.bias_into_init`` fold the tile's part
    into its initial value, a loop the reduction group cannot narrow to rows. Members past the segment's end enter
    the scan of every earlier lane, so they are the identity (the tail select), not the load's fill.

    Legality: the member lifted over the ownership tile does not vary along the scanned axis (it reads the point
    only through ``k``, as construction builds it); ``hi`` is uniform over the tile."""
    dt = var("dt", String)
    x, y, v, lb_, ub_, st_, y0, hi, one, la, lb, lm, ls, jc, st0, hl, jt = vars_(
        "x y v lb_ ub_ st_ y0 hi one la lb lm ls jc st0 hl jt", Val)
    coords, tails = vars_("coords tails", Vals)
    tiles = var("tiles", LEs)
    tl = list(vars_(" ".join(f"t{b}" for b in range(NBITS)), LE))
    tile = var("tile", LE)
    d, kj, full, ma, mb, ms, mlm, rest, mj = vars_("d kj full ma mb ms mlm rest mj", i64)
    attrs, rya, ca, zat, sat, oat, fat, uat, bat, rat, jat = vars_("attrs rya ca zat sat oat fat uat bat rat jat",
                                                                   AMap)
    ivt, bty, rty, jty = vars_("ivt bty rty jty", Ty)
    mv = var("mv", Val)
    comb = var("comb", String)
    ident = var("ident", A)
    kind = "exclusive" if excl else "inclusive"
    own = LiftCtx.own(coords, tails, tiles, full)
    own_rest = LiftCtx.own(coords, tails, tiles, rest)     # the suffix past the tile: no scanned axis
    scalar = Ty.scalar(dt)
    acc = Val.arg(d, 1, scalar)
    first = Val.op("add", _vals(Val.arg(1, kj, INDEX), one), fat, INDEX) if excl else Val.arg(1, kj, INDEX)
    lv = var("lv", Val)
    shape = [ForLoop(lv, lb_, ub_, st_, x, y0, attrs, d, ivt, dt, rya), eq(y).to(lift(lv, own)),
             eq(lb_).to(Val.op("const", Vals.nil(), zat, INDEX)),
             eq(st_).to(Val.op("const", Vals.nil(), sat, INDEX)),
             eq(ub_).to(Val.op("sub", _vals(hi, first), uat, INDEX)),
             *([eq(one).to(Val.op("const", Vals.nil(), oat, INDEX))] if excl else [])]
    walks = [_LeafAttrWalk(zat, zat), _LeafAttrWalk(sat, sat)] + ([_LeafAttrWalk(oat, oat)] if excl else [])
    add(f"index_leaf_attrs_suffix_{kind}", rule(*shape).then(*walks),
        "the attributes of a candidate suffix loop's bounds and step are read by the suffix-scan rule")
    facts = shape + [
        IndexLeafAttr(zat, "value", A.int_(0)), IndexLeafAttr(sat, "value", A.int_(1)),
        *([IndexLeafAttr(oat, "value", A.int_(1))] if excl else []),
        eq(y0).to(Val.op(comb, _vals(mv, acc), ca, scalar)), ScanIdentity(comb, dt, ident),
        eq(jc).to(nth(coords, kj)), eq(mj).to(MaskOf(jc)),
        eq(jc).to(Val.op("add", _vals(Val.op("broadcast", _vals(st0), bat, bty),
                                      Val.op("range", Vals.nil(), rat, rty)), jat, jty)),
        eq(hl).to(lift(hi, own)), eq(MaskOf(hl)).to(i64(0)),
        eq(lm).to(lift(mv, own)), eq(mlm).to(MaskOf(lm)), eq(mlm & mj).to(i64(0)),
    ]
    one_c = Val.op("const", Vals.nil(), _amap(value=A.int_(1)), INDEX)
    swapped = Val.op(comb, _vals(acc, mv), ca, scalar)
    for bit in (0, 1):
        # lane q of the tile reads its member at k = jc[q], i.e. on trip u = hi - 1 - jc[q]
        trips = Val.op("sub", _vals(Val.op("broadcast", _vals(Val.op("sub", _vals(hl, one_c), AMap.nil(), INDEX)),
                                           _amap(dims=_ints([])), frag_ty("index", 1 << bit, tiles)), jc),
                       AMap.nil(), frag_ty("index", 1 << bit, tiles))
        scan_ctx = LiftCtx.scan(d, trips, tail(mj, own), tiles, mj)
        for narrow in (0, 1):
            # narrow: the suffix carries the ownership axes but the scanned one; else (a rank-1 tile) all of them
            gate = [ne(full).to(mj), eq(rest).to(full - mj)] if narrow else [eq(full).to(mj), eq(rest).to(full)]
            pending = _suffix_scan(lift(lm, scan_ctx), lift(swapped, own_rest), lift(x, own_rest), tail(mj, own),
                                   hl, st0, lb_, st_, attrs, rya, d, ivt, comb, ca, dt, ident, full, rest, tiles,
                                   tl[bit], mj, excl)
            add(f"demand_suffix_scan_{kind}_b{bit}" + ("_narrow" if narrow else ""),
                rule(*facts, eq(mj).to(i64(1 << bit)), eq(tiles).to(_les(*tl)), *gate).then(union(y).with_(pending)),
                "a suffix loop over a tile of the axis it scans: lift its member over the tile and its step over the "
                "other axes")
    below = ms & (mj - i64(1))          # the scan axis: the number of member axes below the scanned one
    ident_c = Val.op("const", Vals.nil(), _amap(value=ident), scalar)
    member = Val.op("select", _vals(bcast_to(jt, mj, ms, tiles), ls, bcast_to(ident_c, i64(0), ms, tiles)),
                    AMap.nil(), frag_ty(dt, ms, tiles))
    scanned = Val.op("scan", _vals(member), _amap(axis=A.int_((below & i64(1)) + ((below >> i64(1)) & i64(1))),
                                                  combine=A.str_(comb), exclusive=A.bool_(excl),
                                                  identity=A.list_(As.cons(ident, As.nil())), reverse=A.bool_(1)),
                     frag_ty(dt, ms, tiles))
    rest_trips = Val.op("sub", _vals(hl, Val.op("add", _vals(st0, _launch(tile)), AMap.nil(), INDEX)), AMap.nil(),
                        INDEX)
    suffix = Val.res(Multi.op(
        "for", _vals(lb_, rest_trips, st_, bcast_to(la, ma, rest, tiles)), mark_reduce(attrs, comb),
        Tys.cons(frag_ty(dt, rest, tiles), Tys.nil()),
        Regions.cons(Region.make(d, Tys.cons(ivt, Tys.cons(frag_ty(dt, rest, tiles), Tys.nil())), Stmts.nil(),
                                 _vals(bcast_to(lb, mb, rest, tiles)), rya), Regions.nil())), 0,
        frag_ty(dt, rest, tiles))
    add(f"lift_suffix_scan_{kind}", rule(
        eq(v).to(_suffix_scan(ls, lb, la, jt, hl, st0, lb_, st_, attrs, rya, d, ivt, comb, ca, dt, ident, full, rest,
                              tiles, tile, mj, excl)),
        eq(ms).to(MaskOf(ls)), ne(ms & mj).to(i64(0)), eq(full | ms).to(full),
        eq(ma).to(MaskOf(la)), eq(mb).to(MaskOf(lb)), eq(rest | mb).to(rest)).then(
        union(v).with_(Val.op(comb, _vals(bcast_to(suffix, rest, full, tiles), bcast_to(scanned, ms, full, tiles)),
                              ca, frag_ty(dt, full, tiles)))),
        f"for u in [0, hi - j{' - 1' if excl else ''}): c(m(hi - 1 - u), acc) over j in [j0, j0+T) == "
        f"c(for u in [0, hi - j0 - T): c(acc, m(hi - 1 - u)), {kind}_reverse_scan(m(j0 + range(T))))")


def _ints_t(xs) -> _Term:
    return _T("AList", cons_list("AsNil", "AsCons", [_T("AInt", int(x)) for x in xs]))


_FACT_IDS = itertools.count()


def _fact(graph, relation, *args) -> None:
    """Assert ``relation(args...)``: term arguments are inserted first, strings are egglog text."""
    parts = [graph.add(a, prefix=f"bt{next(_FACT_IDS)}_") if isinstance(a, _Term) else a for a in args]
    graph.run_text(f"({graph.egg_name(relation)} {' '.join(parts)})")


def _seed_tables(graph) -> None:
    """The constant tables the table-driven rules read (one row per op kind / mask pair / dtype)."""
    def rel(relation, *args) -> str:
        return f"({graph.egg_name(relation)} {' '.join(args)})"

    lines = [rel(Elementwise, f'"{op}"') for ops in _ELEMENTWISE.values() for op in ops]
    lines += [rel(ReadOp, '"load"'), rel(ReadOp, '"gather"')]
    lines += [rel(WriteOp, f'"{op}"') for op in ("store", "scatter", "scatter_reduce")]
    graph.run_text("\n".join(lines))
    for fdt, fill in _FILL_T:
        _fact(graph, ZeroOf, f'"{fdt}"', fill)
    for comb, value in _SCAN_IDENTITY.items():
        for fdt in ("f16", "bf16", "f32", "f64"):
            _fact(graph, ScanIdentity, f'"{comb}"', f'"{fdt}"', _T("AFloat", value))
    for mask in ALL_MASKS:
        for sub in ALL_MASKS:
            if sub & ~mask or sub == mask:
                continue
            _fact(graph, BcastDims, str(sub), str(mask),
                            _ints_t([_bits(mask).index(b) for b in _bits(sub)]))


def _group_deps(term: _Term, memo: dict[int, frozenset[int]]) -> frozenset[int]:
    """The axes of the execution group (its region arguments ``Arg(1, k)``) that ``term`` reads."""
    found = memo.get(id(term))
    if found is not None:
        return found
    if term.op == "Arg":
        out = frozenset([term.args[1]]) if term.args[0] == 1 else frozenset()
    else:
        out = frozenset().union(*[_group_deps(a, memo) for a in term.args if isinstance(a, _Term)])
    memo[id(term)] = out
    return out


def _read_deps(term: _Term) -> list[frozenset[int]]:
    """For every load/gather of ``term``: the group axes its coordinates and validity read."""
    memo: dict[int, frozenset[int]] = {}
    seen: set[int] = set()
    out: list[frozenset[int]] = []
    stack = [term]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x.op == "Op" and x.args[0] in ("load", "gather"):
            out.append(_group_deps(x.args[1], memo))
        stack.extend(a for a in x.args if isinstance(a, _Term))
    return out


def reuse_axes(kernel: _Term, rank: int) -> list[int]:
    """The axes ``a`` (not the last two) worth a tile with the last axis (``ownership_rank<r>_axes<a><r-1>``): one
    read of the group reads ``a`` but neither of the last two axes and another reads the last axis but not ``a``,
    so a tile over both shares each read across the other axis (an outer product the default tile of the last two
    axes cannot form: a convolution's weight ``K[f, c, ..]`` and image ``X[n, c, .., j + kw]`` under ``Y[n, f, i,
    j]``). Without such a pair the variant only re-tiles what the default tile already shares (``X[b, s, k] W[k,
    n]`` pairs ``s`` with ``n``; a tile over the batch ``b`` ties it at the assumed sizes and wastes it at a batch of
    4), and its lifted body costs the search for nothing (an attention kernel's rank-4 output took 4x the compile
    time with every variant offered)."""
    reads = _read_deps(kernel)
    last, second = rank - 1, rank - 2
    return [a for a in range(rank - 2)
            if any(a in r and last not in r and second not in r for r in reads)
            and any(last in r and a not in r for r in reads)]


def seed(graph) -> None:
    """Mark the input kernel's segment list as scalar ownership (before any rule runs), so blocking applies once;
    mark the axes worth a tile with the last one (``reuse_axes``); seed the constant tables."""
    segs = graph.term.args[1]
    graph.fact(Unblocked, segs)
    if segs.op == "SegsCons" and segs.args[1].op == "SegsNil":
        rank = len(list_items(segs.args[0].args[0]))
        for axis in reuse_axes(graph.term, rank):
            _fact(graph, ReuseAxis, segs, str(axis))
    _seed_tables(graph)


#: the rewrites of the group: a kernel at scalar ownership -> its tiled variants (what the trace, ``rules list``
#: and the audit count)
_MAIN = ("blocking.ownership_rank",)
_ALL = _ownership_rules() + _lift_rules()
#: the structural support of those rewrites (lift, types, broadcasts, tails, attributes): terminating (each rule
#: only follows a finite term downwards or rebuilds a lifted term once), so it is saturated before every iteration
#: of the group (``ANALYSES``) and one iteration lifts a whole body instead of one level of it
ANALYSIS_RULES = [r for r in _ALL if not r[0].startswith(_MAIN)]
SUPPORT = ruleset(name="blocking_support")
ANALYSES = (P.DEPS, SUPPORT)
for _name, _rule, _law in ANALYSIS_RULES:
    SUPPORT.append(_rule)


def rules():
    """(name, egglog rule, law) for every rewrite of the group (the support rules are ``ANALYSIS_RULES``)."""
    return [r for r in _ALL if r[0].startswith(_MAIN)]


for _name, _rule, _law in rules():
    RULESET.append(_rule)
