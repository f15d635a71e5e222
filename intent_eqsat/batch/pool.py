"""Isolated execution of one job: a pool of worker processes where a job that times out or crashes costs only its
own worker.

:meth:`WorkerPool.run` checks out an idle worker (starting one when none is idle), sends it the job and waits for
the result under the job's own deadline. On timeout the worker is killed (SIGKILL) and the job is reported as
``timeout`` with the stage it was in; when the worker dies (a segfault, ``os._exit``, the OOM killer) the job is
reported as ``crash`` with the exit status and the tail of the worker's stderr. Either way the pool starts a fresh
worker for the next job, so one bad kernel never stops the others. ``run`` is thread-safe: executors call it from
as many threads as they want jobs in flight.

Workers are plain subprocesses (``python -m intent_eqsat.batch.worker``), not multiprocessing children, so a pool
also works inside a daemonic process such as a Dask worker. A worker's start-up (imports) is not charged to any
job's time limit.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from intent_eqsat.batch.jobs import STATUS_CRASH, STATUS_TIMEOUT

_HEADER = struct.Struct(">I")
STARTUP_TIMEOUT_S = 180.0


class WorkerLost(Exception):
    """The worker process ended (or closed its pipe) before answering."""


class _Deadline(Exception):
    """The job's time limit passed."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])      # the folder holding the intent_eqsat package


class Worker:
    """One worker subprocess and its two pipes."""

    def __init__(self, env: dict[str, str] | None = None):
        env = dict(os.environ if env is None else env)
        root = _package_root()
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONHASHSEED", "0")
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "intent_eqsat.batch.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env, close_fds=True,
                                     start_new_session=True)
        self._fd = self.proc.stdout.fileno()
        self._buf = bytearray()
        self.ready = False
        self.stage: str | None = None

    # -- protocol ------------------------------------------------------------------------------------------
    def _read_frame(self, deadline: float | None) -> Any:
        while True:
            if len(self._buf) >= _HEADER.size:
                (n,) = _HEADER.unpack_from(self._buf)
                if len(self._buf) >= _HEADER.size + n:
                    data = bytes(self._buf[_HEADER.size:_HEADER.size + n])
                    del self._buf[:_HEADER.size + n]
                    return json.loads(data.decode("utf-8"))
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise _Deadline()
            ready, _, _ = select.select([self._fd], [], [], wait)
            if not ready:
                raise _Deadline()
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                raise WorkerLost()
            self._buf.extend(chunk)

    def wait_ready(self, timeout: float) -> None:
        msg = self._read_frame(time.monotonic() + timeout)
        if not isinstance(msg, dict) or "ready" not in msg:
            raise WorkerLost()
        self.ready = True

    def send(self, job: dict) -> None:
        data = json.dumps(job, separators=(",", ":")).encode("utf-8")
        try:
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerLost() from None

    def result(self, deadline: float | None) -> dict:
        """Frames until the result (stage frames update :attr:`stage`)."""
        while True:
            msg = self._read_frame(deadline)
            if isinstance(msg, dict) and "stage" in msg and "status" not in msg:
                self.stage = msg["stage"]
                continue
            return msg

    # -- life ------------------------------------------------------------------------------------------------
    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - limit))
            return self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def exit_status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover (SIGKILL is not ignorable)
            pass
        self.close_files()

    def close(self) -> None:
        """Ask politely (close stdin), then kill if it lingers."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self.close_files()

    def close_files(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                f.close()
            except OSError:
                pass


class WorkerPool:
    """Thread-safe pool of :class:`Worker` processes; :meth:`run` is the isolation primitive of every executor."""

    def __init__(self, *, startup_timeout: float = STARTUP_TIMEOUT_S, env: dict[str, str] | None = None):
        self.startup_timeout = startup_timeout
        self.env = env
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0    # workers started over the pool's life (a fresh one after each timeout / crash)

    def prestart(self, n: int) -> None:
        """Start ``n`` workers now, so their imports run in parallel with each other and with the caller."""
        for _ in range(n):
            w = self._spawn()
            with self._lock:
                self._idle.append(w)

    def _spawn(self) -> Worker:
        w = Worker(self.env)
        with self._lock:
            if self._closed:
                w.kill()
                raise RuntimeError("the worker pool is closed")
            self._all.add(w)
            self.started += 1
        return w

    def _checkout(self) -> Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if self._idle:
                return self._idle.pop()
        return self._spawn()

    def _discard(self, w: Worker) -> None:
        w.kill()
        with self._lock:
            self._all.discard(w)

    def run(self, job: dict, timeout: float | None) -> dict:
        """Run ``job`` in a worker under a ``timeout`` (seconds, None = no limit); always returns a result."""
        w = self._checkout()
        try:
            if not w.ready:
                try:
                    w.wait_ready(self.startup_timeout)
                except (_Deadline, WorkerLost):
                    tail = w.stderr_tail()
                    status = w.exit_status()
                    self._discard(w)
                    return crash_result(job, f"the worker process failed to start ({status})", tail)
            w.stage = None
            started = time.monotonic()
            w.send(job)
            result = w.result(None if timeout is None else started + timeout)
        except _Deadline:
            stage = w.stage
            self._discard(w)
            return timeout_result(job, timeout, stage)
        except WorkerLost:
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            status, tail, stage = w.exit_status(), w.stderr_tail(), w.stage
            self._discard(w)
            return crash_result(job, f"the worker process died ({status})"
                                     + (f" during stage {stage}" if stage else ""), tail, stage)
        except BaseException:
            self._discard(w)
            raise
        with self._lock:
            if self._closed:
                w.kill()
                self._all.discard(w)
            else:
                self._idle.append(w)
        return result

    def close(self) -> None:
        """Stop every worker, busy ones included (their callers get a crash result)."""
        with self._lock:
            self._closed = True
            idle, busy = list(self._idle), [w for w in self._all if w not in self._idle]
            self._idle.clear()
            self._all.clear()
        for w in idle:
            w.close()
        for w in busy:
            w.kill()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def kernel_location(job: dict) -> str:
    """``file:line:col`` of the first ``kernel`` keyword in the job's text (where a timeout, a crash or an output
    error is reported)."""
    text = job.get("text") or ""
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("kernel ") or stripped.startswith("kernel\t"):
            return f"{job.get('path')}:{i}:{len(line) - len(stripped) + 1}"
    return f"{job.get('path')}:1:1"


def timeout_result(job: dict, timeout: float | None, stage: str | None) -> dict:
    return {"status": STATUS_TIMEOUT, "phases": {}, "time_s": timeout, "error": {
        "kind": "Timeout", "stage": stage, "location": kernel_location(job), "program_location": None,
        "message": f"exceeded the time limit of {timeout:g} s" + (f" in stage {stage}" if stage else "")
                   + "; the worker was killed"}}


def crash_result(job: dict, why: str, stderr_tail: str = "", stage: str | None = None) -> dict:
    msg = why
    if stderr_tail.strip():
        msg += "; stderr tail: " + stderr_tail.strip()[-800:]
    return {"status": STATUS_CRASH, "phases": {}, "time_s": None, "error": {
        "kind": "WorkerCrash", "stage": stage, "location": kernel_location(job), "program_location": None,
        "message": msg}}


# --------------------------------------------------------------------------------- one pool per process

_LOCAL: WorkerPool | None = None
_LOCAL_LOCK = threading.Lock()


def local_pool() -> WorkerPool:
    """The process-wide pool (used by the Dask task function on each Dask worker)."""
    global _LOCAL
    with _LOCAL_LOCK:
        if _LOCAL is None:
            _LOCAL = WorkerPool()
        return _LOCAL


def close_local_pool() -> None:
    global _LOCAL
    with _LOCAL_LOCK:
        pool, _LOCAL = _LOCAL, None
    if pool is not None:
        pool.close()


atexit.register(close_local_pool)

__all__ = ["Worker", "WorkerPool", "WorkerLost", "timeout_result", "crash_result", "kernel_location",
           "local_pool", "close_local_pool", "STARTUP_TIMEOUT_S"]
