"""Reductions split over programs (``ir/split_reduction.py``, issue 27 items 1-2), timed at the launch resources the
model picked and at other warp counts, beside eager PyTorch and torch.compile on one GPU in one run.

Two forms: a reduction to a scalar (losses with ``reduction="mean"``, norms, ``X.sum()``) lane-blocked over up to
1024 programs, and a reduction whose kept extent does not fill the GPU (per-channel BatchNorm means, column sums of
a tall matrix, a cross-entropy mean whose members are row logsumexps) with its outer loop chunked over a new
program axis. Why several warp counts: the split programs stream one fragment per step, and how many warps the
model gives it (32 fragment members per thread) is a modelled choice this run checks. Two steps (the GPU machine
has no egglog):

    prepare (here): .venv/bin/python bench/split_reduction_bench.py prepare --out DIR [--only K1,K2]
        compiles ``bench/suite/<kernel>.kir`` for its first shape (``sizes=``, no tuning file) into
        ``DIR/gen/<kernel>__triton__pick.py`` (the names ``bench/perf.py prepare`` writes)
    run (on the GPU): python3 bench/split_reduction_bench.py run --in DIR [--json FILE] [--only ..] [--base DIR2]
        per kernel and shape: checks the launch against torch in float64 (relative L2 error), then times it with
        ``num_warps`` 1, 2, 4, 8, eager PyTorch and torch.compile with ``triton.testing.do_bench`` (median ms);
        prints a table of ratios (anchor time / our time) last.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _randn(torch, *shape, dtype=None):
    x = torch.randn(*shape, device="cuda")
    return x if dtype is None else x.to(dtype)


#: kernel -> (shapes, inputs(torch, sizes) -> (read tensors, output tensor), the call a PyTorch user writes)
CASES = {
    "mse_f32": ([{"M": 32768, "N": 32768}, {"M": 4096, "N": 4096}, {"M": 3, "N": 1000003}],
                lambda t, s: ([_randn(t, s["M"], s["N"]), _randn(t, s["M"], s["N"])], t.zeros((), device="cuda")),
                lambda t, F: lambda X, T: F.mse_loss(X, T)),
    "huber_f32": ([{"B": 32, "S": 2048, "H": 4096}, {"B": 7, "S": 1000, "H": 333}],
                  lambda t, s: ([_randn(t, s["B"], s["S"], s["H"]), _randn(t, s["B"], s["S"], s["H"])],
                                t.zeros((), device="cuda")),
                  lambda t, F: lambda X, T: F.huber_loss(X, T, delta=1.0)),
    "fro_bf16": ([{"N": (1 << 28) + 3}, {"N": 1 << 20}],
                 lambda t, s: ([_randn(t, s["N"], dtype=t.bfloat16)], t.zeros((), device="cuda")),
                 lambda t, F: lambda X: t.linalg.vector_norm(X.float())),
    "sum_f32": ([{"N": 1 << 26}, {"N": 1 << 30}],
                lambda t, s: ([t.rand(s["N"], device="cuda")], t.zeros((), device="cuda")),
                lambda t, F: lambda X: X.sum()),
    "bn_mean_f32": ([{"N": 64, "C": 64, "H": 56, "W": 56}, {"N": 32, "C": 256, "H": 28, "W": 28}],
                    lambda t, s: ([_randn(t, s["N"], s["C"], s["H"], s["W"])], t.zeros(s["C"], device="cuda")),
                    lambda t, F: lambda X: X.mean(dim=(0, 2, 3))),
    "colsum_f32": ([{"M": 1 << 20, "N": 16}, {"M": 1 << 16, "N": 256}],
                   lambda t, s: ([_randn(t, s["M"], s["N"])], t.zeros(s["N"], device="cuda")),
                   lambda t, F: lambda X: X.sum(0)),
    "ce_mean_f32": ([{"M": 8192, "C": 1000}, {"M": 4096, "C": 32000}],
                    lambda t, s: ([_randn(t, s["M"], s["C"]), t.randint(0, s["C"], (s["M"],), device="cuda")],
                                  t.zeros((), device="cuda")),
                    lambda t, F: lambda X, Y: F.cross_entropy(X, Y)),
    # split-K (issue 26 item 4): a small output over a long K; "name@tag" compiles bench/suite/name.kir
    "gemm_bf16@long_k": ([{"M": 256, "N": 256, "K": 1 << 19}, {"M": 512, "N": 384, "K": 1 << 17}],
                         lambda t, s: ([_randn(t, s["M"], s["K"], dtype=t.bfloat16),
                                        _randn(t, s["K"], s["N"], dtype=t.bfloat16)],
                                       t.zeros(s["M"], s["N"], device="cuda", dtype=t.bfloat16)),
                         lambda t, F: lambda A, B: A @ B),
    "gemm_bf16@skinny": ([{"M": 64, "N": 4096, "K": 4096}],
                         lambda t, s: ([_randn(t, s["M"], s["K"], dtype=t.bfloat16),
                                        _randn(t, s["K"], s["N"], dtype=t.bfloat16)],
                                       t.zeros(s["M"], s["N"], device="cuda", dtype=t.bfloat16)),
                         lambda t, F: lambda A, B: A @ B),
    "gemm_nn_f32@long_k": ([{"M": 256, "N": 256, "K": 1 << 19}],
                           lambda t, s: ([_randn(t, s["M"], s["K"]), _randn(t, s["K"], s["N"])],
                                         t.zeros(s["M"], s["N"], device="cuda")),
                           lambda t, F: lambda A, B: A @ B),
    "gemm_tn_f32@long_k": ([{"M": 192, "N": 320, "K": 1 << 18}],
                           lambda t, s: ([_randn(t, s["K"], s["M"]), _randn(t, s["K"], s["N"])],
                                         t.zeros(s["M"], s["N"], device="cuda")),
                           lambda t, F: lambda A, B: A.t() @ B),
    # integer carries (wrapping add regroups exactly): an int8 GEMM at long K (torch._int_mm), an accuracy count
    "gemm_i8@long_k": ([{"M": 256, "N": 256, "K": 1 << 19}],
                       lambda t, s: ([t.randint(-8, 8, (s["M"], s["K"]), dtype=t.int8, device="cuda"),
                                      t.randint(-8, 8, (s["K"], s["N"]), dtype=t.int8, device="cuda")],
                                     t.zeros(s["M"], s["N"], device="cuda", dtype=t.int32)),
                       lambda t, F: lambda A, B: t._int_mm(A, B)),
    "accuracy_i64": ([{"N": 1 << 26}, {"N": 1 << 20}],
                     lambda t, s: ([t.randint(0, 4, (s["N"],), device="cuda"),
                                    t.randint(0, 4, (s["N"],), device="cuda")], t.zeros((), device="cuda",
                                                                                       dtype=t.int64)),
                     lambda t, F: lambda P, T: (P == T).sum()),
}
WARPS = (1, 2, 4, 8)


def _rel(got, want) -> float:
    """Relative L2 error of ``got`` against ``want`` in float64 (integer results too: 0.0 when exact)."""
    want = want.double()
    return ((got.double() - want).norm() / want.norm().clamp_min(1e-300)).item()


def _load(path: Path, name: str | None = None):
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def prepare(out: Path, only: set[str] | None = None) -> None:
    """Compile every kernel of :data:`CASES` (or those in ``only``) for its first shape (the optimizer runs here,
    not on the GPU)."""
    (out / "gen").mkdir(parents=True, exist_ok=True)
    for name, (shapes, _, _) in CASES.items():
        if only is not None and name not in only:
            continue
        compile_into(out, name, shapes[0])


def compile_into(out: Path, name: str, sizes: dict) -> None:
    """Compile ``bench/suite/<name>.kir`` (``name@tag``: the same file) for ``sizes`` into
    ``out/gen/<name>__triton__pick.py`` (written whole or not at all) and say what it got."""
    import intent_eqsat
    text = (ROOT / "bench" / "suite" / f"{name.split('@')[0]}.kir").read_text()
    ck = intent_eqsat.compile(text, target="sm90", provider="triton", sizes=sizes)
    path = out / "gen" / f"{name.replace('@', '__')}__triton__pick.py"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(ck.source)
    tmp.replace(path)
    print(f"[prepare] {name}: {[str(s.extents) for s in ck.program.kernels[0].space.segments]} "
          f"{ck.launch_resources} tl.dot={'tl.dot' in ck.source}", flush=True)


def bench_args(doc: str, argv: list[str] | None, default_dir: Path | None = None,
               run_flags: dict[str, str] | None = None) -> tuple[argparse.Namespace, set[str] | None]:
    """The ``prepare`` / ``run`` command line of a prepare-here, run-on-the-GPU bench (``conv_bench``,
    ``user_ops_bench``): ``prepare --out DIR [--only ..]``, ``run --in DIR [--base DIR2] [--json FILE] [--only ..]``
    plus the bench's own ``run_flags`` (flag -> help; boolean); returns the arguments and the ``--only`` set (None:
    every case)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    folder = dict(default=default_dir) if default_dir is not None else dict(required=True)
    pp = sub.add_parser("prepare", help="compile the kernels (here)")
    pp.add_argument("--out", type=Path, **folder)
    pp.add_argument("--only", default=None, help="comma-separated kernels (CASES keys) to compile")
    rp = sub.add_parser("run", help="check and time them (on the GPU)")
    rp.add_argument("--in", dest="indir", type=Path, **folder)
    rp.add_argument("--base", type=Path, default=None, help="a second prepare folder (e.g. the commit before)")
    rp.add_argument("--base-full", action="store_true",
                    help="time the --base programs at each case's own shape (when the old programs finish there)")
    rp.add_argument("--json", type=Path, default=None)
    rp.add_argument("--only", default=None, help="comma-separated kernels (CASES keys) to run")
    for flag, text in (run_flags or {}).items():
        rp.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args(argv)
    return args, set(args.only.split(",")) if args.only else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare", help="compile the kernels (here)")
    pp.add_argument("--out", type=Path, default=ROOT / "build" / "split_bench")
    pp.add_argument("--only", default=None, help="comma-separated kernels (CASES keys) to compile")
    rp = sub.add_parser("run", help="check and time them (on the GPU)")
    rp.add_argument("--in", dest="indir", type=Path, default=ROOT / "build" / "split_bench")
    rp.add_argument("--json", type=Path, default=None)
    rp.add_argument("--shapes", type=int, default=None, help="only the first N shapes of each kernel")
    rp.add_argument("--warps", default=",".join(map(str, WARPS)), help="the num_warps to time")
    rp.add_argument("--only", default=None, help="comma-separated kernels (CASES keys) to run")
    rp.add_argument("--base", type=Path, default=None,
                    help="a second prepare folder (e.g. from the commit before a change), timed at its own warps")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.out, set(args.only.split(",")) if args.only else None)
        return 0
    warps = tuple(int(w) for w in args.warps.split(","))
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    rows = []
    only = set(args.only.split(",")) if args.only else None
    for name, (shapes, make_inputs, make) in CASES.items():
        if only is not None and name not in only:
            continue
        src = args.indir / "gen" / f"{name.replace('@', '__')}__triton__pick.py"
        if not src.is_file():
            print(f"{name}: no {src}", flush=True)
            continue
        mod = _load(src)
        base_src = args.base / "gen" / src.name if args.base is not None else None
        base = _load(base_src, "base_" + base_src.stem) if base_src is not None and base_src.is_file() else None
        fn = make(torch, F)
        compiled = torch.compile(fn, dynamic=False)
        for sizes in shapes[:args.shapes]:
            torch.manual_seed(0)
            ins, out = make_inputs(torch, sizes)
            mod.launch(*ins, out)
            want = fn(*[x.double() if x.is_floating_point() else x for x in ins])
            rel = _rel(out, want)
            row = {"kernel": name, "sizes": sizes, "rel_err": rel,
                   "eager_rel_err": _rel(fn(*ins), want),
                   "picked_warps": mod.LAUNCH_OPTIONS["num_warps"]}
            for w in warps:
                row[f"w{w}_ms"] = do_bench(lambda: mod.launch(*ins, out, num_warps=w), warmup=25, rep=100)
            # hundreds of timed launches later the output is still right: a race between programs (the last
            # arriver reading a partial before it lands) shows as a moving error (device/METHOD.md)
            out.fill_(float("nan") if out.is_floating_point() else -12345)
            mod.launch(*ins, out)
            row["rel_err_after_timing"] = _rel(out, want)
            if base is not None:
                row["base_ms"] = do_bench(lambda: base.launch(*ins, out), warmup=25, rep=100)
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
    print(f"{'kernel':10} {'shape':22} {'rel err':>8} {'eager err':>9} " + " ".join(f"{'w' + str(w):>7}" for w in warps)
          + f" {'eager':>7} {'compile':>7} {'vs eager':>8} {'vs comp':>8} {'GB/s':>6}")
    for r in rows:
        ours = {w: r[f"w{w}_ms"] for w in warps}
        pick = ours.get(r["picked_warps"], min(ours.values()))
        best = min(ours.values())
        shape = "x".join(str(v) for v in r["sizes"].values())
        err = max(r["rel_err"], r.get("rel_err_after_timing", 0.0))
        print(f"{r['kernel']:10} {shape:22} {err:8.1e} {r['eager_rel_err']:9.1e} "
              + " ".join(f"{ours[w]:7.3f}" for w in warps)
              + f" {r['eager_ms']:7.3f} {r['compile_ms']:7.3f} {r['eager_ms'] / pick:8.2f} "
                f"{r['compile_ms'] / pick:8.2f} {r['bytes'] / best / 1e6:6.0f}")
        if "base_ms" in r:
            print(f"{'':10} {'base (--base) ms':22} {r['base_ms']:8.3f}  ours/base speedup {r['base_ms'] / pick:6.2f}")
    print("(rel err: the worse of the first launch and one after the timed launches; vs eager / vs comp at the "
          "picked warps; w1..w8 ms at num_warps 1..8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
