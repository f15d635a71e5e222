"""Passes over a row that re-read one view run once under a launch guard (``ir.unswitch.unswitch_sibling_loops``):
the layernorm row program of ``bound/layernorm_rows.gir`` (rows of 256 columns, three passes over ``X``) gets,
from its first pass on, an ``if`` whose guarded branch has no loop left (so its loads of ``X`` have identical
operands) and whose other branch is the program as it was; both equal the program before the pass and a NumPy
layer norm, for a row within one tile (guarded branch) and wider rows (the loops)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat import ir
from intent_eqsat.ir.core import walk
from intent_eqsat.ir.launch import evaluate
from intent_eqsat.ir.unswitch import unswitch_sibling_loops

PROGRAMS = Path(__file__).parent / "programs"
BOUND = Path(__file__).parent / "bound"


def _program(name: str) -> ir.Module:
    folder = BOUND if (BOUND / name).exists() else PROGRAMS
    return ir.parse_module((folder / name).read_text(), name)


def _unswitched(module: ir.Module) -> ir.Module:
    out = replace(module, kernels=[unswitch_sibling_loops(k) for k in module.kernels])
    ir.verify(out)
    return out


def _group(module: ir.Module):
    (group,) = [op for op in module.kernels[0].body.ops if op.name == "execution_group"]
    return group.regions[0]


def test_row_passes_run_once_under_a_guard_and_as_loops_otherwise():
    before = _program("layernorm_rows.gir")
    after = _unswitched(before)
    body = _group(after)
    assert [op.name for op in body.ops[-3:]] == ["launch", "if", "yield"]
    guard, branch = body.ops[-3:-1]
    assert branch.operands == guard.results and not branch.results
    assert [evaluate(guard.attrs["expr"], {"N": n}) for n in (0, 1, 256, 257, 512)] == \
        [False, True, True, False, False]
    once, loops = branch.regions
    assert not [op for op in walk(once) if op.name == "for"]
    assert len([op for op in loops.ops if op.name == "for"]) == 3
    loads = [op for op in walk(once) if op.name == "load" and op.operands[0].name == "X"]
    assert len(loads) == 3                   # one per pass; their operands agree once the provider folds iv = 0
    # what comes before the first pass is not copied
    first = next(i for i, op in enumerate(_group(before).ops) if op.name == "for")
    assert body.ops[:first] == _group(before).ops[:first]
    assert ir.parse_module(ir.print_module(after)) == after


@pytest.mark.parametrize("n", [200, 256, 300, 513])
def test_both_branches_equal_the_program_before_and_numpy(n: int):
    before = _program("layernorm_rows.gir")
    after = _unswitched(before)
    rng = np.random.default_rng(n)
    m = 7
    args = {"X": rng.standard_normal((m, n)).astype(np.float32), "gamma": rng.standard_normal(n).astype(np.float32),
            "beta": rng.standard_normal(n).astype(np.float32), "eps": 1e-5, "Y": np.zeros((m, n), np.float32)}

    def run(module):
        return ir.interpret(module, "layernorm_f32", {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                                      for k, v in args.items()})["Y"]
    got, want = run(after), run(before)
    assert np.array_equal(got, want)
    x = args["X"].astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    ref = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * args["gamma"] + args["beta"]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_tensor_core_loops_and_block_parameter_programs_are_left_alone():
    gemm = ir.parse_module((Path(__file__).resolve().parents[3] / "examples" / "gir" / "gemm.gir").read_text())
    assert _unswitched(gemm) == gemm                           # its K loop holds a contract
    for name in ("softmax.gir", "cumsum.gir", "argmax.gir", "histogram.gir"):
        module = _program(name)             # hand-written programs: block parameters, no re-read under a guard
        assert _unswitched(module) == module, name


def test_only_tile_loops_and_tile_counts_take_a_guard():
    """A step-1 loop takes a guard only up to a tile count ``ceil_div(N, c)``, c > 1; over a plain extent (attention's
    scalar key loop, ``for j in [0, T) step 1``) it would run once only for T = 1: no guard, no copy."""
    from intent_eqsat.ir.launch import BinOp, Const, Sym
    from intent_eqsat.ir.unswitch import _tile_count
    assert _tile_count(BinOp("ceil_div", Sym("N"), Const(256)))
    assert not _tile_count(Sym("T")) and not _tile_count(BinOp("ceil_div", Sym("N"), Const(1)))
    assert not _tile_count(BinOp("ceil_div", Sym("N"), Sym("B")))
    text = (BOUND / "layernorm_rows.gir").read_text()
    # the normalize pass over a plain extent: with the two reduction passes still guarded, it stays a loop there
    plain = ir.parse_module(text.replace("%v2 = launch() {expr = $(ceil_div(N, 256))} : index",
                                         "%v2 = launch() {expr = $(N)} : index"))
    after = _unswitched(plain)
    once = next(op for op in _group(after).ops if op.name == "if").regions[0]
    assert len([op for op in once.ops if op.name == "for"]) == 1
