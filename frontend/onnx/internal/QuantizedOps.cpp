//===- QuantizedOps.cpp - Integer and QLinear ops written at import -------===//
//
// See QuantizedOps.h for the formulas. Operand positions (ONNX opset 10):
//   MatMulInteger  A, B, a_zero_point?, b_zero_point?
//   ConvInteger    x, w, x_zero_point?, w_zero_point?
//   QLinearMatMul  a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
//   QLinearConv    x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/QuantizedOps.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/QuantGeometry.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Value;
using Builder = ExpansionBuilder;

absl::Status bad(const NodeSpec &spec, const std::string &why) {
  return absl::InvalidArgumentError(absl::StrCat(spec.opType, " '", spec.name, "': ", why));
}

Attribute dtypeAttr(DType t) { return Attribute(static_cast<int64_t>(t)); }

/// Known extents of \p v (-1 unknown); empty with \p rankKnown false when the rank is not known.
std::vector<int64_t> extents(const Value *v, bool *rankKnown) {
  std::vector<int64_t> e;
  *rankKnown = v->type().rankKnown;
  for (const ir::Dim &d : v->type().shape) e.push_back(d.isStatic() ? d.value : -1);
  return e;
}

int64_t elementCount(const Value *v) {
  std::optional<int64_t> n = v->type().numElements();
  return n ? *n : -1;
}

absl::Status requireQuantized(const NodeSpec &spec, const Value *v, const char *what) {
  const DType t = v->type().dtype;
  if (t != DType::kU8 && t != DType::kI8)
    return bad(spec, absl::StrCat(what, " has dtype ", ir::dtypeName(t), "; it must be u8 or i8"));
  return absl::OkStatus();
}

absl::Status requireFloatScale(const NodeSpec &spec, const Value *v, const char *what) {
  if (!ir::isFloat(v->type().dtype))
    return bad(spec, absl::StrCat(what, " has dtype ", ir::dtypeName(v->type().dtype), "; it must be a float"));
  return absl::OkStatus();
}

/// Cast(v, i32) - Cast(zp, i32), the zero point reshaped by \p shapeZp
/// (per-row / per-channel layouts) when it has more than one element.
absl::StatusOr<Value *> centred(const NodeSpec &spec, Builder &b, Value *v, Value *zp, const char *what,
                                const std::function<absl::StatusOr<Value *>(Value *)> &shapeZp) {
  FUSEC_RETURN_IF_ERROR(requireQuantized(spec, v, what));
  Value *c = b.op("Cast", {v}, {{"to", dtypeAttr(DType::kI32)}});
  if (!zp) return c;
  if (zp->type().dtype != v->type().dtype)
    return bad(spec, absl::StrCat("the zero point of ", what, " has dtype ", ir::dtypeName(zp->type().dtype),
                                  ", ", what, " ", ir::dtypeName(v->type().dtype)));
  Value *z = zp;  // shaped while its type is known (new values are typed after the expansion)
  if (elementCount(zp) != 1) {
    FUSEC_ASSIGN_OR_RETURN(z, shapeZp(zp));
  }
  return b.op("Sub", {c, b.op("Cast", {z}, {{"to", dtypeAttr(DType::kI32)}})});
}

/// A per-row parameter of A (1-D of M elements) as [M, 1]; one element or a
/// higher rank as given (it then broadcasts as numpy does).
absl::StatusOr<Value *> perRow(const NodeSpec &spec, Builder &b, Value *p, const Value *a, const char *what) {
  bool known;
  std::vector<int64_t> ps = extents(p, &known), as = extents(a, &known);
  if (!p->type().rankKnown || p->type().rank() != 1 || elementCount(p) == 1) return p;
  if (as.size() >= 2 && as[as.size() - 2] >= 0 && ps[0] >= 0 && ps[0] != as[as.size() - 2])
    return bad(spec, absl::StrCat(what, " has ", ps[0], " elements; per row it needs ", as[as.size() - 2]));
  return b.op("Unsqueeze", {p, b.ints({1})});
}

/// A per-output-channel parameter (1-D of M elements) as [M, 1, ..., 1]
/// (\p trailing ones).
absl::StatusOr<Value *> perChannel(const NodeSpec &spec, Builder &b, Value *p, int64_t channels,
                                   int64_t trailing, const char *what) {
  if (elementCount(p) == 1) return p;
  if (!p->type().rankKnown || p->type().rank() != 1 || (channels >= 0 && elementCount(p) != channels))
    return bad(spec, absl::StrCat(what, " must hold one element or one per output channel (", channels, "), has ",
                                  p->type().str()));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < trailing; ++i) axes.push_back(1 + i);
  return axes.empty() ? p : b.op("Unsqueeze", {p, b.ints(axes)});
}

absl::StatusOr<std::vector<int64_t>> intsAttr(const NodeSpec &spec, const char *name, std::vector<int64_t> dflt) {
  auto it = spec.attrs.find(name);
  if (it == spec.attrs.end()) return dflt;
  if (it->second.kind() != Attribute::Kind::kInts) return bad(spec, absl::StrCat("attribute '", name, "' must be ints"));
  return it->second.ints();
}

/// The i32 convolution of centred X [N, C, D...] and W [M, C/group, K...]
/// (static shapes \p xs, \p ws) by im2col and MatMul (QuantizedOps.h).
absl::StatusOr<Value *> integerConv(const NodeSpec &spec, Builder &b, Value *x, Value *w,
                                    const std::vector<int64_t> &xs, const std::vector<int64_t> &ws) {
  const int64_t rank = static_cast<int64_t>(xs.size()), k = rank - 2;
  FUSEC_ASSIGN_OR_RETURN(int64_t group, intAttr(spec, "group", 1));
  const int64_t n = xs[0], c = xs[1], m = ws[0];
  if (group < 1 || c % group != 0 || m % group != 0 || ws[1] * group != c)
    return bad(spec, absl::StrCat("group ", group, " does not divide the channels (X has ", c, ", W ", ws[1],
                                  " per group, ", m, " outputs)"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                         intsAttr(spec, "kernel_shape", std::vector<int64_t>(ws.begin() + 2, ws.end())));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> strides, intsAttr(spec, "strides", std::vector<int64_t>(k, 1)));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, intsAttr(spec, "dilations", std::vector<int64_t>(k, 1)));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> pads, intsAttr(spec, "pads", std::vector<int64_t>(2 * k, 0)));
  FUSEC_ASSIGN_OR_RETURN(std::string autoPad, stringAttr(spec, "auto_pad", "NOTSET"));
  if (static_cast<int64_t>(kernel.size()) != k || static_cast<int64_t>(strides.size()) != k ||
      static_cast<int64_t>(dilations.size()) != k || static_cast<int64_t>(pads.size()) != 2 * k)
    return bad(spec, absl::StrCat("kernel_shape, strides, dilations and pads must cover the ", k, " spatial dims"));
  std::vector<int64_t> out(k), padBegin(k), padEnd(k);
  int64_t taps = 1, pixels = 1;
  for (int64_t d = 0; d < k; ++d) {
    if (kernel[d] != ws[d + 2]) return bad(spec, "kernel_shape differs from W's spatial dims");
    if (strides[d] < 1 || dilations[d] < 1) return bad(spec, "strides and dilations must be >= 1");
    const int64_t in = xs[d + 2], span = (kernel[d] - 1) * dilations[d] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out[d] = (in + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out[d] - 1) * strides[d] + span - in);
      padBegin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      padEnd[d] = total - padBegin[d];
    } else if (autoPad == "VALID" || autoPad == "NOTSET") {
      padBegin[d] = autoPad == "VALID" ? 0 : pads[d];
      padEnd[d] = autoPad == "VALID" ? 0 : pads[d + k];
      if (padBegin[d] < 0 || padEnd[d] < 0) return bad(spec, "negative pads");
      out[d] = (in + padBegin[d] + padEnd[d] - span) / strides[d] + 1;
    } else {
      return bad(spec, absl::StrCat("auto_pad '", autoPad, "'"));
    }
    if (out[d] < 1) return bad(spec, absl::StrCat("the kernel does not fit spatial dim ", d));
    taps *= kernel[d];
    pixels *= out[d];
  }
  if (taps * pixels > kMaxConvIntegerColumns)
    return absl::UnimplementedError(absl::StrCat(spec.opType, " '", spec.name, "': ", taps, " kernel taps x ",
                                                 pixels, " output pixels; the im2col expansion takes at most ",
                                                 kMaxConvIntegerColumns, " elements"));
  Value *xp = x;
  if (std::any_of(padBegin.begin(), padBegin.end(), [](int64_t p) { return p != 0; }) ||
      std::any_of(padEnd.begin(), padEnd.end(), [](int64_t p) { return p != 0; })) {
    std::vector<int64_t> p = {0, 0};
    p.insert(p.end(), padBegin.begin(), padBegin.end());
    p.push_back(0);
    p.push_back(0);
    p.insert(p.end(), padEnd.begin(), padEnd.end());
    xp = b.op("Pad", {x, b.ints(p)});  // zeros: the centred input's padding
  }
  // im2col as one Gather with constant indices (a layout op that fuses):
  // column (tap t, pixel p) reads the padded input's flat spatial offset
  // sum_d (o_d * stride_d + t_d * dilation_d) * pitch_d.
  std::vector<int64_t> padded(k), pitch(k, 1);
  int64_t flat = 1;
  for (int64_t d = 0; d < k; ++d) {
    padded[d] = xs[d + 2] + padBegin[d] + padEnd[d];
    flat *= padded[d];
  }
  for (int64_t d = k - 2; d >= 0; --d) pitch[d] = pitch[d + 1] * padded[d + 1];
  ir::Tensor index(DType::kI64, {taps, pixels});
  std::vector<int64_t> tap(k, 0);
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<int64_t> o(k, 0);
    for (int64_t p = 0; p < pixels; ++p) {
      int64_t off = 0;
      for (int64_t d = 0; d < k; ++d) off += (o[d] * strides[d] + tap[d] * dilations[d]) * pitch[d];
      index.setInt(t * pixels + p, off);
      for (int64_t d = k - 1; d >= 0; --d) {  // the next pixel, row-major
        if (++o[d] < out[d]) break;
        o[d] = 0;
      }
    }
    for (int64_t d = k - 1; d >= 0; --d) {  // the next tap, row-major as W stores them
      if (++tap[d] < kernel[d]) break;
      tap[d] = 0;
    }
  }
  Value *cols = b.op("Gather", {b.op("Reshape", {xp, b.ints({n, c, flat})}), b.constant(std::move(index), "_im2col")},
                     {{"axis", Attribute(int64_t{2})}});  // [N, C, taps, pixels]
  const int64_t cg = c / group, mg = m / group;
  cols = b.op("Reshape", {cols, b.ints({n, group, cg * taps, pixels})});
  Value *wm = b.op("Reshape", {w, b.ints({group, mg, cg * taps})});
  Value *y = b.op("MatMul", {wm, cols});  // [N, G, M/G, pixels]
  std::vector<int64_t> ys = {n, m};
  ys.insert(ys.end(), out.begin(), out.end());
  return b.op("Reshape", {y, b.ints(ys)});
}

/// Static X and W shapes of a convolution, or Unimplemented.
absl::Status convShapes(const NodeSpec &spec, const Value *x, const Value *w, std::vector<int64_t> *xs,
                        std::vector<int64_t> *ws) {
  bool xk, wk;
  *xs = extents(x, &xk);
  *ws = extents(w, &wk);
  if (!xk || !wk || !x->type().isStatic() || !w->type().isStatic())
    return absl::UnimplementedError(absl::StrCat(spec.opType, " '", spec.name, "': X ", x->type().str(), " and W ",
                                                 w->type().str(), " must have static shapes (bind them with --shape)"));
  if (xs->size() < 3 || xs->size() != ws->size())
    return bad(spec, absl::StrCat("X ", x->type().str(), " and W ", w->type().str(),
                                  " must have the same rank >= 3"));
  return absl::OkStatus();
}

/// saturate(round_half_even(f64(acc) * f64(multiplier) + f64(zp))) as \p out.
std::vector<ir::Node *> requantize(Builder &b, Value *acc, Value *multiplier, Value *zp, DType out) {
  Value *d = b.op("Mul", {b.op("Cast", {acc}, {{"to", dtypeAttr(DType::kF64)}}),
                          b.op("Cast", {multiplier}, {{"to", dtypeAttr(DType::kF64)}})});
  if (zp) d = b.op("Add", {d, b.op("Cast", {zp}, {{"to", dtypeAttr(DType::kF64)}})});
  int64_t lo = 0, hi = 0;
  ir::quantRange(out, &lo, &hi);
  Value *r = b.op("Clip", {b.op("Round", {d}), b.scalar(DType::kF64, static_cast<double>(lo)),
                           b.scalar(DType::kF64, static_cast<double>(hi))});
  return b.finish("Cast", {r}, {{"to", dtypeAttr(out)}});
}

}  // namespace

ir::Value *centredInt32(Builder &b, Value *v, Value *zp) {
  Value *c = b.op("Cast", {v}, {{"to", dtypeAttr(DType::kI32)}});
  return zp ? b.op("Sub", {c, b.op("Cast", {zp}, {{"to", dtypeAttr(DType::kI32)}})}) : c;
}

ir::Value *integerMatMulCentred(Builder &b, Value *a, Value *aZp, Value *wCentred) {
  return b.op("MatMul", {centredInt32(b, a, aZp), wCentred});
}

ir::Value *integerMatMul(Builder &b, Value *a, Value *aZp, Value *w, Value *wZp) {
  return integerMatMulCentred(b, a, aZp, centredInt32(b, w, wZp));
}

bool isQuantizedOp(std::string_view opType) {
  return opType == "MatMulInteger" || opType == "ConvInteger" || opType == "QLinearMatMul" ||
         opType == "QLinearConv";
}

absl::StatusOr<std::vector<ir::Node *>> expandQuantizedOp(const NodeSpec &spec, Builder &b) {
  const std::string &op = spec.opType;
  if (spec.outputs.size() != 1) return bad(spec, "expects one output");
  const bool qlinear = op == "QLinearMatMul" || op == "QLinearConv";
  const bool conv = op == "ConvInteger" || op == "QLinearConv";
  // Operand positions of the two forms.
  const size_t ia = 0, ib = qlinear ? 3 : 1, iaz = qlinear ? 2 : 2, ibz = qlinear ? 5 : 3;
  FUSEC_ASSIGN_OR_RETURN(Value * a, requiredInput(spec, ia));
  FUSEC_ASSIGN_OR_RETURN(Value * w, requiredInput(spec, ib));
  Value *az = optionalInput(spec, iaz), *wz = optionalInput(spec, ibz);
  if (az && elementCount(az) != 1 && conv)
    return bad(spec, absl::StrCat("the input's zero point must hold one element, has ", az->type().str()));

  Value *acc = nullptr;
  std::vector<int64_t> xs, ws;
  if (conv) {
    FUSEC_RETURN_IF_ERROR(convShapes(spec, a, w, &xs, &ws));
    const int64_t trailing = static_cast<int64_t>(ws.size()) - 1;
    auto chan = [&](Value *z) { return perChannel(spec, b, z, ws[0], trailing, "the weight's zero point"); };
    FUSEC_ASSIGN_OR_RETURN(Value * xc, centred(spec, b, a, az, "x", [](Value *z) { return z; }));
    FUSEC_ASSIGN_OR_RETURN(Value * wc, centred(spec, b, w, wz, "w", chan));
    FUSEC_ASSIGN_OR_RETURN(acc, integerConv(spec, b, xc, wc, xs, ws));
  } else {
    auto row = [&](Value *z) { return perRow(spec, b, z, a, "a's zero point"); };
    FUSEC_ASSIGN_OR_RETURN(Value * ac, centred(spec, b, a, az, "A", row));
    FUSEC_ASSIGN_OR_RETURN(Value * bc, centred(spec, b, w, wz, "B", [](Value *z) { return z; }));
    acc = b.op("MatMul", {ac, bc});
  }
  if (!qlinear) return b.finish("Identity", {acc});

  FUSEC_ASSIGN_OR_RETURN(Value * aScale, requiredInput(spec, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * wScale, requiredInput(spec, 4));
  FUSEC_ASSIGN_OR_RETURN(Value * yScale, requiredInput(spec, 6));
  Value *yz = optionalInput(spec, 7);
  for (auto [v, what] : {std::pair<Value *, const char *>{aScale, "the input's scale"},
                         {wScale, "the weight's scale"}, {yScale, "y_scale"}})
    FUSEC_RETURN_IF_ERROR(requireFloatScale(spec, v, what));
  if (elementCount(yScale) != 1) return bad(spec, "y_scale must hold one element");
  const DType out = yz ? yz->type().dtype : a->type().dtype;
  if (out != DType::kU8 && out != DType::kI8)
    return bad(spec, absl::StrCat("the result dtype ", ir::dtypeName(out), " must be u8 or i8"));
  if (conv) {
    if (elementCount(aScale) != 1) return bad(spec, "x_scale must hold one element");
    if (Value *bias = optionalInput(spec, 8)) {
      if (bias->type().dtype != DType::kI32) return bad(spec, "the bias B must be i32");
      FUSEC_ASSIGN_OR_RETURN(Value * bb, perChannel(spec, b, bias, ws[0], static_cast<int64_t>(ws.size()) - 2, "B"));
      acc = b.op("Add", {acc, bb});
    }
    FUSEC_ASSIGN_OR_RETURN(Value * ws1, perChannel(spec, b, wScale, ws[0], static_cast<int64_t>(ws.size()) - 2,
                                                   "the weight's scale"));
    Value *mult = b.op("Div", {b.op("Mul", {aScale, ws1}), yScale});
    return requantize(b, acc, mult, yz, out);
  }
  FUSEC_ASSIGN_OR_RETURN(Value * as1, perRow(spec, b, aScale, a, "a_scale"));
  Value *mult = b.op("Div", {b.op("Mul", {as1, wScale}), yScale});
  return requantize(b, acc, mult, yz, out);
}

}  // namespace fusec::frontend::internal
