//===- ShapeInference.h - Type and shape inference hooks --------*- C++ -*-===//
//
// Infers each node's result types (dtype and shape, with symbolic dims kept
// by name) from its input types, attributes and constant inputs, following
// the ONNX operator specification. Dispatches on OpKind (ir/Ops.def).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_SHAPEINFERENCE_H
#define FUSEC_IR_SHAPEINFERENCE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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

/// Checks a type a model declares for a value (an ONNX value_info or graph
/// output type) against the type inference gives it: InvalidArgument naming
/// \p what when the dtypes are both defined and differ, the ranks are both
/// known and differ, or a dim is static on both sides with different
/// extents. Unknown or symbolic parts on either side are not conflicts (the
/// importer refines them). For importers: a declared type is a claim about
/// the model, and one that contradicts the op's semantics makes the model
/// invalid (ONNX Runtime rejects it), never silently overridden.
absl::Status checkDeclaredType(const TensorType &inferred, const TensorType &declared,
                               const std::string &what);

/// The value of Shape or Size \p node (ONNX Operators.md: Shape-15's start
/// and end count from the back when negative and are clamped to the rank)
/// read from its input's static dims: i64[end - start], or an i64 scalar for
/// Size. nullopt when a dim it reads is not static or the rank is unknown.
/// Used by the const-fold pass and by the importer's If folding.
std::optional<Tensor> foldShapeOf(const Node &node);

/// Binds graph-input dims (fusec --shape NAME=2x24): \p shapes maps an input
/// name to static dims. Each bound dim that is a symbol binds that symbol in
/// every graph input (recorded in \p symbolBindings, which may hold earlier
/// bindings); an unranked input takes the dims as given. Sets the inputs'
/// types and \returns whether any changed; does not re-infer other values.
/// Errors (InvalidArgument, naming the flag): a name that is not a graph
/// input, a rank or static dim that disagrees with the model, a negative
/// dim, a symbol bound to two extents, more than 2^40 elements.
absl::StatusOr<bool> bindInputDims(Graph &graph,
                                   const std::map<std::string, std::vector<int64_t>> &shapes,
                                   std::map<std::string, int64_t> &symbolBindings);

/// Runs inferNodeTypes over all nodes in order.
absl::Status inferShapes(Graph &graph);

}  // namespace fusec::ir

#endif  // FUSEC_IR_SHAPEINFERENCE_H
