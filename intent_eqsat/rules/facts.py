"""Compile options and target features as e-graph facts, so rules gate on data (DESIGN; SPEC PASS-1.1, TGT-2).

Relations (pinned egglog names; import them from here - a rulebook must not declare its own copy):

- ``OptNumerics(String)``: ``"source"`` or ``"relaxed_normalization"`` (exactly one row).
- ``OptOnline(i64)``: 1 when ``online_reduction`` is on, else 0.
- ``OptRemarks(i64)``: 1 when ``optimization_remarks`` is on, else 0.
- ``TileCand(i64)``: a tile/block-size candidate of the target (the physical-parameter domain rules draw from).
- ``GroupCand(i64)``: a group-size candidate of grouped program order (rows of tiles per group, PASS-3.2).
- ``TargetInt(String, i64)``: integer features (``warp_size``, ``sm_count``, ``smem_per_block``,
  ``registers_per_block``, ``max_threads_per_block``, ``max_grid_rank``).
- ``TargetHas(String)``: capabilities, ``"contract:<operand>:<accumulator>"``, ``"provider:<name>"``,
  ``"atomic:<kind>:<dtype>"``, ``"dtype:<dtype>"``.
- ``Remark(String, String)``: (message, location) a rule may derive; the optimizer reports every row as a remark
  (SPEC PASS-1.2: "adopted / disabled / missing numeric permission / conditions not met", at the op).

``RULE_OPTIONS`` names the compile options that become facts (the others, such as ``subscript_checks``, change
only how the constructed program spells its accesses, and no rule can read them).

A rule reads them as ordinary facts: ``rule(OptNumerics("relaxed_normalization"), ...)``; there is no negation, so a
rule for the default case matches ``OptNumerics("source")``.

Facts are inserted as egglog program text after the relations are declared through egglog-python's public
``function_size`` (which declares without inserting), like ``KernelGraph.add`` inserts the program: no value is built
through egglog-python's expression caches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from egglog import EGraph, String, i64, relation

from intent_eqsat.ir.core import CompileOptions

OptNumerics = relation("OptNumerics", String, egg_fn="OptNumerics")
OptOnline = relation("OptOnline", i64, egg_fn="OptOnline")
OptRemarks = relation("OptRemarks", i64, egg_fn="OptRemarks")
#: compile option ``fp32_contract`` (``ieee``, ``tf32``, ``bf16x3``): the precision an f32 contraction may take
OptFp32Contract = relation("OptFp32Contract", String, egg_fn="OptFp32Contract")
TileCand = relation("TileCand", i64, egg_fn="TileCand")
GroupCand = relation("GroupCand", i64, egg_fn="GroupCand")
TargetInt = relation("TargetInt", String, i64, egg_fn="TargetInt")
TargetHas = relation("TargetHas", String, egg_fn="TargetHas")
Remark = relation("Remark", String, String, egg_fn="Remark")

RELATIONS = (OptNumerics, OptOnline, OptRemarks, OptFp32Contract, TileCand, GroupCand, TargetInt, TargetHas, Remark)

#: tile sizes rules may choose from before the resource bound (powers of two)
BASE_TILE_SIZES = (16, 32, 64, 128, 256)
#: group sizes (tile rows per group) of grouped program order; the cost model's L2 reuse picks one
BASE_GROUP_SIZES = (4, 8, 16, 32)
_INT_FEATURES = ("warp_size", "sm_count", "smem_per_block", "registers_per_block", "max_threads_per_block",
                 "max_grid_rank")

#: the compile options rules read as facts (OptNumerics, OptOnline, OptRemarks)
RULE_OPTIONS = ("numerics", "online_reduction", "optimization_remarks", "fp32_contract")
#: rule options no rule reads together with another one (the audit varies them alone, ``audit.option_variants``)
ALONE_OPTIONS = ("fp32_contract",)


def tile_candidates(target: Any) -> tuple[int, ...]:
    """The target's tile-size domain: ``target.tile_candidates`` when the capability object declares one, else the
    powers of two in :data:`BASE_TILE_SIZES` whose 2:1 f32 accumulator tile ``[T, T/2]`` fits in half of one
    block's register file (``T*T/2*4 <= registers_per_block * 4 / 2`` bytes: 256 on a 64K-register block, so a
    128x256 tensor-core tile with 8 warps is a candidate; measured on the H200 the fastest of our GEMM tiles at
    4096^3 and 8192^3, bench/results/h200_sweep_2026-11-30). The cost model, not this domain, prefers one size and
    rejects the bindings whose footprint does not fit (256x256)."""
    own = getattr(target, "tile_candidates", None)
    if own:
        return tuple(sorted(int(x) for x in own))
    regs = int(getattr(target, "registers_per_block", 65536) or 65536)
    return tuple(t for t in BASE_TILE_SIZES if t * (t // 2) * 4 <= regs * 4 // 2)


def group_candidates(target: Any) -> tuple[int, ...]:
    """The grouped-order group sizes: ``target.group_candidates`` when the capability object declares them, else
    :data:`BASE_GROUP_SIZES`."""
    own = getattr(target, "group_candidates", None)
    if own:
        return tuple(sorted(int(x) for x in own))
    return BASE_GROUP_SIZES


@dataclass(frozen=True)
class Facts:
    """The facts of one optimization: compile options and the target's features."""

    numerics: str = "source"
    online: bool = True
    remarks: bool = False
    tiles: tuple[int, ...] = ()
    ints: tuple[tuple[str, int], ...] = ()
    has: tuple[str, ...] = ()
    groups: tuple[int, ...] = ()
    fp32_contract: str = "ieee"

    @classmethod
    def of(cls, options: CompileOptions | None = None, target: Any = None,
           tiles: tuple[int, ...] | None = None) -> "Facts":
        opts = options or CompileOptions()
        ints: list[tuple[str, int]] = []
        has: list[str] = []
        if target is not None:
            from intent_eqsat.providers.targets import get_target
            tgt = get_target(target)
            for name in _INT_FEATURES:
                v = getattr(tgt, name, None)
                if isinstance(v, int) and not isinstance(v, bool):
                    ints.append((name, v))
            for form in tgt.contract_forms:
                for acc in sorted(form.accumulators):
                    has.append(f"contract:{form.operand}:{acc}")
            has.extend(f"provider:{p}" for p in sorted(tgt.providers))
            has.extend(f"contract_precision:{p}" for p in sorted(tgt.contract_precisions))
            for a in tgt.atomics:
                has.extend(f"atomic:{a.kind}:{d}" for d in sorted(a.dtypes))
            has.extend(f"dtype:{d}" for d in sorted(tgt.fragment_dtypes))
            if tiles is None:
                tiles = tile_candidates(tgt)
            groups = group_candidates(tgt)
        else:
            groups = ()
        return cls(opts.numerics, bool(opts.online_reduction), bool(opts.optimization_remarks),
                   tuple(tiles or ()), tuple(ints), tuple(dict.fromkeys(has)), tuple(groups),
                   opts.fp32_contract)

    def program(self) -> str:
        """The egglog commands that insert these facts."""
        lines = [f"(OptNumerics {_q(self.numerics)})", f"(OptOnline {int(self.online)})",
                 f"(OptRemarks {int(self.remarks)})", f"(OptFp32Contract {_q(self.fp32_contract)})"]
        lines += [f"(TileCand {int(t)})" for t in self.tiles]
        lines += [f"(GroupCand {int(g)})" for g in self.groups]
        lines += [f"(TargetInt {_q(k)} {int(v)})" for k, v in self.ints]
        lines += [f"(TargetHas {_q(h)})" for h in self.has]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"numerics": self.numerics, "online": self.online, "remarks": self.remarks,
                "fp32_contract": self.fp32_contract,
                "tile_candidates": list(self.tiles), "group_candidates": list(self.groups),
                "target_ints": dict(self.ints), "target_has": len(self.has)}


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def declare(egraph: EGraph, *relations: Any) -> None:
    """Make ``egraph`` know the relations (no rows are inserted)."""
    for rel in relations or RELATIONS:
        egraph.function_size(rel)


def insert(egraph: EGraph, facts: Facts) -> None:
    """Declare the fact relations and insert ``facts`` through program text."""
    declare(egraph)
    eg = egraph._egraph
    eg.run_program(*eg.parse_program(facts.program()))


def remarks(egraph: EGraph) -> list[tuple[str, str]]:
    """Every ``Remark(message, location)`` row, sorted."""
    from egglog import get_callable_args

    if egraph.function_size(Remark) == 0:
        return []
    out = []
    for row in egraph.function_values(Remark):
        msg, loc = get_callable_args(row)
        out.append((str(msg.value), str(loc.value)))
    return sorted(set(out))


__all__ = ["OptNumerics", "OptOnline", "OptRemarks", "OptFp32Contract", "TileCand", "GroupCand", "TargetInt", "TargetHas", "Remark",
           "RELATIONS", "BASE_TILE_SIZES", "BASE_GROUP_SIZES", "tile_candidates", "group_candidates", "Facts",
           "declare", "insert", "remarks"]
