"""Rule auditing (issue 6, ``intent-eqsat rules audit``): translation validation of every rule on hypothesis-drawn
instances of corpus kernels, firing counts over the corpus, and the rules that never fire.

::

    res = audit(["examples/corpus/softmax.kir"], rulebooks=["tests/cpu/rules/rulebooks_fixture/audit/unsound.py"])
    res.ok            # False: a rule failed translation validation
    res.rules         # RuleAudit per rule: fired (matches), kernels fired on, instances validated, verdict
    res.failures      # Failure: the blamed rule and its file:line, kernel, program, output, max error, sizes
    res.never_fired   # rule names that matched nowhere on the corpus
    print(res.text()); res.as_dict()      # the table / the JSON report

How (DESIGN "How we know it works", item 2, applied to rules; SPEC PASS-2: "after each group the same program is
verified; failures name the group"):

1. **Instances.** Every kernel of every corpus file is constructed (SPEC PASS-3.1) for the target and compile
   options. Hypothesis draws the instances: shape-symbol sizes in ``[min_size, max_size]`` (odd sizes and tails
   included; the product of all sizes is kept under ``max_elements`` so the interpreter stays fast) and the seed of
   the input values (``kir.inputs.random_inputs``: index tensors stay in range). Draws are reproducible
   (``hypothesis.seed``); the same instances serve every group of a kernel.
2. **Saturation.** The kernel runs through the selected groups in PASS-3 order, exactly as the optimizer runs them
   (same facts, seeds, limits, scheduler), in a private e-graph. After each group the e-graph is validated.
3. **Validation of an e-graph.** Several programs are extracted: the optimizer's choice (roofline cost); a "novel"
   program that avoids every e-node of the program the previous group left (so it takes what this group added
   wherever it can); programs with one e-node the group added *forced* into its e-class (each new alternative of a
   class the extracted programs use, in a seeded order); and programs under random bottleneck costs. Each
   distinct program is decoded and checked by the shared GPU verifier, then run by the IR interpreter on the
   instances and compared with the KIR reference (float64, and the declared dtypes) within the output dtype's
   tolerance (``kir.inputs.tolerance``). An unsound union anywhere in the part of the e-graph a program can reach
   shows up as a wrong value in one of these programs with high probability: the novel and forced programs take
   the group's new alternatives, the bottleneck ones mix them. When the constructed program itself disagrees with
   the reference on an instance, that instance is not used for the kernel (a construction issue, not a rule's).
4. **Blame.** A failing group is narrowed to rules on the e-graph state before the group: the only rule that fired;
   else each fired rule alone (its analyses included) - a rule that fails alone is UNSOUND; else each fired rule
   left out - a rule whose removal makes the failure disappear is a *suspect* (it is needed for the failure). The
   report names the rule, its ``file:line``, the kernel, the program, the output, the maximum error, the shapes
   (shrunk greedily while the failure persists) and the input seed. Later groups are not audited on that kernel.
5. **Statistics.** Matches per rule summed over the corpus, the kernels each rule fired on, the (kernel, instance)
   pairs validated where it fired, and the rules that never fired.

Verdicts: ``ok`` (fired, and every validated e-graph it contributed to was sound), ``UNSOUND``, ``suspect``,
``unchecked`` (fired, but its group never produced a program that differs from its input, so nothing could be
compared), ``never fired``. ``ok`` is False when a rule is UNSOUND or suspect, or a failing group could not be
narrowed to a rule.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO

import numpy as np

from intent_eqsat.rules import facts as F
from intent_eqsat.rules import registry as R
from intent_eqsat.rules.egraph import Export, KernelGraph
from intent_eqsat.rules.schedule import GroupRun, Limits, run_group
from intent_eqsat.rules.schedule import now as schedule_now
from intent_eqsat.rules.sorts import SIGNATURES
from intent_eqsat.rules.terms import T, from_json_choice

#: verdicts, worst first
VERDICTS = ("UNSOUND", "suspect", "ok", "unchecked", "never fired")
#: the novel program's cost factor for the e-nodes of the previous program
_OLD_PENALTY = 1000.0
#: process-wide numbering of the rule-subset rulesets blame builds (egglog ruleset names must not repeat)
_SUBSET_IDS = itertools.count()


class AuditUsageError(ValueError):
    """A bad argument to :func:`audit` (no corpus file, no instance budget, hypothesis missing)."""


# ------------------------------------------------------------------------------------------------ results

@dataclass
class Failure:
    """One translation-validation failure: a group's e-graph holds a program that is wrong, does not decode or
    does not verify. ``rules`` are the blamed rules (``blame`` says how they were found)."""

    group: str
    file: str
    kernel: str
    kind: str                       # mismatch | verify | decode | interpret | error
    program: str                    # which extraction: default, novel, forced #i, random #i
    message: str
    rules: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    blame: str = "unattributed"     # only rule fired | fails alone | needed for the failure | unattributed
    output: str | None = None
    max_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    sizes: dict[str, int] | None = None
    input_seed: int | None = None
    tiles: dict[str, int] | None = None      # the tile parameters' binding the program ran with
    values: str = "normal"                   # the float inputs' distribution (kir.inputs.VALUE_DISTRIBUTIONS)
    options: str | None = None               # the compile options of the run (the audited ones when None)

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if out["max_error"] is not None and not math.isfinite(out["max_error"]):
            out["max_error"] = str(out["max_error"])
        return out

    def line(self) -> str:
        who = ", ".join(f"{r} ({loc})" for r, loc in zip(self.rules, self.locations)) or f"group {self.group}"
        where = f"kernel {self.kernel} ({self.file})"
        what = self.message
        if self.kind == "mismatch":
            what = (f"output {self.output} differs from the KIR reference: max error {self.max_error:.3g} "
                    f"(rtol {self.rtol:g}, atol {self.atol:g})")
        inst = ""
        if self.sizes is not None:
            inst = f" at sizes {_fmt_sizes(self.sizes)}, input seed {self.input_seed} ({self.values} values)"
            if self.tiles:
                inst += f", tiles {_fmt_sizes(self.tiles)}"
        if self.options:
            inst += f", options {self.options}"
        return f"{who}: {where}, {self.program} program: {what}{inst} [{self.blame}]"


@dataclass
class RuleAudit:
    """What the audit found for one rule."""

    name: str
    group: str
    law: str
    location: str
    fired: int = 0                                    # matches summed over the corpus
    kernels: list[str] = field(default_factory=list)  # kernels it fired on
    validated: int = 0                                # (kernel, instance) pairs validated where it fired
    programs: int = 0                                 # distinct programs checked where it fired
    verdict: str = "never fired"
    failures: list[Failure] = field(default_factory=list)
    options: list[str] = field(default_factory=list)  # the compile options (keys) of the runs where it fired

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "group": self.group, "law": self.law, "location": self.location,
                "fired": self.fired, "kernels": list(self.kernels), "validated": self.validated,
                "programs": self.programs, "verdict": self.verdict,
                "failures": [f.as_dict() for f in self.failures], "options": list(self.options)}


@dataclass
class StageRecord:
    """One group on one kernel."""

    group: str
    stop: str
    iterations: int
    rules_fired: dict[str, int]
    programs: int = 0          # distinct programs checked (new to this group)
    instances: int = 0         # instances they were checked on
    status: str = "ok"         # ok | failed | unchecked
    seconds: float = 0.0

    def as_dict(self, timings: bool = True) -> dict[str, Any]:
        out = {"group": self.group, "stop": self.stop, "iterations": self.iterations,
               "rules_fired": dict(self.rules_fired), "programs": self.programs, "instances": self.instances,
               "status": self.status}
        if timings:
            out["seconds"] = round(self.seconds, 3)
        return out


@dataclass
class KernelRecord:
    file: str
    kernel: str
    instances: list[dict[str, Any]] = field(default_factory=list)   # {"sizes": ..., "seed": ...}
    stages: list[StageRecord] = field(default_factory=list)
    skipped_instances: int = 0      # instances on which the constructed program disagrees with the reference
    error: str | None = None
    seconds: float = 0.0
    options: str | None = None      # the compile options of a variant run (None: the audited options)

    @property
    def key(self) -> str:
        return f"{self.file}:{self.kernel}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "kernel": self.kernel, "instances": self.instances,
                "skipped_instances": self.skipped_instances, "error": self.error,
                "stages": [s.as_dict() for s in self.stages], "seconds": round(self.seconds, 3),
                "options": self.options}


@dataclass
class AuditResult:
    """The audit of a set of rulebooks over a corpus."""

    rules: list[RuleAudit]
    failures: list[Failure]
    kernels: list[KernelRecord]
    config: dict[str, Any]
    errors: list[dict[str, str]] = field(default_factory=list)    # files/kernels that could not be audited

    @property
    def ok(self) -> bool:
        if any(r.verdict in ("UNSOUND", "suspect") for r in self.rules):
            return False
        return not any(not f.rules for f in self.failures)

    @property
    def never_fired(self) -> list[str]:
        return [r.name for r in self.rules if r.fired == 0]

    def rule(self, name: str) -> RuleAudit:
        for r in self.rules:
            if r.name == name:
                return r
        raise LookupError(f"no rule named {name!r} in the audit")

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "config": self.config, "summary": self.summary(),
                "rules": [r.as_dict() for r in self.rules], "never_fired": self.never_fired,
                "failures": [f.as_dict() for f in self.failures], "kernels": [k.as_dict() for k in self.kernels],
                "errors": list(self.errors)}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, sort_keys=False) + "\n"

    def summary(self) -> dict[str, int]:
        count = {v: 0 for v in VERDICTS}
        for r in self.rules:
            count[r.verdict] = count.get(r.verdict, 0) + 1
        return {"rules": len(self.rules), "fired": sum(1 for r in self.rules if r.fired),
                "kernels": len(self.kernels), "failures": len(self.failures), "errors": len(self.errors),
                **{v.lower().replace(" ", "_"): n for v, n in count.items()}}

    def text(self) -> str:
        c = self.config
        head = (f"rules audit: {len(self.kernels)} kernel(s), target {c['target']}, {c['examples']} instance(s) per "
                f"kernel, up to {c['programs']} program(s) per group, seed {c['seed']}")
        rows = [("rule", "group", "fired", "kernels", "validated", "verdict")]
        for r in self.rules:
            rows.append((r.name, r.group, str(r.fired), str(len(r.kernels)), str(r.validated), r.verdict))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [head, ""]
        for i, row in enumerate(rows):
            cells = [row[j].ljust(widths[j]) if j in (0, 1, 5) else row[j].rjust(widths[j]) for j in range(6)]
            lines.append("  ".join(cells).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        if self.failures:
            lines.append("")
            lines.append("failures:")
            for f in self.failures:
                lines.append(f"  FAIL {f.line()}")
        if self.errors:
            lines.append("")
            lines.append("not audited:")
            for e in self.errors:
                lines.append(f"  {e['where']}: {e['kind']}: {e['message']}")
        nf = self.never_fired
        lines.append("")
        elsewhere = [f"{r.name} ({'; '.join(r.options)})" for r in self.rules
                     if r.options and c.get("options") not in r.options]
        if elsewhere:
            lines.append("fired only under other compile options: " + ", ".join(elsewhere))
        if nf:
            lines.append("never fired: " + ", ".join(nf))
        s = self.summary()
        lines.append(f"{s['rules']} rules, {s['fired']} fired, {len(nf)} never fired; {s['unsound']} unsound, "
                     f"{s['suspect']} suspect, {s['unchecked']} unchecked; "
                     f"{'all sound' if self.ok else 'FAILED'}")
        return "\n".join(lines) + "\n"


def _fmt_sizes(sizes: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sizes.items()) + "}"


# ------------------------------------------------------------------------------------------------ instances

@dataclass(frozen=True)
class Instance:
    sizes: dict[str, int]
    seed: int
    values: str = "normal"           # the float value distribution (kir.inputs.VALUE_DISTRIBUTIONS)

    def as_dict(self) -> dict[str, Any]:
        return {"sizes": dict(self.sizes), "seed": self.seed, "values": self.values}


def draw_instances(symbols: Sequence[str], n: int, seed: int, *, min_size: int = 1, max_size: int = 17,
                   max_elements: int = 64, boundaries: Sequence[int] = ()) -> list[Instance]:
    """``n`` instances drawn by hypothesis (reproducible with ``seed``): each shape symbol in ``[min_size,
    max_size]`` with the product of all sizes at most ``max_elements`` (symbols are filled in a drawn order, each
    bounded by what the budget leaves for the rest), half the time one of ``boundaries`` (tile sizes +-1) when it
    fits, and a seed for the input values. The instances cycle through the value distributions
    (``kir.inputs.VALUE_DISTRIBUTIONS``: N(0, 1) first, then large magnitudes, a wide range, signed zeros, values
    near underflow), so ``n >= 5`` covers all of them."""
    from intent_eqsat.kir.inputs import VALUE_DISTRIBUTIONS

    try:
        from hypothesis import HealthCheck, Phase, given, settings, strategies as st
        from hypothesis import seed as hseed
    except ImportError as err:                                # pragma: no cover - hypothesis is a test extra
        raise AuditUsageError("rules audit needs hypothesis (pip install 'hypothesis>=6.100')") from err
    symbols = list(symbols)
    lo = max(1, int(min_size))
    hi = max(lo, int(max_size))

    @st.composite
    def sizes(draw: Any) -> dict[str, int]:
        order = draw(st.permutations(symbols)) if len(symbols) > 1 else symbols
        budget = max(int(max_elements), lo ** max(1, len(symbols)))
        got: dict[str, int] = {}
        for i, s in enumerate(order):
            rest = len(order) - i - 1
            cap = max(lo, min(hi, budget // (lo ** rest)))
            near = sorted({b for b in boundaries if lo <= b <= cap})
            v = draw(st.one_of(st.sampled_from(near), st.integers(lo, cap)) if near else st.integers(lo, cap))
            got[s] = v
            budget = max(1, budget // v)
        return {s: got[s] for s in symbols}

    out: list[Instance] = []
    seen: set[tuple] = set()

    @hseed(seed)
    @settings(max_examples=max(1, 3 * n), database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False, print_blob=False)
    @given(sizes(), st.integers(0, 2**31 - 1))
    def collect(sz: dict[str, int], value_seed: int) -> None:
        key = tuple(sorted(sz.items())) if symbols else (value_seed,)     # distinct shapes (or values)
        if key not in seen:
            seen.add(key)
            out.append(Instance(sz, value_seed))

    collect()
    # prefer instances with few sizes at the minimum (a size-1 axis hides many wrong rewrites: x - max(x) is 0
    # whichever way it is written), in draw order; then smallest first, so a failure is found (and the constructed
    # program re-checked) on the cheapest instance
    ranked = sorted(range(len(out)), key=lambda i: (sum(v == lo for v in out[i].sizes.values()), i))
    chosen = [out[i] for i in ranked[:n]]
    chosen.sort(key=lambda inst: (math.prod(inst.sizes.values()), sorted(inst.sizes.items()), inst.seed))
    return [dataclasses.replace(inst, values=VALUE_DISTRIBUTIONS[i % len(VALUE_DISTRIBUTIONS)])
            for i, inst in enumerate(chosen)]


# ------------------------------------------------------------------------------------------------ checking

class _Skip(Exception):
    """The instance is unusable for this kernel (the reference or the constructed program fails on it)."""


@dataclass
class _Problem:
    kind: str
    message: str
    output: str | None = None
    max_error: float | None = None
    rtol: float | None = None
    atol: float | None = None


def _copy(inputs: dict[str, Any]) -> dict[str, Any]:
    return {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in inputs.items()}


def _max_error(got: np.ndarray, ref: np.ndarray) -> float:
    g = np.asarray(got, np.float64)
    r = np.asarray(ref, np.float64)
    if g.shape != r.shape:
        return math.inf
    if g.size == 0:
        return 0.0
    nan_g, nan_r = np.isnan(g), np.isnan(r)
    if np.any(nan_g != nan_r):
        return math.inf
    both = ~(nan_g | nan_r)
    if not np.any(both):
        return 0.0
    gb, rb = g[both], r[both]
    inf_mismatch = (np.isinf(gb) | np.isinf(rb)) & (gb != rb)
    if np.any(inf_mismatch):
        return math.inf
    fin = np.isfinite(gb) & np.isfinite(rb)
    return float(np.max(np.abs(gb[fin] - rb[fin]))) if np.any(fin) else 0.0


def _close(got: Any, ref: Any, rtol: float, atol: float) -> bool:
    g, r = np.asarray(got), np.asarray(ref)
    if g.shape != r.shape:
        return False
    if rtol == 0.0 and atol == 0.0:
        if g.dtype.kind == "f" or r.dtype.kind == "f":
            return bool(np.array_equal(g.astype(np.float64), r.astype(np.float64), equal_nan=True))
        return bool(np.array_equal(g, r))
    return bool(np.allclose(np.asarray(g, np.float64), np.asarray(r, np.float64), rtol=rtol, atol=atol,
                            equal_nan=True))


class _KernelCase:
    """A corpus kernel with its instances: inputs and references are computed once per instance, and every
    program is compared with them."""

    def __init__(self, file: str, kir_module: Any, kernel_name: str, program: Any, instances: list[Instance]):
        from intent_eqsat.kir.inputs import tolerance

        self.file = file
        self.kir = kir_module
        self.name = kernel_name
        self.program = program
        self.instances = instances
        self.kir_kernel = next(k for k in kir_module.kernels if k.name == kernel_name)
        options = getattr(program, "options", None)
        self.tolerance = lambda dtype: tolerance(dtype, options)
        self._refs: dict[int, tuple[dict, dict, dict] | None] = {}
        self._baseline: dict[int, bool] = {}
        self.skipped: set[int] = set()

    # inputs and references of instance i (None: the reference cannot run on it)
    def reference(self, i: int, inst: Instance | None = None) -> tuple[dict, dict, dict] | None:
        if inst is None and i in self._refs:
            return self._refs[i]
        from intent_eqsat import kir
        from intent_eqsat.kir.inputs import random_inputs

        inst = inst or self.instances[i]
        try:
            inputs = random_inputs(self.kir, self.name, inst.seed, sizes=inst.sizes, values=inst.values)
            with np.errstate(all="ignore"):          # x100 / underflow instances overflow by design: no warnings
                ref64 = kir.evaluate(self.kir, self.name, _copy(inputs), float64=True)
                refdt = kir.evaluate(self.kir, self.name, _copy(inputs))
            out: tuple[dict, dict, dict] | None = (inputs, ref64, refdt)
        except Exception:
            out = None
        if i >= 0:
            self._refs[i] = out
        return out

    def module_of(self, kernel: Any, extra: Sequence[Any] = ()) -> Any:
        from intent_eqsat.ir.core import Module

        return Module(self.program.target, self.program.options, list(self.program.params) + list(extra), [kernel])

    def compare(self, module: Any, i: int, inst: Instance | None = None) -> _Problem | None:
        """None when ``module``'s kernel equals the reference on instance ``i`` (``inst`` overrides it)."""
        from intent_eqsat import ir

        ref = self.reference(i, inst)
        if ref is None:
            raise _Skip()
        inputs, ref64, refdt = ref
        try:
            with np.errstate(all="ignore"):
                got = ir.interpret(module, self.name, _copy(inputs))
        except Exception as err:
            return _Problem("interpret", f"the interpreter fails: {type(err).__name__}: {err}")
        worst: _Problem | None = None
        for name, r64 in ref64.items():
            rtol, atol = self.tolerance(self.kir_kernel.param(name).dtype)
            if name not in got:
                return _Problem("mismatch", f"output {name} is not written", name, math.inf, rtol, atol)
            g = got[name]
            if _close(g, r64, rtol, atol) or _close(g, refdt[name], rtol, atol):
                continue
            err = min(_max_error(g, r64), _max_error(g, refdt[name]))
            if worst is None or (worst.max_error or 0.0) < err:
                worst = _Problem("mismatch", "", name, err, rtol, atol)
        return worst

    def usable(self, i: int) -> bool:
        """The constructed program agrees with the reference on instance ``i`` (computed on demand, once)."""
        hit = self._baseline.get(i)
        if hit is None:
            try:
                hit = self.compare(self.program_kernel_module(), i) is None
            except _Skip:
                hit = False
            self._baseline[i] = hit
            if not hit:
                self.skipped.add(i)
        return hit

    def program_kernel_module(self) -> Any:
        return self.module_of(self.program.kernel(self.name))


# ------------------------------------------------------------------------------------------------ extraction

def _extract(export: Export, node_cost: Callable[[str, dict, list], float]) -> tuple[T | None, dict]:
    from intent_eqsat.extract.extractor import extract

    choice, cost = extract(export, node_cost)
    rc = cost.get(export.root, math.inf)
    if not math.isfinite(rc):
        return None, choice
    return from_json_choice(export.nodes, choice, export.root, eclass_of=export.eclass_of), choice


def _used_nodes(export: Export, choice: dict) -> set[str]:
    """The e-nodes of the program ``choice`` gives at the root."""
    ecl = export.eclass_of or {}
    out: set[str] = set()
    seen = {export.root}
    stack = [export.root]
    while stack:
        ec = stack.pop()
        nid = choice.get(ec)
        if nid is None:
            continue
        out.add(nid)
        for c in export.nodes[nid]["children"]:
            cn = export.nodes.get(c)
            if cn is None or cn["op"] not in SIGNATURES:
                continue
            cc = ecl.get(c, cn["eclass"])
            if cc not in seen:
                seen.add(cc)
                stack.append(cc)
    return out


def candidate_programs(export: Export, previous: T, budget: int, rng: random.Random, default_cost: Any = None
                       ) -> list[tuple[str, T]]:
    """Distinct programs of the e-graph ``export`` (at most ``budget``, ``previous`` excluded), labelled by how
    they were extracted: ``default`` (``default_cost``), ``novel``, ``forced #i``, ``random #i``."""
    from intent_eqsat.extract.cost import match_terms
    from intent_eqsat.optimizer.optimize import _node_cost

    out: list[tuple[str, T]] = []
    seen: set[int] = {id(previous)}
    used: set[str] = set()

    def add(label: str, term: T | None, choice: dict) -> None:
        if term is None:
            return
        used.update(_used_nodes(export, choice))
        if id(term) in seen or len(out) >= budget:
            return
        seen.add(id(term))
        out.append((label, term))

    if default_cost is not None:
        try:
            add("default", *_extract(export, _node_cost(default_cost, export)))
        except Exception:
            pass             # a cost model that cannot price this e-graph: the other programs still run
    old = set(match_terms(export, previous).values())
    extractable = [nid for nid, n in export.nodes.items() if n["op"] in SIGNATURES]
    new = [nid for nid in extractable if nid not in old]
    # only the old e-nodes of e-classes that gained an alternative are avoided (shared leaves such as types and
    # attribute maps are old everywhere: penalising them would favour the smallest term, not the new one)
    ecl = export.eclass_of or {}
    grown = {ecl.get(nid, export.nodes[nid]["eclass"]) for nid in new}
    avoid = {nid for nid in old if ecl.get(nid, export.nodes[nid]["eclass"]) in grown}
    jitter = {nid: rng.uniform(1.0, 2.0) for nid in extractable}

    def novel(nid: str, node: dict, kids: list) -> float:
        return (_OLD_PENALTY if nid in avoid else 1.0) * jitter[nid] + sum(kids)

    add("novel", *_extract(export, novel))
    # force new e-nodes into their e-classes (the rest novel): nodes of e-classes the programs so far use, and
    # that they do not use themselves, first; each tried once
    def class_of(nid: str) -> str:
        return ecl.get(nid, export.nodes[nid]["eclass"])

    pending = [nid for nid in new if len(export.classes.get(class_of(nid), ())) > 1]
    rng.shuffle(pending)
    tries = 0
    forced = 0
    while pending and len(out) < budget and tries < 4 * budget:
        used_classes = {class_of(n) for n in used}
        pick = next((n for n in pending if n not in used and class_of(n) in used_classes), None)
        if pick is None:
            pick = next((n for n in pending if n not in used), None)
        if pick is None:
            break
        pending.remove(pick)
        tries += 1
        rivals = set(export.classes.get(class_of(pick), ())) - {pick}

        def pinned(n: str, node: dict, kids: list, _r: set = rivals) -> float:
            return math.inf if n in _r else novel(n, node, kids)

        forced += 1
        add(f"forced #{forced}", *_extract(export, pinned))
    # random bottleneck costs: a program's cost is its heaviest node, so alternatives mix freely
    r = 0
    while len(out) < budget and r < 2 * budget:
        r += 1
        w = {nid: math.exp(rng.uniform(0.0, 30.0)) for nid in extractable}

        def bottleneck(nid: str, node: dict, kids: list, _w: dict = w) -> float:
            return max(_w[nid], max(kids, default=0.0)) * (1.0 + 1e-9)

        add(f"random #{r}", *_extract(export, bottleneck))
    return out


# ------------------------------------------------------------------------------------------------ one stage

class _TileParams:
    """The optimizer's tile parameters (``intent_eqsat.optimizer.tiles``, SPEC PASS-3.3/PASS-6): rules write tile sizes
    as symbols, the verifier accepts them when they are declared, and the optimizer binds them after extraction.
    The audit verifies the unbound program like the optimizer does and runs it bound to bindings drawn from the
    target's domains (every binding must be correct, not only the one the cost model picks). Without the module,
    or for a program that uses no tile parameter, nothing is bound."""

    def __init__(self, module: Any = None, domains: dict[str, tuple[int, ...]] | None = None,
                 extraction_cost: Callable[[Any], Any] | None = None):
        self.module = module
        self.domains = domains or {}
        self._extraction_cost = extraction_cost
        self.decls = list(module.decls(self.domains)) if module is not None else []
        self.defaults = dict(module.defaults(self.domains)) if module is not None else {}

    @classmethod
    def of(cls, target: Any, facts: F.Facts) -> "_TileParams":
        from intent_eqsat.optimizer import tiles as TILES
        from intent_eqsat.optimizer.optimize import _extraction_cost
        doms = TILES.domains(target, getattr(facts, "tiles", None) or (32, 64, 128))
        return cls(TILES, doms, _extraction_cost)

    def extraction_cost(self, cost: Any) -> Any:
        """The cost the optimizer's extractor uses (the model with the tile parameters at their defaults)."""
        if self._extraction_cost is None or not self.defaults:
            return cost
        return self._extraction_cost(cost, self.defaults)

    def bindings(self, kernel: Any, rng: random.Random) -> list[dict[str, int]]:
        """Bindings of the parameters ``kernel`` uses: the defaults first, then the others in a seeded order."""
        if self.module is None:
            return [{}]
        names = list(self.module.used(kernel))
        if not names:
            return [{}]
        combos = [dict(zip(names, c)) for c in itertools.product(*(sorted(self.domains[n]) for n in names))]
        first = {n: self.defaults[n] for n in names}
        rest = [c for c in combos if c != first]
        rng.shuffle(rest)
        return [first] + rest

    def bind(self, kernel: Any, binding: dict[str, int], module: Any) -> Any:
        return self.module.bind(kernel, binding, module) if binding and self.module is not None else kernel


@dataclass(eq=False)
class _Program:
    """An extracted program: its term, the decoded (unbound) kernel, and its bound modules per tile binding."""

    label: str
    term: T
    kernel: Any
    module: Any                                 # the unbound kernel with the tile parameter declarations
    bindings: list[dict[str, int]]
    _bound: dict[tuple, Any] = field(default_factory=dict)

    def binding(self, i: int) -> dict[str, int]:
        """Instance ``i`` runs with the ``i``-th binding (round robin: instances cover several tile sizes)."""
        return self.bindings[i % len(self.bindings)] if i >= 0 else self.bindings[0]

    def bound(self, binding: dict[str, int], case: "_KernelCase", tiles: _TileParams) -> Any:
        """The module of the program bound to ``binding``, verified (raises VerificationError)."""
        from intent_eqsat import ir

        key = tuple(sorted(binding.items()))
        hit = self._bound.get(key)
        if hit is None:
            if not binding:
                hit = self.module
            else:
                hit = case.module_of(tiles.bind(self.kernel, binding, self.module))
                ir.verify(hit)
            self._bound[key] = hit
        return hit


@dataclass
class _StageCheck:
    default: T | None = None              # the optimizer's choice after the group (None: nothing changed it)
    programs: int = 0
    instances: int = 0
    failure: Failure | None = None
    failing_instance: int | None = None
    failing_program: Any = None           # the decoded module that failed (for shrinking)


class _Auditor:
    def __init__(self, *, target: Any, options: Any, facts: F.Facts, limits: Limits, programs: int, seed: int,
                 shrink: bool, progress: Callable[[str], None]):
        from intent_eqsat.optimizer.optimize import default_cost

        self.target = target
        self.options = options
        self.limits = limits
        self.n_programs = programs
        self.seed = seed
        self.shrink = shrink
        self.progress = progress
        self.tiles = _TileParams.of(target, facts)
        self.cost = self.tiles.extraction_cost(default_cost(target))
        self._subsets: dict[tuple[str, tuple[str, ...]], R.Group] = {}
        self.checked: dict[int, tuple[T, bool]] = {}        # term id -> (term, passed) per kernel

    # -- groups restricted to some of their rules (blame)
    def subset(self, group: R.Group, names: Sequence[str]) -> R.Group:
        key = (group.name, tuple(names))
        hit = self._subsets.get(key)
        if hit is None:
            from egglog import ruleset

            rules = tuple(r for r in group.rules if r.name in names)
            rs = ruleset(*[r.egg for r in rules], name=f"{group.name}__audit{next(_SUBSET_IDS)}")
            hit = dataclasses.replace(group, rules=rules, ruleset=rs)
            self._subsets[key] = hit
        return hit

    def run(self, graph: KernelGraph, group: R.Group, kernel: str) -> GroupRun:
        safety = self.limits.safety_seconds
        deadline = schedule_now() + safety if safety is not None else None
        return run_group(graph.egraph, group, self.limits, kernel=kernel, deadline=deadline)

    def check_stage(self, case: _KernelCase, graph: KernelGraph, group: str, previous: T, label: str,
                    first: int | None = None) -> _StageCheck:
        """Validate the e-graph after ``group``: extract the programs, decode, verify, interpret, compare."""
        from intent_eqsat import ir
        from intent_eqsat.ir.verify_errors import VerificationError
        from intent_eqsat.rules.decode import decode_kernel

        res = _StageCheck()
        export = graph.export()
        rng = random.Random(f"{self.seed}:{case.file}:{case.name}:{label}")
        progs = candidate_programs(export, previous, self.n_programs, rng, self.cost)
        decoded: list[_Program] = []
        for plabel, term in progs:
            if plabel == "default":
                res.default = term
            hit = self.checked.get(id(term))
            if hit is not None and hit[1]:
                continue                 # validated after an earlier group on the same instances
            try:
                k = decode_kernel(term, graph.kernel, graph.prov)
            except Exception as err:
                res.failure = Failure(group, case.file, case.name, "decode", plabel,
                                      f"the extracted term does not decode: {type(err).__name__}: {err}")
                return res
            module = case.module_of(k, self.tiles.decls)
            try:
                ir.verify(module)
            except VerificationError as err:
                res.failure = Failure(group, case.file, case.name, "verify", plabel,
                                      f"the extracted program fails the shared GPU verifier: {err}")
                return res
            decoded.append(_Program(plabel, term, k, module, self.tiles.bindings(k, rng)))
        res.programs = len(decoded)
        if not decoded:
            return res
        counted = 0
        order = list(range(len(case.instances)))
        if first is not None and first in order:        # the instance that failed before goes first
            order.remove(first)
            order.insert(0, first)
        for i in order:
            if i in case.skipped:
                continue
            bad: tuple[_Program, Any, dict, _Problem] | None = None
            for prog in decoded:
                binding = prog.binding(i)
                try:
                    module = prog.bound(binding, case, self.tiles)
                except VerificationError as err:
                    res.failure = Failure(group, case.file, case.name, "verify", prog.label,
                                          f"the program with tiles {_fmt_sizes(binding)} fails the shared GPU "
                                          f"verifier: {err}", tiles=dict(binding))
                    return res
                try:
                    p = case.compare(module, i)
                except _Skip:
                    case.skipped.add(i)
                    bad = None
                    break
                if p is not None:
                    bad = (prog, module, binding, p)
                    break
            if i in case.skipped:
                continue
            if bad is not None:
                if not case.usable(i):          # the constructed program fails too: not the rules' doing
                    continue
                prog, module, binding, p = bad
                inst = case.instances[i]
                res.failure = Failure(group, case.file, case.name, p.kind, prog.label, p.message, output=p.output,
                                      max_error=p.max_error, rtol=p.rtol, atol=p.atol, sizes=dict(inst.sizes),
                                      input_seed=inst.seed, tiles=dict(binding) or None, values=inst.values)
                res.failing_instance = i
                res.failing_program = module
                res.instances = counted
                return res
            counted += 1
        res.instances = counted
        for prog in decoded:
            self.checked[id(prog.term)] = (prog.term, True)
        return res

    def shrink_failure(self, case: _KernelCase, failure: Failure, module: Any) -> None:
        """Greedily shrink the failing instance's sizes while the failure persists (a few tries)."""
        if failure.sizes is None or failure.input_seed is None:
            return
        sizes = dict(failure.sizes)
        tries = 0
        improved = True
        while improved and tries < 16:
            improved = False
            for s in sorted(sizes, key=lambda s: -sizes[s]):
                v = sizes[s]
                for nv in sorted({1, v // 2, v - 1}):
                    if nv < 1 or nv >= v or tries >= 16:
                        continue
                    tries += 1
                    inst = Instance({**sizes, s: nv}, failure.input_seed, failure.values)
                    try:
                        base_ok = case.compare(case.program_kernel_module(), -1, inst) is None
                        p = case.compare(module, -1, inst) if base_ok else None
                    except _Skip:
                        continue
                    if p is not None and p.kind == failure.kind:
                        sizes[s] = nv
                        failure.output, failure.max_error = p.output, p.max_error
                        failure.rtol, failure.atol = p.rtol, p.atol
                        if p.message:
                            failure.message = p.message
                        improved = True
                        break
        failure.sizes = sizes


# ------------------------------------------------------------------------------------------------ API

def _root() -> Path:
    return Path(__file__).resolve().parents[2]


def default_corpus() -> list[str]:
    """``examples/corpus/*.kir`` of the source tree."""
    return sorted(str(p) for p in (_root() / "examples" / "corpus").glob("*.kir"))


def _rel(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _progress_fn(progress: Any) -> Callable[[str], None]:
    if progress is None or progress is False:
        return lambda msg: None
    stream: TextIO = sys.stderr if progress is True else progress

    def emit(msg: str) -> None:
        print(msg, file=stream, flush=True)

    return emit


def option_variants(options: Any) -> list[Any]:
    """Every other setting of the compile options rules read as facts (``facts.RULE_OPTIONS``): the combinations
    of numerics x online_reduction x optimization_remarks (7 besides ``options``), those one field away first,
    then each other value of an option no rule reads together with another (``facts.ALONE_OPTIONS``:
    fp32_contract, 2 more) with the rest as given. A rule gated on a non-default option
    (``OptNumerics("relaxed_normalization")``, ``OptOnline(0)``, ``OptFp32Contract("tf32")``, or two of the
    first three) fires under one of them; the audit runs the groups of rules that never fired under each in
    turn, so such a rule is validated where it applies instead of being reported as never fired (issue 25.9)."""
    from intent_eqsat.ir.core import FP32_CONTRACT, NUMERICS

    domains = {"numerics": NUMERICS, "fp32_contract": FP32_CONTRACT}
    joint = [name for name in F.RULE_OPTIONS if name not in F.ALONE_OPTIONS]
    choices = [domains.get(name, (True, False)) for name in joint]
    base = tuple(getattr(options, name) for name in joint)
    others = [combo for combo in itertools.product(*choices) if combo != base]
    # one field away first; among equals, numerics changed first (it gates the most rules)
    others.sort(key=lambda combo: (sum(a != b for a, b in zip(combo, base)), [a == b for a, b in zip(combo, base)]))
    out = [dataclasses.replace(options, **dict(zip(joint, combo))) for combo in others]
    for name in F.ALONE_OPTIONS:
        out += [dataclasses.replace(options, **{name: v}) for v in domains.get(name, (True, False))
                if v != getattr(options, name)]
    return out


def _tile_boundaries(target: Any, facts: F.Facts) -> list[int]:
    """Sizes next to the tile sizes the audit binds (t - 1, t, t + 1), and 1 and 2: the sizes where tails, masks
    and single-trip loops change. Reached when ``max_size`` / ``max_elements`` allow them."""
    tiles = _TileParams.of(target, facts)
    sizes = {1, 2}
    for dom in tiles.domains.values():
        for t in dom:
            sizes.update((t - 1, t, t + 1))
    return sorted(v for v in sizes if v >= 1)


def audit(corpus: Iterable[str] | None = None, rulebooks: Any = None, *, target: str = "sm90", options: Any = None,
          groups: Iterable[str] | None = None, examples: int = 5, programs: int = 4, seed: int = 0,
          min_size: int = 1, max_size: int = 17, max_elements: int = 64, limits: Limits | None = None,
          shrink: bool = True, progress: Any = None, variants: bool = True) -> AuditResult:
    """Audit the rules of ``rulebooks`` (see :func:`registry.load`; None: ``rulebooks/``) over ``corpus`` (``.kir``
    paths; None: ``examples/corpus``). See the module docstring for the method; ``examples`` instances per kernel,
    ``programs`` programs per group and kernel at most, ``limits`` the scheduler's (default: the optimizer's),
    ``progress``: True (stderr), a stream, or None; ``variants``: also run the groups whose rules never fired under
    each of :func:`option_variants` (in order, until all fired). Unknown rulebooks or groups raise LookupError."""
    from intent_eqsat.ir.options import make_options
    from intent_eqsat.providers.targets import get_target

    t_start = time.perf_counter()
    if examples < 1 or programs < 1:
        raise AuditUsageError("examples and programs must be at least 1")
    if min_size < 1 or max_size < min_size or max_elements < 1:
        raise AuditUsageError("sizes: need 1 <= min_size <= max_size and max_elements >= 1")
    files = [str(p) for p in corpus] if corpus is not None else default_corpus()
    if not files:
        raise AuditUsageError("no corpus files to audit")
    from intent_eqsat.optimizer import passes as P

    reg = R.load(rulebooks)
    rule_names, pass_names = P.split_names(groups)
    selected = reg.select(rule_names)
    # the post-extraction groups are audited with the built-in rulebooks when every group is (no ``groups``: they
    # run on what those make), and whenever they are named in ``groups``
    audited_passes = [P.get(n) for n in (P.names() if groups is None and rulebooks is None else pass_names)]
    tgt = get_target(target)
    opts = make_options(options)
    limits = limits or Limits()
    emit = _progress_fn(progress)
    run = _AuditRun(stats={r.name: RuleAudit(r.name, r.group, r.law, r.location) for g in selected for r in g.rules})
    for p in audited_passes:
        run.stats[p.name] = RuleAudit(p.name, p.name, p.summary, p.location)
    run.passes = audited_passes
    run.rulebooks = rulebooks
    sizes = dict(examples=examples, min_size=min_size, max_size=max_size, max_elements=max_elements)
    _audit_pass(run, files, selected, tgt, opts, limits, programs, seed, shrink, emit, sizes, variant=False)
    tried: list[dict[str, Any]] = []
    for variant in (option_variants(opts) if variants else []):
        pending = [i for i, g in enumerate(selected) if any(run.stats[r.name].fired == 0 for r in g.rules)]
        run.passes = []                  # variants are for rule groups whose rules never fired
        if not pending:
            break
        prefix = selected[:pending[-1] + 1]          # the groups before them run too: they make what those match
        before = {name: dataclasses.replace(ra, kernels=list(ra.kernels), options=list(ra.options))
                  for name, ra in run.stats.items()}
        validated_before, failures_before = dict(run.validated_kernels), len(run.failures)
        emit(f"audit: groups {', '.join(selected[i].name for i in pending)} have rules that never fired; running "
             f"them under {variant.key()}")
        _audit_pass(run, files, prefix, tgt, variant, limits, programs, seed, shrink, emit, sizes, variant=True)
        # a variant run counts only for the rules that had not fired: the others keep what the audited options
        # gave them, and a failure counts when it blames one of the new rules
        waiting = {n for n, ra in before.items() if ra.fired == 0}
        for name, ra in before.items():
            if name not in waiting:
                run.stats[name] = ra
                run.validated_kernels[name] = validated_before.get(name, 0)
        run.failures[failures_before:] = [f for f in run.failures[failures_before:] if set(f.rules) & waiting]
        newly = [n for n, ra in run.stats.items() if n in waiting and ra.fired > 0]
        tried.append({"options": variant.key(), "groups": [g.name for g in prefix], "newly_fired": newly})

    for name, ra in run.stats.items():
        ra.failures = [f for f in run.failures if name in f.rules]
        if any(f.blame in ("only rule fired", "fails alone") for f in ra.failures):
            ra.verdict = "UNSOUND"
        elif ra.failures:
            ra.verdict = "suspect"
        elif ra.fired == 0:
            ra.verdict = "never fired"
        elif run.validated_kernels.get(name, 0) == 0:
            ra.verdict = "unchecked"
        else:
            ra.verdict = "ok"
    config = {"corpus": [_rel(f) for f in files], "rulebooks": [g.path for g in selected],
              "groups": [g.name for g in selected] + [p.name for p in audited_passes],
              "rulebooks_version": reg.version, "target": tgt.name,
              "options": opts.key() if hasattr(opts, "key") else str(opts), "option_variants": tried,
              "examples": examples, "programs": programs, "seed": seed, "min_size": min_size, "max_size": max_size,
              "max_elements": max_elements, "limits": limits.as_dict(),
              "seconds": round(time.perf_counter() - t_start, 3)}
    return AuditResult(list(run.stats.values()), run.failures, run.records, config, run.errors)


@dataclass
class _AuditRun:
    """What the passes of one audit accumulate."""

    stats: dict[str, RuleAudit]
    validated_kernels: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    records: list[KernelRecord] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    #: the post-extraction groups to validate on each kernel (after its rule groups passed)
    passes: list[Any] = field(default_factory=list)
    rulebooks: Any = None


def _audit_pass(run: _AuditRun, files: list[str], selected: list[R.Group], tgt: Any, opts: Any, limits: Limits,
                programs: int, seed: int, shrink: bool, emit: Callable[[str], None], sizes: dict[str, int], *,
                variant: bool) -> None:
    """Audit ``selected`` on every kernel of ``files`` under the compile options ``opts``. A variant pass (options
    other than the audited ones) labels its kernel records, failures and the options a rule fired under."""
    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    from intent_eqsat.kir.verify import check

    the_facts = F.Facts.of(opts, tgt, None)
    auditor = _Auditor(target=tgt, options=opts, facts=the_facts, limits=limits, programs=programs, seed=seed,
                       shrink=shrink, progress=emit)
    boundaries = _tile_boundaries(tgt, the_facts)
    key = opts.key() if hasattr(opts, "key") else str(opts)
    label = f" [{key}]" if variant else ""
    # load and construct every file first (so the progress line knows the total)
    cases: list[tuple[str, Any, Any, str]] = []
    for path in files:
        shown = _rel(path)
        try:
            text = Path(path).read_text()
            module = kir.parse(text, filename=shown)
            program = construct(module, target=tgt.name, options=opts)
        except Exception as err:
            if not variant:
                run.errors.append({"where": shown, "kind": type(err).__name__, "message": str(err).splitlines()[0]
                                   if str(err) else ""})
                emit(f"audit: {shown}: not audited: {type(err).__name__}: {err}")
            continue
        for k in module.kernels:
            cases.append((shown, module, program, k.name))

    for n, (shown, module, program, kname) in enumerate(cases, 1):
        t_kernel = time.perf_counter()
        rec = KernelRecord(shown, kname, options=key if variant else None)
        run.records.append(rec)
        fired_before = {name: ra.fired for name, ra in run.stats.items()}
        failures_before = len(run.failures)
        try:
            symbols = list(check(module).kernels[kname].symbols)
            kseed = int(hashlib.sha256(f"{seed}:{Path(shown).name}:{kname}".encode()).hexdigest()[:8], 16)
            instances = draw_instances(symbols, sizes["examples"], kseed, min_size=sizes["min_size"],
                                       max_size=sizes["max_size"], max_elements=sizes["max_elements"],
                                       boundaries=boundaries)
            rec.instances = [i.as_dict() for i in instances]
            case = _KernelCase(shown, module, kname, program, instances)
            _audit_kernel(auditor, case, program.kernel(kname), selected, the_facts, rec, run.stats,
                          run.validated_kernels, run.failures)
            if run.passes and not any(st.status == "failed" for st in rec.stages):
                _audit_passes(case, run, opts, tgt, limits, rec)
            rec.skipped_instances = len(case.skipped)
        except AuditUsageError:
            raise
        except Exception as err:
            rec.error = f"{type(err).__name__}: {err}"
            run.errors.append({"where": f"{shown}:{kname}{label}", "kind": type(err).__name__, "message": str(err)})
        for f in run.failures[failures_before:]:
            f.options = key if variant else None
        for name, ra in run.stats.items():
            if ra.fired > fired_before[name] and key not in ra.options:
                ra.options.append(key)
        rec.seconds = time.perf_counter() - t_kernel
        auditor.checked.clear()
        status = rec.error or ("FAILED in " + ", ".join(s.group for s in rec.stages if s.status == "failed")
                               if any(s.status == "failed" for s in rec.stages) else "ok")
        fired = sum(len(s.rules_fired) for s in rec.stages)
        progs = sum(s.programs for s in rec.stages)
        emit(f"audit [{n}/{len(cases)}]{label} {shown}:{kname}: {fired} rule(s) fired, {progs} program(s) x "
             f"{len(rec.instances) - rec.skipped_instances} instance(s): {status} ({rec.seconds:.1f} s)")


def _audit_kernel(auditor: _Auditor, case: _KernelCase, kernel: Any, groups: list[R.Group], facts: F.Facts,
                  rec: KernelRecord, stats: dict[str, RuleAudit], validated_kernels: dict[str, int],
                  failures: list[Failure]) -> None:
    """Run ``groups`` on one kernel in PASS-3 order, validating the e-graph after each; blame on failure."""
    graph = KernelGraph(kernel)
    F.insert(graph.egraph, facts)
    for g in groups:
        if g.seed is not None:
            g.seed(graph)
    previous: T = graph.term
    key = rec.key
    for g in sorted(groups, key=lambda g: (g.order, g.name)):
        t0 = time.perf_counter()
        graph.egraph.push()
        try:
            run = auditor.run(graph, g, case.name)
            run_error = None
        except Exception as err:
            run = GroupRun(g.name, case.name, stop="error")
            run_error = f"the group fails to run: {type(err).__name__}: {err}"
        stage = StageRecord(g.name, run.stop, run.iterations, run.fired)
        rec.stages.append(stage)
        for name, m in run.fired.items():
            ra = stats.get(name)
            if ra is not None:
                ra.fired += m
                if key not in ra.kernels:
                    ra.kernels.append(key)
        if run_error is not None:
            check = _StageCheck(failure=Failure(g.name, case.file, case.name, "error", "-", run_error))
        else:
            check = auditor.check_stage(case, graph, g.name, previous, g.name)
        stage.programs, stage.instances = check.programs, check.instances
        if check.failure is None:
            stage.status = "ok" if check.programs else "unchecked"
            if check.programs:
                for name, m in run.fired.items():
                    if name in stats:
                        stats[name].validated += check.instances
                        stats[name].programs += check.programs
                        validated_kernels[name] = validated_kernels.get(name, 0) + 1
            if check.default is not None:
                previous = check.default
            stage.seconds = time.perf_counter() - t0
            continue
        # a failure: narrow it to rules on the state before the group, then stop auditing this kernel
        stage.status = "failed"
        failure = check.failure
        if auditor.shrink and check.failing_program is not None and failure.kind == "mismatch":
            auditor.shrink_failure(case, failure, check.failing_program)
        fired = [r.name for r in g.rules if run.fired.get(r.name)]
        _blame(auditor, case, graph, g, previous, fired, failure, stats, validated_kernels, check.failing_instance)
        failures.append(failure)
        stage.seconds = time.perf_counter() - t0
        break


def _audit_passes(case: _KernelCase, run: _AuditRun, opts: Any, tgt: Any, limits: Limits,
                  rec: KernelRecord) -> None:
    """Validate the post-extraction groups (:mod:`intent_eqsat.optimizer.passes`) on one kernel: the optimizer
    runs on it as it would for a user, and the program after each group that changed it is run on the instances
    and compared with the KIR reference. A group whose output is wrong on an instance where its input was right is
    UNSOUND (it is the only "rule" of its group); one whose output does not verify fails the same way."""
    from intent_eqsat.optimizer.optimize import GroupVerificationError, optimize

    seen: list[tuple[str, Any, Any]] = []
    wanted = {p.name for p in run.passes}
    locations = {p.name: p.location for p in run.passes}
    t0 = time.perf_counter()
    failed: tuple[str, Failure] | None = None
    try:
        optimize(case.program, target=tgt.name, options=opts, rulebooks=run.rulebooks, limits=limits,
                 kernels=[case.name], candidates=0,
                 observe=lambda _k, g, before, after: seen.append((g, before, after)) if g in wanted else None)
    except GroupVerificationError as err:
        if err.group in wanted:
            failed = (err.group, Failure(err.group, case.file, case.name, "verify", "bound",
                                         str(err).splitlines()[0], [err.group], [locations[err.group]],
                                         "only rule fired"))
        else:
            raise
    usable = [i for i in range(len(case.instances)) if case.usable(i)]
    key = rec.key
    for group, before, after in seen:
        changed = after is not before and _text(after) != _text(before)
        stage = StageRecord(group, "ran", 1, {group: 1} if changed else {})
        rec.stages.append(stage)
        if not changed:
            stage.status = "unchecked"
            continue
        ra = run.stats[group]
        ra.fired += 1
        if key not in ra.kernels:
            ra.kernels.append(key)
        problem = None
        for i in usable:
            try:
                got = case.compare(case.module_of(after), i)
                if got is not None and case.compare(case.module_of(before), i) is None:
                    problem = (i, got)
                    break
            except _Skip:
                continue
        stage.programs, stage.instances = 1, len(usable)
        if problem is None:
            if usable:
                ra.validated += len(usable)
                ra.programs += 1
                run.validated_kernels[group] = run.validated_kernels.get(group, 0) + 1
            stage.status = "ok" if usable else "unchecked"
            continue
        i, got = problem
        inst = case.instances[i]
        stage.status = "failed"
        run.failures.append(Failure(group, case.file, case.name, got.kind, "bound", got.message, [group],
                                    [locations[group]], "only rule fired", got.output, got.max_error, got.rtol,
                                    got.atol, dict(inst.sizes), inst.seed, values=inst.values))
        break
    if failed is not None:
        group, failure = failed
        rec.stages.append(StageRecord(group, "ran", 1, {group: 1}, status="failed"))
        run.stats[group].fired += 1
        run.failures.append(failure)
    if rec.stages:
        rec.stages[-1].seconds = time.perf_counter() - t0


def _text(kernel: Any) -> str:
    from intent_eqsat.optimizer.optimize import kernel_text

    return kernel_text(kernel)


def _blame(auditor: _Auditor, case: _KernelCase, graph: KernelGraph, group: R.Group, previous: T,
           fired: list[str], failure: Failure, stats: dict[str, RuleAudit], validated_kernels: dict[str, int],
           failure_instance: int | None = None) -> None:
    locs = {r.name: r.location for r in group.rules}

    def attempt(names: list[str], label: str) -> _StageCheck:
        graph.egraph.pop()
        graph.egraph.push()
        sub = auditor.subset(group, names)
        try:
            auditor.run(graph, sub, case.name)
        except Exception as err:
            return _StageCheck(failure=Failure(group.name, case.file, case.name, "error", "-",
                                               f"fails to run: {type(err).__name__}: {err}"))
        return auditor.check_stage(case, graph, group.name, previous, label, first=first)

    first = failure_instance
    candidates = fired or [r.name for r in group.rules]
    if len(candidates) == 1:
        failure.rules, failure.blame = candidates, "only rule fired"
    else:
        alone = []
        for name in candidates:
            c = attempt([name], f"{group.name}:{name}")
            if c.failure is not None:
                alone.append(name)
            elif c.programs:
                stats[name].validated += c.instances
                stats[name].programs += c.programs
                validated_kernels[name] = validated_kernels.get(name, 0) + 1
        if alone:
            failure.rules, failure.blame = alone, "fails alone"
        else:
            needed = []
            for name in candidates:
                rest = [r.name for r in group.rules if r.name != name]
                c = attempt(rest, f"{group.name}:-{name}")
                if c.failure is None:
                    needed.append(name)
            if needed:
                failure.rules, failure.blame = needed, "needed for the failure"
    failure.locations = [locs.get(r, "") for r in failure.rules]
    auditor.checked.clear()


__all__ = ["audit", "AuditResult", "RuleAudit", "Failure", "KernelRecord", "StageRecord", "Instance",
           "draw_instances", "candidate_programs", "default_corpus", "AuditUsageError", "VERDICTS"]
