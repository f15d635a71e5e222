"""Value specialization of shape symbols (``intent_eqsat.kir.specialize``, SPEC IR-2): the specialized kernel is
the general one with the symbol written as a literal extent, so it equals the kernel a user would write with the
literal; requests are checked (unknown symbol, values below 1, too many assignments)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from intent_eqsat import kir
from intent_eqsat.errors import KirError
from intent_eqsat.kir import specialize as ks
from intent_eqsat.kir.inputs import random_inputs

ROOT = Path(__file__).resolve().parents[3]


def test_a_specialized_head_dim_is_the_literal_kernel() -> None:
    general = kir.parse((ROOT / "bench/suite/causal_attention_bf16.kir").read_text())
    literal = kir.parse((ROOT / "bench/suite/causal_attention_bf16_d64.kir").read_text())
    spec = ks.specialize(general, "causal_attention_bf16", {"D": 64}, name="causal_attention_bf16_d64")
    assert kir.print_kir(spec) == kir.print_kir(literal)
    assert spec == literal            # same tree, same ids (ids are positional), locations aside
    kir.verify(spec)


def test_symbols_in_the_body_and_in_products_are_replaced() -> None:
    src = """
kernel k(X: f32[G * C, N], Y: out f32[G * C, N], B: f32[G]) {
  Y[r, n] = X[r, n] * cast<f32>(N) + cast<f32>(G)
}
"""
    # (B gives G a whole dimension: a symbol only ever inside products has no value at launch; the verifier
    # refuses it, test_kir_verify.py)
    module = kir.parse(src)
    assert ks.shape_symbols(module.kernel("k")) == ["G", "C", "N"]
    spec = ks.specialize(module, "k", {"G": 4, "N": 3})
    k = spec.kernel("k__G4_N3")
    assert k.param("X").dims == ((4, "C"), (3,))
    text = kir.print_kir(spec)
    assert "cast<f32>(3)" in text and "cast<f32>(4)" in text and "G" not in text.replace("k__G4", "")
    assert kir.print_kir(kir.parse(text)) == text         # the folded dims print as KIR that parses back
    kir.verify(spec)
    args = random_inputs(module, "k", 1, sizes={"G": 4, "C": 2, "N": 3})
    want = kir.evaluate(module, "k", {"X": args["X"], "B": args["B"]})["Y"]
    got = kir.evaluate(spec, "k__G4_N3", {"X": args["X"], "B": args["B"]})["Y"]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_requests_are_checked() -> None:
    module = kir.parse((ROOT / "examples/corpus/gemm.kir").read_text())
    gemm = module.kernel("gemm")
    with pytest.raises(KirError, match=r"no shape symbol 'D' \(its shape symbols: M, K, N\)"):
        ks.specialize_kernel(gemm, {"D": 64})
    with pytest.raises(KirError, match=r"must be an integer >= 1, got 0"):
        ks.combinations(gemm, {"K": (0,)})
    assert ks.combinations(gemm, {"D": (64,)}) == []
    assert ks.combinations(gemm, {"N": (8, 16, 8), "K": (32,)}) == [{"K": 32, "N": 8}, {"K": 32, "N": 16}]
    with pytest.raises(KirError, match=r"17 specializations requested, at most 16"):
        ks.combinations(gemm, {"M": tuple(range(1, 18))})
