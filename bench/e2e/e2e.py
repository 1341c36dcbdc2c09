"""End-to-end benchmark of fusec against PyTorch, on the GPU machine.

Models (random seeded weights; --models picks, default gpt2,bert):
  gpt2        GPT-2 small (12 x 768, vocab 50257), batch 8 x 1024
  bert        BERT-base (12 x 768), batch 32 x 128, padding mask
  llama       a LLaMA-style decoder of about 1.1 B parameters (hidden 2048,
              16 layers, GQA 32 / 8 heads, RoPE, SwiGLU 8192, vocab 32000),
              prefill 1 x 2048 (llama-8x512: 8 x 512)
  resnet50    torchvision ResNet-50, 32 x 3 x 224 x 224
  effnet_b0   torchvision EfficientNet-B0, 32 x 3 x 224 x 224 (depthwise
              convolutions, squeeze-excite, SiLU)
The CNNs' BatchNorm statistics are randomised so that folding them is not
an identity; PyTorch runs them in channels_last (its fastest layout for
cuDNN in bf16), eager and torch.compile alike.

For each:

  1. export to ONNX (torch.onnx.export, TorchScript exporter, opset 17, fp32
     weights, static shapes);
  2. compile with `fusec model.onnx --shape ... --precision bf16 -o OUT`
     (timed, nvcc included); falls back to fp32 if bf16 is refused, and says so;
  3. load OUT with libfusert through ctypes (CUDA graph on) and check its
     output against PyTorch on the same input (fp32 reference, and PyTorch
     bf16 for scale);
  4. time, in this process on one stream with the same method for everyone
     (warm-up, then N runs each timed with CUDA events, 256 MiB L2 flush
     before each run, median and p10/p90): fusec, PyTorch eager (bf16, eager
     attention), eager with SDPA, torch.compile of the SDPA model (default
     mode unless --compile-mode);
  5. measure the ceilings in the same run (1 GiB device copy, cuBLAS bf16
     8192^3 GEMM) and print the table with ratio fusec/compile and the
     roofline floor;
  6. profile fusec per step (fusert_enable_profiling: events around each
     step, no CUDA graph) and print the slowest steps with achieved GB/s and
     TFLOP/s as fractions of the ceilings.

Usage (repo root, after scripts/gpu/stage.sh; see bench/e2e/run_e2e.sh):
  python3 bench/e2e/e2e.py [--models gpt2,bert] [--work DIR] [--iters N]
      [--precision bf16] [--compile-mode default] [--json PATH]
"""
import argparse
import copy
import ctypes
import json
import math
import os
import re
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# ---------------------------------------------------------------------------
# libfusert through ctypes

FUSERT_DTYPES = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16,
                 3: torch.float64, 4: torch.int64, 5: torch.int32,
                 6: torch.int8, 7: torch.uint8, 8: torch.bool}


class FusertTensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p)]


class Fusert:
    """Thin ctypes binding of runtime/include/fusert/fusert.h."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.fusert_last_error.restype = ctypes.c_char_p
        lib.fusert_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
        lib.fusert_unload.argtypes = [vp]
        lib.fusert_num_inputs.argtypes = [vp]
        lib.fusert_num_inputs.restype = sz
        lib.fusert_num_outputs.argtypes = [vp]
        lib.fusert_num_outputs.restype = sz
        info = [vp, sz, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]
        lib.fusert_input_info.argtypes = info
        lib.fusert_output_info.argtypes = info
        lib.fusert_run.argtypes = [vp, ctypes.POINTER(FusertTensor), sz,
                                   ctypes.POINTER(FusertTensor), sz, vp]
        lib.fusert_enable_cuda_graph.argtypes = [vp, ctypes.c_int]
        self.has_profile = hasattr(lib, "fusert_enable_profiling")
        if self.has_profile:
            lib.fusert_enable_profiling.argtypes = [vp, ctypes.c_int]
            lib.fusert_profile_report.argtypes = [vp, ctypes.c_char_p, sz,
                                                  ctypes.POINTER(sz)]

    def check(self, status, what):
        if status != 0:
            raise RuntimeError("%s failed (%d): %s" % (
                what, status, self.lib.fusert_last_error().decode(errors="replace")))


class FusecModel:
    """A loaded artifact with device tensors bound for every input/output."""

    def __init__(self, rt, artifact):
        self.rt = rt
        self.handle = ctypes.c_void_p()
        rt.check(rt.lib.fusert_load(artifact.encode(), ctypes.byref(self.handle)),
                 "fusert_load(%s)" % artifact)
        self.inputs = self._infos(True)
        self.outputs = self._infos(False)
        self.in_tensors = {n: torch.empty(s, dtype=d, device="cuda")
                           for n, d, s in self.inputs}
        self.out_tensors = {n: torch.empty(s, dtype=d, device="cuda")
                            for n, d, s in self.outputs}
        self._keep = []
        self.c_in = self._bind(self.inputs, self.in_tensors)
        self.c_out = self._bind(self.outputs, self.out_tensors)

    def _infos(self, inputs):
        lib = self.rt.lib
        n = (lib.fusert_num_inputs if inputs else lib.fusert_num_outputs)(self.handle)
        fn = lib.fusert_input_info if inputs else lib.fusert_output_info
        out = []
        for i in range(n):
            name, dt, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
            shape = ctypes.POINTER(ctypes.c_int64)()
            self.rt.check(fn(self.handle, i, ctypes.byref(name), ctypes.byref(dt),
                             ctypes.byref(rank), ctypes.byref(shape)), "info")
            out.append((name.value.decode(), FUSERT_DTYPES[dt.value],
                        [shape[j] for j in range(rank.value)]))
        return out

    def _bind(self, infos, tensors):
        arr = (FusertTensor * len(infos))()
        inv = {v: k for k, v in FUSERT_DTYPES.items()}
        for i, (name, dt, shape) in enumerate(infos):
            cs = (ctypes.c_int64 * len(shape))(*shape)
            cn = ctypes.c_char_p(name.encode())
            self._keep += [cs, cn]
            arr[i] = FusertTensor(cn, inv[dt], len(shape), cs, tensors[name].data_ptr())
        return arr

    def set_input(self, name, value):
        self.in_tensors[name].copy_(value.to(self.in_tensors[name].dtype))

    def graph(self, on):
        self.rt.check(self.rt.lib.fusert_enable_cuda_graph(self.handle, 1 if on else 0),
                      "fusert_enable_cuda_graph")

    def run(self):
        s = torch.cuda.current_stream().cuda_stream
        st = self.rt.lib.fusert_run(self.handle, self.c_in, len(self.inputs), self.c_out,
                                    len(self.outputs), ctypes.c_void_p(s))
        if st != 0:
            self.rt.check(st, "fusert_run")

    def profile(self, on):
        self.rt.check(self.rt.lib.fusert_enable_profiling(self.handle, 1 if on else 0),
                      "fusert_enable_profiling")

    def report(self):
        need = ctypes.c_size_t()
        lib = self.rt.lib
        self.rt.check(lib.fusert_profile_report(self.handle, None, 0, ctypes.byref(need)),
                      "fusert_profile_report")
        buf = ctypes.create_string_buffer(need.value)
        self.rt.check(lib.fusert_profile_report(self.handle, buf, need.value, None),
                      "fusert_profile_report")
        return json.loads(buf.value.decode(errors="replace"))

    def close(self):
        if self.handle:
            torch.cuda.synchronize()
            self.rt.lib.fusert_unload(self.handle)
            self.handle = ctypes.c_void_p()


# ---------------------------------------------------------------------------
# timing

_flush = None


def bench(fn, iters, warmup=10):
    """do_bench-style: warm-up, then `iters` runs on the current stream, each
    timed with CUDA events after zeroing 256 MiB (L2 flush). Returns ms
    (median, p10, p90)."""
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for s, e in ev:
        _flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) for s, e in ev)
    q = lambda f: t[min(len(t) - 1, int(f * len(t)))]
    return {"ms": q(0.5), "p10": q(0.1), "p90": q(0.9), "n": len(t)}


def ceilings(iters):
    a = torch.randn(1 << 29, device="cuda", dtype=torch.bfloat16)  # 1 GiB
    b = torch.empty_like(a)
    t = bench(lambda: b.copy_(a), iters)["ms"]
    copy_gbps = 2 * a.numel() * 2 / t / 1e6
    del a, b
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t = bench(lambda: x @ y, iters)["ms"]
    gemm_tflops = 2 * 8192 ** 3 / t / 1e9
    del x, y
    torch.cuda.empty_cache()
    return copy_gbps, gemm_tflops


# ---------------------------------------------------------------------------
# models


def randomize_bn(model):
    """Random BatchNorm running statistics and affine parameters (a folded
    BatchNorm is then not an identity)."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return model


class ChannelsLast(torch.nn.Module):
    """The peers' CNN: input and weights in channels_last."""

    def __init__(self, m):
        super().__init__()
        self.m = m.to(memory_format=torch.channels_last)

    def forward(self, x):
        return self.m(x.contiguous(memory_format=torch.channels_last))


def hf_build(cls, cfg, attn):
    """transformers model \p cls from \p cfg with attention implementation
    \p attn ("eager" or "sdpa"), seeded, in eval mode (older transformers
    take the implementation through the config only)."""
    torch.manual_seed(1)
    try:
        m = cls(cfg, attn_implementation=attn)
    except TypeError:
        c = copy.deepcopy(cfg)
        c._attn_implementation = attn
        m = cls(c)
    return m.eval()


def make_case(name):
    """Returns (build(attn) -> fp32 CPU module taking the inputs by name,
    inputs (CPU), analytic forward FLOPs, output attribute or None)."""
    torch.manual_seed(0)
    if name in ("resnet50", "effnet_b0"):
        import torchvision
        b = 32
        x = torch.randn(b, 3, 224, 224)
        # Multiply-accumulates per image at 224 x 224 (torchvision's model
        # cards): 4.09 G for ResNet-50, 0.39 G for EfficientNet-B0.
        macs = 4.09e9 if name == "resnet50" else 0.39e9

        def build_cnn(attn, peer=False):
            torch.manual_seed(1)
            ctor = torchvision.models.resnet50 if name == "resnet50" else torchvision.models.efficientnet_b0
            m = randomize_bn(ctor(weights=None)).eval()
            return ChannelsLast(m).eval() if peer else m

        return build_cnn, {"x": x}, 2 * macs * b, None
    if name.startswith("llama"):
        from transformers import LlamaConfig, LlamaForCausalLM
        b, s = (8, 512) if name == "llama-8x512" else (1, 2048)
        d, layers, heads, kv, ffn, vocab = 2048, 16, 32, 8, 8192, 32000
        cfg = LlamaConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=kv, intermediate_size=ffn, vocab_size=vocab,
                          max_position_embeddings=4096, use_cache=False, tie_word_embeddings=False)
        ids = torch.randint(0, vocab, (b, s))
        mask = torch.ones(b, s, dtype=torch.int64)
        inputs = {"input_ids": ids, "attention_mask": mask}
        kvd = d * kv // heads
        per_layer = 2 * b * s * (d * (d + 2 * kvd) + d * d + 3 * d * ffn) + 4 * b * s * s * d
        flops = layers * per_layer + 2 * b * s * d * vocab

        def build_llama(attn, peer=False):
            return hf_build(LlamaForCausalLM, cfg, attn)

        return build_llama, inputs, flops, "logits"
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    if name == "gpt2":
        b, s, d, layers, vocab = 8, 1024, 768, 12, 50257
        cfg = GPT2Config(n_layer=layers, n_embd=d, n_head=12, vocab_size=vocab,
                         n_positions=1024, use_cache=False)
        cls = GPT2LMHeadModel
        ids = torch.randint(0, vocab, (b, s))
        mask = torch.ones(b, s, dtype=torch.int64)
        inputs = {"input_ids": ids, "attention_mask": mask}
        flops = layers * (24 * b * s * d * d + 4 * b * s * s * d) + 2 * b * s * d * vocab
        out_attr = "logits"
    else:
        b, s, d, layers = 32, 128, 768, 12
        cfg = BertConfig()  # bert-base: 12 layers, 768 wide, 12 heads
        cls = BertModel
        ids = torch.randint(0, cfg.vocab_size, (b, s))
        lengths = torch.randint(s // 2, s + 1, (b,))
        mask = (torch.arange(s)[None, :] < lengths[:, None]).to(torch.int64)
        tt = torch.zeros(b, s, dtype=torch.int64)
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt}
        flops = layers * (24 * b * s * d * d + 4 * b * s * s * d)
        out_attr = "last_hidden_state"

    def build(attn, peer=False):
        return hf_build(cls, cfg, attn)

    return build, inputs, flops, out_attr


class Wrap(torch.nn.Module):
    """Positional inputs in, one tensor out (what the ONNX graph exposes)."""

    def __init__(self, m, names, out_attr):
        super().__init__()
        self.m, self.names, self.out_attr = m, names, out_attr

    def forward(self, *args):
        return pick(self.m(**dict(zip(self.names, args))), self.out_attr)


def pick(out, attr):
    """The output tensor: attribute \p attr of a HF output, or \p out itself."""
    return getattr(out, attr) if attr else out


def export(model, names, inputs, path):
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs[n] for n in names), path,
                          input_names=names, output_names=["out"],
                          opset_version=17, dynamo=False, do_constant_folding=True)
    return time.time() - t0


def compile_fusec(fusec, onnx_path, inputs, precision, out):
    cmd = [fusec, onnx_path]
    for n, v in inputs.items():
        cmd += ["--shape", "%s=%s" % (n, "x".join(str(d) for d in v.shape))]
    notes = []
    for prec in ([precision, "fp32"] if precision != "fp32" else ["fp32"]):
        full = cmd + ["--precision", prec, "-o", out]
        t0 = time.time()
        p = subprocess.run(full, capture_output=True, text=True)
        dt = time.time() - t0
        if p.returncode == 0:
            return prec, dt, notes
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        msg = msg[-1] if msg else "exit %d" % p.returncode
        print("  fusec --precision %s failed (%.1f s): %s" % (prec, dt, msg[:400]), flush=True)
        notes.append("--precision %s failed: %s" % (prec, msg[:200]))
    raise RuntimeError("fusec failed: " + "; ".join(notes))


def errors(got, ref):
    got, ref = got.float(), ref.float()
    d = (got - ref).abs()
    scale = ref.abs().max().item()
    return {"max_abs": d.max().item(), "mean_abs": d.mean().item(),
            "rel": d.max().item() / max(scale, 1e-30), "ref_max": scale,
            "finite": bool(torch.isfinite(got).all().item())}


def fmt_err(e):
    return "max abs %.3g, mean abs %.3g, max abs / max|ref| %.3g%s" % (
        e["max_abs"], e["mean_abs"], e["rel"], "" if e["finite"] else " (NON-FINITE)")


def run_case(name, args, rt, ceil):
    copy_gbps, gemm_tflops = ceil
    res = {"model": name}
    build, inputs, flops, out_attr = make_case(name)
    names = list(inputs)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    print("\n== %s: inputs %s" % (name, {n: list(v.shape) for n, v in inputs.items()}),
          flush=True)

    ref32 = build("eager")
    if not os.path.exists(onnx_path) or args.reexport:
        dt = export(Wrap(ref32.to("cuda"), names, out_attr).eval(), names,
                    {n: v.cuda() for n, v in inputs.items()}, onnx_path)
        print("  exported %s (%.0f MB) in %.1f s" % (
            onnx_path, os.path.getsize(onnx_path) / 1e6, dt), flush=True)
    ref32 = ref32.to("cuda")

    art = os.path.join(work, "out")
    prec, ctime, notes = compile_fusec(args.fusec, onnx_path, inputs, args.precision, art)
    res.update(precision=prec, compile_s=ctime, notes=notes)
    print("  fusec compile (--precision %s, nvcc included): %.1f s (target <= 20 s)%s" % (
        prec, ctime, "" if prec == args.precision else
        "  ** FELL BACK TO fp32: bf16 not available **"), flush=True)

    gin = {n: v.cuda() for n, v in inputs.items()}
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.no_grad():
        # Reference outputs.
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        want32 = pick(ref32(**gin), out_attr).float()
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
        del ref32
        eager = build("eager", peer=True).to("cuda", torch.bfloat16)
        gin_bf16 = {n: v.to(torch.bfloat16) if v.is_floating_point() else v for n, v in gin.items()}
        got_bf16 = pick(eager(**gin_bf16), out_attr)

        fm = FusecModel(rt, art)
        for n, v in gin.items():
            if n in fm.in_tensors:
                fm.set_input(n, v)
            else:
                print("  note: the artifact has no input '%s' (folded away?)" % n)
        missing = set(fm.in_tensors) - set(gin)
        if missing:
            raise RuntimeError("artifact wants inputs %s that the model does not have"
                               % sorted(missing))
        fm.graph(True)
        fm.run()
        torch.cuda.synchronize()
        got = list(fm.out_tensors.values())[0]
        if got.shape != want32.shape and got.numel() == want32.numel():
            got = got.reshape(want32.shape)
        res["err_fusec_vs_fp32"] = errors(got, want32)
        res["err_fusec_vs_torch_bf16"] = errors(got, got_bf16)
        res["err_torch_bf16_vs_fp32"] = errors(got_bf16, want32)
        print("  fusec (%s) vs PyTorch fp32:   %s" % (prec, fmt_err(res["err_fusec_vs_fp32"])))
        print("  fusec (%s) vs PyTorch bf16:   %s" % (prec, fmt_err(res["err_fusec_vs_torch_bf16"])))
        print("  PyTorch bf16 vs PyTorch fp32: %s" % fmt_err(res["err_torch_bf16_vs_fp32"]))
        # Pass if fusec's error against fp32 is within 4x PyTorch bf16's own
        # (plus a floor for fp32 artifacts, whose error is tiny).
        e, eb = res["err_fusec_vs_fp32"], res["err_torch_bf16_vs_fp32"]
        res["numerics_ok"] = e["finite"] and e["max_abs"] <= 4 * eb["max_abs"] + 1e-3 * e["ref_max"]
        print("  numerics: %s" % ("PASS" if res["numerics_ok"] else "FAIL"), flush=True)
        del want32, got_bf16

        # Timing: same method, same stream, same process.
        t = {}
        t["fusec"] = bench(fm.run, args.iters)
        print("  fusec (graph)   %.3f ms  [p10 %.3f p90 %.3f, n=%d]" % (
            t["fusec"]["ms"], t["fusec"]["p10"], t["fusec"]["p90"], t["fusec"]["n"]), flush=True)
        t["eager"] = bench(lambda: eager(**gin_bf16), args.iters)
        print("  eager (eager attn) %.3f ms" % t["eager"]["ms"], flush=True)
        del eager
        sdpa = build("sdpa", peer=True).to("cuda", torch.bfloat16)
        t["sdpa"] = bench(lambda: sdpa(**gin_bf16), args.iters)
        print("  eager (sdpa)    %.3f ms" % t["sdpa"]["ms"], flush=True)
        if not args.no_compile:
            kw = {} if args.compile_mode == "default" else {"mode": args.compile_mode}
            cm = torch.compile(sdpa, **kw)
            t0 = time.time()
            cm(**gin_bf16)
            torch.cuda.synchronize()
            res["torch_compile_s"] = time.time() - t0
            t["compile"] = bench(lambda: cm(**gin_bf16), args.iters)
            print("  torch.compile (%s, sdpa) %.3f ms (compiled in %.0f s)" % (
                args.compile_mode, t["compile"]["ms"], res["torch_compile_s"]), flush=True)
            del cm
        del sdpa
        torch.cuda.empty_cache()
        res["times"] = t
        res["flops"] = flops
        res["floor_ms"] = flops / (gemm_tflops * 1e12) * 1e3
        out_bytes = sum(v.numel() * v.element_size() for v in fm.out_tensors.values())
        res["out_bytes"] = out_bytes

        # Per-step profile.
        if rt.has_profile and not args.no_profile:
            fm.profile(True)
            for _ in range(3):
                fm.run()
            fm.profile(True)  # clears the warm-up samples
            for _ in range(args.profile_runs):
                fm.run()
            rep = fm.report()
            fm.profile(False)
            res["profile"] = summarize_profile(rep, copy_gbps, gemm_tflops, args.top)
            res["profile"]["graph_ms"] = t["fusec"]["ms"]
        fm.close()
    return res


def summarize_profile(rep, copy_gbps, gemm_tflops, top):
    steps = rep["steps"]
    for s in steps:
        us = s["median_us"]
        s["gbps"] = s["bytes"] / us / 1e3 if us > 0 else 0.0
        s["tflops"] = s["flops"] / us / 1e6 if us > 0 else 0.0
        s["bw_frac"] = s["gbps"] / copy_gbps
        s["gemm_frac"] = s["tflops"] / gemm_tflops if s["flops"] else 0.0
    by_kind = {}
    for s in steps:
        k = by_kind.setdefault(s["kind"], {"count": 0, "us": 0.0, "flops": 0.0, "bytes": 0})
        k["count"] += 1
        k["us"] += s["median_us"]
        k["flops"] += s["flops"]
        k["bytes"] += s["bytes"]
    slow = sorted(steps, key=lambda s: -s["median_us"])[:top]
    return {"runs": rep["runs"], "total_us": rep["total_us"], "steps": len(steps),
            "by_kind": by_kind, "slowest": slow}


def print_profile(name, p, copy_gbps, gemm_tflops):
    print("\n-- %s: per-step profile (%d runs, %d steps, sum of step medians %.3f ms, "
          "graph run %.3f ms; no CUDA graph while profiling)" % (
              name, p["runs"], p["steps"], p["total_us"] / 1e3, p["graph_ms"]))
    for k, v in sorted(p["by_kind"].items(), key=lambda kv: -kv[1]["us"]):
        extra = ""
        if v["flops"]:
            extra = ", %.0f TFLOP/s avg" % (v["flops"] / v["us"] / 1e6 if v["us"] else 0)
        print("   %-7s %4d steps %9.1f us (%4.1f%%)%s" % (
            k, v["count"], v["us"], 100 * v["us"] / max(p["total_us"], 1e-9), extra))
    print("   slowest %d (bandwidth vs %.0f GB/s copy, FLOP/s vs %.0f TFLOP/s cuBLAS bf16):"
          % (len(p["slowest"]), copy_gbps, gemm_tflops))
    print("   %-4s %-36s %-6s %9s %10s %8s %6s %8s %6s" % (
        "#", "step", "kind", "us", "MB", "GB/s", "%bw", "TFLOP/s", "%gemm"))
    for s in p["slowest"]:
        print("   %-4d %-36s %-6s %9.1f %10.2f %8.0f %5.0f%% %8s %6s" % (
            s["index"], s["name"][:36], s["kind"], s["median_us"], s["bytes"] / 1e6,
            s["gbps"], 100 * s["bw_frac"],
            "%.0f" % s["tflops"] if s["flops"] else "-",
            "%.0f%%" % (100 * s["gemm_frac"]) if s["flops"] else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gpt2,bert")
    ap.add_argument("--work", default="/tmp/fusec-e2e")
    ap.add_argument("--fusec", default=os.path.join(ROOT, "build-gpu/bin/fusec"))
    ap.add_argument("--libfusert", default=os.path.join(ROOT, "build-gpu/lib/libfusert.so"))
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode: default, max-autotune-no-cudagraphs, ...")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile-runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--reexport", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    print("device: %s, torch %s, CUDA %s" % (torch.cuda.get_device_name(), torch.__version__,
                                            torch.version.cuda), flush=True)
    rt = Fusert(args.libfusert)
    if not rt.has_profile:
        print("note: this libfusert has no fusert_enable_profiling; no per-step profile")
    ceil = ceilings(20)
    print("ceilings (this run): device copy %.0f GB/s (read + written, 1 GiB), "
          "cuBLAS bf16 8192^3 %.0f TFLOP/s" % ceil, flush=True)

    results = []
    for name in args.models.split(","):
        try:
            results.append(run_case(name.strip(), args, rt, ceil))
        except Exception as e:  # report and go on with the next model
            import traceback
            traceback.print_exc()
            results.append({"model": name, "error": str(e)[:500]})
        torch.cuda.empty_cache()

    print("\n== end to end, forward, ms (median; same process, same stream, CUDA events, "
          "L2 flushed; torch.compile mode=%s on the SDPA model)" % args.compile_mode)
    hdr = "%-6s %-5s %9s %9s %9s %9s %12s %9s %9s %8s" % (
        "model", "prec", "fusec", "eager", "sdpa", "compile", "fusec/comp", "floor",
        "compile_s", "numerics")
    print(hdr)
    for r in results:
        if "error" in r:
            print("%-6s ERROR: %s" % (r["model"], r["error"][:200]))
            continue
        t = r["times"]
        comp = t.get("compile", {}).get("ms")
        ratio = t["fusec"]["ms"] / comp if comp else float("nan")
        r["ratio_fusec_compile"] = ratio
        print("%-6s %-5s %9.3f %9.3f %9.3f %9s %12s %9.3f %9.1f %8s" % (
            r["model"], r["precision"], t["fusec"]["ms"], t["eager"]["ms"], t["sdpa"]["ms"],
            "%.3f" % comp if comp else "-", "%.2f%s" % (ratio, " ok" if ratio <= 0.85 else "")
            if comp else "-", r["floor_ms"], r["compile_s"],
            "PASS" if r["numerics_ok"] else "FAIL"))
    print("target: fusec/compile <= 0.85; compile <= 20 s (nvcc included); floor = analytic "
          "FLOPs / measured cuBLAS bf16 rate (%.0f TFLOP/s): %s" % (ceil[1], ", ".join(
              "%s %.2f TFLOP" % (r["model"], r["flops"] / 1e12) for r in results
              if "flops" in r)))
    for r in results:
        if r.get("precision") and r["precision"] != args.precision:
            print("NOTE: %s ran fusec in %s (requested %s was refused) against PyTorch bf16: "
                  "the ratio is not like for like." % (r["model"], r["precision"],
                                                       args.precision))
    for r in results:
        if "profile" in r:
            print_profile(r["model"], r["profile"], *ceil)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ceilings": {"copy_gbps": ceil[0], "gemm_tflops": ceil[1]},
                       "results": results}, f, indent=1)
    return 0 if all("error" not in r and r.get("numerics_ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
