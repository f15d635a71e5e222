"""Plausible sizes for shape symbols by the role their indices play (issue 24 item 4, the defaults part).

The cost model takes every size symbol the caller did not give at ``CostParams.default_size`` (1024). For most
symbols that is a reasonable guess of a problem dimension, but not for a convolution window: a kernel written
with ``Wt: f32[F, C, KH, KW]`` was costed as if its filters were 1024x1024 (issue 24 measured 1.2e9 s for a
conv). A symbol is a **window extent** when it is the extent of a reduction index that appears in a subscript
together with a free (output) index -- ``X[n, c, h*s + kh*d - p, ...]``: the reduced index slides a window over
an output coordinate -- and the subscript does not itself read the symbol: ``X[n, g*CPG + c]`` with ``c in
0..CPG`` splits the axis into groups of CPG (a group of channels, not a window). Such symbols default to
:data:`WINDOW_DEFAULT`. The rule reads only the KIR analysis (domains and coordinate provenance), never kernel or
symbol names; a size the caller gives always wins.
"""
from __future__ import annotations

import re
from typing import Mapping

from intent_eqsat.kir import model as m
from intent_eqsat.kir.analysis import analyze
from intent_eqsat.kir.poly import Poly

#: the window extent assumed when the caller gives none (3x3 filters are the common case)
WINDOW_DEFAULT = 3


def _names(subscript: str) -> set[str]:
    """The identifiers of a printed subscript expression."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", subscript))


def window_symbols(module: m.KirModule) -> set[str]:
    """The size symbols of ``module`` that are window extents (see the module docstring)."""
    out: set[str] = set()
    for k in analyze(module).kernels.values():
        free_uses = {(u.access, u.axis) for key, d in k.domains.items() if d.role == "free"
                     for u in k.provenance.get(key, ()) if not u.direct}
        for key, d in k.domains.items():
            if d.role != "reduce":
                continue
            syms = [name for name in k.symbols if d.extent == Poly.atom(name)]
            if not syms:
                continue
            if any(not u.direct and (u.access, u.axis) in free_uses and syms[0] not in _names(u.subscript)
                   for u in k.provenance.get(key, ())):
                out.add(syms[0])
    return out


def assumed_sizes(module: m.KirModule, given: Mapping[str, int] | None) -> dict[str, int]:
    """The sizes assumed for symbols the caller did not give, by role (window extents only, for now)."""
    given = given or {}
    return {s: WINDOW_DEFAULT for s in sorted(window_symbols(module)) if s not in given}


__all__ = ["window_symbols", "assumed_sizes", "WINDOW_DEFAULT"]
