#!/usr/bin/env python3
"""Writes quantised models as ONNX Runtime's quantisation tools export them,
with test data whose expected outputs come from ONNX Runtime (CPU provider).

Usage: make_quant_models.py [--bad] OUT_DIR. Writes
  dyn_mlp.onnx   quantize_dynamic of a MatMul / Add / Relu / MatMul MLP
                 (DynamicQuantizeLinear + MatMulInteger, int8 weights per
                 channel), a BERT-style projection block
  dyn_conv.onnx  quantize_dynamic of a small Conv / Relu / Conv / MatMul
                 net, a CRNN-style front end (ConvInteger, uint8 weights)
  qdq_cnn.onnx   quantize_static, QDQ format, of a Conv / Relu / Conv /
                 Flatten / Gemm net with a tiny calibration reader (u8
                 activations, i8 weights per channel: per-axis
                 DequantizeLinear)
each with OUT_DIR/<name>_data/test_data_set_0/{input,output}_0.pb; with
--bad instead the malformed bad_axis.onnx (a per-axis scale of the wrong
length) and bad_mmi.onnx (MatMulInteger of a float).
"""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)


def const(name, arr):
    return numpy_helper.from_array(arr.astype(np.float32), name)


def save_f32(path, nodes, x_shape, y_shape, inits):
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def mlp(path, rng):
    w1 = rng.standard_normal((32, 48)) * 0.3
    b1 = rng.standard_normal(48) * 0.1
    w2 = rng.standard_normal((48, 16)) * 0.3
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    save_f32(path, nodes, [2, 5, 32], [2, 5, 16], [const("w1", w1), const("b1", b1), const("w2", w2)])


def conv_net(path, rng):
    w1 = rng.standard_normal((6, 3, 3, 3)) * 0.3
    b1 = rng.standard_normal(6) * 0.1
    w2 = rng.standard_normal((4, 6, 3, 3)) * 0.3
    wf = rng.standard_normal((4 * 4 * 6, 10)) * 0.2
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Reshape", ["r2", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "wf"], ["y"])]
    shape = numpy_helper.from_array(np.array([2, -1], dtype=np.int64), "shape")
    save_f32(path, nodes, [2, 3, 8, 12], [2, 10], [const("w1", w1), const("b1", b1), const("w2", w2), const("wf", wf), shape])


def cnn_gemm(path, rng):
    w1 = rng.standard_normal((8, 3, 3, 3)) * 0.3
    b1 = rng.standard_normal(8) * 0.1
    w2 = rng.standard_normal((8, 8, 3, 3)) * 0.2
    b2 = rng.standard_normal(8) * 0.1
    wf = rng.standard_normal((10, 8 * 4 * 4)) * 0.2
    bf = rng.standard_normal(10) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    save_f32(path, nodes, [2, 3, 8, 8], [2, 10],
             [const("w1", w1), const("b1", b1), const("w2", w2), const("b2", b2), const("wf", wf), const("bf", bf)])


class Reader(CalibrationDataReader):
    def __init__(self, rng, shape, n=8):
        self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def write_data(model, x, out_dir, tol):
    """Expected output: ONNX Runtime's, unless it is further than \p tol from
    the ONNX reference evaluator (the spec's semantics, which fusec follows).
    That happens for MatMulInteger / ConvInteger of u8 activations and i8
    weights on x86 hosts without AVX-512 VNNI / AVX-VNNI: ONNX Runtime's
    u8 x s8 kernel adds pairs of products in saturating int16 (pmaddubsw),
    the overflow its `reduce_range` quantisation option exists to avoid.
    The reference is then used, and the script says so."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    if tol is None:  # QDQ at opset 17: the reference evaluator has no DequantizeLinear-17
        ref = y
    else:
        (ref,) = ReferenceEvaluator(model).run(None, {"x": x})
    err = float(np.max(np.abs(y.astype(np.float64) - ref.astype(np.float64)))) if y.size else 0.0
    if tol is not None and err > tol:
        print(f"{os.path.basename(model)}: ONNX Runtime is {err:.3g} from the ONNX reference evaluator "
              f"(> {tol}); expected output from the reference")
        y = ref.astype(y.dtype)
    d = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    for name, arr, fname in [("x", x, "input_0.pb"), ("y", y, "output_0.pb")]:
        with open(os.path.join(d, fname), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())


def bad_models(out):
    f = TensorProto.FLOAT
    scale = numpy_helper.from_array(np.array([0.5, 0.25, 1.0], dtype=np.float32), "s")
    dq = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="bad_dq", axis=1)
    g = helper.make_graph([dq], "bad", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
                          [helper.make_tensor_value_info("y", f, [2, 4])], [scale])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "bad_axis.onnx"))
    mmi = helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="bad_mmi")
    g = helper.make_graph([mmi], "bad", [helper.make_tensor_value_info("a", f, [2, 4]),
                                         helper.make_tensor_value_info("b", TensorProto.UINT8, [4, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "bad_mmi.onnx"))


def main():
    if sys.argv[1] == "--bad":
        os.makedirs(sys.argv[2], exist_ok=True)
        bad_models(sys.argv[2])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "mlp.onnx")
        mlp(f32, rng)
        dst = os.path.join(out, "dyn_mlp.onnx")
        quantize_dynamic(f32, dst, weight_type=QuantType.QInt8, per_channel=True)
        write_data(dst, rng.standard_normal((2, 5, 32)).astype(np.float32), os.path.join(out, "dyn_mlp_data"), 1e-5)

        f32 = os.path.join(tmp, "conv.onnx")
        conv_net(f32, rng)
        dst = os.path.join(out, "dyn_conv.onnx")
        quantize_dynamic(f32, dst, weight_type=QuantType.QUInt8, op_types_to_quantize=["Conv", "MatMul"])
        write_data(dst, rng.standard_normal((2, 3, 8, 12)).astype(np.float32), os.path.join(out, "dyn_conv_data"), 1e-5)

        f32 = os.path.join(tmp, "cnn.onnx")
        cnn_gemm(f32, rng)
        dst = os.path.join(out, "qdq_cnn.onnx")
        quantize_static(f32, dst, Reader(rng, (2, 3, 8, 8)), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
        write_data(dst, rng.standard_normal((2, 3, 8, 8)).astype(np.float32), os.path.join(out, "qdq_cnn_data"), None)


if __name__ == "__main__":
    main()
