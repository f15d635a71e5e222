"""Plausible sizes by role (issue 24 item 4, defaults): a window extent -- the extent of a reduced index that
slides over an output coordinate -- is assumed 3, not the model's 1024; a grouped axis is not a window; the
caller's sizes win; the assumption reaches the report and explain()."""
from __future__ import annotations

from pathlib import Path

import pytest

import intent_eqsat
from intent_eqsat import kir, pipeline
from intent_eqsat.kir.roles import WINDOW_DEFAULT, assumed_sizes, window_symbols

ROOT = Path(__file__).resolve().parents[3]

CASES = {
    # a 1-D convolution written the PyTorch way (weight [F, C, K])
    "conv1d": ("kernel conv1d(X: f32[N, C, L], Wt: f32[F, C, K], Y: out f32[N, F, OL]) {\n"
               "  Y[n, f, l] = sum(c, k: X[n, c, l + k] * Wt[f, c, k] where l + k < L else 0.0)\n}\n", {"K"}),
    # depthwise 2-D, NHWC, dilation by value
    "depthwise": ("kernel dw(X: bf16[N, H, W, C], Wt: bf16[KH, KW, C], d: i32, Y: out f32[N, OH, OW, C]) {\n"
                  "  Y[n, h, w, c] = sum(i, j: cast<f32>(X[n, h + i*d, w + j*d, c]) * cast<f32>(Wt[i, j, c])\n"
                  "                  where 0 <= h + i*d && h + i*d < H && 0 <= w + j*d && w + j*d < W else 0.0)\n}\n",
                  {"KH", "KW"}),
    # a weighted 1-D pool: a symbolic window, stride by value
    "avgpool": ("kernel pool(X: f32[N, C, H], Wk: f32[KS], S: i32, Y: out f32[N, C, OH]) {\n"
                "  Y[n, c, h] = sum(k: X[n, c, h*S + k] * Wk[k] where 0 <= h*S + k && h*S + k < H else 0.0)\n}\n",
                {"KS"}),
    # a grouped axis (g*CPG + c): the reduced index splits the axis, it does not slide
    "grouped": ((ROOT / "examples" / "corpus" / "group_mean.kir").read_text(), set()),
    # plain contractions and row reductions have no window
    "gemm": ((ROOT / "examples" / "corpus" / "gemm.kir").read_text(), set()),
    "softmax": ((ROOT / "examples" / "corpus" / "softmax.kir").read_text(), set()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_window_symbols_by_role(name):
    text, want = CASES[name]
    module = kir.parse(text, filename=f"{name}.kir")
    assert window_symbols(module) == want
    assert assumed_sizes(module, None) == {s: WINDOW_DEFAULT for s in want}
    given = {s: 7 for s in want}
    assert assumed_sizes(module, given) == {}                  # the caller's sizes win


def test_assumed_window_reaches_the_report_and_explain():
    ck = intent_eqsat.compile(CASES["conv1d"][0], filename="conv1d.kir")
    assert ck.report["assumed_sizes"] == {"K": 3} and ck.report["sizes"] == {"K": 3}
    assert "window extents K=3 (assumed); every other size symbol at the model's default 1024" in ck.explain()
    sized = intent_eqsat.compile(CASES["conv1d"][0], filename="conv1d.kir", sizes={"K": 5, "L": 4096})
    assert "assumed_sizes" not in sized.report and sized.report["sizes"] == {"K": 5, "L": 4096}
    assert pipeline.cost_total(sized.cost) != pipeline.cost_total(ck.cost)
