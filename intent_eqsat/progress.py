"""Progress of one compile on a terminal (issue 24 item 6): the stage, and inside ``optimize`` a bar over its steps.

The optimizer reports deterministic steps, not time: for each kernel, each transformation group it runs, then the
tile binding and the size buckets (``optimizer.optimize(progress=...)``). So the bar's position and total are the same on every machine; only
the elapsed time and tqdm's ETA depend on the host. The bar is drawn with ``tqdm`` on stderr, and only when stderr
is a terminal: piped and CI output stay as they were (``-v`` logs the stages instead).
"""
from __future__ import annotations

import sys
from typing import Any, TextIO


class CompileProgress:
    """``stage(name)`` as each pipeline stage starts (``on_stage``), ``step(label, done, total)`` as the optimizer
    finishes a step (``on_progress``), ``close()`` at the end (clears the line)."""

    def __init__(self, label: str, *, enabled: bool = True, stream: "TextIO | None" = None, always: bool = False):
        """``enabled`` False draws nothing (``-q``, ``--no-progress``); otherwise the bar is drawn when the stream
        is a terminal, or whatever it is with ``always`` (``compile(progress=True)``: a notebook's stderr)."""
        self.label = label
        self.stream: Any = stream if stream is not None else sys.stderr
        self.enabled = enabled and (always or bool(getattr(self.stream, "isatty", lambda: False)()))
        self.bar: Any = None
        self.current = ""

    def stage(self, name: str) -> None:
        """A pipeline stage starts: the bar's description says so."""
        if not self.enabled:
            return
        self.current = name
        bar = self._bar()
        bar.set_description_str(f"{self.label}: {name}", refresh=True)

    def step(self, label: str, done: int, total: int) -> None:
        """The optimizer finished step ``done`` of ``total`` (``label``: the kernel and the group or binding)."""
        if not self.enabled:
            return
        bar = self._bar()
        if bar.total != total:
            bar.reset(total=total)
        bar.n = done
        bar.set_description_str(f"{self.label}: {self.current or 'optimize'} {label}", refresh=False)
        bar.refresh()

    def close(self) -> None:
        """Remove the bar (the compile's result is printed after it)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _bar(self) -> Any:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=None, file=self.stream, leave=False, dynamic_ncols=True, unit="step",
                            bar_format="{desc} |{bar}| {n_fmt}/{total_fmt} steps [{elapsed}<{remaining}]")
        return self.bar


__all__ = ["CompileProgress"]
