"""The scheduler and the optimizer on fixture rulebooks: rules fire with match counts, the extracted program
changes and verifies, limits stop an unbounded group with a remark, compile options gate rules as facts,
per-group verification names the group, IR diffs per group, candidates."""
from __future__ import annotations

from pathlib import Path

import pytest

from intent_eqsat.extract.extractor import size_cost

from intent_eqsat import ir, kir, pipeline
from intent_eqsat.construct import construct
from intent_eqsat.ir.core import CompileOptions
from intent_eqsat.optimizer import diff, optimize
from intent_eqsat.rules import facts as F
from intent_eqsat.rules.egraph import KernelGraph
from intent_eqsat.optimizer.optimize import GroupVerificationError, optimize_kir
from intent_eqsat.rules.schedule import Limits


HERE = Path(__file__).resolve().parent
FX = [str(HERE / "rulebooks_fixture")]

MUL_ONE = "kernel k(X: f32[N, M], Y: out f32[N, M]) {\n  Y[i, j] = X[i, j] * 1.0 + 0.0\n}\n"
MUL_TWO = "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i] * 2.0\n}\n"


def _program(src: str, options: CompileOptions | None = None) -> ir.Module:
    return construct(kir.parse(src), options=options)


def _ops(module: ir.Module) -> list[str]:
    return [op.name for k in module.kernels for op in ir.walk(k.body)]


# ------------------------------------------------------------------------------------------------ rules fire

def test_identity_rule_fires_and_the_mul_disappears():
    m = _program(MUL_ONE)
    assert "mul" in _ops(m)
    res = optimize(m, rulebooks=FX, groups=["identity"])
    assert res.rules_fired.get("identity.mul_one_right_f", 0) > 0
    assert "mul" not in _ops(res.program)
    ir.verify(res.program)
    run = res.kernels["k"].runs[0]
    assert run.stop == "saturated" and run.iterations >= 1 and run.size_after > run.size_before
    assert run.matches["identity.mul_one_left_f"] == 0          # dead rules are listed with 0
    assert res.remarks == []
    # the post-extraction groups that run whatever the rule groups (optimizer.passes) follow the rule group
    assert res.report["groups"] == ["identity", "tile_binding", "unswitch_single_trip"]
    assert res.report["summary"] == "6 rules, 1 matched"        # + the passes (none changed this program)
    assert res.cost < optimize(m, rulebooks=FX, groups=[]).cost


def test_report_shape_and_trace():
    res = optimize(_program(MUL_ONE), rulebooks=FX, groups=["identity", "relaxed"], trace=True)
    rep = res.report
    for key in ("groups", "rules_fired", "egraph_size", "phases", "kernels", "rulebooks_version", "limits"):
        assert key in rep
    for phase in ("encode", "saturate", "extract", "decode", "verify", "total"):
        assert phase in rep["phases"]
    assert pipeline.egraph_size(rep) == rep["egraph_size"] > 0
    assert pipeline.cost_total(res.cost) == res.cost
    assert rep["trace"].rstrip().splitlines()[-2] == "8 rules, 2 matched"     # with the post-extraction groups
    assert "identity.py:" in rep["trace"]
    g = rep["kernels"]["k"]["groups"][0]
    assert g["group"] == "identity" and g["rules_fired"] == {"identity.mul_one_right_f": 2}


def test_optimize_is_deterministic_and_keeps_options():
    m = _program(MUL_ONE, CompileOptions(numerics="relaxed_normalization"))
    a = optimize(m, rulebooks=FX, groups=["identity", "relaxed"])
    b = optimize(m, rulebooks=FX, groups=["identity", "relaxed"])
    assert a.program == b.program and a.cost == b.cost
    assert a.program.options == m.options          # PASS-1.1: never silently replaced by defaults


def test_optimize_kir_constructs_first():
    res = optimize_kir(kir.parse(MUL_ONE), rulebooks=FX, groups=["identity"])
    assert "mul" not in _ops(res.program)


# ------------------------------------------------------------------------------------------------ blow-up control

def test_unbounded_group_stops_at_the_node_limit_with_a_verified_program():
    m = _program(MUL_ONE)
    res = optimize(m, rulebooks=FX, groups=["unbounded"], limits=Limits(max_nodes=1500))
    run = res.kernels["k"].runs[0]
    assert run.stop == "node_limit" and run.size_after > 1500
    ir.verify(res.program)
    assert res.program.kernels[0] == m.kernels[0]   # extraction keeps the smaller terms
    assert len(res.remarks) == 1
    assert f"unbounded: node limit 1500 reached after {run.iterations} iterations; best program so far " \
           f"extracted" in res.remarks[0]
    assert res.remarks[0].startswith("kernel k: ")


def test_iteration_limit():
    m = _program(MUL_ONE)
    res = optimize(m, rulebooks=FX, groups=["unbounded"], limits=Limits(max_iterations=3))
    assert res.kernels["k"].runs[0].iterations == 3
    assert res.kernels["k"].runs[0].stop == "iteration_limit"
    assert "unbounded: iteration limit 3 reached" in res.remarks[0]
    ir.verify(res.program)


def test_match_limit_stops_a_group_by_its_matches():
    m = _program(MUL_ONE)
    res = optimize(m, rulebooks=FX, groups=["unbounded"], limits=Limits(max_matches=50))
    run = res.kernels["k"].runs[0]
    total = sum(run.matches.values()) + sum(run.analysis_matches.values())
    assert run.stop == "match_limit" and total > 50
    assert f"unbounded: match limit 50 reached after {run.iterations} iterations ({total} matches)" in res.remarks[0]
    ir.verify(res.program)
    # one iteration less stays under the limit: the group stopped at the first iteration that crossed it
    fewer = optimize(m, rulebooks=FX, groups=["unbounded"], limits=Limits(max_iterations=run.iterations - 1))
    r2 = fewer.kernels["k"].runs[0]
    assert sum(r2.matches.values()) + sum(r2.analysis_matches.values()) <= 50


def test_a_budget_limit_gives_the_same_program_however_slow_the_clock(monkeypatch):
    """Issue 21: where a group stops depends on counts only. A clock that runs 1000 s per reading (a very loaded
    machine) gives the same iterations, remarks and program as the real clock, with the safety net off."""
    from intent_eqsat.rules import schedule

    m = _program(MUL_ONE)
    budget = Limits(max_iterations=4, safety_seconds=None)
    a = optimize(m, rulebooks=FX, groups=["identity", "unbounded"], limits=budget)
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(schedule, "now", lambda: float(next(ticks)))
    b = optimize(m, rulebooks=FX, groups=["identity", "unbounded"], limits=budget)
    assert [(r.group, r.stop, r.iterations, r.size_after) for r in a.kernels["k"].runs] == \
        [(r.group, r.stop, r.iterations, r.size_after) for r in b.kernels["k"].runs]
    assert a.remarks == b.remarks and a.program == b.program


def test_the_safety_net_is_an_error_naming_kernel_group_and_budget(monkeypatch):
    from intent_eqsat.errors import SearchTimeout
    from intent_eqsat.rules import schedule

    # readings: the kernel's start 0 (deadline 2500), the group's start 1000, a check at 2000 (one iteration
    # runs), a check at 3000 (past the deadline)
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(schedule, "now", lambda: float(next(ticks)))
    with pytest.raises(SearchTimeout) as info:
        optimize(_program(MUL_ONE), rulebooks=FX, groups=["unbounded"], limits=Limits(safety_seconds=2500.0))
    err = info.value
    assert err.kernel == "k" and err.group == "unbounded" and err.safety_seconds == 2500.0
    assert err.iterations == 1 and err.seconds == 2000.0
    assert err.budget == Limits().key() and "max_iterations=40" in err.budget
    assert str(err).startswith("kernel k: the search outlived its wall-clock safety net of 2500 s in group "
                               "unbounded after 1 iteration(s) (2000.0 s in that group; budget max_nodes=")


def test_budget_from_mappings_and_text_and_bad_budgets():
    from intent_eqsat.rules.schedule import make_limits

    assert make_limits({"iterations": "7", "nodes": 900}) == Limits(max_iterations=7, max_nodes=900)
    assert make_limits({"safety_seconds": "none"}).safety_seconds is None
    assert pipeline.make_budget("iterations=7, matches=10") == Limits(max_iterations=7, max_matches=10)
    assert Limits(max_iterations=7).key() != Limits().key()
    assert Limits(safety_seconds=5.0).key() == Limits().key()          # the safety net never changes a program
    for bad, says in [({"seconds": 3}, "unknown budget field 'seconds'"), ({"iterations": 0}, "max_iterations"),
                      ({"nodes": "many"}, "max_nodes: expected an integer"), ("iterations", "NAME=VALUE")]:
        with pytest.raises(pipeline.UsageError, match=says):
            pipeline.make_budget(bad)


def test_the_budget_is_in_the_report():
    res = optimize(_program(MUL_ONE), rulebooks=FX, groups=["identity"], limits={"iterations": 9})
    assert res.report["budget"] == Limits(max_iterations=9).budget()
    assert "safety_seconds" not in res.report["budget"]


def test_backoff_bans_a_rule_that_matches_too_often():
    res = optimize(_program(MUL_ONE), rulebooks=FX, groups=["unbounded"],
                   limits=Limits(max_nodes=4000, match_limit=2, ban_length=2))
    run = res.kernels["k"].runs[0]
    assert run.banned and set(run.banned) <= {f"unbounded.grow_{w}_{k}" for w in ("arg", "op") for k in (1, 2)}
    ir.verify(res.program)


def test_a_group_past_the_node_limit_is_skipped():
    res = optimize(_program(MUL_ONE), rulebooks=FX, groups=["identity"], limits=Limits(max_nodes=10))
    assert res.kernels["k"].runs[0].stop == "skipped"
    assert "identity: not run" in res.remarks[0]


# ------------------------------------------------------------------------------------------------ facts

def test_numerics_option_gates_a_rule():
    src = MUL_ONE
    default = optimize(_program(src), rulebooks=FX, groups=["relaxed"])
    assert default.rules_fired.get("relaxed.add_zero", 0) == 0
    assert "add" in _ops(default.program)
    assert any("k.s0.e2" in r and "missing numeric permission" in r for r in default.remarks)
    relaxed = optimize(_program(src, CompileOptions(numerics="relaxed_normalization")), rulebooks=FX,
                       groups=["relaxed"])
    assert relaxed.rules_fired.get("relaxed.add_zero", 0) > 0
    assert "add" not in _ops(relaxed.program)
    assert not relaxed.remarks
    # the options argument wins over the module's and ends up on the result
    again = optimize(_program(src), rulebooks=FX, groups=["relaxed"], options={"numerics": "relaxed_normalization"})
    assert "add" not in _ops(again.program) and again.program.options.numerics == "relaxed_normalization"


def _rows(egraph, rel):
    from egglog import get_callable_args

    if egraph.function_size(rel) == 0:
        return set()
    return {tuple(a.value for a in get_callable_args(r)) for r in egraph.function_values(rel)}


def test_facts_stay_apart_in_several_egraphs_of_one_process():
    k = _program(MUL_ONE).kernels[0]
    settings = [(CompileOptions(), "sm90", (16, 32)), (CompileOptions(numerics="relaxed_normalization",
                                                                      online_reduction=False), "gfx942", (64,)),
                (CompileOptions(optimization_remarks=True), "sm80", (1, 0, 128))]
    graphs = []
    for opts, target, tiles in settings * 2:                    # interleaved: six live EGraphs
        g = KernelGraph(k)
        F.insert(g.egraph, F.Facts.of(opts, target, tiles))
        graphs.append(g)
    for g, (opts, target, tiles) in zip(graphs, settings * 2):
        assert _rows(g.egraph, F.OptNumerics) == {(opts.numerics,)}
        assert _rows(g.egraph, F.OptOnline) == {(int(opts.online_reduction),)}
        assert _rows(g.egraph, F.OptRemarks) == {(int(opts.optimization_remarks),)}
        assert _rows(g.egraph, F.TileCand) == {(t,) for t in tiles}
        ints = dict(_rows(g.egraph, F.TargetInt))
        assert ints["warp_size"] == (64 if target == "gfx942" else 32)
        has = {h for (h,) in _rows(g.egraph, F.TargetHas)}
        assert ("provider:cutile" in has) == (target != "gfx942")


def test_tile_candidates_come_from_the_target():
    from intent_eqsat.providers.targets import get_target

    # 2:1 accumulators [T, T/2] in half of a 64K-register block: T up to 256 (the cost model rejects 256x256)
    assert F.tile_candidates(get_target("sm90")) == (16, 32, 64, 128, 256)
    res = optimize(_program(MUL_ONE), rulebooks=FX, groups=[], target="sm90", tile_candidates=(32, 64))
    assert res.report["facts"]["tile_candidates"] == [32, 64]


# ------------------------------------------------------------------------------------------------ verification

BAD_GROUP = '''"""Broken on purpose: a load becomes an integer constant.

Reads: loads.

Legality: none (this group is wrong).

Rewrites: an f32 load's e-class gains an i32 constant.

Preserves: nothing.

Invalidates: everything.

Verifier: the shared GPU verifier, which must reject the result.
"""
from egglog import rewrite, ruleset, var
from intent_eqsat.rules.sorts import A, AMap, Ty, Val, Vals

GROUP = "bad"
ORDER = 25
RULESET = ruleset(name="bad_fixture")


def rules():
    ops, attrs = var("ops", Vals), var("attrs", AMap)
    load = Val.op("load", ops, attrs, Ty.scalar("f32"))
    zero = Val.op("const", Vals.nil(), AMap.cons("value", A.int_(0), AMap.nil()), Ty.scalar("i32"))
    return [("bad.load_is_zero", rewrite(load).to(zero), "wrong on purpose")]
'''


def test_a_verifier_failure_names_the_group(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text(BAD_GROUP)
    with pytest.raises(GroupVerificationError) as info:
        optimize(_program(MUL_ONE), rulebooks=FX + [str(p)], groups=["identity", "bad"])
    assert info.value.group == "bad"
    assert "after transformation group 'bad'" in str(info.value)
    assert isinstance(info.value, ir.VerificationError)


# ------------------------------------------------------------------------------------------------ diffs, candidates

def test_diff_per_group():
    m = _program(MUL_ONE)
    rep = diff(m, rulebooks=FX, group="identity")
    assert [d.group for d in rep.diffs] == ["identity"]
    d = rep.diffs[0]
    assert d.changed and d.rules_fired == {"identity.mul_one_right_f": 2}
    removed = [line for line in d.diff.splitlines() if line.startswith("-") and "mul(" in line]
    assert removed and not any(line.startswith("+") and "mul(" in line for line in d.diff.splitlines())
    assert "=== kernel k, group identity" in rep.text()
    full = diff(m, rulebooks=FX, limits=Limits(max_iterations=2))
    assert [x.group for x in full.diffs] == ["identity", "relaxed", "strength", "unbounded", "tile_binding",
                                             "unswitch_single_trip"]   # + post-extraction
    assert not full.for_group("relaxed")[0].changed
    with pytest.raises(LookupError):
        diff(m, rulebooks=FX, group="nope")


def test_candidates_are_ranked_runner_ups():
    m = _program(MUL_TWO)
    # the AST-size cost: mul(x, 2) and add(x, x) are distinct under it (the roofline model prices them equally)
    res = optimize(m, rulebooks=FX, groups=["strength"], cost=size_cost)
    assert res.rules_fired == {"strength.mul_two": 1}
    assert res.candidates, "the add(x, x) alternative is a candidate"
    c = res.candidates[0]
    assert c.rank == 1 and c.cost > res.cost and c.kernel == "k"
    alt = ir.Module(m.target, m.options, m.params, [c.decode()])
    ir.verify(alt)
    assert ("add" in _ops(alt)) != ("add" in _ops(res.program))
    assert not optimize(m, rulebooks=FX, groups=["strength"], candidates=0, cost=size_cost).candidates


def test_cost_objects_plug_in():
    class Weighted:
        """Penalizes mul: the extractor then prefers add(x, x)."""

        def bind(self, export):
            nodes = export.nodes

            def node_cost(nid, node, kids):
                extra = 0.0
                if node["op"] == "Op" and nodes[node["children"][0]]["op"] == '"mul"':
                    extra = 100.0
                return 1.0 + extra + sum(kids)
            return node_cost

        def breakdown(self, export, choice, root):
            return {"ops": 1.0}

    res = optimize(_program(MUL_TWO), rulebooks=FX, groups=["strength"], cost=Weighted())
    assert "mul" not in _ops(res.program) and "add" in _ops(res.program)
    assert pipeline.cost_breakdown(res.cost) == {"ops": 1.0}


SEEDED_GROUP = '''"""Seeded facts (test): a rule that sees only what seed() asserted about the input.

Reads: the Seeded relation on the input kernel's segment list.

Legality: always.

Rewrites: nothing; it records a remark.

Preserves: everything.

Invalidates: nothing.

Verifier: the shared GPU verifier.
"""
from egglog import relation, rule, ruleset, var
from intent_eqsat.rules import facts as F
from intent_eqsat.rules.sorts import Segs

GROUP = "seeded"
ORDER = 1
RULESET = ruleset(name="seeded_fixture")
Seeded = relation("SeededSegs", Segs)


def seed(graph):
    graph.fact(Seeded, graph.term.args[1])


def rules():
    s = var("s", Segs)
    return [("seeded.saw_input", rule(Seeded(s)).then(F.Remark("seed seen", "segments")), "seed() facts are there")]
'''


def test_seed_asserts_facts_about_the_input(tmp_path):
    p = tmp_path / "seeded.py"
    p.write_text(SEEDED_GROUP)
    res = optimize(_program(MUL_ONE), rulebooks=[str(p)])
    assert res.rules_fired == {"seeded.saw_input": 1}
    assert res.remarks == ["kernel k, segments: seed seen"]


DETERMINISM_SCRIPT = """
import json, sys
from intent_eqsat import ir, kir, pipeline
from intent_eqsat.construct import construct
from intent_eqsat.optimizer.optimize import optimize
from intent_eqsat.rules.schedule import Limits
m = construct(kir.parse(open(sys.argv[1]).read()))
res = optimize(m, rulebooks=[sys.argv[2]], limits=Limits(max_nodes=1500))
rep = res.report
rep.pop("phases")
print(json.dumps([pipeline.to_plain(rep), ir.print_module(res.program), res.remarks], sort_keys=True))
"""


def test_reports_are_identical_across_processes(tmp_path):
    """Same input, different hash seeds: same program, same statistics (egglog-python's let hoisting of rule
    subexpressions made e-graph sizes depend on set order; the scheduler registers rules without it)."""
    import os
    import subprocess
    import sys

    src = tmp_path / "k.kir"
    src.write_text(MUL_ONE)
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", DETERMINISM_SCRIPT, str(src), FX[0]], capture_output=True,
                              text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
