//===- LayoutUtil.h - Helpers of the layout reference functions -*- C++ -*-===//
//
// Shared by interp/ops/Layout.cpp and interp/ops/Movement.cpp: element
// copies on raw bytes, range-checked index and shape reads. Internal.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_INTERNAL_LAYOUTUTIL_H
#define FUSEC_INTERP_INTERNAL_LAYOUTUTIL_H

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/internal/Kernels.h"
#include "support/Status.h"

namespace fusec::interp::layout {

using ir::DType;
using ir::Shape;
using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;

/// Largest element count a layout op may produce (guards against absurd
/// shapes read from tensors, e.g. ConstantOfShape([1e12])).
constexpr int64_t kMaxElements = ir::kMaxTensorElements;

inline absl::Status invalid(const std::string &msg) { return absl::InvalidArgumentError(msg); }

inline std::string shapeStr(const Shape &s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

/// Checks that every dim is >= 0 and that the product of the non-zero dims
/// is at most \p limit (default kMaxElements), so that no partial product
/// of the shape (as ir::numElements computes it) overflows.
inline absl::Status checkShape(const Shape &s, const char *what, int64_t limit = kMaxElements) {
  int64_t n = 1;
  for (int64_t d : s)
    if (d < 0) return invalid(absl::StrCat(what, " has a negative dim: ", shapeStr(s)));
  for (int64_t d : s) {
    if (d == 0) continue;
    if (n > limit / d)
      return invalid(absl::StrCat(what, " ", shapeStr(s), " has more than ", limit,
                                  " elements"));
    n *= d;
  }
  return absl::OkStatus();
}

/// \returns \p axis normalised into [0, rank) (negative counts from the end).
inline absl::StatusOr<int64_t> normAxis(int64_t axis, int64_t rank, const char *what = "axis") {
  if (axis < -rank || axis >= rank)
    return invalid(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

/// Input \p i, which must be present.
inline absl::StatusOr<const Tensor *> required(const KernelArgs &a, size_t i, const char *what) {
  const Tensor *t = a.in(i);
  if (!t) return invalid(absl::StrCat("missing required input ", i, " (", what, ")"));
  return t;
}

/// Reads an integer tensor (any integer dtype, rank <= 1) as int64 values.
inline absl::StatusOr<std::vector<int64_t>> readInts(const Tensor &t, const char *what) {
  if (!ir::isInteger(t.dtype()))
    return invalid(absl::StrCat(what, " must be an integer tensor, got ", ir::dtypeName(t.dtype())));
  if (t.rank() > 1)
    return invalid(absl::StrCat(what, " must be 1-D, got shape ", shapeStr(t.shape())));
  return t.toInts();
}

/// Reads a scalar (rank 0, or 1-D with one element) as int64.
inline absl::StatusOr<int64_t> readScalarInt(const Tensor &t, const char *what) {
  if (!ir::isInteger(t.dtype()))
    return invalid(absl::StrCat(what, " must be an integer tensor, got ", ir::dtypeName(t.dtype())));
  if (t.numElements() != 1 || t.rank() > 1)
    return invalid(absl::StrCat(what, " must be a scalar, got shape ", shapeStr(t.shape())));
  return t.getInt(0);
}

/// Copies single elements between two tensors of the same dtype.
class ElemCopier {
 public:
  ElemCopier(const Tensor &src, Tensor &dst)
      : src_(src), dst_(dst), size_(ir::dtypeSize(src.dtype())),
        isString_(src.dtype() == DType::kString) {}
  void operator()(int64_t dstIndex, int64_t srcIndex) {
    if (isString_) {
      dst_.strings()[dstIndex] = src_.strings()[srcIndex];
    } else {
      std::memcpy(dst_.data() + dstIndex * size_, src_.data() + srcIndex * size_, size_);
    }
  }

 private:
  const Tensor &src_;
  Tensor &dst_;
  int64_t size_;
  bool isString_;
};

/// Builds a tensor of \p src's dtype and shape \p outShape; element o (at
/// multi-index idx) is src[srcIndex(idx)], or \p fill[0] (zero if null)
/// where srcIndex returns -1. srcIndex must return -1 or a valid index.
template <typename Fn>
inline absl::StatusOr<Tensor> buildByIndex(const Tensor &src, const Shape &outShape, Fn srcIndex,
                                      const Tensor *fill = nullptr) {
  FUSEC_RETURN_IF_ERROR(checkShape(outShape, "output shape"));
  Tensor out(src.dtype(), outShape);
  int64_t n = out.numElements();
  if (n == 0) return out;
  ElemCopier copy(src, out);
  ElemCopier copyFill(fill ? *fill : src, out);
  std::vector<int64_t> idx(outShape.size(), 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t s = srcIndex(idx);
    if (s >= 0) {
      if (s >= src.numElements())
        return absl::InternalError(absl::StrCat("source index ", s, " out of range"));
      copy(o, s);
    } else if (fill) {
      copyFill(o, 0);
    }
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

inline std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

}  // namespace fusec::interp::layout

#endif  // FUSEC_INTERP_INTERNAL_LAYOUTUTIL_H
