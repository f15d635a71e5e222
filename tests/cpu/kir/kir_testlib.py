"""Shared helpers for the KIR tests: the corpus location and loaders (imported by the test modules)."""
from __future__ import annotations

from pathlib import Path

from intent_eqsat.kir import KirModule, parse

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.kir"))


def load(stem: str) -> KirModule:
    path = CORPUS / f"{stem}.kir"
    return parse(path.read_text(), str(path))
