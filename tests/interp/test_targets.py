"""Target capability objects (SPEC TGT-1, TGT-2): typed, frozen, queried by feature."""
from __future__ import annotations

import dataclasses

import pytest

from intent_eqsat.errors import IntentError
from intent_eqsat.providers.errors import UnknownTargetError
from intent_eqsat.providers.targets import GFX942, H200, SM80, SM90, SM100, SM120, TARGETS, Target, get_target


def test_known_targets_and_aliases() -> None:
    assert set(TARGETS) >= {"sm80", "sm90", "h200", "sm100", "sm120", "gfx942"}
    assert get_target("sm_90") is SM90 and get_target("H100") is SM90 and get_target("gfx942") is GFX942
    assert get_target(SM80) is SM80


def test_unknown_target_is_a_clear_error() -> None:
    with pytest.raises(UnknownTargetError, match=r"unknown target 'sm75'; known targets: .*gfx942.*sm90") as e:
        get_target("sm75")
    assert isinstance(e.value, IntentError) and isinstance(e.value, KeyError)


def test_targets_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SM90.sm_count = 1  # type: ignore[misc]


def test_h200_is_an_sm90_variant() -> None:
    assert H200.arch == SM90.arch and H200.sm_count == SM90.sm_count == 132
    assert H200.memory_bandwidth == 4.8e12 and SM90.memory_bandwidth == 3.35e12
    assert H200.peak == SM90.peak and H200.smem_per_block == 227 * 1024 and H200.smem_per_sm == 228 * 1024


def test_hopper_limits() -> None:
    t = SM90
    assert (t.warp_size, t.registers_per_sm, t.max_registers_per_thread) == (32, 65536, 255)
    assert t.max_grid[0] == 2 ** 31 - 1 and t.max_grid_rank == 3 and t.max_warps_per_block == 32
    assert t.peak.tensor("bf16") > t.peak.tensor("f32", "tf32") > t.peak.fma_f32 > 0
    assert t.peak.tensor("f32", "ieee") == 0          # ieee f32 does not run on the matrix unit


def test_features_not_names() -> None:
    assert not SM80.supports_atomic("add", "bf16") and SM90.supports_atomic("add", "bf16")
    assert SM90.supports_atomic("add", "f32", "gpu") and not SM90.supports_atomic("max", "f32")
    assert SM90.supports_contract("bf16", "f32") and not SM90.supports_contract("bf16", "f16")
    assert SM90.supports_contract("f32", "f32", "tf32") and SM90.supports_contract("i8", "i32")
    assert GFX942.warp_size == 64 and GFX942.sm_count == 304 and GFX942.smem_per_block == 64 * 1024
    assert not GFX942.supports_provider("cutile") and GFX942.supports_provider("triton")
    assert all(t.supports_provider("cutile") for t in (SM80, SM90, SM100, SM120))
    assert SM100.tmem_per_sm > 0 and SM120.smem_per_block < SM90.smem_per_block


def test_every_target_is_complete() -> None:
    for t in TARGETS.values():
        assert isinstance(t, Target)
        assert t.memory_bandwidth > 0 and t.clock_hz > 0 and t.peak.fma_f32 > 0 and t.peak.sfu > 0
        assert t.sm_count > 0 and t.smem_per_block <= t.smem_per_sm and t.registers_per_block <= t.registers_per_sm
        assert t.contract_forms and t.atomics and "triton" in t.providers
        assert t.features()["name"] == t.name


def test_triton_gpu_target() -> None:
    pytest.importorskip("triton")
    assert SM90.triton_target.backend == "cuda" and SM90.triton_target.arch == 90
    assert GFX942.triton_target.backend == "hip" and GFX942.triton_target.warp_size == 64
