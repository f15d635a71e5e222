"""Tokenizer shared by the GPU IR text parser and the LaunchExpr parser.

Every token carries its 1-based line and column so that parse errors can name them (SPEC: errors say where).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from intent_eqsat.errors import ParseError, SourceLocation


class Token(NamedTuple):
    """One token (a NamedTuple: cheap to build, immutable)."""

    kind: str  # IDENT, VALUE, INT, FLOAT, STRING, PUNCT, EOF
    text: str
    line: int
    col: int


_PUNCT = ("//", "==", "!=", "<=", ">=", "&&", "||", "->", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=",
          "+", "-", "*", "/", "%", "!", "@", "$", "?")

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>\#[^\n]*)
  | (?P<value>%[A-Za-z0-9_.]+)
  | (?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<int>[0-9]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>//|==|!=|<=|>=|&&|\|\||->|[()\[\]{}<>,:=+\-*/%!@$?])
  | (?P<bad>[\s\S])
    """,
    re.VERBOSE,
)
_SKIP = ("ws", "comment")
#: longer integer literals are rejected here (Python's int() refuses > 4300 digits with a bare ValueError)
MAX_INT_DIGITS = 4000
#: every integer literal of the IR is a signed 64-bit integer (``index`` arithmetic and the optimizer's e-graph,
#: egglog ``i64``, hold no more; ``dtypes.I64_MIN``/``I64_MAX``)
INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1


def tokenize(text: str, filename: str | None = None, line: int = 1, col: int = 1) -> list[Token]:
    """Split ``text`` into tokens; raise ParseError at the first character that starts no token.

    ``line``/``col`` give the position of ``text[0]`` (for text embedded in a larger input)."""
    tokens: list[Token] = []
    line_start = 1 - col  # offset whose column is 1 on the current line
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind == "bad":
            raise ParseError(f"unexpected character {m.group()!r}",
                             SourceLocation(filename, line, m.start() - line_start + 1))
        elif kind not in _SKIP:
            if kind == "int" and m.end() - m.start() > MAX_INT_DIGITS:
                raise ParseError(f"integer literal longer than {MAX_INT_DIGITS} digits",
                                 SourceLocation(filename, line, m.start() - line_start + 1))
            tokens.append(Token(kind.upper(), m.group(), line, m.start() - line_start + 1))
    tokens.append(Token("EOF", "", line, len(text) - line_start + 1))
    return tokens


class TokenStream:
    """A cursor over tokens with the helpers recursive-descent parsers need."""

    def __init__(self, tokens: list[Token], filename: str | None = None):
        self.tokens = tokens
        self.pos = 0
        self.filename = filename
        self._last = len(tokens) - 1

    def peek(self, offset: int = 0) -> Token:
        i = self.pos + offset
        return self.tokens[i if i < self._last else self._last]

    def next(self) -> Token:
        tok = self.peek()
        if tok.kind != "EOF":
            self.pos += 1
        return tok

    def loc(self, tok: Token | None = None) -> SourceLocation:
        tok = tok or self.peek()
        return SourceLocation(self.filename, tok.line, tok.col)

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        return ParseError(message, self.loc(tok))

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.kind in ("PUNCT", "IDENT") and tok.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str) -> Token:
        tok = self.peek()
        if not self.at(text):
            shown = tok.text if tok.kind != "EOF" else "end of input"
            raise self.error(f"expected {text!r}, found {shown!r}", tok)
        return self.next()

    def int_value(self, tok: Token, negative: bool = False) -> int:
        """The value of the INT token ``tok`` (negated when ``negative``); outside the signed 64-bit range it is a
        ParseError at the token."""
        v = -int(tok.text) if negative else int(tok.text)
        if not INT_MIN <= v <= INT_MAX:
            raise self.error(f"integer literal {v} is outside the signed 64-bit range [-2**63, 2**63 - 1] (the "
                             f"range of index arithmetic and of the optimizer's e-graph)", tok)
        return v

    def expect_int(self, what: str, negative: bool = False) -> int:
        """Consume an INT token and return its value (see :meth:`int_value`)."""
        return self.int_value(self.expect_kind("INT", what), negative)

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            shown = tok.text if tok.kind != "EOF" else "end of input"
            raise self.error(f"expected {what}, found {shown!r}", tok)
        return self.next()
