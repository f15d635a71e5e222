"""Blocking of reduction axes (SPEC PASS-3.3 "block reduction/scan axes into physical loops", PASS-4 "reassociate
ordinary reduce", "blocking loops and fragment accumulators"). Ownership blocking runs a reduction per lane of the
tile, so a row summary is carried over a whole ``[T0, T1]`` tile of copies and combines one member per iteration;
this group carries it over the axes its members range over (``[T0]``) and takes a tile of ``TR`` members per
iteration, reduced with a ``reduce`` op.

Reads: pure one-carry ``for`` loops marked ``reduce = <combiner>`` (the shared verifier checks the body is
``combine(carried, member)`` with the member independent of the carried value), their initial values, steps and
members; ``broadcast`` ops and their ``dims`` (``HasAttr``), value types (``ValTy``), element-wise op names (the
``Elementwise`` table of ``blocking``); the dependency analysis ``patterns.Dep`` (which region arguments a value
reads); members lifted over the new axis ``b2`` by ``blocking``'s lifting (a ``LiftCtx.red`` context: the loop's
induction variable becomes ``k0 + range(TR)``, loads and gathers get the tail validity ``k < ub``); axis masks
(``MaskOf``, ``DtypeOf``); the combiner's identity per element type (seeded ``ReduceIdentity``).

Legality: ``reduction.narrow_carry*``: the member is ``broadcast(x)`` and the initial value a broadcast of a value
of ``x``'s type with the same ``dims`` (or of a scalar with ``dims = []``), so every lane of the carried fragment
holds ``combine`` over the same members as the lane of ``x`` it is broadcast from (the combiner is element-wise).
``reduction.hoist_*``: an element-wise op whose operands are all broadcasts with the same ``dims`` of values of one
shape (or a scalar splat) equals the broadcast of the op over those values. ``reduction.block_*``: the loop is an
ordinary reduction (the ``reduce`` mark: associative, commutative combiner, members independent of the carried
value, so members may be regrouped, SPEC PASS-4); it steps by one (every member is combined once); its member has
a lifting (element-wise ops, broadcasts, loads/gathers, constants, values that read nothing of the loop; a member
that reads a loop of its own iteration has none, so that loop is left as it is) and depends on the induction
variable; the carried value ranges over one ownership axis (``b0`` or ``b1``: ``BLOCKED_CARRIES``), or is a
scalar inside a statistic a tiled program computes once (``blocking.OwnStat``, ``reduction.demand_member_stat``);
the element type is a float with an identity for the combiner (add 0, mul 1, max -inf, min +inf).

``reduction.block_arg{max,min}_<dtype>``: a two-carry ``(best, idx)`` loop in exactly the arg-reduction form the
constructor builds (``idx == -1`` marks no member yet; ``take = first or v > best or (v NaN and best not NaN)``,
no NaN term for integers) at scalar ownership, step 1, whose member lifts over the tile (so it reads neither
carried value): the fold is a left-biased extreme of a strict total preorder, hence associative (see
``_arg_block_rules``).

``reduction.demand_key_tile`` (for ``online_tiles``): a ``reduce = add`` loop over ``(b0, b1)`` whose member is
``broadcast(exp(s - m)) * broadcast(w1)`` (a normalized summary's moment with a per-row score and a per-column
weight) gets its score and weight lifted over a key tile (the parameter ``TILE_N``, axis ``b2``); in key-tile
contexts only, a member that is itself a step-1 reduction loop of a float type with bounds that do not read the
lifted loop lifts as one loop whose accumulator is widened by ``b2`` (``reduction.lift_nested_loop``; the nested
loop's induction variable stays, its accumulator is the widened one, ``LiftCtx.red_in``); the same in this group's
member contexts (``reduction.lift_nested_loop_r``, ``TILE_R``): a statistic of a contraction's result (a softmax or
LayerNorm after a linear layer) lifts its member's sum over ``k`` as one loop with a ``[T0, TR]`` accumulator
(``[T1, TR]`` for a column statistic), which ``contraction`` makes a K-tiled contract.
``reduction.demand_key_max``: a step-1 ``reduce = max`` loop over ``b0`` whose result is the maximum such a moment's
weight subtracts gets its member (the score) lifted over the key tile too (a softmax without a moment keeps its
``TILE_R`` blocking). ``reduction.key_block_{max,mass,moment}``
(issue 23 item 2: the two-pass form under any numerics): a step-1 loop of the normalized summary -- the maximum
``max(m, s)``, the mass ``l + exp(s - m)``, the moment ``o + broadcast(exp(s - m)) * broadcast(w1)`` -- whose score
(and weight) lifted over the key tile (``[T0, TN]`` over ``(b0, b2)``, ``[T1, TN]`` over ``(b1, b2)``), ``m`` reading
no argument of the loop (``Dep``): the maximum is exact under any grouping, the sums are ordinary reductions whose
members are regrouped, each member computed as before (no rescaling, no rounding of the weights).

``reduction.flatten_stat`` (issue 27 item 3): a perfect nest ``for a in [0, A) {for b in [0, B) (acc)
{c(acc, x(a, b))}}`` -- the outer body is the inner ``reduce = c`` loop started from the outer carried value, both
step 1 from 0, the inner bounds free of the outer loop (``Dep``) -- whose member re-expresses
(``_loop_flatten.flat``: no carried value, no region op written inside the nest unless it reads only ABI values and
group coordinates), where ``block_*`` blocks a scalar carry (a statistic computed once, ``OwnStat``) or a carry
over the first ownership axis (``reduction.flatten_b0``: a per-channel sum under a tile of channels,
``X.var(dim=(0, 2, 3))``); indexed by ``FlatSum`` (one small table joined before the loops).

Rewrites: ``for(.., broadcast(x0)) {c: combine(c, broadcast(x))}`` -> ``broadcast(for(.., x0) {c: combine(c, x)})``;
``op(broadcast(a), broadcast(b))`` -> ``broadcast(op(a, b))`` (and ``select(broadcast(c), broadcast(a), splat(s))`` ->
``broadcast(select(c, a, splat(s)))``, the masked score); ``for k in [lb, ub) step 1 {reduce = c}: c(acc, x(k))`` ->
``for k0 in [lb, ub) step TR {reduce = c}: c(acc, reduce(select(k0 + range(TR) < ub, x(k0 + range(TR)), identity), axis b2, c))``;
the nest -> ``for g in [0, A * B) (acc) {c(acc, x(g / B, g % B))}`` (the same members in the same order: a
statistic over ``(c, h, w)`` becomes one loop of ``C*H*W`` members, blocked by ``block_*`` into ``TILE_R``-member
tiles instead of one tile per row of ``W`` members, most lanes masked at ``W = 28``);
an arg-reduction loop -> ``for k0 step TR``: the same fold of ``argreduce(x(k0 + range(TR)) where valid else
-inf/+inf)`` at index ``k0 - lb + lane``. ``TR`` is the symbolic parameter ``TILE_R``, bound after extraction
from the ownership candidates (``intent_eqsat.optimizer.tiles``). The key-tile forms: ``for j0 step TN`` carrying
``max(m, max_b2(S where j < ub else -inf))``, ``l + sum_b2(exp(S - m) where j < ub else 0)`` and ``contract(exp(S -
m) where j < ub else 0, W, o)`` (the score tile ``S``'s nested loop becomes a contract in ``contraction``).

Preserves: the value of every reduction up to regrouping of its members (an ordinary reduction); members past
``ub`` contribute the identity and load nothing (their validity is false); element-wise values (ops commute with
broadcasts); effects, the ABI and compile options.

Invalidates: loop-carried fragment shapes, the loop's step and trip count, fragment shapes inside it (members are
``[.., TR]`` tiles), load counts and footprint/occupancy/register estimates.

Verifier: the shared GPU verifier after the group (the ``reduce`` loop form: the body is ``combine(carried,
member)`` with the member independent of the carried value; ``reduce`` axes and identity; broadcast dims; access
validity).
"""
from __future__ import annotations

from egglog import String, eq, i64, ne, relation, rewrite, rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.encode import float_text
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, LE, LEs, Multi, Region, Regions, Stmts, Strs, Ty, Val, Vals
from rulebooks import _loop_flatten
from rulebooks import blocking as B
from rulebooks.blocking import Elementwise

GROUP = "reduction"
ORDER = 21
RULESET = ruleset(name=GROUP)
SUPPORT = ruleset(name="reduction_support")
ANALYSES = (P.ANALYSIS, P.DEPS, B.SUPPORT, SUPPORT)  # + NESTED, appended below

INDEX = Ty.scalar("index")
#: the member tile parameter (bound by the optimizer after extraction, ``intent_eqsat.optimizer.tiles``)
TILE_R = "TILE_R"
#: the key tile of a normalized summary's moment (``rulebooks.online_tiles``); its own parameter, so the lifting
#: contexts of key tiles are distinct terms from the member contexts of this group's blocking (only they lift
#: nested loops)
TILE_N = "TILE_N"
B2 = 4                                            # the axis mask bit of b2
#: ``ReduceIdentity(combiner, dtype, value)``: the identity of an ordinary combiner on a float type
ReduceIdentity = relation("ReduceIdentity", String, String, A)
#: the carried value's axes a blocked reduction takes: b0 or b1 (a row or a column of the ownership tile), and a
#: scalar carry only inside a statistic that a tiled program computes once for all its lanes (``B.OwnStat``: a
#: top-level loop that reads no blocked coordinate, e.g. a BatchNorm channel mean under a tile of (h, w)); not
#: every scalar carry (at scalar ownership the tiled program is cheaper when blocking applies, and lifting every
#: scalar loop of an attention kernel took the group past 10 GB), and not [T0, T1] (members would be [T0, T1, TR]
#: tiles; the contraction group covers the product shape)
BLOCKED_CARRIES = (0, 1, 2)
CarryMask = relation("ReduceCarryMask", i64)
_IDENTITY = {"add": 0.0, "mul": 1.0, "max": float("-inf"), "min": float("inf")}
_FLOATS = ("f16", "bf16", "f32", "f64")


NO_DIMS = P.alist()


def _tiles() -> list:
    return [LE.sym(B.TILE_PARAMS[0]), LE.sym(B.TILE_PARAMS[1]), LE.sym(TILE_R)]


def _support_rules() -> list:
    d, d2, k, mk = vars_("d d2 k mk", i64)
    kc, kt, v, y = vars_("kc kt v y", Val)
    tiles = var("tiles", LEs)
    c = var("c", B.LiftCtx)
    t = var("t", Ty)
    red = B.LiftCtx.red(d, kc, kt, tiles)
    out = [
        named("reduction.ctx_tiles", rule(eq(c).to(red), name="reduction.ctx_tiles").then(
            union(B.ctx_tiles(c)).with_(tiles)), "the tiles of a reduction context"),
        named("reduction.lift_iv", rewrite(B.lift(Val.arg(d, 0, INDEX), red)).to(kc),
              "the induction variable -> k0 + range(TR)"),
        named("reduction.lift_other_arg", rewrite(B.lift(Val.arg(d2, k, t), red)).to(
            Val.arg(d2, k, t), ne(d2).to(d), ne(d2).to(i64(0))),
            "arguments of other regions are uniform over the member tile"),
        named("reduction.lift_invariant", rule(eq(y).to(B.lift(v, red)), eq(mk).to(P.Dep(v)),
                                               eq(mk & ((i64(1) << d) | (i64(1) << (d + P.IV_BITS)))).to(i64(0)),
                                               name="reduction.lift_invariant").then(union(y).with_(v)),
              "a value that reads nothing of the loop (e.g. a row maximum computed before it) is uniform over the "
              "member tile"),
    ]
    for mask in B.ALL_MASKS:
        if mask & B2:
            out.append(named(f"reduction.tail_{mask}", rewrite(B.tail(mask, red)).to(
                B.bcast_to(kt, B2, mask, tiles)), "members past the loop's end are invalid"))
    return out


def _key_tile_sizes() -> list:
    return [LE.sym(B.TILE_PARAMS[0]), LE.sym(B.TILE_PARAMS[1]), LE.sym(TILE_N)]


def key_tiles() -> LEs:
    """The tile sizes of a key-tile lifting context: ``TILE_B0``, ``TILE_B1``, ``TILE_N``."""
    return B._les(*_key_tile_sizes())


def key_tile(depth, ub: Val) -> tuple[Val, Val]:
    """A key tile of the loop at region depth ``depth`` with upper bound ``ub``: its coordinates ``j0 + range(TN)``
    over ``b2`` and their in-range mask ``j < ub`` (the same terms wherever built)."""
    tl = _key_tile_sizes()
    kc = B._line_coord(Val.arg(depth, 0, INDEX), tl[2], 2, tl)
    return kc, B._lt(kc, ub, 2, tl)


def key_ctx(depth, ub: Val) -> "B.LiftCtx":
    """The lifting context of a loop over a key tile (:func:`key_tile`): its induction variable becomes the tile's
    coordinates, loads get the in-range mask."""
    kc, kt = key_tile(depth, ub)
    return B.LiftCtx.red(depth, kc, kt, key_tiles())


def _key_demand_rules() -> list:
    """A normalized summary's moment ``sum_j exp(s_j - m) * w_j`` with ``s`` per row (``[T0]`` over ``b0``) and ``w``
    per column (``broadcast(w1)``, ``w1`` over ``b1``): lift ``s`` and ``w1`` over a tile of keys for
    ``online_tiles`` (demanded here, where the e-graph is small: the lifting analyses cost ~5 s per iteration of a
    group that runs after ``online``'s re-expressions on attention)."""
    lb, ub, st, x0, y, s, mx, ex, w1 = vars_("lb ub st x0 y s mx ex w1", Val)
    attrs, rya, ca, ma, suba, expa, mula = vars_("attrs rya ca ma suba expa mula", AMap)
    d = var("d", i64)
    t0, t1 = vars_("t0 t1", LE)
    ty = Ty.frag_axes("f32", P.les(t0), P.strs("b0"))
    tyo = Ty.frag_axes("f32", P.les(t0, t1), P.strs("b0", "b1"))
    dims0, dims1 = P.amap(dims=B._ints([0])), P.amap(dims=B._ints([1]))
    member = Val.op("mul", P.vals(Val.op("broadcast", P.vals(ex), dims0, tyo),
                                  Val.op("broadcast", P.vals(w1), dims1, tyo)), mula, tyo)
    loop = P.for1(lb, ub, st, x0, attrs, tyo, d, Val.op("add", P.vals(Val.arg(d, 1, tyo), member), ca, tyo), rya)
    ctx = key_ctx(d, ub)
    return [named("reduction.demand_key_tile", rule(
        eq(y).to(loop), P.HasAttr(attrs, "reduce", A.str_("add")),
        eq(ex).to(Val.op("exp", P.vals(Val.op("sub", P.vals(s, mx), suba, ty)), expa, ty)),
        name="reduction.demand_key_tile").then(B.lift(s, ctx), B.lift(w1, ctx)),
        "a normalized summary's moment: lift its score and weight over a tile of keys (read by online_tiles)")]


def _key_block_rules() -> list:
    """The normalized sums of an exact softmax-weighted sum (attention under ``numerics = source``), blocked over
    key tiles without the online rewrite (issue 23 item 2): the row maximum ``max_j s_j``, the mass
    ``sum_j exp(s_j - m)`` and the moment ``sum_j exp(s_j - m) * w_j`` each become a loop over tiles of ``TILE_N``
    keys reading the score tile that ``reduction.demand_key_tile`` lifted (``s`` over ``(b0, b2)``, its nested
    ``d`` loop widened; ``contraction`` makes it a matrix-unit contract), the moment a ``contract`` of the weight
    tile ``P`` with the lifted value tile. Two passes over the keys where the flash form takes one, and the
    same numbers up to regrouping: the maximum is exact under any grouping; the sums are ordinary reductions
    (``reduce = add``) whose members are regrouped (SPEC PASS-4 "reassociate ordinary reduce", "mul-sum to
    contract"), each member computed as before (``exp(s - m)`` in f32 with the row's final maximum, no rescaling,
    no rounding of ``P``; the contract at the program's ``fp32_contract`` precision, ieee by default).

    Legality: the loop steps by one; the score lifts over the key tile to a ``[T0, TN]`` fragment over ``(b0, b2)``
    (and the weight to ``[T1, TN]`` over ``(b1, b2)`` for the moment); ``m`` reads no argument of the loop's region
    (``Dep``), so it is the same for every key; lanes past ``ub`` contribute the identity (``-inf`` to the maximum,
    ``0`` to the sums: the weight is selected, not the score, so a row whose maximum is ``-inf`` keeps the NaN
    weights its valid keys give, as the per-key loop does)."""
    lb, ub, st, x0, y, s, mx, ex, w1, ls, lw = vars_("lb ub st x0 y s mx ex w1 ls lw", Val)
    attrs, rya, ca, sattrs, suba, expa, mula = vars_("attrs rya ca sattrs suba expa mula", AMap)
    loc = var("loc", String)
    d, dm = var("d", i64), var("dm", i64)
    t0, t1 = vars_("t0 t1", LE)
    tn = LE.sym(TILE_N)
    ty = Ty.frag_axes("f32", P.les(t0), P.strs("b0"))
    tyo = Ty.frag_axes("f32", P.les(t0, t1), P.strs("b0", "b1"))
    ty_s = Ty.frag_axes("f32", P.les(t0, tn), P.strs("b0", "b2"))
    ty_w = Ty.frag_axes("f32", P.les(t1, tn), P.strs("b1", "b2"))
    mask_s = Ty.frag_axes("i1", P.les(t0, tn), P.strs("b0", "b2"))
    dims0, dims1 = P.amap(dims=B._ints([0])), P.amap(dims=B._ints([1]))
    no_dims = P.amap(dims=P.alist())
    ctx = key_ctx(d, ub)
    _, kt = key_tile(d, ub)
    plain = P.amap(origin=A.str_(loc))
    step_one = [eq(st).to(P.const(sattrs, INDEX)), P.HasAttr(sattrs, "value", A.int_(1))]
    tn_step = Val.op("launch", Vals.nil(), P.amap(expr=A.le(tn)), INDEX)
    valid = Val.op("broadcast", P.vals(kt), dims1, mask_s)
    lifted_s = [eq(ls).to(B.lift(s, ctx)), eq(B.MaskOf(ls)).to(i64(5)), P.ValTy(ls, ty_s)]
    # m is the same for every key of the loop: it reads no argument of the loop's region
    invariant = [eq(dm).to(P.Dep(mx)), eq(dm & (i64(1) << (d + P.IV_BITS))).to(i64(0))]

    def splat(value: str, t: Ty) -> Val:
        return Val.op("broadcast", P.vals(Val.op("const", Vals.nil(), P.amap(origin=A.str_(loc), value=A.float_(value)),
                                                 Ty.scalar("f32"))), no_dims, t)

    def red(x: Val, comb: str, ident: str) -> Val:
        return Val.op("reduce", P.vals(x), P.amap(axes=P.alist(A.int_(1)), combine=A.str_(comb),
                                                  identity=P.alist(A.float_(ident))), ty)

    def loop(init: Val, t: Ty, body: Val, at: AMap) -> Val:
        return P.for1(lb, ub, st, init, at, t, d, body, rya)

    def tiled(init: Val, t: Ty, body: Val, at: AMap) -> Val:
        return P.for1(lb, ub, tn_step, init, at, t, d, body, rya)

    # P = exp(S - m) on the valid keys, 0 past the end (the weight is selected: exactly the per-key members)
    weights = Val.op("select", P.vals(valid, Val.op("exp", P.vals(Val.op("sub", P.vals(
        ls, Val.op("broadcast", P.vals(mx), dims0, ty_s)), suba, ty_s)), expa, ty_s), splat("0.0", ty_s)),
        plain, ty_s)
    ex_pat = Val.op("exp", P.vals(Val.op("sub", P.vals(s, mx), suba, ty)), expa, ty)
    out = []
    # the row maximum: its member is the score itself (lifted on demand when the loop's result is the maximum a
    # normalized summary subtracts: the same score, but not always the same term as the summary's)
    old = loop(x0, ty, Val.op("max", P.vals(Val.arg(d, 1, ty), s), ca, ty), attrs)
    s2, wm, em = vars_("s2 wm em", Val)
    out.append(named("reduction.demand_key_max", rule(
        eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_("max")), *step_one,
        eq(ex).to(Val.op("exp", P.vals(Val.op("sub", P.vals(s2, y), suba, ty)), expa, ty)),
        # a weighted sum's member uses this maximum (a moment: attention; a softmax alone keeps TILE_R blocking)
        eq(em).to(Val.op("mul", P.vals(Val.op("broadcast", P.vals(ex), dims0, tyo), wm), mula, tyo)),
        name="reduction.demand_key_max").then(B.lift(s, ctx)),
        "the row maximum a normalized summary's moment subtracts: lift its scores over a tile of keys"))
    new = tiled(x0, ty, Val.op("max", P.vals(Val.arg(d, 1, ty), red(Val.op("select", P.vals(
        valid, ls, splat("-inf", ty_s)), plain, ty_s), "max", "-inf")), ca, ty), attrs)
    out.append(named("reduction.key_block_max", rule(
        eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_("max")), P.HasAttr(attrs, "origin", A.str_(loc)),
        *step_one, *lifted_s, name="reduction.key_block_max").then(union(y).with_(new)),
        "for j step 1: max(m, s(j)) == for j0 step TN: max(m, max_b2(s(j0 + range(TN)) where valid else -inf)) "
        "(a maximum over any grouping; the score tile another summary of the same keys lifted)"))
    # the mass: exp(s - m) summed
    old = loop(x0, ty, Val.op("add", P.vals(Val.arg(d, 1, ty), ex), ca, ty), attrs)
    new = tiled(x0, ty, Val.op("add", P.vals(Val.arg(d, 1, ty), red(weights, "add", "0.0")), ca, ty), attrs)
    out.append(named("reduction.key_block_mass", rule(
        eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_("add")), P.HasAttr(attrs, "origin", A.str_(loc)),
        eq(ex).to(ex_pat), *step_one, *lifted_s, *invariant, name="reduction.key_block_mass")
        .then(union(y).with_(new)),
        "for j step 1: l + exp(s(j) - m) == for j0 step TN: l + sum_b2(exp(s(j0 + range(TN)) - m) where valid "
        "else 0) (an ordinary sum regrouped, m the same for every key)"))
    # the moment: broadcast(exp(s - m)) * broadcast(w) summed == the contraction of the weight tile with w's tile
    member = Val.op("mul", P.vals(Val.op("broadcast", P.vals(ex), dims0, tyo),
                                  Val.op("broadcast", P.vals(w1), dims1, tyo)), mula, tyo)
    old = loop(x0, tyo, Val.op("add", P.vals(Val.arg(d, 1, tyo), member), ca, tyo), attrs)
    new = tiled(x0, tyo, Val.op("contract", P.vals(weights, lw, Val.arg(d, 1, tyo)), P.amap(
        lhs_contract=P.alist(A.int_(1)), origin=A.str_(loc), rhs_contract=P.alist(A.int_(1))), tyo), plain)
    out.append(named("reduction.key_block_moment", rule(
        eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_("add")), P.HasAttr(attrs, "origin", A.str_(loc)),
        eq(ex).to(ex_pat), *step_one, *lifted_s, *invariant,
        eq(lw).to(B.lift(w1, ctx)), eq(B.MaskOf(lw)).to(i64(6)), P.ValTy(lw, ty_w),
        name="reduction.key_block_moment").then(union(y).with_(new)),
        "for j step 1: o + exp(s(j) - m) * w(j) == for j0 step TN: contract(exp(S - m) where valid else 0, W, o) "
        "(an ordinary sum of products regrouped into a contraction over the key tile)"))
    return out


def _nested_loop_rules(tiles: LEs, suffix: str = "") -> list:
    """A member that is itself a reduction loop (an attention score ``sum_d q[i, d] * k[j, d]`` read by the loop over
    ``j``), in the lifting contexts over ``tiles`` (key tiles; member tiles with ``suffix`` ``_r``): lifted over the
    member tile, it runs once for the whole tile, its accumulator widened by ``b2`` (each
    lane of the widened accumulator sums the same members, in the same order, as the loop did for that member).
    Legality: one carry of a float type, bounds and step that do not read the lifted loop (the same trip range for
    every member), an initial value and a yield that lift; the loop reads the lifted loop's induction variable
    (otherwise ``lift_invariant`` keeps it)."""
    d, dd, d2, k, mk, mo, mx, my = vars_("d dd d2 k mk mo mx my", i64)
    kc, kt, v, y, x0, y0, lb, ub, st, lx, ly = vars_("kc kt v y x0 y0 lb ub st lx ly", Val)
    t, at, ty = vars_("t at ty", Ty)
    c = var("c", B.LiftCtx)
    attrs, rya = vars_("attrs rya", AMap)
    dt = var("dt", String)
    red = B.LiftCtx.red(d, kc, kt, tiles)
    inner = B.LiftCtx.red_in(d, kc, kt, tiles, dd, at)
    outer_bits = (i64(1) << d) | (i64(1) << (d + P.IV_BITS))
    out = [
        named(f"reduction.ctx_tiles_in{suffix}", rule(eq(c).to(inner), name=f"reduction.ctx_tiles_in{suffix}").then(
            union(B.ctx_tiles(c)).with_(tiles)), "the tiles of a nested-loop context"),
        named(f"reduction.lift_iv_in{suffix}", rewrite(B.lift(Val.arg(d, 0, INDEX), inner)).to(kc),
              "the lifted loop's induction variable -> k0 + range(TR), also inside the nested loop"),
        named(f"reduction.lift_inner_iv{suffix}", rewrite(B.lift(Val.arg(dd, 0, t), inner)).to(Val.arg(dd, 0, t)),
              "the nested loop's induction variable is uniform over the member tile"),
        named(f"reduction.lift_inner_acc{suffix}", rewrite(B.lift(Val.arg(dd, 1, t), inner)).to(Val.arg(dd, 1, at)),
              "the nested loop's accumulator is the widened accumulator"),
        named(f"reduction.lift_other_arg_in{suffix}", rewrite(B.lift(Val.arg(d2, k, t), inner)).to(
            Val.arg(d2, k, t), ne(d2).to(d), ne(d2).to(dd), ne(d2).to(i64(0))),
            "arguments of other regions are uniform over the member tile"),
        named(f"reduction.lift_invariant_in{suffix}", rule(
            eq(y).to(B.lift(v, inner)), eq(mk).to(P.Dep(v)),
            eq(mk & (outer_bits | (i64(1) << dd) | (i64(1) << (dd + P.IV_BITS)))).to(i64(0)),
            name=f"reduction.lift_invariant_in{suffix}").then(union(y).with_(v)),
            "a value that reads neither loop is uniform over the member tile"),
    ]
    for mask in B.ALL_MASKS:
        if mask & B2:
            out.append(named(f"reduction.tail_in{suffix}_{mask}", rewrite(B.tail(mask, inner)).to(
                B.bcast_to(kt, B2, mask, tiles)), "members past the loop's end are invalid"))
    loop = P.for1(lb, ub, st, x0, attrs, ty, dd, y0, rya)
    wide = mo | B2
    wide_ty = B.frag_ty(dt, wide, tiles)
    ctx_in = B.LiftCtx.red_in(d, kc, kt, tiles, dd, wide_ty)
    sa = var("sa", AMap)
    # a step-1 loop only: a loop this group already blocked holds b2 (TILE_R) member tiles, which a key tile
    # (b2 as well) cannot be laid over
    shape = [eq(y).to(B.lift(v, red)), eq(v).to(loop), eq(st).to(Val.op("const", Vals.nil(), sa, INDEX)),
             P.HasAttr(sa, "value", A.int_(1)), eq(mk).to(P.Dep(v)), ne(mk & outer_bits).to(i64(0)),
             eq(mo).to(B.MaskOf(v)), eq(mo & B2).to(i64(0)), eq(dt).to(B.DtypeOf(v)), ReduceIdentity("add", dt, var("id0", A))]
    out.append(named(f"reduction.demand_nested_loop{suffix}", rule(*shape, name=f"reduction.demand_nested_loop{suffix}").then(
        B.lift(x0, red), B.lift(lb, red), B.lift(ub, red), B.lift(st, red), B.lift(y0, ctx_in)),
        "lift a nested loop's bounds, initial value and yield"))
    out.append(named(f"reduction.lift_nested_loop{suffix}", rule(
        *shape,
        eq(B.MaskOf(B.lift(lb, red))).to(i64(0)), eq(B.MaskOf(B.lift(ub, red))).to(i64(0)),
        eq(B.MaskOf(B.lift(st, red))).to(i64(0)),
        eq(lx).to(B.lift(x0, red)), eq(mx).to(B.MaskOf(lx)), eq(ly).to(B.lift(y0, ctx_in)), eq(my).to(B.MaskOf(ly)),
        name=f"reduction.lift_nested_loop{suffix}").then(
        union(y).with_(P.for1(lb, ub, st, B.bcast_to(lx, mx, wide, tiles), attrs, wide_ty, dd,
                              B.bcast_to(ly, my, wide, tiles), rya))),
        "for d: acc + m(d, k) with k over a member tile == one loop over d whose accumulator holds every member's "
        "sum (widened by b2; the same members in the same order per lane)"))
    return out


def _block_rules() -> list:
    lb, ub, st, x0, x, y, lx = vars_("lb ub st x0 x y lx", Val)
    mo = var("mo", i64)
    attrs, ca, rya, sattrs = vars_("attrs ca rya sattrs", AMap)
    comb, dt = vars_("comb dt", String)
    ident = var("ident", A)
    ty = var("ty", Ty)
    d = var("d", i64)
    tl = _tiles()
    tiles = B._les(*tl)
    iv = Val.arg(d, 0, INDEX)
    body = Val.op(comb, P.vals(Val.arg(d, 1, ty), x), ca, ty)

    def loop(step: Val, yielded: Val) -> Val:
        return P.for1(lb, ub, step, x0, attrs, ty, d, yielded, rya)

    kc_ty = B._frag("index", B2, tl)
    kc = Val.op("add", P.vals(Val.op("broadcast", P.vals(iv), P.amap(dims=B._ints([])), kc_ty),
                              Val.op("range", Vals.nil(), AMap.nil(), kc_ty)), AMap.nil(), kc_ty)
    kt = Val.op("cmp", P.vals(kc, Val.op("broadcast", P.vals(ub), P.amap(dims=B._ints([])), kc_ty)),
                P.amap(pred=A.str_("lt")), B._frag("i1", B2, tl))
    ctx = B.LiftCtx.red(d, kc, kt, tiles)
    old = loop(st, body)
    facts = [eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_(comb)), eq(st).to(P.const(sattrs, INDEX)),
             P.HasAttr(sattrs, "value", A.int_(1))]
    out = [named("reduction.demand_member_stat", rule(*facts, eq(B.MaskOf(y)).to(i64(0)), B.OwnStat(y),
                                                      name="reduction.demand_member_stat").then(B.lift(x, ctx)),
                 "lift the member of a statistic's scalar reduction loop over a tile of its members"),
           named("reduction.demand_member", rule(*facts, eq(mo).to(B.MaskOf(y)), CarryMask(mo),
                                                 name="reduction.demand_member")
                 .then(B.lift(x, ctx)), "lift the member of an ordinary reduction loop over a tile of its members")]
    for mask in BLOCKED_CARRIES:
        wide = mask | B2
        axis = bin(mask).count("1")            # b2 is the last axis of the member tile
        wide_ty = B.frag_ty(dt, wide, tiles)
        ident_tile = Val.op("broadcast", P.vals(Val.op("const", Vals.nil(), P.amap(value=ident), Ty.scalar(dt))),
                            P.amap(dims=B._ints([])), wide_ty)
        member = Val.op("reduce", P.vals(Val.op("select", P.vals(B.tail(wide, ctx), lx, ident_tile), AMap.nil(),
                                                wide_ty)),
                        P.amap(axes=B._ints([axis]), combine=A.str_(comb), identity=P.alist(ident)), ty)
        new = loop(Val.op("launch", Vals.nil(), P.amap(expr=A.le(LE.sym(TILE_R))), INDEX),
                   Val.op(comb, P.vals(Val.arg(d, 1, ty), member), ca, ty))
        name = f"reduction.block_{mask}"
        stat = [B.OwnStat(y)] if mask == 0 else []
        out.append(named(name, rule(*facts, eq(B.MaskOf(y)).to(i64(mask)), *stat, eq(dt).to(B.DtypeOf(y)),
                                    ReduceIdentity(comb, dt, ident), eq(lx).to(B.lift(x, ctx)),
                                    eq(B.MaskOf(lx)).to(i64(wide)), name=name).then(union(y).with_(new)),
                         f"for k step 1: c(acc, x(k)) == for k0 step TR: c(acc, reduce_c(x(k0 + range(TR)) where "
                         f"valid else identity)) (an ordinary reduction regrouped; carried axes {B._bits(mask)})"))
    return out


#: the fill of the member tile's lanes past the loop's end in an arg-reduction: a value no member is strictly
#: better than (lanes past the end come after every valid lane, so a tie never picks them)
_ARG_FILL = {"max": float("-inf"), "min": float("inf")}


def _arg_block_rules() -> list:
    """An arg-reduction loop (KIR ``argmax``/``argmin``, built by ``construct.lower.arg_reduce_g``) takes a tile of
    ``TR`` members per iteration (SPEC IR-8 arg-reduce: ties to the lowest index, the first NaN wins).

    The loop carries ``(best, idx)`` from ``idx = -1`` (no member yet) and folds member ``k`` with
    ``take = idx == -1 or v > best or (v != v and best == best)`` (``<`` for argmin; integers have no NaN term),
    ``(best, idx) = take ? (v, k - lb) : (best, idx)``. That fold is a left-biased maximum of a strict total
    preorder (NaN above every number, ties keep the earlier member), so it is associative: folding a tile's members
    one by one from a carry equals combining the carry, by the same ``take``, with the tile's own first extreme --
    ``argreduce(kind, tie=lowest, nan=propagate)`` over ``x(k0 + range(TR))``, at index ``k0 - lb + lane``. Lanes
    past ``ub`` read nothing and hold ``-inf`` (``+inf``): never strictly better, and after every valid lane, so
    never picked (lane 0 is valid whenever the loop runs). Legality: the member lifts over the tile without the
    carried values (``reduction.lift_*`` has no rule for the loop's own carried arguments), the step is 1; the
    initial values need no check (the first member is always taken, and an empty range yields them unchanged in
    both forms). Scalar ownership only (a program per output); the value result is rewritten too."""
    lb, ub, st, b0, i0, v, m1 = vars_("lb ub st b0 i0 v m1", Val)
    am1 = var("am1", AMap)
    attrs, rya, sattrs, af, ag, an, ae, aa, ao1, ao2, asub, acast, as1, as2 = vars_(
        "attrs rya sattrs af ag an ae aa ao1 ao2 asub acast as1 as2", AMap)
    d = var("d", i64)
    lv = var("lv", Val)
    tl = _tiles()
    tiles = B._les(*tl)
    i1, i64t = Ty.scalar("i1"), Ty.scalar("i64")
    iv = Val.arg(d, 0, INDEX)
    out = []
    for kind, pred in (("max", "gt"), ("min", "lt")):
        for dt in _FLOATS + ("i8", "i16", "i32", "i64", "u8", "u32"):
            is_float = dt in _FLOATS
            vt = Ty.scalar(dt)
            best, idx = Val.arg(d, 1, vt), Val.arg(d, 2, i64t)

            def better_of(x: Val) -> Val:
                gt = Val.op("cmp", P.vals(x, best), ag, i1)
                if not is_float:
                    return gt
                nan = Val.op("and", P.vals(Val.op("cmp", P.vals(x, x), an, i1),
                                           Val.op("cmp", P.vals(best, best), ae, i1)), aa, i1)
                return Val.op("or", P.vals(gt, nan), ao1, i1)

            first = Val.op("cmp", P.vals(idx, m1), af, i1)

            def yields(x: Val, member: Val) -> Vals:
                take = Val.op("or", P.vals(first, better_of(x)), ao2, i1)
                return P.vals(Val.op("select", P.vals(take, x, best), as1, vt),
                              Val.op("select", P.vals(take, member, idx), as2, i64t))

            offset = Val.op("cast", P.vals(Val.op("sub", P.vals(iv, lb), asub, INDEX)), acast, i64t)

            def loop(step: Val, ys: Vals) -> Multi:
                return Multi.op("for", P.vals(lb, ub, step, b0, i0), attrs, P.tys(vt, i64t),
                                Regions.cons(Region.make(d, P.tys(INDEX, vt, i64t), Stmts.nil(), ys, rya),
                                             Regions.nil()))

            old = loop(st, yields(v, offset))
            kc_ty = B._frag("index", B2, tl)
            kc = Val.op("add", P.vals(Val.op("broadcast", P.vals(iv), P.amap(dims=B._ints([])), kc_ty),
                                      Val.op("range", Vals.nil(), AMap.nil(), kc_ty)), AMap.nil(), kc_ty)
            kt = Val.op("cmp", P.vals(kc, Val.op("broadcast", P.vals(ub), P.amap(dims=B._ints([])), kc_ty)),
                        P.amap(pred=A.str_("lt")), B._frag("i1", B2, tl))
            ctx = B.LiftCtx.red(d, kc, kt, tiles)
            tile_ty = B.frag_ty(dt, B2, tiles)
            fill = _ARG_FILL[kind] if is_float else None
            fill_a = A.float_(float_text(fill)) if is_float else A.int_(_int_extreme(dt, kind))
            fill_tile = Val.op("broadcast", P.vals(Val.op("const", Vals.nil(), P.amap(value=fill_a), vt)),
                               P.amap(dims=B._ints([])), tile_ty)
            tile = Val.op("select", P.vals(B.tail(B2, ctx), lv, fill_tile), AMap.nil(), tile_ty)
            arg = Multi.op("argreduce", P.vals(tile),
                           P.amap(axis=A.int_(0), kind=A.str_(kind), nan=A.str_("propagate"), tie=A.str_("lowest")),
                           P.tys(vt, i64t), Regions.nil())
            tv, ti = Val.res(arg, 0, vt), Val.res(arg, 1, i64t)
            new = loop(Val.op("launch", Vals.nil(), P.amap(expr=A.le(LE.sym(TILE_R))), INDEX),
                       yields(tv, Val.op("add", P.vals(offset, ti), AMap.nil(), i64t)))
            facts = [eq(var("r1", Val)).to(Val.res(old, 1, i64t)), eq(st).to(P.const(sattrs, INDEX)),
                     P.HasAttr(sattrs, "value", A.int_(1)), P.HasAttr(ag, "pred", A.str_(pred)),
                     P.HasAttr(af, "pred", A.str_("eq")), eq(m1).to(P.const(am1, i64t)),
                     P.HasAttr(am1, "value", A.int_(-1))]
            if is_float:
                facts += [P.HasAttr(an, "pred", A.str_("ne")), P.HasAttr(ae, "pred", A.str_("eq"))]
            tag = f"{kind}_{dt}"
            out.append(named(f"reduction.demand_arg{tag}", rule(*facts, name=f"reduction.demand_arg{tag}").then(
                B.lift(v, ctx)), f"lift the member of an arg{kind} loop over a tile of its members"))
            name = f"reduction.block_arg{tag}"
            out.append(named(name, rule(*facts, eq(lv).to(B.lift(v, ctx)), eq(B.MaskOf(lv)).to(i64(B2)),
                                        name=name).then(
                union(Val.res(old, 0, vt)).with_(Val.res(new, 0, vt)),
                union(Val.res(old, 1, i64t)).with_(Val.res(new, 1, i64t))),
                f"for k step 1: first arg{kind} fold of (x(k), k - lb) == for k0 step TR: the same fold of "
                f"argreduce_{kind}(x(k0 + range(TR)) where valid else {'-inf' if kind == 'max' else '+inf'}) at "
                f"k0 - lb + lane (a left-biased extreme of a total preorder is associative)"))
    return out


#: ``FlatSum(w, d, ty, comb, m, ub, attrs, ca, ya)``: ``w`` is a step-1 ``reduce = comb`` loop from 0 at depth
#: ``d`` whose body is ``comb(carried, m)`` (indexed, so the nest rule joins one small table before the loops)
FlatSum = relation("ReduceFlatSum", Val, i64, Ty, String, Val, Val, AMap, AMap, AMap)


def _zero_index(v: Val, a: AMap) -> list:
    return [eq(v).to(Val.op("launch", Vals.nil(), a, INDEX)), P.HasAttr(a, "expr", A.le(LE.int_(0)))]


def _flatten_rules() -> tuple[list, list]:
    """Flattening of a reduction nest (SPEC PASS-4 "flatten/permute paired axes", "reassociate ordinary reduce"):
    ``for a in [0, A) {for b in [0, B) (acc) {c(acc, x(a, b))}}`` (the outer body is the inner loop started from
    the outer carried value: a sum over several axes, e.g. a norm's statistic over ``(c, h, w)``) == ``for g in
    [0, A * B) (acc) {c(acc, x(g / B, g % B))}``: the same members in the same order (row-major), so even the
    running fold is unchanged; the one long loop is then blocked like any reduction (``block_*``: a tile of
    ``TILE_R`` members per iteration instead of one tile per row of ``B`` members, which at ``B`` = 28 left most
    lanes masked and the loop latency-bound). Returns (support, rewrites).

    Legality: both loops step by 1 from 0; the inner bounds do not read the outer loop (``Dep``: a rectangular
    nest); the inner loop is marked ``reduce = c`` (its body ``c(carried, member)``, checked by the verifier) and
    starts from the outer carried value, which the outer loop yields; the member re-expresses
    (``_loop_flatten.flat``: it reads neither carried value, no region op written inside the nest unless it reads
    only ABI values and group coordinates). Only where the group blocks the
    result with a scalar carry (a statistic computed once, ``B.OwnStat``) or a carry over the first ownership
    axis (``flatten_b0``: a per-channel sum under a tile of channels); not over both (a convolution's
    window sums stay nests for ``contraction``: flattened alternatives would only grow the e-graph)."""
    lb, ub, st, x0, m, lb2, ub2, st2, inner_v = vars_("lb ub st x0 m lb2 ub2 st2 inner_v", Val)
    attrs, ya, a2, y2, ca, sa, la = vars_("attrs ya a2 y2 ca sa la", AMap)
    comb = var("comb", String)
    d, d1, mk = vars_("d d1 mk", i64)
    ty = var("ty", Ty)
    w = var("w", Val)
    support = [named("reduction.flat_sum", rule(
        eq(w).to(P.for1(lb, ub, st, x0, attrs, ty, d, Val.op(comb, P.vals(Val.arg(d, 1, ty), m), ca, ty), ya)),
        P.HasAttr(attrs, "reduce", A.str_(comb)), eq(st).to(P.const(sa, INDEX)), P.HasAttr(sa, "value", A.int_(1)),
        *_zero_index(lb, la), name="reduction.flat_sum").then(FlatSum(w, d, ty, comb, m, ub, attrs, ca, ya)),
        "a step-1 reduction loop from 0, indexed")]
    inner = P.for1(lb2, ub2, st2, Val.arg(d, 1, ty), a2, ty, d1, var("body2", Val), y2)
    outer = P.for1(lb, ub, st, x0, attrs, ty, d, inner_v, ya)
    g = Val.arg(d, 0, INDEX)
    hi = Val.op("div", P.vals(g, ub2), AMap.nil(), INDEX)
    lo = Val.op("rem", P.vals(g, ub2), AMap.nil(), INDEX)
    body = Val.op(comb, P.vals(Val.arg(d, 1, ty), _loop_flatten.flat(m, d, hi, lo)), ca, ty)
    trips = Val.op("mul", P.vals(ub, ub2), AMap.nil(), INDEX)
    new = P.for1(lb, trips, st, x0, a2, ty, d, body, y2)
    shape = [FlatSum(inner_v, d1, ty, comb, m, ub2, a2, ca, y2), eq(d1).to(d + 1), eq(inner_v).to(inner),
             eq(w).to(outer), eq(st).to(P.const(sa, INDEX)), P.HasAttr(sa, "value", A.int_(1)), *_zero_index(lb, la),
             eq(mk).to(P.Dep(ub2)), eq(mk & ((i64(1) << d) | (i64(1) << (d + P.IV_BITS)))).to(i64(0))]
    law = ("for a in [0, A) (x0) {for b in [0, B) (acc) {c(acc, x(a, b))}} == for g in [0, A * B) (x0) {c(acc, "
           "x(g / B, g % B))} (the same members in the same order")
    name = "reduction.flatten_stat"
    rewrites = [named(name, rule(*shape, eq(B.MaskOf(w)).to(i64(0)), B.OwnStat(w), name=name).then(
        union(w).with_(new)), law + "; a statistic computed once)")]
    # a carry over the first ownership axis alone (a per-channel sum under a tile of channels, X.var(dim=(0, 2,
    # 3))): its (h, w) plane becomes one loop of TILE_R-member tiles instead of one 64-lane tile per row of W
    # members; not a carry over both axes (a convolution's (c, kh, kw) window sums stay nests for ``contraction``)
    # nor over b1 alone (no kernel tried has one: a column statistic under a rank-2 tile carries [T0, T1])
    name = "reduction.flatten_b0"
    rewrites.append(named(name, rule(*shape, eq(B.MaskOf(w)).to(i64(1)), name=name).then(union(w).with_(new)),
                          law + "; the carry ranges over b0)"))
    return support, rewrites


def _int_extreme(dt: str, kind: str) -> int:
    import numpy as np
    info = np.iinfo({"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
                     "u32": np.uint32}[dt])
    return int(info.min if kind == "max" else info.max)


def _narrow_rules() -> list:
    out = []
    lb, ub, st, x0, xm, y, s = vars_("lb ub st x0 xm y s", Val)
    attrs, mb, m0, ya, rya, ca = vars_("attrs mb m0 ya rya ca", AMap)
    comb, dt = vars_("comb dt", String)
    dims = var("dims", A)
    shb, shs = vars_("shb shs", LEs)
    axb, axs = vars_("axb axs", Strs)
    d = var("d", i64)
    big = Ty.frag_axes(dt, shb, axb)
    small = Ty.frag_axes(dt, shs, axs)
    sc = Ty.scalar(dt)
    member = Val.op("broadcast", P.vals(xm), mb, big)
    body = Val.op(comb, P.vals(Val.arg(d, 1, big), member), ca, big)
    loop = P.for1(lb, ub, st, y, attrs, big, d, body, rya)
    marked = [P.HasAttr(attrs, "reduce", A.str_(comb)), P.HasAttr(mb, "dims", dims)]
    cases = (
        ("narrow_carry", small, [eq(y).to(Val.op("broadcast", P.vals(x0), m0, big)), P.HasAttr(m0, "dims", dims),
                                 P.ValTy(x0, small), P.ValTy(xm, small)], x0,
         "init and member broadcast the same way"),
        ("narrow_carry_splat", small, [eq(y).to(Val.op("broadcast", P.vals(s), m0, big)),
                                       P.HasAttr(m0, "dims", NO_DIMS), P.ValTy(s, sc), P.ValTy(xm, small)],
         P.broadcast(s, NO_DIMS, small), "a scalar init splat over the member's axes"),
        ("narrow_carry_scalar", sc, [eq(y).to(Val.op("broadcast", P.vals(s), m0, big)),
                                     P.HasAttr(m0, "dims", NO_DIMS), P.ValTy(s, sc), P.ValTy(xm, sc)], s,
         "a uniform member: the summary is one scalar"),
    )
    for name, nty, facts, init, why in cases:
        nbody = Val.op(comb, P.vals(Val.arg(d, 1, nty), xm), ca, nty)
        new = Val.op("broadcast", P.vals(P.for1(lb, ub, st, init, attrs, nty, d, nbody, rya)), P.amap(dims=dims), big)
        full = f"reduction.{name}"
        out.append(named(full, rule(eq(var("lp", Val)).to(loop), *marked, *facts, name=full).then(
            union(var("lp", Val)).with_(new)),
            f"for(.., bcast(x0)) {{c: combine(c, bcast(x))}} == bcast(for(.., x0) {{c: combine(c, x)}}) ({why}; "
            f"an element-wise combiner commutes with broadcast)"))
    return out


def _hoist_rules() -> list:
    out = []
    a, b, v = vars_("a b v", Val)
    ma, mb, attrs = vars_("ma mb attrs", AMap)
    nm, dt, da, db = vars_("nm dt da db", String)
    dims = var("dims", A)
    shb, shs = vars_("shb shs", LEs)
    axb, axs = vars_("axb axs", Strs)
    big = Ty.frag_axes(dt, shb, axb)
    ta, tb = vars_("ta tb", Ty)

    def small(x):
        return Ty.frag_axes(x, shs, axs)

    def bc(x, m, xdt):
        return Val.op("broadcast", P.vals(x), m, Ty.frag_axes(xdt, shb, axb))

    # unary: op(bcast(a)) -> bcast(op(a)); a a fragment or a scalar
    lhs = Val.op(nm, P.vals(bc(a, ma, da)), attrs, big)
    for kind, aty, rty in (("frag", small(da), small(dt)), ("scalar", Ty.scalar(da), Ty.scalar(dt))):
        name = f"reduction.hoist_unary_{kind}"
        out.append(named(name, rule(eq(v).to(lhs), Elementwise(nm), P.HasAttr(ma, "dims", dims), P.ValTy(a, aty),
                                    name=name).then(
            union(v).with_(P.broadcast(Val.op(nm, P.vals(a), attrs, rty), dims, big))),
            "op(bcast(a)) == bcast(op(a)) for an element-wise op"))
    # binary: both operands broadcast the same way from one shape
    lhs = Val.op(nm, P.vals(bc(a, ma, da), bc(b, mb, db)), attrs, big)
    same = [Elementwise(nm), P.HasAttr(ma, "dims", dims), P.HasAttr(mb, "dims", dims)]
    for kind, aty, bty, rty in (("frag", small(da), small(db), small(dt)),
                                ("scalar", Ty.scalar(da), Ty.scalar(db), Ty.scalar(dt))):
        name = f"reduction.hoist_binary_{kind}"
        out.append(named(name, rule(eq(v).to(lhs), *same, P.ValTy(a, aty), P.ValTy(b, bty), name=name).then(
            union(v).with_(P.broadcast(Val.op(nm, P.vals(a, b), attrs, rty), dims, big))),
            "op(bcast(a), bcast(b)) == bcast(op(a, b)) when a and b have one shape"))
    # binary: one operand a fragment broadcast, the other a scalar splat
    for side in ("left", "right"):
        facts = [Elementwise(nm), P.HasAttr(ma, "dims", dims), P.HasAttr(mb, "dims", NO_DIMS),
                 P.ValTy(a, small(da)), P.ValTy(b, Ty.scalar(db))]
        splat = P.broadcast(b, NO_DIMS, small(db))
        ops = P.vals(bc(a, ma, da), bc(b, mb, db)) if side == "left" else P.vals(bc(b, mb, db), bc(a, ma, da))
        nops = P.vals(a, splat) if side == "left" else P.vals(splat, a)
        name = f"reduction.hoist_binary_splat_{side}"
        out.append(named(name, rule(eq(v).to(Val.op(nm, ops, attrs, big)), *facts, name=name).then(
            union(v).with_(P.broadcast(Val.op(nm, nops, attrs, small(dt)), dims, big))),
            "op(bcast(a), splat(s)) == bcast(op(a, splat(s))) (the splat re-targeted at a's shape)"))
    # select: its condition and value broadcast the same way from one shape, its other value a scalar splat (a masked
    # score ``select(j <= i, s, -inf)`` whose condition and score range over the rows only). The op is matched by
    # name, not through ``Elementwise``: the relation join over every three-operand op cost the group 1.9 s on
    # attention (4.3 -> 6.2 s), which has no select
    c, dc = var("c", Val), var("dc", String)
    mc = var("mc", AMap)
    lhs = Val.op("select", P.vals(bc(c, mc, dc), bc(a, ma, da), bc(b, mb, db)), attrs, big)
    # (c's shape follows from its dims being a's; b's from its empty dims: only a's type is looked up)
    facts = [P.HasAttr(mc, "dims", dims), P.HasAttr(ma, "dims", dims), P.HasAttr(mb, "dims", NO_DIMS),
             P.ValTy(a, small(da))]
    name = "reduction.hoist_select_splat"
    out.append(named(name, rule(eq(v).to(lhs), *facts, name=name).then(
        union(v).with_(P.broadcast(Val.op("select", P.vals(c, a, P.broadcast(b, NO_DIMS, small(db))), attrs,
                                          small(dt)), dims, big))),
        "select(bcast(c), bcast(a), splat(s)) == bcast(select(c, a, splat(s))) at c's shape (the splat re-targeted)"))
    return out


def seed(graph) -> None:
    """The lifting tables (shared with ``blocking``) and the combiners' identities."""
    B._seed_tables(graph)
    graph.run_text("\n".join(f"({graph.egg_name(CarryMask)} {m})" for m in BLOCKED_CARRIES if m))
    for comb, value in _IDENTITY.items():
        for dt in _FLOATS:
            B._fact(graph, ReduceIdentity, f'"{comb}"', f'"{dt}"', B._T("AFloat", float_text(value)))


_FLAT_SUPPORT, _FLATTEN = _flatten_rules()
#: the flattening's re-expression (``rulebooks/_loop_flatten.py``) and its nest index
FLAT = ruleset(name="reduction_flat")
FLAT_RULES = [named(n, r, law) for n, r, law in _loop_flatten.rules()] + _FLAT_SUPPORT
for _r in FLAT_RULES:
    FLAT.append(_r.egg)
ANALYSIS_RULES = _support_rules()
for _r in ANALYSIS_RULES:
    SUPPORT.append(_r.egg)
#: nested-loop lifting, in key-tile contexts and in this group's member contexts (issue 26 item 6: a statistic of a
#: contraction's result, ``max(n: sum(k: x * w))``, recomputes it as one K-tiled contract instead of one member at
#: a time). In member contexts it also lifts every score loop of attention's reductions: ~2 s more of this group
#: on an attention kernel, for two-pass variants that lose to the one-pass program (docs/rules.md)
NESTED = ruleset(name="reduction_nested")
NESTED_RULES = _nested_loop_rules(key_tiles()) + _nested_loop_rules(B._les(*_tiles()), "_r")
for _r in NESTED_RULES:
    NESTED.append(_r.egg)
ANALYSES = ANALYSES + (NESTED, FLAT)


def rules() -> list:
    return (_narrow_rules() + _hoist_rules() + _block_rules() + _arg_block_rules() + _key_demand_rules()
            + _key_block_rules() + _FLATTEN)


for _r in rules():
    RULESET.append(_r.egg)
