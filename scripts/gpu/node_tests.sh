#!/usr/bin/env bash
# scripts/gpu/node_tests.sh - the ONNX node tests compiled for CUDA and run on
# the GPU (issue 11 item 4: "every node test whose op has a CUDA lowering is
# compiled with fusec -o and run on the H200 by the GPU script").
#
# On the device tool, after scripts/gpu/stage.sh here (carry [".gpu"]):
#   bash scripts/gpu/node_tests.sh [--jobs J] [--precision fp32|bf16|both] [--filter F] [--seconds S] [--skip-first N]
# Writes the node tests of the installed onnx package with
# test/conformance/generate_node_tests.py (the device has pip onnx), keeps
# those that pass the reference interpreter (fusec-node-tests), compiles each
# with `fusec -o` (nvcc included, J at once, default cores - 2) and runs it
# with fusec-run against every data set of the test: fp32 at the default
# tolerances, bf16 (--precision bf16) at the model tolerance 0.05/0.05.
# Prints, per precision, the tests refused or failing and the totals
# ("compiled: C of R reference-passing tests (...); P PASS fusec-run");
# with --seconds S, tests not started S seconds after the start (split
# evenly between the precisions) are left out and counted.
# the same lines go to $OUT/node-tests-<precision>.txt (OUT: ./gpu-out).
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$FUSEC_ROOT" || exit 1
jobs=$(( $(nproc) > 4 ? $(nproc) - 2 : 2 )) precision=fp32 filter= seconds=
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --skip-first) export SKIP_FIRST=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs J] [--precision fp32|bf16|both] [--filter F] [--seconds S]" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$FUSEC_ROOT/gpu-out}
mkdir -p "$OUT"
root=${FUSEC_GPU_WORK:-/tmp/fusec-gpu}/onnx-node-tests
if [ ! -d "$root" ]; then
  python3 test/conformance/generate_node_tests.py "$root" | tail -1 || exit 1
fi
[ -x "$FUSEC_BIN/fusec-node-tests" ] || { echo "node tests: SKIPPED (fusec-node-tests not staged)"; exit 0; }
case $precision in
  both) precisions=(fp32 bf16) ;;
  fp32|bf16) precisions=("$precision") ;;
  *) echo "node_tests.sh: unknown precision '$precision'" >&2; exit 2 ;;
esac
for p in "${precisions[@]}"; do
  target=cuda-nvcc
  [ "$p" = bf16 ] && target=cuda-nvcc-bf16
  echo "== node tests, $p ($target, $jobs jobs)"
  deadline=
  [ -n "$seconds" ] && deadline=$(( $(date +%s) + seconds / ${#precisions[@]} ))
  DEADLINE=$deadline JOBS=$jobs bash test/conformance/compile_node_tests.sh "$FUSEC_BIN" "$root" "$filter" "$target" |
    tee "$OUT/node-tests-$p.txt" | tail -40
done
