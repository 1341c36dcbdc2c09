"""Writes a one-node model whose names carry terminal controls and a forged
verdict line, plus its test data, into the folder given as argv[1]."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
evil = "y\nPASS forged\x1b[31m\u202e"
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info(evil, TensorProto.FLOAT, [2])
# Two nodes (one kernel): the node names, the intermediate value and the
# graph name carry ESC, BEL, CR, U+202E and U+2066 too.
mid = "m\x1b]0;t\x07\r\u2066"
nodes = [helper.make_node("Relu", ["x"], [mid], name="relu\x07\r\u2066\x1b[2J"),
         helper.make_node("Neg", [mid], [evil], name="neg\u202e\r")]
model = helper.make_model(helper.make_graph(nodes, "g\u202e\x1b", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(out, "model.onnx"))
with open(os.path.join(out, "data", "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.array([1, -1], np.float32), "x").SerializeToString())
# A wrong expected value, so that the run FAILs: the forged PASS must not show.
with open(os.path.join(out, "data", "output_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.array([5, 5], np.float32), evil).SerializeToString())
