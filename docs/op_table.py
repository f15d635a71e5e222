"""Print the op table of docs/gpu_ir.md from intent_eqsat.ir.spec.SPECS (``python docs/op_table.py``)."""
from __future__ import annotations

from intent_eqsat.ir.spec import BINARY_OPS, SPECS, UNARY_OPS


def _count(lo_hi: tuple[int, int | None]) -> str:
    lo, hi = lo_hi
    if lo == hi:
        return str(lo)
    return f"{lo}..{hi}" if hi is not None else f"{lo}+"


def _attrs(spec) -> str:
    out = []
    for name, a in spec.attrs.items():
        kind = " / ".join(a.choices) if a.choices else a.kind
        s = f"`{name}`{'*' if a.required else ''}: {kind}"
        if a.default is not None:
            d = a.default
            s += " = " + ("[]" if d == () else str(d).lower() if isinstance(d, bool) else str(d))
        out.append(s)
    return "; ".join(out)


def table() -> str:
    lines = ["| op | category | operands | results | regions | effect | attributes (`*` = required) |",
             "|---|---|---|---|---|---|---|"]
    for name, spec in SPECS.items():
        if name in UNARY_OPS[1:] or name in BINARY_OPS[1:]:
            continue  # one row for each elementwise family
        if name == UNARY_OPS[0]:
            shown = "unary: " + ", ".join(f"`{u}`" for u in UNARY_OPS)
        elif name == BINARY_OPS[0]:
            shown = "binary: " + ", ".join(f"`{b}`" for b in BINARY_OPS)
        else:
            shown = f"`{name}`"
        lines.append(f"| {shown} | {spec.category} | {_count(spec.operands)} | {_count(spec.results)} | "
                     f"{_count(spec.regions)} | {spec.effect} | {_attrs(spec)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
