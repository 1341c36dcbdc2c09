"""Models for shape-chain.test: a recurrent op whose sequence length is
decided by a chain of shape arithmetic, as torch exports a reflect Pad
before an LSTM (silero-VAD style): the pads come from Shape / Gather / Sub /
Concat / Cast, computable while importing because the dims they read are
static, while the batch dim stays symbolic. Expected outputs come from
onnxruntime.

  python3 make_shape_chain.py OUTDIR
writes OUTDIR/{pad_lstm,pad_lstm_symbolic}/model.onnx and test data, and
OUTDIR/huge_chain.onnx: a Reshape whose shape a chain computes through a
ConstantOfShape of 2*10^9 bytes (never evaluated while importing).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def c64(name, vals):
    return helper.make_node("Constant", [], [name], name=name,
                            value=helper.make_tensor(name + "_v", I64, [len(vals)], vals))


def model(t_dim, batch_dim):
    T, B, IN, H = 5, 2, 3, 4
    # pads_end_T = Shape(X)[0] - 2 (reflect needs pad < dim), built like an
    # exporter's chain: Shape -> Gather -> Sub -> Unsqueeze -> Concat -> Cast.
    nodes = [
        helper.make_node("Shape", ["X"], ["shp"], name="shp"),
        c64("zero_idx", [0]),
        helper.make_node("Gather", ["shp", "zero_idx"], ["t"], name="gather_t", axis=0),
        c64("two", [2]),
        helper.make_node("Sub", ["t", "two"], ["tpad"], name="sub"),
        c64("head", [0, 0, 0]),
        c64("tail", [0, 0]),
        helper.make_node("Concat", ["head", "tpad", "tail"], ["pads_i"], name="concat", axis=0),
        helper.make_node("Cast", ["pads_i"], ["pads"], name="cast", to=I64),
        helper.make_node("Pad", ["X", "pads"], ["Xp"], name="reflect_pad", mode="reflect"),
        helper.make_node("LSTM", ["Xp", "W", "R", "Bias"], ["Y", "Yh"], name="the_lstm",
                         hidden_size=H),
    ]
    inits = [
        numpy_helper.from_array((rng.standard_normal((1, 4 * H, IN)) * 0.5).astype(np.float32), "W"),
        numpy_helper.from_array((rng.standard_normal((1, 4 * H, H)) * 0.5).astype(np.float32), "R"),
        numpy_helper.from_array((rng.standard_normal((1, 8 * H)) * 0.1).astype(np.float32), "Bias"),
    ]
    g = helper.make_graph(nodes, "pad_lstm",
                          [helper.make_tensor_value_info("X", F, [t_dim, batch_dim, IN])],
                          [helper.make_tensor_value_info("Y", F, None),
                           helper.make_tensor_value_info("Yh", F, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    return m, (T, B, IN)


for name, t_dim, b_dim in [("pad_lstm", 5, "batch"), ("pad_lstm_symbolic", "T", "batch")]:
    m, (T, B, IN) = model(t_dim, b_dim)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = rng.standard_normal((T, B, IN)).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y, yh = sess.run(None, {"X": x})
    sd = os.path.join(d, "test_data_set_0")
    for fname, n, a in [("input_0.pb", "X", x), ("output_0.pb", "Y", y), ("output_1.pb", "Yh", yh)]:
        with open(os.path.join(sd, fname), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())


# A chain whose evaluation would allocate 2*10^9 bytes (under the IR's size
# limit): Reshape(x, Concat(Cast(ReduceMax(ConstantOfShape([40000, 50000],
# u8 2))), [-1])).
nodes = [
    c64("big_shape", [40000, 50000]),
    helper.make_node("ConstantOfShape", ["big_shape"], ["big"], name="big",
                     value=helper.make_tensor("two", TensorProto.UINT8, [1], [2])),
    helper.make_node("ReduceMax", ["big"], ["m8"], name="rmax", keepdims=0),
    helper.make_node("Unsqueeze", ["m", "ax0"], ["m1"], name="unsq"),
    helper.make_node("Cast", ["m8"], ["m"], name="cast", to=I64),
    c64("ax0", [0]),
    c64("minus1", [-1]),
    helper.make_node("Concat", ["m1", "minus1"], ["shape"], name="cat", axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
]
# Constants first (topological order).
nodes = [nodes[0], nodes[5], nodes[6], nodes[1], nodes[2], nodes[4], nodes[3], nodes[7], nodes[8]]
g = helper.make_graph(nodes, "huge_chain", [helper.make_tensor_value_info("x", F, [6, 4])],
                      [helper.make_tensor_value_info("y", F, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 9
onnx.save(m, os.path.join(out, "huge_chain.onnx"))


# Slice ends = Div(INT64_MIN, -1): the shape-data tracking divided and
# trapped (SIGFPE); the interpreter wraps to INT64_MIN.
nodes = [
    c64("imin", [-(2 ** 63)]),
    c64("m1", [-1]),
    helper.make_node("Div", ["imin", "m1"], ["ends"], name="div"),
    c64("starts", [0]),
    helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="slice"),
]
g = helper.make_graph(nodes, "intmin_div", [helper.make_tensor_value_info("x", F, [6, 4])],
                      [helper.make_tensor_value_info("y", F, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 9
onnx.save(m, os.path.join(out, "intmin_div.onnx"))

# DynamicQuantizeLSTM over 40 steps: the centred i32 recurrent weight is made
# once, not once per step (red team s27: a T=200 model's weights.bin was
# 624 times the model).
T2, B2, I2, H2 = 40, 1, 3, 4
wq = rng.integers(0, 255, (1, I2, 4 * H2), dtype=np.uint8)
rq = rng.integers(0, 255, (1, H2, 4 * H2), dtype=np.uint8)
inits = [numpy_helper.from_array(wq, "Wq"), numpy_helper.from_array(rq, "Rq"),
         numpy_helper.from_array(np.array([0.01], np.float32), "ws"),
         numpy_helper.from_array(np.array([128], np.uint8), "wz"),
         numpy_helper.from_array(np.array([0.02], np.float32), "rs"),
         numpy_helper.from_array(np.array([127], np.uint8), "rz")]
node = helper.make_node("DynamicQuantizeLSTM", ["X", "Wq", "Rq", "", "", "", "", "", "ws", "wz", "rs", "rz"],
                        ["Y"], name="dq", domain="com.microsoft", hidden_size=H2)
g = helper.make_graph([node], "dq_long", [helper.make_tensor_value_info("X", F, [T2, B2, I2])],
                      [helper.make_tensor_value_info("Y", F, None)], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)])
m.ir_version = 9
onnx.save(m, os.path.join(out, "dq_long.onnx"))
