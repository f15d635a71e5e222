"""What the run-time checks of data-dependent subscripts cost (issue 25.2), beside eager PyTorch and torch.compile.

Kernels written as a PyTorch user would (an embedding lookup, a gather-sum, a target pick under an ignore index,
a histogram into an inout view), each compiled twice: ``subscript_checks`` on (the default: the access is masked,
out-of-range members set a flag word, the launcher reads it after the launch) and off. Two steps, because the
device has no egglog:

    python bench/subscript_checks.py prepare --out build/subscript_checks      # here: compile, write the sources
    python3 bench/subscript_checks.py run --in build/subscript_checks          # on the GPU: check, time, table

``run`` checks every variant against the eager result on fresh random inputs, checks that an out-of-range index
raises ``SubscriptOutOfRange`` with checks on, then times with ``triton.testing.do_bench`` (median ms) ours-on,
ours-off, eager and torch.compile side by side, and prints ratios (eager / ours: above 1 is faster than eager).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: (name, KIR source, sizes for the cost model and the run)
KERNELS = [
    ("embedding", "kernel embedding(E: f32[V, D], idx: i64[N], Out: out f32[N, D]) {\n"
                  "  Out[i, d] = E[idx[i], d]\n}\n", {"V": 50257, "D": 1024, "N": 16384}),
    ("gather_sum", "kernel gather_sum(X: f32[V], idx: i32[N, K], Y: out f32[N]) {\n"
                   "  Y[i] = sum(k: X[idx[i, k]])\n}\n", {"V": 1 << 20, "N": 1 << 18, "K": 64}),
    ("pick", "kernel pick(X: f32[N, C], T: i64[N], L: out f32[N]) {\n"
             "  L[i] = X[i, T[i]] where T[i] >= 0 else 0.0\n}\n", {"N": 1 << 20, "C": 1000}),
    ("histogram", "kernel histogram(X: i32[N], H: inout i32[B]) {\n  H[X[i]] += 1 collide add\n}\n",
     {"N": 1 << 24, "B": 1000}),
]


def prepare(out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from intent_eqsat import api

    out.mkdir(parents=True, exist_ok=True)
    meta = {}
    for name, text, sizes in KERNELS:
        for checks in (True, False):
            ck = api.compile(text, filename=f"{name}.kir", sizes=sizes, options={"subscript_checks": checks})
            tag = f"{name}_{'on' if checks else 'off'}"
            (out / f"{tag}.py").write_text(ck.source)
            meta[tag] = {"sizes": sizes, "checks": checks}
            print(f"{tag}: {len(ck.source.splitlines())} lines", flush=True)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _inputs(torch, name: str, s: dict, g):
    dev = "cuda"
    if name == "embedding":
        return {"E": torch.randn(s["V"], s["D"], device=dev, generator=g),
                "idx": torch.randint(0, s["V"], (s["N"],), device=dev, generator=g),
                "Out": torch.empty(s["N"], s["D"], device=dev)}
    if name == "gather_sum":
        return {"X": torch.randn(s["V"], device=dev, generator=g),
                "idx": torch.randint(0, s["V"], (s["N"], s["K"]), device=dev, generator=g, dtype=torch.int32),
                "Y": torch.empty(s["N"], device=dev)}
    if name == "pick":
        t = torch.randint(0, s["C"], (s["N"],), device=dev, generator=g)
        t[torch.rand(s["N"], device=dev, generator=g) < 0.1] = -1
        return {"X": torch.randn(s["N"], s["C"], device=dev, generator=g), "T": t, "L": torch.empty(s["N"], device=dev)}
    return {"X": torch.randint(0, s["B"], (s["N"],), device=dev, generator=g, dtype=torch.int32),
            "H": torch.zeros(s["B"], device=dev, dtype=torch.int32)}


def _eager(torch, name: str):
    if name == "embedding":
        return lambda a: torch.index_select(a["E"], 0, a["idx"])
    if name == "gather_sum":
        return lambda a: a["X"][a["idx"]].sum(1)
    if name == "pick":
        return lambda a: torch.where(a["T"] >= 0, a["X"].gather(1, a["T"].clamp(min=0)[:, None])[:, 0], 0.0)
    return lambda a: a["H"] + torch.bincount(a["X"], minlength=a["H"].numel()).to(torch.int32)


def _out_name(name: str) -> str:
    return {"embedding": "Out", "gather_sum": "Y", "pick": "L", "histogram": "H"}[name]


def run(src: Path) -> None:
    import importlib.util

    import torch
    from triton.testing import do_bench

    meta = json.loads((src / "meta.json").read_text())
    rows = []
    for name, _text, sizes in KERNELS:
        mods = {}
        for checks in ("on", "off"):
            spec = importlib.util.spec_from_file_location(f"{name}_{checks}", src / f"{name}_{checks}.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mods[checks] = mod
        g = torch.Generator(device="cuda").manual_seed(1)
        a = _inputs(torch, name, sizes, g)
        eager = _eager(torch, name)
        compiled = torch.compile(eager)
        out = _out_name(name)
        for checks, mod in mods.items():                         # correctness on fresh inputs
            b = _inputs(torch, name, sizes, g)
            want = eager(b)                          # histogram: H starts at zero, so want = the counts
            if name != "histogram":
                b[out].fill_(float("nan"))           # poisoned: every element must be written
            mod.launch(**b)
            torch.cuda.synchronize()
            err = (b[out].double() - want.double()).norm() / max(want.double().norm().item(), 1e-30)
            assert err.item() < 1e-5, (name, checks, err.item())
        bad = _inputs(torch, name, sizes, g)
        key = {"embedding": "idx", "gather_sum": "idx", "pick": "T", "histogram": "X"}[name]
        bad[key].view(-1)[bad[key].numel() // 2] = sizes.get("V", sizes.get("C", sizes.get("B"))) + 3
        try:
            mods["on"].launch(**bad)
            torch.cuda.synchronize()
            raised = "no"
        except IndexError as e:
            raised = type(e).__name__
        t = {"on": do_bench(lambda: mods["on"].launch(**a), return_mode="median"),
             "off": do_bench(lambda: mods["off"].launch(**a), return_mode="median"),
             "eager": do_bench(lambda: eager(a), return_mode="median"),
             "compile": do_bench(lambda: compiled(a), return_mode="median")}
        rows.append((name, sizes, t, raised))
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"{'kernel':<11} {'on ms':>8} {'off ms':>8} {'eager ms':>9} {'compile ms':>10} {'on/off':>7} "
          f"{'eager/on':>9} {'compile/on':>10}  raises")
    for name, sizes, t, raised in rows:
        print(f"{name:<11} {t['on']:8.4f} {t['off']:8.4f} {t['eager']:9.4f} {t['compile']:10.4f} "
              f"{t['on'] / t['off']:7.3f} {t['eager'] / t['on']:9.3f} {t['compile'] / t['on']:10.3f}  {raised}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("run")
    b.add_argument("--in", dest="src", type=Path, required=True)
    args = p.parse_args()
    prepare(args.out) if args.cmd == "prepare" else run(args.src)


if __name__ == "__main__":
    main()
