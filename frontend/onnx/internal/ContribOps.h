//===- ContribOps.h - ONNX Runtime contrib ops as op-table ops --*- C++ -*-===//
//
// Models optimised for ONNX Runtime (its transformer optimiser, Olive,
// onnxruntime-genai builders) carry fused com.microsoft ops. The importer
// writes each one as the op-table ops a PyTorch export of the same layer
// has (LayerNormalization, RMSNormalization, Gelu, the MatMul/Softmax/MatMul
// of attention, ...), so that const-fold, norm fusion, the attention rewrite
// and every backend see one canonical form and no new kernel is needed. The
// mapping of each op, and what each refuses, is listed in ContribOps.cpp and
// docs/CONTRIB_OPS.md. Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_CONTRIBOPS_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_CONTRIBOPS_H

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"
#include "ir/Graph.h"

namespace fusec::frontend::internal {

/// The ONNX Runtime contrib domain.
inline constexpr std::string_view kContribDomain = "com.microsoft";

/// True if \p opType of domain com.microsoft is mapped by expandContribOp().
bool isMappedContribOp(std::string_view opType);

/// The mapped com.microsoft ops, comma-separated (for error messages).
std::string mappedContribOps();

/// The first optional input or output of mapped contrib op \p opType that
/// its mapping refuses whenever it is used ("input 3 (past_key) is not
/// supported: ..."), or "" if none; \p present(output, index) says whether
/// the node uses that input / output. The importer asks this before importing
/// (so every such node is reported at once); expandContribOp asks it too.
std::string refusedContribForm(std::string_view opType,
                               const std::function<bool(bool output, int index)> &present);

/// Adds \p spec (a com.microsoft node whose op isMappedContribOp, or an
/// ai.onnx RotaryEmbedding / SimplifiedLayerNormalization) as
/// op-table nodes through \p b (which adds them to its graph); the spec's outputs keep their names.
/// Inputs must already have their types. \returns the nodes added.
/// Errors: InvalidArgument for a malformed node (missing input, attribute of
/// the wrong kind, shapes that contradict the op's spec); Unimplemented,
/// naming the input, output or attribute, for a form the mapping does not
/// cover (e.g. GroupQueryAttention with a past KV cache), never a silent
/// approximation.
absl::StatusOr<std::vector<ir::Node *>> expandContribOp(const NodeSpec &spec,
                                                        ExpansionBuilder &b);

/// expandContribOp with a builder of its own (the importer's entry point).
absl::StatusOr<std::vector<ir::Node *>> expandContribNode(
    ir::Graph &graph, NodeSpec spec,
    const std::function<std::string(const std::string &)> &uniqueNodeName);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_CONTRIBOPS_H
