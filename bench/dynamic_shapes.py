#!/usr/bin/env python3
# ===- dynamic_shapes.py - One dynamic artifact against static ones, per shape -===#
#
# For each model and each shape: compiles the model once with its symbolic
# dims left dynamic (fusec MODEL --target cpu -o DYN, batch 1..16 and
# sequence 1..128 as --shape ranges) and once
# per shape with every dim bound (--shape), writes a data set of that shape
# (scripts/make_test_data.py: seeded inputs, ONNX Runtime's outputs), and
# times both artifacts with `fusec-run OUT --data DIR --bench N` (libfusert,
# p50 of N runs after warm-up, same threads). Prints the dynamic / static
# latency ratio per shape (issue 14's target: within 1.10) and the compile
# times (the dynamic compile runs the pipeline at S + 2 probe bindings).
#
# Usage (repo root, after building):
#   python3 bench/dynamic_shapes.py [--build build] [--iters 50]
#       [--models gpt2_tiny,bert_tiny] [--shapes 1x16,8x128,3x37] [--work DIR]
# ===----------------------------------------------------------------------===#
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "..", "shared", "models")


def inputs_of(model_path):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    return [(i.name, [d.dim_value if d.dim_value > 0 else d.dim_param for d in i.type.tensor_type.shape.dim])
            for i in m.graph.input if i.name not in inits]


def shape_args(inputs, b, s):
    args = []
    for name, dims in inputs:
        vals = []
        symbols = []
        for d in dims:
            if isinstance(d, int):
                vals.append(d)
            else:
                if d not in symbols:
                    symbols.append(d)
                vals.append(b if symbols.index(d) == 0 else s)
        args += ["--shape", f"{name}={'x'.join(str(v) for v in vals)}"]
    return args


def p50(out):
    m = re.search(r"latency ms: p50 ([0-9.]+)", out)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description="dynamic vs static cpu artifacts, per shape")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--models", default="gpt2_tiny,bert_tiny")
    ap.add_argument("--shapes", default="1x16,8x128,3x37")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    fusec = os.path.join(args.build, "bin", "fusec")
    run = os.path.join(args.build, "bin", "fusec-run")
    work = args.work or tempfile.mkdtemp(prefix="fusec_dyn_bench_")
    rows = []
    for model in args.models.split(","):
        path = os.path.join(MODELS, model, "model.onnx")
        inputs = inputs_of(path)
        dyn = os.path.join(work, f"{model}.dyn")
        t0 = time.time()
        # The tiny models have 128 positions: batch 1..16, sequence 1..128.
        ranges = []
        for a in shape_args(inputs, "1..16", "1..128"):
            ranges.append(a)
        subprocess.run([fusec, path, "--target", "cpu", "-o", dyn] + ranges, check=True, stdout=subprocess.DEVNULL)
        dyn_compile = time.time() - t0
        for shape in args.shapes.split(","):
            b, s = (int(x) for x in shape.split("x"))
            sa = shape_args(inputs, b, s)
            data = os.path.join(work, f"{model}_{shape}.data")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_test_data.py"), path, data] + sa,
                           check=True, stdout=subprocess.DEVNULL)
            static = os.path.join(work, f"{model}_{shape}.static")
            t0 = time.time()
            subprocess.run([fusec, path, "--target", "cpu", "-o", static] + sa, check=True, stdout=subprocess.DEVNULL)
            static_compile = time.time() - t0
            res = {}
            # Alternate the two, twice, and keep each one's best p50 (the machine is shared).
            for rnd in range(2):
                for kind, art in (("dyn", dyn), ("static", static)):
                    r = subprocess.run([run, art, "--data", data, "--bench", str(args.iters)], capture_output=True,
                                       text=True)
                    ok = "PASS" in r.stdout
                    t = p50(r.stdout)
                    prev = res.get(kind)
                    res[kind] = (min(t, prev[0]) if prev and t else t, ok and (prev[1] if prev else True))
            rows.append((model, shape, res["static"][0], res["dyn"][0], res["static"][1] and res["dyn"][1],
                         static_compile, dyn_compile))
    print(f"\n{'model':12} {'shape':8} {'static ms':>10} {'dynamic ms':>11} {'dyn/static':>10} {'check':>6}"
          f" {'compile s static/dyn':>21}")
    for model, shape, st, dy, ok, sc, dc in rows:
        ratio = dy / st if st and dy else float("nan")
        print(f"{model:12} {shape:8} {st:10.3f} {dy:11.3f} {ratio:10.2f} {'PASS' if ok else 'FAIL':>6}"
              f" {sc:10.1f} / {dc:8.1f}")


if __name__ == "__main__":
    main()
