//===- PatternUtils.cpp - Helpers for dataflow pattern matching -----------===//
#include "passes/utils/PatternUtils.h"

#include <algorithm>
#include <cmath>

#include "ir/ShapeInference.h"
#include "support/Status.h"

namespace fusec::passes {

bool approxEqual(double a, double b, double rtol) {
  if (a == b) return true;
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return std::fabs(a - b) <= rtol * std::max(std::fabs(a), std::fabs(b));
}

std::optional<double> splatConstant(const ir::Value *v) {
  if (!v) return std::nullopt;
  if (const ir::Node *cast = producerOf(v, ir::OpKind::kCast)) {
    std::optional<double> inner = splatConstant(cast->input(0));
    if (!inner) return std::nullopt;
    auto to = static_cast<ir::DType>(cast->getInt("to", 0));
    if (to == ir::DType::kBool) return *inner != 0 ? 1.0 : 0.0;
    if (ir::isInteger(to)) return std::trunc(*inner);
    if (!ir::isFloat(to)) return std::nullopt;
    return inner;
  }
  const ir::Tensor *t = v->constant();
  if (!t || t->numElements() < 1) return std::nullopt;
  if (t->dtype() == ir::DType::kString || t->dtype() == ir::DType::kUndefined) return std::nullopt;
  double first = t->getDouble(0);
  for (int64_t i = 1; i < t->numElements(); ++i)
    if (t->getDouble(i) != first) return std::nullopt;
  return first;
}

bool isSplatConstant(const ir::Value *v, double expected, double rtol) {
  std::optional<double> c = splatConstant(v);
  return c && approxEqual(*c, expected, rtol);
}

ir::Node *producerOf(const ir::Value *v, ir::OpKind kind) {
  if (!v || !v->producer()) return nullptr;
  return v->producer()->kind() == kind ? v->producer() : nullptr;
}

UseInfo::UseInfo(const ir::Graph &graph)
    : users_(graph.userMap()), outputs_(graph.outputs().begin(), graph.outputs().end()) {}

const std::vector<ir::Node *> &UseInfo::users(const ir::Value *v) const {
  auto it = users_.find(v);
  return it == users_.end() ? none_ : it->second;
}

bool UseInfo::hasOneUse(const ir::Value *v) const {
  return users(v).size() == 1 && !isGraphOutput(v);
}

bool isSelfContained(const std::vector<ir::Node *> &nodes, const ir::Node *root,
                     const UseInfo &uses) {
  absl::flat_hash_set<const ir::Node *> set(nodes.begin(), nodes.end());
  for (const ir::Node *n : nodes) {
    if (n == root) continue;
    for (const ir::Value *out : n->outputs()) {
      if (uses.isGraphOutput(out)) return false;
      for (const ir::Node *u : uses.users(out))
        if (!set.contains(u)) return false;
    }
  }
  return true;
}

namespace {

void flattenProductImpl(ir::Value *v, bool isRoot, const UseInfo &uses,
                        std::vector<ir::Value *> &factors, std::vector<ir::Node *> &nodes,
                        double &constant, int depth) {
  ir::Node *p = v->producer();
  std::optional<double> divisor;
  bool expand = p && depth < 16 && (isRoot || uses.hasOneUse(v));
  if (expand && p->kind() == ir::OpKind::kDiv) {
    divisor = splatConstant(p->input(1));
    expand = divisor && *divisor != 0;
  } else if (expand) {
    expand = p->kind() == ir::OpKind::kMul;
  }
  if (!expand) {
    if (std::optional<double> c = splatConstant(v)) {
      constant *= *c;
    } else {
      factors.push_back(v);
    }
    return;
  }
  nodes.push_back(p);
  flattenProductImpl(p->input(0), false, uses, factors, nodes, constant, depth + 1);
  if (divisor) {
    constant /= *divisor;
  } else {
    flattenProductImpl(p->input(1), false, uses, factors, nodes, constant, depth + 1);
  }
}

Poly3 polyMul(const Poly3 &a, const Poly3 &b, bool &overflow) {
  Poly3 r{0, 0, 0, 0};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      if (a[i] == 0 || b[j] == 0) continue;
      if (i + j > 3) {
        overflow = true;
        continue;
      }
      r[i + j] += a[i] * b[j];
    }
  return r;
}

}  // namespace

void flattenProduct(ir::Value *v, const UseInfo &uses, std::vector<ir::Value *> &factors,
                    std::vector<ir::Node *> &nodes, double &constant) {
  flattenProductImpl(v, true, uses, factors, nodes, constant, 0);
}

std::optional<Poly3> polynomialIn(ir::Value *v, ir::Value *x, std::vector<ir::Node *> &nodes,
                                  int depth) {
  if (!v || depth > 16) return std::nullopt;
  if (v == x) return Poly3{0, 1, 0, 0};
  if (std::optional<double> c = splatConstant(v)) return Poly3{*c, 0, 0, 0};
  ir::Node *p = v->producer();
  if (!p) return std::nullopt;
  auto sub = [&](int i) { return polynomialIn(p->input(i), x, nodes, depth + 1); };
  std::optional<Poly3> result;
  switch (p->kind()) {
    case ir::OpKind::kAdd:
    case ir::OpKind::kSub: {
      std::optional<Poly3> a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      double sign = p->kind() == ir::OpKind::kAdd ? 1.0 : -1.0;
      Poly3 r;
      for (int i = 0; i < 4; ++i) r[i] = (*a)[i] + sign * (*b)[i];
      result = r;
      break;
    }
    case ir::OpKind::kMul: {
      std::optional<Poly3> a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      bool overflow = false;
      Poly3 r = polyMul(*a, *b, overflow);
      if (overflow) return std::nullopt;
      result = r;
      break;
    }
    case ir::OpKind::kNeg: {
      std::optional<Poly3> a = sub(0);
      if (!a) return std::nullopt;
      for (double &c : *a) c = -c;
      result = a;
      break;
    }
    case ir::OpKind::kDiv: {
      std::optional<double> d = splatConstant(p->input(1));
      std::optional<Poly3> a = sub(0);
      if (!a || !d || *d == 0) return std::nullopt;
      for (double &c : *a) c /= *d;
      result = a;
      break;
    }
    case ir::OpKind::kPow: {
      std::optional<double> e = splatConstant(p->input(1));
      std::optional<Poly3> a = sub(0);
      if (!a || !e || (*e != 1 && *e != 2 && *e != 3)) return std::nullopt;
      Poly3 r = *a;
      bool overflow = false;
      for (int k = 1; k < static_cast<int>(*e); ++k) r = polyMul(r, *a, overflow);
      if (overflow) return std::nullopt;
      result = r;
      break;
    }
    case ir::OpKind::kAbs: case ir::OpKind::kExp: case ir::OpKind::kLog: case ir::OpKind::kSqrt:
    case ir::OpKind::kReciprocal: case ir::OpKind::kErf: case ir::OpKind::kTanh:
    case ir::OpKind::kSigmoid: case ir::OpKind::kRelu: case ir::OpKind::kLeakyRelu:
    case ir::OpKind::kElu: case ir::OpKind::kHardSigmoid: case ir::OpKind::kSoftplus: case ir::OpKind::kSwish:
    case ir::OpKind::kGelu: case ir::OpKind::kSin: case ir::OpKind::kCos: case ir::OpKind::kFloor:
    case ir::OpKind::kTan: case ir::OpKind::kAsin: case ir::OpKind::kAcos: case ir::OpKind::kAtan: case ir::OpKind::kSinh:
    case ir::OpKind::kCosh: case ir::OpKind::kAsinh: case ir::OpKind::kAcosh: case ir::OpKind::kAtanh:
    case ir::OpKind::kCeil: case ir::OpKind::kRound: case ir::OpKind::kSign:
    case ir::OpKind::kNot: case ir::OpKind::kIsNaN: case ir::OpKind::kIsInf:
    case ir::OpKind::kCast: case ir::OpKind::kIdentity: case ir::OpKind::kDropout:
    case ir::OpKind::kClip: case ir::OpKind::kMod: case ir::OpKind::kMax: case ir::OpKind::kMin:
    case ir::OpKind::kSum: case ir::OpKind::kMean: case ir::OpKind::kEqual:
    case ir::OpKind::kLess: case ir::OpKind::kLessOrEqual: case ir::OpKind::kGreater:
    case ir::OpKind::kGreaterOrEqual: case ir::OpKind::kAnd: case ir::OpKind::kOr:
    case ir::OpKind::kXor: case ir::OpKind::kWhere: case ir::OpKind::kMatMul:
    case ir::OpKind::kGemm: case ir::OpKind::kConv: case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: case ir::OpKind::kLayerNormalization:
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
    case ir::OpKind::kPRelu: case ir::OpKind::kConvTranspose: case ir::OpKind::kCumSum: case ir::OpKind::kGridSample: case ir::OpKind::kRoiAlign: case ir::OpKind::kCumProd: case ir::OpKind::kCompress: case ir::OpKind::kBitCast: case ir::OpKind::kCol2Im: case ir::OpKind::kUnique: case ir::OpKind::kTensorScatter: case ir::OpKind::kNonMaxSuppression: case ir::OpKind::kDet: case ir::OpKind::kResize:
    case ir::OpKind::kTopK: case ir::OpKind::kHardmax: case ir::OpKind::kOneHot: case ir::OpKind::kScatterND: case ir::OpKind::kScatterElements: case ir::OpKind::kBitShift: case ir::OpKind::kQuantizeLinear: case ir::OpKind::kDequantizeLinear:
    case ir::OpKind::kBitwiseAnd: case ir::OpKind::kBitwiseOr: case ir::OpKind::kBitwiseXor: case ir::OpKind::kBitwiseNot:
      return std::nullopt;
  }
  nodes.push_back(p);
  return result;
}

bool polyMatches(const Poly3 &p, const Poly3 &expected, double rtol) {
  for (int i = 0; i < 4; ++i) {
    if (expected[i] == 0) {
      if (std::fabs(p[i]) > 1e-12) return false;
    } else if (!approxEqual(p[i], expected[i], rtol)) {
      return false;
    }
  }
  return true;
}

std::optional<std::vector<int64_t>> reduceAxes(const ir::Node &reduce, int64_t rank) {
  if (rank < 0) return std::nullopt;
  std::vector<int64_t> axes;
  const ir::Value *axesInput = reduce.input(1);
  if (axesInput) {
    if (!axesInput->constant()) return std::nullopt;
    axes = axesInput->constant()->toInts();
  } else if (reduce.hasAttr("axes")) {
    axes = reduce.getInts("axes");
  }
  if (axes.empty()) {
    if (reduce.attrI("noop_with_empty_axes") != 0) return std::nullopt;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t &a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

bool replaceValue(ir::Graph &graph, ir::Value *from, ir::Value *to, bool takeName) {
  if (from == to) return false;
  bool fromIsOutput = graph.isGraphOutput(from);
  bool toIsInput =
      std::find(graph.inputs().begin(), graph.inputs().end(), to) != graph.inputs().end();
  if (fromIsOutput) {
    if (toIsInput || graph.isGraphOutput(to)) return false;
    takeName = true;
  }
  if (toIsInput) takeName = false;
  std::string name = from->name();
  if (takeName) graph.renameValue(from, graph.uniqueName(name + ".replaced"));
  graph.replaceAllUsesWith(from, to);
  if (takeName) graph.renameValue(to, name);
  return true;
}

absl::StatusOr<ir::Node *> createNodeBefore(ir::Graph &graph, ir::Node *before,
                                            const std::string &opType,
                                            std::vector<ir::Value *> inputs,
                                            ir::AttributeMap attrs) {
  std::string outName = graph.uniqueName(before->output(0)->name());
  ir::Node *n = graph.addNode(opType, std::move(inputs), {outName}, std::move(attrs),
                              before->name(), before);
  absl::Status st = ir::inferNodeTypes(graph, *n);
  if (!st.ok()) {
    graph.eraseNode(n);
    return st;
  }
  return n;
}

bool typesCompatible(const ir::TensorType &a, const ir::TensorType &b) {
  if (a.dtype != b.dtype || a.rankKnown != b.rankKnown) return false;
  if (!a.rankKnown) return true;
  if (a.rank() != b.rank()) return false;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (a.shape[i].isStatic() && b.shape[i].isStatic() && a.shape[i].value != b.shape[i].value)
      return false;
  return true;
}

}  // namespace fusec::passes
