"""Blocking of program ownership (SPEC PASS-3.3): scalar ownership over a segment becomes fragment ownership.

Reads: the kernel's program space (one row-major segment of rank >= 1), its execution group's region, the target's
tile-size candidates (relation ``TileCand``), the element types of the group's values.

Legality: one execution group whose effects are stores / unique scatters / scatter-reduces of values computed by
element-wise ops, constants, launch values, loads and gathers (with or without validity) and pure ordered loops
carrying non-index values. Anything else has no lifting rule, so its ``lift`` term stays unresolved, the blocked
variant has no finite-cost term and extraction keeps the scalar program: the rule never produces a partial program.

Rewrites: the segment ``[.., E_{r-2}, E_{r-1}]`` becomes ``[.., ceil_div(E_{r-2}, T0), ceil_div(E_{r-1}, T1)]``
(the last one or two axes; the others stay one program per member); the group's region arguments of blocked axes
become tile coordinates ``p*T + range(T)``; every value becomes a fragment of the tile shape (element-wise ops keep
their name and attributes; launch values and by-value scalars are broadcast; loops carry fragments); every load,
gather, store and scatter gets the tail validity ``coord < E`` and-ed into its own (loads get a fill).

Preserves: the value written to every element of every view (each element is still written by exactly one program
lane with the same computation); loop order within a lane; effects' order; the ABI; compile options.

Invalidates: program-space extents and coordinates, fragment shapes, access validity, footprint/occupancy facts.

Verifier: the shared GPU verifier after the group (coverage of the new segment by the tile grid with tail validity,
fragment extents are the declared candidate literals, access operands and validity well-typed).
"""
from __future__ import annotations

from egglog import String, StringLike, eq, function, i64, i64Like, ne, relation, rewrite, rule, ruleset, union, var, vars_

from intent_eqsat.rules.sorts import A, AMap, As, LE, LEs, Multi, Region, Regions, Seg, Segs, KernelT, Stmt, Stmts, \
    Ty, Tys, Val, Vals

GROUP = "blocking"
ORDER = 20

RULESET = ruleset(name=GROUP)

#: target tile-size candidates (powers of two), inserted as facts by the optimizer from the target object
TileCand = relation("TileCand", i64)

_ELEMENTWISE = ("neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf",
                "sigmoid", "floor", "ceil", "recip", "add", "sub", "mul", "div", "rem", "mod", "floordiv", "max", "min",
                "pow", "and", "or", "xor", "shl", "shr", "cmp", "select", "cast", "bitcast", "const")


class LiftCtx(__import__("egglog").Expr, egg_sort="IeLiftCtx"):
    """What lifting needs: the tile coordinate fragment of each group axis, the tail mask, the tile shape."""

    @classmethod
    def make(cls, coords: Vals, mask: Val, shape: LEs) -> LiftCtx: ...


@function
def lift(v: Val, c: LiftCtx) -> Val:
    """The fragment value of scalar value ``v`` over the tile (unresolved when no rule knows ``v``'s op)."""


@function
def lift_vals(vs: Vals, c: LiftCtx) -> Vals: ...


@function
def lift_tys(ts: Tys, c: LiftCtx) -> Tys: ...


@function
def lift_ty(t: Ty, c: LiftCtx) -> Ty: ...


@function
def lift_stmts(s: Stmts, c: LiftCtx) -> Stmts: ...


@function
def lift_access(vs: Vals, valid: i64Like, c: LiftCtx) -> Vals:
    """Operands after the resource: lifted, with the tail mask and-ed into the validity (appended if none)."""


@function
def nth(vs: Vals, i: i64Like) -> Val: ...


@function
def append(a: Vals, b: Vals) -> Vals: ...


@function
def mark_valid(m: AMap) -> AMap:
    """Attributes with ``valid = true``."""


@function
def mark_valid_fill(m: AMap, fill: A) -> AMap:
    """Attributes with ``valid = true`` and a fill (an existing fill is kept)."""


#: segments of scalar (unblocked) ownership: the optimizer marks the constructed kernel's segments, so blocking
#: applies once (a blocked segment list is a new term without the mark)
Unblocked = relation("Unblocked", Segs)
#: the types contain no ``index`` (loop-carried index values are not lifted: they may differ per lane)
NoIndexTys = relation("NoIndexTys", Tys)
#: an access's ``valid`` attribute (its operand layout depends on it)
HasValid = relation("HasValid", AMap, i64)


INDEX = Ty.scalar("index")
I1 = "i1"


def _vals(*xs: Val) -> Vals:
    out = Vals.nil()
    for x in reversed(xs):
        out = Vals.cons(x, out)
    return out


def _amap(**kv: A) -> AMap:
    out = AMap.nil()
    for k in sorted(kv, reverse=True):
        out = AMap.cons(k, kv[k], out)
    return out


def _les(*xs: LE) -> LEs:
    out = LEs.nil()
    for x in reversed(xs):
        out = LEs.cons(x, out)
    return out


def _frag(dt: StringLike, shape: LEs) -> Ty:
    return Ty.frag(dt, shape)


def _launch(e: LE) -> Val:
    return Val.op("launch", Vals.nil(), _amap(expr=A.le(e)), INDEX)


def _bcast(x: Val, dims: tuple[int, ...], ty: Ty) -> Val:
    items = As.nil()
    for d in reversed(dims):
        items = As.cons(A.int_(d), items)
    return Val.op("broadcast", _vals(x), _amap(dims=A.list_(items)), ty)


def _tile_coord(axis: int, tile: i64, pos: int, shape: LEs) -> Val:
    """``broadcast(p*T + range(T), dims=[pos])`` for group axis ``axis``."""
    t = LE.int_(tile)
    line = Ty.frag("index", _les(t))
    start = Val.op("mul", _vals(Val.arg(1, axis, INDEX), _launch(t)), AMap.nil(), INDEX)
    coord = Val.op("add", _vals(_bcast(start, (), line), Val.op("range", Vals.nil(), AMap.nil(), line)), AMap.nil(),
                   line)
    return _bcast(coord, (pos,), Ty.frag("index", shape))


def _lt_mask(coord: Val, extent: LE, shape: LEs) -> Val:
    bound = _bcast(_launch(extent), (), Ty.frag("index", shape))
    return Val.op("cmp", _vals(coord, bound), _amap(pred=A.str_("lt")), Ty.frag("i1", shape))


def _and(a: Val, b: Val, shape: LEs) -> Val:
    return Val.op("and", _vals(a, b), AMap.nil(), Ty.frag("i1", shape))


def _group_body(body: Region, seq: i64, gattrs: AMap, gargs: Tys, gstmts: Stmts, gyields: Vals, gya: AMap,
                pid: Val, argtys: Tys, yields: Vals, ya: AMap, ctx: LiftCtx) -> Region:
    group = Stmt.op(seq, "execution_group", _vals(pid), gattrs, Tys.nil(),
                    Regions.cons(Region.make(1, gargs, lift_stmts(gstmts, ctx), gyields, gya), Regions.nil()))
    return Region.make(0, argtys, Stmts.cons(group, Stmts.nil()), yields, ya)


def _ownership_rules():
    """One rule per segment rank: block the last axis (rank 1) or the last two axes (rank >= 2)."""
    kname = var("kname", String)
    argtys, gargs = vars_("argtys gargs", Tys)
    gstmts = var("gstmts", Stmts)
    gyields, yields = vars_("gyields yields", Vals)
    gattrs, gya, ya = vars_("gattrs gya ya", AMap)
    pid = var("pid", Val)
    seq, t0, t1 = vars_("seq t0 t1", i64)
    lau = var("lau", LE)
    es = list(vars_("e0 e1 e2 e3", LE))
    out = []
    for rank in (1, 2, 3, 4):
        exts = list(es[:rank])
        body = Region.make(0, argtys, Stmts.cons(Stmt.op(seq, "execution_group", _vals(pid), gattrs, Tys.nil(),
                                                         Regions.cons(Region.make(1, gargs, gstmts, gyields, gya),
                                                                      Regions.nil())), Stmts.nil()), yields, ya)
        kernel = KernelT.make(kname, Segs.cons(Seg.make(_les(*exts), "row_major", LE.none()), Segs.nil()), lau,
                              body)
        if rank == 1:
            tiles = (t1,)
            shape = _les(LE.int_(t1))
        else:
            tiles = (t0, t1)
            shape = _les(LE.int_(t0), LE.int_(t1))
        blocked = list(range(rank - len(tiles), rank))
        coords = []
        mask = None
        for axis in range(rank):
            if axis in blocked:
                pos = blocked.index(axis)
                c = _tile_coord(axis, tiles[pos], pos, shape)
                m = _lt_mask(c, exts[axis], shape)
                mask = m if mask is None else _and(mask, m, shape)
            else:
                c = _bcast(Val.arg(1, axis, INDEX), (), Ty.frag("index", shape))
            coords.append(c)
        ctx = LiftCtx.make(_vals(*coords), mask, shape)
        new_exts = [exts[a] if a not in blocked else LE.bin("ceil_div", exts[a], LE.int_(tiles[blocked.index(a)]))
                    for a in range(rank)]
        new_kernel = KernelT.make(kname, Segs.cons(Seg.make(_les(*new_exts), "row_major", LE.none()), Segs.nil()),
                                  lau, _group_body(body, seq, gattrs, gargs, gstmts, gyields, gya, pid, argtys,
                                                   yields, ya, ctx))
        facts = [kernel, Unblocked(Segs.cons(Seg.make(_les(*exts), "row_major", LE.none()), Segs.nil()))] + \
            [TileCand(t) for t in tiles]
        out.append((f"blocking.ownership_rank{rank}", rule(*facts, name=f"blocking.ownership_rank{rank}")
                    .then(union(kernel).with_(new_kernel)),
                    f"scalar ownership over a rank-{rank} segment == tile ownership of its last "
                    f"{len(tiles)} axes with tail validity"))
    return out


def _lift_rules():
    dt, key = vars_("dt key", String)
    x, y, v = vars_("x y v", Val)
    xs, ys, rest = vars_("xs ys rest", Vals)
    attrs, m = vars_("attrs m", AMap)
    a = var("a", A)
    shape = var("shape", LEs)
    coords = var("coords", Vals)
    mask = var("mask", Val)
    d, k, i, seq = vars_("d k i seq", i64)
    ts, tys = vars_("ts tys", Tys)
    t = var("t", Ty)
    s, ss = vars_("s ss", Stmts)
    regs = var("regs", Regions)
    ctx = LiftCtx.make(coords, mask, shape)
    R = []

    def add(name, r, law):
        R.append((f"blocking.{name}", r, law))

    # list plumbing
    add("nth0", rewrite(nth(Vals.cons(x, rest), 0)).to(x), "nth(x:rest, 0) = x")
    add("nth_succ", rewrite(nth(Vals.cons(x, rest), i)).to(nth(rest, i - 1), ne(i).to(i64(0))),
        "nth(x:rest, i) = nth(rest, i-1)")
    add("append_nil", rewrite(append(Vals.nil(), ys)).to(ys), "[] ++ ys = ys")
    add("append_cons", rewrite(append(Vals.cons(x, xs), ys)).to(Vals.cons(x, append(xs, ys))),
        "(x:xs) ++ ys = x:(xs ++ ys)")
    add("lift_vals_nil", rewrite(lift_vals(Vals.nil(), ctx)).to(Vals.nil()), "lift [] = []")
    add("lift_vals_cons", rewrite(lift_vals(Vals.cons(x, xs), ctx)).to(Vals.cons(lift(x, ctx), lift_vals(xs, ctx))),
        "lift maps over value lists")
    add("lift_ty_scalar", rewrite(lift_ty(Ty.scalar(dt), ctx)).to(Ty.frag(dt, shape)), "scalar T -> frag<T, tile>")
    add("lift_tys_nil", rewrite(lift_tys(Tys.nil(), ctx)).to(Tys.nil()), "lift [] = []")
    add("lift_tys_cons", rewrite(lift_tys(Tys.cons(t, ts), ctx)).to(Tys.cons(lift_ty(t, ctx), lift_tys(ts, ctx))),
        "lift maps over type lists")
    # validity attribute update (attribute maps are key-sorted cons lists; decode re-sorts new ones)
    vo = var("vo", A)
    add("mark_valid_nil", rewrite(mark_valid(AMap.nil())).to(AMap.cons("valid", A.bool_(1), AMap.nil())),
        "no valid key: add valid = true")
    add("mark_valid_key", rewrite(mark_valid(AMap.cons("valid", vo, m))).to(AMap.cons("valid", A.bool_(1), m)),
        "valid := true")
    add("mark_valid_other", rewrite(mark_valid(AMap.cons(key, vo, m))).to(AMap.cons(key, vo, mark_valid(m)),
                                                                           ne(key).to(String("valid"))),
        "other keys are kept")
    add("mark_fill_nil", rewrite(mark_valid_fill(AMap.nil(), a)).to(
        AMap.cons("fill", a, AMap.cons("valid", A.bool_(1), AMap.nil()))), "add fill and valid = true")
    add("mark_fill_existing", rewrite(mark_valid_fill(AMap.cons("fill", vo, m), a)).to(
        AMap.cons("fill", vo, mark_valid(m))), "an existing fill is kept")
    add("mark_fill_at_valid", rewrite(mark_valid_fill(AMap.cons("valid", vo, m), a)).to(
        AMap.cons("fill", a, AMap.cons("valid", A.bool_(1), m))), "fill goes in before valid")
    add("mark_fill_other", rewrite(mark_valid_fill(AMap.cons(key, vo, m), a)).to(
        AMap.cons(key, vo, mark_valid_fill(m, a)), ne(key).to(String("valid")), ne(key).to(String("fill"))),
        "other keys are kept")
    # region arguments: group coordinates, ABI scalars, loop induction variables, loop-carried values
    add("arg_coord", rewrite(lift(Val.arg(1, k, INDEX), ctx)).to(nth(coords, k)), "group axis k -> its tile coords")
    add("arg_abi_scalar", rewrite(lift(Val.arg(0, k, Ty.scalar(dt)), ctx)).to(
        _bcast(Val.arg(0, k, Ty.scalar(dt)), (), Ty.frag(dt, shape))), "a by-value scalar is uniform")
    add("arg_iv", rule(eq(y).to(lift(Val.arg(d, k, INDEX), ctx)), ne(d).to(i64(1)), ne(d).to(i64(0))).then(
        union(y).with_(_bcast(Val.arg(d, k, INDEX), (), Ty.frag("index", shape)))),
        "a loop induction variable is uniform across the tile")
    add("arg_carried", rule(eq(y).to(lift(Val.arg(d, k, Ty.scalar(dt)), ctx)), ne(dt).to(String("index")),
                            ne(d).to(i64(1)), ne(d).to(i64(0))).then(
        union(y).with_(Val.arg(d, k, Ty.frag(dt, shape)))), "a loop-carried value becomes a carried fragment")
    # values
    for op in _ELEMENTWISE:
        add(f"lift_{op}", rewrite(lift(Val.op(op, xs, attrs, Ty.scalar(dt)), ctx)).to(
            Val.op(op, lift_vals(xs, ctx), attrs, Ty.frag(dt, shape))), f"{op} lifts element-wise")
    add("lift_launch", rewrite(lift(Val.op("launch", xs, attrs, Ty.scalar(dt)), ctx)).to(
        _bcast(Val.op("launch", xs, attrs, Ty.scalar(dt)), (), Ty.frag(dt, shape))), "launch values are uniform")
    for op in ("load", "gather"):
        for fdt, fill in (("f16", A.float_("0.0")), ("bf16", A.float_("0.0")), ("f32", A.float_("0.0")),
                          ("f64", A.float_("0.0")), ("i8", A.int_(0)), ("i16", A.int_(0)), ("i32", A.int_(0)),
                          ("i64", A.int_(0)), ("u8", A.int_(0)), ("u32", A.int_(0)), ("i1", A.bool_(0))):
            for valid in (0, 1):
                pattern = lift(Val.op(op, Vals.cons(v, xs), attrs, Ty.scalar(fdt)), ctx)
                add(f"lift_{op}_{fdt}_{'valid' if valid else 'plain'}",
                    rule(eq(y).to(pattern), HasValid(attrs, valid)).then(union(y).with_(
                        Val.op(op, Vals.cons(v, lift_access(xs, valid, ctx)), mark_valid_fill(attrs, fill),
                               Ty.frag(fdt, shape)))),
                    f"{op} over the tile reads only lanes inside the segment (tail validity, fill)")
    add("access_plain", rewrite(lift_access(xs, 0, ctx)).to(append(lift_vals(xs, ctx), Vals.cons(mask, Vals.nil()))),
        "no validity: the tail mask becomes the validity")
    add("access_valid_last", rewrite(lift_access(Vals.cons(x, Vals.nil()), 1, ctx)).to(
        Vals.cons(Val.op("and", _vals(lift(x, ctx), mask), AMap.nil(), Ty.frag(I1, shape)), Vals.nil())),
        "a validity: and-ed with the tail mask")
    add("access_valid_walk", rewrite(lift_access(Vals.cons(x, Vals.cons(y, xs)), 1, ctx)).to(
        Vals.cons(lift(x, ctx), lift_access(Vals.cons(y, xs), 1, ctx))), "walk to the validity operand")
    # pure loops carrying non-index values: bounds stay scalar, carried values become fragments
    lb, ub, st = vars_("lb ub st", Val)
    rd = var("rd", i64)
    ivt = var("ivt", Ty)
    rya = var("rya", AMap)
    add("lift_for", rule(
        eq(y).to(lift(Val.res(Multi.op("for", Vals.cons(lb, Vals.cons(ub, Vals.cons(st, xs))), attrs, tys,
                                       Regions.cons(Region.make(rd, Tys.cons(ivt, ts), Stmts.nil(), ys, rya),
                                                    Regions.nil())), i, Ty.scalar(dt)), ctx)),
        NoIndexTys(tys)).then(union(y).with_(Val.res(
            Multi.op("for", Vals.cons(lb, Vals.cons(ub, Vals.cons(st, lift_vals(xs, ctx)))), attrs, lift_tys(tys, ctx),
                     Regions.cons(Region.make(rd, Tys.cons(ivt, lift_tys(ts, ctx)), Stmts.nil(), lift_vals(ys, ctx),
                                              rya), Regions.nil())), i, Ty.frag(dt, shape)))),
        "a pure ordered loop runs per lane: carried values become fragments, bounds stay uniform")
    add("no_index_nil", rule(eq(ts).to(Tys.nil())).then(NoIndexTys(Tys.nil())), "[] has no index type")
    add("no_index_cons", rule(eq(ts).to(Tys.cons(Ty.scalar(dt), tys)), NoIndexTys(tys), ne(dt).to(String("index")))
        .then(NoIndexTys(ts)), "no index-typed carried value")
    # effects
    add("stmts_nil", rewrite(lift_stmts(Stmts.nil(), ctx)).to(Stmts.nil()), "lift [] = []")
    for op in ("store", "scatter", "scatter_reduce"):
        for valid in (0, 1):
            add(f"lift_{op}_{'valid' if valid else 'plain'}",
                rule(eq(s).to(lift_stmts(Stmts.cons(Stmt.op(seq, op, Vals.cons(v, xs), attrs, Tys.nil(), regs), ss),
                                         ctx)), HasValid(attrs, valid)).then(union(s).with_(
                    Stmts.cons(Stmt.op(seq, op, Vals.cons(v, lift_access(xs, valid, ctx)), mark_valid(attrs),
                                       Tys.nil(), regs), lift_stmts(ss, ctx)))),
                f"{op} over the tile writes only lanes inside the segment")
    add("has_valid_true", rule(eq(m).to(AMap.cons("valid", A.bool_(1), attrs))).then(HasValid(m, 1)),
        "valid = true")
    add("has_valid_false", rule(eq(m).to(AMap.cons("valid", A.bool_(0), attrs))).then(HasValid(m, 0)),
        "valid = false")
    add("has_valid_walk", rule(eq(m).to(AMap.cons(key, a, attrs)), HasValid(attrs, k)).then(HasValid(m, k)),
        "validity flag found further down the attributes")
    return R


_RULES = None


def rules():
    """(name, egglog rule, law) for every rule of the group."""
    global _RULES
    if _RULES is None:
        _RULES = _ownership_rules() + _lift_rules()
    return _RULES


for _name, _rule, _law in rules():
    RULESET.append(_rule)
