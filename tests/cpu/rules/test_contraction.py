"""The contraction group (rulebooks/contraction.py) and the PASS-7 GEMM evidence of issue 4: GEMM extracts the IR-12
shape (tiled grid, K loop, contract accumulator, masked tails); its block sizes differ between targets and between
a square and a skinny problem; renaming the kernel changes nothing; gemm+bias+relu takes the bias into the
accumulator; products rounded to f16 (a different sum) and loops without the ``reduce`` mark are left alone."""
from __future__ import annotations

import functools
import os
import re

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.cost import RooflineCost
from intent_eqsat.ir.core import Op
from intent_eqsat.providers.targets import get_target
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import assert_matches_reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GROUPS = ["blocking", "contraction"]
SQUARE = {"M": 4096, "N": 4096, "K": 4096}
SKINNY = {"M": 64, "N": 4096, "K": 4096}


def _kir(name_or_text: str) -> kir.KirModule:
    if name_or_text.startswith("kernel") or "\n" in name_or_text:
        return kir.parse(name_or_text, filename="<test>")
    path = os.path.join(ROOT, "examples", "corpus", f"{name_or_text}.kir")
    with open(path) as f:
        return kir.parse(f.read(), filename=path)


@functools.lru_cache(maxsize=None)
def _optimized(source: str, target: str = "sm90", sizes: tuple = tuple(sorted(SQUARE.items()))):
    module = _kir(source)
    result = optimize(construct(module, target=target), target=target, groups=GROUPS,
                      cost=RooflineCost(get_target(target), dict(sizes)))
    return module, result


def _walk(region) -> list[Op]:
    out = []
    for op in region.ops:
        out.append(op)
        for r in op.regions:
            out.extend(_walk(r))
    return out


def _ops(program, name: str) -> list[Op]:
    return [op for k in program.kernels for op in _walk(k.body) if op.name == name]


def _matches_reference(module, program) -> None:
    ir.verify(program)
    assert_matches_reference(module, program, seeds=(3, 4))


def _tiles(program) -> tuple:
    """(segment extents text, contract operand shapes) of the extracted GEMM."""
    text = ir.print_module(program)
    seg = re.search(r"segment \[(.*)\] order", text).group(1)
    (c,) = _ops(program, "contract")
    return seg, tuple(str(v.type) for v in c.operands[:2])


def test_gemm_extracts_the_ir12_shape():
    module, result = _optimized("gemm")
    prog = result.program
    k = prog.kernels[0]
    seg = k.space.segments[0]
    assert [str(e) for e in seg.extents][0].startswith("ceil_div(M, ") and \
        str(seg.extents[1]).startswith("ceil_div(N, ")                       # a tiled grid
    (loop,) = _ops(prog, "for")                                                # one K loop ...
    producers = {r.name: op for op in _walk(k.body) for r in op.results}
    step = producers[loop.operands[2].name]                                    # ... stepping by a K tile
    assert step.name == "launch" and str(step.attrs["expr"]) in ("16", "32", "64"), step
    body = loop.regions[0]
    yielded = body.ops[-1]
    (c,) = [op for op in body.ops if op.name == "contract"]                   # ... accumulating by contract
    assert yielded.operands[0] is c.results[0] and c.operands[2] is body.args[1]
    assert c.attrs["lhs_contract"] == (1,) and c.attrs["rhs_contract"] == (0,)
    for operand in c.operands[:2]:                                             # f16 tiles read directly, masked
        producer = [op for op in body.ops if operand in op.results][0]
        assert producer.name == "load" and producer.attrs.get("valid") and producer.attrs.get("fill") == 0.0
        assert operand.type.dtype == "f16" and len(operand.type.shape) == 2
    (store,) = _ops(prog, "store")
    assert store.attrs.get("valid")                                            # masked tails on the output
    assert loop.attrs.get("reduce") == "add"
    _matches_reference(module, prog)


def test_block_sizes_follow_the_target_and_the_problem_shape():
    on_sm90 = _tiles(_optimized("gemm", "sm90")[1].program)
    on_gfx942 = _tiles(_optimized("gemm", "gfx942")[1].program)
    skinny = _tiles(_optimized("gemm", "sm90", tuple(sorted(SKINNY.items())))[1].program)
    assert on_sm90 != on_gfx942, (on_sm90, on_gfx942)
    assert on_sm90 != skinny, (on_sm90, skinny)


def test_renaming_the_kernel_changes_nothing():
    with open(os.path.join(ROOT, "examples", "corpus", "gemm.kir")) as f:
        text = f.read()
    renamed = text.replace("kernel gemm(", "kernel xyz_matmul(")
    a = ir.print_module(_optimized("gemm")[1].program)
    b = ir.print_module(_optimized(renamed)[1].program)
    assert b.replace("xyz_matmul", "gemm") == a


def test_bias_joins_the_accumulator():
    module, result = _optimized("gemm_bias_relu")
    prog = result.program
    (loop,) = _ops(prog, "for")
    k = prog.kernels[0]
    producers = {r.name: op for op in _walk(k.body) for r in op.results}
    init = producers[loop.operands[3].name]
    assert init.name == "broadcast" and producers[init.operands[0].name].name == "load"
    assert producers[init.operands[0].name].operands[0].name == "bias"
    assert _ops(prog, "contract") and not [op for op in _ops(prog, "add") if loop.results[0] in op.operands]
    fired = result.rules_fired
    assert any(name.startswith("contraction.bias_into_init") for name in fired), fired
    _matches_reference(module, prog)


F16_PRODUCTS = """kernel gemm16(A: f16[M, K], B: f16[K, N], C: out f16[M, N]) {
  C[m, n] = sum(k: A[m, k] * B[k, n])
}
"""


def test_products_rounded_to_f16_are_not_contracted():
    """``A*B`` in f16 rounds every product before the f32 sum (KIR semantics): no matrix unit computes that, and
    the multiply's dtype differs from the sum's, so the rule must not fire (SPEC PASS-3.4 same-dtype)."""
    module, result = _optimized(F16_PRODUCTS)
    assert not _ops(result.program, "contract")
    _matches_reference(module, result.program)


def test_a_loop_without_the_reduce_mark_is_not_contracted():
    """An ordered loop (no ``reduce`` mark: its members may not be regrouped) keeps its per-member order."""
    module = _kir("gemm")
    program = construct(module, target="sm90")
    for op in _ops(program, "for"):
        op.attrs.pop("reduce")
    result = optimize(program, target="sm90", groups=GROUPS, cost=RooflineCost(get_target("sm90"), SQUARE))
    assert not _ops(result.program, "contract")
    _matches_reference(module, result.program)


def test_the_reduce_mark_is_verified():
    """The verifier rejects a ``reduce`` mark on a loop whose member depends on the carried value."""
    src = """kernel rec(X: f32[N], Y: out f32[N]) {
  Y[i] = sum(k: X[k])
}
"""
    program = construct(_kir(src), target="sm90")
    (loop,) = _ops(program, "for")
    body = loop.regions[0]
    add = [op for op in body.ops if op.name == "add"][-1]
    add.operands[1] = body.args[1]                   # acc + acc: an ordered recurrence, not a sum of members
    with pytest.raises(ir.VerificationError) as e:
        ir.verify(program)
    assert "reduce = add" in str(e.value)
