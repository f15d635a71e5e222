"""The README's "Using kernels from PyTorch" snippet runs as written (issue 24 "Must show"), under the Triton
interpreter on the CPU. The one change: ``torch.compile`` gets ``backend="aot_eager"``, because Inductor's CPU
code generation needs a C++ toolchain that a CI machine need not have; Dynamo's tracing, the custom op and its
fake implementation are exercised all the same (the H200 run with Inductor is in docs/perf.md)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[3]

_PRELUDE = '''
import torch
_compile = torch.compile
def _aot_eager(fn=None, **kw):
    kw.setdefault("backend", "aot_eager")
    return _compile(fn, **kw) if fn is not None else (lambda f: _compile(f, **kw))
torch.compile = _aot_eager
'''


def _snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Using kernels from PyTorch", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section holds one Python snippet"
    return blocks[0]


def test_readme_pytorch_snippet_runs(tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(_PRELUDE + _snippet() + '\nprint("SNIPPET OK")\n')
    env = dict(os.environ, TRITON_INTERPRET="1", INTENT_EQSAT_CACHE="off", PYTHONPATH=str(ROOT),
               INTENT_EQSAT_GENERATED_DIR=str(tmp_path / "gen"))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SNIPPET OK" in proc.stdout
