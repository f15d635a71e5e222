"""Convolutions as implicit GEMMs (issue 26 item 2), checked and timed beside eager PyTorch (cuDNN) and
torch.compile on one GPU in one run.

Every kind a PyTorch user writes -- 1-D, 2-D, 3-D, padded, strided, dilated, pointwise, grouped, depthwise,
channels-last, transposed -- from ``bench/suite/conv*.kir``. fp32 runs at ieee precision on both sides (TF32 off for
cuDNN and matmuls: the kernels' default ``fp32_contract = ieee``); the bf16 kernel accumulates in f32. Two steps (the
GPU machine has no egglog):

    prepare (here): .venv/bin/python bench/conv_bench.py prepare --out DIR [--only K1,K2]
        compiles ``bench/suite/<kernel>.kir`` for its shape (``sizes=``, no tuning file) into
        ``DIR/gen/<kernel>__triton__pick.py``
    run (on the GPU): python3 bench/conv_bench.py run --in DIR [--base DIR2] [--json FILE] [--only ..]
        per kernel: checks the launch against torch in float64 (relative L2 error), times it, eager PyTorch and
        torch.compile with ``triton.testing.do_bench`` (median ms), and with ``--base`` the same kernel compiled by
        another commit; prints a table of ratios (anchor ms / our ms) last. ``--dim1-innermost``: also times the
        same program on the same logical operands stored with axis 1 innermost (``x.movedim(1, -1).contiguous()
        .movedim(-1, 1)``: channels-last for an NCHW image and an ``[F, C, kh, kw]`` weight), the weight alone and
        every operand: what the tile reads' memory layout costs (the program reads strides at launch).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_reduction_bench import ROOT, _load, _rel, bench_args, compile_into  # noqa: E402  (the same check, loader, compile)


def _conv(F, **kw):
    return lambda X, K: F.conv2d(X, K, **kw)


#: kernel -> (sizes, input shapes(sizes) -> [X shape, K shape], dtype name, the call a PyTorch user writes)
CASES = {
    "conv2d_f32": ({"N": 32, "C": 64, "H": 56, "W": 56, "F": 64},
                   lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["F"], s["C"], 3, 3)], "float32",
                   lambda t, F: _conv(F, padding=1)),
    "conv2d_s2_bf16": ({"N": 32, "C": 128, "H": 56, "W": 56, "F": 128},
                       lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["F"], s["C"], 3, 3)], "bfloat16",
                       lambda t, F: _conv(F, stride=2, padding=1)),
    "conv1d_f32": ({"N": 16, "C": 256, "L": 4096, "F": 256},
                   lambda s: [(s["N"], s["C"], s["L"]), (s["F"], s["C"], 5)], "float32",
                   lambda t, F: lambda X, K: F.conv1d(X, K, padding=2)),
    "conv2d_dil_f32": ({"N": 16, "C": 64, "H": 64, "W": 64, "F": 64},
                       lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["F"], s["C"], 3, 3)], "float32",
                       lambda t, F: _conv(F, dilation=2)),
    "conv1x1_f32": ({"N": 32, "C": 256, "H": 28, "W": 28, "F": 512},
                    lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["F"], s["C"])], "float32",
                    lambda t, F: lambda X, K: F.conv2d(X, K[:, :, None, None])),
    "conv2d_nhwc_f32": ({"N": 32, "H": 56, "W": 56, "C": 64, "F": 64},
                        lambda s: [(s["N"], s["H"], s["W"], s["C"]), (3, 3, s["C"], s["F"])], "float32",
                        lambda t, F: lambda X, K: F.conv2d(X.permute(0, 3, 1, 2), K.permute(3, 2, 0, 1),
                                                           padding=1).permute(0, 2, 3, 1)),
    "conv2d_grouped_f32": ({"N": 32, "G": 8, "CG": 16, "FG": 16, "H": 56, "W": 56},
                           lambda s: [(s["N"], s["G"], s["CG"], s["H"], s["W"]), (s["G"], s["FG"], s["CG"], 3, 3)],
                           "float32",
                           lambda t, F: lambda X, K: F.conv2d(
                               X.flatten(1, 2), K.flatten(0, 1), padding=1, groups=X.shape[1]).unflatten(
                                   1, (X.shape[1], K.shape[1]))),
    "conv_transpose2d_f32": ({"N": 32, "C": 64, "H": 56, "W": 56, "F": 64},
                             lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["C"], s["F"], 3, 3)], "float32",
                             lambda t, F: lambda X, K: F.conv_transpose2d(X, K, padding=1)),
    "conv2d_depthwise_f32": ({"N": 32, "C": 128, "H": 56, "W": 56},
                             lambda s: [(s["N"], s["C"], s["H"], s["W"]), (s["C"], 3, 3)], "float32",
                             lambda t, F: lambda X, K: F.conv2d(X, K[:, None], padding=1, groups=X.shape[1])),
    "conv3d_f32": ({"N": 4, "C": 32, "D": 16, "H": 32, "W": 32, "F": 32},
                   lambda s: [(s["N"], s["C"], s["D"], s["H"], s["W"]), (s["F"], s["C"], 3, 3, 3)], "float32",
                   lambda t, F: lambda X, K: F.conv3d(X, K, padding=1)),
}


def prepare(out: Path, only: set[str] | None = None) -> None:
    """Compile every kernel of :data:`CASES` (or those in ``only``) for its shape (the optimizer runs here)."""
    (out / "gen").mkdir(parents=True, exist_ok=True)
    for name, (sizes, _, _, _) in CASES.items():
        if only is not None and name not in only:
            continue
        compile_into(out, name, sizes)


def main(argv: list[str] | None = None) -> int:
    args, only = bench_args(__doc__, argv, ROOT / "build" / "conv_bench", {
        "--dim1-innermost": "also time the program on operands stored with axis 1 innermost (the weight alone, all)"})
    if args.cmd == "prepare":
        prepare(args.out, only)
        return 0
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    torch.backends.cudnn.allow_tf32 = False          # ieee f32 on both sides (fp32_contract = ieee)
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name, (sizes, shapes, dtype, make) in CASES.items():
        if only is not None and name not in only:
            continue
        src = args.indir / "gen" / f"{name}__triton__pick.py"
        if not src.is_file():
            print(f"{name}: no {src}", flush=True)
            continue
        mod = _load(src)
        base_src = args.base / "gen" / src.name if args.base is not None else None
        base = _load(base_src, "base_" + base_src.stem) if base_src is not None and base_src.is_file() else None
        fn = make(torch, F)
        compiled = torch.compile(fn, dynamic=False)
        torch.manual_seed(0)
        ins = [torch.randn(*sh, device="cuda").to(getattr(torch, dtype)) for sh in shapes(sizes)]
        want = fn(*[x.double() for x in ins])
        out = torch.empty(want.shape, device="cuda", dtype=torch.float32)
        mod.launch(*ins, out)
        row = {"kernel": name, "sizes": sizes, "rel_err": _rel(out, want), "eager_rel_err": _rel(fn(*ins), want),
               "dot": "tl.dot" in src.read_text()}
        row["ours_ms"] = do_bench(lambda: mod.launch(*ins, out), warmup=25, rep=100)
        if base is not None:
            row["base_ms"] = do_bench(lambda: base.launch(*ins, out), warmup=5, rep=20)
        if args.dim1_innermost:
            # the second operand is the weight; the same logical values, axis 1 stored innermost
            moved = [x.movedim(1, -1).contiguous().movedim(-1, 1) for x in ins]
            for key, args_ in (("w_dim1", [ins[0], moved[1], *ins[2:]]), ("all_dim1", moved)):
                mod.launch(*args_, out)
                row[key + "_rel_err"] = _rel(out, want)
                row[key + "_ms"] = do_bench(lambda: mod.launch(*args_, out), warmup=25, rep=100)
        row["eager_ms"] = do_bench(lambda: fn(*ins), warmup=25, rep=100)
        compiled(*ins)
        row["compile_ms"] = do_bench(lambda: compiled(*ins), warmup=25, rep=100)
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"\n{torch.cuda.get_device_name()}; ratio = anchor ms / our ms (TF32 off)")
    print(f"{'kernel':22} {'rel err':>8} {'dot':>4} {'ours ms':>8} {'eager':>8} {'compile':>8} {'vs eager':>8} "
          f"{'vs comp':>8} {'base ms':>9} {'speedup':>8}")
    for r in rows:
        base = f"{r['base_ms']:9.3f} {r['base_ms'] / r['ours_ms']:8.1f}" if "base_ms" in r else f"{'':9} {'':8}"
        print(f"{r['kernel']:22} {r['rel_err']:8.1e} {str(r['dot']):>4} {r['ours_ms']:8.3f} {r['eager_ms']:8.3f} "
              f"{r['compile_ms']:8.3f} {r['eager_ms'] / r['ours_ms']:8.2f} {r['compile_ms'] / r['ours_ms']:8.2f} "
              f"{base}")
    if args.dim1_innermost:
        print(f"\nthe same programs on operands stored with axis 1 innermost (ratio = our ms / that ms)")
        print(f"{'kernel':22} {'ours ms':>8} {'w dim1':>8} {'ratio':>6} {'all dim1':>8} {'ratio':>6} {'eager':>8} "
              f"{'eager/best':>10} {'max rel err':>11}")
        for r in rows:
            best = min(r["ours_ms"], r["w_dim1_ms"], r["all_dim1_ms"])
            err = max(r["w_dim1_rel_err"], r["all_dim1_rel_err"])
            print(f"{r['kernel']:22} {r['ours_ms']:8.3f} {r['w_dim1_ms']:8.3f} {r['ours_ms'] / r['w_dim1_ms']:6.2f} "
                  f"{r['all_dim1_ms']:8.3f} {r['ours_ms'] / r['all_dim1_ms']:6.2f} {r['eager_ms']:8.3f} "
                  f"{r['eager_ms'] / best:10.2f} {err:11.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
