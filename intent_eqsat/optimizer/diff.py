"""IR diffs per transformation group (issue 4 item 5, SPEC PASS-7 "real IR diff before/after").

For each kernel the optimizer runs the groups in PASS-3 order; after each group it extracts the current best
program, decodes and verifies it. ``diff`` keeps each of those programs as text and shows, per group, the unified
diff between the program before the group and after it - what a rule author reads::

    intent-eqsat diff gemm.kir --group blocking
    >>> print(diff(program, group="blocking").text())

The program before the first group is the input (the constructed program); the extraction uses the same cost
function as :func:`optimize`, so "after group X" is the program the optimizer would emit if it stopped there.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from intent_eqsat.ir.core import Module


@dataclass(frozen=True)
class GroupDiff:
    kernel: str
    group: str
    before: str
    after: str
    stop: str = ""
    rules_fired: dict = field(default_factory=dict)
    remark: str | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(keepends=True),
                                            self.after.splitlines(keepends=True),
                                            fromfile=f"{self.kernel} before {self.group}",
                                            tofile=f"{self.kernel} after {self.group}"))

    def text(self) -> str:
        fired = ", ".join(f"{n} x{c}" for n, c in sorted(self.rules_fired.items())) or "no rule matched"
        head = f"=== kernel {self.kernel}, group {self.group} ({self.stop}; {fired})"
        lines = [head]
        if self.remark:
            lines.append(f"remark: {self.remark}")
        lines.append(self.diff.rstrip("\n") if self.changed else "(program unchanged)")
        return "\n".join(lines) + "\n"


@dataclass
class DiffReport:
    diffs: list[GroupDiff]
    result: Any = field(default=None, repr=False)     # the OptimizeResult behind it

    def text(self) -> str:
        if not self.diffs:
            return "no transformation group ran\n"
        return "\n".join(d.text() for d in self.diffs)

    def for_group(self, group: str) -> list[GroupDiff]:
        return [d for d in self.diffs if d.group == group]

    def __iter__(self):
        return iter(self.diffs)


def diff(program: Module, *, group: str | None = None, kernel: str | None = None, only: bool = False,
         target: str | None = None, options: Any = None, rulebooks: Any = None, **kwargs: Any) -> DiffReport:
    """Per group unified diffs of each kernel's program. ``group`` keeps only that group's diff (the groups before
    it still run, in PASS-3 order, so "before" is what that group really sees; ``only=True`` runs just that group);
    ``kernel`` keeps one kernel. Unknown group or kernel names raise LookupError. Other keyword arguments go to
    :func:`intent_eqsat.optimizer.optimize.optimize`."""
    from intent_eqsat.rules import registry
    from intent_eqsat.optimizer.optimize import optimize

    from intent_eqsat.optimizer import passes

    reg = registry.load(rulebooks)
    if group is not None:
        names = reg.names + passes.names()       # the post-extraction groups run after every rule group
        if group not in passes.names():
            reg.group(group)
        kwargs["groups"] = [group] if only else names[: names.index(group) + 1]
    if kernel is not None:
        if not any(k.name == kernel for k in program.kernels):
            _no_kernel(kernel, program)
        kwargs["kernels"] = [kernel]
    kwargs.setdefault("candidates", 0)
    res = optimize(program, target=target, options=options, rulebooks=rulebooks, snapshots=True, **kwargs)
    out: list[GroupDiff] = []
    for kr in res.kernels.values():
        runs = {r.group: r for r in kr.runs}
        for (_, before), (stage, after) in zip(kr.snapshots, kr.snapshots[1:]):
            if group is not None and stage != group:
                continue
            run = runs.get(stage)
            out.append(GroupDiff(kr.name, stage, before, after, run.stop if run else "",
                                 run.fired if run else {}, run.remark if run else None))
    return DiffReport(out, res)


def _no_kernel(name: str, program: Module) -> None:
    raise LookupError(f"no kernel named {name!r} (kernels: {', '.join(k.name for k in program.kernels)})")


__all__ = ["diff", "DiffReport", "GroupDiff"]
