"""Per-row statistics inside a reduction to a scalar (issue 27 item 1, ``blocking.scalar_group_member_stat``).

A loss reduced to one number whose member is itself a row reduction -- ``F.cross_entropy(X, Y)`` (each row's
logsumexp minus its target logit), the mean logsumexp of bf16 logits, the largest row 2-norm
``torch.linalg.norm(X, dim=1).max()`` -- is one program before ``split_reduction`` chunks its rows over programs.
Before, the row loops inside it were scalar: one element per step, 1,000-32,000 dependent steps per row (the
cross-entropy mean ran 0.03x-0.04x eager on the H200). Now a reduction loop nested in the member of a rank-0
segment's reduction, started from a value (not continuing the enclosing carry), is a statistic the one program
computes once per member, and the reduction group blocks it over a tile of its members. The tests check the form at
realistic sizes and the values against the KIR reference in the GPU IR interpreter, with rows longer than a tile.
"""
from __future__ import annotations

import functools
import math

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.ir.core import walk
from intent_eqsat.ir.launch import evaluate
from tests.cpu.rules.reference import assert_matches_reference, ops_in_value_loops, optimize_in_small_tiles, suite

LSE_MEAN_BF16 = """
# torch.logsumexp(X.float(), dim=1).mean() of bf16 logits.
kernel lse_mean_bf16(X: bf16[M, C], L: out f32[]) {
  L[] = sum(m: log(sum(c: exp(cast<f32>(X[m, c]) - max(k: cast<f32>(X[m, k]))))) + max(k: cast<f32>(X[m, k]))) / M
}
"""
MAX_ROW_NORM_F32 = """
# torch.linalg.norm(X, dim=1).max(): the largest row 2-norm.
kernel max_row_norm_f32(X: f32[M, D], L: out f32[]) {
  L[] = max(m: sqrt(sum(d: X[m, d] * X[m, d])))
}
"""

#: name -> (KIR module, compile sizes, the row extent, sizes the interpreter keeps fixed)
CASES = {
    "ce_mean_f32": (lambda: suite("ce_mean_f32"), {"M": 8192, "C": 1000}, "C", {"M": 4}),
    "lse_mean_bf16": (lambda: kir.parse(LSE_MEAN_BF16, filename="lse_mean_bf16.kir"), {"M": 16384, "C": 32000}, "C",
                      {"M": 3}),
    "max_row_norm_f32": (lambda: kir.parse(MAX_ROW_NORM_F32, filename="max_row_norm_f32.kir"),
                         {"M": 4096, "D": 4096}, "D", {"M": 5}),
}

@functools.lru_cache(maxsize=None)
def _compiled(name: str):
    """(module, optimize result) of a case at its compile sizes, once per worker (two tests read each)."""
    make, sizes, *_ = CASES[name]
    module = make()
    return module, optimize_in_small_tiles(module, sizes)


def _nested_loops(kernel) -> list:
    """Value-producing loops inside another value-producing loop."""
    return [op for op in ops_in_value_loops(kernel) if op.name == "for" and op.results]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_row_loops_of_a_scalar_loss_read_tiles_of_members(name):
    """Every row loop nested in the loss's reduction loads a tile of members per step (before: one element)."""
    module, result = _compiled(name)
    sizes = CASES[name][1]
    kernel = result.program.kernels[0]
    printed = ir.print_module(result.program)
    rows = _nested_loops(kernel)
    assert rows, printed
    for loop in rows:
        loads = [op for r in loop.regions for op in walk(r) if op.name == "load"]
        assert loads, printed
        lanes = max(math.prod(int(evaluate(d, sizes)) for d in op.results[0].type.shape)
                    if isinstance(op.results[0].type, ir.FragmentType) else 1 for op in loads)
        assert lanes >= 32, (lanes, printed)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loss_matches_the_reference_with_rows_longer_than_a_tile(name):
    module, result = _compiled(name)
    _, sizes, row, fixed = CASES[name]
    tiles = [math.prod(int(evaluate(d, sizes)) for d in op.results[0].type.shape)
             for loop in _nested_loops(result.program.kernels[0]) for r in loop.regions for op in walk(r)
             if op.name == "load" and isinstance(op.results[0].type, ir.FragmentType)]
    widest = max(tiles)
    assert_matches_reference(module, result.program, sizes=fixed, lo=widest + 1, hi=2 * widest + 37, seeds=(3,))
