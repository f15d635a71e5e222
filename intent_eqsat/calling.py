"""Calling a compiled kernel like a torch function (issue 24 items 1 and 2).

A :class:`CallPlan` is made once per kernel of a :class:`~intent_eqsat.api.CompiledKernel`: it knows the KIR
parameter order, which parameters are written, how to size an ``out`` view that the caller did not pass (its dims
are products of shape symbols, bound by the views that were passed), and the generated launcher's argument names.
A call then costs a walk over the parameters and the launcher's own checks: no hashing, no file reads, no
``inspect`` (the ~135 us per call the issue measured came from re-loading the module on every call).

Under ``torch.compile`` the call goes through a ``torch.library`` custom op (one per generated source,
``intent_eqsat::<kernel>_<sha256[:12]>``) whose schema marks the written views as mutated and whose fake
implementation does nothing (a kernel writes its outputs in place and returns nothing): Dynamo records the op
instead of tracing the launcher, so the kernel composes with the rest of a compiled graph in any mode, CUDA graphs
included (the launcher does no host synchronization except for checked data-dependent subscripts, whose read is
deferred while a graph is captured: ``providers.launch_checks``).
"""
from __future__ import annotations

import hashlib
import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

from intent_eqsat import ir, kir
from intent_eqsat.kir.dims import Dim, dim_str, dim_symbols, dim_value, is_product
from intent_eqsat.providers.torch_ops import TORCH_DTYPE_NAMES, op_ident, op_schema

#: launcher keywords that are not kernel parameters (launch control), passed through by name
LAUNCH_CONTROL = ("params", "num_warps", "num_stages")

#: custom ops registered in this process, by qualified name (a second CompiledKernel of the same source reuses it)
_OPS: dict[str, Any] = {}


@dataclass(frozen=True)
class _Slot:
    """One KIR parameter as the call sees it."""

    name: str                                   # the KIR name (what callers write)
    access: str                                 # "in" | "out" | "inout" | "scalar"
    dtype: str
    dims: tuple[Dim, ...] | None


class _OutSizing(NamedTuple):
    """How :meth:`CallPlan._allocate_simply` allocates one missing ``out`` view."""

    slot: int                                   # its parameter position
    dtype: Any                                  # the torch dtype (None with ``like``)
    dims: list                                  # per dim, its factors: ints and (slot, axis) of the given views
    like: int | None                            # the slot of a given view of the same dims and dtype: empty_like


def launcher_names(launch: Callable[..., Any], kernel: ir.Kernel) -> dict[str, str]:
    """Public ABI name -> the launcher's parameter name (the serializer renames reserved names with ``_``)."""
    sig = inspect.signature(launch)
    idents = [p.name for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY) and p.name not in LAUNCH_CONTROL]
    public = [a.name for a in kernel.abi if not a.private or (not a.is_view and a.producer is None)]
    return dict(zip(public, idents))


class CallPlan:
    """How to call one kernel: bind positional/keyword arguments in KIR order, allocate missing ``out`` views,
    launch, return the written views (one tensor, or a tuple in parameter order).

    Making a plan does no I/O: the generated module is imported (``load``) at the first launch, which never
    happens while Dynamo traces (it records :attr:`op` instead). A plan made while torch is imported registers
    its op at once, so that tracing finds it registered (registering inside a trace is not allowed)."""

    def __init__(self, kir_kernel: kir.Kernel, ir_kernel: ir.Kernel, source: str, provider: str,
                 load: Callable[[], Any]):
        self.kernel = kir_kernel.name
        self.provider = provider
        self._ir_kernel = ir_kernel
        self._load = load
        self._launch: Callable[..., Any] | None = None
        self._idents: tuple[str, ...] = ()
        self._positional = False
        self.slots = tuple(_Slot(p.name, p.access if p.is_view else "scalar", p.dtype, p.dims)
                           for p in kir_kernel.params)
        self.written = tuple(s for s in self.slots if s.access in ("out", "inout"))
        self._index = {s.name: i for i, s in enumerate(self.slots)}
        self._written_at = tuple(self._index[s.name] for s in self.written)
        self._sizings: dict[int, Any] = {}      # positional count -> _sizing's recipe
        self.qualname = f"intent_eqsat::{op_ident(self.kernel)}_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
        self._op: Any = _OPS.get(self.qualname)
        if self._op is None and "torch" in sys.modules:
            self._op = self._register()

    @property
    def launch(self) -> Callable[..., Any]:
        """The generated module's ``launch`` (imported on first use)."""
        if self._launch is None:
            launch = getattr(self._load(), "launch", None)
            if not callable(launch):
                raise TypeError(f"the generated {self.provider} module for {self.kernel} has no launch()")
            names = launcher_names(launch, self._ir_kernel)
            missing = [s.name for s in self.slots if s.name not in names]
            if missing:
                raise TypeError(f"kernel {self.kernel}: the generated {self.provider} launcher takes no "
                                f"{', '.join(missing)}")
            self._idents = tuple(names[s.name] for s in self.slots)
            order = [p.name for p in inspect.signature(launch).parameters.values()
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY) and p.name not in LAUNCH_CONTROL]
            self._positional = list(self._idents) == order      # values can go by position (host time)
            self._launch = launch
        return self._launch

    # ------------------------------------------------------------------------------------------------ binding
    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The values in parameter order (None where an ``out`` view was not given) and the launch control."""
        if len(args) > len(self.slots):
            raise TypeError(f"kernel {self.kernel} takes {len(self.slots)} arguments "
                            f"({', '.join(s.name for s in self.slots)}), got {len(args)}")
        values: list[Any] = list(args) + [None] * (len(self.slots) - len(args))
        control = {}
        for key, v in kwargs.items():
            i = self._index.get(key)
            if i is None:
                if key in LAUNCH_CONTROL:
                    control[key] = v
                    continue
                raise TypeError(f"kernel {self.kernel} has no parameter {key!r} "
                                f"(takes {', '.join(s.name for s in self.slots)})")
            if i < len(args):
                raise TypeError(f"kernel {self.kernel}: {key} given by position and by name")
            values[i] = v
        for s, v in zip(self.slots, values):
            if v is None and s.access != "out":
                kind = {"scalar": "scalar argument", "in": "input view", "inout": "inout view"}[s.access]
                raise TypeError(f"kernel {self.kernel}: missing {kind} {s.name}")
        return values, control

    def allocate(self, values: list[Any]) -> None:
        """Fill the ``out`` slots left None with fresh tensors (``torch.empty``, on the device of the first view
        given), sized by the shape symbols the given views bind."""
        import torch

        symbols: dict[str, int] = {}
        device = None
        for s, v in zip(self.slots, values):
            if v is None or s.dims is None:
                continue
            if device is None and isinstance(v, torch.Tensor):
                device = v.device
            if isinstance(v, torch.Tensor) and v.dim() != len(s.dims):     # the launcher would refuse it too
                raise TypeError(f"kernel {self.kernel}: {s.name} is a tensor of rank {v.dim()}, expected a tensor "
                                f"of rank {len(s.dims)}")
            if isinstance(v, torch.Tensor):
                for dim, n in zip(s.dims, v.shape):
                    if is_product(dim) and len(dim) == 1 and isinstance(dim[0], str) and dim[0] not in symbols:
                        symbols[dim[0]] = n
        for i, (s, v) in enumerate(zip(self.slots, values)):
            if v is not None:
                continue
            if device is None:
                raise TypeError(f"kernel {self.kernel}: cannot allocate {s.name}: no view was passed to take the "
                                f"device from; pass {s.name}")
            shape = []
            for dim in s.dims or ():            # plain loops: Dynamo traces this under torch.compile
                for f in dim_symbols(dim):
                    if f not in symbols:
                        raise TypeError(f"kernel {self.kernel}: cannot allocate {s.name}: shape symbol {f} is "
                                        f"not the extent of any view passed; pass {s.name}")
                extent = dim_value(dim, symbols)     # a product, or an arithmetic dim (H - 2): kir.dims
                if extent < 0:
                    raise TypeError(f"kernel {self.kernel}: cannot allocate {s.name}: its dimension {dim_str(dim)} "
                                    f"is {extent} for the views passed")
                shape.append(extent)
            values[i] = torch.empty(shape, dtype=getattr(torch, TORCH_DTYPE_NAMES[s.dtype]), device=device)

    def _sizing(self, given: int) -> "tuple[int, list[_OutSizing]] | None":
        """How to size the ``out`` views missing from a call that passes the first ``given`` parameters by
        position and nothing else, read off the slots once (``allocate`` walks the values on every call): the
        slot whose tensor gives the device, and an :class:`_OutSizing` per missing view. None when such a call is
        not that simple (a missing parameter that is not an ``out`` view, a symbol no given view binds):
        ``bind``/``allocate`` explain."""
        import torch

        if given in self._sizings:
            return self._sizings[given]
        recipe = None
        views = [i for i in range(given) if self.slots[i].dims is not None]
        missing = range(given, len(self.slots))
        if views and all(self.slots[i].access == "out" for i in missing):
            where: dict[str, tuple[int, int]] = {}
            for i in views:
                for axis, dim in enumerate(self.slots[i].dims):
                    if is_product(dim) and len(dim) == 1 and isinstance(dim[0], str):
                        where.setdefault(dim[0], (i, axis))
            outs = []
            for i in missing:
                out = self.slots[i]
                like = next((j for j in views if self.slots[j].dims == out.dims and self.slots[j].dtype == out.dtype),
                            None)
                if like is not None:        # shaped like a given view: torch.empty_like (the cheapest allocation)
                    outs.append(_OutSizing(i, None, [], like))
                    continue
                if not all(is_product(dim) for dim in out.dims):
                    break                   # an arithmetic dim (H - 2): allocate() evaluates it
                dims = [[where.get(f, f) if isinstance(f, str) else f for f in dim] for dim in out.dims]
                if any(isinstance(f, str) for dim in dims for f in dim):
                    break
                outs.append(_OutSizing(i, getattr(torch, TORCH_DTYPE_NAMES[out.dtype]), dims, None))
            else:
                recipe = (views[0], outs)
        self._sizings[given] = recipe
        return recipe

    def _allocate_simply(self, args: Sequence[Any]) -> "list[Any] | None":
        """The values of a call passing its first parameters by position, the missing ``out`` views allocated
        by :meth:`_sizing`; None when that does not apply (or the views' ranks are not the declared ones)."""
        import torch

        recipe = self._sizing(len(args))
        if recipe is None:
            return None
        first, outs = recipe
        slots = self.slots
        for i in range(len(args)):
            v = args[i]
            if slots[i].dims is not None and (not isinstance(v, torch.Tensor) or v.dim() != len(slots[i].dims)):
                return None
        like = args[first]                   # new_empty: its device (cheaper than torch.empty(device=))
        values = list(args)
        for out in outs:
            if out.like is not None:
                values.append(torch.empty_like(args[out.like], memory_format=torch.contiguous_format))
                continue
            shape = []
            for dim in out.dims:
                extent = 1
                for f in dim:
                    extent = extent * (f if isinstance(f, int) else args[f[0]].shape[f[1]])
                shape.append(extent)
            values.append(like.new_empty(shape, dtype=out.dtype))
        return values

    # ------------------------------------------------------------------------------------------------ calling
    def __call__(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        simple = None if kwargs or len(args) >= len(self.slots) else self._allocate_simply(args)
        if simple is not None:               # the common ck(x): trailing outs allocated (host time)
            values, control = simple, None
        elif kwargs or len(args) != len(self.slots):
            values, control = self.bind(args, kwargs)
            if any(v is None for v in values):
                self.allocate(values)
        else:                                   # every parameter by position: nothing to bind (host time)
            values, control = args, None
        if _is_compiling():
            if control:
                raise TypeError(f"kernel {self.kernel}: launch control ({', '.join(control)}) cannot be passed "
                                f"under torch.compile (the custom op takes the kernel parameters only)")
            self.op(*values)
        else:
            self.run(values, control)
        if len(self._written_at) == 1:
            return values[self._written_at[0]]
        return tuple(values[i] for i in self._written_at)

    def run(self, values: Sequence[Any], control: dict[str, Any] | None = None) -> None:
        """Launch with the values in parameter order."""
        launch = self.launch
        if self._positional and not control:
            launch(*values)
            return
        kw = dict(zip(self._idents, values))
        if control:
            kw.update(control)
        launch(**kw)

    # ------------------------------------------------------------------------------------------------ the op
    @property
    def op(self) -> Any:
        """The kernel as a ``torch.library`` custom op (registered on first use, once per process per source):
        ``op(*values)`` in parameter order mutates the written views and returns None."""
        if self._op is None:
            self._op = _OPS.get(self.qualname) or self._register()
        return self._op

    def schema(self) -> str:
        """The op schema (:func:`intent_eqsat.providers.torch_ops.op_schema`, the one the Triton modules print)."""
        return self._schema()[0]

    def _schema(self) -> tuple[str, list[str]]:
        return op_schema([(s.name, "scalar" if s.access == "scalar" else "in" if s.access == "in" else "written",
                           s.dtype) for s in self.slots])

    def _register(self) -> Any:
        import torch

        run = self.run

        def impl(*values: Any) -> None:
            run(values)

        def fake(*values: Any) -> None:
            return None

        schema, written = self._schema()
        op = torch.library.custom_op(self.qualname, impl, mutates_args=written, schema=schema)
        op.register_fake(fake)
        _OPS[self.qualname] = op
        return op


def _is_compiling() -> bool:
    """Whether Dynamo is tracing (torch is imported by then: a traced call comes from torch.compile)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


__all__ = ["CallPlan", "launcher_names", "LAUNCH_CONTROL"]
