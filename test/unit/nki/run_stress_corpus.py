"""ctest driver: the stress corpus (test/stress/gen_stress_corpus.py) compiled with --target nki and
run through the NumPy model of NKI against onnxruntime's outputs, fp32 and bf16.

    python3 run_stress_corpus.py FUSEC FUSEC_RUN

Prints one line per model and precision, then PASS or FAIL. Without onnxruntime it prints
PASS (skipped) and does nothing else.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def make_data(model_dir, shapes):
    import onnxruntime as ort
    from onnx import numpy_helper
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    rs = np.random.RandomState(0)
    data = os.path.join(model_dir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        shp = shapes[inp.name]
        if "int64" in inp.type:
            a = rs.randint(0, 2, size=shp).astype(np.int64)
        elif "bool" in inp.type:
            a = rs.rand(*shp) > 0.3
        else:
            a = rs.randn(*shp).astype(np.float32)
        feeds[inp.name] = a
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, inp.name).SerializeToString())
    for i, (o, v) in enumerate(zip(sess.get_outputs(), sess.run(None, feeds))):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v), o.name).SerializeToString())
    return data


def main(fusec, fusec_run):
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("PASS (skipped: onnxruntime not installed)")
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    gen = os.path.join(here, "..", "..", "stress", "gen_stress_corpus.py")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        subprocess.run([sys.executable, gen, corpus], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(corpus, "manifest.json")) as f:
            manifest = json.load(f)
        for name, shapes in manifest.items():
            data = make_data(os.path.join(corpus, name), shapes)
            for prec in ("fp32", "bf16"):
                out = os.path.join(tmp, f"{name}_{prec}")
                cmd = [fusec, os.path.join(corpus, name, "model.onnx"), "--target", "nki", "--precision", prec,
                       "-o", out]
                for k, dims in shapes.items():
                    cmd += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
                ok = subprocess.run(cmd, capture_output=True).returncode == 0
                if ok:
                    r = subprocess.run([fusec_run, out, "--data", data, "--precision", prec],
                                       capture_output=True, text=True)
                    ok = r.returncode == 0
                print(f"{name} {prec}: {'ok' if ok else 'FAILED'}")
                failures += not ok
    print("PASS" if failures == 0 else "FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
