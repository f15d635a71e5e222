"""Element types of the shared GPU IR and their NumPy counterparts.

``index`` is the type of logical coordinates and program coordinates; it behaves as a signed 64-bit integer.
``i1`` is the predicate type. ``bf16`` uses ``ml_dtypes.bfloat16`` so NumPy can hold it.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
SIGNED_DTYPES = ("i8", "i16", "i32", "i64", "index")
UNSIGNED_DTYPES = ("u8", "u16", "u32", "u64")
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
ALL_DTYPES = ("i1",) + INT_DTYPES + FLOAT_DTYPES

_NUMPY = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "index": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

#: the range of every integer literal of the IR (LaunchExpr constants, attributes, parameters): ``index`` and the
#: optimizer's e-graph (egglog ``i64``) hold no more
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1

BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def is_dtype(name: str) -> bool:
    return name in _NUMPY


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


def is_bool(dtype: str) -> bool:
    return dtype == "i1"


def to_numpy(dtype: str) -> np.dtype:
    """NumPy dtype for an IR element type (KeyError for unknown names: callers validate first)."""
    return _NUMPY[dtype]


def from_numpy(dt: np.dtype) -> str:
    """IR element type for a NumPy dtype (``index`` is never returned: int64 maps to ``i64``)."""
    dt = np.dtype(dt)
    for name, ndt in _NUMPY.items():
        if ndt == dt and name != "index":
            return name
    raise KeyError(f"no IR dtype for numpy dtype {dt}")


def int_range(dtype: str) -> tuple[int, int]:
    """The values an integer element type (or ``i1``: 0 and 1) holds, ``(lo, hi)`` inclusive."""
    if dtype == "i1":
        return 0, 1
    bits = BITS[dtype]
    if dtype in UNSIGNED_DTYPES:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def in_i64(v: int) -> bool:
    """Is the integer ``v`` an IR literal (signed 64-bit)?"""
    return I64_MIN <= v <= I64_MAX
