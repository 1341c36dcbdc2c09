#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: softmax(q k^T / sqrt(8) + bias) v whose bias
is a Slice of an ALiBi-style table: bias = AL[:, :, 128 - s:], s the key
length read from k's shape (MPT's export). AL is a graph input when argv[2]
is "input", else a constant. q, k, v: f32[b, 2, s, 8], b and s dynamic.
Used by attention-bias-slice.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
al_input = len(sys.argv) > 2 and sys.argv[2] == "input"
H, D = 2, 8
al = np.random.default_rng(5).standard_normal((H, 1, 128)).astype(np.float32)
inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
         [("two", 2), ("max", 128), ("zero1", [0]), ("big", [2 ** 62]), ("ax2", [2])]]
inits.append(numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale"))
if not al_input:
    inits.append(numpy_helper.from_array(al, "AL"))
nodes = [
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
    helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
    helper.make_node("Mul", ["qk", "scale"], ["sc"], name="sc"),
    helper.make_node("Shape", ["k"], ["sh"], name="sh"),
    helper.make_node("Gather", ["sh", "two"], ["s"], axis=0, name="s"),
    helper.make_node("Sub", ["max", "s"], ["st"], name="st"),
    helper.make_node("Unsqueeze", ["st", "zero1"], ["st1"], name="st1"),
    helper.make_node("Slice", ["AL", "st1", "big", "ax2"], ["bias"], name="bias"),
    helper.make_node("Add", ["sc", "bias"], ["sb"], name="sb"),
    helper.make_node("Softmax", ["sb"], ["p"], axis=-1, name="p"),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="y"),
]
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["b", H, "s", D])
inputs = [vi("q"), vi("k"), vi("v")]
if al_input:
    inputs.append(helper.make_tensor_value_info("AL", TensorProto.FLOAT, [H, 1, 128]))
graph = helper.make_graph(nodes, "attn_bias_slice", inputs, [vi("y")], initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
os.makedirs(out, exist_ok=True)
onnx.save(model, os.path.join(out, "model.onnx"))
