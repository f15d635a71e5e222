"""Sweep the tile bindings and launch options of one compiled kernel on the GPU, next to its anchor (cost-model
calibration for what the model does not see yet: a program re-reading its own rows from L2 in a later pass, the
warps and pipeline stages a tensor-core program needs).

    python bench/tile_sweep.py prepare bench/suite/softmax_f32.kir --sizes M=32768,N=8192 \\
        --bind TILE_B0=1,2,4,8,32,128 --bind TILE_B1=128,256 --warps 4,8 --out build/sweep
    python bench/tile_sweep.py prepare bench/suite/gemm_bf16.kir --op matmul --dtype bf16 \\
        --sizes M=4096,N=4096,K=4096 --bind TILE_B0=64,128 --bind TILE_B1=128,256 --warps 4,8 --stages 3,4
    python bench/tile_sweep.py prepare bench/suite/attention_bf16_d64.kir --op attention --dtype bf16 \\
        --options numerics=relaxed_normalization --sizes Z=4,H=32,S=4096,T=4096,D=64 \\
        --bind TILE_B0=64,128 --bind TILE_N=64,128 --bind TILE_K=64 --index-bits 32,64 --warps 4,8 --stages 2,3
    python bench/tile_sweep.py run build/sweep          # on the GPU (triton + torch there)

``prepare`` compiles the kernel with ``sizes`` (the model's pick), then writes one Triton module per binding of the
pick's own program (the tile parameters rebound, and with ``--index-bits`` the index width, verified, serialized);
its launch takes the ABI in order (``X, Y`` for a row op, ``A, B, C`` for matmul, ``Q, K, V, scale, O`` for
attention; ``--sizes`` then names ``D`` too, as ``bench/perf.py``'s compile sizes do, so the measurements key the
same problem). ``run`` launches each module with every (num_warps, num_stages) pair of the
manifest, checks it against the op's torch reference (torch.compile of it for row ops, cuBLAS ``torch.matmul`` for
matmul: also the anchor) and times it with ``triton.testing.do_bench`` (median) in the same process as the anchor;
it prints a table of ratios last.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: torch references of the ops this sweep knows (named in the manifest by the user): the launch's inputs in ABI
#: order (a tensor's shape over the sizes, or a Python float scalar), the reference expression over them (``a``),
#: and whether the anchor is torch.compile of it (row ops) or itself (cuBLAS)
REFERENCES = {
    "softmax": ((("M", "N"),), "torch.softmax(a[0].float(), dim=-1).to(a[0].dtype)", True),
    "row_sum": ((("M", "N"),), "a[0].float().sum(dim=-1).to(a[0].dtype)", True),
    "layernorm": ((("M", "N"), ("N",), ("N",), 1e-5), "torch.nn.functional.layer_norm(a[0].float(), a[0].shape[-1:], "
                  "a[1].float(), a[2].float(), a[3]).to(a[0].dtype)", True),
    "rmsnorm": ((("M", "N"), ("N",), 1e-5), "(a[0].float() * torch.rsqrt(a[0].float().pow(2).mean(-1, keepdim=True) "
                "+ a[2]) * a[1].float()).to(a[0].dtype)", True),
    "matmul": ((("M", "K"), ("K", "N")), "torch.matmul(a[0], a[1])", False),
    "matmul_bias_relu": ((("M", "K"), ("K", "N"), ("N",)), "torch.relu(torch.addmm(a[2], a[0], a[1]))", False),
    "bmm": ((("Bt", "M", "K"), ("Bt", "K", "N")), "torch.bmm(a[0], a[1])", False),
    # SDPA with torch's own backend choice (cuDNN or flash on the H200): the sweep's anchor; bench/perf.py times both
    "attention": ((("Z", "H", "S", "D"), ("Z", "H", "T", "D"), ("Z", "H", "T", "D"), 0.125),
                  "torch.nn.functional.scaled_dot_product_attention(a[0], a[1], a[2], scale=a[3])", False),
    "causal_attention": ((("Z", "H", "S", "D"), ("Z", "H", "T", "D"), ("Z", "H", "T", "D"), 0.125),
                         "torch.nn.functional.scaled_dot_product_attention(a[0], a[1], a[2], scale=a[3], "
                         "is_causal=True)", False),
}


def prepare(args: argparse.Namespace) -> None:
    from intent_eqsat import ir, kir
    from intent_eqsat.construct import construct
    from intent_eqsat.extract.calibration import fingerprint
    from intent_eqsat.extract.cost import RooflineCost, estimate
    from intent_eqsat.ir.core import Module
    from intent_eqsat.pipeline import serialize
    from intent_eqsat.pipeline import make_options
    from intent_eqsat.providers.launch_resources import LaunchResources
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.optimizer import optimize

    sizes = {k: int(v) for k, v in (kv.split("=") for kv in args.sizes.split(","))}
    options = dict(kv.split("=") for kv in args.options.split(",")) if args.options else None
    module = kir.parse(Path(args.kir).read_text(), filename=args.kir)
    name = module.kernels[0].name
    result = optimize(construct(module, options=make_options(options)), target="sm90",
                      cost=RooflineCost(get_target("sm90"), sizes))
    kr = result.kernels[name]
    same_term = [c for c in kr.candidates if c.forbidden is None and c.term is not None]
    if not same_term:
        raise SystemExit(f"{name}: the pick has no tile parameters to rebind")
    base = same_term[0]
    structure = fingerprint(replace(base, params={}).decode())     # the pick's program before its tiles are bound
    axes = {}
    for spec in args.bind:
        key, vals = spec.split("=")
        axes[key] = [int(v) for v in vals.split(",")]
    out = Path(args.out)
    (out / "gen").mkdir(parents=True, exist_ok=True)
    entries = []
    widths = [int(b) for b in args.index_bits.split(",")] if args.index_bits else [None]
    for combo, bits in itertools.product(itertools.product(*axes.values()), widths):
        binding = {**kr.binding, **dict(zip(axes, combo))}
        cand = replace(base, params=binding)
        kernel, launch_res = cand.decode(), cand.launch_resources() or LaunchResources()
        if bits is not None:                          # the index width as one more swept choice (TGT-4)
            launch_res = LaunchResources(index_bits=bits).over(launch_res)
        prog = Module(result.program.target, result.program.options, list(result.program.params), [kernel])
        tag = "_".join(f"{k[5:].lower()}{v}" for k, v in sorted(binding.items())) + (f"_i{bits}" if bits else "")
        try:
            ir.verify(prog)
            src = serialize(prog, provider="triton", target="sm90", launch_resources={name: launch_res})[name]
        except Exception as err:                      # noqa: BLE001 - an illegal binding is data
            entries.append({"binding": binding, "status": f"rejected: {type(err).__name__}: {err}"[:300]})
            continue
        f = out / "gen" / f"{name}__{tag}.py"
        f.write_text(src)
        pick = binding == kr.binding and bits in (None, (kr.launch_resources or LaunchResources()).index_bits or 64)
        entries.append({"binding": binding, "status": "ready", "module": str(f.relative_to(out)),
                        "predicted_s": float(estimate(kernel, "sm90", sizes).total), "pick": pick,
                        # the index width the source was printed with (no width bound: the provider's 64 bits)
                        "index_bits": launch_res.index_bits or 64})
    launch = {"warps": [int(w) for w in args.warps.split(",")], "stages": [int(s) for s in args.stages.split(",")]}
    (out / "manifest.json").write_text(json.dumps({"kernel": name, "op": args.op, "sizes": sizes, "dtype": args.dtype,
                                                   "target": "sm90", "fingerprint": structure,
                                                   "launch": launch, "entries": entries}, indent=1))
    print(f"[sweep] {name}: {sum(e['status'] == 'ready' for e in entries)} programs ready; pick {kr.binding}")


def run(args: argparse.Namespace) -> None:
    import importlib.util

    import torch
    from triton.testing import do_bench

    from intent_eqsat.extract.calibration import Calibration, measurement

    out = Path(args.dir)
    man = json.loads((out / "manifest.json").read_text())
    shapes, expr, compile_anchor = REFERENCES[man["op"]]
    dtype = getattr(torch, {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[man["dtype"]])
    inputs = [shape if isinstance(shape, float) else
              torch.randn(*(man["sizes"][s] for s in shape), device="cuda", dtype=dtype) for shape in shapes]
    ref_fn = eval("lambda *a: " + expr, {"torch": torch})   # noqa: S307 - our own table
    ref = ref_fn(*inputs)
    anchor = torch.compile(ref_fn) if compile_anchor else ref_fn
    anchor(*inputs)
    t_anchor = do_bench(lambda: anchor(*inputs), warmup=25, rep=100)
    launch = man.get("launch", {"warps": [4], "stages": [3]})
    device = torch.cuda.get_device_name()
    measured: list = []
    rows = []
    for e in man["entries"]:
        if e["status"] != "ready":
            rows.append((e["binding"], "-", "-", e["status"][:60]))
            continue
        spec = importlib.util.spec_from_file_location("_sweep_" + str(len(rows)), out / e["module"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for warps, stages in itertools.product(launch["warps"], launch["stages"]):
            label = {**e["binding"], "warps": warps, "stages": stages}
            y = torch.full_like(ref, float("nan"))
            try:
                mod.launch(*inputs, y, num_warps=warps, num_stages=stages)
                torch.cuda.synchronize()
            except Exception as err:                  # noqa: BLE001 - an option the compiler refuses is data
                rows.append((label, "-", "-", f"failed: {type(err).__name__}: {err}"[:80]))
                continue
            err = float(((y.float() - ref.float()).norm() / ref.float().norm()).item())
            t = do_bench(lambda: mod.launch(*inputs, y, num_warps=warps, num_stages=stages), warmup=25, rep=100)
            if err < 2e-2 and man.get("fingerprint"):      # a wrong result is not a tuning measurement
                measured.append(measurement(man["fingerprint"], man["target"], man["sizes"], e["binding"],
                                            warps * 32, stages, t * 1e-3, device,
                                            index_bits=e.get("index_bits")))
            rows.append((label, f"{t:.4f}", f"{t_anchor / t:.3f}x",
                         f"rel_l2 {err:.1e}; predicted {e['predicted_s'] * 1e3:.3f} ms{' (pick)' if e['pick'] else ''}"))
    sizes = "x".join(f"{k}={v}" for k, v in man["sizes"].items())
    print(f"{man['kernel']} {sizes} {man['dtype']} on {torch.cuda.get_device_name()}; "
          f"{'torch.compile' if compile_anchor else expr} {t_anchor:.4f} ms")
    for b, t, r, note in rows:
        print(f"  {json.dumps(b):80s} {t:>9s} ms {r:>8s}  {note}")
    if args.tuning and measured:
        tuning = Path(args.tuning)
        cal = Calibration.load(tuning) if tuning.exists() else Calibration()
        cal.measurements.extend(measured)
        cal.save(tuning, device=device, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 what="bench/tile_sweep.py: do_bench median per (structure, sizes, tile binding, threads, stages)")
        print(f"[sweep] {len(measured)} measurements appended to {tuning}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("kir")
    a.add_argument("--sizes", required=True)
    a.add_argument("--bind", action="append", default=[], help="PARAM=v1,v2,... (repeatable)")
    a.add_argument("--op", default="softmax", choices=sorted(REFERENCES))
    a.add_argument("--dtype", default="f32")
    a.add_argument("--warps", default="4", help="num_warps values to launch each module with (comma-separated)")
    a.add_argument("--stages", default="3", help="num_stages values to launch each module with (comma-separated)")
    a.add_argument("--options", default="", help="compile options, e.g. numerics=relaxed_normalization")
    a.add_argument("--index-bits", default="", help="index widths to print each binding with (e.g. 32,64; default: "
                                                    "the pick's)")
    a.add_argument("--out", default=str(ROOT / "build" / "sweep"))
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--tuning", default=None, metavar="FILE",
                   help="append the measurements to this tuning file (what compile --calibration reads)")
    args = p.parse_args()
    prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    main()
