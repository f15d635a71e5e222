"""Canonical analyses (PASS-2): frozen facts keyed by stable ids."""
from __future__ import annotations

import dataclasses

import pytest

from intent_eqsat.kir import analyze
from intent_eqsat.kir.poly import Poly

from .kir_testlib import CORPUS_FILES, load


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_every_corpus_kernel_analyzes_and_every_expression_is_typed(path):
    mod = load(path.stem)
    a = analyze(mod).kernels[mod.kernels[0].name]
    assert all(isinstance(t, (str, tuple)) and t not in ("int", "float") for t in a.types.values())
    for key, dom in a.domains.items():
        assert dom.key == key and key in a.provenance
    with pytest.raises(TypeError):
        a.domains["x"] = None  # type: ignore[index]


def test_gemm_domains_provenance_and_sum_of_products():
    a = analyze(load("gemm")).kernels["gemm"]
    assert a.statement_domains["gemm.s0"] == ("gemm.s0/m", "gemm.s0/n")
    (red_id, red), = a.reductions.items()
    (k_key,) = red.keys
    assert k_key == "gemm.s0.e4" and a.domains[k_key].name == "k" and a.domains[k_key].role == "reduce"
    assert a.domains[k_key].extent == Poly.atom("K")
    # the corpus GEMM multiplies f32 widenings of its f16 operands (tensor-core numerics): an f32 sum
    assert red.op == "sum" and red.combine == "add" and red.dtype == "f32" and red.acc_dtype == "f32"
    prov = {(u.target, u.axis) for u in a.provenance[k_key]}
    assert prov == {("A", 1), ("B", 0)}
    assert {(u.target, u.axis) for u in a.provenance["gemm.s0/m"]} == {("C", 0), ("A", 0)}
    sop = a.sums_of_products[red_id]
    assert sop.reduction_keys == (k_key,)
    assert set(sop.lhs_keys) == {"gemm.s0/m", k_key} and set(sop.rhs_keys) == {k_key, "gemm.s0/n"}
    assert sop.shared_keys == ()
    eff = a.effects["gemm.s0"]
    assert (eff.kind, eff.target, eff.injective, eff.full_write, eff.reads) == ("store", "C", True, True, ("A", "B"))
    assert a.views["C"].shape == (Poly.atom("M"), Poly.atom("N")) and a.views["C"].access == "out"


def test_batched_gemm_has_a_shared_batch_index():
    a = analyze(load("batched_gemm")).kernels["batched_gemm"]
    (sop,) = a.sums_of_products.values()
    assert sop.shared_keys == ("batched_gemm.s0/b",)


def test_softmax_def_use_and_sole_use():
    a = analyze(load("softmax")).kernels["softmax"]
    assert a.lets["mx"].stmt == "softmax.s0" and a.lets["mx"].sole_use
    assert a.lets["mx"].use_stmts == ("softmax.s1",)
    assert not a.lets["e"].sole_use and len(a.lets["e"].uses) == 2
    assert a.lets["e"].shape == (Poly.atom("M"), Poly.atom("N"))
    assert a.effects["softmax.s1"].kind == "let" and a.effects["softmax.s2"].reads == ("e",)


def test_histogram_effects_and_collisions():
    a = analyze(load("histogram")).kernels["histogram"]
    init, upd = a.effects["histogram.s0"], a.effects["histogram.s1"]
    assert (init.kind, init.full_write, init.injective) == ("store", True, True)
    assert (upd.kind, upd.op, upd.collide, upd.injective, upd.data_dependent_target) == \
           ("update", "+=", "add", False, True)
    assert a.domains["histogram.s1/i"].extent == Poly.atom("N")


def test_scan_and_region_schemas():
    a = analyze(load("cumsum_reversed")).kernels["cumsum_reversed"]
    (sc,) = a.scans.values()
    assert (sc.key, sc.combine, sc.exclusive, sc.reverse, sc.identity, sc.chunk_local) == \
           ("cumsum_reversed.s0/j", "add", False, True, "0", False)
    t = analyze(load("tuple_scan")).kernels["running_argmax"]
    (sc,) = t.scans.values()
    assert sc.combine == "maxloc" and sc.dtype == ("f32", "i64") and sc.identity == "(-inf, 0)"
    f = analyze(load("region_fold")).kernels["online_softmax_sum"]
    (rf,) = f.regions.values()
    assert (rf.kind, rf.chunk, rf.combine, rf.summary_type, rf.has_finalize, rf.dtype) == \
           ("fold", 4, "online", ("f32", "f32", "f32"), True, "f32")
    assert f.domains[rf.key].role == "fold"
    assert all(r.chunk_local and r.keys == (rf.key,) for r in f.reductions.values())
    s = analyze(load("region_scan")).kernels["chunked_cumsum"]
    (rs,) = s.regions.values()
    assert (rs.kind, rs.key, rs.identity) == ("scan", "chunked_cumsum.s0/j", "0")
    (sc,) = s.scans.values()
    assert sc.chunk_local


def test_analysis_is_frozen_data():
    a = analyze(load("gemm")).kernels["gemm"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.kernel = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        next(iter(a.effects.values())).target = "x"  # type: ignore[misc]
