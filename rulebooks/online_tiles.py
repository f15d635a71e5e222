"""Online renormalization over key tiles (SPEC PASS-3.4 "contract/reduce realization creates fragments, loops,
carries and accumulators", PASS-4 "online renormalization (with permission)", "blocking loops and fragment
accumulators", "mul-sum to contract"): the one-pass summary loop of ``online`` takes a tile of ``TILE_N`` keys per
iteration - the flash-attention form - when its mass and maximum are per row (``[T0]`` over ``b0``) and its moment
is a ``[T0, T1]`` tile whose weight is a column value broadcast over the rows (``w = broadcast(w1)``, ``w1`` over
``b1``: attention's ``V[j, d]``).

Reads: the summary relations of ``online`` (``OnlineMass``, ``OnlineMax``, ``OnlineSum``: that group runs first and
its facts stay in the e-graph), the compile-option facts ``OptNumerics``, ``OptOnline``; the summary loops' step
(``HasAttr``); value types (``ValTy``, ``MaskOf``); the member lifting of ``reduction`` (``LiftCtx.red`` in a key-tile context,
``reduction.key_ctx``: the key index becomes ``j0 + range(TN)`` over ``b2``, loads and gathers get the tail validity ``j < ub``) with its
nested-loop lifting (``reduction.NESTED``: a score that is itself a sum over ``d`` lifts as one loop whose
accumulator spans the key tile); the lifting is demanded by ``reduction.demand_key_tile`` while the e-graph is small,
this group reads its results.

Legality: everything the one-pass rewrite checks (summary/axis relation, identities, ``numerics =
relaxed_normalization`` and ``onlineReduction``, f32 score/maximum/mass/moment), plus: the summary loops step by one
(every key is combined once); the mass and maximum are ``[T0]`` fragments over ``b0``, the moment a ``[T0, T1]``
fragment over ``(b0, b1)`` whose member is ``broadcast(exp(s - mx)) * broadcast(w1)`` (``w1`` over ``b1``); the score
lifts over the key tile to a ``[T0, TN]`` fragment over ``(b0, b2)`` and the weight to a ``[T1, TN]`` fragment over
``(b1, b2)`` (a construct without a lifting leaves the rule unmatched: the per-key loop stays).

Rewrites: ``for j0 in [lb, ub) step TN`` carrying ``(m, l, o)`` from ``(-inf, 0, 0)``: ``S = select(j < ub, s(j0 +
range(TN)), -inf)``, ``m' = max(m, max_b2 S)``, ``a = m' == -inf ? 1 : exp(m - m')``, ``P = exp(S - (m' == -inf ? 0 :
m'))`` (a row whose maximum is -inf has only -inf scores: its weights are exp(-inf) = 0, the select per row, not per
score), ``l' = l * a + sum_b2 P``, ``o' = contract(P, w1 tile, o * a)`` (the moment's sum over the tile is the
contraction of ``P`` with the weight tile along ``b2``, accumulated into the rescaled moment). A second form (``moment_f16`` /
``moment_bf16``), when the weight tile is a widened f16/bf16 load: ``P`` rounded to that format and contracted with
the f16/bf16 tile into the f32 moment. The exponentials are marked ``approximate`` and ``flush_to_zero`` (a
subnormal weight is 0: the row's mass is at least 1). Unions, as the one-pass rewrite: the hoisted max with result
0, the mass loop with result 1, the moment loop with result 2.

Preserves: the maximum exactly (max is exact under any grouping); mass and moment up to the rescaling's rounding and
the regrouping of their sums (one rescaling per tile instead of per key), the rounding of ``P`` to the value format
and approximate exponentials that flush subnormal weights (relaxed_normalization permits these: PASS-1.2's
implemented domain names same-dtype f16/bf16 weight/value operands; the moment is still accumulated in f32); keys past ``ub`` score ``-inf`` (weight 0) and read nothing; rows whose scores are all ``-inf`` as the one-pass loop
(mass 0, moment 0); control, effects, the ABI and compile options.

Invalidates: the summary loops' trip count and step, fragment shapes inside them (``[T0, TN]`` score tiles), load
counts, the FLOP mix (a contract per tile), register estimates.

Verifier: the shared GPU verifier after the group (multi-carry ``for``: operand/arg/yield types agree; contract
operand/accumulator shapes; reduce axes and identities; access validity).
"""
from __future__ import annotations

from egglog import String, eq, i64, rule, ruleset, union, var, vars_

from intent_eqsat.rules import facts as F
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, LE, Multi, Region, Regions, Stmts, Ty, Val, Vals
from rulebooks import blocking as B
from rulebooks import reduction as RED
from rulebooks.online import DOMAIN, INDEX, OnlineMass, OnlineMax, OnlineSum

GROUP = "online_tiles"
#: after ``online`` (28: its summary facts) and before ``contraction`` (30: it contracts the score loops lifted here)
ORDER = 29
RULESET = ruleset(name=GROUP)
ANALYSES = (P.ANALYSIS,)


def _vals(*xs) -> Vals:
    return P.vals(*xs)


def _rules():
    loc, mloc = vars_("loc mloc", String)
    ds, dm = vars_("ds dm", i64)
    L, N, s, sm, sp, w, w1, ex, e, lb, ub, st, ni, z0, zn, MX, ls, lw = vars_(
        "L N s sm sp w w1 ex e lb ub st ni z0 zn MX ls lw", Val)
    ma, mya, maxa, suba, expa, mula, sa = vars_("ma mya maxa suba expa mula sa", AMap)
    t0, t1 = vars_("t0 t1", LE)
    ty = Ty.frag_axes(DOMAIN, P.les(t0), P.strs("b0"))
    tyo = Ty.frag_axes(DOMAIN, P.les(t0, t1), P.strs("b0", "b1"))
    tr = LE.sym(RED.TILE_N)
    ty_s = Ty.frag_axes(DOMAIN, P.les(t0, tr), P.strs("b0", "b2"))
    ty_w = Ty.frag_axes(DOMAIN, P.les(t1, tr), P.strs("b1", "b2"))
    b1_row = Ty.frag_axes("i1", P.les(t0), P.strs("b0"))                 # i1 over the rows
    b1_tile = Ty.frag_axes("i1", P.les(t0, tr), P.strs("b0", "b2"))      # i1 over rows x keys
    no_dims = P.amap(dims=P.alist())
    ctx = RED.key_ctx(ds, ub)
    _, kt = RED.key_tile(ds, ub)
    ex_pat = Val.op("exp", _vals(Val.op("sub", _vals(s, MX), suba, ty)), expa, ty)
    dims0, dims1 = P.amap(dims=P.alist(A.int_(0))), P.amap(dims=P.alist(A.int_(1)))
    facts = [OnlineMass(L, loc, ty, s, ds, lb, ub, st, MX, z0, sm),
             OnlineMax(MX, lb, ub, st, ni, dm, sp, ma, mya, maxa, ty),
             OnlineSum(N, lb, ub, st, zn, ds, e, mloc, tyo),
             eq(e).to(Val.op("mul", _vals(Val.op("broadcast", _vals(ex), dims0, tyo), w), mula, tyo)),
             eq(ex).to(ex_pat), eq(w).to(Val.op("broadcast", _vals(w1), dims1, tyo)),
             eq(st).to(Val.op("const", Vals.nil(), sa, INDEX)), P.HasAttr(sa, "value", A.int_(1)),
             F.OptNumerics("relaxed_normalization"), F.OptOnline(1)]
    origin = A.str_(mloc)
    plain = P.amap(origin=origin)
    m, l_, o = Val.arg(ds, 1, ty), Val.arg(ds, 2, ty), Val.arg(ds, 3, tyo)

    def splat(value: str, t: Ty) -> Val:
        return Val.op("broadcast", _vals(Val.op("const", Vals.nil(), P.amap(origin=origin, value=A.float_(value)),
                                                Ty.scalar(DOMAIN))), no_dims, t)

    # the exponentials of the rescaled weights may be approximate (``approximate = true``: the matrix-unit
    # flash-attention form's ex2-based exp, a few ulp): relaxed_normalization permits rounding changes in the
    # weights, and the moment already rounds them to the value format. They may flush subnormal results to zero
    # (``flush_to_zero = true``): each weight is exp(x) with x <= 0 of a row whose final mass is >= 1 (the row
    # maximum's weight is exp(0) = 1 and is never rescaled again), so a flushed weight (< 2**-126) moves the mass
    # and the moment by less than T * 2**-126 relative, far below the f32 rounding of the sums and the bf16
    # rounding of the weights themselves; an alpha that flushes scales a moment that a weight-1 member outweighs
    approx = P.amap(approximate=A.bool_(1), flush_to_zero=A.bool_(1), origin=origin)

    def exp_sub(a, b, t):
        return Val.op("exp", _vals(Val.op("sub", _vals(a, b), plain, t)), approx, t)

    def red(x, comb, ident):
        return Val.op("reduce", _vals(x), P.amap(axes=P.alist(A.int_(1)), combine=A.str_(comb),
                                                 identity=P.alist(A.float_(ident))), ty)

    score = Val.op("select", _vals(Val.op("broadcast", _vals(kt), dims1, b1_tile), ls, splat("-inf", ty_s)),
                   plain, ty_s)
    m2 = Val.op("max", _vals(m, red(score, "max", "-inf")), maxa, ty)
    empty = Val.op("cmp", _vals(m2, ni), P.amap(origin=origin, pred=A.str_("eq")), b1_row)
    alpha = Val.op("select", _vals(empty, splat("1.0", ty), exp_sub(m, m2, ty)), plain, ty)
    # the weights subtract a per-row safe maximum (0 where the row is still empty) instead of selecting 0 on every
    # score: a row is empty only when all its scores so far are -inf (a NaN score makes the maximum NaN, not -inf),
    # so exp(score - 0) = exp(-inf) = +0 there, exactly the weight the select gave; elsewhere m_safe = m'
    m_safe = Val.op("select", _vals(empty, splat("0.0", ty), m2), plain, ty)
    p = exp_sub(score, Val.op("broadcast", _vals(m_safe), dims0, ty_s), ty_s)
    l2 = Val.op("add", _vals(Val.op("mul", _vals(l_, alpha), plain, ty), red(p, "add", "0.0")), plain, ty)
    scaled = Val.op("mul", _vals(o, Val.op("broadcast", _vals(alpha), dims0, tyo)), plain, tyo)
    o2 = Val.op("contract", _vals(p, lw, scaled),
                P.amap(lhs_contract=P.alist(A.int_(1)), origin=origin, rhs_contract=P.alist(A.int_(1))), tyo)
    step = Val.op("launch", Vals.nil(), P.amap(expr=A.le(tr)), INDEX)
    hoisted = P.for1(lb, ub, st, ni, ma, ty, ds, Val.op("max", _vals(Val.arg(ds, 1, ty), sm), maxa, ty), mya)
    lifted = [eq(ls).to(B.lift(s, ctx)), eq(B.MaskOf(ls)).to(i64(5)), eq(lw).to(B.lift(w1, ctx)),
              eq(B.MaskOf(lw)).to(i64(6)), P.ValTy(ls, ty_s), P.ValTy(lw, ty_w)]

    def loop_with(o_next: Val) -> Multi:
        region = Region.make(ds, P.tys(INDEX, ty, ty, tyo), Stmts.nil(), _vals(m2, l2, o_next), plain)
        return Multi.op("for", _vals(lb, ub, step, ni, z0, zn), plain, P.tys(ty, ty, tyo),
                        Regions.cons(region, Regions.nil()))

    def unions(loop: Multi) -> list:
        return [union(N).with_(Val.res(loop, 2, tyo)), union(L).with_(Val.res(loop, 1, ty)),
                union(hoisted).with_(Val.res(loop, 0, ty))]

    out = [named("online_tiles.moment", rule(*facts, *lifted).then(*unions(loop_with(o2))),
                 "max, mass and moment of one summary == one loop over key tiles carrying (m, l, o): per tile the "
                 "scores' maximum, their rescaled mass and the contraction of their weights with the weight tile")]
    # the weights in the value's own format (SPEC PASS-1.2 implemented domain: "same-dtype f16/bf16/f32
    # weight/value operands"): a weight tile that is a widened f16/bf16 load meets P rounded to that format, the
    # moment still accumulated in f32 (the matrix unit's form; what flash-attention implementations compute)
    lw16 = var("lw16", Val)
    ca = var("ca", AMap)
    for half in ("f16", "bf16"):
        p16 = Val.op("cast", _vals(p), plain, Ty.frag_axes(half, P.les(t0, tr), P.strs("b0", "b2")))
        o16 = Val.op("contract", _vals(p16, lw16, scaled),
                     P.amap(lhs_contract=P.alist(A.int_(1)), origin=origin, rhs_contract=P.alist(A.int_(1))), tyo)
        out.append(named(f"online_tiles.moment_{half}", rule(
            *facts, *lifted, eq(lw).to(Val.op("cast", _vals(lw16), ca, ty_w)),
            P.ValTy(lw16, Ty.frag_axes(half, P.les(t1, tr), P.strs("b1", "b2")))).then(*unions(loop_with(o16))),
            f"as online_tiles.moment, the weights P rounded to the {half} values they weigh (relaxed_normalization) "
            f"and contracted with the {half} value tile into the f32 moment"))
    return out


_RULES = None


def rules():
    """(registry.Rule items) the group's rules."""
    global _RULES
    if _RULES is None:
        _RULES = _rules()
    return _RULES


for _r in rules():
    RULESET.append(_r.egg)
