#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: layout ops read by several kernels, as GPT-NeoX
exports them. batch and seq are dynamic.
  - an embedding Gather (ids int64[batch, seq] into a constant [11, 16]
    table) read by a LayerNormalization and by a Relu * 2: two kernels;
  - a fused projection's heads: qkv f32[batch, seq, 48] reshaped to
    [batch, seq, 2, 24] and transposed to [batch, 2, seq, 24], then sliced
    into q, k and v (8 each); q and k each sliced again for a partial
    rotary (rotate_half over the first 4 of 8: two Slices, a Neg and a
    Concat, then the untouched 4 concatenated back), then attention
    softmax(q k^T / sqrt(8)) v.
Used by shared-layouts.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
nodes, inits = [], []


def const(name, value, dtype=np.int64):
    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


def node(op, ins, outs, **attrs):
    nodes.append(helper.make_node(op, ins, [outs], name=outs, **attrs))
    return outs


def slice_(x, start, end, axis, name):
    return node("Slice", [x, const(name + "_s", [start]), const(name + "_e", [end]), const(name + "_a", [axis])], name)


# Embedding Gather with two consumer kernels.
table = numpy_helper.from_array(rng.uniform(-1, 1, (11, 16)).astype(np.float32), "table")
inits.append(table)
node("Gather", ["table", "ids"], "emb")
inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, (16,)).astype(np.float32), "gamma"))
inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (16,)).astype(np.float32), "beta"))
nodes.append(helper.make_node("LayerNormalization", ["emb", "gamma", "beta"], ["normed"], name="ln", axis=-1))
node("Relu", ["emb"], "relu")
node("Mul", ["relu", const("two", 2.0, np.float32)], "relu2")

# The heads' Transpose read by three Slices (q, k, v), q and k by two each.
node("Reshape", ["qkv", const("heads_shape", [0, 0, 2, 24])], "qkv_heads")
node("Transpose", ["qkv_heads"], "heads", perm=[0, 2, 1, 3])
q = slice_("heads", 0, 8, 3, "q")
k = slice_("heads", 8, 16, 3, "k")
v = slice_("heads", 16, 24, 3, "v")


def rotary(x, p):
    rot = slice_(x, 0, 4, 3, p + "_rot")
    pas = slice_(x, 4, 8, 3, p + "_pass")
    x1 = slice_(rot, 0, 2, 3, p + "_x1")
    x2 = slice_(rot, 2, 4, 3, p + "_x2")
    n = node("Neg", [x2], p + "_neg")
    r = node("Concat", [n, x1], p + "_rotated", axis=-1)
    a = node("Mul", [rot, const(p + "_cos", 0.8, np.float32)], p + "_xcos")
    b = node("Mul", [r, const(p + "_sin", 0.6, np.float32)], p + "_rsin")
    y = node("Add", [a, b], p + "_rope")
    return node("Concat", [y, pas], p + "_full", axis=-1)


qr, kr = rotary(q, "q"), rotary(k, "k")
kt = node("Transpose", [kr], "kt", perm=[0, 1, 3, 2])
s = node("MatMul", [qr, kt], "scores")
s = node("Mul", [s, const("scale", 1 / np.sqrt(8), np.float32)], "scaled")
p = node("Softmax", [s], "probs", axis=-1)
node("MatMul", [p, v], "attn")

g = helper.make_graph(
    nodes, "shared_layouts",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
     helper.make_tensor_value_info("qkv", TensorProto.FLOAT, ["batch", "seq", 48])],
    [helper.make_tensor_value_info("normed", TensorProto.FLOAT, ["batch", "seq", 16]),
     helper.make_tensor_value_info("relu2", TensorProto.FLOAT, ["batch", "seq", 16]),
     helper.make_tensor_value_info("attn", TensorProto.FLOAT, ["batch", 2, "seq", 8])],
    inits)
os.makedirs(out, exist_ok=True)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
