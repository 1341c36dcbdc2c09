#!/usr/bin/env python3
"""Writes the models of dynamic-shape-flags.test into argv[1]:
  nodim.onnx  y = Relu(x), x f32[?, 16] (dim 0 with neither dim_value nor
              dim_param: an unknown dim the caller chooses);
  two.onnx    z = x + y, x and y f32[batch, seq] (one symbol in two inputs);
  many.onnx   y_i = Relu(x_i) for 17 inputs x_i f32[s_i] (17 symbols)."""
import os
import sys

import onnx
from onnx import TensorProto, helper

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
