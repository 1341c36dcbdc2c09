//===- DeadCodeElimination.cpp - Remove nodes whose results are unused ----===//
//
// Removes every node none of whose results reaches a graph output, and drops
// constants nothing refers to. fusec's ops have no side effects, so liveness
// is the only criterion.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

namespace fusec::passes {
namespace {

class DeadCodeElimination : public Pass {
 public:
  const char *name() const override { return "dce"; }
  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    int64_t removed = graph.removeDeadNodes();
    ctx.statistics["dce.removed"] += removed;
    return removed > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> createDeadCodeElimination() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace fusec::passes
