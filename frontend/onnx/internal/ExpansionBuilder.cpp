//===- ExpansionBuilder.cpp - Writing one ONNX node as op-table nodes -----===//
#include "frontend/onnx/internal/ExpansionBuilder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fusec::frontend::internal {

using ir::Attribute;
using ir::Value;

ir::Value *ExpansionBuilder::scalar(ir::DType dtype, double v) {
  return graph_.addConstant(valueName("_c"), ir::Tensor::scalarDouble(dtype, v));
}

ir::Value *ExpansionBuilder::ints(const std::vector<int64_t> &v) {
  return graph_.addConstant(valueName("_ints"), ir::Tensor::vectorI64(v));
}

ir::Value *ExpansionBuilder::constant(ir::Tensor t, const std::string &suffix) {
  return graph_.addConstant(valueName(suffix), std::move(t));
}

ir::Value *ExpansionBuilder::op(const std::string &opType, std::vector<Value *> inputs,
                                ir::AttributeMap attrs) {
  return ops(opType, std::move(inputs), 1, std::move(attrs))[0];
}

std::vector<ir::Value *> ExpansionBuilder::ops(const std::string &opType,
                                               std::vector<Value *> inputs, int numOutputs,
                                               ir::AttributeMap attrs) {
  std::vector<std::string> names;
  // Each name is made unique before any is defined: number them.
  for (int i = 0; i < numOutputs; ++i)
    names.push_back(valueName(numOutputs == 1 ? absl::StrCat("_", opType)
                                              : absl::StrCat("_", opType, i)));
  ir::Node *n = graph_.addNode(opType, std::move(inputs), std::move(names), std::move(attrs),
                               uniqueNodeName_(absl::StrCat(spec_.name, "/", opType)));
  added_.push_back(n);
  return n->outputs();
}

ir::Node *ExpansionBuilder::named(const std::string &opType, std::vector<Value *> inputs,
                                  const std::vector<int> &specOutputs, ir::AttributeMap attrs) {
  std::vector<std::string> names;
  for (size_t j = 0; j < specOutputs.size(); ++j) {
    const int i = specOutputs[j];
    names.push_back(i >= 0 ? spec_.outputs[static_cast<size_t>(i)]
                           : valueName(absl::StrCat("_", opType, j)));
  }
  ir::Node *n = graph_.addNode(opType, std::move(inputs), std::move(names), std::move(attrs),
                               uniqueNodeName_(absl::StrCat(spec_.name, "/", opType)));
  added_.push_back(n);
  return n;
}

std::vector<ir::Node *> ExpansionBuilder::finish(const std::string &opType,
                                                 std::vector<Value *> inputs,
                                                 ir::AttributeMap attrs) {
  ir::Node *n = graph_.addNode(opType, std::move(inputs), spec_.outputs, std::move(attrs),
                               spec_.name);
  added_.push_back(n);
  return added_;
}

std::string ExpansionBuilder::valueName(const std::string &suffix) {
  std::string base = spec_.outputs.empty() ? spec_.name : spec_.outputs[0];
  // Not yet defined, the spec's outputs must not be taken either (an
  // output "y_c" next to "y" + "_c").
  std::string name = graph_.uniqueName(absl::StrCat(base, suffix));
  for (int i = 1; std::find(spec_.outputs.begin(), spec_.outputs.end(), name) != spec_.outputs.end(); ++i)
    name = graph_.uniqueName(absl::StrCat(base, suffix, "_", i));
  return name;
}

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

absl::StatusOr<std::string> stringAttr(const NodeSpec &spec, const char *name,
                                       const std::string &dflt) {
  auto it = spec.attrs.find(name);
  if (it == spec.attrs.end()) return dflt;
  if (it->second.kind() == Attribute::Kind::kString) return it->second.s();
  return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be a string"));
}

absl::StatusOr<ir::Value *> requiredInput(const NodeSpec &spec, size_t i) {
  if (i >= spec.inputs.size() || spec.inputs[i] == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
  if (spec.inputs[i]->type().dtype == ir::DType::kUndefined)
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no known dtype"));
  return spec.inputs[i];
}

ir::Value *optionalInput(const NodeSpec &spec, size_t i) {
  return i < spec.inputs.size() ? spec.inputs[i] : nullptr;
}

}  // namespace fusec::frontend::internal
