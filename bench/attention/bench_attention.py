#!/usr/bin/env python3
"""bench_attention.py - fusec's generated attention kernels vs PyTorch on one GPU.

Usage: bench_attention.py KERNEL_DIR [--reps N] [--no-flex]

KERNEL_DIR holds what fusec-emit-attention wrote (manifest.tsv, *.cu) and,
optionally, prebuilt lib<symbol>.so files (otherwise nvcc builds them here,
-arch=sm_90a). For each variant (B=4, H=16, S=4096, D=128 bf16: plain, causal,
ALiBi+causal, soft-cap 30, sliding window 256; plus D=64 and S=1024 plain)
it checks fusec's output against a PyTorch reference, then times fusec
(every tile candidate in the manifest), SDPA (cuDNN and flash backends, or
SDPA with a materialised mask), FlexAttention (torch.compile) and the eager
form with CUDA events (warm-up, median of N reps), and prints TFLOP/s and
fusec's ratio to each peer. TFLOP/s counts 4*B*H*S^2*D, halved for causal,
and only the computed band for the sliding window.
"""
import argparse
import ctypes
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, reps, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def flops(variant, b, h, s, d):
    full = 4.0 * b * h * s * s * d
    if variant in ("causal", "alibi_causal"):
        return full / 2
    if variant == "window":
        keys = sum(min(i + 1, 256) for i in range(s))
        return 4.0 * b * h * keys * d
    return full


def slopes(h):
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], device="cuda", dtype=torch.float32)


def dense_bias(variant, h, s):
    """Float bias [1,H,S,S] (-inf where masked) for SDPA / eager, or None."""
    i = torch.arange(s, device="cuda")
    rel = (i[None, :] - i[:, None]).float()  # k - q
    if variant == "alibi_causal":
        bias = slopes(h)[:, None, None] * rel[None]
        return bias.masked_fill(rel[None] > 0, float("-inf"))[None]
    if variant == "window":
        keep = (rel <= 0) & (-rel < 256)
        return torch.zeros(s, s, device="cuda").masked_fill(~keep, float("-inf"))[None, None]
    if variant == "causal":
        return torch.zeros(s, s, device="cuda").masked_fill(rel > 0, float("-inf"))[None, None]
    return None


def eager(q, k, v, variant, scale, bias):
    sc = torch.matmul(q, k.transpose(-1, -2)) * scale
    if variant == "softcap":
        sc = 30.0 * torch.tanh(sc / 30.0)
    if bias is not None:
        sc = sc + bias.to(sc.dtype)
    return torch.matmul(torch.softmax(sc.float(), dim=-1).to(q.dtype), v)


def reference(q, k, v, variant, scale, bias):
    if variant == "plain":
        return F.scaled_dot_product_attention(q, k, v, scale=scale)
    if variant == "causal":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    if variant == "softcap":
        sc = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
        return torch.matmul(torch.softmax(30.0 * torch.tanh(sc / 30.0), -1), v.float()).to(q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype), scale=scale)


def flex_fn(variant, b, h, s):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    flex = torch.compile(flex_attention, dynamic=False)
    sl = slopes(h)
    score_mod, mask_mod = None, None
    if variant == "causal":
        mask_mod = lambda b_, h_, q_, k_: q_ >= k_
    elif variant == "alibi_causal":
        mask_mod = lambda b_, h_, q_, k_: q_ >= k_
        score_mod = lambda sc, b_, h_, q_, k_: sc + sl[h_] * (k_ - q_)
    elif variant == "softcap":
        score_mod = lambda sc, b_, h_, q_, k_: 30.0 * torch.tanh(sc / 30.0)
    elif variant == "window":
        mask_mod = lambda b_, h_, q_, k_: (q_ >= k_) & (q_ - k_ < 256)
    bm = create_block_mask(mask_mod, None, None, s, s, device="cuda") if mask_mod else None
    return lambda q, k, v, scale: flex(q, k, v, score_mod=score_mod, block_mask=bm, scale=scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--no-flex", action="store_true")
    args = ap.parse_args()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(args.kernels, "manifest.tsv")) if l.strip()]
    groups = {}
    for r in rows:
        groups.setdefault(r[0], []).append(r)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    summary = []
    for name, entries in groups.items():
        _, _, _, b, h, s, d, variant, _ = entries[0]
        b, h, s, d = int(b), int(h), int(s), int(d)
        torch.manual_seed(0)
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        scale = 1.0 / math.sqrt(d)
        bias = dense_bias(variant, h, s)
        fl = flops(variant, b, h, s, d)
        ref = reference(q, k, v, variant, scale, bias).float()
        print(f"\n== {name}: B={b} H={h} S={s} D={d} bf16, {fl / 1e12:.3f} TFLOP counted")
        best = None
        for e in entries:
            sym, tile = e[1], e[8]
            so = os.path.join(args.kernels, f"lib{sym}.so")
            if not os.path.exists(so):
                subprocess.check_call(["nvcc", "-std=c++17", "-O3", "-arch=sm_90a", "-DFUSEC_ATTN_REQUIRE_TMA", "-shared", "-Xcompiler", "-fPIC",
                                       "-o", so, os.path.join(args.kernels, e[2])])
            lib = ctypes.CDLL(so)
            fn = getattr(lib, sym)
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            o = torch.full_like(q, float("nan"))
            ptrs = (ctypes.c_void_p * 4)(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr())
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            call = lambda: fn(ptrs, stream)
            rc = call()
            torch.cuda.synchronize()
            err = (o.float() - ref).abs().max().item()
            ok = rc == 0 and err < 3e-2
            med, lo, hi = median_ms(call, args.reps)
            tf = fl / med / 1e9
            print(f"  fusec[{tile:<24}] {'OK ' if ok else 'BAD'} maxerr {err:.2e}  {med:8.3f} ms "
                  f"[{lo:.3f}-{hi:.3f}]  {tf:7.1f} TFLOP/s")
            if ok and (best is None or tf > best[0]):
                best = (tf, tile)
        peers = {}
        if variant in ("plain", "causal"):
            for be, label in ((SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn"), (SDPBackend.FLASH_ATTENTION, "sdpa_flash")):
                try:
                    with sdpa_kernel([be]):
                        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=variant == "causal", scale=scale)
                        f()
                        peers[label] = fl / median_ms(f, args.reps)[0] / 1e9
                except Exception as ex:  # backend unavailable for this shape
                    print(f"  {label}: unavailable ({type(ex).__name__})")
        elif variant != "softcap":
            bb = bias.to(q.dtype).expand(b, h, s, s)
            f = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bb, scale=scale)
            peers["sdpa_mask"] = fl / median_ms(f, args.reps)[0] / 1e9
        if not args.no_flex:
            try:
                ff = flex_fn(variant, b, h, s)
                out = ff(q, k, v, scale)
                ferr = (out.float() - ref).abs().max().item()
                peers["flex"] = fl / median_ms(lambda: ff(q, k, v, scale), args.reps)[0] / 1e9
                print(f"  flex maxerr vs reference {ferr:.2e}")
            except Exception as ex:
                print(f"  flex: failed ({type(ex).__name__}: {str(ex)[:200]})")
        if s <= 4096:
            try:
                peers["eager"] = fl / median_ms(lambda: eager(q, k, v, variant, scale, bias), max(5, args.reps // 3))[0] / 1e9
            except torch.OutOfMemoryError:
                print("  eager: out of memory")
        for p, tf in peers.items():
            r = f"  fusec/{p} = {best[0] / tf:.2f}x" if best else ""
            print(f"  {p:<12} {tf:7.1f} TFLOP/s{r}")
        if best:
            summary.append((name, best, peers))
        del q, k, v, ref
        torch.cuda.empty_cache()
    print("\nsummary (best fusec tile per variant):")
    for name, best, peers in summary:
        ratios = "  ".join(f"{p} {best[0] / tf:.2f}x" for p, tf in peers.items())
        print(f"  {name:<14} {best[0]:7.1f} TFLOP/s ({best[1]})  {ratios}")


if __name__ == "__main__":
    sys.exit(main())
