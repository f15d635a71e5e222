"""Issue 26 item 2 (SPEC PASS-4 "flatten/permute paired axes", "mul-sum to contract"): convolutions written the
way a PyTorch user writes them become implicit GEMMs -- the channel loop interchanged below the window loops
(``contraction.interchange``), the padding mask read as one masked load (``contraction.masked_load``), the output
tiled over (output channels x columns) (``blocking.ownership_rank<r>_axes<a><r-1>``, offered by
``blocking.reuse_axes``) -- and each program still equals the KIR float64 reference at odd sizes. Also: a mask
that depends on the summed index is never taken for a loop-free tile validity (``contraction.lift_valid_*``)."""
from __future__ import annotations

import os

import pytest

from intent_eqsat import api, ir, kir
from rulebooks.blocking import reuse_axes
from tests.cpu.rules.reference import ROOT, assert_matches_reference
from tests.cpu.rules.test_contraction_layouts import _check_contracted

SUITE = os.path.join(ROOT, "bench", "suite")

#: suite kernel -> the sizes the cost model is told (bench/conv_bench.py's shapes)
CONVS = {
    "conv2d_f32": {"N": 32, "C": 64, "H": 56, "W": 56, "F": 64},
    "conv1d_f32": {"N": 16, "C": 256, "L": 4096, "F": 256},
    "conv_transpose2d_f32": {"N": 32, "C": 64, "H": 56, "W": 56, "F": 64},
    "conv2d_grouped_f32": {"N": 32, "G": 8, "CG": 16, "FG": 16, "H": 56, "W": 56},
    "conv2d_s2_bf16": {"N": 32, "C": 128, "H": 56, "W": 56, "F": 128},
}


def _suite(name: str) -> tuple[kir.KirModule, str]:
    path = os.path.join(SUITE, f"{name}.kir")
    return kir.parse(open(path).read(), filename=path), path


@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolution_is_an_implicit_gemm_and_matches(name) -> None:
    module, path = _suite(name)
    program = api.optimize(path, sizes=CONVS[name])
    _check_contracted(module, program)


def test_the_offered_tiles_follow_the_reads() -> None:
    """NCHW: the weight reads f but no pixel, the image reads the column but not f -> (f, j) is offered; channels
    last (the default tile (j, f) already pairs them) and a batched matmul (X[b, s, k] pairs s with n) get none."""
    from intent_eqsat.construct import construct
    from intent_eqsat.rules.encode import encode_kernel

    def axes(text: str) -> list[int]:
        module = kir.parse(text)
        (kernel,) = construct(module).kernels
        return reuse_axes(encode_kernel(kernel)[0], len(kernel.space.segments[0].extents))
    assert axes(open(os.path.join(SUITE, "conv2d_f32.kir")).read()) == [1]
    assert axes(open(os.path.join(SUITE, "conv2d_nhwc_f32.kir")).read()) == []
    assert axes(open(os.path.join(SUITE, "matmul4d_f32.kir")).read()) == []
    assert axes(open(os.path.join(SUITE, "conv2d_grouped_f32.kir")).read()) == [2]


def test_a_mask_over_the_summed_index_stays_exact() -> None:
    """``sum(k: (A[m, k] where k <= m else 0) * B[k, n])`` (a lower-triangular product): the masked load's
    validity reads ``k``, so it is no loop-free tile validity; the program still equals the reference."""
    text = """kernel tril_mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
  C[m, n] = sum(k: (A[m, k] where k <= m else 0.0) * B[k, n])
}"""
    module = kir.parse(text, filename="<tril_mm>")
    program = api.optimize(module, sizes={"M": 512, "N": 512, "K": 512})
    ir.verify(program)
    assert_matches_reference(module, program, seeds=(5, 6), lo=2, hi=9)
