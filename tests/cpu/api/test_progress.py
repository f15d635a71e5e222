"""Compile progress (issue 24 item 6): the optimizer counts its steps (the same on every machine), the API and the
CLI draw them as a tqdm bar on a terminal, and nothing is drawn when stderr is piped or ``-q`` is given."""
from __future__ import annotations

import io

from intent_eqsat import pipeline
from intent_eqsat.progress import CompileProgress
from intent_eqsat.rules import registry as R
from intent_eqsat.optimizer.optimize import STEPS_AFTER_GROUPS, optimize

TWO_KERNELS = """\
kernel row_sum(X: f32[M, N], Y: out f32[M]) {
  Y[m] = sum(n: X[m, n])
}

kernel scale(X: f32[N], Y: out f32[N]) {
  Y[n] = X[n] * 2.0
}
"""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _constructed():
    module = pipeline.load(TWO_KERNELS, "two.kir")
    return pipeline.construct(module, target="sm90", options=pipeline.make_options(None))


def test_the_optimizer_counts_one_step_per_group_and_binding_of_every_kernel() -> None:
    steps: list = []
    optimize(_constructed(), target="sm90", progress=lambda label, done, total: steps.append((label, done, total)))
    groups = [g.name for g in R.load(None).select(None)]
    per_kernel = len(groups) + STEPS_AFTER_GROUPS
    assert [d for _, d, _ in steps] == list(range(1, 2 * per_kernel + 1))
    assert {t for _, _, t in steps} == {2 * per_kernel}
    labels = [label for label, _, _ in steps]
    assert labels[:per_kernel] == [f"row_sum: {g}" for g in groups] + ["row_sum: tile binding",
                                                                         "row_sum: size buckets"]
    assert labels[per_kernel] == f"scale: {groups[0]}"


def test_the_bar_is_drawn_on_a_terminal_only() -> None:
    tty = _Tty()
    bar = CompileProgress("a.kir", stream=tty)
    bar.stage("optimize")
    bar.step("row_sum: blocking", 3, 22)
    drawn = tty.getvalue()
    assert "a.kir: optimize row_sum: blocking" in drawn and "3/22" in drawn
    bar.close()
    piped = io.StringIO()
    quiet = CompileProgress("a.kir", stream=piped)
    quiet.stage("optimize")
    quiet.step("row_sum: blocking", 3, 22)
    quiet.close()
    assert piped.getvalue() == ""
    off = _Tty()
    disabled = CompileProgress("a.kir", stream=off, enabled=False)       # -q, --no-progress
    disabled.stage("optimize")
    disabled.close()
    assert off.getvalue() == ""
    forced = io.StringIO()
    api_bar = CompileProgress("a.kir", stream=forced, always=True)      # compile(progress=True) in a notebook
    api_bar.step("row_sum: blocking", 1, 22)
    api_bar.close()
    assert "1/22" in forced.getvalue()


def test_compile_reports_its_steps_through_the_api(tmp_path) -> None:
    import intent_eqsat

    stages: list = []
    steps: list = []
    intent_eqsat.compile(TWO_KERNELS, filename="two.kir", provider="triton", kernel="scale", cache=False,
                         on_stage=stages.append, on_progress=lambda *s: steps.append(s))
    assert stages[:4] == ["load", "verify_kir", "construct", "optimize"] and "serialize" in stages
    assert steps and steps[-1][1] == steps[-1][2]                        # the last step completes the bar
