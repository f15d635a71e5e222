"""Sibling loops over one range that read the same views run as one loop (loop fusion; SPEC PASS-4 "program
order", PASS-3.4 remat vs materialize: a value loaded once serves both passes).

Why: a row program that reduces the same row several times independently -- ``F.cosine_similarity`` (``x.y``,
``x.x``, ``y.y``), a min-max normalization (``amin``, ``amax``), a triplet loss (two distances to one anchor), the
mass and moment sums of attention under the default numerics -- keeps one loop per reduction. When a row spans
several tiles (``ir.unswitch``'s launch guard is false) each loop loads its tiles again, from L2 at best, and every
score tile of attention is recomputed on the matrix unit once per loop. One loop with all the carries loads each
tile once (the loads and everything computed from them are merged, below), and each carried value still folds the
same members in the same order: the result is bit for bit the program before.

Declaration (SPEC PASS-1):

- Reads: sibling ``for`` ops of one region with the same lower bound, upper bound and step (the same SSA values,
  or effect-free ops of equal attributes over equal operands: the bounds ``range_skip`` and ``split_reduction``
  compute per loop), after binding, narrowing and unswitching (``ORDER`` 125: the guarded single-trip copies of
  ``ir.unswitch`` are straight-line code, where the provider compiler merges the loads; this pass takes the loops
  of the other copy and of programs without a guard).
- Legality: both loops have no ``narrowing`` record or records of one kind (the ranges are equal, so each proof
  holds for the fused loop); every op in both bodies is free of effects but for ``load`` / ``gather`` of views the
  kernel only reads and that share no alias class with a written view (no store, atomic, workspace access, ``tag``
  or ``after`` edge), so the loops' order with everything around them is free; the later loop uses no result of
  the earlier one, directly or through the ops between them; the ops between them that do not depend on the
  earlier loop move before it, so they must be free of effects too (a workspace ``alloc`` may move: it only
  declares); both loops load at least one view in common (what the fusion saves is that re-read; two loops over
  different views would only hold more registers).
- Rewrites: in place of the pair and the ops between them: the ops between that do not depend on the earlier
  loop, one ``for`` over the same range carrying the earlier loop's values then the later one's (results keep
  their names, so their uses are unchanged), then the ops between that depend on the earlier loop, in their order
  (their effects, a partial stored to a workspace, move past loads of read-only views only). The body is the
  earlier body then the later one with its induction variable renamed, one ``yield`` of both; in it an
  effect-free op (read-only loads included) equal to an earlier one -- same op, attributes but ``origin``, operands
  and result types; a nested loop or ``if`` equal up to the names its regions define -- is replaced by it (so a
  tile loaded or a score contracted by both loops is computed once).
  Two loops equal up to the names their bodies define are one: the later one's uses take the earlier one's
  results. Repeated until no pair is left, so three passes become one; then the effect-free ops nothing uses any more (the
  bounds the later loops computed for themselves) are dropped.
- Preserves: every value (each carried value is updated from the same members in the same order; merged ops
  compute equal values from equal operands, and the views they read are not written by the kernel), effects and
  their order among themselves, the ABI, the program space, the ranges of both loops.
- Invalidates: the ``reduce`` mark (a loop with several carries is not one reduction; ``split_reduction`` and
  ``carried_prefix``, its readers, ran before), live ranges and register estimates of the fused body (the launch
  resources were chosen before: the fused loop's carries are the ones the loops held one after the other).
- Verifier: the shared GPU verifier on the bound kernel after this group (``optimizer.optimize``).
"""
from __future__ import annotations

from dataclasses import replace

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.loop_rewrite import defining_ops
from intent_eqsat.ir.spec import ATOMIC_ACCESSES, READ_ACCESSES, SPECS

#: the plain (non-atomic) reads: on a view the kernel never writes, their repeats merge and they move freely
_READS = tuple(a for a in READ_ACCESSES if a not in ATOMIC_ACCESSES)


def fuse_sibling_loops(kernel: Kernel) -> Kernel:
    """``kernel`` with every fusable pair of sibling loops fused, repeatedly (see the module docstring)."""
    read_only = read_only_views(kernel)
    values = _Values(defining_ops(kernel))
    fused_any = False

    def rewrite(region: Region) -> Region:
        nonlocal fused_any
        ops = [replace(op, regions=[rewrite(r) for r in op.regions]) for op in region.ops]
        while True:
            fused = _first_pair(ops, read_only, values)
            if fused is None:
                return Region(list(region.args), ops)
            fused_any = True
            ops = fused

    body = rewrite(kernel.body)
    return replace(kernel, body=_drop_unused(body, read_only)) if fused_any else kernel


def _drop_unused(body: Region, read_only: set[str]) -> Region:
    """``body`` without the effect-free, region-free ops whose results nothing uses (the bounds the later loops
    computed for themselves), repeated until none is left."""
    while True:
        used = {v.name for op in walk(body) for v in op.operands}
        dead = {id(op) for op in walk(body) if not op.regions and op.results and _effect_free(op, read_only)
                and not any(v.name in used for v in op.results)}
        if not dead:
            return body
        body = _without(body, dead)


def _without(region: Region, dead: set[int]) -> Region:
    return Region(list(region.args), [replace(op, regions=[_without(r, dead) for r in op.regions])
                                      for op in region.ops if id(op) not in dead])


def read_only_views(kernel: Kernel) -> set[str]:
    """The public views the kernel only reads and that share no alias class with a view it writes (an aliased
    read could see a store of the kernel: its loads neither move nor merge)."""
    written = {a.alias for a in kernel.abi if a.is_view and a.access != "read" and a.alias is not None}
    return {a.name for a in kernel.abi
            if a.is_view and a.access == "read" and not a.private and (a.alias is None or a.alias not in written)}


def _first_pair(ops: list[Op], read_only: set[str], values: "_Values") -> list[Op] | None:
    """``ops`` with the first fusable pair of loops fused: the ops between them that do not depend on the earlier
    loop first, then the fused loop, then those that do (in their order); None when no pair is fusable."""
    loops = [i for i, op in enumerate(ops) if op.name == "for" and _effect_free(op, read_only)]
    for a in loops:
        for b in loops:
            if b <= a or ops[a].attrs.get("narrowing", {}).get("kind") != \
                    ops[b].attrs.get("narrowing", {}).get("kind") or not values.same_range(ops[a], ops[b]):
                continue
            if not (_views_loaded(ops[a]) & _views_loaded(ops[b])):
                continue
            if _op_key(ops[a], {}, values) == _op_key(ops[b], {}, values):
                # the same loop twice (one score loop per consumer, inlined under a launch guard): keep the first
                same = {v.name: w for v, w in zip(ops[b].results, ops[a].results)}
                return ops[:b] + [_renamed(op, same) for op in ops[b + 1:]]
            tainted = {v.name for v in ops[a].results}
            after, before = [], []
            for op in ops[a + 1:b]:             # the ops computed from the earlier loop's results move after
                if _reads(op) & tainted:
                    tainted |= {v.name for v in op.results}
                    after.append(op)
                else:
                    before.append(op)
            if _reads(ops[b]) & tainted:
                continue                        # the later loop needs the earlier one's results
            if not all(_effect_free(op, read_only) or SPECS.get(op.name) and SPECS[op.name].effect == "alloc"
                       for op in before):
                continue                        # an effect would move before the earlier loop's ops
            return ops[:a] + before + [_fuse(ops[a], ops[b], read_only, values)] + after + ops[b + 1:]
    return None


def _effect_free(top: Op, read_only: set[str]) -> bool:
    """``top`` and every op of its regions have no effect but a load of a view the kernel only reads, and no
    ordering edge."""
    for op in [top, *(o for r in top.regions for o in walk(r))]:
        if "tag" in op.attrs or "after" in op.attrs:
            return False
        effect = SPECS[op.name].effect if op.name in SPECS else "write"
        if effect == "none":
            continue
        if op.name in _READS and op.operands and op.operands[0].name in read_only:
            continue
        return False
    return True


def _views_loaded(loop: Op) -> set[str]:
    return {op.operands[0].name for op in walk(loop.regions[0]) if op.name in _READS}


def _reads(op: Op) -> set[str]:
    """The values ``op`` reads from outside itself: its operands and the free values of its regions."""
    used = {v.name for v in op.operands}
    defined: set[str] = set()
    for r in op.regions:
        defined |= {a.name for a in r.args}
        for inner in walk(r):
            used |= {v.name for v in inner.operands}
            defined |= {v.name for v in inner.results}
            for rr in inner.regions:
                defined |= {a.name for a in rr.args}
    return used - defined


class _Values:
    """Values written out as the effect-free, region-free ops that compute them, down to region arguments, loads
    and loop results (the bounds ``range_skip`` and ``split_reduction`` compute per loop, a key tile's coordinates
    computed once per consumer): two values with the same text are equal."""

    def __init__(self, defs: dict[str, Op]):
        self.defs = defs
        self.memo: dict[str, str] = {}

    def text(self, v: Value) -> str:
        if v.name not in self.memo:
            op = self.defs.get(v.name)
            if op is None or op.regions or len(op.results) != 1 or op.name not in SPECS \
                    or SPECS[op.name].effect != "none":
                self.memo[v.name] = "%" + v.name
            else:
                self.memo[v.name] = (f"{op.name}{_key_attrs(op)}:{v.type}"
                                     f"({', '.join(self.text(u) for u in op.operands)})")
        return self.memo[v.name]

    def same_range(self, a: Op, b: Op) -> bool:
        return all(self.text(x) == self.text(y) for x, y in zip(a.operands[:3], b.operands[:3]))


def _key_attrs(op: Op) -> str:
    return repr(sorted((k, repr(v)) for k, v in op.attrs.items() if k != "origin"))


def _fuse(first: Op, second: Op, read_only: set[str], values: _Values) -> Op:
    """One loop over ``first``'s range carrying both loops' values (``second`` comes after ``first``)."""
    a_body, b_body = first.regions[0], second.regions[0]
    iv = a_body.args[0]
    rename: dict[str, Value] = {b_body.args[0].name: iv}
    a_ops, a_yield = a_body.ops[:-1], a_body.ops[-1]
    b_ops, b_yield = b_body.ops[:-1], b_body.ops[-1]
    b_ops = [_renamed(op, rename) for op in b_ops]
    b_yielded = [rename.get(v.name, v) for v in b_yield.operands]
    body_ops, subst = _merge_repeats(a_ops + b_ops, read_only, values)
    yielded = [subst.get(v.name, v) for v in list(a_yield.operands) + b_yielded]
    body = Region([iv] + list(a_body.args[1:]) + list(b_body.args[1:]),
                  body_ops + [replace(a_yield, operands=yielded)])
    attrs = {k: v for k, v in first.attrs.items() if k != "reduce"}
    if "narrowing" in attrs:                    # one range, both proofs (the loops' ranges are equal)
        n1, n2 = first.attrs["narrowing"], second.attrs["narrowing"]
        attrs["narrowing"] = {"kind": n1["kind"], "proof": f"{n1['proof']}; and {n2['proof']}",
                              "source": f"{n1['source']}; {n2['source']}"}
    return Op("for", list(first.operands) + list(second.operands[3:]), list(first.results) + list(second.results),
              attrs, [body], loc=first.loc)


def _renamed(op: Op, rename: dict[str, Value]) -> Op:
    """``op`` with its uses (and those of its regions) renamed by ``rename``."""
    return replace(op, operands=[rename.get(v.name, v) for v in op.operands],
                   regions=[Region(list(r.args), [_renamed(o, rename) for o in r.ops]) for r in op.regions])


def _merge_repeats(ops: list[Op], read_only: set[str], values: _Values) -> tuple[list[Op], dict[str, Value]]:
    """``ops`` with each effect-free op equal to an earlier one dropped and its uses given the earlier op's
    results; the substitution made. An op with regions (a nested loop: attention's score over head-dim tiles)
    is equal to another when its regions are, up to the names of the values they define (:func:`_op_key`)."""
    seen: dict[str, Op] = {}
    subst: dict[str, Value] = {}
    out: list[Op] = []
    for op in ops:
        op = _renamed(op, subst)
        if op.results and _effect_free(op, read_only):
            key = _op_key(op, {}, values)
            earlier = seen.get(key)
            if earlier is not None:
                subst.update({v.name: e for v, e in zip(op.results, earlier.results)})
                continue
            seen[key] = op
        out.append(op)
    return out, subst


def _op_key(op: Op, local: dict[str, str], values: _Values) -> str:
    """``op`` written out with the values defined inside the op being keyed named by position (``local``), so two
    copies of one loop with renamed bodies give the same text; values from outside are their :class:`_Values`
    text."""
    def name(v: Value) -> str:
        return local[v.name] if v.name in local else values.text(v)

    regions = []
    for r in op.regions:
        for a in r.args:
            local[a.name] = f"#{len(local)}"
        inner = []
        for o in r.ops:
            inner.append(_op_key(o, local, values))
            for v in o.results:
                local[v.name] = f"#{len(local)}"
        regions.append("{" + ", ".join(str(a.type) for a in r.args) + " | " + "; ".join(inner) + "}")
    return (f"{op.name}{_key_attrs(op)}({', '.join(name(v) for v in op.operands)}) -> "
            f"{', '.join(str(v.type) for v in op.results)} {' '.join(regions)}")


__all__ = ["fuse_sibling_loops", "read_only_views"]
