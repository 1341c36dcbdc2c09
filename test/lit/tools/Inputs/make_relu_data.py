#!/usr/bin/env python3
"""Writes argv[1]/model.onnx, y = Relu(x) over f32[4, 8], and data folders for it:
good/ (matching data and output), shape/ (x of shape [4, 9]), dtype/ (x as f64), none/ (no input_0.pb).
Used by nki-run-input-check.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
cases = {"good": x, "shape": np.zeros((4, 9), np.float32), "dtype": x.astype(np.float64), "none": None}
for name, data in cases.items():
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    if data is not None:
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(data, "x").SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.maximum(x, 0), "y").SerializeToString())
