"""Atomic file output: a file either has its old content or its complete new content, never a part.

Every file the batch runner, the cache and the CLI write goes through :func:`write_atomic`: the bytes go to a
temporary file in the same directory (``.<name>.<random>.tmp``), are flushed and fsynced, and the temporary file is
renamed over the target with ``os.replace`` (atomic on POSIX within one file system). On any failure, including
KeyboardInterrupt, the temporary file is removed. :func:`remove_stale_temps` clears temporaries a killed process
(SIGKILL, power loss) could leave behind; the runner calls it before and after a batch.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{6,}\.tmp$")


def write_atomic(path: "str | os.PathLike[str]", data: "bytes | str", *, skip_same: bool = True) -> bool:
    """Write ``data`` to ``path`` atomically; returns False when the file already held exactly these bytes."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if skip_same:
        try:
            if path.stat().st_size == len(raw) and path.read_bytes() == raw:
                return False
        except OSError:
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def is_temp(name: str) -> bool:
    """True for a name :func:`write_atomic` (or providers.loader) uses for its temporary files."""
    return bool(_TEMP.match(name))


def remove_stale_temps(root: "str | os.PathLike[str]") -> list[Path]:
    """Remove leftover temporaries under ``root`` (recursively); return what was removed."""
    removed: list[Path] = []
    root = Path(root)
    if not root.is_dir():
        return removed
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if is_temp(name):
                p = Path(dirpath) / name
                try:
                    p.unlink()
                    removed.append(p)
                except OSError:
                    pass
    return removed


__all__ = ["write_atomic", "is_temp", "remove_stale_temps"]
