#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: y = x[:, 0:3] * 2 with x f32[batch, seq, 16]
(a Slice that keeps min(seq, 3) positions: one constant length only when
seq >= 3). Used by dynamic-slice-clamp.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"], name="first3"),
     helper.make_node("Mul", ["s", "two"], ["y"], name="mul")],
    "slice_clamp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 16])],
    [numpy_helper.from_array(np.array([0], np.int64), "starts"),
     numpy_helper.from_array(np.array([3], np.int64), "ends"),
     numpy_helper.from_array(np.array([1], np.int64), "axes"),
     numpy_helper.from_array(np.array(2.0, np.float32), "two")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
os.makedirs(out, exist_ok=True)
onnx.save(m, os.path.join(out, "model.onnx"))
