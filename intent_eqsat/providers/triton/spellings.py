"""The Triton spelling of every shared GPU IR op (SPEC TGT-4, TGT-7, PASS-5 serializer verifier).

Every op of :data:`intent_eqsat.ir.spec.SPECS` has exactly one entry: the one spelling the serializer prints, or the
conditions under which the provider verifier rejects it (``rejects``), with the TGT-9 kind. A test checks the table
covers the op table exactly, so a new IR op cannot reach the serializer without a decision here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spelling:
    spelling: str
    rejects: str = ""


_P = "precise (approximate=false): "
_A = "; approximate=true: "

SPELLINGS: dict[str, Spelling] = {
    # values ------------------------------------------------------------------------------------------------
    "const": Spelling("tl.full(shape|(), value rounded to the dtype at serialization, tl.<dtype>)"),
    "launch": Spelling("tl.cast(<LaunchExpr over kernel args, leaves cast to the index dtype; floor div/mod/"
                       "ceil_div via _floordiv/_mod/_ceildiv helpers>, tl.<dtype>)",
                       rejects="tuple-valued expression (provider surface)"),
    "range": Spelling("tl.arange(0, N).to(<index dtype>) [+ start]", rejects="rank != 1 (shared legality)"),
    # unary -------------------------------------------------------------------------------------------------
    "neg": Spelling("-x"),
    "not": Spelling("~x (bitwise on ints, logical on i1)"),
    "abs": Spelling("tl.abs(x) (identity on unsigned)"),
    "exp": Spelling(_P + "libdevice.exp (interpreter: tl.exp)" + _A + "tl.exp; approximate and flush_to_zero, f32, "
                    "CUDA: PTX ex2.approx.ftz.f32 of x * log2(e) (tl.inline_asm_elementwise; interpreter: tl.exp, "
                    "subnormal results flushed)"),
    "exp2": Spelling(_P + "libdevice.exp2 (interpreter: tl.exp2)" + _A + "tl.exp2; approximate and flush_to_zero, "
                     "f32, CUDA: PTX ex2.approx.ftz.f32 (interpreter: tl.exp2, subnormal results flushed)"),
    "log": Spelling(_P + "libdevice.log (interpreter: tl.log)" + _A + "tl.log"),
    "log2": Spelling(_P + "libdevice.log2 (interpreter: tl.log2)" + _A + "tl.log2"),
    "sqrt": Spelling(_P + "tl.sqrt_rn (f64: tl.sqrt, IEEE)" + _A + "tl.sqrt"),
    "rsqrt": Spelling(_P + "tl.div_rn(1, tl.sqrt_rn(x)) (f64: 1/tl.sqrt)" + _A + "tl.rsqrt"),
    "sin": Spelling(_P + "libdevice.sin (interpreter: tl.sin)" + _A + "tl.sin"),
    "cos": Spelling(_P + "libdevice.cos (interpreter: tl.cos)" + _A + "tl.cos"),
    "tanh": Spelling("libdevice.tanh (interpreter: float64 formula)"),
    "erf": Spelling("libdevice.erf (interpreter: tl.erf)"),
    "log1p": Spelling("libdevice.log1p (interpreter: u = 1 + x; x where u == 1, else log(u) * x / (u - 1))"),
    "expm1": Spelling("libdevice.expm1 (interpreter: u = exp(x); x where u == 1, -1 where u - 1 == -1, "
                      "else (u - 1) * x / log(u))"),
    "sigmoid": Spelling(_P + "tl.div_rn(1, 1 + exp(-x)) with the precise exp" + _A + "1 / (1 + tl.exp(-x))"),
    "floor": Spelling("tl.floor (identity on integers)"),
    "ceil": Spelling("tl.ceil (identity on integers)"),
    "recip": Spelling(_P + "tl.div_rn(1, x) (f64: 1 / x)" + _A + "1 / x"),
    # f16/bf16 transcendental/division/sqrt: computed in f32 with the spelling above, rounded once to the dtype.
    # binary ------------------------------------------------------------------------------------------------
    "add": Spelling("a + b"), "sub": Spelling("a - b"), "mul": Spelling("a * b"),
    "div": Spelling("floats " + _P + "tl.div_rn (f64: a / b)" + _A + "a / b; ints: a // b (truncating)"),
    "rem": Spelling("a % b (C fmod / srem: sign of the dividend)"),
    "mod": Spelling("ints: _mod (floor semantics; unsigned: a % b); floats: _fmod_py in float64 (NumPy/Python)"),
    "floordiv": Spelling("ints: _floordiv (unsigned: a // b); floats: _ffloordiv_py in float64 (NumPy/Python)"),
    "max": Spelling("floats: tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL); ints: tl.maximum; i1: a | b"),
    "min": Spelling("floats: tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL); ints: tl.minimum; i1: a & b"),
    "pow": Spelling("floats: libdevice.pow (interpreter: float64 exp2/log2 with C99 special cases); "
                    "ints: _ipow (square and multiply, wrapping)"),
    "and": Spelling("a & b"), "or": Spelling("a | b"), "xor": Spelling("a ^ b"),
    "shl": Spelling("a << b"), "shr": Spelling("a >> b (arithmetic on signed, logical on unsigned)"),
    "cmp": Spelling("a <|<=|>|>=|==|!= b (float != is unordered, the others ordered)"),
    "select": Spelling("tl.where(c, a, b)"),
    "cast": Spelling("x.to(tl.<dtype>) (RNE between floats, truncating float->int, x != 0 for i1)"),
    "bitcast": Spelling("x.to(tl.<dtype>, bitcast=True)"),
    # shape -------------------------------------------------------------------------------------------------
    "broadcast": Spelling("[tl.permute] + x[None/:, ...] + tl.broadcast_to(., shape) (scalar: tl.broadcast_to)"),
    "reshape": Spelling("tl.reshape(x, shape)"),
    "transpose": Spelling("tl.permute(x, perm)"),
    "join": Spelling("tl.join(a, b)"),
    "extract": Spelling("tl.reduce((flat x, flat index == i), 0, _cmb_pick)[0]"),
    "tuple": Spelling("(a, b, ...) (a Python tuple)"),
    "record": Spelling("(a, b, ...) (fields resolved statically)"),
    "get": Spelling("t[i]"),
    "field": Spelling("t[index of the field]", rejects="record not produced by a visible record op"),
    # accesses ----------------------------------------------------------------------------------------------
    "load": Spelling("tl.load(view + offset + sum(coord_i * stride_i), mask=valid, other=fill)"),
    "gather": Spelling("tl.load(view + offset + sum(coord_i * stride_i), mask=valid, other=fill)"),
    "store": Spelling("tl.store(view + offset + sum(coord_i * stride_i), value, mask=valid)"),
    "scatter": Spelling("tl.store(view + offset + sum(coord_i * stride_i), value, mask=valid)"),
    "scatter_reduce": Spelling("tl.atomic_<add|max|min|and|or|xor>(ptr, value, mask, sem='relaxed', scope='gpu')",
                               rejects="combine=mul, float max/min (Triton's float atomics lose NaN) -> provider "
                                       "surface; a dtype the target's atomics lack -> hardware capability"),
    "atomic_rmw": Spelling("tl.atomic_<kind>(ptr, value, mask, sem=<order>, scope=<program:cta, device:gpu, "
                           "system:sys>); invalid lanes return 0",
                           rejects="seq_cst, float max/min -> provider surface; dtype -> hardware capability"),
    "atomic_cas": Spelling("tl.atomic_cas(ptr, cmp, val, sem, scope) (scalar validity: an if)",
                           rejects="fragment validity (tl.atomic_cas has no mask), seq_cst -> provider surface"),
    "atomic_load": Spelling("tl.atomic_or(ptr, 0) on ints / tl.atomic_add(ptr, -0.0) on floats, then "
                            "tl.where(valid, old, fill)"),
    "atomic_store": Spelling("tl.atomic_xchg(ptr, value, mask, sem, scope)"),
    "alloc": Spelling("program/iteration scope: tl.full(shape, init, dtype) updated functionally; workspace: the "
                      "private view the launcher allocates (and fills with init)",
                      rejects="workspace without an ABI argument -> provider surface"),
    "buffer_load": Spelling("identity coordinates: tl.where(valid, buf, fill); scalar coordinates: one-hot "
                            "pick-reduce; workspace: tl.load",
                            rejects="other coordinate patterns -> provider surface"),
    "buffer_store": Spelling("identity coordinates: buf = tl.where(valid, value, buf); scalar coordinates: "
                             "one-hot where; workspace: tl.store",
                             rejects="other coordinate patterns -> provider surface"),
    # structured --------------------------------------------------------------------------------------------
    "reduce": Spelling("tl.reduce(x, axis, _cmb_<op>) (float add/mul accumulate in f32|f64 then .to(dtype); "
                       "float max/min propagate NaN; ints in their own dtype); "
                       "region: tl.reduce(tuple, axis, generated @triton.jit combine); several axes one by one"),
    "scan": Spelling("tl.associative_scan(x, axis, _cmb_<op> | generated combine, reverse=) (float add/mul in "
                     "f32|f64 then .to(dtype)); exclusive: associative_scan over "
                     "(inclusive, all-but-last, has-prefix) triples, then tl.where(has, prefix, identity)"),
    "argreduce": Spelling("tl.reduce((x, index), axis, generated combine: ties lowest index, NaN propagate/ignore)"),
    "contract": Spelling("tl.dot(a, b, acc, input_precision=ieee|tf32, out_dtype=f32|i32) (+ tl.permute to "
                         "[B,]M,K x [B,]K,N; f16/bf16 accumulators via f32 and one rounding); otherwise the exact "
                         "expansion acc + tl.reduce(a[..., None] * b[None, ...], K, _cmb_add) in the accumulator dtype",
                         rejects="tf32 where the provider has no tf32 (hip), expansion above the size bound -> "
                                 "provider surface; operand dtype the target's matrix unit lacks -> hardware"),
    "scaled_contract": Spelling("rejected", rejects="no faithful tl.dot_scaled form for the IR's scale dtypes "
                                                    "(provider surface)"),
    "histogram": Spelling("tl.histogram(flat x, bins, mask=flat valid & (x >= 0) & (x < bins))"),
    "region_fold": Spelling("acc = init; for seg in range(lb, ub, step): summarize body; combine body"),
    "region_scan": Spelling("state = init; for seg in range(lb, ub, step): emit body(state); summarize body; "
                            "state = combine body"),
    # control -----------------------------------------------------------------------------------------------
    "execution_group": Spelling("if off <= lin < off + len: row-major (or grouped) decode of lin - off"),
    "if": Spelling("if c: ... else: ... (results assigned in both branches)"),
    "for": Spelling("for _iv in range(lb, ub, step): iv = tl.cast(_iv, <index dtype>); carried values reassigned"),
    "while": Spelling("cond body; while c: body; cond body again (results = the cond region's values)"),
    "yield": Spelling("assignment of the parent's carried/result variables"),
}

__all__ = ["SPELLINGS", "Spelling"]
