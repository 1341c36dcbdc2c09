#!/usr/bin/env bash
# bench/e2e/run_e2e.sh [e2e.py options]: the end-to-end benchmark (GPT-2
# small and BERT-base by default; --models llama,llama-8x512,resnet50,effnet_b0
# for the others: fusec vs PyTorch eager / SDPA / torch.compile, with
# numerics check and per-step profile). Run it on the GPU machine from the
# repo copy, after scripts/gpu/stage.sh was run on the build machine and its
# output carried (see scripts/gpu/stage.sh). Writes its log to $OUT/e2e.log
# and its results to $OUT/e2e.json when OUT is set.
set -uo pipefail
source "$(dirname "$0")/../../scripts/gpu/env.sh"
cd "$FUSEC_ROOT" || exit 1
json=()
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  json=(--json "$OUT/e2e.json")
fi
python3 bench/e2e/e2e.py --fusec "$FUSEC_BIN/fusec" --libfusert "$FUSEC_LIBFUSERT" \
  "${json[@]}" "$@"
