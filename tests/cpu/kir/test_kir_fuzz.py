"""Parser/verifier/construction robustness (issue 25): mutated corpus texts and generated hostile inputs either
parse, verify and construct, or fail with the package's located error (ParseError / KirError / ConstructionError,
all IntentError) — never with another exception, and never "accepted invalid" (a module the KIR verifier accepts
whose construction then fails unlocated or builds a program the shared GPU-IR verifier rejects). Parsed mutants
also round-trip; verified ones also evaluate (or raise KirEvalError) on small random inputs."""
from __future__ import annotations

import random
import re
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intent_eqsat import ir
from intent_eqsat.construct import construct
from intent_eqsat.errors import ConstructionError, IntentError, SourceLocation
from intent_eqsat.kir import evaluate, parse, print_kir, verify
from intent_eqsat.kir.inputs import random_inputs
from intent_eqsat.kir.lexer import MAX_SOURCE_CHARS

from .kir_testlib import CORPUS_FILES

TEXTS = [p.read_text() for p in CORPUS_FILES]
TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\.|//|<=|>=|==|!=|&&|\|\||\+=|\*=|\S")
TOKENS = sorted({t for text in TEXTS for t in TOKEN_RE.findall(text)})
CHARS = "()[]{},:.=+-*/%<>!&|#\n 0123456789abcijkmnNMKXY_\t\"'@$;?^~\\é"


def mutate(text: str, rnd: random.Random) -> str:
    """Apply 1-3 random character or token edits."""
    for _ in range(rnd.randint(1, 3)):
        op = rnd.randrange(7)
        if not text:
            text = rnd.choice(TOKENS)
        pos = rnd.randrange(len(text))
        if op == 0:  # delete a character
            text = text[:pos] + text[pos + 1:]
        elif op == 1:  # insert a character
            text = text[:pos] + rnd.choice(CHARS) + text[pos:]
        elif op == 2:  # swap adjacent characters
            if pos + 1 < len(text):
                text = text[:pos] + text[pos + 1] + text[pos] + text[pos + 2:]
        else:
            spans = [m.span() for m in TOKEN_RE.finditer(text)]
            if not spans:
                continue
            a, b = spans[rnd.randrange(len(spans))]
            if op == 3:  # delete a token
                text = text[:a] + text[b:]
            elif op == 4:  # replace a token by a token seen anywhere in the corpus
                text = text[:a] + rnd.choice(TOKENS) + text[b:]
            elif op == 5:  # duplicate a token
                text = text[:b] + " " + text[a:b] + text[b:]
            else:  # swap two tokens
                c, d = spans[rnd.randrange(len(spans))]
                if (a, b) > (c, d):
                    a, b, c, d = c, d, a, b
                if b <= c:
                    text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    return text


def check_one(text: str) -> str:
    """Parse and verify; return the outcome kind. Any non-IntentError propagates and fails the test."""
    try:
        module = parse(text, "fuzz.kir")
    except IntentError as err:
        assert isinstance(err.location, SourceLocation), f"unlocated {type(err).__name__}: {err}\n{text}"
        return "parse"
    printed = print_kir(module)
    assert parse(printed, "fuzz.kir") == module, f"round trip failed for:\n{text}"
    try:
        verify(module)
    except IntentError as err:
        assert isinstance(err.location, SourceLocation), f"unlocated {type(err).__name__}: {err}\n{text}"
        return "verify"
    return "ok"


def test_seeded_mutation_fuzz_10000():
    rnd = random.Random(20261)
    outcomes = {"parse": 0, "verify": 0, "ok": 0}
    n = 0
    for _ in range(10_500):
        text = mutate(rnd.choice(TEXTS), rnd)
        try:
            outcomes[check_one(text)] += 1
        except AssertionError:
            raise
        except Exception as exc:  # pragma: no cover - the failure report
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- input ---\n{text}") from exc
        n += 1
    assert n >= 10_000
    # The mix shows the fuzzer reaches all three outcomes (not just the lexer).
    assert min(outcomes.values()) > 200, outcomes


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(TEXTS))), st.integers(0, 2**32 - 1))
def test_hypothesis_mutation_fuzz(index, seed):
    text = mutate(TEXTS[index], random.Random(seed))
    check_one(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_hypothesis_token_soup(tokens):
    check_one(" ".join(tokens))


# ------------------------------------------------------------------------- the whole front end, hostile inputs

NUMBER_RE = re.compile(r"(?<![A-Za-z_0-9.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
HUGE = ["9" * 5000, "1" + "0" * 4400, "9223372036854775808", "9223372036854775807", "70000", "65520", "65504",
        "300", "256", "4294967296", "1e400", "1e39", "3.5e38", "1e-400", "1" * 400 + ".5", "0" * 5000 + "7"]
UNICODE = ["\ufeff", "\u00e9", "\u200b", "\u00a0", "\u2028", "\u202e", "\uff11", "\U0001f600", "\u0130",
           "\u00b2", "\u0663", "\x00", "\x0c", "\ud7ff"]
DTYPES = ["f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u32", "bool"]


def hostile(rnd: random.Random) -> str:
    """One generated hostile input: huge literals, deep nesting, long chains, many binds, odd dims or dtypes,
    a byte order mark, unicode, or (nearly) empty text."""
    kind = rnd.randrange(12)
    base = rnd.choice(TEXTS)
    if kind == 0:  # a number replaced by a huge or out-of-range literal
        spans = [mt.span() for mt in NUMBER_RE.finditer(base)]
        if spans:
            a, b = rnd.choice(spans)
            return base[:a] + rnd.choice(HUGE) + base[b:]
        return base + rnd.choice(HUGE)
    if kind == 1:  # a literal in a narrow-dtype context
        dtype = rnd.choice(DTYPES)
        lit = rnd.choice(HUGE[3:] + ["-1", "-129", "1.5", "-70000.0", "inf", "nan", "true"])
        op = rnd.choice(["+", "*", "-", "max=", "<"])
        if op == "max=":
            return f"kernel k(X: {dtype}[N], Y: out {dtype}[N]) {{\n  Y[i] = X[i]\n  Y[i] max= {lit}\n}}\n"
        if op == "<":
            return f"kernel k(X: {dtype}[N], Y: out bool[N]) {{ Y[i] = X[i] < {lit} }}"
        return f"kernel k(X: {dtype}[N], Y: out {dtype}[N]) {{ Y[i] = X[i] {op} {lit} }}"
    if kind == 2:  # deep nesting: parentheses, calls, unary operators, where chains
        depth = rnd.choice([5, 20, 35, 39, 40, 41, 60, 150, 400, 2000])
        form = rnd.randrange(4)
        if form == 0:
            e = "(" * depth + "X[i]" + ")" * depth
        elif form == 1:
            e = "exp(" * depth + "X[i]" + ")" * depth
        elif form == 2:
            e = "-" * depth + " X[i]" if rnd.random() < 0.5 else "- " * depth + "X[i]"
        else:
            e = "X[i]"
            for _ in range(depth):
                e = f"{e} where X[i] > 0.0 else 1.0"
        return f"kernel k(X: f32[N], Y: out f32[N]) {{ Y[i] = {e} }}"
    if kind == 3:  # long operator chains (deep left-leaning trees)
        n = rnd.choice([10, 90, 97, 98, 99, 100, 101, 300, 3000])
        op = rnd.choice(["+", "*", "&&", "<", "//"])
        if op == "&&":
            return "kernel k(X: f32[N], Y: out bool[N]) { Y[i] = " + " && ".join(["X[i] > 0.0"] * n) + " }"
        if op == "<":
            return "kernel k(X: f32[N], Y: out bool[N]) { Y[i] = " + " < ".join(["X[i]"] * n) + " }"
        return "kernel k(X: f32[N], Y: out f32[N]) { Y[i] = " + f" {op} ".join(["X[i]"] * n) + " }"
    if kind == 4:  # chains of lets, read once or twice each (the construction blow-up)
        n = rnd.choice([2, 12, 40, 141])
        twice = rnd.random() < 0.5
        lines = ["kernel k(X: f32[N], Y: out f32[N]) {", "  let t0[i] = X[i]"]
        for j in range(1, n):
            rhs = f"t{j - 1}[i] + t{j - 1}[i]" if twice else f"t{j - 1}[i] * 0.5"
            if rnd.random() < 0.1:
                rhs = f"sum(k: X[k]) + t{j - 1}[i]"
            lines.append(f"  let t{j}[i] = {rhs}")
        lines.append(f"  Y[i] = t{n - 1}[i]\n}}")
        return "\n".join(lines)
    if kind == 5:  # a reduction with many bound indices
        n = rnd.choice([1, 2, 3, 5, 24, 25, 40, 200])
        binds = ", ".join(f"k{j} in 0..{rnd.choice(['1', '2', 'N'])}" for j in range(n))
        return f"kernel k(X: f32[N], Y: out f32[N]) {{ Y[i] = sum({binds}: X[i]) }}"
    if kind == 6:  # product dims: some determinable, some not
        dims = rnd.choice(["G*CPG", "G*G", "2*G", "G*CPG, G", "N, G*CPG", "G*CPG*H, G, H", "G*3"])
        out_dims = rnd.choice(["G*CPG", "G", "N", "1"])
        return f"kernel k(X: f32[{dims}], Y: out f32[{out_dims}]) {{ Y[i] = 0.0 }}"
    if kind == 7:  # a byte order mark (at the start, elsewhere, twice)
        where = rnd.randrange(3)
        if where == 0:
            return "\ufeff" + base
        if where == 1:
            return "\ufeff\ufeff" + base
        pos = rnd.randrange(len(base))
        return base[:pos] + "\ufeff" + base[pos:]
    if kind == 8:  # unicode characters anywhere
        text = base
        for _ in range(rnd.randint(1, 3)):
            pos = rnd.randrange(len(text) + 1)
            text = text[:pos] + rnd.choice(UNICODE) + text[pos:]
        return text
    if kind == 9:  # empty and nearly empty modules
        return rnd.choice(["", " ", "\n\n", "# only a comment", "\ufeff", "\ufeff# c\n",
                           "combiner c(a: f32, b: f32) associative commutative identity 0.0 { a + b }",
                           "kernel", "kernel k() {}", "kernel k(X: f32[N]) { }", "\t\r\n"])
    if kind == 10:  # the size limit, checked before lexing
        return base + " " * (MAX_SOURCE_CHARS - len(base) + rnd.choice([-1, 1])) + rnd.choice(["", "@"])
    # a dtype swapped for another one
    names = [mt.span() for mt in re.finditer(r"\b(?:" + "|".join(DTYPES) + r")\b", base)]
    if not names:
        return base
    a, b = rnd.choice(names)
    return mutate(base[:a] + rnd.choice(DTYPES) + base[b:], rnd) if rnd.random() < 0.3 else \
        base[:a] + rnd.choice(DTYPES) + base[b:]


def front_end(text: str, rnd: random.Random) -> str:
    """Parse, verify, construct (+ the shared GPU-IR verifier) and evaluate ``text``; return the outcome. Raises
    AssertionError for an unlocated error or an accepted-invalid module; other exceptions propagate."""
    outcome = check_one(text)
    if outcome != "ok":
        return outcome
    module = parse(text, "fuzz.kir")
    try:
        program = construct(module)
    except ConstructionError as err:
        assert isinstance(err.location, SourceLocation), f"unlocated ConstructionError: {err}\n{text}"
        assert "invalid program" not in err.message, f"accepted invalid: {err}\n{text}"
        return "refused"
    ir.verify(program)  # a VerificationError here is "accepted invalid" (and not caught)
    if len(text) < 5000:  # the reference evaluator on small inputs: an answer or a located KirEvalError
        for kernel in module.kernels:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    evaluate(module, kernel.name, random_inputs(module, kernel.name, rnd.randrange(10**6), lo=1,
                                                                hi=3))
            except IntentError:
                pass
    return "constructed"


def test_seeded_front_end_fuzz_5000():
    """>= 5,000 inputs (corpus mutations and generated hostile inputs) through the whole front end: 0 foreign
    exceptions (anything not an IntentError), 0 unlocated errors, 0 accepted-invalid modules."""
    rnd = random.Random(25_2026)
    outcomes = {"parse": 0, "verify": 0, "refused": 0, "constructed": 0}
    hostile_n = 0
    for i in range(5_200):
        if i % 3 == 0:
            text = hostile(rnd)
            hostile_n += 1
        else:
            text = mutate(rnd.choice(TEXTS), rnd)
        try:
            outcomes[front_end(text, rnd)] += 1
        except AssertionError:
            raise
        except Exception as exc:  # pragma: no cover - the failure report
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- input ---\n{text[:3000]}") from exc
    assert sum(outcomes.values()) >= 5_000 and hostile_n >= 1_500
    assert outcomes["constructed"] > 500 and outcomes["parse"] > 1_000 and outcomes["verify"] > 300, outcomes
