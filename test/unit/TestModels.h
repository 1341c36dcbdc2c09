//===- TestModels.h - The shared models as test fixtures --------*- C++ -*-===//
//
// One fixture for every test that runs the shared models
// (../shared/models next to the repository, or $FUSEC_SHARED_MODELS): list
// them, load one with its test_data_set_0 (inputs matched to graph inputs by
// tensor name, else by position; expected outputs in order), and run passes
// on it through the driver (driver/Driver.h optimize(), the passes part of
// the compile flow) with the inputs' shapes bound. Header-only; a test that
// includes it links fusec_driver and fusec_frontend_onnx.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_TESTMODELS_H
#define FUSEC_TEST_UNIT_TESTMODELS_H

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/Graph.h"
#include "passes/Pass.h"

namespace fusec::testing {

/// The repository root: FUSEC_SOURCE_DIR, an absolute path the build
/// defines for tests that use this header. (__FILE__ is not used: with
/// ccache's base_dir it is a path relative to the build folder, so a test
/// run from another folder found no models and its suites came out empty.)
inline std::filesystem::path sourceDir() {
#ifdef FUSEC_SOURCE_DIR
  return FUSEC_SOURCE_DIR;
#else
  return std::filesystem::absolute(std::filesystem::path(__FILE__).parent_path() / ".." / "..");
#endif
}

/// The shared models folder: $FUSEC_SHARED_MODELS, else
/// <repo>/../shared/models.
inline std::filesystem::path sharedModelsDir() {
  if (const char *env = std::getenv("FUSEC_SHARED_MODELS")) return env;
  return sourceDir() / ".." / "shared" / "models";
}

/// Names of the shared models (folders holding model.onnx), sorted. With
/// \p noneIfEmpty an empty folder gives {"none"}, so that a parameterised
/// suite instantiates one case that can GTEST_SKIP.
inline std::vector<std::string> sharedModelNames(bool noneIfEmpty = false) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(sharedModelsDir(), ec))
    if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty() && noneIfEmpty) names.push_back("none");
  return names;
}

/// \p s with every character that is not a letter or digit replaced by '_'
/// (a gtest parameter name).
inline std::string testParamName(const std::string &s) {
  std::string n = s;
  for (char &ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

/// A shared model with its test_data_set_0.
struct SharedModel {
  std::string name;
  std::filesystem::path dir;          ///< the model's folder
  std::unique_ptr<ir::Graph> graph;   ///< as imported
  std::map<std::string, ir::Tensor> feeds;  ///< graph input name -> data
  std::vector<ir::Tensor> expected;   ///< output_<i>.pb in order

  std::string modelPath() const { return (dir / "model.onnx").string(); }
  /// The --shape bindings of the test data: input name -> dims.
  std::map<std::string, std::vector<int64_t>> inputShapes() const {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto &[n, t] : feeds) shapes[n] = t.shape();
    return shapes;
  }
};

/// Imports shared model \p name and reads its test_data_set_0. Errors: the
/// importer's, a data file that does not parse, an input file with no
/// matching graph input.
inline absl::StatusOr<SharedModel> loadSharedModel(const std::string &name) {
  namespace fs = std::filesystem;
  SharedModel m;
  m.name = name;
  m.dir = sharedModelsDir() / name;
  auto g = frontend::importOnnxModel(m.modelPath());
  if (!g.ok()) return g.status();
  m.graph = std::move(*g);
  std::vector<ir::Value *> feeds;
  for (ir::Value *v : m.graph->inputs())
    if (!v->isConstant()) feeds.push_back(v);
  for (int i = 0;; ++i) {
    fs::path p = m.dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb");
    if (!fs::exists(p)) break;
    std::string tname;
    auto t = frontend::loadTensorProtoFile(p.string(), &tname);
    if (!t.ok()) return t.status();
    if (tname.empty() || !m.graph->findValue(tname)) {
      if (static_cast<size_t>(i) >= feeds.size())
        return absl::InvalidArgumentError(
            absl::StrCat(p.string(), " has no matching graph input"));
      tname = feeds[i]->name();
    }
    m.feeds[tname] = std::move(*t);
  }
  for (int i = 0;; ++i) {
    fs::path p = m.dir / "test_data_set_0" / absl::StrCat("output_", i, ".pb");
    if (!fs::exists(p)) break;
    auto t = frontend::loadTensorProtoFile(p.string(), nullptr);
    if (!t.ok()) return t.status();
    m.expected.push_back(std::move(*t));
  }
  return m;
}

/// Runs the passes \p pipeline ("a,b,c"; empty = the default target's
/// pipeline) on \p m.graph through driver::optimize, with the test data's
/// shapes bound and \p precision; \p ctx receives the fusion plan and
/// statistics.
inline absl::Status runPipeline(SharedModel &m, passes::PassContext &ctx,
                                const std::string &pipeline = "",
                                const std::string &precision = "fp32") {
  driver::CompileOptions options;
  options.inputShapes = m.inputShapes();
  options.passes = pipeline;
  options.precision = precision;
  return driver::optimize(*m.graph, options, ctx);
}

}  // namespace fusec::testing

#endif  // FUSEC_TEST_UNIT_TESTMODELS_H
