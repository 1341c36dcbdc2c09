"""ctest driver: an If whose condition is known only at run time, through fusec.

    python3 run_runtime_if.py FUSEC FUSEC_RUN OUT_DIR MODE

Builds (onnx.helper) a silero-VAD style model: a nested If on a scalar int64
input `sr` (`if sr == 16000: Conv+Relu subnet; elif sr == 8000: MatMul+Add
subnet; else: a constant`), each branch giving a [1, 4, 8] tensor, followed by
an Add with the input outside the If. Expected outputs for sr = 16000, 8000 and
1234 come from ONNX Runtime's CPU provider. Then:

- MODE "cpu": the reference interpreter on each data set (fusec-run
  --reference, with and without --optimize); ONE `fusec --target cpu -o`
  artifact; its --dump-fusion must report the run-time condition; fusec-run on
  the artifact for each data set (the same artifact choosing its branch per run).
- MODE "cuda": one `fusec --target cuda -o` artifact (nvcc builds libmodel.so);
  on a machine with a GPU, fusec-run on it for each data set; without one the
  run is skipped after the compile (the lead runs it on the GPU machine).

Prints one verdict per step; exits 0 when all pass, 77 when onnx/onnxruntime
are missing (and no cases were generated before).
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime
    MISSING = None
except ImportError as e:  # the GPU machine may lack onnxruntime
    MISSING = e

SAMPLE_RATES = [16000, 8000, 1234]


def build_model(path):
    rng = np.random.default_rng(11)
    w_conv = rng.standard_normal((4, 4, 3)).astype(np.float32) * 0.5
    b_conv = rng.standard_normal((4,)).astype(np.float32) * 0.1
    w_mm = rng.standard_normal((4, 4)).astype(np.float32) * 0.5
    b_mm = rng.standard_normal((4,)).astype(np.float32) * 0.1
    const_out = rng.standard_normal((1, 4, 8)).astype(np.float32)
    out_info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8])

    # sr == 16000: Conv1d (pads 1) + Relu.
    conv_branch = helper.make_graph(
        [helper.make_node("Conv", ["x", "w_conv", "b_conv"], ["c0"], pads=[1, 1],
                          kernel_shape=[3]),
         helper.make_node("Relu", ["c0"], ["y16"])],
        "sr16000", [], [out_info("y16")],
        initializer=[numpy_helper.from_array(w_conv, "w_conv"),
                     numpy_helper.from_array(b_conv, "b_conv")])
    # sr == 8000: x^T @ W + b, transposed back, then tanh.
    mm_branch = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["xt", "w_mm"], ["m0"]),
         helper.make_node("Add", ["m0", "b_mm"], ["m1"]),
         helper.make_node("Transpose", ["m1"], ["m2"], perm=[0, 2, 1]),
         helper.make_node("Tanh", ["m2"], ["y8"])],
        "sr8000", [], [out_info("y8")],
        initializer=[numpy_helper.from_array(w_mm, "w_mm"),
                     numpy_helper.from_array(b_mm, "b_mm")])
    # Any other rate: a constant.
    const_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["yc"], value=numpy_helper.from_array(const_out))],
        "other_rate", [], [out_info("yc")])
    inner = helper.make_graph(
        [helper.make_node("Constant", [], ["k8000"],
                          value=numpy_helper.from_array(np.array(8000, dtype=np.int64))),
         helper.make_node("Equal", ["sr", "k8000"], ["is8k"]),
         helper.make_node("If", ["is8k"], ["y_else"], name="if_sr8000",
                          then_branch=mm_branch, else_branch=const_branch)],
        "not16000", [], [out_info("y_else")])
    nodes = [
        helper.make_node("Constant", [], ["k16000"],
                         value=numpy_helper.from_array(np.array(16000, dtype=np.int64))),
        helper.make_node("Equal", ["sr", "k16000"], ["is16k"]),
        helper.make_node("If", ["is16k"], ["y_if"], name="if_sr16000",
                         then_branch=conv_branch, else_branch=inner),
        helper.make_node("Add", ["y_if", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "runtime_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_data(model_path, out_dir):
    sess = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    dirs = []
    for k, sr in enumerate(SAMPLE_RATES):
        x = rng.standard_normal((1, 4, 8)).astype(np.float32)
        srv = np.array(sr, dtype=np.int64)
        (y,) = sess.run(None, {"x": x, "sr": srv})
        d = os.path.join(out_dir, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        for i, (name, v) in enumerate([("x", x), ("sr", srv)]):
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, name).SerializeToString())
        with open(os.path.join(d, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, "y").SerializeToString())
        dirs.append((sr, d))
    return dirs


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def main(fusec, fusec_run, out_dir, mode):
    model = os.path.join(out_dir, "model.onnx")
    if MISSING is None:
        os.makedirs(out_dir, exist_ok=True)
        build_model(model)
        cases = write_data(model, out_dir)
    elif os.path.exists(os.path.join(out_dir, "test_data_set_0")):
        print(f"using the model and data in {out_dir} ({MISSING})")
        cases = [(sr, os.path.join(out_dir, f"test_data_set_{k}"))
                 for k, sr in enumerate(SAMPLE_RATES)]
    else:
        print(f"SKIPPED: {MISSING}")
        return 77
    failed = []

    def check(what, cmd, want):
        rc, out = run(cmd)
        ok = rc == 0 and want in out
        print(f"{'PASS' if ok else 'FAIL'} {what}")
        if not ok:
            print(out)
            failed.append(what)
        return out

    target = "cpu" if mode == "cpu" else "cuda"
    if mode == "cpu":
        for sr, d in cases:
            check(f"reference sr={sr}", [fusec_run, "--reference", model, "--data", d], "PASS")
            check(f"reference --optimize sr={sr}",
                  [fusec_run, "--reference", "--optimize", model, "--data", d], "PASS")
    dump = check("dump-fusion", [fusec, model, "--target", target, "--dump-fusion"],
                 "condition known at run time: kernels")
    for want in ("run when 'is16k'", "run when not 'is16k' and 'if_sr16000/else/is8k'"):
        if want not in dump:
            print(f"FAIL dump-fusion lacks \"{want}\"")
            failed.append(f"dump {want}")
    art = os.path.join(out_dir, f"{mode}.fusec")
    check(f"compile --target {target} (once)", [fusec, model, "--target", target, "-o", art], "")
    with open(os.path.join(art, "manifest.json")) as f:
        if '"guard"' not in f.read():
            print("FAIL the manifest has no guarded step")
            failed.append("manifest guard")
    if target == "cuda" and not has_gpu():
        print("SKIPPED the cuda runs: no GPU here (run this on the GPU machine)")
    else:
        for sr, d in cases:
            check(f"{target} artifact sr={sr}", [fusec_run, art, "--data", d], "PASS")
    print(f"runtime If ({mode}): {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[4] not in ("cpu", "cuda"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
