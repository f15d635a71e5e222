"""Spelling coverage of the cuTile provider: a zoo of kernels that together use every op the provider spells
(elementwise with approximate/FTZ flags and explicit float->int saturation, shape ops, every reduce/scan/argreduce
form it accepts, contracts as batched/permuted/int8/tf32/f16-accumulator ct.mma and the exact int expansion,
histogram, buffers, workspace views, all atomics with validity, if/while/region loops), plus the provider test
programs of ``tests/interp/programs.py``. Each kernel exports to TileIR bytecode for sm_90 or is rejected with the
expected Unsupported kind. When a ``tileiras`` (>= 13.4, with libnvvm and a matching ptxas) is on PATH, the bytecode
is also compiled to an sm_90 cubin -- the check that found TileIR's i32-only ``extract`` indices.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from intent_eqsat.ir import parse_module
from intent_eqsat.providers.cutile import TILEIR_MAGIC, export, serialize
from intent_eqsat.providers.errors import ProviderSurfaceUnsupported

cuda_tile = pytest.importorskip("cuda.tile")

ZOO = """module target "sm90" {
  options {numerics = source, online_reduction = true, optimization_remarks = false}
  param B: i64 = 16 in [16, 32]
  kernel @elementwise origin zoo.elementwise {
    abi {
      %X: view<f32, [B]> read
      %H: view<f16, [B]> read
      %I: view<i32, [B]> read
      %U: view<u8, [B]> read
      %OF: view<f32, [B]> write
      %OH: view<bf16, [B]> write
      %OI: view<i32, [B]> write
      %OB: view<i1, [B]> write
      %n: i32
    }
    space {
      segment [1] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
      %i = range() : frag<index, [B]>
      %x = load(%X, %i) : frag<f32, [B]>
      %h = load(%H, %i) : frag<f16, [B]>
      %a = load(%I, %i) : frag<i32, [B]>
      %u = load(%U, %i) : frag<u8, [B]>
      %e1 = exp(%h) : frag<f16, [B]>
      %e2 = exp2(%x) {flush_to_zero = true} : frag<f32, [B]>
      %e3 = sqrt(%x) {approximate = true} : frag<f32, [B]>
      %e4 = rsqrt(%x) : frag<f32, [B]>
      %e5 = log(%x) : frag<f32, [B]>
      %e6 = log2(%x) : frag<f32, [B]>
      %e7 = sin(%x) : frag<f32, [B]>
      %e8 = cos(%x) : frag<f32, [B]>
      %e9 = tanh(%x) : frag<f32, [B]>
      %e10 = sigmoid(%h) : frag<f16, [B]>
      %e11 = recip(%x) : frag<f32, [B]>
      %e12 = floor(%x) : frag<f32, [B]>
      %e13 = ceil(%x) : frag<f32, [B]>
      %e14 = abs(%u) : frag<u8, [B]>
      %e15 = abs(%x) : frag<f32, [B]>
      %e16 = neg(%x) : frag<f32, [B]>
      %b1 = div(%a, %a) : frag<i32, [B]>
      %b2 = rem(%a, %a) : frag<i32, [B]>
      %b3 = mod(%a, %a) : frag<i32, [B]>
      %b4 = floordiv(%a, %a) : frag<i32, [B]>
      %b5 = max(%x, %x) : frag<f32, [B]>
      %b6 = min(%a, %a) : frag<i32, [B]>
      %b7 = pow(%x, %x) : frag<f32, [B]>
      %b8 = and(%a, %a) : frag<i32, [B]>
      %b9 = or(%a, %a) : frag<i32, [B]>
      %b10 = xor(%a, %a) : frag<i32, [B]>
      %b11 = shl(%a, %a) : frag<i32, [B]>
      %b12 = shr(%a, %a) : frag<i32, [B]>
      %b13 = div(%h, %h) : frag<f16, [B]>
      %b14 = sub(%x, %x) {flush_to_zero = true} : frag<f32, [B]>
      %b15 = div(%u, %u) : frag<u8, [B]>
      %c1 = cmp(%x, %x) {pred = ne} : frag<i1, [B]>
      %c2 = cmp(%a, %a) {pred = ge} : frag<i1, [B]>
      %c3 = max(%c1, %c2) : frag<i1, [B]>
      %c4 = not(%c3) : frag<i1, [B]>
      %s1 = select(%c4, %x, %e2) : frag<f32, [B]>
      %k1 = cast(%x) : frag<i32, [B]>
      %k2 = cast(%h) : frag<u8, [B]>
      %k3 = cast(%x) : frag<i1, [B]>
      %k4 = cast(%c4) : frag<f32, [B]>
      %k5 = cast(%x) : frag<bf16, [B]>
      %k6 = cast(%a) : frag<f16, [B]>
      %k7 = bitcast(%x) : frag<i32, [B]>
      %nn = launch() {expr = $(n + 1)} : i32
      %nb0 = launch() {expr = $(n * 2)} : i32
      %nb = broadcast(%nb0) {dims = []} : frag<i32, [B]>
      %half = const() {value = 0.1} : f16
      %t1 = add(%e1, %half) : frag<f16, [B]>
      %t2 = cast(%t1) : frag<f32, [B]>
      %t3 = add(%t2, %s1) : frag<f32, [B]>
      %t4 = add(%t3, %k4) : frag<f32, [B]>
      %t5 = add(%k1, %k7) : frag<i32, [B]>
      %t6 = add(%t5, %nb) : frag<i32, [B]>
      %t7 = add(%t6, %nn) : frag<i32, [B]>
      store(%OF, %i, %t4)
      store(%OH, %i, %k5)
      store(%OI, %i, %t7)
      store(%OB, %i, %k3)
      yield()
      }
      yield()
    }
  }
  kernel @shapes origin zoo.shapes {
    abi {
      %X: view<f32, [4, 8]> read
      %O: view<f32, [8, 4, 2]> write
      %S: view<f32, [4]> write
    }
    space {
      segment [1] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
      %r4 = range() : frag<index, [4]>
      %r8 = range() : frag<index, [8]>
      %rr = broadcast(%r4) {dims = [0]} : frag<index, [4, 8]>
      %cc = broadcast(%r8) {dims = [1]} : frag<index, [4, 8]>
      %x = load(%X, %rr, %cc) : frag<f32, [4, 8]>
      %xt = transpose(%x) {perm = [1, 0]} : frag<f32, [8, 4]>
      %j = join(%xt, %xt) : frag<f32, [8, 4, 2]>
      %bx = broadcast(%xt) {dims = [0, 1]} : frag<f32, [8, 4, 2]>
      %sum = add(%j, %bx) : frag<f32, [8, 4, 2]>
      %o0 = range() : frag<index, [8]>
      %o1 = range() : frag<index, [4]>
      %o2 = range() : frag<index, [2]>
      %oa = broadcast(%o0) {dims = [0]} : frag<index, [8, 4, 2]>
      %ob = broadcast(%o1) {dims = [1]} : frag<index, [8, 4, 2]>
      %oc = broadcast(%o2) {dims = [2]} : frag<index, [8, 4, 2]>
      store(%O, %oa, %ob, %oc, %sum)
      %fl = reshape(%x) : frag<f32, [32]>
      %e = extract(%fl) {index = [3]} : f32
      %tp = tuple(%e, %x) : tuple<f32, frag<f32, [4, 8]>>
      %g = get(%tp) {index = 0} : f32
      %rec = record(%g, %e) {fields = [lo, hi]} : tuple<f32, f32>
      %hi = field(%rec) {name = hi} : f32
      %y = add(%g, %hi) : f32
      %red = reduce(%xt) {axes = [0], combine = add, identity = [0.0]} : frag<f32, [4]>
      %yb = broadcast(%y) {dims = []} : frag<f32, [4]>
      %z = add(%red, %yb) : frag<f32, [4]>
      store(%S, %r4, %z)
      yield()
      }
      yield()
    }
  }
  kernel @structured origin zoo.structured {
    abi {
      %X: view<f32, [4, 16]> read
      %H: view<f16, [4, 16]> read
      %I: view<i32, [4, 16]> read
      %O: view<f32, [4, 16]> write
      %OI: view<i32, [4, 16]> write
      %V: view<f32, [4]> write
      %VI: view<i32, [4]> write
      %HB: view<i32, [8]> readwrite
    }
    space {
      segment [1] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
      %r4 = range() : frag<index, [4]>
      %r16 = range() : frag<index, [16]>
      %rr = broadcast(%r4) {dims = [0]} : frag<index, [4, 16]>
      %cc = broadcast(%r16) {dims = [1]} : frag<index, [4, 16]>
      %x = load(%X, %rr, %cc) : frag<f32, [4, 16]>
      %h = load(%H, %rr, %cc) : frag<f16, [4, 16]>
      %a = load(%I, %rr, %cc) : frag<i32, [4, 16]>
      %ra = reduce(%h) {axes = [1], combine = add, identity = [0.0]} : frag<f16, [4]>
      %rb = reduce(%a) {axes = [1], combine = mul, identity = [1]} : frag<i32, [4]>
      %rc = reduce(%x) {axes = [0, 1], combine = max, identity = [-inf]} : f32
      %rd = reduce(%a) {axes = [1], combine = xor, identity = [0]} : frag<i32, [4]>
      %bo = cmp(%a, %a) {pred = eq} : frag<i1, [4, 16]>
      %re = reduce(%bo) {axes = [1], combine = or, identity = [0]} : frag<i1, [4]>
      %rf, %rg = reduce(%x, %a) {axes = [0, 1], combine = region, identity = [0.0, 0]} : f32, i32 (%p0: f32, %p1: i32, %q0: f32, %q1: i32) {
        %s0 = add(%p0, %q0) : f32
        %s1 = max(%p1, %q1) : i32
        yield(%s0, %s1)
      }
      %sa = scan(%h) {axis = 1, combine = add, identity = [0.0]} : frag<f16, [4, 16]>
      %sb = scan(%x) {axis = 1, combine = max, identity = [-inf], reverse = true, exclusive = true} : frag<f32, [4, 16]>
      %sc = scan(%a) {axis = 1, combine = mul, identity = [1], exclusive = true} : frag<i32, [4, 16]>
      %sd = scan(%bo) {axis = 1, combine = xor, identity = [0]} : frag<i1, [4, 16]>
      %se = scan(%a) {axis = 0, combine = min, identity = [2147483647]} : frag<i32, [4, 16]>
      %av, %ai = argreduce(%a) {axis = 1, kind = min} : frag<i32, [4]>, frag<i32, [4]>
      %t1 = cast(%sa) : frag<f32, [4, 16]>
      %t2 = add(%t1, %sb) : frag<f32, [4, 16]>
      store(%O, %rr, %cc, %t2)
      %t3 = add(%sc, %se) : frag<i32, [4, 16]>
      %sdi = cast(%sd) : frag<i32, [4, 16]>
      %t4 = add(%t3, %sdi) : frag<i32, [4, 16]>
      store(%OI, %rr, %cc, %t4)
      %raf = cast(%ra) : frag<f32, [4]>
      %rcb = broadcast(%rc) {dims = []} : frag<f32, [4]>
      %rfb = broadcast(%rf) {dims = []} : frag<f32, [4]>
      %v1 = add(%raf, %rcb) : frag<f32, [4]>
      %v2 = add(%v1, %rfb) : frag<f32, [4]>
      store(%V, %r4, %v2)
      %rei = cast(%re) : frag<i32, [4]>
      %w1 = add(%rb, %rd) : frag<i32, [4]>
      %w2 = add(%w1, %rei) : frag<i32, [4]>
      %w3 = add(%w2, %av) : frag<i32, [4]>
      %w4 = add(%w3, %ai) : frag<i32, [4]>
      %rgb = broadcast(%rg) {dims = []} : frag<i32, [4]>
      %w5 = add(%w4, %rgb) : frag<i32, [4]>
      store(%VI, %r4, %w5)
      %ok = cmp(%a, %a) {pred = eq} : frag<i1, [4, 16]>
      %hist = histogram(%a, %ok) {valid = true} : frag<i32, [8]>
      %r8 = range() : frag<index, [8]>
      %old = atomic_rmw(%HB, %r8, %hist) {domain = device, kind = add, order = relaxed} : frag<i32, [8]>
      yield()
      }
      yield()
    }
  }
  kernel @contracts origin zoo.contracts {
    abi {
      %A: view<f16, [2, 32, 16]> read
      %Bm: view<f16, [16, 2, 16]> read
      %Q: view<i8, [16, 32]> read
      %R: view<i8, [32, 16]> read
      %P: view<i32, [16, 8]> read
      %T: view<f32, [16, 16]> read
      %O: view<f32, [2, 32, 16]> write
      %OI: view<i32, [16, 16]> write
      %OT: view<f16, [16, 16]> write
    }
    space {
      segment [1] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
      %r2 = range() : frag<index, [2]>
      %r8 = range() : frag<index, [8]>
      %r16 = range() : frag<index, [16]>
      %r32 = range() : frag<index, [32]>
      %a0 = broadcast(%r2) {dims = [0]} : frag<index, [2, 32, 16]>
      %a1 = broadcast(%r32) {dims = [1]} : frag<index, [2, 32, 16]>
      %a2 = broadcast(%r16) {dims = [2]} : frag<index, [2, 32, 16]>
      %a = load(%A, %a0, %a1, %a2) : frag<f16, [2, 32, 16]>
      %b0 = broadcast(%r16) {dims = [0]} : frag<index, [16, 2, 16]>
      %b1 = broadcast(%r2) {dims = [1]} : frag<index, [16, 2, 16]>
      %b2 = broadcast(%r16) {dims = [2]} : frag<index, [16, 2, 16]>
      %b = load(%Bm, %b0, %b1, %b2) : frag<f16, [16, 2, 16]>
      %acc = const() {value = 0.0} : frag<f32, [2, 32, 16]>
      %c = contract(%a, %b, %acc) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [1], rhs_contract = [0]} : frag<f32, [2, 32, 16]>
      store(%O, %a0, %a1, %a2, %c)
      %q0 = broadcast(%r16) {dims = [0]} : frag<index, [16, 32]>
      %q1 = broadcast(%r32) {dims = [1]} : frag<index, [16, 32]>
      %q = load(%Q, %q0, %q1) : frag<i8, [16, 32]>
      %s0 = broadcast(%r32) {dims = [0]} : frag<index, [32, 16]>
      %s1 = broadcast(%r16) {dims = [1]} : frag<index, [32, 16]>
      %r = load(%R, %s0, %s1) : frag<i8, [32, 16]>
      %iacc = const() {value = 0} : frag<i32, [16, 16]>
      %ic = contract(%q, %r, %iacc) {lhs_contract = [1], rhs_contract = [0]} : frag<i32, [16, 16]>
      %p0 = broadcast(%r16) {dims = [0]} : frag<index, [16, 8]>
      %p1 = broadcast(%r8) {dims = [1]} : frag<index, [16, 8]>
      %pp = load(%P, %p0, %p1) : frag<i32, [16, 8]>
      %pt = transpose(%pp) {perm = [1, 0]} : frag<i32, [8, 16]>
      %ie = contract(%pp, %pt, %ic) {lhs_contract = [1], rhs_contract = [0]} : frag<i32, [16, 16]>
      %o0 = broadcast(%r16) {dims = [0]} : frag<index, [16, 16]>
      %o1 = broadcast(%r16) {dims = [1]} : frag<index, [16, 16]>
      store(%OI, %o0, %o1, %ie)
      %t = load(%T, %o0, %o1) : frag<f32, [16, 16]>
      %tacc = const() {value = 0.0} : frag<f32, [16, 16]>
      %tc = contract(%t, %t, %tacc) {lhs_contract = [1], precision = tf32, rhs_contract = [0]} : frag<f32, [16, 16]>
      %th = cast(%tc) : frag<f16, [16, 16]>
      %hh = cast(%t) : frag<f16, [16, 16]>
      %hc = contract(%hh, %hh, %th) {lhs_contract = [0], rhs_contract = [1]} : frag<f16, [16, 16]>
      store(%OT, %o0, %o1, %hc)
      yield()
      }
      yield()
    }
  }
  kernel @memory origin zoo.memory {
    abi {
      %X: view<i32, [N]> read
      %C: view<i32, [N]> readwrite
      %F: view<f32, [N]> readwrite
      %O: view<i32, [N]> write
      private %W: view<f32, [N]> readwrite
      %n: i64
    }
    space {
      segment [ceil_div(N, 16)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
      %b = launch() {expr = $(16)} : index
      %N = launch() {expr = $(N)} : index
      %i0 = mul(%p, %b) : index
      %i0b = broadcast(%i0) {dims = []} : frag<index, [16]>
      %ri = range() : frag<index, [16]>
      %i = add(%i0b, %ri) : frag<index, [16]>
      %Nb = broadcast(%N) {dims = []} : frag<index, [16]>
      %ok = cmp(%i, %Nb) {pred = lt} : frag<i1, [16]>
      %x = atomic_load(%X, %i, %ok) {domain = device, fill = 0, order = acquire, valid = true} : frag<i32, [16]>
      %one = const() {value = 1} : frag<i32, [16]>
      %old = atomic_cas(%C, %i, %x, %one, %ok) {domain = device, order = acq_rel, valid = true} : frag<i32, [16]>
      %mx = atomic_rmw(%C, %i, %x, %ok) {domain = program, kind = max, order = release, valid = true} : frag<i32, [16]>
      %xf = cast(%x) : frag<f32, [16]>
      atomic_store(%F, %i, %xf, %ok) {domain = system, order = relaxed, valid = true}
      %buf = alloc() {init = 0} : buffer<i32, [16], program>
      buffer_store(%buf, %ri, %old, %ok) {valid = true}
      %c3 = const() {value = 3} : index
      %seven = const() {value = 7} : i32
      buffer_store(%buf, %c3, %seven)
      %bv = buffer_load(%buf, %ri) : frag<i32, [16]>
      %b3 = buffer_load(%buf, %c3) : i32
      %ws = alloc() {arg = W, init = 0.0} : buffer<f32, [N], workspace>
      buffer_store(%ws, %i, %xf, %ok) {valid = true}
      %wv = buffer_load(%ws, %i, %ok) {fill = 0.0, valid = true} : frag<f32, [16]>
      %wi = cast(%wv) : frag<i32, [16]>
      %b3b = broadcast(%b3) {dims = []} : frag<i32, [16]>
      %s1 = add(%bv, %b3b) : frag<i32, [16]>
      %s2 = add(%s1, %mx) : frag<i32, [16]>
      %s3 = add(%s2, %wi) : frag<i32, [16]>
      %c0 = const() {value = 0} : index
      %isz = cmp(%p, %c0) {pred = eq} : i1
      %r = if(%isz) : frag<i32, [16]> () {
        yield(%s3)
      } () {
        %neg = neg(%s3) : frag<i32, [16]>
        yield(%neg)
      }
      %lim = launch() {expr = $(n)} : i64
      %z = const() {value = 0} : i64
      %cnt = while(%z) : i64 (%w: i64) {
        %more = cmp(%w, %lim) {pred = lt} : i1
        yield(%more, %w)
      } (%w2: i64) {
        %one64 = const() {value = 1} : i64
        %w3 = add(%w2, %one64) : i64
        yield(%w3)
      }
      %cnti = cast(%cnt) : i32
      %cb = broadcast(%cnti) {dims = []} : frag<i32, [16]>
      %r2 = add(%r, %cb) : frag<i32, [16]>
      %is0 = cmp(%p, %c0) {pred = eq} : i1
      %unused = if(%is0) : i32 () {
        store(%O, %i, %r2, %ok) {valid = true}
        %zz = const() {value = 0} : i32
        yield(%zz)
      } () {
        %zz2 = const() {value = 1} : i32
        yield(%zz2)
      }
      yield()
      }
      yield()
    }
  }
}
"""

ZOO_KERNELS = ["elementwise", "shapes", "structured", "contracts", "memory"]


def zoo():
    return parse_module(ZOO, "zoo.gir")


def provider_programs():
    try:
        from tests.interp.programs import PROGRAMS
    except Exception:                                  # noqa: BLE001 - the shared fixture file is optional here
        return {}
    return PROGRAMS


#: provider test programs the cuTile surface rejects, and why (everything else must export)
REJECTED = {"scans": "region combiner", "ops_f32": "erf", "ops_f16": "erf"}


def tileiras_ok() -> bool:
    exe = shutil.which("tileiras")
    if exe is None:
        return False
    out = subprocess.run([exe, "--list-versions"], capture_output=True, text=True).stdout.split()
    return "13.4" in out


@pytest.mark.parametrize("kernel", ZOO_KERNELS)
def test_zoo_kernel_exports(kernel, tmp_path) -> None:
    path = export(zoo(), kernel, "sm90", None, tmp_path)
    assert path.read_bytes().startswith(TILEIR_MAGIC)


def test_zoo_spellings() -> None:
    m = zoo()
    src = {k: serialize(m, k, "sm90") for k in ZOO_KERNELS}
    ew, st, ct_, mem = src["elementwise"], src["structured"], src["contracts"], src["memory"]
    assert "ct.exp2(v_x, flush_to_zero=True)" in ew
    assert "ct.sqrt(v_x, rounding_mode=ct.RoundingMode.APPROX)" in ew
    assert "ct.astype(ct.exp(ct.astype(v_h, ct.float32)), ct.float16)" in ew           # f16 math in f32
    assert "ct.where(ct.isnan(v_k1_f) | (v_k1_f >= 2147483648.0) | (v_k1_f <= -2147483648.0), 0.0, v_k1_f)" in ew
    assert "v_k3 = v_x != 0.0" in ew
    assert "ct.maximum(v_x, v_x, propagate_nan=True)" in ew
    assert "ct.mma(v_a, ct.permute(v_b, (1, 0, 2)), v_acc)" in ct_                     # batched, permuted
    assert "ct.mma(ct.astype(v_t, ct.tfloat32), ct.astype(v_t, ct.tfloat32), v_tacc)" in ct_
    assert "ct.astype(v_th, ct.float32)), ct.float16)" in ct_                          # f16 acc via f32
    assert "ct.sum(ct.reshape(ct.astype(v_pp, ct.int32), (16, 8, 1))" in ct_           # exact int expansion
    assert "ct.cumsum(ct.astype(v_h, ct.float32), 1)" in st
    assert "reverse=True)[0]" in st and "late = k2 > k1" in st                         # exclusive scans
    assert "ct.reduce((v_x, v_a), 1, _combine_v_rf, (0.0, 0))" in st
    assert "memory_order=ct.MemoryOrder.ACQUIRE, memory_scope=ct.MemoryScope.DEVICE" in mem
    assert "ct.atomic_cas(C, (ct.where(v_ok, v_i, -1),), v_x, v_one" in mem
    assert "memory_scope=ct.MemoryScope.BLOCK" in mem and "memory_scope=ct.MemoryScope.SYS" in mem
    assert "ct.store(W, index=(v_p,), tile=v_xf)" in mem                               # workspace view
    assert "W = torch.full((s_N,), 0.0, dtype=torch.float32, device=X.device)" in mem  # launcher allocates it
    assert "while v_more:" in mem


@pytest.mark.parametrize("name", sorted(provider_programs()) or ["none"])
def test_provider_programs_export_or_are_rejected(name, tmp_path) -> None:
    progs = provider_programs()
    if not progs:
        pytest.skip("tests/interp/programs.py is not available")
    build, kernel, _, _, params = progs[name][:5]
    module = build()
    if name in REJECTED:
        with pytest.raises(ProviderSurfaceUnsupported) as err:
            serialize(module, kernel, "sm90", params)
        assert REJECTED[name] in err.value.reason
        return
    assert export(module, kernel, "sm90", params, tmp_path).read_bytes().startswith(TILEIR_MAGIC)


@pytest.mark.skipif(not tileiras_ok(), reason="no tileiras 13.4 on PATH")
def test_zoo_compiles_to_sm90_cubin(tmp_path) -> None:
    from cuda.tile.compilation import export_kernel
    from intent_eqsat.providers.cutile.export import load_source, write_source
    m = zoo()
    for kernel in ZOO_KERNELS:
        mod = load_source(write_source(serialize(m, kernel, "sm90"), kernel, tmp_path))
        out = tmp_path / f"{kernel}.cubin"
        export_kernel(mod.KERNEL, [mod.kernel_signature()], str(out), gpu_code="sm_90", output_format="cubin",
                      bytecode_version="13.3")
        assert out.stat().st_size > 0
