#!/usr/bin/env bash
# Runs the whole test suite: installs missing dependencies, builds (a normal
# build in build/ and an ASan+UBSan build in build-asan/), then runs every
# test in both with ctest: GoogleTest units, lit + FileCheck, ONNX backend
# node tests, and the shared-model tests; then builds the libFuzzer harnesses
# (build-fuzz/, clang) and runs each for a fixed number of executions from its
# seed corpus (scripts/fuzz.sh). GPU tests skip with a message on a machine
# without a GPU; nvcc tests run as a sample (label nvcc-sample). Usage:
# bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
install_deps
jobs=$(nproc)
# stage NAME: prints the stage and the minutes the run has taken so far (CI
# has 90 minutes on 2 cores; this script is meant to stay under 60).
stage() { printf '== %s (at %dm%02ds) ==\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

stage "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
stage "tests"
# Every test except the nvcc-labelled ones (each runs nvcc over generated
# kernels for 5-20 s); a sample of those, one or two per kernel kind
# (label nvcc-sample, test/CMakeLists.txt), runs here. scripts/gpu/run.sh
# runs them all on the GPU machine.
ctest --test-dir build --output-on-failure -j "$jobs" -LE '^nvcc$'

stage "build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFUSEC_SANITIZE=ON >/dev/null
cmake --build build-asan
stage "tests under ASan + UBSan"
# The nvcc tests (labels nvcc and nvcc-sample) are left out here: they spend
# their time in nvcc, not in our code; so are the pure-Python tests of the
# NumPy NKI model (label python); so is the cpu sample of the node tests
# (label nodetests: ~215 compiles through LLVM, which the plain pass runs and
# whose code the other cpu tests run here); every other test that runs our
# C++ runs.
# use_sigaltstack=0: LLVM (the cpu backend, in-process lld) installs its own
# alternate signal stack, which ASan then fails to unmap at thread exit.
ASAN_OPTIONS=detect_leaks=1:use_sigaltstack=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE 'nvcc|python|nodetests'
stage "fuzzing (libFuzzer, fixed seed and run count)"
# build-fuzz/: clang, libFuzzer-instrumented, only the harnesses' libraries
# (no cpu backend: the import harness compiles for cuda and nki).
bash scripts/fuzz.sh --runs 3000
stage "all tests passed"
