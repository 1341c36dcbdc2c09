//===- CanonicalizeModelsTest.cpp - Folding/canonicalisation on real models -===//
//
// For every exported model in ../shared/models (override with the
// FUSEC_SHARED_MODELS environment variable): imports it, runs the reference
// interpreter on test_data_set_0, then runs
//   shape-specialize,const-fold,canonicalize,fold-bn,dce
// with the test inputs' shapes bound, runs the interpreter again and checks
//   - the outputs match the unoptimised ones and the stored expected outputs
//     within the default fp32 tolerances (interp/Compare.h);
//   - no Shape, Size, Range or ConstantOfShape node survives;
//   - the graph verifies after every pass (PassContext::verifyEach).
// Prints node counts before / after and the pattern statistics.
//
//===----------------------------------------------------------------------===//
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "passes/Pass.h"
#include "passes/Pipeline.h"

namespace fusec::passes {
namespace {

namespace fs = std::filesystem;

fs::path modelsDir() {
  if (const char *env = std::getenv("FUSEC_SHARED_MODELS")) return env;
  // test/unit/passes/<this file> -> <repo>/../shared/models
  return fs::path(__FILE__).parent_path() / ".." / ".." / ".." / ".." / "shared" / "models";
}

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(modelsDir(), ec))
    if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::map<std::string, int> histogram(const ir::Graph &g) {
  std::map<std::string, int> h;
  for (const ir::Node *n : g.nodes()) ++h[n->opType()];
  return h;
}

class ModelPipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelPipeline, SameOutputsAndNoShapeArithmetic) {
  fs::path dir = modelsDir() / GetParam();
  auto graph = frontend::importOnnxModel((dir / "model.onnx").string());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ir::Graph &g = **graph;

  std::map<std::string, ir::Tensor> inputs;
  std::vector<ir::Tensor> expected;
  PassContext ctx;
  for (int i = 0;; ++i) {
    fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    std::string name;
    auto t = frontend::loadTensorProtoFile(p.string(), &name);
    ASSERT_TRUE(t.ok()) << t.status();
    ctx.inputShapes[name] = t->shape();
    inputs[name] = std::move(*t);
  }
  for (int i = 0;; ++i) {
    fs::path p = dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    auto t = frontend::loadTensorProtoFile(p.string());
    ASSERT_TRUE(t.ok()) << t.status();
    expected.push_back(std::move(*t));
  }

  auto before = interp::runGraph(g, inputs);
  ASSERT_TRUE(before.ok()) << before.status();
  int64_t nodesBefore = g.numNodes();

  auto passes = parsePipeline("shape-specialize,const-fold,canonicalize,fold-bn,dce");
  ASSERT_TRUE(passes.ok()) << passes.status();
  absl::Status st = runPasses(g, ctx, *passes);
  ASSERT_TRUE(st.ok()) << st;
  int64_t nodesAfter = g.numNodes();

  auto after = interp::runGraph(g, inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < after->size(); ++i) {
    interp::CompareResult c = interp::compareTensors((*after)[i], (*before)[i]);
    EXPECT_TRUE(c.pass) << "output " << i << " vs unoptimised: " << c.message;
    if (i < expected.size()) {
      interp::CompareResult e = interp::compareTensors((*after)[i], expected[i]);
      EXPECT_TRUE(e.pass) << "output " << i << " vs expected: " << e.message;
    }
  }
  std::map<std::string, int> ops = histogram(g);
  for (const char *op : {"Shape", "Size", "Range", "ConstantOfShape"})
    EXPECT_EQ(ops.count(op), 0u) << op << " survived";

  std::cout << "[model] " << GetParam() << ": nodes " << nodesBefore << " -> " << nodesAfter
            << "\n  ops after:";
  for (const auto &[op, n] : ops) std::cout << " " << op << "=" << n;
  std::cout << "\n  stats:";
  for (const auto &[k, v] : ctx.statistics) std::cout << " " << k << "=" << v;
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ModelPipeline, ::testing::ValuesIn(modelNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ModelPipeline);

}  // namespace
}  // namespace fusec::passes
