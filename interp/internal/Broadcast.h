//===- Broadcast.h - Numpy-style broadcasting helpers (internal) -*- C++ -*-===//
//
// Shape computation and index mapping for ONNX broadcasting
// (https://onnx.ai/onnx/repo-docs/Broadcasting.html):
//   - multidirectional: shapes are right-aligned, the shorter is padded with
//     leading 1s, and each pair of dims must be equal or contain a 1; the
//     result takes the larger of each pair (a 0 pairs only with 0 or 1).
//   - unidirectional: shape A broadcasts to a given shape B (B is unchanged).
//
// BroadcastIndexer maps a row-major linear index of the (larger) target shape
// to the linear index of the element of a (smaller) source shape that the
// broadcast reads. The reduction kernels use the same mapping the other way
// round: the source is the keepdims-shaped result and the target the input.
//
// Header-only so that every interp/ops file can use it without build changes.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_INTERNAL_BROADCAST_H
#define FUSEC_INTERP_INTERNAL_BROADCAST_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/Tensor.h"

namespace fusec::interp {

/// Text form of a shape for error messages: "[2,3,4]".
inline std::string shapeStr(const ir::Shape &s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

/// \returns the multidirectional broadcast of \p shapes (at least one), or
/// InvalidArgument naming the first incompatible pair of dims.
inline absl::StatusOr<ir::Shape> broadcastShapes(const std::vector<ir::Shape> &shapes) {
  size_t rank = 0;
  for (const ir::Shape &s : shapes) rank = std::max(rank, s.size());
  ir::Shape out(rank, 1);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const ir::Shape &s = shapes[k];
    size_t off = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t a = out[off + d], b = s[d];
      if (a == b || b == 1) continue;
      if (a == 1) {
        out[off + d] = b;
        continue;
      }
      std::string all;
      for (const ir::Shape &x : shapes) absl::StrAppend(&all, all.empty() ? "" : " and ", shapeStr(x));
      return absl::InvalidArgumentError(absl::StrCat("shapes ", all,
                                                     " are not broadcast-compatible (dim ",
                                                     off + d, ": ", a, " vs ", b, ")"));
    }
  }
  return out;
}

/// \returns true if \p from broadcasts unidirectionally to \p to.
inline bool broadcastsTo(const ir::Shape &from, const ir::Shape &to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[off + d]) return false;
  return true;
}

/// Maps linear indices of a target shape to linear indices of a source shape
/// that broadcasts to it (caller checks with broadcastsTo / broadcastShapes).
class BroadcastIndexer {
 public:
  BroadcastIndexer(const ir::Shape &source, const ir::Shape &target)
      : target_(target), srcStrides_(target.size(), 0) {
    ir::Shape strides = ir::rowMajorStrides(source);
    size_t off = target.size() - source.size();
    for (size_t d = 0; d < source.size(); ++d)
      srcStrides_[off + d] = source[d] == 1 ? 0 : strides[d];
    identity_ = source == target;
  }

  /// \returns the source linear index read for target linear index \p i.
  int64_t operator()(int64_t i) const {
    if (identity_) return i;
    int64_t src = 0;
    for (int64_t d = static_cast<int64_t>(target_.size()) - 1; d >= 0; --d) {
      int64_t extent = target_[d];
      int64_t coord = i % extent;
      i /= extent;
      src += coord * srcStrides_[d];
    }
    return src;
  }

 private:
  ir::Shape target_;
  ir::Shape srcStrides_;
  bool identity_ = false;
};

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_INTERNAL_BROADCAST_H
