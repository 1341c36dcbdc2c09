//===- FunctionExpansion.h - ONNX function ops as op-table ops --*- C++ -*-===//
//
// Ops that ONNX does not define as functions but that are exact compositions
// of op-table ops (LpNormalization, InstanceNormalization, Einsum) are expanded while
// the model is imported, so that shape inference, the interpreter, fusion and
// every backend see only table ops. ONNX function ops are expanded from the
// ONNX library's bodies instead (OnnxFunctions.h). Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONEXPANSION_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONEXPANSION_H

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"
#include "ir/Graph.h"

namespace fusec::frontend::internal {

/// True if ai.onnx op \p opType is expanded by expandFunctionOp().
bool isExpandedFunctionOp(std::string_view opType);

/// Adds \p spec (an ai.onnx node whose op isExpandedFunctionOp) to \p graph
/// as op-table nodes computing the same result, in the newest form of each
/// (inputs, not attributes, for axes). The last node added defines the
/// spec's first output under its original name. Inputs must already have
/// their types (the importer infers node by node). Each expansion, with its
/// source, is listed in FunctionExpansion.cpp.
/// Errors: InvalidArgument for malformed nodes (wrong arity, attribute of
/// the wrong kind, an input whose dtype or rank the expansion needs but
/// that is unknown).
absl::StatusOr<std::vector<ir::Node *>> expandFunctionOp(
    ir::Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONEXPANSION_H
