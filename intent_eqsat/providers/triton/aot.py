"""Ahead-of-time compilation of a loaded generated Triton module for a target, with no GPU (DESIGN.md)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

from intent_eqsat.providers.targets import Target, get_target


def compile_aot(mod: ModuleType, target: "Target | str", params: dict[str, int] | None = None, *,
                index_bits: int = 32, prefix: str = "", **options: Any):
    """``triton.compile(ASTSource(KERNEL, SIGNATURE, PARAMS), target=GPUTarget(...))`` with the module's launch
    options (num_warps, num_stages, enable_fp_fusion=True; libdevice FTZ off on CUDA). Returns the compiled
    kernel (``.asm`` holds ttir/ttgir/llir/ptx or amdgcn). A module whose index arithmetic may be narrowed
    (``INDEX_CONSTEXPR``) is compiled with ``index_bits``-wide index arithmetic (32: the variant its launcher picks
    whenever the index bounds hold). ``prefix``: compile another kernel of the module, the one whose metadata
    names carry it (a KIR specialization's ``_D64_``, a size bucket variant's ``_bucket1_``)."""
    import triton
    import triton.language as tl
    from triton.compiler import ASTSource

    target = get_target(target)
    def meta(name: str) -> Any:
        return getattr(mod, prefix + name)

    constexprs = dict(meta("PARAMS"))
    if params:
        constexprs.update(params)
    if getattr(mod, prefix + "INDEX_CONSTEXPR", None):
        constexprs[meta("INDEX_CONSTEXPR")] = {32: tl.int32, 64: tl.int64}[index_bits]
    opts = dict(meta("LAUNCH_OPTIONS"))
    if target.triton_backend == "cuda":
        opts["enable_reflect_ftz"] = False
    opts.update(options)
    src = ASTSource(meta("KERNEL"), dict(meta("SIGNATURE")), constexprs=constexprs)
    return triton.compile(src, target=target.triton_target, options=opts)


__all__ = ["compile_aot"]
