"""Providers (SPEC TGT-1..TGT-9): target capability objects, the four Unsupported kinds, provider legality,
serializers and launchers, and loading of generated source.

Provider (Triton, cuTile) and hardware target (``sm90``, ``gfx942``, ...) are orthogonal choices.
"""
from __future__ import annotations

from intent_eqsat.providers.errors import (KINDS, CompilationCostUnsupported, HardwareCapabilityUnsupported,
                                           ProviderSurfaceUnsupported, SharedLegalityUnsupported,
                                           UnknownTargetError, Unsupported)
from intent_eqsat.providers.targets import TARGETS, Target, get_target

__all__ = ["Target", "TARGETS", "get_target", "Unsupported", "SharedLegalityUnsupported",
           "ProviderSurfaceUnsupported", "HardwareCapabilityUnsupported", "CompilationCostUnsupported",
           "UnknownTargetError", "KINDS"]
