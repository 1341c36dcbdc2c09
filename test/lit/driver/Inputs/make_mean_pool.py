#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: sentence-embedding mean pooling over a symbolic
sequence axis. x f32[batch, seq, 16] -> ReduceMean over seq (the mean's
1/seq is a run-time value under dynamic shapes), then LayerNorm-free
scaling: y = ReduceMean(x, [1]) * 2 + 1, f32[batch, 16]; also
m = ReduceMean(x, [2]) (over the static axis), f32[batch, seq]. Used by
dynamic-mean.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("ReduceMean", ["x"], ["pooled"], name="pool", axes=[1], keepdims=0),
     helper.make_node("Mul", ["pooled", "two"], ["scaled"], name="mul"),
     helper.make_node("Add", ["scaled", "one"], ["y"], name="add"),
     helper.make_node("ReduceMean", ["x"], ["m"], name="feat_mean", axes=[2], keepdims=0)],
    "mean_pool",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16]),
     helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", "seq"])],
    [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
     numpy_helper.from_array(np.array(1.0, np.float32), "one")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
os.makedirs(out, exist_ok=True)
onnx.save(m, os.path.join(out, "model.onnx"))
