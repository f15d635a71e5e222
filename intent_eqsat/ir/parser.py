"""Parser of the canonical GPU IR text (the inverse of :mod:`intent_eqsat.ir.printer`).

Errors are :class:`~intent_eqsat.errors.ParseError` located at ``file:line:col``: unknown ops, undefined or
redefined values, malformed types, LaunchExprs outside IR-3.1, and local type mismatches of value ops (operand and
result dtypes/shapes that cannot agree) are all caught here, never as a bare Python exception.
"""
from __future__ import annotations

from typing import Any

from intent_eqsat.errors import ParseError
from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import (ACCESS_MODES, FP32_CONTRACT, NUMERICS, ORDERS, AbiArg, CompileOptions, Kernel,
                                  Module, Op, ParamDecl, ProgramSpace, Region, Segment, Value)
from intent_eqsat.ir.launch import Const, LaunchExpr, read_launch_expr
from intent_eqsat.ir.lexer import Token, TokenStream, tokenize
from intent_eqsat.ir.spec import SPECS, normalize_attrs
from intent_eqsat.ir.types import (BUFFER_SCOPES, BufferType, FragmentType, ScalarType, TupleType, Type, ViewType,
                                   same_shape)


def parse_module(text: str, filename: str | None = None) -> Module:
    """Parse a whole module; raise ParseError (an IntentError) with file:line:col on malformed input."""
    parser = _Parser(text, filename)
    try:
        return parser.module()
    except RecursionError:
        raise parser.error("input nested too deeply") from None


class _Parser:
    def __init__(self, text: str, filename: str | None):
        self.ts = TokenStream(tokenize(text, filename), filename)
        self.values: dict[str, Value] = {}

    # -- helpers ---------------------------------------------------------------------------------------------
    def error(self, msg: str, tok: Token | None = None) -> ParseError:
        return self.ts.error(msg, tok)

    def ident(self, what: str) -> str:
        return self.ts.expect_kind("IDENT", what).text

    def int_lit(self, what: str = "an integer") -> int:
        neg = self.ts.accept("-")
        return self.ts.expect_int(what, neg)

    def string(self) -> str:
        tok = self.ts.peek()
        if tok.kind == "STRING":
            self.ts.next()
            return _unquote(tok.text)
        if tok.kind == "IDENT":
            self.ts.next()
            return tok.text
        raise self.error(f"expected a string, found {tok.text or 'end of input'!r}", tok)

    def le(self) -> LaunchExpr:
        return read_launch_expr(self.ts)

    def le_list(self) -> tuple[LaunchExpr, ...]:
        self.ts.expect("[")
        items: list[LaunchExpr] = []
        if not self.ts.at("]"):
            items.append(self.le())
            while self.ts.accept(","):
                items.append(self.le())
        self.ts.expect("]")
        return tuple(items)

    def bool_lit(self) -> bool:
        tok = self.ts.peek()
        if self.ts.accept("true"):
            return True
        if self.ts.accept("false"):
            return False
        raise self.error(f"expected true or false, found {tok.text!r}", tok)

    # -- types -----------------------------------------------------------------------------------------------
    def type_(self) -> Type:
        tok = self.ts.peek()
        name = self.ident("a type")
        if dtypes.is_dtype(name):
            return ScalarType(name)
        if name not in ("frag", "view", "buffer", "tuple"):
            raise self.error(f"unknown type {name!r}", tok)
        self.ts.expect("<")
        if name == "tuple":
            items = []
            if not self.ts.at(">"):
                items.append(self.type_())
                while self.ts.accept(","):
                    items.append(self.type_())
            self.ts.expect(">")
            return TupleType(tuple(items))
        dt_tok = self.ts.peek()
        dt = self.ident("an element type")
        if not dtypes.is_dtype(dt):
            raise self.error(f"unknown element type {dt!r}", dt_tok)
        self.ts.expect(",")
        shape = self.le_list()
        if name == "frag":
            axes = None
            if self.ts.accept("axes"):
                self.ts.expect("[")
                names = []
                if not self.ts.at("]"):
                    names.append(self.ident("an axis name"))
                    while self.ts.accept(","):
                        names.append(self.ident("an axis name"))
                self.ts.expect("]")
                if len(names) != len(shape):
                    raise self.error(f"{len(names)} axis names for a rank-{len(shape)} fragment", tok)
                axes = tuple(names)
            self.ts.expect(">")
            return FragmentType(dt, shape, axes)
        if name == "view":
            self.ts.expect(">")
            return ViewType(dt, shape)
        self.ts.expect(",")
        scope_tok = self.ts.peek()
        scope = self.ident("a buffer scope")
        if scope not in BUFFER_SCOPES:
            raise self.error(f"unknown buffer scope {scope!r}; expected one of {', '.join(BUFFER_SCOPES)}",
                             scope_tok)
        self.ts.expect(">")
        return BufferType(dt, shape, scope)

    # -- attributes ------------------------------------------------------------------------------------------
    def attr_value(self) -> Any:
        tok = self.ts.peek()
        if self.ts.accept("$"):
            self.ts.expect("(")
            e = self.le()
            self.ts.expect(")")
            return e
        if self.ts.accept("["):
            items = []
            if not self.ts.at("]"):
                items.append(self.attr_value())
                while self.ts.accept(","):
                    items.append(self.attr_value())
            self.ts.expect("]")
            return tuple(items)
        if self.ts.at("{"):
            return self.attr_dict()
        neg = False
        if self.ts.accept("-"):
            neg = True
            tok = self.ts.peek()
        if tok.kind == "INT":
            self.ts.next()
            return self.ts.int_value(tok, neg)
        if tok.kind == "FLOAT":
            self.ts.next()
            return -float(tok.text) if neg else float(tok.text)
        if tok.kind == "IDENT" and tok.text in ("inf", "nan"):
            self.ts.next()
            v = float(tok.text)
            return -v if neg else v
        if neg:
            raise self.error(f"expected a number after '-', found {tok.text!r}", tok)
        if tok.kind == "IDENT" and tok.text in ("true", "false"):
            self.ts.next()
            return tok.text == "true"
        if tok.kind in ("IDENT", "STRING"):
            return self.string()
        raise self.error(f"expected an attribute value, found {tok.text or 'end of input'!r}", tok)

    def attr_dict(self) -> dict[str, Any]:
        self.ts.expect("{")
        out: dict[str, Any] = {}
        if not self.ts.at("}"):
            while True:
                ktok = self.ts.peek()
                if ktok.kind == "STRING":
                    self.ts.next()
                    key = _unquote(ktok.text)
                else:
                    key = self.ident("an attribute name")
                if key in out:
                    raise self.error(f"attribute {key!r} given twice", ktok)
                self.ts.expect("=")
                out[key] = self.attr_value()
                if not self.ts.accept(","):
                    break
        self.ts.expect("}")
        return out

    # -- values ----------------------------------------------------------------------------------------------
    def define(self, tok: Token, type_: Type) -> Value:
        name = tok.text[1:]
        if name in self.values:
            raise self.error(f"value %{name} is defined twice", tok)
        v = Value(name, type_)
        self.values[name] = v
        return v

    def use(self) -> Value:
        tok = self.ts.expect_kind("VALUE", "a value (%name)")
        v = self.values.get(tok.text[1:])
        if v is None:
            raise self.error(f"use of undefined value {tok.text}", tok)
        return v

    # -- ops -------------------------------------------------------------------------------------------------
    def op(self) -> Op:
        start = self.ts.peek()
        result_toks: list[Token] = []
        if start.kind == "VALUE":
            result_toks.append(self.ts.next())
            while self.ts.accept(","):
                result_toks.append(self.ts.expect_kind("VALUE", "a result value"))
            self.ts.expect("=")
        name_tok = self.ts.peek()
        name = self.ident("an op name")
        spec = SPECS.get(name)
        if spec is None:
            raise self.error(f"unknown op {name!r}", name_tok)
        self.ts.expect("(")
        operands: list[Value] = []
        if not self.ts.at(")"):
            operands.append(self.use())
            while self.ts.accept(","):
                operands.append(self.use())
        self.ts.expect(")")
        attrs: dict[str, Any] = {}
        if self.ts.at("{"):
            attrs = self.attr_dict()
        types: list[Type] = []
        if self.ts.accept(":"):
            types.append(self.type_())
            while self.ts.accept(","):
                types.append(self.type_())
        if len(types) != len(result_toks):
            raise self.error(f"op {name} names {len(result_toks)} results but gives {len(types)} types", name_tok)
        rlo_, rhi_ = spec.results
        if len(result_toks) < rlo_ or (rhi_ is not None and len(result_toks) > rhi_):
            raise self.error(f"op {name} has {_count_range(rlo_, rhi_)} results, got {len(result_toks)}",
                             name_tok)
        lo, hi = spec.operands
        if len(operands) < lo or (hi is not None and len(operands) > hi):
            raise self.error(f"op {name} takes {_count_range(lo, hi)} operands, got {len(operands)}", name_tok)
        for k, a in spec.attrs.items():
            if a.required and k not in attrs:
                raise self.error(f"op {name} needs attribute {k!r}", name_tok)
        regions: list[Region] = []
        while self.ts.at("("):
            regions.append(self.region())
        rlo, rhi = spec.regions
        if not rlo <= len(regions) <= rhi:
            raise self.error(f"op {name} takes {rlo}..{rhi} regions, got {len(regions)}", name_tok)
        results = [self.define(t, ty) for t, ty in zip(result_toks, types)]
        op = Op(name, operands, results, normalize_attrs(name, attrs), regions, loc=self.ts.loc(start))
        _check_local_types(op, self, name_tok)
        return op

    def region(self) -> Region:
        self.ts.expect("(")
        args: list[Value] = []
        if not self.ts.at(")"):
            args.append(self.region_arg())
            while self.ts.accept(","):
                args.append(self.region_arg())
        self.ts.expect(")")
        self.ts.expect("{")
        ops: list[Op] = []
        while not self.ts.at("}"):
            if self.ts.peek().kind == "EOF":
                raise self.error("unexpected end of input inside a region (missing '}')")
            ops.append(self.op())
        self.ts.expect("}")
        return Region(args, ops)

    def region_arg(self) -> Value:
        tok = self.ts.expect_kind("VALUE", "a region argument")
        self.ts.expect(":")
        return self.define(tok, self.type_())

    # -- module structure ------------------------------------------------------------------------------------
    def module(self) -> Module:
        self.ts.expect("module")
        self.ts.expect("target")
        target = self.string()
        self.ts.expect("{")
        options = CompileOptions()
        if self.ts.at("options"):
            options = self.options()
        params: list[ParamDecl] = []
        while self.ts.at("param"):
            params.append(self.param())
        kernels: list[Kernel] = []
        while self.ts.at("kernel"):
            kernels.append(self.kernel())
        self.ts.expect("}")
        if self.ts.peek().kind != "EOF":
            raise self.error(f"unexpected {self.ts.peek().text!r} after the module")
        return Module(target, options, params, kernels)

    def options(self) -> CompileOptions:
        """``options {numerics = source, online_reduction = true, optimization_remarks = false}`` (SPEC PASS-1.1);
        omitted options take their defaults; errors point at the offending name or value."""
        self.ts.expect("options")
        self.ts.expect("{")
        values: dict[str, Any] = {}
        while not self.ts.at("}"):
            ktok = self.ts.peek()
            key = self.ident("a compile option name")
            if key not in _OPTIONS:
                raise self.error(f"unknown compile option {key!r}; expected one of {', '.join(_OPTIONS)}", ktok)
            if key in values:
                raise self.error(f"compile option {key!r} given twice", ktok)
            self.ts.expect("=")
            vtok = self.ts.peek()
            value = self.attr_value()
            if key == "numerics" and not (isinstance(value, str) and value in NUMERICS):
                raise self.error(f"numerics must be one of {', '.join(NUMERICS)}, not {vtok.text!r}", vtok)
            if key == "fp32_contract" and not (isinstance(value, str) and value in FP32_CONTRACT):
                raise self.error(f"fp32_contract must be one of {', '.join(FP32_CONTRACT)}, not {vtok.text!r}", vtok)
            if key not in ("numerics", "fp32_contract") and not isinstance(value, bool):
                raise self.error(f"{key} is true or false, not {vtok.text!r}", vtok)
            values[key] = value
            if not self.ts.accept(","):
                break
        self.ts.expect("}")
        return CompileOptions(**values)

    def param(self) -> ParamDecl:
        self.ts.expect("param")
        name = self.ident("a parameter name")
        self.ts.expect(":")
        dt_tok = self.ts.peek()
        dt = self.ident("a parameter type")
        if not dtypes.is_int(dt):
            raise self.error(f"a physical parameter has an integer type, not {dt!r}", dt_tok)
        self.ts.expect("=")
        default = self.int_lit()
        self.ts.expect("in")
        self.ts.expect("[")
        cands = []
        if not self.ts.at("]"):
            cands.append(self.int_lit())
            while self.ts.accept(","):
                cands.append(self.int_lit())
        self.ts.expect("]")
        return ParamDecl(name, default, tuple(cands), dt)

    def kernel(self) -> Kernel:
        self.ts.expect("kernel")
        self.ts.expect("@")
        name = self.ident("a kernel name")
        self.ts.expect("origin")
        origin = self.string()
        self.ts.expect("{")
        self.values = {}
        self.ts.expect("abi")
        self.ts.expect("{")
        abi: list[AbiArg] = []
        while not self.ts.at("}"):
            abi.append(self.abi_arg())
        self.ts.expect("}")
        space = self.space()
        self.ts.expect("body")
        self.ts.expect("(")
        pid_tok = self.ts.expect_kind("VALUE", "the program coordinate argument")
        self.ts.expect(":")
        pid = self.define(pid_tok, self.type_())
        self.ts.expect(")")
        self.ts.expect("{")
        ops: list[Op] = []
        while not self.ts.at("}"):
            if self.ts.peek().kind == "EOF":
                raise self.error("unexpected end of input inside a kernel body (missing '}')")
            ops.append(self.op())
        self.ts.expect("}")
        self.ts.expect("}")
        body = Region([a.value for a in abi] + [pid], ops)
        return Kernel(name, origin, abi, space, body)

    def abi_arg(self) -> AbiArg:
        private = self.ts.accept("private")
        tok = self.ts.expect_kind("VALUE", "an ABI argument (%name)")
        self.ts.expect(":")
        ty_tok = self.ts.peek()
        ty = self.type_()
        if not isinstance(ty, (ViewType, ScalarType)):
            raise self.error("an ABI argument is a view or a scalar", ty_tok)
        access = strides = alias = producer = None
        offset: LaunchExpr = Const(0)
        if isinstance(ty, ViewType):
            acc_tok = self.ts.peek()
            access = self.ident("an access mode (read, write, readwrite)")
            if access not in ACCESS_MODES:
                raise self.error(f"unknown access mode {access!r}", acc_tok)
        while True:
            if self.ts.accept("strides"):
                strides = self.le_list()
            elif self.ts.accept("offset"):
                offset = self.le()
            elif self.ts.accept("alias"):
                alias = self.string()
            elif self.ts.accept("="):
                producer = self.le()
            else:
                break
        value = self.define(tok, ty)
        return AbiArg(value, access, strides, offset, alias, private, producer)

    def space(self) -> ProgramSpace:
        self.ts.expect("space")
        self.ts.expect("{")
        segments: list[Segment] = []
        launch = None
        while self.ts.accept("segment"):
            extents = self.le_list()
            self.ts.expect("order")
            otok = self.ts.peek()
            order = self.ident("a program order")
            if order not in ORDERS:
                raise self.error(f"unknown program order {order!r}; expected one of {', '.join(ORDERS)}", otok)
            group, axis, descending = None, 1, False
            if self.ts.accept("("):
                group = self.le()
                if self.ts.accept(","):
                    self.ts.expect("axis")
                    axis = self.int_lit("the group axis (an integer)")
                    if self.ts.accept(","):
                        self.ts.expect("descending")
                        descending = True
                self.ts.expect(")")
            segments.append(Segment(extents, order, group, axis, descending))
        if self.ts.accept("launch"):
            launch = self.le()
        for word in LAUNCH_WORDS:
            if self.ts.at(word):
                raise self.error(f"'{word}' is not part of a GPU IR program space: launch resources (threads, "
                                 f"stages, index_bits) are bound beside the program for the provider that launches "
                                 f"it (SPEC IR-11; intent_eqsat.providers.launch_resources, issue 22 item 3); "
                                 f"remove the line and pass them to the serializer", self.ts.peek())
        self.ts.expect("}")
        return ProgramSpace(tuple(segments), launch)


#: launch resources a GPU IR program space once held (before issue 22 item 3): a located error names them
LAUNCH_WORDS = ("threads", "stages", "index_bits")


_OPTIONS = ("numerics", "online_reduction", "optimization_remarks", "subscript_checks", "fp32_contract")


def _count_range(lo: int, hi: int | None) -> str:
    if hi == lo:
        return str(lo)
    return f"{lo}..{hi}" if hi is not None else f"{lo} or more"


def _unquote(s: str) -> str:
    body = s[1:-1]
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _check_local_types(op: Op, p: _Parser, tok: Token) -> None:
    """Type agreement that needs nothing but the op itself (so malformed text fails at its own line)."""
    spec = SPECS[op.name]
    cat = spec.category
    if cat in ("unary", "binary", "compare", "select") and op.results:
        res = op.result.type
        data = op.operands[1:] if cat == "select" else op.operands
        for v in op.operands:
            if not isinstance(v.type, (ScalarType, FragmentType)):
                raise p.error(f"op {op.name} takes scalars or fragments, but %{v.name} is {v.type}", tok)
        dts = {v.type.dtype for v in data}
        if len(dts) > 1:
            raise p.error(f"type mismatch in {op.name}: operands have element types "
                          f"{', '.join(sorted(dts))}", tok)
        want = "i1" if cat == "compare" else next(iter(dts))
        if getattr(res, "dtype", None) != want:
            raise p.error(f"type mismatch in {op.name}: result is {res} but the operands give {want}", tok)
        frags = [v.type for v in op.operands if isinstance(v.type, FragmentType)]
        for f in frags:
            if not same_shape(f, res) and isinstance(res, FragmentType):
                raise p.error(f"shape mismatch in {op.name}: operand {f} vs result {res}", tok)
        if frags and not isinstance(res, FragmentType):
            raise p.error(f"op {op.name} on fragments must give a fragment, not {res}", tok)
        if not frags and isinstance(res, FragmentType):
            raise p.error(f"op {op.name} on scalars gives a scalar, not {res} (broadcast explicitly)", tok)
        if cat == "select" and op.operands[0].type.dtype != "i1":
            raise p.error(f"select's condition must be i1, not {op.operands[0].type}", tok)
