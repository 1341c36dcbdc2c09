//===- ShapeSpecialization.cpp - Bind symbolic input dims, re-infer shapes -===//
//
// Binds graph-input dims from PassContext::inputShapes (fusec --shape
// NAME=2x24). Each bound dim that was a symbol binds that symbol everywhere
// (so "batch" on one input fixes "batch" on all of them); a bound dim that
// contradicts a static dim or an earlier binding of the same symbol is an
// InvalidArgument error (ir::bindInputDims, which the importer also runs when
// fusec passes the bindings to it). Symbols left unbound keep their names.
// Then shape inference runs over the whole graph so static extents propagate.
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

class ShapeSpecialization : public Pass {
 public:
  const char *name() const override { return "shape-specialize"; }
  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    FUSEC_ASSIGN_OR_RETURN(bool changed, ir::bindInputDims(graph, ctx.inputShapes, ctx.symbolBindings));
    if (!changed) return false;
    FUSEC_RETURN_IF_ERROR(ir::inferShapes(graph));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createShapeSpecialization() { return std::make_unique<ShapeSpecialization>(); }

}  // namespace fusec::passes
