//===- ContribOps.cpp - ONNX Runtime contrib ops as op-table ops ----------===//
//
// Each com.microsoft op (ONNX Runtime's ContribOperators.md) as op-table
// ops, in the form a PyTorch export of the same layer has. Constants take
// the input's dtype; numbers are the spec's defaults.
//
//   Gelu(X)                      Gelu(X) (erf form)
//   FastGelu(X, bias?)           Gelu(X + bias, approximate="tanh")
//   BiasGelu(A, B)               Gelu(A + B)
//   QuickGelu(X; alpha=1.702)    X * Sigmoid(alpha * X)
//   SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon=1e-12)
//       s = input + skip (+ bias); LayerNormalization(s, gamma, beta, axis=-1)
//       outputs: output, mean, inv_std_var (LayerNormalization's), s
//   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?; epsilon=1e-12)
//       s as above; RMSNormalization(s, gamma, axis=-1); inv_std_var =
//       1 / sqrt(mean(s^2) + epsilon) in f32; the mean output is refused
//   SimplifiedLayerNormalization(X, scale; axis=-1, epsilon=1e-5, stash_type)
//       (ai.onnx or com.microsoft) RMSNormalization; inv_std_var as above
//   RotaryEmbedding (com.microsoft: input, position_ids, cos, sin; ai.onnx
//       opset 23: X, cos, sin, position_ids?) the spec's rotation, halves or
//       interleaved pairs, partial rotary_embedding_dim, 3-D (B,S,hidden) or
//       4-D (B,N,S,H) inputs; position_ids of shape [1] is a start offset;
//       written as x * C + x[partner] * S (rotationTables) so that it is one
//       elementwise kernel
//   MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?,
//       attention_bias?): Q·Kᵀ * scale (+ masks) -> Softmax -> ·V, with
//       query/key/value as (B,S,D), packed QKV (B,S,N,3,H), packed KV
//       (B,L,N,2,H) or BNSH key/value; key_padding_mask (B) lengths or (B,L)
//       adds mask_filter_value on padding keys, unidirectional a causal
//       -inf mask; present_key/present_value without a past are K/V in BNSH
//   Attention(input, weights, bias?, mask_index?, -, attention_bias?): the
//       packed projection MatMul(input, weights) + bias split by
//       qkv_hidden_sizes, then as MultiHeadAttention; present (no past) is
//       K and V stacked (2, B, N, L, H)
//   GroupQueryAttention (prompt / prefill without past_key/past_value):
//       optional packed QKV, do_rotary (positions 0..S-1 from cos/sin_cache),
//       the GQA head repeat of K/V, scale, softcap, causal / local_window_size
//       masks (key j visible from query i when 0 <= i - j < W); present_key/present_value are K (rotated) / V in BNSH
//   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?; K, N, bits,
//       block_size): B is dequantised at compile time into a constant [K, N]
//       weight of A's dtype, (q - zero_point) * scale per block along K, and
//       the node becomes MatMul(A, W) (+ bias); B, scales and zero_points
//       must be initializers
//   DynamicQuantizeLSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?,
//       P?, W_scale, W_zero_point, R_scale, R_zero_point): the LSTM unrolling
//       with ONNX Runtime's quantised products and schedule
//       (DynamicQuantizeLstm.cpp)
//
// Masks are built so that const-fold turns them into constants once the
// shapes are bound (ConstantOfShape + Trilu over [S, L]), which the
// attention rewrite recognises as its causal / sliding-window masks.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/ContribOps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx/internal/DynamicQuantizeLstm.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Value;

/// The mapped com.microsoft ops, in the order docs/CONTRIB_OPS.md lists them.
constexpr const char *kMapped[] = {
    "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization", "RotaryEmbedding",
    "MultiHeadAttention", "GroupQueryAttention", "MatMulNBits", "Attention", "DynamicQuantizeLSTM"};

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Optional inputs / outputs that a mapping refuses whenever the node uses
/// them, whatever their types: checked before the model is imported (so the
/// unsupported-op report lists every such node at once) and again by the
/// expansion.
struct PresenceRefusal {
  const char *op;
  bool output;
  int index;
  const char *name;
  const char *why;
};
constexpr const char *kNoPast = "fusec maps attention without a past KV cache (prompt / prefill)";
constexpr PresenceRefusal kRefused[] = {
    {"SkipSimplifiedLayerNormalization", true, 1, "mean", "an RMS norm computes no mean"},
    {"MultiHeadAttention", false, 6, "past_key", kNoPast},
    {"MultiHeadAttention", false, 7, "past_value", kNoPast},
    {"MultiHeadAttention", false, 8, "past_sequence_length", kNoPast},
    {"MultiHeadAttention", false, 9, "cache_indirection", kNoPast},
    {"MultiHeadAttention", true, 3, "qk", "the scores are not materialised"},
    {"Attention", false, 4, "past", kNoPast},
    {"Attention", false, 6, "past_sequence_length", kNoPast},
    {"GroupQueryAttention", false, 3, "past_key", kNoPast},
    {"GroupQueryAttention", false, 4, "past_value", kNoPast},
    {"GroupQueryAttention", false, 9, "position_ids", "prompt positions are 0..S-1"},
    {"GroupQueryAttention", false, 11, "head_sink", "not mapped"},
    {"GroupQueryAttention", false, 12, "k_scale", "a quantised KV cache is not mapped"},
    {"GroupQueryAttention", false, 13, "v_scale", "a quantised KV cache is not mapped"},
    {"GroupQueryAttention", false, 14, "q_norm_weight", "not mapped"},
    {"GroupQueryAttention", false, 15, "k_norm_weight", "not mapped"},
    {"GroupQueryAttention", false, 16, "query_seqlens", "chunked prefill needs a past KV cache"},
    {"GroupQueryAttention", true, 3, "output_qk", "the scores are not materialised"},
    {"MatMulNBits", false, 4, "g_idx", "deprecated, not mapped"},
};

/// True if the model asked for output \p i (present and not left out).
bool wants(const NodeSpec &spec, size_t i) {
  return i < spec.outputs.size() && !(i < spec.outputOmitted.size() && spec.outputOmitted[i]);
}

/// A form of a mapped op that the mapping does not cover.
absl::Status unsupported(const std::string &what) {
  return absl::UnimplementedError(what);
}

/// The expansion's side of kRefused.
absl::Status checkRefusedForms(const NodeSpec &spec) {
  std::string why = refusedContribForm(spec.opType, [&](bool output, int i) {
    const size_t k = static_cast<size_t>(i);
    return output ? wants(spec, k) : optionalInput(spec, k) != nullptr;
  });
  if (why.empty()) return absl::OkStatus();
  return unsupported(absl::StrCat(spec.opType, ": ", why));
}

/// At most \p n outputs.
absl::Status checkOutputs(const NodeSpec &spec, size_t n) {
  for (size_t i = n; i < spec.outputs.size(); ++i)
    if (wants(spec, i))
      return absl::InvalidArgumentError(
          absl::StrCat(spec.opType, " has ", n, " output", n == 1 ? "" : "s", ", the node lists ",
                       spec.outputs.size()));
  return absl::OkStatus();
}

/// Static dim \p axis of \p v (negative counts from the back), or -1. Only
/// for the node's inputs: values the expansion adds are typed after it
/// returns.
int64_t staticDim(const Value *v, int64_t axis) {
  const ir::TensorType &t = v->type();
  if (!t.rankKnown) return -1;
  const int64_t r = t.rank();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r || !t.shape[static_cast<size_t>(axis)].isStatic()) return -1;
  return t.shape[static_cast<size_t>(axis)].value;
}

int64_t rankOf(const Value *v) { return v->type().rankKnown ? v->type().rank() : -1; }

/// Input \p i as a constant tensor (an initializer or a folded Constant).
absl::StatusOr<const ir::Tensor *> constantInput(const NodeSpec &spec, size_t i,
                                                 const char *what) {
  FUSEC_ASSIGN_OR_RETURN(Value * v, requiredInput(spec, i));
  if (!v->isConstant())
    return unsupported(absl::StrCat(spec.opType, ": input ", i, " (", what,
                                    ") must be an initializer (fusec reads it at compile time)"));
  return v->constant();
}

ir::AttributeMap axisAttr(int64_t axis) { return {{"axis", Attribute(axis)}}; }

/// Slice of \p x along \p axis, [start, end) with \p step.
Value *slice(ExpansionBuilder &b, Value *x, int64_t axis, int64_t start, int64_t end,
             int64_t step = 1) {
  std::vector<Value *> in = {x, b.ints({start}), b.ints({end}), b.ints({axis})};
  if (step != 1) in.push_back(b.ints({step}));
  return b.op("Slice", std::move(in));
}

/// Dim \p axis of \p x as a 1-D int64 tensor of one element (a run-time
/// value until the shapes are bound and const-fold folds it).
Value *dimOf(ExpansionBuilder &b, Value *x, int64_t axis) {
  return b.op("Shape", {x}, {{"start", Attribute(axis)}, {"end", Attribute(axis + 1)}});
}

/// 1 / sqrt(mean(x^2 over axes [axis, rank)) + eps), keepdims, in f32: the
/// inv_std_var output of ONNX Runtime's RMS norms. \p rank (of x) is read
/// only for a non-negative \p axis. Defines spec output \p outIndex.
void rmsInvStdVar(ExpansionBuilder &b, Value *x, int64_t axis, int64_t rank, double eps,
                  int outIndex) {
  if (x->type().dtype != DType::kF32)
    x = b.op("Cast", {x}, {{"to", Attribute(static_cast<int64_t>(DType::kF32))}});
  // A negative axis names the trailing axes without the rank: [axis, -1].
  std::vector<int64_t> axes;
  if (axis < 0) {
    for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  } else {
    for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  }
  Value *ms = b.op("ReduceMean", {b.op("Mul", {x, x}), b.ints(axes)},
                   {{"keepdims", Attribute(int64_t{1})}});
  Value *sd = b.op("Sqrt", {b.op("Add", {ms, b.scalar(DType::kF32, eps)})});
  b.named("Reciprocal", {sd}, {outIndex});
}

// --- activations ----------------------------------------------------------

absl::StatusOr<std::vector<Node *>> expandGelu(const NodeSpec &spec, ExpansionBuilder &b) {
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 1));
  const std::string &op = spec.opType;
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec, 0));
  const DType dt = x->type().dtype;
  if (op == "Gelu") return b.finish("Gelu", {x});
  if (op == "FastGelu") {
    if (Value *bias = optionalInput(spec, 1)) x = b.op("Add", {x, bias});
    return b.finish("Gelu", {x}, {{"approximate", Attribute(std::string("tanh"))}});
  }
  if (op == "BiasGelu") {
    FUSEC_ASSIGN_OR_RETURN(Value * bias, requiredInput(spec, 1));
    return b.finish("Gelu", {b.op("Add", {x, bias})});
  }
  // QuickGelu
  FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1.702));
  Value *ax = alpha == 1.0 ? x : b.op("Mul", {x, b.scalar(dt, alpha)});
  return b.finish("Mul", {x, b.op("Sigmoid", {ax})});
}

// --- norms ----------------------------------------------------------------

/// input + skip (+ bias), defining spec output 3 when the model reads it.
Value *skipSum(const NodeSpec &spec, ExpansionBuilder &b, Value *x, Value *skip, Value *bias) {
  if (!bias)
    return wants(spec, 3) ? b.named("Add", {x, skip}, {3})->output(0) : b.op("Add", {x, skip});
  Value *s = b.op("Add", {x, skip});
  return wants(spec, 3) ? b.named("Add", {s, bias}, {3})->output(0) : b.op("Add", {s, bias});
}

absl::StatusOr<std::vector<Node *>> expandNorm(const NodeSpec &spec, ExpansionBuilder &b) {
  const std::string &op = spec.opType;
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec, 0));
  if (op == "SimplifiedLayerNormalization") {
    FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 2));
    FUSEC_ASSIGN_OR_RETURN(Value * scale, requiredInput(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, intAttr(spec, "axis", -1));
    FUSEC_ASSIGN_OR_RETURN(double eps, floatAttr(spec, "epsilon", 1e-5));
    FUSEC_ASSIGN_OR_RETURN(int64_t stash, intAttr(spec, "stash_type", 1));
    if (wants(spec, 1)) {
      if (axis >= 0 && rankOf(x) < 0)
        return absl::InvalidArgumentError(
            "SimplifiedLayerNormalization's inv_std_var with a non-negative axis needs an input of "
            "known rank");
      rmsInvStdVar(b, x, axis, rankOf(x), eps, 1);
    }
    b.named("RMSNormalization", {x, scale}, {0},
            {{"axis", Attribute(axis)},
             {"epsilon", Attribute(static_cast<float>(eps))},
             {"stash_type", Attribute(stash)}});
    return b.done();
  }
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 4));
  FUSEC_ASSIGN_OR_RETURN(Value * skip, requiredInput(spec, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * gamma, requiredInput(spec, 2));
  FUSEC_ASSIGN_OR_RETURN(double eps, floatAttr(spec, "epsilon", 1e-12));
  const ir::AttributeMap attrs = {{"axis", Attribute(int64_t{-1})},
                                  {"epsilon", Attribute(static_cast<float>(eps))}};
  if (op == "SkipLayerNormalization") {
    Value *beta = optionalInput(spec, 3);
    Value *s = skipSum(spec, b, x, skip, optionalInput(spec, 4));
    std::vector<Value *> in = {s, gamma};
    if (beta) in.push_back(beta);
    std::vector<int> outs = {0};
    if (wants(spec, 1) || wants(spec, 2)) outs.push_back(wants(spec, 1) ? 1 : -1);
    if (wants(spec, 2)) outs.push_back(2);
    b.named("LayerNormalization", std::move(in), outs, attrs);
    return b.done();
  }
  // SkipSimplifiedLayerNormalization
  Value *s = skipSum(spec, b, x, skip, optionalInput(spec, 3));
  if (wants(spec, 2)) rmsInvStdVar(b, s, -1, -1, eps, 2);
  ir::AttributeMap rms = attrs;
  b.named("RMSNormalization", {s, gamma}, {0}, rms);
  return b.done();
}

// --- rotary embedding -----------------------------------------------------

/// The rotation as one elementwise expression over the head axis, which
/// fuses into one kernel (Split/Concat would each be a kernel of their own):
///   y = x * C + x[partner] * S
/// with, per lane i of the head (size \p head, the first \p rot rotated):
///   halves:      partner i+h / i-h, C = cos[i mod h], S = -sin / +sin
///   interleaved: partner i^1,       C = cos[i / 2],   S = -sin / +sin
///   pass lanes:  partner i,         C = 1,            S = 0
/// (h = rot / 2), which is (x1 cos - x2 sin, x1 sin + x2 cos) exactly: the
/// sign flip and the added zero products are exact.
struct Rotation {
  int64_t rot = 0, head = 0;
  bool interleaved = false;
};

/// C and S of Rotation over the caches' last axis: \p cos / \p sin of rank
/// \p rank with last dim rot / 2 -> last dim head. For constant caches (the
/// usual case) const-fold makes them constants.
std::pair<Value *, Value *> rotationTables(ExpansionBuilder &b, const Rotation &r, Value *cos,
                                           Value *sin, int64_t rank, DType dt) {
  const int64_t half = r.rot / 2;
  std::vector<int64_t> lanes, sign(static_cast<size_t>(r.head), 0);
  for (int64_t i = 0; i < r.head; ++i) {
    if (i >= r.rot) {
      lanes.push_back(half);  // the padded 1 (cos) / 0 (sin)
      continue;
    }
    const bool first = r.interleaved ? i % 2 == 0 : i < half;
    lanes.push_back(r.interleaved ? i / 2 : i % half);
    sign[static_cast<size_t>(i)] = first ? -1 : 1;
  }
  if (r.rot < r.head) {
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
    pads[static_cast<size_t>(2 * rank - 1)] = 1;
    cos = b.op("Pad", {cos, b.ints(pads), b.scalar(dt, 1.0)});
    sin = b.op("Pad", {sin, b.ints(pads), b.scalar(dt, 0.0)});
  }
  Value *idx = b.ints(lanes);
  Value *c = b.op("Gather", {cos, idx}, axisAttr(rank - 1));
  std::vector<double> signs(sign.begin(), sign.end());
  Value *sv = b.constant(ir::Tensor::fromDoubles(dt, {r.head}, signs), "_sign");
  Value *sn = b.op("Mul", {b.op("Gather", {sin, idx}, axisAttr(rank - 1)), sv});
  return {c, sn};
}

/// Rotation of \p x4 (head on axis 3) by \p c / \p s, rotationTables'
/// results brought to broadcast against x4. The last node defines spec
/// output 0 when \p last.
Value *rotate(ExpansionBuilder &b, const Rotation &r, Value *x4, Value *c, Value *s, bool last) {
  std::vector<int64_t> partner;
  for (int64_t i = 0; i < r.head; ++i) {
    if (i >= r.rot) partner.push_back(i);
    else if (r.interleaved) partner.push_back(i ^ 1);
    else partner.push_back(i < r.rot / 2 ? i + r.rot / 2 : i - r.rot / 2);
  }
  Value *xp = b.op("Gather", {x4, b.ints(partner)}, axisAttr(3));
  std::vector<Value *> in = {b.op("Mul", {x4, c}), b.op("Mul", {xp, s})};
  return last ? b.named("Add", std::move(in), {0})->output(0) : b.op("Add", std::move(in));
}

/// The positions 0..S-1 (+ \p start, a 1-element tensor, when given) as a
/// 1-D int64 tensor; S is dim \p seqAxis of \p x.
Value *positions(ExpansionBuilder &b, Value *x, int64_t seqAxis, Value *start) {
  Value *s = b.op("Reshape", {dimOf(b, x, seqAxis), b.ints({})});
  Value *zero = b.constant(ir::Tensor::scalarInt(DType::kI64, 0));
  Value *one = b.constant(ir::Tensor::scalarInt(DType::kI64, 1));
  if (!start) return b.op("Range", {zero, s, one});
  if (start->type().dtype != DType::kI64)
    start = b.op("Cast", {start}, {{"to", Attribute(static_cast<int64_t>(DType::kI64))}});
  Value *s0 = b.op("Reshape", {start, b.ints({})});
  return b.op("Range", {s0, b.op("Add", {s0, s}), one});
}

absl::StatusOr<std::vector<Node *>> expandRotary(const NodeSpec &spec, ExpansionBuilder &b) {
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 1));
  const bool contrib = spec.domain == kContribDomain;
  const std::string what = contrib ? "com.microsoft RotaryEmbedding" : "RotaryEmbedding";
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec, 0));
  // com.microsoft: input, position_ids, cos_cache, sin_cache.
  // ai.onnx:       X, cos_cache, sin_cache, position_ids?.
  Value *pid = contrib ? optionalInput(spec, 1) : optionalInput(spec, 3);
  FUSEC_ASSIGN_OR_RETURN(Value * cos, requiredInput(spec, contrib ? 2 : 1));
  FUSEC_ASSIGN_OR_RETURN(Value * sin, requiredInput(spec, contrib ? 3 : 2));
  if (contrib && !pid) return absl::InvalidArgumentError(absl::StrCat(what, ": input 1 (position_ids) is missing"));
  FUSEC_ASSIGN_OR_RETURN(int64_t interleaved, intAttr(spec, "interleaved", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t numHeads, intAttr(spec, "num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t rotAttr, intAttr(spec, "rotary_embedding_dim", 0));
  if (contrib) {
    FUSEC_ASSIGN_OR_RETURN(int64_t packed, intAttr(spec, "is_packed_batching", 0));
    FUSEC_ASSIGN_OR_RETURN(double scale, floatAttr(spec, "scale", 1.0));
    if (packed != 0)
      return unsupported(absl::StrCat(what, ": is_packed_batching=1 (ragged batches) is not supported"));
    if (scale != 1.0)
      return unsupported(absl::StrCat(what, ": attribute scale=", scale, " is not supported (only 1)"));
  }
  const int64_t rank = rankOf(x);
  if (rank != 3 && rank != 4)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": input 0 must be 3-D (B, S, hidden) or 4-D (B, N, S, H), has ",
                     rank < 0 ? std::string("an unknown rank") : absl::StrCat("rank ", rank)));
  const int64_t cosHalf = staticDim(cos, -1);
  if (cosHalf <= 0 || staticDim(sin, -1) != cosHalf)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cos_cache and sin_cache need the same static last dim (rotary_dim / 2)"));
  int64_t head, heads = -1;
  if (rank == 4) {
    head = staticDim(x, 3);
    if (head <= 0) return absl::InvalidArgumentError(absl::StrCat(what, ": head size (dim 3) must be static"));
  } else {
    const int64_t hidden = staticDim(x, 2);
    if (hidden <= 0)
      return absl::InvalidArgumentError(absl::StrCat(what, ": hidden size (dim 2) must be static"));
    if (numHeads > 0) {
      if (hidden % numHeads != 0)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": hidden size ", hidden, " is not a multiple of num_heads ", numHeads));
      head = hidden / numHeads;
    } else if (contrib) {
      head = rotAttr > 0 ? rotAttr : 2 * cosHalf;
      if (hidden % head != 0)
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": hidden size ", hidden, " is not a multiple of the head size ", head));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a 3-D input needs num_heads"));
    }
    heads = hidden / head;
  }
  const int64_t rot = rotAttr > 0 ? rotAttr : head;
  if (rot % 2 != 0 || rot > head || rot != 2 * cosHalf)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": rotary dim ", rot, " must be even, at most the head size ", head,
        " and twice the cos/sin cache's last dim ", cosHalf));
  // Layout: 3-D inputs are rotated as (B, S, N, H), 4-D ones in place as
  // (B, N, S, H); cos/sin are brought to broadcast over the head axis.
  const bool bsnh = rank == 3;
  const int64_t seqAxis = bsnh ? 1 : 2;
  const Rotation r{rot, head, interleaved != 0};
  const int64_t cacheRank = rankOf(cos);
  if (cacheRank < 2 || rankOf(sin) != cacheRank)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cos_cache and sin_cache must have one known rank (2 or 3)"));
  std::tie(cos, sin) = rotationTables(b, r, cos, sin, cacheRank, x->type().dtype);
  Value *c, *s;
  if (pid) {
    const int64_t pr = rankOf(pid);
    if (pr == 2) {
      if (cacheRank != 2)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": with position_ids, cos_cache and sin_cache must be 2-D"));
      c = b.op("Gather", {cos, pid});  // [B, S, head]
      s = b.op("Gather", {sin, pid});
      std::vector<int64_t> ax = {bsnh ? 2 : 1};
      c = b.op("Unsqueeze", {c, b.ints(ax)});
      s = b.op("Unsqueeze", {s, b.ints(ax)});
    } else if (contrib && pr == 1) {
      if (cacheRank != 2)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": cos_cache and sin_cache must be 2-D"));
      Value *pos = positions(b, x, seqAxis, pid);  // [S]
      c = b.op("Gather", {cos, pos});               // [S, head]
      s = b.op("Gather", {sin, pos});
      if (bsnh) {
        c = b.op("Unsqueeze", {c, b.ints({1})});
        s = b.op("Unsqueeze", {s, b.ints({1})});
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": position_ids must be 2-D (B, S)", contrib ? " or 1-D of one element (a start offset)" : "",
          ", has rank ", pr));
    }
  } else {
    if (cacheRank != 3)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": without position_ids, cos_cache and sin_cache must be 3-D (B, S, rotary_dim / 2)"));
    std::vector<int64_t> ax = {bsnh ? 2 : 1};
    c = b.op("Unsqueeze", {cos, b.ints(ax)});
    s = b.op("Unsqueeze", {sin, b.ints(ax)});
  }
  if (!bsnh) {
    rotate(b, r, x, c, s, true);
    return b.done();
  }
  Value *x4 = b.op("Reshape", {x, b.ints({0, 0, heads, head})});
  Value *y4 = rotate(b, r, x4, c, s, false);
  return b.finish("Reshape", {y4, b.ints({0, 0, heads * head})});
}

// --- attention --------------------------------------------------------------

/// A [S, L] additive mask of -inf above diagonal \p k (Trilu upper=1) or at
/// and below it (upper=0), 0 elsewhere; S and L are dim 1 of \p q3 / \p k3.
Value *triMask(ExpansionBuilder &b, DType dt, Value *sq, Value *sk, int64_t k, bool upper) {
  Value *shape = b.op("Concat", {sq, sk}, axisAttr(0));
  Value *full = b.op("ConstantOfShape", {shape},
                     {{"value", Attribute(ir::Tensor::fromDoubles(dt, {1}, {-kInf}))}});
  Value *kv = b.constant(ir::Tensor::scalarInt(DType::kI64, k));
  return b.op("Trilu", {full, kv}, {{"upper", Attribute(int64_t{upper ? 1 : 0})}});
}

/// Softmax(scores) · v -> (B, S, N * Hv) through the (B, N, S, Hv) product,
/// defining spec output 0.
void attentionTail(ExpansionBuilder &b, Value *scores, Value *v4, int64_t heads, int64_t hv) {
  Value *p = b.op("Softmax", {scores}, axisAttr(-1));
  Value *o = b.op("MatMul", {p, v4});
  Value *t = b.op("Transpose", {o}, {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
  b.named("Reshape", {t, b.ints({0, 0, heads * hv})}, {0});
}

ir::AttributeMap perm(std::vector<int64_t> p) { return {{"perm", Attribute(std::move(p))}}; }

/// 0, 1, .., n - 1 (int64) for \p n a 1-element int64 tensor.
Value *iota(ExpansionBuilder &b, Value *n) {
  return b.op("Range", {b.constant(ir::Tensor::scalarInt(DType::kI64, 0)),
                        b.op("Reshape", {n, b.ints({})}),
                        b.constant(ir::Tensor::scalarInt(DType::kI64, 1))});
}

/// (B, L) bool: key j is valid when j < lengths[b]; \p sk holds L,
/// \p lengths is (B) of any integer dtype.
Value *keysBelow(ExpansionBuilder &b, Value *sk, Value *lengths) {
  Value *len = b.op("Cast", {lengths}, {{"to", Attribute(static_cast<int64_t>(DType::kI64))}});
  return b.op("Less", {iota(b, sk), b.op("Unsqueeze", {len, b.ints({1})})});
}

/// Multi-head attention once Q, K and V are laid out per head: the MatMul /
/// Softmax / MatMul an exporter writes (which the attention rewrite fuses).
struct MhaParts {
  std::string what;
  Value *q4 = nullptr;                 ///< (B, S, N, H)
  Value *k4 = nullptr, *v4 = nullptr;  ///< (B, L, N, H / Hv), or (B, N, L, ·) when kvBnsh
  bool kvBnsh = false;
  int64_t heads = 0, hv = 0;
  double scale = 1.0, filter = -10000.0;
  bool causal = false;
  Value *mask = nullptr;  ///< (B) lengths, (B, L) or (B, S, L) 0/1; mask_filter_value on 0
  size_t maskInput = 0;   ///< for messages
  const char *maskName = "";
  int64_t batch = -1;     ///< static B, -1 if unknown
  Value *bias = nullptr;  ///< added to the scaled scores (attention_bias)
  int presentK = -1, presentV = -1;  ///< spec outputs defined as K / V in BNSH
  bool bnshKV = false;    ///< build K and V in BNSH for the caller
};

/// Adds the attention of \p p, defining spec output 0 as (B, S, N * Hv).
/// \returns K and V in BNSH when p.bnshKV or present outputs asked for them
/// (else nullptr).
absl::StatusOr<std::pair<Value *, Value *>> mhaCore(ExpansionBuilder &b, DType dt,
                                                    const MhaParts &p) {
  const std::string &what = p.what;
  Value *qT = b.op("Transpose", {p.q4}, perm({0, 2, 1, 3}));  // (B, N, S, H)
  auto toBnsh = [&](Value *x, int out) {
    return out >= 0 ? b.named("Transpose", {x}, {out}, perm({0, 2, 1, 3}))->output(0)
                    : b.op("Transpose", {x}, perm({0, 2, 1, 3}));
  };
  Value *kB = nullptr, *vB = nullptr;
  if (p.kvBnsh) {
    kB = p.k4;
    vB = p.v4;
    if (p.presentK >= 0) b.named("Identity", {kB}, {p.presentK});
    if (p.presentV >= 0) b.named("Identity", {vB}, {p.presentV});
  } else {
    if (p.presentK >= 0 || p.bnshKV) kB = toBnsh(p.k4, p.presentK);
    vB = toBnsh(p.v4, p.presentV);
  }
  Value *kT = kB ? b.op("Transpose", {kB}, perm({0, 1, 3, 2}))
                 : b.op("Transpose", {p.k4}, perm({0, 2, 3, 1}));  // (B, N, H, L)
  Value *scores = b.op("Mul", {b.op("MatMul", {qT, kT}), b.scalar(dt, p.scale)});
  // Sizes S and L as run-time dims (folded once bound).
  Value *sq = dimOf(b, qT, 2), *sk = dimOf(b, kT, 3);
  if (Value *m = p.mask) {
    const int64_t mr = rankOf(m);
    Value *keep;
    std::vector<int64_t> unsq = {1, 2};
    Value *zero = b.constant(ir::Tensor::scalarInt(m->type().dtype, 0));
    if (mr == 2 || mr == 3) {
      keep = b.op("Greater", {m, zero});  // (B, L) or (B, S, L)
      if (mr == 3) unsq = {1};
    } else if (mr == 1 && staticDim(m, 0) >= 0 && p.batch >= 0 && staticDim(m, 0) != p.batch) {
      return unsupported(absl::StrCat(what, ": input ", p.maskInput, " (", p.maskName,
                                      ") of shape (", staticDim(m, 0),
                                      ") other than (batch_size) key lengths is not supported"));
    } else if (mr == 1) {
      keep = keysBelow(b, sk, m);  // (B) key lengths
    } else {
      return unsupported(absl::StrCat(what, ": input ", p.maskInput, " (", p.maskName, ") of rank ",
                                      mr, " is not supported (only (B) lengths, (B, L), (B, S, L))"));
    }
    Value *add = b.op("Where", {keep, b.scalar(dt, 0.0), b.scalar(dt, p.filter)});
    scores = b.op("Add", {scores, b.op("Unsqueeze", {add, b.ints(unsq)})});
  }
  if (p.bias) scores = b.op("Add", {scores, p.bias});
  if (p.causal) scores = b.op("Add", {scores, triMask(b, dt, sq, sk, 1, true)});
  attentionTail(b, scores, vB, p.heads, p.hv);
  return std::make_pair(kB, vB);
}

absl::StatusOr<std::vector<Node *>> expandMha(const NodeSpec &spec, ExpansionBuilder &b) {
  const std::string what = "MultiHeadAttention";
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 4));
  FUSEC_ASSIGN_OR_RETURN(Value * q, requiredInput(spec, 0));
  // q, k, v are rebound to expansion values below, which have no types yet:
  // shapes are read from the inputs.
  const Value *query = q;
  const DType dt = q->type().dtype;
  Value *k = optionalInput(spec, 1), *v = optionalInput(spec, 2), *bias = optionalInput(spec, 3);
  Value *kpm = optionalInput(spec, 4), *ab = optionalInput(spec, 5);
  FUSEC_ASSIGN_OR_RETURN(int64_t heads, intAttr(spec, "num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t unidirectional, intAttr(spec, "unidirectional", 0));
  FUSEC_ASSIGN_OR_RETURN(double scale, floatAttr(spec, "scale", 0.0));
  FUSEC_ASSIGN_OR_RETURN(double filter, floatAttr(spec, "mask_filter_value", -10000.0));
  if (heads <= 0) return absl::InvalidArgumentError(absl::StrCat(what, ": num_heads must be > 0"));

  // Q, K, V as (B, S, N, H) (or K/V already (B, N, L, H): kvBnsh).
  Value *q4, *k4, *v4;
  bool kvBnsh = false;
  int64_t head, hv;
  const int64_t qr = rankOf(q);
  if (qr == 5) {
    if (k || v || bias)
      return unsupported(absl::StrCat(what, ": packed QKV (query of rank 5) with key, value or bias "
                                      "inputs is not supported"));
    if (staticDim(q, 3) != 3 || staticDim(q, 2) != heads || staticDim(q, 4) <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": packed QKV must be (B, S, num_heads, 3, H) with static N and H"));
    head = hv = staticDim(q, 4);
    std::vector<Value *> parts = b.ops("Split", {q, b.ints({1, 1, 1})}, 3, axisAttr(3));
    q4 = b.op("Squeeze", {parts[0], b.ints({3})});
    k4 = b.op("Squeeze", {parts[1], b.ints({3})});
    v4 = b.op("Squeeze", {parts[2], b.ints({3})});
  } else if (qr == 3) {
    const int64_t d = staticDim(q, 2);
    if (d <= 0 || d % heads != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": query hidden size (dim 2) must be static and a multiple of num_heads ", heads));
    head = d / heads;
    if (!k) return absl::InvalidArgumentError(absl::StrCat(what, ": input 1 (key) is missing"));
    const int64_t kr = rankOf(k);
    if (kr == 5) {
      if (v || bias)
        return unsupported(absl::StrCat(what, ": packed KV (key of rank 5) with value or bias "
                                        "inputs is not supported"));
      if (staticDim(k, 3) != 2 || staticDim(k, 2) != heads || staticDim(k, 4) != head)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": packed KV must be (B, L, num_heads, 2, H)"));
      hv = head;
      std::vector<Value *> parts = b.ops("Split", {k, b.ints({1, 1})}, 2, axisAttr(3));
      k4 = b.op("Squeeze", {parts[0], b.ints({3})});
      v4 = b.op("Squeeze", {parts[1], b.ints({3})});
    } else if (kr == 4) {
      if (!v || rankOf(v) != 4)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": a 4-D key (B, N, L, H) needs a 4-D value"));
      if (bias)
        return unsupported(absl::StrCat(what, ": bias with BNSH key/value is not supported"));
      if (staticDim(k, 1) != heads || staticDim(k, 3) != head || staticDim(v, 1) != heads ||
          staticDim(v, 3) <= 0)
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": BNSH key/value must be (B, num_heads, L, H) with static H"));
      hv = staticDim(v, 3);
      k4 = k;
      v4 = v;
      kvBnsh = true;
    } else if (kr == 3) {
      if (!v || rankOf(v) != 3)
        return absl::InvalidArgumentError(absl::StrCat(what, ": a 3-D key needs a 3-D value"));
      const int64_t dv = staticDim(v, 2);
      if (staticDim(k, 2) != d || dv <= 0 || dv % heads != 0)
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": key must be (B, L, ", d, ") and value (B, L, Dv) with Dv a multiple of num_heads"));
      hv = dv / heads;
      if (bias) {
        if (staticDim(bias, 0) != 2 * d + dv || rankOf(bias) != 1)
          return absl::InvalidArgumentError(
              absl::StrCat(what, ": bias must be 1-D of ", 2 * d + dv, " elements"));
        q = b.op("Add", {q, slice(b, bias, 0, 0, d)});
        k = b.op("Add", {k, slice(b, bias, 0, d, 2 * d)});
        v = b.op("Add", {v, slice(b, bias, 0, 2 * d, 2 * d + dv)});
      }
      k4 = b.op("Reshape", {k, b.ints({0, 0, heads, head})});
      v4 = b.op("Reshape", {v, b.ints({0, 0, heads, hv})});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(what, ": key must be of rank 3, 4 or 5"));
    }
    q4 = b.op("Reshape", {q, b.ints({0, 0, heads, head})});
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, ": query must be of rank 3 or 5"));
  }
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(head));
  MhaParts parts;
  parts.what = what;
  parts.q4 = q4;
  parts.k4 = k4;
  parts.v4 = v4;
  parts.kvBnsh = kvBnsh;
  parts.heads = heads;
  parts.hv = hv;
  parts.scale = scale;
  parts.filter = filter;
  parts.causal = unidirectional != 0;
  parts.mask = kpm;
  parts.maskInput = 4;
  parts.maskName = "key_padding_mask";
  parts.batch = staticDim(query, 0);
  parts.bias = ab;
  parts.presentK = wants(spec, 1) ? 1 : -1;
  parts.presentV = wants(spec, 2) ? 2 : -1;
  FUSEC_RETURN_IF_ERROR(mhaCore(b, dt, parts).status());
  return b.done();
}

absl::StatusOr<std::vector<Node *>> expandAttention(const NodeSpec &spec, ExpansionBuilder &b) {
  const std::string what = "Attention";
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 2));
  FUSEC_ASSIGN_OR_RETURN(Value * x, requiredInput(spec, 0));
  FUSEC_ASSIGN_OR_RETURN(Value * w, requiredInput(spec, 1));
  const DType dt = x->type().dtype;
  Value *bias = optionalInput(spec, 2), *mask = optionalInput(spec, 3), *ab = optionalInput(spec, 5);
  FUSEC_ASSIGN_OR_RETURN(int64_t heads, intAttr(spec, "num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t unidirectional, intAttr(spec, "unidirectional", 0));
  FUSEC_ASSIGN_OR_RETURN(double scale, floatAttr(spec, "scale", 0.0));
  FUSEC_ASSIGN_OR_RETURN(double filter, floatAttr(spec, "mask_filter_value", -10000.0));
  FUSEC_ASSIGN_OR_RETURN(int64_t rotary, intAttr(spec, "do_rotary", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t share, intAttr(spec, "past_present_share_buffer", 0));
  if (rotary != 0) return unsupported(absl::StrCat(what, ": do_rotary=1 is not supported"));
  if (share != 0)
    return unsupported(absl::StrCat(what, ": past_present_share_buffer=1 is not supported"));
  if (heads <= 0) return absl::InvalidArgumentError(absl::StrCat(what, ": num_heads must be > 0"));
  if (rankOf(x) != 3 || rankOf(w) != 2)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": input must be (B, S, input_hidden) and weights 2-D"));
  const int64_t total = staticDim(w, 1);
  std::vector<int64_t> sizes;
  if (auto it = spec.attrs.find("qkv_hidden_sizes"); it != spec.attrs.end()) {
    if (it->second.kind() != Attribute::Kind::kInts || it->second.ints().size() != 3)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": qkv_hidden_sizes must be a list of 3 ints"));
    sizes = it->second.ints();
  } else if (total > 0 && total % 3 == 0) {
    sizes = {total / 3, total / 3, total / 3};
  }
  if (sizes.size() != 3 || total != sizes[0] + sizes[1] + sizes[2] || sizes[0] != sizes[1] ||
      sizes[0] <= 0 || sizes[2] <= 0 || sizes[0] % heads != 0 || sizes[2] % heads != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": weights (input_hidden, Dq + Dk + Dv) need a static last dim, Dq = Dk and each a "
              "multiple of num_heads"));
  const int64_t head = sizes[0] / heads, hv = sizes[2] / heads;
  Value *qkv = b.op("MatMul", {x, w});
  if (bias) qkv = b.op("Add", {qkv, bias});
  std::vector<Value *> parts3 = b.ops("Split", {qkv, b.ints(sizes)}, 3, axisAttr(2));
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(head));
  MhaParts parts;
  parts.what = what;
  parts.q4 = b.op("Reshape", {parts3[0], b.ints({0, 0, heads, head})});
  parts.k4 = b.op("Reshape", {parts3[1], b.ints({0, 0, heads, head})});
  parts.v4 = b.op("Reshape", {parts3[2], b.ints({0, 0, heads, hv})});
  parts.heads = heads;
  parts.hv = hv;
  parts.scale = scale;
  parts.filter = filter;
  parts.causal = unidirectional != 0;
  parts.mask = mask;
  parts.maskInput = 3;
  parts.maskName = "mask_index";
  parts.batch = staticDim(x, 0);
  parts.bias = ab;
  parts.bnshKV = wants(spec, 1);
  FUSEC_ASSIGN_OR_RETURN(auto kv, mhaCore(b, dt, parts));
  if (wants(spec, 1)) {
    // present: K and V stacked, (2, B, N, L, H).
    if (head != hv)
      return unsupported(absl::StrCat(what, ": output 1 (present) with different K and V head sizes"));
    b.named("Concat",
            {b.op("Unsqueeze", {kv.first, b.ints({0})}), b.op("Unsqueeze", {kv.second, b.ints({0})})},
            {1}, axisAttr(0));
  }
  return b.done();
}

/// K or V (B, Hkv, L, \p head) with each head repeated \p g times,
/// [h0 x g, h1 x g, ..] -> (B, \p heads = Hkv * g, L, head): the GQA repeat as exporters
/// write it, which the attention rewrite removes (kv_num_heads).
Value *repeatKvHeads(ExpansionBuilder &b, Value *x, int64_t g, int64_t heads, int64_t head) {
  Value *u = b.op("Unsqueeze", {x, b.ints({2})});
  Value *e = b.op("Expand", {u, b.ints({1, 1, g, 1, 1})});
  return b.op("Reshape", {e, b.ints({0, heads, -1, head})});
}

absl::StatusOr<std::vector<Node *>> expandGqa(const NodeSpec &spec, ExpansionBuilder &b) {
  const std::string what = "GroupQueryAttention";
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 4));
  FUSEC_ASSIGN_OR_RETURN(Value * q, requiredInput(spec, 0));
  const DType dt = q->type().dtype;
  Value *k = optionalInput(spec, 1), *v = optionalInput(spec, 2);
  Value *ab = optionalInput(spec, 10);
  FUSEC_ASSIGN_OR_RETURN(Value * seqlensK, requiredInput(spec, 5));
  FUSEC_ASSIGN_OR_RETURN(Value * total, requiredInput(spec, 6));
  FUSEC_ASSIGN_OR_RETURN(int64_t heads, intAttr(spec, "num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t kvHeads, intAttr(spec, "kv_num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(double scale, floatAttr(spec, "scale", 0.0));
  FUSEC_ASSIGN_OR_RETURN(double softcap, floatAttr(spec, "softcap", 0.0));
  FUSEC_ASSIGN_OR_RETURN(int64_t window, intAttr(spec, "local_window_size", -1));
  FUSEC_ASSIGN_OR_RETURN(int64_t doRotary, intAttr(spec, "do_rotary", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t interleaved, intAttr(spec, "rotary_interleaved", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t causal, intAttr(spec, "causal", 1));
  FUSEC_ASSIGN_OR_RETURN(int64_t smooth, intAttr(spec, "smooth_softmax", -1));
  FUSEC_ASSIGN_OR_RETURN(int64_t qkOut, intAttr(spec, "qk_output", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t windowCache, intAttr(spec, "sliding_window_cache", 0));
  FUSEC_ASSIGN_OR_RETURN(std::string kq, stringAttr(spec, "k_quant_type", "NONE"));
  FUSEC_ASSIGN_OR_RETURN(std::string vq, stringAttr(spec, "v_quant_type", "NONE"));
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": num_heads (", heads, ") must be a positive multiple of kv_num_heads (", kvHeads, ")"));
  if (smooth > 0) return unsupported(absl::StrCat(what, ": smooth_softmax=1 is not supported"));
  if (qkOut != 0) return unsupported(absl::StrCat(what, ": qk_output != 0 is not supported"));
  if (windowCache != 0)
    return unsupported(absl::StrCat(what, ": sliding_window_cache=1 is not supported"));
  if (kq != "NONE" || vq != "NONE" || spec.attrs.count("kv_cache_bit_width"))
    return unsupported(absl::StrCat(what, ": a quantised KV cache is not supported"));
  if (causal != 0 && causal != 1)
    return absl::InvalidArgumentError(absl::StrCat(what, ": causal must be 0 or 1"));
  if (causal == 0 && window > 0)
    return absl::InvalidArgumentError(absl::StrCat(what, ": local_window_size needs causal=1"));
  if (softcap > 0.0 && ab)
    return unsupported(absl::StrCat(what, ": softcap together with attention_bias is not supported"));
  if (rankOf(q) != 3) return absl::InvalidArgumentError(absl::StrCat(what, ": query must be 3-D"));
  const int64_t d = staticDim(q, 2);
  const int64_t sq = staticDim(q, 1);  // read before q is rebound to an untyped split
  int64_t head;
  if (!k && !v) {
    if (d <= 0 || d % (heads + 2 * kvHeads) != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": packed QKV hidden size must be static and a multiple of num_heads + 2 * kv_num_heads"));
    head = d / (heads + 2 * kvHeads);
    std::vector<Value *> parts = b.ops(
        "Split", {q, b.ints({heads * head, kvHeads * head, kvHeads * head})}, 3, axisAttr(2));
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    if (!k || !v) return absl::InvalidArgumentError(absl::StrCat(what, ": key and value go together"));
    if (d <= 0 || d % heads != 0)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": query hidden size must be static and a multiple of num_heads"));
    head = d / heads;
    if (rankOf(k) != 3 || rankOf(v) != 3 || staticDim(k, 2) != kvHeads * head ||
        staticDim(v, 2) != kvHeads * head)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": key and value must be (B, S, kv_num_heads * head_size = ", kvHeads * head, ")"));
  }
  // Without a past, the key sequence is the query's and total_sequence_length
  // must equal it (one known value is checked here).
  if (total->isConstant() && total->constant()->numElements() == 1 && sq > 0 &&
      total->constant()->getInt(0) != sq)
    return unsupported(absl::StrCat(
        what, ": total_sequence_length ", total->constant()->getInt(0), " != sequence length ", sq,
        " needs a past KV cache, which is not supported"));
  // seqlens_k[b] is the index of batch b's last key: a constant one must lie
  // in [0, total_sequence_length) (onnxruntime refuses others).
  if (seqlensK->isConstant() && total->isConstant() && total->constant()->numElements() == 1) {
    const ir::Tensor *sl = seqlensK->constant();
    const int64_t totalLen = total->constant()->getInt(0);
    for (int64_t i = 0; i < sl->numElements(); ++i)
      if (sl->getInt(i) < 0 || sl->getInt(i) >= totalLen)
        return absl::InvalidArgumentError(absl::StrCat(what, ": seqlens_k[", i, "] = ", sl->getInt(i),
                                                       " is out of range [0, ", totalLen,
                                                       ") (total_sequence_length ", totalLen, ")"));
  }
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(head));

  Value *q4 = b.op("Reshape", {q, b.ints({0, 0, heads, head})});  // (B, S, N, H)
  Value *k4 = b.op("Reshape", {k, b.ints({0, 0, kvHeads, head})});
  Value *v4 = b.op("Reshape", {v, b.ints({0, 0, kvHeads, head})});
  if (doRotary != 0) {
    FUSEC_ASSIGN_OR_RETURN(Value * cosCache, requiredInput(spec, 7));
    FUSEC_ASSIGN_OR_RETURN(Value * sinCache, requiredInput(spec, 8));
    const int64_t half = staticDim(cosCache, 1);
    if (rankOf(cosCache) != 2 || half <= 0 || staticDim(sinCache, 1) != half || 2 * half > head)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": cos_cache/sin_cache must be (max_sequence_length, rotary_dim / 2) with rotary_dim <= head size"));
    const Rotation r{2 * half, head, interleaved != 0};
    std::tie(cosCache, sinCache) = rotationTables(b, r, cosCache, sinCache, 2, dt);
    Value *pos = positions(b, q4, 1, nullptr);
    Value *c = b.op("Unsqueeze", {b.op("Gather", {cosCache, pos}), b.ints({1})});  // (S, 1, H)
    Value *s = b.op("Unsqueeze", {b.op("Gather", {sinCache, pos}), b.ints({1})});
    q4 = rotate(b, r, q4, c, s, false);
    k4 = rotate(b, r, k4, c, s, false);
  }
  Value *qT = b.op("Transpose", {q4}, perm({0, 2, 1, 3}));  // (B, N, S, H)
  auto bnsh = [&](Value *x, size_t out) {
    return wants(spec, out) ? b.named("Transpose", {x}, {static_cast<int>(out)}, perm({0, 2, 1, 3}))->output(0)
                            : b.op("Transpose", {x}, perm({0, 2, 1, 3}));
  };
  Value *kB = bnsh(k4, 1), *vB = bnsh(v4, 2);  // (B, Nkv, S, H) = present_key / present_value
  if (heads != kvHeads) {
    // The GQA repeat as exporters write it (the attention rewrite removes it).
    kB = repeatKvHeads(b, kB, heads / kvHeads, heads, head);
    vB = repeatKvHeads(b, vB, heads / kvHeads, heads, head);
  }
  Value *kT = b.op("Transpose", {kB}, perm({0, 1, 3, 2}));
  Value *scores = b.op("Mul", {b.op("MatMul", {qT, kT}), b.scalar(dt, scale)});
  if (softcap > 0.0)
    scores = b.op("Mul", {b.op("Tanh", {b.op("Div", {scores, b.scalar(dt, softcap)})}),
                          b.scalar(dt, softcap)});
  if (ab) scores = b.op("Add", {scores, ab});
  Value *sqv = dimOf(b, qT, 2), *skv = dimOf(b, kT, 3);
  if (causal != 0) {
    scores = b.op("Add", {scores, triMask(b, dt, sqv, skv, 1, true)});
    // Key j is visible from query i when i - j < local_window_size (the
    // window holds W keys, the query's own included: ONNX Runtime's CPU
    // provider).
    if (window > 0) scores = b.op("Add", {scores, triMask(b, dt, sqv, skv, -window, false)});
  } else {
    // Bidirectional: keys past seqlens_k[b] (right padding) are masked.
    Value *l = b.op("Reshape", {skv, b.ints({})});
    Value *idx = b.op("Range", {b.constant(ir::Tensor::scalarInt(DType::kI64, 0)), l,
                                b.constant(ir::Tensor::scalarInt(DType::kI64, 1))});
    Value *last = b.op("Cast", {seqlensK}, {{"to", Attribute(static_cast<int64_t>(DType::kI64))}});
    Value *keep = b.op("LessOrEqual", {idx, b.op("Unsqueeze", {last, b.ints({1})})});  // (B, L)
    Value *add = b.op("Where", {keep, b.scalar(dt, 0.0), b.scalar(dt, -kInf)});
    scores = b.op("Add", {scores, b.op("Unsqueeze", {add, b.ints({1, 2})})});
  }
  attentionTail(b, scores, vB, heads, head);
  return b.done();
}

// --- ai.onnx Attention (opsets 23-25) ---------------------------------------

/// The query rows a scalar-offset index mask leaves without a key: query i
/// attends key j iff (causal: j <= i + off) and (left >= 0: j >= i + off -
/// left) and (right >= 0: j <= i + off + right), j in [0, L). \returns
/// true when some row of [0, S) has no key, or when S / L are unknown and
/// a window could empty a row (causal alone with off >= 0 never does).
bool indexMaskEmptiesRow(int64_t S, int64_t L, int64_t off, bool causal, int64_t left,
                         int64_t right) {
  if (left < 0 && right < 0) return causal && off < 0;
  if (S < 0 || L < 0) return true;
  for (int64_t i = 0; i < S; ++i) {
    int64_t lo = 0, hi = L - 1;
    if (causal) hi = std::min(hi, i + off);
    if (right >= 0) hi = std::min(hi, i + off + right);
    if (left >= 0) lo = std::max(lo, i + off - left);
    if (lo > hi) return true;
  }
  return false;
}

/// ONNX Attention (onnx/defs/nn Attention-23/24/25; semantics of the ONNX
/// reference implementation onnx/reference/ops/op_attention.py):
///   Q (B, Hq, S, D) or (B, S, Hq*D), K (B, Hkv, Lnew, D) / (B, Lnew, Hkv*D),
///   V likewise with head size Dv; past_key/past_value (B, Hkv, P, ·) are
///   concatenated in front (present_key/present_value, L = P + Lnew);
///   s = (Q * sqrt(scale)) · (K * sqrt(scale))ᵀ, scale = 1/sqrt(D) when absent;
///   s = softcap * tanh(s / softcap) when softcap > 0 (before the mask);
///   bias = attn_mask (bool: 0 / -inf; float; a last dim shorter than L is
///   padded with -inf) + causal (j <= i + off) + window (left / right) +
///   padding (j < nonpad_kv_seqlen[b]), off = P, or nonpad_kv_seqlen[b] - S
///   with nonpad_kv_seqlen (opset 24), else 0;
///   P = softmax(s + bias) in softmax_precision, rows whose bias is all -inf
///   set to 0; Y = P · repeat(V) in Q's layout. qk_matmul_output: modes 0/1
///   the (softcapped) scores, 2 with the bias, 3 P.
/// The plain, causal and GQA forms are what the attention rewrite fuses
/// (scale on Q and Kᵀ, the Trilu masks of triMask, repeatKvHeads); the
/// fully-masked-row guard is added only when a row can lose every key (any
/// attn_mask or nonpad_kv_seqlen, or a window that does), and is not fused.
absl::StatusOr<std::vector<Node *>> expandOnnxAttention(const NodeSpec &spec,
                                                        ExpansionBuilder &b) {
  const std::string what = "Attention";
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 4));
  FUSEC_ASSIGN_OR_RETURN(Value * q, requiredInput(spec, 0));
  FUSEC_ASSIGN_OR_RETURN(Value * k, requiredInput(spec, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * v, requiredInput(spec, 2));
  const Value *query = q, *key = k;
  Value *mask = optionalInput(spec, 3), *pastK = optionalInput(spec, 4),
        *pastV = optionalInput(spec, 5), *nonpad = optionalInput(spec, 6);
  const DType dt = q->type().dtype;
  FUSEC_ASSIGN_OR_RETURN(int64_t causal, intAttr(spec, "is_causal", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t qHeads, intAttr(spec, "q_num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t kvHeads, intAttr(spec, "kv_num_heads", 0));
  FUSEC_ASSIGN_OR_RETURN(double softcap, floatAttr(spec, "softcap", 0.0));
  FUSEC_ASSIGN_OR_RETURN(int64_t mode, intAttr(spec, "qk_matmul_output_mode", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t left, intAttr(spec, "left_window_size", -1));
  FUSEC_ASSIGN_OR_RETURN(int64_t right, intAttr(spec, "right_window_size", -1));
  FUSEC_ASSIGN_OR_RETURN(int64_t precision, intAttr(spec, "softmax_precision", 0));
  const bool hasScale = spec.attrs.count("scale") != 0;
  FUSEC_ASSIGN_OR_RETURN(double scale, floatAttr(spec, "scale", 0.0));
  if (!ir::isFloat(dt))
    return absl::InvalidArgumentError(absl::StrCat(what, ": Q must be a float tensor"));
  if (mode < 0 || mode > 3)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": qk_matmul_output_mode must be 0..3, is ", mode));
  if (left < -1 || right < -1)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": left_window_size / right_window_size must be -1 or >= 0"));
  if (softcap < 0.0)
    return absl::InvalidArgumentError(absl::StrCat(what, ": softcap must be >= 0"));
  if ((pastK == nullptr) != (pastV == nullptr))
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": past_key and past_value go together"));
  if (nonpad && pastK)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": nonpad_kv_seqlen cannot be combined with past_key/past_value"));
  DType softmaxType = dt;
  if (precision != 0) {
    softmaxType = static_cast<DType>(precision);
    if (!ir::isFloat(softmaxType))
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": softmax_precision ", precision, " is not a float type"));
  }
  const int64_t rank = rankOf(q);
  if ((rank != 3 && rank != 4) || rankOf(k) != rank || rankOf(v) != rank)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": Q, K and V must all be 3-D or all 4-D"));
  const bool bsd = rank == 3;
  int64_t head, hv;
  Value *qB, *kB, *vB;  // (B, H, S, D)
  if (bsd) {
    if (qHeads <= 0 || kvHeads <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": 3-D inputs need q_num_heads and kv_num_heads > 0"));
    const int64_t dq = staticDim(q, 2), dk = staticDim(k, 2), dv = staticDim(v, 2);
    if (dq <= 0 || dq % qHeads != 0 || dk <= 0 || dk % kvHeads != 0 || dv <= 0 ||
        dv % kvHeads != 0 || dq / qHeads != dk / kvHeads)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": 3-D Q (B, S, q_num_heads * D), K (B, L, kv_num_heads * D) and V (B, L, "
                "kv_num_heads * Dv) need static hidden sizes that divide into the heads"));
    head = dq / qHeads;
    hv = dv / kvHeads;
    auto split = [&](Value *x, int64_t n, int64_t h) {
      return b.op("Transpose", {b.op("Reshape", {x, b.ints({0, 0, n, h})})}, perm({0, 2, 1, 3}));
    };
    qB = split(q, qHeads, head);
    kB = split(k, kvHeads, head);
    vB = split(v, kvHeads, hv);
  } else {
    const int64_t nq = staticDim(q, 1), nk = staticDim(k, 1);
    head = staticDim(q, 3);
    hv = staticDim(v, 3);
    if (nq <= 0 || nk <= 0 || staticDim(v, 1) != nk || head <= 0 || staticDim(k, 3) != head ||
        hv <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": 4-D Q (B, Hq, S, D), K (B, Hkv, L, D) and V (B, Hkv, L, Dv) need static head "
                "counts and head sizes"));
    if ((qHeads > 0 && qHeads != nq) || (kvHeads > 0 && kvHeads != nk))
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": q_num_heads / kv_num_heads contradict the 4-D inputs' head counts ", nq, " / ",
          nk));
    qHeads = nq;
    kvHeads = nk;
    qB = q;
    kB = k;
    vB = v;
  }
  if (qHeads % kvHeads != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": q_num_heads (", qHeads, ") must be a multiple of kv_num_heads (", kvHeads, ")"));
  const int64_t seqAxis = bsd ? 1 : 2;
  const int64_t S = staticDim(query, seqAxis);
  int64_t P = 0;
  if (pastK) {
    if (rankOf(pastK) != 4 || rankOf(pastV) != 4 || staticDim(pastK, 1) != kvHeads ||
        staticDim(pastV, 1) != kvHeads || staticDim(pastK, 3) != head ||
        staticDim(pastV, 3) != hv)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": past_key / past_value must be (B, kv_num_heads, P, D / Dv)"));
    P = staticDim(pastK, 2);
  }
  const int64_t Lnew = staticDim(key, seqAxis);
  const int64_t L = (P >= 0 && Lnew >= 0) ? P + Lnew : -1;

  // present_key / present_value: the cache in BNSH (before the GQA repeat).
  auto present = [&](Value *past, Value *cur, size_t out) -> Value * {
    const int idx = wants(spec, out) ? static_cast<int>(out) : -1;
    if (past) return b.named("Concat", {past, cur}, {idx}, axisAttr(2))->output(0);
    if (idx >= 0) return b.named("Identity", {cur}, {idx})->output(0);
    return cur;
  };
  kB = present(pastK, kB, 1);
  vB = present(pastV, vB, 2);
  if (qHeads != kvHeads) {
    kB = repeatKvHeads(b, kB, qHeads / kvHeads, qHeads, head);
    vB = repeatKvHeads(b, vB, qHeads / kvHeads, qHeads, hv);
  }
  if (!hasScale) scale = 1.0 / std::sqrt(static_cast<double>(head));
  Value *root = b.scalar(dt, std::sqrt(scale));
  Value *kT = b.op("Transpose", {kB}, perm({0, 1, 3, 2}));
  Value *scores = b.op("MatMul", {b.op("Mul", {qB, root}), b.op("Mul", {kT, root})});
  if (softcap > 0.0)
    scores = b.op("Mul", {b.op("Tanh", {b.op("Div", {scores, b.scalar(dt, softcap)})}),
                          b.scalar(dt, softcap)});
  Value *qkOut = scores;  // modes 0 and 1

  // The additive bias, a sum of terms broadcasting to (B, Hq, S, L).
  Value *sq = dimOf(b, qB, 2), *sk = dimOf(b, kB, 2);
  std::vector<Value *> terms;
  bool guard = false;
  Value *negInf = b.scalar(dt, -kInf), *zero = b.scalar(dt, 0.0);
  if (mask) {
    const int64_t mr = rankOf(mask);
    if (mr < 1 || mr > 4)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": attn_mask must have a known rank of 1 to 4"));
    Value *m;
    if (mask->type().dtype == DType::kBool) {
      m = b.op("Where", {mask, zero, negInf});
    } else if (ir::isFloat(mask->type().dtype)) {
      m = mask->type().dtype == dt
              ? mask
              : b.op("Cast", {mask}, {{"to", Attribute(static_cast<int64_t>(dt))}});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": attn_mask must be bool or a float tensor"));
    }
    // A last dim shorter than L is padded with -inf (masked keys).
    const int64_t ml = staticDim(mask, -1);
    if (ml < 0 || L < 0 || ml != L) {
      if (ml >= 0 && L >= 0 && ml > L)
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": attn_mask's last dim ", ml, " exceeds the total sequence length ", L));
      Value *padLen = b.op("Sub", {sk, b.op("Shape", {mask}, {{"start", Attribute(mr - 1)}})});
      std::vector<Value *> pads = {b.ints(std::vector<int64_t>(static_cast<size_t>(2 * mr - 1), 0)),
                                   padLen};
      m = b.op("Pad", {m, b.op("Concat", pads, axisAttr(0)), negInf});
    }
    terms.push_back(m);
    guard = true;
  }
  if (nonpad) {
    if (rankOf(nonpad) != 1)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": nonpad_kv_seqlen must be 1-D (batch_size)"));
    Value *keep = keysBelow(b, sk, nonpad);  // (B, L)
    terms.push_back(
        b.op("Unsqueeze", {b.op("Where", {keep, zero, negInf}), b.ints({1, 2})}));
    guard = true;
  }
  if (causal != 0 || left >= 0 || right >= 0) {
    if (nonpad) {
      // Per-batch offset nonpad_kv_seqlen[b] - S: d = i + off - j, (B, 1, S, L).
      Value *i = b.op("Unsqueeze", {iota(b, sq), b.ints({1})});  // (S, 1)
      Value *j = iota(b, sk);                                     // (L)
      Value *len = b.op("Cast", {nonpad}, {{"to", Attribute(static_cast<int64_t>(DType::kI64))}});
      Value *off = b.op("Reshape", {b.op("Sub", {len, sq}), b.ints({-1, 1, 1, 1})});
      Value *d = b.op("Sub", {b.op("Add", {i, off}), j});
      Value *c0 = b.constant(ir::Tensor::scalarInt(DType::kI64, 0));
      Value *allowed = nullptr;
      auto both = [&](Value *c) { allowed = allowed ? b.op("And", {allowed, c}) : c; };
      if (causal != 0) both(b.op("GreaterOrEqual", {d, c0}));
      if (left >= 0)
        both(b.op("LessOrEqual", {d, b.constant(ir::Tensor::scalarInt(DType::kI64, left))}));
      if (right >= 0)
        both(b.op("GreaterOrEqual", {d, b.constant(ir::Tensor::scalarInt(DType::kI64, -right))}));
      terms.push_back(b.op("Where", {allowed, zero, negInf}));
    } else {
      if (P < 0)
        return unsupported(absl::StrCat(
            what, ": is_causal or a window with a past of unknown length is not supported"));
      if (causal != 0) terms.push_back(triMask(b, dt, sq, sk, P + 1, true));
      if (right >= 0) terms.push_back(triMask(b, dt, sq, sk, P + right + 1, true));
      if (left >= 0) terms.push_back(triMask(b, dt, sq, sk, P - left - 1, false));
      if (indexMaskEmptiesRow(S, L, P, causal != 0, left, right)) guard = true;
    }
  }
  Value *bias = nullptr;
  for (Value *t : terms) bias = bias ? b.op("Add", {bias, t}) : t;
  if (bias) scores = b.op("Add", {scores, bias});
  if (mode == 2) qkOut = scores;
  Value *x = scores;
  if (softmaxType != dt)
    x = b.op("Cast", {x}, {{"to", Attribute(static_cast<int64_t>(softmaxType))}});
  Value *p = b.op("Softmax", {x}, axisAttr(-1));
  if (guard) {
    // A row whose bias is all -inf attends nothing: its probabilities are 0.
    Value *rowMax = b.op("ReduceMax", {bias, b.ints({-1})}, {{"keepdims", Attribute(int64_t{1})}});
    Value *dead = b.op("Equal", {rowMax, negInf});
    p = b.op("Where", {dead, b.scalar(softmaxType, 0.0), p});
  }
  if (softmaxType != dt) p = b.op("Cast", {p}, {{"to", Attribute(static_cast<int64_t>(dt))}});
  if (mode == 3) qkOut = p;
  if (wants(spec, 3)) b.named("Identity", {qkOut}, {3});
  if (!bsd) {
    b.named("MatMul", {p, vB}, {0});
  } else {
    Value *o = b.op("Transpose", {b.op("MatMul", {p, vB})}, perm({0, 2, 1, 3}));
    b.named("Reshape", {o, b.ints({0, 0, qHeads * hv})}, {0});
  }
  return b.done();
}

// --- MatMulNBits ------------------------------------------------------------

absl::StatusOr<std::vector<Node *>> expandMatMulNBits(const NodeSpec &spec, ExpansionBuilder &b) {
  const std::string what = "MatMulNBits";
  FUSEC_RETURN_IF_ERROR(checkOutputs(spec, 1));
  FUSEC_ASSIGN_OR_RETURN(Value * a, requiredInput(spec, 0));
  const DType dt = a->type().dtype;
  FUSEC_ASSIGN_OR_RETURN(int64_t K, intAttr(spec, "K", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t N, intAttr(spec, "N", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t bits, intAttr(spec, "bits", 4));
  FUSEC_ASSIGN_OR_RETURN(int64_t block, intAttr(spec, "block_size", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t prepacked, intAttr(spec, "weight_prepacked", 0));
  // block_size up to 2^16 keeps every product below in range.
  if (K <= 0 || N <= 0 || block < 16 || block > (int64_t{1} << 16) || (block & (block - 1)) != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": attributes K and N must be > 0 and block_size a power of two in [16, 65536] (K=",
        K, ", N=", N, ", block_size=", block, ")"));
  if (!ir::isFloat(dt))
    return absl::InvalidArgumentError(absl::StrCat(what, ": A must be a float tensor"));
  if (bits != 2 && bits != 4 && bits != 8)
    return unsupported(absl::StrCat(what, ": bits=", bits, " is not supported (2, 4 or 8)"));
  if (prepacked != 0)
    return unsupported(absl::StrCat(what, ": weight_prepacked=", prepacked,
                                    " (an execution provider's layout) is not supported"));
  if (staticDim(a, -1) >= 0 && staticDim(a, -1) != K)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": A's last dim ", staticDim(a, -1), " != K ", K));
  FUSEC_ASSIGN_OR_RETURN(const ir::Tensor *qb, constantInput(spec, 1, "B"));
  FUSEC_ASSIGN_OR_RETURN(const ir::Tensor *sc, constantInput(spec, 2, "scales"));
  const ir::Tensor *zp = nullptr;
  if (optionalInput(spec, 3)) {
    FUSEC_ASSIGN_OR_RETURN(zp, constantInput(spec, 3, "zero_points"));
  }
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(dt, {K, N}, "MatMulNBits weight"));
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  const int64_t perByte = 8 / bits, mask = (int64_t{1} << bits) - 1;
  if (!ir::isFloat(sc->dtype()))
    return absl::InvalidArgumentError(absl::StrCat(what, ": scales must be a float tensor"));
  ir::Tensor w(dt, {K, N});
  if (qb->dtype() != DType::kU8)
    return absl::InvalidArgumentError(absl::StrCat(what, ": B must be uint8"));
  // An omitted projection: B with a zero dim is an all-zero weight.
  if (qb->numElements() != 0) {
    if (qb->numElements() != N * blocks * blob)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": B has ", qb->numElements(), " elements, (N, k_blocks, blob_size) = (", N, ", ",
          blocks, ", ", blob, ") needs ", N * blocks * blob));
    if (sc->numElements() != N * blocks)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": scales has ", sc->numElements(), " elements, needs N * k_blocks = ", N * blocks));
    const bool zpPacked = zp && zp->dtype() == DType::kU8;
    const int64_t zpRow = zpPacked ? (blocks * bits + 7) / 8 : blocks;
    if (zp && zp->numElements() != N * zpRow)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": zero_points has ", zp->numElements(), " elements, needs ", N * zpRow));
    if (zp && !zpPacked && zp->dtype() != sc->dtype())
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": unpacked zero_points must have the dtype of scales"));
    const uint8_t *q = qb->data();
    const double defaultZp = static_cast<double>(int64_t{1} << (bits - 1));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const double s = sc->getDouble(n * blocks + blk);
        double z = defaultZp;
        if (zpPacked) {
          const int64_t e = blk;  // element index in row n, packed like B
          const uint8_t byte = zp->data()[n * zpRow + e / perByte];
          z = static_cast<double>((byte >> ((e % perByte) * bits)) & mask);
        } else if (zp) {
          z = zp->getDouble(n * blocks + blk);
        }
        const uint8_t *blobp = q + (n * blocks + blk) * blob;
        for (int64_t i = 0; i < block; ++i) {
          const int64_t kk = blk * block + i;
          if (kk >= K) break;
          const int64_t qv = (blobp[i / perByte] >> ((i % perByte) * bits)) & mask;
          // ONNX Runtime dequantises in float: (q - zp) * scale.
          const float wv = (static_cast<float>(qv) - static_cast<float>(z)) * static_cast<float>(s);
          w.setDouble(kk * N + n, wv);
        }
      }
    }
  }
  Value *wv = b.constant(std::move(w), "_weight");
  if (Value *bias = optionalInput(spec, 5)) return b.finish("Add", {b.op("MatMul", {a, wv}), bias});
  return b.finish("MatMul", {a, wv});
}

}  // namespace

bool isMappedContribOp(std::string_view opType) {
  for (const char *m : kMapped)
    if (opType == m) return true;
  return false;
}

std::string mappedContribOps() { return absl::StrJoin(kMapped, ", "); }

std::string refusedContribForm(std::string_view opType,
                               const std::function<bool(bool output, int index)> &present) {
  for (const PresenceRefusal &r : kRefused)
    if (opType == r.op && present(r.output, r.index))
      return absl::StrCat(r.output ? "output " : "input ", r.index, " (", r.name,
                          ") is not supported: ", r.why);
  return "";
}

absl::StatusOr<std::vector<ir::Node *>> expandContribOp(const NodeSpec &spec,
                                                        ExpansionBuilder &b) {
  const std::string &op = spec.opType;
  if (spec.domain != kContribDomain && op == "Attention") return expandOnnxAttention(spec, b);
  FUSEC_RETURN_IF_ERROR(checkRefusedForms(spec));
  if (op == "Gelu" || op == "FastGelu" || op == "BiasGelu" || op == "QuickGelu")
    return expandGelu(spec, b);
  if (op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization" ||
      op == "SimplifiedLayerNormalization")
    return expandNorm(spec, b);
  if (op == "RotaryEmbedding") return expandRotary(spec, b);
  if (op == "MultiHeadAttention") return expandMha(spec, b);
  if (op == "Attention") return expandAttention(spec, b);
  if (op == "GroupQueryAttention") return expandGqa(spec, b);
  if (op == "MatMulNBits") return expandMatMulNBits(spec, b);
  if (op == "DynamicQuantizeLSTM") return expandDynamicQuantizeLstm(spec, b);
  return absl::InternalError(absl::StrCat("no mapping for com.microsoft ", op));
}

absl::StatusOr<std::vector<ir::Node *>> expandContribNode(
    ir::Graph &graph, NodeSpec spec,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  ExpansionBuilder b(graph, spec, uniqueNodeName);
  return expandContribOp(spec, b);
}

}  // namespace fusec::frontend::internal
