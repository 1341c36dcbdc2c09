"""ctest driver: a long elementwise chain compiled with fusec --target nki and run with fusec-run.

    python3 run_long_chain.py FUSEC FUSEC_RUN NODES PRECISION OUT

Generates OUT/model.onnx: NODES nodes alternating Add(0.25) / Mul(0.75) / Tanh on a [256, 512]
f32 input, and OUT/test_data_set_0 with its NumPy reference; fuses it into as few kernels as the
NKI legality allows (every intermediate tile once live in SBUF without reuse would not fit), then
runs the artifact on the NumPy model of NKI. fusec-run prints the verdict (PASS/FAIL).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(nodes, out):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(0.25, np.float32), "c_add"),
             numpy_helper.from_array(np.array(0.75, np.float32), "c_mul")]
    graph_nodes, prev, ref = [], "x", x.copy()
    for i in range(nodes):
        name = f"v{i}" if i + 1 < nodes else "y"
        kind = i % 3
        if kind == 0:
            graph_nodes.append(helper.make_node("Add", [prev, "c_add"], [name], name=f"n{i}"))
            ref = (ref + np.float32(0.25)).astype(np.float32)
        elif kind == 1:
            graph_nodes.append(helper.make_node("Mul", [prev, "c_mul"], [name], name=f"n{i}"))
            ref = (ref * np.float32(0.75)).astype(np.float32)
        else:
            graph_nodes.append(helper.make_node("Tanh", [prev], [name], name=f"n{i}"))
            ref = np.tanh(ref).astype(np.float32)
        prev = name
    g = helper.make_graph(graph_nodes, "long_chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 512])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 512])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for fname, name, arr in (("input_0.pb", "x", x), ("output_0.pb", "y", ref)):
        with open(os.path.join(out, "test_data_set_0", fname), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())


def main(fusec, fusec_run, nodes, precision, out):
    build(int(nodes), out)
    art = os.path.join(out, "art")
    r = subprocess.run([fusec, os.path.join(out, "model.onnx"), "--target", "nki", "--precision", precision,
                        "-o", art])
    if r.returncode != 0:
        print(f"FAIL: fusec exited with {r.returncode}")
        return 1
    with open(os.path.join(art, "kernels.py")) as f:
        kernels = f.read().count("@nki.jit")
    print(f"{kernels} kernel(s) for {nodes} nodes")
    r = subprocess.run([fusec_run, art, "--data", os.path.join(out, "test_data_set_0"), "--precision", precision])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
