#!/usr/bin/env python3
"""One legality rule, end to end: every model of the stress corpus
(gen_stress_corpus.py, generated into a temporary folder) and of
../shared/models (when present) must compile with `fusec -o --no-nvcc` in
fp32, bf16 and fp16 for every available backend. fusec lowers every fused
group while writing the artifact, so a group that fusion formed and
lowering refuses fails here with the lowering's message.

With GROUP_LEGALITY_TEST (the GroupLegalityTest binary), the corpus and
the shared models are also checked group by group: every fused group is
lowered by every available backend, in every precision.

Usage: run_stress.py FUSEC [SHARED_MODELS_DIR [GROUP_LEGALITY_TEST]]
"""
import json
import os
import subprocess
import sys
import tempfile

BACKENDS = ["cuda", "nki"]  # cpu: not available yet (codegen::backendFor)
PRECISIONS = ["fp32", "bf16", "fp16"]


def shape_flags(shapes):
    flags = []
    for name, dims in shapes.items():
        flags += ["--shape", "%s=%s" % (name, "x".join(str(d) for d in dims))]
    return flags


def main():
    fusec = sys.argv[1]
    shared = sys.argv[2] if len(sys.argv) > 2 else ""
    group_test = sys.argv[3] if len(sys.argv) > 3 else ""
    here = os.path.dirname(os.path.abspath(__file__))
    failures, runs = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        subprocess.run([sys.executable, os.path.join(here, "gen_stress_corpus.py"), corpus],
                       check=True)
        models = []
        for name, shapes in json.load(open(os.path.join(corpus, "manifest.json"))).items():
            models.append((name, os.path.join(corpus, name, "model.onnx"), shapes))
        if shared and os.path.exists(os.path.join(shared, "manifest.json")):
            for name, info in json.load(open(os.path.join(shared, "manifest.json"))).items():
                path = os.path.join(shared, name, "model.onnx")
                if os.path.exists(path):
                    models.append((name, path, info["inputs"]))
        for name, path, shapes in models:
            for backend in BACKENDS:
                for prec in PRECISIONS:
                    out = os.path.join(tmp, "out", "%s_%s_%s" % (name, backend, prec))
                    cmd = [fusec, path] + shape_flags(shapes) + [
                        "--target", backend, "--precision", prec, "-o", out, "--no-nvcc"]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    runs += 1
                    if r.returncode != 0:
                        failures.append("%s %s %s: %s" % (name, backend, prec, r.stderr.strip()))
        if group_test:
            env = dict(os.environ)
            env["FUSEC_LEGALITY_MODELS"] = ":".join(d for d in (corpus, shared) if d)
            r = subprocess.run([group_test], capture_output=True, text=True, env=env)
            runs += 1
            print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "")
            if r.returncode != 0:
                failures.append("GroupLegalityTest:\n" + r.stdout[-4000:])
    for f in failures:
        print("FAIL", f)
    print("%d compiles, %d failed" % (runs, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
