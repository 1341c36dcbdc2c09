//===- Nn.cpp - Reference functions: contractions, conv, pools, batch norm -===//
//
// MatMul (opset 13, numpy semantics), Gemm (opset 13), Conv (opset 11),
// BatchNormalization (opset 15, inference mode), MaxPool (opset 12),
// AveragePool (opset 19) and the global pools, following
// https://onnx.ai/onnx/operators/. Layout is NC<spatial...> throughout.
//
// Conv and the pools share one window geometry (WindowGeometry): per spatial
// dim the kernel extent, stride, dilation and begin/end pads, resolved from
// auto_pad, and the output extent. For each (output position, kernel
// position) pair it precomputes the input offset, or -1 when the tap falls in
// the padding, so the kernels are plain loops.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "interp/internal/Broadcast.h"
#include "interp/internal/KernelUtil.h"
#include "interp/internal/Kernels.h"
#include "ir/ConvGeometry.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::DType;
using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;

size_t slot(ir::OpKind k) { return static_cast<size_t>(k); }

//===----------------------------------------------------------------------===//
// MatMul / Gemm
//===----------------------------------------------------------------------===//

/// numpy matmul: 1-D operands are promoted (a: [K] -> [1,K], b: [K] -> [K,1])
/// and the added dim removed from the result; batch dims broadcast.
Result matMul(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *a, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *b, requireInput(args, 1));
  FUSEC_RETURN_IF_ERROR(requireNumber(*a, "A"));
  if (a->dtype() != b->dtype())
    return invalidArg("A and B have different dtypes ", ir::dtypeName(a->dtype()), " and ",
                      ir::dtypeName(b->dtype()));
  if (a->rank() == 0 || b->rank() == 0) return invalidArg("MatMul operands must have rank >= 1");
  ir::Shape as = a->shape(), bs = b->shape();
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec) as.insert(as.begin(), 1);
  if (bVec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return invalidArg("inner dims differ: A ", shapeStr(a->shape()), ", B ", shapeStr(b->shape()));
  ir::Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  auto batchOr = broadcastShapes({aBatch, bBatch});
  if (!batchOr.ok())
    return invalidArg("batch dims do not broadcast: A ", shapeStr(a->shape()), ", B ",
                      shapeStr(b->shape()));
  ir::Shape batch = *batchOr;
  ir::Shape outShape = batch;
  if (!aVec) outShape.push_back(m);
  if (!bVec) outShape.push_back(n);
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(a->dtype(), outShape, "MatMul result"));
  Tensor out(a->dtype(), outShape);
  BroadcastIndexer ia(aBatch, batch), ib(bBatch, batch);
  int64_t nb = ir::numElements(batch);
  if (ir::isFloat(a->dtype())) {
    std::vector<double> av = a->toDoubles(), bv = b->toDoubles();
    for (int64_t p = 0; p < nb; ++p) {
      const double *ap = av.data() + ia(p) * m * k;
      const double *bp = bv.data() + ib(p) * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t q = 0; q < k; ++q) s += ap[i * k + q] * bp[q * n + j];
          out.setDouble((p * m + i) * n + j, s);
        }
    }
  } else {
    std::vector<int64_t> av = a->toInts(), bv = b->toInts();
    for (int64_t p = 0; p < nb; ++p) {
      const int64_t *ap = av.data() + ia(p) * m * k;
      const int64_t *bp = bv.data() + ib(p) * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t s = 0;
          for (int64_t q = 0; q < k; ++q) s = wrapAdd(s, wrapMul(ap[i * k + q], bp[q * n + j]));
          out.setInt((p * m + i) * n + j, s);
        }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

/// Gemm: Y = alpha * op(A) * op(B) + beta * C, op = transpose if transA /
/// transB; C (optional) broadcasts unidirectionally to [M, N].
Result gemm(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *a, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *b, requireInput(args, 1));
  const Tensor *c = args.in(2);
  FUSEC_RETURN_IF_ERROR(requireNumber(*a, "A"));
  if (a->dtype() != b->dtype() || (c && c->dtype() != a->dtype()))
    return invalidArg("A, B and C must have the same dtype");
  if (a->rank() != 2 || b->rank() != 2)
    return invalidArg("A and B must be 2-D, got ", shapeStr(a->shape()), " and ",
                      shapeStr(b->shape()));
  bool ta = args.node.attrI("transA") != 0, tb = args.node.attrI("transB") != 0;
  double alpha = args.node.attrF("alpha"), beta = args.node.attrF("beta");
  int64_t m = a->shape()[ta ? 1 : 0], k = a->shape()[ta ? 0 : 1];
  int64_t kb = b->shape()[tb ? 1 : 0], n = b->shape()[tb ? 0 : 1];
  if (k != kb)
    return invalidArg("inner dims differ: op(A) is [", m, ",", k, "], op(B) is [", kb, ",", n, "]");
  ir::Shape outShape{m, n};
  if (c && !broadcastsTo(c->shape(), outShape))
    return invalidArg("C shape ", shapeStr(c->shape()), " does not broadcast to ",
                      shapeStr(outShape));
  std::optional<BroadcastIndexer> ic;
  if (c) ic.emplace(c->shape(), outShape);
  auto aAt = [&](int64_t i, int64_t q) { return ta ? q * m + i : i * k + q; };
  auto bAt = [&](int64_t q, int64_t j) { return tb ? j * k + q : q * n + j; };
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(a->dtype(), outShape, "Gemm result"));
  Tensor out(a->dtype(), outShape);
  bool exactInt = !ir::isFloat(a->dtype()) && alpha == 1.0 && beta == 1.0;
  if (exactInt) {
    std::vector<int64_t> av = a->toInts(), bv = b->toInts();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t q = 0; q < k; ++q) s = wrapAdd(s, wrapMul(av[aAt(i, q)], bv[bAt(q, j)]));
        if (c) s = wrapAdd(s, c->getInt((*ic)(i * n + j)));
        out.setInt(i * n + j, s);
      }
  } else {
    std::vector<double> av = a->toDoubles(), bv = b->toDoubles();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += av[aAt(i, q)] * bv[bAt(q, j)];
        s *= alpha;
        if (c) s += beta * c->getDouble((*ic)(i * n + j));
        out.setDouble(i * n + j, s);
      }
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// Window geometry shared by Conv and the pools
//===----------------------------------------------------------------------===//

struct WindowGeometry {
  ir::Shape in, kernel, strides, dilations, padBegin, padEnd, out;
  /// taps[o * kernelSize + k]: row-major input spatial offset read by output
  /// position o at kernel position k, or -1 if that tap is in the padding.
  std::vector<int64_t> taps;
  /// For each output position, the kernel taps inside [-padBegin, in+padEnd)
  /// (what count_include_pad = 1 divides by).
  std::vector<int64_t> paddedCount;
  int64_t inSize = 1, kernelSize = 1, outSize = 1;
};

/// Largest dilated kernel extent a window may have ((k-1)*d+1), far beyond
/// any real Conv or pool, small enough that span arithmetic cannot overflow.
constexpr int64_t kMaxWindowExtent = int64_t{1} << 32;

/// Reads an ints attribute of \p n entries (default \p dflt each).
absl::StatusOr<ir::Shape> spatialAttr(const ir::Node &node, const char *name, size_t n,
                                      int64_t dflt, int64_t minValue) {
  ir::Shape v = node.getInts(name, ir::Shape(n, dflt));
  if (v.empty()) v.assign(n, dflt);
  if (v.size() != n)
    return invalidArg("attribute ", name, " has ", v.size(), " entries, expected ", n);
  for (int64_t x : v)
    if (x < minValue) return invalidArg("attribute ", name, " has invalid entry ", x);
  return v;
}

/// Resolves the window of a Conv / pool node over input spatial dims \p in,
/// per the output-shape formulas of the ONNX Conv and *Pool specs:
///   NOTSET / VALID: out = floor_or_ceil((in + pads - ((k-1)*d+1)) / s) + 1,
///     where with ceil_mode a window that would start in the end padding
///     is dropped (as ONNX Runtime and PyTorch do);
///   SAME_*: out = ceil(in / s), total pad = (out-1)*s + (k-1)*d+1 - in,
///     the odd unit going to the end (UPPER) or the start (LOWER).
absl::StatusOr<WindowGeometry> windowGeometry(const ir::Node &node, const ir::Shape &in,
                                              const ir::Shape &kernel, bool ceilMode) {
  size_t nd = in.size();
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  for (int64_t k : kernel)
    if (k < 1) return invalidArg("kernel extent ", k, " must be >= 1");
  FUSEC_ASSIGN_OR_RETURN(g.strides, spatialAttr(node, "strides", nd, 1, 1));
  FUSEC_ASSIGN_OR_RETURN(g.dilations, spatialAttr(node, "dilations", nd, 1, 1));
  FUSEC_ASSIGN_OR_RETURN(ir::Shape pads, spatialAttr(node, "pads", 2 * nd, 0, 0));
  std::string autoPad = node.attrS("auto_pad");
  g.padBegin.assign(pads.begin(), pads.begin() + nd);
  g.padEnd.assign(pads.begin() + nd, pads.end());
  g.out.resize(nd);
  for (size_t d = 0; d < nd; ++d) {
    int64_t effK = 0, s = g.strides[d];
    if (__builtin_mul_overflow(kernel[d] - 1, g.dilations[d], &effK) || effK > kMaxWindowExtent)
      return invalidArg("spatial dim ", d, ": dilated kernel extent exceeds ", kMaxWindowExtent);
    effK += 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      g.out[d] = (in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + effK - in[d]);
      int64_t small = total / 2, big = total - small;
      g.padBegin[d] = autoPad == "SAME_UPPER" ? small : big;
      g.padEnd[d] = autoPad == "SAME_UPPER" ? big : small;
      continue;
    }
    bool ceil = ceilMode;
    if (autoPad == "VALID") {
      g.padBegin[d] = g.padEnd[d] = 0;
      ceil = false;  // VALID windows always fit (as ir/ShapeInference.cpp)
    } else if (autoPad != "NOTSET") {
      return invalidArg("attribute auto_pad = '", autoPad, "' is not supported");
    }
    // Checked arithmetic: pads and dilations come from the model (2^40 pads
    // must be an error, not a wrapped size or an abort in the allocation).
    int64_t span = 0;
    if (__builtin_add_overflow(in[d], g.padBegin[d], &span) ||
        __builtin_add_overflow(span, g.padEnd[d], &span) || __builtin_sub_overflow(span, effK, &span))
      return invalidArg("spatial dim ", d, ": padded input size overflows int64");
    if (span < 0)
      return invalidArg("spatial dim ", d, ": the kernel (extent ", effK,
                        " with dilation) is larger than the padded input (", in[d], " + ",
                        g.padBegin[d] + g.padEnd[d], ")");
    g.out[d] = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (g.out[d] - 1) * s >= in[d] + g.padBegin[d]) --g.out[d];
  }
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(ir::DType::kI64, g.out, "window output"));
  g.inSize = ir::numElements(in);
  g.kernelSize = ir::numElements(kernel);
  g.outSize = ir::numElements(g.out);
  if (g.kernelSize > 0 && g.outSize > ir::kMaxTensorElements / g.kernelSize)
    return invalidArg("window taps (", g.outSize, " outputs x ", g.kernelSize,
                      " kernel elements) exceed ", ir::kMaxTensorElements);
  g.taps.assign(g.outSize * g.kernelSize, -1);
  g.paddedCount.assign(g.outSize, 0);
  ir::Shape inStrides = ir::rowMajorStrides(in);
  std::vector<int64_t> oc(nd), kc(nd);
  for (int64_t o = 0; o < g.outSize; ++o) {
    for (int64_t r = o, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
      oc[d] = r % g.out[d];
      r /= g.out[d];
    }
    for (int64_t k = 0; k < g.kernelSize; ++k) {
      for (int64_t r = k, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
        kc[d] = r % kernel[d];
        r /= kernel[d];
      }
      bool inside = true, inPadded = true;
      int64_t off = 0;
      for (size_t d = 0; d < nd; ++d) {
        int64_t ic = oc[d] * g.strides[d] - g.padBegin[d] + kc[d] * g.dilations[d];
        if (ic < 0 || ic >= in[d]) inside = false;
        if (ic < -g.padBegin[d] || ic >= in[d] + g.padEnd[d]) inPadded = false;
        off += ic * inStrides[d];
      }
      if (inside) g.taps[o * g.kernelSize + k] = off;
      if (inPadded) ++g.paddedCount[o];
    }
  }
  return g;
}

/// Checks X is [N, C, spatial...] with at least one spatial dim.
absl::Status requireSpatial(const Tensor &x, const char *what) {
  if (x.rank() < 3)
    return invalidArg(what, " must have shape [N, C, spatial...] (rank >= 3), got ",
                      shapeStr(x.shape()));
  return absl::OkStatus();
}

ir::Shape outputShape(int64_t n, int64_t c, const ir::Shape &spatial) {
  ir::Shape s{n, c};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

/// The operand checks Conv and ConvTranspose share: X a float tensor of rank
/// >= 3 ([N, C, D...]), W and the optional B of X's dtype.
absl::Status requireConvOperands(const Tensor &x, const Tensor &w, const Tensor *bias) {
  FUSEC_RETURN_IF_ERROR(requireFloat(x, "X"));
  if (w.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    return invalidArg("X, W and B must have the same dtype");
  return requireSpatial(x, "X");
}

/// The optional bias B of a convolution with \p m output channels is [m].
absl::Status requireBias(const Tensor *bias, int64_t m) {
  if (bias && (bias->rank() != 1 || bias->shape()[0] != m))
    return invalidArg("B has shape ", shapeStr(bias->shape()), ", expected [", m, "]");
  return absl::OkStatus();
}

/// Conv: X [N, C, D...], W [M, C/group, K...], optional B [M].
Result conv(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *w, requireInput(args, 1));
  const Tensor *bias = args.in(2);
  FUSEC_RETURN_IF_ERROR(requireConvOperands(*x, *w, bias));
  if (w->rank() != x->rank())
    return invalidArg("W has shape ", shapeStr(w->shape()), ", expected rank ", x->rank());
  int64_t n = x->shape()[0], c = x->shape()[1], m = w->shape()[0], cg = w->shape()[1];
  int64_t group = args.node.attrI("group");
  if (group < 1) return invalidArg("group = ", group, " must be >= 1");
  if (c % group != 0 || m % group != 0 || cg != c / group)
    return invalidArg("channels do not match: X has ", c, ", W ", shapeStr(w->shape()),
                      ", group ", group);
  FUSEC_RETURN_IF_ERROR(requireBias(bias, m));
  ir::Shape inSp(x->shape().begin() + 2, x->shape().end());
  ir::Shape kSp(w->shape().begin() + 2, w->shape().end());
  if (args.node.hasAttr("kernel_shape") && args.node.getInts("kernel_shape") != kSp)
    return invalidArg("kernel_shape ", shapeStr(args.node.getInts("kernel_shape")),
                      " differs from the weight's spatial dims ", shapeStr(kSp));
  FUSEC_ASSIGN_OR_RETURN(WindowGeometry g, windowGeometry(args.node, inSp, kSp, false));
  Tensor out(x->dtype(), outputShape(n, m, g.out));
  std::vector<double> xv = x->toDoubles(), wv = w->toDoubles();
  int64_t mg = m / group;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t grp = oc / mg;
      double b0 = bias ? bias->getDouble(oc) : 0.0;
      for (int64_t o = 0; o < g.outSize; ++o) {
        double s = 0;
        const int64_t *taps = g.taps.data() + o * g.kernelSize;
        for (int64_t ci = 0; ci < cg; ++ci) {
          const double *xp = xv.data() + (b * c + grp * cg + ci) * g.inSize;
          const double *wp = wv.data() + (oc * cg + ci) * g.kernelSize;
          for (int64_t k = 0; k < g.kernelSize; ++k)
            if (taps[k] >= 0) s += xp[taps[k]] * wp[k];
        }
        out.setDouble((b * m + oc) * g.outSize + o, s + b0);
      }
    }
  return std::vector<Tensor>{std::move(out)};
}

/// ConvTranspose: Y[n, g*Mg + m, o] = B + sum over input channels c of
/// group g, input points i and kernel taps t with o = i * stride - padBegin
/// + t * dilation of X[n, c, i] * W[c, m, t] (ir/ConvGeometry.h); a scatter
/// over X, accumulated in double.
Result convTranspose(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *w, requireInput(args, 1));
  const Tensor *bias = args.in(2);
  FUSEC_RETURN_IF_ERROR(requireConvOperands(*x, *w, bias));
  FUSEC_ASSIGN_OR_RETURN(ir::ConvTransposeGeometry g,
                         ir::convTransposeGeometry(args.node, x->shape(), w->shape()));
  const int64_t n = x->shape()[0], c = g.inChannels, m = g.outChannels;
  const int64_t cg = c / g.group, mg = m / g.group;
  FUSEC_RETURN_IF_ERROR(requireBias(bias, m));
  const size_t k = g.kernel.size();
  const ir::Shape outShape = outputShape(n, m, g.outSpatial);
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(x->dtype(), outShape, "ConvTranspose result"));
  int64_t inSize = 1, outSize = 1, kSize = 1;
  for (size_t d = 0; d < k; ++d) {
    inSize *= g.inSpatial[d];
    outSize *= g.outSpatial[d];
    kSize *= g.kernel[d];
  }
  std::vector<double> acc(static_cast<size_t>(n * m * outSize), 0.0);
  std::vector<double> xv = x->toDoubles(), wv = w->toDoubles();
  // For each (input point, kernel tap): the output point, or -1 outside.
  std::vector<int64_t> target(static_cast<size_t>(inSize * kSize), -1);
  std::vector<int64_t> ic(k), tc(k);
  for (int64_t i = 0; i < inSize; ++i) {
    for (int64_t r = i, d = static_cast<int64_t>(k) - 1; d >= 0; --d) {
      ic[d] = r % g.inSpatial[d];
      r /= g.inSpatial[d];
    }
    for (int64_t t = 0; t < kSize; ++t) {
      for (int64_t r = t, d = static_cast<int64_t>(k) - 1; d >= 0; --d) {
        tc[d] = r % g.kernel[d];
        r /= g.kernel[d];
      }
      int64_t flat = 0;
      bool inside = true;
      for (size_t d = 0; d < k && inside; ++d) {
        const int64_t o = ic[d] * g.strides[d] - g.padBegin[d] + tc[d] * g.dilations[d];
        inside = o >= 0 && o < g.outSpatial[d];
        flat = flat * g.outSpatial[d] + o;
      }
      if (inside) target[static_cast<size_t>(i * kSize + t)] = flat;
    }
  }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t grp = ci / cg;
      const double *xp = xv.data() + (b * c + ci) * inSize;
      for (int64_t mo = 0; mo < mg; ++mo) {
        const int64_t oc = grp * mg + mo;
        const double *wp = wv.data() + (ci * mg + mo) * kSize;
        double *yp = acc.data() + (b * m + oc) * outSize;
        for (int64_t i = 0; i < inSize; ++i)
          for (int64_t t = 0; t < kSize; ++t) {
            const int64_t o = target[static_cast<size_t>(i * kSize + t)];
            if (o >= 0) yp[o] += xp[i] * wp[t];
          }
      }
    }
  Tensor out(x->dtype(), outShape);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      const double b0 = bias ? bias->getDouble(oc) : 0.0;
      for (int64_t o = 0; o < outSize; ++o) {
        const int64_t e = (b * m + oc) * outSize + o;
        out.setDouble(e, acc[static_cast<size_t>(e)] + b0);
      }
    }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

absl::StatusOr<ir::Shape> poolKernel(const KernelArgs &args, const Tensor &x) {
  ir::Shape k = args.node.getInts("kernel_shape");
  if (static_cast<int64_t>(k.size()) != x.rank() - 2)
    return invalidArg("kernel_shape ", shapeStr(k), " must have ", x.rank() - 2,
                      " entries (one per spatial dim)");
  return k;
}

/// MaxPool: max over each window, padding ignored. The optional Indices
/// output holds flat indices into X (row-major, or column-major over the
/// spatial dims with storage_order = 1).
Result maxPool(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireNumber(*x, "X"));
  FUSEC_RETURN_IF_ERROR(requireSpatial(*x, "X"));
  FUSEC_ASSIGN_OR_RETURN(ir::Shape kernel, poolKernel(args, *x));
  bool ceilMode = args.node.attrI("ceil_mode") != 0;
  bool colMajor = args.node.attrI("storage_order") != 0;
  ir::Shape inSp(x->shape().begin() + 2, x->shape().end());
  FUSEC_ASSIGN_OR_RETURN(WindowGeometry g, windowGeometry(args.node, inSp, kernel, ceilMode));
  int64_t n = x->shape()[0], c = x->shape()[1];
  ir::Shape outShape = outputShape(n, c, g.out);
  Tensor out(x->dtype(), outShape), indices(DType::kI64, outShape);
  bool wantIndices = args.node.numOutputs() > 1;
  ir::Shape rowStrides = ir::rowMajorStrides(inSp), colStrides(inSp.size(), 1);
  for (size_t d = 1; d < inSp.size(); ++d) colStrides[d] = colStrides[d - 1] * inSp[d - 1];
  bool isF = ir::isFloat(x->dtype());
  for (int64_t p = 0; p < n * c; ++p) {
    int64_t base = p * g.inSize;
    for (int64_t o = 0; o < g.outSize; ++o) {
      const int64_t *taps = g.taps.data() + o * g.kernelSize;
      int64_t best = -1;
      double bv = -std::numeric_limits<double>::infinity();
      int64_t bi = std::numeric_limits<int64_t>::min();
      for (int64_t k = 0; k < g.kernelSize; ++k) {
        if (taps[k] < 0) continue;
        if (isF) {
          double v = x->getDouble(base + taps[k]);
          if (best < 0 || v > bv || (std::isnan(v) && !std::isnan(bv))) best = taps[k], bv = v;
        } else {
          int64_t v = x->getInt(base + taps[k]);
          if (best < 0 || v > bi) best = taps[k], bi = v;
        }
      }
      int64_t oi = p * g.outSize + o;
      if (isF) out.setDouble(oi, bv);
      else if (best >= 0) out.setInt(oi, bi);
      else out.setInt(oi, intRange(x->dtype()).first);
      if (wantIndices && best >= 0) {
        int64_t sp = best;
        if (colMajor) {
          sp = 0;
          int64_t r = best;
          for (size_t d = 0; d < inSp.size(); ++d) {
            sp += r / rowStrides[d] * colStrides[d];
            r %= rowStrides[d];
          }
        }
        indices.setInt(oi, base + sp);
      }
    }
  }
  std::vector<Tensor> result{std::move(out)};
  if (wantIndices) result.push_back(std::move(indices));
  return result;
}

/// AveragePool: mean over each window; count_include_pad = 0 divides by the
/// taps inside X, 1 by the taps inside the padded input.
Result averagePool(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  FUSEC_RETURN_IF_ERROR(requireSpatial(*x, "X"));
  FUSEC_ASSIGN_OR_RETURN(ir::Shape kernel, poolKernel(args, *x));
  bool ceilMode = args.node.attrI("ceil_mode") != 0;
  bool includePad = args.node.attrI("count_include_pad") != 0;
  ir::Shape inSp(x->shape().begin() + 2, x->shape().end());
  FUSEC_ASSIGN_OR_RETURN(WindowGeometry g, windowGeometry(args.node, inSp, kernel, ceilMode));
  int64_t n = x->shape()[0], c = x->shape()[1];
  Tensor out(x->dtype(), outputShape(n, c, g.out));
  for (int64_t p = 0; p < n * c; ++p) {
    int64_t base = p * g.inSize;
    for (int64_t o = 0; o < g.outSize; ++o) {
      const int64_t *taps = g.taps.data() + o * g.kernelSize;
      double s = 0;
      int64_t cnt = 0;
      for (int64_t k = 0; k < g.kernelSize; ++k)
        if (taps[k] >= 0) s += x->getDouble(base + taps[k]), ++cnt;
      if (includePad) cnt = g.paddedCount[o];
      out.setDouble(p * g.outSize + o, s / static_cast<double>(cnt));
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

/// GlobalAveragePool / GlobalMaxPool: reduce all dims after N, C to size 1.
Result globalPool(const KernelArgs &args, bool isMax) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(isMax ? requireNumber(*x, "X") : requireFloat(*x, "X"));
  if (x->rank() < 2)
    return invalidArg("X must have shape [N, C, spatial...], got ", shapeStr(x->shape()));
  ir::Shape outShape = x->shape();
  int64_t sp = 1;
  for (size_t d = 2; d < outShape.size(); ++d) sp *= outShape[d], outShape[d] = 1;
  Tensor out(x->dtype(), outShape);
  int64_t rows = ir::numElements(outShape);
  for (int64_t r = 0; r < rows; ++r) {
    double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < sp; ++i) {
      double v = x->getDouble(r * sp + i);
      if (!isMax) acc += v;
      else if (std::isnan(v)) acc = v;
      else if (!std::isnan(acc) && v > acc) acc = v;
    }
    out.setDouble(r, isMax ? acc : acc / static_cast<double>(sp));
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

/// Inference mode: Y = (X - mean) / sqrt(var + epsilon) * scale + B, per
/// channel (dim 1). training_mode = 1 is Unimplemented.
Result batchNorm(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (args.node.attrI("training_mode") != 0)
    return absl::UnimplementedError(
        "BatchNormalization with training_mode = 1 is not supported (inference only)");
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  if (x->rank() < 2)
    return invalidArg("X must have shape [N, C, ...], got ", shapeStr(x->shape()));
  int64_t c = x->shape()[1];
  const char *names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i <= 4; ++i) {
    FUSEC_ASSIGN_OR_RETURN(const Tensor *t, requireInput(args, i));
    FUSEC_RETURN_IF_ERROR(requireFloat(*t, names[i - 1]));
    if (t->rank() != 1 || t->shape()[0] != c)
      return invalidArg(names[i - 1], " has shape ", shapeStr(t->shape()), ", expected [", c, "]");
    p.push_back(t->toDoubles());
  }
  double eps = args.node.getFloat("epsilon", 1e-5f);
  int64_t inner = 1;
  for (int64_t d = 2; d < x->rank(); ++d) inner *= x->shape()[d];
  Tensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < x->numElements(); ++i) {
    int64_t ch = (i / inner) % c;
    double v = (x->getDouble(i) - p[2][ch]) / std::sqrt(p[3][ch] + eps) * p[0][ch] + p[1][ch];
    out.setDouble(i, v);
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void registerNnKernels(KernelTable &t) {
  using K = ir::OpKind;
  t[slot(K::kMatMul)] = matMul;
  t[slot(K::kGemm)] = gemm;
  t[slot(K::kConv)] = conv;
  t[slot(K::kConvTranspose)] = convTranspose;
  t[slot(K::kBatchNormalization)] = batchNorm;
  t[slot(K::kMaxPool)] = maxPool;
  t[slot(K::kAveragePool)] = averagePool;
  t[slot(K::kGlobalAveragePool)] = [](const KernelArgs &a) { return globalPool(a, false); };
  t[slot(K::kGlobalMaxPool)] = [](const KernelArgs &a) { return globalPool(a, true); };
}

}  // namespace fusec::interp
