//===- ExpansionBuilder.h - Writing one ONNX node as op-table nodes -*- C++ -*-===//
//
// The helper that FunctionExpansion.cpp (ONNX ops written from their spec
// formula) and ContribOps.cpp (ONNX Runtime contrib ops) use to add the
// op-table nodes that replace one imported node, plus the attribute and
// input readers they share. Nodes are added in the op table's newest form
// (axes, splits, Slice bounds as inputs); the importer infers their types
// after the expansion returns. Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_EXPANSIONBUILDER_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_EXPANSIONBUILDER_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"
#include "ir/Graph.h"

namespace fusec::frontend::internal {

/// Builds the nodes of one expansion of \p spec. Intermediate values and
/// nodes get names derived from the spec's (node names "<spec>/<Op>"), so a
/// fusion dump still shows where each op came from.
class ExpansionBuilder {
 public:
  ExpansionBuilder(ir::Graph &graph, const NodeSpec &spec,
                   const std::function<std::string(const std::string &)> &uniqueNodeName)
      : graph_(graph), spec_(spec), uniqueNodeName_(uniqueNodeName) {}

  /// A rank-0 constant of \p dtype holding \p v.
  ir::Value *scalar(ir::DType dtype, double v);
  /// A 1-D int64 constant (axes, shapes, Slice bounds).
  ir::Value *ints(const std::vector<int64_t> &v);
  /// Any constant tensor; \p suffix names it.
  ir::Value *constant(ir::Tensor t, const std::string &suffix = "_c");

  /// Adds an intermediate node \p opType; \returns its (first) output.
  ir::Value *op(const std::string &opType, std::vector<ir::Value *> inputs,
                ir::AttributeMap attrs = {});
  /// Adds an intermediate node with \p numOutputs outputs; \returns them.
  std::vector<ir::Value *> ops(const std::string &opType, std::vector<ir::Value *> inputs,
                               int numOutputs, ir::AttributeMap attrs = {});
  /// Adds a node whose outputs are the spec's outputs \p specOutputs (index
  /// into spec.outputs, -1 = a fresh intermediate name); \returns its node.
  ir::Node *named(const std::string &opType, std::vector<ir::Value *> inputs,
                  const std::vector<int> &specOutputs, ir::AttributeMap attrs = {});
  /// Adds the node that defines all of the spec's outputs; \returns every
  /// node added.
  std::vector<ir::Node *> finish(const std::string &opType, std::vector<ir::Value *> inputs,
                                 ir::AttributeMap attrs = {});
  /// \returns every node added so far (for an expansion whose outputs come
  /// from several nodes through named()).
  std::vector<ir::Node *> done() const { return added_; }

 private:
  std::string valueName(const std::string &suffix);
  ir::Graph &graph_;
  const NodeSpec &spec_;
  const std::function<std::string(const std::string &)> &uniqueNodeName_;
  std::vector<ir::Node *> added_;
};

/// Attribute \p name of \p spec as a float / int / string / int list, or
/// \p dflt when absent. Errors: InvalidArgument naming the attribute when it
/// has another kind.
absl::StatusOr<double> floatAttr(const NodeSpec &spec, const char *name, double dflt);
absl::StatusOr<int64_t> intAttr(const NodeSpec &spec, const char *name, int64_t dflt);
absl::StatusOr<std::string> stringAttr(const NodeSpec &spec, const char *name,
                                       const std::string &dflt);

/// Input \p i, which must be present and have a known dtype.
/// Errors: InvalidArgument naming the input index.
absl::StatusOr<ir::Value *> requiredInput(const NodeSpec &spec, size_t i);
/// Input \p i or nullptr when it is omitted (absent or the empty name).
ir::Value *optionalInput(const NodeSpec &spec, size_t i);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_EXPANSIONBUILDER_H
