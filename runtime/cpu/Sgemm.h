//===- Sgemm.h - The single-threaded sgemm handed to cpu kernels -*- C++ -*-===//
//
// fusert_cpu_context.sgemm (runtime/include/fusert/fusert_cpu_kernel.h):
// row-major C = alpha op(A) op(B) + beta C on the calling thread, through
// OpenBLAS's cblas_sgemm.
//
// Threads: libfusert links the OpenBLAS that libopenblas-dev selects (on
// Debian 12, the pthread build of 0.3.21). configureBlasThreads() calls
// openblas_set_num_threads(1) once per process, before the first cpu model
// runs, so that every cblas_sgemm runs on its caller only and never hands
// work to OpenBLAS's own thread server: the parallelism is the model's
// pool, and several pool threads (of one model or of several) may be inside
// cblas_sgemm at once. That is safe in the pthread build: with one thread,
// interface/gemm.c calls the level-3 driver directly on the caller, whose
// only shared state is the pool of packing buffers in driver/others/
// memory.c, taken and returned under its lock (and, past its
// 2 * MAX_THREADS = 128 preallocated slots, from an overflow list). The
// thread server, which is not reentrant, is never entered. The setting is
// process-wide: an application that also calls OpenBLAS gets one thread
// there too (docs/RUNTIME.md says so).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CPU_SGEMM_H
#define FUSEC_RUNTIME_CPU_SGEMM_H

#include <cstdint>

namespace fusec::rt {

/// Sets OpenBLAS to one thread (once per process; later calls do nothing).
void configureBlasThreads();

/// The ABI's sgemm: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C,
/// row-major, op = transpose when trans_* != 0, lda/ldb/ldc row strides in
/// elements. Nothing for m <= 0 or n <= 0; k <= 0 scales C by beta (beta 0
/// writes zeros without reading C). Dimensions beyond OpenBLAS's 32-bit
/// integers are split into several calls; strides beyond them fall back to
/// a plain loop.
void cpuSgemm(int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_CPU_SGEMM_H
