//===- OnnxFunctions.h - ONNX function ops from the ONNX library -*- C++ -*-===//
//
// ONNX defines many ops as functions of other ops: the schema carries a
// function body, or a builder that writes the body from the node's
// attributes and input types (a context-dependent function). The importer
// expands an ai.onnx op that has no row in ir/Ops.def from that body, so
// that shape inference, the interpreter, fusion and every backend see only
// table ops. The bodies come from the ONNX library, never written by hand:
//
//  1. the linked ONNX C++ library (Debian libonnx, 1.12, opsets up to 17):
//     onnx::OpSchema::GetFunction() for a plain body,
//     onnx::OpSchema::BuildContextDependentFunction() for a context-dependent
//     one, used when the schema's version is the one the model's opset
//     selects, or an older version whose later versions changed only types;
//  2. the plain bodies of the pinned onnx release (1.23.2, opsets up to 28),
//     generated into OnnxFunctionBodies.inc by scripts/gen_onnx_functions.py,
//     for versions the linked library does not know.
//
// A version whose body only a context-dependent builder of the newer release
// writes (GroupNormalization-18/21, RotaryEmbedding-23, Attention-23...) is
// refused as Unimplemented with that reason. Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_ONNXFUNCTIONS_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_ONNXFUNCTIONS_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace fusec::frontend::internal {

/// What the ONNX library says about ai.onnx op \p opType at model opset
/// \p opset.
struct FunctionLookup {
  enum class Kind {
    kNotAFunction,     ///< no version <= opset is defined as a function
    kBody,             ///< a plain body (ops known now: see `body`)
    kContextDependent, ///< the linked library builds the body per node
    kUnavailable,      ///< a function, but no library here can give its body
  };
  Kind kind = Kind::kNotAFunction;
  int64_t sinceVersion = 0;        ///< the op version the opset selects
  const onnx::FunctionProto *body = nullptr;  ///< kBody: the body
  std::string source;              ///< which library (for messages)
  std::string why;                 ///< kUnavailable: the reason
};

/// Looks \p opType up (no node needed). Reductions given in their pre-18
/// form (axes attribute) are looked up as their opset-18 version, which is
/// what libraryFunctionFor() expands them as. Thread-safe after the first
/// call.
FunctionLookup lookupLibraryFunction(const std::string &opType, int64_t opset);

/// One call's function, ready to be inlined (FunctionInline.h).
struct LibraryFunction {
  onnx::FunctionProto body;
  /// The schema's attribute defaults: a body's attribute reference falls
  /// back to these when the call does not set the attribute.
  std::vector<onnx::AttributeProto> defaults;
  /// The ai.onnx opset the body's nodes are written in (its opset_import).
  int64_t bodyOpset = 0;
  /// Nodes to import before the body, and the call as the body sees it: a
  /// pre-18 reduction's `axes` attribute becomes a Constant node here and
  /// the call's input 1.
  std::vector<onnx::NodeProto> prelude;
  onnx::NodeProto call;
  std::string source;
};

/// The body of \p call (an ai.onnx node) at model opset \p opset.
/// \p inputTypes holds one TypeProto per input of the call (an empty
/// TypeProto for an omitted or untyped one); context-dependent builders read
/// the element types and ranks from it.
/// Errors: NotFound if the op is no function at that opset; Unimplemented if
/// no library here gives its body (the message says why); InvalidArgument if
/// the library's builder refuses the node (bad attributes or input types).
/// \p callName names the call in node names; \p freshValue returns an unused
/// value name for a prelude node's output.
absl::StatusOr<LibraryFunction> libraryFunctionFor(
    const onnx::NodeProto &call, const std::string &callName, int64_t opset,
    const std::vector<onnx::TypeProto> &inputTypes,
    const std::function<std::string(const std::string &)> &freshValue);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_ONNXFUNCTIONS_H
