//===- DynamicQuantizeLstm.cpp - ONNX Runtime's quantised LSTM ------------===//
//
// com.microsoft DynamicQuantizeLSTM is an LSTM whose two products quantise
// their float operand on the fly. It is unrolled by RecurrentOps.cpp's
// Unroller (RecurrentForm: transposed weights, ONNX Runtime's schedule)
// with the products below. Followed: ONNX Runtime's CPU kernel, as of
// onnxruntime 1.32.0 (the version the tests compare with) —
//   onnxruntime/contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc
//     (input checks, per-direction scale / zero point pointers),
//   onnxruntime/core/providers/cpu/rnn/lstm_base.cc, uni_directional_lstm.cc
//     (the schedule: one input product over all steps, then per step the
//     recurrent product accumulated into it, bias and peepholes after),
//   onnxruntime/core/providers/cpu/rnn/rnn_helpers.cc (the quantised
//     ComputeGemm), onnxruntime/core/util/qmath.h (GetQuantizationParameter,
//     ParQuantizeLinearStd), onnxruntime/core/mlas/lib/quantize.cpp and
//     qpostprocessor.cpp (MlasQuantizeLinear, the scale output processor).
//
// The quantised product A·B of ComputeGemm (A f32 [M, K], B the u8/i8
// weights [K, N] of one direction):
//   lo = min(min(A), 0), hi = max(max(A), 0)       (one range over all of A)
//   a_scale = hi == lo ? 1 : (hi - lo) / 255        (f32)
//   a_zp = u8(round_half_even(clamp(0 - lo / a_scale, 0, 255)))
//   Aq = saturate_u8(round_half_even(A / a_scale) + a_zp)     (QuantizeLinear)
//   acc = Σk (Aq - a_zp)(B - b_zp)                  (i32, exact)
//   A·B = f32(acc) * (a_scale * b_scale[n])         (b_scale per tensor or column)
// b_zp is one value per direction: ONNX Runtime reads the first element
// and refuses per-column zero points that are not all 0 (i8) or all equal
// (u8), which is checked here when they are constants.
// Which rows share one range is what decides the result:
//   X·W  one range over the X of every step below max(sequence_lens) (all
//        steps without sequence_lens), for each direction the same;
//   H·R  per step, one range over the whole batch's H as the kernel holds it
//        (RecurrentForm::ortSchedule: Y's step, 0 for a finished row, when
//        Y is an output; else the held state).
// ONNX Runtime's kernel runs the batch rows in ceil(B / threads) chunks on
// its intra-op threads when B > 4, or B >= 2 and H <= 256, and then each
// chunk has its own H range: its result depends on the thread count. fusec
// gives the one-thread result (intra_op_num_threads = 1).
// The gates then follow the float kernel: ((X·W + H·R) + P ⊙ C) + (Wb + Rb),
// clip, activations; ONNX Runtime's sigmoid / tanh are MLAS approximations
// a few ulps from fusec's, so results agree to float rounding, except where
// such an ulp moves a quantised H across a rounding boundary (one step of
// a_scale in one element of that step's product).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/DynamicQuantizeLstm.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/internal/QuantizedOps.h"
#include "frontend/onnx/internal/RecurrentOps.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Value;

absl::Status bad(const NodeSpec &spec, const std::string &why) {
  return absl::InvalidArgumentError(absl::StrCat("DynamicQuantizeLSTM '", spec.name, "': ", why));
}

ir::AttributeMap to(DType t) { return {{"to", Attribute(static_cast<int64_t>(t))}}; }

/// The products of DynamicQuantizeLSTM (the file comment's formulas).
class QuantizedLstmGemms : public RecurrentGemms {
 public:
  QuantizedLstmGemms(Value *w, Value *wScale, Value *wZp, Value *r, Value *rScale, Value *rZp)
      : w_{w, wScale, wZp, {}}, r_{r, rScale, rZp, {}} {}

  absl::StatusOr<Value *> input(ExpansionBuilder &b, Value *x, Value *live, int64_t d) override {
    if (!x_.q) {  // the same range for both directions: quantised once
      Value *xs = live ? b.op("Where", {live, x, b.scalar(DType::kF32, 0.0)}) : x;  // 0 is in the range
      x_ = quantize(b, xs);
    }
    return product(b, x_, w_, d);
  }

  absl::StatusOr<Value *> recurrent(ExpansionBuilder &b, Value *h, int64_t d, int64_t g0, int64_t g1) override {
    if (g0 != 0 || g1 != 4) return absl::InternalError("DynamicQuantizeLSTM: the recurrent product takes all 4 gates");
    return product(b, quantize(b, h), r_, d);
  }

 private:
  struct Quantized {
    Value *q = nullptr, *scale = nullptr, *zp = nullptr;  // u8 [..], f32 [], u8 []
    Value *centred = nullptr;  // weights: Cast(q, i32) - zp, built once for every step
  };
  struct Weights {
    Value *w, *scale, *zp;             // [D, K, 4H], [D] or [D, 4H], same
    std::map<int64_t, Quantized> dir;  // per direction: w[d], scale[d], zp[d]
  };

  /// GetQuantizationParameter + MlasQuantizeLinear over all of \p a.
  static Quantized quantize(ExpansionBuilder &b, Value *a) {
    const ir::AttributeMap all = {{"keepdims", Attribute(int64_t{0})}};
    Value *zero = b.scalar(DType::kF32, 0.0), *top = b.scalar(DType::kF32, 255.0);
    Value *lo = b.op("Min", {b.op("ReduceMin", {a}, all), zero});
    Value *hi = b.op("Max", {b.op("ReduceMax", {a}, all), zero});
    Quantized r;
    r.scale = b.op("Where", {b.op("Equal", {hi, lo}), b.scalar(DType::kF32, 1.0),
                             b.op("Div", {b.op("Sub", {hi, lo}), top})});
    Value *zp = b.op("Clip", {b.op("Sub", {zero, b.op("Div", {lo, r.scale})}), zero, top});
    r.zp = b.op("Cast", {b.op("Round", {zp})}, to(DType::kU8));
    r.q = b.op("QuantizeLinear", {a, r.scale, r.zp});
    return r;
  }

  /// f32(acc) * (a_scale * b_scale) of \p a by direction \p d of \p w.
  static Value *product(ExpansionBuilder &b, const Quantized &a, Weights &w, int64_t d) {
    Quantized &wd = w.dir[d];
    if (!wd.q) {
      wd.q = recurrentDirection(b, w.w, d);
      wd.scale = recurrentDirection(b, w.scale, d);
      wd.zp = recurrentDirection(b, w.zp, d);
      wd.centred = centredInt32(b, wd.q, wd.zp);
    }
    Value *acc = integerMatMulCentred(b, a.q, a.zp, wd.centred);
    return b.op("Mul", {b.op("Cast", {acc}, to(DType::kF32)), b.op("Mul", {a.scale, wd.scale})});
  }

  Weights w_, r_;
  Quantized x_;
};

/// Checks scale and zero point \p scale / \p zp of weight \p w (ONNX
/// Runtime's WeightCheck and ZeroPointCheck).
absl::Status checkQuantParams(const NodeSpec &spec, const char *what, Value *w, Value *scale, Value *zp,
                              int64_t dirs, int64_t gatesHidden) {
  const DType wt = w->type().dtype;
  if (wt != DType::kU8 && wt != DType::kI8)
    return bad(spec, absl::StrCat(what, " has dtype ", ir::dtypeName(wt), "; it must be u8 or i8"));
  if (scale->type().dtype != DType::kF32)
    return bad(spec, absl::StrCat(what, "_scale has dtype ", ir::dtypeName(scale->type().dtype), "; it must be f32"));
  if (zp->type().dtype != wt)
    return bad(spec, absl::StrCat(what, "_zero_point has dtype ", ir::dtypeName(zp->type().dtype), ", ", what, " ",
                                  ir::dtypeName(wt)));
  for (Value *v : {scale, zp}) {
    const ir::TensorType &t = v->type();
    const bool ok = t.rankKnown && t.isStatic() && (t.rank() == 1 || t.rank() == 2) && t.shape[0].value == dirs &&
                    (t.rank() == 1 || t.shape[1].value == gatesHidden);
    if (!ok)
      return bad(spec, absl::StrCat(what, v == scale ? "_scale" : "_zero_point", " is ", t.str(), "; it must be [",
                                    dirs, "] (per direction) or [", dirs, ", ", gatesHidden, "] (per column)"));
  }
  // Direction 1's zero point is read at the offset of its scale.
  if (dirs == 2 && scale->type().rank() == 2 && zp->type().rank() == 1)
    return bad(spec, absl::StrCat(what, "_scale is per column and ", what,
                                  "_zero_point per direction: ONNX Runtime reads the second direction's zero point "
                                  "past the end; give them the same shape"));
  if (zp->type().rank() == 2 && zp->isConstant()) {
    const ir::Tensor *z = zp->constant();
    for (int64_t i = 0; i < z->numElements(); ++i) {
      if (wt == DType::kI8 && z->getInt(i) != 0)
        return bad(spec, absl::StrCat(what, "_zero_point[", i, "] = ", z->getInt(i),
                                      ": per-column zero points of i8 weights must be 0 (as ONNX Runtime requires)"));
      if (wt == DType::kU8 && z->getInt(i) != z->getInt(0))
        return bad(spec, absl::StrCat(what, "_zero_point[", i, "] = ", z->getInt(i), " differs from element 0 (",
                                      z->getInt(0), "): per-column zero points of u8 weights must be one value "
                                      "(as ONNX Runtime requires)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ir::Node *>> expandDynamicQuantizeLstm(const NodeSpec &spec, ExpansionBuilder &b) {
  if (spec.attrs.count("layout"))
    return bad(spec, "has no layout attribute (X is [seq_length, batch_size, input_size])");
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec, 0));
  FUSEC_ASSIGN_OR_RETURN(Value * w, requiredInput(spec, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * r, requiredInput(spec, 2));
  FUSEC_ASSIGN_OR_RETURN(Value * wScale, requiredInput(spec, 8));
  FUSEC_ASSIGN_OR_RETURN(Value * wZp, requiredInput(spec, 9));
  FUSEC_ASSIGN_OR_RETURN(Value * rScale, requiredInput(spec, 10));
  FUSEC_ASSIGN_OR_RETURN(Value * rZp, requiredInput(spec, 11));
  if (x->type().dtype != DType::kF32)
    return bad(spec, absl::StrCat("X has dtype ", ir::dtypeName(x->type().dtype), "; it must be f32"));
  if (Value *lens = optionalInput(spec, 4); lens && lens->type().dtype != DType::kI32)
    return bad(spec, absl::StrCat("sequence_lens has dtype ", ir::dtypeName(lens->type().dtype), "; it must be i32"));
  FUSEC_ASSIGN_OR_RETURN(std::string direction, stringAttr(spec, "direction", "forward"));
  FUSEC_ASSIGN_OR_RETURN(int64_t hidden, intAttr(spec, "hidden_size", 0));
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const ir::TensorType &rt = r->type();
  if (hidden <= 0 && rt.rankKnown && rt.rank() == 3 && rt.shape[1].isStatic()) hidden = rt.shape[1].value;
  if (hidden <= 0)
    return bad(spec, absl::StrCat("needs hidden_size > 0 or R of static shape [D, hidden_size, 4 * hidden_size], R is ",
                                  rt.str()));
  if (w->type().dtype != r->type().dtype)  // one type parameter T2
    return bad(spec, absl::StrCat("W has dtype ", ir::dtypeName(w->type().dtype), " and R ",
                                  ir::dtypeName(r->type().dtype), "; they must be the same (u8 or i8)"));
  FUSEC_RETURN_IF_ERROR(checkQuantParams(spec, "W", w, wScale, wZp, dirs, 4 * hidden));
  FUSEC_RETURN_IF_ERROR(checkQuantParams(spec, "R", r, rScale, rZp, dirs, 4 * hidden));
  QuantizedLstmGemms gemms(w, wScale, wZp, r, rScale, rZp);
  RecurrentForm form;
  form.transposedWeights = true;
  form.ortSchedule = true;
  form.gemms = &gemms;
  return unrollRecurrent(spec, b, form);
}

}  // namespace fusec::frontend::internal
