"""Lane accumulators (``rulebooks/lanes.py``): a loop that reduced its member tile across lanes at every step
carries the member tiles in a fragment instead and reduces it once after the loop, through the enclosing loop of a
statistic's nest too, where the cost model says the per-step cross-warp reduction costs more (docs/perf.md).

Kernels written as a PyTorch user would (long rows; a per-channel statistic of a 4-D tensor under a tiled output):
the compiled program holds the lane form (a loop-carried fragment over the member axis ``b2``, its ``reduce``
outside every loop), and both the GPU IR interpreter and the generated Triton source under the Triton interpreter
match a float64 reference at odd sizes (tails in every loop)."""
from __future__ import annotations

import numpy as np
import pytest

import intent_eqsat
from intent_eqsat import ir
from intent_eqsat.ir.core import walk
from intent_eqsat.ir.types import FragmentType

ROW_SUMS = """
# X.sum(dim=1) of a few long rows
kernel row_sums_f32(X: f32[M, N], S: out f32[M]) {
  S[m] = sum(n: X[m, n])
}
"""
CENTER = """
# X - X.mean(dim=(0, 2, 3), keepdim=True): a per-channel statistic over (n, h, w) under a tile of (h, w)
kernel center_channels_f32(X: f32[N, C, H, W], Y: out f32[N, C, H, W]) {
  let mean[c] = sum(n, h, w: X[n, c, h, w]) / (N * H * W)
  Y[n, c, h, w] = X[n, c, h, w] - mean[c]
}
"""


def _lane_loops(kernel) -> list:
    """The ``for`` ops carrying a fragment over the member axis ``b2`` (a lane accumulator)."""
    out = []
    for op in walk(kernel.body):
        if op.name == "for" and op.results and isinstance(op.results[0].type, FragmentType) \
                and "b2" in op.results[0].type.axes:
            out.append(op)
    return out


def _reduces_in_loops(kernel) -> int:
    """``reduce`` ops written inside a ``for`` body."""
    n = 0
    for op in walk(kernel.body):
        if op.name == "for":
            n += sum(1 for inner in walk(op.regions[0]) if inner.name == "reduce")
    return n


def _run_both(ck, inputs: dict, gen_dir) -> tuple[dict, dict]:
    import torch
    from intent_eqsat.providers.loader import load_source
    k = ck.program.kernels[0]
    got = ir.interpret(ck.program, k.name, {n: v.copy() for n, v in inputs.items()})
    mod = load_source(ck.source, gen_dir, k.name)
    targs = {n: torch.from_numpy(v.copy()) for n, v in inputs.items()}
    mod.launch(*targs.values())
    return got, {n: t.numpy() for n, t in targs.items()}


@pytest.mark.parametrize("src,sizes,shapes", [
    (ROW_SUMS, {"M": 64, "N": 1 << 20}, [{"M": 3, "N": 5000}, {"M": 1, "N": 1}]),
    (CENTER, {"N": 32, "C": 64, "H": 56, "W": 56}, [{"N": 3, "C": 5, "H": 7, "W": 9}, {"N": 2, "C": 1, "H": 70, "W": 70}]),
], ids=["row_sums", "channel_statistic_nest"])
def test_the_lane_form_is_picked_and_matches_float64(src, sizes, shapes, gen_dir, interpret_mode) -> None:
    ck = intent_eqsat.compile(src, target="sm90", provider="triton", sizes=sizes)
    k = ck.program.kernels[0]
    lanes = _lane_loops(k)
    assert lanes, ir.print_module(ck.program)
    assert _reduces_in_loops(k) == 0, ir.print_module(ck.program)
    if k.name == "center_channels_f32":
        # the nest (n, then the flattened (h, w)) carries one [TILE_R] accumulator through both loops
        assert any(any(inner is not op and inner in lanes for inner in walk(op.regions[0])) for op in lanes)
    rng = np.random.default_rng(5)
    for shape in shapes:
        if k.name == "row_sums_f32":
            x = rng.standard_normal((shape["M"], shape["N"])).astype(np.float32)
            inputs = {"X": x, "S": np.zeros(shape["M"], np.float32)}
            want = {"S": x.astype(np.float64).sum(axis=1)}
        else:
            x = rng.standard_normal((shape["N"], shape["C"], shape["H"], shape["W"])).astype(np.float32) + 3.0
            inputs = {"X": x, "Y": np.zeros_like(x)}
            x64 = x.astype(np.float64)
            want = {"Y": x64 - x64.mean(axis=(0, 2, 3), keepdims=True)}
        got, launched = _run_both(ck, inputs, gen_dir)
        for name, ref in want.items():
            np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-5, err_msg=f"{shape} GPU IR interpreter")
            np.testing.assert_allclose(launched[name], ref, rtol=1e-5, atol=1e-5, err_msg=f"{shape} Triton")
