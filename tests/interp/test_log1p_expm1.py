"""``log1p`` and ``expm1`` (issue 27 item 7): KIR functions with their own reference semantics (log(1 + x) without
the rounding of 1 + x, exp(x) - 1 without the cancellation), through construction, the optimizer and the Triton
provider (libdevice on a GPU; Goldberg's and Kahan's corrections under the interpreter), rejected early by cuTile
as a provider surface. Kernels are written as a PyTorch user writes the losses and activations that need them
(``F.softplus``, ``F.binary_cross_entropy_with_logits(reduction="none")``, ``F.elu``, ``torch.log1p(-p)``), at odd
sizes, f32 and bf16, and compared with torch in float64 at inputs where the naive formula loses every digit."""
from __future__ import annotations

import math

import numpy as np
import pytest

import intent_eqsat
from intent_eqsat import kir
from intent_eqsat.errors import IntentError
from intent_eqsat.providers.errors import ProviderSurfaceUnsupported
from intent_eqsat.providers.loader import load_source

torch = pytest.importorskip("torch")

KERNELS = """\
kernel softplus(X: f32[M, N], Y: out f32[M, N]) {
  Y[i, j] = select(X[i, j] > 20.0, X[i, j], log1p(exp(X[i, j])))
}
kernel bce_logits(X: f32[M, N], T: f32[M, N], L: out f32[M, N]) {
  L[i, j] = max(X[i, j], 0.0) - X[i, j] * T[i, j] + log1p(exp(-abs(X[i, j])))
}
kernel elu(X: f32[B, C, L], alpha: f32, Y: out f32[B, C, L]) {
  Y[b, c, l] = select(X[b, c, l] > 0.0, X[b, c, l], alpha * expm1(X[b, c, l]))
}
kernel log_not_bf16(P: bf16[N], Y: out bf16[N]) {
  Y[n] = cast<bf16>(log1p(-cast<f32>(P[n])))
}
"""


def _inputs(name: str, rng: np.random.Generator) -> tuple[dict, "callable"]:
    """Arguments (numpy, f32/bf16 as torch wants) and the float64 torch reference of each kernel."""
    def mixed(*shape):     # tiny magnitudes (where log(1 + x) and exp(x) - 1 lose digits), ordinary and large
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-9, 2, shape)
        return x.astype(np.float32)
    if name == "softplus":
        x = mixed(37, 53)
        return {"X": x}, lambda: {"Y": torch.nn.functional.softplus(torch.from_numpy(x).double())}
    if name == "bce_logits":
        x, t = mixed(29, 41), rng.random((29, 41)).astype(np.float32)
        return {"X": x, "T": t}, lambda: {"L": torch.nn.functional.binary_cross_entropy_with_logits(
            torch.from_numpy(x).double(), torch.from_numpy(t).double(), reduction="none")}
    if name == "elu":
        x = mixed(3, 5, 67)
        return {"X": x, "alpha": 1.5}, lambda: {"Y": torch.nn.functional.elu(torch.from_numpy(x).double(), 1.5)}
    if name == "log_not_bf16":
        p = torch.from_numpy(rng.random(101).astype(np.float32) * 1e-3).to(torch.bfloat16)
        return {"P": p}, lambda: {"Y": torch.log1p(-p.double())}
    raise KeyError(name)


def test_the_kir_reference_is_the_accurate_function() -> None:
    """The evaluator computes log1p/expm1 themselves: at x = 1e-10 log(1 + x) in f32 is 0, log1p is x."""
    module = kir.parse("kernel k(X: f32[N], Y: out f32[N], Z: out f32[N]) {\n"
                       "  Y[n] = log1p(X[n])\n  Z[n] = expm1(X[n])\n}\n", filename="k.kir")
    x = np.array([1e-10, -1e-7, 0.5, -0.75, 30.0, -0.999], np.float32)
    out = kir.evaluate(module, "k", {"X": x})
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out["Y"], np.log1p(x64).astype(np.float32), rtol=1e-7)
    np.testing.assert_allclose(out["Z"], np.expm1(x64).astype(np.float32), rtol=1e-7)
    assert out["Y"][0] == np.float32(1e-10) and np.log(np.float32(1) + x[0]) == 0.0


def test_log1p_takes_floats_only() -> None:
    with pytest.raises(IntentError, match=r"k\.kir:2:10: log1p needs a floating-point argument, got i32"):
        kir.verify(kir.parse("kernel k(X: i32[N], Y: out f32[N]) {\n  Y[n] = log1p(X[n])\n}\n",
                             filename="k.kir"))


@pytest.mark.usefixtures("interpret_mode")
@pytest.mark.parametrize("name", ["softplus", "bce_logits", "elu", "log_not_bf16"])
def test_kernels_match_torch_in_float64_where_the_naive_formula_fails(name, gen_dir) -> None:
    ck = intent_eqsat.compile(KERNELS, filename="losses.kir", kernel=name, target="sm90", provider="triton",
                              cache=False)
    mod = load_source(ck.sources[name], gen_dir, name)
    args, reference = _inputs(name, np.random.default_rng(7))
    tensors = {n: (torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a) for n, a in args.items()}
    outs = {}
    for a in ck.program.kernel(name).abi:
        if a.access == "write" and not a.private:
            like = next(t for t in tensors.values() if isinstance(t, torch.Tensor))
            outs[a.name] = torch.full(like.shape, float("nan"), dtype=like.dtype)
    mod.launch(**tensors, **outs)
    for out_name, want in reference().items():
        got = outs[out_name].double()
        bf16 = outs[out_name].dtype == torch.bfloat16
        # elementwise relative error: the small values are the point (a naive log(1 + x) gives 0 or 2x there)
        rel = ((got - want).abs() / want.abs().clamp_min(1e-30)).max().item()
        assert rel <= (8e-3 if bf16 else 2e-6), (name, out_name, rel)


def test_cutile_declares_them_a_provider_surface_before_printing() -> None:
    with pytest.raises(ProviderSurfaceUnsupported, match="log1p"):
        intent_eqsat.compile(KERNELS, filename="losses.kir", kernel="softplus", target="sm90", provider="cutile",
                             cache=False)


def test_the_cost_model_prices_them_like_a_logarithm() -> None:
    from intent_eqsat.extract.cost import _SPECIAL
    assert _SPECIAL["log1p"][0] == _SPECIAL["log"][0] and _SPECIAL["expm1"][0] == _SPECIAL["exp"][0]
    assert math.isfinite(intent_eqsat.compile(KERNELS, filename="losses.kir", kernel="elu", provider=None,
                                              cache=False).cost)
