#!/usr/bin/env python3
# ===- make_test_data.py - A test data set of any shape for an ONNX model -===#
#
# Writes OUT/input_<i>.pb (random inputs, seeded) and OUT/output_<i>.pb
# (what ONNX Runtime's CPU provider computes for them), in the ONNX backend
# test layout that `fusec-run --data` reads. Used to check an artifact
# compiled with dynamic shapes at shapes other than its test data's
# (docs/ARTIFACT.md, "dynamic shapes"):
#
#   python3 scripts/make_test_data.py ../shared/models/gpt2_tiny/model.onnx \
#       /tmp/gpt2_3x37 --shape input_ids=3x37 --shape attention_mask=3x37
#   build/bin/fusec ../shared/models/gpt2_tiny/model.onnx --target cpu -o /tmp/gpt2_dyn
#   build/bin/fusec-run /tmp/gpt2_dyn --data ../shared/models/gpt2_tiny/test_data_set_0 \
#       --data /tmp/gpt2_3x37
#
# Inputs: floats uniform in [-1, 1); integers uniform in [0, --int-high)
# (default 100: token ids of the small vocabularies of the test models),
# except inputs whose name contains "mask" (1, with the last positions of
# every row after the first set to 0: padding) and "token_type" (0). Every
# symbolic dim must be given by --shape NAME=DIMS (symbols shared between
# inputs take the same extent).
# ===----------------------------------------------------------------------===#
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser(description="A test data set of any shape for an ONNX model (ONNX Runtime outputs)")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--shape", action="append", default=[], help="NAME=D0xD1x... (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--int-high", type=int, default=100)
    args = ap.parse_args()

    shapes = {}
    for s in args.shape:
        name, _, dims = s.rpartition("=")
        if not name:
            sys.exit(f"--shape expects NAME=DIMS, got '{s}'")
        shapes[name] = [int(d) for d in dims.split("x")]

    model = onnx.load(args.model, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(args.seed)
    feeds = {}
    symbols = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if inp.name in shapes:
                dims.append(shapes[inp.name][k])
                if d.dim_param:
                    symbols.setdefault(d.dim_param, shapes[inp.name][k])
            elif d.dim_value > 0:
                dims.append(d.dim_value)
            elif d.dim_param in symbols:
                dims.append(symbols[d.dim_param])
            else:
                sys.exit(f"input '{inp.name}' dim {k} ('{d.dim_param}') is not given: add --shape {inp.name}=...")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            x = rng.uniform(-1, 1, dims).astype(dtype)
        elif dtype == np.bool_:
            x = rng.integers(0, 2, dims).astype(np.bool_)
        elif "mask" in inp.name:
            x = np.ones(dims, dtype=dtype)
            if len(dims) == 2 and dims[1] > 1:
                for b in range(1, dims[0]):
                    x[b, dims[1] - (b % max(1, dims[1] // 2)):] = 0
        elif "token_type" in inp.name:
            x = np.zeros(dims, dtype=dtype)
        else:
            x = rng.integers(0, args.int_high, dims).astype(dtype)
        feeds[inp.name] = x
    outputs = sess.run(None, feeds)
    os.makedirs(args.out, exist_ok=True)
    for i, (name, x) in enumerate(feeds.items()):
        with open(os.path.join(args.out, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, name).SerializeToString())
    for i, (o, y) in enumerate(zip(sess.get_outputs(), outputs)):
        with open(os.path.join(args.out, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(y), o.name).SerializeToString())
    print(f"wrote {args.out}: {len(feeds)} inputs, {len(outputs)} outputs "
          f"({', '.join(f'{k}={list(v.shape)}' for k, v in feeds.items())})")


if __name__ == "__main__":
    main()
