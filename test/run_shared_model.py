"""ctest driver: compile one shared model with fusec --target TARGET and run it with fusec-run.

    python3 run_shared_model.py FUSEC FUSEC_RUN MODEL_DIR PRECISION OUT TARGET [padded|dynamic]

Input shapes come from MODEL_DIR/../manifest.json ("inputs": {name: dims}). fusec-run runs the
artifact (nki: its run.py on the NumPy model of NKI; cpu: libfusert's CPU executor, the arena
poisoned with NaN first) and prints the verdict (PASS/FAIL). With "padded", the data set is
test/make_padded_data.py's (left padding and an all-padding batch, expected outputs from ONNX
Runtime) instead of MODEL_DIR/test_data_set_0. With "dynamic", the model is compiled once with no
--shape (its symbolic dims left dynamic) and the one artifact is checked against test_data_set_0
and two data sets of other shapes that scripts/make_test_data.py writes (ONNX Runtime's outputs):
the symbols at 3, 37, 7, ... and at 1, 5, 2, ... in the order the inputs name them.
FUSEC_RUN_ARGS (environment) adds options to fusec-run (e.g. tolerances).
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
    alias = {}  # dynamic: symbol -> the symbol it equals
    if data != "dynamic":
        for k, dims in inputs.items():
            cmd += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
    else:
        # Symbolic dims dynamic within 1..64 (the tiny test models have 128
        # positions; fusec's default range, 1..2048, would exceed them).
        import onnx  # only this mode needs it
        m = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        # An exporter may name one dim twice (torch.export: input_ids
        # [s72, s53], attention_mask [s43, s53]); a new symbol at the axis and
        # test extent of an earlier input's symbol is that symbol (NAME=s72x..).
        seen = {}  # (axis, test extent) -> symbol
        for inp in m.graph.input:
            dims = inp.type.tensor_type.shape.dim
            if inp.name in inits or not any(d.dim_param for d in dims):
                continue
            spec = []
            for axis, d in enumerate(dims):
                if d.dim_value > 0:
                    spec.append(str(d.dim_value))
                    continue
                key = (axis, inputs.get(inp.name, [None] * len(dims))[axis])
                if key in seen and seen[key] != d.dim_param:
                    spec.append(seen[key])
                    alias[d.dim_param] = seen[key]
                else:
                    seen.setdefault(key, d.dim_param)
                    spec.append("1..64")
            cmd += ["--shape", inp.name + "=" + "x".join(spec)]
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
    data_dirs = [data_dir]
    if data == "dynamic":
        data_dirs = [os.path.join(model_dir, "test_data_set_0")]
        import onnx  # only this mode needs it
        model = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
        inits = {i.name for i in model.graph.initializer}
        symbols = []
        for inp in model.graph.input:
            for d in inp.type.tensor_type.shape.dim:
                if d.dim_param and d.dim_param not in symbols and inp.name not in inits:
                    symbols.append(d.dim_param)
        maker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "make_test_data.py")
        for tag, values in (("a", [3, 37, 7, 11]), ("b", [1, 5, 2, 3])):
            own = [s for s in symbols if s not in alias]
            binding = {s: values[i % len(values)] for i, s in enumerate(own)}
            binding.update({a: binding[t] for a, t in alias.items()})
            shape_args = []
            for inp in model.graph.input:
                if inp.name in inits:
                    continue
                dims = [d.dim_value if d.dim_value > 0 else binding[d.dim_param]
                        for d in inp.type.tensor_type.shape.dim]
                shape_args += ["--shape", f"{inp.name}={'x'.join(str(x) for x in dims)}"]
            d = f"{out}.data_{tag}"
            r = subprocess.run([sys.executable, maker, os.path.join(model_dir, "model.onnx"), d] + shape_args)
            if r.returncode != 0:
                print(f"FAIL: make_test_data.py exited with {r.returncode}")
                return 1
            data_dirs.append(d)
    cmd = [fusec_run, out, "--precision", precision] + os.environ.get("FUSEC_RUN_ARGS", "").split()
    for d in data_dirs:
        cmd += ["--data", d]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(r.stdout)
    # One verdict line: PASS only when every data set passed.
    verdicts = [line for line in r.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    if r.returncode != 0 or len(verdicts) != len(data_dirs) or any(v.startswith("FAIL") for v in verdicts):
        print(f"FAIL: {sum(v.startswith('PASS') for v in verdicts)} of {len(data_dirs)} data sets passed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
