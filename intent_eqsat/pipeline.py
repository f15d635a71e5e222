"""The compile pipeline as plain functions, one per stage, and :func:`run` that chains them with timings.

::

    load -> verify_kir -> construct -> optimize -> verify_gir -> serialize(provider)

Every stage is deterministic: the same KIR text, target, options, rulebooks, search budget and provider give the same
program and the same source bytes, on any machine under any load (the search is bounded in iterations, e-graph rows
and matches, never in seconds: :mod:`intent_eqsat.rules.schedule`). A failing stage raises the layer's own typed
error (``ParseError``, ``KirError``, ``ConstructionError``, ``VerificationError``, one of the four ``Unsupported`` kinds, :class:`ProviderUnavailable`,
...) after :func:`annotate` has attached ``err.stage`` and ``err.kir_location`` (the ``file:line:col`` of the KIR
text the failure traces back to, found through the origin map when the error names a program location).

The optimize stage calls :func:`intent_eqsat.optimizer.optimize` (``program, *, target, options, rulebooks`` ->
a result with ``.program``, ``.cost``, ``.candidates``, ``.remarks``, ``.report``, ``.params`` and
``.size_buckets``) and hands on an :class:`Optimized`; ``optimize=False`` skips it with :data:`SKIPPED_REMARK`.
"""
from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from intent_eqsat import ir, kir
from intent_eqsat.errors import IntentError, SourceLocation, UsageError
from intent_eqsat.ir.core import CompileOptions
from intent_eqsat.ir.options import make_options
from intent_eqsat.kir.roles import assumed_sizes

_LOG = logging.getLogger("intent_eqsat.pipeline")

STAGES = ("load", "verify_kir", "construct", "optimize", "verify_gir", "serialize")
#: a stage that runs only when asked for (``run(specialize=...)``), between ``verify_gir`` and ``serialize``
OPTIONAL_STAGES = ("specialize",)
PROVIDERS = ("triton", "cutile")
SKIPPED_REMARK = "optimization skipped (optimize=False): constructed program used"


class ProviderUnavailable(IntentError):
    """The requested provider's serializer cannot be imported (not built yet, or its dependency is missing)."""


# ----------------------------------------------------------------------------------------------- arguments

def make_budget(budget: Any) -> Any:
    """The search budget (:class:`intent_eqsat.rules.schedule.Limits`) from None (the default), a Limits, a
    mapping (``{"iterations": 60, "nodes": 400000}``) or the CLI's text ``"iterations=60,nodes=400000"``; a bad
    field or value is a :class:`UsageError` naming it (issue 21: the budget is in deterministic units only)."""
    from intent_eqsat.rules.schedule import make_limits

    if isinstance(budget, str):
        pairs: dict[str, str] = {}
        for part in (p.strip() for p in budget.split(",")):
            if not part:
                continue
            if "=" not in part:
                raise UsageError(f"budget: expected NAME=VALUE pairs separated by commas, got {part!r}")
            k, v = part.split("=", 1)
            pairs[k.strip()] = v.strip()
        budget = pairs
    try:
        return make_limits(budget)
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None


def options_dict(options: CompileOptions) -> dict[str, Any]:
    return dataclasses.asdict(options)


def check_target(target: Any) -> str:
    """The canonical name of a known target (raises :class:`UsageError` otherwise)."""
    from intent_eqsat.providers.targets import get_target

    try:
        return get_target(target).name
    except Exception as err:  # UnknownTargetError (a KeyError) or a bad type
        raise UsageError(str(err)) from None


def check_provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    return provider


def make_specialize(specialize: "Mapping[str, Any] | str | None") -> dict[str, tuple[int, ...]]:
    """Size-symbol value specializations requested (SPEC IR-2): ``{"D": (64, 128)}``, ``{"D": 64}`` or the CLI
    text ``"D=64,128;H=8"`` -> symbol -> values. Raises :class:`UsageError` for malformed requests."""
    if not specialize:
        return {}
    if isinstance(specialize, str):
        pairs: dict[str, Any] = {}
        for part in specialize.replace(" ", "").split(";"):
            if not part:
                continue
            sym, eq, vals = part.partition("=")
            if not eq or not sym or not vals:
                raise UsageError(f"specialize: expected SYMBOL=VALUE[,VALUE...], got {part!r}")
            pairs[sym] = vals.split(",")
        specialize = pairs
    if not isinstance(specialize, Mapping):
        raise UsageError(f"specialize must map shape symbols to values, got {type(specialize).__name__}")
    out: dict[str, tuple[int, ...]] = {}
    for sym, vals in specialize.items():
        items = vals if isinstance(vals, (list, tuple, set, frozenset)) else (vals,)
        values: list[int] = []
        for v in sorted(items, key=str) if isinstance(items, (set, frozenset)) else items:
            n = (v if isinstance(v, int) and not isinstance(v, bool)
                 else int(v) if isinstance(v, str) and v.strip().isdigit() else None)
            if n is None or n < 1:
                raise UsageError(f"specialize {sym}: expected integer values >= 1, got {v!r}")
            if n not in values:
                values.append(n)
        if not values:
            raise UsageError(f"specialize {sym}: no values")
        out[str(sym)] = tuple(values)
    return out


# ------------------------------------------------------------------------------------------------- stages

def load(source: "str | os.PathLike[str] | kir.KirModule", filename: str | None = None) -> kir.KirModule:
    """A :class:`KirModule` from ``.kir`` text, a path to a ``.kir`` file, or a module (returned as is).

    A string is a path when it names an existing file (or ends in ``.kir`` and has no newline), else KIR text.
    Parse errors are located ``file:line:col`` (``filename`` names text input; paths name themselves)."""
    if isinstance(source, kir.KirModule):
        return source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        text = read_source(Path(source))
        return kir.parse(text, filename=filename or str(source))
    if not isinstance(source, str):
        raise UsageError(f"source must be .kir text, a path or a KirModule, got {type(source).__name__}")
    return kir.parse(source, filename=filename)


def read_source(path: "str | os.PathLike[str]", shown: str | None = None) -> str:
    """A ``.kir`` file's text (UTF-8, strict, universal newlines; a byte order mark is the parser's to judge), or
    a :class:`UsageError` every entry point reports alike (``compile`` exits 2, ``batch`` records the job's error):
    ``no such file`` / ``cannot read``, located at the first byte that is not UTF-8 (else at 1:1 of ``shown``)."""
    shown = shown if shown is not None else str(path)
    line, col = 1, 1
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        why = f"no such file: {shown}"
    except UnicodeDecodeError as err:
        why = f"cannot read {shown}: {err}"
        line, col = _undecodable_at(Path(path))
    except OSError as err:
        why = f"cannot read {shown}: {err}"
    raise UsageError(why, SourceLocation(shown, line, col))


def _undecodable_at(path: Path) -> tuple[int, int]:
    """(line, column) of the first byte of the file that is not UTF-8, counted as the parser counts them."""
    try:
        raw = path.read_bytes()
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        head = raw[:err.start].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        return head.count("\n") + 1, len(head) - head.rfind("\n")
    except OSError:
        pass
    return 1, 1


def _looks_like_path(s: str) -> bool:
    if "\n" in s or "{" in s:
        return False
    return s.endswith(".kir") or os.path.isfile(s)


def verify_kir(module: kir.KirModule) -> None:
    """The KIR verifier (SPEC PASS-5); raises :class:`~intent_eqsat.errors.KirError`."""
    kir.verify(module)


def construct(module: kir.KirModule, *, target: str, options: CompileOptions) -> ir.Module:
    """The first complete GPU program (SPEC PASS-3.1) with its construction verifier."""
    from intent_eqsat.construct import construct as _construct

    return _construct(module, target=target, options=options)


@dataclass
class Optimized:
    """What the optimize stage hands on: the program to serialize and what the optimizer said about it."""

    program: ir.Module
    cost: Any = None
    candidates: list = field(default_factory=list)
    remarks: list = field(default_factory=list)
    report: dict = field(default_factory=dict)
    params: dict | None = None
    raw: Any = None
    status: str = "ran"                # "ran" | "skipped" (optimize=False)
    #: kernel name -> other tile bindings its launcher picks by the launch's sizes (issue 24 item 4)
    size_buckets: dict = field(default_factory=dict)
    #: kernel name -> its launch resources (``providers.launch_resources.LaunchResources``: threads, stages, index
    #: width), chosen beside the program for the provider (issue 22 item 3); a kernel without: the defaults
    launch_resources: dict = field(default_factory=dict)


def check_rulebooks(rulebooks: Any) -> None:
    """Load the named rulebooks before any stage runs, so an unknown name is a :class:`UsageError` at once (not an
    error of the optimize stage after construction) and a broken rulebook a ``RulebookError`` naming its file."""
    if rulebooks is None:
        return
    from intent_eqsat.rules.registry import load as load_rulebooks

    load_rulebooks(rulebooks)


def rulebook_versions(rulebooks: Any = None) -> Any:
    """The rule groups' source hashes and ``all`` (:func:`intent_eqsat.rules.rulebook_versions`), for cache keys; a
    rulebook set that fails to load gives ``"unavailable: <error>"`` (its jobs then fail, located)."""
    from intent_eqsat.rules.registry import versions
    try:
        return to_plain(versions(rulebooks))
    except Exception as err:
        return f"unavailable: {type(err).__name__}: {err}"


def load_calibration(calibration: Any) -> Any:
    """None, a :class:`~intent_eqsat.extract.calibration.Calibration`, or tuning file path(s) -> a Calibration
    (or None); a file that cannot be read is a :class:`CalibrationError` naming it."""
    if calibration is None:
        return None
    from intent_eqsat.extract.calibration import Calibration
    if isinstance(calibration, Calibration):
        return calibration
    paths = [calibration] if isinstance(calibration, (str, os.PathLike)) else list(calibration)
    return Calibration.load(paths) if paths else None


def optimize(program: ir.Module, *, target: str, options: CompileOptions, rulebooks: Any = None,
             sizes: Mapping[str, int] | None = None, calibration: Any = None, budget: Any = None,
             progress: Callable[[str, int, int], None] | None = None) -> Optimized:
    """Run the e-graph optimizer (:func:`intent_eqsat.optimizer.optimize`) on the constructed program.
    ``sizes`` binds shape symbols for the cost model (the problem the program should be fastest for); unbound
    symbols take the model's default size. ``calibration`` (tuning file path(s) or a Calibration): measured
    times that re-rank the tile bindings of a measured program structure at the measured sizes. ``budget``: the
    search budget (:func:`make_budget`; None: the default), per kernel, in deterministic units. ``progress(label,
    done, total)``: the optimizer's steps (``optimizer.optimize``)."""
    from intent_eqsat.optimizer import optimize as run_optimizer

    kw: dict[str, Any] = {}
    cal = load_calibration(calibration)
    if sizes or cal is not None:
        from intent_eqsat.extract.cost import RooflineCost
        from intent_eqsat.providers.targets import get_target
        kw["cost"] = RooflineCost(get_target(target), {str(k): int(v) for k, v in (sizes or {}).items()},
                                  calibration=cal)
    if budget is not None:
        kw["limits"] = make_budget(budget)
    if progress is not None:
        kw["progress"] = progress
    res = run_optimizer(program, target=target, options=options, rulebooks=rulebooks, **kw)
    report = getattr(res, "report", None)
    report = dict(report) if isinstance(report, Mapping) else (to_plain(report) if report is not None else {})
    if not isinstance(report, dict):
        report = {"optimizer": report}
    params = getattr(res, "params", None)
    return Optimized(program=res.program, cost=getattr(res, "cost", None),
                     candidates=list(getattr(res, "candidates", None) or []),
                     remarks=list(getattr(res, "remarks", None) or []), report=report,
                     params=dict(params) if params else None, raw=res, status="ran",
                     size_buckets=dict(getattr(res, "size_buckets", None) or {}),
                     launch_resources=dict(getattr(res, "launch_resources", None) or {}))


def verify_gir(program: ir.Module) -> None:
    """The shared GPU verifier (SPEC IR-10, PASS-5) on the program about to be serialized."""
    ir.verify(program)


def serializer(provider: str) -> Callable[..., str]:
    """``intent_eqsat.providers.<provider>.serialize``; raises :class:`ProviderUnavailable` when not importable."""
    check_provider(provider)
    try:
        mod = importlib.import_module(f"intent_eqsat.providers.{provider}")
    except ImportError as err:
        raise ProviderUnavailable(f"provider {provider!r} is not available: {err}") from None
    fn = getattr(mod, "serialize", None)
    if not callable(fn):
        raise ProviderUnavailable(f"provider {provider!r} is not available: "
                                  f"intent_eqsat.providers.{provider} has no serialize()")
    return fn


def serialize(program: ir.Module, *, provider: str, target: str, params: dict | None = None,
              specializations: "Mapping[str, list[ir.Specialization]] | None" = None,
              size_buckets: "Mapping[str, ir.SizeBuckets] | None" = None,
              launch_resources: "Mapping[str, Any] | None" = None) -> dict[str, str]:
    """Kernel name -> generated source, for every kernel of ``program`` in module order. A kernel with
    ``specializations`` gets one source holding the general kernel, each specialized kernel and a launcher that
    dispatches on the symbols' values (a provider whose serializer takes no ``specializations`` raises
    :class:`ProviderUnavailable`; :func:`run` asks first). ``size_buckets`` (the optimizer's other tile bindings
    per kernel) are printed by a provider that declares ``PRINTS_SIZE_BUCKETS``; another prints the general
    kernel alone (:func:`run` says so in a remark). ``launch_resources``: kernel name -> its launch resources
    (:class:`~intent_eqsat.providers.launch_resources.LaunchResources`); a kernel it does not name gets the
    provider's defaults."""
    fn = serializer(provider)
    out: dict[str, str] = {}
    buckets = dict(size_buckets or {}) if prints_size_buckets(provider) else {}
    for k in program.kernels:
        specs = (specializations or {}).get(k.name)
        kw: dict[str, Any] = {}
        if specs:
            if not prints_specializations(provider):
                raise ProviderUnavailable(f"provider {provider!r} does not print KIR specializations")
            kw["specializations"] = specs
        if buckets.get(k.name) is not None:
            kw["size_buckets"] = buckets[k.name]
        if (launch_resources or {}).get(k.name) is not None:
            kw["launch_resources"] = launch_resources[k.name]
        out[k.name] = fn(program, k.name, target, params, **kw)
    return out


def prints_size_buckets(provider: str) -> bool:
    """Whether the provider's serializer prints size bucket variants with a launcher that picks among them."""
    return bool(getattr(importlib.import_module(f"intent_eqsat.providers.{provider}"), "PRINTS_SIZE_BUCKETS",
                        False))


def prints_specializations(provider: str) -> bool:
    """Whether the provider's serializer prints specialized kernels with a dispatching launcher."""
    return bool(getattr(importlib.import_module(f"intent_eqsat.providers.{provider}"), "PRINTS_SPECIALIZATIONS",
                        False))


def specialize_kernels(module: kir.KirModule, request: Mapping[str, tuple[int, ...]], *, target: str,
                       options: CompileOptions, rulebooks: Any = None, optimize_program: bool = True,
                       sizes: Mapping[str, int] | None = None, calibration: Any = None,
                       filename: str | None = None, unmatched_ok: bool = False,
                       budget: Any = None) -> dict[str, list[ir.Specialization]]:
    """Each kernel's KIR specializations (SPEC IR-2), compiled on their own: KIR with the symbols fixed
    (``kir.specialize``), verified, constructed, optimized for ``sizes`` and verified again. Kernels without the
    requested symbols get none; a request no kernel can take is a :class:`UsageError` unless ``unmatched_ok`` (a
    batch applies one request to files whose kernels differ in their symbols)."""
    from intent_eqsat.kir import specialize as ks

    out: dict[str, list[ir.Specialization]] = {}
    for kernel in module.kernels:
        for values in ks.combinations(kernel, request):
            spec_kir = ks.specialize(module, kernel.name, values)
            try:
                verify_kir(spec_kir)
                constructed = construct(spec_kir, target=target, options=options)
                if optimize_program:
                    # the specialization only ever runs at its values: they are part of the problem it is tuned
                    # for (a tuning measurement names the sizes it was taken at, the literal extent included)
                    opt = optimize(constructed, target=target, options=options, rulebooks=rulebooks,
                                   sizes={**(sizes or {}), **values}, calibration=calibration, budget=budget)
                else:
                    opt = Optimized(program=constructed, status="skipped")
                verify_gir(opt.program)
            except Exception as err:
                annotate(err, "specialize", spec_kir, filename)
                note = f"in the specialization {ks.specialization_label(values)} of kernel {kernel.name}"
                if hasattr(err, "add_note"):
                    err.add_note(note)
                raise
            out.setdefault(kernel.name, []).append(ir.Specialization(
                values=tuple(values.items()), module=opt.program, kernel=spec_kir.kernels[0].name,
                params=opt.params, launch_resources=opt.launch_resources.get(spec_kir.kernels[0].name)))
    if request and not out and not unmatched_ok:
        have = sorted({s for k in module.kernels for s in ks.shape_symbols(k)})
        raise UsageError(f"specialize: no kernel has the shape symbol(s) {', '.join(request)} "
                         f"(shape symbols here: {', '.join(have) or 'none'})")
    return out


# --------------------------------------------------------------------------------------------------- run

@dataclass
class PipelineResult:
    kir: kir.KirModule
    constructed: ir.Module
    optimized: Optimized
    program: ir.Module
    sources: dict[str, str]
    timings: dict[str, float]
    target: str
    provider: str | None
    options: CompileOptions
    rulebooks: Any = None
    specializations: dict[str, list[ir.Specialization]] = field(default_factory=dict)


def run(source: "str | os.PathLike[str] | kir.KirModule", *, target: str = "sm90", provider: str | None = "triton",
        options: "CompileOptions | Mapping[str, Any] | None" = None, rulebooks: Any = None,
        filename: str | None = None, stop_after: str | None = None, optimize_program: bool = True,
        sizes: Mapping[str, int] | None = None, calibration: Any = None,
        on_stage: Callable[[str], None] | None = None,
        on_progress: Callable[[str, int, int], None] | None = None,
        specialize: "Mapping[str, Any] | str | None" = None, specialize_unmatched_ok: bool = False,
        budget: Any = None) -> PipelineResult:
    """Run the stages in order (``provider=None`` or ``stop_after="verify_gir"`` skips serialization;
    ``optimize_program=False`` skips the optimize stage: the constructed program goes on, with a remark).
    ``specialize`` (symbol -> values, :func:`make_specialize`) adds the ``specialize`` stage after ``verify_gir``:
    one more physical kernel per value assignment (:func:`specialize_kernels`), printed beside the general one;
    ``specialize_unmatched_ok`` lets a request that none of the module's kernels can take add none. ``budget``:
    the search budget of every kernel (:func:`make_budget`), checked before any stage runs.

    Timings (seconds, per stage) are in ``result.timings``; ``on_stage(name)`` is called as each stage starts,
    ``on_progress(label, done, total)`` as the optimize stage finishes each of its steps (counted, not timed). A
    failing stage's error is re-raised after :func:`annotate`; its ``stage`` attribute names the stage."""
    target = check_target(target)
    opts = make_options(options)
    request = make_specialize(specialize)
    limits = make_budget(budget) if budget is not None else None
    if optimize_program:
        check_rulebooks(rulebooks)
    if provider is not None:
        check_provider(provider)
        if request and not prints_specializations(provider):
            raise UsageError(f"specialize: the {provider} provider does not print KIR specializations yet "
                             f"(compile without specialize: the general kernel serves every size)")
    timings: dict[str, float] = {}
    state: dict[str, Any] = {"module": None}

    shown = filename or getattr(source, "filename", None) or (str(source) if isinstance(source, os.PathLike) else
                                                              "<string>")

    def stage(name: str, fn: Callable[[], Any]) -> Any:
        if on_stage is not None:
            on_stage(name)
        _LOG.debug("%s: %s ...", shown, name)
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as err:
            timings[name] = time.perf_counter() - t0
            annotate(err, name, state["module"], filename)
            _LOG.info("%s: %s failed after %.2f s", shown, name, timings[name])
            raise
        timings[name] = time.perf_counter() - t0
        _LOG.info("%s: %s %.2f s", shown, name, timings[name])
        return out

    module = stage("load", lambda: load(source, filename))
    state["module"] = module
    stage("verify_kir", lambda: verify_kir(module))
    constructed = stage("construct", lambda: construct(module, target=target, options=opts))
    # symbols the caller gave no size for take a size plausible for their role (a window extent is not 1024)
    assumed = assumed_sizes(module, sizes) if optimize_program else {}
    model_sizes = {**assumed, **(sizes or {})} or None
    if optimize_program:
        optimized = stage("optimize", lambda: optimize(constructed, target=target, options=opts,
                                                       rulebooks=rulebooks, sizes=model_sizes,
                                                       calibration=calibration, budget=limits,
                                                       progress=on_progress))
        if assumed:
            optimized.report["assumed_sizes"] = dict(assumed)
    else:
        optimized = Optimized(program=constructed, remarks=[SKIPPED_REMARK], status="skipped")
    program = optimized.program
    stage("verify_gir", lambda: verify_gir(program))
    specs: dict[str, list[ir.Specialization]] = {}
    if request and stop_after not in ("optimize", "verify_gir"):
        specs = stage("specialize", lambda: specialize_kernels(
            module, request, target=target, options=opts, rulebooks=rulebooks, optimize_program=optimize_program,
            sizes=model_sizes, calibration=calibration, filename=filename, unmatched_ok=specialize_unmatched_ok,
            budget=limits))
    sources: dict[str, str] = {}
    if provider is not None and stop_after not in ("optimize", "verify_gir"):
        if optimized.size_buckets and not prints_size_buckets(provider):
            optimized.remarks.append(
                f"the {provider} provider prints one tile binding per kernel: the size bucket variants of "
                f"{', '.join(sorted(optimized.size_buckets))} are not printed (the binding for the default sizes "
                f"serves every launch; compile with sizes= for others)")
        sources = stage("serialize", lambda: serialize(program, provider=provider, target=target,
                                                       params=optimized.params, specializations=specs,
                                                       size_buckets=optimized.size_buckets,
                                                       launch_resources=optimized.launch_resources))
    return PipelineResult(kir=module, constructed=constructed, optimized=optimized, program=program,
                          sources=sources, timings=timings, target=target, provider=provider, options=opts,
                          rulebooks=rulebooks, specializations=specs)


# ------------------------------------------------------------------------------------------------ errors

_ID_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")


def kir_location(err: BaseException, module: kir.KirModule | None, filename: str | None = None) \
        -> SourceLocation | None:
    """The KIR source position an error traces back to.

    A :class:`SourceLocation` on the error is used as is. A program location (``kernel gemm, op #12 (load) from
    gemm.s0.e3``) is mapped through the origin map: the most specific KIR id it names that has a position, else
    the kernel it names. Without a module, only the error's own SourceLocation counts."""
    loc = getattr(err, "location", None)
    if isinstance(loc, SourceLocation):
        return loc
    if module is None:
        return None
    from intent_eqsat.kir.ids import index_by_id

    text = " ".join(str(x) for x in (loc, getattr(err, "message", None)) if x)
    if not text:
        return None
    index = index_by_id(module)
    best: SourceLocation | None = None
    for m in re.finditer(r"from\s+(" + _ID_TOKEN.pattern + ")", text):
        node = index.get(m.group(1).rstrip("."))
        if node is not None and getattr(node, "loc", None) is not None:
            return node.loc
    for tok in _ID_TOKEN.findall(text):
        node = index.get(tok)
        if node is not None and getattr(node, "loc", None) is not None and "." in tok:
            return node.loc
    for m in re.finditer(r"kernel\s+([A-Za-z_][A-Za-z0-9_]*)", text):
        node = index.get(m.group(1))
        if node is not None and getattr(node, "loc", None) is not None:
            return node.loc
    if isinstance(err, (ProviderUnavailable, UsageError)):
        return None                  # not about the KIR text: reported at the file
    if len(module.kernels) == 1 and module.kernels[0].loc is not None:
        best = module.kernels[0].loc  # no finer position known: the kernel
    return best


def annotate(err: BaseException, stage: str, module: kir.KirModule | None, filename: str | None = None) -> None:
    """Attach ``stage`` and ``kir_location`` to an error (once) and a note naming both."""
    if getattr(err, "stage", None):
        return
    try:
        err.stage = stage  # type: ignore[attr-defined]
        loc = kir_location(err, module, filename)
        err.kir_location = loc  # type: ignore[attr-defined]
        if loc is not None and not isinstance(getattr(err, "location", None), SourceLocation):
            err.add_note(f"(stage {stage}; from KIR at {loc})")
        else:
            err.add_note(f"(stage {stage})")
    except (AttributeError, TypeError):  # an exception type that refuses attributes
        pass


def error_kind(err: BaseException) -> str:
    """The kind reported for an error: the error class name for our errors, ``InternalError`` otherwise."""
    if isinstance(err, IntentError):
        return type(err).__name__
    return "InternalError"


def describe_error(err: BaseException, module: kir.KirModule | None = None, filename: str | None = None) -> dict:
    """Plain data for reports: kind, stage, location (``file:line:col``), program location, message."""
    loc = getattr(err, "kir_location", None) or kir_location(err, module, filename)
    own = getattr(err, "location", None)
    message = getattr(err, "message", None) if isinstance(err, IntentError) else f"{type(err).__name__}: {err}"
    out = {
        "kind": error_kind(err),
        "stage": getattr(err, "stage", None),
        "location": str(loc) if loc is not None else (filename or None),
        "program_location": None if own is None or isinstance(own, SourceLocation) else str(own),
        "message": str(message if message is not None else err),
    }
    from intent_eqsat.providers.errors import Unsupported

    if isinstance(err, Unsupported):
        out["unsupported_kind"] = err.kind  # the TGT-9 kind: a declared rejection, not a bug
    return out


# ----------------------------------------------------------------------------------------------- plain data

def to_plain(obj: Any, _depth: int = 0) -> Any:
    """JSON-able data from optimizer results (dataclasses, mappings, objects with ``to_dict``), deterministic."""
    if _depth > 40:
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_plain(obj.to_dict(), _depth + 1)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, _depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((to_plain(v, _depth + 1) for v in obj), key=repr)
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
    except ImportError:  # pragma: no cover
        pass
    return str(obj)


def cost_total(cost: Any) -> float | None:
    """A number for a predicted cost: the number itself, ``.total``, or ``["total"]``; None when unknown."""
    if cost is None:
        return None
    if isinstance(cost, bool):
        return None
    if isinstance(cost, (int, float)):
        return float(cost)
    total = getattr(cost, "total", None)
    if total is None and isinstance(cost, Mapping):
        total = cost.get("total")
    if callable(total):
        total = total()
    try:
        return float(total) if total is not None else None
    except (TypeError, ValueError):
        return None


def cost_breakdown(cost: Any) -> dict[str, float]:
    """Named cost terms (``.breakdown`` / ``.terms`` / a mapping / a dataclass's numeric fields)."""
    if cost is None or isinstance(cost, (int, float)):
        return {}
    for attr in ("breakdown", "terms"):
        value = getattr(cost, attr, None)
        if callable(value):
            value = value()
        if isinstance(value, Mapping):
            return {str(k): float(v) for k, v in value.items() if _is_number(v)}
    if isinstance(cost, Mapping):
        return {str(k): float(v) for k, v in cost.items() if k != "total" and _is_number(v)}
    if dataclasses.is_dataclass(cost):
        return {f.name: float(getattr(cost, f.name)) for f in dataclasses.fields(cost)
                if f.name != "total" and _is_number(getattr(cost, f.name))}
    return {}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def report_value(report: Mapping[str, Any] | None, *names: str) -> Any:
    """The first of ``names`` present in an optimizer report (top level, or one level down)."""
    if not report:
        return None
    for name in names:
        if name in report and report[name] is not None:
            return report[name]
    for value in report.values():
        if isinstance(value, Mapping):
            for name in names:
                if name in value and value[name] is not None:
                    return value[name]
    return None


def egraph_size(report: Mapping[str, Any] | None) -> int | None:
    """E-graph size (nodes) from an optimizer report: ``egraph_size`` / ``egraph_nodes`` / ``nodes``, or an
    ``egraph`` mapping with ``nodes`` / ``size``."""
    value = report_value(report, "egraph_size", "egraph_nodes", "num_nodes", "nodes")
    if isinstance(value, Mapping):
        value = value.get("nodes", value.get("size"))
    if value is None and report and isinstance(report.get("egraph"), Mapping):
        value = report["egraph"].get("nodes", report["egraph"].get("size"))
    return int(value) if _is_number(value) else None


__all__ = ["STAGES", "PROVIDERS", "SKIPPED_REMARK",
           "ProviderUnavailable", "UsageError",
           "make_options", "options_dict", "check_target", "check_provider", "load", "verify_kir", "construct",
           "Optimized", "rulebook_versions", "optimize", "verify_gir", "serializer",
           "serialize", "PipelineResult", "run", "kir_location", "annotate", "error_kind", "describe_error",
           "to_plain", "cost_total", "cost_breakdown", "report_value", "egraph_size"]
