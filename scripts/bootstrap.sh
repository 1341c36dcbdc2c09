#!/usr/bin/env bash
# Installs every dependency, builds fusec into build/, and runs the main job
# on the bundled model: compile it to a CUDA artifact, show the fusion plan,
# and check it against its expected outputs (on the GPU when there is one,
# else with the reference interpreter). Safe to re-run.
# Usage: bash scripts/bootstrap.sh [--tools]
#   --tools  build only the tools and the runtime (fusec, fusec-run,
#            fusec-opt, libfusert), not the test binaries: about half the
#            build; scripts/test.sh builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
case "${1:-}" in
  --tools) targets=(--target fusec fusec-run fusec-opt fusec_runtime) ;;
  "") ;;
  *) echo "usage: $0 [--tools]" >&2; exit 2 ;;
esac
source scripts/deps.sh
install_deps
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}"
cmake --build build "${targets[@]}"
model=examples/models/attn_causal_sdpa
shapes=(--shape x=2x24x128)
echo "== fusec $model/model.onnx ${shapes[*]} --dump-fusion"
build/bin/fusec "$model/model.onnx" "${shapes[@]}" --dump-fusion
echo "== fusec $model/model.onnx ${shapes[*]} -o build/attn_causal_sdpa.fusec"
build/bin/fusec "$model/model.onnx" "${shapes[@]}" -o build/attn_causal_sdpa.fusec
ls -l build/attn_causal_sdpa.fusec
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== fusec-run build/attn_causal_sdpa.fusec (GPU)"
  build/bin/fusec-run build/attn_causal_sdpa.fusec --data "$model/test_data_set_0" --bench 100
else
  echo "== no GPU here: checking the optimised graph with the reference interpreter instead"
  build/bin/fusec-run --reference --optimize "$model/model.onnx" --data "$model/test_data_set_0"
fi
