"""The Triton provider (SPEC TGT-4): legalization + provider verifier, serializer, launcher, AOT helper."""
from __future__ import annotations

from intent_eqsat.providers.triton.legalize import KernelPlan, legalize
from intent_eqsat.providers.triton.serializer import serialize
from intent_eqsat.providers.triton.spellings import SPELLINGS

#: the serializer prints KIR specializations (SPEC IR-2) beside the general kernel, dispatched by ``launch()``
PRINTS_SPECIALIZATIONS = True
#: the serializer prints the optimizer's size bucket variants (issue 24 item 4), picked by ``launch()``
PRINTS_SIZE_BUCKETS = True

__all__ = ["serialize", "legalize", "KernelPlan", "SPELLINGS", "PRINTS_SPECIALIZATIONS", "PRINTS_SIZE_BUCKETS"]
