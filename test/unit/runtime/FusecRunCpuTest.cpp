//===- FusecRunCpuTest.cpp - fusec-run OUT --data DIR on a cpu artifact ---===//
//
// Runs the fusec-run binary on a hand-written cpu artifact (y = 2 * (x + w)
// with the kernels of testdata/CpuTestKernels.cpp) and data written here in
// the ONNX backend-test layout: the comparison lines and PASS, the --bench
// latency line with the thread count, and a kernel that leaves half of its
// output unwritten caught by the poisoned outputs (FAIL). No GPU needed.
//
//===----------------------------------------------------------------------===//
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fusert/fusert_cpu_kernel.h"
#include "onnx/onnx_pb.h"
#include "test/unit/runtime/ManifestBuilder.h"

namespace {

namespace fs = std::filesystem;
using namespace fusert_test;  // NOLINT: the shared manifest builders
using ::testing::HasSubstr;

constexpr int kN = 1000;

void writeTensor(const fs::path &path, const std::string &name, std::vector<int64_t> dims,
                 const std::vector<float> &values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                             values.size() * sizeof(float)));
  std::ofstream(path, std::ios::binary) << t.SerializeAsString();
}

/// Runs \p cmd; \returns its exit status and stdout in \p out.
int runCommand(const std::string &cmd, std::string &out) {
  out.clear();
  FILE *p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class FusecRunCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("fusec_run_cpu_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "art");
    fs::create_directories(dir_ / "data");
    std::vector<float> w = iota(kN, 0.25f, 1.0f), x = iota(kN, 0.5f, 2.0f), y(kN);
    for (int i = 0; i < kN; ++i) y[i] = 2.0f * (x[i] + w[i]);
    put(weights_, 0, w);
    manifest_ = {{"format", "fusec-artifact"}, {"version", 1}, {"model", "run_test"},
                 {"target", "cpu"}, {"arch", "x86-64"}, {"cpu_abi", FUSERT_CPU_ABI_VERSION},
                 {"cpu_features", Json::array()}, {"library", "libmodel.so"},
                 {"weights", {{"file", "weights.bin"}, {"bytes", weights_.size()}}},
                 {"arena_bytes", kN * 4}};
    manifest_["buffers"] = {buffer(0, "x", {4, 250}, "input", 0), buffer(1, "w", {4, 250}, "weight", 0),
                            buffer(2, "t", {kN}, "arena", 0), buffer(3, "y", {kN}, "output", 0)};
    manifest_["inputs"] = {tensor("x", {4, 250}, 0)};
    manifest_["outputs"] = {tensor("y", {kN}, 3)};
    manifest_["steps"] = {
        {{"kind", "kernel"}, {"name", "add"}, {"symbol", "fusert_cpu_test_add"}, {"buffers", {0, 1, 2}}},
        {{"kind", "kernel"}, {"name", "scale"}, {"symbol", "fusert_cpu_test_scale"}, {"buffers", {2, 3}}}};
    writeTensor(dir_ / "data" / "input_0.pb", "x", {4, 250}, x);
    writeTensor(dir_ / "data" / "output_0.pb", "y", {kN}, y);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void writeArtifact() {
    std::ofstream(dir_ / "art" / "weights.bin", std::ios::binary)
        .write(weights_.data(), static_cast<std::streamsize>(weights_.size()));
    installLibrary(FUSERT_CPU_TEST_KERNELS, (dir_ / "art" / "libmodel.so").string(), manifest_);
    writeManifestWithChecksums((dir_ / "art").string(), manifest_);
  }
  int fusecRun(const std::string &extra, std::string &out) {
    return runCommand("FUSERT_NUM_THREADS=2 " + std::string(FUSEC_RUN_BIN) + " " +
                          (dir_ / "art").string() + " --data " + (dir_ / "data").string() + " " +
                          extra,
                      out);
  }

  fs::path dir_;
  Json manifest_;
  std::vector<char> weights_;
};

TEST_F(FusecRunCpuTest, ComparesAndBenchmarks) {
  writeArtifact();
  std::string out;
  EXPECT_EQ(fusecRun("--bench 20", out), 0) << out;
  EXPECT_THAT(out, HasSubstr("output 0 'y' f32: max abs err 0"));
  EXPECT_THAT(out, HasSubstr(" ok\n"));
  EXPECT_THAT(out, HasSubstr("latency ms: p50 "));
  EXPECT_THAT(out, HasSubstr("(20 runs after 10 warm-up, cpu, 2 threads)"));
  EXPECT_THAT(out, HasSubstr("PASS "));
}

TEST_F(FusecRunCpuTest, PoisonedOutputsShowUnwrittenElements) {
  manifest_["steps"][1]["symbol"] = "fusert_cpu_test_half_scale";
  writeArtifact();
  std::string out;
  EXPECT_EQ(fusecRun("", out), 1) << out;
  EXPECT_THAT(out, HasSubstr("MISMATCH"));
  EXPECT_THAT(out, HasSubstr("FAIL "));
}

TEST_F(FusecRunCpuTest, LoadErrorIsAFailLine) {
  manifest_["cpu_abi"] = 99;
  writeArtifact();
  std::string out;
  EXPECT_EQ(fusecRun("", out), 1) << out;
  EXPECT_THAT(out, HasSubstr("FAIL "));
  EXPECT_THAT(out, HasSubstr("cpu_abi 99 unsupported"));
}

}  // namespace
