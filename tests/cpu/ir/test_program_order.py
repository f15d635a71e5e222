"""Grouped program order with a group axis and a direction (SPEC IR-3, ``core.grouped_coordinates``): the decode is
a bijection on the segment's coordinates, its rank-2 ascending form is Triton's grouped GEMM ordering, the NumPy
interpreter runs it as written out by hand, the text form round-trips, and the verifier refuses a group axis
without a row axis before it. ``program_order.growing_axis`` picks the axis along which loops grow."""
from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat.ir import VerificationError, interpret, parse_module, print_module, verify
from intent_eqsat.ir.core import Segment, grouped_coordinates, segment_of_key
from intent_eqsat.ir.launch import Sym, evaluate
from intent_eqsat.ir.program_order import floor_power_of_two, growing_axis, order_by_work

OWNER = Path(__file__).parent / "programs" / "ordered_owner.gir"


def _triton_grouped(local: int, e0: int, e1: int, g: int) -> tuple[int, int]:
    in_group = g * e1
    first_m = (local // in_group) * g
    group_m = min(e0 - first_m, g)
    return first_m + (local % in_group) % group_m, (local % in_group) // group_m


@pytest.mark.parametrize("extents,group,axis,descending", [
    ((5, 7), 2, 1, False), ((5, 7), 3, 1, True), ((2, 3, 5), 4, 2, True), ((2, 3, 5), 1, 1, False),
    ((3, 2, 4, 3), 5, 2, True), ((3, 2, 4, 3), 2, 1, True), ((4, 1, 3, 2), 8, 3, False)])
def test_grouped_decode_is_a_bijection_on_the_coordinates(extents, group, axis, descending) -> None:
    n = int(np.prod(extents))
    seen = {grouped_coordinates(p, extents, group, axis, descending) for p in range(n)}
    assert seen == set(itertools.product(*(range(e) for e in extents)))


def test_rank_two_ascending_is_tritons_grouped_ordering_and_descending_mirrors_the_columns() -> None:
    for local in range(5 * 7):
        want = _triton_grouped(local, 5, 7, 2)
        assert grouped_coordinates(local, (5, 7), 2) == want
        assert grouped_coordinates(local, (5, 7), 2, 1, True) == (want[0], 6 - want[1])


def test_the_interpreter_runs_the_decode_written_out_by_hand() -> None:
    """Rows (a, b) = 3 in groups of 2, columns c from the last down, e fastest: programs 0-7 cover rows 0-1 (column
    1 first, rows fastest), programs 8-11 the last row's partial group."""
    module = parse_module(OWNER.read_text(), str(OWNER))
    verify(module)
    out = interpret(module, "owner", {"OWNER": np.zeros((1, 3, 2, 2), np.int64)}, {"G": 2})["OWNER"][0]
    want = np.array([[[4, 5], [0, 1]],          # b = 0: c = 0, c = 1 (each: e = 0, 1)
                     [[6, 7], [2, 3]],          # b = 1
                     [[10, 11], [8, 9]]])       # b = 2 (a group of one row)
    assert np.array_equal(out, want)


def test_text_form_round_trips_and_the_rank_two_default_prints_as_before() -> None:
    module = parse_module(OWNER.read_text(), str(OWNER))
    text = print_module(module)
    assert "order grouped(G, axis 2, descending)" in text
    assert parse_module(text) == module
    default = Segment((Sym("M"), Sym("N")), "grouped", Sym("G"))
    assert default.order_key == "grouped"
    seg = module.kernels[0].space.segments[0]
    assert seg.order_key == "grouped:2:descending"
    assert segment_of_key(seg.extents, seg.order_key, seg.group_size) == seg


@pytest.mark.parametrize("segment,message", [
    (lambda s: replace(s, group_axis=0), r"group axis 0 needs a row axis before it in a 4-D segment"),
    (lambda s: replace(s, group_axis=4), r"group axis 4 needs a row axis before it in a 4-D segment"),
    (lambda s: replace(s, order="row_major", group_size=None), r"a row-major segment takes no group axis or "
                                                               r"direction"),
])
def test_verifier_refuses_a_group_axis_without_rows_and_options_on_row_major(segment, message) -> None:
    module = parse_module(OWNER.read_text(), str(OWNER))
    k = module.kernels[0]
    bad = replace(k, space=replace(k.space, segments=(segment(k.space.segments[0]),)))
    module.kernels[0] = bad
    with pytest.raises(VerificationError, match=message):
        verify(module)


@pytest.mark.parametrize("bounds,axis", [
    ([({}, {2: 1}), ({2: 1}, {2: 1}), ({}, {})], 2),        # causal: full tiles grow, diagonal shifts, head dim fixed
    ([({}, {})], None),                                     # no loop moves
    ([({}, {2: 1}), ({}, {1: 1})], None),                   # two axes grow: no single choice
    ([({}, {2: 1}), ({2: 1}, {})], None),                   # one loop grows, another shrinks
    ([({}, {2: 1}), ({}, {2: None})], None),                # a bound that moves untracked
    ([({2: -1}, {})], 2),                                   # the lower bound falls: grows
])
def test_growing_axis(bounds, axis) -> None:
    assert growing_axis(bounds, 4) == axis


def test_group_sizes_are_floored_to_a_power_of_two() -> None:
    got = [evaluate(floor_power_of_two(Sym("x"), cap=64), {"x": x}) for x in (-3, 0, 1, 2, 3, 12, 50, 64, 65, 1000)]
    assert got == [1, 1, 1, 2, 2, 8, 32, 64, 64, 64]


# ir.program_order on a hand-written program: the seed GEMM with its K loop stopped at a program coordinate's tile

GEMM = Path(__file__).resolve().parents[3] / "examples" / "gir" / "gemm.gir"


def _triangular(coordinate: str, atomic: bool = False):
    """The seed GEMM whose K loop runs to ``min(K, (coordinate + 1) * tile)``: longer for larger ``coordinate``."""
    tile = {"%pm": "%bm", "%pn": "%bn"}[coordinate]
    text = GEMM.read_text().replace(
        "        %acc = for(%c0, %K, %bk, %acc0)",
        f"        %t0 = mul({coordinate}, {tile}) : index\n        %t1 = add(%t0, {tile}) : index\n"
        "        %kend = min(%K, %t1) : index\n        %acc = for(%c0, %kend, %bk, %acc0)")
    if atomic:
        text = text.replace("      %C: view<f16, [M, N]> write\n", "      %C: view<f16, [M, N]> write\n"
                            "      %CNT: view<i32, [1]> readwrite\n")
        text = text.replace("        yield()\n      }\n      yield()", "        %one = const() {value = 1} : i32\n"
                            "        %old = atomic_rmw(%CNT, %c0, %one) {domain = device, kind = add, order = relaxed}"
                            " : i32\n        yield()\n      }\n      yield()")
    module = parse_module(text, str(GEMM))
    verify(module)
    return module


def test_a_loop_growing_with_the_column_coordinate_orders_columns_descending_in_groups_of_rows() -> None:
    module = _triangular("%pn")
    kernel = module.kernels[0]
    ordered = order_by_work(kernel, l2_bytes=4 * 1024 * 1024, params=frozenset({"BM", "BN", "BK"}))
    seg = ordered.space.segments[0]
    assert (seg.order, seg.group_axis, seg.descending) == ("grouped", 1, True)
    # one row of A tiles (BM x K halves) is its share of the streamed view: 1 MiB / (BM * K * 2 bytes) rows
    assert evaluate(seg.group_size, {"M": 64 * 8, "K": 256, "BM": 64, "BN": 64, "BK": 32}) == 32
    rng = np.random.default_rng(5)
    args = {"A": rng.standard_normal((37, 50)).astype(np.float16),
            "B": rng.standard_normal((50, 45)).astype(np.float16), "C": np.zeros((37, 45), np.float16)}
    params = {"BM": 16, "BN": 16, "BK": 16}
    want = interpret(module, "gemm", {k: v.copy() for k, v in args.items()}, params)["C"]
    got = interpret(replace(module, kernels=[ordered]), "gemm", {k: v.copy() for k, v in args.items()}, params)["C"]
    assert np.array_equal(got, want)


def test_growth_along_the_first_axis_or_an_atomic_keeps_row_major() -> None:
    for module in (_triangular("%pm"), _triangular("%pn", atomic=True)):
        kernel = module.kernels[0]
        assert order_by_work(kernel, l2_bytes=4 * 1024 * 1024, params=frozenset({"BM", "BN", "BK"})) is kernel
