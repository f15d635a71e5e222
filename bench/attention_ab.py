"""A/B of launch variants of the compiled attention programs on the GPU: index width (the program as generated vs
every ``tl.int64`` spelled ``tl.int32``, exact at the suite shapes: all offsets stay below 2**31) and num_warps /
num_stages, each checked against torch float64 and timed with ``triton.testing.do_bench`` medians next to SDPA's
flash and cuDNN backends in the same run.

    python bench/attention_ab.py prepare --out build/att_ab [--calibration bench/calibration/tuning_h200.json]
    # on the H200 (carry build/att_ab):
    python3 bench/attention_ab.py run --in build/att_ab

``prepare`` compiles ``bench/suite/attention_bf16.kir`` with ``numerics=relaxed_normalization`` for each head dim
of the suite (the programs ``bench/perf.py`` times) and writes both spellings; ``run`` imports the generated modules
only (nothing of intent_eqsat) and prints one table, ratios last (anchor time / ours, > 1: ours is faster).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {64: {"Z": 4, "H": 32, "S": 4096, "T": 4096, "D": 64}, 128: {"Z": 4, "H": 32, "S": 4096, "T": 4096, "D": 128}}
#: (num_warps, num_stages) tried besides the program's own
LAUNCHES = ((4, 2), (4, 3), (4, 4), (8, 2), (8, 3))


def prepare(out: Path, calibration: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    import intent_eqsat
    (out / "gen").mkdir(parents=True, exist_ok=True)
    manifest = []
    for d, sizes in SHAPES.items():
        ck = intent_eqsat.compile(str(ROOT / "bench" / "suite" / "attention_bf16.kir"), target="sm90",
                                  provider="triton", options={"numerics": "relaxed_normalization"}, sizes=sizes,
                                  calibration=calibration)
        src = next(iter(ck.sources.values())) if isinstance(ck.sources, dict) else ck.sources
        space = ck.launch_resources[ck.program.kernels[0].name]     # the launch resources beside the program
        for width, text in (("i64", src), ("i32", src.replace("tl.int64", "tl.int32"))):
            name = f"attention_d{d}_{width}"
            (out / "gen" / f"{name}.py").write_text(text)
            manifest.append({"name": name, "d": d, "width": width, "sizes": sizes, "threads": space.threads,
                             "stages": space.stages, "remarks": list(ck.remarks)})
        print(f"[prepare] d{d}: {space.threads} threads, {space.stages} stages; {'; '.join(ck.remarks)[:200]}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(src: Path) -> None:
    """Time every variant next to the suite's attention anchors, checked against its float64 reference (the anchors,
    the reference and the FLOP count are ``bench/perf.py``'s, so both scripts measure the same thing)."""
    import torch
    from triton.testing import do_bench

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import perf

    manifest = json.loads((src / "manifest.json").read_text())
    torch.manual_seed(0)
    rows, anchor_ms, inputs = [], {}, {}
    for d, sz in SHAPES.items():
        shape = (sz["Z"], sz["H"], sz["S"], sz["D"])
        ins = {n: torch.randn(shape, device="cuda", dtype=torch.bfloat16) for n in ("Q", "K", "V")}
        sc = {"scale": 1.0 / d ** 0.5}
        ref = perf.REFERENCES["attention"](torch, {n: t.double() for n, t in ins.items()}, sc, False)
        inputs[d] = (ins, sc, ref)
        for label, f in perf.anchors(torch, "attention", False, False):
            anchor_ms[(d, label)] = do_bench(lambda: f(ins, sc), warmup=50, rep=300)
    for entry in manifest:
        d = entry["d"]
        ins, sc, ref = inputs[d]
        mod = _load(src / "gen" / f"{entry['name']}.py")
        own = (entry["threads"] // 32, entry["stages"])
        for warps, stages in [own] + [launch for launch in LAUNCHES if launch != own]:
            o = torch.empty_like(ins["Q"])

            def call():
                mod.launch(ins["Q"], ins["K"], ins["V"], sc["scale"], o, num_warps=warps, num_stages=stages)
            try:
                call()
                torch.cuda.synchronize()
                err = ((o.double() - ref).norm() / ref.norm()).item()
                ms = do_bench(call, warmup=50, rep=300) if err < perf.TOLERANCE["bf16"] else None
            except Exception as exc:            # noqa: BLE001 - a launch the compiler rejects is a row, not a crash
                err, ms = float("nan"), None
                print(f"{entry['name']} w{warps} s{stages}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
            rows.append((entry, warps, stages, err, ms))
            print(f"{entry['name']} w{warps} s{stages}: err {err:.1e} ms {ms}", flush=True)
    names = perf.anchor_names("attention", False)
    print(f"\nprogram               warps stages  rel_l2     ms   {'  '.join(f'vs {n:10s}' for n in names)}   TFLOP/s")
    for entry, w, s, err, ms in rows:
        if ms is None:
            print(f"{entry['name']:22s} {w:5d} {s:6d}  {err:8.1e}      -")
            continue
        ratios = "  ".join(f"{anchor_ms[(entry['d'], n)] / ms:12.3f}x" for n in names)
        flops = perf.flops_for("attention", entry["sizes"], False)
        print(f"{entry['name']:22s} {w:5d} {s:6d}  {err:8.1e} {ms:7.3f}  {ratios}  {flops / ms / 1e9:8.0f}")
    for (d, label), ms in sorted(anchor_ms.items()):
        print(f"anchor d{d} {label}: {ms:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "att_ab")
    p.add_argument("--calibration", default=str(ROOT / "bench" / "calibration" / "tuning_h200.json"))
    r = sub.add_parser("run")
    r.add_argument("--in", dest="src", type=Path, default=ROOT / "build" / "att_ab")
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a.out, a.calibration or None)
    else:
        run(a.src)


if __name__ == "__main__":
    main()
