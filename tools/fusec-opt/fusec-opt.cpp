//===- fusec-opt.cpp - Run passes on text IR -------------------------------===//
//
// Thin entry point: the driver logic is in FusecOpt.cpp; this file plugs the
// pass registry (passes/Passes.def) into it.
//
//===----------------------------------------------------------------------===//
#include "absl/strings/str_cat.h"
#include "passes/Pass.h"
#include "tools/fusec-opt/FusecOpt.h"

int main(int argc, char **argv) {
  using fusec::passes::allPasses;
  fusec::opt::PassHooks hooks;
  hooks.exists = [](const std::string &name) {
    for (const auto &info : allPasses())
      if (name == info.name) return true;
    return false;
  };
  hooks.run = [](fusec::ir::Graph &graph, const std::string &name) -> absl::Status {
    auto pass = fusec::passes::createPass(name);
    if (!pass.ok()) return pass.status();
    fusec::passes::PassContext ctx;
    ctx.verifyEach = false;  // fusec-opt verifies after each pass itself.
    return (*pass)->run(graph, ctx).status();
  };
  hooks.describe = [] {
    std::vector<std::string> lines;
    for (const auto &info : allPasses())
      lines.push_back(absl::StrCat("  ", info.name, "  ", info.description));
    return lines;
  };
  return fusec::opt::fusecOptMain(argc, argv, hooks);
}
