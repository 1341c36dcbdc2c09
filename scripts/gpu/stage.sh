#!/usr/bin/env bash
# Developer tool: prepares what a GPU session on the device machine needs
# (that machine has CUDA, nvcc and PyTorch but none of our Debian -dev
# packages). Builds a stripped Release tree in build-gpu/ and copies into
# .gpu/ (ignored): the shared libraries the tools link that the device lacks,
# and the shared models. Then carry [build-gpu/bin, build-gpu/lib, .gpu] and
# run scripts/gpu/run.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEC_WERROR=ON >/dev/null
cmake --build build-gpu
rm -rf .gpu && mkdir -p .gpu/lib .gpu/shared
strip --strip-unneeded build-gpu/bin/* build-gpu/lib/*.so* 2>/dev/null || true
# Non-system libraries: Abseil, protobuf, ONNX, GoogleTest (not CUDA: the device has it).
for f in build-gpu/bin/* build-gpu/lib/*.so*; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -E "absl|protobuf|onnx|gtest|gmock" | while read -r lib; do
  cp -L "$lib" .gpu/lib/
done
cp -r ../shared/models .gpu/shared/models
cp -r ../shared/bench .gpu/shared/bench
du -sh build-gpu/bin build-gpu/lib .gpu
