"""A scan's prefix carried across the column tiles of one program (issue 27 item 4, ``ir/carried_prefix.py``).

Scans written the way PyTorch users write them (``torch.cumsum(x, -1)``, an exclusive ``cumprod``, ``cummax`` of
a bf16 tensor of rank 3, a masked running sum, ``torch.cumsum(x, 1)`` over the middle axis), compiled for long rows
with many of them (the model then prefers one program per row tile walking its column tiles): the program carries
the prefix (one group-level ``for`` with a carried value, one coordinate fewer) and, run by the GPU IR interpreter
at sizes whose rows span several tiles, matches the KIR reference and is bit for bit the program before the group.
"""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.cost import RooflineCost
from intent_eqsat.ir import carried_prefix
from intent_eqsat.ir.core import walk
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.optimizer import optimize
from intent_eqsat.providers.targets import get_target
from tests.cpu.rules.reference import assert_matches_reference

SCANS = {
    "cumsum_rows": ("kernel cumsum_rows(X: f32[M, N], Y: out f32[M, N]) {\n  Y[i, j] = cumsum(j: X[i, j])\n}",
                    {"M": 32768, "N": 32768}),
    "cumprod_exclusive": ("kernel cumprod_exclusive(X: f32[M, N], Y: out f32[M, N]) {\n"
                          "  Y[i, j] = cumprod(j: X[i, j], exclusive)\n}", {"M": 16384, "N": 65536}),
    "cummax_rank3_bf16": ("kernel cummax_rank3_bf16(X: bf16[B, L, C], Y: out bf16[B, L, C]) {\n"
                          "  Y[b, l, c] = cummax(c: X[b, l, c])\n}", {"B": 64, "L": 512, "C": 32768}),
    "masked_cumsum": ("kernel masked_cumsum(X: f32[M, N], K: f32[M, N], Y: out f32[M, N]) {\n"
                      "  Y[i, j] = cumsum(j: X[i, j] where K[i, j] > 0.5 else 0.0)\n}", {"M": 32768, "N": 32768}),
    "cumsum_mid_axis": ("kernel cumsum_mid_axis(X: f32[B, L, C], Y: out f32[B, L, C]) {\n"
                        "  Y[b, l, c] = cumsum(l: X[b, l, c])\n}", {"B": 16, "L": 32768, "C": 2048}),
}

#: shape symbols the interpreter runs fixed (the others drawn so that rows span several tiles)
FIXED = {"cummax_rank3_bf16": {"B": 2, "L": 3}, "cumsum_mid_axis": {"B": 2, "C": 5}}


def _compile(name: str, monkeypatch) -> tuple[kir.KirModule, ir.Module, ir.Module]:
    """(the KIR module, the optimized program, the same program before the carried_prefix group): the group's input
    is recorded as the optimizer hands it over (the last call is the chosen binding's)."""
    text, sizes = SCANS[name]
    module = kir.parse(text, filename=f"{name}.kir")
    seen = []
    original = carried_prefix._carry_group

    def recording(kernel, *args):
        seen.append(kernel)
        return original(kernel, *args)

    monkeypatch.setattr(carried_prefix, "_carry_group", recording)
    result = optimize(construct(module), target="sm90", cost=RooflineCost(get_target("sm90"), sizes),
                      tile_candidates=(32, 64))
    assert seen, "the group never ran"
    before = ir.Module(result.program.target, result.program.options, list(result.program.params), [seen[-1]])
    return module, result.program, before


def _carried_loops(program: ir.Module) -> list:
    group = next(op for op in program.kernels[0].body.ops if op.name == "execution_group")
    return [op for op in group.regions[0].ops if op.name == "for" and op.results and
            any(inner.name == "store" for inner in walk(op.regions[0]))]


@pytest.mark.parametrize("name", sorted(SCANS))
def test_long_rows_carry_the_prefix_across_column_tiles_and_match_the_reference(name, monkeypatch):
    module, program, before = _compile(name, monkeypatch)
    k, k0 = program.kernels[0], before.kernels[0]
    loops = _carried_loops(program)
    assert len(loops) == 1, ir.print_module(program)
    assert len(k.space.segments[0].extents) == len(k0.space.segments[0].extents) - 1
    assert [op.name for op in walk(k.body)].count("scan") == 1
    ir.verify(program)
    fixed = FIXED.get(name)        # rank 3: two short axes, so the interpreter stays quick
    assert_matches_reference(module, program, seeds=(3, 4), sizes=fixed, lo=70, hi=150, min_rtol=1e-4,
                             min_atol=1e-4)
    # the same members folded in the same order: bit for bit the program before the group
    for seed in (5, 6):
        case = random_inputs(module, k.name, seed, sizes=fixed, lo=65, hi=200)
        got = ir.interpret(program, k.name, {n: np.copy(v) for n, v in case.items()})
        want = ir.interpret(before, k.name, {n: np.copy(v) for n, v in case.items()})
        for out in got:
            np.testing.assert_array_equal(np.asarray(got[out]), np.asarray(want[out]), err_msg=f"{name}.{out}")


def test_few_rows_keep_one_program_per_column_tile():
    """Eight rows of 4096: the carried loop would run eight programs; the model keeps the column-tile programs (each
    re-sums its prefix, all of them in parallel)."""
    text = "kernel few_rows(X: f32[M, N], Y: out f32[M, N]) {\n  Y[i, j] = cumsum(j: X[i, j])\n}"
    module = kir.parse(text, filename="few_rows.kir")
    result = optimize(construct(module), target="sm90", cost=RooflineCost(get_target("sm90"), {"M": 8, "N": 4096}),
                      tile_candidates=(32, 64))
    assert not _carried_loops(result.program)
    assert len(result.program.kernels[0].space.segments[0].extents) == 2


def test_a_prefix_loop_whose_step_does_not_divide_the_tile_is_left_alone():
    """Legality: with a step that does not divide the tile, a chunk of the prefix would straddle the tile start and
    its lane check would not be all-true, so tile t + 1's fold would not continue tile t's: unchanged."""
    from intent_eqsat.optimizer.golden import parse_cases  # the golden case's bound cumsum program
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "golden" / "carried_prefix" / "cumsum_rows.gir"
    text = "\n".join(t for _, t in parse_cases(path.read_text(), str(path))[0].input_lines)
    kernel = ir.parse_module(text).kernels[0]
    assert len(carried_prefix.carry_prefix_loops(kernel).space.segments[0].extents) == 1
    odd = ir.parse_module(text.replace("%v15 = launch() {expr = $(128)}", "%v15 = launch() {expr = $(96)}"))
    ir.verify(odd)
    kernel = odd.kernels[0]
    assert carried_prefix.carry_prefix_loops(kernel) is kernel
