"""Operators as PyTorch users write them -- forward scans over long rows and reverse (suffix) scans (issue 27
item 4), pools of rank 2 and 3 (item 5), norms whose statistics reduce over several or non-last axes (item 3), and
statistics of a contraction's result (a softmax, LayerNorm, logsumexp or BatchNorm after a linear layer; issue 26
item 6), independent reductions of one row (cosine similarity, min-max scaling, a variance typed as
``(X * X).mean(1) - X.mean(1) ** 2``, a triplet loss: ``ir/sibling_fusion.py``) -- checked and timed beside eager PyTorch and torch.compile on one GPU in one run.

PyTorch has no reverse cumsum: users write ``torch.flip(torch.cumsum(torch.flip(x, [d]), d), [d])`` (and the same
for cumprod / cummax), which is the anchor for the scans; the pools' anchors are ``F.max_pool3d`` /
``F.avg_pool2d`` / ``F.max_pool2d``. Each kernel is ``bench/suite/<kernel>.kir``. Two steps (the GPU machine has no
egglog):

    prepare (here): .venv/bin/python bench/user_ops_bench.py prepare --out DIR [--only K1,K2]
        compiles each kernel for its shape (``sizes=``, no tuning file) into ``DIR/gen/<kernel>__triton__pick.py``
    run (on the GPU): python3 bench/user_ops_bench.py run --in DIR [--base DIR2] [--json FILE] [--only ..]
        per kernel: checks the launch against torch in float64 (relative L2 error; the output poisoned first),
        times it, eager PyTorch and torch.compile with ``triton.testing.do_bench`` (median ms); with ``--base``
        (a prepare folder of the commit before) the scans are also timed at their small shape, where the old
        one-program-per-element suffix loop still finishes, and the forward scans at their full shape (the
        program before ``carried_prefix`` re-sums each row's prefix in every column tile but finishes); a table
        of ratios (anchor ms / our ms) last.

A ``kernel@tag`` key is ``bench/suite/<kernel>.kir`` at another shape.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_reduction_bench import _load, _rel, bench_args, compile_into  # noqa: E402  (the same check, loader, compile)


def _flip_scan(t, op: str, dim: int, exclusive: bool = False):
    """What a PyTorch user writes for a reverse scan along ``dim``."""
    def fn(X):
        r = torch_scan(t, op, t.flip(X, [dim]), dim)
        out = t.flip(r, [dim])
        return out - X if exclusive else out
    return fn


def torch_scan(t, op: str, x, dim: int):
    if op == "sum":
        return t.cumsum(x, dim)
    if op == "prod":
        return t.cumprod(x, dim)
    return t.cummax(x, dim).values


def _pool(F, name: str, *args, **kw):
    return lambda X: getattr(F, name)(X, *args, **kw)


def _masked_cumsum(t):
    return lambda X, K: t.cumsum(t.where(K > 0.5, X, t.zeros_like(X)), -1)


def _exclusive_cumprod(t):
    """``cumprod`` shifted one place right with 1 in front (no division, so zeros stay exact)."""
    def fn(X):
        ones = t.ones_like(X[..., :1])
        return t.cumprod(t.cat([ones, X[..., :-1]], -1), -1)
    return fn


def _norm(t, kind: str):
    F = t.nn.functional
    if kind == "batch2d":
        return lambda X, g, b, eps: F.batch_norm(X, None, None, g, b, training=True, eps=eps)
    if kind == "group":
        return lambda X, g, b, eps: F.group_norm(X, 32, g, b, eps)
    if kind == "instance":
        return lambda X, eps: F.instance_norm(X, eps=eps)
    if kind == "layer_chw":
        return lambda X, eps: F.layer_norm(X, X.shape[1:], eps=eps)
    if kind == "batch1d":
        return lambda X: F.batch_norm(X, None, None, training=True)
    if kind == "batch_bf16":
        return lambda X, g, b: F.batch_norm(X, None, None, g, b, training=True, eps=1e-5)
    if kind == "group8":
        return lambda X, g, b, eps: F.group_norm(X, 8, g, b, eps)
    if kind == "layer_hw":
        return lambda X, eps: F.layer_norm(X, X.shape[2:], eps=eps)
    if kind == "var_channels":
        return lambda X: X.var(dim=(0, 2, 3), unbiased=False)
    return lambda X: X - X.mean(0)


def _affine_input(t, shape: tuple, channels: int):
    return (t.randn(*shape, device="cuda"), 1.0 + 0.1 * t.randn(channels, device="cuda"),
            0.1 * t.randn(channels, device="cuda"), 1e-5)


def _linear_layernorm_input(t, s: dict) -> tuple:
    """bf16 activations and an ``nn.Linear`` weight ``[N, K]``, a LayerNorm's bf16 scale and shift, eps."""
    n, k = s["N"], s["K"]
    return (t.randn(s["M"], k, device="cuda").bfloat16(), (t.randn(n, k, device="cuda") / k ** 0.5).bfloat16(),
            (1.0 + 0.1 * t.randn(n, device="cuda")).bfloat16(), (0.1 * t.randn(n, device="cuda")).bfloat16(), 1e-5)


#: the shape "before / after" is timed at: FULL = the case's own shape (forward scans, whose old program finishes)
FULL = "full"

#: kernel -> (sizes, sizes for the before/after comparison (FULL: the same) or None, input(torch, sizes) (a tuple
#: for several inputs), output dtype, the torch call (torch -> fn))
CASES = {
    "cumsum_f32": ({"M": 32768, "N": 32768}, FULL, lambda t, s: t.randn(s["M"], s["N"], device="cuda"),
                   "float32", lambda t: (lambda X: t.cumsum(X, -1))),
    "cumsum_f32@wide": ({"M": 4096, "N": 65536}, FULL, lambda t, s: t.randn(s["M"], s["N"], device="cuda"),
                        "float32", lambda t: (lambda X: t.cumsum(X, -1))),
    "cumsum_f32@long": ({"M": 64, "N": 1 << 20}, FULL, lambda t, s: t.randn(s["M"], s["N"], device="cuda"),
                        "float32", lambda t: (lambda X: t.cumsum(X, -1))),
    "cumprod_excl_f32": ({"M": 16384, "N": 65536}, FULL,
                         lambda t, s: 1.0 + 1e-4 * t.randn(s["M"], s["N"], device="cuda"), "float32",
                         _exclusive_cumprod),
    "cummax_rank3_bf16": ({"B": 64, "L": 512, "C": 32768}, FULL,
                          lambda t, s: t.randn(s["B"], s["L"], s["C"], device="cuda").bfloat16(), "bfloat16",
                          lambda t: (lambda X: t.cummax(X, -1).values)),
    "cumsum_masked_f32": ({"M": 8192, "N": 65536}, FULL,
                          lambda t, s: (t.randn(s["M"], s["N"], device="cuda"),
                                        t.rand(s["M"], s["N"], device="cuda")), "float32", _masked_cumsum),
    "cumsum_mid_f32": ({"B": 16, "L": 32768, "C": 2048}, FULL,
                       lambda t, s: t.randn(s["B"], s["L"], s["C"], device="cuda"), "float32",
                       lambda t: (lambda X: t.cumsum(X, 1))),
    "cumsum_reversed_f32": ({"M": 4096, "N": 8192}, {"M": 64, "N": 2048},
                            lambda t, s: t.randn(s["M"], s["N"], device="cuda"), "float32",
                            lambda t: _flip_scan(t, "sum", 1)),
    "cumsum_reversed_excl_bf16": ({"M": 4096, "N": 8192}, {"M": 64, "N": 2048},
                                  lambda t, s: t.randn(s["M"], s["N"], device="cuda").bfloat16(), "bfloat16",
                                  lambda t: _flip_scan(t, "sum", 1, exclusive=True)),
    "cumprod_reversed_f32": ({"M": 4096, "N": 8192}, {"M": 64, "N": 2048},
                             lambda t, s: 1.0 + 1e-3 * t.randn(s["M"], s["N"], device="cuda"), "float32",
                             lambda t: _flip_scan(t, "prod", 1)),
    "cummax_reversed_mid_f32": ({"B": 32, "L": 1024, "C": 1024}, {"B": 2, "L": 512, "C": 256},
                                lambda t, s: t.randn(s["B"], s["L"], s["C"], device="cuda"), "float32",
                                lambda t: _flip_scan(t, "max", 1)),
    "batchnorm2d_f32": ({"N": 32, "C": 64, "H": 56, "W": 56}, {"N": 4, "C": 16, "H": 28, "W": 28},
                        lambda t, s: _affine_input(t, (s["N"], s["C"], s["H"], s["W"]), s["C"]), "float32",
                        lambda t: _norm(t, "batch2d")),
    "groupnorm_f32": ({"N": 16, "CPG": 8, "H": 32, "W": 32}, {"N": 2, "CPG": 2, "H": 16, "W": 16},
                      lambda t, s: _affine_input(t, (s["N"], 32 * s["CPG"], s["H"], s["W"]), 32 * s["CPG"]),
                      "float32", lambda t: _norm(t, "group")),
    "instancenorm1d_f32": ({"N": 32, "C": 256, "L": 4096}, {"N": 4, "C": 32, "L": 1024},
                           lambda t, s: (t.randn(s["N"], s["C"], s["L"], device="cuda"), 1e-5), "float32",
                           lambda t: _norm(t, "instance")),
    "layernorm_chw_f32": ({"N": 64, "C": 32, "H": 28, "W": 28}, {"N": 4, "C": 8, "H": 14, "W": 14},
                          lambda t, s: (t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda"), 1e-5), "float32",
                          lambda t: _norm(t, "layer_chw")),
    "batchnorm1d_bf16": ({"N": 64, "C": 128, "L": 1000}, {"N": 4, "C": 16, "L": 250},
                         lambda t, s: t.randn(s["N"], s["C"], s["L"], device="cuda").bfloat16(), "bfloat16",
                         lambda t: _norm(t, "batch1d")),
    "batchnorm3d_f32": ({"N": 8, "C": 32, "D": 16, "H": 28, "W": 28}, FULL,
                        lambda t, s: _affine_input(t, (s["N"], s["C"], s["D"], s["H"], s["W"]), s["C"]), "float32",
                        lambda t: _norm(t, "batch2d")),
    "batchnorm2d_bf16": ({"N": 24, "C": 96, "H": 35, "W": 35}, FULL,
                         lambda t, s: (t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda").bfloat16(),
                                       1.0 + 0.1 * t.randn(s["C"], device="cuda"),
                                       0.1 * t.randn(s["C"], device="cuda")),
                         "bfloat16", lambda t: _norm(t, "batch_bf16")),
    "layernorm_hw_f32": ({"N": 32, "C": 64, "H": 28, "W": 28}, FULL,
                         lambda t, s: (t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda"), 1e-5), "float32",
                         lambda t: _norm(t, "layer_hw")),
    "groupnorm8_f32": ({"N": 8, "CPG": 12, "H": 20, "W": 20}, FULL,
                       lambda t, s: _affine_input(t, (s["N"], 8 * s["CPG"], s["H"], s["W"]), 8 * s["CPG"]),
                       "float32", lambda t: _norm(t, "group8")),
    "var_channels_f32": ({"N": 32, "C": 64, "H": 56, "W": 56}, FULL,
                         lambda t, s: t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda"), "float32",
                         lambda t: _norm(t, "var_channels")),
    "center_columns_f32": ({"M": 8192, "N": 4096}, {"M": 1024, "N": 512},
                           lambda t, s: t.randn(s["M"], s["N"], device="cuda"), "float32",
                           lambda t: _norm(t, "center")),
    # issue 26 item 6: statistics of a contraction's result (a norm or softmax after a linear layer)
    "linear_softmax_f32": ({"M": 4096, "K": 512, "N": 1024}, FULL,
                           lambda t, s: (t.randn(s["M"], s["K"], device="cuda"),
                                         t.randn(s["K"], s["N"], device="cuda") / s["K"] ** 0.5), "float32",
                           lambda t: (lambda X, W: t.softmax(X @ W, -1))),
    "linear_layernorm_bf16": ({"M": 8192, "K": 1024, "N": 768}, FULL, _linear_layernorm_input, "bfloat16",
                              lambda t: (lambda X, w, g, b, eps: t.nn.functional.layer_norm(
                                  X @ w.t(), (w.shape[0],), g, b, eps))),
    "logits_logsumexp_f32": ({"M": 4096, "K": 768, "N": 1000}, FULL,
                             lambda t, s: (t.randn(s["M"], s["K"], device="cuda"),
                                           t.randn(s["K"], s["N"], device="cuda") / s["K"] ** 0.5,
                                           t.randn(s["N"], device="cuda")), "float32",
                             lambda t: (lambda H, W, b: t.logsumexp(H @ W + b, -1))),
    "linear_batchnorm_f32": ({"M": 2048, "K": 512, "N": 384}, FULL,
                             lambda t, s: (t.randn(s["M"], s["K"], device="cuda"),
                                           t.randn(s["K"], s["N"], device="cuda"), 1e-5), "float32",
                             lambda t: (lambda X, W, eps: t.nn.functional.batch_norm(
                                 X @ W, None, None, training=True, eps=eps))),
    "bmm_softmax_bf16": ({"B": 32, "S": 512, "T": 512, "D": 64}, FULL,
                         lambda t, s: (t.randn(s["B"], s["S"], s["D"], device="cuda").bfloat16(),
                                       t.randn(s["B"], s["T"], s["D"], device="cuda").bfloat16()), "bfloat16",
                         lambda t: (lambda Q, K: t.softmax((Q @ K.transpose(-1, -2)).float(), -1).to(Q.dtype))),
    # independent reductions of one row, one loop (ir/sibling_fusion.py); rows longer than a tile
    "cosine_rows_f32": ({"B": 1024, "D": 65536}, FULL,
                        lambda t, s: (t.randn(s["B"], s["D"], device="cuda"), t.randn(s["B"], s["D"], device="cuda")),
                        "float32", lambda t: (lambda X, Y: t.nn.functional.cosine_similarity(X, Y, dim=1))),
    "cosine_mid_bf16": ({"B": 16, "C": 1024, "L": 4096}, FULL,
                        lambda t, s: (t.randn(s["B"], s["C"], s["L"], device="cuda").bfloat16(),
                                      t.randn(s["B"], s["C"], s["L"], device="cuda").bfloat16()), "float32",
                        lambda t: (lambda A, P: t.nn.functional.cosine_similarity(A.float(), P.float(), dim=1))),
    "minmax_rows_f32": ({"B": 2048, "D": 65536}, FULL, lambda t, s: t.randn(s["B"], s["D"], device="cuda"),
                        "float32", lambda t: (lambda X: (X - X.amin(1, keepdim=True))
                                              / (X.amax(1, keepdim=True) - X.amin(1, keepdim=True)))),
    "naive_var_rows_f32": ({"B": 1024, "D": 65536}, FULL, lambda t, s: t.randn(s["B"], s["D"], device="cuda"),
                           "float32", lambda t: (lambda X: (X * X).mean(1) - X.mean(1) ** 2)),
    "triplet_rows_f32": ({"B": 1024, "D": 32768}, FULL,
                         lambda t, s: tuple(t.randn(s["B"], s["D"], device="cuda") for _ in range(3)), "float32",
                         lambda t: (lambda A, P, N: t.nn.functional.triplet_margin_loss(A, P, N, reduction="none"))),
    "maxpool3d_f32": ({"N": 8, "C": 64, "D": 32, "H": 64, "W": 64}, None,
                      lambda t, s: t.randn(s["N"], s["C"], s["D"], s["H"], s["W"], device="cuda"), "float32",
                      lambda t: _pool(t.nn.functional, "max_pool3d", 2)),
    "avgpool2d_s4_f32": ({"N": 32, "C": 128, "H": 112, "W": 112}, None,
                         lambda t, s: t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda"), "float32",
                         lambda t: _pool(t.nn.functional, "avg_pool2d", 4)),
    "maxpool2d_k3s2p1_f32": ({"N": 32, "C": 64, "H": 112, "W": 112}, None,
                             lambda t, s: t.randn(s["N"], s["C"], s["H"], s["W"], device="cuda"), "float32",
                             lambda t: _pool(t.nn.functional, "max_pool2d", 3, stride=2, padding=1)),
}


def prepare(out: Path, only: set[str] | None = None) -> None:
    """Compile every kernel of :data:`CASES` (or those in ``only``) for its shape (the optimizer runs here)."""
    (out / "gen").mkdir(parents=True, exist_ok=True)
    for name, (sizes, *_rest) in CASES.items():
        if only is None or name in only:
            compile_into(out, name, sizes)


def _args(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _double(a):
    return a.double() if hasattr(a, "double") else a


def _check(t, mod, fn, x, dtype):
    want = fn(*(_double(a) for a in _args(x)))
    out = t.full(want.shape, float("nan"), device="cuda", dtype=getattr(t, dtype))
    mod.launch(*_args(x), out)
    return out, _rel(out, want)


def main(argv: list[str] | None = None) -> int:
    args, only = bench_args(__doc__, argv)
    if args.cmd == "prepare":
        prepare(args.out, only)
        return 0
    import torch
    from triton.testing import do_bench
    rows = []
    for name, (sizes, small, make_input, dtype, make_fn) in CASES.items():
        if only is not None and name not in only:
            continue
        src = args.indir / "gen" / f"{name.replace('@', '__')}__triton__pick.py"
        if not src.is_file():
            print(f"{name}: no {src}", flush=True)
            continue
        mod = _load(src)
        fn = make_fn(torch)
        compiled = torch.compile(fn, dynamic=False)
        torch.manual_seed(0)
        x = make_input(torch, sizes)
        out, err = _check(torch, mod, fn, x, dtype)
        xa = _args(x)
        row = {"kernel": name, "sizes": sizes, "rel_err": err,
               "eager_rel_err": _rel(fn(*xa), fn(*(_double(a) for a in xa)))}
        row["ours_ms"] = do_bench(lambda: mod.launch(*xa, out), warmup=25, rep=100)
        row["rel_err_after"] = _check(torch, mod, fn, x, dtype)[1]      # a moving error is a race
        row["eager_ms"] = do_bench(lambda: fn(*xa), warmup=25, rep=100)
        compiled(*xa)
        row["compile_ms"] = do_bench(lambda: compiled(*xa), warmup=25, rep=100)
        base_src = args.base / "gen" / src.name if args.base is not None else None
        if small is not None and base_src is not None and base_src.is_file():
            base = _load(base_src, "base_" + base_src.stem)
            full = small == FULL or getattr(args, "base_full", False)
            xs = x if full else make_input(torch, small)
            out_s, row["small_rel_err"] = _check(torch, mod, fn, xs, dtype)
            out_b, row["base_small_rel_err"] = _check(torch, base, fn, xs, dtype)
            row["small_sizes"] = sizes if full else small
            xsa = _args(xs)
            row["small_ms"] = do_bench(lambda: mod.launch(*xsa, out_s), warmup=5, rep=20)
            row["base_small_ms"] = do_bench(lambda: base.launch(*xsa, out_b), warmup=1, rep=5)
            out_s = out_b = None
        rows.append(row)
        print(json.dumps(row), flush=True)
        x = xa = xs = xsa = out = None              # free the inputs before the next case
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"\n{torch.cuda.get_device_name()}; ratio = anchor ms / our ms; small = the before/after shape")
    print(f"{'kernel':26} {'rel err':>8} {'ours ms':>8} {'eager':>8} {'compile':>8} {'vs eager':>8} {'vs comp':>8} "
          f"{'small ms':>9} {'before ms':>10} {'speedup':>8}")
    for r in rows:
        before = f"{r['small_ms']:9.3f} {r['base_small_ms']:10.3f} {r['base_small_ms'] / r['small_ms']:8.1f}" \
            if "base_small_ms" in r else ""
        print(f"{r['kernel']:26} {max(r['rel_err'], r['rel_err_after']):8.1e} {r['ours_ms']:8.3f} "
              f"{r['eager_ms']:8.3f} {r['compile_ms']:8.3f} {r['eager_ms'] / r['ours_ms']:8.2f} "
              f"{r['compile_ms'] / r['ours_ms']:8.2f} {before}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
