"""The command line of a two-step bench script: ``prepare --out DIR`` here (where egglog is), ``run --in DIR
[--json FILE]`` on the GPU machine (which has none). Shared by ``launch_overhead.py`` and ``size_buckets.py``."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def main(argv: "list[str] | None", doc: str, prepare: Callable[[Path], None],
         run: Callable[[Path, "Path | None"], None], default_dir: "Path | None" = None) -> int:
    """Parse ``argv`` and call ``prepare(out)`` or ``run(inp, json)``; ``default_dir`` (None: required) is the
    folder both steps use when none is given."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    need = {"required": True} if default_dir is None else {"default": default_dir}
    sub.add_parser("prepare").add_argument("--out", type=Path, **need)
    r = sub.add_parser("run")
    r.add_argument("--in", dest="inp", type=Path, **need)
    r.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.out)
    else:
        run(args.inp, args.json)
    return 0
