"""Models for input-value.test: graph inputs whose values decide shapes or
branches (fusec --input-value), and one whose ConvInteger geometry needs
--shape while importing.

  python3 make_input_value.py OUTDIR
writes OUTDIR/{reduce,if_sr,convint}/model.onnx and test data sets.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, model, sets):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (ins, outs) in enumerate(sets):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        for i, (n, a) in enumerate(ins):
            with open(os.path.join(sd, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        for i, (n, a) in enumerate(outs):
            with open(os.path.join(sd, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


rng = np.random.default_rng(0)

# ReduceSum whose axes arrive as a graph input (as the ONNX node tests and
# some exporters write it); the output's shape depends on the value.
g = helper.make_graph(
    [helper.make_node("ReduceSum", ["data", "axes"], ["y"], keepdims=0)], "reduce",
    [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3, 4]),
     helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
x = rng.standard_normal((2, 3, 4)).astype(np.float32)
save("reduce", m, [
    ([("data", x), ("axes", np.array([1], np.int64))], [("y", x.sum(axis=1))]),
    ([("data", x), ("axes", np.array([2], np.int64))], [("y", x.sum(axis=2))]),
])

# An If on a scalar sample-rate input, as silero-style VAD exports have.
then_g = helper.make_graph(
    [helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
    [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])],
    [numpy_helper.from_array(np.array(2, np.float32), "two")])
else_g = helper.make_graph(
    [helper.make_node("Add", ["x", "one"], ["e"])], "else", [],
    [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])],
    [numpy_helper.from_array(np.array(1, np.float32), "one")])
g = helper.make_graph(
    [helper.make_node("Equal", ["sr", "k16"], ["is16"]),
     helper.make_node("If", ["is16"], ["y"], then_branch=then_g, else_branch=else_g)],
    "if_sr",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
     helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    [numpy_helper.from_array(np.array(16000, np.int64), "k16")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
x4 = rng.standard_normal(4).astype(np.float32)
save("if_sr", m, [([("x", x4), ("sr", np.array(16000, np.int64))], [("y", x4 * 2)])])

# ConvInteger on an input of symbolic batch and width (a dynamically
# quantised CRNN's first layer): its geometry is checked while importing.
w = rng.integers(0, 255, (4, 1, 3, 3)).astype(np.uint8)
g = helper.make_graph(
    [helper.make_node("ConvInteger", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "convint",
    [helper.make_tensor_value_info("x", TensorProto.UINT8, ["batch", 1, 8, "width"])],
    [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
    [numpy_helper.from_array(w, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
save("convint", m, [])
