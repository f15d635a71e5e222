"""The comparison every optimizer test makes: a GPU IR program's NumPy interpretation equals the KIR reference."""
from __future__ import annotations

import os
from typing import Iterable, Mapping

import numpy as np

from intent_eqsat import ir, kir
from intent_eqsat.kir.inputs import random_inputs, tolerance


def assert_matches_reference(module: kir.KirModule, program: ir.Module, *, seeds: Iterable[int] = (11, 12),
                             inputs: Mapping | None = None, sizes: Mapping[str, int] | None = None, lo: int = 1,
                             hi: int = 7, min_rtol: float = 0.0, min_atol: float = 0.0) -> None:
    """For every kernel of ``module``: ``inputs`` (once), or random inputs per seed (shape sizes drawn in
    ``[lo, hi]`` unless ``sizes`` fixes them), run through the KIR evaluator and ``ir.interpret(program)``; outputs
    equal within the declared dtype's tolerance (at least ``min_rtol``/``min_atol``; exact for integer outputs),
    NaN where the reference has NaN."""
    for k in module.kernels:
        cases = [dict(inputs)] if inputs is not None else \
            [random_inputs(module, k.name, seed, sizes=sizes, lo=lo, hi=hi) for seed in seeds]
        for case in cases:
            copy = lambda: {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in case.items()}  # noqa
            ref = kir.evaluate(module, k.name, copy())
            got = ir.interpret(program, k.name, copy())
            for name, r in ref.items():
                rtol, atol = tolerance(k.param(name).dtype)
                if rtol == 0.0:
                    np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(r), err_msg=f"{k.name}.{name}")
                else:
                    np.testing.assert_allclose(np.asarray(got[name], np.float64), np.asarray(r, np.float64),
                                               rtol=max(rtol, min_rtol), atol=max(atol, min_atol), equal_nan=True,
                                               err_msg=f"{k.name}.{name}")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def corpus(name: str) -> kir.KirModule:
    """The corpus kernel ``examples/corpus/<name>.kir``, parsed."""
    path = os.path.join(ROOT, "examples", "corpus", f"{name}.kir")
    with open(path) as f:
        return kir.parse(f.read(), filename=path)


def suite(name: str) -> kir.KirModule:
    """The bench suite kernel ``bench/suite/<name>.kir``, parsed."""
    path = os.path.join(ROOT, "bench", "suite", f"{name}.kir")
    with open(path) as f:
        return kir.parse(f.read(), filename=path)


def optimize_in_small_tiles(module: kir.KirModule, sizes: Mapping[str, int]):
    """``module`` optimized for sm90 with the cost model at ``sizes`` (the program a user gets at those sizes) and
    tiles of 32 or 64 lanes, so that the interpreter's small inputs still span several tiles."""
    from intent_eqsat.construct import construct
    from intent_eqsat.extract.cost import RooflineCost
    from intent_eqsat.optimizer import optimize
    from intent_eqsat.providers.targets import get_target
    return optimize(construct(module), target="sm90", cost=RooflineCost(get_target("sm90"), dict(sizes)),
                    tile_candidates=(32, 64))


def ops_in_value_loops(kernel) -> list:
    """Every op inside a value-producing ``for`` of ``kernel`` (a reduction's member and what computes it), once per
    enclosing such loop."""
    return [x for op in ir.walk(kernel.body) if op.name == "for" and op.results
            for r in op.regions for x in ir.walk(r)]


def ops_named(ops, name: str | None = None) -> list:
    """Every op called ``name`` (every op: None) in ``ops`` and the regions below them, in program order."""
    out = []
    for op in ops:
        if name is None or op.name == name:
            out.append(op)
        for r in op.regions:
            out.extend(ops_named(r.ops, name))
    return out


def guarded_branch_ops(ops: list) -> list:
    """``ops`` as they run when every ``if`` takes its first branch: each ``if`` replaced by that branch's ops and its
    results by what the branch yields. ``ir.unswitch`` puts a tile loop whose inner blocking loop runs once under a
    launch guard (attention with a size-symbol head dimension within one tile) in such a branch, without the inner
    loop; the other branch is the loop nest as it was."""
    from dataclasses import replace

    from intent_eqsat.ir.core import Region
    subst: dict = {}

    def rewrite(ops: list) -> list:
        out = []
        for op in ops:
            op = replace(op, operands=[subst.get(v.name, v) for v in op.operands])
            if op.name == "if":
                *body, yielded = rewrite(op.regions[0].ops)
                out.extend(body)
                subst.update({r.name: v for r, v in zip(op.results, yielded.operands)})
                continue
            out.append(replace(op, regions=[Region(list(r.args), rewrite(r.ops)) for r in op.regions]))
        return out

    return rewrite(ops)


def iv_dependent(loop) -> set[str]:
    """Names of the values inside ``loop`` that depend (def-use) on its induction variable."""
    dep = {loop.regions[0].args[0].name}
    for op in ir.walk(loop.regions[0]):
        if any(v.name in dep for v in op.operands):
            dep.update(r.name for r in op.results)
    return dep
