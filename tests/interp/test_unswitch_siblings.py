"""The Triton program of a row kernel whose passes run once under a launch guard (``ir.unswitch.
unswitch_sibling_loops`` on ``tests/cpu/ir/bound/layernorm_rows.gir``) runs under ``TRITON_INTERPRET=1`` and
matches the GPU IR's NumPy interpreter with rows within one tile (the guarded branch) and wider (the loops)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from intent_eqsat import ir
from intent_eqsat.ir.unswitch import unswitch_sibling_loops
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.triton import serialize

from tests.interp.helpers import ROOT, assert_matches, copy_args, run_launcher

pytestmark = pytest.mark.usefixtures("interpret_mode")


@pytest.mark.parametrize("n", [200, 300])
def test_guarded_row_program_runs_under_the_triton_interpreter(gen_dir, n: int) -> None:
    module = ir.parse_module((ROOT / "tests" / "cpu" / "ir" / "bound" / "layernorm_rows.gir").read_text())
    module = replace(module, kernels=[unswitch_sibling_loops(k) for k in module.kernels])
    ir.verify(module)
    source = serialize(module, "layernorm_f32", "sm90", None)
    assert "if " in source and "runs_once" in source
    mod = load_source(source, gen_dir, f"layernorm_rows_{n}")
    rng = np.random.default_rng(n)
    args = {"X": rng.standard_normal((5, n)).astype(np.float32), "gamma": rng.standard_normal(n).astype(np.float32),
            "beta": rng.standard_normal(n).astype(np.float32), "eps": 1e-5, "Y": np.zeros((5, n), np.float32)}
    want = ir.interpret(module, "layernorm_f32", copy_args(args))
    got = run_launcher(mod, args)
    assert_matches(got["Y"], want["Y"], f"layernorm rows N={n}")
