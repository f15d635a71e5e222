"""Launch resources of one kernel: a provider-local binding beside the program, not a field of it.

Threads per program instance, buffered pipeline stages and the width of index arithmetic are how a provider launches
a program, not what the program computes: SPEC IR-11 keeps pipeline stages and tuning winners out of the common IR,
and PASS-6 allows them as side information (benchmark/tuning artifacts). So the optimizer chooses them from its cost
model or a tuning file's measurement (:func:`intent_eqsat.extract.resources.launch_resources`) and hands them on next
to the verified program, kernel by kernel (``launch_resources`` of ``OptimizeResult``, ``pipeline.Optimized``,
``CompiledKernel``, a :class:`~intent_eqsat.ir.SizeVariant` or a :class:`~intent_eqsat.ir.Specialization`); the
serializer maps them onto its launch options at serialization (Triton: ``num_warps = threads / warp size``,
``num_stages``, and the 32-bit index variant the launcher may pick; cuTile: none, its compiler chooses them). A
program printed as GPU IR text holds none of them (issue 22 item 3); a caller who serializes a ``.gir`` file gives
them or gets the provider's defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

#: the widths ``index_bits`` may take: 32 permits 32-bit index arithmetic where the launch proves it exact
#: (:mod:`intent_eqsat.ir.index_bounds`), 64 never narrows
INDEX_BITS = (32, 64)


@dataclass(frozen=True)
class LaunchResources:
    """``threads``: threads per program instance (a whole number of the target's warps); ``stages``: buffered
    copies a loop's loads may keep in flight; ``index_bits``: 32 permits 32-bit index arithmetic at every launch
    whose bounds prove it exact (the launcher falls back to 64 bits otherwise), 64 never. None leaves a resource to
    the provider's default."""

    threads: int | None = None
    stages: int | None = None
    index_bits: int | None = None

    FIELDS = ("threads", "stages", "index_bits")

    def __post_init__(self) -> None:
        for word in ("threads", "stages"):
            v = getattr(self, word)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise ValueError(f"launch resources: {word} must be a positive integer, not {v!r}")
        if self.index_bits is not None and self.index_bits not in INDEX_BITS:
            raise ValueError(f"launch resources: index_bits must be one of {INDEX_BITS}, not {self.index_bits!r}")

    def over(self, base: "LaunchResources | None") -> "LaunchResources":
        """These resources where set, ``base``'s elsewhere (a measured launch over the modelled one)."""
        if base is None:
            return self
        return replace(base, **{k: v for k, v in self.as_dict().items() if v is not None})

    def as_dict(self) -> dict[str, int | None]:
        return {k: getattr(self, k) for k in self.FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "LaunchResources | None":
        """The inverse of :meth:`as_dict` (None for None); unknown keys are an error, so a misspelt field of a
        cached or hand-written record does not vanish."""
        if data is None:
            return None
        unknown = set(data) - set(cls.FIELDS)
        if unknown:
            raise ValueError(f"launch resources: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**{k: (None if v is None else int(v)) for k, v in data.items()})

