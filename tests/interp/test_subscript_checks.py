"""Data-dependent subscripts are checked at run time (issue 25.2, docs/kir.md): a gather, scatter or histogram bin
outside its view touches no memory and the launch raises ``SubscriptOutOfRange`` naming the access; with
``subscript_checks=false`` the generated code has no check at all. Kernels are compiled through the whole pipeline
(the optimizer must keep the ``checked`` attribute through every rewrite) and run under TRITON_INTERPRET=1."""
from __future__ import annotations

import numpy as np
import pytest

from intent_eqsat import api, ir

pytestmark = pytest.mark.usefixtures("interpret_mode")

torch = pytest.importorskip("torch")

GATHER = "kernel gather_rows(E: f32[V, D], idx: i64[N], Out: out f32[N, D]) {\n  Out[i, d] = E[idx[i], d]\n}\n"
HISTOGRAM = "kernel hist(X: i32[N], H: inout i32[B]) {\n  H[X[i]] += 1 collide add\n}\n"
GATHER_SUM = "kernel gather_sum(X: f32[V], idx: i32[N, K], Y: out f32[N]) {\n  Y[i] = sum(k: X[idx[i, k]])\n}\n"
# a target index under a predicate (cross-entropy's ignore_index): members with T = -1 are not evaluated, others
# must lie inside the class axis
PICK = ("kernel pick(X: f32[N, C], T: i64[N], L: out f32[N]) {\n"
        "  L[i] = X[i, T[i]] where T[i] >= 0 else 0.0\n}\n")


def _load(ck, gen_dir):
    from intent_eqsat.providers.loader import load_source

    return load_source(ck.source, gen_dir, ck.kernel_name)


def _raises_naming(mod, args: dict, origin: str) -> None:
    with pytest.raises(IndexError) as err:
        mod.launch(**args)
    assert type(err.value).__name__ == "SubscriptOutOfRange"
    assert origin in str(err.value) and "data-dependent subscript out of range" in str(err.value)


def test_gather_rows_in_range_match_and_out_of_range_raise(gen_dir):
    ck = api.compile(GATHER, filename="gather_rows.kir", budget="iterations=12")
    assert "checked" in ir.print_module(ck.program)
    mod = _load(ck, gen_dir)
    g = torch.Generator().manual_seed(0)
    E = torch.randn(11, 37, generator=g)
    idx = torch.tensor([0, 10, 3, 3, 7], dtype=torch.int64)
    out = torch.zeros(5, 37)
    mod.launch(E, idx, out)
    assert torch.equal(out, E[idx])
    for bad in (10 + 1, -1, 2 ** 40):
        wrong = idx.clone()
        wrong[2] = bad
        before = out.clone()
        _raises_naming(mod, dict(E=E, idx=wrong, Out=out), "gather_rows.s0")
        assert torch.equal(out[[0, 1, 3, 4]], before[[0, 1, 3, 4]])      # the valid rows are still written


def test_histogram_bins_outside_raise_and_write_nothing_outside(gen_dir):
    ck = api.compile(HISTOGRAM, filename="hist.kir", budget="iterations=12")
    mod = _load(ck, gen_dir)
    X = torch.tensor([0, 1, 4, 4, 2, 1, 4], dtype=torch.int32)
    backing = torch.full((9,), 77, dtype=torch.int32)     # H is backing[2:7]; its neighbours must stay 77
    H = backing[2:7]
    H.zero_()
    mod.launch(X, H)
    assert H.tolist() == [1, 2, 1, 0, 3]
    for bad in (-1, 5, -3):
        wrong = X.clone()
        wrong[3] = bad
        _raises_naming(mod, dict(X=wrong, H=H), "hist.s0")
        assert backing[:2].tolist() == [77, 77] and backing[7:].tolist() == [77, 77]


def test_a_gather_inside_a_reduction_is_checked(gen_dir):
    ck = api.compile(GATHER_SUM, filename="gather_sum.kir", budget="iterations=12")
    mod = _load(ck, gen_dir)
    X = torch.arange(6, dtype=torch.float32)
    idx = torch.tensor([[0, 5, 2], [1, 1, 4]], dtype=torch.int32)
    Y = torch.zeros(2)
    mod.launch(X, idx, Y)
    assert Y.tolist() == [7.0, 6.0]
    idx[1, 2] = 6
    _raises_naming(mod, dict(X=X, idx=idx, Y=Y), "gather_sum.s0")


def test_a_predicated_subscript_is_checked_where_the_predicate_holds(gen_dir):
    ck = api.compile(PICK, filename="pick.kir", budget="iterations=12")
    mod = _load(ck, gen_dir)
    X = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    L = torch.zeros(3)
    mod.launch(X, torch.tensor([3, -1, 0]), L)                 # -1: not evaluated (the predicate fails)
    assert L.tolist() == [3.0, 0.0, 8.0]
    _raises_naming(mod, dict(X=X, T=torch.tensor([4, -1, 0]), L=L), "pick.s0")


def test_checks_off_prints_no_check_and_the_report_says_so(gen_dir):
    on = api.compile(GATHER, filename="gather_rows.kir", budget="iterations=12")
    off = api.compile(GATHER, filename="gather_rows.kir", options={"subscript_checks": False},
                      budget="iterations=12")
    assert "SubscriptOutOfRange" in on.source and "atomic_or" in on.source
    assert "SubscriptOutOfRange" not in off.source and "atomic_or" not in off.source
    assert "checked" not in ir.print_module(off.program)
    assert "subscript_checks = false" in ir.print_module(off.program)
    assert "subscript_checks=False" in str(off.report.get("options"))
    mod = _load(off, gen_dir)
    E, idx, out = torch.randn(4, 8), torch.tensor([3, 0]), torch.zeros(2, 8)
    mod.launch(E, idx, out)                                    # in range: the same result without the check
    assert torch.equal(out, E[idx])


def test_the_ir_interpreter_refuses_a_checked_subscript_out_of_range():
    ck = api.compile(GATHER, filename="gather_rows.kir", optimize=False)
    args = {"E": np.ones((3, 2), np.float32), "idx": np.array([0, 3]), "Out": np.zeros((2, 2), np.float32)}
    from intent_eqsat.errors import InterpretError

    with pytest.raises(InterpretError, match=r"gather_rows.s0.*data-dependent subscript out of range"):
        ir.interpret(ck.program, "gather_rows", args)
