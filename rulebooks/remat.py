"""Rematerialization vs materialization of intermediates (SPEC PASS-3.4 "remat changes def-use", PASS-4
"rematerialize pure values"): a summary that ownership blocking recomputes on every lane of a tile is computed
once per distinct member and broadcast; a rank-2 tile grid whose column programs each recompute the same row
summaries becomes one program per row tile that keeps the summaries as values across an in-program loop over the
column tiles. The cost model decides between the variants (recompute per consumer vs keep).

Reads: pure ``for`` loops marked ``reduce = <combiner>`` (construction's ordinary reductions; the verifier checks
the body is ``combine(carried, member)`` with the member independent of the carried value), their initial values
and yielded members; ``broadcast`` ops and their ``dims`` (``HasAttr``, ``patterns.ANALYSIS``), value types
(``ValTy``); element-wise op names (the seeded ``Elementwise`` table of ``blocking``); the kernel's program space
and its execution group (row program).

Legality: ``remat.narrow_carry``: the loop's member is ``broadcast(x)`` and its initial value is a broadcast of a
value of ``x``'s type with the same ``dims`` (or of a scalar with ``dims = []``), so every lane of the carried
fragment holds ``combine`` over the same members as the lane of ``x`` it is broadcast from (the combiner is
element-wise). ``remat.hoist_*``: an element-wise op whose operands are all broadcasts with the same ``dims`` of
values of one type (or scalars broadcast with ``dims = []``) equals the broadcast of the op over those values.

Rewrites: ``for(.., broadcast(x0)) {c: combine(c, broadcast(x))}`` -> ``broadcast(for(.., x0) {c: combine(c,
x)})`` (the carried value is narrowed to the axes the summary depends on); ``op(broadcast(a), broadcast(b))`` ->
``broadcast(op(a, b))``.

Preserves: every value (element-wise ops commute with broadcasts; each lane's reduction combines the same members
in the same order); effects, their order, the ABI and compile options.

Invalidates: loop-carried fragment shapes and the register/ALU estimates of the loops (a ``[T0]`` row summary
instead of a ``[T0, T1]`` tile of copies), def-use of the rewritten values.

Verifier: the shared GPU verifier after the group (loop operand/argument/yield types agree, broadcast dims map
operand axes to result axes, the ``reduce`` loop form).
"""
from __future__ import annotations

from egglog import Bool, String, eq, function, i64, i64Like, rewrite, rule, ruleset, union, var, vars_

from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import A, AMap, LEs, Multi, Region, Regions, Stmts, Strs, Ty, Tys, Val, Vals
from rulebooks.blocking import Elementwise, _ELEMENTWISE

GROUP = "remat"
ORDER = 22
RULESET = ruleset(name=GROUP)
#: the ``hoisted`` re-expression: a terminating structural recursion, saturated before every iteration
HOIST = ruleset(name="remat_hoisted")
ANALYSES = (P.ANALYSIS, HOIST)

INDEX = Ty.scalar("index")
NO_DIMS = P.alist()


def _bcast(x: Val, dims: A, ty: Ty) -> Val:
    return Val.op("broadcast", P.vals(x), P.amap(dims=dims), ty)


def _loop(lb: Val, ub: Val, st: Val, init: Val, attrs: AMap, ty: Ty, depth, body: Val, yattrs: AMap) -> Val:
    """Result 0 of a pure one-carry ``for`` whose region (depth ``depth``) yields ``body``."""
    return Val.res(Multi.op("for", P.vals(lb, ub, st, init), attrs, P.tys(ty),
                            Regions.cons(Region.make(depth, P.tys(INDEX, ty), Stmts.nil(), P.vals(body), yattrs),
                                         Regions.nil())), 0, ty)


@function(egg_fn="RematOut")
def hoisted(v: Val, k: i64Like, c: i64Like) -> Val:
    """``v``, read in a region of depth ``c`` inside (or equal to) the region of depth ``k`` it leaves, re-expressed
    one region further out: arguments of regions outside ``k`` are unchanged, regions nested in ``v`` (and their
    arguments) move out by one. Undefined (the term never resolves, so no program uses it) when ``v`` reads an
    argument of depth ``k`` or an effect. A region op's region must sit at depth ``c + 1`` (e-classes can hold
    the same loop written for different depths; only the one written for this context is re-expressed)."""


@function(egg_fn="RematOutVals")
def hoisted_vals(vs: Vals, k: i64Like, c: i64Like) -> Vals: ...


@function(egg_fn="RematOutRegions")
def hoisted_regions(rs: Regions, k: i64Like, c: i64Like) -> Regions: ...


def _hoisted_rules() -> list:
    """The structural recursion behind ``remat.materialize`` (terminating: it follows a finite term downwards)."""
    d, i, k, c = vars_("d i k c", i64)
    t = var("t", Ty)
    ts = var("ts", Tys)
    nm = var("nm", String)
    xs, rest, ys = vars_("xs rest ys", Vals)
    x = var("x", Val)
    attrs, ya = vars_("attrs ya", AMap)
    regs = var("regs", Regions)
    reg = var("reg", Region)
    true = Bool(True)
    table = (
        ("outer_arg", rewrite(hoisted(Val.arg(d, i, t), k, c)).to(Val.arg(d, i, t), eq(d.bool_lt(k)).to(true)),
         "an argument of a region outside the loop is unchanged"),
        ("inner_arg", rewrite(hoisted(Val.arg(d, i, t), k, c)).to(Val.arg(d - 1, i, t), eq(d.bool_gt(k)).to(true)),
         "an argument of a region nested in the value moves out with it"),
        ("op_leaf", rewrite(hoisted(Val.op(nm, Vals.nil(), attrs, t), k, c)).to(Val.op(nm, Vals.nil(), attrs, t)),
         "a pure op without operands"),
        ("op", rewrite(hoisted(Val.op(nm, xs, attrs, t), k, c)).to(Val.op(nm, hoisted_vals(xs, k, c), attrs, t),
                                                                    eq(xs).to(Vals.cons(x, rest))),
         "a pure op: its operands (a real operand list: an unresolved re-expressed list is never re-expressed "
         "again)"),
        ("nil", rewrite(hoisted_vals(Vals.nil(), k, c)).to(Vals.nil()), "[]"),
        *((f"cons_{kind}", rewrite(hoisted_vals(Vals.cons(x, rest), k, c)).to(
            Vals.cons(hoisted(x, k, c), hoisted_vals(rest, k, c)), eq(x).to(head)),
           f"each value (the head a {kind} term: an unresolved re-expression is never re-expressed again)")
          for kind, head in (("arg", Val.arg(var("hd", i64), var("hi", i64), t)),
                             ("op", Val.op(nm, var("hx", Vals), attrs, t)),
                             ("res", Val.res(var("hm", Multi), var("hj", i64), t)))),
        ("res_plain", rewrite(hoisted(Val.res(Multi.op(nm, xs, attrs, ts, Regions.nil()), i, t), k, c)).to(
            Val.res(Multi.op(nm, hoisted_vals(xs, k, c), attrs, ts, Regions.nil()), i, t),
            eq(xs).to(Vals.cons(x, rest))),
         "a result of a region-free op: its operands"),
        ("res_region", rewrite(hoisted(Val.res(Multi.op(nm, xs, attrs, ts, Regions.cons(reg, regs)), i, t), k, c)).to(
            Val.res(Multi.op(nm, hoisted_vals(xs, k, c), attrs, ts, hoisted_regions(Regions.cons(reg, regs), k, c)),
                    i, t),
            eq(reg).to(Region.make(d, var("ats", Tys), var("sts", Stmts), ys, ya)), eq(d).to(c + 1),
            eq(xs).to(Vals.cons(x, rest))),
         "a result of a region op written for this context (its first region at depth c + 1, checked on the op "
         "itself, so a re-expressed op is never re-expressed again): operands and regions"),
        ("regions_nil", rewrite(hoisted_regions(Regions.nil(), k, c)).to(Regions.nil()), "no regions"),
        ("region", rewrite(hoisted_regions(Regions.cons(Region.make(d, ts, Stmts.nil(), ys, ya), regs), k, c)).to(
            Regions.cons(Region.make(d - 1, ts, Stmts.nil(), hoisted_vals(ys, k, d), ya),
                         hoisted_regions(regs, k, c)), eq(d).to(c + 1)),
         "a pure region (no statements) written for this context moves out by one level; its yields are read at "
         "its own depth"),
    )
    return [named(f"remat.hoisted_{n}", r, law) for n, r, law in table]


def _materialize_rules() -> list:
    """A consumer op inside a loop region (depth d - 1) that reads a loop (its region at depth d >= 3) computing
    nothing of that region may instead read the same loop written one region further out: when another consumer
    out there computes it too, the two share ONE value (materialized, kept live across the loop) instead of each
    recomputing it (rematerialized). Both consumer ops stay in the e-graph (the union is of the consumer, whose
    e-class belongs to its own region, never of a context-free operand list); the cost model picks."""
    o, v = vars_("o v", Val)
    xs, rest = vars_("xs rest", Vals)
    attrs, ya, oattrs = vars_("attrs ya oattrs", AMap)
    ts, args = vars_("ts args", Tys)
    d, i = vars_("d i", i64)
    t, ot = vars_("t ot", Ty)
    nm = var("nm", String)
    stmts = var("stmts", Stmts)
    ys = var("ys", Vals)
    regs = var("regs", Regions)
    before = list(vars_("b0 b1", Val))
    loop = Val.res(Multi.op("for", xs, attrs, ts, Regions.cons(Region.make(d, args, stmts, ys, ya), regs)), i, t)
    out = []
    for pos in range(3):
        def operands(x):
            lst = Vals.cons(x, rest)
            for b in reversed(before[:pos]):
                lst = Vals.cons(b, lst)
            return lst
        name = f"remat.materialize_{pos}"
        out.append(named(name, rule(eq(o).to(Val.op(nm, operands(v), oattrs, ot)), eq(v).to(loop),
                                    eq(d.bool_gt(i64(2))).to(Bool(True)), name=name).then(
            union(o).with_(Val.op(nm, operands(hoisted(v, d - 1, d - 1)), oattrs, ot))),
            f"op(.., loop, ..) with the loop (operand {pos}) inside a loop (its region at depth d >= 3) reading no "
            f"argument of the enclosing region (depth d - 1) == op(.., the same loop one region further out, ..) "
            f"(loop-invariant: one value for every iteration and every consumer that computes it)"))
    return out


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
    loop = _loop(lb, ub, st, y, attrs, big, d, body, rya)
    marked = [P.HasAttr(attrs, "reduce", A.str_(comb)), P.HasAttr(mb, "dims", dims)]
    cases = (
        ("narrow_carry", small, [eq(y).to(Val.op("broadcast", P.vals(x0), m0, big)), P.HasAttr(m0, "dims", dims),
                                 P.ValTy(x0, small), P.ValTy(xm, small)], x0,
         "init and member broadcast the same way"),
        ("narrow_carry_splat", small, [eq(y).to(Val.op("broadcast", P.vals(s), m0, big)),
                                       P.HasAttr(m0, "dims", NO_DIMS), P.ValTy(s, sc), P.ValTy(xm, small)],
         _bcast(s, NO_DIMS, small), "a scalar init splat over the member's axes"),
        ("narrow_carry_scalar", sc, [eq(y).to(Val.op("broadcast", P.vals(s), m0, big)),
                                     P.HasAttr(m0, "dims", NO_DIMS), P.ValTy(s, sc), P.ValTy(xm, sc)], s,
         "a uniform member: the summary is one scalar"),
    )
    for name, nty, facts, init, why in cases:
        nbody = Val.op(comb, P.vals(Val.arg(d, 1, nty), xm), ca, nty)
        new = Val.op("broadcast", P.vals(_loop(lb, ub, st, init, attrs, nty, d, nbody, rya)), P.amap(dims=dims), big)
        full = f"remat.{name}"
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
        name = f"remat.hoist_unary_{kind}"
        out.append(named(name, rule(eq(v).to(lhs), Elementwise(nm), P.HasAttr(ma, "dims", dims), P.ValTy(a, aty),
                                    name=name).then(
            union(v).with_(_bcast(Val.op(nm, P.vals(a), attrs, rty), dims, big))),
            "op(bcast(a)) == bcast(op(a)) for an element-wise op"))
    # binary: both operands broadcast the same way from one shape
    lhs = Val.op(nm, P.vals(bc(a, ma, da), bc(b, mb, db)), attrs, big)
    same = [Elementwise(nm), P.HasAttr(ma, "dims", dims), P.HasAttr(mb, "dims", dims)]
    for kind, aty, bty, rty in (("frag", small(da), small(db), small(dt)),
                                ("scalar", Ty.scalar(da), Ty.scalar(db), Ty.scalar(dt))):
        name = f"remat.hoist_binary_{kind}"
        out.append(named(name, rule(eq(v).to(lhs), *same, P.ValTy(a, aty), P.ValTy(b, bty), name=name).then(
            union(v).with_(_bcast(Val.op(nm, P.vals(a, b), attrs, rty), dims, big))),
            "op(bcast(a), bcast(b)) == bcast(op(a, b)) when a and b have one shape"))
    # binary: one operand a fragment broadcast, the other a scalar splat
    for side in ("left", "right"):
        facts = [Elementwise(nm), P.HasAttr(ma, "dims", dims), P.HasAttr(mb, "dims", NO_DIMS),
                 P.ValTy(a, small(da)), P.ValTy(b, Ty.scalar(db))]
        splat = _bcast(b, NO_DIMS, small(db))
        ops = P.vals(bc(a, ma, da), bc(b, mb, db)) if side == "left" else P.vals(bc(b, mb, db), bc(a, ma, da))
        nops = P.vals(a, splat) if side == "left" else P.vals(splat, a)
        name = f"remat.hoist_binary_splat_{side}"
        out.append(named(name, rule(eq(v).to(Val.op(nm, ops, attrs, big)), *facts, name=name).then(
            union(v).with_(_bcast(Val.op(nm, nops, attrs, small(dt)), dims, big))),
            "op(bcast(a), splat(s)) == bcast(op(a, splat(s))) (the splat re-targeted at a's shape)"))
    return out


def seed(graph) -> None:
    """The element-wise op table (shared with ``blocking``; asserting a row twice is harmless)."""
    graph.run_text("\n".join(f'({graph.egg_name(Elementwise)} "{op}")' for ops in _ELEMENTWISE.values()
                             for op in ops))


def rules() -> list:
    return _materialize_rules() + _narrow_rules() + _hoist_rules()


for _r in rules():
    RULESET.append(_r.egg)
ANALYSIS_RULES = _hoisted_rules()
for _r in ANALYSIS_RULES:
    HOIST.append(_r.egg)
