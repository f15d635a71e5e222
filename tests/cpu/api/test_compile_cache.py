"""The on-disk compile cache and pickling of CompiledKernel (issue 24 item 3): a second compile of the same
inputs is a hit that runs no stage and gives the same kernel; any input that changes the output misses; a pickle
round-trips through the plain form; a batch run with ``--cache-dir`` fills the cache the API reads."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import intent_eqsat
from intent_eqsat import compile_cache, ir, pipeline

ROOT = Path(__file__).resolve().parents[3]
ROW_SUM = ROOT / "examples" / "corpus" / "row_sum.kir"


def _same_kernel(a, b) -> None:
    assert a.sources == b.sources and a.kernel_name == b.kernel_name
    assert ir.print_module(a.program) == ir.print_module(b.program)
    assert a.predicted_cost == b.predicted_cost
    assert [str(r) for r in a.remarks] == [str(r) for r in b.remarks]
    assert a.options == b.options and a.target == b.target and a.provider == b.provider


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache")
    return root, intent_eqsat.compile(ROW_SUM, cache=root, sizes={"M": 4096, "N": 4096})


def test_a_second_compile_is_a_hit_that_runs_no_stage(compiled, monkeypatch):
    root, first = compiled
    entries = list(root.glob("*/*.kernel.json"))
    assert len(entries) == 1
    assert not first.report.get("cached")

    def no_pipeline(*a, **k):
        raise AssertionError("the pipeline ran on a cache hit")

    monkeypatch.setattr(pipeline, "run", no_pipeline)
    again = intent_eqsat.compile(ROW_SUM, cache=root, sizes={"M": 4096, "N": 4096})
    assert again.report["cached"] is True
    _same_kernel(first, again)
    assert ir.print_module(again.constructed) == ir.print_module(first.constructed)
    # the explanation (cost terms, runner-up, the optimizer's account) survives the cache
    assert again.explain() == first.explain()
    assert "runner-up" in again.explain() and "blocking" in again.explain()


def test_inputs_that_change_the_output_miss(compiled):
    root, first = compiled
    other = dict(target="sm90", provider="triton", options=None, rulebooks=None, optimize=True,
                 sizes={"M": 4096, "N": 4096}, calibration=None, specialize=None, budget=None)
    base = compile_cache.key_of(first.kir_text, **other)
    assert compile_cache.lookup(root, base) is not None
    changed = [dict(other, sizes={"M": 64, "N": 4096}), dict(other, provider="cutile"),
               dict(other, options={"numerics": "relaxed_normalization"}), dict(other, optimize=False),
               dict(other, budget={"iterations": 3}), dict(other, rulebooks=["blocking"])]
    keys = {compile_cache.key_of(first.kir_text, **c) for c in changed}
    keys.add(compile_cache.key_of(first.kir_text.replace("sum(", "max("), **other))
    assert base not in keys and len(keys) == len(changed) + 1
    # inputs given as Python objects cannot be keyed: such a compile is not cached
    assert compile_cache.key_of(first.kir_text, **dict(other, rulebooks=[object()])) is None


def test_cache_off_and_bad_values(tmp_path, monkeypatch):
    monkeypatch.setenv("INTENT_EQSAT_CACHE", "off")
    monkeypatch.setenv("INTENT_EQSAT_CACHE_DIR", str(tmp_path))
    assert compile_cache.cache_dir(None) is None
    assert compile_cache.cache_dir(True) == tmp_path          # asked for explicitly: the variable's folder
    assert compile_cache.cache_dir(False) is None
    monkeypatch.delenv("INTENT_EQSAT_CACHE")
    assert compile_cache.cache_dir(None) == tmp_path
    with pytest.raises(pipeline.UsageError, match="cache must be"):
        compile_cache.cache_dir(3)


def test_compiled_kernel_pickles_through_the_plain_form(compiled):
    _, first = compiled
    back = pickle.loads(pickle.dumps(first))
    _same_kernel(first, back)
    assert back.explain() == first.explain()
    assert back.kir_text == first.kir_text and back.kir.kernels[0].name == "row_sum"
    assert b"egglog" not in pickle.dumps(first)
    assert back.plan().schema() == "(Tensor X, Tensor(a0!) S) -> ()"     # callable again: the launcher loads


def test_a_batch_with_cache_dir_fills_the_cache_the_api_reads(tmp_path, monkeypatch):
    from intent_eqsat.batch.runner import BatchConfig, run_batch

    kir = tmp_path / "in" / "row_sum.kir"
    kir.parent.mkdir()
    kir.write_text(ROW_SUM.read_text())
    cache = tmp_path / "shared"
    cfg = BatchConfig(inputs=[str(kir)], out=tmp_path / "out", target="sm90", providers=["triton"],
                      optimize=False, cache_dir=cache, jobs=1, progress=False, plots=False)
    run_batch(cfg)
    assert list(cache.glob("*/*.json"))
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    ck = intent_eqsat.compile(kir, cache=cache, optimize=False)
    assert ck.report["cached"] is True and "def launch(" in ck.source
    assert ck.optimizer_status == "skipped" and ck.program.kernel("row_sum") is not None


def test_an_unreadable_entry_is_compiled_again_and_replaced(tmp_path, caplog):
    """A cache entry that parses as JSON but not as a kernel (edited by hand, written by another version) is a
    miss with a warning, never an error of compile(); the fresh result replaces it."""
    ck = intent_eqsat.compile(ROW_SUM, cache=tmp_path, optimize=False)
    (entry,) = tmp_path.glob("*/*.kernel.json")
    import json

    doc = json.loads(entry.read_text())
    doc["result"]["program"] = "this is not GPU IR"
    entry.write_text(json.dumps(doc))
    again = intent_eqsat.compile(ROW_SUM, cache=tmp_path, optimize=False)
    assert not again.report.get("cached") and again.sources == ck.sources
    assert "unreadable" in caplog.text
    assert json.loads(entry.read_text())["result"]["program"] != "this is not GPU IR"
