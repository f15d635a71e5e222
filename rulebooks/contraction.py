"""Contraction (SPEC PASS-3.4, PASS-4): a sum of products over a tiled reduction loop becomes a matrix-unit
contract over reduction tiles, whatever the layout its operands are stored in; a contract reads its f16/bf16/i8
operands directly; an additive term joins the accumulator's initial value; under ``fp32_contract`` an f32 contract
may round its operands.

Reads: ``for`` loops whose ``reduce = add`` mark says they realize an ordinary KIR sum (construction sets it; the
shared verifier checks the body really is ``add(carried, member)``), blocked by ownership (``blocking``) so the
accumulator is a ``[T0, T1]`` fragment over axes ``b0, b1``; the member's operand loads and their coordinates;
value types; the facts ``OptFp32Contract`` and ``TargetHas("contract_precision:..")``. The reduction tile ``TK`` is the symbolic parameter ``TILE_K``, bound after extraction from the
target's candidates in [16, 64] (a matrix unit needs K >= 16).

Legality: ``contraction.contract_loop_c*``: the member is ``mul(broadcast(a), broadcast(b))`` (either order) in
the accumulator dtype (same-dtype add reduction of a multiply), ``a`` a load over ``b0`` and ``b`` a load over
``b1``, each optionally converted by a ``cast`` to the accumulator dtype, with a zero fill; every coordinate of
each load is the loop's induction variable or reads no argument of the loop's region (``KLift``: computed on
demand, ``KFree``), in any position and number (``A[k, m]``, ``B[n, k]``, leading batch coordinates on one side
or both, a factor that does not read ``k``); the loop steps by one (every member is summed once). ``contraction.contract_loop_t_*``: the same with an
accumulator over ``(b0, b2)`` (a score tile of ``online_tiles``: rows by keys; a row statistic's member tile) and
``b`` a load over ``b2`` whose *last* coordinate is the induction variable (``B[.., n, k]``: attention's ``K[j, d]``),
up to two leading uniform coordinates on each operand; ``contraction.contract_loop_t{0,1}_<layout>_*`` (issue 26
item 6): the other layouts a linear layer gives a statistic's member tile -- ``W[k, n]`` over ``b2`` for a row
statistic, an accumulator over ``(b1, b2)`` for a column statistic (``W`` over ``b1``, ``X[m, k]`` over the member
tile ``b2``, the member written ``X * W``). ``contraction.operand_cast``: both operands are
f16 (or both bf16) widened to an f32 accumulator (their products are exact in f32, so the contract computes the
same sums), or both i8 widened to i32 (products exact; the i32 sum wraps like the IR's). ``contraction.fp32_*``:
the compile option ``fp32_contract`` is tf32 / bf16x3 (fact ``OptFp32Contract``) and the target's matrix unit
takes it (``TargetHas("contract_precision:...")``); both operands are f32 loads. ``contraction.bias_into_init`` (accumulator fusion): an ``add`` whose operand is the result of a
``reduce = add`` loop started from zero, the other operand of the same type independent of the loop (loads,
constants, broadcasts, casts of those), never across a cast (the add consumes the loop result itself).

``contraction.interchange`` (issue 26 item 2): a perfect nest ``for a {for b ..}`` whose innermost loop is a
step-1 ``reduce = add`` sum of products (each level's body is the next loop started from its carried value:
``AddNest``), the inner bounds free of ``a`` (``KFree``), the outer carried value read by nothing inside (its
re-expression ``_loop_swap.swap`` has no rule for it, so the term never resolves), and ``a`` read by every factor
of the member only as a whole load coordinate (``Direct``: the K-tile lift's form; so a convolution's channel loop
sinks below its window loops, and the window loops, read as ``i + kh - 1``, never move).
``contraction.masked_load*``: a factor of a sum of products (``MaskWant``) is ``select(p, load(.., valid v) fill
0, 0.0)`` (or of its ``cast``) with ``p`` of the load's shape.

Rewrites: ``for k in [lb, ub) step 1: acc + a(k) * b(k)`` -> ``for k0 in [lb, ub) step TK: contract(A tile
[T0, TK], B tile [TK, T1], acc)`` with the tiles loaded at ``k0 + range(TK)`` under ``k < ub`` (fill 0, so a tail
member contributes 0 * 0 = 0); the transposed form loads ``B[.., n, k0:k0+TK]`` as a ``[TN, TK]`` tile (the reduction
tile's axis is ``b3``) contracted along its axis 1; ``contract(cast(a16), cast(b16), acc)`` -> ``contract(a16, b16, acc)``;
``add(for(.., init 0), y)`` -> ``for(.., init y)``; ``contract(a, b, acc)`` -> ``contract(a, b, acc) {precision}``;
``for a (x0) {for b (acc) {..}}`` -> ``for b (x0) {for a (acc) {..}}`` (each loop keeps its attributes' position,
so the innermost stays ``reduce = add``); ``select(p, load(.., v), 0)`` -> ``load(.., p and v)``.

Preserves: the value of every sum up to reassociation of its members (PASS-4 "reassociate ordinary reduce",
"mul-sum to contract", "contraction-add fusion", "flatten/permute paired axes"), and up to the operand rounding ``fp32_contract`` permits;
effects, their order and the ABI; compile options.

Invalidates: the reduction loop's trip count and step, fragment footprints (tiles of ``T0 x TK`` and ``TK x T1``
operands), the FLOP mix (tensor-core contract instead of FMA), register/shared-memory estimates.

Verifier: the shared GPU verifier after the group (contract operand/accumulator shapes and dtypes, access
validity, the ``reduce`` loop form).
"""
from __future__ import annotations

import itertools

from egglog import String, eq, function, i64, ne, relation, rule, ruleset, union, var, vars_

from intent_eqsat.rules import facts as F
from rulebooks import _loop_swap
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.sorts import LE, LEs, A, AMap, Multi, Region, Regions, Stmts, Strs, Ty, Tys, Val, Vals

GROUP = "contraction"
ORDER = 30
RULESET = ruleset(name=GROUP)
SUPPORT = ruleset(name="contraction_support")
#: the interchange's re-expression (``rulebooks/_loop_swap.py``): many cheap steps, one per term level, so it is
#: saturated on its own before the support analyses (whose every step searches far larger patterns)
SWAP = ruleset(name="contraction_swap")
ANALYSES = (SWAP, SUPPORT)

INDEX = Ty.scalar("index")
#: the reduction tile size parameter (bound by the optimizer after extraction, ``intent_eqsat.optimizer.tiles``)
TILE_K = "TILE_K"

#: ``m`` holds ``key = value`` (for the keys this group reads)
CAttr = relation("ContractAttr", AMap, String, A)
_KEYS = ("reduce", "value", "fill", "valid")
#: the value is the constant 0.0 (a scalar or a broadcast of one)
ZeroVal = relation("ContractZero", Val)
#: the value is computed without any loop result (so it may move in front of a loop)
LoopFree = relation("ContractLoopFree", Val)
LoopFreeVals = relation("ContractLoopFreeVals", Vals)


def _ints(xs) -> A:
    return P.alist(*(A.int_(d) for d in xs))


def _frag(dt, shape: list, axes: list) -> Ty:
    return Ty.frag_axes(dt, P.les(*shape), P.strs(*axes))


def _bcast(x: Val, dims: list, ty: Ty) -> Val:
    return P.broadcast(x, _ints(dims), ty)


def _k_tile(iv: Val, ub: Val, axis: str) -> tuple[Val, Val]:
    """The reduction tile ``k0 + range(TK)`` over ``axis`` and its in-range mask ``k < ub``."""
    tkle = LE.sym(TILE_K)
    kc_ty = _frag("index", [tkle], [axis])
    kc = Val.op("add", P.vals(_bcast(iv, [], kc_ty), Val.op("range", Vals.nil(), AMap.nil(), kc_ty)), AMap.nil(),
                kc_ty)
    return kc, Val.op("cmp", P.vals(kc, _bcast(ub, [], kc_ty)), P.amap(pred=A.str_("lt")), _frag("i1", [tkle], [axis]))


def _support_rules() -> list:
    R = []
    key, k2 = vars_("key k2", String)
    m, rest = vars_("m rest", AMap)
    av, av2 = vars_("av av2", A)
    v, x = vars_("v x", Val)
    xs = var("xs", Vals)
    nm = var("nm", String)
    t = var("t", Ty)
    d, k = vars_("d k", i64)
    for kk in _KEYS:
        R.append((f"contraction.attr_{kk}", rule(eq(m).to(AMap.cons(kk, av, rest))).then(CAttr(m, kk, av)),
                  f"{kk} = v at the head of the attributes"))
    R.append(("contraction.attr_walk", rule(eq(m).to(AMap.cons(key, av2, rest)), CAttr(rest, k2, av)).then(
        CAttr(m, k2, av)), "an attribute further down the map"))
    R.append(("contraction.zero_const", rule(eq(v).to(Val.op("const", Vals.nil(), m, t)),
                                             CAttr(m, "value", A.float_("0.0"))).then(ZeroVal(v)), "const 0.0"))
    R.append(("contraction.zero_bcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), m, t)), ZeroVal(x)).then(
        ZeroVal(v)), "a broadcast of 0.0"))
    # only a kernel argument (a view or a size) or an induction variable: a carried argument is the running value
    # of an enclosing loop, and folding it into an inner sum's init would make that loop's body yield the inner
    # loop instead of ``add(carried, member)`` (the nested-sum defect of issue 26 item 8)
    R.append(("contraction.free_view", rule(eq(v).to(Val.arg(d, k, Ty.view(var("vdt", String), var("vsh", LEs))))
                                            ).then(LoopFree(v)), "a view argument"))
    R.append(("contraction.free_index", rule(eq(v).to(Val.arg(d, k, INDEX))).then(LoopFree(v)),
              "an index argument (a size or an induction variable)"))
    R.append(("contraction.free_nil", rule(eq(xs).to(Vals.nil())).then(LoopFreeVals(xs)), "no operands"))
    R.append(("contraction.free_cons", rule(eq(xs).to(Vals.cons(x, var("tl", Vals))), LoopFree(x),
                                            LoopFreeVals(var("tl", Vals))).then(LoopFreeVals(xs)), "operands"))
    R.append(("contraction.free_op", rule(eq(v).to(Val.op(nm, xs, m, t)), LoopFreeVals(xs)).then(LoopFree(v)),
              "a pure op of loop-free operands (an op term has no region: loops are Val.res terms)"))
    return R


#: demand (support): lift the operand list ``rest`` (a load's coordinates, then its validity) of one side of a
#: member to the K tile of the ``for`` at depth ``d``: (rest, iv, ub, d, the side's tile extent, side 0 = lhs / 1 = rhs)
KWant = relation("ContractKWant", Vals, Val, Val, i64, LE, i64)
#: the lifted operand list: every coordinate that is the induction variable becomes the K tile ``k0 + range(TK)``,
#: every coordinate free of the loop's arguments is broadcast over the K axis, and the validity gains ``k < ub``
KLift = relation("ContractKLift", Vals, Val, Val, i64, LE, i64, Vals)
#: the load's fill is zero (``0.0`` for floats, ``0`` for integers)
ZeroFill = relation("ContractZeroFill", AMap)
#: demand / fact: the value (the operands) reads no argument of the region at depth ``d`` (computed only for the
#: coordinates of a member's loads: a whole-graph dependency analysis before every iteration cost every kernel
#: ~10% of its compile time)
KFreeWant = relation("ContractKFreeWant", Val, i64)
KFreeWantVals = relation("ContractKFreeWantVals", Vals, i64)
KFree = relation("ContractKFree", Val, i64)
KFreeVals = relation("ContractKFreeVals", Vals, i64)

#: per side: (the side's own axis, the K tile's position in the side's tile, the side's position in it)
_SIDES = {0: ("b0", 1, 0), 1: ("b1", 0, 1)}


def _side_tile_ty(dt, t: LE, side: int) -> Ty:
    """The ``[T0, TK]`` (lhs, axes ``b0, b2``) or ``[TK, T1]`` (rhs, axes ``b2, b1``) tile type of one side."""
    tk = LE.sym(TILE_K)
    return _frag(dt, [t, tk], ["b0", "b2"]) if side == 0 else _frag(dt, [tk, t], ["b2", "b1"])


def _lift_rules() -> list:
    """Support rules computing ``KLift`` on demand (``KWant``), one operand at a time from the list's end."""
    R = []
    iv, ub, x, x2, va, y = vars_("iv ub x x2 va y", Val)
    tl, out = vars_("tl out", Vals)
    d, s = vars_("d s", i64)
    t = var("t", LE)
    m = var("m", AMap)
    R.append(("contraction.lift_fill_float", rule(CAttr(m, "fill", A.float_("0.0"))).then(ZeroFill(m)),
              "fill = 0.0"))
    R.append(("contraction.lift_fill_int", rule(CAttr(m, "fill", A.int_(0))).then(ZeroFill(m)), "fill = 0"))
    R.append(("contraction.lift_walk", rule(KWant(Vals.cons(x, Vals.cons(x2, tl)), iv, ub, d, t, s)).then(
        KWant(Vals.cons(x2, tl), iv, ub, d, t, s), KFreeWant(x, d)), "demand the tail of the operand list"))
    nm = var("nm", String)
    xs = var("xs", Vals)
    d2, k2 = vars_("d2 k2", i64)
    ty = var("ty", Ty)
    R += [
        ("contraction.free_want_op", rule(KFreeWant(Val.op(nm, xs, m, ty), d)).then(KFreeWantVals(xs, d)),
         "an op is free of a region when its operands are"),
        ("contraction.free_want_cons", rule(KFreeWantVals(Vals.cons(x, tl), d)).then(KFreeWant(x, d),
                                                                                   KFreeWantVals(tl, d)),
         "each operand"),
        ("contraction.free_nil_vals", rule(KFreeWantVals(Vals.nil(), d)).then(KFreeVals(Vals.nil(), d)),
         "no operands"),
        ("contraction.free_cons_vals", rule(KFreeWantVals(Vals.cons(x, tl), d), KFree(x, d), KFreeVals(tl, d)).then(
            KFreeVals(Vals.cons(x, tl), d)), "free operands"),
        ("contraction.free_of_op", rule(KFreeWant(Val.op(nm, xs, m, ty), d), KFreeVals(xs, d)).then(
            KFree(Val.op(nm, xs, m, ty), d)), "a pure op of free operands (loops are Val.res terms: never free)"),
        ("contraction.free_of_arg", rule(KFreeWant(Val.arg(d2, k2, ty), d), ne(d2).to(d)).then(
            KFree(Val.arg(d2, k2, ty), d)), "an argument of another region (an enclosing one)"),
    ]
    for side, (axis, kpos, own) in _SIDES.items():
        ix = _side_tile_ty("index", t, side)
        i1 = _side_tile_ty("i1", t, side)
        kc, kt = _k_tile(iv, ub, "b2")
        valid = [_bcast(va, [own], i1), _bcast(kt, [kpos], i1)]
        if side == 1:
            valid.reverse()
        R.append((f"contraction.lift_valid_want_{side}", rule(KWant(Vals.cons(va, Vals.nil()), iv, ub, d, t, side)
                                                               ).then(KFreeWant(va, d)),
                  "demand: is the member's validity free of the loop"))
        R.append((f"contraction.lift_valid_{side}", rule(KWant(Vals.cons(va, Vals.nil()), iv, ub, d, t, side),
                                                         KFree(va, d)).then(
            KLift(Vals.cons(va, Vals.nil()), iv, ub, d, t, side,
                  Vals.cons(Val.op("and", P.vals(*valid), AMap.nil(), i1), Vals.nil()))),
            "the validity of the member (free of the loop: the same for every member of the K tile), and k < ub "
            "over the K tile"))
        cell = Vals.cons(x, Vals.cons(x2, tl))
        want = [KWant(cell, iv, ub, d, t, side), KLift(Vals.cons(x2, tl), iv, ub, d, t, side, out)]
        R.append((f"contraction.lift_iv_{side}", rule(
            *want, eq(x).to(Val.op("broadcast", P.vals(iv), P.amap(dims=_ints([])), _frag("index", [t], [axis])))
        ).then(KLift(cell, iv, ub, d, t, side, Vals.cons(_bcast(kc, [kpos], ix), out))),
            "a coordinate that is the induction variable reads the K tile"))
        for form, (xt, dims) in itertools.product(("op", "arg"), ((_frag("index", [t], [axis]), [own]),
                                                                   (INDEX, []))):
            shape = Val.op(nm, xs, m, xt) if form == "op" else Val.arg(d2, k2, xt)
            kind = "uniform_" if not dims else ""
            R.append((f"contraction.lift_free_{kind}{form}_{side}", rule(*want, eq(x).to(shape), KFree(x, d)).then(
                KLift(cell, iv, ub, d, t, side, Vals.cons(_bcast(x, dims, ix), out))),
                f"a {'uniform ' if not dims else ''}coordinate free of the loop is the same for every member of "
                f"the K tile"))
    return R


#: a ``for`` at region depth ``d`` that adds members to its carried value: a step-1 ``reduce = add`` sum of
#: products ``acc + mul(x, y)``, or a loop whose body is such a nest started from its carried value (``for c: for kh:
#: for kw {reduce = add}: acc + x``, a KIR ``sum(c, kh, kw: ..)``): the nest adds every member once to its init
AddNest = relation("ContractAddNest", Val, i64)
#: ``(loop, depth, type, member)``: a ``reduce = add`` loop ``for .. {acc + member}`` (the contract rules join
#: from this small table: matching the loop and its two operand loads at once made egglog's join enumerate every
#: pair of loads, 20 s per search once interchange multiplied the loops)
SumMember = relation("ContractSumMember", Val, i64, Ty, Val)
#: ``(loop, depth, x, y)``: such a loop whose member is ``mul(x, y)``
MulMember = relation("ContractMulMember", Val, i64, Val, Val)
#: demand: the value is a factor of a sum of products (``masked_load`` reads it as one masked load)
MaskWant = relation("ContractMaskWant", Val)
#: ``(nest, x, y)``: the innermost member of an add nest is ``mul(x, y)``
NestMember = relation("ContractNestMember", Val, Val, Val)
#: demand / fact: the factor reads the depth-``d`` loop's induction variable only as a whole coordinate
DirectWant = relation("ContractDirectWant", Val, i64)
Direct = relation("ContractDirect", Val, i64)
IvWant = relation("ContractIvWant", Vals, i64)
IvOk = relation("ContractIvOk", Vals, i64)
#: ``(loop, depth, type, init, body, attrs)`` of every pure one-carry ``for``
Loop1 = relation("ContractLoop1", Val, i64, Ty, Val, Val, AMap)
#: ``(outer, inner, d, d + 1)``: a two-loop add nest ``for a {for b: ..}`` (inner started from the outer's carried)
SwapCand = relation("ContractSwapCand", Val, Val, i64, i64)


def _contract_loop_rules() -> list:
    """``for k step 1: acc + a(k) * b(k)`` over an ownership-blocked accumulator ``[T0, T1]`` (axes ``b0, b1``) ->
    a K-tiled contract loop, whatever the operands' layouts: each operand is a load over one accumulator axis whose
    coordinates are the induction variable or free of the loop, in any order and number (a transposed operand,
    ``A[k, m]``, ``B[n, k]``; leading batch coordinates on either side; an operand that does not read ``k``)."""
    R = []
    dt, adt, bdt = vars_("dt adt bdt", String)
    lb, ub, st, x0, y, viewa, viewb, px, qx = vars_("lb ub st x0 y viewa viewb px qx", Val)
    ra, rb, oa, ob = vars_("ra rb oa ob", Vals)
    attrs, rya, ya, ma, mb, pm, cs_a, cs_b, fa, fb, cattrs = vars_("attrs rya ya ma mb pm cs_a cs_b fa fb cattrs",
                                                                   AMap)
    d = var("d", i64)
    t0, t1 = vars_("t0 t1", LE)
    ty = _frag(dt, [t0, t1], ["b0", "b1"])
    iv = Val.arg(d, 0, INDEX)
    acc = Val.arg(d, 1, ty)
    tkle = LE.sym(TILE_K)
    la = Val.op("load", Vals.cons(viewa, ra), fa, _frag(adt, [t0], ["b0"]))
    lb_ = Val.op("load", Vals.cons(viewb, rb), fb, _frag(bdt, [t1], ["b1"]))
    a_tile = Val.op("load", Vals.cons(viewa, oa), fa, _side_tile_ty(adt, t0, 0))
    b_tile = Val.op("load", Vals.cons(viewb, ob), fb, _side_tile_ty(bdt, t1, 1))
    for cast_a in (0, 1):
        for cast_b in (0, 1):
            ea = Val.op("cast", P.vals(la), cs_a, _frag(dt, [t0], ["b0"])) if cast_a else la
            eb = Val.op("cast", P.vals(lb_), cs_b, _frag(dt, [t1], ["b1"])) if cast_b else lb_
            ta = Val.op("cast", P.vals(a_tile), cs_a, _side_tile_ty(dt, t0, 0)) if cast_a else a_tile
            tb = Val.op("cast", P.vals(b_tile), cs_b, _side_tile_ty(dt, t1, 1)) if cast_b else b_tile
            fa_ = Val.op("broadcast", P.vals(ea), ma, ty)
            fb_ = Val.op("broadcast", P.vals(eb), mb, ty)
            for order in ("ab", "ba"):
                member = Val.op("mul", P.vals(fa_, fb_) if order == "ab" else P.vals(fb_, fa_), pm, ty)
                loop = P.for1(lb, ub, st, x0, attrs, ty, d, Val.op("add", P.vals(acc, member), ya, ty), rya)
                contract = Val.op("contract", P.vals(ta, tb, acc), P.amap(lhs_contract=_ints([1]),
                                                                       rhs_contract=_ints([0])), ty)
                new = P.for1(lb, ub, Val.op("launch", Vals.nil(), P.amap(expr=A.le(tkle)), INDEX), x0, attrs, ty, d,
                             contract, rya)
                first, second = (fa_, fb_) if order == "ab" else (fb_, fa_)
                facts = [MulMember(y, d, px, qx), eq(px).to(first), eq(qx).to(second), eq(y).to(loop),
                         CAttr(attrs, "reduce", A.str_("add")),
                         eq(st).to(Val.op("const", Vals.nil(), cattrs, INDEX)), CAttr(cattrs, "value", A.int_(1)),
                         eq(ma).to(P.amap(dims=_ints([0]))), eq(mb).to(P.amap(dims=_ints([1]))),
                         ZeroFill(fa), ZeroFill(fb)]
                name = f"contraction.contract_loop_c{cast_a}{cast_b}_{order}"
                R.append((name + "_want", rule(*facts).then(KWant(ra, iv, ub, d, t0, i64(0)),
                                                           KWant(rb, iv, ub, d, t1, i64(1))),
                          "demand the K-tile form of both operands' coordinates"))
                R.append((name, rule(*facts, KLift(ra, iv, ub, d, t0, i64(0), oa),
                                     KLift(rb, iv, ub, d, t1, i64(1), ob), name=name).then(union(y).with_(new)),
                          "for k step 1: acc[m, n] + bcast(A[..m..k..]) * bcast(B[..k..n..])  ==  for k0 step TK: "
                          "contract(A tile [m, k0:k0+TK], B tile [k0:k0+TK, n], acc)  (an ordinary sum: members "
                          "regrouped; every operand read in its own layout, a coordinate free of k broadcast over "
                          "the K tile; tail members load 0)"))
    return R


def _contract_loop_transposed_rules() -> list:
    """``for k step 1: acc + a(k) * b(k)`` with the accumulator over ``(b0, b2)`` (a score tile: rows by keys,
    ``rulebooks.online_tiles``) and ``b`` read as ``B[.., n, k]`` (the reduction coordinate last: attention's
    ``K[j, d]``) -> a K-tiled contract whose right operand tile is ``[TN, TK]``, contracted along its axis 1 (the
    reduction tile's axis is ``b3``).

    The same over a row or column statistic's member tile (issue 26 item 6): a statistic of a contraction's result
    (``max(n: sum(k: X[m, k] * W[k, n]))``: a softmax, LayerNorm or logsumexp after a linear layer; ``sum(m: ..)``:
    a BatchNorm over its rows) blocked over ``TILE_R`` members lifts its member's nested sum as one loop whose
    accumulator is ``[T0, TR]`` over ``(b0, b2)`` or ``[T1, TR]`` over ``(b1, b2)``
    (``reduction.lift_nested_loop_r``); the operands are read in place in the layouts of :data:`_MEMBER_TILE_FORMS`
    (row statistics of ``X @ W`` and ``X @ W.T``, column statistics of both). Explicit layouts, not the coordinate
    lift (``KLift``) of ``contract_loop_c*``: its demands over every statistic's member tile took an attention
    kernel's contraction group from 2.4 s to 15 s."""
    R = []
    for rows_axis, a_kfirst, b_kfirst in _MEMBER_TILE_FORMS:
        R += _member_tile_contract_rules(rows_axis, a_kfirst, b_kfirst)
    return R


#: (the accumulator's row axis, A reads k before its row coordinate, B reads k before its member coordinate): the
#: attention scores ``Q[.., i, d] * K[.., j, d]``; a row statistic of ``X[m, k] * W[k, n]`` (``X @ W``; ``X @ W.T``
#: is the first form); a column statistic of ``X @ W`` (``W[k, n]`` over the columns, ``X[m, k]`` over the member
#: tile) and of ``X @ W.T``. Each form is 6 rules searched on every iteration (~0.8 s a form on an attention kernel),
#: so only the layouts a linear layer gives, not all eight
_MEMBER_TILE_FORMS = (("b0", False, False), ("b0", False, True), ("b1", True, False), ("b1", False, False))


def _member_tile_contract_rules(rows_axis: str, a_kfirst: bool, b_kfirst: bool) -> list:
    """The contract rules of one accumulator axis (``rows_axis`` by ``b2``) and one pair of operand layouts
    (``a_kfirst``: ``A[.., k, m]``, else ``A[.., m, k]``; the same for ``B``)."""
    R = []
    dt = var("dt", String)
    lb, ub, st, x0, y, va, vb, rows, cols = vars_("lb ub st x0 y va vb rows cols", Val)
    viewa, viewb, px, qx = vars_("viewa viewb px qx", Val)
    pre = list(vars_("pa0 pa1 pb0 pb1", Val))
    attrs, rya, ya, ma, mb, pm, cs_a, cs_b, fa_rest, fb_rest, ka_m, kb_m, cattrs = vars_(
        "attrs rya ya ma mb pm cs_a cs_b fa_rest fb_rest ka_m kb_m cattrs", AMap)
    adt, bdt = vars_("adt bdt", String)
    d = var("d", i64)
    t0, tn = vars_("t0 tn", LE)
    ty = _frag(dt, [t0, tn], [rows_axis, "b2"])
    iv = Val.arg(d, 0, INDEX)
    acc = Val.arg(d, 1, ty)
    ka = Val.op("broadcast", P.vals(iv), ka_m, _frag("index", [t0], [rows_axis]))
    kb = Val.op("broadcast", P.vals(iv), kb_m, _frag("index", [tn], ["b2"]))
    tkle = LE.sym(TILE_K)
    kc, kt = _k_tile(iv, ub, "b3")                  # b2 is the member tile's axis here
    a_ix, b_ix = _frag("index", [t0, tkle], [rows_axis, "b3"]), _frag("index", [tn, tkle], ["b2", "b3"])
    a_i1, b_i1 = _frag("i1", [t0, tkle], [rows_axis, "b3"]), _frag("i1", [tn, tkle], ["b2", "b3"])
    a_valid = Val.op("and", P.vals(_bcast(va, [0], a_i1), _bcast(kt, [1], a_i1)), AMap.nil(), a_i1)
    b_valid = Val.op("and", P.vals(_bcast(vb, [0], b_i1), _bcast(kt, [1], b_i1)), AMap.nil(), b_i1)

    def ordered(own, k, kfirst: bool) -> list:
        return [k, own] if kfirst else [own, k]

    layout = ("k" if a_kfirst else "m") + ("k" if b_kfirst else "n")
    for n_pre in (0, 1, 2):                  # leading (batch, head) coordinates, uniform over the tile
        pa, pb = pre[:n_pre], pre[2:2 + n_pre]
        la = Val.op("load", P.vals(viewa, *pa, *ordered(rows, ka, a_kfirst), va), fa_rest,
                    _frag(adt, [t0], [rows_axis]))
        lb_ = Val.op("load", P.vals(viewb, *pb, *ordered(cols, kb, b_kfirst), vb), fb_rest, _frag(bdt, [tn], ["b2"]))
        a_tile = Val.op("load", P.vals(viewa, *[_bcast(p, [0], a_ix) for p in pa],
                                       *ordered(_bcast(rows, [0], a_ix), _bcast(kc, [1], a_ix), a_kfirst), a_valid),
                        fa_rest, _frag(adt, [t0, tkle], [rows_axis, "b3"]))
        b_tile = Val.op("load", P.vals(viewb, *[_bcast(p, [0], b_ix) for p in pb],
                                       *ordered(_bcast(cols, [0], b_ix), _bcast(kc, [1], b_ix), b_kfirst), b_valid),
                        fb_rest, _frag(bdt, [tn, tkle], ["b2", "b3"]))
        for cast in (0, 1):
            ea = Val.op("cast", P.vals(la), cs_a, _frag(dt, [t0], [rows_axis])) if cast else la
            eb = Val.op("cast", P.vals(lb_), cs_b, _frag(dt, [tn], ["b2"])) if cast else lb_
            ta = Val.op("cast", P.vals(a_tile), cs_a, _frag(dt, [t0, tkle], [rows_axis, "b3"])) if cast else a_tile
            tb = Val.op("cast", P.vals(b_tile), cs_b, _frag(dt, [tn, tkle], ["b2", "b3"])) if cast else b_tile
            fa_, fb_ = Val.op("broadcast", P.vals(ea), ma, ty), Val.op("broadcast", P.vals(eb), mb, ty)
            # a column statistic's member reads the member tile's factor first (X[m, k] * W[k, n], m lifted)
            first, second = (fb_, fa_) if rows_axis == "b1" else (fa_, fb_)
            member = Val.op("mul", P.vals(first, second), pm, ty)
            loop = P.for1(lb, ub, st, x0, attrs, ty, d, Val.op("add", P.vals(acc, member), ya, ty), rya)
            contract = Val.op("contract", P.vals(ta, tb, acc), P.amap(lhs_contract=_ints([1]),
                                                                   rhs_contract=_ints([1])), ty)
            new = P.for1(lb, ub, Val.op("launch", Vals.nil(), P.amap(expr=A.le(tkle)), INDEX), x0, attrs, ty, d,
                         contract, rya)
            # the MulMember row (one per sum of products, indexed by the support rules) bounds egglog's semi-naive
            # delta joins of the loop pattern with its two loads (most of an attention's contraction group without
            # it; measured in docs/status.md, issue 27 "Compile cost"). Kept after the loop pattern: written first,
            # the rule matched more loops than the pattern alone (9 instead of 5 on causal attention bf16) and the
            # extraction failed to decode; not explained yet
            facts = [eq(y).to(loop), MulMember(y, d, px, qx), eq(px).to(first), eq(qx).to(second),
                     eq(ma).to(P.amap(dims=_ints([0]))), eq(mb).to(P.amap(dims=_ints([1]))),
                     eq(ka_m).to(P.amap(dims=_ints([]))), eq(kb_m).to(P.amap(dims=_ints([]))),
                     eq(st).to(Val.op("const", Vals.nil(), cattrs, INDEX)), CAttr(cattrs, "value", A.int_(1)),
                     CAttr(attrs, "reduce", A.str_("add")),
                     CAttr(fa_rest, "fill", A.float_("0.0")), CAttr(fb_rest, "fill", A.float_("0.0"))]
            if (rows_axis, layout) == ("b0", "mn"):
                name = f"contraction.contract_loop_t_b{n_pre}_c{cast}{cast}"      # attention's scores
            else:
                name = f"contraction.contract_loop_t{rows_axis[1]}_{layout}_b{n_pre}_c{cast}{cast}"
            a_text = "A[.., k, m]" if a_kfirst else "A[.., m, k]"
            b_text = "B[.., k, n]" if b_kfirst else "B[.., n, k]"
            R.append((name, rule(*facts, name=name).then(union(y).with_(new)),
                      f"for k step 1: acc[{'m' if rows_axis == 'b0' else 'c'}, n] + bcast({a_text}) * bcast({b_text})"
                      f"  ==  for k0 step TK: contract(A tile [.., k0:k0+TK], B tile [n, k0:k0+TK] along its "
                      f"axis 1, acc)  (an ordinary sum: members regrouped; each operand read in place; tail "
                      f"members load 0)"))
    return R


def _operand_and_init_rules() -> list:
    R = []
    a, b, accv, y, x0, lb, ub, st = vars_("a b accv y x0 lb ub st", Val)
    ca, cb, attrs, la_, lattrs, rya, aattrs = vars_("ca cb attrs la_ lattrs rya aattrs", AMap)
    sha, shb = vars_("sha shb", LEs)
    axa, axb = vars_("axa axb", Strs)
    ty, tya, tyb = vars_("ty tya tyb", Ty)
    nma, nmb = vars_("nma nmb", String)
    xa, xb = vars_("xa xb", Vals)
    region = var("region", Region)
    for half, wide in (("f16", "f32"), ("bf16", "f32"), ("i8", "i32")):
        opa = Val.op(nma, xa, la_, Ty.frag_axes(half, sha, axa))
        opb = Val.op(nmb, xb, lattrs, Ty.frag_axes(half, shb, axb))
        lhs = Val.op("contract", P.vals(Val.op("cast", P.vals(opa), ca, Ty.frag_axes(wide, sha, axa)),
                                       Val.op("cast", P.vals(opb), cb, Ty.frag_axes(wide, shb, axb)), accv), attrs, ty)
        name = f"contraction.operand_cast_{half}"
        why = "products are exact in f32" if wide == "f32" else \
            "products are exact in i32 (|a*b| <= 2^14) and the matrix unit's i32 sum wraps like the IR's"
        R.append((name, rule(eq(y).to(lhs), name=name).then(
            union(y).with_(Val.op("contract", P.vals(opa, opb, accv), attrs, ty))),
            f"contract({wide}({half} a), {wide}({half} b), acc: {wide}) == contract(a, b, acc) ({half} {why})"))
    loop_tys = Tys.cons(ty, Tys.nil())
    loop = Val.res(Multi.op("for", P.vals(lb, ub, st, x0), attrs, loop_tys, Regions.cons(region, Regions.nil())), 0, ty)
    fused = Val.res(Multi.op("for", P.vals(lb, ub, st, y), attrs, loop_tys, Regions.cons(region, Regions.nil())), 0, ty)
    for order in ("left", "right"):
        s = Val.op("add", P.vals(loop, y) if order == "left" else P.vals(y, loop), aattrs, ty)
        name = f"contraction.bias_into_init_{order}"
        R.append((name, rule(eq(accv).to(s), CAttr(attrs, "reduce", A.str_("add")), ZeroVal(x0), LoopFree(y),
                             name=name).then(union(accv).with_(fused)),
                  "sum(members, init 0) + y == sum(members, init y)  (an ordinary sum: y is one more member, "
                  "added first; y is computed without the loop)"))
    return R


def _interchange_rules() -> tuple[list, list]:
    """Loop interchange of a sum over several axes (SPEC PASS-4 "reassociate ordinary reduce", "flatten/permute
    paired axes"): ``for a {for b: acc + x(a, b)}`` == ``for b {for a: acc + x(a, b)}`` when the inner bounds do
    not read the outer loop (a rectangular nest), so every axis of a multi-axis sum may become the innermost loop
    -- a convolution's channel loop under its window loops is then a contraction. Returns (support, rewrites)."""
    support, rewrites = [], []
    lb, ub, st, x0, m, w, lb2, ub2, st2, body, inner_v = vars_("lb ub st x0 m w lb2 ub2 st2 body inner_v", Val)
    attrs, ya, a2, y2, addm = vars_("attrs ya a2 y2 addm", AMap)
    d, d1 = vars_("d d1", i64)
    ty = var("ty", Ty)
    acc = Val.arg(d, 1, ty)
    # the joins run over the small ``Loop1`` / ``SwapCand`` tables first: a rule matching two nested ``for``
    # patterns at once made egglog's join enumerate every pair of loops (a 3x3 convolution's contraction group
    # took 80 s instead of 2)
    support.append(("contraction.loop1", rule(eq(w).to(P.for1(lb, ub, st, x0, attrs, ty, d, body, ya))).then(
        Loop1(w, d, ty, x0, body, attrs)), "a pure one-carry for loop, indexed"))
    support.append(("contraction.sum_member", rule(Loop1(w, d, ty, x0, body, attrs), CAttr(attrs, "reduce",
                                                                                           A.str_("add")),
                                                   eq(body).to(Val.op("add", P.vals(acc, m), addm, ty))).then(
        SumMember(w, d, ty, m)), "a reduce = add loop's member, indexed"))
    px, qx = vars_("px qx", Val)
    support.append(("contraction.mul_member", rule(SumMember(w, d, ty, m), eq(m).to(Val.op("mul", P.vals(px, qx),
                                                                                          addm, ty))).then(
        MulMember(w, d, px, qx)), "a sum of products, indexed"))
    cattrs = var("cattrs", AMap)
    step1 = [eq(w).to(P.for1(lb, ub, st, x0, attrs, ty, d, body, ya)),
             eq(st).to(Val.op("const", Vals.nil(), cattrs, INDEX)), CAttr(cattrs, "value", A.int_(1))]
    support.append(("contraction.add_nest_sum", rule(MulMember(w, d, px, qx), *step1).then(
        AddNest(w, d), NestMember(w, px, qx)),
                    "a step-1 sum of products adds its members to its init (only products: interchange serves "
                    "mul-sum to contract, and every other nest it would multiply costs the search)"))
    support.append(("contraction.add_nest_nest", rule(Loop1(w, d, ty, x0, inner_v, attrs), AddNest(inner_v, d1),
                                                      Loop1(inner_v, d1, ty, acc, m, a2),
                                                      NestMember(inner_v, px, qx)).then(
        AddNest(w, d), NestMember(w, px, qx), SwapCand(w, inner_v, d, d1), DirectWant(px, d), DirectWant(qx, d)),
        "a loop whose body is an add nest started from its carried value adds every member to its init"))
    inner = P.for1(lb2, ub2, st2, acc, a2, ty, d1, m, y2)
    outer = P.for1(lb, ub, st, x0, attrs, ty, d, inner, ya)
    support.append(("contraction.interchange_want", rule(SwapCand(w, inner_v, d, d1), eq(inner_v).to(inner)).then(
        KFreeWant(lb2, d), KFreeWant(ub2, d), KFreeWant(st2, d)), "demand: are the inner bounds free of the outer loop"))
    swapped = P.for1(lb, ub, st, acc, a2, ty, d1, _loop_swap.swap(m, d), y2)
    new = P.for1(lb2, ub2, st2, x0, attrs, ty, d, swapped, ya)
    support += _direct_rules()
    rewrites.append(("contraction.interchange", rule(SwapCand(w, inner_v, d, d1), NestMember(w, px, qx),
                                                     Direct(px, d), Direct(qx, d), KFree(lb2, d), KFree(ub2, d),
                                                     KFree(st2, d), eq(inner_v).to(inner), eq(w).to(outer),
                                                     name="contraction.interchange").then(union(w).with_(new)),
                     "for a in A (x0) {for b in B (acc) {acc + x(a, b)}} == for b in B (x0) {for a in A (acc) {acc + "
                     "x(a, b)}}  (B free of a: the same members, regrouped; each loop keeps its attributes' place, "
                     "so the innermost stays reduce = add; only a whose every read is A[.., a, ..]-direct sinks)"))
    return support, rewrites


def _direct_rules() -> list:
    """``Direct(x, d)``: the factor ``x`` (a broadcast / cast of a load) reads the induction variable of the loop at
    depth ``d`` only as a whole coordinate (each coordinate and the validity is ``Arg(d, 0)`` or free of that
    loop: the K-tile lift's form), computed on demand (``DirectWant``)."""
    R = []
    x, y, view, va = vars_("x y view va", Val)
    xs, tl = vars_("xs tl", Vals)
    m = var("m", AMap)
    t, t2 = vars_("t t2", Ty)
    d = var("d", i64)
    for op in ("broadcast", "cast"):
        R.append((f"contraction.direct_want_{op}", rule(DirectWant(Val.op(op, P.vals(x), m, t), d)).then(
            DirectWant(x, d)), f"through a {op}"))
        R.append((f"contraction.direct_{op}", rule(DirectWant(Val.op(op, P.vals(x), m, t), d), Direct(x, d)).then(
            Direct(Val.op(op, P.vals(x), m, t), d)), f"a {op} of a direct read"))
    R.append(("contraction.direct_want_load", rule(DirectWant(Val.op("load", Vals.cons(view, xs), m, t), d)).then(
        IvWant(xs, d)), "a load's coordinates and validity"))
    R.append(("contraction.direct_load", rule(DirectWant(Val.op("load", Vals.cons(view, xs), m, t), d),
                                              IvOk(xs, d)).then(Direct(Val.op("load", Vals.cons(view, xs), m, t), d)),
              "a load whose every coordinate is the induction variable or free of the loop"))
    R.append(("contraction.iv_want", rule(IvWant(Vals.cons(x, tl), d)).then(IvWant(tl, d), KFreeWant(x, d)),
              "each operand"))
    R.append(("contraction.iv_nil", rule(IvWant(Vals.nil(), d)).then(IvOk(Vals.nil(), d)), "no operands"))
    R.append(("contraction.iv_free", rule(IvWant(Vals.cons(x, tl), d), KFree(x, d), IvOk(tl, d)).then(
        IvOk(Vals.cons(x, tl), d)), "an operand free of the loop"))
    iv = Val.arg(d, 0, INDEX)
    for form, v in (("bcast", Val.op("broadcast", P.vals(iv), m, t2)), ("scalar", iv)):
        R.append((f"contraction.iv_{form}", rule(IvWant(Vals.cons(v, tl), d), IvOk(tl, d)).then(
            IvOk(Vals.cons(v, tl), d)), "a coordinate that is the induction variable"))
    return R


#: ``and_last(xs, p, t)``: the operand list ``xs`` with its last operand (a load's validity) and-ed with ``p`` (of
#: type ``t``)
@function(egg_fn="ContractAndLast")
def and_last(xs: Vals, p: Val, t: Ty) -> Vals: ...


def _masked_load_rules() -> list:
    """``select(p, load(.., valid v) fill 0, 0) == load(.., valid p and v) fill 0``: a KIR ``X[..] where p else
    0.0`` read as one masked load, so a padded convolution's window read is a contract operand (its mask joins
    the tile's validity)."""
    R = []
    p, ld, z, view, x, y, out = vars_("p ld z view x y out", Val)
    xs, rest, outs = vars_("xs rest outs", Vals)
    ms, fm, pm = vars_("ms fm pm", AMap)
    pn, dt = vars_("pn dt", String)
    pxs = var("pxs", Vals)
    sh = var("sh", LEs)
    ax = var("ax", Strs)
    pt = Ty.frag_axes("i1", sh, ax)
    t = Ty.frag_axes(dt, sh, ax)
    tt = var("tt", Ty)
    R.append(("contraction.and_last_one", rule(eq(outs).to(and_last(Vals.cons(x, Vals.nil()), p, tt))).then(
        union(outs).with_(Vals.cons(Val.op("and", P.vals(p, x), AMap.nil(), tt), Vals.nil()))),
        "the last operand and-ed"))
    R.append(("contraction.and_last_more", rule(eq(outs).to(and_last(Vals.cons(x, Vals.cons(y, rest)), p, tt))).then(
        union(outs).with_(Vals.cons(x, and_last(Vals.cons(y, rest), p, tt)))), "walk to the last operand"))
    sel = Val.op("select", P.vals(Val.op(pn, pxs, pm, pt), Val.op("load", Vals.cons(view, xs), fm, t), z), ms, t)
    masked = Val.op("load", Vals.cons(view, and_last(xs, Val.op(pn, pxs, pm, pt), pt)), fm, t)
    w, px, qx, fx = vars_("w px qx fx", Val)
    d, bm, bt = var("d", i64), var("bm", AMap), var("bt", Ty)
    for pos in (0, 1):
        factor = px if pos == 0 else qx
        R.append((f"contraction.mask_want_{pos}", rule(MulMember(w, d, px, qx), eq(factor).to(
            Val.op("broadcast", P.vals(fx), bm, bt))).then(MaskWant(fx)),
            "demand: a factor of a sum of products may be a masked load (the suite's other selects stay)"))
    rule_ = rule(MaskWant(out), eq(out).to(sel), CAttr(fm, "valid", A.bool_(1)), ZeroFill(fm), ZeroVal(z),
                 name="contraction.masked_load")
    ldt, cm = var("ldt", String), var("cm", AMap)
    lt = Ty.frag_axes(ldt, sh, ax)
    csel = Val.op("select", P.vals(Val.op(pn, pxs, pm, pt), Val.op("cast", P.vals(
        Val.op("load", Vals.cons(view, xs), fm, lt)), cm, t), z), ms, t)
    cmasked = Val.op("cast", P.vals(Val.op("load", Vals.cons(view, and_last(xs, Val.op(pn, pxs, pm, pt), pt)), fm,
                                           lt)), cm, t)
    rule_c = rule(MaskWant(out), eq(out).to(csel), CAttr(fm, "valid", A.bool_(1)), ZeroFill(fm), ZeroVal(z),
                  name="contraction.masked_load_cast")
    return R, [("contraction.masked_load", rule_.then(union(out).with_(masked)),
                "select(p, load(.., valid v) fill 0, 0) == load(.., valid p and v) fill 0  (where p is false both "
                "are 0; where p holds both read the load)"),
               ("contraction.masked_load_cast", rule_c.then(union(out).with_(cmasked)),
                "select(p, cast(load(.., valid v) fill 0), 0.0) == cast(load(.., valid p and v) fill 0)  (a widened "
                "bf16/f16 read: the cast of the zero fill is 0.0)")]


_LOOP_RULES = _contract_loop_rules()
_INTERCHANGE_SUPPORT, _INTERCHANGE = _interchange_rules()
_MASK_SUPPORT, _MASK = _masked_load_rules()
def _operand_text(form: str) -> str:
    return "an f32 load" if form == "load" else f"an f32-widened {form} load"


def _precision_rules() -> list:
    """Compile option ``fp32_contract`` (issue 26 item 3): an f32 x f32 contract of two loaded tiles may take the
    matrix unit at the permitted precision; the cost model chooses between it and the exact (ieee) form."""
    R = []
    a, b, accv, y = vars_("a b accv y", Val)
    lc, rc = vars_("lc rc", A)
    xa, xb = vars_("xa xb", Vals)
    ma, mb = vars_("ma mb", AMap)
    sha, shb, shc = vars_("sha shb shc", LEs)
    axa, axb, axc = vars_("axa axb axc", Strs)
    ca, cb = vars_("ca cb", AMap)
    ta, tb = Ty.frag_axes("f32", sha, axa), Ty.frag_axes("f32", shb, axb)
    tc = Ty.frag_axes("f32", shc, axc)

    def operand(form: str, xs, m, c, sh, ax, t):
        """An f32 tile: an f32 load, or an f16/bf16 load widened by a cast (exact in tf32 and in bf16x3's halves,
        so the permission rounds only the f32 side of a mixed product)."""
        if form == "load":
            return Val.op("load", xs, m, t)
        return Val.op("cast", P.vals(Val.op("load", xs, m, Ty.frag_axes(form, sh, ax))), c, t)
    # both sides widened halves are operand_cast's (a half contract); one widened side is a mixed product
    forms = [("load", "load"), ("load", "f16"), ("load", "bf16"), ("f16", "load"), ("bf16", "load")]
    for prec in ("tf32", "bf16x3"):
        for fa, fb in forms:
            la = operand(fa, xa, ma, ca, sha, axa, ta)
            lb_ = operand(fb, xb, mb, cb, shb, axb, tb)
            lhs = Val.op("contract", P.vals(la, lb_, accv), P.amap(lhs_contract=lc, rhs_contract=rc), tc)
            rhs = Val.op("contract", P.vals(la, lb_, accv), P.amap(lhs_contract=lc, precision=A.str_(prec),
                                                                   rhs_contract=rc), tc)
            name = f"contraction.fp32_{prec}" + ("" if (fa, fb) == ("load", "load") else f"_{fa}_{fb}")
            R.append((name, rule(eq(y).to(lhs), F.OptFp32Contract(prec), F.TargetHas(f"contract_precision:{prec}"),
                                 name=name).then(union(y).with_(rhs)),
                      f"under fp32_contract={prec}: contract({_operand_text(fa)} a, {_operand_text(fb)} b, acc: f32) "
                      f"== contract(a, b, acc) at "
                      f"{prec} precision (the option's permission; the target's matrix unit takes {prec})"))
    return R


_SUPPORT_RULES = _support_rules() + _lift_rules() + [r for r in _LOOP_RULES if r[0].endswith("_want")] + \
    _INTERCHANGE_SUPPORT + _MASK_SUPPORT
for _name, _rule, _law in _SUPPORT_RULES:
    SUPPORT.append(_rule)
SWAP_RULES = _loop_swap.rules()
ANALYSIS_RULES = _SUPPORT_RULES + SWAP_RULES
for _name, _rule, _law in SWAP_RULES:
    SWAP.append(_rule)

_RULES = [r for r in _LOOP_RULES if not r[0].endswith("_want")] + _contract_loop_transposed_rules() + \
    _operand_and_init_rules() + _precision_rules() + _INTERCHANGE + _MASK


def rules():
    """(name, egglog rule, law) for every rewrite of the group (support facts: ``ANALYSIS_RULES``)."""
    return _RULES


for _name, _rule, _law in _RULES:
    RULESET.append(_rule)
