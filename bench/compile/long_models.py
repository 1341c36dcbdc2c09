#!/usr/bin/env python3
"""Compile time of long models (issue 10): `fusec -o` wall and user time for
Add/Tanh chains and balanced Add trees, cuda (--no-nvcc) and nki. The
models are test/stress/run_long_models.py's.

Usage: bench/compile/long_models.py FUSEC [--chains 2000,6000,20000]
                                          [--trees 10000,100000]   (leaves)
Prints one line per compile: model, target, rc, wall s, user s.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "stress"))
import numpy as np  # noqa: E402
import run_long_models as models  # noqa: E402


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.returncode, wall, after.ru_utime - before.ru_utime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fusec")
    ap.add_argument("--chains", default="2000,6000,20000")
    ap.add_argument("--trees", default="10000,100000")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        todo = [("chain%s" % n, models.chain, int(n)) for n in a.chains.split(",") if n]
        todo += [("addtree%d" % (2 * int(n) - 1), models.add_tree, int(n)) for n in a.trees.split(",") if n]
        for name, gen, n in todo:
            folder = os.path.join(tmp, name)
            gen(folder, n, rng)
            model = os.path.join(folder, "model.onnx")
            for target, extra in (("cuda", ["--no-nvcc"]), ("nki", ["--target", "nki"])):
                rc, wall, user = timed([a.fusec, model, "-o", os.path.join(tmp, name + target)] + extra)
                print("%-14s %-5s rc %d  wall %7.2f s  user %7.2f s" % (name, target, rc, wall, user), flush=True)


if __name__ == "__main__":
    main()
