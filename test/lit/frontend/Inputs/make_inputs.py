#!/usr/bin/env python3
"""Regenerates the tiny .onnx models the frontend lit tests import.

Run from this folder: python3 make_inputs.py (needs the onnx package).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, name):
    onnx.save(model, name)


def mlp():
    # x[batch,4] -> MatMul(w) -> Add(b) -> Relu; one unnamed node.
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 8, "w")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 1.0], dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="layer0/matmul"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="layer0/add"),
        helper.make_node("Relu", ["hb"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [w, b])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "mlp.onnx")


def softmax11():
    # Opset-11 Softmax (2-D coercion at axis 1) and ReduceMean with an axes attribute.
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], name="sm", axis=1),
        helper.make_node("ReduceMean", ["s"], ["y"], name="mean", axes=[2], keepdims=1),
    ]
    g = helper.make_graph(
        nodes, "softmax11",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 1])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), "softmax11.onnx")


def unsupported():
    # Two ops fusec lacks plus one custom-domain op.
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="find"),
        helper.make_node("Relu", ["x"], ["r"], name="ok"),
        helper.make_node("TopK", ["r", "k"], ["v", "i"], name="top"),
        helper.make_node("FastGelu", ["r"], ["g"], name="fast", domain="com.microsoft"),
    ]
    k = numpy_helper.from_array(np.array([2], dtype=np.int64), "k")
    g = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [1, None]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, [4])],
        [k])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)]),
         "unsupported.onnx")


def opset9():
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), "opset9.onnx")


def external():
    # Initializer stored in an external file that escapes the model folder.
    w = numpy_helper.from_array(np.ones(2, dtype=np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", "../escape.bin"
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
         "external_escape.onnx")


if __name__ == "__main__":
    mlp()
    softmax11()
    unsupported()
    opset9()
    external()
    with open("truncated.onnx", "wb") as f:
        data = open("mlp.onnx", "rb").read()
        f.write(data[: len(data) // 2])
