"""The shared GPU verifier (SPEC IR-10, PASS-5): valid programs pass; a program that breaks exactly one invariant
is rejected for that invariant, with its message and its location (kernel, op #, op name, file:line:col).

Every negative case starts from a valid program (the seed GEMM fixture or a small program below), breaks one rule
by a text substitution or an edit of the parsed module, and checks that ``collect`` reports that invariant and
nothing else, so the case really isolates one rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from intent_eqsat.errors import IntentError
from intent_eqsat.ir import VerificationError, parse_module, verify
from intent_eqsat.ir.builder import ModuleBuilder
from intent_eqsat.ir.core import Module, Op, ParamDecl, walk
from intent_eqsat.ir.launch import BinOp, Const, Sym, ceil_div
from intent_eqsat.ir.types import frag
from intent_eqsat.ir.verify import CHECKS, SHARED, STAGES, collect, needs_origin
from intent_eqsat.ir.verify_errors import PASS5_CHECKS

ROOT = Path(__file__).resolve().parents[3]
GEMM = (ROOT / "examples" / "gir" / "gemm.gir").read_text()

# A row sum with a structured reduce (one column tile: C <= BC).
ROWSUM = """\
module target "sm90" {
  param BR: i64 = 16 in [8, 16]
  param BC: i64 = 64 in [64, 128]
  kernel @rowsum origin rowsum {
    abi {
      %X: view<f32, [R, C]> read
      %Y: view<f32, [R]> write
    }
    space {
      segment [ceil_div(R, BR)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
        %br = launch() {expr = $(BR)} : index
        %nr = launch() {expr = $(R)} : index
        %nc = launch() {expr = $(C)} : index
        %r0 = mul(%p, %br) : index
        %r0b = broadcast(%r0) {dims = []} : frag<index, [BR]>
        %rr = range() : frag<index, [BR]>
        %r = add(%r0b, %rr) : frag<index, [BR]>
        %rows = broadcast(%r) {dims = [0]} : frag<index, [BR, BC]>
        %cols0 = range() : frag<index, [BC]>
        %cols = broadcast(%cols0) {dims = [1]} : frag<index, [BR, BC]>
        %nrb = broadcast(%nr) {dims = []} : frag<index, [BR, BC]>
        %ncb = broadcast(%nc) {dims = []} : frag<index, [BR, BC]>
        %okr = cmp(%rows, %nrb) {pred = lt} : frag<i1, [BR, BC]>
        %okc = cmp(%cols, %ncb) {pred = lt} : frag<i1, [BR, BC]>
        %ok = and(%okr, %okc) : frag<i1, [BR, BC]>
        %x = load(%X, %rows, %cols, %ok) {fill = 0.0, origin = rowsum.x, valid = true} : frag<f32, [BR, BC]>
        %s = reduce(%x) {axes = [1], combine = region, identity = [0.0], origin = rowsum.s} : frag<f32, [BR]> (%a: f32, %b: f32) {
          %c = add(%a, %b) : f32
          yield(%c)
        }
        %nrb1 = broadcast(%nr) {dims = []} : frag<index, [BR]>
        %okr1 = cmp(%r, %nrb1) {pred = lt} : frag<i1, [BR]>
        store(%Y, %r, %s, %okr1) {origin = rowsum.s, valid = true}
        yield()
      }
      yield()
    }
  }
}
"""

# A blocked copy through a program-private buffer with a first-write obligation.
COPYBUF = """\
module target "sm90" {
  param BLOCK: i64 = 128 in [64, 128]
  kernel @copy origin copy {
    abi {
      %X: view<f32, [N]> read
      %Y: view<f32, [N]> write
    }
    space {
      segment [ceil_div(N, BLOCK)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%p: index) {
        %bs = launch() {expr = $(BLOCK)} : index
        %n = launch() {expr = $(N)} : index
        %i0 = mul(%p, %bs) : index
        %i0b = broadcast(%i0) {dims = []} : frag<index, [BLOCK]>
        %r = range() : frag<index, [BLOCK]>
        %i = add(%i0b, %r) : frag<index, [BLOCK]>
        %nb = broadcast(%n) {dims = []} : frag<index, [BLOCK]>
        %ok = cmp(%i, %nb) {pred = lt} : frag<i1, [BLOCK]>
        %x = load(%X, %i, %ok) {fill = 0.0, origin = copy.x, valid = true} : frag<f32, [BLOCK]>
        %buf = alloc() {init = first_write, origin = copy.tmp} : buffer<f32, [BLOCK], program>
        buffer_store(%buf, %r, %x) {origin = copy.tmp}
        %y = buffer_load(%buf, %r) {origin = copy.y} : frag<f32, [BLOCK]>
        store(%Y, %i, %y, %ok) {origin = copy.y, valid = true}
        yield()
      }
      yield()
    }
  }
}
"""

# Grid-stride traversal: NPROG programs loop over the linear coordinates of the segment.
GRIDSTRIDE = """\
module target "sm90" {
  param BLOCK: i64 = 128 in [64, 128]
  param NPROG: i64 = 132 in [66, 132]
  kernel @scale origin scale {
    abi {
      %X: view<f32, [N]> read
      %Y: view<f32, [N]> write
      %alpha: f32
    }
    space {
      segment [ceil_div(N, BLOCK)] order row_major
      launch NPROG
    }
    body (%pid: index) {
      %total = launch() {expr = $(ceil_div(N, BLOCK))} : index
      %nprog = launch() {expr = $(NPROG)} : index
      for(%pid, %total, %nprog) {origin = scale} (%lin: index) {
        execution_group(%lin) {segment = 0} (%p: index) {
          %bs = launch() {expr = $(BLOCK)} : index
          %n = launch() {expr = $(N)} : index
          %i0 = mul(%p, %bs) : index
          %i0b = broadcast(%i0) {dims = []} : frag<index, [BLOCK]>
          %r = range() : frag<index, [BLOCK]>
          %i = add(%i0b, %r) : frag<index, [BLOCK]>
          %nb = broadcast(%n) {dims = []} : frag<index, [BLOCK]>
          %ok = cmp(%i, %nb) {pred = lt} : frag<i1, [BLOCK]>
          %x = load(%X, %i, %ok) {fill = 0.0, origin = scale.x, valid = true} : frag<f32, [BLOCK]>
          %y = mul(%x, %alpha) {origin = scale.y} : frag<f32, [BLOCK]>
          store(%Y, %i, %y, %ok) {origin = scale.y, valid = true}
          yield()
        }
        yield()
      }
      yield()
    }
  }
}
"""

# Two execution groups in one launch, exercising while/if, region_fold, region_scan, reduce, argreduce, scan,
# histogram, scatter_reduce and atomic_rmw.
MISC = """\
module target "sm90" {
  param B: i64 = 64 in [64, 128]
  param BINS: i64 = 16 in [16]
  kernel @misc origin misc {
    abi {
      %X: view<f32, [R, C]> read
      %I: view<i32, [N]> read
      %Y: view<f32, [R]> write
      %Z: view<i32, [R]> write
      %H: view<i32, [BINS]> readwrite
      %S: view<f32, [N]> write
      %F: view<f32, [R]> write
    }
    space {
      segment [R] order row_major
      segment [ceil_div(N, B)] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%row: index) {
        %nc = launch() {expr = $(C)} : index
        %c0 = const() {value = 0} : index
        %bb = launch() {expr = $(B)} : index
        %zero = const() {value = 0.0} : f32
        %best, %m = while(%c0, %zero) {origin = misc.w} : index, f32 (%wi: index, %wacc: f32) {
          %go = cmp(%wi, %nc) {pred = lt} : i1
          yield(%go, %wi, %wacc)
        } (%wj: index, %wa: f32) {
          %one = const() {value = 1} : index
          %nj = add(%wj, %one) : index
          %v = load(%X, %row, %wj) {origin = misc.x} : f32
          %na = add(%wa, %v) {origin = misc.acc} : f32
          yield(%nj, %na)
        }
        store(%F, %row, %m) {origin = misc.f}
        %tot = region_fold(%c0, %nc, %bb, %zero) {origin = misc.fold} : f32 (%seg: index) {
          %segb = broadcast(%seg) {dims = []} : frag<index, [B]>
          %rr = range() : frag<index, [B]>
          %cols = add(%segb, %rr) : frag<index, [B]>
          %ncb = broadcast(%nc) {dims = []} : frag<index, [B]>
          %ok = cmp(%cols, %ncb) {pred = lt} : frag<i1, [B]>
          %x = load(%X, %row, %cols, %ok) {fill = -inf, origin = misc.fx, valid = true} : frag<f32, [B]>
          %mx = reduce(%x) {axes = [0], combine = max, identity = [-inf], origin = misc.mx} : f32
          %xv, %xi = argreduce(%x) {axis = 0, kind = max, origin = misc.am} : f32, i32
          %cs = scan(%x) {axis = 0, combine = add, exclusive = true, identity = [0.0], origin = misc.cs} : frag<f32, [B]>
          yield(%mx)
        } (%acc: f32, %s: f32) {
          %c = max(%acc, %s) : f32
          yield(%c)
        }
        %pos = cmp(%tot, %zero) {pred = gt} : i1
        %sel = if(%pos) {origin = misc.if} : f32 () {
          yield(%tot)
        } () {
          yield(%zero)
        }
        %fin = region_scan(%c0, %nc, %bb, %zero) {origin = misc.rs} : f32 (%seg2: index) {
          %s2b = broadcast(%seg2) {dims = []} : frag<index, [B]>
          %rr2 = range() : frag<index, [B]>
          %cols2 = add(%s2b, %rr2) : frag<index, [B]>
          %ncb2 = broadcast(%nc) {dims = []} : frag<index, [B]>
          %ok3 = cmp(%cols2, %ncb2) {pred = lt} : frag<i1, [B]>
          %x2 = load(%X, %row, %cols2, %ok3) {fill = 0.0, origin = misc.rx, valid = true} : frag<f32, [B]>
          %sum2 = reduce(%x2) {axes = [0], combine = add, identity = [0.0], origin = misc.rsum} : f32
          yield(%sum2)
        } (%st: f32, %sm: f32) {
          %ns = add(%st, %sm) : f32
          yield(%ns)
        } (%seg3: index, %inc: f32) {
          yield()
        }
        store(%Y, %row, %sel) {origin = misc.y}
        %zi = const() {value = 0} : i32
        store(%Z, %row, %zi) {origin = misc.z}
        yield()
      }
      execution_group(%pid) {segment = 1} (%q: index) {
        %bb2 = launch() {expr = $(B)} : index
        %n = launch() {expr = $(N)} : index
        %q0 = mul(%q, %bb2) : index
        %q0b = broadcast(%q0) {dims = []} : frag<index, [B]>
        %r2 = range() : frag<index, [B]>
        %i = add(%q0b, %r2) : frag<index, [B]>
        %nb = broadcast(%n) {dims = []} : frag<index, [B]>
        %ok2 = cmp(%i, %nb) {pred = lt} : frag<i1, [B]>
        %vals = load(%I, %i, %ok2) {fill = 0, origin = misc.i, valid = true} : frag<i32, [B]>
        %h = histogram(%vals, %ok2) {origin = misc.h, valid = true} : frag<i32, [BINS]>
        %bins = range() : frag<index, [BINS]>
        scatter_reduce(%H, %bins, %h) {combine = add, origin = misc.h}
        %vf = cast(%vals) {origin = misc.sf} : frag<f32, [B]>
        %cum = scan(%vf) {axis = 0, combine = add, identity = [0.0], origin = misc.cum} : frag<f32, [B]>
        %old = atomic_rmw(%S, %i, %cum, %ok2) {domain = device, kind = add, order = relaxed, origin = misc.s, valid = true} : frag<f32, [B]>
        yield()
      }
      yield()
    }
  }
}
"""

FIXTURES = {"gemm": (GEMM, "gemm.gir", "gemm"), "rowsum": (ROWSUM, "rowsum.gir", "rowsum"),
            "copybuf": (COPYBUF, "copybuf.gir", "copy"), "gridstride": (GRIDSTRIDE, "gs.gir", "scale"),
            "misc": (MISC, "misc.gir", "misc")}


# ============================================================================================== helpers

def sub(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    """A text edit that must apply (so a fixture change cannot silently turn a case into a no-op)."""
    def edit(text: str) -> str:
        assert old in text, f"fixture no longer contains {old!r}"
        return text.replace(old, new, count)
    return edit


def resub(pattern: str, repl: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        out, n = re.subn(pattern, repl, text)
        assert n, f"fixture no longer matches {pattern!r}"
        return out
    return edit


def find_op(module: Module, pred: Callable[[Op], bool], kernel: int = 0) -> Op:
    return next(op for op in walk(module.kernels[kernel].body) if pred(op))


def op_location(text: str, module: Module, needle: str, filename: str, kernel: str) -> str:
    """The location the verifier must report for the op written on the (unique) line containing ``needle``."""
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(lines) == 1, f"{needle!r} is on {len(lines)} lines"
    line, src = lines[0]
    col = len(src) - len(src.lstrip()) + 1
    k = module.kernel(kernel)
    for i, op in enumerate(walk(k.body)):
        if op.loc is not None and (op.loc.line, op.loc.col) == (line, col):
            origin = f" from {op.origin}" if op.origin else ""
            return f"kernel {kernel}, op #{i} ({op.name}){origin} at {filename}:{line}:{col}"
    raise AssertionError(f"no op parsed at line {line}")


@dataclass(frozen=True)
class Case:
    id: str
    invariant: int | str
    message: str                                   # a regex the message must match
    at: str                                        # a needle on the blamed op's line, or "=" + exact location
    text: Callable[[str], str] | None = None
    edit: Callable[[Module], None] | None = None
    fixture: str = "gemm"
    stage: str = "shared"
    isolated: bool = True                          # collect() finds failures of this rule only

    def build(self) -> tuple[str, Module]:
        src, filename, _ = FIXTURES[self.fixture]
        text = self.text(src) if self.text else src
        module = parse_module(text, filename)
        if self.edit:
            self.edit(module)
        return text, module

    def location(self, text: str, module: Module) -> str:
        _, filename, kernel = FIXTURES[self.fixture]
        if self.at.startswith("="):
            return self.at[1:]
        return op_location(text, module, self.at, filename, kernel)


def _rename(op_pred: Callable[[Op], bool], name: str) -> Callable[[Module], None]:
    def edit(m: Module) -> None:
        find_op(m, op_pred).name = name
    return edit


def _set_attr(op_pred: Callable[[Op], bool], key: str, value) -> Callable[[Module], None]:
    def edit(m: Module) -> None:
        find_op(m, op_pred).attrs[key] = value
    return edit


def _del_attr(op_pred: Callable[[Op], bool], key: str) -> Callable[[Module], None]:
    def edit(m: Module) -> None:
        del find_op(m, op_pred).attrs[key]
    return edit


def _is(name: str, origin: str | None = None) -> Callable[[Op], bool]:
    return lambda op: op.name == name and (origin is None or op.origin == origin)


def _second_kernel(rename: str | None, origin: str | None) -> Callable[[str], str]:
    def edit(text: str) -> str:
        start = text.index("  kernel @gemm")
        end = text.rindex("}")                      # the module's closing brace
        block = text[start:end]
        if rename:
            block = block.replace("kernel @gemm origin gemm", f"kernel @{rename} origin {origin or 'gemm'}", 1)
        return text[:end] + block + text[end:]
    return edit


NARROW = "{narrowing = {kind = %s, proof = \"K %% BK == 0 (compile-time shape fact)\", source = gemm.s0.sum}, " \
         "origin = gemm.s0.sum}"

# ================================================================================================ cases

CASES = [
    # -- invariant 1: one executable body per KIR specialization ---------------------------------------------
    Case("1-duplicate-kernel-name", 1, r"kernel name 'gemm' is used by two kernels", "=kernel gemm",
         text=_second_kernel(None, None)),
    Case("1-two-bodies-one-specialization", 1, r"KIR specialization 'gemm' has two executable bodies: kernels "
         r"'gemm' and 'gemm2'", "=kernel gemm2", text=_second_kernel("gemm2", "gemm")),
    Case("1-op-outside-spec-table", 1, r"op 'matmul' is not in the spec table", "%acc_next = contract",
         edit=_rename(_is("contract"), "matmul")),
    Case("1-body-not-ending-in-yield", 1, r"the kernel body ends in execution_group, not yield",
         "execution_group(%pid)", text=sub("      yield()\n    }\n  }\n}", "    }\n  }\n}")),
    Case("1-empty-body", 1, r"the kernel body is empty", "=kernel gemm", isolated=False,
         edit=lambda m: m.kernels[0].body.ops.clear()),     # an empty body also covers nothing (invariant 2)
    # -- invariant 2: program-space and result coverage -------------------------------------------------------
    Case("2-segment-without-group", 2, r"segment 1 has 0 execution_group ops; it needs exactly one",
         "=kernel gemm, segment 1",
         text=sub("order row_major\n", "order row_major\n      segment [ceil_div(M, BM)] order row_major\n")),
    Case("2-written-view-never-written", 2, r"view %B has access readwrite but no access writes it",
         "=kernel gemm, abi %B", text=sub("%B: view<f16, [K, N]> read", "%B: view<f16, [K, N]> readwrite")),
    Case("2-group-operand-not-program-coordinate", 2,
         r"the execution_group operand %z is not the program coordinate %pid", "execution_group(%z)",
         text=sub("      execution_group(%pid)",
                  "      %z = const() {value = 0} : index\n      execution_group(%z)")),
    Case("2-grouped-order-without-group-size", 2, r"a grouped order needs a group size",
         "=kernel gemm, segment 0", text=sub("order row_major", "order grouped")),
    Case("2-grid-stride-wrong-step", 2, r"the grid-stride loop must step by the launched program count NPROG",
         "for(%pid, %total, %nprog)", fixture="gridstride",
         text=sub("%nprog = launch() {expr = $(NPROG)}", "%nprog = launch() {expr = $(BLOCK)}")),
    # -- invariant 3: legal types ----------------------------------------------------------------------------
    Case("3-load-result-dtype", 3, r"load of view<f16, \[M, K\]> gives frag<f32, \[BM, BK\]>, not a f16 value",
         "%a = load", text=sub("valid = true} : frag<f16, [BM, BK]>", "valid = true} : frag<f32, [BM, BK]>")),
    Case("3-broadcast-dims", 3, r"broadcast operand axis 0 \(extent BM\) does not fit result axis 1 "
         r"\(extent BK\)", "%am = broadcast",
         text=sub("%am = broadcast(%m) {dims = [0]}", "%am = broadcast(%m) {dims = [1]}")),
    Case("3-integer-const-not-integral", 3, r"index const 0.5 is not an integer", "%c0 = const",
         text=sub("%c0 = const() {value = 0} : index", "%c0 = const() {value = 0.5} : index")),
    Case("3-program-coordinate-not-index", 3, r"the program coordinate %pid is i32, not index", "=kernel gemm",
         text=sub("body (%pid: index)", "body (%pid: i32)")),
    Case("3-const-outside-its-dtype", 3, r"i32 const 2147483648 is outside the range of i32 \[-2147483648, "
         r"2147483647\]", "%zi = const", fixture="misc",
         text=sub("%zi = const() {value = 0} : i32", "%zi = const() {value = 2147483648} : i32")),
    # -- issue 25: integer literals beyond the signed 64-bit range (built, not parsed: the parser rejects them) -----
    Case("lit-range-start-beyond-i64", "literals", r"integer 9223372036854775808 is outside the signed 64-bit "
         r"range", "%rm = range", edit=_set_attr(_is("range"), "start", 2 ** 63)),
    Case("lit-launch-constant-beyond-i64", "literals", r"integer -9223372036854775809 is outside the signed 64-bit",
         "%bm = launch", edit=_set_attr(lambda op: op.name == "launch" and op.attrs["expr"] == Sym("BM"), "expr",
                                        BinOp("*", Sym("BM"), Const(-(2 ** 63) - 1)))),
    Case("lit-parameter-beyond-i64", "literals", r"parameter BK: integer 18446744073709551616 is outside",
         "=param BK", edit=lambda m: m.params.__setitem__(2, ParamDecl("BK", 32, (16, 32, 2 ** 64)))),
    # -- invariant 4: fragment extents are constants or declared parameters ---------------------------------
    Case("4-extent-names-shape-symbol", 4, r"extent M of %m0b: symbol 'M' is not a declared parameter",
         "%m0b = broadcast", text=resub(r"frag<(\w+), \[BM", r"frag<\1, [M")),
    Case("4-extent-reads-view-metadata", 4, r"extent dim\(A, 0\) of %m0b: view metadata is a runtime value",
         "%m0b = broadcast", text=resub(r"frag<(\w+), \[BM", r"frag<\1, [dim(A, 0)")),
    # -- invariant 5: accesses ---------------------------------------------------------------------------------
    Case("5-validated-load-without-fill", 5, r"validated load has no fill", "%a = load",
         text=sub("{fill = 0.0, origin = gemm.s0.A, valid = true}", "{origin = gemm.s0.A, valid = true}")),
    Case("5-missing-coordinate", 5, r"load of rank-2 %A has 1 coordinate\(s\); it needs one per axis",
         "%a = load", text=sub("load(%A, %am, %ak, %av)", "load(%A, %am, %av)")),
    Case("5-validity-not-i1", 5, r"validity %ak is frag<index, \[BM, BK\]>, not i1", "%a = load",
         text=sub("load(%A, %am, %ak, %av)", "load(%A, %am, %ak, %ak)")),
    Case("5-payload-dtype", 5, r"payload %acc is frag<f32, \[BM, BN\]> but %C holds f16", "store(%C",
         text=sub("store(%C, %cm, %cn, %out, %cv)", "store(%C, %cm, %cn, %acc, %cv)")),
    Case("5-fill-outside-the-view-dtype", 5, r"fill 2147483648 is outside the range of i32", "%vals = load",
         fixture="misc", text=sub("{fill = 0, origin = misc.i, valid = true}",
                                  "{fill = 2147483648, origin = misc.i, valid = true}")),
    # -- issue 25 item 5: accesses that provably leave their resource ----------------------------------------
    Case("5-unguarded-tail-load", 5, r"unguarded out-of-bounds access: member \(0, 2\) reads coordinate \(0, 2\) "
         r"of view %A with shape \(3, 2\) at the launch K=2, M=3, N=5 \(program 0\)$", "%a = load",
         text=sub("load(%A, %am, %ak, %av) {fill = 0.0, origin = gemm.s0.A, valid = true}",
                  "load(%A, %am, %ak) {origin = gemm.s0.A}")),
    Case("5-mask-off-by-one", 5, r"unguarded out-of-bounds access: member \(2,\) reads coordinate \(2,\) of view "
         r"%X with shape \(2,\) although its validity is true at the launch N=2 \(program 0\)", "%x = load",
         fixture="copybuf", text=sub("%ok = cmp(%i, %nb) {pred = lt}", "%ok = cmp(%i, %nb) {pred = le}")),
    Case("5-buffer-indexed-by-the-global-coordinate", 5, r"member \(0,\) writes coordinate \(128,\) of buffer %buf "
         r"with shape \(128,\) at the launch N=130 \(program 1\)", "buffer_store(%buf", fixture="copybuf",
         text=sub("buffer_store(%buf, %r, %x)", "buffer_store(%buf, %i, %x)")),
    Case("5-shifted-row-past-the-mask", 5, r"member \(2, 0\) reads coordinate \(3, 0\) of view %X with shape "
         r"\(3, 2\) although its validity is true", "%x = load", fixture="rowsum",
         text=lambda t: sub("%x = load(%X, %rows,", "%one = const() {value = 1} : frag<index, [BR, BC]>\n"
                            "        %rows1 = add(%rows, %one) : frag<index, [BR, BC]>\n"
                            "        %x = load(%X, %rows1,")(t)),
    # -- invariant 6: regions, yields, dominance -------------------------------------------------------------
    Case("6-use-of-loop-local-value-after-loop", 6,
         r"operand %k0 does not dominate its use: it is defined in a nested or sibling region",
         "%cMb = broadcast", text=sub("%cMb = broadcast(%M)", "%cMb = broadcast(%k0)")),
    Case("6-for-yield-count", 6, r"for body yields \(\); the carried values are \(frag<f32, \[BM, BN\]>\)",
         "=kernel gemm, op #38 (yield) at gemm.gir:54:11", text=sub("yield(%acc_next)", "yield()")),
    Case("6-combiner-arity", 6, r"reduce combiner takes 2n scalars \(f32, f32\), not \(f32\)",
         "%s = reduce", fixture="rowsum",
         text=lambda t: sub("add(%a, %b)", "add(%a, %a)")(sub("(%a: f32, %b: f32)", "(%a: f32)")(t))),
    Case("6-while-condition-not-i1", 6, r"while cond region yields \(i1 condition, values...\)",
         "yield(%wi, %wi, %wacc)", fixture="misc", text=sub("yield(%go, %wi, %wacc)", "yield(%wi, %wi, %wacc)")),
    Case("6-if-branch-yield-type", 6, r"if branch yields \(index\); the results are \(f32\)", "yield(%c0)",
         fixture="misc", text=sub("yield(%zero)", "yield(%c0)")),
    Case("6-region-scan-emit-arity", 6, r"region_scan emit region takes \(index, 1 incoming state values\)",
         "%fin = region_scan", fixture="misc", text=sub("(%seg3: index, %inc: f32)", "(%seg3: index)")),
    # -- invariant 7: buffers --------------------------------------------------------------------------------
    Case("7-first-write-loaded-before-store", 7, r"first_write buffer %buf is loaded before any store",
         "%y = buffer_load", fixture="copybuf",
         text=sub("        buffer_store(%buf, %r, %x) {origin = copy.tmp}\n"
                  "        %y = buffer_load(%buf, %r) {origin = copy.y} : frag<f32, [BLOCK]>\n",
                  "        %y = buffer_load(%buf, %r) {origin = copy.y} : frag<f32, [BLOCK]>\n"
                  "        buffer_store(%buf, %r, %x) {origin = copy.tmp}\n")),
    Case("7-init-neither-number-nor-first-write", 7,
         r"buffer %buf init 'zeros' is neither a number \(the full initial value\) nor first_write",
         "%buf = alloc", fixture="copybuf", text=sub("init = first_write", "init = zeros")),
    Case("7-workspace-without-abi-arg", 7,
         r"workspace buffer %buf must name its private view ABI argument \(arg = None\)", "%buf = alloc",
         fixture="copybuf", text=lambda t: workspace_copy(t, arg=None)),
    Case("7-iteration-buffer-outside-loop", 7, r"iteration buffer %buf is allocated outside any loop",
         "%buf = alloc", fixture="copybuf", text=sub("[BLOCK], program>", "[BLOCK], iteration>")),
    # -- invariant 8: structured ops -------------------------------------------------------------------------
    Case("8-contract-paired-extents", 8, r"contract pairs lhs axis 0 \(extent BM\) with rhs axis 0 "
         r"\(extent BK\)", "%acc_next = contract", text=sub("lhs_contract = [1]", "lhs_contract = [0]")),
    Case("8-reduce-identity-count", 8, r"reduce needs one numeric identity per component \(1\)",
         "%s = reduce", fixture="rowsum", text=sub("identity = [0.0]", "identity = [0.0, 0.0]")),
    Case("8-reduce-axis-out-of-range", 8, r"reduce axes \(2,\) must be distinct axes of a rank-2 fragment",
         "%s = reduce", fixture="rowsum", text=sub("axes = [1]", "axes = [2]")),
    Case("8-combine-region-mismatch", 8, r"reduce has a combiner region iff combine = region",
         "%s = reduce", fixture="rowsum", text=sub("combine = region", "combine = add")),
    Case("8-histogram-of-floats", 8, r"histogram counts integer values, not frag<f32, \[B\]>",
         "%h = histogram", fixture="misc",
         text=sub("%h = histogram(%vals, %ok2)", "%vfh = cast(%vals) {origin = misc.hf} : frag<f32, [B]>\n"
                  "        %h = histogram(%vfh, %ok2)")),
    Case("8-region-fold-combine-yields", 8, r"region_fold combine yields 2 value\(s\); it yields 1 value\(s\)",
         "%tot = region_fold", fixture="misc", text=sub("yield(%c)", "yield(%c, %c)")),
    # -- invariant 9: conflicting effects --------------------------------------------------------------------
    Case("9-store-into-read-view", 9, r"store writes %C, whose access mode is read", "store(%C",
         text=sub("%C: view<f16, [M, N]> write", "%C: view<f16, [M, N]> read")),
    Case("9-store-ignores-a-program-axis", 9,
         r"non-atomic store coordinates do not depend on program coordinate %pm \(axis 0 of segment 0, "
         r"extent ceil_div\(M, BM\)\)", "store(%C", text=sub("%m0 = mul(%pm, %bm)", "%m0 = mul(%pn, %bm)")),
    Case("9-aliased-non-atomic-write", 9, r"non-atomic store into %C, which may alias %A \(alias class 'ac'\)",
         "store(%C", text=lambda t: sub("%C: view<f16, [M, N]> write", "%C: view<f16, [M, N]> write alias ac")(
             sub("%A: view<f16, [M, K]> read", "%A: view<f16, [M, K]> read alias ac")(t))),
    Case("9-store-members-collide", 9, r"colliding members: two valid members of this store write element \(0, 0\) "
         r"of view %C \(plain writes need unique members\) at the launch K=2, M=3, N=5 \(program 0\)", "store(%C",
         text=sub("store(%C, %cm, %cn, %out, %cv)", "%cm0 = broadcast(%m0) {dims = []} : frag<index, [BM, BN]>\n"
                  "        store(%C, %cm0, %cn, %out, %cv)")),
    Case("9-colliding-plain-scatter", 9, r"non-atomic scatter coordinates do not depend on program coordinate "
         r"%q \(axis 0 of segment 1", "scatter(%H", fixture="misc",
         text=sub("scatter_reduce(%H, %bins, %h) {combine = add, origin = misc.h}", "scatter(%H, %bins, %h) "
                  "{origin = misc.h}")),
    # -- invariant 10: grid extents never depend on device data ---------------------------------------------
    Case("10-undeclared-symbol-in-extent", 10, r"symbol 'BQ' is not a declared parameter, a by-value ABI "
         r"scalar or a view shape symbol", "=kernel gemm, segment 0",
         text=sub("segment [ceil_div(M, BM),", "segment [ceil_div(M, BQ),")),
    Case("10-launch-op-reads-bad-axis", 10, r"dim\(A, 2\): axis out of range for a rank-2 view",
         "%K = launch", text=sub("%K = launch() {expr = $(K)}", "%K = launch() {expr = $(dim(A, 2))}")),
    Case("10-stride-of-unknown-view", 10, r"stride\(Q, 0\) names no ABI view", "=kernel gemm, abi %B",
         text=sub("%B: view<f16, [K, N]> read", "%B: view<f16, [K, N]> read strides [stride(Q, 0), 1]")),
    # -- issue 25 item 5: zero divisors and negative extents --------------------------------------------------
    Case("10-launch-expr-modulo-zero", 10, r"K % 0 divides by zero$", "%K = launch",
         text=sub("%K = launch() {expr = $(K)}", "%K = launch() {expr = $(K % 0)}")),
    Case("10-segment-ceil-div-by-zero", 10, r"ceil_div\(M, 0\) divides by zero", "=kernel gemm, segment 0",
         text=sub("segment [ceil_div(M, BM),", "segment [ceil_div(M, 0),")),
    Case("10-divisor-zero-at-a-candidate", 10, r"K // \(BK - 16\) divides by zero with BK=16", "%K = launch",
         text=sub("%K = launch() {expr = $(K)}", "%K = launch() {expr = $(K // (BK - 16))}")),
    Case("10-floor-division-by-zero-in-a-view-shape", 10, r"M // 0 divides by zero", "=kernel gemm, abi %C",
         text=sub("%C: view<f16, [M, N]>", "%C: view<f16, [M // 0 + M, N]>")),
    Case("10-negative-view-extent", 10, r"extent 0 of view %A is \(-1\); an extent is never negative",
         "=kernel gemm, abi %A", text=sub("%A: view<f16, [M, K]>", "%A: view<f16, [-1, K]>")),
    Case("10-negative-segment-extent", 10, r"extent 1 is BN - 65 = -1 at the parameter defaults; an extent is "
         r"never negative", "=kernel gemm, segment 0", text=sub("ceil_div(N, BN)] order", "BN - 65] order")),
    Case("10-float-scalar-sizes-grid", 10, r"symbol 'alpha' is not a declared parameter",
         "=kernel scale, segment 0", fixture="gridstride",
         text=lambda t: sub("segment [ceil_div(N, BLOCK)]", "segment [ceil_div(N, alpha)]")(
             sub("$(ceil_div(N, BLOCK))", "$(ceil_div(N, alpha))")(t))),
    # -- invariant 11: range narrowing -----------------------------------------------------------------------
    Case("11-all-true-keeps-iv-validity", 11, r"all_true narrowing did not rewrite the validity: load .* still "
         r"checks %av, which depends on the induction variable %k0", "%acc = for",
         text=sub("{origin = gemm.s0.sum} : frag<f32, [BM, BN]> (%k0", NARROW % "all_true"
                  + " : frag<f32, [BM, BN]> (%k0")),
    Case("11-all-false-skipped-loop-still-present", 11, r"an all_false_skipped narrowing removes the loop",
         "%acc = for", text=sub("{origin = gemm.s0.sum} : frag<f32, [BM, BN]> (%k0",
                                NARROW % "all_false_skipped" + " : frag<f32, [BM, BN]> (%k0")),
    Case("11-narrowing-without-proof", 11, r"range narrowing \(mixed\) carries no proof", "%acc = for",
         text=sub("{origin = gemm.s0.sum} : frag<f32, [BM, BN]> (%k0",
                  "{narrowing = {kind = mixed, source = gemm.s0.sum}, origin = gemm.s0.sum}"
                  " : frag<f32, [BM, BN]> (%k0")),
    # -- invariant 12: no KIR clones, role strings or side records ------------------------------------------
    Case("12-role-attribute", 12, r"attribute 'role' is a side decision record", "%acc_next = contract",
         text=sub("{lhs_contract = [1],", "{lhs_contract = [1], role = lhs_operand,")),
    Case("12-attribute-outside-schema", 12, r"attribute 'mma' is not in the schema of contract",
         "%acc_next = contract", text=sub("{lhs_contract = [1],", "{lhs_contract = [1], mma = wgmma,")),
    Case("12-kir-op-clone", 12, r"kir.matmul is a KIR op clone", "%acc_next = contract",
         edit=_rename(_is("contract"), "kir.matmul")),
    Case("12-after-edge-to-unknown-tag", 12, r"dependence edge after 'nowhere' names no earlier tagged op",
         "store(%C", text=sub("{origin = gemm.s0, valid = true}", "{after = [nowhere], origin = gemm.s0, "
                              "valid = true}")),
    # -- PASS-5 named checks ---------------------------------------------------------------------------------
    Case("p5-integer-floordiv-by-zero", "arithmetic", r"undefined integer arithmetic: integer floordiv by zero at the "
         r"launch K=2, M=3, N=5 \(program 0\)", "%m0 = floordiv",
         text=sub("%m0 = mul(%pm, %bm) : index", "%m0 = floordiv(%bm, %pm) : index")),
    Case("p5-loop-step-zero", "arithmetic", r"loop step 0 is not positive at the launch K=2, M=3, N=5 \(program 0\)",
         "%acc = for", text=sub("%bk = launch() {expr = $(BK)}", "%bk = launch() {expr = $(BK - BK)}")),
    Case("p5-launch-value-overflows-index", "arithmetic", r"LaunchExpr BK \* 4611686018427387904 is "
         r"147573952589676412928, which index cannot hold at the launch K=2, M=3, N=5 \(program 0\)",
         "%bk = launch", text=sub("%bk = launch() {expr = $(BK)}",
                                  "%bk = launch() {expr = $(BK * 4611686018427387904)}")),
    Case("p5-default-not-a-candidate", "declared_params",
         r"parameter BM default 48 is not one of its candidates \[32, 64, 128\]", "=param BM",
         text=sub("param BM: i64 = 64 in", "param BM: i64 = 48 in")),
    Case("p5-repeated-candidates", "declared_params", r"parameter BK candidates \[16, 32, 32\] repeat a value",
         "=param BK", text=sub("in [16, 32, 64]", "in [16, 32, 32]")),
    Case("p5-empty-domain", "declared_params", r"parameter BN has an empty candidate domain", "=param BN",
         edit=lambda m: m.params.__setitem__(1, ParamDecl("BN", 64, ()))),
    Case("p5-construction-origin", "construction", r"load has no origin", "%b = load", stage="construction",
         text=sub("{fill = 0.0, origin = gemm.s0.B, valid = true}", "{fill = 0.0, valid = true}")),
]


def workspace_copy(text: str, arg: str | None = "W") -> str:
    """COPYBUF with its buffer turned into a workspace slice indexed by the global coordinate (so programs own
    disjoint elements), backed by the private view %W when ``arg`` names it."""
    text = sub("%Y: view<f32, [N]> write", "%Y: view<f32, [N]> write\n      private %W: view<f32, [N]> readwrite")(
        text)
    attrs = f"arg = {arg}, " if arg else ""
    text = sub("{init = first_write, origin = copy.tmp} : buffer<f32, [BLOCK], program>",
               "{" + attrs + "init = first_write, origin = copy.tmp} : buffer<f32, [N], workspace>")(text)
    text = sub("buffer_store(%buf, %r, %x) {origin = copy.tmp}",
               "buffer_store(%buf, %i, %x, %ok) {origin = copy.tmp, valid = true}")(text)
    return sub("%y = buffer_load(%buf, %r) {origin = copy.y}",
               "%y = buffer_load(%buf, %i, %ok) {fill = 0.0, origin = copy.y, valid = true}")(text)


# ================================================================================================ tests

@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_valid_programs_verify_clean(name: str) -> None:
    src, filename, _ = FIXTURES[name]
    module = parse_module(src, filename)
    verify(module)
    verify(module, stage="construction")
    assert collect(module) == []


def test_gemm_fixture_file_verifies_clean() -> None:
    module = parse_module(GEMM, "examples/gir/gemm.gir")
    verify(module)
    assert collect(module, "construction") == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_broken_program_is_rejected_for_exactly_that_rule(case: Case) -> None:
    text, module = case.build()
    with pytest.raises(VerificationError) as info:
        verify(module, stage=case.stage)
    err = info.value
    assert err.invariant == case.invariant, err
    assert re.search(case.message, err.message), err.message
    assert err.location == case.location(text, module)
    # the case isolates its rule: every failure the verifier finds belongs to it
    found = {e.invariant for e in collect(module, case.stage)}
    assert case.invariant in found
    if case.isolated:
        assert found == {case.invariant}, [str(e) for e in collect(module, case.stage)]


def test_every_ir10_invariant_has_a_negative_case() -> None:
    covered = {c.invariant for c in CASES}
    assert set(range(1, 13)) <= covered
    assert {"declared_params", "construction"} <= covered


def test_location_names_kernel_op_origin_and_source_position() -> None:
    text = sub("{fill = 0.0, origin = gemm.s0.A, valid = true}", "{origin = gemm.s0.A, valid = true}")(GEMM)
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text, "gemm.gir"))
    assert info.value.location == "kernel gemm, op #28 (load) from gemm.s0.A at gemm.gir:44:11"
    assert str(info.value).startswith("kernel gemm, op #28 (load) from gemm.s0.A at gemm.gir:44:11: "
                                      "[IR-10 invariant 5] ")
    assert isinstance(info.value, IntentError)


# -- real checks: the rule accepts the legal form next to the illegal one -------------------------------------

def _narrowed_gemm(k: str) -> str:
    """The GEMM with an all_true narrowing of its K loop whose loads no longer check k < K, with K = ``k``."""
    text = sub("{origin = gemm.s0.sum} : frag<f32, [BM, BN]> (%k0", NARROW % "all_true"
               + " : frag<f32, [BM, BN]> (%k0")(GEMM)
    text = sub("load(%A, %am, %ak, %av)", "load(%A, %am, %ak, %avm)")(text)
    text = sub("load(%B, %bk2, %bn2, %bv)", "load(%B, %bk2, %bn2, %bvn)")(text)
    if k != "K":
        text = sub("%A: view<f16, [M, K]>", f"%A: view<f16, [M, {k}]>")(text)
        text = sub("%B: view<f16, [K, N]>", f"%B: view<f16, [{k}, N]>")(text)
        text = sub("{expr = $(K)}", f"{{expr = $({k})}}")(text)
    return text


def test_narrowing_all_true_accepted_once_validity_no_longer_reads_the_iv() -> None:
    # the shape fact the narrowing rests on is in the program: K = 64 is a multiple of every BK candidate
    verify(parse_module(_narrowed_gemm("64"), "gemm.gir"))


def test_narrowing_all_true_on_a_shape_fact_the_program_does_not_hold_is_out_of_bounds() -> None:
    """Issue 25 item 5: with K a free size, the unmasked k < K check is gone and K = 2 reads past the end."""
    text = _narrowed_gemm("K")
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text, "gemm.gir"))
    assert info.value.invariant == 5
    assert re.search(r"unguarded out-of-bounds access: member \(0, 2\) reads coordinate \(0, 2\) of view %A "
                     r"with shape \(3, 2\) although its validity is true at the launch K=2, M=3, N=5 "
                     r"\(program 0\)", info.value.message), info.value.message
    assert info.value.location == op_location(text, parse_module(text, "gemm.gir"), "%a = load", "gemm.gir",
                                              "gemm")


# -- issue 25 item 5: the out-of-bounds rule rejects what provably goes out, and nothing else ------------------

GATHER = """\
module target "sm90" {
  kernel @gather origin gather {
    abi {
      %I: view<i64, [B]> read
      %E: view<f32, [V, D]> read
      %O: view<f32, [B, D]> write
    }
    space {
      segment [B] order row_major
    }
    body (%pid: index) {
      execution_group(%pid) {segment = 0} (%b: index) {
        %row = load(%I, %b) {origin = g.i} : i64
        %d = launch() {expr = $(D)} : index
        %c0 = const() {value = 0} : index
        %one = const() {value = 1} : index
        for(%c0, %d, %one) {origin = g.loop} (%j: index) {
          %x = gather(%E, %row, %j) {origin = g.e} : f32
          store(%O, %b, %j, %x) {origin = g.o}
          yield()
        }
        yield()
      }
      yield()
    }
  }
}
"""


def test_data_dependent_subscript_is_left_to_the_run_time() -> None:
    # %row comes from memory: the verifier cannot bound it (the run-time check of issue 25 item 2 does)
    verify(parse_module(GATHER, "gather.gir"))


def test_data_dependent_row_with_a_known_column_out_of_bounds_is_rejected() -> None:
    text = sub("%x = gather(%E, %row, %j)", "%j1 = add(%j, %one) : index\n          %x = gather(%E, %row, %j1)")(
        GATHER)
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text, "gather.gir"))
    assert info.value.invariant == 5
    assert "member () reads coordinate (?, 3) of view %E with shape (5, 3) at the launch B=2, D=3, V=5" \
        in info.value.message, info.value.message


def test_unmasked_full_tile_under_its_guard_is_accepted_and_without_it_rejected() -> None:
    """An unswitched copy: the unmasked fast path runs only where the whole tile is in bounds."""
    guarded = sub("        %x = load(%X, %i, %ok) {fill = 0.0, origin = copy.x, valid = true} : frag<f32, [BLOCK]>\n",
                  "        %end = add(%i0, %bs) : index\n"
                  "        %full = cmp(%end, %n) {pred = le} : i1\n"
                  "        %x = if(%full) {origin = copy.x} : frag<f32, [BLOCK]> () {\n"
                  "          %xf = load(%X, %i) {origin = copy.x} : frag<f32, [BLOCK]>\n"
                  "          yield(%xf)\n"
                  "        } () {\n"
                  "          %xt = load(%X, %i, %ok) {fill = 0.0, origin = copy.x, valid = true} : frag<f32, [BLOCK]>\n"
                  "          yield(%xt)\n"
                  "        }\n")(COPYBUF)
    verify(parse_module(guarded, "copy.gir"))
    unguarded = sub("%full = cmp(%end, %n) {pred = le} : i1", "%full = cmp(%end, %end) {pred = le} : i1")(guarded)
    with pytest.raises(VerificationError) as info:
        verify(parse_module(unguarded, "copy.gir"))
    assert info.value.invariant == 5 and "%xf = load" not in info.value.message
    assert "reads coordinate (2,) of view %X with shape (2,) at the launch N=2" in info.value.message


def test_the_interpreters_unguarded_load_fixture_is_rejected() -> None:
    """``programs/errors.gir`` holds an unguarded tail load the interpreter refuses at run time; the verifier now
    refuses it before any launch."""
    path = Path(__file__).parent / "programs" / "errors.gir"
    text = path.read_text()
    errs = collect(parse_module(text, str(path)))
    oob = [e for e in errs if e.location.startswith("kernel oob_load")]
    assert [e.invariant for e in oob] == [5]
    assert "unguarded out-of-bounds access: member (2,) reads coordinate (2,) of view %X with shape (2,)" \
        in oob[0].message
    assert oob[0].location.endswith("errors.gir:21:9") and "op #6 (load) from oob.x" in oob[0].location


def test_narrowing_mixed_with_proof_and_validity_is_accepted() -> None:
    verify(parse_module(sub("{origin = gemm.s0.sum} : frag<f32, [BM, BN]> (%k0", NARROW % "mixed"
                            + " : frag<f32, [BM, BN]> (%k0")(GEMM)))


def test_grouped_order_with_group_size_and_2d_segment_is_accepted() -> None:
    verify(parse_module(sub("order row_major", "order grouped(8)")(GEMM)))


def test_tagged_dependence_edge_to_an_earlier_op_is_accepted() -> None:
    text = sub("{fill = 0.0, origin = gemm.s0.A, valid = true}",
               "{fill = 0.0, origin = gemm.s0.A, tag = a_load, valid = true}")(GEMM)
    text = sub("{fill = 0.0, origin = gemm.s0.B, valid = true}",
               "{after = [a_load], fill = 0.0, origin = gemm.s0.B, valid = true}")(text)
    verify(parse_module(text))


def test_after_edge_to_a_later_op_is_rejected() -> None:
    text = sub("{fill = 0.0, origin = gemm.s0.A, valid = true}",
               "{after = [b_load], fill = 0.0, origin = gemm.s0.A, valid = true}")(GEMM)
    text = sub("{fill = 0.0, origin = gemm.s0.B, valid = true}",
               "{fill = 0.0, origin = gemm.s0.B, tag = b_load, valid = true}")(text)
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text))
    assert info.value.invariant == 12 and "'b_load'" in info.value.message


def test_atomic_write_is_exempt_from_the_conflict_rule() -> None:
    # every program adds into the same elements: legal with scatter_reduce, illegal with a plain store
    base = sub("%m0 = mul(%pm, %bm)", "%m0 = mul(%pn, %bm)")(GEMM)
    reduced = sub("store(%C, %cm, %cn, %out, %cv) {origin = gemm.s0, valid = true}",
                  "scatter_reduce(%C, %cm, %cn, %out, %cv) {combine = add, origin = gemm.s0, valid = true}")(base)
    verify(parse_module(reduced))
    with pytest.raises(VerificationError) as info:
        verify(parse_module(base))
    assert info.value.invariant == 9


def test_single_program_segment_needs_no_coordinate_dependence() -> None:
    text = sub("segment [ceil_div(M, BM), ceil_div(N, BN)]", "segment [1, ceil_div(N, BN)]")(GEMM)
    text = sub("%m0 = mul(%pm, %bm)", "%m0 = mul(%c_zero, %bm)")(text)
    text = sub("        %bm = launch()", "        %c_zero = const() {value = 0} : index\n        %bm = launch()")(text)
    verify(parse_module(text))


def test_atomics_need_order_and_domain() -> None:
    text = sub("store(%C, %cm, %cn, %out, %cv) {origin = gemm.s0, valid = true}",
               "%old = atomic_rmw(%C, %cm, %cn, %out, %cv) {domain = device, kind = add, order = relaxed, "
               "origin = gemm.s0, valid = true} : frag<f16, [BM, BN]>")(GEMM)
    module = parse_module(text)
    verify(module)
    del find_op(module, _is("atomic_rmw")).attrs["order"]
    with pytest.raises(VerificationError) as info:
        verify(module)
    assert info.value.invariant == 5 and "memory order" in info.value.message


def test_workspace_buffer_with_private_view_is_accepted() -> None:
    verify(parse_module(workspace_copy(COPYBUF)))


def test_workspace_slices_written_by_every_program_conflict() -> None:
    # indexed by the block-local range, every program writes the same workspace elements
    text = sub("buffer_store(%buf, %i, %x, %ok)", "buffer_store(%buf, %r, %x, %ok)")(workspace_copy(COPYBUF))
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text))
    assert info.value.invariant == 9 and "buffer_store" in info.value.message


def test_grid_stride_group_must_use_the_loop_iv() -> None:
    text = sub("execution_group(%lin)", "execution_group(%pid)")(GRIDSTRIDE)
    with pytest.raises(VerificationError) as info:
        verify(parse_module(text))
    assert info.value.invariant == 2 and "induction variable" in info.value.message


# -- builder-made programs ---------------------------------------------------------------------------------------

def _builder_copy(fill: float | None = 0.0, y_access: str = "write") -> Module:
    mb = ModuleBuilder("sm90")
    mb.param("BM", 64, (32, 64, 128))
    kb = mb.kernel("copy", origin="copy")
    X = kb.view("X", "f32", ["N"], access="read")
    Y = kb.view("Y", "f32", ["N"], access=y_access)
    kb.segment([ceil_div("N", "BM")])

    def group(r, coords):
        (p,) = coords
        t = frag("index", "BM")
        i = r.add(r.broadcast(r.mul(p, r.launch("BM")), t), r.range(t))
        ok = r.cmp("lt", i, r.broadcast(r.launch("N"), t))
        r.store(Y, [i], r.with_origin("copy.x").load(X, [i], valid=ok, fill=fill), valid=ok, origin="copy.y")

    kb.body(lambda r, pid: r.execution_group(0, pid, group, rank=1))
    return mb.build()


def test_builder_program_verifies_clean() -> None:
    module = _builder_copy()
    verify(module)
    verify(module, stage="construction")


@pytest.mark.parametrize("kwargs,invariant,message", [
    ({"fill": None}, 5, "validated load has no fill"),
    ({"y_access": "read"}, 9, "store writes %Y, whose access mode is read"),
])
def test_builder_program_broken(kwargs: dict, invariant: int, message: str) -> None:
    with pytest.raises(VerificationError) as info:
        verify(_builder_copy(**kwargs))
    assert info.value.invariant == invariant
    assert message in info.value.message
    assert info.value.location.startswith("kernel copy, op #")
    assert " at " not in info.value.location      # built, not parsed: no source position


# -- the table ---------------------------------------------------------------------------------------------------

def test_check_table_covers_every_invariant_and_cites_the_spec() -> None:
    shared = [CHECKS[n] for n in SHARED]
    assert [c.invariant for c in shared if isinstance(c.invariant, int)] == list(range(1, 13))
    for c in CHECKS.values():
        assert c.doc, c.name
        assert re.search(r"IR-10 \(\d+\)|PASS-5", c.doc), c.name
        assert c.pass5 in PASS5_CHECKS
    assert STAGES["construction"][:len(SHARED)] == SHARED and "construction" in STAGES["construction"]


def test_construction_origin_rule() -> None:
    m = parse_module(GEMM)
    ops = list(walk(m.kernels[0].body))
    by = {op.name: op for op in ops}
    assert not needs_origin(by["yield"]) and not needs_origin(by["launch"]) and not needs_origin(by["broadcast"])
    assert not needs_origin(by["execution_group"])
    index_add = next(op for op in ops if op.name == "add")
    assert not needs_origin(index_add)                     # coordinate math
    assert needs_origin(by["load"]) and needs_origin(by["contract"]) and needs_origin(by["for"])
    assert needs_origin(by["cast"])                        # f32 -> f16 data conversion


def test_collect_reports_every_failure_and_verify_the_first() -> None:
    text = sub("{fill = 0.0, origin = gemm.s0.A, valid = true}", "{origin = gemm.s0.A, valid = true}")(GEMM)
    text = sub("{lhs_contract = [1],", "{lhs_contract = [1], role = lhs,")(text)
    module = parse_module(text)
    errs = collect(module)
    assert [e.invariant for e in errs] == [5, 12]
    with pytest.raises(VerificationError) as info:
        verify(module)
    assert info.value.invariant == 5


def test_unknown_stage_is_a_package_error() -> None:
    with pytest.raises(IntentError, match="unknown verifier stage"):
        verify(parse_module(GEMM), stage="provider")


def test_package_verify_keeps_working_after_the_submodule_is_imported() -> None:
    import importlib

    import intent_eqsat.ir as ir
    importlib.import_module("intent_eqsat.ir.verify")          # rebinds the package attribute to the module
    module = parse_module(GEMM)
    ir.verify(module)
    with pytest.raises(VerificationError):
        ir.verify(parse_module(sub("lhs_contract = [1]", "lhs_contract = [0]")(GEMM)))


def test_checked_coordinate_positions_are_verified():
    """``checked`` (run-time checked data-dependent coordinates, issue 25.2) names distinct coordinate positions of
    the access in increasing order; anything else is rejected at the op."""
    from intent_eqsat import construct, kir
    from intent_eqsat.ir.core import CompileOptions

    text = "kernel g(E: f32[V, D], idx: i64[N], Out: out f32[N, D]) {\n  Out[i, d] = E[idx[i], d]\n}\n"
    module = construct.construct(kir.parse(text, "g.kir"))
    [gather] = [op for op in walk(module.kernels[0].body) if op.name == "gather"]
    assert tuple(gather.attrs["checked"]) == (0,)
    verify(module)
    for bad in ([2], [1, 0], [0, 0], []):
        gather.attrs["checked"] = bad
        with pytest.raises(VerificationError, match=r"checked = .* must list distinct coordinate positions"):
            verify(module)
    unchecked = construct.construct(kir.parse(text, "g.kir"), options=CompileOptions(subscript_checks=False))
    assert all("checked" not in op.attrs for op in walk(unchecked.kernels[0].body))
