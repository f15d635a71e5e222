"""KIR specializations through the providers (SPEC IR-2, ``compile(specialize=...)``): one module holds the general
kernel and one physical kernel per requested value; ``launch()`` runs the specialized kernel when the shapes give the
symbol that value (and, for Triton, the caller chose no parameters or launch resources) and the general kernel
otherwise. Triton: both paths match the KIR float64 reference under ``TRITON_INTERPRET=1``; cuTile: both kernels
export to TileIR bytecode and the launcher hands ``ct.launch`` the kernel and grid of the values given."""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat import api, pipeline
from intent_eqsat.kir.evaluate import evaluate
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.providers.loader import load_source

from tests.interp.helpers import ROOT, assert_matches, copy_args

GEMM = ROOT / "examples" / "corpus" / "gemm.kir"


def _spy(mod, name: str) -> list[tuple]:
    """Wrap ``mod.<name>`` so that its calls are recorded (the launcher looks it up as a module global)."""
    calls: list[tuple] = []
    inner = getattr(mod, name)

    def wrapper(*a, **kw):
        calls.append((a, kw))
        return inner(*a, **kw)

    setattr(mod, name, wrapper)
    return calls


@pytest.mark.usefixtures("interpret_mode")
def test_launch_dispatches_to_the_specialized_kernel_and_both_match_the_reference(gen_dir) -> None:
    import torch

    ck = api.compile(GEMM, specialize={"K": (32,)}, sizes={"M": 64, "N": 64, "K": 32})
    specs = ck.specializations["gemm"]
    assert [(s.values, s.kernel) for s in specs] == [((("K", 32),), "gemm__K32")]
    spec_kernel = specs[0].module.kernel("gemm__K32")
    assert [str(e) for e in spec_kernel.abi[0].value.type.shape] == ["M", "32"]     # K is a literal there
    src = ck.source
    assert "def gemm(" in src and "def gemm__K32(" in src and "def _launch_K32(" in src
    mod = load_source(src, gen_dir, "gemm")
    calls = _spy(mod, "_launch_K32")
    module = pipeline.load(str(GEMM))
    for k, expect_special in ((32, True), (37, False), (32, False)):
        args = random_inputs(module, "gemm", k, sizes={"M": 19, "N": 23, "K": k})
        t = {n: torch.from_numpy(a.copy()) for n, a in copy_args(args).items()}
        before = len(calls)
        if expect_special:
            mod.launch(**t)
        else:       # another value, or launch resources chosen: the general kernel
            mod.launch(**t, **({} if k != 32 else {"num_warps": 4}))
        assert len(calls) - before == (1 if expect_special else 0), (k, expect_special)
        want = evaluate(module, "gemm", {n: v for n, v in copy_args(args).items() if n != "C"})["C"]
        assert_matches(t["C"].numpy(), np.asarray(want), f"gemm K={k} (specialized: {expect_special})")


def test_a_module_without_specializations_has_no_dispatch() -> None:
    plain = api.compile(GEMM, optimize=False)
    assert plain.specializations == {}
    src = plain.source
    assert "num_warps=None" not in src and "_launch_" not in src and "KIR specialization" not in src


def test_bad_requests_are_usage_errors() -> None:
    with pytest.raises(pipeline.UsageError, match=r"no kernel has the shape symbol\(s\) D \(shape symbols here: "
                                                 r"K, M, N\)"):
        api.compile(GEMM, specialize={"D": 64}, optimize=False)
    with pytest.raises(pipeline.UsageError, match=r"specialize K: expected integer values >= 1, got '0'"):
        api.compile(GEMM, specialize="K=0", optimize=False)
    with pytest.raises(pipeline.UsageError, match=r"expected SYMBOL=VALUE"):
        api.compile(GEMM, specialize="K", optimize=False)
    assert pipeline.make_specialize("D=64,128; H=8") == {"D": (64, 128), "H": (8,)}
    assert pipeline.make_specialize({"D": 64}) == {"D": (64,)}


def test_the_specialized_program_is_the_program_of_the_literal_kernel() -> None:
    """The specialization is compiled exactly as the kernel with the literal written in its KIR would be."""
    from intent_eqsat import ir, kir

    sizes = {"M": 512, "N": 512, "K": 32}
    res = pipeline.run(GEMM, provider=None, sizes=sizes, specialize={"K": 32})
    spec = res.specializations["gemm"][0]
    text = GEMM.read_text().replace("kernel gemm(", "kernel gemm__K32(").replace("K]", "32]").replace("[K,", "[32,")
    literal = pipeline.run(kir.parse(text, filename="gemm_k32.kir"), provider=None, sizes=sizes)
    assert "K" not in [p for prm in kir.parse(text).kernels[0].params for d in prm.dims for p in d]
    assert ir.print_module(spec.module) == ir.print_module(literal.program)
    assert spec.params == literal.optimized.params


def test_each_specialization_is_optimized_for_its_own_values(monkeypatch) -> None:
    """A specialization only runs at its values, so the problem it is tuned for has them (a tuning measurement
    of the literal kernel names the extent it was taken at), whatever the general kernel's ``sizes`` say."""
    seen: list[dict] = []
    real = pipeline.optimize

    def spy(program, **kw):
        seen.append(dict(kw.get("sizes") or {}))
        return real(program, **kw)

    monkeypatch.setattr(pipeline, "optimize", spy)
    res = pipeline.run(GEMM, provider=None, sizes={"M": 256, "N": 256, "K": 64}, specialize={"K": (32, 128)})
    assert [s.values for s in res.specializations["gemm"]] == [(("K", 32),), (("K", 128),)]
    assert seen == [{"M": 256, "N": 256, "K": 64}, {"M": 256, "N": 256, "K": 32}, {"M": 256, "N": 256, "K": 128}]


def test_cutile_module_exports_every_kernel_and_launches_the_one_the_shapes_ask_for(tmp_path) -> None:
    pytest.importorskip("cuda.tile")
    import torch
    from cuda.tile.compilation import export_kernel

    from intent_eqsat.providers.cutile import load_source as ct_load, write_source as ct_write

    ck = api.compile(GEMM, provider="cutile", specialize={"K": (32, 64)}, sizes={"M": 256, "N": 256, "K": 32})
    mod = ct_load(ct_write(ck.source, "gemm", tmp_path))
    assert mod.KERNEL_NAME == "gemm" and mod._K32_KERNEL_NAME == "gemm__K32" and mod._K64_VALUES == {"K": 64}
    for prefix in ("", "_K32_", "_K64_"):        # every kernel of the module is a legal cuTile kernel
        out = tmp_path / f"k{prefix}.tileirbc"
        export_kernel(getattr(mod, f"{prefix}KERNEL"), [getattr(mod, f"{prefix}kernel_signature")()], str(out),
                      gpu_code="sm_90", output_format="tileir_bytecode", bytecode_version="13.3")
        assert out.read_bytes().startswith(b"\x7fTileIR\x00")
    launched: list[tuple] = []

    class _FakeCt:              # ct.launch needs a GPU: record what the launcher hands it
        @staticmethod
        def launch(stream, grid, kernel, args):
            launched.append((grid, kernel))

    mod.ct = _FakeCt
    for k, want in ((32, mod._K32_KERNEL), (64, mod._K64_KERNEL), (37, mod.KERNEL)):
        a, b, c = torch.zeros(100, k, dtype=torch.float16), torch.zeros(k, 130, dtype=torch.float16), \
            torch.zeros(100, 130, dtype=torch.float16)
        mod.launch(None, a, b, c)
        grid, kernel = launched[-1]
        assert kernel is want, k
        assert grid == (mod.grid(a, b, c) if k == 37 else getattr(mod, f"_K{k}_grid")(a, b, c))
    with pytest.raises(ValueError, match="argument B has extent 32 on axis 0; the view needs 64"):
        mod._launch_K64(None, torch.zeros(100, 64, dtype=torch.float16), torch.zeros(32, 130, dtype=torch.float16),
                        torch.zeros(100, 130, dtype=torch.float16))
