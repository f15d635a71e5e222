"""Deterministic cuTile source for one verified kernel (SPEC TGT-5, TGT-8, PASS-3.7).

:func:`serialize` runs the provider verifier (:func:`.legalize.legalize`) and prints the program mechanically, in IR
order: one Python statement group per op, spelled as :mod:`.spellings` says, with a trailing ``# <KIR id>`` comment
on every op that has an origin. It prints only what the program holds: fragment shapes come from the IR types with
the bound parameters, coordinates/validity/fill from the access operands, loops/guards/carries from the control ops,
the grid from the program space. The surface decisions it needs (tile-space vs element accesses, the native vs the
flattened grid, contraction layouts) were recorded by the legalizer, which proved them on the same program.

The generated module holds:

* ``@ct.kernel def <kernel>(<ABI args>, <params>: ct.Constant[int])`` -- the kernel;
* ``KERNEL``, ``KERNEL_NAME``, ``PARAMS`` (the bound Config), ``GRID_FORM``, ``MAX_GRID``, ``GPU_CODE``;
* ``kernel_signature()`` -- the ``cuda.tile.compilation.KernelSignature`` built from the ABI (array dtype/rank,
  int64 indexing, non-negative strides, declared constant strides, alias classes shared by two or more views) and the
  bound parameters, for ``export_kernel``;
* ``grid(<public args>)`` -- the program space's LaunchExpr grid evaluated on the arguments' shapes;
* ``launch(stream, <public args>)`` -- checks ranks, shape-symbol consistency and declared strides, computes private
  scalars from their producers, allocates workspaces, and calls ``ct.launch`` (nothing for an empty grid).

Two serializations of the same program, target and parameters are byte-identical.
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Any, Sequence

import numpy as np

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import Module, Op, Region, Specialization, Value
from intent_eqsat.ir.launch import (BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet,
                                    format_launch_expr, total)
from intent_eqsat.ir.spec import access_layout
from intent_eqsat.ir.types import FragmentType, Type
from intent_eqsat.providers.cutile.legalize import (MAX_EXPANSION_NUMEL, MAX_TILE_ELEMENTS, ORDERS, SCOPES,
                                                    AccessPlan, IndexTerm, KernelPlan, legalize)
from intent_eqsat.providers.errors import LAUNCH_ERROR_SOURCE, SharedLegalityUnsupported
from intent_eqsat.providers.launch_checks import OVERLAP_CHECK_SOURCE, overlap_check_call
from intent_eqsat.providers.targets import Target

CT_DTYPES = {"i1": "ct.bool_", "i8": "ct.int8", "i16": "ct.int16", "i32": "ct.int32", "i64": "ct.int64",
             "index": "ct.int64", "u8": "ct.uint8", "u16": "ct.uint16", "u32": "ct.uint32", "u64": "ct.uint64",
             "f16": "ct.float16", "bf16": "ct.bfloat16", "f32": "ct.float32", "f64": "ct.float64"}
TORCH_DTYPES = {"i1": "torch.bool", "i8": "torch.int8", "i16": "torch.int16", "i32": "torch.int32",
                "i64": "torch.int64", "index": "torch.int64", "u8": "torch.uint8", "u16": "torch.uint16",
                "u32": "torch.uint32", "u64": "torch.uint64", "f16": "torch.float16", "bf16": "torch.bfloat16",
                "f32": "torch.float32", "f64": "torch.float64"}
#: unary ops with a cuTile function, and the keyword flags that function takes
_UNARY_FN = {"exp": ("ct.exp", ("approx",)), "exp2": ("ct.exp2", ("ftz",)), "log": ("ct.log", ()),
             "log2": ("ct.log2", ()), "sqrt": ("ct.sqrt", ("approx", "ftz")), "rsqrt": ("ct.rsqrt", ("ftz",)),
             "sin": ("ct.sin", ()), "cos": ("ct.cos", ()), "tanh": ("ct.tanh", ("approx",))}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_BITWISE = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
_RESERVED = set(keyword.kwlist) | {"ct", "math", "range", "min", "max", "float", "int", "bool", "tuple", "len",
                                   "print", "stream", "torch", "grid", "launch", "kernel_signature", "KERNEL",
                                   "KERNEL_NAME", "PARAMS", "GRID_FORM", "MAX_GRID", "GPU_CODE", "ABI", "True",
                                   "False", "None", "RuntimeError", "ValueError", "HardwareCapabilityUnsupported"}


def serialize(module: Module, kernel_name: str, target: "Target | str", params: dict[str, int] | None = None, *,
              max_tile_elements: int = MAX_TILE_ELEMENTS, max_expansion: int = MAX_EXPANSION_NUMEL,
              specializations: "Sequence[Specialization]" = (), launch_resources: Any = None) -> str:
    """cuTile Python source for one kernel (kernel, export signature, grid and launch wrapper), or one of the four
    :class:`~intent_eqsat.providers.errors.Unsupported` kinds from the provider verifier.

    ``launch_resources`` (the kernel's :class:`~intent_eqsat.providers.launch_resources.LaunchResources`) is
    accepted and not printed: cuTile's compiler chooses threads and pipelining itself, and its index arithmetic
    is its own.

    ``specializations`` (SPEC IR-2, ``kir.specialize``): kernels of KIR specializations of this one, each legalized
    with its own parameters and printed in the same module under its own names (``_D64_KERNEL``,
    ``_D64_kernel_signature()``, ``_D64_grid()``, ``_launch_D64()``); ``launch()`` hands the launch to the one
    whose symbol values the arguments' shapes give."""
    printers = []
    for mod, name, prm, spec in [(module, kernel_name, params, None)] + [(s.module, s.kernel, s.params, s)
                                                                         for s in specializations]:
        plan = legalize(mod, name, target, prm, max_tile_elements=max_tile_elements, max_expansion=max_expansion)
        printers.append(_Printer(plan, spec))
    return printers[0].module_source(printers[1:])


def _sanitize(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return s if s and not s[0].isdigit() else "_" + s


def tup(items: Sequence[str]) -> str:
    """A Python tuple display: ``(a,)``, ``(a, b)``, ``()``."""
    items = list(items)
    return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def float_literal(x: float) -> str:
    if math.isnan(x):
        return "math.nan"
    if math.isinf(x):
        return "math.inf" if x > 0 else "-math.inf"
    return repr(float(x))


def literal(value: Any, dtype: str) -> str:
    """A Python literal for ``value`` converted to ``dtype`` the way the interpreter converts attributes (floats are
    rounded to the dtype here, so cuTile's conversion of the literal is exact)."""
    if dtype == "i1":
        return "True" if bool(value) else "False"
    if dtypes.is_int(dtype):
        return str(int(value))
    from intent_eqsat.ir.interpret import _number   # the interpreter's exact attribute conversion
    return float_literal(float(np.float64(_number(value, dtype, "literal"))))


class _Printer:
    def __init__(self, plan: KernelPlan, spec: "Specialization | None" = None):
        self.p = plan
        self.k = plan.kernel
        # a specialized kernel's module-level names carry its values (``_D64_KERNEL``, ``_launch_D64``) so that it
        # sits in the general kernel's module; the general kernel's names are the module's public ones
        self.spec = spec
        tag = "_".join(f"{_sanitize(s).strip('_')}{v}" for s, v in spec.values) if spec is not None else ""
        self.ns = f"_{tag}_" if spec is not None else ""
        self.launch_name = f"_launch_{tag}" if spec is not None else "launch"
        self.lines: list[str] = []
        self.depth = 0
        self.used: set[str] = set(_RESERVED)
        self.names: dict[str, str] = {}
        self.alias: dict[str, str] = {}
        self.types: dict[str, Type] = {}
        self._assign_names()

    # -- names ---------------------------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = _sanitize(hint)
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def _assign_names(self) -> None:
        k = self.k
        self.kname = self.fresh(k.name if _sanitize(k.name) not in _RESERVED else k.name + "_kernel")
        self.param_names = {}
        for p in self.p.module.params:
            nm = _sanitize(p.name)
            self.param_names[p.name] = self.fresh(nm if nm == p.name else "p_" + nm)
        for a in k.abi:
            nm = _sanitize(a.name)
            ident = nm if nm == a.name and not nm.startswith(("v_", "_")) else "arg_" + nm
            self.names[a.name] = self.fresh(ident)
            self.types[a.name] = a.value.type
        self.sym_names = {s: self.fresh("s_" + s) for s in self.p.shape_binding}

        def visit(region: Region) -> None:
            for a in region.args:
                self.names.setdefault(a.name, self.fresh("v_" + a.name))
                self.types[a.name] = a.type
            for op in region.ops:
                for r in op.results:
                    self.names.setdefault(r.name, self.fresh("v_" + r.name))
                    self.types[r.name] = r.type
                for reg in op.regions:
                    visit(reg)
        visit(k.body)

    def v(self, value: Value | str) -> str:
        name = value if isinstance(value, str) else value.name
        return self.alias.get(name) or self.names[name]

    # -- emission ------------------------------------------------------------------------------------------------
    def emit(self, line: str, op: Op | None = None) -> None:
        origin = op.origin if op is not None else None
        self.lines.append("    " * self.depth + line + (f"  # {origin}" if origin else ""))

    def shape(self, t: Type) -> tuple[int, ...]:
        return self.p.static_shape(t)

    def dt(self, value: Value) -> str:
        return value.type.dtype

    # -- LaunchExprs ---------------------------------------------------------------------------------------------
    def kle(self, e: LaunchExpr) -> str:
        """A LaunchExpr inside the kernel (int64 arithmetic, floor division, ct.cdiv)."""
        if isinstance(e, Const):
            return ("True" if e.value else "False") if isinstance(e.value, bool) else str(e.value)
        if isinstance(e, Sym):
            if e.name in self.p.params:
                return self.param_names[e.name]
            if e.name in self.p.scalars:
                dt = self.types[e.name].dtype
                ident = self.names[e.name]
                return ident if dt in ("i64", "index", "i1") else f"ct.int64({ident})"
            view, axis = self.p.shape_binding[e.name]
            if e.name in self.p.shape_products:         # the launcher checked divisibility: an exact quotient
                others = self.p.shape_products[e.name][2]
                known = " * ".join(self.kle(f) for f in others)
                return f"({self.names[view]}.shape[{axis}] // ({known}))"
            return f"{self.names[view]}.shape[{axis}]"
        if isinstance(e, Dim):
            return f"{self.names[e.view]}.shape[{e.axis}]"
        if isinstance(e, Stride):
            return f"{self.names[e.view]}.strides[{e.axis}]"
        if isinstance(e, Not):
            return f"(~{self.kle(e.operand)})"
        if isinstance(e, Select):
            return f"ct.where({self.kle(e.cond)}, {self.kle(e.if_true)}, {self.kle(e.if_false)})"
        if isinstance(e, TupleGet) and isinstance(e.tuple_expr, Tuple):
            return self.kle(e.tuple_expr.items[e.index])
        if isinstance(e, BinOp):
            a, b = self.kle(e.lhs), self.kle(e.rhs)
            if e.op == "ceil_div":
                return f"ct.cdiv({a}, {b})"
            if e.op in ("min", "max"):
                return f"{e.op}({a}, {b})"
            op = {"&&": "&", "||": "|"}.get(e.op, e.op)
            return f"({a} {op} {b})"
        raise SharedLegalityUnsupported(f"LaunchExpr {e} has no kernel form")

    def hle(self, e: LaunchExpr) -> str:
        """A LaunchExpr in the host launcher (Python integers; shape symbols are launcher locals)."""
        if isinstance(e, Const):
            return ("True" if e.value else "False") if isinstance(e.value, bool) else str(e.value)
        if isinstance(e, Sym):
            if e.name in self.p.params:
                return str(self.p.params[e.name])
            if e.name in self.p.scalars:
                return f"int({self.names[e.name]})"
            return self.sym_names[e.name]
        if isinstance(e, Dim):
            return f"{self.names[e.view]}.shape[{e.axis}]"
        if isinstance(e, Stride):
            return f"{self.names[e.view]}.stride({e.axis})"
        if isinstance(e, Not):
            return f"(not {self.hle(e.operand)})"
        if isinstance(e, Select):
            return f"({self.hle(e.if_true)} if {self.hle(e.cond)} else {self.hle(e.if_false)})"
        if isinstance(e, Tuple):
            return tup([self.hle(i) for i in e.items])
        if isinstance(e, TupleGet):
            return f"{self.hle(e.tuple_expr)}[{e.index}]"
        if isinstance(e, BinOp):
            a, b = self.hle(e.lhs), self.hle(e.rhs)
            if e.op == "ceil_div":
                return f"_cdiv({a}, {b})"
            if e.op in ("min", "max"):
                return f"{e.op}({a}, {b})"
            op = {"&&": "and", "||": "or"}.get(e.op, e.op)
            return f"({a} {op} {b})"
        raise SharedLegalityUnsupported(f"LaunchExpr {e} has no host form")

    # -- module --------------------------------------------------------------------------------------------------
    def module_source(self, specialized: "Sequence[_Printer]" = ()) -> str:
        p, k = self.p, self.k
        head = [
            "# Generated by intent_eqsat's cuTile serializer (SPEC TGT-5, TGT-8). Do not edit.",
            f"# kernel {k.name} (KIR origin {k.origin}) of module target {p.module.target!r}; hardware target "
            f"{p.target.name} ({p.target.cutile_arch})",
            f"# compile options: {p.module.options.key()}",
            "# physical parameters: " + (", ".join(f"{n}={v}" for n, v in p.params.items()) or "none"),
            f"# grid: {p.grid.form} -- {p.grid.reason}",
        ]
        for sp in specialized:
            head.append(f"# KIR specialization {sp.spec.label} (SPEC IR-2): kernel {sp.k.name}, physical parameters: "
                        + (", ".join(f"{n}={v}" for n, v in sp.p.params.items()) or "none")
                        + f", grid {sp.p.grid.form}; launch() hands it the launches with those values")
        head += [
            "import math",
            "",
            "import cuda.tile as ct",
            "",
        ]
        for pr in (self, *specialized):
            head += pr.constants()
        head += ["", "", *LAUNCH_ERROR_SOURCE, "", ""]
        out = list(head)
        for pr in (self, *specialized):
            pr.kernel_source()
            out += pr.lines + ["", "", f"{pr.ns}KERNEL = {pr.kname}", "", ""]
        for pr in (self, *specialized):
            out += pr.signature_source() + ["", ""]
        out += ["def _cdiv(a, b):", "    return -((-a) // b)", "", ""]
        out += [*OVERLAP_CHECK_SOURCE.rstrip("\n").split("\n"), "", ""]
        for sp in specialized:
            out += sp.launcher_source() + ["", ""]
        out += self.launcher_source(specialized)
        return "\n".join(out) + "\n"

    def constants(self) -> list[str]:
        p, k, ns = self.p, self.k, self.ns
        out = [
            f"{ns}KERNEL_NAME = {k.name!r}",
            f"{ns}PARAMS = {{" + ", ".join(f"{n!r}: {v}" for n, v in p.params.items()) + "}",
            f"{ns}GPU_CODE = {p.target.cutile_arch!r}",
            f"{ns}GRID_FORM = {p.grid.form!r}",
            f"{ns}MAX_GRID = {tuple(p.target.max_grid)!r}",
        ]
        if self.spec is not None:
            out.append(f"{ns}VALUES = {{" + ", ".join(f"{s!r}: {v}" for s, v in self.spec.values)
                       + "}  # the KIR specialization")
        return out

    # -- kernel ---------------------------------------------------------------------------------------------------
    def kernel_source(self) -> None:
        k = self.k
        args = [self.names[a.name] for a in k.abi]
        args += [f"{self.param_names[pd.name]}: ct.Constant[int]" for pd in self.p.module.params]
        self.emit("@ct.kernel")
        self.emit(f"def {self.kname}({', '.join(args)}):")
        self.depth = 1
        g = self.p.grid
        pid = k.pid
        uses = self._pid_uses()
        if g.form == "native":
            if uses:
                ext = g.extents
                expr = "ct.astype(ct.bid(0), ct.int64)"
                for i in range(1, len(ext)):
                    expr = f"({expr} * {self.kle(ext[i])} + ct.astype(ct.bid({i}), ct.int64))"
                self.emit(f"{self.v(pid)} = {expr}  # linear program coordinate (row-major over the grid)")
        else:
            self.emit(f"{self.v(pid)} = ct.astype(ct.bid(0), ct.int64)  # linear program coordinate")
        start = len(self.lines)
        self.region_ops(k.body)
        if all(ln.strip().startswith("#") for ln in self.lines[start:]):
            self.emit("pass")
        self.depth = 0

    def _pid_uses(self) -> bool:
        """Whether the linear coordinate is used other than by natively launched execution groups."""
        pid = self.k.pid.name
        g = self.p.grid

        def visit(region: Region) -> bool:
            for op in region.ops:
                for i, o in enumerate(op.operands):
                    if o.name == pid and not (op.name == "execution_group" and g.form == "native"
                                              and int(op.attrs["segment"]) == g.segment):
                        return True
                if any(visit(r) for r in op.regions):
                    return True
            return False
        return visit(self.k.body)

    def region_ops(self, region: Region) -> list[Value]:
        """Print a region's ops (not its yield); return the yielded values."""
        for op in region.ops:
            if op.name == "yield":
                return list(op.operands)
            handler = getattr(self, "op_" + op.name, None)
            if handler is None:
                self.generic(op)
            else:
                handler(op)
        return []

    def body_block(self, region: Region, assign: Sequence[str] = ()) -> None:
        """Print a nested block: the region's ops, then assign its yields to ``assign`` (parallel-safe)."""
        start = len(self.lines)
        ys = self.region_ops(region)
        self.assign(assign, [self.v(y) for y in ys[:len(assign)]])
        if len(self.lines) == start:
            self.emit("pass")

    def assign(self, targets: Sequence[str], sources: Sequence[str]) -> None:
        pairs = [(t, s) for t, s in zip(targets, sources) if t != s]
        if any(s in targets for _, s in pairs):
            temps = [self.fresh("_t") for _ in pairs]
            for tmp, (_, s) in zip(temps, pairs):
                self.emit(f"{tmp} = {s}")
            for tmp, (t, _) in zip(temps, pairs):
                self.emit(f"{t} = {tmp}")
        else:
            for t, s in pairs:
                self.emit(f"{t} = {s}")

    def generic(self, op: Op) -> None:
        from intent_eqsat.ir.spec import SPECS
        cat = SPECS[op.name].category
        if cat == "unary":
            self.unary(op)
        elif cat == "binary":
            self.binary(op)
        else:   # the legalizer guarantees every op has a printer; reaching here is a serializer bug
            raise SharedLegalityUnsupported(f"no printer for op {op.name}")

    # -- values ---------------------------------------------------------------------------------------------------
    def op_const(self, op: Op) -> None:
        t = op.result.type
        lit = literal(op.attrs["value"], t.dtype)
        if isinstance(t, FragmentType):
            self.emit(f"{self.v(op.result)} = ct.full({self.shape(t)!r}, {lit}, {CT_DTYPES[t.dtype]})", op)
        else:
            self.emit(f"{self.v(op.result)} = {CT_DTYPES[t.dtype]}({lit})", op)

    def op_launch(self, op: Op) -> None:
        t = op.result.type
        e = self.kle(op.attrs["expr"])
        if isinstance(t, FragmentType):
            self.emit(f"{self.v(op.result)} = ct.full({self.shape(t)!r}, {e}, {CT_DTYPES[t.dtype]})", op)
        else:
            self.emit(f"{self.v(op.result)} = {CT_DTYPES[t.dtype]}({e})", op)

    def op_range(self, op: Op) -> None:
        t = op.result.type
        start = int(op.attrs.get("start", 0))
        extra = f", start={start}" if start else ""
        self.emit(f"{self.v(op.result)} = ct.arange({self.shape(t)[0]}, dtype={CT_DTYPES[t.dtype]}{extra})", op)

    @staticmethod
    def _flags(op: Op, allowed: Sequence[str], dt: str) -> str:
        if dt != "f32":
            return ""
        out = ""
        if "approx" in allowed and op.attrs.get("approximate"):
            out += ", rounding_mode=ct.RoundingMode.APPROX"
        if "ftz" in allowed and op.attrs.get("flush_to_zero"):
            out += ", flush_to_zero=True"
        return out

    def _in_f32(self, dt: str, x: str) -> tuple[str, str]:
        """(operand spelled in the computation dtype, computation dtype): f16/bf16 are computed in f32."""
        return (f"ct.astype({x}, ct.float32)", "f32") if dt in ("f16", "bf16") else (x, dt)

    def _out(self, dt: str, cdt: str, expr: str) -> str:
        return f"ct.astype({expr}, {CT_DTYPES[dt]})" if dt != cdt else expr

    def unary(self, op: Op) -> None:
        x = self.v(op.operands[0])
        dt = self.dt(op.operands[0])
        res = self.v(op.result)
        name = op.name
        if name == "neg":
            expr = f"-{x}"
        elif name == "not":
            expr = f"~{x}"
        elif name == "abs":
            expr = x if dt in dtypes.UNSIGNED_DTYPES else f"ct.abs({x})"
        elif name in ("floor", "ceil"):
            expr = f"ct.{name}({x})" if dtypes.is_float(dt) else x
        else:
            xc, cdt = self._in_f32(dt, x)
            if name in _UNARY_FN:
                fn, allowed = _UNARY_FN[name]
                inner = f"{fn}({xc}{self._flags(op, allowed, cdt)})"
            elif name == "sigmoid":
                inner = f"ct.truediv(1.0, 1.0 + ct.exp(-{xc}))"
            elif name == "recip":
                inner = f"ct.truediv(1.0, {xc}{self._flags(op, ('approx', 'ftz'), cdt)})"
            else:   # erf, log1p and expm1 are rejected by the legalizer
                raise SharedLegalityUnsupported(f"no cuTile spelling for {name}")
            expr = self._out(dt, cdt, inner)
        self.emit(f"{res} = {expr}", op)

    def binary(self, op: Op) -> None:
        a, b = self.v(op.operands[0]), self.v(op.operands[1])
        dt = self.dt(op.operands[0])
        res = self.v(op.result)
        name = op.name
        isf = dtypes.is_float(dt)
        if name in ("add", "sub", "mul"):
            fl = self._flags(op, ("ftz",), dt)
            expr = f"ct.{name}({a}, {b}{fl})" if fl else f"{a} {'+-*'[('add', 'sub', 'mul').index(name)]} {b}"
        elif name == "div" and isf:
            ac, cdt = self._in_f32(dt, a)
            bc, _ = self._in_f32(dt, b)
            expr = self._out(dt, cdt, f"ct.truediv({ac}, {bc}{self._flags(op, ('approx', 'ftz'), cdt)})")
        elif name == "div":
            if dt in dtypes.UNSIGNED_DTYPES:
                expr = f"{a} // {b}"
            else:
                expr = f"ct.where((({a} % {b}) != 0) & (({a} < 0) != ({b} < 0)), ({a} // {b}) + 1, {a} // {b})"
        elif name == "rem":
            if dt in dtypes.UNSIGNED_DTYPES:
                expr = f"{a} % {b}"
            else:
                r = self.fresh(res + "_pymod")
                self.emit(f"{r} = {a} % {b}", op)
                expr = f"ct.where(({r} != 0) & (({r} < 0) != ({a} < 0)), {r} - {b}, {r})"
        elif name == "mod":
            expr = f"{a} % {b}"
        elif name == "floordiv":
            expr = f"{a} // {b}"
        elif name in ("max", "min"):
            fn = "ct.maximum" if name == "max" else "ct.minimum"
            if dt == "i1":
                expr = f"{a} | {b}" if name == "max" else f"{a} & {b}"
            elif isf:
                expr = f"{fn}({a}, {b}, propagate_nan=True{self._flags(op, ('ftz',), dt)})"
            else:
                expr = f"{fn}({a}, {b})"
        elif name == "pow":
            ac, cdt = self._in_f32(dt, a)
            bc, _ = self._in_f32(dt, b)
            expr = self._out(dt, cdt, f"{ac} ** {bc}")
        else:
            expr = f"{a} {_BITWISE[name]} {b}"
        self.emit(f"{res} = {expr}", op)

    def op_cmp(self, op: Op) -> None:
        a, b = (self.v(o) for o in op.operands)
        self.emit(f"{self.v(op.result)} = {a} {_CMP[op.attrs['pred']]} {b}", op)

    def op_select(self, op: Op) -> None:
        c, a, b = (self.v(o) for o in op.operands)
        self.emit(f"{self.v(op.result)} = ct.where({c}, {a}, {b})", op)

    def op_cast(self, op: Op) -> None:
        x = self.v(op.operands[0])
        src, dst = self.dt(op.operands[0]), op.result.type.dtype
        res = self.v(op.result)
        if src == dst or (src in ("i64", "index") and dst in ("i64", "index")):
            self.emit(f"{res} = {x}", op)
            return
        if dst == "i1":
            zero = "0.0" if dtypes.is_float(src) else "0"
            self.emit(f"{res} = {x} != {zero}", op)
            return
        if dtypes.is_float(src) and dtypes.is_int(dst):
            # truncation toward zero with PTX cvt.rzi saturation: NaN -> 0, out of range -> the nearest bound
            bits = dtypes.BITS[dst]
            signed = dst not in dtypes.UNSIGNED_DTYPES
            hi = float(2 ** (bits - 1)) if signed else float(2 ** bits)
            lo = -float(2 ** (bits - 1)) if signed else 0.0
            info = np.iinfo(dtypes.to_numpy(dst))
            xf, _ = self._in_f32(src, x)
            t = self.fresh(res + "_f")
            self.emit(f"{t} = {xf}", op)
            self.emit(f"{res} = ct.astype(ct.where(ct.isnan({t}) | ({t} >= {hi!r}) | ({t} <= {lo!r}), 0.0, {t}), "
                      f"{CT_DTYPES[dst]})")
            self.emit(f"{res} = ct.where({t} >= {hi!r}, {int(info.max)}, ct.where({t} <= {lo!r}, {int(info.min)}, "
                      f"{res}))")
            return
        self.emit(f"{res} = ct.astype({x}, {CT_DTYPES[dst]})", op)

    def op_bitcast(self, op: Op) -> None:
        self.emit(f"{self.v(op.result)} = ct.bitcast({self.v(op.operands[0])}, "
                  f"{CT_DTYPES[op.result.type.dtype]})", op)

    # -- shape ---------------------------------------------------------------------------------------------------
    def broadcast_expr(self, x: str, xt: Type, shape: tuple[int, ...], dims: Sequence[int]) -> str:
        xs = self.shape(xt)
        if not isinstance(xt, FragmentType):
            return f"ct.broadcast_to({x}, {shape!r})" if shape else x
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        if order != list(range(len(dims))):
            x = f"ct.permute({x}, {tuple(order)!r})"
        full = [1] * len(shape)
        for i in order:
            full[dims[i]] = xs[i]
        if len(xs) != len(shape):
            x = f"ct.reshape({x}, {tuple(full)!r})"
        if tuple(full) != shape:
            x = f"ct.broadcast_to({x}, {shape!r})"
        return x

    def op_broadcast(self, op: Op) -> None:
        src = op.operands[0]
        expr = self.broadcast_expr(self.v(src), src.type, self.shape(op.result.type), tuple(op.attrs["dims"]))
        self.emit(f"{self.v(op.result)} = {expr}", op)

    def op_reshape(self, op: Op) -> None:
        self.emit(f"{self.v(op.result)} = ct.reshape({self.v(op.operands[0])}, {self.shape(op.result.type)!r})", op)

    def op_transpose(self, op: Op) -> None:
        self.emit(f"{self.v(op.result)} = ct.permute({self.v(op.operands[0])}, "
                  f"{tuple(int(i) for i in op.attrs['perm'])!r})", op)

    def op_join(self, op: Op) -> None:
        s = self.shape(op.operands[0].type)
        a, b = (self.v(o) for o in op.operands)
        ns = s + (1,)
        self.emit(f"{self.v(op.result)} = ct.cat((ct.reshape({a}, {ns!r}), ct.reshape({b}, {ns!r})), {len(s)})", op)

    def op_extract(self, op: Op) -> None:
        idx = tuple(int(i) for i in op.attrs["index"])
        one = (1,) * len(idx)
        self.emit(f"{self.v(op.result)} = ct.reshape(ct.extract({self.v(op.operands[0])}, {idx!r}, {one!r}), ())",
                  op)

    def op_tuple(self, op: Op) -> None:
        self.emit(f"{self.v(op.result)} = {tup([self.v(o) for o in op.operands])}", op)

    op_record = op_tuple

    def op_get(self, op: Op) -> None:
        self.emit(f"{self.v(op.result)} = {self.v(op.operands[0])}[{int(op.attrs['index'])}]", op)

    def op_field(self, op: Op) -> None:
        fields = self.p.records[op.operands[0].name]
        self.emit(f"{self.v(op.result)} = {self.v(op.operands[0])}[{fields.index(op.attrs['name'])}]", op)

    # -- accesses ------------------------------------------------------------------------------------------------
    def _parts(self, op: Op) -> tuple[list[Value], list[Value], Value | None]:
        valid = bool(op.attrs.get("valid", False))
        n_coords, n_payload = access_layout(op.name, len(op.operands), valid)
        return (list(op.operands[1:1 + n_coords]), list(op.operands[1 + n_coords:1 + n_coords + n_payload]),
                op.operands[-1] if valid else None)

    def _index(self, term: IndexTerm) -> str:
        if term.kind == "const":
            return str(term.const)
        if term.kind == "div":
            return f"{self.v(term.value)} // {term.divisor}"
        return self.v(term.value)

    def _tile_load(self, plan: AccessPlan, resource: str, dtype: str, extra: str = "") -> str:
        tf = plan.tile
        idx = tup([self._index(t) for t in tf.index])
        pad = f", padding_mode=ct.PaddingMode.{tf.padding}" if tf.padding else ""
        expr = f"ct.load({resource}, index={idx}, shape={tf.shape!r}{pad}{extra})"
        dropped = tuple(s for s, k in zip(tf.shape, tf.frag_axes) if k is not None)
        if dropped != tf.shape:
            expr = f"ct.reshape({expr}, {dropped!r})"
        if tf.perm is not None:
            expr = f"ct.permute({expr}, {tf.perm!r})"
        return expr

    def _tile_store(self, plan: AccessPlan, resource: str, value: Value, extra: str = "") -> str:
        tf = plan.tile
        x = self.v(value)
        vs = self.shape(value.type)
        if vs != plan.shape:
            x = f"ct.broadcast_to({x}, {plan.shape!r})"
        if tf.perm is not None:
            inv = tuple(sorted(range(len(tf.perm)), key=lambda i: tf.perm[i]))
            x = f"ct.permute({x}, {inv!r})"
        dropped = tuple(s for s, k in zip(tf.shape, tf.frag_axes) if k is not None)
        if dropped != tf.shape:
            x = f"ct.reshape({x}, {tf.shape!r})"
        idx = tup([self._index(t) for t in tf.index])
        return f"ct.store({resource}, index={idx}, tile={x}{extra})"

    def _coords(self, plan: AccessPlan, coords: list[Value], others: Sequence[Value] = (),
                invalid_to: Value | None = None) -> str:
        """The element-index tuple; the first coordinate is broadcast when nothing else reaches the access shape,
        and (atomics) moved to -1 on invalid members so cuTile's bounds check skips them."""
        names = [self.v(c) for c in coords]
        shapes = [self.shape(c.type) for c in list(coords) + list(others)]
        try:
            reach = tuple(int(x) for x in np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            reach = ()
        if names and reach != plan.shape:
            names[0] = f"ct.broadcast_to({names[0]}, {plan.shape!r})"
        if invalid_to is not None and names:
            names[0] = f"ct.where({self.v(invalid_to)}, {names[0]}, -1)"
        return tup(names)

    def _load(self, op: Op, plan: AccessPlan, resource: str, extra: str = "") -> None:
        res = op.result
        if plan.form == "tile":
            self.emit(f"{self.v(res)} = {self._tile_load(plan, resource, res.type.dtype, extra)}", op)
            return
        coords, _, valid = self._parts(op)
        self.emit(f"# %{res.name}: element form ({plan.reason})")
        idx = self._coords(plan, coords, [valid] if valid is not None else [])
        mask = ""
        if valid is not None:
            mask = f", mask={self.v(valid)}, padding_value={literal(op.attrs['fill'], res.type.dtype)}"
        self.emit(f"{self.v(res)} = ct.gather({resource}, {idx}{mask})", op)

    def _store(self, op: Op, plan: AccessPlan, resource: str) -> None:
        coords, payload, valid = self._parts(op)
        value = payload[0]
        if plan.form == "tile":
            self.emit(self._tile_store(plan, resource, value), op)
            return
        self.emit(f"# %{value.name} -> {resource}: element form ({plan.reason})")
        idx = self._coords(plan, coords, [value] + ([valid] if valid is not None else []))
        mask = f", mask={self.v(valid)}" if valid is not None else ""
        self.emit(f"ct.scatter({resource}, {idx}, {self.v(value)}{mask})", op)

    def op_load(self, op: Op) -> None:
        plan = self.p.accesses[id(op)]
        self._load(op, plan, self.v(op.operands[0]))

    op_gather = op_load

    def op_store(self, op: Op) -> None:
        plan = self.p.accesses[id(op)]
        self._store(op, plan, self.v(op.operands[0]))

    op_scatter = op_store

    @staticmethod
    def _mem(order: str, domain: str) -> str:
        return f"memory_order=ct.MemoryOrder.{ORDERS[order]}, memory_scope=ct.MemoryScope.{SCOPES[domain]}"

    def _atomic(self, op: Op, fn: str, payload_names: list[str], order: str, domain: str) -> None:
        plan = self.p.accesses[id(op)]
        coords, payload, valid = self._parts(op)
        view = self.v(op.operands[0])
        idx = self._coords(plan, coords, list(payload) + ([valid] if valid is not None else []), invalid_to=valid)
        call = f"ct.{fn}({view}, {idx}, {', '.join(payload_names)}, {self._mem(order, domain)})"
        if not op.results:
            self.emit(call, op)
            return
        res = self.v(op.result)
        if valid is None:
            self.emit(f"{res} = {call}", op)
        else:
            raw = self.fresh(res + "_old")
            self.emit(f"{raw} = {call}", op)
            self.emit(f"{res} = ct.where({self.v(valid)}, {raw}, 0)")

    def op_scatter_reduce(self, op: Op) -> None:
        _, payload, _ = self._parts(op)
        self._atomic(op, f"atomic_{op.attrs['combine']}", [self.v(payload[0])], "relaxed", "device")

    def op_atomic_rmw(self, op: Op) -> None:
        _, payload, _ = self._parts(op)
        self._atomic(op, f"atomic_{op.attrs['kind']}", [self.v(payload[0])], op.attrs["order"], op.attrs["domain"])

    def op_atomic_cas(self, op: Op) -> None:
        _, payload, _ = self._parts(op)
        self._atomic(op, "atomic_cas", [self.v(x) for x in payload], op.attrs["order"], op.attrs["domain"])

    def op_atomic_store(self, op: Op) -> None:
        _, payload, _ = self._parts(op)
        self._atomic(op, "atomic_xchg", [self.v(payload[0])], op.attrs["order"], op.attrs["domain"])

    def op_atomic_load(self, op: Op) -> None:
        plan = self.p.accesses[id(op)]
        self._load(op, plan, self.v(op.operands[0]), ", " + self._mem(op.attrs["order"], op.attrs["domain"]))

    def op_alloc(self, op: Op) -> None:
        t = op.result.type
        if t.scope == "workspace":
            self.alias[op.result.name] = self.names[str(op.attrs["arg"])]
            self.emit(f"# %{op.result.name}: workspace buffer = private view {self.names[str(op.attrs['arg'])]}", op)
            return
        init = op.attrs["init"]
        note = ""
        if init == "first_write":
            init, note = 0, "  # first_write: every member is written before it is read"
        self.emit(f"{self.v(op.result)} = ct.full({self.shape(t)!r}, {literal(init, t.dtype)}, "
                  f"{CT_DTYPES[t.dtype]}){note}", op)

    def _onehot(self, coords: list[Value], shape: tuple[int, ...]) -> str:
        terms = []
        for i, c in enumerate(coords):
            r = f"ct.arange({shape[i]}, dtype=ct.int64)"
            if len(shape) > 1:
                full = tuple(shape[i] if j == i else 1 for j in range(len(shape)))
                r = f"ct.reshape({r}, {full!r})"
            terms.append(f"({r} == {self.v(c)})")
        return " & ".join(terms)

    def op_buffer_load(self, op: Op) -> None:
        form = self.p.buffer_access[id(op)]
        buf = op.operands[0]
        if form == "workspace":
            self._load(op, self.p.accesses[id(op)], self.v(buf))
            return
        coords, _, valid = self._parts(op)
        res = op.result
        fill = literal(op.attrs["fill"], res.type.dtype) if valid is not None else None
        if form == "identity":
            expr = self.v(buf) if valid is None else f"ct.where({self.v(valid)}, {self.v(buf)}, {fill})"
        else:
            # TileIR's extract takes i32 indices (tileiras rejects i64); the buffer is a tile, so they fit
            idx = [f"ct.astype({self.v(c) if valid is None else f'ct.where({self.v(valid)}, {self.v(c)}, 0)'}, "
                   f"ct.int32)" for c in coords]
            one = (1,) * len(coords)
            expr = f"ct.reshape(ct.extract({self.v(buf)}, {tup(idx)}, {one!r}), ())"
            if valid is not None:
                expr = f"ct.where({self.v(valid)}, {expr}, {fill})"
            if isinstance(res.type, FragmentType):
                expr = f"ct.broadcast_to({expr}, {self.shape(res.type)!r})"
        self.emit(f"{self.v(res)} = {expr}", op)

    def op_buffer_store(self, op: Op) -> None:
        form = self.p.buffer_access[id(op)]
        buf = op.operands[0]
        if form == "workspace":
            self._store(op, self.p.accesses[id(op)], self.v(buf))
            return
        coords, payload, valid = self._parts(op)
        bshape = self.shape(buf.type)
        x = self.v(payload[0])
        if form == "identity":
            if self.shape(payload[0].type) != bshape:
                x = f"ct.broadcast_to({x}, {bshape!r})"
            expr = x if valid is None else f"ct.where({self.v(valid)}, {x}, {self.v(buf)})"
        else:
            hot = self._onehot(coords, bshape)
            if valid is not None:
                hot = f"({hot}) & {self.v(valid)}"
            expr = f"ct.where({hot}, {x}, {self.v(buf)})"
        self.emit(f"{self.v(buf)} = {expr}", op)

    # -- structured ----------------------------------------------------------------------------------------------
    def _combiner_fn(self, op: Op, region: Region, hint: str) -> str:
        """A nested combiner function printed from a region (args = the region's args, returns its yields)."""
        fn = self.fresh(hint)
        self.emit(f"def {fn}({', '.join(self.v(a) for a in region.args)}):")
        self.depth += 1
        ys = self.region_ops(region)
        self.emit("return " + (self.v(ys[0]) if len(ys) == 1 else tup([self.v(y) for y in ys])))
        self.depth -= 1
        return fn

    def _bin_lambda(self, comb: str, dt: str) -> str:
        if comb in ("max", "min") and dtypes.is_float(dt):
            return f"lambda a, b: ct.{'maximum' if comb == 'max' else 'minimum'}(a, b, propagate_nan=True)"
        if comb in ("max", "min"):
            return f"lambda a, b: ct.{'maximum' if comb == 'max' else 'minimum'}(a, b)"
        sym = {"add": "+", "mul": "*", "and": "&", "or": "|", "xor": "^"}[comb]
        return f"lambda a, b: a {sym} b"

    def op_reduce(self, op: Op) -> None:
        comb = op.attrs["combine"]
        axes = tuple(int(a) for a in op.attrs["axes"])
        ids = op.attrs["identity"]
        if comb == "region":
            fn = self._combiner_fn(op, op.regions[0], "_combine_" + self.v(op.results[0]))
            xs = [self.v(x) for x in op.operands]
            dts = [x.type.dtype for x in op.operands]
            idl = [literal(i, d) for i, d in zip(ids, dts)]
            cur = xs
            for ax in sorted(axes, reverse=True):
                if len(cur) == 1:
                    cur = [f"ct.reduce({cur[0]}, {ax}, {fn}, {idl[0]})"]
                else:
                    tmp = [self.fresh(self.v(r) + "_part") for r in op.results]
                    self.emit(f"{', '.join(tmp)} = ct.reduce({tup(cur)}, {ax}, {fn}, {tup(idl)})", op)
                    cur = tmp
            if len(op.results) == 1:
                self.emit(f"{self.v(op.result)} = {cur[0]}", op)
            else:
                self.assign([self.v(r) for r in op.results], cur)
            return
        x = op.operands[0]
        dt = x.type.dtype
        xs = self.v(x)
        ax = axes[0] if len(axes) == 1 else axes
        res = self.v(op.result)
        if comb in ("add", "mul"):
            fn = "ct.sum" if comb == "add" else "ct.prod"
            if dtypes.is_float(dt):
                xc, cdt = self._in_f32(dt, xs)
                expr = self._out(dt, cdt, f"{fn}({xc}, axis={ax!r})")
            else:
                expr = f"ct.astype({fn}({xs}, axis={ax!r}), {CT_DTYPES[dt]})"
        elif comb in ("max", "min") and dt != "i1":
            nan = ", propagate_nan=True" if dtypes.is_float(dt) else ""
            expr = f"ct.{comb}({xs}, axis={ax!r}{nan})"
        else:
            c = {"max": "or", "min": "and"}.get(comb, comb) if dt == "i1" else comb
            expr = xs
            for a in sorted(axes, reverse=True):
                expr = f"ct.reduce({expr}, {a}, {self._bin_lambda(c, dt)}, {literal(ids[0], dt)})"
        self.emit(f"{res} = {expr}", op)

    def op_scan(self, op: Op) -> None:
        comb = op.attrs["combine"]
        axis = int(op.attrs["axis"])
        rev = bool(op.attrs.get("reverse", False))
        x = op.operands[0]
        dt = x.type.dtype
        shape = self.shape(x.type)
        res = self.v(op.result)
        xs = self.v(x)
        # working dtype: float add/mul in f32 (f64 stays), i1 as int32 0/1
        if dt == "i1":
            comb = {"max": "or", "min": "and"}.get(comb, comb)
            xw, wdt = f"ct.astype({xs}, ct.int32)", "i32"
        elif comb in ("add", "mul") and dtypes.is_float(dt):
            xw, wdt = self._in_f32(dt, xs)
        else:
            xw, wdt = xs, dt
        ident = literal(op.attrs["identity"][0], wdt)
        rv = ", reverse=True" if rev else ""
        if not op.attrs.get("exclusive", False):
            if comb in ("add", "mul"):
                expr = f"ct.{'cumsum' if comb == 'add' else 'cumprod'}({xw}, {axis}{rv})"
            else:
                expr = f"ct.scan({xw}, {axis}, {self._bin_lambda(comb, wdt)}, {ident}{rv})"
        else:
            n = shape[axis]
            full = tuple(n if i == axis else 1 for i in range(len(shape)))
            key = f"ct.arange({n}, dtype=ct.int32)"
            if rev:
                key = f"({n - 1} - {key})"
            if len(shape) > 1:
                key = f"ct.broadcast_to(ct.reshape({key}, {full!r}), {shape!r})"
            base = res + "_x"
            kn, en, fn = self.fresh(base + "key"), self.fresh(base + "id"), self.fresh("_xscan_" + res)
            self.emit(f"{kn} = {key}  # scan-order position", op)
            self.emit(f"{en} = ct.full({shape!r}, {ident}, {CT_DTYPES[wdt]})")
            comb_expr = {"add": "{a} + {b}", "mul": "{a} * {b}", "and": "{a} & {b}", "or": "{a} | {b}",
                         "xor": "{a} ^ {b}"}.get(comb)
            if comb_expr is None:
                fnm = "ct.maximum" if comb == "max" else "ct.minimum"
                nan = ", propagate_nan=True" if dtypes.is_float(wdt) else ""
                comb_expr = fnm + "({a}, {b}" + nan + ")"
            # exclusive prefix = combination of every member but the last in scan order; the combiner is
            # commutative (the later member is the one with the larger position), so ct.scan's operand order is moot
            self.emit(f"def {fn}(p1, x1, k1, p2, x2, k2):")
            self.emit(f"    late = k2 > k1")
            inner = comb_expr.format(a=comb_expr.format(a="p1", b="p2"), b="ct.where(late, x1, x2)")
            self.emit(f"    return {inner}, ct.where(late, x2, x1), ct.where(late, k2, k1)")
            expr = f"ct.scan(({en}, {xw}, {kn}), {axis}, {fn}, ({ident}, {ident}, -1){rv})[0]"
        if dt == "i1":
            expr = f"({expr}) != 0"
        elif wdt != dt:
            expr = f"ct.astype({expr}, {CT_DTYPES[dt]})"
        self.emit(f"{res} = {expr}", op)

    def op_argreduce(self, op: Op) -> None:
        x = op.operands[0]
        dt = x.type.dtype
        axis = int(op.attrs["axis"])
        kind = op.attrs["kind"]
        nan = op.attrs.get("nan", "propagate")
        vres, ires = op.results
        idt = ires.type.dtype
        shape = self.shape(x.type)
        n = shape[axis]
        better = ">" if kind == "max" else "<"
        fn = self.fresh("_arg_" + self.v(vres))
        self.emit(f"def {fn}(av, ai, bv, bi):", op)
        self.emit(f"    plain = (av {better} bv) | ((av == bv) & (ai < bi))")
        if dtypes.is_float(dt):
            self.emit("    an = ct.isnan(av)")
            self.emit("    bn = ct.isnan(bv)")
            if nan == "propagate":
                self.emit("    pick = ct.where(an | bn, an & (~bn | (ai < bi)), plain)")
                vid = "-math.inf" if kind == "max" else "math.inf"
            else:
                self.emit("    pick = ct.where(an | bn, ~an | (bn & (ai < bi)), plain)")
                vid = "math.nan"
        else:
            self.emit("    pick = plain")
            if dt == "i1":
                vid = "False" if kind == "max" else "True"
            else:
                info = np.iinfo(dtypes.to_numpy(dt))
                vid = str(int(info.min if kind == "max" else info.max))
        self.emit("    return ct.where(pick, av, bv), ct.where(pick, ai, bi)")
        full = tuple(n if i == axis else 1 for i in range(len(shape)))
        idx = f"ct.arange({n}, dtype={CT_DTYPES[idt]})"
        if len(shape) > 1:
            idx = f"ct.broadcast_to(ct.reshape({idx}, {full!r}), {shape!r})"
        imax = int(np.iinfo(dtypes.to_numpy(idt)).max)
        self.emit(f"{self.v(vres)}, {self.v(ires)} = ct.reduce(({self.v(x)}, {idx}), {axis}, {fn}, ({vid}, {imax}))",
                  op)

    def op_contract(self, op: Op) -> None:
        plan = self.p.contracts[id(op)]
        lhs, rhs, acc = op.operands
        res = self.v(op.result)
        bt, mt, kt, nt = plan.sizes
        bshape = (bt,) if plan.batch else ()
        work = CT_DTYPES[plan.work]

        def arrange(v: Value, perm: tuple[int, ...], want: tuple[int, ...]) -> str:
            x = self.v(v)
            if perm != tuple(range(len(perm))):
                x = f"ct.permute({x}, {perm!r})"
            if tuple(self.shape(v.type)[i] for i in perm) != want:
                x = f"ct.reshape({x}, {want!r})"
            return x
        a = arrange(lhs, plan.lhs_perm, bshape + (mt, kt))
        b = arrange(rhs, plan.rhs_perm, bshape + (kt, nt))
        c = self.v(acc)
        ashape = self.shape(acc.type)
        if acc.type.dtype != plan.work:
            c = f"ct.astype({c}, {work})"
        if ashape != bshape + (mt, nt):
            c = f"ct.reshape({c}, {bshape + (mt, nt)!r})"
        if plan.form == "mma":
            feed = "ct.tfloat32" if plan.feed == "tf32" else CT_DTYPES[plan.feed]
            if plan.feed == "tf32" or lhs.type.dtype != plan.feed:
                a = f"ct.astype({a}, {feed})"
            if plan.feed == "tf32" or rhs.type.dtype != plan.feed:
                b = f"ct.astype({b}, {feed})"
            expr = f"ct.mma({a}, {b}, {c})"
        else:
            a4 = f"ct.reshape(ct.astype({a}, {work}), {bshape + (mt, kt, 1)!r})"
            b4 = f"ct.reshape(ct.astype({b}, {work}), {bshape + (1, kt, nt)!r})"
            expr = f"{c} + ct.sum({a4} * {b4}, axis={len(bshape) + 1})"
        if ashape != bshape + (mt, nt):
            expr = f"ct.reshape({expr}, {ashape!r})"
        if op.result.type.dtype != plan.work:
            expr = f"ct.astype({expr}, {CT_DTYPES[op.result.type.dtype]})"
        self.emit(f"{res} = {expr}", op)

    def op_histogram(self, op: Op) -> None:
        x = op.operands[0]
        valid = op.operands[1] if op.attrs.get("valid") else None
        xs = self.shape(x.type)
        n = math.prod(xs)
        bins = self.shape(op.result.type)[0]
        vals = f"ct.reshape(ct.astype({self.v(x)}, ct.int64), (1, {n}))"
        hit = f"({vals} == ct.reshape(ct.arange({bins}, dtype=ct.int64), ({bins}, 1)))"
        if valid is not None:
            m = self.v(valid)
            if self.shape(valid.type) != xs:
                m = f"ct.broadcast_to({m}, {xs!r})"
            hit = f"({hit} & ct.reshape({m}, (1, {n})))"
        self.emit(f"{self.v(op.result)} = ct.astype(ct.sum(ct.astype({hit}, ct.int32), axis=1), "
                  f"{CT_DTYPES[op.result.type.dtype]})", op)

    def _loop_header(self, iv: str, op: Op) -> None:
        lb, ub, step = (self.v(o) for o in op.operands[:3])
        self.emit(f"for {iv} in range({lb}, {ub}, {step}):", op)

    def op_region_fold(self, op: Op) -> None:
        summarize, combine = op.regions
        accs = [self.v(r) for r in op.results]
        self.assign(accs, [self.v(o) for o in op.operands[3:]])
        iv = self.v(summarize.args[0])
        self._loop_header(iv, op)
        self.depth += 1
        summary = [self.v(y) for y in self.region_ops(summarize)]
        n = len(accs)
        for a, name in zip(combine.args[:n], accs):
            self.alias[a.name] = name
        for a, name in zip(combine.args[n:], summary):
            self.alias[a.name] = name
        ys = self.region_ops(combine)
        self.assign(accs, [self.v(y) for y in ys])
        self.depth -= 1

    def op_region_scan(self, op: Op) -> None:
        summarize, combine, emit_r = op.regions
        states = [self.v(r) for r in op.results]
        self.assign(states, [self.v(o) for o in op.operands[3:]])
        iv = self.v(summarize.args[0])
        self._loop_header(iv, op)
        self.depth += 1
        self.alias[emit_r.args[0].name] = iv
        for a, name in zip(emit_r.args[1:], states):
            self.alias[a.name] = name
        self.region_ops(emit_r)
        summary = [self.v(y) for y in self.region_ops(summarize)]
        n = len(states)
        for a, name in zip(combine.args[:n], states):
            self.alias[a.name] = name
        for a, name in zip(combine.args[n:], summary):
            self.alias[a.name] = name
        ys = self.region_ops(combine)
        self.assign(states, [self.v(y) for y in ys])
        self.depth -= 1

    # -- control -------------------------------------------------------------------------------------------------
    def op_execution_group(self, op: Op) -> None:
        g = self.p.grid
        seg_i = int(op.attrs["segment"])
        region = op.regions[0]
        space = self.k.space
        seg = space.segments[seg_i]
        lin = self.v(op.operands[0])
        if g.form == "native" and op.operands[0].name == self.k.pid.name and seg_i == g.segment:
            self.emit(f"# execution group {seg_i}: the native grid is exactly the segment (no guard)", op)
            for i, a in enumerate(region.args):
                self.emit(f"{self.v(a)} = ct.astype(ct.bid({i}), ct.int64)")
            self.region_ops(region)
            return
        off = space.offset(seg_i)
        end = seg.length if off == Const(0) else total([off, seg.length])
        offs = self.kle(off)
        cond = f"{lin} < {self.kle(end)}" if offs == "0" else f"({lin} >= {offs}) & ({lin} < {self.kle(end)})"
        self.emit(f"if {cond}:  # execution group {seg_i}", op)
        self.depth += 1
        start = len(self.lines)
        args = region.args
        if args:
            loc = self.fresh("v_" + args[0].name + "_local")
            self.emit(f"{loc} = {lin}" + ("" if offs == "0" else f" - {offs}"))
            ext = [self.kle(e) for e in seg.extents]
            if seg.order == "grouped":
                self._grouped_decode(seg, loc, [self.v(a) for a in args], ext, args[0].name)
            else:
                for i in range(len(args) - 1, 0, -1):
                    self.emit(f"{self.v(args[i])} = {loc} % {ext[i]}")
                    self.emit(f"{loc} = {loc} // {ext[i]}")
                self.emit(f"{self.v(args[0])} = {loc}")
        self.region_ops(region)
        if len(self.lines) == start:
            self.emit("pass")
        self.depth -= 1

    def _grouped_decode(self, seg, loc: str, coords: list[str], ext: list[str], stem: str) -> None:
        """``core.grouped_coordinates`` spelled in cuTile (``loc`` is reassigned as the inner axes are taken off)."""
        axis = seg.group_axis
        for i in range(len(coords) - 1, axis, -1):
            self.emit(f"{coords[i]} = {loc} % {ext[i]}")
            self.emit(f"{loc} = {loc} // {ext[i]}")
        rows = " * ".join(f"({e})" for e in ext[:axis]) if axis > 1 else ext[0]
        gsz = self.kle(seg.group_size)
        ing = self.fresh("v_" + stem + "_in_group")
        first = self.fresh("v_" + stem + "_first")
        gm = self.fresh("v_" + stem + "_group_m")
        self.emit(f"{ing} = {gsz} * {ext[axis]}")
        self.emit(f"{first} = ({loc} // {ing}) * {gsz}")
        self.emit(f"{gm} = min({rows} - {first}, {gsz})")
        row = coords[0] if axis == 1 else self.fresh("v_" + stem + "_row")
        self.emit(f"{row} = {first} + ({loc} % {ing}) % {gm}")
        col = f"({loc} % {ing}) // {gm}"
        self.emit(f"{coords[axis]} = " + (f"(({ext[axis]}) - 1) - {col}" if seg.descending else col))
        for i in range(axis - 1, 0, -1):
            self.emit(f"{coords[i]} = {row} % {ext[i]}")
            self.emit(f"{row} = {row} // {ext[i]}")
        if axis > 1:
            self.emit(f"{coords[0]} = {row}")

    def op_if(self, op: Op) -> None:
        outs = [self.v(r) for r in op.results]
        self.emit(f"if {self.v(op.operands[0])}:", op)
        self.depth += 1
        self.body_block(op.regions[0], outs)
        self.depth -= 1
        self.emit("else:")
        self.depth += 1
        self.body_block(op.regions[1], outs)
        self.depth -= 1

    def op_for(self, op: Op) -> None:
        body = op.regions[0]
        carried = [self.v(r) for r in op.results]
        self.assign(carried, [self.v(o) for o in op.operands[3:]])
        for a, name in zip(body.args[1:], carried):
            self.alias[a.name] = name
        self._loop_header(self.v(body.args[0]), op)
        self.depth += 1
        self.body_block(body, carried)
        self.depth -= 1

    def op_while(self, op: Op) -> None:
        cond, body = op.regions
        cvars = [self.v(a) for a in cond.args]
        outs = [self.v(r) for r in op.results]
        self.assign(cvars, [self.v(o) for o in op.operands])
        for a, name in zip(body.args, outs):
            self.alias[a.name] = name
        ys = self.region_ops(cond)
        self.assign(outs, [self.v(y) for y in ys[1:]])
        self.emit(f"while {self.v(ys[0])}:", op)
        self.depth += 1
        ys_b = self.region_ops(body)
        self.assign(cvars, [self.v(y) for y in ys_b])
        self.region_ops(cond)
        self.assign(outs, [self.v(y) for y in ys[1:]])
        self.depth -= 1

    # -- export signature and launcher ---------------------------------------------------------------------------
    def signature_source(self) -> list[str]:
        k = self.k
        groups: dict[str, int] = {}
        for a in k.abi:
            if a.is_view and a.alias is not None:
                groups[a.alias] = groups.get(a.alias, 0) + 1
        out = [f"def {self.ns}kernel_signature():",
               '    """The export signature: array constraints from the ABI, the bound parameters as constants."""',
               "    from cuda.tile.compilation import (ArrayConstraint, CallingConvention, KernelSignature,",
               "                                       ScalarConstraint)",
               "    return KernelSignature(["]
        for a in k.abi:
            t = a.value.type
            if a.is_view:
                alias = (a.alias,) if a.alias is not None and groups[a.alias] > 1 else ()
                consts = [int(s.value) if isinstance(s, Const) else None for s in a.strides or ()]
                extra = f", stride_constant={tuple(consts)!r}" if any(c is not None for c in consts) else ""
                internal = any(c == 0 for c in consts)
                out.append(f"        ArrayConstraint({CT_DTYPES[t.dtype]}, {t.rank}, index_dtype=ct.int64, "
                           f"stride_lower_bound_incl=0, alias_groups={alias!r}, may_alias_internally={internal}"
                           f"{extra}),  # {a.name}")
            else:
                out.append(f"        ScalarConstraint({CT_DTYPES[t.dtype]}),  # {a.name}")
        for pd in self.p.module.params:
            out.append(f"        {self.p.params[pd.name]},  # {pd.name}")
        out.append("    ], CallingConvention.cutile_python_v1())")
        return out

    def launcher_source(self, specialized: "Sequence[_Printer]" = ()) -> list[str]:
        k, p, ns = self.k, self.p, self.ns
        public = [self.names[a.name] for a in k.abi if not a.private]
        out: list[str] = []
        # shape symbols and checks
        bind = []
        for sym, (view, axis) in p.shape_binding.items():
            if sym in p.shape_products:
                # a symbol only inside a product extent: divisibility check, then the quotient (Triton's launcher)
                nm = self.names[view]
                known = " * ".join(self.hle(f) for f in p.shape_products[sym][2])
                whole = format_launch_expr(self.types[view].shape[axis])
                bind.append(f"    if ({known}) <= 0 or {nm}.shape[{axis}] % ({known}) != 0:")
                bind.append(f"        raise ValueError(f\"argument {view} has extent {{{nm}.shape[{axis}]}} on axis "
                            f"{axis}, not a positive multiple of the known factors of its extent {whole}\")")
                bind.append(f"    {self.sym_names[sym]} = int({nm}.shape[{axis}]) // ({known})")
                continue
            bind.append(f"    {self.sym_names[sym]} = int({self.names[view]}.shape[{axis}])")
        out += [f"def {ns}grid({', '.join(public)}):",
                '    """The launched grid: the program space\'s LaunchExprs on the arguments (SPEC IR-3.1)."""']
        out += bind
        ext = p.grid.extents
        out.append("    return " + tup([self.hle(e) for e in ext]))
        out += ["", ""]
        out += [f"def {self.launch_name}(stream, {', '.join(public)}):",
                f'    """Check the arguments against the ABI, then launch {k.name} on the program space\'s grid'
                + (f' (the KIR specialization {self.spec.label})."""' if self.spec is not None else
                   ', or the KIR specialization the shapes ask for (SPEC IR-2)."""' if specialized else '."""')]
        for a in k.abi:
            if a.private or not a.is_view:
                continue
            nm = self.names[a.name]
            out.append(f"    if {nm}.ndim != {a.value.type.rank}:")
            out.append(f"        raise ValueError(f\"argument {a.name} has rank {{{nm}.ndim}}, the view has rank "
                       f"{a.value.type.rank}\")")
        out += bind
        for a in k.abi:
            if a.private or not a.is_view:
                continue
            nm = self.names[a.name]
            for axis, e in enumerate(a.value.type.shape):
                if isinstance(e, Sym) and p.shape_binding.get(e.name) == (a.name, axis):
                    continue
                want = self.hle(e)
                out.append(f"    if {nm}.shape[{axis}] != {want}:")
                out.append(f"        raise ValueError(f\"argument {a.name} has extent {{{nm}.shape[{axis}]}} on "
                           f"axis {axis}; the view needs {{{want}}}\")")
            for axis, e in enumerate(a.strides or ()):
                want = self.hle(e)
                out.append(f"    if {nm}.shape[{axis}] > 1 and {nm}.stride({axis}) != {want}:")
                out.append(f"        raise ValueError(f\"argument {a.name} has stride {{{nm}.stride({axis})}} on "
                           f"axis {axis}; the ABI declares {{{want}}}\")")
        views = [(a.name, self.names[a.name], a.alias) for a in k.abi if a.is_view and not a.private]
        written = [(a.name, self.names[a.name], a.alias) for a in k.abi if a.is_view and not a.private
                   and a.access in ("write", "readwrite")]
        out += overlap_check_call(k.name, written, views)
        if specialized:
            out += self._dispatch(specialized)
        needs_torch = any(a.private and a.is_view for a in k.abi)
        if needs_torch:
            out.append("    import torch")
            first_view = next(self.names[a.name] for a in k.abi if a.is_view and not a.private)
        for a in k.abi:
            if not a.private:
                continue
            nm = self.names[a.name]
            if a.is_view:
                alloc = p.workspace_allocs[a.name]
                shape = tup([self.hle(e) for e in a.value.type.shape])
                init = alloc.attrs["init"]
                tdt = TORCH_DTYPES[a.value.type.dtype]
                if init == "first_write":
                    out.append(f"    {nm} = torch.empty({shape}, dtype={tdt}, device={first_view}.device)"
                               f"  # workspace (first_write)")
                else:
                    lit = literal(init, a.value.type.dtype)
                    out.append(f"    {nm} = torch.full({shape}, {lit}, dtype={tdt}, device={first_view}.device)"
                               f"  # workspace")
            else:
                out.append(f"    {nm} = {self.hle(a.producer)}  # private scalar from its producer")
        out.append(f"    _grid = {ns}grid({', '.join(public)})")
        out.append(f"    for _axis, (_count, _limit) in enumerate(zip(_grid, {ns}MAX_GRID)):")
        out.append("        if _count > _limit:")
        out.append("            raise HardwareCapabilityUnsupported(f\"grid axis {_axis} has {_count} programs; the \"")
        out.append(f"                                                f\"target {p.target.name} allows {{_limit}}\", "
                   f"'kernel {k.name}')")
        out.append("    if min(_grid) <= 0:")
        out.append("        return")
        call_args = [self.names[a.name] for a in k.abi] + [str(p.params[pd.name]) for pd in p.module.params]
        out.append(f"    ct.launch(stream, _grid, {ns}KERNEL, {tup(call_args)})")
        return out

    def _dispatch(self, specialized: "Sequence[_Printer]") -> list[str]:
        """The general launcher's hand-off to a specialization, after its checks bound the shape symbols."""
        mine = {a.name: self.names[a.name] for a in self.k.abi if not a.private}
        out = ["    # KIR specializations (SPEC IR-2): the kernel built for these symbol values"]
        for sp in specialized:
            theirs = [a.name for a in sp.k.abi if not a.private]
            if theirs != list(mine):
                raise AssertionError(f"specialization {sp.spec.label} of {self.k.name} has the public ABI {theirs}, "
                                     f"the general kernel {list(mine)}")
            cond = " and ".join(f"{self.sym_names[sym]} == {val}" for sym, val in sp.spec.values)
            out.append(f"    if {cond}:")
            out.append(f"        return {sp.launch_name}(stream, {', '.join(mine[n] for n in theirs)})")
        return out


__all__ = ["serialize", "CT_DTYPES", "literal"]
