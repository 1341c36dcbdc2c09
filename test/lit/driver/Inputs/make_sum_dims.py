#!/usr/bin/env python3
"""Writes argv[1]/{kvcache,slice5}.onnx: a Concat of past[B,2,P,8] and
cur[B,2,S,8] along axis 2 (a KV cache: P + S keys), and x[:, 5:] of
x[B,S,16] followed by a Relu. With P and S dynamic, both have a dim that is
a sum of symbols. Used by dynamic-sum-dims.test."""
import os
import sys

import onnx
import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
f = TensorProto.FLOAT
g = helper.make_graph(
    [helper.make_node("Concat", ["past", "cur"], ["y"], axis=2)], "kvcache",
    [helper.make_tensor_value_info("past", f, ["B", 2, "P", 8]),
     helper.make_tensor_value_info("cur", f, ["B", 2, "S", 8])],
    [helper.make_tensor_value_info("y", f, ["B", 2, "T", 8])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, os.path.join(out, "kvcache.onnx"))
g = helper.make_graph(
    [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
    "slice5", [helper.make_tensor_value_info("x", f, ["B", "S", 16])],
    [helper.make_tensor_value_info("y", f, ["B", "T", 16])],
    [numpy_helper.from_array(np.array([5], np.int64), "st"),
     numpy_helper.from_array(np.array([2**62], np.int64), "en"),
     numpy_helper.from_array(np.array([1], np.int64), "ax")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, os.path.join(out, "slice5.onnx"))
