"""Host overhead of calling our kernels, and torch.compile / CUDA-graph composition (issue 24 items 1, 2).

Two steps, because the GPU machine has no egglog:

    prepare (here):  PYTHONPATH=. .venv/bin/python bench/launch_overhead.py prepare --out build/launch
        compiles the kernels below (no tuning file) and pickles the CompiledKernels (plain data:
        ``intent_eqsat.compile_cache``) to ``build/launch/kernels.pkl``.
    run (on the GPU): python3 bench/launch_overhead.py run --in build/launch --json $OUT/launch.json
        for each kernel, the host time per call of: a hand-written Triton launch of the same work (elementwise
        kernel only), the generated module's ``launch()``, ``ck(x, out)``, ``ck(x)`` (allocating its out view),
        ``ck.launch(**named)``, the generated ``launch()`` with its direct launch path turned off (every launch
        through Triton's JIT, as before issue 24's last step) and eager PyTorch; then whether ``torch.compile`` (default mode and
        ``reduce-overhead``, i.e. CUDA graphs; ``fullgraph=True``) around ``ck(...)`` and around the generated
        ``launch()`` gives the eager result.

Host time per call: the kernels are tiny (4096 elements), so enqueueing 1,000 calls back to back is bound by the
host; the figure is the wall time of the loop divided by the calls, median (and fastest) of 21 rounds in which
every variant of the kernel (and the hand-written launch) takes its turn, after a warm-up. Ratios are against the
hand-written Triton launch of the same rounds.
"""
from __future__ import annotations

import json
import pickle
import statistics
import sys
import time
from pathlib import Path

import two_step  # bench/two_step.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]

#: name -> KIR text; small kernels whose run time is far below their host overhead
KERNELS = {
    "axpb": "kernel axpb(X: f32[N], Y: out f32[N]) {\n  Y[n] = X[n] * 2.0 + 1.0\n}\n",
    "softmax": (ROOT / "examples" / "corpus" / "softmax.kir").read_text(),
    "stats": ("kernel stats(X: f32[M, N], scale: f32, S: out f32[M], Mx: out f32[M]) {\n"
              "  S[m] = sum(n: X[m, n]) * scale\n  Mx[m] = max(n: X[m, n])\n}\n"),
}


def prepare(out: Path) -> None:
    import intent_eqsat

    out.mkdir(parents=True, exist_ok=True)
    kernels = {}
    for name, text in KERNELS.items():
        t = time.perf_counter()
        kernels[name] = intent_eqsat.compile(text, filename=f"{name}.kir", target="sm90", provider="triton",
                                             cache=False)
        print(f"compiled {name} in {time.perf_counter() - t:.1f} s", flush=True)
    (out / "kernels.pkl").write_bytes(pickle.dumps(kernels))


# ------------------------------------------------------------------------------------------------------ run

def _host_us(variants: dict, calls: int = 1000, rounds: int = 21) -> tuple[dict, dict]:
    """Host us per call of each variant: rounds of ``calls`` calls, the variants interleaved within each round
    (so a slow spell of the host hits all of them alike); (median over the rounds, fastest round). The host's
    noise only adds time, so the fastest round is the steadier figure of what a call costs."""
    import torch

    for fn in variants.values():
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    per: dict = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            per[name].append((time.perf_counter() - t) / calls * 1e6)
            torch.cuda.synchronize()
    return ({name: statistics.median(v) for name, v in per.items()}, {name: min(v) for name, v in per.items()})


def _hand_triton():
    import triton
    import triton.language as tl

    @triton.jit
    def axpb_kernel(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(Y + offs, tl.load(X + offs, mask=mask) * 2.0 + 1.0, mask=mask)

    def launch(x, y):
        n = x.numel()
        axpb_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)

    def launch_with_options(x, y):         # the launch options every generated launcher passes
        n = x.numel()
        axpb_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4, num_stages=3,
                                             enable_fp_fusion=True, enable_reflect_ftz=False)

    return launch, launch_with_options


def _cases(torch):
    x1 = torch.randn(4096, device="cuda")
    x2 = torch.randn(32, 128, device="cuda")
    return {
        "axpb": dict(args=(x1,), named=lambda out: {"X": x1, "Y": out[0]}, outs=lambda: (torch.empty_like(x1),),
                     ref=lambda: (x1 * 2.0 + 1.0,), eager=lambda: x1 * 2.0 + 1.0),
        "softmax": dict(args=(x2,), named=lambda out: {"X": x2, "Y": out[0]}, outs=lambda: (torch.empty_like(x2),),
                        ref=lambda: (torch.softmax(x2, -1),), eager=lambda: torch.softmax(x2, -1)),
        "stats": dict(args=(x2, 0.5), named=lambda out: {"X": x2, "scale": 0.5, "S": out[0], "Mx": out[1]},
                      outs=lambda: (torch.empty(32, device="cuda"), torch.empty(32, device="cuda")),
                      ref=lambda: (x2.sum(1) * 0.5, x2.max(1).values),
                      eager=lambda: (x2.sum(1) * 0.5, x2.max(1).values)),
    }


def _close(got, want) -> bool:
    import torch

    got = got if isinstance(got, tuple) else (got,)
    return len(got) == len(want) and all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))


def _compile_check(torch, fn, ref, mode: str | None) -> str:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    skips = counters["inductor"]["cudagraph_skips"]
    try:
        f = torch.compile(fn, fullgraph=True, mode=mode)
        for _ in range(3):                   # reduce-overhead records the graph on a later call
            got = f()
        verdict = "ok" if _close(got, ref) else "WRONG"
    except Exception as err:                 # the finding is the error: record it, go on
        return f"error: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
    if mode == "reduce-overhead":
        skipped = counters["inductor"]["cudagraph_skips"] - skips
        verdict += ", CUDA graph skipped" if skipped else ", CUDA graph used"
    return verdict


def _kept(mod) -> int:
    """How many compiled kernels the module's launchers keep for direct launches (0: every launch went through
    Triton's JIT)."""
    return sum(len(v) for k, v in vars(mod).items() if k.endswith("COMPILED") and isinstance(v, dict))


def _direct_checks(torch, ck) -> list:
    """axpb launched on views whose Triton specializations differ (16-byte aligned or not, extents 1, 16, 17 and a
    strided view), each twice in a row and then all again, so the later launches are direct: every result must be
    eager's. A direct launch of a kernel compiled for another specialization would give a wrong result or fault."""
    base = torch.randn(30000 + 64, device="cuda")
    views = {"aligned 4096": base[:4096], "misaligned 4096 (offset 1 float)": base[1:4097],
             "extent 1": base[:1], "extent 16": base[:16], "extent 17, misaligned": base[3:20],
             "stride 2": base[:8192:2], "30000 (another size bucket)": base[:30000]}
    out = []
    for round_ in range(2):
        for what, x in views.items():
            for _ in range(2):
                y = ck(x)
            good = torch.allclose(y, x * 2.0 + 1.0)
            out.append({"what": f"{what}, round {round_ + 1}", "result": "ok" if good else "WRONG"})
    torch.cuda.synchronize()
    out.append({"what": "compiled kernels kept", "result": str(_kept(ck.load()))})
    return out


def run(inp: Path, json_out: Path | None) -> None:
    import torch

    sys.path.insert(0, str(ROOT))
    kernels = pickle.loads((inp / "kernels.pkl").read_bytes())
    cases = _cases(torch)
    rows, checks = [], []
    hand, hand_options = _hand_triton()
    x_hand = torch.randn(4096, device="cuda")
    for name, ck in kernels.items():
        c = cases[name]
        outs = c["outs"]()
        mod = ck.load()
        ref = c["ref"]()
        ck(*c["args"], *outs)
        assert _close(outs, ref), f"{name}: ck() result differs from eager"
        variants = {}
        y = torch.empty_like(x_hand)
        hand(x_hand, y)
        assert torch.allclose(y, x_hand * 2.0 + 1.0)
        variants["hand_triton (axpb work)"] = lambda: hand(x_hand, y)
        if name == "axpb":
            variants["hand_triton + our launch options"] = lambda: hand_options(x_hand, y)
            variants["hand_triton allocating its output"] = lambda: hand(x_hand, torch.empty_like(x_hand))
        named = c["named"](outs)
        variants["generated_launch"] = lambda: mod.launch(**named)
        jit_only = ck.load(out_dir=inp / "jit_only")        # a second copy of the module, its direct path off
        jit_only._compiled_launch = lambda compiled, spec: None
        variants["generated_launch, JIT path (before)"] = lambda: jit_only.launch(**named)
        variants["ck(x, out)"] = lambda: ck(*c["args"], *outs)
        variants["ck(x) allocating"] = lambda: ck(*c["args"])
        variants["ck.launch(**named)"] = lambda: ck.launch(**named)
        variants["eager_torch"] = c["eager"]
        median, fastest = _host_us(variants)
        rows.append({"kernel": name, "host_us": median, "host_us_min": fastest, "direct_launch_entries": _kept(mod)})
        for mode in (None, "reduce-overhead"):
            checks.append({"kernel": name, "what": "ck(...)", "mode": mode or "default",
                           "result": _compile_check(torch, lambda: ck(*c["args"]), ref, mode)})
            fresh = c["outs"]()
            named_f = c["named"](fresh)

            def direct():
                mod.launch(**named_f)
                return fresh if len(fresh) > 1 else fresh[0]
            checks.append({"kernel": name, "what": "generated launch()", "mode": mode or "default",
                           "result": _compile_check(torch, direct, ref, mode)})
    direct = _direct_checks(torch, kernels["axpb"])
    hand_us = rows[0]["host_us"]["hand_triton (axpb work)"]
    result = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
              "torch": torch.__version__, "rows": rows, "compile_checks": checks, "direct_checks": direct}
    if json_out:
        json_out.write_text(json.dumps(result, indent=1))
    print(f"host time per call (us), {result['device']}, {result['date']}; ratio vs the hand-written Triton "
          f"launch ({hand_us:.1f} us)")
    print(f"  {'kernel':8s} {'call':38s} {'median':>8s} {'ratio':>6s} {'fastest':>8s} {'ratio':>6s}")
    for r in rows:                          # each kernel's ratios against its own interleaved hand launch
        base = r["host_us"]["hand_triton (axpb work)"]
        base_min = r["host_us_min"]["hand_triton (axpb work)"]
        for what, us in r["host_us"].items():
            fast = r["host_us_min"][what]
            print(f"  {r['kernel']:8s} {what:38s} {us:8.1f} {us / base:5.2f}x {fast:8.1f} {fast / base_min:5.2f}x")
    print("direct launches (Triton's compiled kernel called by the launcher) against eager, by specialization")
    for c in direct:
        print(f"  axpb     {c['what']:44s} {c['result']}")
    print("torch.compile(fullgraph=True)")
    for c in checks:
        print(f"  {c['kernel']:8s} {c['what']:20s} {c['mode']:16s} {c['result']}")


def main(argv: list[str] | None = None) -> int:
    return two_step.main(argv, __doc__, prepare, run)


if __name__ == "__main__":
    sys.exit(main())
