"""Batch reports: the summary table (stdout), ``report.json``, ``report.md`` and its plots (``plots/*.png``).

Every file is written with :func:`~intent_eqsat.atomic.write_atomic`. Entries are in input order (sorted
paths, then providers in the order asked), never in completion order, so two runs over the same inputs list the
same things in the same order; only run facts (times, ``cached``) differ.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any, Sequence

from intent_eqsat.atomic import write_atomic
from intent_eqsat.pipeline import SKIPPED_REMARK

FAILED = ("error", "timeout", "crash")
_ONCE = (SKIPPED_REMARK,)     # remarks said once under the table, not on every row


def summarize(entries: Sequence[dict]) -> dict:
    by_status: dict[str, int] = {}
    for e in entries:
        by_status[e["status"]] = by_status.get(e["status"], 0) + 1
    return {"total": len(entries), "ok": by_status.get("ok", 0),
            "failed": sum(by_status.get(s, 0) for s in FAILED), "cached": sum(1 for e in entries if e["cached"]),
            "by_status": dict(sorted(by_status.items()))}


def _fmt_cost(c: Any) -> str:
    if c is None:
        return "-"
    if isinstance(c, str):
        return c
    if math.isinf(c):
        return "inf"
    return f"{c:.4g}"


def _fmt_time(t: Any) -> str:
    return "-" if t is None else f"{t:.2f}"


def _note(e: dict) -> str:
    err = e.get("error")
    if err:
        stage = f" [{err['stage']}]" if err.get("stage") else ""
        return f"{err['kind']}{stage} at {err.get('location') or e['file']}: {err['message']}"
    remarks = [r for r in e.get("remarks") or [] if r not in _ONCE]
    return "; ".join(remarks)


def summary_table(entries: Sequence[dict], *, width: int = 160) -> str:
    """A plain-text table, one row per job, then a totals line."""
    rows = [("file", "provider", "status", "kernels", "cost_s", "time_s", "note")]   # cost: modelled s/launch
    for e in entries:
        status = e["status"] + (" (cached)" if e["cached"] else "")
        rows.append((e["file"], e.get("provider") or "-", status, str(len(e.get("kernels") or [])),
                     _fmt_cost(e.get("cost")), _fmt_time(e.get("compile_time_s")), _note(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = []
    for r in rows:
        head = "  ".join(r[i].ljust(widths[i]) for i in range(6))
        line = f"{head}  {r[6]}".rstrip()
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
    s = summarize(entries)
    lines.append("")
    for remark in _ONCE:
        n = sum(1 for e in entries if remark in (e.get("remarks") or []))
        if n:
            lines.append(f"note ({n} jobs): {remark}")
    lines.append(f"{s['total']} jobs: {s['ok']} ok, {s['failed']} failed, {s['cached']} cached"
                 + "".join(f", {n} {k}" for k, n in s["by_status"].items() if k not in ("ok",)))
    return "\n".join(lines) + "\n"


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isinf(obj) or math.isnan(obj)):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj


def write_json(path: Path, header: dict, entries: Sequence[dict]) -> None:
    doc = dict(header)
    doc["summary"] = summarize(entries)
    doc["results"] = list(entries)
    write_atomic(path, json.dumps(_json_safe(doc), indent=1) + "\n")


def _md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def write_markdown(path: Path, header: dict, entries: Sequence[dict], plots: dict[str, str | None]) -> None:
    s = summarize(entries)
    cfg = header.get("config", {})
    L = ["# intent-eqsat batch report", ""]
    L.append(f"- tool: `{header['tool']['version']}`")
    L.append(f"- target: `{cfg.get('target')}`; providers: {', '.join(cfg.get('providers') or ['-'])}; "
             f"options: `{cfg.get('options')}`")
    ex = cfg.get("executor", {})
    L.append(f"- executor: {ex.get('executor')}" + (f" (-j {ex.get('jobs')})" if ex.get("jobs") else "")
             + f"; time limit per job: {cfg.get('timeout_s')} s")
    L.append(f"- **{s['total']} jobs: {s['ok']} ok, {s['failed']} failed, {s['cached']} cached** ("
             + ", ".join(f"{k}: {n}" for k, n in s["by_status"].items()) + ")")
    statuses = {e.get("optimizer_status") for e in entries if e["status"] == "ok"}
    if "skipped" in statuses:
        L.append("- optimization skipped (--no-optimize): the constructed programs were serialized")
    if cfg.get("specialize"):
        L.append("- KIR specializations requested: "
                 + "; ".join(f"`{k}={','.join(map(str, v))}`" for k, v in cfg["specialize"].items())
                 + " (each file's kernels take the symbols they have)")
    sizes = cfg.get("sizes")
    L.append("- predicted cost: the cost model's time per launch in seconds on the target, at "
             + (("sizes " + ", ".join(f"`{k}={v}`" for k, v in sorted(sizes.items())) + " (other symbols: ")
                if sizes else "no `--sizes` given (every symbol: ")
             + "a window extent 3, any other 1024; `intent_eqsat.kir.roles`)")
    L += ["", "## Results", "", "| file | provider | status | kernels | predicted cost (s) | compile time (s) | "
                                "e-graph size | cached |", "|---|---|---|---|---:|---:|---:|---|"]
    for e in entries:
        kernels = ", ".join(f"[{k['name']}]({k['artifact']})" if k.get("artifact") else k["name"]
                            for k in e.get("kernels") or [])
        specs = [f"[{sp['kernel']}]({sp['artifact']})" if sp.get("artifact") else sp["kernel"]
                 for sp in e.get("specializations") or []]
        if specs:
            kernels += " (specialized: " + ", ".join(specs) + ")"
        L.append(f"| `{_md(e['file'])}` | {e.get('provider') or '-'} | {e['status']} | {kernels or '-'} | "
                 f"{_fmt_cost(e.get('cost'))} | {_fmt_time(e.get('compile_time_s'))} | "
                 f"{e.get('egraph_size') if e.get('egraph_size') is not None else '-'} | "
                 f"{'yes' if e['cached'] else 'no'} |")
    failures = [e for e in entries if e["status"] in FAILED]
    L += ["", "## Failures", ""]
    if not failures:
        L.append("none")
    for e in failures:
        err = e["error"]
        stage = f" (stage {err['stage']})" if err.get("stage") else ""
        L.append(f"- `{_md(e['file'])}` ({e.get('provider') or e.get('kind')}): **{err['kind']}** at "
                 f"`{err.get('location') or e['file']}`{stage}: {_md(err['message'])}")
    remarked = [(e, [r for r in e.get("remarks") or [] if r not in _ONCE]) for e in entries if e["status"] == "ok"]
    remarked = [(e, rs) for e, rs in remarked if rs]
    L += ["", "## Remarks", ""]
    if not remarked:
        L.append("none")
    for e, rs in remarked:
        for r in rs:
            L.append(f"- `{_md(e['file'])}` ({e.get('provider') or '-'}): {_md(r)}")
    L += ["", "## Plots", ""]
    for title, (name, why) in (("Predicted cost per kernel", ("cost", plots.get("cost_why"))),
                               ("Compile time per kernel", ("compile_time", plots.get("compile_time_why"))),
                               ("E-graph size vs compile time", ("egraph_vs_time", plots.get("egraph_vs_time_why")))):
        L.append(f"### {title}")
        L.append("")
        if plots.get(name):
            L.append(f"![{title}]({plots[name]})")
        else:
            L.append(f"not drawn: {why or 'no data'}")
        L.append("")
    write_atomic(path, "\n".join(L).rstrip("\n") + "\n")


def _save(fig: Any, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    write_atomic(path, buf.getvalue())


def _no_optimizer_data(entries: Sequence[dict]) -> str | None:
    """Why no job can have optimizer data (costs, e-graph sizes), or None when the optimizer ran somewhere."""
    statuses = {e.get("optimizer_status") for e in entries}
    if "ran" in statuses:
        return None
    if statuses == {"skipped"}:
        return "optimization was skipped (--no-optimize)"
    return "no job succeeded"


def write_plots(out: Path, entries: Sequence[dict]) -> dict[str, str | None]:
    """Draw the plots that have data; returns name -> relative path (or None, with ``<name>_why``)."""
    no_opt = _no_optimizer_data(entries)
    res: dict[str, str | None] = {"cost": None, "compile_time": None, "egraph_vs_time": None}
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        why = "matplotlib is not installed (pip install 'intent-eqsat[batch]')"
        return {**res, "cost_why": why, "compile_time_why": why, "egraph_vs_time_why": why}
    plots = out / "plots"
    # a file name is plain text, never matplotlib's $math$
    label = [f"{Path(e['file']).stem}/{e.get('provider') or e.get('kind')}".replace("$", r"\$") for e in entries]
    colors = {"ok": "#4c72b0", "error": "#c44e52", "timeout": "#dd8452", "crash": "#8172b3"}

    timed = [(lab, e) for lab, e in zip(label, entries) if e.get("compile_time_s") is not None]
    if timed:
        fig, ax = plt.subplots(figsize=(8, 0.5 + 0.22 * len(timed)))
        ax.barh([t[0] for t in timed], [t[1]["compile_time_s"] for t in timed],
                color=[colors.get(t[1]["status"], "#999999") for t in timed])
        ax.invert_yaxis()
        ax.set_xlabel("compile time (s; cached jobs show the time of the run that produced them)")
        ax.set_title("Compile time per kernel (blue ok, red error, orange timeout)")
        ax.tick_params(axis="y", labelsize=7)
        _save(fig, plots / "compile_time.png")
        plt.close(fig)
        res["compile_time"] = "plots/compile_time.png"
    else:
        res["compile_time_why"] = "no job has a compile time"

    costed = [(lab, e["cost"]) for lab, e in zip(label, entries)
              if isinstance(e.get("cost"), (int, float)) and math.isfinite(e["cost"]) and e["cost"] > 0]
    if costed:
        fig, ax = plt.subplots(figsize=(8, 0.5 + 0.22 * len(costed)))
        ax.barh([c[0] for c in costed], [c[1] for c in costed], color="#55a868")
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("predicted cost (cost model units)")
        ax.set_title("Predicted cost per kernel")
        ax.tick_params(axis="y", labelsize=7)
        _save(fig, plots / "cost.png")
        plt.close(fig)
        res["cost"] = "plots/cost.png"
    else:
        res["cost_why"] = f"no predicted costs: {no_opt}" if no_opt else "no job has a finite predicted cost"

    sized = [(e["egraph_size"], e["compile_time_s"], lab) for lab, e in zip(label, entries)
             if e.get("egraph_size") is not None and e.get("compile_time_s") is not None]
    if sized:
        fig, ax = plt.subplots(figsize=(6, 4.5))
        ax.scatter([s[0] for s in sized], [s[1] for s in sized], color="#4c72b0")
        for x, y, lab in sized:
            ax.annotate(lab.split("/")[0], (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("e-graph size (nodes)")
        ax.set_ylabel("compile time (s)")
        ax.set_title("E-graph size vs compile time")
        _save(fig, plots / "egraph_vs_time.png")
        plt.close(fig)
        res["egraph_vs_time"] = "plots/egraph_vs_time.png"
    else:
        res["egraph_vs_time_why"] = (f"no e-graph sizes: {no_opt}" if no_opt
                                     else "the optimizer reported no e-graph sizes")
    for name in ("cost", "compile_time", "egraph_vs_time"):      # no stale plot from an earlier run
        if res.get(name) is None:
            stale = plots / f"{name}.png"
            if stale.exists():
                stale.unlink()
    return res


__all__ = ["summarize", "summary_table", "write_json", "write_markdown", "write_plots", "FAILED"]
