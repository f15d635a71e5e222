"""A batch worker process: ``python -m intent_eqsat.batch.worker``.

It imports the pipeline once, says it is ready, then runs jobs one at a time until its stdin closes. Messages in
both directions are frames: a 4-byte big-endian length, then UTF-8 JSON. Worker -> parent frames are
``{"ready": pid}`` once, ``{"stage": name}`` as each stage of the current job starts, and the job's result (a dict
with ``status``). Results go to a private duplicate of the original stdout; file descriptor 1 is pointed at stderr
so that anything a library prints cannot corrupt the protocol. The parent (:mod:`intent_eqsat.batch.pool`) owns the
deadline: on timeout it kills this process, on its death it reports a crash.
"""
from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any, BinaryIO

_HEADER = struct.Struct(">I")


def write_frame(f: BinaryIO, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    f.write(_HEADER.pack(len(data)) + data)
    f.flush()


def read_frame(f: BinaryIO) -> Any | None:
    """The next frame, or None at end of input."""
    head = f.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    data = f.read(n)
    if len(data) < n:
        return None
    return json.loads(data.decode("utf-8"))


def _preload() -> None:
    """Import what every job needs, before saying ready (so a job's time limit never pays for imports)."""
    import importlib

    import intent_eqsat.batch.jobs  # noqa: F401
    import intent_eqsat.construct  # noqa: F401
    import intent_eqsat.ir  # noqa: F401
    import intent_eqsat.kir  # noqa: F401
    import intent_eqsat.kir.inputs  # noqa: F401

    for name in ("intent_eqsat.rules", "intent_eqsat.providers.triton", "intent_eqsat.providers.cutile"):
        try:
            importlib.import_module(name)
        except Exception:  # not built yet / optional dependency missing: the job reports it at its stage
            pass


def _exit_with_parent() -> None:
    """End this worker as soon as the process that started it is gone (even if it was SIGKILLed mid-batch)."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> int:
    _exit_with_parent()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = os.fdopen(os.dup(0), "rb")
    _preload()
    from intent_eqsat.batch.jobs import run_job

    write_frame(out, {"ready": os.getpid()})
    while True:
        job = read_frame(inp)
        if job is None:
            return 0

        def on_stage(name: str) -> None:
            write_frame(out, {"stage": name})

        try:
            result = run_job(job, on_stage)
        except Exception as err:  # a bug outside the pipeline's own error handling (e.g. in the hook)
            import traceback

            result = {"status": "error", "phases": {}, "error": {
                "kind": "InternalError", "stage": None, "location": job.get("path"), "program_location": None,
                "message": f"{type(err).__name__}: {err}",
                "traceback": "".join(traceback.format_exception(err))[-4000:]}}
        write_frame(out, result)


if __name__ == "__main__":
    sys.exit(main())
