"""Tile-size parameters: rules build parameterized fragments, the optimizer binds them (SPEC PASS-3.3, PASS-6).

Blocking and contraction write tile sizes as the symbols ``TILE_B0``, ``TILE_B1`` (ownership tiles of the two
blocked program axes) and ``TILE_K`` (the contraction's reduction tile); ``rulebooks.reduction`` writes ``TILE_R``
(the members of an ordinary reduction loop taken per iteration) and ``rulebooks.online_tiles`` ``TILE_N`` (the keys a
summary loop takes per iteration: the flash-attention key tile). One lifted body then serves every size, so the e-graph
holds one variant per *structure* instead of one per structure and size (egglog's cost grows with both).

Extraction compares structures at the domains' middle values (:func:`defaults`); afterwards :func:`choose` costs
the extracted kernel at every binding of the parameters it uses (the cost model evaluates the symbols from its
size environment, so nothing is rebuilt), and :func:`bind` writes the best binding into the kernel as literals.
The other bindings, ranked, are the optimizer's parameter candidates (the provider's Config set).

Domains come from the target: ownership tiles are the tile candidates at least as wide as the target's warp (a
narrower tile leaves lanes idle on every target; ``TILE_N`` too); the contraction tile is a candidate in [16, 128] (a matrix unit
needs K >= 16; larger K tiles cost shared memory and pay on skinny problems: 64x4096x4096 ran 1.3x faster with
K tiles of 128 than 64 on the H200, bench/results/h200_sweep_2026-11-30); a reduction-loop tile is an ownership candidate (its
members are lanes of one fragment), and at binding, with sizes, also wider up to :data:`MEMBER_WIDE_MAX` for loops
longer than every sized extent (:func:`binding_domains`).

Declaration of the ``tile_binding`` group (SPEC PASS-1; run by the optimizer after the last extraction, listed
with the other groups by ``rules list``, :mod:`intent_eqsat.optimizer.passes`):

- Reads: the extracted kernel's uses of the tile parameters (``TILE_B0``, ``TILE_B1``, ``TILE_K``, ``TILE_R``,
  ``TILE_N``), the target's tile domains, the cost model at the problem sizes, and a tuning file's measured
  bindings of the same structure (``extract.calibration``).
- Legality: every binding costed is in the target's domains and within the cost model's resource limits (an
  illegal one costs infinity and is never chosen); the kernel must not use the parameter names itself.
- Rewrites: each tile parameter becomes the literal of the best-costed binding (:func:`bind`); loops that now run
  exactly once are inlined (``ir.single_trip``).
- Preserves: every value (the lifted bodies are correct for every tile size; masks cover the tails), effects, the
  ABI, the program space's structure.
- Invalidates: the tile parameter declarations (none is left), loop trip counts, fragment shapes.
- Verifier: the shared GPU verifier on the bound kernel, without tile parameter declarations.
"""
from __future__ import annotations

import itertools
import math
import re
from typing import Any, Callable, Mapping, Sequence

from intent_eqsat.ir.core import Kernel, Module, ParamDecl
from intent_eqsat.ir.parser import parse_module
from intent_eqsat.ir.printer import print_module
from intent_eqsat.ir.single_trip import inline_single_trip_loops

OWNERSHIP = ("TILE_B0", "TILE_B1")
REDUCTION = ("TILE_K",)
MEMBERS = ("TILE_R",)
#: the key tile of a summary loop taken a tile at a time (``rulebooks.online_tiles``)
KEYS = ("TILE_N",)
NAMES = OWNERSHIP + REDUCTION + MEMBERS + KEYS
K_MIN, K_MAX = 16, 128
_WORD = re.compile(r"\b(" + "|".join(NAMES) + r")\b")


def domains(target: Any, candidates: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """Candidate values of each tile parameter on ``target`` (``candidates``: the target's tile-size domain)."""
    cands = tuple(sorted(set(int(c) for c in candidates)))
    warp = int(getattr(target, "warp_size", 32) or 32)
    own = tuple(c for c in cands if c >= warp) or (cands[-1],)
    red = tuple(c for c in cands if K_MIN <= c <= K_MAX) or (min(cands, key=lambda c: abs(c - 32)),)
    return {**{n: own for n in OWNERSHIP + MEMBERS + KEYS}, **{n: red for n in REDUCTION}}


#: the largest member count a sized candidate may give one fragment axis (a whole row of a known extent)
SIZED_MAX = 16384
#: the widest member tile (``TILE_R``) offered for a reduction longer than every sized row: a statistic over
#: several axes flattened into one loop of ``N*H*W`` members runs one dependent step per tile, so 256-member tiles
#: made BatchNorm2d's 100k-member statistics a chain of ~400 steps per program. Measured on an H100 (2026-12-06,
#: docs/perf.md "Wider member tiles"): 4096-member tiles made BatchNorm2d, GroupNorm and LayerNorm(C,H,W) 1.6-2.0x
#: faster than 256; a 4096-lane f32 tile is 32 registers per thread at 4 warps. The model's warp rule gives these
#: tiles too few warps (GroupNorm(8) at 8x96x20x20 ran 1.7x slower at one warp, 1.4x faster than before at four)
MEMBER_WIDE_MAX = 4096


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def member_extent(kernel: Kernel, sizes: Mapping[str, int] | None) -> int | None:
    """The most members any loop stepping by ``TILE_R`` takes at ``sizes`` (its ``ub - lb``, from ``launch``
    values combined by ``add``/``sub``/``mul``), or None when a bound cannot be evaluated there (or no sizes, or
    no such loop). :func:`binding_domains` offers no member tile wider than the power of two at or above it: a
    wider tile would only mask more lanes of the loop it tiles (a bound on the candidates, and on their costing,
    not a measured effect)."""
    if not sizes:
        return None
    from intent_eqsat.ir.core import walk
    from intent_eqsat.ir.launch import Sym, evaluate
    defs = {v.name: op for op in walk(kernel.body) for v in op.results}

    def value(name: str) -> int | None:
        op = defs.get(name)
        if op is None:
            return None
        if op.name == "launch":
            try:
                return int(evaluate(op.attrs["expr"], sizes))
            except Exception:  # noqa: BLE001 - a symbol the sizes do not give (a tile parameter, a stride)
                return None
        if op.name in ("add", "sub", "mul") and len(op.operands) == 2:
            a, b = (value(o.name) for o in op.operands)
            if a is None or b is None:
                return None
            return a + b if op.name == "add" else a - b if op.name == "sub" else a * b
        return None

    most = None
    for op in walk(kernel.body):
        if op.name != "for" or len(op.operands) < 3:
            continue
        step = defs.get(op.operands[2].name)
        if step is None or step.name != "launch" or step.attrs.get("expr") != Sym("TILE_R"):
            continue
        lb, ub = value(op.operands[0].name), value(op.operands[1].name)
        if lb is None or ub is None:
            return None
        most = max(most or 0, ub - lb)
    return most


def binding_domains(doms: Mapping[str, Sequence[int]], target: Any,
                    sizes: Mapping[str, int] | None = None, *,
                    members: int | None = None) -> dict[str, tuple[int, ...]]:
    """The values :func:`choose` tries: the domains, plus row tiles narrower than a warp for ``TILE_B0`` (a member
    tile can fill the lanes: :func:`choose` tries them only with ``TILE_R`` and skips bindings whose tiles together
    are narrower than a warp), plus,
    when the problem ``sizes`` are known, each extent rounded up to a power of two (up to :data:`SIZED_MAX`) for
    ``TILE_B1`` and ``TILE_R`` (a whole row per fragment: one pass fetches it and later passes re-read it from L2).
    With sizes, ``TILE_R`` also takes the powers of two above both its domain and every sized extent, up to
    :data:`MEMBER_WIDE_MAX` and the power of two at or above ``members`` (:func:`member_extent`: the longest loop
    a member tile tiles; the product of the sizes when not known): member tiles for reductions longer than any
    whole row the sizes offer (a flattened statistic over several axes). None at or below a sized extent: a row
    held whole in one fragment is read once and reused from registers by the later passes over it, which the
    model does not see (it ranked a 2048-member loop over a 4096 row within 1.3% of the whole row, which ran 1.45x
    faster: InstanceNorm1d, H100, 2026-12-06); and extents above :data:`SIZED_MAX` count too (with 512-4096
    member tiles offered, a 32768-column cumsum lost its carried-prefix program).
    Structures are still compared at :func:`defaults` of the plain domains."""
    warp = int(getattr(target, "warp_size", 32) or 32)
    out = {n: tuple(d) for n, d in doms.items()}
    if "TILE_B0" in out:
        out["TILE_B0"] = tuple(sorted(set(out["TILE_B0"]) | {1 << i for i in range(warp.bit_length() - 1)}))
    sized = {_next_pow2(v) for v in (sizes or {}).values() if isinstance(v, int) and v > 0}
    for n in ("TILE_B1", "TILE_R"):
        if n in out:
            extra = {v for v in sized if max(out[n]) < v <= SIZED_MAX}
            out[n] = tuple(sorted(set(out[n]) | extra))
    if "TILE_R" in out and sized:
        above = max(list(sized) + list(out["TILE_R"]))
        longest = _next_pow2(members if members is not None else
                             math.prod(v for v in (sizes or {}).values() if isinstance(v, int) and v > 0))
        wide = {1 << i for i in range(above.bit_length(), MEMBER_WIDE_MAX.bit_length()) if 1 << i <= longest}
        out["TILE_R"] = tuple(sorted(set(out["TILE_R"]) | wide))
    return out


def defaults(doms: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """The value each parameter takes while structures are compared (the middle of its domain)."""
    return {n: int(sorted(d)[(len(d) - 1) // 2]) for n, d in doms.items()}


def decls(doms: Mapping[str, Sequence[int]]) -> list[ParamDecl]:
    """Parameter declarations (what the verifier needs to accept a kernel that still holds the symbols)."""
    dflt = defaults(doms)
    return [ParamDecl(n, dflt[n], tuple(doms[n])) for n in NAMES]


def used(kernel: Kernel) -> list[str]:
    """The tile parameters a kernel mentions, in :data:`NAMES` order."""
    found = set(_WORD.findall(_text(kernel)))
    return [n for n in NAMES if n in found]


def _text(kernel: Kernel) -> str:
    from intent_eqsat.ir.printer import format_kernel
    return "\n".join(format_kernel(kernel, 0))


def choose(kernel: Kernel, doms: Mapping[str, Sequence[int]], cost_of: Callable[[Mapping[str, int]], float],
           *, keep: int = 8, min_lanes: int = 1) -> list[tuple[float, dict[str, int]]]:
    """Every binding of the parameters ``kernel`` uses, costed by ``cost_of(binding)``, cheapest first (ties: the
    binding with smaller tiles first, so the order is deterministic); at most ``keep`` (always the best). A binding
    whose ownership and member tiles together hold fewer than ``min_lanes`` members (a warp leaves lanes idle) is
    not tried, and a tile axis narrower than ``min_lanes`` only in a program that reduces a member tile
    (``TILE_R``): the model ignores per-program overhead and coalescing, which narrow tiles of other programs pay
    (a 4x32 transpose tile was its pick without this). When these exclude every binding (a domain of narrow tiles
    only), every binding is tried."""
    names = used(kernel)
    if not names:
        return [(cost_of({}), {})]
    ranked = []
    combos = [dict(zip(names, (int(c) for c in combo))) for combo in itertools.product(*(sorted(doms[n])
                                                                                         for n in names))]

    def narrow(binding: dict[str, int]) -> bool:
        return too_narrow(binding, min_lanes)

    # the lane filters are preferences: a domain they exclude entirely (tile candidates all narrower than a warp)
    # is still costed, whole
    wide = [b for b in combos if not narrow(b)] or combos
    for binding in wide:
        c = cost_of(binding)
        ranked.append((c if c == c else math.inf, binding))
    ranked.sort(key=lambda cb: (cb[0], tuple(cb[1][n] for n in names)))
    return ranked[:keep]


def too_narrow(binding: Mapping[str, int], min_lanes: int) -> bool:
    """Whether :func:`choose` skips ``binding``: its ownership and member tiles together hold fewer than
    ``min_lanes`` members, or one of them is narrower than ``min_lanes`` in a program without a member tile."""
    lanes = [n for n in binding if n in OWNERSHIP + MEMBERS]
    if lanes and math.prod(binding[n] for n in lanes) < min_lanes:
        return True
    # a narrow row tile only where a member tile of a reduction fills the lanes
    return "TILE_R" not in binding and any(binding[n] < min_lanes for n in lanes)


def bind(kernel: Kernel, binding: Mapping[str, int], module: Module) -> Kernel:
    """``kernel`` with the tile parameters replaced by literals (through the exact text form: every LaunchExpr,
    fragment type and launch value that names them is re-read and simplified), then every loop whose now constant
    bounds give exactly one iteration replaced by its body (:mod:`intent_eqsat.ir.single_trip`: a reduction tile
    as wide as a constant extent). The optimizer splits the tile loops' tails after it bound the launch resources
    (:mod:`intent_eqsat.ir.tail_split`: the resource model costs one copy of each loop body)."""
    if not binding:
        return kernel
    params = [p for p in module.params if p.name not in NAMES]
    text = print_module(Module(module.target, module.options, params, [kernel]))
    bound = _WORD.sub(lambda m: str(int(binding[m.group(1)])) if m.group(1) in binding else m.group(1), text)
    return inline_single_trip_loops(parse_module(bound).kernels[0])


__all__ = ["NAMES", "OWNERSHIP", "REDUCTION", "MEMBERS", "KEYS", "SIZED_MAX", "MEMBER_WIDE_MAX", "member_extent", "domains", "binding_domains", "defaults", "decls", "used", "choose", "too_narrow", "bind"]
