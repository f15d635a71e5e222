"""Exact encode/decode (issue 4): decode(encode(p)) == p for every constructed corpus program and every
hand-written GPU IR program, directly and through an egglog e-graph (JSON export + Python extraction)."""
from __future__ import annotations

import glob
import os

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.extract.extractor import extract
from intent_eqsat.rules.decode import decode_kernel
from intent_eqsat.rules.egraph import KernelGraph
from intent_eqsat.rules.encode import encode_kernel
from intent_eqsat.rules.terms import from_json_choice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _programs():
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir"))):
        with open(p) as f:
            out.append((os.path.basename(p), construct(kir.parse(f.read(), filename=p))))
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "gir", "*.gir"))
                    + glob.glob(os.path.join(ROOT, "tests", "cpu", "ir", "programs", "*.gir"))):
        with open(p) as f:
            out.append((os.path.basename(p), ir.parse_module(f.read(), p)))
    return [(f"{name}:{k.name}", k) for name, m in out for k in m.kernels]


PROGRAMS = _programs()


@pytest.mark.parametrize("name,kernel", PROGRAMS, ids=[n for n, _ in PROGRAMS])
def test_decode_encode_is_identity(name, kernel):
    term, prov = encode_kernel(kernel)
    assert decode_kernel(term, kernel, prov) == kernel


@pytest.mark.parametrize("name,kernel", PROGRAMS, ids=[n for n, _ in PROGRAMS])
def test_roundtrip_through_egglog(name, kernel):
    graph = KernelGraph(kernel)
    export = graph.export()
    choice, _ = extract(export)
    term = from_json_choice(export.nodes, choice, export.root)
    assert term is graph.term                       # the e-graph gives back the very term
    assert decode_kernel(term, kernel, graph.prov) == kernel


def test_equal_pure_computations_share_one_node():
    """Hash-consing: the canonical form computes a repeated pure subexpression once."""
    src = "kernel twice(X: f32[N], Y: out f32[N]) {\n  Y[i] = exp(X[i]) + exp(X[i])\n}\n"
    k = construct(kir.parse(src)).kernel("twice")
    exps = [op for op in ir.walk(k.body) if op.name == "exp"]
    assert len(exps) == 1
