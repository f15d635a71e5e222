"""The generated launcher's direct launch path (``intent_eqsat.providers.triton.direct_launch``, issue 24 item 2).

After the first JIT launch of a specialization, launch() calls Triton's compiled kernel itself, keyed by its own
``_spec``. The danger is a key coarser than Triton's specialization: a kernel compiled for aligned pointers or for
an argument equal to 1 would then run on other arguments. Without a GPU, the JIT function of a generated module is
replaced by a recorder that specializes every argument with Triton's own ``native_specialize_impl`` (what
``JITFunction.run`` uses) and hands out one fake compiled kernel per distinct specialization. Every direct launch
must then reach the compiled kernel of its own arguments' specialization, with the arguments the JIT would bind.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from intent_eqsat.providers.loader import load_source  # noqa: E402

#: an int scalar and a float scalar between views, two outputs: pointers, ints and floats in one signature
KIR = """\
kernel stats(X: f32[M, N], scale: f32, k: i32, S: out f32[M], Mx: out f32[M]) {
  S[m] = sum(n: X[m, n]) * scale + cast<f32>(k)
  Mx[m] = max(n: X[m, n])
}
"""


def _specialize(args: tuple) -> tuple:
    """Triton's specialization of launch arguments (what its kernel cache key is made of), constexprs by value."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.nvidia.compiler import CUDABackend

    out = []
    for a in args:
        if a is None or type(a).__name__ == "dtype":        # the index dtype constexpr
            out.append(("constexpr", str(a)))
        else:
            out.append(native_specialize_impl(CUDABackend, a, False, True, True))
    return tuple(out)


class _Compiled:
    """A stand-in for Triton's CompiledKernel: records the launches made through its launcher."""

    def __init__(self, spec: tuple, log: list) -> None:
        self.spec, self.log = spec, log
        self.function, self.packed_metadata = object(), object()

    @property
    def run(self):
        def launch(gx, gy, gz, stream, function, metadata, launch_metadata, enter, exit_, *args):
            assert (function, metadata) == (self.function, self.packed_metadata)
            assert launch_metadata is None and enter is None and exit_ is None
            self.log.append(("direct", self.spec, _specialize(args), (gx, gy, gz), stream))
        return launch


class _RecordingJit:
    """A stand-in for the module's @triton.jit function: ``fn[grid](*args, **options)`` "compiles" once per
    Triton specialization (args and options) and returns that compiled kernel, as JITFunction.run does."""

    def __init__(self, log: list) -> None:
        self.log, self.cache = log, {}

    def __getitem__(self, grid):
        def jit_launch(*args, **options):
            spec = (_specialize(args), tuple(sorted(options.items())))
            compiled = self.cache.setdefault(spec, _Compiled(spec[0], self.log))
            self.log.append(("jit", spec[0], spec[0], grid, None))
            return compiled
        return jit_launch


class _Runtime:
    """triton.knobs.runtime's launch hooks: chains with no calls (the default) or one hook."""

    class _Chain:
        def __init__(self) -> None:
            self.calls: list = []

    def __init__(self) -> None:
        self.launch_enter_hook, self.launch_exit_hook = self._Chain(), self._Chain()


@pytest.fixture
def stats(jit_mode, gen_dir):
    """The generated stats module, its JIT function replaced by the recorder, on a fake CUDA device 0."""
    import intent_eqsat

    ck = intent_eqsat.compile(KIR, filename="stats.kir", target="sm90", provider="triton", cache=False)
    mod = load_source(ck.source, gen_dir / "direct", "stats")
    log: list = []
    runtime = _Runtime()
    saved = (mod.stats, list(mod._DIRECT_ENV), dict(mod.COMPILED), list(mod._FTZ_OFF))
    mod.stats = _RecordingJit(log)
    mod._DIRECT_ENV[:] = [(lambda: 0, lambda device: 7, runtime)]
    mod._FTZ_OFF[:] = [{"enable_reflect_ftz": False}]      # what the CUDA driver would have said
    mod.COMPILED.clear()
    yield mod, log, runtime
    mod.stats, mod._DIRECT_ENV[:], mod._FTZ_OFF[:] = saved[0], saved[1], saved[3]
    mod.COMPILED.clear()
    mod.COMPILED.update(saved[2])


def _buffers(m: int, n: int, offset: int = 0, stride: int = 1):
    """X (a view ``offset`` floats into its storage, columns ``stride`` apart) and two outputs."""
    base = torch.randn(m * n * stride + offset)
    X = base[offset:offset + m * n * stride].view(m, n * stride)[:, ::stride]
    return X, torch.empty(m), torch.empty(m)


def test_a_direct_launch_reaches_the_kernel_compiled_for_its_own_specialization(stats) -> None:
    mod, log, _ = stats
    calls = [
        (_buffers(5, 8), 3),
        (_buffers(5, 8), 3),                 # the same specialization: direct
        (_buffers(5, 8, offset=1), 3),      # X misaligned: a pointer without 16-byte divisibility
        (_buffers(5, 8), 1),                 # an integer equal to 1 is a constexpr to Triton
        (_buffers(5, 8), 16),                # divisible by 16
        (_buffers(5, 8), 2 ** 40),           # i64
        (_buffers(1, 8), 3),                 # a shape symbol equal to 1
        (_buffers(16, 32), 3),               # shape symbols divisible by 16
        (_buffers(5, 8, stride=2), 3),       # a column stride of 2
        (_buffers(5, 8, offset=1), 3),       # again: direct, the misaligned kernel
        (_buffers(5, 8), 1),
        (_buffers(16, 32), 3),
    ]
    for (X, S, Mx), k in calls:
        mod.launch(X, 0.5, k, S, Mx)
    for (X, S, Mx), k in calls:               # every specialization seen: all direct now
        mod.launch(X, 0.5, k, S, Mx)
    direct = [entry for entry in log if entry[0] == "direct"]
    jit = [entry for entry in log if entry[0] == "jit"]
    assert len(jit) == len({entry[1] for entry in jit}), "a specialization went through the JIT twice"
    assert len(jit) == 8 and len(direct) == 2 * len(calls) - 8, (len(jit), len(direct))
    for _, compiled_for, given, grid, stream in direct:
        assert given == compiled_for, f"direct launch of a kernel compiled for {compiled_for} with {given}"
        assert stream == 7 and grid[1:] == (1, 1)


def test_launch_control_and_hooks_take_the_jit_path(stats) -> None:
    mod, log, runtime = stats
    X, S, Mx = _buffers(5, 8)
    mod.launch(X, 0.5, 3, S, Mx)
    mod.launch(X, 0.5, 3, S, Mx, num_warps=4)      # another option: another compiled kernel
    assert [e[0] for e in log] == ["jit", "jit"]
    mod.launch(X, 0.5, 3, S, Mx, num_warps=4)
    assert log[-1][0] == "direct"
    runtime.launch_enter_hook.calls.append(lambda metadata: None)     # a profiler's hook: every launch seen
    mod.launch(X, 0.5, 3, S, Mx, num_warps=4)
    assert log[-1][0] == "jit"
    runtime.launch_enter_hook.calls.clear()
    mod.launch(X, 0.5, 3, S, Mx, num_warps=4)
    assert log[-1][0] == "direct"


def test_the_compiled_kernels_kept_are_bounded(stats) -> None:
    from intent_eqsat.providers.triton.direct_launch import CACHE_LIMIT

    mod, log, _ = stats
    X, S, Mx = _buffers(3, 4)
    for k in range(2, CACHE_LIMIT + 10):                # one specialization per k value
        mod.launch(X, 0.5, k, S, Mx)
    assert 0 < len(mod.COMPILED) <= CACHE_LIMIT
