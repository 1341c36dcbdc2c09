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
        helper.make_node("TfIdfVectorizer", ["r"], ["v"], name="tfidf", mode="TF", min_gram_length=1,
                         max_gram_length=1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[0],
                         pool_int64s=[1]),
        helper.make_node("FastGelu", ["r"], ["g"], name="fast", domain="com.microsoft"),
    ]
    g = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [1, None]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, [4])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)]),
         "unsupported.onnx")


def opset9():
    # Opset 9 is read as opset 11 where no op changed in between: Relu-6 did
    # not; MaxPool-8 (MaxPool-10, -11), Flatten-9 and Gemm-9 (-11) did.
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="r"),
         helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "w"], ["y"], name="fc")], "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [4, 2], [0.5] * 8)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), "opset9.onnx")


def opset9_relu():
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), "opset9_relu.onnx")


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


def functions():
    # ONNX function ops the importer expands from the ONNX library's bodies
    # (HardSwish, Mish, PRelu, Softsign, Celu, CastLike) after a MatMul.
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8) / 64 - 0.5, "w")
    slope = numpy_helper.from_array(np.full([8], 0.25, dtype=np.float32), "slope")
    like = numpy_helper.from_array(np.zeros([1], dtype=np.float32), "like")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("HardSwish", ["h"], ["a"], name="act_hs"),
        helper.make_node("Mish", ["a"], ["b"], name="act_mish"),
        helper.make_node("PRelu", ["b", "slope"], ["c"], name="act_prelu"),
        helper.make_node("Softsign", ["c"], ["d"], name="act_softsign"),
        helper.make_node("Celu", ["d"], ["e"], name="act_celu", alpha=0.5),
        helper.make_node("CastLike", ["e", "like"], ["y"], name="to_like"),
    ]
    g = helper.make_graph(
        nodes, "functions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [w, slope, like])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), "functions.onnx")


def functions_unsupported():
    # Function ops without a usable body, and an If on a run-time condition
    # whose branch holds an LSTM and a HardSwish (both supported, not listed).
    then_g = helper.make_graph(
        [helper.make_node("HardSwish", ["x"], ["t0"], name="then_hs"),
         helper.make_node("LSTM", ["t0", "lw", "lr"], ["t1"], name="then_lstm", hidden_size=2)],
        "then", [], [helper.make_tensor_value_info("t1", TensorProto.FLOAT, None)])
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e0"], name="else_relu")],
        "else", [], [helper.make_tensor_value_info("e0", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("GroupNormalization", ["x", "s", "b"], ["gn_out"], name="gn",
                         num_groups=2),
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="ag"),
        helper.make_node("If", ["cond"], ["branch_out"], name="choose",
                         then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "functions_unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("theta", TensorProto.FLOAT, [1, 2, 3]),
         helper.make_tensor_value_info("size", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("lw", TensorProto.FLOAT, [1, 8, 2]),
         helper.make_tensor_value_info("lr", TensorProto.FLOAT, [1, 8, 2])],
        [helper.make_tensor_value_info("gn_out", TensorProto.FLOAT, [1, 4, 2]),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("branch_out", TensorProto.FLOAT, None)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]),
         "functions_unsupported.onnx")


if __name__ == "__main__":
    mlp()
    softmax11()
    unsupported()
    opset9()
    opset9_relu()
    external()
    functions()
    functions_unsupported()
    with open("truncated.onnx", "wb") as f:
        data = open("mlp.onnx", "rb").read()
        f.write(data[: len(data) // 2])
