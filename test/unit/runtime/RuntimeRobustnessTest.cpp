//===- RuntimeRobustnessTest.cpp - Tampered artifacts, threads, soak ------===//
//
// libfusert under the conditions docs/RUNTIME.md promises to survive:
//  - tampered artifacts (a file changed after compilation, a library from
//    another artifact, malformed checksums) are load errors, checked before
//    anything is dlopened or uploaded (no GPU needed);
//  - several threads, each running its own loaded model on its own stream,
//    and one artifact loaded twice, give correct results;
//  - 10^4 consecutive runs leave device and host memory where they were.
//
//===----------------------------------------------------------------------===//
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/internal/Checksum.h"
#include "test/unit/runtime/ArtifactFixture.h"

namespace {

using namespace fusert_test;  // NOLINT: the shared artifact fixture
using ::testing::HasSubstr;
namespace checksum = fusec::artifact_checksum;

class RuntimeRobustnessTest : public RuntimeTest {
 protected:
  /// Writes the pipeline artifact; write() records the checksums of its
  /// library and weights, as fusec does. Asserts both are there.
  void writeWithChecksums() {
    write(p_.manifest, p_.weights);
    const Json m = Json::parse(std::ifstream(dir_ / "manifest.json"));
    ASSERT_EQ(m["checksums"].size(), 2u) << m["checksums"].dump();
  }
  /// The load error when everything before the device checks out.
  static bool acceptedUpToTheDevice(fusert_status s) {
    return s == FUSERT_OK || std::string(fusert_last_error()).find("no CUDA device") !=
                                 std::string::npos;
  }
  Pipeline p_;
};

TEST(ChecksumTest, Fnv1a64KnownValues) {
  // Reference values of 64-bit FNV-1a.
  checksum::Fnv1a64 empty;
  EXPECT_EQ(checksum::checksumText(empty.digest()), "fnv1a64:cbf29ce484222325");
  checksum::Fnv1a64 a;
  a.update("a", 1);
  EXPECT_EQ(checksum::checksumText(a.digest()), "fnv1a64:af63dc4c8601ec8c");
  checksum::Fnv1a64 foobar;
  foobar.update("foobar", 6);
  EXPECT_EQ(checksum::checksumText(foobar.digest()), "fnv1a64:85944171f73967e8");
  EXPECT_TRUE(checksum::isChecksumText("fnv1a64:0123456789abcdef"));
  EXPECT_FALSE(checksum::isChecksumText("fnv1a64:0123456789ABCDEF"));
  EXPECT_FALSE(checksum::isChecksumText("crc32:01234567"));
}

TEST_F(RuntimeRobustnessTest, MatchingChecksumsLoad) {
  writeWithChecksums();
  EXPECT_TRUE(acceptedUpToTheDevice(load())) << fusert_last_error();
}

TEST_F(RuntimeRobustnessTest, ModifiedWeightsAreALoadError) {
  writeWithChecksums();
  // Same size, one byte changed: the size check alone cannot see it.
  std::fstream f(dir_ / "weights.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(300);
  f.put('\x7f');
  f.close();
  EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("weights.bin does not match the manifest's checksum"));
}

TEST_F(RuntimeRobustnessTest, LibraryFromAnotherArtifactIsALoadError) {
  writeWithChecksums();
  // Any other library with the same symbols would dlopen and run: only the
  // checksum tells it apart.
  std::ofstream(dir_ / "libmodel.so", std::ios::binary | std::ios::app) << "another build";
  EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("libmodel.so does not match the manifest's checksum"));
}

TEST_F(RuntimeRobustnessTest, MalformedChecksumsAreRejected) {
  write(p_.manifest, p_.weights);
  for (const Json &bad : {Json{{"libmodel.so", "fnv1a64:xyz"}}, Json{{"../etc/passwd", "fnv1a64:0123456789abcdef"}},
                          Json("fnv1a64:0123456789abcdef"), Json{{"weights.bin", 42}}}) {
    Json m = p_.manifest;
    m["checksums"] = bad;
    std::ofstream(dir_ / "manifest.json") << m.dump(2);
    EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT) << bad.dump();
    EXPECT_THAT(fusert_last_error(), HasSubstr("checksums")) << bad.dump();
  }
}

TEST_F(RuntimeRobustnessTest, MissingChecksummedFileIsNotFound) {
  writeWithChecksums();
  fs::remove(dir_ / "libmodel.so");
  EXPECT_EQ(load(), FUSERT_NOT_FOUND);
  EXPECT_THAT(fusert_last_error(), HasSubstr("libmodel.so not found"));
}

// --- Concurrency and soak: needs a GPU. ---

/// Runs \p model \p iterations times on \p stream with inputs derived from
/// \p seed and checks every result; \returns the number of wrong results.
int runAndCheck(fusert_model *model, cudaStream_t stream, const std::vector<float> &w, int seed,
                int iterations) {
  int wrong = 0;
  DeviceFloats dx(kN), dy(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN};
  for (int it = 0; it < iterations; ++it) {
    std::vector<float> x = iota(kN, 0.5f, static_cast<float>(seed * 100 + it));
    if (cudaMemcpyAsync(dx.ptr(), x.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream) !=
        cudaSuccess)
      return iterations;
    fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
    fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
    if (fusert_run(model, &in, 1, &out, 1, stream) != FUSERT_OK) return iterations;
    std::vector<float> y(kN);
    if (cudaMemcpyAsync(y.data(), dy.ptr(), kN * sizeof(float), cudaMemcpyDeviceToHost, stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
      return iterations;
    for (int i = 0; i < kN; ++i)
      if (y[i] != 2.0f * (x[i] + w[i])) {
        ++wrong;
        break;
      }
  }
  return wrong;
}

TEST_F(RuntimeRobustnessTest, ThreadsEachRunTheirOwnModelConcurrently) {
  REQUIRE_CUDA_DEVICE();
  writeWithChecksums();
  constexpr int kThreads = 4, kIterations = 200;
  std::vector<fusert_model *> models(kThreads, nullptr);
  for (auto &m : models) ASSERT_EQ(fusert_load(dir_.c_str(), &m), FUSERT_OK) << fusert_last_error();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t stream;
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        wrong += kIterations;
        return;
      }
      wrong += runAndCheck(models[t], stream, p_.w, t, kIterations);
      cudaStreamDestroy(stream);
    });
  for (auto &th : threads) th.join();
  for (auto *m : models) fusert_unload(m);
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(RuntimeRobustnessTest, OneArtifactLoadedTwiceRunsIndependently) {
  REQUIRE_CUDA_DEVICE();
  writeWithChecksums();
  fusert_model *a = nullptr, *b = nullptr;
  ASSERT_EQ(fusert_load(dir_.c_str(), &a), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_load(dir_.c_str(), &b), FUSERT_OK) << fusert_last_error();
  cudaStream_t sa, sb;
  ASSERT_EQ(cudaStreamCreate(&sa), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&sb), cudaSuccess);
  int wrong = 0;
  for (int round = 0; round < 20; ++round) {
    wrong += runAndCheck(a, sa, p_.w, 2 * round, 5);
    wrong += runAndCheck(b, sb, p_.w, 2 * round + 1, 5);
  }
  // Unloading one leaves the other working.
  fusert_unload(a);
  wrong += runAndCheck(b, sb, p_.w, 99, 10);
  fusert_unload(b);
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
  EXPECT_EQ(wrong, 0);
}

/// Resident host memory in bytes (Linux /proc/self/statm).
long residentBytes() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST_F(RuntimeRobustnessTest, TenThousandRunsDoNotGrowMemory) {
  REQUIRE_CUDA_DEVICE();
  writeWithChecksums();
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  for (bool graph : {false, true}) {
    ASSERT_EQ(fusert_enable_cuda_graph(model_, graph ? 1 : 0), FUSERT_OK);
    DeviceFloats dx(iota(kN, 0.5f, 1.0f)), dy(kN);
    int64_t xShape[] = {4, 250}, yShape[] = {kN};
    fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
    fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
    // Warm up (first run captures the graph, creates handles).
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    size_t freeBefore = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&freeBefore, &total), cudaSuccess);
    long rssBefore = residentBytes();
    for (int i = 0; i < 10000; ++i) {
      ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK) << fusert_last_error();
      if (i % 1000 == 999) {
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    size_t freeAfter = 0;
    ASSERT_EQ(cudaMemGetInfo(&freeAfter, &total), cudaSuccess);
    long rssAfter = residentBytes();
    // Device memory: not one allocation more (2 MiB: the driver's granule).
    EXPECT_LE(static_cast<long long>(freeBefore) - static_cast<long long>(freeAfter), 2ll << 20)
        << (graph ? "with" : "without") << " CUDA graphs";
    EXPECT_LE(rssAfter - rssBefore, 4l << 20) << (graph ? "with" : "without") << " CUDA graphs";
  }
}

}  // namespace
