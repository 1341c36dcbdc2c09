//===- Values.cpp - Buffers, loads, broadcasts and elementwise ops ----------===//
//
// valueAt(): member results and group inputs at an index; elementwise op semantics (ONNX operator pages).
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"
#include "program/lowering/OpLowering.h"

#include "ir/QuantGeometry.h"

#include <cmath>
#include <limits>
#include <string>

#include "support/Stack.h"

namespace fusec::program::lowering {

std::vector<int> GroupLowering::reshapeIndex(const std::vector<int> &idx, const Shape &from,
                                             const Shape &to) {
  if (from == to) return idx;
  std::vector<int> nz;
  Shape fnz, tnz;
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1) {
      nz.push_back(idx[i]);
      fnz.push_back(from[i]);
    }
  for (int64_t d : to)
    if (d != 1) tnz.push_back(d);
  if (fnz == tnz) {
    std::vector<int> out;
    size_t k = 0;
    for (int64_t d : to) out.push_back(d == 1 ? spec_.constI(0) : nz[k++]);
    return out;
  }
  return spec_.delinearize(spec_.linearize(idx, from), to);
}

bool GroupLowering::isMemberResult(const Value *v) const {
  return v->producer() && members_.count(v->producer()) && !external_.count(v);
}

const Value *GroupLowering::viewSource(const Value *v, std::vector<const Node *> *chain) const {
  while (v) {
    if (isMemberResult(v)) return v;
    const Node *p = v->producer();
    if (!p || !isViewNode(*p) || members_.count(p)) return nullptr;
    chain->push_back(p);
    v = p->input(0);
  }
  return nullptr;
}

int GroupLowering::bufferFor(const Value *v, bool written) {
  auto it = bufferOf_.find(v);
  if (it != bufferOf_.end()) {
    if (written) spec_.buffers[it->second].written = true;
    return it->second;
  }
  int b = spec_.addBuffer(v->type().dtype, v->type().staticShape(), written);
  bufferOf_[v] = b;
  bufferValues_.push_back(v);
  return b;
}

absl::StatusOr<int> GroupLowering::loadValue(const Value *v, const std::vector<int> &idx,
                                             int guard) {
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
  if (v->type().dtype == DType::kString || v->type().dtype == DType::kUndefined)
    return absl::UnimplementedError(absl::StrCat("codegen: value '", v->name(), "' has dtype ",
                                                 ir::dtypeName(v->type().dtype)));
  // Scalar constants become literals.
  if (opts_.inlineScalarConstants && v->isConstant() && prod(s) == 1) {
    const ir::Tensor &t = *v->constant();
    ScalarType ct = computeTypeOf(t.dtype());
    if (isFloatCompute(ct)) return spec_.constF(t.getDouble(0), ct);
    return spec_.constI(t.getInt(0) != 0 && ct == ScalarType::kBool ? 1 : t.getInt(0), ct);
  }
  if (prod(s) == 0) return c(0, computeTypeOf(v->type().dtype));
  int b = bufferFor(v, false);
  return spec_.load(b, idx, guard);
}

int GroupLowering::leadingInputs(const Node &n, int result) {
  if (scalarLoweringOf(n.kind()) != ScalarLowering::kElementwise) return 0;
  switch (n.kind()) {
    case OpKind::kWhere: return 3;
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean:
      return std::min(2, n.numInputs());
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kMod:
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kPRelu: case OpKind::kBitShift:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor:
      return 2;
    case OpKind::kDropout: return result == 0 ? 1 : 0;
    default: return n.numInputs() > 0 ? 1 : 0;  // unary ops, Clip, Pow, BatchNormalization
  }
}

absl::Status GroupLowering::lowerOperandsFirst(const Value *root, const std::vector<int> &rootIdx) {
  // One frame per (value, index) whose elementwise producer (or view
  // source) is lowered here, children before parents, in the order the
  // recursion of valueAt would reach them: the expressions (and their ids)
  // come out the same, only the C++ stack stays flat.
  struct Frame {
    const Value *v;
    std::vector<int> idx;
    int next = 0;  // the next leading input to visit
  };
  std::vector<Frame> stack;
  stack.push_back({root, rootIdx});
  while (!stack.empty()) {
    Frame &f = stack.back();
    const Value *child = nullptr;
    std::vector<int> sub;
    if (isMemberResult(f.v)) {
      const Node &n = *f.v->producer();
      if (f.next < leadingInputs(n, f.v->resultIndex())) {
        const int i = f.next++;
        child = n.input(i);
        absl::StatusOr<Shape> os = staticShape(f.v), s = child ? staticShape(child) : os;
        bool ok = child && os.ok() && s.ok() && s->size() <= os->size();
        for (size_t d = 0; ok && d < s->size(); ++d) {
          const size_t o = d + os->size() - s->size();
          if ((*s)[d] == (*os)[o]) sub.push_back(f.idx[o]);
          else if ((*s)[d] == 1) sub.push_back(spec_.constI(0));
          else ok = false;
        }
        if (!ok) f.next = 1 << 30;  // the op itself reports it
        if (!ok) continue;
      }
    } else if (f.next == 0) {
      f.next = 1;
      std::vector<const Node *> chain;
      const Value *src = viewSource(f.v, &chain);
      absl::StatusOr<Shape> vs = staticShape(f.v);
      absl::StatusOr<Shape> ss = src ? staticShape(src) : vs;
      if (src && vs.ok() && ss.ok()) {
        child = src;
        sub = reshapeIndex(f.idx, *vs, *ss);
      }
    }
    if (!child) {
      // Every leading operand is lowered: this value's own expression.
      Frame done = std::move(stack.back());
      stack.pop_back();
      if (stack.empty()) return absl::OkStatus();  // the caller lowers the root
      FUSEC_RETURN_IF_ERROR(valueAt(done.v, done.idx).status());
      continue;
    }
    if (memo_.count({child, sub})) continue;
    std::vector<const Node *> chain;
    const bool deep = (isMemberResult(child) &&
                       leadingInputs(*child->producer(), child->resultIndex()) > 0) ||
                      (!isMemberResult(child) && viewSource(child, &chain));
    if (deep) stack.push_back({child, std::move(sub)});
    else FUSEC_RETURN_IF_ERROR(valueAt(child, sub).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> GroupLowering::valueAt(const Value *v, const std::vector<int> &idx) {
  if (!v) return absl::InternalError("codegen: missing value");
  auto key = std::make_pair(v, idx);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  // Long elementwise chains: their operands first, without recursion.
  FUSEC_RETURN_IF_ERROR(lowerOperandsFirst(v, idx));
  // What still recurses (layout and reduction ops nested in one kernel)
  // stops with an error before the stack runs out.
  if (support::stackNearlyExhausted())
    return absl::UnimplementedError(absl::StrCat(
        "codegen: value '", v->name(), "'", v->producer() ? absl::StrCat(" of node ", nodeDesc(*v->producer())) : "",
        " is nested too deeply within one kernel (the lowering ran out of stack)"));
  int result;
  if (isMemberResult(v)) {
    FUSEC_ASSIGN_OR_RETURN(result, nodeAt(*v->producer(), v->resultIndex(), idx));
  } else {
    std::vector<const Node *> chain;
    const Value *src = viewSource(v, &chain);
    if (src) {
      // A view of a member result: same flat offset.
      FUSEC_ASSIGN_OR_RETURN(Shape vs, staticShape(v));
      FUSEC_ASSIGN_OR_RETURN(Shape ss, staticShape(src));
      std::vector<int> sidx = reshapeIndex(idx, vs, ss);
      FUSEC_ASSIGN_OR_RETURN(result, valueAt(src, sidx));
    } else {
      FUSEC_ASSIGN_OR_RETURN(result, loadValue(v, idx));
    }
  }
  memo_[key] = result;
  return result;
}

absl::StatusOr<int> GroupLowering::scalarAt(const Node &n, int i) {
  const Value *v = n.input(i);
  if (!v) return unimplemented(n, absl::StrCat("input ", i, " is missing"));
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
  if (prod(s) > 1)
    return absl::InvalidArgumentError(
        absl::StrCat("codegen: cannot lower node ", nodeDesc(n), ": input ", i,
                     " must be a scalar (one element), got ", v->type().str()));
  std::vector<int> zero(s.size());
  for (int &z : zero) z = spec_.constI(0);
  return valueAt(v, zero);
}

absl::StatusOr<int> GroupLowering::guardedAt(const Value *v, std::vector<int> idx, int guard, int onlyDim) {
  std::vector<const Node *> chain;
  if (!isMemberResult(v) && !viewSource(v, &chain)) return loadValue(v, idx, guard);
  // Computed in the kernel: clamp indices into range so the computation
  // stays in bounds, the caller selects.
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
  for (size_t i = 0; i < idx.size(); ++i)
    if (onlyDim < 0 || static_cast<int>(i) == onlyDim)
      idx[i] = bin(BinaryOp::kMin, bin(BinaryOp::kMax, idx[i], spec_.constI(0)),
                   spec_.constI(std::max<int64_t>(s[i] - 1, 0)));
  return valueAt(v, idx);
}

absl::StatusOr<int> GroupLowering::bcastInput(const Node &n, int i, const std::vector<int> &idx,
                                              const Shape &outShape) {
  const Value *in = n.input(i);
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(in));
  if (s.size() > outShape.size()) return unimplemented(n, "input rank exceeds output rank");
  const size_t off = outShape.size() - s.size();
  std::vector<int> sub(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == outShape[d + off]) sub[d] = idx[d + off];
    else if (s[d] == 1) sub[d] = spec_.constI(0);
    else return unimplemented(n, "shapes do not broadcast");
  }
  return valueAt(in, sub);
}

namespace {

/// Kernels compute integers in i64, so a u64 value at or above 2^63 reads
/// negative: exact through data movement and the wrapping ring operations,
/// wrong wherever order or magnitude matters (compare, max / min, divide,
/// conversion to or from float, a right shift). \returns why \p n cannot
/// be lowered with u64 operands or results, or "" when it can.
std::string u64Hazard(const Node &n) {
  bool u64 = false;
  for (const Value *v : n.inputs()) u64 |= v && v->type().dtype == DType::kU64;
  for (const Value *v : n.outputs()) u64 |= v && v->type().dtype == DType::kU64;
  if (!u64) return "";
  switch (scalarLoweringOf(n.kind())) {
    case ScalarLowering::kLayout: return "";
    case ScalarLowering::kMatMul: return "";  // products and sums wrap as u64 arithmetic does
    default: break;
  }
  switch (n.kind()) {
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kNeg: case OpKind::kEqual:
    case OpKind::kWhere: case OpKind::kIdentity: case OpKind::kDropout: case OpKind::kBitShift:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
    case OpKind::kReduceSum:
      return "";
    case OpKind::kCast: {
      const DType from = n.input(0)->type().dtype, to = n.output(0)->type().dtype;
      if ((ir::isInteger(from) || from == DType::kBool) && (ir::isInteger(to) || to == DType::kBool)) return "";
      if (from == DType::kU64 && ir::isFloat(to)) return "";  // castU64
      break;
    }
    // The unsigned ops (BinaryOp::kDivU, ...; elementwiseAt picks them for
    // u64 operands).
    case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater: case OpKind::kGreaterOrEqual:
    case OpKind::kDiv: case OpKind::kMax: case OpKind::kMin:
      return "";
    case OpKind::kMod:
      if (!n.getInt("fmod", 0)) return "";
      break;
    case OpKind::kPow:  // a float base with a u64 exponent: castU64
      if (n.input(0)->type().dtype != DType::kU64) return "";
      break;
    default: break;
  }
  return "u64 operands: kernels compute integers as i64, so values of 2^63 and above would compare, "
         "divide or convert as negative";
}

}  // namespace

absl::StatusOr<int> GroupLowering::nodeAt(const Node &n, int result, const std::vector<int> &idx) {
  if (std::string why = u64Hazard(n); !why.empty()) return unimplemented(n, why);
  switch (scalarLoweringOf(n.kind())) {
    case ScalarLowering::kLayout: return layoutAt(n, idx);
    case ScalarLowering::kPool: return poolAt(n, idx);
    case ScalarLowering::kResample:
      return n.kind() == OpKind::kGridSample ? gridSampleAt(n, idx) : resizeAt(n, idx);
    case ScalarLowering::kTransposedConv: return convTransposeAt(n, idx);
    case ScalarLowering::kMatMul: return matmulAt(n, idx);
    case ScalarLowering::kReduction: return reductionAt(n, result, idx);
    case ScalarLowering::kElementwise: return elementwiseAt(n, result, idx);
    case ScalarLowering::kOwnKernel: break;
  }
  return unimplemented(n, "no code generator for this op");
}

absl::StatusOr<int> GroupLowering::elementwiseAt(const Node &n, int result,
                                                 const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(result)));
  const DType outDt = n.output(result)->type().dtype;
  const ScalarType ot = computeTypeOf(outDt);
  auto in = [&](int i) { return bcastInput(n, i, idx, os); };
  // u64 operands (i64 bits, u64Hazard lets these through): the unsigned
  // forms of the ops whose result depends on the sign bit.
  const bool u64 = n.numInputs() > 0 && n.input(0) && n.input(0)->type().dtype == DType::kU64;
  auto intOp = [&](BinaryOp op) { return u64 ? unsignedBinaryOp(op) : op; };
  auto unaryOp = [&](UnaryOp op) -> absl::StatusOr<int> {
    FUSEC_ASSIGN_OR_RETURN(int a, in(0));
    return un(op, a);
  };
  auto binaryOp = [&](BinaryOp op) -> absl::StatusOr<int> {
    FUSEC_ASSIGN_OR_RETURN(int a, in(0));
    FUSEC_ASSIGN_OR_RETURN(int b, in(1));
    if (typeOf(a) != typeOf(b)) b = spec_.cast(b, typeOf(a));
    return bin(intOp(op), a, b);
  };
  switch (n.kind()) {
    case OpKind::kAbs: return unaryOp(UnaryOp::kAbs);
    case OpKind::kNeg: return unaryOp(UnaryOp::kNeg);
    case OpKind::kExp: return unaryOp(UnaryOp::kExp);
    case OpKind::kLog: return unaryOp(UnaryOp::kLog);
    case OpKind::kSqrt: return unaryOp(UnaryOp::kSqrt);
    case OpKind::kReciprocal: return unaryOp(UnaryOp::kRecip);
    case OpKind::kErf: return unaryOp(UnaryOp::kErf);
    case OpKind::kTanh: return unaryOp(UnaryOp::kTanh);
    case OpKind::kSigmoid: return unaryOp(UnaryOp::kSigmoid);
    case OpKind::kSin: return unaryOp(UnaryOp::kSin);
    case OpKind::kCos: return unaryOp(UnaryOp::kCos);
    case OpKind::kTan: return unaryOp(UnaryOp::kTan);
    case OpKind::kAsin: return unaryOp(UnaryOp::kAsin);
    case OpKind::kAcos: return unaryOp(UnaryOp::kAcos);
    case OpKind::kAtan: return unaryOp(UnaryOp::kAtan);
    case OpKind::kSinh: return unaryOp(UnaryOp::kSinh);
    case OpKind::kCosh: return unaryOp(UnaryOp::kCosh);
    case OpKind::kAsinh: return unaryOp(UnaryOp::kAsinh);
    case OpKind::kAcosh: return unaryOp(UnaryOp::kAcosh);
    case OpKind::kAtanh: return unaryOp(UnaryOp::kAtanh);
    case OpKind::kFloor: return unaryOp(UnaryOp::kFloor);
    case OpKind::kCeil: return unaryOp(UnaryOp::kCeil);
    case OpKind::kRound: return unaryOp(UnaryOp::kRound);
    case OpKind::kSign: return unaryOp(UnaryOp::kSign);
    case OpKind::kNot: return unaryOp(UnaryOp::kNot);
    case OpKind::kIsNaN: return unaryOp(UnaryOp::kIsNaN);
    case OpKind::kIsInf: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      int r = spec_.constB(false);
      if (n.getInt("detect_positive", 1)) r = bin(BinaryOp::kOr, r, un(UnaryOp::kIsPosInf, a));
      if (n.getInt("detect_negative", 1)) r = bin(BinaryOp::kOr, r, un(UnaryOp::kIsNegInf, a));
      return r;
    }
    case OpKind::kRelu: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      return bin(BinaryOp::kMax, a, c(0, typeOf(a)));
    }
    case OpKind::kLeakyRelu: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      return spec_.select(bin(BinaryOp::kLt, a, c(0, t)),
                          bin(BinaryOp::kMul, a, c(n.getFloat("alpha", 0.01f), t)), a);
    }
    case OpKind::kElu: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      int e = bin(BinaryOp::kMul, c(n.getFloat("alpha", 1.0f), t),
                  bin(BinaryOp::kSub, un(UnaryOp::kExp, a), c(1, t)));
      return spec_.select(bin(BinaryOp::kLt, a, c(0, t)), e, a);
    }
    case OpKind::kHardSigmoid: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      int y = bin(BinaryOp::kAdd, bin(BinaryOp::kMul, a, c(n.getFloat("alpha", 0.2f), t)),
                  c(n.getFloat("beta", 0.5f), t));
      return bin(BinaryOp::kMax, c(0, t), bin(BinaryOp::kMin, c(1, t), y));
    }
    case OpKind::kSwish: {
      // x * sigmoid(alpha x).
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      const float alpha = n.getFloat("alpha", 1.0f);
      return bin(BinaryOp::kMul, a, un(UnaryOp::kSigmoid, alpha == 1.0f ? a : bin(BinaryOp::kMul, a, c(alpha, t))));
    }
    case OpKind::kSoftplus: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      // log(1 + e^x), stable: max(x, 0) + log1p(e^-|x|).
      return bin(BinaryOp::kAdd, bin(BinaryOp::kMax, a, c(0, t)),
                 un(UnaryOp::kLog1p, un(UnaryOp::kExp, un(UnaryOp::kNeg, un(UnaryOp::kAbs, a)))));
    }
    case OpKind::kGelu: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      const ScalarType t = typeOf(a);
      int half = bin(BinaryOp::kMul, c(0.5, t), a);
      if (n.getString("approximate", "none") == "tanh") {
        int x3 = bin(BinaryOp::kMul, bin(BinaryOp::kMul, a, a), a);
        int inner = bin(BinaryOp::kMul, c(0.7978845608028654, t),
                        bin(BinaryOp::kAdd, a, bin(BinaryOp::kMul, c(0.044715, t), x3)));
        return bin(BinaryOp::kMul, half, bin(BinaryOp::kAdd, c(1, t), un(UnaryOp::kTanh, inner)));
      }
      int e = un(UnaryOp::kErf, bin(BinaryOp::kMul, a, c(0.7071067811865476, t)));
      return bin(BinaryOp::kMul, half, bin(BinaryOp::kAdd, c(1, t), e));
    }
    case OpKind::kCast: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      int r = u64 ? spec_.castU64(a, ot) : spec_.cast(a, ot);
      if (outDt == DType::kF16) r = un(UnaryOp::kRoundF16, r);
      if (outDt == DType::kBF16) r = un(UnaryOp::kRoundBF16, r);
      // To float8: rounded in the source's float type (f64 stays f64, so
      // no double rounding through f32), then to f32, which holds it exactly.
      if (isKernelFloat8(outDt)) {
        const bool saturate = n.getInt("saturate", 1) != 0;
        r = isFloatCompute(typeOf(a)) ? spec_.cast(un(roundF8Op(outDt, saturate), a), ot)
                                      : un(roundF8Op(outDt, saturate), r);
      }
      return r;
    }
    case OpKind::kIdentity:
      return in(0);
    case OpKind::kDropout: {
      if (result == 1) return spec_.constB(true);
      return in(0);
    }
    case OpKind::kClip: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      if (n.input(1)) {
        FUSEC_ASSIGN_OR_RETURN(int lo, scalarAt(n, 1));
        a = bin(BinaryOp::kMax, a, spec_.cast(lo, typeOf(a)));
      }
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int hi, scalarAt(n, 2));
        a = bin(BinaryOp::kMin, a, spec_.cast(hi, typeOf(a)));
      }
      return a;
    }
    case OpKind::kBitShift: {
      // Integers in i64: a left shift is truncated to the width on store; a
      // right shift of the sign-extended (signed) or zero-extended
      // (unsigned) value is the arithmetic shift. A count outside
      // [0, width) gives 0, or -1 for a right shift of a negative value
      // (ONNX BitShift-28); the shifted count is clamped to [0, 63] so that
      // both select arms are defined.
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      FUSEC_ASSIGN_OR_RETURN(int s, in(1));
      const ScalarType t = typeOf(a);
      if (t != ScalarType::kI64) return unimplemented(n, "BitShift of a non-integer tensor");
      const bool left = n.getString("direction", "") == "LEFT";
      const int64_t width = 8 * ir::dtypeSize(outDt);
      s = spec_.cast(s, t);
      const int inRange = bin(BinaryOp::kAnd, bin(BinaryOp::kGe, s, c(0, t)),
                              bin(BinaryOp::kLt, s, c(static_cast<double>(width), t)));
      const int count = bin(BinaryOp::kMin, bin(BinaryOp::kMax, s, c(0, t)), c(63, t));
      if (left) {
        // Wrapped to the width here, not only by the store: a consumer in
        // the same kernel reads the value ONNX computes in T.
        int r = bin(BinaryOp::kShl, a, count);
        if (width < 64) {
          const bool isUnsigned = outDt == DType::kU8 || outDt == DType::kU16 || outDt == DType::kU32;
          const int modulus = spec_.constI(int64_t{1} << width, ScalarType::kI64);
          const int half = spec_.constI(int64_t{1} << (width - 1), ScalarType::kI64);
          r = isUnsigned ? bin(BinaryOp::kMod, r, modulus)
                         : bin(BinaryOp::kSub, bin(BinaryOp::kMod, bin(BinaryOp::kAdd, r, half), modulus), half);
        }
        return spec_.select(inRange, r, c(0, t));
      }
      if (outDt == DType::kU64)  // logical: the i64 bits hold a u64
        return spec_.select(inRange, bin(BinaryOp::kShrU, a, count), c(0, t));
      return spec_.select(inRange, bin(BinaryOp::kShr, a, count),
                          spec_.select(bin(BinaryOp::kLt, a, c(0, t)), c(-1, t), c(0, t)));
    }
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: {
      // Integers in i64, sign- or zero-extended from their dtype: the bits of
      // a & b, a | b and a ^ b stay those of a value of the dtype.
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      FUSEC_ASSIGN_OR_RETURN(int b, in(1));
      if (typeOf(a) != ScalarType::kI64) return unimplemented(n, "a bitwise op on a non-integer tensor");
      const BinaryOp op = n.kind() == OpKind::kBitwiseAnd ? BinaryOp::kBitAnd
                          : n.kind() == OpKind::kBitwiseOr ? BinaryOp::kBitOr : BinaryOp::kBitXor;
      return bin(op, a, spec_.cast(b, ScalarType::kI64));
    }
    case OpKind::kBitwiseNot: {
      // ~x of a sign-extended value is sign-extended; an unsigned value
      // flips only its own width's bits (x ^ (2^w - 1)), so a consumer in the
      // same kernel reads the value ONNX computes.
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      if (typeOf(a) != ScalarType::kI64) return unimplemented(n, "BitwiseNot of a non-integer tensor");
      const bool isUnsigned = outDt == DType::kU8 || outDt == DType::kU16 || outDt == DType::kU32;
      const int64_t width = 8 * ir::dtypeSize(outDt);
      const int64_t mask = isUnsigned ? (int64_t{1} << width) - 1 : -1;
      return bin(BinaryOp::kBitXor, a, spec_.constI(mask, ScalarType::kI64));
    }
    case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear: {
      // Scale and zero point read at x's index mapped by the geometry
      // (ir/QuantGeometry.h); the arithmetic is the interpreter's
      // (interp/ops/Elementwise.cpp), f16 / bf16 steps rounded as numpy's.
      FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
      FUSEC_ASSIGN_OR_RETURN(Shape ss, staticShape(n.input(1)));
      absl::StatusOr<ir::QuantGeometry> g = ir::quantGeometry(n, xs, ss);
      if (!g.ok()) return unimplemented(n, std::string(g.status().message()));
      auto param = [&](int i) -> absl::StatusOr<int> {
        FUSEC_ASSIGN_OR_RETURN(Shape ps, staticShape(n.input(i)));
        std::vector<int> pi;
        switch (g->mode) {
          case ir::QuantMode::kPerTensor: pi.assign(ps.size(), spec_.constI(0)); break;
          case ir::QuantMode::kPerAxis: pi = {idx[g->axis]}; break;
          case ir::QuantMode::kBlocked:
            pi = idx;
            pi[g->axis] = bin(BinaryOp::kDiv, idx[g->axis], spec_.constI(g->blockSize));
            break;
        }
        return valueAt(n.input(i), pi);
      };
      auto roundTo = [&](int v, DType t) {
        if (t == DType::kF16) return un(UnaryOp::kRoundF16, v);
        if (t == DType::kBF16) return un(UnaryOp::kRoundBF16, v);
        return v;
      };
      const DType sdt = n.input(1)->type().dtype;
      FUSEC_ASSIGN_OR_RETURN(int x, in(0));
      FUSEC_ASSIGN_OR_RETURN(int s, param(1));
      if (n.kind() == OpKind::kDequantizeLinear) {
        const ScalarType mt = sdt == DType::kF64 ? ScalarType::kF64 : ScalarType::kF32;
        int dx = spec_.cast(x, ScalarType::kF32);
        if (n.input(2)) {
          FUSEC_ASSIGN_OR_RETURN(int zp, param(2));
          dx = bin(BinaryOp::kSub, dx, spec_.cast(zp, ScalarType::kF32));
        }
        int y = bin(BinaryOp::kMul, spec_.cast(dx, mt), spec_.cast(s, mt));
        return roundTo(spec_.cast(y, ot), outDt);
      }
      absl::StatusOr<DType> cdt = ir::quantizeComputeDType(n, n.input(0)->type().dtype, sdt);
      if (!cdt.ok()) return unimplemented(n, std::string(cdt.status().message()));
      // The quotient in f64, then rounded to the compute dtype: the f32
      // quotient exactly as an f32 division rounds it (53 >= 2 * 24 + 2
      // bits), whatever a backend makes of an f32 division by a uniform
      // divisor (the cpu backend multiplies by its reciprocal).
      const ScalarType ct = computeTypeOf(*cdt);
      auto operand = [&](int v) { return spec_.cast(roundTo(spec_.cast(v, ct), *cdt), ScalarType::kF64); };
      const int q = roundTo(spec_.cast(bin(BinaryOp::kDiv, operand(x), operand(s)), ct), *cdt);
      if (isKernelFloat8(outDt)) {
        // q + zero point in the compute dtype, then rounded to the float8
        // dtype with 'saturate' (the interpreter's quantizeLinear).
        int y = q;
        if (n.input(2)) {
          FUSEC_ASSIGN_OR_RETURN(int zp, param(2));
          y = roundTo(bin(BinaryOp::kAdd, q, spec_.cast(zp, ct)), *cdt);
        }
        return spec_.cast(un(roundF8Op(outDt, n.getInt("saturate", 1) != 0), y), ot);
      }
      int64_t lo = 0, hi = 0;
      if (!ir::quantRange(outDt, &lo, &hi)) return unimplemented(n, "a result dtype without an integer range");
      // Clamped in float first so that the conversion to i64 is defined.
      const int r = bin(BinaryOp::kMax, bin(BinaryOp::kMin, un(UnaryOp::kRound, q), c(4.0e18, ct)), c(-4.0e18, ct));
      int v = spec_.cast(r, ScalarType::kI64);
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int zp, param(2));
        v = bin(BinaryOp::kAdd, v, spec_.cast(zp, ScalarType::kI64));
      }
      return bin(BinaryOp::kMax, bin(BinaryOp::kMin, v, spec_.constI(hi, ScalarType::kI64)),
                 spec_.constI(lo, ScalarType::kI64));
    }
    case OpKind::kAdd: return binaryOp(BinaryOp::kAdd);
    case OpKind::kSub: return binaryOp(BinaryOp::kSub);
    case OpKind::kMul: return binaryOp(BinaryOp::kMul);
    case OpKind::kDiv: return binaryOp(BinaryOp::kDiv);
    case OpKind::kMod: {
      if (n.getInt("fmod", 0) || !isFloatCompute(ot))
        return binaryOp(n.getInt("fmod", 0) ? BinaryOp::kFmod : BinaryOp::kMod);
      // fmod = 0 on floats (allowed since the onnx 1.23 node tests; numpy's
      // mod): the result takes the divisor's sign. r = fmod(a, b), then
      // r + b where r is non-zero and its sign differs from b's; built from
      // kFmod so every backend runs it (mod(-3, inf) = inf, as numpy).
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      FUSEC_ASSIGN_OR_RETURN(int b, in(1));
      if (typeOf(a) != typeOf(b)) b = spec_.cast(b, typeOf(a));
      const ScalarType t = typeOf(a);
      const int r = bin(BinaryOp::kFmod, a, b);
      const int signsDiffer = bin(BinaryOp::kXor, bin(BinaryOp::kLt, r, c(0, t)), bin(BinaryOp::kLt, b, c(0, t)));
      const int fix = bin(BinaryOp::kAnd, bin(BinaryOp::kNe, r, c(0, t)), signsDiffer);
      return spec_.select(fix, bin(BinaryOp::kAdd, r, b), r);
    }
    case OpKind::kPow: {
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      // Small integer constant exponents become multiplications.
      const Value *e = n.input(1);
      if (e->isConstant() && e->constant()->numElements() == 1) {
        double p = e->constant()->getDouble(0);
        if (p == 1) return a;
        if (p == 2) return bin(BinaryOp::kMul, a, a);
        if (p == 3) return bin(BinaryOp::kMul, bin(BinaryOp::kMul, a, a), a);
        if (p == 0.5 && isFloatCompute(typeOf(a))) return un(UnaryOp::kSqrt, a);
      }
      FUSEC_ASSIGN_OR_RETURN(int b, in(1));
      if (n.input(1)->type().dtype == DType::kU64) return bin(BinaryOp::kPow, a, spec_.castU64(b, typeOf(a)));
      return bin(BinaryOp::kPow, a, spec_.cast(b, typeOf(a)));
    }
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean: {
      FUSEC_ASSIGN_OR_RETURN(int acc, in(0));
      BinaryOp op = n.kind() == OpKind::kMax   ? BinaryOp::kMax
                    : n.kind() == OpKind::kMin ? BinaryOp::kMin
                                               : BinaryOp::kAdd;
      for (int i = 1; i < n.numInputs(); ++i) {
        FUSEC_ASSIGN_OR_RETURN(int b, in(i));
        acc = bin(intOp(op), acc, spec_.cast(b, typeOf(acc)));
      }
      if (n.kind() == OpKind::kMean) acc = bin(BinaryOp::kDiv, acc, c(n.numInputs(), typeOf(acc)));
      return acc;
    }
    case OpKind::kEqual: return binaryOp(BinaryOp::kEq);
    case OpKind::kLess: return binaryOp(BinaryOp::kLt);
    case OpKind::kLessOrEqual: return binaryOp(BinaryOp::kLe);
    case OpKind::kGreater: return binaryOp(BinaryOp::kGt);
    case OpKind::kGreaterOrEqual: return binaryOp(BinaryOp::kGe);
    case OpKind::kAnd: return binaryOp(BinaryOp::kAnd);
    case OpKind::kOr: return binaryOp(BinaryOp::kOr);
    case OpKind::kXor: return binaryOp(BinaryOp::kXor);
    case OpKind::kPRelu: {
      // x < 0 ? slope * x : x, slope broadcast to x (unidirectional; shape
      // inference checked it).
      FUSEC_ASSIGN_OR_RETURN(int a, in(0));
      FUSEC_ASSIGN_OR_RETURN(int s, in(1));
      const ScalarType t = typeOf(a);
      return spec_.select(bin(BinaryOp::kLt, a, c(0, t)), bin(BinaryOp::kMul, spec_.cast(s, t), a), a);
    }
    case OpKind::kWhere: {
      FUSEC_ASSIGN_OR_RETURN(int cond, in(0));
      FUSEC_ASSIGN_OR_RETURN(int a, in(1));
      FUSEC_ASSIGN_OR_RETURN(int b, in(2));
      return spec_.select(spec_.cast(cond, ScalarType::kBool), a, spec_.cast(b, typeOf(a)));
    }
    case OpKind::kBatchNormalization: {
      if (os.size() < 2) return unimplemented(n, "input rank < 2");
      FUSEC_ASSIGN_OR_RETURN(int x, in(0));
      const ScalarType t = typeOf(x);
      std::vector<int> ch = {idx[1]};
      FUSEC_ASSIGN_OR_RETURN(int scale, valueAt(n.input(1), ch));
      FUSEC_ASSIGN_OR_RETURN(int bias, valueAt(n.input(2), ch));
      FUSEC_ASSIGN_OR_RETURN(int mean, valueAt(n.input(3), ch));
      FUSEC_ASSIGN_OR_RETURN(int var, valueAt(n.input(4), ch));
      int inv = un(UnaryOp::kRsqrt, bin(BinaryOp::kAdd, spec_.cast(var, t),
                                        c(n.getFloat("epsilon", 1e-5f), t)));
      int y = bin(BinaryOp::kMul, bin(BinaryOp::kSub, x, spec_.cast(mean, t)),
                  bin(BinaryOp::kMul, inv, spec_.cast(scale, t)));
      return bin(BinaryOp::kAdd, y, spec_.cast(bias, t));
    }
    case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv: case OpKind::kSoftmax:
    case OpKind::kConvTranspose:
    case OpKind::kLogSoftmax: case OpKind::kLayerNormalization: case OpKind::kRMSNormalization:
    case OpKind::kReduceMean: case OpKind::kReduceSum: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceSumSquare:
    case OpKind::kReduceL2: case OpKind::kArgMax: case OpKind::kArgMin: case OpKind::kMaxPool:
    case OpKind::kAveragePool: case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool:
    case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kFlatten: case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice:
    case OpKind::kGather: case OpKind::kGatherElements: case OpKind::kGatherND:
    case OpKind::kExpand: case OpKind::kTile: case OpKind::kTrilu: case OpKind::kPad:
    case OpKind::kShape: case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange:
    case OpKind::kConstant: case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize: case OpKind::kTopK: case OpKind::kHardmax:
    case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements:
      return unimplemented(n, "elementwise op without a scalar definition");
  }
  return unimplemented(n, "elementwise op without a scalar definition");  // OpKind out of range
}


}  // namespace fusec::program::lowering
