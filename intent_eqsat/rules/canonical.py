"""Canonical form of a kernel: decode(encode(kernel)).

Equal pure computations become one value and unused pure values disappear, while original names and order are
kept where they survive. Construction returns programs in this form, so encoding then decoding a constructed
program gives it back exactly.
"""
from __future__ import annotations

from intent_eqsat.ir.core import Kernel
from intent_eqsat.rules.decode import decode_kernel
from intent_eqsat.rules.encode import encode_kernel


def canonicalize(kernel: Kernel) -> Kernel:
    term, prov = encode_kernel(kernel)
    return decode_kernel(term, kernel, prov)
