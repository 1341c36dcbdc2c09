#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: LLaMA's rotary embedding over x f32[batch, seq,
2, 8] with cos / sin f32[seq, 8]: the heads' Transpose, then rotate_half
(two Slices of the head dim, a Neg and a Concat), x * cos + rot * sin.
batch and seq are dynamic. Used by rope-fusion.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 8
out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3], name="heads"),
     helper.make_node("Slice", ["t", "s0", "sh", "ax"], ["x1"], name="x1"),
     helper.make_node("Slice", ["t", "sh", "se", "ax"], ["x2"], name="x2"),
     helper.make_node("Neg", ["x2"], ["n"], name="neg"),
     helper.make_node("Concat", ["n", "x1"], ["r"], axis=-1, name="cat"),
     helper.make_node("Mul", ["t", "cos"], ["a"], name="xcos"),
     helper.make_node("Mul", ["r", "sin"], ["b"], name="rsin"),
     helper.make_node("Add", ["a", "b"], ["y"], name="rope")],
    "rope_dynamic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 2, D]),
     helper.make_tensor_value_info("cos", TensorProto.FLOAT, ["seq", D]),
     helper.make_tensor_value_info("sin", TensorProto.FLOAT, ["seq", D])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, "seq", D])],
    [numpy_helper.from_array(np.array([0], np.int64), "s0"),
     numpy_helper.from_array(np.array([D // 2], np.int64), "sh"),
     numpy_helper.from_array(np.array([2**62], np.int64), "se"),
     numpy_helper.from_array(np.array([3], np.int64), "ax")])
os.makedirs(out, exist_ok=True)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
