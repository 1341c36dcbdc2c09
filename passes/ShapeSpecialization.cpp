//===- ShapeSpecialization.cpp - Bind symbolic input dims, re-infer shapes -===//
//
// Binds graph-input dims from PassContext::inputShapes (fusec --shape
// NAME=2x24). Each bound dim that was a symbol binds that symbol everywhere
// (so "batch" on one input fixes "batch" on all of them); a bound dim that
// contradicts a static dim or an earlier binding of the same symbol is an
// InvalidArgument error. Symbols left unbound keep their names. Then shape
// inference runs over the whole graph so static extents propagate.
//
//===----------------------------------------------------------------------===//
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

/// Largest element count accepted for a bound input (2^40: 4 TiB of f32).
constexpr int64_t kMaxElements = int64_t{1} << 40;

class ShapeSpecialization : public Pass {
 public:
  const char *name() const override { return "shape-specialize"; }
  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    // Collect symbol bindings from the requested input shapes.
    for (const auto &[inputName, dims] : ctx.inputShapes) {
      ir::Value *input = nullptr;
      for (ir::Value *v : graph.inputs())
        if (v->name() == inputName) input = v;
      if (!input)
        return absl::InvalidArgumentError(
            absl::StrCat("--shape names '", inputName, "', which is not a graph input"));
      const ir::TensorType &ty = input->type();
      if (ty.rankKnown && ty.rank() != static_cast<int64_t>(dims.size()))
        return absl::InvalidArgumentError(absl::StrCat(
            "--shape ", inputName, "=", absl::StrJoin(dims, "x"), " has rank ", dims.size(),
            " but input '", inputName, "' has type ", ty.str()));
      // The bound input must have a representable size: every later byte
      // count (cost model, arena plan, kernel grids) is an int64.
      int64_t elements = 1;
      for (int64_t d : dims) {
        if (d > 0 && elements > kMaxElements / d)
          return absl::InvalidArgumentError(absl::StrCat(
              "--shape ", inputName, "=", absl::StrJoin(dims, "x"), " has more than 2^40 elements"));
        elements *= d > 0 ? d : 1;
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] < 0)
          return absl::InvalidArgumentError(
              absl::StrCat("--shape ", inputName, ": negative dimension ", dims[d]));
        if (!ty.rankKnown) continue;
        const ir::Dim &dim = ty.shape[d];
        if (dim.isStatic() && dim.value != dims[d])
          return absl::InvalidArgumentError(absl::StrCat("--shape ", inputName, ": dim ", d,
                                                         " is ", dim.value, " in the model, not ",
                                                         dims[d]));
        if (dim.isSymbolic()) {
          auto [it, inserted] = ctx.symbolBindings.emplace(dim.symbol, dims[d]);
          if (!inserted && it->second != dims[d])
            return absl::InvalidArgumentError(
                absl::StrCat("--shape binds symbol '", dim.symbol, "' to both ", it->second,
                             " and ", dims[d]));
        }
      }
    }
    bool changed = false;
    for (ir::Value *v : graph.inputs()) {
      auto it = ctx.inputShapes.find(v->name());
      ir::TensorType ty = v->type();
      if (it != ctx.inputShapes.end() && !ty.rankKnown) {
        ty = ir::TensorType::fromShape(ty.dtype, it->second);
      } else {
        for (ir::Dim &d : ty.shape) {
          if (!d.isSymbolic()) continue;
          auto b = ctx.symbolBindings.find(d.symbol);
          if (b != ctx.symbolBindings.end()) d = ir::Dim(b->second);
        }
        if (it != ctx.inputShapes.end())
          for (size_t d = 0; d < it->second.size(); ++d) ty.shape[d] = ir::Dim(it->second[d]);
      }
      if (ty != v->type()) {
        v->setType(ty);
        changed = true;
      }
    }
    if (!changed) return false;
    FUSEC_RETURN_IF_ERROR(ir::inferShapes(graph));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createShapeSpecialization() { return std::make_unique<ShapeSpecialization>(); }

}  // namespace fusec::passes
