"""Canonical text form of the shared GPU IR. ``parse_module(print_module(m)) == m`` and printing is a fixed
point (``print_module(parse_module(t)) == t`` for printed text).

Grammar (see docs/gpu_ir.md for the full description)::

    module target "sm90" {
      options {numerics = source, online_reduction = true, optimization_remarks = false}
      param BM: i64 = 64 in [32, 64, 128]
      kernel @gemm origin "gemm" {
        abi { %A: view<f16, [M, K]> read ... }
        space { segment [ceil_div(M, BM), ceil_div(N, BN)] order row_major }
        body (%pid: index) { ...ops...; yield() }
      }
    }

An op is ``%r = name(%a, %b) {attr = value} : type`` followed by its regions ``(%arg: type) { ops }``.
"""
from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np

from intent_eqsat.ir.core import AbiArg, Kernel, Module, Op, ProgramSpace, Region
from intent_eqsat.ir.launch import Const, LaunchExpr, format_launch_expr
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.ir.types import format_type

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_KEYWORDS = {"true", "false", "inf", "nan"}
INDENT = "  "


def quote(s: str) -> str:
    """A string literal the lexer reads back as ``s`` (backslash, quote and newline escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def format_attr(v: Any) -> str:
    """Attribute value text: true/false, ints, floats (repr; inf, -inf, nan), bare or quoted strings,
    ``$(LaunchExpr)``, ``[list]``, ``{dict}``. NumPy scalars print as the Python number they hold."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        if _BARE.fullmatch(v) and v not in _KEYWORDS:
            return v
        return quote(v)
    if isinstance(v, LaunchExpr):
        return f"$({format_launch_expr(v)})"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {format_attr(x)}" for k, x in sorted(v.items())) + "}"
    raise TypeError(f"unprintable attribute value {v!r}")


def _key(k: Any) -> str:
    if not isinstance(k, str):
        raise TypeError(f"attribute names are strings, not {k!r}")
    return k if _BARE.fullmatch(k) else quote(k)


def _printed_attrs(op: Op) -> dict[str, Any]:
    """Attributes minus those equal to their schema default (the parser puts defaults back)."""
    spec = SPECS.get(op.name)
    out = {}
    for k, v in sorted(op.attrs.items()):
        if spec is not None and k in spec.attrs:
            d = spec.attrs[k].default
            if d is not None and v == d and type(v) is type(d):
                continue
        out[k] = v
    return out


def format_op(op: Op, depth: int) -> list[str]:
    pad = INDENT * depth
    head = ""
    if op.results:
        head = ", ".join(f"%{r.name}" for r in op.results) + " = "
    head += f"{op.name}(" + ", ".join(f"%{v.name}" for v in op.operands) + ")"
    attrs = _printed_attrs(op)
    if attrs:
        head += " " + format_attr(attrs)
    if op.results:
        head += " : " + ", ".join(format_type(r.type) for r in op.results)
    if not op.regions:
        return [pad + head]
    lines: list[str] = []
    cur = pad + head
    for region in op.regions:
        cur += " " + _region_header(region) + " {"
        lines.append(cur)
        for inner in region.ops:
            lines.extend(format_op(inner, depth + 1))
        cur = pad + "}"
    lines.append(cur)
    return lines


def _region_header(region: Region) -> str:
    return "(" + ", ".join(f"%{a.name}: {format_type(a.type)}" for a in region.args) + ")"


def format_abi(arg: AbiArg) -> str:
    s = ("private " if arg.private else "") + f"%{arg.name}: {format_type(arg.value.type)}"
    if arg.access is not None:
        s += f" {arg.access}"
    if arg.strides is not None:
        s += " strides [" + ", ".join(format_launch_expr(x) for x in arg.strides) + "]"
    if arg.offset != Const(0):
        s += f" offset {format_launch_expr(arg.offset)}"
    if arg.alias is not None:
        s += f" alias {format_attr(str(arg.alias))}"
    if arg.producer is not None:
        s += f" = {format_launch_expr(arg.producer)}"
    return s


def format_space(space: ProgramSpace, depth: int) -> list[str]:
    pad = INDENT * depth
    lines = [pad + "space {"]
    for seg in space.segments:
        s = "segment [" + ", ".join(format_launch_expr(e) for e in seg.extents) + "]"
        s += f" order {seg.order}"
        if seg.group_size is not None:
            opts = "" if seg.group_axis == 1 and not seg.descending else f", axis {seg.group_axis}"
            s += f"({format_launch_expr(seg.group_size)}{opts}{', descending' if seg.descending else ''})"
        lines.append(pad + INDENT + s)
    if space.launch is not None:
        lines.append(pad + INDENT + f"launch {format_launch_expr(space.launch)}")
    lines.append(pad + "}")
    return lines


def format_kernel(k: Kernel, depth: int) -> list[str]:
    pad = INDENT * depth
    lines = [pad + f"kernel @{k.name} origin {format_attr(str(k.origin))} {{"]
    lines.append(pad + INDENT + "abi {")
    for a in k.abi:
        lines.append(pad + INDENT * 2 + format_abi(a))
    lines.append(pad + INDENT + "}")
    lines.extend(format_space(k.space, depth + 1))
    pid = k.body.args[-1] if k.body.args else None
    pid_s = f"%{pid.name}: {format_type(pid.type)}" if pid is not None else ""
    lines.append(pad + INDENT + f"body ({pid_s}) {{")
    for op in k.body.ops:
        lines.extend(format_op(op, depth + 2))
    lines.append(pad + INDENT + "}")
    lines.append(pad + "}")
    return lines


def print_module(m: Module) -> str:
    """The canonical text of a module (deterministic: same module, same bytes)."""
    o = m.options
    lines = [f"module target {quote(str(m.target))} {{",
             INDENT + f"options {{numerics = {o.numerics}, online_reduction = {format_attr(o.online_reduction)}, "
                      f"optimization_remarks = {format_attr(o.optimization_remarks)}"
                      + ("" if o.subscript_checks else ", subscript_checks = false")
                      + ("" if o.fp32_contract == "ieee" else f", fp32_contract = {o.fp32_contract}") + "}"]
    for p in m.params:
        cands = ", ".join(str(c) for c in p.candidates)
        lines.append(INDENT + f"param {p.name}: {p.dtype} = {p.default} in [{cands}]")
    for k in m.kernels:
        lines.extend(format_kernel(k, 1))
    lines.append("}")
    return "\n".join(lines) + "\n"
