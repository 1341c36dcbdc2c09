//===- Lowering.cpp - Fused groups to KernelSpecs and library calls -------===//
//
// Each op's semantics are written in the scalar language of KernelSpec by
// valueAt(v, idx): "the expression for tensor v at indices idx", built
// recursively through the group's members (consumer-driven, so broadcasts,
// transposes, slices and gathers become index arithmetic) and ending in
// Loads of the group's inputs. Expressions are hash-consed, so each member
// result is computed once per point.
//
// Reductions (Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
// Reduce*, ArgMax/ArgMin, pooling windows, the K loop of a fallback MatMul)
// share one domain per kernel: parallel dims = the kept dims of the first
// reduction (the anchor), reduced dims = its reduced dims. Another reduction
// joins only if it reduces the same rows (checked structurally: its row
// index expression must equal the domain's).
//
// Semantics follow the ONNX operator pages (opset 13+ forms; the importer
// upgrades older ones).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/Status.h"

namespace fusec::codegen {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;
using Shape = std::vector<int64_t>;

const char *gemmEpilogueName(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone: return "none";
    case GemmEpilogue::kBias: return "bias";
    case GemmEpilogue::kRelu: return "relu";
    case GemmEpilogue::kReluBias: return "relu_bias";
    case GemmEpilogue::kGelu: return "gelu";
    case GemmEpilogue::kGeluBias: return "gelu_bias";
  }
  return "none";
}

bool isViewNode(const Node &node) {
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kFlatten:
    case OpKind::kIdentity:
      return true;
    case OpKind::kDropout:
      return node.numOutputs() < 2 || node.output(1) == nullptr;
    default:
      return false;
  }
}

namespace {

int64_t prod(const Shape &s, size_t b = 0, size_t e = std::string::npos) {
  int64_t n = 1;
  for (size_t i = b; i < std::min(e, s.size()); ++i) n *= s[i];
  return n;
}

absl::StatusOr<Shape> staticShape(const Value *v) {
  if (!v->type().rankKnown || !v->type().isStatic())
    return absl::InvalidArgumentError(absl::StrCat("value '", v->name(), "' has non-static type ",
                                                   v->type().str(),
                                                   " (bind dims with --shape)"));
  return v->type().staticShape();
}

std::string nodeDesc(const Node &n) { return absl::StrCat("'", n.name(), "' (", n.opType(), ")"); }

absl::Status unimplemented(const Node &n, const std::string &why) {
  return absl::UnimplementedError(absl::StrCat("codegen: cannot lower node ", nodeDesc(n), ": ", why));
}

/// Integer values of a constant input; nullopt if absent / not constant.
std::optional<std::vector<int64_t>> constInts(const Value *v) {
  if (!v || !v->isConstant()) return std::nullopt;
  return v->constant()->toInts();
}

bool isFloatCompute(ScalarType t) { return t == ScalarType::kF32 || t == ScalarType::kF64; }

/// Axes of a reduction node over its input of rank \p rank, sorted; and keepdims.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool keepDims = true;
};

absl::StatusOr<ReduceAxes> reductionAxes(const Node &n, int64_t rank) {
  ReduceAxes r;
  auto norm = [&](int64_t a) -> absl::StatusOr<int64_t> {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return unimplemented(n, "axis out of range");
    return a;
  };
  switch (n.kind()) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax: {
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
    default: {  // Reduce*
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

bool isRowReductionOp(OpKind k) {
  switch (k) {
    case OpKind::kSoftmax: case OpKind::kLogSoftmax: case OpKind::kLayerNormalization:
    case OpKind::kRMSNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kArgMax:
    case OpKind::kArgMin: case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool:
      return true;
    default:
      return false;
  }
}

//===----------------------------------------------------------------------===//
// GroupLowering: one generated kernel.
//===----------------------------------------------------------------------===//

class GroupLowering {
 public:
  GroupLowering(const ir::Graph &graph, const std::vector<const Node *> &members,
                const LoweringOptions &opts,
                const absl::flat_hash_map<const Value *, std::vector<Node *>> &users)
      : graph_(graph), members_(members.begin(), members.end()), order_(members), opts_(opts),
        users_(users) {}

  /// Lowers the group; \p external are member results read from memory
  /// instead (the output of a library call before its epilogue).
  absl::StatusOr<WorkItem> run(const std::set<const Value *> &external);

 private:
  // Semantics.
  absl::StatusOr<int> valueAt(const Value *v, const std::vector<int> &idx);
  absl::StatusOr<int> nodeAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> elementwiseAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> layoutAt(const Node &n, const std::vector<int> &idx);
  absl::StatusOr<int> reductionAt(const Node &n, int result, const std::vector<int> &idx);
  absl::StatusOr<int> poolAt(const Node &n, const std::vector<int> &idx);
  absl::StatusOr<int> matmulAt(const Node &n, const std::vector<int> &idx);
  /// Input \p i of \p n at the indices of the output (shape \p outShape) broadcast to it.
  absl::StatusOr<int> bcastInput(const Node &n, int i, const std::vector<int> &idx,
                                 const Shape &outShape);
  /// A load of \p v (an input of the group) with an optional guard.
  absl::StatusOr<int> loadValue(const Value *v, const std::vector<int> &idx, int guard = -1);
  /// valueAt for a value that must only be read where \p guard holds (else 0).
  absl::StatusOr<int> guardedAt(const Value *v, std::vector<int> idx, int guard);
  int bufferFor(const Value *v, bool written);
  bool isMemberResult(const Value *v) const;
  /// Follows views from \p v back to a member result; null if it leaves the group.
  const Value *viewSource(const Value *v, std::vector<const Node *> *chain) const;

  // Domain setup.
  absl::Status setupDomain(const std::vector<const Value *> &outputs);
  absl::Status setupReductionDomain(const Node &anchor);
  /// Maps row coordinates of a reduction over input shape \p s with \p axes to
  /// (kept-dims coords, reduced coords in the domain). Checks the row.
  absl::StatusOr<std::vector<int>> reducedInputIndex(const Node &n, const Shape &s,
                                                     const std::vector<int64_t> &axes,
                                                     const std::vector<int> &keptIdx);

  /// Indices \p idx of a point in shape \p from, re-expressed in shape \p to
  /// (same element count, row-major): direct when the shapes differ only
  /// in 1-dims, else through the flat offset.
  std::vector<int> reshapeIndex(const std::vector<int> &idx, const Shape &from, const Shape &to);

  int c(double v, ScalarType t) { return isFloatCompute(t) ? spec_.constF(v, t) : spec_.constI(static_cast<int64_t>(v), t); }
  int bin(BinaryOp op, int a, int b) { return spec_.binary(op, a, b); }
  int un(UnaryOp op, int a) { return spec_.unary(op, a); }
  ScalarType typeOf(int e) const { return spec_.expr(e).type; }

  const ir::Graph &graph_;
  std::set<const Node *> members_;
  std::vector<const Node *> order_;
  const LoweringOptions &opts_;
  const absl::flat_hash_map<const Value *, std::vector<Node *>> &users_;
  std::set<const Value *> external_;

  KernelSpec spec_;
  std::vector<const Value *> bufferValues_;
  std::map<const Value *, int> bufferOf_;
  std::map<std::pair<const Value *, std::vector<int>>, int> memo_;

  // Domain.
  Shape domainShape_;          ///< parallel dims then reduced dims
  std::vector<int> domainIdx_;
  size_t numParallel_ = 0;
  const Node *anchor_ = nullptr;
  /// The anchor reduction's input shape and the domain point's coordinates
  /// in it (element-level outputs are laid out like the anchor's input).
  Shape anchorShape_;
  std::vector<int> anchorIdx_;
  std::map<const Node *, std::vector<int>> nodeReductions_;
};

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

absl::StatusOr<int> GroupLowering::valueAt(const Value *v, const std::vector<int> &idx) {
  if (!v) return absl::InternalError("codegen: missing value");
  auto key = std::make_pair(v, idx);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
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

absl::StatusOr<int> GroupLowering::guardedAt(const Value *v, std::vector<int> idx, int guard) {
  std::vector<const Node *> chain;
  if (!isMemberResult(v) && !viewSource(v, &chain)) return loadValue(v, idx, guard);
  // Computed in the kernel: clamp indices into range so the computation
  // stays in bounds, the caller selects.
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
  for (size_t i = 0; i < idx.size(); ++i)
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

absl::StatusOr<int> GroupLowering::nodeAt(const Node &n, int result, const std::vector<int> &idx) {
  switch (n.kind()) {
    case OpKind::kTranspose: case OpKind::kSlice: case OpKind::kGather:
    case OpKind::kGatherElements: case OpKind::kGatherND: case OpKind::kExpand:
    case OpKind::kTile: case OpKind::kTrilu: case OpKind::kConcat: case OpKind::kPad:
    case OpKind::kReshape: case OpKind::kSqueeze: case OpKind::kUnsqueeze:
    case OpKind::kFlatten: case OpKind::kIdentity:
    case OpKind::kShape: case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange:
      return layoutAt(n, idx);
    case OpKind::kMaxPool: case OpKind::kAveragePool:
      return poolAt(n, idx);
    case OpKind::kMatMul: case OpKind::kGemm:
      return matmulAt(n, idx);
    default:
      break;
  }
  if (isRowReductionOp(n.kind())) return reductionAt(n, result, idx);
  if (n.op() && n.op()->fusionClass == ir::FusionClass::kElementwise)
    return elementwiseAt(n, result, idx);
  return unimplemented(n, "no code generator for this op");
}

absl::StatusOr<int> GroupLowering::elementwiseAt(const Node &n, int result,
                                                 const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(result)));
  const DType outDt = n.output(result)->type().dtype;
  const ScalarType ot = computeTypeOf(outDt);
  auto in = [&](int i) { return bcastInput(n, i, idx, os); };
  auto unaryOp = [&](UnaryOp op) -> absl::StatusOr<int> {
    FUSEC_ASSIGN_OR_RETURN(int a, in(0));
    return un(op, a);
  };
  auto binaryOp = [&](BinaryOp op) -> absl::StatusOr<int> {
    FUSEC_ASSIGN_OR_RETURN(int a, in(0));
    FUSEC_ASSIGN_OR_RETURN(int b, in(1));
    if (typeOf(a) != typeOf(b)) b = spec_.cast(b, typeOf(a));
    return bin(op, a, b);
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
      int r = spec_.cast(a, ot);
      if (outDt == DType::kF16) r = un(UnaryOp::kRoundF16, r);
      if (outDt == DType::kBF16) r = un(UnaryOp::kRoundBF16, r);
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
        FUSEC_ASSIGN_OR_RETURN(int lo, valueAt(n.input(1), {}));
        a = bin(BinaryOp::kMax, a, spec_.cast(lo, typeOf(a)));
      }
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int hi, valueAt(n.input(2), {}));
        a = bin(BinaryOp::kMin, a, spec_.cast(hi, typeOf(a)));
      }
      return a;
    }
    case OpKind::kAdd: return binaryOp(BinaryOp::kAdd);
    case OpKind::kSub: return binaryOp(BinaryOp::kSub);
    case OpKind::kMul: return binaryOp(BinaryOp::kMul);
    case OpKind::kDiv: return binaryOp(BinaryOp::kDiv);
    case OpKind::kMod:
      return binaryOp(n.getInt("fmod", 0) || isFloatCompute(ot) ? BinaryOp::kFmod : BinaryOp::kMod);
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
      return bin(BinaryOp::kPow, a, spec_.cast(b, typeOf(a)));
    }
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean: {
      FUSEC_ASSIGN_OR_RETURN(int acc, in(0));
      BinaryOp op = n.kind() == OpKind::kMax   ? BinaryOp::kMax
                    : n.kind() == OpKind::kMin ? BinaryOp::kMin
                                               : BinaryOp::kAdd;
      for (int i = 1; i < n.numInputs(); ++i) {
        FUSEC_ASSIGN_OR_RETURN(int b, in(i));
        acc = bin(op, acc, spec_.cast(b, typeOf(acc)));
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
    default:
      return unimplemented(n, "elementwise op without a scalar definition");
  }
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
      std::vector<int> sub = idx;
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = normAxis(axes[i], rank), d = is[a], st = steps[i], s = (*starts)[i];
        if (s < 0) s += d;
        if (st > 0) s = std::clamp<int64_t>(s, 0, d);
        else s = std::clamp<int64_t>(s, 0, d - 1);
        sub[a] = bin(BinaryOp::kAdd, spec_.constI(s), bin(BinaryOp::kMul, idx[a], spec_.constI(st)));
      }
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
        FUSEC_ASSIGN_OR_RETURN(int v, guardedAt(n.input(i), sub, inRange));
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
        FUSEC_ASSIGN_OR_RETURN(int v, valueAt(n.input(2), {}));
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
      FUSEC_ASSIGN_OR_RETURN(int start, valueAt(n.input(0), {}));
      FUSEC_ASSIGN_OR_RETURN(int delta, valueAt(n.input(2), {}));
      const ScalarType t = typeOf(start);
      return bin(BinaryOp::kAdd, start,
                 bin(BinaryOp::kMul, spec_.cast(idx[0], t), spec_.cast(delta, t)));
    }
    default:
      return unimplemented(n, "no index map for this op");
  }
}

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
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      if (reds.empty())
        reds = {spec_.reduceResult(spec_.addReduction(
            n.kind() == OpKind::kArgMax ? ReduceKind::kArgMax : ReduceKind::kArgMin, xr,
            n.getInt("select_last_index", 0) != 0))};
      return reds[0];
    }
    default: {
      if (reds.empty()) {
        int r;
        switch (n.kind()) {
          case OpKind::kReduceSum:
            r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, xr));
            break;
          case OpKind::kReduceMean:
          case OpKind::kGlobalAveragePool:
            r = bin(BinaryOp::kDiv, spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, xr)),
                    c(static_cast<double>(len), xt));
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
          default:
            return unimplemented(n, "unknown reduction");
        }
        reds = {r};
      }
      return reds[0];
    }
  }
}

absl::StatusOr<int> GroupLowering::poolAt(const Node &n, const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  if (anchor_ != &n) return unimplemented(n, "pooling must be the kernel's only reduction");
  const size_t k = xs.size() - 2;
  std::vector<int64_t> ks = n.getInts("kernel_shape");
  if (ks.size() != k) return unimplemented(n, "kernel_shape missing or of wrong rank");
  std::vector<int64_t> strides = n.getInts("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dil = n.getInts("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.getInts("pads", std::vector<int64_t>(2 * k, 0));
  const std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t total = std::max<int64_t>(0, (os[i + 2] - 1) * strides[i] + (ks[i] - 1) * dil[i] + 1 - xs[i + 2]);
      int64_t small = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      pads[i + k] = total - pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  // idx is the output point = the kernel's current row; window dims are reduced.
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] != domainIdx_[d]) return unimplemented(n, "pool output read at another point");
  const ScalarType t = computeTypeOf(n.input(0)->type().dtype);
  std::vector<int> xi = {idx[0], idx[1]};
  int valid = spec_.constB(true), inPadded = spec_.constB(true);
  for (size_t i = 0; i < k; ++i) {
    int p = bin(BinaryOp::kAdd,
                bin(BinaryOp::kSub, bin(BinaryOp::kMul, idx[i + 2], spec_.constI(strides[i])),
                    spec_.constI(pads[i])),
                bin(BinaryOp::kMul, domainIdx_[numParallel_ + i], spec_.constI(dil[i])));
    valid = bin(BinaryOp::kAnd, valid,
                bin(BinaryOp::kAnd, bin(BinaryOp::kGe, p, spec_.constI(0)),
                    bin(BinaryOp::kLt, p, spec_.constI(xs[i + 2]))));
    inPadded = bin(BinaryOp::kAnd, inPadded,
                   bin(BinaryOp::kLt, p, spec_.constI(xs[i + 2] + pads[i + k])));
    xi.push_back(p);
  }
  FUSEC_ASSIGN_OR_RETURN(int x, guardedAt(n.input(0), xi, valid));
  auto &reds = nodeReductions_[&n];
  if (reds.empty()) {
    if (n.kind() == OpKind::kMaxPool) {
      int lowest = isFloatCompute(t) ? c(-INFINITY, t) : spec_.constI(std::numeric_limits<int64_t>::min(), t);
      reds = {spec_.reduceResult(spec_.addReduction(ReduceKind::kMax, spec_.select(valid, x, lowest)))};
    } else {
      int sum = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, spec_.select(valid, x, c(0, t))));
      int cond = n.getInt("count_include_pad", 0) ? inPadded : valid;
      int cnt = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, spec_.select(cond, c(1, t), c(0, t))));
      reds = {bin(BinaryOp::kDiv, sum, cnt)};
    }
  }
  return reds[0];
}

absl::StatusOr<int> GroupLowering::matmulAt(const Node &n, const std::vector<int> &idx) {
  // Naive contraction: the K loop is the kernel's reduced dim.
  if (anchor_ != &n) return unimplemented(n, "MatMul must be the kernel's only reduction");
  FUSEC_ASSIGN_OR_RETURN(Shape as, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape bs, staticShape(n.input(1)));
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] != domainIdx_[d]) return unimplemented(n, "MatMul output read at another point");
  const int kk = domainIdx_[numParallel_];
  std::vector<int> ai, bi;
  if (n.kind() == OpKind::kGemm) {
    const bool ta = n.getInt("transA", 0), tb = n.getInt("transB", 0);
    ai = ta ? std::vector<int>{kk, idx[0]} : std::vector<int>{idx[0], kk};
    bi = tb ? std::vector<int>{idx[1], kk} : std::vector<int>{kk, idx[1]};
  } else {
    const size_t orank = os.size();
    // Output coordinates: batch..., [m], [n] (m absent if A is 1-D, n if B is 1-D).
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    const int mIdx = a1 ? -1 : idx[orank - (b1 ? 1 : 2)];
    const int nIdx = b1 ? -1 : idx[orank - 1];
    const size_t nb = orank - (a1 ? 0 : 1) - (b1 ? 0 : 1);
    auto batchOf = [&](const Shape &s, size_t mat) {
      std::vector<int> r;
      const size_t sb = s.size() - mat;
      for (size_t d = 0; d < sb; ++d) r.push_back(s[d] == 1 ? spec_.constI(0) : idx[nb - sb + d]);
      return r;
    };
    if (a1) ai = {kk};
    else { ai = batchOf(as, 2); ai.push_back(mIdx); ai.push_back(kk); }
    if (b1) bi = {kk};
    else { bi = batchOf(bs, 2); bi.push_back(kk); bi.push_back(nIdx); }
  }
  auto &reds = nodeReductions_[&n];
  if (reds.empty()) {
    FUSEC_ASSIGN_OR_RETURN(int a, valueAt(n.input(0), ai));
    FUSEC_ASSIGN_OR_RETURN(int b, valueAt(n.input(1), bi));
    int r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, a, spec_.cast(b, typeOf(a)))));
    if (n.kind() == OpKind::kGemm) {
      const ScalarType t = typeOf(r);
      r = bin(BinaryOp::kMul, r, c(n.getFloat("alpha", 1.0f), t));
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int cv, bcastInput(n, 2, idx, os));
        r = bin(BinaryOp::kAdd, r, bin(BinaryOp::kMul, spec_.cast(cv, t), c(n.getFloat("beta", 1.0f), t)));
      }
    }
    reds = {r};
  }
  return reds[0];
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

absl::Status GroupLowering::setupDomain(const std::vector<const Value *> &outputs) {
  const Node *anchor = nullptr;
  for (const Node *n : order_) {
    if (isRowReductionOp(n->kind()) || n->kind() == OpKind::kMaxPool ||
        n->kind() == OpKind::kAveragePool || n->kind() == OpKind::kMatMul ||
        n->kind() == OpKind::kGemm) {
      if (external_.count(n->output(0))) continue;
      if (isRowReductionOp(n->kind())) {
        FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n->input(0)));
        FUSEC_ASSIGN_OR_RETURN(ReduceAxes ra, reductionAxes(*n, static_cast<int64_t>(s.size())));
        if (ra.axes.empty()) continue;
      }
      anchor = n;
      break;
    }
  }
  if (anchor) return setupReductionDomain(*anchor);
  // Pointwise: the largest output.
  bool first = true;
  for (const Value *v : outputs) {
    FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
    if (first || prod(s) > prod(domainShape_)) domainShape_ = s;
    first = false;
  }
  domainIdx_.clear();
  for (int64_t e : domainShape_) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = domainShape_.size();
  return absl::OkStatus();
}

absl::StatusOr<WorkItem> GroupLowering::run(const std::set<const Value *> &external) {
  external_ = external;
  // Outputs: member results read outside the group (through views) or graph outputs.
  std::vector<const Value *> outputs;
  std::function<bool(const Value *)> usedOutside = [&](const Value *v) -> bool {
    if (graph_.isGraphOutput(v)) return true;
    auto it = users_.find(v);
    if (it == users_.end()) return false;
    for (const Node *u : it->second) {
      if (members_.count(u)) continue;
      if (isViewNode(*u) && u->input(0) == v) {
        if (usedOutside(u->output(0))) return true;
        continue;
      }
      return true;
    }
    return false;
  };
  for (const Node *n : order_) {
    if (isViewNode(*n)) continue;
    for (const Value *o : n->outputs())
      if (o && !external_.count(o) && usedOutside(o)) outputs.push_back(o);
  }
  WorkItem item;
  item.kind = WorkItem::Kind::kKernel;
  item.nodes = order_;
  if (outputs.empty()) return item;  // dead group: nothing to store

  // Split: one domain over the input, each output stored where it lies.
  if (order_.size() == 1 && order_[0]->kind() == OpKind::kSplit) {
    const Node &n = *order_[0];
    FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
    const int64_t axis = n.getInt("axis", 0) < 0 ? n.getInt("axis", 0) + static_cast<int64_t>(is.size())
                                                 : n.getInt("axis", 0);
    domainShape_ = is;
    for (int64_t e : is) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
    numParallel_ = is.size();
    FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), domainIdx_));
    int64_t off = 0;
    for (const Value *o : n.outputs()) {
      FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(o));
      const int64_t len = os[axis];
      if (std::count(outputs.begin(), outputs.end(), o) && len > 0) {
        std::vector<int> oi = domainIdx_;
        oi[axis] = bin(BinaryOp::kSub, domainIdx_[axis], spec_.constI(off));
        int g = bin(BinaryOp::kAnd, bin(BinaryOp::kGe, domainIdx_[axis], spec_.constI(off)),
                    bin(BinaryOp::kLt, domainIdx_[axis], spec_.constI(off + len)));
        spec_.addStore(bufferFor(o, true), oi, x, g);
      }
      off += len;
    }
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }

  FUSEC_RETURN_IF_ERROR(setupDomain(outputs));
  Shape dpar(domainShape_.begin(), domainShape_.begin() + numParallel_);
  std::vector<int> dparIdx(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  const int64_t rowSize = prod(domainShape_, numParallel_);
  for (const Value *o : outputs) {
    FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(o));
    const int64_t on = prod(os);
    std::vector<int> oi;
    int guard = -1;
    if (anchor_ && on == prod(dpar) * rowSize && rowSize > 1) {
      // Element-level: the full domain.
      oi = reshapeIndex(anchorIdx_, anchorShape_, os);
    } else if (on == prod(dpar)) {
      oi = reshapeIndex(dparIdx, dpar, os);
    } else if (os.size() <= dpar.size()) {
      // Broadcast-compatible with the parallel domain: store where the dropped dims are 0.
      const size_t off = dpar.size() - os.size();
      guard = spec_.constB(true);
      for (size_t d = 0; d < dpar.size(); ++d) {
        if (d >= off && os[d - off] == dpar[d]) {
          oi.push_back(dparIdx[d]);
        } else if (d >= off && os[d - off] == 1) {
          oi.push_back(spec_.constI(0));
          guard = bin(BinaryOp::kAnd, guard, bin(BinaryOp::kEq, dparIdx[d], spec_.constI(0)));
        } else if (d < off) {
          guard = bin(BinaryOp::kAnd, guard, bin(BinaryOp::kEq, dparIdx[d], spec_.constI(0)));
        } else {
          return unimplemented(*o->producer(), absl::StrCat("output '", o->name(), "' of shape ",
                                                            o->type().str(),
                                                            " does not fit the kernel's domain"));
        }
      }
    } else {
      return unimplemented(*o->producer(), absl::StrCat("output '", o->name(), "' of shape ",
                                                        o->type().str(),
                                                        " does not fit the kernel's domain"));
    }
    if (on == 0) continue;
    FUSEC_ASSIGN_OR_RETURN(int v, valueAt(o, oi));
    v = spec_.cast(v, computeTypeOf(o->type().dtype));
    spec_.addStore(bufferFor(o, true), oi, v, guard);
  }
  item.spec = std::move(spec_);
  item.buffers = bufferValues_;
  return item;
}

//===----------------------------------------------------------------------===//
// Library calls.
//===----------------------------------------------------------------------===//

bool gemmDtype(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

/// GEMM parameters for a MatMul / Gemm node writing \p d; nullopt if the
/// library cannot run it (batch broadcast not one strided batch, dtype).
std::optional<GemmParams> gemmFor(const Node &n, bool allowTf32) {
  const Value *a = n.input(0), *b = n.input(1);
  if (!a->type().isStatic() || !b->type().isStatic() || !n.output(0)->type().isStatic())
    return std::nullopt;
  const DType dt = a->type().dtype;
  if (!gemmDtype(dt) || b->type().dtype != dt || n.output(0)->type().dtype != dt) return std::nullopt;
  Shape as = a->type().staticShape(), bs = b->type().staticShape(), os = n.output(0)->type().staticShape();
  GemmParams g;
  g.a = a;
  g.b = b;
  g.d = n.output(0);
  g.dtype = dt;
  g.compute = allowTf32 && dt == DType::kF32 ? "tf32" : "f32";
  if (n.kind() == OpKind::kGemm) {
    if (as.size() != 2 || bs.size() != 2) return std::nullopt;
    g.transA = n.getInt("transA", 0) != 0;
    g.transB = n.getInt("transB", 0) != 0;
    g.m = g.transA ? as[1] : as[0];
    g.k = g.transA ? as[0] : as[1];
    g.n = g.transB ? bs[0] : bs[1];
    g.alpha = n.getFloat("alpha", 1.0f);
    g.strideA = g.m * g.k;
    g.strideB = g.k * g.n;
    g.strideD = g.m * g.n;
    if (const Value *cv = n.input(2)) {
      if (!cv->type().isStatic() || cv->type().dtype != dt) return std::nullopt;
      Shape cs = cv->type().staticShape();
      const double beta = n.getFloat("beta", 1.0f);
      if (cs == Shape{g.m, g.n}) {
        g.c = cv;
        g.beta = beta;
        g.strideC = g.m * g.n;
      } else if (prod(cs) == g.n && !cs.empty() && cs.back() == g.n && beta == 1.0) {
        g.bias = cv;
        g.epilogue = GemmEpilogue::kBias;
      } else {
        return std::nullopt;  // broadcast C: run as a generated kernel
      }
    }
    return g;
  }
  // MatMul with numpy semantics.
  if (as.empty() || bs.empty()) return std::nullopt;
  Shape am = as.size() == 1 ? Shape{1, as[0]} : Shape(as.end() - 2, as.end());
  Shape bm = bs.size() == 1 ? Shape{bs[0], 1} : Shape(bs.end() - 2, bs.end());
  g.m = am[0];
  g.k = am[1];
  g.n = bm[1];
  Shape ab(as.begin(), as.end() - std::min<size_t>(as.size(), 2));
  Shape bb(bs.begin(), bs.end() - std::min<size_t>(bs.size(), 2));
  if (as.size() == 1) ab.clear();
  if (bs.size() == 1) bb.clear();
  const size_t nb = std::max(ab.size(), bb.size());
  Shape ob(nb, 1);
  ab.insert(ab.begin(), nb - ab.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  for (size_t i = 0; i < nb; ++i) ob[i] = std::max(ab[i], bb[i]);
  g.batch = prod(ob);
  auto strideFor = [&](const Shape &s, int64_t mat) -> std::optional<int64_t> {
    if (s == ob) return mat;
    if (prod(s) == 1) return 0;
    return std::nullopt;
  };
  auto sa = strideFor(ab, g.m * g.k), sb = strideFor(bb, g.k * g.n);
  if (!sa || !sb) return std::nullopt;
  g.strideA = g.batch > 1 ? *sa : g.m * g.k;
  g.strideB = g.batch > 1 ? *sb : g.k * g.n;
  g.strideD = g.m * g.n;
  return g;
}

absl::StatusOr<ConvParams> convFor(const Node &n) {
  ConvParams p;
  p.x = n.input(0);
  p.w = n.input(1);
  p.bias = n.input(2);
  p.y = n.output(0);
  FUSEC_ASSIGN_OR_RETURN(p.xShape, staticShape(p.x));
  FUSEC_ASSIGN_OR_RETURN(p.wShape, staticShape(p.w));
  FUSEC_ASSIGN_OR_RETURN(p.yShape, staticShape(p.y));
  p.dtype = p.x->type().dtype;
  if (!gemmDtype(p.dtype)) return unimplemented(n, "convolution of a non-float dtype");
  const size_t k = p.xShape.size() - 2;
  std::vector<int64_t> ks = n.getInts("kernel_shape");
  if (ks.empty()) ks.assign(p.wShape.begin() + 2, p.wShape.end());
  p.strides = n.getInts("strides", std::vector<int64_t>(k, 1));
  p.dilations = n.getInts("dilations", std::vector<int64_t>(k, 1));
  p.pads = n.getInts("pads", std::vector<int64_t>(2 * k, 0));
  p.group = n.getInt("group", 1);
  const std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t total = std::max<int64_t>(
          0, (p.yShape[i + 2] - 1) * p.strides[i] + (ks[i] - 1) * p.dilations[i] + 1 - p.xShape[i + 2]);
      int64_t small = total / 2;
      p.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      p.pads[i + k] = total - p.pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(p.pads.begin(), p.pads.end(), 0);
  }
  return p;
}

/// Matches the epilogue chain of a GEMM group against cuBLASLt's fused
/// epilogues. \returns the final Value on success.
const Value *matchGemmEpilogue(const Node &anchor, const std::vector<const Node *> &rest,
                               GemmParams &g) {
  const Value *cur = anchor.output(0);
  size_t i = 0;
  auto next = [&]() -> const Node * { return i < rest.size() ? rest[i] : nullptr; };
  const Node *n = next();
  if (n && n->kind() == OpKind::kAdd && g.epilogue == GemmEpilogue::kNone && !g.c) {
    const Value *other = n->input(0) == cur ? n->input(1) : n->input(1) == cur ? n->input(0) : nullptr;
    const bool otherIsMember =
        other && other->producer() &&
        std::find(rest.begin(), rest.end(), other->producer()) != rest.end();
    if (other && other != cur && !otherIsMember && other->type().isStatic() && other->type().dtype == g.dtype &&
        !other->type().shape.empty() && other->type().numElements() == g.n &&
        other->type().shape.back().value == g.n &&
        n->output(0)->type() == cur->type()) {
      g.bias = other;
      g.epilogue = GemmEpilogue::kBias;
      cur = n->output(0);
      n = (++i, next());
    }
  }
  if (n && (n->kind() == OpKind::kRelu ||
            (n->kind() == OpKind::kGelu && n->getString("approximate", "none") == "tanh")) &&
      n->input(0) == cur) {
    const bool relu = n->kind() == OpKind::kRelu;
    g.epilogue = g.epilogue == GemmEpilogue::kBias
                     ? (relu ? GemmEpilogue::kReluBias : GemmEpilogue::kGeluBias)
                     : (relu ? GemmEpilogue::kRelu : GemmEpilogue::kGelu);
    cur = n->output(0);
    ++i;
  }
  return i == rest.size() ? cur : nullptr;
}

}  // namespace

absl::StatusOr<std::vector<WorkItem>> lowerGraph(const ir::Graph &graph,
                                                 const passes::FusionPlan &plan,
                                                 const LoweringOptions &opts) {
  const std::vector<Node *> nodes = graph.nodes();
  absl::flat_hash_map<const Node *, int> topo;
  for (size_t i = 0; i < nodes.size(); ++i) topo[nodes[i]] = static_cast<int>(i);
  const auto users = graph.userMap();

  // Groups by kernel name; ungrouped non-view nodes form their own groups.
  std::map<std::string, int> groupIndex;
  std::vector<std::string> names;
  std::vector<std::vector<const Node *>> groups;
  for (const passes::Kernel &k : plan.kernels) {
    groupIndex[k.name] = static_cast<int>(groups.size());
    names.push_back(k.name);
    groups.emplace_back();
  }
  for (const Node *n : nodes) {
    const ir::Attribute *a = n->attr(passes::kKernelAttr);
    std::string name;
    if (a && a->kind() == ir::Attribute::Kind::kString) {
      name = a->s();
    } else {
      if (isViewNode(*n)) continue;
      if (n->kind() == OpKind::kConstant) continue;
      name = absl::StrCat("u", groups.size(), "_", n->opType());
    }
    auto it = groupIndex.find(name);
    if (it == groupIndex.end()) {
      it = groupIndex.emplace(name, static_cast<int>(groups.size())).first;
      names.push_back(name);
      groups.emplace_back();
    }
    groups[it->second].push_back(n);
  }

  // Kernel dependencies (through views), then a stable topological order.
  absl::flat_hash_map<const Node *, int> groupOfNode;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (const Node *n : groups[gi]) groupOfNode[n] = static_cast<int>(gi);
  std::vector<std::set<int>> deps(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (const Node *n : groups[gi]) {
      for (const Value *in : n->inputs()) {
        const Value *v = in;
        while (v && v->producer() && isViewNode(*v->producer()) && !groupOfNode.count(v->producer()))
          v = v->producer()->input(0);
        if (!v || !v->producer()) continue;
        auto it = groupOfNode.find(v->producer());
        if (it != groupOfNode.end() && it->second != static_cast<int>(gi)) deps[gi].insert(it->second);
      }
    }
  }
  std::vector<int> order;
  std::vector<int> state(groups.size(), 0);
  std::function<absl::Status(int)> visit = [&](int g) -> absl::Status {
    if (state[g] == 2) return absl::OkStatus();
    if (state[g] == 1)
      return absl::InternalError(absl::StrCat("codegen: kernels form a cycle at '", names[g], "'"));
    state[g] = 1;
    for (int d : deps[g]) FUSEC_RETURN_IF_ERROR(visit(d));
    state[g] = 2;
    order.push_back(g);
    return absl::OkStatus();
  };
  for (size_t g = 0; g < groups.size(); ++g) FUSEC_RETURN_IF_ERROR(visit(static_cast<int>(g)));

  std::vector<WorkItem> items;
  for (int gi : order) {
    std::vector<const Node *> members = groups[gi];
    if (members.empty()) continue;
    std::sort(members.begin(), members.end(),
              [&](const Node *a, const Node *b) { return topo.at(a) < topo.at(b); });
    const std::string &name = names[gi];
    // FusedAttention (its own kernel kind): an attention spec.
    if (members.size() == 1 && members[0]->kind() == OpKind::kFusedAttention) {
      const Node *att = members[0];
      WorkItem it;
      it.kind = WorkItem::Kind::kKernel;
      it.name = name;
      it.nodes = members;
      FUSEC_ASSIGN_OR_RETURN(it.spec.attention, attentionSpecFor(*att));
      it.spec.kind = SpecKind::kAttention;
      for (int i = 0; i < att->numInputs(); ++i) {
        it.spec.addBuffer(att->input(i)->type().dtype, att->input(i)->type().staticShape(), false);
        it.buffers.push_back(att->input(i));
      }
      it.spec.addBuffer(att->output(0)->type().dtype, att->output(0)->type().staticShape(), true);
      it.buffers.push_back(att->output(0));
      items.push_back(std::move(it));
      continue;
    }
    // Library calls: the first contraction of the group.
    const Node *contraction = nullptr;
    for (const Node *n : members)
      if (n->kind() == OpKind::kMatMul || n->kind() == OpKind::kGemm || n->kind() == OpKind::kConv) {
        contraction = n;
        break;
      }
    std::set<const Value *> external;
    if (contraction) {
      std::vector<const Node *> rest;
      for (const Node *n : members)
        if (n != contraction) rest.push_back(n);
      WorkItem lib;
      lib.name = name;
      lib.nodes = members;
      if (contraction->kind() == OpKind::kConv) {
        FUSEC_ASSIGN_OR_RETURN(lib.conv, convFor(*contraction));
        lib.kind = WorkItem::Kind::kConv;
        items.push_back(lib);
        if (rest.empty()) continue;
        external.insert(contraction->output(0));
      } else if (auto g = gemmFor(*contraction, opts.allowTf32)) {
        lib.kind = WorkItem::Kind::kGemm;
        lib.gemm = *g;
        GemmParams fused = *g;
        const Value *final = matchGemmEpilogue(*contraction, rest, fused);
        bool finalOk = final != nullptr;
        if (finalOk && !rest.empty()) {
          // Intermediate results of the chain must not be needed outside.
          for (const Node *n : rest)
            for (const Value *o : n->outputs())
              if (o != final && (graph.isGraphOutput(o) || graph.users(o).size() > 1)) finalOk = false;
        }
        if (finalOk) {
          fused.d = final;
          lib.gemm = fused;
          items.push_back(lib);
          continue;
        }
        items.push_back(lib);
        if (rest.empty()) continue;
        external.insert(contraction->output(0));
      }
      // else: generated kernel with the contraction as its K reduction.
    }
    GroupLowering gl(graph, members, opts, users);
    auto item = gl.run(external);
    if (!item.ok()) return withContext(item.status(), absl::StrCat("kernel ", name));
    item->name = name;
    if (!item->spec.stores.empty()) items.push_back(std::move(*item));
  }
  return items;
}

}  // namespace fusec::codegen
