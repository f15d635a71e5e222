"""The verifier's error type, kept apart so that every layer can import it without importing the verifier."""
from __future__ import annotations

from intent_eqsat.errors import IntentError

#: PASS-5 shared-verifier check names, for failures that are not one numbered IR-10 invariant
PASS5_CHECKS = ("coverage", "shapes_params", "control", "accesses", "provenance", "buffers", "structured",
                "declared_params", "no_kir_ops", "construction")


class VerificationError(IntentError):
    """A program breaks an IR-10 invariant (``invariant`` is 1..12) or a PASS-5 check (``invariant`` is its name).

    ``location`` names the kernel and op (``kernel gemm, op #12 (load) from gemm.s0``).
    """

    def __init__(self, invariant: int | str, message: str, location: str | None = None):
        self.invariant = invariant
        tag = f"IR-10 invariant {invariant}" if isinstance(invariant, int) else f"PASS-5 {invariant}"
        super().__init__(f"[{tag}] {message}", location)
