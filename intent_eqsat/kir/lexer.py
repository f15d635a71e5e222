"""Tokenizer for ``.kir`` text.

Tokens: names (``[A-Za-z_][A-Za-z0-9_]*``), integer and float literals (a float needs a digit after its ``.`` so that
``0..N`` lexes as ``0 .. N``; exponents allowed), punctuation and operators. ``#`` starts a comment that runs to the
end of the line. Newlines are whitespace: the grammar needs no separators. Every token carries its 1-based line and
column, and every lexical error is a :class:`ParseError` located at the offending character.

A UTF-8 byte order mark at the start of the text is ignored (editors on some systems write one). Text longer than
:data:`MAX_SOURCE_CHARS` is refused before it is tokenized: a kernel file is a few kilobytes, and everything after
the lexer (the verifier, construction) works in time proportional to the text, so the limit bounds them too.

One compiled regular expression finds every token (the scanner loops in C; Python sees each token once).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from intent_eqsat.errors import ParseError, SourceLocation

# Longest first, so that "//" wins over "/" and "..", "<=" over "<".
PUNCT = ("//", "..", "<=", ">=", "==", "!=", "&&", "||", "+=", "*=",
         "(", ")", "[", "]", "{", "}", ",", ":", ".", "=", "+", "-", "*", "/", "%", "<", ">", "!")

#: the longest text :func:`tokenize` accepts, in characters (2 MiB; the largest corpus kernel is under 1 KiB, and a
#: kernel of 10,000 statements about 300 KiB)
MAX_SOURCE_CHARS = 2 * 1024 * 1024

BOM = "\ufeff"

_TOKEN = re.compile(
    r"(?P<space>[ \t\r]+)|(?P<newline>\n)|(?P<comment>\#[^\n]*)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>[0-9]+(?P<fraction>\.[0-9]+)?(?P<exponent>[eE][+-]?[0-9]+)?)"
    r"|(?P<op>" + "|".join(re.escape(p) for p in PUNCT) + r")"
    r"|(?P<other>.)",
    re.DOTALL)


class Token(NamedTuple):
    """One token: ``kind`` is ``name``, ``int``, ``float``, ``op`` or ``eof``; ``text`` is its spelling; ``line``
    and ``col`` (1-based) and ``file`` say where it is (``loc``: as a SourceLocation, made when asked for: most
    tokens never need one, and making one per token was most of the lexer's time)."""

    kind: str
    text: str
    line: int
    col: int
    file: str | None

    @property
    def loc(self) -> SourceLocation:
        return SourceLocation(self.file, self.line, self.col)


def tokenize(text: str, filename: str | None = None) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``eof`` token."""
    if len(text) > MAX_SOURCE_CHARS:
        raise ParseError(f"the input is {len(text)} characters long, more than the limit of {MAX_SOURCE_CHARS} "
                         f"(intent_eqsat.kir.lexer.MAX_SOURCE_CHARS); split it into several files",
                         SourceLocation(filename, 1, 1))
    if text.startswith(BOM):
        text = text[1:]
    tokens: list[Token] = []
    append = tokens.append
    line, line_start = 1, 0
    for mt in _TOKEN.finditer(text):
        kind = mt.lastgroup
        if kind == "space" or kind == "comment":
            continue
        start = mt.start()
        if kind == "newline":
            line, line_start = line + 1, start + 1
            continue
        if kind == "name" or kind == "op":
            append(Token(kind, mt.group(), line, start - line_start + 1, filename))
        elif kind == "number":
            end = mt.end()
            nxt = text[end] if end < len(text) else ""
            loc = SourceLocation(filename, line, start - line_start + 1)
            if nxt in ("e", "E"):
                raise ParseError("malformed exponent in number literal", loc)
            if nxt.isascii() and (nxt.isalpha() or nxt == "_"):
                raise ParseError(f"malformed number literal {text[start:end + 1]!r}", loc)
            is_float = mt.group("fraction") is not None or mt.group("exponent") is not None
            append(Token("float" if is_float else "int", mt.group(), line, start - line_start + 1, filename))
        else:
            raise ParseError(f"unexpected character {mt.group()!r}",
                             SourceLocation(filename, line, start - line_start + 1))
    tokens.append(Token("eof", "", line, len(text) - line_start + 1, filename))
    return tokens
