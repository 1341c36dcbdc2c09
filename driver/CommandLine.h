//===- CommandLine.h - The one flag parser of the fusec tools ---*- C++ -*-===//
//
// Every tool (fusec, fusec-run, fusec-opt, fusec-node-tests) describes its
// flags as rows of a FlagSpec table and parses argv with parseFlags(); the
// flags that several tools share (--shape, --precision, --target, --arch,
// --device, --allow-tf32, --dump-fusion, --debug-only, ...) are built by the
// row factories below, so each is spelled, validated and documented by one
// piece of code.
//
// Syntax: `--name=VALUE` or `--name VALUE` for a flag that takes a value,
// `--name` for one that does not; a single leading dash works too (`-o OUT`).
// `--` ends the flags. Anything else not starting with '-' (and a lone `-`)
// is positional. Errors are InvalidArgument with a message that names the
// flag; the tools print it and exit with status 2 (bad usage).
//
// This library depends on Abseil and the table of targets only
// (fusec_cost_targets, for the --target/--arch/--device help), so that every
// tool can link it.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_DRIVER_COMMANDLINE_H
#define FUSEC_DRIVER_COMMANDLINE_H

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/Tensor.h"

namespace fusec::driver {

/// One command-line flag.
struct FlagSpec {
  const char *name;       ///< without dashes: "shape", "o"
  const char *valueName;  ///< "NAME=DIMS"; null for a flag that takes no value
  /// One line for --help; null hides the flag from printFlagHelp (aliases).
  const char *help;
  /// Stores the value (empty for a flag without one). An error is a usage
  /// error; its message should name the flag.
  std::function<absl::Status(const std::string &value)> apply;
  /// Used when the flag is given without a value ("--dump-fusion" means
  /// "--dump-fusion=text"); null: a value is required.
  const char *implicitValue = nullptr;
};

/// Input name -> dims, as bound by --shape.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

/// One dim of a --shape NAME=1..64x1..4096@512 range: the extents it may
/// take at run time (inclusive) and the one to optimise for (0 = none). A
/// static dim N of such a --shape is N..N.
struct DimRange {
  int64_t min = 1, max = 0, opt = 0;
  /// Instead of a range: the name of another symbolic dim this one always
  /// equals (NAME=s72x1..64: exporters that name one batch dim twice).
  std::string same;
};
using RangeMap = std::map<std::string, std::vector<DimRange>>;

/// Parses argv[1..argc) against \p flags, calling each flag's apply in
/// command-line order. \returns the positional arguments in order.
/// InvalidArgument: an unknown flag ("unknown option '--x'"), a missing value
/// ("flag --shape needs a value"), a value given to a flag that takes none,
/// or the error of a flag's apply.
absl::StatusOr<std::vector<std::string>> parseFlags(const std::vector<FlagSpec> &flags, int argc,
                                                    const char *const *argv);

/// Writes one line per visible flag: "  --name=VALUE" padded to \p column,
/// then the help text.
void printFlagHelp(const std::vector<FlagSpec> &flags, std::ostream &os, size_t column = 24);

/// Parses "input_ids=2x24" (the --shape spelling: NAME=DIMS, dims joined by
/// 'x', each an integer >= 0) into
/// \p name and \p dims. The name is everything before the last '='.
/// InvalidArgument otherwise.
absl::Status parseShapeBinding(const std::string &text, std::string &name,
                               std::vector<int64_t> &dims);

//===----------------------------------------------------------------------===//
// Rows shared by the tools. Each stores into the referenced variable, which
// must outlive the parse.
//===----------------------------------------------------------------------===//

/// --shape NAME=DIMS (repeatable, one input each). Naming the same input
/// twice is an error ("--shape names input 'x' twice"): the last-wins
/// reading would silently drop a binding.
FlagSpec shapeFlag(ShapeMap &shapes);
/// --shape that also accepts ranges (NAME=1..64x1..4096@512, dynamic
/// shapes): a --shape with a range goes to \p ranges, the others to \p shapes.
FlagSpec shapeFlag(ShapeMap &shapes, RangeMap &ranges);
/// Parses "A..B" or "A..B@O" (A >= 1, B >= A, A <= O <= B), "N" (N..N), or
/// a symbol name (a letter or '_' first): the dim equals that symbol.
absl::StatusOr<DimRange> parseDimRange(const std::string &text);
/// --input-value NAME=@FILE.pb or NAME=v1,v2,... (repeatable, once per
/// input): compile graph input NAME as a constant of that value (the
/// importer converts the inline form, read as f64 values of a rank-1
/// tensor, to the input's dtype; frontend::ImportOptions::inputValues).
/// FILE.pb is a serialized onnx.TensorProto (the backend-test layout's
/// input_<i>.pb). Errors name the flag: no '=', an unreadable file, a bad
/// number, the same input twice.
FlagSpec inputValueFlag(std::map<std::string, ir::Tensor> &values);
/// --precision fp32|fp16|bf16 (\p help: the tool's own description).
FlagSpec precisionFlag(std::string &precision, const char *help);
/// --target BACKEND; values are checked by passes::resolveTarget(). The
/// help texts of --target, --arch and --device list the table's entries.
FlagSpec targetFlag(std::string &target);
/// --arch ARCH; checked by passes::resolveTarget().
FlagSpec archFlag(std::string &arch);
/// --device NAME; checked by passes::resolveTarget().
FlagSpec deviceFlag(std::string &device);
/// --allow-tf32.
FlagSpec allowTf32Flag(bool &allowTf32);
/// --dump-fusion[=FORMAT] with FORMAT one of \p formats (the first is the
/// implicit value), e.g. {"text", "json", "dot"}.
FlagSpec dumpFusionFlag(std::string &format, std::vector<std::string> formats);
/// --debug-only PASS (repeatable).
FlagSpec debugOnlyFlag(std::vector<std::string> &passes);
/// --passes A,B,... (\p help: the tool's own description).
FlagSpec passesFlag(std::string &passes, const char *help);
/// --no-verify: sets \p verify to false.
FlagSpec noVerifyFlag(bool &verify);
/// --print-loc.
FlagSpec printLocFlag(bool &printLocations);
/// --elide-constants N (N >= 0).
FlagSpec elideConstantsFlag(int64_t &elideLargerThan);
/// A flag without a value that sets \p flag to true.
FlagSpec boolFlag(const char *name, bool &flag, const char *help);
/// A flag with a free-form string value.
FlagSpec stringFlag(const char *name, const char *valueName, std::string &value,
                    const char *help);
/// A flag with an integer value in [\p min, \p max].
FlagSpec intFlag(const char *name, const char *valueName, int64_t &value, int64_t min,
                 int64_t max, const char *help);

}  // namespace fusec::driver

#endif  // FUSEC_DRIVER_COMMANDLINE_H
