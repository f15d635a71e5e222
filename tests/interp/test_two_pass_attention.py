"""Attention under the default numerics (``source``: no online renormalization) blocked over key tiles in two passes
(issue 23 item 2, ``reduction.key_block_{max,mass,moment}``): the row maximum, then the mass and the moment, each a
loop over tiles of keys whose scores are a matrix-unit contract, the moment a contract of the weights with the
value tile. Shown on kernels written the way a PyTorch user writes ``softmax(q @ k.T * scale) @ v``: the suite's
bf16 multi-head attention, its causal form, and an f32 rank-3 cross-attention with a value width other than the
head dimension, each compiled for a realistic problem and then run at small odd sizes by the GPU IR interpreter
(and the f32 one by the Triton interpreter) against float64."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import intent_eqsat
from intent_eqsat import ir
from intent_eqsat.providers.loader import load_source

from tests.interp.helpers import loop_steps

ROOT = Path(__file__).resolve().parents[2]

CROSS = """\
kernel cross_attn(Q: f32[B, S, D], K: f32[B, T, D], V: f32[B, T, E], O: out f32[B, S, E]) {
  let s[b, i, j] = sum(d: Q[b, i, d] * K[b, j, d]) * 0.125
  let mx[b, i] = max(j: s[b, i, j])
  let p[b, i, j] = exp(s[b, i, j] - mx[b, i])
  O[b, i, e] = sum(j: p[b, i, j] * V[b, j, e]) / sum(j: p[b, i, j])
}
"""

#: name -> (KIR text, the problem it is compiled for, the small odd sizes it is run at)
KERNELS = {
    "attention_bf16": ((ROOT / "bench" / "suite" / "attention_bf16.kir").read_text(),
                       {"Z": 4, "H": 32, "S": 4096, "T": 4096, "D": 64}, {"Z": 1, "H": 2, "S": 37, "T": 150, "D": 64}),
    "causal_attention_bf16": ((ROOT / "bench" / "suite" / "causal_attention_bf16.kir").read_text(),
                              {"Z": 4, "H": 32, "S": 4096, "T": 4096, "D": 64},
                              {"Z": 1, "H": 2, "S": 150, "T": 150, "D": 64}),
    "cross_attn": (CROSS, {"B": 8, "S": 2000, "T": 3000, "D": 64, "E": 128}, {"B": 2, "S": 45, "T": 133, "D": 24,
                                                                              "E": 40}),
}

_COMPILED: dict = {}


def _compiled(name: str):
    if name not in _COMPILED:
        text, sizes, _ = KERNELS[name]
        _COMPILED[name] = intent_eqsat.compile(text, filename=f"{name}.kir", target="sm90", provider="triton",
                                               sizes=sizes, cache=False)
    return _COMPILED[name]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_key_loop_takes_a_tile_of_keys(name) -> None:
    ck = _compiled(name)
    fired = ck.report["rules_fired"]
    assert all(fired.get(f"reduction.key_block_{r}") for r in ("max", "mass", "moment")), fired
    steps = loop_steps(ck.program, name, "T")
    assert steps and 1 not in steps, steps           # no loop runs one key per iteration
    assert ck.cost.total < 0.05, ck.cost.total        # modelled ms, not minutes (the per-key form: 6949 s)
    assert "tl.dot(" in ck.source


def _reference(name: str, args: dict) -> np.ndarray:
    f = {k: np.asarray(v, np.float64) for k, v in args.items() if isinstance(v, np.ndarray)}
    if name == "cross_attn":
        s = np.einsum("bid,bjd->bij", f["Q"], f["K"]) * 0.125
        v = f["V"]
    else:
        s = np.einsum("zhid,zhjd->zhij", f["Q"], f["K"]) * args["scale"]
        v = f["V"]
        if name.startswith("causal"):
            i, j = np.indices(s.shape[-2:])
            s = np.where(j <= i, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("...ij,...je->...ie", p, v) / p.sum(-1)[..., None]


def _args(name: str, rng: np.random.Generator) -> dict:
    import ml_dtypes
    _, _, small = KERNELS[name]
    if name == "cross_attn":
        b, s, t, d, e = (small[k] for k in "BSTDE")
        return {"Q": rng.standard_normal((b, s, d)).astype(np.float32),
                "K": rng.standard_normal((b, t, d)).astype(np.float32),
                "V": rng.standard_normal((b, t, e)).astype(np.float32)}
    z, h, s, t, d = (small[k] for k in "ZHSTD")
    bf = ml_dtypes.bfloat16
    return {"Q": rng.standard_normal((z, h, s, d)).astype(bf), "K": rng.standard_normal((z, h, t, d)).astype(bf),
            "V": rng.standard_normal((z, h, t, d)).astype(bf), "scale": 0.125}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_two_pass_program_computes_attention(name) -> None:
    """The extracted program, run by the GPU IR interpreter at small odd sizes, against float64."""
    ck = _compiled(name)
    args = _args(name, np.random.default_rng(11))
    out_shape = args["Q"].shape[:-1] + (args["V"].shape[-1],)
    out_dtype = args["Q"].dtype
    got = ir.interpret(ck.program, name, {**args, "O": np.zeros(out_shape, out_dtype)})["O"].astype(np.float64)
    want = _reference(name, args)
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert rel < (1e-2 if out_dtype != np.float32 else 1e-5), rel


@pytest.mark.usefixtures("interpret_mode")
def test_the_f32_program_runs_under_the_triton_interpreter(gen_dir) -> None:
    torch = pytest.importorskip("torch")
    ck = _compiled("cross_attn")
    mod = load_source(ck.source, gen_dir, "cross_attn_two_pass")
    args = _args("cross_attn", np.random.default_rng(5))
    t = {k: torch.from_numpy(v) for k, v in args.items()}
    o = torch.full(args["Q"].shape[:-1] + (args["V"].shape[-1],), float("nan"))
    mod.launch(t["Q"], t["K"], t["V"], o)
    want = _reference("cross_attn", args)
    rel = np.linalg.norm(o.numpy().astype(np.float64) - want) / np.linalg.norm(want)
    assert rel < 1e-5, rel
