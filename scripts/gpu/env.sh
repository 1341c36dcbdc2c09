# shellcheck shell=bash
# scripts/gpu/env.sh - sourced (bash) by scripts/gpu/run.sh and
# bench/e2e/run_e2e.sh on the GPU machine. The repo copy lands at an unknown
# path there: this sets FUSEC_ROOT to it, points /work/main and /work/shared
# at it and at .gpu/shared (test binaries carry absolute paths from the build
# machine), and sets PATH / LD_LIBRARY_PATH so the staged binaries find the
# Debian libraries staged in .gpu/lib and the device's CUDA, cuBLASLt and
# cuDNN. Binaries are taken from .gpu/bin (stage.sh's trimmed copy), else
# build-gpu/bin; FUSEC_BIN names the folder used.
FUSEC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export FUSEC_ROOT
# Staged binaries and libraries over 1 MB travel xz-compressed (stage.sh).
for z in "$FUSEC_ROOT"/.gpu/lib/*.xz "$FUSEC_ROOT"/.gpu/bin/*.xz; do
  [ -f "$z" ] && [ ! -f "${z%.xz}" ] && xz -dk "$z"
done
if [ -x "$FUSEC_ROOT/.gpu/bin/fusec" ]; then
  FUSEC_BIN=$FUSEC_ROOT/.gpu/bin
else
  FUSEC_BIN=$FUSEC_ROOT/build-gpu/bin
fi
export FUSEC_BIN

# /work/main -> repo copy, /work/shared -> .gpu/shared (only where they are
# missing or already links: never replace a real folder).
if [ "$FUSEC_ROOT" != /work/main ]; then
  mkdir -p /work 2>/dev/null || true
  if [ ! -e /work/main ] || [ -L /work/main ]; then
    ln -sfn "$FUSEC_ROOT" /work/main 2>/dev/null || true
  fi
  if [ -d "$FUSEC_ROOT/.gpu/shared" ] && { [ ! -e /work/shared ] || [ -L /work/shared ]; }; then
    ln -sfn "$FUSEC_ROOT/.gpu/shared" /work/shared 2>/dev/null || true
  fi
fi

# CUDA libraries of the device: the toolkit's, else the pip wheels PyTorch uses.
if [ -z "${FUSEC_CUDA_LIBDIRS:-}" ]; then
  FUSEC_CUDA_LIBDIRS=$(for n in libcudart.so.13 libcublasLt.so.13 libcudnn.so.9; do
      find /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local /usr/lib /opt \
        -maxdepth 9 -name "$n" 2>/dev/null | head -1
    done | xargs -r -n1 dirname | awk '!seen[$0]++' | tr '\n' ':')
  export FUSEC_CUDA_LIBDIRS
fi
# Libraries that travel compressed (stage.sh): unpack them once.
export LD_LIBRARY_PATH="$FUSEC_ROOT/.gpu/lib:$FUSEC_ROOT/build-gpu/lib:${FUSEC_CUDA_LIBDIRS}${LD_LIBRARY_PATH:-}"
for d in /usr/local/cuda/bin /usr/local/cuda-13*/bin; do
  [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH="$d:$PATH" ;; esac
done
export PATH
export FUSEC_SHARED_MODELS="$FUSEC_ROOT/.gpu/shared/models"
if [ -f "$FUSEC_ROOT/.gpu/lib/libfusert_test_kernels.so" ]; then
  export FUSERT_TEST_KERNELS="$FUSEC_ROOT/.gpu/lib/libfusert_test_kernels.so"
fi
# The libfusert that e2e.py loads with ctypes.
if [ -f "$FUSEC_ROOT/.gpu/lib/libfusert.so" ]; then
  export FUSEC_LIBFUSERT="$FUSEC_ROOT/.gpu/lib/libfusert.so"
else
  export FUSEC_LIBFUSERT="$FUSEC_ROOT/build-gpu/lib/libfusert.so"
fi
export PYTHONUNBUFFERED=1
