"""cuTile provider (SPEC TGT-5, TGT-7, TGT-8, TGT-9) without a GPU: every program either exports to TileIR bytecode
for sm_90 through ``cuda.tile.compilation.export_kernel`` or is rejected up front with the right Unsupported kind;
serialization is byte-identical; each Unsupported kind the provider raises is hit by a test."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from intent_eqsat.ir import parse_module, print_module
from intent_eqsat.providers.cutile import TILEIR_MAGIC, export, legalize, serialize
from intent_eqsat.providers.cutile.export import load_source, write_source
from intent_eqsat.providers.cutile.spellings import SPELLINGS
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.providers.errors import (CompilationCostUnsupported, HardwareCapabilityUnsupported,
                                           ProviderSurfaceUnsupported, SharedLegalityUnsupported)
from intent_eqsat.providers.targets import SM90, get_target

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gir" / "gemm.gir"
PROGRAMS = ROOT / "tests" / "cpu" / "ir" / "programs"
GEMM_PARAMS = {"BM": 64, "BN": 64, "BK": 32}

#: (file, kernel, params bound to powers of two, expected: "export" or an Unsupported class)
CASES = [
    ("argmax.gir", "argmax", {"BR": 4, "BC": 16}, "export"),
    ("chunked_cumsum_scan.gir", "chunked_cumsum", {"BC": 8}, "export"),
    ("cumsum.gir", "cumsum", {"BR": 4, "BC": 8}, "export"),
    ("errors.gir", "oob_load", {"B": 8}, SharedLegalityUnsupported),   # unguarded OOB: the shared verifier (IR-10 5)
    ("errors.gir", "scatter_collision", {"B": 16}, "export"),
    ("errors.gir", "write_read_view", {"B": 8}, SharedLegalityUnsupported),
    ("errors.gir", "first_write_unwritten", {"B": 8}, "export"),
    ("grouped_tiles.gir", "tiles", {"BM": 4, "BN": 8, "G": 2}, "export"),
    ("histogram.gir", "histogram", {"BN": 16, "NB": 8}, "export"),
    ("online_softmax_fold.gir", "online_softmax", {"BC": 16}, "export"),
    ("ordered_owner.gir", "owner", {"G": 2}, "export"),
    ("scatter_add.gir", "scatter_add", {"BN": 32}, "export"),
    ("softmax.gir", "softmax", {"BC": 32}, "export"),
    ("two_groups.gir", "two_groups", {"B0": 16, "B1": 4, "B2": 8}, "export"),
]

cuda_tile = pytest.importorskip("cuda.tile")


def load(path: Path):
    return parse_module(path.read_text(), str(path))


def gemm_module(dtype: str = "f16"):
    text = GEMM.read_text()
    if dtype != "f16":
        text = text.replace("f16", dtype)
    return parse_module(text, str(GEMM))


def assert_bytecode(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > len(TILEIR_MAGIC)
    assert data.startswith(TILEIR_MAGIC)


def test_every_hand_written_program_is_covered() -> None:
    kernels = {(f.name, k.name) for f in PROGRAMS.glob("*.gir") for k in load(f).kernels}
    assert kernels == {(f, k) for f, k, _, _ in CASES}


@pytest.mark.parametrize("fname,kernel,params,expected", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_program_exports_or_is_rejected(fname, kernel, params, expected, tmp_path) -> None:
    module = load(PROGRAMS / fname)
    if expected == "export":
        assert_bytecode(export(module, kernel, "sm90", params, tmp_path))
    else:
        with pytest.raises(expected) as err:
            export(module, kernel, "sm90", params, tmp_path)
        assert err.value.kind == expected.kind and err.value.reason


def test_row_passes_run_once_under_a_guard_export(tmp_path) -> None:
    """The layernorm row program with its passes unswitched (``ir.unswitch.unswitch_sibling_loops``): a guarded
    ``if`` without results around the rest of the execution group exports as well."""
    from dataclasses import replace

    from intent_eqsat.ir import verify
    from intent_eqsat.ir.unswitch import unswitch_sibling_loops
    bound = load(PROGRAMS.parent / "bound" / "layernorm_rows.gir")
    assert_bytecode(export(bound, "layernorm_f32", "sm90", {}, tmp_path / "before"))
    module = replace(bound, kernels=[unswitch_sibling_loops(k) for k in bound.kernels])
    verify(module)
    path = export(module, "layernorm_f32", "sm90", {}, tmp_path / "after")
    assert_bytecode(path)
    assert "runs_once" in path.with_suffix(".py").read_text()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gemm_exports_to_tileir_bytecode(dtype, tmp_path) -> None:
    module = gemm_module(dtype)
    path = export(module, "gemm", "sm90", GEMM_PARAMS, tmp_path)
    assert_bytecode(path)
    src = path.with_suffix(".py").read_text()
    # the seed GEMM (SPEC IR-12) maps to ct.bid / tile-space ct.load with zero padding / ct.mma / ct.store
    assert "ct.bid(0)" in src and "ct.bid(1)" in src
    assert "ct.load(A, index=(v_pm, v_k0 // 32), shape=(64, 32), padding_mode=ct.PaddingMode.ZERO)" in src
    assert "ct.load(B, index=(v_k0 // 32, v_pn), shape=(32, 64), padding_mode=ct.PaddingMode.ZERO)" in src
    assert "ct.mma(v_a, v_b, v_acc)" in src
    assert "ct.store(C, index=(v_pm, v_pn), tile=v_out)" in src
    assert f"ct.astype(v_acc, ct.{'float16' if dtype == 'f16' else 'bfloat16'})" in src
    assert "# gemm.s0.A" in src and "# gemm.s0.sum" in src          # comments point at the KIR origins
    assert "gather" not in src


def test_serialization_is_byte_identical() -> None:
    for fname, kernel, params, expected in CASES + [("gemm", "gemm", GEMM_PARAMS, "export")]:
        if expected != "export":
            continue
        module = gemm_module() if fname == "gemm" else load(PROGRAMS / fname)
        first = serialize(module, kernel, "sm90", params)
        again = serialize(module, kernel, "sm90", params)
        reparsed = serialize(parse_module(print_module(module)), kernel, "sm90", params)
        assert first == again == reparsed


def test_generated_source_is_loaded_from_a_content_named_file(tmp_path) -> None:
    src = serialize(gemm_module(), "gemm", "sm90", GEMM_PARAMS)
    path = write_source(src, "gemm", tmp_path)
    assert path == write_source(src, "gemm", tmp_path)
    mod = load_source(path)
    assert mod.KERNEL_NAME == "gemm" and mod.PARAMS == GEMM_PARAMS and mod.GRID_FORM == "native"
    sig = mod.kernel_signature()
    assert len(sig.parameters) == 6


def test_launcher_grid_evaluates_the_program_space() -> None:
    torch = pytest.importorskip("torch")
    gemm = load_source_for(gemm_module(), "gemm", GEMM_PARAMS)
    a, b, c = torch.zeros(100, 40), torch.zeros(40, 130), torch.zeros(100, 130)
    assert gemm.grid(a, b, c) == (2, 3)
    two = load_source_for(load(PROGRAMS / "two_groups.gir"), "two_groups", {"B0": 16, "B1": 4, "B2": 8})
    x, w = torch.zeros(33), torch.zeros(9, 17)
    assert two.GRID_FORM == "linear"
    assert two.grid(x, x, w, w) == (3 + 3 * 3,)


def load_source_for(module, kernel, params):
    import tempfile
    return load_source(write_source(serialize(module, kernel, "sm90", params), kernel, tempfile.mkdtemp()))


# -- grid rank ------------------------------------------------------------------------------------------------

def rank_n_copy(rank: int) -> str:
    """A copy kernel whose program space is one rank-``rank`` segment, one element per program."""
    syms = ["P", "Q", "R", "S", "T"][:rank]
    coords = [f"%c{i}" for i in range(rank)]
    shape = ", ".join(syms)
    return f"""module target "sm90" {{
  options {{numerics = source, online_reduction = true, optimization_remarks = false}}
  kernel @copy{rank} origin copy {{
    abi {{
      %X: view<f32, [{shape}]> read
      %Y: view<f32, [{shape}]> write
    }}
    space {{
      segment [{shape}] order row_major
    }}
    body (%pid: index) {{
      execution_group(%pid) {{segment = 0}} ({', '.join(c + ': index' for c in coords)}) {{
        %x = load(%X, {', '.join(coords)}) {{origin = copy.x}} : f32
        store(%Y, {', '.join(coords)}, %x) {{origin = copy.y}}
        yield()
      }}
      yield()
    }}
  }}
}}
"""


def test_rank3_segment_uses_the_native_3d_grid(tmp_path) -> None:
    module = parse_module(rank_n_copy(3))
    plan = legalize(module, "copy3", "sm90")
    assert plan.grid.form == "native" and len(plan.grid.extents) == 3
    path = export(module, "copy3", "sm90", None, tmp_path)
    assert_bytecode(path)
    src = path.with_suffix(".py").read_text()
    assert "ct.bid(2)" in src and "%" not in src.split("def kernel_signature")[0].split("@ct.kernel")[1]


def test_rank4_segment_is_flattened_to_a_1d_grid_with_delinearization(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    module = parse_module(rank_n_copy(4))
    plan = legalize(module, "copy4", "sm90")
    assert plan.grid.form == "linear" and len(plan.grid.extents) == 1
    path = export(module, "copy4", "sm90", None, tmp_path)
    assert_bytecode(path)
    src = path.with_suffix(".py").read_text()
    kernel = src.split("@ct.kernel")[1].split("KERNEL =")[0]
    assert "ct.bid(1)" not in kernel and "ct.bid(0)" in kernel
    assert "v_c3 = v_c0_local % X.shape[3]" in kernel and "v_c0_local = v_c0_local // X.shape[3]" in kernel
    mod = load_source(path.with_suffix(".py"))
    x = torch.zeros(2, 3, 5, 7)
    assert mod.grid(x, x) == (2 * 3 * 5 * 7,)


def test_a_target_with_a_2d_grid_flattens_rank3(tmp_path) -> None:
    small = dataclasses.replace(SM90, name="grid2d", max_grid_rank=2)
    plan = legalize(parse_module(rank_n_copy(3)), "copy3", small)
    assert plan.grid.form == "linear"


# -- the four Unsupported kinds --------------------------------------------------------------------------------

def test_non_power_of_two_extent_is_provider_surface() -> None:
    with pytest.raises(ProviderSurfaceUnsupported) as err:
        serialize(gemm_module(), "gemm", "sm90", {"BM": 48, "BN": 64, "BK": 32})
    assert "power of two" in err.value.reason and err.value.kind == "provider_surface"


def test_dtype_the_target_lacks_is_hardware_capability() -> None:
    no_bf16 = dataclasses.replace(SM90, name="sm90-no-bf16", fragment_dtypes=SM90.fragment_dtypes - {"bf16"})
    with pytest.raises(HardwareCapabilityUnsupported) as err:
        serialize(gemm_module("bf16"), "gemm", no_bf16, GEMM_PARAMS)
    assert "bf16" in err.value.reason and err.value.kind == "hardware_capability"
    serialize(gemm_module("f16"), "gemm", no_bf16, GEMM_PARAMS)       # the f16 GEMM still serializes


def test_matrix_unit_form_the_target_lacks_is_hardware_capability() -> None:
    no_mma = dataclasses.replace(SM90, name="sm90-no-mma", contract_forms=())
    with pytest.raises(HardwareCapabilityUnsupported, match="matrix unit"):
        serialize(gemm_module(), "gemm", no_mma, GEMM_PARAMS)


def test_target_without_a_cutile_form_is_hardware_capability() -> None:
    with pytest.raises(HardwareCapabilityUnsupported, match="no cuTile source form"):
        serialize(gemm_module(), "gemm", get_target("gfx942"), GEMM_PARAMS)


def test_shared_legality() -> None:
    with pytest.raises(SharedLegalityUnsupported, match="not declared"):
        serialize(gemm_module(), "gemm", "sm90", {"BX": 64})
    with pytest.raises(SharedLegalityUnsupported, match="no kernel"):
        serialize(gemm_module(), "nope", "sm90")
    with pytest.raises(SharedLegalityUnsupported, match="access mode is read"):
        serialize(load(PROGRAMS / "errors.gir"), "write_read_view", "sm90")


def test_compilation_cost_bound() -> None:
    with pytest.raises(CompilationCostUnsupported) as err:
        serialize(gemm_module(), "gemm", "sm90", {"BM": 128, "BN": 128, "BK": 64}, max_tile_elements=4096)
    assert err.value.kind == "compilation_cost" and "16384 members" in err.value.reason


# -- the spelling table and surface decisions --------------------------------------------------------------------

def test_every_ir_op_has_exactly_one_cutile_entry() -> None:
    assert set(SPELLINGS) == set(SPECS)


def test_tile_space_recognition_is_proved_not_guessed() -> None:
    # argmax loads its columns as range(BC) against an extent C that may be 0: the tile could lie entirely outside
    # the view (undefined in cuTile), so the legalizer keeps the element form with the IR's mask and fill
    plan = legalize(load(PROGRAMS / "argmax.gir"), "argmax", "sm90")
    forms = sorted(p.form for p in plan.accesses.values())
    assert forms == ["element", "tile", "tile", "tile", "tile"]
    element = next(p for p in plan.accesses.values() if p.form == "element")
    assert "not provably non-empty" in element.reason
    src = serialize(load(PROGRAMS / "argmax.gir"), "argmax", "sm90")
    assert "ct.gather(X, (v_rows2, v_cols2), mask=v_ok, padding_value=-math.inf)" in src
    # cumsum's reversed chunk loop (chunk = last - t) has no provable tile index either
    plan = legalize(load(PROGRAMS / "cumsum.gir"), "cumsum", "sm90")
    assert sorted(p.form for p in plan.accesses.values()) == ["element", "element", "tile", "tile", "tile"]


def test_atomic_validity_moves_invalid_members_out_of_bounds() -> None:
    src = serialize(load(PROGRAMS / "scatter_add.gir"), "scatter_add", "sm90", {"BN": 32})
    assert ("ct.atomic_add(O, (ct.where(v_ok, v_idx, -1),), v_src, memory_order=ct.MemoryOrder.RELAXED, "
            "memory_scope=ct.MemoryScope.DEVICE)") in src


SURFACE_SNIPPETS = {
    "erf": ("%y = erf(%x) : frag<f32, [16]>", "erf"),
    "log1p": ("%y = log1p(%x) : frag<f32, [16]>", "log1p"),
    "expm1": ("%y = expm1(%x) : frag<f32, [16]>", "expm1"),
    "float rem": ("%y = rem(%x, %x) : frag<f32, [16]>", "fmod"),
    "float floordiv": ("%y = floordiv(%x, %x) : frag<f32, [16]>", "floor_divide"),
    "region scan": ("%y = scan(%x) {axis = 0, combine = region, identity = [0.0]} : frag<f32, [16]> "
                    "(%a: f32, %b: f32) {\n  %s = add(%a, %b) : f32\n  yield(%s)\n}", "region combiner"),
    "seq_cst atomic": ("%y = atomic_rmw(%Y, %i, %x) {domain = device, kind = add, order = seq_cst} : "
                       "frag<f32, [16]>", "sequentially consistent"),
    "float atomic max": ("%y = atomic_rmw(%Y, %i, %x) {domain = device, kind = max, order = relaxed} : "
                         "frag<f32, [16]>", "no float atomic max"),
    "atomic mul": ("scatter_reduce(%Y, %i, %x) {combine = mul}", "atomic multiply"),
}


def snippet_module(body: str):
    return parse_module(f"""module target "sm90" {{
  options {{numerics = source, online_reduction = true, optimization_remarks = false}}
  kernel @k origin k {{
    abi {{
      %X: view<f32, [16]> read
      %Y: view<f32, [16]> readwrite
    }}
    space {{
      segment [1] order row_major
    }}
    body (%pid: index) {{
      execution_group(%pid) {{segment = 0}} (%p: index) {{
        %i = range() : frag<index, [16]>
        %x = load(%X, %i) : frag<f32, [16]>
        {body}
        store(%Y, %i, %x)
        yield()
      }}
      yield()
    }}
  }}
}}
""")


@pytest.mark.parametrize("name", sorted(SURFACE_SNIPPETS))
def test_forms_without_a_cutile_spelling_are_rejected_up_front(name) -> None:
    body, reason = SURFACE_SNIPPETS[name]
    with pytest.raises(ProviderSurfaceUnsupported) as err:
        serialize(snippet_module(body), "k", "sm90")
    assert reason in err.value.reason


def test_bf16_atomic_add_before_sm90_is_hardware_capability() -> None:
    module = snippet_module("scatter_reduce(%Y, %i, %x) {combine = add}")
    serialize(module, "k", "sm90")
    no_float_add = dataclasses.replace(SM90, name="no-f32-atomic-add", atomics=tuple(
        a for a in SM90.atomics if a.kind != "add"))
    with pytest.raises(HardwareCapabilityUnsupported, match="atomic add on f32"):
        serialize(module, "k", no_float_add)


# -- shape symbols solved from product extents, self-contained launchers --------------------------------------------

def test_group_mean_product_extent_symbol_is_solved_and_exports(tmp_path) -> None:
    # X: f32[N, G*CPG] with G bound by Mean's axis 1: CPG appears only inside a product extent; the legalizer binds
    # it by division (the IR interpreter's and the Triton launcher's rule), the kernel reads the exact quotient and
    # the launcher checks divisibility first
    torch = pytest.importorskip("torch")
    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    path = ROOT / "examples" / "corpus" / "group_mean.kir"
    module = construct(kir.parse(path.read_text(), filename=str(path)), target="sm90")
    plan = legalize(module, "group_mean", "sm90")
    view, axis, others = plan.shape_products["CPG"]
    assert (view, axis) == ("X", 1) and [str(f) for f in others] == ["G"]
    out = export(module, "group_mean", "sm90", None, tmp_path)
    assert_bytecode(out)
    src = out.with_suffix(".py").read_text()
    assert "(X.shape[1] // (Mean.shape[1]))" in src
    assert "intent_eqsat" not in src.split("\n", 1)[1]          # only the header comment names the package
    mod = load_source(out.with_suffix(".py"))
    assert mod.grid(torch.zeros(3, 5 * 7), torch.zeros(3, 5)) == (3, 5)
    with pytest.raises(ValueError, match="not a positive multiple"):
        mod.launch(None, torch.zeros(3, 36), torch.zeros(3, 5))
    with pytest.raises(ValueError, match="not a positive multiple"):
        mod.launch(None, torch.zeros(3, 0), torch.zeros(3, 0))


def test_launcher_grid_limit_error_is_defined_in_the_generated_module(monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    from intent_eqsat.errors import IntentError
    gemm = load_source_for(gemm_module(), "gemm", GEMM_PARAMS)
    monkeypatch.setattr(gemm, "MAX_GRID", (1, 65535, 65535))
    a, b, c = (torch.zeros(*s, dtype=torch.float16) for s in ((100, 40), (40, 130), (100, 130)))
    with pytest.raises(gemm.HardwareCapabilityUnsupported) as err:
        gemm.launch(None, a, b, c)
    assert err.value.kind == "hardware_capability" and "allows 1" in err.value.reason
    assert err.value.location == "kernel gemm" and not isinstance(err.value, IntentError)


def test_launcher_rejects_an_output_that_overlaps_an_input() -> None:
    """The cuTile launcher shares the Triton launcher's overlap check (issue 25.10): a stride-0 output and an output
    sharing an input's storage are rejected before the grid is even computed."""
    torch = pytest.importorskip("torch")
    gemm = load_source_for(gemm_module(), "gemm", GEMM_PARAMS)
    a, b = torch.zeros(100, 40, dtype=torch.float16), torch.zeros(40, 130, dtype=torch.float16)
    with pytest.raises(ValueError, match="written view C has overlapping elements"):
        gemm.launch(None, a, b, torch.zeros(1, 1, dtype=torch.float16).expand(100, 130))
    buf = torch.zeros(100 * 130, dtype=torch.float16)
    with pytest.raises(ValueError, match="written view C overlaps the view A in memory"):
        gemm.launch(None, buf[:4000].view(100, 40), b, buf.view(100, 130))
