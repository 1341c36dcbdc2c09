#!/usr/bin/env python3
"""Writes argv[1]/model.onnx and argv[1]/d0/: inputs declared with dim_value 0.

x f32[2, 0, 4] and k i32[3, 0] (dim_value 0: static empty tensors, no --shape needed);
u f32[-1, 3] (dim_value -1: unknown, a symbol to bind). Outputs: r = Relu(x) (empty),
mx = ReduceMax(x, [1]) (-inf), s = ReduceSum(x, [1], keepdims 0) (zeros),
kmn = ReduceMin(k, [1]) (INT32_MAX), n = Neg(u). Used by zero-dim-value.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"),
     helper.make_node("ReduceMax", ["x", "axes"], ["mx"], name="max"),
     helper.make_node("ReduceSum", ["x", "axes"], ["s"], name="sum", keepdims=0),
     helper.make_node("ReduceMin", ["k", "axes"], ["kmn"], name="imin"),
     helper.make_node("Neg", ["u"], ["n"], name="neg")],
    "zero_dims",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0, 4]),
     helper.make_tensor_value_info("k", TensorProto.INT32, [3, 0]),
     helper.make_tensor_value_info("u", TensorProto.FLOAT, [-1, 3])],
    [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 0, 4]),
     helper.make_tensor_value_info("mx", TensorProto.FLOAT, [2, 1, 4]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 4]),
     helper.make_tensor_value_info("kmn", TensorProto.INT32, [3, 1]),
     helper.make_tensor_value_info("n", TensorProto.FLOAT, [-1, 3])],
    initializer=[numpy_helper.from_array(np.array([1], np.int64), "axes")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), os.path.join(out, "model.onnx"))

d = os.path.join(out, "d0")
os.makedirs(d, exist_ok=True)
x = np.zeros((2, 0, 4), np.float32)
k = np.zeros((3, 0), np.int32)
u = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
arrays = [("input_0.pb", x, "x"), ("input_1.pb", k, "k"), ("input_2.pb", u, "u"),
          ("output_0.pb", x, "r"), ("output_1.pb", np.full((2, 1, 4), -np.inf, np.float32), "mx"),
          ("output_2.pb", np.zeros((2, 4), np.float32), "s"),
          ("output_3.pb", np.full((3, 1), np.iinfo(np.int32).max, np.int32), "kmn"),
          ("output_4.pb", -u, "n")]
for name, arr, t in arrays:
    with open(os.path.join(d, name), "wb") as f:
        f.write(numpy_helper.from_array(arr, t).SerializeToString())
