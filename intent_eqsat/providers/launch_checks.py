"""Launch-time argument checks that every provider's generated launcher shares: written views must not overlap.

A GPU IR kernel's views are distinct memory unless the ABI puts them in one alias class (``AbiArg.alias``, SPEC
IR-4.3): the program reads an input while it writes an output, and writes each element of an output once per
member. A caller that passes a stride-0 output (every member lands on one element), an output that is a view of an
input (an in-place transpose) or two outputs sharing storage gets a silently wrong result, so the launcher rejects
them before the launch (issue 25.10). The check is conservative: two views whose address ranges intersect are
rejected even when their elements interleave without touching (``x[:, 0::2]`` and ``x[:, 1::2]``); declare such
views as one ``inout`` view, or copy. Its host cost is a few microseconds per written view.

The check is printed into generated modules as plain Python (``OVERLAP_CHECK_SOURCE``, no import of this package),
and :func:`overlap_check_call` prints the call a launcher makes.
"""
from __future__ import annotations

from typing import Sequence

#: Python source of ``_check_no_overlap``, printed once into a generated module beside its launchers.
OVERLAP_CHECK_SOURCE = '''\
def _span(t):
    """The [first, end) byte range a tensor's elements occupy; None when it has none (or no memory: meta)."""
    if t.is_contiguous():       # the common case, without a walk over the strides (host time per launch)
        size = t.nbytes
        if size == 0 or t.is_meta:
            return None
        first = t.data_ptr()
        return first, first + size
    if t.numel() == 0 or t.is_meta:
        return None
    first = t.data_ptr()
    reach = sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 1)
    return first, first + (reach + 1) * t.element_size()


def _overlaps_itself(t):
    """True when two members of the tensor share an element (a stride-0 or otherwise overlapping layout)."""
    if t.is_contiguous():
        return False
    reach = 0
    for s, n in sorted((s, n) for n, s in zip(t.shape, t.stride()) if n > 1):
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


def _check_no_overlap(kernel, written, views):
    """Raise ValueError when a written view overlaps itself or another view outside its alias class.
    ``written`` and ``views``: (name, tensor, alias class or None) triples; every written view is among views."""
    spans = {}
    for other, u, _ in views:                                   # once per view
        spans[other] = _span(u)
    for name, t, alias in written:
        if _overlaps_itself(t):
            raise ValueError(f"kernel {kernel}: the written view {name} has overlapping elements (shape "
                             f"{tuple(t.shape)}, strides {tuple(t.stride())}): members would write one element; "
                             f"pass a tensor whose elements are distinct (e.g. .contiguous())")
        mine = spans[name]
        if mine is None:
            continue
        for other, _, other_alias in views:
            if other == name or (alias is not None and alias == other_alias):
                continue
            theirs = spans[other]
            if theirs is not None and mine[0] < theirs[1] and theirs[0] < mine[1]:
                raise ValueError(f"kernel {kernel}: the written view {name} overlaps the view {other} in memory; "
                                 f"the kernel's views must be distinct (declare one inout view for an in-place "
                                 f"update, or pass a copy)")
'''


#: Python source of the error a launcher raises after a launch in which a checked data-dependent subscript
#: (a gather / scatter with ``checked`` axes, SPEC IR-8 and docs/kir.md) fell outside its view: the kernel masks
#: the access (no memory outside the view is touched) and ORs the access's bit into a one-word flag buffer (one per
#: device, kept by the module and zero between launches), which the launcher reads after the launch (a device
#: synchronization, the price of the check; compile with ``subscript_checks=false`` to drop it)
SUBSCRIPT_ERROR_SOURCE = '''\
class SubscriptOutOfRange(IndexError):
    """A data-dependent subscript of the launch fell outside its view's extent (the access was masked: nothing
    outside the view was read or written). ``accesses``: the messages of the checked accesses that failed."""

    def __init__(self, kernel, accesses):
        self.kernel, self.accesses = kernel, list(accesses)
        super().__init__(f"kernel {kernel}: data-dependent subscript out of range in " + "; ".join(self.accesses))


_SUBSCRIPT_FLAGS = {}


def _subscript_flags_of(device):
    """The device's flag word (allocated once: no allocation or fill per launch)."""
    flags = _SUBSCRIPT_FLAGS.get(device)
    if flags is None:
        import torch
        flags = _SUBSCRIPT_FLAGS[device] = torch.zeros(1, dtype=torch.int32, device=device)
    return flags


def _raise_subscript_errors(kernel, flags, checks):
    """After a launch: raise SubscriptOutOfRange when the flag word has a bit of a checked access set (and clear
    it, so the next launch starts from zero). While a CUDA graph is being captured the read (a synchronization)
    is not allowed: the bit stays set and the next launch outside a capture raises (the check is deferred)."""
    if flags.is_cuda:
        import torch
        if torch.cuda.is_current_stream_capturing():
            return
    code = int(flags.item())
    if code:
        flags.zero_()
        raise SubscriptOutOfRange(kernel, [msg for bit, msg in checks if code & bit])
'''

#: bits of the flag word (an int32): checked access j sets bit j % 30 (accesses past 30 share bits; the error then
#: names every access of the bit)
FLAG_BITS = 30


def _triples(items: Sequence[tuple[str, str, str | None]]) -> str:
    return "(" + "".join(f"({name!r}, {ident}, {alias!r}), " for name, ident, alias in items) + ")"


def overlap_check_call(kernel: str, written: Sequence[tuple[str, str, str | None]],
                       views: Sequence[tuple[str, str, str | None]], indent: str = "    ") -> list[str]:
    """Launcher lines calling ``_check_no_overlap``: ``written`` and ``views`` are (ABI name, launcher identifier,
    alias class) of the written public views and of every public view. No lines when nothing is written."""
    if not written:
        return []
    return [f"{indent}_check_no_overlap({kernel!r}, {_triples(written)},",
            f"{indent}                  {_triples(views)})"]


__all__ = ["OVERLAP_CHECK_SOURCE", "SUBSCRIPT_ERROR_SOURCE", "FLAG_BITS", "overlap_check_call"]
