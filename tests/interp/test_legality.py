"""The Triton provider verifier (SPEC TGT-7) and the four Unsupported kinds (TGT-9): each kind is its own exception
type, carries kind/reason/location, is raised before anything is printed, and each is hit here by a program."""
from __future__ import annotations

import dataclasses

import pytest

from intent_eqsat.errors import IntentError
from intent_eqsat.ir import parse_module, verify
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.providers.errors import (KINDS, CompilationCostUnsupported, HardwareCapabilityUnsupported,
                                           ProviderSurfaceUnsupported, SharedLegalityUnsupported, Unsupported)
from intent_eqsat.providers.targets import SM90, get_target
from intent_eqsat.providers.triton import SPELLINGS, legalize, serialize

from tests.interp.helpers import GEMM

# A 1-D kernel template: {VIEWS} adds ABI lines, {BODY} ops inside the group (%i, %ok, %x are defined).
TEMPLATE = """\
module target "sm90" {{
  param B: i64 = 16 in [16, 32]
  kernel @k origin k {{
    abi {{
      %X: view<{DT}, [N]> read
      %O: view<{DT}, [N]> readwrite
{VIEWS}    }}
    space {{
      segment [ceil_div(N, B)] order row_major
    }}
    body (%pid: index) {{
      execution_group(%pid) {{segment = 0}} (%p: index) {{
        %bb = launch() {{expr = $(B)}} : index
        %n = launch() {{expr = $(N)}} : index
        %i0 = mul(%p, %bb) : index
        %i0b = broadcast(%i0) {{dims = []}} : frag<index, [B]>
        %r = range() : frag<index, [B]>
        %i = add(%i0b, %r) : frag<index, [B]>
        %nb = broadcast(%n) {{dims = []}} : frag<index, [B]>
        %ok = cmp(%i, %nb) {{pred = lt}} : frag<i1, [B]>
        %x = load(%X, %i, %ok) {{fill = 0.0, origin = k.x, valid = true}} : frag<{DT}, [B]>
{BODY}        yield()
      }}
      yield()
    }}
  }}
}}
"""


def program(body: str, dt: str = "f32", views: str = "") -> str:
    return TEMPLATE.format(DT=dt, BODY="".join(f"        {line}\n" for line in body.strip().splitlines()),
                           VIEWS=views)


def expect(kind: type, text: str, match: str, target="sm90", params=None, verify=False, **options):
    """The provider verifier's verdict (the shared verifier off unless asked, so the provider's own checks are
    what is tested)."""
    m = parse_module(text)
    with pytest.raises(kind, match=match) as info:
        serialize(m, m.kernels[0].name, target, params, verify=verify, **options)
    err = info.value
    assert isinstance(err, Unsupported) and isinstance(err, IntentError)
    assert err.kind in KINDS and err.reason and err.location and str(err).startswith(str(err.location))
    # exactly one of the four kinds
    assert sum(isinstance(err, c) for c in (SharedLegalityUnsupported, ProviderSurfaceUnsupported,
                                            HardwareCapabilityUnsupported, CompilationCostUnsupported)) == 1
    return err


def test_the_four_kinds_are_distinct_types() -> None:
    classes = (SharedLegalityUnsupported, ProviderSurfaceUnsupported, HardwareCapabilityUnsupported,
               CompilationCostUnsupported)
    assert len({c.kind for c in classes}) == 4 and {c.kind for c in classes} == set(KINDS)
    for a in classes:
        assert issubclass(a, Unsupported) and issubclass(a, IntentError)
        for b in classes:
            assert a is b or not issubclass(a, b)
    e = ProviderSurfaceUnsupported("why", "kernel k, op #3 (load)")
    assert (e.kind, e.reason, e.location) == ("provider_surface", "why", "kernel k, op #3 (load)")
    assert str(e) == "kernel k, op #3 (load): [unsupported: provider_surface] why"


def test_a_legal_program_passes() -> None:
    text = program("store(%O, %i, %x, %ok) {valid = true}")
    verify(parse_module(text))
    assert "tl.store" in serialize(parse_module(text), "k", "sm90")


# -- shared GPU legality ------------------------------------------------------------------------------------

def test_shared_fragment_extent_depends_on_runtime_data() -> None:
    text = program("%z = const() {value = 0.0} : frag<f32, [N]>")
    err = expect(SharedLegalityUnsupported, text, r"fragment extent N .* not a constant")
    assert "op #" in err.location


def test_shared_undeclared_parameter() -> None:
    expect(SharedLegalityUnsupported, GEMM.read_text(), r"parameter 'BX' is not declared", params={"BX": 1})


def test_shared_write_to_a_read_view() -> None:
    expect(SharedLegalityUnsupported, program("store(%X, %i, %x, %ok) {valid = true}"),
           r"writes view %X, whose ABI access mode is read")


def test_serialize_runs_the_shared_verifier_first() -> None:
    from intent_eqsat.ir import VerificationError
    err = expect(SharedLegalityUnsupported, program("store(%X, %i, %x, %ok) {valid = true}"),
                 r"the shared GPU verifier rejects the module", verify=True)
    assert isinstance(err.__cause__, VerificationError)


@pytest.mark.parametrize("body,match", [
    ("%k = cast(%x) : frag<i32, [B]>\n%e = exp(%k) : frag<i32, [B]>", "exp is undefined on i32"),
    ("%nx = not(%x) : frag<f32, [B]>", "not is undefined on f32"),
    ("%s = add(%ok, %ok) : frag<i1, [B]>", "add is undefined on i1"),
])
def test_shared_op_undefined_on_its_dtype(body, match) -> None:
    expect(SharedLegalityUnsupported, program(body), match)


def test_shared_unresolvable_symbol() -> None:
    expect(SharedLegalityUnsupported, program("%q = launch() {expr = $(Q)} : index"),
           r"symbol 'Q' is not a declared parameter, an ABI scalar or a view shape symbol")


# -- provider surface -----------------------------------------------------------------------------------------

def test_surface_non_power_of_two_block() -> None:
    err = expect(ProviderSurfaceUnsupported, GEMM.read_text(), r"extent 48 .* power-of-two",
                 params={"BM": 48})
    assert "kernel gemm" in err.location


@pytest.mark.parametrize("body,match", [
    ("scatter_reduce(%O, %i, %x, %ok) {combine = mul, valid = true}", "no atomic multiply"),
    ("scatter_reduce(%O, %i, %x, %ok) {combine = max, valid = true}", "does not propagate NaN"),
    ("%old = atomic_rmw(%O, %i, %x, %ok) {domain = device, kind = add, order = seq_cst, valid = true} : "
     "frag<f32, [B]>", "no sequentially consistent form"),
    ("%old = atomic_cas(%O, %i, %x, %x, %ok) {domain = device, order = relaxed, valid = true} : frag<f32, [B]>",
     "has no mask"),
], ids=["scatter-mul", "float-atomic-max", "seq_cst", "masked-cas"])
def test_surface_atomics(body, match) -> None:
    expect(ProviderSurfaceUnsupported, program(body), match)


def test_surface_tf32_on_hip() -> None:
    text = GEMM.read_text().replace("f16", "f32").replace("lhs_contract = [1]", "lhs_contract = [1], precision = tf32")
    assert serialize(parse_module(text), "gemm", "sm90")                          # CUDA spells tf32
    expect(ProviderSurfaceUnsupported, text, r"hip backend has no tf32", target="gfx942")


def test_surface_scaled_contract() -> None:
    body = """
%xa = broadcast(%x) {dims = [0]} : frag<f32, [B, B]>
%acc = const() {value = 0.0} : frag<f32, [B, B]>
%sc = scaled_contract(%xa, %xa, %xa, %xa, %acc) {lhs_contract = [1], rhs_contract = [0], scale_block = 16} : frag<f32, [B, B]>
"""
    expect(ProviderSurfaceUnsupported, program(body), r"scaled_contract")


# -- hardware capability ---------------------------------------------------------------------------------------

def test_hardware_bf16_atomic_add_needs_sm90() -> None:
    text = program("scatter_reduce(%O, %i, %x, %ok) {combine = add, valid = true}", dt="bf16")
    assert "tl.atomic_add" in serialize(parse_module(text), "k", "sm90")
    err = expect(HardwareCapabilityUnsupported, text, r"sm80 has no atomic add on bf16", target="sm80")
    assert "scatter_reduce" in err.location


def test_hardware_num_warps_above_the_block_limit() -> None:
    expect(HardwareCapabilityUnsupported, GEMM.read_text(), r"num_warps=64", num_warps=64)


def test_hardware_dtype_missing_from_a_target() -> None:
    no_f64 = dataclasses.replace(SM90, name="sm90-no-f64", fragment_dtypes=SM90.fragment_dtypes - {"f64"})
    expect(HardwareCapabilityUnsupported, program("store(%O, %i, %x, %ok) {valid = true}", dt="f64"),
           r"element type f64 is not supported by sm90-no-f64", target=no_f64)


# -- compilation cost ------------------------------------------------------------------------------------------

def test_compilation_cost_bound() -> None:
    err = expect(CompilationCostUnsupported, GEMM.read_text(), r"members per thread .* compilation-cost bound",
                 params={"BM": 1024, "BN": 1024})
    assert "kernel gemm" in err.location
    # the same program is fine within the bound
    legalize(parse_module(GEMM.read_text()), "gemm", "sm90")


def test_cost_is_reported_after_every_other_kind() -> None:
    # a huge block that is also not a power of two: the surface error wins (cost is the last question asked)
    expect(ProviderSurfaceUnsupported, GEMM.read_text(), r"power-of-two", params={"BM": 1000, "BN": 1024})


# -- the spelling table ----------------------------------------------------------------------------------------

def test_every_ir_op_has_exactly_one_spelling_entry() -> None:
    assert set(SPELLINGS) == set(SPECS)
    for name, sp in SPELLINGS.items():
        assert sp.spelling, name


def test_contract_forms_are_recorded_by_legalization() -> None:
    plan = legalize(parse_module(GEMM.read_text()), "gemm", get_target("sm90"))
    (c,) = plan.contracts.values()
    assert c.form == "dot" and c.work == "f32" and c.operand == "f16"
    small = legalize(parse_module(GEMM.read_text()), "gemm", "sm90", {"BK": 16, "BM": 32, "BN": 32})
    assert next(iter(small.contracts.values())).form == "dot"
