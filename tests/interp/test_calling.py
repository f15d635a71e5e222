"""Calling a compiled kernel like a torch function (issue 24 items 1, 2): KIR parameter order, ``out`` views
allocated and returned, launch control passed through, errors for bad calls, and the ``torch.library`` custom op
that ``torch.compile`` records instead of tracing the launcher. The kernels run under the Triton interpreter
(``TRITON_INTERPRET=1`` in a subprocess: the flag is read when triton is imported) against the KIR reference."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]

#: two outputs, a scalar between views, a product extent; sizes odd on purpose
STATS_KIR = """\
kernel stats(X: f32[M, N], scale: f32, S: out f32[M], Mx: out f32[M]) {
  S[m] = sum(n: X[m, n]) * scale
  Mx[m] = max(n: X[m, n])
}

kernel grouped(X: f16[N, G*C], W: f16[G], Y: out f16[N, G]) {
  Y[n, g] = sum(c in 0..C: X[n, g * C + c]) * W[g]
}

kernel twice(X: f32[M, N], Y: out f32[M, N]) {
  Y[m, n] = X[m, n] * 2.0
}

kernel group_sum(X: f32[N, G*C], Y: out f32[N, G]) {
  Y[n, g] = sum(c in 0..C: X[n, g * C + c])
}
"""

_SCRIPT = r'''
import sys, numpy as np, torch, intent_eqsat
from intent_eqsat import kir
path, optimize = sys.argv[1], sys.argv[2] == "1"
ck = intent_eqsat.compile(path, provider="triton", optimize=optimize)
module = kir.parse(open(path).read(), filename=path)
torch.manual_seed(0)
X = torch.randn(7, 13)
ref_s = (X.double().sum(1) * 0.5).float()
ref_m = X.max(1).values

# positional, outs allocated and returned in parameter order
S, Mx = ck(X, 0.5)
assert S.shape == (7,) and S.dtype == torch.float32, (S.shape, S.dtype)
torch.testing.assert_close(S, ref_s, rtol=1e-5, atol=1e-5)
torch.testing.assert_close(Mx, ref_m)
print("POSITIONAL ok")

# by name, one out given (written in place, the same tensor returned), launch control passed through
S2 = torch.full((7,), float("nan"))
r = ck(X=X, scale=0.5, S=S2, num_warps=2)
assert r[0] is S2 and torch.equal(S2, S), (S2, S)
print("KEYWORD ok")

# launch() keeps the by-name dict form
d = ck.launch(X=X, scale=2.0, S=torch.empty(7), Mx=torch.empty(7))
torch.testing.assert_close(d["S"], ref_s * 4, rtol=1e-5, atol=1e-5)
print("LAUNCH ok")

for call, msg in [(lambda: ck(X), "missing scalar argument scale"),
                  (lambda: ck(X, 0.5, S, Mx, X), "takes 4 arguments"),
                  (lambda: ck(X, 0.5, Z=X), "no parameter 'Z'"),
                  (lambda: ck(X, 0.5, X=X), "given by position and by name"),
                  (lambda: ck.launch(X=X, scale=1.0), "missing S, Mx"),
                  (lambda: ck(X[0], 0.5), "tensor of rank 2")]:     # the launcher's check, outs not sized
    try:
        call()
    except TypeError as e:
        assert msg in str(e), (msg, str(e))
    else:
        raise AssertionError(f"no TypeError for {msg}")
print("ERRORS ok")

# a product extent: G is bound by W in grouped, so Y is allocated; in group_sum no view binds G alone
g = intent_eqsat.compile(path, provider="triton", optimize=optimize, kernel="grouped")
Xg = torch.randn(5, 3 * 4).to(torch.float16)
W = torch.randn(3).to(torch.float16)
Y = g(Xg, W)
assert Y.shape == (5, 3) and Y.dtype == torch.float16
refy = Xg.double().view(5, 3, 4).sum(2) * W.double()
torch.testing.assert_close(Y.double(), refy, rtol=2e-2, atol=2e-2)
gs = intent_eqsat.compile(path, provider="triton", optimize=optimize, kernel="group_sum")
try:
    gs(Xg.float())
except TypeError as e:
    assert "shape symbol G is not the extent of any view passed; pass Y" in str(e), str(e)
else:
    raise AssertionError("allocated Y without knowing G")
Y2 = gs(Xg.float(), torch.empty(5, 3))
torch.testing.assert_close(Y2.double(), Xg.double().view(5, 3, 4).sum(2), rtol=1e-5, atol=1e-5)
print("PRODUCT ok")

# an out shaped like an input is allocated like it, contiguous even when the input is not
tw = intent_eqsat.compile(path, provider="triton", optimize=optimize, kernel="twice")
Xt = X.t()
Yt = tw(Xt)
assert Yt.shape == Xt.shape and Yt.is_contiguous() and Yt.dtype == torch.float32, (Yt.shape, Yt.stride())
torch.testing.assert_close(Yt, Xt * 2.0)
print("LIKE ok")

# torch.compile: the whole graph, the kernel recorded as the custom op (not traced into)
graphs = []
def recording(gm, example_inputs):
    graphs.append(gm)
    return gm.forward
def model(x):
    s, m = ck(torch.relu(x), 0.25)
    return s + m
for backend in (recording, "aot_eager"):
    torch._dynamo.reset()
    out = torch.compile(model, backend=backend, fullgraph=True)(X)
    rx = torch.relu(X)
    torch.testing.assert_close(out, (rx.double().sum(1) * 0.25).float() + rx.max(1).values, rtol=1e-5, atol=1e-5)
targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
assert any(t.startswith("intent_eqsat.") for t in targets), targets
print("COMPILE ok")

torch.library.opcheck(ck.op, (X, 0.5, torch.empty(7), torch.empty(7)),
                      test_utils=("test_schema", "test_faketensor"))
print("OPCHECK ok")
'''


@pytest.mark.parametrize("optimize", [False, True], ids=["constructed", "optimized"])
def test_compiled_kernel_is_called_like_a_torch_function(tmp_path: Path, optimize: bool) -> None:
    kir_path = tmp_path / "stats.kir"
    kir_path.write_text(STATS_KIR)
    script = tmp_path / "call.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1", INTENT_EQSAT_GENERATED_DIR=str(tmp_path / "gen"),
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script), str(kir_path), str(int(optimize))], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    for step in ("POSITIONAL", "KEYWORD", "LAUNCH", "ERRORS", "PRODUCT", "LIKE", "COMPILE", "OPCHECK"):
        assert f"{step} ok" in proc.stdout, proc.stdout
