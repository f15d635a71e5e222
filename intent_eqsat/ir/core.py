"""The shared GPU IR data model (SPEC IR-2..IR-9): module, kernels, ABI, program space, ops, regions, values.

Ops use one generic structure (name, operands, results, attributes, regions) whose legal forms are listed once in
:mod:`intent_eqsat.ir.spec`; the printer, parser, verifier and interpreter all read that table. Values are SSA
names with a type; names are unique inside a kernel, so two structurally equal modules compare equal with ``==``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from intent_eqsat.ir.launch import Const, LaunchExpr, product, total
from intent_eqsat.ir.types import ScalarType, Type, ViewType

NUMERICS = ("source", "relaxed_normalization")
#: how an f32 x f32 contraction may use the matrix unit (compile option ``fp32_contract``, issue 26 item 3):
#: ``ieee`` exact f32 products (no tensor-core form), ``tf32`` operands rounded to tf32 (10 mantissa bits),
#: ``bf16x3`` each operand split into two bf16 halves and the three leading products summed (about 16 bits)
FP32_CONTRACT = ("ieee", "tf32", "bf16x3")
ACCESS_MODES = ("read", "write", "readwrite")
ORDERS = ("row_major", "grouped")


@dataclass(frozen=True)
class Value:
    """An SSA value: a name unique in its kernel (printed ``%name``) and a type."""

    name: str
    type: Type

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=True)
class Region:
    """A structured region: typed arguments and an op list (ending in ``yield`` where the parent needs one)."""

    args: list[Value] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)


@dataclass(eq=True)
class Op:
    """One operation. ``attrs`` values are int, float, bool, str, LaunchExpr, tuples and dicts of those."""

    name: str
    operands: list[Value] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    #: where the op was written (text input only); not part of structural equality
    loc: Any = field(default=None, compare=False, repr=False)

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"op {self.name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def origin(self) -> str | None:
        """The KIR id this op came from (the origin map, SPEC IR-2)."""
        return self.attrs.get("origin")


@dataclass(frozen=True)
class AbiArg:
    """One public (or compiler-private) kernel argument (SPEC IR-2, IR-4.3).

    Views carry element strides (None = taken from the runtime tensor, i.e. ``stride(name, axis)``), an element
    offset, an access mode and an alias class (args sharing a class may overlap; None = no alias). A private
    scalar carries the LaunchExpr that produces it; a private view is a runtime-allocated workspace.
    """

    value: Value
    access: str | None = None
    strides: tuple[LaunchExpr, ...] | None = None
    offset: LaunchExpr = Const(0)
    alias: str | None = None
    private: bool = False
    producer: LaunchExpr | None = None

    @property
    def name(self) -> str:
        return self.value.name

    @property
    def is_view(self) -> bool:
        return isinstance(self.value.type, ViewType)


@dataclass(frozen=True)
class Segment:
    """One execution-group segment of the program space (SPEC IR-3).

    Its programs are the linear coordinates ``[offset, offset + length)`` where ``length = prod(extents)``; they are
    decoded to ``extents``-shaped coordinates row-major, or, with ``order="grouped"``, in groups of
    ``group_size`` rows (the tiled-GEMM L2 ordering), which is a bijection on the same set. A grouped segment's
    *rows* are the axes before ``group_axis`` (flattened row-major), its *columns* the ``group_axis`` (traversed from
    its last index down when ``descending``), and the axes after it are decoded row-major inside one (row, column):
    the linear coordinate walks the columns of a group of rows, the rows of a group fastest. The rank-2 default
    (``group_axis = 1``, ascending) is Triton's grouped GEMM ordering.
    """

    extents: tuple[LaunchExpr, ...]
    order: str = "row_major"
    group_size: LaunchExpr | None = None
    group_axis: int = 1
    descending: bool = False

    @property
    def length(self) -> LaunchExpr:
        return product(self.extents)

    @property
    def order_key(self) -> str:
        """The order with its grouping options in one word (``grouped``, ``grouped:2:descending``): how the e-graph
        term carries the segment's order."""
        if (self.group_axis, self.descending) == (1, False):
            return self.order
        return f"{self.order}:{self.group_axis}:{'descending' if self.descending else 'ascending'}"


def segment_of_key(extents: tuple[LaunchExpr, ...], key: str, group_size: LaunchExpr | None) -> Segment:
    """The segment whose :attr:`Segment.order_key` is ``key`` (the inverse the e-graph decoder uses)."""
    order, _, rest = key.partition(":")
    if not rest:
        return Segment(extents, order, group_size)
    axis, _, direction = rest.partition(":")
    return Segment(extents, order, group_size, int(axis), direction == "descending")


def grouped_coordinates(local: int, extents: tuple[int, ...], group: int, axis: int = 1,
                        descending: bool = False) -> tuple[int, ...]:
    """The coordinates of program ``local`` of a grouped segment (the definition the interpreter runs and the
    providers print): inner axes row-major from the last, then Triton's grouped ordering over (rows = the axes
    before ``axis`` flattened, columns = ``axis``), the column index mirrored when ``descending``."""
    coords = [0] * len(extents)
    for i in range(len(extents) - 1, axis, -1):
        coords[i] = local % extents[i]
        local //= extents[i]
    rows = 1
    for e in extents[:axis]:
        rows *= e
    in_group = group * extents[axis]
    first = (local // in_group) * group
    group_rows = min(rows - first, group)
    row = first + (local % in_group) % group_rows
    col = (local % in_group) // group_rows
    coords[axis] = extents[axis] - 1 - col if descending else col
    for i in range(axis - 1, -1, -1):
        coords[i] = row % extents[i] if i else row
        row //= extents[i]
    return tuple(coords)


def segment_coordinates(local: int, extents: tuple[int, ...], segment: "Segment", group: int) -> tuple[int, ...]:
    """The coordinates of program ``local`` (0-based within its segment): row-major over ``extents``, or
    :func:`grouped_coordinates` for a grouped segment (``group`` its evaluated group size)."""
    if segment.order == "grouped":
        return grouped_coordinates(local, extents, group, segment.group_axis, segment.descending)
    out = []
    for e in reversed(extents):
        out.append(local % e)
        local //= e
    return tuple(reversed(out))


@dataclass(frozen=True)
class ProgramSpace:
    """Finite physical program instances: ordered segments; ``launch`` set means grid-stride traversal with that
    many launched programs (the body then loops over linear coordinates explicitly).

    How a provider launches the programs (threads per program, pipeline stages, index width) is not part of the
    space (SPEC IR-11): the optimizer binds it beside the program,
    :class:`intent_eqsat.providers.launch_resources.LaunchResources` (issue 22 item 3)."""

    segments: tuple[Segment, ...]
    launch: LaunchExpr | None = None

    def offset(self, i: int) -> LaunchExpr:
        return total([s.length for s in self.segments[:i]])

    @property
    def total(self) -> LaunchExpr:
        return total([s.length for s in self.segments])

    @property
    def grid(self) -> LaunchExpr:
        """Number of programs launched."""
        return self.launch if self.launch is not None else self.total


@dataclass(frozen=True)
class ParamDecl:
    """A compile-time physical parameter (block size, group size, ...) with its candidate domain."""

    name: str
    default: int
    candidates: tuple[int, ...]
    dtype: str = "i64"


@dataclass(frozen=True)
class CompileOptions:
    """SPEC PASS-1.1 ``intent.compile_options``; defaults source / true / false."""

    numerics: str = "source"
    online_reduction: bool = True
    optimization_remarks: bool = False
    #: data-dependent subscripts (gathers, scatters, histogram bins) are checked at run time: an out-of-range
    #: coordinate touches no memory and the launch raises (issue 25.2); False drops the check for speed, and an
    #: out-of-range subscript is then undefined behaviour. Not a rule fact: it changes only the accesses' spelling.
    subscript_checks: bool = True
    #: f32 contractions may use the matrix unit at this precision (``FP32_CONTRACT``; SPEC PASS-1.1 options):
    #: ``ieee`` keeps them exact; a rule fact (``facts.OptFp32Contract``)
    fp32_contract: str = "ieee"

    def key(self) -> str:
        """A stable text of the options (the cache keys'): ``subscript_checks`` appears only when off and ``fp32_contract``
        only when not ``ieee``, so the keys
        of programs made before it existed still match."""
        return f"numerics={self.numerics},online_reduction={self.online_reduction}," \
               f"optimization_remarks={self.optimization_remarks}" + \
               ("" if self.subscript_checks else ",subscript_checks=False") + \
               ("" if self.fp32_contract == "ieee" else f",fp32_contract={self.fp32_contract}")


@dataclass(eq=True)
class Kernel:
    """One physical kernel = one target artifact = one launch (SPEC IR-2).

    ``body.args`` are the ABI values in order followed by the linear program coordinate.
    """

    name: str
    origin: str
    abi: list[AbiArg]
    space: ProgramSpace
    body: Region

    @property
    def pid(self) -> Value:
        return self.body.args[-1]

    def arg(self, name: str) -> AbiArg:
        for a in self.abi:
            if a.name == name:
                return a
        raise KeyError(name)


@dataclass(eq=True)
class Module:
    """A physical module (SPEC IR-2): a target-capability reference, compile options, parameters, kernels."""

    target: str
    options: CompileOptions = field(default_factory=CompileOptions)
    params: list[ParamDecl] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)

    def param(self, name: str) -> ParamDecl:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def origin_map(self) -> dict[tuple[str, int], str]:
        """(kernel name, op index in pre-order) -> KIR id, for every op that has an origin."""
        out: dict[tuple[str, int], str] = {}
        for k in self.kernels:
            for i, op in enumerate(walk(k.body)):
                if op.origin is not None:
                    out[(k.name, i)] = op.origin
        return out


@dataclass(frozen=True, eq=False)
class Specialization:
    """The physical kernel of one KIR specialization (SPEC IR-2) of a general kernel: the general kernel with the
    size symbols of ``values`` fixed (``kir.specialize``), compiled on its own. ``module`` is its verified program,
    ``kernel`` its name there and ``params`` its bound physical parameters (each specialization is tuned for
    itself, so its parameters are its own). A provider prints it beside the general kernel and its launcher picks
    it when the launch's shapes give every symbol of ``values`` its value. ``launch_resources``: its launch resources
    (side information beside the program, ``intent_eqsat.providers.launch_resources.LaunchResources``; None: the
    provider's defaults)."""

    values: tuple[tuple[str, int], ...]
    module: "Module"
    kernel: str
    params: dict | None = None
    launch_resources: Any = None

    @property
    def label(self) -> str:
        return ", ".join(f"{s}={v}" for s, v in self.values)

    @property
    def tag(self) -> str:
        """What the provider's module-level names of this kernel carry (``D64``: ``_D64_PARAMS``)."""
        return "_".join(f"{''.join(c if c.isalnum() or c == '_' else '_' for c in s).strip('_')}{v}"
                        for s, v in self.values)


@dataclass(frozen=True, eq=False)
class SizeVariant:
    """Another tile binding of a general kernel's program for the launches whose shapes fall in some size buckets
    (issue 24 item 4, ``intent_eqsat.optimizer.size_buckets``): the same structure and ABI with other tile sizes and
    launch resources, verified on its own. ``module`` holds it as kernel ``kernel``; ``launch_resources`` its
    launch resources (``intent_eqsat.providers.launch_resources.LaunchResources``, chosen at the sizes it was bound
    for)."""

    index: int
    module: "Module"
    kernel: str
    binding: tuple[tuple[str, int], ...] = ()
    launch_resources: Any = None

    @property
    def label(self) -> str:
        return f"size bucket variant {self.index} (" + (", ".join(f"{n}={v}" for n, v in self.binding) or
                                                        "no tile parameters") + ")"

    @property
    def tag(self) -> str:
        return f"bucket{self.index}"


@dataclass(frozen=True, eq=False)
class SizeBuckets:
    """The launch-time choice among a general kernel (variant 0) and its :class:`SizeVariant` s: a symbol's level
    is the number of ``edges`` at or below its launch value, and ``table`` maps the levels of ``symbols`` (in
    that order) to the variant to launch; level tuples it does not list launch the general kernel."""

    symbols: tuple[str, ...]
    edges: tuple[int, ...]
    table: tuple[tuple[tuple[int, ...], int], ...]
    variants: tuple[SizeVariant, ...]


def walk(region: Region) -> Iterator[Op]:
    """All ops of a region and its nested regions, in pre-order (the order ``#n`` locations count)."""
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def op_index(kernel: Kernel, target: Op) -> int:
    for i, op in enumerate(walk(kernel.body)):
        if op is target:
            return i
    return -1


def location(kernel: Kernel | str, op: Op | None = None, index: int | None = None) -> str:
    """Program location used in errors: ``kernel gemm, op #12 (load)``."""
    kname = kernel if isinstance(kernel, str) else kernel.name
    if op is None:
        return f"kernel {kname}"
    if index is None and not isinstance(kernel, str):
        index = op_index(kernel, op)
    where = f"op #{index} ({op.name})" if index is not None and index >= 0 else f"op {op.name}"
    origin = f" from {op.origin}" if op.origin else ""
    return f"kernel {kname}, {where}{origin}"


INDEX = ScalarType("index")
I1 = ScalarType("i1")
