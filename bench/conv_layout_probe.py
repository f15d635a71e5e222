"""Which one-launch program form closes the NCHW convolutions' gap to cuDNN? Hand-written Triton kernels (a
design probe, not the optimizer's output) beside main's compiled conv programs, eager PyTorch (cuDNN) and the same
programs on channel-innermost operands, on one GPU in one run (issue 26 item 2).

Main reads the weight ``[F, C, kh, kw]`` as ``[F tile, C tile]`` slices per window position (K lanes ``kh * kw``
apart). The probes keep one launch (SPEC IR-2: no relayout launch before it) and change only the tile forms:

- ``im2col``: the K tile over the flattened ``(c, kh, kw)`` axis (``c = k // (kh*kw)``, ``kh = k % (kh*kw) // kw``,
  ``kw = k % kw``): the weight tile ``[F, K]`` is contiguous, the image tile ``[K, J]`` is gathered per K lane;
  output lanes over the output columns ``j`` (main's output tile).
- ``flat``: the same K tile, output lanes over the flattened output plane ``p = i * WO + j`` (no lanes wasted on a
  row narrower than the tile: the strided conv's rows are 28 wide).

Usage (on the GPU; the programs come from ``bench/conv_bench.py prepare --out DIR``):
    python3 bench/conv_layout_probe.py DIR/gen
Fp32 at ieee on both sides (TF32 off); each launch checked against float64 (relative L2 error); ``do_bench``
medians; a table of ratios last.
"""
from __future__ import annotations

import importlib.util
import json
import sys

import torch
import torch.nn.functional as Fn
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def _window_lanes(k0, KT, KH: tl.constexpr, KW: tl.constexpr, BK: tl.constexpr):
    """The K tile ``k0 + range(BK)`` over the flattened (c, kh, kw) axis: each lane's (c, kh, kw) and k < KT."""
    k = k0 + tl.arange(0, BK)
    rem = k % (KH * KW)
    return k // (KH * KW), rem // KW, rem % KW, k < KT


@triton.jit
def _weight_tile(K, f, F, c, kh, kw, kin, ks0, ks1, ks2, ks3):
    """The weight tile [BF, BK]: contiguous along K for a row-major [F, C, kh, kw] weight."""
    return tl.load(K + f[:, None] * ks0 + c[None, :] * ks1 + kh[None, :] * ks2 + kw[None, :] * ks3,
                   mask=(f[:, None] < F) & kin[None, :], other=0.0)


@triton.jit
def _mma(w, x, acc, BF16: tl.constexpr):
    """acc + w @ x, f32 at ieee precision (bf16 operands straight to the tensor cores)."""
    if BF16:
        return tl.dot(w, x, acc, out_dtype=tl.float32)
    return tl.dot(w, x, acc, input_precision="ieee", out_dtype=tl.float32)


@triton.jit
def conv_im2col(X, K, Y, N, C, H, W, F, HO, WO,
                xs0, xs1, xs2, xs3, ks0, ks1, ks2, ks3, ys0, ys1, ys2, ys3,
                KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                BF: tl.constexpr, BJ: tl.constexpr, BK: tl.constexpr, BF16: tl.constexpr):
    """Output lanes over the output columns j (main's output tile), the K tile over the flattened (c, kh, kw)."""
    pid = tl.program_id(0)
    nj = tl.cdiv(WO, BJ)
    nf = tl.cdiv(F, BF)
    jt = pid % nj
    r = pid // nj
    i = r % HO
    r = r // HO
    ft = r % nf
    n = r // nf
    f = ft * BF + tl.arange(0, BF)
    j = jt * BJ + tl.arange(0, BJ)
    acc = tl.zeros((BF, BJ), tl.float32)
    KT = C * KH * KW
    for k0 in range(0, KT, BK):
        c, kh, kw, kin = _window_lanes(k0, KT, KH, KW, BK)
        w = _weight_tile(K, f, F, c, kh, kw, kin, ks0, ks1, ks2, ks3)
        hi = i * SH - PH + kh * DH                       # [BK]
        wi = j[None, :] * SW - PW + kw[:, None] * DW     # [BK, BJ]
        m = kin[:, None] & (hi[:, None] >= 0) & (hi[:, None] < H) & (wi >= 0) & (wi < W) & (j[None, :] < WO)
        x = tl.load(X + n * xs0 + c[:, None] * xs1 + hi[:, None] * xs2 + wi * xs3, mask=m, other=0.0)
        acc = _mma(w, x, acc, BF16)
    tl.store(Y + n * ys0 + f[:, None] * ys1 + i * ys2 + j[None, :] * ys3, acc,
             mask=(f[:, None] < F) & (j[None, :] < WO))


def launch_im2col(X, K, Y, stride, pad, dil, BF=64, BJ=64, BK=64, warps=4, stages=3):
    """Launch conv_im2col for an NCHW conv (stride, pad, dil: (h, w) pairs)."""
    N, C, H, W = X.shape
    F, _, KH, KW = K.shape
    HO, WO = Y.shape[2], Y.shape[3]
    grid = (N * triton.cdiv(F, BF) * HO * triton.cdiv(WO, BJ),)
    conv_im2col[grid](X, K, Y, N, C, H, W, F, HO, WO, *X.stride(), *K.stride(), *Y.stride(),
                      KH=KH, KW=KW, SH=stride[0], SW=stride[1], PH=pad[0], PW=pad[1], DH=dil[0], DW=dil[1],
                      BF=BF, BJ=BJ, BK=BK, BF16=X.dtype == torch.bfloat16, num_warps=warps, num_stages=stages)


@triton.jit
def conv_im2col_flat(X, K, Y, N, C, H, W, F, HO, WO,
                     xs0, xs1, xs2, xs3, ks0, ks1, ks2, ks3, ys0, ys1, ys2, ys3,
                     KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                     PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                     BF: tl.constexpr, BJ: tl.constexpr, BK: tl.constexpr, BF16: tl.constexpr):
    """Output lanes over the flattened (i, j) plane (i = p // WO, j = p % WO)."""
    pid = tl.program_id(0)
    P = HO * WO
    npt = tl.cdiv(P, BJ)
    nf = tl.cdiv(F, BF)
    pt = pid % npt
    r = pid // npt
    ft = r % nf
    n = r // nf
    f = ft * BF + tl.arange(0, BF)
    p = pt * BJ + tl.arange(0, BJ)
    i = p // WO
    j = p % WO
    pin = p < P
    acc = tl.zeros((BF, BJ), tl.float32)
    KT = C * KH * KW
    for k0 in range(0, KT, BK):
        c, kh, kw, kin = _window_lanes(k0, KT, KH, KW, BK)
        w = _weight_tile(K, f, F, c, kh, kw, kin, ks0, ks1, ks2, ks3)
        hi = i[None, :] * SH - PH + kh[:, None] * DH
        wi = j[None, :] * SW - PW + kw[:, None] * DW
        m = kin[:, None] & (hi >= 0) & (hi < H) & (wi >= 0) & (wi < W) & pin[None, :]
        x = tl.load(X + n * xs0 + c[:, None] * xs1 + hi * xs2 + wi * xs3, mask=m, other=0.0)
        acc = _mma(w, x, acc, BF16)
    tl.store(Y + n * ys0 + f[:, None] * ys1 + i[None, :] * ys2 + j[None, :] * ys3, acc,
             mask=(f[:, None] < F) & pin[None, :])


def launch_flat(X, K, Y, stride, pad, dil, BF=64, BJ=64, BK=64, warps=4, stages=3):
    """Launch conv_im2col_flat for an NCHW conv."""
    N, C, H, W = X.shape
    F, _, KH, KW = K.shape
    HO, WO = Y.shape[2], Y.shape[3]
    grid = (N * triton.cdiv(F, BF) * triton.cdiv(HO * WO, BJ),)
    conv_im2col_flat[grid](X, K, Y, N, C, H, W, F, HO, WO, *X.stride(), *K.stride(), *Y.stride(),
                           KH=KH, KW=KW, SH=stride[0], SW=stride[1], PH=pad[0], PW=pad[1], DH=dil[0], DW=dil[1],
                           BF=BF, BJ=BJ, BK=BK, BF16=X.dtype == torch.bfloat16, num_warps=warps, num_stages=stages)


def load(path, name):
    """Import a generated source as a module."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: name: (X shape, K shape, dtype, stride, padding, dilation, the rank of main's operands); a 1-D conv is the 2-D
#: one with a unit height (main's program gets the rank-3 views)
CASES = {
    "conv2d_f32": ((32, 64, 56, 56), (64, 64, 3, 3), torch.float32, (1, 1), (1, 1), (1, 1), 4),
    "conv2d_s2_bf16": ((32, 128, 56, 56), (128, 128, 3, 3), torch.bfloat16, (2, 2), (1, 1), (1, 1), 4),
    "conv2d_dil_f32": ((16, 64, 64, 64), (64, 64, 3, 3), torch.float32, (1, 1), (0, 0), (2, 2), 4),
    "conv1d_f32": ((16, 256, 1, 4096), (256, 256, 1, 5), torch.float32, (1, 1), (0, 2), (1, 1), 3),
}
#: the tile configurations tried: (BF, BJ, BK, warps, stages)
IM2COL_CFGS = ((64, 64, 64, 4, 3), (64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3),
               (128, 128, 32, 8, 3), (64, 64, 64, 4, 4))
FLAT_CFGS = ((64, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3), (128, 64, 32, 4, 3),
             (64, 256, 32, 8, 3), (128, 128, 64, 8, 3))


def _rel(y, ref) -> float:
    return ((y.double() - ref).norm() / ref.norm()).item()


def _best(launch, cfgs, X, K, Y, ref, conv) -> tuple[float, tuple, float]:
    """(ms, cfg, relative error) of the fastest configuration."""
    best = None
    for cfg in cfgs:
        Y.zero_()
        launch(X, K, Y, *conv, *cfg)
        err = _rel(Y, ref)
        ms = do_bench(lambda: launch(X, K, Y, *conv, *cfg), warmup=25, rep=100)
        if best is None or ms < best[0]:
            best = (ms, cfg, err)
    return best


def main(gen: str) -> None:
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name, (xs, ks, dt, s, p, d, rank) in CASES.items():
        torch.manual_seed(0)
        X = torch.randn(*xs, device="cuda").to(dt)
        K = torch.randn(*ks, device="cuda").to(dt)
        ref = Fn.conv2d(X.double(), K.double(), stride=s, padding=p, dilation=d)
        Y = torch.empty(ref.shape, device="cuda", dtype=torch.float32)
        mod = load(f"{gen}/{name}__triton__pick.py", name)

        def main_launch(X, K, Y):
            mod.launch(*((t[:, :, 0] for t in (X, K, Y)) if rank == 3 else (X, K, Y)))
        main_launch(X, K, Y)
        row = {"kernel": name, "main_err": _rel(Y, ref),
               "main_ms": do_bench(lambda: main_launch(X, K, Y), warmup=25, rep=100),
               "cudnn_ms": do_bench(lambda: Fn.conv2d(X, K, stride=s, padding=p, dilation=d), warmup=25, rep=100),
               "im2col": _best(launch_im2col, IM2COL_CFGS, X, K, Y, ref, (s, p, d)),
               "flat": _best(launch_flat, FLAT_CFGS, X, K, Y, ref, (s, p, d))}
        # main's program on channel-innermost operands (the program reads strides at launch)
        Kc = K.movedim(1, -1).contiguous().movedim(-1, 1)
        Xc = X.movedim(1, -1).contiguous().movedim(-1, 1)
        row["main_w_cl_ms"] = do_bench(lambda: main_launch(X, Kc, Y), warmup=25, rep=100)
        row["main_all_cl_ms"] = do_bench(lambda: main_launch(Xc, Kc, Y), warmup=25, rep=100)
        row["cudnn_cl_ms"] = do_bench(lambda: Fn.conv2d(Xc, Kc, stride=s, padding=p, dilation=d), warmup=25,
                                      rep=100)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\nkernel | main ms | im2col ms (cfg) | flat ms (cfg) | main, weight ch-last | main, all ch-last | cuDNN "
          "| cuDNN ch-last | main / best probe")
    for r in rows:
        best = min(r["im2col"][0], r["flat"][0])
        print(f"{r['kernel']} | {r['main_ms']:.3f} | {r['im2col'][0]:.3f} {r['im2col'][1]} | {r['flat'][0]:.3f} "
              f"{r['flat'][1]} | {r['main_w_cl_ms']:.3f} | {r['main_all_cl_ms']:.3f} | {r['cudnn_ms']:.3f} | "
              f"{r['cudnn_cl_ms']:.3f} | {r['main_ms'] / best:.2f}x  (rel err: main {r['main_err']:.1e}, im2col "
              f"{r['im2col'][2]:.1e}, flat {r['flat'][2]:.1e})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/conv_bench/gen")
