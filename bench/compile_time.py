"""Compile time per kernel on this machine: load, construct, optimize (encode, saturate, extract, bind), verify,
serialize for Triton - wall-clock and CPU seconds side by side.

Usage::

    python bench/compile_time.py [--target sm90] [--suite] [--busy N] [--json out.json] [FILE.kir ...]

Without files it compiles every ``examples/corpus`` kernel (no sizes: the model's default problem); ``--suite``
adds every ``bench/perf.py`` suite bench with the sizes, options and specializations the benchmark compiles it
with (attention at Z4 H32 S4096 with ``numerics=relaxed_normalization``, ...). ``--busy N`` keeps N CPU-bound
processes running beside it (issue 21 measures "the 2-core machine with the other core busy": ``--busy 1``).

Each line: wall and CPU seconds (``time.process_time`` of this process: the compile's own work, whatever else
the machine runs), the optimizer's phases that took longest, the groups stopped by a budget limit (none expected:
the budget is deterministic, so a load can slow a compile but never change its program), e-graph rows, and the
first 12 hex digits of the source's sha256 (two runs on differently loaded machines must print the same digits).
The summary gives the median and the maximum of both columns. docs/perf.md records the figures with date and
machine.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import intent_eqsat

ROOT = Path(__file__).resolve().parents[1]
BUSY = "import time\nend = time.time() + 7200\nwhile time.time() < end:\n    pass\n"


def corpus_cases() -> list[dict]:
    return [{"name": Path(p).stem, "path": p, "kernel": None, "sizes": None, "options": None, "specialize": None,
             "rulebooks": None}
            for p in sorted(glob.glob(str(ROOT / "examples" / "corpus" / "*.kir")))]


def suite_cases() -> list[dict]:
    """Every bench of ``bench/perf.py`` as the benchmark's prepare step compiles it."""
    sys.path.insert(0, str(ROOT / "bench"))
    import perf  # noqa: E402 - the benchmark's own suite table

    out = []
    for b in perf.SUITE:
        path = perf.SUITE_DIR / f"{b.source or b.name}.kir"
        text = path.read_text()
        if b.source:                                   # the same kernel under this bench's name
            text = text.replace(f"kernel {b.source}(", f"kernel {b.name}(")
        out.append({"name": b.name, "path": str(path), "text": text, "kernel": b.name, "sizes": b.compile_sizes,
                    "options": b.options, "specialize": b.specialize,
                    "rulebooks": perf._rulebooks_without(b.without_groups)})
    return out


def compile_one(case: dict, target: str) -> dict:
    src = case.get("text") or Path(case["path"])
    t0, c0 = time.perf_counter(), time.process_time()
    ck = intent_eqsat.compile(src, target=target, provider="triton", kernel=case["kernel"],
                              filename=case["path"], sizes=case["sizes"], options=case["options"],
                              specialize=case["specialize"], rulebooks=case["rulebooks"])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    phases = ck.report.get("optimize_phases", {})
    top = sorted(((k, v) for k, v in phases.items() if k != "total" and not k.startswith("group:")),
                 key=lambda kv: -kv[1])[:3]
    groups = sorted(((k[6:], v) for k, v in phases.items() if k.startswith("group:")), key=lambda kv: -kv[1])[:2]
    limited = [f"{g['group']}:{g['stop']}" for k in ck.report.get("kernels", {}).values() for g in k["groups"]
               if g["stop"] != "saturated"]
    return {"kernel": case["name"], "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "phases": {k: round(v, 3) for k, v in top}, "groups": {k: round(v, 3) for k, v in groups},
            "limited": limited, "egraph_size": ck.report.get("egraph_size"),
            "sha": hashlib.sha256("".join(ck.sources[k] for k in sorted(ck.sources)).encode()).hexdigest()[:12]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="sm90")
    ap.add_argument("--suite", action="store_true", help="also the bench/perf.py suite at its compile sizes")
    ap.add_argument("--only-suite", action="store_true", help="the suite alone")
    ap.add_argument("--match", action="append", metavar="TEXT", help="only kernels whose name contains TEXT "
                    "(repeatable)")
    ap.add_argument("--busy", type=int, default=0, metavar="N", help="CPU-bound processes kept running beside it")
    ap.add_argument("--json", default=None)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    if args.files:
        cases = [{"name": Path(p).stem, "path": p, "kernel": None, "sizes": None, "options": None,
                  "specialize": None, "rulebooks": None} for p in args.files]
    else:
        cases = [] if args.only_suite else corpus_cases()
        if args.suite or args.only_suite:
            cases += suite_cases()
    if args.match:
        cases = [c for c in cases if any(m in c["name"] for m in args.match)]
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
    rows = []
    try:
        for case in cases:
            try:
                row = compile_one(case, args.target)
            except Exception as err:  # noqa: BLE001 - reported, the table goes on
                row = {"kernel": case["name"], "wall_s": None, "cpu_s": None, "error": f"{type(err).__name__}: "
                       f"{str(err).splitlines()[0] if str(err) else ''}"}
                print(f"{case['name']:<40} ERROR {row['error']}", flush=True)
                rows.append(row)
                continue
            rows.append(row)
            print(f"{row['kernel']:<40} {row['wall_s']:7.2f} s wall {row['cpu_s']:7.2f} s cpu  "
                  f"e-graph {row['egraph_size']:>6}  {row['sha']}  limited={row['limited'] or '-'}  "
                  f"{row['phases']} {row['groups']}", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    ok = [r for r in rows if r.get("wall_s") is not None]
    summary = {"target": args.target, "busy": args.busy, "kernels": len(rows), "errors": len(rows) - len(ok),
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count()}
    if ok:
        for col in ("wall_s", "cpu_s"):
            summary[f"median_{col}"] = round(statistics.median(r[col] for r in ok), 3)
            worst = max(ok, key=lambda r: r[col])
            summary[f"max_{col}"] = [worst["kernel"], worst[col]]
        summary["limited"] = sum(1 for r in ok if r["limited"])
        print(f"median over {len(ok)} kernels ({args.target}, {args.busy} busy process(es)): "
              f"{summary['median_wall_s']:.2f} s wall, {summary['median_cpu_s']:.2f} s cpu; max "
              f"{summary['max_wall_s'][1]:.2f} s wall ({summary['max_wall_s'][0]}); "
              f"{summary['limited']} stopped by a budget limit; {summary['errors']} error(s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "kernels": rows}, indent=1) + "\n")
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
