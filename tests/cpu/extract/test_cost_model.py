"""The roofline cost model over target capabilities (issue 4 item 3): estimates of decoded GPU IR kernels."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from intent_eqsat import ir, pipeline
from intent_eqsat.extract.cost import CostBreakdown, CostModel, CostParams, estimate, term_export
from intent_eqsat.providers.targets import GFX942, SM80, SM90, get_target
from intent_eqsat.rules.encode import encode_kernel

from tests.cpu.extract.programs import (BIG, INVARIANT, ROWSTATS, TRIANGLE, constructed, corpus_kernels,
                                        gemm_module)

KERNELS = corpus_kernels()


def tiled(target, bm=128, bn=128, bk=64, order="row_major", **sizes):
    m = gemm_module(order)
    return estimate(m.kernels[0], target, dict(BIG, BM=bm, BN=bn, BK=bk, **sizes), params=m)


@pytest.mark.parametrize("name,kernel,module", KERNELS, ids=[n for n, _, _ in KERNELS])
def test_constructed_and_handwritten_estimates_are_finite_and_positive(name, kernel, module):
    for target in ("sm90", "sm80", "gfx942"):
        b = estimate(kernel, target, {}, params=module)
        assert b.legal, b.reason
        assert math.isfinite(b.total) and b.total > 0
        assert b.programs > 0 and b.waves >= 1 and b.programs_per_sm >= 1
        assert b.bytes > 0


def test_a_tile_beyond_the_registers_of_an_eight_warp_program_is_illegal():
    """A program has at most ``CostParams.max_warps`` (8) warps, bound into its launch: a 128x256 f32 accumulator
    (32768 words) fits 256 threads' registers (128 each); 256x256 (65536 words) does not; with 4 warps neither."""
    for target in (SM90, SM80):
        b = tiled(target, 128, 256, 64)
        assert b.legal and b.warps == 8 and b.registers_per_thread <= target.max_registers_per_thread
        b = tiled(target, 256, 256, 64)
        assert not b.legal and "registers" in b.reason
    m = gemm_module("row_major")
    four = estimate(m.kernels[0], SM90, dict(BIG, BM=128, BN=256, BK=64), params=m,
                    cost_params=CostParams(max_warps=4))
    assert not four.legal and "registers" in four.reason


@pytest.mark.parametrize("bm,bn,bk", [(32, 32, 16), (64, 64, 32), (128, 128, 64), (64, 128, 32), (256, 64, 32)])
def test_tiled_gemm_estimates_are_finite_and_positive(bm, bn, bk):
    for target in (SM90, SM80):
        b = tiled(target, bm, bn, bk)
        assert b.legal and math.isfinite(b.total) and b.total > 0, b.reason
        assert b.flops_tensor == pytest.approx(2.0 * 4096 ** 3)           # the contract runs on the matrix unit
        assert b.programs == (4096 // bm) * (4096 // bn)
        assert b.smem_bytes == CostParams().pipeline_stages * 2 * (bm * bk + bk * bn)


def test_tiled_gemm_moves_far_fewer_bytes_than_scalar():
    scalar = estimate(constructed("gemm").kernels[0], SM90, BIG)
    tile = tiled(SM90, 128, 128, 64)
    assert scalar.legal and tile.legal
    # scalar: every program reloads a row of A and a column of B; tiled: a [BM, BK] tile serves BN columns
    assert tile.bytes * 100 < scalar.bytes
    assert tile.dram_bytes * 100 < scalar.dram_bytes
    assert tile.total * 100 < scalar.total
    # reuse-counted bytes: K/BK steps x (BM*BK + BK*BN) halves per program, plus the output tile
    per_program = (4096 // 64) * (128 * 64 + 64 * 128) * 2 + 128 * 128 * 2
    assert tile.bytes == pytest.approx(tile.programs * per_program)


def test_bigger_tiles_reuse_more():
    b64, b128 = tiled(SM90, 64, 64, 32), tiled(SM90, 128, 128, 32)
    assert b128.bytes < 0.55 * b64.bytes                  # traffic ~ M*N*K*(1/BM + 1/BN)


def test_fragment_beyond_registers_is_infinite():
    b = tiled(SM90, 512, 512, 32)
    assert not b.legal and b.total == math.inf
    assert "registers" in b.reason


def test_contract_operands_beyond_shared_memory_are_infinite():
    b = tiled(SM90, 64, 64, 2048)
    assert not b.legal and b.total == math.inf and "shared memory" in b.reason
    # the limit is the target's: 3 stages of two 128x128 f16 tiles fit sm90 (227 KiB), not sm80 (163 KiB)
    assert tiled(SM90, 128, 128, 128).legal
    assert not tiled(SM80, 128, 128, 128).legal
    assert not tiled(GFX942, 128, 128, 64).legal                        # 64 KiB of LDS


def test_non_power_of_two_fragment_is_infinite_where_providers_need_it():
    b = tiled(SM90, 48, 64, 32)
    assert not b.legal and "power of two" in b.reason
    lenient = CostParams(pow2_providers=frozenset())
    m = gemm_module()
    ok = estimate(m.kernels[0], SM90, dict(BIG, BM=48, BN=64, BK=32), params=m, cost_params=lenient)
    assert ok.legal and math.isfinite(ok.total)


def test_slower_target_takes_longer():
    assert SM80.memory_bandwidth < SM90.memory_bandwidth and SM80.peak.tensor_f16 < SM90.peak.tensor_f16
    assert tiled(SM80).total > tiled(SM90).total
    for name in ("gemm", "softmax", "row_sum", "layernorm"):
        k = constructed(name).kernels[0]
        assert estimate(k, SM80, {}).total > estimate(k, SM90, {}).total
    assert estimate(constructed("row_sum").kernels[0], "h200", {}).total \
        <= estimate(constructed("row_sum").kernels[0], "h100", {}).total


def test_wave_quantization_one_program_over_the_sm_count_costs_a_second_round():
    no_latency = CostParams(memory_latency_s=0.0, overlap_penalty=0.0)
    m = gemm_module()
    sms = SM90.sm_count

    def run(programs):
        sizes = dict(M=128 * programs, N=128, K=4096, BM=128, BN=128, BK=64)
        return estimate(m.kernels[0], SM90, sizes, params=m, cost_params=no_latency)

    slots = run(sms).slots                              # programs per SM x SMs: one full round
    full, over = run(slots), run(slots + 1)
    assert full.programs == slots and over.programs == slots + 1 and slots % sms == 0
    assert full.waves == 1 and over.waves == 2
    # the one extra program costs a whole SM-round: one more program on every SM's share
    assert over.quantization == pytest.approx((slots + sms) / (slots + 1))
    assert over.total / full.total == pytest.approx((slots + sms) / slots, rel=0.02)
    # the same holds at SM granularity when several programs fit on an SM
    small = estimate(m.kernels[0], SM90, dict(M=64 * sms, N=64, K=4096, BM=64, BN=64, BK=32), params=m,
                     cost_params=no_latency)
    small1 = estimate(m.kernels[0], SM90, dict(M=64 * (sms + 1), N=64, K=4096, BM=64, BN=64, BK=32), params=m,
                      cost_params=no_latency)
    assert small.programs_per_sm > 1 and small1.waves == 1
    assert small1.total / small.total == pytest.approx(2.0, rel=0.02)


def test_trip_counts_multiply():
    a = tiled(SM90, 128, 128, 64, K=2048)
    b = tiled(SM90, 128, 128, 64, K=4096)
    assert b.flops_tensor == pytest.approx(2 * a.flops_tensor)
    assert b.steps == pytest.approx(2 * a.steps) and b.steps == 4096 // 64
    store = b.programs * 128 * 128 * 2
    assert (b.bytes - store) == pytest.approx(2 * (a.bytes - store))
    k = constructed("row_sum").kernels[0]
    r1, r2 = estimate(k, SM90, dict(M=1024, N=1024)), estimate(k, SM90, dict(M=1024, N=2048))
    assert r2.bytes == pytest.approx(2 * r1.bytes, rel=0.01)
    assert r2.flops_alu == pytest.approx(2 * r1.flops_alu, rel=0.05)


def test_multi_result_loop_is_counted_once_and_exactly():
    k = ir.parse_module(ROWSTATS).kernels[0]
    b = estimate(k, SM90, dict(R=1000, C=300))
    sector = CostParams().min_transaction_bytes          # scalar accesses move one sector
    assert b.bytes == pytest.approx(1000 * (300 * sector + 2 * sector))
    assert b.steps == 300


def test_loop_bound_reading_a_program_coordinate_averages():
    k = ir.parse_module(TRIANGLE).kernels[0]
    b = estimate(k, SM90, dict(R=1001))
    sector = CostParams().min_transaction_bytes
    # mean trip (r + 1) over r in [0, R) = (R + 1) / 2
    assert b.bytes == pytest.approx(1001 * ((1001 + 1) / 2 * sector + sector))


def test_original_ops_stay_home_new_ones_are_hoisted():
    k = ir.parse_module(INVARIANT).kernels[0]
    sector = CostParams().min_transaction_bytes
    sizes = dict(R=100, C=50)
    home = estimate(k, SM90, sizes)                      # decode keeps the load inside the loop: 2 per iteration
    assert home.bytes == pytest.approx(100 * (50 * 2 * sector + sector))
    term, _ = encode_kernel(k)
    export, _ = term_export(term)                        # no provenance: placed like a rule-made op (hoisted)
    model = CostModel(export, SM90, sizes, abi=k)
    hoisted = model.evaluate({c: ns[0] for c, ns in export.classes.items()})
    assert hoisted.bytes == pytest.approx(100 * ((50 + 1) * sector + sector))


def test_grouped_program_order_reduces_dram_traffic():
    row = tiled(SM90, 128, 128, 64, M=8192, N=8192, K=8192)
    grp = tiled(SM90, 128, 128, 64, order="grouped(8)", M=8192, N=8192, K=8192)
    assert grp.bytes == pytest.approx(row.bytes)          # the same loads...
    assert grp.dram_bytes < 0.8 * row.dram_bytes          # ...but more of them hit L2
    assert grp.total < row.total


def test_skinny_and_square_prefer_different_tiles():
    tiles = [(bm, bn, bk) for bm in (32, 64, 128) for bn in (32, 64, 128) for bk in (32, 64)]

    def best(target, **sizes):
        m = gemm_module()
        return min(tiles, key=lambda t: estimate(m.kernels[0], target, dict(sizes, BM=t[0], BN=t[1], BK=t[2]),
                                                 params=m).total)

    square, skinny = best(SM90, **BIG), best(SM90, M=64, N=4096, K=4096)
    assert square != skinny
    assert skinny[0] * skinny[1] < square[0] * square[1]  # a 64-row GEMM needs more, smaller tiles to fill the GPU
    assert best(GFX942, **BIG) != square                  # 64 KiB of LDS, 304 CUs


def test_params_defaults_and_unknown_sizes():
    m = gemm_module()
    by_default = estimate(m.kernels[0], SM90, {}, params=m)          # BM=BN=64, BK=32; M=N=K=1024
    explicit = estimate(m.kernels[0], SM90, dict(M=1024, N=1024, K=1024, BM=64, BN=64, BK=32))
    assert by_default.total == pytest.approx(explicit.total)
    assert by_default.programs == 16 * 16


def test_breakdown_is_read_by_the_pipeline():
    b = tiled(SM90)
    assert isinstance(b, CostBreakdown)
    assert pipeline.cost_total(b) == b.total
    terms = pipeline.cost_breakdown(b)
    for key in ("bytes", "dram_bytes", "flops_tensor", "flops_alu", "sfu_ops", "registers_per_thread",
                "smem_bytes", "occupancy", "waves", "t_tensor", "t_dram"):
        assert key in terms
    assert "total" not in terms


def test_special_functions_count_on_the_sfu():
    soft = ir.parse_module(open(__import__("os").path.join(
        __import__("os").path.dirname(__file__), "..", "ir", "programs", "softmax.gir")).read())
    b = estimate(soft.kernels[0], SM90, dict(R=4096, C=4096, BC=64), params=soft)
    # two exp passes over every element: one SFU op each (plus the f32 division, one reciprocal)
    assert b.sfu_ops == pytest.approx(4096 * 4096 * 3, rel=0.01)
    assert b.flops_tensor == 0


def test_target_name_and_object_agree():
    k = constructed("softmax").kernels[0]
    assert estimate(k, "sm_90", {}).total == estimate(k, get_target("sm90"), {}).total


def test_binding_domains_add_narrow_row_tiles_and_sized_rows():
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.optimizer import tiles
    sm90 = get_target("sm90")
    doms = tiles.domains(sm90, (16, 32, 64, 128))
    out = tiles.binding_domains(doms, sm90, {"M": 32768, "N": 8192, "K": 5})
    assert out["TILE_B0"] == (1, 2, 4, 8, 16, 32, 64, 128)
    assert out["TILE_B1"] == out["TILE_R"] == (32, 64, 128, 8192)      # 32768 is above SIZED_MAX
    assert tiles.binding_domains(doms, sm90, None)["TILE_B1"] == doms["TILE_B1"]
    assert tiles.defaults(doms) == tiles.defaults(tiles.domains(sm90, (16, 32, 64, 128)))


def test_wide_member_tiles_are_offered_only_above_every_sized_row():
    """``TILE_R`` takes member tiles up to ``MEMBER_WIDE_MAX`` for a reduction longer than every sized row (a
    BatchNorm statistic over N*H*W flattened members), bounded by the product of the sizes, and none narrower
    than a sized row (a row held whole in one fragment is reused from registers: InstanceNorm1d's 4096 row ran
    1.45x slower in 2048-member tiles, which the model ranked as good) and none without sizes."""
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.optimizer import tiles
    sm90 = get_target("sm90")
    doms = tiles.domains(sm90, (16, 32, 64, 128, 256))
    assert tiles.MEMBER_WIDE_MAX == 4096
    bn = tiles.binding_domains(doms, sm90, {"N": 32, "C": 64, "H": 56, "W": 56})["TILE_R"]
    assert bn == (32, 64, 128, 256, 512, 1024, 2048, 4096)
    assert tiles.binding_domains(doms, sm90, {"N": 32, "C": 256, "L": 4096})["TILE_R"] == (32, 64, 128, 256, 4096)
    assert tiles.binding_domains(doms, sm90, {"N": 2, "C": 4, "H": 8, "W": 8})["TILE_R"] == (32, 64, 128, 256, 512)
    assert tiles.binding_domains(doms, sm90, None)["TILE_R"] == doms["TILE_R"]
    assert tiles.binding_domains(doms, sm90, {"N": 32, "C": 64})["TILE_B1"] == doms["TILE_B1"]


def test_choose_skips_bindings_narrower_than_a_warp(monkeypatch):
    from intent_eqsat.optimizer import tiles
    monkeypatch.setattr(tiles, "used", lambda kernel: ["TILE_B0", "TILE_R"])
    seen = []
    ranked = tiles.choose(None, {"TILE_B0": (1, 2, 32), "TILE_R": (8, 16)},
                          lambda b: seen.append(dict(b)) or float(b["TILE_B0"]), min_lanes=32)
    assert {"TILE_B0": 2, "TILE_R": 16} in seen and {"TILE_B0": 1, "TILE_R": 16} not in seen
    assert all(b["TILE_B0"] * b["TILE_R"] >= 32 for b in seen)
    assert ranked[0] == (2.0, {"TILE_B0": 2, "TILE_R": 16})
    monkeypatch.setattr(tiles, "used", lambda kernel: ["TILE_B0", "TILE_B1"])
    seen.clear()
    tiles.choose(None, {"TILE_B0": (1, 2, 32), "TILE_B1": (32, 64)}, lambda b: seen.append(dict(b)) or 1.0,
                 min_lanes=32)
    assert seen and all(b["TILE_B0"] == 32 for b in seen)     # no member tile: every axis holds a warp


def test_choose_costs_every_binding_when_the_lane_filters_exclude_all(monkeypatch):
    """Tile candidates all narrower than a warp (``tile_candidates=(8,)``): the lane filters are preferences, so
    the bindings are still ranked (the optimizer used to fail with an empty ranking on the flash program, which
    has no member tile ``TILE_R``)."""
    from intent_eqsat.optimizer import tiles
    monkeypatch.setattr(tiles, "used", lambda kernel: ["TILE_B0", "TILE_B1", "TILE_N"])
    ranked = tiles.choose(None, {"TILE_B0": (8,), "TILE_B1": (8,), "TILE_N": (8,)}, lambda b: 1.0, min_lanes=32)
    assert ranked == [(1.0, {"TILE_B0": 8, "TILE_B1": 8, "TILE_N": 8})]


def _f32_gemm():
    from tests.cpu.extract.programs import gemm_text
    return ir.parse_module(gemm_text().replace("f16", "f32"), "gemm_f32.gir")


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_an_f32_256_wide_tile_beyond_shared_memory_is_illegal_at_every_precision(precision):
    """Issue 26 item 5: the operands of every tiled contract are staged through shared memory at their own dtype,
    whether the matrix unit (tf32) or the FMA pipe (ieee) computes it: 3 stages of f32 [128, 64] x [64, 256]
    tiles are 288 KiB > the H200's 227 KiB (such fp32 GEMM chains once failed at launch with OutOfResources);
    the f16 tiles of the same shape (144 KiB) and f32 [64, 32] x [32, 256] tiles (120 KiB) fit."""
    m = _f32_gemm()
    if precision != "ieee":
        text = ir.print_module(m).replace("rhs_contract = [0]}", f'precision = "{precision}", rhs_contract = [0]}}')
        m = ir.parse_module(text, "gemm_f32.gir")
    k = m.kernels[0]
    big = estimate(k, SM90, dict(BIG, BM=128, BN=256, BK=64), params=m)
    assert not big.legal and big.total == math.inf and "shared memory" in big.reason, big.reason
    assert str(3 * (128 * 64 + 64 * 256) * 4) in big.reason
    fits = estimate(k, SM90, dict(BIG, BM=64, BN=256, BK=32), params=m)
    assert fits.legal and fits.smem_bytes == 3 * (64 * 32 + 32 * 256) * 4, fits.reason
    assert tiled(SM90, 128, 256, 64).legal


def test_member_extent_is_the_longest_member_tiled_loop_at_the_sizes():
    """``tiles.member_extent``: the trip extent of the loops stepping by ``TILE_R`` (the row sum's ``[0, N)`` after
    the reduction group, the golden case's expected output), None when a bound reads a symbol the sizes do not
    give; it caps the wide member tiles (a tile wider than its loop only masks lanes)."""
    from intent_eqsat import ir
    from intent_eqsat.optimizer import tiles
    from intent_eqsat.providers.targets import get_target
    golden = Path(__file__).resolve().parents[2] / "golden" / "reduction" / "row_sum.gir"
    expected = "\n".join(line[len("# CHECK: "):] for line in golden.read_text().splitlines()
                         if line.startswith("# CHECK: "))
    kernel = ir.parse_module(expected).kernels[0]
    assert tiles.member_extent(kernel, {"M": 8, "N": 1000}) == 1000
    assert tiles.member_extent(kernel, {"M": 8}) is None
    sm90 = get_target("sm90")
    doms = tiles.domains(sm90, (16, 32, 64, 128, 256))
    # a loop of 1000 members (N unknown to the sizes): wide tiles up to 1024; N sized: its whole row, nothing narrower
    assert tiles.binding_domains(doms, sm90, {"M": 8}, members=1000)["TILE_R"] == (32, 64, 128, 256, 512, 1024)
    assert tiles.binding_domains(doms, sm90, {"M": 8, "N": 1000}, members=1000)["TILE_R"] == (32, 64, 128, 256, 1024)
