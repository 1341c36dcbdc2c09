//===- KernelUtil.h - Small helpers for the reference kernels ---*- C++ -*-===//
//
// Input fetching, argument validation and axis handling shared by the
// interp/ops/*.cpp kernels. All checks return InvalidArgument with a message
// naming the offending input or attribute; evaluateNode() prefixes the node.
//
// Header-only so that every interp/ops file can use it without build changes.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_INTERNAL_KERNELUTIL_H
#define FUSEC_INTERP_INTERNAL_KERNELUTIL_H

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "interp/internal/Broadcast.h"
#include "interp/internal/Kernels.h"
#include "ir/DType.h"
#include "ir/Tensor.h"

namespace fusec::interp {

/// InvalidArgument with the StrCat of \p parts as message.
template <typename... Args>
absl::Status invalidArg(const Args &...parts) {
  return absl::InvalidArgumentError(absl::StrCat(parts...));
}

/// \returns input \p i, or InvalidArgument if it is absent.
inline absl::StatusOr<const ir::Tensor *> requireInput(const KernelArgs &args, size_t i) {
  const ir::Tensor *t = args.in(i);
  if (!t) return invalidArg("required input ", i, " is missing");
  return t;
}

/// True for dtypes whose elements the interpreter computes on (numbers, bool).
inline bool isNumericOrBool(ir::DType t) {
  return ir::isFloat(t) || ir::isInteger(t) || t == ir::DType::kBool;
}

/// \returns OK if \p t is a float tensor, else InvalidArgument naming \p what.
inline absl::Status requireFloat(const ir::Tensor &t, const char *what) {
  if (!ir::isFloat(t.dtype()))
    return invalidArg(what, " has dtype ", ir::dtypeName(t.dtype()), ", expected a float dtype");
  return absl::OkStatus();
}

/// \returns OK if \p t is a float or integer tensor (not bool / string).
inline absl::Status requireNumber(const ir::Tensor &t, const char *what) {
  if (!ir::isFloat(t.dtype()) && !ir::isInteger(t.dtype()))
    return invalidArg(what, " has dtype ", ir::dtypeName(t.dtype()),
                      ", expected a numeric dtype");
  return absl::OkStatus();
}

/// \returns \p axis in [0, rank), accepting [-rank, rank) as ONNX does.
inline absl::StatusOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char *what = "axis") {
  if (axis < -rank || axis >= rank)
    return invalidArg(what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

/// The representable range of integer dtype \p t, as int64 (u64 is clamped
/// to INT64_MAX; bool is [0, 1]).
inline std::pair<int64_t, int64_t> intRange(ir::DType t) {
  using L = std::numeric_limits<int64_t>;
  switch (t) {
    case ir::DType::kI8: return {-128, 127};
    case ir::DType::kI16: return {-32768, 32767};
    case ir::DType::kI32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case ir::DType::kU8: return {0, 255};
    case ir::DType::kU16: return {0, 65535};
    case ir::DType::kU32: return {0, std::numeric_limits<uint32_t>::max()};
    case ir::DType::kU64: return {0, L::max()};
    case ir::DType::kBool: return {0, 1};
    default: return {L::min(), L::max()};
  }
}

/// Two's complement wrapping arithmetic on int64 (no signed-overflow UB).
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrapNeg(int64_t a) { return wrapSub(0, a); }

/// Reads a 1-D (or scalar) integer tensor as int64 values.
inline absl::StatusOr<std::vector<int64_t>> readInts(const ir::Tensor &t, const char *what) {
  if (!ir::isInteger(t.dtype()))
    return invalidArg(what, " has dtype ", ir::dtypeName(t.dtype()), ", expected an integer dtype");
  if (t.rank() > 1) return invalidArg(what, " must be 1-D, got shape ", shapeStr(t.shape()));
  return t.toInts();
}

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_INTERNAL_KERNELUTIL_H
