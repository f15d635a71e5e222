"""The cost model's term for a cross-warp reduction inside a loop (``CostModel._sync_steps``, ``_cross_warp``): the
barrier of each step's reduction keeps the next step's loads from being issued early, so such a loop's load steps
wait the whole memory latency; the lane form (``rulebooks/lanes.py``: member tiles combined into a carried tile,
reduced once after the loop) does not pay it. Both programs are the golden case of the ``lanes`` group (before and
after), with the tile sizes written in."""
from __future__ import annotations

from pathlib import Path

import pytest

from intent_eqsat.extract.cost import estimate
from intent_eqsat.ir.parser import parse_module
from intent_eqsat.optimizer import golden
from intent_eqsat.providers.targets import SM90

CASE = Path(__file__).resolve().parents[2] / "golden" / "lanes" / "row_sum_long.gir"


def _programs(rows: int, members: int):
    """(the per-step reduction program, the lane-accumulator program) with ``[rows, members]`` member tiles."""
    (case,) = golden.parse_cases(CASE.read_text(), str(CASE))
    texts = ("\n".join(line for _, line in case.input_lines), "\n".join(case.expected))
    out = []
    for text in texts:
        text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("param TILE_"))
        text = text.replace("TILE_B0", str(rows)).replace("TILE_R", str(members))
        out.append(parse_module(text).kernels[0])
    return out


def test_a_reduction_across_warps_at_every_step_waits_the_whole_latency_of_each_step():
    per_step, lanes = _programs(2, 1024)
    sizes = {"M": 64, "N": 1 << 20}
    a, b = estimate(per_step, SM90, sizes), estimate(lanes, SM90, sizes)
    assert a.legal and b.legal
    assert a.steps == pytest.approx(3 * b.steps)          # pipeline_stages: no step overlaps the next one's loads
    assert b.total < 0.6 * a.total                        # latency-bound: 1024 steps of 32 lone programs


@pytest.mark.parametrize("rows,members,n", [(2, 1024, 1024), (2, 64, 1 << 20)],
                         ids=["one_trip", "members_within_one_warp"])
def test_no_wait_for_one_trip_or_a_reduction_inside_one_warp(rows, members, n):
    per_step, lanes = _programs(rows, members)
    sizes = {"M": 64, "N": n}
    a, b = estimate(per_step, SM90, sizes), estimate(lanes, SM90, sizes)
    assert a.steps == pytest.approx(b.steps)
