#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: Conv 3 -> 4 channels (3x3, pad 1) then Relu
over x f32[n, 3, h, w], all three dims dynamic. Used by dynamic-conv-dump.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
w = numpy_helper.from_array(np.random.default_rng(1).uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32), "w")
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
     helper.make_node("Relu", ["c"], ["y"], name="relu")],
    "dynamic_conv",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4, "h", "w"])], [w])
os.makedirs(out, exist_ok=True)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
