//===- Reduction.cpp - Reference functions: reductions and normalisation --===//
//
// Reduce* (axes as an optional input, keepdims, noop_with_empty_axes; opset
// 18), ArgMax / ArgMin (opset 13), Softmax / LogSoftmax (opset 13, one axis),
// LayerNormalization (opset 17) and RMSNormalization (opset 23), following
// https://onnx.ai/onnx/operators/. Float dtypes accumulate in double; integer
// dtypes in int64 (wrapping).
//
// Reductions over an empty set give the identity of the reduction: 0 for
// sums, 1 for products, the lowest / highest value of the dtype (-inf / +inf
// for floats) for max / min, and NaN for the mean of floats.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "interp/internal/Broadcast.h"
#include "interp/internal/KernelUtil.h"
#include "interp/internal/Kernels.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::DType;
using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t slot(ir::OpKind k) { return static_cast<size_t>(k); }

/// Drops results the node does not have (optional outputs not requested).
std::vector<Tensor> trimOutputs(std::vector<Tensor> out, const ir::Node &node) {
  size_t want = std::max<size_t>(1, static_cast<size_t>(node.numOutputs()));
  if (out.size() > want) out.resize(want);
  return out;
}

//===----------------------------------------------------------------------===//
// Reduce*
//===----------------------------------------------------------------------===//

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL2 };

/// The reduced axes of a Reduce* node as flags over the input's dims. Axes
/// come from input 1 (the attribute form is accepted too); absent or empty
/// axes mean all axes, or none when noop_with_empty_axes = 1.
absl::StatusOr<std::vector<bool>> reducedAxes(const KernelArgs &args, int64_t rank) {
  std::vector<int64_t> axes;
  bool given = false;
  if (const Tensor *a = args.in(1)) {
    FUSEC_ASSIGN_OR_RETURN(axes, readInts(*a, "axes"));
    given = true;
  } else if (args.node.hasAttr("axes")) {
    axes = args.node.getInts("axes");
    given = true;
  }
  std::vector<bool> reduced(rank, false);
  if (!given || axes.empty()) {
    if (args.node.attrI("noop_with_empty_axes") == 0) reduced.assign(rank, true);
    return reduced;
  }
  for (int64_t a : axes) {
    FUSEC_ASSIGN_OR_RETURN(int64_t ax, normalizeAxis(a, rank, "axes entry"));
    if (reduced[ax]) return invalidArg("axes contains axis ", ax, " more than once");
    reduced[ax] = true;
  }
  return reduced;
}

Result reduce(const KernelArgs &args, ReduceKind kind) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  DType dt = x->dtype();
  bool minMax = kind == ReduceKind::kMax || kind == ReduceKind::kMin;
  if (minMax ? !isNumericOrBool(dt) : !(ir::isFloat(dt) || ir::isInteger(dt)))
    return invalidArg("input has unsupported dtype ", ir::dtypeName(dt));
  FUSEC_ASSIGN_OR_RETURN(std::vector<bool> reduced, reducedAxes(args, x->rank()));
  bool keepdims = args.node.attrI("keepdims") != 0;

  ir::Shape keepShape, outShape;
  int64_t count = 1;  // elements per reduction
  for (int64_t d = 0; d < x->rank(); ++d) {
    int64_t e = x->shape()[d];
    if (reduced[d]) {
      count *= e;
      keepShape.push_back(1);
      if (keepdims) outShape.push_back(1);
    } else {
      keepShape.push_back(e);
      outShape.push_back(e);
    }
  }
  BroadcastIndexer toOut(keepShape, x->shape());
  int64_t nIn = x->numElements();
  int64_t nOut = ir::numElements(keepShape);
  Tensor out(dt, outShape);

  if (ir::isFloat(dt)) {
    double init = 0;
    if (kind == ReduceKind::kProd) init = 1;
    if (kind == ReduceKind::kMax) init = -kInf;
    if (kind == ReduceKind::kMin) init = kInf;
    std::vector<double> acc(nOut, init);
    for (int64_t i = 0; i < nIn; ++i) {
      double v = x->getDouble(i);
      double &a = acc[toOut(i)];
      switch (kind) {
        case ReduceKind::kSum:
        case ReduceKind::kMean: a += v; break;
        case ReduceKind::kSumSquare:
        case ReduceKind::kL2: a += v * v; break;
        case ReduceKind::kProd: a *= v; break;
        case ReduceKind::kMax: a = (std::isnan(a) || std::isnan(v)) ? kNaN : std::max(a, v); break;
        case ReduceKind::kMin: a = (std::isnan(a) || std::isnan(v)) ? kNaN : std::min(a, v); break;
      }
    }
    for (int64_t o = 0; o < nOut; ++o) {
      double a = acc[o];
      if (kind == ReduceKind::kMean) a = count == 0 ? kNaN : a / static_cast<double>(count);
      if (kind == ReduceKind::kL2) a = std::sqrt(a);
      out.setDouble(o, a);
    }
  } else {
    auto [lo, hi] = intRange(dt);
    int64_t init = 0;
    if (kind == ReduceKind::kProd) init = 1;
    if (kind == ReduceKind::kMax) init = lo;
    if (kind == ReduceKind::kMin) init = hi;
    std::vector<int64_t> acc(nOut, init);
    for (int64_t i = 0; i < nIn; ++i) {
      int64_t v = x->getInt(i);
      int64_t &a = acc[toOut(i)];
      switch (kind) {
        case ReduceKind::kSum:
        case ReduceKind::kMean: a = wrapAdd(a, v); break;
        case ReduceKind::kSumSquare:
        case ReduceKind::kL2: a = wrapAdd(a, wrapMul(v, v)); break;
        case ReduceKind::kProd: a = wrapMul(a, v); break;
        case ReduceKind::kMax: a = std::max(a, v); break;
        case ReduceKind::kMin: a = std::min(a, v); break;
      }
    }
    for (int64_t o = 0; o < nOut; ++o) {
      if (kind == ReduceKind::kL2)
        out.setDouble(o, std::sqrt(static_cast<double>(acc[o])));
      else if (kind == ReduceKind::kMean)
        out.setInt(o, count == 0 ? 0 : acc[o] / count);
      else
        out.setInt(o, acc[o]);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

/// The input seen as [outer, axisLen, inner] around \p axis.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit splitAt(const ir::Shape &s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) r.outer *= s[d];
    else if (d == axis) r.len = s[d];
    else r.inner *= s[d];
  }
  return r;
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

/// Index of the max (or min) along 'axis'; ties pick the first index, or the
/// last with select_last_index = 1; NaN counts as the extreme (as numpy).
Result argExtreme(const KernelArgs &args, bool isMax) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (!isNumericOrBool(x->dtype()))
    return invalidArg("input has unsupported dtype ", ir::dtypeName(x->dtype()));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  bool keepdims = args.node.attrI("keepdims") != 0;
  bool last = args.node.attrI("select_last_index") != 0;
  AxisSplit sp = splitAt(x->shape(), axis);
  if (sp.len == 0 && sp.outer * sp.inner > 0)
    return invalidArg("cannot take ", isMax ? "ArgMax" : "ArgMin", " over axis ", axis,
                      " of size 0");
  ir::Shape outShape;
  for (int64_t d = 0; d < x->rank(); ++d) {
    if (d != axis) outShape.push_back(x->shape()[d]);
    else if (keepdims) outShape.push_back(1);
  }
  Tensor out(DType::kI64, outShape);
  bool isF = ir::isFloat(x->dtype());
  for (int64_t o = 0; o < sp.outer; ++o) {
    for (int64_t in = 0; in < sp.inner; ++in) {
      int64_t base = o * sp.len * sp.inner + in;
      int64_t best = 0;
      for (int64_t k = 1; k < sp.len; ++k) {
        int64_t i = base + k * sp.inner, b = base + best * sp.inner;
        bool better, equal;
        if (isF) {
          double v = x->getDouble(i), bv = x->getDouble(b);
          if (std::isnan(bv)) continue;  // first NaN wins
          if (std::isnan(v)) {
            best = k;
            continue;
          }
          better = isMax ? v > bv : v < bv;
          equal = v == bv;
        } else {
          int64_t v = x->getInt(i), bv = x->getInt(b);
          better = isMax ? v > bv : v < bv;
          equal = v == bv;
        }
        if (better || (last && equal)) best = k;
      }
      out.setInt(o * sp.inner + in, best);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// TopK, Hardmax
//===----------------------------------------------------------------------===//

/// TopK (opset 11; the importer turns opset 1's k attribute into input 1):
/// the k largest (largest = 1) or smallest elements along axis, sorted, ties
/// broken by the lower index; NaN orders above every number (as numpy's
/// sort). sorted = 0 leaves the order unspecified; it is sorted here too.
/// Outputs Values (x's dtype) and Indices (i64).
Result topK(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *kT, requireInput(args, 1));
  if (!ir::isFloat(x->dtype()) && !ir::isInteger(x->dtype()))
    return invalidArg("input has unsupported dtype ", ir::dtypeName(x->dtype()));
  if (x->rank() == 0) return invalidArg("TopK input must have rank >= 1");
  if (kT->numElements() != 1 || !ir::isInteger(kT->dtype()))
    return invalidArg("K must be an integer tensor of one element, got ", ir::dtypeName(kT->dtype()),
                      " ", shapeStr(kT->shape()));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  const int64_t k = kT->getInt(0);
  AxisSplit sp = splitAt(x->shape(), axis);
  if (k < 0 || k > sp.len)
    return invalidArg("k = ", k, " is outside [0, ", sp.len, "] (the length of axis ", axis, ")");
  const bool largest = args.node.attrI("largest") != 0;
  ir::Shape outShape = x->shape();
  outShape[axis] = k;
  Tensor values(x->dtype(), outShape), indices(DType::kI64, outShape);
  const bool isF = ir::isFloat(x->dtype()), isU64 = x->dtype() == DType::kU64;
  // a before b in the output order.
  auto before = [&](int64_t a, int64_t b) {
    if (isF) {
      const double va = x->getDouble(a), vb = x->getDouble(b);
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na || nb) return largest ? na && !nb : nb && !na;
      return largest ? va > vb : va < vb;
    }
    if (isU64) {
      const uint64_t va = static_cast<uint64_t>(x->getInt(a)), vb = static_cast<uint64_t>(x->getInt(b));
      return largest ? va > vb : va < vb;
    }
    const int64_t va = x->getInt(a), vb = x->getInt(b);
    return largest ? va > vb : va < vb;
  };
  std::vector<int64_t> order(sp.len);
  for (int64_t o = 0; o < sp.outer; ++o) {
    for (int64_t in = 0; in < sp.inner; ++in) {
      const int64_t base = o * sp.len * sp.inner + in;
      for (int64_t j = 0; j < sp.len; ++j) order[j] = j;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return before(base + a * sp.inner, base + b * sp.inner);
      });
      for (int64_t r = 0; r < k; ++r) {
        const int64_t dst = o * k * sp.inner + r * sp.inner + in, src = base + order[r] * sp.inner;
        if (isF) values.setDouble(dst, x->getDouble(src)); else values.setInt(dst, x->getInt(src));
        indices.setInt(dst, order[r]);
      }
    }
  }
  return std::vector<Tensor>{std::move(values), std::move(indices)};
}

/// Hardmax (opset 13, one axis): 1 at the first maximum of each row along
/// axis (NaN counts as the maximum, as ArgMax), 0 elsewhere.
Result hardmax(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (!ir::isFloat(x->dtype()))
    return invalidArg("input has unsupported dtype ", ir::dtypeName(x->dtype()));
  if (x->rank() == 0) return invalidArg("Hardmax input must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  AxisSplit sp = splitAt(x->shape(), axis);
  Tensor out(x->dtype(), x->shape());  // zero-filled
  for (int64_t o = 0; o < sp.outer; ++o) {
    for (int64_t in = 0; in < sp.inner; ++in) {
      if (sp.len == 0) continue;
      const int64_t base = o * sp.len * sp.inner + in;
      int64_t best = 0;
      for (int64_t j = 1; j < sp.len; ++j) {
        const double v = x->getDouble(base + j * sp.inner), bv = x->getDouble(base + best * sp.inner);
        if (std::isnan(bv)) break;
        if (std::isnan(v) || v > bv) best = j;
      }
      out.setDouble(base + best * sp.inner, 1.0);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

/// Softmax along one axis (opset 13), stabilised by subtracting the row max.
Result softmax(const KernelArgs &args, bool logSoftmax) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "input"));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  AxisSplit sp = splitAt(x->shape(), axis);
  Tensor out(x->dtype(), x->shape());
  for (int64_t o = 0; o < sp.outer; ++o) {
    for (int64_t in = 0; in < sp.inner; ++in) {
      int64_t base = o * sp.len * sp.inner + in;
      double mx = -kInf;
      for (int64_t k = 0; k < sp.len; ++k) mx = std::max(mx, x->getDouble(base + k * sp.inner));
      if (std::isinf(mx)) mx = 0;  // all -inf row (or +inf): avoid inf - inf
      double sum = 0;
      for (int64_t k = 0; k < sp.len; ++k) sum += std::exp(x->getDouble(base + k * sp.inner) - mx);
      double logSum = std::log(sum);
      for (int64_t k = 0; k < sp.len; ++k) {
        int64_t i = base + k * sp.inner;
        double z = x->getDouble(i) - mx;
        out.setDouble(i, logSoftmax ? z - logSum : std::exp(z) / sum);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// LayerNormalization / RMSNormalization
//===----------------------------------------------------------------------===//

/// Checks that an affine parameter (scale / bias) broadcasts to the
/// normalised shape and returns its indexer over that shape.
absl::StatusOr<BroadcastIndexer> paramIndexer(const Tensor &p, const ir::Shape &normShape,
                                              const char *what) {
  FUSEC_RETURN_IF_ERROR(requireFloat(p, what));
  if (!broadcastsTo(p.shape(), normShape))
    return invalidArg(what, " shape ", shapeStr(p.shape()),
                      " does not broadcast to the normalised shape ", shapeStr(normShape));
  return BroadcastIndexer(p.shape(), normShape);
}

/// LayerNormalization (opset 17): over dims [axis, rank),
///   Y = (X - mean) / sqrt(var + epsilon) * Scale + B.
/// Optional outputs Mean and InvStdDev have shape X.shape[:axis] + [1]*...
/// and the dtype named by stash_type (default 1 = f32).
Result layerNorm(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *scale, requireInput(args, 1));
  const Tensor *bias = args.in(2);
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  double eps = args.node.getFloat("epsilon", 1e-5f);
  int64_t stash = args.node.attrI("stash_type");
  std::optional<DType> statType = ir::dtypeFromOnnx(static_cast<int32_t>(stash));
  if (!statType || !ir::isFloat(*statType))
    return invalidArg("stash_type ", stash, " is not a float dtype");

  ir::Shape normShape(x->shape().begin() + axis, x->shape().end());
  ir::Shape statShape(x->shape().begin(), x->shape().begin() + axis);
  statShape.resize(x->shape().size(), 1);
  FUSEC_ASSIGN_OR_RETURN(BroadcastIndexer si, paramIndexer(*scale, normShape, "Scale"));
  std::optional<BroadcastIndexer> bi;
  if (bias) {
    FUSEC_ASSIGN_OR_RETURN(BroadcastIndexer b, paramIndexer(*bias, normShape, "B"));
    bi = b;
  }
  int64_t rows = ir::numElements(statShape), cols = ir::numElements(normShape);
  Tensor y(x->dtype(), x->shape()), meanT(*statType, statShape), invT(*statType, statShape);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = r * cols;
    double mean = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x->getDouble(base + c);
    mean /= static_cast<double>(cols);
    double var = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double d = x->getDouble(base + c) - mean;
      var += d * d;
    }
    var /= static_cast<double>(cols);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double v = (x->getDouble(base + c) - mean) * inv * scale->getDouble(si(c));
      if (bi) v += bias->getDouble((*bi)(c));
      y.setDouble(base + c, v);
    }
    meanT.setDouble(r, mean);
    invT.setDouble(r, inv);
  }
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  out.push_back(std::move(meanT));
  out.push_back(std::move(invT));
  return trimOutputs(std::move(out), args.node);
}

/// RMSNormalization (opset 23): over dims [axis, rank),
///   Y = X / sqrt(mean(X^2) + epsilon) * scale.
Result rmsNorm(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *scale, requireInput(args, 1));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(args.node.attrI("axis"), x->rank()));
  double eps = args.node.getFloat("epsilon", 1e-5f);
  ir::Shape normShape(x->shape().begin() + axis, x->shape().end());
  FUSEC_ASSIGN_OR_RETURN(BroadcastIndexer si, paramIndexer(*scale, normShape, "scale"));
  int64_t cols = ir::numElements(normShape);
  int64_t rows = cols == 0 ? 0 : x->numElements() / cols;
  Tensor y(x->dtype(), x->shape());
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = r * cols;
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) ms += x->getDouble(base + c) * x->getDouble(base + c);
    ms /= static_cast<double>(cols);
    double inv = 1.0 / std::sqrt(ms + eps);
    for (int64_t c = 0; c < cols; ++c)
      y.setDouble(base + c, x->getDouble(base + c) * inv * scale->getDouble(si(c)));
  }
  return std::vector<Tensor>{std::move(y)};
}

}  // namespace

/// CumSum / CumProd (\p product): running sums or products along the axis
/// of input 1 (a scalar, negative counts from the end); exclusive leaves
/// the element itself out (the empty sum 0, the empty product 1), reverse
/// runs from the end. Floats accumulate in double, integers wrap.
Result cumulative(const KernelArgs &args, bool product) {
  const char *name = product ? "CumProd" : "CumSum";
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *a, requireInput(args, 1));
  FUSEC_RETURN_IF_ERROR(requireNumber(*x, "input"));
  if (x->rank() == 0) return invalidArg(name, " input must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> av, readInts(*a, "axis"));
  if (av.size() != 1) return invalidArg("axis must hold one value, got ", av.size());
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(av[0], x->rank()));
  const bool exclusive = args.node.attrI("exclusive") != 0;
  const bool reverse = args.node.attrI("reverse") != 0;
  const ir::Shape &s = x->shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < x->rank(); ++d) inner *= s[d];
  const int64_t len = s[axis];
  Tensor out(x->dtype(), s);
  const bool isF = ir::isFloat(x->dtype());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double accF = product ? 1 : 0;
      int64_t accI = product ? 1 : 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t j = reverse ? len - 1 - k : k;
        const int64_t e = (o * len + j) * inner + i;
        if (exclusive) {
          if (isF) out.setDouble(e, accF); else out.setInt(e, accI);
        }
        if (isF) accF = product ? accF * x->getDouble(e) : accF + x->getDouble(e);
        else accI = product ? wrapMul(accI, x->getInt(e)) : wrapAdd(accI, x->getInt(e));
        if (!exclusive) {
          if (isF) out.setDouble(e, accF); else out.setInt(e, accI);
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

/// Det: the determinant of each trailing M x M matrix, by LU elimination
/// with partial pivoting in double (M = 0: 1).
Result det(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  const int64_t rank = x->rank();
  if (rank < 2 || x->shape()[rank - 1] != x->shape()[rank - 2])
    return invalidArg("Det needs [*, M, M], got ", shapeStr(x->shape()));
  const int64_t m = x->shape()[rank - 1];
  ir::Shape os(x->shape().begin(), x->shape().end() - 2);
  Tensor out(x->dtype(), os);
  const int64_t count = out.numElements();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[i] = x->getDouble(b * m * m + i);
    double d = 1;
    for (int64_t k = 0; k < m && d != 0; ++k) {
      int64_t piv = k;
      for (int64_t i = k + 1; i < m; ++i)
        if (std::fabs(a[i * m + k]) > std::fabs(a[piv * m + k])) piv = i;
      if (a[piv * m + k] == 0) {
        d = 0;
        break;
      }
      if (piv != k) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[piv * m + j]);
        d = -d;
      }
      d *= a[k * m + k];
      for (int64_t i = k + 1; i < m; ++i) {
        const double f = a[i * m + k] / a[k * m + k];
        for (int64_t j = k; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
      }
    }
    out.setDouble(b, d);
  }
  return std::vector<Tensor>{std::move(out)};
}

void registerReductionKernels(KernelTable &t) {
  using K = ir::OpKind;
  auto reg = [&t](K k, ReduceKind r) {
    t[slot(k)] = [r](const KernelArgs &a) { return reduce(a, r); };
  };
  reg(K::kReduceMean, ReduceKind::kMean);
  reg(K::kReduceSum, ReduceKind::kSum);
  reg(K::kReduceMax, ReduceKind::kMax);
  reg(K::kReduceMin, ReduceKind::kMin);
  reg(K::kReduceProd, ReduceKind::kProd);
  reg(K::kReduceSumSquare, ReduceKind::kSumSquare);
  reg(K::kReduceL2, ReduceKind::kL2);
  t[slot(K::kArgMax)] = [](const KernelArgs &a) { return argExtreme(a, true); };
  t[slot(K::kArgMin)] = [](const KernelArgs &a) { return argExtreme(a, false); };
  t[slot(K::kSoftmax)] = [](const KernelArgs &a) { return softmax(a, false); };
  t[slot(K::kLogSoftmax)] = [](const KernelArgs &a) { return softmax(a, true); };
  t[slot(K::kLayerNormalization)] = layerNorm;
  t[slot(K::kRMSNormalization)] = rmsNorm;
  t[slot(K::kCumSum)] = [](const KernelArgs &a) { return cumulative(a, false); };
  t[slot(K::kCumProd)] = [](const KernelArgs &a) { return cumulative(a, true); };
  t[slot(K::kDet)] = det;
  t[slot(K::kTopK)] = topK;
  t[slot(K::kHardmax)] = hardmax;
}

}  // namespace fusec::interp
