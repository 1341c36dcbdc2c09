//===- Pass.cpp - The pass interface, context and registry ----------------===//
#include "passes/Pass.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/Tensor.h"
#include "ir/Verifier.h"
#include "support/Status.h"

namespace fusec::passes {

// Factories, one per row of Passes.def, defined in each pass's file.
#define FUSEC_PASS(Class, Flag, Desc) std::unique_ptr<Pass> create##Class();
#include "passes/Passes.def"

bool PassContext::debugEnabled(const std::string &pass) const {
  return std::find(debugOnly.begin(), debugOnly.end(), pass) != debugOnly.end();
}

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> *passes = new std::vector<PassInfo>{
#define FUSEC_PASS(Class, Flag, Desc) PassInfo{Flag, Desc, &create##Class},
#include "passes/Passes.def"
  };
  return *passes;
}

absl::StatusOr<std::unique_ptr<Pass>> createPass(const std::string &name) {
  for (const PassInfo &p : allPasses())
    if (name == p.name) return p.create();
  std::vector<std::string> names;
  for (const PassInfo &p : allPasses()) names.push_back(p.name);
  return absl::NotFoundError(
      absl::StrCat("unknown pass '", name, "' (known: ", absl::StrJoin(names, ", "), ")"));
}

absl::Status checkPassInput(const ir::Graph &graph) {
  // Static extents within the tensor size limit (ir/Tensor.h): the passes'
  // byte and FLOP counts are int64 products of them.
  auto sized = [](const ir::Value *v) -> absl::Status {
    if (!v || !v->type().rankKnown) return absl::OkStatus();
    ir::Shape dims;
    for (const ir::Dim &d : v->type().shape)
      if (d.isStatic()) dims.push_back(d.value);
    absl::Status s = ir::checkTensorSize(v->type().dtype == ir::DType::kUndefined ? ir::DType::kU8 : v->type().dtype,
                                         dims, "value");
    if (s.ok()) return s;
    return absl::InvalidArgumentError(absl::StrCat("'", v->name(), "': ", s.message()));
  };
  for (const ir::Value *v : graph.inputs())
    FUSEC_RETURN_IF_ERROR_CTX(sized(v), "malformed IR (checked before every pass, also without the verifier)");
  for (const ir::Node *n : graph.nodes()) {
    FUSEC_RETURN_IF_ERROR_CTX(ir::verifyNodeArity(*n),
                              "malformed IR (checked before every pass, also without the verifier)");
    for (const ir::Value *v : n->outputs())
      FUSEC_RETURN_IF_ERROR_CTX(sized(v), "malformed IR (checked before every pass, also without the verifier)");
  }
  return absl::OkStatus();
}

absl::Status runPasses(ir::Graph &graph, PassContext &ctx,
                       const std::vector<std::unique_ptr<Pass>> &passes) {
  for (const auto &pass : passes) {
    FUSEC_RETURN_IF_ERROR_CTX(checkPassInput(graph), "pass '", pass->name(), "'");
    FUSEC_ASSIGN_OR_RETURN(bool changed, pass->run(graph, ctx));
    (void)changed;
    if (ctx.verifyEach)
      FUSEC_RETURN_IF_ERROR_CTX(ir::verifyGraph(graph), "verifier failed after pass '",
                                pass->name(), "'");
  }
  return absl::OkStatus();
}

}  // namespace fusec::passes
