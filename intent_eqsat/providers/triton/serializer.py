"""The Triton serializer (SPEC TGT-4, TGT-8): a verified GPU IR kernel -> deterministic Triton source + launcher.

``serialize(module, kernel_name, target, params=None)`` runs the provider verifier (:func:`legalize`) and then
prints, mechanically and in IR order, one ``@triton.jit`` kernel, the helpers and combine functions it uses, the
declared parameter/Config candidate set, the AOT signature and a ``launch(...)`` wrapper. The same inputs give the
same bytes. The serializer never guesses shapes, rebuilds pointers or masks, picks primitives by role, adds
parameters, buffers or loops, or catches an error to fall back (TGT-8): every decision it prints is either the
program's or the recorded legalization decision (contract form, buffer access form).

The generated code calls only Triton builtins (``tl.reduce``, ``tl.associative_scan``, ``tl.where``, ...), its own
``@triton.jit`` helpers and libdevice -- never ``triton.language.standard``'s jit functions (``tl.sum``,
``tl.cumsum``, ``tl.sigmoid``): those are bound to the interpreter/compiler mode in force when triton was first
imported, so avoiding them lets a process both interpret and AOT-compile generated modules.

Conventions of the generated code: every IR value is a Triton value of exactly its IR dtype (``index`` is int64,
or the ``IDX`` constexpr the launcher picks when the program permits 32-bit index arithmetic and its index bounds
hold; scalars are 0-d tensors, so no implicit promotion ever applies); the linear program coordinate is
``tl.program_id(0)`` of a 1-D grid whose size is the program space's LaunchExpr; each op's line ends with
``# <KIR origin>`` when the op has one.
"""
from __future__ import annotations

import hashlib
import itertools
import keyword
import math
import re
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from intent_eqsat.ir import dtypes
from intent_eqsat.ir.core import AbiArg, Op, Region, SizeBuckets, SizeVariant, Specialization, Value, walk
from intent_eqsat.ir.index_bounds import INDEX32_LIMIT
from intent_eqsat.ir.launch import (BinOp, Const, Dim, LaunchExpr, Not, Select, Stride, Sym, Tuple, TupleGet,
                                    format_launch_expr, free_symbols, views_read)
from intent_eqsat.ir.spec import access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, Type
from intent_eqsat.providers.errors import LAUNCH_ERROR_SOURCE, SharedLegalityUnsupported, Unsupported
from intent_eqsat.providers.launch_resources import LaunchResources
from intent_eqsat.providers.launch_checks import (FLAG_BITS, OVERLAP_CHECK_SOURCE, SUBSCRIPT_ERROR_SOURCE,
                                                  overlap_check_call)
from intent_eqsat.providers.targets import Target, get_target
from intent_eqsat.providers.torch_ops import TORCH_DTYPE_NAMES, op_ident, op_schema
from intent_eqsat.providers.triton.direct_launch import DIRECT_LAUNCH_SOURCE, direct_launch_lines, spec_items
from intent_eqsat.providers.triton.legalize import SCOPES, SEMS, KernelPlan, legalize

TL = {"i1": "tl.int1", "i8": "tl.int8", "i16": "tl.int16", "i32": "tl.int32", "i64": "tl.int64",
      "index": "tl.int64", "u8": "tl.uint8", "u16": "tl.uint16", "u32": "tl.uint32", "u64": "tl.uint64",
      "f16": "tl.float16", "bf16": "tl.bfloat16", "f32": "tl.float32", "f64": "tl.float64"}
SIG = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "index": "i64", "u8": "u8", "u16": "u16",
       "u32": "u32", "u64": "u64", "f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64"}
TORCH = TORCH_DTYPE_NAMES
MIN_NORMAL = {"f16": "6.103515625e-05", "bf16": "1.1754943508222875e-38", "f32": "1.1754943508222875e-38",
              "f64": "2.2250738585072014e-308"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_LE_ARITH = {"+": "+", "-": "-", "*": "*"}
_LE_CMP = ("==", "!=", "<", "<=", ">", ">=")
#: names the generated module defines or uses (IR names equal to one of these are renamed with a trailing _)
_RESERVED = {"tl", "triton", "libdevice", "torch", "range", "float", "int", "bool", "min", "max", "len", "print",
             "isinstance", "getattr", "tuple", "dict", "type", "launch", "params", "num_warps", "num_stages",
             "KERNEL", "KERNEL_NAME", "TARGET", "PARAMS", "PARAM_CANDIDATES", "CONFIGS", "SIGNATURE",
             "LAUNCH_OPTIONS", "MAX_GRID", "ValueError", "TypeError", "RuntimeError",
             "HardwareCapabilityUnsupported", "INDEX_CONSTEXPR", "_index_bound", "_idx", "_grid", "_P",
             "_key", "INDEX_WIDTHS", "_FTZ_OFF", "COMPILED", "_DIRECT_ENV", "_args", "_spec", "_direct", "_run",
             "_function", "_metadata", "_stream", "_compiled_launch", "_remember_compiled"}
#: libdevice-backed precise functions (interpreter: the tl.math function of the same name, run by NumPy)
_LIBDEVICE = ("exp", "exp2", "log", "log2", "sin", "cos", "erf")
_APPROX = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2", "sin": "tl.sin", "cos": "tl.cos",
           "sqrt": "tl.sqrt", "rsqrt": "tl.rsqrt"}


def serialize(module, kernel_name: str, target: "Target | str", params: dict[str, int] | None = None, *,
              num_warps: int | None = None, num_stages: int | None = None, verify: bool = True,
              specializations: "Sequence[Specialization]" = (), size_buckets: "SizeBuckets | None" = None,
              launch_resources: "LaunchResources | None" = None, **legalize_options: Any) -> str:
    """Triton source for one kernel of a module with physical parameters bound (``params`` overrides the declared
    defaults). ``launch_resources``: the kernel's launch resources chosen beside the program (threads, stages,
    index width; None: the defaults); ``num_warps`` / ``num_stages`` override them, see :func:`legalize`.

    ``verify`` first runs the shared GPU verifier (SPEC PASS-5) on the module; a program it rejects is a
    :class:`SharedLegalityUnsupported` (chained to the VerificationError). Then the Triton provider verifier runs
    (:func:`legalize`). Either raises one of the four Unsupported kinds before anything is printed.

    ``specializations`` (SPEC IR-2, ``kir.specialize``): physical kernels of KIR specializations of this kernel,
    each verified and legalized the same way with its own parameters and printed in the same module with its own
    launcher (``_launch_<values>``); ``launch()`` calls the one whose symbol values the launch's shapes give, when
    the caller chose no parameters or launch resources, and the general kernel otherwise.

    ``size_buckets`` (issue 24 item 4, ``intent_eqsat.optimizer.size_buckets``): other tile bindings of the same
    program, each verified and printed the same way (``_launch_bucket<i>``); when no specialization takes the
    launch and the caller chose nothing, ``launch()`` computes each bucket symbol's level from the shapes and
    calls the variant ``BUCKET_TABLE`` names (the general kernel where it names none).
    """
    target = get_target(target)
    printers = []
    variants = list(size_buckets.variants) if size_buckets is not None else []
    for i, (mod, name, prm, spec, res) in enumerate(
            [(module, kernel_name, params, None, launch_resources)]
            + [(s.module, s.kernel, s.params, s, s.launch_resources) for s in specializations]
            + [(v.module, v.kernel, None, v, v.launch_resources) for v in variants]):
        if verify:
            _shared_verify(mod)
        plan = legalize(mod, name, target, prm, launch_resources=res, num_warps=num_warps if i == 0 else None,
                        num_stages=num_stages if i == 0 else None, **legalize_options)
        configs = _configs(mod, name, target, plan, legalize_options)
        printers.append(_Printer(plan, configs, spec))
    printers[0].buckets = size_buckets
    return printers[0].module_source(printers[1:])


def _shared_verify(module) -> None:
    from intent_eqsat.ir import VerificationError
    from intent_eqsat.ir import verify as shared_verify
    try:
        shared_verify(module)
    except VerificationError as e:
        raise SharedLegalityUnsupported(f"the shared GPU verifier rejects the module: {e.message}",
                                        e.location) from e


def _configs(module, kernel_name: str, target: Target, plan: KernelPlan,
             legalize_options: dict) -> list[dict[str, int]]:
    """The declared candidate set (cartesian product of the parameter domains) that passes the provider verifier;
    the bound parameters come first. Large domains (> 256 combinations) keep only the bound set."""
    bound = dict(plan.params)
    out = [bound]
    names = [p.name for p in module.params]
    domains = [tuple(p.candidates) for p in module.params]
    if not names or math.prod(len(d) for d in domains) > 256:
        return out
    for combo in itertools.product(*domains):
        cand = dict(zip(names, (int(c) for c in combo)))
        if cand == bound:
            continue
        try:
            legalize(module, kernel_name, target, cand, num_warps=plan.num_warps, num_stages=plan.num_stages,
                     **legalize_options)
        except Unsupported:
            continue                        # not a legal Config for this surface/target: not offered
        out.append(cand)
    return out


def _ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or s[0].isdigit():
        s = "_" + s
    if keyword.iskeyword(s) or s in _RESERVED or s.startswith("__"):
        s = s + "_"
    return s


def float_literal(value: Any, dtype: str) -> str:
    """A Python literal of ``value`` rounded to ``dtype`` (so Triton's conversion is exact, no double rounding);
    infinities and NaN are written ``float("inf")`` in place: Triton folds the call to a constant, and a module global
    constexpr would be re-printed by torch.compile's Inductor as ``tl.constexpr(inf)``, a NameError (issue 24)."""
    v = float(value)
    if dtype == "f16":
        v = float(np.float16(v))
    elif dtype == "bf16":
        v = float(ml_dtypes.bfloat16(v))
    elif dtype == "f32":
        v = float(np.float32(v))
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(v)


def number_literal(value: Any, dtype: str) -> str:
    if dtype == "i1":
        return "True" if bool(value) else "False"
    if dtypes.is_float(dtype):
        return float_literal(value, dtype)
    v = int(value)
    bits = dtypes.BITS[dtype]
    if dtype in dtypes.UNSIGNED_DTYPES:
        v %= 1 << bits
    else:
        v = (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return str(v)


def _tuple_src(items: Sequence[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# --------------------------------------------------------------------------------------------------- helpers

_HELPERS: dict[str, str] = {
    "_floordiv": '''@triton.jit
def _floordiv(a, b):
    # integer division rounding toward -inf (Triton's // truncates)
    q = a // b
    r = a - q * b
    return q - ((r != 0) & ((r < 0) != (b < 0))).to(q.dtype)
''',
    "_mod": '''@triton.jit
def _mod(a, b):
    # integer remainder with the sign of the divisor (Triton's % has the sign of the dividend)
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
''',
    "_ceildiv": '''@triton.jit
def _ceildiv(a, b):
    return -_floordiv(-a, b)
''',
    "_fmod_py": '''@triton.jit
def _fmod_py(a, b):
    # NumPy/Python float modulo (sign of the divisor), in the operands' dtype (float64 here)
    r = a % b
    r = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return tl.where(r == 0, tl.where(b < 0, -0.0, 0.0).to(r.dtype), r)
''',
    "_ffloordiv_py": '''@triton.jit
def _ffloordiv_py(a, b):
    # NumPy's npy_divmod floor division, in the operands' dtype (float64 here)
    m = a % b
    d = (a - m) / b
    d = tl.where((m != 0) & ((b < 0) != (m < 0)), d - 1.0, d)
    f = tl.floor(d)
    f = tl.where(d - f > 0.5, f + 1.0, f)
    z = tl.where((a < 0) != (b < 0), -0.0, 0.0).to(d.dtype)
    f = tl.where(d != 0, f, z)
    return tl.where(b == 0, a / b, f)
''',
    "_ipow": '''@triton.jit
def _ipow(a, b, BITS: tl.constexpr):
    # integer power by square-and-multiply, wrapping in the dtype (exponent >= 0)
    r = a * 0 + 1
    base = a
    e = b
    for _i in range(BITS):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r
''',
    "_tanh": '''@triton.jit
def _tanh(x):
    if _INTERPRET:
        d = x.to(tl.float64)
        a = tl.abs(d)
        e = tl.exp(-2.0 * a)
        t = tl.where(a < 1e-4, a - a * a * a / 3.0, (1.0 - e) / (1.0 + e))
        y = tl.where(d < 0, -t, t).to(x.dtype)
    else:
        y = libdevice.tanh(x)
    return y
''',
    "_pow": '''@triton.jit
def _pow(x, y):
    if _INTERPRET:
        a = x.to(tl.float64)
        b = y.to(tl.float64)
        mag = tl.exp2(b * tl.log2(tl.abs(a)))
        bint = tl.floor(b) == b
        bodd = bint & (tl.floor(b * 0.5) * 2.0 != b)
        neg = a < 0
        r = tl.where(neg & bodd, -mag, mag)
        r = tl.where(neg & (bint == 0), float("nan"), r)
        r = tl.where((b == 0) | (a == 1), 1.0, r)
        z = r.to(x.dtype)
    else:
        z = libdevice.pow(x, y)
    return z
''',
    "_cmb_add": "@triton.jit\ndef _cmb_add(a, b):\n    return a + b\n",
    "_cmb_mul": "@triton.jit\ndef _cmb_mul(a, b):\n    return a * b\n",
    "_cmb_max_f": "@triton.jit\ndef _cmb_max_f(a, b):\n    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "_cmb_min_f": "@triton.jit\ndef _cmb_min_f(a, b):\n    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "_cmb_max_i": "@triton.jit\ndef _cmb_max_i(a, b):\n    return tl.maximum(a, b)\n",
    "_cmb_min_i": "@triton.jit\ndef _cmb_min_i(a, b):\n    return tl.minimum(a, b)\n",
    "_cmb_and": "@triton.jit\ndef _cmb_and(a, b):\n    return a & b\n",
    "_cmb_or": "@triton.jit\ndef _cmb_or(a, b):\n    return a | b\n",
    "_cmb_xor": "@triton.jit\ndef _cmb_xor(a, b):\n    return a ^ b\n",
    "_cmb_pick": '''@triton.jit
def _cmb_pick(a, am, b, bm):
    # keeps the member whose flag is set (exactly one is): an exact extraction
    return tl.where(am, a, b), am | bm
''',
    # log1p / expm1: libdevice on a GPU; the interpreter (no libdevice) uses Goldberg's and Kahan's corrections,
    # accurate to a few ulps where the naive log(1 + x) / exp(x) - 1 lose every digit for small x
    "_log1p": '''@triton.jit
def _log1p(x):
    if _INTERPRET:
        u = 1.0 + x
        y = tl.where(u == 1.0, x, tl.log(u) * (x / tl.where(u == 1.0, 1.0, u - 1.0)))
        y = tl.where(u == float("inf"), u, y)
    else:
        y = libdevice.log1p(x)
    return y
''',
    "_expm1": '''@triton.jit
def _expm1(x):
    if _INTERPRET:
        u = tl.exp(x)
        um1 = u - 1.0
        lu = tl.log(u)
        y = tl.where(u == 1.0, x, tl.where(um1 == -1.0, -1.0, tl.where(
            u == float("inf"), u, um1 * (x / tl.where(lu == 0.0, 1.0, lu)))))
    else:
        y = libdevice.expm1(x)
    return y
''',
    "_tf32": '''@triton.jit
def _tf32(x):
    # round float32 to tf32 (10 explicit mantissa bits), nearest even; inf/NaN kept
    u = x.to(tl.uint32, bitcast=True)
    lsb = (u >> 13) & 1
    r = ((u + 0xFFF + lsb) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return tl.where((x == x) & (tl.abs(x) != float("inf")), r, x)
''',
}
for _n in _LIBDEVICE:
    _HELPERS["_" + _n] = f'''@triton.jit
def _{_n}(x):
    if _INTERPRET:
        y = tl.{_n}(x)
    else:
        y = libdevice.{_n}(x)
    return y
'''
for _dt, _mn in MIN_NORMAL.items():
    _HELPERS["_ftz_" + _dt] = f'''@triton.jit
def _ftz_{_dt}(x):
    # flush subnormals to a zero of the same sign (the op's flush_to_zero flag)
    return tl.where(tl.abs(x) < {_mn}, x * 0.0, x)
'''
#: f32 exp/exp2 with both the approximate and the flush_to_zero flag on a CUDA target: PTX ``ex2.approx.ftz.f32``
#: (what ``tl.exp``/``tl.exp2`` lower to, ``.ftz`` added; the kernel keeps libdevice FTZ off, so Triton's own
#: exponentials never carry it). Without ``.ftz`` ptxas wraps each ex2 in subnormal range fix-ups.
for _n, _scale in (("exp", " * 1.4426950408889634"), ("exp2", "")):
    _HELPERS[f"_{_n}_approx_ftz"] = f'''@triton.jit
def _{_n}_approx_ftz(x):
    # approximate {_n} with subnormal inputs and results flushed to zero (the op's approximate and flush_to_zero flags)
    if _INTERPRET:
        y = tl.{_n}(x)
        y = tl.where(tl.abs(y) < {MIN_NORMAL["f32"]}, y * 0.0, y)
    else:
        y = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x{_scale}], dtype=tl.float32,
                                      is_pure=True, pack=1)
    return y
'''
for _kind, _cmp in (("max", ">"), ("min", "<")):
    _HELPERS[f"_arg{_kind}_propagate"] = f'''@triton.jit
def _arg{_kind}_propagate(v1, i1, v2, i2):
    # ties -> lowest index; a NaN wins (the first NaN)
    n1 = v1 != v1
    n2 = v2 != v2
    lo = i1 < i2
    keep = (n1 & ((n2 == 0) | lo)) | ((n1 == 0) & (n2 == 0) & ((v1 {_cmp} v2) | ((v1 == v2) & lo)))
    return tl.where(keep, v1, v2), tl.where(keep, i1, i2)
'''
    _HELPERS[f"_arg{_kind}_ignore"] = f'''@triton.jit
def _arg{_kind}_ignore(v1, i1, v2, i2):
    # ties -> lowest index; NaNs are skipped (an all-NaN axis gives its first index)
    n1 = v1 != v1
    n2 = v2 != v2
    lo = i1 < i2
    keep = ((n1 == 0) & (n2 | (v1 {_cmp} v2) | ((v1 == v2) & lo))) | (n1 & n2 & lo)
    return tl.where(keep, v1, v2), tl.where(keep, i1, i2)
'''
    _HELPERS[f"_arg{_kind}_int"] = f'''@triton.jit
def _arg{_kind}_int(v1, i1, v2, i2):
    # ties -> lowest index
    keep = (v1 {_cmp} v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(keep, v1, v2), tl.where(keep, i1, i2)
'''
for _c in ("add", "mul", "max_f", "min_f", "max_i", "min_i", "and", "or", "xor"):
    _HELPERS[f"_excl_{_c}"] = f'''@triton.jit
def _excl_{_c}(i1, e1, h1, i2, e2, h2):
    # (inclusive, all-but-last, has-prefix) triples: an exact exclusive scan
    return _cmb_{_c}(i1, i2), tl.where(h2 != 0, _cmb_{_c}(i1, e2), i1), h1 | 1
'''
_HELPER_DEPS = {"_ceildiv": ("_floordiv",), "_pow": (), "_tf32": ()}
for _c in ("add", "mul", "max_f", "min_f", "max_i", "min_i", "and", "or", "xor"):
    _HELPER_DEPS[f"_excl_{_c}"] = (f"_cmb_{_c}",)
_HELPER_ORDER = list(_HELPERS)


# --------------------------------------------------------------------------------------------------- printer

class _Printer:
    def __init__(self, plan: KernelPlan, configs: list[dict[str, int]], spec: "Specialization | None" = None):
        self.p = plan
        self.k = plan.kernel
        self.configs = configs
        # a specialized kernel's module-level names carry its values (``_D64_PARAMS``, ``_launch_D64``) so that it
        # sits in the general kernel's module; the general kernel's names are the module's public ones
        self.spec = spec
        #: a size-bucket variant's launcher is called by launch() only, after its checks (none of its own)
        self.trusted = isinstance(spec, SizeVariant)
        self.buckets: "SizeBuckets | None" = None
        tag = spec.tag if spec is not None else ""
        self.ns = f"_{tag}_" if spec is not None else ""
        self.launch_name = f"_launch_{tag}" if spec is not None else "launch"
        self.helpers: set[str] = set()
        self.generated: list[str] = []           # generated combine functions, in creation order
        self.names: dict[str, str] = {}          # IR value name -> Python variable
        self.taken: set[str] = set()
        self.tmp = itertools.count()
        self.ncombine = itertools.count()
        self.lines: list[str] = []
        self.ind = 1
        # kernel argument identifiers
        self.arg_ident: dict[str, str] = {}
        self.kernel_args: list[tuple[str, str]] = []   # (identifier, signature type)
        self.launch_values: dict[str, str] = {}         # identifier -> the launcher's expression for it
        self._build_args()
        # index arithmetic: int64, or the constexpr dtype the launcher picks from the program's index bounds
        self.index_arg = self._take("IDX") if plan.index_bounds is not None else None
        self.ix = self.index_arg or "tl.int64"
        self.TL = dict(TL, index=self.ix)

    # -- naming --------------------------------------------------------------------------------------------
    def _take(self, base: str) -> str:
        name = base
        n = 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _build_args(self) -> None:
        p, k = self.p, self.k
        self.fn_name = self._take(_ident(k.name) if _ident(k.name) == k.name else _ident(k.name) + "_kernel")
        for a in k.abi:
            ident = self._take(_ident(a.name))
            self.arg_ident["abi:" + a.name] = ident
            if a.is_view:
                self.kernel_args.append((ident, "*" + SIG[a.value.type.dtype]))
            else:
                dt = a.value.type.dtype
                sig = "fp32" if dtypes.is_float(dt) else ("i1" if dt == "i1" else "i64" if dtypes.BITS[dt] == 64
                                                           else "i32")
                self.kernel_args.append((ident, sig))
        for s in p.shape_syms:
            ident = self._take(_ident(s))
            self.arg_ident["sym:" + s] = ident
            self.kernel_args.append((ident, "i32"))
        self.stride_tuples: list[tuple[str, str]] = []   # (launcher local, view): the view's strides, read once
        for a in k.abi:
            if a.is_view and a.strides is None and a.value.type.rank:
                local = self._take(f"_{self.arg_ident['abi:' + a.name]}_strides")
                self.stride_tuples.append((local, self.arg_ident["abi:" + a.name]))
                for i in range(a.value.type.rank):
                    ident = self._take(f"{self.arg_ident['abi:' + a.name]}_stride_{i}")
                    self.arg_ident[f"stride:{a.name}:{i}"] = ident
                    self.launch_values[ident] = f"{local}[{i}]"
                    self.kernel_args.append((ident, "i32"))
        # checked data-dependent subscripts (the accesses' ``checked`` axes): one flag word the kernel ORs a bit
        # into for each failing access, which the launcher allocates and reads after the launch
        checked = [op for op in walk(k.body) if op.attrs.get("checked")]
        self.check_bits: dict[int, int] = {}                 # id(op) -> its bit
        self.checks: list[tuple[int, str]] = []             # (bit, message) in op order
        self.flag_ident: str | None = None
        if checked:
            self.flag_ident = self._take("_subscript_flags")
            self.kernel_args.append((self.flag_ident, "*i32"))
            for j, op in enumerate(checked):
                bit = 1 << (j % FLAG_BITS)
                self.check_bits[id(op)] = bit
                view = op.operands[0].name
                shape = next((x.value.type.shape for x in k.abi if x.name == view), ())
                axes = ", ".join(f"axis {ax} in [0, {format_launch_expr(shape[ax]) if ax < len(shape) else '?'})"
                                 for ax in op.attrs["checked"])
                self.checks.append((bit, f"{op.origin or op.name}: {op.name} of {view} needs {axes}"))
        for prm in p.module.params:
            ident = self._take(_ident(prm.name))
            self.arg_ident["param:" + prm.name] = ident
            self.kernel_args.append((ident, "constexpr"))
        for a in k.abi:
            if not a.is_view:
                self.names[a.name] = self._take("v_" + _ident(a.name).rstrip("_"))
        self.abi = {a.name: a for a in k.abi}

    def var(self, v: Value) -> str:
        a = self.abi.get(v.name)
        if a is not None and a.is_view:
            return self.arg_ident["abi:" + v.name]
        name = self.names.get(v.name)
        if name is None:
            name = self._take("v_" + re.sub(r"[^A-Za-z0-9_]", "_", v.name))
            self.names[v.name] = name
        return name

    def fresh(self, base: str = "t") -> str:
        return self._take(f"_{base}{next(self.tmp)}")

    def need(self, helper: str) -> str:
        if helper not in self.helpers:
            self.helpers.add(helper)
            for d in _HELPER_DEPS.get(helper, ()):
                self.need(d)
        return helper

    # -- output --------------------------------------------------------------------------------------------
    def emit(self, line: str, op: Op | None = None) -> None:
        origin = op.origin if op is not None else None
        self.lines.append("    " * self.ind + line + (f"  # {origin}" if origin else ""))

    # -- types and LaunchExprs -----------------------------------------------------------------------------
    def shape(self, t: Type) -> tuple[LaunchExpr, ...]:
        return t.shape if isinstance(t, (FragmentType, BufferType)) else ()

    def static(self, t: Type) -> tuple[int, ...]:
        return self.p.static_shape(t)

    def shape_src(self, t: Type) -> str:
        return _tuple_src([self.const_le(e) for e in self.shape(t)])

    def const_le(self, e: LaunchExpr) -> str:
        """A compile-time (constexpr) integer expression over parameters, Python semantics."""
        return self._py_le(e, lambda s: self.arg_ident["param:" + s.name], None)

    def launcher_le(self, e: LaunchExpr) -> str:
        """The same expression over the launcher's local Python variables."""
        def leaf(x: LaunchExpr) -> str:
            if isinstance(x, Sym):
                return self._launch_local(x.name)
            a = self.abi[x.view]
            view = self.arg_ident["abi:" + x.view]
            if isinstance(x, Dim):
                return f"{view}.shape[{x.axis}]"
            if a.strides is not None:
                return self.launcher_le(a.strides[x.axis])
            return f"{view}.stride({x.axis})"
        return self._py_le(e, leaf, leaf)

    def _launch_local(self, name: str) -> str:
        if name in self.p.params:
            return self.arg_ident["param:" + name]
        if name in self.p.scalars:
            return self.arg_ident["abi:" + name]
        return self.arg_ident["sym:" + name]

    def _py_le(self, e: LaunchExpr, sym, meta) -> str:
        if isinstance(e, Const):
            return repr(e.value) if isinstance(e.value, bool) else str(int(e.value))
        if isinstance(e, Sym):
            return sym(e)
        if isinstance(e, (Dim, Stride)):
            if meta is None:
                raise AssertionError(f"{e} in a compile-time expression")
            return meta(e)
        r = lambda x: self._py_le(x, sym, meta)  # noqa: E731
        if isinstance(e, Not):
            return f"(not {r(e.operand)})"
        if isinstance(e, Select):
            return f"({r(e.if_true)} if {r(e.cond)} else {r(e.if_false)})"
        if isinstance(e, Tuple):
            return _tuple_src([r(i) for i in e.items])
        if isinstance(e, TupleGet):
            if isinstance(e.tuple_expr, Tuple):
                return r(e.tuple_expr.items[e.index])
            return f"{r(e.tuple_expr)}[{e.index}]"
        assert isinstance(e, BinOp)
        a, b = r(e.lhs), r(e.rhs)
        if e.op in ("+", "-", "*", "//", "%") or e.op in _LE_CMP:
            return f"({a} {e.op} {b})"
        if e.op == "ceil_div":
            return f"(-((-{a}) // {b}))"
        if e.op == "min":
            return f"({a} if {a} <= {b} else {b})"
        if e.op == "max":
            return f"({a} if {a} >= {b} else {b})"
        if e.op == "&&":
            return f"({a} and {b})"
        if e.op == "||":
            return f"({a} or {b})"
        raise AssertionError(e.op)

    def rt_le(self, e: LaunchExpr) -> str:
        """A run-time index (or i1) Triton expression of a LaunchExpr (the body side of IR-3.1)."""
        from intent_eqsat.providers.triton.legalize import _param_only
        if _param_only(e, self.p.params):
            return f"tl.cast({self.const_le(e)}, {self.ix})"
        if isinstance(e, Sym):
            return f"tl.cast({self._launch_local(e.name)}, {self.ix})"
        if isinstance(e, Dim):
            return self.rt_le(self.abi[e.view].value.type.shape[e.axis])
        if isinstance(e, Stride):
            a = self.abi[e.view]
            if a.strides is not None:
                return self.rt_le(a.strides[e.axis])
            return f"tl.cast({self.arg_ident[f'stride:{e.view}:{e.axis}']}, {self.ix})"
        if isinstance(e, Not):
            return f"({self.rt_le(e.operand)} == 0)"
        if isinstance(e, Select):
            return f"tl.where({self.rt_le(e.cond)}, {self.rt_le(e.if_true)}, {self.rt_le(e.if_false)})"
        if isinstance(e, TupleGet) and isinstance(e.tuple_expr, Tuple):
            return self.rt_le(e.tuple_expr.items[e.index])
        if isinstance(e, BinOp):
            a, b = self.rt_le(e.lhs), self.rt_le(e.rhs)
            if e.op in _LE_ARITH or e.op in _LE_CMP:
                return f"({a} {e.op} {b})"
            if e.op == "//":
                return f"{self.need('_floordiv')}({a}, {b})"
            if e.op == "%":
                return f"{self.need('_mod')}({a}, {b})"
            if e.op == "ceil_div":
                return f"{self.need('_ceildiv')}({a}, {b})"
            if e.op == "min":
                return f"tl.minimum({a}, {b})"
            if e.op == "max":
                return f"tl.maximum({a}, {b})"
            if e.op == "&&":
                return f"({a} & {b})"
            if e.op == "||":
                return f"({a} | {b})"
        raise AssertionError(f"unprintable LaunchExpr {format_launch_expr(e)} (legalize admits no such form)")

    # -- module ----------------------------------------------------------------------------------------------
    def module_source(self, specialized: "Sequence[_Printer]" = ()) -> str:
        """The module: header, helpers, every kernel (this one, then its specializations), their metadata and
        launchers; this kernel's ``launch()`` last."""
        k, p = self.k, self.p
        out: list[str] = []
        bound = ", ".join(f"{n}={v}" for n, v in p.params.items()) or "none"
        out.append(f"# Generated by intent_eqsat (Triton provider) from GPU IR kernel @{k.name} (KIR origin "
                   f"{k.origin}) for target {p.target.name}.")
        out.append(f"# Physical parameters bound: {bound}. Line comments name the KIR statement of each op. "
                   f"Do not edit: regenerate from the GPU IR.")
        for sp in specialized:
            sbound = ", ".join(f"{n}={v}" for n, v in sp.p.params.items()) or "none"
            if sp.trusted:
                out.append(f"# {sp.spec.label[0].upper() + sp.spec.label[1:]}: GPU IR kernel @{sp.k.name}, the same program with "
                           f"other tile sizes; launch() picks it by BUCKET_TABLE.")
                continue
            out.append(f"# KIR specialization {sp.spec.label} (SPEC IR-2): GPU IR kernel @{sp.k.name} (KIR origin "
                       f"{sp.k.origin}), parameters bound: {sbound}; launch() picks it for those values.")
        out.append("import triton")
        out.append("import triton.language as tl")
        out.append("from triton.language.extra import libdevice")
        out.append("")
        out.append("_INTERPRET = tl.constexpr(bool(triton.knobs.runtime.interpret))")
        out.append("")
        out.append("")
        out.extend(LAUNCH_ERROR_SOURCE)
        kernels = [self.kernel_source()] + [sp.kernel_source() for sp in specialized]
        helpers = set(self.helpers).union(*(sp.helpers for sp in specialized))
        for h in _HELPER_ORDER:
            if h in helpers:
                out.append("")
                out.append("")
                out.append(_HELPERS[h].rstrip("\n"))
        for ks in kernels:
            out.extend(ks)
        for pr in (self, *specialized):
            out.append("")
            out.append("")
            out.extend(pr.metadata())
        for sp in specialized:
            out.append("")
            out.append("")
            out.extend(sp.launcher())
        out.append("")
        out.append("")
        out.extend(self.launcher(specialized))
        out.append("")
        out.append("")
        digest = hashlib.sha256("\n".join(out).encode("utf-8")).hexdigest()[:16]
        out.extend(self.torch_op_source(digest))
        out.append("")
        out.append("")
        if any(pr.checks for pr in (self, *specialized)):
            out.append(SUBSCRIPT_ERROR_SOURCE.rstrip("\n"))
            out.append("")
            out.append("")
        out.append(OVERLAP_CHECK_SOURCE.rstrip("\n"))
        out.append("")
        out.append("")
        out.append(DIRECT_LAUNCH_SOURCE.rstrip("\n"))
        out.append("")
        out.append("")
        out.append("_FTZ_OFF = []")
        out.append("")
        out.append("")
        out.append("def _ftz_off():")
        out.append('    """libdevice flush-to-zero off (FTZ is an op attribute, never kernel-wide); CUDA only. Asked of the')
        out.append('    driver once per module (the module\'s kernels were made for one mode and backend at import)."""')
        out.append("    if not _FTZ_OFF:")
        out.append("        cuda = not triton.knobs.runtime.interpret and \\")
        out.append("            triton.runtime.driver.active.get_current_target().backend == 'cuda'")
        out.append("        _FTZ_OFF.append({'enable_reflect_ftz': False} if cuda else {})")
        out.append("    return _FTZ_OFF[0]")
        return "\n".join(out) + "\n"

    def kernel_source(self) -> list[str]:
        """The kernel's generated combine functions and its ``@triton.jit`` function (prints the body)."""
        k = self.k
        self.emit(f"{self.var(k.pid)} = tl.program_id(0).to({self.ix})")
        for a in k.abi:
            if not a.is_view:
                self.emit(f"{self.names[a.name]} = tl.cast({self.arg_ident['abi:' + a.name]}, "
                          f"{self.TL[a.value.type.dtype]})")
        self.region_ops(k.body)
        out: list[str] = []
        for g in self.generated:
            out.append("")
            out.append("")
            out.append(g.rstrip("\n"))
        out.append("")
        out.append("")
        out.append("@triton.jit")
        sig = []
        for ident, t in self.kernel_args:
            sig.append(f"{ident}: tl.constexpr" if t == "constexpr" else ident)
        if self.index_arg:
            sig.append(f"{self.index_arg}: tl.constexpr")
        out.extend(_wrap_def(f"def {self.fn_name}(", sig, "):"))
        out.extend(self.lines)
        return out

    def metadata(self) -> list[str]:
        p, ns = self.p, self.ns
        lines = [f"{ns}KERNEL = {self.fn_name}", f"{ns}KERNEL_NAME = {self.k.name!r}",
                 f"{ns}TARGET = {p.target.name!r}"]
        lines.append(f"{ns}PARAMS = " + _dict_src({self.arg_ident['param:' + n]: v for n, v in p.params.items()}))
        lines.append(f"{ns}PARAM_CANDIDATES = " + _dict_src(
            {self.arg_ident['param:' + prm.name]: tuple(prm.candidates) for prm in p.module.params}))
        lines.append(f"{ns}CONFIGS = [")
        for c in self.configs:
            lines.append("    " + _dict_src({self.arg_ident['param:' + n]: v for n, v in c.items()}) + ",")
        lines.append("]")
        lines.append(f"{ns}LAUNCH_OPTIONS = {{'num_warps': {p.num_warps}, 'num_stages': {p.num_stages}, "
                     f"'enable_fp_fusion': True}}")
        sig = {i: t for i, t in self.kernel_args}
        if self.index_arg:
            sig[self.index_arg] = "constexpr"
        lines.append(f"{ns}SIGNATURE = " + _dict_src(sig))
        lines.append(f"{ns}INDEX_CONSTEXPR = {self.index_arg!r}  # the index dtype constexpr (None: int64 only)")
        if self.index_arg:
            lines.append(f"{ns}INDEX_WIDTHS = {{}}  # the index dtype launch() chose, by what the index bounds read")
        lines.append(f"{ns}MAX_GRID = {p.target.max_grid[0]}")
        lines.append(f"{ns}COMPILED = {{}}  # Triton's compiled kernels by launch specialization: direct launches")
        if self.checks:
            lines.append(f"{ns}CHECKS = [  # (flag bit, checked data-dependent access): launch() raises "
                         f"SubscriptOutOfRange")
            lines.extend(f"    ({bit}, {msg!r})," for bit, msg in self.checks)
            lines.append("]")
        if isinstance(self.spec, Specialization):
            lines.append(f"{ns}VALUES = " + _dict_src(dict(self.spec.values)) + "  # the KIR specialization")
        if self.buckets is not None:
            b = self.buckets
            lines.append(f"BUCKET_SYMBOLS = {tuple(b.symbols)!r}  # a symbol's level: how many BUCKET_EDGES "
                         f"are at or below its value")
            lines.append(f"BUCKET_EDGES = {tuple(b.edges)!r}")
            lines.append("BUCKET_TABLE = {  # levels of BUCKET_SYMBOLS -> size bucket variant (absent: this kernel)")
            lines.extend(f"    {tuple(levels)!r}: {v}," for levels, v in b.table)
            lines.append("}")
        return lines

    # -- launcher --------------------------------------------------------------------------------------------
    def torch_op_source(self, digest: str) -> list[str]:
        """Module lines registering ``launch()`` as a ``torch.library`` custom op at import (issue 24 item 1):
        under ``torch.compile`` launch() calls the op, so Dynamo records one opaque call whose schema marks the
        written views as mutated and whose fake implementation does nothing, instead of tracing the launcher's
        host checks (any mode, CUDA graphs included). ``digest`` names the op after the module's content."""
        public = self._public()
        args = [self.arg_ident["abi:" + a.name] for a in public]
        schema, mutated = op_schema(
            [(i, "scalar" if not a.is_view else "written" if a.access in ("write", "readwrite") else "in",
              a.value.type.dtype) for i, a in zip(args, public)], ["int? num_warps", "int? num_stages"])
        sig = ", ".join(args + ["num_warps", "num_stages"])
        name = op_ident(self.k.name)
        return [
            f"_TORCH_OP_NAME = 'intent_eqsat::{name}_{digest}'",
            "",
            "",
            f"def _torch_op_impl({sig}):",
            f"    {self.launch_name}({', '.join(args)}, num_warps=num_warps, num_stages=num_stages)",
            "",
            "",
            "def _register_torch_op():",
            '    """launch() as a torch.library custom op (None without torch). A second import of this source',
            '    (the interpreter\'s and the compiler\'s modules) finds the op registered and uses it."""',
            "    try:",
            "        import torch",
            "    except ImportError:",
            "        return None",
            "    ns, op_name = _TORCH_OP_NAME.split('::')",
            "    if hasattr(getattr(torch.ops, ns), op_name):",
            "        return getattr(getattr(torch.ops, ns), op_name).default",
            f"    op = torch.library.custom_op(_TORCH_OP_NAME, _torch_op_impl, mutates_args={tuple(mutated)!r},",
            f"                                 schema={schema!r})",
            "    op.register_fake(lambda *args: None)",
            "    return op",
            "",
            "",
            "_TORCH_OP = _register_torch_op()",
        ]

    def _public(self) -> list[AbiArg]:
        return [a for a in self.k.abi if not a.private or (not a.is_view and a.producer is None)]

    def launcher(self, specialized: "Sequence[_Printer]" = ()) -> list[str]:
        k, p, ns = self.k, self.p, self.ns
        public = self._public()
        params_in = [self.arg_ident["abi:" + a.name] for a in public]
        L: list[str] = []
        if specialized:     # None: the caller chose nothing, so a specialization may take the launch
            control = ["*", "params=None", "num_warps=None", "num_stages=None"]
        else:
            control = ["*", "params=None", f"num_warps={p.num_warps}", f"num_stages={p.num_stages}"]
        L.extend(_wrap_def(f"def {self.launch_name}(", params_in + control, "):"))
        if self.trusted:
            L.append(f'    """Launch @{k.name}, the {self.spec.label}: called by launch() after its checks."""')
        elif self.spec is not None:
            L.append(f'    """Launch @{k.name}, the KIR specialization {self.spec.label}, as launch() does."""')
        else:
            L.append(f'    """Launch @{k.name}: views are torch tensors, scalars Python numbers; shapes and strides '
                     f'are read')
            L.append('    from the tensors, the grid is the program space evaluated on them, constexpr parameters '
                     'are PARAMS')
            L.append('    (or one of CONFIGS via ``params``)."""' if not specialized else
                     '    (or one of CONFIGS via ``params``). With no params, num_warps or num_stages given, the '
                     'launch goes to')
            if specialized and all(sp.trusted for sp in specialized):
                L.append('    the size bucket variant BUCKET_TABLE names for the shapes\' levels, if it names one."""')
            elif specialized:
                L.append('    the KIR specialization whose values the shapes give (SPEC IR-2), if there is one'
                         + (', else to the size bucket variant BUCKET_TABLE names."""'
                            if any(sp.trusted for sp in specialized) else '."""'))
        L.append("    import torch")
        if self.spec is None:
            L.append("    if _TORCH_OP is not None and torch.compiler.is_compiling():  # recorded as the custom op")
            L.append("        if params:")
            L.append("            raise TypeError('launch(): params cannot be chosen under torch.compile (it runs as "
                     "the custom op ' + _TORCH_OP_NAME + ')')")
            L.append(f"        return _TORCH_OP({', '.join(params_in + ['num_warps', 'num_stages'])})")
        L.append("    if params:")
        L.append(f"        _P = dict({ns}PARAMS)")
        L.append("        _P.update(params)")
        L.append(f"        if _P not in {ns}CONFIGS:")
        L.append(f"            raise ValueError(f'parameters {{_P}} are not in the verified candidate set {ns}CONFIGS')")
        L.append("    else:")
        L.append(f"        _P = {ns}PARAMS  # read only: no copy per launch")
        for prm in p.module.params:
            i = self.arg_ident["param:" + prm.name]
            L.append(f"    {i} = _P[{i!r}]")
        for a in public:
            if a.is_view:
                continue
            i = self.arg_ident["abi:" + a.name]
            dt = a.value.type.dtype
            conv = "float" if dtypes.is_float(dt) else ("bool" if dt == "i1" else "int")
            L.append(f"    {i} = {conv}({i})")
        bound: set[str] = set(p.params) | set(p.scalars)
        checks: list[str] = []
        for a in k.abi:
            if not a.is_view or a.private:
                continue
            i = self.arg_ident["abi:" + a.name]
            t = a.value.type
            if not self.trusted:
                L.append(f"    if not isinstance({i}, torch.Tensor) or {i}.dtype != torch.{TORCH[t.dtype]} or "
                         f"{i}.dim() != {t.rank}:")
                L.append(f"        raise TypeError(f'{a.name}: expected a torch.{TORCH[t.dtype]} tensor of rank "
                         f"{t.rank}, got {{getattr({i}, \"dtype\", type({i}))}} of shape "
                         f"{{tuple(getattr({i}, \"shape\", ()))}}')")
            for axis, e in enumerate(t.shape):
                if isinstance(e, Sym) and e.name not in bound:
                    L.append(f"    {self.arg_ident['sym:' + e.name]} = {i}.shape[{axis}]")
                    bound.add(e.name)
                else:
                    checks.append(f"    if {i}.shape[{axis}] != {self.launcher_le(e)}:")
                    checks.append(f"        raise ValueError(f'{a.name}: extent {axis} is {{{i}.shape[{axis}]}}, "
                                  f"expected {format_launch_expr(e)} = {{{self.launcher_le(e)}}}')")
            for axis, e in enumerate(a.strides or ()):
                checks.append(f"    if {i}.shape[{axis}] > 1 and {i}.stride({axis}) != {self.launcher_le(e)}:")
                checks.append(f"        raise ValueError(f'{a.name}: stride {axis} is {{{i}.stride({axis})}}, the "
                              f"kernel was built for {format_launch_expr(e)} = {{{self.launcher_le(e)}}}')")
        for sym, (view, axis, others) in p.shape_products.items():
            i = self.arg_ident["abi:" + view]
            known = " * ".join(f"({self.launcher_le(f)})" for f in others) or "1"
            if not self.trusted:
                L.append(f"    if ({known}) <= 0 or {i}.shape[{axis}] % ({known}) != 0:")
                L.append(f"        raise ValueError(f'{view}: extent {axis} is {{{i}.shape[{axis}]}}, not a multiple "
                         f"of the known factors of its extent "
                         f"{format_launch_expr(self.abi[view].value.type.shape[axis])}')")
            L.append(f"    {self.arg_ident['sym:' + sym]} = {i}.shape[{axis}] // ({known})")
        if not self.trusted:
            L.extend(checks)
            views = [(a.name, self.arg_ident["abi:" + a.name], a.alias) for a in public if a.is_view]
            written = [v for v, a in zip(views, [a for a in public if a.is_view])
                       if a.access in ("write", "readwrite")]
            L.extend(overlap_check_call(k.name, written, views))
        if specialized:
            L.extend(self._dispatch(specialized))
        devs = [self.arg_ident["abi:" + a.name] for a in k.abi if a.is_view and not a.private]
        for a in k.abi:
            if not a.private:
                continue
            i = self.arg_ident["abi:" + a.name]
            if a.is_view:
                t = a.value.type
                shp = _tuple_src([self.launcher_le(e) for e in t.shape])
                dev = f"{devs[0]}.device" if devs else "'cuda'"
                alloc = p.workspace_allocs.get(a.name)
                init = alloc.attrs.get("init") if alloc is not None else "first_write"
                if isinstance(init, str):
                    L.append(f"    {i} = torch.empty({shp}, dtype=torch.{TORCH[t.dtype]}, device={dev})  "
                             f"# compiler-private workspace")
                else:
                    L.append(f"    {i} = torch.full({shp}, {_py_number(init, t.dtype)}, dtype=torch.{TORCH[t.dtype]}, "
                             f"device={dev})  # compiler-private workspace, init {init}")
            elif a.producer is not None:
                L.append(f"    {i} = {self.launcher_le(a.producer)}  # compiler-private scalar")
        L.append(f"    _grid = {self.launcher_le(k.space.grid)}")
        L.append(f"    if _grid > {ns}MAX_GRID:")
        L.append(f"        raise HardwareCapabilityUnsupported(f'{{_grid}} programs exceed the grid limit {{{ns}MAX_GRID}} "
                 f"of {p.target.name}', 'kernel {k.name}')")
        L.append("    if _grid <= 0:")
        L.append("        return")
        for local, view in self.stride_tuples:      # one stride() call per view (host time per launch)
            L.append(f"    {local} = {view}.stride()")
        if self.index_arg:
            bounds = [self.launcher_le(b) for b in p.index_bounds]
            L.append("    # 32-bit index arithmetic when the program's index bounds (ir.index_bounds) hold at this launch,")
            L.append("    # decided once per value of what the bounds read (evaluating them costs tens of us of host time)")
            key = self._index_key(p.index_bounds)
            L.extend(_wrap_def("    _key = (", key, ",)" if len(key) == 1 else ")"))
            L.append(f"    _idx = {ns}INDEX_WIDTHS.get(_key)")
            L.append("    if _idx is None:")
            if len(bounds) == 1:
                L.append(f"        _index_bound = {bounds[0]}")
            else:
                L.extend(_wrap_def("        _index_bound = max(", bounds, ")"))
            L.append(f"        _idx = tl.int32 if _index_bound < {INDEX32_LIMIT} else tl.int64")
            L.append(f"        if len({ns}INDEX_WIDTHS) >= 4096:")
            L.append(f"            {ns}INDEX_WIDTHS.clear()")
            L.append(f"        {ns}INDEX_WIDTHS[_key] = _idx")
        if self.flag_ident is not None:
            dev = f"{devs[0]}.device" if devs else "'cuda'"
            L.append(f"    {self.flag_ident} = _subscript_flags_of({dev})  # checked subscripts' flag word")
        # every argument in the signature's order (constexprs too): the direct launch passes them all
        args = [self.launch_values.get(ident, ident) for ident, _ in self.kernel_args]
        args += ["_idx"] if self.index_arg else []
        L.extend(direct_launch_lines(
            self.fn_name, f"{ns}COMPILED", args, spec_items(self.kernel_args, self.launch_values, self.index_arg),
            ["num_warps=num_warps", "num_stages=num_stages", "enable_fp_fusion=True", "**_ftz_off()"], _wrap_def))
        if self.flag_ident is not None:
            L.append(f"    _raise_subscript_errors({k.name!r}, {self.flag_ident}, {ns}CHECKS)")
        return L

    def _index_key(self, bounds: Sequence[LaunchExpr]) -> list[str]:
        """What the index bounds read, as launcher expressions: their symbols, parameters and scalars, and the
        shape and strides of every view whose metadata they read."""
        names = sorted(set().union(*(free_symbols(b) for b in bounds)))
        views = sorted(set().union(*(views_read(b) for b in bounds)))
        items = [self._launch_local(n) for n in names]
        strides = {view: local for local, view in self.stride_tuples}     # read once, before the key
        for v in views:
            view = self.arg_ident["abi:" + v]
            items += [f"{view}.shape", strides.get(view, f"{view}.stride()")]
        return items

    def _dispatch(self, specialized: "Sequence[_Printer]") -> list[str]:
        """The general launcher's hand-off to a specialization: after the general checks bound the symbols."""
        mine = {a.name: self.arg_ident["abi:" + a.name] for a in self._public()}
        specs = [sp for sp in specialized if not sp.trusted]
        variants = [sp for sp in specialized if sp.trusted]
        L = ["    # KIR specializations (SPEC IR-2): the physical kernel built for these symbol values" if specs else
             "    # size bucket variants: the tile binding the cost model chose for these sizes (BUCKET_TABLE)"]
        L.append("    if params is None and num_warps is None and num_stages is None:")
        for sp in specialized:
            theirs = [a.name for a in sp._public()]
            if sorted(theirs) != sorted(mine):
                raise AssertionError(f"{sp.spec.label} of {self.k.name} has the public ABI "
                                     f"{theirs}, the general kernel {sorted(mine)}")
        for sp in specs:
            theirs = [a.name for a in sp._public()]
            cond = " and ".join(f"{self.arg_ident['sym:' + sym]} == {val}" for sym, val in sp.spec.values)
            L.append(f"        if {cond}:")
            L.extend(_wrap_def(f"            return {sp.launch_name}(",
                               [f"{sp.arg_ident['abi:' + n]}={mine[n]}" for n in theirs], ")"))
        if variants and self.buckets is not None:
            levels = []
            for sym in self.buckets.symbols:
                local = self.arg_ident["sym:" + sym]
                levels.append(" + ".join(f"({local} >= {e})" for e in self.buckets.edges))
            L.extend(_wrap_def("        _bucket = BUCKET_TABLE.get((", levels, ",))" if len(levels) == 1 else "))"))
            for sp in variants:
                theirs = [a.name for a in sp._public()]
                L.append(f"        if _bucket == {sp.spec.index}:")
                L.extend(_wrap_def(f"            return {sp.launch_name}(",
                                   [f"{sp.arg_ident['abi:' + n]}={mine[n]}" for n in theirs], ")"))
        L.append("    num_warps = LAUNCH_OPTIONS['num_warps'] if num_warps is None else num_warps")
        L.append("    num_stages = LAUNCH_OPTIONS['num_stages'] if num_stages is None else num_stages")
        return L

    # -- regions and ops -------------------------------------------------------------------------------------
    def region_ops(self, region: Region) -> list[str]:
        """Emit a region's ops; return the variables its yield names (the terminator is not printed)."""
        out: list[str] = []
        for op in region.ops:
            if op.name == "yield":
                out = [self.var(v) for v in op.operands]
                continue
            self.op(op)
        return out

    def bind_args(self, region: Region, values: Sequence[str]) -> None:
        for a, v in zip(region.args, values):
            name = self.var(a)
            if name != v:
                self.emit(f"{name} = {v}")

    def assign(self, targets: Sequence[str], values: Sequence[str], op: Op | None = None) -> None:
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if not pairs:
            return
        if len(pairs) == 1:
            self.emit(f"{pairs[0][0]} = {pairs[0][1]}", op)
        else:
            self.emit(", ".join(t for t, _ in pairs) + " = " + ", ".join(v for _, v in pairs), op)

    def op(self, op: Op) -> None:
        from intent_eqsat.ir.spec import SPECS
        cat = SPECS[op.name].category
        h = getattr(self, "op_" + op.name, None)
        if h is None:
            h = {"unary": self.op_unary, "binary": self.op_binary}.get(cat)
        h(op)

    # values --------------------------------------------------------------------------------------------------
    def typed_const(self, value: Any, t: Type) -> str:
        lit = number_literal(value, t.dtype)
        return f"tl.full({self.shape_src(t)}, {lit}, {self.TL[t.dtype]})"

    def op_const(self, op: Op) -> None:
        self.emit(f"{self.var(op.result)} = {self.typed_const(op.attrs['value'], op.result.type)}", op)

    def op_launch(self, op: Op) -> None:
        t = op.result.type
        e = self.rt_le(op.attrs["expr"])
        if self.TL[t.dtype] != self.ix or not e.startswith("tl.cast("):
            e = f"tl.cast({e}, {self.TL[t.dtype]})"
        if isinstance(t, FragmentType):
            e = f"tl.broadcast_to({e}, {self.shape_src(t)})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    def op_range(self, op: Op) -> None:
        t = op.result.type
        n = self.const_le(t.shape[0])
        e = f"tl.arange(0, {n})"
        if t.dtype != "i32":
            e += f".to({self.TL[t.dtype]})"
        start = int(op.attrs.get("start", 0))
        if start:
            e += f" + {start}"
        self.emit(f"{self.var(op.result)} = {e}", op)

    # elementwise ----------------------------------------------------------------------------------------------
    def _ftz(self, x: str, dt: str, on: bool) -> str:
        if not on or not dtypes.is_float(dt):
            return x
        return f"{self.need('_ftz_' + dt)}({x})"

    def op_unary(self, op: Op) -> None:
        (src,) = op.operands
        dt = src.type.dtype
        ftz = bool(op.attrs.get("flush_to_zero"))
        approx = bool(op.attrs.get("approximate"))
        x = self._ftz(self.var(src), dt, ftz)
        name = op.name
        if name in ("exp", "exp2") and approx and ftz and dt == "f32" and self.p.target.triton_backend == "cuda":
            self.emit(f"{self.var(op.result)} = {self.need(f'_{name}_approx_ftz')}({self.var(src)})", op)
            return
        if not dtypes.is_float(dt):
            e = {"neg": f"-{x}", "not": f"~{x}", "abs": x if dt in dtypes.UNSIGNED_DTYPES or dt == "i1"
                 else f"tl.abs({x})", "floor": x, "ceil": x}[name]
            self.emit(f"{self.var(op.result)} = {e}", op)
            return
        if name == "neg":
            e = f"-{x}"
        elif name == "abs":
            e = f"tl.abs({x})"
        else:
            narrow = dt in ("f16", "bf16")
            w = f"{x}.to(tl.float32)" if narrow else x
            wdt = "f32" if narrow else dt
            e = self._float_fn(name, w, wdt, approx)
            if narrow:
                e = f"({e}).to({self.TL[dt]})"
        self.emit(f"{self.var(op.result)} = {self._ftz(e, dt, ftz)}", op)

    def _float_fn(self, name: str, x: str, dt: str, approx: bool) -> str:
        f64 = dt == "f64"
        if approx and name in _APPROX and not f64:
            return f"{_APPROX[name]}({x})"
        if name in ("floor", "ceil"):
            return f"tl.{name}({x})"
        if name in _LIBDEVICE:
            return f"{self.need('_' + name)}({x})"
        if name in ("tanh", "log1p", "expm1"):
            return f"{self.need('_' + name)}({x})"
        if name == "sqrt":
            return f"tl.sqrt({x})" if f64 else f"tl.sqrt_rn({x})"
        if name == "rsqrt":
            return f"(1.0 / tl.sqrt({x}))" if f64 else f"tl.div_rn(1.0, tl.sqrt_rn({x}))"
        if name == "recip":
            return f"(1.0 / {x})" if f64 or approx else f"tl.div_rn(1.0, {x})"
        if name == "sigmoid" and approx and not f64:
            return f"(1.0 / (1.0 + tl.exp(-{x})))"
        if name == "sigmoid":
            ex = f"{self.need('_exp')}(-{x})"
            return f"(1.0 / (1.0 + {ex}))" if f64 else f"tl.div_rn(1.0, 1.0 + {ex})"
        raise AssertionError(name)

    def op_binary(self, op: Op) -> None:
        a_v, b_v = op.operands
        dt = a_v.type.dtype
        ftz = bool(op.attrs.get("flush_to_zero"))
        approx = bool(op.attrs.get("approximate"))
        a, b = self._ftz(self.var(a_v), dt, ftz), self._ftz(self.var(b_v), dt, ftz)
        name = op.name
        simple = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
        if name in simple:
            e = f"{a} {simple[name]} {b}"
        elif dtypes.is_float(dt):
            narrow = dt in ("f16", "bf16")
            wa, wb = (f"{a}.to(tl.float32)", f"{b}.to(tl.float32)") if narrow else (a, b)
            if name == "div":
                e = f"({wa} / {wb})" if approx or dt == "f64" else f"tl.div_rn({wa}, {wb})"
            elif name == "rem":
                e = f"({wa} % {wb})"
            elif name in ("mod", "floordiv"):
                h = self.need("_fmod_py" if name == "mod" else "_ffloordiv_py")
                e = f"{h}({a}.to(tl.float64), {b}.to(tl.float64))" if dt != "f64" else f"{h}({a}, {b})"
                e = f"({e}).to({self.TL[dt]})" if dt != "f64" else e
                narrow = False
            elif name in ("max", "min"):       # Triton returns f32 for two 16-bit floats: back to dt (exact)
                e = f"tl.{'maximum' if name == 'max' else 'minimum'}({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"
                if narrow:
                    e = f"({e}).to({self.TL[dt]})"
                narrow = False
            elif name == "pow":
                e = f"{self.need('_pow')}({wa}, {wb})"
            else:
                raise AssertionError(name)
            if narrow and name in ("div", "rem", "pow"):
                e = f"({e}).to({self.TL[dt]})"
        else:
            unsigned = dt in dtypes.UNSIGNED_DTYPES
            if name == "div":
                e = f"{a} // {b}"
            elif name == "rem":
                e = f"{a} % {b}"
            elif name == "floordiv":
                e = f"{a} // {b}" if unsigned else f"{self.need('_floordiv')}({a}, {b})"
            elif name == "mod":
                e = f"{a} % {b}" if unsigned else f"{self.need('_mod')}({a}, {b})"
            elif name in ("max", "min"):
                if dt == "i1":
                    e = f"{a} | {b}" if name == "max" else f"{a} & {b}"
                else:
                    e = f"tl.{'maximum' if name == 'max' else 'minimum'}({a}, {b})"
            elif name == "pow":
                e = f"{self.need('_ipow')}({a}, {b}, {dtypes.BITS[dt]})"
            else:
                raise AssertionError(name)
        self.emit(f"{self.var(op.result)} = {self._ftz(e, dt, ftz)}", op)

    def op_cmp(self, op: Op) -> None:
        a, b = (self.var(v) for v in op.operands)
        self.emit(f"{self.var(op.result)} = {a} {_CMP[op.attrs['pred']]} {b}", op)

    def op_select(self, op: Op) -> None:
        c, a, b = (self.var(v) for v in op.operands)
        self.emit(f"{self.var(op.result)} = tl.where({c}, {a}, {b})", op)

    def op_cast(self, op: Op) -> None:
        src = op.operands[0]
        dst = op.result.type.dtype
        ftz = bool(op.attrs.get("flush_to_zero"))
        x = self._ftz(self.var(src), src.type.dtype, ftz)
        e = x if self.TL[src.type.dtype] == self.TL[dst] else f"{x}.to({self.TL[dst]})"
        self.emit(f"{self.var(op.result)} = {self._ftz(e, dst, ftz)}", op)

    def op_bitcast(self, op: Op) -> None:
        x = self.var(op.operands[0])
        self.emit(f"{self.var(op.result)} = {x}.to({self.TL[op.result.type.dtype]}, bitcast=True)", op)

    # shape --------------------------------------------------------------------------------------------------
    def op_broadcast(self, op: Op) -> None:
        (src,) = op.operands
        t = op.result.type
        x = self.var(src)
        dims = tuple(int(d) for d in op.attrs["dims"])
        if not isinstance(src.type, FragmentType):
            e = f"tl.broadcast_to({x}, {self.shape_src(t)})"
        else:
            order = sorted(range(len(dims)), key=lambda i: dims[i])
            if order != list(range(len(dims))):
                x = f"tl.permute({x}, {_tuple_src([str(i) for i in order])})"
            sdims = sorted(dims)
            idx = ", ".join(":" if j in sdims else "None" for j in range(t.rank))
            if t.rank != len(dims):
                x = f"{x}[{idx}]"
            src_static = [self.static(src.type)[i] for i in order]
            expanded = [1] * t.rank
            for j, n in zip(sdims, src_static):
                expanded[j] = n
            e = x if tuple(expanded) == self.static(t) else f"tl.broadcast_to({x}, {self.shape_src(t)})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    def op_reshape(self, op: Op) -> None:
        (src,) = op.operands
        x = self.var(src)
        t = op.result.type
        if not isinstance(src.type, FragmentType):
            e = f"tl.broadcast_to({x}, {self.shape_src(t)})"
        elif not isinstance(t, FragmentType):
            e = self._pick(x, src.type, [0] * src.type.rank)
        else:
            e = f"tl.reshape({x}, {self.shape_src(t)})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    def op_transpose(self, op: Op) -> None:
        perm = _tuple_src([str(int(i)) for i in op.attrs["perm"]])
        self.emit(f"{self.var(op.result)} = tl.permute({self.var(op.operands[0])}, {perm})", op)

    def op_join(self, op: Op) -> None:
        a, b = (self.var(v) for v in op.operands)
        self.emit(f"{self.var(op.result)} = tl.join({a}, {b})", op)

    def _pick(self, x: str, t: Type, index: Sequence[int]) -> str:
        """Exact extraction of one member of a fragment (a reduce with a one-hot flag)."""
        shape = self.static(t)
        numel = math.prod(shape)
        flat = 0
        for i, n in zip(index, shape):
            flat = flat * n + int(i)
        xf = f"tl.reshape({x}, ({numel},))" if len(shape) != 1 else x
        return f"tl.reduce(({xf}, tl.arange(0, {numel}) == {flat}), 0, {self.need('_cmb_pick')})[0]"

    def op_extract(self, op: Op) -> None:
        src = op.operands[0]
        self.emit(f"{self.var(op.result)} = {self._pick(self.var(src), src.type, op.attrs['index'])}", op)

    def op_tuple(self, op: Op) -> None:
        self.emit(f"{self.var(op.result)} = {_tuple_src([self.var(v) for v in op.operands])}", op)

    op_record = op_tuple

    def op_get(self, op: Op) -> None:
        self.emit(f"{self.var(op.result)} = {self.var(op.operands[0])}[{int(op.attrs['index'])}]", op)

    def op_field(self, op: Op) -> None:
        i = self.p.records[op.operands[0].name].index(op.attrs["name"])
        self.emit(f"{self.var(op.result)} = {self.var(op.operands[0])}[{i}]", op)

    # accesses -----------------------------------------------------------------------------------------------
    def _view_of(self, op: Op) -> AbiArg:
        res = op.operands[0]
        if res.name in self.abi:
            return self.abi[res.name]
        alloc = self.p.buffers[res.name]                       # a workspace buffer: its private view
        return self.abi[str(alloc.attrs["arg"])]

    def _access_parts(self, op: Op) -> tuple[str, list[Value], Value | None, tuple[int, ...]]:
        """(pointer expression, payload values, validity, access shape)."""
        valid = bool(op.attrs.get("valid"))
        n_coords, n_payload = access_layout(op.name, len(op.operands), valid)
        coords = op.operands[1:1 + n_coords]
        payload = op.operands[1 + n_coords:1 + n_coords + n_payload]
        vld = op.operands[-1] if valid else None
        a = self._view_of(op)
        terms = []
        if a.offset != Const(0):
            terms.append(self.rt_le(a.offset))
        for i, c in enumerate(coords):
            cv = self.var(c)
            if c.type.dtype not in ("index", "i64"):
                cv = f"{cv}.to(tl.int64)"
            if a.strides is not None:
                s = a.strides[i]
                if s == Const(0):
                    continue
                terms.append(cv if s == Const(1) else f"{cv} * {self.rt_le(s)}")
            else:
                terms.append(f"{cv} * {self.arg_ident[f'stride:{a.name}:{i}']}")
        base = self.arg_ident["abi:" + a.name]
        ptr = base + (" + " + " + ".join(terms) if terms else "")
        shapes = [self.static(v.type) for v in list(coords)]
        pshape = _bshape(shapes)
        all_shapes = shapes + [self.static(v.type) for v in payload] + ([self.static(vld.type)] if vld else [])
        if op.results and isinstance(op.results[0].type, FragmentType):
            all_shapes.append(self.static(op.results[0].type))
        ashape = _bshape(all_shapes)
        if pshape != ashape:
            ptr = f"tl.broadcast_to({ptr}, {_tuple_src([str(n) for n in ashape])})"
        return ptr, list(payload), vld, ashape

    def _checked_mask(self, op: Op, vld: Value | None, ashape: tuple[int, ...]) -> str | None:
        """For an access with ``checked`` axes: emit the in-range test of those coordinates and the flag update of
        the members outside it (valid ones only), and return the access's mask (valid and in range). None for an
        unchecked access: its mask is its validity."""
        axes = op.attrs.get("checked")
        if not axes or self.flag_ident is None:
            return None
        valid = bool(op.attrs.get("valid"))
        n_coords, _ = access_layout(op.name, len(op.operands), valid)
        coords = op.operands[1:1 + n_coords]
        view = self._view_of(op).value.type
        tests = []
        for ax in axes:
            c = self.var(coords[ax])
            if coords[ax].type.dtype not in ("index", "i64"):
                c = f"{c}.to(tl.int64)"
            tests.append(f"({c} >= 0) & ({c} < {self.rt_le(view.shape[ax])})")
        ok = self.fresh("inrange")
        expr = " & ".join(tests)
        if ashape:
            expr = f"tl.broadcast_to({expr}, {_tuple_src([str(n) for n in ashape])})"
        self.emit(f"{ok} = {expr}", op)
        bad = f"{self.var(vld)} & ({ok} == 0)" if vld is not None else f"{ok} == 0"
        if ashape:        # one flag write per program, only when a member is outside (the common case: none)
            anybad = self.fresh("outside")
            numel = math.prod(ashape)
            self.emit(f"{anybad} = tl.reduce(tl.reshape(tl.where({bad}, 1, 0), ({numel},)), 0, "
                      f"{self.need('_cmb_max_i')})", op)
            bad = f"{anybad} > 0"
        self.emit(f"if {bad}:  # checked subscript: a member outside the view sets its bit of the flag word", op)
        self.emit(f"    tl.atomic_or({self.flag_ident}, {self.check_bits[id(op)]}, sem='relaxed', scope='gpu')")
        return f"{self.var(vld)} & {ok}" if vld is not None else ok

    def _fill(self, op: Op, dt: str) -> str:
        return number_literal(op.attrs.get("fill", 0), dt)

    def _payload(self, v: Value, dt: str) -> str:
        x = self.var(v)
        return x if self.TL[v.type.dtype] == self.TL[dt] else f"{x}.to({self.TL[dt]})"

    def op_load(self, op: Op, volatile: bool = False) -> None:
        ptr, _, vld, ashape = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        mask = self._checked_mask(op, vld, ashape) or (self.var(vld) if vld is not None else None)
        vol = ", volatile=True" if volatile else ""
        if mask is None:
            e = f"tl.load({ptr}{vol})"
        else:
            e = f"tl.load({ptr}, mask={mask}, other={self._fill(op, dt)}{vol})"
        if self.TL[dt] != self.TL[op.result.type.dtype]:
            e = f"{e}.to({self.TL[op.result.type.dtype]})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    op_gather = op_load

    def _write_mask(self, op: Op, vld: Value | None, ashape: tuple[int, ...]) -> str:
        m = self._checked_mask(op, vld, ashape) or (self.var(vld) if vld is not None else None)
        return f", mask={m}" if m is not None else ""

    def op_store(self, op: Op) -> None:
        ptr, payload, vld, ashape = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        mask = self._write_mask(op, vld, ashape)
        self.emit(f"tl.store({ptr}, {self._payload(payload[0], dt)}{mask})", op)

    op_scatter = op_store

    def op_scatter_reduce(self, op: Op) -> None:
        ptr, payload, vld, ashape = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        mask = self._write_mask(op, vld, ashape)
        self.emit(f"tl.atomic_{op.attrs['combine']}({ptr}, {self._payload(payload[0], dt)}{mask}, "
                  f"sem='relaxed', scope='gpu')", op)

    def _sem(self, op: Op) -> str:
        return f"sem={SEMS[op.attrs['order']]!r}, scope={SCOPES[op.attrs['domain']]!r}"

    def _release_fence(self, op: Op) -> None:
        """An IR atomic belongs to the program instance, so its release order covers every earlier write of the
        program (SPEC IR-6 memory order); Triton issues a scalar atomic from one thread, so the other threads'
        writes are first made to precede it with a program-wide barrier."""
        if op.attrs.get("order") in ("release", "acq_rel"):
            self.emit("tl.debug_barrier()  # the program's earlier writes precede the release")

    def op_atomic_rmw(self, op: Op) -> None:
        self._release_fence(op)
        ptr, payload, vld, ashape = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        m = self._checked_mask(op, vld, ashape) or (self.var(vld) if vld is not None else None)
        mask = f", mask={m}" if m is not None else ""
        res = self.var(op.result)
        self.emit(f"{res} = tl.atomic_{op.attrs['kind']}({ptr}, {self._payload(payload[0], dt)}{mask}, "
                  f"{self._sem(op)})", op)
        if m is not None:
            self.emit(f"{res} = tl.where({m}, {res}, {number_literal(0, dt)})")

    def op_atomic_cas(self, op: Op) -> None:
        self._release_fence(op)
        ptr, payload, vld, _ = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        res = self.var(op.result)
        call = (f"tl.atomic_cas({ptr}, {self._payload(payload[0], dt)}, {self._payload(payload[1], dt)}, "
                f"{self._sem(op)})")
        if vld is None:
            self.emit(f"{res} = {call}", op)
            return
        self.emit(f"if {self.var(vld)}:", op)
        self.ind += 1
        self.emit(f"{res} = {call}")
        self.ind -= 1
        self.emit("else:")
        self.ind += 1
        self.emit(f"{res} = {self.typed_const(0, op.result.type)}")
        self.ind -= 1

    def op_atomic_load(self, op: Op) -> None:
        ptr, _, vld, _ = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        mask = f", mask={self.var(vld)}" if vld is not None else ""
        res = self.var(op.result)
        rmw = f"tl.atomic_add({ptr}, -0.0{mask}" if dtypes.is_float(dt) else f"tl.atomic_or({ptr}, 0{mask}"
        self.emit(f"{res} = {rmw}, {self._sem(op)})  # an atomic read: RMW with the identity", op)
        if vld is not None:
            self.emit(f"{res} = tl.where({self.var(vld)}, {res}, {self._fill(op, dt)})")

    def op_atomic_store(self, op: Op) -> None:
        self._release_fence(op)
        ptr, payload, vld, _ = self._access_parts(op)
        dt = self._view_of(op).value.type.dtype
        mask = f", mask={self.var(vld)}" if vld is not None else ""
        self.emit(f"tl.atomic_xchg({ptr}, {self._payload(payload[0], dt)}{mask}, {self._sem(op)})", op)

    # buffers ------------------------------------------------------------------------------------------------
    def op_alloc(self, op: Op) -> None:
        t = op.result.type
        if t.scope == "workspace":
            self.emit(f"# %{op.result.name}: workspace buffer in the private view {op.attrs.get('arg')} "
                      f"(allocated and initialised by the launcher)", op)
            return
        init = op.attrs["init"]
        value = 0 if isinstance(init, str) else init
        note = "  # first_write: contents undefined until written" if isinstance(init, str) else ""
        self.emit(f"{self.var(op.result)} = {self.typed_const(value, t)}{note}", op)

    def _onehot(self, t: BufferType, coords: Sequence[Value]) -> str:
        shape = self.static(t)
        parts = []
        for axis, (n, c) in enumerate(zip(shape, coords)):
            r = f"tl.arange(0, {n})"
            if len(shape) > 1:
                r += "[" + ", ".join(":" if j == axis else "None" for j in range(len(shape))) + "]"
            parts.append(f"({r} == {self.var(c)})")
        e = " & ".join(parts)
        if len(shape) > 1:
            e = f"tl.broadcast_to({e}, {_tuple_src([str(n) for n in shape])})"
        return e

    def op_buffer_load(self, op: Op) -> None:
        form = self.p.buffer_access[id(op)]
        if form == "workspace":
            # other programs wrote it (ordered by the ticket's acquire: docs/gpu_ir.md); volatile keeps the read
            # out of this SM's L1, which is not coherent with the other SMs' stores
            return self.op_load(op, volatile=True)
        buf = op.operands[0]
        t = buf.type
        valid = bool(op.attrs.get("valid"))
        n_coords, _ = access_layout(op.name, len(op.operands), valid)
        coords = op.operands[1:1 + n_coords]
        b = self.var(buf)
        if form == "identity":
            e = b
        else:
            numel = math.prod(self.static(t))
            flat = f"tl.reshape({b}, ({numel},))" if t.rank != 1 else b
            hot = self._onehot(t, coords)
            hot = f"tl.reshape({hot}, ({numel},))" if t.rank != 1 else hot
            e = f"tl.reduce(({flat}, {hot}), 0, {self.need('_cmb_pick')})[0]"
        if valid:
            e = f"tl.where({self.var(op.operands[-1])}, {e}, {self._fill(op, t.dtype)})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    def op_buffer_store(self, op: Op) -> None:
        form = self.p.buffer_access[id(op)]
        if form == "workspace":
            return self.op_store(op)
        buf = op.operands[0]
        t = buf.type
        valid = bool(op.attrs.get("valid"))
        n_coords, _ = access_layout(op.name, len(op.operands), valid)
        coords = op.operands[1:1 + n_coords]
        val = self._payload(op.operands[1 + n_coords], t.dtype)
        b = self.var(buf)
        cond = self._onehot(t, coords) if form == "scalar" else None
        if valid:
            v = self.var(op.operands[-1])
            cond = v if cond is None else f"({cond}) & {v}"
        if cond is None:
            e = f"tl.broadcast_to({val}, {self.shape_src(t)})"
        else:
            e = f"tl.where({cond}, {val}, {b})"
        self.emit(f"{b} = {e}", op)

    # structured ----------------------------------------------------------------------------------------------
    def _builtin(self, comb: str, dt: str) -> str:
        if dt == "i1":
            comb = {"max": "or", "min": "and"}.get(comb, comb)
        if comb in ("max", "min"):
            comb += "_f" if dtypes.is_float(dt) else "_i"
        return comb

    @staticmethod
    def _wide(dt: str, comb: str) -> str:
        """The type a builtin reduce/scan combines in: float sums and products in f32 (f64 for f64); 16-bit float
        maxima and minima in f32 too (exact: every f16/bf16 value is an f32; Triton's NaN-propagating maximum of
        two 16-bit values is built in f32, so the 16-bit combine region fails to verify, ``tl.reduce`` asserts)."""
        if dtypes.is_float(dt) and comb in ("add", "mul"):
            return "f64" if dt == "f64" else "f32"
        if dt in ("f16", "bf16") and comb in ("max", "min"):
            return "f32"
        return dt

    def op_reduce(self, op: Op) -> None:
        axes = sorted({int(a) % max(1, v.type.rank) for v in op.operands[:1] for a in op.attrs["axes"]},
                      reverse=True)
        comb = op.attrs["combine"]
        if comb == "region":
            fn = self.combine_fn(op.regions[0], len(op.operands))
            cur = _tuple_src([self.var(v) for v in op.operands]) if len(op.operands) > 1 else \
                self.var(op.operands[0])
            for ax in axes:
                cur = f"tl.reduce({cur}, {ax}, {fn})"
            self.assign_results(op, cur)
            return
        for v, r in zip(op.operands, op.results):
            dt = v.type.dtype
            x = self.var(v)
            w = self._wide(dt, comb)
            fn = self.need("_cmb_" + self._builtin(comb, w))
            if dt != w:
                x = f"{x}.to({self.TL[w]})"
            for ax in axes:
                x = f"tl.reduce({x}, {ax}, {fn})"
            if dt != w:
                x = f"({x}).to({self.TL[dt]})"
            self.emit(f"{self.var(r)} = {x}", op)

    def assign_results(self, op: Op, expr: str) -> None:
        if len(op.results) == 1:
            self.emit(f"{self.var(op.result)} = {expr}", op)
        else:
            self.emit(", ".join(self.var(r) for r in op.results) + f" = {expr}", op)

    def combine_fn(self, region: Region, n: int) -> str:
        """A module-level @triton.jit combine function printed from a combiner region."""
        name = f"_{self.ns.strip('_') + '_' if self.ns else ''}combine_{next(self.ncombine)}"
        saved_lines, saved_ind = self.lines, self.ind
        self.lines, self.ind = [], 1
        outs = self.region_ops(region)
        body = self.lines
        self.lines, self.ind = saved_lines, saved_ind
        args = [self.var(a) for a in region.args]
        src = ["@triton.jit", f"def {name}({', '.join(args)}):"] + body
        src.append("    return " + ", ".join(outs))
        self.generated.append("\n".join(src) + "\n")
        return name

    def op_scan(self, op: Op) -> None:
        axis = int(op.attrs["axis"]) % op.operands[0].type.rank
        rev = bool(op.attrs.get("reverse"))
        excl = bool(op.attrs.get("exclusive"))
        comb = op.attrs["combine"]
        n = len(op.operands)
        ids = op.attrs["identity"]
        if comb != "region" and not excl:
            for v, r in zip(op.operands, op.results):
                dt = v.type.dtype
                x = self.var(v)
                wdt = self._wide(dt, comb)
                if wdt != dt:
                    x = f"{x}.to({self.TL[wdt]})"
                e = f"tl.associative_scan({x}, {axis}, {self.need('_cmb_' + self._builtin(comb, dt))}, " \
                    f"reverse={rev})"
                if wdt != dt:
                    e = f"({e}).to({self.TL[dt]})"
                self.emit(f"{self.var(r)} = {e}", op)
            return
        if comb != "region":                              # exclusive builtin: one triple scan per component
            for v, r, idn in zip(op.operands, op.results, ids):
                dt = v.type.dtype
                x = self.var(v)
                wdt = self._wide(dt, comb)
                if wdt != dt:
                    x = f"{x}.to({self.TL[wdt]})"
                fn = self.need("_excl_" + self._builtin(comb, dt))
                t = FragmentType(wdt, v.type.shape)
                i, e, h = self.fresh("inc"), self.fresh("exc"), self.fresh("has")
                self.emit(f"{i}, {e}, {h} = tl.associative_scan(({x}, {x}, {self.typed_const(0, t.with_dtype('i32'))}"
                          f"), {axis}, {fn}, reverse={rev})", op)
                res = f"tl.where({h} != 0, {e}, {self.typed_const(idn, t)})"
                if wdt != dt:
                    res = f"({res}).to({self.TL[dt]})"
                self.emit(f"{self.var(r)} = {res}")
            return
        fn = self.combine_fn(op.regions[0], n)
        xs = [self.var(v) for v in op.operands]
        if not excl:
            cur = _tuple_src(xs) if n > 1 else xs[0]
            self.assign_results(op, f"tl.associative_scan({cur}, {axis}, {fn}, reverse={rev})")
            return
        # exclusive region scan: generated triple combine over (inclusive..., all-but-last..., has)
        ename = f"_excl{fn}"
        ai = [f"ai{j}" for j in range(n)]
        ae = [f"ae{j}" for j in range(n)]
        bi = [f"bi{j}" for j in range(n)]
        be = [f"be{j}" for j in range(n)]
        src = ["@triton.jit", f"def {ename}({', '.join(ai + ae + ['ah'] + bi + be + ['bh'])}):",
               f"    i = {fn}({', '.join(ai + bi)})", f"    e = {fn}({', '.join(ai + be)})"]
        if n == 1:
            src.append("    return i, tl.where(bh != 0, e, ai0), ah | 1")
        else:
            outs = [f"i[{j}]" for j in range(n)] + [f"tl.where(bh != 0, e[{j}], ai{j})" for j in range(n)]
            src.append("    return " + ", ".join(outs) + ", ah | 1")
        self.generated.append("\n".join(src) + "\n")
        incs = [self.fresh("inc") for _ in range(n)]
        excs = [self.fresh("exc") for _ in range(n)]
        has = self.fresh("has")
        zero = self.typed_const(0, op.operands[0].type.with_dtype("i32"))
        self.emit(f"{', '.join(incs + excs + [has])} = tl.associative_scan({_tuple_src(xs + xs + [zero])}, {axis}, "
                  f"{ename}, reverse={rev})", op)
        for r, e, idn in zip(op.results, excs, ids):
            self.emit(f"{self.var(r)} = tl.where({has} != 0, {e}, {self.typed_const(idn, r.type)})")

    def op_argreduce(self, op: Op) -> None:
        (src,) = op.operands
        t = src.type
        axis = int(op.attrs["axis"]) % t.rank
        kind = op.attrs["kind"]
        nan = op.attrs.get("nan", "propagate")
        idx_t = op.results[1].type
        dt = t.dtype
        fn = self.need(f"_arg{kind}_{nan if dtypes.is_float(dt) else 'int'}")
        n = self.static(t)[axis]
        r = f"tl.arange(0, {n})"
        if t.rank > 1:
            r += "[" + ", ".join(":" if j == axis else "None" for j in range(t.rank)) + "]"
        idx_dt = idx_t.dtype
        if idx_dt != "i32":
            r = f"{r}.to({self.TL[idx_dt]})"
        ids = f"tl.broadcast_to({r}, {self.shape_src(t)})" if t.rank > 1 else r
        self.emit(f"{self.var(op.results[0])}, {self.var(op.results[1])} = tl.reduce(({self.var(src)}, {ids}), "
                  f"{axis}, {fn})", op)

    def op_histogram(self, op: Op) -> None:
        x_v = op.operands[0]
        t = x_v.type
        bins = self.static(op.result.type)[0]
        x = self.var(x_v)
        m = f"({x} >= 0) & ({x} < {bins})"
        if op.attrs.get("valid"):
            m = f"{m} & {self.var(op.operands[1])}"
        if isinstance(t, FragmentType) and t.rank != 1:
            numel = math.prod(self.static(t))
            x, m = f"tl.reshape({x}, ({numel},))", f"tl.reshape({m}, ({numel},))"
        elif not isinstance(t, FragmentType):
            x, m = f"tl.broadcast_to({x}, (1,))", f"tl.broadcast_to({m}, (1,))"
        e = f"tl.histogram({x}, {self.const_le(op.result.type.shape[0])}, mask={m})"
        if op.result.type.dtype != "i32":
            e = f"{e}.to({self.TL[op.result.type.dtype]})"
        self.emit(f"{self.var(op.result)} = {e}", op)

    def op_contract(self, op: Op) -> None:
        plan = self.p.contracts[id(op)]
        lhs, rhs, acc = op.operands
        a, b, c = self.var(lhs), self.var(rhs), self.var(acc)
        acc_dt = acc.type.dtype
        w = plan.work
        res = self.var(op.result)
        prec = op.attrs.get("precision", "ieee")
        if tuple(plan.lhs_perm) != tuple(range(lhs.type.rank)):
            a = f"tl.permute({a}, {_tuple_src([str(i) for i in plan.lhs_perm])})"
        if tuple(plan.rhs_perm) != tuple(range(rhs.type.rank)):
            b = f"tl.permute({b}, {_tuple_src([str(i) for i in plan.rhs_perm])})"
        cw = c if self.TL[acc_dt] == self.TL[w] else f"{c}.to({self.TL[w]})"
        if plan.form == "dot":
            e = f"tl.dot({a}, {b}, {cw}, input_precision={prec!r}, out_dtype={self.TL[w]})"
        else:
            bt, mt, kt, nt = plan.sizes
            aw = a if lhs.type.dtype == w else f"{a}.to({self.TL[w]})"
            bw = b if rhs.type.dtype == w else f"{b}.to({self.TL[w]})"
            if prec == "tf32" and w == "f32":
                aw, bw = f"{self.need('_tf32')}({aw})", f"{self.need('_tf32')}({bw})"
            a3, b3 = self.fresh("lhs"), self.fresh("rhs")
            self.emit(f"{a3} = tl.reshape({aw}, ({bt}, {mt}, {kt}))  # contract: exact expansion "
                      f"(no tl.dot form)", op)
            self.emit(f"{b3} = tl.reshape({bw}, ({bt}, {kt}, {nt}))")
            s = f"tl.reduce({a3}[:, :, :, None] * {b3}[:, None, :, :], 2, {self.need('_cmb_add')})"
            e = f"({cw} + tl.reshape({s}, {self.shape_src(acc.type)}))"
        if self.TL[acc_dt] != self.TL[w]:
            e = f"({e}).to({self.TL[acc_dt]})"
        self.emit(f"{res} = {e}", op)

    def _loop_header(self, op: Op, lb: Value, ub: Value, step: Value) -> str:
        iv = self.fresh("iv")
        self.emit(f"for {iv} in range({self.var(lb)}, {self.var(ub)}, {self.var(step)}):", op)
        return iv

    def op_region_fold(self, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        summarize, combine = op.regions
        accs = [self.fresh("acc") for _ in op.results]
        self.assign(accs, [self.var(v) for v in op.operands[3:]], op)
        iv = self._loop_header(op, lb, ub, step)
        self.ind += 1
        self.emit(f"{self.var(summarize.args[0])} = tl.cast({iv}, {self.ix})")
        s = self.region_ops(summarize)
        self.bind_args(combine, accs + s)
        out = self.region_ops(combine)
        self.assign(accs, out)
        self.ind -= 1
        self.assign([self.var(r) for r in op.results], accs)

    def op_region_scan(self, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        summarize, combine, emit_r = op.regions
        state = [self.fresh("state") for _ in op.results]
        self.assign(state, [self.var(v) for v in op.operands[3:]], op)
        iv = self._loop_header(op, lb, ub, step)
        self.ind += 1
        seg = self.fresh("seg")
        self.emit(f"{seg} = tl.cast({iv}, {self.ix})")
        self.bind_args(emit_r, [seg] + state)
        self.region_ops(emit_r)
        self.bind_args(summarize, [seg])
        s = self.region_ops(summarize)
        self.bind_args(combine, state + s)
        out = self.region_ops(combine)
        self.assign(state, out)
        self.ind -= 1
        self.assign([self.var(r) for r in op.results], state)

    # control ---------------------------------------------------------------------------------------------------
    def op_execution_group(self, op: Op) -> None:
        seg_i = int(op.attrs["segment"])
        space = self.k.space
        seg = space.segments[seg_i]
        lin = self.var(op.operands[0])
        off, ln = self.fresh("seg_off"), self.fresh("seg_len")
        self.emit(f"# execution_group segment {seg_i}: extents "
                  f"[{', '.join(format_launch_expr(e) for e in seg.extents)}] order {seg.order}", op)
        self.emit(f"{off} = {self.rt_le(space.offset(seg_i))}")
        self.emit(f"{ln} = {self.rt_le(seg.length)}")
        self.emit(f"if ({lin} >= {off}) & ({lin} < {off} + {ln}):")
        self.ind += 1
        local = self.fresh("local")
        self.emit(f"{local} = {lin} - {off}")
        region = op.regions[0]
        coords = [self.var(a) for a in region.args]
        exts = []
        for e in seg.extents:
            x = self.fresh("ext")
            self.emit(f"{x} = {self.rt_le(e)}")
            exts.append(x)
        if seg.order == "grouped":
            self._grouped_decode(seg, local, coords, exts)
        else:
            rest = local
            for i in range(len(coords) - 1, -1, -1):
                if i == 0:
                    self.emit(f"{coords[0]} = {rest}")
                else:
                    self.emit(f"{coords[i]} = {rest} % {exts[i]}")
                    nxt = self.fresh("rest")
                    self.emit(f"{nxt} = {rest} // {exts[i]}")
                    rest = nxt
        # the decoded coordinates are non-negative, so Triton's truncating // and % are floor division here
        self.region_ops(region)
        self.ind -= 1

    def _grouped_decode(self, seg, local: str, coords: list[str], exts: list[str]) -> None:
        """``core.grouped_coordinates`` spelled in Triton: the axes after the group axis row-major, then the grouped
        ordering of (rows = the axes before it, flattened; columns = the group axis, mirrored when descending)."""
        axis = seg.group_axis
        rest = local
        for i in range(len(coords) - 1, axis, -1):
            self.emit(f"{coords[i]} = {rest} % {exts[i]}")
            nxt = self.fresh("rest")
            self.emit(f"{nxt} = {rest} // {exts[i]}")
            rest = nxt
        rows = exts[0]
        if axis > 1:
            rows = self.fresh("rows")
            self.emit(f"{rows} = {' * '.join(exts[:axis])}")
        g = self.fresh("group")
        self.emit(f"{g} = {self.rt_le(seg.group_size)}")
        npg, first, gm = self.fresh("in_group"), self.fresh("first"), self.fresh("group_rows")
        self.emit(f"{npg} = {g} * {exts[axis]}")
        self.emit(f"{first} = ({rest} // {npg}) * {g}")
        self.emit(f"{gm} = tl.minimum({rows} - {first}, {g})")
        row = coords[0] if axis == 1 else self.fresh("row")
        self.emit(f"{row} = {first} + ({rest} % {npg}) % {gm}")
        col = f"({rest} % {npg}) // {gm}"
        self.emit(f"{coords[axis]} = " + (f"({exts[axis]} - 1) - {col}" if seg.descending else col))
        for i in range(axis - 1, 0, -1):
            self.emit(f"{coords[i]} = {row} % {exts[i]}")
            nxt = self.fresh("row")
            self.emit(f"{nxt} = {row} // {exts[i]}")
            row = nxt
        if axis > 1:
            self.emit(f"{coords[0]} = {row}")

    def op_if(self, op: Op) -> None:
        then_r, else_r = op.regions
        self.emit(f"if {self.var(op.operands[0])}:", op)
        for r in (then_r, else_r):
            self.ind += 1
            n = len(self.lines)
            outs = self.region_ops(r)
            self.assign([self.var(x) for x in op.results], outs)
            if len(self.lines) == n:
                self.emit("pass")
            self.ind -= 1
            if r is then_r:
                self.emit("else:")

    def op_for(self, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        body = op.regions[0]
        carried = [self.var(a) for a in body.args[1:]]
        self.assign(carried, [self.var(v) for v in op.operands[3:]], op)
        iv = self._loop_header(op, lb, ub, step)
        self.ind += 1
        self.emit(f"{self.var(body.args[0])} = tl.cast({iv}, {self.ix})")
        outs = self.region_ops(body)
        self.assign(carried, outs)
        self.ind -= 1
        self.assign([self.var(r) for r in op.results], carried)

    def op_while(self, op: Op) -> None:
        cond_r, body_r = op.regions
        self.bind_args(cond_r, [self.var(v) for v in op.operands])
        outs = self.region_ops(cond_r)
        c = self.fresh("cond")
        vals = [self.fresh("wv") for _ in op.results]
        self.assign([c] + vals, outs, op)
        self.emit(f"while {c}:")
        self.ind += 1
        self.bind_args(body_r, vals)
        new = self.region_ops(body_r)
        self.assign([self.var(a) for a in cond_r.args], new)
        outs = self.region_ops(cond_r)
        self.assign([c] + vals, outs)
        self.ind -= 1
        self.assign([self.var(r) for r in op.results], vals)


def _bshape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s):
            j = rank - len(s) + i
            out[j] = max(out[j], n)
    return tuple(out)


def _dict_src(d: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in d.items()) + "}"


def _py_number(value: Any, dtype: str) -> str:
    if dtypes.is_float(dtype):
        v = float(value)
        return f"float({str(v)!r})" if math.isinf(v) or math.isnan(v) else repr(v)
    return repr(int(value)) if dtype != "i1" else repr(bool(value))


def _wrap_def(head: str, items: Sequence[str], tail: str, width: int = 116) -> list[str]:
    one = head + ", ".join(items) + tail
    if len(one) <= width:
        return [one]
    indent = " " * (len(head) - len(head.lstrip()) + 8)
    lines = [head.rstrip()]
    cur = indent
    for i, it in enumerate(items):
        piece = it + ("," if i < len(items) - 1 else "")
        if len(cur) + len(piece) + 1 > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += piece + " "
    lines.append(cur.rstrip() + tail)
    return lines


__all__ = ["serialize", "float_literal", "number_literal", "TL", "SIG", "TORCH"]
