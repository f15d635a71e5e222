"""Shared helpers for the KIR tests: the corpus location and loaders, the located-error assertion, and a
deterministic measure of work (imported by the test modules, and by the construction tests)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from intent_eqsat.errors import KirError, SourceLocation
from intent_eqsat.kir import KirModule, parse, verify

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.kir"))


def load(stem: str) -> KirModule:
    path = CORPUS / f"{stem}.kir"
    return parse(path.read_text(), str(path))


def rejects(text: str, line: int, col: int, *fragments: str) -> KirError:
    """The KIR verifier refuses ``text`` with a KirError at ``bad.kir:line:col`` whose message has ``fragments``."""
    with pytest.raises(KirError) as info:
        verify(parse(text, "bad.kir"))
    err = info.value
    assert err.location == SourceLocation("bad.kir", line, col), str(err)
    for f in fragments:
        assert f in err.message, err.message
    assert str(err).startswith(f"bad.kir:{line}:{col}: ")
    return err


def line_events(fn, *path_suffixes: str) -> int:
    """How many lines of the files ending in ``path_suffixes`` ``fn()`` executes (a deterministic measure of
    work: tests compare it across input sizes instead of timing anything)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename.endswith(path_suffixes) else None)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count
