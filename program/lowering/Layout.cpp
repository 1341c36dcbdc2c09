//===- Layout.cpp - Data-movement ops as index arithmetic -------------------===//
//
// Transpose, Slice, Gather, Concat, Pad, Expand, Split, ... as index maps into their input.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

#include <algorithm>

namespace fusec::program::lowering {

absl::StatusOr<std::vector<SliceAxis>> constSliceAxes(const Node &n, const Shape &in) {
  auto starts = constInts(n.input(1)), ends = constInts(n.input(2));
  if (!starts || !ends) return unimplemented(n, "slice bounds are not constants");
  std::vector<int64_t> axes, steps;
  if (n.input(3)) {
    auto a = constInts(n.input(3));
    if (!a) return unimplemented(n, "slice axes are not constants");
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (n.input(4)) {
    auto s = constInts(n.input(4));
    if (!s) return unimplemented(n, "slice steps are not constants");
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<SliceAxis> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    SliceAxis sa;
    sa.axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    sa.step = steps[i];
    const int64_t d = in[sa.axis];
    int64_t s = (*starts)[i];
    if (s < 0) s += d;
    sa.start = sa.step > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, 0, d - 1);
    out.push_back(sa);
  }
  return out;
}

absl::StatusOr<int> GroupLowering::layoutAt(const Node &n, const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  const int64_t rank = static_cast<int64_t>(os.size());
  auto normAxis = [&](int64_t a, int64_t r) { return a < 0 ? a + r : a; };
  switch (n.kind()) {
    case OpKind::kReshape: case OpKind::kSqueeze: case OpKind::kUnsqueeze:
    case OpKind::kFlatten: case OpKind::kIdentity: {
      FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
      return valueAt(n.input(0), reshapeIndex(idx, os, is));
    }
    case OpKind::kTranspose: {
      std::vector<int64_t> perm = n.getInts("perm");
      if (perm.empty())
        for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      std::vector<int> sub(rank);
      for (int64_t i = 0; i < rank; ++i) sub[perm[i]] = idx[i];
      return valueAt(n.input(0), sub);
    }
    case OpKind::kSlice: {
      FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
      FUSEC_ASSIGN_OR_RETURN(std::vector<SliceAxis> sliced, constSliceAxes(n, is));
      std::vector<int> sub = idx;
      for (const SliceAxis &sa : sliced)
        sub[sa.axis] = bin(BinaryOp::kAdd, spec_.constI(sa.start), bin(BinaryOp::kMul, idx[sa.axis], spec_.constI(sa.step)));
      return valueAt(n.input(0), sub);
    }
    case OpKind::kGather: {
      FUSEC_ASSIGN_OR_RETURN(Shape ds, staticShape(n.input(0)));
      FUSEC_ASSIGN_OR_RETURN(Shape ids, staticShape(n.input(1)));
      const int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(ids.size());
      const int64_t axis = normAxis(n.getInt("axis", 0), r);
      std::vector<int> iidx(idx.begin() + axis, idx.begin() + axis + q);
      FUSEC_ASSIGN_OR_RETURN(int iv, valueAt(n.input(1), iidx));
      int k = spec_.cast(iv, ScalarType::kIdx);
      k = spec_.select(bin(BinaryOp::kLt, k, spec_.constI(0)),
                       bin(BinaryOp::kAdd, k, spec_.constI(ds[axis])), k);
      // Out-of-range indices are invalid ONNX; clamp so the kernel never faults.
      k = bin(BinaryOp::kMin, bin(BinaryOp::kMax, k, spec_.constI(0)), spec_.constI(ds[axis] - 1));
      std::vector<int> sub(idx.begin(), idx.begin() + axis);
      sub.push_back(k);
      sub.insert(sub.end(), idx.begin() + axis + q, idx.end());
      return valueAt(n.input(0), sub);
    }
    case OpKind::kGatherElements: {
      FUSEC_ASSIGN_OR_RETURN(Shape ds, staticShape(n.input(0)));
      const int64_t axis = normAxis(n.getInt("axis", 0), static_cast<int64_t>(ds.size()));
      FUSEC_ASSIGN_OR_RETURN(int iv, valueAt(n.input(1), idx));
      int k = spec_.cast(iv, ScalarType::kIdx);
      k = spec_.select(bin(BinaryOp::kLt, k, spec_.constI(0)),
                       bin(BinaryOp::kAdd, k, spec_.constI(ds[axis])), k);
      k = bin(BinaryOp::kMin, bin(BinaryOp::kMax, k, spec_.constI(0)), spec_.constI(ds[axis] - 1));
      std::vector<int> sub = idx;
      sub[axis] = k;
      return valueAt(n.input(0), sub);
    }
    case OpKind::kGatherND: {
      FUSEC_ASSIGN_OR_RETURN(Shape ds, staticShape(n.input(0)));
      FUSEC_ASSIGN_OR_RETURN(Shape ids, staticShape(n.input(1)));
      const int64_t b = n.getInt("batch_dims", 0), q = static_cast<int64_t>(ids.size());
      const int64_t kk = ids.back();
      std::vector<int> sub(idx.begin(), idx.begin() + b);
      for (int64_t j = 0; j < kk; ++j) {
        std::vector<int> iidx(idx.begin(), idx.begin() + (q - 1));
        iidx.push_back(spec_.constI(j));
        FUSEC_ASSIGN_OR_RETURN(int iv, valueAt(n.input(1), iidx));
        int64_t d = ds[b + j];
        int k = spec_.cast(iv, ScalarType::kIdx);
        k = spec_.select(bin(BinaryOp::kLt, k, spec_.constI(0)), bin(BinaryOp::kAdd, k, spec_.constI(d)), k);
        k = bin(BinaryOp::kMin, bin(BinaryOp::kMax, k, spec_.constI(0)), spec_.constI(d - 1));
        sub.push_back(k);
      }
      sub.insert(sub.end(), idx.begin() + (q - 1), idx.end());
      return valueAt(n.input(0), sub);
    }
    case OpKind::kOneHot: {
      // values[indices[idx without axis] == idx[axis]] (negative indices count
      // from depth; out-of-range ones match nothing): values is read at 0 / 1.
      FUSEC_ASSIGN_OR_RETURN(Shape vs, staticShape(n.input(2)));
      if (prod(vs) != 2) return unimplemented(n, "values must hold two elements");
      int64_t axis = n.attrI("axis");
      if (axis < -rank || axis >= rank) return unimplemented(n, "axis out of range");
      if (axis < 0) axis += rank;
      // depth is metadata: the kernel's extent along the axis, so a depth
      // tensor known only at run time (which the kernel would not read) is refused.
      if (!n.input(1)->isConstant())
        return unimplemented(n, "depth (input 1) is not a constant; fusec compiles OneHot with the "
                                "depth known at compile time");
      const int64_t depth = os[axis];
      std::vector<int> ii(idx.begin(), idx.end());
      ii.erase(ii.begin() + axis);
      FUSEC_ASSIGN_OR_RETURN(int iv, valueAt(n.input(0), ii));
      // Float indices truncate toward zero (a cast), as ONNX Runtime and the reference.
      int k = spec_.cast(iv, ScalarType::kI64);
      k = spec_.select(bin(BinaryOp::kLt, k, spec_.constI(0, ScalarType::kI64)),
                       bin(BinaryOp::kAdd, k, spec_.constI(depth, ScalarType::kI64)), k);
      const int hit = bin(BinaryOp::kEq, k, spec_.cast(idx[axis], ScalarType::kI64));
      auto valueIdx = [&](int64_t e) { return spec_.delinearize(spec_.constI(e), vs); };
      FUSEC_ASSIGN_OR_RETURN(int off, valueAt(n.input(2), valueIdx(0)));
      FUSEC_ASSIGN_OR_RETURN(int on, valueAt(n.input(2), valueIdx(1)));
      return spec_.select(hit, on, off);
    }
    case OpKind::kExpand:
      return bcastInput(n, 0, idx, os);
    case OpKind::kTile: {
      FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
      std::vector<int> sub(rank);
      for (int64_t i = 0; i < rank; ++i)
        sub[i] = is[i] == os[i] ? idx[i] : bin(BinaryOp::kMod, idx[i], spec_.constI(is[i]));
      return valueAt(n.input(0), sub);
    }
    case OpKind::kTrilu: {
      if (rank < 2) return unimplemented(n, "rank < 2");
      int64_t k = 0;
      if (n.input(1)) {
        auto kv = constInts(n.input(1));
        if (!kv || kv->empty()) return unimplemented(n, "k is not a constant");
        k = (*kv)[0];
      }
      FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), idx));
      int diff = bin(BinaryOp::kSub, idx[rank - 1], idx[rank - 2]);  // j - i
      int keep = n.getInt("upper", 1) ? bin(BinaryOp::kGe, diff, spec_.constI(k))
                                      : bin(BinaryOp::kLe, diff, spec_.constI(k));
      return spec_.select(keep, x, c(0, typeOf(x)));
    }
    case OpKind::kConcat: {
      const int64_t axis = normAxis(n.getInt("axis", 0), rank);
      int64_t off = 0;
      int result = -1;
      for (int i = 0; i < n.numInputs(); ++i) {
        FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(i)));
        const int64_t len = is[axis];
        if (len == 0) continue;
        int inRange = bin(BinaryOp::kAnd, bin(BinaryOp::kGe, idx[axis], spec_.constI(off)),
                          bin(BinaryOp::kLt, idx[axis], spec_.constI(off + len)));
        std::vector<int> sub = idx;
        sub[axis] = bin(BinaryOp::kSub, idx[axis], spec_.constI(off));
        // Only the axis leaves the input's range; the other dims are the output's.
        FUSEC_ASSIGN_OR_RETURN(int v, guardedAt(n.input(i), sub, inRange, static_cast<int>(axis)));
        result = result < 0 ? v : spec_.select(inRange, v, result);
        off += len;
      }
      if (result < 0) return c(0, computeTypeOf(n.output(0)->type().dtype));
      return result;
    }
    case OpKind::kPad: {
      FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
      auto pads = constInts(n.input(1));
      if (!pads) return unimplemented(n, "pads are not constants");
      std::vector<int64_t> axes;
      if (n.input(3)) {
        auto a = constInts(n.input(3));
        if (!a) return unimplemented(n, "pad axes are not constants");
        for (int64_t x : *a) axes.push_back(normAxis(x, rank));
      } else {
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      }
      std::vector<int64_t> begin(rank, 0);
      for (size_t i = 0; i < axes.size(); ++i) begin[axes[i]] = (*pads)[i];
      const std::string mode = n.getString("mode", "constant");
      std::vector<int> sub(rank);
      int inb = spec_.constB(true);
      for (int64_t i = 0; i < rank; ++i) {
        int j = bin(BinaryOp::kSub, idx[i], spec_.constI(begin[i]));
        const int64_t d = is[i];
        if (mode == "edge") {
          j = bin(BinaryOp::kMin, bin(BinaryOp::kMax, j, spec_.constI(0)), spec_.constI(d - 1));
        } else if (mode == "reflect") {
          // One reflection on each side (ONNX requires pads < dim).
          j = spec_.select(bin(BinaryOp::kLt, j, spec_.constI(0)), bin(BinaryOp::kSub, spec_.constI(0), j), j);
          j = spec_.select(bin(BinaryOp::kGe, j, spec_.constI(d)),
                           bin(BinaryOp::kSub, spec_.constI(2 * (d - 1)), j), j);
          j = bin(BinaryOp::kMin, bin(BinaryOp::kMax, j, spec_.constI(0)), spec_.constI(d - 1));
        } else if (mode == "constant") {
          if (begin[i] != 0 || os[i] != d)
            inb = bin(BinaryOp::kAnd, inb,
                      bin(BinaryOp::kAnd, bin(BinaryOp::kGe, j, spec_.constI(0)),
                          bin(BinaryOp::kLt, j, spec_.constI(d))));
        } else {
          return unimplemented(n, absl::StrCat("pad mode '", mode, "'"));
        }
        sub[i] = j;
      }
      if (mode != "constant") return valueAt(n.input(0), sub);
      FUSEC_ASSIGN_OR_RETURN(int x, guardedAt(n.input(0), sub, inb));
      int cv = c(0, typeOf(x));
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int v, scalarAt(n, 2));
        cv = spec_.cast(v, typeOf(x));
      }
      return spec_.select(inb, x, cv);
    }
    case OpKind::kShape: case OpKind::kSize: {
      FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
      if (n.kind() == OpKind::kSize) return spec_.constI(prod(is), ScalarType::kI64);
      int64_t r = static_cast<int64_t>(is.size());
      int64_t start = normAxis(n.getInt("start", 0), r), end = r;
      if (n.hasAttr("end")) end = normAxis(n.getInt("end", r), r);
      start = std::clamp<int64_t>(start, 0, r);
      int v = spec_.constI(0, ScalarType::kI64);
      for (int64_t i = start; i < end && i < r; ++i)
        v = spec_.select(bin(BinaryOp::kEq, idx[0], spec_.constI(i - start)),
                         spec_.constI(is[i], ScalarType::kI64), v);
      return v;
    }
    case OpKind::kConstantOfShape: {
      const ScalarType t = computeTypeOf(n.output(0)->type().dtype);
      const ir::Attribute *a = n.attr("value");
      if (!a || a->kind() != ir::Attribute::Kind::kTensor) return c(0, t);
      return isFloatCompute(t) ? spec_.constF(a->t().getDouble(0), t)
                               : spec_.constI(a->t().getInt(0), t);
    }
    case OpKind::kRange: {
      FUSEC_ASSIGN_OR_RETURN(int start, scalarAt(n, 0));
      FUSEC_ASSIGN_OR_RETURN(int delta, scalarAt(n, 2));
      const ScalarType t = typeOf(start);
      return bin(BinaryOp::kAdd, start,
                 bin(BinaryOp::kMul, spec_.cast(idx[0], t), spec_.cast(delta, t)));
    }
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kDropout: case OpKind::kClip: case OpKind::kAdd: case OpKind::kSub:
    case OpKind::kMul: case OpKind::kDiv: case OpKind::kPow: case OpKind::kMod: case OpKind::kMax:
    case OpKind::kMin: case OpKind::kSum: case OpKind::kMean: case OpKind::kEqual:
    case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv:
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: case OpKind::kLayerNormalization:
    case OpKind::kRMSNormalization: case OpKind::kBatchNormalization: case OpKind::kReduceMean:
    case OpKind::kReduceSum: case OpKind::kReduceMax: case OpKind::kReduceMin:
    case OpKind::kReduceProd: case OpKind::kReduceSumSquare: case OpKind::kReduceL2:
    case OpKind::kArgMax: case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kSplit:
    case OpKind::kConstant: case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
    case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kScatterND: case OpKind::kScatterElements:
    case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      return unimplemented(n, "no index map for this op");
  }
  return unimplemented(n, "no index map for this op");  // an OpKind out of range
}


}  // namespace fusec::program::lowering
