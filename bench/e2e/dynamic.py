"""Compile once, run any shape: fusec dynamic artifacts against static ones.

For GPT-2 small and BERT-base (the models of e2e.py, same seeded weights):

  1. export to ONNX with dynamic axes (TorchScript exporter, opset 17, every
     input and the output "out" with dim 0 "batch" and dim 1 "seq"; cached in
     --work) and print the graph inputs' dims;
  2. compile one dynamic artifact (`fusec --target cuda --shape
     input_ids=1..BMAXx1..SMAX --precision bf16`; the other inputs share the
     symbols), timed alone, then one static artifact per shape, in parallel;
  3. per shape: bind the dynamic artifact (fusert_bind_shapes, outputs sized
     from fusert_output_info), check dynamic and static outputs against the
     PyTorch fp32 reference, time both (e2e.bench: L2 flush, CUDA events,
     median; CUDA graph on);
  4. time torch.compile(dynamic=True) of the SDPA bf16 model, one compiled
     callable for every shape (its first call per shape is timed apart), and
     torch.compile(dynamic=False) per shape unless --no-static-compile;
  5. print a table per model (target: fusec dynamic within 10% of static at
     every shape) and write --json.

Usage (repo root on the GPU machine; see bench/e2e/run_dynamic.sh):
  python3 bench/e2e/dynamic.py --fusec FUSEC --libfusert LIB [--models gpt2,bert]
      [--iters 50] [--work DIR] [--json PATH] [--no-static-compile] [--no-compile]
  python3 bench/e2e/dynamic.py --selftest     # table printing, no torch needed
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

# Imported in main() (not needed by --selftest).
torch = None
e2e = None

# Shapes (batch, seq) per model: the e2e shape first (the largest, so the
# dynamic artifact's arena reaches its size before any graph is captured),
# then a mid one, then one not a multiple of 8.
SHAPES = {"gpt2": [(8, 1024), (4, 512), (3, 77)],
          "bert": [(32, 128), (8, 384), (5, 45)]}
# Compiled ranges of the dynamic artifact: batch 1..B, seq 1..S (position
# tables: GPT-2 1024, BERT 512).
RANGES = {"gpt2": (8, 1024), "bert": (32, 512)}

T0 = time.time()


def log(msg):
    print("[%6.1f s] %s" % (time.time() - T0, msg), flush=True)


def shape_key(bs):
    return "%dx%d" % tuple(bs)


def parse_shapes(text):
    """'gpt2=8x1024,4x512;bert=32x128' -> {'gpt2': [(8, 1024), (4, 512)], ...}"""
    out = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        name, _, dims = part.partition("=")
        out[name.strip()] = [tuple(int(v) for v in d.strip().split("x")) for d in dims.split(",")
                             if d.strip()]
    return out


# ---------------------------------------------------------------------------
# ONNX inspection and fusec command lines


def onnx_dims(path):
    """{input name: [dim_param or dim_value, ...]} of the graph inputs, plus
    the outputs under '->name'; None when the onnx package is missing."""
    try:
        import onnx
    except ImportError:
        return None
    m = onnx.load(path, load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    out = {}

    def dims(vi):
        return [d.dim_param if d.dim_param else d.dim_value
                for d in vi.type.tensor_type.shape.dim]
    for vi in m.graph.input:
        if vi.name not in init:
            out[vi.name] = dims(vi)
    for vi in m.graph.output:
        out["->" + vi.name] = dims(vi)
    return out


def dynamic_shape_args(names, dims, bmax, smax, opt=None):
    """--shape arguments for the dynamic compile: the range on the first input
    (input_ids); another input gets its own only when it has a symbol the
    ranged inputs do not cover (the runtime then binds it from that input)."""
    maxes = [bmax, smax]
    args, covered = [], set()
    for i, n in enumerate(names):
        d = dims.get(n) if dims else None
        syms = [v for v in d if isinstance(v, str) and v] if d else []
        if i > 0 and (dims is None or all(s in covered for s in syms)):
            continue
        rank = len(d) if d else 2
        parts = []
        for j in range(rank):
            mx = maxes[j] if j < 2 else None
            if d and not isinstance(d[j], str):  # a static dim stays as exported
                parts.append(str(d[j]))
            elif mx is None:
                parts.append("1..4096")
            else:
                o = "@%d" % opt[j] if opt and j < len(opt) else ""
                parts.append("1..%d%s" % (mx, o))
        args += ["--shape", "%s=%s" % (n, "x".join(parts))]
        covered.update(syms)
    return args


def static_shape_args(names, b, s):
    args = []
    for n in names:
        args += ["--shape", "%s=%dx%d" % (n, b, s)]
    return args


def fusec_cmd(fusec, onnx_path, shape_args, prec, out):
    return [fusec, onnx_path, "--target", "cuda"] + shape_args + ["--precision", prec, "-o", out]


def last_line(path_or_text, limit=400):
    text = path_or_text
    if os.path.exists(path_or_text):
        with open(path_or_text, errors="replace") as f:
            text = f.read()
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return (lines[-1] if lines else "")[:limit]


def run_compiles(jobs, precision, max_parallel):
    """jobs: {key: (cmd_without_precision_fn, out, logpath)} where the first
    item is a function prec -> argv. Runs them in parallel (at most
    max_parallel at once), retries a failed bf16/fp16 one with fp32 (alone).
    Returns {key: {"precision", "s", "ok", "error", "notes", "parallel"}}."""
    res = {}
    pending = list(jobs.items())
    running = []
    while pending or running:
        while pending and len(running) < max_parallel:
            key, (argv_fn, out, logp) = pending.pop(0)
            f = open(logp, "w")
            t0 = time.time()
            p = subprocess.Popen(argv_fn(precision), stdout=f, stderr=subprocess.STDOUT)
            running.append((key, p, t0, f))
        time.sleep(0.2)
        still = []
        for key, p, t0, f in running:
            if p.poll() is None:
                still.append((key, p, t0, f))
                continue
            f.close()
            dt = time.time() - t0
            logp = jobs[key][2]
            if p.returncode == 0:
                res[key] = {"precision": precision, "s": dt, "ok": True, "notes": [],
                            "parallel": max_parallel > 1}
                log("  fusec %s: %.1f s (%s)" % (key, dt, precision))
            else:
                msg = last_line(logp)
                log("  fusec %s --precision %s FAILED (%.1f s): %s" % (key, precision, dt, msg))
                res[key] = {"precision": None, "s": dt, "ok": False,
                            "notes": ["--precision %s failed: %s" % (precision, msg[:300])],
                            "parallel": max_parallel > 1, "log": logp}
        running = still
    # fp32 fallback, one at a time, only where the failure looks like one of
    # the precision (a shape or operator refusal would fail again).
    if precision != "fp32":
        for key, r in res.items():
            if r["ok"]:
                continue
            if not re.search(r"bf16|fp16|bfloat|half|precision", r["notes"][0], re.I):
                r["notes"].append("no fp32 retry (the failure does not look like one of "
                                  "the precision)")
                continue
            argv_fn, out, logp = jobs[key]
            t0 = time.time()
            p = subprocess.run(argv_fn("fp32"), capture_output=True, text=True)
            dt = time.time() - t0
            if p.returncode == 0:
                r.update(precision="fp32", s=dt, ok=True, parallel=False)
                r["notes"].append("fell back to fp32")
                log("  fusec %s: fell back to fp32 (%.1f s)" % (key, dt))
            else:
                msg = last_line(p.stderr or p.stdout)
                r["notes"].append("--precision fp32 failed: %s" % msg[:300])
                log("  fusec %s --precision fp32 FAILED too: %s" % (key, msg))
    for r in res.values():
        if not r["ok"]:
            r["error"] = "; ".join(r["notes"])
    return res


# ---------------------------------------------------------------------------
# dynamic artifact through libfusert


class DynFusecModel:
    """A dynamic artifact: input/output tensors allocated per binding. Every
    shape gets its own context (tensors + ctypes arrays), kept alive until
    close(), so that no two bindings share device pointers."""

    def __init__(self, rt, artifact):
        self.rt = rt
        lib = rt.lib
        if not hasattr(lib, "fusert_bind_shapes"):
            raise RuntimeError("this libfusert has no fusert_bind_shapes")
        lib.fusert_bind_shapes.argtypes = [ctypes.c_void_p, ctypes.POINTER(e2e.FusertTensor),
                                           ctypes.c_size_t]
        self.handle = ctypes.c_void_p()
        rt.check(lib.fusert_load(artifact.encode(), ctypes.byref(self.handle)),
                 "fusert_load(%s)" % artifact)
        self.inputs = self._infos(True)    # dims -1 where a symbol decides
        self.outputs = self._infos(False)  # -1 until a binding
        self.ctx = {}
        self.cur = None

    def _infos(self, inputs):
        """[(name, torch dtype, dims)] of the inputs or outputs; -1 for a dim
        a symbol decides (outputs: until a binding): e2e.FusecModel's reader."""
        return e2e.FusecModel._infos(self, inputs)

    def _array(self, items, keep):
        inv = {v: k for k, v in e2e.FUSERT_DTYPES.items()}
        arr = (e2e.FusertTensor * len(items))()
        for i, (name, t) in enumerate(items):
            cs = (ctypes.c_int64 * t.dim())(*t.shape)
            cn = ctypes.c_char_p(name.encode())
            keep += [cs, cn]
            arr[i] = e2e.FusertTensor(cn, inv[t.dtype], t.dim(), cs, t.data_ptr())
        return arr

    def prepare(self, key, feeds):
        """Makes the context for `key`: input tensors from feeds (name ->
        CUDA tensor, converted to the artifact's dtypes), binds them, sizes
        the outputs from fusert_output_info."""
        missing = [n for n, _, _ in self.inputs if n not in feeds]
        if missing:
            raise RuntimeError("artifact wants inputs %s the model does not have" % missing)
        keep = []
        ins = [(n, feeds[n].to(dt).contiguous()) for n, dt, _ in self.inputs]
        c_in = self._array(ins, keep)
        self.rt.check(self.rt.lib.fusert_bind_shapes(self.handle, c_in, len(ins)),
                      "fusert_bind_shapes(%s)" % key)
        outs_info = self._infos(False)
        for n, _, s in outs_info:
            if any(d < 0 for d in s):
                raise RuntimeError("output %s still has dims %s after binding %s" % (n, s, key))
        outs = [(n, torch.empty(s, dtype=dt, device="cuda")) for n, dt, s in outs_info]
        c_out = self._array(outs, keep)
        self.ctx[key] = {"in": dict(ins), "out": dict(outs), "c_in": c_in, "c_out": c_out,
                         "n_in": len(ins), "n_out": len(outs), "keep": keep,
                         "out_shapes": {n: list(s) for n, _, s in outs_info}}
        self.cur = key
        return self.ctx[key]

    def use(self, key):
        """Rebinds `key` (cheap; fusert_run would bind it anyway)."""
        c = self.ctx[key]
        self.rt.check(self.rt.lib.fusert_bind_shapes(self.handle, c["c_in"], c["n_in"]),
                      "fusert_bind_shapes(%s)" % key)
        self.cur = key
        return c

    def graph(self, on):
        self.rt.check(self.rt.lib.fusert_enable_cuda_graph(self.handle, 1 if on else 0),
                      "fusert_enable_cuda_graph")

    def run(self):
        c = self.ctx[self.cur]
        s = torch.cuda.current_stream().cuda_stream
        st = self.rt.lib.fusert_run(self.handle, c["c_in"], c["n_in"], c["c_out"], c["n_out"],
                                    ctypes.c_void_p(s))
        if st != 0:
            self.rt.check(st, "fusert_run(%s)" % self.cur)

    def output(self):
        return list(self.ctx[self.cur]["out"].values())[0]

    def close(self):
        if self.handle:
            torch.cuda.synchronize()
            self.rt.lib.fusert_unload(self.handle)
            self.handle = ctypes.c_void_p()
        self.ctx = {}


# ---------------------------------------------------------------------------
# models and inputs


def make_inputs(name, b, s, vocab, seed, base):
    """Inputs for one shape, as make_case builds them (random ids; ones for
    GPT-2's mask; padding mask with lengths s/2..s and zero token types for
    BERT). The e2e shape reuses make_case's own inputs (`base`)."""
    if tuple(base["input_ids"].shape) == (b, s):
        return dict(base)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (b, s), generator=g)
    if name == "gpt2":
        return {"input_ids": ids, "attention_mask": torch.ones(b, s, dtype=torch.int64)}
    lengths = torch.randint(max(1, s // 2), s + 1, (b,), generator=g)
    mask = (torch.arange(s)[None, :] < lengths[:, None]).to(torch.int64)
    return {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": torch.zeros(b, s, dtype=torch.int64)}


def export_dynamic(model, names, inputs, path):
    t0 = time.time()
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes["out"] = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs[n] for n in names), path,
                          input_names=names, output_names=["out"], dynamic_axes=axes,
                          opset_version=17, dynamo=False, do_constant_folding=True)
    return time.time() - t0


def ort_check(path, names, feeds, want):
    """The exported graph on ONNX Runtime (CPU) at one shape against PyTorch
    fp32: tells an export that baked a shape apart from a fusec problem."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want_in = [i.name for i in sess.get_inputs()]
    got = sess.run(None, {n: feeds[n].numpy() for n in names if n in want_in})[0]
    got = torch.from_numpy(got)
    if got.shape != want.shape:
        return {"error": "ORT output shape %s, PyTorch %s" % (list(got.shape), list(want.shape))}
    return e2e.errors(got, want)


def numerics_ok(e, eb):
    """e2e's criterion: fusec's max abs error against fp32 within 4x PyTorch
    bf16's (plus 1e-3 of the output range)."""
    if not e or not eb:
        return None
    return bool(e["finite"] and e["max_abs"] <= 4 * eb["max_abs"] + 1e-3 * e["ref_max"])


def fit(got, want):
    if got.shape != want.shape and got.numel() == want.numel():
        got = got.reshape(want.shape)
    return got


def err_str(exc):
    return ("%s: %s" % (type(exc).__name__, exc))[:500]


def dynamo_graphs():
    try:
        return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    except Exception:
        return -1


# ---------------------------------------------------------------------------
# one model


def run_model(name, args, rt):
    res = {"model": name, "shapes": [], "errors": []}
    shapes = args.shapes_map.get(name, SHAPES[name])
    bmax, smax = RANGES[name]
    bmax = max([bmax] + [b for b, _ in shapes])
    smax = max([smax] + [s for _, s in shapes])
    res["range"] = {"batch": [1, bmax], "seq": [1, smax]}
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model_dyn.onnx")
    torch._dynamo.reset()

    # -- phase 1: models, inputs, export
    t_phase = time.time()
    build, base, _flops, out_attr = e2e.make_case(name)
    names = list(base)
    ref32 = build("eager")
    vocab = ref32.config.vocab_size
    feeds = {}
    for i, (b, s) in enumerate(shapes):
        feeds[(b, s)] = make_inputs(name, b, s, vocab, 1000 + 7919 * i + b * 131 + s, base)
    log("== %s: shapes %s, dynamic range batch 1..%d, seq 1..%d" % (
        name, ", ".join(shape_key(x) for x in shapes), bmax, smax))
    if not os.path.exists(onnx_path) or args.reexport:
        dt = export_dynamic(e2e.Wrap(ref32.to("cuda"), names, out_attr).eval(), names,
                            {n: v.cuda() for n, v in base.items()}, onnx_path)
        res["export_s"] = dt
        log("  exported %s (%.0f MB) in %.1f s" % (onnx_path, os.path.getsize(onnx_path) / 1e6, dt))
    else:
        log("  using cached %s (--reexport to redo)" % onnx_path)
    ref32 = ref32.to("cuda")
    dims = None
    try:
        dims = onnx_dims(onnx_path)
    except Exception as e:
        log("  could not read the ONNX dims: %s" % err_str(e))
    if dims is None:
        log("  (onnx package missing or unreadable: graph dims not checked)")
    else:
        res["onnx_dims"] = dims
        log("  ONNX graph dims: %s" % ", ".join("%s %s" % (n, d) for n, d in dims.items()))
        for n in names:
            d = dims.get(n)
            if d is None:
                log("  WARNING: input %s is not a graph input of the export" % n)
            elif d[:2] != ["batch", "seq"]:
                log("  WARNING: input %s has dims %s, not [batch, seq]" % (n, d))
    log("  phase export: %.1f s" % (time.time() - t_phase))

    # -- phase 2: fusec compiles: the dynamic one alone (timed), then the
    # static ones in parallel (started now, collected after the references)
    t_phase = time.time()
    dyn_art = os.path.join(work, "out_dyn")
    dyn_args = dynamic_shape_args(names, dims, bmax, smax,
                                  opt=shapes[0] if args.dyn_opt == "first" else None)
    res["dyn_cmd"] = " ".join(fusec_cmd(args.fusec, onnx_path, dyn_args, args.precision, dyn_art))
    log("  dynamic compile: %s" % res["dyn_cmd"])
    dyn = run_compiles({"dynamic": (lambda p: fusec_cmd(args.fusec, onnx_path, dyn_args, p,
                                                        dyn_art),
                                    dyn_art, os.path.join(work, "fusec_dyn.log"))},
                       args.precision, 1)["dynamic"]
    res["dyn_compile"] = dyn
    static_jobs = {}
    if not args.no_static:
        for b, s in shapes:
            k = shape_key((b, s))
            out = os.path.join(work, "out_%s" % k)
            sa = static_shape_args(names, b, s)
            static_jobs[k] = ((lambda sa, out: lambda p: fusec_cmd(args.fusec, onnx_path, sa, p,
                                                                   out))(sa, out),
                              out, os.path.join(work, "fusec_%s.log" % k))
    static_res = {}
    collector = None
    if static_jobs:
        import threading

        def collect():
            static_res.update(run_compiles(static_jobs, args.precision, args.jobs))
        collector = threading.Thread(target=collect)
        collector.start()
        log("  static compiles started (%d, up to %d at once)" % (len(static_jobs), args.jobs))

    # -- phase 3: references (fp32, TF32 off) and PyTorch bf16 SDPA errors
    t_ref = time.time()
    want = {}
    stream = torch.cuda.Stream()
    sdpa = None
    with torch.cuda.stream(stream), torch.no_grad():
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        for bs in shapes:
            try:
                gin = {n: v.cuda() for n, v in feeds[bs].items()}
                want[bs] = getattr(ref32(**gin), out_attr).float()
            except Exception as e:
                res["errors"].append("reference %s: %s" % (shape_key(bs), err_str(e)))
                log("  reference %s FAILED: %s" % (shape_key(bs), err_str(e)))
        torch.backends.cuda.matmul.allow_tf32 = prev
        torch.cuda.synchronize()
        if args.ort and want:
            small = min(want, key=lambda x: x[0] * x[1])
            try:
                e = ort_check(onnx_path, names, feeds[small], want[small].cpu())
                if e is None:
                    log("  (onnxruntime missing: export not checked on ORT)")
                else:
                    res["ort_err_%s" % shape_key(small)] = e
                    log("  ONNX Runtime (CPU) at %s vs PyTorch fp32: %s" % (
                        shape_key(small), e.get("error") or e2e.fmt_err(e)))
            except Exception as e:
                log("  ORT check failed: %s" % err_str(e))
        del ref32
        torch.cuda.empty_cache()
        err_bf16 = {}
        try:
            sdpa = build("sdpa").to("cuda", torch.bfloat16)
            for bs in shapes:
                if bs in want:
                    gin = {n: v.cuda() for n, v in feeds[bs].items()}
                    err_bf16[bs] = e2e.errors(getattr(sdpa(**gin), out_attr), want[bs])
        except Exception as e:
            res["errors"].append("torch bf16: %s" % err_str(e))
            log("  PyTorch bf16 SDPA FAILED: %s" % err_str(e))
    torch.cuda.synchronize()
    log("  references: %.1f s" % (time.time() - t_ref))
    if collector is not None:
        collector.join()
    res["static_compile"] = static_res
    log("  phase compile (dynamic alone + static in parallel, references overlapped): %.1f s" % (
        time.time() - t_phase))

    rows = {bs: {"shape": shape_key(bs), "errors": []} for bs in shapes}
    for bs in shapes:
        r = rows[bs]
        if bs in err_bf16:
            r["err_torch_bf16"] = err_bf16[bs]
        res["shapes"].append(r)

    # -- phase 4: fusec dynamic and static, per shape
    t_phase = time.time()
    with torch.cuda.stream(stream), torch.no_grad():
        dm = None
        if dyn["ok"]:
            try:
                dm = DynFusecModel(rt, dyn_art)
                log("  dynamic artifact inputs %s, outputs %s (before binding)" % (
                    [(n, s) for n, _, s in dm.inputs], [(n, s) for n, _, s in dm.outputs]))
                dm.graph(True)
                # Bind every shape first: the arena grows to its largest
                # before any CUDA graph is captured.
                for bs in shapes:
                    try:
                        c = dm.prepare(shape_key(bs), {n: v.cuda() for n, v in feeds[bs].items()})
                        rows[bs]["dyn_out_shape"] = c["out_shapes"]
                    except Exception as e:
                        rows[bs]["errors"].append("dynamic bind: " + err_str(e))
                        log("  dynamic bind %s FAILED: %s" % (shape_key(bs), err_str(e)))
            except Exception as e:
                res["errors"].append("dynamic load: " + err_str(e))
                log("  dynamic artifact load FAILED: %s" % err_str(e))
                traceback.print_exc()
                dm = None
        for bs in shapes:
            k = shape_key(bs)
            r = rows[bs]
            gin = {n: v.cuda() for n, v in feeds[bs].items()}
            # dynamic
            if dm is not None and k in dm.ctx:
                try:
                    dm.use(k)
                    dm.run()
                    torch.cuda.synchronize()
                    if bs in want:
                        r["err_dyn"] = e2e.errors(fit(dm.output(), want[bs]), want[bs])
                        r["numerics_dyn_ok"] = numerics_ok(r["err_dyn"], r.get("err_torch_bf16"))
                        log("  %s dynamic vs fp32: %s" % (k, e2e.fmt_err(r["err_dyn"])))
                    r["fusec_dyn"] = e2e.bench(dm.run, args.iters)
                    log("  %s fusec dynamic %.3f ms [p10 %.3f p90 %.3f]" % (
                        k, r["fusec_dyn"]["ms"], r["fusec_dyn"]["p10"], r["fusec_dyn"]["p90"]))
                except Exception as e:
                    r["errors"].append("fusec dynamic: " + err_str(e))
                    log("  %s fusec dynamic FAILED: %s" % (k, err_str(e)))
            # static
            sr = static_res.get(k)
            if sr and sr["ok"]:
                fm = None
                try:
                    fm = e2e.FusecModel(rt, static_jobs[k][1])
                    missing = set(fm.in_tensors) - set(gin)
                    if missing:
                        raise RuntimeError("artifact wants inputs %s the model does not have"
                                           % sorted(missing))
                    for n, v in gin.items():
                        if n in fm.in_tensors:
                            fm.set_input(n, v)
                    fm.graph(True)
                    fm.run()
                    torch.cuda.synchronize()
                    if bs in want:
                        got = list(fm.out_tensors.values())[0]
                        r["err_static"] = e2e.errors(fit(got, want[bs]), want[bs])
                        r["numerics_static_ok"] = numerics_ok(r["err_static"],
                                                              r.get("err_torch_bf16"))
                        log("  %s static  vs fp32: %s" % (k, e2e.fmt_err(r["err_static"])))
                    r["fusec_static"] = e2e.bench(fm.run, args.iters)
                    log("  %s fusec static  %.3f ms [p10 %.3f p90 %.3f]" % (
                        k, r["fusec_static"]["ms"], r["fusec_static"]["p10"],
                        r["fusec_static"]["p90"]))
                except Exception as e:
                    r["errors"].append("fusec static: " + err_str(e))
                    log("  %s fusec static FAILED: %s" % (k, err_str(e)))
                finally:
                    if fm is not None:
                        try:
                            fm.close()
                        except Exception:
                            pass
            elif sr:
                r["errors"].append("static compile: " + sr.get("error", "?"))
            if "fusec_dyn" in r and "fusec_static" in r:
                r["dyn_over_static"] = r["fusec_dyn"]["ms"] / r["fusec_static"]["ms"]
                log("  %s dynamic / static = %.3f%s" % (k, r["dyn_over_static"],
                                                        "" if r["dyn_over_static"] <= 1.10
                                                        else "  (over the 1.10 target)"))
        if dm is not None:
            dm.close()
    want.clear()
    torch.cuda.empty_cache()
    log("  phase fusec timing: %.1f s" % (time.time() - t_phase))

    # -- phase 5: torch.compile dynamic=True (one callable, every shape),
    # then dynamic=False per shape
    if not args.no_compile and sdpa is not None:
        t_phase = time.time()
        kw = {} if args.compile_mode == "default" else {"mode": args.compile_mode}
        with torch.cuda.stream(stream), torch.no_grad():
            torch._dynamo.reset()
            try:
                cm = torch.compile(sdpa, dynamic=True, **kw)
            except Exception as e:
                cm = None
                res["errors"].append("torch.compile dynamic: " + err_str(e))
            res["compile_dyn_first_s"] = {}
            for bs in shapes:
                if cm is None:
                    break
                k = shape_key(bs)
                r = rows[bs]
                gin = {n: v.cuda() for n, v in feeds[bs].items()}
                try:
                    g0 = dynamo_graphs()
                    t0 = time.time()
                    cm(**gin)
                    torch.cuda.synchronize()
                    r["compile_dyn_first_s"] = time.time() - t0
                    r["compile_dyn_new_graphs"] = dynamo_graphs() - g0 if g0 >= 0 else None
                    res["compile_dyn_first_s"][k] = r["compile_dyn_first_s"]
                    r["compile_dyn"] = e2e.bench(lambda: cm(**gin), args.iters)
                    log("  %s torch.compile dynamic=True %.3f ms (first call %.1f s, %s new "
                        "dynamo graphs)" % (k, r["compile_dyn"]["ms"], r["compile_dyn_first_s"],
                                            r["compile_dyn_new_graphs"]))
                    if "fusec_dyn" in r:
                        r["dyn_over_compile_dyn"] = r["fusec_dyn"]["ms"] / r["compile_dyn"]["ms"]
                except Exception as e:
                    r["errors"].append("torch.compile dynamic: " + err_str(e))
                    log("  %s torch.compile dynamic FAILED: %s" % (k, err_str(e)))
            del cm
            torch.cuda.empty_cache()
            log("  phase torch.compile dynamic: %.1f s" % (time.time() - t_phase))

            if not args.no_static_compile:
                t_phase = time.time()
                res["compile_static_first_s"] = {}
                for bs in shapes:
                    k = shape_key(bs)
                    r = rows[bs]
                    gin = {n: v.cuda() for n, v in feeds[bs].items()}
                    torch._dynamo.reset()
                    try:
                        cs = torch.compile(sdpa, dynamic=False, **kw)
                        t0 = time.time()
                        cs(**gin)
                        torch.cuda.synchronize()
                        r["compile_static_first_s"] = time.time() - t0
                        res["compile_static_first_s"][k] = r["compile_static_first_s"]
                        r["compile_static"] = e2e.bench(lambda: cs(**gin), args.iters)
                        log("  %s torch.compile static %.3f ms (compiled in %.1f s)" % (
                            k, r["compile_static"]["ms"], r["compile_static_first_s"]))
                        del cs
                    except Exception as e:
                        r["errors"].append("torch.compile static: " + err_str(e))
                        log("  %s torch.compile static FAILED: %s" % (k, err_str(e)))
                    torch.cuda.empty_cache()
                torch._dynamo.reset()
                log("  phase torch.compile static: %.1f s" % (time.time() - t_phase))
    del sdpa
    torch.cuda.empty_cache()
    return res


# ---------------------------------------------------------------------------
# report


def fnum(v, f="%.3f"):
    return f % v if isinstance(v, (int, float)) else "-"


def ms(r, k):
    v = r.get(k)
    return v.get("ms") if isinstance(v, dict) else None


def print_tables(results, args):
    print("\n== compile once, run any shape: forward ms (median of %d; same process, same "
          "stream, CUDA events, L2 flushed; fusec CUDA graph on; torch.compile mode=%s on the "
          "SDPA bf16 model)" % (args.iters, args.compile_mode), flush=True)
    all_ok = True
    for m in results:
        print("\n-- %s" % m["model"])
        if m.get("fatal"):
            print("   ERROR: %s" % m["fatal"])
            all_ok = False
            continue
        rng = m.get("range", {})
        dc = m.get("dyn_compile", {})
        print("   dynamic artifact: batch %s, seq %s, precision %s" % (
            "..".join(map(str, rng.get("batch", []))), "..".join(map(str, rng.get("seq", []))),
            dc.get("precision") or "FAILED"))
        hdr = "   %-8s %9s %9s %9s %10s %9s %10s %9s %9s %9s %5s" % (
            "shape", "dyn ms", "static ms", "dyn/stat", "comp-dyn", "dyn/cdyn", "comp-stat",
            "err dyn", "err stat", "err bf16", "num")
        print(hdr)
        for r in m["shapes"]:
            ratio = r.get("dyn_over_static")
            ok = ratio is not None and ratio <= 1.10
            all_ok = all_ok and ok
            nums = [r.get("numerics_dyn_ok"), r.get("numerics_static_ok")]
            num = "-" if all(v is None for v in nums) else (
                "PASS" if all(v is not False for v in nums) else "FAIL")
            if num == "FAIL":
                all_ok = False
            print("   %-8s %9s %9s %9s %10s %9s %10s %9s %9s %9s %5s" % (
                r["shape"], fnum(ms(r, "fusec_dyn")), fnum(ms(r, "fusec_static")),
                (fnum(ratio, "%.3f") + (" ok" if ok else " !!")) if ratio is not None else "-",
                fnum(ms(r, "compile_dyn")), fnum(r.get("dyn_over_compile_dyn"), "%.2f"),
                fnum(ms(r, "compile_static")),
                fnum((r.get("err_dyn") or {}).get("max_abs"), "%.3g"),
                fnum((r.get("err_static") or {}).get("max_abs"), "%.3g"),
                fnum((r.get("err_torch_bf16") or {}).get("max_abs"), "%.3g"), num))
            for e in r.get("errors", []):
                print("      ERROR %s: %s" % (r["shape"], e[:300]))
        sc = m.get("static_compile", {})
        print("   compile s: fusec dynamic %s%s; fusec static %s (in parallel, %s at once); "
              "torch.compile dynamic first call %s; static %s" % (
                  fnum(dc.get("s"), "%.1f"),
                  " (" + "; ".join(dc.get("notes", [])) + ")" if dc.get("notes") else "",
                  ", ".join("%s %s%s" % (k, fnum(v.get("s"), "%.1f"),
                                          "" if v.get("ok") else " FAILED")
                            for k, v in sc.items()) or "-", args.jobs,
                  ", ".join("%s %.1f" % kv for kv in m.get("compile_dyn_first_s", {}).items())
                  or "-",
                  ", ".join("%s %.1f" % kv for kv in m.get("compile_static_first_s", {}).items())
                  or "-"))
        for e in m.get("errors", []):
            print("   ERROR: %s" % e[:300])
    print("\ntarget: fusec dynamic within 10% of fusec static at every shape (dyn/stat <= 1.10);"
          " dyn/cdyn = fusec dynamic / torch.compile(dynamic=True); err = max abs error against "
          "PyTorch fp32 (TF32 off); num = PASS when both fusec errors are within 4x PyTorch "
          "bf16 SDPA's (err bf16) + 1e-3 of the output range")
    print("overall: %s" % ("all shapes within target" if all_ok else "NOT all within target "
                           "(or something failed)"), flush=True)
    return all_ok


def selftest(args):
    """Table printing and command building with made-up numbers; no torch."""
    fake_t = lambda v: {"ms": v, "p10": v * 0.98, "p90": v * 1.03, "n": args.iters}
    fake_e = lambda v: {"max_abs": v, "mean_abs": v / 20, "rel": v / 10, "ref_max": 10.0,
                        "finite": True}
    results = []
    for name in ("gpt2", "bert"):
        shapes = args.shapes_map.get(name, SHAPES[name])
        rows = []
        for i, bs in enumerate(shapes):
            d, s = 6.0 / (i + 1), 5.8 / (i + 1)
            r = {"shape": shape_key(bs), "errors": [], "fusec_dyn": fake_t(d),
                 "fusec_static": fake_t(s), "dyn_over_static": d / s,
                 "compile_dyn": fake_t(7.5 / (i + 1)), "dyn_over_compile_dyn": d / (7.5 / (i + 1)),
                 "err_dyn": fake_e(0.05), "err_static": fake_e(0.04),
                 "err_torch_bf16": fake_e(0.06), "numerics_dyn_ok": True,
                 "numerics_static_ok": True}
            if i == 2:
                r["errors"].append("torch.compile static: fake failure")
            else:
                r["compile_static"] = fake_t(7.0 / (i + 1))
            rows.append(r)
        results.append({"model": name, "range": {"batch": [1, RANGES[name][0]],
                                                 "seq": [1, RANGES[name][1]]},
                        "dyn_compile": {"precision": "bf16", "s": 14.2, "ok": True, "notes": []},
                        "static_compile": {r["shape"]: {"s": 11.0, "ok": True} for r in rows},
                        "compile_dyn_first_s": {r["shape"]: 30.0 for r in rows},
                        "shapes": rows, "errors": []})
    results.append({"model": "broken", "fatal": "RuntimeError: fake"})
    print_tables(results, args)
    dims = {"input_ids": ["batch", "seq"], "attention_mask": ["batch", "seq"],
            "token_type_ids": ["batch", "seq"]}
    names = list(dims)
    a = dynamic_shape_args(names, dims, 32, 512)
    assert a == ["--shape", "input_ids=1..32x1..512"], a
    a = dynamic_shape_args(names, None, 8, 1024, opt=(8, 1024))
    assert a == ["--shape", "input_ids=1..8@8x1..1024@1024"], a
    dims2 = dict(dims, attention_mask=["batch", "mask_seq"])
    a = dynamic_shape_args(names, dims2, 32, 512)
    assert a == ["--shape", "input_ids=1..32x1..512", "--shape", "attention_mask=1..32x1..512"], a
    assert static_shape_args(["a", "b"], 3, 77) == ["--shape", "a=3x77", "--shape", "b=3x77"]
    print("dynamic compile:", " ".join(fusec_cmd("fusec", "m.onnx", dynamic_shape_args(
        names, dims, 32, 512), "bf16", "OUT")))
    assert parse_shapes("gpt2=8x1024,3x77;bert=5x45") == {"gpt2": [(8, 1024), (3, 77)],
                                                          "bert": [(5, 45)]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "selftest": True}, f, indent=1)
    print("selftest ok")
    return 0


def main():
    global torch, e2e
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gpt2,bert")
    ap.add_argument("--work", default="/tmp/fusec-e2e-dyn")
    ap.add_argument("--fusec", default=os.path.join(ROOT, "build-gpu/bin/fusec"))
    ap.add_argument("--libfusert", default=os.path.join(ROOT, "build-gpu/lib/libfusert.so"))
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--shapes", default="",
                    help="override the shapes: 'gpt2=8x1024,4x512,3x77;bert=32x128,...'")
    ap.add_argument("--dyn-opt", default="none", choices=["none", "first"],
                    help="first: compile the dynamic artifact with @OPT = the first shape")
    ap.add_argument("--jobs", type=int, default=4, help="static fusec compiles at once")
    ap.add_argument("--compile-mode", default="default")
    ap.add_argument("--no-compile", action="store_true", help="no torch.compile at all")
    ap.add_argument("--no-static-compile", action="store_true",
                    help="no per-shape torch.compile(dynamic=False)")
    ap.add_argument("--no-static", action="store_true", help="no static fusec artifacts")
    ap.add_argument("--no-ort", dest="ort", action="store_false",
                    help="skip the ONNX Runtime check of the export")
    ap.add_argument("--reexport", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--selftest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.shapes_map = parse_shapes(args.shapes)
    if args.selftest:
        return selftest(args)

    import torch as _torch
    import e2e as _e2e
    import torch._dynamo  # noqa: F401  (reset between compiles)
    torch, e2e = _torch, _e2e
    os.makedirs(args.work, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    log("device: %s, torch %s, CUDA %s; fusec %s; libfusert %s" % (
        torch.cuda.get_device_name(), torch.__version__, torch.version.cuda, args.fusec,
        args.libfusert))
    rt = e2e.Fusert(args.libfusert)

    results = []
    for name in args.models.split(","):
        name = name.strip()
        if not name:
            continue
        if name not in SHAPES:
            results.append({"model": name, "fatal": "unknown model (gpt2, bert)"})
            continue
        t0 = time.time()
        try:
            results.append(run_model(name, args, rt))
        except Exception as e:  # report and go on with the next model
            traceback.print_exc()
            results.append({"model": name, "fatal": err_str(e)})
        log("== %s done in %.1f s" % (name, time.time() - t0))
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass

    ok = print_tables(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "iters": args.iters, "precision": args.precision,
                       "compile_mode": args.compile_mode, "results": results}, f, indent=1,
                      default=str)
        log("wrote %s" % args.json)
    log("total %.1f s" % (time.time() - T0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
