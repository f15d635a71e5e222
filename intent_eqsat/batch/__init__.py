"""Batch compilation of kernel corpora: per-kernel isolation in worker processes, executors (a local process pool,
or Dask), a content-addressed cache, atomic outputs, and JSON / Markdown reports with plots.

The command line (``intent-eqsat batch`` / ``check``) is a thin layer over :func:`run_batch`.
"""
from intent_eqsat.batch.executors import DaskExecutor, Executor, ProcessExecutor, make_executor
from intent_eqsat.batch.runner import BatchConfig, BatchResult, collect_inputs, run_batch

__all__ = ["BatchConfig", "BatchResult", "collect_inputs", "run_batch", "Executor", "ProcessExecutor",
           "DaskExecutor", "make_executor"]
