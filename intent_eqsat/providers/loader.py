"""Loading generated provider source (issue 5, item 5).

Generated modules are written to an output directory as ``<kernel>_<sha256[:16]>.py`` (content-addressed; the write
is atomic: a temporary file in the same directory, then ``os.replace``) and imported from there with importlib,
because ``@triton.jit`` reads real source lines. Importing runs only the module's top level: imports, constant and
function definitions. Nothing else is executed here.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

_LOCK = threading.Lock()
_LOADED: dict[str, ModuleType] = {}


def source_name(kernel_name: str, source: str) -> str:
    """``<kernel>_<first 16 hex digits of sha256(source)>`` (a valid module name)."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    base = re.sub(r"[^A-Za-z0-9_]", "_", kernel_name) or "kernel"
    if base[0].isdigit():
        base = "_" + base
    return f"{base}_{digest}"


def write_source(source: str, out_dir: "str | os.PathLike[str]", kernel_name: str) -> Path:
    """Write ``source`` to ``out_dir/<kernel>_<hash>.py`` atomically (no-op when the same content is there)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{source_name(kernel_name, source)}.py"
    data = source.encode("utf-8")
    if path.exists() and path.read_bytes() == data:
        return path
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=out)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_source(source: str, out_dir: "str | os.PathLike[str]", kernel_name: str) -> ModuleType:
    """Write (if needed) and import a generated module; the same content is imported once per process."""
    path = write_source(source, out_dir, kernel_name)
    return load_path(path)


def load_path(path: "str | os.PathLike[str]") -> ModuleType:
    """Import a generated module file (cached by resolved path)."""
    path = Path(path).resolve()
    # a module decorated under TRITON_INTERPRET=1 holds interpreted functions: keep the two modes apart
    mode = "interp" if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") else "jit"
    key = f"{path}|{mode}"
    with _LOCK:
        mod = _LOADED.get(key)
        if mod is not None:
            return mod
        name = f"intent_eqsat_generated.{mode}.{path.stem}"
        if name in sys.modules:
            # the same content imported from another folder: its own name, or it would replace the first
            # module in sys.modules, which torch.compile's guards read a function's globals through
            name += "_" + hashlib.sha256(str(path.parent).encode("utf-8")).hexdigest()[:8]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import generated module {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _LOADED[key] = mod
        return mod


__all__ = ["source_name", "write_source", "load_source", "load_path"]
