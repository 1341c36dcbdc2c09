//===- Pipeline.cpp - The default pass pipelines --------------------------===//
//
// The one place where pipelines are assembled. `fusec --print-pipeline`
// prints defaultPipeline() in the syntax `fusec-opt --passes=` accepts.
//
//===----------------------------------------------------------------------===//
#include "passes/Pipeline.h"

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/Status.h"

namespace fusec::passes {

std::vector<std::string> defaultPipeline(const std::string &backend) {
  // Every backend (cuda, nki, cpu) runs the same passes today; the argument
  // stays so that one can differ.
  (void)backend;
  std::vector<std::string> p;
  // Only passes that are registered appear; the table grows as passes land.
  for (const char *name : {"shape-specialize", "const-fold", "dce", "cost-model", "canonicalize",
                           "fold-bn", "attention-rewrite", "gemm-merge", "dce", "lower-precision", "fusion"}) {
    for (const PassInfo &info : allPasses())
      if (std::string(info.name) == name) p.push_back(name);
  }
  return p;
}

absl::StatusOr<std::vector<std::unique_ptr<Pass>>> parsePipeline(const std::string &spec) {
  std::vector<std::unique_ptr<Pass>> passes;
  for (absl::string_view part : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    FUSEC_ASSIGN_OR_RETURN(auto pass, createPass(std::string(part)));
    passes.push_back(std::move(pass));
  }
  return passes;
}

std::string pipelineString(const std::vector<std::string> &names) {
  return absl::StrJoin(names, ",");
}

}  // namespace fusec::passes
