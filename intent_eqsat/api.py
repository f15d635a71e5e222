"""The public Python API: :func:`compile` (KIR -> verified, optimized GPU program -> provider source) and
:func:`optimize` (the same without serializing).

>>> import intent_eqsat
>>> ck = intent_eqsat.compile("examples/corpus/gemm.kir", target="sm90", provider="triton")  # doctest: +SKIP
>>> print(ck.source)            # the generated Triton module                               # doctest: +SKIP
>>> c = ck(a, b)                # like a torch function: allocates and returns the out view C   # doctest: +SKIP
>>> ck(a, b, c)                 # or writes a C you pass                                       # doctest: +SKIP
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

from intent_eqsat import calling, compile_cache, ir, kir, pipeline
from intent_eqsat.ir.core import CompileOptions
from intent_eqsat.progress import CompileProgress

_LOG = logging.getLogger("intent_eqsat.api")


@dataclass(eq=False)
class CompiledKernel:
    """A compiled KIR module: the verified program, the generated source and what the optimizer reported.

    ``program`` is the program that was serialized (the extracted one; the constructed one until the optimizer
    exists). ``sources`` maps every kernel compiled to its generated source (every kernel of the module, or the
    one ``compile(kernel=...)`` asked for); ``kernel_name`` is the kernel that ``source`` and calling the object
    refer to (the one asked for, else the module's first)."""

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
    optimizer_status: str = "ran"     # "ran" | "skipped" (optimize=False)
    #: kernel name -> its KIR specializations (SPEC IR-2, ``compile(specialize=...)``), each with its own program;
    #: the kernel's source holds them and its ``launch()`` dispatches on the symbol values
    specializations: dict = field(default_factory=dict)
    #: kernel name -> the launch resources its source was printed with (``LaunchResources``: threads, stages,
    #: index width; side information beside ``program``, issue 22 item 3); a kernel absent: the provider's defaults
    launch_resources: dict = field(default_factory=dict)
    #: the KIR source text compiled (what the cache key and a pickle hold)
    kir_text: str | None = None
    #: the optimizer's own account of the search, as text (kept when the optimizer's result object is not: a
    #: kernel restored from the cache or a pickle)
    optimizer_explain: str | None = None
    _optimizer_result: Any = field(default=None, repr=False)
    #: per kernel: the imported generated module and its call plan (process-local: not pickled, not cached)
    _modules: dict = field(default_factory=dict, repr=False)
    _plans: dict = field(default_factory=dict, repr=False)

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
            lines.append("no cost explanation: optimization was skipped (optimize=False); the constructed program "
                         "(SPEC PASS-3.1) was serialized as is, so no cost model ran and there is no runner-up.")
            lines.extend(f"remark: {r}" for r in self.remarks)
            return "\n".join(lines) + "\n"
        own = getattr(self._optimizer_result, "explain", None)
        chosen = pipeline.cost_total(self.cost)
        facts = (self.report.get("kernels") or {}).get(self.kernel_name) or {}
        if chosen is None:
            lines.append("no cost explanation: the optimizer returned no cost for the chosen program.")
        else:
            lines.append(f"chosen program: predicted {_seconds(chosen)} per launch on {self.target} "
                         f"({_sizes_text(self.report.get('sizes'), self.report.get('assumed_sizes'))})")
            bound = _binding_text(facts.get("binding"), facts.get("resources"))
            if bound:
                lines.append(f"bound: {bound}")
            lines.extend(_buckets_text(facts.get("size_buckets")))
            mine_k = [c for c in self.candidates if getattr(c, "kernel", None) in (None, self.kernel_name)]
            runner = mine_k[0] if mine_k else None
            runner_cost = getattr(runner, "cost", runner) if runner is not None else None
            runner_total = pipeline.cost_total(runner_cost)
            if runner is None:
                lines.append("no runner-up: the extractor returned a single candidate.")
            elif runner_total is None:
                lines.append("runner-up: its cost is unknown.")
            else:
                delta = runner_total - chosen
                rel = f" ({delta / chosen:+.1%})" if chosen not in (0.0,) and abs(chosen) != float("inf") else ""
                lines.append(f"runner-up: predicted {_seconds(runner_total)}, {_seconds(delta)} more{rel}")
                params = getattr(runner, "params", None)
                if params:
                    lines.append(f"runner-up parameters: {dict(params)}")
            mine = pipeline.cost_breakdown(self.cost)
            theirs = {}
            if runner is not None:
                theirs = pipeline.cost_breakdown(runner_cost) or dict(getattr(runner, "breakdown", None) or {})
            terms = list(mine) + [t for t in theirs if t not in mine]
            if terms:
                w = max(len("term"), *(len(t) for t in terms))
                lines.append("")
                lines.append("the cost model's terms of the bound programs (t_*: seconds; bytes; flops; counts)"
                             + ("" if theirs else "; the runner-up's were not kept (another program structure)"))
                lines.append(f"{'term':<{w}}  {'chosen':>14}  {'runner-up':>14}  {'delta':>14}")
                for t in terms:
                    a, b = mine.get(t), theirs.get(t)
                    d = (b - a) if a is not None and b is not None else None
                    lines.append(f"{t:<{w}}  {_num(a):>14}  {_num(b):>14}  {_num(d):>14}")
            else:
                lines.append("no cost breakdown: the cost model gave a total only.")
        own_text = str(own()) if callable(own) else self.optimizer_explain
        if own_text:
            lines.append("")
            lines.append(own_text.rstrip("\n"))
        lines.extend(f"remark: {r}" for r in self.remarks)
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------------------------------------ launch
    def load(self, kernel: str | None = None, out_dir: "str | os.PathLike[str] | None" = None) -> ModuleType:
        """Write the generated module (content-addressed, atomically) and import it (see providers.loader); the
        module of the default folder is kept, so later calls do not hash or read the source again."""
        from intent_eqsat.providers import loader

        name = kernel or self.kernel_name
        if out_dir is not None:
            return loader.load_source(self.sources[name], out_dir, name)
        mod = self._modules.get(name)
        if mod is None:
            mod = self._modules[name] = loader.load_source(self.sources[name], generated_dir(), name)
        return mod

    def __post_init__(self) -> None:
        if "torch" in sys.modules and self.kir is not None:
            known = {k.name for k in self.kir.kernels}
            for name in self.sources:        # register the custom ops now: torch.compile cannot while tracing
                if name in known:
                    self.plan(name)

    def plan(self, kernel: str | None = None) -> calling.CallPlan:
        """How one kernel of the module is called (:class:`~intent_eqsat.calling.CallPlan`), made once."""
        name = kernel or self.kernel_name
        plan = self._plans.get(name)
        if plan is None:
            if self.kir is None:
                raise TypeError(f"kernel {name}: the KIR module is not known, so its parameters are not")
            plan = self._plans[name] = calling.CallPlan(self.kir.kernel(name), self.program.kernel(name),
                                                        self.sources[name], self.provider,
                                                        lambda: self.load(name))
        return plan

    def launch(self, kernel: str | None = None, /, **tensors: Any) -> dict[str, Any]:
        """Launch one kernel of the module on torch tensors (views) and numbers (scalars), by parameter name;
        every view must be passed. Returns the written views (``out``/``inout``) by name; they are updated in
        place."""
        name = kernel or self.kernel_name
        plan = self.plan(name)
        values, control = plan.bind((), tensors)
        missing = [s.name for s, v in zip(plan.slots, values) if v is None]
        if missing:
            raise TypeError(f"kernel {name} takes {', '.join(s.name for s in plan.slots)}; missing "
                            f"{', '.join(missing)}")
        plan.run(values, control)
        return {s.name: tensors[s.name] for s in plan.written}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run :attr:`kernel_name` like a torch function: arguments in the KIR parameter order and/or by name
        (plus launch control: ``params``, ``num_warps``, ``num_stages``); an ``out`` view not given is allocated
        (``torch.empty`` on the device of the views given, sized by their shape symbols). Returns the written views
        in parameter order: one tensor, or a tuple. Under ``torch.compile`` the kernel runs as the custom op
        :attr:`op` (any mode, CUDA graphs included)."""
        plan = self._plans.get(self.kernel_name) or self.plan()
        return plan(args, kwargs)

    @property
    def op(self) -> Any:
        """:attr:`kernel_name` as a ``torch.library`` custom op: ``op(*values)`` in KIR parameter order writes the
        ``out``/``inout`` views in place (a fake implementation lets torch.compile trace it without running it)."""
        return self.plan().op

    def __reduce__(self) -> tuple:
        """Pickled as plain data (:func:`intent_eqsat.compile_cache.plain`): no e-graph, no imported module."""
        return (restore_kernel, (compile_cache.plain(self),))

    def __repr__(self) -> str:
        cost = pipeline.cost_total(self.cost)
        return (f"CompiledKernel({self.kernel_name!r}, provider={self.provider!r}, target={self.target!r}, "
                f"cost={cost!r}, kernels={self.kernels!r})")


def generated_dir() -> str:
    """Where :meth:`CompiledKernel.load` writes generated modules (``$INTENT_EQSAT_GENERATED_DIR`` or a
    per-user temp folder)."""
    env = os.environ.get("INTENT_EQSAT_GENERATED_DIR")
    if env:
        return env
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"intent-eqsat-{uid}", "generated")


def _seconds(x: float) -> str:
    """A modelled time with its unit (us below 1 ms, ms below 1 s, else s)."""
    if x != x or abs(x) == float("inf"):
        return f"{x} s"
    if abs(x) < 1e-3:
        return f"{x * 1e6:.4g} us"
    if abs(x) < 1.0:
        return f"{x * 1e3:.4g} ms"
    return f"{x:.4g} s"


def _sizes_text(sizes: Any, assumed: Any = None) -> str:
    """The problem the cost model assumed: the sizes given to compile(), those assumed by role
    (``intent_eqsat.kir.roles``), the rest at the model's default."""
    from intent_eqsat.extract.cost import DEFAULT_PARAMS

    default = getattr(DEFAULT_PARAMS, "default_size", 1024)
    assumed = dict(assumed or {})
    given = ", ".join(f"{k}={v}" for k, v in sorted((sizes or {}).items()) if k not in assumed)
    parts = [f"sizes {given}"] if given else []
    if assumed:
        parts.append("window extents " + ", ".join(f"{k}={v}" for k, v in sorted(assumed.items())) + " (assumed)")
    if given:
        parts.append(f"any other symbol {default}")
    else:
        parts.append(f"every {'other ' if assumed else ''}size symbol at the model's default {default}: pass "
                     f"sizes= for your problem")
    return "; ".join(parts)


def _binding_text(binding: Any, resources: Any) -> str:
    parts = [f"{k}={v}" for k, v in sorted((binding or {}).items())]
    res = resources or {}
    if res.get("threads"):
        parts.append(f"{res['threads']} threads")
    if res.get("stages"):
        parts.append(f"{res['stages']} stages")
    return ", ".join(parts)


def _buckets_text(plan: Any) -> list[str]:
    """The size bucket variants the launcher picks among (``report["kernels"][k]["size_buckets"]``), one line each."""
    if not isinstance(plan, Mapping) or not plan.get("variants"):
        return []
    table = [(tuple(k), v) for k, v in plan.get("table") or ()]
    out = [f"size buckets over {', '.join(plan['symbols'])} (levels {', '.join(map(str, plan['levels']))}; "
           f"launch() picks by the shapes):"]
    for i, v in enumerate(plan["variants"]):
        served = sum(1 for _, w in table if w == i)
        at = ", ".join(f"{n}={x}" for n, x in sorted(v["bound_at"].items()))
        res = _binding_text(v["binding"], v.get("resources")) if i else "the binding above"
        out.append(f"  variant {i}: {res}; {served} of {len(table)} level tuples; {_seconds(v['cost'])} at {at}")
    return out


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


def _both(first: "Callable[..., None] | None", second: "Callable[..., None] | None") -> "Callable[..., None] | None":
    """One callback calling both (either may be None)."""
    if first is None or second is None:
        return first or second

    def both(*args: Any) -> None:
        first(*args)
        second(*args)
    return both


def compile(source: "str | os.PathLike[str] | kir.KirModule", *, target: str = "sm90", provider: str = "triton",
            options: "CompileOptions | Mapping[str, Any] | None" = None, rulebooks: Any = None,
            kernel: str | None = None, filename: str | None = None, optimize: bool = True,
            sizes: Mapping[str, int] | None = None, calibration: Any = None,
            specialize: "Mapping[str, Any] | str | None" = None, budget: Any = None,
            cache: "bool | str | os.PathLike[str] | None" = None,
            on_stage: "Callable[[str], None] | None" = None,
            on_progress: "Callable[[str, int, int], None] | None" = None, progress: bool = False) -> CompiledKernel:
    """Compile ``.kir`` text, a ``.kir`` path or a KIR module for ``target`` with ``provider``.

    Stages: load, KIR verify, construct, optimize (the e-graph optimizer; ``optimize=False``
    serializes the constructed program), GPU IR verify, serialize. ``kernel`` names the kernel of a file of several
    to compile (alone: the others are neither optimized nor serialized); without it every kernel is compiled and
    the first is the one called. ``sizes`` (e.g. ``{"M": 4096, "N": 4096,
    "K": 4096}``) tells the cost model the problem to be fastest for: block sizes are chosen for it (the program
    stays correct for every size); a symbol not given takes a size plausible for its role (a window extent 3,
    :mod:`intent_eqsat.kir.roles`; ``report["assumed_sizes"]``), any other 1024. ``calibration`` (tuning file path(s) written by ``bench/tile_sweep.py``, or a
    :class:`~intent_eqsat.extract.calibration.Calibration`): measured times of this program structure at these
    sizes re-rank the block sizes and bind the measured launch resources. ``specialize`` (e.g. ``{"D": (64, 128)}``):
    size symbols expected to take a few values get one more physical kernel per value (SPEC IR-2: the symbol is a
    literal extent there, compiled and tuned on its own); the launcher runs it when the shapes give that value and
    the general kernel otherwise. ``budget`` (e.g. ``{"iterations": 60, "nodes": 400000}``, a
    :class:`~intent_eqsat.rules.schedule.Limits` or ``"iterations=60"``): the e-graph search budget of each kernel,
    in deterministic units (group iterations, e-graph rows, matches), so the same call gives the same program on
    any machine under any load; ``report["budget"]`` records it. Its ``safety_seconds`` is the wall-clock safety net
    (a :class:`~intent_eqsat.errors.SearchTimeout` when crossed). Errors are the layers' own typed errors (all
    :class:`~intent_eqsat.errors.IntentError`), carrying ``.stage`` and ``.kir_location``.

    ``cache``: the on-disk compile cache (:mod:`intent_eqsat.compile_cache`): None uses
    ``$INTENT_EQSAT_CACHE_DIR`` or ``~/.cache/intent-eqsat`` unless ``$INTENT_EQSAT_CACHE=off``; a path names the
    folder (``intent-eqsat batch --cache-dir`` shares it); False compiles without it. A hit returns the stored
    kernel (``report["cached"]`` is True) without running the pipeline. ``on_stage(name)`` is called as each stage
    starts, ``on_progress(label, done, total)`` as the optimizer finishes each of its steps (each group of each
    kernel, the tile binding, the size buckets: counted, not timed); ``progress=True`` draws both as a bar on stderr
    (:class:`intent_eqsat.progress.CompileProgress`, the CLI's bar). The ``intent_eqsat`` logger says the same at
    INFO, with each stage's time."""
    target = pipeline.check_target(target)
    t0 = time.perf_counter()
    try:
        module, text = _load(source, filename)
    except Exception as err:
        pipeline.annotate(err, "load", None, filename)
        raise
    load_s = time.perf_counter() - t0
    selected = _select_kernel(module, kernel)
    # ``kernel`` of a file of several: that kernel alone is compiled (the others are not optimized for nothing)
    alone = kernel is not None and len(module.kernels) > 1
    root = compile_cache.cache_dir(cache)
    key = None
    if root is not None:
        keyed = dict(target=target, provider=provider, options=options, rulebooks=rulebooks, optimize=optimize,
                     sizes=sizes, calibration=calibration, specialize=specialize, budget=budget)
        key = compile_cache.key_of(text, **keyed, kernel=selected if alone else None)
        # the whole file's entry (a batch run or a compile without ``kernel``) serves one kernel of it too
        hit = None
        for k in dict.fromkeys([compile_cache.key_of(text, **keyed), key] if alone else [key]):
            hit = compile_cache.lookup(root, k) if k is not None else None
            if hit is not None:
                break
        _LOG.info("%s: compile cache %s (%s)", module.filename or "<string>",
                  "hit" if hit is not None else "miss" if key is not None else "not keyable", root)
        if hit is not None:
            try:
                ck = restore_kernel(hit, kir_text=text, filename=module.filename, kernel=kernel,
                                    provider=provider, target=target, options=options)
            except Exception as err:    # an entry this version cannot read (edited, truncated): compile again
                _LOG.warning("%s: compile cache entry %s unreadable (%s: %s); compiling again",
                             module.filename or "<string>", key[:16], type(err).__name__, err)
            else:
                ck.kernel_name = _select_kernel(ck.kir or module, kernel)
                ck.report["cached"] = True
                return ck
    bar = CompileProgress(module.filename or "<string>", always=True) if progress else None
    if alone:
        module = replace(module, items=tuple(i for i in module.items
                                             if not isinstance(i, kir.Kernel) or i.name == selected))
    try:
        res = pipeline.run(module, target=target, provider=provider, options=options, rulebooks=rulebooks,
                           filename=filename, optimize_program=optimize, sizes=sizes, calibration=calibration,
                           specialize=specialize, budget=budget,
                           on_stage=_both(on_stage, bar.stage if bar else None),
                           on_progress=_both(on_progress, bar.step if bar else None))
    finally:
        if bar is not None:
            bar.close()
    opt = res.optimized
    report = dict(opt.report)
    if "phases" in report:
        report["optimize_phases"] = report.pop("phases")
    report["phases"] = dict(res.timings, load=load_s)
    report["optimizer_status"] = opt.status
    ck = CompiledKernel(program=res.program, sources=res.sources, kernel_name=_select_kernel(res.kir, kernel),
                        provider=provider, target=res.target, options=res.options, cost=opt.cost,
                        candidates=list(opt.candidates), remarks=list(opt.remarks), report=report, kir=res.kir,
                        constructed=res.constructed, optimizer_status=opt.status,
                        specializations=dict(res.specializations),
                        launch_resources=dict(opt.launch_resources), kir_text=text, _optimizer_result=opt.raw)
    if key is not None:
        compile_cache.store(root, key, compile_cache.plain(ck))
    return ck


def restore_kernel(data: Mapping[str, Any], **fallback: Any) -> CompiledKernel:
    """A kernel from its plain form (:func:`intent_eqsat.compile_cache.plain`: a pickle, a cache entry) or from a
    batch result (``fallback`` gives what that lacks: ``kir_text``, ``filename``, ``kernel``, ``provider``,
    ``target``, ``options``)."""
    return CompiledKernel(**compile_cache.restore_fields(data, **fallback))


def _load(source: Any, filename: str | None) -> tuple[kir.KirModule, str]:
    """The KIR module and its text (what the cache key holds): a file read once, a string as given, a builder's
    module printed."""
    if isinstance(source, kir.KirModule):
        return source, kir.print_kir(source)
    if isinstance(source, os.PathLike) or (isinstance(source, str) and pipeline._looks_like_path(source)):
        text = pipeline.read_source(Path(source))
        return kir.parse(text, filename=filename or str(source)), text
    return pipeline.load(source, filename=filename), source


def optimize(source: "str | os.PathLike[str] | kir.KirModule", *, target: str = "sm90",
             options: "CompileOptions | Mapping[str, Any] | None" = None, rulebooks: Any = None,
             filename: str | None = None, sizes: Mapping[str, int] | None = None,
             calibration: Any = None, budget: Any = None) -> ir.Module:
    """The extracted, verified GPU program, not serialized (``sizes``, ``calibration``, ``budget``: as for
    :func:`compile`)."""
    return pipeline.run(source, target=target, provider=None, options=options, rulebooks=rulebooks,
                        filename=filename, sizes=sizes, calibration=calibration, budget=budget).program


__all__ = ["CompiledKernel", "compile", "optimize", "generated_dir", "restore_kernel"]
