"""Syntax errors are ParseErrors located at the offending token, with a message naming what was expected."""
from __future__ import annotations

import pytest

from intent_eqsat.errors import ParseError, SourceLocation
from intent_eqsat.kir import parse

CASES = [
    # (text, line, col, message fragment)
    ("kernel k(X: f32[N], Y: out f32[N]) {\n  Y[i] = X[i] +\n}\n", 3, 1, "expected an expression, found '}'"),
    ("kernel k(X: f32[N] Y: out f32[N]) {\n}\n", 1, 20, "expected ',' or ')', found 'Y'"),
    ("kernel k(X: f32[N]) {\n  Y[i] = X[i] @ 2\n}\n", 2, 15, "unexpected character '@'"),
    ("kernel k(X: f33[N]) {\n}\n", 1, 13, "expected a dtype (f16, bf16"),
    ("kernel k(X: f32[N]) {\n  Y[i] = a < b < c\n}\n", 2, 16, "comparisons do not chain"),
    ("kernel k(X: f32[N]) {\n  Y[i] = X[i]\n", 3, 1, "expected '}' to close the kernel body, found end of input"),
    ("kernel k(X: f32[N]) {\n  let sum[i] = X[i]\n}\n", 2, 7, "expected a let name, found reserved word 'sum'"),
    ("kernel k(X: f32[N]) {\n  Y[i] := X[i]\n}\n", 2, 8, "expected an assignment operator"),
    ("kernel k(X: f32[N]) {\n  Y[i] = X[i] collide often\n}\n", 2, 23, "expected a collision kind (add, mul"),
    ("kernel k(X: f32[N]) {\n  Y[i] = cumsum(j: X[j], inclusive)\n}\n", 2, 26, "expected 'exclusive' or 'reverse'"),
    ("kernel k(X: f32[N]) {\n  Y[i] = region_fold(n by 0, combine=add) { 1 }\n}\n", 2, 27,
     "the chunk size must be a positive integer"),
    ("kernel k(X: f32[N]) {\n  Y[i] = X[i] where i > 0\n}\n", 3, 1, "expected 'else' after the condition of 'where'"),
    ("kernel k(X: f32[N]) {\n  Y[i] = 1e+\n}\n", 2, 10, "malformed exponent"),
    ("kernel k(X: f32[N]) {\n  Y[i] = 12abc\n}\n", 2, 10, "malformed number literal"),
    ("kernel k(X: f32[N]) {\n  Y[i] = 99999999999999999999\n}\n", 2, 10, "does not fit in 64 bits"),
    ("kernel k(s: out f32) {\n}\n", 1, 20, "'out' needs a view type"),
    ("combiner c(a: f32, b: f64) associative identity 0.0 { a }\n", 1, 23,
     "combiner parameters must have the same type"),
    ("combiner c(a: f32, b: f32) identity 0.0 { let x = a }\n", 1, 53, "a block ends with one result expression"),
    ("let x = 1\n", 1, 1, "expected 'kernel' or 'combiner', found 'let'"),
    ("kernel k(X: f32[N]) {\n  Y[i] = sum(k in 0: X[k])\n}\n", 2, 20, "expected '..' in a range lo..hi"),
    ("kernel k(X: f32[N]) {\n  Y[i] = reduce(k: X[k])\n}\n", 2, 24, "', combine=<combiner>' in reduce(...)"),
    ("kernel k(X: f32[N]) {\n  Y[i] = r[i].x\n}\n", 2, 15, "expected a tuple component index"),
]


@pytest.mark.parametrize("text,line,col,fragment", CASES)
def test_parse_error(text, line, col, fragment):
    with pytest.raises(ParseError) as info:
        parse(text, "bad.kir")
    assert info.value.location == SourceLocation("bad.kir", line, col), str(info.value)
    assert fragment in info.value.message


def test_deep_nesting_is_a_located_error_not_a_crash():
    text = "kernel k(Y: out f32[N]) {\n  Y[i] = " + "(" * 500 + "1" + ")" * 500 + "\n}\n"
    with pytest.raises(ParseError) as info:
        parse(text)
    assert "nested too deeply" in info.value.message
    chain = "kernel k(Y: out f32[N]) {\n  Y[i] = " + " + ".join(["1"] * 500) + "\n}\n"
    with pytest.raises(ParseError) as info:
        parse(chain)
    assert "too deeply nested" in info.value.message


def test_filename_defaults_to_string_marker():
    with pytest.raises(ParseError) as info:
        parse("kernel")
    assert str(info.value).startswith("<string>:1:7: ")
