"""Program mapping (SPEC PASS-3.2 "grouping/swizzle", PASS-4 "grouping/swizzle/grid-stride" legal): a rank-2 grid of
output tiles may run in grouped program order, ``G`` tile rows per group, instead of row-major order.

Reads: the kernel's program space: a single segment whose two extents are tile counts ``ceil_div(E0, T0)``,
``ceil_div(E1, T1)`` (the output of blocking, PASS-3.3; ``T`` a literal or a tile-size physical parameter) in
``row_major`` order; the group-size candidates
(``GroupCand`` facts, ``facts.group_candidates``: the target's ``group_candidates`` or 4, 8, 16, 32). Which
candidate (or row-major) is kept is the cost model's L2-reuse term (``extract/cost.py``: distinct tile rows and
columns a wave of programs touches, plus the grouped decode's integer work), at the problem sizes it is given.

Legality: the grouped order is a bijection from linear program coordinates onto the same set of tile coordinates
(IR-3; the interpreter, verifier and both serializers decode it with ``group_m = min(E0 - first_m, G)``, so a
ragged last group is covered); each program runs the same body at the same coordinates, so only the order in which
independent program instances are scheduled changes. Program instances have no ordering relation (IR-9: no barrier
across instances, cross-instance conflicts only through atomics/scatter-reduce, whose combine is unordered).
Ordered after blocking (ORDER 25): PASS-3.2 refines the mapping of the program space, and grouping is defined on
the 2-D grid of output tiles, which exists only once blocking (3.3) has made tiles; it changes no body, so the groups
after it (contraction, remat, ranges) see the same regions.

Rewrites: the kernel term ``Kernel(name, [Seg([ceil_div(E0, T0), ceil_div(E1, T1)], row_major, none)], launch,
body)`` gets the alternatives ``Kernel(name, [Seg(same extents, grouped, G)], launch, body)``, one per candidate G;
the body, its region arguments (the decoded tile coordinates) and every value are shared.

Preserves: the set of program instances and the coordinates, values and effects of each; the ABI; compile options;
the launch grid size (the product of the extents).

Invalidates: the program order, so L2 reuse estimates; nothing in the body.

Verifier: the shared GPU verifier after the group (a grouped order has a group size and a 2-D segment, IR-3).
"""
from __future__ import annotations

from egglog import Bool, String, eq, i64, rule, ruleset, union, var, vars_

from intent_eqsat.rules.facts import GroupCand
from intent_eqsat.rules.registry import rule as named
from intent_eqsat.rules.sorts import KernelT, LE, LEs, Region, Seg, Segs

GROUP = "mapping"
ORDER = 25
RULESET = ruleset(name=GROUP)


def _tile_grid(e0, t0, e1, t1) -> LEs:
    return LEs.cons(LE.bin("ceil_div", e0, t0), LEs.cons(LE.bin("ceil_div", e1, t1), LEs.nil()))


_RULES = None


def rules():
    """(name, egglog rule, law) for every rule of the group."""
    global _RULES
    if _RULES is None:
        kname = var("kname", String)
        e0, e1, la, t0, t1 = vars_("e0 e1 la t0 t1", LE)
        g = var("g", i64)
        body = var("body", Region)
        k = var("k", KernelT)
        grid = _tile_grid(e0, t0, e1, t1)
        row_major = KernelT.make(kname, Segs.cons(Seg.make(grid, "row_major", LE.none()), Segs.nil()), la, body)
        grouped = KernelT.make(kname, Segs.cons(Seg.make(grid, "grouped", LE.int_(g)), Segs.nil()), la, body)
        _RULES = [
            named("mapping.grouped_order",
                  rule(eq(k).to(row_major), GroupCand(g), eq(g.bool_gt(0)).to(Bool(True)),
                       name="mapping.grouped_order").then(union(k).with_(grouped)),
                  "row-major order over a 2-D tile grid == grouped order with G tile rows per group (a bijection "
                  "onto the same program instances)"),
        ]
    return _RULES


for _r in rules():
    RULESET.append(_r.egg)
