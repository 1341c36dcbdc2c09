//===- Verifier.h - Structural and type checks of a Graph -------*- C++ -*-===//
#ifndef FUSEC_IR_VERIFIER_H
#define FUSEC_IR_VERIFIER_H

#include <string_view>

#include "absl/status/status.h"
#include "ir/Graph.h"

namespace fusec::ir {

/// Checks that \p graph is well formed: unique value names, every input
/// defined before use (topological order), arity within the op table's
/// bounds, result types consistent with shape inference. \returns the first
/// problem found as InvalidArgument naming the node.
absl::Status verifyGraph(const Graph &graph);

/// Checks one node's input and result counts against the op table's
/// [min, max] and that its required inputs are present (null for nodes of
/// unregistered ops). Passes that may be run on unverified IR (fusec-opt
/// --no-verify) call it before reading operands by position. \returns
/// InvalidArgument naming the node.
absl::Status verifyNodeArity(const Node &node);

/// Checks attribute \p name, holding \p attr, against the schema of op
/// \p kind (the FUSEC_ATTR* rows of ir/Ops.def): an attribute the schema
/// lists must have its kind, except that an int stands for a float (ONNX
/// exporters write whole floats as ints); attributes outside the schema are
/// not checked. The verifier checks every node with it and the ONNX importer
/// every imported node (a wrong kind was read as the default). \returns
/// InvalidArgument "attribute 'axis' is float, expected int" (the caller
/// names the node).
absl::Status verifyAttributeKind(OpKind kind, std::string_view name, const Attribute &attr);

}  // namespace fusec::ir

#endif  // FUSEC_IR_VERIFIER_H
