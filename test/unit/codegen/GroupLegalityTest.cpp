//===- GroupLegalityTest.cpp - Every fused group lowers, for every backend ---===//
//
// The one legality rule (issue 8): fusion must never form a group that the
// backend's lowering refuses. For every model of the model folders (each a
// folder of <name>/model.onnx with a manifest.json giving input shapes: the
// shared models, and the stress corpus that test/stress/run_stress.py
// generates and passes in FUSEC_LEGALITY_MODELS), every precision and
// every available backend, this runs the backend's pipeline and asks the
// backend to lower each fused group; any refusal fails, naming the group.
//
//===----------------------------------------------------------------------===//
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "codegen/Backend.h"
#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "passes/Pass.h"
#include "passes/Pipeline.h"
#include "test/unit/TestModels.h"

namespace fusec::codegen {
namespace {

namespace fs = std::filesystem;

struct Model {
  std::string name;
  fs::path path;
  std::map<std::string, std::vector<int64_t>> shapes;
};

std::vector<fs::path> modelDirs() {
  std::vector<fs::path> dirs;
  if (const char *env = std::getenv("FUSEC_LEGALITY_MODELS")) {
    for (absl::string_view d : absl::StrSplit(env, ':', absl::SkipEmpty()))
      dirs.emplace_back(std::string(d));
  } else {
    dirs.push_back(fusec::testing::sharedModelsDir());
  }
  return dirs;
}

/// Models of \p dir's manifest.json: {name: {"inputs": {x: dims}}} (shared
/// models) or {name: {x: dims}} (stress corpus).
std::vector<Model> modelsIn(const fs::path &dir) {
  std::vector<Model> models;
  std::ifstream in(dir / "manifest.json");
  if (!in) return models;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return models;
  for (auto it = j.begin(); it != j.end(); ++it) {
    Model m;
    m.name = it.key();
    m.path = dir / it.key() / "model.onnx";
    const nlohmann::json &inputs = it->contains("inputs") ? (*it)["inputs"] : *it;
    for (auto in = inputs.begin(); in != inputs.end(); ++in)
      if (in->is_array()) m.shapes[in.key()] = in->get<std::vector<int64_t>>();
    if (fs::exists(m.path)) models.push_back(std::move(m));
  }
  return models;
}

TEST(GroupLegality, EveryFusedGroupLowersForEveryBackend) {
  int groups = 0, models = 0;
  for (const fs::path &dir : modelDirs()) {
    for (const Model &m : modelsIn(dir)) {
      ++models;
      for (const char *target : {"cuda", "nki", "cpu"}) {
        auto backend = backendFor(target);
        if (!backend.ok()) continue;  // not available yet
        for (const char *precision : {"fp32", "bf16", "fp16"}) {
          SCOPED_TRACE(m.name + " " + target + " " + precision);
          auto graph = frontend::importOnnxModel(m.path.string());
          ASSERT_TRUE(graph.ok()) << graph.status();
          passes::PassContext ctx;
          ctx.inputShapes = m.shapes;
          ctx.precision = precision;
          auto device = passes::resolveTarget(target, "", "");
          ASSERT_TRUE(device.ok()) << device.status();
          ctx.target = device->device;
          ctx.legality = legalityFor(**backend, ctx.target);
          auto pipeline = passes::parsePipeline(passes::pipelineString((*backend)->passPipeline()));
          ASSERT_TRUE(pipeline.ok()) << pipeline.status();
          absl::Status st = passes::runPasses(**graph, ctx, *pipeline);
          ASSERT_TRUE(st.ok()) << st;
          std::map<std::string, std::vector<const ir::Node *>> byKernel;
          for (const ir::Node *n : (*graph)->nodes()) {
            const ir::Attribute *a = n->attr(passes::kKernelAttr);
            if (a && a->kind() == ir::Attribute::Kind::kString) byKernel[a->s()].push_back(n);
          }
          for (const auto &[kernel, members] : byKernel) {
            ++groups;
            absl::Status lowered = (*backend)->canLowerGroup(**graph, members, ctx.target);
            EXPECT_TRUE(lowered.ok()) << "group " << kernel << ": " << lowered;
          }
        }
      }
    }
  }
  if (models == 0) GTEST_SKIP() << "no models found";
  std::cout << models << " models, " << groups << " fused groups checked\n";
}

}  // namespace
}  // namespace fusec::codegen
