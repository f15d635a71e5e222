"""Reductions over several axes whose result is itself the output, one program per kept index (issue 27 item 1,
``reduction.flatten_b0`` and the chunk split of ``ir/split_reduction.py``).

``X.var(dim=(0, 2, 3))``, ``X.mean(dim=(0, 2, 3))``, a per-channel ``amax`` of bf16 feature maps and ``X.sum(dim=(0,
2))`` of a rank-3 activation reduce a nest ``n { h { w } }`` (or ``b { l }``) into a value blocked over the kept
channel axis. Before, only a statistic with a scalar carry (``OwnStat``) was flattened, so these walked one row of
``W`` members per step in a 64-lane tile (``X.var`` at 32x64x56x56: 1,792 dependent steps per channel and pass, 0.07x
eager on an H100). Now the inner pair ``(h, w)`` of the nest is one loop over its ``H * W`` members, read in member
tiles wider than a row, and the chunk form of ``split_reduction`` (which now reads a trip count ``H * W`` computed in
the program) spreads a one-pass statistic over more programs. The tests check the program's form at realistic
sizes and that it matches the KIR reference at odd sizes in the GPU IR interpreter (members spanning several
tiles and chunks).
"""
from __future__ import annotations

import functools
import math

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.ir.launch import evaluate
from tests.cpu.rules.reference import assert_matches_reference, ops_in_value_loops, optimize_in_small_tiles, suite

#: kernels written as PyTorch users write these reductions; the suite's two and two written here, not tuned for
CHAN_AMAX_BF16 = """
# Per-channel maximum of bf16 feature maps: X.amax(dim=(0, 2, 3)).
kernel chan_amax_bf16(X: bf16[N, C, H, W], Y: out bf16[C]) {
  Y[c] = max(n, h, w: X[n, c, h, w])
}
"""
SUM02_F32 = """
# Sum of a rank-3 activation over its batch and length axes: X.sum(dim=(0, 2)).
kernel sum02_f32(X: f32[B, C, L], Y: out f32[C]) {
  Y[c] = sum(b, l: X[b, c, l])
}
"""

#: name -> (KIR module, compile sizes, the innermost reduced extent (one row of members), sizes the interpreter keeps
#: fixed, whether the model is expected to split the reduction over chunks at the compile sizes)
CASES = {
    "var_channels_f32": (lambda: suite("var_channels_f32"), {"N": 32, "C": 64, "H": 56, "W": 56}, "W",
                         {"C": 3}, False),
    "bn_mean_f32": (lambda: suite("bn_mean_f32"), {"N": 64, "C": 64, "H": 56, "W": 56}, "W", {"C": 3}, True),
    "chan_amax_bf16": (lambda: kir.parse(CHAN_AMAX_BF16, filename="chan_amax_bf16.kir"),
                       {"N": 16, "C": 96, "H": 35, "W": 35}, "W", {"C": 3}, None),
    "sum02_f32": (lambda: kir.parse(SUM02_F32, filename="sum02_f32.kir"), {"B": 32, "C": 128, "L": 1000}, "L",
                  {"C": 2}, None),
}

@functools.lru_cache(maxsize=None)
def _compiled(name: str):
    """(module, optimize result) of a case at its compile sizes, once per worker (three tests read each)."""
    make, sizes, *_ = CASES[name]
    module = make()
    return module, optimize_in_small_tiles(module, sizes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_reduction_over_several_axes_reads_its_flattened_members_in_wide_tiles(name):
    """The members are read with the flattened coordinates (``g / B``, ``g % B``) in tiles wider than one row of
    the innermost reduced axis, which the nest read one row per step."""
    module, result = _compiled(name)
    _, sizes, row, _, _ = CASES[name]
    kernel = result.program.kernels[0]
    printed = ir.print_module(result.program)
    members = ops_in_value_loops(kernel)
    loads = [op for op in members if op.name == "load"]
    assert loads, printed
    assert {"div", "rem"} <= {op.name for op in members}, printed
    widest = max(math.prod(int(evaluate(d, sizes)) for d in op.results[0].type.shape) for op in loads)
    assert widest > 2 * sizes[row], (widest, printed)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if CASES[n][4] is not None])
def test_the_model_splits_a_one_pass_statistic_over_chunks_and_keeps_a_two_pass_one(name):
    """A per-channel mean at 64 channels fills 64 programs unsplit: the flattened loop's trip count ``H * W`` is a
    launch value the split reads, so it is chunked over a new program axis (a ticket, partials in a workspace). The
    variance's second pass reads the mean, which no program but the last arriver would have: it stays one program
    per channel (SPEC IR-9: no barrier across programs)."""
    module, result = _compiled(name)
    printed = ir.print_module(result.program)
    split = "atomic_rmw" in printed and "workspace" in printed
    assert split is CASES[name][4], printed


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flattened_reduction_matches_the_reference(name):
    """At odd sizes, fixed kept extents and rows longer than a tile, the program computes what the KIR says."""
    module, result = _compiled(name)
    fixed = CASES[name][3]
    assert_matches_reference(module, result.program, sizes=fixed, lo=3, hi=70, seeds=(5,))
