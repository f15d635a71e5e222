"""Tokenizer shared by the GPU IR text parser and the LaunchExpr parser.

Every token carries its 1-based line and column so that parse errors can name them (SPEC: errors say where).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from intent_eqsat.errors import ParseError, SourceLocation


@dataclass(frozen=True)
class Token:
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
  | (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>//|==|!=|<=|>=|&&|\|\||->|[()\[\]{}<>,:=+\-*/%!@$?])
    """,
    re.VERBOSE,
)


def tokenize(text: str, filename: str | None = None, line: int = 1, col: int = 1) -> list[Token]:
    """Split ``text`` into tokens; raise ParseError at the first character that starts no token."""
    tokens: list[Token] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise ParseError(f"unexpected character {text[pos]!r}", SourceLocation(filename, line, col))
        kind = m.lastgroup
        s = m.group()
        if kind == "nl":
            line += 1
            col = 1
        else:
            if kind not in ("ws", "comment"):
                tokens.append(Token(kind.upper(), s, line, col))
            col += len(s)
        pos = m.end()
    tokens.append(Token("EOF", "", line, col))
    return tokens


class TokenStream:
    """A cursor over tokens with the helpers recursive-descent parsers need."""

    def __init__(self, tokens: list[Token], filename: str | None = None):
        self.tokens = tokens
        self.pos = 0
        self.filename = filename

    def peek(self, offset: int = 0) -> Token:
        i = min(self.pos + offset, len(self.tokens) - 1)
        return self.tokens[i]

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

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            shown = tok.text if tok.kind != "EOF" else "end of input"
            raise self.error(f"expected {what}, found {shown!r}", tok)
        return self.next()
