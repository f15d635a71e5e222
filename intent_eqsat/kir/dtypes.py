"""KIR scalar dtypes: classification, the promotion table, and their NumPy spellings.

Promotion is explicit here (not NumPy's) so the verifier, the evaluator and later the GPU construction agree:

* same dtype -> itself;
* int with int: same signedness -> the wider; unsigned ``u`` with signed ``s`` -> ``s`` when it is wider than ``u``,
  else the next signed type wider than ``u`` (u8 -> i16, u32 -> i64);
* int with float -> the float; f16 with bf16 -> f32; otherwise the wider float;
* bool never promotes implicitly (use ``cast<...>``).

Literals are *weak*: an int literal takes the other operand's dtype (any numeric), a float literal takes the other
operand's dtype if it is a float and ``f32`` otherwise. A weak value that is never combined with a typed one is
materialized as ``i64`` (int) or ``f32`` (float).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

FLOATS = ("f16", "bf16", "f32", "f64")
SIGNED = ("i8", "i16", "i32", "i64")
UNSIGNED = ("u8", "u32")
INTS = SIGNED + UNSIGNED
BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8,
        "u32": 32, "bool": 1}

# Pseudo-dtypes of weak literals during inference.
WEAK_INT = "int"
WEAK_FLOAT = "float"

NUMPY = {
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "u32": np.dtype(np.uint32), "bool": np.dtype(np.bool_),
}


def is_float(t: str) -> bool:
    return t in FLOATS or t == WEAK_FLOAT


def is_int(t: str) -> bool:
    return t in INTS or t == WEAK_INT


def is_numeric(t: str) -> bool:
    return is_float(t) or is_int(t)


def is_weak(t: str) -> bool:
    return t in (WEAK_INT, WEAK_FLOAT)


def materialize(t: str) -> str:
    """The concrete dtype of a (possibly weak) type when it is stored or reduced."""
    return {WEAK_INT: "i64", WEAK_FLOAT: "f32"}.get(t, t)


def _promote_ints(a: str, b: str) -> str:
    if (a in SIGNED) == (b in SIGNED):
        return a if BITS[a] >= BITS[b] else b
    s, u = (a, b) if a in SIGNED else (b, a)
    if BITS[s] > BITS[u]:
        return s
    return {8: "i16", 32: "i64"}[BITS[u]]


def promote(a: str, b: str) -> str | None:
    """The common dtype of a binary arithmetic operation, or None when there is none (bool with numeric)."""
    if a == b:
        return a
    if "bool" in (a, b):
        return None
    if is_weak(a) and is_weak(b):
        return WEAK_FLOAT if WEAK_FLOAT in (a, b) else WEAK_INT
    if is_weak(a) or is_weak(b):
        weak, strong = (a, b) if is_weak(a) else (b, a)
        if weak == WEAK_FLOAT and strong in INTS:
            return "f32"
        return strong
    if a in INTS and b in INTS:
        return _promote_ints(a, b)
    if a in INTS:
        return b
    if b in INTS:
        return a
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if BITS[a] >= BITS[b] else b


def numpy_dtype(t: str, float64: bool = False) -> np.dtype:
    """The NumPy dtype that holds values of KIR dtype ``t`` in the evaluator (every float is f64 in float64 mode)."""
    t = materialize(t)
    if float64 and t in FLOATS:
        return NUMPY["f64"]
    return NUMPY[t]


def op_dtype(t: str, float64: bool = False) -> np.dtype:
    """The NumPy dtype an operation on ``t`` values is computed in: f16/bf16 arithmetic is done in f32 and rounded
    once per operation (what GPUs do, and for + - * / exactly the correctly rounded result)."""
    t = materialize(t)
    if t in ("f16", "bf16") and not float64:
        return NUMPY["f32"]
    return numpy_dtype(t, float64)


def lowest(t: str) -> float | int:
    """Identity of ``max``: -inf for floats, the minimum value for ints, False for bool."""
    t = materialize(t)
    if t in FLOATS:
        return float("-inf")
    if t == "bool":
        return False
    return int(np.iinfo(NUMPY[t]).min)


def highest(t: str) -> float | int:
    """Identity of ``min``: +inf for floats, the maximum value for ints, True for bool."""
    t = materialize(t)
    if t in FLOATS:
        return float("inf")
    if t == "bool":
        return True
    return int(np.iinfo(NUMPY[t]).max)
