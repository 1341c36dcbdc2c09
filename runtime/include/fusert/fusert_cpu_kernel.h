/*===- fusert_cpu_kernel.h - ABI between a cpu artifact's library and libfusert -*- C -*-===//
 *
 * Part of fusec. `fusec --target cpu` writes an artifact whose library
 * (libmodel.so, built from LLVM IR by the compiler itself) exports one entry
 * point per kernel step. This header is the contract between that generated
 * code and the runtime's CPU executor (docs/ARTIFACT.md, "cpu artifacts").
 * It is plain C, has no dependencies, and is never included by the
 * generated code (which is LLVM IR): the code generator mirrors the struct
 * layout below field by field, and its tests check the offsets.
 *
 * A cpu artifact has only `kernel` and `copy` steps: its GEMMs and
 * convolutions are generated entry points too (they call `sgemm` below on
 * tiles of the output and apply the epilogue to each tile while it is in
 * cache). The runtime therefore needs no knowledge of an op; it owns the
 * thread pool and the BLAS (OpenBLAS) and hands both to the kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef FUSERT_FUSERT_CPU_KERNEL_H
#define FUSERT_FUSERT_CPU_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this ABI; the manifest of a cpu artifact records it as
 *  "cpu_abi" and the loader refuses any other value. */
#define FUSERT_CPU_ABI_VERSION 2

/** One chunk of a parallel loop: iterations [begin, end) run on worker
 *  `thread` (0 <= thread < fusert_cpu_context.num_threads; two chunks that
 *  run at the same time never share a thread index, so a kernel may use
 *  per-thread scratch indexed by it). */
typedef void (*fusert_cpu_range_fn)(void *closure, int64_t begin, int64_t end, int32_t thread);

/** What every generated entry point receives. Field order and types are the
 *  ABI: append only, and bump FUSERT_CPU_ABI_VERSION when changing. */
typedef struct fusert_cpu_context {
  /** FUSERT_CPU_ABI_VERSION. */
  uint32_t abi_version;
  /** Workers parallel_for may use (>= 1; the calling thread is one of them). */
  int32_t num_threads;
  /** Opaque; pass back as parallel_for's first argument. */
  void *pool;
  /** Runs fn over disjoint chunks covering [0, n) (nothing when n <= 0),
   *  each of at least `grain` iterations except possibly the last, on up to
   *  num_threads workers, and returns when every chunk has returned. Not
   *  reentrant: fn must not call parallel_for. */
  void (*parallel_for)(void *pool, int64_t n, int64_t grain, fusert_cpu_range_fn fn,
                       void *closure);
  /** Row-major single-precision GEMM on the calling thread only (it never
   *  starts threads of its own, so it is safe inside a parallel_for chunk):
   *  C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n], op = transpose
   *  when trans_* != 0; lda/ldb/ldc are row strides in elements. With
   *  beta == 0, C is not read (it may hold NaN). OpenBLAS cblas_sgemm. */
  void (*sgemm)(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                int64_t ldc);
  /** Scratch for the running step: num_threads slices of
   *  workspace_bytes_per_thread bytes each, slice t at
   *  workspace + t * workspace_bytes_per_thread, every slice 64-byte aligned
   *  (the manifest's "workspace_bytes_per_thread" rounded up to a multiple
   *  of 64, so use this field, not the manifest's number, as the stride;
   *  NULL when that is 0). Contents are undefined at entry. */
  void *workspace;
  uint64_t workspace_bytes_per_thread;
  /** Dynamic shapes (ABI 2): the extents the manifest's "symbols" are bound
   *  to for this run, in the manifest's order, each >= 1 (NULL and 0 for an
   *  artifact without symbols). Kernels read their symbolic extents here. */
  const int64_t *symbols;
  int64_t num_symbols;
} fusert_cpu_context;

/** The signature of every kernel step's `symbol` in a cpu artifact's
 *  library: buffers[i] is the host address of manifest buffer
 *  step.buffers[i]. Returns 0 on success, nonzero on failure (the runtime
 *  reports FUSERT_INTERNAL naming the step). Runs synchronously. */
typedef int32_t (*fusert_cpu_kernel_fn)(void *const *buffers, const fusert_cpu_context *ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUSERT_FUSERT_CPU_KERNEL_H */
