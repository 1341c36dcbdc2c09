//===- Program.cpp - Steps and kernel de-duplication --------------------===//
#include "program/Program.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::program {

namespace {

/// Refuses a Dropout whose training_mode is not known to be false when
/// compiling: the kernels implement inference (a copy), while at run time a
/// true training_mode with a non-zero ratio is random (the reference
/// interpreter refuses it then). Absent or a constant false is inference,
/// and so is any training_mode with a constant zero ratio (a copy); a
/// constant true with another ratio is refused by shape inference.
absl::Status checkInferenceOnly(const ir::Graph &graph) {
  for (const ir::Node *n : graph.nodes()) {
    if (n->kind() != ir::OpKind::kDropout || !n->input(2)) continue;
    if (n->input(2)->constant()) continue;  // a constant: shape inference checked it
    const ir::Tensor *ratio = n->input(1) ? n->input(1)->constant() : nullptr;
    if (ratio && ratio->numElements() == 1 && ratio->getDouble(0) == 0.0) continue;  // a copy
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", n->describe(), ": training_mode is a runtime input; fusec compiles inference "
        "only, so it must be absent or a constant false (export the model in eval mode)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Program> buildProgram(const ir::Graph &graph,
                                     const std::vector<std::string> &kernelNames,
                                     const LoweringOptions &opts) {
  FUSEC_RETURN_IF_ERROR(checkInferenceOnly(graph));
  FUSEC_ASSIGN_OR_RETURN(std::vector<WorkItem> items, lowerGraph(graph, kernelNames, opts));
  return assembleProgram(std::move(items));
}

Program assembleProgram(std::vector<WorkItem> items) {
  Program prog;
  prog.items = std::move(items);
  std::map<std::string, int> kernelOfKey;
  std::set<std::string> names;
  for (size_t i = 0; i < prog.items.size(); ++i) {
    const WorkItem &it = prog.items[i];
    Step st;
    st.name = it.name;
    st.guard = it.guard;
    int kernel = -1;
    if (names.insert(it.name).second) prog.kernelNames.push_back(it.name);
    switch (it.kind) {
      case WorkItem::Kind::kGemm:
        st.kind = Step::Kind::kGemm;
        st.gemm = it.gemm;
        break;
      case WorkItem::Kind::kConv:
        st.kind = Step::Kind::kConv;
        st.conv = it.conv;
        break;
      case WorkItem::Kind::kKernel: {
        st.kind = Step::Kind::kKernel;
        auto found = kernelOfKey.find(canonicalKey(it.spec));
        if (found == kernelOfKey.end()) {
          found = kernelOfKey.emplace(canonicalKey(it.spec), static_cast<int>(prog.kernels.size()))
                      .first;
          prog.kernels.push_back(UniqueKernel{static_cast<int>(i), {}});
        }
        kernel = found->second;
        prog.kernels[kernel].uses.push_back(it.name);
        st.buffers = it.buffers;
        st.aliases = it.aliases;
        break;
      }
    }
    prog.steps.push_back(std::move(st));
    prog.kernelOfStep.push_back(kernel);
  }
  return prog;
}

}  // namespace fusec::program
