"""Boundary neutralization (SPEC PASS-3.4 "boundary neutralization really removes validity/fill"; PASS-3.5
all-true drops validity): predicates that an interval analysis proves constant are folded, and an access whose
validity is proven all-true loses its validity operand, ``valid`` flag and ``fill``.

Reads: the current program's index values: region arguments of execution groups (decoded coordinates in
``[0, extent)`` of their segment, IR-3) and of ``for`` loops (induction variable in ``[lb, ub)`` for a constant
step > 0, IR-5), ``const`` and ``launch`` values, ``add``/``sub``/``mul``/``min``/``max``/widening ``cast``/
``broadcast``/``range`` over ``index``/``i64``; comparisons, ``and``/``or``/``not``/``select`` on ``i1``; the
``valid`` attribute and trailing validity operand of accesses (IR-6) and ``histogram``.

Legality: an interval is a pair of exact bounds ``key + lo <= v <= key + hi`` per key (a LaunchExpr: a shape
symbol, or the constant 0); a comparison folds only when the bounds of its operands over one common key decide it
for every value. Region arguments are positional (``Arg(depth, index)``: sibling regions at one depth share them),
so an argument's interval is the hull over every region that binds it: a key counts only when every binding site
(every loop / group region at that depth) bounds the argument over it (set intersection), the offsets are the
widest (min lower, max upper), and any other region kind at that depth (reduce/scan combiners, ``while``, ``if``,
loop-carried values, a loop whose step is not a positive constant) has no bounds, which empties the hull. Arithmetic
propagates only on ``index``/``i64`` results (no wrap-around) with magnitudes below 2**40. Validity that is not
proven (tile tails ``coord < E`` after blocking, ``i - 1 >= 0`` at a stencil edge, a causal ``j <= i``) stays.

Rewrites: ``cmp`` decided by the intervals -> a ``const`` ``i1`` (a broadcast of it for a fragment);
``and(true, x) = x``, ``and(false, x) = false``, ``or(true, x) = true``, ``or(false, x) = x``, ``not``
of a constant, ``select(true, a, b) = a``, ``select(false, a, b) = b`` (each side, same type only); an access
(load/gather/store/scatter/scatter-reduce/atomics/buffer accesses) or ``histogram`` whose validity operand is proven
true drops that operand, gets ``valid = false`` and no ``fill``. The replaced node is subsumed (egglog
``subsume``): later rules and the extractor see only the neutralized form, so a later group (blocking) lifts the
unmasked access and adds nothing but its own tail validity.

Preserves: every value in every context where it is defined (a folded predicate has that value at every binding
of its arguments, a proven-true mask reads/writes every member it did before); effect order (an access keeps its
``seq``); the program space, ABI and compile options.

Invalidates: access validity/fill, predicate values, and every fact about the replaced nodes (they are subsumed).
The folds hold for the binding sites present when the group runs; a later group that rebinds an argument over a
wider range would have to re-derive them (blocking does not: a tile index ``p < ceil_div(E, T)`` stays below ``E``,
and its tile coordinates ``p*T + range(T)`` are new values with their own tail validity).

Verifier: the shared GPU verifier after the group (access layouts with and without validity, ``fill`` only on
validated loads, i1 constants).
"""
from __future__ import annotations

import dataclasses

from egglog import Bool, Set, String, eq, function, i64, i64Like, ne, relation, rewrite, rule, ruleset, set_, \
    subsume, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, KernelT, LE, LEs, Multi, Region, Regions, Seg, Segs, Stmt, \
    Stmts, Strs, Tys, Ty, Val, Vals

GROUP = "neutralize"
# SPEC PASS-3 places boundary neutralization in 3.4 (co-realization); it runs before blocking (20) here because the
# predicates it removes are facts of the constructed program space that blocking preserves (a tile index stays in
# its segment, loop bounds stay uniform), and blocking then lifts a body without them (smaller, no dead masks).
ORDER = 15
RULESET = ruleset(name=GROUP)
FORMS = ruleset(name="neutralize_forms")      # exact forms of bound operands, structure of the program space
SITES = ruleset(name="neutralize_sites")      # argument hulls over their binding regions
BOUNDS = ruleset(name="neutralize_bounds")    # intervals of values, constant predicates, list/attribute helpers
ANALYSES = (P.ANALYSIS, FORMS, SITES, BOUNDS)

INDEX = Ty.scalar("index")
I1 = Ty.scalar("i1")
ZERO = LE.int_(0)               # the key of constant bounds
BIG = 1 << 40                   # magnitudes tracked (no i64 overflow in the analysis)
KeySet = Set[LE]


# ------------------------------------------------------------------------------------------ analyses: forms

#: LaunchExpr ``e`` equals ``key + off``
NeutLeForm = relation("NeutLeForm", LE, LE, i64, egg_fn="NeutLeForm")
#: a LaunchExpr whose forms are wanted (segment extents, ``launch`` expressions)
NeutLeDemand = relation("NeutLeDemand", LE, egg_fn="NeutLeDemand")
#: value ``v`` equals ``key + off`` exactly (``const``, ``launch``)
NeutValForm = relation("NeutValForm", Val, LE, i64, egg_fn="NeutValForm")
#: index/i64 (scalar or fragment) types: arithmetic on them does not wrap
NeutIntTy = relation("NeutIntTy", Ty, egg_fn="NeutIntTy")
#: argument ``i`` of the group region at ``depth`` is a coordinate of extent ``e``: ``NeutGroupArgs(d, i, args, exts)``
NeutGroupArgs = relation("NeutGroupArgs", i64, i64, Tys, LEs, egg_fn="NeutGroupArgs")
NeutGroupArg = relation("NeutGroupArg", i64, i64, LE, egg_fn="NeutGroupArg")
#: arguments ``i..`` of a region at ``depth`` have no bounds
NeutNoBounds = relation("NeutNoBounds", i64, i64, Tys, egg_fn="NeutNoBounds")
NeutNoBoundsRegions = relation("NeutNoBoundsRegions", Regions, egg_fn="NeutNoBoundsRegions")


@function(merge=lambda old, new: old | new, egg_fn="NeutLeKeys")
def NeutLeKeys(e: LE) -> KeySet:
    """Keys of the exact forms of a LaunchExpr (lattice: set union; bottom: empty)."""


@function(merge=lambda old, new: old | new, egg_fn="NeutValKeys")
def NeutValKeys(v: Val) -> KeySet:
    """Keys of the exact forms of a loop bound (lattice: set union; bottom: empty, asserted for every loop bound)."""


@function(merge=lambda old, new: old.max(new), egg_fn="NeutPosStep")
def NeutPosStep(v: Val) -> i64:
    """1 when a loop step is a constant > 0 (lattice: max; bottom 0, asserted for every loop step)."""


@function(egg_fn="NeutSegExts")
def neut_seg_exts(segs: Segs, i: i64Like) -> LEs:
    """The extents of segment ``i``."""


# ------------------------------------------------------------------------------------------ analyses: sites

@function(merge=lambda old, new: old & new, egg_fn="NeutArgLoKeys")
def NeutArgLoKeys(d: i64Like, i: i64Like) -> KeySet:
    """Keys over which every binding site bounds ``Arg(d, i)`` from below (lattice: intersection over sites)."""


@function(merge=lambda old, new: old & new, egg_fn="NeutArgHiKeys")
def NeutArgHiKeys(d: i64Like, i: i64Like) -> KeySet:
    """Keys over which every binding site bounds ``Arg(d, i)`` from above (lattice: intersection over sites)."""


@function(merge=lambda old, new: old.min(new), egg_fn="NeutArgLo")
def NeutArgLo(d: i64Like, i: i64Like, key: LE) -> i64:
    """Hull lower offset of ``Arg(d, i)`` over ``key`` (lattice: min over sites)."""


@function(merge=lambda old, new: old.max(new), egg_fn="NeutArgHi")
def NeutArgHi(d: i64Like, i: i64Like, key: LE) -> i64:
    """Hull upper offset of ``Arg(d, i)`` over ``key`` (lattice: max over sites)."""


# ------------------------------------------------------------------------------------------ analyses: bounds

@function(merge=lambda old, new: old.max(new), egg_fn="NeutLb")
def NeutLb(v: Val, key: LE) -> i64:
    """``v >= key + NeutLb(v, key)`` (lattice: max = tightest proven lower bound; bottom: absent)."""


@function(merge=lambda old, new: old.min(new), egg_fn="NeutUb")
def NeutUb(v: Val, key: LE) -> i64:
    """``v <= key + NeutUb(v, key)`` (lattice: min = tightest proven upper bound; bottom: absent)."""


#: the value is a constant true / false predicate (scalar or broadcast)
NeutTrue = relation("NeutTrue", Val, egg_fn="NeutTrue")
NeutFalse = relation("NeutFalse", Val, egg_fn="NeutFalse")


@function(egg_fn="NeutBool")
def neut_bool(b: i64Like, ty: Ty) -> Val:
    """The constant predicate ``b`` (0/1) of type ``ty`` (a scalar const, or its broadcast to a fragment)."""


@function(egg_fn="NeutLast")
def neut_last(xs: Vals) -> Val:
    """The last operand."""


@function(egg_fn="NeutInit")
def neut_init(xs: Vals) -> Vals:
    """The operands without the last one."""


@function(egg_fn="NeutUnmask")
def neut_unmask(m: AMap) -> AMap:
    """Attributes with ``valid = false`` and no ``fill``."""


# ------------------------------------------------------------------------------------------------- helpers

def _in_range(*xs) -> list:
    out = []
    for x in xs:
        out += [eq(x.bool_lt(BIG)).to(Bool(True)), eq(x.bool_gt(-BIG)).to(Bool(True))]
    return out


def _true(x) -> list:
    return [eq(x).to(Bool(True))]


def _const_bool(b: int) -> Val:
    return Val.op("const", Vals.nil(), P.amap(value=A.bool_(b)), I1)


def _named(short: str, egg, law: str):
    """A registry rule named ``neutralize.<short>`` (the egglog rule carries the name too, so the scheduler's
    analysis counts name it), located at the caller's caller (the ``add`` line)."""
    name = f"neutralize.{short}"
    if "name" in {f.name for f in dataclasses.fields(egg.decl)}:
        egg = dataclasses.replace(egg, decl=dataclasses.replace(egg.decl, name=name))
    return named(name, egg, law, depth=3)


# ------------------------------------------------------------------------------------------------- rules

def _forms_rules() -> list:
    R = []

    def add(name, r, law):
        R.append(_named(name, r, law))

    e, k, a = vars_("e k a", LE)
    c, o, d, i, si = vars_("c o d i si", i64)
    v, lb, ub, st = vars_("v lb ub st", Val)
    xs, rest, ys = vars_("xs rest ys", Vals)
    attrs, ya, gattrs = vars_("attrs ya gattrs", AMap)
    ty, ivt = vars_("ty ivt", Ty)
    tys, args, ctys = vars_("tys args ctys", Tys)
    ss = var("ss", Stmts)
    regs = var("regs", Regions)
    nm, order, dt = vars_("nm order dt", String)
    segs = var("segs", Segs)
    exts, erest = vars_("exts erest", LEs)
    seq = var("seq", i64)
    g = var("g", LE)
    name = var("kname", String)
    s = var("s", Stmt)
    sh = var("sh", LEs)
    ax = var("ax", Strs)

    # LaunchExprs
    add("le_self", rule(NeutLeDemand(e)).then(NeutLeForm(e, e, 0), set_(NeutLeKeys(e)).to(KeySet(e))),
        "e = e + 0")
    add("le_int", rule(NeutLeDemand(e), eq(e).to(LE.int_(c)), *_in_range(c)).then(
        NeutLeForm(e, ZERO, c), set_(NeutLeKeys(e)).to(KeySet(ZERO))), "c = 0 + c")
    # exact values
    add("form_const", rule(eq(v).to(Val.op("const", Vals.nil(), attrs, Ty.scalar(dt))),
                           P.HasAttr(attrs, "value", A.int_(c)), *_in_range(c)).then(NeutValForm(v, ZERO, c)),
        "const c = 0 + c")
    add("form_launch_demand", rule(eq(v).to(Val.op("launch", Vals.nil(), attrs, ty)),
                                   P.HasAttr(attrs, "expr", A.le(e))).then(NeutLeDemand(e)),
        "a launch value's expression")
    add("form_launch", rule(eq(v).to(Val.op("launch", Vals.nil(), attrs, ty)), P.HasAttr(attrs, "expr", A.le(e)),
                            NeutLeForm(e, k, o)).then(NeutValForm(v, k, o)), "launch(e) = e")
    add("val_keys", rule(NeutValForm(v, k, o)).then(
        set_(NeutValKeys(v)).to(KeySet(k))), "the keys of a value's exact forms")
    # integer types that do not wrap in the analysis
    for dname in ("index", "i64"):
        add(f"int_ty_{dname}", rule(eq(ty).to(Ty.scalar(dname))).then(NeutIntTy(ty)), f"{dname} does not wrap")
        add(f"int_frag_{dname}", rule(eq(ty).to(Ty.frag_axes(dname, sh, ax))).then(NeutIntTy(ty)),
            f"fragments of {dname} do not wrap")
        add(f"int_frag_plain_{dname}", rule(eq(ty).to(Ty.frag(dname, sh))).then(NeutIntTy(ty)),
            f"fragments of {dname} do not wrap")
    # loop bounds: bottom values, positive steps
    for kind in ("multi", "stmt"):
        ops = Vals.cons(lb, Vals.cons(ub, Vals.cons(st, rest)))
        pat = Multi.op("for", ops, attrs, tys, regs) if kind == "multi" else Stmt.op(seq, "for", ops, attrs, tys, regs)
        add(f"loop_bottom_{kind}", rule(pat).then(set_(NeutValKeys(lb)).to(KeySet.empty()),
                                                  set_(NeutValKeys(ub)).to(KeySet.empty()),
                                                  set_(NeutPosStep(st)).to(0)),
            "a loop bound has no keys until its forms are known; a step is not positive until proven")
    add("pos_step", rule(eq(v).to(Val.op("const", Vals.nil(), attrs, ty)), P.HasAttr(attrs, "value", A.int_(c)),
                         eq(NeutPosStep(v)).to(i64(0)), *_true(c.bool_gt(0))).then(set_(NeutPosStep(v)).to(1)),
        "a constant step > 0 is positive")
    # execution groups: their arguments are the coordinates of their segment. A group is paired with every kernel
    # term's segment list (one per kernel e-graph before blocking; more would only widen the hull), wherever the
    # group sits (directly in the body, or under a grid-stride loop)
    grp = Stmt.op(seq, "execution_group", xs, gattrs, tys,
                  Regions.cons(Region.make(d, args, ss, ys, ya), Regions.nil()))
    add("group_args", rule(eq(s).to(grp), P.HasAttr(gattrs, "segment", A.int_(si)),
                           KernelT.make(name, segs, g, var("kbody", Region))).then(
        NeutGroupArgs(d, 0, args, neut_seg_exts(segs, si))), "a group's region arguments and its segment's extents")
    add("seg_exts_0", rewrite(neut_seg_exts(Segs.cons(Seg.make(exts, order, g), segs), 0)).to(exts),
        "segment 0's extents")
    add("seg_exts_n", rewrite(neut_seg_exts(Segs.cons(var("sg", Seg), segs), i)).to(
        neut_seg_exts(segs, i - 1), ne(i).to(i64(0))), "segment i's extents")
    add("group_arg", rule(NeutGroupArgs(d, i, Tys.cons(ty, args), LEs.cons(e, erest))).then(
        NeutGroupArg(d, i, e), NeutLeDemand(e), NeutGroupArgs(d, i + 1, args, erest)),
        "argument i is the coordinate of axis i")
    # every other region binds arguments without bounds
    some = Regions.cons(var("r0", Region), regs)
    for kind in ("multi", "stmt"):
        pat = Multi.op(nm, xs, attrs, tys, some) if kind == "multi" else Stmt.op(seq, nm, xs, attrs, tys, some)
        add(f"other_regions_{kind}", rule(pat, ne(nm).to(String("for")), ne(nm).to(String("execution_group"))).then(
            NeutNoBoundsRegions(some)), "arguments of other regions are unbounded")
    add("other_regions_walk", rule(NeutNoBoundsRegions(Regions.cons(Region.make(d, args, ss, ys, ya), regs))).then(
        NeutNoBounds(d, 0, args), NeutNoBoundsRegions(regs)), "each region")
    return R


def _sites_rules() -> list:
    R = []

    def add(name, r, law):
        R.append(_named(name, r, law))

    e, k = vars_("e k", LE)
    d, i, o = vars_("d i o", i64)
    lb, ub, st = vars_("lb ub st", Val)
    rest, ys = vars_("rest ys", Vals)
    attrs, ya = vars_("attrs ya", AMap)
    tys, ctys, args = vars_("tys ctys args", Tys)
    ivt, ty = vars_("ivt ty", Ty)
    ss = var("ss", Stmts)
    seq = var("seq", i64)
    lk, uk = vars_("lk uk", KeySet)
    for kind in ("multi", "stmt"):
        ops = Vals.cons(lb, Vals.cons(ub, Vals.cons(st, rest)))
        regs = Regions.cons(Region.make(d, Tys.cons(ivt, ctys), ss, ys, ya), Regions.nil())
        pat = Multi.op("for", ops, attrs, tys, regs) if kind == "multi" else Stmt.op(seq, "for", ops, attrs, tys, regs)
        add(f"loop_iv_{kind}", rule(pat, eq(NeutPosStep(st)).to(i64(1)), eq(lk).to(NeutValKeys(lb)),
                                    eq(uk).to(NeutValKeys(ub))).then(
            set_(NeutArgLoKeys(d, 0)).to(lk), set_(NeutArgHiKeys(d, 0)).to(uk), NeutNoBounds(d, 1, ctys)),
            "a loop's iv is bounded over the keys of its bounds (step > 0); carried values are not")
        add(f"loop_iv_unknown_step_{kind}", rule(pat, eq(NeutPosStep(st)).to(i64(0))).then(
            set_(NeutArgLoKeys(d, 0)).to(KeySet.empty()), set_(NeutArgHiKeys(d, 0)).to(KeySet.empty()),
            NeutNoBounds(d, 1, ctys)), "an iv of a loop without a positive constant step is unbounded")
        add(f"loop_lo_{kind}", rule(pat, NeutValForm(lb, k, o)).then(set_(NeutArgLo(d, 0, k)).to(o)), "iv >= lb")
        add(f"loop_hi_{kind}", rule(pat, NeutValForm(ub, k, o)).then(set_(NeutArgHi(d, 0, k)).to(o - 1)),
            "iv <= ub - 1")
    add("group_lo", rule(NeutGroupArg(d, i, e)).then(set_(NeutArgLoKeys(d, i)).to(KeySet(ZERO)),
                                                       set_(NeutArgLo(d, i, ZERO)).to(0)), "coordinate >= 0")
    add("group_hi", rule(NeutGroupArg(d, i, e), eq(uk).to(NeutLeKeys(e))).then(set_(NeutArgHiKeys(d, i)).to(uk)),
        "coordinate < extent")
    add("group_hi_off", rule(NeutGroupArg(d, i, e), NeutLeForm(e, k, o)).then(set_(NeutArgHi(d, i, k)).to(o - 1)),
        "coordinate <= extent - 1")
    add("no_bounds", rule(NeutNoBounds(d, i, Tys.cons(ty, args))).then(
        set_(NeutArgLoKeys(d, i)).to(KeySet.empty()), set_(NeutArgHiKeys(d, i)).to(KeySet.empty()),
        NeutNoBounds(d, i + 1, args)), "an unbounded argument empties the hull")
    return R


def _bounds_rules() -> list:
    R = []

    def add(name, r, law):
        R.append(_named(name, r, law))

    k = var("k", LE)
    v, x, y, z, w = vars_("v x y z w", Val)
    xs, rest = vars_("xs rest", Vals)
    attrs, m = vars_("attrs m", AMap)
    ty, t2 = vars_("ty t2", Ty)
    a, b, c, d, i, s, n = vars_("a b c d i s n", i64)
    ks = var("ks", KeySet)
    key = var("key", String)
    av = var("av", A)
    sh = var("sh", LEs)
    ax = var("ax", Strs)

    add("val_lb", rule(NeutValForm(v, k, a)).then(set_(NeutLb(v, k)).to(a)), "v = k + a -> v >= k + a")
    add("val_ub", rule(NeutValForm(v, k, a)).then(set_(NeutUb(v, k)).to(a)), "v = k + a -> v <= k + a")
    add("arg_lb", rule(eq(v).to(Val.arg(d, i, ty)), eq(a).to(NeutArgLo(d, i, k)), eq(ks).to(NeutArgLoKeys(d, i)),
                       ks.contains(k)).then(set_(NeutLb(v, k)).to(a)), "an argument's hull lower bound")
    add("arg_ub", rule(eq(v).to(Val.arg(d, i, ty)), eq(a).to(NeutArgHi(d, i, k)), eq(ks).to(NeutArgHiKeys(d, i)),
                       ks.contains(k)).then(set_(NeutUb(v, k)).to(a)), "an argument's hull upper bound")

    def bop(name):
        return Val.op(name, P.vals(x, y), attrs, ty)

    # add: a bound over k plus a constant bound
    for lu, fn in (("lb", NeutLb), ("ub", NeutUb)):
        add(f"add_{lu}", rule(eq(v).to(bop("add")), NeutIntTy(ty), eq(a).to(fn(x, k)), eq(b).to(fn(y, ZERO)),
                              *_in_range(a, b)).then(set_(fn(v, k)).to(a + b)), f"x + y {lu}: over k plus constant")
        add(f"add_{lu}_rev", rule(eq(v).to(bop("add")), NeutIntTy(ty), eq(a).to(fn(x, ZERO)), eq(b).to(fn(y, k)),
                                  *_in_range(a, b)).then(set_(fn(v, k)).to(a + b)), f"x + y {lu}: constant plus k")
    add("sub_lb", rule(eq(v).to(bop("sub")), NeutIntTy(ty), eq(a).to(NeutLb(x, k)), eq(b).to(NeutUb(y, ZERO)),
                       *_in_range(a, b)).then(set_(NeutLb(v, k)).to(a - b)), "x - y >= lo(x) - hi(y)")
    add("sub_ub", rule(eq(v).to(bop("sub")), NeutIntTy(ty), eq(a).to(NeutUb(x, k)), eq(b).to(NeutLb(y, ZERO)),
                       *_in_range(a, b)).then(set_(NeutUb(v, k)).to(a - b)), "x - y <= hi(x) - lo(y)")
    add("sub_same_lb", rule(eq(v).to(bop("sub")), NeutIntTy(ty), eq(a).to(NeutLb(x, k)), eq(b).to(NeutUb(y, k)),
                            ne(k).to(ZERO), *_in_range(a, b)).then(set_(NeutLb(v, ZERO)).to(a - b)),
        "(k + a..) - (k + ..b) >= a - b")
    add("sub_same_ub", rule(eq(v).to(bop("sub")), NeutIntTy(ty), eq(a).to(NeutUb(x, k)), eq(b).to(NeutLb(y, k)),
                            ne(k).to(ZERO), *_in_range(a, b)).then(set_(NeutUb(v, ZERO)).to(a - b)),
        "(k + ..a) - (k + b..) <= a - b")
    # mul by a non-negative constant (scales constant bounds only)
    for side, (p, q) in (("", (x, y)), ("_rev", (y, x))):
        fact_c = [eq(c).to(NeutLb(q, ZERO)), eq(c).to(NeutUb(q, ZERO)), *_true(c.bool_ge(0)),
                  *_true(c.bool_lt(1 << 20))]
        add(f"mul_lb{side}", rule(eq(v).to(bop("mul")), NeutIntTy(ty), *fact_c, eq(a).to(NeutLb(p, ZERO)),
                                  *_in_range(a)).then(set_(NeutLb(v, ZERO)).to(a * c)), "c >= 0: c*x >= c*lo(x)")
        add(f"mul_ub{side}", rule(eq(v).to(bop("mul")), NeutIntTy(ty), *fact_c, eq(a).to(NeutUb(p, ZERO)),
                                  *_in_range(a)).then(set_(NeutUb(v, ZERO)).to(a * c)), "c >= 0: c*x <= c*hi(x)")
    # min / max: one operand's bound on the near side, both operands' on the far side
    for p in (x, y):
        add(f"min_ub_{p}", rule(eq(v).to(bop("min")), NeutIntTy(ty), eq(a).to(NeutUb(p, k))).then(
            set_(NeutUb(v, k)).to(a)), "min(x, y) <= x, y")
        add(f"max_lb_{p}", rule(eq(v).to(bop("max")), NeutIntTy(ty), eq(a).to(NeutLb(p, k))).then(
            set_(NeutLb(v, k)).to(a)), "max(x, y) >= x, y")
    add("min_lb", rule(eq(v).to(bop("min")), NeutIntTy(ty), eq(a).to(NeutLb(x, k)), eq(b).to(NeutLb(y, k))).then(
        set_(NeutLb(v, k)).to(a.min(b))), "min(x, y) >= min(lo x, lo y)")
    add("max_ub", rule(eq(v).to(bop("max")), NeutIntTy(ty), eq(a).to(NeutUb(x, k)), eq(b).to(NeutUb(y, k))).then(
        set_(NeutUb(v, k)).to(a.max(b))), "max(x, y) <= max(hi x, hi y)")
    # value-preserving: widening casts, broadcasts; ranges
    for lu, fn in (("lb", NeutLb), ("ub", NeutUb)):
        add(f"cast_{lu}", rule(eq(v).to(Val.op("cast", P.vals(x), attrs, ty)), NeutIntTy(ty),
                               eq(a).to(fn(x, k))).then(set_(fn(v, k)).to(a)),
            "a cast to index/i64 of an integer keeps its value")
        add(f"broadcast_{lu}", rule(eq(v).to(Val.op("broadcast", P.vals(x), attrs, ty)), eq(a).to(fn(x, k))).then(
            set_(fn(v, k)).to(a)), "a broadcast holds copies of its operand")
    for tyname, tpat in (("axes", Ty.frag_axes("index", LEs.cons(LE.int_(n), LEs.nil()), ax)),
                         ("plain", Ty.frag("index", LEs.cons(LE.int_(n), LEs.nil())))):
        add(f"range_{tyname}", rule(eq(v).to(Val.op("range", Vals.nil(), attrs, tpat)),
                                    P.HasAttr(attrs, "start", A.int_(s)), *_in_range(s, n)).then(
            set_(NeutLb(v, ZERO)).to(s), set_(NeutUb(v, ZERO)).to(s + n - 1)), "range(n) + s in [s, s + n - 1]")
        add(f"range_nostart_{tyname}", rule(eq(v).to(Val.op("range", Vals.nil(), AMap.nil(), tpat)),
                                            *_in_range(n)).then(
            set_(NeutLb(v, ZERO)).to(0), set_(NeutUb(v, ZERO)).to(n - 1)), "range(n) in [0, n - 1]")
    # constant predicates
    add("true_const", rule(eq(v).to(Val.op("const", Vals.nil(), attrs, I1)), P.HasAttr(attrs, "value", A.bool_(1)))
        .then(NeutTrue(v)), "const true")
    add("false_const", rule(eq(v).to(Val.op("const", Vals.nil(), attrs, I1)), P.HasAttr(attrs, "value", A.bool_(0)))
        .then(NeutFalse(v)), "const false")
    add("true_broadcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), attrs, ty)), NeutTrue(x)).then(NeutTrue(v)),
        "broadcast of true")
    add("false_broadcast", rule(eq(v).to(Val.op("broadcast", P.vals(x), attrs, ty)), NeutFalse(x)).then(
        NeutFalse(v)), "broadcast of false")
    # helpers (terminating structural recursion)
    for b_ in (0, 1):
        add(f"bool_scalar_{b_}", rewrite(neut_bool(b_, I1)).to(_const_bool(b_)), f"the i1 constant {b_}")
        add(f"bool_frag_axes_{b_}", rewrite(neut_bool(b_, Ty.frag_axes("i1", sh, ax))).to(
            Val.op("broadcast", P.vals(_const_bool(b_)), P.amap(dims=P.alist()), Ty.frag_axes("i1", sh, ax))),
            f"a fragment of {b_}")
        add(f"bool_frag_{b_}", rewrite(neut_bool(b_, Ty.frag("i1", sh))).to(
            Val.op("broadcast", P.vals(_const_bool(b_)), P.amap(dims=P.alist()), Ty.frag("i1", sh))),
            f"a fragment of {b_}")
    add("last_one", rewrite(neut_last(Vals.cons(x, Vals.nil()))).to(x), "last([x]) = x")
    add("last_more", rewrite(neut_last(Vals.cons(x, Vals.cons(y, rest)))).to(neut_last(Vals.cons(y, rest))),
        "last(x:xs) = last(xs)")
    add("init_one", rewrite(neut_init(Vals.cons(x, Vals.nil()))).to(Vals.nil()), "init([x]) = []")
    add("init_more", rewrite(neut_init(Vals.cons(x, Vals.cons(y, rest)))).to(
        Vals.cons(x, neut_init(Vals.cons(y, rest)))), "init(x:xs) = x:init(xs)")
    add("unmask_nil", rewrite(neut_unmask(AMap.nil())).to(AMap.nil()), "unmask {} = {}")
    add("unmask_fill", rewrite(neut_unmask(AMap.cons("fill", av, m))).to(neut_unmask(m)), "drop fill")
    add("unmask_valid", rewrite(neut_unmask(AMap.cons("valid", av, m))).to(
        AMap.cons("valid", A.bool_(0), neut_unmask(m))), "valid := false")
    add("unmask_other", rewrite(neut_unmask(AMap.cons(key, av, m))).to(
        AMap.cons(key, av, neut_unmask(m)), ne(key).to(String("fill")), ne(key).to(String("valid"))),
        "other attributes are kept")
    return R


_CMP = {  # pred: (true when, false when) as (bound of x, bound of y, comparison of the two offsets)
    "lt": (("ub", "lb", "lt"), ("lb", "ub", "ge")),
    "le": (("ub", "lb", "le"), ("lb", "ub", "gt")),
    "gt": (("lb", "ub", "gt"), ("ub", "lb", "le")),
    "ge": (("lb", "ub", "ge"), ("ub", "lb", "lt")),
    "eq": (None, ("ub", "lb", "lt"), ("lb", "ub", "gt")),
    "ne": (("ub", "lb", "lt"), ("lb", "ub", "gt"), None),
}


def _fold_rules() -> list:
    R = []

    def add(name, r, law):
        R.append(_named(name, r, law))

    k = var("k", LE)
    v, x, y, z, w = vars_("v x y z w", Val)
    xs = var("xs", Vals)
    attrs = var("attrs", AMap)
    ty, tys = var("ty", Ty), var("tys", Tys)
    a, b, seq = vars_("a b seq", i64)
    nm = var("nm", String)
    regs = var("regs", Regions)
    fns = {"lb": NeutLb, "ub": NeutUb}
    tests = {"lt": lambda p, q: p.bool_lt(q), "le": lambda p, q: p.bool_le(q), "gt": lambda p, q: p.bool_gt(q),
             "ge": lambda p, q: p.bool_ge(q)}

    def cmp_rule(pred, value, spec, tag):
        fx, fy, test = spec
        c = Val.op("cmp", P.vals(x, y), attrs, ty)
        return rule(eq(v).to(c), P.HasAttr(attrs, "pred", A.str_(pred)), eq(a).to(fns[fx](x, k)),
                    eq(b).to(fns[fy](y, k)), *_true(tests[test](a, b))).then(
            union(v).with_(neut_bool(value, ty)), subsume(c))

    for pred, specs in _CMP.items():
        if pred in ("eq", "ne"):
            # eq: false when x < y or x > y; ne: true in the same cases
            value = 0 if pred == "eq" else 1
            for j, spec in enumerate(s for s in specs if s is not None):
                add(f"cmp_{pred}_{'true' if value else 'false'}_{j}", cmp_rule(pred, value, spec, j),
                    f"x {pred} y is {'true' if value else 'false'} when the intervals are disjoint")
            continue
        add(f"cmp_{pred}_true", cmp_rule(pred, 1, specs[0], 0), f"x {pred} y is true when the intervals say so")
        add(f"cmp_{pred}_false", cmp_rule(pred, 0, specs[1], 1), f"x {pred} y is false when the intervals say so")

    def same(op, keep, const_is, side):
        o = Val.op(op, P.vals(x, y), attrs, ty)
        rel = NeutTrue if const_is else NeutFalse
        c_, other = (x, y) if side == 0 else (y, x)
        result = other if keep else c_
        return rule(eq(v).to(o), rel(c_), P.ValTy(result, ty)).then(union(v).with_(result), subsume(o))

    for side in (0, 1):
        add(f"and_true_{side}", same("and", True, True, side), "and(true, x) = x")
        add(f"and_false_{side}", same("and", False, False, side), "and(false, x) = false")
        add(f"or_false_{side}", same("or", True, False, side), "or(false, x) = x")
        add(f"or_true_{side}", same("or", False, True, side), "or(true, x) = true")
    for cv in (0, 1):
        n_ = Val.op("not", P.vals(x), attrs, ty)
        add(f"not_{cv}", rule(eq(v).to(n_), (NeutTrue if cv else NeutFalse)(x)).then(
            union(v).with_(neut_bool(1 - cv, ty)), subsume(n_)), f"not {bool(cv)} = {not cv}")
    sel = Val.op("select", P.vals(z, x, y), attrs, ty)
    add("select_true", rule(eq(v).to(sel), NeutTrue(z), P.ValTy(x, ty)).then(union(v).with_(x), subsume(sel)),
        "select(true, a, b) = a")
    add("select_false", rule(eq(v).to(sel), NeutFalse(z), P.ValTy(y, ty)).then(union(v).with_(y), subsume(sel)),
        "select(false, a, b) = b")
    # accesses (and histogram): the trailing validity operand, present iff valid = true (SPEC IR-6)
    pure = Val.op(nm, xs, attrs, ty)
    eff = Stmt.op(seq, nm, xs, attrs, tys, regs)
    s = var("s", Stmt)
    add("mask_operand_pure", rule(eq(v).to(pure), P.HasAttr(attrs, "valid", A.bool_(1))).then(neut_last(xs)),
        "find a pure access's validity operand")
    add("mask_operand_effect", rule(eq(s).to(eff), P.HasAttr(attrs, "valid", A.bool_(1))).then(neut_last(xs)),
        "find an effectful access's validity operand")
    add("unmask_pure", rule(eq(v).to(pure), P.HasAttr(attrs, "valid", A.bool_(1)), eq(w).to(neut_last(xs)),
                            NeutTrue(w)).then(union(v).with_(Val.op(nm, neut_init(xs), neut_unmask(attrs), ty)),
                                              subsume(pure)),
        "access(.., valid=true operand) = access(..) with valid = false, no fill")
    add("unmask_effect", rule(eq(s).to(eff), P.HasAttr(attrs, "valid", A.bool_(1)), eq(w).to(neut_last(xs)),
                              NeutTrue(w)).then(
        union(s).with_(Stmt.op(seq, nm, neut_init(xs), neut_unmask(attrs), tys, regs)), subsume(eff)),
        "an effect whose validity is all-true touches every member: no validity operand")
    return R


_RULES = None
_ANALYSIS_RULES = None


def analysis_rules() -> list:
    """The rules of FORMS, SITES and BOUNDS (named, so reports and traces can list them)."""
    global _ANALYSIS_RULES
    if _ANALYSIS_RULES is None:
        _ANALYSIS_RULES = (("forms", _forms_rules()), ("sites", _sites_rules()), ("bounds", _bounds_rules()))
        for (_, rs), target in zip(_ANALYSIS_RULES, (FORMS, SITES, BOUNDS)):
            for r in rs:
                target.append(r.egg)
    return _ANALYSIS_RULES


def rules():
    """(name, egglog rule, law) for every rewrite of the group (the analyses live in ANALYSES)."""
    global _RULES
    if _RULES is None:
        analysis_rules()
        _RULES = _fold_rules()
    return _RULES


for _r in rules():
    RULESET.append(_r.egg)
