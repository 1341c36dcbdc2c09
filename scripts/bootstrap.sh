#!/usr/bin/env bash
# Installs every dependency, builds fusec into build/, and runs the main job on
# a bundled model. Safe to re-run. Usage: bash scripts/bootstrap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
install_deps
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
model=examples/models/attn_causal_sdpa
echo "== fusec $model/model.onnx --emit=ir (first lines)"
build/bin/fusec "$model/model.onnx" --emit=ir --elide-constants=16 | head -n 20
echo "== fusec-run --reference $model/model.onnx --data $model/test_data_set_0"
build/bin/fusec-run --reference "$model/model.onnx" --data "$model/test_data_set_0"
