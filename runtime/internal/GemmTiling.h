//===- GemmTiling.h - A gemm step as cuBLASLt calls on aligned operands -===//
//
// cuBLASLt's fast kernels (on sm_90 the TMA ones) want every operand 16-byte
// aligned: its address, its leading dimension in bytes, and the extent of
// the dimension that is contiguous in memory. A gemm step whose row-major D
// has rows of a byte length that is not a multiple of 16 (the LM head of
// GPT-2: n = 50257) gets only slow kernels: measured on an H200, M=8192
// K=768 N=50257 bf16 runs 4.5-5.5 ms, against 1.0 ms with N=50264, whatever
// the leading dimension of B (bench/results/2026-12-02-h200-gemm-tiles.txt).
//
// D cannot be padded (it is the caller's or the next step's tensor), so the
// step is split instead (gemmTiles): with R = 16 / gcd(n * d-element bytes,
// 16), the rows of D that are equal modulo R all start at the same offset
// modulo 16 bytes, so the rows j, j+R, j+2R, ... form a matrix whose leading
// dimension, R * n elements, is aligned. Its columns from the first one that
// is 16-byte aligned (c_j), over a multiple of 16 / (A-B element bytes)
// columns, make one main tile with every D address and extent aligned; the
// few columns before and after it are edge tiles (narrow, cheap on any
// kernel). On the H200 the four main tiles of the GPT-2 head run 0.28 ms
// each (1.12 ms, 0.97x the aligned GEMM's rate) and each edge tile ~15 us.
//
// Pure arithmetic (no CUDA): GemmPlan turns tiles into cuBLASLt calls.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_GEMMTILING_H
#define FUSEC_RUNTIME_INTERNAL_GEMMTILING_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/internal/Manifest.h"

namespace fusec::rt {

/// Alignment, in bytes, that cuBLASLt's fast kernels want of addresses,
/// leading dimensions and contiguous extents.
inline constexpr int64_t kGemmAlignBytes = 16;

/// \returns \p ld (elements of \p elemBytes bytes, > 0) rounded up so that
/// ld * elemBytes is a multiple of kGemmAlignBytes; \p ld itself when it
/// already is, when it is <= 0, or when \p elemBytes does not divide
/// kGemmAlignBytes.
int64_t paddedLeadingDim(int64_t ld, size_t elemBytes);

/// The leading dimension (elements) of the dense row-major B of \p desc:
/// n, or k when B is transposed ([n, k]).
inline int64_t denseLdB(const GemmDesc &desc) {
  return desc.transB ? desc.k : desc.n;
}

/// One cuBLASLt call of a gemm step: D's rows row0, row0 + rowStep, ...
/// (`rows` of them) and its columns [col0, col0 + cols). The rows of A and
/// C are the same ones; the columns of B and C the same ones.
struct GemmTile {
  int64_t row0 = 0, rowStep = 1, rows = 0;
  int64_t col0 = 0, cols = 0;
  /// A main tile: its D (and, reading B from a copy that starts at col0,
  /// B) is 16-byte aligned; edge tiles cover the columns main tiles leave.
  bool main = true;
};

/// Rows of D per class below which gemmTiles() does not split (each tile
/// is a cuBLASLt launch; small GEMMs are latency-bound anyway).
inline constexpr int64_t kMinTileRows = 64;

/// The tiles that run gemm \p desc (checked by checkManifest: m, n, k > 0).
/// One tile [0, m) x [0, n) when D's row length is already 16-byte aligned
/// and n spans a multiple of 16 bytes of A-B elements, or when the step
/// cannot be split: a batch (batch > 1), transposed A (op(A)'s rows are not
/// rows of memory), a bias (its address would move off alignment), fewer
/// than kMinTileRows rows per class, n under two aligned spans, or an
/// element size that does not divide 16. C, laid out like D, is tiled like
/// D. Otherwise, per row class j < R (see the file
/// comment): an edge tile [0, c_j), the main tile, an edge tile of the
/// remaining columns; empty ones left out. Tiles never overlap and cover
/// D exactly once.
std::vector<GemmTile> gemmTiles(const GemmDesc &desc);

/// A copy of a weight B made at load so that main tiles read B aligned:
/// B's rows (k of them, or n when B is transposed), each holding the
/// elements from column `shift` on (transposed B: all k), `ld` elements
/// apart (ld = paddedLeadingDim of the row length).
struct GemmBCopy {
  int64_t shift = 0;
  int64_t ld = 0;
  const void *data = nullptr; ///< device address; owned by the executor
};

/// The B copies (shift and ld, data left null) that \p tiles of gemm
/// \p desc want when B is constant: none for one tile; else, for row-major
/// B [k, n], one per main tile whose first column (or whose B row length)
/// is not 16-byte aligned, starting at that column; for transposed B
/// [n, k] with k not spanning a multiple of 16 bytes, one padded copy
/// (shift 0).
std::vector<GemmBCopy> wantedBCopies(const GemmDesc &desc,
                                     const std::vector<GemmTile> &tiles);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_GEMMTILING_H
