"""Row scans (cumsum, reversed cumsum, cumprod) compiled by two versions of the optimizer, side by side with eager
PyTorch and torch.compile on one GPU in one run: an A/B of a change to the generated programs.

Written for issue 22 item 2 (2026-12-03): ``ir/program_order.py`` now orders the programs by the trip counts of
every loop, not only of the loops holding a ``contract``; a scan over column tiles, whose later tiles carry the
prefix of the earlier ones, is then launched longest first in L2-sized groups. Two steps, because the GPU machine
has no egglog:

    prepare (here, once per version):
        PYTHONPATH=<tree> .venv/bin/python bench/scan_order_ab.py prepare --out build/scan_ab --tag A
        compiles every kernel below for each shape (``sizes=``, no tuning file) with the optimizer importable
        from ``<tree>`` and writes ``<tag>__<kernel>__<shape>.py`` and ``<tag>.json`` into ``--out``.
    run (on the GPU): python3 bench/scan_order_ab.py run --in build/scan_ab [--json FILE]
        per kernel and shape: checks every tag's launch against torch in float64 (relative L2 error), then times
        each tag, eager PyTorch and torch.compile with ``triton.testing.do_bench`` (median ms); prints a table of
        ratios last.

The kernels are written the way a PyTorch user writes them (``torch.cumsum(x, 1)``, a flipped cumsum,
``torch.cumprod``); the shapes include rows of one tile, of several tiles and an odd width.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KERNELS = {
    "cumsum": "examples/corpus/cumsum.kir",
    "cumsum_reversed": "examples/corpus/cumsum_reversed.kir",
    "cumprod": "examples/corpus/cumprod.kir",
}
SHAPES = [{"M": 32768, "N": 8192}, {"M": 4096, "N": 65536}, {"M": 512, "N": 1 << 20}, {"M": 16384, "N": 3000}]


def _tag(sizes: dict) -> str:
    return "x".join(str(v) for v in sizes.values())


def prepare(out: Path, tag: str) -> None:
    import intent_eqsat

    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"tag": tag, "tool": intent_eqsat.__file__, "entries": []}
    for name, rel in KERNELS.items():
        text = (ROOT / rel).read_text()
        for sizes in SHAPES:
            t = time.perf_counter()
            ck = intent_eqsat.compile(text, filename=f"{name}.kir", target="sm90", provider="triton", cache=False,
                                      sizes=sizes)
            fname = f"{tag}__{name}__{_tag(sizes)}.py"
            (out / fname).write_text(ck.source)
            manifest["entries"].append({"kernel": name, "sizes": sizes, "module": fname,
                                        "binding": ck.report["kernels"][name]["binding"]})
            print(f"[{tag}] {name} {_tag(sizes)}: {time.perf_counter() - t:.1f} s", flush=True)
    (out / f"{tag}.json").write_text(json.dumps(manifest, indent=1))


def _reference(torch, name: str, x):
    x64 = x.double()
    if name == "cumsum":
        return torch.cumsum(x64, 1), lambda: torch.cumsum(x, 1)
    if name == "cumsum_reversed":
        return (torch.flip(torch.cumsum(torch.flip(x64, [1]), 1), [1]),
                lambda: torch.flip(torch.cumsum(torch.flip(x, [1]), 1), [1]))
    if name == "cumprod":
        return torch.cumprod(x64, 1), lambda: torch.cumprod(x, 1)
    raise KeyError(name)


def run(inp: Path, json_out: Path | None, kernels: list[str], shapes: list[str], with_compile: bool) -> None:
    import torch
    import triton
    from intent_eqsat.providers.loader import load_path

    tags = sorted(p.stem for p in inp.glob("*.json"))
    manifests = {t: {(e["kernel"], _tag(e["sizes"])): e for e in json.loads((inp / f"{t}.json").read_text())
                     ["entries"]} for t in tags}
    rows = []
    gen = torch.Generator(device="cuda")
    for name in kernels:
        for sizes in (s for s in SHAPES if _tag(s) in shapes):
            key = (name, _tag(sizes))
            gen.manual_seed(len(rows) + 1)
            x = torch.randn(sizes["M"], sizes["N"], device="cuda", generator=gen)
            if name == "cumprod":                  # near 1, so the products neither vanish nor overflow
                x = 1.0 + 1e-4 * x
            want, eager = _reference(torch, name, x)
            compiled = torch.compile(eager) if with_compile else None
            row: dict = {"kernel": name, "sizes": sizes}
            launches = {}
            for t in tags:
                mod = load_path(inp / manifests[t][key]["module"])
                y = torch.full_like(x, float("nan"))
                launches[t] = (lambda m=mod, y=y: m.launch(x, y))
                launches[t]()
                torch.cuda.synchronize()
                row[f"{t}_err"] = float((y.double() - want).norm() / want.norm())
                row[f"{t}_binding"] = manifests[t][key]["binding"]
            timed = [*launches.items(), ("eager", eager)] + ([("compile", compiled)] if compiled else [])
            row["compile_ms"] = float("nan")
            for k, fn in timed:
                row[f"{k}_ms"] = float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"))
            # the first tag again: the run's own spread
            row[f"{tags[0]}_again_ms"] = float(triton.testing.do_bench(launches[tags[0]], warmup=25, rep=200,
                                                                      return_mode="median"))
            rows.append(row)
            print(json.dumps(row), flush=True)
            if json_out is not None:                 # as it goes: a run cut short keeps its rows
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_text(json.dumps({"rows": rows}, indent=1))
    dev = torch.cuda.get_device_name()
    print(f"\n{dev}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median ms (do_bench)")
    head = (f"{'kernel':16} {'shape':12}" + "".join(f" {t + ' ms':>9}" for t in tags)
            + f" {tags[0] + ' again':>9} {'eager':>9} {'compile':>9}"
            + "".join(f" {t + '/' + tags[0]:>7}" for t in tags[1:])
            + "".join(f" {'eager/' + t:>8}" for t in tags) + "  max err")
    print(head)
    for r in rows:
        line = f"{r['kernel']:16} {_tag(r['sizes']):12}" + "".join(f" {r[t + '_ms']:9.4f}" for t in tags)
        line += f" {r[tags[0] + '_again_ms']:9.4f} {r['eager_ms']:9.4f} {r['compile_ms']:9.4f}"
        line += "".join(f" {r[t + '_ms'] / r[tags[0] + '_ms']:7.3f}" for t in tags[1:])
        line += "".join(f" {r['eager_ms'] / r[t + '_ms']:8.3f}" for t in tags)
        line += f"  {max(r[t + '_err'] for t in tags):.1e}"
        print(line)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"device": dev, "torch": torch.__version__, "triton": triton.__version__,
                                        "rows": rows}, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "scan_ab")
    p.add_argument("--tag", required=True, help="the name of this version's programs (A, B, ...)")
    r = sub.add_parser("run")
    r.add_argument("--in", dest="inp", type=Path, default=ROOT / "build" / "scan_ab")
    r.add_argument("--json", type=Path, default=None)
    r.add_argument("--kernels", default=",".join(KERNELS))
    r.add_argument("--shapes", default=",".join(_tag(s) for s in SHAPES), help="MxN,... of SHAPES")
    r.add_argument("--no-compile", action="store_true", help="leave torch.compile out (its compile takes minutes)")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.out, args.tag)
    else:
        run(args.inp, args.json, args.kernels.split(","), args.shapes.split(","), not args.no_compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
