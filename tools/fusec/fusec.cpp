//===- fusec.cpp - The fusec compiler driver ------------------------------===//
//
// `fusec MODEL.onnx [flags]` compiles an ONNX model with the driver library
// (driver/Driver.h: import, the target's pass pipeline, backend emission) and
// prints or writes what the flags ask for: the text IR before or after the
// pipeline (--emit), the fusion plan (--dump-fusion), the pipeline itself
// (--print-pipeline), the artifact folder (-o). Flags are rows of one table
// (flagTable(), parsed by driver/CommandLine.h's parser shared by every
// tool); --target, --arch and --device resolve through targets/Targets.def.
//
// Exit codes: 0 success, 1 error (printed as `fusec: error: <message>`),
// 2 bad usage.
//
//===----------------------------------------------------------------------===//

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "driver/CommandLine.h"
#include "driver/Driver.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "passes/fusion/FusionDump.h"
#include "support/Escape.h"
#include "support/Status.h"
#include "support/ToolMain.h"

namespace {

namespace driver = fusec::driver;

/// What the command line selects beyond the compile options.
struct ToolOptions {
  driver::CompileOptions compile;  ///< target, shapes, precision, passes, -o, ...
  std::string input;               ///< the model path (positional)
  std::string emit;                ///< --emit: what to print ("ir", "optimized-ir")
  fusec::ir::PrintOptions print;   ///< --print-loc, --elide-constants
  bool help = false;               ///< --help
  std::string dumpFusion;          ///< --dump-fusion[=text|json|dot]
  bool printPipeline = false;      ///< --print-pipeline
  bool passStatistics = false;     ///< --pass-statistics
  bool noNvcc = false;             ///< --no-nvcc: write sources only
  fusec::passes::ResolvedTarget target;  ///< --target/--arch/--device, resolved
};

std::vector<driver::FlagSpec> flagTable(ToolOptions &o) {
  driver::CompileOptions &c = o.compile;
  return {
      {"emit", "KIND",
       "what to print on stdout: ir (the imported graph as text IR) or optimized-ir (after "
       "the pipeline; nodes carry fusec.kernel)",
       [&o](const std::string &v) {
         if (v != "ir" && v != "optimized-ir")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --emit kind '", v, "' (expected: ir, optimized-ir)"));
         o.emit = v;
         return absl::OkStatus();
       }},
      driver::shapeFlag(c.inputShapes, c.inputRanges),
      driver::inputValueFlag(c.inputValues),
      driver::targetFlag(c.target),
      driver::archFlag(c.arch),
      driver::deviceFlag(c.device),
      driver::dumpFusionFlag(o.dumpFusion, {"text", "json", "dot"}),
      driver::boolFlag("print-pipeline", o.printPipeline,
                       "print the pass pipeline for the target in the syntax --passes accepts"),
      driver::passesFlag(c.passes, "run these passes instead of the target's default pipeline"),
      driver::boolFlag("pass-statistics", o.passStatistics, "print each pass's counters on stderr"),
      driver::debugOnlyFlag(c.debugOnly),
      driver::noVerifyFlag(c.verifyEach),
      driver::stringFlag(
          "o", "OUT",
          c.output,
          "compile: write the artifact folder OUT (generated .cu, libmodel.so, weights, "
          "manifest, fusion.json); an existing OUT is replaced only once the new one is "
          "complete"),
      driver::precisionFlag(
          c.precision,
          "fp32 (default); fp16 or bf16 store activations and weights in that dtype (the "
          "lower-precision pass; inputs/outputs keep their dtypes; GEMMs accumulate and "
          "softmax/normalisation statistics stay in fp32)"),
      driver::allowTf32Flag(c.allowTf32),
      driver::boolFlag("no-nvcc", o.noNvcc,
                       "write the sources and the nvcc command, but do not build"),
      driver::boolFlag("emit-llvm", c.emitIr,
                       "--target cpu: also write model.ll, the optimised LLVM IR, into OUT"),
      driver::printLocFlag(o.print.printLocations),
      driver::elideConstantsFlag(o.print.elideConstantsLargerThan),
      driver::boolFlag("help", o.help, "print this help and exit"),
  };
}

const char kUsage[] =
    "usage: fusec MODEL.onnx [--shape NAME=DIMS]... [--emit=ir|optimized-ir] "
    "[--dump-fusion[=text|json|dot]] [--print-pipeline] [flags]";

void printUsage(std::ostream &os) {
  os << kUsage
     << "\n\nImports an ONNX model, runs the target's pass pipeline (shape specialisation,\n"
        "constant folding, canonicalisation, cost model, fusion) and reports what it decided.\n\n"
        "flags:\n";
  ToolOptions unused;
  driver::printFlagHelp(flagTable(unused), os);
}

/// Parses argv into \p opts. Errors (InvalidArgument) are usage errors.
absl::Status parseCommandLine(int argc, char **argv, ToolOptions &opts) {
  FUSEC_ASSIGN_OR_RETURN(std::vector<std::string> positional,
                         driver::parseFlags(flagTable(opts), argc, argv));
  opts.compile.runNvcc = !opts.noNvcc;
  if (opts.help) return absl::OkStatus();
  // A --target/--arch/--device combination the table refuses is bad usage.
  FUSEC_ASSIGN_OR_RETURN(opts.target, driver::resolveOptions(opts.compile));
  if (opts.printPipeline && positional.empty()) return absl::OkStatus();
  if (positional.size() != 1)
    return absl::InvalidArgumentError(positional.empty() ? "no input model given"
                                                         : "more than one input model given");
  opts.input = positional[0];
  if (opts.emit.empty() && opts.dumpFusion.empty() && !opts.printPipeline &&
      opts.compile.output.empty())
    return absl::InvalidArgumentError(
        "nothing to do: pass -o OUT, --emit=ir|optimized-ir, --dump-fusion or --print-pipeline");
  return absl::OkStatus();
}

/// Compiles as far as the flags need and prints what they ask for on \p out.
absl::Status runDriver(ToolOptions &opts, std::ostream &out) {
  namespace passes = fusec::passes;
  if (opts.printPipeline) {
    out << passes::pipelineString(driver::pipelineFor(opts.compile, opts.target)) << "\n";
    if (opts.input.empty()) return absl::OkStatus();
  }
  driver::CompileOptions &c = opts.compile;
  c.stopAfter = opts.emit != "optimized-ir" && opts.dumpFusion.empty() && c.output.empty()
                    ? driver::Stage::kImport
                    : driver::Stage::kArtifact;
  c.onImported = [&](const fusec::ir::Graph &graph) {
    if (opts.emit == "ir") out << fusec::ir::printGraph(graph, opts.print);
  };
  c.onOptimized = [&](const fusec::ir::Graph &graph, const passes::PassContext &ctx) {
    if (opts.passStatistics)
      for (const auto &[name, count] : ctx.statistics)
        std::cerr << "statistic " << name << " = " << count << "\n";
    if (opts.emit == "optimized-ir") out << fusec::ir::printGraph(graph, opts.print);
    if (opts.dumpFusion == "text") out << passes::fusionPlanToText(ctx.fusionPlan, ctx.target);
    if (opts.dumpFusion == "json") out << passes::fusionPlanToJson(ctx.fusionPlan, ctx.target);
    if (opts.dumpFusion == "dot") out << passes::fusionPlanToDot(ctx.fusionPlan, graph);
  };
  FUSEC_ASSIGN_OR_RETURN(driver::Compilation result, driver::compile(opts.input, c));
  if (!result.wroteArtifact) {
    if (!result.dynamicSymbols.empty())
      std::cerr << "fusec: note: dims left dynamic (" << fusec::printable(absl::StrJoin(result.dynamicSymbols, ", "))
                << "): the plan compiled at the first of " << result.probes
                << " probe extents (shapes in it are that probe's); -o then checks that one program serves "
                   "every extent, and refuses the model if not\n";
    if (!result.dynamicArtifactError.empty())
      std::cerr << "fusec: note: -o would refuse this plan with those dims dynamic: "
                << fusec::printableLines(result.dynamicArtifactError) << "\n";
    if (!result.dynamicPlanError.empty())
      std::cerr << "fusec: note: the plan above is over symbolic shapes (what needs static shapes is refused): "
                   "compiling for the dynamic dims failed, as -o would: "
                << fusec::printableLines(result.dynamicPlanError) << "\n";
    return absl::OkStatus();
  }
  const driver::ArtifactReport &a = result.artifact;
  for (const std::string &w : a.warnings) std::cerr << "fusec: warning: " << fusec::printableLines(w) << "\n";
  std::cerr << "fusec: wrote " << fusec::printable(c.output) << ": " << a.numSteps << " steps"
            << (a.numGuardedSteps ? absl::StrCat(" (", a.numGuardedSteps,
                                                 " guarded by run-time conditions)")
                                  : std::string())
            << ", " << a.numKernels
            << " generated kernels, weights " << a.weightsBytes << " bytes, arena "
            << a.arenaBytes << " bytes"
            << (a.builtLibrary ? ", libmodel.so built" : ", library not built") << "\n";
  for (const std::string &r : a.guardedRanges) std::cerr << "fusec: " << fusec::printable(r) << "\n";
  return absl::OkStatus();
}

}  // namespace

static int toolMain(int argc, char **argv) {
  ToolOptions opts;
  if (absl::Status s = parseCommandLine(argc, argv, opts); !s.ok()) {
    std::cerr << "fusec: error: " << fusec::printableLines(std::string(s.message())) << "\n" << kUsage << "\n";
    return 2;
  }
  if (opts.help) {
    printUsage(std::cout);
    return 0;
  }
  absl::Status s = runDriver(opts, std::cout);
  if (!s.ok()) {
    std::cerr << "fusec: error: " << fusec::printableLines(std::string(s.message())) << "\n";
    return 1;
  }
  return 0;
}

// The whole tool runs on a thread with a large stack, and an exception that
// escapes it becomes an error line and status 1 (support/ToolMain.h).
int main(int argc, char **argv) {
  return fusec::support::runToolMain("fusec", [&] { return toolMain(argc, argv); });
}
