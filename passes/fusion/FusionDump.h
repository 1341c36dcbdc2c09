//===- FusionDump.h - --dump-fusion as text, JSON or Graphviz dot -*- C++ -*-===//
#ifndef FUSEC_PASSES_FUSION_FUSIONDUMP_H
#define FUSEC_PASSES_FUSION_FUSIONDUMP_H

#include <string>

#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionPlan.h"

namespace fusec::passes {

/// A readable table: one row per kernel (name, kind, FLOPs, bytes before and
/// after fusion, arithmetic intensity against the ridge point, bound,
/// roofline time, member ops and why they are one kernel), then every refusal
/// with its reason, then the summary.
std::string fusionPlanToText(const FusionPlan &plan, const TargetSpec &target);

/// The "run-time conditions" section of the text dump: one line per run of
/// consecutive kernels with the same guard (an If whose condition is known
/// only at run time), "condition known at run time: kernels kA..kB run when
/// 'c'"; empty when no kernel is guarded.
std::string runtimeConditionsText(const FusionPlan &plan);

/// JSON with "target", "kernels" (name, kind, ops, flops, bytes,
/// bytes_unfused, arithmetic_intensity, bound, roofline_us, reason),
/// "refusals" (producer, consumer, reason) and "summary" (onnx_nodes,
/// kernels, hbm_bytes_unfused, hbm_bytes_fused).
std::string fusionPlanToJson(const FusionPlan &plan, const TargetSpec &target);

/// Graphviz dot: one cluster per kernel, filled by bound (memory-bound blue,
/// compute-bound orange), edges along the dataflow of \p graph, refused
/// pairs drawn dashed red with the reason as the edge label.
std::string fusionPlanToDot(const FusionPlan &plan, const ir::Graph &graph);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_FUSION_FUSIONDUMP_H
