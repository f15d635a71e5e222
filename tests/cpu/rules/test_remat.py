"""The remat rulebook (SPEC PASS-3.4 "remat changes def-use", PASS-4 "rematerialize pure values"; issue 4 must-show
"softmax's report shows the remat/materialize decision and why").

``rulebooks/remat.py`` (loaded by group name, after ``blocking``): a summary that construction recomputes inside
each consumer's loop is shared when the cost model says so (``remat.materialize_*``), and a row summary that
ownership blocking carries over a whole ``[T0, T1]`` tile is carried over its ``[T0]`` rows
(``remat.narrow_carry*``, ``remat.hoist_*``). Every optimized program passes the shared verifier and equals the KIR
float64 reference on odd shapes."""
from __future__ import annotations

import glob
import os

import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.ir.types import FragmentType
from intent_eqsat.optimizer import optimize
from tests.cpu.rules.reference import ROOT, assert_matches_reference, corpus, ops_named

CORPUS = sorted(glob.glob(os.path.join(ROOT, "examples", "corpus", "*.kir")))
GROUPS = ["blocking", "reduction", "remat"]


def _optimize(module: kir.KirModule, rulebooks=GROUPS, **kw):
    result = optimize(construct(module), target="sm90", rulebooks=rulebooks, **kw)
    ir.verify(result.program)
    return result


def _loops(kernel, origin_prefix: str = "") -> list:
    """Every ``for`` op of a kernel (any depth) whose origin starts with ``origin_prefix``."""
    return [op for op in ops_named(kernel.body.ops, "for") if str(op.attrs.get("origin", "")).startswith(origin_prefix)]


def test_softmax_report_shows_the_materialize_decision_and_why():
    module = corpus("softmax")
    result = _optimize(module)
    decisions = {d["kind"]: d for d in result.report["kernels"]["softmax"]["decisions"]}
    d = decisions["value"]
    assert d["value"] == "softmax.s0.e1"                                 # mx[m] = max(n: X[m, n])
    assert d["decision"] == "materialize"
    assert (d["copies"], d["alternative_copies"]) == (1, 2)
    assert d["alternative_cost"] > d["cost"] > 0                        # recomputing it costs one more row pass
    assert d["why"].startswith("1 loop computes it for every consumer") and "to rematerialize" in d["why"]
    assert f"{d['cost']:.3g} s vs {d['alternative_cost']:.3g} s" in d["why"]
    assert "materialize" in result.explain()
    # the decision really changed def-use: ONE max loop serves both consumers (construction had two)
    assert len(_loops(construct(module).kernels[0], "softmax.s0.e1")) == 2
    assert len(_loops(result.program.kernels[0], "softmax.s0.e1")) == 1
    assert_matches_reference(module, result.program)


def test_layernorm_mean_is_materialized():
    module = corpus("layernorm")
    result = _optimize(module)
    decisions = [d for d in result.report["kernels"]["layernorm"]["decisions"] if d["kind"] == "value"]
    assert decisions and all(d["decision"] == "materialize" for d in decisions)
    assert_matches_reference(module, result.program)


def _sized(module, sizes):
    from intent_eqsat.extract.cost import RooflineCost
    from intent_eqsat.providers.targets import get_target
    return _optimize(module, cost=RooflineCost(get_target("sm90"), sizes))


def test_row_summaries_across_column_tiles_depend_on_the_shape():
    """PASS-7 "different decisions for different shapes": with few rows (1024 x 1024, the model's default) the
    column programs each recompute the row summaries (more programs in flight); with many long rows (32768 x 8192)
    one program per row tile loops over the column tiles and computes them once."""
    module = corpus("softmax")
    few = _sized(module, {"M": 1024, "N": 1024})
    many = _sized(module, {"M": 32768, "N": 8192})
    pick = {}
    for tag, res in (("few", few), ("many", many)):
        axis = [d for d in res.report["kernels"]["softmax"]["decisions"] if d["kind"] == "program_axis"]
        assert len(axis) == 1, axis
        pick[tag] = axis[0]
        assert axis[0]["alternative_cost"] > axis[0]["cost"]
        assert_matches_reference(module, res.program, seeds=(3,))
    assert pick["few"]["decision"] == "rematerialize" and pick["many"]["decision"] == "materialize"
    rank = {tag: len(res.program.kernels[0].space.segments[0].extents) for tag, res in (("few", few), ("many", many))}
    assert rank == {"few": 2, "many": 1}
    group = many.program.kernels[0].body.ops[0].regions[0].ops
    # rows of one 8192-wide tile: the passes also run once under a guard (ir.unswitch.unswitch_sibling_loops); the
    # general branch keeps the column loop
    (branch,) = [op for op in group if op.name == "if"]
    once, general = branch.regions
    assert not [op for op in once.ops if op.name == "for"]
    loops = [op for op in general.ops if op.name == "for" and not op.results]
    assert len(loops) == 1 and any(o.name == "store" for o in loops[0].regions[0].ops)


def test_without_the_remat_group_no_decision_is_reported():
    result = _optimize(corpus("softmax"), rulebooks=["blocking"])
    assert result.report["kernels"]["softmax"]["decisions"] == []
    assert len(_loops(result.program.kernels[0], "softmax.s0.e1")) == 2


def test_row_summaries_are_carried_over_rows_not_the_whole_tile():
    module = corpus("softmax")
    blocked_only = _optimize(module, rulebooks=["blocking"])
    result = _optimize(module)
    for program, rank in ((blocked_only.program, 2), (result.program, 1)):
        loops = _loops(program.kernels[0])
        assert loops, "softmax has a max loop and a sum loop"
        for op in loops:
            ty = op.results[0].type
            assert isinstance(ty, FragmentType) and len(ty.shape) == rank, (op.attrs.get("origin"), ty)
    assert result.costs["softmax"] < blocked_only.costs["softmax"]
    assert_matches_reference(module, result.program)


def test_a_loop_reading_the_enclosing_iteration_is_never_moved_out():
    """attention's score loop s[b, h, i, j] = sum(d: ..) reads the key index j of the loop it sits in: every
    consumer keeps its own copy inside its loop (moving it out would read j where j does not exist)."""
    module = corpus("attention")
    result = _optimize(module)
    kernel = result.program.kernels[0]
    scores = _loops(kernel, "attention.s0.e5")
    outer = [op for op in _loops(kernel) if not str(op.attrs.get("origin", "")).startswith("attention.s0.e5")]
    holder = {id(x): str(o.attrs.get("origin")) for o in outer for reg in o.regions for x in ops_named(reg.ops, "for")}
    # the key loops that run once under a launch guard are inlined in a guarded copy (ir/unswitch.py): there the
    # score loop sits in the copy of its consumer's one iteration, not in a loop
    guarded = {id(x) for g in ops_named(kernel.body.ops, "if")
               if g.operands and g.operands[0].name.startswith("runs_once") for x in ops_named(g.regions[0].ops, "for")}
    general = [x for x in scores if id(x) not in guarded or id(x) in holder]
    assert general and all(id(x) in holder for x in general)
    # each consumer keeps its own copy: the max loop, and the moment and mass loops, which run as one loop
    # carrying both sums (ir/sibling_fusion.py: they re-read the keys over one range) with one copy for both
    assert {holder[id(x)] for x in general} == {"attention.s1.e3", "attention.s3.e6"}
    fused = [o for o in outer if str(o.attrs.get("origin")) == "attention.s3.e6" and id(o) not in guarded]
    assert fused and all(len(o.results) == 2 and len(ops_named(o.regions[0].ops, "for")) == 1 for o in fused)
    assert_matches_reference(module, result.program)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.basename(p)[:-4])
def test_remat_saturates_on_every_corpus_kernel(path):
    """The re-expression behind remat.materialize is a terminating recursion (regression: re-expressing an
    unresolved re-expression grew the e-graph by one node per step until the iteration limit)."""
    with open(path) as f:
        module = kir.parse(f.read(), filename=path)
    result = _optimize(module)
    runs = [r for k in result.kernels.values() for r in k.runs if r.group == "remat"]
    assert runs and all(r.stop == "saturated" for r in runs), [(r.kernel, r.stop) for r in runs]
