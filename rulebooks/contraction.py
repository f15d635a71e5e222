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
accumulator over ``(b0, b2)`` (a score tile of ``online_tiles``: rows by keys) and ``b`` a load over ``b2`` whose
*last* coordinate is the induction variable (``B[.., n, k]``: attention's ``K[j, d]``), up to two leading uniform
coordinates on each operand. ``contraction.operand_cast``: both operands are
f16 (or both bf16) widened to an f32 accumulator (their products are exact in f32, so the contract computes the
same sums), or both i8 widened to i32 (products exact; the i32 sum wraps like the IR's). ``contraction.fp32_*``:
the compile option ``fp32_contract`` is tf32 / bf16x3 (fact ``OptFp32Contract``) and the target's matrix unit
takes it (``TargetHas("contract_precision:...")``); both operands are f32 loads. ``contraction.bias_into_init`` (accumulator fusion): an ``add`` whose operand is the result of a
``reduce = add`` loop started from zero, the other operand of the same type independent of the loop (loads,
constants, broadcasts, casts of those), never across a cast (the add consumes the loop result itself).

Rewrites: ``for k in [lb, ub) step 1: acc + a(k) * b(k)`` -> ``for k0 in [lb, ub) step TK: contract(A tile
[T0, TK], B tile [TK, T1], acc)`` with the tiles loaded at ``k0 + range(TK)`` under ``k < ub`` (fill 0, so a tail
member contributes 0 * 0 = 0); the transposed form loads ``B[.., n, k0:k0+TK]`` as a ``[TN, TK]`` tile (the reduction
tile's axis is ``b3``) contracted along its axis 1; ``contract(cast(a16), cast(b16), acc)`` -> ``contract(a16, b16, acc)``;
``add(for(.., init 0), y)`` -> ``for(.., init y)``; ``contract(a, b, acc)`` -> ``contract(a, b, acc) {precision}``.

Preserves: the value of every sum up to reassociation of its members (PASS-4 "reassociate ordinary reduce",
"mul-sum to contract", "contraction-add fusion"), and up to the operand rounding ``fp32_contract`` permits;
effects, their order and the ABI; compile options.

Invalidates: the reduction loop's trip count and step, fragment footprints (tiles of ``T0 x TK`` and ``TK x T1``
operands), the FLOP mix (tensor-core contract instead of FMA), register/shared-memory estimates.

Verifier: the shared GPU verifier after the group (contract operand/accumulator shapes and dtypes, access
validity, the ``reduce`` loop form).
"""
from __future__ import annotations

import itertools

from egglog import String, eq, i64, ne, relation, rule, ruleset, union, var, vars_

from intent_eqsat.rules import facts as F
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.sorts import LE, LEs, A, AMap, Multi, Region, Regions, Stmts, Strs, Ty, Tys, Val, Vals

GROUP = "contraction"
ORDER = 30
RULESET = ruleset(name=GROUP)
SUPPORT = ruleset(name="contraction_support")
ANALYSES = (SUPPORT,)

INDEX = Ty.scalar("index")
#: the reduction tile size parameter (bound by the optimizer after extraction, ``intent_eqsat.optimizer.tiles``)
TILE_K = "TILE_K"

#: ``m`` holds ``key = value`` (for the keys this group reads)
CAttr = relation("ContractAttr", AMap, String, A)
_KEYS = ("reduce", "value", "fill")
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
        R.append((f"contraction.lift_valid_{side}", rule(KWant(Vals.cons(va, Vals.nil()), iv, ub, d, t, side)).then(
            KLift(Vals.cons(va, Vals.nil()), iv, ub, d, t, side,
                  Vals.cons(Val.op("and", P.vals(*valid), AMap.nil(), i1), Vals.nil()))),
            "the validity of the member, and k < ub over the K tile"))
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


def _contract_loop_rules() -> list:
    """``for k step 1: acc + a(k) * b(k)`` over an ownership-blocked accumulator ``[T0, T1]`` (axes ``b0, b1``) ->
    a K-tiled contract loop, whatever the operands' layouts: each operand is a load over one accumulator axis whose
    coordinates are the induction variable or free of the loop, in any order and number (a transposed operand,
    ``A[k, m]``, ``B[n, k]``; leading batch coordinates on either side; an operand that does not read ``k``)."""
    R = []
    dt, adt, bdt = vars_("dt adt bdt", String)
    lb, ub, st, x0, y, viewa, viewb = vars_("lb ub st x0 y viewa viewb", Val)
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
                facts = [eq(y).to(loop), CAttr(attrs, "reduce", A.str_("add")),
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
    reduction tile's axis is ``b3``)."""
    R = []
    dt = var("dt", String)
    lb, ub, st, x0, y, va, vb, rows, cols = vars_("lb ub st x0 y va vb rows cols", Val)
    viewa, viewb = vars_("viewa viewb", Val)
    pre = list(vars_("pa0 pa1 pb0 pb1", Val))
    attrs, rya, ya, ma, mb, pm, cs_a, cs_b, fa_rest, fb_rest, ka_m, kb_m, cattrs = vars_(
        "attrs rya ya ma mb pm cs_a cs_b fa_rest fb_rest ka_m kb_m cattrs", AMap)
    adt, bdt = vars_("adt bdt", String)
    d = var("d", i64)
    t0, tn = vars_("t0 tn", LE)
    ty = _frag(dt, [t0, tn], ["b0", "b2"])
    iv = Val.arg(d, 0, INDEX)
    acc = Val.arg(d, 1, ty)
    ka = Val.op("broadcast", P.vals(iv), ka_m, _frag("index", [t0], ["b0"]))
    kb = Val.op("broadcast", P.vals(iv), kb_m, _frag("index", [tn], ["b2"]))
    tkle = LE.sym(TILE_K)
    kc, kt = _k_tile(iv, ub, "b3")                  # b2 is the key tile's axis here
    a_ix, b_ix = _frag("index", [t0, tkle], ["b0", "b3"]), _frag("index", [tn, tkle], ["b2", "b3"])
    a_i1, b_i1 = _frag("i1", [t0, tkle], ["b0", "b3"]), _frag("i1", [tn, tkle], ["b2", "b3"])
    a_valid = Val.op("and", P.vals(_bcast(va, [0], a_i1), _bcast(kt, [1], a_i1)), AMap.nil(), a_i1)
    b_valid = Val.op("and", P.vals(_bcast(vb, [0], b_i1), _bcast(kt, [1], b_i1)), AMap.nil(), b_i1)
    for n_pre in (0, 1, 2):                  # leading (batch, head) coordinates, uniform over the tile
        pa, pb = pre[:n_pre], pre[2:2 + n_pre]
        la = Val.op("load", P.vals(viewa, *pa, rows, ka, va), fa_rest, _frag(adt, [t0], ["b0"]))
        lb_ = Val.op("load", P.vals(viewb, *pb, cols, kb, vb), fb_rest, _frag(bdt, [tn], ["b2"]))
        a_tile = Val.op("load", P.vals(viewa, *[_bcast(p, [0], a_ix) for p in pa], _bcast(rows, [0], a_ix),
                                       _bcast(kc, [1], a_ix), a_valid), fa_rest, _frag(adt, [t0, tkle], ["b0", "b3"]))
        b_tile = Val.op("load", P.vals(viewb, *[_bcast(p, [0], b_ix) for p in pb], _bcast(cols, [0], b_ix),
                                       _bcast(kc, [1], b_ix), b_valid), fb_rest, _frag(bdt, [tn, tkle], ["b2", "b3"]))
        for cast in (0, 1):
            ea = Val.op("cast", P.vals(la), cs_a, _frag(dt, [t0], ["b0"])) if cast else la
            eb = Val.op("cast", P.vals(lb_), cs_b, _frag(dt, [tn], ["b2"])) if cast else lb_
            ta = Val.op("cast", P.vals(a_tile), cs_a, _frag(dt, [t0, tkle], ["b0", "b3"])) if cast else a_tile
            tb = Val.op("cast", P.vals(b_tile), cs_b, _frag(dt, [tn, tkle], ["b2", "b3"])) if cast else b_tile
            member = Val.op("mul", P.vals(Val.op("broadcast", P.vals(ea), ma, ty),
                                         Val.op("broadcast", P.vals(eb), mb, ty)), pm, ty)
            loop = P.for1(lb, ub, st, x0, attrs, ty, d, Val.op("add", P.vals(acc, member), ya, ty), rya)
            contract = Val.op("contract", P.vals(ta, tb, acc), P.amap(lhs_contract=_ints([1]),
                                                                   rhs_contract=_ints([1])), ty)
            new = P.for1(lb, ub, Val.op("launch", Vals.nil(), P.amap(expr=A.le(tkle)), INDEX), x0, attrs, ty, d,
                         contract, rya)
            facts = [eq(ma).to(P.amap(dims=_ints([0]))), eq(mb).to(P.amap(dims=_ints([1]))),
                     eq(ka_m).to(P.amap(dims=_ints([]))), eq(kb_m).to(P.amap(dims=_ints([]))),
                     eq(st).to(Val.op("const", Vals.nil(), cattrs, INDEX)), CAttr(cattrs, "value", A.int_(1)),
                     CAttr(attrs, "reduce", A.str_("add")),
                     CAttr(fa_rest, "fill", A.float_("0.0")), CAttr(fb_rest, "fill", A.float_("0.0"))]
            name = f"contraction.contract_loop_t_b{n_pre}_c{cast}{cast}"
            R.append((name, rule(eq(y).to(loop), *facts, name=name).then(union(y).with_(new)),
                      "for k step 1: acc[m, n] + bcast(A[.., m, k]) * bcast(B[.., n, k])  ==  for k0 step TK: "
                      "contract(A[.., m, k0:k0+TK], B[.., n, k0:k0+TK] along its axis 1, acc)  (an ordinary sum: "
                      "members regrouped; tail members load 0)"))
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


_LOOP_RULES = _contract_loop_rules()
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


_SUPPORT_RULES = _support_rules() + _lift_rules() + [r for r in _LOOP_RULES if r[0].endswith("_want")]
ANALYSIS_RULES = _SUPPORT_RULES
for _name, _rule, _law in _SUPPORT_RULES:
    SUPPORT.append(_rule)

_RULES = [r for r in _LOOP_RULES if not r[0].endswith("_want")] + _contract_loop_transposed_rules() + _operand_and_init_rules() + \
    _precision_rules()


def rules():
    """(name, egglog rule, law) for every rewrite of the group (support facts: ``ANALYSIS_RULES``)."""
    return _RULES


for _name, _rule, _law in _RULES:
    RULESET.append(_rule)
