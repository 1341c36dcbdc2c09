//===- CostModel.cpp - Annotate ops with their roofline cost --------------===//
//
// An analysis pass: for every node whose types are static it records, as
// attributes that the text IR prints,
//   fusec.flops      int   floating-point operations (ArithmeticIntensity.h)
//   fusec.bytes      int   minimum HBM bytes read + written
//   fusec.intensity  float flops / bytes, FLOP/byte
//   fusec.bound      string "memory" or "compute" against the ridge point of
//                    ctx.target (h200 when no target is set)
// Nodes whose cost is unknown (symbolic or unknown dims) get no annotation,
// and stale annotations are removed from them. Semantics never change; the
// pass reports a change only when an attribute was added, updated or removed,
// so a second run on the same graph returns false.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <limits>

#include "passes/Pass.h"
#include "passes/fusion/Fusible.h"
#include "passes/cost/ArithmeticIntensity.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

inline constexpr const char *kFlopsAttr = "fusec.flops";
inline constexpr const char *kBytesAttr = "fusec.bytes";
inline constexpr const char *kIntensityAttr = "fusec.intensity";
inline constexpr const char *kBoundAttr = "fusec.bound";

/// An integer-valued count as an int attribute, or a float one if it does not
/// fit in int64.
ir::Attribute countAttr(double v) {
  if (v < 9.0e18) return ir::Attribute(static_cast<int64_t>(std::llround(v)));
  return ir::Attribute(static_cast<float>(v));
}

bool setIfChanged(ir::Node &n, const char *name, ir::Attribute a) {
  const ir::Attribute *old = n.attr(name);
  if (old && *old == a) return false;
  n.setAttr(name, std::move(a));
  return true;
}

class CostModel : public Pass {
 public:
  const char *name() const override { return "cost-model"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    TargetSpec target = ctx.target;
    if (target.name.empty()) {
      FUSEC_ASSIGN_OR_RETURN(target, loadBuiltinTarget("h200"));
    }
    bool changed = false;
    int64_t annotated = 0, unknown = 0;
    double eagerBytes = 0;
    bool eagerKnown = true;
    for (ir::Node *n : graph.nodes()) {
      GroupCost c = nodeCost(*n, target);
      // The unfused baseline: every op its own kernel, views free (as in an
      // eager runtime, where Reshape/Squeeze/Unsqueeze alias their input).
      if (roleOf(*n) != Role::kView) {
        eagerKnown = eagerKnown && c.known;
        eagerBytes += c.bytes;
      }
      if (!c.known) {
        ++unknown;
        for (const char *a : {kFlopsAttr, kBytesAttr, kIntensityAttr, kBoundAttr})
          changed |= n->attrs().erase(a) > 0;
        continue;
      }
      ++annotated;
      changed |= setIfChanged(*n, kFlopsAttr, countAttr(c.flops));
      changed |= setIfChanged(*n, kBytesAttr, countAttr(c.bytes));
      changed |= setIfChanged(*n, kIntensityAttr,
                              ir::Attribute(static_cast<float>(c.arithmeticIntensity)));
      changed |= setIfChanged(*n, kBoundAttr,
                              ir::Attribute(std::string(c.memoryBound ? "memory" : "compute")));
    }
    if (ctx.unfusedHbmBytes < 0 && eagerKnown) ctx.unfusedHbmBytes = eagerBytes;
    ctx.statistics["cost-model.annotated"] += annotated;
    ctx.statistics["cost-model.unknown"] += unknown;
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createCostModel() { return std::make_unique<CostModel>(); }

}  // namespace fusec::passes
