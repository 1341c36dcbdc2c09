#!/usr/bin/env python3
"""Writes small ai.onnx Attention (opset 23) models for onnx-attention.test.

Usage: make_attention23.py OUT_DIR. Each model is one Attention node with
static shapes (batch 2, odd lengths); the names say the form.
"""
import os
import sys

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


if __name__ == "__main__":
    main()
