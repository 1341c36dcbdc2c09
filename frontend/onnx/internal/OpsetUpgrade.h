//===- OpsetUpgrade.h - Normalise ONNX nodes to one opset form --*- C++ -*-===//
//
// The op table (ir/Ops.def) describes each op in its newest-opset form. ONNX
// changed several ops over opsets 11..23 (attributes became inputs, Softmax
// lost its 2-D coercion); this file rewrites the older forms into the newest
// one while the graph is imported, so that later code sees one form only.
// Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_OPSETUPGRADE_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_OPSETUPGRADE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::frontend::internal {

/// One ONNX node as read from the model, before it is added to the graph.
struct NodeSpec {
  std::string opType;
  std::string domain;  ///< "" for ai.onnx
  std::string name;    ///< location; never empty (the importer generates one)
  std::vector<ir::Value *> inputs;  ///< null = omitted optional input
  std::vector<std::string> outputs;
  /// Per output: true when the model left it out (an empty name before a
  /// later output); outputs[i] is then a placeholder no node reads.
  std::vector<bool> outputOmitted;
  ir::AttributeMap attrs;
};

/// Adds \p spec to \p graph in the op table's form for ai.onnx opset
/// \p opset, rewriting older forms (see OpsetUpgrade.cpp for each rule and
/// the opset where the form changed). \p uniqueNodeName makes a node name
/// unique for nodes the rewrite creates. \returns the nodes added, in order;
/// the last one defines the spec's outputs under their original names.
/// Errors: InvalidArgument for malformed nodes (e.g. an attribute given
/// together with the input that replaced it).
absl::StatusOr<std::vector<ir::Node *>> addUpgradedNode(
    ir::Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_OPSETUPGRADE_H
