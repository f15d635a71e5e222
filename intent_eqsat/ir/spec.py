"""The table of legal op forms (SPEC IR-5..IR-9): one entry per op, read by the printer, parser, verifier and
interpreter. An op whose name is not here is not part of the shared GPU IR (IR-10 invariant 12).

Operand layouts that are not a plain list are documented per op. Accesses share one layout:
``(resource, coord_0 .. coord_{rank-1}, [payload...], [valid])`` where the trailing validity operand is present iff
``valid=true``; ``fill`` is required on a validated load (IR-6: an invalid load touches no memory and yields fill).
Every op may also carry ``origin`` (the KIR id, the origin map of IR-2), ``tag`` and ``after`` (explicit
dependence edges to earlier tagged ops, IR-9).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

UNARY_OPS = ("neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf",
             "sigmoid", "floor", "ceil", "recip", "log1p", "expm1")
BINARY_OPS = ("add", "sub", "mul", "div", "rem", "mod", "floordiv", "max", "min", "pow", "and", "or", "xor",
              "shl", "shr")
#: integer semantics: div and rem truncate toward zero (C); floordiv and mod round toward -inf (Python)
CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")
COMBINERS = ("add", "mul", "max", "min", "and", "or", "xor")
RMW_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel", "seq_cst")
SHARING_DOMAINS = ("program", "device", "system")
ACCESS_OPS = ("load", "gather", "store", "scatter", "scatter_reduce", "atomic_rmw", "atomic_cas", "atomic_load",
              "atomic_store", "buffer_load", "buffer_store")
#: number of payload operands (after the coordinates) of each access op
ACCESS_PAYLOAD = {"load": 0, "gather": 0, "atomic_load": 0, "buffer_load": 0, "store": 1, "scatter": 1,
                  "scatter_reduce": 1, "atomic_rmw": 1, "atomic_store": 1, "buffer_store": 1, "atomic_cas": 2}
READ_ACCESSES = ("load", "gather", "atomic_load", "buffer_load")
WRITE_ACCESSES = ("store", "scatter", "scatter_reduce", "atomic_rmw", "atomic_cas", "atomic_store", "buffer_store")
ATOMIC_ACCESSES = ("atomic_rmw", "atomic_cas", "atomic_load", "atomic_store")


@dataclass(frozen=True)
class Attr:
    """An attribute's schema: kind is bool | int | ints | number | numbers | str | strs | enum | le | dict | any."""

    kind: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpSpec:
    name: str
    category: str
    operands: tuple[int, int | None]          # (min, max); None = unbounded
    results: tuple[int, int | None]
    attrs: dict[str, Attr] = field(default_factory=dict)
    regions: tuple[int, int] = (0, 0)
    effect: str = "none"                       # none | read | write | rmw | alloc
    doc: str = ""


COMMON_ATTRS = {"origin": Attr("str"), "tag": Attr("str"), "after": Attr("strs")}
_FLAGS = {"approximate": Attr("bool", default=False), "flush_to_zero": Attr("bool", default=False)}
_ORDER = {"order": Attr("enum", required=True, choices=MEMORY_ORDERS),
          "domain": Attr("enum", required=True, choices=SHARING_DOMAINS)}
_VALID = {"valid": Attr("bool", default=False)}

SPECS: dict[str, OpSpec] = {}


def _add(spec: OpSpec) -> None:
    SPECS[spec.name] = spec


# values and constants ----------------------------------------------------------------------------------------
_add(OpSpec("const", "const", (0, 0), (1, 1), {"value": Attr("number", required=True)},
            doc="a constant scalar, or a fragment filled with it"))
_add(OpSpec("launch", "const", (0, 0), (1, 1), {"expr": Attr("le", required=True)},
            doc="the value of a LaunchExpr inside the body (the same expression the launcher evaluates)"))
_add(OpSpec("range", "const", (0, 0), (1, 1), {"start": Attr("int", default=0)},
            doc="frag<index,[n]> = start + [0, 1, ..., n-1]"))
for _u in UNARY_OPS:
    _add(OpSpec(_u, "unary", (1, 1), (1, 1), dict(_FLAGS), doc=f"elementwise {_u}"))
for _b in BINARY_OPS:
    _add(OpSpec(_b, "binary", (2, 2), (1, 1), dict(_FLAGS),
                doc=f"elementwise {_b}; operands share a shape or one of them is a scalar"))
_add(OpSpec("cmp", "compare", (2, 2), (1, 1), {"pred": Attr("enum", required=True, choices=CMP_PREDICATES)}))
_add(OpSpec("select", "select", (3, 3), (1, 1), doc="select(cond, a, b)"))
_add(OpSpec("cast", "cast", (1, 1), (1, 1), dict(_FLAGS), doc="value conversion (round to nearest even)"))
_add(OpSpec("bitcast", "cast", (1, 1), (1, 1), doc="reinterpret bits; element widths must agree"))
# shape -------------------------------------------------------------------------------------------------------
_add(OpSpec("broadcast", "shape", (1, 1), (1, 1), {"dims": Attr("ints", required=True)},
            doc="scalar->fragment or fragment expansion; dims[i] = the result axis of operand axis i"))
_add(OpSpec("reshape", "shape", (1, 1), (1, 1), doc="row-major reshape, same element count"))
_add(OpSpec("transpose", "shape", (1, 1), (1, 1), {"perm": Attr("ints", required=True)}))
_add(OpSpec("join", "shape", (2, 2), (1, 1), doc="stack two same-shape fragments along a new last axis of 2"))
_add(OpSpec("extract", "shape", (1, 1), (1, 1), {"index": Attr("ints", required=True)},
            doc="fragment -> scalar at a static index"))
_add(OpSpec("tuple", "shape", (1, None), (1, 1)))
_add(OpSpec("record", "shape", (1, None), (1, 1), {"fields": Attr("strs", required=True)}))
_add(OpSpec("get", "shape", (1, 1), (1, 1), {"index": Attr("int", required=True)}))
_add(OpSpec("field", "shape", (1, 1), (1, 1), {"name": Attr("str", required=True)}))
# accesses ----------------------------------------------------------------------------------------------------
#: ``checked``: the coordinate positions (0-based) that are data-dependent subscripts checked at run time (docs/kir.md,
#: issue 25.2): a valid member whose coordinate there lies outside [0, extent) touches no memory and makes the launch
#: fail with a subscript error naming the op's origin (the provider masks the access and reports it)
_CHECKED = {"checked": Attr("ints")}
_add(OpSpec("load", "access", (1, None), (1, 1), {**_VALID, "fill": Attr("number")}, effect="read",
            doc="read a view at coordinates; invalid members yield fill and touch no memory"))
_add(OpSpec("gather", "access", (1, None), (1, 1), {**_VALID, **_CHECKED, "fill": Attr("number")}, effect="read",
            doc="read a view at data-dependent coordinates; invalid members yield fill and touch no memory"))
_add(OpSpec("store", "access", (2, None), (0, 0), dict(_VALID), effect="write",
            doc="write a view at coordinates (unique members); invalid members have no effect"))
_add(OpSpec("scatter", "access", (2, None), (0, 0), {**_VALID, **_CHECKED}, effect="write",
            doc="unique scatter: data-dependent coordinates that must not collide"))
_add(OpSpec("scatter_reduce", "access", (2, None), (0, 0),
            {**_VALID, **_CHECKED, "combine": Attr("enum", required=True, choices=COMBINERS)}, effect="rmw",
            doc="colliding members are combined with `combine` (unordered, so the combiner must commute)"))
_add(OpSpec("atomic_rmw", "access", (2, None), (1, 1),
            {**_VALID, **_ORDER, **_CHECKED, "kind": Attr("enum", required=True, choices=RMW_KINDS)}, effect="rmw",
            doc="atomic read-modify-write; result = old values"))
_add(OpSpec("atomic_cas", "access", (3, None), (1, 1), {**_VALID, **_ORDER}, effect="rmw",
            doc="operands: view, coords, compare, value; result = old values"))
_add(OpSpec("atomic_load", "access", (1, None), (1, 1), {**_VALID, **_ORDER, "fill": Attr("number")},
            effect="read"))
_add(OpSpec("atomic_store", "access", (2, None), (0, 0), {**_VALID, **_ORDER}, effect="write"))
_add(OpSpec("alloc", "buffer", (0, 0), (1, 1),
            {"init": Attr("any", required=True), "owner": Attr("str", default="program"), "arg": Attr("str")},
            effect="alloc",
            doc="a buffer; init is a number (full initial value) or 'first_write'; a workspace names its ABI arg"))
_add(OpSpec("buffer_load", "access", (1, None), (1, 1), {**_VALID, "fill": Attr("number")}, effect="read"))
_add(OpSpec("buffer_store", "access", (2, None), (0, 0), dict(_VALID), effect="write"))
# structured compute ------------------------------------------------------------------------------------------
_add(OpSpec("reduce", "structured", (1, None), (1, None),
            {"axes": Attr("ints", required=True), "combine": Attr("enum", required=True,
                                                                  choices=COMBINERS + ("region",)),
             "identity": Attr("numbers", required=True)}, regions=(0, 1),
            doc="associative+commutative reduction of tuple components over axes; combine=region uses the region "
                "(args a_0..a_{n-1}, b_0..b_{n-1}; yields n)"))
_add(OpSpec("scan", "structured", (1, None), (1, None),
            {"axis": Attr("int", required=True), "combine": Attr("enum", required=True,
                                                                 choices=COMBINERS + ("region",)),
             "identity": Attr("numbers", required=True), "reverse": Attr("bool", default=False),
             "exclusive": Attr("bool", default=False)}, regions=(0, 1),
            doc="prefix scan along one axis, keeping prefix order (the combiner needs associativity only)"))
_add(OpSpec("argreduce", "structured", (1, 1), (2, 2),
            {"axis": Attr("int", required=True), "kind": Attr("enum", required=True, choices=("max", "min")),
             "tie": Attr("enum", default="lowest", choices=("lowest",)),
             "nan": Attr("enum", default="propagate", choices=("propagate", "ignore"))},
            doc="results (value, index); ties pick the lowest index; nan=propagate: a NaN wins (the first NaN)"))
_add(OpSpec("contract", "structured", (3, 3), (1, 1),
            {"lhs_contract": Attr("ints", required=True), "rhs_contract": Attr("ints", required=True),
             "lhs_batch": Attr("ints", default=()), "rhs_batch": Attr("ints", default=()),
             "precision": Attr("enum", default="ieee", choices=("ieee", "tf32", "bf16x3"))},
            doc="acc + sum over paired axes of lhs*rhs in the accumulator dtype; result axes: batch, lhs free, "
                "rhs free; an empty reduction returns acc"))
_add(OpSpec("scaled_contract", "structured", (5, 5), (1, 1),
            {"lhs_contract": Attr("ints", required=True), "rhs_contract": Attr("ints", required=True),
             "lhs_batch": Attr("ints", default=()), "rhs_batch": Attr("ints", default=()),
             "scale_block": Attr("int", required=True)},
            doc="operands lhs, lhs_scale, rhs, rhs_scale, acc; each scale covers scale_block contracted members"))
_add(OpSpec("histogram", "structured", (1, 2), (1, 1), dict(_VALID),
            doc="counts of integer values in [0, bins) (others ignored); result frag<i32,[bins]>"))
_add(OpSpec("region_fold", "structured", (3, None), (0, None), regions=(2, 2),
            doc="operands lb, ub, step, identity...; regions summarize(seg) -> summary..., "
                "combine(acc..., summary...) -> acc...; results = the final combined summary"))
_add(OpSpec("region_scan", "structured", (3, None), (0, None), regions=(3, 3),
            doc="operands lb, ub, step, initial state...; regions summarize(seg) -> summary..., "
                "combine(state..., summary...) -> state..., emit(seg, incoming state...) -> (); "
                "results = the final state"))
# control -----------------------------------------------------------------------------------------------------
_add(OpSpec("execution_group", "control", (1, 1), (0, 0), {"segment": Attr("int", required=True)},
            regions=(1, 1),
            doc="runs its region iff the linear coordinate lies in the segment; region args = decoded coords"))
_add(OpSpec("if", "control", (1, 1), (0, None), regions=(2, 2)))
_add(OpSpec("for", "control", (3, None), (0, None),
            {"narrowing": Attr("dict"), "reduce": Attr("enum", choices=("add", "mul", "max", "min"))},
            regions=(1, 1),
            doc="operands lb, ub, step, init...; region args (iv, carried...); narrowing = the range proof; "
                "reduce = the loop realizes an ordinary (associative, commutative) reduction with this combiner: "
                "its body yields combine(carried, x) with x independent of the carried value, so its members may "
                "be reassociated (SPEC PASS-4) - an ordered recurrence never carries it"))
_add(OpSpec("while", "control", (0, None), (0, None), regions=(2, 2),
            doc="regions cond(carried...) -> (i1, values...), body(values...) -> carried..."))
_add(OpSpec("yield", "terminator", (0, None), (0, 0)))


def attr_default(op_name: str, attr: str) -> Any:
    spec = SPECS[op_name].attrs.get(attr)
    return None if spec is None else spec.default


def normalize_attrs(op_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Fill in defaults so that builder-made and parsed ops compare equal; keys sorted; lists become tuples
    (the parser reads ``[...]`` as a tuple)."""
    spec = SPECS.get(op_name)
    out = {k: _freeze(v) for k, v in attrs.items()}
    if spec is not None:
        for k, a in spec.attrs.items():
            if k not in out and a.default is not None:
                out[k] = a.default
    return dict(sorted(out.items()))


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze(x) for k, x in v.items()}
    return v


def access_layout(op_name: str, n_operands: int, valid: bool) -> tuple[int, int]:
    """(number of coordinates, number of payload operands) of an access with n_operands operands."""
    payload = ACCESS_PAYLOAD[op_name]
    return n_operands - 1 - payload - (1 if valid else 0), payload
