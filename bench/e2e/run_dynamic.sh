#!/usr/bin/env bash
# bench/e2e/run_dynamic.sh [dynamic.py options]: compile once, run any shape
# (GPT-2 small and BERT-base compiled once with dynamic batch and sequence,
# run at three shapes each, against static fusec artifacts per shape and
# torch.compile dynamic=True / per-shape static). Run it on the GPU machine
# from the repo copy, after scripts/gpu/stage.sh was run on the build machine
# and its output carried (see scripts/gpu/stage.sh). Writes its results to
# $OUT/dynamic.json when OUT is set.
set -uo pipefail
source "$(dirname "$0")/../../scripts/gpu/env.sh"
cd "$FUSEC_ROOT" || exit 1
json=()
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  json=(--json "$OUT/dynamic.json")
fi
python3 bench/e2e/dynamic.py --fusec "$FUSEC_BIN/fusec" --libfusert "$FUSEC_LIBFUSERT" \
  "${json[@]}" "$@"
