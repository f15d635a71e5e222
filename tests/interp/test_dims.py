"""Arithmetic dims through the Triton provider (issue 27 item 7): the launcher checks a view's shape against
``H - 2`` or ``(H + 2 - 3) // 2 + 1`` computed from the bound symbols, the torch-callable kernel allocates its
``out`` view at that shape, and the kernel (under the Triton interpreter) equals the KIR float64 reference. The
kernels are three of ``tests/cpu/kir/test_kir_dims.py`` (a strided padded 4-D convolution, a crop, a per-group
statistic read by ``c // CPG``), at odd sizes; the CPU tests run all of them through the IR interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import intent_eqsat
from intent_eqsat import kir
from intent_eqsat.kir.dims import dim_value
from tests.cpu.kir.test_kir_dims import KERNELS

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

SIZES = {"N": 3, "B": 2, "C": 3, "F": 2, "H": 11, "W": 9, "L": 13, "M": 7, "G": 2, "CPG": 3, "S": 5}


@pytest.mark.usefixtures("interpret_mode")
@pytest.mark.parametrize("name", ["conv2d_s2p1", "crop", "group_apply"])
def test_outs_are_allocated_at_the_dims_and_match_the_reference(name) -> None:
    module = kir.parse(KERNELS, filename="dims.kir")
    kernel = module.kernel(name)
    ck = intent_eqsat.compile(KERNELS, filename="dims.kir", kernel=name, target="sm90", provider="triton",
                              cache=False)
    rng = np.random.default_rng(5)
    ins = {p.name: rng.standard_normal([dim_value(d, SIZES) for d in p.dims]).astype(np.float32)
           for p in kernel.params if p.access != "out"}
    (out,) = [p for p in kernel.params if p.access == "out"]
    got = ck(*(torch.from_numpy(a.copy()) for a in ins.values()))
    want = kir.evaluate(module, name, dict(ins), float64=True)[out.name]
    assert tuple(got.shape) == want.shape == tuple(dim_value(d, SIZES) for d in out.dims)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("interpret_mode")
def test_the_launcher_refuses_an_out_view_of_another_shape() -> None:
    ck = intent_eqsat.compile(KERNELS, filename="dims.kir", kernel="conv1d_valid", target="sm90",
                              provider="triton", cache=False, optimize=False)
    x, k = torch.randn(3, 11), torch.randn(3)
    with pytest.raises(ValueError, match=r"Y: extent 1 is 10, expected H - 2 = 9"):
        ck(x, k, torch.empty(3, 10))
