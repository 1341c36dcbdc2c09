//===- DriverTest.cpp - compile(model, options) ---------------------------===//
//
// The driver's flow on the bundled example model
// (examples/models/attn_causal_sdpa): stages stop where asked, the hooks run
// in order, the target is resolved from the table, a target without a
// backend is refused before anything is written, and bad options are
// InvalidArgument.
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "driver/Driver.h"
#include "gtest/gtest.h"
#include "test/unit/TestModels.h"

namespace fusec::driver {
namespace {

namespace fs = std::filesystem;

std::string exampleModel() {
  return (testing::sourceDir() / "examples" / "models" / "attn_causal_sdpa" / "model.onnx")
      .string();
}

CompileOptions exampleOptions() {
  CompileOptions o;
  o.inputShapes["x"] = {2, 24, 128};
  return o;
}

TEST(Compile, StopsAfterImport) {
  CompileOptions o = exampleOptions();
  o.stopAfter = Stage::kImport;
  int imported = 0, optimized = 0;
  o.onImported = [&](const ir::Graph &) { ++imported; };
  o.onOptimized = [&](const ir::Graph &, const passes::PassContext &) { ++optimized; };
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(imported, 1);
  EXPECT_EQ(optimized, 0);
  EXPECT_TRUE(c->pipeline.empty());
  EXPECT_TRUE(c->context.fusionPlan.kernels.empty());
}

TEST(Compile, RunsTheTargetPipelineOnTheResolvedDevice) {
  CompileOptions o = exampleOptions();
  o.arch = "sm_80";
  std::vector<std::string> order;
  o.onImported = [&](const ir::Graph &) { order.push_back("imported"); };
  o.onOptimized = [&](const ir::Graph &, const passes::PassContext &ctx) {
    order.push_back("optimized on " + ctx.target.name);
  };
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);  // no output: no artifact
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(order, (std::vector<std::string>{"imported", "optimized on a100"}));
  EXPECT_EQ(c->target.target, "cuda");
  EXPECT_EQ(c->target.arch, "sm_80");
  EXPECT_EQ(c->context.target.name, "a100");
  EXPECT_FALSE(c->pipeline.empty());
  EXPECT_FALSE(c->context.fusionPlan.kernels.empty());
  EXPECT_FALSE(c->wroteArtifact);
}

TEST(Compile, PassesOverrideTheDefaultPipeline) {
  CompileOptions o = exampleOptions();
  o.passes = "shape-specialize,const-fold";
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pipeline, (std::vector<std::string>{"shape-specialize", "const-fold"}));
  o.passes = "shape-specialize,no-such-pass";
  EXPECT_FALSE(compile(exampleModel(), o).ok());
}

/// The artifact is built for the resolved arch (here an older arch than the
/// default device's, which the table allows for cuda).
TEST(Compile, WritesTheArtifactForTheResolvedArch) {
  const fs::path out =
      fs::temp_directory_path() / ("fusec-driver-arch-" + std::to_string(::getpid()));
  CompileOptions o = exampleOptions();
  o.arch = "sm_80";
  o.device = "h200";
  o.output = out.string();
  o.runNvcc = false;
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->wroteArtifact);
  EXPECT_EQ(c->context.target.name, "h200");
  EXPECT_GT(c->artifact.numSteps, 0);
  ASSERT_FALSE(c->artifact.warnings.empty());
  EXPECT_NE(c->artifact.warnings[0].find("-arch=sm_80"), std::string::npos)
      << c->artifact.warnings[0];
  std::ifstream in(out / "manifest.json");
  std::stringstream manifest;
  manifest << in.rdbuf();
  EXPECT_NE(manifest.str().find("sm_80"), std::string::npos);
  EXPECT_NE(manifest.str().find("attn_causal_sdpa"), std::string::npos) << "model name";
  std::error_code ec;
  fs::remove_all(out, ec);
}

/// cpu: the artifact is built for the host CPU (no --arch), with libmodel.so.
TEST(Compile, CpuTargetWritesAnArtifactForTheHost) {
#if !FUSEC_HAVE_CPU_BACKEND
  GTEST_SKIP() << "built with -DFUSEC_CPU_BACKEND=OFF";
#endif
  const fs::path out =
      fs::temp_directory_path() / ("fusec-driver-test-cpu-" + std::to_string(::getpid()));
  CompileOptions o = exampleOptions();
  o.target = "cpu";
  o.output = out.string();
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->context.target.backend, "cpu");
  EXPECT_TRUE(fs::exists(out / "libmodel.so"));
  std::ifstream in(out / "manifest.json");
  std::stringstream manifest;
  manifest << in.rdbuf();
  EXPECT_NE(manifest.str().find("\"target\": \"cpu\""), std::string::npos);
  EXPECT_NE(manifest.str().find("\"cpu_abi\": 2"), std::string::npos);
  std::error_code ec;
  fs::remove_all(out, ec);
}

TEST(Compile, BadOptionsAreInvalidArgument) {
  CompileOptions o = exampleOptions();
  o.target = "nki";
  o.arch = "sm_90";
  EXPECT_EQ(compile(exampleModel(), o).status().code(), absl::StatusCode::kInvalidArgument);
  o = exampleOptions();
  o.precision = "int4";
  EXPECT_EQ(compile(exampleModel(), o).status().message(),
            "unknown --precision 'int4' (expected: fp32, fp16, bf16)");
  o = exampleOptions();
  o.inputShapes = {{"y", {2, 24, 128}}};
  absl::StatusOr<Compilation> c = compile(exampleModel(), o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--shape names 'y', which is not a graph input"),
            std::string::npos)
      << c.status();
}

TEST(Compile, MissingModelIsNotFound) {
  absl::StatusOr<Compilation> c = compile("/no/such/model.onnx", exampleOptions());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound) << c.status();
}

}  // namespace
}  // namespace fusec::driver
