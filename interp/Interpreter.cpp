//===- Interpreter.cpp - Reference interpreter for the IR -----------------===//
#include "interp/Interpreter.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "interp/internal/Kernels.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

/// The interp/ops/<Family>.cpp file that implements an op.
enum class Family { kElementwise, kReduction, kNn, kLayout, kMovement, kResize, kAttention };

const char *familyFile(Family f) {
  switch (f) {
    case Family::kElementwise: return "interp/ops/Elementwise.cpp";
    case Family::kReduction: return "interp/ops/Reduction.cpp";
    case Family::kNn: return "interp/ops/Nn.cpp";
    case Family::kLayout: return "interp/ops/Layout.cpp";
    case Family::kMovement: return "interp/ops/Movement.cpp";
    case Family::kResize: return "interp/ops/Resize.cpp";
    case Family::kAttention: return "interp/ops/Attention.cpp";
  }
  return "interp/ops";
}

/// Which family implements \p kind: one exhaustive switch over OpKind (no
/// default), so a new row of ir/Ops.def does not compile until the
/// interpreter places it; InterpTableTest checks that every row's family
/// registered a function.
Family familyOf(ir::OpKind kind) {
  using K = ir::OpKind;
  switch (kind) {
    case K::kAbs: case K::kNeg: case K::kExp: case K::kLog: case K::kSqrt: case K::kReciprocal:
    case K::kErf: case K::kTanh: case K::kSigmoid: case K::kRelu: case K::kLeakyRelu:
    case K::kElu: case K::kHardSigmoid: case K::kSoftplus: case K::kSwish: case K::kGelu: case K::kSin:
    case K::kCos: case K::kFloor: case K::kCeil: case K::kRound: case K::kSign: case K::kNot:
    case K::kTan: case K::kAsin: case K::kAcos: case K::kAtan: case K::kSinh:
    case K::kCosh: case K::kAsinh: case K::kAcosh: case K::kAtanh:
    case K::kIsNaN: case K::kIsInf: case K::kCast: case K::kIdentity: case K::kDropout:
    case K::kClip: case K::kAdd: case K::kSub: case K::kMul: case K::kDiv: case K::kPow:
    case K::kMod: case K::kMax: case K::kMin: case K::kSum: case K::kMean: case K::kEqual:
    case K::kLess: case K::kLessOrEqual: case K::kGreater: case K::kGreaterOrEqual: case K::kAnd:
    case K::kOr: case K::kXor: case K::kWhere: case K::kPRelu: case K::kBitShift:
    case K::kBitwiseAnd: case K::kBitwiseOr: case K::kBitwiseXor: case K::kBitwiseNot:
    case K::kQuantizeLinear: case K::kDequantizeLinear:
      return Family::kElementwise;
    case K::kSoftmax: case K::kLogSoftmax: case K::kLayerNormalization: case K::kRMSNormalization:
    case K::kReduceMean: case K::kReduceSum: case K::kReduceMax: case K::kReduceMin:
    case K::kReduceProd: case K::kReduceSumSquare: case K::kReduceL2: case K::kArgMax:
    case K::kArgMin: case K::kCumSum: case K::kTopK: case K::kHardmax: case K::kCumProd: case K::kDet:
      return Family::kReduction;
    case K::kMatMul: case K::kGemm: case K::kConv: case K::kConvTranspose:
    case K::kBatchNormalization: case K::kMaxPool:
    case K::kAveragePool: case K::kGlobalAveragePool: case K::kGlobalMaxPool:
      return Family::kNn;
    case K::kReshape: case K::kTranspose: case K::kFlatten: case K::kSqueeze: case K::kUnsqueeze:
    case K::kConcat: case K::kSplit: case K::kSlice:
      return Family::kLayout;
    case K::kGather: case K::kGatherElements: case K::kGatherND: case K::kExpand: case K::kTile:
    case K::kTrilu: case K::kPad: case K::kShape: case K::kSize: case K::kConstantOfShape:
    case K::kRange: case K::kConstant: case K::kOneHot: case K::kScatterND:
    case K::kScatterElements: case K::kCompress: case K::kBitCast: case K::kCol2Im: case K::kUnique: case K::kTensorScatter: case K::kNonMaxSuppression:
      return Family::kMovement;
    case K::kResize: case K::kGridSample: case K::kRoiAlign:
      return Family::kResize;
    case K::kFusedAttention:
      return Family::kAttention;
    case K::kUnregistered:
      break;
  }
  return Family::kAttention;
}

const KernelTable &kernelTable() {
  static const KernelTable *table = [] {
    auto *t = new KernelTable(static_cast<size_t>(ir::OpKind::kUnregistered));
    registerElementwiseKernels(*t);
    registerReductionKernels(*t);
    registerNnKernels(*t);
    registerLayoutKernels(*t);
    registerMovementKernels(*t);
    registerResizeKernels(*t);
    registerAttentionKernels(*t);
    return t;
  }();
  return *table;
}

}  // namespace

bool supports(ir::OpKind kind) {
  if (kind == ir::OpKind::kUnregistered) return false;
  return static_cast<bool>(kernelTable()[static_cast<size_t>(kind)]);
}

absl::StatusOr<std::vector<ir::Tensor>> evaluateNode(
    const ir::Node &node, const std::vector<const ir::Tensor *> &inputs) {
  if (!supports(node.kind()))
    return absl::UnimplementedError(absl::StrCat(
        "reference interpreter has no function for ", node.describe(),
        node.kind() == ir::OpKind::kUnregistered
            ? std::string()
            : absl::StrCat(" (expected in ", familyFile(familyOf(node.kind())), ")")));
  // Declared result types that are fully static are checked against the
  // tensor size limit (ir/Tensor.h) before any kernel allocates; kernels
  // check the shapes they compute from data themselves.
  for (int i = 0; i < node.numOutputs(); ++i) {
    const ir::Value *v = node.output(i);
    if (!v || !v->type().rankKnown) continue;
    ir::Shape dims;
    for (const ir::Dim &d : v->type().shape)
      if (d.isStatic()) dims.push_back(d.value);
    if (dims.size() != v->type().shape.size()) continue;
    if (absl::Status s = ir::checkTensorSize(v->type().dtype, dims, "result"); !s.ok())
      return withContext(s, absl::StrCat("evaluating node ", node.describe()));
  }
  KernelArgs args{node, inputs};
  auto result = kernelTable()[static_cast<size_t>(node.kind())](args);
  if (!result.ok()) return withContext(result.status(), absl::StrCat("evaluating node ", node.describe()));
  return result;
}

absl::StatusOr<std::vector<ir::Tensor>> runGraph(
    const ir::Graph &graph, const std::map<std::string, ir::Tensor> &inputs) {
  absl::flat_hash_map<const ir::Value *, ir::Tensor> env;
  for (ir::Value *in : graph.inputs()) {
    auto it = inputs.find(in->name());
    if (it == inputs.end()) {
      if (in->isConstant()) continue;
      return absl::InvalidArgumentError(absl::StrCat("missing graph input '", in->name(), "'"));
    }
    const ir::Tensor &t = it->second;
    const ir::TensorType &ty = in->type();
    if (t.dtype() != ty.dtype)
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", in->name(), "' has dtype ", ir::dtypeName(t.dtype()),
                       ", expected ", ir::dtypeName(ty.dtype)));
    if (ty.rankKnown) {
      if (t.rank() != ty.rank())
        return absl::InvalidArgumentError(absl::StrCat("graph input '", in->name(), "' has rank ",
                                                       t.rank(), ", expected ", ty.rank()));
      for (int64_t d = 0; d < ty.rank(); ++d)
        if (ty.shape[d].isStatic() && ty.shape[d].value != t.shape()[d])
          return absl::InvalidArgumentError(
              absl::StrCat("graph input '", in->name(), "' has dim ", d, " = ", t.shape()[d],
                           ", expected ", ty.shape[d].value));
    }
    env[in] = t;
  }
  auto lookup = [&](const ir::Value *v) -> const ir::Tensor * {
    if (!v) return nullptr;
    auto it = env.find(v);
    if (it != env.end()) return &it->second;
    return v->constant();
  };
  for (const ir::Node *node : graph.nodes()) {
    // A guarded node (an If branch) runs only when its guard holds, its
    // terms read in order (a later one only when the earlier ones hold). A
    // skipped node's results read as zeros of their declared static type
    // (only the If's Where, which discards them, reads them); without a
    // static type they stay undefined and reading one is an error.
    bool holds = true;
    for (const ir::GuardTerm &term : node->guard()) {
      const ir::Tensor *c = lookup(term.cond);
      if (!c || c->numElements() != 1)
        return absl::InternalError(absl::StrCat("guard '", term.cond->name(), "' of ",
                                                node->describe(), " has no value of one element"));
      if ((c->getDouble(0) != 0.0) != term.when) {
        holds = false;
        break;
      }
    }
    if (!holds) {
      for (const ir::Value *v : node->outputs())
        if (v && v->type().isStatic() && v->type().dtype != ir::DType::kString &&
            ir::checkTensorSize(v->type().dtype, v->type().staticShape()).ok())
          env[v] = ir::Tensor(v->type().dtype, v->type().staticShape());
      continue;
    }
    std::vector<const ir::Tensor *> args;
    // The If's Where reading a skipped branch's value of a symbolic type:
    // zeros shaped like the taken operand (the types agree, importRuntimeIf).
    if (node->kind() == ir::OpKind::kWhere && node->numInputs() == 3)
      for (int k = 1; k <= 2; ++k) {
        const ir::Value *v = node->input(k), *other = node->input(3 - k);
        const ir::Tensor *o = lookup(other);
        if (v && !lookup(v) && v->producer() && v->producer()->guarded() && o &&
            o->dtype() == v->type().dtype) {
          env[v] = ir::Tensor(o->dtype(), o->shape());
        }
      }
    for (const ir::Value *v : node->inputs()) {
      const ir::Tensor *t = lookup(v);
      if (v && !t)
        return absl::InternalError(absl::StrCat("value '", v->name(), "' used by ",
                                                node->describe(), " has no value",
                                                v->producer() && v->producer()->guarded()
                                                    ? " (its producer's guard did not hold)"
                                                    : ""));
      args.push_back(t);
    }
    FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, evaluateNode(*node, args));
    if (results.size() < node->outputs().size())
      return absl::InternalError(absl::StrCat(node->describe(), " produced ", results.size(),
                                              " results, expected ", node->outputs().size()));
    for (size_t i = 0; i < node->outputs().size(); ++i)
      env[node->outputs()[i]] = std::move(results[i]);
  }
  std::vector<ir::Tensor> out;
  for (const ir::Value *v : graph.outputs()) {
    const ir::Tensor *t = lookup(v);
    if (!t) return absl::InternalError(absl::StrCat("graph output '", v->name(), "' has no value"));
    out.push_back(*t);
  }
  return out;
}

}  // namespace fusec::interp
