//===- Compute.cpp - Shape rules: elementwise, contractions, reductions ---===//
//
// Inferrer's rules for the compute op families (ir/shape/ShapeInferrer.h):
// n-ary elementwise broadcasting, MatMul, Gemm, Conv and pooling windows,
// Reduce*, ArgMax/ArgMin and LayerNormalization (ONNX operator spec, newest
// opset of each op).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "ir/ConvGeometry.h"
#include "ir/shape/ShapeInferrer.h"
#include "support/Status.h"

namespace fusec::ir::shape {

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<TensorType>> Inferrer::elementwiseNary(DType dtype, int first) {
  std::vector<TensorType> ts;
  for (int i = first; i < node_.numInputs(); ++i)
    if (has(i)) ts.push_back(inType(i));
  FUSEC_ASSIGN_OR_RETURN(TensorType t, broadcast(ts, dtype));
  return std::vector<TensorType>{t};
}

absl::StatusOr<TensorType> Inferrer::matmul() {
  TensorType a = inType(0), b = inType(1);
  DType dt = a.dtype;
  if (!a.rankKnown || !b.rankKnown) return TensorType::unranked(dt);
  if (a.rank() == 0 || b.rank() == 0) return error("MatMul operands must not be scalars");
  Dims as = a.shape, bs = b.shape;
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec) as.insert(as.begin(), Dim(1));
  if (bVec) bs.push_back(Dim(1));
  FUSEC_RETURN_IF_ERROR(mergeEqual(as.back(), bs[bs.size() - 2], "MatMul contraction dim").status());
  TensorType ba(dt, Dims(as.begin(), as.end() - 2)), bb(dt, Dims(bs.begin(), bs.end() - 2));
  FUSEC_ASSIGN_OR_RETURN(TensorType batch, broadcast({ba, bb}, dt));
  Dims out = batch.shape;
  if (!aVec) out.push_back(as[as.size() - 2]);
  if (!bVec) out.push_back(bs.back());
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::gemm() {
  TensorType a = inType(0), b = inType(1);
  DType dt = a.dtype;
  if (!a.rankKnown || !b.rankKnown) return TensorType(dt, {Dim(), Dim()});
  if (a.rank() != 2 || b.rank() != 2) return error("Gemm operands must be 2-D");
  bool ta = node_.attrI("transA") != 0, tb = node_.attrI("transB") != 0;
  Dim m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  Dim kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  FUSEC_RETURN_IF_ERROR(mergeEqual(ka, kb, "Gemm contraction dim").status());
  TensorType out(dt, {m, n});
  if (has(2)) {
    TensorType c = inType(2);
    if (c.rankKnown && c.rank() > 2) return error("Gemm C must have rank <= 2");
    FUSEC_RETURN_IF_ERROR(broadcast({out, c}, dt).status());
  }
  return out;
}

// Largest dilated kernel extent (k-1)*d+1 and padded input extent accepted:
// far beyond any real model, small enough that no window arithmetic
// overflows int64.
constexpr int64_t kMaxWindowExtent = int64_t{1} << 40;

// Output extent of one spatial axis of a convolution or pooling window.
// Errors (message without the node): pads < 0, an unknown auto_pad, a
// dilated kernel or padded input beyond kMaxWindowExtent, a kernel larger
// than the padded input (ONNX Runtime rejects the zero-sized output).
static absl::StatusOr<Dim> windowDim(const Dim &in, int64_t k, int64_t s, int64_t d,
                                     int64_t padBegin, int64_t padEnd,
                                     const std::string &autoPad, bool ceilMode) {
  int64_t effK = 0;
  if (__builtin_mul_overflow(k - 1, d, &effK) || effK >= kMaxWindowExtent)
    return absl::InvalidArgumentError(absl::StrCat(
        "dilated kernel extent (", k, " - 1) * ", d, " + 1 exceeds ", kMaxWindowExtent));
  effK += 1;
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "VALID" && autoPad != "NOTSET")
    return absl::InvalidArgumentError(absl::StrCat("unknown auto_pad '", autoPad,
                                                   "' (NOTSET, SAME_UPPER, SAME_LOWER, VALID)"));
  if (padBegin < 0 || padEnd < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("pads must be >= 0, got ", padBegin, " and ", padEnd));
  if (padBegin > kMaxWindowExtent || padEnd > kMaxWindowExtent)
    return absl::InvalidArgumentError(absl::StrCat("pads exceed ", kMaxWindowExtent));
  if (same) {
    if (s == 1) return in;
    if (!in.isStatic()) return Dim::unknown();
    return Dim((in.value + s - 1) / s);
  }
  if (autoPad == "VALID") padBegin = padEnd = 0;
  if (effK == 1 && s == 1 && padBegin == 0 && padEnd == 0) return in;
  if (!in.isStatic()) return Dim::unknown();
  int64_t span = in.value + padBegin + padEnd - effK;  // all < 2^41 + |in|: no overflow
  if (span < 0)
    return absl::InvalidArgumentError(absl::StrCat("the kernel (extent ", effK,
                                                   " with dilation) exceeds the padded input (",
                                                   in.value, " + ", padBegin + padEnd, ")"));
  if (autoPad == "VALID") return Dim(span / s + 1);
  int64_t out = ceilMode ? (span + s - 1) / s + 1 : span / s + 1;
  // With ceil_mode the last window must start inside the input or the left
  // padding (ONNX MaxPool/AveragePool-19+, as in PyTorch).
  if (ceilMode && (out - 1) * s >= in.value + padBegin) --out;
  return Dim(out);
}

absl::StatusOr<TensorType> Inferrer::convOrPool(bool isConv) {
  TensorType x = inType(0);
  DType dt = x.dtype;
  std::vector<int64_t> kernel = node_.getInts("kernel_shape");
  if (isConv && kernel.empty() && has(1) && inType(1).rankKnown) {
    TensorType w = inType(1);
    for (int64_t i = 2; i < w.rank(); ++i) {
      if (!w.shape[i].isStatic()) {
        kernel.clear();
        break;
      }
      kernel.push_back(w.shape[i].value);
    }
    if (kernel.size() + 2 != static_cast<size_t>(w.rank())) kernel.clear();
  }
  if (!x.rankKnown) {
    if (kernel.empty()) return TensorType::unranked(dt);
    x = TensorType(dt, Dims(kernel.size() + 2));
  }
  if (x.rank() < 3) return error(absl::StrCat("input must have rank >= 3, got ", x.rank()));
  int64_t nsp = x.rank() - 2;
  Dims out{x.shape[0]};
  if (isConv) {
    Dim m;
    if (has(1) && inType(1).rankKnown) {
      TensorType w = inType(1);
      if (w.rank() != x.rank())
        return error(absl::StrCat("weight rank ", w.rank(), " != input rank ", x.rank()));
      m = w.shape[0];
      int64_t group = node_.attrI("group");
      if (w.shape[1].isStatic() && x.shape[1].isStatic() &&
          w.shape[1].value * group != x.shape[1].value)
        return error(absl::StrCat("input channels ", x.shape[1].value, " != weight channels ",
                                  w.shape[1].value, " * group ", group));
    }
    out.push_back(m);
  } else {
    out.push_back(x.shape[1]);
  }
  if (kernel.empty()) {
    for (int64_t i = 0; i < nsp; ++i) out.push_back(Dim::unknown());
    return TensorType(dt, out);
  }
  if (static_cast<int64_t>(kernel.size()) != nsp)
    return error(absl::StrCat("kernel_shape has ", kernel.size(), " entries, expected ", nsp));
  // Conv's kernel_shape, when given, must be W's spatial extents (onnxruntime
  // refuses a disagreeing one; the lowering reads W).
  const TensorType wt = has(1) ? inType(1) : TensorType();
  if (isConv && has(1) && wt.rankKnown && wt.rank() == nsp + 2)
    for (int64_t i = 0; i < nsp; ++i) {
      const Dim wk = wt.shape[2 + i];
      if (wk.isStatic() && wk.value != kernel[i])
        return error(absl::StrCat("kernel_shape[", i, "] = ", kernel[i], " differs from W's extent ", wk.value,
                                  " on spatial axis ", i));
    }
  std::vector<int64_t> strides = node_.getInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> dil = node_.getInts("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = node_.getInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (static_cast<int64_t>(strides.size()) != nsp || static_cast<int64_t>(dil.size()) != nsp ||
      static_cast<int64_t>(pads.size()) != 2 * nsp)
    return error("strides/dilations/pads have the wrong length");
  for (int64_t i = 0; i < nsp; ++i)
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0)
      return error("strides, dilations and kernel_shape must be positive");
  std::string autoPad = node_.attrS("auto_pad");
  bool ceilMode = !isConv && node_.attrI("ceil_mode") != 0;
  // A pooling pad as large as the kernel gives windows that lie wholly in
  // the padding (onnxruntime refuses it).
  if (!isConv && autoPad == "NOTSET")
    for (int64_t i = 0; i < nsp; ++i)
      if (pads[i] >= kernel[i] || pads[nsp + i] >= kernel[i])
        return error(absl::StrCat("pads ", pads[i], " and ", pads[nsp + i], " on spatial axis ", i,
                                  " must be smaller than the kernel extent ", kernel[i]));
  for (int64_t i = 0; i < nsp; ++i) {
    absl::StatusOr<Dim> d = windowDim(x.shape[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                      pads[nsp + i], autoPad, ceilMode);
    if (!d.ok()) return error(absl::StrCat("spatial axis ", i, ": ", d.status().message()));
    out.push_back(*d);
  }
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::reduce() {
  TensorType x = inType(0);
  DType dt = x.dtype;
  bool keep = node_.attrI("keepdims") != 0;
  bool noop = node_.attrI("noop_with_empty_axes") != 0;
  std::optional<std::vector<int64_t>> axes;
  if (has(1)) {
    axes = ints(1);
    if (!axes) {
      // Unknown axes: rank is known only with keepdims (or from the axes length).
      if (!x.rankKnown) return TensorType::unranked(dt);
      if (keep) return TensorType(dt, Dims(x.rank()));
      TensorType at = inType(1);
      if (at.rankKnown && at.rank() == 1 && at.shape[0].isStatic())
        return TensorType(dt, Dims(std::max<int64_t>(0, x.rank() - at.shape[0].value)));
      return TensorType::unranked(dt);
    }
  } else {
    axes = std::vector<int64_t>{};
  }
  if (axes->empty() && noop) return x;
  if (!x.rankKnown) return TensorType::unranked(dt);
  std::vector<bool> reduced(x.rank(), axes->empty());
  for (int64_t a : *axes) {
    FUSEC_ASSIGN_OR_RETURN(int64_t na, normAxis(a, x.rank()));
    // As the reference interpreter: an axis named twice is an error.
    if (reduced[na] && !axes->empty())
      return error(absl::StrCat("axes contains axis ", na, " more than once"));
    reduced[na] = true;
  }
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!reduced[i])
      out.push_back(x.shape[i]);
    else if (keep)
      out.push_back(Dim(1));
  }
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::argReduce() {
  TensorType x = inType(0);
  if (!x.rankKnown) return TensorType::unranked(DType::kI64);
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), x.rank()));
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis)
      out.push_back(x.shape[i]);
    else if (node_.attrI("keepdims") != 0)
      out.push_back(Dim(1));
  }
  return TensorType(DType::kI64, out);
}

absl::StatusOr<std::vector<TensorType>> Inferrer::layerNorm() {
  TensorType x = inType(0);
  std::vector<TensorType> outs{x};
  if (node_.numOutputs() == 1) return outs;
  auto st = dtypeFromOnnx(static_cast<int32_t>(node_.attrI("stash_type")));
  DType sdt = st ? *st : DType::kF32;
  TensorType stat = TensorType::unranked(sdt);
  if (x.rankKnown) {
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), x.rank()));
    stat = TensorType(sdt, x.shape);
    for (int64_t i = axis; i < x.rank(); ++i) stat.shape[i] = Dim(1);
  }
  for (int i = 1; i < node_.numOutputs(); ++i) outs.push_back(stat);
  return outs;
}

absl::StatusOr<TensorType> Inferrer::convTranspose() {
  TensorType x = inType(0), w = inType(1);
  if (!x.rankKnown || !w.rankKnown) return TensorType::unranked(x.dtype);
  std::vector<int64_t> xs, ws;
  for (const Dim &d : x.shape) xs.push_back(d.isStatic() ? d.value : -1);
  for (const Dim &d : w.shape) ws.push_back(d.isStatic() ? d.value : -1);
  FUSEC_ASSIGN_OR_RETURN(ConvTransposeGeometry g, convTransposeGeometry(node_, xs, ws));
  if (has(2)) {
    const TensorType b = inType(2);
    if (b.rankKnown && (b.rank() != 1 || (b.shape[0].isStatic() && g.outChannels >= 0 &&
                                          b.shape[0].value != g.outChannels)))
      return error(absl::StrCat("B has type ", b.str(), ", expected [", g.outChannels, "]"));
  }
  Dims out = {x.shape[0], g.outChannels >= 0 ? Dim(g.outChannels) : Dim::unknown()};
  for (int64_t e : g.outSpatial) out.push_back(e >= 0 ? Dim(e) : Dim::unknown());
  return TensorType(x.dtype, out);
}

}  // namespace fusec::ir::shape
