//===- FusecOpt.cpp - The fusec-opt driver as a library -------------------===//
//
// Usage: fusec-opt [options] [FILE | -]
//   --passes=a,b           run these passes in order (verifying after each)
//   --infer-shapes         run ir::inferShapes before the passes
//   --no-verify            skip the verifier
//   --print-loc            print node locations
//   --elide-constants=N    print constants with more than N elements as
//                          dense<elided>
//   --split-input-file     split the input at lines `// -----` and process
//                          each chunk on its own (errors reported per chunk;
//                          the outputs are joined with `// -----`)
//   -o FILE                write the output to FILE instead of stdout
// plus the pass options of PassHooks::flags. Flags are parsed by the tools'
// shared parser (driver/CommandLine.h): `--name=V` or `--name V`.
// Exit status: 0 ok, 1 error in the input or a pass, 2 bad usage.
//
//===----------------------------------------------------------------------===//
#include "tools/fusec-opt/FusecOpt.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/ShapeInference.h"
#include "ir/Verifier.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::opt {

namespace {

struct Options {
  std::string input = "-";
  std::string output;
  std::vector<std::string> passes;
  bool inferShapes = false;
  bool verify = true;
  bool splitInputFile = false;
  ir::PrintOptions print;
};

constexpr const char *kUsage =
    "usage: fusec-opt [options] [FILE | -]\n"
    "  --passes=a,b           run the named passes in order\n"
    "  --infer-shapes         run shape inference first\n"
    "  --no-verify            do not run the verifier\n"
    "  --print-loc            print node locations\n"
    "  --elide-constants=N    print constants larger than N elements as dense<elided>\n"
    "  --split-input-file     process chunks separated by '// -----' separately\n"
    "  -o FILE                write output to FILE\n";

void reportError(const std::string &msg) {
  std::cerr << "fusec-opt: error: " << printableLines(msg) << "\n";
}

absl::Status parseArgs(int argc, char **argv, const PassHooks &hooks, Options &opts,
                       bool &help) {
  std::vector<driver::FlagSpec> flags = {
      {"passes", "a,b", "run the named passes in order",
       [&](const std::string &v) {
         for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipEmpty())) {
           std::string name(p);
           if (!hooks.exists || !hooks.exists(name))
             return absl::InvalidArgumentError(absl::StrCat("unknown pass '", name, "'"));
           opts.passes.push_back(name);
         }
         return absl::OkStatus();
       }},
      driver::boolFlag("infer-shapes", opts.inferShapes, "run shape inference first"),
      driver::noVerifyFlag(opts.verify),
      driver::printLocFlag(opts.print.printLocations),
      driver::elideConstantsFlag(opts.print.elideConstantsLargerThan),
      driver::boolFlag("split-input-file", opts.splitInputFile,
                       "process chunks separated by '// -----' separately"),
      driver::stringFlag("o", "FILE", opts.output, "write output to FILE"),
      driver::boolFlag("help", help, "print this help"),
      driver::boolFlag("h", help, nullptr),
  };
  if (hooks.flags)
    for (driver::FlagSpec &f : hooks.flags()) flags.push_back(std::move(f));
  FUSEC_ASSIGN_OR_RETURN(std::vector<std::string> positional,
                         driver::parseFlags(flags, argc, argv));
  if (positional.size() > 1) return absl::InvalidArgumentError("more than one input file");
  if (!positional.empty()) opts.input = positional[0];
  return absl::OkStatus();
}

absl::StatusOr<std::string> readInput(const std::string &path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  ss << f.rdbuf();
  return ss.str();
}

/// Parses, verifies, transforms and prints one chunk of text.
absl::StatusOr<std::string> processChunk(const std::string &text, const Options &opts,
                                         const PassHooks &hooks) {
  if (hooks.beginChunk) hooks.beginChunk();
  FUSEC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::parseGraph(text));
  if (opts.verify) FUSEC_RETURN_IF_ERROR_CTX(ir::verifyGraph(*graph), "verifier");
  if (opts.inferShapes) {
    FUSEC_RETURN_IF_ERROR_CTX(ir::inferShapes(*graph), "shape inference");
    if (opts.verify)
      FUSEC_RETURN_IF_ERROR_CTX(ir::verifyGraph(*graph), "verifier after shape inference");
  }
  for (const std::string &p : opts.passes) {
    FUSEC_RETURN_IF_ERROR_CTX(hooks.run(*graph, p), "pass '", p, "'");
    if (opts.verify)
      FUSEC_RETURN_IF_ERROR_CTX(ir::verifyGraph(*graph), "verifier after pass '", p, "'");
  }
  std::string out = ir::printGraph(*graph, opts.print);
  if (hooks.endChunk) out += hooks.endChunk();
  return out;
}

/// Splits \p text at lines that are exactly `// -----` (surrounding blanks
/// allowed). Each chunk is prefixed with newlines so that parser line numbers
/// refer to the whole file.
std::vector<std::string> splitChunks(const std::string &text) {
  std::vector<std::string> chunks;
  std::string cur;
  int line = 1, chunkStart = 1;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    std::string s(absl::StripAsciiWhitespace(l));
    if (s == "// -----") {
      chunks.push_back(std::string(chunkStart - 1, '\n') + cur);
      cur.clear();
      chunkStart = line + 1;
    } else {
      absl::StrAppend(&cur, l, "\n");
    }
    ++line;
  }
  chunks.push_back(std::string(chunkStart - 1, '\n') + cur);
  return chunks;
}

}  // namespace

int fusecOptMain(int argc, char **argv, const PassHooks &hooks) {
  Options opts;
  bool help = false;
  if (absl::Status s = parseArgs(argc, argv, hooks, opts, help); !s.ok()) {
    reportError(std::string(s.message()));
    return 2;
  }
  if (help) {
    std::cout << kUsage;
    if (hooks.flags) {
      std::cout << "pass options:\n";
      driver::printFlagHelp(hooks.flags(), std::cout);
    }
    if (hooks.describe) {
      std::cout << "passes:\n";
      for (const std::string &l : hooks.describe()) std::cout << l << "\n";
    }
    return 0;
  }
  absl::StatusOr<std::string> text = readInput(opts.input);
  if (!text.ok()) {
    reportError(std::string(text.status().message()));
    return 1;
  }
  std::string where = opts.input == "-" ? "<stdin>" : opts.input;
  std::vector<std::string> chunks =
      opts.splitInputFile ? splitChunks(*text) : std::vector<std::string>{*text};
  bool failed = false;
  std::string out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i) out += "// -----\n";
    absl::StatusOr<std::string> r = processChunk(chunks[i], opts, hooks);
    if (!r.ok()) {
      // Parse errors start with LINE:COL (already file-relative); others get
      // the chunk number when splitting.
      std::string msg(r.status().message());
      bool positional = !msg.empty() && msg[0] >= '0' && msg[0] <= '9';
      if (positional)
        reportError(absl::StrCat(where, ":", msg));
      else if (opts.splitInputFile)
        reportError(absl::StrCat(where, ": chunk ", i + 1, ": ", msg));
      else
        reportError(absl::StrCat(where, ": ", msg));
      failed = true;
      continue;
    }
    out += *r;
  }
  if (opts.output.empty()) {
    std::cout << out;
    std::cout.flush();
  } else {
    std::ofstream f(opts.output, std::ios::binary);
    f << out;
    if (!f) {
      reportError(absl::StrCat("cannot write '", opts.output, "'"));
      return 1;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace fusec::opt
