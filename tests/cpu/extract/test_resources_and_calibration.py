"""Launch resources bound from the cost model's footprint, and tuning files that re-rank tile bindings (issue 7
items 3 and 4: num_warps/num_stages as bound parameters; measurements the cost model reads, SPEC PASS-6). The
resources are a provider-local binding beside the program, not part of its text (issue 22 item 3, SPEC IR-11)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import intent_eqsat
from intent_eqsat import ir
from intent_eqsat.errors import IntentError
from intent_eqsat.extract.calibration import (Calibration, CalibrationError, fingerprint, measurement)
from intent_eqsat.extract.cost import RooflineCost, estimate
from intent_eqsat.ir.parser import parse_module
from intent_eqsat.ir.printer import print_module
from intent_eqsat.providers.errors import HardwareCapabilityUnsupported
from intent_eqsat.providers.launch_resources import LaunchResources
from intent_eqsat.providers.targets import SM90
from intent_eqsat.optimizer import optimize


ROOT = Path(__file__).resolve().parents[3]
GEMM = ROOT / "bench" / "suite" / "gemm_bf16.kir"
SOFTMAX = ROOT / "bench" / "suite" / "softmax_f32.kir"
BIG = {"M": 8192, "N": 8192, "K": 8192}


def _launch_options(source: str) -> dict:
    return eval(re.search(r"LAUNCH_OPTIONS = (\{.*\})", source).group(1))   # noqa: S307 - our own output


def _optimized(path, sizes, calibration=None):
    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    module = kir.parse(path.read_text(), filename=str(path))
    return optimize(construct(module), target="sm90",
                    cost=RooflineCost(SM90, sizes, calibration=calibration))


# ------------------------------------------------------------------------------------------- resources

def test_the_pick_is_launched_with_the_warps_the_model_costed_it_with():
    res = _optimized(GEMM, BIG)
    kr = res.kernels["gemm_bf16"]
    b = estimate(kr.kernel, SM90, BIG)
    assert kr.launch_resources == LaunchResources(threads=b.warps * SM90.warp_size, stages=3, index_bits=64)
    assert res.launch_resources == {"gemm_bf16": kr.launch_resources}
    # a 128-row x 256-column f32 accumulator fits the registers only with 8 warps: the model now offers it
    assert b.warps == 8 and b.legal
    ck = intent_eqsat.compile(GEMM, sizes=BIG)
    assert ck.launch_resources == {"gemm_bf16": kr.launch_resources}
    src = ck.source
    assert _launch_options(src)["num_warps"] == b.warps
    assert _launch_options(src)["num_stages"] == 3
    assert f"num_warps={b.warps}" in src       # the launcher's default too
    assert res.report["kernels"]["gemm_bf16"]["resources"] == {"threads": 256, "stages": 3, "index_bits": 64}


def test_ranked_candidates_decode_with_the_resources_they_were_costed_with():
    """A runner-up binding (a calibration program of the harness) is launched as the model costed it too."""
    res = _optimized(GEMM, BIG)
    kr = res.kernels["gemm_bf16"]
    cands = [c for c in kr.candidates if c.forbidden is None and c.term is not None]
    assert cands and any(c.params != kr.binding for c in cands)
    for c in cands:
        k, launch = c.decode(), c.launch_resources()
        b = estimate(k, SM90, BIG)
        if b.legal:
            assert (launch.threads, launch.stages) == (b.warps * 32, 3)
        else:
            assert launch is None          # the model rejects it: the provider's defaults apply

    def threads(params):
        return replace(cands[0], params=params).launch_resources().threads
    # a contract program: 64 accumulator members per thread, at least a 4-warp wgmma group on sm90
    small = {"TILE_B0": 64, "TILE_B1": 64, "TILE_K": 64}
    assert estimate(replace(cands[0], params=small).decode(), SM90, BIG).warps == 4
    assert threads(small) == 128                         # 4096/(32*64) = 2 warps -> 4
    # the accumulator, not the operand tiles (staged through shared memory), sizes the program: a 64x128
    # accumulator with 128-deep K tiles (a [128, 128] operand) gets 4 warps (measured 11% faster than 8)
    assert threads({"TILE_B0": 64, "TILE_B1": 128, "TILE_K": 128}) == 128
    assert threads({"TILE_B0": 128, "TILE_B1": 256, "TILE_K": 64}) == 256


def test_different_footprints_get_different_warps():
    """A row of 8192 f32 members per program needs 8 warps at 32 members per thread; a 1024-wide row fewer."""
    wide = _optimized(SOFTMAX, {"M": 32768, "N": 8192}).kernels["softmax_f32"].launch_resources
    narrow = _optimized(SOFTMAX, {"M": 32768, "N": 1024}).kernels["softmax_f32"].launch_resources
    assert wide.threads == 256
    assert narrow.threads < wide.threads


def test_a_program_alone_on_its_sm_takes_the_warps_that_issue_its_work():
    """One program of a few warps per SM issues its ALU work from few schedulers (``CostParams.issue_warps``): the
    same row program launched over 64 rows (one program per SM) takes more warps than over 32768 rows (SMs full of
    programs), where the footprint's warps are kept; without the issue term both keep the footprint's warps."""
    from intent_eqsat.extract.cost import CostParams
    kernel = _optimized(SOFTMAX, {"M": 32768, "N": 1024}).kernels["softmax_f32"].kernel
    many = estimate(kernel, SM90, {"M": 32768, "N": 1024})
    few = estimate(kernel, SM90, {"M": 64, "N": 1024})
    assert few.programs == 64 and many.programs == 32768
    assert many.warps < few.warps == 8
    flat = CostParams(issue_warps=1)
    assert estimate(kernel, SM90, {"M": 64, "N": 1024}, cost_params=flat).warps == many.warps
    # the issue term picks the warps only: the kernel's cost (its rank among programs) is the footprint's time
    footprint = estimate(kernel, SM90, {"M": 64, "N": 1024}, cost_params=CostParams(more_warps_gain=1.0))
    assert footprint.warps == many.warps and footprint.total == few.total


_BLOCKED_COPY = """
module target "sm90" {{
  kernel @k origin k {{
    abi {{
      %X: view<f32, [N]> read
      %Y: view<f32, [N]> write
    }}
    space {{
      segment [ceil_div(N, {t})] order row_major
    }}
    body (%pid: index) {{
      execution_group(%pid) {{segment = 0}} (%v0: index) {{
        %v1 = launch() {{expr = $({t})}} : index
        %v2 = mul(%v0, %v1) : index
        %v3 = broadcast(%v2) {{dims = []}} : frag<index, [{t}] axes [b0]>
        %v4 = range() : frag<index, [{t}] axes [b0]>
        %v5 = add(%v3, %v4) : frag<index, [{t}] axes [b0]>
        %v6 = launch() {{expr = $(N)}} : index
        %v7 = broadcast(%v6) {{dims = []}} : frag<index, [{t}] axes [b0]>
        %v8 = cmp(%v5, %v7) {{pred = lt}} : frag<i1, [{t}] axes [b0]>
        %v9 = load(%X, %v5, %v8) {{fill = 0.0, valid = true}} : frag<f32, [{t}] axes [b0]>
        %v10 = add(%v9, %v9) : frag<f32, [{t}] axes [b0]>
        store(%Y, %v5, %v10, %v8) {{valid = true}}
        yield()
      }}
      yield()
    }}
  }}
}}
"""


@pytest.mark.parametrize("tile, warps", [(32, 1), (128, 4), (1024, 8)])
def test_extra_warps_count_only_up_to_the_fragment_lanes(tile, warps):
    """32 programs alone on their SMs (N = 32 tiles): a warp past the fragment's lanes would only repeat its
    work, so with any gain accepted (``more_warps_gain = 0``) a 32-member tile keeps one warp, a 128-member one
    takes four, a 1024-member one the most (8)."""
    from intent_eqsat.extract.cost import CostParams
    module = parse_module(_BLOCKED_COPY.format(t=tile))
    b = estimate(module.kernels[0], SM90, {"N": 32 * tile}, cost_params=CostParams(more_warps_gain=0.0))
    assert b.legal and b.programs == 32 and b.warps == warps


def test_launch_resources_are_not_part_of_the_program_text():
    """SPEC IR-11: pipeline stages and tuning winners are not in the common IR. The printed program holds no
    resources, and a file that still writes them is refused where it says so."""
    ck = intent_eqsat.compile(SOFTMAX, sizes={"M": 32768, "N": 8192})
    assert ck.launch_resources["softmax_f32"] == LaunchResources(threads=256, stages=3, index_bits=32)
    text = print_module(ck.program)
    assert not re.search(r"^\s*(threads|stages|index_bits) \d+$", text, re.M)
    assert print_module(parse_module(text)) == text
    lines = text.splitlines()
    at = next(i for i, t in enumerate(lines) if t.strip().startswith("segment ")) + 1
    old = "\n".join(lines[:at] + ["    threads 256"] + lines[at:])
    with pytest.raises(IntentError, match=rf":{at + 1}:\d+: 'threads' is not part of a GPU IR program space"):
        parse_module(old)


def test_launch_resources_are_validated_where_they_are_made():
    for bad, msg in (({"threads": 0}, "threads must be a positive integer"),
                     ({"stages": -1}, "stages must be a positive integer"),
                     ({"index_bits": 16}, "index_bits must be one of")):
        with pytest.raises(ValueError, match=msg):
            LaunchResources(**bad)
    with pytest.raises(ValueError, match="unknown field"):
        LaunchResources.from_dict({"thread": 128})
    r = LaunchResources(128, 3, 32)
    assert LaunchResources.from_dict(r.as_dict()) == r
    assert LaunchResources(stages=4).over(r) == LaunchResources(128, 4, 32)


def test_threads_that_are_not_whole_warps_are_a_hardware_capability_rejection():
    from intent_eqsat.providers.triton import serialize
    prog = intent_eqsat.optimize(GEMM, sizes=BIG)
    k = prog.kernels[0]
    with pytest.raises(HardwareCapabilityUnsupported, match="100 threads are not a whole number of 32-lane"):
        serialize(prog, k.name, "sm90", launch_resources=LaunchResources(threads=100))
    # without resources the provider's defaults apply; an explicit launch option overrides the resources
    assert _launch_options(serialize(prog, k.name, "sm90"))["num_warps"] == 4
    assert _launch_options(serialize(prog, k.name, "sm90", launch_resources=LaunchResources(256, 3),
                                     num_warps=4))["num_warps"] == 4


# ------------------------------------------------------------------------------------------- calibration

def _tuning(tmp_path, res, sizes, timings, name="t.json"):
    """A tuning file with ``timings`` {(B0, B1, K): seconds} for the pick's structure at ``sizes``."""
    kr = res.kernels["gemm_bf16"]
    base = next(c for c in kr.candidates if c.forbidden is None and c.term is not None)
    fp = fingerprint(replace(base, params={}).decode())
    cal = Calibration([measurement(fp, "sm90", sizes, {"TILE_B0": b0, "TILE_B1": b1, "TILE_K": bk}, 128, 4, t)
                       for (b0, b1, bk), t in timings.items()])
    path = tmp_path / name
    cal.save(path, device="test")
    return path, fp


def test_a_measured_binding_overrides_the_models_ranking_at_the_measured_sizes(tmp_path):
    res = _optimized(GEMM, BIG)
    model_pick = res.kernels["gemm_bf16"].binding
    other = (64, 128, 32)
    assert (model_pick["TILE_B0"], model_pick["TILE_B1"], model_pick["TILE_K"]) != other
    path, fp = _tuning(tmp_path, res, BIG, {(model_pick["TILE_B0"], model_pick["TILE_B1"], model_pick["TILE_K"]):
                                            2e-3, other: 1e-3})
    cal = Calibration.load(path)
    tuned = _optimized(GEMM, BIG, cal).kernels["gemm_bf16"]
    assert tuned.binding == {"TILE_B0": 64, "TILE_B1": 128, "TILE_K": 32}
    assert (tuned.launch_resources.threads, tuned.launch_resources.stages) == (128, 4)     # the measured launch
    assert any(fp in r and "measured 1 ms with 128 threads, 4 stages" in r for r in tuned.remarks)
    # the same file at other sizes: nothing measured there, the model alone ranks
    small = {"M": 2048, "N": 2048, "K": 2048}
    untuned = _optimized(GEMM, small, cal).kernels["gemm_bf16"]
    assert untuned.binding == _optimized(GEMM, small).kernels["gemm_bf16"].binding
    assert any("hold no measurement of this program structure" in r for r in untuned.remarks)
    # through the public API and the CLI's file argument
    ck = intent_eqsat.compile(GEMM, sizes=BIG, calibration=str(path))
    assert "tl.arange(0, 64)" in ck.source and _launch_options(ck.source)["num_warps"] == 4


def test_unmeasured_bindings_are_scaled_by_the_worst_measured_miss():
    cal = Calibration([measurement("fp", "sm90", {"M": 1}, {"TILE_B0": 1}, None, None, 3.0)])
    ranked = [(1.0, {"TILE_B0": 1}), (1.2, {"TILE_B0": 2}), (5.0, {"TILE_B0": 4})]
    out, used = cal.rerank("fp", "sm90", {"M": 1}, ranked)
    # measured 3x its prediction; the others x3: the order is kept, the costs are rescaled
    assert [b["TILE_B0"] for _, b in out] == [1, 2, 4]
    assert [round(c, 6) for c, _ in out] == [3.0, 3.6, 15.0]
    assert len(used) == 1
    # two measurements, missed by 1.5x and 3x: an unmeasured binding is assumed missed by 3x (it must beat the
    # measured ones by that much to be picked); a binding the model holds illegal costs what it measured
    cal.measurements += [measurement("fp", "sm90", {"M": 1}, {"TILE_B0": 4}, None, None, 7.5),
                         measurement("fp", "sm90", {"M": 1}, {"TILE_B0": 8}, None, None, 2.0)]
    ranked.append((float("inf"), {"TILE_B0": 8}))
    out, used = cal.rerank("fp", "sm90", {"M": 1}, ranked)
    assert [(b["TILE_B0"], round(c, 6)) for c, b in out] == [(8, 2.0), (1, 3.0), (2, 3.6), (4, 7.5)]
    assert len(used) == 3
    assert cal.rerank("fp", "sm80", {"M": 1}, ranked)[1] == {}          # another target: not used
    assert cal.rerank("other", "sm90", {"M": 1}, ranked)[1] == {}       # another structure: not used


def test_the_fingerprint_is_the_structure_not_the_name():
    prog = intent_eqsat.optimize(GEMM, sizes=BIG)
    k = prog.kernels[0]
    renamed = intent_eqsat.optimize(GEMM.read_text().replace("gemm_bf16", "my_matmul"), sizes=BIG).kernels[0]
    assert renamed.name == "my_matmul" and "my_matmul.s0" in ir.print_module(ir.Module("sm90", kernels=[renamed]))
    assert fingerprint(k) == fingerprint(renamed)      # the ops' provenance names the kernel: not structure
    other = intent_eqsat.optimize(GEMM, sizes={"M": 64, "N": 4096, "K": 4096}).kernels[0]
    assert fingerprint(k) != fingerprint(other)        # other tile literals: another program


def test_bad_tuning_files_name_the_file_and_what_is_wrong(tmp_path):
    with pytest.raises(CalibrationError, match="missing.json: cannot read the tuning file"):
        Calibration.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "intent-eqsat-tuning/1",\n "measurements": [}\n')
    with pytest.raises(CalibrationError, match=r"bad.json:2:\d+: not JSON"):
        Calibration.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"records": []}))
    with pytest.raises(CalibrationError, match="other.json: not a tuning file"):
        Calibration.load(other)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"format": "intent-eqsat-tuning/1", "measurements": [{"fingerprint": "x"}]}))
    with pytest.raises(CalibrationError, match="partial.json: measurement 0: KeyError"):
        Calibration.load(partial)
    with pytest.raises(CalibrationError):
        intent_eqsat.compile(GEMM, sizes=BIG, calibration=str(bad))


def test_the_committed_h200_tuning_file_still_names_the_programs_this_compiler_extracts():
    """A rule or decoder change that alters a program's structure makes its measurements stale: the suite's GEMM at
    8192^3 must still be a measured structure, and its measured best binding the pick."""
    cal = Calibration.load(ROOT / "bench" / "calibration" / "tuning_h200.json")
    assert len(cal.measurements) >= 100
    # threads None: a program the model rejected ran with the provider's default launch
    assert all(m.seconds > 0 and m.target == "sm90" and (m.threads is None or m.threads % 32 == 0)
               for m in cal.measurements)
    kr = _optimized(GEMM, BIG, cal).kernels["gemm_bf16"]
    assert kr.fingerprint in {m.fingerprint for m in cal.measurements}
    best = min((m for m in cal.measurements if m.fingerprint == kr.fingerprint and dict(m.sizes) == BIG),
               key=lambda m: m.seconds)
    assert kr.binding == dict(best.binding)
    assert (kr.launch_resources.threads, kr.launch_resources.stages) == (best.threads, best.stages)


def test_a_measured_index_width_is_bound_and_round_trips(tmp_path):
    """The index width is a measured choice where a measurement records it: a tensor-core program (the model binds
    64 bits) measured fastest with 32-bit index arithmetic is bound 32 and launched with IDX = tl.int32 when its
    offsets fit; an index width outside 32/64 in a tuning file is a CalibrationError naming the file."""
    res = _optimized(GEMM, BIG)
    assert res.kernels["gemm_bf16"].launch_resources.index_bits == 64                # the model's rule
    pick = res.kernels["gemm_bf16"].binding
    fp = res.kernels["gemm_bf16"].fingerprint
    cal = Calibration([measurement(fp, "sm90", BIG, pick, 256, 3, 2e-3, index_bits=64),
                       measurement(fp, "sm90", BIG, pick, 256, 3, 1e-3, index_bits=32)])
    path = tmp_path / "t.json"
    cal.save(path, device="test")
    loaded = Calibration.load(path)
    assert sorted(m.index_bits for m in loaded.measurements) == [32, 64]
    kr = _optimized(GEMM, BIG, loaded).kernels["gemm_bf16"]
    assert kr.launch_resources.index_bits == 32 and kr.binding == pick
    assert any("32-bit index arithmetic" in r for r in kr.remarks)
    assert "IDX: tl.constexpr" not in intent_eqsat.compile(GEMM, sizes=BIG).source
    assert "IDX: tl.constexpr" in intent_eqsat.compile(GEMM, sizes=BIG, calibration=str(path)).source
    doc = json.loads(path.read_text())
    doc["measurements"][0]["index_bits"] = 16
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="t.json: measurement 0: ValueError: index_bits 16"):
        Calibration.load(path)


@pytest.mark.slow
def test_flash_weights_computed_in_registers_take_no_pipelined_shared_memory():
    """Flash attention's value contraction takes its left operand P from registers (the exps of the scores, never
    loaded): only the operands read from memory (Q, K, V tiles) are costed as ``pipeline_stages`` shared-memory
    copies, so the 128-row x 128-key binding the H200 runs (sweep 16: 0.82 ms) is legal in the model; before, P's
    three staged copies made it exceed shared memory."""
    from dataclasses import replace as _replace

    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    from intent_eqsat.extract.cost import CostParams
    from intent_eqsat.pipeline import make_options

    path = ROOT / "bench" / "suite" / "causal_attention_bf16_d64.kir"
    sizes = {"Z": 4, "H": 32, "S": 4096, "T": 4096}
    module = kir.parse(path.read_text(), filename=str(path))
    result = optimize(construct(module, options=make_options({"numerics": "relaxed_normalization"})), target="sm90",
                      cost=RooflineCost(SM90, sizes))
    base = next(c for c in result.kernels[module.kernels[0].name].candidates if c.term is not None)
    binding = {**base.params, "TILE_B0": 128, "TILE_B1": 64, "TILE_K": 64, "TILE_N": 128}
    b = estimate(_replace(base, params=binding).decode(), "sm90", sizes)
    stages, bf16 = CostParams().pipeline_stages, 2
    q, k, v = 128 * 64, 64 * 128, 128 * 64                  # elements of the tiles read from memory
    assert b.legal, b.reason
    assert b.smem_bytes == stages * (q + k + v) * bf16      # P (128 x 128) adds nothing
