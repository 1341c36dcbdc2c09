//===- Layout.cpp - Reference functions: reshapes, concat, split, slice ---===//
//
// Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Concat, Split and Slice
// (gathers, padding and generators: Movement.cpp), following the newest
// ONNX opset of each op (https://onnx.ai/onnx/operators/). The importer has
// already turned attribute forms of older opsets into inputs (Ops.def).
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
#include "interp/internal/LayoutUtil.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using namespace layout;  // NOLINT: the helpers of interp/internal/LayoutUtil.h

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
    } else if (dim == 0) {
      count = 0;
    } else {
      // The spec clamps starts to [0, dim-1] for negative steps: a start
      // before the axis (INT64_MIN) still selects element 0, as ONNX
      // Runtime and shape inference have it.
      s = std::clamp<int64_t>(s, 0, dim - 1);
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
}

}  // namespace fusec::interp
