"""Batch compilation of kernel corpora: per-kernel isolation in worker processes, executors (a local process pool,
or Dask), a content-addressed cache, atomic outputs, and JSON / Markdown reports with plots.

The command line (``intent-eqsat batch`` / ``check``) is a thin layer over :func:`run_batch`. The public names are
imported on first use (PEP 562), so light submodules do not pull in the runner and the pipeline. Atomic file
output is ``intent_eqsat.atomic`` (below this package: tuning files use it on a GPU machine that has only torch and
triton).
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"BatchConfig": "runner", "BatchResult": "runner", "collect_inputs": "runner", "run_batch": "runner",
          "Executor": "executors", "ProcessExecutor": "executors", "DaskExecutor": "executors",
          "make_executor": "executors"}

__all__ = ["BatchConfig", "BatchResult", "collect_inputs", "run_batch", "Executor", "ProcessExecutor",
           "DaskExecutor", "make_executor"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"intent_eqsat.batch.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'intent_eqsat.batch' has no attribute {name!r}")
