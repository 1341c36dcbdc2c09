#!/usr/bin/env python3
"""Writes the models of resample-ops.test into argv[1]:

new_ops.onnx (+ test_data_set_0 with onnx.reference's outputs): PRelu with a
per-channel slope feeding an Add, a YOLO-style 2x nearest upsample, linear
and cubic Resize, an FPN-style Resize to sizes with axes, CumSum of an
int64 padding mask (BLOOM / OPT position ids) and of floats, reverse and
exclusive, along a middle axis, and a DBNet-style ConvTranspose (2x2,
stride 2, bias).

And models each refused by `fusec -o` with a reason naming the node:
resize_antialias.onnx, resize_runtime_scales.onnx (scales a graph input),
cumsum_runtime_axis.onnx (axis a graph input), cumsum_long.onnx (a scan
longer than the CumSum kernel's limit).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def const(name, arr):
    return h.make_node("Constant", [], [name], name=name,
                       value=numpy_helper.from_array(np.asarray(arr), name))


def save(name, nodes, inputs, outputs, opset=19):
    g = h.make_graph(nodes, name, inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


F = lambda n, s: h.make_tensor_value_info(n, T.FLOAT, s)
I = lambda n, s: h.make_tensor_value_info(n, T.INT64, s)

nodes = [
    const("slope", np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1, 1)),
    h.make_node("PRelu", ["x", "slope"], ["p"], name="prelu"),
    h.make_node("Add", ["p", "x"], ["y_prelu"], name="residual"),
    const("s2", np.array([1, 1, 2, 2], np.float32)),
    h.make_node("Resize", ["x", "", "s2"], ["y_up"], name="upsample", mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    const("s15", np.array([1, 1, 1.5, 0.75], np.float32)),
    h.make_node("Resize", ["x", "", "s15"], ["y_lin"], name="linear", mode="linear"),
    h.make_node("Resize", ["x", "", "s15"], ["y_cub"], name="cubic", mode="cubic"),
    const("hw", np.array([5, 11], np.int64)),
    h.make_node("Resize", ["x", "", "", "hw"], ["y_fpn"], name="fpn", mode="linear", axes=[2, 3],
                coordinate_transformation_mode="pytorch_half_pixel"),
    const("one", np.array(1, np.int64)),
    h.make_node("CumSum", ["mask", "one"], ["cs"], name="positions"),
    h.make_node("Mul", ["cs", "mask"], ["y_pos"], name="mask_positions"),
    const("two", np.array(2, np.int64)),
    h.make_node("CumSum", ["x", "two"], ["y_cs"], name="scan_h", exclusive=1, reverse=1),
    const("wt", (np.arange(3 * 2 * 2 * 2).reshape(3, 2, 2, 2) / 10 - 1).astype(np.float32)),
    const("bt", np.array([0.5, -0.5], np.float32)),
    h.make_node("ConvTranspose", ["x", "wt", "bt"], ["y_ct"], name="deconv", strides=[2, 2]),
]
m = save("new_ops", nodes, [F("x", [1, 3, 6, 8]), I("mask", [2, 9])],
         [F("y_prelu", None), F("y_up", None), F("y_lin", None), F("y_cub", None),
          F("y_fpn", None), I("y_pos", None), F("y_cs", None), F("y_ct", None)])
rng = np.random.default_rng(0)
feeds = {"x": (rng.standard_normal((1, 3, 6, 8)) * 2).astype(np.float32),
         "mask": np.array([[0, 0, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0, 0]], np.int64)}
results = ReferenceEvaluator(m).run(None, feeds)
d = os.path.join(out, "test_data_set_0")
os.makedirs(d, exist_ok=True)
for i, (k, v) in enumerate(feeds.items()):
    with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(v, k).SerializeToString())
for i, (o, v) in enumerate(zip(m.graph.output, results)):
    with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(v, o.name).SerializeToString())

save("resize_antialias", [const("s", np.array([1, 1, 0.5, 0.5], np.float32)),
                          h.make_node("Resize", ["x", "", "s"], ["y"], name="shrink", mode="linear",
                                      antialias=1)],
     [F("x", [1, 3, 8, 8])], [F("y", None)])
save("resize_runtime_scales", [h.make_node("Resize", ["x", "", "s"], ["y"], name="dyn", mode="nearest")],
     [F("x", [1, 3, 8, 8]), F("s", [4])], [F("y", None)])
save("cumsum_runtime_axis", [h.make_node("CumSum", ["x", "axis"], ["y"], name="scan")],
     [F("x", [2, 8]), I("axis", [])], [F("y", None)])
save("cumsum_long", [const("ax", np.array(1, np.int64)),
                     h.make_node("CumSum", ["x", "ax"], ["y"], name="long_scan")],
     [F("x", [1, 20000])], [F("y", None)])
