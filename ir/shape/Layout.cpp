//===- Layout.cpp - Shape rules: layout, data movement, shape generators --===//
//
// Inferrer's rules for Reshape, Transpose, Flatten, (Un)Squeeze, Concat,
// Split, Slice, Gather*, Expand, Tile, Pad, Shape, ConstantOfShape, Range and
// Constant (ONNX operator spec, newest opset of each op). Value-dependent
// shapes read tracked input values (Inferrer::ints / shapeElems).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "ir/Resample.h"
#include "ir/shape/ShapeInferrer.h"
#include "support/Status.h"

namespace fusec::ir::shape {


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
  bool allowZero = node_.attrI("allowzero") != 0;
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
    if (d.isStatic()) {
      if (__builtin_mul_overflow(inProd, d.value, &inProd))
        return error(absl::StrCat("Reshape input ", x.str(), " has more than 2^63 elements"));
    } else if (d.isSymbolic())
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
      if (__builtin_mul_overflow(outProd, d.value, &outProd))
        return error("Reshape shape has more than 2^63 elements");
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
    // ONNX perm entries are in [0, rank): no negative form (ONNX Runtime
    // rejects them too).
    if (p < 0) return error(absl::StrCat("perm entry ", p, " is negative"));
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
  int64_t axis = node_.attrI("axis");
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
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), x.rank()));
  const Dim &d = x.shape[axis];
  std::vector<Dim> sizes(n, Dim::unknown());
  if (has(1)) {
    if (node_.hasAttr("num_outputs"))
      return error("both the 'split' input and the 'num_outputs' attribute are given; "
                   "Split-18 takes exactly one of them");
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
    if (s < 0) s = s < -len ? -1 : s + len;
    if (e < 0) e = e < -len ? -1 : e + len;
    // A step longer than the axis selects at most one element; clamping it
    // (as the interpreter does) keeps the arithmetic below free of
    // overflow for steps of +-INT64_MAX and INT64_MIN.
    step = std::clamp<int64_t>(step, -std::max<int64_t>(len, 1), std::max<int64_t>(len, 1));
    int64_t count;
    if (len == 0) {
      count = 0;
    } else if (step > 0) {
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
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), x.rank()));
  Dims out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::gatherND() {
  TensorType x = inType(0), idx = inType(1);
  if (!x.rankKnown || !idx.rankKnown) return TensorType::unranked(x.dtype);
  int64_t b = node_.attrI("batch_dims");
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

absl::StatusOr<std::vector<TensorType>> Inferrer::topK() {
  TensorType values = inType(0);
  if (values.rankKnown) {
    if (values.rank() == 0) return error("TopK input must have rank >= 1");
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), values.rank()));
    Dim k = Dim::unknown();
    if (auto d = data(1); d && d->size() == 1) {
      const Elem &e = (*d)[0];
      if (e.isInt()) {
        if (e.v < 0) return error(absl::StrCat("k = ", e.v, " is negative"));
        const Dim &len = values.shape[axis];
        if (len.isStatic() && e.v > len.value)
          return error(absl::StrCat("k = ", e.v, " exceeds the length ", len.value, " of axis ", axis));
        k = Dim(e.v);
      } else if (e.kind == Elem::kSym) {
        k = Dim::symbolic(e.sym);
      }
    }
    values.shape[axis] = k;
  }
  TensorType indices = values;
  indices.dtype = DType::kI64;
  return std::vector<TensorType>{values, indices};
}

absl::StatusOr<TensorType> Inferrer::oneHot() {
  const TensorType idx = inType(0), vals = inType(2);
  if (vals.rankKnown && vals.isStatic() && numElements(vals.staticShape()) != 2)
    return error(absl::StrCat("values must hold two elements (off, on), got ", vals.str()));
  if (!idx.rankKnown) return TensorType::unranked(vals.dtype);
  const int64_t r = idx.rank() + 1;
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), r));
  Dim depth = Dim::unknown();
  if (has(1) && in(1)->isConstant() && in(1)->constant()->numElements() == 1) {
    const Tensor &t = *in(1)->constant();
    const double d = isFloat(t.dtype()) ? std::trunc(t.getDouble(0)) : static_cast<double>(t.getInt(0));
    if (!(d >= 1)) return error(absl::StrCat("depth ", d, " must be at least 1"));
    depth = Dim(static_cast<int64_t>(d));
  } else if (auto d = data(1); d && d->size() == 1 && (*d)[0].kind == Elem::kSym) {
    depth = Dim::symbolic((*d)[0].sym);
  }
  Dims out = idx.shape;
  out.insert(out.begin() + axis, depth);
  return TensorType(vals.dtype, out);
}

absl::Status Inferrer::scatterReduction() const {
  const std::string r = node_.attrS("reduction");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return error(absl::StrCat("reduction must be none, add, mul, max or min, got '", r, "'"));
  return absl::OkStatus();
}

absl::StatusOr<TensorType> Inferrer::scatterND() {
  const TensorType x = inType(0), idx = inType(1), upd = inType(2);
  FUSEC_RETURN_IF_ERROR(scatterReduction());
  if (!x.rankKnown || !idx.rankKnown) return x;
  const int64_t r = x.rank(), q = idx.rank();
  if (r < 1 || q < 1) return error("ScatterND data and indices must have rank >= 1");
  const Dim &last = idx.shape[q - 1];
  if (!last.isStatic()) return x;
  if (last.value > r)
    return error(absl::StrCat("indices.shape[-1] = ", last.value, " exceeds the data rank ", r));
  if (upd.rankKnown) {
    const int64_t want = q - 1 + r - last.value;
    if (upd.rank() != want)
      return error(absl::StrCat("updates ", upd.str(), " must have rank ", want,
                                " (indices.shape[:-1] + data.shape[", last.value, ":])"));
    for (int64_t i = 0; i < q - 1; ++i)
      FUSEC_RETURN_IF_ERROR(mergeEqual(upd.shape[i], idx.shape[i], "ScatterND updates dim").status());
    for (int64_t i = last.value; i < r; ++i)
      FUSEC_RETURN_IF_ERROR(
          mergeEqual(upd.shape[q - 1 + i - last.value], x.shape[i], "ScatterND updates dim").status());
  }
  return x;
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
    int64_t extent = 0;
    if (d.isStatic() && __builtin_mul_overflow(d.value, rep, &extent))
      return error(absl::StrCat("dim ", i, " of the result (", d.value, " x repeats ", rep,
                                ") overflows a 64-bit extent"));
    if (d.isStatic())
      out.push_back(Dim(extent));
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
      // As the reference interpreter and onnxruntime: an axis named twice
      // is an error (summing its pads would compute something neither does).
      if (std::find(axes.begin(), axes.end(), na) != axes.end())
        return error(absl::StrCat("axes contains axis ", na, " more than once"));
      axes.push_back(na);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  int64_t k = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * k)
    return error(absl::StrCat("pads has ", pads->size(), " entries, expected ", 2 * k));
  // reflect mirrors without the edge element, so a pad must stay below the
  // extent (onnxruntime refuses more; numpy would reflect repeatedly).
  const std::string mode = node_.getString("mode", "constant");
  if (mode == "reflect")
    for (int64_t j = 0; j < k; ++j) {
      const Dim &d = x.shape[axes[j]];
      const int64_t most = std::max((*pads)[j], (*pads)[k + j]);
      if (d.isStatic() && most > 0 && most > d.value - 1)
        return error(absl::StrCat("reflect pad ", most, " on axis ", axes[j], " exceeds its extent ", d.value,
                                  " - 1 (a reflection repeats no element and excludes the edge)"));
    }
  Dims out = x.shape;
  for (int64_t j = 0; j < k; ++j) {
    int64_t add = 0, extent = 0;
    Dim &d = out[axes[j]];
    if (__builtin_add_overflow((*pads)[j], (*pads)[k + j], &add))
      return error(absl::StrCat("pads ", (*pads)[j], " + ", (*pads)[k + j], " overflow int64"));
    if (d.isStatic()) {
      if (__builtin_add_overflow(d.value, add, &extent))
        return error(absl::StrCat("padded extent ", d.value, " + ", add, " overflows int64"));
      if (extent < 0) return error("pads remove more than the axis extent");
      d = Dim(extent);
    } else if (add != 0) {
      d = Dim::unknown();
    }
  }
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::resize() {
  TensorType x = inType(0);
  if (!x.rankKnown) return x;
  const int64_t r = x.rank();
  FUSEC_RETURN_IF_ERROR(resizeParams(node_).status());
  // roi and scales are float constants; sizes may be shape data. An empty
  // tensor stands for an absent input (opset 11 has no optional inputs).
  auto floats = [&](int i, bool *unknown) -> std::optional<std::vector<double>> {
    *unknown = false;
    if (!has(i)) return std::nullopt;
    const Value *v = in(i);
    if (v->type().rankKnown && v->type().numElements() == std::optional<int64_t>(0)) return std::nullopt;
    if (!v->isConstant()) {
      *unknown = true;
      return std::nullopt;
    }
    std::vector<double> out;
    for (int64_t j = 0; j < v->constant()->numElements(); ++j) out.push_back(v->constant()->getDouble(j));
    if (out.empty()) return std::nullopt;
    return out;
  };
  bool roiUnknown = false, scalesUnknown = false, sizesUnknown = false;
  auto roi = floats(1, &roiUnknown);
  auto scales = floats(2, &scalesUnknown);
  std::optional<std::vector<int64_t>> sizes;
  if (has(3) && !(inType(3).rankKnown && inType(3).numElements() == std::optional<int64_t>(0))) {
    sizes = ints(3);
    if (!sizes) sizesUnknown = true;
    else if (sizes->empty()) sizes.reset();
  }
  if (sizesUnknown && !scales && !scalesUnknown && node_.attrS("keep_aspect_ratio_policy") == "stretch") {
    // Sizes from shape data (an FPN resize to a neighbour's Shape): the
    // listed axes take those dims, symbols included; the others keep x's.
    auto elems = data(3);
    std::vector<int64_t> axes = node_.getInts("axes");
    if (!node_.hasAttr("axes"))
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    if (elems && elems->size() == axes.size()) {
      Dims out = x.shape;
      for (size_t j = 0; j < axes.size(); ++j) {
        FUSEC_ASSIGN_OR_RETURN(int64_t a, normAxis(axes[j], r));
        const Elem &e = (*elems)[j];
        if (e.isInt() && e.v < 0) return error(absl::StrCat("size ", e.v, " is negative"));
        out[a] = e.isInt() ? Dim(e.v) : e.kind == Elem::kSym ? Dim::symbolic(e.sym) : Dim::unknown();
      }
      return TensorType(x.dtype, out);
    }
  }
  if (roiUnknown || scalesUnknown || sizesUnknown) return TensorType(x.dtype, Dims(r));
  std::vector<int64_t> inShape;
  for (const Dim &d : x.shape) inShape.push_back(d.isStatic() ? d.value : -1);
  FUSEC_ASSIGN_OR_RETURN(std::vector<ResizeAxis> axes,
                         resizeGeometry(node_, inShape, roi ? &*roi : nullptr,
                                        scales ? &*scales : nullptr, sizes ? &*sizes : nullptr));
  Dims out;
  for (int64_t i = 0; i < r; ++i) {
    if (axes[i].outLen >= 0) out.push_back(Dim(axes[i].outLen));
    else if (axes[i].identity) out.push_back(x.shape[i]);
    else out.push_back(Dim::unknown());
  }
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::shape() {
  TensorType x = inType(0);
  if (!x.rankKnown) return TensorType(DType::kI64, {Dim()});
  int64_t r = x.rank();
  int64_t start = node_.attrI("start"), end = node_.getInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return TensorType(DType::kI64, {Dim(std::max<int64_t>(0, end - start))});
}

absl::StatusOr<TensorType> Inferrer::constantOfShape() {
  DType dt = DType::kF32;
  if (const Attribute *a = node_.attr("value"); a && a->kind() == Attribute::Kind::kTensor) {
    dt = a->t().dtype();
    // One element (ONNX; the reference and onnxruntime refuse others): the
    // lowering would fill with the first and drop the rest.
    if (a->t().numElements() != 1)
      return error(absl::StrCat("attribute 'value' must have one element, has ", a->t().numElements()));
  }
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
// GridSample, RoiAlign, Compress, NonMaxSuppression, Det
//===----------------------------------------------------------------------===//

absl::StatusOr<TensorType> Inferrer::gridSample() {
  const TensorType x = inType(0), grid = inType(1);
  const std::string mode = node_.attrS("mode"), pad = node_.attrS("padding_mode");
  const bool cubic = mode == "cubic" || mode == "bicubic";
  if (mode != "linear" && mode != "bilinear" && mode != "nearest" && !cubic)
    return error(absl::StrCat("mode must be linear, nearest or cubic (bilinear, bicubic before "
                              "opset 20), got '", mode, "'"));
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return error(absl::StrCat("padding_mode must be zeros, border or reflection, got '", pad, "'"));
  if (!x.rankKnown || !grid.rankKnown) return TensorType::unranked(x.dtype);
  const int64_t r = x.rank() - 2;  // spatial rank
  if (r < 1) return error(absl::StrCat("X must have rank >= 3 (N, C, spatial...), got ", x.str()));
  if (grid.rank() != x.rank())
    return error(absl::StrCat("grid ", grid.str(), " must have rank ", x.rank(), " like X ", x.str()));
  if (cubic && r != 2)
    return error(absl::StrCat("cubic mode is defined for 2-D sampling (4-D X) only, got X ", x.str()));
  const Dim &last = grid.shape[grid.rank() - 1];
  if (last.isStatic() && last.value != r)
    return error(absl::StrCat("grid's last dim is ", last.value, ", expected ", r,
                              " coordinates for X ", x.str()));
  Dims out = {x.shape[0], x.shape[1]};
  FUSEC_ASSIGN_OR_RETURN(out[0], mergeEqual(x.shape[0], grid.shape[0], "GridSample batch (N)"));
  for (int64_t d = 1; d <= r; ++d) out.push_back(grid.shape[d]);
  return TensorType(x.dtype, out);
}

absl::StatusOr<TensorType> Inferrer::roiAlign() {
  const TensorType x = inType(0), rois = inType(1), bi = inType(2);
  const std::string mode = node_.attrS("mode"), ctm = node_.attrS("coordinate_transformation_mode");
  if (mode != "avg" && mode != "max") return error(absl::StrCat("mode must be avg or max, got '", mode, "'"));
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return error(absl::StrCat("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '",
                              ctm, "'"));
  const int64_t oh = node_.attrI("output_height"), ow = node_.attrI("output_width");
  if (oh < 1 || ow < 1)
    return error(absl::StrCat("output_height and output_width must be >= 1, got ", oh, " x ", ow));
  if (node_.attrI("sampling_ratio") < 0)
    return error(absl::StrCat("sampling_ratio must be >= 0, got ", node_.attrI("sampling_ratio")));
  if (x.rankKnown && x.rank() != 4) return error(absl::StrCat("X must be 4-D (N, C, H, W), got ", x.str()));
  if (rois.rankKnown && (rois.rank() != 2 || (rois.shape[1].isStatic() && rois.shape[1].value != 4)))
    return error(absl::StrCat("rois must be [num_rois, 4], got ", rois.str()));
  if (bi.rankKnown && bi.rank() != 1)
    return error(absl::StrCat("batch_indices must be 1-D [num_rois], got ", bi.str()));
  Dim r = rois.rankKnown ? rois.shape[0] : Dim::unknown();
  if (bi.rankKnown) {
    FUSEC_ASSIGN_OR_RETURN(r, mergeEqual(r, bi.shape[0], "RoiAlign num_rois"));
  }
  return TensorType(x.dtype, {r, x.rankKnown ? x.shape[1] : Dim::unknown(), Dim(oh), Dim(ow)});
}

absl::StatusOr<TensorType> Inferrer::compress() {
  const TensorType x = inType(0), cond = inType(1);
  if (cond.rankKnown && cond.rank() != 1)
    return error(absl::StrCat("condition must be 1-D, got ", cond.str()));
  // The selected count is known only for a constant condition.
  Dim count = Dim::unknown();
  if (has(1) && in(1)->isConstant()) {
    int64_t c = 0;
    const Tensor &t = *in(1)->constant();
    for (int64_t i = 0; i < t.numElements(); ++i) c += t.getInt(i) != 0;
    count = Dim(c);
  }
  if (!node_.hasAttr("axis")) return TensorType(x.dtype, {count});
  if (!x.rankKnown) return TensorType::unranked(x.dtype);
  if (x.rank() == 0) return error("Compress with an axis needs an input of rank >= 1");
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", 0), x.rank()));
  const Dim &len = x.shape[axis];
  if (cond.rankKnown && cond.shape[0].isStatic() && len.isStatic() && cond.shape[0].value > len.value)
    return error(absl::StrCat("condition has ", cond.shape[0].value, " elements, more than the ",
                              len.value, " of axis ", axis));
  TensorType out = x;
  out.shape[axis] = count;
  return out;
}

absl::StatusOr<TensorType> Inferrer::nonMaxSuppression() {
  const TensorType boxes = inType(0), scores = inType(1);
  const int64_t cpb = node_.attrI("center_point_box");
  if (cpb != 0 && cpb != 1) return error(absl::StrCat("center_point_box must be 0 or 1, got ", cpb));
  if (boxes.rankKnown && (boxes.rank() != 3 || (boxes.shape[2].isStatic() && boxes.shape[2].value != 4)))
    return error(absl::StrCat("boxes must be [num_batches, spatial_dimension, 4], got ", boxes.str()));
  if (scores.rankKnown && scores.rank() != 3)
    return error(absl::StrCat("scores must be [num_batches, num_classes, spatial_dimension], got ",
                              scores.str()));
  if (boxes.rankKnown && scores.rankKnown) {
    FUSEC_RETURN_IF_ERROR(mergeEqual(boxes.shape[0], scores.shape[0], "NonMaxSuppression num_batches").status());
    FUSEC_RETURN_IF_ERROR(mergeEqual(boxes.shape[1], scores.shape[2], "NonMaxSuppression spatial_dimension").status());
  }
  // How many boxes survive depends on the data.
  return TensorType(DType::kI64, {Dim::unknown(), Dim(3)});
}

absl::StatusOr<TensorType> Inferrer::det() {
  const TensorType x = inType(0);
  if (!x.rankKnown) return TensorType::unranked(x.dtype);
  if (x.rank() < 2) return error(absl::StrCat("Det needs [*, M, M], got ", x.str()));
  const Dim &a = x.shape[x.rank() - 2], &b = x.shape[x.rank() - 1];
  if (a.isStatic() && b.isStatic() && a.value != b.value)
    return error(absl::StrCat("Det needs square matrices, got ", x.str()));
  Dims out(x.shape.begin(), x.shape.end() - 2);
  return TensorType(x.dtype, out);
}

//===----------------------------------------------------------------------===//
// BitCast, Col2Im, Unique
//===----------------------------------------------------------------------===//

absl::StatusOr<TensorType> Inferrer::bitCast() {
  const TensorType x = inType(0);
  if (!node_.hasAttr("to")) return error("BitCast requires attribute 'to'");
  const int64_t code = node_.getInt("to", 0);
  auto to = dtypeFromOnnx(static_cast<int32_t>(code));
  if (!to) return error(absl::StrCat("unsupported BitCast target type ", code));
  if (*to == DType::kString || x.dtype == DType::kString)
    return error("BitCast from or to string is not defined");
  if (x.dtype != DType::kUndefined && dtypeBits(x.dtype) != dtypeBits(*to))
    return error(absl::StrCat("BitCast needs dtypes of one width, got ", dtypeName(x.dtype), " (",
                              dtypeBits(x.dtype), " bits) to ", dtypeName(*to), " (", dtypeBits(*to), " bits)"));
  TensorType out = x;
  out.dtype = *to;
  return out;
}

absl::StatusOr<TensorType> Inferrer::col2Im() {
  const TensorType x = inType(0), is = inType(1), bs = inType(2);
  if (x.rankKnown && x.rank() != 3)
    return error(absl::StrCat("input must be [N, C * prod(block_shape), L], got ", x.str()));
  if (is.rankKnown && is.rank() != 1) return error(absl::StrCat("image_shape must be 1-D, got ", is.str()));
  if (bs.rankKnown && bs.rank() != 1) return error(absl::StrCat("block_shape must be 1-D, got ", bs.str()));
  auto image = ints(1);
  auto block = ints(2);
  int64_t r = -1;
  if (image) r = static_cast<int64_t>(image->size());
  else if (is.rankKnown && is.shape[0].isStatic()) r = is.shape[0].value;
  int64_t rb = block ? static_cast<int64_t>(block->size()) : -1;
  if (rb < 0 && bs.rankKnown && bs.shape[0].isStatic()) rb = bs.shape[0].value;
  if (rb >= 0 && r >= 0 && rb != r)
    return error(absl::StrCat("image_shape has ", r, " entries but block_shape ", rb));
  if (r == 0) return error("image_shape must name at least one spatial axis");
  const Dim n = x.rankKnown ? x.shape[0] : Dim::unknown();
  if (r < 0) return TensorType::unranked(x.dtype);
  const auto ur = static_cast<size_t>(r);
  const std::vector<int64_t> dil = node_.getInts("dilations", std::vector<int64_t>(ur, 1));
  const std::vector<int64_t> str = node_.getInts("strides", std::vector<int64_t>(ur, 1));
  const std::vector<int64_t> pads = node_.getInts("pads", std::vector<int64_t>(2 * ur, 0));
  if (dil.size() != ur || str.size() != ur || pads.size() != 2 * ur)
    return error(absl::StrCat("dilations and strides need ", r, " entries and pads ", 2 * r, " (got ", dil.size(),
                              ", ", str.size(), ", ", pads.size(), ")"));
  for (size_t d = 0; d < ur; ++d)
    if (dil[d] < 1 || str[d] < 1 || pads[d] < 0 || pads[d + ur] < 0)
      return error("dilations and strides must be >= 1 and pads >= 0");
  Dim c = Dim::unknown();
  if (block) {
    int64_t K = 1;
    for (int64_t b : *block) {
      if (b < 1) return error(absl::StrCat("block_shape entries must be >= 1, got ", b));
      K *= b;
    }
    if (x.rankKnown && x.shape[1].isStatic()) {
      if (x.shape[1].value % K != 0)
        return error(absl::StrCat("input dim 1 (", x.shape[1].value, ") is not a multiple of prod(block_shape) = ", K));
      c = Dim(x.shape[1].value / K);
    }
    if (image) {
      int64_t L = 1;
      for (size_t d = 0; d < ur; ++d) {
        const int64_t v = (*image)[d];
        if (v < 0) return error(absl::StrCat("image_shape entries must be >= 0, got ", v));
        const int64_t p = (v + pads[d] + pads[d + ur] - dil[d] * ((*block)[d] - 1) - 1) / str[d] + 1;
        if (p < 1) return error(absl::StrCat("no sliding block fits axis ", d, " of image_shape"));
        L *= p;
      }
      if (x.rankKnown && x.shape[2].isStatic() && x.shape[2].value != L)
        return error(absl::StrCat("input dim 2 (", x.shape[2].value, ") is not the ", L, " sliding blocks"));
    }
  }
  Dims out = {n, c};
  for (size_t d = 0; d < ur; ++d) out.push_back(image ? Dim((*image)[d]) : Dim::unknown());
  return TensorType(x.dtype, out);
}

absl::StatusOr<std::vector<TensorType>> Inferrer::unique() {
  const TensorType x = inType(0);
  if (x.dtype == DType::kString) return error("Unique of strings is not supported");
  const int64_t sorted = node_.attrI("sorted");
  if (sorted != 0 && sorted != 1) return error(absl::StrCat("sorted must be 0 or 1, got ", sorted));
  // How many distinct items there are depends on the data.
  std::vector<TensorType> out;
  Dim items = Dim::unknown();
  if (!node_.hasAttr("axis")) {
    out.push_back(TensorType(x.dtype, {Dim::unknown()}));
    if (auto ne = x.numElements()) items = Dim(*ne);
  } else if (!x.rankKnown) {
    out.push_back(TensorType::unranked(x.dtype));
  } else {
    if (x.rank() == 0) return error("Unique with an axis needs an input of rank >= 1");
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.getInt("axis", 0), x.rank()));
    TensorType y = x;
    items = x.shape[axis];
    y.shape[axis] = Dim::unknown();
    out.push_back(y);
  }
  const TensorType perItem(DType::kI64, {Dim::unknown()});
  if (node_.numOutputs() > 1) out.push_back(perItem);
  if (node_.numOutputs() > 2) out.push_back(TensorType(DType::kI64, {items}));
  if (node_.numOutputs() > 3) out.push_back(perItem);
  return out;
}

absl::StatusOr<TensorType> Inferrer::tensorScatter() {
  const TensorType cache = inType(0), upd = inType(1), wi = inType(2);
  const std::string mode = node_.attrS("mode");
  if (mode != "linear" && mode != "circular")
    return error(absl::StrCat("mode must be linear or circular, got '", mode, "'"));
  if (!cache.rankKnown) return cache;
  if (cache.rank() < 2) return error(absl::StrCat("past_cache must have rank >= 2 (batch, ...), got ", cache.str()));
  FUSEC_ASSIGN_OR_RETURN(int64_t axis, normAxis(node_.attrI("axis"), cache.rank()));
  if (axis == 0) return error("axis must not be 0 (the batch axis)");
  if (upd.rankKnown) {
    if (upd.rank() != cache.rank())
      return error(absl::StrCat("update ", upd.str(), " must have past_cache's rank ", cache.rank()));
    for (int64_t d = 0; d < cache.rank(); ++d) {
      const Dim &a = cache.shape[d], &b = upd.shape[d];
      if (d == axis) {
        if (a.isStatic() && b.isStatic() && b.value > a.value)
          return error(absl::StrCat("update ", upd.str(), " is longer than past_cache ", cache.str(), " on axis ",
                                    axis));
      } else {
        FUSEC_RETURN_IF_ERROR(mergeEqual(a, b, "TensorScatter past_cache / update").status());
      }
    }
  }
  if (wi.rankKnown) {
    if (wi.rank() != 1) return error(absl::StrCat("write_indices must be 1-D [batch], got ", wi.str()));
    FUSEC_RETURN_IF_ERROR(mergeEqual(cache.shape[0], wi.shape[0], "TensorScatter batch").status());
  }
  return cache;
}

}  // namespace fusec::ir::shape
