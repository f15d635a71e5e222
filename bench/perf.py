"""Issue 7 items 1-3: the H200 benchmark harness, side by side with the anchors, and cost-model calibration.

Two modes, two machines (the pattern of ``bench/device_check.py``):

``python bench/perf.py prepare --out build/perf [--only a,b] [--providers triton,cutile]`` (here, with
    intent_eqsat): compiles every suite kernel (``bench/suite/*.kir``, table :data:`SUITE`) with
    ``intent_eqsat.compile(path, target="sm90", provider=...)``. The optimizer is provider-independent
    (``pipeline.run`` hands no provider to the optimize stage), so the first provider whose compile succeeds gives
    the program and the other providers serialize that same program (``pipeline.serialize``, byte-identical to what
    ``compile`` would produce for them). For the GEMM and attention families every ranked candidate
    (``CompiledKernel.candidates``: ``Candidate.decode()`` -> verified one-kernel module -> serialized) and the
    constructed program (SPEC PASS-3.1) are written too, for calibration (issue 7 item 3, SPEC PASS-6 tuning
    artifacts). Each program gets the cost model's prediction at every suite shape
    (``intent_eqsat.extract.cost.estimate(kernel, "sm90", sizes, params=..., provider=...)``) besides the
    optimizer's own cost (at the model's default sizes). Writes ``OUT/gen/*.py`` (generated modules with their
    launchers; they import only triton/torch or cuda.tile) and ``OUT/manifest.json``. A combination that cannot be
    built (compile error, provider rejection, a candidate that does not verify) is recorded with its error kind and
    stage; it is never fatal.

``python3 bench/perf.py run --in build/perf --json out.json [--quick | --full] [--interpret]`` (on the H200:
    torch, triton, optionally cuda.tile; it never imports intent_eqsat): for every suite kernel and shape of the
    mode, in one run on one GPU,

    * correctness of every program at small shapes (``checks``): fresh random inputs, outputs poisoned with NaN,
      launch, relative L2 error against a torch float64 reference (:data:`REFERENCES`), NaN never passes;
    * timing with ``triton.testing.do_bench`` medians at the suite shape, next to the anchors timed the same way in
      the same process: torch.matmul / addmm / bmm (cuBLAS) for the GEMM family; SDPA with the flash and the cuDNN
      backends (``torch.nn.attention.sdpa_kernel``) for attention; ``torch.compile`` (and eager) for the
      memory-bound kernels, plus the copy ceiling (bytes moved / time of a device copy of half those bytes, i.e.
      the same bytes read and written);
    * a kernel that is too slow is not timed many times: a probe at a reduced shape (the ``probe`` symbols, scaled
      down keeping Triton's integer specialization) estimates the full time; above ``--hard-cap-s`` the entry is
      reported as over the cap with the estimate, above ``--cap-ms`` it is timed once (CUDA events), else with
      do_bench. Our output at the full shape is also compared with the anchor's (a large-shape sanity check);
    * one failure never stops the table: every item runs in a worker process under a supervisor (a crash, a
      poisoned CUDA context or a hang restarts the worker on the remaining items and records the error);
      ``--budget`` bounds the run (items not started by then are recorded as not run).

    Prints the ratio table last (ratio = anchor time / our time: above 1 we are faster), writes the JSON
    (``--json``) and the calibration JSON (``--calibration``; default ``$OUT/calibration.json`` on the device
    machine, else ``bench/calibration/<device>_<date>.json``): per GEMM/attention kernel, provider and shape, every
    program's predicted cost and measured time, the Spearman rank correlation between them and how far the pick is
    from the best measured program.

    ``--interpret``: the same pipeline on this CPU machine with ``TRITON_INTERPRET=1``, torch CPU tensors and the
    tiny ``interpret`` shapes (wall-clock medians instead of do_bench; eager torch instead of torch.compile; cuTile
    not run). It is the harness's own end-to-end test (``tests/interp/test_perf_harness.py``).

``python bench/perf.py report out.json``: print the table again.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE_DIR = ROOT / "bench" / "suite"
PROVIDERS = ("triton", "cutile")
#: relative-L2 tolerance of the float64 check by output dtype (METHOD.md: bf16 operands 1e-3..1e-2)
TOLERANCE = {"f64": 1e-10, "f32": 1e-4, "f16": 1e-2, "bf16": 1e-2}
#: the f32 tolerance of a bench compiled with ``fp32_contract`` = tf32 / bf16x3 (METHOD.md: tf32 near 3e-4; the
#: H200's tf32 dot measured 7.7e-4 at K = 161, torch's own TF32 matmul 8.8e-4 from the same exact result)
FP32_CONTRACT_TOLERANCE = {"tf32": 2e-3, "bf16x3": 1e-4}


def tolerance_of(bench: dict, dtype: str) -> float:
    """The relative-L2 tolerance of a bench's output of ``dtype`` (its compile options may loosen f32)."""
    prec = (bench.get("options") or {}).get("fp32_contract", "ieee")
    if dtype == "f32" and prec in FP32_CONTRACT_TOLERANCE:
        return FP32_CONTRACT_TOLERANCE[prec]
    return TOLERANCE.get(dtype, 0.0)
#: our output at the full shape against the anchor's: flagged when the relative L2 difference exceeds this
#: multiple of the dtype tolerance
FULL_SHAPE_SLACK = 5.0
MODES = ("quick", "default", "full")


# ============================================================================================== the suite

@dataclass(frozen=True)
class Case:
    """One suite shape: ``label`` for the table, symbol ``sizes``, and the modes that run it."""

    label: str
    sizes: dict
    modes: tuple = ("quick", "default", "full")


@dataclass(frozen=True)
class Bench:
    """A suite kernel: ``bench/suite/<name>.kir`` (kernel ``name``). ``op`` names the torch reference and anchor
    (:data:`REFERENCES`, :func:`anchors`), ``family`` the anchor kind and whether the candidates are timed
    (gemm, attention: calibration), ``checks`` the small correctness shapes, ``interpret`` the tiny shapes of the
    CPU run, ``probe`` the symbols a probe may scale down (with their smallest value)."""

    name: str
    op: str
    family: str
    cases: tuple
    checks: tuple
    interpret: dict
    probe: dict
    causal: bool = False
    #: the problem the optimizer is told (``intent_eqsat.compile(sizes=...)``): block sizes chosen for this shape
    compile_sizes: dict | None = None
    #: the suite file and kernel this bench compiles (default: its own name); the kernel is renamed to the bench
    source: str | None = None
    #: groups the optimizer leaves out (default: none): a bench without one group measures what the group buys
    without_groups: tuple = ()
    #: compile options (``intent_eqsat.compile(options=...)``); attention takes ``numerics=relaxed_normalization``,
    #: the permission SDPA's flash and cuDNN kernels take for themselves (online rescaling, P rounded to bf16)
    options: dict | None = None
    #: KIR specializations (``intent_eqsat.compile(specialize=...)``, SPEC IR-2): size symbol -> values; the module
    #: holds one more kernel per value and its launch() picks it from the shapes
    specialize: dict | None = None


def _g(m: int, n: int, k: int) -> dict:
    return {"M": m, "N": n, "K": k}


def _att(s: int, d: int, z: int = 4, h: int = 32) -> dict:
    return {"Z": z, "H": h, "S": s, "T": s, "D": d}


_ATT_CASES = (
    Case("Z4 H32 S1024 d64", _att(1024, 64), ("full",)),
    Case("Z4 H32 S4096 d64", _att(4096, 64)),
    Case("Z4 H32 S16384 d64", _att(16384, 64), ("full",)),
    Case("Z4 H32 S1024 d128", _att(1024, 128), ("full",)),
    Case("Z4 H32 S4096 d128", _att(4096, 128)),
    Case("Z4 H32 S16384 d128", _att(16384, 128), ("full",)),
)
_ATT_CHECKS = ({"Z": 2, "H": 2, "S": 97, "T": 97, "D": 64}, {"Z": 1, "H": 3, "S": 67, "T": 67, "D": 128})
#: attention work is proportional to Z, H, S and T each (S and T scale together: the causal structure stays)
_ATT_PROBE = {"Z": 2, "H": 2, "S": 16, "T": 16}
_ROWS = (Case("32768x8192", {"M": 32768, "N": 8192}),)
_ROW_CHECKS = ({"M": 67, "N": 1000},)
_ROW_TINY = {"M": 5, "N": 37}

_RELAXED = {"numerics": "relaxed_normalization"}

SUITE: tuple[Bench, ...] = (
    Bench("gemm_bf16", "gemm", "gemm",
          (Case("4096^3", _g(4096, 4096, 4096)),
           Case("8192^3", _g(8192, 8192, 8192), ("default", "full")),
           Case("8192x8192x1024", _g(8192, 8192, 1024), ("default", "full")),
           Case("1000x3000x777", _g(1000, 3000, 777)),
           Case("64x4096x4096", _g(64, 4096, 4096), ("default", "full"))),
          (_g(193, 227, 161),), _g(7, 9, 5), {"M": 16}),
    *(Bench(f"gemm_bf16_at_{tag}", "gemm", "gemm", (Case(label, _g(*mnk)),), (_g(193, 227, 161),), _g(7, 9, 5),
            {"M": 16}, compile_sizes=_g(*mnk), source="gemm_bf16")
      for tag, label, mnk in (("4096", "4096^3", (4096, 4096, 4096)), ("8192", "8192^3", (8192, 8192, 8192)),
                              ("8192x8192x1024", "8192x8192x1024", (8192, 8192, 1024)),
                              ("1000x3000x777", "1000x3000x777", (1000, 3000, 777)),
                              ("64x4096x4096", "64x4096x4096", (64, 4096, 4096)))),
    Bench("gemm_bias_relu_bf16", "gemm_bias_relu", "gemm", (Case("4096^3", _g(4096, 4096, 4096)),),
          (_g(193, 227, 161),), _g(7, 9, 5), {"M": 16}, compile_sizes=_g(4096, 4096, 4096)),
    Bench("batched_gemm_bf16", "bmm", "gemm",
          (Case("32x1024^3", {"Bt": 32, "M": 1024, "N": 1024, "K": 1024}),),
          ({"Bt": 3, "M": 67, "N": 83, "K": 45},), {"Bt": 2, "M": 5, "N": 6, "K": 7}, {"Bt": 2, "M": 16},
          compile_sizes={"Bt": 32, "M": 1024, "N": 1024, "K": 1024}),
    Bench("attention_bf16", "attention", "attention", _ATT_CASES, _ATT_CHECKS,
          {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4}, _ATT_PROBE),
    # the flash form (online_tiles) needs the numeric permission; compiled for each head dim of the suite
    *(Bench(f"attention_bf16_relaxed_d{d}", "attention", "attention", (Case(f"Z4 H32 S4096 d{d}", _att(4096, d)),),
            tuple(c for c in _ATT_CHECKS if c["D"] == d), {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4}, _ATT_PROBE,
            compile_sizes=_att(4096, d), source="attention_bf16", options=_RELAXED)
      for d in (64, 128)),
    # the same kernel specialized to its head dimension (a literal extent in the KIR): the head-dim contraction
    # takes one tile, so the key loop holds both contractions (intent_eqsat.ir.single_trip)
    *(Bench(f"attention_bf16_d{d}_relaxed", "attention", "attention", (Case(f"Z4 H32 S4096 d{d}", _att(4096, d)),),
            tuple(c for c in _ATT_CHECKS if c["D"] == d), {"Z": 1, "H": 2, "S": 6, "T": 6, "D": d}, _ATT_PROBE,
            compile_sizes=_att(4096, d), source=f"attention_bf16_d{d}", options=_RELAXED)
      for d in (64, 128)),
    Bench("causal_attention_bf16", "attention", "attention", _ATT_CASES, _ATT_CHECKS,
          {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4}, _ATT_PROBE, causal=True),
    # the flash form of causal attention (online_tiles, then its key tiles split at the row tile's diagonal by
    # ir.range_skip), with the head dim a size symbol and a literal
    *(Bench(f"causal_attention_bf16_relaxed_d{d}", "attention", "attention",
            (Case(f"Z4 H32 S4096 d{d}", _att(4096, d)),), tuple(c for c in _ATT_CHECKS if c["D"] == d),
            {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4}, _ATT_PROBE, causal=True, compile_sizes=_att(4096, d),
            source="causal_attention_bf16", options=_RELAXED)
      for d in (64, 128)),
    *(Bench(f"causal_attention_bf16_d{d}_relaxed", "attention", "attention",
            (Case(f"Z4 H32 S4096 d{d}", _att(4096, d)),), tuple(c for c in _ATT_CHECKS if c["D"] == d),
            {"Z": 1, "H": 2, "S": 6, "T": 6, "D": d}, _ATT_PROBE, causal=True, compile_sizes=_att(4096, d),
            source=f"causal_attention_bf16_d{d}", options=_RELAXED)
      for d in (64, 128)),
    # the size-symbol kernels with the head dim specialized to 64 and 128 (compile(specialize=...), SPEC IR-2): one
    # module serves every head dim, launch() runs the D=64 or D=128 kernel (each tuned as itself) and the general
    # kernel for other values (the D=40 check, the interpreter's D=4)
    *(Bench(f"{kind}_bf16_relaxed_specialized", "attention", "attention",
            (Case("Z4 H32 S4096 d64", _att(4096, 64)), Case("Z4 H32 S4096 d128", _att(4096, 128))),
            _ATT_CHECKS + ({"Z": 1, "H": 2, "S": 33, "T": 33, "D": 40},), {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4},
            _ATT_PROBE, causal=kind == "causal_attention", compile_sizes=_att(4096, 64), source=f"{kind}_bf16",
            options=_RELAXED, specialize={"D": (64, 128)})
      for kind in ("attention", "causal_attention")),
    # causal narrowing vs the same kernel without the narrowing group, at S1024 and at the suite's S4096, one run
    # (issue 7 target 1.7x); with the numeric permission (the flash form); each compiled for its shape: one tuning
    # measurement serves both (it keys the program before its tiles are bound, which the range passes after binding
    # leave as it is)
    *(Bench(f"causal_attention_bf16_{tag}{suffix}", "attention", "attention", (Case(f"Z4 H32 S{s} d64", _att(s, 64)),),
            _ATT_CHECKS[:1], {"Z": 1, "H": 2, "S": 6, "T": 6, "D": 4}, _ATT_PROBE, causal=True,
            compile_sizes=_att(s, 64), source="causal_attention_bf16", without_groups=without, options=_RELAXED)
      for s, suffix in ((1024, ""), (4096, "_s4096"))
      for tag, without in (("narrowed", ()), ("not_narrowed", ("narrowing",)))),
    *(Bench(name, name.rsplit("_", 1)[0], "memory", _ROWS, _ROW_CHECKS, _ROW_TINY, {"M": 16},
            compile_sizes=_ROWS[0].sizes)
      for name in ("softmax_f32", "softmax_bf16", "layernorm_f32", "layernorm_bf16", "rmsnorm_f32", "rmsnorm_bf16",
                   "row_sum_f32", "cumsum_f32")),
    # issue 27 item 7: element-wise losses and activations written with log1p / expm1, against eager PyTorch
    *(Bench(name, name.rsplit("_", 1)[0], "memory", _ROWS, _ROW_CHECKS, _ROW_TINY, {"M": 16},
            compile_sizes=_ROWS[0].sizes)
      for name in ("softplus_f32", "bce_logits_f32", "elu_bf16")),
    # issue 27 items 1-2: reductions to a scalar (losses with reduction="mean", norms, X.sum()), split over programs
    # in one launch (``split_reduction``), against eager PyTorch and torch.compile
    *(Bench(name, op, "memory", cases, checks, tiny, probe, compile_sizes=cases[0].sizes)
      for name, op, cases, checks, tiny, probe in (
          ("mse_f32", "mse_mean", (Case("32768x32768", {"M": 32768, "N": 32768}),
                                   Case("4096x4096", {"M": 4096, "N": 4096})),
           _ROW_CHECKS, _ROW_TINY, {"M": 16}),
          ("huber_f32", "huber_mean", (Case("32x2048x4096", {"B": 32, "S": 2048, "H": 4096}),),
           ({"B": 3, "S": 37, "H": 129},), {"B": 2, "S": 3, "H": 7}, {"B": 1}),
          ("fro_bf16", "fro_norm", (Case("2^28+3", {"N": (1 << 28) + 3}),), ({"N": 100003},), {"N": 77},
           {"N": 1 << 16}),
          ("sum_f32", "sum_all", (Case("2^26", {"N": 1 << 26}), Case("2^30", {"N": 1 << 30})), ({"N": 100003},),
           {"N": 77}, {"N": 1 << 16}))),
    # issue 27 item 1: arg-reductions over the last axis and over a middle axis, against eager torch.argmax/argmin
    # (the ratio's reference) and torch.compile of the same call
    *(Bench(name, op, "memory", cases, checks, tiny, probe, compile_sizes=cases[0].sizes)
      for name, op, cases, checks, tiny, probe in (
          ("argmax_rows_f32", "argmax_rows", _ROWS + (Case("4096x50257", {"M": 4096, "N": 50257}),
                                                       Case("64x50257", {"M": 64, "N": 50257})),
           _ROW_CHECKS, _ROW_TINY, {"M": 16}),
          ("argmin_rows_bf16", "argmin_rows", _ROWS, _ROW_CHECKS, _ROW_TINY, {"M": 16}),
          ("argmax_mid_f32", "argmax_mid", (Case("32x2048x2048", {"B": 32, "K": 2048, "N": 2048}),),
           ({"B": 3, "K": 300, "N": 67},), {"B": 2, "K": 37, "N": 5}, {"B": 2}))),
    # issue 26 item 1: contractions in the layouts users write (transposed operands, nn.Linear weights, rank-3/4
    # activations times a matrix, a matrix broadcast over a batch), against eager PyTorch and torch.compile of the
    # same einsum; fp32 at ieee (TF32 off on both sides) and at tf32 (fp32_contract=tf32, TF32 on on both sides)
    *(Bench(f"{name}{suffix}", (f"einsum@{prec}:" if prec != "ieee" else "einsum:") + eq, "contract",
            (Case(label, sizes),), (check,), tiny, probe, compile_sizes=sizes, source=name if suffix else None,
            options={"fp32_contract": prec} if prec != "ieee" else None)
      for name, eq, label, sizes, check, tiny, probe, precs in (
          ("gemm_nn_f32", "MK,KN->MN", "4096^3", _g(4096, 4096, 4096), _g(193, 227, 161), _g(7, 9, 5), {"M": 16},
           ("ieee", "tf32")),
          ("gemm_tn_f32", "KM,KN->MN", "4096^3", _g(4096, 4096, 4096), _g(193, 227, 161), _g(7, 9, 5), {"M": 16},
           ("ieee", "tf32")),
          ("linear_nt_bf16", "MK,NK->MN", "4096^3", _g(4096, 4096, 4096), _g(193, 227, 161), _g(7, 9, 5),
           {"M": 16}, ("ieee",)),
          ("gemm_tt_bf16", "KM,NK->MN", "4096^3", _g(4096, 4096, 4096), _g(193, 227, 161), _g(7, 9, 5), {"M": 16},
           ("ieee",)),
          ("matmul4d_f32", "BHSK,KN->BHSN", "4x8x1024x128 @ 128x512", {"B": 4, "H": 8, "S": 1024, "K": 128, "N": 512},
           {"B": 2, "H": 3, "S": 67, "K": 45, "N": 83}, {"B": 1, "H": 2, "S": 5, "K": 6, "N": 7}, {"S": 16},
           ("ieee", "tf32")),
          ("bmm_bcast_bf16", "MK,BKN->BMN", "16x1024^3", {"B": 16, "M": 1024, "K": 1024, "N": 1024},
           {"B": 3, "M": 67, "K": 45, "N": 83}, {"B": 2, "M": 5, "K": 6, "N": 7}, {"B": 2, "M": 16}, ("ieee",)),
          ("bmm_tn_bf16", "BKM,BKN->BMN", "32x1024^3", {"B": 32, "M": 1024, "K": 1024, "N": 1024},
           {"B": 3, "M": 67, "K": 45, "N": 83}, {"B": 2, "M": 5, "K": 6, "N": 7}, {"B": 2, "M": 16}, ("ieee",)))
      for prec, suffix in ((p, "" if p == "ieee" else f"_{p}") for p in precs)),
    # issue 26 item 7: an int8 GEMM with an int32 accumulator, against torch._int_mm (cuBLASLt int8)
    Bench("gemm_i8", "int_mm", "contract", (Case("4096^3", _g(4096, 4096, 4096)),), (_g(193, 224, 160),),
          _g(17, 16, 32), {"M": 32}, compile_sizes=_g(4096, 4096, 4096)),
    Bench("linear3d_bf16", "linear", "contract", (Case("8x1024x4096 @ 4096x4096", {"B": 8, "S": 1024, "K": 4096,
                                                                                    "N": 4096}),),
          ({"B": 3, "S": 67, "K": 45, "N": 83},), {"B": 2, "S": 5, "K": 6, "N": 7}, {"S": 16},
          compile_sizes={"B": 8, "S": 1024, "K": 4096, "N": 4096}),
)
CALIBRATED_FAMILIES = ("gemm", "attention", "memory", "contract")


def einsum_parts(op: str) -> tuple[str, str] | None:
    """(equation, fp32 precision) of an ``einsum[@prec]:<equation>`` op (its letters are the KIR size symbols, its
    operands the kernel's read views in ABI order), else None."""
    if not op.startswith("einsum"):
        return None
    head, eq = op.split(":", 1)
    return eq, (head.split("@", 1)[1] if "@" in head else "ieee")


def _rulebooks_without(groups: tuple) -> list[str] | None:
    """Every registered group but ``groups`` (None: all of them, the optimizer's default)."""
    if not groups:
        return None
    from intent_eqsat.rules import registry
    return [g for g in registry.load().names if g not in groups]


def scalars_for(op: str, sizes: dict) -> dict:
    """By-value scalar arguments of a suite op at ``sizes`` (rounded to f32, the KIR dtype of both)."""
    import struct

    def f32(x: float) -> float:
        return struct.unpack("f", struct.pack("f", x))[0]
    if op == "attention":
        return {"scale": f32(1.0 / math.sqrt(sizes["D"]))}
    if op in ("layernorm", "rmsnorm"):
        return {"eps": f32(1e-5)}
    return {}


def flops_for(op: str, sizes: dict, causal: bool) -> int | None:
    """Useful floating-point operations (a multiply-add counts 2; causal attention counts half)."""
    if op in ("gemm", "gemm_bias_relu"):
        return 2 * sizes["M"] * sizes["N"] * sizes["K"]
    if op == "bmm":
        return 2 * sizes["Bt"] * sizes["M"] * sizes["N"] * sizes["K"]
    if op == "attention":
        f = 4 * sizes["Z"] * sizes["H"] * sizes["S"] * sizes["T"] * sizes["D"]
        return f // 2 if causal else f
    if op == "linear":
        return 2 * sizes["B"] * sizes["S"] * sizes["N"] * sizes["K"]
    if op == "int_mm":
        return 2 * sizes["M"] * sizes["N"] * sizes["K"]
    parts = einsum_parts(op)
    if parts:
        return 2 * math.prod(sizes[c] for c in sorted(set(parts[0].replace(",", "").replace("->", ""))))
    return None


# ============================================================================== references and anchors (torch)

def _ref_attention(torch, ins, sc, causal):
    q, k, v = ins["Q"], ins["K"], ins["V"]
    s = torch.matmul(q, k.transpose(-1, -2)) * sc["scale"]
    if causal:
        S, T = s.shape[-2], s.shape[-1]
        mask = torch.ones(S, T, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def _ref_layernorm(torch, ins, sc, causal):
    x = ins["X"]
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), ins["gamma"], ins["beta"], sc["eps"])


def _ref_rmsnorm(torch, ins, sc, causal):
    x = ins["X"]
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + sc["eps"]) * ins["w"]


#: op -> f(torch, inputs (float64 tensors by KIR parameter name), scalars, causal) -> the output (float64).
#: These are the float64 references of the check; ``tests/interp/test_perf_harness.py`` checks each against the
#: KIR reference evaluator on the suite's own KIR text.
class _References(dict):
    """The reference table; an ``einsum[@prec]:<equation>`` op is torch.einsum of the read views in ABI order."""

    def __missing__(self, op: str):
        parts = einsum_parts(op)
        if parts is None:
            raise KeyError(op)
        return lambda torch, i, s, c: torch.einsum(parts[0], *i.values())


REFERENCES = _References({
    "linear": lambda torch, i, s, c: torch.nn.functional.linear(i["X"], i["W"], i["bias"]),
    "int_mm": lambda torch, i, s, c: i["A"] @ i["B"],
    "gemm": lambda torch, i, s, c: i["A"] @ i["B"],
    "gemm_bias_relu": lambda torch, i, s, c: torch.relu(i["A"] @ i["B"] + i["bias"]),
    "bmm": lambda torch, i, s, c: torch.bmm(i["A"], i["B"]),
    "attention": _ref_attention,
    "softmax": lambda torch, i, s, c: torch.softmax(i["X"], dim=-1),
    "layernorm": _ref_layernorm,
    "rmsnorm": _ref_rmsnorm,
    "row_sum": lambda torch, i, s, c: i["X"].sum(-1),
    "cumsum": lambda torch, i, s, c: torch.cumsum(i["X"], dim=-1),
    "argmax_rows": lambda torch, i, s, c: i["X"].argmax(-1),
    "argmin_rows": lambda torch, i, s, c: i["X"].argmin(-1),
    "argmax_mid": lambda torch, i, s, c: i["X"].argmax(1),
    "softplus": lambda torch, i, s, c: torch.nn.functional.softplus(i["X"]),
    "bce_logits": lambda torch, i, s, c: torch.nn.functional.binary_cross_entropy_with_logits(
        i["X"], i["T"], reduction="none"),
    "elu": lambda torch, i, s, c: torch.nn.functional.elu(i["X"]),
    "mse_mean": lambda torch, i, s, c: torch.nn.functional.mse_loss(i["X"], i["T"]),
    "huber_mean": lambda torch, i, s, c: torch.nn.functional.huber_loss(i["X"], i["T"], delta=1.0),
    "fro_norm": lambda torch, i, s, c: torch.linalg.vector_norm(i["X"]),
    "sum_all": lambda torch, i, s, c: i["X"].sum(),
})


def _native_fn(torch, op: str, causal: bool):
    """The op in the input dtype, the way a user writes it in torch (what torch.compile compiles)."""
    F = torch.nn.functional
    if op == "softmax":
        return lambda X: torch.softmax(X, dim=-1)
    if op == "layernorm":
        return lambda X, gamma, beta, eps: F.layer_norm(X, (X.shape[-1],), gamma, beta, eps)
    if op == "rmsnorm":
        def rms(X, w, eps):
            xf = X.float()
            return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * w.float()).to(X.dtype)
        return rms
    if op == "row_sum":
        return lambda X: X.sum(-1)
    if op == "cumsum":
        return lambda X: torch.cumsum(X, dim=-1)
    if op == "argmax_rows":
        return lambda X: X.argmax(-1)
    if op == "argmin_rows":
        return lambda X: X.argmin(-1)
    if op == "argmax_mid":
        return lambda X: X.argmax(1)
    if op == "softplus":
        return lambda X: F.softplus(X)
    if op == "bce_logits":
        return lambda X, T: F.binary_cross_entropy_with_logits(X, T, reduction="none")
    if op == "elu":
        return lambda X: F.elu(X)
    if op == "mse_mean":
        return lambda X, T: F.mse_loss(X, T)
    if op == "huber_mean":
        return lambda X, T: F.huber_loss(X, T, delta=1.0)
    if op == "fro_norm":
        return lambda X: torch.linalg.vector_norm(X.float())
    if op == "sum_all":
        return lambda X: X.sum()
    raise KeyError(op)


#: ops whose ratio's reference is eager PyTorch (issue 27's target), torch.compile reported beside it
EAGER_FIRST = ("argmax_rows", "argmin_rows", "argmax_mid", "softplus", "bce_logits", "elu", "mse_mean", "huber_mean",
               "fro_norm", "sum_all")


def anchor_names(op: str, interpret: bool) -> list[str]:
    """The anchors of an op, in :func:`anchors` order (the first is the ratio's reference)."""
    if op in ("linear", "int_mm") or einsum_parts(op) or op in EAGER_FIRST:
        return ["eager (interpret)"] if interpret else ["eager", "torch.compile"]
    return {"gemm": ["cuBLAS matmul"], "gemm_bias_relu": ["cuBLAS addmm+relu"], "bmm": ["cuBLAS bmm"],
            "attention": ["SDPA flash", "SDPA cuDNN"]}.get(
        op, ["eager (interpret)"] if interpret else ["torch.compile", "eager"])


def anchors(torch, op: str, causal: bool, interpret: bool) -> list[tuple[str, object]]:
    """[(anchor name, f(inputs, scalars) -> output)], the first one being the ratio's reference."""
    if op == "gemm":
        return [("cuBLAS matmul", lambda i, s: torch.matmul(i["A"], i["B"]))]
    if op == "gemm_bias_relu":
        return [("cuBLAS addmm+relu", lambda i, s: torch.relu(torch.addmm(i["bias"], i["A"], i["B"])))]
    if op == "bmm":
        return [("cuBLAS bmm", lambda i, s: torch.bmm(i["A"], i["B"]))]
    if op == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        F = torch.nn.functional

        def sdpa(backend):
            def f(i, s):
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(i["Q"], i["K"], i["V"], is_causal=causal,
                                                          scale=s["scale"])
            return f
        return [("SDPA flash", sdpa(SDPBackend.FLASH_ATTENTION)), ("SDPA cuDNN", sdpa(SDPBackend.CUDNN_ATTENTION))]
    if op in ("linear", "int_mm") or einsum_parts(op):
        return _contract_anchors(torch, op, interpret)
    fn = _native_fn(torch, op, causal)
    names = {"softmax": ("X",), "row_sum": ("X",), "cumsum": ("X",), "layernorm": ("X", "gamma", "beta"),
             "rmsnorm": ("X", "w"), "argmax_rows": ("X",), "argmin_rows": ("X",), "argmax_mid": ("X",),
             "softplus": ("X",), "bce_logits": ("X", "T"), "elu": ("X",), "mse_mean": ("X", "T"),
             "huber_mean": ("X", "T"), "fro_norm": ("X",), "sum_all": ("X",)}[op]

    def call(f):
        return lambda i, s: f(*[i[n] for n in names], *s.values())
    if interpret:                     # no inductor compile on the CPU test machine: eager stands in
        return [("eager (interpret)", call(fn))]
    compiled = torch.compile(fn, dynamic=False)
    if op in EAGER_FIRST:
        return [("eager", call(fn)), ("torch.compile", call(compiled))]
    return [("torch.compile", call(compiled)), ("eager", call(fn))]


def _contract_anchors(torch, op: str, interpret: bool) -> list[tuple[str, object]]:
    """Eager torch (the ratio's reference: what the user's PyTorch code runs) and torch.compile of the same call;
    an fp32 einsum at tf32 runs both with TF32 matmuls allowed, at ieee with them off (torch's default)."""
    parts = einsum_parts(op)
    if parts:
        eq, prec = parts

        def fn(*xs):
            return torch.einsum(eq, *xs)
    elif op == "int_mm":
        prec = "ieee"

        def fn(A, B):                                  # cuBLASLt int8 GEMM (CPU: the int32 product)
            return torch._int_mm(A, B) if A.is_cuda else A.to(torch.int32) @ B.to(torch.int32)
    else:
        prec = "ieee"

        def fn(X, W, bias):
            return torch.nn.functional.linear(X, W, bias)

    def call(f):
        def run(i, s):
            flags = torch.backends.cuda.matmul
            old = flags.allow_tf32
            flags.allow_tf32 = prec == "tf32"
            try:
                return f(*i.values())
            finally:
                flags.allow_tf32 = old
        return run
    if interpret:
        return [("eager (interpret)", call(fn))]
    return [("eager", call(fn)), ("torch.compile", call(torch.compile(fn, dynamic=False)))]


# ============================================================================================== prepare (here)

def _symbols_of(params: list[dict]) -> list[str]:
    out = []
    for p in params:
        for d in p["dims"] or []:
            for f in d:
                if isinstance(f, str) and f not in out:
                    out.append(f)
    return out


def shape_of(dims: list, sizes: dict) -> list[int]:
    return [math.prod(sizes[f] if isinstance(f, str) else int(f) for f in d) for d in dims]


_ITEMSIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "bool": 1}


def bytes_moved(params: list[dict], sizes: dict) -> int:
    """The fewest bytes the kernel must move: every input read once, every output written once (inout twice)."""
    total = 0
    for p in params:
        if p["dims"] is None:
            continue
        n = math.prod(shape_of(p["dims"], sizes)) * _ITEMSIZE[p["dtype"]]
        total += n * (2 if p["access"] == "inout" else 1)
    return total


def _kir_params(kernel) -> list[dict]:
    return [{"name": p.name, "dtype": p.dtype, "access": p.access,
             "dims": None if p.dims is None else [list(d) for d in p.dims]} for p in kernel.params]


def _abi(program, kernel_name: str) -> list[dict]:
    k = program.kernel(kernel_name)
    return [{"name": a.name, "view": bool(a.is_view), "dtype": a.value.type.dtype,
             "access": a.access if a.is_view else "scalar"} for a in k.abi if not a.private]


def _error(err: BaseException) -> dict:
    from intent_eqsat import pipeline
    d = pipeline.describe_error(err)
    d["type"] = type(err).__name__
    d["message"] = d["message"][:600]
    return d


def _predict(kernel, params, provider: str, cases: list[dict]) -> dict:
    """The cost model's prediction (seconds) of one program at every suite shape."""
    from intent_eqsat.extract.cost import estimate
    out = {}
    for c in cases:
        try:
            e = estimate(kernel, "sm90", c["sizes"], params=params, provider=provider)
            terms = {k: float(v) for k, v in dict(getattr(e, "breakdown", {}) or {}).items()
                     if isinstance(v, (int, float))}
            out[c["label"]] = {"total": float(e.total), "terms": terms}
        except Exception as err:                            # recorded: the table shows no prediction
            out[c["label"]] = {"total": None, "error": f"{type(err).__name__}: {str(err)[:300]}"}
    return out


def _git_state() -> str:
    """HEAD and whether the package sources differ from it (the optimizer may be mid-change when this runs)."""
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "intent_eqsat", "rulebooks"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head + (" + uncommitted changes in intent_eqsat/rulebooks" if dirty else "")
    except Exception as err:                                 # noqa: BLE001
        return f"unknown: {err}"


class CompileTimeout(Exception):
    """intent_eqsat.compile did not return within --compile-seconds (recorded as the kernel's error kind)."""


def _compile_with_timeout(seconds: float, fn):
    """fn() under SIGALRM (the alarm is handled when control returns to Python, e.g. between optimizer
    iterations); no limit where signals are unavailable or seconds <= 0."""
    import signal
    import threading
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return fn()

    def _alarm(*_):
        raise CompileTimeout(f"intent_eqsat.compile did not finish within {seconds:g} s")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _write_manifest(outdir: Path, manifest: dict) -> None:
    tmp = outdir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, default=str))
    os.replace(tmp, outdir / "manifest.json")


def prepare(outdir: Path, only: list[str], providers: list[str], candidates: bool = True,
            compile_seconds: float = 600.0, append: bool = False, fallback_error: dict | None = None,
            tuning: list[str] | None = None) -> dict:
    """Compile the suite into ``outdir`` (see the module docstring); returns the manifest. ``tuning``: tuning
    files (``bench/tile_sweep.py run --tuning``) handed to ``compile(calibration=...)``. The manifest is
    rewritten after every kernel (an interrupted prepare keeps what it finished). ``append`` keeps the kernels of
    an existing manifest that this call does not prepare. ``fallback_error`` (set by :func:`prepare_isolated` after
    it killed the compile): the optimizer is not run; the constructed program is prepared and the pick is recorded
    with that error."""
    import intent_eqsat
    from intent_eqsat import ir, kir, pipeline
    from intent_eqsat.extract.calibration import fingerprint
    from intent_eqsat.ir.core import Module
    from intent_eqsat.optimizer import tiles as TILES
    from intent_eqsat.providers.launch_resources import LaunchResources

    gen = outdir / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    names = [b.name for b in SUITE if not only or b.name in only]
    benches, programs = [], []
    if append and (outdir / "manifest.json").exists():
        old = json.loads((outdir / "manifest.json").read_text())
        benches = [b for b in old["benches"] if b["name"] not in names]
        programs = [p for p in old["programs"] if p["bench"] not in names]
    for f in gen.glob("*.py"):
        if not append or f.name.split("__")[0] in names:
            f.unlink()
    t_all = time.time()
    manifest = {"created": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "target": "sm90", "tolerance": TOLERANCE,
                "intent_eqsat": str(Path(intent_eqsat.__file__).resolve().parent), "git": _git_state(),
                "benches": benches, "programs": programs}
    for b in SUITE:
        if b.name not in names:
            continue
        _write_manifest(outdir, manifest)
        path = SUITE_DIR / f"{b.source or b.name}.kir"
        ktext = path.read_text()
        if b.source:                                       # the same kernel under this bench's name
            ktext = ktext.replace(f"kernel {b.source}(", f"kernel {b.name}(")
        km = kir.parse(ktext, filename=str(path.relative_to(ROOT)))
        kparams = _kir_params(km.kernel(b.name) if hasattr(km, "kernel") else
                              next(k for k in km.kernels if k.name == b.name))
        cases = []
        for c in b.cases:
            sizes = dict(c.sizes)
            cases.append({"label": c.label, "sizes": sizes, "modes": list(c.modes),
                          "scalars": scalars_for(b.op, sizes), "flops": flops_for(b.op, sizes, b.causal),
                          "bytes": bytes_moved(kparams, sizes)})
        tiny = dict(b.interpret)
        cases.append({"label": "interpret " + "x".join(str(v) for v in tiny.values()), "sizes": tiny,
                      "modes": ["interpret"], "scalars": scalars_for(b.op, tiny),
                      "flops": flops_for(b.op, tiny, b.causal), "bytes": bytes_moved(kparams, tiny)})
        checks = [{"sizes": dict(s), "scalars": scalars_for(b.op, s)} for s in b.checks]
        entry = {"name": b.name, "kernel": b.name, "op": b.op, "family": b.family, "causal": b.causal,
                 "kir": str(path.relative_to(ROOT)), "params": kparams, "symbols": _symbols_of(kparams),
                 "outputs": [p["name"] for p in kparams if p["dims"] is not None and p["access"] != "in"],
                 "cases": cases, "checks": checks, "probe": dict(b.probe), "providers": {},
                 "compile_sizes": dict(b.compile_sizes) if b.compile_sizes else None,
                 "options": dict(b.options) if b.options else None,
                 "specialize": {k: list(v) for k, v in b.specialize.items()} if b.specialize else None,
                 "without_groups": list(b.without_groups)}
        benches.append(entry)
        _write_manifest(outdir, manifest)                    # a killed compile leaves this entry behind
        # --- compile: the first provider that succeeds gives the program; the others serialize the same one
        t0 = time.time()

        def try_compile(optimize: bool):
            errs: dict = {}
            for prov in providers:
                try:
                    return _compile_with_timeout(compile_seconds, lambda: intent_eqsat.compile(
                        km, target="sm90", provider=prov, kernel=b.name, optimize=optimize,
                        sizes=b.compile_sizes, options=b.options, rulebooks=_rulebooks_without(b.without_groups),
                        calibration=tuning or None, specialize=b.specialize)), prov, errs
                except CompileTimeout as err:
                    errs[prov] = {"kind": "CompileTimeout", "type": "CompileTimeout", "stage": None,
                                  "location": entry["kir"], "message": str(err)}
                    break
                except Exception as err:                    # noqa: BLE001 - recorded, not fatal
                    errs[prov] = _error(err)
                    if getattr(err, "stage", None) != "serialize":
                        break                                # not a provider problem: no provider can do better
            return None, None, errs

        pick_error = fallback_error
        ck, first, errors = try_compile(fallback_error is None)
        if ck is None and pick_error is None and not all(e.get("stage") == "serialize" for e in errors.values()):
            # the optimizer failed: the constructed program (SPEC PASS-3.1) is still measured (phase 2), the
            # pick is recorded with the optimizer's error
            pick_error = next(iter(errors.values()))
            ck, first, errors = try_compile(False)
        entry["compile_seconds"] = round(time.time() - t0, 2)
        if ck is None:
            entry["compile_error"] = pick_error or next(iter(errors.values()))
            for prov in providers:
                programs.append({"id": f"{b.name}.{prov}.pick", "bench": b.name, "provider": prov,
                                 "variant": "pick", "rank": 0, "status": "compile_error",
                                 "error": errors.get(prov, entry["compile_error"])})
            print(f"[prepare] {b.name}: compile failed: {entry['compile_error']['kind']}: "
                  f"{entry['compile_error']['message'][:200]}", flush=True)
            continue
        if pick_error is not None:
            entry["compile_error"] = pick_error
            entry["fallback"] = "the optimizer failed: only the constructed program is measured"
            for prov in providers:
                programs.append({"id": f"{b.name}.{prov}.pick", "bench": b.name, "provider": prov,
                                 "variant": "pick", "rank": 0, "status": "compile_error", "error": pick_error})
            print(f"[prepare] {b.name}: optimizer failed ({pick_error['kind']}): constructed program only",
                  flush=True)
        raw = ck._optimizer_result
        params = getattr(raw, "params", None) or None
        entry.update(optimizer_status=ck.optimizer_status, remarks=[str(r) for r in ck.remarks],
                     optimizer_cost=ck.predicted_cost, rulebooks=str(pipeline.rulebook_versions()),
                     optimize_phases=ck.report.get("optimize_phases", {}))
        # --- the programs: the pick, the ranked candidates, the constructed program (calibration families)
        # (name, rank, module, optimizer cost, provider params, launch resources: beside the program, issue 22)
        variants: list[tuple[str, int, object, object, object, object]] = [
            ("pick", 0, ck.program, ck.predicted_cost, params, ck.launch_resources.get(b.name))]
        # each program's structure and tile binding: the run writes its times as tuning measurements
        kres = raw.kernels.get(b.name) if raw is not None and hasattr(raw, "kernels") else None
        tuning_keys: dict[str, tuple] = {}
        if kres is not None and pick_error is None and not ck.specializations:
            # (a launch of a module with specializations may run another kernel: its times are not this one's)
            tuning_keys["pick"] = (kres.fingerprint, dict(kres.binding))
        if pick_error is not None:
            variants = [("constructed", -1, ck.program, None, None, None)]
        elif candidates and b.family in CALIBRATED_FAMILIES:
            for c in ck.candidates:
                if c.kernel != b.name:
                    continue
                try:
                    kk = c.decode()
                    m = Module(ck.program.target, ck.program.options, list(ck.program.params), [kk])
                    ir.verify(m)
                    # decode() already wrote the candidate's tile binding (TILE_*) into the kernel; only
                    # parameters the module itself declares are provider params
                    declared = {p.name for p in m.params}
                    vp = {n: v for n, v in (c.params or {}).items() if n in declared} or None
                    variants.append((f"cand{c.rank}", c.rank, m, float(c.cost), vp, c.launch_resources()))
                    tuning_keys[f"cand{c.rank}"] = (fingerprint(replace(c, params={}).decode()),
                                                    {n: v for n, v in (c.params or {}).items() if n in TILES.NAMES})
                except Exception as err:                    # noqa: BLE001 - a candidate that fails: recorded
                    variants.append((f"cand{c.rank}", c.rank, _error(err), float(c.cost), None, None))
            if ck.constructed is not None:
                variants.append(("constructed", -1, ck.constructed, None, None, None))
        seen: dict[tuple[str, str], str] = {}
        for prov in providers:
            entry["providers"][prov] = "compiled" if prov == first else "serialized from the same program"
            for vname, rank, module, opt_cost, vparams, vlaunch in variants:
                pid = f"{b.name}.{prov}.{vname}"
                e = {"id": pid, "bench": b.name, "provider": prov, "variant": vname, "rank": rank,
                     "optimizer_cost": opt_cost, "status": "ready"}
                programs.append(e)
                if isinstance(module, dict):
                    e.update(status="verify_error", error=module)
                    continue
                if vname == "pick" and prov in errors:
                    e.update(status="rejected", error=errors[prov])
                    continue
                try:
                    if vname == "pick" and prov == first:
                        src = ck.source
                    else:
                        src = pipeline.serialize(module, provider=prov, target="sm90", params=vparams,
                                                 specializations=ck.specializations if vname == "pick"
                                                 else None,
                                                 launch_resources={b.name: vlaunch} if vlaunch else None)[b.name]
                except Exception as err:                    # noqa: BLE001 - a provider rejection is data
                    e.update(status="rejected", error=_error(err))
                    continue
                sha = hashlib.sha256(src.encode()).hexdigest()[:16]
                e["source_sha"] = sha
                if (prov, sha) in seen:                      # the same source as another variant: not re-timed
                    e.update(status="duplicate", same_as=seen[(prov, sha)])
                    continue
                seen[(prov, sha)] = pid
                f = gen / f"{b.name}__{prov}__{vname}.py"
                f.write_text(src)
                e["module"] = str(f.relative_to(outdir))
                e["abi"] = _abi(module, b.name)
                if vname in tuning_keys:
                    e["tuning"] = {"structure": tuning_keys[vname][0], "binding": tuning_keys[vname][1],
                                   **(vlaunch or LaunchResources()).as_dict()}
                e["predicted"] = _predict(module.kernel(b.name), module.params, prov, cases)
        st = [f"{p['provider']}/{p['variant']}:{p['status']}" for p in programs if p["bench"] == b.name]
        print(f"[prepare] {b.name}: {entry['compile_seconds']}s, cost {ck.predicted_cost}, "
              f"{len(ck.candidates)} candidates; {', '.join(st)}", flush=True)
    manifest["prepare_seconds"] = round(time.time() - t_all, 1)
    manifest["benches"].sort(key=lambda e: [b.name for b in SUITE].index(e["name"])
                             if e["name"] in [b.name for b in SUITE] else 99)
    _write_manifest(outdir, manifest)
    n: dict[str, int] = {}
    for p in programs:
        n[p["status"]] = n.get(p["status"], 0) + 1
    print(f"[prepare] {len(benches)} kernels, {len(programs)} programs {n}; {outdir / 'manifest.json'}",
          flush=True)
    return manifest


def prepare_isolated(outdir: Path, only: list[str], providers: list[str], candidates: bool = True,
                     compile_seconds: float = 600.0, append: bool = False, tuning: list[str] | None = None) -> dict:
    """:func:`prepare`, one child process per kernel (``prepare --in-process --append --only NAME``), killed after
    ``compile_seconds`` (+ 60 s for the rest): the optimizer spends its time inside egglog, where no Python signal
    is handled, so only a process boundary bounds it. A killed kernel is recorded as ``CompileTimeout``."""
    import subprocess
    names = [b.name for b in SUITE if not only or b.name in only]
    outdir.mkdir(parents=True, exist_ok=True)
    if not append:
        for f in [outdir / "manifest.json", *sorted((outdir / "gen").glob("*.py"))]:
            if f.exists():
                f.unlink()
    t0 = time.time()
    for name in names:
        cmd = [sys.executable, str(Path(__file__).resolve()), "prepare", "--in-process", "--append", "--out",
               str(outdir), "--only", name, "--providers", ",".join(providers), "--compile-seconds", "0"]
        if not candidates:
            cmd.append("--no-candidates")
        for f in tuning or ():
            cmd += ["--tuning", str(f)]
        limit = compile_seconds + 60 if compile_seconds > 0 else None
        try:
            rc = subprocess.run(cmd, timeout=limit).returncode
            why = None if rc == 0 else f"prepare of {name} exited with code {rc}"
        except subprocess.TimeoutExpired:
            why = f"intent_eqsat.compile did not finish within {compile_seconds:g} s (process killed)"
            rc = None
        if why is None:
            continue
        err = {"kind": "CompileTimeout" if rc is None else "PrepareCrash", "type": None, "stage": None,
               "location": f"bench/suite/{name}.kir", "message": why}
        print(f"[prepare] {name}: {why}; preparing the constructed program", flush=True)
        try:
            subprocess.run(cmd + ["--fallback-error", json.dumps(err)], timeout=limit)
        except subprocess.TimeoutExpired:
            pass
        man = json.loads((outdir / "manifest.json").read_text())
        entry = next((b for b in man["benches"] if b["name"] == name), None)
        if entry is not None and not any(p["bench"] == name for p in man["programs"]):
            entry["compile_error"] = err
            for prov in providers:
                man["programs"].append({"id": f"{name}.{prov}.pick", "bench": name, "provider": prov,
                                        "variant": "pick", "rank": 0, "status": "compile_error", "error": err})
            _write_manifest(outdir, man)
        print(f"[prepare] {name}: {why}", flush=True)
    man = json.loads((outdir / "manifest.json").read_text())
    man["prepare_seconds"] = round(time.time() - t0, 1)
    _write_manifest(outdir, man)
    return man


# ============================================================================================== run (the GPU)

def _device(interpret: bool) -> str:
    return "cpu" if interpret else "cuda"


def _torch_dtype(torch, dt: str):
    return {"bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
            "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
            "f64": torch.float64}[dt]


def _fix_cuda_namespace() -> None:
    """cuda.tile carried under ``--target /tmp/site``: the ``cuda`` package found first (cuda-bindings' namespace)
    must also search the carried copy (as in bench/device_check.py)."""
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        cand = os.path.join(entry, "cuda") if entry else ""
        if cand and os.path.isdir(os.path.join(cand, "tile")):
            try:
                import cuda
                if cand not in list(cuda.__path__):
                    cuda.__path__.append(cand)
            except Exception:                                # noqa: BLE001
                pass


def _load_module(path: Path, name: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _shrink(v: int, target: int) -> int:
    """A value <= v near ``target`` with the same Triton integer specialization as v (divisible by 16 or not;
    never 1 unless v is 1)."""
    if v <= target:
        return v
    if v % 16 == 0:
        return max(16, (target // 16) * 16) if v >= 16 else v
    p = max(2, target)
    if p % 16 == 0:
        p += 1
    return min(p, v)


def probe_sizes(sizes: dict, probe: dict, fraction: float | None = None) -> tuple[dict, float]:
    """The probe shape and the work ratio full / probe (the product of the scaled symbols' ratios: the work of
    every suite kernel is proportional to each probe symbol). The probe symbols go to their smallest value, or,
    with ``fraction``, each is scaled by ``fraction ** (1 / #symbols)`` so the work is about ``fraction`` of the
    full work."""
    out, ratio = dict(sizes), 1.0
    syms = [s for s in probe if s in sizes]
    per = None if fraction is None else fraction ** (1.0 / max(1, len(syms)))
    for s in syms:
        lo = probe[s]
        target = lo if per is None else max(lo, int(sizes[s] * per))
        out[s] = _shrink(sizes[s], target)
        ratio *= sizes[s] / out[s]
    return out, ratio


#: the share of --budget that phase 0 (checks, compile warm-up) may start items in
PHASE0_SHARE = 0.4
#: a probe call that takes this long is trusted (the GPU is filled enough): no larger rung is tried
PROBE_LIMIT_MS = 250.0


def probe_ladder(sizes: dict, probe: dict) -> list[tuple[dict, float]]:
    """Probe shapes from the smallest (the ``probe`` symbols at their minimum) up, each rung about 8x the work of
    the one before, below the full shape; [(sizes, full / probe work)]. Empty when nothing can be scaled down."""
    first, r0 = probe_sizes(sizes, probe)
    if r0 <= 1.0:
        return []
    out = [(first, r0)]
    frac = 8.0 / r0
    while frac < 0.5:
        nxt, r = probe_sizes(sizes, probe, frac)
        if r < out[-1][1]:
            out.append((nxt, r))
        frac *= 8.0
    return out


class Runner:
    """Everything a worker needs to run items: torch, the device, timing."""

    def __init__(self, indir: Path, interpret: bool, cap_ms: float, hard_cap_ms: float, warmup: int, rep: int):
        import torch
        self.torch = torch
        self.indir = indir
        self.interpret = interpret
        self.dev = _device(interpret)
        self.cap_ms, self.hard_cap_ms = cap_ms, hard_cap_ms
        self.warmup, self.rep = warmup, rep
        man = json.loads((indir / "manifest.json").read_text())
        self.benches = {b["name"]: b for b in man["benches"]}
        self.programs = {p["id"]: p for p in man["programs"]}
        self.modules: dict[str, object] = {}
        self.anchor_fns: dict[tuple, list] = {}
        self.cutile_error: str | None = None

    # ------------------------------------------------------------------------------------------ primitives
    def sync(self) -> None:
        if self.dev == "cuda":
            self.torch.cuda.synchronize()

    def once_ms(self, fn) -> float:
        """One call, timed with CUDA events (wall clock on the CPU)."""
        torch = self.torch
        if self.dev != "cuda":
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return float(s.elapsed_time(e))

    def bench_ms(self, fn) -> float:
        """do_bench median (ms); on the CPU the median of a few wall-clock calls."""
        if self.dev != "cuda":
            fn()
            ts = sorted(self.once_ms(fn) for _ in range(3))
            return ts[1]
        import triton.testing
        return float(triton.testing.do_bench(fn, warmup=self.warmup, rep=self.rep, return_mode="median"))

    def graph_ms(self, fn) -> tuple[float | None, str | None]:
        """Median time per call by CUDA graph replay (``triton.testing.do_bench_cudagraph``), or None and why.

        The calls are captured back to back and replayed, so the host's launch time (our Python launcher, Triton's
        argument handling: 30-70 us on the H200's host) is not in it; ``do_bench`` enqueues each call from Python
        after an L2 flush, and a short kernel whose launch outlasts the flush waits for the host inside the timed
        interval (bench/launch_gap.py). Replay does not flush L2 between calls, so a small problem reads warmer
        data than under ``do_bench``: the column complements the ``do_bench`` ratio, it does not replace it."""
        if self.dev != "cuda":
            return None, None
        import triton.testing
        try:
            return float(triton.testing.do_bench_cudagraph(fn, rep=self.rep, return_mode="median")), None
        except Exception as e:  # noqa: BLE001 - a call that cannot be captured keeps its do_bench time only
            self.sync()
            return None, f"{type(e).__name__}: {str(e)[:200]}"

    def inputs(self, bench: dict, sizes: dict, seed: int) -> dict:
        """Fresh random inputs (normal values in the parameter dtype) and poisoned outputs, by parameter name."""
        torch = self.torch
        g = torch.Generator(device=self.dev)
        g.manual_seed(seed)
        out = {}
        for p in bench["params"]:
            if p["dims"] is None:
                continue
            shape = shape_of(p["dims"], sizes)
            dt = _torch_dtype(torch, p["dtype"])
            if p["access"] == "out":                   # poisoned: NaN, or the most negative integer
                poison = float("nan") if dt.is_floating_point else torch.iinfo(dt).min
                out[p["name"]] = torch.full(shape, poison, dtype=dt, device=self.dev)
            else:
                out[p["name"]] = torch.randn(shape, generator=g, dtype=torch.float32, device=self.dev).to(dt)
        return out

    def module(self, prog: dict):
        m = self.modules.get(prog["id"])
        if m is None:
            if prog["provider"] == "cutile":
                if self.interpret:
                    raise RuntimeError("not run: cuTile needs a GPU (--interpret runs Triton only)")
                _fix_cuda_namespace()
            m = _load_module(self.indir / prog["module"], "_perf_" + prog["id"].replace(".", "_"))
            self.modules[prog["id"]] = m
        return m

    def launcher(self, prog: dict, ins: dict, scalars: dict):
        mod = self.module(prog)
        args = [ins[a["name"]] if a["view"] else scalars[a["name"]] for a in prog["abi"]]
        if prog["provider"] == "triton":
            return lambda: mod.launch(*args)
        torch = self.torch
        return lambda: mod.launch(torch.cuda.current_stream(), *args)

    def rel_l2(self, got, ref) -> float:
        torch = self.torch
        g, r = got.to(torch.float64), ref.to(torch.float64)
        if not bool(torch.isfinite(g).all()):
            return float("nan")
        n = float(torch.linalg.vector_norm(r))
        d = float(torch.linalg.vector_norm(g - r))
        return d / n if n > 0 else d

    # ------------------------------------------------------------------------------------------ items
    def check(self, prog: dict, k: int) -> dict:
        """Correctness of one program at the bench's k-th check shape against the float64 reference."""
        torch = self.torch
        b = self.benches[prog["bench"]]
        chk = b["checks"][k] if not self.interpret else \
            next(c for c in b["cases"] if "interpret" in c["modes"])
        sizes, sc = chk["sizes"], chk["scalars"]
        ins = self.inputs(b, sizes, seed=1000 + k)
        run = self.launcher(prog, ins, sc)
        t0 = time.time()
        run()
        self.sync()
        first = time.time() - t0
        ref = REFERENCES[b["op"]](torch, {n: t.to(torch.float64) for n, t in ins.items()
                                          if n not in b["outputs"]}, sc, b["causal"])
        name = b["outputs"][0]
        out = ins[name]
        dt = next(p["dtype"] for p in b["params"] if p["name"] == name)
        tol = tolerance_of(b, dt)
        if tuple(out.shape) != tuple(ref.shape):
            return {"status": "FAIL", "error": f"shape {tuple(out.shape)} vs reference {tuple(ref.shape)}"}
        rel = self.rel_l2(out, ref)
        nan = int(torch.isnan(out.to(torch.float32)).sum())
        ok = rel == rel and rel <= tol and nan == 0
        r = {"status": "pass" if ok else "FAIL", "rel_l2": rel, "tol": tol, "sizes": sizes,
             "first_call_s": round(first, 3)}
        if nan:
            r["nan"] = nan
        return r

    def anchor(self, b: dict, case: dict, ins: dict, which: int) -> dict:
        torch = self.torch
        key = (b["name"],)
        fns = self.anchor_fns.get(key)
        if fns is None:
            fns = anchors(torch, b["op"], b["causal"], self.interpret)
            self.anchor_fns[key] = fns
        name, fn = fns[which]
        sc = case["scalars"]
        inputs = {n: t for n, t in ins.items() if n not in b["outputs"]}
        t0 = time.time()
        out = fn(inputs, sc)
        self.sync()
        first = time.time() - t0
        ms = self.bench_ms(lambda: fn(inputs, sc))
        r = {"status": "ok", "anchor": name, "ms": ms, "first_call_s": round(first, 3), "_out": out}
        return self._with_graph(r, lambda: fn(inputs, sc))

    def _with_graph(self, r: dict, fn) -> dict:
        """r with ``graph_ms`` (or ``graph_error``) of fn added (:meth:`graph_ms`)."""
        g, err = self.graph_ms(fn)
        if g is not None:
            r["graph_ms"] = g
        elif err:
            r["graph_error"] = err
        return r

    def warm(self, prog: dict, case: dict) -> dict:
        """One untimed launch at the smallest probe shape (same integer specialization as the full shape):
        compiles, and stays short even for a scalar-ownership program."""
        b = self.benches[prog["bench"]]
        probe, _ = probe_sizes(case["sizes"], b["probe"]) if not self.interpret else (case["sizes"], 1.0)
        ins = self.inputs(b, probe, seed=7)           # the ladder's first rung: small, whatever the program
        t0 = time.time()
        self.launcher(prog, ins, case["scalars"])()
        self.sync()
        return {"status": "ok", "sizes": probe, "first_call_s": round(time.time() - t0, 3)}

    def anchor_warm(self, b: dict, case: dict) -> dict:
        """One untimed call of each anchor at the full shape (torch.compile compiles and fills its caches)."""
        ins = self.inputs(b, case["sizes"], seed=42)
        inputs = {n: t for n, t in ins.items() if n not in b["outputs"]}
        out = {}
        for name, fn in anchors(self.torch, b["op"], b["causal"], self.interpret):
            t0 = time.time()
            fn(inputs, case["scalars"])
            self.sync()
            out[name] = round(time.time() - t0, 3)
        return {"status": "ok", "first_call_s": out}

    def copy_ceiling(self, nbytes: int) -> dict:
        """Time of a device copy of nbytes/2 bytes (nbytes moved: read + write)."""
        torch = self.torch
        half = max(1, nbytes // 2)
        src = torch.empty(half, dtype=torch.uint8, device=self.dev).random_(0, 255)
        dst = torch.empty_like(src)
        ms = self.bench_ms(lambda: dst.copy_(src))
        return {"status": "ok", "anchor": "copy ceiling", "ms": ms, "bytes": 2 * half,
                "GBps": 2 * half / (ms * 1e-3) / 1e9}

    def time_program(self, prog: dict, case: dict, ins: dict) -> dict:
        """Probe, then time (or report over the cap). Leaves our output in ins (for the full-shape comparison).

        Probe ladder (:func:`probe_ladder`): one call at the smallest probe shape (work ratio r = full / probe
        work) gives the estimate r x t. A small probe may underfill the GPU and overestimate, so while the estimate
        is over the hard cap and a probe call stays under ``PROBE_LIMIT_MS``, the next rung (8x the work) refines
        it. Estimated over the hard cap: not run at the full shape. Otherwise one call at the full shape (also the
        warm-up); over ``cap_ms`` that call is the result, else do_bench's median."""
        b = self.benches[prog["bench"]]
        sizes, sc = case["sizes"], case["scalars"]
        r: dict = {"probes": []}
        ladder = probe_ladder(sizes, b["probe"]) if not self.interpret else []
        est = None
        for i, (psizes, ratio) in enumerate(ladder):
            pins = self.inputs(b, psizes, seed=7)
            run = self.launcher(prog, pins, sc)
            if i == 0:
                t0 = time.time()
                run()
                self.sync()
                r["first_call_s"] = round(time.time() - t0, 3)
            tp = self.once_ms(run)
            est = tp * ratio
            r["probes"].append({"sizes": psizes, "ms": tp, "est_ms": est})
            del pins, run
            if est <= self.hard_cap_ms or tp >= PROBE_LIMIT_MS:
                break
        if est is not None:
            r["est_ms"] = est
            if est > self.hard_cap_ms:
                r.update(status="over_cap",
                         note=f"estimated {est:.0f} ms per call > hard cap {self.hard_cap_ms:.0f} ms: not run at "
                              f"the full shape")
                return r
        run = self.launcher(prog, ins, sc)
        t1 = self.once_ms(run)                      # the ladder compiled this specialization already
        if t1 > self.cap_ms:
            r.update(status="slow", ms=t1, note=f"over the {self.cap_ms:.0f} ms cap: one call")
            return r
        r.update(status="ok", ms=self.bench_ms(run))
        self.sync()
        return self._with_graph(r, run)


def _case_of(b: dict, label: str) -> dict:
    return next(c for c in b["cases"] if c["label"] == label)


def plan(man: dict, mode: str, providers: list[str], only: list[str]) -> list[dict]:
    """The ordered work groups, each a (bench, case) with the items to run.

    Phase 0 (several worker processes at once; nothing is timed): per program, the correctness checks and one
    untimed launch at the probe shape of every case ("warm": Triton's and torch's compile caches are on disk, so
    the timing phase finds the kernels compiled), and one untimed call of each compiled anchor at the full shape.
    Phase 1 (one worker, alone on the GPU): per case, the anchors, the copy ceiling and the picks. Phase 2 (the
    same): the calibration programs (candidates, constructed) of the GEMM and attention families."""
    progs = [p for p in man["programs"] if p["status"] == "ready" and p["provider"] in providers]
    groups = []
    for b in man["benches"]:
        if only and b["name"] not in only:
            continue
        cases = [c for c in b["cases"] if mode in c["modes"]]
        if not cases:
            continue
        if b["family"] == "memory" and mode != "interpret":
            groups.append({"bench": b["name"], "case": cases[0]["label"], "phase": 0, "items": [
                {"kind": "anchor_warm", "id": f"warm|anchor|{b['name']}|{c['label']}", "case": c["label"]}
                for c in cases]})
        for p in progs:
            if p["bench"] != b["name"]:
                continue
            nchk = 1 if mode == "interpret" else len(b["checks"])
            items = [{"kind": "check", "id": f"check|{p['id']}|{k}", "prog": p["id"], "k": k} for k in range(nchk)]
            if mode != "interpret":
                items += [{"kind": "warm", "id": f"warm|{p['id']}|{c['label']}", "prog": p["id"], "case": c["label"]}
                          for c in cases]
            groups.append({"bench": b["name"], "case": cases[0]["label"], "phase": 0, "items": items})
    for phase in (1, 2):
        for b in man["benches"]:
            if only and b["name"] not in only:
                continue
            for c in b["cases"]:
                if mode not in c["modes"]:
                    continue
                items = []
                mine = [p for p in progs if p["bench"] == b["name"] and (p["variant"] == "pick") == (phase == 1)]
                if phase == 1:
                    items += [{"kind": "anchor", "id": f"anchor|{b['name']}|{c['label']}|{i}", "which": i,
                               "name": name} for i, name in enumerate(anchor_names(b["op"], mode == "interpret"))]
                    if b["family"] == "memory":
                        items.append({"kind": "copy", "id": f"copy|{b['name']}|{c['label']}"})
                for p in mine:
                    items.append({"kind": "time", "id": f"time|{p['id']}|{c['label']}", "prog": p["id"]})
                if items:
                    groups.append({"bench": b["name"], "case": c["label"], "phase": phase, "items": items})
    return groups


def worker(indir: Path, groups_path: Path, results_path: Path, args: dict) -> int:
    """Run the work groups, appending one JSON line per item to results_path (start and done events)."""
    groups = json.loads(groups_path.read_text())
    done = set(_read_results(results_path)[0])
    runner = Runner(indir, args["interpret"], args["cap_ms"], args["hard_cap_ms"], args["warmup"], args["rep"])
    torch = runner.torch
    deadline = args["deadline"]
    with open(results_path, "a") as log:
        def emit(item_id: str, res: dict) -> None:
            log.write(json.dumps({"id": item_id, "event": "done", **res}, default=str) + "\n")
            log.flush()

        for g in groups:
            todo = [it for it in g["items"] if it["id"] not in done]
            if not todo:
                continue
            b = runner.benches[g["bench"]]
            case = _case_of(b, g["case"])
            ins = None
            anchor_out = None
            for it in todo:
                if time.time() > deadline:
                    emit(it["id"], {"status": "NOT RUN", "error": "budget reached"})
                    continue
                log.write(json.dumps({"id": it["id"], "event": "start", "t": time.time()}) + "\n")
                log.flush()
                t0 = time.time()
                try:
                    if it["kind"] == "check":
                        res = runner.check(runner.programs[it["prog"]], it["k"])
                    elif it["kind"] == "warm":
                        res = runner.warm(runner.programs[it["prog"]], _case_of(b, it["case"]))
                    elif it["kind"] == "anchor_warm":
                        res = runner.anchor_warm(b, _case_of(b, it["case"]))
                    elif it["kind"] == "copy":
                        res = runner.copy_ceiling(case["bytes"])
                    else:
                        if ins is None:
                            ins = runner.inputs(b, case["sizes"], seed=42)
                        if it["kind"] == "anchor":
                            res = runner.anchor(b, case, ins, it["which"])
                            out = res.pop("_out")
                            if it["which"] == 0:
                                anchor_out = out.detach().clone() if hasattr(out, "detach") else None
                            del out
                        else:
                            prog = runner.programs[it["prog"]]
                            name = b["outputs"][0]
                            out_t = ins[name]
                            out_t.fill_(float("nan") if out_t.dtype.is_floating_point else
                                        runner.torch.iinfo(out_t.dtype).min)
                            res = runner.time_program(prog, case, ins)
                            if res.get("status") in ("ok", "slow") and anchor_out is not None:
                                rel = runner.rel_l2(ins[name], anchor_out)
                                dt = next(p["dtype"] for p in b["params"] if p["name"] == name)
                                res["vs_anchor_rel_l2"] = rel
                                res["vs_anchor_ok"] = bool(rel == rel and
                                                           rel <= FULL_SHAPE_SLACK * tolerance_of(b, dt))
                except BaseException as err:                 # noqa: BLE001 - every failure is a result
                    res = {"status": "ERROR", "error": f"{type(err).__name__}: {str(err)[:1200]}",
                           "traceback": traceback.format_exc()[-3000:]}
                    if it["kind"] == "anchor":
                        res["anchor"] = it["name"]
                    try:
                        runner.sync()
                    except BaseException as err2:            # noqa: BLE001 - the context is poisoned
                        res["cuda_context"] = f"poisoned: {type(err2).__name__}: {str(err2)[:300]}"
                        emit(it["id"], {**res, "seconds": round(time.time() - t0, 2)})
                        return 3
                res["seconds"] = round(time.time() - t0, 2)
                emit(it["id"], res)
                done.add(it["id"])
                brief = {k: v for k, v in res.items() if k in ("status", "ms", "graph_ms", "est_ms", "rel_l2",
                                                                "error", "graph_error")}
                print(f"[worker {time.time() - args['t0']:6.1f}s] {it['id']}: {json.dumps(brief, default=str)[:300]}",
                      flush=True)
            del ins, anchor_out
            if runner.dev == "cuda":
                torch.cuda.empty_cache()
    return 0


def _read_results(path: Path) -> tuple[dict, set]:
    done, started = {}, set()
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("event") == "start":
                started.add(r["id"])
            else:
                done[r["id"]] = r
    return done, started


def _supervise(indir: Path, groups: list[dict], results_path: Path, args: dict, item_timeout: float) -> None:
    """Run the worker until every item has a result; a worker that dies or hangs is replaced, and the item it
    was on is recorded as an error."""
    import subprocess
    groups_path = results_path.with_suffix(".groups.json")
    groups_path.write_text(json.dumps(groups))
    all_ids = [it["id"] for g in groups for it in g["items"]]
    env = dict(os.environ)
    if args["interpret"]:
        env["TRITON_INTERPRET"] = "1"
    while True:
        done, started = _read_results(results_path)
        pending = [i for i in all_ids if i not in done]
        if not pending:
            return
        if time.time() > args["deadline"]:
            with open(results_path, "a") as log:
                for i in pending:
                    log.write(json.dumps({"id": i, "event": "done", "status": "NOT RUN",
                                          "error": "budget reached"}) + "\n")
            return
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_worker", str(indir),
                                 str(groups_path), str(results_path), json.dumps(args)], env=env)
        last_n, last_t, killed = -1, time.time(), None
        while proc.poll() is None:
            time.sleep(0.2)
            d, s = _read_results(results_path)
            n = len(d) + len(s)
            if n != last_n:
                last_n, last_t = n, time.time()
            elif time.time() - last_t > item_timeout:
                proc.kill()
                killed = f"killed after {item_timeout:g} s without progress"
                proc.wait()
        done, started = _read_results(results_path)
        hung = [i for i in started if i not in done]
        with open(results_path, "a") as log:
            for i in hung:
                log.write(json.dumps({"id": i, "event": "done", "status": "ERROR",
                                      "error": killed or f"worker died (exit code {proc.returncode})"}) + "\n")
        if proc.returncode == 0 and not hung:
            done, _ = _read_results(results_path)
            if all(i in done for i in all_ids):
                return
        print(f"[supervise] worker exit {proc.returncode}{' (' + killed + ')' if killed else ''}; restarting on "
              f"the remaining items", flush=True)


def _environment(interpret: bool) -> dict:
    import platform
    import subprocess
    env = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
           "interpret": interpret}
    try:
        import torch
        env.update(torch=torch.__version__, torch_cuda=torch.version.cuda)
        if not interpret and torch.cuda.is_available():
            env.update(device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
                       sm_count=torch.cuda.get_device_properties(0).multi_processor_count,
                       cudnn=torch.backends.cudnn.version())
        else:
            env["device"] = "cpu (TRITON_INTERPRET=1)" if interpret else "cpu"
    except Exception as err:                                 # noqa: BLE001
        env["torch"] = f"unavailable: {err}"
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception as err:                                 # noqa: BLE001
        env["triton"] = f"unavailable: {err}"
    if not interpret:
        try:
            _fix_cuda_namespace()
            import cuda.tile as ct
            env["cuda_tile"] = getattr(ct, "__version__", "?")
        except Exception as err:                             # noqa: BLE001
            env["cuda_tile"] = f"unavailable: {type(err).__name__}: {err}"
        for tool, a in (("nvidia-smi", ["--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                                        "--format=csv,noheader"]), ("tileiras", ["--version"])):
            try:
                out = subprocess.run([tool, *a], capture_output=True, text=True, timeout=30)
                env[tool] = " | ".join(x.strip() for x in out.stdout.strip().splitlines()[-2:])
            except Exception as err:                         # noqa: BLE001
                env[tool] = f"unavailable: {err}"
    return env


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None below 3 points or for a constant side."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and x == x and x != float("inf")]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def assemble(man: dict, groups: list[dict], results: dict, mode: str, env: dict) -> dict:
    """Rows of the ratio table, the calibration records and the family summaries from the item results."""
    benches = {b["name"]: b for b in man["benches"]}
    progs = {p["id"]: p for p in man["programs"]}
    rows, calib = [], []
    for g in groups:
        b = benches[g["bench"]]
        case = _case_of(b, g["case"])
        names = anchor_names(b["op"], mode == "interpret")
        anchors_r = [dict(results.get(f"anchor|{b['name']}|{case['label']}|{i}")
                          or {"status": "NOT RUN", "error": "no result"}) for i in range(len(names))]
        for a, name in zip(anchors_r, names):
            a.setdefault("anchor", name)
        copy_r = results.get(f"copy|{b['name']}|{case['label']}")
        for it in g["items"]:
            if it["kind"] != "time":
                continue
            p = progs[it["prog"]]
            r = results.get(it["id"], {"status": "NOT RUN", "error": "no result"})
            checks = [results.get(f"check|{p['id']}|{k}") for k in range(len(b["checks"]) if mode != "interpret"
                                                                         else 1)]
            chk_status = "pass" if checks and all(c and c.get("status") == "pass" for c in checks) else \
                ("FAIL" if any(c and c.get("status") == "FAIL" for c in checks) else
                 ("ERROR" if any(c and c.get("status") == "ERROR" for c in checks) else "NOT RUN"))
            rels = [c.get("rel_l2") for c in checks if c and c.get("rel_l2") is not None]
            ours = r.get("ms") if r.get("status") in ("ok", "slow") else None
            est = r.get("est_ms")
            t_ours = ours if ours is not None else (est if r.get("status") == "over_cap" else None)
            row = {"bench": b["name"], "family": b["family"], "case": case["label"], "provider": p["provider"],
                   "variant": p["variant"], "status": r.get("status"), "check": chk_status,
                   "check_rel_l2": max(rels) if rels else None, "ms": ours, "est_ms": est,
                   "error": r.get("error") or next((c.get("error") for c in checks if c and c.get("error")), None),
                   "vs_anchor_rel_l2": r.get("vs_anchor_rel_l2"), "vs_anchor_ok": r.get("vs_anchor_ok"),
                   "first_call_s": r.get("first_call_s"), "anchors": [],
                   "graph_ms": r.get("graph_ms") if ours is not None else None, "graph_error": r.get("graph_error")}
            for a in anchors_r:
                ratio = a["ms"] / t_ours if a.get("status") == "ok" and t_ours else None
                g_ours, g_anchor = row["graph_ms"], a.get("graph_ms")
                row["anchors"].append({"name": a.get("anchor", "?"), "ms": a.get("ms"), "ratio": ratio,
                                       "status": a.get("status"), "error": a.get("error"),
                                       "approx": ours is None and ratio is not None, "graph_ms": g_anchor,
                                       "graph_ratio": g_anchor / g_ours if g_anchor and g_ours else None})
            if case.get("flops") and t_ours:
                row["tflops"] = case["flops"] / (t_ours * 1e-3) / 1e12
            if t_ours:
                row["GBps"] = case["bytes"] / (t_ours * 1e-3) / 1e9
            if copy_r and copy_r.get("status") == "ok" and t_ours:
                row["copy_ceiling_GBps"] = copy_r["GBps"]
                row["vs_copy_ceiling"] = copy_r["ms"] / t_ours
            pred = (p.get("predicted") or {}).get(case["label"], {})
            row["predicted_s"] = pred.get("total")
            rows.append(row)
    order = {b["name"]: i for i, b in enumerate(man["benches"])}
    corder = {(b["name"], c["label"]): i for b in man["benches"] for i, c in enumerate(b["cases"])}
    vorder = {"pick": 0, "constructed": 1000}
    rows.sort(key=lambda r: (order[r["bench"]], corder[(r["bench"], r["case"])], PROVIDERS.index(r["provider"])
                             if r["provider"] in PROVIDERS else 9,
                             vorder.get(r["variant"], int(r["variant"][4:]) if r["variant"][4:].isdigit() else 999)))
    # calibration: per (bench, provider, case), every timed program
    keys = sorted({(r["bench"], r["provider"], r["case"]) for r in rows if r["family"] in CALIBRATED_FAMILIES})
    for bench, prov, case in keys:
        rs = [r for r in rows if (r["bench"], r["provider"], r["case"]) == (bench, prov, case)]
        members = []
        for r in rs:
            t = r["ms"] if r["ms"] is not None else (r["est_ms"] if r["status"] == "over_cap" else None)
            members.append({"variant": r["variant"], "predicted_s": r["predicted_s"],
                            "optimizer_cost": progs[f"{bench}.{prov}.{r['variant']}"].get("optimizer_cost"),
                            "measured_ms": t, "timing": r["status"], "check": r["check"],
                            "terms": ((progs[f"{bench}.{prov}.{r['variant']}"].get("predicted") or {})
                                      .get(case, {}).get("terms"))})
        for p in progs.values():                           # same-source variants: listed, not re-timed
            if p["bench"] == bench and p["provider"] == prov and p["status"] == "duplicate":
                members.append({"variant": p["variant"], "same_as": p["same_as"],
                                "optimizer_cost": p.get("optimizer_cost")})

        def stats(ms):
            pts = [(m["predicted_s"], m["measured_ms"]) for m in ms
                   if m.get("predicted_s") is not None and m.get("measured_ms") is not None]
            return spearman([a for a, _ in pts], [b for _, b in pts]), len(pts)
        ranked = [m for m in members if m["variant"] != "constructed"]
        rho_ranked, n_ranked = stats(ranked)
        rho_all, n_all = stats(members)
        timed = [m for m in members if m.get("measured_ms") is not None]
        pick = next((m for m in members if m["variant"] == "pick"), None)
        best = min(timed, key=lambda m: m["measured_ms"]) if timed else None
        rec = {"bench": bench, "provider": prov, "case": case, "programs": members,
               "spearman_ranked": rho_ranked, "n_ranked": n_ranked, "spearman_all": rho_all, "n_all": n_all,
               "best": best["variant"] if best else None,
               "pick_vs_best": (pick["measured_ms"] / best["measured_ms"] - 1.0)
               if pick and best and pick.get("measured_ms") else None,
               "predicted_best": min((m for m in members if m.get("predicted_s") is not None),
                                     key=lambda m: m["predicted_s"], default={}).get("variant")}
        calib.append(rec)
    summary = {}
    for fam, anchor_idx in (("gemm", 0), ("attention", 0), ("attention", 1), ("memory", 0), ("contract", 0),
                            ("contract", 1)):
        for prov in PROVIDERS:
            sel = [r for r in rows if r["family"] == fam and r["provider"] == prov and r["variant"] == "pick"
                   and len(r["anchors"]) > anchor_idx and r["anchors"][anchor_idx]["ratio"] is not None]
            if not sel:
                continue
            name = sel[0]["anchors"][anchor_idx]["name"]
            summary[f"{fam} / {prov} vs {name}"] = {
                "geomean_ratio": _geomean([r["anchors"][anchor_idx]["ratio"] for r in sel]), "n": len(sel),
                "estimated": sum(1 for r in sel if r["anchors"][anchor_idx]["approx"]),
                "graph_geomean_ratio": _graph_geomean([r["anchors"][anchor_idx] for r in sel])}
        if fam == "gemm" and anchor_idx == 0:
            # the rows whose program was compiled for the shape it is timed at (the suite as a user compiles it,
            # `compile(sizes=...)`); the size-agnostic rows are the model alone at its default problem
            sized = {b["name"] for b in man["benches"] if b.get("compile_sizes")}
            for prov in PROVIDERS:
                sel = [r for r in rows if r["family"] == fam and r["provider"] == prov and r["variant"] == "pick"
                       and r["bench"] in sized and r["anchors"] and r["anchors"][0]["ratio"] is not None]
                if sel:
                    summary[f"gemm compiled for its shape / {prov} vs {sel[0]['anchors'][0]['name']}"] = {
                        "geomean_ratio": _geomean([r["anchors"][0]["ratio"] for r in sel]), "n": len(sel),
                        "estimated": sum(1 for r in sel if r["anchors"][0]["approx"]),
                        "graph_geomean_ratio": _graph_geomean([r["anchors"][0] for r in sel])}
        if fam == "memory":
            for prov in PROVIDERS:
                sel = [r for r in rows if r["family"] == fam and r["provider"] == prov and r["variant"] == "pick"
                       and r.get("vs_copy_ceiling")]
                if sel:
                    summary[f"memory / {prov} vs copy ceiling"] = {
                        "geomean_ratio": _geomean([r["vs_copy_ceiling"] for r in sel]), "n": len(sel)}
    return {"rows": rows, "calibration": calib, "summary": summary, "groups": group_pairs(man, rows)}


def _graph_geomean(anchor_entries: list[dict]) -> float | None:
    """Geometric mean of the graph-replay ratios when every row has one (else None: a partial mean misleads)."""
    ratios = [a.get("graph_ratio") for a in anchor_entries]
    return _geomean(ratios) if ratios and all(r is not None for r in ratios) else None


def group_pairs(man: dict, rows: list[dict]) -> list[dict]:
    """What a rule group buys: each bench compiled without some groups (``without_groups``) against the first bench
    compiled the same way with all of them (same KIR file, sizes, options and specializations), pick against
    pick, per case and provider: ``ratio`` = time without / time with, by ``do_bench`` and by graph replay."""
    picks = {(r["bench"], r["case"], r["provider"]): r for r in rows if r["variant"] == "pick"}
    same = ("kir", "compile_sizes", "options", "specialize")
    out = []
    for b in man["benches"]:
        if not b.get("without_groups"):
            continue
        base = next((o for o in man["benches"] if not o.get("without_groups")
                     and all(o.get(k) == b.get(k) for k in same)), None)
        if base is None:
            continue
        for (name, case, prov), without in picks.items():
            with_ = picks.get((base["name"], case, prov))
            if name != b["name"] or with_ is None:
                continue
            ok = without["check"] == with_["check"] == "pass"
            out.append({"bench": base["name"], "without_bench": b["name"], "without_groups": list(b["without_groups"]),
                        "case": case, "provider": prov, "checks_pass": ok,
                        "ratio": without["ms"] / with_["ms"] if without["ms"] and with_["ms"] else None,
                        "graph_ratio": without["graph_ms"] / with_["graph_ms"]
                        if without.get("graph_ms") and with_.get("graph_ms") else None})
    return out


def write_tuning(man: dict, rows: list[dict], path: Path, env: dict) -> Path:
    """Every timed program that passed its check and whose manifest entry names its structure and tile binding,
    as tuning measurements at its case's sizes (``compile(calibration=...)`` reads them: the harness's own runs
    improve the next picks; SPEC PASS-6 tuning artifacts). An interpreter run times tiny shapes, not its cases:
    it writes no measurements."""
    if str(ROOT) not in sys.path:                     # the device machine runs this file without installing us
        sys.path.insert(0, str(ROOT))
    from intent_eqsat.extract.calibration import Calibration, measurement
    progs = {p["id"]: p for p in man["programs"]}
    sizes = {(b["name"], c["label"]): c["sizes"] for b in man["benches"] for c in b["cases"]}
    cal = Calibration()
    for r in rows:
        prog = progs.get(f"{r['bench']}.{r['provider']}.{r['variant']}", {})
        key = prog.get("tuning")
        if not key or r.get("ms") is None or r.get("check") != "pass" or r.get("status") not in ("ok", "slow"):
            continue
        cal.measurements.append(measurement(key["structure"], man.get("target") or "sm90",
                                            sizes[(r["bench"], r["case"])], key["binding"], key["threads"],
                                            key["stages"], r["ms"] * 1e-3, str(env.get("device", "")),
                                            r["provider"], key.get("index_bits")))
    cal.save(path, device=env.get("device"), date=env.get("date"),
             what="bench/perf.py run: do_bench median of every checked program per (structure, sizes, binding, "
                  "threads, stages, provider)")
    return path


def _fmt_ms(x) -> str:
    if x is None:
        return "-"
    return f"{x:.4g}"


def _fmt_ratio(x, approx=False) -> str:
    if x is None:
        return "-"
    s = f"{x:.3g}x" if x >= 0.001 else f"{x:.1e}x"
    return ("~" if approx else "") + s


def format_table(doc: dict) -> str:
    env = doc["environment"]
    lines = [f"device: {env.get('device')}  torch {env.get('torch')}  triton {env.get('triton')}  "
             f"cuda.tile {env.get('cuda_tile', '-')}  mode {doc['mode']}  wall {doc.get('wall_seconds')} s", ""]
    rows = doc["rows"]
    if rows:
        wk = max(len(r["bench"]) for r in rows)
        wc = max(len(r["case"]) for r in rows)
        lines.append(f"{'kernel':<{wk}}  {'case':<{wc}}  {'prov':<6}  {'variant':<11}  {'check':<14}  "
                     f"{'ours ms':>10}  {'anchor':<18}  {'anchor ms':>9}  {'ratio':>9}  notes")
        for r in rows:
            chk = r["check"] + (f" {r['check_rel_l2']:.1e}" if r["check_rel_l2"] is not None else "")
            if r["status"] == "ok":
                ours = _fmt_ms(r["ms"])
            elif r["status"] == "slow":
                ours = _fmt_ms(r["ms"]) + "*"
            elif r["status"] == "over_cap":
                ours = ">" + _fmt_ms(r["est_ms"]) + "~"
            else:
                ours = str(r["status"])
            a0 = r["anchors"][0] if r["anchors"] else {}
            notes = []
            for a in r["anchors"][1:]:
                notes.append(f"{a['name']} {_fmt_ms(a['ms'])} ms {_fmt_ratio(a['ratio'], a['approx'])}"
                             if a.get("ms") is not None else f"{a['name']}: {a.get('status')}")
            if r.get("tflops") is not None:
                notes.append(f"{r['tflops']:.3g} TFLOP/s")
            elif r.get("GBps") is not None:
                notes.append(f"{r['GBps']:.4g} GB/s")
            if r.get("graph_ms") is not None:
                g0 = a0.get("graph_ratio")
                notes.append(f"graph {_fmt_ms(r['graph_ms'])} ms" + (f" {_fmt_ratio(g0)}" if g0 is not None else ""))
            if r.get("vs_copy_ceiling") is not None:
                notes.append(f"{r['vs_copy_ceiling']:.3g}x copy ceiling ({r['copy_ceiling_GBps']:.4g} GB/s)")
            if r.get("vs_anchor_ok") is False:
                notes.append(f"FULL-SHAPE MISMATCH vs anchor rel {r['vs_anchor_rel_l2']:.2e}")
            if r.get("error"):
                notes.append(str(r["error"]).replace("\n", " ")[:140])
            an = a0.get("name", "-") if a0.get("ms") is not None or not a0 else f"{a0.get('name')}!"
            lines.append(f"{r['bench']:<{wk}}  {r['case']:<{wc}}  {r['provider']:<6}  {r['variant']:<11}  "
                         f"{chk:<14}  {ours:>10}  {an:<18}  {_fmt_ms(a0.get('ms')):>9}  "
                         f"{_fmt_ratio(a0.get('ratio'), a0.get('approx', False)):>9}  {'; '.join(notes)}")
        lines.append("")
        lines.append("ratio = anchor time / our time (>1: ours is faster); '*' one call (over the cap); "
                     "'>x~' estimated from a probe, not run at the full shape; '~' ratio from an estimate; "
                     "'graph': time per call by CUDA graph replay (no host launch time, no L2 flush) and the "
                     "first anchor's ratio timed the same way")
    if doc.get("groups"):
        lines.append("")
        lines.append("what a rule group buys (the same kernel compiled without it; time without / time with):")
        for g in doc["groups"]:
            lines.append(f"  {g['bench']} without {'+'.join(g['without_groups'])} ({g['without_bench']}), "
                         f"{g['case']}, {g['provider']}: do_bench {_fmt_ratio(g['ratio'])}, graph replay "
                         f"{_fmt_ratio(g['graph_ratio'])}" + ("" if g["checks_pass"] else " (a check did not pass)"))
    if doc.get("calibration"):
        lines.append("")
        lines.append("calibration (predicted cost vs measured time per kernel/provider/shape):")
        for c in doc["calibration"]:
            rho = "-" if c["spearman_ranked"] is None else f"{c['spearman_ranked']:+.2f}"
            rho_all = "-" if c["spearman_all"] is None else f"{c['spearman_all']:+.2f}"
            gap = "-" if c["pick_vs_best"] is None else f"{c['pick_vs_best']:+.1%}"
            pts = ", ".join(f"{m['variant']}: pred {_fmt_ms(m.get('predicted_s') and m['predicted_s'] * 1e3)} ms / "
                            f"meas {_fmt_ms(m.get('measured_ms'))} ms" + ("~" if m.get("timing") == "over_cap" else "")
                            for m in c["programs"] if "same_as" not in m)
            lines.append(f"  {c['bench']} {c['provider']} {c['case']}: spearman ranked {rho} (n={c['n_ranked']}), "
                         f"all {rho_all} (n={c['n_all']}); best {c['best']}, pick vs best {gap}; {pts}")
    if doc.get("summary"):
        lines.append("")
        lines.append("geometric means of the ratios (picks):")
        for k, v in doc["summary"].items():
            gm = "-" if v["geomean_ratio"] is None else f"{v['geomean_ratio']:.3g}x"
            lines.append(f"  {k}: {gm} over {v['n']}" + (f" ({v['estimated']} estimated)" if v.get("estimated")
                                                          else "")
                         + (f"; by graph replay {v['graph_geomean_ratio']:.3g}x"
                            if v.get("graph_geomean_ratio") is not None else ""))
    return "\n".join(lines) + "\n"


def run(indir: Path, json_path: Path | None, mode: str, interpret: bool, providers: list[str], only: list[str],
        budget: float, cap_ms: float, hard_cap_s: float, item_timeout: float, calibration: Path | None,
        warmup: int, rep: int, parallel: int = 8) -> dict:
    t0 = time.time()
    man = json.loads((indir / "manifest.json").read_text())
    if interpret:
        mode = "interpret"
    env = _environment(interpret)
    print(f"[run] environment: {json.dumps(env)}", flush=True)
    groups = plan(man, mode, providers if not interpret else ["triton"], only)
    res_dir = indir / "results"
    res_dir.mkdir(exist_ok=True)
    results_path = res_dir / f"perf_{mode}.jsonl"
    if results_path.exists():
        results_path.unlink()
    args = {"interpret": interpret, "cap_ms": cap_ms, "hard_cap_ms": hard_cap_s * 1e3, "warmup": warmup,
            "rep": rep, "deadline": t0 + budget, "t0": t0}
    import threading
    first = [g for g in groups if g["phase"] == 0]
    rest = [g for g in groups if g["phase"] != 0]
    n_par = max(1, min(parallel, len(first)))
    shards = [first[i::n_par] for i in range(n_par)]
    paths = [res_dir / f"perf_{mode}_warm{i}.jsonl" for i in range(n_par)]
    threads = []
    args0 = dict(args, deadline=t0 + PHASE0_SHARE * budget)     # phase 0 may not eat the timing phases' time
    for shard, path in zip(shards, paths):
        if path.exists():
            path.unlink()
        th = threading.Thread(target=_supervise, args=(indir, shard, path, args0, item_timeout))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    print(f"[run] phase 0 (checks, compile warm-up; {n_par} workers) done at {time.time() - t0:.0f} s", flush=True)
    _supervise(indir, rest, results_path, args, item_timeout)   # the rest of the budget
    results = {}
    for path in paths + [results_path]:
        results.update(_read_results(path)[0])
    doc = {"environment": env, "mode": mode, "providers": providers, "manifest_created": man.get("created"),
           "budget_s": budget, "cap_ms": cap_ms, "hard_cap_s": hard_cap_s}
    doc.update(assemble(man, groups, results, mode, env))
    if interpret and "cutile" in providers:
        doc["not_run"] = "cuTile programs: --interpret runs Triton only (cuTile needs a GPU)"
    # programs that could not be built: listed with their error kind
    doc["not_built"] = [{"id": p["id"], "status": p["status"],
                         "error": {k: p["error"].get(k) for k in ("kind", "stage", "unsupported_kind", "message")}
                         if isinstance(p.get("error"), dict) else p.get("error")}
                        for p in man["programs"] if p["status"] not in ("ready", "duplicate")]
    doc["items"] = results
    doc["wall_seconds"] = round(time.time() - t0, 1)
    table = format_table(doc)
    doc["table"] = table
    out_env = os.environ.get("OUT")
    if json_path is None:
        json_path = (Path(out_env) if out_env else indir) / "perf.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(doc, indent=1, default=str))
    if calibration is None:
        if out_env:
            calibration = Path(out_env) / "calibration.json"
        else:
            dev = str(env.get("device", "device")).split()[-1].lower().replace("(", "").replace(")", "")
            calibration = ROOT / "bench" / "calibration" / f"{dev}_{time.strftime('%Y-%m-%d')}.json"
    calibration.parent.mkdir(parents=True, exist_ok=True)
    calibration.write_text(json.dumps({"environment": env, "mode": mode, "target": man.get("target"),
                                       "what": "per GEMM/attention kernel, provider and suite shape: every "
                                               "program's predicted cost (s, cost model at that shape) and measured "
                                               "time (ms); issue 7 item 3 (SPEC PASS-6 tuning data)",
                                       "records": doc["calibration"]}, indent=1, default=str))
    tuning = write_tuning(man, [] if interpret else doc["rows"], calibration.with_name("tuning.json"), env)
    if doc.get("not_built"):
        print("not built: " + "; ".join(f"{n['id']}: {n['status']}" for n in doc["not_built"]), flush=True)
    print(f"[run] wrote {json_path}, {calibration} and {tuning}", flush=True)
    print(table, flush=True)
    return doc


# ============================================================================================== CLI

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="compile the suite here")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "perf")
    p.add_argument("--only", default="", help="comma-separated suite kernel names")
    p.add_argument("--providers", default=",".join(PROVIDERS))
    p.add_argument("--no-candidates", action="store_true", help="only the picks (no calibration programs)")
    p.add_argument("--compile-seconds", type=float, default=600.0, help="per kernel; 0: no limit")
    p.add_argument("--append", action="store_true", help="keep the other kernels of an existing manifest")
    p.add_argument("--fallback-error", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tuning", action="append", default=[], metavar="FILE",
                   help="tuning file(s) of measured bindings (bench/tile_sweep.py run --tuning), passed to "
                        "compile(calibration=...)")
    p.add_argument("--in-process", action="store_true", help="compile in this process (no per-kernel child "
                                                              "process, no hard time limit)")
    r = sub.add_parser("run", help="check and time on the GPU (or --interpret here)")
    r.add_argument("--in", dest="indir", type=Path, default=ROOT / "build" / "perf")
    r.add_argument("--json", type=Path, default=None)
    r.add_argument("--calibration", type=Path, default=None)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="fewer shapes")
    g.add_argument("--full", action="store_true", help="also attention at S=1024 and 16384")
    r.add_argument("--interpret", action="store_true", help="TRITON_INTERPRET=1 on torch CPU, tiny shapes")
    r.add_argument("--providers", default=",".join(PROVIDERS))
    r.add_argument("--only", default="")
    r.add_argument("--budget", type=float, default=330.0, help="seconds after which no new item starts")
    r.add_argument("--cap-ms", type=float, default=200.0, help="above this per call: timed once")
    r.add_argument("--hard-cap-s", type=float, default=3.0, help="estimated above this: not run at full shape")
    r.add_argument("--item-timeout", type=float, default=120.0, help="a worker with no progress for this long is "
                                                                    "killed and restarted on the remaining items")
    r.add_argument("--parallel", type=int, default=min(8, os.cpu_count() or 1),
                   help="worker processes of phase 0 (checks and compile warm-up; nothing timed)")
    r.add_argument("--warmup", type=int, default=25, help="do_bench warm-up (ms)")
    r.add_argument("--rep", type=int, default=100, help="do_bench repetition time (ms)")
    w = sub.add_parser("_worker")
    w.add_argument("indir", type=Path)
    w.add_argument("groups", type=Path)
    w.add_argument("results", type=Path)
    w.add_argument("args")
    rep = sub.add_parser("report", help="print the table of a saved run")
    rep.add_argument("json", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        kw = dict(candidates=not a.no_candidates, compile_seconds=a.compile_seconds, append=a.append,
                  tuning=a.tuning)
        if a.in_process:
            kw["fallback_error"] = json.loads(a.fallback_error) if a.fallback_error else None
        (prepare if a.in_process else prepare_isolated)(
            a.out, [x for x in a.only.split(",") if x], [x for x in a.providers.split(",") if x], **kw)
        return 0
    if a.cmd == "run":
        mode = "quick" if a.quick else ("full" if a.full else "default")
        run(a.indir, a.json, mode, a.interpret, [x for x in a.providers.split(",") if x],
            [x for x in a.only.split(",") if x], a.budget, a.cap_ms, a.hard_cap_s, a.item_timeout, a.calibration,
            a.warmup, a.rep, a.parallel)
        return 0
    if a.cmd == "_worker":
        return worker(a.indir, a.groups, a.results, json.loads(a.args))
    doc = json.loads(a.json.read_text())
    print(format_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
