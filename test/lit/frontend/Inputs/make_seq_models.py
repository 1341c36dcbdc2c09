#!/usr/bin/env python3
"""Writes small ai.onnx Attention (opset 23) and LSTM models for seq-ops.test.

Usage: make_seq_models.py OUT_DIR. Each attention model is one Attention
node with static shapes (odd lengths); the names say the form. The LSTM
models are the forms the importer must refuse with a clear error.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def model(path, inputs, node_inputs, outputs, attrs, opset=23):
    vis = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    vos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    node = helper.make_node("Attention", node_inputs, outputs, **attrs)
    g = helper.make_graph([node], "attention", vis, vos)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f = TensorProto.FLOAT
    # 4-D plain: (B, H, S, D) with Sq != Sk.
    model(os.path.join(out, "plain4d.onnx"),
          [("Q", f, [2, 3, 5, 8]), ("K", f, [2, 3, 7, 8]), ("V", f, [2, 3, 7, 8])],
          ["Q", "K", "V"], ["Y"], {})
    # 3-D causal, 3 heads of 8.
    model(os.path.join(out, "causal3d.onnx"),
          [("Q", f, [2, 5, 24]), ("K", f, [2, 5, 24]), ("V", f, [2, 5, 24])],
          ["Q", "K", "V"], ["Y"], {"is_causal": 1, "q_num_heads": 3, "kv_num_heads": 3})
    # 4-D GQA causal: 6 query heads on 2 KV heads.
    model(os.path.join(out, "gqa_causal4d.onnx"),
          [("Q", f, [1, 6, 5, 8]), ("K", f, [1, 2, 5, 8]), ("V", f, [1, 2, 5, 8])],
          ["Q", "K", "V"], ["Y"], {"is_causal": 1})
    # 4-D causal with a past of 3: the mask is the shifted diagonal k <= q + 3.
    model(os.path.join(out, "causal_past4d.onnx"),
          [("Q", f, [1, 2, 4, 8]), ("K", f, [1, 2, 4, 8]), ("V", f, [1, 2, 4, 8]),
           ("past_key", f, [1, 2, 3, 8]), ("past_value", f, [1, 2, 3, 8])],
          ["Q", "K", "V", "", "past_key", "past_value"], ["Y", "present_key", "present_value"],
          {"is_causal": 1})
    # A 3-D input without q_num_heads is malformed.
    model(os.path.join(out, "bad3d.onnx"),
          [("Q", f, [2, 5, 24]), ("K", f, [2, 5, 24]), ("V", f, [2, 5, 24])],
          ["Q", "K", "V"], ["Y"], {})

    lstm_models(out)


def lstm_graph(name, x_shape, hidden=3):
    rng = np.random.default_rng(0)
    inp = x_shape[2]
    w = helper.make_tensor("W", TensorProto.FLOAT, [1, 4 * hidden, inp],
                           rng.standard_normal(4 * hidden * inp).astype(np.float32))
    r = helper.make_tensor("R", TensorProto.FLOAT, [1, 4 * hidden, hidden],
                           rng.standard_normal(4 * hidden * hidden).astype(np.float32))
    node = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], name=name, hidden_size=hidden)
    return node, [w, r]


def lstm_models(out):
    f = TensorProto.FLOAT
    for fname, shape in [("lstm_dynamic.onnx", ["T", 2, 4]), ("lstm_long.onnx", [2000, 1, 4])]:
        node, inits = lstm_graph("the_lstm", shape)
        g = helper.make_graph([node], "lstm", [helper.make_tensor_value_info("X", f, shape)],
                              [helper.make_tensor_value_info("Y", f, None)], inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
                  os.path.join(out, fname))
    # An If whose branches hold an LSTM (supported) and a StringNormalizer (not).
    node, inits = lstm_graph("inner_lstm", [5, 2, 4])
    then_g = helper.make_graph([node], "then", [], [helper.make_tensor_value_info("Y", f, None)],
                               inits)
    uniq = helper.make_node("StringNormalizer", ["X"], ["U"], name="inner_strnorm")
    else_g = helper.make_graph([uniq], "else", [], [helper.make_tensor_value_info("U", f, None)])
    if_node = helper.make_node("If", ["c"], ["out"], name="the_if", then_branch=then_g,
                               else_branch=else_g)
    g = helper.make_graph([if_node], "if_lstm",
                          [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("X", f, [5, 2, 4])],
                          [helper.make_tensor_value_info("out", f, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
              os.path.join(out, "if_lstm.onnx"))
    # An If on a Constant condition: the then branch (which reads the outer
    # X and a branch initializer) is inlined; the else branch's StringNormalizer is
    # never imported.
    one = helper.make_tensor("one", f, [1], [1.0])
    add = helper.make_node("Add", ["X", "one"], ["Y"], name="inner_add")
    then_g = helper.make_graph([add], "then", [], [helper.make_tensor_value_info("Y", f, None)],
                               [one])
    cond = helper.make_node("Constant", [], ["c"], name="cond",
                            value=helper.make_tensor("cv", TensorProto.BOOL, [], [True]))
    if_node = helper.make_node("If", ["c"], ["out"], name="the_if", then_branch=then_g,
                               else_branch=else_g)
    g = helper.make_graph([cond, if_node], "if_const",
                          [helper.make_tensor_value_info("X", f, [5, 2, 4])],
                          [helper.make_tensor_value_info("out", f, [5, 2, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]),
              os.path.join(out, "if_const.onnx"))

    scan_models(out)


def scan_models(out):
    # A running sum over 3 rows (reversed input, states and a scan output),
    # and the same over a symbolic length, which fusec cannot unroll.
    f = TensorProto.FLOAT
    add = helper.make_node("Add", ["s_in", "row"], ["s_out"])
    ident = helper.make_node("Identity", ["s_out"], ["scan_out"])
    body = helper.make_graph([add, ident], "body",
                             [helper.make_tensor_value_info("s_in", f, [2]),
                              helper.make_tensor_value_info("row", f, [2])],
                             [helper.make_tensor_value_info("s_out", f, [2]),
                              helper.make_tensor_value_info("scan_out", f, [2])])
    for fname, n in [("scan_static.onnx", 3), ("scan_dynamic.onnx", "N")]:
        scan = helper.make_node("Scan", ["init", "x"], ["final", "all"], name="the_scan", body=body,
                                num_scan_inputs=1, scan_input_directions=[1])
        g = helper.make_graph([scan], "scan",
                              [helper.make_tensor_value_info("init", f, [2]),
                               helper.make_tensor_value_info("x", f, [n, 2])],
                              [helper.make_tensor_value_info("final", f, None),
                               helper.make_tensor_value_info("all", f, None)])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]),
                  os.path.join(out, fname))


if __name__ == "__main__":
    main()
