"""Throwaway experiment: our 4096^3 pick with int32 index math; tutorial-style Triton GEMM ceilings."""
import importlib.util, re, sys, torch, triton, triton.language as tl
from triton.testing import do_bench
M = N = K = 4096
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16); b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
ref = a @ b
t_ref = do_bench(lambda: a @ b, warmup=25, rep=100)
print(f"cuBLAS {t_ref:.4f} ms  {2*M*N*K/t_ref/1e9:.0f} TFLOP/s")
src = open("build/sw/g4096/gen/gemm_bf16__b0128_b1128_k64.py").read()
for tag, s in (("ours", src), ("ours_i32", src.replace("tl.int64", "tl.int32")),
               ("ours_nomaskK", re.sub(r"mask=v_v33, other=0.0", "mask=v_v29, other=0.0", src.replace("mask=v_v42, other=0.0", "mask=v_v41, other=0.0")))):
    open(f"/tmp/{tag}.py", "w").write(s)
    spec = importlib.util.spec_from_file_location(tag, f"/tmp/{tag}.py"); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    for w, st in ((4, 3), (8, 3), (8, 4)):
        c = torch.empty_like(ref); mod.launch(a, b, c, num_warps=w, num_stages=st); torch.cuda.synchronize()
        err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
        t = do_bench(lambda: mod.launch(a, b, c, num_warps=w, num_stages=st), warmup=25, rep=100)
        print(f"{tag:14s} w{w} s{st}: {t:.4f} ms  {t_ref/t:.3f}x cuBLAS  err {err:.1e}")

@triton.jit
def mm(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM); npn = tl.cdiv(N, BN)
    width = G * npn; gid = pid // width; first = gid * G; gs = min(npm - first, G)
    pm = first + (pid % width) % gs; pn = (pid % width) // gs
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(A + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.)
        y = tl.load(B + (k + rk)[:, None] * sbk + rn[None, :] * sbn, mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.)
        acc = tl.dot(x, y, acc)
    tl.store(C + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

for BM, BN, BK, w, st in ((128, 128, 64, 4, 3), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 256, 64, 8, 4)):
    c = torch.empty_like(ref)
    g = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    f = lambda: mm[g](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BM, BN, BK, 8, num_warps=w, num_stages=st)
    try:
        f(); torch.cuda.synchronize()
    except Exception as e:
        print("tut", BM, BN, BK, w, st, "failed", str(e)[:80]); continue
    err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
    t = do_bench(f, warmup=25, rep=100)
    print(f"tutorial {BM}x{BN}x{BK} w{w} s{st}: {t:.4f} ms  {t_ref/t:.3f}x cuBLAS err {err:.1e}")
