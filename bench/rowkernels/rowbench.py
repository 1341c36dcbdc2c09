#!/usr/bin/env python3
# ===- rowbench.py - Row-kernel micro-benchmark: fusec vs copy vs PyTorch -===#
#
# The three memory-bound chains of docs/PERF.md at tokens x hidden =
# 16384 x 4096, f32 and bf16:
#   ln       bias + exact GELU + residual + LayerNorm  (x, b, r, gamma, beta -> y)
#   rmsnorm  RMSNorm as LLaMA writes it, f32 statistics (x, w -> y)
#   softmax  scale (0.5) + softmax over rows           (x -> y)
#
#   rowbench.py gen --emit PATH/fusec-emit-cuda --out DIR [--row-threads N] [--big-only]
#       (build machine) writes the chains as text IR, runs fusec-emit-cuda on
#       each and stores DIR/<case>.cu plus DIR/<case>.json (steps, buffers,
#       shapes). Besides 16384 x 4096 it writes boundary cases (rows 3 with
#       row lengths 1, 7, 1000, 4096, 65536; one row of 1000) unless --big-only.
#   rowbench.py run --set NAME=DIR [--set NAME=DIR ...] [--no-compile]
#       (GPU machine: nvcc + PyTorch, nothing else) builds every DIR/*.cu with
#       nvcc -O3 -arch=sm_90 into a .so, runs each case's launchers through
#       ctypes, checks the outputs against PyTorch (f32 reference), checks the
#       scalar fallback with 2-byte-misaligned buffers, then times the big
#       cases with CUDA events (median of 100 after 10 warm-ups; every tensor
#       is 128-256 MB, more than the 60 MB L2) next to a device-to-device copy
#       and PyTorch eager / torch.compile of the same chain in the same run.
#
# Bytes counted: each input read once, each output written once.
# ===----------------------------------------------------------------------===#
import argparse
import concurrent.futures
import ctypes
import json
import os
import subprocess
import sys

BIG = (16384, 4096)
SMALL = [(3, 1), (3, 7), (3, 1000), (3, 4096), (3, 65536), (1, 1000)]
CHAINS = ["ln", "rmsnorm", "softmax"]
DTYPES = ["f32", "bf16"]


def ir_text(chain, dt, rows, n):
    t2 = f"{dt}[{rows},{n}]"
    t1 = f"{dt}[{n}]"
    if chain == "ln":
        return f"""graph @ln_chain(%x: {t2}, %b: {t1}, %r: {t2}, %g: {t1}, %be: {t1}) -> (%y) {{
  %a = "Add"(%x, %b) : {t2} loc("bias")
  %ge = "Gelu"(%a) {{approximate = "none"}} : {t2} loc("gelu")
  %h = "Add"(%ge, %r) : {t2} loc("residual")
  %y = "LayerNormalization"(%h, %g, %be) {{axis = -1, epsilon = 1.0e-5}} : {t2} loc("ln")
  return %y
}}
"""
    if chain == "rmsnorm":
        f2 = f"f32[{rows},{n}]"
        r1 = f"f32[{rows},1]"
        cast_in = (f'  %xf = "Cast"(%x) {{to = 1}} : {f2} loc("to_f32")\n' if dt != "f32" else "")
        xf = "%xf" if dt != "f32" else "%x"
        cast_out = (f'  %hb = "Cast"(%hn) {{to = 16}} : {t2} loc("to_bf16")\n' if dt != "f32" else "")
        hb = "%hb" if dt != "f32" else "%hn"
        return f"""graph @rmsnorm(%x: {t2}, %w: {t1}) -> (%y) {{
{cast_in}  %two = constant f32[] dense<[2.0]>
  %sq = "Pow"({xf}, %two) : {f2} loc("pow")
  %ax = constant i64[1] dense<[-1]>
  %var = "ReduceMean"(%sq, %ax) {{keepdims = 1}} : {r1} loc("mean")
  %eps = constant f32[] dense<[1.0e-6]>
  %ve = "Add"(%var, %eps) : {r1} loc("add_eps")
  %sd = "Sqrt"(%ve) : {r1} loc("sqrt")
  %rs = "Reciprocal"(%sd) : {r1} loc("rsqrt")
  %hn = "Mul"({xf}, %rs) : {f2} loc("normalize")
{cast_out}  %y = "Mul"(%w, {hb}) : {t2} loc("weight")
  return %y
}}
"""
    if chain == "softmax":
        return f"""graph @scale_softmax(%x: {t2}) -> (%y) {{
  %s = constant {dt}[] dense<[0.5]>
  %a = "Mul"(%x, %s) : {t2} loc("scale")
  %y = "Softmax"(%a) {{axis = -1}} : {t2} loc("softmax")
  return %y
}}
"""
    raise ValueError(chain)


def case_name(chain, dt, rows, n):
    return f"{chain}_{dt}_{rows}x{n}"


def cmd_gen(args):
    os.makedirs(args.out, exist_ok=True)
    shapes = [BIG] + ([] if args.big_only else SMALL)
    extra = [f"--row-threads={args.row_threads}"] if args.row_threads else []
    for chain in CHAINS:
        for dt in DTYPES:
            for rows, n in shapes:
                name = case_name(chain, dt, rows, n)
                ir_path = os.path.join(args.out, name + ".fir")
                with open(ir_path, "w") as f:
                    f.write(ir_text(chain, dt, rows, n))
                for flag, ext in (([], ".cu"), (["--manifest"], ".json")):
                    r = subprocess.run([args.emit] + extra + flag + [ir_path], capture_output=True, text=True)
                    if r.returncode != 0:
                        sys.exit(f"{name}: fusec-emit-cuda failed: {r.stderr}")
                    with open(os.path.join(args.out, name + ext), "w") as f:
                        f.write(r.stdout)
                m = json.load(open(os.path.join(args.out, name + ".json")))
                kernels = [s for s in m["steps"] if s["kind"] == "kernel"]
                if len(kernels) != len(m["steps"]):
                    sys.exit(f"{name}: library steps are not supported by this harness")
                print(f"{name}: {len(kernels)} kernel step(s)")


# ---------------------------------------------------------------- GPU side --

def torch_dtype(torch, dt):
    return {"f32": torch.float32, "bf16": torch.bfloat16, "i64": torch.int64}[dt]


def torch_chain(torch, chain):
    import torch.nn.functional as F
    if chain == "ln":
        def f(x, b, r, g, be):
            return F.layer_norm(F.gelu(x + b) + r, (x.shape[-1],), g, be, 1e-5)
    elif chain == "rmsnorm":
        def f(x, w):
            var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
            h = x.to(torch.float32) * torch.rsqrt(var + 1e-6)
            return w * h.to(x.dtype)
    else:
        def f(x):
            return torch.softmax(x * 0.5, dim=-1)
    return f


def bench(torch, fn, iters=100, warm=10):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        st[i].record()
        fn()
        en[i].record()
    torch.cuda.synchronize()
    ts = sorted(s.elapsed_time(e) for s, e in zip(st, en))
    return ts[len(ts) // 2], ts[0], ts[-1]


class Module:
    """One generated .cu built into a .so, with its manifest."""

    def __init__(self, so, manifest):
        self.lib = ctypes.CDLL(so)
        self.m = manifest
        self.fns = []
        for s in manifest["steps"]:
            fn = getattr(self.lib, s["symbol"])
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            self.fns.append(fn)

    def bind(self, torch, tensors, offset_elems=0):
        """Allocates every buffer the steps name (inputs from \\p tensors);
        offset_elems > 0 shifts every buffer by that many elements (alignment test)."""
        self.keep = {}
        for s in self.m["steps"]:
            for b in s["buffers"]:
                if b["name"] in self.keep:
                    continue
                dt = torch_dtype(torch, b["dtype"])
                numel = 1
                for d in b["shape"]:
                    numel *= d
                base = torch.full((numel + offset_elems,), float("nan"), dtype=dt, device="cuda")
                view = base[offset_elems:]
                if b["name"] in tensors:
                    view.copy_(tensors[b["name"]].reshape(-1))
                self.keep[b["name"]] = (base, view.view(b["shape"]) if b["shape"] else view)
        self.args = []
        for s in self.m["steps"]:
            ptrs = [self.keep[b["name"]][1].data_ptr() for b in s["buffers"]]
            self.args.append((ctypes.c_void_p * len(ptrs))(*ptrs))
        self.stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def __call__(self):
        for fn, a in zip(self.fns, self.args):
            rc = fn(a, self.stream)
            if rc != 0:
                raise RuntimeError(f"launcher returned {rc}")

    def output(self, name):
        return self.keep[name][1]


def make_inputs(torch, m):
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    out = {}
    for v in m["inputs"]:
        dt = torch_dtype(torch, v["dtype"])
        out[v["name"]] = torch.randn(v["shape"], generator=g, device="cuda", dtype=torch.float32).to(dt)
    return out


def build_all(dirs):
    jobs = []
    for d in dirs:
        for f in sorted(os.listdir(d)):
            if f.endswith(".cu"):
                cu = os.path.join(d, f)
                so = os.path.join(d, "lib" + f[:-3] + ".so")
                jobs.append((cu, so))

    def build(job):
        cu, so = job
        r = subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                            "-Xptxas", "-v", "-o", so, cu], capture_output=True, text=True)
        return cu, r.returncode, r.stderr

    logs = {}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4) as ex:
        for cu, rc, err in ex.map(build, jobs):
            if rc != 0:
                sys.exit(f"nvcc failed on {cu}:\n{err[-3000:]}")
            logs[cu] = err
    return logs


def ptxas_summary(log):
    """'<kernel>: R regs, S spill' for each kernel in an -Xptxas -v log."""
    out, cur = [], None
    for line in log.splitlines():
        if "Compiling entry function" in line:
            cur = line.split("'")[1]
        elif "Used" in line and "registers" in line and cur:
            regs = line.split("Used")[1].split("registers")[0].strip()
            out.append(f"{cur}={regs}r")
        elif "spill stores" in line and cur and not line.strip().startswith("0 bytes spill stores"):
            out.append(f"{cur}:SPILL[{line.strip()}]")
    return " ".join(out)


def cmd_run(args):
    import torch
    sets = []
    for s in args.set:
        name, d = s.split("=", 1)
        sets.append((name, d))
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    logs = build_all([d for _, d in sets])
    print(f"# built {len(logs)} modules with nvcc", flush=True)
    tol = {"f32": (1e-4, 1e-4), "bf16": (3e-2, 2e-2)}
    failures = 0
    results = {}  # (set, case) -> (ms median, min, max)
    for sname, d in sets:
        for f in sorted(os.listdir(d)):
            if not f.endswith(".json"):
                continue
            case = f[:-5]
            chain, dt, shape = case.split("_")
            rows, n = (int(x) for x in shape.split("x"))
            m = json.load(open(os.path.join(d, f)))
            mod = Module(os.path.join(d, "lib" + case + ".so"), m)
            ins = make_inputs(torch, m)
            ref_fn = torch_chain(torch, chain)
            ref = ref_fn(*[ins[v["name"]].float() for v in m["inputs"]])
            if chain == "rmsnorm" and dt == "bf16":
                ref = ref_fn(*[ins[v["name"]] for v in m["inputs"]]).float()
            offsets = [0] + ([1] if (rows, n) != BIG else [])
            for off in offsets:
                mod.bind(torch, ins, off)
                mod()
                torch.cuda.synchronize()
                got = mod.output(m["outputs"][0]["name"]).float()
                at, rt = tol[dt]
                ok = torch.allclose(got, ref, atol=at, rtol=rt)
                err = (got - ref).abs().max().item() if got.numel() else 0.0
                if not ok:
                    failures += 1
                tag = "" if off == 0 else " (misaligned by 1 element: scalar path)"
                if not ok or (rows, n) != BIG:
                    print(f"check {sname:8s} {case:24s} {'PASS' if ok else 'FAIL'} max|err|={err:.3g}{tag}", flush=True)
            if (rows, n) == BIG:
                mod.bind(torch, ins, 0)
                results[(sname, case)] = bench(torch, mod)
                print(f"check {sname:8s} {case:24s} {'PASS'} max|err|={err:.3g}; ptxas: "
                      f"{ptxas_summary(logs[os.path.join(d, case + '.cu')])}", flush=True)
            del mod
            torch.cuda.empty_cache()

    # Device-to-device copy in the same run: 256 MB read + 256 MB written.
    src = torch.randn(64 * 1024 * 1024, device="cuda")
    dst = torch.empty_like(src)
    cms = bench(torch, lambda: dst.copy_(src))[0]
    copy_tbs = 2 * src.numel() * 4 / (cms * 1e-3) / 1e12
    del src, dst
    print(f"\n# device-to-device copy: {copy_tbs:.2f} TB/s (median of 100, 512 MB moved)\n", flush=True)

    rows, n = BIG
    header = ["chain", "dtype"] + [f"{s} TB/s" for s, _ in sets] + ["eager", "compile"] + \
             [f"{sets[0][0]}/copy", f"{sets[0][0]}/compile"]
    table = []
    for chain in CHAINS:
        for dt in DTYPES:
            case = case_name(chain, dt, rows, n)
            tdt = torch_dtype(torch, dt)
            g = torch.Generator(device="cuda")
            g.manual_seed(1)
            x = torch.randn(rows, n, generator=g, device="cuda").to(tdt)
            vec = lambda: torch.randn(n, generator=g, device="cuda").to(tdt)
            if chain == "ln":
                targs = (x, vec(), torch.randn(rows, n, generator=g, device="cuda").to(tdt), vec(), vec())
                nbytes = 3 * rows * n * x.element_size() + 3 * n * x.element_size()
            elif chain == "rmsnorm":
                targs = (x, vec())
                nbytes = 2 * rows * n * x.element_size() + n * x.element_size()
            else:
                targs = (x,)
                nbytes = 2 * rows * n * x.element_size()
            tbs = lambda ms: nbytes / (ms * 1e-3) / 1e12
            row = [chain, dt]
            for sname, _ in sets:
                r = results.get((sname, case))
                row.append(f"{tbs(r[0]):.2f}" if r else "-")
            fn = torch_chain(torch, chain)
            eager = tbs(bench(torch, lambda: fn(*targs))[0])
            row.append(f"{eager:.2f}")
            comp = None
            if not args.no_compile:
                try:
                    cf = torch.compile(fn)
                    cf(*targs)
                    comp = tbs(bench(torch, lambda: cf(*targs))[0])
                except Exception as e:  # report, keep going
                    print(f"# torch.compile failed for {case}: {e}", flush=True)
            row.append(f"{comp:.2f}" if comp else "-")
            r0 = results.get((sets[0][0], case))
            row.append(f"{tbs(r0[0]) / copy_tbs:.0%}" if r0 else "-")
            row.append(f"{tbs(r0[0]) / comp:.2f}x" if (r0 and comp) else "-")
            table.append(row)
            print("# " + " | ".join(row), flush=True)
            del targs, x
            torch.cuda.empty_cache()
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in table:
        print("| " + " | ".join(row) + " |")
    print("\nmedian kernel time (ms) [min, max] per set:")
    for (sname, case), (med, lo, hi) in sorted(results.items()):
        print(f"  {sname:8s} {case:24s} {med * 1e3:8.1f} us [{lo * 1e3:.1f}, {hi * 1e3:.1f}]")
    print(f"\n{failures} correctness failure(s)")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--emit", required=True, help="path of the fusec-emit-cuda test tool")
    g.add_argument("--out", required=True)
    g.add_argument("--row-threads", type=int, default=0)
    g.add_argument("--big-only", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("--set", action="append", required=True, help="NAME=DIR of generated cases; the first is the one compared")
    r.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    sys.exit(cmd_gen(a) if a.cmd == "gen" else cmd_run(a))


if __name__ == "__main__":
    main()
