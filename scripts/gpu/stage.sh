#!/usr/bin/env bash
# Developer tool: prepares what a GPU session on the device machine needs
# (that machine has CUDA, nvcc and PyTorch but none of our Debian -dev
# packages). Builds a tree in build-gpu/ (no cpu backend) and stages into
# .gpu/ (ignored):
#   .gpu/bin     the device's binaries: fusec, fusec-run, the GPU test binaries
#                (RuntimeTest, CodegenGpuTest, ArtifactGpuTest, and
#                AttentionKernelTest + fusec-emit-attention when they exist,
#                fusec-node-tests for scripts/gpu/node_tests.sh)
#   .gpu/lib     libfusert, the runtime tests' kernel library, and the
#                non-system shared libraries the binaries link (Abseil,
#                protobuf, ONNX, GoogleTest; not CUDA: the device has it)
#   .gpu/shared  ../shared/models and ../shared/bench
# Scripts such as scripts/families (run.sh's families step: the model
# exports run with the device's torch) travel with the working tree, not in
# .gpu; this checks that they are not ignored.
# Then, on the device tool: carry [".gpu"] and run `bash scripts/gpu/run.sh`
# (carrying build-gpu/bin and build-gpu/lib too also works, at a larger
# size). The script checks that the tree that travels (tracked and
# untracked-not-ignored files + .gpu) fits the device tool's 64 MiB.
# Usage: scripts/gpu/stage.sh [--all | --no-build | --from DIR]
#   --all       build every target, not just the device's
#   --no-build  stage what build-gpu/ already holds
#   --from DIR  stage the binaries of an existing build tree (e.g. build/,
#               the RelWithDebInfo tree scripts/test.sh builds) instead of
#               building build-gpu/; on a 2-core machine this saves a whole
#               build. Generated kernels do not depend on how fusec itself
#               was compiled.
# build-gpu is configured as build/ is (RelWithDebInfo, -Werror: the same
# command lines, so ccache serves it from build/'s objects), without the cpu
# backend.
set -euo pipefail
cd "$(dirname "$0")/../.."
all=0 build=1 B=build-gpu
case "${1:-}" in
  --all) all=1 ;;
  --no-build) build=0 ;;
  --from) build=0; B=${2:?--from needs a build folder}; B=${B%/} ;;
  "") ;;
  *) echo "usage: $0 [--all | --no-build | --from DIR]" >&2; exit 2 ;;
esac
[ $build = 1 ] || [ -d "$B/bin" ] || { echo "stage.sh: $B/bin does not exist" >&2; exit 1; }

# RelWithDebInfo like build/ (scripts/test.sh), so ccache shares its objects;
# the binaries are stripped below. Without the cpu backend: fusec and
# fusec-run do not link libLLVM (see the end of this script).
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
GPU_CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEC_WERROR=ON -DFUSEC_CPU_BACKEND=OFF "${launcher[@]}")
TARGETS=(fusec fusec-run fusec_runtime RuntimeTest RuntimeRobustnessTest CodegenGpuTest ArtifactGpuTest DynamicGpuTest)
OPTIONAL=(AttentionKernelTest AttentionCodegenTest fusec-emit-attention fusec-node-tests)
BINS=(fusec fusec-run RuntimeTest RuntimeRobustnessTest CodegenGpuTest ArtifactGpuTest DynamicGpuTest AttentionKernelTest
      AttentionCodegenTest fusec-emit-attention fusec-node-tests)

if [ $build = 0 ]; then
  :
elif [ $all = 1 ]; then
  cmake -S . -B build-gpu -G Ninja "${GPU_CONFIG[@]}" >/dev/null
  cmake --build build-gpu
else
  cmake -S . -B build-gpu -G Ninja "${GPU_CONFIG[@]}" >/dev/null
  known=$(ninja -C build-gpu -t targets all 2>/dev/null | cut -d: -f1)
  for t in "${OPTIONAL[@]}"; do
    grep -qx "$t" <<<"$known" && TARGETS+=("$t")
  done
  cmake --build build-gpu --target "${TARGETS[@]}"
fi

rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/shared
for b in "${BINS[@]}"; do
  [ -x "$B/bin/$b" ] || continue
  strip --strip-unneeded -o ".gpu/bin/$b" "$B/bin/$b"
done
# The fuzz harnesses, when build-fuzz/ has them (scripts/fuzz.sh), for long
# parallel runs on the device's cores (docs/FUZZING.md), with their seeds.
for h in import text-ir manifest; do
  [ -x build-fuzz/bin/fusec-fuzz-$h ] || continue
  strip --strip-unneeded -o .gpu/bin/fusec-fuzz-$h build-fuzz/bin/fusec-fuzz-$h
  [ -d build-fuzz/seeds/$h ] || continue
  mkdir -p .gpu/seeds/$h
  # import: the small seeds only (node-test models); the shared models travel
  # in .gpu/shared and are too large for fast mutation (fuzz.sh --max-len).
  find build-fuzz/seeds/$h -type f -size -64k -exec cp {} .gpu/seeds/$h/ \;
done
for l in "$B/lib/libfusert.so.0" "$B/lib/libfusert.so"; do
  [ -e "$l" ] && strip --strip-unneeded -o ".gpu/lib/$(basename "$l")" "$(readlink -f "$l")"
done
kernels="$B/test/unit/runtime/libfusert_test_kernels.so"
[ -f "$kernels" ] && cp "$kernels" .gpu/lib/
# Non-system libraries: Abseil, protobuf, ONNX, GoogleTest (not CUDA: the device has it).
for f in .gpu/bin/* .gpu/lib/libfusert.so.0; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -E "absl|protobuf|onnx|gtest|gmock|openblas|gfortran|quadmath" | while read -r lib; do
  strip --strip-unneeded -o ".gpu/lib/$(basename "$lib")" "$(readlink -f "$lib")"
done
# libfusert's CPU executor links OpenBLAS (36 MB): it travels xz-compressed
# and scripts/gpu/env.sh unpacks it on the device.
for lib in .gpu/lib/libopenblas*.so*; do
  [ -f "$lib" ] && xz -T2 -f "$lib"
done
# libLLVM-14 (the cpu backend), with z3, ICU 72 and libxml2 behind it,
# neither fits the device tool's 64 MiB nor matches the device's Ubuntu:
# binaries that link it (from a --from tree built with the cpu backend) are
# not staged; build-gpu is configured with -DFUSEC_CPU_BACKEND=OFF.
for b in .gpu/bin/*; do
  if ldd "$b" 2>/dev/null | grep -q libLLVM; then
    echo "stage.sh: not staging $(basename "$b"): it links libLLVM (the cpu backend)"
    rm -f "$b"
  fi
done
# Binaries and libraries over 1 MB travel xz-compressed too (test binaries
# and the fuzz harnesses shrink ~4x); env.sh unpacks them on the device.
for b in .gpu/bin/* .gpu/lib/*; do
  case $b in *.xz) continue ;; esac
  [ -f "$b" ] && [ "$(stat -c %s "$b")" -gt 1048576 ] && xz -T2 -f "$b"
done
# What was staged: HEAD, plus "+dirty" when tracked files differ from it.
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo +dirty)" \
  > .gpu/COMMIT
cp -r ../shared/models .gpu/shared/models
cp -r ../shared/bench .gpu/shared/bench

# scripts/families travels with the working tree (tracked, or untracked and
# not ignored); run.sh's families step needs both scripts there.
for f in scripts/families/export_families.py scripts/families/check_families.sh; do
  if ! git ls-files -co --exclude-standard --error-unmatch "$f" > /dev/null 2>&1; then
    echo "stage.sh: warning: $f does not travel (missing or ignored): run.sh skips its families step" >&2
  fi
done

# Size of what travels: the working tree (tracked + untracked-not-ignored)
# plus .gpu; the device tool refuses more than 64 MiB.
tree_kib=$(git ls-files -z -co --exclude-standard | du -c -k --files0-from=- 2>/dev/null |
           tail -1 | cut -f1)
gpu_kib=$(du -s -k .gpu | cut -f1)
total=$((tree_kib + gpu_kib))
du -sh .gpu/bin .gpu/lib .gpu/shared
echo "travels: working tree ${tree_kib} KiB + .gpu ${gpu_kib} KiB = $((total / 1024)) MiB (limit 64 MiB)"
if [ $total -gt $((64 * 1024)) ]; then
  echo "stage.sh: error: over the device tool's 64 MiB limit" >&2
  exit 1
fi
echo "device: carry [\".gpu\"]; command: bash scripts/gpu/run.sh"
