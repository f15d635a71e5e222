"""Scratch A/B: the memory-bound picks with their segment-level loops run once (the form a single-trip unswitch
would give under `N <= tile`), so the row's loads are identical and the provider compiler may merge them."""
import json, re, sys, time
from pathlib import Path
sys.path.insert(0, "bench")
import perf, torch, triton.testing as tt

indir = Path(sys.argv[1])
man = json.loads((indir / "manifest.json").read_text())
LOOP = re.compile(r"^(        )for (_iv\d+) in range\(([^,]+), ([^,]+), ([^)]+)\):(.*)$")


def once(src):
    out, n = [], 0
    for ln in src.split("\n"):
        m = LOOP.match(ln)
        if m:
            ind, iv, lb = m.group(1), m.group(2), m.group(3)
            out.append(f"{ind}{iv} = {lb}")
            out.append(f"{ind}if True:{m.group(6)}")
            n += 1
        else:
            out.append(ln)
    return "\n".join(out), n


rows = []
for b in man["benches"]:
    if b["family"] != "memory":
        continue
    prog = next(p for p in man["programs"] if p["bench"] == b["name"] and p["variant"] == "pick" and p["status"] == "ready")
    case = next(c for c in b["cases"] if "default" in c["modes"])
    src = (indir / prog["module"]).read_text()
    text, n = once(src)
    vpath = indir / (Path(prog["module"]).stem + "__once.py")
    vpath.write_text(text)
    base = perf._load_module(indir / prog["module"], "_b_" + b["name"])
    var = perf._load_module(vpath, "_v_" + b["name"])
    g = torch.Generator(device="cuda"); g.manual_seed(3)
    ins = {p["name"]: torch.randn(perf.shape_of(p["dims"], case["sizes"]), generator=g, device="cuda").to(perf._torch_dtype(torch, p["dtype"])) for p in b["params"] if p["dims"] is not None}
    args = [ins[a["name"]] if a["view"] else case["scalars"][a["name"]] for a in prog["abi"]]
    out = ins[b["outputs"][0]]
    base.launch(*args); torch.cuda.synchronize(); ref = out.float().clone()
    out.fill_(float("nan")); var.launch(*args); torch.cuda.synchronize()
    err = float((out.float() - ref).norm() / ref.norm())
    (aname, afn), *_ = perf.anchors(torch, b["op"], b["causal"], False)
    inputs = {k: v for k, v in ins.items() if k not in b["outputs"]}
    afn(inputs, case["scalars"]); torch.cuda.synchronize()
    fns = {"anchor": lambda: afn(inputs, case["scalars"]), "base": lambda: base.launch(*args), "once": lambda: var.launch(*args)}
    ts = {k: [] for k in fns}
    for r in range(3):
        for k, f in fns.items():
            ts[k].append(tt.do_bench(f, warmup=25, rep=100, return_mode="median"))
    best = {k: min(v) for k, v in ts.items()}
    print(f"{b['name']:16s} loops {n}  rel vs base {err:.1e}  {aname} {best['anchor']:.4f}  base {best['base']:.4f} ({best['anchor']/best['base']:.3f}x)  once {best['once']:.4f} ({best['anchor']/best['once']:.3f}x)  once/base {best['base']/best['once']:.3f}x   rounds base {['%.4f'%x for x in ts['base']]} once {['%.4f'%x for x in ts['once']]}", flush=True)
