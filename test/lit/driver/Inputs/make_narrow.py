#!/usr/bin/env python3
"""Writes models with narrow dtypes (float8, int4) to folders under argv[1].

Each folder holds model.onnx and, where it compiles, data/ (input_0.pb,
output_0.pb from onnx.reference) for fusec-run (narrow-dtypes-cpu.test):
  wq_int4    DequantizeLinear of constant int4 weights (5 x 3, an odd count:
             the last byte half padding; blocked scale along axis 0) + MatMul
  wq_f8      DequantizeLinear of constant f8e4m3fn weights (per-axis scale) + MatMul
  fakequant  Cast f32 -> f8e5m2 -> f32 (a kernel would have to round to float8)
  reshape_f8 an f8e4m3fn graph input reshaped to the output (no kernel)
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper as nh
from onnx.reference import ReferenceEvaluator

root = sys.argv[1]
rng = np.random.default_rng(1)


def write(name, nodes, inits, inputs, outputs, feeds=None):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    onnx.save(m, os.path.join(d, "model.onnx"))
    if feeds is None:
        return
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    outs = ReferenceEvaluator(m).run(None, feeds)
    for i, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(d, "data", f"input_{i}.pb"), "wb") as f:
            f.write(nh.from_array(v, k).SerializeToString())
    for i, (o, v) in enumerate(zip(outputs, outs)):
        with open(os.path.join(d, "data", f"output_{i}.pb"), "wb") as f:
            f.write(nh.from_array(v, o.name).SerializeToString())


x = rng.standard_normal((2, 5)).astype(np.float32)
xin = [helper.make_tensor_value_info("x", TP.FLOAT, [2, 5])]
yout = [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])]

w4 = rng.integers(-8, 8, (5, 3)).astype(ml_dtypes.int4)
write("wq_int4",
      [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0, block_size=3, name="dq"),
       helper.make_node("MatMul", ["x", "wf"], ["y"], name="mm")],
      [helper.make_tensor("w", TP.INT4, [5, 3], nh._pack_4bitx2(w4).tobytes(), raw=True),
       nh.from_array(np.array([[0.5, 0.25, 2.0], [1.5, 0.125, 1.0]], np.float32), "s")],
      xin, yout, {"x": x})

w8 = nh.saturate_cast(rng.standard_normal((5, 3)).astype(np.float32) * 100, ml_dtypes.float8_e4m3fn)
write("wq_f8",
      [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=1, name="dq"),
       helper.make_node("MatMul", ["x", "wf"], ["y"], name="mm")],
      [helper.make_tensor("w", TP.FLOAT8E4M3FN, [5, 3], w8.view(np.uint8).tobytes(), raw=True),
       nh.from_array(np.array([0.01, 0.02, 0.03], np.float32), "s")],
      xin, yout, {"x": x})

write("fakequant",
      [helper.make_node("Cast", ["x"], ["q"], to=TP.FLOAT8E5M2, name="to_f8"),
       helper.make_node("Cast", ["q"], ["y"], to=TP.FLOAT, name="from_f8")],
      [], xin, [helper.make_tensor_value_info("y", TP.FLOAT, [2, 5])])

write("reshape_f8",
      [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
      [nh.from_array(np.array([6], np.int64), "shape")],
      [helper.make_tensor_value_info("x", TP.FLOAT8E4M3FN, [2, 3])],
      [helper.make_tensor_value_info("y", TP.FLOAT8E4M3FN, [6])])
