"""Every kernel's Triton source AOT-compiles with no GPU (issue 5, "Must show", second bullet): for sm_90
(``GPUTarget("cuda", 90, 32)``, the bf16/f16 GEMM's PTX holds wgmma) and for gfx942 (``GPUTarget("hip", "gfx942",
64)``), or it is rejected with the right Unsupported kind. The precise/approximate spellings and FTZ-off are checked
in the PTX."""
from __future__ import annotations

import re

import pytest

from intent_eqsat.ir import parse_module
from intent_eqsat.providers.errors import ProviderSurfaceUnsupported, Unsupported
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.triton import serialize
from intent_eqsat.providers.triton.aot import compile_aot

from tests.interp.helpers import GEMM, gir_kernels, load_gir
from tests.interp.programs import ABI_GIR, PROGRAMS

pytest.importorskip("triton")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("jit_mode")]

#: (program, target) pairs whose rejection is expected, with the kind and reason
EXPECTED_REJECTIONS = {("shapes", "gfx942"): (ProviderSurfaceUnsupported, "no tf32")}


def _compile(module, kernel, target, gen_dir, params=None):
    mod = load_source(serialize(module, kernel, target, params), gen_dir, f"{kernel}")
    return compile_aot(mod, target)


def _cases():
    out = [("gemm", lambda: parse_module(GEMM.read_text()), "gemm", None)]
    out += [(f"{p.name}:{k}", (lambda p=p: load_gir(p)), k, None) for p, k in gir_kernels()]
    out += [(n, b, k, prm) for n, (b, k, _, _, prm) in sorted(PROGRAMS.items())]
    out.append(("abi", lambda: parse_module(ABI_GIR), "abi", None))
    return out


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
@pytest.mark.parametrize("name,build,kernel,params", _cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_compiles_or_is_rejected_with_its_kind(gen_dir, target, name, build, kernel, params) -> None:
    module = build()
    expected = EXPECTED_REJECTIONS.get((name, target))
    if expected is not None:
        kind, reason = expected
        with pytest.raises(kind, match=reason):
            serialize(module, kernel, target, params)
        return
    try:
        src = serialize(module, kernel, target, params)
    except Unsupported as e:
        # only a fixture written to be refused may be refused, and then with a located reason
        assert name.startswith("errors.gir"), f"{name} on {target}: {e}"
        assert e.location and e.reason
        return
    c = compile_aot(load_source(src, gen_dir, kernel), target)
    asm = c.asm["ptx"] if target == "sm90" else c.asm["amdgcn"]
    assert asm


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_gemm_uses_wgmma_on_sm90(gen_dir, dtype) -> None:
    text = GEMM.read_text().replace("view<f16", f"view<{dtype}").replace("frag<f16", f"frag<{dtype}")
    m = parse_module(text)
    c = _compile(m, "gemm", "sm90", gen_dir)                      # 64 x 64 x 32 tiles, num_warps = 4
    assert "wgmma" in c.asm["ptx"]
    amd = _compile(m, "gemm", "gfx942", gen_dir)
    assert "mfma" in amd.asm["amdgcn"]


def test_precise_math_and_ftz_off_in_ptx(gen_dir) -> None:
    """approximate=false: libdevice exp without .ftz, div.rn and sqrt.rn; approximate=true: div.full; the launch
    options keep libdevice FTZ off (enable_reflect_ftz=False) and fp fusion on."""
    m = PROGRAMS["ops_f32"][0]()
    ptx = _compile(m, "ops_f32", "sm90", gen_dir).asm["ptx"]
    assert "div.rn.f32" in ptx and "sqrt.rn.f32" in ptx        # precise div / sqrt / recip / rsqrt
    assert "div.full.f32" in ptx                                 # the approximate=true division
    assert "fma.rn.f32" in ptx                                   # libdevice's range reduction, FTZ off
    assert not re.search(r"\bfma\.rn\.ftz\.f32", ptx)
    assert "atom" not in ptx


def test_approximate_ftz_exponentials_are_ex2_ftz_in_ptx(gen_dir) -> None:
    """approximate + flush_to_zero f32 exp/exp2 (the flash-attention weights): ex2.approx.ftz.f32, while an
    approximate exp without the flag keeps ex2.approx.f32 (the kernel-wide FTZ stays off)."""
    m = PROGRAMS["ops_f32"][0]()
    src = serialize(m, "ops_f32", "sm90")
    assert "_exp_approx_ftz(" in src and "_exp2_approx_ftz(" in src
    ptx = _compile(m, "ops_f32", "sm90", gen_dir).asm["ptx"]
    assert len(re.findall(r"\bex2\.approx\.ftz\.f32", ptx)) >= 2
    assert re.search(r"\bex2\.approx\.f32", ptx)
    amd = serialize(m, "ops_f32", "gfx942")                    # no PTX there: the flush is spelled as a select
    assert "_exp_approx_ftz(" not in amd and "_ftz_f32(" in amd


def test_atomics_sem_and_scope_in_ptx(gen_dir) -> None:
    ptx = _compile(PROGRAMS["scatter"][0](), "scatter", "sm90", gen_dir).asm["ptx"]
    assert re.search(r"atom\.global\.gpu\.relaxed\.add\.f32|red\.global\.gpu\.relaxed\.add\.f32", ptx)
    assert re.search(r"atom\.global\.gpu\.acq_rel\.add", ptx)


@pytest.mark.parametrize("dtype", ["bf16"])        # f16 compiled before the fix too
def test_half_precision_max_min_reductions_and_scans_compile(gen_dir, dtype) -> None:
    """Triton builds the NaN-propagating maximum of two 16-bit floats in f32: a 16-bit ``tl.reduce`` /
    ``tl.associative_scan`` combine region then fails to verify and an element-wise ``max`` carried in a loop
    changes type. The serializer combines 16-bit maxima/minima in f32 and casts back (exact). A row cummax long
    enough to carry its prefix across column tiles (a loop-carried ``max``) and a row minimum, AOT-compiled."""
    import intent_eqsat
    kernels = {"cummax": f"kernel cummax_{dtype}(X: {dtype}[M, N], Y: out {dtype}[M, N]) {{\n"
                         "  Y[i, j] = cummax(j: X[i, j])\n}\n",
               "rowmin": f"kernel rowmin_{dtype}(X: {dtype}[M, N], R: out {dtype}[M]) {{\n"
                         "  R[i] = min(j: X[i, j])\n}\n"}
    for what, text in kernels.items():
        ck = intent_eqsat.compile(text, target="sm90", provider="triton", sizes={"M": 16384, "N": 65536},
                                  cache=False)
        assert ("associative_scan" if what == "cummax" else "tl.reduce") in ck.source
        c = compile_aot(load_source(ck.source, gen_dir, f"{what}_{dtype}"), "sm90")
        assert c.asm["ptx"]
