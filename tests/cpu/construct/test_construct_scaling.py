"""Construction at scale (issue 25 item 4): a let read twice per level (``let t_j = t_{j-1} + t_{j-1}``) lowers each
let once, not 2**levels times; 10,000 chained lets and deep expressions construct without a RecursionError (the
lowering runs on an explicit stack); the work is linear in the chain (counted in executed lines, never seconds);
what cannot be built is refused with a located error.

Rematerialization is kept: a let read inside another statement's loop is still recomputed there (the remat
rulebook decides later whether to share it), so the programs of the corpus are the same as before."""
from __future__ import annotations

import os

import numpy as np
import pytest

from intent_eqsat import ir, kir
from intent_eqsat.construct import construct
from intent_eqsat.construct import emitter as emitter_mod
from intent_eqsat.construct import lower as lower_mod
from intent_eqsat.errors import ConstructionError, KirError, SourceLocation
from intent_eqsat.ir.core import walk
from intent_eqsat.kir.typer import MAX_INDICES
from tests.cpu.kir.kir_testlib import line_events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def let_chain(n: int, rhs: str = "t{p}[i] * 0.5") -> str:
    lines = ["kernel k(X: f32[N], Y: out f32[N]) {", "  let t0[i] = X[i]"]
    lines += [f"  let t{j}[i] = " + rhs.format(p=j - 1) for j in range(1, n)]
    lines.append(f"  Y[i] = t{n - 1}[i]")
    return "\n".join(lines) + "\n}\n"


def matches_reference(module: kir.KirModule, program: ir.Module, n: int = 3) -> None:
    x = np.linspace(-1.0, 1.0, n).astype(np.float32)
    want = kir.evaluate(module, "k", {"X": x.copy()})["Y"]
    got = ir.interpret(program, "k", {"X": x.copy(), "Y": np.zeros(n, np.float32)})["Y"]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6)


def test_a_let_read_twice_per_level_is_lowered_once_per_level(monkeypatch):
    """``t_j = t_{j-1} + t_{j-1}``: the emitter is asked for a handful of ops per let (it was asked 2**levels
    times: 18 levels took 9 s, 30 never finished)."""
    calls = 0
    pure = emitter_mod.Emitter.pure

    def counting(self, *args, **kw):
        nonlocal calls
        calls += 1
        return pure(self, *args, **kw)

    monkeypatch.setattr(emitter_mod.Emitter, "pure", counting)
    levels = 16
    module = kir.parse(let_chain(levels, "t{p}[i] + t{p}[i]"))
    program = construct(module)
    assert calls <= 6 * levels, calls
    ir.verify(program)
    matches_reference(module, program)
    adds = [op for op in walk(program.kernels[0].body) if op.name == "add"]
    assert len(adds) == levels - 1


def test_sixty_doublings_construct():
    module = kir.parse(let_chain(60, "t{p}[i] + t{p}[i]"))
    program = construct(module)
    matches_reference(module, program)


def test_ten_thousand_chained_lets_construct():
    module = kir.parse(let_chain(10_000), "chain.kir")
    program = construct(module)
    ir.verify(program)
    muls = [op for op in walk(program.kernels[0].body) if op.name == "mul"]
    assert len(muls) == 9_999


def test_construction_work_is_linear_in_the_let_chain():
    small, large = kir.parse(let_chain(300)), kir.parse(let_chain(600))
    files = ("construct/lower.py", "construct/emitter.py", "construct/construct.py")
    n_small = line_events(lambda: construct(small, verify_result=False), *files)
    n_large = line_events(lambda: construct(large, verify_result=False), *files)
    assert n_large < 2.2 * n_small, (n_small, n_large)


def test_deep_expressions_in_a_let_chain_construct():
    """Each let an expression near the parser's depth limit with the previous let at its bottom: the lowering
    inlines them all, 30 lets of 35 levels each (1,000 nested lowering steps)."""
    chain = " + ".join(["X[i]"] * 90)
    lines = ["kernel k(X: f32[N], Y: out f32[N]) {", f"  let a0[i] = {chain}"]
    lines += [f"  let a{j}[i] = " + "tanh(" * 32 + f"a{j - 1}[i] * 0.5 + X[i]" + ")" * 32 for j in range(1, 30)]
    lines.append("  Y[i] = a29[i] where X[i] > -2.0 else 0.0\n}")
    module = kir.parse("\n".join(lines), "deep.kir")
    program = construct(module)
    ir.verify(program)
    matches_reference(module, program)


def test_a_reduction_over_many_indices_constructs():
    n = MAX_INDICES - 1     # with the free index i, as many as the verifier allows
    binds = ", ".join(f"k{j} in 0..{2 if j < 2 else 1}" for j in range(n))
    module = kir.parse(f"kernel k(X: f32[N], Y: out f32[N]) {{ Y[i] = sum({binds}: X[i]) }}")
    program = construct(module)
    ir.verify(program)
    matches_reference(module, program)
    assert sum(op.name == "for" for op in walk(program.kernels[0].body)) == n


def test_lets_read_inside_loops_are_still_recomputed_there():
    """Sharing lowered lets never moves a let's loop out of a consumer's loop: softmax's row max stays in the sum
    loop as well as before it (the remat rulebook decides; tests/cpu/rules/test_remat.py)."""
    with open(os.path.join(ROOT, "examples", "corpus", "softmax.kir")) as f:
        program = construct(kir.parse(f.read()))
    max_loops = [op for op in walk(program.kernels[0].body)
                 if op.name == "for" and str(op.attrs.get("origin", "")).startswith("softmax.s0.e1")]
    assert len(max_loops) == 2


def test_a_rematerialization_that_multiplies_is_refused_located(monkeypatch):
    """``t_j = sum(k: t_{j-1}[k]) + t_{j-1}[i]`` recomputes t_{j-1} inside the loop and outside it: 2**j copies.
    Past a fixed op budget construction stops with a located error (here a small budget, for speed)."""
    monkeypatch.setattr(lower_mod, "MAX_CONSTRUCTED_OPS", 2_000)
    module = kir.parse(let_chain(30, "sum(k: t{p}[k]) + t{p}[i]"), "exp.kir")
    with pytest.raises(ConstructionError) as info:
        construct(module)
    assert isinstance(info.value.location, SourceLocation) and info.value.location.file == "exp.kir"
    assert "more than 2000 ops" in info.value.message


def test_an_empty_module_is_refused_before_construction():
    with pytest.raises(KirError) as info:
        construct(kir.parse("# nothing here\n", "empty.kir"))
    assert info.value.location == SourceLocation("empty.kir", 1, 1)


def test_a_symbol_only_inside_products_is_refused_before_construction():
    """It used to construct, then fail after a full optimize at serialization."""
    text = "kernel k(X: f32[G*CPG], Y: out f32[G*CPG]) {\n  Y[i] = X[i]\n}\n"
    with pytest.raises(KirError) as info:
        construct(kir.parse(text, "sym.kir"))
    assert info.value.location == SourceLocation("sym.kir", 1, 10)
    assert "'G' cannot be determined" in info.value.message
