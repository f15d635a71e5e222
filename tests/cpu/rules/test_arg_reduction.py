"""Issue 27 item 1 (SPEC IR-8 arg-reduce, PASS-4): an argmax/argmin takes a tile of members per iteration
(``reduction.block_arg*``) instead of one member per step, with the reference's tie and NaN rules kept exactly:
ties give the lowest index, the first NaN wins, an empty range gives -1.

Each kernel is written the way a PyTorch user writes the op (``x.argmax(-1)``, ``x.argmin(dim=1)`` over a middle
axis, bf16 and int32 inputs, an arg-reduction of an expression, ``torch.max(x, -1)``'s value and index). The
program is compared with the KIR reference on rows that span several member tiles, with planted ties across tile
boundaries, NaNs in later tiles, rows of -inf and rows of NaN."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from intent_eqsat import api, ir, kir
from tests.cpu.rules.reference import assert_matches_reference, ops_named

KERNELS = {
    "argmax_rows_f32": ("""kernel argmax_rows(X: f32[M, N], I: out i64[M]) {
  I[m] = argmax(n: X[m, n])
}""", {"M": 4096, "N": 16384}),
    "argmin_rows_bf16": ("""kernel argmin_rows(X: bf16[M, N], I: out i64[M]) {
  I[m] = argmin(n: X[m, n])
}""", {"M": 8192, "N": 8192}),
    "argmax_middle_f32": ("""kernel argmax_mid(X: f32[B, K, N], I: out i64[B, N]) {
  I[b, n] = argmax(k: X[b, k, n])
}""", {"B": 16, "K": 4096, "N": 64}),
    "argmax_rows_i32": ("""kernel argmax_int(X: i32[M, N], I: out i64[M]) {
  I[m] = argmax(n: X[m, n])
}""", {"M": 4096, "N": 16384}),
    "argmax_of_product": ("""kernel argmax_scaled(X: f32[M, N], W: f32[N], I: out i64[M]) {
  I[m] = argmax(n: X[m, n] * W[n])
}""", {"M": 4096, "N": 16384}),
    "max_and_argmax": ("""kernel max_with_index(X: f32[M, N], V: out f32[M], I: out i64[M]) {
  V[m] = max(n: X[m, n])
  I[m] = argmax(n: X[m, n])
}""", {"M": 4096, "N": 16384}),
}


def _member_tile(program: ir.Module) -> int:
    """The member tile of the program's (first) argreduce."""
    ops = ops_named([op for k in program.kernels for op in k.body.ops], "argreduce")
    assert ops, "no argreduce: the arg-reduction was not blocked"
    return int(ops[0].operands[0].type.shape[0].value)


def _planted(shape: tuple[int, ...], axis: int, tile: int, dtype, rng: np.random.Generator) -> np.ndarray:
    """Random members with, along ``axis``: a tie between the last lane of tile 0 and lane 0 of tile 1 (the lower
    index must win), a NaN in tile 1 and a later one (the first must win), a row of -inf, a row of NaN."""
    x = rng.standard_normal(shape).astype(np.float64)
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    if rows.shape[0] >= 4 and n > tile + 1:
        rows[0, tile - 1] = rows[0, tile] = 50.0
        rows[0, tile + 1:] = np.minimum(rows[0, tile + 1:], 49.0)
        rows[1, tile + 1] = rows[1, min(n - 1, tile + 3)] = np.nan
        rows[2, :] = -np.inf
        rows[3, :] = np.nan
    if np.issubdtype(np.dtype(dtype), np.integer):
        rows = np.nan_to_num(rows, nan=7.0, posinf=9.0, neginf=-9.0) * 10
    out = np.moveaxis(rows.reshape(x.shape), -1, axis)
    return out.astype(dtype)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_arg_reduction_is_tiled_and_matches_the_reference(name):
    text, sizes = KERNELS[name]
    module = kir.parse(text, filename=f"<{name}>")
    program = api.optimize(module, sizes=sizes)
    ir.verify(program)
    tile = _member_tile(program)
    k = module.kernels[0]
    rng = np.random.default_rng(3)
    src = k.params[0]
    dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i32": np.int32}[src.dtype]
    small = tile * 2 + 37
    if len(src.dims) == 3:
        shape, axis = (3, small, 4), 1
    else:
        shape, axis = (5, small), 1
    inputs = {src.name: _planted(shape, axis, tile, dtype, rng)}
    kept = shape[:axis] + shape[axis + 1:]
    for p in k.params:
        if p.access == "out":
            inputs[p.name] = np.zeros(kept, np.int64 if p.dtype == "i64" else np.float32)
    if name == "argmax_of_product":
        inputs["W"] = np.abs(rng.standard_normal(small)).astype(np.float32) + 0.5
    assert_matches_reference(module, program, inputs=inputs)


def test_empty_range_gives_minus_one():
    module = kir.parse(KERNELS["argmax_rows_f32"][0], filename="<empty>")
    program = api.optimize(module, sizes=KERNELS["argmax_rows_f32"][1])
    got = ir.interpret(program, "argmax_rows", {"X": np.zeros((3, 0), np.float32), "I": np.zeros(3, np.int64)})["I"]
    np.testing.assert_array_equal(got, [-1, -1, -1])
