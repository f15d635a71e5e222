"""The carried-prefix scan (``ir/carried_prefix.py``) as generated Triton source, under Triton's interpreter: a
``torch.cumsum(x, -1)`` compiled for 32768 x 32768 (one program per row walking its column tiles with the running
sum carried over 256-wide column tiles), launched at sizes whose rows span several tiles, against float64 (the
other scan kinds are checked in the GPU IR interpreter: ``tests/cpu/rules/test_carried_prefix.py``)."""
from __future__ import annotations

import pytest

import intent_eqsat
from intent_eqsat.ir.core import walk

CASES = {
    "cumsum_f32": ("kernel cumsum_f32(X: f32[M, N], Y: out f32[M, N]) {\n  Y[i, j] = cumsum(j: X[i, j])\n}",
                   {"M": 32768, "N": 32768}, "float32"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_carried_prefix_source_matches_float64(name, gen_dir, interpret_mode) -> None:
    import torch
    from intent_eqsat.providers.loader import load_source
    text, sizes, dtype = CASES[name]
    ck = intent_eqsat.compile(text, target="sm90", provider="triton", sizes=sizes)
    k = ck.program.kernels[0]
    assert len(k.space.segments[0].extents) == 1, "the column tiles became a loop inside each row program"
    assert [op.name for op in walk(k.body)].count("scan") == 1
    mod = load_source(ck.source, gen_dir, name)
    torch.manual_seed(0)
    for m, n in ((3, 1000), (2, 2001)):
        x = torch.randn(m, n).to(getattr(torch, dtype))
        y = torch.full((m, n), float("nan"))
        mod.launch(x, y)
        xd = x.double()
        want = torch.cumsum(xd, 1)
        scale = want.abs().max().clamp_min(1.0)
        err = ((y.double() - want).abs().max() / scale).item()
        assert err < 1e-5, (name, m, n, err)
