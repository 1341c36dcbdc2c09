//===- Patterns.h - Canonicalisation patterns (internal) --------*- C++ -*-===//
//
// The patterns the canonicalize pass (passes/Canonicalize.cpp) applies. Each
// matcher looks at one candidate root node over an unchanged graph and, on a
// match, returns a Rewrite: the nodes it claims (no two rewrites of one sweep
// share a node) and a closure that performs the change. Matchers never
// mutate the graph; closures may only add nodes and redirect uses (dead
// nodes are removed by the driver afterwards).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_CANONICALIZE_PATTERNS_H
#define FUSEC_PASSES_CANONICALIZE_PATTERNS_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "passes/utils/PatternUtils.h"

namespace fusec::passes::canonicalize {

struct Rewrite {
  /// Statistic name, e.g. "gelu-erf"; counted as canonicalize.<stat>.
  std::string stat;
  /// Nodes matched (the root included); claimed for this sweep.
  std::vector<ir::Node *> nodes;
  /// Performs the rewrite. \returns false if it declined at the last moment
  /// (e.g. the replacement's inferred type did not match the root's).
  std::function<absl::StatusOr<bool>(ir::Graph &)> apply;
};

using Matcher = std::optional<Rewrite> (*)(ir::Node &root, const UseInfo &uses);

// Activations (Activations.cpp).
std::optional<Rewrite> matchGelu(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchSwish(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchSilu(ir::Node &root, const UseInfo &uses);
// Normalisations (Norms.cpp).
std::optional<Rewrite> matchLayerNorm(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchRmsNorm(ir::Node &root, const UseInfo &uses);
// Local simplifications (Simplify.cpp).
std::optional<Rewrite> matchNoOp(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchReshapeChain(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchTransposeChain(ir::Node &root, const UseInfo &uses);
std::optional<Rewrite> matchMatMulBias(ir::Node &root, const UseInfo &uses);

/// Replaces \p root's first result by a new node opType(inputs) {attrs},
/// created before \p root; the new result takes the old result's name. If the
/// new result's inferred type is not compatible with the old one the new node
/// is erased and false is returned.
absl::StatusOr<bool> replaceRootWith(ir::Graph &graph, ir::Node *root, const std::string &opType,
                                     std::vector<ir::Value *> inputs, ir::AttributeMap attrs = {});

/// Makes a constant of \p dtype and \p shape, filled with \p fill or, when
/// \p source is given, with \p source broadcast (numpy rules) to \p shape.
/// \returns nullopt if \p source does not broadcast to \p shape.
std::optional<ir::Tensor> broadcastConstant(ir::DType dtype, const ir::Shape &shape,
                                            const ir::Tensor *source, double fill);

}  // namespace fusec::passes::canonicalize

#endif  // FUSEC_PASSES_CANONICALIZE_PATTERNS_H
