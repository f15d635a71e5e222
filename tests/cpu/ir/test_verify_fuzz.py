"""A fuzz of the shared GPU verifier (issue 25, "Must show"): mutants of the GPU IR programs under ``programs/``
(and the seed GEMM, and the bound layernorm) either fail to parse with a located ParseError, or fail to verify
with a VerificationError, or run in the NumPy interpreter on small random inputs without an out-of-bounds
access, a division by zero or any exception that is not an IntentError.

Mutants come from two sources, with fixed seeds:

- text mutations (``test_parse_errors._mutate``: characters and tokens deleted, inserted, duplicated, swapped);
- generated semantic mutations, the ones the verifier must catch: huge integer literals (at and beyond the signed
  64-bit range), zero divisors (``% 0``, ``// 0``, ``ceil_div(., 0)``, a divisor zero at a parameter candidate,
  integer ``floordiv``/``mod`` ops), negative extents (views, segments, fragments), and shifted indices that go
  out of bounds (``range {start}``, ``lt`` -> ``le``, a launch value plus or minus one, a coordinate constant
  moved, a validity operand dropped, an index ``add`` turned into ``sub``/``mul``/...).

An InterpretError of an accepted mutant is allowed only for these reasons, which are not the verifier's (the
verifier proves what holds at every launch; these depend on the data or are definedness rules):

- it happens at an op whose operands, or whose enclosing control, depend on device data or a by-value scalar
  (a data-dependent subscript or divisor: checked at run time, issue 25 item 2);
- reading an element the launch has not written (a ``write`` view or ``first_write`` buffer: undefined values,
  not a memory access outside the resource);
- two members of one plain write writing the same element (the uniqueness rule of ``store``/``scatter``);
- a value that does not fit its dtype at run time (an integer argument or index cast out of range);
- the run exceeding ``max_ops`` (a legal but enormous launch: the harness's own limit).
"""
from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from intent_eqsat.errors import IntentError, InterpretError, ParseError, SourceLocation
from intent_eqsat.ir import dtypes, interpret, parse_module
from intent_eqsat.ir.core import Module, Op, walk
from intent_eqsat.ir.launch import LaunchExpr, evaluate, free_symbols
from intent_eqsat.ir.lexer import tokenize
from intent_eqsat.ir.spec import ACCESS_OPS, access_layout
from intent_eqsat.ir.types import BufferType, FragmentType, ViewType
from intent_eqsat.ir.verify import VerificationError, verify

from tests.cpu.ir.test_parse_errors import _CHARS

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
SEEDS = sorted(p for p in (HERE / "programs").glob("*.gir") if p.name != "errors.gir") + [
    ROOT / "examples" / "gir" / "gemm.gir", HERE / "bound" / "layernorm_rows.gir"]
TEXTS = {p.name: p.read_text() for p in SEEDS}

#: mutants per test case (the cases together run well over 5,000)
PER_CASE = 700
CASES = 8
#: the interpreter stops a mutant's run after this many op executions (an enormous but legal launch)
MAX_OPS = 4000
#: mutants whose fragments (at the parameter defaults) have more members than this are not run
MAX_MEMBERS = 1 << 16
#: integers that are not IR literals, and ones that are but overflow what uses them
HUGE = [2 ** 63, 2 ** 64 + 5, 10 ** 25, 2 ** 63 - 1, 2 ** 62, 2 ** 40, 2 ** 32, 2 ** 31]


# ------------------------------------------------------------------------------------------------- mutations

def _tokens(text: str) -> list[tuple[int, str, str]]:
    """(offset, kind, text) of every token."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    try:
        toks = tokenize(text)[:-1]
    except ParseError:                      # an earlier mutation broke the text: no tokens to edit
        return []
    return [(offsets[t.line - 1] + t.col - 1, t.kind, t.text) for t in toks]


def _replace(text: str, off: int, old: str, new: str) -> str:
    return text[:off] + new + text[off + len(old):]


def _text_mutation(rng: random.Random, text: str) -> str:
    """One character or token edit (as the parse fuzz makes them)."""
    toks = _tokens(text)
    kind = rng.randrange(6) if toks else rng.randrange(2)
    if kind == 0:
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1:]
    if kind == 1:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(_CHARS) + text[i:]
    off, _, tok = rng.choice(toks)
    if kind == 2:
        return text[:off] + text[off + len(tok):]
    if kind == 3:
        return text[:off] + tok + " " + text[off:]
    _, _, other = rng.choice(toks)
    if kind == 4:
        return _replace(text, off, tok, other)
    return text[:off] + other + " " + text[off:]


def _int_token(rng: random.Random, text: str, value: int) -> str:
    ints = [(o, t) for o, k, t in _tokens(text) if k == "INT"]
    if not ints:
        return text
    off, tok = rng.choice(ints)
    return _replace(text, off, tok, str(value))


def _balanced(text: str, start: int) -> int:
    """The offset just past the parenthesis that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _launch_exprs(text: str) -> list[tuple[int, int]]:
    """(start, end) of the inside of every ``$( ... )``."""
    out = []
    for m in re.finditer(r"\$\(", text):
        end = _balanced(text, m.end() - 1)
        out.append((m.end(), end - 1))
    return out


def _extent_lists(text: str) -> list[tuple[int, int]]:
    """(start, end) of the inside of the ``[...]`` of every view, fragment, buffer type and segment."""
    starts = [m.end() for m in re.finditer(r"(view<\w+, |frag<\w+, |buffer<\w+, |segment )\[", text)]
    return [(a, text.find("]", a)) for a in starts if text.find("]", a) >= 0]


def _split_items(s: str) -> list[tuple[int, int]]:
    """Top-level comma-separated items of ``s`` as (start, end)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append((start, i))
            start = i + 1
    items.append((start, len(s)))
    return [(a, b) for a, b in items if s[a:b].strip()]


def huge_literal(rng: random.Random, text: str) -> str:
    value = rng.choice(HUGE)
    return _int_token(rng, text, -value if rng.random() < 0.3 else value)


def zero_literal(rng: random.Random, text: str) -> str:
    return _int_token(rng, text, 0)


def zero_divisor(rng: random.Random, text: str) -> str:
    spans = _launch_exprs(text) + [(a, b) for a, b in _extent_lists(text)]
    if not spans:
        return text
    a, b = rng.choice(spans)
    inner = text[a:b]
    params = re.findall(r"param (\w+): \w+ = (\d+)", text)
    forms = ["({e}) % 0", "({e}) // 0", "ceil_div({e}, 0)", "({e}) // (3 - 3)"]
    if params:
        name, default = rng.choice(params)
        forms.append(f"({{e}}) % ({name} - {default})")
    if spans and (a, b) in _extent_lists(text):
        items = _split_items(inner)
        i0, i1 = rng.choice(items)
        e = inner[i0:i1].strip()
        return text[:a] + inner[:i0] + " " + rng.choice(forms).format(e=e) + inner[i1:] + text[b:]
    m = re.search(r"ceil_div\(([^,()]+), ([^()]+?)\)", inner)
    if m and rng.random() < 0.3:
        return text[:a] + inner[:m.start(2)] + "0" + inner[m.end(2):] + text[b:]
    return text[:a] + rng.choice(forms).format(e=inner) + text[b:]


def zero_divisor_op(rng: random.Random, text: str) -> str:
    """An index ``add``/``mul`` becomes an integer floordiv/mod/div/rem (a zero lane divides by zero)."""
    sites = [m for m in re.finditer(r"= (add|mul|sub)\((%[\w.]+), (%[\w.]+)\)( : [^\n]*index)", text)]
    if not sites:
        return text
    m = rng.choice(sites)
    return text[:m.start(1)] + rng.choice(["floordiv", "mod", "div", "rem"]) + text[m.end(1):]


def negative_extent(rng: random.Random, text: str) -> str:
    spans = _extent_lists(text)
    if not spans:
        return text
    a, b = rng.choice(spans)
    inner = text[a:b]
    items = _split_items(inner)
    i0, i1 = rng.choice(items)
    new = rng.choice(["-1", "(-1)", "(-5)", " 0 - 1"])
    return text[:a] + inner[:i0] + (" " if i0 else "") + new.strip() + inner[i1:] + text[b:]


def shift_index(rng: random.Random, text: str) -> str:
    kind = rng.randrange(7)
    if kind == 0:                                   # a range starts elsewhere
        sites = [m.end() for m in re.finditer(r"= range\(\)", text)]
        if sites:
            i = rng.choice(sites)
            return text[:i] + f" {{start = {rng.choice([1, -1, 2, -3, 7, 2 ** 40])}}}" + text[i:]
    if kind == 1:                                   # a bound check moves by one
        sites = [m for m in re.finditer(r"pred = (lt|le|gt|ge)", text)]
        if sites:
            m = rng.choice(sites)
            new = {"lt": "le", "le": "lt", "gt": "ge", "ge": "gt"}[m.group(1)]
            return text[:m.start(1)] + rng.choice([new, "ne", "eq"]) + text[m.end(1):]
    if kind == 2:                                   # a launch value moves
        spans = _launch_exprs(text)
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + f"{text[a:b]} {rng.choice(['+', '-'])} {rng.choice([1, 2, 16])}" + text[b:]
    if kind == 3:                                   # an index constant moves
        sites = [m for m in re.finditer(r"\{value = (\d+)\} : (frag<)?index", text)]
        if sites:
            m = rng.choice(sites)
            return text[:m.start(1)] + str(int(m.group(1)) + rng.choice([1, -1, 5])) + text[m.end(1):]
    if kind == 4:                                   # a validity operand is dropped
        sites = [m for m in re.finditer(r"(load|store|gather|scatter|buffer_load|buffer_store|atomic_\w+|"
                                        r"scatter_reduce)\(([^()\n]*), (%[\w.]+)\) \{([^\n]*?)valid = true\}",
                                        text)]
        if sites:
            m = rng.choice(sites)
            attrs = re.sub(r"fill = [^,}]+, ", "", m.group(4))
            return text[:m.start()] + f"{m.group(1)}({m.group(2)}) {{{attrs}valid = false}}" + text[m.end():]
    if kind == 5:                                   # an index add becomes another op
        sites = [m for m in re.finditer(r"= (add)\((%[\w.]+), (%[\w.]+)\)( : [^\n]*index)", text)]
        if sites:
            m = rng.choice(sites)
            return text[:m.start(1)] + rng.choice(["sub", "mul", "max", "min"]) + text[m.end(1):]
    sites = [m for m in re.finditer(r"= (add|mul)\((%[\w.]+), (%[\w.]+)\)( : [^\n]*index)", text)]
    if sites:                                       # an index add uses one operand twice
        m = rng.choice(sites)
        x = rng.choice([m.group(2), m.group(3)])
        return text[:m.start(2)] + f"{x}, {x}" + text[m.end(3):]
    return _text_mutation(rng, text)


SEMANTIC = [huge_literal, zero_literal, zero_divisor, zero_divisor_op, negative_extent, shift_index, shift_index,
            shift_index]


def mutant(rng: random.Random) -> tuple[str, str, str]:
    """(seed file name, mutation names, text)."""
    name = rng.choice(sorted(TEXTS))
    text = TEXTS[name]
    names = []
    for _ in range(rng.choice((1, 1, 1, 2))):
        f = rng.choice(SEMANTIC) if rng.random() < 0.75 else _text_mutation
        names.append(f.__name__)
        text = f(rng, text)
    return name, "+".join(names), text


# ------------------------------------------------------------------------------------------------ running

_DATA_OPS = ("reduce", "scan", "argreduce", "histogram", "contract", "scaled_contract", "bitcast", "while")


def _data_dependence(kernel) -> tuple[set[str], set[int]]:
    """(names of the values computed from device data or by-value scalars, ids of the ops that run under control
    flow that depends on them): what the verifier may leave to the run time. A fixpoint over loop-carried values."""
    data = {a.name for a in kernel.abi if not a.is_view and not a.private}
    under: set[int] = set()

    def tainted(vs) -> list[bool]:
        return [v.name in data for v in vs]

    def mark(vs, flags) -> None:
        data.update(v.name for v, f in zip(vs, flags) if f)

    def yields(r) -> list[bool]:
        return tainted(r.ops[-1].operands) if r.ops and r.ops[-1].name == "yield" else []

    def region(r, ctl: bool) -> None:
        for op in r.ops:
            if ctl:
                under.add(id(op))
            if op.name in ACCESS_OPS or op.name in _DATA_OPS or any(tainted(op.operands)) and not op.regions:
                data.update(x.name for x in op.results)
            if op.name == "while":                   # its condition may depend on anything: all of it is data
                for sub in op.regions:
                    data.update(x.name for x in sub.args)
                    region(sub, True)
            elif op.name == "if":
                cond = any(tainted(op.operands))
                for sub in op.regions:
                    region(sub, ctl or cond)
                    mark(op.results, [cond or f for f in yields(sub)])
            elif op.name in ("for", "region_fold", "region_scan"):
                bounds = any(tainted(op.operands[:3]))
                init = tainted(op.operands[3:])
                n = len(init)
                if op.name == "for":
                    (body,) = op.regions
                    mark(body.args[:1], [bounds])
                    mark(body.args[1:], init)
                    region(body, ctl or bounds)
                    mark(body.args[1:], yields(body))
                    mark(op.results, tainted(body.args[1:]))
                    continue
                summarize, combine = op.regions[0], op.regions[1]
                emit = op.regions[2] if op.name == "region_scan" else None
                mark(summarize.args[:1], [bounds])
                region(summarize, ctl or bounds)
                mark(combine.args[:n], init)
                mark(combine.args[n:], yields(summarize))
                region(combine, ctl or bounds)
                mark(combine.args[:n], yields(combine))
                if emit is not None:
                    mark(emit.args[:1], [bounds])
                    mark(emit.args[1:], tainted(combine.args[:n]))
                    region(emit, ctl or bounds)
                mark(op.results, tainted(combine.args[:n]))
            else:
                for sub in op.regions:                # combiner and execution-group regions
                    region(sub, ctl)

    for _ in range(4):                              # loop-carried values reach a fixpoint in a few passes
        region(kernel.body, False)
    return data, under


def _data_dependent(kernel, op: Op) -> bool:
    """Does the failing op's check depend on data: its coordinates or validity (an access), its operands (any
    other op), or the control flow it runs under?"""
    data, under = _data_dependence(kernel)
    if id(op) in under:
        return True
    if op.name in ACCESS_OPS:
        n_coords, _ = access_layout(op.name, len(op.operands), bool(op.attrs.get("valid", False)))
        judged = op.operands[1:1 + n_coords] + (op.operands[-1:] if op.attrs.get("valid") else [])
    else:
        judged = op.operands
    return any(v.name in data for v in judged)


def _op_of(module: Module, err: InterpretError) -> tuple[object, Op] | None:
    m = re.search(r"kernel (\S+), op #(\d+)", str(err))
    if not m:
        return None
    k = module.kernel(m.group(1).rstrip(","))
    ops = list(walk(k.body))
    i = int(m.group(2))
    return (k, ops[i]) if 0 <= i < len(ops) else None


def _inputs(rng: np.random.Generator, module: Module, kernel) -> dict | None:
    params = {p.name: p.default for p in module.params}
    syms = sorted({s for a in kernel.abi if a.is_view for e in a.value.type.shape if isinstance(e, LaunchExpr)
                   for s in free_symbols(e)} - set(params))
    binding = dict(params)
    binding.update({s: int(rng.integers(1, 10)) for s in syms})
    args = {}
    for a in kernel.abi:
        t = a.value.type
        if isinstance(t, ViewType):
            if a.private:
                continue
            try:
                shape = tuple(evaluate(e, binding) for e in t.shape)
            except IntentError:
                return None
            if any(not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= 64 for x in shape):
                return None                         # not a launch (a negative extent), or too large to run
            np_dt = dtypes.to_numpy(t.dtype)
            if dtypes.is_float(t.dtype):
                args[a.name] = rng.standard_normal(shape).astype(np_dt)
            else:
                hi = max(1, min([x for x in shape if x > 0] + [4]))
                args[a.name] = rng.integers(0, hi, shape).astype(np_dt)
        elif not a.private:
            args[a.name] = 1.25 if dtypes.is_float(t.dtype) else int(binding.get(a.name, 3))
    return args


def _too_large(module: Module) -> bool:
    defaults = {p.name: p.default for p in module.params}
    for k in module.kernels:
        for op in walk(k.body):
            for v in [*op.results, *(a for r in op.regions for a in r.args)]:
                if isinstance(v.type, (FragmentType, BufferType)):
                    try:
                        n = 1
                        for e in v.type.shape:
                            n *= int(evaluate(e, defaults))
                    except IntentError:
                        continue
                    if n > MAX_MEMBERS:
                        return True
    return False


#: InterpretErrors that are not the verifier's to prevent (see the module docstring)
LEGIT = ("has not written", "not been written", "exceeded max_ops", "did not finish")


def run_one(rng: random.Random, stats: Counter, failures: list) -> None:
    name, how, text = mutant(rng)
    try:
        module = parse_module(text, "fuzz.gir")
    except ParseError as err:
        stats["parse error"] += 1
        assert isinstance(err.location, SourceLocation) and err.location.line >= 1, (name, how, err)
        return
    except IntentError as err:
        stats["parse error"] += 1
        assert err.location is not None, (name, how, err)
        return
    except Exception as err:                         # noqa: BLE001 - the fuzz reports every foreign exception
        failures.append(("parse: foreign exception", name, how, f"{type(err).__name__}: {err}", text))
        return
    try:
        verify(module)
    except VerificationError as err:
        stats[f"rejected [{err.invariant}]"] += 1
        return
    except Exception as err:                         # noqa: BLE001
        failures.append(("verify: foreign exception", name, how, f"{type(err).__name__}: {err}", text))
        return
    stats["accepted"] += 1
    if _too_large(module):
        stats["accepted, too large to run"] += 1
        return
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    for kernel in module.kernels:
        args = _inputs(nrng, module, kernel)
        if args is None:
            stats["accepted, no launch of this size"] += 1
            continue
        try:
            interpret(module, kernel.name, args, max_ops=MAX_OPS)
            stats["ran clean"] += 1
        except InterpretError as err:
            msg = str(err)
            hit = _op_of(module, err)
            if hit is not None and _data_dependent(*hit):
                stats["run: data-dependent error"] += 1
            elif any(s in msg for s in LEGIT):
                stats["run: " + next(s for s in LEGIT if s in msg)] += 1
            else:
                failures.append(("accepted invalid", name, how, msg, text))
        except Exception as err:                     # noqa: BLE001
            failures.append(("interpret: foreign exception", name, how, f"{type(err).__name__}: {err}", text))


@pytest.mark.parametrize("case", range(CASES))
def test_verifier_fuzz(case: int) -> None:
    rng = random.Random(2500 + case)
    stats: Counter = Counter()
    failures: list = []
    for _ in range(PER_CASE):
        run_one(rng, stats, failures)
    assert not failures, "\n\n".join(f"{kind} ({seed}, {how}): {msg}" for kind, seed, how, msg, _ in failures[:5])
    assert sum(v for k, v in stats.items() if k.startswith("rejected")) > PER_CASE // 4, stats
    assert stats["ran clean"] > 20, stats


if __name__ == "__main__":
    import sys
    import time

    total: Counter = Counter()
    fails: list = []
    t0 = time.process_time()
    for c in range(int(sys.argv[1]) if len(sys.argv) > 1 else CASES):
        r = random.Random(2500 + c)
        for _ in range(PER_CASE):
            run_one(r, total, fails)
    print(f"{sum(total[k] for k in total if not k.startswith(('accepted,', 'ran', 'run:')))} mutants, "
          f"{time.process_time() - t0:.1f} s CPU")
    for k, v in sorted(total.items()):
        print(f"  {k}: {v}")
    for kind, seed, how, msg, text in fails[:40]:
        print("FAIL", kind, seed, how, msg[:400])
