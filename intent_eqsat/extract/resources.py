"""Bind a program's physical resources (threads per program, pipeline stages) from the cost model's footprint.

The cost model already decides how many warps a program needs (its largest fragment over ``elems_per_thread``
members per thread, at most ``CostParams.max_warps``) and costs registers, occupancy and shared memory with that
choice (``pipeline_stages`` buffered copies of every contract's operands). The program must then be launched the
way it was costed: this module writes the same numbers into the kernel's program space (``space.threads``,
``space.stages``, SPEC PASS-6 "bind physical parameters", TGT-7 "all physical parameters bound to constexpr/Config"),
and the provider maps them onto its launch options (the serializer only prints them).

Reads: a decoded kernel with its tile parameters bound; the target; the problem sizes. Writes: ``space.threads``
and ``space.stages`` only. A kernel the model rejects (infinite cost) is returned unchanged (the provider's
defaults apply; the verifier and the provider's legality still decide).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from intent_eqsat.ir.core import Kernel


def bind_resources(kernel: Kernel, target: Any, sizes: Mapping[str, int] | None = None, *,
                   provider: str | None = None, cost_params: Any = None) -> Kernel:
    """``kernel`` with ``space.threads`` = the model's warps x the target's warp size and ``space.stages`` = the
    model's pipeline stages, at problem ``sizes``."""
    from intent_eqsat.extract.cost import DEFAULT_PARAMS, estimate
    from intent_eqsat.providers.targets import get_target
    tgt = get_target(target)
    cp = cost_params if cost_params is not None else DEFAULT_PARAMS
    breakdown = estimate(kernel, tgt, sizes, provider=provider, cost_params=cp)
    if not math.isfinite(breakdown.total) or not breakdown.warps:
        return kernel
    threads = int(breakdown.warps) * int(tgt.warp_size)
    return replace(kernel, space=replace(kernel.space, threads=threads, stages=int(cp.pipeline_stages)))


__all__ = ["bind_resources"]
