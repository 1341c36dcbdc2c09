#!/usr/bin/env python3
"""Writes small ai.onnx Loop models for loop.test.

Usage: make_loop_models.py OUT_DIR. Models the importer unrolls get a folder
OUT_DIR/NAME with model.onnx and test_data_set_0 (inputs random, outputs
from onnxruntime); the ones it must refuse are written as OUT_DIR/NAME.onnx.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(0)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, dtype=dtype), name))


def body_graph(nodes, inputs, outputs, name="body"):
    """inputs / outputs: (name, elem_type, shape) with shape None for none."""
    vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    return helper.make_graph(nodes, name, [vi(*i) for i in inputs], [vi(*o) for o in outputs])


def save(name, graph, feeds=None, opset=17):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8

    if feeds is None:
        onnx.save(m, os.path.join(out, name + ".onnx"))
        return
    d = os.path.join(out, name)
    sd = os.path.join(d, "test_data_set_0")
    os.makedirs(sd, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(None, feeds)
    for i, (n, a) in enumerate(feeds.items()):
        with open(os.path.join(sd, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (o, a) in enumerate(zip(m.graph.output, results)):
        with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), o.name).SerializeToString())


def accumulate_body(cond_nodes=(), cond_out="cond_in"):
    """v_out = v_in * w + float(i) (w from the outer scope); scan = v_out * 2."""
    nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], name="cast_i", to=F),
        helper.make_node("Mul", ["v_in", "w"], ["vw"], name="mul_w"),
        helper.make_node("Add", ["vw", "i_f"], ["v_out"], name="add_i"),
        const("two", 2.0, np.float32),
        helper.make_node("Mul", ["v_out", "two"], ["scan"], name="scan_mul"),
    ] + list(cond_nodes)
    if cond_out == "cond_in":
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="pass_cond"))
        cond_out = "cond_out"
    return body_graph(nodes, [("i", I64, []), ("cond_in", B, []), ("v_in", F, [3])],
                      [(cond_out, B, []), ("v_out", F, [3]), ("scan", F, [3])])


w = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "w")
x = rng.standard_normal(3).astype(np.float32)

# A constant trip count (an initializer), cond a Constant true, a scan output.
g = helper.make_graph(
    [const("true", True, np.bool_),
     helper.make_node("Loop", ["M", "true", "x"], ["v_final", "scans"], name="the_loop",
                      body=accumulate_body())],
    "loop_const", [helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info("v_final", F, [3]),
     helper.make_tensor_value_info("scans", F, [4, 3])],
    [w, numpy_helper.from_array(np.array(4, np.int64), "M")])
save("loop_const", g, {"x": x})

# cond_out = Less(i, 2): the loop stops after iteration 2 (3 iterations of
# M = 10); a second Loop with no M runs while Less(i, 4) (5 iterations).
early = [const("lim", 2), helper.make_node("Less", ["i", "lim"], ["keep"], name="less")]
while_ = [const("lim", 4), helper.make_node("Less", ["i", "lim"], ["keep"], name="less")]
g = helper.make_graph(
    [const("M", 10), const("true", True, np.bool_),
     helper.make_node("Loop", ["M", "true", "x"], ["v_early", "scan_early"], name="early_loop",
                      body=accumulate_body(early, "keep")),
     helper.make_node("Loop", ["", "true", "x"], ["v_while", "scan_while"], name="while_loop",
                      body=accumulate_body(while_, "keep"))],
    "loop_early", [helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info(n, F, None)
     for n in ["v_early", "scan_early", "v_while", "scan_while"]],
    [w])
save("loop_early", g, {"x": x})

# M = 0: the final value is x, the scan output empty [0, 3] (its shape from
# the body's declared output); a second zero-trip Loop (cond false) whose
# scan output is not declared: its shape comes from importing one iteration.
undeclared = accumulate_body()
undeclared.output[2].type.tensor_type.ClearField("shape")
g = helper.make_graph(
    [const("zero", 0), const("true", True, np.bool_), const("false", False, np.bool_),
     const("M5", 5),
     helper.make_node("Loop", ["zero", "true", "x"], ["v_zero", "scan_zero"], name="zero_loop",
                      body=accumulate_body()),
     helper.make_node("Loop", ["M5", "false", "x"], ["v_false", "scan_false"], name="false_loop",
                      body=undeclared)],
    "loop_zero", [helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info(n, F, None) for n in ["v_zero", "scan_zero", "v_false", "scan_false"]],
    [w])
save("loop_zero", g, {"x": x})

# Nested: an outer Loop (M = 3) whose body runs an inner Loop (M = 2) that
# reads the outer iteration number and the outer-scope w; and a Loop in
# both branches of an If on a run-time condition.
inner = body_graph(
    [helper.make_node("Add", ["j", "oi"], ["s"], name="inner_add"),
     helper.make_node("Cast", ["s"], ["s_f"], name="inner_cast", to=F),
     helper.make_node("Mul", ["u_in", "w"], ["uw"], name="inner_mul"),
     helper.make_node("Add", ["uw", "s_f"], ["u_out"], name="inner_add_f"),
     helper.make_node("Identity", ["c_in"], ["c_out"], name="inner_cond")],
    [("j", I64, []), ("c_in", B, []), ("u_in", F, [3])],
    [("c_out", B, []), ("u_out", F, [3])], "inner_body")
outer = body_graph(
    [const("M2", 2),
     helper.make_node("Loop", ["M2", "", "v_in"], ["v_out"], name="inner_loop", body=inner),
     helper.make_node("Identity", ["v_out"], ["scan"], name="outer_scan"),
     helper.make_node("Identity", ["cond_in"], ["cond_out"], name="outer_cond")],
    [("oi", I64, []), ("cond_in", B, []), ("v_in", F, [3])],
    [("cond_out", B, []), ("v_out", F, [3]), ("scan", F, [3])], "outer_body")
then_b = helper.make_graph(
    [const("M3", 3),
     helper.make_node("Loop", ["M3", "", "x"], ["t_out", "t_scan"], name="then_loop",
                      body=accumulate_body())],
    "then", [], [helper.make_tensor_value_info("t_out", F, [3])])
else_b = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["e_out"], name="else_neg")],
    "else", [], [helper.make_tensor_value_info("e_out", F, [3])])
g = helper.make_graph(
    [const("M", 3),
     helper.make_node("Loop", ["M", "", "x"], ["v_nested", "scan_nested"], name="outer_loop",
                      body=outer),
     helper.make_node("If", ["flag"], ["v_if"], name="the_if", then_branch=then_b,
                      else_branch=else_b)],
    "loop_nested", [helper.make_tensor_value_info("x", F, [3]),
                    helper.make_tensor_value_info("flag", B, [])],
    [helper.make_tensor_value_info(n, F, None) for n in ["v_nested", "scan_nested", "v_if"]],
    [w])
save("loop_nested", g, {"x": x, "flag": np.array(True)})

# The trip count is a graph input: refused naming it, compiled with
# --input-value trip=3 (the data set's value).
g = helper.make_graph(
    [const("true", True, np.bool_),
     helper.make_node("Loop", ["trip", "true", "x"], ["v_final", "scans"], name="input_loop",
                      body=accumulate_body())],
    "loop_input_m", [helper.make_tensor_value_info("trip", I64, []),
                     helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info("v_final", F, [3]),
     helper.make_tensor_value_info("scans", F, [3, 3])],
    [w])
save("loop_input_m", g, {"trip": np.array(3, np.int64), "x": x})

# cond_out compares the carried value (from x) with 0: data-dependent.
data_cond = [const("zero_f", 0.0, np.float32),
             helper.make_node("ReduceSum", ["v_out"], ["total"], name="total", keepdims=0),
             helper.make_node("Less", ["total", "zero_f"], ["keep"], name="data_less")]
g = helper.make_graph(
    [const("M", 5), const("true", True, np.bool_),
     helper.make_node("Loop", ["M", "true", "x"], ["v_final", "scans"], name="data_loop",
                      body=accumulate_body(data_cond, "keep"))],
    "loop_data_cond", [helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info("v_final", F, [3])], [w])
save("loop_data_cond", g)

# Too many iterations: M = 5000 with the condition passed through.
g = helper.make_graph(
    [const("M", 5000),
     helper.make_node("Loop", ["M", "", "x"], ["v_final", "scans"], name="long_loop",
                      body=accumulate_body())],
    "loop_long", [helper.make_tensor_value_info("x", F, [3])],
    [helper.make_tensor_value_info("v_final", F, [3])], [w])
save("loop_long", g)

# Unsupported ops inside Loop bodies (one nested in an inner Loop) are
# all reported at once. Not run: only the op check reads it.
bad_inner = body_graph(
    [helper.make_node("StringNormalizer", ["u_in"], ["u_out"], name="inner_strnorm"),
     helper.make_node("Identity", ["c_in"], ["c_out"], name="inner_cond")],
    [("j", I64, []), ("c_in", B, []), ("u_in", TensorProto.STRING, [3])],
    [("c_out", B, []), ("u_out", TensorProto.STRING, [3])], "bad_inner")
bad_outer = body_graph(
    [const("M2", 2),
     helper.make_node("RegexFullMatch", ["v_in"], ["m"], name="outer_regex", domain=""),
     helper.make_node("Loop", ["M2", "", "v_in"], ["v_out"], name="inner_loop", body=bad_inner),
     helper.make_node("Identity", ["cond_in"], ["cond_out"], name="outer_cond")],
    [("oi", I64, []), ("cond_in", B, []), ("v_in", TensorProto.STRING, [3])],
    [("cond_out", B, []), ("v_out", TensorProto.STRING, [3])], "bad_outer")
g = helper.make_graph(
    [const("M", 2),
     helper.make_node("Loop", ["M", "", "s"], ["s_final"], name="bad_loop", body=bad_outer)],
    "loop_unsupported", [helper.make_tensor_value_info("s", TensorProto.STRING, [3])],
    [helper.make_tensor_value_info("s_final", TensorProto.STRING, [3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
m.ir_version = 9
onnx.save(m, os.path.join(out, "loop_unsupported.onnx"))
