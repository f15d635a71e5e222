"""Which loops the provider software-pipelines (issue 22 item 2, ``intent_eqsat.ir.pipelining``): a load in the
loop's body that reaches a ``contract``'s A or B operand through ops of that body, as Triton's pipeliner walks
back from ``tt.dot``; nested loops count only when named as inlined."""
from __future__ import annotations

from pathlib import Path

from intent_eqsat import ir
from intent_eqsat.ir.core import Op, Region, Value, walk
from intent_eqsat.ir.pipelining import pipelined_loads, software_pipelined
from intent_eqsat.ir.types import ScalarType
from intent_eqsat.optimizer import golden

ROOT = Path(__file__).resolve().parents[3]
F32 = ScalarType("f32")


def v(name: str) -> Value:
    return Value(name, F32)


def op(name: str, operands: list[str], result: str | None = None, regions: list[Region] | None = None) -> Op:
    return Op(name, [v(o) for o in operands], [v(result)] if result else [], {}, regions or [])


def loop(*body: Op) -> Op:
    return op("for", ["lb", "ub", "step", "init"], "out", [Region([v("i"), v("acc")], list(body))])


def test_loads_feeding_the_matrix_unit_make_a_loop_pipelined():
    a, b = op("load", ["A", "i"], "a"), op("load", ["B", "i"], "b")
    k = loop(a, b, op("cast", ["a"], "a16"), op("contract", ["a16", "b", "acc"], "c"), op("yield", ["c"]))
    assert software_pipelined(k) and pipelined_loads(k) == [a, b]


def test_the_accumulator_and_computed_operands_do_not_count():
    acc_only = loop(op("load", ["C", "i"], "c0"), op("exp", ["x"], "ex"),
                    op("contract", ["ex", "ex", "c0"], "c"), op("yield", ["c"]))
    assert not software_pipelined(acc_only)
    no_contract = loop(op("load", ["X", "i"], "x"), op("add", ["acc", "x"], "s"), op("yield", ["s"]))
    assert not software_pipelined(no_contract)


def test_a_contract_in_a_nested_loop_pipelines_that_loop_unless_it_is_inlined():
    inner = loop(op("load", ["A", "i"], "a"), op("load", ["B", "i"], "b"),
                 op("contract", ["a", "b", "acc"], "c"), op("yield", ["c"]))
    outer = loop(inner, op("yield", ["out"]))
    assert software_pipelined(inner) and not software_pipelined(outer)
    assert software_pipelined(outer, through=lambda o: o is inner)


def test_the_gemm_k_loop_is_pipelined_and_a_row_reduction_is_not():
    (gemm,) = golden.parse_cases((ROOT / "tests/golden/contraction/gemm.gir").read_text(), "gemm.gir")
    after = ir.parse_module("\n".join(gemm.expected))
    loops = [o for o in walk(after.kernels[0].body) if o.name == "for"]
    assert any(software_pipelined(o) for o in loops)
    (row_sum,) = golden.parse_cases((ROOT / "tests/golden/reduction/row_sum.gir").read_text(), "row_sum.gir")
    reduced = ir.parse_module("\n".join(row_sum.expected))
    assert not any(software_pipelined(o) for o in walk(reduced.kernels[0].body) if o.name == "for")
