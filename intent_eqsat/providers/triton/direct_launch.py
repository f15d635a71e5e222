"""Launching Triton's compiled kernel directly from a generated launcher (issue 24 item 2: host overhead).

A JIT launch, ``kernel[grid](*args, **options)``, spends most of its host time before the GPU is asked for
anything: it binds the arguments to the signature, specializes each of them (its dtype, a pointer's 16-byte
alignment, an integer's range, divisibility by 16 and whether it is 1), hashes that with the options into its cache
key, and builds launch metadata for the launch hooks. A generated launcher already holds most of what that key is
made of, so after the first JIT launch of a specialization it keeps Triton's ``CompiledKernel`` under its own key and
calls the kernel's launcher itself, as Inductor's generated launchers do.

The key (``_spec``) must determine Triton's specialization of every argument, or a kernel compiled for other
arguments would run (an aligned-pointer kernel on a misaligned view is wrong). It holds:

- for every pointer: whether its address is a multiple of 16 (its dtype is fixed: launch() checks it, workspaces
  and the flag word are allocated with it);
- for every integer: its value (Triton's specialization is a function of the value);
- every constexpr (tile parameters, the index dtype) and the launch options the caller may choose;

and, in the cache, the current device (Triton's caches are per device). Floats (always ``fp32``) and booleans
(always ``u1``) are specialized by type alone, and launch() converts scalars to ``float``/``int``/``bool`` first.
What the key does not follow: Triton's process-wide settings changed after a kernel's first launch
(``TRITON_DEBUG``, instrumentation); a launch hook (``triton.knobs.runtime.launch_enter_hook`` /
``launch_exit_hook``) turns the direct path off while it is set, so profilers see every launch. Under the
interpreter the path is off.

The helpers are printed into every generated Triton module as plain Python (``DIRECT_LAUNCH_SOURCE``; a module
imports nothing of this package), and :func:`direct_launch_lines` prints a launcher's call.
"""
from __future__ import annotations

from typing import Callable, Sequence

#: the printer's wrapping of a call over lines: (head, items, tail) -> lines
Wrap = Callable[[str, Sequence[str], str], list]

#: the most compiled kernels a launcher keeps (a dict cleared when full; a miss costs one JIT launch)
CACHE_LIMIT = 4096

#: Python source printed once into a generated module beside its launchers.
DIRECT_LAUNCH_SOURCE = f'''\
_DIRECT_ENV = []  # (current device, its current stream, Triton's runtime knobs), bound at the first JIT launch


def _compiled_launch(compiled, spec):
    """(launch function, CUDA function, packed metadata, stream) of the kernel Triton compiled for the launch
    specialization ``spec`` on the current device, to launch it without the JIT's argument binding (most of a
    launch's host time); None before the first JIT launch of ``spec``, or while a Triton launch hook is set."""
    if not _DIRECT_ENV:
        return None
    current_device, current_stream, runtime = _DIRECT_ENV[0]
    if getattr(runtime.launch_enter_hook, "calls", True) or getattr(runtime.launch_exit_hook, "calls", True):
        return None
    device = current_device()
    entry = compiled.get((device, spec))
    if entry is None:
        return None
    return entry + (current_stream(device),)


def _remember_compiled(compiled, spec, kernel):
    """Keep the CompiledKernel a JIT launch returned, for direct launches of the same specialization."""
    if _INTERPRET or not hasattr(kernel, "packed_metadata"):
        return
    if not _DIRECT_ENV:
        driver = triton.runtime.driver.active
        _DIRECT_ENV.append((driver.get_current_device, driver.get_current_stream, triton.knobs.runtime))
    if len(compiled) >= {CACHE_LIMIT}:
        compiled.clear()
    run = kernel.run        # first: it loads the binary (the function handle) if the launch has not
    compiled[(_DIRECT_ENV[0][0](), spec)] = (run, kernel.function, kernel.packed_metadata)
'''


def spec_items(kernel_args: Sequence[tuple[str, str]], values: dict[str, str], index_arg: str | None) -> list[str]:
    """Launcher expressions of the launch specialization key: pointer alignment, integer values, constexprs.

    ``kernel_args``: (identifier, signature type) in the kernel's signature order; ``values``: identifier -> the
    launcher's expression for it (absent: the identifier itself is the launcher's local)."""
    items: list[str] = []
    for ident, sig in kernel_args:
        value = values.get(ident, ident)
        if sig.startswith("*"):
            items.append(f"{value}.data_ptr() % 16 == 0")
        elif sig == "constexpr" or (sig.startswith(("i", "u")) and sig != "i1"):
            items.append(value)
        # floats are fp32 and booleans u1 whatever their value: not part of the key
    if index_arg:
        items.append("_idx")
    return items + ["num_warps", "num_stages"]


def direct_launch_lines(fn_name: str, compiled: str, args: Sequence[str], spec: Sequence[str],
                        options: Sequence[str], wrap: Wrap, indent: str = "    ") -> list[str]:
    """A launcher's last lines: the direct launch of ``fn_name``'s compiled kernel for this specialization, or the
    JIT launch (compiling on the first launch of a specialization) whose CompiledKernel is kept in ``compiled``.
    ``args``: every argument in the kernel's signature order, constexprs included; ``options``: the JIT launch's
    keyword options; ``wrap(head, items, tail)``: the printer's line wrapping of a call."""
    out = wrap(f"{indent}_args = (", list(args), ",)" if len(args) == 1 else ")")
    out += wrap(f"{indent}_spec = (", list(spec), ",)" if len(spec) == 1 else ")")
    out.append(f"{indent}_direct = _compiled_launch({compiled}, _spec)")
    out.append(f"{indent}if _direct is None:  # the JIT launch: it compiles the first launch of a specialization")
    out += wrap(f"{indent}    _remember_compiled({compiled}, _spec, {fn_name}[(_grid,)](",
                     ["*_args", *options], "))")
    out.append(f"{indent}else:")
    out.append(f"{indent}    _run, _function, _metadata, _stream = _direct")
    out.append(f"{indent}    _run(_grid, 1, 1, _stream, _function, _metadata, None, None, None, *_args)")
    return out
