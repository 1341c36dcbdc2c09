"""ctest driver: compile one shared model with fusec --target TARGET and run it with fusec-run.

    python3 run_shared_model.py FUSEC FUSEC_RUN MODEL_DIR PRECISION OUT TARGET [padded]

Input shapes come from MODEL_DIR/../manifest.json ("inputs": {name: dims}). fusec-run runs the
artifact (nki: its run.py on the NumPy model of NKI; cpu: libfusert's CPU executor, the arena
poisoned with NaN first) and prints the verdict (PASS/FAIL). With "padded", the data set is
test/make_padded_data.py's (left padding and an all-padding batch, expected outputs from ONNX
Runtime) instead of MODEL_DIR/test_data_set_0.
"""
import json
import os
import subprocess
import sys


def main(fusec, fusec_run, model_dir, precision, out, target, data="test_data_set_0"):
    name = os.path.basename(os.path.normpath(model_dir))
    with open(os.path.join(model_dir, "..", "manifest.json")) as f:
        inputs = json.load(f)[name]["inputs"]
    cmd = [fusec, os.path.join(model_dir, "model.onnx"), "--target", target, "--precision", precision, "-o", out]
    for k, dims in inputs.items():
        cmd += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
    r = subprocess.run(cmd)
    if r.returncode != 0:
        print(f"FAIL: fusec exited with {r.returncode}")
        return 1
    data_dir = os.path.join(model_dir, data)
    if data == "padded":
        data_dir = out + ".data"
        maker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_padded_data.py")
        r = subprocess.run([sys.executable, maker, model_dir, data_dir])
        if r.returncode != 0:
            print(f"FAIL: make_padded_data.py exited with {r.returncode}")
            return 1
    r = subprocess.run([fusec_run, out, "--data", data_dir, "--precision", precision])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
