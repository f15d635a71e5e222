"""KIR -> the first complete GPU program (SPEC PASS-3.1, PASS-2.2), then the construction verifier (PASS-5).

For every KIR kernel one physical kernel (one launch, IR-2):

* the public ABI: every view with its dtype, shape (over shape symbols, the host-visible metadata of IR-3.1) and
  access mode (``in`` -> read, ``out`` -> write, ``inout`` -> readwrite; the KIR verifier guarantees an ``out``
  view is fully stored before it is updated or read), every by-value scalar;
* a *workset* per group of statements that write the same view (one statement, or a full store followed by
  updates/stores of the same view): a program-space segment over the first statement's free domain with scalar
  ownership (one program per member), and one ``execution_group`` that lowers the statement at its point and
  writes it. Later statements of a workset run as ordered loops over their own domains inside the owner's program,
  contributing where their target coordinates equal the owner's (so no two programs ever write one element);
* writes: ``=`` is a ``store`` (a ``scatter`` when the target coordinates are data-dependent, an atomic exchange
  for ``collide any``); updates (``+=`` ...) are ``scatter_reduce`` with the declared combiner;
* every op carries the KIR id it came from (the origin map); compile options are attached to the module.

What cannot be one launch is refused here, early, with the reason: a statement reading a view another statement of
the kernel writes needs a grid-wide barrier (IR-9), which the common IR does not have.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intent_eqsat.construct.emitter import Emitter
from intent_eqsat.construct.lower import INDEX, I1, Env, Lowerer, Tables, gpu_dtype, poly_to_launch
from intent_eqsat.errors import ConstructionError
from intent_eqsat.ir.builder import ModuleBuilder, RegionBuilder
from intent_eqsat.ir.core import CompileOptions, Module, Value
from intent_eqsat.ir.types import ScalarType
from intent_eqsat.ir.verify import verify
from intent_eqsat.ir.verify_errors import VerificationError
from intent_eqsat.rules.canonical import canonicalize
from intent_eqsat.kir import model as m
from intent_eqsat.kir.analysis import KernelAnalysis, analyze
from intent_eqsat.kir.infer import KernelFacts, ModuleFacts
from intent_eqsat.kir.verify import check

_ACCESS = {"in": "read", "out": "write", "inout": "readwrite"}
_UPDATE = {"+=": "add", "*=": "mul", "max=": "max", "min=": "min"}


@dataclass
class Workset:
    """Statements realized by one execution group: ``owner`` fixes the ownership, ``followers`` update the same
    view afterwards."""

    owner: m.Assign
    followers: list[m.Assign]


def construct(module: m.KirModule, *, target: str = "sm90", options: CompileOptions | None = None,
              verify_result: bool = True) -> Module:
    """Build the first complete GPU program of every kernel of ``module`` and run the construction verifier.

    Raises :class:`~intent_eqsat.errors.KirError` for an illegal KIR module and
    :class:`~intent_eqsat.errors.ConstructionError` for a kernel that cannot be one launch.
    """
    facts = check(module)
    analysis = analyze(module, facts)
    opts = options or CompileOptions()
    mb = ModuleBuilder(target, opts)
    for kernel in module.kernels:
        _construct_kernel(mb, facts, facts.kernels[kernel.name], analysis.kernels[kernel.name],
                          checks=opts.subscript_checks)
    program = mb.build()
    # Canonical form: the term encoding shares equal pure computations and drops unused ones, so the first
    # program is CSE'd/DCE'd and is exactly what decoding its own encoding gives (rules/encode.py).
    program.kernels = [canonicalize(k) for k in program.kernels]
    if verify_result:
        try:
            verify(program, stage="construction")
        except VerificationError as err:  # a construction bug, reported as such with the verifier's reason
            raise ConstructionError(f"construction produced an invalid program: {err}", err.location) from err
    return program


def _worksets(kernel: m.Kernel, ka: KernelAnalysis) -> list[Workset]:
    """Group statements by the view they write; refuse read-after-write across statements."""
    assigns = [s for s in kernel.body if isinstance(s, m.Assign)]
    written: dict[str, m.Assign] = {}
    sets: list[Workset] = []
    by_target: dict[str, Workset] = {}
    for s in assigns:
        eff = ka.effects[s.id]
        for name in eff.reads:
            if name in written and name != s.target:
                raise ConstructionError(
                    f"statement {s.id} reads view {name!r}, which statement {written[name].id} of the same kernel "
                    f"writes: one launch has no grid-wide barrier (SPEC IR-9); split the kernel", s.loc or s.id)
        if s.target in by_target:
            ws = by_target[s.target]
            owner_eff = ka.effects[ws.owner.id]
            if not (ws.owner.op == "=" and owner_eff.full_write and _identity_subscripts(ws.owner, ka)):
                raise ConstructionError(
                    f"statement {s.id} writes view {s.target!r} again after statement {ws.owner.id}, which is not a "
                    f"full store over the view's own domain: no single owner per element exists", s.loc or s.id)
            if s.target in eff.reads:
                raise ConstructionError(f"statement {s.id} reads the view {s.target!r} it updates after an earlier "
                                        f"statement wrote it", s.loc or s.id)
            ws.followers.append(s)
        else:
            ws = Workset(s, [])
            by_target[s.target] = ws
            sets.append(ws)
        written[s.target] = s
    return sets


def _identity_subscripts(s: m.Assign, ka: KernelAnalysis) -> bool:
    """True when the statement's subscripts are its distinct free index variables, one per axis."""
    names = [sub.name for sub in s.subs if isinstance(sub, m.Name)]
    return len(names) == len(s.subs) and len(set(names)) == len(names)


def _construct_kernel(mb: ModuleBuilder, facts: ModuleFacts, kf: KernelFacts, ka: KernelAnalysis,
                      checks: bool = True) -> None:
    kernel = kf.kernel
    kb = mb.kernel(kernel.name, origin=kernel.id or kernel.name)
    worksets = _worksets(kernel, ka)
    abi: dict[str, Value] = {}
    for p in kernel.params:
        if p.is_view:
            access = _ACCESS[p.access]
            shape = [poly_to_launch(d, quotients=kf.quotients) for d in kf.dims[p.name]]
            abi[p.name] = kb.view(p.name, gpu_dtype(p.dtype), shape, access=access)
        else:
            abi[p.name] = kb.scalar(p.name, gpu_dtype(p.dtype))

    for ws in worksets:
        keys = kf.stmt_vars[ws.owner.id]
        extents = [poly_to_launch(kf.vars[k].hi - kf.vars[k].lo, quotients=kf.quotients) for k in keys]
        kb.segment(extents)

    tables = Tables.of(facts, kf)

    def body(rb: RegionBuilder, pid: Value) -> None:
        for i, ws in enumerate(worksets):
            keys = kf.stmt_vars[ws.owner.id]
            hints = [kf.vars[k].name for k in keys]
            rb.with_origin(ws.owner.id).execution_group(
                i, pid, lambda r, coords, ws=ws, keys=keys: _group(r, coords, ws, keys, facts, kf, abi, tables,
                                                                   checks),
                rank=len(keys), hints=hints)

    kb.body(body)


def _group(rb: RegionBuilder, coords: list[Value], ws: Workset, keys: tuple[str, ...], facts: ModuleFacts,
           kf: KernelFacts, abi: dict[str, Value], tables: Tables, checks: bool = True) -> None:
    em = Emitter(rb, args=coords, min_depth=0)
    low = Lowerer(facts, kf, em, abi, tables)
    low.subscript_checks = checks
    owner = ws.owner
    env = Env(vars=dict(zip(keys, coords)))
    for key, coord in zip(keys, coords):
        low.record_span(coord, key)
    em.origin = owner.id
    if not ws.followers:
        _write(low, owner, env)
        return
    # Owner-computes: the owner's value at its point, then each follower's members that hit this element.
    view = abi[owner.target]
    value = low.coerce(low.value(owner.value, env), view.type.dtype)
    target_coords = [low.index(s, env) for s in owner.subs]
    for f in ws.followers:
        value = _follow(low, f, value, target_coords, view)
    em.origin = owner.id
    em.effect("store", [view, *target_coords, value], valid=False)


def _follow(low: Lowerer, f: m.Assign, acc: Value, target: list[Value], view: Value) -> Value:
    """Fold follower statement ``f`` into the owner's element ``target``: an ordered loop nest over ``f``'s domain
    applying each member whose target coordinates equal ``target`` (in row-major member order, as the reference)."""
    keys = low.kf.stmt_vars[f.id]
    em = low.em

    def nest(level: int, env: Env, carried: Value) -> Value:
        if level == len(keys):
            prev = em.origin
            em.origin = f.id
            coords = [low.index(s, env) for s in f.subs]
            hit = None
            for c, t in zip(coords, target):
                hit = low.and_valid(hit, low.cmp("eq", c, t))
            x = low.coerce(low.value(f.value, env), view.type.dtype)
            new = x if f.op == "=" else em.pure(_UPDATE[f.op], [carried, x], carried.type)
            out = low.select(hit, new, carried) if hit is not None else new
            em.origin = prev
            return out
        lo, hi = low.extent(keys[level])
        return low.loop(lo, hi, [carried],
                        lambda iv, c: [nest(level + 1, Env(vars={**env.vars, keys[level]: iv}), c[0])],
                        hint=low.kf.vars[keys[level]].name)[0]

    return nest(0, Env(), acc)


def _write(low: Lowerer, s: m.Assign, env: Env) -> None:
    em = low.em
    view = low.abi[s.target]
    value = low.coerce(low.value(s.value, env), view.type.dtype)
    coords = [low.index(sub, env) for sub in s.subs]
    data_dependent = any(isinstance(n, m.Access) for sub in s.subs for n in m.walk(sub))
    checked = low.checked_axes(s.subs)
    extra: dict[str, Any] = {"checked": checked} if checked else {}
    em.origin = s.id
    if s.op != "=":
        em.effect("scatter_reduce", [view, *coords, value], combine=_UPDATE[s.op], valid=False, **extra)
    elif s.collide == "any":
        em.effect("atomic_rmw", [view, *coords, value], [ScalarType(view.type.dtype)], kind="xchg",
                  order="relaxed", domain="device", valid=False, **extra)
    elif data_dependent:
        em.effect("scatter", [view, *coords, value], valid=False, **extra)
    else:
        em.effect("store", [view, *coords, value], valid=False)


__all__ = ["construct", "INDEX", "I1"]
