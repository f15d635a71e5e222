"""Row and column statistics of a contraction's result on the matrix unit (issue 26 item 6, in part): a softmax or a
LayerNorm after a linear layer, a BatchNorm over its rows. Each statistic (``max(n: z[m, n])``, ``sum(n: z[m, n])``,
the variance) reads ``z = sum(k: X[m, k] * W[k, n])`` over its members; blocked over ``TILE_R`` members, the member's
nested sum is lifted as one loop with a ``[T, TR]`` accumulator (``reduction.lift_nested_loop_r``) and contracted
over K tiles (``contraction.contract_loop_t*``). Before, each statistic recomputed ``z`` one member at
a time on the FMA pipe (a GEMV per member, predicted 5.7-8.7 ms for the kernels below instead of 0.16-0.32 ms).

Kernels written as a PyTorch user writes them (an ``nn.Linear`` weight read as ``[N, K]``, bf16 inputs with f32
statistics, a column statistic), compiled for realistic problems, then run at small odd sizes (K not a multiple of
any K tile, N and M not multiples of the member tile) by the GPU IR interpreter and the Triton interpreter against
float64."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import intent_eqsat
from intent_eqsat import ir
from intent_eqsat.providers.loader import load_source

from tests.interp.helpers import loop_steps

SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite"
EPS = 1e-5


def _softmax(x: dict) -> np.ndarray:
    z = x["X"] @ x["W"]
    p = np.exp(z - z.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def _layernorm(x: dict) -> np.ndarray:
    z = x["X"] @ x["weight"].T
    mu = z.mean(1, keepdims=True)
    var = ((z - mu) ** 2).mean(1, keepdims=True)
    return (z - mu) / np.sqrt(var + EPS) * x["gamma"] + x["beta"]


def _batchnorm(x: dict) -> np.ndarray:
    z = x["X"] @ x["W"]
    mu = z.mean(0, keepdims=True)
    var = ((z - mu) ** 2).mean(0, keepdims=True)
    return (z - mu) / np.sqrt(var + EPS)


#: name -> (the problem it is compiled for, the small odd sizes it runs at, float64 reference, output, statistics)
KERNELS = {
    "linear_softmax_f32": ({"M": 4096, "K": 512, "N": 1024}, {"M": 37, "K": 45, "N": 70}, _softmax, "Y", 2),
    "linear_layernorm_bf16": ({"M": 8192, "K": 1024, "N": 768}, {"M": 29, "K": 51, "N": 66}, _layernorm, "Y", 2),
    "linear_batchnorm_f32": ({"M": 2048, "K": 512, "N": 384}, {"M": 53, "K": 33, "N": 41}, _batchnorm, "Y", 2),
}

_COMPILED: dict = {}


def _compiled(name: str):
    if name not in _COMPILED:
        _COMPILED[name] = intent_eqsat.compile(SUITE / f"{name}.kir", target="sm90", provider="triton",
                                               sizes=KERNELS[name][0], cache=False)
    return _COMPILED[name]


def _args(name: str, rng: np.random.Generator) -> dict:
    import ml_dtypes
    sizes = KERNELS[name][1]
    m, k, n = sizes["M"], sizes["K"], sizes["N"]
    if name == "linear_layernorm_bf16":
        bf = ml_dtypes.bfloat16
        return {"X": rng.standard_normal((m, k)).astype(bf), "weight": rng.standard_normal((n, k)).astype(bf),
                "gamma": (1.0 + 0.1 * rng.standard_normal(n)).astype(bf),
                "beta": (0.1 * rng.standard_normal(n)).astype(bf), "eps": np.float32(EPS)}
    args = {"X": rng.standard_normal((m, k)).astype(np.float32), "W": rng.standard_normal((k, n)).astype(np.float32)}
    if name == "linear_batchnorm_f32":
        args["eps"] = np.float32(EPS)
    return args


def _reference(name: str, args: dict) -> np.ndarray:
    return KERNELS[name][2]({a: np.asarray(v, np.float64) for a, v in args.items()})


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_statistic_recomputes_the_contraction_on_k_tiles(name) -> None:
    """No loop over K runs one member at a time: the output's contraction and every statistic's are K-tiled
    contracts (``tl.dot``), and the model prices the program at a fraction of a millisecond (the member-at-a-time
    statistics: 5.7-8.7 ms)."""
    ck = _compiled(name)
    stats = KERNELS[name][4]
    fired = ck.report["rules_fired"]
    # the member-tile forms (a statistic's [T, TR] accumulator); the output's contraction is contract_loop_c*
    assert sum(v for r, v in fired.items() if r.startswith("contraction.contract_loop_t")) >= stats, fired
    steps = loop_steps(ck.program, name, "K")
    assert len(steps) >= 1 + stats and 1 not in steps, steps
    assert ck.source.count("tl.dot(") >= 1 + stats
    assert ck.cost.total < 1e-3, ck.cost.total


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_program_computes_the_statistics(name) -> None:
    """The extracted program, run by the GPU IR interpreter at small odd sizes, against float64."""
    ck = _compiled(name)
    args = _args(name, np.random.default_rng(7))
    out = KERNELS[name][3]
    want = _reference(name, args)
    dtype = args["X"].dtype
    got = ir.interpret(ck.program, name, {**args, out: np.zeros(want.shape, dtype)})[out].astype(np.float64)
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert rel < (1e-5 if dtype == np.float32 else 1e-2), rel


@pytest.mark.usefixtures("interpret_mode")
@pytest.mark.parametrize("name", ["linear_softmax_f32", "linear_batchnorm_f32"])
def test_the_f32_programs_run_under_the_triton_interpreter(name, gen_dir) -> None:
    torch = pytest.importorskip("torch")
    ck = _compiled(name)
    mod = load_source(ck.source, gen_dir, f"{name}_stat")
    args = _args(name, np.random.default_rng(5))
    want = _reference(name, args)
    t = [torch.from_numpy(v) if isinstance(v, np.ndarray) and v.ndim else float(v) for v in args.values()]
    y = torch.full(want.shape, float("nan"))
    mod.launch(*t, y)
    rel = np.linalg.norm(y.numpy().astype(np.float64) - want) / np.linalg.norm(want)
    assert rel < 1e-5, rel
