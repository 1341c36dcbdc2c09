//===- RecurrentOps.cpp - LSTM, GRU and RNN unrolled at import -----------===//
//
// Per direction d (forward walks t = 0..T-1, reverse T-1..0):
//   XW = MatMul(X, W[d]ᵀ) + Wb (+ Rb where it adds to the gate directly)
//   per step t:  g = XW[t] + MatMul(H, R[d]ᵀ); gates split along the last
//   axis; the spec's equations (ONNX Operators.md):
//     RNN:  H = f(g)
//     GRU:  z = f(gz), r = f(gr),
//           lbr = 0: h = g(xh + MatMul(r * H, Rhᵀ) + Rbh)
//           lbr = 1: h = g(xh + r * (MatMul(H, Rhᵀ) + Rbh))
//           H = (1 - z) * h + z * H
//     LSTM: i = f(gi + Pi * C), f = f(gf + Pf * C) (or 1 - i with
//           input_forget), c = g(gc), C = f * C + i * c,
//           o = f(go + Po * C), H = o * h(C)
//   clip bounds every gate pre-activation to [-clip, clip]; with
//   sequence_lens, a batch entry whose step is t >= len keeps H (and C) and
//   writes 0 to Y, and one of length 0 gives Y_h = Y_c = 0 (as ONNX
//   Runtime's kernels do; the spec leaves it open).
// The products are a RecurrentGemms (float MatMuls here; DynamicQuantizeLSTM
// passes its quantised ones, DynamicQuantizeLstm.cpp) and RecurrentForm
// switches on ONNX Runtime's order of operations (RecurrentOps.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/RecurrentOps.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Node;
using ir::Value;

int64_t dimOf(const Value *v, int64_t axis) {
  const ir::TensorType &t = v->type();
  if (!t.rankKnown || axis >= t.rank() || !t.shape[static_cast<size_t>(axis)].isStatic())
    return -1;
  return t.shape[static_cast<size_t>(axis)].value;
}

int64_t rankOf(const Value *v) { return v->type().rankKnown ? v->type().rank() : -1; }

bool wants(const NodeSpec &spec, size_t i) {
  return i < spec.outputs.size() && !(i < spec.outputOmitted.size() && spec.outputOmitted[i]);
}

ir::AttributeMap axisAttr(int64_t axis) { return {{"axis", Attribute(axis)}}; }
ir::AttributeMap perm(std::vector<int64_t> p) { return {{"perm", Attribute(std::move(p))}}; }

/// One activation with its alpha / beta.
struct Activation {
  std::string name;  // lower case
  double alpha = 0.0, beta = 0.0;
};

bool takesAlpha(const std::string &n) {
  return n == "affine" || n == "leakyrelu" || n == "thresholdedrelu" || n == "scaledtanh" ||
         n == "hardsigmoid" || n == "elu";
}
bool takesBeta(const std::string &n) {
  return n == "affine" || n == "scaledtanh" || n == "hardsigmoid";
}

/// The default alpha / beta of activation \p n (ONNX's op defaults).
std::pair<double, double> defaults(const std::string &n) {
  if (n == "leakyrelu") return {0.01, 0.0};
  if (n == "hardsigmoid") return {0.2, 0.5};
  if (n == "thresholdedrelu" || n == "elu") return {1.0, 0.0};
  return {1.0, 0.0};
}

/// The spec's activations (or \p dflt per direction), alpha / beta taken in
/// order by the activations that use them.
absl::StatusOr<std::vector<Activation>> activations(const NodeSpec &spec,
                                                    const std::vector<std::string> &dflt,
                                                    int64_t dirs) {
  std::vector<std::string> names;
  if (auto it = spec.attrs.find("activations"); it != spec.attrs.end()) {
    if (it->second.kind() != Attribute::Kind::kStrings)
      return absl::InvalidArgumentError("attribute 'activations' must be a list of strings");
    names = it->second.strings();
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  if (names.size() != dflt.size() * static_cast<size_t>(dirs))
    return absl::InvalidArgumentError(absl::StrCat(
        spec.opType, ": activations lists ", names.size(), " functions, needs ",
        dflt.size() * static_cast<size_t>(dirs), " (", dflt.size(), " per direction)"));
  auto floats = [&](const char *attr) -> absl::StatusOr<std::vector<float>> {
    auto it = spec.attrs.find(attr);
    if (it == spec.attrs.end()) return std::vector<float>{};
    if (it->second.kind() != Attribute::Kind::kFloats)
      return absl::InvalidArgumentError(absl::StrCat("attribute '", attr, "' must be floats"));
    return it->second.floats();
  };
  FUSEC_ASSIGN_OR_RETURN(std::vector<float> alphas, floats("activation_alpha"));
  FUSEC_ASSIGN_OR_RETURN(std::vector<float> betas, floats("activation_beta"));
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string &raw : names) {
    Activation a;
    a.name = absl::AsciiStrToLower(raw);
    static const char *kKnown[] = {"relu",  "tanh",     "sigmoid",    "affine",
                                   "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid",
                                   "elu",   "softsign", "softplus"};
    if (std::find(std::begin(kKnown), std::end(kKnown), a.name) == std::end(kKnown))
      return absl::InvalidArgumentError(
          absl::StrCat(spec.opType, ": unknown activation '", raw, "'"));
    std::tie(a.alpha, a.beta) = defaults(a.name);
    if (takesAlpha(a.name) && ai < alphas.size()) a.alpha = alphas[ai++];
    if (takesBeta(a.name) && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

/// The float products of the ai.onnx ops: MatMul by W[d]ᵀ and by the
/// transposed rows of R[d] (one Transpose per direction and gate range).
class FloatGemms : public RecurrentGemms {
 public:
  FloatGemms(Value *w, Value *r, int64_t hidden) : w_(w), r_(r), hidden_(hidden) {}
  absl::StatusOr<Value *> input(ExpansionBuilder &b, Value *x, Value * /*live*/, int64_t d) override {
    return b.op("MatMul", {x, b.op("Transpose", {recurrentDirection(b, w_, d)}, perm({1, 0}))});
  }
  absl::StatusOr<Value *> recurrent(ExpansionBuilder &b, Value *h, int64_t d, int64_t g0,
                                    int64_t g1) override {
    Value *&rT = rT_[{d, g0, g1}];
    if (!rT) {
      Value *rd = recurrentDirection(b, r_, d);  // [G*H, H]
      if (g0 != 0 || g1 * hidden_ != dimOf(r_, 1))
        rd = b.op("Slice", {rd, b.ints({g0 * hidden_}), b.ints({g1 * hidden_}), b.ints({0})});
      rT = b.op("Transpose", {rd}, perm({1, 0}));
    }
    return b.op("MatMul", {h, rT});
  }

 private:
  Value *w_, *r_;
  int64_t hidden_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Value *> rT_;
};

/// The unrolled node: its inputs, attributes and shapes, read once.
class Unroller {
 public:
  Unroller(const NodeSpec &spec, ExpansionBuilder &b, const RecurrentForm &form)
      : spec_(spec), b_(b), form_(form) {}

  absl::StatusOr<std::vector<Node *>> run();

 private:
  /// Activation \p a of \p x, x clipped to [-clip, clip] first when
  /// \p clipInput (the gate pre-activations; not LSTM's cell state).
  Value *act(const Activation &a, Value *x, bool clipInput = true) {
    if (clipInput && clip_ > 0.0) x = b_.op("Clip", {x, b_.scalar(dt_, -clip_), b_.scalar(dt_, clip_)});
    const std::string &n = a.name;
    if (n == "relu") return b_.op("Relu", {x});
    if (n == "tanh") return b_.op("Tanh", {x});
    if (n == "sigmoid") return b_.op("Sigmoid", {x});
    if (n == "affine")
      return b_.op("Add", {b_.op("Mul", {x, b_.scalar(dt_, a.alpha)}), b_.scalar(dt_, a.beta)});
    if (n == "leakyrelu")
      return b_.op("LeakyRelu", {x}, {{"alpha", Attribute(static_cast<float>(a.alpha))}});
    if (n == "thresholdedrelu")
      return b_.op("Where", {b_.op("Greater", {x, b_.scalar(dt_, a.alpha)}), x, b_.scalar(dt_, 0.0)});
    if (n == "scaledtanh")
      return b_.op("Mul",
                   {b_.op("Tanh", {b_.op("Mul", {x, b_.scalar(dt_, a.beta)})}), b_.scalar(dt_, a.alpha)});
    if (n == "hardsigmoid")
      return b_.op("HardSigmoid", {x},
                   {{"alpha", Attribute(static_cast<float>(a.alpha))},
                    {"beta", Attribute(static_cast<float>(a.beta))}});
    if (n == "elu") return b_.op("Elu", {x}, {{"alpha", Attribute(static_cast<float>(a.alpha))}});
    if (n == "softsign")
      return b_.op("Div", {x, b_.op("Add", {b_.scalar(dt_, 1.0), b_.op("Abs", {x})})});
    return b_.op("Softplus", {x});
  }
  /// [rows, cols) of dim 0 of \p x, which is 1-D or 2-D.
  Value *rows(Value *x, int64_t axis, int64_t start, int64_t end) {
    return b_.op("Slice", {x, b_.ints({start}), b_.ints({end}), b_.ints({axis})});
  }
  /// Direction \p d of a [D, ...] input.
  Value *dir(Value *x, int64_t d) { return recurrentDirection(b_, x, d); }
  /// x [T, B, ...] with each row b's first lens[b] steps reversed and the
  /// rest in place (ReverseSequence with time_axis 0, batch_axis 1):
  /// GatherElements along T at Where(t < len, len - 1 - t, t).
  Value *reverseRows(Value *x, Value *lens64, int64_t T, int64_t width) {
    std::vector<int64_t> ts(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) ts[static_cast<size_t>(t)] = t;
    Value *t = b_.constant(ir::Tensor::fromInts(DType::kI64, {T, 1, 1}, ts));
    Value *l = b_.op("Unsqueeze", {lens64, b_.ints({0, 2})});  // [1, B, 1]
    Value *idx = b_.op("Where", {b_.op("Less", {t, l}), b_.op("Sub", {b_.op("Sub", {l, b_.scalar(DType::kI64, 1)}), t}), t});
    Value *shape = b_.op("Concat", {b_.op("Shape", {x}, {{"end", Attribute(int64_t{2})}}), b_.ints({width})},
                         axisAttr(0));
    return b_.op("GatherElements", {x, b_.op("Expand", {idx, shape})}, axisAttr(0));
  }

  const NodeSpec &spec_;
  ExpansionBuilder &b_;
  const RecurrentForm &form_;
  DType dt_ = DType::kF32;
  double clip_ = 0.0;
};

absl::StatusOr<std::vector<Node *>> Unroller::run() {
  const std::string &op = spec_.opType;
  const bool lstm = op == "LSTM" || form_.ortSchedule;  // DynamicQuantizeLSTM is an LSTM
  const int64_t gates = lstm ? 4 : op == "GRU" ? 3 : 1;
  const bool ort = form_.ortSchedule, tw = form_.transposedWeights;
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec_, 0));
  FUSEC_ASSIGN_OR_RETURN(Value * w, requiredInput(spec_, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * r, requiredInput(spec_, 2));
  Value *bias = optionalInput(spec_, 3), *lens = optionalInput(spec_, 4),
        *h0 = optionalInput(spec_, 5);
  Value *c0 = lstm ? optionalInput(spec_, 6) : nullptr;
  Value *peep = lstm ? optionalInput(spec_, 7) : nullptr;
  dt_ = x->type().dtype;
  if (!ir::isFloat(dt_))
    return absl::InvalidArgumentError(absl::StrCat(op, ": X must be a float tensor"));
  FUSEC_ASSIGN_OR_RETURN(std::string direction, stringAttr(spec_, "direction", "forward"));
  FUSEC_ASSIGN_OR_RETURN(int64_t layout, intAttr(spec_, "layout", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t hidden, intAttr(spec_, "hidden_size", 0));
  FUSEC_ASSIGN_OR_RETURN(clip_, floatAttr(spec_, "clip", 0.0));
  FUSEC_ASSIGN_OR_RETURN(int64_t inputForget, intAttr(spec_, "input_forget", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t lbr, intAttr(spec_, "linear_before_reset", 0));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": direction must be forward, reverse or bidirectional, is '", direction, "'"));
  if (layout != 0 && layout != 1)
    return absl::InvalidArgumentError(absl::StrCat(op, ": layout must be 0 or 1"));
  if (clip_ < 0.0) return absl::InvalidArgumentError(absl::StrCat(op, ": clip must be > 0"));
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (rankOf(x) != 3 || rankOf(w) != 3 || rankOf(r) != 3)
    return absl::InvalidArgumentError(absl::StrCat(op, ": X, W and R must be 3-D"));
  if (hidden <= 0) hidden = dimOf(r, tw ? 1 : 2);
  const int64_t T = dimOf(x, layout == 0 ? 0 : 1), inSize = dimOf(x, 2);
  // W [D, G*H, I] and R [D, G*H, H]; transposed: [D, I, G*H] and [D, H, G*H].
  const int64_t wIn = dimOf(w, tw ? 1 : 2), wOut = dimOf(w, tw ? 2 : 1);
  const int64_t rIn = dimOf(r, tw ? 1 : 2), rOut = dimOf(r, tw ? 2 : 1);
  if (hidden <= 0 || dimOf(w, 0) != dirs || dimOf(r, 0) != dirs || wOut != gates * hidden ||
      rOut != gates * hidden || rIn != hidden || (inSize >= 0 && wIn != inSize))
    return absl::InvalidArgumentError(
        tw ? absl::StrCat(op, ": W must be [", dirs, ", input_size, ", gates, " * hidden_size] and R [", dirs,
                          ", hidden_size, ", gates, " * hidden_size] with static dims (hidden_size ", hidden, ")")
           : absl::StrCat(op, ": W must be [", dirs, ", ", gates, " * hidden_size, input_size] and R [", dirs,
                          ", ", gates, " * hidden_size, hidden_size] with static dims (hidden_size ", hidden,
                          ")"));
  if (bias && (rankOf(bias) != 2 || dimOf(bias, 1) != 2 * gates * hidden))
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": B must be [num_directions, ", 2 * gates * hidden, "]"));
  if (peep && (rankOf(peep) != 2 || dimOf(peep, 1) != 3 * hidden))
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": P must be [num_directions, ", 3 * hidden, "]"));
  if (T < 0)
    return absl::UnimplementedError(absl::StrCat(
        op, ": the sequence length (dim ", layout == 0 ? 0 : 1,
        " of X) must be known when importing: fusec unrolls recurrent ops, so a dynamic sequence length "
        "cannot stay dynamic; bind the dims of the graph input it comes from with --shape INPUT=DIMS"));
  if (T * dirs > kMaxUnrolledSteps)
    return absl::UnimplementedError(absl::StrCat(
        op, ": sequence length ", T, " x ", dirs, " direction(s) would unroll into ", T * dirs,
        " steps, more than fusec's limit of ", kMaxUnrolledSteps));
  const std::vector<std::string> dflt =
      lstm ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
      : op == "GRU" ? std::vector<std::string>{"sigmoid", "tanh"}
                    : std::vector<std::string>{"tanh"};
  FUSEC_ASSIGN_OR_RETURN(std::vector<Activation> acts, activations(spec_, dflt, dirs));
  const size_t nAct = dflt.size();
  FloatGemms floatGemms(w, r, hidden);
  RecurrentGemms &gemms = form_.gemms ? *form_.gemms : floatGemms;

  // Time-major [T, B, I]; states [D, B, H].
  if (layout == 1) {
    x = b_.op("Transpose", {x}, perm({1, 0, 2}));
    if (h0) h0 = b_.op("Transpose", {h0}, perm({1, 0, 2}));
    if (c0) c0 = b_.op("Transpose", {c0}, perm({1, 0, 2}));
  }
  // Zero states: [B, H] from X's batch dim.
  Value *zeroState = nullptr;
  auto zeros = [&]() {
    if (!zeroState) {
      Value *batch = b_.op("Shape", {x}, {{"start", Attribute(int64_t{1})}, {"end", Attribute(int64_t{2})}});
      Value *shape = b_.op("Concat", {batch, b_.ints({hidden})}, axisAttr(0));
      zeroState = b_.op("ConstantOfShape", {shape},
                        {{"value", Attribute(ir::Tensor::fromDoubles(dt_, {1}, {0.0}))}});
    }
    return zeroState;
  };
  // Steps t with t >= sequence_lens[b]: keep[t] is [B, 1] bool.
  Value *lens64 = lens ? b_.op("Cast", {lens}, {{"to", Attribute(static_cast<int64_t>(DType::kI64))}})
                       : nullptr;
  if (lens && lens->isConstant()) {
    bool all = true;
    const ir::Tensor *lt = lens->constant();
    // onnxruntime refuses a length outside [0, seq_length]; the mask would
    // silently clamp it.
    for (int64_t i = 0; i < lt->numElements(); ++i)
      if (lt->getInt(i) < 0 || lt->getInt(i) > T)
        return absl::InvalidArgumentError(absl::StrCat(op, ": sequence_lens[", i, "] = ", lt->getInt(i),
                                                       " is out of range [0, ", T, "] (the sequence length)"));
    for (int64_t i = 0; i < lt->numElements(); ++i) all = all && lt->getInt(i) == T;
    if (all) lens64 = nullptr;  // every sequence is full length
  }
  auto keep = [&](int64_t t) {
    return b_.op("Unsqueeze", {b_.op("Less", {b_.constant(ir::Tensor::scalarInt(DType::kI64, t)), lens64}),
                               b_.ints({1})});
  };
  // The steps below max(sequence_lens), [T, 1, 1]: ONNX Runtime's input
  // product covers only those (its quantisation range too).
  Value *live = nullptr;
  if (ort && lens64) {
    std::vector<int64_t> ts(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) ts[static_cast<size_t>(t)] = t;
    Value *maxLen = b_.op("ReduceMax", {lens64}, {{"keepdims", Attribute(int64_t{0})}});
    live = b_.op("Less", {b_.constant(ir::Tensor::fromInts(DType::kI64, {T, 1, 1}, ts)), maxLen});
  }
  const bool wantY = wants(spec_, 0);

  std::vector<Value *> ys, hs, cs;  // per direction: Y [T, B, H], final H, final C
  for (int64_t d = 0; d < dirs; ++d) {
    const Activation *a = &acts[static_cast<size_t>(d) * nAct];
    const bool reverse = direction == "reverse" || d == 1;
    // ONNX Runtime's schedule: each row's own reversed sequence (rows of
    // the product are independent, so the product is reversed, not X).
    const bool rowReverse = ort && reverse && lens64;
    FUSEC_ASSIGN_OR_RETURN(Value * xw, gemms.input(b_, x, live, d));  // [T, B, G*H]
    if (rowReverse) xw = reverseRows(xw, lens64, T, gates * hidden);
    Value *rb = nullptr;   // [G*H] recurrent bias
    Value *wrb = nullptr;  // ort: Wb + Rb, added to each gate after the products
    if (bias) {
      Value *bd = dir(bias, d);
      if (ort) {
        wrb = b_.op("Add", {rows(bd, 0, 0, gates * hidden), rows(bd, 0, gates * hidden, 2 * gates * hidden)});
      } else {
        xw = b_.op("Add", {xw, rows(bd, 0, 0, gates * hidden)});
        rb = rows(bd, 0, gates * hidden, 2 * gates * hidden);
      }
    }
    // For LSTM / RNN all of Rb adds to the gates; GRU keeps Rbh apart.
    Value *rbh = nullptr;
    if (rb && op == "GRU") {
      Value *none = b_.constant(
          ir::Tensor::fromDoubles(dt_, {hidden}, std::vector<double>(static_cast<size_t>(hidden), 0.0)));
      xw = b_.op("Add", {xw, b_.op("Concat", {rows(rb, 0, 0, 2 * hidden), none}, axisAttr(0))});
      rbh = rows(rb, 0, 2 * hidden, 3 * hidden);
    } else if (rb) {
      xw = b_.op("Add", {xw, rb});
    }
    Value *pi = nullptr, *po = nullptr, *pf = nullptr;
    if (peep) {
      Value *pd = dir(peep, d);
      pi = rows(pd, 0, 0, hidden);
      po = rows(pd, 0, hidden, 2 * hidden);
      pf = rows(pd, 0, 2 * hidden, 3 * hidden);
    }
    // Gate k of the fused bias (ort), or \p v unchanged.
    auto gateBias = [&](Value *v, int64_t k) {
      return wrb ? b_.op("Add", {v, rows(wrb, 0, k * hidden, (k + 1) * hidden)}) : v;
    };
    Value *h = h0 ? dir(h0, d) : zeros();
    Value *c = lstm ? (c0 ? dir(c0, d) : zeros()) : nullptr;
    Value *hRead = h;  // the H the recurrent product reads
    std::vector<Value *> yt(static_cast<size_t>(T));
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = reverse && !rowReverse ? T - 1 - s : s;
      Value *g = b_.op("Gather", {xw, b_.constant(ir::Tensor::scalarInt(DType::kI64, t))},
                       axisAttr(0));  // [B, G*H]
      Value *hn, *cn = nullptr;
      if (op == "RNN") {
        FUSEC_ASSIGN_OR_RETURN(Value * hr, gemms.recurrent(b_, hRead, d, 0, 1));
        hn = act(a[0], b_.op("Add", {g, hr}));
      } else if (op == "GRU") {
        std::vector<Value *> xg = b_.ops("Split", {g, b_.ints({hidden, hidden, hidden})}, 3, axisAttr(1));
        Value *hh;
        std::vector<Value *> rg;
        if (lbr == 0) {
          FUSEC_ASSIGN_OR_RETURN(Value * hzr, gemms.recurrent(b_, hRead, d, 0, 2));
          rg = b_.ops("Split", {hzr, b_.ints({hidden, hidden})}, 2, axisAttr(1));
        } else {
          FUSEC_ASSIGN_OR_RETURN(Value * hzrh, gemms.recurrent(b_, hRead, d, 0, 3));
          rg = b_.ops("Split", {hzrh, b_.ints({hidden, hidden, hidden})}, 3, axisAttr(1));
        }
        Value *z = act(a[0], b_.op("Add", {xg[0], rg[0]}));
        Value *rr = act(a[0], b_.op("Add", {xg[1], rg[1]}));
        if (lbr == 0) {
          FUSEC_ASSIGN_OR_RETURN(hh, gemms.recurrent(b_, b_.op("Mul", {rr, h}), d, 2, 3));
          if (rbh) hh = b_.op("Add", {hh, rbh});
        } else {
          hh = rg[2];
          if (rbh) hh = b_.op("Add", {hh, rbh});
          hh = b_.op("Mul", {rr, hh});
        }
        Value *cand = act(a[1], b_.op("Add", {xg[2], hh}));
        // (1 - z) * h~ + z * H
        hn = b_.op("Add", {b_.op("Mul", {b_.op("Sub", {b_.scalar(dt_, 1.0), z}), cand}),
                           b_.op("Mul", {z, h})});
      } else {
        FUSEC_ASSIGN_OR_RETURN(Value * hr, gemms.recurrent(b_, hRead, d, 0, 4));
        std::vector<Value *> gs = b_.ops(
            "Split", {b_.op("Add", {g, hr}), b_.ints({hidden, hidden, hidden, hidden})},
            4, axisAttr(1));  // i, o, f, c
        Value *gi = gs[0], *go = gs[1], *gf = gs[2];
        if (pi) {
          gi = b_.op("Add", {gi, b_.op("Mul", {pi, c})});
          gf = b_.op("Add", {gf, b_.op("Mul", {pf, c})});
        }
        Value *it = act(a[0], gateBias(gi, 0));
        Value *ft = inputForget != 0 ? b_.op("Sub", {b_.scalar(dt_, 1.0), it}) : act(a[0], gateBias(gf, 2));
        Value *ct = act(a[1], gateBias(gs[3], 3));
        cn = b_.op("Add", {b_.op("Mul", {ft, c}), b_.op("Mul", {it, ct})});
        if (po) go = b_.op("Add", {go, b_.op("Mul", {po, cn})});
        Value *ot = act(a[0], gateBias(go, 1));
        hn = b_.op("Mul", {ot, act(a[2], cn, /*clipInput=*/false)});
      }
      Value *y = hn;
      if (lens64) {
        Value *k = keep(t);
        y = b_.op("Where", {k, hn, b_.scalar(dt_, 0.0)});
        hn = b_.op("Where", {k, hn, h});
        if (cn) cn = b_.op("Where", {k, cn, c});
      }
      h = hn;
      c = cn;
      // ONNX Runtime's kernel reads its Y step (0 for a finished row) when Y
      // is an output, else the held state.
      hRead = ort && wantY ? y : hn;
      yt[static_cast<size_t>(t)] = b_.op("Unsqueeze", {y, b_.ints({0})});
    }
    if (wantY) {
      Value *yd = T == 1 ? yt[0] : b_.op("Concat", yt, axisAttr(0));  // [T, B, H]
      ys.push_back(rowReverse ? reverseRows(yd, lens64, T, hidden) : yd);
    }
    if (lens64) {
      // A row of length 0 has Y_h = Y_c = 0 (ONNX Runtime's kernels; the
      // spec leaves it open), not the initial state.
      Value *some = b_.op("Unsqueeze", {b_.op("Less", {b_.scalar(DType::kI64, 0), lens64}), b_.ints({1})});
      h = b_.op("Where", {some, h, b_.scalar(dt_, 0.0)});
      if (c) c = b_.op("Where", {some, c, b_.scalar(dt_, 0.0)});
    }
    hs.push_back(b_.op("Unsqueeze", {h, b_.ints({0})}));
    if (c) cs.push_back(b_.op("Unsqueeze", {c, b_.ints({0})}));
  }
  auto stack = [&](std::vector<Value *> parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : b_.op("Concat", parts, axisAttr(axis));
  };
  if (wantY) {
    for (Value *&y : ys) y = b_.op("Unsqueeze", {y, b_.ints({1})});  // [T, 1, B, H]
    Value *y = stack(ys, 1);
    if (layout == 1)
      b_.named("Transpose", {y}, {0}, perm({2, 0, 1, 3}));
    else
      b_.named("Identity", {y}, {0});
  }
  for (size_t out = 1; out <= 2; ++out) {
    if (!wants(spec_, out)) continue;
    if (out == 2 && !lstm)
      return absl::InvalidArgumentError(absl::StrCat(op, " has 2 outputs"));
    Value *s = stack(out == 1 ? hs : cs, 0);  // [D, B, H]
    if (layout == 1)
      b_.named("Transpose", {s}, {static_cast<int>(out)}, perm({1, 0, 2}));
    else
      b_.named("Identity", {s}, {static_cast<int>(out)});
  }
  for (size_t i = 3; i < spec_.outputs.size(); ++i)
    if (wants(spec_, i))
      return absl::InvalidArgumentError(absl::StrCat(op, " has at most 3 outputs"));
  return b_.done();
}

}  // namespace

bool isRecurrentOp(std::string_view opType) {
  return opType == "LSTM" || opType == "GRU" || opType == "RNN";
}

absl::StatusOr<std::vector<ir::Node *>> expandRecurrentOp(const NodeSpec &spec,
                                                          ExpansionBuilder &b) {
  return Unroller(spec, b, RecurrentForm{}).run();
}

absl::StatusOr<std::vector<ir::Node *>> unrollRecurrent(const NodeSpec &spec, ExpansionBuilder &b,
                                                        const RecurrentForm &form) {
  return Unroller(spec, b, form).run();
}

ir::Value *recurrentDirection(ExpansionBuilder &b, ir::Value *x, int64_t d) {
  return b.op("Gather", {x, b.constant(ir::Tensor::scalarInt(DType::kI64, d))}, axisAttr(0));
}

}  // namespace fusec::frontend::internal
