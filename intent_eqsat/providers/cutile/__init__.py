"""The cuTile provider (SPEC TGT-5): legalization / provider verifier, deterministic serializer with a launch
wrapper, and TileIR bytecode export (no GPU needed)."""
from __future__ import annotations

from intent_eqsat.providers.cutile.export import BYTECODE_VERSION, TILEIR_MAGIC, export, load_source, write_source
from intent_eqsat.providers.cutile.legalize import KernelPlan, legalize
from intent_eqsat.providers.cutile.serialize import serialize
from intent_eqsat.providers.cutile.spellings import SPELLINGS

#: the serializer prints KIR specializations (SPEC IR-2) beside the general kernel, dispatched by ``launch()``
PRINTS_SPECIALIZATIONS = True

__all__ = ["legalize", "serialize", "export", "write_source", "load_source", "KernelPlan", "SPELLINGS",
           "BYTECODE_VERSION", "TILEIR_MAGIC", "PRINTS_SPECIALIZATIONS"]
