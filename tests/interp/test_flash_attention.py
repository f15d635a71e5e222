"""The flash-attention program (``rulebooks/online_tiles.py``) through the Triton provider: with
``numerics = relaxed_normalization`` the optimized attention runs under ``TRITON_INTERPRET=1`` on shapes whose
query, key and head extents end in partial tiles, and matches the KIR float64 reference within the f16 output's
tolerance (the weights are rounded to f16 for the value contraction, as the permission allows)."""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat.kir.evaluate import evaluate
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.triton import serialize

from tests.interp.helpers import ROOT, assert_matches, copy_args, run_launcher

SIZES = {"B": 1, "H": 2, "S": 37, "T": 70, "D": 24}


@pytest.mark.slow
@pytest.mark.usefixtures("interpret_mode")
def test_flash_attention_matches_the_reference_under_the_interpreter(gen_dir) -> None:
    from intent_eqsat import pipeline
    from intent_eqsat.construct import construct
    from intent_eqsat.kir.inputs import random_inputs
    from intent_eqsat.optimizer import optimize

    module = pipeline.load(str(ROOT / "examples" / "corpus" / "attention.kir"))
    opts = pipeline.make_options({"numerics": "relaxed_normalization"})
    program = optimize(construct(module, options=opts), target="sm90", tile_candidates=(32,)).program
    source = serialize(program, "attention", "sm90")
    # the key loop runs its full tiles without the tail check, then the tail (intent_eqsat.ir.tail_split): the
    # scores and the value contraction in each; each of the two is dispatched on 0 < D <= TILE_K
    # (intent_eqsat.ir.unswitch: without the head-dim loop, or the loop nest as it was)
    assert source.count("tl.dot(") == 8 and "_exp_approx_ftz(" in source   # approximate exps that flush
    assert source.count("if v_single_trip") == 2
    mod = load_source(source, gen_dir, "attention")
    for seed, d in ((3, SIZES["D"]), (4, 40)):          # one head-dim tile (the guarded branch), then two
        args = random_inputs(module, "attention", seed, sizes={**SIZES, "D": d})
        got = run_launcher(mod, copy_args(args))
        want = evaluate(module, "attention", {n: v for n, v in copy_args(args).items() if n != "O"})["O"]
        assert np.isfinite(got["O"]).all()
        assert_matches(got["O"], np.asarray(want), f"attention (D = {d}) under the interpreter vs the KIR reference",
                       rtol=1e-2, atol=1e-2)


@pytest.mark.slow
@pytest.mark.usefixtures("interpret_mode")
def test_flash_attention_with_a_literal_head_dim_runs_one_loop_under_the_interpreter(gen_dir) -> None:
    """The benchmark's head-dim-specialized kernel (``bench/suite/attention_bf16_d64.kir``, here with f16 operands:
    the Triton 3.6 interpreter computes ``tl.dot`` of bf16 operands wrongly on the CPU, f16 ones right) with 64-wide
    tiles: the head-dim contraction takes one tile, so each key loop (the full tiles, unchecked, and the last partial
    one) holds both ``tl.dot``s, and it still matches the KIR reference on partial query and key tiles."""
    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    from intent_eqsat.kir.inputs import random_inputs
    from intent_eqsat.pipeline import make_options
    from intent_eqsat.optimizer import optimize

    text = (ROOT / "bench" / "suite" / "attention_bf16_d64.kir").read_text().replace("bf16", "f16")
    module = kir.parse(text, filename="attention_f16_d64.kir")
    name = module.kernels[0].name
    opts = make_options({"numerics": "relaxed_normalization"})
    program = optimize(construct(module, options=opts), target="sm90", tile_candidates=(64,)).program
    source = serialize(program, name, "sm90")
    body = source.split(f"def {name}(")[1].split("\ndef ")[0]
    # the full key tiles without the tail check, then the last partial tile (intent_eqsat.ir.tail_split)
    assert body.count("for _iv") == 2 and body.count("tl.dot(") == 4, body
    full = body.split("for _iv")[1]
    assert "tl.where(" in full and full.count("mask=") == 2, full      # row (query) and head-dim masks only
    mod = load_source(source, gen_dir, name)
    args = random_inputs(module, name, 4, sizes={"Z": 1, "H": 2, "S": 70, "T": 131})
    got = run_launcher(mod, copy_args(args))
    want = evaluate(module, name, {n: v for n, v in copy_args(args).items() if n != "O"})["O"]
    assert np.isfinite(got["O"]).all()
    assert_matches(got["O"], np.asarray(want), "head-dim-specialized attention under the interpreter vs the KIR "
                   "reference", rtol=1e-2, atol=1e-2)


@pytest.mark.slow
def test_flash_attention_exports_to_tileir_bytecode(tmp_path) -> None:
    """The same program through the cuTile provider: ct.mma with a permuted key tile for the scores and the value
    contraction, tile reductions for the row max and mass, approximate exps; exported to TileIR bytecode for sm_90
    (no GPU: tileiras and a device are not here; the H200 runs have been Triton only, see docs/perf.md)."""
    pytest.importorskip("cuda.tile")
    from intent_eqsat import pipeline
    from intent_eqsat.construct import construct
    from intent_eqsat.providers.cutile import TILEIR_MAGIC, export
    from intent_eqsat.optimizer import optimize

    module = pipeline.load(str(ROOT / "examples" / "corpus" / "attention.kir"))
    opts = pipeline.make_options({"numerics": "relaxed_normalization"})
    program = optimize(construct(module, options=opts), target="sm90", tile_candidates=(64,)).program
    path = export(program, "attention", "sm90", None, tmp_path)
    assert path.read_bytes().startswith(TILEIR_MAGIC)
    src = path.with_suffix(".py").read_text()
    # full and tail key tiles, each dispatched on the head dim (intent_eqsat.ir.unswitch), as for Triton
    assert src.count("ct.mma(") == 8 and "ct.permute(" in src
    assert "ct.max(" in src and "ct.sum(" in src and "RoundingMode.APPROX" in src
