//===- Program.cpp - Steps and kernel de-duplication --------------------===//
#include "program/Program.h"

#include <map>
#include <set>

#include "support/Status.h"

namespace fusec::program {

absl::StatusOr<Program> buildProgram(const ir::Graph &graph,
                                     const std::vector<std::string> &kernelNames,
                                     const LoweringOptions &opts) {
  Program prog;
  FUSEC_ASSIGN_OR_RETURN(prog.items, lowerGraph(graph, kernelNames, opts));
  std::map<std::string, int> kernelOfKey;
  std::set<std::string> names;
  for (size_t i = 0; i < prog.items.size(); ++i) {
    const WorkItem &it = prog.items[i];
    Step st;
    st.name = it.name;
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
        break;
      }
    }
    prog.steps.push_back(std::move(st));
    prog.kernelOfStep.push_back(kernel);
  }
  return prog;
}

}  // namespace fusec::program
