"""Ahead-of-time compilation of a loaded generated Triton module for a target, with no GPU (DESIGN.md)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from intent_eqsat.providers.targets import Target, get_target


def compile_aot(mod: ModuleType, target: "Target | str", params: dict[str, int] | None = None, *,
                index_bits: int = 32, **options: Any):
    """``triton.compile(ASTSource(KERNEL, SIGNATURE, PARAMS), target=GPUTarget(...))`` with the module's launch
    options (num_warps, num_stages, enable_fp_fusion=True; libdevice FTZ off on CUDA). Returns the compiled
    kernel (``.asm`` holds ttir/ttgir/llir/ptx or amdgcn). A module whose index arithmetic may be narrowed
    (``INDEX_CONSTEXPR``) is compiled with ``index_bits``-wide index arithmetic (32: the variant its launcher picks
    whenever the index bounds hold)."""
    import triton
    import triton.language as tl
    from triton.compiler import ASTSource

    target = get_target(target)
    constexprs = dict(mod.PARAMS)
    if params:
        constexprs.update(params)
    if getattr(mod, "INDEX_CONSTEXPR", None):
        constexprs[mod.INDEX_CONSTEXPR] = {32: tl.int32, 64: tl.int64}[index_bits]
    opts = dict(mod.LAUNCH_OPTIONS)
    if target.triton_backend == "cuda":
        opts["enable_reflect_ftz"] = False
    opts.update(options)
    src = ASTSource(mod.KERNEL, dict(mod.SIGNATURE), constexprs=constexprs)
    return triton.compile(src, target=target.triton_target, options=opts)


__all__ = ["compile_aot"]
