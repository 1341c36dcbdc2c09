#!/usr/bin/env python3
"""Writes argv[1]/model.onnx and argv[1]/d0/ (batch 0) and argv[1]/d2/ (batch 2).

The model, over x f32[b, 8]: y = Softmax(LayerNorm(Relu(x) + 1)) (elementwise and row kernels; empty
when b = 0) and s = ReduceSum(x, axes=[0]) (f32[8]: over an empty axis it is 0, so the step that writes
it must still run). Used by empty-tensors.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"),
     helper.make_node("Add", ["r", "one"], ["a"], name="add"),
     helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["n"], name="ln", axis=-1),
     helper.make_node("Softmax", ["n"], ["y"], name="softmax", axis=-1),
     helper.make_node("ReduceSum", ["x", "axes"], ["s"], name="sum", keepdims=0)],
    "empty", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 8]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [8])],
    initializer=[numpy_helper.from_array(np.ones((), np.float32), "one"),
                 numpy_helper.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32), "gamma"),
                 numpy_helper.from_array(np.linspace(-0.1, 0.1, 8).astype(np.float32), "beta"),
                 numpy_helper.from_array(np.array([0], np.int64), "axes")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))

gamma, beta = np.linspace(0.5, 1.5, 8).astype(np.float32), np.linspace(-0.1, 0.1, 8).astype(np.float32)
for folder, b in (("d0", 0), ("d2", 2)):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    x = np.random.default_rng(b).standard_normal((b, 8)).astype(np.float32)
    a = np.maximum(x, 0) + 1
    n = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * gamma + beta
    e = np.exp(n - n.max(-1, keepdims=True)) if b else n
    y = e / e.sum(-1, keepdims=True) if b else n
    for name, arr, t in (("input_0.pb", x, "x"), ("output_0.pb", y.astype(np.float32), "y"),
                         ("output_1.pb", x.sum(0).astype(np.float32), "s")):
        with open(os.path.join(out, folder, name), "wb") as f:
            f.write(numpy_helper.from_array(arr, t).SerializeToString())
