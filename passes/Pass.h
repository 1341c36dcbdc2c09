//===- Pass.h - The pass interface, context and registry --------*- C++ -*-===//
//
// Every transformation or analysis over an ir::Graph is a Pass with one entry
// point, run(Graph&, PassContext&) -> StatusOr<bool> (true = changed). Passes
// are registered in one table, passes/Passes.def; the same row gives the
// factory, the fusec-opt --passes name and the help line. Pipelines are
// built in passes/Pipeline.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_PASS_H
#define FUSEC_PASSES_PASS_H

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionPlan.h"
#include "program/Legality.h"

namespace fusec::passes {

/// Options and shared state for one pipeline run.
struct PassContext {
  /// Dimension bindings from --shape NAME=2x24 (input name -> dims) and
  /// symbol bindings (symbol -> extent) derived from them.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  std::map<std::string, int64_t> symbolBindings;
  /// Values const-fold must not fold (by name): data computed from the
  /// shapes, which a dynamic-shape compile keeps for run time
  /// (program/Symbolic.h; the driver fills it).
  std::set<std::string> noFold;
  /// The target whose roofline the cost model and fusion use.
  TargetSpec target;
  /// HBM bytes the graph moves if every op runs as its own kernel, recorded
  /// by the first cost-model run (before canonicalisation merges idioms into
  /// single ops); -1 until then. The fusion plan reports it as unfused bytes.
  double unfusedHbmBytes = -1;
  /// Filled by the fusion pass: kernels and the reasons pairs were not fused.
  FusionPlan fusionPlan;
  /// The backend's group legality for the device (program/Legality.h;
  /// codegen::legalityFor): when set, fusion merges two groups only if the
  /// backend's lowering accepts the merged group, records its refusal as the
  /// reason, and checks every final group (a refused one is marked in the
  /// plan: Kernel::refused). Null: fusion decides alone (tools that do not
  /// generate code).
  std::shared_ptr<const program::GroupLegality> legality;
  /// Storage precision for lower-precision (fusec --precision): "fp32" or
  /// empty (no lowering), "bf16" or "fp16".
  std::string precision = "fp32";
  /// Run the verifier after every pass (debug builds and fusec-opt default).
  bool verifyEach = true;
  /// Per-pass counters ("const-fold.folded" -> 12), printed by --pass-statistics.
  std::map<std::string, int64_t> statistics;
  /// Pass names whose debug output is wanted (--debug-only=fusion).
  std::vector<std::string> debugOnly;
  bool debugEnabled(const std::string &pass) const;
};

class Pass {
 public:
  virtual ~Pass() = default;
  /// The --passes name, kebab-case ("const-fold").
  virtual const char *name() const = 0;
  /// Runs on \p graph. \returns true if the graph changed.
  virtual absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) = 0;
};

struct PassInfo {
  const char *name;
  const char *description;
  std::unique_ptr<Pass> (*create)();
};

/// All registered passes, in Passes.def order.
const std::vector<PassInfo> &allPasses();
/// Creates the pass named \p name; NotFound ("unknown pass 'x'") otherwise.
absl::StatusOr<std::unique_ptr<Pass>> createPass(const std::string &name);

/// The contract every pass may assume of its input graph, verified or not:
/// each registered op's node has operand and result counts within its op
/// table arity and every required operand present (ir::verifyNodeArity;
/// optional operands may be null and passes check them). Anything else
/// (types against shape inference, attribute kinds, value names) passes
/// must not assume without checking: --no-verify exists to run passes on
/// mistyped IR. \returns InvalidArgument naming the first offending node.
/// runPasses and fusec-opt call it before every pass, also when the
/// verifier is off (fusec --no-verify, fusec-opt --no-verify): a node with a
/// missing operand crashed canonicalize and fusion.
absl::Status checkPassInput(const ir::Graph &graph);

/// Runs passes in order, checking checkPassInput before each and verifying
/// after each when ctx.verifyEach. Errors carry the pass name as context.
absl::Status runPasses(ir::Graph &graph, PassContext &ctx,
                       const std::vector<std::unique_ptr<Pass>> &passes);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_PASS_H
