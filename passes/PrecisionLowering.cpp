//===- PrecisionLowering.cpp - Lower an fp32 graph to bf16 / fp16 ---------===//
//
// The "lower-precision" pass turns an fp32 model into a bf16 or fp16 one
// (PassContext::precision: "bf16" or "fp16"; "fp32" or empty is a no-op, any
// other value is InvalidArgument). It runs after canonicalisation and before
// fusion, so fusion and code generation see the low-precision types.
//
// Semantics:
//   - Graph inputs and outputs keep their dtypes, so callers and test data
//     stay the same: each f32 graph input gets a Cast to the low dtype whose
//     result replaces the input in every node (not in the graph outputs);
//     each graph output that was f32 and became low precision gets a Cast
//     back to f32, and the Cast's result takes the output's name (the
//     low-precision value is renamed "<name>_<dtype>").
//   - Every f32 constant (weights, biases, scalars) is converted to the low
//     dtype, round to nearest even, saturating: finite values beyond the low
//     dtype's largest finite value become that value (so a mask constant of
//     -FLT_MAX becomes -65504 in fp16 / -3.39e38 in bf16 rather than -inf,
//     and (1 - mask) * min stays finite instead of 0 * -inf = NaN). The
//     artifact then stores half the weight bytes.
//   - Every f32 value becomes the low dtype: Cast nodes with to=f32 cast to
//     the low dtype; ConstantOfShape and Constant values of f32 are
//     converted; every other node's result dtypes are re-inferred from its
//     (converted) inputs. Float attributes (epsilon, alpha, scale) stay
//     attributes (they are applied in fp32 registers).
//   - Integer, bool and f64 values are untouched. Results an op defines as
//     f32 independently of its inputs (LayerNormalization's optional
//     Mean / InvStdDev with stash_type=1) stay f32.
//   - Accumulation and statistics stay fp32 by construction of the consumers:
//     MatMul / Gemm / Conv become library calls with bf16/f16 operands and an
//     f32 compute type (codegen::GemmParams::compute); Softmax, LogSoftmax,
//     LayerNormalization, RMSNormalization and Reduce* row kernels load the
//     low dtype, compute in f32 registers and store the low dtype. The
//     reference interpreter computes each op in double and rounds its result
//     to the low dtype, which is exactly the "bf16 storage, fp32 math" model.
//
// Precision policy (autocast-style; docs/PRECISION.md). Each op class
// decides the dtype it computes in, whether or not a pattern recognised the
// op (a LayerNorm written in primitive ops, as TensorFlow converters write
// it, is covered like LayerNormalization):
//   low      MatMul, Gemm, Conv, FusedAttention: f32 inputs are cast to the
//            low dtype (fp32 accumulation inside, see above); result low.
//   fp32     sum-like reductions (ReduceMean, ReduceSum, ReduceSumSquare,
//            ReduceL2, ReduceProd, AveragePool, GlobalAveragePool): low
//            inputs are cast up, the result stays f32 (a mean or variance
//            of magnitude 64 has bf16 resolution 0.5: E[x^2] - E[x]^2
//            cancels to garbage); and Exp and Pow, whose results leave the
//            low range (fp16 overflows at exp(11.1) = 65504).
//   fp32-in  every elementwise node from which a sum-like reduction's input
//            is computed, through chains of elementwise ops of any length
//            (x*x, (x-m)^2, exp(x) * mask, where(m, exp(x), 0) * w; views
//            such as Reshape and Transpose are crossed, not marked): it
//            computes in f32 (low inputs cast up) and its result stays f32.
//            Before, only the one op right before the reduction was, so a
//            masked softmax without max-subtraction (Exp -> Mul(mask) ->
//            ReduceSum -> Div) computed exp in fp16 and overflowed to inf
//            and then NaN.
//   promote  every other op: when its float inputs mix f32 and the low
//            dtype, the low ones are cast up and it computes in f32; when
//            all are low it stays low. So a reduction's f32 result keeps the
//            chain that consumes it (x - mean, pow, sqrt, reciprocal, the
//            division by the standard deviation, scale and shift) in f32
//            until the next low op.
//   tail     every node from which no low op is reachable (the graph's
//            tail after its last MatMul/Gemm/Conv: box decode, class
//            scores, softmax over logits) computes in f32, the constants
//            only it reads stay f32, and Conv/ConvTranspose there compute
//            in f32 too: their results would be rounded to the low dtype
//            only to be cast back for an f32 graph output (a YOLO DFL
//            distance of 8..16 has bf16 resolution 0.0625, 2 px at stride
//            32). MatMul/Gemm/FusedAttention there keep low operands and
//            their f32 readers cast them up (folded into the GEMM's D where
//            the backend can, so an LM head runs at the low-precision
//            rate without rounding its logits).
//   Recognised normalisations (LayerNormalization, RMSNormalization,
//   Softmax, LogSoftmax, BatchNormalization) compute in f32 inside their
//   kernels (above) and store their O(1) results low.
//
// Statistics: lower-precision.constants (converted), lower-precision.values
// (results retyped), lower-precision.casts (boundary casts added),
// lower-precision.tail-f32 (tail nodes kept in f32).
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <utility>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/OpTable.h"
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

using ir::DType;

/// The largest finite value of \p t (bf16: 0x7F7F, f16: 65504).
double maxFinite(DType t) {
  return t == DType::kF16 ? 65504.0 : static_cast<double>(ir::bf16ToFloat(0x7F7F));
}

/// \p src (f32) converted to \p low, round to nearest even, saturating.
ir::Tensor convertTensor(const ir::Tensor &src, DType low) {
  ir::Tensor out(low, src.shape());
  const double m = maxFinite(low);
  const int64_t n = src.numElements();
  for (int64_t i = 0; i < n; ++i) {
    double x = src.getDouble(i);
    if (std::isfinite(x)) x = std::max(-m, std::min(m, x));
    out.setDouble(i, x);
  }
  return out;
}

const char *shortName(DType t) { return t == DType::kF16 ? "f16" : "bf16"; }

/// The precision policy class of an op (file comment).
enum class Policy { kLow, kFp32, kPromote };

Policy policyOf(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::kMatMul: case ir::OpKind::kGemm: case ir::OpKind::kConv:
    case ir::OpKind::kConvTranspose: case ir::OpKind::kFusedAttention:
      return Policy::kLow;
    case ir::OpKind::kReduceMean: case ir::OpKind::kReduceSum: case ir::OpKind::kReduceSumSquare:
    case ir::OpKind::kReduceL2: case ir::OpKind::kReduceProd: case ir::OpKind::kAveragePool:
    case ir::OpKind::kGlobalAveragePool: case ir::OpKind::kExp: case ir::OpKind::kPow:
    case ir::OpKind::kCumSum: case ir::OpKind::kGridSample: case ir::OpKind::kRoiAlign: case ir::OpKind::kCumProd: case ir::OpKind::kCompress: case ir::OpKind::kBitCast: case ir::OpKind::kCol2Im: case ir::OpKind::kUnique: case ir::OpKind::kTensorScatter: case ir::OpKind::kNonMaxSuppression: case ir::OpKind::kDet:
      return Policy::kFp32;
    // Everything else: the precision of its inputs, promoted to f32 when
    // they mix f32 and the low dtype.
    case ir::OpKind::kAbs: case ir::OpKind::kNeg: case ir::OpKind::kLog:
    case ir::OpKind::kSqrt: case ir::OpKind::kReciprocal: case ir::OpKind::kErf:
    case ir::OpKind::kTanh: case ir::OpKind::kSigmoid: case ir::OpKind::kRelu:
    case ir::OpKind::kLeakyRelu: case ir::OpKind::kElu: case ir::OpKind::kHardSigmoid:
    case ir::OpKind::kSoftplus: case ir::OpKind::kSwish: case ir::OpKind::kGelu: case ir::OpKind::kSin:
    case ir::OpKind::kCos: case ir::OpKind::kFloor: case ir::OpKind::kCeil:
    case ir::OpKind::kTan: case ir::OpKind::kAsin: case ir::OpKind::kAcos: case ir::OpKind::kAtan: case ir::OpKind::kSinh:
    case ir::OpKind::kCosh: case ir::OpKind::kAsinh: case ir::OpKind::kAcosh: case ir::OpKind::kAtanh:
    case ir::OpKind::kRound: case ir::OpKind::kSign: case ir::OpKind::kNot:
    case ir::OpKind::kIsNaN: case ir::OpKind::kIsInf: case ir::OpKind::kCast:
    case ir::OpKind::kIdentity: case ir::OpKind::kDropout: case ir::OpKind::kClip:
    case ir::OpKind::kAdd: case ir::OpKind::kSub: case ir::OpKind::kMul: case ir::OpKind::kDiv:
    case ir::OpKind::kMod: case ir::OpKind::kMax: case ir::OpKind::kMin:
    case ir::OpKind::kSum: case ir::OpKind::kMean: case ir::OpKind::kEqual: case ir::OpKind::kLess:
    case ir::OpKind::kLessOrEqual: case ir::OpKind::kGreater: case ir::OpKind::kGreaterOrEqual:
    case ir::OpKind::kAnd: case ir::OpKind::kOr: case ir::OpKind::kXor: case ir::OpKind::kWhere:
    case ir::OpKind::kSoftmax: case ir::OpKind::kLogSoftmax: case ir::OpKind::kLayerNormalization:
    case ir::OpKind::kRMSNormalization: case ir::OpKind::kBatchNormalization:
    case ir::OpKind::kReduceMax: case ir::OpKind::kReduceMin: case ir::OpKind::kArgMax:
    case ir::OpKind::kArgMin: case ir::OpKind::kMaxPool: case ir::OpKind::kGlobalMaxPool:
    case ir::OpKind::kReshape: case ir::OpKind::kTranspose: case ir::OpKind::kFlatten:
    case ir::OpKind::kSqueeze: case ir::OpKind::kUnsqueeze: case ir::OpKind::kConcat:
    case ir::OpKind::kSplit: case ir::OpKind::kSlice: case ir::OpKind::kGather:
    case ir::OpKind::kGatherElements: case ir::OpKind::kGatherND: case ir::OpKind::kExpand:
    case ir::OpKind::kTile: case ir::OpKind::kTrilu: case ir::OpKind::kPad:
    case ir::OpKind::kShape: case ir::OpKind::kSize: case ir::OpKind::kConstantOfShape:
    case ir::OpKind::kRange: case ir::OpKind::kConstant: case ir::OpKind::kUnregistered:
    case ir::OpKind::kPRelu: case ir::OpKind::kResize:
    case ir::OpKind::kTopK: case ir::OpKind::kHardmax: case ir::OpKind::kOneHot: case ir::OpKind::kScatterND: case ir::OpKind::kScatterElements: case ir::OpKind::kBitShift: case ir::OpKind::kQuantizeLinear: case ir::OpKind::kDequantizeLinear:
    case ir::OpKind::kBitwiseAnd: case ir::OpKind::kBitwiseOr: case ir::OpKind::kBitwiseXor: case ir::OpKind::kBitwiseNot:
      return Policy::kPromote;
  }
  return Policy::kPromote;  // not reached: the switch covers every OpKind
}

/// The sum-like reductions: their fp32 class reaches back through the
/// elementwise ops their input is computed from ("fp32-in").
bool isSumLikeReduction(ir::OpKind k) {
  return policyOf(k) == Policy::kFp32 && k != ir::OpKind::kExp && k != ir::OpKind::kPow;
}

/// Elementwise ops on float values whose result is computed in f32 when a
/// sum-like reduction's input is computed from it ("fp32-in"): arithmetic,
/// and the selections and bounds of masking (Where, Max, Min, Clip, Relu).
bool isElementwiseArithmetic(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::kAdd: case ir::OpKind::kSub: case ir::OpKind::kMul: case ir::OpKind::kDiv:
    case ir::OpKind::kPow: case ir::OpKind::kExp: case ir::OpKind::kLog: case ir::OpKind::kSqrt:
    case ir::OpKind::kReciprocal: case ir::OpKind::kAbs: case ir::OpKind::kNeg:
    case ir::OpKind::kWhere: case ir::OpKind::kMax: case ir::OpKind::kMin: case ir::OpKind::kClip:
    case ir::OpKind::kRelu: case ir::OpKind::kSum: case ir::OpKind::kMean:
      return true;
    case ir::OpKind::kErf: case ir::OpKind::kTanh: case ir::OpKind::kSigmoid:
    case ir::OpKind::kLeakyRelu: case ir::OpKind::kElu:
    case ir::OpKind::kHardSigmoid: case ir::OpKind::kSoftplus: case ir::OpKind::kSwish: case ir::OpKind::kGelu:
    case ir::OpKind::kSin: case ir::OpKind::kCos: case ir::OpKind::kFloor: case ir::OpKind::kCeil:
    case ir::OpKind::kTan: case ir::OpKind::kAsin: case ir::OpKind::kAcos: case ir::OpKind::kAtan: case ir::OpKind::kSinh:
    case ir::OpKind::kCosh: case ir::OpKind::kAsinh: case ir::OpKind::kAcosh: case ir::OpKind::kAtanh:
    case ir::OpKind::kRound: case ir::OpKind::kSign: case ir::OpKind::kNot:
    case ir::OpKind::kIsNaN: case ir::OpKind::kIsInf: case ir::OpKind::kCast:
    case ir::OpKind::kIdentity: case ir::OpKind::kDropout:
    case ir::OpKind::kMod: case ir::OpKind::kEqual: case ir::OpKind::kLess:
    case ir::OpKind::kLessOrEqual: case ir::OpKind::kGreater: case ir::OpKind::kGreaterOrEqual:
    case ir::OpKind::kAnd: case ir::OpKind::kOr: case ir::OpKind::kXor:
    case ir::OpKind::kMatMul: case ir::OpKind::kGemm: case ir::OpKind::kConv:
    case ir::OpKind::kSoftmax: case ir::OpKind::kLogSoftmax: case ir::OpKind::kLayerNormalization:
    case ir::OpKind::kRMSNormalization: case ir::OpKind::kBatchNormalization:
    case ir::OpKind::kReduceMean: case ir::OpKind::kReduceSum: case ir::OpKind::kReduceMax:
    case ir::OpKind::kReduceMin: case ir::OpKind::kReduceProd: case ir::OpKind::kReduceSumSquare:
    case ir::OpKind::kReduceL2: case ir::OpKind::kArgMax: case ir::OpKind::kArgMin:
    case ir::OpKind::kMaxPool: case ir::OpKind::kAveragePool: case ir::OpKind::kGlobalAveragePool:
    case ir::OpKind::kGlobalMaxPool: case ir::OpKind::kReshape: case ir::OpKind::kTranspose:
    case ir::OpKind::kFlatten: case ir::OpKind::kSqueeze: case ir::OpKind::kUnsqueeze:
    case ir::OpKind::kConcat: case ir::OpKind::kSplit: case ir::OpKind::kSlice:
    case ir::OpKind::kGather: case ir::OpKind::kGatherElements: case ir::OpKind::kGatherND:
    case ir::OpKind::kExpand: case ir::OpKind::kTile: case ir::OpKind::kTrilu:
    case ir::OpKind::kPad: case ir::OpKind::kShape: case ir::OpKind::kSize:
    case ir::OpKind::kConstantOfShape: case ir::OpKind::kRange: case ir::OpKind::kConstant:
    case ir::OpKind::kFusedAttention: case ir::OpKind::kUnregistered:
    case ir::OpKind::kPRelu: case ir::OpKind::kCumSum: case ir::OpKind::kGridSample: case ir::OpKind::kRoiAlign: case ir::OpKind::kCumProd: case ir::OpKind::kCompress: case ir::OpKind::kBitCast: case ir::OpKind::kCol2Im: case ir::OpKind::kUnique: case ir::OpKind::kTensorScatter: case ir::OpKind::kNonMaxSuppression: case ir::OpKind::kDet: case ir::OpKind::kResize: case ir::OpKind::kConvTranspose:
    case ir::OpKind::kTopK: case ir::OpKind::kHardmax: case ir::OpKind::kOneHot: case ir::OpKind::kScatterND: case ir::OpKind::kScatterElements: case ir::OpKind::kBitShift: case ir::OpKind::kQuantizeLinear: case ir::OpKind::kDequantizeLinear:
    case ir::OpKind::kBitwiseAnd: case ir::OpKind::kBitwiseOr: case ir::OpKind::kBitwiseXor: case ir::OpKind::kBitwiseNot:
      return false;
  }
  return false;  // not reached: the switch covers every OpKind
}

class PrecisionLowering : public Pass {
 public:
  const char *name() const override { return "lower-precision"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    DType low;
    if (ctx.precision.empty() || ctx.precision == "fp32" || ctx.precision == "f32") return false;
    if (ctx.precision == "bf16") {
      low = DType::kBF16;
    } else if (ctx.precision == "fp16" || ctx.precision == "f16") {
      low = DType::kF16;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown precision '", ctx.precision, "' (expected fp32, fp16 or bf16)"));
    }
    const int32_t lowCode = static_cast<int32_t>(low);
    const std::vector<ir::Node *> nodes = graph.nodes();
    int64_t constants = 0, values = 0, casts = 0;

    // Graph outputs that were f32 before lowering (by position).
    std::vector<bool> outputWasF32;
    for (ir::Value *v : graph.outputs()) outputWasF32.push_back(v && v->type().dtype == DType::kF32);

    // The tail: nodes from which no low-class op is reachable through data
    // operands (a detector's box decode after its last convolution, a
    // classifier's softmax after its last Gemm). Their values end in f32
    // graph outputs, so rounding them to the low dtype would lose accuracy
    // for no speed: they compute in f32 (tailF32). MatMul, Gemm and
    // FusedAttention there keep low operands (an LM head is a large GEMM);
    // their consumers read them cast to f32, which backends whose GEMM
    // library writes f32 D fold into the GEMM (LoweringOptions::
    // foldGemmOutputCast). Nodes are in topological order, so a reverse walk
    // sees every consumer of a node before the node.
    auto keepsLowInTail = [](ir::OpKind k) {
      return k == ir::OpKind::kMatMul || k == ir::OpKind::kGemm || k == ir::OpKind::kFusedAttention;
    };
    absl::flat_hash_map<const ir::Node *, bool> reachesLow;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node *n = *it;
      // Any low-class op ends the tail for its producers, also a Conv that
      // is itself in the tail (and computes in f32): otherwise the tail
      // would grow back through a whole convolutional network.
      const bool through = policyOf(n->kind()) == Policy::kLow || reachesLow[n];
      for (int i = 0; i < n->numInputs(); ++i)
        if (n->input(i) && n->input(i)->producer() && !ir::isMetadataOperand(n->kind(), i))
          reachesLow[n->input(i)->producer()] |= through;
    }
    // Only nodes with an f32 result (read before step 3 retypes them): a
    // Shape or an ArgMax there needs no cast.
    auto tailF32 = [&](const ir::Node *n) {
      auto it = reachesLow.find(n);
      if ((it != reachesLow.end() && it->second) || keepsLowInTail(n->kind())) return false;
      for (const ir::Value *o : n->outputs())
        if (o && o->type().dtype == DType::kF32) return true;
      return false;
    };
    // Users of \p v that read it as data and are not tailF32.
    auto hasLowUser = [&](const ir::Value *v) {
      for (ir::Node *u : graph.users(v))
        for (int i = 0; i < u->numInputs(); ++i)
          if (u->input(i) == v && !ir::isMetadataOperand(u->kind(), i) && !tailF32(u)) return true;
      return false;
    };
    int64_t tailNodes = 0;
    for (ir::Node *n : nodes) tailNodes += tailF32(n) ? 1 : 0;

    // 1. Constants (weights and scalars) referenced by nodes; a constant
    // only tail nodes or the graph's outputs read stays f32 (a constant
    // output of 70000 would saturate to fp16's 65504).
    for (ir::Value *c : graph.constants()) {
      if (c->type().dtype != DType::kF32 || !c->constant()) continue;
      if (!hasLowUser(c)) continue;
      graph.setConstant(c, convertTensor(*c->constant(), low));
      ++constants;
    }

    // 2. Entry casts: f32 graph inputs feed the nodes through Cast(to=low).
    absl::flat_hash_map<ir::Value *, ir::Value *> entry;
    ir::Node *first = nodes.empty() ? nullptr : nodes.front();
    for (ir::Value *in : graph.inputs()) {
      if (in->isConstant() || in->type().dtype != DType::kF32) continue;
      if (!hasLowUser(in)) continue;  // unused, or read by tail nodes only
      ir::Node *cast = graph.addNode(
          "Cast", {in}, {graph.uniqueName(absl::StrCat(in->name(), "_", shortName(low)))},
          {{"to", ir::Attribute(int64_t{lowCode})}}, absl::StrCat("cast_", in->name()), first);
      ir::TensorType t = in->type();
      t.dtype = low;
      cast->output(0)->setType(t);
      entry[in] = cast->output(0);
      ++casts;
    }

    // Elementwise nodes that compute in f32 because a sum-like reduction's
    // input is computed from them: walk back from each reduction's input
    // through elementwise ops (any number) and views.
    absl::flat_hash_set<const ir::Node *> fp32In, visited;
    std::vector<ir::Node *> work;
    for (ir::Node *n : nodes)
      if (isSumLikeReduction(n->kind()) && n->input(0) && n->input(0)->producer())
        work.push_back(n->input(0)->producer());
    while (!work.empty()) {
      ir::Node *p = work.back();
      work.pop_back();
      if (!visited.insert(p).second) continue;
      const bool arithmetic = isElementwiseArithmetic(p->kind());
      if (!arithmetic && !ir::nodeIsView(*p) && p->kind() != ir::OpKind::kTranspose) continue;
      if (arithmetic) fp32In.insert(p);
      for (int i = 0; i < p->numInputs(); ++i)
        if (p->input(i) && !ir::isMetadataOperand(p->kind(), i) && p->input(i)->producer())
          work.push_back(p->input(i)->producer());
    }
    // Casts inserted by the policy, one per (value, dtype).
    absl::flat_hash_map<std::pair<ir::Value *, DType>, ir::Value *> policyCasts;
    auto castInput = [&](ir::Node *n, int i, DType to) {
      ir::Value *v = n->input(i);
      auto key = std::make_pair(v, to);
      auto it = policyCasts.find(key);
      if (it == policyCasts.end()) {
        ir::Node *cast = graph.addNode(
            "Cast", {v}, {graph.uniqueName(absl::StrCat(v->name(), "_", to == DType::kF32 ? "f32" : shortName(low)))},
            {{"to", ir::Attribute(static_cast<int64_t>(to))}}, "", n);
        ir::TensorType t = v->type();
        t.dtype = to;
        cast->output(0)->setType(t);
        it = policyCasts.emplace(key, cast->output(0)).first;
        ++casts;
      }
      n->setInput(i, it->second);
    };

    // 3. Nodes in order: rewire entry casts, retarget f32-producing
    // attributes, apply the precision policy, re-infer result dtypes (shapes
    // are kept as they are).
    for (ir::Node *n : nodes) {
      const bool inTail = tailF32(n);
      for (int i = 0; i < n->numInputs(); ++i)
        if (auto it = entry.find(n->input(i)); it != entry.end() && !inTail) n->setInput(i, it->second);
      {
        const Policy policy = policyOf(n->kind());
        bool anyF32 = false, anyLow = false;
        for (int i = 0; i < n->numInputs(); ++i) {
          if (!n->input(i) || ir::isMetadataOperand(n->kind(), i)) continue;
          anyF32 |= n->input(i)->type().dtype == DType::kF32;
          anyLow |= n->input(i)->type().dtype == low;
        }
        DType want = DType::kUndefined;
        if (policy == Policy::kLow && anyF32 && !inTail) want = low;
        else if ((policy == Policy::kFp32 || fp32In.count(n) || inTail) && anyLow) want = DType::kF32;
        else if (policy == Policy::kPromote && anyF32 && anyLow) want = DType::kF32;
        if (want != DType::kUndefined)
          for (int i = 0; i < n->numInputs(); ++i) {
            if (!n->input(i) || ir::isMetadataOperand(n->kind(), i)) continue;
            const DType dt = n->input(i)->type().dtype;
            if ((dt == DType::kF32 || dt == low) && dt != want) castInput(n, i, want);
          }
      }
      switch (inTail ? ir::OpKind::kIdentity : n->kind()) {  // tail: f32 attributes stay
        case ir::OpKind::kCast:
          if (n->getInt("to", 0) == static_cast<int64_t>(DType::kF32))
            n->setAttr("to", ir::Attribute(int64_t{lowCode}));
          break;
        case ir::OpKind::kConstantOfShape: {
          const ir::Attribute *a = n->attr("value");
          if (!a) {
            // The default value is f32 zero.
            n->setAttr("value", ir::Attribute(ir::Tensor(low, {1})));
          } else if (a->kind() == ir::Attribute::Kind::kTensor && a->t().dtype() == DType::kF32) {
            n->setAttr("value", ir::Attribute(convertTensor(a->t(), low)));
          }
          break;
        }
        case ir::OpKind::kConstant: {
          const ir::Attribute *a = n->attr("value");
          if (a && a->kind() == ir::Attribute::Kind::kTensor && a->t().dtype() == DType::kF32) {
            n->setAttr("value", ir::Attribute(convertTensor(a->t(), low)));
          } else if (const ir::Attribute *f = n->attr("value_float")) {
            ir::Tensor t = ir::Tensor::fromDoubles(DType::kF32, {}, {static_cast<double>(f->f())});
            n->attrs().erase("value_float");
            n->setAttr("value", ir::Attribute(convertTensor(t, low)));
          } else if (const ir::Attribute *fs = n->attr("value_floats")) {
            std::vector<double> d(fs->floats().begin(), fs->floats().end());
            ir::Tensor t = ir::Tensor::fromDoubles(
                DType::kF32, {static_cast<int64_t>(d.size())}, d);
            n->attrs().erase("value_floats");
            n->setAttr("value", ir::Attribute(convertTensor(t, low)));
          }
          break;
        }
        case ir::OpKind::kAbs: case ir::OpKind::kNeg: case ir::OpKind::kExp:
        case ir::OpKind::kLog: case ir::OpKind::kSqrt: case ir::OpKind::kReciprocal:
        case ir::OpKind::kErf: case ir::OpKind::kTanh: case ir::OpKind::kSigmoid:
        case ir::OpKind::kRelu: case ir::OpKind::kLeakyRelu: case ir::OpKind::kElu:
        case ir::OpKind::kHardSigmoid: case ir::OpKind::kSoftplus: case ir::OpKind::kSwish: case ir::OpKind::kGelu:
        case ir::OpKind::kSin: case ir::OpKind::kCos: case ir::OpKind::kFloor:
        case ir::OpKind::kTan: case ir::OpKind::kAsin: case ir::OpKind::kAcos: case ir::OpKind::kAtan: case ir::OpKind::kSinh:
        case ir::OpKind::kCosh: case ir::OpKind::kAsinh: case ir::OpKind::kAcosh: case ir::OpKind::kAtanh:
        case ir::OpKind::kCeil: case ir::OpKind::kRound: case ir::OpKind::kSign:
        case ir::OpKind::kNot: case ir::OpKind::kIsNaN: case ir::OpKind::kIsInf:
        case ir::OpKind::kIdentity: case ir::OpKind::kDropout: case ir::OpKind::kClip:
        case ir::OpKind::kAdd: case ir::OpKind::kSub: case ir::OpKind::kMul:
        case ir::OpKind::kDiv: case ir::OpKind::kPow: case ir::OpKind::kMod:
        case ir::OpKind::kMax: case ir::OpKind::kMin: case ir::OpKind::kSum:
        case ir::OpKind::kMean: case ir::OpKind::kEqual: case ir::OpKind::kLess:
        case ir::OpKind::kLessOrEqual: case ir::OpKind::kGreater:
        case ir::OpKind::kGreaterOrEqual: case ir::OpKind::kAnd: case ir::OpKind::kOr:
        case ir::OpKind::kXor: case ir::OpKind::kWhere: case ir::OpKind::kMatMul:
        case ir::OpKind::kGemm: case ir::OpKind::kConv: case ir::OpKind::kSoftmax:
        case ir::OpKind::kLogSoftmax: case ir::OpKind::kLayerNormalization:
        case ir::OpKind::kRMSNormalization: case ir::OpKind::kBatchNormalization:
        case ir::OpKind::kReduceMean: case ir::OpKind::kReduceSum: case ir::OpKind::kReduceMax:
        case ir::OpKind::kReduceMin: case ir::OpKind::kReduceProd:
        case ir::OpKind::kReduceSumSquare: case ir::OpKind::kReduceL2: case ir::OpKind::kArgMax:
        case ir::OpKind::kArgMin: case ir::OpKind::kMaxPool: case ir::OpKind::kAveragePool:
        case ir::OpKind::kGlobalAveragePool: case ir::OpKind::kGlobalMaxPool:
        case ir::OpKind::kReshape: case ir::OpKind::kTranspose: case ir::OpKind::kFlatten:
        case ir::OpKind::kSqueeze: case ir::OpKind::kUnsqueeze: case ir::OpKind::kConcat:
        case ir::OpKind::kSplit: case ir::OpKind::kSlice: case ir::OpKind::kGather:
        case ir::OpKind::kGatherElements: case ir::OpKind::kGatherND: case ir::OpKind::kExpand:
        case ir::OpKind::kTile: case ir::OpKind::kTrilu: case ir::OpKind::kPad:
        case ir::OpKind::kShape: case ir::OpKind::kSize: case ir::OpKind::kRange:
        case ir::OpKind::kFusedAttention: case ir::OpKind::kUnregistered:
        case ir::OpKind::kPRelu: case ir::OpKind::kCumSum: case ir::OpKind::kGridSample: case ir::OpKind::kRoiAlign: case ir::OpKind::kCumProd: case ir::OpKind::kCompress: case ir::OpKind::kBitCast: case ir::OpKind::kCol2Im: case ir::OpKind::kUnique: case ir::OpKind::kTensorScatter: case ir::OpKind::kNonMaxSuppression: case ir::OpKind::kDet: case ir::OpKind::kResize: case ir::OpKind::kConvTranspose:
        case ir::OpKind::kTopK: case ir::OpKind::kHardmax: case ir::OpKind::kOneHot: case ir::OpKind::kScatterND: case ir::OpKind::kScatterElements: case ir::OpKind::kBitShift: case ir::OpKind::kQuantizeLinear: case ir::OpKind::kDequantizeLinear:
        case ir::OpKind::kBitwiseAnd: case ir::OpKind::kBitwiseOr: case ir::OpKind::kBitwiseXor: case ir::OpKind::kBitwiseNot:
          break;
      }
      bool anyF32 = false;
      for (ir::Value *o : n->outputs()) anyF32 |= o && o->type().dtype == DType::kF32;
      if (!anyF32) continue;
      absl::StatusOr<std::vector<ir::TensorType>> inferred = ir::computeNodeTypes(*n);
      if (!inferred.ok())
        return withContext(inferred.status(), absl::StrCat("lowering ", n->describe()));
      const std::vector<ir::TensorType> &types = *inferred;
      if (policyOf(n->kind()) == Policy::kFp32 || fp32In.count(n) || inTail) continue;  // results stay f32
      for (int i = 0; i < n->numOutputs() && i < static_cast<int>(types.size()); ++i) {
        ir::Value *o = n->output(i);
        if (!o || o->type().dtype != DType::kF32 || types[i].dtype != low) continue;
        o->mutableType().dtype = low;
        ++values;
      }
    }

    // 4. Exit casts: outputs that were f32 come back as f32 under their name.
    std::vector<ir::Value *> outs = graph.outputs();
    absl::flat_hash_map<ir::Value *, ir::Value *> exitOf;
    for (size_t i = 0; i < outs.size(); ++i) {
      ir::Value *v = outs[i];
      if (!v || !outputWasF32[i] || v->type().dtype != low) continue;
      if (auto it = exitOf.find(v); it != exitOf.end()) {
        outs[i] = it->second;
        continue;
      }
      const std::string name = v->name();
      graph.renameValue(v, graph.uniqueName(absl::StrCat(name, "_", shortName(low))));
      ir::Node *cast = graph.addNode("Cast", {v}, {name},
                                     {{"to", ir::Attribute(static_cast<int64_t>(DType::kF32))}},
                                     absl::StrCat("cast_", name));
      ir::TensorType t = v->type();
      t.dtype = DType::kF32;
      cast->output(0)->setType(t);
      exitOf[v] = cast->output(0);
      outs[i] = cast->output(0);
      ++casts;
    }
    graph.setOutputs(outs);

    ctx.statistics["lower-precision.constants"] += constants;
    ctx.statistics["lower-precision.values"] += values;
    ctx.statistics["lower-precision.casts"] += casts;
    ctx.statistics["lower-precision.tail-f32"] += tailNodes;
    return constants + values + casts > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> createPrecisionLowering() { return std::make_unique<PrecisionLowering>(); }

}  // namespace fusec::passes
