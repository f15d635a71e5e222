"""A loop that runs exactly once is its body (SPEC PASS-4 "blocking loops", IR-5): run after the tile parameters
are bound, when a blocking loop's trip count becomes a known constant.

Why: a reduction tile as wide as a constant extent (attention's head dimension written as a literal, ``D = 64``
with ``TILE_K = 64``) leaves ``for k0 in [0, 64) step 64`` in the program. The loop costs nothing by itself, but a
provider compiler sees a loop nest: Triton software-pipelines only the innermost loop, so the flash-attention key
loop around the one-step head-dim loop kept its key/value loads unpipelined and re-loaded the query tile inside
the nest (H200, 2026-11-30: a hand-written kernel of the same form without the head-dim loop ran 1.46-1.48x faster
than the compiled program with it; docs/perf.md).

Declaration (SPEC PASS-1):

- Reads: ``for`` ops whose lower bound, upper bound and step are constants (``launch`` of a constant LaunchExpr or
  an index ``const``), after :func:`intent_eqsat.optimizer.tiles.bind` wrote the tile sizes as literals.
- Legality: step > 0 and ``lb < ub <= lb + step`` (exactly one iteration); no ``narrowing`` attribute (a narrowed
  loop keeps its range proof where the verifier looks for it).
- Rewrites: the loop op is replaced by its body's ops; the induction variable becomes the lower bound, each carried
  argument its initial value, and every use of a loop result the value its ``yield`` gives. Nested loops are
  visited inside out in one walk (a loop inlined into its parent is visited with the parent's ops).
- Preserves: every value the program computes (one iteration of the body with the same operands), effects and their
  order, the ABI, the program space, origins of the inlined ops.
- Invalidates: the loop's ``reduce`` mark (no loop is left to mark), loop nesting depth.
- Verifier: the shared GPU verifier runs on the bound kernel after this pass (``optimizer.optimize``).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from intent_eqsat.ir.core import Kernel, Op, Region, Value, walk
from intent_eqsat.ir.launch import Const, simplify


def constant_ints(kernel: Kernel) -> dict[str, int]:
    """SSA name -> integer, for every index value the kernel defines as a constant."""
    out: dict[str, int] = {}
    for op in walk(kernel.body):
        if len(op.results) != 1:
            continue
        expr = op.attrs.get("expr") if op.name == "launch" else None
        if expr is not None:
            expr = simplify(expr)
            if isinstance(expr, Const) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
                out[op.result.name] = int(expr.value)
        elif op.name == "const" and str(op.result.type) == "index" and isinstance(op.attrs.get("value"), int):
            out[op.result.name] = int(op.attrs["value"])
    return out


def runs_once(op: Op, constants: dict[str, int]) -> bool:
    """``op`` is a ``for`` whose constant bounds and step give exactly one iteration."""
    if op.name != "for" or "narrowing" in op.attrs:
        return False
    bounds = [constants.get(v.name) for v in op.operands[:3]]
    if any(b is None for b in bounds):
        return False
    lb, ub, step = bounds
    return step > 0 and lb < ub <= lb + step


def inline_single_trip_loops(kernel: Kernel) -> Kernel:
    """``kernel`` with every loop that runs exactly once replaced by its body (see the module docstring)."""
    constants = constant_ints(kernel)
    body = Region(list(kernel.body.args), inline_loops(kernel.body, lambda op: runs_once(op, constants)))
    return replace(kernel, body=body)


def inline_loops(region: Region, once: Callable[[Op], bool]) -> list[Op]:
    """``region``'s ops with every ``for`` that ``once`` accepts replaced by its body, run once: the induction
    variable becomes the lower bound, each carried argument its initial value, and every use of a loop result the
    value its ``yield`` gives. Nested loops are visited inside out in one walk. The caller guarantees that each
    accepted loop runs exactly once where this region runs (constant bounds, or a guard: ``ir.unswitch``)."""
    subst: dict[str, Value] = {}

    def sub(v: Value) -> Value:
        return subst.get(v.name, v)

    def rewrite(reg: Region) -> list[Op]:
        ops: list[Op] = []
        for op in reg.ops:
            operands = [sub(v) for v in op.operands]
            if op.name == "for" and once(op):
                body = op.regions[0]
                subst[body.args[0].name] = operands[0]
                for arg, init in zip(body.args[1:], operands[3:]):
                    subst[arg.name] = init
                inner = rewrite(body)
                yielded = inner.pop()              # the body's terminator: its operands are the loop's results
                assert yielded.name == "yield", f"a for body ends in {yielded.name}, not yield"
                ops.extend(inner)
                for res, val in zip(op.results, yielded.operands):
                    subst[res.name] = val
                continue
            ops.append(replace(op, operands=operands,
                               regions=[Region(list(r.args), rewrite(r)) for r in op.regions]))
        return ops

    return rewrite(region)


__all__ = ["constant_ints", "inline_loops", "inline_single_trip_loops", "runs_once"]
