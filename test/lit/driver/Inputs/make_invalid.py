"""Writes invalid one- or two-node models (issue 10) into the folder given as
argv[1], each as NAME/model.onnx with NAME/data (inputs and a zero expected
output): fusec must refuse each on every path, naming the node."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper

out = sys.argv[1]
F, I = TP.FLOAT, TP.INT64


def save(name, nodes, inputs, outputs, inits=(), feeds=(), opset=17, domains=()):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    g = helper.make_graph(nodes, name, inputs, outputs,
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, v) for d, v in domains])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(feeds):
        with open(os.path.join(d, "data", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, o in enumerate(outputs):
        dims = [d.dim_value for d in o.type.tensor_type.shape.dim]
        dt = np.int64 if o.type.tensor_type.elem_type == I else np.float32
        with open(os.path.join(d, "data", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.zeros(dims, dt), o.name).SerializeToString())


def vi(n, t, s):
    return helper.make_tensor_value_info(n, t, s)


x8 = np.arange(8, dtype=np.float32)
xi = np.arange(8, dtype=np.int64)
# Clip bounds and Pad's constant_value must be scalars.
save("clip_const_f32", [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip_c")],
     [vi("x", F, [8])], [vi("y", F, [8])], inits=[("lo", np.ones(8, np.float32))],
     feeds=[("x", x8)])
save("clip_runtime_i64", [helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip_r")],
     [vi("x", I, [8]), vi("hi", I, [8])], [vi("y", I, [8])], feeds=[("x", xi), ("hi", xi)])
save("clip_fused_exp", [helper.make_node("Exp", ["x"], ["e"], name="exp"),
                        helper.make_node("Clip", ["e", "lo", "hi"], ["y"], name="clip_f")],
     [vi("x", F, [8])], [vi("y", F, [8])],
     inits=[("lo", np.zeros(8, np.float32)), ("hi", np.array(2, np.float32))], feeds=[("x", x8)])
save("pad_nonscalar", [helper.make_node("Pad", ["x", "pads", "v"], ["y"], name="pad_v")],
     [vi("x", F, [8])], [vi("y", F, [10])],
     inits=[("pads", np.array([1, 1], np.int64)), ("v", np.array([1, 2], np.float32))],
     feeds=[("x", x8)])
# training_mode as a runtime input.
save("dropout_runtime", [helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")],
     [vi("x", F, [8]), vi("t", TP.BOOL, [])], [vi("y", F, [8])],
     inits=[("r", np.array(0.5, np.float32))], feeds=[("x", x8), ("t", np.array(True))])
# Attributes of the wrong kind.
save("softmax_axis_float", [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0.5)],
     [vi("x", F, [2, 4])], [vi("y", F, [2, 4])], feeds=[("x", x8.reshape(2, 4))])
save("leakyrelu_alpha_floats",
     [helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha=[1.0, 2.0])],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)])
# Red team, stop 24. Pad reflect by more than extent - 1 (onnxruntime refuses;
# the cpu artifact computed other numbers than the reference).
save("pad_reflect_large", [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_r", mode="reflect")],
     [vi("x", F, [2, 2])], [vi("y", F, [2, 12])],
     inits=[("pads", np.array([0, 5, 0, 5], np.int64))], feeds=[("x", x8[:4].reshape(2, 2))])
# Conv whose kernel_shape disagrees with W (the output shape followed the attribute).
save("conv_kernel_shape", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_k", kernel_shape=[2, 2])],
     [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 3, 3])],
     inits=[("w", np.ones((1, 1, 3, 3), np.float32))], feeds=[("x", np.ones((1, 1, 4, 4), np.float32))])
# A graph input with an initializer: compiled in as a constant, with a warning.
save("input_default", [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
     [vi("x", F, [8]), vi("w", F, [8])], [vi("y", F, [8])],
     inits=[("w", np.ones(8, np.float32))], feeds=[("x", x8)])
# u64 values at or above 2^63, folded at compile time: the reference computes
# them unsigned (Div, Greater, Max, Cast to float), as onnxruntime does.
U = TP.UINT64
big = np.array([2**64 - 1, 2**63, 7, 2**63 + 5], np.uint64)
save("u64_fold", [helper.make_node("Div", ["a", "two"], ["d"], name="u64_div"),
                  helper.make_node("Greater", ["a", "seven"], ["g"], name="u64_gt"),
                  helper.make_node("Max", ["a", "seven"], ["m"], name="u64_max"),
                  helper.make_node("Cast", ["d"], ["f"], name="u64_cast", to=TP.DOUBLE),
                  helper.make_node("Cast", ["g"], ["gf"], name="g_cast", to=TP.DOUBLE),
                  helper.make_node("Cast", ["m"], ["mf"], name="m_cast", to=TP.DOUBLE),
                  helper.make_node("Concat", ["f", "gf", "mf"], ["c"], name="cat", axis=0),
                  helper.make_node("Add", ["x", "c"], ["y"], name="add_c")],
     [vi("x", TP.DOUBLE, [12])], [vi("y", TP.DOUBLE, [12])],
     inits=[("a", big), ("two", np.array([2, 2, 2, 2], np.uint64)), ("seven", np.full(4, 7, np.uint64))],
     feeds=[("x", np.zeros(12))])
want = np.concatenate([(big // 2).astype(np.float64), (big > 7).astype(np.float64),
                       np.maximum(big, 7).astype(np.float64)])
with open(os.path.join(out, "u64_fold", "data", "output_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(want, "y").SerializeToString())
# A 3,000-node elementwise chain: split into kernels of at most 512 nodes
# (it took minutes as one kernel on cpu).
chain = []
prev = "x"
for i in range(3000):
    chain.append(helper.make_node("Sigmoid" if i % 2 else "Tanh", [prev], ["c%d" % i], name="n%d" % i))
    prev = "c%d" % i
chain[-1].output[0] = "y"
save("long_chain", chain, [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)])
v = x8.astype(np.float64)
for i in range(3000):
    v = 1 / (1 + np.exp(-v)) if i % 2 else np.tanh(v)
with open(os.path.join(out, "long_chain", "data", "output_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(v.astype(np.float32), "y").SerializeToString())
# Checked against the op's schema at the declared opset: an attribute the
# version does not have, an input it does not take (ReduceSum's axes input
# arrived in ReduceSum-13).
save("relu_bogus_attr", [helper.make_node("Relu", ["x"], ["y"], name="relu_b", bogus=3)],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)])
save("reducesum_axes_input_11", [helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="rs11")],
     [vi("x", F, [2, 4])], [vi("y", F, [1, 4])], inits=[("ax", np.array([0], np.int64))],
     feeds=[("x", x8.reshape(2, 4))], opset=11)
# A Resize scale whose output length does not fit int64 (fuzzing, stop 25:
# the float-to-int conversion was undefined behaviour).
save("resize_huge_scale", [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs_huge", mode="nearest")],
     [vi("x", F, [1, 8])], [vi("y", F, None)], inits=[("sc", np.array([1.0, 1e30], np.float32))],
     feeds=[("x", x8.reshape(1, 8))])
# Above the linked registry's opset 17 (fusec's generated OnnxSchemas.inc):
# Split-18 has no 'split' attribute (it became an input in Split-13), Gelu
# exists from opset 20, and Relu-14 still has no 'bogus' at opset 21.
save("split_attr_18", [helper.make_node("Split", ["x"], ["a", "b"], name="split18", axis=0, split=[4, 4])],
     [vi("x", F, [8])], [vi("a", F, [4]), vi("b", F, [4])], feeds=[("x", x8)], opset=18)
save("gelu_17", [helper.make_node("Gelu", ["x"], ["y"], name="gelu17")],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)], opset=17)
save("gelu_19", [helper.make_node("Gelu", ["x"], ["y"], name="gelu19")],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)], opset=19)
save("relu_bogus_21", [helper.make_node("Relu", ["x"], ["y"], name="relu21", bogus=3)],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)], opset=21)
save("split_18_ok", [helper.make_node("Split", ["x"], ["a", "b"], name="split18ok", axis=0, num_outputs=2)],
     [vi("x", F, [8])], [vi("a", F, [4]), vi("b", F, [4])], feeds=[("x", x8)], opset=18)
# Red team, stop 25: invalid attribute and operand values that fusec compiled
# while the reference or onnxruntime refused them.
save("gelu20_bad_approx", [helper.make_node("Gelu", ["x"], ["y"], name="gelu_fast", approximate="fast")],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)], opset=20)
save("reduce_axes_dup", [helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="rs_dup")],
     [vi("x", F, [2, 4])], [vi("y", F, [2, 1])], inits=[("ax", np.array([1, -1], np.int64))],
     feeds=[("x", x8.reshape(2, 4))], opset=13)
save("maxpool_pad_ge_kernel", [helper.make_node("MaxPool", ["x"], ["y"], name="mp_pad", kernel_shape=[2, 2], pads=[3, 3, 3, 3])],
     [vi("x", F, [1, 1, 4, 4])], [vi("y", F, None)], feeds=[("x", np.ones((1, 1, 4, 4), np.float32))])
save("avgpool_pad_ge_kernel", [helper.make_node("AveragePool", ["x"], ["y"], name="ap_pad", kernel_shape=[3, 2], pads=[0, 2, 0, 0])],
     [vi("x", F, [1, 1, 4, 4])], [vi("y", F, None)], feeds=[("x", np.ones((1, 1, 4, 4), np.float32))])
save("split18_both", [helper.make_node("Split", ["x", "s"], ["a", "b"], name="split_both", axis=0, num_outputs=2)],
     [vi("x", F, [8])], [vi("a", F, [4]), vi("b", F, [4])], inits=[("s", np.array([4, 4], np.int64))],
     feeds=[("x", x8)], opset=18)
save("dropout_ratio_bad", [helper.make_node("Dropout", ["x", "r"], ["y"], name="drop_r")],
     [vi("x", F, [8])], [vi("y", F, [8])], inits=[("r", np.array(1.5, np.float32))], feeds=[("x", x8)], opset=13)
save("dropout_ratio_neg", [helper.make_node("Dropout", ["x", "r"], ["y"], name="drop_n")],
     [vi("x", F, [8])], [vi("y", F, [8])], inits=[("r", np.array(-0.5, np.float32))], feeds=[("x", x8)], opset=13)
# Sign(NaN) is NaN and pow(-0.0, odd negative integer) is -inf in the cpu
# artifact as in the reference (stop 25: 0 and +inf).
def save_expected(name, arrays):
    for i, (n, a) in enumerate(arrays):
        with open(os.path.join(out, name, "data", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
xs = np.array([np.nan, -2.0, -0.0, 0.0, 3.0, np.inf, -np.inf, np.nan], np.float32)
save("sign_nan", [helper.make_node("Sign", ["x"], ["y"], name="sgn")],
     [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", xs)])
save_expected("sign_nan", [("y", np.sign(xs))])
pb = np.array([-0.0, -0.0, 0.0, -0.0, -2.0, -0.0, 4.0, -0.0], np.float32)
pe = np.array([-1.0, -3.0, -1.0, -2.0, 3.0, 0.5, 0.5, 3.0], np.float32)
save("pow_negzero", [helper.make_node("Pow", ["x", "e"], ["y"], name="pw")],
     [vi("x", F, [8]), vi("e", F, [8])], [vi("y", F, [8])], feeds=[("x", pb), ("e", pe)])
with np.errstate(divide="ignore"):
    save_expected("pow_negzero", [("y", np.power(pb, pe))])
# F3: a constant sequence_lens outside [0, seq_length] (GRU, LSTM, RNN) or
# seqlens_k outside [0, total_sequence_length) (GroupQueryAttention):
# onnxruntime refuses them; fusec computed something.
x213 = np.ones((2, 1, 3), np.float32)
for name, sl in (("gru_seqlen_oob", 100), ("gru_seqlen_neg", -7)):
    save(name, [helper.make_node("GRU", ["x", "W", "R", "", "sl"], ["Y"], name="gru_sl", hidden_size=2)],
         [vi("x", F, [2, 1, 3])], [vi("Y", F, [2, 1, 1, 2])],
         inits=[("W", np.ones((1, 6, 3), np.float32)), ("R", np.ones((1, 6, 2), np.float32)),
                ("sl", np.array([sl], np.int32))], feeds=[("x", x213)])
save("lstm_seqlen_oob", [helper.make_node("LSTM", ["x", "W", "R", "", "sl"], ["Y"], name="lstm_sl", hidden_size=2)],
     [vi("x", F, [2, 1, 3])], [vi("Y", F, [2, 1, 1, 2])],
     inits=[("W", np.ones((1, 8, 3), np.float32)), ("R", np.ones((1, 8, 2), np.float32)),
            ("sl", np.array([3], np.int32))], feeds=[("x", x213)])
save("gqa_seqlens_oob", [helper.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "sl", "tsl"], ["o"],
                                          name="gqa_sl", domain="com.microsoft", num_heads=2, kv_num_heads=1, causal=0)],
     [vi("q", F, [1, 4, 16]), vi("k", F, [1, 4, 8]), vi("v", F, [1, 4, 8])], [vi("o", F, [1, 4, 16])],
     inits=[("sl", np.array([100], np.int32)), ("tsl", np.array(4, np.int32))],
     feeds=[("q", np.ones((1, 4, 16), np.float32)), ("k", np.ones((1, 4, 8), np.float32)),
            ("v", np.ones((1, 4, 8), np.float32))], domains=[("com.microsoft", 1)])
# F5: ReduceLogSumExp as max + log(sum(exp(x - max))): inputs around +-1000
# gave +-inf (the log of an overflowed sum); a row of -inf stays -inf.
xl = np.array([[1000, 1000, 999], [-1000, -1000, -1001], [-np.inf, -np.inf, -np.inf], [1, 2, 3]], np.float32)
def lse(a, axis, keep):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(a.astype(np.float64) - m), axis=axis, keepdims=True)) + m
    return (r if keep else np.squeeze(r, axis)).astype(np.float32)
save("reducelogsumexp_big13", [helper.make_node("ReduceLogSumExp", ["x"], ["y"], name="rlse13", axes=[1], keepdims=0)],
     [vi("x", F, [4, 3])], [vi("y", F, [4])], feeds=[("x", xl)], opset=13)
save_expected("reducelogsumexp_big13", [("y", lse(xl, 1, False))])
save("reducelogsumexp_big18", [helper.make_node("ReduceLogSumExp", ["x", "ax"], ["y"], name="rlse18")],
     [vi("x", F, [4, 3])], [vi("y", F, [1, 3])], inits=[("ax", np.array([0], np.int64))], feeds=[("x", xl)], opset=18)
save_expected("reducelogsumexp_big18", [("y", lse(xl, 0, True))])
# Red team s26: Pad-18 with an axis named twice (the compiler summed both
# pads into a [2, 10] output; the reference and onnxruntime refuse it), and
# ConstantOfShape whose 'value' has two elements (the compiler filled with
# the first; the reference and onnxruntime refuse it).
save("pad_axes_dup", [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], name="pad_dup")],
     [vi("x", F, [2, 4])], [vi("y", F, [2, 10])],
     inits=[("p", np.array([1, 1, 2, 2], np.int64)), ("ax", np.array([1, -1], np.int64))],
     feeds=[("x", np.ones((2, 4), np.float32))], opset=18)
save("constantofshape_two_values", [helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos2",
                                                     value=numpy_helper.from_array(np.array([1.5, 2.0], np.float32)))],
     [], [vi("y", F, [2, 3])], inits=[("s", np.array([2, 3], np.int64))], opset=17)
# Schema leniencies (red team s26 G3-G5): a duplicate attribute, an INT where
# a FLOAT is declared, a domain imported twice, com.microsoft opset 99.
lr = helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu")
lr.attribute.extend([helper.make_attribute("alpha", 0.5), helper.make_attribute("alpha", 2.0)])
save("attr_twice", [lr], [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)])
lri = helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu_i")
lri.attribute.extend([helper.make_attribute("alpha", 3)])
save("attr_int_for_float", [lri], [vi("x", F, [8])], [vi("y", F, [8])], feeds=[("x", x8)])
save("opset_twice", [helper.make_node("Relu", ["x"], ["y"], name="relu2")],
     [vi("x", F, [8])], [vi("y", F, [8])], domains=[("ai.onnx", 22)])
save("ms_opset_99", [helper.make_node("Relu", ["x"], ["y"], name="relu_ms")],
     [vi("x", F, [8])], [vi("y", F, [8])], domains=[("com.microsoft", 99)])
# GridSample-16's mode names at opset 22 (renamed at 20; red team s26 G7).
save("gridsample_old_mode", [helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="bilinear")],
     [vi("x", F, [1, 1, 4, 4]), vi("g", F, [1, 2, 2, 2])], [vi("y", F, [1, 1, 2, 2])], opset=22)
