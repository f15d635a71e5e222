"""What the API's call plans and the generated Triton modules share about torch (issue 24 item 1): the torch
dtype of each IR/KIR dtype, and the ``torch.library`` schema of a kernel's launch -- views ``Tensor``, written
views ``Tensor(aN!)`` (one alias set each, so the op is marked as mutating them), by-value scalars
``bool``/``int``/``float``, nothing returned. Plain data, no torch import: the serializer prints the schema text
into the module and the API registers it at run time."""
from __future__ import annotations

import itertools
import re
from typing import Sequence

#: torch dtype attribute names (``torch.<name>``) by IR/KIR dtype
TORCH_DTYPE_NAMES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64",
                     "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
                     "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


def op_ident(name: str) -> str:
    """A name usable in an op schema or an op name (letters, digits, underscores; not starting with a digit)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return out if out and not out[0].isdigit() else "_" + out


def op_schema(params: Sequence[tuple[str, str, str]], extra: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The schema of ``params`` -- (name, kind, dtype) with kind ``in`` / ``written`` (a view) or ``scalar`` --
    followed by the ``extra`` argument declarations, and the names of the written views (``mutates_args``)."""
    parts, written, alias = [], [], (f"a{j}" for j in itertools.count())
    for name, kind, dtype in params:
        ident = op_ident(name)
        if kind == "scalar":
            t = "bool" if dtype == "i1" else "float" if dtype in ("f16", "bf16", "f32", "f64") else "int"
        elif kind == "written":
            t = f"Tensor({next(alias)}!)"
            written.append(ident)
        else:
            t = "Tensor"
        parts.append(f"{t} {ident}")
    return "(" + ", ".join(parts + list(extra)) + ") -> ()", written


__all__ = ["TORCH_DTYPE_NAMES", "op_ident", "op_schema"]
