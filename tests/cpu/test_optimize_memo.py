"""The suite's optimizer memo (``tests/optimize_memo.py``): a repeat of a call gets an equal, independent result
without a second optimizer run; anything that changes the result changes the key; calls it cannot key run."""
from __future__ import annotations

import os
from pathlib import Path

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from tests import optimize_memo as M

ROOT = Path(__file__).resolve().parents[2]


def _program() -> ir.Module:
    text = (ROOT / "examples/corpus/row_sum.kir").read_text()
    return construct(kir.parse(text, filename="row_sum.kir"), target="sm90")


def test_a_repeat_is_served_from_the_memo_as_an_independent_copy():
    import intent_eqsat.optimizer as O

    assert getattr(O.optimize, "_memoized", False), "conftest installs the memo"
    program = _program()
    first = O.optimize(program, target="sm90")
    key = M._key(program, {"target": "sm90"})
    assert key in M._MEMO
    M._MEMO[key].report["served_from_memo"] = True          # mark the stored entry: a repeat must be a copy of it
    try:
        second = O.optimize(program, target="sm90")
        assert second.report.get("served_from_memo") is True
        assert ir.print_module(second.program) == ir.print_module(first.program)
        second.report["mutated"] = 1
        assert "mutated" not in O.optimize(program, target="sm90").report
    finally:
        del M._MEMO[key]                                      # no later test sees the marked entry


def test_the_key_sees_every_input_and_refuses_what_it_cannot_see():
    program = _program()
    base = M._key(program, {"target": "sm90"})
    assert base == M._key(_program(), {"target": "sm90"})
    assert base != M._key(program, {"target": "sm80"})
    assert base != M._key(program, {"target": "sm90", "options": {"numerics": "relaxed_normalization"}})
    assert base != M._key(program, {"target": "sm90", "groups": ["blocking"]})
    assert base != M._key(program, {"target": "sm90", "limits": {"iterations": 3}})
    os.environ["INTENT_EQSAT_MEMO_PROBE"] = "1"
    try:
        assert base != M._key(program, {"target": "sm90"})
    finally:
        del os.environ["INTENT_EQSAT_MEMO_PROBE"]
    for extra in ({"trace": True}, {"progress": lambda *a: None}, {"observe": lambda *a: None},
                  {"rulebooks": "rulebooks"}, {"keep_graphs": True}, {"cost": object()}):
        assert M._key(program, {"target": "sm90", **extra}) is None, extra


def _decoded(result) -> list[str]:
    return [ir.print_module(ir.Module("sm90", result.program.options, [], [c.decode()])) for c in result.candidates]


def test_a_copied_result_decodes_its_candidates_as_the_original():
    """Terms are interned and the provenance is keyed by their identity: a deep copy (the in-process memo) decodes
    every candidate with the original's names and order (before, a copied split-reduction candidate of row_sum lost
    its SSA names); a pickle round trip (another process) likewise."""
    import copy
    import pickle

    import intent_eqsat.optimizer as O

    computed = getattr(O.optimize, "__wrapped__", O.optimize)(_program(), target="sm90")
    want = _decoded(computed)
    assert _decoded(copy.deepcopy(computed)) == want
    # a pickle of what decode reads (the candidates' closures aside): re-interned terms, provenance re-keyed
    for c in computed.candidates:
        term, prov = pickle.loads(pickle.dumps((c.term, c._prov)))
        assert term is c.term, "an unpickled term is this process's interned term"
        assert prov.names == c._prov.names and prov.order == c._prov.order and prov.homes == c._prov.homes
