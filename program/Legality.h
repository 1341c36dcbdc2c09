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

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "ir/Graph.h"

namespace fusec::program {

/// What a legality check needs from the whole graph: a caller that asks
/// about many groups of one graph (the fusion pass, once per merge) builds
/// it once, so that one check costs the group's size, not the graph's.
struct GraphIndex {
  explicit GraphIndex(const ir::Graph &graph);
  absl::flat_hash_map<const ir::Node *, int> topo;  ///< topological position
  absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>> users;  ///< Graph::userMap()
};

struct WorkItem;  // program/Lowering.h

/// What the lowering of an accepted group does beyond its ops, for the
/// fusion plan (GroupLegality::describeGroup).
struct GroupNote {
  /// For the dump: "Cast folded into the GEMM: ...", "2 launches: ..."; ""
  /// when nothing.
  std::string text;
  /// Launches the group takes (a library call whose epilogue the library
  /// does not fuse is followed by a generated kernel: 2).
  int launches = 1;
  /// Bytes moved between those launches, beyond the group's own inputs and
  /// outputs: the library call's result written, then read back by the
  /// epilogue kernel. The cost model adds them to the kernel's bytes.
  double extraBytes = 0;
};

/// The GroupNote of \p items, the work items group \p members of \p graph
/// lowers to: each library call (GEMM, convolution) followed by a generated
/// kernel is one more launch and one more write and read of the call's
/// result (only the read when the result leaves the group anyway).
GroupNote libraryEpilogueNote(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                              const GraphIndex &index, const std::vector<WorkItem> &items);

class GroupLegality {
 public:
  virtual ~GroupLegality() = default;
  /// OK when \p members (nodes of \p graph, one fused group, any order) can
  /// be lowered as one kernel (with its library call, if any). Otherwise the
  /// lowering's refusal (Unimplemented / InvalidArgument) naming the node
  /// and why; the graph is not changed.
  absl::Status canLowerGroup(const ir::Graph &graph,
                             const std::vector<const ir::Node *> &members) const {
    return checkGroup(graph, members, GraphIndex(graph));
  }
  /// canLowerGroup() with the graph's index built by the caller.
  virtual absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                  const GraphIndex &index) const = 0;
  /// What the lowering of \p members (a group it accepts) does that the
  /// group's ops do not say, for the fusion dump (e.g. "Cast folded into the
  /// GEMM: D written as f32") and its cost (launches, extra bytes). Asked
  /// about GEMM, convolution and attention groups only.
  virtual GroupNote describeGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                  const GraphIndex &index) const {
    return {};
  }
};

/// The target-neutral check: lowers \p members with program::lowerGroup()
/// and discards the result. Backends without restrictions of their own use it.
absl::Status lowerableGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                            const GraphIndex &index);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_LEGALITY_H
