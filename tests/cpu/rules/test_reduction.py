"""The reduction rulebook (SPEC PASS-3.3 "block reduction axes into physical loops", PASS-4 "reassociate ordinary
reduce"): row reductions of blocked kernels take a tile of ``TILE_R`` members per iteration (a ``reduce`` op over
axis ``b2``) and carry their accumulator over the rows only.

Every optimized program passes the shared verifier and equals the KIR float64 reference, with shapes below, at and
above the member tile (the tail members are masked to the combiner's identity)."""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.ir.types import FragmentType
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import assert_matches_reference, corpus, ops_named

GROUPS = ["blocking", "reduction"]


def _optimize(module: kir.KirModule, rulebooks=GROUPS, **kw):
    result = optimize(construct(module), target="sm90", rulebooks=rulebooks, **kw)
    ir.verify(result.program)
    return result


def _loops(kernel) -> list:
    return ops_named(kernel.body.ops, "for")


def _reduces_in(loop) -> list:
    return [op for r in loop.regions for op in r.ops if op.name == "reduce"]


@pytest.mark.parametrize("name,combines", [("softmax", {"max", "add"}), ("layernorm", {"add"}),
                                           ("rmsnorm", {"add"}), ("row_sum", {"add"}), ("row_max", {"max"})])
def test_row_reductions_take_a_tile_of_members_per_iteration(name, combines):
    module = corpus(name)
    result = _optimize(module)
    kernel = result.program.kernels[0]
    blocked = [lp for lp in _loops(kernel) if _reduces_in(lp)]
    assert blocked, "no reduction loop was blocked"
    tr = result.kernels[name].binding["TILE_R"]
    every_op = ops_named(kernel.body.ops)
    for lp in blocked:
        (step_def,) = [op for op in every_op if any(r is lp.operands[2] for r in op.results)]
        assert step_def.name == "launch" and step_def.attrs["expr"].value == tr      # k0 steps by the member tile
        red = _reduces_in(lp)[0]
        assert red.attrs["combine"] in combines and red.attrs["combine"] == lp.attrs["reduce"]
        src = red.operands[0].type
        assert isinstance(src, FragmentType) and src.axes[-1] == "b2" and src.shape[-1].value == tr
        assert red.attrs["axes"] == (len(src.shape) - 1,)
    # a step-1 loop over the row is gone: every reduction the kernel runs is blocked
    assert all(_reduces_in(lp) for lp in _loops(kernel) if lp.attrs.get("reduce"))
    assert_matches_reference(module, result.program)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 70])
def test_tail_members_are_the_identity(n):
    """TILE_R = 32 (the only candidate): rows shorter than, equal to and longer than one member tile, and a
    ragged last tile; max rows of all-negative values (a tail read as 0.0 would win the maximum)."""
    module = corpus("softmax")
    result = _optimize(module, tile_candidates=(32,))
    assert result.kernels["softmax"].binding.get("TILE_R") == 32
    assert_matches_reference(module, result.program, sizes={"M": 3, "N": n}, seeds=(5,))
    neg = corpus("row_max")
    res_neg = _optimize(neg, tile_candidates=(32,))
    inputs = random_inputs(neg, "row_max", n, sizes={"M": 3, "N": n})
    inputs["X"] = -1.0 - np.abs(inputs["X"])
    assert_matches_reference(neg, res_neg.program, inputs=inputs)


def test_a_member_reading_its_own_iteration_loop_is_blocked_only_over_key_tiles():
    """attention's row maximum over keys j reads the score loop of key j (a loop inside its member): the member
    blocking over ``TILE_R`` has no lifting of it, but the key-tile form does (``reduction.key_block_max``, issue 23
    item 2): the maximum, the mass and the moment take ``TILE_N`` keys per iteration, each with its score loop
    widened over the key tile; the score loops themselves (dot products over d) are blocked, and the program
    computes what the reference does."""
    module = corpus("attention")
    result = _optimize(module, rulebooks=["blocking", "reduction", "remat"])
    kernel = result.program.kernels[0]
    fired = result.report["rules_fired"]
    assert all(fired.get(f"reduction.key_block_{r}") for r in ("max", "mass", "moment")), fired
    outer = [lp for lp in _loops(kernel) if ops_named(lp.regions[0].ops, "for")]
    assert outer
    for lp in outer:        # every key loop: a score tile over (rows, keys) inside, its sums over the key axis
        inner = ops_named(lp.regions[0].ops, "for")
        assert any("b2" in getattr(x.results[0].type, "axes", ()) for x in inner), lp.attrs.get("origin")
        assert _reduces_in(lp) or ops_named(lp.regions[0].ops, "contract"), lp.attrs.get("origin")
    scores = [lp for lp in _loops(kernel) if str(lp.attrs.get("origin", "")).startswith("attention.s0.e5")]
    assert scores and all(lp.results[0].type.axes == ("b0", "b2") for lp in scores)   # rows x keys
    assert_matches_reference(module, result.program)


def test_blocked_reductions_are_cheaper_in_the_model():
    module = corpus("softmax")
    assert _optimize(module).costs["softmax"] < _optimize(module, rulebooks=["blocking"]).costs["softmax"]


def test_whole_row_tiles_when_the_row_extent_is_known():
    """With the problem size known, the row tile may cover a whole (power-of-two padded) row; the model counts
    the later passes of a one-row program as L2 re-reads (its rows fit in L2 across the wave), so the pick is one
    row per program and its DRAM bytes are about one read and one write of X, while a 32-row tile's passes come
    from DRAM (H200 sweep, docs/perf.md: 0.765 ms vs 1.30 ms)."""
    from dataclasses import replace

    from intent_eqsat.extract.cost import RooflineCost, estimate
    from intent_eqsat.providers.targets import get_target
    module = corpus("softmax")
    sizes = {"M": 32768, "N": 8192}
    result = optimize(construct(module), target="sm90", cost=RooflineCost(get_target("sm90"), sizes))
    kr = result.kernels["softmax"]
    assert kr.binding == {"TILE_B0": 1, "TILE_B1": 8192, "TILE_R": 8192}
    base = next(c for c in kr.candidates if c.forbidden is None)
    one_row = estimate(replace(base, params=kr.binding).decode(), "sm90", sizes)
    rows32 = estimate(replace(base, params={**kr.binding, "TILE_B0": 32, "TILE_B1": 128, "TILE_R": 128})
                      .decode(), "sm90", sizes)
    x_bytes = 32768 * 8192 * 4
    assert one_row.dram_bytes == pytest.approx(2 * x_bytes, rel=0.05)
    assert rows32.dram_bytes > 3.5 * x_bytes
    assert one_row.total < rows32.total
