//===- ArtifactGpuTest.cpp - Shared models: compile, load, run, compare ---===//
//
// For every shared model (../shared/models or $FUSEC_SHARED_MODELS): bind
// the test inputs' shapes, run the cuda pipeline, write the artifact with
// nvcc, then run it with fusec-run's GPU mode (tools/fusec-run/GpuRun.h)
// against test_data_set_0 and expect PASS at the default tolerances; a
// 20-run benchmark prints the latency percentiles. Skips without nvcc,
// without libfusert, or without a CUDA device. $FUSEC_ARTIFACT_KEEP=DIR
// keeps the artifacts in DIR/<model> (written even without a device);
// $FUSEC_ARTIFACT_PREBUILT=DIR runs DIR/<model> instead of compiling.
//
//===----------------------------------------------------------------------===//
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "codegen/artifact/ArtifactWriter.h"
#include "codegen/cuda/Nvcc.h"
#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "passes/Pass.h"
#include "passes/Pipeline.h"
#include "test/unit/TestModels.h"
#include "tools/fusec-run/GpuRun.h"

namespace fusec::artifact {
namespace {

namespace fs = std::filesystem;

bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

class SharedModelOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModelOnGpu, RunsAndMatches) {
  if (GetParam() == "none") GTEST_SKIP() << "no shared models in " << testing::sharedModelsDir();
  if (!tools::gpuRunAvailable()) GTEST_SKIP() << "built without libfusert";
  fs::path dir = testing::sharedModelsDir() / GetParam();
  fs::path out;
  fs::path root;
  bool removeRoot = false;
  if (const char *prebuilt = std::getenv("FUSEC_ARTIFACT_PREBUILT")) {
    // Artifacts written earlier (e.g. on a machine with nvcc but no GPU).
    out = fs::path(prebuilt) / GetParam();
    ASSERT_TRUE(fs::exists(out / "manifest.json")) << out;
  } else {
    if (codegen::findNvcc("").empty()) GTEST_SKIP() << "nvcc not found";
    auto model = testing::loadSharedModel(GetParam());
    ASSERT_TRUE(model.ok()) << model.status();
    auto &graph = model->graph;
    passes::PassContext ctx;
    absl::Status st = testing::runPipeline(
        *model, ctx, passes::pipelineString(passes::defaultPipeline("cuda")));
    ASSERT_TRUE(st.ok()) << st;
    if (const char *keep = std::getenv("FUSEC_ARTIFACT_KEEP")) {
      root = keep;
    } else {
      root = fs::temp_directory_path() / ("fusec-gpu-test-" + std::to_string(::getpid()));
      removeRoot = true;
    }
    out = root / GetParam();
    ArtifactOptions opts;
    opts.modelName = GetParam();
    st = writeArtifact(*graph, ctx.fusionPlan, ctx.target, opts, out.string());
    ASSERT_TRUE(st.ok()) << st;
  }
  if (!haveDevice()) {
    if (removeRoot) {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
    GTEST_SKIP() << "no CUDA device";
  }
  const int rc = tools::runArtifact(out.string(), (dir / "test_data_set_0").string(), 20);
  EXPECT_EQ(rc, 0) << GetParam() << " does not match its reference outputs (see stdout)";
  if (removeRoot) {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModelOnGpu,
                         ::testing::ValuesIn(testing::sharedModelNames(true)),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace fusec::artifact
