//===- Layout.cpp - Reference functions: layout, shape and constant ops ---===//
//
// Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Concat, Split, Slice,
// Gather, GatherElements, GatherND, Expand, Tile, Trilu, Pad, Shape, Size,
// ConstantOfShape, Range and Constant, following the newest ONNX opset of
// each op (https://onnx.ai/onnx/operators/). The importer has already turned
// attribute forms of older opsets into inputs (Ops.def).
//
// Layout ops only move elements: they work on raw bytes, one dtypeSize()
// chunk per element (strings element-wise), so they handle every dtype.
// Every index read from a tensor is range-checked; bad inputs are
// InvalidArgument errors naming what is wrong.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/internal/Kernels.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::DType;
using ir::Shape;
using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;

/// Largest element count a layout op may produce (guards against absurd
/// shapes read from tensors, e.g. ConstantOfShape([1e12])).
constexpr int64_t kMaxElements = int64_t{1} << 32;

absl::Status invalid(const std::string &msg) { return absl::InvalidArgumentError(msg); }

std::string shapeStr(const Shape &s) { return absl::StrCat("[", absl::StrJoin(s, ","), "]"); }

/// Checks that every dim is >= 0 and that the product of the non-zero dims
/// is at most \p limit (default kMaxElements), so that no partial product
/// of the shape (as ir::numElements computes it) overflows.
absl::Status checkShape(const Shape &s, const char *what, int64_t limit = kMaxElements) {
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
absl::StatusOr<int64_t> normAxis(int64_t axis, int64_t rank, const char *what = "axis") {
  if (axis < -rank || axis >= rank)
    return invalid(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

/// Input \p i, which must be present.
absl::StatusOr<const Tensor *> required(const KernelArgs &a, size_t i, const char *what) {
  const Tensor *t = a.in(i);
  if (!t) return invalid(absl::StrCat("missing required input ", i, " (", what, ")"));
  return t;
}

/// Reads an integer tensor (any integer dtype, rank <= 1) as int64 values.
absl::StatusOr<std::vector<int64_t>> readInts(const Tensor &t, const char *what) {
  if (!ir::isInteger(t.dtype()))
    return invalid(absl::StrCat(what, " must be an integer tensor, got ", ir::dtypeName(t.dtype())));
  if (t.rank() > 1)
    return invalid(absl::StrCat(what, " must be 1-D, got shape ", shapeStr(t.shape())));
  return t.toInts();
}

/// Reads a scalar (rank 0, or 1-D with one element) as int64.
absl::StatusOr<int64_t> readScalarInt(const Tensor &t, const char *what) {
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
absl::StatusOr<Tensor> buildByIndex(const Tensor &src, const Shape &outShape, Fn srcIndex,
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

std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

//===----------------------------------------------------------------------===//
// Reshape, Flatten, Squeeze, Unsqueeze: same data, new shape.
//===----------------------------------------------------------------------===//

/// ONNX Reshape-21: 0 copies the input dim (unless allowzero=1, where 0 is a
/// zero-size dim); at most one -1, inferred from the element count.
absl::StatusOr<Shape> reshapeTarget(const Shape &in, const std::vector<int64_t> &spec,
                                    bool allowZero) {
  Shape out(spec.size());
  int64_t inferAt = -1;
  bool hasZero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (inferAt >= 0) return invalid("shape has more than one -1");
      inferAt = static_cast<int64_t>(i);
      out[i] = 1;
    } else if (d == 0 && !allowZero) {
      if (i >= in.size())
        return invalid(absl::StrCat("shape[", i, "] = 0 copies a dim the input (rank ", in.size(),
                                    ") does not have"));
      out[i] = in[i];
    } else if (d < 0) {
      return invalid(absl::StrCat("shape[", i, "] = ", d, " is invalid"));
    } else {
      if (d == 0) hasZero = true;
      out[i] = d;
    }
  }
  if (allowZero && hasZero && inferAt >= 0)
    return invalid("shape with allowzero=1 may not contain both 0 and -1");
  int64_t inCount = ir::numElements(in);
  if (inferAt >= 0) {
    int64_t known = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int64_t>(i) != inferAt) {
        if (out[i] != 0 && known > std::numeric_limits<int64_t>::max() / out[i])
          return invalid(absl::StrCat("shape ", shapeStr(spec), " is too large"));
        known *= out[i];
      }
    if (known == 0)
      return invalid(absl::StrCat("cannot infer -1 in shape ", shapeStr(spec),
                                  " when the other dims have zero elements"));
    if (inCount % known != 0)
      return invalid(absl::StrCat("cannot reshape ", shapeStr(in), " (", inCount,
                                  " elements) to ", shapeStr(spec)));
    out[inferAt] = inCount / known;
  }
  // Reshape makes no new data: only guard the element count against overflow.
  FUSEC_RETURN_IF_ERROR(checkShape(out, "reshape target", std::numeric_limits<int64_t>::max()));
  if (ir::numElements(out) != inCount)
    return invalid(absl::StrCat("cannot reshape ", shapeStr(in), " (", inCount, " elements) to ",
                                shapeStr(out), " (", ir::numElements(out), " elements)"));
  return out;
}

Result reshape(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *shapeT, required(a, 1, "shape"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> spec, readInts(*shapeT, "shape"));
  FUSEC_ASSIGN_OR_RETURN(Shape out,
                         reshapeTarget(data->shape(), spec, a.node.attrI("allowzero") != 0));
  return one(data->reshaped(out));
}

Result flatten(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  int64_t r = data->rank();
  int64_t axis = a.node.attrI("axis");
  if (axis < -r || axis > r)
    return invalid(absl::StrCat("axis ", axis, " is out of range [", -r, ", ", r, "]"));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= data->shape()[d];
  return one(data->reshaped({outer, inner}));
}

Result squeeze(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  const Shape &in = data->shape();
  int64_t r = data->rank();
  std::vector<bool> drop(r, false);
  if (const Tensor *axesT = a.in(1)) {
    FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> axes, readInts(*axesT, "axes"));
    for (int64_t ax : axes) {
      FUSEC_ASSIGN_OR_RETURN(int64_t d, normAxis(ax, r, "axes entry"));
      if (drop[d]) return invalid(absl::StrCat("axes repeats axis ", ax));
      if (in[d] != 1)
        return invalid(absl::StrCat("cannot squeeze axis ", ax, " of shape ", shapeStr(in),
                                    ": its size is not 1"));
      drop[d] = true;
    }
  } else {
    for (int64_t d = 0; d < r; ++d) drop[d] = in[d] == 1;
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[d]) out.push_back(in[d]);
  return one(data->reshaped(out));
}

Result unsqueeze(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *axesT, required(a, 1, "axes"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> axes, readInts(*axesT, "axes"));
  int64_t outRank = data->rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(outRank, false);
  for (int64_t ax : axes) {
    FUSEC_ASSIGN_OR_RETURN(int64_t d, normAxis(ax, outRank, "axes entry"));
    if (inserted[d]) return invalid(absl::StrCat("axes repeats axis ", ax));
    inserted[d] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d) out.push_back(inserted[d] ? 1 : data->shape()[next++]);
  return one(data->reshaped(out));
}

//===----------------------------------------------------------------------===//
// Transpose, Concat, Split, Slice.
//===----------------------------------------------------------------------===//

Result transpose(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  int64_t r = data->rank();
  std::vector<int64_t> perm = a.node.getInts("perm");
  if (!a.node.hasAttr("perm")) {
    for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != r)
    return invalid(absl::StrCat("perm ", shapeStr(perm), " has ", perm.size(),
                                " entries for an input of rank ", r));
  std::vector<bool> seen(r, false);
  for (int64_t &p : perm) {
    FUSEC_ASSIGN_OR_RETURN(p, normAxis(p, r, "perm entry"));
    if (seen[p]) return invalid(absl::StrCat("perm ", shapeStr(a.node.getInts("perm")),
                                             " is not a permutation"));
    seen[p] = true;
  }
  Shape out(r);
  for (int64_t d = 0; d < r; ++d) out[d] = data->shape()[perm[d]];
  Shape strides = ir::rowMajorStrides(data->shape());
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t s = 0;
                           for (int64_t d = 0; d < r; ++d) s += i[d] * strides[perm[d]];
                           return s;
                         }));
  return one(std::move(t));
}

Result concat(const KernelArgs &a) {
  if (a.inputs.empty()) return invalid("Concat needs at least one input");
  std::vector<const Tensor *> ins;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    FUSEC_ASSIGN_OR_RETURN(const Tensor *t, required(a, i, "inputs"));
    ins.push_back(t);
  }
  if (!a.node.hasAttr("axis")) return invalid("Concat requires the 'axis' attribute");
  const Tensor &first = *ins[0];
  int64_t r = first.rank();
  if (r == 0) return invalid("Concat inputs must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.getInt("axis", 0), r));
  Shape out = first.shape();
  out[axis] = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor &t = *ins[i];
    if (t.dtype() != first.dtype())
      return invalid(absl::StrCat("input ", i, " has dtype ", ir::dtypeName(t.dtype()),
                                  ", input 0 has ", ir::dtypeName(first.dtype())));
    if (t.rank() != r)
      return invalid(absl::StrCat("input ", i, " has shape ", shapeStr(t.shape()),
                                  ", input 0 has ", shapeStr(first.shape())));
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t.shape()[d] != first.shape()[d])
        return invalid(absl::StrCat("input ", i, " has shape ", shapeStr(t.shape()),
                                    ", which differs from input 0 ", shapeStr(first.shape()),
                                    " outside axis ", axis));
    out[axis] += t.shape()[axis];
  }
  FUSEC_RETURN_IF_ERROR(checkShape(out, "output shape"));
  Tensor result(first.dtype(), out);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= out[d];
  int64_t offset = 0;  // along axis
  for (const Tensor *t : ins) {
    ElemCopier copy(*t, result);
    int64_t len = t->shape()[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < inner; ++j)
          copy((o * out[axis] + offset + k) * inner + j, (o * len + k) * inner + j);
    offset += len;
  }
  return one(std::move(result));
}

/// Copies the slab [begin, begin+len) along \p axis of \p t.
Tensor sliceAxis(const Tensor &t, int64_t axis, int64_t begin, int64_t len) {
  Shape out = t.shape();
  int64_t full = out[axis];
  out[axis] = len;
  Tensor result(t.dtype(), out);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= out[d];
  ElemCopier copy(t, result);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len; ++k)
      for (int64_t j = 0; j < inner; ++j)
        copy((o * len + k) * inner + j, (o * full + begin + k) * inner + j);
  return result;
}

/// ONNX Split-18: sizes from the optional 'split' input, otherwise
/// num_outputs (or the node's output count) chunks of ceil(dim / n), the
/// last one smaller.
Result split(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "input"));
  int64_t r = data->rank();
  if (r == 0) return invalid("Split input must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(a.node.attrI("axis"), r));
  int64_t dim = data->shape()[axis];
  int64_t numOut = a.node.numOutputs();
  std::vector<int64_t> sizes;
  if (const Tensor *splitT = a.in(1)) {
    FUSEC_ASSIGN_OR_RETURN(sizes, readInts(*splitT, "split"));
    if (static_cast<int64_t>(sizes.size()) != numOut)
      return invalid(absl::StrCat("split has ", sizes.size(), " entries but the node has ", numOut,
                                  " outputs"));
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return invalid(absl::StrCat("split ", shapeStr(sizes), " has a negative size"));
      if (s > dim - sum) {
        sum = -1;  // exceeds the axis (checked this way to avoid overflow)
        break;
      }
      sum += s;
    }
    if (sum != dim)
      return invalid(absl::StrCat("split ", shapeStr(sizes), " does not sum to ", dim,
                                  ", the size of axis ", axis));
  } else {
    int64_t n = numOut;
    if (a.node.hasAttr("num_outputs")) {
      n = a.node.getInt("num_outputs", numOut);
      if (n != numOut)
        return invalid(absl::StrCat("num_outputs = ", n, " but the node has ", numOut, " outputs"));
    }
    if (n <= 0) return invalid("Split needs at least one output");
    int64_t chunk = (dim + n - 1) / n;
    sizes.assign(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
    if (sizes.back() < 0)
      return invalid(absl::StrCat("cannot split size ", dim, " into ", n, " chunks of ", chunk));
  }
  std::vector<Tensor> outs;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    outs.push_back(sliceAxis(*data, axis, begin, s));
    begin += s;
  }
  return outs;
}

/// ONNX Slice-13: starts/ends/axes/steps inputs; negative indices count from
/// the end; starts and ends are clamped ([0, dim] for positive steps,
/// [0, dim-1] / [-1, dim-1] for negative steps).
Result slice(const KernelArgs &a) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *data, required(a, 0, "data"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *startsT, required(a, 1, "starts"));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *endsT, required(a, 2, "ends"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> starts, readInts(*startsT, "starts"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> ends, readInts(*endsT, "ends"));
  size_t n = starts.size();
  if (ends.size() != n)
    return invalid(absl::StrCat("starts has ", n, " entries but ends has ", ends.size()));
  int64_t r = data->rank();
  std::vector<int64_t> axes, steps(n, 1);
  if (const Tensor *axesT = a.in(3)) {
    FUSEC_ASSIGN_OR_RETURN(axes, readInts(*axesT, "axes"));
    if (axes.size() != n)
      return invalid(absl::StrCat("axes has ", axes.size(), " entries but starts has ", n));
  } else {
    if (static_cast<int64_t>(n) > r)
      return invalid(absl::StrCat("starts has ", n, " entries for an input of rank ", r));
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (const Tensor *stepsT = a.in(4)) {
    FUSEC_ASSIGN_OR_RETURN(steps, readInts(*stepsT, "steps"));
    if (steps.size() != n)
      return invalid(absl::StrCat("steps has ", steps.size(), " entries but starts has ", n));
  }
  const Shape &in = data->shape();
  std::vector<int64_t> begin(r, 0), step(r, 1);
  Shape out = in;
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < n; ++i) {
    FUSEC_ASSIGN_OR_RETURN(int64_t ax, normAxis(axes[i], r, "axes entry"));
    if (seen[ax]) return invalid(absl::StrCat("axes repeats axis ", axes[i]));
    seen[ax] = true;
    int64_t dim = in[ax], st = steps[i];
    if (st == 0) return invalid(absl::StrCat("steps[", i, "] is 0"));
    // A step longer than the axis selects at most one element; clamping it
    // keeps the index arithmetic below free of overflow.
    int64_t maxStep = std::max<int64_t>(dim, 1);
    st = std::clamp<int64_t>(st, -maxStep, maxStep);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s = s < -dim ? -1 : s + dim;  // -1 clamps to 0 / stays empty below
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t count;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    begin[ax] = s;
    step[ax] = st;
    out[ax] = count;
  }
  Shape strides = ir::rowMajorStrides(in);
  FUSEC_ASSIGN_OR_RETURN(Tensor t, buildByIndex(*data, out, [&](const std::vector<int64_t> &i) {
                           int64_t s = 0;
                           for (int64_t d = 0; d < r; ++d)
                             s += (begin[d] + i[d] * step[d]) * strides[d];
                           return s;
                         }));
  return one(std::move(t));
}

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

}  // namespace

void registerLayoutKernels(KernelTable &table) {
  auto set = [&table](ir::OpKind k, KernelFn fn) { table[static_cast<size_t>(k)] = std::move(fn); };
  using ir::OpKind;
  set(OpKind::kReshape, reshape);
  set(OpKind::kTranspose, transpose);
  set(OpKind::kFlatten, flatten);
  set(OpKind::kSqueeze, squeeze);
  set(OpKind::kUnsqueeze, unsqueeze);
  set(OpKind::kConcat, concat);
  set(OpKind::kSplit, split);
  set(OpKind::kSlice, slice);
  set(OpKind::kGather, gather);
  set(OpKind::kGatherElements, gatherElementsOp);
  set(OpKind::kGatherND, gatherND);
  set(OpKind::kExpand, expand);
  set(OpKind::kTile, tile);
  set(OpKind::kTrilu, trilu);
  set(OpKind::kPad, pad);
  set(OpKind::kShape, shapeOp);
  set(OpKind::kSize, sizeOp);
  set(OpKind::kConstantOfShape, constantOfShape);
  set(OpKind::kRange, range);
  set(OpKind::kConstant, constant);
}

}  // namespace fusec::interp
