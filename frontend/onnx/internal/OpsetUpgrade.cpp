//===- OpsetUpgrade.cpp - Normalise ONNX nodes to one opset form ----------===//
//
// Rules, each with the opset where the ONNX form changed (see the operator
// changelog, https://onnx.ai/onnx/operators/):
//
//   ReduceSum                      opset 13: `axes` attribute -> input 1
//   ReduceMean/Max/Min/Prod/
//     SumSquare/L2                 opset 18: `axes` attribute -> input 1
//   Squeeze, Unsqueeze             opset 13: `axes` attribute -> input 1
//   Split                          opset 13: `split` attribute -> input 1;
//                                  opset 18: without `split`, the attribute
//                                  `num_outputs` is required; older models
//                                  get num_outputs = number of outputs
//   Softmax, LogSoftmax            opset 13: the op used to coerce its input
//                                  to 2-D at `axis` (default 1); now it works
//                                  on one axis (default -1). Older nodes become
//                                  Shape(x), Reshape(x, [0]*axis + [-1]),
//                                  Softmax(axis=-1), Reshape(back to Shape(x)),
//                                  which computes the same rows. A negative
//                                  axis (rank unknown here) flattens with
//                                  Flatten(x, axis) instead. Newer nodes get
//                                  their default axis -1 written explicitly.
//   Range                          opset 27: `stash_type` (f16/bf16 accumulation
//                                  type); 1 and 11 are what fusec computes,
//                                  others are refused (Unimplemented)
//   Hardmax                        opset 13: as Softmax (2-D coercion before)
//   RoiAlign                       opset 16: coordinate_transformation_mode
//                                  added (half_pixel); older nodes get
//                                  output_half_pixel, what they computed
//   Compress                       (any opset) a constant condition: a Gather
//                                  of the kept indices (after a Reshape to
//                                  1-D when axis is absent), which fuses; a
//                                  run-time condition keeps the row
//   Dropout                        opset 12: `ratio` attribute -> input 1
//                                  (the interpreter treats Dropout as
//                                  identity; kept for fidelity)
//
// Pad's attribute form ended at opset 11, which is the oldest we accept.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/OpsetUpgrade.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/internal/ContribOps.h"
#include "frontend/onnx/internal/FunctionExpansion.h"
#include "ir/OpTable.h"
#include "support/Status.h"

namespace fusec::frontend::internal {

namespace {

using ir::Attribute;
using ir::Graph;
using ir::Node;
using ir::Value;

/// Name for a value the rewrite creates, derived from the node's first output.
std::string derivedValueName(Graph &graph, const NodeSpec &spec, const char *suffix) {
  std::string base = spec.outputs.empty() || spec.outputs[0].empty() ? spec.name : spec.outputs[0];
  return graph.uniqueName(absl::StrCat(base, suffix));
}

/// Moves the ints attribute \p attr to input \p index as a constant i64[n].
absl::Status intsAttrToInput(Graph &graph, NodeSpec &spec, const char *attr, size_t index) {
  auto it = spec.attrs.find(attr);
  if (it == spec.attrs.end()) return absl::OkStatus();
  if (it->second.kind() != Attribute::Kind::kInts)
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", attr, "' must be a list of ints"));
  if (spec.inputs.size() > index && spec.inputs[index] != nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        "has both the attribute '", attr, "' and input ", index, " (opset mismatch?)"));
  Value *c = graph.addConstant(derivedValueName(graph, spec, absl::StrCat("_", attr).c_str()),
                               ir::Tensor::vectorI64(it->second.ints()));
  if (spec.inputs.size() <= index) spec.inputs.resize(index + 1, nullptr);
  spec.inputs[index] = c;
  spec.attrs.erase(it);
  return absl::OkStatus();
}

Node *addSpec(Graph &graph, NodeSpec &spec) {
  return graph.addNode(spec.opType, spec.inputs, spec.outputs, spec.attrs, spec.name, nullptr,
                       spec.domain);
}

/// Softmax / LogSoftmax before opset 13 (2-D coercion at `axis`).
absl::StatusOr<std::vector<Node *>> upgradeCoercingSoftmax(
    Graph &graph, NodeSpec spec,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  if (spec.inputs.size() != 1 || spec.inputs[0] == nullptr || spec.outputs.size() != 1)
    return absl::InvalidArgumentError("expects one input and one output");
  int64_t axis = 1;
  if (auto it = spec.attrs.find("axis"); it != spec.attrs.end()) {
    if (it->second.kind() != Attribute::Kind::kInt)
      return absl::InvalidArgumentError("attribute 'axis' must be an int");
    axis = it->second.i();
  }
  Value *x = spec.inputs[0];
  std::vector<Node *> added;
  Node *shape = graph.addNode("Shape", {x}, {derivedValueName(graph, spec, "_inshape")}, {},
                              uniqueNodeName(spec.name + "/shape"));
  added.push_back(shape);
  Node *flat;
  if (axis >= 0) {
    // [0]*axis + [-1]: keep the leading dims, flatten the rest into the row.
    std::vector<int64_t> target(static_cast<size_t>(axis), 0);
    target.push_back(-1);
    Value *t = graph.addConstant(derivedValueName(graph, spec, "_rowshape"),
                                 ir::Tensor::vectorI64(target));
    flat = graph.addNode("Reshape", {x, t}, {derivedValueName(graph, spec, "_rows")}, {},
                         uniqueNodeName(spec.name + "/flatten"));
  } else {
    flat = graph.addNode("Flatten", {x}, {derivedValueName(graph, spec, "_rows")},
                         {{"axis", Attribute(axis)}}, uniqueNodeName(spec.name + "/flatten"));
  }
  added.push_back(flat);
  std::string finalOut = spec.outputs[0];
  ir::AttributeMap attrs = spec.attrs;
  attrs["axis"] = Attribute(int64_t{-1});
  Node *sm = graph.addNode(spec.opType, {flat->output(0)},
                           {derivedValueName(graph, spec, "_rowresult")}, attrs, spec.name,
                           nullptr, spec.domain);
  added.push_back(sm);
  Node *back = graph.addNode("Reshape", {sm->output(0), shape->output(0)}, {finalOut}, {},
                             uniqueNodeName(spec.name + "/unflatten"));
  added.push_back(back);
  return added;
}

absl::StatusOr<std::vector<Node *>> upgrade(
    Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  const std::string &op = spec.opType;
  if (!spec.domain.empty() && spec.domain != "ai.onnx") {
    // ONNX Runtime contrib ops become table ops (ContribOps.cpp).
    if (spec.domain == kContribDomain && isMappedContribOp(op))
      return expandContribNode(graph, std::move(spec), uniqueNodeName);
    return std::vector<Node *>{addSpec(graph, spec)};
  }
  // Function ops the table lacks become table ops (FunctionExpansion.cpp).
  if (!ir::lookupOp(op) && isExpandedFunctionOp(op))
    return expandFunctionOp(graph, std::move(spec), opset, uniqueNodeName);

  if (op == "ReduceSum") {
    if (opset < 13) FUSEC_RETURN_IF_ERROR(intsAttrToInput(graph, spec, "axes", 1));
  } else if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
             op == "ReduceProd" || op == "ReduceSumSquare" || op == "ReduceL2") {
    if (opset < 18) FUSEC_RETURN_IF_ERROR(intsAttrToInput(graph, spec, "axes", 1));
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    if (opset < 13) FUSEC_RETURN_IF_ERROR(intsAttrToInput(graph, spec, "axes", 1));
  } else if (op == "Split") {
    if (opset < 13) FUSEC_RETURN_IF_ERROR(intsAttrToInput(graph, spec, "split", 1));
    bool hasSplit = spec.inputs.size() > 1 && spec.inputs[1] != nullptr;
    if (!hasSplit && !spec.attrs.count("num_outputs"))
      spec.attrs["num_outputs"] = Attribute(static_cast<int64_t>(spec.outputs.size()));
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
    if (opset < 13) return upgradeCoercingSoftmax(graph, std::move(spec), uniqueNodeName);
    if (!spec.attrs.count("axis")) spec.attrs["axis"] = Attribute(int64_t{-1});
  } else if (op == "GridSample") {
    // GridSample-16 names its modes bilinear / nearest / bicubic; opset 20
    // renamed them linear / nearest / cubic (ONNX Changelog, GridSample-20).
    // A name of the other version is an invalid model (the checker and ONNX
    // Runtime refuse it); the lowering reads both spellings.
    auto it = spec.attrs.find("mode");
    if (it != spec.attrs.end() && it->second.kind() == Attribute::Kind::kString) {
      const std::string &m = it->second.s();
      const bool old = m == "bilinear" || m == "bicubic", renamed = m == "linear" || m == "cubic";
      if ((opset >= 20 && old) || (opset < 20 && renamed))
        return absl::InvalidArgumentError(absl::StrCat(
            "GridSample mode '", m, "' is GridSample-", opset >= 20 ? "16's" : "20's",
            " name; at opset ", opset, " the modes are ",
            opset >= 20 ? "linear, nearest, cubic" : "bilinear, nearest, bicubic"));
    }
  } else if (op == "Range") {
    // Opset 27: stash_type names the accumulation type for f16/bf16. fusec
    // computes start + i * delta exactly and rounds once, which is what
    // stash_type 1 (f32, the default) and 11 (f64) give up to one rounding;
    // an f16/bf16 accumulation (successive inexact sums) is not reproduced.
    auto it = spec.attrs.find("stash_type");
    if (opset >= 27 && it != spec.attrs.end() && it->second.kind() == Attribute::Kind::kInt &&
        it->second.i() != 1 && it->second.i() != 11 && !spec.inputs.empty() && spec.inputs[0] &&
        (spec.inputs[0]->type().dtype == ir::DType::kF16 ||
         spec.inputs[0]->type().dtype == ir::DType::kBF16))
      return absl::UnimplementedError(absl::StrCat(
          "Range with stash_type ", it->second.i(),
          " (accumulation in the input's 16-bit type) is not supported; fusec computes Range "
          "exactly, as stash_type 1 (f32) or 11 (f64)"));
  } else if (op == "RoiAlign") {
    // Opset 16 added coordinate_transformation_mode (default half_pixel);
    // opset 10 computed what is now output_half_pixel.
    if (opset < 16 && !spec.attrs.count("coordinate_transformation_mode"))
      spec.attrs["coordinate_transformation_mode"] = Attribute(std::string("output_half_pixel"));
  } else if (op == "Compress" && spec.inputs.size() == 2 && spec.inputs[0] && spec.inputs[1] &&
             spec.inputs[1]->isConstant() && spec.inputs[1]->constant()->rank() == 1) {
    // A constant condition selects known slices: a Gather of their indices
    // (a layout op that fuses), flattening first when there is no axis.
    const ir::Tensor &cond = *spec.inputs[1]->constant();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numElements(); ++i)
      if (cond.getInt(i) != 0) keep.push_back(i);
    std::vector<Node *> added;
    Value *x = spec.inputs[0];
    int64_t axis = 0;
    if (auto it = spec.attrs.find("axis"); it != spec.attrs.end()) {
      if (it->second.kind() != Attribute::Kind::kInt)
        return absl::InvalidArgumentError("attribute 'axis' must be an int");
      axis = it->second.i();
    } else {
      Value *flat = graph.addConstant(derivedValueName(graph, spec, "_flat"), ir::Tensor::vectorI64({-1}));
      Node *r = graph.addNode("Reshape", {x, flat}, {derivedValueName(graph, spec, "_flattened")}, {},
                              uniqueNodeName(spec.name + "/flatten"));
      added.push_back(r);
      x = r->output(0);
    }
    Value *idx = graph.addConstant(derivedValueName(graph, spec, "_kept"), ir::Tensor::vectorI64(keep));
    added.push_back(graph.addNode("Gather", {x, idx}, spec.outputs, {{"axis", Attribute(axis)}}, spec.name));
    return added;
  } else if (op == "Dropout") {
    auto it = spec.attrs.find("ratio");
    if (opset < 12 && it != spec.attrs.end()) {
      if (spec.inputs.size() > 1 && spec.inputs[1] != nullptr)
        return absl::InvalidArgumentError("has both the attribute 'ratio' and input 1");
      float ratio = it->second.kind() == Attribute::Kind::kFloat ? it->second.f() : 0.5f;
      Value *c = graph.addConstant(derivedValueName(graph, spec, "_ratio"),
                                   ir::Tensor::scalarDouble(ir::DType::kF32, ratio));
      spec.inputs.resize(std::max<size_t>(spec.inputs.size(), 2), nullptr);
      spec.inputs[1] = c;
      spec.attrs.erase(it);
    }
  }
  return std::vector<Node *>{addSpec(graph, spec)};
}

}  // namespace

absl::StatusOr<std::vector<ir::Node *>> addUpgradedNode(
    ir::Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  return upgrade(graph, std::move(spec), opset, uniqueNodeName);
}

}  // namespace fusec::frontend::internal
