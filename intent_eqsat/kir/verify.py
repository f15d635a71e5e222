"""The KIR verifier (SPEC PASS-5): semantic legality only, never GPU profitability.

On top of what ``infer.py`` already rejects (names, types, index use, combiner kinds), it checks:

* **subscripts in range** by interval analysis over affine subscripts (``poly.py``): every subscript must provably
  lie in ``[0, extent)`` over its index domain, using the conditions of enclosing ``where`` predicates as facts
  (``X[h + kh - 1] where 0 <= h + kh - 1 && h + kh - 1 < H else 0``). A plain index variable that cannot be
  shown to fit is a *shape mismatch*; anything else is an *out-of-domain subscript*. Subscripts that read tensors
  (gathers, scatter targets through index tensors) are data-dependent: the evaluator checks them at run time;
* **collision semantics**: a write whose target index is not provably injective over the statement's domain needs
  a ``collide`` clause;
* **out views** are fully written by a plain store (``C[m, n] = ...`` with distinct index variables) before they
  are read or updated, and at least once;
* **combiner claims** (``associative``, ``commutative``, identity) hold on a deterministic sample of values,
  evaluated in float64 (exact for the ints and small floats sampled; a tolerance absorbs rounding in transcendental
  combiners).

Every error is a :class:`KirError` whose ``location`` is the ``file:line:col`` of the offending token.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping

import ml_dtypes
import numpy as np

from intent_eqsat.errors import KirError
from intent_eqsat.kir import dtypes as dt
from intent_eqsat.kir import model as m
from intent_eqsat.kir.dims import dim_str, dim_symbols, is_product
from intent_eqsat.kir.ids import assign_ids
from intent_eqsat.kir.infer import KernelFacts, ModuleFacts, Ref, Site, infer_module, start_node, where_of
from intent_eqsat.kir.poly import Interval, Poly, interval_of, prove_nonneg, provably_nonneg
from intent_eqsat.kir.printer import print_expr


_NOREF = Ref("", "")


def verify(module: m.KirModule) -> None:
    """Raise :class:`KirError` if ``module`` is not a legal KIR module."""
    check(module)


def check(module: m.KirModule) -> ModuleFacts:
    """Verify ``module`` and return the inferred facts (used by the evaluator and the analyses).

    Ids are (re)assigned first — a no-op for parsed or builder-made modules, whose ids are already positional — so
    that a hand-assembled tree cannot confuse facts keyed by id."""
    check_shape_of_module(module)
    facts = infer_module(assign_ids(module))
    for c in facts.combiners.values():
        check_literals(c, facts.combiner_types)
        check_combiner_laws(c, facts)
    for kf in facts.kernels.values():
        _KernelChecks(kf).run()
    return facts


def check_shape_of_module(module: m.KirModule) -> None:
    """A module has a kernel (one with only combiners, or none, computes nothing and constructs to no program), and
    no expression deeper than ``MAX_TREE_DEPTH`` (the parser refuses those; this catches builder-made trees before
    any recursive pass meets them)."""
    if not module.kernels:
        what = "is empty" if not module.items else "has only combiners"
        raise KirError(f"the module {what}: it needs at least one kernel", module.loc or "module")
    for item in module.items:
        roots = ([(s, f"{item.name}.s{i}") for i, s in enumerate(item.body)] if isinstance(item, m.Kernel)
                 else [(item, item.name)])
        for root, where in roots:
            # depth counted from the module, as the parser does (module -> kernel -> statement, module -> combiner)
            deep = m.too_deep(root, m.MAX_TREE_DEPTH - (2 if isinstance(item, m.Kernel) else 1))
            if deep is not None:
                raise KirError(f"expression too deeply nested (more than {m.MAX_TREE_DEPTH} levels)",
                               deep.loc or root.loc or where)


def check_literals(root: m.Node, types: Mapping[str, m.Type]) -> None:
    """Every number literal fits the dtype it takes (weak literals adopt their context's dtype): ``x * 1e5`` with
    ``x: f16`` would silently be ``x * inf``, ``i + 300`` with ``i: i8`` would wrap."""
    for n in m.walk(root):
        if not isinstance(n, m.Num) or n.kind == "bool" or n.id not in types:
            continue
        t = types[n.id]
        if not isinstance(t, str):
            continue
        problem = literal_problem(n, dt.materialize(t))
        if problem:
            raise KirError(problem, where_of(n))


def literal_problem(n: m.Num, t: str) -> str | None:
    """Why literal ``n`` cannot be a value of dtype ``t``, or None."""
    if t in dt.INTS:
        if n.kind != "int":
            return None
        info = np.iinfo(dt.NUMPY[t])
        v = n.value
        if not info.min <= v <= info.max:
            return f"integer literal {n.text} does not fit {t} (range {info.min}..{info.max}) here"
        return None
    if t in dt.FLOATS:
        try:
            v = float(n.value)
        except OverflowError:
            v = math.inf
        if math.isnan(v) or (math.isinf(v) and n.kind == "float"):
            return None     # inf, -inf and nan are written as such
        with np.errstate(over="ignore"):
            rounded = float(np.asarray(v, dtype=np.float64).astype(dt.NUMPY[t])) if math.isfinite(v) else v
        if math.isinf(rounded):
            top = float(ml_dtypes.finfo(dt.NUMPY[t]).max)
            return (f"literal {n.text} is out of the range of {t} (largest finite value {top:.6g}): it would be "
                    f"infinity here; write inf, or compute in a wider dtype")
    return None


# ------------------------------------------------------------------------------------- subscripts as polys


class Data(Exception):
    """Raised while converting a subscript that depends on tensor data (checked at run time instead)."""


class SubscriptPolys:
    """Converts integer index expressions of one kernel to :class:`Poly` and gives each atom its interval.

    Atoms: a shape symbol is its name (interval ``[N, N]``); an index variable is ``@<key>`` (its domain); a by-value
    scalar is ``$<name>`` (unknown); ``a // c``, ``a % c`` and other opaque integer expressions are ``(<text>)``
    with an interval derived from their operands."""

    def __init__(self, kf: KernelFacts):
        self.kf = kf
        self.atoms: dict[str, Interval] = {s: Interval(Poly.atom(s), Poly.atom(s)) for s in kf.symbols}
        for key, info in kf.vars.items():
            self.atoms["@" + key] = Interval(info.lo, info.hi - 1)
        #: the floor quotients of arithmetic dims (``(H // 2)``): opaque in ``atoms``, bounded here (prove_nonneg)
        self.refine: dict[str, Interval] = {}
        for key, (num, den) in kf.quotients.items():
            self.atoms[key] = Interval(Poly.atom(key), Poly.atom(key))
            self.refine[key] = self.quotient_interval(num, den, "floordiv")

    def poly(self, e: m.Expr) -> Poly:
        if isinstance(e, m.Num):
            if e.kind != "int":
                raise Data()
            return Poly.const(int(e.text))
        if isinstance(e, m.Name):
            ref = self.kf.refs.get(e.id)
            if ref is None:
                raise Data()
            if ref.kind == "index":
                return Poly.atom("@" + ref.target)
            if ref.kind == "symbol":
                return Poly.atom(ref.target)
            if ref.kind == "scalar":
                return Poly.atom("$" + ref.target)
            raise Data()
        if isinstance(e, m.Access):
            raise Data()
        if isinstance(e, m.Unary) and e.op == "neg":
            return -self.poly(e.x)
        if isinstance(e, m.Binary) and e.op in ("add", "sub", "mul"):
            a, b = self.poly(e.a), self.poly(e.b)
            return a + b if e.op == "add" else (a - b if e.op == "sub" else a * b)
        if isinstance(e, m.Binary) and e.op in ("floordiv", "mod"):
            return self.opaque_div(e)
        for n in m.walk(e):  # an opaque expression that reads tensor data is data-dependent
            if isinstance(n, m.Access) or (isinstance(n, m.Name) and self.kf.refs.get(n.id, _NOREF).kind
                                           in ("let", "local", "state")):
                raise Data()
        key = f"({print_expr(e)})"
        self.atoms.setdefault(key, Interval(None, None))
        return Poly.atom(key)

    def opaque_div(self, e: m.Binary) -> Poly:
        """``a // b`` or ``a % b`` as an opaque atom with the interval its operands imply
        (:meth:`quotient_interval`)."""
        key = f"({print_expr(e)})"
        if key not in self.refine:          # (a subscript written like a dim's quotient is that quotient)
            self.atoms[key] = self.quotient_interval(self.poly(e.a), self.poly(e.b), e.op)
        return Poly.atom(key)

    def quotient_interval(self, a: Poly, b: Poly, op: str) -> Interval:
        """The interval of ``a // b`` (``op`` "floordiv") or ``a % b`` ("mod"). ``b`` must be a positive constant or
        a positive multiple of a product of shape symbols (each >= 1) for a bound to be known.

        Floor division by such a ``b`` is bounded exactly when a bound of ``a`` is a multiple of ``b``: ``a <= b*q - 1``
        gives ``a // b <= q - 1`` and ``a >= b*q`` gives ``a // b >= q`` (any sign, ``q`` an integer polynomial), so a
        channel ``c`` in ``0..G*CPG`` gives ``c // CPG`` in ``[0, G - 1]`` and ``i`` in ``0..2*H`` gives ``i // 2`` in
        ``[0, H - 1]`` (issue 27 item 7). Otherwise a constant ``b`` divides the bounds (rounded when constant) and a
        symbolic ``b`` keeps a non-negative ``a``'s bounds (``0 <= a // b <= a``)."""
        ia = interval_of(a, self.atoms)
        lo: Poly | None = None
        hi: Poly | None = None
        positive_const = b.is_const() and b.const_value() > 0
        positive_monomial = len(b.terms) == 1 and b.terms[0][1] > 0 and all(x in self.kf.symbols
                                                                             for x in b.terms[0][0])
        if (positive_const or positive_monomial) and op == "mod":
            lo, hi = Poly(), b - 1
        elif positive_const:
            c = b.const_value()
            # floor(x / c) lies in [(x - (c - 1)) / c, x / c]; exact when the bound is a constant.
            lo = None if ia.lo is None else _div_bound(ia.lo - (c - 1), c, math.ceil)
            hi = None if ia.hi is None else _div_bound(ia.hi, c, math.floor)
        elif positive_monomial:
            nonneg = ia.lo is not None and provably_nonneg(ia.lo)
            lo = Poly() if nonneg else None
            hi = ia.hi if nonneg and ia.hi is not None and provably_nonneg(ia.hi) else None
        if (positive_const or positive_monomial) and op == "floordiv":
            q_lo = None if ia.lo is None else ia.lo.exact_quotient(b)
            q_hi = None if ia.hi is None else (ia.hi + 1).exact_quotient(b)
            if q_lo is not None:
                lo = q_lo
            if q_hi is not None:
                hi = q_hi - 1
        return Interval(lo, hi)

    def facts(self, guards: tuple[m.Expr, ...]) -> list[Poly]:
        """Conditions of enclosing ``where``s as facts ``p >= 0`` (integer comparisons joined by ``&&``)."""
        out: list[Poly] = []
        stack = list(guards)
        while stack:
            g = stack.pop()
            if isinstance(g, m.Binary) and g.op == "and":
                stack += [g.a, g.b]
                continue
            if not isinstance(g, m.Binary) or g.op not in ("lt", "le", "gt", "ge", "eq"):
                continue
            if not all(dt.is_int(self.kf.types.get(x.id, "")) for x in (g.a, g.b)):  # type: ignore[arg-type]
                continue
            try:
                a, b = self.poly(g.a), self.poly(g.b)
            except Data:
                continue
            if g.op == "lt":
                out.append(b - a - 1)
            elif g.op == "le":
                out.append(b - a)
            elif g.op == "gt":
                out.append(a - b - 1)
            elif g.op == "ge":
                out.append(a - b)
            else:
                out += [a - b, b - a]
        return out


def _div_bound(p: Poly, c: Fraction, rounding) -> Poly:
    """``p / c``; a constant bound is rounded to the integer it implies (ceil for lower, floor for upper)."""
    if p.is_const():
        return Poly.const(rounding(p.const_value() / c))
    return p * (Fraction(1) / c)


# ------------------------------------------------------------------------------------------ kernel checks


class _KernelChecks:
    def __init__(self, kf: KernelFacts):
        self.kf = kf
        self.polys = SubscriptPolys(kf)

    def run(self) -> None:
        k = self.kf.kernel
        if not any(p.is_view and p.access != "in" for p in k.params):
            raise KirError(f"kernel {k.name!r} has no out or inout view, so it computes nothing", where_of(k))
        self.check_symbols_determined()
        for s in k.body:
            check_literals(s, self.kf.types)
        for site in self.kf.sites:
            self.check_site(site)
        for s in k.body:
            if isinstance(s, m.Assign):
                self.check_collisions(s)
        self.check_out_views()

    # ------------------------------------------------------------------------------------- shape symbols

    def check_symbols_determined(self) -> None:
        """Every shape symbol is determined by the shapes of the kernel's views, the one way the evaluator, the
        launch wrapper and the serializers bind symbols: a symbol that is a whole dimension of a view is that
        axis's size; a product dimension (``G*CPG``) determines its one factor not yet known, once the others are
        (repeated until nothing changes). A symbol that is never determined (``X: f32[G*CPG]`` alone) has no
        value at launch."""
        k = self.kf.kernel
        known: set[str] = set()
        progress = True
        while progress:
            progress = False
            for p in k.params:
                for d in p.dims or ():
                    if not is_product(d):           # an arithmetic dim (H - 2) determines nothing: kir.dims
                        continue
                    unknown = [f for f in d if isinstance(f, str) and f not in known]
                    if len(unknown) == 1:
                        known.add(unknown[0])
                        progress = True
        for s in self.kf.symbols:
            if s in known:
                continue
            in_product = [(p, d) for p in k.params for d in p.dims or () if is_product(d) and s in d]
            if not in_product:
                p, d = next((p, d) for p in k.params for d in p.dims or () if s in dim_symbols(d))
                raise KirError(f"shape symbol {s!r} cannot be determined from the view shapes: it appears only in "
                               f"the dimension {dim_str(d)} of {p.name!r}, and a dimension that is not a product "
                               f"determines no symbol; make {s} a whole dimension of some view", where_of(p))
            p, d = in_product[0]
            others = [f for f in d if isinstance(f, str) and f != s]
            why = (f"it is a factor of {s}*{s}" if d.count(s) > 1 else
                   f"its co-factor{'s' if len(others) > 1 else ''} {', '.join(dict.fromkeys(others))} "
                   f"{'are' if len(others) > 1 else 'is'} not determined either")
            raise KirError(f"shape symbol {s!r} cannot be determined from the view shapes: it appears only inside "
                           f"the product dimension {'*'.join(map(str, d))} of {p.name!r} and {why}; make {s} (or "
                           f"a co-factor) a whole dimension of some view", where_of(p))

    # ------------------------------------------------------------------------------------- range

    def check_site(self, site: Site) -> None:
        try:
            s = self.polys.poly(site.sub)
        except Data:
            return
        facts = self.polys.facts(site.guards)
        atoms = self.polys.atoms
        refine = self.polys.refine
        low_ok = prove_nonneg(s, atoms, facts, refine)
        high_ok = prove_nonneg(site.extent - 1 - s, atoms, facts, refine)
        if low_ok and high_ok:
            return
        sub = site.sub
        what = f"{site.target} axis {site.axis}"
        ref = self.kf.refs.get(sub.id) if isinstance(sub, m.Name) else None
        if ref is not None and ref.kind == "index":
            info = self.kf.vars[ref.target]
            raise KirError(f"shape mismatch: index {info.name!r} ranges over {info.lo}..{info.hi} (from "
                           f"{info.source}) but subscripts {what}, whose extent is {site.extent}", where_of(sub))
        iv = interval_of(s, atoms)
        span = f"[{iv.lo if iv.lo is not None else '?'}, {iv.hi if iv.hi is not None else '?'}]"
        side = "below 0" if not low_ok else f"at or above {site.extent}"
        raise KirError(f"out-of-domain subscript: {print_expr(sub)} (values in {span}) may fall {side} on {what}; "
                       f"guard it with 'where' or narrow the index range", where_of(start_node(sub)))

    # -------------------------------------------------------------------------------- collisions

    def injective(self, s: m.Assign) -> str | None:
        """None if the target index provably determines the member; else the reason it may not."""
        free = self.kf.stmt_vars[s.id]
        recovered: set[str] = set()
        for sub in s.subs:
            try:
                p = self.polys.poly(sub)
            except Data:
                continue
            idx_atoms = [a for a in p.atoms() if a.startswith("@")]
            if len(idx_atoms) != 1:
                continue
            a = idx_atoms[0]
            # sub = c*a + rest where rest has no index variable: a is recovered from the subscript.
            coeff = dict(p.terms).get((a,))
            if coeff and all(a not in mono or mono == (a,) for mono, _ in p.terms):
                recovered.add(a[1:])
        missing = [self.kf.vars[k].name for k in free if k not in recovered]
        if not missing:
            return None
        return f"index {missing[0]!r} cannot be recovered from the subscripts"

    def check_collisions(self, s: m.Assign) -> None:
        if s.collide is not None:
            return
        why = self.injective(s)
        if why is None:
            return
        if s.op == "=":
            fix = "add 'collide any' (one write wins) or 'collide unique' (indices never repeat)"
        else:
            fix = f"add 'collide {m.UPDATE_OPS[s.op]}' (colliding updates combine) or 'collide unique'"
        raise KirError(f"scatter without collision semantics: the target index of {s.target!r} may repeat across "
                       f"the statement's domain ({why}); {fix}", where_of(s))

    # ------------------------------------------------------------------------------------- out views

    def full_store(self, s: m.Assign) -> bool:
        """A plain store whose subscripts are distinct index variables, each ranging over its whole axis (a free
        index of a store ranges over the first axis it subscripts, the left-hand side first), or the literal ``0``
        on an axis of extent 1 (``Y[m, 0]`` of ``Y: out f32[M, 1]``, a kept dimension as PyTorch's ``keepdim``
        writes it; issue 27 item 7)."""
        if s.op != "=" or s.collide is not None:
            return False
        extents = self.kf.dims[s.target]
        names = []
        for axis, sub in enumerate(s.subs):
            if isinstance(sub, m.Num) and sub.kind == "int" and int(sub.text) == 0 \
                    and extents[axis] == Poly.const(1):
                continue
            ref = self.kf.refs.get(sub.id) if isinstance(sub, m.Name) else None
            if ref is None or ref.kind != "index":
                return False
            names.append(ref.target)
        return len(set(names)) == len(names)

    def check_out_views(self) -> None:
        k = self.kf.kernel
        outs = {p.name for p in k.params if p.is_view and p.access == "out"}
        written: set[str] = set()
        sites_of: dict[str, list[Site]] = {}
        for site in self.kf.sites:
            sites_of.setdefault(site.stmt, []).append(site)
        for s in k.body:
            for site in sites_of.get(s.id, ()):
                if site.target in outs and site.target not in written and site.access != s.id:
                    raise KirError(f"out view {site.target!r} is read before it is fully written; write every "
                                   f"element first (e.g. {site.target}[...] = 0) or declare it inout",
                                   where_of(self._node(site.access, s)))
            if isinstance(s, m.Assign) and s.target in outs and s.target not in written:
                if not self.full_store(s):
                    raise KirError(f"out view {s.target!r} is updated before it is fully written; start with a plain "
                                   f"store of every element (e.g. {s.target}[...] = 0) or declare it inout",
                                   where_of(s))
                written.add(s.target)
        for p in k.params:
            if p.name in outs and p.name not in written:
                raise KirError(f"out view {p.name!r} is never written", where_of(p))

    @staticmethod
    def _node(node_id: str, s: m.Stmt) -> m.Node:
        for n in m.walk(s):
            if n.id == node_id:
                return n
        return s


# ----------------------------------------------------------------------------------------- combiner laws


def _samples(t: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if dt.is_float(t):
        return rng.choice(np.array([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]), n)
    if t == "bool":
        return rng.integers(0, 2, n).astype(bool)
    lo = 0 if t in dt.UNSIGNED else -3
    return rng.integers(lo, 6, n).astype(dt.NUMPY[t])


def _close(x: tuple, y: tuple) -> np.ndarray:
    ok = np.ones(np.broadcast_shapes(*(np.shape(v) for v in x + y)), dtype=bool)
    for a, b in zip(x, y):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "f":
            ok &= np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)
        else:
            ok &= a == b
    return ok


def _member_literals(c: m.Combiner, module: m.KirModule) -> list[set | None]:
    """Per component of ``c``'s type, the literal values its members take at every use, or ``None`` where some use
    gives a computed value (or ``c`` has no use at all).

    A member is what a use folds into the state: the body of a ``reduce``/``scan`` with ``combine=c``, the result of
    a region's ``summarize`` block. ``reduce(n: (1.0, X[m, n], 0.0), combine=chan)`` (a count, a value, a zero
    second moment) gives ``[{1.0}, None, {0.0}]``: every state the kernel can reach has a positive integer count
    and a non-negative moment."""
    arity = len(c.type) if isinstance(c.type, tuple) else 1
    found: list[set | None] = [set() for _ in range(arity)]
    uses = 0
    for k in module.kernels:
        for stmt in k.body:
            for n in m.walk(stmt):
                if isinstance(n, (m.Reduce, m.Scan)) and n.combine == c.name:
                    member = n.body
                elif isinstance(n, (m.RegionFold, m.RegionScan)) and n.combine == c.name:
                    member = n.summarize.result
                else:
                    continue
                uses += 1
                parts = member.elems if isinstance(member, m.TupleExpr) else (member,)
                for i in range(arity):
                    part = parts[i] if len(parts) == arity else None
                    if found[i] is not None and isinstance(part, m.Num):
                        found[i].add(part.value)
                    else:
                        found[i] = None
    return found if uses else [None] * arity


def check_combiner_laws(c: m.Combiner, facts: ModuleFacts) -> None:
    """Test the combiner's declared laws in float64 on a fixed sample of states the kernels can reach.

    A state is a fold of one to three members from the module's uses of ``c`` (:func:`_member_literals`: a
    component every use gives as a literal keeps that literal, the others are small sampled values), so a
    combiner that is associative only on its domain -- Chan's mean/variance merge divides by the combined count,
    which a member never makes zero or negative -- is judged where it runs (issue 27 item 6); regrouping a
    reduction's members only ever combines such states. Results are compared with a relative tolerance of 1e-9
    (float64 rounding, not the kernel dtype's), NaN equal to NaN."""
    if not (c.associative or c.commutative):
        return
    from intent_eqsat.kir.evaluator import _KernelEval

    comps = c.type if isinstance(c.type, tuple) else (c.type,)
    literals = _member_literals(c, facts.module)
    rng = np.random.default_rng(0)
    n = 96

    def leaves() -> tuple:
        return tuple(_samples(t, rng, n) if lit is None else
                     rng.choice(np.array(sorted(lit), dtype=np.float64 if dt.is_float(t) else dt.NUMPY[t]), n)
                     for t, lit in zip(comps, literals))

    ev = _KernelEval(_empty_kernel_facts(), facts, True)

    def comb(a: tuple, b: tuple) -> tuple:
        wrap = (lambda v: v) if isinstance(c.type, tuple) else (lambda v: v[0])
        r = ev.combine(c.name, wrap(a), wrap(b), c.type)
        r = r if isinstance(r, tuple) else (r,)
        return tuple(np.broadcast_to(np.asarray(v), (n,)) for v in r)

    def state() -> tuple:
        one = leaves()
        two = comb(one, leaves())
        three = comb(two, leaves())
        pick = rng.integers(0, 3, n)
        return tuple(np.where(pick == 0, a, np.where(pick == 1, b, d)) for a, b, d in zip(one, two, three))

    x, y, z = state(), state(), state()
    ident = ev.identity(c.name, c.type)
    ident = ident if isinstance(ident, tuple) else (ident,)

    def show(v: tuple, i: int) -> str:
        vals = [np.asarray(a)[i].item() if np.ndim(a) else np.asarray(a).item() for a in v]
        return str(vals[0]) if len(vals) == 1 else "(" + ", ".join(map(str, vals)) + ")"

    def fail(law: str, ok: np.ndarray, *args: tuple) -> None:
        i = int(np.argmin(ok))
        names = "xyz"
        shown = ", ".join(f"{names[j]}={show(a, i)}" for j, a in enumerate(args))
        flag = c.commutative_loc if law.startswith("commutative") else c.associative_loc
        raise KirError(f"combiner {c.name!r} is declared {law} for {shown}", flag or where_of(c))

    if c.associative:
        ok = _close(comb(comb(x, y), z), comb(x, comb(y, z)))
        if not ok.all():
            fail("associative but combine(combine(x, y), z) != combine(x, combine(y, z))", ok, x, y, z)
        ok = _close(comb(ident, x), x) & _close(comb(x, ident), x)
        if not ok.all():
            fail("associative with identity " + print_expr(c.identity) + " but combine(identity, x) or "
                 "combine(x, identity) != x", ok, x)
    if c.commutative:
        ok = _close(comb(x, y), comb(y, x))
        if not ok.all():
            fail("commutative but combine(x, y) != combine(y, x)", ok, x, y)


def _empty_kernel_facts() -> KernelFacts:
    from types import MappingProxyType

    empty: Mapping = MappingProxyType({})
    return KernelFacts(kernel=m.Kernel(name="", params=(), body=()), symbols=(), dims=empty, types=empty,
                       refs=empty, vars=empty, bind_keys=empty, stmt_vars=empty, lets=empty, sites=())
