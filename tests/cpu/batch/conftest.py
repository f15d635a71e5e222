from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from intent_eqsat.atomic import is_temp
from intent_eqsat.batch.outputs import MANIFEST

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "examples" / "corpus"
HOOKS = Path(__file__).resolve().parent / "hooks.py"
GOOD = ["gemm", "softmax", "cumsum", "histogram"]
MALFORMED = "# a statement that ends in the middle of an expression\nkernel bad(X: f32[N], Y: out f32[N]) {\n" \
            "  Y[i] = X[i] *\n}\n"


@pytest.fixture(autouse=True)
def pinned_versions(monkeypatch):
    """Others edit the package and the rulebooks while these tests run in a shared tree; the cache key's source
    fingerprint and rulebook versions would then change between two runs of one test. Pin both (the key's unit
    test checks that each of them is part of it)."""
    from intent_eqsat import pipeline

    monkeypatch.setenv("INTENT_EQSAT_TOOL_VERSION", "0.1.0+tests")
    monkeypatch.setattr(pipeline, "rulebook_versions", lambda rulebooks=None: "pinned-by-tests")


def copy_good(dst: Path, names=GOOD) -> list[Path]:
    dst.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(CORPUS / f"{n}.kir", dst / f"{n}.kir")) for n in names]


@pytest.fixture
def good_dir(tmp_path) -> Path:
    d = tmp_path / "good"
    copy_good(d)
    return d


@pytest.fixture
def mixed_dir(tmp_path, monkeypatch) -> Path:
    """Good corpus kernels, one malformed kernel, one that exceeds the time limit and one that crashes its
    worker (the last two through the fault-injection hook)."""
    d = tmp_path / "mixed"
    copy_good(d, ["gemm", "softmax", "row_sum"])
    (d / "malformed.kir").write_text(MALFORMED)
    shutil.copy(CORPUS / "cumsum.kir", d / "slow_cumsum.kir")
    shutil.copy(CORPUS / "row_max.kir", d / "crash_row_max.kir")
    monkeypatch.setenv("INTENT_EQSAT_WORKER_HOOK", f"{HOOKS}:inject")
    return d


def artifacts(out: Path) -> dict[str, bytes]:
    """Every output file except the run-specific reports, plots, cache and manifest."""
    skip = ("report.json", "report.md", MANIFEST)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name not in skip and not p.relative_to(out).parts[0] in ("plots", ".cache")}


def temps(out: Path) -> list[Path]:
    """Temporary or hidden files anywhere under ``out`` (the cache directory and the manifest are the hidden
    names the batch owns)."""
    return [p for p in out.rglob("*") if p.is_file() and p.relative_to(out).as_posix() != MANIFEST
            and (is_temp(p.name) or p.name.endswith(".tmp") or p.name.startswith("."))]
