"""One transformation group alone on a GPU IR program, and golden tests of it (issue 22 item 5, STYLE item 3, the
xDSL filecheck habit): ``intent-eqsat opt FILE.gir --group NAME``.

A golden case file (``tests/golden/<group>/<case>.gir``) holds one or more cases split by a line ``# -----``.
Each case is::

    # RUN: group=blocking target=sm90 options=numerics=relaxed_normalization [sizes=M=4096] [after=G1,G2]
    module target "sm90" { ... }          <- the input program (the GPU IR text form)
    # CHECK: module target "sm90" {       <- the program after that group alone, every line
    # CHECK:   ...
    # CHECK-REMARK: ...                   <- (optional) a remark the group must make (a negative case)

Other ``#`` lines are comments. :func:`check_file` runs each case's group alone on its input (:func:`apply_group`)
and compares the printed result with the ``CHECK`` lines exactly; :func:`update_file` rewrites them (review the
diff). :func:`case_from_kir` makes a case from a ``.kir`` kernel: the input is the program that group sees in the
full pipeline (the extraction after the rule group before it, or the bound program before a post-extraction
group), the expected lines are what the group makes of it.

"Alone": a rule group runs on a fresh e-graph of the input and the result is the extraction with the optimizer's
cost (tile parameters unbound, declared in the module's params); a post-extraction group runs its function on
each kernel; ``tile_binding`` binds by the cost model as the optimizer does. The result is
verified by the shared verifier either way. ``after=G1,G2`` in a RUN line runs those rule groups first in the
same e-graph, for a group whose rules match only forms another group adds as alternatives (``online_tiles`` lifts
the one-pass loop ``online`` makes of the blocked rows).
"""
from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from intent_eqsat import ir
from intent_eqsat.errors import IntentError, SourceLocation
from intent_eqsat.ir.core import Kernel, Module

SEPARATOR = "# -----"
RUN = "# RUN:"
CHECK = "# CHECK:"
CHECK_REMARK = "# CHECK-REMARK:"


class GoldenError(IntentError):
    """A golden case file that cannot be read: no RUN line, an unknown RUN field, an input that does not parse."""


@dataclass
class GroupOutput:
    """One group's output on a program: the module after it and the remarks it made."""

    module: Module
    remarks: list[str] = field(default_factory=list)

    def text(self) -> str:
        return ir.print_module(self.module)


def _tile_decls(kernels: Sequence[Kernel], target: str) -> list[Any]:
    """The declarations of the tile parameters these kernels still use (what the verifier needs to accept them)."""
    from intent_eqsat.optimizer import tiles
    from intent_eqsat.providers.targets import get_target

    used = {n for k in kernels for n in tiles.used(k)}
    return [d for d in tiles.decls(tiles.domains(get_target(target), (32, 64, 128))) if d.name in used]


def apply_group(program: Module, group: str, *, target: str | None = None, options: Any = None,
                rulebooks: Any = None, sizes: Mapping[str, int] | None = None,
                after: Sequence[str] = ()) -> GroupOutput:
    """Run ``group`` (a rule group of ``rulebooks`` or a post-extraction group) alone on every kernel of
    ``program`` and return the verified result. ``after``: rule groups run first in the same e-graph (a group
    whose rules match forms that only an earlier group's alternatives hold, e.g. ``online_tiles`` after
    ``blocking, reduction, online``); the output is still the extraction after ``group``. Unknown group names
    raise LookupError."""
    from intent_eqsat.optimizer import passes as P
    from intent_eqsat.optimizer.optimize import default_cost, optimize
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.rules import registry

    from intent_eqsat.ir.options import make_options

    target_name = target or program.target
    opts = make_options(options) if options is not None else program.options
    if group in P.names() and P.get(group).run is not None:
        p = P.get(group)
        ctx = P.PassContext(opts, get_target(target_name).l2_bytes)
        kernels = [p.run(k, ctx) for k in program.kernels]
        out = Module(target_name, opts, list(program.params), kernels)
        ir.verify(out)
        return GroupOutput(out)
    if group not in P.names():
        registry.load(rulebooks).group(group)
    cost = None
    if sizes:
        from intent_eqsat.extract.cost import RooflineCost
        cost = RooflineCost(get_target(target_name), {str(k): int(v) for k, v in sizes.items()})
    outputs: dict[str, Kernel] = {}

    def observe(kernel: str, name: str, before: Kernel, result: Kernel) -> None:
        if name == group:
            outputs[kernel] = result
    if after and group in P.names():
        raise LookupError(f"after= runs rule groups before a rule group; {group!r} is a post-extraction group")
    res = optimize(program, target=target_name, options=opts, rulebooks=rulebooks, groups=[*after, group],
                   cost=cost or default_cost(get_target(target_name)), candidates=0, observe=observe)
    kernels = [outputs.get(k.name, k) for k in program.kernels]
    params = [d for d in program.params if d.name not in {t.name for t in _tile_decls(kernels, target_name)}]
    out = Module(target_name, res.program.options, params + _tile_decls(kernels, target_name), kernels)
    ir.verify(out)
    return GroupOutput(out, [str(r) for r in res.remarks])


# ------------------------------------------------------------------------------------------------ case files

@dataclass
class Case:
    """One case of a golden file: where it starts, its RUN fields, its input text and expected lines."""

    path: str
    line: int                          #: 1-based line of the RUN line
    run: dict[str, str]
    input_lines: list[tuple[int, str]]   #: (line number, text)
    expected: list[str]
    remarks: list[str]

    @property
    def group(self) -> str:
        return self.run["group"]

    def where(self) -> SourceLocation:
        return SourceLocation(self.path, self.line, 1)

    def program(self) -> Module:
        """The input module, parsed with the file's own line numbers (a parse error points into the file)."""
        first = self.input_lines[0][0] if self.input_lines else self.line
        text = "\n" * (first - 1) + "\n".join(t for _, t in self.input_lines) + "\n"
        return ir.parse_module(text, filename=self.path)

    def options(self) -> Any:
        if "options" not in self.run:
            return None
        from intent_eqsat.ir.options import make_options
        return make_options(dict(kv.split("=", 1) for kv in self.run["options"].split(",")))

    def sizes(self) -> dict[str, int] | None:
        if "sizes" not in self.run:
            return None
        return {k: int(v) for k, v in (kv.split("=", 1) for kv in self.run["sizes"].split(","))}

    def output(self, rulebooks: Any = None) -> GroupOutput:
        after = [g for g in self.run.get("after", "").split(",") if g]
        return apply_group(self.program(), self.group, target=self.run.get("target"), options=self.options(),
                           rulebooks=rulebooks, sizes=self.sizes(), after=after)


RUN_FIELDS = ("group", "target", "options", "sizes", "after")


def parse_cases(text: str, path: str) -> list[Case]:
    """The cases of a golden file (:class:`GoldenError` located at the offending line when malformed)."""
    cases: list[Case] = []
    chunk: list[tuple[int, str]] = []

    def close() -> None:
        if not any(t.strip() for _, t in chunk):
            return
        runs = [(n, t) for n, t in chunk if t.startswith(RUN)]
        if len(runs) != 1:
            n = runs[1][0] if runs else chunk[0][0]
            raise GoldenError(f"a case needs exactly one '{RUN}' line (found {len(runs)})",
                              SourceLocation(path, n, 1))
        n, line = runs[0]
        fields: dict[str, str] = {}
        for item in shlex.split(line[len(RUN):]):
            key, sep, value = item.partition("=")
            if not sep or key not in RUN_FIELDS:
                raise GoldenError(f"RUN field {item!r}: expected one of {', '.join(f + '=' for f in RUN_FIELDS)}",
                                  SourceLocation(path, n, 1))
            fields[key] = value
        if "group" not in fields:
            raise GoldenError("the RUN line names no group (group=NAME)", SourceLocation(path, n, 1))
        expected = [t[len(CHECK):].removeprefix(" ") for _, t in chunk if t.startswith(CHECK)]
        remarks = [t[len(CHECK_REMARK):].strip() for _, t in chunk if t.startswith(CHECK_REMARK)]
        body = [(m, t) for m, t in chunk if not t.lstrip().startswith("#")]
        while body and not body[-1][1].strip():
            body.pop()
        cases.append(Case(path, n, fields, body, expected, remarks))

    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() == SEPARATOR:
            close()
            chunk = []
        else:
            chunk.append((number, line))
    close()
    if not cases:
        raise GoldenError(f"no case (a case starts with a '{RUN}' line)", SourceLocation(path, 1, 1))
    return cases


@dataclass
class CaseResult:
    case: Case
    got: list[str]
    remarks: list[str]
    missing_remarks: list[str]

    @property
    def ok(self) -> bool:
        return self.got == self.case.expected and not self.missing_remarks

    def diff(self) -> str:
        lines = list(difflib.unified_diff([line + "\n" for line in self.case.expected],
                                          [line + "\n" for line in self.got],
                                          fromfile=f"{self.case.path}:{self.case.line} expected",
                                          tofile=f"after group {self.case.group}"))
        lines += [f"missing remark: {r}\n" for r in self.missing_remarks]
        return "".join(lines)


def check_file(path: str | Path, rulebooks: Any = None) -> list[CaseResult]:
    """Run every case of a golden file; each result says whether it matched (and the diff when not)."""
    cases = parse_cases(Path(path).read_text(), str(path))
    out = []
    for case in cases:
        result = case.output(rulebooks)
        got = result.text().rstrip("\n").split("\n")
        missing = [r for r in case.remarks if not any(r in m for m in result.remarks)]
        out.append(CaseResult(case, got, result.remarks, missing))
    return out


def render_case(run: Mapping[str, str], program: Module, output: GroupOutput, remarks: Sequence[str] = ()) -> str:
    """A case's text: RUN line, input program, CHECK lines (and CHECK-REMARK lines)."""
    fields = " ".join(f"{k}={shlex.quote(v)}" for k, v in run.items())
    lines = [f"{RUN} {fields}", ir.print_module(program).rstrip("\n")]
    lines += [f"{CHECK} {line}".rstrip() for line in output.text().rstrip("\n").split("\n")]
    lines += [f"{CHECK_REMARK} {r}" for r in remarks]
    return "\n".join(lines) + "\n"


def update_file(path: str | Path, rulebooks: Any = None) -> int:
    """Rewrite the CHECK lines of every case with what the group now prints (the inputs, RUN lines, comments and
    CHECK-REMARK lines stay); returns how many cases changed."""
    path = Path(path)
    text = path.read_text()
    results = check_file(path, rulebooks)
    chunks = re.split(r"^# -----[ \t]*$\n?", text, flags=re.M)
    out_chunks, changed = [], 0
    results_iter = iter(results)
    for chunk in chunks:
        if RUN not in chunk:
            out_chunks.append(chunk)
            continue
        res = next(results_iter)
        changed += not res.ok
        kept = [line for line in chunk.rstrip("\n").split("\n") if not line.startswith(CHECK)]
        remarks = [line for line in kept if line.startswith(CHECK_REMARK)]
        kept = [line for line in kept if not line.startswith(CHECK_REMARK)]
        while kept and not kept[-1].strip():
            kept.pop()
        new = kept + [f"{CHECK} {line}".rstrip() for line in res.got] + remarks
        out_chunks.append("\n".join(new) + "\n")
    from intent_eqsat.atomic import write_atomic
    write_atomic(path, (SEPARATOR + "\n").join(out_chunks))
    return changed


def case_from_kir(kir_path: str | Path, group: str, *, kernel: str | None = None, target: str = "sm90",
                  options: Any = None, rulebooks: Any = None, sizes: Mapping[str, int] | None = None) -> str:
    """A golden case for ``group`` from a KIR kernel: the input is the program the group sees in the full
    pipeline, the CHECK lines what the group alone makes of it."""
    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    from intent_eqsat.ir.options import make_options
    from intent_eqsat.optimizer import passes as P
    from intent_eqsat.optimizer.optimize import default_cost, optimize
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.rules import registry

    if group not in P.names():
        registry.load(rulebooks).group(group)
    opts = make_options(options)
    cost = default_cost(get_target(target))
    if sizes:
        from intent_eqsat.extract.cost import RooflineCost
        cost = RooflineCost(get_target(target), {str(k): int(v) for k, v in sizes.items()})
    module = kir.parse(Path(kir_path).read_text(), filename=str(kir_path))
    program = construct(module, target=target, options=opts)
    name = kernel or module.kernels[0].name
    seen: dict[str, Kernel] = {}

    def observe(k: str, g: str, before: Kernel, after: Kernel) -> None:
        if g == group:
            seen["before"] = before
    optimize(program, target=target, options=opts, rulebooks=rulebooks, kernels=[name], candidates=0,
             cost=cost, observe=observe)
    if "before" not in seen:
        raise LookupError(f"group {group!r} does not run on kernel {name} (not selected by these rulebooks)")
    before = seen["before"]
    params = [d for d in program.params if d.name not in {t.name for t in _tile_decls([before], target)}]
    source = Module(target, opts, params + _tile_decls([before], target), [before])
    ir.verify(source)
    source = ir.parse_module(ir.print_module(source))       # the case holds the text form: start from it
    run = {"group": group, "target": target}
    if options:
        run["options"] = ",".join(f"{k}={v}" for k, v in dict(options).items())
    if sizes:
        run["sizes"] = ",".join(f"{k}={v}" for k, v in sizes.items())
    output = apply_group(source, group, target=target, options=opts, rulebooks=rulebooks, sizes=sizes)
    return render_case(run, source, output)


__all__ = ["apply_group", "GroupOutput", "Case", "CaseResult", "GoldenError", "parse_cases", "check_file",
           "update_file", "render_case", "case_from_kir", "SEPARATOR", "RUN", "CHECK", "CHECK_REMARK"]
