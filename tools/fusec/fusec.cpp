//===- fusec.cpp - The fusec compiler driver ------------------------------===//
//
// `fusec MODEL.onnx --emit=ir [--print-loc] [--elide-constants=N]` imports an
// ONNX model and prints its text IR. The driver keeps main() thin: flags are
// rows of one table (kFlags) that parseCommandLine() reads and printUsage()
// lists, and runDriver() does the work, so that later flags (-o, --target,
// --shape, --dump-fusion, --print-pipeline) are one row and one branch each.
//
// Exit codes: 0 success, 1 error (printed as `fusec: error: <message>`),
// 2 bad usage.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/Printer.h"
#include "support/Status.h"

namespace {

/// Everything the command line selects.
struct DriverOptions {
  std::string input;           ///< the model path (positional)
  std::string emit;            ///< --emit: what to print ("ir")
  bool printLocations = false; ///< --print-loc
  int64_t elideConstants = -1; ///< --elide-constants=N (-1: never elide)
  bool help = false;           ///< --help
};

/// One command-line flag. A flag with a valueName takes `--name=VALUE` or
/// `--name VALUE`; one without takes no value.
struct FlagSpec {
  const char *name;
  const char *valueName;  ///< null for boolean flags
  const char *help;
  std::function<absl::Status(DriverOptions &, const std::string &)> apply;
};

const std::vector<FlagSpec> &flagTable() {
  static const std::vector<FlagSpec> kFlags = {
      {"emit", "KIND", "what to print on stdout: ir (the imported graph as text IR)",
       [](DriverOptions &o, const std::string &v) {
         if (v != "ir")
           return absl::InvalidArgumentError(
               absl::StrCat("unknown --emit kind '", v, "' (expected: ir)"));
         o.emit = v;
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

const char kUsage[] = "usage: fusec MODEL.onnx --emit=ir [--print-loc] [--elide-constants=N]";

void printUsage(std::ostream &os) {
  os << kUsage << "\n\nImports an ONNX model and prints it as fusec text IR.\n\nflags:\n";
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
    if (spec->valueName && !value) {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " needs a value"));
      value = argv[++i];
    }
    if (!spec->valueName && value)
      return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " takes no value"));
    FUSEC_RETURN_IF_ERROR(spec->apply(opts, value.value_or("")));
  }
  if (opts.help) return opts;
  if (positional.size() != 1)
    return absl::InvalidArgumentError(positional.empty() ? "no input model given"
                                                         : "more than one input model given");
  opts.input = positional[0];
  if (opts.emit.empty())
    return absl::InvalidArgumentError("nothing to do: pass --emit=ir");
  return opts;
}

/// Imports the model and prints what --emit asks for on \p out.
absl::Status runDriver(const DriverOptions &opts, std::ostream &out) {
  FUSEC_ASSIGN_OR_RETURN(std::unique_ptr<fusec::ir::Graph> graph,
                         fusec::frontend::importOnnxModel(opts.input));
  if (opts.emit == "ir") {
    fusec::ir::PrintOptions po;
    po.printLocations = opts.printLocations;
    po.elideConstantsLargerThan = opts.elideConstants;
    out << fusec::ir::printGraph(*graph, po);
  }
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
