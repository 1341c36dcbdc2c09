//===- fusec-run.cpp - Run a model and check it against expected data -----===//
//
// fusec-run --reference MODEL.onnx --data DIR
//   Imports MODEL.onnx, runs the reference interpreter on DIR/input_<i>.pb and
//   compares with DIR/output_<i>.pb (the ONNX backend-test layout). Prints
//   one line per output with the max abs and max relative error, then a final
//   line starting with PASS or FAIL. Exit status: 0 on PASS, 1 on FAIL or
//   error, 2 on bad usage.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "driver/CommandLine.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "passes/Pipeline.h"
#include "support/Escape.h"
#include "support/Status.h"
#include "tools/fusec-run/GpuRun.h"
#include "tools/fusec-run/TestData.h"
#include "tools/fusec-run/NkiRun.h"
#include "support/ToolMain.h"

namespace fs = std::filesystem;
using namespace fusec;

namespace {

constexpr const char *kUsage = R"(usage: fusec-run --reference MODEL.onnx --data DIR [options]
       fusec-run OUT --data DIR [--data DIR2 ...] [--bench N]

The second form runs a compiled artifact folder (fusec MODEL.onnx -o OUT) and
compares in the same way: a CUDA artifact on the GPU through libfusert (--bench
N then times N runs after warm-up, CUDA graph replay, and prints latency
p50/p90/p99), a cpu artifact (--target cpu) on this machine through libfusert
(--bench N times N synchronous runs on its thread pool; FUSERT_NUM_THREADS sets
the thread count, default all hardware threads), an NKI artifact (--target nki)
through its run.py on the NumPy model of NKI (python/nki_model; --bench does not
apply).

Runs MODEL.onnx and checks it against DIR/input_<i>.pb -> DIR/output_<i>.pb
(ONNX backend-test layout: serialized TensorProtos; inputs are matched to
graph inputs by tensor name, else by position).

  --reference        run the plain C++ reference interpreter on the CPU
  --optimize         first run fusec's whole pass pipeline (shapes bound from
                     the input data), then interpret the optimised graph; fused
                     kernels are evaluated op by op inside each kernel
  --passes=a,b       with --optimize: run these passes instead of the default
  --data DIR         folder with input_<i>.pb and output_<i>.pb; for an
                     artifact repeatable: each folder is checked in turn (an
                     artifact compiled with dynamic shapes takes data sets of
                     different shapes)
  --precision P      fp32 (default), bf16 or fp16. With --optimize: sets the
                     precision the lower-precision pass lowers to (it is in the
                     default pipeline; name it in --passes otherwise). For an
                     artifact: the precision it was compiled with (fusec
                     --precision). Either way, unless --atol/--rtol are given,
                     f32 outputs are compared with the model-level tolerance
                     of that precision (see below)
  --atol X --rtol Y  override the per-dtype tolerance
  --no-poison        for an artifact: do not fill its outputs and activation
                     arena with NaN bytes (0xFF) before the checked run (the
                     fill shows unwritten elements; compute-sanitizer's
                     initcheck needs it off)
  --help             this text

An element passes when |got - expected| <= atol + rtol * |expected|; NaN must
meet NaN, infinities must be equal, integers and bools must be exact.
Default tolerances by output dtype:
  f64   atol 1e-7  rtol 1e-6
  f32   atol 1e-4  rtol 1e-3
  f16   atol 1e-2  rtol 1e-2
  bf16  atol 5e-2  rtol 5e-2
Model-level tolerance for the f32 outputs of a model lowered with --precision
(interp/Compare.h loweredModelTolerance has the measurements):
  bf16  atol 0.05  rtol 0.02
  fp16  atol 0.01  rtol 0.005
The 7 shared models' worst errors (bf16 0.036, fp16 0.0057, on outputs of
rms 1) use at most 39% of it; a GEMM that drops one k tile of 8 exceeds it.
The final line starts with PASS or FAIL; the exit status is 0 only on PASS.
)";

struct Options {
  bool reference = false;
  bool optimize = false;
  std::string passes;
  std::string precision = "fp32";
  std::string model;
  std::string data;                  ///< the first --data
  std::vector<std::string> dataDirs; ///< every --data (artifacts: each is checked)
  std::optional<double> atol, rtol;
  int64_t bench = 0;
  bool noPoison = false;
};

/// A tolerance flag: a finite number >= 0; anything else is a usage error.
driver::FlagSpec toleranceFlag(const char *name, std::optional<double> &out) {
  return {name, "X", "override the per-dtype tolerance", [name, &out](const std::string &v) {
            char *end = nullptr;
            double x = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !std::isfinite(x) || x < 0)
              return absl::InvalidArgumentError(
                  absl::StrCat("--", name, " needs a finite number >= 0, got '", v, "'"));
            out = x;
            return absl::OkStatus();
          }};
}

/// Parses argv with the tools' shared parser (driver/CommandLine.h);
/// \returns an error message (empty on success).
std::string parseArgs(int argc, char **argv, Options &opt) {
  const std::vector<driver::FlagSpec> flags = {
      driver::boolFlag("reference", opt.reference, "run the reference interpreter"),
      driver::boolFlag("optimize", opt.optimize, "run the pass pipeline first"),
      driver::passesFlag(opt.passes, "with --optimize: run these passes instead"),
      driver::precisionFlag(opt.precision, "the precision to lower to / compiled with"),
      {"data", "DIR", "folder with input_<i>.pb and output_<i>.pb (repeatable for an artifact)",
       [&opt](const std::string &v) {
         if (v.empty()) return absl::InvalidArgumentError("--data needs a folder");
         opt.dataDirs.push_back(v);
         if (opt.data.empty()) opt.data = v;
         return absl::OkStatus();
       }},
      driver::intFlag("bench", "N", opt.bench, 0, 1000000000, "time N runs of an artifact"),
      driver::boolFlag("no-poison", opt.noPoison, "do not poison outputs and arena before the run"),
      toleranceFlag("atol", opt.atol),
      toleranceFlag("rtol", opt.rtol),
  };
  absl::StatusOr<std::vector<std::string>> positional = driver::parseFlags(flags, argc, argv);
  if (!positional.ok()) return std::string(positional.status().message());
  for (const std::string &a : *positional) {
    if (!opt.model.empty()) return absl::StrCat("unexpected argument '", a, "'");
    opt.model = a;
  }
  if (opt.model.empty()) return "no model given";
  if (opt.data.empty()) return "--data DIR is required";
  if (opt.reference && opt.dataDirs.size() > 1) return "--reference takes one --data";
  return "";
}

using tools::loadSeries;

absl::StatusOr<bool> run(const Options &opt) {
  FUSEC_ASSIGN_OR_RETURN(auto inputs, loadSeries(opt.data, "input"));
  // The data's shapes are bound while importing, as fusec --shape would, so
  // that what the importer expands or folds (ConvInteger's geometry, an If
  // on a shape, an LSTM's length) sees them. Data naming no graph input
  // (an input with an initializer, say) makes that binding fail: then the
  // model is imported unbound, as before.
  frontend::ImportOptions io;
  for (const auto &[name, t] : inputs)
    if (!name.empty()) io.inputShapes[name] = t.shape();
  absl::StatusOr<std::unique_ptr<ir::Graph>> bound = frontend::importOnnxModel(opt.model, io);
  if (!bound.ok() && !io.inputShapes.empty()) {
    // One-element [1] data may stand for a declared scalar (below): bind
    // the rest.
    frontend::ImportOptions rest;
    for (const auto &[name, shape] : io.inputShapes)
      if (shape != ir::Shape{1}) rest.inputShapes[name] = shape;
    absl::StatusOr<std::unique_ptr<ir::Graph>> retry =
        rest.inputShapes.size() < io.inputShapes.size() ? frontend::importOnnxModel(opt.model, rest)
                                                        : absl::StatusOr<std::unique_ptr<ir::Graph>>(bound.status());
    if (!retry.ok()) retry = frontend::importOnnxModel(opt.model);
    if (retry.ok()) bound = std::move(retry);
  }
  std::set<std::string> boundValues;  // inputs compiled in as constants (below)
  if (!bound.ok()) {
    // The importer needs the values of some graph inputs (a Loop's trip
    // count, an If condition whose untaken branch does not import for these
    // shapes: frontend::inputValuesNeeded): the data holds them, so bind
    // them as fusec --input-value would. The result for this data is the
    // same; only the graph is specialised to it (red team s28 M2, M3).
    std::vector<std::string> needed = frontend::inputValuesNeeded(bound.status());
    frontend::ImportOptions withValues = io;
    for (const std::string &n : needed)
      for (const auto &[name, t] : inputs)
        if (name == n) withValues.inputValues[name] = t;
    if (!withValues.inputValues.empty() && withValues.inputValues.size() == needed.size()) {
      for (const auto &[name, t] : withValues.inputValues) withValues.inputShapes.erase(name);
      absl::StatusOr<std::unique_ptr<ir::Graph>> retry = frontend::importOnnxModel(opt.model, withValues);
      if (retry.ok()) {
        for (const auto &[name, t] : withValues.inputValues) {
          boundValues.insert(name);
          std::fprintf(stderr, "fusec-run: note: input '%s' bound to its value in the data while importing "
                       "(the model needs it at import, as fusec --input-value)\n", printable(name).c_str());
        }
        bound = std::move(retry);
      }
    }
  }
  FUSEC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, std::move(bound));
  // As ONNX Runtime does, one-element data of shape [1] is read as a graph
  // input declared a scalar (exporters write a scalar's test data as [1]).
  for (const ir::Value *in : graph->inputs()) {
    if (!in->type().rankKnown || in->type().rank() != 0) continue;
    for (auto &[name, t] : inputs)
      if (name == in->name() && t.shape() == ir::Shape{1}) {
        std::fprintf(stderr, "fusec-run: note: input '%s' has shape [1] in the data; read as the scalar the model declares\n",
                     name.c_str());
        t = t.reshaped({});
      }
  }
  FUSEC_ASSIGN_OR_RETURN(auto expected, loadSeries(opt.data, "output"));
  if (expected.empty())
    return absl::NotFoundError(absl::StrCat("no output_0.pb in '", opt.data, "'"));

  // Graph inputs that need data, in order (constants are not fed).
  std::vector<ir::Value *> feeds;
  for (ir::Value *v : graph->inputs())
    if (!v->isConstant()) feeds.push_back(v);
  std::map<std::string, ir::Tensor> feedMap;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = inputs[i].first;
    if (boundValues.count(name)) continue;
    if (name.empty() || !graph->findValue(name)) {
      if (i >= feeds.size())
        return absl::InvalidArgumentError(absl::StrCat("input_", i, ".pb has no matching graph input"));
      name = feeds[i]->name();
    }
    feedMap[name] = std::move(inputs[i].second);
  }
  if (opt.optimize) {
    // The passes part of the compile flow (driver/Driver.h), on the default
    // target's roofline, with the shapes of the input data bound.
    driver::CompileOptions co;
    co.precision = opt.precision;
    for (const auto &[name, t] : feedMap) co.inputShapes[name] = t.shape();
    std::string spec = opt.passes.empty()
                           ? passes::pipelineString(passes::defaultPipeline("reference"))
                           : opt.passes;
    co.passes = spec;
    passes::PassContext ctx;
    const int64_t before = graph->numNodes();
    FUSEC_RETURN_IF_ERROR_CTX(driver::optimize(*graph, co, ctx), "optimizing");
    std::printf("optimized with %s: %lld nodes -> %lld nodes, %zu kernels\n", spec.c_str(),
                static_cast<long long>(before), static_cast<long long>(graph->numNodes()),
                ctx.fusionPlan.kernels.size());
  }
  FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, interp::runGraph(*graph, feedMap));
  if (results.size() < expected.size())
    return absl::InvalidArgumentError(absl::StrCat("model has ", results.size(),
                                                   " outputs, data has ", expected.size()));
  std::vector<std::string> outputNames;
  for (const ir::Value *v : graph->outputs()) outputNames.push_back(v->name());
  FUSEC_ASSIGN_OR_RETURN(std::vector<int> wanted, tools::matchSeries(expected, outputNames, "output"));
  bool allPass = true;
  for (size_t i = 0; i < results.size() && i < wanted.size(); ++i) {
    if (wanted[i] < 0) continue;  // no data for it
    const ir::Tensor &want = expected[static_cast<size_t>(wanted[i])].second;
    interp::Tolerance tol = interp::defaultTolerance(want.dtype());
    if (opt.precision != "fp32" && want.dtype() == ir::DType::kF32)
      tol = interp::loweredModelTolerance(opt.precision == "bf16" ? ir::DType::kBF16
                                                                   : ir::DType::kF16);
    if (opt.atol) tol.atol = *opt.atol;
    if (opt.rtol) tol.rtol = *opt.rtol;
    interp::CompareResult r = interp::compareTensors(results[i], want, &tol);
    std::string name = printable(graph->outputs()[i]->name());
    std::printf("output %zu '%s' %s: max abs err %.3g, max rel err %.3g (atol %g, rtol %g) %s%s%s\n",
                i, name.c_str(), ir::dtypeName(want.dtype()), r.maxAbsError, r.maxRelError,
                tol.atol, tol.rtol, r.pass ? "ok" : "MISMATCH", r.pass ? "" : ": ",
                r.message.c_str());
    allPass = allPass && r.pass;
  }
  return allPass;
}

}  // namespace

static int toolMain(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  Options opt;
  std::string err = parseArgs(argc, argv, opt);
  if (!err.empty()) {
    std::fprintf(stderr, "fusec-run: error: %s\n%s", err.c_str(), kUsage);
    return 2;
  }
  if (!opt.reference) {
    std::error_code ec;
    if (fs::is_directory(opt.model, ec) && !fs::exists(fs::path(opt.model) / "manifest.json", ec)) {
      std::fprintf(stderr,
                   "fusec-run: error: '%s' is not a fusec artifact folder (no manifest.json); "
                   "compile one with fusec MODEL.onnx -o OUT\n",
                   opt.model.c_str());
      return 2;
    }
    if (!fs::is_directory(opt.model, ec)) {
      std::fprintf(stderr,
                   "fusec-run: error: '%s' is not an artifact folder (pass --reference to "
                   "interpret an .onnx model)\n",
                   opt.model.c_str());
      return 2;
    }
    double atol = opt.atol.value_or(-1), rtol = opt.rtol.value_or(-1);
    if (opt.precision != "fp32") {
      // Artifact outputs keep the model's dtype (f32); use the model-level
      // tolerance of the precision it was compiled with.
      interp::Tolerance t = interp::loweredModelTolerance(
          opt.precision == "bf16" ? ir::DType::kBF16 : ir::DType::kF16);
      if (!opt.atol) atol = t.atol;
      if (!opt.rtol) rtol = t.rtol;
    }
    // An nki artifact runs through its run.py on the NumPy model of NKI.
    // Every --data is checked (an artifact of dynamic shapes runs data sets
    // of different shapes); the exit status is the worst of them.
    int rc = 0;
    for (const std::string &dir : opt.dataDirs) {
      const int one = tools::isNkiArtifact(opt.model)
                          ? tools::runNkiArtifact(opt.model, dir, atol, rtol)
                          : tools::runArtifact(opt.model, dir, static_cast<int>(opt.bench), atol, rtol, !opt.noPoison);
      rc = std::max(rc, one);
    }
    return rc;
  }
  absl::StatusOr<bool> pass = run(opt);
  if (!pass.ok()) {
    std::string msg = printableLines(std::string(pass.status().message()));
    std::fprintf(stderr, "fusec-run: error: %s\n", msg.c_str());
    // The verdict line is one line: the message's own line breaks are escaped.
    std::printf("FAIL %s: %s\n", printable(opt.model).c_str(), printable(msg).c_str());
    return 1;
  }
  std::printf("%s %s\n", *pass ? "PASS" : "FAIL", printable(opt.model).c_str());
  return *pass ? 0 : 1;
}

// The whole tool runs on a thread with a large stack, and an exception that
// escapes it becomes an error line and status 1 (support/ToolMain.h).
int main(int argc, char **argv) {
  return fusec::support::runToolMain("fusec-run", [&] { return toolMain(argc, argv); });
}
