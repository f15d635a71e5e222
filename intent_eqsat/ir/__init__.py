"""The shared GPU IR (SPEC IR-1..IR-12): data model, LaunchExpr, text form, verifier, NumPy interpreter.

Public names: :func:`parse_module`, :func:`print_module`, :func:`verify` (raises :class:`VerificationError`
with ``.invariant`` and ``.location``), :func:`interpret`.
"""
from __future__ import annotations

from typing import Any

from intent_eqsat.ir.builder import KernelBuilder, ModuleBuilder, RegionBuilder
from intent_eqsat.ir.core import (AbiArg, CompileOptions, Kernel, Module, Op, ParamDecl, ProgramSpace, Region,
                                  Segment, Value, walk)
from intent_eqsat.ir.parser import parse_module
from intent_eqsat.ir.printer import print_module
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, ViewType
from intent_eqsat.ir.verify_errors import VerificationError


def verify(module: Module, stage: str = "shared") -> None:
    """Run the shared GPU verifier (IR-10 invariants + PASS-5 checks); raise VerificationError on failure."""
    from intent_eqsat.ir.verify import verify as _verify
    _verify(module, stage=stage)


def interpret(module: Module, kernel_name: str, args: dict[str, Any], params: dict[str, int] | None = None) \
        -> dict[str, Any]:
    """Run every program instance of a kernel on NumPy arrays; return the written views (by name)."""
    from intent_eqsat.ir.interpret import interpret as _interpret
    return _interpret(module, kernel_name, args, params=params)


__all__ = ["parse_module", "print_module", "verify", "interpret", "VerificationError", "Module", "Kernel", "Op",
           "Region", "Value", "AbiArg", "CompileOptions", "ParamDecl", "ProgramSpace", "Segment", "ScalarType",
           "FragmentType", "ViewType", "BufferType", "TupleType", "ModuleBuilder", "KernelBuilder",
           "RegionBuilder", "walk"]
