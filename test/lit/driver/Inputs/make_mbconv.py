#!/usr/bin/env python3
"""Writes argv[1]/{mbconv,gemm_swish}.onnx with test_data_set_0 (inputs and
onnx.reference's outputs): an EfficientNet-style block (1x1 expansion Conv,
SiLU as x * Sigmoid(x), depthwise 3x3 Conv, SiLU, squeeze-excite, 1x1
projection Conv, residual Add) over x f32[2, 8, 9, 7], and a MatMul followed
by ONNX Swish-24 with alpha 1.702. Used by cnn-epilogues.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
rng = np.random.default_rng(3)
inits = []


def w(name, shape, scale=0.3):
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
    return name


def save(name, graph_nodes, inputs, outputs, opset, feeds):
    g = helper.make_graph(graph_nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    got = ReferenceEvaluator(m).run(None, feeds)
    for i, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (o, v) in enumerate(zip(outputs, got)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(v, o.name).SerializeToString())


C, E = 8, 16
nodes = [
    helper.make_node("Conv", ["x", w("we", [E, C, 1, 1]), w("be", [E])], ["e"], name="expand"),
    helper.make_node("Sigmoid", ["e"], ["es"], name="expand_sig"),
    helper.make_node("Mul", ["e", "es"], ["ea"], name="expand_silu"),
    helper.make_node("Conv", ["ea", w("wd", [E, 1, 3, 3]), w("bd", [E])], ["dw"], group=E,
                     pads=[1, 1, 1, 1], name="depthwise"),
    helper.make_node("Sigmoid", ["dw"], ["dws"], name="dw_sig"),
    helper.make_node("Mul", ["dws", "dw"], ["dwa"], name="dw_silu"),
    helper.make_node("GlobalAveragePool", ["dwa"], ["p"], name="squeeze"),
    helper.make_node("Conv", ["p", w("wr", [4, E, 1, 1]), w("br", [4])], ["r"], name="reduce"),
    helper.make_node("Sigmoid", ["r"], ["rs"], name="reduce_sig"),
    helper.make_node("Mul", ["r", "rs"], ["ra"], name="reduce_silu"),
    helper.make_node("Conv", ["ra", w("wx", [E, 4, 1, 1]), w("bx", [E])], ["s"], name="excite"),
    helper.make_node("Sigmoid", ["s"], ["sg"], name="gate"),
    helper.make_node("Mul", ["dwa", "sg"], ["h"], name="scale"),
    helper.make_node("Conv", ["h", w("wp", [C, E, 1, 1]), w("bp", [C])], ["pr"], name="project"),
    helper.make_node("Add", ["pr", "x"], ["y"], name="residual"),
]
x = rng.standard_normal((2, C, 9, 7)).astype(np.float32)
save("mbconv", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 9, 7])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, C, 9, 7])], 17, {"x": x})

inits.clear()
nodes = [helper.make_node("MatMul", ["a", w("wm", [12, 20])], ["m"], name="proj"),
         helper.make_node("Swish", ["m"], ["y"], alpha=1.702, name="swish")]
a = rng.standard_normal((3, 12)).astype(np.float32)
save("gemm_swish", nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 12])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 20])], 24, {"a": a})
