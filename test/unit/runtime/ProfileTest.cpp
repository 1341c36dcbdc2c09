//===- ProfileTest.cpp - Per-step profile: costs, medians, JSON report -===//
//
// CPU-only: the parts of fusert's profiling that need no GPU (Profile.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/Profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fusec::rt {
namespace {

using Json = nlohmann::json;

/// x(4000 B) + w(4000 B) -> t; t viewed as tv -> y; a batched gemm; a conv;
/// a copy.
Manifest testManifest() {
  Json j = Json::parse(R"({
    "format": "fusec-artifact", "version": 1, "model": "prof", "target": "cuda",
    "arch": "sm_90", "library": "libmodel.so",
    "weights": {"file": "weights.bin", "bytes": 4256},
    "arena_bytes": 4608,
    "buffers": [
      {"id": 0, "name": "x", "dtype": "f32", "shape": [4, 250], "bytes": 4000,
       "storage": "input", "index": 0},
      {"id": 1, "name": "pad", "dtype": "f32", "shape": [10], "bytes": 40,
       "storage": "weight", "offset": 0},
      {"id": 2, "name": "w", "dtype": "f32", "shape": [4, 250], "bytes": 4000,
       "storage": "weight", "offset": 256},
      {"id": 3, "name": "t", "dtype": "f32", "shape": [4, 250], "bytes": 4000,
       "storage": "arena", "offset": 512},
      {"id": 4, "name": "tv", "dtype": "f32", "shape": [1000], "bytes": 4000,
       "storage": "alias", "of": 3, "offset": 0},
      {"id": 5, "name": "y", "dtype": "f32", "shape": [1000], "bytes": 4000,
       "storage": "output", "index": 0}
    ],
    "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 250], "buffer": 0}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": [1000], "buffer": 5}],
    "steps": [
      {"kind": "kernel", "name": "add", "symbol": "fusert_test_add",
       "buffers": [0, 2, 3]},
      {"kind": "kernel", "name": "scale_\"q\"", "symbol": "fusert_test_scale",
       "buffers": [4, 5, 4]},
      {"kind": "gemm", "name": "mm", "a": 0, "b": 2, "d": 3, "m": 2, "n": 2,
       "k": 250, "batch": 2, "stride_a": 500, "stride_b": 500, "stride_d": 4,
       "trans_b": true, "dtype": "f32", "epilogue": "bias", "bias": 1},
      {"kind": "conv", "name": "cv", "x": 0, "w": 2, "y": 3,
       "x_shape": [1, 4, 250, 1], "w_shape": [4, 4, 5, 1], "y_shape": [1, 4, 246, 1],
       "pads": [0, 0, 0, 0], "strides": [1, 1], "dilations": [1, 1], "group": 1,
       "dtype": "f32"},
      {"kind": "copy", "name": "cp", "src": 3, "dst": 5, "bytes": 4000}
    ],
    "kernels": ["add", "scale"]
  })");
  Manifest m;
  Status s = parseManifest(j.dump(), m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

TEST(ProfileTest, MedianOddEvenEmpty) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({5.0f}), 5.0);
  EXPECT_EQ(median({9.0f, 1.0f, 5.0f}), 5.0);
  EXPECT_EQ(median({4.0f, 1.0f, 3.0f, 100.0f}), 3.5);
}

TEST(ProfileTest, StepKindNames) {
  EXPECT_STREQ(stepKindName(StepKind::kKernel), "kernel");
  EXPECT_STREQ(stepKindName(StepKind::kGemm), "gemm");
  EXPECT_STREQ(stepKindName(StepKind::kConv), "conv");
  EXPECT_STREQ(stepKindName(StepKind::kCopy), "copy");
}

TEST(ProfileTest, StepCosts) {
  Manifest m = testManifest();
  ASSERT_EQ(m.steps.size(), 5u);
  // Kernel: distinct buffers, a repeated id counted once.
  EXPECT_EQ(stepCost(m, m.steps[0]).bytes, 12000u);
  EXPECT_EQ(stepCost(m, m.steps[0]).flops, 0.0);
  EXPECT_EQ(stepCost(m, m.steps[1]).bytes, 8000u);
  // Gemm: a, b, d, bias; 2*m*n*k*batch.
  EXPECT_EQ(stepCost(m, m.steps[2]).bytes, 4000u * 3 + 40);
  EXPECT_EQ(stepCost(m, m.steps[2]).flops, 2.0 * 2 * 2 * 250 * 2);
  // Conv: 2 * |y| * C/group * kernel area.
  EXPECT_EQ(stepCost(m, m.steps[3]).bytes, 12000u);
  EXPECT_EQ(stepCost(m, m.steps[3]).flops, 2.0 * (4 * 246) * 4 * 5);
  // Copy: read + written.
  EXPECT_EQ(stepCost(m, m.steps[4]).bytes, 8000u);
}

TEST(ProfileTest, AddRunChecksStepCount) {
  StepProfile p;
  p.reset(2);
  p.addRun({1.0f, 2.0f});
  p.addRun({1.0f}); // wrong size: ignored
  EXPECT_EQ(p.runs(), 1u);
  EXPECT_EQ(p.samples(1).size(), 1u);
  p.reset(3);
  EXPECT_EQ(p.runs(), 0u);
  EXPECT_EQ(p.numSteps(), 3u);
}

TEST(ProfileTest, JsonReport) {
  Manifest m = testManifest();
  StepProfile p;
  p.reset(m.steps.size());
  p.addRun({10, 20, 30, 40, 50});
  p.addRun({12, 2, 31, 41, 51});
  p.addRun({11, 21, 29, 40, 52});
  Json r = Json::parse(formatProfileJson(m, p));
  EXPECT_EQ(r["model"], "prof");
  EXPECT_EQ(r["runs"], 3);
  ASSERT_EQ(r["steps"].size(), 5u);
  const Json &s0 = r["steps"][0];
  EXPECT_EQ(s0["index"], 0);
  EXPECT_EQ(s0["name"], "add");
  EXPECT_EQ(s0["kind"], "kernel");
  EXPECT_DOUBLE_EQ(s0["median_us"].get<double>(), 11.0);
  EXPECT_DOUBLE_EQ(s0["min_us"].get<double>(), 10.0);
  EXPECT_EQ(s0["bytes"], 12000);
  EXPECT_EQ(r["steps"][1]["name"], "scale_\"q\""); // escaped and back
  EXPECT_DOUBLE_EQ(r["steps"][1]["median_us"].get<double>(), 20.0);
  EXPECT_EQ(r["steps"][2]["kind"], "gemm");
  EXPECT_DOUBLE_EQ(r["steps"][2]["flops"].get<double>(), 4000.0);
  EXPECT_EQ(r["steps"][4]["kind"], "copy");
  EXPECT_DOUBLE_EQ(r["total_us"].get<double>(), 11 + 20 + 30 + 40 + 51);
}

TEST(ProfileTest, JsonReportWithoutRuns) {
  Manifest m = testManifest();
  StepProfile p;
  p.reset(m.steps.size());
  Json r = Json::parse(formatProfileJson(m, p));
  EXPECT_EQ(r["runs"], 0);
  EXPECT_EQ(r["total_us"], 0.0);
  EXPECT_EQ(r["steps"][3]["median_us"], 0.0);
  EXPECT_EQ(r["steps"][3]["kind"], "conv");
  // A profile sized for fewer steps than the manifest: extra steps read 0.
  p.reset(1);
  p.addRun({7});
  r = Json::parse(formatProfileJson(m, p));
  EXPECT_EQ(r["steps"][0]["median_us"], 7.0);
  EXPECT_EQ(r["steps"][4]["median_us"], 0.0);
}

TEST(ProfileTest, InvalidUtf8NameDoesNotThrow) {
  Manifest m = testManifest();
  m.steps[0].name = std::string("bad\xff\xfe", 5);
  StepProfile p;
  p.reset(m.steps.size());
  std::string text;
  EXPECT_NO_THROW(text = formatProfileJson(m, p));
  // A named result: GCC's warn_unused_result ignores a (void) cast.
  EXPECT_NO_THROW({
    Json parsed = Json::parse(text);
    EXPECT_FALSE(parsed.is_discarded());
  });
}

} // namespace
} // namespace fusec::rt
