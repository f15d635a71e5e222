"""Running transformation groups on a kernel's e-graph: PASS-3 order, saturation or back-off, a deterministic budget.

Each group runs in iterations. One iteration is one egglog call: the group's ``ANALYSES`` rulesets run for up to
``Limits.analysis_steps`` egglog iterations (normally to saturation; bounded because one egglog call cannot be
interrupted), then one pass of its rules (``run(RULESET)``). After every iteration the scheduler reads the
``RunReport`` (matches and time per rule, mapped back to the registry's rule names) and the e-graph size (rows of
all egglog tables), then stops the group when

- nothing changed (``saturated``),
- the e-graph has more than ``Limits.max_nodes`` rows (``node_limit``),
- the group's rules and analyses matched more than ``Limits.max_matches`` times in all (``match_limit``),
- it ran ``Limits.max_iterations`` iterations (``iteration_limit``).

Every limit is counted in deterministic units (iterations, rows, matches), never in seconds (issue 21): the same
kernel, target, options, rulebooks and budget give the same e-graph and the same program on an idle or a loaded
machine, in a fresh or a warm process. A budget limit is not an error: the group stops, a remark names the limit
(``"kernel k: blocking: node limit 50000 reached after 7 iterations; best program so far extracted"``) and the
optimizer extracts the best program of the e-graph as it is (every e-class still holds the terms it had, so the
input program is always there); the remark is the same on every machine.

Wall-clock time is only a safety net (``Limits.safety_seconds`` per kernel, far above what the budget takes):
crossing it raises :class:`~intent_eqsat.errors.SearchTimeout` naming the kernel, the group and the budget - an
error, never a silently worse program. It is checked between iterations (an egglog call cannot be interrupted).

Groups with ``SCHEDULE = "backoff"`` get egg's back-off scheduler, kept in Python because egglog-python makes a
fresh ``back_off`` scheduler for every ``run`` call: a rule that matched more than ``match_limit << times_banned``
times in an iteration is left out of the next ``ban_length << times_banned`` iterations (its matches of that
iteration are already applied: egglog reports them only afterwards); when nothing else changes, the bans are lifted.
This keeps one exploding rule from starving the others before the node limit. ``SCHEDULE = "saturate"`` (default)
runs every rule every iteration. Both are functions of match counts only, so they are deterministic too.

:class:`Workspace` is the process-wide e-graph the optimizer runs kernels in (rules compiled once, one push/pop
scope per kernel).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterable, Iterator, Sequence

from egglog import EGraph, Ruleset, ruleset, run, seq

from intent_eqsat.errors import SearchTimeout
from intent_eqsat.rules.registry import Group

#: how a group ended; "ran": a post-extraction group (``optimizer.passes``), which runs once
STOPS = ("saturated", "node_limit", "match_limit", "iteration_limit", "skipped", "ran")


@dataclass(frozen=True)
class Limits:
    """The search budget (DESIGN: blow-up control), in deterministic units only (issue 21).

    ``max_nodes`` bounds one kernel's e-graph (rows of all tables, analyses included); ``max_iterations`` and
    ``max_matches`` (rule and analysis matches added up over its iterations) bound one group on one kernel.
    ``match_limit`` / ``ban_length`` drive the back-off scheduler. ``analysis_steps`` bounds the egglog iterations
    of a group's analyses before each of its iterations (facts an analysis has not derived yet only delay the rules
    that read them: analyses are monotone, and the group's next iteration continues them).

    ``safety_seconds`` is not part of the budget: it is the wall-clock safety net of one kernel's search (``None``:
    none), set far above what the budget takes on a loaded machine; crossing it raises
    :class:`~intent_eqsat.errors.SearchTimeout`. It is left out of :meth:`key` (the cache key and the report's
    ``budget``), since it never changes a program that is produced."""

    max_nodes: int = 200_000
    max_iterations: int = 40
    max_matches: int = 1_000_000
    match_limit: int = 1_000
    ban_length: int = 2
    analysis_steps: int = 24
    safety_seconds: float | None = 1800.0

    def __post_init__(self) -> None:
        for name in BUDGET_FIELDS:
            if name == "safety_seconds":
                continue
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"budget {name}: expected a positive integer, got {value!r}")
        s = self.safety_seconds
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0):
            raise ValueError(f"budget safety_seconds: expected a positive number or None, got {s!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def budget(self) -> dict[str, int]:
        """The deterministic budget: every field that can change the program (all but ``safety_seconds``)."""
        out = asdict(self)
        out.pop("safety_seconds")
        return out

    def key(self) -> str:
        """A stable text of :meth:`budget` for cache keys (``max_nodes=200000,max_iterations=40,...``)."""
        return ",".join(f"{k}={v}" for k, v in self.budget().items())


#: the field names :func:`make_limits` accepts (besides the short names of ``_SHORT``, as ``--budget`` spells them)
BUDGET_FIELDS = tuple(f.name for f in fields(Limits))
_SHORT = {"nodes": "max_nodes", "iterations": "max_iterations", "matches": "max_matches"}


def make_limits(budget: "Limits | dict[str, Any] | None") -> Limits:
    """:class:`Limits` from None (the default budget), an instance, or a mapping of field names (or the short names
    ``nodes``, ``iterations``, ``matches``) to values; strings are parsed (``safety_seconds=none`` turns the safety
    net off). Unknown names and bad values raise ``ValueError`` naming them."""
    if budget is None:
        return Limits()
    if isinstance(budget, Limits):
        return budget
    if not isinstance(budget, dict):
        try:
            budget = dict(budget)
        except (TypeError, ValueError):
            raise ValueError(f"budget: expected a Limits or a mapping, got {type(budget).__name__}") from None
    fields: dict[str, Any] = {}
    for raw, value in budget.items():
        key = str(raw).strip().replace("-", "_").lower()
        key = _SHORT.get(key, key)
        if key not in BUDGET_FIELDS:
            raise ValueError(f"unknown budget field {raw!r} (known: {', '.join(BUDGET_FIELDS)}; "
                             f"short names: {', '.join(_SHORT)})")
        if isinstance(value, str):
            text = value.strip().lower()
            if key == "safety_seconds":
                value = None if text in ("none", "off", "") else _number(key, text, float)
            else:
                value = _number(key, text, int)
        fields[key] = value
    return Limits(**fields)


def _number(key: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"budget {key}: expected {'an integer' if kind is int else 'a number'}, got {text!r}") \
            from None


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
        return self.stop not in ("saturated", "ran")

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

def now() -> float:
    """The clock of the safety net and of the reported group times (``time.perf_counter``; a function of its own
    so that a test can stand in a clock that runs fast)."""
    return time.perf_counter()


def run_group(egraph: EGraph, group: Group, limits: Limits, *, kernel: str = "", deadline: float | None = None,
              clock: Callable[[], float] | None = None) -> GroupRun:
    """Run one group on ``egraph`` under the budget ``limits``. ``deadline`` is the ``clock`` value of the kernel's
    wall-clock safety net (:attr:`Limits.safety_seconds` from the kernel's start): crossing it between two
    iterations raises :class:`~intent_eqsat.errors.SearchTimeout`; it never decides where a group stops."""
    clock = clock or now
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
    total_matches = 0
    while True:
        if deadline is not None:
            t = clock()
            if t > deadline:
                raise SearchTimeout(kernel, group.name, limits, res.iterations, t - start)
        if res.iterations >= limits.max_iterations:
            res.stop = "iteration_limit"
            break
        active = [r for r in group.rules if banned_until.get(r.name, 0) <= res.iterations] if backoff \
            else list(group.rules)
        step = _active_schedule(group, active) if backoff else run(group.ruleset)
        steps = [run(a) * limits.analysis_steps for a in group.analyses] + ([step] if step is not None else [])
        if not steps:
            banned_until.clear()
            continue
        schedule = steps[0] if len(steps) == 1 else seq(*steps)
        with no_let_hoisting():
            report = egraph.run(schedule)
        res.iterations += 1
        size = egraph_size(egraph)
        this: dict[str, int] = {}
        for decl, n in report.num_matches_per_rule.items():
            total_matches += n
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
        if total_matches > limits.max_matches:
            res.stop = "match_limit"
            break
    res.seconds = clock() - start
    res.size_after = size
    res.banned = dict(times_banned)
    n = res.iterations
    its = f"{n} iteration{'s' if n != 1 else ''}"
    if res.stop == "node_limit":
        res.remark = (f"{where}{group.name}: node limit {limits.max_nodes} reached after {its}; best program so far "
                      f"extracted (e-graph {size} rows)")
    elif res.stop == "match_limit":
        res.remark = (f"{where}{group.name}: match limit {limits.max_matches} reached after {its} "
                      f"({total_matches} matches); best program so far extracted")
    elif res.stop == "iteration_limit":
        res.remark = (f"{where}{group.name}: iteration limit {limits.max_iterations} reached without saturation; "
                      f"best program so far extracted")
    return res


def run_groups(egraph: EGraph, groups: Iterable[Group], limits: Limits, *, kernel: str = "",
               deadline: float | None = None, after: Callable[[Group, GroupRun], None] | None = None,
               clock: Callable[[], float] | None = None) -> list[GroupRun]:
    """Run ``groups`` in PASS-3 order (ORDER, then name); ``after(group, run)`` is called after each one (the
    optimizer extracts, decodes and verifies there, so a failure names the group). ``deadline``: the kernel's
    safety net (:func:`run_group`)."""
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


__all__ = ["Limits", "make_limits", "BUDGET_FIELDS", "SearchTimeout", "GroupRun", "STOPS", "Workspace", "workspace",
           "egraph_size", "now", "run_group", "run_groups", "format_trace"]
