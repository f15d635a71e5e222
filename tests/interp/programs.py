"""GPU IR programs built with :mod:`intent_eqsat.ir.builder` for the provider tests, each with an input maker and
an independent NumPy reference. Every program is small, uses odd shapes against its block sizes, and carries KIR
origins so the generated source's comments can be checked.

``PROGRAMS[name] = (build() -> Module, kernel name, make_inputs(rng) -> dict, reference(inputs) -> dict, params)``
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from intent_eqsat.ir.builder import INDEX, ModuleBuilder
from intent_eqsat.ir.core import Module
from intent_eqsat.ir.launch import Sym, ceil_div
from intent_eqsat.ir.types import BufferType, ScalarType, TupleType, frag

F32 = ScalarType("f32")
I1 = ScalarType("i1")


def _tile_rows(r, p, br: str, bc: str, rows_sym: str, cols_sym: str):
    """rows/cols index fragments of a [br, bc] tile of row block p and the in-bounds predicate."""
    nr, nc = r.launch(rows_sym, hint="nrows"), r.launch(cols_sym, hint="ncols")
    r0 = r.mul(p, r.launch(br))
    rows = r.add(r.broadcast(r0, frag("index", br)), r.range(frag("index", br)))
    cols = r.range(frag("index", bc))
    rows2 = r.broadcast(rows, frag("index", br, bc), [0])
    cols2 = r.broadcast(cols, frag("index", br, bc), [1])
    ok = r.and_(r.cmp("lt", rows2, r.broadcast(nr, frag("index", br, bc))),
                r.cmp("lt", cols2, r.broadcast(nc, frag("index", br, bc))))
    rok = r.cmp("lt", rows, r.broadcast(nr, frag("index", br)))
    return rows, rows2, cols2, ok, rok


# ----------------------------------------------------------------------------------------------- softmax (f16)

def build_softmax() -> Module:
    """Row-blocked softmax: BR rows per program, one BC-wide block per row (BC >= C), f16 in/out, f32 math."""
    mb = ModuleBuilder("sm90")
    mb.param("BR", 4, (2, 4, 8))
    mb.param("BC", 32, (32, 64))
    kb = mb.kernel("softmax_rows", origin="softmax")
    X = kb.view("X", "f16", ["R", "C"], access="read")
    Y = kb.view("Y", "f16", ["R", "C"], access="write")
    kb.segment([ceil_div("R", "BR")])

    def group(r, coords):
        (p,) = coords
        rows, rows2, cols2, ok, _ = _tile_rows(r, p, "BR", "BC", "R", "C")
        rw = r.with_origin("softmax.x")
        x = rw.load(X, [rows2, cols2], valid=ok, fill=float("-inf"))
        xf = r.with_origin("softmax.xf").cast(x, "f32")
        rm = r.with_origin("softmax.max")
        (m,) = rm.reduce([xf], [1], "max", [float("-inf")])
        e = r.with_origin("softmax.e").exp(r.sub(xf, r.broadcast(m, frag("f32", "BR", "BC"), [0])))
        (s,) = r.with_origin("softmax.sum").reduce([e], [1], "add", [0.0])
        y = r.with_origin("softmax.y").div(e, r.broadcast(s, frag("f32", "BR", "BC"), [0]))
        r.with_origin("softmax.y").store(Y, [rows2, cols2], r.cast(y, "f16"), valid=ok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def softmax_inputs(rng) -> dict:
    X = (rng.standard_normal((9, 23)) * 3).astype(np.float16)
    return {"X": X, "Y": np.zeros_like(X)}


def softmax_ref(a: dict) -> dict:
    x = a["X"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"Y": (e / e.sum(axis=1, keepdims=True)).astype(np.float16)}


# ----------------------------------------------------------------------------------------------------- scans

def build_scans() -> Module:
    """Row scans over one BC block (BC >= C; padding = the identity): add inclusive/exclusive, forward/reverse,
    and a non-commutative region combiner (the linear recurrence h = a * h + b over (a, b) pairs), inclusive,
    exclusive and reverse; plus a max scan and a region reduce (the recurrence's total)."""
    mb = ModuleBuilder("sm90")
    mb.param("BR", 2, (2, 4))
    mb.param("BC", 32, (32,))
    kb = mb.kernel("scans", origin="scans")
    A = kb.view("A", "f32", ["R", "C"], access="read")
    B = kb.view("B", "f32", ["R", "C"], access="read")
    outs = {n: kb.view(n, "f32", ["R", "C"], access="write")
            for n in ("INC", "EXC", "RINC", "REXC", "MAXS", "LIN", "LEX", "LREV", "LREX")}
    TOT = kb.view("TOT", "f32", ["R"], access="write")
    kb.segment([ceil_div("R", "BR")])

    def lin(rb, a1, b1, a2, b2):
        return [rb.mul(a1, a2), rb.add(rb.mul(a2, b1), b2)]

    def group(r, coords):
        (p,) = coords
        rows, rows2, cols2, ok, rok = _tile_rows(r, p, "BR", "BC", "R", "C")
        a = r.with_origin("scans.a").load(A, [rows2, cols2], valid=ok, fill=1.0)
        b = r.with_origin("scans.b").load(B, [rows2, cols2], valid=ok, fill=0.0)
        rs = r.with_origin("scans.s")
        res = {
            "INC": rs.scan([b], 1, "add", [0.0]),
            "EXC": rs.scan([b], 1, "add", [0.0], exclusive=True),
            "RINC": rs.scan([b], 1, "add", [0.0], reverse=True),
            "REXC": rs.scan([b], 1, "add", [0.0], reverse=True, exclusive=True),
            "MAXS": rs.scan([b], 1, "max", [float("-inf")]),
        }
        la, lb_ = rs.scan([a, b], 1, "region", [1.0, 0.0], combiner=lin)
        res["LIN"] = [lb_]
        res["LEX"] = [rs.scan([a, b], 1, "region", [1.0, 0.0], exclusive=True, combiner=lin)[1]]
        res["LREV"] = [rs.scan([a, b], 1, "region", [1.0, 0.0], reverse=True, combiner=lin)[1]]
        res["LREX"] = [rs.scan([a, b], 1, "region", [1.0, 0.0], reverse=True, exclusive=True, combiner=lin)[1]]
        for n, (v,) in res.items():
            r.with_origin(f"scans.{n.lower()}").store(outs[n], [rows2, cols2], v, valid=ok)
        _, tot = r.with_origin("scans.tot").reduce([a, b], [1], "region", [1.0, 0.0], combiner=lin)
        r.with_origin("scans.tot").store(TOT, [rows], tot, valid=rok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def scans_inputs(rng) -> dict:
    shape = (5, 27)
    out = {"A": rng.uniform(0.5, 1.0, shape).astype(np.float32), "B": rng.standard_normal(shape).astype(np.float32)}
    for n in ("INC", "EXC", "RINC", "REXC", "MAXS", "LIN", "LEX", "LREV", "LREX"):
        out[n] = np.zeros(shape, np.float32)
    out["TOT"] = np.zeros(shape[0], np.float32)
    return out


def _lin_scan(a, b, reverse: bool, exclusive: bool):
    """(a, b) recurrence scan in the IR's order: the accumulated value is the left operand."""
    R, C = a.shape
    out = np.zeros((R, C))
    order = range(C - 1, -1, -1) if reverse else range(C)
    for r in range(R):
        acc = (1.0, 0.0)
        for j in order:
            if exclusive:
                out[r, j] = acc[1]
            acc = (acc[0] * a[r, j], a[r, j] * acc[1] + b[r, j])
            if not exclusive:
                out[r, j] = acc[1]
    return out


def scans_ref(x: dict) -> dict:
    a, b = x["A"].astype(np.float64), x["B"].astype(np.float64)
    inc = np.cumsum(b, axis=1)
    rinc = np.cumsum(b[:, ::-1], axis=1)[:, ::-1]
    return {"INC": inc, "EXC": inc - b, "RINC": rinc, "REXC": rinc - b, "MAXS": np.maximum.accumulate(b, axis=1),
            "LIN": _lin_scan(a, b, False, False), "LEX": _lin_scan(a, b, False, True),
            "LREV": _lin_scan(a, b, True, False), "LREX": _lin_scan(a, b, True, True),
            "TOT": _lin_scan(a, b, False, False)[:, -1]}


# ------------------------------------------------------------------------------------------------ histogram

def build_histogram() -> Module:
    """2-D tiles of i32 values -> a per-tile histogram (reshaped to 1-D) -> atomic add into H."""
    mb = ModuleBuilder("sm90")
    mb.param("BR", 4, (4,))
    mb.param("BC", 8, (8,))
    mb.param("NB", 16, (16,))
    kb = mb.kernel("hist2d", origin="hist")
    V = kb.view("V", "i32", ["R", "C"], access="read")
    H = kb.view("H", "i32", ["NB"], access="readwrite")
    kb.segment([ceil_div("R", "BR"), ceil_div("C", "BC")])

    def group(r, coords):
        pr, pc = coords
        nr, nc = r.launch("R"), r.launch("C")
        rows = r.add(r.broadcast(r.mul(pr, r.launch("BR")), frag("index", "BR")), r.range(frag("index", "BR")))
        cols = r.add(r.broadcast(r.mul(pc, r.launch("BC")), frag("index", "BC")), r.range(frag("index", "BC")))
        rows2 = r.broadcast(rows, frag("index", "BR", "BC"), [0])
        cols2 = r.broadcast(cols, frag("index", "BR", "BC"), [1])
        ok = r.and_(r.cmp("lt", rows2, r.broadcast(nr, frag("index", "BR", "BC"))),
                    r.cmp("lt", cols2, r.broadcast(nc, frag("index", "BR", "BC"))))
        v = r.with_origin("hist.v").load(V, [rows2, cols2], valid=ok, fill=0)
        h = r.with_origin("hist.h").value("histogram", [v, ok], frag("i32", "NB"), valid=True)
        bins = r.range(frag("index", "NB"))
        r.with_origin("hist.h").op("atomic_rmw", [H, bins, h], [frag("i32", "NB")],
                                   {"kind": "add", "order": "relaxed", "domain": "device"})

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=2))
    return mb.build()


def histogram_inputs(rng) -> dict:
    return {"V": rng.integers(-3, 19, (9, 13)).astype(np.int32), "H": np.zeros(16, np.int32)}


def histogram_ref(x: dict) -> dict:
    v = x["V"].ravel()
    v = v[(v >= 0) & (v < 16)]
    return {"H": np.bincount(v, minlength=16).astype(np.int32)}


# ---------------------------------------------------------------------------------------------- scatter-add

def build_scatter() -> Module:
    """O[I[i]] += S[i] (f32 atomics), Q[I[i]] = max(Q[I[i]], K[i]) (i32), and OLD[p] = old value of CNT[p] after
    CNT[p] += 1 (atomic_rmw with validity; every element touched once so old values are deterministic)."""
    mb = ModuleBuilder("sm90")
    mb.param("BN", 16, (16, 32))
    kb = mb.kernel("scatter", origin="scatter")
    Iv = kb.view("I", "i64", ["N"], access="read")
    S = kb.view("S", "f32", ["N"], access="read")
    Kv = kb.view("K", "i32", ["N"], access="read")
    O = kb.view("O", "f32", ["M"], access="readwrite")
    Q = kb.view("Q", "i32", ["M"], access="readwrite")
    CNT = kb.view("CNT", "i32", ["N"], access="readwrite")
    OLD = kb.view("OLD", "i32", ["N"], access="write")
    kb.segment([ceil_div("N", "BN")])

    def group(r, coords):
        (p,) = coords
        n = r.launch("N")
        i = r.add(r.broadcast(r.mul(p, r.launch("BN")), frag("index", "BN")), r.range(frag("index", "BN")))
        ok = r.cmp("lt", i, r.broadcast(n, frag("index", "BN")))
        idx = r.with_origin("scatter.idx").load(Iv, [i], valid=ok, fill=0, op="gather")
        idx = r.cast(idx, "index")
        s = r.with_origin("scatter.s").load(S, [i], valid=ok, fill=0.0)
        k = r.with_origin("scatter.k").load(Kv, [i], valid=ok, fill=0)
        r.with_origin("scatter.o").store(O, [idx], s, valid=ok, op="scatter_reduce", combine="add")
        r.with_origin("scatter.q").store(Q, [idx], k, valid=ok, op="scatter_reduce", combine="max")
        one = r.broadcast(r.const(1, "i32"), frag("i32", "BN"))
        old = r.with_origin("scatter.cnt").op("atomic_rmw", [CNT, i, one, ok], [frag("i32", "BN")],
                                             {"kind": "add", "order": "acq_rel", "domain": "device",
                                              "valid": True}).result
        r.with_origin("scatter.old").store(OLD, [i], old, valid=ok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def scatter_inputs(rng) -> dict:
    N, M = 37, 5
    return {"I": rng.integers(0, M, N).astype(np.int64), "S": rng.standard_normal(N).astype(np.float32),
            "K": rng.integers(-100, 100, N).astype(np.int32), "O": np.zeros(M, np.float32),
            "Q": np.full(M, -1000, np.int32), "CNT": np.arange(N, dtype=np.int32), "OLD": np.zeros(N, np.int32)}


def scatter_ref(x: dict) -> dict:
    O, Q = x["O"].astype(np.float64).copy(), x["Q"].copy()
    np.add.at(O, x["I"], x["S"].astype(np.float64))
    np.maximum.at(Q, x["I"], x["K"])
    return {"O": O, "Q": Q, "CNT": x["CNT"] + 1, "OLD": x["CNT"].copy()}


# --------------------------------------------------------------------------------------------------- argmax

def build_argreduce() -> Module:
    """Per row: f16 argmax (NaN propagates), f16 argmin (NaN ignored) with index results, and an i32 argmax."""
    mb = ModuleBuilder("sm90")
    mb.param("BR", 4, (4,))
    mb.param("BC", 16, (16,))
    kb = mb.kernel("argred", origin="argred")
    X = kb.view("X", "f16", ["R", "C"], access="read")
    Kv = kb.view("K", "i32", ["R", "C"], access="read")
    outs = {"VMAX": ("f16", None), "IMAX": ("i64", None), "VMIN": ("f16", None), "IMIN": ("i32", None),
            "KMAX": ("i32", None), "KIDX": ("i32", None)}
    views = {n: kb.view(n, dt, ["R"], access="write") for n, (dt, _) in outs.items()}
    kb.segment([ceil_div("R", "BR")])

    def group(r, coords):
        (p,) = coords
        rows, rows2, cols2, ok, rok = _tile_rows(r, p, "BR", "BC", "R", "C")
        x = r.with_origin("argred.x").load(X, [rows2, cols2], valid=ok, fill=float("-inf"))
        xi = r.with_origin("argred.xi").load(X, [rows2, cols2], valid=ok, fill=float("inf"))
        k = r.with_origin("argred.k").load(Kv, [rows2, cols2], valid=ok, fill=-2 ** 31)
        ra = r.with_origin("argred.a")
        vmax, imax = ra.op("argreduce", [x], [frag("f16", "BR"), frag("index", "BR")],
                           {"axis": 1, "kind": "max", "nan": "propagate"}).results
        vmin, imin = ra.op("argreduce", [xi], [frag("f16", "BR"), frag("i32", "BR")],
                           {"axis": 1, "kind": "min", "nan": "ignore"}).results
        kmax, kidx = ra.op("argreduce", [k], [frag("i32", "BR"), frag("i32", "BR")],
                           {"axis": 1, "kind": "max"}).results
        for n, v in (("VMAX", vmax), ("IMAX", imax), ("VMIN", vmin), ("IMIN", imin), ("KMAX", kmax),
                     ("KIDX", kidx)):
            r.with_origin(f"argred.{n.lower()}").store(views[n], [rows], v if n != "IMAX" else r.cast(v, "i64"),
                                                         valid=rok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def argreduce_inputs(rng) -> dict:
    R, C = 7, 11
    X = rng.integers(-4, 5, (R, C)).astype(np.float16)       # many ties
    X[1, 3] = np.nan
    X[1, 7] = np.nan
    X[2, :] = np.nan
    K = rng.integers(-3, 3, (R, C)).astype(np.int32)
    out = {"X": X, "K": K}
    for n, dt in (("VMAX", np.float16), ("IMAX", np.int64), ("VMIN", np.float16), ("IMIN", np.int32),
                  ("KMAX", np.int32), ("KIDX", np.int32)):
        out[n] = np.zeros(R, dt)
    return out


def argreduce_ref(x: dict) -> dict:
    # the program pads each row to BC = 16 columns: -inf for the max, +inf for the min (padding can win)
    R, C = x["X"].shape
    X = np.full((R, 16), -np.inf)
    X[:, :C] = x["X"]
    nan = np.isnan(X)
    imax = np.where(nan.any(1), nan.argmax(1), np.nanargmax(np.where(nan, -np.inf, X), 1))
    Xi = np.full((R, 16), np.inf)
    Xi[:, :C] = x["X"]
    nan = np.isnan(Xi)
    key = np.where(nan, np.inf, Xi)
    imin = np.where(nan.all(1), 0, np.argmax((key == key.min(1, keepdims=True)) & ~nan, 1))
    vmin = np.where(nan.all(1), np.nan, key.min(1))
    return {"VMAX": X[np.arange(len(X)), imax], "IMAX": imax, "VMIN": vmin, "IMIN": imin,
            "KMAX": x["K"].max(1), "KIDX": x["K"].argmax(1)}


# ---------------------------------------------------------------------------------------- two segments

def build_two_segments() -> Module:
    """Segment 0 (2-D, grouped order with group G): Y = 2 * X tile by tile, OWNER = the linear program coordinate.
    Segment 1 (1-D): per block of V, S[q] = region_fold of the block's sub-chunks (sum), W[q] = bit length of q+1
    by a while loop, and T[q] = (q even ? +1 : -1) * q through an if."""
    mb = ModuleBuilder("sm90")
    mb.param("BM", 4, (4, 8))
    mb.param("BN", 8, (8,))
    mb.param("G", 2, (1, 2, 3))
    mb.param("BV", 16, (16,))
    mb.param("SUB", 4, (4,))
    kb = mb.kernel("two_segments", origin="two")
    X = kb.view("X", "f32", ["M", "N"], access="read")
    Y = kb.view("Y", "f32", ["M", "N"], access="write")
    OWN = kb.view("OWN", "i64", ["M", "N"], access="write")
    V = kb.view("V", "f32", ["L"], access="read")
    S = kb.view("S", "f32", ["NV"], access="write")
    W = kb.view("W", "i32", ["NV"], access="write")
    T = kb.view("T", "i64", ["NV"], access="write")
    kb.segment([ceil_div("M", "BM"), ceil_div("N", "BN")], order="grouped", group_size="G")
    kb.segment([ceil_div("L", "BV")])

    def tiles(r, coords):
        pm, pn = coords
        m, n = r.launch("M"), r.launch("N")
        rows = r.add(r.broadcast(r.mul(pm, r.launch("BM")), frag("index", "BM")), r.range(frag("index", "BM")))
        cols = r.add(r.broadcast(r.mul(pn, r.launch("BN")), frag("index", "BN")), r.range(frag("index", "BN")))
        rows2 = r.broadcast(rows, frag("index", "BM", "BN"), [0])
        cols2 = r.broadcast(cols, frag("index", "BM", "BN"), [1])
        ok = r.and_(r.cmp("lt", rows2, r.broadcast(m, frag("index", "BM", "BN"))),
                    r.cmp("lt", cols2, r.broadcast(n, frag("index", "BM", "BN"))))
        x = r.with_origin("two.x").load(X, [rows2, cols2], valid=ok, fill=0.0)
        two = r.broadcast(r.const(2.0, "f32"), frag("f32", "BM", "BN"))
        r.with_origin("two.y").store(Y, [rows2, cols2], r.mul(x, two), valid=ok)
        lin = r.add(r.mul(pm, r.launch(ceil_div("N", "BN"))), pn)
        r.with_origin("two.own").store(OWN, [rows2, cols2], r.broadcast(r.cast(lin, "i64"), frag("i64", "BM", "BN")),
                                       valid=ok)

    def blocks(r, coords):
        (q,) = coords
        L = r.launch("L")
        base = r.mul(q, r.launch("BV"))
        c0 = r.index(0)
        zero = r.const(0.0, "f32")
        end = r.launch("BV")
        step = r.launch("SUB")

        def summarize(rb, seg):
            off = rb.add(base, seg)
            i = rb.add(rb.broadcast(off, frag("index", "SUB")), rb.range(frag("index", "SUB")))
            ok = rb.cmp("lt", i, rb.broadcast(L, frag("index", "SUB")))
            v = rb.with_origin("two.v").load(V, [i], valid=ok, fill=0.0)
            return rb.with_origin("two.vs").reduce([v], [0], "add", [0.0])

        summ = r.sub_region([INDEX], summarize)
        comb = r.sub_region([F32, F32], lambda rb, a, b: [rb.add(a, b)])
        (tot,) = r.with_origin("two.fold").op("region_fold", [c0, end, step, zero], [F32], {},
                                              [summ, comb]).results
        r.with_origin("two.s").store(S, [q], tot)
        # while: bit length of q + 1
        one = r.index(1)
        cnt0 = r.const(0, "i32")
        start = r.add(q, one)
        cond = r.sub_region([INDEX, ScalarType("i32")],
                            lambda rb, n, c: [rb.cmp("gt", n, rb.index(0)), n, c])
        body = r.sub_region([INDEX, ScalarType("i32")],
                            lambda rb, n, c: [rb.value("floordiv", [n, rb.index(2)], INDEX),
                                              rb.add(c, rb.const(1, "i32"))])
        _, bits = r.with_origin("two.while").op("while", [start, cnt0], [INDEX, ScalarType("i32")], {},
                                                [cond, body]).results
        r.with_origin("two.w").store(W, [q], bits)
        even = r.cmp("eq", r.value("mod", [q, r.index(2)], INDEX), r.index(0))
        (t,) = r.with_origin("two.if").if_(even, lambda rb: [q], lambda rb: [rb.value("neg", [q], INDEX)])
        r.with_origin("two.t").store(T, [q], r.cast(t, "i64"))

    def body(r, pid):
        r.execution_group(0, pid, tiles, rank=2)
        r.execution_group(1, pid, blocks, rank=1)

    kb.body(body)
    return mb.build()


def two_segments_inputs(rng) -> dict:
    M, N, L = 11, 13, 37
    NV = -(-L // 16)
    return {"X": rng.standard_normal((M, N)).astype(np.float32), "Y": np.zeros((M, N), np.float32),
            "OWN": np.zeros((M, N), np.int64), "V": rng.standard_normal(L).astype(np.float32),
            "S": np.zeros(NV, np.float32), "W": np.zeros(NV, np.int32), "T": np.zeros(NV, np.int64)}


def two_segments_ref(x: dict, G: int = 2) -> dict:
    M, N = x["X"].shape
    gm, gn = -(-M // 4), -(-N // 8)
    own = np.zeros((M, N), np.int64)
    for local in range(gm * gn):
        in_group = G * gn
        first = (local // in_group) * G
        rows = min(gm - first, G)
        pm = first + (local % in_group) % rows
        pn = (local % in_group) // rows
        own[pm * 4:(pm + 1) * 4, pn * 8:(pn + 1) * 8] = pm * gn + pn
    V = x["V"].astype(np.float64)
    NV = len(x["S"])
    S = np.array([V[q * 16:(q + 1) * 16].sum() for q in range(NV)])
    W = np.array([int(q + 1).bit_length() for q in range(NV)], np.int32)
    T = np.array([q if q % 2 == 0 else -q for q in range(NV)], np.int64)
    return {"Y": 2 * x["X"], "OWN": own, "S": S, "W": W, "T": T}


# -------------------------------------------------------------------------------------------- grid-stride

def build_grid_stride() -> Module:
    """NPROG programs walk the blocks of X with a grid-stride loop: Y = alpha * X."""
    mb = ModuleBuilder("sm90")
    mb.param("BLOCK", 16, (16, 32))
    mb.param("NPROG", 3, (3, 4))
    kb = mb.kernel("scale", origin="scale")
    X = kb.view("X", "f32", ["N"], access="read")
    Y = kb.view("Y", "f32", ["N"], access="write")
    alpha = kb.scalar("alpha", "f32")
    kb.segment([ceil_div("N", "BLOCK")])
    kb.launch = Sym("NPROG")

    def group(r, coords):
        (p,) = coords
        n = r.launch("N")
        i = r.add(r.broadcast(r.mul(p, r.launch("BLOCK")), frag("index", "BLOCK")), r.range(frag("index", "BLOCK")))
        ok = r.cmp("lt", i, r.broadcast(n, frag("index", "BLOCK")))
        x = r.with_origin("scale.x").load(X, [i], valid=ok, fill=0.0)
        r.with_origin("scale.y").store(Y, [i], r.mul(x, alpha), valid=ok)

    def body(r, pid):
        total = r.launch(ceil_div("N", "BLOCK"))
        nprog = r.launch("NPROG")

        def loop(rb, lin, carried):
            rb.execution_group(0, lin, group, rank=1)
            return []

        r.with_origin("scale").for_(pid, total, nprog, [], loop)

    kb.body(body)
    return mb.build()


def grid_stride_inputs(rng) -> dict:
    X = rng.standard_normal(101).astype(np.float32)
    return {"X": X, "Y": np.zeros_like(X), "alpha": 1.5}


def grid_stride_ref(x: dict) -> dict:
    return {"Y": x["X"] * np.float32(1.5)}


# ---------------------------------------------------------------------------------------------- op suite

UNARY_F = ("neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid",
           "floor", "ceil", "recip", "log1p", "expm1")
BINARY_F = ("add", "sub", "mul", "div", "rem", "mod", "floordiv", "max", "min", "pow")
BINARY_I = ("add", "sub", "mul", "div", "rem", "mod", "floordiv", "max", "min", "and", "or", "xor", "pow")


def build_ops(dtype: str = "f32") -> Module:
    """Elementwise op suite over N members (blocks of B): every unary/binary float op of ``dtype`` on (A, P) with
    P > 0, integer ops on (I, J) with J != 0 and 0 <= J < 8 for pow/shifts, compares, select, casts, bitcast,
    approximate and flush_to_zero variants. One output view per op."""
    mb = ModuleBuilder("sm90")
    mb.param("B", 16, (16, 32))
    kb = mb.kernel(f"ops_{dtype}", origin="ops")
    A = kb.view("A", dtype, ["N"], access="read")
    P = kb.view("P", dtype, ["N"], access="read")
    Iv = kb.view("I", "i32", ["N"], access="read")
    J = kb.view("J", "i32", ["N"], access="read")
    outs: dict[str, Any] = {}

    def out(name: str, dt: str):
        outs[name] = kb.view(name, dt, ["N"], access="write")

    for u in UNARY_F:
        out(f"u_{u}", dtype)
    for b in BINARY_F:
        out(f"b_{b}", dtype)
    for b in BINARY_I:
        out(f"i_{b}", "i32")
    for extra, dt in (("i_shl", "i32"), ("i_shr", "i32"), ("i_neg", "i32"), ("i_abs", "i32"), ("i_not", "i32"),
                      ("c_lt", "i1"), ("c_ne", "i1"), ("sel", dtype), ("cast_i", "i32"), ("cast_f", dtype),
                      ("bitcast", dtype), ("approx_exp", dtype), ("approx_ftz_exp", dtype), ("approx_ftz_exp2", dtype),
                      ("approx_div", dtype), ("ftz_mul", dtype),
                      ("u_floordiv", "u32")):
        out(extra, dt)
    kb.segment([ceil_div("N", "B")])
    fr = lambda dt: frag(dt, "B")  # noqa: E731

    def group(r, coords):
        (p,) = coords
        n = r.launch("N")
        i = r.add(r.broadcast(r.mul(p, r.launch("B")), fr("index")), r.range(fr("index")))
        ok = r.cmp("lt", i, r.broadcast(n, fr("index")))
        a = r.with_origin("ops.a").load(A, [i], valid=ok, fill=1.0)
        pp = r.with_origin("ops.p").load(P, [i], valid=ok, fill=1.0)
        x = r.with_origin("ops.i").load(Iv, [i], valid=ok, fill=1)
        y = r.with_origin("ops.j").load(J, [i], valid=ok, fill=1)
        res: dict[str, Any] = {}
        for u in UNARY_F:
            src = pp if u in ("log", "log2", "sqrt", "rsqrt", "log1p") else a
            res[f"u_{u}"] = r.with_origin(f"ops.{u}").unary(u, src)
        for b in BINARY_F:
            lhs, rhs = (pp, a) if b == "pow" else (a, pp)
            res[f"b_{b}"] = r.with_origin(f"ops.{b}").binary(b, lhs, rhs)
        for b in BINARY_I:
            res[f"i_{b}"] = r.with_origin(f"ops.i{b}").binary(b, x, r.binary("and", y, r.broadcast(
                r.const(7, "i32"), fr("i32"))) if b == "pow" else y)
        seven = r.broadcast(r.const(7, "i32"), fr("i32"))
        res["i_shl"] = r.binary("shl", x, r.binary("and", y, seven))
        res["i_shr"] = r.binary("shr", x, r.binary("and", y, seven))
        res["i_neg"] = r.unary("neg", x)
        res["i_abs"] = r.unary("abs", x)
        res["i_not"] = r.unary("not", x)
        res["c_lt"] = r.cmp("lt", a, pp)
        res["c_ne"] = r.cmp("ne", a, a)
        res["sel"] = r.select(r.cmp("gt", a, pp), a, pp)
        res["cast_i"] = r.cast(r.sub(pp, r.broadcast(r.const(2.5, dtype), fr(dtype))), "i32")
        res["cast_f"] = r.cast(r.cast(a, "f16" if dtype != "f16" else "f32"), dtype)
        bits = "i32" if dtype == "f32" else "i16"
        res["bitcast"] = r.value("bitcast", [r.binary("xor", r.value("bitcast", [a], fr(bits)), r.broadcast(
            r.const(0, bits), fr(bits)))], fr(dtype))
        res["approx_exp"] = r.unary("exp", a, approximate=True)
        res["approx_ftz_exp"] = r.unary("exp", a, approximate=True, flush_to_zero=True)
        res["approx_ftz_exp2"] = r.unary("exp2", a, approximate=True, flush_to_zero=True)
        res["approx_div"] = r.binary("div", a, pp, approximate=True)
        res["ftz_mul"] = r.binary("mul", a, pp, flush_to_zero=True)
        ux, uy = r.cast(x, "u32"), r.cast(y, "u32")
        res["u_floordiv"] = r.binary("floordiv", ux, uy)
        for name, v in res.items():
            r.with_origin(f"ops.out.{name}").store(outs[name], [i], v, valid=ok)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def ops_inputs(rng, dtype: str = "f32") -> dict:
    from intent_eqsat.ir.dtypes import to_numpy
    N = 45
    npdt = to_numpy(dtype)
    A = (rng.standard_normal(N) * 3).astype(npdt)
    A[3] = np.nan
    A[5] = -0.0
    A[6] = 2.5
    A[7] = -100.0                     # exp, exp2 subnormal in f32: flushed by the flush_to_zero variants
    P = rng.uniform(0.25, 4.0, N).astype(npdt)
    I = rng.integers(-50, 50, N).astype(np.int32)
    J = rng.integers(1, 9, N).astype(np.int32) * rng.choice([-1, 1], N).astype(np.int32)
    I[0], J[0] = -7, 2
    I[1], J[1] = 7, -2
    I[2], J[2] = abs(I[2]), abs(J[2])
    out = {"A": A, "P": P, "I": I, "J": J}
    m = build_ops(dtype)
    for a in m.kernels[0].abi:
        if a.access == "write":
            out[a.name] = np.zeros(N, to_numpy(a.value.type.dtype))
    return out


# ---------------------------------------------------------------------------------------- shapes, buffers

def build_shapes() -> Module:
    """A [BM, BN] tile: transpose (stored to XT), join + reshape, extract, tuple/get and record/field,
    program-scope buffers written and read with identity and scalar coordinates, contracts as tl.dot (f32 ieee
    and tf32, K >= 16) and as the exact expansion (K = 8, and batched 3-D), and atomic cas/load/store."""
    mb = ModuleBuilder("sm90")
    mb.param("BM", 16, (16,))
    mb.param("BK", 8, (8,))
    BN = Sym("BK") * 2                          # the tile's column extent
    BN2 = BN * 2
    BM2 = Sym("BM") * 2
    kb = mb.kernel("shapes", origin="shapes")
    X = kb.view("X", "f32", ["M", "N"], access="read")
    XT = kb.view("XT", "f32", ["N", "M"], access="write")
    J2 = kb.view("J2", "f32", ["M", "N2"], access="write")
    EX = kb.view("EX", "f32", ["NP"], access="write")
    BUF = kb.view("BUF", "f32", ["M", "N"], access="write")
    DOT = kb.view("DOT", "f32", ["M", "M"], access="write")
    DOT32 = kb.view("DOT32", "f32", ["M", "M"], access="write")
    EXP = kb.view("EXP", "f32", ["NP", BM2, BM2], access="write")
    BAT = kb.view("BAT", "f32", ["NP", "BM", 2, 2], access="write")
    CNT = kb.view("CNT", "i32", ["NP"], access="readwrite")
    OLD = kb.view("OLD", "i32", ["NP"], access="write")
    kb.segment([ceil_div("M", "BM")])
    t2 = lambda dt="f32": frag(dt, "BM", BN)  # noqa: E731

    def iota(r, shape, axis):
        return r.broadcast(r.range(frag("index", shape[axis])), frag("index", *shape), [axis])

    def group(r, coords):
        (p,) = coords
        m, n = r.launch("M"), r.launch("N")
        base = r.broadcast(r.mul(p, r.launch("BM")), frag("index", "BM"))
        rows = r.add(base, r.range(frag("index", "BM")))
        rows2 = r.broadcast(rows, t2("index"), [0])
        cols2 = iota(r, ("BM", BN), 1)
        ok = r.and_(r.cmp("lt", rows2, r.broadcast(m, t2("index"))), r.cmp("lt", cols2, r.broadcast(n, t2("index"))))
        x = r.with_origin("shapes.x").load(X, [rows2, cols2], valid=ok, fill=0.0)
        # transpose
        tr = lambda v, dt: r.value("transpose", [v], frag(dt, BN, "BM"), perm=(1, 0))  # noqa: E731
        r.with_origin("shapes.xt").store(XT, [tr(cols2, "index"), tr(rows2, "index")], tr(x, "f32"),
                                         valid=tr(ok, "i1"))
        # join + reshape: J2[m, 2 n + k] = (x, -x)[k]
        j = r.value("join", [x, r.unary("neg", x)], frag("f32", "BM", BN, 2))
        jr = r.value("reshape", [j], frag("f32", "BM", BN2))
        r2 = r.broadcast(rows, frag("index", "BM", BN2), [0])
        c2 = iota(r, ("BM", BN2), 1)
        ok2 = r.and_(r.cmp("lt", r2, r.broadcast(m, frag("index", "BM", BN2))),
                     r.cmp("lt", c2, r.broadcast(r.launch("N2"), frag("index", "BM", BN2))))
        r.with_origin("shapes.join").store(J2, [r2, c2], jr, valid=ok2)
        # extract + tuple/get + record/field: EX[p] = x[1, 2] + x[0, 0]
        e12 = r.value("extract", [x], F32, index=(1, 2))
        e00 = r.value("extract", [x], F32, index=(0, 0))
        tup = r.value("tuple", [e12, e00], TupleType((F32, F32)))
        rec = r.value("record", [e12, e00], TupleType((F32, F32)), fields=("a", "b"))
        s = r.add(r.value("get", [tup], F32, index=0), r.op("field", [rec], [F32], {"name": "b"}).result)
        r.with_origin("shapes.ex").store(EX, [p], s)
        # program-scope buffer: identity store of x, scalar store buf[0, 1] = 42, scalar and identity loads
        buf = r.with_origin("shapes.buf").alloc(BufferType("f32", (Sym("BM"), BN), "program"), init=0.0)
        ib, jb = iota(r, ("BM", BN), 0), iota(r, ("BM", BN), 1)
        r.with_origin("shapes.buf").store(buf, [ib, jb], x, op="buffer_store")
        r.with_origin("shapes.buf").store(buf, [r.index(0), r.index(1)], r.const(42.0, "f32"), op="buffer_store")
        v01 = r.load(buf, [r.index(0), r.index(1)], op="buffer_load", type_=F32)
        y = r.add(r.load(buf, [ib, jb], op="buffer_load", type_=t2()), r.broadcast(v01, t2()))
        r.with_origin("shapes.bufout").store(BUF, [rows2, cols2], y, valid=ok)
        # contracts on the tile: x @ x^T (tl.dot, f32 ieee) and the same with tf32 (rhs contracted on axis 1)
        acc = r.const(0.0, frag("f32", "BM", "BM"))
        d = r.with_origin("shapes.dot").contract(x, tr(x, "f32"), acc)
        d32 = r.with_origin("shapes.dot32").contract(x, x, acc, lhs_contract=(1,), rhs_contract=(1,),
                                                      precision="tf32")
        dcols = r.broadcast(rows, frag("index", "BM", "BM"), [1])
        drows = r.broadcast(rows, frag("index", "BM", "BM"), [0])
        mm = r.broadcast(m, frag("index", "BM", "BM"))
        okd = r.and_(r.cmp("lt", drows, mm), r.cmp("lt", dcols, mm))
        r.with_origin("shapes.dot").store(DOT, [drows, dcols], d, valid=okd)
        r.with_origin("shapes.dot32").store(DOT32, [drows, dcols], d32, valid=okd)
        # exact expansion: K = BK = 8 < 16
        xk = r.value("reshape", [x], frag("f32", BM2, "BK"))
        e = r.with_origin("shapes.expand").contract(xk, xk, r.const(0.0, frag("f32", BM2, BM2)),
                                                     lhs_contract=(1,), rhs_contract=(1,))
        pe = r.broadcast(p, frag("index", BM2, BM2))
        r.with_origin("shapes.expand").store(EXP, [pe, iota(r, (BM2, BM2), 0), iota(r, (BM2, BM2), 1)], e)
        # batched expansion: [BM, 2, BK] x [BM, BK, 2] -> [BM, 2, 2] (batch axis 0), accumulator 1.0
        xb = r.value("reshape", [x], frag("f32", "BM", 2, "BK"))
        xbt = r.value("transpose", [xb], frag("f32", "BM", "BK", 2), perm=(0, 2, 1))
        b3 = r.with_origin("shapes.bat").contract(xb, xbt, r.const(1.0, frag("f32", "BM", 2, 2)),
                                                  lhs_contract=(2,), rhs_contract=(1,), lhs_batch=(0,),
                                                  rhs_batch=(0,))
        shp = ("BM", 2, 2)
        r.with_origin("shapes.bat").store(BAT, [r.broadcast(p, frag("index", *shp)), iota(r, shp, 0),
                                                iota(r, shp, 1), iota(r, shp, 2)], b3)
        # atomics on CNT[p]: cas(CNT[p], p -> 100 + p), atomic load, atomic store of the loaded value + 1
        pi = r.cast(p, "i32")
        old = r.with_origin("shapes.cas").op("atomic_cas", [CNT, p, pi, r.add(pi, r.const(100, "i32"))],
                                             [ScalarType("i32")], {"order": "relaxed", "domain": "device"}).result
        cur = r.with_origin("shapes.aload").op("atomic_load", [CNT, p], [ScalarType("i32")],
                                               {"order": "acquire", "domain": "device"}).result
        r.with_origin("shapes.astore").op("atomic_store", [CNT, p, r.add(cur, r.const(1, "i32"))], [],
                                          {"order": "release", "domain": "device"})
        r.with_origin("shapes.old").store(OLD, [p], old)

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def shapes_inputs(rng) -> dict:
    M, N = 37, 13
    NP = -(-M // 16)
    cnt = np.arange(NP, dtype=np.int32)
    cnt[1] = 7                                   # CAS fails for program 1
    return {"X": rng.standard_normal((M, N)).astype(np.float32), "XT": np.zeros((N, M), np.float32),
            "J2": np.zeros((M, 2 * N), np.float32), "EX": np.zeros(NP, np.float32),
            "BUF": np.zeros((M, N), np.float32), "DOT": np.zeros((M, M), np.float32),
            "DOT32": np.zeros((M, M), np.float32), "EXP": np.zeros((NP, 32, 32), np.float32),
            "BAT": np.zeros((NP, 16, 2, 2), np.float32), "CNT": cnt, "OLD": np.zeros(NP, np.int32)}


# A text program for ABI features: declared strides, dim/stride LaunchExprs, a private scalar with its producer,
# a workspace buffer in a private view (allocated by the launcher), a scalar-validity atomic_cas.
ABI_GIR = """\
module target "sm90" {
  param B: i64 = 16 in [16, 32]
  kernel @abi origin abi {
    abi {
      %X: view<f32, [R, C]> read strides [C, 1]
      %Y: view<f32, [R, C]> write
      %F: view<i32, [R]> readwrite
      %T: view<f32, [R]> write
      %S: view<i64, [R]> write
      private %W: view<f32, [R, C]> readwrite
      private %nb: i64 = ceil_div(C, B)
    }
    space {
      segment [R] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%r: index) {
        %c = launch() {expr = $(dim(X, 1))} : index
        %s0 = launch() {expr = $(stride(Y, 0))} : index
        %bb = launch() {expr = $(B)} : index
        %rb = range() : frag<index, [B]>
        %cb = broadcast(%c) {dims = []} : frag<index, [B]>
        %ok = cmp(%rb, %cb) {pred = lt} : frag<i1, [B]>
        %x = load(%X, %r, %rb, %ok) {fill = 0.0, origin = abi.x, valid = true} : frag<f32, [B]>
        %buf = alloc() {arg = W, init = first_write, origin = abi.w} : buffer<f32, [R, C], workspace>
        buffer_store(%buf, %r, %rb, %x, %ok) {origin = abi.w, valid = true}
        %y = buffer_load(%buf, %r, %rb, %ok) {fill = 0.0, origin = abi.y, valid = true} : frag<f32, [B]>
        store(%Y, %r, %rb, %y, %ok) {origin = abi.y, valid = true}
        %tot = reduce(%y) {axes = [0], combine = add, identity = [0.0], origin = abi.t} : f32
        %nbf = cast(%nb) : f32
        %t2 = add(%tot, %nbf) : f32
        store(%T, %r, %t2) {origin = abi.t}
        %s064 = cast(%s0) : i64
        store(%S, %r, %s064) {origin = abi.s}
        %two = const() {value = 2} : index
        %m = rem(%r, %two) : index
        %z = const() {value = 0} : index
        %even = cmp(%m, %z) {pred = eq} : i1
        %ri = cast(%r) : i32
        %hundred = const() {value = 100} : i32
        %new = add(%ri, %hundred) : i32
        %old = atomic_cas(%F, %r, %ri, %new, %even) {domain = device, order = acq_rel, origin = abi.cas, valid = true} : i32
        yield()
      }
      yield()
    }
  }
}
"""


PROGRAMS: dict[str, tuple[Callable[[], Module], str, Callable, Callable | None, dict]] = {
    "softmax_rows": (build_softmax, "softmax_rows", softmax_inputs, softmax_ref, {}),
    "scans": (build_scans, "scans", scans_inputs, scans_ref, {}),
    "hist2d": (build_histogram, "hist2d", histogram_inputs, histogram_ref, {}),
    "scatter": (build_scatter, "scatter", scatter_inputs, scatter_ref, {}),
    "argred": (build_argreduce, "argred", argreduce_inputs, argreduce_ref, {}),
    "two_segments": (build_two_segments, "two_segments", two_segments_inputs, two_segments_ref, {}),
    "two_segments_g3": (build_two_segments, "two_segments", two_segments_inputs,
                        lambda x: two_segments_ref(x, G=3), {"G": 3}),
    "grid_stride": (build_grid_stride, "scale", grid_stride_inputs, grid_stride_ref, {}),
    "ops_f32": (lambda: build_ops("f32"), "ops_f32", lambda rng: ops_inputs(rng, "f32"), None, {}),
    "ops_f16": (lambda: build_ops("f16"), "ops_f16", lambda rng: ops_inputs(rng, "f16"), None, {}),
    "shapes": (build_shapes, "shapes", shapes_inputs, None, {}),
}
