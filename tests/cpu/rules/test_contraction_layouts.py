"""Issue 26 item 1 (SPEC PASS-3.4, PASS-4): contraction recognition from coordinates, not from the written operand
order. Each kernel below is written the way a PyTorch user writes the op (a transposed operand, nn.Linear's
``[out, in]`` weight, a rank-3/4 activation times a matrix, a matrix broadcast over a batch, the product's operands
swapped); the whole optimizer must give a ``contract`` whose operands are read in their own layout (no copy) and
the program must equal the KIR reference on odd sizes. The suite kernels (``bench/suite``) are the same files the
H200 benchmark times.

Issue 26 item 8: a sum whose member is a sum (or reads a sum) is optimized and verified, and still equals the
reference (``bias_into_init`` once took the enclosing loop's running total for a loop-free bias)."""
from __future__ import annotations

import os

import pytest

from intent_eqsat import api, ir, kir
from tests.cpu.rules.reference import ROOT, assert_matches_reference, ops_named

SUITE = os.path.join(ROOT, "bench", "suite")

#: suite kernel -> the problem the cost model is told (the sizes bench/perf.py compiles it for)
LAYOUTS = {
    "gemm_tn_f32": {"M": 4096, "N": 4096, "K": 4096},
    "gemm_nn_f32": {"M": 4096, "N": 4096, "K": 4096},
    "linear_nt_bf16": {"M": 4096, "N": 4096, "K": 4096},
    "gemm_tt_bf16": {"M": 4096, "N": 4096, "K": 4096},
    "linear3d_bf16": {"B": 8, "S": 1024, "K": 4096, "N": 4096},
    "matmul4d_f32": {"B": 4, "H": 8, "S": 1024, "K": 128, "N": 512},
    "bmm_bcast_bf16": {"B": 16, "M": 1024, "K": 1024, "N": 1024},
    "bmm_tn_bf16": {"B": 32, "M": 1024, "K": 1024, "N": 1024},
}

#: kernels written here (not tuned for): operands swapped, both batch operands transposed, a broadcast row scale
WRITTEN = {
    "swapped": """kernel swapped(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
  C[m, n] = sum(k: B[k, n] * A[m, k])
}""",
    "bmm_tt": """kernel bmm_tt(A: f16[Z, K, M], B: f16[Z, N, K], C: out f32[Z, M, N]) {
  C[z, m, n] = sum(k: cast<f32>(A[z, k, m]) * cast<f32>(B[z, n, k]))
}""",
    "rank5_times_matrix": """kernel r5mm(X: f32[A, B, C, S, K], W: f32[K, N], Y: out f32[A, B, C, S, N]) {
  Y[a, b, c, s, n] = sum(k: X[a, b, c, s, k] * W[k, n])
}""",
    "rank3_times_rank3_weight": """kernel r3w(X: f32[S, B, K], W: f32[B, N, K], Y: out f32[B, S, N]) {
  Y[b, s, n] = sum(k: X[s, b, k] * W[b, n, k])
}""",
}

NESTED = {
    "sum_of_sums": """kernel total(X: f32[M, N], L: out f32[]) {
  L[] = sum(i: sum(j: X[i, j]))
}""",
    "row_sums_then_sum": """kernel rows(X: f32[M, N], L: out f32[]) {
  let r[i] = sum(j: X[i, j])
  L[] = sum(i: r[i] * r[i])
}""",
    "sum_reads_a_sum": """kernel inner(X: f32[M, N], L: out f32[M]) {
  L[i] = sum(j: sum(k: X[i, k]) * X[i, j])
}""",
}


def _contract_operand_loads(program) -> list:
    """The loads feeding every contract's two operands (through casts)."""
    producers = {r.name: op for k in program.kernels for op in ops_named(k.body.ops) for r in op.results}
    out = []
    for c in ops_named([op for k in program.kernels for op in k.body.ops], "contract"):
        for v in c.operands[:2]:
            op = producers[v.name]
            while op.name == "cast":
                op = producers[op.operands[0].name]
            out.append(op)
    return out


def _check_contracted(module: kir.KirModule, program) -> None:
    ir.verify(program)
    loads = _contract_operand_loads(program)
    assert loads, "no contract was formed"
    assert all(op.name == "load" for op in loads), [op.name for op in loads]     # read in place, never copied
    assert_matches_reference(module, program, seeds=(5, 6), lo=1, hi=9)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_suite_kernel_contracts_in_its_own_layout(name):
    path = os.path.join(SUITE, f"{name}.kir")
    module = kir.parse(open(path).read(), filename=path)
    program = api.optimize(path, sizes=LAYOUTS[name])
    _check_contracted(module, program)


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_written_kernel_contracts(name):
    module = kir.parse(WRITTEN[name], filename=f"<{name}>")
    program = api.optimize(module, sizes={s: 512 for s in "MNKZSBAC"})
    _check_contracted(module, program)


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_sums_optimize_and_match(name):
    module = kir.parse(NESTED[name], filename=f"<{name}>")
    program = api.optimize(module, sizes={"M": 4096, "N": 4096})
    ir.verify(program)
    assert_matches_reference(module, program, seeds=(5, 6), lo=1, hi=9)
