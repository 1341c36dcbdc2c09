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
//===----------------------------------------------------------------------===//
#include "ir/ShapeInference.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::ir {

namespace {

using Dims = std::vector<Dim>;

/// One element of a tracked integer value: a known integer (any sign), a
/// symbol, or unknown.
struct Elem {
  enum Kind { kInt, kSym, kUnknown } kind = kUnknown;
  int64_t v = 0;
  std::string sym;
  static Elem ofInt(int64_t x) { return Elem{kInt, x, {}}; }
  static Elem ofDim(const Dim &d) {
    if (d.isStatic()) return ofInt(d.value);
    if (d.isSymbolic()) return Elem{kSym, 0, d.symbol};
    return Elem{};
  }
  bool isInt() const { return kind == kInt; }
};
using Elems = std::vector<Elem>;

/// Per-run cache of tracked values (nullopt = not trackable).
using DataCache = absl::flat_hash_map<const Value *, std::optional<Elems>>;

constexpr int kMaxTrackedElems = 64;
constexpr int kMaxTrackDepth = 64;

class Inferrer {
 public:
  Inferrer(const Node &node, DataCache &cache) : node_(node), cache_(cache) {}

  absl::StatusOr<std::vector<TensorType>> run();

 private:
  // --- helpers -------------------------------------------------------------
  absl::Status error(const std::string &msg) const {
    return absl::InvalidArgumentError(absl::StrCat(node_.describe(), ": ", msg));
  }
  const Value *in(int i) const { return node_.input(i); }
  bool has(int i) const { return in(i) != nullptr; }
  TensorType inType(int i) const {
    const Value *v = in(i);
    if (!v) return TensorType::unranked(DType::kUndefined);
    return v->type();
  }
  /// Normalises axis \p a for rank \p r (valid range [-r, r-1]).
  absl::StatusOr<int64_t> normAxis(int64_t a, int64_t r, const char *what = "axis") const {
    if (a < -r || a >= r)
      return error(absl::StrCat(what, " ", a, " out of range for rank ", r));
    return a < 0 ? a + r : a;
  }
  /// The tracked elements of input \p i (constant or shape data).
  std::optional<Elems> data(int i) { return has(i) ? track(in(i), 0) : std::nullopt; }
  /// Input \p i as a list of known integers, or nullopt.
  std::optional<std::vector<int64_t>> ints(int i) {
    auto d = data(i);
    if (!d) return std::nullopt;
    std::vector<int64_t> out;
    for (const Elem &e : *d) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.v);
    }
    return out;
  }
  std::optional<Elems> track(const Value *v, int depth);
  std::optional<Elems> trackNode(const Node &n, int depth);

  absl::StatusOr<Dim> broadcastDim(const Dim &a, const Dim &b) const;
  absl::StatusOr<TensorType> broadcast(const std::vector<TensorType> &ts, DType dtype) const;
  absl::StatusOr<Dim> mergeEqual(const Dim &a, const Dim &b, const char *what) const;

  // --- op families ---------------------------------------------------------
  absl::StatusOr<std::vector<TensorType>> elementwiseNary(DType dtype, int first = 0);
  absl::StatusOr<TensorType> matmul();
  absl::StatusOr<TensorType> gemm();
  absl::StatusOr<TensorType> convOrPool(bool isConv);
  absl::StatusOr<TensorType> reduce();
  absl::StatusOr<TensorType> argReduce();
  absl::StatusOr<TensorType> reshape();
  absl::StatusOr<TensorType> transpose();
  absl::StatusOr<TensorType> flatten();
  absl::StatusOr<TensorType> squeeze();
  absl::StatusOr<TensorType> unsqueeze();
  absl::StatusOr<TensorType> concat();
  absl::StatusOr<std::vector<TensorType>> split();
  absl::StatusOr<TensorType> slice();
  absl::StatusOr<TensorType> gather();
  absl::StatusOr<TensorType> gatherND();
  absl::StatusOr<TensorType> expand();
  absl::StatusOr<TensorType> tile();
  absl::StatusOr<TensorType> pad();
  absl::StatusOr<TensorType> shape();
  absl::StatusOr<TensorType> constantOfShape();
  absl::StatusOr<TensorType> range();
  absl::StatusOr<std::vector<TensorType>> layerNorm();
  absl::StatusOr<TensorType> constant();

  /// A shape from tracked elements of input \p i (for ConstantOfShape,
  /// Expand): static, symbolic or unknown dims; rank from the input's static
  /// length if the elements are unknown; unranked otherwise.
  std::optional<Elems> shapeElems(int i, bool *rankKnown, int64_t *rank);

  const Node &node_;
  DataCache &cache_;
};

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
      int64_t start = n.getInt("start", 0), end = n.getInt("end", r);
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
      if (!d || !idx || n.getInt("axis", 0) != 0) return std::nullopt;
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
        int64_t r = 0;
        switch (n.kind()) {
          case OpKind::kAdd: r = x.v + y.v; break;
          case OpKind::kSub: r = x.v - y.v; break;
          case OpKind::kMul: r = x.v * y.v; break;
          default:
            if (y.v == 0) return std::nullopt;
            r = x.v / y.v;
            break;
        }
        e.push_back(Elem::ofInt(r));
      }
      return e;
    }
    default:
      return std::nullopt;
  }
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
  bool ta = node_.getInt("transA", 0) != 0, tb = node_.getInt("transB", 0) != 0;
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

// Output extent of one spatial axis of a convolution or pooling window.
static Dim windowDim(const Dim &in, int64_t k, int64_t s, int64_t d, int64_t padBegin,
                     int64_t padEnd, const std::string &autoPad, bool ceilMode) {
  int64_t effK = (k - 1) * d + 1;
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    if (s == 1) return in;
    if (!in.isStatic()) return Dim::unknown();
    return Dim((in.value + s - 1) / s);
  }
  if (autoPad == "VALID") {
    if (effK == 1 && s == 1) return in;
    if (!in.isStatic()) return Dim::unknown();
    int64_t span = in.value - effK;
    return Dim(span < 0 ? 0 : span / s + 1);
  }
  if (effK == 1 && s == 1 && padBegin == 0 && padEnd == 0) return in;
  if (!in.isStatic()) return Dim::unknown();
  int64_t span = in.value + padBegin + padEnd - effK;
  if (span < 0) return Dim(0);
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
      int64_t group = node_.getInt("group", 1);
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
  std::vector<int64_t> strides = node_.getInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> dil = node_.getInts("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = node_.getInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (static_cast<int64_t>(strides.size()) != nsp || static_cast<int64_t>(dil.size()) != nsp ||
      static_cast<int64_t>(pads.size()) != 2 * nsp)
    return error("strides/dilations/pads have the wrong length");
  for (int64_t i = 0; i < nsp; ++i)
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0)
      return error("strides, dilations and kernel_shape must be positive");
  std::string autoPad = node_.getString("auto_pad", "NOTSET");
  bool ceilMode = !isConv && node_.getInt("ceil_mode", 0) != 0;
  for (int64_t i = 0; i < nsp; ++i)
    out.push_back(windowDim(x.shape[2 + i], kernel[i], strides[i], dil[i], pads[i],
                            pads[nsp + i], autoPad, ceilMode));
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::reduce() {
  TensorType x = inType(0);
  DType dt = x.dtype;
  bool keep = node_.getInt("keepdims", 1) != 0;
  bool noop = node_.getInt("noop_with_empty_axes", 0) != 0;
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
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", 0), x.rank()));
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis)
      out.push_back(x.shape[i]);
    else if (node_.getInt("keepdims", 1) != 0)
      out.push_back(Dim(1));
  }
  return TensorType(DType::kI64, out);
}

std::optional<Elems> Inferrer::shapeElems(int i, bool *rankKnown, int64_t *rank) {
  auto d = data(i);
  *rankKnown = false;
  *rank = 0;
  if (d) {
    *rankKnown = true;
    *rank = static_cast<int64_t>(d->size());
    return d;
  }
  TensorType st = inType(i);
  if (st.rankKnown && st.rank() == 1 && st.shape[0].isStatic()) {
    *rankKnown = true;
    *rank = st.shape[0].value;
  }
  return std::nullopt;
}

absl::StatusOr<TensorType> Inferrer::reshape() {
  TensorType x = inType(0);
  DType dt = x.dtype;
  bool rankKnown;
  int64_t rank;
  auto elems = shapeElems(1, &rankKnown, &rank);
  if (!rankKnown) return TensorType::unranked(dt);
  if (!elems) return TensorType(dt, Dims(rank));
  bool allowZero = node_.getInt("allowzero", 0) != 0;
  Dims out;
  int inferIdx = -1;
  for (int64_t i = 0; i < rank; ++i) {
    const Elem &e = (*elems)[i];
    if (e.kind == Elem::kSym) {
      out.push_back(Dim::symbolic(e.sym));
    } else if (e.kind == Elem::kUnknown) {
      out.push_back(Dim::unknown());
    } else if (e.v == -1) {
      if (inferIdx >= 0) return error("Reshape shape has more than one -1");
      inferIdx = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else if (e.v == 0 && !allowZero) {
      if (x.rankKnown && i >= x.rank())
        return error(absl::StrCat("Reshape shape[", i, "] = 0 but input has rank ", x.rank()));
      out.push_back(x.rankKnown ? x.shape[i] : Dim::unknown());
    } else if (e.v < 0) {
      return error(absl::StrCat("Reshape shape[", i, "] = ", e.v, " is invalid"));
    } else {
      out.push_back(Dim(e.v));
    }
  }
  if (!x.rankKnown) return TensorType(dt, out);
  // Cancel the known output dims against the input dims: static extents by
  // product, symbols by name.
  int64_t inProd = 1;
  std::vector<std::string> inSyms;
  int inUnknown = 0;
  for (const Dim &d : x.shape) {
    if (d.isStatic())
      inProd *= d.value;
    else if (d.isSymbolic())
      inSyms.push_back(d.symbol);
    else
      ++inUnknown;
  }
  int64_t outProd = 1;
  bool outOpaque = false;
  for (int64_t i = 0; i < rank; ++i) {
    if (i == inferIdx) continue;
    const Dim &d = out[i];
    if (d.isStatic()) {
      outProd *= d.value;
    } else if (d.isSymbolic()) {
      auto it = std::find(inSyms.begin(), inSyms.end(), d.symbol);
      if (it != inSyms.end())
        inSyms.erase(it);
      else
        outOpaque = true;
    } else {
      outOpaque = true;
    }
  }
  if (inferIdx >= 0) {
    if (outOpaque || inUnknown > 0 || outProd == 0) return TensorType(dt, out);
    if (inProd % outProd != 0) {
      if (inSyms.empty())
        return error(absl::StrCat("cannot reshape ", inProd, " elements into a shape with ",
                                  outProd, " elements per -1"));
      return TensorType(dt, out);
    }
    int64_t q = inProd / outProd;
    if (inSyms.empty())
      out[inferIdx] = Dim(q);
    else if (inSyms.size() == 1 && q == 1)
      out[inferIdx] = Dim::symbolic(inSyms[0]);
  } else if (!outOpaque && inUnknown == 0 && inSyms.empty() && inProd != outProd) {
    return error(absl::StrCat("cannot reshape ", x.str(), " (", inProd, " elements) into ",
                              outProd, " elements"));
  }
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::transpose() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  int64_t r = x.rank();
  std::vector<int64_t> perm = node_.getInts("perm");
  if (!node_.hasAttr("perm"))
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r)
    return error(absl::StrCat("perm has ", perm.size(), " entries for rank ", r));
  std::vector<bool> seen(r, false);
  Dims out;
  for (int64_t p : perm) {
    FUSEC_ASSIGN_OR_RETURN(int64_t np, normAxis(p, r, "perm entry"));
    if (seen[np]) return error("perm is not a permutation");
    seen[np] = true;
    out.push_back(x.shape[np]);
  }
  return TensorType(x.dtype, out);
}

// Product of dims: static, a single symbol times static 1, or unknown.
static Dim dimProduct(const Dims &ds) {
  int64_t p = 1;
  const Dim *sym = nullptr;
  for (const Dim &d : ds) {
    if (d.isStatic()) {
      p *= d.value;
    } else if (d.isSymbolic() && !sym) {
      sym = &d;
    } else {
      return Dim::unknown();
    }
  }
  if (!sym) return Dim(p);
  if (p == 1) return *sym;
  return p == 0 ? Dim(0) : Dim::unknown();
}

absl::StatusOr<TensorType> Inferrer::flatten() {
  TensorType x = inType(0);
  if (!x.rankKnown) return TensorType(x.dtype, {Dim(), Dim()});
  int64_t r = x.rank();
  int64_t axis = node_.getInt("axis", 1);
  if (axis < -r || axis > r) return error(absl::StrCat("axis ", axis, " out of range"));
  if (axis < 0) axis += r;
  Dims a(x.shape.begin(), x.shape.begin() + axis), b(x.shape.begin() + axis, x.shape.end());
  return TensorType(x.dtype, {dimProduct(a), dimProduct(b)});
}

absl::StatusOr<TensorType> Inferrer::squeeze() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  std::vector<bool> drop(x.rank(), false);
  if (has(1)) {
    auto axes = ints(1);
    if (!axes) {
      TensorType at = inType(1);
      if (at.rankKnown && at.rank() == 1 && at.shape[0].isStatic())
        return TensorType(x.dtype, Dims(std::max<int64_t>(0, x.rank() - at.shape[0].value)));
      return TensorType::unranked(x.dtype);
    }
    for (int64_t a : *axes) {
      FUSEC_ASSIGN_OR_RETURN(int64_t na, normAxis(a, x.rank()));
      const Dim &d = x.shape[na];
      if (d.isStatic() && d.value != 1)
        return error(absl::StrCat("cannot squeeze axis ", a, " of extent ", d.value));
      drop[na] = true;
    }
  } else {
    // As ONNX: drop the dims known to be 1 (symbolic dims are kept).
    for (int64_t i = 0; i < x.rank(); ++i) drop[i] = x.shape[i].isStatic() && x.shape[i].value == 1;
  }
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::unsqueeze() {
  TensorType x = inType(0);
  auto axes = ints(1);
  if (!axes) {
    TensorType at = inType(1);
    if (x.rankKnown && at.rankKnown && at.rank() <= 1 &&
        (at.rank() == 0 || at.shape[0].isStatic()))
      return TensorType(x.dtype, Dims(x.rank() + (at.rank() == 0 ? 1 : at.shape[0].value)));
    return TensorType::unranked(x.dtype);
  }
  if (!x.rankKnown) return TensorType::unranked(x.dtype);
  int64_t outRank = x.rank() + static_cast<int64_t>(axes->size());
  std::vector<bool> ins(outRank, false);
  for (int64_t a : *axes) {
    FUSEC_ASSIGN_OR_RETURN(int64_t na, normAxis(a, outRank));
    if (ins[na]) return error(absl::StrCat("duplicate axis ", a));
    ins[na] = true;
  }
  Dims out;
  int64_t j = 0;
  for (int64_t i = 0; i < outRank; ++i) out.push_back(ins[i] ? Dim(1) : x.shape[j++]);
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::concat() {
  if (!node_.hasAttr("axis")) return error("Concat requires attribute 'axis'");
  DType dt = inType(0).dtype;
  std::optional<TensorType> acc;
  Dim sum(0);
  int64_t axis = 0;
  for (int i = 0; i < node_.numInputs(); ++i) {
    if (!has(i)) continue;
    TensorType t = inType(i);
    if (!t.rankKnown) continue;
    if (!acc) {
      FUSEC_ASSIGN_OR_RETURN(axis, normAxis(node_.getInt("axis", 0), t.rank()));
      acc = t;
      acc->dtype = dt;
      sum = t.shape[axis];
      continue;
    }
    if (t.rank() != acc->rank())
      return error(absl::StrCat("input ", i, " has rank ", t.rank(), ", expected ", acc->rank()));
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (d == axis) {
        const Dim &x = t.shape[d];
        if (sum.isStatic() && x.isStatic())
          sum = Dim(sum.value + x.value);
        else if (sum.isStatic() && sum.value == 0)
          sum = x;
        else if (!(x.isStatic() && x.value == 0))
          sum = Dim::unknown();
        continue;
      }
      FUSEC_ASSIGN_OR_RETURN(acc->shape[d], mergeEqual(acc->shape[d], t.shape[d], "Concat dim"));
    }
  }
  if (!acc) return TensorType::unranked(dt);
  // An input of unknown rank makes the concatenated extent unknown.
  for (int i = 0; i < node_.numInputs(); ++i)
    if (has(i) && !inType(i).rankKnown) sum = Dim::unknown();
  acc->shape[axis] = sum;
  return *acc;
}

absl::StatusOr<std::vector<TensorType>> Inferrer::split() {
  TensorType x = inType(0);
  int n = node_.numOutputs();
  std::vector<TensorType> outs;
  if (!x.rankKnown) return std::vector<TensorType>(n, TensorType::unranked(x.dtype));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", 0), x.rank()));
  const Dim &d = x.shape[axis];
  std::vector<Dim> sizes(n, Dim::unknown());
  if (has(1)) {
    auto s = ints(1);
    if (s) {
      if (static_cast<int>(s->size()) != n)
        return error(absl::StrCat("split has ", s->size(), " sizes for ", n, " outputs"));
      int64_t total = 0;
      for (int i = 0; i < n; ++i) {
        if ((*s)[i] < 0) return error("split sizes must be non-negative");
        sizes[i] = Dim((*s)[i]);
        total += (*s)[i];
      }
      if (d.isStatic() && total != d.value)
        return error(absl::StrCat("split sizes sum to ", total, ", axis extent is ", d.value));
    }
  } else {
    int64_t numOutputs = node_.getInt("num_outputs", n);
    if (numOutputs != n)
      return error(absl::StrCat("num_outputs = ", numOutputs, " but node has ", n, " outputs"));
    if (d.isStatic() && n > 0) {
      // Opset 18: chunks of ceil(d / n), the last one smaller.
      int64_t chunk = (d.value + n - 1) / n;
      int64_t left = d.value;
      for (int i = 0; i < n; ++i) {
        int64_t c = std::min(chunk, left);
        sizes[i] = Dim(c);
        left -= c;
      }
    } else if (n == 1) {
      sizes[0] = d;
    }
  }
  for (int i = 0; i < n; ++i) {
    TensorType t = x;
    t.shape[axis] = sizes[i];
    outs.push_back(t);
  }
  return outs;
}

absl::StatusOr<TensorType> Inferrer::slice() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  int64_t r = x.rank();
  auto starts = data(1), ends = data(2);
  std::optional<std::vector<int64_t>> axes, steps;
  if (has(3)) axes = ints(3);
  if (has(4)) steps = ints(4);
  bool axesKnown = !has(3) || axes.has_value();
  if (!axesKnown) return TensorType(x.dtype, Dims(r));
  Dims out = x.shape;
  int64_t k = -1;
  if (starts) k = static_cast<int64_t>(starts->size());
  else if (ends) k = static_cast<int64_t>(ends->size());
  else if (axes) k = static_cast<int64_t>(axes->size());
  if (!axes) {
    if (k < 0) {
      TensorType st = inType(1);
      if (st.rankKnown && st.rank() == 1 && st.shape[0].isStatic()) k = st.shape[0].value;
    }
    if (k < 0) return TensorType(x.dtype, Dims(r));
    axes = std::vector<int64_t>();
    for (int64_t i = 0; i < k; ++i) axes->push_back(i);
  }
  k = static_cast<int64_t>(axes->size());
  if ((starts && static_cast<int64_t>(starts->size()) != k) ||
      (ends && static_cast<int64_t>(ends->size()) != k) ||
      (steps && static_cast<int64_t>(steps->size()) != k))
    return error("starts, ends, axes and steps must have the same length");
  std::vector<bool> seen(r, false);
  for (int64_t j = 0; j < k; ++j) {
    FUSEC_ASSIGN_OR_RETURN(int64_t a, normAxis((*axes)[j], r));
    if (seen[a]) return error(absl::StrCat("axis ", (*axes)[j], " repeated"));
    seen[a] = true;
    if (!starts || !ends || (has(4) && !steps)) {
      out[a] = Dim::unknown();
      continue;
    }
    int64_t step = steps ? (*steps)[j] : 1;
    if (step == 0) return error("slice step must not be 0");
    const Elem &se = (*starts)[j], &ee = (*ends)[j];
    const Dim &d = x.shape[a];
    if (!se.isInt() || !ee.isInt()) {
      // x[0:sym] (e.g. position ids sliced to the sequence length) has extent
      // sym, assuming the symbol is within the axis extent as exporters do.
      bool prefix = step == 1 && se.isInt() && se.v == 0 && ee.kind == Elem::kSym;
      out[a] = prefix ? Dim::symbolic(ee.sym) : Dim::unknown();
      continue;
    }
    int64_t s = se.v, e = ee.v;
    if (!d.isStatic()) {
      // Whole-axis slices keep the dim; anything else is unknown.
      bool whole = step == 1 && s == 0 && e >= std::numeric_limits<int32_t>::max();
      out[a] = whole ? d : Dim::unknown();
      continue;
    }
    int64_t len = d.value;
    if (s < 0) s += len;
    if (e < 0) e += len;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, len);
      e = std::clamp<int64_t>(e, 0, len);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, len - 1);
      e = std::clamp<int64_t>(e, -1, len - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    out[a] = Dim(count);
  }
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::gather() {
  TensorType x = inType(0), idx = inType(1);
  if (!x.rankKnown || !idx.rankKnown) return TensorType::unranked(x.dtype);
  if (x.rank() == 0) return error("Gather data must have rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", 0), x.rank()));
  Dims out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::gatherND() {
  TensorType x = inType(0), idx = inType(1);
  if (!x.rankKnown || !idx.rankKnown) return TensorType::unranked(x.dtype);
  int64_t b = node_.getInt("batch_dims", 0);
  int64_t r = x.rank(), q = idx.rank();
  if (q < 1 || r < 1) return error("GatherND data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return error(absl::StrCat("batch_dims ", b, " out of range"));
  for (int64_t i = 0; i < b; ++i)
    FUSEC_RETURN_IF_ERROR(mergeEqual(x.shape[i], idx.shape[i], "GatherND batch dim").status());
  const Dim &last = idx.shape[q - 1];
  if (!last.isStatic()) return TensorType::unranked(x.dtype);
  if (last.value > r - b)
    return error(absl::StrCat("indices.shape[-1] = ", last.value, " exceeds rank - batch_dims"));
  Dims out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + last.value, x.shape.end());
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::expand() {
  TensorType x = inType(0);
  bool rankKnown;
  int64_t rank;
  auto elems = shapeElems(1, &rankKnown, &rank);
  if (!rankKnown) return TensorType::unranked(x.dtype);
  Dims target(rank);
  if (elems) {
    for (int64_t i = 0; i < rank; ++i) {
      const Elem &e = (*elems)[i];
      if (e.kind == Elem::kInt) {
        if (e.v < 0) return error(absl::StrCat("Expand shape[", i, "] = ", e.v, " is negative"));
        target[i] = Dim(e.v);
      } else if (e.kind == Elem::kSym) {
        target[i] = Dim::symbolic(e.sym);
      }
    }
  }
  if (!x.rankKnown) return TensorType::unranked(x.dtype);
  if (!elems) {
    // Unknown target dims: the result is at least the input where the input
    // is > 1, else unknown.
    int64_t outRank = std::max(rank, x.rank());
    Dims out(outRank);
    for (int64_t i = 0; i < x.rank(); ++i) {
      const Dim &d = x.shape[i];
      if (d.isStatic() && d.value != 1) out[outRank - x.rank() + i] = d;
    }
    return TensorType(x.dtype, out);
  }
  return broadcast({x, TensorType(x.dtype, target)}, x.dtype);
}

absl::StatusOr<TensorType> Inferrer::tile() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  auto reps = ints(1);
  if (!reps) return TensorType(x.dtype, Dims(x.rank()));
  if (static_cast<int64_t>(reps->size()) != x.rank())
    return error(absl::StrCat("repeats has ", reps->size(), " entries for rank ", x.rank()));
  Dims out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t rep = (*reps)[i];
    if (rep < 0) return error("repeats must be non-negative");
    const Dim &d = x.shape[i];
    if (d.isStatic())
      out.push_back(Dim(d.value * rep));
    else if (rep == 1)
      out.push_back(d);
    else if (rep == 0)
      out.push_back(Dim(0));
    else
      out.push_back(Dim::unknown());
  }
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::pad() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  int64_t r = x.rank();
  auto pads = ints(1);
  if (!pads) return TensorType(x.dtype, Dims(r));
  std::vector<int64_t> axes;
  if (has(3)) {
    auto ax = ints(3);
    if (!ax) return TensorType(x.dtype, Dims(r));
    for (int64_t a : *ax) {
      FUSEC_ASSIGN_OR_RETURN(int64_t na, normAxis(a, r));
      axes.push_back(na);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  int64_t k = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * k)
    return error(absl::StrCat("pads has ", pads->size(), " entries, expected ", 2 * k));
  Dims out = x.shape;
  for (int64_t j = 0; j < k; ++j) {
    int64_t add = (*pads)[j] + (*pads)[k + j];
    Dim &d = out[axes[j]];
    if (d.isStatic()) {
      if (d.value + add < 0) return error("pads remove more than the axis extent");
      d = Dim(d.value + add);
    } else if (add != 0) {
      d = Dim::unknown();
    }
  }
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::shape() {
  TensorType x = inType(0);
  if (!x.rankKnown) return TensorType(DType::kI64, {Dim()});
  int64_t r = x.rank();
  int64_t start = node_.getInt("start", 0), end = node_.getInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return TensorType(DType::kI64, {Dim(std::max<int64_t>(0, end - start))});
}

absl::StatusOr<TensorType> Inferrer::constantOfShape() {
  DType dt = DType::kF32;
  if (const Attribute *a = node_.attr("value"); a && a->kind() == Attribute::Kind::kTensor)
    dt = a->t().dtype();
  bool rankKnown;
  int64_t rank;
  auto elems = shapeElems(0, &rankKnown, &rank);
  if (!rankKnown) return TensorType::unranked(dt);
  Dims out(rank);
  if (elems) {
    for (int64_t i = 0; i < rank; ++i) {
      const Elem &e = (*elems)[i];
      if (e.kind == Elem::kInt) {
        if (e.v < 0) return error(absl::StrCat("shape[", i, "] = ", e.v, " is negative"));
        out[i] = Dim(e.v);
      } else if (e.kind == Elem::kSym) {
        out[i] = Dim::symbolic(e.sym);
      }
    }
  }
  return TensorType(dt, out);
}

absl::StatusOr<TensorType> Inferrer::range() {
  DType dt = inType(0).dtype;
  for (int i = 0; i < 3; ++i) {
    TensorType t = inType(i);
    if (t.rankKnown && t.rank() != 0 && !(t.rank() == 1 && t.shape[0] == Dim(1)))
      return error(absl::StrCat("Range input ", i, " must be a scalar"));
  }
  // Integer case through tracked data (keeps Range(0, Shape(x)[i], 1) symbolic).
  auto s = data(0), l = data(1), d = data(2);
  if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1) {
    const Elem &es = (*s)[0], &el = (*l)[0], &ed = (*d)[0];
    if (es.isInt() && el.isInt() && ed.isInt()) {
      if (ed.v == 0) return error("Range delta must not be 0");
      int64_t diff = el.v - es.v;
      int64_t n = diff / ed.v + ((diff % ed.v != 0) && ((diff > 0) == (ed.v > 0)) ? 1 : 0);
      return TensorType(dt, {Dim(std::max<int64_t>(0, n))});
    }
    if (es.isInt() && es.v == 0 && ed.isInt() && ed.v == 1 && el.kind == Elem::kSym)
      return TensorType(dt, {Dim::symbolic(el.sym)});
  }
  // Float constants.
  const Tensor *ts = has(0) ? in(0)->constant() : nullptr;
  const Tensor *tl = has(1) ? in(1)->constant() : nullptr;
  const Tensor *td = has(2) ? in(2)->constant() : nullptr;
  if (ts && tl && td && ts->numElements() == 1 && tl->numElements() == 1 &&
      td->numElements() == 1) {
    double delta = td->getDouble(0);
    if (delta == 0) return error("Range delta must not be 0");
    double n = std::ceil((tl->getDouble(0) - ts->getDouble(0)) / delta);
    if (!(n >= 0)) n = 0;
    if (n > 1e15) return error("Range has too many elements");
    return TensorType(dt, {Dim(static_cast<int64_t>(n))});
  }
  return TensorType(dt, {Dim()});
}

absl::StatusOr<std::vector<TensorType>> Inferrer::layerNorm() {
  TensorType x = inType(0);
  std::vector<TensorType> outs{x};
  if (node_.numOutputs() == 1) return outs;
  auto st = dtypeFromOnnx(static_cast<int32_t>(node_.getInt("stash_type", 1)));
  DType sdt = st ? *st : DType::kF32;
  TensorType stat = TensorType::unranked(sdt);
  if (x.rankKnown) {
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", -1), x.rank()));
    stat = TensorType(sdt, x.shape);
    for (int64_t i = axis; i < x.rank(); ++i) stat.shape[i] = Dim(1);
  }
  for (int i = 1; i < node_.numOutputs(); ++i) outs.push_back(stat);
  return outs;
}

absl::StatusOr<TensorType> Inferrer::constant() {
  if (const Attribute *a = node_.attr("value"); a && a->kind() == Attribute::Kind::kTensor)
    return TensorType::fromShape(a->t().dtype(), a->t().shape());
  if (node_.hasAttr("value_float")) return TensorType(DType::kF32, {});
  if (node_.hasAttr("value_int")) return TensorType(DType::kI64, {});
  if (node_.hasAttr("value_string")) return TensorType(DType::kString, {});
  if (const Attribute *a = node_.attr("value_floats"); a && a->kind() == Attribute::Kind::kFloats)
    return TensorType(DType::kF32, {Dim(static_cast<int64_t>(a->floats().size()))});
  if (const Attribute *a = node_.attr("value_ints"); a && a->kind() == Attribute::Kind::kInts)
    return TensorType(DType::kI64, {Dim(static_cast<int64_t>(a->ints().size()))});
  if (const Attribute *a = node_.attr("value_strings");
      a && a->kind() == Attribute::Kind::kStrings)
    return TensorType(DType::kString, {Dim(static_cast<int64_t>(a->strings().size()))});
  return error("Constant has no value attribute");
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
    case OpKind::kHardSigmoid: case OpKind::kSoftplus: case OpKind::kGelu: case OpKind::kSin:
    case OpKind::kCos: case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound:
    case OpKind::kSign: case OpKind::kIdentity: case OpKind::kClip:
    case OpKind::kRMSNormalization: case OpKind::kBatchNormalization:
      return same(x.dtype);
    case OpKind::kTrilu:
      if (x.rankKnown && x.rank() < 2) return error("Trilu input must have rank >= 2");
      return same(x.dtype);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      if (x.rankKnown) FUSEC_RETURN_IF_ERROR(normAxis(node_.getInt("axis", -1), x.rank()).status());
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
      if (x.rankKnown) FUSEC_RETURN_IF_ERROR(normAxis(node_.getInt("axis", 0), x.rank()).status());
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
  FUSEC_ASSIGN_OR_RETURN(std::vector<TensorType> inferred, Inferrer(node, cache).run());
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

}  // namespace

absl::StatusOr<std::vector<TensorType>> computeNodeTypes(const Node &node) {
  DataCache cache;
  return computeNodeTypesCached(node, cache);
}

absl::Status inferNodeTypes(Graph &graph, Node &node) {
  DataCache cache;
  return inferNodeTypesCached(node, cache);
}

absl::Status inferShapes(Graph &graph) {
  DataCache cache;
  for (Node *n : graph.nodes()) FUSEC_RETURN_IF_ERROR(inferNodeTypesCached(*n, cache));
  return absl::OkStatus();
}

}  // namespace fusec::ir
