"""Suite-wide settings.

- The on-disk compile cache (``intent_eqsat.compile_cache``) is off, so no test reads a kernel another test (or a
  stand-in optimizer) stored, and nothing is written under the user's home; the cache's own tests pass
  ``cache=<tmp folder>``.
- Size bucket planning (``intent_eqsat.optimizer.size_buckets``) is off too: it adds 30-70% to every compile
  without sizes and leaves the general kernel as it was; its own tests (``test_size_buckets.py``) turn it on.
- One optimizer run per distinct input in each test process (:mod:`tests.optimize_memo`): dozens of tests of
  different files optimize the same corpus kernels with the same options (an instrumented run, 2026-12-07: 586 s of
  the 1,386 s spent optimizing repeated an identical call, 433 s of it in the same worker; measured back to back on
  ``tests/cpu/rules``, the memo saves 8% of the wall time, as xdist sends a file's tests to both workers). The optimizer is a deterministic function of its inputs (issue 21; the determinism
  tests check it in fresh processes, where this memo is not installed), so a repeat gets a deep copy of the first
  result. Tests that patch anything (their module uses ``monkeypatch``, ``mock`` or ``setattr(``, or they request
  the ``monkeypatch`` fixture) always run the optimizer. ``INTENT_EQSAT_TEST_MEMO=off`` turns the memo off.
"""
import os

import pytest

os.environ["INTENT_EQSAT_CACHE"] = "off"
os.environ["INTENT_EQSAT_SIZE_BUCKETS"] = "off"

from tests import optimize_memo  # noqa: E402  (after the environment above: it imports the package)

if os.environ.get("INTENT_EQSAT_TEST_MEMO", "").strip().lower() not in ("off", "0", "false", "no"):
    optimize_memo.install()


@pytest.fixture(autouse=True)
def _optimize_memo_only_for_unpatched_tests(request):
    """The memo is bypassed for a test that may patch the optimizer's code or environment."""
    with optimize_memo.bypassed(optimize_memo.may_patch(request)):
        yield
