"""Bind a program's physical resources (threads per program, pipeline stages, index width) from the cost model.

The cost model already decides how many warps a program needs (its largest fragment over ``elems_per_thread``
members per thread, at most ``CostParams.max_warps``) and costs registers, occupancy and shared memory with that
choice (``pipeline_stages`` buffered copies of every contract's operands). The program must then be launched the
way it was costed: this module writes the same numbers into the kernel's program space (``space.threads``,
``space.stages``, SPEC PASS-6 "bind physical parameters", TGT-7 "all physical parameters bound to constexpr/Config"),
and the provider maps them onto its launch options (the serializer only prints them).

Index width: a program without a tensor-core contract is bound ``index_bits 32`` (32-bit index arithmetic wherever
the launch proves it exact, :mod:`intent_eqsat.ir.index_bounds`): its element offsets are computed per member of
every tile it streams (the likely reason 32 bits pay: 64-bit integer multiplies take issue slots). Measured on the H200
(2026-11-30, bench/results/h200_index_2026-11-30/): whole-row softmax f32 1.07x faster, layernorm bf16 1.05x,
softmax bf16 1.02x, the others within 1%. A contract program keeps 64 bits: 32-bit offsets made every tensor-core
GEMM of the suite 3-7% slower in the same run (cause not investigated).

Declaration of the ``resource_binding`` group (SPEC PASS-1; run by the optimizer right after ``tile_binding``,
:mod:`intent_eqsat.optimizer.passes`):

- Reads: a decoded kernel with its tile parameters bound; the target; the problem sizes.
- Legality: the model's threads within the target's limits; ``index_bits 32`` only where the launch proves every
  index below 2**31 (:mod:`intent_eqsat.ir.index_bounds`). A kernel the model rejects (infinite cost) is returned
  unchanged (the provider's defaults apply; the verifier and the provider's legality still decide).
- Rewrites: ``space.threads``, ``space.stages`` and ``space.index_bits`` only.
- Preserves: every op, value, effect and the ABI (launch resources change how the program runs, not what it computes).
- Invalidates: nothing the later passes read.
- Verifier: the shared GPU verifier on the bound kernel.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from intent_eqsat.ir.core import Kernel


def bind_resources(kernel: Kernel, target: Any, sizes: Mapping[str, int] | None = None, *,
                   provider: str | None = None, cost_params: Any = None) -> Kernel:
    """``kernel`` with ``space.threads`` = the model's warps x the target's warp size, ``space.stages`` = the
    model's pipeline stages, at problem ``sizes``, and ``space.index_bits`` (32 unless the program has a tensor-core
    contract)."""
    from intent_eqsat.extract.cost import DEFAULT_PARAMS, estimate
    from intent_eqsat.providers.targets import get_target
    tgt = get_target(target)
    cp = cost_params if cost_params is not None else DEFAULT_PARAMS
    breakdown = estimate(kernel, tgt, sizes, provider=provider, cost_params=cp)
    if not math.isfinite(breakdown.total) or not breakdown.warps:
        return kernel
    threads = int(breakdown.warps) * int(tgt.warp_size)
    index_bits = 64 if breakdown.flops_tensor > 0 else 32
    return replace(kernel, space=replace(kernel.space, threads=threads, stages=int(cp.pipeline_stages),
                                         index_bits=index_bits))


__all__ = ["bind_resources"]
