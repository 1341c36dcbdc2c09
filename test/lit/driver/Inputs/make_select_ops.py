#!/usr/bin/env python3
"""Writes the models of select-ops.test into argv[1]:

new_ops.onnx (+ test_data_set_0 with onnx.reference's outputs): TopK of
detection scores (k = 10 of 1000, with ties), smallest along a middle axis,
rows with NaN and -inf (largest and smallest, and their Hardmax); Einsum in the forms exporters
write (a batched attention "bhqd,bhkd->bhqk", a shared weight
"bij,jk->bik", a batch diagonal "...ii->...i", an implicit inner product,
an outer product "i,j->ij", a full sum "ij->"); OneHot of class ids;
ScatterND writing a KV-cache slice; ScatterElements with reduction add;
Hardmax; BitShift of u8.

And models each refused by `fusec -o` with a reason naming the node:
topk_large_k.onnx (k above the kernel's limit), topk_runtime_k.onnx (k a
graph input), scatter_many.onnx (more updates per element than the scatter
kernel scans), einsum_symbolic_diag.onnx (a diagonal over a symbolic dim).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def const(name, arr):
    return h.make_node("Constant", [], [name], name=name,
                       value=numpy_helper.from_array(np.asarray(arr), name))


def save(name, nodes, inputs, outputs, opset=19):
    g = h.make_graph(nodes, name, inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


def data(model, feeds, folder):
    d = os.path.join(out, folder)
    os.makedirs(d, exist_ok=True)
    res = ReferenceEvaluator(model).run(None, feeds)
    for i, (k, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(d, f"input_{i}.pb"))
    for i, (o, v) in enumerate(zip(model.graph.output, res)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(d, f"output_{i}.pb"))


V = lambda n, t, s: h.make_tensor_value_info(n, t, s)
nodes = [
    const("k10", np.array([10], np.int64)),
    h.make_node("TopK", ["scores", "k10"], ["top_v", "top_i"], name="top_scores"),
    const("k2", np.array([2], np.int64)),
    h.make_node("TopK", ["x3", "k2"], ["small_v", "small_i"], name="smallest_mid", axis=1, largest=0),
    const("k4", np.array([4], np.int64)),
    h.make_node("TopK", ["nans", "k4"], ["nan_big_v", "nan_big_i"], name="nan_largest"),
    h.make_node("TopK", ["nans", "k4"], ["nan_small_v", "nan_small_i"], name="nan_smallest", largest=0),
    h.make_node("Einsum", ["q", "kk"], ["att"], name="attention_scores", equation="bhqd,bhkd->bhqk"),
    h.make_node("Einsum", ["x3", "w"], ["proj"], name="shared_weight", equation="bij,jk->bik"),
    h.make_node("Einsum", ["sq"], ["diag"], name="batch_diag", equation="...ii->...i"),
    h.make_node("Einsum", ["va", "vb"], ["dot"], name="inner", equation="i,i"),
    h.make_node("Einsum", ["va", "vc"], ["outer"], name="outer", equation="i,j->ij"),
    h.make_node("Einsum", ["w"], ["total"], name="full_sum", equation="ij->"),
    const("depth", np.array(6, np.int64)),
    const("onoff", np.array([0.0, 1.0], np.float32)),
    h.make_node("OneHot", ["cls", "depth", "onoff"], ["onehot"], name="class_onehot"),
    h.make_node("ScatterND", ["cache", "pos", "newkv"], ["cache_out"], name="kv_write"),
    h.make_node("ScatterElements", ["hist", "bins", "ones"], ["hist_out"], name="histogram", axis=1,
                reduction="add"),
    h.make_node("Hardmax", ["x3"], ["hard"], name="hardmax", axis=-1),
    h.make_node("Hardmax", ["nans"], ["hard_nan"], name="hardmax_nan"),
    h.make_node("BitShift", ["bytes", "shifts"], ["shifted"], name="unpack", direction="RIGHT"),
]
ins = [V("scores", T.FLOAT, [2, 1000]), V("x3", T.FLOAT, [2, 5, 3]), V("q", T.FLOAT, [1, 2, 7, 8]),
       V("kk", T.FLOAT, [1, 2, 9, 8]), V("w", T.FLOAT, [3, 4]), V("sq", T.FLOAT, [2, 3, 4, 4]),
       V("va", T.FLOAT, [5]), V("vb", T.FLOAT, [5]), V("vc", T.FLOAT, [3]), V("cls", T.INT64, [4]),
       V("cache", T.FLOAT, [1, 2, 6, 4]), V("pos", T.INT64, [1, 2, 1, 3]), V("newkv", T.FLOAT, [1, 2, 1, 4]),
       V("hist", T.FLOAT, [2, 5]), V("bins", T.INT64, [2, 7]), V("ones", T.FLOAT, [2, 7]),
       V("bytes", T.UINT8, [8]), V("shifts", T.UINT8, [8]), V("nans", T.FLOAT, [2, 6])]
outs = [V("top_v", T.FLOAT, None), V("top_i", T.INT64, None), V("small_v", T.FLOAT, None),
        V("small_i", T.INT64, None), V("att", T.FLOAT, None), V("proj", T.FLOAT, None),
        V("diag", T.FLOAT, None), V("dot", T.FLOAT, None), V("outer", T.FLOAT, None),
        V("total", T.FLOAT, None), V("onehot", T.FLOAT, None), V("cache_out", T.FLOAT, None),
        V("hist_out", T.FLOAT, None), V("hard", T.FLOAT, None), V("shifted", T.UINT8, None),
        V("nan_big_v", T.FLOAT, None), V("nan_big_i", T.INT64, None), V("nan_small_v", T.FLOAT, None),
        V("nan_small_i", T.INT64, None), V("hard_nan", T.FLOAT, None)]
m = save("new_ops", nodes, ins, outs)
scores = rng.random((2, 1000)).astype(np.float32)
scores[0, 500:520] = 2.0  # ties among the top 10
pos = np.array([0, 0, 4, 0, 1, 4], np.int64).reshape(1, 2, 1, 3)  # (b, h, s) of the new token
feeds = {
    "scores": scores, "x3": rng.standard_normal((2, 5, 3)).astype(np.float32),
    "q": rng.standard_normal((1, 2, 7, 8)).astype(np.float32),
    "kk": rng.standard_normal((1, 2, 9, 8)).astype(np.float32),
    "w": rng.standard_normal((3, 4)).astype(np.float32),
    "sq": rng.standard_normal((2, 3, 4, 4)).astype(np.float32),
    "va": rng.standard_normal(5).astype(np.float32), "vb": rng.standard_normal(5).astype(np.float32),
    "vc": rng.standard_normal(3).astype(np.float32), "cls": np.array([0, 5, -1, 2], np.int64),
    "cache": rng.standard_normal((1, 2, 6, 4)).astype(np.float32), "pos": pos,
    "newkv": rng.standard_normal((1, 2, 1, 4)).astype(np.float32),
    "hist": np.zeros((2, 5), np.float32), "bins": rng.integers(0, 5, (2, 7)).astype(np.int64),
    "ones": np.ones((2, 7), np.float32),
    "bytes": np.array([255, 128, 7, 0, 200, 1, 64, 33], np.uint8),
    "shifts": np.array([0, 7, 1, 3, 4, 8, 6, 2], np.uint8),
    # NaN orders above every number (numpy's sort): first for largest, last for smallest.
    "nans": np.array([[1, np.nan, 2, np.nan, -np.inf, 2], [np.nan, 0, 5, -1, np.nan, np.nan]], np.float32),
}
data(m, feeds, "test_data_set_0")

save("topk_large_k", [const("k", np.array([300], np.int64)),
                      h.make_node("TopK", ["x", "k"], ["v", "i"], name="big_k")],
     [V("x", T.FLOAT, [2, 1000])], [V("v", T.FLOAT, None), V("i", T.INT64, None)])
save("topk_runtime_k", [h.make_node("TopK", ["x", "k"], ["v", "i"], name="runtime_k")],
     [V("x", T.FLOAT, [2, 100]), V("k", T.INT64, [1])], [V("v", T.FLOAT, None), V("i", T.INT64, None)])
save("scatter_many", [h.make_node("ScatterElements", ["d", "i", "u"], ["y"], name="wide_scatter", axis=1)],
     [V("d", T.FLOAT, [2, 8]), V("i", T.INT64, [2, 20000]), V("u", T.FLOAT, [2, 20000])],
     [V("y", T.FLOAT, None)])
save("einsum_symbolic_diag", [h.make_node("Einsum", ["x"], ["y"], name="sym_diag", equation="bii->bi")],
     [V("x", T.FLOAT, ["b", "n", "n"])], [V("y", T.FLOAT, None)])
