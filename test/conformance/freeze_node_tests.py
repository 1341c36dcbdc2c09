#!/usr/bin/env python3
"""Writes copies of ONNX node tests whose compile-time operands arrive as
graph inputs, with those inputs frozen into initializers from the test's
data set 0 (the other data sets keep their own inputs only when those
operands agree; otherwise they are dropped).

  freeze_node_tests.py SRC_ROOT DST_ROOT [FILTER...]

fusec compiles ahead of time: Resize's roi / scales / sizes, CumSum's
axis, TopK's k and OneHot's depth must be constants, so `fusec -o` refuses
the node tests that feed them as inputs. Their frozen copies exercise the
compiled kernels on the same data and expected outputs (test/conformance/compile_node_tests.sh
DST_ROOT ... cpu, or cuda-nvcc on the GPU machine).
"""
import os
import shutil
import sys

import onnx
from onnx import numpy_helper

# op type -> input positions read at compile time (ir/Ops.def Operands()).
METADATA = {"Resize": (1, 2, 3), "CumSum": (1,), "TopK": (1,), "OneHot": (1,), "CumProd": (1,),
            "Compress": (1,), "CenterCropPad": (1,), "MaxUnpool": (2,), "Upsample": (1,), "DFT": (1, 2)}


def freeze(src, dst):
    model = onnx.load(os.path.join(src, "model.onnx"))
    g = model.graph
    inputs = [i.name for i in g.input]
    frozen = set()
    for node in g.node:
        for pos in METADATA.get(node.op_type, ()):
            if pos < len(node.input) and node.input[pos] in inputs:
                frozen.add(node.input[pos])
    if not frozen:
        return False
    sets = sorted(d for d in os.listdir(src) if d.startswith("test_data_set_"))
    values = {}
    for s in sets:
        for k, name in enumerate(inputs):
            p = os.path.join(src, s, f"input_{k}.pb")
            if name in frozen and os.path.exists(p):
                t = onnx.TensorProto()
                t.ParseFromString(open(p, "rb").read())
                values.setdefault(s, {})[name] = numpy_helper.to_array(t)
    base = values.get(sets[0], {})
    if set(base) != frozen:
        return False
    keep = [s for s in sets if all((values.get(s, {}).get(n) == base[n]).all() for n in frozen)]
    for n in frozen:
        g.initializer.append(numpy_helper.from_array(base[n], n))
    kept_inputs = [i for i in g.input if i.name not in frozen]
    del g.input[:]
    g.input.extend(kept_inputs)
    os.makedirs(dst, exist_ok=True)
    onnx.save(model, os.path.join(dst, "model.onnx"))
    for s in keep:
        os.makedirs(os.path.join(dst, s), exist_ok=True)
        j = 0
        for k, name in enumerate(inputs):
            if name in frozen:
                continue
            shutil.copy(os.path.join(src, s, f"input_{k}.pb"), os.path.join(dst, s, f"input_{j}.pb"))
            j += 1
        for f in os.listdir(os.path.join(src, s)):
            if f.startswith("output_"):
                shutil.copy(os.path.join(src, s, f), os.path.join(dst, s, f))
    return True


def main(argv):
    src, dst, filters = argv[1], argv[2], argv[3:]
    n = 0
    for t in sorted(os.listdir(src)):
        if filters and not any(f in t for f in filters):
            continue
        if os.path.exists(os.path.join(src, t, "model.onnx")) and freeze(os.path.join(src, t),
                                                                         os.path.join(dst, t + "_frozen")):
            n += 1
    print(f"froze {n} tests into {dst}")


if __name__ == "__main__":
    main(sys.argv)
