"""Size buckets: a small set of tile bindings for a kernel compiled without its sizes (issue 24 item 4, SPEC PASS-6).

Without ``sizes=`` the cost model judges every size symbol the caller did not give at 1024, so one binding
(chosen for 1024 x 1024 x 1024) served every launch: a 4096^3 GEMM ran 0.57x cuBLAS with it. Here the optimizer
keeps the extracted structure and asks the same model which binding is best when those symbols take other values:
each free symbol at one of :data:`LEVELS` (128 to 65536, a factor 8 apart, 1024 the model's default). It keeps
at most :data:`MAX_VARIANTS` bindings, and the launcher picks one by the launch's shapes: a symbol's level is where
its value falls between the geometric midpoints :data:`EDGES`, and the plan's table maps the levels of
:attr:`BucketPlan.symbols` to a binding. Nothing is timed: the same input gives the same plan on every machine
(like a ``triton.autotune`` key whose choice the model makes at compile time).

Cost of planning (the binding phase costs every binding once per size environment): the bindings are fully ranked
at the default environment and at each uniform level (every free symbol at that level, with whole-row tiles of
that level's extent among the candidates); the other environments rank only the union of those rankings' best
:data:`POOL` bindings, refined by a short descent (:func:`rank_pool`). With more than :data:`MAX_SYMBOLS` free
symbols, only the symbols whose level changes the best binding on their own are bucketed (at most
:data:`MAX_SYMBOLS`, the ones whose change gains the most first).

PASS-1 declaration (the optimizer's binding group):
  reads:       the extracted kernel with its tile parameters, the cost model, the free size symbols
  requires:    a roofline cost model (a custom cost has no sizes to vary; a tuning file measured one size)
  rewrites:    nothing in the general kernel; adds bound copies of it (one per other binding), each verified
  preserves:   the program's structure, ABI and semantics (a binding only changes tile sizes and resources)
  invalidates: nothing
"""
from __future__ import annotations

import bisect
import itertools
import math
import os
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

#: the value a free symbol takes at each level (a factor 8 apart; 1024 is the model's default size). The top level
#: is there for row counts: 65536 rows want more rows per program than 8192 do (softmax over 65536 x 128 ran 2.1x
#: slower with the 8192-row binding than with its own on the H200, bench/results/h200_size_buckets_2026-12-02)
LEVELS = (128, 1024, 8192, 65536)
#: a launch value below EDGES[i] is at level i (the geometric midpoints of :data:`LEVELS`)
EDGES = (362, 2896, 23170)
MAX_SYMBOLS = 3
MAX_VARIANTS = 6
POOL = 4

#: set to ``off`` to compile one binding per kernel, as before size buckets (planning adds 30-70% to a compile;
#: the test suite sets it, and the tests of size buckets turn it back on)
ENV_SWITCH = "INTENT_EQSAT_SIZE_BUCKETS"

Binding = dict[str, int]


def enabled() -> bool:
    """Whether the optimizer plans size buckets (``$INTENT_EQSAT_SIZE_BUCKETS`` is not ``off``/``0``/``false``)."""
    return os.environ.get(ENV_SWITCH, "on").strip().lower() not in ("off", "0", "false", "no")
#: rank(env, pool): (cost, binding) cheapest first at size environment ``env``, over ``pool`` (None: every binding)
Ranker = Callable[[Mapping[str, int], "Sequence[Binding] | None"], list[tuple[float, Binding]]]


def level_of(value: int) -> int:
    """The level of one launch value (what the generated launcher computes: the count of edges at or below it)."""
    return bisect.bisect_right(EDGES, int(value))


@dataclass(frozen=True)
class BucketPlan:
    """Which binding serves which shapes. Variant 0 is the general kernel's binding (chosen at the default sizes);
    ``table`` gives, for every tuple of levels of ``symbols``, the variant the launcher runs; ``envs[i]`` is the
    size environment variant ``i`` was bound at (its launch resources are chosen there) and ``costs[i]`` its
    modelled seconds there."""

    symbols: tuple[str, ...]
    bindings: tuple[tuple[tuple[str, int], ...], ...]
    table: tuple[tuple[tuple[int, ...], int], ...]
    envs: tuple[tuple[tuple[str, int], ...], ...]
    costs: tuple[float, ...]

    def variant_for(self, values: Mapping[str, int]) -> int:
        """The variant the launcher runs for these symbol values (every symbol of the plan must be given)."""
        key = tuple(level_of(values[s]) for s in self.symbols)
        return dict(self.table)[key]

    def as_dict(self) -> dict:
        return {"symbols": list(self.symbols), "levels": list(LEVELS), "edges": list(EDGES),
                "variants": [{"binding": dict(b), "bound_at": dict(e), "cost": c}
                             for b, e, c in zip(self.bindings, self.envs, self.costs)],
                "table": [[list(k), v] for k, v in self.table]}


def _key(binding: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(n), int(v)) for n, v in binding.items()))


def _env(base: Mapping[str, int], symbols: Sequence[str], levels: Sequence[int]) -> dict[str, int]:
    return {**base, **{s: LEVELS[i] for s, i in zip(symbols, levels)}}


def plan(free: Sequence[str], base_env: Mapping[str, int], default: Sequence[tuple[float, Binding]],
         rank: Ranker) -> BucketPlan | None:
    """The bucket plan for the free symbols ``free`` (in ABI order), or None when one binding serves every level.

    ``base_env``: the sizes the caller gave (and the role defaults); ``default``: the full ranking at the default
    environment (its first binding is the general kernel's); ``rank``: ranks bindings at another environment."""
    free = list(dict.fromkeys(free))
    if not free or not default or not math.isfinite(default[0][0]):
        return None
    mid = LEVELS.index(1024)
    general = _key(default[0][1])
    # a free symbol that is not bucketed stays at the middle level (the model's default size)
    base_env = {**base_env, **{s: LEVELS[mid] for s in free}}
    pool: dict[tuple, Binding] = {}
    for ranked in (default, *(rank(_env(base_env, free, [lv] * len(free)), None) for lv in range(len(LEVELS)))):
        for c, b in ranked[:POOL]:
            if math.isfinite(c):
                pool.setdefault(_key(b), dict(b))
    bindings = list(pool.values())
    symbols = free if len(free) <= MAX_SYMBOLS else _sensitive(free, base_env, bindings, general, rank, mid)
    if not symbols:
        return None
    grid = list(itertools.product(range(len(LEVELS)), repeat=len(symbols)))
    costs: dict[tuple[int, ...], dict[tuple, float]] = {}
    for levels in grid:
        ranked = rank(_env(base_env, symbols, levels), bindings)
        costs[levels] = {_key(b): (c if math.isfinite(c) else math.inf) for c, b in ranked}
    chosen = _choose_variants(general, grid, costs)
    table = tuple((levels, min(range(len(chosen)), key=lambda i: (costs[levels].get(chosen[i], math.inf), i)))
                  for levels in grid)
    used = sorted({v for _, v in table} | {0})
    if used == [0]:
        return None
    renumber = {old: new for new, old in enumerate(used)}
    table = tuple((levels, renumber[v]) for levels, v in table)
    envs, vcosts = [], []
    for i, old in enumerate(used):
        if i == 0:
            envs.append(_key(_env(base_env, symbols, [mid] * len(symbols))))
            vcosts.append(float(default[0][0]))
            continue
        # bound at the largest sizes it serves (the highest level sum, the first such tuple): its launch
        # resources are chosen there, where they cost most
        levels = max((lv for lv, v in table if v == i), key=lambda lv: (sum(lv), [-x for x in lv]))
        envs.append(_key(_env(base_env, symbols, levels)))
        vcosts.append(costs[levels][chosen[old]])
    return BucketPlan(tuple(symbols), tuple(chosen[old] for old in used), table, tuple(envs), tuple(vcosts))


#: descent steps from the pool's best binding at one level tuple (:func:`rank_pool`)
DESCENT_STEPS = 2


def rank_pool(pool: Sequence[Binding], domains: Mapping[str, Sequence[int]],
              cost: Callable[[Binding], float], names: Sequence[str],
              excluded: Callable[[Binding], bool]) -> list[tuple[float, Binding]]:
    """``pool`` costed at one size environment, then up to :data:`DESCENT_STEPS` steps of descent from its best:
    each tile of ``names`` one value of its domain up or down, unless ``excluded`` (the lane filter of
    ``tiles.choose``). The pool was ranked at other sizes and may lack, say, a row tile of this environment's
    extent. Every binding costed, cheapest first (ties: smaller tiles first)."""
    costed: dict[tuple, tuple[float, Binding]] = {}

    def cost_of(b: Binding) -> tuple[float, Binding]:
        key = tuple(b.get(n, 0) for n in names)
        if key not in costed:
            c = cost(b)
            costed[key] = (c if c == c else math.inf, dict(b))
        return costed[key]

    def order(cb: tuple[float, Binding]) -> tuple:
        return cb[0], tuple(cb[1].get(n, 0) for n in names)

    best = min((cost_of(b) for b in pool), key=order)
    for _ in range(DESCENT_STEPS):
        near = []
        for n in names:
            vals = sorted(domains[n])
            if best[1].get(n) not in vals:
                continue
            i = vals.index(best[1][n])
            for j in (i - 1, i + 1):
                if 0 <= j < len(vals) and not excluded({**best[1], n: vals[j]}):
                    near.append({**best[1], n: vals[j]})
        step = min((cost_of(b) for b in near), key=order, default=best)
        if order(step) >= order(best):
            break
        best = step
    return sorted(costed.values(), key=order)


def _sensitive(free: Sequence[str], base_env: Mapping[str, int], bindings: Sequence[Binding], general: tuple,
               rank: Ranker, mid: int) -> list[str]:
    """The symbols whose level alone changes the best binding, the largest gain first (at most MAX_SYMBOLS), in
    ABI order."""
    gains: list[tuple[float, int, str]] = []
    for pos, s in enumerate(free):
        best_gain = 0.0
        for lv in range(len(LEVELS)):
            if lv == mid:
                continue
            ranked = rank(_env(base_env, [s], [lv]), bindings)
            if not ranked or not math.isfinite(ranked[0][0]) or _key(ranked[0][1]) == general:
                continue
            at_general = next((c for c, b in ranked if _key(b) == general), math.inf)
            best_gain = max(best_gain, at_general / ranked[0][0] if ranked[0][0] > 0 else math.inf)
        if best_gain > 1.0:
            gains.append((-best_gain, pos, s))
    keep = sorted(gains)[:MAX_SYMBOLS]
    return [s for _, _, s in sorted(keep, key=lambda g: g[1])]


def _choose_variants(general: tuple, grid: Sequence[tuple[int, ...]],
                     costs: Mapping[tuple[int, ...], Mapping[tuple, float]]) -> list[tuple]:
    """The general binding, then greedily the binding that lowers the summed log-regret over the grid most (each
    level tuple served by its best chosen binding), until MAX_VARIANTS or no regret is left. Ties: the binding
    that is best at the earliest level tuple."""
    order: list[tuple] = []
    for levels in grid:
        row = costs[levels]
        if row:
            best = min(row, key=lambda b: (row[b], b))
            if best not in order:
                order.append(best)

    def regret(chosen: Sequence[tuple]) -> float:
        total = 0.0
        for levels in grid:
            row = costs[levels]
            best = min(row.values(), default=math.inf)
            have = min((row.get(b, math.inf) for b in chosen), default=math.inf)
            if math.isfinite(best) and best > 0:
                total += math.log(have / best) if math.isfinite(have) else 1e9
        return total

    chosen = [general]
    current = regret(chosen)
    while len(chosen) < MAX_VARIANTS and current > 1e-9:
        trials = [(regret(chosen + [b]), i, b) for i, b in enumerate(order) if b not in chosen]
        if not trials:
            break
        r, _, b = min(trials)
        if r >= current - 1e-9:
            break
        chosen.append(b)
        current = r
    return chosen


__all__ = ["ENV_SWITCH", "enabled", "LEVELS", "EDGES", "MAX_SYMBOLS", "MAX_VARIANTS", "POOL", "DESCENT_STEPS",
           "BucketPlan", "level_of", "plan", "rank_pool"]
