"""Deterministic, mechanical Triton source (SPEC TGT-8) and content-addressed loading (issue 5, item 5)."""
from __future__ import annotations

import ast
import hashlib
import os
import sys

import pytest

from intent_eqsat.ir import parse_module, print_module, walk
from intent_eqsat.providers.loader import load_source, source_name, write_source
from intent_eqsat.providers.triton import serialize

from tests.interp.helpers import GEMM, gir_kernels, load_gir
from tests.interp.programs import PROGRAMS


def _all_programs():
    out = [("gemm", parse_module(GEMM.read_text()), "gemm", None)]
    out += [(f"{p.name}:{k}", load_gir(p), k, None) for p, k in gir_kernels()]
    out += [(n, b(), k, prm) for n, (b, k, _, _, prm) in sorted(PROGRAMS.items())]
    return out


@pytest.mark.parametrize("name,module,kernel,params", _all_programs(), ids=lambda x: x if isinstance(x, str) else "")
def test_byte_identical_and_valid_python(name, module, kernel, params) -> None:
    try:
        a = serialize(module, kernel, "sm90", params)
    except Exception as e:                      # refusal fixtures: the same error twice, no partial output
        with pytest.raises(type(e)):
            serialize(module, kernel, "sm90", params)
        return
    b = serialize(module, kernel, "sm90", params)
    assert a == b
    # the same program after a text round trip gives the same bytes
    again = parse_module(print_module(module))
    assert serialize(again, kernel, "sm90", params) == a
    tree = ast.parse(a)
    kernels = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == module.kernel(kernel).name]
    assert len(kernels) == 1, "one @triton.jit kernel per GPU IR kernel"
    assert any(isinstance(f, ast.FunctionDef) and f.name == "launch" for f in tree.body)
    # every origin of the kernel appears as a source comment
    origins = {op.origin for op in walk(module.kernel(kernel).body) if op.origin}
    for o in origins:
        assert f"# {o}" in a, o


def test_gemm_source_shape() -> None:
    src = serialize(parse_module(GEMM.read_text()), "gemm", "sm90")
    assert "tl.program_id(0)" in src and "tl.arange(0, BM)" in src
    assert "tl.dot(v_a, v_b, v_acc_in, input_precision='ieee', out_dtype=tl.float32)  # gemm.s0.sum" in src
    assert "tl.load(A + v_am * A_stride_0 + v_ak * A_stride_1, mask=v_av, other=0.0)  # gemm.s0.A" in src
    assert "tl.store(C + v_cm * C_stride_0 + v_cn * C_stride_1, v_out, mask=v_cv)  # gemm.s0" in src
    assert "BM: tl.constexpr" in src and "PARAMS = {'BM': 64, 'BN': 64, 'BK': 32}" in src
    assert "enable_fp_fusion=True" in src and "'enable_reflect_ftz': False" in src
    # the launcher's grid is the program space's LaunchExpr
    assert "_grid = ((-((-M) // BM)) * (-((-N) // BN)))" in src


def test_configs_are_the_verified_candidate_set() -> None:
    text = GEMM.read_text().replace("param BM: i64 = 64 in [32, 64, 128]", "param BM: i64 = 64 in [32, 48, 64]")
    src = serialize(parse_module(text), "gemm", "sm90")
    configs_src = src[src.index("CONFIGS = ["):src.index("]\n", src.index("CONFIGS = [")) + 1]
    configs = eval(configs_src.split("=", 1)[1])
    assert configs[0] == {"BM": 64, "BN": 64, "BK": 32}
    assert all(c["BM"] != 48 for c in configs)                 # not a legal Triton block: not offered
    assert len(configs) == 2 * 3 * 3


def test_loader_writes_content_addressed_files_atomically(tmp_path) -> None:
    src = serialize(parse_module(GEMM.read_text()), "gemm", "sm90")
    p = write_source(src, tmp_path, "gemm")
    assert p.name == f"gemm_{hashlib.sha256(src.encode()).hexdigest()[:16]}.py" == source_name("gemm", src) + ".py"
    assert p.read_text() == src
    mtime = os.stat(p).st_mtime_ns
    assert write_source(src, tmp_path, "gemm") == p and os.stat(p).st_mtime_ns == mtime   # same content: kept
    assert [f.name for f in tmp_path.iterdir()] == [p.name]                                # no temp files left
    other = write_source(src + "\n", tmp_path, "gemm")
    assert other != p


def test_loader_imports_from_the_file(tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    src = serialize(parse_module(GEMM.read_text()), "gemm", "sm90")
    mod = load_source(src, tmp_path, "gemm")
    assert mod.__file__ == str((tmp_path / (source_name("gemm", src) + ".py")).resolve())
    assert load_source(src, tmp_path, "gemm") is mod
    assert mod.KERNEL_NAME == "gemm" and callable(mod.launch)
    other = load_source(src, tmp_path / "elsewhere", "gemm")          # the same content in another folder
    assert other is not mod and sys.modules[mod.__name__] is mod and sys.modules[other.__name__] is other


def test_generated_module_is_self_contained(tmp_path, monkeypatch) -> None:
    # a generated module imports only triton (and torch inside launch): even the grid-limit error is its own class
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    from intent_eqsat.errors import IntentError
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    src = serialize(parse_module(GEMM.read_text()), "gemm", "sm90")
    imported = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported == {"triton", "torch"}
    mod = load_source(src, tmp_path, "gemm")
    monkeypatch.setattr(mod, "MAX_GRID", 1)
    a, b, c = (torch.zeros(*s, dtype=torch.float16) for s in ((100, 40), (40, 130), (100, 130)))
    with pytest.raises(mod.HardwareCapabilityUnsupported) as err:
        mod.launch(a, b, c)
    assert err.value.kind == "hardware_capability" and "exceed the grid limit 1" in err.value.reason
    assert err.value.location == "kernel gemm" and not isinstance(err.value, IntentError)
