//===- Legality.h - Can a group of nodes be lowered as one kernel? -*- C++ -*-===//
//
// The one legality rule (DESIGN.md): fusion never forms a group that the
// target's lowering refuses. Each backend implements GroupLegality with
// the code that lowers a group; the fusion pass asks it (through
// PassContext) before it merges two groups, and records the refusal's
// message as the reason in the fusion plan.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_LEGALITY_H
#define FUSEC_PROGRAM_LEGALITY_H

#include <vector>

#include "absl/status/status.h"
#include "ir/Graph.h"

namespace fusec::program {

class GroupLegality {
 public:
  virtual ~GroupLegality() = default;
  /// OK when \p members (nodes of \p graph, one fused group, any order) can
  /// be lowered as one kernel (with its library call, if any). Otherwise the
  /// lowering's refusal (Unimplemented / InvalidArgument) naming the node
  /// and why; the graph is not changed.
  virtual absl::Status canLowerGroup(const ir::Graph &graph,
                                     const std::vector<const ir::Node *> &members) const = 0;
};

/// The target-neutral check: lowers \p members with program::lowerGroup()
/// and discards the result. Backends without restrictions of their own use it.
absl::Status lowerableGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_LEGALITY_H
