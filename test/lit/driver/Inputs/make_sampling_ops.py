#!/usr/bin/env python3
"""Writes the models of sampling-ops.test into argv[1]:

new_ops.onnx (+ test_data_set_0 with onnx.reference's outputs): a
flow-warp GridSample (Sigmoid producer, bilinear, border padding) feeding an
Add, a nearest / zeros GridSample with align_corners, a 3-D reflection one,
CumProd along a middle axis, Det of a batch of 3x3 matrices, LRN (AlexNet's
attributes), LpPool (p = 2 and p = 3), ReverseSequence (time-major), a
GroupNormalization (GroupNormalization-21: per-channel scale and bias; the
model is opset 26, CumProd's first), a Compress with
a constant condition and a RoiAlign (sampling_ratio 2).

And models each refused by `fusec -o` with a reason naming the node:
nms.onnx (NonMaxSuppression: the selected count depends on the data),
compress_runtime.onnx (Compress on a graph-input condition),
roialign.onnx (RoiAlign with sampling_ratio 0: a per-region sample count).
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


def save(name, nodes, inputs, outputs, opset=20):
    g = h.make_graph(nodes, name, inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


F = lambda n, s: h.make_tensor_value_info(n, T.FLOAT, s)
I = lambda n, s: h.make_tensor_value_info(n, T.INT64, s)

rng = np.random.default_rng(0)
nodes = [
    h.make_node("Sigmoid", ["x"], ["sx"], name="act"),
    h.make_node("GridSample", ["sx", "grid"], ["warped"], name="warp", padding_mode="border"),
    h.make_node("Add", ["warped", "res"], ["y_warp"], name="residual"),
    h.make_node("GridSample", ["x", "grid"], ["y_near"], name="nearest", mode="nearest", align_corners=1),
    h.make_node("GridSample", ["v", "gv"], ["y_vol"], name="volumetric", padding_mode="reflection"),
    const("ax", np.array(1, np.int64)),
    h.make_node("CumProd", ["x", "ax"], ["y_cp"], name="scan", reverse=1),
    h.make_node("Det", ["m"], ["y_det"], name="det"),
    h.make_node("LRN", ["x"], ["y_lrn"], name="lrn", size=3, alpha=1e-4, beta=0.75, bias=2.0),
    h.make_node("LpPool", ["x"], ["y_lp2"], name="lppool2", kernel_shape=[2, 3], strides=[1, 2], pads=[1, 1, 0, 1]),
    h.make_node("LpPool", ["x"], ["y_lp3"], name="lppool3", kernel_shape=[3, 3], p=3),
    h.make_node("ReverseSequence", ["seq", "lens"], ["y_rev"], name="reverse", batch_axis=1, time_axis=0),
    const("gscale", np.array([1.5, -0.5, 0.7, 1.1], np.float32)),
    const("gbias", np.array([0.1, 0.2, -0.3, 0.0], np.float32)),
    h.make_node("GroupNormalization", ["x", "gscale", "gbias"], ["y_gn"], name="groupnorm", num_groups=2),
    const("keep", np.array([True, False, True, True], bool)),
    h.make_node("Compress", ["x", "keep"], ["y_cmp"], name="compress", axis=1),
    const("rois", np.array([[0, 0, 5, 4], [1.5, 0.5, 7.2, 5.9]], np.float32)),
    const("bidx", np.array([0, 0], np.int64)),
    h.make_node("RoiAlign", ["x", "rois", "bidx"], ["y_roi"], name="roialign", output_height=2, output_width=3,
                sampling_ratio=2, spatial_scale=0.5),
]
m = save("new_ops", nodes,
         [F("x", [1, 4, 6, 8]), F("grid", [1, 5, 7, 2]), F("res", [1, 4, 5, 7]), F("v", [1, 2, 3, 4, 5]),
          F("gv", [1, 2, 3, 2, 3]), F("m", [4, 3, 3]), F("seq", [5, 3, 2]), I("lens", [3])],
         [F("y_warp", None), F("y_near", None), F("y_vol", None), F("y_cp", None), F("y_det", None),
          F("y_lrn", None), F("y_lp2", None), F("y_lp3", None), F("y_rev", None), F("y_gn", None),
          F("y_cmp", None), F("y_roi", None)], opset=26)
feeds = {"x": rng.standard_normal((1, 4, 6, 8)).astype(np.float32),
         "grid": rng.uniform(-1.3, 1.3, (1, 5, 7, 2)).astype(np.float32),
         "res": rng.standard_normal((1, 4, 5, 7)).astype(np.float32),
         "v": rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32),
         "gv": rng.uniform(-1.5, 1.5, (1, 2, 3, 2, 3)).astype(np.float32),
         "m": rng.standard_normal((4, 3, 3)).astype(np.float32),
         "seq": rng.standard_normal((5, 3, 2)).astype(np.float32),
         "lens": np.array([5, 2, 0], np.int64)}
results = ReferenceEvaluator(m).run(None, feeds)
d = os.path.join(out, "test_data_set_0")
os.makedirs(d, exist_ok=True)
for i, (k, v) in enumerate(feeds.items()):
    with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(v, k).SerializeToString())
for i, (o, v) in enumerate(zip(m.graph.output, results)):
    with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(v, o.name).SerializeToString())

save("nms", [h.make_node("NonMaxSuppression", ["boxes", "scores", "k"], ["sel"], name="nms")],
     [F("boxes", [1, 6, 4]), F("scores", [1, 1, 6]), I("k", [1])], [I("sel", None)])
save("compress_runtime", [h.make_node("Compress", ["x", "c"], ["y"], name="pick", axis=0)],
     [F("x", [4, 2]), h.make_tensor_value_info("c", T.BOOL, [4])], [F("y", None)])
save("roialign", [h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="align", output_height=2,
                              output_width=2, sampling_ratio=0)],
     [F("x", [1, 2, 8, 8]), F("rois", [3, 4]), I("bi", [3])], [F("y", None)])
