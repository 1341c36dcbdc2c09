//===- NkiAccess.h - Index maps of a KernelSpec as affine DMA patterns -*- C++ -*-===//
//
// Internal to codegen/nki. Every load and store of a KernelSpec addresses
// its buffer with one index expression per buffer dim; the NKI lowering
// turns each into one DMA access pattern (tensor.ap: [[stride, count], ...]
// in elements, NKI.md section 2 "Indexing"). That needs the flat element
// offset to be affine in the loop indices: offset = base + sum_i s_i * d_i.
// analyzeAccesses() finds base and s_i by evaluating the index expressions
// and checks the affine form on the whole domain (or a sample of it for
// domains over 2^18 points).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_NKI_NKIACCESS_H
#define FUSEC_CODEGEN_NKI_NKIACCESS_H

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "program/KernelSpec.h"

namespace fusec::codegen::nki {

/// One load (expr) or store of the spec, as an affine map of the loop dims.
struct Access {
  int buffer = -1;
  int expr = -1;   ///< the kLoad expr, or -1 for a store
  int store = -1;  ///< index into spec.stores, or -1 for a load
  int64_t base = 0;
  std::vector<int64_t> stride;  ///< element stride per loop dim (0 = broadcast)
  /// Guarded accesses (Pad, Concat, Split): the guard holds exactly on the
  /// box lo[d] <= i_d < hi[d] (empty vectors: no guard). The affine map
  /// holds inside the box; a load yields 0 outside it, a store skips it.
  std::vector<int64_t> lo, hi;
  bool dead = false;  ///< the guard is never true
  /// Gathers (Gather, embedding lookups): buffer dim gatherDim is indexed by
  /// the value of expr gatherExpr (read from memory); base/stride are the
  /// affine rest. gatherStride = elements per step of that dim.
  int gatherDim = -1;
  int gatherExpr = -1;
  int64_t gatherStride = 0;
  /// Every gathered dim (GatherND indexes several): {expr, stride}.
  std::vector<std::pair<int, int64_t>> gathers;
};

/// A dim of the tiled domain: one or more adjacent loop dims merged because
/// every access walks them contiguously (or one loop dim split in two).
struct TileDim {
  int64_t extent = 1;
  bool reduced = false;
  std::vector<int> loopDims;    ///< the spec's dims it covers (outer to inner)
  std::vector<int64_t> stride;  ///< per access: element stride of one step
  bool valueUsed = false;       ///< its index is a value (iota), not only an address
};

struct AccessPlan {
  std::vector<Access> accesses;
  std::vector<TileDim> dims;  ///< merged, in loop order (parallel then reduced)
};

/// The affine maps of every load and store of \p spec, with adjacent dims
/// merged (never dims that a guard box cuts or whose index is a value).
/// A load whose index map is not affine becomes a gather through all its
/// dims (the index map evaluated on tiles). Errors: Unimplemented for guards
/// that are not a box, guarded gathers and non-affine stores (scatters).
absl::StatusOr<AccessPlan> analyzeAccesses(const program::KernelSpec &spec);

}  // namespace fusec::codegen::nki

#endif  // FUSEC_CODEGEN_NKI_NKIACCESS_H
