"""Sweep the tile bindings of one compiled row kernel on the GPU, next to torch.compile (cost-model calibration
for what the model does not see yet, e.g. a program re-reading its own rows from L2 in a later pass).

    python bench/row_tile_sweep.py prepare bench/suite/softmax_f32.kir --sizes M=32768,N=8192 \\
        --bind TILE_B0=1,2,4,8,32,128 --bind TILE_B1=128,256 --out build/sweep
    python bench/row_tile_sweep.py run build/sweep          # on the GPU (triton + torch there)

``prepare`` compiles the kernel with ``sizes`` (the model's pick), then writes one Triton module per binding of the
pick's own program (its launch takes the ABI in order: ``X, Y``) (the tile parameters rebound, verified, serialized). ``run`` checks each against
``torch.softmax`` / the row-op reference named in the manifest and times it with ``triton.testing.do_bench``
(median) in the same process as ``torch.compile``; it prints a table of ratios last.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: torch references of the row ops this sweep knows (by KIR kernel structure, named in the manifest by the user)
REFERENCES = {
    "softmax": "torch.softmax(x.float(), dim=-1).to(x.dtype)",
    "row_sum": "x.float().sum(dim=-1).to(x.dtype)",
}


def prepare(args: argparse.Namespace) -> None:
    from intent_eqsat import ir, kir
    from intent_eqsat.construct import construct
    from intent_eqsat.extract.cost import RooflineCost, estimate
    from intent_eqsat.ir.core import Module
    from intent_eqsat.pipeline import serialize
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.rules import optimize

    sizes = {k: int(v) for k, v in (kv.split("=") for kv in args.sizes.split(","))}
    module = kir.parse(Path(args.kir).read_text(), filename=args.kir)
    name = module.kernels[0].name
    result = optimize(construct(module), target="sm90", cost=RooflineCost(get_target("sm90"), sizes))
    kr = result.kernels[name]
    same_term = [c for c in kr.candidates if c.forbidden is None and c.term is not None]
    if not same_term:
        raise SystemExit(f"{name}: the pick has no tile parameters to rebind")
    base = same_term[0]
    axes = {}
    for spec in args.bind:
        key, vals = spec.split("=")
        axes[key] = [int(v) for v in vals.split(",")]
    out = Path(args.out)
    (out / "gen").mkdir(parents=True, exist_ok=True)
    entries = []
    for combo in itertools.product(*axes.values()):
        binding = {**kr.binding, **dict(zip(axes, combo))}
        kernel = replace(base, params=binding).decode()
        prog = Module(result.program.target, result.program.options, list(result.program.params), [kernel])
        tag = "_".join(f"{k[5:].lower()}{v}" for k, v in sorted(binding.items()))
        try:
            ir.verify(prog)
            src = serialize(prog, provider="triton", target="sm90")[name]
        except Exception as err:                      # noqa: BLE001 - an illegal binding is data
            entries.append({"binding": binding, "status": f"rejected: {type(err).__name__}: {err}"[:300]})
            continue
        f = out / "gen" / f"{name}__{tag}.py"
        f.write_text(src)
        entries.append({"binding": binding, "status": "ready", "module": str(f.relative_to(out)),
                        "predicted_s": float(estimate(kernel, "sm90", sizes).total), "pick": binding == kr.binding})
    (out / "manifest.json").write_text(json.dumps({"kernel": name, "op": args.op, "sizes": sizes, "dtype": args.dtype,
                                                   "entries": entries}, indent=1))
    print(f"[sweep] {name}: {sum(e['status'] == 'ready' for e in entries)} programs ready; pick {kr.binding}")


def run(args: argparse.Namespace) -> None:
    import importlib.util

    import torch
    from triton.testing import do_bench

    out = Path(args.dir)
    man = json.loads((out / "manifest.json").read_text())
    m, n = man["sizes"]["M"], man["sizes"]["N"]
    dtype = getattr(torch, {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[man["dtype"]])
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    ref_fn = eval("lambda x: " + REFERENCES[man["op"]], {"torch": torch})   # noqa: S307 - our own table
    ref = ref_fn(x)
    compiled = torch.compile(ref_fn)
    compiled(x)
    t_anchor = do_bench(lambda: compiled(x), warmup=25, rep=100)
    rows = []
    for e in man["entries"]:
        if e["status"] != "ready":
            rows.append((e["binding"], "-", "-", e["status"][:60]))
            continue
        spec = importlib.util.spec_from_file_location("_sweep_" + str(len(rows)), out / e["module"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        y = torch.full_like(ref, float("nan"))
        mod.launch(x, y)
        torch.cuda.synchronize()
        err = float(((y.float() - ref.float()).norm() / ref.float().norm()).item())
        t = do_bench(lambda: mod.launch(x, y), warmup=25, rep=100)
        rows.append((e["binding"], f"{t:.4f}", f"{t_anchor / t:.3f}x",
                     f"rel_l2 {err:.1e}; predicted {e['predicted_s'] * 1e3:.3f} ms{' (pick)' if e['pick'] else ''}"))
    print(f"{man['kernel']} {m}x{n} {man['dtype']} on {torch.cuda.get_device_name()}; torch.compile "
          f"{t_anchor:.4f} ms")
    for b, t, r, note in rows:
        print(f"  {json.dumps(b):60s} {t:>9s} ms {r:>8s}  {note}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("kir")
    a.add_argument("--sizes", required=True)
    a.add_argument("--bind", action="append", default=[], help="PARAM=v1,v2,... (repeatable)")
    a.add_argument("--op", default="softmax", choices=sorted(REFERENCES))
    a.add_argument("--dtype", default="f32")
    a.add_argument("--out", default=str(ROOT / "build" / "sweep"))
    r = sub.add_parser("run")
    r.add_argument("dir")
    args = p.parse_args()
    prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    main()
