"""Ahead-of-time compilation of a loaded generated Triton module for a target, with no GPU (DESIGN.md)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from intent_eqsat.providers.targets import Target, get_target


def compile_aot(mod: ModuleType, target: "Target | str", params: dict[str, int] | None = None, **options: Any):
    """``triton.compile(ASTSource(KERNEL, SIGNATURE, PARAMS), target=GPUTarget(...))`` with the module's launch
    options (num_warps, num_stages, enable_fp_fusion=True; libdevice FTZ off on CUDA). Returns the compiled
    kernel (``.asm`` holds ttir/ttgir/llir/ptx or amdgcn)."""
    import triton
    from triton.compiler import ASTSource

    target = get_target(target)
    constexprs = dict(mod.PARAMS)
    if params:
        constexprs.update(params)
    opts = dict(mod.LAUNCH_OPTIONS)
    if target.triton_backend == "cuda":
        opts["enable_reflect_ftz"] = False
    opts.update(options)
    src = ASTSource(mod.KERNEL, dict(mod.SIGNATURE), constexprs=constexprs)
    return triton.compile(src, target=target.triton_target, options=opts)


__all__ = ["compile_aot"]
