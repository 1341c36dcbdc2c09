//===- GemmTiling.cpp - A gemm step as cuBLASLt calls on aligned operands -===//
//
// See runtime/internal/GemmTiling.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/GemmTiling.h"

#include <numeric>

namespace fusec::rt {

int64_t paddedLeadingDim(int64_t ld, size_t elemBytes) {
  const int64_t e = static_cast<int64_t>(elemBytes);
  if (ld <= 0 || e <= 0 || kGemmAlignBytes % e != 0)
    return ld;
  const int64_t per = kGemmAlignBytes / e; // elements per aligned span
  return (ld + per - 1) / per * per;
}

std::vector<GemmTile> gemmTiles(const GemmDesc &desc) {
  const int64_t m = desc.m, n = desc.n;
  const std::vector<GemmTile> whole = {GemmTile{0, 1, m, 0, n, true}};
  const int64_t eD = static_cast<int64_t>(fusert_dtype_size(desc.dDtype));
  const int64_t eAB = static_cast<int64_t>(fusert_dtype_size(desc.dtype));
  if (eD <= 0 || eAB <= 0 || kGemmAlignBytes % eD != 0 ||
      kGemmAlignBytes % eAB != 0)
    return whole;
  const int64_t perD = kGemmAlignBytes / eD;   // D elements per 16 bytes
  const int64_t perAB = kGemmAlignBytes / eAB; // A/B elements per 16 bytes
  // Rows of D that start at the same offset modulo 16 bytes: every R-th.
  const int64_t classes =
      kGemmAlignBytes / std::gcd(n * eD, kGemmAlignBytes);
  if (classes == 1 && n % perAB == 0)
    return whole;
  if (desc.batch > 1 || desc.transA || desc.bias >= 0 ||
      m < classes * kMinTileRows || n < 2 * perAB)
    return whole;
  std::vector<GemmTile> tiles;
  for (int64_t j = 0; j < classes && j < m; ++j) {
    const int64_t rows = (m - j + classes - 1) / classes;
    // First column of row j at a 16-byte boundary (D's base is aligned).
    const int64_t c = (perD - (j * n) % perD) % perD;
    const int64_t width = (n - c) / perAB * perAB;
    if (width <= 0) {
      tiles.push_back(GemmTile{j, classes, rows, 0, n, false});
      continue;
    }
    if (c > 0)
      tiles.push_back(GemmTile{j, classes, rows, 0, c, false});
    tiles.push_back(GemmTile{j, classes, rows, c, width, true});
    if (c + width < n)
      tiles.push_back(GemmTile{j, classes, rows, c + width, n - c - width, false});
  }
  return tiles;
}

std::vector<GemmBCopy> wantedBCopies(const GemmDesc &desc,
                                     const std::vector<GemmTile> &tiles) {
  std::vector<GemmBCopy> copies;
  if (tiles.size() < 2)
    return copies;
  const size_t eAB = fusert_dtype_size(desc.dtype);
  const int64_t e = static_cast<int64_t>(eAB);
  if (desc.transB) {
    if ((desc.k * e) % kGemmAlignBytes != 0)
      copies.push_back(GemmBCopy{0, paddedLeadingDim(desc.k, eAB), nullptr});
    return copies;
  }
  const bool ldAligned = (desc.n * e) % kGemmAlignBytes == 0;
  for (const GemmTile &t : tiles) {
    if (!t.main || (ldAligned && (t.col0 * e) % kGemmAlignBytes == 0))
      continue;
    bool have = false;
    for (const GemmBCopy &c : copies)
      have = have || c.shift == t.col0;
    if (!have)
      copies.push_back(
          GemmBCopy{t.col0, paddedLeadingDim(desc.n - t.col0, eAB), nullptr});
  }
  return copies;
}

} // namespace fusec::rt
