//===- Interpreter.h - Reference interpreter for the IR ---------*- C++ -*-===//
//
// The reference interpreter evaluates the unfused graph on the CPU, one plain
// C++ function per op of ir/Ops.def, written for clarity and checked against
// the ONNX operator specification (https://onnx.ai/onnx/operators/). It is
// the correctness oracle for every optimisation and code generator, and the
// constant folder uses it so there is one definition of each op.
//
// Numerics: float dtypes compute in double and round once to the output
// dtype (f16/bf16 are upcast); integer and bool dtypes compute in int64.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_INTERPRETER_H
#define FUSEC_INTERP_INTERPRETER_H

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

namespace fusec::interp {

/// \returns true if the interpreter has a function for \p kind.
bool supports(ir::OpKind kind);

/// Evaluates one node. \p inputs has one entry per node input; an entry is
/// null for an omitted optional input. \returns one tensor per node output.
/// Errors (InvalidArgument) name the node and say what is wrong (bad shape,
/// index out of range, unsupported attribute value).
absl::StatusOr<std::vector<ir::Tensor>> evaluateNode(
    const ir::Node &node, const std::vector<const ir::Tensor *> &inputs);

/// Runs \p graph on \p inputs (keyed by graph input name; every graph input
/// that is not constant must be given, with a matching dtype and rank, and
/// dims matching every static dim). \returns the graph outputs, in order.
absl::StatusOr<std::vector<ir::Tensor>> runGraph(
    const ir::Graph &graph, const std::map<std::string, ir::Tensor> &inputs);

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_INTERPRETER_H
