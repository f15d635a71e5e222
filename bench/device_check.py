"""Issue 5, "On the H200": every corpus kernel, both providers, against float64 references on a real GPU.

Two modes, two machines:

``python bench/device_check.py prepare OUTDIR [--opt-seconds S] [--precompile]`` (here, with intent_eqsat):
    for every ``examples/corpus/*.kir`` kernel, build the constructed program (``construct``) and, when the
    optimizer finishes within ``--opt-seconds``, the optimized one (``optimizer.optimize``); serialize each with the
    Triton and the cuTile serializers for sm90 and write the sources into ``OUTDIR/gen``; draw random inputs with
    ``kir.inputs.random_inputs`` (shape symbols mostly in 17..97) and compute the reference outputs with the KIR
    evaluator in float64 (``kir.evaluate(..., float64=True)``, the semantic oracle); save both as
    ``OUTDIR/data/<kernel>.npz`` and write ``OUTDIR/manifest.json`` (one entry per kernel x variant x provider,
    with the launcher's argument list, the output dtypes and tolerances, and why an entry cannot run).
    ``--precompile`` also compiles every cuTile source to an sm_90 cubin here through
    ``cuda.tile.compilation.export_kernel`` with the module's own ``kernel_signature()`` (a smoke test of the
    carried tileiras; needs tileiras on PATH here).

``python3 bench/device_check.py run OUTDIR`` (on the GPU machine: torch, triton, numpy, optionally cuda.tile; it
    never imports intent_eqsat): runs every entry in worker processes (one chain per provider x variant, in
    parallel; a worker that dies or poisons its CUDA context is replaced and the entry is recorded), loading each
    generated module from its file, moving the inputs to CUDA tensors, poisoning written outputs (NaN / a sentinel),
    calling ``launch``, synchronizing and comparing every output with the reference by relative L2 error (integers
    exactly; NaN never passes). A Triton entry that passes (and writes no inout view) is poisoned and launched
    again: that launch calls Triton's compiled kernel directly (the launcher's ``COMPILED`` cache) and must pass
    too (``second_launch`` in the results). Writes ``$OUT/device_check.json`` and ``$OUT/device_check.txt`` (or into OUTDIR
    without $OUT) and prints the table last.

``python3 bench/device_check.py report OUTDIR [RESULTS.json]``: print the table again from saved results.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: relative-L2 tolerance per output dtype (integers and bools: exact)
TOLERANCE = {"f64": 1e-10, "f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}
#: integer sentinel written into integer outputs before a launch (unwritten elements then fail)
INT_SENTINEL = -123456789
#: default symbol range and per-kernel overrides: kernels whose KIR reference is a large NumPy loop, 4-D data
#: (carry size), or 1-D kernels that deserve more elements than 97
SYMBOL_RANGE = (17, 97)
SIZE_OVERRIDES: dict[str, dict[str, object]] = {
    "attention": {"B": 2, "H": 2},
    "causal_attention": {"Z": 2, "H": 2},
    "batched_gemm": {"Bt": 3},
    "conv2d_3x3": {"N": 2, "C": 3, "F": 5, "H": (17, 45), "W": (17, 45)},
    "conv2d_strided": {"N": 2, "C": 3, "F": 4, "H": (17, 45), "W": (17, 45), "KH": 3, "KW": 2,
                       "OH": (9, 21), "OW": (9, 21)},
    "maxpool2d": {"N": 2, "C": 3, "OH": (9, 33), "OW": (9, 33)},
    "group_mean": {"G": 5, "CPG": 7},
    "histogram": {"N": 4099},
    "stencil3": {"N": 4099},
    "embedding_gather": {"V": (17, 97), "D": (17, 64)},
}
PROVIDERS = ("triton", "cutile")
#: where the run mode puts tensors: "cuda" on the GPU machine; DC_DEVICE=cpu with TRITON_INTERPRET=1 is a local
#: smoke test of this harness (Triton only)
DEVICE = os.environ.get("DC_DEVICE", "cuda")


def _sync(torch) -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()
VARIANTS = ("constructed", "optimized")


# ============================================================================================== prepare (here)

def _sizes(stem: str, symbols, rng) -> dict[str, int]:
    over = SIZE_OVERRIDES.get(stem, {})
    out = {}
    for s in symbols:
        v = over.get(s, SYMBOL_RANGE)
        out[s] = int(rng.integers(v[0], v[1] + 1)) if isinstance(v, tuple) else int(v)
    return out


def _abi(program, kernel_name: str) -> list[dict]:
    k = program.kernel(kernel_name)
    out = []
    for a in k.abi:
        if a.private:
            continue
        out.append({"name": a.name, "view": bool(a.is_view), "dtype": a.value.type.dtype,
                    "access": a.access if a.is_view else "scalar"})
    return out


def _optimize_with_timeout(program, seconds: float):
    """optimizer.optimize under SIGALRM; (result | None, seconds, why-not)."""
    import signal

    from intent_eqsat.optimizer import optimize

    class _Timeout(Exception):
        pass

    def _alarm(*_):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, _alarm)
    t0 = time.time()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        res = optimize(program, target="sm90")
        signal.setitimer(signal.ITIMER_REAL, 0)
        return res, time.time() - t0, None
    except _Timeout:
        return None, time.time() - t0, f"optimizer did not finish within {seconds:g} s"
    except Exception as e:                                       # recorded, not fatal
        signal.setitimer(signal.ITIMER_REAL, 0)
        return None, time.time() - t0, f"optimizer failed: {type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def prepare(outdir: Path, opt_seconds: float, precompile: bool, only: list[str] | None) -> None:
    import numpy as np

    from intent_eqsat import kir
    from intent_eqsat.construct import construct
    from intent_eqsat.kir.evaluate import evaluate
    from intent_eqsat.kir.inputs import random_inputs
    from intent_eqsat.kir.verify import check
    from intent_eqsat.providers.cutile.serialize import serialize as cutile_serialize
    from intent_eqsat.providers.errors import Unsupported
    from intent_eqsat.providers.triton.serializer import serialize as triton_serialize

    serializers = {"triton": triton_serialize, "cutile": cutile_serialize}
    gen, data = outdir / "gen", outdir / "data"
    gen.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    entries, kernels = [], []
    for path in sorted((ROOT / "examples" / "corpus").glob("*.kir")):
        stem = path.stem
        if only and stem not in only:
            continue
        km = kir.parse(path.read_text(), filename=str(path))
        facts = check(km)
        for kname, kf in facts.kernels.items():
            t0 = time.time()
            rng = np.random.default_rng(zlib.crc32(f"{stem}:{kname}".encode()))
            sizes = _sizes(stem, list(kf.symbols), rng)
            inputs = random_inputs(km, kname, rng, sizes=sizes)
            # by-value float scalars are rounded to their declared dtype so the GPU and the reference see one value
            kparams = {p.name: p for p in kf.kernel.params}
            for n, v in list(inputs.items()):
                if not kparams[n].is_view and isinstance(v, float) and kparams[n].dtype in ("f32", "f16", "bf16"):
                    inputs[n] = float(np.float32(v)) if kparams[n].dtype == "f32" else float(np.float16(v))
            ref = evaluate(km, kname, {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in inputs.items()},
                           float64=True)
            t_ref = time.time() - t0
            arrays, scalars, dtypes = {}, {}, {}
            for n, v in inputs.items():
                if isinstance(v, np.ndarray):
                    dtypes[n] = str(v.dtype)
                    arrays["in__" + n] = v.astype(np.float32) if str(v.dtype) == "bfloat16" else v
                else:
                    scalars[n] = v
            for n, v in ref.items():
                v = np.asarray(v)
                arrays["ref__" + n] = v.astype(np.float64) if v.dtype.kind == "f" or str(v.dtype) == "bfloat16" \
                    else v
            npz = data / f"{stem}__{kname}.npz"
            np.savez(npz, **arrays)
            kernels.append({"file": stem, "kernel": kname, "sizes": sizes, "scalars": scalars,
                            "input_dtypes": dtypes, "outputs": sorted(ref), "reference_seconds": round(t_ref, 3),
                            "data": str(npz.relative_to(outdir))})
            print(f"[prepare] {stem}:{kname} sizes={sizes} reference {t_ref:.2f}s", flush=True)

            programs = {"constructed": (construct(km, target="sm90"), None, None)}
            res, t_opt, why = _optimize_with_timeout(programs["constructed"][0], opt_seconds)
            if res is not None:
                programs["optimized"] = (res.program, getattr(res, "params", None) or None, round(t_opt, 2))
            else:
                programs["optimized"] = (None, None, why)
            print(f"[prepare]   optimize: {'%.1fs' % t_opt if res is not None else why}", flush=True)
            sources: dict[tuple[str, str], str] = {}
            for variant in VARIANTS:
                program, params, info = programs[variant]
                for provider in PROVIDERS:
                    e = {"id": f"{stem}.{kname}.{variant}.{provider}", "file": stem, "kernel": kname,
                         "variant": variant, "provider": provider, "data": str(npz.relative_to(outdir)),
                         "scalars": scalars, "outputs": {}, "status": "ready"}
                    if variant == "optimized":
                        e["optimize_seconds" if program is not None else "optimize_skipped"] = info
                    if program is None:
                        e["status"] = "skipped"
                        e["reason"] = f"no optimized program: {info}"
                        entries.append(e)
                        continue
                    gk = [k.name for k in program.kernels]
                    if gk != [kname]:
                        e["note"] = f"GPU program kernels {gk}"
                    kg = kname if kname in gk else gk[0]
                    e["gpu_kernel"] = kg
                    e["abi"] = _abi(program, kg)
                    for a in e["abi"]:
                        if a["view"] and a["access"] in ("write", "readwrite"):
                            e["outputs"][a["name"]] = {"dtype": a["dtype"], "tol": TOLERANCE.get(a["dtype"], 0.0)}
                    missing = [a["name"] for a in e["abi"] if a["name"] not in inputs]
                    if missing:
                        e["status"], e["reason"] = "harness", f"ABI arguments with no KIR input: {missing}"
                        entries.append(e)
                        continue
                    try:
                        src = serializers[provider](program, kg, "sm90", params)
                    except Unsupported as err:
                        e["status"] = "rejected"
                        e["reason"] = f"{type(err).__name__} ({err.kind}): {err.reason}"
                        entries.append(e)
                        continue
                    except Exception as err:                  # a serializer crash is a bug: recorded
                        e["status"] = "serialize_error"
                        e["reason"] = f"{type(err).__name__}: {str(err)[:500]}"
                        entries.append(e)
                        continue
                    src_path = gen / f"{stem}__{kname}__{variant}__{provider}.py"
                    src_path.write_text(src)
                    e["module"] = str(src_path.relative_to(outdir))
                    sources[(variant, provider)] = src
                    if variant == "optimized" and sources.get(("constructed", provider)) == src:
                        e["note"] = (e.get("note", "") + " same source as the constructed program").strip()
                    if precompile and provider == "cutile":
                        e["here_cubin"] = _precompile_cutile(src_path)
                    entries.append(e)
            print(f"[prepare]   " + ", ".join(f"{x['variant'][:5]}/{x['provider']}:{x['status']}"
                                              + (f"(cubin {x['here_cubin'][:40]})" if "here_cubin" in x else "")
                                              for x in entries if x["file"] == stem), flush=True)
    manifest = {"created": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "target": "sm90", "tolerance": TOLERANCE,
                "int_sentinel": INT_SENTINEL, "kernels": kernels, "entries": entries}
    (outdir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    n = {s: sum(1 for e in entries if e["status"] == s) for s in sorted({e["status"] for e in entries})}
    print(f"[prepare] {len(entries)} entries: {n}; manifest {outdir / 'manifest.json'}")


def _precompile_cutile(src_path: Path) -> str:
    """Compile a generated cuTile module to an sm_90 cubin here (its own kernel_signature()); 'ok N bytes' or the
    error."""
    import importlib.util
    import io
    try:
        from cuda.tile.compilation import export_kernel
        spec = importlib.util.spec_from_file_location(f"_dc_pre_{src_path.stem}", src_path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        buf = io.BytesIO()
        export_kernel(mod.KERNEL, [mod.kernel_signature()], buf, gpu_code="sm_90", output_format="cubin")
        return f"ok {len(buf.getvalue())} bytes"
    except Exception as err:
        return f"error {type(err).__name__}: {str(err)[:300]}"


# ============================================================================================== run (device)

def _torch_dtype(torch, dt: str):
    return {"i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
            "index": torch.int64, "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16,
            "f32": torch.float32, "f64": torch.float64}[dt]


def _fix_cuda_namespace() -> None:
    """cuda.tile carried under --target /tmp/site: make sure the ``cuda`` package found first (cuda-bindings'
    namespace there) also searches the carried copy."""
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        cand = os.path.join(entry, "cuda") if entry else ""
        if cand and os.path.isdir(os.path.join(cand, "tile")):
            try:
                import cuda
                if cand not in list(cuda.__path__):
                    cuda.__path__.append(cand)
            except Exception:
                pass


def _load_module(path: Path, name: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _compare(torch, np, got_t, ref: "np.ndarray", out: dict) -> dict:
    dt, tol = out["dtype"], out["tol"]
    if dt in ("f16", "bf16", "f32", "f64"):
        got = got_t.detach().to("cpu", torch.float64).numpy()
    else:
        got = got_t.detach().to("cpu").numpy()
    if got.shape != ref.shape:
        return {"pass": False, "error": f"shape {got.shape} vs reference {ref.shape}"}
    if dt not in TOLERANCE:                                   # integers / bools: exact
        bad = int((got.astype(np.int64) != ref.astype(np.int64)).sum())
        unwritten = int((got == INT_SENTINEL).sum()) if got.dtype.kind in "iu" else 0
        r = {"pass": bad == 0, "mismatches": bad, "numel": int(ref.size), "rel_l2": 0.0 if bad == 0 else None}
        if unwritten:
            r["unwritten"] = unwritten
        return r
    fin = np.isfinite(ref)
    nonfinite_bad = int((~fin & ~((got == ref) | (np.isnan(got) & np.isnan(ref)))).sum())
    g, w = got[fin], ref[fin]
    nan_count = int(np.isnan(g).sum())
    inf_count = int(np.isinf(g).sum())
    diff = float(np.linalg.norm(g - w)) if nan_count == 0 and inf_count == 0 else float("nan")
    norm = float(np.linalg.norm(w))
    rel = diff / norm if norm > 0 else diff
    ok = nan_count == 0 and inf_count == 0 and nonfinite_bad == 0 and rel == rel and rel <= tol
    r = {"pass": bool(ok), "rel_l2": rel, "tol": tol, "numel": int(ref.size)}
    if nan_count:
        r["nan"] = nan_count
    if inf_count:
        r["inf"] = inf_count
    if nonfinite_bad:
        r["nonfinite_mismatch"] = nonfinite_bad
    if not ok and nan_count == 0 and inf_count == 0:
        err = np.abs(g - w)
        i = int(np.argmax(err))
        r["max_abs_err"] = float(err[i])
        r["worst"] = {"got": float(g[i]), "want": float(w[i])}
    return r


def _run_entry(torch, np, outdir: Path, e: dict) -> dict:
    t0 = time.time()
    if e["provider"] == "cutile":
        _fix_cuda_namespace()
    mod = _load_module(outdir / e["module"], "_dc_" + e["id"].replace(".", "_"))
    t_load = time.time() - t0
    data = np.load(outdir / e["data"])
    args, outs = [], {}
    for a in e["abi"]:
        n = a["name"]
        if not a["view"]:
            v = e["scalars"][n]
            args.append(bool(v) if a["dtype"] == "i1" else (int(v) if a["dtype"][0] in "iu" or a["dtype"] == "index"
                                                             else float(v)))
            continue
        tdt = _torch_dtype(torch, a["dtype"])
        arr = data["in__" + n]
        t = torch.from_numpy(np.ascontiguousarray(arr)).to(device=DEVICE).to(tdt)
        if a["access"] == "write":                          # poison: unwritten elements fail
            _poison(torch, t)
        if a["access"] in ("write", "readwrite"):
            outs[n] = t
        args.append(t)
    _sync(torch)
    t1 = time.time()
    if e["provider"] == "triton":
        mod.launch(*args)
    else:
        mod.launch(torch.cuda.current_stream(), *args)
    _sync(torch)
    t_first = time.time() - t1
    results = {}
    for n, spec in e["outputs"].items():
        results[n] = _compare(torch, np, outs[n], data["ref__" + n], spec)
    ok = all(r["pass"] for r in results.values()) and bool(results)
    second = None
    inout = any(a["view"] and a["access"] == "readwrite" for a in e["abi"])
    if ok and e["provider"] == "triton" and not inout:
        # the second launch of the same arguments is a direct launch of Triton's compiled kernel (the launcher's
        # COMPILED cache, issue 24 item 2): it must give the same result
        for t in outs.values():
            _poison(torch, t)
        mod.launch(*args)
        _sync(torch)
        again = {n: _compare(torch, np, outs[n], data["ref__" + n], spec) for n, spec in e["outputs"].items()}
        kept = sum(len(v) for k, v in vars(mod).items() if k.endswith("COMPILED") and isinstance(v, dict))
        second = {"pass": all(r["pass"] for r in again.values()), "compiled_kernels_kept": kept}
        ok = second["pass"]
    rels = [r.get("rel_l2") for r in results.values()]
    worst = None if any(x is None or x != x for x in rels) else max(rels, default=0.0)
    return {"status": "pass" if ok else "FAIL", "outputs": results, "rel_l2": worst, "second_launch": second,
            "load_s": round(t_load, 3), "first_launch_s": round(t_first, 3)}


def _poison(torch, t) -> None:
    """Fill a written view with what no kernel writes (NaN, True, a sentinel): unwritten elements fail."""
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(INT_SENTINEL if t.dtype in (torch.int32, torch.int64) else -1)


def worker(outdir: Path, results_path: Path, ids: list[str]) -> int:
    import numpy as np
    import torch
    man = json.loads((outdir / "manifest.json").read_text())
    by_id = {e["id"]: e for e in man["entries"]}
    if DEVICE == "cuda":
        torch.cuda.init()
    with open(results_path, "a") as log:
        for i in ids:
            log.write(json.dumps({"id": i, "event": "start", "t": time.time()}) + "\n")
            log.flush()
            sticky = False
            try:
                res = _run_entry(torch, np, outdir, by_id[i])
            except BaseException as err:                    # noqa: BLE001 - every failure is a result
                tb = traceback.format_exc()
                res = {"status": "ERROR", "error": f"{type(err).__name__}: {str(err)[:1500]}",
                       "traceback": tb[-4000:]}
                try:
                    _sync(torch)
                except BaseException as err2:               # noqa: BLE001
                    sticky = True
                    res["cuda_context"] = f"poisoned: {type(err2).__name__}: {str(err2)[:300]}"
            log.write(json.dumps({"id": i, "event": "done", **res}, default=str) + "\n")
            log.flush()
            print(f"[worker] {i}: {res['status']} {res.get('rel_l2', '')} {res.get('error', '')[:200]}",
                  flush=True)
            if sticky:
                return 3
    return 0


def _read_results(path: Path) -> tuple[dict, set]:
    done, started = {}, set()
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r["event"] == "start":
                started.add(r["id"])
            else:
                done[r["id"]] = r
    return done, started


def _supervise(outdir: Path, shard: str, ids: list[str], results_path: Path, deadline: float,
               entry_timeout: float) -> None:
    import subprocess
    errlog = results_path.with_suffix(".stderr")
    while True:
        done, started = _read_results(results_path)
        pending = [i for i in ids if i not in done]
        if not pending:
            return
        if time.time() > deadline:
            with open(results_path, "a") as log:
                for i in pending:
                    log.write(json.dumps({"id": i, "event": "done", "status": "NOT RUN",
                                          "error": "device-time deadline reached"}) + "\n")
            return
        with open(errlog, "a") as err:
            proc = subprocess.Popen([sys.executable, __file__, "_worker", str(outdir), str(results_path),
                                     ",".join(pending)], stdout=err, stderr=subprocess.STDOUT)
            last_n, last_t = -1, time.time()
            killed = None
            while proc.poll() is None:
                time.sleep(0.5)
                d, s = _read_results(results_path)
                n = len(d) + len(s)
                if n != last_n:
                    last_n, last_t = n, time.time()
                elif time.time() - last_t > entry_timeout or time.time() > deadline + 30:
                    proc.kill()
                    killed = "timeout" if time.time() <= deadline + 30 else "deadline"
                    proc.wait()
            rc = proc.returncode
        done, started = _read_results(results_path)
        hung = [i for i in pending if i in started and i not in done]
        if hung:
            tail = errlog.read_text()[-3000:] if errlog.exists() else ""
            with open(results_path, "a") as log:
                for i in hung:
                    what = (f"killed after {entry_timeout:g} s without progress" if killed == "timeout" else
                            "killed at the deadline" if killed else f"worker died (exit code {rc})")
                    log.write(json.dumps({"id": i, "event": "done", "status": "ERROR", "error": what,
                                          "worker_log_tail": tail}) + "\n")
        print(f"[supervise] {shard}: worker exit {rc}{' (' + killed + ')' if killed else ''}", flush=True)


def _environment() -> dict:
    import platform
    import subprocess
    env = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    try:
        import torch
        env.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
                   device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)))
    except Exception as err:                                   # noqa: BLE001
        env["torch"] = f"unavailable: {err}"
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception as err:                                   # noqa: BLE001
        env["triton"] = f"unavailable: {err}"
    try:
        _fix_cuda_namespace()
        import cuda.tile as ct
        env["cuda_tile"] = getattr(ct, "__version__", "?")
    except Exception as err:                                   # noqa: BLE001
        env["cuda_tile"] = f"unavailable: {type(err).__name__}: {err}"
    for tool, args in (("tileiras", ["--version"]), ("ptxas", ["--version"]), ("nvidia-smi", [
            "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])):
        try:
            out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=30)
            env[tool] = " | ".join(x.strip() for x in out.stdout.strip().splitlines()[-2:])
        except Exception as err:                               # noqa: BLE001
            env[tool] = f"unavailable: {err}"
    return env


def run(outdir: Path, budget: float, entry_timeout: float, providers: list[str]) -> int:
    import threading
    t0 = time.time()
    man = json.loads((outdir / "manifest.json").read_text())
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else outdir
    res_dir = outdir / "results"
    res_dir.mkdir(exist_ok=True)
    env = _environment()
    print(f"[run] environment: {json.dumps(env)}", flush=True)
    shards = {}
    for e in man["entries"]:
        if e["status"] == "ready" and e["provider"] in providers:
            shards.setdefault(f"{e['provider']}-{e['variant']}", []).append(e["id"])
    deadline = t0 + budget
    threads = []
    for shard, ids in shards.items():
        p = res_dir / f"{shard}.jsonl"
        if p.exists():
            p.unlink()
        th = threading.Thread(target=_supervise, args=(outdir, shard, ids, p, deadline, entry_timeout))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    results = {}
    for shard in shards:
        d, _ = _read_results(res_dir / f"{shard}.jsonl")
        results.update(d)
    rows = []
    for e in man["entries"]:
        r = results.get(e["id"])
        if e["status"] != "ready":
            status = {"skipped": "SKIP", "rejected": "REJECTED"}.get(e["status"], e["status"].upper())
            rows.append({**_row_key(e), "status": status, "rel_l2": None, "detail": e.get("reason", "")})
        elif e["provider"] not in providers:
            rows.append({**_row_key(e), "status": "NOT RUN", "rel_l2": None, "detail": "provider not selected"})
        else:
            detail = r.get("error", "") if r else "no result"
            if r and r.get("status") == "FAIL":
                detail = "; ".join(f"{n}: " + ", ".join(f"{k}={v}" for k, v in o.items() if k != "pass")
                                   for n, o in r["outputs"].items() if not o["pass"])
            rows.append({**_row_key(e), "status": r["status"] if r else "NOT RUN",
                         "rel_l2": r.get("rel_l2") if r else None, "detail": detail,
                         "first_launch_s": r.get("first_launch_s") if r else None})
    summary = {}
    for row in rows:
        summary[row["status"]] = summary.get(row["status"], 0) + 1
    doc = {"environment": env, "wall_seconds": round(time.time() - t0, 1), "summary": summary, "rows": rows,
           "results": results, "manifest_created": man.get("created")}
    (out_dir / "device_check.json").write_text(json.dumps(doc, indent=1, default=str))
    table = format_table(rows, summary, env)
    (out_dir / "device_check.txt").write_text(table)
    print(table, flush=True)
    return 0


def _row_key(e: dict) -> dict:
    return {"kernel": f"{e['file']}" + (f":{e['kernel']}" if e["kernel"] != e["file"] else ""),
            "variant": e["variant"], "provider": e["provider"]}


def format_table(rows: list[dict], summary: dict, env: dict) -> str:
    lines = [f"device: {env.get('device')}  torch {env.get('torch')}  triton {env.get('triton')}  "
             f"cuda.tile {env.get('cuda_tile')}  python {env.get('python')}",
             f"summary: {summary}", ""]
    w = max(len(r["kernel"]) for r in rows)
    lines.append(f"{'kernel':<{w}}  {'variant':<11}  {'provider':<8}  {'status':<9}  {'rel_l2':>9}  detail")
    for r in rows:
        rel = r["rel_l2"]
        rel_s = "-" if rel is None else ("nan" if rel != rel else f"{rel:.2e}")
        detail = (r.get("detail") or "").replace("\n", " ")[:150]
        lines.append(f"{r['kernel']:<{w}}  {r['variant']:<11}  {r['provider']:<8}  {r['status']:<9}  {rel_s:>9}  "
                     f"{detail}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("outdir", type=Path)
    p.add_argument("--opt-seconds", type=float, default=20.0)
    p.add_argument("--precompile", action="store_true")
    p.add_argument("--only", default="")
    r = sub.add_parser("run")
    r.add_argument("outdir", type=Path)
    r.add_argument("--budget", type=float, default=450.0, help="seconds after which no new entry starts")
    r.add_argument("--entry-timeout", type=float, default=150.0)
    r.add_argument("--providers", default="triton,cutile")
    w = sub.add_parser("_worker")
    w.add_argument("outdir", type=Path)
    w.add_argument("results", type=Path)
    w.add_argument("ids")
    rep = sub.add_parser("report")
    rep.add_argument("json", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        prepare(a.outdir, a.opt_seconds, a.precompile, [x for x in a.only.split(",") if x])
        return 0
    if a.cmd == "run":
        return run(a.outdir, a.budget, a.entry_timeout, a.providers.split(","))
    if a.cmd == "_worker":
        return worker(a.outdir, a.results, a.ids.split(","))
    doc = json.loads(a.json.read_text())
    print(format_table(doc["rows"], doc["summary"], doc["environment"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
