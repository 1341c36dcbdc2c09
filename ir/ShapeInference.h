//===- ShapeInference.h - Type and shape inference hooks --------*- C++ -*-===//
//
// Infers each node's result types (dtype and shape, with symbolic dims kept
// by name) from its input types, attributes and constant inputs, following
// the ONNX operator specification. Dispatches on OpKind (ir/Ops.def).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_SHAPEINFERENCE_H
#define FUSEC_IR_SHAPEINFERENCE_H

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::ir {

/// Sets the result types of \p node. Unknowable dims become "?" (never an
/// error); an error (InvalidArgument, naming the node) means the inputs are
/// inconsistent: incompatible broadcast, rank mismatch, bad axis, etc.
absl::Status inferNodeTypes(Graph &graph, Node &node);

/// Computes the result types inferNodeTypes would set on \p node (merged with
/// the current ones) without changing the graph; one entry per result. For
/// ops not in the table, the current result types. Used by the verifier.
absl::StatusOr<std::vector<TensorType>> computeNodeTypes(const Node &node);

/// Runs inferNodeTypes over all nodes in order.
absl::Status inferShapes(Graph &graph);

}  // namespace fusec::ir

#endif  // FUSEC_IR_SHAPEINFERENCE_H
