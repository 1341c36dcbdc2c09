//===- fusec-opt.cpp - Run passes on text IR -------------------------------===//
//
// Thin entry point: the driver logic is in FusecOpt.cpp; this file plugs the
// pass registry (passes/Passes.def) into it, with the pass options that only
// make sense with the passes library:
//   --dump-fusion[=text|json]  print the fusion plan after each chunk's graph
//   --debug-only=PASS          print that pass's debug output (fusion: refusals)
//   --device=NAME              TargetSpec for the cost model and fusion (h200)
//   --shape=NAME=2x24          bind an input's dims for shape-specialize
//   --precision=P              lower-precision's target: fp32 (default), bf16, fp16
//
//===----------------------------------------------------------------------===//
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/Backend.h"
#include "passes/Pass.h"
#include "passes/fusion/FusionDump.h"
#include "tools/fusec-opt/FusecOpt.h"

namespace {

struct PassOptions {
  std::string dumpFusion;  // "", "text" or "json"
  std::vector<std::string> debugOnly;
  std::string device = "h200";
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string precision = "fp32";
};

}  // namespace

int main(int argc, char **argv) {
  using fusec::passes::allPasses;
  static PassOptions options;
  static fusec::passes::PassContext ctx;
  fusec::opt::PassHooks hooks;
  hooks.exists = [](const std::string &name) {
    for (const auto &info : allPasses())
      if (name == info.name) return true;
    return false;
  };
  hooks.flag = [](const std::string &a) {
    if (a == "--dump-fusion" || a == "--dump-fusion=text") {
      options.dumpFusion = "text";
    } else if (a == "--dump-fusion=json") {
      options.dumpFusion = "json";
    } else if (absl::StartsWith(a, "--debug-only=")) {
      options.debugOnly.push_back(a.substr(13));
    } else if (absl::StartsWith(a, "--device=")) {
      options.device = a.substr(9);
    } else if (absl::StartsWith(a, "--precision=")) {
      options.precision = a.substr(12);
    } else if (absl::StartsWith(a, "--shape=")) {
      std::string v = a.substr(8);
      size_t eq = v.rfind('=');
      if (eq == std::string::npos) return false;
      std::vector<int64_t> dims;
      for (absl::string_view d : absl::StrSplit(v.substr(eq + 1), 'x')) {
        int64_t n;
        if (!absl::SimpleAtoi(d, &n)) return false;
        dims.push_back(n);
      }
      options.shapes[v.substr(0, eq)] = dims;
    } else {
      return false;
    }
    return true;
  };
  hooks.beginChunk = [] {
    ctx = fusec::passes::PassContext();
    ctx.verifyEach = false;  // fusec-opt verifies after each pass itself.
    ctx.debugOnly = options.debugOnly;
    ctx.inputShapes = options.shapes;
    ctx.precision = options.precision;
    auto target = fusec::passes::loadBuiltinTarget(options.device);
    if (target.ok()) ctx.target = *target;
    // Fusion asks the device's backend whether a merged group lowers.
    if (auto backend = fusec::codegen::backendFor(ctx.target.backend); backend.ok())
      ctx.legality = *backend;
  };
  hooks.run = [](fusec::ir::Graph &graph, const std::string &name) -> absl::Status {
    if (ctx.target.name.empty())
      return absl::InvalidArgumentError(absl::StrCat("unknown --device '", options.device, "'"));
    auto pass = fusec::passes::createPass(name);
    if (!pass.ok()) return pass.status();
    return (*pass)->run(graph, ctx).status();
  };
  hooks.endChunk = []() -> std::string {
    if (options.dumpFusion == "text") return fusec::passes::fusionPlanToText(ctx.fusionPlan, ctx.target);
    if (options.dumpFusion == "json") return fusec::passes::fusionPlanToJson(ctx.fusionPlan, ctx.target);
    return "";
  };
  hooks.describe = [] {
    std::vector<std::string> lines;
    for (const auto &info : allPasses())
      lines.push_back(absl::StrCat("  ", info.name, "  ", info.description));
    lines.push_back("pass options: --dump-fusion[=text|json] --debug-only=PASS --device=NAME "
                    "--shape=NAME=DIMS --precision=fp32|bf16|fp16");
    return lines;
  };
  return fusec::opt::fusecOptMain(argc, argv, hooks);
}
