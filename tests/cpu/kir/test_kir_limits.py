"""Hostile and large inputs to the KIR front end (issue 25): every input either works or fails with a located
ParseError/KirError, never a bare ValueError or RecursionError; the front end's work grows linearly with the text.

* literals: integers over 4,300 digits (Python's conversion limit) in dims, tuple components, chunk sizes and
  values; magnitudes bounded by 2**63; float literals that overflow; literals outside the dtype they adopt (f16);
* modules: empty (or combiner-only) modules are refused by the verifier; a UTF-8 byte order mark is ignored; the
  input size limit is checked before lexing;
* scale: 10,000 chained lets parse, verify, print and evaluate; the verifier's work is linear in statements
  (counted in executed lines, not seconds); deep expressions up to the parser's limit pass every pass; deeper
  builder-made trees and too many index variables are refused located;
* shape symbols: every symbol must be determined by the view shapes (issue 25 item 7).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from intent_eqsat.errors import KirError, ParseError, SourceLocation
from intent_eqsat.kir import builder as kb
from intent_eqsat.kir import evaluate, parse, print_kir, verify
from intent_eqsat.kir.lexer import MAX_SOURCE_CHARS, tokenize
from intent_eqsat.kir.model import MAX_TREE_DEPTH
from intent_eqsat.kir.typer import MAX_INDICES

from .kir_testlib import CORPUS_FILES, line_events
from .kir_testlib import rejects as kir_error


def parse_error(text: str, line: int, col: int, *fragments: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, "bad.kir")
    err = info.value
    assert err.location == SourceLocation("bad.kir", line, col), str(err)
    for f in fragments:
        assert f in err.message, err.message
    return err


def let_chain(n: int, twice: bool = False) -> str:
    lines = ["kernel k(X: f32[N], Y: out f32[N]) {", "  let t0[i] = X[i]"]
    for j in range(1, n):
        lines.append(f"  let t{j}[i] = t{j - 1}[i] + t{j - 1}[i]" if twice else f"  let t{j}[i] = t{j - 1}[i] * 0.5")
    lines.append(f"  Y[i] = t{n - 1}[i]")
    return "\n".join(lines) + "\n}\n"


# ----------------------------------------------------------------------------------------------- literals

HUGE = "9" * 5000  # more digits than int() converts (sys.get_int_max_str_digits() is 4300)


def test_huge_integer_literals_are_located_parse_errors():
    parse_error(f"kernel k(X: f32[{HUGE}], Y: out f32[N]) {{ Y[i] = 0.0 }}", 1, 17, "does not fit in 64 bits",
                "(5000 digits)")
    parse_error(f"kernel k(X: f32[N], Y: out f32[N]) {{\n  Y[i] = X[i].{HUGE}\n}}", 2, 15, "does not fit")
    parse_error(f"kernel k(X: f32[N], Y: out f32[N]) {{\n  Y[i] = region_fold(n by {HUGE}, combine=add) {{ 1.0 }}\n}}",
                2, 27, "does not fit")
    parse_error(f"kernel k(X: f32[N], Y: out f32[N]) {{\n  Y[i] = X[i] + {HUGE}\n}}", 2, 17, "does not fit")
    parse_error(f"kernel k(X: f32[N], Y: out f32[N]) {{\n  Y[i] = X[i] + -{HUGE}\n}}", 2, 18, "does not fit")
    # magnitudes: |v| < 2**63 everywhere (dims too)
    parse_error("kernel k(X: f32[9223372036854775808], Y: out f32[N]) { Y[i] = 0.0 }", 1, 17, "2**63")
    parse_error("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i].9223372036854775808\n}", 2, 15, "2**63")
    verify(parse("kernel k(X: f32[N], Y: out i64[N]) { Y[i] = 9223372036854775807 + cast<i64>(X[i]) }"))


def test_leading_zeros_do_not_count_as_digits():
    module = parse("kernel k(X: f32[" + "0" * 5000 + "7], Y: out f32[7]) {\n  Y[i] = X[i] * " + "0" * 5000
                   + "2.0\n}\n")
    verify(module)
    assert module.kernel("k").param("X").dims == ((7,),)
    assert "X: f32[7]" in print_kir(module)


def test_a_float_literal_that_overflows_is_a_parse_error():
    parse_error("kernel k(X: f64[N], Y: out f64[N]) {\n  Y[i] = X[i] * 1e400\n}", 2, 17, "too large", "inf")
    verify(parse("kernel k(X: f64[N], Y: out f64[N]) {\n  Y[i] = X[i] * 1e300 + inf\n}"))


@pytest.mark.parametrize("dtype, literal, ok", [
    ("f16", "100000.0", False), ("f16", "70000", False), ("f16", "-65520.0", False), ("f16", "65520", False),
    ("f16", "65504.0", True), ("f16", "65519.0", True), ("f16", "inf", True), ("f16", "-inf", True),
    ("f16", "nan", True), ("f16", "1e-30", True),
    ("bf16", "1e39", False), ("bf16", "3e38", True),
    ("f32", "1e39", False), ("f32", "3.4e38", True), ("f64", "1e39", True),
    ("i8", "300", False), ("i8", "-129", False), ("i8", "127", True), ("i8", "-128", True),
    ("u8", "-1", False), ("u8", "256", False), ("u8", "255", True),
    ("i32", "2147483648", False), ("u32", "4294967296", False), ("u32", "4294967295", True),
])
def test_a_literal_must_fit_the_dtype_it_takes(dtype, literal, ok):
    text = f"kernel k(X: {dtype}[N], Y: out {dtype}[N]) {{\n  Y[i] = X[i] * {literal}\n}}\n"
    if ok:
        verify(parse(text))
    else:
        kir_error(text, 2, 17, "does not fit" if dtype[0] in "iu" else "out of the range", dtype)


def test_literal_ranges_are_checked_in_every_context():
    # a comparison, an update, a select, a where fill, a reduction body
    for body in ["Y[i] = cast<f16>(X[i] < 70000.0)", "Y[i] = X[i]\n  Y[i] max= 70000.0",
                 "Y[i] = select(X[i] > 0.0, X[i], 70000.0)", "Y[i] = X[i] where X[i] > 0.0 else 70000.0",
                 "Y[i] = sum(k: X[k] * 70000.0)"]:
        text = f"kernel k(X: f16[N], Y: out f16[N]) {{\n  {body}\n}}\n"
        line = text.split("\n")[-3]
        kir_error(text, text.count("\n") - 1, line.index("70000.0") + 1, "out of the range of f16")
    # a literal alone is f32
    kir_error("kernel k(X: f32[N], Y: out f32[N]) {\n  let c = 1e39\n  Y[i] = X[i] + c\n}\n", 2, 11, "f32")
    # a combiner identity or body
    kir_error("combiner c(a: f16, b: f16) associative commutative identity 70000.0 { a + b }\n"
              "kernel k(X: f16[N], Y: out f16[N]) { Y[i] = reduce(j: X[j], combine=c) }\n", 1, 61, "f16")
    # cast<...> of a literal converts explicitly: that is the author's choice
    verify(parse("kernel k(X: f16[N], Y: out f16[N]) { Y[i] = X[i] + cast<f16>(1e5) }"))


# ------------------------------------------------------------------------------------------------ modules


@pytest.mark.parametrize("text", ["", "\n\n  \t", "# a comment only\n", "\ufeff",
                                  "combiner c(a: f32, b: f32) associative commutative identity 0.0 { a + b }\n"])
def test_a_module_without_kernels_is_refused_located(text):
    module = parse(text, "bad.kir")
    with pytest.raises(KirError) as info:
        verify(module)
    assert info.value.location == SourceLocation("bad.kir", 1, 1)
    assert "needs at least one kernel" in info.value.message


def test_a_builder_module_without_kernels_is_refused():
    with pytest.raises(KirError, match="needs at least one kernel"):
        verify(kb.module())


@pytest.mark.parametrize("path", CORPUS_FILES[:6], ids=lambda p: p.stem)
def test_a_byte_order_mark_is_ignored(path):
    text = path.read_text()
    with_bom = parse("\ufeff" + text, "f.kir")
    assert with_bom == parse(text, "f.kir")
    verify(with_bom)
    assert [(t.kind, t.text, t.line, t.col) for t in tokenize("\ufeff" + text)] == \
        [(t.kind, t.text, t.line, t.col) for t in tokenize(text)]


def test_errors_after_a_byte_order_mark_keep_their_columns():
    parse_error("\ufeffkernel k(X: f33[N]) {\n}\n", 1, 13, "expected a dtype")
    parse_error("kernel k(X: f32[N]) {\n  Y[i] = X[i] \ufeff 2\n}\n", 2, 15, "unexpected character '\\ufeff'")


def test_the_size_limit_is_checked_before_lexing():
    # the '@' at the end would be the lexer's error: the size limit answers first, at 1:1
    err = parse_error("kernel" + " " * MAX_SOURCE_CHARS + "@", 1, 1, "limit", str(MAX_SOURCE_CHARS))
    assert "MAX_SOURCE_CHARS" in err.message
    # at the limit exactly, the text is read
    base = "kernel k(X: f32[N], Y: out f32[N]) { Y[i] = X[i] }"
    verify(parse(base + " " * (MAX_SOURCE_CHARS - len(base))))


def test_unicode_outside_comments_is_a_located_error():
    parse_error("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i] + \u00e9\n}\n", 2, 17, "unexpected character")
    parse_error("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i] + \uff11\n}\n", 2, 17, "unexpected character")
    verify(parse("# caf\u00e9 \U0001f600\nkernel k(X: f32[N], Y: out f32[N]) { Y[i] = X[i] }  # \u202e\n"))


# -------------------------------------------------------------------------------------------------- scale


def test_ten_thousand_chained_lets_parse_verify_print_and_evaluate():
    text = let_chain(10_000)
    module = parse(text, "chain.kir")
    verify(module)
    assert parse(print_kir(module), "chain.kir") == module
    x = np.arange(4, dtype=np.float32)
    out = evaluate(module, "k", {"X": x})["Y"]
    np.testing.assert_array_equal(out, np.zeros(4, np.float32))  # x * 0.5**9999 underflows to 0


def test_verification_work_is_linear_in_the_number_of_statements():
    """Counted in executed lines of the verifier: doubling the statements doubles the work (it was quadratic:
    every statement re-scanned every index variable and every subscript site of the kernel)."""
    small, large = parse(let_chain(400)), parse(let_chain(800))
    files = ("kir/infer.py", "kir/typer.py", "kir/verify.py", "kir/facts.py")
    n_small = line_events(lambda: verify(small), *files)
    n_large = line_events(lambda: verify(large), *files)
    assert n_large < 2.2 * n_small, (n_small, n_large)


def test_expressions_as_deep_as_the_parser_allows_pass_every_pass():
    # a chain of lets, each an operator chain close to the depth limit (the lowering inlines them all)
    chain = " + ".join(["X[i]"] * (MAX_TREE_DEPTH - 6))
    nested = "exp(" * 30 + "X[i] * 0.001" + ")" * 30
    lines = ["kernel k(X: f32[N], Y: out f32[N]) {", f"  let a0[i] = {chain}"]
    for j in range(1, 30):
        lines.append(f"  let a{j}[i] = a{j - 1}[i] * 0.5 + {nested}")
    lines.append("  Y[i] = a29[i]\n}")
    module = parse("\n".join(lines), "deep.kir")
    verify(module)
    assert parse(print_kir(module), "deep.kir") == module
    evaluate(module, "k", {"X": np.ones(3, np.float32)})


def test_absurdly_deep_text_is_a_located_parse_error():
    for e in ["(" * 100_000 + "X[i]" + ")" * 100_000, " + ".join(["X[i]"] * 20_000), "-" * 50_000 + "X[i]"]:
        with pytest.raises(ParseError) as info:
            parse(f"kernel k(X: f32[N], Y: out f32[N]) {{ Y[i] = {e} }}", "deep.kir")
        assert "nested" in info.value.message and isinstance(info.value.location, SourceLocation)


def test_a_deep_builder_made_expression_is_refused_located():
    k = kb.KernelBuilder("k")
    x = k.view("X", "f32", "N")
    y = k.view("Y", "f32", "N", access="out")
    i = kb.idx("i")
    e = x[i]
    for _ in range(5_000):
        e = e + 1.0
    k.assign(y[i], e)
    with pytest.raises(KirError) as info:
        verify(kb.module(k))
    assert "too deeply nested" in info.value.message and info.value.location == "k.s0"


def test_too_many_index_variables_are_refused_located():
    n = MAX_INDICES  # with the free index i, one more than allowed
    binds = ", ".join(f"k{j} in 0..2" for j in range(n))
    text = f"kernel k(X: f32[N], Y: out f32[N]) {{\n  Y[i] = sum({binds}: X[i])\n}}\n"
    col = text.split("\n")[1].index(f"k{n - 1} in") + 1
    kir_error(text, 2, col, "too many index variables", str(MAX_INDICES))
    # nested reductions count together
    text = "kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = " + "".join(
        f"sum(k{j} in 0..2: " for j in range(n)) + "X[i]" + ")" * n + "\n}\n"
    with pytest.raises(KirError, match="too many index variables"):
        verify(parse(text))
    # and so do a statement's free indices
    dims = ", ".join(f"N{j}" for j in range(MAX_INDICES + 1))
    subs = ", ".join(f"a{j}" for j in range(MAX_INDICES + 1))
    kir_error(f"kernel k(Y: out f32[{dims}]) {{\n  Y[{subs}] = 0.0\n}}\n", 2, 3, "too many index variables")
    # one fewer is fine, and evaluates (extents 1 but for three: the evaluator holds the whole domain)
    binds = ", ".join(f"k{j} in 0..{2 if j < 3 else 1}" for j in range(n - 1))
    module = parse(f"kernel k(X: f32[N], Y: out f32[N]) {{ Y[i] = sum({binds}: X[i]) }}")
    out = evaluate(module, "k", {"X": np.ones(2, np.float32)})["Y"]
    np.testing.assert_array_equal(out, np.full(2, 8.0, np.float32))


# ---------------------------------------------------------------------------------------------- shape symbols


@pytest.mark.parametrize("params, store, fragment", [
    ("X: f32[G*CPG], Y: out f32[G*CPG]", "Y[i] = X[i]", "'G' cannot be determined"),
    ("X: f32[N, G*CPG], Y: out f32[N, G*CPG]", "Y[n, i] = X[n, i]", "'G' cannot be determined"),
    ("X: f32[G*G], Y: out f32[G*G]", "Y[i] = X[i]", "factor of G*G"),
    ("X: f32[2*G*H], Y: out f32[H*K]", "Y[i] = 0.0", "'G' cannot be determined"),
])
def test_a_shape_symbol_must_be_determined_by_the_view_shapes(params, store, fragment):
    """It passed the verifier, then the evaluator asked for it as an input and a full optimize failed at
    serialization ("symbol 'CPG' is not a declared parameter")."""
    kir_error(f"kernel k({params}) {{\n  {store}\n}}\n", 1, 10, fragment, "whole dimension")


@pytest.mark.parametrize("params, store", [
    ("X: f32[N, G*CPG], Y: out f32[N, G]", "Y[n, g] = sum(c in 0..CPG: X[n, g*CPG + c])"),  # G from Y, then CPG
    ("X: f32[G*CPG*H], A: f32[H], B: out f32[G]", "B[g] = 0.0"),                             # two rounds
    ("X: f32[2*G], Y: out f32[2*G]", "Y[i] = X[i]"),                                          # integers known
    ("X: f32[G*CPG], B: f32[CPG], Y: out f32[G*CPG]", "Y[i] = X[i]"),
])
def test_determined_shape_symbols_are_accepted(params, store):
    verify(parse(f"kernel k({params}) {{\n  {store}\n}}\n"))
