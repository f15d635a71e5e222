"""Kernels compiled without ``sizes=`` (size buckets, issue 24 item 4) against the same kernels compiled for the
launch's sizes, the default binding alone and eager PyTorch, on one GPU in one run.

Two steps, because the GPU machine has no egglog:

    prepare (here):  PYTHONPATH=. .venv/bin/python bench/size_buckets.py prepare --out build/buckets
        compiles every kernel below once without sizes and once per measured shape with ``sizes=`` (no tuning
        file), writing the generated Triton sources and a manifest to ``build/buckets``.
    run (on the GPU): python3 bench/size_buckets.py run --in build/buckets --json $OUT/buckets.json
        per kernel and shape: checks each of our launches against eager PyTorch, then times with
        ``triton.testing.do_bench`` (median ms): the unsized module's ``launch()`` (it picks a size bucket variant
        by the shapes), its general kernel alone (launch resources passed, so no variant is picked: what a
        compile without sizes gave before size buckets), the sized module, and eager PyTorch. Prints a table of
        ratios: unsized / sized (target <= 1.10 for the GEMM at 4096^3) and eager / unsized.

The kernels are written the way a PyTorch user writes them; none of the shapes is a bucket level.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import two_step  # bench/two_step.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]

KERNELS = {
    # torch.matmul of half tensors, fp32 accumulation
    "gemm": ((ROOT / "examples" / "corpus" / "gemm.kir").read_text(),
             [{"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 1024}, {"M": 64, "N": 4096, "K": 4096},
              {"M": 1000, "N": 1000, "K": 1000}, {"M": 512, "N": 512, "K": 512}]),
    # x @ w of bf16 tensors (a Linear without bias)
    "mm_bf16": ("kernel mm_bf16(X: bf16[M, K], W: bf16[K, N], Y: out bf16[M, N]) {\n"
                "  Y[m, n] = cast<bf16>(sum(k: cast<f32>(X[m, k]) * cast<f32>(W[k, n])))\n}\n",
                [{"M": 4096, "N": 4096, "K": 4096}, {"M": 2048, "N": 11008, "K": 4096}, {"M": 128, "N": 4096, "K": 4096}]),
    "softmax": ((ROOT / "examples" / "corpus" / "softmax.kir").read_text(),
                [{"M": 32768, "N": 1024}, {"M": 1024, "N": 16384}, {"M": 256, "N": 333}, {"M": 65536, "N": 128}]),
    "layernorm": ((ROOT / "examples" / "corpus" / "layernorm.kir").read_text(),
                  [{"M": 8192, "N": 1024}, {"M": 2048, "N": 8192}, {"M": 300, "N": 768}]),
    "row_sum": ((ROOT / "examples" / "corpus" / "row_sum.kir").read_text(),
                [{"M": 16384, "N": 4096}, {"M": 64, "N": 262144}, {"M": 262144, "N": 64}]),
    "transpose": ((ROOT / "examples" / "corpus" / "transpose.kir").read_text(),
                  [{"M": 8192, "N": 8192}, {"M": 100, "N": 50000}]),
}


def _tag(sizes: dict) -> str:
    return "_".join(f"{k}{v}" for k, v in sorted(sizes.items()))


def prepare(out: Path) -> None:
    import intent_eqsat

    out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, (text, shapes) in KERNELS.items():
        t = time.perf_counter()
        ck = intent_eqsat.compile(text, filename=f"{name}.kir", target="sm90", provider="triton", cache=False)
        (out / f"{name}__unsized.py").write_text(ck.source)
        entry = {"unsized": f"{name}__unsized.py", "plan": ck.report["kernels"][name].get("size_buckets"),
                 "binding": ck.report["kernels"][name]["binding"], "shapes": []}
        print(f"{name}: unsized in {time.perf_counter() - t:.1f} s", flush=True)
        for sizes in shapes:
            sk = intent_eqsat.compile(text, filename=f"{name}.kir", target="sm90", provider="triton", cache=False,
                                      sizes=sizes)
            fname = f"{name}__{_tag(sizes)}.py"
            (out / fname).write_text(sk.source)
            entry["shapes"].append({"sizes": sizes, "sized": fname, "binding": sk.report["kernels"][name]["binding"],
                                    "resources": sk.report["kernels"][name]["resources"]})
        manifest[name] = entry
        print(f"{name}: {len(shapes)} sized compiles done", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


# ------------------------------------------------------------------------------------------------------ run

def _inputs(torch, name: str, s: dict):
    dev = "cuda"
    if name == "gemm":
        a = torch.randn(s["M"], s["K"], device=dev, dtype=torch.float16)
        b = torch.randn(s["K"], s["N"], device=dev, dtype=torch.float16)
        return (a, b), (torch.empty(s["M"], s["N"], device=dev, dtype=torch.float16),), lambda: a @ b
    if name == "mm_bf16":
        a = torch.randn(s["M"], s["K"], device=dev, dtype=torch.bfloat16)
        b = torch.randn(s["K"], s["N"], device=dev, dtype=torch.bfloat16)
        return (a, b), (torch.empty(s["M"], s["N"], device=dev, dtype=torch.bfloat16),), lambda: a @ b
    x = torch.randn(s["M"], s["N"], device=dev, dtype=torch.float32)
    if name == "softmax":
        return (x,), (torch.empty_like(x),), lambda: torch.softmax(x, -1)
    if name == "layernorm":
        g = torch.randn(s["N"], device=dev)
        bt = torch.randn(s["N"], device=dev)
        return (x, g, bt, 1e-5), (torch.empty_like(x),), \
            lambda: torch.nn.functional.layer_norm(x, (s["N"],), g, bt, 1e-5)
    if name == "row_sum":
        return (x,), (torch.empty(s["M"], device=dev),), lambda: x.sum(-1)
    if name == "transpose":
        return (x,), (torch.empty(s["N"], s["M"], device=dev),), lambda: x.t().contiguous()
    raise KeyError(name)


def _close(torch, got, want) -> bool:
    got, want = got.float(), want.float()
    tol = 2e-2 if got.dtype != want.dtype or want.abs().max() > 100 else 1e-3
    return bool(torch.allclose(got, want, rtol=tol, atol=tol * max(1.0, float(want.abs().max()))))


def run(inp: Path, json_out: Path | None) -> None:
    import torch
    import triton
    from intent_eqsat.providers.loader import load_path

    manifest = json.loads((inp / "manifest.json").read_text())
    rows = []
    for name, entry in manifest.items():
        unsized = load_path(inp / entry["unsized"])
        for shape in entry["shapes"]:
            s = shape["sizes"]
            sized = load_path(inp / shape["sized"])
            ins, outs, ref = _inputs(torch, name, s)
            want = ref()
            torch.cuda.synchronize()
            general_opts = dict(unsized.LAUNCH_OPTIONS)
            launches = {
                "unsized": lambda: unsized.launch(*ins, *outs),
                "default_binding": lambda: unsized.launch(*ins, *outs, num_warps=general_opts["num_warps"],
                                                          num_stages=general_opts["num_stages"]),
                "sized": lambda: sized.launch(*ins, *outs),
            }
            row = {"kernel": name, "sizes": s, "sized_binding": shape["binding"]}
            if entry["plan"]:
                syms = entry["plan"]["symbols"]
                levels = tuple(sum(s[x] >= e for e in entry["plan"]["edges"]) for x in syms)
                v = dict((tuple(k), v) for k, v in entry["plan"]["table"]).get(levels, 0)
                row["variant"] = v
                row["picked_binding"] = entry["plan"]["variants"][v]["binding"]
            else:
                row["variant"], row["picked_binding"] = 0, entry["binding"]
            ok = True
            for key, fn in launches.items():
                outs[0].zero_()
                fn()
                torch.cuda.synchronize()
                good = _close(torch, outs[0], want)
                ok = ok and good
                row[f"{key}_ok"] = good
            for key, fn in (*launches.items(), ("eager", ref)):
                row[f"{key}_ms"] = float(triton.testing.do_bench(fn, warmup=25, rep=200))
            row["unsized_over_sized"] = row["unsized_ms"] / row["sized_ms"]
            row["default_over_unsized"] = row["default_binding_ms"] / row["unsized_ms"]
            row["eager_over_unsized"] = row["eager_ms"] / row["unsized_ms"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    dev = torch.cuda.get_device_name()
    print(f"\n{dev}, torch {torch.__version__}, triton {triton.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'kernel':10} {'sizes':28} {'var':>3} {'unsized':>9} {'default':>9} {'sized':>9} {'eager':>9}"
          f" {'uns/sized':>9} {'dflt/uns':>8} {'eager/uns':>9} ok")
    for r in rows:
        sz = "x".join(str(v) for v in r["sizes"].values())
        ok = all(r[k] for k in r if k.endswith("_ok"))
        print(f"{r['kernel']:10} {sz:28} {r['variant']:>3} {r['unsized_ms']:9.4f} {r['default_binding_ms']:9.4f} "
              f"{r['sized_ms']:9.4f} {r['eager_ms']:9.4f} {r['unsized_over_sized']:9.3f} "
              f"{r['default_over_unsized']:8.3f} {r['eager_over_unsized']:9.3f} {'ok' if ok else 'MISMATCH'}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"device": dev, "torch": torch.__version__, "triton": triton.__version__,
                                        "rows": rows}, indent=1))


def main(argv: list[str] | None = None) -> int:
    return two_step.main(argv, __doc__, prepare, run, ROOT / "build" / "buckets")


if __name__ == "__main__":
    sys.exit(main())
