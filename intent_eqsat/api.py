"""The public Python API: :func:`compile` (KIR -> verified, optimized GPU program -> provider source) and
:func:`optimize` (the same without serializing).

>>> import intent_eqsat
>>> ck = intent_eqsat.compile("examples/corpus/gemm.kir", target="sm90", provider="triton")  # doctest: +SKIP
>>> print(ck.source)            # the generated Triton module                               # doctest: +SKIP
>>> ck(A=a, B=b, C=c)           # launch on torch tensors (writes C; returns {"C": c})      # doctest: +SKIP
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Mapping

from intent_eqsat import ir, kir, pipeline
from intent_eqsat.ir.core import CompileOptions


@dataclass(eq=False)
class CompiledKernel:
    """A compiled KIR module: the verified program, the generated source and what the optimizer reported.

    ``program`` is the program that was serialized (the extracted one; the constructed one until the optimizer
    exists). ``sources`` maps every kernel of the module to its generated source; ``kernel_name`` is the kernel
    that ``source`` and calling the object refer to (the one asked for, else the module's first)."""

    program: ir.Module
    sources: dict[str, str]
    kernel_name: str
    provider: str
    target: str
    options: CompileOptions
    cost: Any = None
    candidates: list = field(default_factory=list)
    remarks: list = field(default_factory=list)
    report: dict = field(default_factory=dict)
    kir: "kir.KirModule | None" = None
    constructed: "ir.Module | None" = None
    optimizer_available: bool = False
    optimizer_status: str = "unavailable"     # "ran" | "unavailable" | "skipped"
    #: kernel name -> its KIR specializations (SPEC IR-2, ``compile(specialize=...)``), each with its own program;
    #: the kernel's source holds them and its ``launch()`` dispatches on the symbol values
    specializations: dict = field(default_factory=dict)
    _optimizer_result: Any = field(default=None, repr=False)

    # ------------------------------------------------------------------------------------------------ views
    @property
    def source(self) -> str:
        """The generated source of :attr:`kernel_name`."""
        return self.sources[self.kernel_name]

    @property
    def kernels(self) -> list[str]:
        return list(self.sources)

    @property
    def predicted_cost(self) -> float | None:
        """:attr:`cost` as a number (None when the optimizer did not run)."""
        return pipeline.cost_total(self.cost)

    @property
    def egraph_size(self) -> int | None:
        return pipeline.egraph_size(self.report)

    @property
    def rules_fired(self) -> dict:
        return dict(pipeline.report_value(self.report, "rules_fired", "rule_counts") or {})

    @property
    def groups(self) -> list:
        return list(pipeline.report_value(self.report, "groups", "groups_run") or [])

    # ---------------------------------------------------------------------------------------------- explain
    def explain(self) -> str:
        """Why this program: its cost breakdown against the runner-up's, or why that cannot be shown."""
        head = (f"kernel {self.kernel_name} (target {self.target}, provider {self.provider}, "
                f"options {self.options.key()})")
        lines = [head]
        if self.optimizer_status != "ran":
            why = ("optimization was skipped (optimize=False)" if self.optimizer_status == "skipped"
                   else pipeline.NO_OPTIMIZER_MESSAGE)
            lines.append(f"no cost explanation: {why}; the constructed program (SPEC PASS-3.1) was serialized as "
                         f"is, so no cost model ran and there is no runner-up.")
            lines.extend(f"remark: {r}" for r in self.remarks)
            return "\n".join(lines) + "\n"
        own = getattr(self._optimizer_result, "explain", None)
        chosen = pipeline.cost_total(self.cost)
        if chosen is None:
            lines.append("no cost explanation: the optimizer returned no cost for the chosen program.")
        else:
            lines.append(f"chosen program: predicted cost {_num(chosen)}")
            runner = self.candidates[0] if self.candidates else None
            runner_cost = getattr(runner, "cost", runner) if runner is not None else None
            runner_total = pipeline.cost_total(runner_cost)
            if runner is None:
                lines.append("no runner-up: the extractor returned a single candidate.")
            elif runner_total is None:
                lines.append("runner-up: its cost is unknown.")
            else:
                delta = runner_total - chosen
                rel = f" ({delta / chosen:+.1%})" if chosen not in (0.0,) and abs(chosen) != float("inf") else ""
                lines.append(f"runner-up: predicted cost {_num(runner_total)}, {_num(delta)} more{rel}")
                params = getattr(runner, "params", None)
                if params:
                    lines.append(f"runner-up parameters: {dict(params)}")
            mine = pipeline.cost_breakdown(self.cost)
            theirs = pipeline.cost_breakdown(runner_cost) if runner is not None else {}
            terms = list(mine) + [t for t in theirs if t not in mine]
            if terms:
                w = max(len("term"), *(len(t) for t in terms))
                lines.append("")
                lines.append(f"{'term':<{w}}  {'chosen':>14}  {'runner-up':>14}  {'delta':>14}")
                for t in terms:
                    a, b = mine.get(t), theirs.get(t)
                    d = (b - a) if a is not None and b is not None else None
                    lines.append(f"{t:<{w}}  {_num(a):>14}  {_num(b):>14}  {_num(d):>14}")
            else:
                lines.append("no cost breakdown: the cost model gave a total only.")
        if callable(own):
            lines.append("")
            lines.append(str(own()).rstrip("\n"))
        lines.extend(f"remark: {r}" for r in self.remarks)
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------------------------------------ launch
    def load(self, kernel: str | None = None, out_dir: "str | os.PathLike[str] | None" = None) -> ModuleType:
        """Write the generated module (content-addressed, atomically) and import it (see providers.loader)."""
        from intent_eqsat.providers import loader

        name = kernel or self.kernel_name
        return loader.load_source(self.sources[name], out_dir or generated_dir(), name)

    def launch(self, kernel: str | None = None, /, **tensors: Any) -> dict[str, Any]:
        """Launch one kernel of the module on torch tensors (views) and numbers (scalars), by parameter name.

        Returns the written views (``out``/``inout``) by name; they are updated in place."""
        name = kernel or self.kernel_name
        mod = self.load(name)
        launch = getattr(mod, "launch", None)
        if not callable(launch):
            raise TypeError(f"the generated {self.provider} module for {name} has no launch()")
        args = _launch_args(launch, tensors, self.program.kernel(name))
        launch(**args)
        k = self.program.kernel(name)
        return {a.name: tensors[a.name] for a in k.abi
                if a.is_view and not a.private and a.access in ("write", "readwrite") and a.name in tensors}

    def __call__(self, **tensors: Any) -> dict[str, Any]:
        return self.launch(None, **tensors)

    def __repr__(self) -> str:
        cost = pipeline.cost_total(self.cost)
        return (f"CompiledKernel({self.kernel_name!r}, provider={self.provider!r}, target={self.target!r}, "
                f"cost={cost!r}, kernels={self.kernels!r})")


_LAUNCH_CONTROL = ("params", "num_warps", "num_stages")


def _launch_args(launch: Any, tensors: Mapping[str, Any], kernel: ir.Kernel) -> dict[str, Any]:
    """Map the user's parameter names onto the launcher's (the serializer renames reserved names with ``_``)."""
    import inspect

    sig = inspect.signature(launch)
    names = [p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY) and p.name not in _LAUNCH_CONTROL]
    public = [a.name for a in kernel.abi if not a.private or (not a.is_view and a.producer is None)]
    out: dict[str, Any] = {}
    used: set[str] = set()
    for ident, abi_name in zip(names, public):
        for key in (abi_name, ident):
            if key in tensors:
                out[ident] = tensors[key]
                used.add(key)
                break
    missing = [abi for ident, abi in zip(names, public) if ident not in out]
    extra = [k for k in tensors if k not in used and k not in _LAUNCH_CONTROL]
    if missing or extra:
        raise TypeError(f"kernel {kernel.name} takes {', '.join(public)}"
                        + (f"; missing {', '.join(missing)}" if missing else "")
                        + (f"; unexpected {', '.join(extra)}" if extra else ""))
    for key in _LAUNCH_CONTROL:
        if key in tensors:
            out[key] = tensors[key]
    return out


def generated_dir() -> str:
    """Where :meth:`CompiledKernel.load` writes generated modules (``$INTENT_EQSAT_GENERATED_DIR`` or a
    per-user temp folder)."""
    env = os.environ.get("INTENT_EQSAT_GENERATED_DIR")
    if env:
        return env
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"intent-eqsat-{uid}", "generated")


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x == float("inf") or x == float("-inf"):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def _select_kernel(module: kir.KirModule, kernel: str | None) -> str:
    names = [k.name for k in module.kernels]
    if not names:
        raise pipeline.UsageError(f"{module.filename or '<string>'}: the module has no kernel")
    if kernel is None:
        return names[0]
    if kernel not in names:
        raise pipeline.UsageError(f"no kernel named {kernel!r} (have: {', '.join(names)})")
    return kernel


def compile(source: "str | os.PathLike[str] | kir.KirModule", *, target: str = "sm90", provider: str = "triton",
            options: "CompileOptions | Mapping[str, Any] | None" = None, rulebooks: Any = None,
            kernel: str | None = None, filename: str | None = None, optimize: bool = True,
            sizes: Mapping[str, int] | None = None, calibration: Any = None,
            specialize: "Mapping[str, Any] | str | None" = None, budget: Any = None) -> CompiledKernel:
    """Compile ``.kir`` text, a ``.kir`` path or a KIR module for ``target`` with ``provider``.

    Stages: load, KIR verify, construct, optimize (the e-graph optimizer when available; ``optimize=False``
    serializes the constructed program), GPU IR verify, serialize. ``sizes`` (e.g. ``{"M": 4096, "N": 4096,
    "K": 4096}``) tells the cost model the problem to be fastest for: block sizes are chosen for it (the program
    stays correct for every size). ``calibration`` (tuning file path(s) written by ``bench/tile_sweep.py``, or a
    :class:`~intent_eqsat.extract.calibration.Calibration`): measured times of this program structure at these
    sizes re-rank the block sizes and bind the measured launch resources. ``specialize`` (e.g. ``{"D": (64, 128)}``):
    size symbols expected to take a few values get one more physical kernel per value (SPEC IR-2: the symbol is a
    literal extent there, compiled and tuned on its own); the launcher runs it when the shapes give that value and
    the general kernel otherwise. ``budget`` (e.g. ``{"iterations": 60, "nodes": 400000}``, a
    :class:`~intent_eqsat.rules.schedule.Limits` or ``"iterations=60"``): the e-graph search budget of each kernel,
    in deterministic units (group iterations, e-graph rows, matches), so the same call gives the same program on
    any machine under any load; ``report["budget"]`` records it. Its ``safety_seconds`` is the wall-clock safety net
    (a :class:`~intent_eqsat.errors.SearchTimeout` when crossed). Errors are the layers' own typed errors (all
    :class:`~intent_eqsat.errors.IntentError`), carrying ``.stage`` and ``.kir_location``."""
    res = pipeline.run(source, target=target, provider=provider, options=options, rulebooks=rulebooks,
                       filename=filename, optimize_program=optimize, sizes=sizes, calibration=calibration,
                       specialize=specialize, budget=budget)
    opt = res.optimized
    report = dict(opt.report)
    if "phases" in report:
        report["optimize_phases"] = report.pop("phases")
    report["phases"] = dict(res.timings)
    report["optimizer_available"] = opt.available
    report["optimizer_status"] = opt.status
    return CompiledKernel(program=res.program, sources=res.sources, kernel_name=_select_kernel(res.kir, kernel),
                          provider=provider, target=res.target, options=res.options, cost=opt.cost,
                          candidates=list(opt.candidates), remarks=list(opt.remarks), report=report, kir=res.kir,
                          constructed=res.constructed, optimizer_available=opt.available,
                          optimizer_status=opt.status, specializations=dict(res.specializations),
                          _optimizer_result=opt.raw)


def optimize(source: "str | os.PathLike[str] | kir.KirModule", *, target: str = "sm90",
             options: "CompileOptions | Mapping[str, Any] | None" = None, rulebooks: Any = None,
             filename: str | None = None, sizes: Mapping[str, int] | None = None,
             calibration: Any = None, budget: Any = None) -> ir.Module:
    """The extracted, verified GPU program, not serialized (``sizes``, ``calibration``, ``budget``: as for
    :func:`compile`)."""
    return pipeline.run(source, target=target, provider=None, options=options, rulebooks=rulebooks,
                        filename=filename, sizes=sizes, calibration=calibration, budget=budget).program


__all__ = ["CompiledKernel", "compile", "optimize", "generated_dir"]
