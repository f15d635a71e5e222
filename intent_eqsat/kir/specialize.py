"""Value specialization of shape symbols: a KIR kernel with some of its size symbols fixed to values (SPEC IR-2,
"one physical kernel per KIR specialization").

A size symbol the user expects to take a few values (an attention head dimension) can be fixed per value: the
specialized kernel is the same comprehension with the symbol written as a literal extent, so everything the compiler
decides from constant extents (a head-dimension contraction of one tile, masks that are statically all-true, loop
trip counts) applies to it. The generated launcher picks the specialized kernel when the launch's shapes give the
symbol that value, and the general kernel otherwise (``providers.triton.serializer``), so the module still serves
every size.

The specialized kernel is named ``<kernel>__<values>`` (``attention__D64``) and numbered like any kernel of that
name (``kir.ids``: ids are positional, so its statements are ``attention__D64.s0 ...`` and an IR kernel's origin
names the specialization); its nodes keep their source locations, so a diagnostic points at the user's text. Index,
let and local names may not equal a shape symbol (``infer.py``), so every bare ``Name`` of the symbol in the body is
the symbol.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterable, Mapping, Sequence

from intent_eqsat.errors import KirError
from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import dim_symbols, fold_dim
from intent_eqsat.kir.ids import assign_ids, replace_children

#: the most specialized kernels one request may make (each is a full compile)
MAX_SPECIALIZATIONS = 16


def shape_symbols(kernel: m.Kernel) -> list[str]:
    """The kernel's size symbols in order of first appearance in its parameters' dims."""
    out: list[str] = []
    for p in kernel.params:
        for dim in p.dims or ():
            for f in dim_symbols(dim):
                if f not in out:
                    out.append(f)
    return out


def specialization_suffix(values: Mapping[str, int]) -> str:
    """``{"D": 64}`` -> ``"D64"``: the part of a specialized kernel's name that names its values."""
    return "_".join(f"{s}{int(v)}" for s, v in values.items())


def specialization_label(values: Mapping[str, int]) -> str:
    """``{"D": 64, "H": 8}`` -> ``"D=64, H=8"``."""
    return ", ".join(f"{s}={int(v)}" for s, v in values.items())


def combinations(kernel: m.Kernel, request: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """The value assignments ``request`` (symbol -> values) asks of ``kernel``: the cartesian product over the
    requested symbols the kernel has, in the kernel's symbol order; ``[]`` when it has none of them.

    Raises :class:`KirError` for a value below 1 (an extent of 0 launches nothing: the general kernel serves it)
    or for more than :data:`MAX_SPECIALIZATIONS` assignments."""
    syms = [s for s in shape_symbols(kernel) if s in request]
    if not syms:
        return []
    lists: list[list[int]] = []
    for s in syms:
        values: list[int] = []
        for v in request[s]:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise KirError(f"kernel {kernel.name!r}: a specialization of shape symbol {s!r} must be an integer "
                               f">= 1, got {v!r}", kernel.loc)
            if v not in values:
                values.append(v)
        lists.append(values)
    out = [dict(zip(syms, combo)) for combo in itertools.product(*lists)]
    if len(out) > MAX_SPECIALIZATIONS:
        raise KirError(f"kernel {kernel.name!r}: {len(out)} specializations requested, at most "
                       f"{MAX_SPECIALIZATIONS}", kernel.loc)
    return out


def specialize_kernel(kernel: m.Kernel, values: Mapping[str, int], name: str | None = None) -> m.Kernel:
    """``kernel`` with each symbol of ``values`` replaced by its value (dims and body), named ``name`` (default
    ``<kernel>__<suffix>``). Raises :class:`KirError` for a symbol the kernel does not have."""
    have = shape_symbols(kernel)
    unknown = [s for s in values if s not in have]
    if unknown:
        raise KirError(f"kernel {kernel.name!r} has no shape symbol {', '.join(map(repr, unknown))} "
                       f"(its shape symbols: {', '.join(have) or 'none'})", kernel.loc)
    vals = {s: int(v) for s, v in values.items()}
    params = tuple(dataclasses.replace(p, dims=tuple(fold_dim(d, vals) for d in p.dims))
                   if p.dims is not None else p for p in kernel.params)
    body = tuple(_substitute(s, vals) for s in kernel.body)
    new_name = name or f"{kernel.name}__{specialization_suffix(vals)}"
    return dataclasses.replace(kernel, name=new_name, params=params, body=body)


def specialize(module: m.KirModule, kernel_name: str, values: Mapping[str, int],
               name: str | None = None) -> m.KirModule:
    """A module holding the module's combiners and the specialized kernel (see :func:`specialize_kernel`), its ids
    assigned (``kir.ids``)."""
    kernel = module.kernel(kernel_name)
    items: Iterable[m.Kernel | m.Combiner] = (*module.combiners, specialize_kernel(kernel, values, name))
    return assign_ids(dataclasses.replace(module, items=tuple(items)))


def _substitute(node: m.Node, values: Mapping[str, int]) -> m.Node:
    if isinstance(node, m.Name) and node.name in values:
        return m.Num(str(values[node.name]), "int", id=node.id, loc=node.loc)
    return replace_children(node, lambda c: _substitute(c, values))


__all__ = ["MAX_SPECIALIZATIONS", "combinations", "shape_symbols", "specialization_label", "specialization_suffix",
           "specialize", "specialize_kernel"]
