"""Malformed GPU IR text fails with a located ParseError (an IntentError), never a bare Python exception
(issue 2, "Must show"): truncation, unknown ops/types, type mismatches, undefined/redefined values, LaunchExprs that
read device data, bad access modes/scopes/orders, wrong result/type counts, unknown compile options, and a
random-mutation fuzz of the seed GEMM."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from intent_eqsat.errors import IntentError, ParseError, SourceLocation
from intent_eqsat.ir import parse_module, print_module
from intent_eqsat.ir.lexer import tokenize

ROOT = Path(__file__).resolve().parents[3]
GEMM_TEXT = (ROOT / "examples" / "gir" / "gemm.gir").read_text()

#: a small valid module; ``{LINE}`` is line 15, its text starts at column 9
TEMPLATE = """\
module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
  param BM: i64 = 64 in [32, 64]
  kernel @k origin k {
    abi {
      %X: view<f32, [N]> read
      %Y: view<f32, [N]> write
    }
    space {
      segment [ceil_div(N, BM)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
        %a = const() {value = 1.0} : f32
        {LINE}
        %h = const() {value = 1.0} : f16
        yield()
      }
      yield()
    }
  }
}
"""


def _fails(text: str, filename: str = "bad.gir") -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_module(text, filename)
    err = info.value
    assert isinstance(err, IntentError)
    assert isinstance(err.location, SourceLocation)
    assert err.location.file == filename
    assert str(err).startswith(f"{filename}:{err.location.line}:{err.location.col}: ")
    return err


def _at(err: ParseError) -> tuple[int, int]:
    return err.location.line, err.location.col


def test_template_is_valid():
    m = parse_module(TEMPLATE.replace("{LINE}", "%b = neg(%a) : f32"))
    assert print_module(parse_module(print_module(m))) == print_module(m)


# line 15 (the {LINE} slot) replaced; expected column and message ----------------------------------------------
BODY_CASES = [
    # unknown op / type
    ("%b = frobnicate(%a) : f32", 14, "unknown op 'frobnicate'"),
    ("%b = const() {value = 1.0} : f33", 38, "unknown type 'f33'"),
    ("%b = const() {value = 1.0} : frag<f33, [4]>", 43, "unknown element type 'f33'"),
    ("%b = const() {value = 1.0} : frug<f32, [4]>", 38, "unknown type 'frug'"),
    # type mismatches (located at the op name)
    ("%b = add(%a, %h) : f32", 22, "use of undefined value %h"),  # %h is defined after this line
    ("%b = cmp(%a, %a) {pred = lt} : f32", 14, "result is f32 but the operands give i1"),
    ("%b = select(%a, %a, %a) : f32", 14, "select's condition must be i1"),
    ("%b = neg(%a) : f16", 14, "type mismatch in neg: result is f16 but the operands give f32"),
    ("%b = neg(%X) : f32", 14, "op neg takes scalars or fragments, but %X is view<f32, [N]>"),
    ("%b = neg(%a) : frag<f32, [4]>", 14, "op neg on scalars gives a scalar, not frag<f32, [4]>"),
    # values
    ("%b = neg(%zz) : f32", 18, "use of undefined value %zz"),
    ("%a = neg(%a) : f32", 9, "value %a is defined twice"),
    ("%p = neg(%a) : f32", 9, "value %p is defined twice"),
    ("%b = neg(a) : f32", 18, "expected a value (%name), found 'a'"),
    # counts
    ("%b, %c = neg(%a) : f32", 18, "op neg names 2 results but gives 1 types"),
    ("%b, %c = neg(%a) : f32, f32", 18, "op neg has 1 results, got 2"),
    ("neg(%a)", 9, "op neg has 1 results, got 0"),
    ("%b = neg(%a, %a) : f32", 14, "op neg takes 1 operands, got 2"),
    ("%b = store(%X, %p, %a) : f32", 14, "op store has 0 results, got 1"),
    ("%b = for(%p, %p, %p) : f32", 14, "takes 1..1 regions, got 0"),
    ("%b = cmp(%a, %a) : i1", 14, "op cmp needs attribute 'pred'"),
    ("%b = neg(%a) {x = 1, x = 2} : f32", 30, "attribute 'x' given twice"),
    # LaunchExprs that read device data or kernel values (SPEC IR-3.1)
    ("%b = launch() {expr = $(load(X, 0))} : index", 33, "load(...) is not allowed in a LaunchExpr"),
    ("%b = launch() {expr = $(%a)} : index", 33, "cannot read the kernel SSA value %a"),
    ("%b = launch() {expr = $(N + %p)} : index", 37, "cannot read the kernel SSA value %p"),
    ("%b = launch() {expr = $(N * 0.5)} : index", 37, "integer/bool only"),
    ("%b = launch() {expr = $(helper(N))} : index", 33, "helper(...) is not allowed"),
    # buffers
    ("%b = alloc() {init = 0.0} : buffer<f32, [4], shared>", 54, "unknown buffer scope 'shared'"),
    ("%b = alloc() {init = 0.0} : buffer<f32, [4]>", 52, "expected ',', found '>'"),
    # lexical
    ("%b = neg(%a) {origin = \"open} : f32", 32, "unexpected character '\"'"),
    ("%b = neg(%a) ^ : f32", 22, "unexpected character '^'"),
    ("%b = neg(%a) {v = -x} : f32", 28, "expected a number after '-'"),
]


@pytest.mark.parametrize("line, col, message", BODY_CASES, ids=[c[0] for c in BODY_CASES])
def test_body_errors_are_located(line, col, message):
    err = _fails(TEMPLATE.replace("{LINE}", line))
    assert message in err.message
    assert _at(err) == (15, col)


def test_type_mismatch_between_two_defined_values():
    text = TEMPLATE.replace("{LINE}", "%g = const() {value = 1.0} : f16\n        %b = add(%a, %g) : f32")
    err = _fails(text)
    assert "type mismatch in add: operands have element types f16, f32" in err.message
    assert _at(err) == (16, 14)


def test_fragment_shape_mismatch():
    text = TEMPLATE.replace("{LINE}", "%f = const() {value = 0.0} : frag<f32, [4]>\n"
                                      "        %g = const() {value = 0.0} : frag<f32, [8]>\n"
                                      "        %b = add(%f, %g) : frag<f32, [4]>")
    err = _fails(text)
    assert "shape mismatch in add" in err.message
    assert _at(err) == (17, 14)


HEADER_CASES = [
    # (old, new, line, col, message)
    ("%X: view<f32, [N]> read", "%X: view<f32, [N]> readonly", 6, 26, "unknown access mode 'readonly'"),
    ("%X: view<f32, [N]> read", "%X: view<f32, [N]>", 7, 7, "expected an access mode"),
    ("%X: view<f32, [N]> read", "%X: frag<f32, [N]>", 6, 11, "an ABI argument is a view or a scalar"),
    ("%Y: view<f32, [N]> write", "%X: view<f32, [N]> write", 7, 7, "value %X is defined twice"),
    ("%X: view<f32, [N]> read", "%X: view<f32, [load(X, 0)]> read", 6, 22, "load(...) is not allowed"),
    ("order row_major", "order column_major", 10, 39, "unknown program order 'column_major'"),
    ("segment [ceil_div(N, BM)]", "segment [ceil_div(N, %pid)]", 10, 28, "kernel SSA value %pid"),
    ("optimization_remarks = false", "fast_math = true", 2, 56, "unknown compile option 'fast_math'"),
    ("numerics = source", "numerics = fast", 2, 23, "numerics must be one of source, relaxed_normalization"),
    ("online_reduction = true", "online_reduction = 1", 2, 50, "online_reduction is true or false"),
    ("numerics = source, online", "numerics = source, numerics = source, online", 2, 31, "given twice"),
    ("param BM: i64 = 64", "param BM: f32 = 64", 3, 13, "a physical parameter has an integer type"),
    ("param BM: i64 = 64 in [32, 64]", "param BM: i64 = 64 in [32, x]", 3, 30, "expected an integer"),
    ("kernel @k origin k", "kernel k origin k", 4, 10, "expected '@'"),
    ("body (%pid: index)", "body ()", 12, 11, "expected the program coordinate argument"),
    ("module target", "modul target", 1, 1, "expected 'module', found 'modul'"),
]


@pytest.mark.parametrize("old, new, line, col, message", HEADER_CASES, ids=[c[1] for c in HEADER_CASES])
def test_header_errors_are_located(old, new, line, col, message):
    text = TEMPLATE.replace("{LINE}", "%b = neg(%a) : f32")
    assert old in text
    err = _fails(text.replace(old, new, 1))
    assert message in err.message
    assert _at(err) == (line, col)


def test_trailing_text_after_the_module():
    err = _fails(GEMM_TEXT + "kernel\n")
    assert "after the module" in err.message
    assert _at(err) == (71, 1)


def test_deep_nesting_is_located():
    text = TEMPLATE.replace("{LINE}", "%b = launch() {expr = $(" + "(" * 3000 + "N" + ")" * 3000 + ")} : index")
    err = _fails(text)
    assert "nested too deeply" in err.message
    assert err.location.line == 15


@pytest.mark.parametrize("line, col, message", [
    ("%b = const() {value = " + "9" * 5000 + "} : i64", 31, "integer literal longer than 4000 digits"),
    ("%b = const() {value = \u0663} : i64", 31, "unexpected character"),  # a non-ASCII digit
    ("%b = const() {value = 1} : i64 \x00", 40, "unexpected character '\\x00'"),
])
def test_lexical_and_resource_limits_are_located(line, col, message):
    err = _fails(TEMPLATE.replace("{LINE}", line))
    assert message in err.message
    assert _at(err) == (15, col)


# issue 25 item 5: integer literals outside the signed 64-bit range (which crashed the optimizer's e-graph with an
# EggSmolError) are located errors at their token
INT_RANGE_CASES = [
    ("%b = const() {value = 9223372036854775808} : i64", 31, "integer literal 9223372036854775808 is outside"),
    ("%b = const() {value = -9223372036854775809} : i64", 32, "integer literal -9223372036854775809 is outside"),
    ("%b = const() {value = 18446744073709551615} : u64", 31, "integer literal 18446744073709551615 is outside"),
    ("%b = launch() {expr = $(9223372036854775808)} : index", 33, "integer literal 9223372036854775808 is outside"),
    ("%b = launch() {expr = $(N - 9223372036854775808)} : index", 37, "integer literal 9223372036854775808 is"),
    ("%b = launch() {expr = $(-9223372036854775809)} : index", 34, "integer literal -9223372036854775809 is"),
    ("%b = launch() {expr = $(dim(X, 9223372036854775808))} : index", 40, "integer literal 9223372036854775808"),
    ("%b = neg(%a) {v = [1, {w = 99999999999999999999}]} : f32", 36, "integer literal 99999999999999999999"),
]


@pytest.mark.parametrize("line, col, message", INT_RANGE_CASES, ids=[c[0] for c in INT_RANGE_CASES])
def test_integer_literals_outside_i64_are_located(line, col, message):
    err = _fails(TEMPLATE.replace("{LINE}", line))
    assert message in err.message and "signed 64-bit range" in err.message
    assert _at(err) == (15, col)


def test_integer_literals_at_the_ends_of_i64_parse():
    for line in ("%b = const() {value = -9223372036854775808} : i64",
                 "%b = const() {value = 9223372036854775807} : i64",
                 "%b = launch() {expr = $(-9223372036854775808)} : index",
                 "%b = launch() {expr = $(9223372036854775807 - N)} : index"):
        m = parse_module(TEMPLATE.replace("{LINE}", line))
        assert print_module(parse_module(print_module(m))) == print_module(m)


def test_parameter_outside_i64_is_located():
    text = TEMPLATE.replace("{LINE}", "%b = neg(%a) : f32")
    err = _fails(text.replace("param BM: i64 = 64 in [32, 64]", "param BM: i64 = 64 in [32, 64, 9223372036854775808]"))
    assert "integer literal 9223372036854775808 is outside" in err.message and _at(err) == (3, 34)
    err = _fails(text.replace("segment [ceil_div(N, BM)]", "segment [ceil_div(N, 18446744073709551616)]"))
    assert "integer literal 18446744073709551616 is outside" in err.message and _at(err) == (10, 28)


def test_deeply_nested_attributes_are_located():
    err = _fails(TEMPLATE.replace("{LINE}", "%b = const() {value = " + "[" * 3000 + "1} : i64"))
    assert "nested too deeply" in err.message and err.location.line == 15


def test_deeply_nested_regions_are_located():
    inner = "if(%c) () {\n" * 2000 + "yield()\n" + "} () {\nyield()\n}\n" * 2000
    text = TEMPLATE.replace("{LINE}", "%c = const() {value = true} : i1\n" + inner)
    err = _fails(text)
    assert "nested too deeply" in err.message and err.location.line > 15


def test_gemm_errors_name_line_and_column():
    """The acceptance cases of issue 2 on the seed GEMM itself."""
    cases = [
        ("%rm = range() : frag<index, [BM]>", "%rm = rnage() : frag<index, [BM]>", 25, 15, "unknown op 'rnage'"),
        ("%a = load(%A, %am, %ak, %av) {fill = 0.0, origin = gemm.s0.A, valid = true} : frag<f16, [BM, BK]>",
         "%a = load(%A, %am, %ak, %av) {fill = 0.0, origin = gemm.s0.A, valid = true} : frag<f16, [BM, BK]>\n"
         "          %bad = add(%a, %acc_in) : frag<f32, [BM, BK]>", 45, 18, "type mismatch in add"),
        ("%K = launch() {expr = $(K)} : index", "%K = launch() {expr = $(load(A, 0))} : index", 22, 33,
         "load(...) is not allowed in a LaunchExpr"),
    ]
    for old, new, line, col, message in cases:
        assert old in GEMM_TEXT
        err = _fails(GEMM_TEXT.replace(old, new, 1))
        assert message in err.message
        assert _at(err) == (line, col)


# ------------------------------------------------------------------------------------------------- truncation

def _eof(text: str) -> tuple[int, int]:
    tok = tokenize(text)[-1]
    return tok.line, tok.col


@pytest.mark.parametrize("text", [GEMM_TEXT, TEMPLATE.replace("{LINE}", "%b = neg(%a) : f32")], ids=["gemm", "small"])
def test_every_line_prefix_fails_at_end_of_input(text):
    lines = text.splitlines(keepends=True)
    for n in range(len(lines)):
        prefix = "".join(lines[:n])
        err = _fails(prefix)
        assert _at(err) == _eof(prefix), (n, err)
        assert "end of input" in err.message, (n, err)


def test_char_offset_prefixes_fail_with_located_errors():
    rng = random.Random(2)
    offsets = sorted(set(rng.sample(range(len(GEMM_TEXT) - 1), 400)) | {0, 1, len(GEMM_TEXT) - 2})
    n_lines = GEMM_TEXT.count("\n") + 1
    for off in offsets:
        prefix = GEMM_TEXT[:off]
        err = _fails(prefix)
        assert 1 <= err.location.line <= n_lines and err.location.col >= 1


def test_whole_text_minus_final_brace_fails():
    err = _fails(GEMM_TEXT.rstrip()[:-1])
    assert "expected '}', found 'end of input'" in err.message


# ------------------------------------------------------------------------------------------------------ fuzz

_GEMM_LINES = GEMM_TEXT.split("\n")
_LINE_OFFSETS = [0]
for _l in _GEMM_LINES:
    _LINE_OFFSETS.append(_LINE_OFFSETS[-1] + len(_l) + 1)
_TOKENS = [(_LINE_OFFSETS[t.line - 1] + t.col - 1, t.text) for t in tokenize(GEMM_TEXT)[:-1]]
_CHARS = list('{}()[]<>,:=%$@"#-+*/!?\n a0_.\\\t') + ["é", "1.5e", "inf", "-"]


def _mutate(rng: random.Random, text: str) -> str:
    """Delete / insert / duplicate a character, or delete / duplicate / replace / insert / swap a token."""
    kind = rng.randrange(8)
    if kind == 0:
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1:]
    if kind == 1:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(_CHARS) + text[i:]
    if kind == 2:
        i = rng.randrange(len(text))
        return text[:i] + text[i] + text[i:]
    off, tok = rng.choice(_TOKENS)
    if text[off:off + len(tok)] != tok:  # an earlier mutation moved it: mutate a character instead
        return _mutate(rng, text) if rng.random() < 0.5 else text[:off] + text[off + 1:]
    if kind == 3:
        return text[:off] + text[off + len(tok):]
    if kind == 4:
        return text[:off] + tok + " " + text[off:]
    _, other = rng.choice(_TOKENS)
    if kind == 5:
        return text[:off] + other + text[off + len(tok):]
    if kind == 6:
        return text[:off] + other + " " + text[off:]
    j = rng.randrange(len(text))  # move the token to a random later place
    if j <= off + len(tok):
        return text[:off] + text[off + len(tok):]
    return text[:off] + text[off + len(tok):j] + tok + text[j:]


@pytest.mark.parametrize("seed", range(8))
def test_mutation_fuzz(seed):
    """Every mutation either parses (and then prints to a fixed point) or fails with a located IntentError."""
    rng = random.Random(seed)
    failures = 0
    for _ in range(400):
        text = GEMM_TEXT
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            text = _mutate(rng, text)
        try:
            m = parse_module(text, "fuzz.gir")
        except IntentError as err:
            failures += 1
            assert isinstance(err.location, SourceLocation), (text, err)
            assert err.location.file == "fuzz.gir" and err.location.line >= 1 and err.location.col >= 1
            continue
        printed = print_module(m)
        assert print_module(parse_module(printed)) == printed
    assert failures > 200  # the fuzz really produces malformed text
