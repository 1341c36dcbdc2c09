#!/usr/bin/env python3
"""Writes argv[1]/{d2s,s2d,d2s_bad}.onnx and argv[1]/{d2s,s2d}_data/: DepthToSpace (CRD) and
SpaceToDepth (DCR) over an input with symbolic N, H, W (the expansions' target shapes come from
Shape(x)), data at N=2, H=3, W=5 (odd, not multiples of anything); d2s_bad has 12 channels for
blocksize 3 (not a multiple of 9). Used by depth-space.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, node, x_shape, y_shape):
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, name + ".onnx"))


def data(name, x, y):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    for f, a, t in (("input_0.pb", x, "x"), ("output_0.pb", y, "y")):
        with open(os.path.join(out, name, f), "wb") as fh:
            fh.write(numpy_helper.from_array(a, t).SerializeToString())


b = 2
save("d2s", helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=b, mode="CRD"),
     ["n", 8, "h", "w"], ["n", 2, None, None])
x = np.arange(2 * 8 * 3 * 5, dtype=np.float32).reshape(2, 8, 3, 5)
y = x.reshape(2, 2, b, b, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
data("d2s_data", x, y)
save("s2d", helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=b),
     ["n", 3, "h", "w"], ["n", 12, None, None])
x = np.arange(2 * 3 * 6 * 10, dtype=np.float32).reshape(2, 3, 6, 10)
y = x.reshape(2, 3, 3, b, 5, b).transpose(0, 3, 5, 1, 2, 4).reshape(2, 12, 3, 5)
data("s2d_data", x, y)
save("d2s_bad", helper.make_node("DepthToSpace", ["x"], ["y"], name="bad", blocksize=3),
     [1, 12, 4, 4], [1, None, None, None])
