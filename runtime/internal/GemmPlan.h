//===- GemmPlan.h - A manifest gemm step as cached cuBLASLt matmuls -===//
//
// cuBLASLt is column-major; a row-major D[m,n] = op(A) op(B) is computed as
// the column-major D^T[n,m] = op(B)^T op(A)^T, i.e. with the operands
// swapped and each row-major matrix read as its column-major transpose. The
// per-column bias of row-major D is then cuBLASLt's per-row bias of D^T.
//
// A step runs as one cuBLASLt matmul per tile of D (GemmTiling.h): one
// tile when D's rows are 16-byte aligned, else row-class tiles whose main
// parts cuBLASLt's fast kernels take. Main tiles may read B from copies the
// executor made of a weight B at load (GemmBCopy). A and D keep their
// dense layouts. Descriptors and the heuristic's algorithm are made per
// tile at load, for the alignments the tile's addresses actually have.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H
#define FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "runtime/internal/GemmTiling.h"
#include "runtime/internal/Manifest.h"

namespace fusec::rt {

/// Device addresses of a gemm step's operands (c and bias may be NULL).
struct GemmPointers {
  const void *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  void *d = nullptr;
};

/// The cuBLASLt descriptors and chosen algorithms of one gemm step.
class GemmPlan {
public:
  GemmPlan() = default;
  GemmPlan(const GemmPlan &) = delete;
  GemmPlan &operator=(const GemmPlan &) = delete;
  ~GemmPlan();

  /// Creates the descriptors of every tile of \p desc (gemmTiles) and picks
  /// an algorithm for pointers as aligned as \p ptrs (which need not be
  /// dereferenceable). Main tiles whose first column matches a copy in
  /// \p bCopies (transposed B: a copy of shift 0) read B there, at every
  /// run; the other tiles read the run's B.
  /// Errors: FUSERT_CUBLAS_ERROR (descriptor failure, no algorithm).
  Status init(cublasLtHandle_t lt, const GemmDesc &desc,
              const GemmPointers &ptrs, size_t workspaceBytes,
              const std::vector<GemmBCopy> &bCopies = {});

  /// Enqueues the matmuls on \p stream; re-picks a tile's algorithm first
  /// if \p ptrs make its operands less aligned than the ones it was picked
  /// for. Errors: FUSERT_CUBLAS_ERROR.
  Status run(const GemmPointers &ptrs, void *workspace, cudaStream_t stream);

  /// The tiles, in launch order.
  size_t numTiles() const { return calls_.size(); }

private:
  /// One tile's matmul.
  struct Call {
    GemmTile tile;
    const void *fixedB = nullptr; ///< a B copy (weights), else null: the run's B
    int64_t bOffset = 0;          ///< elements into fixedB or the run's B
    int64_t aOffset = 0, cdOffset = 0; ///< elements into A, and into C and D
    cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr,
                           d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    uint32_t algoAlign[4] = {0, 0, 0, 0};
  };

  Status makeCall(Call &call, const std::vector<GemmBCopy> &bCopies);
  Status pickAlgo(Call &call, const GemmPointers &ptrs);
  /// The operands of \p call's matmul given the step's \p ptrs.
  GemmPointers tilePointers(const Call &call, const GemmPointers &ptrs) const;
  /// \returns the alignment (<= 256 bytes) of each operand in \p tilePtrs,
  /// counting batch strides; order: first, second, c, d (cuBLASLt's A B C D).
  void alignments(const GemmPointers &tilePtrs, uint32_t out[4]) const;

  GemmDesc desc_;
  cublasLtHandle_t lt_ = nullptr;
  size_t workspaceBytes_ = 0;
  cublasLtMatmulDesc_t op_ = nullptr;
  std::vector<Call> calls_;
  float alphaF_ = 1, betaF_ = 0;
  double alphaD_ = 1, betaD_ = 0;
};

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_GEMMPLAN_H
