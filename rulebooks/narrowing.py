"""Predicate range narrowing and summary emptiness (SPEC PASS-3.5, PASS-4 "range narrowing", IR-8 effective source
range, IR-10 (11)): a pure ordered loop whose body selects on a comparison of its induction variable with a
loop-invariant value of exact bounds is split into its all-true, mixed and all-false ranges.

Reads: pure single-carry ``for`` loops with step 1 (``for(lb, ub, 1, init) (iv, acc) {... yield y}``); a comparison
``cmp(a, b, pred)`` in the body (any nesting) that drives a ``select``, where ``a`` is ``iv + c`` (through index->i64
casts, broadcasts and integer constants) and ``b`` does not read the loop's region arguments, with exact lane bounds:
a scalar ``b`` is its own minimum and maximum, a tile coordinate ``s + range(T)`` (the blocking group's form) has
minimum ``s`` and maximum ``s + T - 1``; value facts (constants, ``-inf`` fills, zeros) and the compile option
``numerics`` (``OptNumerics``).

Legality: only exact bounds facts give intervals: with ``B`` the per-lane threshold of the predicate (``iv < B`` for
le/lt, ``iv >= B`` for ge/gt), every lane is true on ``[lb, min B)`` (resp. ``[max B, ub)``) and false on
``[max B, ub)`` (resp. ``[lb, min B)``); split points are clamped into ``[lb, ub]``. The loop carries one scalar and its
body must hold an access with validity (the mixed range keeps it): other loops (blocked ones, and reads in bounds
whatever the predicate, which the construction does not validate) are narrowed after binding (below). The all-false
range is removed only when local value propagation, with the predicate replaced by ``false``, proves the body yields the
carried value unchanged for every lane: exact laws ``select(false, a, b) = b``, ``max(acc, -inf) = acc``
(NaN-propagating max, -0 kept), ``exp(-inf) = +0``, ``x - m = -inf`` for ``x = -inf`` and ``m`` a constant that is
neither ``-inf`` nor NaN, ``0 * v = +-0`` for a finite constant ``v``, and ``acc + (+-0) = acc`` when ``init`` is not
``-0.0`` and the body is ``acc + x`` (round to nearest: ``x + y = -0`` only when both are ``-0``, so the carry never
becomes ``-0``). Two laws hold only for data without inf/NaN: ``-inf - m = -inf`` needs ``m`` not ``-inf``/NaN,
``0 * v = 0`` needs ``v`` finite; for loaded data they are used only under ``numerics = relaxed_normalization`` (the
user's numeric permission; IEEE differs only when the masked-out data or the running maximum are inf/NaN). Without it
such a range stays in the mixed loop.

Rewrites: the loop becomes two or three loops in sequence, each taking the previous result as its init: the all-true
loop with the predicate replaced by ``true`` and the checks ``iv >= lb`` / ``iv < ub`` by ``true`` (so its accesses'
validity no longer reads the induction variable), the mixed loop with the original body, and the all-false loop only
when not removed (it is then part of the mixed loop). Each loop carries ``narrowing = {kind, proof, source}``
(all_true / mixed; source = the predicate's origin). Laws for constants (select/and on true/false, max/min with
-inf/+inf, index ``x + 0``) are unioned wherever they match.

Preserves: the value of every carried result exactly (the all-false removal under relaxed numerics: except for
inf/NaN in masked-out data); iteration order inside each range and across ranges (lb..ub ascending); effects (only
pure loops); the ABI; compile options.

Invalidates: loop bounds and trip counts, access validity, footprint/cost facts of the loop nest.

Verifier: the shared GPU verifier after the group, including IR-10 (11) ``check_narrowing``: records are complete,
an all_true loop's validity does not read its induction variable, a mixed loop keeps its predicate (a validity, or
a select on a check of the induction variable).

After extraction, once the tile sizes are literals, the optimizer runs the group's two passes that need them when
this group is in the rulebooks (``optimizer.optimize._range_passes``; each declares itself in its module):
``intent_eqsat.ir.range_skip`` (a loop with a lane check other than its tile tail: its all-true iterations with the
checks ``true``, then the rest, whose all-false end is removed where local value propagation proves the body is the
identity there: causal attention's key loops, per key or per key tile) and then ``intent_eqsat.ir.tail_split`` (a
tile loop's full tiles without the tail check).
"""
from __future__ import annotations

from egglog import Bool, Expr, String, eq, function, i64, i64Like, ne, relation, rewrite, rule, ruleset, set_, union, \
    var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.facts import OptNumerics
from intent_eqsat.rules.sorts import A, AMap, LE, LEs, Multi, Region, Regions, Stmts, Strs, Ty, Tys, Val, Vals

GROUP = "narrowing"
ORDER = 40
RULESET = ruleset(name=GROUP)
#: value propagation, predicate substitution and the facts they need: terminating, saturated before each iteration
PROP = ruleset(name="narrowing_prop")
ANALYSES = (P.ANALYSIS, P.DEPS, PROP)

INDEX = Ty.scalar("index")
FLOATS = ("f16", "bf16", "f32", "f64")
_IV_BITS = P.IV_BITS   # Dep(v): bit d = reads the induction variable of depth d; bit 16+d = reads any arg of depth d


class NCtx(Expr, egg_sort="NarrowCtx"):
    """A substitution context: inside the loop of region depth ``d`` (bounds ``lb``, ``ub``), predicate ``p`` is
    ``truth`` (1: the all-true range, 0: the all-false range)."""

    @classmethod
    def make(cls, d: i64Like, truth: i64Like, p: Val, lb: Val, ub: Val) -> NCtx: ...


@function(egg_fn="NarrowVal")
def nval(v: Val, c: NCtx) -> Val:
    """``v`` with the context's predicate (and the loop-range checks of its induction variable) substituted."""


@function(egg_fn="NarrowVals")
def nvals(vs: Vals, c: NCtx) -> Vals: ...


@function(egg_fn="NarrowRegions")
def nregions(rs: Regions, c: NCtx) -> Regions: ...


@function(egg_fn="NarrowAttrs")
def with_narrowing(m: AMap, rec: A) -> AMap:
    """``m`` with ``narrowing = rec`` (key-sorted)."""


Dep, VDep, RDep = P.Dep, P.VDep, P.RDep           # the shared dependency analysis (``patterns.DEPS``)


@function(egg_fn="NarrowGen", merge=lambda old, new: old.max(new))
def Gen(m: Multi) -> i64:
    """0 for a loop of the input, 1 for a loop this group made (split once; join max)."""


#: v is the integer constant k (const or launch literal)
IntVal = relation("NarrowIntVal", Val, i64, egg_fn="NarrowIntVal")
#: v is (a broadcast of) the float constant with this text
CstF = relation("NarrowCstF", Val, String, egg_fn="NarrowCstF")
CstB = relation("NarrowCstB", Val, i64, egg_fn="NarrowCstB")                # v is (a broadcast of) the i1 constant 0/1
FloatTy = relation("NarrowFloatTy", Ty, egg_fn="NarrowFloatTy")
IvOff = relation("NarrowIvOff", Val, i64, i64, egg_fn="NarrowIvOff")         # v = iv(depth d) + c in every lane
Want = relation("NarrowWant", Val, egg_fn="NarrowWant")                     # bounds of v are wanted
#: every lane of v lies in [lo, hi] (index scalars)
Bnd = relation("NarrowBnd", Val, Val, Val, egg_fn="NarrowBnd")
Below = relation("NarrowBelow", Val, i64, Val, Val, egg_fn="NarrowBelow")    # p(lane) == iv_d < B(lane), lo <= B <= hi
Above = relation("NarrowAbove", Val, i64, Val, Val, egg_fn="NarrowAbove")    # p(lane) == iv_d >= B(lane), lo <= B <= hi
SelCond = relation("NarrowSelCond", Val, egg_fn="NarrowSelCond")               # v is the condition of a select
#: v is a value of loop m's body (depth d) reading its iv
InBody = relation("NarrowInBody", Multi, i64, Val, egg_fn="NarrowInBody")
InBodyL = relation("NarrowInBodyL", Multi, i64, Vals, egg_fn="NarrowInBodyL")
InBodyR = relation("NarrowInBodyR", Multi, i64, Regions, egg_fn="NarrowInBodyR")
#: the loop's body holds an access with validity
ValidAcc = relation("NarrowValidAcc", Multi, egg_fn="NarrowValidAcc")
Zero = relation("NarrowZero", Val, egg_fn="NarrowZero")                     # v is +0 or -0 in every lane
NegInf = relation("NarrowNegInf", Val, egg_fn="NarrowNegInf")                 # v is -inf in every lane
Finite = relation("NarrowFinite", Val, egg_fn="NarrowFinite")
NotNegInfNaN = relation("NarrowNotNegInfNaN", Val, egg_fn="NarrowNotNegInfNaN")     # v in (-inf, +inf]
NotNegZero = relation("NarrowNotNegZero", Val, egg_fn="NarrowNotNegZero")         # no lane of v is -0.0
#: with predicate p false, loop m's body is the identity
Skippable = relation("NarrowSkippable", Multi, Val, egg_fn="NarrowSkippable")


def _cst(value: A, ty) -> Val:
    return Val.op("const", Vals.nil(), P.amap(value=value), ty)


def _idx(op: str, a: Val, b: Val) -> Val:
    return Val.op(op, P.vals(a, b), AMap.nil(), INDEX)


def _shift(v: Val, k) -> Val:
    """``v + k`` on index scalars (``x + 0 = x`` is a law of this group)."""
    return _idx("add", v, _cst(A.int_(k), INDEX))


def _rec(kind: str, proof: str, src) -> A:
    return A.dict_(P.amap(kind=A.str_(kind), proof=A.str_(proof), source=A.str_(src)))


_PROOF_TRUE_BELOW = ("all_true: the predicate is iv < B per lane with exact bounds min B <= B <= max B; this loop runs "
                     "iv in [lb, clamp(min B)), so iv < B in every lane; iv >= lb and iv < ub hold by the original "
                     "range")
_PROOF_TRUE_ABOVE = ("all_true: the predicate is iv >= B per lane with exact bounds min B <= B <= max B; this loop "
                     "runs iv in [clamp(max B), ub), so iv >= B in every lane; iv >= lb and iv < ub hold by the "
                     "original range")
_PROOF_MIXED = ("mixed: lanes of both truth values may meet in this range; the predicate and the access validity "
                "are kept")
_PROOF_MIXED_SKIP = ("mixed: lanes of both truth values may meet in this range; the predicate and the access "
                     "validity are kept. all_false_skipped: on the remaining range the predicate is false in every "
                     "lane and value propagation proves the body yields its carried value unchanged, so that loop "
                     "was removed")


# ----------------------------------------------------------------------------------------------- analyses


def _prop_rules():
    R = []

    def add(name, r, law):
        R.append((f"narrowing.{name}", r, law))

    v, x, y, z, w, a, b, p, m_, lb, ub, s, lo, hi, r_, y0, init = vars_(
        "v x y z w a b p m_ lb ub s lo hi r_ y0 init", Val)
    xs, ys, rest = vars_("xs ys rest", Vals)
    regs, rrest = vars_("regs rrest", Regions)
    at, at2, ya, az = vars_("at at2 ya az", AMap)
    t, t2, ivt = vars_("t t2 ivt", Ty)
    tys, args = vars_("tys args", Tys)
    nm, text, key, src = vars_("nm text key src", String)
    d, k, c, kk, dd, i, mk, r = vars_("d k c kk dd i mk r", i64)
    mu = var("mu", Multi)
    sh = var("sh", LEs)
    ax = var("ax", Strs)
    big_t = var("big_t", LE)
    rec, av = vars_("rec av", A)
    ctx = NCtx.make(d, k, p, lb, ub)

    # -- constants ---------------------------------------------------------------------------------------
    add("int_const", rule(eq(v).to(Val.op("const", Vals.nil(), at, t)), P.HasAttr(at, "value", A.int_(k))).then(
        IntVal(v, k)), "an integer constant")
    add("int_launch", rule(eq(v).to(Val.op("launch", Vals.nil(), at, t)),
                           P.HasAttr(at, "expr", A.le(LE.int_(k)))).then(IntVal(v, k)), "a literal launch value")
    add("cst_float", rule(eq(v).to(Val.op("const", Vals.nil(), at, t)), P.HasAttr(at, "value", A.float_(text))).then(
        CstF(v, text)), "a float constant")
    add("cst_bool", rule(eq(v).to(Val.op("const", Vals.nil(), at, t)), P.HasAttr(at, "value", A.bool_(k))).then(
        CstB(v, k)), "an i1 constant")
    add("cst_float_bcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), at, t)), CstF(x, text)).then(CstF(v, text)),
        "a broadcast constant")
    add("cst_bool_bcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), at, t)), CstB(x, k)).then(CstB(v, k)),
        "a broadcast constant")
    for dt in FLOATS:
        add(f"float_scalar_{dt}", rule(eq(t).to(Ty.scalar(dt))).then(FloatTy(t)), f"{dt} is a float")
        add(f"float_frag_{dt}", rule(eq(t).to(Ty.frag(dt, sh))).then(FloatTy(t)), f"{dt} is a float")
        add(f"float_frag_axes_{dt}", rule(eq(t).to(Ty.frag_axes(dt, sh, ax))).then(FloatTy(t)), f"{dt} is a float")

    # -- laws (global, exact) ----------------------------------------------------------------------------
    sel = Val.op("select", P.vals(x, a, b), at, t)
    add("select_true", rule(eq(v).to(sel), CstB(x, 1), P.ValTy(a, t)).then(union(v).with_(a)),
        "select(true, a, b) = a")
    add("select_false", rule(eq(v).to(sel), CstB(x, 0), P.ValTy(b, t)).then(union(v).with_(b)),
        "select(false, a, b) = b")
    add("and_true_l", rule(eq(v).to(Val.op("and", P.vals(x, a), at, t)), CstB(x, 1), P.ValTy(a, t)).then(
        union(v).with_(a)), "true & a = a")
    add("and_true_r", rule(eq(v).to(Val.op("and", P.vals(a, x), at, t)), CstB(x, 1), P.ValTy(a, t)).then(
        union(v).with_(a)), "a & true = a")
    add("max_neginf_r", rule(eq(v).to(Val.op("max", P.vals(a, x), at, t)), CstF(x, "-inf"), P.ValTy(a, t)).then(
        union(v).with_(a)), "max(a, -inf) = a (NaN propagates, -0 kept)")
    add("max_neginf_l", rule(eq(v).to(Val.op("max", P.vals(x, a), at, t)), CstF(x, "-inf"), P.ValTy(a, t)).then(
        union(v).with_(a)), "max(-inf, a) = a")
    add("min_inf_r", rule(eq(v).to(Val.op("min", P.vals(a, x), at, t)), CstF(x, "inf"), P.ValTy(a, t)).then(
        union(v).with_(a)), "min(a, inf) = a")
    add("min_inf_l", rule(eq(v).to(Val.op("min", P.vals(x, a), at, t)), CstF(x, "inf"), P.ValTy(a, t)).then(
        union(v).with_(a)), "min(inf, a) = a")
    add("index_add_zero", rule(eq(v).to(Val.op("add", P.vals(a, x), at, INDEX)), IntVal(x, 0),
                               P.ValTy(a, INDEX)).then(union(v).with_(a)), "x + 0 = x on index scalars")

    # -- value facts for the identity proof ----------------------------------------------------------------
    add("zero_const", rule(CstF(v, "0.0")).then(Zero(v)), "0.0 is a zero")
    add("zero_negconst", rule(CstF(v, "-0.0")).then(Zero(v)), "-0.0 is a zero")
    add("zero_exp", rule(eq(v).to(Val.op("exp", P.vals(x), at, t)), NegInf(x)).then(Zero(v)), "exp(-inf) = +0")
    add("zero_cast", rule(eq(v).to(Val.op("cast", P.vals(x), at, t)), Zero(x)).then(Zero(v)), "cast(+-0) = +-0")
    add("zero_mul_l", rule(eq(v).to(Val.op("mul", P.vals(x, a), at, t)), Zero(x), Finite(a)).then(Zero(v)),
        "+-0 * finite = +-0")
    add("zero_mul_r", rule(eq(v).to(Val.op("mul", P.vals(a, x), at, t)), Zero(x), Finite(a)).then(Zero(v)),
        "finite * +-0 = +-0")
    add("zero_mul_l_relaxed", rule(eq(v).to(Val.op("mul", P.vals(x, a), at, t)), Zero(x),
                                   OptNumerics("relaxed_normalization")).then(Zero(v)),
        "+-0 * v = +-0 for finite v (relaxed_normalization: masked-out data are taken as finite)")
    add("zero_mul_r_relaxed", rule(eq(v).to(Val.op("mul", P.vals(a, x), at, t)), Zero(x),
                                   OptNumerics("relaxed_normalization")).then(Zero(v)),
        "v * +-0 = +-0 for finite v (relaxed_normalization)")
    add("neginf_const", rule(CstF(v, "-inf")).then(NegInf(v)), "-inf")
    add("neginf_cast", rule(eq(v).to(Val.op("cast", P.vals(x), at, t)), NegInf(x), FloatTy(t)).then(NegInf(v)),
        "a float cast keeps -inf")
    add("neginf_sub", rule(eq(v).to(Val.op("sub", P.vals(x, a), at, t)), NegInf(x), NotNegInfNaN(a)).then(
        NegInf(v)), "-inf - m = -inf for m in (-inf, +inf]")
    add("neginf_sub_relaxed", rule(eq(v).to(Val.op("sub", P.vals(x, a), at, t)), NegInf(x),
                                   OptNumerics("relaxed_normalization")).then(NegInf(v)),
        "-inf - m = -inf for m not -inf/NaN (relaxed_normalization: a running maximum over data is taken as such)")
    add("finite_const", rule(CstF(v, text), ne(text).to(String("inf")), ne(text).to(String("-inf")),
                             ne(text).to(String("nan"))).then(Finite(v)), "a finite constant")
    add("nni_finite", rule(Finite(v)).then(NotNegInfNaN(v)), "finite is in (-inf, +inf]")
    add("nni_inf", rule(CstF(v, "inf")).then(NotNegInfNaN(v)), "+inf is in (-inf, +inf]")
    add("nnz_const", rule(CstF(v, text), ne(text).to(String("-0.0"))).then(NotNegZero(v)), "a constant not -0.0")
    add("nnz_add_l", rule(eq(v).to(Val.op("add", P.vals(x, a), at, t)), NotNegZero(x), FloatTy(t)).then(
        NotNegZero(v)), "x + y = -0 only when both are -0 (round to nearest)")
    add("nnz_add_r", rule(eq(v).to(Val.op("add", P.vals(a, x), at, t)), NotNegZero(x), FloatTy(t)).then(
        NotNegZero(v)), "x + y = -0 only when both are -0 (round to nearest)")

    # -- predicates over the induction variable ------------------------------------------------------------
    add("iv_arg", rule(eq(v).to(Val.arg(d, 0, INDEX))).then(IvOff(v, d, 0)), "iv = iv + 0")
    for cty in ("i64", "index"):
        add(f"iv_cast_{cty}", rule(eq(v).to(Val.op("cast", P.vals(x), at, Ty.scalar(cty))), IvOff(x, d, c)).then(
            IvOff(v, d, c)), "an exact cast of an index")
    add("iv_bcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), at, t)), IvOff(x, d, c)).then(IvOff(v, d, c)),
        "a broadcast is the same in every lane")
    add("iv_add_r", rule(eq(v).to(Val.op("add", P.vals(x, a), at, t)), IvOff(x, d, c), IntVal(a, k)).then(
        IvOff(v, d, c + k)), "(iv + c) + k")
    add("iv_add_l", rule(eq(v).to(Val.op("add", P.vals(a, x), at, t)), IvOff(x, d, c), IntVal(a, k)).then(
        IvOff(v, d, c + k)), "k + (iv + c)")
    add("sel_cond", rule(eq(v).to(sel)).then(SelCond(x)), "the condition of a select")
    cmpv = Val.op("cmp", P.vals(x, b), at, t)
    cmpr = Val.op("cmp", P.vals(b, x), at, t)
    add("want_l", rule(eq(v).to(cmpv), IvOff(x, d, c), SelCond(v)).then(Want(b)), "bounds of the other side")
    add("want_r", rule(eq(v).to(cmpr), IvOff(x, d, c), SelCond(v)).then(Want(b)), "bounds of the other side")
    add("bnd_index", rule(Want(v), P.ValTy(v, INDEX)).then(Bnd(v, v, v)), "a scalar is its own bounds")
    for fty in ("frag", "axes"):
        src_t = Ty.frag("index", sh) if fty == "frag" else Ty.frag_axes("index", sh, ax)
        dst_t = Ty.frag("i64", sh) if fty == "frag" else Ty.frag_axes("i64", sh, ax)
        add(f"want_cast_{fty}", rule(Want(v), eq(v).to(Val.op("cast", P.vals(x), at, dst_t)), P.ValTy(x, src_t))
            .then(Want(x)), "an index->i64 cast is exact")
        add(f"bnd_cast_{fty}", rule(Want(v), eq(v).to(Val.op("cast", P.vals(x), at, dst_t)), Bnd(x, lo, hi))
            .then(Bnd(v, lo, hi)), "an index->i64 cast is exact")
    add("want_cast_scalar", rule(Want(v), eq(v).to(Val.op("cast", P.vals(x), at, Ty.scalar("i64"))),
                                 P.ValTy(x, INDEX)).then(Want(x)), "an index->i64 cast is exact")
    add("bnd_cast_scalar", rule(Want(v), eq(v).to(Val.op("cast", P.vals(x), at, Ty.scalar("i64"))),
                                Bnd(x, lo, hi)).then(Bnd(v, lo, hi)), "an index->i64 cast is exact")
    add("want_bcast", rule(Want(v), eq(v).to(Val.op("broadcast", P.vals(x), at, t))).then(Want(x)),
        "a broadcast has its operand's bounds")
    add("bnd_bcast", rule(Want(v), eq(v).to(Val.op("broadcast", P.vals(x), at, t)), Bnd(x, lo, hi)).then(
        Bnd(v, lo, hi)), "a broadcast has its operand's bounds")
    for fty in ("frag", "axes"):
        rt = Ty.frag("index", LEs.cons(big_t, LEs.nil())) if fty == "frag" else \
            Ty.frag_axes("index", LEs.cons(big_t, LEs.nil()), ax)
        top = _idx("add", s, _idx("add", Val.op("launch", Vals.nil(), P.amap(expr=A.le(big_t)), INDEX),
                                  _cst(A.int_(-1), INDEX)))
        for start in ("nil", "zero"):
            rng = Val.op("range", Vals.nil(), AMap.nil() if start == "nil" else ya, rt)
            start_facts = [] if start == "nil" else [P.HasAttr(ya, "start", A.int_(0))]
            for side, operands in (("l", P.vals(w, rng)), ("r", P.vals(rng, w))):
                add(f"bnd_tile_{fty}_{start}_{side}", rule(Want(v), eq(v).to(Val.op("add", operands, at, rt)),
                                                           eq(w).to(Val.op("broadcast", P.vals(s), at2, rt)),
                                                           P.ValTy(s, INDEX), *start_facts).then(Bnd(v, s, top)),
                    "a tile coordinate s + range(T) lies in [s, s + T - 1]")
    # per-lane thresholds: iv + c <= b  <=>  iv < b - c + 1, and so on
    for pred, kind, shift, flip in (("le", Below, 1, False), ("lt", Below, 0, False), ("ge", Above, 0, False),
                                    ("gt", Above, 1, False), ("le", Above, 0, True), ("lt", Above, 1, True),
                                    ("ge", Below, 1, True), ("gt", Below, 0, True)):
        pat = cmpr if flip else cmpv
        tag = f"{pred}_{'r' if flip else 'l'}"
        add(f"thr_{tag}", rule(eq(v).to(pat), P.HasAttr(at, "pred", A.str_(pred)), IvOff(x, d, c), Bnd(b, lo, hi),
                               SelCond(v)).then(kind(v, d, _shift(lo, i64(shift) - c), _shift(hi, i64(shift) - c))),
            f"{'b ' + pred + ' iv + c' if flip else 'iv + c ' + pred + ' b'}: threshold b - c + {shift} per lane")

    # -- the loop's body ----------------------------------------------------------------------------------
    body_loop = Multi.op("for", xs, at, tys, Regions.cons(Region.make(d, args, Stmts.nil(), ys, ya), Regions.nil()))
    add("gen_input", rule(eq(mu).to(Multi.op("for", xs, at, tys, regs))).then(set_(Gen(mu)).to(0)),
        "a loop not made by this group")
    add("gen_recorded", rule(eq(mu).to(Multi.op("for", xs, at, tys, regs)), P.HasAttr(at, "narrowing", rec)).then(
        set_(Gen(mu)).to(1)), "a loop with a narrowing record (a copy of one this group made) is not split again")
    add("body_yields", rule(eq(mu).to(body_loop)).then(InBodyL(mu, d, ys)), "a loop's yields")
    add("body_cons", rule(InBodyL(mu, d, Vals.cons(x, rest))).then(InBodyL(mu, d, rest)), "walk a list")
    add("body_val", rule(InBodyL(mu, d, Vals.cons(x, rest)), eq(mk).to(Dep(x)), ne(mk & (i64(1) << d)).to(i64(0)))
        .then(InBody(mu, d, x)), "a value reading the loop's induction variable")
    add("body_op", rule(InBody(mu, d, Val.op(nm, xs, at, t))).then(InBodyL(mu, d, xs)), "an op's operands")
    mres = Val.res(Multi.op(nm, xs, at, tys, regs), i, t)
    add("body_res", rule(InBody(mu, d, mres)).then(InBodyL(mu, d, xs), InBodyR(mu, d, regs)), "a nested op")
    add("body_region", rule(InBodyR(mu, d, Regions.cons(Region.make(r, args, Stmts.nil(), ys, ya), rrest))).then(
        InBodyL(mu, d, ys), InBodyR(mu, d, rrest)), "a nested region's yields")
    for acc in ("load", "gather"):
        add(f"valid_{acc}", rule(InBody(mu, d, Val.op(acc, xs, at, t)), P.HasAttr(at, "valid", A.bool_(1))).then(
            ValidAcc(mu)), f"a {acc} with validity")

    # -- substitution ------------------------------------------------------------------------------------
    iv = Val.arg(d, 0, INDEX)
    deps = [eq(mk).to(Dep(v)), ne(mk & (i64(1) << d)).to(i64(0))]
    add("subst_arg", rewrite(nval(Val.arg(dd, kk, t), ctx)).to(Val.arg(dd, kk, t)), "arguments stay")
    add("subst_free", rule(eq(y).to(nval(v, ctx)), eq(mk).to(Dep(v)), eq(mk & (i64(1) << d)).to(i64(0))).then(
        union(y).with_(v)), "a value not reading the induction variable is unchanged")
    add("subst_pred", rule(eq(y).to(nval(p, ctx)), P.ValTy(p, t)).then(union(y).with_(_cst(A.bool_(k), t))),
        "the predicate has the range's truth value")
    add("subst_op", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op(nm, xs, at, t)), ne(nm).to(String("cmp")),
                         ne(v).to(p), *deps).then(union(y).with_(Val.op(nm, nvals(xs, ctx), at, t))),
        "substitute in the operands")
    add("subst_cmp", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op("cmp", P.vals(x, b), at, t)),
                          ne(x).to(iv), ne(v).to(p), *deps).then(
        union(y).with_(Val.op("cmp", nvals(P.vals(x, b), ctx), at, t))), "substitute in a comparison's operands")
    add("subst_cmp_iv", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op("cmp", P.vals(iv, b), at, t)),
                             P.HasAttr(at, "pred", A.str_(text)), ne(text).to(String("ge")),
                             ne(text).to(String("lt")), ne(v).to(p), *deps).then(
        union(y).with_(Val.op("cmp", nvals(P.vals(iv, b), ctx), at, t))),
        "substitute in a comparison of the iv that is not a range check")
    add("subst_lt_ub", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op("cmp", P.vals(iv, ub), at, t)),
                            P.HasAttr(at, "pred", A.str_("lt")), ne(v).to(p)).then(
        union(y).with_(_cst(A.bool_(1), t))), "iv < ub holds inside [lb, ub)")
    add("subst_ge_lb", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op("cmp", P.vals(iv, lb), at, t)),
                            P.HasAttr(at, "pred", A.str_("ge")), ne(v).to(p)).then(
        union(y).with_(_cst(A.bool_(1), t))), "iv >= lb holds inside [lb, ub)")
    add("subst_ge_const", rule(eq(y).to(nval(v, ctx)), eq(v).to(Val.op("cmp", P.vals(iv, b), at, t)),
                               P.HasAttr(at, "pred", A.str_("ge")), ne(v).to(p), IntVal(b, c), IntVal(lb, kk),
                               eq(kk.bool_ge(c)).to(Bool(True))).then(union(y).with_(_cst(A.bool_(1), t))),
        "iv >= c holds inside [lb, ub) when lb >= c")
    add("subst_res", rule(eq(y).to(nval(v, ctx)), eq(v).to(mres), *deps).then(
        union(y).with_(Val.res(Multi.op(nm, nvals(xs, ctx), at, tys, nregions(regs, ctx)), i, t))),
        "substitute in a nested op and its regions")
    add("subst_nil", rewrite(nvals(Vals.nil(), ctx)).to(Vals.nil()), "[]")
    add("subst_cons", rewrite(nvals(Vals.cons(x, rest), ctx)).to(Vals.cons(nval(x, ctx), nvals(rest, ctx))),
        "each operand")
    add("subst_rnil", rewrite(nregions(Regions.nil(), ctx)).to(Regions.nil()), "no regions")
    add("subst_region", rewrite(nregions(Regions.cons(Region.make(r, args, Stmts.nil(), ys, ya), rrest), ctx)).to(
        Regions.cons(Region.make(r, args, Stmts.nil(), nvals(ys, ctx), ya), nregions(rrest, ctx))),
        "the yields of a pure region")

    # -- the all-false body is the identity ----------------------------------------------------------------
    loop1 = Multi.op("for", P.vals(lb, ub, s, init), at, Tys.cons(t, Tys.nil()),
                     Regions.cons(Region.make(d, Tys.cons(ivt, Tys.cons(t, Tys.nil())), Stmts.nil(), P.vals(y0), ya),
                                  Regions.nil()))
    carry = Val.arg(d, 1, t)
    c0 = NCtx.make(d, 0, p, lb, ub)
    add("skip_identity", rule(eq(mu).to(loop1), eq(nval(y0, c0)).to(carry)).then(Skippable(mu, p)),
        "the body yields the carry unchanged")
    for side, pair in (("r", lambda q: P.vals(carry, q)), ("l", lambda q: P.vals(q, carry))):
        add(f"skip_add_zero_{side}", rule(eq(mu).to(loop1), NotNegZero(init), eq(y0).to(Val.op("add", pair(x), at2, t)),
                                          eq(nval(y0, c0)).to(Val.op("add", pair(z), az, t)), Zero(z)).then(
            Skippable(mu, p)),
            "acc + (+-0) = acc: the carry starts not -0 and an acc + x body never makes it -0 (round to nearest)")

    # -- attribute plumbing --------------------------------------------------------------------------------
    add("attrs_nil", rewrite(with_narrowing(AMap.nil(), rec)).to(AMap.cons("narrowing", rec, AMap.nil())),
        "add the record")
    add("attrs_after", rewrite(with_narrowing(AMap.cons("after", av, at), rec)).to(
        AMap.cons("after", av, with_narrowing(at, rec))), "'after' sorts first")
    add("attrs_replace", rewrite(with_narrowing(AMap.cons("narrowing", av, at), rec)).to(
        AMap.cons("narrowing", rec, at)), "replace a record")
    add("attrs_insert", rewrite(with_narrowing(AMap.cons(key, av, at), rec)).to(
        AMap.cons("narrowing", rec, AMap.cons(key, av, at)), ne(key).to(String("after")),
        ne(key).to(String("narrowing"))), "the record sorts before origin/reduce/tag")
    return R


# ------------------------------------------------------------------------------------------------- splits


def _split_rules():
    R = []

    def add(name, r, law):
        R.append((f"narrowing.{name}", r, law))

    lb, ub, st, init, y0, p, lo, hi, res, pa, pb = vars_("lb ub st init y0 p lo hi res pa pb", Val)
    at, ya, pat = vars_("at ya pat", AMap)
    t, ivt, pt = vars_("t ivt pt", Ty)
    src = var("src", String)
    d, ml, mh = vars_("d ml mh", i64)
    mu = var("mu", Multi)
    tys = Tys.cons(t, Tys.nil())
    args = Tys.cons(ivt, Tys.cons(t, Tys.nil()))
    region = Regions.cons(Region.make(d, args, Stmts.nil(), P.vals(y0), ya), Regions.nil())
    loop = Multi.op("for", P.vals(lb, ub, st, init), at, tys, region)
    # scalar carries only: a blocked loop (a fragment carry) is narrowed after binding, when its tile sizes are
    # literals (``intent_eqsat.ir.range_skip``); splitting it here also multiplied the substitution's terms with the
    # fragment forms of the other groups (causal attention's e-graph grew past the node limit within one analysis)
    facts = [eq(res).to(Val.res(mu, 0, t)), eq(mu).to(loop), eq(t).to(Ty.scalar(var("cdt", String))), IntVal(st, 1),
             eq(Gen(mu)).to(i64(0)),
             InBody(mu, d, p), ValidAcc(mu), eq(p).to(Val.op("cmp", P.vals(pa, pb), pat, pt)),
             P.HasAttr(pat, "origin", A.str_(src)),
             eq(ml).to(Dep(lo)), eq((ml >> _IV_BITS) >> d).to(i64(0)),
             eq(mh).to(Dep(hi)), eq((mh >> _IV_BITS) >> d).to(i64(0))]

    def mk(l, u, i, attrs, regs):
        return Multi.op("for", P.vals(l, u, st, i), attrs, tys, regs)

    def body(truth):
        return Regions.cons(Region.make(d, args, Stmts.nil(), P.vals(nval(y0, NCtx.make(d, truth, p, lb, ub))),
                                        ya), Regions.nil())

    clamp = lambda x, lo_: _idx("min", _idx("max", x, lo_), ub)  # noqa: E731
    q1 = clamp(lo, lb)
    q2 = clamp(hi, q1)
    demand = nval(y0, NCtx.make(d, 0, p, lb, ub))
    mixed = with_narrowing(at, _rec("mixed", _PROOF_MIXED, src))
    mixed_skip = with_narrowing(at, _rec("mixed", _PROOF_MIXED_SKIP, src))

    # iv < B: [lb, q1) all-true, [q1, q2) mixed, [q2, ub) all-false
    t_below = with_narrowing(at, _rec("all_true", _PROOF_TRUE_BELOW, src))
    l1 = mk(lb, q1, init, t_below, body(1))
    l2 = mk(q1, ub, Val.res(l1, 0, t), mixed, region)
    add("split_below", rule(*facts, Below(p, d, lo, hi)).then(
        union(res).with_(Val.res(l2, 0, t)), set_(Gen(l1)).to(1), set_(Gen(l2)).to(1), demand),
        "for j in [lb, ub) == for j in [lb, q1) (predicate true) ; for j in [q1, ub) (predicate kept)")
    l2s = mk(q1, q2, Val.res(l1, 0, t), mixed_skip, region)
    add("skip_below", rule(*facts, Below(p, d, lo, hi), Skippable(mu, p)).then(
        union(res).with_(Val.res(l2s, 0, t)), set_(Gen(l1)).to(1), set_(Gen(l2s)).to(1)),
        "... ; for j in [q1, q2) (mixed) ; [q2, ub) removed: its body is the identity")
    l1s = mk(lb, q1, init, with_narrowing(at, _rec("all_true", _PROOF_TRUE_BELOW + "; the rest of the range is "
                                                   "all-false and its body is the identity, so it was removed "
                                                   "(all_false_skipped)", src)), body(1))
    add("skip_below_point", rule(*facts, Below(p, d, lo, hi), eq(lo).to(hi), Skippable(mu, p)).then(
        union(res).with_(Val.res(l1s, 0, t)), set_(Gen(l1s)).to(1)),
        "a scalar threshold has no mixed range: for j in [lb, q1) (predicate true) only")

    # iv >= B: [lb, q1) all-false, [q1, q2) mixed, [q2, ub) all-true
    t_above = with_narrowing(at, _rec("all_true", _PROOF_TRUE_ABOVE, src))
    m1 = mk(lb, q2, init, mixed, region)
    m2 = mk(q2, ub, Val.res(m1, 0, t), t_above, body(1))
    add("split_above", rule(*facts, Above(p, d, lo, hi)).then(
        union(res).with_(Val.res(m2, 0, t)), set_(Gen(m1)).to(1), set_(Gen(m2)).to(1), demand),
        "for j in [lb, ub) == for j in [lb, q2) (predicate kept) ; for j in [q2, ub) (predicate true)")
    m1s = mk(q1, q2, init, mixed_skip, region)
    m2s = mk(q2, ub, Val.res(m1s, 0, t), t_above, body(1))
    add("skip_above", rule(*facts, Above(p, d, lo, hi), Skippable(mu, p)).then(
        union(res).with_(Val.res(m2s, 0, t)), set_(Gen(m1s)).to(1), set_(Gen(m2s)).to(1)),
        "[lb, q1) removed (identity) ; for j in [q1, q2) (mixed) ; for j in [q2, ub) (predicate true)")
    m2p = mk(q1, ub, init, with_narrowing(at, _rec("all_true", _PROOF_TRUE_ABOVE + "; the range before it is "
                                                   "all-false and its body is the identity, so it was removed "
                                                   "(all_false_skipped)", src)), body(1))
    add("skip_above_point", rule(*facts, Above(p, d, lo, hi), eq(lo).to(hi), Skippable(mu, p)).then(
        union(res).with_(Val.res(m2p, 0, t)), set_(Gen(m2p)).to(1)),
        "a scalar threshold has no mixed range: for j in [q1, ub) (predicate true) only")
    return R


_PROP = None
_RULES = None


def _prop():
    global _PROP
    if _PROP is None:
        _PROP = _prop_rules()
        for _n, r, _l in _PROP:
            PROP.append(r)
    return _PROP


def rules():
    """(name, egglog rule, law) for every rule of the group (the value-propagation rules run as its analysis)."""
    global _RULES
    if _RULES is None:
        _prop()
        _RULES = _split_rules()
    return _RULES


for _name, _rule, _law in rules():
    RULESET.append(_rule)
