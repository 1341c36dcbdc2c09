#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: two convolutions with elementwise epilogues
over a symbolic batch. x f32[batch, 8, 13, 11]:
  a = Relu(Conv(x, w1, b1, 3x3, pads 1) + x)        (a ResNet block's tail)
  y = Swish as SiLU: d * Sigmoid(d), d = Conv(a, w2, group 8, 3x3,
      stride 2, pads 1) + s (s f32[8, 1, 1], a per-channel shift)
y f32[batch, 8, 7, 6]. Used by conv-epilogue-cpu.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)


def init(name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
     helper.make_node("Add", ["c1", "x"], ["r"], name="residual"),
     helper.make_node("Relu", ["r"], ["a"], name="relu"),
     helper.make_node("Conv", ["a", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                      strides=[2, 2], group=8),
     helper.make_node("Add", ["c2", "s"], ["d"], name="shift"),
     helper.make_node("Sigmoid", ["d"], ["g"], name="sigmoid"),
     helper.make_node("Mul", ["d", "g"], ["y"], name="silu")],
    "conv_epilogues",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 13, 11])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 7, 6])],
    [init("w1", [8, 8, 3, 3], 0.2), init("b1", [8], 0.1), init("w2", [8, 1, 3, 3], 0.3),
     init("s", [8, 1, 1], 0.1)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
os.makedirs(out, exist_ok=True)
onnx.save(m, os.path.join(out, "model.onnx"))
