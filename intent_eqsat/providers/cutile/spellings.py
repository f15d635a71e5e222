"""The cuTile spelling of every shared GPU IR op (SPEC TGT-5, TGT-7, PASS-5 serializer verifier).

Every op of :data:`intent_eqsat.ir.spec.SPECS` has exactly one entry: the one spelling the serializer prints, or the
conditions under which the provider verifier (:mod:`.legalize`) rejects it, with the TGT-9 kind. A test checks the
table covers the op table exactly, so a new IR op cannot reach the serializer without a decision here.

Conventions: ``index`` is ``ct.int64``; f16/bf16 operands of transcendental functions, division, sqrt/rsqrt/recip,
float add/mul reductions and scans and contractions are computed in f32 and rounded once to the dtype (the
interpreter's semantics); ``approximate``/``flush_to_zero`` are honoured only where the cuTile function takes
``rounding_mode=APPROX`` / ``flush_to_zero=`` and the computation dtype is f32 (the flags are licences, so ignoring
them elsewhere is exact).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spelling:
    spelling: str
    rejects: str = ""


_F32 = " (f16/bf16: computed in f32, rounded once)"

SPELLINGS: dict[str, Spelling] = {
    # values ------------------------------------------------------------------------------------------------
    "const": Spelling("scalar: ct.<dtype>(v); fragment: ct.full(shape, v, ct.<dtype>) (v rounded to the dtype at "
                      "serialization)"),
    "launch": Spelling("ct.astype(<LaunchExpr: params are ct.Constant[int] kernel parameters, view shape symbols "
                       "view.shape[axis], scalars their kernel parameters; ceil_div -> ct.cdiv, // and % floor "
                       "semantics>, ct.<dtype>) (fragment result: ct.full)",
                       rejects="tuple-valued expression (provider surface)"),
    "range": Spelling("ct.arange(n, dtype=ct.<dtype>[, start=s])", rejects="rank != 1 (shared legality)"),
    # unary -------------------------------------------------------------------------------------------------
    "neg": Spelling("-x"),
    "not": Spelling("~x (bitwise on ints, logical on i1)"),
    "abs": Spelling("ct.abs(x) (identity on unsigned)"),
    "exp": Spelling("ct.exp(x[, rounding_mode=APPROX])" + _F32),
    "exp2": Spelling("ct.exp2(x[, flush_to_zero=True])" + _F32),
    "log": Spelling("ct.log(x)" + _F32),
    "log2": Spelling("ct.log2(x)" + _F32),
    "sqrt": Spelling("ct.sqrt(x[, rounding_mode=APPROX][, flush_to_zero=True])" + _F32),
    "rsqrt": Spelling("ct.rsqrt(x[, flush_to_zero=True])" + _F32),
    "sin": Spelling("ct.sin(x)" + _F32),
    "cos": Spelling("ct.cos(x)" + _F32),
    "tanh": Spelling("ct.tanh(x[, rounding_mode=APPROX])" + _F32),
    "erf": Spelling("rejected", rejects="cuTile has no erf (provider surface)"),
    "log1p": Spelling("rejected", rejects="cuTile has no log1p; log(1 + x) rounds 1 + x (provider surface)"),
    "expm1": Spelling("rejected", rejects="cuTile has no expm1; exp(x) - 1 cancels (provider surface)"),
    "sigmoid": Spelling("ct.truediv(1, 1 + ct.exp(-x))" + _F32),
    "floor": Spelling("ct.floor(x) (identity on integers)"),
    "ceil": Spelling("ct.ceil(x) (identity on integers)"),
    "recip": Spelling("ct.truediv(1, x)" + _F32),
    # binary ------------------------------------------------------------------------------------------------
    "add": Spelling("a + b (ct.add with flags)"), "sub": Spelling("a - b (ct.sub with flags)"),
    "mul": Spelling("a * b (ct.mul with flags)"),
    "div": Spelling("floats: ct.truediv(a, b[, rounding_mode=APPROX])" + _F32 + "; signed ints: a // b plus 1 "
                    "where the remainder is non-zero and the signs differ (truncation); unsigned: a // b"),
    "rem": Spelling("ints: r = a % b; ct.where((r != 0) & ((r < 0) != (a < 0)), r - b, r) (C remainder)",
                    rejects="floats: cuTile spells only the Python modulo, C fmod has no exact form (provider "
                            "surface)"),
    "mod": Spelling("ints: a % b (floor semantics)",
                    rejects="floats: cuTile's float % differs from NumPy's in rounding and the sign of zero "
                            "(provider surface)"),
    "floordiv": Spelling("ints: a // b (floor semantics)",
                         rejects="floats: floor(a / b) is not NumPy's floor_divide (provider surface)"),
    "max": Spelling("floats: ct.maximum(a, b, propagate_nan=True); ints: ct.maximum(a, b); i1: a | b"),
    "min": Spelling("floats: ct.minimum(a, b, propagate_nan=True); ints: ct.minimum(a, b); i1: a & b"),
    "pow": Spelling("floats: a ** b" + _F32, rejects="integers: cuTile has no integer power (provider surface)"),
    "and": Spelling("a & b"), "or": Spelling("a | b"), "xor": Spelling("a ^ b"),
    "shl": Spelling("a << b"), "shr": Spelling("a >> b (arithmetic on signed, logical on unsigned)"),
    "cmp": Spelling("a <|<=|>|>=|==|!= b (float != unordered, the others ordered: cuTile's CmpF)"),
    "select": Spelling("ct.where(c, a, b)"),
    "cast": Spelling("ct.astype(x, ct.<dtype>) (RNE; int wrap); to i1: x != 0; float->int: NaN -> 0 and "
                     "saturation made explicit with ct.where around the truncating conversion"),
    "bitcast": Spelling("ct.bitcast(x, ct.<dtype>)"),
    # shape -------------------------------------------------------------------------------------------------
    "broadcast": Spelling("ct.broadcast_to([ct.reshape]([ct.permute](x)), shape)"),
    "reshape": Spelling("ct.reshape(x, shape)"),
    "transpose": Spelling("ct.permute(x, perm)"),
    "join": Spelling("ct.cat((ct.reshape(a, shape + (1,)), ct.reshape(b, shape + (1,))), -1)"),
    "extract": Spelling("ct.reshape(ct.extract(x, index, (1,) * rank), ())"),
    "tuple": Spelling("(a, b, ...) (a Python tuple)"),
    "record": Spelling("(a, b, ...) (fields resolved statically)"),
    "get": Spelling("t[i]"),
    "field": Spelling("t[index of the field]", rejects="record not produced by a visible record op "
                                                        "(provider surface)"),
    # accesses ----------------------------------------------------------------------------------------------
    "load": Spelling("tile-space coordinates (see legalize): ct.load(view, index=(...), shape=(...)[, "
                     "padding_mode=fill]) then ct.reshape/ct.permute to the fragment; otherwise ct.gather(view, "
                     "(coords), [mask=valid, padding_value=fill])"),
    "gather": Spelling("as load"),
    "store": Spelling("tile-space coordinates: ct.store(view, index=(...), tile=ct.reshape(value, tile shape)); "
                      "otherwise ct.scatter(view, (coords), value[, mask=valid])"),
    "scatter": Spelling("as store"),
    "scatter_reduce": Spelling("ct.atomic_<add|max|min|and|or|xor>(view, (coords with invalid members moved to "
                               "index -1, which cuTile's bounds check skips), value, memory_order=RELAXED, "
                               "memory_scope=DEVICE)",
                               rejects="combine=mul, float max/min, dtypes outside cuTile's atomic table -> "
                                       "provider surface; a dtype the target's atomics lack -> hardware "
                                       "capability"),
    "atomic_rmw": Spelling("ct.atomic_<kind>(view, (coords, invalid -> -1), value, memory_order=<order>, "
                           "memory_scope=<program: BLOCK, device: DEVICE, system: SYS>); old values of invalid "
                           "members are 0 (ct.where)",
                           rejects="seq_cst, float max/min, dtypes outside cuTile's table -> provider surface; "
                                   "target atomics -> hardware capability"),
    "atomic_cas": Spelling("ct.atomic_cas(view, (coords, invalid -> -1), expected, desired, memory_order, "
                           "memory_scope); invalid members' results are 0",
                           rejects="seq_cst, dtypes outside cuTile's CAS table -> provider surface"),
    "atomic_load": Spelling("tile-space coordinates only: ct.load(..., memory_order=RELAXED|ACQUIRE, "
                            "memory_scope=...)",
                            rejects="element coordinates (cuTile's ordered loads are tile-space only), release/"
                                    "acq_rel/seq_cst order -> provider surface"),
    "atomic_store": Spelling("ct.atomic_xchg(view, (coords, invalid -> -1), value, memory_order, memory_scope) "
                             "(old value discarded)",
                             rejects="seq_cst, dtypes outside cuTile's exchange table -> provider surface"),
    "alloc": Spelling("program/iteration scope: a tile ct.full(shape, init (first_write: 0, never observed), "
                      "dtype) updated functionally; workspace: the private view argument the launcher allocates",
                      rejects="workspace without its private view argument -> provider surface"),
    "buffer_load": Spelling("identity coordinates: [ct.where(valid, buf, fill)]; all-scalar coordinates: "
                            "ct.extract at the coordinates; workspace: as load on its view",
                            rejects="other coordinate patterns -> provider surface"),
    "buffer_store": Spelling("identity coordinates: buf = ct.where(valid, value, buf) (or value); all-scalar "
                             "coordinates: one-hot ct.where over ct.arange; workspace: as store on its view",
                             rejects="other coordinate patterns -> provider surface"),
    # structured --------------------------------------------------------------------------------------------
    "reduce": Spelling("add: ct.sum(x, axes) (floats in f32/f64, rounded once); mul: ct.prod; float max/min: "
                       "ct.max/ct.min(propagate_nan=True); int max/min: ct.max/ct.min; and/or/xor and i1: "
                       "ct.reduce with a generated combiner; region: ct.reduce(tuple, axis, generated nested "
                       "combiner, identities) one axis at a time"),
    "scan": Spelling("inclusive add/mul: ct.cumsum/ct.cumprod(x, axis, reverse=) (floats in f32/f64); other "
                     "built-ins: ct.scan(x, axis, generated combiner, identity, reverse=); exclusive: ct.scan over "
                     "(all-but-last, last, position) triples with a commutative combiner",
                     rejects="combine=region: ct.scan does not specify which operand is the earlier prefix and IR "
                             "scan combiners are only associative (provider surface)"),
    "argreduce": Spelling("ct.reduce((x, ct.arange index), axis, generated combiner: larger value, ties -> lower "
                          "index, NaN per the nan rule)"),
    "contract": Spelling("ct.mma(a, b, acc) after ct.permute/ct.reshape to [B,]M,K x [B,]K,N (f16/bf16 "
                         "accumulators via f32, tf32 via ct.astype(.., ct.tfloat32), mixed operands cast to the "
                         "accumulator dtype); integer forms without an mma: acc + ct.sum(a[..., None] * b[None, "
                         "...], K) within a size bound",
                         rejects="expansion above the size bound -> provider surface; a form the target's matrix "
                                 "unit lacks -> hardware capability"),
    "scaled_contract": Spelling("rejected", rejects="ct.mma_scaled takes microscaling formats (e8m0 scales) that "
                                                    "the IR's dtypes cannot express (provider surface)"),
    "histogram": Spelling("ct.sum(ct.astype((values[None, :] == ct.arange(bins)[:, None]) & valid, ct.int32), 1) "
                          "(a cooperative compare-and-count, within a size bound)",
                          rejects="members x bins above the bound -> provider surface"),
    "region_fold": Spelling("acc = init; for seg in range(lb, ub, step): summarize body; combine body"),
    "region_scan": Spelling("state = init; for seg in range(lb, ub, step): emit body(state); summarize body; "
                            "state = combine body"),
    # control -----------------------------------------------------------------------------------------------
    "execution_group": Spelling("native grid (one row-major segment of rank <= 3): region args = "
                                "ct.astype(ct.bid(i), ct.int64); otherwise a 1-D grid and if off <= lin < off + "
                                "len: row-major (or grouped) delinearization of lin - off"),
    "if": Spelling("if c: ... else: ... (results assigned in both branches)"),
    "for": Spelling("for iv in range(lb, ub, step): carried values reassigned"),
    "while": Spelling("cond body; while c: body; cond body again (results = the cond region's values)"),
    "yield": Spelling("assignment of the parent's carried/result variables"),
}

__all__ = ["SPELLINGS", "Spelling"]
