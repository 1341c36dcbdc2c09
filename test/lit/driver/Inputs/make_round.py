#!/usr/bin/env python3
"""Writes a one-node model, y = Round(x) over f32[4, 8], to argv[1].

Round (half to even) has no NKI lowering: the single-node group is refused by
the nki legality, which --dump-fusion must show (refused-group.test).
"""
import sys

import onnx
from onnx import TensorProto, helper

g = helper.make_graph(
    [helper.make_node("Round", ["x"], ["y"], name="round")], "round",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
