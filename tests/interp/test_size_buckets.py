"""Size buckets (issue 24 item 4): a kernel compiled without ``sizes=`` carries a small set of tile bindings chosen
by the cost model at compile time, and ``launch()`` picks one by the launch's shapes (no timing).

Under ``TRITON_INTERPRET=1``: every variant the launcher picks computes what the KIR float64 reference computes,
and the variant it runs is the one the plan's table names for the shapes' levels. An AOT compile of every variant
for sm_90 shows each is a kernel Triton accepts."""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat import api, kir
from intent_eqsat.kir.evaluate import evaluate
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.providers.loader import load_source
from intent_eqsat.optimizer import size_buckets as SB

from tests.interp.helpers import ROOT, assert_matches, copy_args

GEMM = ROOT / "examples" / "corpus" / "gemm.kir"

# written the way a PyTorch user writes torch.matmul(a, b) on fp32 tensors
MATMUL = """
kernel mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
  C[m, n] = sum(k: A[m, k] * B[k, n])
}
"""
# a rank-3 tensor times a matrix (torch.matmul(x, w) with x of shape (B, I, K)): four free symbols, so only those
# whose level changes the binding are bucketed
BMM = """
kernel xw(X: f32[B, I, K], W: f32[K, N], Y: out f32[B, I, N]) {
  Y[b, i, n] = sum(k: X[b, i, k] * W[k, n])
}
"""
# a softmax over the last axis (torch.softmax(x, -1))
SOFTMAX = """
kernel sm(X: f32[R, C], Y: out f32[R, C]) {
  let mx[r] = max(c: X[r, c])
  let e[r, c] = exp(X[r, c] - mx[r])
  let s[r] = sum(c: e[r, c])
  Y[r, c] = e[r, c] / s[r]
}
"""


@pytest.fixture(autouse=True)
def _size_buckets_on(monkeypatch):
    """The suite turns planning off (tests/conftest.py); these tests are about it."""
    monkeypatch.setenv(SB.ENV_SWITCH, "on")


def _spy_all(mod, n: int) -> list[int]:
    """Record which bucket launcher runs (the general launch() dispatches through the module globals)."""
    ran: list[int] = []
    for i in range(1, n):
        inner = getattr(mod, f"_launch_bucket{i}")

        def wrapper(*a, _i=i, _inner=inner, **kw):
            ran.append(_i)
            return _inner(*a, **kw)
        setattr(mod, f"_launch_bucket{i}", wrapper)
    return ran


@pytest.mark.usefixtures("interpret_mode")
@pytest.mark.parametrize("src, name, out, shapes", [
    (MATMUL, "mm", "C", [{"M": 24, "K": 40, "N": 33}, {"M": 700, "K": 24, "N": 40}, {"M": 3000, "K": 8, "N": 12},
                         {"M": 40, "K": 3100, "N": 20}]),
    (BMM, "xw", "Y", [{"B": 2, "I": 3, "K": 5, "N": 7}, {"B": 1, "I": 400, "K": 6, "N": 500},
                      {"B": 1, "I": 3, "K": 700, "N": 9}, {"B": 400, "I": 2, "K": 3, "N": 4}]),
    (SOFTMAX, "sm", "Y", [{"R": 5, "C": 37}, {"R": 3, "C": 3000}, {"R": 2, "C": 900}]),
])
def test_launch_picks_the_variant_of_the_shapes_levels_and_every_variant_matches_the_reference(
        gen_dir, src, name, out, shapes) -> None:
    import torch

    ck = api.compile(src)
    plan = ck.report["kernels"][name]["size_buckets"]
    assert plan["symbols"] and len(plan["variants"]) >= 2, plan
    table = {tuple(k): v for k, v in plan["table"]}
    mod = load_source(ck.source, gen_dir, name)
    assert mod.BUCKET_SYMBOLS == tuple(plan["symbols"]) and mod.BUCKET_EDGES == SB.EDGES
    assert {k: v for k, v in table.items() if v} == mod.BUCKET_TABLE
    ran = _spy_all(mod, len(plan["variants"]))
    module = kir.parse(src)
    seen = set()
    for sizes in shapes:
        args = random_inputs(module, name, 7, sizes=sizes)
        t = {n: torch.from_numpy(a.copy()) for n, a in copy_args(args).items()}
        before = len(ran)
        mod.launch(**t)
        want_variant = table[tuple(SB.level_of(sizes[s]) for s in plan["symbols"])]
        got_variant = ran[-1] if len(ran) > before else 0
        assert got_variant == want_variant, (sizes, got_variant, want_variant)
        seen.add(got_variant)
        want = evaluate(module, name, {n: v for n, v in copy_args(args).items() if n != out})[out]
        want = np.asarray(want)
        # f32 sums of up to 3100 members in another order: the error scales with the largest partial sum
        assert_matches(t[out].numpy(), want, f"{name} at {sizes} (variant {got_variant})", rtol=1e-4,
                       atol=1e-5 * float(np.abs(want).max()))
    assert len(seen) >= 2, f"the shapes {shapes} all ran variant {seen}"


@pytest.mark.usefixtures("interpret_mode")
def test_launch_resources_or_params_chosen_by_the_caller_run_the_general_kernel(gen_dir) -> None:
    import torch

    ck = api.compile(MATMUL)
    mod = load_source(ck.source, gen_dir, "mm")
    ran = _spy_all(mod, len(ck.report["kernels"]["mm"]["size_buckets"]["variants"]))
    a, b = torch.randn(20, 30, dtype=torch.float32), torch.randn(30, 10, dtype=torch.float32)
    c = torch.empty(20, 10)
    mod.launch(a, b, c, num_warps=4)
    assert ran == []
    np.testing.assert_allclose(c.numpy(), (a.double() @ b.double()).numpy(), rtol=1e-4, atol=1e-4)


def test_every_variant_aot_compiles_for_sm90_with_its_own_tiles_and_warps(gen_dir) -> None:
    pytest.importorskip("triton")
    from intent_eqsat.providers.triton.aot import compile_aot

    ck = api.compile(GEMM)
    plan = ck.report["kernels"]["gemm"]["size_buckets"]
    mod = load_source(ck.source, gen_dir, "gemm")
    for i, variant in enumerate(plan["variants"]):
        prefix = f"_bucket{i}_" if i else ""
        assert getattr(mod, prefix + "KERNEL_NAME") == ("gemm" if i == 0 else f"gemm__bucket{i}")
        if i:
            assert getattr(mod, prefix + "LAUNCH_OPTIONS")["num_warps"] * 32 == variant["resources"]["threads"]
        compiled = compile_aot(mod, "sm90", prefix=prefix)
        assert "mma" in compiled.asm["ptx"], f"variant {i} {variant['binding']}: no tensor-core instruction"
