"""Writes a second data set for a shared model with an attention_mask input:
the mask rewritten so that batch 0 is left-padded (its first Sq/3 keys are
padding, so its first query rows see no key at all) and batch 1 is all
padding (every row fully masked), with the expected outputs computed by ONNX
Runtime's CPU provider on the unfused model.

    python3 make_padded_data.py MODEL_DIR OUT_DIR

It checks that fusec's fused attention (masks recognised from the graph,
masked_rows "mean": the exporter's finfo.min fill makes such rows uniform)
computes what the exported graph computes on the rows a right-padded test
set never reaches. Also usable on the GPU machine (onnxruntime is there).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main(model_dir, out_dir):
    m = onnx.load(os.path.join(model_dir, "model.onnx"))
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    feeds = {}
    for i, n in enumerate(names):
        t = onnx.TensorProto()
        with open(os.path.join(model_dir, "test_data_set_0", f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[n] = numpy_helper.to_array(t)
    if "attention_mask" not in feeds:
        print(f"{model_dir}: no attention_mask input")
        return 2
    am = feeds["attention_mask"].copy()
    b, s = am.shape
    am[0, : max(1, s // 3)] = 0
    if b > 1:
        am[1, :] = 0
    feeds["attention_mask"] = am
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    os.makedirs(out_dir, exist_ok=True)
    for i, n in enumerate(names):
        with open(os.path.join(out_dir, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for i, o in enumerate(m.graph.output):
        with open(os.path.join(out_dir, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(outs[i]), o.name).SerializeToString())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
