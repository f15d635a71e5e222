"""KIR -> the first complete GPU program (SPEC PASS-3.1) with origin map and compile options."""
from intent_eqsat.construct.construct import construct

__all__ = ["construct"]
