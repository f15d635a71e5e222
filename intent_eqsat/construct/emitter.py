"""Scoped op emission with loop-invariant placement and CSE, used by construction.

Construction lowers KIR expressions inside nested regions (execution group -> reduction loops -> ...) as steps run
by :func:`drive` (generators on an explicit stack, so deep expressions never grow the Python stack).
A pure op is placed in the outermost open region where all its operands are defined (its *depth* is the largest
depth of its operands), and an identical pure op already placed in that region (or an enclosing one) is reused.
So a let such as ``mx[m]`` used inside a reduction over ``n`` is computed once per program, before the loop, and
the initial program is not needlessly quadratic. Effects (stores, scatters, atomics) and region ops are emitted
in the current region, in program order.

This is ordinary SSA hygiene (PASS-4 "merge pure producer/consumer", "rematerialize pure values" stay legal): it
never changes which values are computed, only where and how often.
"""
from __future__ import annotations

from typing import Any, Callable, Generator, Sequence

from intent_eqsat.ir.builder import RegionBuilder
from intent_eqsat.ir.core import Op, Region, Value
from intent_eqsat.ir.spec import SPECS
from intent_eqsat.ir.types import Type

#: op categories whose results depend on nothing but their operands and attributes
_PURE_CATEGORIES = ("const", "unary", "binary", "compare", "select", "cast", "shape")


#: a lowering step: yields the sub-steps it needs (each answered with its result), returns its own result
Step = Generator[Any, Any, Any]


def drive(step: Step) -> Any:
    """Run a lowering step to completion without Python recursion.

    A step yields a sub-step to have it run; the sub-step's return value is sent back into the step (an exception
    it raises is thrown into the step instead). Pending steps live on ``stack``, so the Python stack stays flat
    however deep the lowered expression is."""
    stack: list[Step] = [step]
    sent: Any = None
    error: BaseException | None = None
    while True:
        top = stack[-1]
        try:
            if error is not None:
                err, error = error, None
                request = top.throw(err)
            else:
                request = top.send(sent)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            sent = stop.value
            continue
        except BaseException as exc:  # propagated to the waiting step, as a call would
            stack.pop()
            if not stack:
                raise
            error = exc
            continue
        stack.append(request)
        sent = None


def done(value: Any) -> Step:
    """A step that returns ``value`` at once (to pass a plain result where a step is expected)."""
    return value
    yield  # pragma: no cover - makes this a generator


def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, float) and x != x:
        return ("nan",)
    return (type(x).__name__, x) if isinstance(x, (bool, int, float)) else x


class Scope:
    def __init__(self, rb: RegionBuilder, depth: int):
        self.rb = rb
        self.depth = depth
        self.memo: dict[Any, Value] = {}


class Emitter:
    """A stack of open regions; ``pure`` places ops by operand depth, ``effect`` in the innermost region."""

    def __init__(self, rb: RegionBuilder, args: Sequence[Value] = (), min_depth: int = 0):
        self.scopes: list[Scope] = [Scope(rb, 0)]
        self.depth_of: dict[str, int] = {a.name: 0 for a in args}
        self.min_depth = min_depth
        self.origin: str | None = None
        #: loads may be hoisted like pure ops (inputs are read-only within a launch: construction checks it)
        self.hoist_loads = True
        #: ops emitted in the current region without sharing (effects and region ops); ``pure`` never adds to it
        self.unshared = 0
        #: every op emitted (pure ones once each); construction refuses a kernel whose program would be huge
        self.emitted = 0

    @property
    def current(self) -> Scope:
        return self.scopes[-1]

    def _depth(self, operands: Sequence[Value]) -> int:
        d = self.min_depth
        for v in operands:
            d = max(d, self.depth_of.get(v.name, len(self.scopes) - 1))
        return min(d, len(self.scopes) - 1)

    def _record(self, op: Op, depth: int) -> None:
        for r in op.results:
            self.depth_of[r.name] = depth

    def pure(self, name: str, operands: Sequence[Value], type_: Type, **attrs: Any) -> Value:
        """Emit (or reuse) a pure single-result op at the outermost legal depth."""
        hoistable = SPECS[name].category in _PURE_CATEGORIES or (self.hoist_loads and name in (
            "load", "gather", "launch", "range"))
        depth = self._depth(operands) if hoistable else len(self.scopes) - 1
        key = (name, tuple(v.name for v in operands), str(type_), _freeze(attrs))
        if hoistable:
            for scope in self.scopes[: depth + 1]:
                if key in scope.memo:
                    return scope.memo[key]
        scope = self.scopes[depth]
        rb = scope.rb.with_origin(self.origin)
        op = rb.op(name, operands, [type_], attrs)
        self.emitted += 1
        if not hoistable:
            self.unshared += 1
        self._record(op, depth)
        if hoistable:
            scope.memo[key] = op.result
        return op.result

    def effect(self, name: str, operands: Sequence[Value], result_types: Sequence[Type] = (), **attrs: Any) -> Op:
        rb = self.current.rb.with_origin(self.origin)
        op = rb.op(name, operands, result_types, attrs)
        self.unshared += 1
        self.emitted += 1
        self._record(op, len(self.scopes) - 1)
        return op

    def region_g(self, arg_types: Sequence[Type], build: Callable[..., Any], hints: Sequence[str] = ()):
        """A lowering step (see :func:`drive`) that opens a nested region (its args live at the new depth), runs
        the step ``build(*args)`` inside it (it returns the values to yield), closes it and returns it (not yet
        used by any op: the caller attaches it with ``op_with_regions``). The same region as
        ``RegionBuilder.sub_region`` builds, without a Python call per nesting level."""
        parent = self.current.rb
        depth = len(self.scopes)
        args = [Value(parent.names.fresh(hints[i] if i < len(hints) else None), t) for i, t in enumerate(arg_types)]
        region = Region(args, [])
        rb = RegionBuilder(parent.names, region, parent.origin)
        self.scopes.append(Scope(rb, depth))
        for a in args:
            self.depth_of[a.name] = depth
        try:
            out = yield build(*args)
        finally:
            self.scopes.pop()
        rb.yield_(list(out) if out is not None else [])
        return region

    def region(self, arg_types: Sequence[Type], build: Callable[..., Sequence[Value] | None],
               hints: Sequence[str] = ()) -> Region:
        """:meth:`region_g` with a plain ``build`` function."""
        return drive(self.region_g(arg_types, lambda *args: done(build(*args)), hints))

    def homes(self, values: Sequence[Value]) -> list[tuple[int, Scope]]:
        """Where ``values`` live: (depth, scope) of each value emitted here (kernel arguments live everywhere)."""
        out = []
        for v in values:
            d = self.depth_of.get(v.name)
            if d is not None and d < len(self.scopes):
                out.append((d, self.scopes[d]))
        return out

    def still_visible(self, homes: Sequence[tuple[int, Scope]]) -> bool:
        """Are values that lived at ``homes`` (see :meth:`homes`) still in scope here (their regions still open)?"""
        return all(d < len(self.scopes) and self.scopes[d] is scope for d, scope in homes)

    def op_with_regions(self, name: str, operands: Sequence[Value], result_types: Sequence[Type],
                        regions: Sequence[Region], **attrs: Any) -> Op:
        rb = self.current.rb.with_origin(self.origin)
        op = rb.op(name, operands, result_types, attrs, regions)
        self.unshared += 1
        self.emitted += 1
        self._record(op, len(self.scopes) - 1)
        return op
