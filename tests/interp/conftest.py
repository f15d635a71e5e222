"""Provider tests (no GPU): generated Triton runs under ``TRITON_INTERPRET=1`` on torch CPU tensors, and
AOT-compiles for sm_90 / gfx942.

Triton 3.6 reads ``TRITON_INTERPRET`` when a function is decorated with ``@triton.jit`` (and the generated modules
read it once at import), not when triton is imported, so the mode is chosen per test with the fixtures below and
the loader keeps interpreted and compiled copies of a module apart. Setting the variable at conftest import would
leak into every other test directory of the session.

triton itself (and its code generator) is imported here with TRITON_INTERPRET unset, whatever the caller's
environment: ``triton.language.standard``'s own jit functions are bound to the mode of that first import, and the
AOT compiler refuses interpreted ones. The generated code never calls them (see the serializer), so interpreted
kernels run fine next to them.
"""
from __future__ import annotations

import os
import warnings

import pytest

_saved = os.environ.pop("TRITON_INTERPRET", None)
try:
    import triton  # noqa: F401
    import triton.compiler.code_generator  # noqa: F401
except ImportError:                                   # the triton extra is not installed: the tests skip
    pass
finally:
    if _saved is not None:
        os.environ["TRITON_INTERPRET"] = _saved


@pytest.fixture
def interpret_mode(monkeypatch):
    """Generated modules loaded inside the test run under Triton's interpreter."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with warnings.catch_warnings():
        # padded lanes compute -inf - -inf and friends on purpose (masked out afterwards)
        warnings.simplefilter("ignore", RuntimeWarning)
        # Triton 3.6's interpreter converts 1-element arrays to ints (loop bounds) with a NumPy deprecation
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="triton")
        yield


@pytest.fixture
def jit_mode(monkeypatch):
    """Generated modules loaded inside the test are real @triton.jit functions (for AOT compilation)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    yield


@pytest.fixture(scope="session")
def gen_dir(tmp_path_factory):
    """Where the tests' generated sources are written (and imported from)."""
    return tmp_path_factory.mktemp("triton_gen")
