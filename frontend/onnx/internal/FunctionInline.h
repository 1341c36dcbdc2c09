//===- FunctionInline.h - Model-local functions expanded in place -*- C++ -*-===//
//
// ONNX models may carry their own functions (ModelProto.functions, IR
// version >= 8): a node whose (domain, op_type) names such a function is a
// call. fusec has no call op; the importer replaces every call by the
// function's body before it reads the graph (ONNX IR spec, "Functions").
// Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONINLINE_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONINLINE_H

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace fusec::frontend::internal {

/// Replaces, in \p model's main graph, every node that calls one of
/// model.functions() by that function's body, recursively (a body may call
/// other local functions). Per call:
///  - formal inputs/outputs are renamed to the call's actual names (an
///    omitted optional actual input becomes "", i.e. absent);
///  - every other value of the body gets a fresh name "<call node>/<name>"
///    (made unique against the graph);
///  - body nodes are named "<call node>/<body node name or op_type_index>";
///  - attributes with ref_attr_name take the call's attribute of that name,
///    else the function's default (attribute_proto), else are dropped (the
///    op's own default then applies).
/// Nodes that call no local function are kept as they are, in order.
///
/// Errors: InvalidArgument for a call with more inputs/outputs than the
/// function declares, a call nesting deeper than 64 (recursion), or a
/// function whose ai.onnx opset differs from the model's (the body would be
/// read with the wrong op semantics).
absl::Status inlineLocalFunctions(onnx::ModelProto &model);

/// The nodes of \p f's body for one \p call, renamed as described above:
/// formals -> the call's actual names; other values -> freshValue("<prefix>/<name>");
/// body nodes -> freshNode("<prefix>/<node name or op_type_index>");
/// attribute references resolved from the call, then \p defaults (the
/// IR-9 attribute_proto of a local function, or an ONNX schema's defaults),
/// else dropped. Nested calls are not expanded here.
/// Errors: InvalidArgument if the call has more inputs or outputs than \p f
/// declares.
absl::StatusOr<std::vector<onnx::NodeProto>> instantiateFunctionBody(
    const onnx::NodeProto &call, const std::string &prefix, const onnx::FunctionProto &f,
    const std::vector<onnx::AttributeProto> &defaults,
    const std::function<std::string(const std::string &)> &freshValue,
    const std::function<std::string(const std::string &)> &freshNode);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_FUNCTIONINLINE_H
