//===- Sgemm.cpp - The single-threaded sgemm handed to cpu kernels --------===//
#include "runtime/cpu/Sgemm.h"

#include <algorithm>
#include <climits>
#include <mutex>

#include <cblas.h>

namespace fusec::rt {
namespace {

/// Largest dimension handed to one cblas_sgemm call.
constexpr int64_t kMaxDim = INT_MAX / 2;

/// op(X)[i, j] of a row-major matrix with row stride ld.
inline float element(const float *x, int64_t ld, bool trans, int64_t i, int64_t j) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

void naiveSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(element(a, lda, ta, i, p)) * element(b, ldb, tb, p, j);
      float prior = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      c[i * ldc + j] = alpha * static_cast<float>(acc) + prior;
    }
}

} // namespace

void configureBlasThreads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void cpuSgemm(int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  const bool ta = transA != 0, tb = transB != 0;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  if (lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
    naiveSgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Split m, n and k into pieces cblas' int arguments can hold; k pieces
  // after the first accumulate into C.
  for (int64_t i0 = 0; i0 < m; i0 += kMaxDim)
    for (int64_t j0 = 0; j0 < n; j0 += kMaxDim)
      for (int64_t p0 = 0; p0 < k; p0 += kMaxDim) {
        int64_t mi = std::min(kMaxDim, m - i0), nj = std::min(kMaxDim, n - j0),
                kp = std::min(kMaxDim, k - p0);
        const float *ap = ta ? a + p0 * lda + i0 : a + i0 * lda + p0;
        const float *bp = tb ? b + j0 * ldb + p0 : b + p0 * ldb + j0;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<int>(mi), static_cast<int>(nj), static_cast<int>(kp), alpha, ap,
                    static_cast<int>(lda), bp, static_cast<int>(ldb), p0 == 0 ? beta : 1.0f,
                    c + i0 * ldc + j0, static_cast<int>(ldc));
      }
}

} // namespace fusec::rt
