"""Running transformation groups on a kernel's e-graph: PASS-3 order, saturation or back-off, node/time limits.

Each group runs in iterations. One iteration is one egglog call: the group's ``ANALYSES`` rulesets run for up to
``Limits.analysis_steps`` egglog iterations (normally to saturation; bounded because one egglog call cannot be
interrupted by the time limits), then one pass of its rules (``run(RULESET)``). After every iteration the scheduler reads the ``RunReport`` (matches and time per
rule, mapped back to the registry's rule names) and the e-graph size (rows of all egglog tables), then stops the
group when

- nothing changed (``saturated``),
- the e-graph has more than ``Limits.max_nodes`` rows (``node_limit``),
- the group ran ``Limits.max_seconds`` (``time_limit``) or the whole optimization ran ``Limits.max_total_seconds``
  (``total_time_limit``) - also when the next iteration, predicted from the last one's time and growth, would cross
  the limit,
- it ran ``Limits.max_iterations`` iterations (``iteration_limit``).

A limit is not an error: the group stops, a remark names the limit (``"kernel k: blocking: node limit 50000 reached
after 7 iterations; best program so far extracted"``) and the optimizer extracts the best program of the e-graph as
it is (every e-class still holds the terms it had, so the input program is always there).

Groups with ``SCHEDULE = "backoff"`` get egg's back-off scheduler, kept in Python because egglog-python makes a
fresh ``back_off`` scheduler for every ``run`` call: a rule that matched more than ``match_limit << times_banned``
times in an iteration is left out of the next ``ban_length << times_banned`` iterations (its matches of that
iteration are already applied: egglog reports them only afterwards); when nothing else changes, the bans are lifted.
This keeps one exploding rule from starving the others before the node limit. ``SCHEDULE = "saturate"`` (default)
runs every rule every iteration.

:class:`Workspace` is the process-wide e-graph the optimizer runs kernels in (rules compiled once, one push/pop
scope per kernel).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from egglog import EGraph, Ruleset, ruleset, run, seq

from intent_eqsat.rules.registry import Group

STOPS = ("saturated", "node_limit", "time_limit", "total_time_limit", "iteration_limit", "skipped")


@dataclass(frozen=True)
class Limits:
    """Blow-up control (DESIGN). ``max_nodes`` bounds the e-graph size (rows of all tables, analyses included);
    ``max_seconds`` one group on one kernel; ``max_total_seconds`` the whole optimize call; ``max_iterations`` one
    group on one kernel. ``match_limit`` / ``ban_length`` drive the back-off scheduler. ``analysis_steps`` bounds the
    egglog iterations of a group's analyses before each of its iterations: one egglog call cannot be interrupted,
    so an unbounded saturation could outlive every time limit; facts an analysis has not derived yet only delay the
    rules that read them (analyses are monotone), and the group's next iteration continues them."""

    max_nodes: int = 200_000
    max_seconds: float = 30.0
    max_total_seconds: float = 120.0
    max_iterations: int = 40
    match_limit: int = 1_000
    ban_length: int = 2
    analysis_steps: int = 24

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GroupRun:
    """What one group did on one kernel."""

    group: str
    kernel: str
    stop: str = "saturated"
    iterations: int = 0
    seconds: float = 0.0
    size_before: int = 0
    size_after: int = 0
    matches: dict[str, int] = field(default_factory=dict)        # every rule of the group, 0 when it never matched
    rule_seconds: dict[str, float] = field(default_factory=dict)
    analysis_matches: dict[str, int] = field(default_factory=dict)
    banned: dict[str, int] = field(default_factory=dict)          # rule -> times banned (back-off)
    remark: str | None = None

    @property
    def limited(self) -> bool:
        return self.stop not in ("saturated",)

    @property
    def fired(self) -> dict[str, int]:
        return {k: v for k, v in self.matches.items() if v}

    def as_dict(self, timings: bool = False) -> dict[str, Any]:
        """Plain data; wall-clock figures only with ``timings`` (reports stay byte-stable across runs)."""
        out = {"group": self.group, "kernel": self.kernel, "stop": self.stop, "iterations": self.iterations,
               "size_before": self.size_before, "size_after": self.size_after, "rules_fired": self.fired,
               "matches": dict(self.matches), "analysis_matches": dict(self.analysis_matches),
               "banned": dict(self.banned), "remark": self.remark}
        if timings:
            out["seconds"] = round(self.seconds, 6)
            out["rule_seconds"] = {k: round(v, 6) for k, v in self.rule_seconds.items()}
        return out


@contextmanager
def no_let_hoisting() -> Iterator[None]:
    """egglog-python hoists every subexpression that occurs twice in a command into a global ``let`` "for
    performance" (``egraph_state._exprs_multiple_parents``). For rules that runs at registration: the ground parts
    of a rule (``Ty.scalar("index")``, ``Val.arg(1, 0, ...)``) become e-graph rows, and *which* ones depends on set
    iteration order, so e-graph sizes and match counts changed from process to process. Registering with the
    hoisting off keeps the base e-graph free of rule debris and the statistics deterministic."""
    import egglog.egraph_state as es

    orig = getattr(es, "_exprs_multiple_parents", None)
    if orig is None:
        yield
        return
    es._exprs_multiple_parents = lambda typed_expr: []
    try:
        yield
    finally:
        es._exprs_multiple_parents = orig


class Workspace:
    """One egglog ``EGraph`` per process in which every kernel runs inside a ``push``/``pop`` scope.

    egglog compiles each rule when it is first added to an e-graph (about 2 ms per rule), so a fresh ``EGraph`` per
    kernel pays that for every rule of every group again. The workspace declares the constructors and fact
    relations and registers each ruleset once (``run(rs) * 0``: registered, never run on the base, which holds only
    the inert constructor witnesses); a kernel's terms, facts and everything rules derive from them vanish at
    ``pop``. One e-graph per process also keeps clear of egglog-python's per-EGraph expression caches.
    """

    def __init__(self) -> None:
        from intent_eqsat.rules import facts
        from intent_eqsat.rules.egraph import declare_constructors

        self.egraph = EGraph()
        declare_constructors(self.egraph)
        facts.declare(self.egraph)
        self._registered: set[int] = set()
        self._keep: list[Ruleset] = []
        self.depth = 0

    def register(self, rulesets: Iterable[Ruleset]) -> None:
        """Add rulesets to the base e-graph (outside any scope; cached by identity)."""
        if self.depth:
            raise RuntimeError("rulesets are registered outside a kernel scope")
        for rs in rulesets:
            if id(rs) in self._registered:
                continue
            with no_let_hoisting():
                self.egraph.run(run(rs) * 0)
            self._registered.add(id(rs))
            self._keep.append(rs)

    def prepare(self, groups: Iterable[Group]) -> None:
        """Register the groups' rulesets, their analyses and, for back-off groups, one ruleset per rule."""
        rss: list[Ruleset] = []
        for g in groups:
            rss.append(g.ruleset)
            rss.extend(g.analyses)
            if g.schedule == "backoff":
                rss.extend(_single(g, r) for r in g.rules)
        self.register(rss)

    def __enter__(self) -> EGraph:
        self.egraph.push()
        self.depth += 1
        return self.egraph

    def __exit__(self, *exc: Any) -> None:
        self.depth -= 1
        self.egraph.pop()


_WORKSPACE: Workspace | None = None


def workspace() -> Workspace:
    """The process's :class:`Workspace` (made on first use)."""
    global _WORKSPACE
    if _WORKSPACE is None:
        _WORKSPACE = Workspace()
    return _WORKSPACE


def egraph_size(egraph: EGraph) -> int:
    """Rows of every egglog table (constructors, analyses, facts): the size the node limit bounds."""
    return sum(size for _, size in egraph.all_function_sizes())


# ------------------------------------------------------------------------------------------------ rule names

def _decl_name(decl: Any) -> str | None:
    name = getattr(decl, "name", None)
    return name if isinstance(name, str) and name else None


def _analysis_names(analyses: Sequence[Ruleset]) -> dict[Any, str]:
    from intent_eqsat.rules import patterns

    out: dict[Any, str] = {r.decl: n for n, r, _ in patterns.ANALYSIS_RULES}
    for rs in analyses:
        rs._update_egg_decls()
        for i, d in enumerate(rs.__egg_ruleset__.rules):
            out.setdefault(d, _decl_name(d) or f"{rs.__egg_ident__.name}#{i}")
    return out


_SINGLES: dict[tuple[int, str], Ruleset] = {}


def _single(group: Group, rule: Any) -> Ruleset:
    """A ruleset holding one rule of a back-off group (cached), so banned rules can be left out of an iteration."""
    key = (id(group), rule.name)
    rs = _SINGLES.get(key)
    if rs is None:
        rs = ruleset(rule.egg, name=f"{group.name}__{rule.short_name}__{len(_SINGLES)}")
        _SINGLES[key] = rs
    return rs


def _active_schedule(group: Group, active: Sequence[Any]) -> Any:
    """One pass of the ``active`` rules: the group's ruleset when none is banned, else one run per active rule."""
    if len(active) == len(group.rules):
        return run(group.ruleset)
    if not active:
        return None
    steps = [run(_single(group, r)) for r in active]
    return steps[0] if len(steps) == 1 else seq(*steps)


# ------------------------------------------------------------------------------------------------ running

def run_group(egraph: EGraph, group: Group, limits: Limits, *, kernel: str = "", deadline: float | None = None,
              clock: Callable[[], float] = time.perf_counter) -> GroupRun:
    """Run one group on ``egraph`` under ``limits`` (``deadline``: the clock value where the whole optimization
    must stop)."""
    names = {r.decl: r.name for r in group.rules}
    anames = _analysis_names(group.analyses)
    res = GroupRun(group.name, kernel, matches={r.name: 0 for r in group.rules},
                   rule_seconds={r.name: 0.0 for r in group.rules})
    size = egraph_size(egraph)
    res.size_before = res.size_after = size
    where = f"kernel {kernel}: " if kernel else ""
    if size > limits.max_nodes:
        res.stop = "skipped"
        res.remark = (f"{where}{group.name}: not run: the e-graph already has {size} rows (node limit "
                      f"{limits.max_nodes}); best program so far extracted")
        return res
    start = clock()
    backoff = group.schedule == "backoff"
    times_banned: dict[str, int] = {}
    banned_until: dict[str, int] = {}
    last_dt: float | None = None
    last_growth = 1.0
    predicted_note = ""
    while True:
        now = clock()
        elapsed = now - start
        predicted = last_dt * max(1.0, last_growth) if last_dt is not None else 0.0
        if res.iterations >= limits.max_iterations:
            res.stop = "iteration_limit"
            break
        if elapsed + predicted > limits.max_seconds:
            res.stop = "time_limit"
            if elapsed < limits.max_seconds:
                predicted_note = f" (the next iteration would take about {predicted:.2f} s)"
            break
        if deadline is not None and now + predicted > deadline:
            res.stop = "total_time_limit"
            break
        active = [r for r in group.rules if banned_until.get(r.name, 0) <= res.iterations] if backoff \
            else list(group.rules)
        step = _active_schedule(group, active) if backoff else run(group.ruleset)
        steps = [run(a) * limits.analysis_steps for a in group.analyses] + ([step] if step is not None else [])
        if not steps:
            banned_until.clear()
            continue
        schedule = steps[0] if len(steps) == 1 else seq(*steps)
        t0 = clock()
        with no_let_hoisting():
            report = egraph.run(schedule)
        last_dt = clock() - t0
        res.iterations += 1
        new_size = egraph_size(egraph)
        last_growth = new_size / max(1, size)
        size = new_size
        this: dict[str, int] = {}
        for decl, n in report.num_matches_per_rule.items():
            name = names.get(decl)
            if name is not None:
                this[name] = this.get(name, 0) + n
                res.matches[name] += n
            else:
                aname = anames.get(decl) or _decl_name(decl) or "<unnamed>"
                res.analysis_matches[aname] = res.analysis_matches.get(aname, 0) + n
        for decl, dt in report.search_and_apply_time_per_rule.items():
            name = names.get(decl)
            if name is not None:
                res.rule_seconds[name] += dt.total_seconds()
        if backoff:
            for r in active:
                tb = times_banned.get(r.name, 0)
                if this.get(r.name, 0) > (limits.match_limit << tb):
                    banned_until[r.name] = res.iterations + (limits.ban_length << tb)
                    times_banned[r.name] = tb + 1
        if size > limits.max_nodes:
            res.stop = "node_limit"
            break
        if not report.updated:
            if backoff and any(u > res.iterations for u in banned_until.values()):
                banned_until.clear()          # stuck: lift the bans (egg's back-off does the same)
                continue
            res.stop = "saturated"
            break
    res.seconds = clock() - start
    res.size_after = size
    res.banned = dict(times_banned)
    n = res.iterations
    its = f"{n} iteration{'s' if n != 1 else ''}"
    if res.stop == "node_limit":
        res.remark = (f"{where}{group.name}: node limit {limits.max_nodes} reached after {its}; best program so far "
                      f"extracted (e-graph {size} rows)")
    elif res.stop == "time_limit":
        res.remark = (f"{where}{group.name}: time limit {limits.max_seconds:g} s reached after {its}"
                      f"{predicted_note}; best program so far extracted")
    elif res.stop == "total_time_limit":
        res.remark = (f"{where}{group.name}: total time limit {limits.max_total_seconds:g} s reached after {its}; "
                      f"best program so far extracted")
    elif res.stop == "iteration_limit":
        res.remark = (f"{where}{group.name}: iteration limit {limits.max_iterations} reached without saturation; "
                      f"best program so far extracted")
    return res


def run_groups(egraph: EGraph, groups: Iterable[Group], limits: Limits, *, kernel: str = "",
               deadline: float | None = None, after: Callable[[Group, GroupRun], None] | None = None,
               clock: Callable[[], float] = time.perf_counter) -> list[GroupRun]:
    """Run ``groups`` in PASS-3 order (ORDER, then name); ``after(group, run)`` is called after each one (the
    optimizer extracts, decodes and verifies there, so a failure names the group)."""
    out = []
    for g in sorted(groups, key=lambda g: (g.order, g.name)):
        r = run_group(egraph, g, limits, kernel=kernel, deadline=deadline, clock=clock)
        out.append(r)
        if after is not None:
            after(g, r)
    return out


def format_trace(runs: Sequence[GroupRun], locations: dict[str, str] | None = None) -> str:
    """STYLE item 5: per group and rule, matches, time and ``file:line``, ending with "N rules, M matched" (rules
    that never matched show as dead)."""
    locations = locations or {}
    lines: list[str] = []
    totals: dict[str, int] = {}
    for r in runs:
        lines.append(f"== {r.kernel + ': ' if r.kernel else ''}{r.group}: {r.stop}, {r.iterations} iterations, "
                     f"{r.seconds * 1e3:.1f} ms, e-graph {r.size_before} -> {r.size_after} rows")
        width = max((len(n) for n in r.matches), default=4)
        for name, n in r.matches.items():
            totals[name] = totals.get(name, 0) + n
            lines.append(f"  {name:<{width}}  {n:>8}  {r.rule_seconds.get(name, 0.0) * 1e3:>9.2f} ms  "
                         f"{locations.get(name, '')}".rstrip())
        if r.remark:
            lines.append(f"  remark: {r.remark}")
    matched = sum(1 for v in totals.values() if v)
    lines.append(f"{len(totals)} rules, {matched} matched")
    dead = sorted(n for n, v in totals.items() if not v)
    if dead:
        lines.append("never matched: " + ", ".join(dead))
    return "\n".join(lines) + "\n"


__all__ = ["Limits", "GroupRun", "STOPS", "Workspace", "workspace", "egraph_size", "run_group", "run_groups", "format_trace"]
