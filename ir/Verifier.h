//===- Verifier.h - Structural and type checks of a Graph -------*- C++ -*-===//
#ifndef FUSEC_IR_VERIFIER_H
#define FUSEC_IR_VERIFIER_H

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

}  // namespace fusec::ir

#endif  // FUSEC_IR_VERIFIER_H
