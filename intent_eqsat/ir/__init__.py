"""The shared GPU IR (SPEC IR-1..IR-12): data model, LaunchExpr, text form, verifier, NumPy interpreter.

Public names: :func:`parse_module`, :func:`print_module`, :func:`verify` (raises :class:`VerificationError`
with ``.invariant`` and ``.location``), :func:`interpret`.
"""
from __future__ import annotations

from intent_eqsat.ir.builder import KernelBuilder, ModuleBuilder, RegionBuilder
from intent_eqsat.ir.core import (AbiArg, CompileOptions, Kernel, Module, Op, ParamDecl, ProgramSpace, Region,
                                  Segment, SizeBuckets, SizeVariant, Specialization, Value, walk)
from intent_eqsat.ir.parser import parse_module
from intent_eqsat.ir.printer import print_module
from intent_eqsat.ir.types import BufferType, FragmentType, ScalarType, TupleType, ViewType
from intent_eqsat.ir.verify_errors import VerificationError


# Eager imports: the public functions shadow the submodules of the same names (verify, interpret).
from intent_eqsat.ir.verify import verify  # noqa: E402
from intent_eqsat.ir.interpret import interpret  # noqa: E402

__all__ = ["parse_module", "print_module", "verify", "interpret", "VerificationError", "Module", "Kernel", "Op",
           "Region", "Value", "AbiArg", "CompileOptions", "ParamDecl", "ProgramSpace", "Segment", "Specialization",
           "SizeVariant", "SizeBuckets", "ScalarType",
           "FragmentType", "ViewType", "BufferType", "TupleType", "ModuleBuilder", "KernelBuilder",
           "RegionBuilder", "walk"]
