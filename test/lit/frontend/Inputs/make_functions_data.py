#!/usr/bin/env python3
"""Writes argv[2]/test_data_set_0 for the model argv[1] (one f32 input 'x' of
shape [2, 8]): a seeded input and the outputs onnx.reference computes, which
evaluates the function ops by their own ONNX definitions.
Used by functions.test."""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

model = onnx.load(sys.argv[1])
d = os.path.join(sys.argv[2], "test_data_set_0")
os.makedirs(d, exist_ok=True)
x = (np.random.default_rng(0).standard_normal((2, 8)) * 4).astype(np.float32)
(y,) = ReferenceEvaluator(model).run(None, {"x": x})
with open(os.path.join(d, "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
with open(os.path.join(d, "output_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(y, "y").SerializeToString())
