"""ctest driver: the ONNX Runtime contrib-op cases of make_contrib_models.py through fusec.

    python3 run_contrib_ops.py FUSEC FUSEC_RUN OUT_DIR MODE [CASE_FILTER]

Generates the cases into OUT_DIR (models and expected outputs from ONNX Runtime's CPU
provider), then per case: MODE "reference" runs `fusec-run --reference` (the interpreter on
the imported graph) and `fusec-run --reference --optimize` (after the whole pass pipeline);
MODE "cpu" compiles with `fusec --target cpu` and runs the artifact with fusec-run; "cuda" does
the same for the GPU; "cpu-bf16" / "cuda-bf16" compile and compare with --precision bf16. Each verdict is printed; exits 0 when every
case passes. A case's manifest entry may carry its own f32 tolerance ("atol", "rtol"; the bf16
modes keep fusec-run's) and "bf16": false (left out of the bf16 modes). CASE_FILTER keeps the
cases whose name contains it. Without onnxruntime (the GPU
machine) the cases already in OUT_DIR are used: generate them first with
`python3 test/make_contrib_models.py OUT_DIR`.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import make_contrib_models  # noqa: E402 (needs numpy and onnx)
    import onnxruntime  # noqa: F401,E402 (the expected outputs)
    MISSING = None
except ImportError as e:
    MISSING = e


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def main(fusec, fusec_run, out_dir, mode, case_filter=""):
    if MISSING is None:
        make_contrib_models.main(out_dir)
    elif os.path.exists(os.path.join(out_dir, "manifest.json")):
        # No onnxruntime here (the GPU machine): the cases generated elsewhere are used.
        print(f"using the cases in {out_dir} ({MISSING})")
    else:
        print(f"SKIPPED: {MISSING}")
        return 77
    with open(os.path.join(out_dir, "manifest.json")) as f:
        manifest = json.load(f)
    failed, skipped = [], 0
    for name, info in sorted(manifest.items()):
        if case_filter and case_filter not in name:
            continue
        if mode.endswith("-bf16") and not info.get("bf16", True):
            print(f"skip {name} (not a bf16 case: make_contrib_models.py says why)")
            skipped += 1
            continue
        model = os.path.join(out_dir, name, "model.onnx")
        data = os.path.join(out_dir, name, "test_data_set_0")
        shapes = []
        for k, dims in info["inputs"].items():
            if dims:
                shapes += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
        # A case's own tolerance for the f32 outputs (the bf16 modes keep fusec-run's model-level one).
        tol = ["--atol", str(info["atol"]), "--rtol", str(info["rtol"])] if "atol" in info else []
        if mode == "reference":
            steps = [[fusec_run, "--reference", model, "--data", data] + tol,
                     [fusec_run, "--reference", "--optimize", model, "--data", data] + tol]
        elif mode in ("cpu", "cpu-bf16", "cuda", "cuda-bf16"):
            target = mode.split("-")[0]
            prec = ["--precision", "bf16"] if mode.endswith("-bf16") else []
            art = os.path.join(out_dir, name, f"{mode}.fusec")
            steps = [[fusec, model, "--target", target, "-o", art] + shapes + prec,
                     [fusec_run, art, "--data", data] + prec + ([] if prec else tol)]
        else:
            print(f"unknown mode {mode!r} (reference, cpu, cpu-bf16, cuda or cuda-bf16)")
            return 2
        ok = True
        for cmd in steps:
            rc, out = run(cmd)
            if rc != 0:
                ok = False
                print(f"FAIL {name}: {' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}")
                print("  " + out.strip().replace("\n", "\n  "))
                break
        if ok:
            print(f"ok   {name}")
        else:
            failed.append(name)
    total = sum(1 for n in manifest if not case_filter or case_filter in n)
    print(f"contrib ops ({mode}): {total - skipped - len(failed)} of {total - skipped} cases pass"
          + (f" ({skipped} skipped)" if skipped else ""))
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
