#!/usr/bin/env python3
"""Writes argv[1]/{pool,conv1d}/model.onnx with test_data_set_0 (expected outputs from
onnx.reference): pool = MaxPool 3x3 stride 2 pads 1 then AveragePool 2x2 over f32[1, 130, 10, 12];
conv1d = Conv (1-D, pads 1/2, stride 2, bias) then Relu over f32[2, 8, 40]. Used by
nki-pool-conv1d.test (these had no NKI lowering before)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def save(out, name, nodes, x, inits, yshape):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(d, "model.onnx"))
    y = ReferenceEvaluator(m).run(None, {"x": x})[0]
    for n, (t, v) in enumerate([("input_0", ("x", x)), ("output_0", ("y", y))]):
        with open(os.path.join(d, "test_data_set_0", t + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(v[1], v[0]).SerializeToString())


rng = np.random.default_rng(0)
out = sys.argv[1]
save(out, "pool", [
    helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], name="maxpool"),
    helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], name="avgpool")],
    rng.standard_normal((1, 130, 10, 12)).astype(np.float32), {}, [1, 130, 4, 5])
save(out, "conv1d", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 2], strides=[2], name="conv1d"),
    helper.make_node("Relu", ["c"], ["y"], name="relu")],
    rng.standard_normal((2, 8, 40)).astype(np.float32),
    {"w": rng.standard_normal((4, 8, 3)).astype(np.float32), "b": rng.standard_normal(4).astype(np.float32)},
    [2, 4, 21])
