"""Construction (SPEC PASS-3.1): every corpus kernel becomes a complete GPU program that passes the construction
verifier and computes what the KIR reference evaluator computes, on small random shapes including odd sizes."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.errors import ConstructionError
from intent_eqsat.ir.core import CompileOptions, walk
from intent_eqsat.kir.inputs import random_inputs, tolerance

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir")))


def _load(path: str) -> kir.KirModule:
    with open(path) as f:
        return kir.parse(f.read(), filename=path)


def _copy(inputs: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def assert_matches_reference(module: kir.KirModule, program: ir.Module, kernel: str, seed: int,
                             sizes: dict | None = None, hi: int = 7) -> None:
    inputs = random_inputs(module, kernel, seed, sizes=sizes, lo=1, hi=hi)
    ref = kir.evaluate(module, kernel, _copy(inputs))
    got = ir.interpret(program, kernel, _copy(inputs))
    k = module.kernel(kernel)
    assert set(ref) <= set(got)
    for name, r in ref.items():
        rtol, atol = tolerance(k.param(name).dtype)
        g = np.asarray(got[name], np.float64)
        r = np.asarray(r, np.float64)
        assert g.shape == r.shape
        if rtol == 0.0:
            np.testing.assert_array_equal(g, r, err_msg=f"{kernel}.{name} seed {seed}")
        else:
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{kernel}.{name} seed {seed}")


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 24


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.basename(p)[:-4])
def test_corpus_kernel_constructs_verifies_and_matches_reference(path):
    module = _load(path)
    program = construct(module)
    ir.verify(program)                        # shared verifier
    ir.verify(program, stage="construction")  # + origin map completeness
    assert ir.parse_module(ir.print_module(program)) == program
    for k in module.kernels:
        for seed in range(3):                 # several random small shapes, odd sizes among them
            assert_matches_reference(module, program, k.name, seed)


@pytest.mark.parametrize("sizes", [{"M": 1, "N": 1, "K": 1}, {"M": 7, "N": 5, "K": 3}, {"M": 2, "N": 9, "K": 11}])
def test_gemm_odd_shapes(sizes):
    module = _load(os.path.join(ROOT, "examples", "corpus", "gemm.kir"))
    program = construct(module)
    assert_matches_reference(module, program, "gemm", 1, sizes=sizes)


def test_scalar_ownership_and_ordered_reduction_loop():
    """GEMM's first program: one program per output element (segment over (M, N)) and an ordered K loop that
    carries an f32 accumulator (f16 sums accumulate in f32, as the reference)."""
    program = construct(_load(os.path.join(ROOT, "examples", "corpus", "gemm.kir")))
    k = program.kernel("gemm")
    (seg,) = k.space.segments
    assert [str(e) for e in seg.extents] == ["M", "N"]
    loops = [op for op in walk(k.body) if op.name == "for"]
    assert len(loops) == 1
    defs = {op.results[0].name: op for op in walk(k.body) if len(op.results) == 1}
    ub = defs[loops[0].operands[1].name]
    assert ub.name == "launch" and str(ub.attrs["expr"]) == "K"       # the loop runs over the K extent
    assert loops[0].results[0].type.dtype == "f32"
    assert {a.name: a.access for a in k.abi} == {"A": "read", "B": "read", "C": "write"}


def test_origin_map_points_at_kir_ids():
    module = _load(os.path.join(ROOT, "examples", "corpus", "softmax.kir"))
    program = construct(module)
    origins = set(program.origin_map().values())
    kir_ids = {n.id for n in kir.model.walk(module)}
    assert origins and origins <= kir_ids
    stores = [op for op in walk(program.kernel("softmax").body) if op.name == "store"]
    assert [op.origin for op in stores] == ["softmax.s2"]


def test_compile_options_are_attached():
    module = _load(os.path.join(ROOT, "examples", "corpus", "softmax.kir"))
    assert construct(module).options == CompileOptions("source", True, False)
    opts = CompileOptions("relaxed_normalization", False, True)
    program = construct(module, options=opts)
    assert program.options == opts
    assert ir.parse_module(ir.print_module(program)).options == opts


def test_statements_become_execution_groups_of_one_launch():
    program = construct(_load(os.path.join(ROOT, "examples", "corpus", "tuple_scan.kir")))
    k = program.kernel("running_argmax")
    assert len(k.space.segments) == 2
    groups = [op for op in k.body.ops if op.name == "execution_group"]
    assert [g.attrs["segment"] for g in groups] == [0, 1]


def test_store_then_update_of_one_view_is_owner_computes():
    """histogram: `H[b] = 0` then `H[X[i]] += 1` -- one owner per bin, the update's domain an ordered loop."""
    program = construct(_load(os.path.join(ROOT, "examples", "corpus", "histogram.kir")))
    k = program.kernel("histogram")
    assert len(k.space.segments) == 1
    writes = [op.name for op in walk(k.body) if op.name in ("store", "scatter", "scatter_reduce", "atomic_rmw")]
    assert writes == ["store"]


def test_read_after_write_across_statements_is_refused_with_location():
    src = ("kernel two(X: f32[N], Y: out f32[N], Z: out f32[N]) {\n"
           "  Y[i] = X[i] * 2.0\n"
           "  Z[i] = Y[i] + 1.0\n"
           "}\n")
    module = kir.parse(src, filename="two.kir")
    with pytest.raises(ConstructionError) as ei:
        construct(module)
    assert "reads view 'Y'" in ei.value.message and "barrier" in ei.value.message
    assert str(ei.value.location) == "two.kir:3:3"


def test_update_of_inout_view_is_scatter_reduce_on_readwrite():
    src = "kernel acc(X: f32[N], idx: i64[N], Y: inout f32[R]) {\n  Y[idx[i]] += X[i] collide add\n}\n"
    program = construct(kir.parse(src))
    assert program.kernel("acc").arg("Y").access == "readwrite"
    ops = [op.name for op in walk(program.kernel("acc").body)]
    assert "scatter_reduce" in ops and ops.count("load") == 2  # idx[i] (the target coordinate) and X[i]


def test_predicated_loads_carry_validity_and_fill():
    program = construct(_load(os.path.join(ROOT, "examples", "corpus", "conv2d_3x3.kir")))
    loads = [op for op in walk(program.kernel("conv2d_3x3").body) if op.name == "load"]
    x_loads = [op for op in loads if op.operands[0].name == "X"]
    assert x_loads and all(op.attrs["valid"] and op.attrs["fill"] == 0.0 for op in x_loads)


def test_reads_in_bounds_whatever_the_predicate_are_unconditional():
    """Under ``where``: a read whose subscripts are index variables ranging over exactly its view's axes (``W[i, j]``)
    is in bounds whatever the predicate and is read without validity (the select discards it); a shifted read
    (``X[i, j + 1]``) could leave its view and keeps the predicate and bounds in its validity. Both programs equal
    the KIR reference, predicate-false members included."""
    module = kir.parse("""
kernel masked(X: f32[M, N], W: f32[M, K], Y: out f32[M]) {
  Y[i] = sum(j: (W[i, j] + X[i, j + 1]) where j < i && j + 1 < N else 0.0)
}
""")
    program = construct(module)
    ir.verify(program)
    loads = {op.operands[0].name: op for op in walk(program.kernels[0].body) if op.name == "load"}
    assert not loads["W"].attrs.get("valid"), "W[i, j] spans its view: no validity"
    assert loads["X"].attrs.get("valid") and loads["X"].attrs.get("fill") == 0.0
    inputs = random_inputs(module, "masked", 3, sizes={"M": 9, "N": 8, "K": 7})
    want = kir.evaluate(module, "masked", _copy(inputs))["Y"]
    got = ir.interpret(program, "masked", _copy(inputs))["Y"]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6, atol=1e-6)
