"""Online renormalization (SPEC PASS-1.2, PASS-4 "online renormalization (with permission)"): a normalized summary
- a running maximum ``mx = max_j s_j`` and the sums ``sum_j exp(s_j - mx)`` (mass) and ``sum_j exp(s_j - mx) * w_j``
(moment) that read it - becomes ONE loop carrying ``(m, l[, o])`` with rescaled partial summaries.

Reads: the compile-option facts ``OptNumerics``, ``OptOnline``, ``OptRemarks``; pure single-carry ``for`` loops
(bounds, initial value, yielded value) and the pure values in their bodies; ``const`` values and op origins
(``HasAttr``, ``patterns.ANALYSIS``); value types. Summary/axis relation: the sum loop and the max loop it reads
run over the same bounds (same terms) and the max loop's score, re-expressed at the sum loop's depth with the
max loop's induction variable renamed to the sum loop's (``OnlineRe``: every region-argument depth re-labelled,
failing when the score reads anything of the sum loop but its induction variable, or the max loop's carried
value), is the sum loop's score term itself.

Legality: checked before anything is built. Summary relation as above; identity: the sum starts at ``0.0`` (the
identity of ``add``), the max at ``-inf`` (the identity of ``max``), as scalars or broadcast fragments; replay/effect:
both loops and every value they read are pure (``Multi``/``Op`` terms, regions without statements), the moment
weight ``w_j`` reads no carried value; dtype (implemented domain): f32 score, maximum, mass and moment, scalar or
fragment (blocked) carries (weights/values enter as f32 operands, e.g. ``cast<f32>`` of f16/bf16/f32 loads).
Numeric permission: the rewrite changes rounding (each partial sum is rescaled by ``exp(m - m')``) and assumes
finite scores (a row of only ``-inf`` gets mass 0 instead of NaN), so it needs ``numerics =
relaxed_normalization``; ``onlineReduction = true`` must ask for it. Otherwise a ``Remark`` at the sum loop's
origin says which: ``disabled``, ``missing numeric permission``, or ``implementation conditions not met`` (the
same summary in another dtype); with ``optimizationRemarks = true`` an adopted rewrite also says ``adopted``.

Rewrites: a new ``for`` over the same bounds carrying ``(m, l)`` (mass) or ``(m, l, o)`` (moment + its mass), of
the sum's type, from ``(-inf, 0.0[, 0.0])`` with ``m' = max(m, s_j)``, ``a = m' == -inf ? 1 : exp(m - m')``,
``p = m' == -inf ? 0 : exp(s_j - m')``, ``l' = l * a + p``, ``o' = o * a + p * w_j`` (the select keeps rows whose
scores so far are all ``-inf`` at ``0`` instead of ``-inf - -inf = NaN``, as flash-attention implementations do).
Unions: the max loop (hoisted: the same max at the sum loop's depth) with result 0, the mass loop with result 1,
the moment loop with result 2. The ordinary two-pass program stays in the e-graph; the cost model chooses (it
needs ``CostModel.share_results`` to see that one loop serves the max, the mass and the moment).

Preserves: the maximum exactly (same max operations in the same order); mass and moment up to the rescaling's
rounding (relaxed_normalization); normalized results (moment / mass, exp(x - m) / mass) of rows whose scores are
all ``-inf`` stay NaN (0/0) as in the two-pass program; control, effects, the ABI and compile options.

Invalidates: def-use of the max/sum loops (replaced by results of one loop), loop counts, footprint and load
counts of the kernel.

Verifier: the shared GPU verifier after the group (multi-carry ``for``: operand/arg/yield types agree; no
``reduce`` mark on the multi-carry loop).
"""
from __future__ import annotations

from egglog import Bool, String, eq, function, i64, i64Like, ne, relation, rule, ruleset, union, var, vars_

from intent_eqsat.rules import facts as F
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, LEs, Multi, Region, Regions, Stmts, Strs, Ty, Tys, Val, Vals

GROUP = "online"
#: before ``online_tiles`` (29) and contraction (30), which contracts the score loops that group lifts over key
#: tiles (PASS-3.4 orders neither)
ORDER = 28
RULESET = ruleset(name=GROUP)
#: the ``OnlineRe`` re-expression: a terminating structural recursion, saturated before every iteration (so a score
#: of any depth is related in one iteration, not one iteration per level)
RE = ruleset(name="online_re")
ANALYSES = (P.ANALYSIS, RE)

INDEX = Ty.scalar("index")
#: the implemented domain's score/accumulator dtype (SPEC PASS-1.2)
DOMAIN = "f32"
PREFIX = "online renormalization"

# ------------------------------------------------------------------------------------------------ functions


@function(egg_fn="OnlineRe")
def on_re(v: Val, k: i64Like, n: i64Like, strip: i64Like) -> Val:
    """``v``, read inside a loop region of depth ``k``, re-expressed inside a loop region of depth ``n`` (``n <=
    k``) whose induction variable is the same: ``Arg(k, 0)`` -> ``Arg(n, 0)``, args of regions nested in ``v``
    (depth > k) shift by ``n - k``, args of enclosing regions below ``n`` stay. Undefined (the term never
    resolves) when ``v`` reads a carried value of the depth-``k`` loop, an argument of a depth in ``[n, k)``, or
    an effect result. ``strip = 1`` also drops ``origin`` attributes (diagnostic provenance, SPEC PASS-6): two
    occurrences of one computation from different KIR expressions then compare equal."""


@function(egg_fn="OnlineReVals")
def on_re_vals(vs: Vals, k: i64Like, n: i64Like, strip: i64Like) -> Vals: ...


@function(egg_fn="OnlineReMulti")
def on_re_multi(m: Multi, k: i64Like, n: i64Like, strip: i64Like) -> Multi: ...


@function(egg_fn="OnlineReRegions")
def on_re_regions(rs: Regions, k: i64Like, n: i64Like, strip: i64Like) -> Regions: ...


@function(egg_fn="OnlineAttrs")
def on_attrs(m: AMap, strip: i64Like) -> AMap:
    """``m`` (``strip = 0``) or ``m`` without its ``origin`` (``strip = 1``)."""


@function(egg_fn="OnlineBoolTy")
def on_bool_ty(ty: Ty) -> Ty:
    """The ``i1`` type of ``ty``'s shape (scalar or fragment)."""


@function(egg_fn="OnlineSplat")
def on_splat(c: Val, ty: Ty) -> Val:
    """The scalar ``c`` as a value of type ``ty`` (itself, or broadcast over ``ty``'s fragment)."""


#: ``ty`` holds elements of dtype ``dt`` (a scalar, or a fragment of ``dt``: blocked programs carry fragments)
OnlineElem = relation("OnlineElem", Ty, String, egg_fn="OnlineElem")
#: ``v`` is the identity of combiner ``kind`` (``"add"``: 0.0, ``"max"``: -inf), as a scalar or broadcast
OnlineIdentity = relation("OnlineIdentity", Val, String, egg_fn="OnlineIdentity")
#: ``(mx, lb, ub, step, -inf init, region depth, score, loop attrs, yield attrs, max attrs, type)``: ``mx`` is a
#: pure running maximum ``for j in [lb, ub): m = max(m, s_j)`` from ``-inf`` (its score read in its own region)
OnlineMax = relation("OnlineMax", Val, Val, Val, Val, Val, i64, Val, AMap, AMap, AMap, Ty, egg_fn="OnlineMax")
#: ``(loop, lb, ub, step, 0 init, region depth, member, location, type)``: a pure sum ``for j: acc = acc + x_j``
#: from ``0.0`` (``x_j`` read inside its region)
OnlineSum = relation("OnlineSum", Val, Val, Val, Val, Val, i64, Val, String, Ty, egg_fn="OnlineSum")
#: ``(mass loop, location, type, score, depth, lb, ub, step, max loop it reads, 0 init, the max's own score at
#: the sum loop's depth)``: ``sum_j exp(s_j - max_j s_j)`` with the summary relation proven
OnlineMass = relation("OnlineMass", Val, String, Ty, Val, i64, Val, Val, Val, Val, Val, Val, egg_fn="OnlineMass")
#: ``(moment loop, mass loop, location, weight)``: ``sum_j exp(s_j - mx) * w_j`` over the same summary as the mass
#: loop (same bounds, score and max)
OnlineMoment = relation("OnlineMoment", Val, Val, String, Val, egg_fn="OnlineMoment")


# ------------------------------------------------------------------------------------------------ helpers

def _vals(*xs) -> Vals:
    return P.vals(*xs)


# ------------------------------------------------------------------------------------------------ rules

def _re_rules():
    """``OnlineRe``: structural recursion over pure terms (SPEC PASS-1.2 summary/axis relation)."""
    d, i, k, n, dep, o = vars_("d i k n dep o", i64)
    t = var("t", Ty)
    ts, args = vars_("ts args", Tys)
    nm, key = vars_("nm key", String)
    xs, rest, ys = vars_("xs rest ys", Vals)
    x = var("x", Val)
    attrs, ya = vars_("attrs ya", AMap)
    av = var("av", A)
    mu = var("mu", Multi)
    regs = var("regs", Regions)
    R = []
    SORT = {"re_outer": Val, "re_iv": Val, "re_inner": Val, "re_op": Val, "re_res": Val, "re_nil": Vals,
            "re_cons": Vals, "re_multi": Multi, "re_regions_nil": Regions, "re_region": Regions, "attrs": AMap,
            "ty_bool": Ty, "ty_splat": Val}

    def add(name, r, law):
        R.append(named(f"online.{name}", r, law, depth=2))

    def rw(name, lhs, rhs, *conds):
        """``lhs -> rhs`` as a named rule (rewrites carry no name for traces)."""
        sort = next(v for key_, v in SORT.items() if name == key_ or name.startswith(key_ + "_"))
        out = var(f"{name}_out", sort)
        return rule(eq(out).to(lhs), *conds, name=f"online.{name}").then(union(out).with_(rhs))

    add("re_outer", rw("re_outer", on_re(Val.arg(d, i, t), k, n, o), Val.arg(d, i, t),
                       eq(d.bool_lt(n)).to(Bool(True))),
        "an argument of a region enclosing both loops is unchanged")
    add("re_iv", rw("re_iv", on_re(Val.arg(k, 0, t), k, n, o), Val.arg(n, 0, t)),
        "the induction variable is renamed")
    add("re_inner", rw("re_inner", on_re(Val.arg(d, i, t), k, n, o), Val.arg(d - k + n, i, t),
                        eq(d.bool_gt(k)).to(Bool(True))),
        "arguments of regions nested inside the value shift with them")
    add("re_op", rw("re_op", on_re(Val.op(nm, xs, attrs, t), k, n, o),
                    Val.op(nm, on_re_vals(xs, k, n, o), on_attrs(attrs, o), t)),
        "a pure op: its operands re-expressed")
    add("re_res", rw("re_res", on_re(Val.res(mu, i, t), k, n, o), Val.res(on_re_multi(mu, k, n, o), i, t)),
        "a result of a pure region op")
    add("re_nil", rw("re_nil", on_re_vals(Vals.nil(), k, n, o), Vals.nil()), "[]")
    add("re_cons", rw("re_cons", on_re_vals(Vals.cons(x, rest), k, n, o),
                          Vals.cons(on_re(x, k, n, o), on_re_vals(rest, k, n, o))), "each operand")
    add("re_multi", rw("re_multi", on_re_multi(Multi.op(nm, xs, attrs, ts, regs), k, n, o),
                           Multi.op(nm, on_re_vals(xs, k, n, o), on_attrs(attrs, o), ts,
                                    on_re_regions(regs, k, n, o))),
        "a pure region op: operands and regions")
    add("re_regions_nil", rw("re_regions_nil", on_re_regions(Regions.nil(), k, n, o), Regions.nil()), "no regions")
    add("re_region", rw("re_region",
                          on_re_regions(Regions.cons(Region.make(dep, args, Stmts.nil(), ys, ya), regs), k, n, o),
                          Regions.cons(Region.make(dep - k + n, args, Stmts.nil(), on_re_vals(ys, k, n, o),
                                                   on_attrs(ya, o)), on_re_regions(regs, k, n, o))),
        "a pure region (no statements) moves with the value; its yields are re-expressed")
    add("attrs_keep", rw("attrs_keep", on_attrs(attrs, 0), attrs), "attributes kept")
    add("attrs_nil", rw("attrs_nil", on_attrs(AMap.nil(), 1), AMap.nil()), "nothing to strip")
    add("attrs_origin", rw("attrs_origin", on_attrs(AMap.cons("origin", av, attrs), 1), on_attrs(attrs, 1)),
        "origin is provenance, not semantics (SPEC PASS-6)")
    add("attrs_other", rw("attrs_other", on_attrs(AMap.cons(key, av, attrs), 1),
                          AMap.cons(key, av, on_attrs(attrs, 1)), ne(key).to(String("origin"))),
        "other attributes are kept")
    # element types, i1 types and splats of scalar and fragment types
    dt = var("dt", String)
    sh = var("sh", LEs)
    ax = var("ax", Strs)
    for tag, ty_, b1 in (("scalar", Ty.scalar(dt), Ty.scalar("i1")),
                         ("frag", Ty.frag(dt, sh), Ty.frag("i1", sh)),
                         ("frag_axes", Ty.frag_axes(dt, sh, ax), Ty.frag_axes("i1", sh, ax))):
        add(f"ty_elem_{tag}", rule(ty_, name=f"online.ty_elem_{tag}").then(OnlineElem(ty_, dt)),
            f"a {tag} of {{dt}} holds {{dt}} elements")
        add(f"ty_bool_{tag}", rw(f"ty_bool_{tag}", on_bool_ty(ty_), b1), f"the i1 type of a {tag}")
        splat = x if tag == "scalar" else Val.op("broadcast", _vals(x), P.amap(dims=P.alist()), ty_)
        add(f"ty_splat_{tag}", rw(f"ty_splat_{tag}", on_splat(x, ty_), splat), f"a scalar as a {tag}")
    return R


def _summary_rules():
    """Staged matching (small joins: egglog plans every semi-naive variant of a rule's query)."""
    loc, mloc = vars_("loc mloc", String)
    ds, dm = vars_("ds dm", i64)
    lb, ub, st, z0, zn, ni, s, sp, w, x, e, c, L, N, MX = vars_("lb ub st z0 zn ni s sp w x e c L N MX", Val)
    sa, ma, sya, mya, maxa, suba, expa, adda, mula, ba = vars_("sa ma sya mya maxa suba expa adda mula ba", AMap)
    ty = var("ty", Ty)
    mx_loop = P.for1(lb, ub, st, ni, ma, ty, dm, Val.op("max", _vals(Val.arg(dm, 1, ty), sp), maxa, ty), mya)
    sum_loop = P.for1(lb, ub, st, z0, sa, ty, ds, Val.op("add", _vals(Val.arg(ds, 1, ty), x), adda, ty), sya)
    ex = Val.op("exp", _vals(Val.op("sub", _vals(s, MX), suba, ty)), expa, ty)
    sumf = OnlineSum(L, lb, ub, st, z0, ds, e, loc, ty)
    maxf = OnlineMax(MX, lb, ub, st, ni, dm, sp, ma, mya, maxa, ty)
    shape = [sumf, eq(e).to(ex), maxf, eq(dm).to(ds + 1)]
    # the score of the max loop, at the sum loop's depth with the sum loop's induction variable, equals the sum
    # loop's score up to origins
    related = [*shape, eq(on_re(s, ds, ds, 1)).to(on_re(sp, dm, ds, 1))]
    R = []
    for kind, value in (("add", "0.0"), ("max", "-inf")):
        R.append(named(f"online.identity_{kind}", rule(*P.const_facts(c, A.float_(value))).then(
            OnlineIdentity(c, kind)), f"{value} is the identity of {kind}"))
    R += [
        named("online.identity_splat", rule(eq(x).to(Val.op("broadcast", _vals(c), ba, ty)),
                                            OnlineIdentity(c, var("kind", String))).then(
            OnlineIdentity(x, var("kind", String))), "a broadcast identity is the identity of every lane"),
        named("online.max_loop", rule(eq(MX).to(mx_loop), OnlineIdentity(ni, "max")).then(
            OnlineMax(MX, lb, ub, st, ni, dm, sp, ma, mya, maxa, ty)),
            "for j: m = max(m, s_j) from -inf is a running maximum"),
        named("online.sum_loop", rule(eq(L).to(sum_loop), OnlineIdentity(z0, "add"),
                                      P.HasAttr(sa, "origin", A.str_(loc))).then(
            OnlineSum(L, lb, ub, st, z0, ds, x, loc, ty)),
            "for j: acc = acc + x_j from 0.0 is a sum"),
        named("online.demand_score", rule(*shape).then(on_re(s, ds, ds, 1), on_re(sp, dm, ds, 1),
                                                        on_re(sp, dm, ds, 0)),
              "relate the max loop's score to the sum loop's (summary/axis relation)"),
        named("online.mass", rule(*related).then(
            OnlineMass(L, loc, ty, s, ds, lb, ub, st, MX, z0, on_re(sp, dm, ds, 0))),
            "sum_j exp(s_j - max_j s_j) over the max's axis and bounds: a normalized summary (mass)"),
    ]
    # moments: sum_j exp(s_j - mx) * w_j (either operand order), with the same summary as a mass loop
    mass = OnlineMass(L, loc, ty, s, ds, lb, ub, st, MX, z0, var("sm", Val))
    for tag, prod in (("moment", Val.op("mul", _vals(ex, w), mula, ty)),
                      ("moment_rev", Val.op("mul", _vals(w, ex), mula, ty))):
        nshape = [OnlineSum(N, lb, ub, st, zn, ds, e, mloc, ty), eq(e).to(prod), mass]
        R.append(named(f"online.demand_{tag}", rule(*nshape).then(on_re(w, ds, ds, 0)),
                       "check that the weight reads no carried value"))
        R.append(named(f"online.{tag}", rule(*nshape, eq(w).to(on_re(w, ds, ds, 0))).then(
            OnlineMoment(N, L, mloc, w)),
            "sum_j exp(s_j - mx) * w_j over the same summary as a mass loop (moment)"))
    return R


def _online_loop(s, ds, lb, ub, st, ni, z0, maxa, loc, ty, w=None):
    """The one-pass loop (SPEC PASS-1.2): carries (m, l[, o]) of type ``ty`` from (-inf, 0[, 0])."""
    origin = A.str_(loc)
    m, l_ = Val.arg(ds, 1, ty), Val.arg(ds, 2, ty)
    one = on_splat(Val.op("const", Vals.nil(), P.amap(origin=origin, value=A.float_("1.0")), Ty.scalar(DOMAIN)),
                   ty)
    plain = P.amap(origin=origin)
    m2 = Val.op("max", _vals(m, s), maxa, ty)
    empty = Val.op("cmp", _vals(m2, ni), P.amap(origin=origin, pred=A.str_("eq")), on_bool_ty(ty))

    def exp_sub(a, b):
        return Val.op("exp", _vals(Val.op("sub", _vals(a, b), plain, ty)), plain, ty)

    alpha = Val.op("select", _vals(empty, one, exp_sub(m, m2)), plain, ty)
    p = Val.op("select", _vals(empty, z0, exp_sub(s, m2)), plain, ty)
    l2 = Val.op("add", _vals(Val.op("mul", _vals(l_, alpha), plain, ty), p), plain, ty)
    yields, inits, types = [m2, l2], [ni, z0], [ty, ty]
    if w is not None:
        o = Val.arg(ds, 3, ty)
        o2 = Val.op("add", _vals(Val.op("mul", _vals(o, alpha), plain, ty),
                                 Val.op("mul", _vals(p, w), plain, ty)), plain, ty)
        yields.append(o2)
        inits.append(z0)
        types.append(ty)
    region = Region.make(ds, P.tys(INDEX, *types), Stmts.nil(), _vals(*yields), plain)
    return Multi.op("for", _vals(lb, ub, st, *inits), plain, P.tys(*types), Regions.cons(region, Regions.nil()))


def _rewrite_rules():
    dt, loc, mloc = vars_("dt loc mloc", String)
    ds, dm = vars_("ds dm", i64)
    L, N, s, sm, sp, w, lb, ub, st, ni, z0, MX = vars_("L N s sm sp w lb ub st ni z0 MX", Val)
    ma, mya, maxa = vars_("ma mya maxa", AMap)
    ty = var("ty", Ty)
    anymass = OnlineMass(L, loc, ty, s, ds, lb, ub, st, MX, z0, sm)
    mass = [anymass, OnlineMax(MX, lb, ub, st, ni, dm, sp, ma, mya, maxa, ty), OnlineElem(ty, DOMAIN)]
    granted = [F.OptNumerics("relaxed_normalization"), F.OptOnline(1)]

    def hoisted_max():
        # the max at the sum loop's depth: the loop the sum reads, outside it (exists when the program also uses
        # the max directly, e.g. softmax's numerator)
        return P.for1(lb, ub, st, ni, ma, ty, ds, Val.op("max", _vals(Val.arg(ds, 1, ty), sm), maxa, ty), mya)

    two = _online_loop(s, ds, lb, ub, st, ni, z0, maxa, loc, ty)
    three = _online_loop(s, ds, lb, ub, st, ni, z0, maxa, mloc, ty, w)
    moment = OnlineMoment(N, L, mloc, w)
    adopted = f"{PREFIX}: adopted (one pass carrying the running maximum and the rescaled mass"
    R = [
        named("online.mass_one_pass", rule(*mass, *granted).then(
            union(L).with_(Val.res(two, 1, ty)), union(hoisted_max()).with_(Val.res(two, 0, ty))),
            "max_j s_j and sum_j exp(s_j - max) == one loop carrying (m, l) with l rescaled by exp(m - m')"),
        named("online.moment_one_pass", rule(*mass, moment, *granted).then(
            union(N).with_(Val.res(three, 2, ty)), union(L).with_(Val.res(three, 1, ty)),
            union(hoisted_max()).with_(Val.res(three, 0, ty))),
            "max, mass and moment of one summary == one loop carrying (m, l, o), l and o rescaled by exp(m - m')"),
        named("online.remark_adopted", rule(*mass, *granted, F.OptRemarks(1)).then(
            F.Remark(adopted + ")", loc)), "optimizationRemarks: say where the rewrite was adopted"),
        named("online.remark_adopted_moment", rule(*mass, moment, *granted, F.OptRemarks(1)).then(
            F.Remark(adopted + " and moment)", mloc)), "optimizationRemarks: say where the rewrite was adopted"),
    ]
    reasons = [
        ("disabled", [F.OptOnline(0)], "disabled (online_reduction=false)"),
        ("permission", [F.OptOnline(1), F.OptNumerics("source")],
         "missing numeric permission (numerics=source; needs relaxed_normalization)"),
    ]
    for tag, gate, why in reasons:
        R.append(named(f"online.remark_{tag}", rule(anymass, *gate).then(
            F.Remark(f"{PREFIX} not applied: {why}", loc)), f"no rewrite: {why.split(' (')[0]}; say so at the op"))
        R.append(named(f"online.remark_{tag}_moment", rule(anymass, OnlineMoment(N, L, mloc, w), *gate).then(
            F.Remark(f"{PREFIX} not applied: {why}", mloc)), f"no rewrite: {why.split(' (')[0]}; at the moment"))
    not_met = [*granted, OnlineElem(ty, dt), ne(dt).to(String(DOMAIN))]
    why = String(f"{PREFIX} not applied: implementation conditions not met (score/accumulator dtype ") + dt + \
        String(f"; implemented: {DOMAIN})")
    R.append(named("online.remark_not_met", rule(anymass, *not_met).then(F.Remark(why, loc)),
                   "a normalized summary outside the implemented domain keeps the two-pass path; say why"))
    R.append(named("online.remark_not_met_moment", rule(anymass, OnlineMoment(N, L, mloc, w), *not_met).then(
        F.Remark(why, mloc)), "the same at the moment"))
    return R


#: the ``OnlineRe`` rules (analysis ruleset ``RE``; registry.Rule items, for traces and ``rules show``)
RE_RULES = _re_rules()
for _r in RE_RULES:
    RE.append(_r.egg)

_RULES = None


def rules():
    """The group's rules (registry.Rule items); the ``OnlineRe`` analysis is :data:`RE_RULES`."""
    global _RULES
    if _RULES is None:
        _RULES = _summary_rules() + _rewrite_rules()
    return _RULES


for _r in rules():
    RULESET.append(_r.egg)
