"""Sibling loops over one range that re-read the same views run as one loop (``ir/sibling_fusion.py``).

Kernels as PyTorch users write them, with several independent reductions of the same rows -- cosine similarity
(``F.cosine_similarity``, rows and the channel axis of bf16 feature maps), min-max scaling, a variance typed as
``(X * X).mean(1) - X.mean(1) ** 2``, a triplet margin loss -- compiled for rows longer than a tile: before, each
reduction was its own loop and loaded its tiles again. The tests check that no two sibling loops over one range
re-read a view, that the fused programs match the KIR reference in the GPU IR interpreter at odd sizes spanning
several tiles, that the pass changes no bit of the results, and that it leaves alone what it must (a loop that
needs the other's result, a read that may alias a write).
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.ir.core import Module, walk
from intent_eqsat.ir.sibling_fusion import fuse_sibling_loops
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.optimizer import golden
from tests.cpu.rules.reference import assert_matches_reference, corpus, optimize_in_small_tiles, suite

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "bench" / "suite"
GOLDEN = ROOT / "tests" / "golden" / "sibling_fusion"

#: suite kernel -> (compile sizes, interpreter sizes fixed); the reduced extent is drawn in [70, 150]
KERNELS = {
    "cosine_rows_f32": ({"B": 4096, "D": 16384}, {"B": 3}),
    "cosine_mid_bf16": ({"B": 16, "C": 1024, "L": 4096}, {"B": 2, "L": 3}),
    "minmax_rows_f32": ({"B": 4096, "D": 16384}, {"B": 3}),
    "naive_var_rows_f32": ({"B": 64, "D": 16384}, {"B": 3}),
    "triplet_rows_f32": ({"B": 4096, "D": 16384}, {"B": 3}),
}


@functools.lru_cache(maxsize=None)
def _compile(name: str):
    module = suite(name)
    return module, optimize_in_small_tiles(module, KERNELS[name][0])


def _regions(region):
    yield region
    for op in region.ops:
        for r in op.regions:
            yield from _regions(r)


def _views_loaded(loop) -> set[str]:
    return {op.operands[0].name for op in walk(loop.regions[0]) if op.name == "load"}


def _rereading_siblings(kernel) -> list[tuple[str, str]]:
    """Pairs of sibling loops with equal bounds and step that load a view in common; a bound is its defining
    expression, written out down to the region arguments (two loops may compute the same bound apart)."""
    defs = {v.name: op for op in walk(kernel.body) for v in op.results}

    def expr(v) -> str:
        op = defs.get(v.name)
        if op is None or op.regions:
            return v.name
        attrs = sorted((k, str(x)) for k, x in op.attrs.items() if k != "origin")
        return f"{op.name}{attrs}({', '.join(expr(u) for u in op.operands)})"

    found = []
    for region in _regions(kernel.body):
        loops = [op for op in region.ops if op.name == "for"]
        for i, a in enumerate(loops):
            for b in loops[i + 1:]:
                if [expr(v) for v in a.operands[:3]] == [expr(v) for v in b.operands[:3]] \
                        and _views_loaded(a) & _views_loaded(b):
                    found.append((a.results[0].name if a.results else "?", b.results[0].name if b.results else "?"))
    return found


def _fused_loops(kernel) -> list:
    """Loops carrying several reductions' values (a loop carries one reduction's value per result before)."""
    return [op for op in walk(kernel.body) if op.name == "for" and len(op.results) > 1 and _views_loaded(op)]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_independent_reductions_of_one_row_share_one_loop_and_match_the_reference(name):
    module, result = _compile(name)
    k = result.program.kernels[0]
    ir.verify(result.program)
    assert _fused_loops(k), ir.print_module(result.program)
    assert not _rereading_siblings(k), ir.print_module(result.program)
    fixed = KERNELS[name][1]
    assert_matches_reference(module, result.program, seeds=(5,), sizes=fixed, lo=70, hi=150, min_rtol=1e-4,
                             min_atol=1e-5)


def _case(path: Path):
    """(the program the group sees, the program after it) of a golden case."""
    case = golden.parse_cases(path.read_text(), str(path))[0]
    source = ir.parse_module("\n".join(line for _, line in case.input_lines))
    return source, golden.apply_group(source, "sibling_fusion", target="sm90").module


#: golden case -> (its KIR kernel, interpreter sizes: partial tiles, several chunks, rows past the last row tile)
CASES = {
    "cosine_rows_split": (SUITE / "cosine_rows_f32.kir", ({"B": 5, "D": 1061}, {"B": 259, "D": 97})),
    "minmax_rows": (SUITE / "minmax_rows_f32.kir", ({"B": 5, "D": 1061}, {"B": 259, "D": 97})),
    # attention under the default numerics, unsized: the mass and moment loops over the keys become one, their
    # score loops over the head dim one; under the launch guard the three consumers' score loops are one
    "attention_mass_moment": (ROOT / "examples" / "corpus" / "attention.kir",
                              ({"B": 1, "H": 2, "S": 67, "T": 300, "D": 5}, {"B": 1, "H": 1, "S": 3, "T": 40, "D": 64})),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fused_program_gives_the_same_bits(case):
    """Each carried value folds the same members in the same order: the interpreter's results are equal bit for
    bit before and after."""
    before, after = _case(GOLDEN / f"{case}.gir")
    kb, ka = before.kernels[0], after.kernels[0]
    # fewer pairs re-read a view (attention's max loop stays apart: the other two read the maximum)
    assert len(_rereading_siblings(ka)) < len(_rereading_siblings(kb))
    assert len([op for op in walk(ka.body) if op.name == "load"]) < len([op for op in walk(kb.body)
                                                                          if op.name == "load"])
    path, size_sets = CASES[case]
    module = kir.parse(path.read_text())
    name = module.kernels[0].name
    for seed, sizes in enumerate(size_sets, start=1):
        inputs = random_inputs(module, name, seed, sizes=sizes)
        got_b = ir.interpret(before, kb.name, {n: np.copy(v) if isinstance(v, np.ndarray) else v
                                              for n, v in inputs.items()})
        got_a = ir.interpret(after, ka.name, {n: np.copy(v) if isinstance(v, np.ndarray) else v
                                             for n, v in inputs.items()})
        for out, want in got_b.items():
            np.testing.assert_array_equal(got_a[out], want)


def test_a_loop_that_reads_the_others_result_is_not_fused():
    """Softmax's sum reads the row maximum: its loop must follow the maximum's, so the two stay apart."""
    result = optimize_in_small_tiles(corpus("softmax"), {"M": 64, "N": 65536})
    k = result.program.kernels[0]
    loops = [op for op in walk(k.body) if op.name == "for" and op.results]
    assert len(loops) >= 2 and not _fused_loops(k), ir.print_module(result.program)
    assert fuse_sibling_loops(k) is k


def test_a_read_that_may_alias_a_write_is_not_moved():
    """With X in the alias class of the written S, a load of X may see a store of the kernel: nothing moves."""
    before, _ = _case(GOLDEN / "minmax_rows.gir")
    k = before.kernels[0]
    abi = [dataclasses.replace(a, alias="shared") if a.name in ("X", "Y") else a for a in k.abi]
    aliased = dataclasses.replace(k, abi=abi)
    assert fuse_sibling_loops(aliased) is aliased
    assert fuse_sibling_loops(k) is not k


def test_loops_over_different_ranges_stay_apart():
    """The fused loop runs one range: with the max loop's upper bound changed to another value (``B`` for ``D``)
    the min and max loops are left alone; bounds computed apart but equal (two launches of ``D``) still fuse."""
    case = golden.parse_cases((GOLDEN / "minmax_rows.gir").read_text(), "minmax_rows.gir")[0]
    text = "\n".join(line for _, line in case.input_lines)
    assert "%v21 = launch() {expr = $(D)}" in text and "%v17 = launch() {expr = $(B)}" in text
    for ub, fuses in (("%v17", False), ("%v21", True)):
        changed = text.replace("for(%v27, %v28, %v29, %v54_t60)", f"for(%v27, {ub}, %v29, %v54_t60)")
        assert changed != text
        module = ir.parse_module(changed)
        ir.verify(module)
        k = module.kernels[0]
        fused = fuse_sibling_loops(k)
        assert (fused is not k) == fuses
        if fuses:
            ir.verify(Module(module.target, module.options, module.params, [fused]))
