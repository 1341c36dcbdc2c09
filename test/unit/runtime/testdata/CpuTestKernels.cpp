//===- CpuTestKernels.cpp - Hand-written cpu kernels: a stand-in libmodel.so -===//
//
// Built as a MODULE library for CpuRuntimeTest, written to the ABI of
// runtime/include/fusert/fusert_cpu_kernel.h the way generated code will
// be: every entry point takes the buffer addresses and the runtime's
// context, splits its work with parallel_for and, for the GEMM, packs its
// rows into its thread's workspace slice and calls the runtime's sgemm.
// Shapes are fixed (the test's manifests match them). Return codes other
// than 0 name the broken expectation.
//
//===----------------------------------------------------------------------===//
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fusert/fusert_cpu_kernel.h"

namespace {

constexpr int64_t kN = 1000;                     // elements of add / scale
constexpr int64_t kM = 64, kK = 48, kCols = 40;  // matmul: [M,K] x [K,N]
constexpr int64_t kRowGrain = 4;

bool validContext(const fusert_cpu_context *ctx) {
  return ctx && ctx->abi_version == FUSERT_CPU_ABI_VERSION && ctx->num_threads >= 1 &&
         ctx->parallel_for && ctx->sgemm;
}

struct AddArgs {
  const float *x, *w;
  float *t;
  const fusert_cpu_context *ctx;
  std::atomic<int> bad;  // set by a chunk that sees a thread index out of range
};

void addChunk(void *closure, int64_t begin, int64_t end, int32_t thread) {
  auto *a = static_cast<AddArgs *>(closure);
  if (thread < 0 || thread >= a->ctx->num_threads) a->bad = 1;
  for (int64_t i = begin; i < end; ++i) a->t[i] = a->x[i] + a->w[i];
}

struct ScaleArgs {
  const float *in;
  float *out;
};

void scaleChunk(void *closure, int64_t begin, int64_t end, int32_t) {
  auto *a = static_cast<ScaleArgs *>(closure);
  for (int64_t i = begin; i < end; ++i) a->out[i] = 2.0f * a->in[i];
}

struct ThreadArgs {
  float *out;
};

void threadChunk(void *closure, int64_t begin, int64_t end, int32_t thread) {
  auto *a = static_cast<ThreadArgs *>(closure);
  for (int64_t i = begin; i < end; ++i) a->out[i] = static_cast<float>(thread);
}

struct MatmulArgs {
  const float *a, *b;
  float *c;
  const fusert_cpu_context *ctx;
  std::atomic<int> error;
};

void matmulChunk(void *closure, int64_t begin, int64_t end, int32_t thread) {
  auto *m = static_cast<MatmulArgs *>(closure);
  const fusert_cpu_context *ctx = m->ctx;
  if (thread < 0 || thread >= ctx->num_threads) {
    m->error = 5;
    return;
  }
  const int64_t rows = end - begin;
  if (ctx->workspace_bytes_per_thread < static_cast<uint64_t>(rows * kK) * sizeof(float)) {
    m->error = 3;
    return;
  }
  char *slice = static_cast<char *>(ctx->workspace) +
                static_cast<uint64_t>(thread) * ctx->workspace_bytes_per_thread;
  if (reinterpret_cast<uintptr_t>(slice) % 64 != 0) {
    m->error = 4;
    return;
  }
  // Pack A's rows (contents of the slice are undefined at entry).
  float *packed = reinterpret_cast<float *>(slice);
  std::memcpy(packed, m->a + begin * kK, static_cast<size_t>(rows * kK) * sizeof(float));
  // beta == 0 must not read C: fill it with NaN first.
  float *c = m->c + begin * kCols;
  for (int64_t i = 0; i < rows * kCols; ++i) c[i] = std::numeric_limits<float>::quiet_NaN();
  ctx->sgemm(0, 0, rows, kCols, kK, 1.0f, packed, kK, m->b, kCols, 0.0f, c, kCols);
}

}  // namespace

extern "C" {

/// t = x + w over kN elements (buffers: x, w, t).
int32_t fusert_cpu_test_add(void *const *buffers, const fusert_cpu_context *ctx) {
  if (!validContext(ctx)) return 1;
  AddArgs a{static_cast<const float *>(buffers[0]), static_cast<const float *>(buffers[1]),
            static_cast<float *>(buffers[2]), ctx, {0}};
  ctx->parallel_for(ctx->pool, kN, 64, addChunk, &a);
  return a.bad ? 5 : 0;
}

/// y = 2 * t over kN elements (buffers: t, y).
int32_t fusert_cpu_test_scale(void *const *buffers, const fusert_cpu_context *ctx) {
  if (!validContext(ctx)) return 1;
  ScaleArgs a{static_cast<const float *>(buffers[0]), static_cast<float *>(buffers[1])};
  ctx->parallel_for(ctx->pool, kN, 100, scaleChunk, &a);
  return 0;
}

/// out[i] = index of the thread that ran iteration i, kN elements in
/// chunks of at least 10 (buffers: out).
int32_t fusert_cpu_test_thread_ids(void *const *buffers, const fusert_cpu_context *ctx) {
  if (!validContext(ctx)) return 1;
  ThreadArgs a{static_cast<float *>(buffers[0])};
  ctx->parallel_for(ctx->pool, kN, 10, threadChunk, &a);
  return 0;
}

/// c[M,N] = a[M,K] * b[K,N]: row tiles over parallel_for, each packed into
/// its thread's workspace and multiplied with the runtime's sgemm
/// (buffers: a, b, c).
int32_t fusert_cpu_test_matmul(void *const *buffers, const fusert_cpu_context *ctx) {
  if (!validContext(ctx)) return 1;
  if (!ctx->workspace || ctx->workspace_bytes_per_thread % 64 != 0) return 2;
  MatmulArgs m{static_cast<const float *>(buffers[0]), static_cast<const float *>(buffers[1]),
               static_cast<float *>(buffers[2]), ctx, {0}};
  ctx->parallel_for(ctx->pool, kM, kRowGrain, matmulChunk, &m);
  return m.error;
}

/// y = 2 * t on the first half only (buffers: t, y): a kernel bug that the
/// poisoned outputs of fusec-run must show.
int32_t fusert_cpu_test_half_scale(void *const *buffers, const fusert_cpu_context *ctx) {
  if (!validContext(ctx)) return 1;
  ScaleArgs a{static_cast<const float *>(buffers[0]), static_cast<float *>(buffers[1])};
  ctx->parallel_for(ctx->pool, kN / 2, 100, scaleChunk, &a);
  return 0;
}

/// Always fails (the runtime must report it, naming the step).
int32_t fusert_cpu_test_fail(void *const *, const fusert_cpu_context *) { return 7; }

}  // extern "C"

// The manifest digest a generated library records (runtime/ArtifactFormat.h:
// kManifestDigestSymbol, with kManifestDigestPlaceholder spelled out here);
// the tests' installLibrary() substitutes the digest of the manifest they
// write, as the artifact writer does.
extern "C" __attribute__((visibility("default"))) const char fusec_manifest_digest[] =
    "fnv1a64:@@manifest@@@@@@";
