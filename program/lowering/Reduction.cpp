//===- Reduction.cpp - Row reductions and the reduction domain --------------===//
//
// Softmax, LogSoftmax, LayerNormalization, RMSNormalization, Reduce*, ArgMax/ArgMin: the row rule, the reductions and the anchor domain.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"
#include "program/lowering/OpLowering.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusec::program::lowering {



absl::StatusOr<ReduceAxes> reductionAxes(const Node &n, int64_t rank) {
  ReduceAxes r;
  auto norm = [&](int64_t a) -> absl::StatusOr<int64_t> {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return unimplemented(n, "axis out of range");
    return a;
  };
  switch (n.kind()) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kHardmax: {
      FUSEC_ASSIGN_OR_RETURN(int64_t a, norm(n.getInt("axis", -1)));
      r.axes = {a};
      break;
    }
    case OpKind::kLayerNormalization:
    case OpKind::kRMSNormalization: {
      FUSEC_ASSIGN_OR_RETURN(int64_t a, norm(n.getInt("axis", -1)));
      for (int64_t i = a; i < rank; ++i) r.axes.push_back(i);
      break;
    }
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      FUSEC_ASSIGN_OR_RETURN(int64_t a, norm(n.getInt("axis", 0)));
      r.axes = {a};
      r.keepDims = n.getInt("keepdims", 1) != 0;
      break;
    }
    case OpKind::kGlobalAveragePool:
    case OpKind::kGlobalMaxPool:
      for (int64_t i = 2; i < rank; ++i) r.axes.push_back(i);
      break;
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kIdentity: case OpKind::kDropout: case OpKind::kClip: case OpKind::kAdd:
    case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kPow: case OpKind::kMod:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean:
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv:
    case OpKind::kBatchNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kMaxPool:
    case OpKind::kAveragePool: case OpKind::kReshape: case OpKind::kTranspose:
    case OpKind::kFlatten: case OpKind::kSqueeze: case OpKind::kUnsqueeze: case OpKind::kConcat:
    case OpKind::kSplit: case OpKind::kSlice: case OpKind::kGather: case OpKind::kGatherElements:
    case OpKind::kGatherND: case OpKind::kExpand: case OpKind::kTile: case OpKind::kTrilu:
    case OpKind::kPad: case OpKind::kShape: case OpKind::kSize: case OpKind::kConstantOfShape:
    case OpKind::kRange: case OpKind::kConstant: case OpKind::kFusedAttention:
    case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
    case OpKind::kTopK: case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements:
    case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
    case OpKind::kUnregistered: {  // Reduce*
      r.keepDims = n.getInt("keepdims", 1) != 0;
      std::vector<int64_t> axes;
      if (const Value *a = n.input(1)) {
        auto c = constInts(a);
        if (!c) return unimplemented(n, "reduction axes are not a constant");
        axes = *c;
      }
      if (axes.empty()) {
        if (n.getInt("noop_with_empty_axes", 0)) return r;
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      }
      for (int64_t a : axes) {
        FUSEC_ASSIGN_OR_RETURN(int64_t x, norm(a));
        r.axes.push_back(x);
      }
      std::sort(r.axes.begin(), r.axes.end());
      r.axes.erase(std::unique(r.axes.begin(), r.axes.end()), r.axes.end());
    }
  }
  return r;
}

bool isRowReductionOp(OpKind k) { return scalarLoweringOf(k) == ScalarLowering::kReduction; }
absl::StatusOr<std::vector<int>> GroupLowering::reducedInputIndex(
    const Node &n, const Shape &s, const std::vector<int64_t> &axes,
    const std::vector<int> &keptIdx) {
  // keptIdx: one index per kept (non-reduced) dim of s, in order.
  Shape kept, red;
  for (size_t d = 0; d < s.size(); ++d)
    (std::count(axes.begin(), axes.end(), static_cast<int64_t>(d)) ? red : kept).push_back(s[d]);
  Shape dkept(domainShape_.begin(), domainShape_.begin() + numParallel_);
  Shape dred(domainShape_.begin() + numParallel_, domainShape_.end());
  if (prod(kept) != prod(dkept) || prod(red) != prod(dred))
    return unimplemented(n, "reduces over different rows than the kernel's first reduction");
  std::vector<int> dpar(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  std::vector<int> dr(domainIdx_.begin() + numParallel_, domainIdx_.end());
  // The requested row must be the kernel's current row.
  if (reshapeIndex(keptIdx, kept, dkept) != dpar &&
      spec_.linearize(keptIdx, kept) != spec_.linearize(dpar, dkept))
    return unimplemented(n, "reduction result is read at another row (a layout change "
                            "between the reduction and its consumer)");
  std::vector<int> ridx = reshapeIndex(dr, dred, red);
  std::vector<int> full(s.size());
  size_t ki = 0, ri = 0;
  for (size_t d = 0; d < s.size(); ++d)
    full[d] = std::count(axes.begin(), axes.end(), static_cast<int64_t>(d)) ? ridx[ri++]
                                                                             : keptIdx[ki++];
  return full;
}

absl::StatusOr<int> GroupLowering::reductionAt(const Node &n, int result,
                                               const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(ReduceAxes ra, reductionAxes(n, static_cast<int64_t>(s.size())));
  if (ra.axes.empty()) {
    // noop_with_empty_axes: identity.
    return valueAt(n.input(0), idx);
  }
  if (!anchor_) return absl::InternalError("codegen: reduction outside a reduction kernel");
  const bool elementLevel = n.output(result)->type().numElements() == prod(s) &&
                            (n.kind() == OpKind::kSoftmax || n.kind() == OpKind::kLogSoftmax ||
                             n.kind() == OpKind::kHardmax ||
                             ((n.kind() == OpKind::kLayerNormalization ||
                               n.kind() == OpKind::kRMSNormalization) && result == 0));
  // The kept coordinates of the requested point.
  std::vector<int> kept;
  if (elementLevel || ra.keepDims) {
    for (size_t d = 0; d < s.size(); ++d)
      if (!std::count(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(d))) kept.push_back(idx[d]);
  } else {
    kept = idx;
  }
  FUSEC_ASSIGN_OR_RETURN(std::vector<int> xi, reducedInputIndex(n, s, ra.axes, kept));
  FUSEC_ASSIGN_OR_RETURN(int xr, valueAt(n.input(0), xi));  // x over the row
  const ScalarType xt = typeOf(xr);
  const ScalarType ft = xt == ScalarType::kF64 ? ScalarType::kF64 : ScalarType::kF32;
  int64_t len = 1;
  for (int64_t a : ra.axes) len *= s[a];
  auto &reds = nodeReductions_[&n];
  auto toF = [&](int e) { return spec_.cast(e, ft); };
  switch (n.kind()) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax: {
      if (reds.empty()) {
        int xf = toF(xr);
        int m = spec_.reduceResult(spec_.addReduction(ReduceKind::kMax, xf));
        int sum = spec_.reduceResult(
            spec_.addReduction(ReduceKind::kSum, un(UnaryOp::kExp, bin(BinaryOp::kSub, xf, m))));
        reds = {m, sum};
      }
      FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), idx));
      int d = bin(BinaryOp::kSub, toF(x), reds[0]);
      if (n.kind() == OpKind::kSoftmax) return bin(BinaryOp::kDiv, un(UnaryOp::kExp, d), reds[1]);
      return bin(BinaryOp::kSub, d, un(UnaryOp::kLog, reds[1]));
    }
    case OpKind::kLayerNormalization: {
      if (reds.empty()) {
        int xf = toF(xr);
        int mean = bin(BinaryOp::kDiv, spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, xf)),
                       c(static_cast<double>(len), ft));
        int dv = bin(BinaryOp::kSub, xf, mean);
        int var = bin(BinaryOp::kDiv,
                      spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, dv, dv))),
                      c(static_cast<double>(len), ft));
        int inv = un(UnaryOp::kRsqrt, bin(BinaryOp::kAdd, var, c(n.getFloat("epsilon", 1e-5f), ft)));
        reds = {mean, inv};
      }
      if (result == 1) return reds[0];
      if (result == 2) return reds[1];
      FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), idx));
      FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
      FUSEC_ASSIGN_OR_RETURN(int scale, bcastInput(n, 1, idx, os));
      int y = bin(BinaryOp::kMul, bin(BinaryOp::kMul, bin(BinaryOp::kSub, toF(x), reds[0]), reds[1]),
                  toF(scale));
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int bias, bcastInput(n, 2, idx, os));
        y = bin(BinaryOp::kAdd, y, toF(bias));
      }
      return y;
    }
    case OpKind::kRMSNormalization: {
      if (reds.empty()) {
        int xf = toF(xr);
        int ms = bin(BinaryOp::kDiv,
                     spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, xf, xf))),
                     c(static_cast<double>(len), ft));
        reds = {un(UnaryOp::kRsqrt, bin(BinaryOp::kAdd, ms, c(n.getFloat("epsilon", 1e-5f), ft)))};
      }
      FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), idx));
      FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
      FUSEC_ASSIGN_OR_RETURN(int scale, bcastInput(n, 1, idx, os));
      return bin(BinaryOp::kMul, bin(BinaryOp::kMul, toF(x), reds[0]), toF(scale));
    }
    case OpKind::kHardmax: {
      // 1 at the row's first maximum (its argmax; ties: the lower index), else 0.
      if (reds.empty())
        reds = {spec_.reduceResult(spec_.addReduction(ReduceKind::kArgMax, toF(xr)))};
      const int64_t axis = ra.axes[0];
      return spec_.select(bin(BinaryOp::kEq, spec_.cast(idx[axis], ScalarType::kI64), reds[0]),
                          c(1, xt), c(0, xt));
    }
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      if (reds.empty())
        reds = {spec_.reduceResult(spec_.addReduction(
            n.kind() == OpKind::kArgMax ? ReduceKind::kArgMax : ReduceKind::kArgMin, xr,
            n.getInt("select_last_index", 0) != 0))};
      return reds[0];
    }
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kIdentity: case OpKind::kDropout: case OpKind::kClip: case OpKind::kAdd:
    case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kPow: case OpKind::kMod:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean:
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv:
    case OpKind::kBatchNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kMaxPool:
    case OpKind::kAveragePool: case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool:
    case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kFlatten: case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice:
    case OpKind::kGather: case OpKind::kGatherElements: case OpKind::kGatherND:
    case OpKind::kExpand: case OpKind::kTile: case OpKind::kTrilu: case OpKind::kPad:
    case OpKind::kShape: case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange:
    case OpKind::kConstant: case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
    case OpKind::kTopK: case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements:
    case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot: {
      if (reds.empty()) {
        int r;
        switch (n.kind()) {
          case OpKind::kReduceSum:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, xr));
            break;
          case OpKind::kReduceMean:
          case OpKind::kGlobalAveragePool:
            // The count as index arithmetic converted to the compute type
            // (not a float literal): under dynamic shapes an integer that
            // varies with the binding is fitted as a symbolic extent, so a
            // mean over a symbolic axis divides by its run-time length.
            r = bin(BinaryOp::kDiv, spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, xr)),
                    isFloatCompute(xt) ? spec_.cast(spec_.constI(len), xt) : c(static_cast<double>(len), xt));
            break;
          case OpKind::kReduceMax:
          case OpKind::kGlobalMaxPool:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kMax, xr));
            break;
          case OpKind::kReduceMin:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kMin, xr));
            break;
          case OpKind::kReduceProd:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kProd, xr));
            break;
          case OpKind::kReduceSumSquare:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, xr, xr)));
            break;
          case OpKind::kReduceL2:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, xr, xr)));
            if (isFloatCompute(xt)) {
              r = un(UnaryOp::kSqrt, r);
            } else {
              r = spec_.cast(un(UnaryOp::kSqrt, spec_.cast(r, ScalarType::kF64)), xt);
            }
            break;
          case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog:
          case OpKind::kSqrt: case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh:
          case OpKind::kSigmoid: case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu:
          case OpKind::kHardSigmoid: case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin:
          case OpKind::kCos: case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound:
          case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
          case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
          case OpKind::kSign: case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf:
          case OpKind::kCast: case OpKind::kIdentity: case OpKind::kDropout: case OpKind::kClip:
          case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
          case OpKind::kPow: case OpKind::kMod: case OpKind::kMax: case OpKind::kMin:
          case OpKind::kSum: case OpKind::kMean: case OpKind::kEqual: case OpKind::kLess:
          case OpKind::kLessOrEqual: case OpKind::kGreater: case OpKind::kGreaterOrEqual:
          case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor: case OpKind::kWhere:
          case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv: case OpKind::kSoftmax:
          case OpKind::kLogSoftmax: case OpKind::kLayerNormalization:
          case OpKind::kRMSNormalization: case OpKind::kBatchNormalization: case OpKind::kArgMax:
          case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
          case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kFlatten:
          case OpKind::kSqueeze: case OpKind::kUnsqueeze: case OpKind::kConcat:
          case OpKind::kSplit: case OpKind::kSlice: case OpKind::kGather:
          case OpKind::kGatherElements: case OpKind::kGatherND: case OpKind::kExpand:
          case OpKind::kTile: case OpKind::kTrilu: case OpKind::kPad: case OpKind::kShape:
          case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange:
          case OpKind::kConstant: case OpKind::kFusedAttention: case OpKind::kUnregistered:
          case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
          case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kScatterND:
          case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
          case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
            return unimplemented(n, "unknown reduction");
        }
        // Max / Min over an empty set of integers or bools: the identity of
        // the *stored* dtype (ONNX: the lowest / highest value of the type;
        // false / true for bool). The accumulator's identity is that of
        // int64, which would store truncated (INT64_MIN as i32 is 0, as
        // bool true). Floats already give -inf / +inf.
        const bool isMax = n.kind() == OpKind::kReduceMax || n.kind() == OpKind::kGlobalMaxPool;
        if (len == 0 && (isMax || n.kind() == OpKind::kReduceMin) && !isFloatCompute(xt)) {
          const ir::DType dt = n.input(0)->type().dtype;
          if (dt == ir::DType::kBool) {
            r = spec_.constB(!isMax);
          } else {
            const int64_t bits = ir::dtypeBits(dt);
            int64_t lo = 0, hi = -1;  // unsigned 64: all ones
            if (ir::isSigned(dt)) {
              lo = bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
              hi = bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
            } else if (bits < 64) {
              hi = (int64_t{1} << bits) - 1;
            }
            r = spec_.constI(isMax ? lo : hi, xt);
          }
        }
        reds = {r};
      }
      return reds[0];
    }
  }
  return unimplemented(n, "unknown reduction");  // an OpKind out of range
}

absl::Status GroupLowering::setupReductionDomain(const Node &anchor) {
  anchor_ = &anchor;
  domainShape_.clear();
  std::vector<int64_t> reducedExt;
  if (anchor.kind() == OpKind::kMaxPool || anchor.kind() == OpKind::kAveragePool) {
    FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(anchor.output(0)));
    std::vector<int64_t> ks = anchor.getInts("kernel_shape");
    if (ks.size() + 2 != os.size()) return unimplemented(anchor, "kernel_shape of wrong rank");
    domainShape_ = os;
    reducedExt = ks;
  } else if (anchor.kind() == OpKind::kConvTranspose) {
    // Y's points; reduced: the group's input channels, then the kernel taps.
    FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(anchor.output(0)));
    FUSEC_ASSIGN_OR_RETURN(Shape ws, staticShape(anchor.input(1)));
    const int64_t group = anchor.getInt("group", 1);
    domainShape_ = os;
    reducedExt = {group > 0 ? ws[0] / group : ws[0]};
    reducedExt.insert(reducedExt.end(), ws.begin() + 2, ws.end());
  } else if (anchor.kind() == OpKind::kMatMul || anchor.kind() == OpKind::kGemm) {
    FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(anchor.output(0)));
    FUSEC_ASSIGN_OR_RETURN(Shape as, staticShape(anchor.input(0)));
    domainShape_ = os;
    int64_t k = as.back();
    if (anchor.kind() == OpKind::kGemm && anchor.getInt("transA", 0)) k = as[0];
    reducedExt = {k};
  } else {
    FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(anchor.input(0)));
    FUSEC_ASSIGN_OR_RETURN(ReduceAxes ra, reductionAxes(anchor, static_cast<int64_t>(s.size())));
    for (size_t d = 0; d < s.size(); ++d)
      if (!std::count(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(d))) domainShape_.push_back(s[d]);
    for (int64_t a : ra.axes) reducedExt.push_back(s[a]);
  }
  numParallel_ = domainShape_.size();
  domainShape_.insert(domainShape_.end(), reducedExt.begin(), reducedExt.end());
  domainIdx_.clear();
  for (size_t d = 0; d < domainShape_.size(); ++d)
    domainIdx_.push_back(spec_.index(spec_.addDim(domainShape_[d], d >= numParallel_)));
  anchorShape_ = domainShape_;
  anchorIdx_ = domainIdx_;
  if (isRowReductionOp(anchor.kind())) {
    FUSEC_ASSIGN_OR_RETURN(anchorShape_, staticShape(anchor.input(0)));
    FUSEC_ASSIGN_OR_RETURN(ReduceAxes ra, reductionAxes(anchor, static_cast<int64_t>(anchorShape_.size())));
    anchorIdx_.assign(anchorShape_.size(), -1);
    size_t ki = 0, ri = numParallel_;
    for (size_t d = 0; d < anchorShape_.size(); ++d)
      anchorIdx_[d] = std::count(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(d))
                          ? domainIdx_[ri++]
                          : domainIdx_[ki++];
  }
  spec_.kind = SpecKind::kReduce;
  return absl::OkStatus();
}


}  // namespace fusec::program::lowering
