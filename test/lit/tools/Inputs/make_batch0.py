#!/usr/bin/env python3
"""Writes argv[1]/model.onnx, y = MatMul(Relu(x), w) over x f32[b, 8], w f32[8, 4], and argv[1]/b0/ with
batch-0 data (x of shape [0, 8], y of shape [0, 4]). Used by nki-run-batch0.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "b0"), exist_ok=True)
w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")],
    "batch0", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 4])], initializer=[numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
for name, a in (("input_0.pb", np.zeros((0, 8), np.float32)), ("output_0.pb", np.zeros((0, 4), np.float32))):
    with open(os.path.join(out, "b0", name), "wb") as f:
        f.write(numpy_helper.from_array(a, "x" if name.startswith("input") else "y").SerializeToString())
