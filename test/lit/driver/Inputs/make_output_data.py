"""Writes two.onnx (x -> a = Relu(x), b = Neg(x)) and data sets into
OUTDIR (argv[1]) for run-data-matching.test:

- byname: only output_0.pb, named 'b' (the second output);
- wrongb: as byname, with a wrong value for 'b';
- gap: output_0.pb and output_2.pb without output_1.pb;
- stray: output_0.pb 'a', output_1.pb named 'c' (no such output) holding b.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
F = TensorProto.FLOAT
g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])],
                      "two", [helper.make_tensor_value_info("x", F, [4])],
                      [helper.make_tensor_value_info("a", F, [4]), helper.make_tensor_value_info("b", F, [4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "two.onnx"))
x = np.array([1.5, -2.0, 0.0, 3.0], np.float32)


def write(ds, files):
    d = os.path.join(out, ds)
    os.makedirs(d, exist_ok=True)
    for fname, name, a in [("input_0.pb", "x", x)] + files:
        with open(os.path.join(d, fname), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


write("byname", [("output_0.pb", "b", -x)])
write("wrongb", [("output_0.pb", "b", x)])
write("gap", [("output_0.pb", "a", np.maximum(x, 0)), ("output_2.pb", "b", -x)])
write("stray", [("output_0.pb", "a", np.maximum(x, 0)), ("output_1.pb", "c", -x)])
