"""Executors: where the jobs of a batch run. One interface, two engines.

``executor.map(jobs, timeout, on_done) -> results`` runs every job, calls ``on_done(index, result)`` in the calling
thread as each finishes (any order), and returns the results in job order. Every job runs through
:meth:`intent_eqsat.batch.pool.WorkerPool.run`, so isolation is the same everywhere: a job that fails, crashes or
times out yields a result and costs only its own worker process.

* :class:`ProcessExecutor` (the default, ``--executor process``): ``-j N`` jobs in flight on this machine, each in a
  worker process of a local pool.
* :class:`DaskExecutor` (``--executor dask``): each job is a task on a ``dask.distributed`` cluster — an existing
  one (``--scheduler tcp://host:8786``; its workers need this package installed) or, without an address, an
  in-process ``LocalCluster`` with ``-j`` threads. Inside a Dask worker the task runs the job in that worker
  machine's own process pool, so timeouts kill only the job's worker process, never the Dask worker.
"""
from __future__ import annotations

import hashlib
import json
import logging
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from intent_eqsat.batch.pool import WorkerPool, crash_result, local_pool

OnDone = Callable[[int, dict], None]


class Executor:
    """The executor interface."""

    name = "abstract"

    def map(self, jobs: Sequence[dict], timeout: float | None, on_done: OnDone | None = None) -> list[dict]:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"executor": self.name}


class ProcessExecutor(Executor):
    """``jobs`` worker processes on this machine (the default)."""

    name = "process"

    def __init__(self, jobs: int = 1):
        self.jobs = max(1, int(jobs))
        self.workers_started = 0

    def describe(self) -> dict:
        return {"executor": self.name, "jobs": self.jobs}

    def map(self, jobs: Sequence[dict], timeout: float | None, on_done: OnDone | None = None) -> list[dict]:
        results: list[dict | None] = [None] * len(jobs)
        if not jobs:
            return []
        n = min(self.jobs, len(jobs))
        pool = WorkerPool()
        try:
            pool.prestart(n)
            with ThreadPoolExecutor(n, thread_name_prefix="intent-eqsat-job") as threads:
                futures = {threads.submit(pool.run, job, timeout): i for i, job in enumerate(jobs)}
                try:
                    for fut in as_completed(futures):
                        i = futures[fut]
                        results[i] = fut.result()
                        if on_done is not None:
                            on_done(i, results[i])
                except BaseException:
                    for f in futures:
                        f.cancel()
                    pool.close()       # kills busy workers so the threads return at once
                    raise
        finally:
            pool.close()
            self.workers_started += pool.started
        return results  # type: ignore[return-value]


def dask_run_job(job: dict, timeout: float | None) -> dict:
    """The Dask task: run one job in this (Dask worker) process's isolation pool."""
    return local_pool().run(job, timeout)


class DaskExecutor(Executor):
    """Jobs as tasks on a ``dask.distributed`` cluster (``address``), or on an in-process LocalCluster."""

    name = "dask"

    def __init__(self, jobs: int = 1, address: str | None = None, client: Any = None):
        self.jobs = max(1, int(jobs))
        self.address = address
        self.client = client

    def describe(self) -> dict:
        where = self.address
        if where is None and self.client is not None:
            where = getattr(getattr(self.client, "scheduler", None), "address", None) or "given client"
        return {"executor": self.name, "jobs": self.jobs, "scheduler": where or "in-process LocalCluster"}

    def map(self, jobs: Sequence[dict], timeout: float | None, on_done: OnDone | None = None) -> list[dict]:
        try:
            from distributed import Client, LocalCluster, as_completed as dask_as_completed
        except ImportError as err:
            raise RuntimeError("the dask executor needs dask[distributed] (pip install 'intent-eqsat[batch]')") \
                from err
        if not jobs:
            return []
        cluster = None
        client = self.client
        own_client = client is None
        if client is None:
            if self.address:
                client = Client(self.address)
            else:
                cluster = LocalCluster(n_workers=1, threads_per_worker=self.jobs, processes=False,
                                       dashboard_address=None, silence_logs=logging.ERROR)
                client = Client(cluster)
        results: list[dict | None] = [None] * len(jobs)
        try:
            futures = []
            index: dict[str, int] = {}
            for i, job in enumerate(jobs):
                key = f"intent-eqsat-{i}-" + hashlib.sha256(
                    json.dumps(job, sort_keys=True).encode("utf-8")).hexdigest()[:16]
                fut = client.submit(dask_run_job, job, timeout, key=key, pure=False, retries=0)
                futures.append(fut)
                index[fut.key] = i
            for fut in dask_as_completed(futures):
                i = index[fut.key]
                try:
                    res = fut.result()
                except Exception as err:  # the Dask worker itself died or the task could not run
                    res = crash_result(jobs[i], f"the dask task failed: {type(err).__name__}: {err}")
                results[i] = res
                if on_done is not None:
                    on_done(i, res)
        finally:
            if own_client:
                client.close()
            if cluster is not None:
                cluster.close()
                from intent_eqsat.batch.pool import close_local_pool

                close_local_pool()     # the in-process cluster's worker processes belong to this process
        return results  # type: ignore[return-value]


def make_executor(name: str, jobs: int = 1, scheduler: str | None = None) -> Executor:
    if name == "process":
        return ProcessExecutor(jobs)
    if name == "dask":
        return DaskExecutor(jobs, address=scheduler)
    raise ValueError(f"unknown executor {name!r} (known: process, dask)")


__all__ = ["Executor", "ProcessExecutor", "DaskExecutor", "dask_run_job", "make_executor"]
