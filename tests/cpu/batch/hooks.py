"""Fault injection for the batch tests, loaded by the worker from $INTENT_EQSAT_WORKER_HOOK (``file:inject``).

``slow*.kir`` sleeps far past any test time limit (the pool must kill the worker); ``crash*.kir`` kills its own
worker process with SIGSEGV and ``kill*.kir`` with SIGKILL (the pool must report a crash and carry on). Every other
job runs untouched."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def inject(job: dict) -> None:
    name = Path(job["path"]).name
    if name.startswith("slow"):
        time.sleep(120)
    elif name.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    elif name.startswith("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
