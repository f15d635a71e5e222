"""Programs and helpers shared by the extraction tests."""
from __future__ import annotations

import glob
import os
import re

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.rules.egraph import KernelGraph
from intent_eqsat.rules.encode import encode_kernel
from intent_eqsat.rules.terms import to_egglog_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GEMM_GIR = os.path.join(ROOT, "examples", "gir", "gemm.gir")
BIG = dict(M=4096, N=4096, K=4096)


def gemm_text() -> str:
    with open(GEMM_GIR) as f:
        return f.read()


def gemm_module(order: str = "row_major") -> ir.Module:
    return ir.parse_module(gemm_text().replace("order row_major", f"order {order}"), GEMM_GIR)


def gemm_variant(bm: int, bn: int, bk: int) -> ir.Kernel:
    """gemm.gir with the tile sizes written as integer literals (a distinct term per tiling)."""
    head, body = gemm_text().split("kernel @", 1)
    for name, v in (("BM", bm), ("BN", bn), ("BK", bk)):
        body = re.sub(rf"\b{name}\b", str(v), body)
    return ir.parse_module(head + "kernel @" + body).kernels[0]


def constructed(name: str) -> ir.Module:
    path = os.path.join(ROOT, "examples", "corpus", f"{name}.kir")
    with open(path) as f:
        return construct(kir.parse(f.read(), filename=path))


def corpus_kernels() -> list[tuple[str, ir.Kernel, ir.Module]]:
    out = []
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir"))):
        with open(p) as f:
            m = construct(kir.parse(f.read(), filename=p))
        out.extend((f"{os.path.basename(p)}:{k.name}", k, m) for k in m.kernels)
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "cpu", "ir", "programs", "*.gir"))):
        if p.endswith("errors.gir"):
            continue
        with open(p) as f:
            m = ir.parse_module(f.read(), p)
        out.extend((f"{os.path.basename(p)}:{k.name}", k, m) for k in m.kernels)
    return out


def union_graph(kernels: list[ir.Kernel]) -> KernelGraph:
    """One e-graph whose root class holds every kernel (same name) of the list: the first is the graph's own."""
    graph = KernelGraph(kernels[0])
    eg = graph.egraph._egraph
    text, base = to_egglog_program(graph.term, prefix="base")
    eg.run_program(*eg.parse_program(text))
    for i, k in enumerate(kernels[1:]):
        term, _ = encode_kernel(k)
        text, name = to_egglog_program(term, prefix=f"alt{i}_")
        eg.run_program(*eg.parse_program(text + f"\n(union {base} {name})"))
    return graph


def union_terms(graph: KernelGraph, a, b) -> None:
    """Assert two terms equal in the graph's e-graph."""
    eg = graph.egraph._egraph
    ta, na = to_egglog_program(a, prefix="ua")
    tb, nb = to_egglog_program(b, prefix="ub")
    eg.run_program(*eg.parse_program(ta + "\n" + tb + f"\n(union {na} {nb})"))


HEADER = """module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
"""

#: one program per row; a loop with two carried results, both stored (a shared multi-result loop)
ROWSTATS = HEADER + """  kernel @rowstats origin rowstats {
    abi {
      %X: view<f32, [R, C]> read
      %S: view<f32, [R]> write
      %MX: view<f32, [R]> write
    }
    space {
      segment [R] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%r: index) {
        %C = launch() {expr = $(C)} : index
        %c0 = const() {value = 0} : index
        %c1 = const() {value = 1} : index
        %zero = const() {value = 0.0} : f32
        %ninf = const() {value = -inf} : f32
        %s, %mx = for(%c0, %C, %c1, %zero, %ninf) : f32, f32 (%j: index, %s_in: f32, %m_in: f32) {
          %x = load(%X, %r, %j) : f32
          %s2 = add(%s_in, %x) : f32
          %m2 = max(%m_in, %x) : f32
          yield(%s2, %m2)
        }
        store(%S, %r, %s)
        store(%MX, %r, %mx)
        yield()
      }
      yield()
    }
  }
}
"""

#: a triangular loop: row r sums X[r, 0..r] (the bound reads the program coordinate)
TRIANGLE = HEADER + """  kernel @triangle origin triangle {
    abi {
      %X: view<f32, [R, R]> read
      %S: view<f32, [R]> write
    }
    space {
      segment [R] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%r: index) {
        %c0 = const() {value = 0} : index
        %c1 = const() {value = 1} : index
        %ub = add(%r, %c1) : index
        %zero = const() {value = 0.0} : f32
        %s = for(%c0, %ub, %c1, %zero) : f32 (%j: index, %s_in: f32) {
          %x = load(%X, %r, %j) : f32
          %s2 = add(%s_in, %x) : f32
          yield(%s2)
        }
        store(%S, %r, %s)
        yield()
      }
      yield()
    }
  }
}
"""

#: a loop-invariant load written inside the loop body (X[r, 0] every iteration)
INVARIANT = HEADER + """  kernel @invariant origin invariant {
    abi {
      %X: view<f32, [R, C]> read
      %S: view<f32, [R]> write
    }
    space {
      segment [R] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%r: index) {
        %C = launch() {expr = $(C)} : index
        %c0 = const() {value = 0} : index
        %c1 = const() {value = 1} : index
        %zero = const() {value = 0.0} : f32
        %s = for(%c0, %C, %c1, %zero) : f32 (%j: index, %s_in: f32) {
          %x0 = load(%X, %r, %c0) : f32
          %x = load(%X, %r, %j) : f32
          %d = sub(%x, %x0) : f32
          %s2 = add(%s_in, %d) : f32
          yield(%s2)
        }
        store(%S, %r, %s)
        yield()
      }
      yield()
    }
  }
}
"""
