//===- GemmPlan.h - A manifest gemm step as a cached cuBLASLt matmul -===//
//
// cuBLASLt is column-major; a row-major D[m,n] = op(A) op(B) is computed as
// the column-major D^T[n,m] = op(B)^T op(A)^T, i.e. with the operands
// swapped and each row-major matrix read as its column-major transpose. The
// per-column bias of row-major D is then cuBLASLt's per-row bias of D^T.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H
#define FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H

#include <cstddef>
#include <cstdint>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "runtime/internal/Manifest.h"

namespace fusec::rt {

/// Device addresses of a gemm step's operands (c and bias may be NULL).
struct GemmPointers {
  const void *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  void *d = nullptr;
};

/// The cuBLASLt descriptors and chosen algorithm of one gemm step.
class GemmPlan {
public:
  GemmPlan() = default;
  GemmPlan(const GemmPlan &) = delete;
  GemmPlan &operator=(const GemmPlan &) = delete;
  ~GemmPlan();

  /// Creates the descriptors for \p desc and picks an algorithm for pointers
  /// as aligned as \p ptrs (which need not be dereferenceable).
  /// Errors: FUSERT_CUBLAS_ERROR (descriptor failure, no algorithm).
  Status init(cublasLtHandle_t lt, const GemmDesc &desc,
              const GemmPointers &ptrs, size_t workspaceBytes);

  /// Enqueues the matmul on \p stream; re-picks the algorithm first if \p ptrs
  /// are less aligned than the ones it was picked for.
  /// Errors: FUSERT_CUBLAS_ERROR.
  Status run(const GemmPointers &ptrs, void *workspace, cudaStream_t stream);

private:
  Status pickAlgo(const GemmPointers &ptrs);
  /// \returns the alignment (<= 256 bytes) of each operand in \p ptrs,
  /// counting batch strides; order: first, second, c, d (cuBLASLt's A B C D).
  void alignments(const GemmPointers &ptrs, uint32_t out[4]) const;

  GemmDesc desc_;
  cublasLtHandle_t lt_ = nullptr;
  size_t workspaceBytes_ = 0;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr, second_ = nullptr, c_ = nullptr,
                         d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  uint32_t algoAlign_[4] = {0, 0, 0, 0};
  float alphaF_ = 1, betaF_ = 0;
  double alphaD_ = 1, betaD_ = 0;
};

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H
