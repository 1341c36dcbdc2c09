#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx package.

The onnx wheel ships the case scripts (onnx/backend/test/case/node/*.py),
not their data; this runs them and writes every node test in the backend-test
layout fusec-node-tests reads:

    OUT/<test name>/model.onnx
    OUT/<test name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb

Usage: generate_node_tests.py OUT
Prints "generated N node tests (onnx X.Y.Z, opsets up to K)" on success.
Tests whose inputs or outputs are not tensors (sequences, maps, optionals)
are written too; fusec-node-tests reports them as skipped.
"""
import os
import shutil
import sys
import warnings


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    import numpy
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case scripts divide by zero on purpose
        cases = node.collect_testcases(None)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)

    def proto_of(value, value_info):
        if isinstance(value, onnx.TensorProto):  # cases that build their data as protos
            value = onnx.TensorProto.FromString(value.SerializeToString())
            value.name = value_info.name
            return value
        t = value_info.type
        if t.HasField("sequence_type"):
            return numpy_helper.from_list(value, value_info.name)
        if t.HasField("optional_type"):
            return numpy_helper.from_optional(value, value_info.name)
        if t.HasField("map_type"):
            return numpy_helper.from_dict(value, value_info.name)
        if not hasattr(value, "shape"):
            value = numpy.asarray(value)
        return numpy_helper.from_array(value, value_info.name)

    written, unwritable = 0, []
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d)
        try:
            with open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(case.model.SerializeToString())
            for i, (inputs, outputs) in enumerate(case.data_sets):
                ds = os.path.join(d, "test_data_set_%d" % i)
                os.makedirs(ds)
                for kind, values, infos in (("input", inputs, case.model.graph.input),
                                            ("output", outputs, case.model.graph.output)):
                    for j, v in enumerate(values):
                        with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                            f.write(proto_of(v, infos[j]).SerializeToString())
        except (AttributeError, TypeError, ValueError, NotImplementedError) as e:
            # Data numpy_helper cannot serialise (e.g. element types newer than
            # its converters): the test is left out, and named below.
            shutil.rmtree(d)
            unwritable.append("%s (%s)" % (case.name, e))
            continue
        written += 1
    print("generated %d node tests (onnx %s, opsets up to %d); %d left out: %s"
          % (written, onnx.__version__, onnx.defs.onnx_opset_version(), len(unwritable),
             ", ".join(unwritable) if unwritable else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
