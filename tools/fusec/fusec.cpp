//===- fusec.cpp - The fusec compiler driver ------------------------------===//
//
// `fusec MODEL.onnx [flags]` imports an ONNX model, runs the pass pipeline of
// the target (passes/Pipeline.cpp) and prints or writes what the flags ask
// for: the text IR before or after the pipeline (--emit), the fusion plan
// (--dump-fusion), the pipeline itself (--print-pipeline). The driver keeps
// main() thin: flags are rows of one table (flagTable()) that
// parseCommandLine() reads and printUsage() lists, and runDriver() does the
// work.
//
// Exit codes: 0 success, 1 error (printed as `fusec: error: <message>`),
// 2 bad usage.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/OnnxImporter.h"
#include "codegen/Backend.h"
#include "codegen/artifact/ArtifactWriter.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "passes/fusion/FusionDump.h"
#include "support/Status.h"

namespace {

/// Everything the command line selects.
struct DriverOptions {
  std::string input;           ///< the model path (positional)
  std::string emit;            ///< --emit: what to print ("ir", "optimized-ir")
  bool printLocations = false; ///< --print-loc
  int64_t elideConstants = -1; ///< --elide-constants=N (-1: never elide)
  bool help = false;           ///< --help
  /// --shape NAME=2x24 (repeatable): input name -> dims.
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string target = "cuda";  ///< --target: backend (cuda, nki, cpu)
  std::string arch = "sm_90";   ///< --arch
  std::string device;           ///< --device: TargetSpec name; default from target/arch
  std::string dumpFusion;       ///< --dump-fusion[=text|json|dot]
  bool printPipeline = false;   ///< --print-pipeline
  std::string passes;           ///< --passes=a,b (overrides the default pipeline)
  bool passStatistics = false;  ///< --pass-statistics
  std::vector<std::string> debugOnly;  ///< --debug-only=fusion
  bool noVerify = false;        ///< --no-verify
  std::string output;           ///< -o OUT: write a compiled artifact there
  std::string precision = "fp32";  ///< --precision fp32|fp16|bf16
  bool allowTf32 = false;       ///< --allow-tf32
  bool noNvcc = false;          ///< --no-nvcc: write sources only
};

/// One command-line flag. A flag with a valueName takes `--name=VALUE` or
/// `--name VALUE`; one without takes no value.
struct FlagSpec {
  const char *name;
  const char *valueName;  ///< null for boolean flags
  const char *help;
  std::function<absl::Status(DriverOptions &, const std::string &)> apply;
  /// Value used when the flag is given without one ("--dump-fusion"); null
  /// means a value is required.
  const char *implicitValue = nullptr;
};

const std::vector<FlagSpec> &flagTable() {
  static const std::vector<FlagSpec> kFlags = {
      {"emit", "KIND",
       "what to print on stdout: ir (the imported graph as text IR) or optimized-ir (after "
       "the pipeline; nodes carry fusec.kernel)",
       [](DriverOptions &o, const std::string &v) {
         if (v != "ir" && v != "optimized-ir")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --emit kind '", v, "' (expected: ir, optimized-ir)"));
         o.emit = v;
         return absl::OkStatus();
       }},
      {"shape", "NAME=DIMS",
       "bind input NAME to static dims, e.g. input_ids=2x24 (repeatable); a symbolic dim "
       "bound here is bound in every input that uses the same symbol",
       [](DriverOptions &o, const std::string &v) {
         size_t eq = v.rfind('=');
         if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
           return absl::InvalidArgumentError(
               absl::StrCat("--shape expects NAME=DIMS like input_ids=2x24, got '", v, "'"));
         std::vector<int64_t> dims;
         for (absl::string_view d : absl::StrSplit(v.substr(eq + 1), 'x')) {
           int64_t n = 0;
           if (!absl::SimpleAtoi(d, &n) || n < 0)
             return absl::InvalidArgumentError(
                 absl::StrCat("--shape ", v, ": '", std::string(d), "' is not a dimension >= 0"));
           dims.push_back(n);
         }
         o.shapes[v.substr(0, eq)] = dims;
         return absl::OkStatus();
       }},
      {"target", "BACKEND", "code generation target: cuda (default), nki, cpu",
       [](DriverOptions &o, const std::string &v) {
         if (v != "cuda" && v != "nki" && v != "cpu")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --target '", v, "' (expected: cuda, nki, cpu)"));
         o.target = v;
         return absl::OkStatus();
       }},
      {"arch", "ARCH", "GPU architecture for --target cuda: sm_90 (default), sm_80",
       [](DriverOptions &o, const std::string &v) {
         o.arch = v;
         return absl::OkStatus();
       }},
      {"device", "NAME",
       "roofline parameters to decide with: h200, h100, a100, trn1, trn2 (default: h200 for "
       "sm_90, a100 for sm_80, trn2 for nki)",
       [](DriverOptions &o, const std::string &v) {
         o.device = v;
         return absl::OkStatus();
       }},
      {"dump-fusion", "FORMAT",
       "print every fusion decision: text (default), json, or dot (Graphviz)",
       [](DriverOptions &o, const std::string &v) {
         if (v != "text" && v != "json" && v != "dot")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --dump-fusion format '", v, "' (expected: text, json, dot)"));
         o.dumpFusion = v;
         return absl::OkStatus();
       },
       "text"},
      {"print-pipeline", nullptr,
       "print the pass pipeline for the target in the syntax --passes accepts",
       [](DriverOptions &o, const std::string &) {
         o.printPipeline = true;
         return absl::OkStatus();
       }},
      {"passes", "A,B,...", "run these passes instead of the target's default pipeline",
       [](DriverOptions &o, const std::string &v) {
         o.passes = v;
         return absl::OkStatus();
       }},
      {"pass-statistics", nullptr, "print each pass's counters on stderr",
       [](DriverOptions &o, const std::string &) {
         o.passStatistics = true;
         return absl::OkStatus();
       }},
      {"debug-only", "PASS", "print the named pass's debug output (e.g. fusion refusals) on stderr",
       [](DriverOptions &o, const std::string &v) {
         o.debugOnly.push_back(v);
         return absl::OkStatus();
       }},
      {"no-verify", nullptr, "do not run the IR verifier after each pass",
       [](DriverOptions &o, const std::string &) {
         o.noVerify = true;
         return absl::OkStatus();
       }},
      {"o", "OUT",
       "compile: write the artifact folder OUT (generated .cu, libmodel.so, weights, manifest, "
       "fusion.json); an existing OUT is replaced only once the new one is complete",
       [](DriverOptions &o, const std::string &v) {
         o.output = v;
         return absl::OkStatus();
       }},
      {"precision", "P", "fp32 (default); fp16 or bf16 store activations and weights in that dtype (the "
       "lower-precision pass; inputs/outputs keep their dtypes; GEMMs accumulate and "
       "softmax/normalisation statistics stay in fp32)",
       [](DriverOptions &o, const std::string &v) {
         if (v != "fp32" && v != "fp16" && v != "bf16")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --precision '", v, "' (expected: fp32, fp16, bf16)"));
         o.precision = v;
         return absl::OkStatus();
       }},
      {"allow-tf32", nullptr, "let f32 GEMMs use TF32 tensor cores",
       [](DriverOptions &o, const std::string &) {
         o.allowTf32 = true;
         return absl::OkStatus();
       }},
      {"no-nvcc", nullptr, "write the sources and the nvcc command, but do not build",
       [](DriverOptions &o, const std::string &) {
         o.noNvcc = true;
         return absl::OkStatus();
       }},
      {"print-loc", nullptr, "print each node's location (its ONNX node name)",
       [](DriverOptions &o, const std::string &) {
         o.printLocations = true;
         return absl::OkStatus();
       }},
      {"elide-constants", "N", "print constants with more than N elements as dense<elided>",
       [](DriverOptions &o, const std::string &v) {
         int64_t n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0)
           return absl::InvalidArgumentError(
               absl::StrCat("--elide-constants expects a count >= 0, got '", v, "'"));
         o.elideConstants = n;
         return absl::OkStatus();
       }},
      {"help", nullptr, "print this help and exit",
       [](DriverOptions &o, const std::string &) {
         o.help = true;
         return absl::OkStatus();
       }},
  };
  return kFlags;
}

const char kUsage[] =
    "usage: fusec MODEL.onnx [--shape NAME=DIMS]... [--emit=ir|optimized-ir] "
    "[--dump-fusion[=text|json|dot]] [--print-pipeline] [flags]";

void printUsage(std::ostream &os) {
  os << kUsage
     << "\n\nImports an ONNX model, runs the target's pass pipeline (shape specialisation,\n"
        "constant folding, canonicalisation, cost model, fusion) and reports what it decided.\n\n"
        "flags:\n";
  for (const FlagSpec &f : flagTable()) {
    std::string left = absl::StrCat("--", f.name, f.valueName ? absl::StrCat("=", f.valueName) : "");
    os << "  " << left << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << f.help
       << "\n";
  }
}

/// Parses argv. Errors (InvalidArgument) are usage errors.
absl::StatusOr<DriverOptions> parseCommandLine(int argc, char **argv) {
  DriverOptions opts;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.push_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const FlagSpec *spec = nullptr;
    for (const FlagSpec &f : flagTable())
      if (body == f.name) spec = &f;
    if (!spec) return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    if (spec->valueName && !value && spec->implicitValue) value = spec->implicitValue;
    if (spec->valueName && !value) {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " needs a value"));
      value = argv[++i];
    }
    if (!spec->valueName && value)
      return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " takes no value"));
    FUSEC_RETURN_IF_ERROR(spec->apply(opts, value.value_or("")));
  }
  if (opts.help || (opts.printPipeline && positional.empty())) return opts;
  if (positional.size() != 1)
    return absl::InvalidArgumentError(positional.empty() ? "no input model given"
                                                         : "more than one input model given");
  opts.input = positional[0];
  if (opts.emit.empty() && opts.dumpFusion.empty() && !opts.printPipeline && opts.output.empty())
    return absl::InvalidArgumentError(
        "nothing to do: pass -o OUT, --emit=ir|optimized-ir, --dump-fusion or --print-pipeline");
  return opts;
}

/// The TargetSpec name the cost model uses for these options.
std::string deviceName(const DriverOptions &opts) {
  if (!opts.device.empty()) return opts.device;
  if (opts.target == "nki") return "trn2";
  if (opts.arch == "sm_80" || opts.arch == "sm_86") return "a100";
  return "h200";
}

std::vector<std::string> pipelineFor(const DriverOptions &opts) {
  if (!opts.passes.empty()) {
    std::vector<std::string> names;
    for (absl::string_view p : absl::StrSplit(opts.passes, ',', absl::SkipWhitespace()))
      names.emplace_back(p);
    return names;
  }
  return fusec::passes::defaultPipeline(opts.target);
}

/// Imports the model, runs the pipeline if anything needs it, and prints
/// what the flags ask for on \p out.
absl::Status runDriver(const DriverOptions &opts, std::ostream &out) {
  namespace passes = fusec::passes;
  if (opts.printPipeline) {
    out << passes::pipelineString(pipelineFor(opts)) << "\n";
    if (opts.input.empty()) return absl::OkStatus();
  }
  FUSEC_ASSIGN_OR_RETURN(std::unique_ptr<fusec::ir::Graph> graph,
                         fusec::frontend::importOnnxModel(opts.input));
  fusec::ir::PrintOptions po;
  po.printLocations = opts.printLocations;
  po.elideConstantsLargerThan = opts.elideConstants;
  if (opts.emit == "ir") out << fusec::ir::printGraph(*graph, po);
  if (opts.emit != "optimized-ir" && opts.dumpFusion.empty() && opts.output.empty())
    return absl::OkStatus();

  passes::PassContext ctx;
  ctx.inputShapes = opts.shapes;
  ctx.debugOnly = opts.debugOnly;
  ctx.verifyEach = !opts.noVerify;
  ctx.precision = opts.precision;
  FUSEC_ASSIGN_OR_RETURN(ctx.target, passes::loadBuiltinTarget(deviceName(opts)));
  // Fusion asks the backend's lowering (one legality rule); none for
  // backends that are not available yet.
  if (auto backend = fusec::codegen::backendFor(opts.target); backend.ok()) ctx.legality = *backend;
  ctx.fusionPlan.onnxNodes = graph->onnxNodeCount();
  FUSEC_ASSIGN_OR_RETURN(auto pipeline, passes::parsePipeline(passes::pipelineString(pipelineFor(opts))));
  FUSEC_RETURN_IF_ERROR(passes::runPasses(*graph, ctx, pipeline));
  if (opts.passStatistics)
    for (const auto &[name, count] : ctx.statistics)
      std::cerr << "statistic " << name << " = " << count << "\n";
  if (opts.emit == "optimized-ir") out << fusec::ir::printGraph(*graph, po);
  if (opts.dumpFusion == "text") out << passes::fusionPlanToText(ctx.fusionPlan, ctx.target);
  if (opts.dumpFusion == "json") out << passes::fusionPlanToJson(ctx.fusionPlan, ctx.target);
  if (opts.dumpFusion == "dot") out << passes::fusionPlanToDot(ctx.fusionPlan, *graph);
  if (opts.output.empty()) return absl::OkStatus();

  // The writer finds the backend (codegen::backendFor): nki and cpu say
  // they are not available yet.
  fusec::artifact::ArtifactOptions ao;
  ao.target = opts.target;
  ao.arch = opts.arch;
  ao.precision = opts.precision;
  ao.allowTf32 = opts.allowTf32;
  ao.runNvcc = !opts.noNvcc;
  ao.modelPath = opts.input;
  ao.modelName = std::filesystem::path(opts.input).parent_path().filename().string();
  fusec::artifact::ArtifactSummary summary;
  FUSEC_RETURN_IF_ERROR(fusec::artifact::writeArtifact(*graph, ctx.fusionPlan, ctx.target, ao,
                                                       opts.output, &summary));
  for (const std::string &w : summary.warnings) std::cerr << "fusec: warning: " << w << "\n";
  std::cerr << "fusec: wrote " << opts.output << ": " << summary.numSteps << " steps, "
            << summary.numKernels << " generated kernels, weights " << summary.weightsBytes
            << " bytes, arena " << summary.arenaBytes << " bytes"
            << (summary.builtLibrary ? ", libmodel.so built" : ", library not built") << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char **argv) {
  absl::StatusOr<DriverOptions> opts = parseCommandLine(argc, argv);
  if (!opts.ok()) {
    std::cerr << "fusec: error: " << opts.status().message() << "\n" << kUsage << "\n";
    return 2;
  }
  if (opts->help) {
    printUsage(std::cout);
    return 0;
  }
  absl::Status s = runDriver(*opts, std::cout);
  if (!s.ok()) {
    std::cerr << "fusec: error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
