"""Choose a program's launch resources (threads per program, pipeline stages, index width) from the cost model.

The cost model already decides how many warps a program needs (its largest fragment over ``elems_per_thread``
members per thread, at most ``CostParams.max_warps``; more where few programs share an SM and the extra warps
issue its ALU work faster, ``CostParams.issue_warps``) and costs registers, occupancy and shared memory with that
choice (``pipeline_stages`` buffered copies of every contract's operands). The program must then be launched the
way it was costed: this module returns the same numbers as the kernel's
:class:`~intent_eqsat.providers.launch_resources.LaunchResources`, a provider-local binding the optimizer hands on
beside the program (SPEC PASS-6 side information, IR-11: not a field of the common program; TGT-7 "all physical
parameters bound to constexpr/Config"), and the provider maps them onto its launch options at serialization.

Index width: a program the cost model gives no matrix-unit work (``flops_tensor``) is bound ``index_bits 32``
(32-bit index arithmetic wherever the launch proves it exact, :mod:`intent_eqsat.ir.index_bounds`): its element
offsets are computed per member of every tile it streams (the likely reason 32 bits pay: 64-bit integer multiplies
take issue slots). Measured on the H200
(2026-11-30, bench/results/h200_index_2026-11-30/): whole-row softmax f32 1.07x faster, layernorm bf16 1.05x,
softmax bf16 1.02x, the others within 1%. A program with matrix-unit work takes the cost parameter
``matrix_unit_index_bits`` (64): 32-bit offsets made every tensor-core GEMM of the suite 3-7% slower in the same run
(cause not investigated; a measured term, not a legality fact).

Not a transformation group (issue 22 item 3): the program is not rewritten. It reads a decoded kernel with its
tile parameters bound, the target and the problem sizes; a kernel the model rejects (infinite cost) gets None (the
provider's defaults apply; the verifier and the provider's legality still decide). ``index_bits 32`` is a
permission: the launcher uses 32 bits only where the launch proves every index below 2**31
(:mod:`intent_eqsat.ir.index_bounds`). The optimizer lays a tuning file's measured launch over the modelled one
(``optimizer.optimize``).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from intent_eqsat.ir.core import Kernel
from intent_eqsat.providers.launch_resources import LaunchResources


def launch_resources(kernel: Kernel, target: Any, sizes: Mapping[str, int] | None = None, *,
                     provider: str | None = None, cost_params: Any = None) -> LaunchResources | None:
    """``threads`` = the model's warps x the target's warp size, ``stages`` = the model's pipeline stages, at
    problem ``sizes``, and ``index_bits`` (32, or the cost parameter ``matrix_unit_index_bits`` for a program the
    model gives matrix-unit work); None where the model rejects the kernel."""
    from intent_eqsat.extract.cost import DEFAULT_PARAMS, estimate
    from intent_eqsat.providers.targets import get_target
    tgt = get_target(target)
    cp = cost_params if cost_params is not None else DEFAULT_PARAMS
    breakdown = estimate(kernel, tgt, sizes, provider=provider, cost_params=cp)
    if not math.isfinite(breakdown.total) or not breakdown.warps:
        return None
    threads = int(breakdown.warps) * int(tgt.warp_size)
    index_bits = int(cp.matrix_unit_index_bits) if breakdown.flops_tensor > 0 else 32
    return LaunchResources(threads=threads, stages=int(cp.pipeline_stages), index_bits=index_bits)


__all__ = ["launch_resources"]
