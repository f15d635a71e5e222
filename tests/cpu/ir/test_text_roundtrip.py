"""Exact round trip of the GPU IR text form (issue 2, deliverable 4): the seed GEMM fixture and generated programs.

``print_module(parse_module(t)) == t`` for printed text, and ``parse_module(print_module(m)) == m`` structurally.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings

from intent_eqsat.ir import ModuleBuilder, parse_module, print_module
from intent_eqsat.ir.core import CompileOptions, walk
from intent_eqsat.ir.launch import BinOp, Const, Dim, Sym, Tuple, ceil_div
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.ir.types import FragmentType, ScalarType, frag

from .strategies import GENERATED_OPS, modules

ROOT = Path(__file__).resolve().parents[3]
GEMM = ROOT / "examples" / "gir" / "gemm.gir"


# ------------------------------------------------------------------------------------------------ the seed GEMM

def test_gemm_text_is_a_fixed_point():
    text = GEMM.read_text()
    assert print_module(parse_module(text, str(GEMM))) == text


def test_gemm_structural_round_trip():
    m = parse_module(GEMM.read_text())
    again = parse_module(print_module(m))
    assert again == m
    assert print_module(again) == print_module(m)


def test_gemm_contents():
    """The fixture is the IR-12 shape: one kernel, a 2-D grid (ceil_div(M,BM), ceil_div(N,BN)), a K loop
    carrying the f32 accumulator through contract, masked loads with fill 0, a masked store."""
    m = parse_module(GEMM.read_text())
    assert [p.name for p in m.params] == ["BM", "BN", "BK"]
    (k,) = m.kernels
    assert [a.name for a in k.abi] == ["A", "B", "C"]
    assert [a.access for a in k.abi] == ["read", "read", "write"]
    (seg,) = k.space.segments
    assert seg.extents == (ceil_div("M", "BM"), ceil_div("N", "BN"))
    names = [op.name for op in walk(k.body)]
    assert names.count("load") == 2 and names.count("store") == 1 and names.count("contract") == 1
    loop = next(op for op in walk(k.body) if op.name == "for")
    assert loop.results[0].type == FragmentType("f32", (Sym("BM"), Sym("BN")))
    loads = [op for op in walk(k.body) if op.name == "load"]
    assert all(op.attrs["valid"] is True and op.attrs["fill"] == 0.0 for op in loads)
    assert m.origin_map()  # ops carry their KIR ids


def test_printing_is_deterministic():
    m = parse_module(GEMM.read_text())
    assert print_module(m) == print_module(m)


def test_op_locations_are_recorded_but_not_compared():
    m = parse_module(GEMM.read_text(), "gemm.gir")
    first = m.kernels[0].body.ops[0]
    assert (first.loc.file, first.loc.line, first.loc.col) == ("gemm.gir", 16, 7)
    first.loc = None
    assert parse_module(GEMM.read_text()) == m


# ------------------------------------------------------------------------------------------- generated modules

def test_generator_covers_the_op_table():
    """Every op of spec.SPECS is one the generator can produce (new ops need a generator)."""
    assert set(SPECS) - GENERATED_OPS == set()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_generated_modules_round_trip(m):
    text = print_module(m)
    note(text)
    parsed = parse_module(text)
    assert print_module(parsed) == text
    assert parsed == m


# ------------------------------------------------------------------------------------------------- edge cases

def _module_with(attrs: dict, target: str = "sm90", result=ScalarType("f32")):
    mb = ModuleBuilder(target, CompileOptions("relaxed_normalization", False, True))
    mb.param("BM", -1, ())
    kb = mb.kernel("k", origin="a \"quoted\" origin")
    kb.view("X", "f32", ["N"], access="readwrite", strides=[Dim("X", 0)], offset=BinOp("*", Sym("N"), Const(2)),
            alias="grp 1")
    kb.scalar("n", "i32", private=True, producer=ceil_div("N", 4))
    kb.segment([ceil_div("N", "BM")], "grouped", 8)
    kb.body(lambda r, pid: r.op("const", [], [result], attrs))
    return mb.build()


@pytest.mark.parametrize("value", [
    0, -7, 2 ** 63 - 1, -(2 ** 63), True, False, 0.0, -0.0, 1e-300, 1.5e300, float("inf"), float("-inf"), 0.1, 1e16,
    "bare.name", "", "true", "nan", "inf", "with space", 'quo"te', "back\\slash", "new\nline", "tab\t", "é",
    Const(True), Const(1), Tuple(()), (), (1, (2.5, "x")), {}, {"a b": {"true": [Const(3)]}},
])
def test_attribute_values_round_trip(value):
    value = list(value) if isinstance(value, list) else value
    m = _module_with({"value": value, "origin": "o", "tag": "t 1", "after": ("x", "y z")})
    text = print_module(m)
    parsed = parse_module(text)
    assert print_module(parsed) == text
    assert parsed == m
    got = parsed.kernels[0].body.ops[0].attrs["value"]
    assert type(got) is type(value)


def test_bool_and_int_launch_constants_stay_distinct():
    """``$(true)`` and ``$(1)`` are different attributes although Python says True == 1."""
    assert Const(True) != Const(1)
    a = _module_with({"value": Const(True)})
    b = _module_with({"value": Const(1)})
    assert a != b
    assert print_module(a) != print_module(b)


def test_nan_prints_and_parses_back():
    """NaN != NaN, so structural equality cannot hold; the text is still a fixed point."""
    m = _module_with({"value": float("nan")})
    text = print_module(m)
    assert "{value = nan}" in text
    parsed = parse_module(text)
    assert math.isnan(parsed.kernels[0].body.ops[0].attrs["value"])
    assert print_module(parsed) == text


def test_target_and_strings_needing_quotes():
    m = _module_with({"value": 1.0}, target='sm"90\\x')
    text = print_module(m)
    assert text.startswith('module target "sm\\"90\\\\x" {')
    assert parse_module(text) == m


def test_empty_lists_and_axes():
    t = FragmentType("f32", (), ())
    m = _module_with({"value": 0.0}, result=t)
    assert parse_module(print_module(m)) == m
    m2 = _module_with({"value": 0.0}, result=frag("f32", "BM", 4, axes=("m", "k.0")))
    assert "frag<f32, [BM, 4] axes [m, k.0]>" in print_module(m2)
    assert parse_module(print_module(m2)) == m2
