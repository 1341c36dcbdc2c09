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
#include "test/unit/TestModels.h"

namespace fusec::passes {
namespace {

namespace fs = std::filesystem;

std::map<std::string, int> histogram(const ir::Graph &g) {
  std::map<std::string, int> h;
  for (const ir::Node *n : g.nodes()) ++h[n->opType()];
  return h;
}

class ModelPipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelPipeline, SameOutputsAndNoShapeArithmetic) {
  auto model = testing::loadSharedModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  ir::Graph &g = *model->graph;
  const std::map<std::string, ir::Tensor> &inputs = model->feeds;
  const std::vector<ir::Tensor> &expected = model->expected;

  auto before = interp::runGraph(g, inputs);
  ASSERT_TRUE(before.ok()) << before.status();
  int64_t nodesBefore = g.numNodes();

  PassContext ctx;
  absl::Status st =
      testing::runPipeline(*model, ctx, "shape-specialize,const-fold,canonicalize,fold-bn,dce");
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

INSTANTIATE_TEST_SUITE_P(SharedModels, ModelPipeline,
                         ::testing::ValuesIn(testing::sharedModelNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ModelPipeline);

}  // namespace
}  // namespace fusec::passes
