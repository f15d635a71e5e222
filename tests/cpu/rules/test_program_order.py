"""Programs whose key loops run longer at later query tiles start first (``intent_eqsat.ir.program_order``, run by
``optimizer.optimize`` after the ranges are narrowed, with the ``mapping`` group): causal flash attention's segment takes
the grouped, descending order along its query-tile axis, in groups of (batch, head) rows whose keys and values fill
a quarter of the target's L2; the program still equals the KIR float64 reference, also with groups of one row;
full attention (no loop grows) and a run without the mapping group keep the row-major order."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.ir.core import Segment
from intent_eqsat.ir.launch import evaluate
from intent_eqsat.ir.program_order import L2_SHARE, order_by_work
from intent_eqsat.pipeline import make_options
from intent_eqsat.providers.targets import get_target
from intent_eqsat.rules import registry
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import ROOT, assert_matches_reference

RELAXED = {"numerics": "relaxed_normalization"}
SUITE = os.path.join(ROOT, "bench", "suite")


def _load(name: str):
    path = os.path.join(SUITE, name)
    with open(path) as f:
        return kir.parse(f.read(), filename=path)


def _optimize(module, rulebooks=None):
    result = optimize(construct(module, options=make_options(RELAXED)), target="sm90", tile_candidates=(16,),
                      rulebooks=rulebooks)
    ir.verify(result.program)
    return result.program


@pytest.fixture(scope="module")
def causal():
    module = _load("causal_attention_bf16.kir")
    return module, _optimize(module)


@pytest.mark.slow
def test_causal_attention_starts_the_longest_programs_first_in_l2_sized_groups(causal) -> None:
    module, program = causal
    seg = program.kernels[0].space.segments[0]
    assert (seg.order, seg.group_axis, seg.descending) == ("grouped", 2, True)     # [Z, H, query tiles, D tiles]
    budget = get_target("sm90").l2_bytes // L2_SHARE // 1024      # KiB
    # one (z, h) row streams its keys and values: 2 views x T x D bf16 elements
    for t, d, want in ((1024, 64, 32), (4096, 64, 8), (4096, 128, 4), (16, 8, 4096)):
        group = evaluate(seg.group_size, {"Z": 4, "H": 32, "S": t, "T": t, "D": d})
        assert group == want
        fit = budget // max(1, 2 * t * d * 2 // 1024)
        assert group == max([1] + [2 ** i for i in range(13) if 2 ** i <= fit])     # a power of two
    assert_matches_reference(module, program, sizes={"Z": 1, "H": 2, "S": 45, "T": 45, "D": 20}, seeds=(11,))


@pytest.mark.slow
def test_groups_of_one_row_still_match_the_reference(causal) -> None:
    """A tiny L2 gives groups of one (z, h) row: each row's query tiles run from the last down before the next row."""
    module, program = causal
    kernel = program.kernels[0]
    seg = kernel.space.segments[0]
    row_major = replace(kernel, space=replace(kernel.space, segments=(Segment(seg.extents),)))
    ordered = order_by_work(row_major, l2_bytes=L2_SHARE * 1024)
    assert evaluate(ordered.space.segments[0].group_size, {"Z": 2, "H": 3, "S": 37, "T": 37, "D": 12}) == 1
    small = ir.Module(program.target, program.options, list(program.params), [ordered])
    ir.verify(small)
    assert_matches_reference(module, small, sizes={"Z": 2, "H": 3, "S": 37, "T": 37, "D": 12}, seeds=(12,))


@pytest.mark.slow
def test_full_attention_and_a_run_without_the_mapping_group_keep_row_major_order() -> None:
    program = _optimize(_load("attention_bf16.kir"))
    assert program.kernels[0].space.segments[0].order == "row_major"        # the key loop runs [0, T) everywhere
    names = [g for g in registry.load().names if g != "mapping"]
    program = _optimize(_load("causal_attention_bf16.kir"), rulebooks=names)
    assert program.kernels[0].space.segments[0].order == "row_major"
