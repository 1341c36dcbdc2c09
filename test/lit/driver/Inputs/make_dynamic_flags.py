#!/usr/bin/env python3
"""Writes the models of dynamic-shape-flags.test into argv[1]:
  nodim.onnx  y = Relu(x), x f32[?, 16] (dim 0 with neither dim_value nor
              dim_param: an unknown dim the caller chooses);
  two.onnx    z = x + y, x and y f32[batch, seq] (one symbol in two inputs);
  many.onnx   y_i = Relu(x_i) for 17 inputs x_i f32[s_i] (17 symbols);
  window.onnx attention over q, k, v f32[batch, 2, seq, 32] with a sliding
              window of 64 built from the shapes (Range positions, causal
              And (rows - cols) < 64, Where(keep, 0, finfo.min));
  wide.onnx   the same with a window of 1022 (wider than every probe of
              the range 1..1024)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(graph, name):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name))


save(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "nodim",
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 16])]), "nodim.onnx")
save(helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "two",
                       [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq"]) for n in "xy"],
                       [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "seq"])]), "two.onnx")
n = 17
save(helper.make_graph([helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(n)], "many",
                       [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [f"s{i}"]) for i in range(n)],
                       [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [f"s{i}"]) for i in range(n)]),
     "many.onnx")

h = helper
nodes = [
    h.make_node("Shape", ["q"], ["qs"]),
    h.make_node("Gather", ["qs", "i2"], ["S"], axis=0),
    h.make_node("Range", ["zero", "S", "one"], ["ar"]),
    h.make_node("Unsqueeze", ["ar", "ax1"], ["rows"]),
    h.make_node("Unsqueeze", ["ar", "ax0"], ["cols"]),
    h.make_node("LessOrEqual", ["cols", "rows"], ["c"]),
    h.make_node("Sub", ["rows", "cols"], ["dist"]),
    h.make_node("Less", ["dist", "w"], ["inw"]),
    h.make_node("And", ["c", "inw"], ["keep"]),
    h.make_node("Where", ["keep", "fz", "fmin"], ["m"]),
    h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    h.make_node("MatMul", ["q", "kt"], ["s0"]),
    h.make_node("Mul", ["s0", "scale"], ["s1"]),
    h.make_node("Add", ["s1", "m"], ["s2"]),
    h.make_node("Softmax", ["s2"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["o"]),
]
for fname, width in (("window.onnx", 64), ("wide.onnx", 1022)):
    inits = [numpy_helper.from_array(np.array(v, t), n) for n, v, t in [
        ("i2", 2, np.int64), ("zero", 0, np.int64), ("one", 1, np.int64), ("ax1", [1], np.int64),
        ("ax0", [0], np.int64), ("fz", 0, np.float32), ("w", width, np.int64),
        ("fmin", np.finfo(np.float32).min, np.float32), ("scale", 32 ** -0.5, np.float32)]]
    save(helper.make_graph(nodes, "window",
                           [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 2, "seq", 32])
                            for n in "qkv"],
                           [helper.make_tensor_value_info("o", TensorProto.FLOAT, ["batch", 2, "seq", 32])], inits),
         fname)
