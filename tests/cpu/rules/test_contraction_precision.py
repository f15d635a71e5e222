"""Issue 26 item 3: compile option ``fp32_contract = ieee | tf32 | bf16x3`` (SPEC PASS-1.1 options). ieee (the
default) keeps f32 contractions exact; tf32 and bf16x3 let the cost model put them on the matrix unit at that
precision. The option is in the module text, the cache key and the Triton ``input_precision``; the interpreter
computes each precision's rounding, so the results are checked against the KIR reference at the precision's
tolerance and the tf32 result is shown to differ from the exact one."""
from __future__ import annotations

import os

import numpy as np
import pytest

from intent_eqsat import api, ir, kir, pipeline
from intent_eqsat.errors import ParseError, UsageError
from intent_eqsat.ir.core import CompileOptions
from intent_eqsat.kir.inputs import random_inputs, tolerance
from intent_eqsat.providers.errors import Unsupported
from tests.cpu.rules.reference import ROOT, assert_matches_reference, ops_named

GEMM = os.path.join(ROOT, "bench", "suite", "gemm_tn_f32.kir")
SIZES = {"M": 4096, "N": 4096, "K": 4096}


def _compiled(precision: str, provider: str = "triton"):
    return api.compile(GEMM, sizes=SIZES, options={"fp32_contract": precision}, provider=provider)


def _precisions(program) -> list[str]:
    return [c.attrs.get("precision", "ieee") for k in program.kernels for c in ops_named(k.body.ops, "contract")]


@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16x3"])
def test_the_option_reaches_the_contract_and_the_source(precision):
    ck = _compiled(precision)
    assert _precisions(ck.program) == [precision]
    assert f"input_precision={precision!r}" in ck.source
    text = ir.print_module(ck.program)
    assert (f"fp32_contract = {precision}" in text) == (precision != "ieee")
    assert ir.parse_module(text).options.fp32_contract == precision           # the module text round-trips
    assert ("fp32_contract" in ck.options.key()) == (precision != "ieee")      # and keys the cache
    module = kir.parse(open(GEMM).read(), filename=GEMM)
    assert_matches_reference(module, ck.program, seeds=(5,), lo=20, hi=40,
                             min_rtol=tolerance("f32", ck.options)[0], min_atol=tolerance("f32", ck.options)[1])


def test_tf32_rounds_the_operands():
    """The tf32 program's result is not the exact one (the interpreter rounds the operands to 10 bits)."""
    module = kir.parse(open(GEMM).read(), filename=GEMM)
    inputs = random_inputs(module, "gemm_tn_f32", 3, sizes={"M": 33, "N": 17, "K": 65})
    exact = ir.interpret(_compiled("ieee").program, "gemm_tn_f32", {n: np.copy(v) for n, v in inputs.items()})["C"]
    tf32 = ir.interpret(_compiled("tf32").program, "gemm_tn_f32", {n: np.copy(v) for n, v in inputs.items()})["C"]
    ref = kir.evaluate(module, "gemm_tn_f32", {n: np.copy(v) for n, v in inputs.items()})["C"]
    assert np.allclose(exact, ref, rtol=1e-4, atol=1e-5)
    err = np.max(np.abs(tf32 - ref) / (np.abs(ref) + 1))
    assert 1e-5 < err < 1e-2, err


def test_half_precision_contracts_ignore_the_option():
    ck = api.compile(os.path.join(ROOT, "bench", "suite", "gemm_bf16.kir"), sizes=SIZES,
                     options={"fp32_contract": "tf32"})
    assert _precisions(ck.program) == ["ieee"] and "input_precision='ieee'" in ck.source


def test_a_bad_value_is_a_usage_error():
    with pytest.raises(UsageError, match="fp32_contract: expected one of ieee, tf32, bf16x3"):
        pipeline.make_options({"fp32_contract": "fast"})
    with pytest.raises(ParseError, match="fp32_contract must be one of"):
        ir.parse_module('module target "sm90" {\n  options {fp32_contract = fast}\n}\n')
    assert pipeline.make_options({"fp32-contract": "tf32"}) == CompileOptions(fp32_contract="tf32")


def test_cutile_declares_bf16x3_unsupported_early():
    with pytest.raises(Unsupported) as e:
        _compiled("bf16x3", provider="cutile")
    assert e.value.kind == "provider_surface" and "bf16x3" in str(e.value)


MIXED = """kernel mixed(A: bf16[M, K], B: f32[N, K], C: out f32[M, N]) {
  C[m, n] = sum(k: cast<f32>(A[m, k]) * B[n, k])
}"""


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_a_mixed_bf16_times_f32_contraction_takes_the_permitted_precision(precision):
    """Issue 26 item 7: a widened bf16 operand times an f32 one contracts (exact f32 products at ieee); under tf32
    the permission rounds only the f32 side (a bf16 value is exact in tf32)."""
    module = kir.parse(MIXED, filename="<mixed>")
    ck = api.compile(module, sizes=SIZES, options={"fp32_contract": precision})
    assert _precisions(ck.program) == [precision]
    assert f"input_precision={precision!r}" in ck.source
    rtol, atol = tolerance("f32", ck.options)
    assert_matches_reference(module, ck.program, seeds=(5,), lo=20, hi=40, min_rtol=rtol, min_atol=atol)
