#!/usr/bin/env python3
"""Long valid models compile and compute the right thing (issue 10): a chain
of CHAIN alternating Add/Tanh nodes and a balanced Add tree over LEAVES
leaves (2 * LEAVES - 1 Add nodes), each one fused group; and chains of CHAIN
Transpose, Reshape and Identity nodes, which canonicalisation folds into at
most one node (in linear time: these took minutes when each link was a
rewrite of its own).

For each model: `fusec -o --no-nvcc` for cuda and `fusec -o --target nki`
succeed (no stack overflow in the lowering or the printers), and so do
--dump-fusion and --emit=optimized-ir; the reference
interpreter, plain and after the pass pipeline (--optimize), matches the
NumPy result; for smaller models (NKI_CHAIN, NKI_LEAVES) the NKI artifact
run on the NumPy model of NKI matches it too. A correctness test, not a timing one (timings: bench/long_models.sh).

Usage: run_long_models.py FUSEC FUSEC_RUN CHAIN LEAVES
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh


# NKI kernels reuse dead SBUF tiles, and the NKI legality refuses a group whose
# live tiles exceed SBUF, so fusion splits such a group (the Add tree becomes
# several kernels for nki). Running the NumPy model is slow: it runs the NKI
# artifacts of these smaller models (the long ones compile and are checked on
# the reference interpreter).
NKI_CHAIN, NKI_LEAVES = 120, 32


def write_data(folder, inputs, outputs):
    os.makedirs(folder, exist_ok=True)
    for i, (name, a) in enumerate(inputs):
        with open(os.path.join(folder, "input_%d.pb" % i), "wb") as f:
            f.write(nh.from_array(a, name).SerializeToString())
    for i, (name, a) in enumerate(outputs):
        with open(os.path.join(folder, "output_%d.pb" % i), "wb") as f:
            f.write(nh.from_array(a, name).SerializeToString())


def save(folder, nodes, inputs, inits, data_in, expected):
    os.makedirs(folder, exist_ok=True)
    vi = [h.make_tensor_value_info(n, TP.FLOAT, list(a.shape)) for n, a in data_in]
    out = [h.make_tensor_value_info("y", TP.FLOAT, list(expected.shape))]
    g = h.make_graph(nodes, os.path.basename(folder), vi, out, initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(folder, "model.onnx"))
    write_data(os.path.join(folder, "data"), data_in, [("y", expected)])


def chain(folder, n, rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    b = (0.01 * rng.standard_normal((4, 64))).astype(np.float32)
    nodes, prev, y = [], "x", x
    for i in range(n):
        out = "y" if i == n - 1 else "t%d" % i
        if i % 2 == 0:
            nodes.append(h.make_node("Add", [prev, "b"], [out], name="n%d" % i))
            y = y + b
        else:
            nodes.append(h.make_node("Tanh", [prev], [out], name="n%d" % i))
            y = np.tanh(y)
        prev = out
    save(folder, nodes, ["x", "b"], [], [("x", x), ("b", b)], y.astype(np.float32))


def layout_chain(kind):
    """A generator of a chain of n `kind` nodes (Transpose, Reshape, Identity)."""
    perms = [[1, 2, 0], [0, 2, 1], [2, 0, 1], [1, 0, 2]]
    shapes = [(6, 4), (2, 12), (24,), (3, 8), (2, 3, 4)]

    def gen(folder, n, rng):
        x = rng.standard_normal((2, 3, 4)).astype(np.float32)
        nodes, inits, prev, y = [], [], "x", x
        for i in range(n):
            out = "y" if i == n - 1 else "t%d" % i
            if kind == "Transpose":
                p = perms[(i * 7 + i // 3) % len(perms)]
                nodes.append(h.make_node("Transpose", [prev], [out], perm=p, name="n%d" % i))
                y = np.transpose(y, p)
            elif kind == "Reshape":
                s = shapes[i % len(shapes)]
                if i < len(shapes):
                    inits.append(nh.from_array(np.array(s, np.int64), "s%d" % i))
                nodes.append(h.make_node("Reshape", [prev, "s%d" % (i % len(shapes))], [out], name="n%d" % i))
                y = y.reshape(s)
            else:
                nodes.append(h.make_node("Identity", [prev], [out], name="n%d" % i))
            prev = out
        save(folder, nodes, ["x"], inits, [("x", x)], np.ascontiguousarray(y))
    return gen


def add_tree(folder, leaves, rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    nodes, inits, level, values = [], [], [], []
    for i in range(leaves):
        c = np.array((i % 97) * 1e-3, np.float32)
        inits.append(nh.from_array(c, "c%d" % i))
        nodes.append(h.make_node("Add", ["x", "c%d" % i], ["l%d" % i], name="l%d" % i))
        level.append("l%d" % i)
        values.append(x + c)
    k = 0
    while len(level) > 1:
        nxt, nval = [], []
        for j in range(0, len(level) - 1, 2):
            nodes.append(h.make_node("Add", [level[j], level[j + 1]], ["a%d" % k], name="a%d" % k))
            nxt.append("a%d" % k)
            nval.append(values[j] + values[j + 1])
            k += 1
        if len(level) % 2:
            nxt.append(level[-1])
            nval.append(values[-1])
        level, values = nxt, nval
    nodes[-1].output[0] = "y"
    save(folder, nodes, ["x"], inits, [("x", x)], values[0].astype(np.float32))


def main():
    fusec, fusec_run, n_chain, leaves = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(0)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # (name, generator, size, run the NKI artifact on the NumPy model,
        #  generated cuda kernels; None: a fused group holds at most 512 nodes
        #  (passes/Fusion.cpp kMaxGroupNodes), so the long ones split, and
        #  identical groups share a kernel)
        models = [("chain%d" % n_chain, chain, n_chain, False, 1 if n_chain <= 512 else None),
                  ("addtree%d" % (2 * leaves - 1), add_tree, leaves, False, 1 if 2 * leaves - 1 <= 512 else None),
                  ("chain%d" % NKI_CHAIN, chain, NKI_CHAIN, True, 1),
                  ("addtree%d" % (2 * NKI_LEAVES - 1), add_tree, NKI_LEAVES, True, 1),
                  ("transposes%d" % n_chain, layout_chain("Transpose"), n_chain, False, 1),
                  ("reshapes%d" % n_chain, layout_chain("Reshape"), n_chain, False, 0),
                  ("identities%d" % n_chain, layout_chain("Identity"), n_chain, False, 0)]
        for name, gen, size, on_model, kernels in models:
            folder = os.path.join(tmp, name)
            gen(folder, size, rng)
            model, data = os.path.join(folder, "model.onnx"), os.path.join(folder, "data")
            runs = [
                ("cuda", [fusec, model, "-o", os.path.join(tmp, name + "_cuda"), "--no-nvcc"]),
                ("nki", [fusec, model, "-o", os.path.join(tmp, name + "_nki"), "--target", "nki"]),
                ("dump-fusion", [fusec, model, "--dump-fusion"]),
                ("emit optimized-ir", [fusec, model, "--emit=optimized-ir"]),
                ("reference", [fusec_run, "--reference", model, "--data", data]),
                ("reference --optimize", [fusec_run, "--reference", "--optimize", model, "--data", data]),
            ]
            if on_model:
                runs.append(("nki model", [fusec_run, os.path.join(tmp, name + "_nki"), "--data", data]))
            for what, cmd in runs:
                # The default 8 MiB of stack, not the tools' large one
                # (support/Stack.h): the walks over these models are iterative.
                env = dict(os.environ, FUSEC_STACK_MB="8")
                # A hang guard, not a timing: each step takes about a second
                # here; a quadratic pass (minutes on these models) fails.
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=150)
                except subprocess.TimeoutExpired:
                    print("%-10s %-22s FAILED (no result in 150 s)" % (name, what))
                    failures.append("%s %s: no result in 150 s" % (name, what))
                    continue
                ok = r.returncode == 0 and (not what.startswith(("reference", "nki model")) or "PASS" in r.stdout)
                if what == "cuda" and kernels is not None and "%d generated kernels" % kernels not in r.stdout + r.stderr:
                    ok = False  # each model is one fused group (nki may split it to fit SBUF)
                print("%-10s %-22s %s" % (name, what, "ok" if ok else "FAILED (rc %d)" % r.returncode))
                if not ok:
                    failures.append("%s %s: rc %d\n%s%s" % (name, what, r.returncode,
                                                           r.stdout[-2000:], r.stderr[-2000:]))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
