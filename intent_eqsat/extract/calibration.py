"""Measured times of tile bindings and launch resources: tuning artifacts the optimizer reads (SPEC PASS-6; issue 7
item 3 "keep the measurements as calibration data that the cost model reads, so its picks improve").

A measurement says: the program of this *structure* (:func:`fingerprint`: the decoded kernel before its tile
parameters are bound, with its name and origin left out, so two kernels are one structure exactly when their
programs are the same), at these problem ``sizes``, with this tile ``binding``, launched with ``threads`` and
``stages`` (and, where the run knew it, with ``index_bits``-wide index arithmetic), ran in ``seconds`` on ``device``
(median of ``triton.testing.do_bench``). ``bench/tile_sweep.py run``
writes them; ``Calibration.load`` reads one or more files.

How the optimizer uses them (:meth:`Calibration.rerank`): among the bindings of the extracted structure at the
same target and sizes, a measured binding costs what it measured (its fastest launch; also a binding the model
holds illegal: it compiled, ran and was checked), an unmeasured one its prediction times the largest
measured/predicted ratio of the measured ones (the model's worst known miss at this shape: an unmeasured binding
displaces a measured one only when even that miss leaves it faster), so measured bindings are ranked by what they
measured and the rest stay comparable.
The threads/stages (and the index width, when measured) of the fastest launch of the chosen binding are bound into
the program instead of the model's: the index width is a measured choice where a measurement says so (flash
attention ran 1.07-1.09x faster with 32-bit offsets on the H200, where the model's rule - 64 bits for tensor-core
programs, from the GEMMs - would keep 64; ``extract/resources.py``).
Nothing is keyed by kernel name; a structure or size with no measurement is ranked by the model alone (with a
remark: measurements of a program whose structure a rule change altered stop matching, and that should show).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from intent_eqsat.errors import IntentError, SourceLocation

if TYPE_CHECKING:                  # the GPU side of bench/tile_sweep.py reads and writes tuning files without the IR
    from intent_eqsat.ir.core import Kernel

FORMAT = "intent-eqsat-tuning/1"


class CalibrationError(IntentError):
    """A tuning file that cannot be read (``location``: the file, with line:col for malformed JSON)."""


#: an op's provenance attribute (``origin = gemm.s0.e3``: KIR statement ids, which carry the kernel's name)
_ORIGIN_ATTR = re.compile(r"(, )?\borigin = [^,}\s]+(, )?")


def fingerprint(kernel: "Kernel") -> str:
    """A stable hash of a kernel's program structure: its text without the kernel's name and origin, the ops'
    provenance (KIR statement ids name the kernel). Launch resources are not in the program (issue 22 item 3), so
    fingerprints taken before they left it are unchanged."""
    from intent_eqsat.ir.printer import format_kernel
    anon = replace(kernel, name="k", origin="k")
    text = _ORIGIN_ATTR.sub(lambda m: ", " if m.group(1) and m.group(2) else "", "\n".join(format_kernel(anon, 0)))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Measurement:
    fingerprint: str
    target: str
    sizes: tuple[tuple[str, int], ...]
    binding: tuple[tuple[str, int], ...]
    threads: int | None
    stages: int | None
    seconds: float
    device: str = ""
    provider: str = "triton"
    #: the index arithmetic's width the program ran with (None: not recorded, the older measurements)
    index_bits: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"fingerprint": self.fingerprint, "target": self.target, "provider": self.provider,
               "sizes": dict(self.sizes), "binding": dict(self.binding), "threads": self.threads,
               "stages": self.stages, "seconds": self.seconds, "device": self.device}
        if self.index_bits is not None:
            out["index_bits"] = self.index_bits
        return out


def _key(d: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in d.items()))


def measurement(kernel_structure: "Kernel | str", target: str, sizes: Mapping[str, int], binding: Mapping[str, int],
                threads: int | None, stages: int | None, seconds: float, device: str = "",
                provider: str = "triton", index_bits: int | None = None) -> Measurement:
    fp = kernel_structure if isinstance(kernel_structure, str) else fingerprint(kernel_structure)
    return Measurement(fp, str(target), _key(sizes), _key(binding), threads, stages, float(seconds), device,
                       provider, None if index_bits is None else int(index_bits))


@dataclass
class Calibration:
    """Measurements by (fingerprint, target, sizes)."""

    measurements: list[Measurement] = field(default_factory=list)

    @classmethod
    def load(cls, paths: "str | Path | Sequence[str | Path]") -> "Calibration":
        if isinstance(paths, (str, Path)):
            paths = [paths]
        out = cls()
        for p in paths:
            path = Path(p)
            try:
                doc = json.loads(path.read_text())
            except OSError as err:
                raise CalibrationError(f"cannot read the tuning file: {err.strerror or err}", str(path)) from None
            except json.JSONDecodeError as err:
                raise CalibrationError(f"not JSON: {err.msg}",
                                       SourceLocation(str(path), err.lineno, err.colno)) from None
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise CalibrationError(f"not a tuning file (expected \"format\": \"{FORMAT}\")", str(path))
            for i, m in enumerate(doc.get("measurements", [])):
                try:
                    out.measurements.append(Measurement(
                        str(m["fingerprint"]), str(m["target"]), _key(m["sizes"]), _key(m["binding"]),
                        None if m.get("threads") is None else int(m["threads"]),
                        None if m.get("stages") is None else int(m["stages"]), float(m["seconds"]),
                        str(m.get("device", "")), str(m.get("provider", "triton")),
                        None if m.get("index_bits") is None else _index_bits(m["index_bits"])))
                except (KeyError, TypeError, ValueError) as err:
                    raise CalibrationError(f"measurement {i}: {type(err).__name__}: {err}", str(path)) from None
        return out

    def save(self, path: "str | Path", **about: Any) -> None:
        """Write the measurements as one tuning file (whole file replaced atomically)."""
        from intent_eqsat.atomic import write_atomic
        doc = {"format": FORMAT, **about, "measurements": [m.as_dict() for m in self.measurements]}
        write_atomic(path, json.dumps(doc, indent=1) + "\n", skip_same=False)

    def lookup(self, fp: str, target: str, sizes: Mapping[str, int],
               provider: str | None = None) -> dict[tuple, Measurement]:
        """Binding -> its fastest measured launch, for one structure on one target and provider (None: the
        provider-neutral program, launched as Triton launches it: the provider whose launch options the bound
        resources are) at exactly ``sizes`` (the problem symbols a measurement names)."""
        best: dict[tuple, Measurement] = {}
        provider = provider or "triton"
        for m in self.measurements:
            if m.fingerprint != fp or m.target != target or m.provider != provider:
                continue
            if not math.isfinite(m.seconds) or m.seconds <= 0:
                continue
            if any(sizes.get(k) != v for k, v in m.sizes):
                continue
            cur = best.get(m.binding)
            if cur is None or m.seconds < cur.seconds:
                best[m.binding] = m
        return best

    def rerank(self, fp: str, target: str, sizes: Mapping[str, int],
               ranked: Iterable[tuple[float, dict[str, int]]], provider: str | None = None
               ) -> tuple[list[tuple[float, dict[str, int]]], dict[tuple, Measurement]]:
        """``ranked`` (model cost, binding) re-costed by the measurements (see the module docstring), cheapest
        first; also the measurements used (binding key -> fastest launch)."""
        ranked = list(ranked)
        found = self.lookup(fp, target, sizes, provider)
        used = {_key(b): found[_key(b)] for _, b in ranked if _key(b) in found}
        ratios = [found[_key(b)].seconds / c for c, b in ranked if _key(b) in found and math.isfinite(c) and c > 0]
        if not used:
            return ranked, {}
        bias = max(ratios) if ratios else 1.0
        # a measured binding costs what it measured (also one the model holds illegal: it ran, it was checked)
        out = [(used[_key(b)].seconds if _key(b) in used else c * bias, b) for c, b in ranked]
        order = {id(b): i for i, (_, b) in enumerate(ranked)}
        out.sort(key=lambda cb: (cb[0], order[id(cb[1])]))
        return out, used


def _index_bits(v: Any) -> int:
    from intent_eqsat.providers.launch_resources import INDEX_BITS
    if int(v) not in INDEX_BITS:
        raise ValueError(f"index_bits {v!r} is not one of {', '.join(map(str, INDEX_BITS))}")
    return int(v)


def binding_key(binding: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return _key(binding)


__all__ = ["FORMAT", "Calibration", "CalibrationError", "Measurement", "fingerprint", "measurement", "binding_key"]
