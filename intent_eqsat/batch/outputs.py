"""Where a batch writes: safe output names, the check that a path stays inside the output folder, and the manifest
of what the batch wrote.

**Names.** An input's artifact folder is named after its file stem and its files after its kernels; both come from
outside and can be anything a file system holds (``..`` from ``...kir``, ``report.json``, 250 characters, spaces,
bytes that are not UTF-8). :func:`unique_names` gives each a portable name: ASCII letters, digits, ``_ . -``, not
starting with a dot or a dash, at most :data:`MAX_NAME` characters, never one of the batch's own names
(:data:`RESERVED`), unique ignoring case. A name that is already all that is kept as it is (``gemm`` stays
``gemm``); any other gets ``-<8 hex digits of a sha256>`` (of the original, or on a clash of the caller's identity
for it: an input's path), so names are deterministic and two originals never share one (``..`` -> ``file-<hash>``,
``report.json`` -> ``report.json-<hash>``).

**Containment.** :meth:`Manifest.check_inside` refuses (:class:`OutputError`) a path whose folder resolves outside
the output folder (a link in it that points elsewhere); the runner checks every artifact before writing it.

**The manifest** ``OUT/.batch-manifest.jsonl`` records, for each (artifact folder, provider), the file names the
batch wrote there: one JSON line ``{"dir": ..., "provider": ..., "files": [...]}`` per record, a later line for
the same key replacing an earlier one. It is rewritten whole when a batch starts and ends, and a line is appended
before and after each job's files are written, so a batch killed at any point has recorded every file it may have
written. Stale-output cleanup removes only recorded files, inside the output folder, never anything matched by a
pattern: a file the batch did not write (a hand-made ``notes.triton.py``, a file outside ``OUT``) is never
removed. Lines that do not parse or name a path outside the folder are ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from intent_eqsat.atomic import write_atomic
from intent_eqsat.errors import IntentError

MANIFEST = ".batch-manifest.jsonl"
#: names in the output folder that belong to the batch itself (compared ignoring case)
RESERVED = ("report.json", "report.md", "plots", ".cache", MANIFEST)
#: the longest output name (a folder, or a file name before ``.<provider>.py``): far below NAME_MAX (255 bytes),
#: with room for the provider suffix and write_atomic's temporary ``.<name>.<random>.tmp``
MAX_NAME = 100
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


class OutputError(IntentError):
    """An artifact that cannot be written inside the output folder: its path would leave it, or the write failed."""


def _digest(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _suffixed(base: str, ident: str) -> str:
    return f"{base[:MAX_NAME - 9]}-{_digest(ident)}"


def safe_name(raw: str, fallback: str = "file") -> str:
    """``raw`` when it already is a safe name (see the module docstring), else a safe name derived from it."""
    base = "".join(c if c in _SAFE else "_" for c in raw).lstrip(".-")
    if base == raw and len(raw) <= MAX_NAME:
        return raw
    return _suffixed(base or fallback, raw)


def unique_names(items: Sequence[tuple[str, str]], reserved: Iterable[str] = (), fallback: str = "file") -> list[str]:
    """Safe names for ``(original, identity)`` pairs, in order: unique ignoring case and not ``reserved``. Names
    that would clash all get ``-<hash of their identity>`` (e.g. two inputs with one stem: the hash of each path)."""
    first = [safe_name(raw, fallback) for raw, _ in items]
    count = Counter(n.casefold() for n in first)
    taken = {r.casefold() for r in reserved}
    out: list[str] = []
    for (_raw, ident), n in zip(items, first):
        name = n if count[n.casefold()] == 1 and n.casefold() not in taken else _suffixed(n, ident)
        i = 0
        while name.casefold() in taken:
            i += 1
            name = _suffixed(n, f"{ident}\0{i}")
        taken.add(name.casefold())
        out.append(name)
    return out


def display_path(path: str) -> str:
    """``path`` as jobs and reports show it: bytes that are not UTF-8 as ``\\xff``, control characters escaped (so
    every report and terminal can print it); any other path unchanged."""
    if path.isprintable():
        return path
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def is_plain(name: object) -> bool:
    """A single path component: not empty, ``.`` or ``..``, no separator."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
            and (os.altsep is None or os.altsep not in name))


def inside(out: Path, path: Path) -> bool:
    """Whether ``path``'s folder resolves (links followed) to the folder ``out`` or below it."""
    root = os.path.realpath(out)
    folder = os.path.realpath(path.parent)
    return folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)


class Manifest:
    """What the batch wrote in ``out``: (folder, provider) -> file names (see the module docstring)."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.path = self.out / MANIFEST
        self.root = os.path.realpath(self.out)
        if self.path.is_symlink():      # the batch's own name: appends must not follow a link out of the folder
            self.path.unlink()
        self.files: dict[tuple[str, str], list[str]] = self._read()
        self._rewrite()

    def _read(self) -> dict[tuple[str, str], list[str]]:
        files: dict[tuple[str, str], list[str]] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return files
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:          # the half line of a killed write, or anything else
                continue
            if not isinstance(rec, dict):
                continue
            d, provider, names = rec.get("dir"), rec.get("provider"), rec.get("files")
            if not (is_plain(d) and isinstance(provider, str) and isinstance(names, list)
                    and all(is_plain(n) for n in names)):
                continue
            if names:
                files[(d, provider)] = sorted(set(names))
            else:
                files.pop((d, provider), None)
        return files

    def _line(self, key: tuple[str, str], names: Sequence[str]) -> str:
        return json.dumps({"dir": key[0], "provider": key[1], "files": list(names)}, ensure_ascii=True) + "\n"

    def _rewrite(self) -> None:
        if not self.files and not self.path.exists():
            return
        write_atomic(self.path, "".join(self._line(k, v) for k, v in sorted(self.files.items())))

    def owned(self, d: str, provider: str) -> list[str]:
        return list(self.files.get((d, provider), []))

    def record(self, d: str, provider: str, names: Iterable[str]) -> None:
        """Set the files of (``d``, ``provider``) and append the record (before a write: what may be written)."""
        key = (d, provider)
        names = sorted(set(names))
        if names == self.files.get(key, []):
            return
        if names:
            self.files[key] = names
        else:
            self.files.pop(key, None)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(self._line(key, names))

    def inside(self, path: Path) -> bool:
        return inside(self.out, path)

    def check_inside(self, path: Path) -> None:
        if not self.inside(path):
            raise OutputError(f"refusing to write {path}: its folder resolves to {os.path.realpath(path.parent)}, "
                              f"outside the output folder {self.root}")

    def remove(self, d: str, names: Iterable[str]) -> list[str]:
        """Remove recorded files of folder ``d`` (only inside the output folder; a link itself, never its target)
        and the folder when that empties it; returns the names that could not be removed."""
        folder = self.out / d
        left: list[str] = []
        removed = False
        for name in sorted(set(names)):
            p = folder / name
            if not self.inside(p):
                continue                # not something this batch could have written
            try:
                if p.is_symlink() or p.is_file():
                    p.unlink()
                    removed = True
            except OSError:
                left.append(name)
        if removed and not folder.is_symlink():
            try:
                folder.rmdir()          # only when empty
            except OSError:
                pass
        return left

    def close(self) -> None:
        self._rewrite()


__all__ = ["MANIFEST", "RESERVED", "MAX_NAME", "OutputError", "safe_name", "unique_names", "display_path",
           "is_plain", "inside", "Manifest"]
