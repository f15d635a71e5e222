"""Parser/verifier robustness: mutated corpus texts either parse and verify, or fail with the package's located
error (ParseError / KirError, both IntentError) — never with another exception. Parsed mutants also round-trip."""
from __future__ import annotations

import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intent_eqsat.errors import IntentError, SourceLocation
from intent_eqsat.kir import parse, print_kir, verify

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
