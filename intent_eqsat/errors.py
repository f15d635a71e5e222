"""The package's error hierarchy.

Every error the package raises derives from :class:`IntentError` and says what went wrong and where
(a source location ``file:line:col`` for text input, or a program location such as ``kernel gemm, op #12``).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A position in a text input; line and column are 1-based."""

    file: str | None
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file or '<string>'}:{self.line}:{self.col}"


class IntentError(Exception):
    """Base class of every error raised by intent_eqsat.

    ``location`` is a :class:`SourceLocation` or a free-form program location string; ``str(err)`` always
    starts with the location when one is known.
    """

    def __init__(self, message: str, location: SourceLocation | str | None = None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)


class UsageError(IntentError, ValueError):
    """A bad argument to the API or the CLI (unknown provider, rulebook or option, malformed value, missing
    file ...): the CLI's exit status 2. Defined here, below every layer, so that any layer can raise it."""


class ParseError(IntentError):
    """Malformed text input (GPU IR text or .kir); ``location`` is a SourceLocation."""


class LaunchExprError(IntentError):
    """A LaunchExpr that is not allowed (SPEC IR-3.1) or cannot be evaluated."""


class InterpretError(IntentError):
    """The NumPy interpreter met a program it cannot execute faithfully (e.g. an unguarded out-of-bounds access)."""


class KirError(IntentError):
    """A semantically illegal KIR kernel (the KIR verifier, SPEC PASS-5)."""


class KirEvalError(KirError):
    """The KIR reference evaluator met inputs it cannot evaluate: a missing or mis-shaped input, an unbound shape
    symbol, or a data-dependent subscript / integer division that fails at run time (located at the KIR node)."""


class ConstructionError(IntentError):
    """KIR -> GPU IR construction failed or produced a program the construction verifier rejects."""


class SearchTimeout(IntentError):
    """The e-graph search of one kernel outlived its wall-clock safety net (``Limits.safety_seconds``).

    The search is bounded by a deterministic budget (iterations, e-graph rows, matches); the safety net lies far
    above what that budget takes, so crossing it means a machine far slower than expected or a runaway rule. It is
    an error and never a silently worse program (issue 21): the same input must give the same program everywhere.
    ``kernel``, ``group``, ``budget`` (the budget's key text), ``iterations`` (of ``group`` when it stopped) and
    ``seconds`` (spent in ``group``) say where."""

    def __init__(self, kernel: str, group: str, limits: object, iterations: int, seconds: float):
        self.kernel = kernel
        self.group = group
        self.budget = getattr(limits, "key", lambda: str(limits))()
        self.safety_seconds = getattr(limits, "safety_seconds", None)
        self.iterations = iterations
        self.seconds = seconds
        super().__init__(
            f"the search outlived its wall-clock safety net of {self.safety_seconds:g} s in group {group} after "
            f"{iterations} iteration(s) ({seconds:.1f} s in that group; budget {self.budget}); no program is "
            f"returned, since one stopped by the clock would depend on the machine's load. Raise "
            f"safety_seconds (or set it to none) for a slow machine, or lower the budget",
            f"kernel {kernel}" if kernel else None)
