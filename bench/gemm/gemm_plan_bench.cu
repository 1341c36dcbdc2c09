//===- gemm_plan_bench.cu - libfusert's gemm plan alone: check and time ---===//
//
// Runs one gemm step through the runtime's own GemmPlan (runtime/GemmPlan.cpp,
// its tiles from runtime/GemmTiling.cpp) with B a "weight" copied at load as
// CudaExecutor does (wantedBCopies), checks every element of a poisoned D
// against a naive CUDA kernel (f32 accumulation), and times the plan and one
// aligned cuBLASLt call of the same size (n rounded up to 16) for reference.
// No compiler, no artifact: a quick look at the gemm path on a GPU.
//
// Build (from the repo root; the runtime's headers and three of its sources):
//   nvcc -O2 -std=c++17 -arch=sm_90 -I. -Iruntime/include bench/gemm/gemm_plan_bench.cu \
//        runtime/GemmPlan.cpp runtime/GemmTiling.cpp runtime/DType.cpp -lcublasLt -o gemm_plan_bench
// Run: ./gemm_plan_bench M N K bf16|f16 f32|half [transB 0|1]   (default: GPT-2's head, f32 D)
//
//===----------------------------------------------------------------------===//
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/internal/GemmPlan.h"

using namespace fusec::rt;

namespace {

#define CHECK_CUDA(x)                                                                  \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

template <typename T> __device__ float toF(T v) { return static_cast<float>(v); }
template <> __device__ float toF(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ float toF(__half v) { return __half2float(v); }

/// Fills \p n elements with small exact values (multiples of 1/16 in [-0.5, 0.5]).
template <typename T> __global__ void fill(T *p, int64_t n, int salt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = T(float(int((i * 7 + salt) % 17) - 8) / 16.0f);
}

/// ref[i, j] = sum_l A[i, l] * op(B)[l, j] in f32.
template <typename T> __global__ void reference(const T *a, const T *b, float *ref, int64_t m, int64_t n,
                                                int64_t k, bool transB) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, i = blockIdx.y;
  if (j >= n || i >= m) return;
  float acc = 0;
  for (int64_t l = 0; l < k; ++l) acc += toF(a[i * k + l]) * toF(b[transB ? j * k + l : l * n + j]);
  ref[i * n + j] = acc;
}

/// Counts elements of D (f32 or T) off the reference by more than tol (relative), NaN included.
template <typename D> __global__ void compare(const D *d, const float *ref, int64_t total, float tol,
                                              unsigned long long *bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = toF(d[i]), r = ref[i];
    if (!(fabsf(v - r) <= tol * (1.0f + fabsf(r)))) atomicAdd(bad, 1ull);
  }
}

template <typename T> int runCase(int64_t m, int64_t n, int64_t k, fusert_dtype dtype, bool f32D, bool transB) {
  GemmDesc g;
  g.a = 0;
  g.b = 1;
  g.d = 2;
  g.m = m;
  g.n = n;
  g.k = k;
  g.transB = transB;
  g.strideA = m * k;
  g.strideB = k * n;
  g.strideD = m * n;
  g.dtype = dtype;
  g.dDtype = f32D ? FUSERT_F32 : dtype;
  const size_t eD = f32D ? 4 : 2;
  T *a, *b;
  void *d;
  float *ref;
  CHECK_CUDA(cudaMalloc(&a, m * k * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&b, k * n * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&d, m * n * eD));
  CHECK_CUDA(cudaMalloc(&ref, m * n * sizeof(float)));
  fill<<<1024, 256>>>(a, m * k, 1);
  fill<<<1024, 256>>>(b, k * n, 5);
  reference<<<dim3(unsigned((n + 255) / 256), unsigned(m)), 256>>>(a, b, ref, m, n, k, transB);
  CHECK_CUDA(cudaGetLastError());

  // B copies, as CudaExecutor::weightBCopies makes them.
  const std::vector<GemmTile> tiles = gemmTiles(g);
  std::vector<GemmBCopy> copies = wantedBCopies(g, tiles);
  const int64_t rows = transB ? n : k, ld = denseLdB(g);
  for (GemmBCopy &c : copies) {
    CHECK_CUDA(cudaMalloc(const_cast<void **>(&c.data), rows * c.ld * sizeof(T)));
    CHECK_CUDA(cudaMemset(const_cast<void *>(c.data), 0, rows * c.ld * sizeof(T)));
    CHECK_CUDA(cudaMemcpy2D(const_cast<void *>(c.data), c.ld * sizeof(T), b + c.shift, ld * sizeof(T),
                            (ld - c.shift) * sizeof(T), rows, cudaMemcpyDeviceToDevice));
  }
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  const size_t wsBytes = 32u << 20;
  void *ws;
  CHECK_CUDA(cudaMalloc(&ws, wsBytes));
  GemmPointers p;
  p.a = a;
  p.b = b;
  p.d = d;
  GemmPlan plan;
  Status st = plan.init(lt, g, p, wsBytes, copies);
  if (!st.ok()) {
    std::fprintf(stderr, "init: %s\n", st.message().c_str());
    return 1;
  }
  CHECK_CUDA(cudaMemset(d, 0xFF, m * n * eD));  // NaN: every element must be written
  st = plan.run(p, ws, nullptr);
  if (!st.ok()) {
    std::fprintf(stderr, "run: %s\n", st.message().c_str());
    return 1;
  }
  unsigned long long *bad, hostBad = 0;
  CHECK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
  CHECK_CUDA(cudaMemset(bad, 0, sizeof(*bad)));
  const float tol = f32D ? 1e-5f : 8e-3f;
  if (f32D)
    compare<<<1024, 256>>>(static_cast<const float *>(d), ref, m * n, tol, bad);
  else
    compare<<<1024, 256>>>(static_cast<const T *>(d), ref, m * n, tol, bad);
  CHECK_CUDA(cudaMemcpy(&hostBad, bad, sizeof(hostBad), cudaMemcpyDeviceToHost));

  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto timeIt = [&](auto &&fn) {
    for (int i = 0; i < 3; ++i) fn();
    cudaEventRecord(e0);
    for (int i = 0; i < 20; ++i) fn();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms / 20;
  };
  const float planMs = timeIt([&] { (void)plan.run(p, ws, nullptr); });
  // Reference: the same problem with n rounded up to 16 (every row aligned), one call.
  GemmDesc aligned = g;
  aligned.n = (n + 15) / 16 * 16;
  aligned.strideB = k * aligned.n;
  aligned.strideD = m * aligned.n;
  T *b2;
  void *d2;
  CHECK_CUDA(cudaMalloc(&b2, k * aligned.n * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&d2, m * aligned.n * eD));
  fill<<<1024, 256>>>(b2, k * aligned.n, 5);
  GemmPointers p2 = p;
  p2.b = b2;
  p2.d = d2;
  GemmPlan plan2;
  st = plan2.init(lt, aligned, p2, wsBytes);
  const float alignedMs = st.ok() ? timeIt([&] { (void)plan2.run(p2, ws, nullptr); }) : -1;
  CHECK_CUDA(cudaDeviceSynchronize());
  const double flop = 2.0 * m * n * k;
  std::printf("m=%lld n=%lld k=%lld %s->%s transB=%d: %zu tiles, %zu B copies, %llu bad of %lld; "
              "plan %.3f ms (%.0f TFLOP/s); aligned n=%lld one call %.3f ms (%.0f TFLOP/s); ratio %.2f\n",
              (long long)m, (long long)n, (long long)k, fusert_dtype_name(dtype), f32D ? "f32" : "half",
              int(transB), plan.numTiles(), copies.size(), hostBad, (long long)(m * n), planMs,
              flop / planMs / 1e9, (long long)aligned.n, alignedMs, 2.0 * m * aligned.n * k / alignedMs / 1e9,
              alignedMs / planMs * double(n) / double(aligned.n));
  return hostBad == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char **argv) {
  const int64_t m = argc > 1 ? std::atoll(argv[1]) : 8192, n = argc > 2 ? std::atoll(argv[2]) : 50257,
                k = argc > 3 ? std::atoll(argv[3]) : 768;
  const std::string dt = argc > 4 ? argv[4] : "bf16", dd = argc > 5 ? argv[5] : "f32";
  const bool transB = argc > 6 && std::atoi(argv[6]) != 0;
  if (dt == "f16") return runCase<__half>(m, n, k, FUSERT_F16, dd == "f32", transB);
  return runCase<__nv_bfloat16>(m, n, k, FUSERT_BF16, dd == "f32", transB);
}
