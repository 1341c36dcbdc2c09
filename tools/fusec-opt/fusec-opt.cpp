//===- fusec-opt.cpp - Run passes on text IR -------------------------------===//
//
// Thin entry point: the driver logic is in FusecOpt.cpp; this file plugs the
// pass registry (passes/Passes.def) into it, with the pass options that only
// make sense with the passes library (rows of the tools' shared parser,
// driver/CommandLine.h):
//   --dump-fusion[=text|json]  print the fusion plan after each chunk's graph
//   --debug-only=PASS          print that pass's debug output (fusion: refusals)
//   --device=NAME              TargetSpec for the cost model and fusion
//                              (default: the default target's device,
//                              targets/Targets.def)
//   --shape=NAME=2x24          bind an input's dims for shape-specialize
//   --precision=P              lower-precision's target: fp32 (default), bf16,
//                              fp16 (checked by the pass, whose error the lit
//                              tests check)
//
//===----------------------------------------------------------------------===//
#include <iostream>

#include "absl/strings/str_cat.h"
#include "codegen/Backend.h"
#include "driver/CommandLine.h"
#include "passes/Pass.h"
#include "support/Status.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionDump.h"
#include "tools/fusec-opt/FusecOpt.h"
#include "support/ToolMain.h"

namespace {

struct PassOptions {
  std::string dumpFusion;  // "", "text" or "json"
  std::vector<std::string> debugOnly;
  std::string device;      // empty: the default device of targets/Targets.def
  fusec::driver::ShapeMap shapes;
  std::string precision = "fp32";
};

PassOptions options;

/// --device, checked against the table of targets when parsed (bad usage).
fusec::driver::FlagSpec deviceRow() {
  fusec::driver::FlagSpec f = fusec::driver::deviceFlag(options.device);
  f.apply = [](const std::string &v) {
    absl::Status s = fusec::passes::resolveTarget("", "", v).status();
    if (s.ok()) options.device = v;
    return s;
  };
  return f;
}

}  // namespace

static int toolMain(int argc, char **argv) {
  using fusec::passes::allPasses;
  namespace driver = fusec::driver;
  static fusec::passes::PassContext ctx;
  static absl::Status targetStatus;
  fusec::opt::PassHooks hooks;
  hooks.exists = [](const std::string &name) {
    for (const auto &info : allPasses())
      if (name == info.name) return true;
    return false;
  };
  hooks.flags = [] {
    return std::vector<driver::FlagSpec>{
        driver::dumpFusionFlag(options.dumpFusion, {"text", "json"}),
        driver::debugOnlyFlag(options.debugOnly),
        deviceRow(),
        driver::shapeFlag(options.shapes),
        driver::stringFlag("precision", "P", options.precision,
                           "lower-precision's target: fp32 (default), bf16, fp16"),
    };
  };
  hooks.beginChunk = [] {
    ctx = fusec::passes::PassContext();
    ctx.verifyEach = false;  // fusec-opt verifies after each pass itself.
    ctx.debugOnly = options.debugOnly;
    ctx.inputShapes = options.shapes;
    ctx.precision = options.precision;
    auto target = fusec::passes::resolveTarget("", "", options.device);
    targetStatus = target.status();
    if (target.ok()) ctx.target = target->device;
    // Fusion asks the target's backend whether a merged group lowers.
    if (target.ok())
      if (auto backend = fusec::codegen::backendFor(target->target); backend.ok())
        ctx.legality = fusec::codegen::legalityFor(**backend, target->device);
  };
  hooks.run = [](fusec::ir::Graph &graph, const std::string &name) -> absl::Status {
    if (!targetStatus.ok()) return targetStatus;
    auto pass = fusec::passes::createPass(name);
    if (!pass.ok()) return pass.status();
    // Even with --no-verify: passes assume present operands (passes/Pass.h).
    FUSEC_RETURN_IF_ERROR(fusec::passes::checkPassInput(graph));
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
    return lines;
  };
  return fusec::opt::fusecOptMain(argc, argv, hooks);
}

// The whole tool runs on a thread with a large stack, and an exception that
// escapes it becomes an error line and status 1 (support/ToolMain.h).
int main(int argc, char **argv) {
  return fusec::support::runToolMain("fusec-opt", [&] { return toolMain(argc, argv); });
}
