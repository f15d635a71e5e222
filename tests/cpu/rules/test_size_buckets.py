"""The size bucket planner (issue 24 item 4, ``intent_eqsat.optimizer.size_buckets``) and what the optimizer makes of
it: the plan over synthetic cost functions whose best binding is known, and, on the roofline model, a GEMM
compiled without ``sizes=`` whose launcher's pick at 4096^3 costs within 10% of the sized compile's pick."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from intent_eqsat import api
from intent_eqsat.optimizer import size_buckets as SB

GEMM = Path(__file__).resolve().parents[3] / "examples" / "corpus" / "gemm.kir"
TILES = (16, 32, 64, 128, 256)


def _ranker(best_tile):
    """Bindings {"T": t}; the cost is smallest where t equals best_tile(env) (a V in log space), times the work."""
    calls = []

    def rank(env, pool):
        calls.append((dict(env), pool is None))
        cands = [{"T": t} for t in TILES] if pool is None else [dict(b) for b in pool]
        want = best_tile(env)
        work = math.prod(env.values())
        out = [((1.0 + abs(math.log2(b["T"] / want))) * work, b) for b in cands]
        return sorted(out, key=lambda cb: (cb[0], cb[1]["T"]))
    return rank, calls


@pytest.fixture(autouse=True)
def _size_buckets_on(monkeypatch):
    """The suite turns planning off (tests/conftest.py); these tests are about it."""
    monkeypatch.setenv(SB.ENV_SWITCH, "on")


def test_level_of_uses_the_geometric_midpoints() -> None:
    assert [SB.level_of(v) for v in (1, 361, 362, 2895, 2896, 23169, 23170, 10 ** 9)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(SB.level_of(v) == i for i, v in enumerate(SB.LEVELS)) and SB.LEVELS[SB.level_of(1024)] == 1024


def test_a_binding_that_follows_one_symbol_gives_one_variant_per_level() -> None:
    rank, _ = _ranker(lambda env: {128: 16, 1024: 64, 8192: 256, 65536: 256}[env["N"]])
    default = rank({"M": 1024, "N": 1024}, None)
    plan = SB.plan(["M", "N"], {}, default, rank)
    assert plan is not None and plan.symbols == ("M", "N")
    tiles = [dict(b)["T"] for b in plan.bindings]
    assert tiles[0] == 64 and sorted(tiles) == [16, 64, 256]          # variant 0: the default's binding
    for m in (5, 1000, 9000):
        assert dict(plan.bindings[plan.variant_for({"M": m, "N": 100})])["T"] == 16
        assert dict(plan.bindings[plan.variant_for({"M": m, "N": 1500})])["T"] == 64
        assert dict(plan.bindings[plan.variant_for({"M": m, "N": 5000})])["T"] == 256
        assert dict(plan.bindings[plan.variant_for({"M": m, "N": 10 ** 6})])["T"] == 256
    # each variant is bound at the largest sizes it serves
    assert dict(plan.envs[tiles.index(256)]) == {"M": 65536, "N": 65536}
    assert plan.as_dict()["table"][0] == [[0, 0], tiles.index(16)]


def test_one_binding_best_everywhere_gives_no_plan() -> None:
    rank, _ = _ranker(lambda env: 64)
    assert SB.plan(["M", "N"], {}, rank({"M": 1024, "N": 1024}, None), rank) is None
    assert SB.plan([], {}, rank({}, None), rank) is None


def test_given_sizes_stay_fixed_and_only_free_symbols_vary() -> None:
    rank, calls = _ranker(lambda env: 16 if env["M"] < 1024 else 256)
    plan = SB.plan(["M"], {"K": 7}, rank({"M": 1024, "K": 7}, None), rank)
    assert plan is not None and plan.symbols == ("M",)
    assert all(env["K"] == 7 for env, _ in calls)
    assert sorted({env["M"] for env, _ in calls}) == list(SB.LEVELS)


def test_with_more_than_three_free_symbols_only_those_that_change_the_binding_are_bucketed() -> None:
    rank, calls = _ranker(lambda env: {128: 16, 1024: 64, 8192: 256, 65536: 256}[env["D"]])
    free = ["Z", "H", "S", "D"]
    plan = SB.plan(free, {}, rank({s: 1024 for s in free}, None), rank)
    assert plan is not None and plan.symbols == ("D",)
    assert len(plan.table) == len(SB.LEVELS)
    # a full ranking per uniform level beyond this test's default one; the others rank the pool only
    assert sum(1 for _, full in calls if full) == 1 + len(SB.LEVELS)


def test_at_most_max_variants_and_the_plan_is_deterministic() -> None:
    def best(env):
        return 16 * 2 ** ((SB.LEVELS.index(env["A"]) + 3 * SB.LEVELS.index(env["B"])) % 5)
    rank, _ = _ranker(best)
    default = rank({"A": 1024, "B": 1024}, None)
    plans = [SB.plan(["A", "B"], {}, default, rank) for _ in range(2)]
    assert plans[0] == plans[1]
    assert 2 <= len(plans[0].bindings) <= SB.MAX_VARIANTS


def test_gemm_without_sizes_launches_at_4096_cube_a_binding_within_10_percent_of_the_sized_compile() -> None:
    from intent_eqsat import kir
    from intent_eqsat.extract.cost import RooflineCost, estimate
    from intent_eqsat.providers.targets import get_target
    from intent_eqsat.optimizer.optimize import optimize_kir

    module = kir.parse(GEMM.read_text())
    env = {"M": 4096, "N": 4096, "K": 4096}
    sized = optimize_kir(module, target="sm90", cost=RooflineCost(get_target("sm90"), env)).kernels["gemm"]
    assert sized.size_buckets is None                       # every symbol sized: one binding
    general = optimize_kir(module, target="sm90").kernels["gemm"]
    buckets = general.size_buckets
    assert buckets is not None and set(buckets.symbols) == {"M", "N", "K"}
    pick = dict(buckets.table).get(tuple(SB.level_of(env[s]) for s in buckets.symbols), 0)
    assert pick != 0, "the default binding (chosen for 1024^3) serves 4096^3"
    variant = buckets.variants[pick - 1]
    assert variant.index == pick and dict(variant.binding) != general.binding
    # both bound programs costed by the same model at the launch's sizes
    got = estimate(variant.module.kernel(variant.kernel), "sm90", env).total
    want = estimate(sized.kernel, "sm90", env).total
    at_default = estimate(general.kernel, "sm90", env).total
    assert got <= 1.10 * want, (variant.binding, got, sized.binding, want)
    assert at_default > got, "the variant is no better than the default binding at 4096^3"


def test_explain_lists_the_variants_and_the_level_tuples_each_serves() -> None:
    ck = api.compile("kernel rs(X: f32[M, N], S: out f32[M]) {\n  S[m] = sum(n: X[m, n])\n}\n")
    plan = ck.report["kernels"]["rs"]["size_buckets"]
    text = ck.explain()
    assert f"size buckets over {', '.join(plan['symbols'])}" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("  variant ")]
    assert len(lines) == len(plan["variants"])
    served = sum(int(ln.split("; ")[1].split(" of ")[0]) for ln in lines)
    assert served == len(SB.LEVELS) ** len(plan["symbols"])


def test_rank_pool_descends_to_a_tile_the_pool_lacks_and_respects_the_exclusion() -> None:
    doms = {"A": (16, 32, 64, 128, 256, 512), "B": (32, 64)}

    def cost(b):
        return abs(math.log2(b["A"] / 256)) + abs(math.log2(b["B"] / 64)) + 1.0

    ranked = SB.rank_pool([{"A": 64, "B": 32}], doms, cost, ["A", "B"], lambda b: False)
    assert ranked[0][1] == {"A": 128, "B": 64} or ranked[0][1] == {"A": 256, "B": 32}
    assert len(ranked) <= 1 + 2 * SB.DESCENT_STEPS * 2
    blocked = SB.rank_pool([{"A": 64, "B": 32}], doms, cost, ["A", "B"], lambda b: b["A"] > 64)
    assert all(b["A"] <= 64 for _, b in blocked)
    assert blocked == sorted(blocked, key=lambda cb: (cb[0], cb[1]["A"], cb[1]["B"]))


def test_a_provider_that_prints_one_binding_says_so_and_prints_the_general_kernel() -> None:
    text = "kernel rs(X: f32[M, N], S: out f32[M]) {\n  S[m] = sum(n: X[m, n])\n}\n"
    ck = api.compile(text, provider="cutile")
    assert ck.report["kernels"]["rs"]["size_buckets"]["variants"]
    assert any("prints one tile binding per kernel" in r and "rs" in r for r in ck.remarks), ck.remarks
    assert "bucket" not in ck.source
