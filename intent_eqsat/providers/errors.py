"""The four kinds of "unsupported" (SPEC TGT-9), each its own exception type.

Unsupported is declared at the earliest layer that knows, as exactly one of:

* :class:`SharedLegalityUnsupported` -- the program breaks a shared GPU IR legality rule that every provider relies
  on (an unbound parameter, a fragment extent that depends on runtime data, a symbol the launcher cannot see ...);
* :class:`ProviderSurfaceUnsupported` -- legal shared IR that this provider's source surface has no (unique,
  faithful) spelling for (a non-power-of-two Triton block, a float atomic max with NaN propagation, ...);
* :class:`HardwareCapabilityUnsupported` -- the provider could spell it but the chosen target lacks the feature
  (bf16 atomic add before sm_90, a contract input dtype the matrix unit cannot take, ...);
* :class:`CompilationCostUnsupported` -- legal source the external compiler cannot finish within a cost bound
  (fragments so large per thread that the fully unrolled code explodes).

Every error carries ``kind`` (one of :data:`KINDS`), ``reason`` and ``location`` (``kernel gemm, op #12 (load)
from gemm.s0``); ``str(err)`` starts with the location. They are never caught to fall back to another path.
"""
from __future__ import annotations

from intent_eqsat.errors import IntentError

KINDS = ("shared_legality", "provider_surface", "hardware_capability", "compilation_cost")


class Unsupported(IntentError):
    """Base class of the four TGT-9 kinds; never raised itself."""

    kind: str = ""

    def __init__(self, reason: str, location: str | None = None):
        self.reason = reason
        super().__init__(f"[unsupported: {self.kind}] {reason}", location)


class SharedLegalityUnsupported(Unsupported):
    """The program is outside shared GPU IR legality (no provider can run it as written)."""

    kind = "shared_legality"


class ProviderSurfaceUnsupported(Unsupported):
    """The provider's source surface has no faithful spelling for a legal shared-IR construct."""

    kind = "provider_surface"


class HardwareCapabilityUnsupported(Unsupported):
    """The target hardware lacks a capability the program needs (queried from the target object)."""

    kind = "hardware_capability"


class CompilationCostUnsupported(Unsupported):
    """Legal source that the external compiler cannot finish within the declared cost bound."""

    kind = "compilation_cost"


#: source lines of the error a generated launcher raises when the launch needs more than the target allows (a grid
#: over the limit): a generated module imports only its provider and torch (SPEC TGT-8), so it defines its own
#: mirror of :class:`HardwareCapabilityUnsupported` (same ``kind``, ``reason``, ``location`` and message form)
LAUNCH_ERROR_SOURCE = (
    "class HardwareCapabilityUnsupported(RuntimeError):",
    '    """The launch needs more than the target allows (SPEC TGT-9 kind hardware_capability); raised by launch()."""',
    "",
    "    kind = 'hardware_capability'",
    "",
    "    def __init__(self, reason, location):",
    "        self.reason, self.location = reason, location",
    "        super().__init__(f'{location}: [unsupported: hardware_capability] {reason}')",
)


class UnknownTargetError(IntentError, KeyError):
    """``get_target`` was asked for a name it does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return IntentError.__str__(self)


__all__ = ["KINDS", "LAUNCH_ERROR_SOURCE", "Unsupported", "SharedLegalityUnsupported", "ProviderSurfaceUnsupported",
           "HardwareCapabilityUnsupported", "CompilationCostUnsupported", "UnknownTargetError"]
