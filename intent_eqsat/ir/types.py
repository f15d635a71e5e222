"""Types of SSA values in the shared GPU IR (SPEC IR-4).

- ScalarType: exact scalars, logical indices, predicates (never a 1-element fragment, IR-4.1).
- FragmentType: a block of values owned by one program instance; extents are constants or declared parameter
  expressions (IR-4.2, IR-10 invariant 4); ``axes`` optionally names the logical coordinate each axis came from
  (source-axis provenance). No register/warp/shared/MMA layout.
- ViewType: an external ABI tensor (IR-4.3); its metadata (strides, offset, access, alias) lives on the ABI arg.
- BufferType: a kernel-internal mutable resource with a scope (IR-4.4); init/lifetime live on its ``alloc``.
- TupleType: the result of ``tuple``/``record`` (IR-7).
"""
from __future__ import annotations

from dataclasses import dataclass

from intent_eqsat.ir.launch import Const, LaunchExpr, format_launch_expr

BUFFER_SCOPES = ("program", "iteration", "workspace")


class Type:
    """Base of value types."""

    def __str__(self) -> str:
        return format_type(self)


@dataclass(frozen=True)
class ScalarType(Type):
    dtype: str

    def __str__(self) -> str:
        return format_type(self)


@dataclass(frozen=True)
class FragmentType(Type):
    dtype: str
    shape: tuple[LaunchExpr, ...]
    axes: tuple[str, ...] | None = None

    def __str__(self) -> str:
        return format_type(self)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_dtype(self, dtype: str) -> "FragmentType":
        return FragmentType(dtype, self.shape, self.axes)


@dataclass(frozen=True)
class ViewType(Type):
    dtype: str
    shape: tuple[LaunchExpr, ...]

    def __str__(self) -> str:
        return format_type(self)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class BufferType(Type):
    dtype: str
    shape: tuple[LaunchExpr, ...]
    scope: str

    def __str__(self) -> str:
        return format_type(self)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class TupleType(Type):
    items: tuple[Type, ...]

    def __str__(self) -> str:
        return format_type(self)


def element_dtype(t: Type) -> str | None:
    """Element dtype of a scalar/fragment/view/buffer type, None for tuples."""
    return getattr(t, "dtype", None)


def value_shape(t: Type) -> tuple[LaunchExpr, ...]:
    """Shape of a value: () for scalars, the extents for fragments."""
    if isinstance(t, FragmentType):
        return t.shape
    return ()


def same_shape(a: Type, b: Type) -> bool:
    """Fragments agree in extents (provenance labels are documentation, not part of compatibility)."""
    return value_shape(a) == value_shape(b)


def like(t: Type, dtype: str) -> Type:
    """The type with the same shape as ``t`` and element type ``dtype``."""
    if isinstance(t, FragmentType):
        return FragmentType(dtype, t.shape, t.axes)
    return ScalarType(dtype)


def frag(dtype: str, *shape: "LaunchExpr | int | str", axes: tuple[str, ...] | None = None) -> FragmentType:
    from intent_eqsat.ir.launch import as_le
    return FragmentType(dtype, tuple(as_le(s) for s in shape), axes)


def format_type(t: Type) -> str:
    def shp(shape: tuple[LaunchExpr, ...]) -> str:
        return "[" + ", ".join(format_launch_expr(s) for s in shape) + "]"

    if isinstance(t, ScalarType):
        return t.dtype
    if isinstance(t, FragmentType):
        axes = "" if t.axes is None else " axes [" + ", ".join(t.axes) + "]"
        return f"frag<{t.dtype}, {shp(t.shape)}{axes}>"
    if isinstance(t, ViewType):
        return f"view<{t.dtype}, {shp(t.shape)}>"
    if isinstance(t, BufferType):
        return f"buffer<{t.dtype}, {shp(t.shape)}, {t.scope}>"
    if isinstance(t, TupleType):
        return "tuple<" + ", ".join(format_type(i) for i in t.items) + ">"
    raise TypeError(f"not a type: {t!r}")


def static_extent(e: LaunchExpr) -> int | None:
    return e.value if isinstance(e, Const) and not isinstance(e.value, bool) else None
