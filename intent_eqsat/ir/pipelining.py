"""Which loops the provider compilers software-pipeline: loads in a loop's body that feed a matrix-unit operand
(issue 22 item 2: the fact the post-binding passes used to approximate by "the loop holds a ``contract``").

The fact: Triton's pipeliner (``AssignLatencies`` / ``loadOpsToIndirectionLevel``, Triton 3.x) starts from each
``tt.dot`` in a ``scf.for`` body and walks its A and B operands backwards through ops *of the same block*; the
``tt.load`` ops it reaches get a latency and are issued ``num_stages - 1`` iterations ahead (a loop without such a
load is not pipelined unless it carries an explicit ``num_stages``, which our serializer never prints). cuTile's
compiler (tileiras) is not available here to confirm its rule; the same fact is assumed for it. So a loop is
*software-pipelined* when a load in its body reaches operand 0 or 1 of a ``contract`` in the same body, through
ops of that body (the accumulator operand does not count); a ``contract`` in a nested loop makes the nested loop
pipelined, not this one. ``through`` names nested loops to look into as if they were inlined (what
``ir.unswitch`` does to a loop that runs once).

What the passes read from it:

- ``ir.tail_split`` splits the tail off pipelined loops only (the measured gain is a select on every tile of a
  pipelined key loop; GEMM K loops, whose checks only mask loads, are left by the select condition);
- ``ir.unswitch`` inlines single-trip inner loops where that makes the outer loop pipelined (the inner loop
  blocked the pipelining of the loads that feed it), and leaves pipelined loops out of the sibling-loop rewrite.
"""
from __future__ import annotations

from typing import Callable

from intent_eqsat.ir.core import Op, Region

#: the operands of a ``contract`` the pipeliner walks from (A and B; operand 2 is the accumulator)
MATRIX_UNIT_OPERANDS = (0, 1)


def pipelined_loads(loop: Op, through: Callable[[Op], bool] = lambda op: False) -> list[Op]:
    """The loads of ``loop``'s body (and of the nested loops ``through`` accepts, as if inlined) from which a
    ``contract``'s A or B operand is reached through ops of the same body."""
    if loop.name != "for" or not loop.regions:
        return []
    ops: list[Op] = []

    def flatten(region: Region) -> None:
        for op in region.ops:
            ops.append(op)
            if op.name == "for" and through(op):
                for r in op.regions:
                    flatten(r)
    flatten(loop.regions[0])
    producer = {v.name: op for op in ops for v in op.results}
    found: dict[int, Op] = {}
    seen: set[int] = set()
    work = [producer[op.operands[i].name] for op in ops if op.name == "contract"
            for i in MATRIX_UNIT_OPERANDS if i < len(op.operands) and op.operands[i].name in producer]
    while work:
        op = work.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.name in ("load", "gather", "buffer_load"):
            found[id(op)] = op
        work.extend(producer[v.name] for v in op.operands if v.name in producer)
    return [op for op in ops if id(op) in found]


def software_pipelined(loop: Op, through: Callable[[Op], bool] = lambda op: False) -> bool:
    """``loop`` is software-pipelined by the provider compiler (module docstring); ``through``: nested loops
    considered inlined."""
    return bool(pipelined_loads(loop, through))


__all__ = ["pipelined_loads", "software_pipelined", "MATRIX_UNIT_OPERANDS"]
