//===- ShapeInference.cpp - Type and shape inference hooks ----------------===//
//
// Infers result dtypes and shapes for every op of ir/Ops.def, following the
// ONNX operator specification of the newest opset of each op (attributes keep
// their ONNX names; axes / split / pads / shape are inputs as Ops.def says).
//
// Dims are static, symbolic or unknown. Broadcasting keeps symbols: sym with
// 1 or with the same sym gives sym, sym with a static n > 1 gives n, two
// different symbols give unknown.
//
// Ops whose result shape depends on input *values* (Reshape, Expand, Slice,
// Squeeze/Unsqueeze axes, Range, ConstantOfShape, Tile, Split sizes, Pad) read
// the value when it is known. A value is known when it is a constant, or when
// "shape data propagation" can compute its elements: a 1-D / scalar integer
// value produced by Shape, optionally followed by Gather, Slice, Concat,
// Unsqueeze, Squeeze, Reshape, Cast, Identity, Constant, ConstantOfShape,
// Equal, Where or integer Add/Sub/Mul/Div of such values, has its elements
// tracked as dims (static or symbolic). This is
// computed on demand from producers and memoised in a per-run cache, so the IR
// itself never changes. Otherwise results get the right rank with "?" dims.
//
// Merging with existing result types: an inferred unknown dim (or unknown
// rank) keeps what the result type already had (e.g. a symbol from an ONNX
// value_info); anything inferred wins otherwise.
//
// Layout: this file holds the dispatch (Inferrer::run, one exhaustive switch
// over OpKind: a new op of ir/Ops.def does not compile until it has a rule),
// shape data propagation (trackNode) and broadcasting; the op families'
// rules are in ir/shape/Compute.cpp and ir/shape/Layout.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeInference.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/QuantGeometry.h"
#include "ir/shape/ShapeInferrer.h"
#include "support/Status.h"

namespace fusec::ir {

namespace shape {

//===----------------------------------------------------------------------===//
// Shape data propagation
//===----------------------------------------------------------------------===//

std::optional<Elems> Inferrer::track(const Value *v, int depth) {
  if (!v || depth > kMaxTrackDepth) return std::nullopt;
  auto it = cache_.find(v);
  if (it != cache_.end()) return it->second;
  std::optional<Elems> result;
  if (const Tensor *t = v->constant()) {
    if ((isInteger(t->dtype()) || t->dtype() == DType::kBool) && t->rank() <= 1 &&
        t->numElements() <= kMaxTrackedElems) {
      Elems e;
      for (int64_t x : t->toInts()) e.push_back(Elem::ofInt(x));
      result = std::move(e);
    }
  } else if (v->producer() && v->resultIndex() == 0) {
    result = trackNode(*v->producer(), depth + 1);
  }
  // Only scalars and vectors are tracked.
  const TensorType &ty = v->type();
  if (result && ty.rankKnown && ty.rank() > 1) result = std::nullopt;
  cache_[v] = result;
  return result;
}

std::optional<Elems> Inferrer::trackNode(const Node &n, int depth) {
  auto sub = [&](int i) -> std::optional<Elems> { return track(n.input(i), depth); };
  auto intsOf = [&](int i) -> std::optional<std::vector<int64_t>> {
    auto d = sub(i);
    if (!d) return std::nullopt;
    std::vector<int64_t> out;
    for (const Elem &e : *d) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.v);
    }
    return out;
  };
  switch (n.kind()) {
    case OpKind::kShape: {
      const Value *x = n.input(0);
      if (!x || !x->type().rankKnown) return std::nullopt;
      int64_t r = x->type().rank();
      int64_t start = n.attrI("start"), end = n.getInt("end", r);
      if (start < 0) start += r;
      if (end < 0) end += r;
      start = std::clamp<int64_t>(start, 0, r);
      end = std::clamp<int64_t>(end, 0, r);
      Elems e;
      for (int64_t i = start; i < end; ++i) e.push_back(Elem::ofDim(x->type().shape[i]));
      return e;
    }
    case OpKind::kSize: {
      auto ne = n.input(0) ? n.input(0)->type().numElements() : std::nullopt;
      if (!ne) return std::nullopt;
      return Elems{Elem::ofInt(*ne)};
    }
    case OpKind::kIdentity:
    case OpKind::kCast:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: {
      if (n.kind() == OpKind::kCast) {
        auto to = dtypeFromOnnx(static_cast<int32_t>(n.getInt("to", 0)));
        if (!to || !isInteger(*to)) return std::nullopt;
      }
      return sub(0);
    }
    case OpKind::kConstant: {
      const Attribute *a = n.attr("value");
      if (a && a->kind() == Attribute::Kind::kTensor) {
        const Tensor &t = a->t();
        if (!isInteger(t.dtype()) || t.rank() > 1 || t.numElements() > kMaxTrackedElems)
          return std::nullopt;
        Elems e;
        for (int64_t x : t.toInts()) e.push_back(Elem::ofInt(x));
        return e;
      }
      if (a = n.attr("value_int"); a && a->kind() == Attribute::Kind::kInt)
        return Elems{Elem::ofInt(a->i())};
      if (a = n.attr("value_ints"); a && a->kind() == Attribute::Kind::kInts) {
        Elems e;
        for (int64_t x : a->ints()) e.push_back(Elem::ofInt(x));
        return e;
      }
      return std::nullopt;
    }
    case OpKind::kConcat: {
      Elems e;
      for (int i = 0; i < n.numInputs(); ++i) {
        auto d = sub(i);
        if (!d) return std::nullopt;
        e.insert(e.end(), d->begin(), d->end());
      }
      return e;
    }
    case OpKind::kGather: {
      auto d = sub(0);
      auto idx = intsOf(1);
      if (!d || !idx || n.attrI("axis") != 0) return std::nullopt;
      Elems e;
      int64_t len = static_cast<int64_t>(d->size());
      for (int64_t i : *idx) {
        if (i < 0) i += len;
        if (i < 0 || i >= len) return std::nullopt;
        e.push_back((*d)[i]);
      }
      return e;
    }
    case OpKind::kSlice: {
      auto d = sub(0);
      auto starts = intsOf(1), ends = intsOf(2);
      if (!d || !starts || !ends || starts->size() != 1 || ends->size() != 1)
        return std::nullopt;
      if (n.input(3)) {
        auto axes = intsOf(3);
        if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))
          return std::nullopt;
      }
      int64_t step = 1;
      if (n.input(4)) {
        auto steps = intsOf(4);
        if (!steps || steps->size() != 1 || (*steps)[0] == 0) return std::nullopt;
        step = (*steps)[0];
      }
      int64_t len = static_cast<int64_t>(d->size());
      int64_t s = (*starts)[0], en = (*ends)[0];
      if (s < 0) s += len;
      if (en < 0) en += len;
      Elems e;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, len);
        en = std::clamp<int64_t>(en, 0, len);
        for (int64_t i = s; i < en; i += step) e.push_back((*d)[i]);
      } else {
        s = std::clamp<int64_t>(s, 0, len - 1);
        en = std::clamp<int64_t>(en, -1, len - 1);
        for (int64_t i = s; i > en; i += step) e.push_back((*d)[i]);
      }
      return e;
    }
    case OpKind::kReshape:
      // Element order is unchanged; track() drops results of rank > 1.
      return sub(0);
    case OpKind::kConstantOfShape: {
      auto shape = intsOf(0);
      if (!shape || shape->size() > 1) return std::nullopt;
      int64_t count = shape->empty() ? 1 : (*shape)[0];
      if (count < 0 || count > kMaxTrackedElems) return std::nullopt;
      int64_t fill = 0;
      if (const Attribute *a = n.attr("value"); a && a->kind() == Attribute::Kind::kTensor) {
        const Tensor &t = a->t();
        if (!isInteger(t.dtype()) || t.numElements() != 1) return std::nullopt;
        fill = t.getInt(0);
      }
      return Elems(count, Elem::ofInt(fill));
    }
    case OpKind::kEqual: {
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
      size_t len = std::max(a->size(), b->size());
      Elems e;
      for (size_t i = 0; i < len; ++i) {
        const Elem &x = (*a)[a->size() == 1 ? 0 : i];
        const Elem &y = (*b)[b->size() == 1 ? 0 : i];
        if (x.isInt() && y.isInt()) {
          e.push_back(Elem::ofInt(x.v == y.v));
        } else if (x.kind == Elem::kSym && y.kind == Elem::kSym && x.sym == y.sym) {
          e.push_back(Elem::ofInt(1));
        } else if ((x.kind == Elem::kSym && y.isInt() && y.v < 0) ||
                   (y.kind == Elem::kSym && x.isInt() && x.v < 0)) {
          e.push_back(Elem::ofInt(0));  // Dims are never negative.
        } else {
          e.push_back(Elem{});
        }
      }
      return e;
    }
    case OpKind::kWhere: {
      auto c = sub(0), a = sub(1), b = sub(2);
      if (!c || !a || !b) return std::nullopt;
      size_t len = std::max({c->size(), a->size(), b->size()});
      for (const Elems *v : {&*c, &*a, &*b})
        if (v->size() != len && v->size() != 1) return std::nullopt;
      Elems e;
      for (size_t i = 0; i < len; ++i) {
        const Elem &ci = (*c)[c->size() == 1 ? 0 : i];
        if (!ci.isInt()) {
          e.push_back(Elem{});
          continue;
        }
        e.push_back(ci.v ? (*a)[a->size() == 1 ? 0 : i] : (*b)[b->size() == 1 ? 0 : i]);
      }
      return e;
    }
    case OpKind::kMax:
    case OpKind::kMin: {
      // Two operands (exporters clamp pads and crop sizes at 0): elementwise
      // on known integers; a symbol meets only itself.
      if (n.numInputs() != 2) return std::nullopt;
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
      const size_t len = std::max(a->size(), b->size());
      Elems e;
      for (size_t i = 0; i < len; ++i) {
        const Elem &x = (*a)[a->size() == 1 ? 0 : i];
        const Elem &y = (*b)[b->size() == 1 ? 0 : i];
        if (x.isInt() && y.isInt())
          e.push_back(Elem::ofInt(n.kind() == OpKind::kMax ? std::max(x.v, y.v) : std::min(x.v, y.v)));
        else if (x.kind == Elem::kSym && y.kind == Elem::kSym && x.sym == y.sym)
          e.push_back(x);
        else
          e.push_back(Elem{});
      }
      return e;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv: {
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
      size_t len = std::max(a->size(), b->size());
      Elems e;
      for (size_t i = 0; i < len; ++i) {
        const Elem &x = (*a)[a->size() == 1 ? 0 : i];
        const Elem &y = (*b)[b->size() == 1 ? 0 : i];
        // Identities that keep symbols: x*1, x/1, x+0, x-0.
        if (!y.isInt() || !x.isInt()) {
          bool neutral = y.isInt() && ((n.kind() == OpKind::kMul || n.kind() == OpKind::kDiv)
                                           ? y.v == 1
                                           : y.v == 0);
          if (neutral) {
            e.push_back(x);
          } else if (n.kind() == OpKind::kMul && x.isInt() && x.v == 1) {
            e.push_back(y);
          } else if (n.kind() == OpKind::kAdd && x.isInt() && x.v == 0) {
            e.push_back(y);
          } else {
            e.push_back(Elem{});
          }
          continue;
        }
        // A result that overflows int64 (INT64_MIN / -1 included) is not
        // tracked: it is no shape, and the interpreter (const-fold) gives
        // the dtype's wrapped value.
        int64_t r = 0;
        bool overflow = false;
        if (n.kind() == OpKind::kAdd) {
          overflow = __builtin_add_overflow(x.v, y.v, &r);
        } else if (n.kind() == OpKind::kSub) {
          overflow = __builtin_sub_overflow(x.v, y.v, &r);
        } else if (n.kind() == OpKind::kMul) {
          overflow = __builtin_mul_overflow(x.v, y.v, &r);
        } else {  // Div
          if (y.v == 0 || (y.v == -1 && x.v == std::numeric_limits<int64_t>::min())) return std::nullopt;
          r = x.v / y.v;
        }
        if (overflow) return std::nullopt;
        e.push_back(Elem::ofInt(r));
      }
      return e;
    }
    // Not tracked: their results are not shape data.
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog:
    case OpKind::kSqrt: case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh:
    case OpKind::kSigmoid: case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu:
    case OpKind::kHardSigmoid: case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin:
    case OpKind::kCos: case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kSign: case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf:
    case OpKind::kDropout: case OpKind::kClip: case OpKind::kPow: case OpKind::kMod:
    case OpKind::kSum: case OpKind::kMean:
    case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv: case OpKind::kSoftmax:
    case OpKind::kLogSoftmax: case OpKind::kLayerNormalization: case OpKind::kRMSNormalization:
    case OpKind::kBatchNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kArgMax:
    case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kTranspose:
    case OpKind::kFlatten: case OpKind::kSplit: case OpKind::kGatherElements:
    case OpKind::kGatherND: case OpKind::kExpand: case OpKind::kTile: case OpKind::kTrilu:
    case OpKind::kPad: case OpKind::kRange: case OpKind::kFusedAttention:
    case OpKind::kPRelu: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize: case OpKind::kConvTranspose:
    case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kScatterND:
    case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
    case OpKind::kUnregistered:
      return std::nullopt;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

absl::StatusOr<Dim> Inferrer::broadcastDim(const Dim &a, const Dim &b) const {
  if (a.isStatic() && b.isStatic()) {
    if (a.value == b.value || b.value == 1) return a;
    if (a.value == 1) return b;
    return error(absl::StrCat("cannot broadcast dimensions ", a.value, " and ", b.value));
  }
  if (a.isStatic() && a.value == 1) return b;
  if (b.isStatic() && b.value == 1) return a;
  if (a.isStatic()) return a;  // a > 1: b must be 1 or a.
  if (b.isStatic()) return b;
  if (a.isSymbolic() && b.isSymbolic() && a.symbol == b.symbol) return a;
  return Dim::unknown();
}

absl::StatusOr<TensorType> Inferrer::broadcast(const std::vector<TensorType> &ts,
                                               DType dtype) const {
  int64_t rank = 0;
  for (const TensorType &t : ts) {
    if (!t.rankKnown) return TensorType::unranked(dtype);
    rank = std::max(rank, t.rank());
  }
  Dims out(rank, Dim(1));
  for (const TensorType &t : ts) {
    int64_t off = rank - t.rank();
    for (int64_t i = 0; i < t.rank(); ++i) {
      FUSEC_ASSIGN_OR_RETURN(out[off + i], broadcastDim(out[off + i], t.shape[i]));
    }
  }
  return TensorType(dtype, out);
}

absl::StatusOr<Dim> Inferrer::mergeEqual(const Dim &a, const Dim &b, const char *what) const {
  if (a.isStatic() && b.isStatic()) {
    if (a.value != b.value)
      return error(absl::StrCat(what, " mismatch: ", a.value, " vs ", b.value));
    return a;
  }
  if (a.isStatic()) return a;
  if (b.isStatic()) return b;
  if (a.isSymbolic()) return a;
  return b;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<TensorType>> Inferrer::run() {
  using V = std::vector<TensorType>;
  auto one = [](absl::StatusOr<TensorType> t) -> absl::StatusOr<V> {
    if (!t.ok()) return t.status();
    return V{*t};
  };
  TensorType x = inType(0);
  auto same = [&](DType dt) { TensorType t = x; t.dtype = dt; return V{t}; };
  switch (node_.kind()) {
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog:
    case OpKind::kSqrt: case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh:
    case OpKind::kSigmoid: case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu:
    case OpKind::kHardSigmoid: case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin:
    case OpKind::kCos: case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kSign: case OpKind::kIdentity: case OpKind::kClip:
    case OpKind::kRMSNormalization: case OpKind::kBatchNormalization:
      return same(x.dtype);
    case OpKind::kTrilu:
      if (x.rankKnown && x.rank() < 2) return error("Trilu input must have rank >= 2");
      return same(x.dtype);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kHardmax:
      if (x.rankKnown) FUSEC_RETURN_IF_ERROR(normAxis(node_.attrI("axis"), x.rank()).status());
      return same(x.dtype);
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf:
      return same(DType::kBool);
    case OpKind::kCast: {
      if (!node_.hasAttr("to")) return error("Cast requires attribute 'to'");
      auto to = dtypeFromOnnx(static_cast<int32_t>(node_.getInt("to", 0)));
      if (!to) return error(absl::StrCat("unsupported Cast target type ", node_.getInt("to", 0)));
      return same(*to);
    }
    case OpKind::kDropout: {
      V out{x};
      if (node_.numOutputs() > 1) {
        TensorType m = x;
        m.dtype = DType::kBool;
        out.push_back(m);
      }
      return out;
    }
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
    case OpKind::kPow: case OpKind::kMod: case OpKind::kMax: case OpKind::kMin:
    case OpKind::kSum: case OpKind::kMean:
      return elementwiseNary(x.dtype);
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
      return elementwiseNary(DType::kBool);
    case OpKind::kWhere: {
      std::vector<TensorType> ts{inType(0), inType(1), inType(2)};
      return one(broadcast(ts, inType(1).dtype));
    }
    case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear: {
      // Scale and zero point: one geometry (ir/QuantGeometry.h), the same shape.
      const bool quantize = node_.kind() == OpKind::kQuantizeLinear;
      const TensorType scale = inType(1), zp = inType(2);
      auto extents = [](const TensorType &t) {
        std::vector<int64_t> e;
        for (const Dim &d : t.shape) e.push_back(d.isStatic() ? d.value : -1);
        return e;
      };
      if (x.rankKnown && scale.rankKnown) {
        absl::StatusOr<QuantGeometry> g = quantGeometry(node_, extents(x), extents(scale));
        if (!g.ok()) return error(std::string(g.status().message()));
      }
      if (has(2) && scale.rankKnown && zp.rankKnown && scale.shape != zp.shape &&
          !(scale.rank() <= 1 && zp.rank() <= 1 && scale.numElements() == 1 && zp.numElements() == 1))
        return error(absl::StrCat("zero point ", zp.str(), " and scale ", scale.str(), " differ in shape"));
      absl::StatusOr<DType> dt = quantize ? quantizeResultDType(node_, has(2) ? zp.dtype : DType::kUndefined)
                                          : dequantizeResultDType(node_, scale.dtype);
      if (!dt.ok()) return error(std::string(dt.status().message()));
      if (quantize) {
        absl::StatusOr<DType> cdt = quantizeComputeDType(node_, x.dtype, scale.dtype);
        if (!cdt.ok()) return error(std::string(cdt.status().message()));
      } else {
        int64_t lo, hi;
        if (x.dtype != DType::kUndefined && !quantRange(x.dtype, &lo, &hi) &&
            (!isNarrowFloat(x.dtype) || x.dtype == DType::kF8E8M0))
          return error(absl::StrCat("x has dtype ", dtypeName(x.dtype),
                                    "; DequantizeLinear takes u8, i8, u16, i16, i32, u32, i4, u4, i2, "
                                    "u2, float8 (not e8m0) or f4e2m1"));
      }
      return same(*dt);
    }
    case OpKind::kPRelu: {
      // Unidirectional broadcasting: slope broadcasts to x, the result is x's type.
      const TensorType slope = inType(1);
      if (x.rankKnown && slope.rankKnown) {
        if (slope.rank() > x.rank())
          return error(absl::StrCat("slope of rank ", slope.rank(), " does not broadcast to x of rank ",
                                    x.rank()));
        const int64_t off = x.rank() - slope.rank();
        for (int64_t i = 0; i < slope.rank(); ++i) {
          const Dim &s = slope.shape[i], &d = x.shape[off + i];
          if (s.isStatic() && s.value != 1 && d.isStatic() && s.value != d.value)
            return error(absl::StrCat("slope ", slope.str(), " does not broadcast to x ", x.str(),
                                      " (dim ", i, ": ", s.value, " vs ", d.value, ")"));
        }
      }
      return same(x.dtype);
    }
    case OpKind::kCumSum: case OpKind::kCumProd: {
      if (x.rankKnown) {
        if (x.rank() == 0)
          return error(absl::StrCat(ir::opInfo(node_.kind()).name, " input must have rank >= 1"));
        if (auto axis = ints(1); axis && axis->size() == 1)
          FUSEC_RETURN_IF_ERROR(normAxis((*axis)[0], x.rank()).status());
      }
      return same(x.dtype);
    }
    case OpKind::kResize: return one(resize());
    case OpKind::kGridSample: return one(gridSample());
    case OpKind::kRoiAlign: return one(roiAlign());
    case OpKind::kCompress: return one(compress());
    case OpKind::kNonMaxSuppression: return one(nonMaxSuppression());
    case OpKind::kDet: return one(det());
    case OpKind::kBitCast: return one(bitCast());
    case OpKind::kCol2Im: return one(col2Im());
    case OpKind::kUnique: return unique();
    case OpKind::kTensorScatter: return one(tensorScatter());
    case OpKind::kTopK: return topK();
    case OpKind::kOneHot: return one(oneHot());
    case OpKind::kScatterND: return one(scatterND());
    case OpKind::kScatterElements: {
      // data, indices and updates of one rank; indices and updates of one shape.
      const TensorType idx = inType(1), upd = inType(2);
      if (x.rankKnown && x.rank() == 0) return error("ScatterElements data must have rank >= 1");
      if (x.rankKnown && idx.rankKnown && x.rank() != idx.rank())
        return error(absl::StrCat("indices rank ", idx.rank(), " != data rank ", x.rank()));
      if (idx.rankKnown && upd.rankKnown) {
        if (idx.rank() != upd.rank())
          return error(absl::StrCat("updates ", upd.str(), " and indices ", idx.str(),
                                    " differ in shape"));
        for (int64_t i = 0; i < idx.rank(); ++i)
          FUSEC_RETURN_IF_ERROR(mergeEqual(idx.shape[i], upd.shape[i], "ScatterElements "
                                           "updates/indices dim").status());
      }
      if (x.rankKnown) FUSEC_RETURN_IF_ERROR(normAxis(node_.attrI("axis"), x.rank()).status());
      FUSEC_RETURN_IF_ERROR(scatterReduction());
      return same(x.dtype);
    }
    case OpKind::kBitShift: {
      const std::string dir = node_.getString("direction", "");
      if (dir != "LEFT" && dir != "RIGHT")
        return error(absl::StrCat("BitShift direction must be LEFT or RIGHT, got '", dir, "'"));
      if (ir::isFloat(x.dtype))
        return error(absl::StrCat("BitShift takes integers, not ", dtypeName(x.dtype)));
      return elementwiseNary(x.dtype);
    }
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      if (ir::isFloat(x.dtype))
        return error(absl::StrCat(ir::opInfo(node_.kind()).name, " takes integers, not ", dtypeName(x.dtype)));
      return node_.kind() == OpKind::kBitwiseNot ? same(x.dtype) : elementwiseNary(x.dtype);
    case OpKind::kConvTranspose: return one(convTranspose());
    case OpKind::kMatMul: return one(matmul());
    case OpKind::kGemm: return one(gemm());
    case OpKind::kConv: return one(convOrPool(true));
    case OpKind::kMaxPool: case OpKind::kAveragePool: return one(convOrPool(false));
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: {
      if (!x.rankKnown) return same(x.dtype);
      if (x.rank() < 3) return error("input must have rank >= 3");
      TensorType t = x;
      for (int64_t i = 2; i < t.rank(); ++i) t.shape[i] = Dim(1);
      return V{t};
    }
    case OpKind::kLayerNormalization: return layerNorm();
    case OpKind::kReduceMean: case OpKind::kReduceSum: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceSumSquare:
    case OpKind::kReduceL2:
      return one(reduce());
    case OpKind::kArgMax: case OpKind::kArgMin: return one(argReduce());
    case OpKind::kReshape: return one(reshape());
    case OpKind::kTranspose: return one(transpose());
    case OpKind::kFlatten: return one(flatten());
    case OpKind::kSqueeze: return one(squeeze());
    case OpKind::kUnsqueeze: return one(unsqueeze());
    case OpKind::kConcat: return one(concat());
    case OpKind::kSplit: return split();
    case OpKind::kSlice: return one(slice());
    case OpKind::kGather: return one(gather());
    case OpKind::kGatherElements: {
      TensorType idx = inType(1);
      if (x.rankKnown && idx.rankKnown && x.rank() != idx.rank())
        return error(absl::StrCat("indices rank ", idx.rank(), " != data rank ", x.rank()));
      if (x.rankKnown) FUSEC_RETURN_IF_ERROR(normAxis(node_.attrI("axis"), x.rank()).status());
      idx.dtype = x.dtype;
      return V{idx};
    }
    case OpKind::kGatherND: return one(gatherND());
    case OpKind::kExpand: return one(expand());
    case OpKind::kTile: return one(tile());
    case OpKind::kPad: return one(pad());
    case OpKind::kShape: return one(shape());
    case OpKind::kSize: return V{TensorType(DType::kI64, {})};
    case OpKind::kConstantOfShape: return one(constantOfShape());
    case OpKind::kRange: return one(range());
    case OpKind::kConstant: return one(constant());
    case OpKind::kFusedAttention: {
      // Q [B,Hq,Sq,D], K [B,Hkv,Sk,D], V [B,Hkv,Sk,Dv] -> [B,Hq,Sq,Dv] (ir/Ops.def).
      TensorType q = inType(0), v = inType(2);
      if (!q.rankKnown || !v.rankKnown) return V{TensorType::unranked(q.dtype)};
      if (q.rank() != 4 || v.rank() != 4 || inType(1).rank() != 4)
        return error("FusedAttention takes rank-4 Q, K and V");
      q.shape[3] = v.shape[3];
      return V{q};
    }
    case OpKind::kUnregistered: break;
  }
  return error("no shape inference for this op");
}

/// Merges an inferred type into an existing one: unknown inferred parts keep
/// the existing information.
TensorType mergeTypes(const TensorType &inferred, const TensorType &existing) {
  TensorType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = existing.dtype;
  if (!out.rankKnown) {
    if (existing.rankKnown && existing.rank() > 0) {
      out.rankKnown = true;
      out.shape = existing.shape;
    }
    return out;
  }
  if (existing.rankKnown && existing.rank() == out.rank()) {
    for (int64_t i = 0; i < out.rank(); ++i)
      if (out.shape[i].isUnknown()) out.shape[i] = existing.shape[i];
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> computeNodeTypesCached(const Node &node,
                                                               DataCache &cache) {
  std::vector<TensorType> current;
  for (const Value *v : node.outputs()) current.push_back(v ? v->type() : TensorType());
  if (node.kind() == OpKind::kUnregistered) return current;
  FUSEC_RETURN_IF_ERROR(checkNodeOperands(node));
  FUSEC_ASSIGN_OR_RETURN(std::vector<TensorType> inferred, Inferrer(node, cache).run());
  FUSEC_RETURN_IF_ERROR(checkResultSizes(node, inferred));
  // Optional results the op did not describe keep their types.
  for (size_t i = 0; i < current.size(); ++i)
    current[i] = i < inferred.size() ? mergeTypes(inferred[i], current[i]) : current[i];
  return current;
}

absl::Status inferNodeTypesCached(Node &node, DataCache &cache) {
  FUSEC_ASSIGN_OR_RETURN(std::vector<TensorType> types, computeNodeTypesCached(node, cache));
  for (size_t i = 0; i < types.size(); ++i)
    if (Value *v = node.output(static_cast<int>(i))) v->setType(std::move(types[i]));
  return absl::OkStatus();
}

}  // namespace shape

using shape::DataCache;

absl::StatusOr<std::vector<TensorType>> computeNodeTypes(const Node &node) {
  DataCache cache;
  return shape::computeNodeTypesCached(node, cache);
}

absl::Status inferNodeTypes(Graph &graph, Node &node) {
  DataCache cache;
  return shape::inferNodeTypesCached(node, cache);
}

absl::Status checkDeclaredType(const TensorType &inferred, const TensorType &declared,
                               const std::string &what) {
  auto conflict = [&] {
    return absl::InvalidArgumentError(absl::StrCat(what, " is declared ", declared.str(),
                                                   " but its op gives ", inferred.str()));
  };
  if (inferred.dtype != DType::kUndefined && declared.dtype != DType::kUndefined &&
      inferred.dtype != declared.dtype)
    return conflict();
  if (!inferred.rankKnown || !declared.rankKnown) return absl::OkStatus();
  if (inferred.rank() != declared.rank()) return conflict();
  for (int64_t i = 0; i < inferred.rank(); ++i)
    if (inferred.shape[i].isStatic() && declared.shape[i].isStatic() &&
        inferred.shape[i].value != declared.shape[i].value)
      return conflict();
  return absl::OkStatus();
}

std::optional<Tensor> foldShapeOf(const Node &node) {
  const Value *in = node.input(0);
  if (!in) return std::nullopt;
  const TensorType &ty = in->type();
  if (!ty.rankKnown) return std::nullopt;
  int64_t rank = ty.rank();
  if (node.kind() == OpKind::kSize) {
    std::optional<int64_t> n = ty.numElements();
    if (!n) return std::nullopt;
    return Tensor::scalarInt(DType::kI64, *n);
  }
  // Shape (opset 15+): start / end, negative counts from the back, clamped.
  auto clampAxis = [&](int64_t a) {
    if (a < 0) a += rank;
    return std::clamp<int64_t>(a, 0, rank);
  };
  int64_t start = clampAxis(node.attrI("start"));
  int64_t end = node.hasAttr("end") ? clampAxis(node.getInt("end", rank)) : rank;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) {
    if (!ty.shape[d].isStatic()) return std::nullopt;
    dims.push_back(ty.shape[d].value);
  }
  return Tensor::vectorI64(dims);
}

absl::StatusOr<bool> bindInputDims(Graph &graph,
                                   const std::map<std::string, std::vector<int64_t>> &shapes,
                                   std::map<std::string, int64_t> &symbolBindings) {
  // Largest element count accepted for a bound input (2^40: 4 TiB of f32):
  // every later byte count (cost model, arena plan, kernel grids) is an int64.
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  for (const auto &[inputName, dims] : shapes) {
    Value *input = nullptr;
    for (Value *v : graph.inputs())
      if (v->name() == inputName) input = v;
    if (!input)
      return absl::InvalidArgumentError(
          absl::StrCat("--shape names '", inputName, "', which is not a graph input"));
    const TensorType &ty = input->type();
    if (ty.rankKnown && ty.rank() != static_cast<int64_t>(dims.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          "--shape ", inputName, "=", absl::StrJoin(dims, "x"), " has rank ", dims.size(),
          " but input '", inputName, "' has type ", ty.str()));
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d > 0 && elements > kMaxElements / d)
        return absl::InvalidArgumentError(absl::StrCat(
            "--shape ", inputName, "=", absl::StrJoin(dims, "x"), " has more than 2^40 elements"));
      elements *= d > 0 ? d : 1;
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0)
        return absl::InvalidArgumentError(
            absl::StrCat("--shape ", inputName, ": negative dimension ", dims[d]));
      if (!ty.rankKnown) continue;
      const Dim &dim = ty.shape[d];
      if (dim.isStatic() && dim.value != dims[d])
        return absl::InvalidArgumentError(absl::StrCat("--shape ", inputName, ": dim ", d, " is ",
                                                       dim.value, " in the model, not ", dims[d]));
      if (dim.isSymbolic()) {
        auto [it, inserted] = symbolBindings.emplace(dim.symbol, dims[d]);
        if (!inserted && it->second != dims[d])
          return absl::InvalidArgumentError(absl::StrCat("--shape binds symbol '", dim.symbol,
                                                         "' to both ", it->second, " and ", dims[d]));
      }
    }
  }
  bool changed = false;
  for (Value *v : graph.inputs()) {
    auto it = shapes.find(v->name());
    TensorType ty = v->type();
    if (it != shapes.end() && !ty.rankKnown) {
      ty = TensorType::fromShape(ty.dtype, it->second);
    } else {
      for (Dim &d : ty.shape) {
        if (!d.isSymbolic()) continue;
        auto b = symbolBindings.find(d.symbol);
        if (b != symbolBindings.end()) d = Dim(b->second);
      }
      if (it != shapes.end())
        for (size_t d = 0; d < it->second.size(); ++d) ty.shape[d] = Dim(it->second[d]);
    }
    if (ty != v->type()) {
      v->setType(ty);
      changed = true;
    }
  }
  return changed;
}

absl::Status inferShapes(Graph &graph) {
  DataCache cache;
  for (Node *n : graph.nodes()) FUSEC_RETURN_IF_ERROR(shape::inferNodeTypesCached(*n, cache));
  return absl::OkStatus();
}

}  // namespace fusec::ir
