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
    from intent_eqsat.rules import optimize

    module = pipeline.load(str(ROOT / "examples" / "corpus" / "attention.kir"))
    opts = pipeline.make_options({"numerics": "relaxed_normalization"})
    program = optimize(construct(module, options=opts), target="sm90", tile_candidates=(32,)).program
    source = serialize(program, "attention", "sm90")
    assert source.count("tl.dot(") == 2 and "tl.exp(" in source          # two contractions, approximate exp
    mod = load_source(source, gen_dir, "attention")
    args = random_inputs(module, "attention", 3, sizes=SIZES)
    got = run_launcher(mod, copy_args(args))
    want = evaluate(module, "attention", {n: v for n, v in copy_args(args).items() if n != "O"})["O"]
    assert np.isfinite(got["O"]).all()
    assert_matches(got["O"], np.asarray(want), "attention under the interpreter vs the KIR reference",
                   rtol=1e-2, atol=1e-2)


@pytest.mark.slow
def test_flash_attention_exports_to_tileir_bytecode(tmp_path) -> None:
    """The same program through the cuTile provider: ct.mma with a permuted key tile for the scores and the value
    contraction, tile reductions for the row max and mass, approximate exps; exported to TileIR bytecode for sm_90
    (no GPU: tileiras and a device are not here; the H200 runs have been Triton only, see docs/perf.md)."""
    pytest.importorskip("cuda.tile")
    from intent_eqsat import pipeline
    from intent_eqsat.construct import construct
    from intent_eqsat.providers.cutile import TILEIR_MAGIC, export
    from intent_eqsat.rules import optimize

    module = pipeline.load(str(ROOT / "examples" / "corpus" / "attention.kir"))
    opts = pipeline.make_options({"numerics": "relaxed_normalization"})
    program = optimize(construct(module, options=opts), target="sm90", tile_candidates=(64,)).program
    path = export(program, "attention", "sm90", None, tmp_path)
    assert path.read_bytes().startswith(TILEIR_MAGIC)
    src = path.with_suffix(".py").read_text()
    assert src.count("ct.mma(") == 2 and "ct.permute(" in src
    assert "ct.max(" in src and "ct.sum(" in src and "RoundingMode.APPROX" in src
