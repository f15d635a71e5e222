"""Issue 7 items 1-3: the benchmark harness (``bench/perf.py``) end to end on this CPU machine, no GPU.

* the torch float64 references of the harness compute the same function as the suite's KIR text (checked
  against the KIR reference evaluator, the semantic oracle);
* ``prepare`` compiles a few suite kernels for both providers, and a provider rejection is recorded with its
  TGT-9 kind instead of stopping the run;
* ``run --interpret`` (TRITON_INTERPRET=1, torch CPU, tiny shapes) checks every generated program against the
  float64 reference, times it next to its anchor, prints the ratio table and writes the JSON and calibration JSON;
* the calibration statistics (Spearman rank correlation) and the probe shapes.
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat import kir
from intent_eqsat.kir.inputs import random_inputs

ROOT = Path(__file__).resolve().parents[2]

torch = pytest.importorskip("torch")
pytest.importorskip("triton")


def _perf():
    name = "_bench_perf_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "perf.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


perf = _perf()


@pytest.mark.parametrize("bench", [b for b in perf.SUITE if b.source is None], ids=lambda b: b.name)
def test_torch_reference_equals_kir_evaluator(bench):
    """The harness's torch float64 reference equals the KIR evaluator on the suite KIR, at the tiny shape and the
    smallest check shape (outputs rounded to their declared dtype by the evaluator: the dtype's tolerance). Benches
    that compile another bench's kernel for one shape (``source``) share its reference."""
    path = perf.SUITE_DIR / f"{bench.name}.kir"
    module = kir.parse(path.read_text(), filename=str(path))
    k = module.kernel(bench.name)
    shapes = [dict(bench.interpret)]
    if bench.family != "attention":                   # the NumPy evaluator is slow on 4-D attention
        shapes.append(dict(bench.checks[0]))
    for seed, sizes in enumerate(shapes):
        inputs = random_inputs(module, bench.name, seed, sizes=sizes)
        sc = perf.scalars_for(bench.op, sizes)
        inputs.update(sc)
        ref = kir.evaluate(module, bench.name, {n: (v.copy() if isinstance(v, np.ndarray) else v)
                                                for n, v in inputs.items()}, float64=True)
        tin = {n: torch.from_numpy(np.asarray(v, dtype=np.float64)) for n, v in inputs.items()
               if isinstance(v, np.ndarray) and k.param(n).access != "out"}
        got = perf.REFERENCES[bench.op](torch, tin, sc, bench.causal).numpy()
        (out_name, want), = ref.items()
        want = np.asarray(want, dtype=np.float64)
        assert got.shape == want.shape
        rel = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert rel <= perf.TOLERANCE.get(k.param(out_name).dtype, 0.0), (bench.name, sizes, rel)   # ints: exact


def test_spearman_and_probe_shapes():
    assert perf.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert perf.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties take average ranks: x ranks (1.5, 1.5, 3), y ranks (1, 2, 3)
    assert perf.spearman([1, 1, 2], [5, 6, 7]) == pytest.approx(0.8660254, rel=1e-6)
    assert perf.spearman([1, 2], [1, 2]) is None                      # too few points
    assert perf.spearman([1, 1, 1], [1, 2, 3]) is None                # constant prediction
    # the probe keeps Triton's integer specialization (multiple of 16 or not, never 1) and reports the work ratio
    sizes = {"M": 1000, "N": 3000, "K": 777}
    p, r = perf.probe_sizes(sizes, {"M": 128})
    assert p == {"M": 128 + 1, "N": 3000, "K": 777} and r == pytest.approx(1000 / 129)
    att = {"Z": 4, "H": 32, "S": 4096, "T": 4096, "D": 64}
    p, r = perf.probe_sizes(att, perf._ATT_PROBE)
    assert p == {"Z": 2, "H": 16, "S": 16, "T": 16, "D": 64} and r == pytest.approx(2 * 2 * 256 * 256)
    # the ladder grows the work about 8x a rung, stays below the full shape, and keeps the specialization
    ladder = perf.probe_ladder(att, perf._ATT_PROBE)
    assert ladder[0] == (p, r) and len(ladder) >= 3
    ratios = [x for _, x in ladder]
    assert all(a > b for a, b in zip(ratios, ratios[1:])) and ratios[-1] >= 2
    for sizes, _ in ladder:
        assert all((sizes[k] % 16 == 0) == (att[k] % 16 == 0) and sizes[k] > 1 for k in att)
    assert perf.probe_ladder({"M": 16, "N": 8}, {"M": 16}) == []
    p, r = perf.probe_sizes({"M": 32768, "N": 8192}, {"M": 256}, fraction=0.25)
    assert p["M"] == 8192 and r == pytest.approx(4.0)


def test_prepare_records_a_provider_rejection(tmp_path, monkeypatch):
    """A combination a provider cannot build is recorded with its error kind; the other provider still builds."""
    (tmp_path / "erf_rows.kir").write_text(
        "kernel erf_rows(X: f32[M, N], S: out f32[M]) {\n  S[m] = sum(n: erf(X[m, n]))\n}\n")
    monkeypatch.setattr(perf, "SUITE_DIR", tmp_path)
    monkeypatch.setattr(perf, "ROOT", tmp_path)
    monkeypatch.setattr(perf, "SUITE", (perf.Bench("erf_rows", "row_sum", "memory", perf._ROWS, perf._ROW_CHECKS,
                                                   perf._ROW_TINY, {"M": 256}),))
    man = perf.prepare(tmp_path / "out", [], ["cutile", "triton"])
    by = {p["provider"]: p for p in man["programs"] if p["variant"] == "pick"}
    assert by["cutile"]["status"] == "rejected"
    assert by["cutile"]["error"]["unsupported_kind"] == "provider_surface"
    assert by["cutile"]["error"]["stage"] == "serialize"
    assert by["triton"]["status"] == "ready"
    assert (tmp_path / "out" / by["triton"]["module"]).read_text().startswith("# Generated by intent_eqsat")
    assert man["benches"][0]["providers"]["triton"] == "compiled"


ONLY = ["row_sum_f32"]              # a suite kernel the optimizer compiles in seconds (one: each runs every variant)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("perf")
    return out, perf.prepare(out, ONLY, ["triton", "cutile"])


def test_prepare_and_interpret_run_end_to_end(prepared, tmp_path, capsys):
    only = ONLY
    out, man = prepared
    assert [b["name"] for b in man["benches"]] == only
    want_bytes = {"row_sum_f32": 32768 * 8192 * 4 + 32768 * 4}                  # X read, S written
    for b in man["benches"]:
        case = next(c for c in b["cases"] if c["label"] == "32768x8192")
        assert case["bytes"] == want_bytes[b["name"]] and case["flops"] is None
    picks = [p for p in man["programs"] if p["variant"] == "pick"]
    assert {(p["bench"], p["provider"]) for p in picks} == {(n, pr) for n in only for pr in ("triton", "cutile")}
    for p in picks:
        assert p["status"] == "ready", p
        assert (out / p["module"]).is_file()
        assert p["predicted"]["32768x8192"]["total"] > 0
        assert len(p["tuning"]["structure"]) == 24 and p["tuning"]["threads"] % 32 == 0   # for tuning files
    doc = perf.run(out, tmp_path / "perf.json", "default", True, ["triton", "cutile"], [], budget=300,
                   cap_ms=50.0, hard_cap_s=60.0, item_timeout=120.0, calibration=tmp_path / "calib.json",
                   warmup=1, rep=1, parallel=2)
    printed = capsys.readouterr().out
    assert "ratio = anchor time / our time" in printed
    rows = {(r["bench"], r["provider"]): r for r in doc["rows"] if r["variant"] == "pick"}
    assert set(rows) == {(n, "triton") for n in only}            # cuTile is not run under the interpreter
    assert "cuTile" in doc["not_run"]
    for (name, _), r in rows.items():
        assert r["check"] == "pass", r
        assert r["check_rel_l2"] <= perf.TOLERANCE["f32" if name.endswith("f32") else "bf16"]
        assert r["status"] in ("ok", "slow") and r["ms"] > 0
        a = r["anchors"][0]
        assert a["name"] == "eager (interpret)" and a["ms"] > 0
        assert a["ratio"] == pytest.approx(a["ms"] / r["ms"])
        assert r["vs_copy_ceiling"] > 0 and math.isfinite(r["GBps"])
        # the full-shape comparison with the anchor's output (the tiny shape here)
        assert r["vs_anchor_ok"] is True
    saved = json.loads((tmp_path / "perf.json").read_text())
    assert saved["table"] == doc["table"] and saved["summary"]
    records = json.loads((tmp_path / "calib.json").read_text())["records"]    # the memory family is calibrated
    assert {r["bench"] for r in records} <= set(only)


def test_calibration_records_from_results():
    """Spearman over (predicted cost, measured time), the pick's distance from the best measured program, the
    over-cap estimate used as a measurement, same-source variants listed, and the family geometric mean."""
    case = {"label": "c", "sizes": {"M": 8, "N": 8, "K": 8}, "modes": ["default"], "scalars": {}, "flops": 1024,
            "bytes": 384}
    bench = {"name": "g", "family": "gemm", "op": "gemm", "causal": False, "cases": [case], "checks": [{}],
             "params": [], "outputs": ["C"], "probe": {}, "compile_sizes": {"M": 8, "N": 8, "K": 8}}
    pred = {"pick": 1.0, "cand1": 2.0, "cand2": 3.0, "constructed": 9.0}
    progs = [{"id": f"g.triton.{v}", "bench": "g", "provider": "triton", "variant": v, "status": "ready",
              "optimizer_cost": c, "predicted": {"c": {"total": c, "terms": {}}}} for v, c in pred.items()]
    progs.append({"id": "g.triton.cand3", "bench": "g", "provider": "triton", "variant": "cand3",
                  "status": "duplicate", "same_as": "g.triton.pick", "optimizer_cost": 1.0})
    man = {"benches": [bench], "programs": progs}
    items = [{"kind": "anchor", "id": "anchor|g|c|0", "which": 0}]
    results = {"anchor|g|c|0": {"status": "ok", "anchor": "cuBLAS matmul", "ms": 1.0}}
    measured = {"pick": ("ok", 4.0), "cand1": ("ok", 2.0), "cand2": ("ok", 8.0), "constructed": ("over_cap", 500.0)}
    for v, (st, ms) in measured.items():
        items += [{"kind": "check", "id": f"check|g.triton.{v}|0", "prog": f"g.triton.{v}", "k": 0},
                  {"kind": "time", "id": f"time|g.triton.{v}|c", "prog": f"g.triton.{v}"}]
        results[f"check|g.triton.{v}|0"] = {"status": "pass", "rel_l2": 1e-3}
        results[f"time|g.triton.{v}|c"] = {"status": st, ("ms" if st == "ok" else "est_ms"): ms}
    doc = perf.assemble(man, [{"bench": "g", "case": "c", "phase": 1, "items": items}], results, "default", {})
    assert [r["variant"] for r in doc["rows"]] == ["pick", "cand1", "cand2", "constructed"]
    (cal,) = doc["calibration"]
    # ranked (pick, cand1, cand2): predicted 1 < 2 < 3, measured 4, 2, 8 -> ranks (2, 1, 3) vs (1, 2, 3)
    assert cal["spearman_ranked"] == pytest.approx(0.5) and cal["n_ranked"] == 3
    assert cal["n_all"] == 4 and cal["spearman_all"] == pytest.approx(0.8)
    assert cal["best"] == "cand1" and cal["pick_vs_best"] == pytest.approx(1.0)
    assert cal["predicted_best"] == "pick"
    assert {"variant": "cand3", "same_as": "g.triton.pick", "optimizer_cost": 1.0} in cal["programs"]
    over = next(r for r in doc["rows"] if r["variant"] == "constructed")
    assert over["anchors"][0]["approx"] is True and over["anchors"][0]["ratio"] == pytest.approx(1.0 / 500.0)
    pick = doc["rows"][0]
    assert pick["anchors"][0]["ratio"] == pytest.approx(0.25) and pick["tflops"] == pytest.approx(1024 / 4e-3 / 1e12)
    assert doc["summary"]["gemm / triton vs cuBLAS matmul"]["geomean_ratio"] == pytest.approx(0.25)
    # compiled for its shape: also summarized alone (the size-agnostic rows are the model at its default problem)
    assert doc["summary"]["gemm compiled for its shape / triton vs cuBLAS matmul"]["geomean_ratio"] == \
        pytest.approx(0.25)
    assert "spearman ranked +0.50" in perf.format_table({"environment": {}, "mode": "default", **doc})


def test_timed_programs_become_tuning_measurements(tmp_path):
    """Every checked, timed program whose manifest entry names its structure and binding is a tuning measurement
    at its case's sizes (what compile(calibration=...) reads); unchecked or untimed ones are not."""
    from intent_eqsat.extract.calibration import Calibration
    key = {"structure": "abc", "binding": {"TILE_B0": 128}, "threads": 256, "stages": 3}
    man = {"target": "sm90", "benches": [{"name": "g", "cases": [{"label": "c", "sizes": {"M": 8, "N": 4}}]}],
           "programs": [{"id": f"g.triton.{v}", "tuning": dict(key, binding={"TILE_B0": b})}
                        for v, b in (("pick", 128), ("cand1", 64), ("cand2", 32))]}
    rows = [{"bench": "g", "case": "c", "provider": "triton", "variant": "pick", "status": "ok", "check": "pass",
             "ms": 2.0},
            {"bench": "g", "case": "c", "provider": "triton", "variant": "cand1", "status": "ok", "check": "fail",
             "ms": 1.0},
            {"bench": "g", "case": "c", "provider": "triton", "variant": "cand2", "status": "error",
             "check": "pass", "ms": None},
            {"bench": "g", "case": "c", "provider": "triton", "variant": "constructed", "status": "ok",
             "check": "pass", "ms": 9.0}]
    path = perf.write_tuning(man, rows, tmp_path / "tuning.json", {"device": "dev", "date": "d"})
    (m,) = Calibration.load(path).measurements
    assert (m.fingerprint, dict(m.sizes), dict(m.binding), m.threads, m.stages, m.provider) == \
        ("abc", {"M": 8, "N": 4}, {"TILE_B0": 128}, 256, 3, "triton")
    assert m.seconds == pytest.approx(2e-3) and m.device == "dev"


def test_probe_ladder_decides_bench_once_or_over_cap(prepared, interpret_mode, monkeypatch):
    """The timing decisions of the GPU path, driven on the CPU (wall clock instead of events): a generous hard cap
    runs the full shape (do_bench stand-in), a zero cap times one call, a tiny hard cap reports the probe's
    estimate without running the full shape (the poisoned output stays unwritten)."""
    out, man = prepared
    runner = perf.Runner(out, True, cap_ms=1e9, hard_cap_ms=1e9, warmup=1, rep=1)
    runner.interpret = False                    # the GPU path's probe ladder, on torch CPU tensors
    prog = runner.programs["row_sum_f32.triton.pick"]
    b = runner.benches["row_sum_f32"]
    case = {"label": "t", "sizes": {"M": 64, "N": 37}, "scalars": {}}
    ins = runner.inputs(b, case["sizes"], seed=1)
    r = runner.time_program(prog, case, ins)
    assert r["status"] == "ok" and r["ms"] > 0
    assert [p["sizes"]["M"] for p in r["probes"]] == [16]
    assert r["probes"][0]["est_ms"] == pytest.approx(4 * r["probes"][0]["ms"])
    want = ins["X"].double().sum(-1)
    assert runner.rel_l2(ins["S"], want) < 1e-6
    runner.cap_ms = 0.0
    assert runner.time_program(prog, case, ins)["status"] == "slow"
    runner.hard_cap_ms = 1e-9
    ins["S"].fill_(float("nan"))
    r = runner.time_program(prog, case, ins)
    assert r["status"] == "over_cap" and r["est_ms"] > 1e-9 and "ms" not in r
    assert bool(torch.isnan(ins["S"]).all())


def test_graph_replay_ratios_and_what_a_group_buys():
    """Each row carries the graph-replay time and the first anchor's ratio timed the same way; a bench compiled
    without a group is paired with the bench compiled the same way with it (time without / time with, by both
    methods); a family's graph geometric mean needs every row's graph ratio."""
    def bench(name, without=()):
        case = {"label": "c", "sizes": {"S": 8}, "modes": ["default"], "scalars": {}, "flops": None, "bytes": 64}
        return {"name": name, "family": "attention", "op": "attention", "causal": True, "cases": [case],
                "checks": [{}], "params": [], "outputs": ["O"], "probe": {}, "kir": "bench/suite/k.kir",
                "compile_sizes": {"S": 8}, "options": None, "specialize": None, "without_groups": list(without)}
    man = {"benches": [bench("k_narrowed"), bench("k_not_narrowed", ("narrowing",)), bench("other")],
           "programs": [{"id": f"{n}.triton.pick", "bench": n, "provider": "triton", "variant": "pick",
                         "status": "ready"} for n in ("k_narrowed", "k_not_narrowed", "other")]}
    man["benches"][2]["kir"] = "bench/suite/other.kir"
    times = {"k_narrowed": (0.10, 0.075), "k_not_narrowed": (0.14, 0.135), "other": (1.0, None)}
    groups, results = [], {}
    for n, (ms, graph) in times.items():
        items = [{"kind": "anchor", "id": f"anchor|{n}|c|0", "which": 0},
                 {"kind": "check", "id": f"check|{n}.triton.pick|0", "prog": f"{n}.triton.pick", "k": 0},
                 {"kind": "time", "id": f"time|{n}.triton.pick|c", "prog": f"{n}.triton.pick"}]
        results[f"anchor|{n}|c|0"] = {"status": "ok", "anchor": "SDPA flash", "ms": 0.09, "graph_ms": 0.09}
        results[f"check|{n}.triton.pick|0"] = {"status": "pass", "rel_l2": 1e-3}
        results[f"time|{n}.triton.pick|c"] = {"status": "ok", "ms": ms, **({"graph_ms": graph} if graph else
                                                                          {"graph_error": "capture failed"})}
        groups.append({"bench": n, "case": "c", "phase": 1, "items": items})
    doc = perf.assemble(man, groups, results, "default", {})
    rows = {r["bench"]: r for r in doc["rows"]}
    assert rows["k_narrowed"]["graph_ms"] == 0.075
    assert rows["k_narrowed"]["anchors"][0]["graph_ratio"] == pytest.approx(0.09 / 0.075)
    assert rows["other"]["graph_ms"] is None and rows["other"]["anchors"][0]["graph_ratio"] is None
    (pair,) = doc["groups"]
    assert (pair["bench"], pair["without_bench"], pair["without_groups"]) == \
        ("k_narrowed", "k_not_narrowed", ["narrowing"])
    assert pair["ratio"] == pytest.approx(1.4) and pair["graph_ratio"] == pytest.approx(1.8)
    # one row without a graph time: no graph geometric mean for the family
    assert doc["summary"]["attention / triton vs SDPA flash"]["graph_geomean_ratio"] is None
    table = perf.format_table({"environment": {}, "mode": "default", **doc})
    assert "graph 0.075 ms 1.2x" in table
    assert "k_narrowed without narrowing (k_not_narrowed), c, triton: do_bench 1.4x, graph replay 1.8x" in table
