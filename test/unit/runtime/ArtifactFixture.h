//===- ArtifactFixture.h - Hand-written artifacts for runtime tests -*- C++ -*-===//
//
// Shared by the runtime's tests: manifest builders (buffers, tensors, the
// skeleton), a two-kernel pipeline artifact (y = 2 * (x + w) through the
// arena and an alias), a fixture that writes an artifact folder with the
// nvcc-built test kernel library, and device buffers. Test code only.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_RUNTIME_ARTIFACTFIXTURE_H
#define FUSEC_TEST_UNIT_RUNTIME_ARTIFACTFIXTURE_H

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fusert/fusert.h"
#include "test/unit/runtime/ManifestBuilder.h"

namespace fusert_test {

namespace fs = std::filesystem;
using Json = nlohmann::json;

inline constexpr int kN = 1000; // elements the test kernels work on

inline bool hasCudaDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    if (!hasCudaDevice())                                                      \
      GTEST_SKIP() << "SKIPPED: no CUDA device";                               \
  } while (0)

inline std::string kernelLibrary() {
  const char *env = std::getenv("FUSERT_TEST_KERNELS");
  return env && *env ? env : FUSERT_TEST_KERNELS;
}

/// The 2-kernel pipeline: y = 2 * (x + w), t in the arena, tv an alias of t.
struct Pipeline {
  Json manifest;
  std::vector<char> weights;
  std::vector<float> w = iota(kN, 0.25f, 1.0f);

  Pipeline() {
    put(weights, 0, std::vector<float>(10, 7.0f)); // unused "pad" weight
    put(weights, 256, w);
    manifest = skeleton(weights.size(), 4608);
    manifest["buffers"] = {buffer(0, "x", {4, 250}, "input", 0),
                           buffer(1, "pad", {10}, "weight", 0),
                           buffer(2, "w", {4, 250}, "weight", 256),
                           buffer(3, "t", {4, 250}, "arena", 512),
                           buffer(4, "tv", {kN}, "alias", 0, 3),
                           buffer(5, "y", {kN}, "output", 0)};
    manifest["inputs"] = {tensor("x", {4, 250}, 0)};
    manifest["outputs"] = {tensor("y", {kN}, 5)};
    manifest["steps"] = {{{"kind", "kernel"},
                          {"name", "add"},
                          {"symbol", "fusert_test_add"},
                          {"buffers", {0, 2, 3}}},
                         {{"kind", "kernel"},
                          {"name", "scale"},
                          {"symbol", "fusert_test_scale"},
                          {"buffers", {4, 5}}}};
  }
};

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("fusert_") + info->name() + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fusert_unload(model_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Writes an artifact folder with \p manifest, \p weights and the kernels.
  void write(const Json &manifest, const std::vector<char> &weights,
             bool withLibrary = true) {
    std::ofstream(dir_ / "weights.bin", std::ios::binary)
        .write(weights.data(), static_cast<std::streamsize>(weights.size()));
    if (withLibrary) {
      EXPECT_EQ(installLibrary(kernelLibrary(), (dir_ / "libmodel.so").string(), manifest), 1);
      writeManifestWithChecksums(dir_.string(), manifest);
      return;
    }
    // Without a library, as fusec writes a model of library calls only: no
    // "library" (the loader loads any library a manifest names). Kernel steps
    // keep it, for the tests of a missing library.
    Json m = manifest;
    bool kernels = false;
    if (m.contains("steps") && m["steps"].is_array())
      for (const Json &step : m["steps"])
        kernels = kernels || (step.is_object() && step.value("kind", "") == "kernel");
    if (!kernels) m.erase("library");
    writeManifestWithChecksums(dir_.string(), m);
  }

  fusert_status load() { return fusert_load(dir_.c_str(), &model_); }

  fs::path dir_;
  fusert_model *model_ = nullptr;
};

/// Device buffer of f32 values, freed on destruction.
class DeviceFloats {
public:
  explicit DeviceFloats(const std::vector<float> &host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&ptr_), n_ * sizeof(float)),
              cudaSuccess);
    set(host);
  }
  explicit DeviceFloats(size_t n) : DeviceFloats(std::vector<float>(n, -1.0f)) {}
  ~DeviceFloats() { cudaFree(ptr_); }
  void set(const std::vector<float> &host) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(float),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<float> get() const {
    std::vector<float> host(n_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  float *ptr() const { return ptr_; }

private:
  size_t n_;
  float *ptr_ = nullptr;
};

inline void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i])))
        << "at element " << i;
}

}  // namespace fusert_test

#endif  // FUSEC_TEST_UNIT_RUNTIME_ARTIFACTFIXTURE_H
