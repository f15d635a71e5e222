"""Tokenizer for ``.kir`` text.

Tokens: names (``[A-Za-z_][A-Za-z0-9_]*``), integer and float literals (a float needs a digit after its ``.`` so that
``0..N`` lexes as ``0 .. N``; exponents allowed), punctuation and operators. ``#`` starts a comment that runs to the
end of the line. Newlines are whitespace: the grammar needs no separators. Every token carries its 1-based line and
column, and every lexical error is a :class:`ParseError` located at the offending character.
"""
from __future__ import annotations

from dataclasses import dataclass

from intent_eqsat.errors import ParseError, SourceLocation

# Longest first, so that "//" wins over "/" and "..", "<=" over "<".
PUNCT = ("//", "..", "<=", ">=", "==", "!=", "&&", "||", "+=", "*=",
         "(", ")", "[", "]", "{", "}", ",", ":", ".", "=", "+", "-", "*", "/", "%", "<", ">", "!")


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is ``name``, ``int``, ``float``, ``op`` or ``eof``; ``text`` is its spelling."""

    kind: str
    text: str
    loc: SourceLocation


def tokenize(text: str, filename: str | None = None) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``eof`` token."""
    tokens: list[Token] = []
    i, line, col, n = 0, 1, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            i, line, col = i + 1, line + 1, 1
            continue
        if c in " \t\r":
            i, col = i + 1, col + 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        loc = SourceLocation(filename, line, col)
        if c.isascii() and (c.isalpha() or c == "_"):
            j = i + 1
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            tokens.append(Token("name", text[i:j], loc))
        elif c.isascii() and c.isdigit():
            j, kind = _number_end(text, i, loc)
            tokens.append(Token(kind, text[i:j], loc))
        else:
            for p in PUNCT:
                if text.startswith(p, i):
                    tokens.append(Token("op", p, loc))
                    j = i + len(p)
                    break
            else:
                raise ParseError(f"unexpected character {c!r}", loc)
        col += j - i
        i = j
    tokens.append(Token("eof", "", SourceLocation(filename, line, col)))
    return tokens


def _number_end(text: str, i: int, loc: SourceLocation) -> tuple[int, str]:
    """Scan a numeric literal starting at ``i``; return its end and kind (``int`` or ``float``)."""
    n = len(text)
    j = i
    while j < n and text[j].isascii() and text[j].isdigit():
        j += 1
    kind = "int"
    if j + 1 < n and text[j] == "." and text[j + 1].isascii() and text[j + 1].isdigit():
        kind = "float"
        j += 1
        while j < n and text[j].isascii() and text[j].isdigit():
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and text[k].isascii() and text[k].isdigit():
            kind = "float"
            j = k
            while j < n and text[j].isascii() and text[j].isdigit():
                j += 1
        else:
            raise ParseError("malformed exponent in number literal", loc)
    if j < n and text[j].isascii() and (text[j].isalpha() or text[j] == "_"):
        raise ParseError(f"malformed number literal {text[i:j + 1]!r}", loc)
    return j, kind
