"""Lane accumulators (SPEC PASS-3.3 "blocking loops and fragment accumulators", PASS-4 "reassociate ordinary
reduce"): a loop that reduces a member tile across its lanes at every step and combines the result into a running
total -- ``for k0 (s) {c(s, reduce_c(T(k0)))}``, the form ``reduction`` blocks a statistic into -- may instead
combine each member tile into a carried tile lane by lane and reduce that tile across its lanes once, after the
loop. On a GPU the per-step reduction is a shuffle tree and, when the tile spans several warps, a shared-memory
round trip behind a barrier; the barrier of every step keeps the next step's loads from being issued early. The
lane form does the same element-wise work per step without either (H100, 2026-12-06, hand-edited BatchNorm2d:
0.196 -> 0.150 ms at 8 warps; docs/perf.md). Which form is kept is the cost model's (``extract/cost.py``: a loop
body holding a cross-warp reduction waits the whole memory latency at each step).

Reads: pure one-carry ``for`` loops marked ``reduce = <combiner>`` (the shared verifier checks the body is
``combine(carried, member)`` with the member independent of the carried value) whose member is a ``reduce`` op
with the same combiner; that op's ``identity`` attribute; the member tile's type (``ValTy``); loops whose body is
such a loop started from the enclosing loop's carried value (a reduction nest), and their ``origin``.

Legality: ``lanes.fold``: the loop is an ordinary reduction (the ``reduce`` mark: an associative, commutative
combiner, members independent of the carried value, so members may be regrouped, SPEC PASS-4), and its member is
``reduce_c(T)`` over some axes of a tile ``T`` with the loop's own combiner ``c`` and identity ``e``:
``s0 c reduce(T_0) c reduce(T_1) c ...`` == ``s0 c reduce(e c T_0 c T_1 c ...)`` (lane-wise ``c`` of the tiles,
then the same reduction): the same members regrouped, each lane of the carried tile folding the members at that
lane. ``lanes.nest``: a loop ``for n (x0) {c(s, reduce_c(L(n)))}`` whose member reduces a lane accumulator ``L``
this group built (``LaneAcc``: started from the identity tile, every step combining the carried tile with a member
independent of it, so ``A c L(identity) == L(A)`` lane by lane, up to regrouping); both loops carry pieces of one
KIR reduction (the same ``origin``: the loop nest of a sum over several axes), so ``L``'s members do not read the
outer loop's running value (a KIR reduction's members are expressions of its indices, SPEC IR-8) -- the lane
accumulator is carried through the outer loop too and reduced once; applies again to the loop around.

Ordered last (45, after ``narrowing``): narrowing's range splits of a lane loop gave a cummax kernel's e-graph
classes whose extraction chose a cyclic term; run after it, the group sees the loops narrowing leaves.

Rewrites: ``for k (x0) {c(s, reduce_c(T(k)))}`` -> ``c(x0, reduce_c(for k (splat(e)) {c(A, T(k))}))``;
``for n (x0) {c(s, reduce_c(L(n) from splat(e)))}`` -> ``c(x0, reduce_c(for n (splat(e)) (A) {L(n) from A}))``.
The loops keep their bounds, steps and attributes (the ``reduce`` mark: the lane loop's body is again
``combine(carried, member)``); the carried type becomes the member tile's.

Preserves: the value of every reduction up to regrouping of its members; the ABI, effects and compile options;
every load (the same member tiles, read in the same steps).

Invalidates: loop-carried fragment shapes (a tile instead of the running total), register footprints; the number
of cross-lane reductions (one per loop instead of one per step).

Verifier: the shared GPU verifier after the group (the ``reduce`` loop form, loop-carried types, ``reduce`` axes
and identity).
"""
from __future__ import annotations

from egglog import String, eq, i64, relation, rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, LEs, Strs, Ty, Val, Vals

GROUP = "lanes"
ORDER = 45
RULESET = ruleset(name=GROUP)
#: the attribute analysis (``HasAttr``: the loops' marks and origins, the reductions' combiners and identities)
ANALYSES = (P.ANALYSIS,)

#: ``LaneAcc(l, lb, ub, st, init, attrs, ty, d, body, ya)``: ``l`` is a lane accumulator this group built -- a loop
#: (or a nest of loops) started from its combiner's identity tile ``init`` whose every step combines the carried
#: tile with a member independent of it -- with its parts (``lanes.nest`` joins this row, not a nested loop pattern:
#: the nested pattern cost ~5 s per iteration on a BatchNorm)
LaneAcc = relation("LanesAcc", Val, Val, Val, Val, Val, AMap, Ty, i64, Val, AMap)


def _identity_tile(ident, dt, wt: Ty) -> Val:
    return Val.op("broadcast", P.vals(Val.op("const", Vals.nil(), P.amap(value=ident), Ty.scalar(dt))),
                  P.amap(dims=P.alist()), wt)


def _fold_rule():
    lb, ub, st, x0, tile, y = vars_("lb ub st x0 tile y", Val)
    attrs, ca, ra, rya, tattrs = vars_("attrs ca ra rya tattrs", AMap)
    comb, dt, tname = vars_("comb dt tname", String)
    targs = var("targs", Vals)
    ident = var("ident", A)
    shape = var("shape", LEs)
    axes = var("axes", Strs)
    ty = var("ty", Ty)
    d = var("d", i64)
    wt = Ty.frag_axes(dt, shape, axes)
    old = P.for1(lb, ub, st, x0, attrs, ty, d,
                 Val.op(comb, P.vals(Val.arg(d, 1, ty), Val.op("reduce", P.vals(tile), ra, ty)), ca, ty), rya)
    init = _identity_tile(ident, dt, wt)
    body = Val.op(comb, P.vals(Val.arg(d, 1, wt), tile), ca, wt)
    lanes = P.for1(lb, ub, st, init, attrs, wt, d, body, rya)
    return named("lanes.fold", rule(
        eq(y).to(old), P.HasAttr(attrs, "reduce", A.str_(comb)), P.HasAttr(ra, "combine", A.str_(comb)),
        P.HasAttr(ra, "identity", P.alist(ident)), eq(tile).to(Val.op(tname, targs, tattrs, wt)), name="lanes.fold").then(
        union(y).with_(Val.op(comb, P.vals(x0, Val.op("reduce", P.vals(lanes), ra, ty)), ca, ty)),
        LaneAcc(lanes, lb, ub, st, init, attrs, wt, d, body, rya)),
        "for k (x0) {c(s, reduce_c(T(k)))} == c(x0, reduce_c(for k (identity tile) {c(A, T(k))})) (an ordinary "
        "reduction regrouped: each lane folds the members at that lane, the lanes are combined once)")


def _nest_rule():
    lb, ub, st, x0, ilb, iub, ist, body, y, ident_tile = vars_("lb ub st x0 ilb iub ist body y ident_tile", Val)
    attrs, iattrs, ca, ra, rya, irya = vars_("attrs iattrs ca ra rya irya", AMap)
    comb, loc = vars_("comb loc", String)
    ty, wide = vars_("ty wide", Ty)
    d, di = vars_("d di", i64)
    lanes = var("lanes", Val)
    old = P.for1(lb, ub, st, x0, attrs, ty, d,
                 Val.op(comb, P.vals(Val.arg(d, 1, ty), Val.op("reduce", P.vals(lanes), ra, ty)), ca, ty), rya)
    inner = P.for1(ilb, iub, ist, Val.arg(d, 1, wide), iattrs, wide, di, body, irya)
    carried = P.for1(lb, ub, st, ident_tile, attrs, wide, d, inner, rya)
    return named("lanes.nest", rule(
        LaneAcc(lanes, ilb, iub, ist, ident_tile, iattrs, wide, di, body, irya), eq(y).to(old), P.HasAttr(ra, "combine", A.str_(comb)),
        P.HasAttr(attrs, "origin", A.str_(loc)), P.HasAttr(iattrs, "origin", A.str_(loc)), name="lanes.nest").then(
        union(y).with_(Val.op(comb, P.vals(x0, Val.op("reduce", P.vals(carried), ra, ty)), ca, ty)),
        LaneAcc(carried, lb, ub, st, ident_tile, attrs, wide, d, inner, rya)),
        "for n (x0) {c(s, reduce_c(L(n) from identity))} == c(x0, reduce_c(for n (identity) (A) {L(n) from A})) (a "
        "lane accumulator carried through the loop around it: the same members regrouped)")


_RULES = None


def rules() -> list:
    """(name, egglog rule, law) for every rule of the group."""
    global _RULES
    if _RULES is None:
        _RULES = [_fold_rule(), _nest_rule()]
    return _RULES
