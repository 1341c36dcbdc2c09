//===- Simplify.cpp - Local simplifications: no-ops, chains, bias adds ----===//
//
// - No-ops replaced by their input: Identity; Dropout (inference: training
//   mode absent or constant false, mask output unused); Cast to the input's
//   own dtype; Cast(Cast(x, A), B) with B = x's dtype and A a lossless
//   widening of B (f16/bf16 -> f32 -> f16/bf16, f32 -> f64 -> f32, integer
//   widening); Reshape and Expand whose static input and output shapes are
//   equal; Transpose with the identity permutation; Where whose condition
//   is a constant of one element and whose chosen operand has the result's
//   type (an If on a condition that became constant after import: the
//   branch not taken is then dead).
// - Reshape(Reshape(x, s1), s2) -> Reshape(x, s2'), where s2' is the static
//   output shape if known, else s2 when it has no 0 entries (0 would copy a
//   dim of the inner result, not of x) or allowzero=1.
// - Transpose(Transpose(x, p1), p2) -> Transpose(x, q), q[i] = p1[p2[i]], or
//   x itself when q is the identity.
//   Both chain rules fold a whole chain in one rewrite, matched at its last
//   node (a node whose only use is the next link is left to that link), so a
//   chain of N links costs O(N), not log N sweeps of N/2 rewrites.
// - Add(MatMul(A, B), C) with 2-D A and B and a bias C that broadcasts into
//   the [M, N] result without enlarging it -> Gemm(A, B, C). For higher-rank
//   A the canonical form is Add(MatMul(A, W), bias) with the MatMul operand
//   first: fusion treats the Add as a GEMM epilogue, so a fusec-only
//   "Linear" op (which every component would have to learn, and which
//   Reshape-to-2-D-and-back would only obscure) buys nothing. Gemm with
//   transA / transB / alpha / beta is left as is.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "absl/strings/ascii.h"
#include "passes/canonicalize/Patterns.h"

namespace fusec::passes::canonicalize {
namespace {

/// True if every value of dtype \p narrow is exactly representable in \p wide.
bool isLosslessWidening(ir::DType narrow, ir::DType wide) {
  using ir::DType;
  if (narrow == wide) return true;
  switch (narrow) {
    case DType::kF16:
    case DType::kBF16:
      return wide == DType::kF32 || wide == DType::kF64;
    case DType::kF32:
      return wide == DType::kF64;
    case DType::kBool:
      return ir::isInteger(wide) || ir::isFloat(wide);
    case DType::kI8:
      return wide == DType::kI16 || wide == DType::kI32 || wide == DType::kI64 ||
             wide == DType::kF32 || wide == DType::kF64;
    case DType::kU8:
      return wide == DType::kI16 || wide == DType::kU16 || wide == DType::kI32 ||
             wide == DType::kU32 || wide == DType::kI64 || wide == DType::kU64 ||
             wide == DType::kF32 || wide == DType::kF64;
    case DType::kI16:
      return wide == DType::kI32 || wide == DType::kI64 || wide == DType::kF32 ||
             wide == DType::kF64;
    case DType::kU16:
      return wide == DType::kI32 || wide == DType::kU32 || wide == DType::kI64 ||
             wide == DType::kU64 || wide == DType::kF32 || wide == DType::kF64;
    case DType::kI32:
      return wide == DType::kI64 || wide == DType::kF64;
    case DType::kU32:
      return wide == DType::kI64 || wide == DType::kU64 || wide == DType::kF64;
    default:
      return false;
  }
}

bool sameStaticShape(const ir::Value *a, const ir::Value *b) {
  return a->type().isStatic() && b->type().isStatic() &&
         a->type().staticShape() == b->type().staticShape();
}

/// The permutation of a Transpose (default: reversed axes); empty if the
/// rank is unknown or the perm is malformed.
std::vector<int64_t> permOf(const ir::Node &t) {
  const ir::TensorType &ty = t.input(0)->type();
  std::vector<int64_t> perm = t.getInts("perm");
  if (perm.empty()) {
    if (!ty.rankKnown) return {};
    for (int64_t i = ty.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return {};
  return perm;
}

bool isIdentityPerm(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

/// The value a no-op node forwards, or null if \p n is not a no-op.
ir::Value *noOpSource(const ir::Node &n, const UseInfo &uses) {
  ir::Value *in = n.input(0);
  if (!in) return nullptr;
  const ir::TensorType &inTy = in->type();
  const ir::TensorType &outTy = n.output(0)->type();
  switch (n.kind()) {
    case ir::OpKind::kIdentity:
      return in;
    case ir::OpKind::kDropout: {
      if (n.numOutputs() > 1 &&
          (!uses.users(n.output(1)).empty() || uses.isGraphOutput(n.output(1))))
        return nullptr;
      const ir::Value *training = n.input(2);
      if (training && !isSplatConstant(training, 0.0, 0)) return nullptr;
      return in;
    }
    case ir::OpKind::kCast: {
      int64_t to = n.getInt("to", 0);
      if (inTy.dtype == static_cast<ir::DType>(to)) return in;
      ir::Node *inner = producerOf(in, ir::OpKind::kCast);
      if (inner && inner->input(0) &&
          inner->input(0)->type().dtype == static_cast<ir::DType>(to) &&
          isLosslessWidening(static_cast<ir::DType>(to), inTy.dtype))
        return inner->input(0);
      return nullptr;
    }
    case ir::OpKind::kReshape:
    case ir::OpKind::kExpand:
      return sameStaticShape(in, n.output(0)) && inTy.dtype == outTy.dtype ? in : nullptr;
    case ir::OpKind::kTranspose: {
      std::vector<int64_t> perm = permOf(n);
      return !perm.empty() && isIdentityPerm(perm) ? in : nullptr;
    }
    case ir::OpKind::kWhere: {
      const ir::Tensor *c = in->constant();
      if (!c || c->numElements() != 1 || n.numInputs() != 3) return nullptr;
      ir::Value *chosen = n.input(c->getDouble(0) != 0.0 ? 1 : 2);
      return chosen && chosen->type() == outTy ? chosen : nullptr;
    }
    case ir::OpKind::kAbs: case ir::OpKind::kNeg: case ir::OpKind::kExp: case ir::OpKind::kLog:
    case ir::OpKind::kSqrt: case ir::OpKind::kReciprocal: case ir::OpKind::kErf:
    case ir::OpKind::kTanh: case ir::OpKind::kSigmoid: case ir::OpKind::kRelu:
    case ir::OpKind::kLeakyRelu: case ir::OpKind::kElu: case ir::OpKind::kHardSigmoid:
    case ir::OpKind::kSoftplus: case ir::OpKind::kSwish: case ir::OpKind::kGelu: case ir::OpKind::kSin:
    case ir::OpKind::kCos: case ir::OpKind::kFloor: case ir::OpKind::kCeil:
    case ir::OpKind::kTan: case ir::OpKind::kAsin: case ir::OpKind::kAcos: case ir::OpKind::kAtan: case ir::OpKind::kSinh:
    case ir::OpKind::kCosh: case ir::OpKind::kAsinh: case ir::OpKind::kAcosh: case ir::OpKind::kAtanh:
    case ir::OpKind::kRound: case ir::OpKind::kSign: case ir::OpKind::kNot:
    case ir::OpKind::kIsNaN: case ir::OpKind::kIsInf: case ir::OpKind::kClip:
    case ir::OpKind::kAdd: case ir::OpKind::kSub: case ir::OpKind::kMul: case ir::OpKind::kDiv:
    case ir::OpKind::kPow: case ir::OpKind::kMod: case ir::OpKind::kMax: case ir::OpKind::kMin:
    case ir::OpKind::kSum: case ir::OpKind::kMean: case ir::OpKind::kEqual:
    case ir::OpKind::kLess: case ir::OpKind::kLessOrEqual: case ir::OpKind::kGreater:
    case ir::OpKind::kGreaterOrEqual: case ir::OpKind::kAnd: case ir::OpKind::kOr:
    case ir::OpKind::kXor: case ir::OpKind::kMatMul:
    case ir::OpKind::kGemm: case ir::OpKind::kConv: case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: case ir::OpKind::kLayerNormalization:
    case ir::OpKind::kRMSNormalization: case ir::OpKind::kBatchNormalization:
    case ir::OpKind::kReduceMean: case ir::OpKind::kReduceSum: case ir::OpKind::kReduceMax:
    case ir::OpKind::kReduceMin: case ir::OpKind::kReduceProd: case ir::OpKind::kReduceSumSquare:
    case ir::OpKind::kReduceL2: case ir::OpKind::kArgMax: case ir::OpKind::kArgMin:
    case ir::OpKind::kMaxPool: case ir::OpKind::kAveragePool: case ir::OpKind::kGlobalAveragePool:
    case ir::OpKind::kGlobalMaxPool: case ir::OpKind::kFlatten: case ir::OpKind::kSqueeze:
    case ir::OpKind::kUnsqueeze: case ir::OpKind::kConcat: case ir::OpKind::kSplit:
    case ir::OpKind::kSlice: case ir::OpKind::kGather: case ir::OpKind::kGatherElements:
    case ir::OpKind::kGatherND: case ir::OpKind::kTile: case ir::OpKind::kTrilu:
    case ir::OpKind::kPad: case ir::OpKind::kShape: case ir::OpKind::kSize:
    case ir::OpKind::kConstantOfShape: case ir::OpKind::kRange: case ir::OpKind::kConstant:
    case ir::OpKind::kFusedAttention: case ir::OpKind::kUnregistered:
    case ir::OpKind::kPRelu: case ir::OpKind::kConvTranspose: case ir::OpKind::kCumSum: case ir::OpKind::kGridSample: case ir::OpKind::kRoiAlign: case ir::OpKind::kCumProd: case ir::OpKind::kCompress: case ir::OpKind::kBitCast: case ir::OpKind::kCol2Im: case ir::OpKind::kUnique: case ir::OpKind::kTensorScatter: case ir::OpKind::kNonMaxSuppression: case ir::OpKind::kDet: case ir::OpKind::kResize:
    case ir::OpKind::kTopK: case ir::OpKind::kHardmax: case ir::OpKind::kOneHot: case ir::OpKind::kScatterND: case ir::OpKind::kScatterElements: case ir::OpKind::kBitShift: case ir::OpKind::kQuantizeLinear: case ir::OpKind::kDequantizeLinear:
    case ir::OpKind::kBitwiseAnd: case ir::OpKind::kBitwiseOr: case ir::OpKind::kBitwiseXor: case ir::OpKind::kBitwiseNot:
      return nullptr;
  }
  return nullptr;
}

/// True if a [dims of c] bias broadcasts into \p out without enlarging it.
bool broadcastsInto(const ir::TensorType &c, const ir::TensorType &out) {
  if (!c.rankKnown || !out.rankKnown || c.rank() > out.rank()) return false;
  for (int64_t i = 1; i <= c.rank(); ++i) {
    const ir::Dim &cd = c.shape[c.rank() - i];
    const ir::Dim &od = out.shape[out.rank() - i];
    if (cd.isStatic() && cd.value == 1) continue;
    if (cd != od || cd.isUnknown()) return false;
  }
  return true;
}

}  // namespace

std::optional<Rewrite> matchNoOp(ir::Node &root, const UseInfo &uses) {
  ir::Value *src = noOpSource(root, uses);
  if (!src) return std::nullopt;
  ir::Node *r = &root;
  std::string stat = absl::AsciiStrToLower(root.opType());
  return Rewrite{"drop-" + stat, {r}, [r, src](ir::Graph &g) -> absl::StatusOr<bool> {
                   return replaceValue(g, r->output(0), src, /*takeName=*/false);
                 }};
}

/// True if \p n's only use is one node of \p kind (so that node, matched as
/// the end of a longer chain, absorbs \p n): then \p n is not matched itself,
/// which keeps a chain of N such nodes one rewrite rather than log N sweeps
/// of N/2 rewrites each.
bool absorbedByNext(const ir::Node &n, ir::OpKind kind, const UseInfo &uses) {
  const ir::Value *v = n.output(0);
  if (!uses.hasOneUse(v)) return false;
  return uses.users(v)[0]->kind() == kind;
}

/// Walks up from \p root through producers of \p kind: every single-use one,
/// and at most one more (a producer with other users stays, but is bypassed).
/// \returns the chain, root first. O(chain length).
std::vector<ir::Node *> chainAbove(ir::Node &root, ir::OpKind kind, const UseInfo &uses) {
  std::vector<ir::Node *> chain{&root};
  while (ir::Node *inner = producerOf(chain.back()->input(0), kind)) {
    chain.push_back(inner);
    if (!uses.hasOneUse(inner->output(0))) break;
  }
  return chain;
}

std::optional<Rewrite> matchReshapeChain(ir::Node &root, const UseInfo &uses) {
  if (root.kind() != ir::OpKind::kReshape) return std::nullopt;
  if (absorbedByNext(root, ir::OpKind::kReshape, uses)) return std::nullopt;
  std::vector<ir::Node *> chain = chainAbove(root, ir::OpKind::kReshape, uses);
  if (chain.size() < 2) return std::nullopt;
  ir::Value *x = chain.back()->input(0);
  ir::Node *r = &root;
  const ir::TensorType &outTy = root.output(0)->type();
  if (outTy.isStatic()) {
    ir::Shape shape = outTy.staticShape();
    return Rewrite{"reshape-chain", {r}, [r, x, shape](ir::Graph &g) {
                     ir::Value *s = g.addConstant(g.uniqueName(r->output(0)->name() + ".shape"),
                                                  ir::Tensor::vectorI64(shape));
                     return replaceRootWith(g, r, "Reshape", {x, s}, {});
                   }};
  }
  // Symbolic shape: only the last Reshape's target counts, when it names
  // every dim itself (no 0 that would copy a dim of the intermediate).
  ir::Value *shape = root.input(1);
  if (!shape || !shape->constant()) return std::nullopt;
  int64_t allowZero = root.attrI("allowzero");
  std::vector<int64_t> dims = shape->constant()->toInts();
  if (allowZero == 0 && std::find(dims.begin(), dims.end(), 0) != dims.end()) return std::nullopt;
  return Rewrite{"reshape-chain", {r}, [r, x, shape, allowZero](ir::Graph &g) {
                   return replaceRootWith(g, r, "Reshape", {x, shape},
                                          {{"allowzero", ir::Attribute(allowZero)}});
                 }};
}

std::optional<Rewrite> matchTransposeChain(ir::Node &root, const UseInfo &uses) {
  if (root.kind() != ir::OpKind::kTranspose) return std::nullopt;
  if (absorbedByNext(root, ir::OpKind::kTranspose, uses)) return std::nullopt;
  std::vector<ir::Node *> chain = chainAbove(root, ir::OpKind::kTranspose, uses);
  if (chain.size() < 2) return std::nullopt;
  // out = T_root(...T_top(x)): out[i] = x[q[i]] with q = p_top[...p_root[i]].
  std::vector<int64_t> q = permOf(root);
  if (q.empty()) return std::nullopt;
  for (size_t c = 1; c < chain.size(); ++c) {
    std::vector<int64_t> p = permOf(*chain[c]);
    if (p.size() != q.size()) return std::nullopt;
    for (int64_t &e : q) e = p[e];
  }
  ir::Value *x = chain.back()->input(0);
  ir::Node *r = &root;
  if (isIdentityPerm(q))
    return Rewrite{"transpose-chain", {r}, [r, x](ir::Graph &g) -> absl::StatusOr<bool> {
                     return replaceValue(g, r->output(0), x, /*takeName=*/false);
                   }};
  return Rewrite{"transpose-chain", {r}, [r, x, q](ir::Graph &g) {
                   return replaceRootWith(g, r, "Transpose", {x}, {{"perm", ir::Attribute(q)}});
                 }};
}

std::optional<Rewrite> matchMatMulBias(ir::Node &root, const UseInfo &uses) {
  if (root.kind() != ir::OpKind::kAdd) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    ir::Node *mm = producerOf(root.input(i), ir::OpKind::kMatMul);
    if (!mm || producerOf(root.input(1 - i), ir::OpKind::kMatMul)) continue;
    ir::Value *bias = root.input(1 - i);
    ir::Value *a = mm->input(0), *b = mm->input(1);
    const ir::TensorType &outTy = mm->output(0)->type();
    ir::Node *r = &root;
    if (uses.hasOneUse(mm->output(0)) && a->type().rankKnown && a->type().rank() == 2 &&
        b->type().rankKnown && b->type().rank() == 2 && ir::isFloat(outTy.dtype) &&
        broadcastsInto(bias->type(), outTy) && bias->type().dtype == outTy.dtype) {
      return Rewrite{"matmul-bias-to-gemm", {r, mm}, [r, a, b, bias](ir::Graph &g) {
                       return replaceRootWith(g, r, "Gemm", {a, b, bias}, {});
                     }};
    }
    if (i == 1) {
      // Canonical operand order: Add(MatMul(...), bias).
      return Rewrite{"matmul-bias-order", {r}, [r](ir::Graph &g) -> absl::StatusOr<bool> {
                       ir::Value *lhs = r->input(0);
                       r->setInput(0, r->input(1));
                       r->setInput(1, lhs);
                       return true;
                     }};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace fusec::passes::canonicalize
