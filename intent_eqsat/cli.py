"""The ``intent-eqsat`` command line (reference: ``docs/cli.md``).

Exit codes: 0 success, 1 some input failed (each reported with its error kind and ``file:line:col``), 2 usage error
(bad arguments, unknown target/provider/option, no input, or a command whose back end does not exist yet).
"""
from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from intent_eqsat.progress import CompileProgress

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Usage(Exception):
    """A usage error found after argument parsing (exit 2)."""


# ---------------------------------------------------------------------------------------------- helpers

def _pairs(values: Sequence[str] | None, flag: str, expected: str):
    """``KEY=VALUE`` items of a repeatable, comma-separated option: (key, value, item); empty items skipped."""
    for value in values or []:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise _Usage(f"{flag}: expected {expected}, got {item!r}")
            yield key.strip(), val.strip(), item


def _options(values: Sequence[str] | None) -> dict[str, str]:
    """``--options k=v`` (repeatable, or comma-separated) -> dict."""
    return {key: val for key, val, _ in _pairs(values, "--options", "key=value")}


def _calibration(args: argparse.Namespace) -> list[str] | None:
    """``--calibration FILE`` (repeatable): tuning files; each must exist (a usage error names a missing one)."""
    files = getattr(args, "calibration", None)
    if not files:
        return None
    for f in files:
        if not Path(f).is_file():
            raise _Usage(f"--calibration: no such file: {f}")
    return [str(f) for f in files]


def _sizes(values: Sequence[str] | None) -> dict[str, int] | None:
    """``--sizes M=4096,N=4096`` (repeatable) -> {symbol: positive int}, or None when absent."""
    out: dict[str, int] = {}
    for key, val, item in _pairs(values, "--sizes", "SYMBOL=N"):
        if not key.isidentifier():
            raise _Usage(f"--sizes: expected SYMBOL=N, got {item!r}")
        try:
            n = int(val)
        except ValueError:
            raise _Usage(f"--sizes: {key} must be a positive integer, got {val!r}") from None
        if n <= 0:
            raise _Usage(f"--sizes: {key} must be a positive integer, got {n}")
        out[key] = n
    return out or None


def _list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _err(msg: str) -> None:
    print(f"intent-eqsat: {msg}", file=sys.stderr)


def _format_error(err: BaseException, path: str | None = None) -> str:
    from intent_eqsat import pipeline

    d = pipeline.describe_error(err, None, path)
    return _format_error_dict(d, path)


def _format_error_dict(d: dict, path: str | None = None) -> str:
    loc = d.get("location") or path or "<input>"
    stage = f" (stage {d['stage']})" if d.get("stage") else ""
    prog = f" [{d['program_location']}]" if d.get("program_location") else ""
    return f"{loc}: {d['kind']}{stage}: {d['message']}{prog}"


def _write(path: Path, text: str) -> None:
    from intent_eqsat.atomic import write_atomic

    write_atomic(path, text)


def _budget(args: argparse.Namespace) -> Any:
    """``--budget iterations=60,nodes=400000`` (repeatable) -> the search budget, or None (the default)."""
    from intent_eqsat import pipeline

    values = getattr(args, "budget", None)
    if not values:
        return None
    try:
        return pipeline.make_budget(",".join(values))
    except pipeline.UsageError as err:
        raise _Usage(f"--budget: {err}") from None


def _jobs_default() -> int:
    return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------------------------- commands

def cmd_compile(args: argparse.Namespace) -> int:
    from intent_eqsat import api, ir

    cache = False if args.no_cache else (Path(args.cache_dir) if args.cache_dir else None)
    stages = CompileProgress(args.file, enabled=not (args.no_progress or args.quiet))
    try:
        ck = api.compile(Path(args.file), target=args.target, provider=args.provider,
                         options=_options(args.options), rulebooks=_list(args.rulebooks), kernel=args.kernel,
                         optimize=not args.no_optimize, sizes=_sizes(args.sizes),
                         calibration=_calibration(args), specialize=";".join(args.specialize or ()) or None,
                         budget=_budget(args), cache=cache, on_stage=stages.stage, on_progress=stages.step)
    except Exception as err:
        stages.close()
        if _is_usage(err):
            raise
        print(_format_error(err, args.file), file=sys.stderr)
        return EXIT_FAILED
    stages.close()
    if not args.quiet:
        for r in ck.remarks:
            print(f"{args.file}: remark: {r}", file=sys.stderr)
    if args.out is None:
        sys.stdout.write(ck.source)
        return EXIT_OK
    out = Path(args.out)
    stem = Path(args.file).stem
    for name, src in ck.sources.items():
        _write(out / f"{name}.{ck.provider}.py", src)
        print(out / f"{name}.{ck.provider}.py")
    _write(out / f"{stem}.{ck.provider}.gir", ir.print_module(ck.program))
    print(out / f"{stem}.{ck.provider}.gir")
    for specs in ck.specializations.values():
        for spec in specs:          # each KIR specialization's own program, for audit
            path = out / f"{spec.kernel}.{ck.provider}.gir"
            _write(path, ir.print_module(spec.module))
            print(path)
    return EXIT_OK


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (not the stream of the first call)."""

    @property                                   # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _configure_logging(args: argparse.Namespace) -> None:
    """``-q``: errors only; default: warnings; ``-v``: INFO (stages, cache); ``-vv``: DEBUG. On stderr."""
    level = logging.ERROR if args.quiet else {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logger = logging.getLogger("intent_eqsat")
    logger.setLevel(level)
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def cmd_print_program(args: argparse.Namespace) -> int:
    """``construct`` / ``optimize``: print the constructed / extracted GPU IR program."""
    from intent_eqsat import ir, pipeline

    try:
        # ``construct`` prints the constructed program: the optimizer does not run (minutes for attention, and
        # its failure is not the constructor's)
        res = pipeline.run(Path(args.file), target=args.target, provider=None, options=_options(args.options),
                           rulebooks=_list(getattr(args, "rulebooks", None)), sizes=_sizes(args.sizes),
                           calibration=_calibration(args), budget=_budget(args),
                           optimize_program=args.command != "construct")
    except Exception as err:
        if _is_usage(err):
            raise
        print(_format_error(err, args.file), file=sys.stderr)
        return EXIT_FAILED
    program = res.constructed if args.command == "construct" else res.program
    if args.command == "optimize":
        for r in res.optimized.remarks:
            print(f"{args.file}: remark: {r}", file=sys.stderr)
        # not part of the printed program (SPEC IR-11, issue 22 item 3): said beside it
        for name, launch in res.optimized.launch_resources.items():
            said = ", ".join(f"{k} {v}" for k, v in launch.as_dict().items() if v is not None)
            print(f"{args.file}: launch resources of kernel {name}: {said}", file=sys.stderr)
    text = ir.print_module(program)
    if args.out:
        _write(Path(args.out), text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _batch_config(args: argparse.Namespace, kind: str) -> Any:
    from intent_eqsat import pipeline
    from intent_eqsat.batch.runner import BatchConfig, collect_inputs

    exts = (".kir", ".gir") if kind == "check" else (".kir",)
    inputs = collect_inputs(args.paths, exts)
    providers = _list(getattr(args, "provider", None)) or ["triton"]
    for p in providers:
        pipeline.check_provider(p)
    if args.jobs < 1:
        raise _Usage("-j/--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise _Usage("--timeout must be positive")
    if args.executor == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise _Usage("--executor dask needs dask[distributed] (pip install 'intent-eqsat[batch]')") from None
    return BatchConfig(inputs=inputs, out=Path(args.out) if args.out else None, kind=kind, target=args.target,
                       providers=providers if kind == "compile" else [], options=_options(args.options),
                       rulebooks=_list(getattr(args, "rulebooks", None)), jobs=args.jobs, timeout=args.timeout,
                       executor=args.executor, scheduler=args.scheduler, use_cache=not args.no_cache,
                       cache_dir=Path(args.cache_dir) if args.cache_dir else None, progress=not args.no_progress,
                       plots=not getattr(args, "no_plots", False), seeds=getattr(args, "seeds", 2),
                       optimize=(getattr(args, "optimize", False) if kind == "check"
                                 else not getattr(args, "no_optimize", False)),
                       allow_unsupported=getattr(args, "allow_unsupported", False),
                       sizes=_sizes(getattr(args, "sizes", None)),
                       calibration=_calibration(args), budget=_budget(args),
                       specialize=pipeline.make_specialize(";".join(getattr(args, "specialize", None) or ()))
                       or None)


def _run_batch(args: argparse.Namespace, kind: str) -> int:
    from intent_eqsat.batch.report import summary_table
    from intent_eqsat.batch.runner import run_batch

    cfg = _batch_config(args, kind)
    result = run_batch(cfg)
    sys.stdout.write(summary_table(result.entries))
    for e in result.failed:
        print(_format_error_dict(e["error"], e["file"]), file=sys.stderr)
    if cfg.out is not None and cfg.write_reports:
        print(f"reports: {cfg.out / 'report.md'}, {cfg.out / 'report.json'}", file=sys.stderr)
    return result.exit_code


def cmd_batch(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = "build/intent-eqsat"
    return _run_batch(args, "compile")


def cmd_check(args: argparse.Namespace) -> int:
    return _run_batch(args, "check")


def _render(obj: Any) -> str:
    """Text for whatever a rules function returned."""
    for attr in ("text", "to_text", "render"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            return str(fn())
    if isinstance(obj, str):
        return obj
    if obj is None:
        return ""
    if isinstance(obj, (list, tuple)):
        rows = []
        for item in obj:
            if isinstance(item, str):
                rows.append(item)
                continue
            d = item if isinstance(item, dict) else {k: getattr(item, k) for k in ("name", "group", "law", "location")
                                                     if hasattr(item, k)}
            rest = [str(v).splitlines()[0] for k, v in d.items() if k != "name" and v not in (None, "")]
            rows.append("  ".join([str(d.get("name", item)), *rest]).rstrip())
        return "\n".join(rows)
    from intent_eqsat.pipeline import to_plain

    return json.dumps(to_plain(obj), indent=1)


def cmd_rules(args: argparse.Namespace) -> int:
    from intent_eqsat import optimizer

    fn = {"list": optimizer.list_rules, "show": optimizer.show_rule, "audit": optimizer.audit}[args.rules_command]
    if args.rules_command == "list":
        out = fn(rulebooks=_list(args.rulebooks)) if args.rulebooks else fn()
    elif args.rules_command == "show":
        try:
            out = fn(args.name, rulebooks=_list(args.rulebooks)) if args.rulebooks else fn(args.name)
        except LookupError as err:
            _err(f"rules show: {err.args[0] if err.args else f'no rule named {args.name!r}'}")
            return EXIT_USAGE
        if args.report:
            out = str(out).rstrip("\n") + "\n\n" + _firings(args.name, args.report)
    else:
        return _rules_audit(args, fn)
    text = _render(out)
    if text:
        print(text.rstrip("\n"))
    ok = getattr(out, "ok", True)
    return EXIT_OK if ok in (True, None) else EXIT_FAILED


def _rules_audit(args: argparse.Namespace, fn: Any) -> int:
    """``rules audit``: the table on stdout, progress on stderr, ``--json PATH``; exit 0 all sound, 1 a rule failed
    translation validation, 2 usage error."""
    from intent_eqsat.batch.runner import collect_inputs
    from intent_eqsat.rules.registry import RulebookError

    paths = collect_inputs(args.paths) if args.paths else None
    for name in ("examples", "programs", "min_size", "max_size", "max_elements"):
        if getattr(args, name) < 1:
            raise _Usage(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_size < args.min_size:
        raise _Usage("--max-size must be at least --min-size")
    kwargs: dict[str, Any] = dict(corpus=paths, rulebooks=_list(args.rulebooks), target=args.target,
                                  options=_options(args.options), groups=_list(args.groups),
                                  examples=args.examples, programs=args.programs, seed=args.seed,
                                  min_size=args.min_size, max_size=args.max_size, max_elements=args.max_elements,
                                  progress=not args.no_progress, variants=not args.no_option_variants)
    try:                                   # an audit function that takes fewer options gets the ones it names
        params = inspect.signature(fn).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in params}
    except (TypeError, ValueError):
        pass
    try:
        out = fn(**kwargs)
    except LookupError as err:
        _err(f"rules audit: {err.args[0] if err.args else err}")
        return EXIT_USAGE
    except RulebookError as err:
        _err(f"rules audit: {_format_error(err)}")
        return EXIT_USAGE
    except ValueError as err:          # AuditUsageError, bad option values
        if _is_usage(err) or type(err).__name__ == "AuditUsageError":
            _err(f"rules audit: {err}")
            return EXIT_USAGE
        raise
    sys.stdout.write(_render(out).rstrip("\n") + "\n")
    if args.json:
        to_json = getattr(out, "to_json", None)
        from intent_eqsat.pipeline import to_plain

        _write(Path(args.json), to_json() if callable(to_json) else json.dumps(to_plain(out), indent=1) + "\n")
        print(f"audit report: {args.json}", file=sys.stderr)
    ok = getattr(out, "ok", True)
    return EXIT_OK if ok in (True, None) else EXIT_FAILED


def cmd_explain(args: argparse.Namespace) -> int:
    from intent_eqsat import api

    try:
        ck = api.compile(Path(args.file), target=args.target, provider=args.provider,
                         options=_options(args.options), rulebooks=_list(args.rulebooks), kernel=args.kernel,
                         sizes=_sizes(args.sizes), calibration=_calibration(args), budget=_budget(args))
    except Exception as err:
        if _is_usage(err):
            raise
        print(_format_error(err, args.file), file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.write(ck.explain())
    return EXIT_OK


def cmd_opt(args: argparse.Namespace) -> int:
    """``opt FILE --group NAME``: one transformation group alone on a GPU IR program (a ``.gir`` file), printed;
    on a golden case file (``# RUN:`` lines) ``--check`` compares each case with its CHECK lines and ``--update``
    rewrites them; ``--case-from KIR`` prints a new golden case for the group (issue 22 item 5)."""
    from intent_eqsat import ir
    from intent_eqsat.optimizer import golden

    rulebooks = _list(args.rulebooks)
    try:
        if args.case_from:
            if not args.group:
                raise _Usage("opt --case-from needs --group NAME")
            sys.stdout.write(golden.case_from_kir(args.case_from, args.group, target=args.target or "sm90",
                                                  options=_options(args.options) or None, rulebooks=rulebooks,
                                                  sizes=_sizes(args.sizes)))
            return EXIT_OK
        if args.file is None:
            raise _Usage("opt needs FILE (or --case-from KIR --group NAME)")
        path = Path(args.file)
        text = path.read_text()
        if golden.RUN in text:
            if args.update:
                changed = golden.update_file(path, rulebooks)
                print(f"{path}: {changed} case(s) updated", file=sys.stderr)
                return EXIT_OK
            results = golden.check_file(path, rulebooks)
            if args.check:
                bad = [r for r in results if not r.ok]
                for r in bad:
                    sys.stdout.write(r.diff())
                print(f"{path}: {len(results) - len(bad)} of {len(results)} case(s) match", file=sys.stderr)
                return EXIT_FAILED if bad else EXIT_OK
            for r in results:
                print("\n".join(r.got))
            return EXIT_OK
        if args.check or args.update:
            raise _Usage(f"{path}: --check/--update need a golden case file (with '{golden.RUN}' lines)")
        if not args.group:
            raise _Usage("opt needs --group NAME")
        out = golden.apply_group(ir.parse_module(text, filename=str(path)), args.group, target=args.target,
                                 options=_options(args.options) if args.options else None, rulebooks=rulebooks,
                                 sizes=_sizes(args.sizes))
    except LookupError as err:
        _err(f"opt: {err.args[0] if err.args else err}")
        return EXIT_USAGE
    except OSError as err:
        _err(f"opt: {err}")
        return EXIT_USAGE
    except Exception as err:
        if _is_usage(err):
            raise
        print(_format_error(err, args.file), file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.write(out.text())
    for r in out.remarks:
        print(f"remark: {r}", file=sys.stderr)
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from intent_eqsat import pipeline
    from intent_eqsat.optimizer import diff

    try:
        res = pipeline.run(Path(args.file), target=args.target, provider=None, options=_options(args.options),
                           stop_after="verify_gir")
        out = diff(res.constructed, group=args.group, target=res.target, options=res.options,
                 rulebooks=_list(args.rulebooks))
    except LookupError as err:
        _err(f"diff: {err.args[0] if err.args else f'unknown group {args.group!r}'}")
        return EXIT_USAGE
    except Exception as err:
        if _is_usage(err):
            raise
        print(_format_error(err, args.file), file=sys.stderr)
        return EXIT_FAILED
    text = _render(out)
    if text:
        print(text.rstrip("\n"))
    return EXIT_OK


def _firings(name: str, reports: list[str]) -> str:
    """Where rule (or group) ``name`` fired in earlier runs: each batch ``report.json`` (or a folder holding one)
    lists every job's ``rules_fired``; a group name counts its rules (``group.rule`` names)."""
    lines = []
    for given in reports:
        path = Path(given)
        path = path / "report.json" if path.is_dir() else path
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            results = doc["results"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise _Usage(f"--report {given}: not a batch report.json ({type(err).__name__}: {err})") from None
        hits = []
        for e in results:
            fired = e.get("rules_fired") or {}
            n = sum(c for r, c in fired.items() if r == name or r.startswith(name + "."))
            if n:
                hits.append(f"  {e.get('file')} ({e.get('provider') or e.get('kind')}): x{n}")
        ran = sum(1 for e in results if e.get("status") == "ok" and e.get("optimizer_status") == "ran")
        lines.append(f"fired in {path} ({len(hits)} of {ran} optimized jobs):" if hits else
                     f"fired in {path}: never ({ran} optimized jobs)")
        lines.extend(hits)
    return "\n".join(lines) + "\n"


def _is_usage(err: BaseException) -> bool:
    from intent_eqsat.pipeline import UsageError

    return isinstance(err, (UsageError, _Usage))


# ---------------------------------------------------------------------------------------------- parser

def _common(p: argparse.ArgumentParser, provider: bool = True, multi_provider: bool = False) -> None:
    p.add_argument("--target", default="sm90", help="hardware target (sm80, sm90, sm100, sm120, gfx942 ...); "
                                                    "default sm90")
    if provider:
        p.add_argument("--provider", default="triton",
                       help="triton or cutile" + (" (comma-separated list)" if multi_provider else "")
                            + "; default triton")
    p.add_argument("--options", action="append", metavar="K=V",
                   help="compile option(s): numerics=source|relaxed_normalization, online_reduction=true|false, "
                        "optimization_remarks=true|false, subscript_checks=true|false, "
                        "fp32_contract=ieee|tf32|bf16x3 (repeatable or "
                        "comma-separated)")
    p.add_argument("--rulebooks", metavar="NAME[,NAME]", help="rulebooks handed to the optimizer")
    p.add_argument("--sizes", action="append", metavar="SYM=N",
                   help="the problem the cost model chooses block sizes for, e.g. M=32768,N=8192 (repeatable or "
                        "comma-separated; the program stays correct for every size)")
    p.add_argument("--calibration", action="append", metavar="FILE",
                   help="tuning file(s) of measured times (bench/tile_sweep.py run --tuning): at the measured "
                        "sizes they re-rank the block sizes of a measured program (repeatable)")
    p.add_argument("--budget", action="append", metavar="NAME=N",
                   help="the e-graph search budget per kernel, in deterministic units: iterations=40 (per group), "
                        "nodes=200000 (e-graph rows), matches=1000000 (per group), analysis_steps=24; "
                        "safety_seconds=1800 is the wall-clock safety net (an error when crossed, 'none': off) "
                        "(repeatable or comma-separated)")


def _batch_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="DIR|GLOB|FILE")
    p.add_argument("-j", "--jobs", type=int, default=_jobs_default(), help="jobs in flight (default: CPU count)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="time limit per job in seconds; the worker is killed past it (default 600)")
    p.add_argument("--executor", choices=("process", "dask"), default="process",
                   help="process: local worker processes (default); dask: dask.distributed tasks")
    p.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address (default: an in-process "
                                                          "LocalCluster)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--cache-dir", metavar="DIR", help="cache location (default: OUT/.cache)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _specialize_option(p: argparse.ArgumentParser, more: str) -> None:
    p.add_argument("--specialize", action="append", metavar="SYM=V[,V]",
                   help="one more physical kernel per value of a size symbol (SPEC IR-2), run by the launcher when "
                        "the shapes give that value, e.g. D=64,128 (repeatable)" + more)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="intent-eqsat", description="Equality-saturation optimizer of GPU "
                                     "kernels: KIR -> GPU IR -> e-graph -> Triton / cuTile.")
    from intent_eqsat.version import __version__

    parser.add_argument("--version", action="version", version=f"intent-eqsat {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log to stderr: -v each stage of each compile and cache hits (INFO), -vv more (DEBUG)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="only errors on stderr: no remarks, no progress, no warnings")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("compile", help="compile one .kir file to provider source")
    p.add_argument("file")
    _common(p)
    p.add_argument("--kernel", help="kernel printed when the module has several (default: the first)")
    p.add_argument("--no-optimize", action="store_true", help="serialize the constructed program (skip the "
                                                              "optimizer)")
    p.add_argument("--out", metavar="DIR", help="write <kernel>.<provider>.py and <stem>.<provider>.gir here "
                                                "(default: print the source to stdout)")
    _specialize_option(p, "")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the compile cache")
    p.add_argument("--cache-dir", metavar="DIR", help="compile cache folder (default $INTENT_EQSAT_CACHE_DIR or "
                                                      "~/.cache/intent-eqsat; batch --cache-dir shares it)")
    p.add_argument("--no-progress", action="store_true", help="no stage line on stderr (shown on a terminal)")
    p.set_defaults(func=cmd_compile)

    for name, what in (("construct", "print the constructed GPU IR program"),
                       ("optimize", "print the optimized (extracted) GPU IR program")):
        p = sub.add_parser(name, help=what)
        p.add_argument("file")
        _common(p, provider=False)
        p.add_argument("--out", metavar="FILE", help="write the program here instead of stdout")
        p.set_defaults(func=cmd_print_program)

    p = sub.add_parser("batch", help="compile a corpus (dirs, globs, files) with isolation, cache and reports")
    _batch_common(p)
    _common(p, multi_provider=True)
    p.add_argument("--out", metavar="DIR", help="output directory (default build/intent-eqsat)")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    p.add_argument("--no-optimize", action="store_true", help="serialize the constructed programs (skip the "
                                                              "optimizer)")
    _specialize_option(p, "; each file's kernels take the symbols they have, a file with none of them compiles "
                          "without specializations")
    p.add_argument("--allow-unsupported", action="store_true",
                   help="exit 0 when the only failures are declared Unsupported rejections (TGT-9); they are "
                        "still reported")
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser("check", help="parse, verify, construct, verify and interpret vs the KIR reference "
                                     "(.kir); parse and verify (.gir)")
    _batch_common(p)
    _common(p, provider=False)
    p.add_argument("--seeds", type=int, default=2, help="random small input sets per kernel (default 2)")
    p.add_argument("--optimize", action="store_true", help="interpret the optimized program instead of the "
                                                           "constructed one")
    p.add_argument("--out", metavar="DIR", help="write report.json / report.md here (default: no reports)")
    p.set_defaults(func=cmd_check, no_plots=False)

    p = sub.add_parser("rules", help="list, show or audit the rules")
    rsub = p.add_subparsers(dest="rules_command", metavar="list|show|audit", required=True)
    r = rsub.add_parser("list", help="every rule with its group")
    r.add_argument("--rulebooks", metavar="NAME[,NAME]")
    r = rsub.add_parser("show", help="one rule: declaration, tests, where it fired")
    r.add_argument("name")
    r.add_argument("--rulebooks", metavar="NAME[,NAME]", help="rulebooks to look the rule up in (names or paths "
                                                              "of extra rulebooks, as for compile)")
    r.add_argument("--report", action="append", metavar="FILE|DIR",
                   help="a batch report.json (or its folder): list the jobs where the rule fired, with counts "
                        "(repeatable)")
    r = rsub.add_parser("audit", help="translation validation per rule, firing counts, rules that never fire")
    r.add_argument("paths", nargs="*", metavar="DIR|GLOB|FILE", help="corpus (default: examples/corpus)")
    _common(r, provider=False)
    r.add_argument("--groups", metavar="NAME[,NAME]", help="audit only these groups (default: every group)")
    r.add_argument("--examples", type=int, default=5, metavar="N",
                   help="hypothesis-drawn instances (shapes + input values) per kernel (default 5: one per value "
                        "distribution, N(0,1), x100, wide range, signed zeros, near underflow)")
    r.add_argument("--programs", type=int, default=4, metavar="N",
                   help="programs extracted and checked per group and kernel (default 4)")
    r.add_argument("--seed", type=int, default=0, help="seed of the instances and extractions (default 0)")
    r.add_argument("--min-size", type=int, default=1, metavar="N", help="smallest shape-symbol size (default 1)")
    r.add_argument("--max-size", type=int, default=17, metavar="N", help="largest shape-symbol size (default 17)")
    r.add_argument("--max-elements", type=int, default=64, metavar="N",
                   help="bound on the product of a kernel's shape sizes (default 64; the interpreter's time grows "
                        "with it)")
    r.add_argument("--json", metavar="PATH", help="also write the audit as JSON here")
    r.add_argument("--no-progress", action="store_true", help="no per-kernel progress lines on stderr")
    r.add_argument("--no-option-variants", action="store_true",
                   help="do not re-run the groups of rules that never fired under the other settings of the "
                        "options rules read (numerics, online_reduction, optimization_remarks)")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("explain", help="why this program: cost breakdown against the runner-up")
    p.add_argument("file")
    _common(p)
    p.add_argument("--kernel")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("opt", help="one transformation group alone on a GPU IR program (golden tests)")
    p.add_argument("file", nargs="?", help="a .gir program, or a golden case file (# RUN: lines)")
    p.add_argument("--group", metavar="NAME", help="the rule group or post-extraction group to run")
    p.add_argument("--target", default=None, help="hardware target (default: the module's)")
    p.add_argument("--options", action="append", metavar="K=V", help="compile options (default: the module's)")
    p.add_argument("--rulebooks", metavar="NAME[,NAME]", help="rulebooks to find the group in")
    p.add_argument("--sizes", action="append", metavar="SYM=N", help="problem sizes for the cost model")
    p.add_argument("--check", action="store_true", help="golden file: compare each case, exit 1 on a difference")
    p.add_argument("--update", action="store_true", help="golden file: rewrite the CHECK lines")
    p.add_argument("--case-from", metavar="KIR", help="print a new golden case for --group from a .kir kernel")
    p.set_defaults(func=cmd_opt)

    p = sub.add_parser("diff", help="the program before and after one transformation group")
    p.add_argument("file")
    p.add_argument("--group", required=True, metavar="NAME")
    _common(p, provider=False)
    p.set_defaults(func=cmd_diff)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True
    try:
        return int(args.func(args))
    except _Usage as err:
        _err(f"{args.command}: {err}")
        return EXIT_USAGE
    except BrokenPipeError:          # `intent-eqsat ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as err:
        from intent_eqsat.pipeline import UsageError

        if isinstance(err, UsageError):
            _err(f"{args.command}: {err}")
            return EXIT_USAGE
        raise
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
