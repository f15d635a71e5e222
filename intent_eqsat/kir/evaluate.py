"""``evaluate``: verify a KIR module, then run one kernel with the NumPy reference evaluator
(:mod:`intent_eqsat.kir.evaluator`, where the semantics are stated)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from intent_eqsat.errors import KirEvalError
from intent_eqsat.kir import model as m
from intent_eqsat.kir.evaluator import _KernelEval
from intent_eqsat.kir.verify import check


def evaluate(module: m.KirModule, kernel_name: str, inputs: Mapping[str, Any], *,
             float64: bool = False) -> dict[str, np.ndarray]:
    """Run kernel ``kernel_name`` of ``module`` on ``inputs`` and return its out/inout views.

    ``inputs`` maps view names to arrays (converted to the declared dtype), scalar names to numbers, and may give a
    shape symbol's value directly (``{"B": 10}``) when no input view determines it. An ``out`` view may be passed
    only to fix its shape. The module is verified first (raises :class:`KirError`)."""
    facts = check(module)
    if kernel_name not in facts.kernels:
        raise KirEvalError(f"no kernel named {kernel_name!r} (have: {', '.join(facts.kernels)})")
    return _KernelEval(facts.kernels[kernel_name], facts, float64).run(inputs)
