//===- TestKernels.cu - Hand-written kernel symbols for runtime tests -===//
//
// Stands in for a generated libmodel.so: each symbol has the artifact ABI
// `extern "C" int symbol(void *const *buffers, cudaStream_t stream)` and works
// on kTestElements f32 values.
//
//===----------------------------------------------------------------------===//
#include <cstdint>

#include <cuda_runtime.h>

namespace {

constexpr int kTestElements = 1000;

__global__ void addKernel(const float *x, const float *w, float *t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    t[i] = x[i] + w[i];
}

__global__ void scaleKernel(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = 2.0f * in[i];
}

int blocks(int n) { return (n + 255) / 256; }

} // namespace

/// buffers: x, w, t (f32[1000] each); t = x + w.
extern "C" int fusert_test_add(void *const *buffers, cudaStream_t stream) {
  addKernel<<<blocks(kTestElements), 256, 0, stream>>>(
      static_cast<const float *>(buffers[0]),
      static_cast<const float *>(buffers[1]), static_cast<float *>(buffers[2]),
      kTestElements);
  return static_cast<int>(cudaGetLastError());
}

/// buffers: in, out (f32[1000] each); out = 2 * in.
extern "C" int fusert_test_scale(void *const *buffers, cudaStream_t stream) {
  scaleKernel<<<blocks(kTestElements), 256, 0, stream>>>(
      static_cast<const float *>(buffers[0]), static_cast<float *>(buffers[1]),
      kTestElements);
  return static_cast<int>(cudaGetLastError());
}

/// Dynamic shapes (the kernel ABI of an artifact with "symbols"): buffers
/// in, out (f32[batch, seq, 32]); symbols: batch, seq; out = 2 * in.
extern "C" int fusert_test_dyn_scale(void *const *buffers, const int64_t *symbols,
                                     cudaStream_t stream) {
  const int n = static_cast<int>(32 * symbols[0] * symbols[1]);
  scaleKernel<<<blocks(n), 256, 0, stream>>>(static_cast<const float *>(buffers[0]),
                                              static_cast<float *>(buffers[1]), n);
  return static_cast<int>(cudaGetLastError());
}

// The manifest digest a generated library records (runtime/ArtifactFormat.h:
// kManifestDigestSymbol, with kManifestDigestPlaceholder spelled out here);
// the tests' installLibrary() substitutes the digest of the manifest they
// write, as the artifact writer does.
extern "C" __attribute__((visibility("default"))) const char fusec_manifest_digest[] =
    "fnv1a64:@@manifest@@@@@@";
