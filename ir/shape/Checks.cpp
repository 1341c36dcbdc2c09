//===- Checks.cpp - Operand checks run with shape inference ---------------===//
//
// The checks that shape inference runs on every node before its op's rule
// (so that the verifier, which compares against shape inference, and every
// pass that re-infers see them), beyond ranks and dims:
//   - operand dtypes against the op's FUSEC_DTYPES rows (ir/Ops.def);
//   - operands the op reads as one value (Clip's min / max, Pad's
//     constant_value, Dropout's ratio / training_mode) against its
//     FUSEC_SCALARS rows: a tensor there made the lowering emit a load
//     without indices, which crashed the CUDA printer;
//   - constant operand values the op's semantics bound: Gather /
//     GatherElements / GatherND indices against the extent they index
//     (ONNX allows [-n, n-1]; fusec's lowering would clamp silently),
//     integer Div / Mod by a constant zero, Dropout with training_mode
//     (fusec is an inference compiler; training mode is random), and
//     BatchNormalization parameters whose length is not the channel count
//     (the kernels read C entries of each);
// and, after the rule, that no inferred static result exceeds the tensor
// size limit of ir/Tensor.h (a 2^40 x 2^40 type overflowed byte counts).
//
//===----------------------------------------------------------------------===//
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ir/shape/ShapeInferrer.h"
#include "support/Status.h"

namespace fusec::ir::shape {

namespace {

absl::Status nodeError(const Node &n, const std::string &msg) {
  return absl::InvalidArgumentError(absl::StrCat(n.describe(), ": ", msg));
}

absl::Status checkDTypes(const Node &n) {
  for (const DTypeRule &rule : n.op()->dtypes) {
    DType shared = DType::kUndefined;
    int first = -1;
    for (int i = 0; i < n.numInputs() && i < 32; ++i) {
      if (!(rule.operands & (uint32_t{1} << i)) || !n.input(i)) continue;
      const DType dt = n.input(i)->type().dtype;
      if (dt == DType::kUndefined) continue;
      if (!dtypeInClass(dt, rule.cls))
        return nodeError(n, absl::StrCat("input ", i, " has dtype ", dtypeName(dt), ", expected ",
                                         dtypeClassName(rule.cls)));
      if (shared == DType::kUndefined) {
        shared = dt;
        first = i;
      } else if (dt != shared) {
        return nodeError(n, absl::StrCat("inputs ", first, " and ", i, " have different dtypes (",
                                         dtypeName(shared), ", ", dtypeName(dt), ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status checkScalars(const Node &n) {
  for (const ScalarRule &rule : n.op()->scalars) {
    for (int i = 0; i < n.numInputs() && i < 32; ++i) {
      if (!(rule.operands & (uint32_t{1} << i)) || !n.input(i)) continue;
      const TensorType &t = n.input(i)->type();
      if (!t.rankKnown) continue;
      bool one = true, empty = false;
      for (const Dim &d : t.shape) {
        if (!d.isStatic()) continue;
        if (d.value == 0) empty = true;
        if (d.value != 1) one = false;
      }
      if (one || (empty && rule.cls == ScalarClass::kOneOrEmpty)) continue;
      return nodeError(n, absl::StrCat("input ", i, " must be a scalar (one element), got ",
                                       t.str()));
    }
  }
  return absl::OkStatus();
}

/// Checks every element of constant \p idx to lie in [-extent, extent).
absl::Status checkIndices(const Node &n, const Tensor &idx, int64_t extent, const char *what) {
  for (int64_t i = 0; i < idx.numElements(); ++i) {
    const int64_t v = idx.getInt(i);
    if (v < -extent || v >= extent)
      return nodeError(n, absl::StrCat("constant index ", v, " (element ", i, ") is out of range [",
                                       -extent, ", ", extent - 1, "] of ", what));
  }
  return absl::OkStatus();
}

absl::Status checkConstantOperands(const Node &n) {
  auto constant = [&](int i) -> const Tensor * { return n.input(i) ? n.input(i)->constant() : nullptr; };
  auto inType = [&](int i) { return n.input(i) ? n.input(i)->type() : TensorType::unranked(DType::kUndefined); };
  switch (n.kind()) {
    case OpKind::kGather:
    case OpKind::kGatherElements:
    case OpKind::kScatterElements: {
      const Tensor *idx = constant(1);
      const TensorType x = inType(0);
      if (!idx || !x.rankKnown || x.rank() == 0 || !isInteger(idx->dtype())) return absl::OkStatus();
      int64_t axis = n.attrI("axis");
      if (axis < -x.rank() || axis >= x.rank()) return absl::OkStatus();  // the rule reports it
      if (axis < 0) axis += x.rank();
      if (!x.shape[axis].isStatic()) return absl::OkStatus();
      return checkIndices(n, *idx, x.shape[axis].value, absl::StrCat("data axis ", axis).c_str());
    }
    case OpKind::kGatherND:
    case OpKind::kScatterND: {
      const Tensor *idx = constant(1);
      const TensorType x = inType(0);
      if (!idx || !x.rankKnown || idx->rank() < 1 || !isInteger(idx->dtype())) return absl::OkStatus();
      const int64_t b = n.kind() == OpKind::kGatherND ? n.attrI("batch_dims") : 0;
      const int64_t m = idx->shape().back();
      if (b < 0 || m < 1 || b + m > x.rank()) return absl::OkStatus();  // the rule reports it
      for (int64_t i = 0; i < idx->numElements(); ++i) {
        const Dim &d = x.shape[b + i % m];
        if (!d.isStatic()) continue;
        const int64_t v = idx->getInt(i);
        if (v < -d.value || v >= d.value)
          return nodeError(n, absl::StrCat("constant index ", v, " (element ", i,
                                           ") is out of range [", -d.value, ", ", d.value - 1,
                                           "] of data axis ", b + i % m));
      }
      return absl::OkStatus();
    }
    case OpKind::kDiv:
    case OpKind::kMod: {
      const Tensor *d = constant(1);
      if (!d || !isInteger(d->dtype())) return absl::OkStatus();
      for (int64_t i = 0; i < d->numElements(); ++i)
        if (d->getInt(i) == 0)
          return nodeError(n, absl::StrCat("integer division by a constant zero (divisor element ", i, ")"));
      return absl::OkStatus();
    }
    case OpKind::kGelu: {
      // The reference and onnxruntime refuse any other value; the lowering
      // would compute the exact (erf) form.
      const std::string approx = n.getString("approximate", "none");
      if (approx != "none" && approx != "tanh")
        return nodeError(n, absl::StrCat("attribute approximate = '", approx, "' must be 'none' or 'tanh'"));
      return absl::OkStatus();
    }
    case OpKind::kDropout: {
      // A constant ratio must lie in [0, 1) (onnxruntime refuses others).
      if (const Tensor *ratio = constant(1); ratio && ratio->numElements() == 1) {
        const double rv = ratio->getDouble(0);
        if (!(rv >= 0.0 && rv < 1.0))
          return nodeError(n, absl::StrCat("ratio = ", rv, " must be in [0, 1)"));
      }
      // training_mode (input 2) absent or constant false: inference, a copy.
      // Constant true with a constant zero ratio is a copy too (ONNX). A
      // runtime training_mode is accepted: the reference interpreter refuses
      // true with a non-zero ratio when it sees the value (the ONNX node
      // tests feed training_mode = true with ratio 0 as inputs).
      const Tensor *t = constant(2);
      if (!t) return absl::OkStatus();
      const Tensor *r = constant(1);
      const bool zeroRatio = r && r->numElements() == 1 && r->getDouble(0) == 0.0;
      if (t->numElements() != 1) return nodeError(n, "training_mode must be a scalar");
      if (t->getInt(0) == 0 || zeroRatio) return absl::OkStatus();
      return nodeError(n, "training_mode is true: Dropout would be random; fusec compiles "
                          "inference only (export the model in eval mode)");
    }
    case OpKind::kBatchNormalization: {
      if (n.attrI("training_mode") != 0)
        return nodeError(n, "training_mode = 1: fusec compiles inference only");
      const TensorType x = inType(0);
      if (!x.rankKnown || x.rank() < 2 || !x.shape[1].isStatic()) return absl::OkStatus();
      static const char *const kNames[] = {"scale", "B", "input_mean", "input_var"};
      for (int i = 1; i <= 4; ++i) {
        const TensorType p = inType(i);
        if (!p.rankKnown) continue;
        if (p.rank() != 1)
          return nodeError(n, absl::StrCat(kNames[i - 1], " must have rank 1, got ", p.str()));
        if (p.shape[0].isStatic() && p.shape[0].value != x.shape[1].value)
          return nodeError(n, absl::StrCat(kNames[i - 1], " has ", p.shape[0].value,
                                           " entries, expected the channel count ", x.shape[1].value));
      }
      return absl::OkStatus();
    }
    // No operand value of these is checked here (their shape rules check
    // what they read).
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kIdentity: case OpKind::kClip: case OpKind::kAdd: case OpKind::kSub:
    case OpKind::kMul: case OpKind::kPow: case OpKind::kMax: case OpKind::kMin: case OpKind::kSum:
    case OpKind::kMean: case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual:
    case OpKind::kGreater: case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr:
    case OpKind::kXor: case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm:
    case OpKind::kConv: case OpKind::kSoftmax: case OpKind::kLogSoftmax:
    case OpKind::kLayerNormalization: case OpKind::kRMSNormalization: case OpKind::kReduceMean:
    case OpKind::kReduceSum: case OpKind::kReduceMax: case OpKind::kReduceMin:
    case OpKind::kReduceProd: case OpKind::kReduceSumSquare: case OpKind::kReduceL2:
    case OpKind::kArgMax: case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kReshape:
    case OpKind::kTranspose: case OpKind::kFlatten: case OpKind::kSqueeze: case OpKind::kUnsqueeze:
    case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice: case OpKind::kExpand:
    case OpKind::kTile: case OpKind::kTrilu: case OpKind::kPad: case OpKind::kShape:
    case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange: case OpKind::kConstant:
    case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
    case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      return absl::OkStatus();
  }
  return absl::OkStatus();  // not reached: the switch covers every OpKind
}

}  // namespace

absl::Status checkNodeOperands(const Node &node) {
  if (!node.op()) return absl::OkStatus();
  FUSEC_RETURN_IF_ERROR(checkDTypes(node));
  FUSEC_RETURN_IF_ERROR(checkScalars(node));
  return checkConstantOperands(node);
}

absl::Status checkResultSizes(const Node &node, const std::vector<TensorType> &types) {
  for (size_t i = 0; i < types.size(); ++i) {
    const TensorType &t = types[i];
    if (!t.rankKnown) continue;
    Shape dims;
    for (const Dim &d : t.shape)
      if (d.isStatic()) dims.push_back(d.value);
    if (absl::Status s = checkTensorSize(t.dtype == DType::kUndefined ? DType::kU8 : t.dtype, dims,
                                         absl::StrCat("result ", i).c_str());
        !s.ok())
      return nodeError(node, std::string(s.message()));
  }
  return absl::OkStatus();
}

}  // namespace fusec::ir::shape
