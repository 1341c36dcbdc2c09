#!/usr/bin/env python3
"""Writes argv[1]/model.onnx: y = Round(MatMul(Round(x), w)), two Round nodes in two kernels that the nki
backend refuses (Round has no NKI lowering). Used by nki-refusals-all-named.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
w = np.ones((8, 4), np.float32)
g = helper.make_graph(
    [helper.make_node("Round", ["x"], ["r"], name="round_in"), helper.make_node("MatMul", ["r", "w"], ["m"], name="mm"),
     helper.make_node("Round", ["m"], ["y"], name="round_out")],
    "two_refusals", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])], initializer=[numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "model.onnx"))
