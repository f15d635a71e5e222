"""Online renormalization over key tiles (``rulebooks/online_tiles.py``; SPEC PASS-1.2, PASS-3.4, PASS-4): with
``numerics = relaxed_normalization`` attention becomes the flash-attention program - one loop over tiles of keys
carrying the row maximum, the row mass and the output tile, the scores a contraction of the query tile with the key
tile (read transposed), the output a contraction of the rounded weights with the value tile - and it still equals
the KIR float64 reference, on shapes whose key, query and head extents all end in a partial tile."""
from __future__ import annotations

import os

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.pipeline import make_options
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import ROOT, assert_matches_reference, corpus, guarded_branch_ops, ops_named

RELAXED = {"numerics": "relaxed_normalization"}
#: several key tiles of 32 and a partial one (T), a partial query tile (S), a head dim that is not a multiple of the
#: reduction tile (D)
SIZES = {"attention": {"B": 1, "H": 2, "S": 37, "T": 70, "D": 24},
         "causal_attention": {"Z": 1, "H": 2, "S": 45, "T": 45, "D": 20}}


def _module(name: str):
    """The corpus attention (f16, f32 scores); causal attention as the benchmark writes it (bf16 operands widened
    to f32 before the products: the corpus kernel multiplies in bf16, which no f32-accumulating contraction equals)."""
    if name == "causal_attention":
        path = os.path.join(ROOT, "bench", "suite", "causal_attention_bf16.kir")
        with open(path) as f:
            return kir.parse(f.read(), filename=path)
    return corpus(name)


def _flash(name: str, options=RELAXED):
    module = _module(name)
    opts = make_options(options)
    result = optimize(construct(module, options=opts), target="sm90", tile_candidates=(32,))
    ir.verify(result.program)
    return module, result


def _key_loop(kernel: ir.Kernel) -> ir.Op:
    """The three-carry loop (maximum, mass, output tile) over the full key tiles (causal: the tiles below the row
    tile's diagonal); the loop over the last partial tile (causal: the diagonal tiles) follows it and continues its
    carry (``intent_eqsat.ir.tail_split``, ``intent_eqsat.ir.range_skip``). The head dimension is a size symbol:
    each sits in an ``if`` on ``0 < D <= TILE_K`` (``intent_eqsat.ir.unswitch``), whose guarded copies are taken."""
    full, tail = [op for op in ops_named(guarded_branch_ops(kernel.body.ops), "for") if len(op.results) == 3]
    assert [full.attrs["narrowing"]["kind"], tail.attrs["narrowing"]["kind"]] == ["all_true", "mixed"]
    assert tail.operands[3:] == full.results and tail.operands[0] == full.operands[1]
    return full


@pytest.mark.slow
@pytest.mark.parametrize("name", ["attention", "causal_attention"])
def test_relaxed_attention_is_one_pass_over_key_tiles_with_two_contractions(name):
    module, result = _flash(name)
    kernel = result.program.kernels[0]
    loop = _key_loop(kernel)
    assert result.report["rules_fired"].get("online_tiles.moment_f16" if name == "attention" else
                                            "online_tiles.moment_bf16")
    m, l_, o = (r.type for r in loop.results)
    assert [str(e) for e in m.shape] == [str(e) for e in l_.shape] == ["32"]
    assert [str(e) for e in o.shape] == ["32", "32"]
    contracts = ops_named(loop.regions[0].ops, "contract")
    assert len(contracts) == 2, ir.print_module(result.program)
    scores, moment = contracts
    # the scores: query tile [rows, d] x key tile [keys, d] contracted along d (the key tile read transposed)
    assert scores.attrs["lhs_contract"] == (1,) and scores.attrs["rhs_contract"] == (1,)
    assert scores.operands[0].type.dtype == scores.operands[1].type.dtype == module.kernels[0].param("Q").dtype
    # the moment: weights rounded to the value dtype, contracted with the value tile along the keys
    assert moment.operands[0].type.dtype == moment.operands[1].type.dtype == module.kernels[0].param("V").dtype
    assert moment.result.type.dtype == "f32"
    assert not [op for op in ops_named(kernel.body.ops, "for") if len(op.results) == 1 and
                "reduce" not in op.attrs], "a per-key loop is left"
    assert_matches_reference(module, result.program, seeds=(5, 6), sizes=SIZES[name])


@pytest.mark.slow
def test_rows_that_start_masked_keep_a_zero_mass():
    """Causal rows see only -inf scores in the tiles past their diagonal and a first tile that is partly masked: the
    empty-row guard keeps those tiles' weights 0 (no NaN from -inf - -inf) and the result equals the reference."""
    module, result = _flash("causal_attention")
    _key_loop(result.program.kernels[0])
    inputs = random_inputs(module, "causal_attention_bf16", 9, sizes={"Z": 1, "H": 1, "S": 70, "T": 70, "D": 8})
    assert_matches_reference(module, result.program, inputs=inputs)


@pytest.mark.slow
def test_a_key_tile_of_only_minus_inf_scores_gives_zero_weights():
    """Keys whose scores are all -inf (key rows of -inf against positive queries) fill the first key tile: the rows
    are empty there (maximum -inf), their weights must be 0 (the per-row safe maximum: exp(-inf - 0), not
    -inf - -inf = NaN), and the later tiles give the reference's output."""
    module, result = _flash("attention")
    _key_loop(result.program.kernels[0])
    inputs = random_inputs(module, "attention", 4, sizes=SIZES["attention"])
    inputs["Q"] = abs(inputs["Q"]) + inputs["Q"].dtype.type(0.25)     # positive: Q . (-inf) = -inf, never NaN
    inputs["K"][:, :, :32, :] = -float("inf")                          # the first key tile (32 keys)
    assert_matches_reference(module, result.program, inputs=inputs)


@pytest.mark.slow
def test_without_the_numeric_permission_there_are_no_key_tiles():
    """Without the numeric permission no summary loop is rewritten: no key tiles, no rounded weights."""
    _, result = _flash("attention", None)
    assert not result.report["rules_fired"].get("online_tiles.moment_f16")
    assert not [op for op in ops_named(result.program.kernels[0].body.ops, "for") if len(op.results) == 3]
