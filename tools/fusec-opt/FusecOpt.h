//===- FusecOpt.h - The fusec-opt driver as a library -----------*- C++ -*-===//
//
// fusec-opt reads text IR, verifies it, runs named passes and prints the
// result. The logic lives here so that main() stays a few lines and so that a
// pass registry can be plugged in through PassHooks.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_FUSECOPT_FUSECOPT_H
#define FUSEC_TOOLS_FUSECOPT_FUSECOPT_H

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "driver/CommandLine.h"
#include "ir/Graph.h"

namespace fusec::opt {

/// How fusec-opt finds and runs passes by name. Both empty: no passes are
/// registered and every --passes name is reported as unknown.
struct PassHooks {
  /// \returns true if \p name is a registered pass.
  std::function<bool(const std::string &name)> exists;
  /// Runs pass \p name on \p graph (errors name the pass).
  std::function<absl::Status(ir::Graph &graph, const std::string &name)> run;
  /// Lines for --help ("  name  description").
  std::function<std::vector<std::string>()> describe;
  /// Flag rows the pass registry adds (e.g. --dump-fusion, --debug-only,
  /// --device, --shape, --precision), parsed by the same parser as
  /// fusec-opt's own flags (driver/CommandLine.h); listed by --help.
  std::function<std::vector<driver::FlagSpec>()> flags;
  /// Called before each input chunk is processed (passes share state, such
  /// as the fusion plan, within one chunk).
  std::function<void()> beginChunk;
  /// Text appended after each chunk's printed graph (e.g. the fusion plan).
  std::function<std::string()> endChunk;
};

/// Runs fusec-opt with \p argc / \p argv. Writes the printed IR to stdout and
/// `fusec-opt: error: ...` lines to stderr. \returns the process exit code:
/// 0 ok, 1 on an error in the input or a pass, 2 on bad usage (an unknown
/// flag or pass, a malformed value).
int fusecOptMain(int argc, char **argv, const PassHooks &hooks);

}  // namespace fusec::opt

#endif  // FUSEC_TOOLS_FUSECOPT_FUSECOPT_H
