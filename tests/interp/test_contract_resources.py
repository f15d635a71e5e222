"""Issue 26 items 1, 3, 5, 7 at the provider: the contraction suite kernels (transposed, rank-3/4, broadcast,
fp32 at ieee and tf32, int8) compiled for the H200 problem sizes the benchmark uses are AOT-compiled for sm_90 here
(no GPU): the matrix-unit form is in the PTX where the operands allow one (wgmma for bf16, tf32 and int8), and the
shared memory Triton allocates fits the target (the launch-time OutOfResources of issue 26 cannot happen)."""
from __future__ import annotations

import pytest

from intent_eqsat import api
from intent_eqsat.providers.loader import load_source
from intent_eqsat.providers.targets import SM90
from intent_eqsat.providers.triton.aot import compile_aot

from tests.interp.helpers import ROOT

SQUARE = {"M": 4096, "N": 4096, "K": 4096}
CASES = [
    ("gemm_nn_f32", SQUARE, None, False),
    ("gemm_nn_f32", SQUARE, {"fp32_contract": "tf32"}, True),
    ("gemm_tn_f32", SQUARE, {"fp32_contract": "tf32"}, True),
    ("gemm_tt_bf16", SQUARE, None, True),
    ("gemm_i8", SQUARE, None, True),
    ("linear3d_bf16", {"B": 8, "S": 1024, "K": 4096, "N": 4096}, None, True),
    ("matmul4d_f32", {"B": 4, "H": 8, "S": 1024, "K": 128, "N": 512}, {"fp32_contract": "tf32"}, True),
]


@pytest.mark.parametrize("name,sizes,options,wgmma", CASES,
                         ids=[f"{c[0]}-{(c[2] or {}).get('fp32_contract', 'default')}" for c in CASES])
def test_contract_kernel_compiles_for_sm90_within_shared_memory(gen_dir, name, sizes, options, wgmma):
    ck = api.compile(str(ROOT / "bench" / "suite" / f"{name}.kir"), sizes=sizes, options=options)
    mod = load_source(ck.source, gen_dir, f"{name}_{(options or {}).get('fp32_contract', 'default')}")
    compiled = compile_aot(mod, SM90, index_bits=64)
    assert 0 < compiled.metadata.shared <= SM90.smem_per_block, compiled.metadata.shared
    assert ("wgmma" in compiled.asm["ptx"]) == wgmma
