"""A/B of persistent traversal for the generated GEMM programs (a GPU experiment, not part of the suite).

Issue 7 asks for persistent traversal "where the mapping group chooses it". Before the compiler prints it, this
measures what it would buy: each GEMM pick of a prepared suite (``bench/perf.py prepare``) is run as generated and
rewritten by hand into persistent forms, checked against the generated program's output and timed with
``triton.testing.do_bench`` medians next to cuBLAS in the same process:

* ``base`` / ``base i32``: as generated; every ``tl.int64`` spelled ``tl.int32`` (exact at the suite shapes);
* ``persKx``: ``min(tiles, K x SMs)`` programs, each looping ``for tile in tl.range(pid, tiles, programs)`` over the
  generated body (the tile id in place of ``tl.program_id(0)``);
* ``flat``: that loop with ``flatten=True`` (Triton pipelines the tile and K loops as one);
* ``nog``: the segment guard folded (one segment covers every tile id the loop visits);
* ``ws``: ``warp_specialize=True`` on the tile loop.

    python bench/perf.py prepare --out build/pab --providers triton --no-candidates \\
        --only gemm_bf16_at_4096,batched_gemm_bf16 --tuning bench/calibration/tuning_h200.json
    # on the H200 (carry build/pab):
    python3 bench/persistent_ab.py --in build/pab

It imports the generated modules and bench/perf.py's input and anchor helpers only (nothing of intent_eqsat).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402  (bench/perf.py: inputs, anchors, module loading)
from launch_gap import launch_arguments  # noqa: E402

#: label -> (programs per SM (0: not persistent), flatten, warp_specialize, 32-bit index, segment guard folded)
VARIANTS = {
    "base i32": (0, False, False, True, False),
    "pers1x": (1, False, False, False, False),
    "pers1x nog": (1, False, False, False, True),
    "pers1x flat": (1, True, False, False, False),
    "pers1x flat nog": (1, True, False, False, True),
    "pers2x flat nog": (2, True, False, False, True),
    "pers1x flat nog ws": (1, True, True, False, True),
    "pers1x flat nog i32": (1, True, False, True, True),
}
_GUARD = re.compile(r"if \(v_pid >= _seg_off0\) & \(v_pid < _seg_off0 \+ _seg_len1\):")


def persistent_source(src: str, flatten: bool, warp_specialize: bool, fold_guard: bool) -> str:
    """The generated module with its kernel looping over tile ids: two more kernel arguments (``_TOTAL`` tiles,
    ``NPROG`` programs, a constexpr), the body indented under the loop."""
    if fold_guard:
        src = _GUARD.sub("if True:", src)
    lines = src.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("v_pid = tl.program_id(0)"))
    j = max(k for k in range(i) if lines[k].rstrip().endswith("):"))
    lines[j] = lines[j].rstrip()[:-2] + ", _TOTAL, NPROG: tl.constexpr):"
    end = next(k for k in range(i + 1, len(lines)) if lines[k] and not lines[k].startswith(" "))
    opts = (", flatten=True" if flatten else "") + (", warp_specialize=True" if warp_specialize else "")
    loop = [f"    for _tile in tl.range(tl.program_id(0), _TOTAL, NPROG{opts}):", "        v_pid = _tile.to(tl.int64)"]
    body = [("    " + ln) if ln.strip() else ln for ln in lines[i + 1:end]]
    return "\n".join(lines[:i] + loop + body + lines[end:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="indir", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    import torch
    import triton.testing as tt

    man = json.loads((args.indir / "manifest.json").read_text())
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device {torch.cuda.get_device_name(0)}, {sms} SMs", flush=True)
    summary = []
    for b in man["benches"]:
        prog = next((p for p in man["programs"] if p["bench"] == b["name"] and p["variant"] == "pick"
                     and p["provider"] == "triton" and p["status"] == "ready"), None)
        if b["family"] != "gemm" or prog is None:
            continue
        case = next(c for c in b["cases"] if "default" in c["modes"])
        src = (args.indir / prog["module"]).read_text()
        mod = perf._load_module(args.indir / prog["module"], "_pab_" + b["name"])
        g = torch.Generator(device="cuda")
        g.manual_seed(7)
        ins = {p["name"]: torch.randn(perf.shape_of(p["dims"], case["sizes"]), generator=g, device="cuda")
               .to(perf._torch_dtype(torch, p["dtype"])) for p in b["params"] if p["dims"] is not None}
        call_args = [ins[a["name"]] if a["view"] else case["scalars"][a["name"]] for a in prog["abi"]]
        out = ins[b["outputs"][0]]
        grid, kernel_args, kernel_kw = launch_arguments(mod, call_args)
        tiles = grid[0]
        fns = {"base": lambda: mod.launch(*call_args)}
        for label, (per_sm, flat, ws, i32, nog) in VARIANTS.items():
            text = src if not per_sm else persistent_source(src, flat, ws, nog)
            if i32:
                text = text.replace("tl.int64", "tl.int32")
            path = args.indir / f"{Path(prog['module']).stem}__{label.replace(' ', '_')}.py"
            path.write_text(text)
            vm = perf._load_module(path, "_pab_" + path.stem)
            if not per_sm:
                fns[label] = lambda vm=vm: vm.launch(*call_args)
            else:
                kern, nprog = getattr(vm, mod.KERNEL_NAME), min(tiles, per_sm * sms)
                fns[label] = (lambda kern=kern, nprog=nprog:
                              kern[(nprog,)](*kernel_args, tiles, nprog, **kernel_kw))
        fns["base"]()
        torch.cuda.synchronize()
        expect = out.float().clone()
        errs = {}
        for label, fn in list(fns.items()):
            out.fill_(float("nan"))
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that does not compile is reported, not fatal
                print(f"{b['name']} {label}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del fns[label]
                continue
            errs[label] = float((out.float() - expect).norm() / expect.norm())
        (aname, afn), *_ = perf.anchors(torch, b["op"], b["causal"], False)
        inputs = {n: t for n, t in ins.items() if n not in b["outputs"]}
        times = {label: [] for label in fns}
        anchor_ms = []
        for _ in range(args.rounds):
            anchor_ms.append(tt.do_bench(lambda: afn(inputs, case["scalars"]), warmup=25, rep=200,
                                         return_mode="median"))
            for label, fn in fns.items():
                times[label].append(tt.do_bench(fn, warmup=25, rep=200, return_mode="median"))
        an = min(anchor_ms)
        print(f"\n{b['name']} {case['label']}: {aname} {an:.4f} ms; {tiles} tiles", flush=True)
        for label, ts in times.items():
            best = min(ts)
            print(f"  {label:22s} {best:.4f} ms  {an / best:.3f}x  vs generated rel {errs[label]:.1e}  "
                  f"rounds {' '.join(f'{t:.4f}' for t in ts)}", flush=True)
            summary.append((b["name"], label, best, an / best))
    print("\nbench, variant, ms (best of rounds), anchor / ours")
    for name, label, ms, ratio in summary:
        print(f"{name:40s} {label:22s} {ms:.4f} {ratio:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
