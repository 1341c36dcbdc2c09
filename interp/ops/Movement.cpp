//===- Movement.cpp - Reference functions: gathers, padding, generators --===//
//
// Gather, GatherElements, GatherND, Expand, Tile, Trilu, Pad, Shape, Size,
// ConstantOfShape, Range and Constant, following the newest ONNX opset of
// each op (https://onnx.ai/onnx/operators/). Like Layout.cpp these move raw
// elements (every dtype); every index read from a tensor is range-checked.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/internal/LayoutUtil.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using namespace layout;  // NOLINT: the helpers of interp/internal/LayoutUtil.h

//===----------------------------------------------------------------------===//
// Gather, GatherElements, GatherND.
//===----------------------------------------------------------------------===//

/// Reads indices (i32/i64) and checks each against [-dim, dim).
absl::StatusOr<std::vector<int64_t>> readIndices(const Tensor &t) {
  if (t.dtype() != DType::kI32 && t.dtype() != DType::kI64)
    return invalid(absl::StrCat("indices must be i32 or i64, got ", ir::dtypeName(t.dtype())));
  return t.toInts();
}

absl::StatusOr<int64_t> fixIndex(int64_t idx, int64_t dim, int64_t axis) {
  if (idx < -dim || idx >= dim)
    return invalid(absl::StrCat("index ", idx, " is out of range [", -dim, ", ", dim,
                                ") on axis ", axis));
  return idx < 0 ? idx + dim : idx;
}

/// The slices of \p data, read as the row-major shape \p in (its own shape,
/// or [numElements] for the flattened forms), at positions \p picks (each in
/// [0, in[axis])) of \p axis, in that order: Gather with 1-D indices.
/// Shape: \p in with picks.size() on axis. Serves Compress (the kept
/// positions) and Unique (each unique slice's first occurrence).
absl::StatusOr<Tensor> takeAlongAxis(const Tensor &data, const Shape &in, int64_t axis,
                                     const std::vector<int64_t> &picks) {
  Shape out = in;
  out[axis] = static_cast<int64_t>(picks.size());
  const Shape strides = ir::rowMajorStrides(in);
  const int64_t r = static_cast<int64_t>(in.size());
  return buildByIndex(data, out, [&](const std::vector<int64_t> &i) {
    int64_t s = 0;
    for (int64_t d = 0; d < r; ++d) s += (d == axis ? picks[i[d]] : i[d]) * strides[d];
    return s;
  });
}

Result gather(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *indT, required(a, 1, "indices"));
  int64_t r = data->rank();
  if (r == 0) return invalid("Gather data must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ind, readIndices(*indT));
  int64_t dim = data->shape()[axis];
  for (int64_t &i : ind) {
    FUSEC_ASSIGN_OR_RETURN(i, fixIndex(i, dim, axis));
  }
  const Shape &in = data->shape();
  Shape out(in.begin(), in.begin() + axis);
  out.insert(out.end(), indT->shape().begin(), indT->shape().end());
  out.insert(out.end(), in.begin() + axis + 1, in.end());
  int64_t q = indT->rank();
  Shape indStrides = ir::rowMajorStrides(indT->shape());
  Shape strides = ir::rowMajorStrides(in);
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t k = 0;
                           for (int64_t d = 0; d < q; ++d) k += i[axis + d] * indStrides[d];
                           int64_t s = ind[k] * strides[axis];
                           for (int64_t d = 0; d < axis; ++d) s += i[d] * strides[d];
                           for (int64_t d = axis + 1; d < r; ++d) s += i[d + q - 1] * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

Result gatherElementsOp(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *indT, required(a, 1, "indices"));
  int64_t r = data->rank();
  if (r == 0) return invalid("GatherElements data must have rank >= 1");
  if (indT->rank() != r)
    return invalid(absl::StrCat("indices rank ", indT->rank(), " differs from data rank ", r));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && indT->shape()[d] > data->shape()[d])
      return invalid(absl::StrCat("indices shape ", shapeStr(indT->shape()),
                                  " exceeds data shape ", shapeStr(data->shape()), " on axis ", d));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ind, readIndices(*indT));
  int64_t dim = data->shape()[axis];
  for (int64_t &i : ind) {
    FUSEC_ASSIGN_OR_RETURN(i, fixIndex(i, dim, axis));
  }
  Shape strides = ir::rowMajorStrides(data->shape());
  Shape indStrides = ir::rowMajorStrides(indT->shape());
  FUSEC_ASSIGN_OR_RETURN(
      Tensor t, buildByIndex(*data, indT->shape(), [&](const std::vector<int64_t> &i) {
        int64_t k = 0, s = 0;
        for (int64_t d = 0; d < r; ++d) k += i[d] * indStrides[d];
        for (int64_t d = 0; d < r; ++d) s += (d == axis ? ind[k] : i[d]) * strides[d];
        return s;
      }));
  return one(std::move(t));
}

/// ONNX GatherND-13: indices[..., :m] index data dims [b, b+m) after the
/// first b = batch_dims dims, which data and indices share.
Result gatherND(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *indT, required(a, 1, "indices"));
  int64_t r = data->rank(), q = indT->rank();
  int64_t b = a.node.attrI("batch_dims");
  if (r < 1 || q < 1) return invalid("GatherND data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return invalid(absl::StrCat("batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))"));
  const Shape &ds = data->shape(), &is = indT->shape();
  for (int64_t d = 0; d < b; ++d)
    if (ds[d] != is[d])
      return invalid(absl::StrCat("batch dims differ: data ", shapeStr(ds), ", indices ",
                                  shapeStr(is)));
  int64_t m = is[q - 1];
  if (m < 1 || m > r - b)
    return invalid(absl::StrCat("indices last dim ", m, " must be in [1, ", r - b, "]"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ind, readIndices(*indT));
  int64_t tuples = ir::numElements(is) / m;
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t j = 0; j < m; ++j) {
      FUSEC_ASSIGN_OR_RETURN(ind[t * m + j], fixIndex(ind[t * m + j], ds[b + j], b + j));
    }
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), ds.begin() + b + m, ds.end());
  Shape strides = ir::rowMajorStrides(ds);
  Shape tupleShape(is.begin(), is.end() - 1);
  Shape tupleStrides = ir::rowMajorStrides(tupleShape);
  int64_t qm1 = q - 1;
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t tuple = 0;
                           for (int64_t d = 0; d < qm1; ++d) tuple += i[d] * tupleStrides[d];
                           int64_t s = 0;
                           for (int64_t d = 0; d < b; ++d) s += i[d] * strides[d];
                           for (int64_t j = 0; j < m; ++j) s += ind[tuple * m + j] * strides[b + j];
                           for (int64_t d = b + m; d < r; ++d) s += i[qm1 + d - b - m] * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

//===----------------------------------------------------------------------===//
// OneHot, ScatterND, ScatterElements.
//===----------------------------------------------------------------------===//

/// OneHot (opset 11): out has indices' shape with a new axis of length depth
/// at `axis`; out[..i..] = values[1] where indices[..] (truncated to an
/// integer, negative ones counting from depth) equals i, else values[0].
/// Indices outside [-depth, depth) give a row of values[0].
Result oneHot(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *ind, required(a, 0, "indices"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *depthT, required(a, 1, "depth"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *vals, required(a, 2, "values"));
  if (depthT->numElements() != 1) return invalid("depth must hold one element");
  if (vals->numElements() != 2)
    return invalid(absl::StrCat("values must hold two elements (off, on), got ", shapeStr(vals->shape())));
  const bool floatIdx = ir::isFloat(ind->dtype());
  if (!floatIdx && !ir::isInteger(ind->dtype()))
    return invalid(absl::StrCat("indices must be numeric, got ", ir::dtypeName(ind->dtype())));
  const int64_t depth = ir::isFloat(depthT->dtype()) ? static_cast<int64_t>(depthT->getDouble(0))
                                                     : depthT->getInt(0);
  if (depth < 1) return invalid(absl::StrCat("depth ", depth, " must be at least 1"));
  const int64_t r = ind->rank() + 1;
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  Shape out = ind->shape();
  out.insert(out.begin() + axis, depth);
  const Shape indStrides = ir::rowMajorStrides(ind->shape());
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*vals, out, [&](const std::vector<int64_t> &i) {
                           int64_t k = 0;
                           for (int64_t d = 0, e = 0; d < r; ++d)
                             if (d != axis) k += i[d] * indStrides[e++];
                           int64_t v = floatIdx ? static_cast<int64_t>(ind->getDouble(k)) : ind->getInt(k);
                           if (v < 0) v += depth;
                           return v == i[axis] ? int64_t{1} : int64_t{0};
                         }));
  return one(std::move(t));
}

/// The scatter ops' reduction: none, add, mul, max or min.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<ScatterReduction> scatterReduction(const ir::Node &n) {
  const std::string r = n.attrS("reduction");
  if (r == "none") return ScatterReduction::kNone;
  if (r == "add") return ScatterReduction::kAdd;
  if (r == "mul") return ScatterReduction::kMul;
  if (r == "max") return ScatterReduction::kMax;
  if (r == "min") return ScatterReduction::kMin;
  return invalid(absl::StrCat("reduction must be none, add, mul, max or min, got '", r, "'"));
}

/// out[dst] = reduce(out[dst], upd[src]) in the dtype of out (floats in
/// double, rounded once; integers wrap); none copies the element.
class ScatterCombiner {
 public:
  ScatterCombiner(ScatterReduction red, const Tensor &upd, Tensor &out)
      : red_(red), upd_(upd), out_(out), copy_(upd, out), isFloat_(ir::isFloat(out.dtype())) {}
  void operator()(int64_t dst, int64_t src) {
    if (red_ == ScatterReduction::kNone) {
      copy_(dst, src);
      return;
    }
    if (isFloat_) {
      const double o = out_.getDouble(dst), u = upd_.getDouble(src);
      out_.setDouble(dst, combine(o, u));
    } else {
      const int64_t o = out_.getInt(dst), u = upd_.getInt(src);
      // add and mul wrap (two's complement, through uint64).
      const uint64_t uo = static_cast<uint64_t>(o), uu = static_cast<uint64_t>(u);
      out_.setInt(dst, red_ == ScatterReduction::kAdd   ? static_cast<int64_t>(uo + uu)
                       : red_ == ScatterReduction::kMul ? static_cast<int64_t>(uo * uu)
                                                        : combine(o, u));
    }
  }

 private:
  template <typename T>
  T combine(T o, T u) const {
    switch (red_) {
      case ScatterReduction::kAdd: return o + u;
      case ScatterReduction::kMul: return o * u;
      case ScatterReduction::kMax: return std::max(o, u);
      case ScatterReduction::kMin: return std::min(o, u);
      case ScatterReduction::kNone: break;
    }
    return u;
  }
  ScatterReduction red_;
  const Tensor &upd_;
  Tensor &out_;
  ElemCopier copy_;
  bool isFloat_;
};

/// Checks that a reduced scatter's dtype is numeric (none moves any dtype).
absl::Status checkScatterDType(ScatterReduction red, DType dt) {
  if (red != ScatterReduction::kNone && !ir::isFloat(dt) && !ir::isInteger(dt))
    return invalid(absl::StrCat("a scatter with a reduction needs numbers, got ", ir::dtypeName(dt)));
  return absl::OkStatus();
}

/// ScatterND (opset 18): out = data, then for each index tuple n of
/// indices (its last dim m indexes data's first m dims; negative indices
/// count from the end) the slice out[idx_n, ...] is reduced with
/// updates[n, ...], in the order of the tuples.
Result scatterND(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *indT, required(a, 1, "indices"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *upd, required(a, 2, "updates"));
  FUSEC_ASSIGN_OR_RETURN(ScatterReduction red, scatterReduction(a.node));
  if (upd->dtype() != data->dtype()) return invalid("updates and data differ in dtype");
  FUSEC_RETURN_IF_ERROR(checkScatterDType(red, data->dtype()));
  const Shape &ds = data->shape(), &is = indT->shape(), &us = upd->shape();
  const int64_t r = data->rank(), q = indT->rank();
  if (r < 1 || q < 1) return invalid("ScatterND data and indices must have rank >= 1");
  const int64_t m = is[q - 1];
  if (m > r) return invalid(absl::StrCat("indices last dim ", m, " exceeds the data rank ", r));
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + m, ds.end());
  if (us != want)
    return invalid(absl::StrCat("updates shape ", shapeStr(us), " must be ", shapeStr(want)));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ind, readIndices(*indT));
  const int64_t tuples = ir::numElements(Shape(is.begin(), is.end() - 1));
  const Shape strides = ir::rowMajorStrides(ds);
  const int64_t slice = ir::numElements(Shape(ds.begin() + m, ds.end()));
  Tensor out = *data;
  ScatterCombiner combine(red, *upd, out);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t j = 0; j < m; ++j) {
      FUSEC_ASSIGN_OR_RETURN(int64_t v, fixIndex(ind[t * m + j], ds[j], j));
      base += v * strides[j];
    }
    for (int64_t e = 0; e < slice; ++e) combine(base + e, t * slice + e);
  }
  return one(std::move(out));
}

/// ScatterElements (opset 18): out = data, then for each position p of
/// indices, out[p with p[axis] = indices[p]] is reduced with updates[p], in
/// row-major order of p.
Result scatterElements(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *indT, required(a, 1, "indices"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *upd, required(a, 2, "updates"));
  FUSEC_ASSIGN_OR_RETURN(ScatterReduction red, scatterReduction(a.node));
  if (upd->dtype() != data->dtype()) return invalid("updates and data differ in dtype");
  FUSEC_RETURN_IF_ERROR(checkScatterDType(red, data->dtype()));
  const int64_t r = data->rank();
  if (r == 0) return invalid("ScatterElements data must have rank >= 1");
  if (indT->rank() != r || upd->shape() != indT->shape())
    return invalid(absl::StrCat("indices ", shapeStr(indT->shape()), " and updates ",
                                shapeStr(upd->shape()), " must have one shape of data's rank ", r));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  const Shape &ds = data->shape(), &is = indT->shape();
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && is[d] > ds[d])
      return invalid(absl::StrCat("indices shape ", shapeStr(is), " exceeds data shape ", shapeStr(ds),
                                  " on axis ", d));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ind, readIndices(*indT));
  const Shape strides = ir::rowMajorStrides(ds);
  Tensor out = *data;
  ScatterCombiner combine(red, *upd, out);
  std::vector<int64_t> p(r, 0);
  for (int64_t k = 0; k < indT->numElements(); ++k) {
    FUSEC_ASSIGN_OR_RETURN(int64_t v, fixIndex(ind[k], ds[axis], axis));
    int64_t dst = 0;
    for (int64_t d = 0; d < r; ++d) dst += (d == axis ? v : p[d]) * strides[d];
    combine(dst, k);
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++p[d] < is[d]) break;
      p[d] = 0;
    }
  }
  return one(std::move(out));
}

//===----------------------------------------------------------------------===//
// Expand, Tile, Trilu, Pad.
//===----------------------------------------------------------------------===//

Result expand(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *shapeT, required(a, 1, "shape"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> target, readInts(*shapeT, "shape"));
  const Shape &in = data->shape();
  int64_t r = std::max<int64_t>(data->rank(), static_cast<int64_t>(target.size()));
  Shape out(r);
  Shape inPadded(r, 1);  // input dims right-aligned
  for (int64_t d = 0; d < data->rank(); ++d) inPadded[r - data->rank() + d] = in[d];
  for (int64_t d = 0; d < r; ++d) {
    int64_t off = r - static_cast<int64_t>(target.size());
    int64_t t = d >= off ? target[d - off] : 1;
    int64_t x = inPadded[d];
    if (t < 0) return invalid(absl::StrCat("shape ", shapeStr(target), " has a negative dim"));
    if (x == t || t == 1) {
      out[d] = x;
    } else if (x == 1) {
      out[d] = t;
    } else {
      return invalid(absl::StrCat("cannot broadcast input shape ", shapeStr(in), " to ",
                                  shapeStr(target)));
    }
  }
  Shape strides = ir::rowMajorStrides(inPadded);
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t s = 0;
                           for (int64_t d = 0; d < r; ++d)
                             if (inPadded[d] != 1) s += i[d] * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

Result tile(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *repT, required(a, 1, "repeats"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> reps, readInts(*repT, "repeats"));
  int64_t r = data->rank();
  if (static_cast<int64_t>(reps.size()) != r)
    return invalid(absl::StrCat("repeats has ", reps.size(), " entries for an input of rank ", r));
  const Shape &in = data->shape();
  Shape out(r);
  for (int64_t d = 0; d < r; ++d) {
    if (reps[d] < 0) return invalid(absl::StrCat("repeats ", shapeStr(reps), " has a negative entry"));
    if (in[d] != 0 && reps[d] > kMaxElements / in[d])
      return invalid(absl::StrCat("repeats ", shapeStr(reps), " is too large"));
    out[d] = in[d] * reps[d];
  }
  Shape strides = ir::rowMajorStrides(in);
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t s = 0;
                           for (int64_t d = 0; d < r; ++d) s += (i[d] % in[d]) * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

/// ONNX Trilu-14: on the last two dims, upper keeps j - i >= k, lower keeps
/// j - i <= k; the rest is zero.
Result trilu(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  int64_t r = data->rank();
  if (r < 2) return invalid(absl::StrCat("Trilu input must have rank >= 2, got ", r));
  int64_t k = 0;
  if (const Tensor *kT = a.in(1)) {
    FUSEC_ASSIGN_OR_RETURN(k, readScalarInt(*kT, "k"));
  }
  bool upper = a.node.attrI("upper") != 0;
  Shape strides = ir::rowMajorStrides(data->shape());
  FUSEC_ASSIGN_OR_RETURN(Tensor t,
                         buildByIndex(*data, data->shape(), [&](const std::vector<int64_t> &i) {
                           int64_t row = i[r - 2], col = i[r - 1];
                           // Compare col - row with k without overflow for huge k.
                           bool keep = upper ? (col - row >= k) : (col - row <= k);
                           if (!keep) return int64_t{-1};
                           int64_t s = 0;
                           for (int64_t d = 0; d < r; ++d) s += i[d] * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

/// ONNX Pad-19: pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over
/// 'axes' (default all); negative pads crop. Modes constant, reflect, edge,
/// wrap (numpy.pad semantics).
Result pad(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *padsT, required(a, 1, "pads"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> pads, readInts(*padsT, "pads"));
  int64_t r = data->rank();
  std::vector<int64_t> axes;
  if (const Tensor *axesT = a.in(3)) {
    FUSEC_ASSIGN_OR_RETURN(axes, readInts(*axesT, "axes"));
  } else {
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  }
  size_t na = axes.size();
  if (pads.size() != 2 * na)
    return invalid(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * na));
  std::vector<int64_t> before(r, 0), after(r, 0);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < na; ++i) {
    FUSEC_ASSIGN_OR_RETURN(int64_t ax, normAxis(axes[i], r, "axes entry"));
    if (seen[ax]) return invalid(absl::StrCat("axes repeats axis ", axes[i]));
    seen[ax] = true;
    before[ax] = pads[i];
    after[ax] = pads[na + i];
  }
  std::string mode = a.node.attrS("mode");
  enum { kConstant, kReflect, kEdge, kWrap } m;
  if (mode == "constant") m = kConstant;
  else if (mode == "reflect") m = kReflect;
  else if (mode == "edge") m = kEdge;
  else if (mode == "wrap") m = kWrap;
  else return invalid(absl::StrCat("unsupported Pad mode '", mode, "'"));
  const Shape &in = data->shape();
  Shape out(r);
  for (int64_t d = 0; d < r; ++d) {
    if (before[d] < -kMaxElements || before[d] > kMaxElements || after[d] < -kMaxElements ||
        after[d] > kMaxElements)
      return invalid(absl::StrCat("pads ", shapeStr(pads), " are too large"));
    out[d] = in[d] + before[d] + after[d];
    if (out[d] < 0)
      return invalid(absl::StrCat("pads ", shapeStr(pads), " crop axis ", d, " of shape ",
                                  shapeStr(in), " below zero"));
    if (m != kConstant && in[d] == 0 && out[d] > 0)
      return invalid(absl::StrCat("cannot ", mode, "-pad axis ", d, " of size 0"));
  }
  Tensor zero(data->dtype(), {});
  const Tensor *fill = &zero;
  if (const Tensor *cv = a.in(2); cv && m == kConstant && cv->numElements() > 0) {
    if (cv->dtype() != data->dtype())
      return invalid(absl::StrCat("constant_value has dtype ", ir::dtypeName(cv->dtype()),
                                  ", data has ", ir::dtypeName(data->dtype())));
    if (cv->numElements() != 1)
      return invalid(absl::StrCat("constant_value must be a scalar, got shape ",
                                  shapeStr(cv->shape())));
    fill = cv;
  }
  Shape strides = ir::rowMajorStrides(in);
  FUSEC_ASSIGN_OR_RETURN(
      Tensor t, buildByIndex(
                    *data, out,
                    [&](const std::vector<int64_t> &i) {
                      int64_t s = 0;
                      for (int64_t d = 0; d < r; ++d) {
                        int64_t x = i[d] - before[d], n = in[d];
                        if (x < 0 || x >= n) {
                          switch (m) {
                            case kConstant: return int64_t{-1};
                            case kEdge: x = x < 0 ? 0 : n - 1; break;
                            case kWrap: x = ((x % n) + n) % n; break;
                            case kReflect: {
                              if (n == 1) { x = 0; break; }
                              int64_t period = 2 * (n - 1);
                              x = ((x % period) + period) % period;
                              if (x >= n) x = period - x;
                              break;
                            }
                          }
                        }
                        s += x * strides[d];
                      }
                      return s;
                    },
                    fill));
  return one(std::move(t));
}

//===----------------------------------------------------------------------===//
// Shape, Size, ConstantOfShape, Range, Constant.
//===----------------------------------------------------------------------===//

Result shapeOp(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  int64_t r = data->rank();
  auto clampIdx = [r](int64_t v) {
    if (v < 0) v = v < -r ? 0 : v + r;
    return std::min(v, r);
  };
  int64_t start = clampIdx(a.node.attrI("start"));
  int64_t end = a.node.hasAttr("end") ? clampIdx(a.node.getInt("end", r)) : r;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(data->shape()[d]);
  return one(Tensor::vectorI64(dims));
}

Result sizeOp(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  return one(Tensor::scalarInt(DType::kI64, data->numElements()));
}

Result constantOfShape(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *shapeT, required(a, 0, "input"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, readInts(*shapeT, "input"));
  FUSEC_RETURN_IF_ERROR(checkShape(dims, "shape"));
  Tensor value = Tensor::scalarDouble(DType::kF32, 0.0);
  if (const ir::Attribute *v = a.node.attr("value")) {
    if (v->kind() != ir::Attribute::Kind::kTensor)
      return invalid("attribute 'value' must be a tensor");
    if (v->t().numElements() != 1)
      return invalid(absl::StrCat("attribute 'value' must have one element, got shape ",
                                  shapeStr(v->t().shape())));
    value = v->t();
  }
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(value.dtype(), dims, "ConstantOfShape output"));
  Tensor out(value.dtype(), dims);
  ElemCopier copy(value, out);
  for (int64_t i = 0; i < out.numElements(); ++i) copy(i, 0);
  return one(std::move(out));
}

/// ONNX Range-11: count = max(ceil((limit - start) / delta), 0) elements
/// start + i * delta, in the inputs' dtype.
Result range(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *startT, required(a, 0, "start"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *limitT, required(a, 1, "limit"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *deltaT, required(a, 2, "delta"));
  DType dt = startT->dtype();
  for (const Tensor *t : {startT, limitT, deltaT}) {
    if (t->dtype() != dt)
      return invalid(absl::StrCat("start, limit and delta must share a dtype, got ",
                                  ir::dtypeName(startT->dtype()), ", ",
                                  ir::dtypeName(limitT->dtype()), ", ",
                                  ir::dtypeName(deltaT->dtype())));
    if (t->numElements() != 1 || t->rank() > 1)
      return invalid(absl::StrCat("start, limit and delta must be scalars, got shape ",
                                  shapeStr(t->shape())));
  }
  if (!ir::isFloat(dt) && !ir::isInteger(dt))
    return invalid(absl::StrCat("Range does not support dtype ", ir::dtypeName(dt)));
  if (ir::isFloat(dt)) {
    double start = startT->getDouble(0), limit = limitT->getDouble(0), delta = deltaT->getDouble(0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
      return invalid("Range needs finite start, limit and a non-zero finite delta");
    double c = std::ceil((limit - start) / delta);
    if (c > static_cast<double>(kMaxElements))
      return invalid(absl::StrCat("Range would produce ", c, " elements"));
    int64_t n = c > 0 ? static_cast<int64_t>(c) : 0;
    Tensor out(dt, {n});
    for (int64_t i = 0; i < n; ++i) out.setDouble(i, start + static_cast<double>(i) * delta);
    return one(std::move(out));
  }
  int64_t start = startT->getInt(0), limit = limitT->getInt(0), delta = deltaT->getInt(0);
  if (delta == 0) return invalid("Range delta is 0");
  // Exact ceil((limit - start) / delta) in 128-bit arithmetic.
  __int128 diff = static_cast<__int128>(limit) - start;
  __int128 q = diff / delta;
  if ((diff % delta != 0) && ((diff > 0) == (delta > 0))) ++q;
  if (q > kMaxElements) return invalid("Range would produce too many elements");
  int64_t n = q > 0 ? static_cast<int64_t>(q) : 0;
  Tensor out(dt, {n});
  for (int64_t i = 0; i < n; ++i)  // wraps like two's complement; the result is in range
    out.setInt(i, static_cast<int64_t>(static_cast<uint64_t>(start) +
                                       static_cast<uint64_t>(i) * static_cast<uint64_t>(delta)));
  return one(std::move(out));
}

Result constant(const KernelArgs &a) {
  const ir::Node &n = a.node;
  using K = ir::Attribute::Kind;
  int found = 0;
  Tensor out;
  for (const auto &[name, attr] : n.attrs()) {
    if (name == "value") {
      if (attr.kind() != K::kTensor) return invalid("attribute 'value' must be a tensor");
      out = attr.t();
    } else if (name == "value_float") {
      if (attr.kind() != K::kFloat) return invalid("attribute 'value_float' must be a float");
      out = Tensor::scalarDouble(DType::kF32, attr.f());
    } else if (name == "value_int") {
      if (attr.kind() != K::kInt) return invalid("attribute 'value_int' must be an int");
      out = Tensor::scalarInt(DType::kI64, attr.i());
    } else if (name == "value_floats") {
      if (attr.kind() != K::kFloats) return invalid("attribute 'value_floats' must be floats");
      std::vector<double> v(attr.floats().begin(), attr.floats().end());
      out = Tensor::fromDoubles(DType::kF32, {static_cast<int64_t>(v.size())}, v);
    } else if (name == "value_ints") {
      if (attr.kind() != K::kInts) return invalid("attribute 'value_ints' must be ints");
      out = Tensor::vectorI64(attr.ints());
    } else if (name == "value_string") {
      if (attr.kind() != K::kString) return invalid("attribute 'value_string' must be a string");
      out = Tensor(DType::kString, {});
      out.strings()[0] = attr.s();
    } else if (name == "value_strings") {
      if (attr.kind() != K::kStrings) return invalid("attribute 'value_strings' must be strings");
      out = Tensor(DType::kString, {static_cast<int64_t>(attr.strings().size())});
      out.strings() = attr.strings();
    } else if (name == "sparse_value") {
      return absl::UnimplementedError("Constant with sparse_value is not supported");
    } else {
      continue;
    }
    ++found;
  }
  if (found != 1)
    return invalid(absl::StrCat("Constant needs exactly one value attribute, found ", found));
  return one(std::move(out));
}

//===----------------------------------------------------------------------===//
// Compress, NonMaxSuppression: results whose size depends on the data.
//===----------------------------------------------------------------------===//

/// Compress: the slices along axis (no axis: the elements of the flattened
/// input) whose condition entry is true; a condition shorter than the axis
/// leaves the rest out.
Result compress(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *cond, required(a, 1, "condition"));
  if (cond->rank() != 1) return invalid(absl::StrCat("condition must be 1-D, got ", shapeStr(cond->shape())));
  const bool hasAxis = a.node.hasAttr("axis");
  Shape in = hasAxis ? data->shape() : Shape{data->numElements()};
  int64_t axis = 0;
  if (hasAxis) {
    if (data->rank() == 0) return invalid("Compress with an axis needs an input of rank >= 1");
    FUSEC_ASSIGN_OR_RETURN(axis, normAxis(a.node.getInt("axis", 0), data->rank()));
  }
  const int64_t len = in[axis];
  if (cond->numElements() > len)
    return invalid(absl::StrCat("condition has ", cond->numElements(), " elements, more than the ", len,
                                " of axis ", axis));
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond->numElements(); ++i)
    if (cond->getInt(i) != 0) keep.push_back(i);
  FUSEC_ASSIGN_OR_RETURN(Tensor t, takeAlongAxis(*data, in, axis, keep));
  return one(std::move(t));
}

/// NonMaxSuppression: per batch and class, the boxes whose score exceeds
/// score_threshold, greedily in order of decreasing score (ties: the lower
/// index), each kept unless its IoU with a kept box exceeds iou_threshold,
/// at most max_output_boxes_per_class (absent or 0: none). Boxes are
/// [y1, x1, y2, x2] with either corner order (center_point_box 0) or
/// [x_centre, y_centre, width, height] (1). The result lists
/// (batch, class, box) in selection order, batch then class.
Result nonMaxSuppression(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *boxes, required(a, 0, "boxes"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *scores, required(a, 1, "scores"));
  if (boxes->rank() != 3 || boxes->shape()[2] != 4)
    return invalid(absl::StrCat("boxes must be [num_batches, spatial_dimension, 4], got ", shapeStr(boxes->shape())));
  if (scores->rank() != 3 || scores->shape()[0] != boxes->shape()[0] || scores->shape()[2] != boxes->shape()[1])
    return invalid(absl::StrCat("scores ", shapeStr(scores->shape()), " do not match boxes ",
                                shapeStr(boxes->shape())));
  auto scalar = [&](size_t i) -> const Tensor * {
    return i < a.inputs.size() && a.inputs[i] && a.inputs[i]->numElements() > 0 ? a.inputs[i] : nullptr;
  };
  const int64_t maxOut = scalar(2) ? scalar(2)->getInt(0) : 0;
  const double iouMax = scalar(3) ? scalar(3)->getDouble(0) : 0.0;
  const bool hasScoreMin = scalar(4) != nullptr;
  const double scoreMin = hasScoreMin ? scalar(4)->getDouble(0) : 0.0;
  const bool centre = a.node.attrI("center_point_box") != 0;
  const int64_t B = boxes->shape()[0], N = boxes->shape()[1], C = scores->shape()[1];
  // Each box as (ymin, xmin, ymax, xmax).
  auto corners = [&](int64_t b, int64_t i, double c[4]) {
    const int64_t o = (b * N + i) * 4;
    const double v0 = boxes->getDouble(o), v1 = boxes->getDouble(o + 1), v2 = boxes->getDouble(o + 2),
                 v3 = boxes->getDouble(o + 3);
    if (centre) {
      c[0] = v1 - v3 / 2; c[1] = v0 - v2 / 2; c[2] = v1 + v3 / 2; c[3] = v0 + v2 / 2;
    } else {
      c[0] = std::min(v0, v2); c[1] = std::min(v1, v3); c[2] = std::max(v0, v2); c[3] = std::max(v1, v3);
    }
  };
  auto suppresses = [&](const double p[4], const double q[4]) {
    const double ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
    if (ap <= 0 || aq <= 0) return false;
    const double ih = std::max(0.0, std::min(p[2], q[2]) - std::max(p[0], q[0]));
    const double iw = std::max(0.0, std::min(p[3], q[3]) - std::max(p[1], q[1]));
    const double inter = ih * iw, uni = ap + aq - inter;
    if (uni <= 0) return false;
    return inter / uni > iouMax;
  };
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      if (maxOut <= 0) continue;
      std::vector<std::pair<double, int64_t>> cand;
      for (int64_t i = 0; i < N; ++i) {
        const double s = scores->getDouble((b * C + c) * N + i);
        if (!hasScoreMin || s > scoreMin) cand.push_back({s, i});
      }
      std::stable_sort(cand.begin(), cand.end(),
                       [](const auto &p, const auto &q) { return p.first > q.first; });
      std::vector<std::array<double, 4>> kept;
      for (const auto &sc : cand) {
        const int64_t i = sc.second;
        if (static_cast<int64_t>(kept.size()) >= maxOut) break;
        std::array<double, 4> box;
        corners(b, i, box.data());
        bool ok = true;
        for (const auto &k : kept)
          if (suppresses(k.data(), box.data())) { ok = false; break; }
        if (!ok) continue;
        kept.push_back(box);
        sel.insert(sel.end(), {b, c, i});
      }
    }
  }
  const int64_t n = static_cast<int64_t>(sel.size()) / 3;
  return one(Tensor::fromInts(DType::kI64, {n, 3}, sel));
}

//===----------------------------------------------------------------------===//
// BitCast, Col2Im, Unique
//===----------------------------------------------------------------------===//

/// BitCast: the bits of each element read as dtype `to` of the same width.
/// Narrow dtypes hold their code in one byte (a narrow integer its value):
/// the code is the low dtypeBits bits, sign-extended into a signed narrow
/// integer.
Result bitCast(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, required(a, 0, "input"));
  if (!a.node.hasAttr("to")) return invalid("BitCast requires attribute 'to'");
  const int64_t code = a.node.getInt("to", 0);
  std::optional<DType> to = ir::dtypeFromOnnx(static_cast<int32_t>(code));
  if (!to) return invalid(absl::StrCat("unsupported BitCast target type ", code));
  if (*to == DType::kString || x->dtype() == DType::kString)
    return invalid("BitCast from or to string is not defined");
  if (ir::dtypeBits(*to) != ir::dtypeBits(x->dtype()))
    return invalid(absl::StrCat("BitCast needs dtypes of one width, got ", ir::dtypeName(x->dtype()), " (",
                                ir::dtypeBits(x->dtype()), " bits) to ", ir::dtypeName(*to), " (",
                                ir::dtypeBits(*to), " bits)"));
  Tensor out(*to, x->shape());
  if (!ir::isNarrow(*to) && !ir::isNarrow(x->dtype())) {
    std::copy(x->bytes().begin(), x->bytes().end(), out.bytes().begin());
    return one(std::move(out));
  }
  const int64_t bits = ir::dtypeBits(*to);
  const unsigned mask = (1u << bits) - 1u;
  const bool signExtend = ir::isNarrowInt(*to) && ir::isSigned(*to) && bits < 8;
  for (int64_t i = 0; i < x->numElements(); ++i) {
    unsigned c = x->data()[i] & mask;
    if (signExtend && (c & (1u << (bits - 1)))) c |= ~mask;
    out.data()[i] = static_cast<uint8_t>(c);
  }
  return one(std::move(out));
}

/// Reads an integer list input (image_shape, block_shape) of \p n entries.
absl::StatusOr<std::vector<int64_t>> intList(const KernelArgs &a, size_t i, const char *what) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *t, required(a, i, what));
  if (t->dtype() != DType::kI64 && t->dtype() != DType::kI32)
    return invalid(absl::StrCat(what, " must be i32 or i64, got ", ir::dtypeName(t->dtype())));
  if (t->rank() != 1) return invalid(absl::StrCat(what, " must be 1-D, got ", shapeStr(t->shape())));
  return t->toInts();
}

/// Col2Im: input [N, C * prod(block), L]; block b (a multi-index over
/// block_shape) of sliding position l (a multi-index over the positions
/// per axis, (image + pads - dilation * (block - 1) - 1) / stride + 1) adds
/// input[n, c * prod(block) + b, l] to image[n, c, l * stride - pad_begin +
/// b * dilation] when that lies in the image.
Result col2Im(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, required(a, 0, "input"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> image, intList(a, 1, "image_shape"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> block, intList(a, 2, "block_shape"));
  const size_t r = image.size();
  if (r == 0 || block.size() != r)
    return invalid(absl::StrCat("image_shape (", image.size(), " entries) and block_shape (", block.size(),
                                ") must name the same number >= 1 of spatial axes"));
  if (x->rank() != 3) return invalid(absl::StrCat("input must be [N, C * prod(block_shape), L], got ",
                                                  shapeStr(x->shape())));
  std::vector<int64_t> dil = a.node.getInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> str = a.node.getInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = a.node.getInts("pads", std::vector<int64_t>(2 * r, 0));
  if (dil.size() != r || str.size() != r || pads.size() != 2 * r)
    return invalid(absl::StrCat("dilations and strides need ", r, " entries and pads ", 2 * r));
  int64_t K = 1, L = 1;
  std::vector<int64_t> npos(r);
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 0 || block[d] < 1 || dil[d] < 1 || str[d] < 1 || pads[d] < 0 || pads[d + r] < 0)
      return invalid("Col2Im needs image_shape >= 0, block_shape, dilations, strides >= 1 and pads >= 0");
    K *= block[d];
    npos[d] = (image[d] + pads[d] + pads[d + r] - dil[d] * (block[d] - 1) - 1) / str[d] + 1;
    if (npos[d] < 1) return invalid(absl::StrCat("no sliding block fits axis ", d, " of image_shape"));
    L *= npos[d];
  }
  const int64_t N = x->shape()[0], CK = x->shape()[1];
  if (CK % K != 0)
    return invalid(absl::StrCat("input dim 1 (", CK, ") is not a multiple of prod(block_shape) = ", K));
  if (x->shape()[2] != L)
    return invalid(absl::StrCat("input dim 2 (", x->shape()[2], ") is not the ", L, " sliding blocks"));
  const int64_t C = CK / K;
  Shape outShape = {N, C};
  outShape.insert(outShape.end(), image.begin(), image.end());
  FUSEC_RETURN_IF_ERROR(checkShape(outShape, "output shape"));
  int64_t plane = 1;
  for (int64_t v : image) plane *= v;
  std::vector<double> acc(static_cast<size_t>(N * C * plane), 0.0);
  std::vector<int64_t> b(r), l(r);
  for (int64_t nc = 0; nc < N * C; ++nc) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t rem = k, d = static_cast<int64_t>(r) - 1; d >= 0; --d) { b[d] = rem % block[d]; rem /= block[d]; }
      for (int64_t p = 0; p < L; ++p) {
        for (int64_t rem = p, d = static_cast<int64_t>(r) - 1; d >= 0; --d) { l[d] = rem % npos[d]; rem /= npos[d]; }
        int64_t o = 0;
        bool inside = true;
        for (size_t d = 0; d < r && inside; ++d) {
          const int64_t q = l[d] * str[d] - pads[d] + b[d] * dil[d];
          inside = q >= 0 && q < image[d];
          o = o * image[d] + q;
        }
        if (inside) acc[static_cast<size_t>(nc * plane + o)] += x->getDouble((nc * K + k) * L + p);
      }
    }
  }
  return one(Tensor::fromDoubles(x->dtype(), outShape, acc));
}

/// Unique: the distinct items of the input, an item being an element of the
/// flattened input (no axis) or a slice along axis. sorted = 1 orders them
/// ascending (slices lexicographically, NaN last and equal to NaN), else in
/// order of first occurrence. Outputs: Y, indices (each item's first
/// occurrence), inverse_indices (per input item, its position in Y), counts.
Result unique(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, required(a, 0, "X"));
  if (x->dtype() == DType::kString) return absl::UnimplementedError("Unique of strings is not supported");
  const bool hasAxis = a.node.hasAttr("axis");
  const Shape in = hasAxis ? x->shape() : Shape{x->numElements()};
  int64_t axis = 0;
  if (hasAxis) {
    if (x->rank() == 0) return invalid("Unique with an axis needs an input of rank >= 1");
    FUSEC_ASSIGN_OR_RETURN(axis, normAxis(a.node.getInt("axis", 0), x->rank()));
  }
  const int64_t M = in[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in[d];
  for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  const bool isF = ir::isFloat(x->dtype()) || ir::isNarrowFloat(x->dtype());
  // -1, 0, 1 comparing element offsets p and q (NaN equal to NaN, above all).
  auto cmpElem = [&](int64_t p, int64_t q) -> int {
    if (isF) {
      const double u = x->getDouble(p), v = x->getDouble(q);
      const bool nu = std::isnan(u), nv = std::isnan(v);
      if (nu || nv) return nu == nv ? 0 : (nu ? 1 : -1);
      return u < v ? -1 : (u > v ? 1 : 0);
    }
    const int64_t u = x->getInt(p), v = x->getInt(q);
    return u < v ? -1 : (u > v ? 1 : 0);
  };
  auto cmpItem = [&](int64_t i, int64_t j) -> int {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        const int c = cmpElem((o * M + i) * inner + e, (o * M + j) * inner + e);
        if (c != 0) return c;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(M));
  for (int64_t i = 0; i < M; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return cmpItem(i, j) < 0; });
  // Groups of equal items in sorted order: first occurrence and count.
  std::vector<int64_t> first, counts, group(static_cast<size_t>(M));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmpItem(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      counts.push_back(0);
    }
    group[order[k]] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  const int64_t U = static_cast<int64_t>(first.size());
  std::vector<int64_t> pos(static_cast<size_t>(U));  // group -> position in Y
  for (int64_t g = 0; g < U; ++g) pos[g] = g;
  if (a.node.attrI("sorted") == 0) {
    std::vector<int64_t> byFirst(static_cast<size_t>(U));
    for (int64_t g = 0; g < U; ++g) byFirst[g] = g;
    std::sort(byFirst.begin(), byFirst.end(), [&](int64_t g, int64_t h) { return first[g] < first[h]; });
    std::vector<int64_t> f2(U), c2(U);
    for (int64_t k = 0; k < U; ++k) {
      pos[byFirst[k]] = k;
      f2[k] = first[byFirst[k]];
      c2[k] = counts[byFirst[k]];
    }
    first = std::move(f2);
    counts = std::move(c2);
  }
  std::vector<int64_t> inverse(static_cast<size_t>(M));
  for (int64_t i = 0; i < M; ++i) inverse[i] = pos[group[i]];
  FUSEC_ASSIGN_OR_RETURN(Tensor y, takeAlongAxis(*x, in, axis, first));
  std::vector<Tensor> outs;
  outs.push_back(std::move(y));
  const int n = a.node.numOutputs();
  if (n > 1) outs.push_back(Tensor::fromInts(DType::kI64, {U}, first));
  if (n > 2) outs.push_back(Tensor::fromInts(DType::kI64, {M}, inverse));
  if (n > 3) outs.push_back(Tensor::fromInts(DType::kI64, {U}, counts));
  return outs;
}

/// TensorScatter: past_cache with update[p..., s, q...] written at
/// [p..., write_indices[p0] + s, q...] (circular: modulo the cache length
/// along axis; linear: a position past the end is refused).
Result tensorScatter(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *cache, required(a, 0, "past_cache"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *upd, required(a, 1, "update"));
  const std::string mode = a.node.attrS("mode");
  if (mode != "linear" && mode != "circular")
    return invalid(absl::StrCat("mode must be linear or circular, got '", mode, "'"));
  const bool circular = mode == "circular";
  const int64_t r = cache->rank();
  if (r < 2) return invalid(absl::StrCat("past_cache must have rank >= 2, got ", shapeStr(cache->shape())));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  if (axis == 0) return invalid("axis must not be 0 (the batch axis)");
  if (upd->rank() != r) return invalid(absl::StrCat("update ", shapeStr(upd->shape()), " and past_cache ",
                                                    shapeStr(cache->shape()), " differ in rank"));
  for (int64_t d = 0; d < r; ++d)
    if (d == axis ? upd->shape()[d] > cache->shape()[d] : upd->shape()[d] != cache->shape()[d])
      return invalid(absl::StrCat("update ", shapeStr(upd->shape()), " does not fit past_cache ",
                                  shapeStr(cache->shape()), " (axis ", axis, ")"));
  const int64_t B = cache->shape()[0], T = cache->shape()[axis], S = upd->shape()[axis];
  std::vector<int64_t> wi(static_cast<size_t>(B), 0);
  if (const Tensor *w = a.in(2)) {
    if (w->rank() != 1 || w->shape()[0] != B)
      return invalid(absl::StrCat("write_indices must be [", B, "], got ", shapeStr(w->shape())));
    wi = w->toInts();
  }
  int64_t outer = 1, inner = 1;  // per batch: the axes between batch and axis; after axis
  for (int64_t d = 1; d < axis; ++d) outer *= cache->shape()[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= cache->shape()[d];
  Tensor out = *cache;
  ElemCopier copy(*upd, out);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      int64_t t = wi[b] + s;
      if (circular) t = ((t % T) + T) % T;
      if (t < 0 || t >= T)
        return invalid(absl::StrCat("write_indices[", b, "] = ", wi[b], " + ", S, " update positions exceed the ",
                                    T, " of axis ", axis));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t e = 0; e < inner; ++e)
          copy(((b * outer + o) * T + t) * inner + e, ((b * outer + o) * S + s) * inner + e);
    }
  return one(std::move(out));
}

}  // namespace

void registerMovementKernels(KernelTable &table) {
  auto set = [&table](ir::OpKind k, KernelFn fn) { table[static_cast<size_t>(k)] = std::move(fn); };
  using ir::OpKind;
  set(OpKind::kGather, gather);
  set(OpKind::kGatherElements, gatherElementsOp);
  set(OpKind::kGatherND, gatherND);
  set(OpKind::kOneHot, oneHot);
  set(OpKind::kScatterND, scatterND);
  set(OpKind::kScatterElements, scatterElements);
  set(OpKind::kExpand, expand);
  set(OpKind::kTile, tile);
  set(OpKind::kTrilu, trilu);
  set(OpKind::kPad, pad);
  set(OpKind::kShape, shapeOp);
  set(OpKind::kSize, sizeOp);
  set(OpKind::kConstantOfShape, constantOfShape);
  set(OpKind::kRange, range);
  set(OpKind::kConstant, constant);
  set(OpKind::kCompress, compress);
  set(OpKind::kNonMaxSuppression, nonMaxSuppression);
  set(OpKind::kBitCast, bitCast);
  set(OpKind::kCol2Im, col2Im);
  set(OpKind::kUnique, unique);
  set(OpKind::kTensorScatter, tensorScatter);
}

}  // namespace fusec::interp
