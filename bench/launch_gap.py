"""How much of a short kernel's ``do_bench`` time is host launch time (a GPU experiment, not part of the suite).

``triton.testing.do_bench`` clears L2 with a ~256 MB fill before each call, records the start event, then calls the
function: when the host needs longer to enqueue the kernel (our Python launcher's checks plus Triton's launch) than
the GPU needs for the fill, the GPU waits and the wait is timed. This script times prepared programs of a
``bench/perf.py prepare`` build and their anchors three ways, alternating, several rounds:

* ``do_bench`` median (what ``perf.py run`` reports),
* ``do_bench_cudagraph`` median (the launch captured once in a CUDA graph and replayed: device time only, as
  ``device/METHOD.md`` advises for short launches),
* the host time of one call (``perf_counter`` around the launch, the queue kept short).

For a Triton module it also times the bare kernel call (``kernel[grid](...)``) with the arguments our ``launch()``
computed: the host time that is Triton's own (argument binding and specialization, the driver launch) rather than
our launcher's checks, shape reads and grid evaluation.

``python3 bench/launch_gap.py --in build/perf35 --only causal_attention_bf16_narrowed --rounds 3``
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402  (bench/perf.py: inputs, anchors, module loading)


def _host_ms(torch, fn, n: int = 50) -> float:
    """Median host time of one call, synchronizing between calls so that the launch queue stays empty."""
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return sorted(ts)[len(ts) // 2]


class _Recorder:
    """Stands in for the kernel object inside launch(): keeps the grid and arguments launch() computed."""

    def __getitem__(self, grid):
        def call(*args, **kw):
            self.grid, self.args, self.kw = grid, args, kw
        return call


def launch_arguments(mod, args: list) -> tuple | None:
    """(grid, positional arguments, keyword arguments) that one ``mod.launch(*args)`` hands the module's Triton kernel,
    without launching it; None when that launch ran another kernel of the module (a specialization's)."""
    real, rec = getattr(mod, mod.KERNEL_NAME), _Recorder()
    setattr(mod, mod.KERNEL_NAME, rec)
    try:
        mod.launch(*args)
    finally:
        setattr(mod, mod.KERNEL_NAME, real)
    return (rec.grid, rec.args, rec.kw) if hasattr(rec, "grid") else None


def _bare_kernel_call(mod, args: list):
    """The Triton kernel launched directly with the grid and arguments one ``mod.launch(*args)`` computed (None: see
    :func:`launch_arguments`)."""
    got = launch_arguments(mod, args)
    if got is None:
        return None
    real, (grid, pos, kw) = getattr(mod, mod.KERNEL_NAME), got
    return lambda: real[grid](*pos, **kw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="indir", required=True)
    ap.add_argument("--only", required=True, help="comma-separated bench names")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    import torch
    import triton.testing as tt

    indir = Path(args.indir)
    man = json.loads((indir / "manifest.json").read_text())
    rows = []
    for name in args.only.split(","):
        b = next(x for x in man["benches"] if x["name"] == name)
        prog = next(p for p in man["programs"] if p["bench"] == name and p["variant"] == "pick"
                    and p["provider"] == "triton" and p["status"] == "ready")
        mod = perf._load_module(indir / prog["module"], "_gap_" + name)
        case = next(c for c in b["cases"] if "default" in c["modes"] or "full" in c["modes"])
        sizes, sc = case["sizes"], case["scalars"]
        g = torch.Generator(device="cuda")
        g.manual_seed(7)
        ins = {}
        for p in b["params"]:
            if p["dims"] is None:
                continue
            dt = perf._torch_dtype(torch, p["dtype"])
            ins[p["name"]] = torch.randn(perf.shape_of(p["dims"], sizes), generator=g, device="cuda").to(dt)
        args_ = [ins[a["name"]] if a["view"] else sc[a["name"]] for a in prog["abi"]]
        ours = lambda: mod.launch(*args_)  # noqa: E731
        fns = [("ours", ours)]
        bare = _bare_kernel_call(mod, args_) if prog["provider"] == "triton" else None
        if bare is not None:
            fns.append(("ours: kernel call", bare))
        inputs = {n: t for n, t in ins.items() if n not in b["outputs"]}
        for aname, afn in perf.anchors(torch, b["op"], b["causal"], False):
            fns.append((aname, (lambda f=afn: f(inputs, sc))))
        for _, fn in fns:
            fn()
        torch.cuda.synchronize()
        for r in range(args.rounds):
            for label, fn in fns:
                t_bench = float(tt.do_bench(fn, warmup=25, rep=100, return_mode="median"))
                t_graph = float(tt.do_bench_cudagraph(fn, rep=100, return_mode="median"))
                t_host = _host_ms(torch, fn)
                row = {"bench": name, "case": case["label"], "what": label, "round": r, "do_bench_ms": t_bench,
                       "cudagraph_ms": t_graph, "host_ms": t_host}
                rows.append(row)
                print(f"{name:40s} {label:16s} round {r}: do_bench {t_bench:.4f} ms  graph {t_graph:.4f} ms  "
                      f"host {t_host:.4f} ms", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
