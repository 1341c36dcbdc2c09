//===- FunctionExpansion.cpp - ONNX function ops as op-table ops ----------===//
//
// ONNX gives these ops no function body (ONNX functions are expanded
// from the library's bodies instead: OnnxFunctions.h), so they are written
// here from the op's formula in the spec (https://onnx.ai/onnx/operators/);
// constants take the input's dtype, so f16/bf16 models stay in their
// precision.
//
//   LpNormalization(x; axis, p in {1, 2})
//                            x / n with n = ReduceSum(|x|, [axis]) or ReduceL2(x, [axis])
//                            (keepdims), n = 0 replaced by 1 so a zero vector stays 0
//   InstanceNormalization(x, scale, B; epsilon)
//                            (x - mean) / Sqrt(var + epsilon) * scale[c] + B[c] over the
//                            spatial axes [2, rank), var = E[(x - mean)^2]
//
// RotaryEmbedding (opset 23) and SimplifiedLayerNormalization (ONNX Runtime's,
// in the default domain) are written by ContribOps.cpp, with the contrib
// ops of the same name.
//
// Reductions are written in their opset-18 form (axes as input 1).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/FunctionExpansion.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/internal/ContribOps.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Value;

// RotaryEmbedding (ai.onnx opset 23, whose ONNX body is context-dependent and
// not built by the linked onnx library) and SimplifiedLayerNormalization (not
// an ONNX op: ONNX Runtime registers it in the default domain, and its
// transformer optimiser writes it there) share the contrib ops' mappings
// (ContribOps.h).
constexpr std::string_view kExpanded[] = {"LpNormalization", "InstanceNormalization",
                                          "RotaryEmbedding", "SimplifiedLayerNormalization"};

using Builder = ExpansionBuilder;

/// Input \p i, which must be present and have a known dtype.
absl::StatusOr<Value *> input(const NodeSpec &spec, size_t i) { return requiredInput(spec, i); }

absl::StatusOr<std::vector<Node *>> expand(Graph &graph, NodeSpec &spec, int64_t opset,
                                           Builder &b) {
  const std::string &op = spec.opType;
  if (op == "RotaryEmbedding" || op == "SimplifiedLayerNormalization")
    return expandContribOp(spec, b);
  if (spec.outputs.size() != 1)
    return absl::InvalidArgumentError(absl::StrCat(op, " expects one output"));
  FUSEC_ASSIGN_OR_RETURN(Value * x, input(spec, 0));
  const DType dt = x->type().dtype;

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
