"""Canonical ``.kir`` printer: ``parse(print_kir(m)) == m`` and ``print_kir(parse(print_kir(m))) == print_kir(m)``.

Parentheses are inserted exactly where the parser's precedence needs them, so the printed text re-parses to the same
tree. Builtin scans print as their sugar (``cumsum`` ...), named ones as ``scan(..., combine=c)``. Comments and
original spacing are not kept: the printed form is canonical.
"""
from __future__ import annotations

from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import dim_str

# Binding strength, loosest first (see parser.py: where < || < && < ! < comparisons < + - < * / // % < unary - <
# postfix .k < atoms).
P_WHERE, P_OR, P_AND, P_NOT, P_CMP, P_ADD, P_MUL, P_NEG, P_POSTFIX, P_ATOM = range(1, 11)
_BIN_PREC = {"or": P_OR, "and": P_AND, "lt": P_CMP, "le": P_CMP, "gt": P_CMP, "ge": P_CMP, "eq": P_CMP,
             "ne": P_CMP, "add": P_ADD, "sub": P_ADD, "mul": P_MUL, "div": P_MUL, "floordiv": P_MUL, "mod": P_MUL}
_SUGAR = {v: k for k, v in m.SCAN_SUGAR.items()}
INDENT = "  "
MAX_HEADER = 110


def print_kir(module: m.KirModule) -> str:
    """The canonical text of ``module``: items separated by a blank line, two-space indentation."""
    return "\n".join(_item(i) for i in module.items)


def print_expr(e: m.Expr, indent: str = "") -> str:
    """One expression in canonical form (used by diagnostics and by analyses to name subexpressions)."""
    return _expr(e, 0, indent)


def type_str(t: m.Type) -> str:
    return t if isinstance(t, str) else "(" + ", ".join(t) + ")"



def param_str(p: m.Param) -> str:
    if p.dims is None:
        return f"{p.name}: {p.dtype}"
    access = "" if p.access == "in" else p.access + " "
    return f"{p.name}: {access}{p.dtype}[{', '.join(dim_str(d) for d in p.dims)}]"


def _item(item: m.Kernel | m.Combiner) -> str:
    if isinstance(item, m.Kernel):
        head = f"kernel {item.name}({', '.join(param_str(p) for p in item.params)}) {{\n"
        if len(head) > MAX_HEADER and item.params:
            # One parameter per line keeps long signatures readable (whitespace does not matter to the parser).
            params = "".join(f"{INDENT * 2}{param_str(p)},\n" for p in item.params)[:-2]
            head = f"kernel {item.name}(\n{params}\n) {{\n"
        return head + "".join(INDENT + _stmt(s, INDENT) + "\n" for s in item.body) + "}\n"
    flags = "".join(f" {f}" for f, on in (("associative", item.associative), ("commutative", item.commutative)) if on)
    a, b = item.params
    t = type_str(item.type)
    return (f"combiner {item.name}({a}: {t}, {b}: {t}){flags} identity {_expr(item.identity, 0, '')} "
            f"{_block(item.body, '')}\n")


def _stmt(s: m.Stmt, indent: str) -> str:
    if isinstance(s, m.Let):
        idx = f"[{', '.join(_bind(b) for b in s.indices)}]" if s.indices else ""
        return f"let {s.name}{idx} = {_expr(s.value, 0, indent)}"
    subs = ", ".join(_expr(x, 0, indent) for x in s.subs)
    collide = f" collide {s.collide}" if s.collide is not None else ""
    return f"{s.target}[{subs}] {s.op} {_expr(s.value, 0, indent)}{collide}"


def _bind(b: m.Bind) -> str:
    if b.lo is None or b.hi is None:
        return b.name
    return f"{b.name} in {_expr(b.lo, P_ADD, '')}..{_expr(b.hi, P_ADD, '')}"


def _block(b: m.Block, indent: str) -> str:
    inner = indent + INDENT
    lines = [f"{inner}let {x.name} = {_expr(x.value, 0, inner)}\n" for x in b.lets]
    lines.append(f"{inner}{_expr(b.result, 0, inner)}\n")
    return "{\n" + "".join(lines) + indent + "}"


def _prec(e: m.Expr) -> int:
    if isinstance(e, m.Where):
        return P_WHERE
    if isinstance(e, m.Binary):
        return _BIN_PREC[e.op]
    if isinstance(e, m.Unary):
        return P_NOT if e.op == "not" else P_NEG
    if isinstance(e, m.Num) and e.text.startswith("-"):
        return P_NEG
    if isinstance(e, m.Proj):
        return P_POSTFIX
    return P_ATOM


def _expr(e: m.Expr, min_prec: int, indent: str) -> str:
    s = _fmt(e, indent)
    return f"({s})" if _prec(e) < min_prec else s


def _fmt(e: m.Expr, ind: str) -> str:
    if isinstance(e, m.Num):
        return e.text
    if isinstance(e, m.Name):
        return e.name
    if isinstance(e, m.Access):
        return f"{e.name}[{', '.join(_expr(x, 0, ind) for x in e.subs)}]"
    if isinstance(e, m.Unary):
        if e.op == "not":
            return "!" + _expr(e.x, P_NOT, ind)
        # A literal operand is parenthesized, else "-1" would re-parse as the literal -1.
        return "-" + (f"({_fmt(e.x, ind)})" if isinstance(e.x, m.Num) else _expr(e.x, P_NEG, ind))
    if isinstance(e, m.Binary):
        p = _BIN_PREC[e.op]
        left = p + 1 if p == P_CMP else p
        return f"{_expr(e.a, left, ind)} {m.BINARY_OPS[e.op]} {_expr(e.b, p + 1, ind)}"
    if isinstance(e, m.Call):
        return f"{e.fn}({', '.join(_expr(x, 0, ind) for x in e.args)})"
    if isinstance(e, m.Cast):
        return f"cast<{e.dtype}>({_expr(e.x, 0, ind)})"
    if isinstance(e, m.Where):
        return f"{_expr(e.value, P_OR, ind)} where {_expr(e.cond, P_OR, ind)} else {_expr(e.fill, P_WHERE, ind)}"
    if isinstance(e, m.TupleExpr):
        return f"({', '.join(_expr(x, 0, ind) for x in e.elems)})"
    if isinstance(e, m.Proj):
        # A literal operand is parenthesized, else "0.1" would lex as one float.
        inner = f"({_fmt(e.x, ind)})" if isinstance(e.x, m.Num) else _expr(e.x, P_ATOM, ind)
        return f"{inner}.{e.index}"
    if isinstance(e, m.Reduce):
        binds = ", ".join(_bind(b) for b in e.binds)
        combine = f", combine={e.combine}" if e.op == "reduce" else ""
        return f"{e.op}({binds}: {_expr(e.body, 0, ind)}{combine})"
    if isinstance(e, m.Scan):
        flags = (", exclusive" if e.exclusive else "") + (", reverse" if e.reverse else "")
        if e.combine in _SUGAR:
            return f"{_SUGAR[e.combine]}({e.var}: {_expr(e.body, 0, ind)}{flags})"
        return f"scan({e.var}: {_expr(e.body, 0, ind)}, combine={e.combine}{flags})"
    if isinstance(e, m.RegionFold):
        s = f"region_fold({_bind(e.bind)} by {e.chunk}, combine={e.combine}) {_block(e.summarize, ind)}"
        if e.finalize is not None:
            s += f" finalize({e.state}) {_block(e.finalize, ind)}"
        return s
    if isinstance(e, m.RegionScan):
        return (f"region_scan({e.var} by {e.chunk}, combine={e.combine}) {_block(e.summarize, ind)}"
                f" emit({e.state}) {_block(e.emit, ind)}")
    raise TypeError(f"not a KIR expression: {e!r}")
