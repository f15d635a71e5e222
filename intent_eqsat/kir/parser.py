"""Recursive-descent parser for ``.kir`` text (grammar in ``docs/kir.md``).

The parser checks syntax only; meaning (names, types, shapes, legality) is the verifier's job. Every syntax error
is a :class:`ParseError` located at the offending token. Recursion depth is bounded so that hostile input gives a
located error instead of a ``RecursionError``.
"""
from __future__ import annotations

from intent_eqsat.errors import ParseError, SourceLocation
from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import Dim, DimExpr, DimTerm
from intent_eqsat.kir.ids import assign_ids
from intent_eqsat.kir.lexer import Token, tokenize

# Words that can never be used as a name.
RESERVED = frozenset({
    "kernel", "combiner", "let", "where", "else", "in", "by", "collide", "cast", "true", "false", "inf", "nan",
    "scan", "region_fold", "region_scan", "select",
    *m.DTYPES, *m.UNARY_FUNCS, *m.BINARY_FUNCS, *m.REDUCE_OPS, *m.SCAN_SUGAR,
})
CMP_OPS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
ADD_OPS = {"+": "add", "-": "sub"}
MUL_OPS = {"*": "mul", "/": "div", "//": "floordiv", "%": "mod"}
MAX_NESTING = 40      # nested parentheses / calls / unary operators
MAX_TREE_DEPTH = m.MAX_TREE_DEPTH  # depth of any expression tree (long operator chains build deep trees)
MAX_DIM_OPERATORS = 32  # operators in one view dimension (H - 2, (H + 2*P - K) // S + 1)
INT_LIMIT = 2**63     # integer literals (values, dims, tuple components, chunk sizes) are below it in magnitude


def parse(text: str, filename: str | None = None) -> m.KirModule:
    """Parse ``.kir`` text into a :class:`KirModule` with stable ids. Raises :class:`ParseError`."""
    module = _Parser(tokenize(text, filename)).module()
    module = m.KirModule(items=module.items, filename=filename, loc=SourceLocation(filename, 1, 1))
    _check_depth(module)
    return assign_ids(module)


def parse_dim(text: str) -> Dim:
    """One view dimension written as in a ``.kir`` signature (``"N"``, ``"G*CPG"``, ``"H - 2"``); the builder's
    string dims. Raises :class:`ParseError`."""
    p = _Parser(tokenize(text))
    d = p.dim()
    if p.tok.kind != "eof":
        raise ParseError(f"expected the end of the dimension, found {p._describe(p.tok)}", p.tok.loc)
    return d


def _check_depth(module: m.KirModule) -> None:
    node = m.too_deep(module, MAX_TREE_DEPTH)
    if node is not None:
        raise ParseError(f"expression too deeply nested (more than {MAX_TREE_DEPTH} levels)", node.loc)


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.toks = tokens
        self.pos = 0
        self.nesting = 0

    # ------------------------------------------------------------------------------------------- helpers

    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        return self.tok.kind in ("op", "name") and self.tok.text == text

    def advance(self) -> Token:
        t = self.tok
        if t.kind != "eof":
            self.pos += 1
        return t

    def accept(self, text: str) -> Token | None:
        return self.advance() if self.at(text) else None

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            raise ParseError(f"expected {what or repr(text)}, found {self._describe(self.tok)}", self.tok.loc)
        return self.advance()

    @staticmethod
    def _describe(t: Token) -> str:
        return "end of input" if t.kind == "eof" else repr(t.text)

    def ident(self, what: str, any_word: bool = False) -> Token:
        """A name token; reserved words are refused unless ``any_word`` (kernel and combiner names live in their
        own namespace, so ``kernel argmax(...)`` is fine)."""
        t = self.tok
        if t.kind != "name":
            raise ParseError(f"expected {what}, found {self._describe(t)}", t.loc)
        if t.text in RESERVED and not any_word:
            raise ParseError(f"expected {what}, found reserved word {t.text!r}", t.loc)
        return self.advance()

    def int_literal(self, what: str) -> int:
        t = self.tok
        if t.kind != "int":
            raise ParseError(f"expected {what}, found {self._describe(t)}", t.loc)
        self.advance()
        return _int_value(t)

    def dtype(self) -> str:
        t = self.tok
        if t.kind != "name" or t.text not in m.DTYPES:
            raise ParseError(f"expected a dtype ({', '.join(m.DTYPES)}), found {self._describe(t)}", t.loc)
        self.advance()
        return t.text

    def nest(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise ParseError(f"expression nested too deeply (more than {MAX_NESTING} levels)", self.tok.loc)

    # ------------------------------------------------------------------------------------------ top level

    def module(self) -> m.KirModule:
        items: list[m.Kernel | m.Combiner] = []
        while self.tok.kind != "eof":
            if self.at("kernel"):
                items.append(self.kernel())
            elif self.at("combiner"):
                items.append(self.combiner())
            else:
                raise ParseError(f"expected 'kernel' or 'combiner', found {self._describe(self.tok)}", self.tok.loc)
        return m.KirModule(items=tuple(items))

    def kernel(self) -> m.Kernel:
        start = self.expect("kernel")
        name = self.ident("a kernel name", any_word=True).text
        self.expect("(")
        params: list[m.Param] = []
        if not self.at(")"):
            params.append(self.param())
            while self.accept(","):
                params.append(self.param())
        self.expect(")", "',' or ')'")
        self.expect("{")
        body: list[m.Stmt] = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise ParseError("expected '}' to close the kernel body, found end of input", self.tok.loc)
            body.append(self.statement())
        self.expect("}")
        return m.Kernel(name=name, params=tuple(params), body=tuple(body), loc=start.loc)

    def param(self) -> m.Param:
        name = self.ident("a parameter name")
        self.expect(":")
        access = "in"
        if self.at("out") or self.at("inout"):
            access = self.advance().text
        dtype = self.dtype()
        if not self.accept("["):
            if access != "in":
                raise ParseError(f"'{access}' needs a view type such as {dtype}[N]; by-value scalars are inputs",
                                 self.tok.loc)
            return m.Param(name=name.text, dtype=dtype, loc=name.loc)
        dims: list[tuple[str | int, ...]] = []
        if not self.at("]"):
            dims.append(self.dim())
            while self.accept(","):
                dims.append(self.dim())
        self.expect("]", "',' or ']'")
        return m.Param(name=name.text, dtype=dtype, dims=tuple(dims), access=access, loc=name.loc)

    def dim(self) -> Dim:
        """A product of factors (``G*CPG``: the tuple of its factors) or an arithmetic dim (``H - 2``, ``H // 2``:
        a :class:`DimExpr`), kir.dims. At most ``MAX_DIM_OPERATORS`` operators (the dim is a tree walked
        recursively)."""
        start = self.tok
        first = self.pos
        d = self.dim_sum()
        ops = sum(1 for t in self.toks[first:self.pos] if t.kind == "op" and t.text in ("+", "-", "*", "//"))
        if ops > MAX_DIM_OPERATORS:
            raise ParseError(f"dimension has {ops} operators (at most {MAX_DIM_OPERATORS})", start.loc)
        return d

    def dim_sum(self) -> Dim:
        left = self.dim_term()
        while self.at("+") or self.at("-"):
            op = self.advance().text
            left = DimExpr(op, _dim_term(left), _dim_term(self.dim_term()))
        return left

    def dim_term(self) -> Dim:
        """Factors joined by ``*`` stay a product tuple until a ``//`` or a parenthesized sum joins them."""
        left = self.dim_factor()
        while self.at("*") or self.at("//"):
            op = self.advance().text
            right = self.dim_factor()
            if op == "*" and isinstance(left, tuple) and isinstance(right, tuple):
                left = left + right
            else:
                left = DimExpr(op, _dim_term(left), _dim_term(right))
        return left

    def dim_factor(self) -> Dim:
        if self.at("("):
            self.advance()
            self.nest()
            try:
                inner = self.dim_sum()
                self.expect(")", "an operator (+ - * //) or ')'")
            finally:
                self.nesting -= 1
            return inner                    # a parenthesized product is still a product: 2*(G*CPG) = 2*G*CPG
        if self.tok.kind == "int":
            return (self.int_literal("a dimension"),)
        return (self.ident("a dimension (a shape symbol, an integer or an expression of them)").text,)

    def combiner(self) -> m.Combiner:
        start = self.expect("combiner")
        name = self.ident("a combiner name", any_word=True).text
        self.expect("(")
        a = self.ident("a parameter name")
        self.expect(":")
        ta = self.type_()
        self.expect(",")
        b = self.ident("a parameter name")
        self.expect(":")
        type_loc = self.tok.loc
        tb = self.type_()
        self.expect(")")
        if ta != tb:
            raise ParseError(f"combiner parameters must have the same type, got {_type_str(ta)} and "
                             f"{_type_str(tb)}", type_loc)
        if a.text == b.text:
            raise ParseError(f"combiner parameters must have distinct names, got {a.text!r} twice", b.loc)
        flags: dict[str, SourceLocation | None] = {"associative": None, "commutative": None}
        while self.at("associative") or self.at("commutative"):
            t = self.advance()
            if flags[t.text]:
                raise ParseError(f"duplicate flag {t.text!r}", t.loc)
            flags[t.text] = t.loc
        self.expect("identity", "'associative', 'commutative' or 'identity'")
        identity = self.expr()
        body = self.block()
        return m.Combiner(name=name, params=(a.text, b.text), type=ta, associative=flags["associative"] is not None,
                          commutative=flags["commutative"] is not None, identity=identity, body=body,
                          associative_loc=flags["associative"], commutative_loc=flags["commutative"], loc=start.loc)

    def type_(self) -> m.Type:
        if self.accept("("):
            elems = [self.dtype()]
            while self.accept(","):
                elems.append(self.dtype())
            self.expect(")", "',' or ')'")
            if len(elems) < 2:
                raise ParseError("a tuple type needs at least two components", self.toks[self.pos - 1].loc)
            return tuple(elems)
        return self.dtype()

    # ------------------------------------------------------------------------------------------ statements

    def statement(self) -> m.Stmt:
        if self.at("let"):
            start = self.advance()
            name = self.ident("a let name").text
            indices: list[m.Bind] = []
            if self.accept("["):
                if not self.at("]"):
                    indices.append(self.bind())
                    while self.accept(","):
                        indices.append(self.bind())
                self.expect("]", "',' or ']'")
            self.expect("=")
            value = self.expr()
            return m.Let(name=name, indices=tuple(indices), value=value, loc=start.loc)
        target = self.ident("a statement ('let' or an assignment to a view)")
        self.expect("[", "'[' after the assigned view's name")
        subs = self.subscripts()
        op_tok = self.tok
        if self.at("max") or self.at("min"):
            if self.peek().kind == "op" and self.peek().text == "=":
                self.advance()
                self.advance()
                op = op_tok.text + "="
            else:
                raise ParseError(f"expected an assignment operator, found {op_tok.text!r}", op_tok.loc)
        elif self.at("=") or self.at("+=") or self.at("*="):
            op = self.advance().text
        else:
            raise ParseError(f"expected an assignment operator (=, +=, *=, max=, min=), found "
                             f"{self._describe(op_tok)}", op_tok.loc)
        value = self.expr()
        collide, collide_loc = None, None
        if self.at("collide"):
            self.advance()
            t = self.tok
            if t.kind != "name" or t.text not in m.COLLIDE_KINDS:
                raise ParseError(f"expected a collision kind ({', '.join(m.COLLIDE_KINDS)}), found "
                                 f"{self._describe(t)}", t.loc)
            self.advance()
            collide, collide_loc = t.text, t.loc
        return m.Assign(target=target.text, subs=subs, op=op, value=value, collide=collide,
                        collide_loc=collide_loc, loc=target.loc)

    def subscripts(self) -> tuple[m.Expr, ...]:
        """Parse ``e, e, ...]`` after an opening bracket."""
        subs: list[m.Expr] = []
        if not self.at("]"):
            subs.append(self.expr())
            while self.accept(","):
                subs.append(self.expr())
        self.expect("]", "',' or ']'")
        return tuple(subs)

    def bind(self) -> m.Bind:
        name = self.ident("an index name")
        if self.accept("in"):
            lo = self.additive()
            self.expect("..", "'..' in a range lo..hi")
            hi = self.additive()
            return m.Bind(name=name.text, lo=lo, hi=hi, loc=name.loc)
        return m.Bind(name=name.text, loc=name.loc)

    def block(self) -> m.Block:
        start = self.expect("{")
        lets: list[m.LocalLet] = []
        while self.at("let"):
            t = self.advance()
            name = self.ident("a let name").text
            self.expect("=")
            lets.append(m.LocalLet(name=name, value=self.expr(), loc=t.loc))
        if self.at("}"):
            raise ParseError("a block ends with one result expression after its lets, found '}'", self.tok.loc)
        result = self.expr()
        self.expect("}", "'}' (a block ends with one result expression)")
        return m.Block(lets=tuple(lets), result=result, loc=start.loc)

    # ----------------------------------------------------------------------------------------- expressions

    def expr(self) -> m.Expr:
        self.nest()
        try:
            value = self.or_()
            if self.at("where"):
                t = self.advance()
                cond = self.or_()
                self.expect("else", "'else' after the condition of 'where'")
                fill = self.expr()
                return m.Where(value=value, cond=cond, fill=fill, loc=t.loc)
            return value
        finally:
            self.nesting -= 1

    def or_(self) -> m.Expr:
        a = self.and_()
        while self.at("||"):
            t = self.advance()
            a = m.Binary(op="or", a=a, b=self.and_(), loc=t.loc)
        return a

    def and_(self) -> m.Expr:
        a = self.not_()
        while self.at("&&"):
            t = self.advance()
            a = m.Binary(op="and", a=a, b=self.not_(), loc=t.loc)
        return a

    def not_(self) -> m.Expr:
        if self.at("!"):
            t = self.advance()
            self.nest()
            try:
                return m.Unary(op="not", x=self.not_(), loc=t.loc)
            finally:
                self.nesting -= 1
        return self.comparison()

    def comparison(self) -> m.Expr:
        a = self.additive()
        if self.tok.kind == "op" and self.tok.text in CMP_OPS:
            t = self.advance()
            a = m.Binary(op=CMP_OPS[t.text], a=a, b=self.additive(), loc=t.loc)
            if self.tok.kind == "op" and self.tok.text in CMP_OPS:
                raise ParseError("comparisons do not chain; use && to combine them", self.tok.loc)
        return a

    def additive(self) -> m.Expr:
        a = self.multiplicative()
        while self.tok.kind == "op" and self.tok.text in ADD_OPS:
            t = self.advance()
            a = m.Binary(op=ADD_OPS[t.text], a=a, b=self.multiplicative(), loc=t.loc)
        return a

    def multiplicative(self) -> m.Expr:
        a = self.unary()
        while self.tok.kind == "op" and self.tok.text in MUL_OPS:
            t = self.advance()
            a = m.Binary(op=MUL_OPS[t.text], a=a, b=self.unary(), loc=t.loc)
        return a

    def unary(self) -> m.Expr:
        if self.at("-"):
            t = self.advance()
            nxt = self.tok
            # A minus directly before a number literal is part of the literal (so printing "-1" round-trips).
            if nxt.kind in ("int", "float") or (nxt.kind == "name" and nxt.text == "inf"):
                after = self.peek()
                if not (after.kind == "op" and after.text == "."):
                    self.advance()
                    return _number(nxt, negate=True, loc=t.loc)
            self.nest()
            try:
                return m.Unary(op="neg", x=self.unary(), loc=t.loc)
            finally:
                self.nesting -= 1
        return self.postfix()

    def postfix(self) -> m.Expr:
        x = self.primary()
        while self.at("."):
            t = self.advance()
            x = m.Proj(x=x, index=self.int_literal("a tuple component index"), loc=t.loc)
        return x

    def primary(self) -> m.Expr:
        t = self.tok
        if t.kind in ("int", "float"):
            self.advance()
            return _number(t, negate=False, loc=t.loc)
        if t.kind == "op" and t.text == "(":
            self.advance()
            first = self.expr()
            if self.accept(","):
                elems = [first, self.expr()]
                while self.accept(","):
                    elems.append(self.expr())
                self.expect(")", "',' or ')'")
                return m.TupleExpr(elems=tuple(elems), loc=t.loc)
            self.expect(")")
            return first
        if t.kind != "name":
            raise ParseError(f"expected an expression, found {self._describe(t)}", t.loc)
        w = t.text
        if w in ("true", "false"):
            self.advance()
            return m.Num(text=w, kind="bool", loc=t.loc)
        if w in ("inf", "nan"):
            self.advance()
            return m.Num(text=w, kind="float", loc=t.loc)
        if w == "cast":
            return self.cast()
        if w in m.REDUCE_OPS and not (w in ("max", "min") and not self._reduction_ahead()):
            return self.reduction()
        if w == "scan" or w in m.SCAN_SUGAR:
            return self.scan()
        if w == "region_fold":
            return self.region_fold()
        if w == "region_scan":
            return self.region_scan()
        if w in m.UNARY_FUNCS or w in m.BINARY_FUNCS or w == "select":
            return self.call()
        name = self.ident("an expression")
        if self.accept("["):
            self.nest()
            try:
                subs = self.subscripts()
            finally:
                self.nesting -= 1
            return m.Access(name=name.text, subs=subs, loc=name.loc)
        return m.Name(name=name.text, loc=name.loc)

    def cast(self) -> m.Expr:
        t = self.advance()
        self.expect("<", "'<' after cast")
        dtype = self.dtype()
        self.expect(">")
        self.expect("(")
        x = self.expr()
        self.expect(")")
        return m.Cast(dtype=dtype, x=x, loc=t.loc)

    def call(self) -> m.Expr:
        t = self.advance()
        self.expect("(", f"'(' after {t.text}")
        args = [self.expr()]
        while self.accept(","):
            args.append(self.expr())
        self.expect(")", "',' or ')'")
        return m.Call(fn=t.text, args=tuple(args), loc=t.loc)

    def _reduction_ahead(self) -> bool:
        """After ``max``/``min``: is this ``max(k[, j]: ...)`` (a reduction) rather than ``max(a, b)``?"""
        if self.peek(1).text != "(":
            return False
        k = 2
        while True:
            if self.peek(k).kind != "name":
                return False
            nxt = self.peek(k + 1)
            if nxt.kind == "name" and nxt.text == "in":
                return True
            if nxt.kind != "op":
                return False
            if nxt.text == ":":
                return True
            if nxt.text != ",":
                return False
            k += 2

    def reduction(self) -> m.Expr:
        t = self.advance()
        self.expect("(", f"'(' after {t.text}")
        binds = [self.bind()]
        while self.accept(","):
            binds.append(self.bind())
        self.expect(":", "':' after the reduction's index names")
        body = self.expr()
        combine, combine_loc = None, None
        if t.text == "reduce":
            self.expect(",", "', combine=<combiner>' in reduce(...)")
            combine, combine_loc = self.combine_clause()
        self.expect(")")
        return m.Reduce(op=t.text, binds=tuple(binds), body=body, combine=combine, combine_loc=combine_loc,
                        loc=t.loc)

    def combine_clause(self) -> tuple[str, SourceLocation]:
        self.expect("combine", "'combine'")
        self.expect("=")
        t = self.tok
        if t.kind != "name":
            raise ParseError(f"expected a combiner name, found {self._describe(t)}", t.loc)
        self.advance()
        return t.text, t.loc

    def scan(self) -> m.Expr:
        t = self.advance()
        self.expect("(", f"'(' after {t.text}")
        var = self.ident("the scanned index name")
        self.expect(":", "':' after the scanned index")
        body = self.expr()
        if t.text == "scan":
            self.expect(",", "', combine=<combiner>' in scan(...)")
            combine, combine_loc = self.combine_clause()
        else:
            combine, combine_loc = m.SCAN_SUGAR[t.text], t.loc
        flags = {"exclusive": False, "reverse": False}
        while self.accept(","):
            f = self.tok
            if f.kind != "name" or f.text not in flags:
                raise ParseError(f"expected 'exclusive' or 'reverse', found {self._describe(f)}", f.loc)
            if flags[f.text]:
                raise ParseError(f"duplicate flag {f.text!r}", f.loc)
            flags[f.text] = True
            self.advance()
        self.expect(")", "',' or ')'")
        return m.Scan(var=var.text, body=body, combine=combine, exclusive=flags["exclusive"],
                      reverse=flags["reverse"], var_loc=var.loc, combine_loc=combine_loc, loc=t.loc)

    def chunk_size(self) -> int:
        self.expect("by", "'by <chunk size>'")
        t = self.tok
        size = self.int_literal("a chunk size (a positive integer)")
        if size <= 0:
            raise ParseError("the chunk size must be a positive integer", t.loc)
        return size

    def region_fold(self) -> m.Expr:
        t = self.advance()
        self.expect("(")
        bind = self.bind()
        chunk = self.chunk_size()
        self.expect(",")
        combine, combine_loc = self.combine_clause()
        self.expect(")")
        summarize = self.block()
        state, finalize = None, None
        if self.accept("finalize"):
            self.expect("(")
            state = self.ident("the state parameter name").text
            self.expect(")")
            finalize = self.block()
        return m.RegionFold(bind=bind, chunk=chunk, combine=combine, summarize=summarize, state=state,
                            finalize=finalize, combine_loc=combine_loc, loc=t.loc)

    def region_scan(self) -> m.Expr:
        t = self.advance()
        self.expect("(")
        var = self.ident("the scanned index name")
        chunk = self.chunk_size()
        self.expect(",")
        combine, combine_loc = self.combine_clause()
        self.expect(")")
        summarize = self.block()
        self.expect("emit", "'emit(<state>) { ... }' after the summarizer of region_scan")
        self.expect("(")
        state = self.ident("the state parameter name").text
        self.expect(")")
        emit = self.block()
        return m.RegionScan(var=var.text, chunk=chunk, combine=combine, summarize=summarize, state=state, emit=emit,
                            var_loc=var.loc, combine_loc=combine_loc, loc=t.loc)


def _int_value(t: Token) -> int:
    """The value of an integer literal token; ``|v| < 2**63`` (checked on the digits first: Python refuses to
    convert strings of more than 4300 digits, and nothing the IR accepts needs them)."""
    digits = t.text.lstrip("0") or "0"
    if len(digits) > 19 or int(digits) >= INT_LIMIT:
        shown = t.text if len(t.text) <= 40 else f"{t.text[:20]}...({len(t.text)} digits)"
        raise ParseError(f"integer literal {shown} does not fit in 64 bits (|value| < 2**63)", t.loc)
    return int(digits)


def _number(t: Token, negate: bool, loc: SourceLocation) -> m.Num:
    """A literal with canonical text (see :class:`~intent_eqsat.kir.model.Num`)."""
    if t.kind == "int":
        v = _int_value(t)
        return m.Num(text=str(-v if negate else v), kind="int", loc=loc)
    v = float(t.text)
    if t.kind == "float" and v == float("inf"):
        shown = t.text if len(t.text) <= 40 else f"{t.text[:20]}...({len(t.text)} characters)"
        raise ParseError(f"float literal {shown} is too large for any float type (it would be infinity; write "
                         f"'inf' for infinity)", t.loc)
    return m.Num(text=repr(-v if negate else v), kind="float", loc=loc)


def _type_str(t: m.Type) -> str:
    return t if isinstance(t, str) else "(" + ", ".join(t) + ")"


def _dim_term(d: Dim) -> DimTerm:
    """A parsed dim as an operand of a :class:`DimExpr`: a 1-factor product is its factor, a longer one a ``*``
    chain."""
    if not isinstance(d, tuple):
        return d
    if len(d) == 1:
        return d[0]
    return DimExpr("*", *_split(d))


def _split(factors: tuple) -> tuple[DimTerm, DimTerm]:
    """``(a, b, c)`` as the operands of ``(a * b) * c``."""
    head = factors[0] if len(factors) == 2 else _dim_term(factors[:-1])
    return head, factors[-1]
