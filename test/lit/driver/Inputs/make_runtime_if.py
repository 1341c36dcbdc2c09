"""Writes the models of runtime-if.test into OUTDIR (argv[1]):

- nested.onnx: `if c1: x * 2 else (if c2: x + 1 else x - 1)`, c1 and c2 bool
  graph inputs, then an Add with x outside the If; test data for c1, c2 in
  {(1, 0), (0, 1), (0, 0)} in nested/test_data_set_{0,1,2}.
- mismatch.onnx: branches give f32[4] and f32[2]: refused, naming the If.
- dtype.onnx: branches give f32[4] and i64[4]: refused.
- notbool.onnx: the condition is a bool[2] input: refused.
- shapecond.onnx: the condition is computed from a shape (Shape(x)[0] > 2),
  which folds once --shape binds x: one branch inlined, no guard.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
F = TensorProto.FLOAT


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))


def save(name, graph):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))


two, one = np.array(2, np.float32), np.array(1, np.float32)
then_g = helper.make_graph([const("k2", two), helper.make_node("Mul", ["x", "k2"], ["t"])],
                           "then", [], [vi("t", F, [4])])
in_then = helper.make_graph([const("k1", one), helper.make_node("Add", ["x", "k1"], ["a"])],
                            "in_then", [], [vi("a", F, [4])])
in_else = helper.make_graph([const("k1", one), helper.make_node("Sub", ["x", "k1"], ["s"])],
                            "in_else", [], [vi("s", F, [4])])
else_g = helper.make_graph(
    [helper.make_node("If", ["c2"], ["e"], name="inner_if", then_branch=in_then, else_branch=in_else)],
    "else", [], [vi("e", F, [4])])
g = helper.make_graph(
    [helper.make_node("If", ["c1"], ["r"], name="outer_if", then_branch=then_g, else_branch=else_g),
     helper.make_node("Add", ["r", "x"], ["y"], name="after")],
    "nested", [vi("x", F, [4]), vi("c1", TensorProto.BOOL, []), vi("c2", TensorProto.BOOL, [1])],
    [vi("y", F, [4])])
save("nested", g)
x = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
for k, (c1, c2) in enumerate([(1, 0), (0, 1), (0, 0)]):
    r = x * 2 if c1 else (x + 1 if c2 else x - 1)
    d = os.path.join(out, "nested", f"test_data_set_{k}")
    os.makedirs(d, exist_ok=True)
    for i, (n, a) in enumerate([("x", x), ("c1", np.array(bool(c1))), ("c2", np.array([bool(c2)]))]):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array((r + x).astype(np.float32), "y").SerializeToString())


def two_branch(name, then_nodes, then_out, else_nodes, else_out, cond_type):
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="the_if",
                          then_branch=helper.make_graph(then_nodes, "then", [], [then_out]),
                          else_branch=helper.make_graph(else_nodes, "else", [], [else_out]))],
        name, [vi("x", F, [4]), vi("c", TensorProto.BOOL, cond_type)], [vi("y", F, None)])
    save(name, g)


two_branch("mismatch", [helper.make_node("Relu", ["x"], ["t"])], vi("t", F, [4]),
           [const("e", np.zeros(2, np.float32))], vi("e", F, [2]), [])
two_branch("dtype", [helper.make_node("Relu", ["x"], ["t"])], vi("t", F, [4]),
           [const("e", np.zeros(4, np.int64))], vi("e", TensorProto.INT64, [4]), [])
two_branch("notbool", [helper.make_node("Relu", ["x"], ["t"])], vi("t", F, [4]),
           [helper.make_node("Neg", ["x"], ["e"])], vi("e", F, [4]), [2])

# The condition folds once --shape binds the batch: Shape(x)[0] > 2.
g = helper.make_graph(
    [helper.make_node("Shape", ["x"], ["s"]),
     const("zero", np.array(0, np.int64)),
     helper.make_node("Gather", ["s", "zero"], ["b"]),
     const("k", np.array(2, np.int64)),
     helper.make_node("Greater", ["b", "k"], ["c"]),
     helper.make_node("If", ["c"], ["y"], name="shape_if",
                      then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                                                    [vi("t", F, ["n", 4])]),
                      else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                                    [vi("e", F, ["n", 4])]))],
    "shapecond", [vi("x", F, ["n", 4])], [vi("y", F, ["n", 4])])
save("shapecond", g)

# A run-time condition over a symbolic batch: the reference interpreter runs
# it unbound (the skipped branch's value has no static type).
two_branch_dyn = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], name="dyn_if",
                      then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                                                    [vi("t", F, ["n", 4])]),
                      else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                                    [vi("e", F, ["n", 4])]))],
    "dyn", [vi("x", F, ["n", 4]), vi("c", TensorProto.BOOL, [])], [vi("y", F, ["n", 4])])
save("dyn", two_branch_dyn)
xd = np.array([[1.0, -2.0, 3.0, -4.0], [0.5, -0.5, 2.0, -1.0], [7.0, 0.0, -3.0, 1.0]], np.float32)
for k, c in enumerate([True, False]):
    d = os.path.join(out, "dyn", f"test_data_set_{k}")
    os.makedirs(d, exist_ok=True)
    for i, (n, a) in enumerate([("x", xd), ("c", np.array(c))]):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.maximum(xd, 0) if c else -xd, "y").SerializeToString())

# The branch not taken would fail: a Gather whose index (a graph input) is
# out of range, which the reference interpreter refuses. Skipped when c is
# false, so the reference passes; when c is true it names the node.
g = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], name="gather_if",
                      then_branch=helper.make_graph(
                          [helper.make_node("Gather", ["x", "idx"], ["t"], name="pick")], "then", [],
                          [vi("t", F, [])]),
                      else_branch=helper.make_graph(
                          [const("e", np.array(0.5, np.float32))], "else", [], [vi("e", F, [])]))],
    "gather", [vi("x", F, [4]), vi("c", TensorProto.BOOL, []), vi("idx", TensorProto.INT64, [])],
    [vi("y", F, [])])
save("gather", g)
for k, c in enumerate([False, True]):
    d = os.path.join(out, "gather", f"test_data_set_{k}")
    os.makedirs(d, exist_ok=True)
    for i, (n, a) in enumerate([("x", x), ("c", np.array(c)), ("idx", np.array(100, np.int64))]):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.array(0.5, np.float32), "y").SerializeToString())

# deadbranch.onnx: `if sr == 16000: Reshape(x, [2, 4]) * 2 else Reshape(x, [3, -1])`
# with x f32[8]: the else branch cannot be imported for 8 elements (the
# silero-VAD pattern: the 8 kHz branch is invalid for a 16 kHz chunk). Test
# data with sr = 16000 in deadbranch/test_data_set_0.
I64 = TensorProto.INT64
dead_then = helper.make_graph(
    [const("s24", np.array([2, 4], np.int64)), helper.make_node("Reshape", ["x", "s24"], ["r24"]),
     const("k2d", two), helper.make_node("Mul", ["r24", "k2d"], ["t2"])],
    "dead_then", [], [vi("t2", F, [2, 4])])
dead_else = helper.make_graph(
    [const("s3", np.array([3, -1], np.int64)), helper.make_node("Reshape", ["x", "s3"], ["e3"])],
    "dead_else", [], [vi("e3", F, None)])
g = helper.make_graph(
    [const("k16k", np.array(16000, np.int64)), helper.make_node("Equal", ["sr", "k16k"], ["is16k"]),
     helper.make_node("If", ["is16k"], ["y"], name="rate_if", then_branch=dead_then, else_branch=dead_else)],
    "deadbranch", [vi("x", F, [8]), vi("sr", I64, [])], [vi("y", F, [2, 4])])
save("deadbranch", g)
d = os.path.join(out, "deadbranch", "test_data_set_0")
os.makedirs(d, exist_ok=True)
xd = np.arange(8, dtype=np.float32) - 3.5
for fname, n, a in [("input_0.pb", "x", xd), ("input_1.pb", "sr", np.array(16000, np.int64)),
                    ("output_0.pb", "y", xd.reshape(2, 4) * 2)]:
    with open(os.path.join(d, fname), "wb") as f:
        f.write(numpy_helper.from_array(a, n).SerializeToString())
