"""Export generated cuTile source to TileIR bytecode without a GPU (DESIGN.md: cuTile on a machine without a GPU).

:func:`export` serializes one kernel, writes the source to ``out_dir`` under a content-hash name, imports it from
that file (cuTile reads the kernel's source lines) and calls ``cuda.tile.compilation.export_kernel`` with the
module's own ``kernel_signature()`` (built from the ABI by the serializer), ``gpu_code`` from the target's
``cutile_arch`` capability and ``output_format="tileir_bytecode"``. Nothing else is executed. Frontend errors are not
caught: legal source the frontend rejects is a provider-verifier gap to fix, never a reason to fall back.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from intent_eqsat.ir.core import Module
from intent_eqsat.providers.cutile.serialize import serialize
from intent_eqsat.providers.targets import Target, get_target

#: the TileIR bytecode format version written (tileiras >= 13.3 reads it; Hopper support starts there)
BYTECODE_VERSION = "13.3"
#: the first bytes of a TileIR bytecode file (cuda.tile._bytecode.writer)
TILEIR_MAGIC = b"\x7fTileIR\x00"


def write_source(source: str, kernel_name: str, out_dir: "str | Path") -> Path:
    """Write generated source under ``<kernel>_<sha256[:16]>.py`` (idempotent); return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in kernel_name)
    path = out / f"{safe}_{digest}.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    return path


def load_source(path: "str | Path"):
    """Import a generated module from its file (named by its content hash, so reloading is a no-op)."""
    path = Path(path)
    name = f"_intent_cutile_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def export(module: Module, kernel_name: str, target: "Target | str", params: dict[str, int] | None,
           out_dir: "str | Path", *, bytecode_version: str = BYTECODE_VERSION) -> Path:
    """Serialize, write, import and export one kernel to TileIR bytecode; return the bytecode file's path
    (``<source stem>.tileirbc`` next to the source). Raises the provider verifier's Unsupported kinds."""
    tgt = get_target(target)
    source = serialize(module, kernel_name, tgt, params)
    src_path = write_source(source, kernel_name, out_dir)
    mod = load_source(src_path)
    from cuda.tile.compilation import export_kernel
    out_path = src_path.with_suffix(".tileirbc")
    export_kernel(mod.KERNEL, [mod.kernel_signature()], str(out_path), gpu_code=tgt.cutile_arch,
                  output_format="tileir_bytecode", bytecode_version=bytecode_version)
    return out_path


__all__ = ["export", "write_source", "load_source", "BYTECODE_VERSION", "TILEIR_MAGIC"]
