"""The canonical KIR: a small tensor-comprehension language for logical GPU kernels (``docs/kir.md``).

Text (``.kir``) and the Python builder produce the same immutable trees with stable ids; the verifier checks
semantic legality; the NumPy evaluator is the semantic oracle; ``analysis`` gives the canonical facts (PASS-2).
"""
from intent_eqsat.kir.analysis import KernelAnalysis, ModuleAnalysis, analyze
from intent_eqsat.kir.evaluate import evaluate
from intent_eqsat.kir.model import (
    Access, Assign, Binary, Bind, Block, Call, Cast, Combiner, Kernel, KirModule, Let, LocalLet, Name, Node, Num,
    Param, Proj, Reduce, RegionFold, RegionScan, Scan, TupleExpr, Unary, Where,
)
from intent_eqsat.kir.parser import parse
from intent_eqsat.kir.printer import print_expr, print_kir
from intent_eqsat.kir.verify import check, verify

__all__ = [
    "parse", "print_kir", "print_expr", "verify", "check", "evaluate", "analyze", "ModuleAnalysis",
    "KernelAnalysis", "Access", "Assign", "Binary", "Bind", "Block", "Call", "Cast", "Combiner", "Kernel",
    "KirModule", "Let", "LocalLet", "Name", "Node", "Num", "Param", "Proj", "Reduce", "RegionFold", "RegionScan",
    "Scan", "TupleExpr", "Unary", "Where",
]
