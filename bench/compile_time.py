"""Compile time per corpus kernel on this machine: construct + encode + saturate + extract + decode + verify.

Usage: ``python bench/compile_time.py [--target sm90] [--json out.json]``. Prints one line per kernel and the median
last. Timings are wall-clock on whatever machine runs it; docs/perf.md records the figure with date and machine.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.rules import optimize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="sm90")
    ap.add_argument("--json", default=None)
    ap.add_argument("files", nargs="*", default=sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir"))))
    args = ap.parse_args(argv)
    rows = []
    for path in args.files:
        with open(path) as f:
            text = f.read()
        t0 = time.perf_counter()
        module = kir.parse(text, filename=path)
        program = construct(module)
        result = optimize(program, target=args.target)
        ir.verify(result.program)
        dt = time.perf_counter() - t0
        blocked = any("ceil_div" in str(e) for k in result.program.kernels for s in k.space.segments
                      for e in s.extents)
        rows.append({"kernel": os.path.basename(path)[:-4], "seconds": round(dt, 3), "blocked": blocked,
                     "egraph_size": result.report.get("egraph_size"), "remarks": list(result.remarks)})
        print(f"{rows[-1]['kernel']:<22} {dt:7.2f} s  blocked={blocked}  e-graph={rows[-1]['egraph_size']}",
              flush=True)
    med = statistics.median(r["seconds"] for r in rows)
    print(f"median compile time over {len(rows)} kernels ({args.target}): {med:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "median_seconds": med, "kernels": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
