"""Rematerialization vs materialization of intermediates (SPEC PASS-3.4 "remat changes def-use", PASS-4
"rematerialize pure values"): construction writes a ``let`` value into every consumer that reads it, so a summary
read inside another loop (softmax's row maximum inside the normalizer's sum) is a second loop there, recomputed
(rematerialized). The same loop can be written one region further out, where another consumer computes it too:
then both read ONE value, kept live across the loop (materialized). Both forms stay in the e-graph; the cost model
picks, and the optimizer reports each decision with the modelled cost of the other form
(``intent_eqsat.extract.decisions``). Across programs likewise: column programs of a rank-2 tile grid each
recompute the row summaries (rematerialized); one program per row tile looping over the column tiles computes
them once and keeps them live across that loop (materialized, ``remat.column_loop_*``).

Reads: ``for`` loops used as operands of pure ops, their region depths; the loops' operands and pure regions,
re-expressed one region further out (``hoisted``: arguments of outer regions unchanged, arguments of regions
nested in the value shifted out by one); the kernel's program space (one row-major segment of rank 2-4) and its
execution group's effects; which values read the last group coordinate (``ColumnFree``).

Legality: the consumer op sits in a loop region of depth ``d - 1`` and reads a loop whose region is at depth ``d
>= 3`` (inside another loop in the execution group); the re-expression resolves only when the loop reads no
argument of the depth ``d - 1`` region (it is loop-invariant there) and no effect result, and its regions have no
statements (pure); a region op is re-expressed only when its region sits where its context puts it (depth ``c +
1``), so one written for another context (e-classes can hold both) is never shifted twice.
``remat.column_loop_*``: the group's effects are region-free (stores, scatters); the last coordinate is substituted
by the new loop's induction variable through ops only, so a kernel whose last coordinate is read inside a loop
(GEMM's K loop reads its column tile) never resolves; every other value stays as written (placed before the loop).

Rewrites: ``op(.., loop@d, ..)`` -> ``op(.., loop@(d - 1), ..)`` (the union is of the consumer, whose e-class
belongs to its region; never of a context-free operand list); ``segment [E0, .., En]`` with group coordinates
``(p0, .., pn)`` -> ``segment [E0, .., En-1]`` with ``for pn in [0, En): <the effects>``.

Preserves: every value (a loop-invariant loop has the same value in every iteration of the enclosing loop); the
set of effects (each element is still written once by the same expression; effects of different programs were
unordered, now they run in column order inside one program); the ABI and compile options.

Invalidates: def-use of the consumers (one loop may now serve several), loop counts, live ranges (the shared value
is live across the consumers' loops) and register estimates.

Verifier: the shared GPU verifier after the group (dominance: the shared loop is placed before every consumer;
loop operand/argument/yield types agree).

After binding (``optimizer.optimize._range_passes``, with this group selected): ``ir.unswitch.unswitch_sibling_loops``
materializes a row in registers where the tile sizes make it one tile: passes over the row (sibling loops of an
execution group) that re-read one view run once under a launch guard (``N <= tile``), so their loads merge, and
as they were otherwise (declaration in that module).
"""
from __future__ import annotations

from egglog import Bool, String, eq, function, i64, i64Like, ne, relation, rewrite, rule, ruleset, union, var, vars_

from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules import patterns as P
from intent_eqsat.rules.sorts import A, AMap, KernelT, LE, Multi, Region, Regions, Seg, Segs, Stmt, Stmts, Ty, Tys, \
    Val, Vals

GROUP = "remat"
ORDER = 22
RULESET = ruleset(name=GROUP)
#: the ``hoisted`` re-expression: a terminating structural recursion, saturated before every iteration
HOIST = ruleset(name="remat_hoisted")
ANALYSES = (HOIST,)

INDEX = Ty.scalar("index")


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


@function(egg_fn="RematColumn")
def column_loop(v: Val, col: i64Like) -> Val:
    """``v`` with the execution group's coordinate ``Arg(1, col)`` replaced by the induction variable ``Arg(2, 0)``
    of a loop over that coordinate. Values that do not read the coordinate (``ColumnFree``) are kept as they are
    (written for the group, decode places them before the loop); an op is rebuilt over its operands; a region op
    that reads the coordinate has no rule (its regions would have to move one level in), so a kernel needing one
    never resolves."""


@function(egg_fn="RematColumnVals")
def column_loop_vals(vs: Vals, col: i64Like) -> Vals: ...


@function(egg_fn="RematColumnStmts")
def column_loop_stmts(ss: Stmts, col: i64Like) -> Stmts: ...


#: ``v`` reads nothing of group coordinate ``col`` (region arguments of depth 1)
ColumnFree = relation("RematColumnFree", Val, i64)
ColumnFreeVals = relation("RematColumnFreeVals", Vals, i64)
ColumnFreeRegions = relation("RematColumnFreeRegions", Regions, i64)
#: the group coordinates the column rule moves into a loop (the last axis of a rank-2..4 segment)
_COLUMNS = (1, 2, 3)


def _column_rules() -> list:
    """The analysis and substitution behind ``remat.column_loop_*``."""
    v, x = vars_("v x", Val)
    xs, rest, ys = vars_("xs rest ys", Vals)
    attrs, ya = vars_("attrs ya", AMap)
    t = var("t", Ty)
    ts, args = vars_("ts args", Tys)
    nm = var("nm", String)
    d, i, k, col, seq = vars_("d i k col seq", i64)
    regs = var("regs", Regions)
    ss = var("ss", Stmts)
    table = [
        ("free_arg_depth", rule(eq(v).to(Val.arg(d, i, t)), ColumnCol(col), ne(d).to(i64(1))).then(ColumnFree(v, col)),
         "an argument of another region"),
        ("free_arg_other", rule(eq(v).to(Val.arg(1, i, t)), ColumnCol(col), ne(i).to(col)).then(ColumnFree(v, col)),
         "another group coordinate"),
        ("free_nil", rule(eq(xs).to(Vals.nil()), ColumnCol(col)).then(ColumnFreeVals(xs, col)), "no values"),
        ("free_cons", rule(eq(xs).to(Vals.cons(x, rest)), ColumnFree(x, col), ColumnFreeVals(rest, col)).then(
            ColumnFreeVals(xs, col)), "values"),
        ("free_op", rule(eq(v).to(Val.op(nm, xs, attrs, t)), ColumnFreeVals(xs, col)).then(ColumnFree(v, col)),
         "an op of free operands"),
        ("free_regions_nil", rule(eq(regs).to(Regions.nil()), ColumnCol(col)).then(ColumnFreeRegions(regs, col)),
         "no regions"),
        ("free_regions_cons", rule(eq(regs).to(Regions.cons(Region.make(d, args, Stmts.nil(), ys, ya),
                                                            var("rr", Regions))),
                                   ColumnFreeVals(ys, col), ColumnFreeRegions(var("rr", Regions), col)).then(
            ColumnFreeRegions(regs, col)), "pure regions whose yields are free"),
        ("free_res", rule(eq(v).to(Val.res(Multi.op(nm, xs, attrs, ts, regs), i, t)), ColumnFreeVals(xs, col),
                          ColumnFreeRegions(regs, col)).then(ColumnFree(v, col)), "a region op of free parts"),
        ("subst_coord", rewrite(column_loop(Val.arg(1, col, t), col)).to(Val.arg(2, 0, t)),
         "the coordinate -> the loop's induction variable"),
        ("subst_free", rule(eq(x).to(column_loop(v, col)), ColumnFree(v, col)).then(union(x).with_(v)),
         "a value that does not read the coordinate is unchanged"),
        ("subst_op", rewrite(column_loop(Val.op(nm, xs, attrs, t), col)).to(
            Val.op(nm, column_loop_vals(xs, col), attrs, t), eq(xs).to(Vals.cons(x, rest))),
         "an op over its operands"),
        ("subst_nil", rewrite(column_loop_vals(Vals.nil(), col)).to(Vals.nil()), "[]"),
        *((f"subst_cons_{kind}", rewrite(column_loop_vals(Vals.cons(x, rest), col)).to(
            Vals.cons(column_loop(x, col), column_loop_vals(rest, col)), eq(x).to(head)),
           f"each value (the head a {kind} term: an unresolved substitution is never substituted again)")
          for kind, head in (("arg", Val.arg(var("hd", i64), var("hi", i64), t)),
                             ("op", Val.op(var("hn", String), var("hx", Vals), var("ha", AMap), t)),
                             ("res", Val.res(var("hm", Multi), var("hj", i64), t)))),
        ("subst_stmts_nil", rewrite(column_loop_stmts(Stmts.nil(), col)).to(Stmts.nil()), "no effects"),
        ("subst_stmt", rewrite(column_loop_stmts(Stmts.cons(Stmt.op(seq, nm, xs, attrs, ts, Regions.nil()), ss),
                                                 col)).to(
            Stmts.cons(Stmt.op(seq, nm, column_loop_vals(xs, col), attrs, ts, Regions.nil()),
                       column_loop_stmts(ss, col))),
         "a region-free effect (a store) over its operands, in its place"),
    ]
    return [named(f"remat.column_{n}", r, law) for n, r, law in table]


#: ``ColumnCol(col)``: a coordinate index the column analysis runs for (seeded)
ColumnCol = relation("RematColumnCol", i64)


def _column_loop_rules() -> list:
    """Materialize row summaries across column tiles: one program per tile of the leading axes loops over the
    last axis's tiles, so values that do not read that coordinate (a row maximum, a row sum) are computed once per
    program and kept live across the loop, instead of once per column program (rematerialized)."""
    kname = var("kname", String)
    argtys, gya, ya, gattrs = var("argtys", Tys), var("gya", AMap), var("ya", AMap), var("gattrs", AMap)
    gstmts = var("gstmts", Stmts)
    gyields, yields = vars_("gyields yields", Vals)
    pid = var("pid", Val)
    seq = var("seq", i64)
    lau = var("lau", LE)
    es = list(vars_("e0 e1 e2 e3", LE))
    out = []
    for rank in (2, 3, 4):
        col = rank - 1
        exts = es[:rank]
        gargs = P.tys(*([INDEX] * rank))

        def kernel(segs, stmts, group_args):
            group = Stmt.op(seq, "execution_group", P.vals(pid), gattrs, Tys.nil(),
                            Regions.cons(Region.make(1, group_args, stmts, gyields, gya), Regions.nil()))
            return KernelT.make(kname, segs, lau, Region.make(0, argtys, Stmts.cons(group, Stmts.nil()), yields, ya))

        old = kernel(Segs.cons(Seg.make(P.les(*exts), "row_major", LE.none()), Segs.nil()), gstmts, gargs)
        zero = Val.op("const", Vals.nil(), P.amap(value=A.int_(0)), INDEX)
        one = Val.op("const", Vals.nil(), P.amap(value=A.int_(1)), INDEX)
        trips = Val.op("launch", Vals.nil(), P.amap(expr=A.le(exts[col])), INDEX)
        body = Region.make(2, P.tys(INDEX), column_loop_stmts(gstmts, col), Vals.nil(), AMap.nil())
        loop = Stmt.op(seq, "for", P.vals(zero, trips, one), AMap.nil(), Tys.nil(), Regions.cons(body, Regions.nil()))
        new = kernel(Segs.cons(Seg.make(P.les(*exts[:col]), "row_major", LE.none()), Segs.nil()),
                     Stmts.cons(loop, Stmts.nil()), P.tys(*([INDEX] * col)))
        name = f"remat.column_loop_rank{rank}"
        out.append(named(name, rule(eq(var("k", KernelT)).to(old), name=name).then(
            union(var("k", KernelT)).with_(new)),
            f"one program per tile of a rank-{rank} segment == one program per tile of its first {col} axes looping "
            f"over the last axis's tiles (the stores run in order inside the program; values that do not read the "
            f"last coordinate are computed once per program and kept live across the loop)"))
    return out


def seed(graph) -> None:
    """The coordinates the column analysis runs for."""
    graph.run_text("\n".join(f"({graph.egg_name(ColumnCol)} {c})" for c in _COLUMNS))


def rules() -> list:
    return _materialize_rules() + _column_loop_rules()


for _r in rules():
    RULESET.append(_r.egg)
ANALYSIS_RULES = _hoisted_rules() + _column_rules()
for _r in ANALYSIS_RULES:
    HOIST.append(_r.egg)
