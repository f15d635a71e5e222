"""Reductions to a scalar split over programs (``ir/split_reduction.py``, issue 27 items 1-2), timed at the launch
resources the model picked and at other warp counts, beside eager PyTorch and torch.compile on one GPU in one run.

Why: the split programs stream one ``[1024]`` fragment per step; the cost model gives such a fragment one warp
(32 members per thread), and whether 4 or 8 warps per program stream faster is a measured question, not a
modelled one. Two steps (the GPU machine has no egglog):

    prepare (here): .venv/bin/python bench/perf.py prepare --providers triton --no-candidates --in-process \\
                        --only mse_f32,huber_f32,fro_bf16,sum_f32 --out build/perf27
    run (on the GPU): python3 bench/scalar_reduction_warps.py --in build/perf27 [--json FILE]
        per kernel and shape: checks the launch against torch in float64 (relative error of the scalar), then
        times it with ``num_warps`` 1, 2, 4, 8 and eager PyTorch and torch.compile with ``triton.testing.do_bench``
        (median ms); prints a table of ratios (anchor time / our time) last.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: kernel -> (shapes, a torch function of the read views in ABI order, what a PyTorch user writes)
CASES = {
    "mse_f32": ([{"M": 32768, "N": 32768}, {"M": 4096, "N": 4096}, {"M": 3, "N": 1000003}],
                lambda F, torch: lambda X, T: F.mse_loss(X, T)),
    "huber_f32": ([{"B": 32, "S": 2048, "H": 4096}, {"B": 7, "S": 1000, "H": 333}],
                  lambda F, torch: lambda X, T: F.huber_loss(X, T, delta=1.0)),
    "fro_bf16": ([{"N": (1 << 28) + 3}, {"N": 1 << 20}],
                 lambda F, torch: lambda X: torch.linalg.vector_norm(X.float())),
    "sum_f32": ([{"N": 1 << 26}, {"N": 1 << 30}], lambda F, torch: lambda X: X.sum()),
}
WARPS = (1, 2, 4, 8)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="indir", type=Path, default=ROOT / "build" / "perf27")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    dev = "cuda"
    rows = []
    for name, (shapes, make) in CASES.items():
        src = args.indir / "gen" / f"{name}__triton__pick.py"
        if not src.is_file():
            print(f"{name}: no {src}", flush=True)
            continue
        mod = _load(src)
        fn = make(F, torch)
        compiled = torch.compile(fn, dynamic=False)
        for sizes in shapes:
            torch.manual_seed(0)
            if name in ("mse_f32", "huber_f32"):
                shape = tuple(sizes.values())
                ins = [torch.randn(shape, device=dev), torch.randn(shape, device=dev)]
            elif name == "fro_bf16":
                ins = [torch.randn(sizes["N"], device=dev).to(torch.bfloat16)]
            else:
                ins = [torch.rand(sizes["N"], device=dev)]
            out = torch.zeros((), device=dev)
            mod.launch(*ins, out)
            want = fn(*[x.double() for x in ins]).item()
            rel = abs(out.item() - want) / abs(want)
            row = {"kernel": name, "sizes": sizes, "rel_err": rel,
                   "eager_rel_err": abs(fn(*ins).item() - want) / abs(want),
                   "picked_warps": mod.LAUNCH_OPTIONS["num_warps"]}
            for w in WARPS:
                row[f"w{w}_ms"] = do_bench(lambda: mod.launch(*ins, out, num_warps=w), warmup=25, rep=100)
            row["eager_ms"] = do_bench(lambda: fn(*ins), warmup=25, rep=100)
            compiled(*ins)
            row["compile_ms"] = do_bench(lambda: compiled(*ins), warmup=25, rep=100)
            row["bytes"] = sum(x.numel() * x.element_size() for x in ins)
            rows.append(row)
            print(json.dumps(row), flush=True)
            ins.clear()
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"\n{torch.cuda.get_device_name()}; ratio = anchor ms / our ms; GB/s of our best")
    print(f"{'kernel':10} {'shape':22} {'rel err':>8} {'eager err':>9} " + " ".join(f"{'w' + str(w):>7}" for w in WARPS)
          + f" {'eager':>7} {'compile':>7} {'vs eager':>8} {'vs comp':>8} {'GB/s':>6}")
    for r in rows:
        ours = {w: r[f"w{w}_ms"] for w in WARPS}
        pick = ours[r["picked_warps"]]
        best = min(ours.values())
        shape = "x".join(str(v) for v in r["sizes"].values())
        print(f"{r['kernel']:10} {shape:22} {r['rel_err']:8.1e} {r['eager_rel_err']:9.1e} "
              + " ".join(f"{ours[w]:7.3f}" for w in WARPS)
              + f" {r['eager_ms']:7.3f} {r['compile_ms']:7.3f} {r['eager_ms'] / pick:8.2f} "
                f"{r['compile_ms'] / pick:8.2f} {r['bytes'] / best / 1e6:6.0f}")
    print("(vs eager / vs comp at the picked warps; w1..w8 ms at num_warps 1..8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
