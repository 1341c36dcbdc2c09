//===- FunctionExpansion.cpp - ONNX function ops as op-table ops ----------===//
//
// Each expansion follows the op's ONNX definition (https://onnx.ai/onnx/
// operators/, the op's "Function" body or its formula); constants take the
// input's dtype, so f16/bf16 models stay in their precision.
//
//   CastLike(x, like)        Cast(x, to = dtype(like), saturate)
//   HardSwish(x)             x * HardSigmoid(x; alpha 1/6, beta 0.5)
//   Softsign(x)              x / (1 + |x|)
//   Selu(x; alpha, gamma)    gamma * Elu(x; alpha)
//   Celu(x; alpha)           alpha * Elu(x / alpha; 1)
//   ThresholdedRelu(x; a)    Where(x > a, x, 0)
//   Mish(x)                  x * Tanh(Softplus(x))
//   Swish(x; alpha)          x * Sigmoid(alpha * x)
//   Shrink(x; bias, lambd)   Where(x < -lambd, x + bias, Where(x > lambd, x - bias, 0))
//   PRelu(x, slope)          Where(x < 0, slope * x, x)
//   ReduceL1(x, axes)        ReduceSum(|x|, axes)          (same keepdims, noop_with_empty_axes)
//   ReduceLogSum(x, axes)    Log(ReduceSum(x, axes))
//   LpNormalization(x; axis, p in {1, 2})
//                            x / n with n = ReduceSum(|x|, [axis]) or ReduceL2(x, [axis])
//                            (keepdims), n = 0 replaced by 1 so a zero vector stays 0
//   MeanVarianceNormalization(x; axes = [0, 2, 3])
//                            (x - E[x]) / (Sqrt(E[x^2] - E[x]^2) + 1e-9)   (the spec's body)
//   InstanceNormalization(x, scale, B; epsilon)
//                            (x - mean) / Sqrt(var + epsilon) * scale[c] + B[c] over the
//                            spatial axes [2, rank), var = E[(x - mean)^2]
//
// Reductions are written in their opset-18 form (axes as input 1).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/FunctionExpansion.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Value;

constexpr std::string_view kExpanded[] = {
    "CastLike", "HardSwish", "Softsign", "Selu", "Celu", "ThresholdedRelu", "Mish", "Swish",
    "Shrink", "PRelu", "ReduceL1", "ReduceLogSum", "LpNormalization",
    "MeanVarianceNormalization", "InstanceNormalization"};

/// Builds the nodes of one expansion; the last node gets the spec's output.
class Builder {
 public:
  Builder(Graph &graph, NodeSpec &spec,
          const std::function<std::string(const std::string &)> &uniqueNodeName)
      : graph_(graph), spec_(spec), uniqueNodeName_(uniqueNodeName) {}

  /// A scalar constant of \p dtype.
  Value *scalar(DType dtype, double v) {
    return graph_.addConstant(valueName("_c"), ir::Tensor::scalarDouble(dtype, v));
  }
  Value *ints(const std::vector<int64_t> &v) {
    return graph_.addConstant(valueName("_axes"), ir::Tensor::vectorI64(v));
  }
  /// Adds an intermediate node \p op; \returns its (first) output.
  Value *op(const std::string &opType, std::vector<Value *> inputs, ir::AttributeMap attrs = {}) {
    Node *n = graph_.addNode(opType, std::move(inputs), {valueName("_" + opType)},
                             std::move(attrs), uniqueNodeName_(absl::StrCat(spec_.name, "/", opType)));
    added_.push_back(n);
    return n->output(0);
  }
  /// Adds the final node, which defines the spec's outputs.
  std::vector<Node *> finish(const std::string &opType, std::vector<Value *> inputs,
                             ir::AttributeMap attrs = {}) {
    Node *n = graph_.addNode(opType, std::move(inputs), spec_.outputs, std::move(attrs),
                             spec_.name);
    added_.push_back(n);
    return added_;
  }

 private:
  std::string valueName(const std::string &suffix) {
    std::string base = spec_.outputs.empty() ? spec_.name : spec_.outputs[0];
    return graph_.uniqueName(absl::StrCat(base, suffix));
  }
  Graph &graph_;
  NodeSpec &spec_;
  const std::function<std::string(const std::string &)> &uniqueNodeName_;
  std::vector<Node *> added_;
};

absl::StatusOr<double> floatAttr(const NodeSpec &spec, const char *name, double dflt) {
  auto it = spec.attrs.find(name);
  if (it == spec.attrs.end()) return dflt;
  if (it->second.kind() == Attribute::Kind::kFloat) return it->second.f();
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be a float"));
}

absl::StatusOr<int64_t> intAttr(const NodeSpec &spec, const char *name, int64_t dflt) {
  auto it = spec.attrs.find(name);
  if (it == spec.attrs.end()) return dflt;
  if (it->second.kind() == Attribute::Kind::kInt) return it->second.i();
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be an int"));
}

/// Input \p i, which must be present and have a known dtype.
absl::StatusOr<Value *> input(const NodeSpec &spec, size_t i) {
  if (i >= spec.inputs.size() || spec.inputs[i] == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
  if (spec.inputs[i]->type().dtype == DType::kUndefined)
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no known dtype"));
  return spec.inputs[i];
}

/// The reduction's attributes and axes input, opset-18 form. Before opset
/// 18 these reductions took `axes` as an attribute.
absl::Status reductionOperands(Graph &graph, NodeSpec &spec, int64_t opset, Builder &b,
                               std::vector<Value *> &operands, ir::AttributeMap &attrs) {
  FUSEC_ASSIGN_OR_RETURN(Value * x, input(spec, 0));
  operands = {x};
  Value *axes = spec.inputs.size() > 1 ? spec.inputs[1] : nullptr;
  if (auto it = spec.attrs.find("axes"); it != spec.attrs.end()) {
    if (axes) return absl::InvalidArgumentError("has both the attribute 'axes' and input 1");
    if (it->second.kind() != Attribute::Kind::kInts)
      return absl::InvalidArgumentError("attribute 'axes' must be a list of ints");
    axes = b.ints(it->second.ints());
  }
  if (axes) operands.push_back(axes);
  for (const char *a : {"keepdims", "noop_with_empty_axes"})
    if (auto it = spec.attrs.find(a); it != spec.attrs.end()) attrs[a] = it->second;
  (void)graph;
  (void)opset;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Node *>> expand(Graph &graph, NodeSpec &spec, int64_t opset,
                                           Builder &b) {
  const std::string &op = spec.opType;
  if (spec.outputs.size() != 1)
    return absl::InvalidArgumentError(absl::StrCat(op, " expects one output"));
  FUSEC_ASSIGN_OR_RETURN(Value * x, input(spec, 0));
  const DType dt = x->type().dtype;

  if (op == "CastLike") {
    FUSEC_ASSIGN_OR_RETURN(Value * like, input(spec, 1));
    ir::AttributeMap attrs;
    attrs["to"] = Attribute(static_cast<int64_t>(like->type().dtype));
    if (auto it = spec.attrs.find("saturate"); it != spec.attrs.end()) attrs["saturate"] = it->second;
    return b.finish("Cast", {x}, attrs);
  }
  if (op == "HardSwish") {
    Value *hs = b.op("HardSigmoid", {x}, {{"alpha", Attribute(1.0f / 6.0f)}, {"beta", Attribute(0.5f)}});
    return b.finish("Mul", {x, hs});
  }
  if (op == "Softsign") {
    Value *den = b.op("Add", {b.scalar(dt, 1.0), b.op("Abs", {x})});
    return b.finish("Div", {x, den});
  }
  if (op == "Selu") {
    FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1.67326319217681884765625));
    FUSEC_ASSIGN_OR_RETURN(double gamma, floatAttr(spec, "gamma", 1.05070102214813232421875));
    Value *elu = b.op("Elu", {x}, {{"alpha", Attribute(static_cast<float>(alpha))}});
    return b.finish("Mul", {b.scalar(dt, gamma), elu});
  }
  if (op == "Celu") {
    FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1.0));
    if (alpha == 0) return absl::InvalidArgumentError("Celu alpha must not be 0");
    Value *scaled = b.op("Div", {x, b.scalar(dt, alpha)});
    Value *elu = b.op("Elu", {scaled}, {{"alpha", Attribute(1.0f)}});
    return b.finish("Mul", {b.scalar(dt, alpha), elu});
  }
  if (op == "ThresholdedRelu") {
    FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1.0));
    Value *above = b.op("Greater", {x, b.scalar(dt, alpha)});
    return b.finish("Where", {above, x, b.scalar(dt, 0.0)});
  }
  if (op == "Mish") {
    Value *t = b.op("Tanh", {b.op("Softplus", {x})});
    return b.finish("Mul", {x, t});
  }
  if (op == "Swish") {
    FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1.0));
    Value *s = b.op("Sigmoid", {b.op("Mul", {b.scalar(dt, alpha), x})});
    return b.finish("Mul", {x, s});
  }
  if (op == "Shrink") {
    FUSEC_ASSIGN_OR_RETURN(double bias, floatAttr(spec, "bias", 0.0));
    FUSEC_ASSIGN_OR_RETURN(double lambd, floatAttr(spec, "lambd", 0.5));
    Value *below = b.op("Less", {x, b.scalar(dt, -lambd)});
    Value *above = b.op("Greater", {x, b.scalar(dt, lambd)});
    Value *hi = b.op("Where", {above, b.op("Sub", {x, b.scalar(dt, bias)}), b.scalar(dt, 0.0)});
    return b.finish("Where", {below, b.op("Add", {x, b.scalar(dt, bias)}), hi});
  }
  if (op == "PRelu") {
    FUSEC_ASSIGN_OR_RETURN(Value * slope, input(spec, 1));
    Value *neg = b.op("Less", {x, b.scalar(dt, 0.0)});
    return b.finish("Where", {neg, b.op("Mul", {slope, x}), x});
  }
  if (op == "ReduceL1" || op == "ReduceLogSum") {
    std::vector<Value *> operands;
    ir::AttributeMap attrs;
    FUSEC_RETURN_IF_ERROR(reductionOperands(graph, spec, opset, b, operands, attrs));
    if (op == "ReduceL1") {
      operands[0] = b.op("Abs", {x});
      return b.finish("ReduceSum", operands, attrs);
    }
    return b.finish("Log", {b.op("ReduceSum", operands, attrs)});
  }
  if (op == "LpNormalization") {
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, intAttr(spec, "axis", -1));
    FUSEC_ASSIGN_OR_RETURN(int64_t p, intAttr(spec, "p", 2));
    if (p != 1 && p != 2)
      return absl::InvalidArgumentError(absl::StrCat("LpNormalization p must be 1 or 2, is ", p));
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *norm = p == 2 ? b.op("ReduceL2", {x, b.ints({axis})}, keep)
                         : b.op("ReduceSum", {b.op("Abs", {x}), b.ints({axis})}, keep);
    // A zero vector stays zero (onnx's reference), not 0/0.
    Value *isZero = b.op("Equal", {norm, b.scalar(dt, 0.0)});
    Value *safe = b.op("Where", {isZero, b.scalar(dt, 1.0), norm});
    return b.finish("Div", {x, safe});
  }
  if (op == "MeanVarianceNormalization") {
    std::vector<int64_t> axes = {0, 2, 3};
    if (auto it = spec.attrs.find("axes"); it != spec.attrs.end()) {
      if (it->second.kind() != Attribute::Kind::kInts)
        return absl::InvalidArgumentError("attribute 'axes' must be a list of ints");
      axes = it->second.ints();
    }
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *mean = b.op("ReduceMean", {x, b.ints(axes)}, keep);
    Value *meanSq = b.op("Mul", {mean, mean});
    Value *sqMean = b.op("ReduceMean", {b.op("Mul", {x, x}), b.ints(axes)}, keep);
    Value *stdev = b.op("Sqrt", {b.op("Sub", {sqMean, meanSq})});
    Value *den = b.op("Add", {stdev, b.scalar(dt, 1e-9)});
    return b.finish("Div", {b.op("Sub", {x, mean}), den});
  }
  if (op == "InstanceNormalization") {
    FUSEC_ASSIGN_OR_RETURN(Value * scale, input(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(Value * bias, input(spec, 2));
    FUSEC_ASSIGN_OR_RETURN(double eps, floatAttr(spec, "epsilon", 1e-5));
    if (!x->type().rankKnown || x->type().rank() < 3)
      return absl::InvalidArgumentError(
          "InstanceNormalization needs an input of known rank >= 3 (N, C, spatial...)");
    const int64_t rank = x->type().rank();
    std::vector<int64_t> spatial, perChannel;
    for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
    for (int64_t a = 1; a < rank - 1; ++a) perChannel.push_back(a);  // [C] -> [C,1,..,1]
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *mean = b.op("ReduceMean", {x, b.ints(spatial)}, keep);
    Value *centered = b.op("Sub", {x, mean});
    Value *var = b.op("ReduceMean", {b.op("Mul", {centered, centered}), b.ints(spatial)}, keep);
    Value *inv = b.op("Sqrt", {b.op("Add", {var, b.scalar(dt, eps)})});
    Value *normed = b.op("Div", {centered, inv});
    Value *s = b.op("Unsqueeze", {scale, b.ints(perChannel)});
    Value *bb = b.op("Unsqueeze", {bias, b.ints(perChannel)});
    return b.finish("Add", {b.op("Mul", {normed, s}), bb});
  }
  return absl::InternalError(absl::StrCat("no expansion for ", op));
}

}  // namespace

bool isExpandedFunctionOp(std::string_view opType) {
  for (std::string_view e : kExpanded)
    if (e == opType) return true;
  return false;
}

absl::StatusOr<std::vector<ir::Node *>> expandFunctionOp(
    ir::Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  Builder b(graph, spec, uniqueNodeName);
  return expand(graph, spec, opset, b);
}

}  // namespace fusec::frontend::internal
