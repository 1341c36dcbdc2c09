//===- Pipeline.h - The default pass pipelines ------------------*- C++ -*-===//
#ifndef FUSEC_PASSES_PIPELINE_H
#define FUSEC_PASSES_PIPELINE_H

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/Pass.h"

namespace fusec::passes {

/// The pass names of the default pipeline for \p backend ("cuda", "nki",
/// "cpu", or "reference" for --optimize in fusec-run), in order.
std::vector<std::string> defaultPipeline(const std::string &backend);

/// Parses "a,b,c" (the --passes / --print-pipeline syntax) into passes.
absl::StatusOr<std::vector<std::unique_ptr<Pass>>> parsePipeline(const std::string &spec);

/// Joins pass names with "," (the syntax fusec-opt --passes= accepts).
std::string pipelineString(const std::vector<std::string> &names);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_PIPELINE_H
