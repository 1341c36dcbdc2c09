"""A model with a scalar graph input whose test data is written as shape
[1] (as exporters and ONNX Runtime users do; ORT accepts it), for
scalar-data.test. python3 make_scalar_data.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
     helper.make_node("Mul", ["x", "kf"], ["y"])], "scalar_in",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("k", TensorProto.INT64, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 9
d = os.path.join(out, "test_data_set_0")
os.makedirs(d, exist_ok=True)
onnx.save(m, os.path.join(out, "model.onnx"))
x = np.arange(6, dtype=np.float32).reshape(2, 3)
for f, n, a in [("input_0.pb", "x", x), ("input_1.pb", "k", np.array([3], np.int64)),
                ("output_0.pb", "y", x * 3)]:
    with open(os.path.join(d, f), "wb") as fh:
        fh.write(numpy_helper.from_array(a, n).SerializeToString())
