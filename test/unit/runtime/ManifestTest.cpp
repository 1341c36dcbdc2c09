//===- ManifestTest.cpp - manifest.json parsing, checking and binding -===//
//
// CPU-only: exercises the checks fusert_load and fusert_run make before they
// touch the device. Each test mutates one field of a valid manifest and
// expects FUSERT_INVALID_ARGUMENT with a message naming the problem.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/Manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fusec::rt {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

/// A valid manifest: y = 2 * (x + w), through an arena buffer and an alias,
/// plus a gemm and a copy so every step kind's checks run.
Json validManifest() {
  return Json::parse(R"({
    "format": "fusec-artifact", "version": 1, "model": "t", "target": "cuda",
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
      {"kind": "kernel", "name": "scale", "symbol": "fusert_test_scale",
       "buffers": [4, 5]},
      {"kind": "gemm", "name": "mm", "a": 0, "b": 2, "d": 3, "m": 4, "n": 4,
       "k": 250, "trans_b": true, "dtype": "f32", "epilogue": "bias",
       "bias": 1},
      {"kind": "copy", "name": "cp", "src": 3, "dst": 5, "bytes": 4000}
    ],
    "kernels": ["add", "scale"]
  })");
}

Status parse(const Json &j, Manifest &m) { return parseManifest(j.dump(), m); }

/// Expects \p j to be rejected with a message containing \p text.
void expectInvalid(const Json &j, const std::string &text) {
  Manifest m;
  Status s = parse(j, m);
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT) << s.message();
  EXPECT_THAT(s.message(), HasSubstr(text));
}

TEST(ManifestTest, ParsesValidManifest) {
  Manifest m;
  Status s = parse(validManifest(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.library, "libmodel.so");
  EXPECT_EQ(m.weightsBytes, 4256u);
  EXPECT_EQ(m.arenaBytes, 4608u);
  ASSERT_EQ(m.buffers.size(), 6u);
  EXPECT_EQ(m.buffers[4].storage, Storage::kAlias);
  EXPECT_EQ(m.buffers[4].of, 3);
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.steps[0].kind, StepKind::kKernel);
  EXPECT_EQ(m.steps[0].buffers, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(m.steps[2].kind, StepKind::kGemm);
  EXPECT_TRUE(m.steps[2].gemm.transB);
  EXPECT_EQ(m.steps[2].gemm.epilogue, Epilogue::kBias);
  EXPECT_EQ(m.steps[3].kind, StepKind::kCopy);
  EXPECT_EQ(m.steps[3].bytes, 4000u);
}

TEST(ManifestTest, DTypeNames) {
  for (const char *name :
       {"f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool", "f8e4m3fn",
        "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"}) {
    fusert_dtype d;
    ASSERT_TRUE(parseDType(name, d)) << name;
    EXPECT_STREQ(fusert_dtype_name(d), name);
    EXPECT_GT(fusert_dtype_size(d), 0u);
  }
  fusert_dtype d;
  EXPECT_FALSE(parseDType("f8", d));
  EXPECT_FALSE(parseDType("i4", d));
  // The quantised and unsigned types' sizes (element bytes of their buffers).
  EXPECT_EQ(fusert_dtype_size(FUSERT_I16), 2u);
  EXPECT_EQ(fusert_dtype_size(FUSERT_U16), 2u);
  EXPECT_EQ(fusert_dtype_size(FUSERT_U32), 4u);
  EXPECT_EQ(fusert_dtype_size(FUSERT_U64), 8u);
  // float8: one byte per element; f8e8m0 and the packed types stay out.
  EXPECT_EQ(fusert_dtype_size(FUSERT_F8E4M3FN), 1u);
  EXPECT_EQ(fusert_dtype_size(FUSERT_F8E5M2FNUZ), 1u);
  EXPECT_FALSE(parseDType("f8e8m0", d));
  EXPECT_FALSE(parseDType("f4e2m1", d));
}

TEST(ManifestTest, ParsesQuantisedDTypes) {
  // u16 / i16 / u32 / u64 buffers load, and their byte counts are checked
  // against the element size like every other dtype.
  for (const auto &[name, size] : std::vector<std::pair<std::string, int>>{
           {"u16", 2}, {"i16", 2}, {"u32", 4}, {"u64", 8}}) {
    Json j = validManifest();
    j["buffers"][0]["dtype"] = name;
    j["buffers"][0]["bytes"] = 1000 * size;
    j["inputs"][0]["dtype"] = name;
    j["steps"].erase(2);  // the gemm reads x as f32
    Manifest m;
    Status s = parse(j, m);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    EXPECT_STREQ(fusert_dtype_name(m.buffers[0].dtype), name.c_str());
    j["buffers"][0]["bytes"] = 1000 * size + 1;
    expectInvalid(j, "bytes");
  }
}

TEST(ManifestTest, RejectsBadJson) {
  Manifest m;
  Status s = parseManifest("{\"format\": ", m);
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("not valid JSON"));
  s = parseManifest("[1, 2]", m);
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
}

TEST(ManifestTest, RejectsWrongFormatOrVersion) {
  Json j = validManifest();
  j["format"] = "onnx";
  expectInvalid(j, "format 'onnx'");
  j = validManifest();
  j["version"] = 2;
  expectInvalid(j, "version 2 unsupported");
}

TEST(ManifestTest, RejectsMissingFields) {
  for (const char *key : {"format", "version", "arena_bytes", "buffers",
                          "inputs", "outputs", "steps"}) {
    Json j = validManifest();
    j.erase(key);
    expectInvalid(j, std::string("missing field '") + key + "'");
  }
  Json j = validManifest();
  j["buffers"][2].erase("offset");
  expectInvalid(j, "buffers[2] 'w': missing field 'offset'");
  j = validManifest();
  j["steps"][2].erase("k");
  expectInvalid(j, "steps[2] 'mm': missing field 'k'");
  j = validManifest();
  j["steps"][0].erase("symbol");
  expectInvalid(j, "missing field 'symbol'");
}

TEST(ManifestTest, RejectsMistypedFields) {
  Json j = validManifest();
  j["arena_bytes"] = "big";
  expectInvalid(j, "'arena_bytes' must be an integer");
  j = validManifest();
  j["buffers"][0]["shape"] = {4, "x"};
  expectInvalid(j, "array of integers");
  j = validManifest();
  j["steps"][2]["trans_b"] = 1;
  expectInvalid(j, "'trans_b' must be a boolean");
}

TEST(ManifestTest, RejectsUnknownNames) {
  Json j = validManifest();
  j["buffers"][1]["dtype"] = "f8";
  expectInvalid(j, "unknown dtype 'f8'");
  j = validManifest();
  j["buffers"][1]["storage"] = "rom";
  expectInvalid(j, "unknown storage 'rom'");
  j = validManifest();
  j["steps"][1]["kind"] = "softmax";
  expectInvalid(j, "steps[1] 'scale': unknown step kind 'softmax'");
  j = validManifest();
  j["steps"][2]["epilogue"] = "swish";
  expectInvalid(j, "unknown epilogue 'swish'");
  j = validManifest();
  j["steps"][2]["compute"] = "f8";
  expectInvalid(j, "unknown compute 'f8'");
}

TEST(ManifestTest, RejectsOffsetsOutOfRange) {
  Json j = validManifest();
  j["buffers"][2]["offset"] = 512; // 512 + 4000 > 4256
  expectInvalid(j, "weight range [512, 4512) out of range of 4256");
  j = validManifest();
  j["buffers"][3]["offset"] = 1024; // 1024 + 4000 > 4608
  expectInvalid(j, "arena range [1024, 5024) out of range of 4608");
  j = validManifest();
  j["buffers"][4]["offset"] = 4;
  expectInvalid(j, "alias range [4, 4004) out of range of buffer 3");
  j = validManifest();
  j["buffers"][4]["of"] = 9;
  expectInvalid(j, "alias of unknown buffer 9");
}

TEST(ManifestTest, RejectsAliasCycle) {
  Json j = validManifest();
  j["buffers"][3] = {{"id", 3},       {"name", "t"},    {"dtype", "f32"},
                     {"shape", {1000}}, {"bytes", 4000}, {"storage", "alias"},
                     {"of", 4},         {"offset", 0}};
  expectInvalid(j, "cycle of aliases");
}

TEST(ManifestTest, RejectsInconsistentBuffers) {
  Json j = validManifest();
  j["buffers"][1]["bytes"] = 44;
  expectInvalid(j, "bytes 44 != 40");
  j = validManifest();
  j["buffers"][1]["id"] = 2;
  expectInvalid(j, "duplicate buffer id 2");
  j = validManifest();
  j["inputs"][0]["shape"] = {250, 4};
  expectInvalid(j, "inputs[0] 'x': dtype/shape f32[250, 4] differ");
  j = validManifest();
  j["inputs"][0]["buffer"] = 2;
  expectInvalid(j, "index 0 does not name a inputs entry");
}

TEST(ManifestTest, RejectsBadStepOperands) {
  Json j = validManifest();
  j["steps"][0]["buffers"] = {0, 2, 7};
  expectInvalid(j, "steps[0] 'add': unknown buffer 7");
  j = validManifest();
  j["steps"][2]["k"] = 251; // A needs 4*251 elements, x has 1000
  expectInvalid(j, "'a' needs 1004 elements but buffer 0 has 1000");
  j = validManifest();
  j["steps"][2]["batch"] = 2;
  j["steps"][2]["stride_d"] = 16;
  j["steps"][2]["stride_a"] = 1000; // second A matrix starts past the end
  expectInvalid(j, "'a' needs 2000 elements but buffer 0 has 1000");
  j["steps"][2]["stride_a"] = 0; // broadcast A: fits
  j["steps"][2]["stride_d"] = 8;
  expectInvalid(j, "stride_d 8 makes output matrices overlap");
}

TEST(ManifestTest, RejectsGemmBiasMismatch) {
  Json j = validManifest();
  j["steps"][2].erase("bias");
  expectInvalid(j, "epilogue with bias but no 'bias' buffer");
  j = validManifest();
  j["steps"][2]["epilogue"] = "relu";
  expectInvalid(j, "'bias' given but the epilogue adds no bias");
  j = validManifest();
  j["steps"][2]["m"] = 1; // a, b, d fit; bias has 10 elements
  j["steps"][2]["n"] = 20;
  j["steps"][2]["k"] = 50;
  expectInvalid(j, "'bias' needs 20 elements");
}

/// A bf16 gemm whose D is f32 ("d_dtype", a folded output Cast).
Json halfGemmF32D() {
  return Json::parse(R"({
    "format": "fusec-artifact", "version": 1, "model": "t", "target": "cuda",
    "arch": "sm_90", "library": "libmodel.so",
    "weights": {"file": "weights.bin", "bytes": 112},
    "arena_bytes": 0,
    "buffers": [
      {"id": 0, "name": "a", "dtype": "bf16", "shape": [4, 8], "bytes": 64,
       "storage": "weight", "offset": 0},
      {"id": 1, "name": "b", "dtype": "bf16", "shape": [8, 3], "bytes": 48,
       "storage": "weight", "offset": 64},
      {"id": 2, "name": "d", "dtype": "f32", "shape": [4, 3], "bytes": 48,
       "storage": "output", "index": 0},
      {"id": 3, "name": "bias", "dtype": "bf16", "shape": [3], "bytes": 6,
       "storage": "weight", "offset": 0}
    ],
    "inputs": [],
    "outputs": [{"name": "d", "dtype": "f32", "shape": [4, 3], "buffer": 2}],
    "steps": [
      {"kind": "gemm", "name": "head", "a": 0, "b": 1, "d": 2, "m": 4, "n": 3,
       "k": 8, "trans_b": false, "dtype": "bf16", "d_dtype": "f32"}
    ]
  })");
}

TEST(ManifestTest, GemmDDtype) {
  Manifest m;
  Status s = parse(halfGemmF32D(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.steps[0].gemm.dtype, FUSERT_BF16);
  EXPECT_EQ(m.steps[0].gemm.dDtype, FUSERT_F32);
  // Without d_dtype, D is the gemm's dtype.
  Json j = validManifest();
  ASSERT_TRUE(parse(j, m).ok());
  EXPECT_EQ(m.steps[2].gemm.dDtype, FUSERT_F32);
  j = halfGemmF32D();
  j["steps"][0].erase("d_dtype");
  expectInvalid(j, "'d' buffer 2 has dtype f32, expected bf16");
  j = halfGemmF32D();
  j["steps"][0]["d_dtype"] = "f8";
  expectInvalid(j, "steps[0] 'head': unknown dtype 'f8'");
  j = halfGemmF32D();
  j["steps"][0]["d_dtype"] = 32;
  expectInvalid(j, "d_dtype");
  j = halfGemmF32D();
  j["steps"][0]["d_dtype"] = "f16";
  expectInvalid(j, "d_dtype f16 with dtype bf16 unsupported");
  j = halfGemmF32D();
  j["steps"][0]["dtype"] = "f32";  // checked before the operands' dtypes
  j["steps"][0]["d_dtype"] = "bf16";
  expectInvalid(j, "d_dtype bf16 with dtype f32 unsupported");
  j = halfGemmF32D();
  j["steps"][0]["epilogue"] = "bias";
  j["steps"][0]["bias"] = 3;
  expectInvalid(j, "a bias epilogue with d_dtype f32");
}

/// validManifest() plus a bool[1] arena buffer 6 ("c") for guards.
Json guardedManifest() {
  Json j = validManifest();
  j["arena_bytes"] = 4864;
  j["buffers"].push_back({{"id", 6}, {"name", "c"}, {"dtype", "bool"}, {"shape", {1}},
                          {"bytes", 1}, {"storage", "arena"}, {"offset", 4608}});
  return j;
}

TEST(ManifestTest, ParsesGuards) {
  Json j = guardedManifest();
  j["steps"][1]["guard"] = Json::parse(R"([{"buffer": 6, "when": false}, {"buffer": 6, "when": true}])");
  Manifest m;
  Status s = parse(j, m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(m.steps[0].guard.empty());
  ASSERT_EQ(m.steps[1].guard.size(), 2u);
  EXPECT_EQ(m.steps[1].guard[0].buffer, 6);
  EXPECT_FALSE(m.steps[1].guard[0].when);
  EXPECT_TRUE(m.steps[1].guard[1].when);
  j["steps"][1]["guard"] = Json::array();  // [] = always
  ASSERT_TRUE(parse(j, m).ok());
  EXPECT_TRUE(m.steps[1].guard.empty());
}

TEST(ManifestTest, RejectsBadGuards) {
  auto with = [](const char *guard) {
    Json j = guardedManifest();
    j["steps"][2]["guard"] = Json::parse(guard);
    return j;
  };
  expectInvalid(with(R"([{"buffer": 42, "when": true}])"),
                "steps[2] 'mm': guard[0] names unknown buffer 42");
  expectInvalid(with(R"([{"buffer": 3, "when": true}])"),
                "guard[0] names buffer 3 't' of f32 [4, 250]; a guard is a bool of one element");
  expectInvalid(with(R"([{"buffer": 6, "when": true}, {"buffer": 0, "when": true}])"),
                "guard[1] names buffer 0 'x' of f32");
  expectInvalid(with(R"([{"buffer": 6}])"), "guard[0]: missing field 'when'");
  expectInvalid(with(R"([{"buffer": 6, "when": 1}])"), "'when'");
  expectInvalid(with(R"([{"when": true}])"), "'buffer'");
  expectInvalid(with(R"([{"buffer": "c", "when": true}])"), "'buffer'");
  expectInvalid(with(R"([6])"), "guard[0] must be an object");
  expectInvalid(with(R"({"buffer": 6, "when": true})"), "'guard'");
  expectInvalid(with(R"("c")"), "'guard'");
  // A bool buffer of two elements is not a condition either.
  Json j = with(R"([{"buffer": 6, "when": true}])");
  j["buffers"][6]["shape"] = {2};
  j["buffers"][6]["bytes"] = 2;
  expectInvalid(j, "a guard is a bool of one element");
}

TEST(ManifestTest, RejectsCopyOutOfRange) {
  Json j = validManifest();
  j["steps"][3]["bytes"] = 4004;
  expectInvalid(j, "copies 4004 bytes");
}

TEST(ManifestTest, ChecksConvShapes) {
  Json j = validManifest();
  // x as [1,4,10,25] (1000 elements), w = pad [1,4,...] won't fit: use t.
  j["steps"][2] = Json::parse(R"({"kind": "conv", "name": "cv", "x": 0,
      "w": 2, "y": 3, "x_shape": [1, 10, 10, 10], "w_shape": [10, 10, 1, 1],
      "y_shape": [1, 10, 10, 10], "pads": [0, 0, 0, 0], "strides": [1, 1],
      "dilations": [1, 1], "group": 1, "dtype": "f32"})");
  Manifest m;
  Status s = parse(j, m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m.steps[2].kind, StepKind::kConv);
  j["steps"][2]["y_shape"] = {1, 10, 9, 10};
  expectInvalid(j, "spatial dim 0 should be 10");
  j["steps"][2]["y_shape"] = {1, 10, 10, 10};
  j["steps"][2]["pads"] = {0, 0};
  expectInvalid(j, "need 4 pads");
  j["steps"][2]["pads"] = {0, 0, 0, 0};
  j["steps"][2]["group"] = 3;
  expectInvalid(j, "inconsistent channels/group");
}

// --- Dynamic shapes in a cuda artifact: symbolic gemm and conv fields. ---

/// A dynamic cuda manifest: h = x * w as a gemm batched over "batch" (m =
/// seq, strides in symbols), a kernel y = act(h), and a 1-D conv z = conv(c)
/// whose x_shape and y_shape follow the binding.
Json dynamicCudaManifest() {
  return Json::parse(R"({
    "format": "fusec-artifact", "version": 1, "model": "d", "target": "cuda",
    "arch": "sm_90", "library": "libmodel.so",
    "weights": {"file": "weights.bin", "bytes": 2112},
    "arena_bytes": 256,
    "symbols": [{"name": "batch", "min": 1, "max": 8},
                {"name": "seq", "min": 1, "max": 64, "opt": 16}],
    "buffers": [
      {"id": 0, "name": "x", "dtype": "f32", "shape": ["batch", "seq", 16],
       "bytes": "64*batch*seq", "storage": "input", "index": 0},
      {"id": 1, "name": "w", "dtype": "f32", "shape": [16, 32], "bytes": 2048,
       "storage": "weight", "offset": 0},
      {"id": 2, "name": "h", "dtype": "f32", "shape": ["batch", "seq", 32],
       "bytes": "128*batch*seq", "storage": "arena", "offset": 0, "live": [0, 1]},
      {"id": 3, "name": "y", "dtype": "f32", "shape": ["batch", "seq", 32],
       "bytes": "128*batch*seq", "storage": "output", "index": 0},
      {"id": 4, "name": "c", "dtype": "f32", "shape": ["batch", 4, "seq"],
       "bytes": "16*batch*seq", "storage": "input", "index": 1},
      {"id": 5, "name": "cw", "dtype": "f32", "shape": [4, 4, 1], "bytes": 64,
       "storage": "weight", "offset": 2048},
      {"id": 6, "name": "z", "dtype": "f32", "shape": ["batch", 4, "seq"],
       "bytes": "16*batch*seq", "storage": "output", "index": 1}
    ],
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", "seq", 16], "buffer": 0},
               {"name": "c", "dtype": "f32", "shape": ["batch", 4, "seq"], "buffer": 4}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": ["batch", "seq", 32], "buffer": 3},
                {"name": "z", "dtype": "f32", "shape": ["batch", 4, "seq"], "buffer": 6}],
    "steps": [
      {"kind": "gemm", "name": "mm", "a": 0, "b": 1, "d": 2, "m": "seq", "n": 32,
       "k": 16, "batch": "batch", "stride_a": "16*seq", "stride_b": 0,
       "stride_d": "32*seq", "dtype": "f32"},
      {"kind": "kernel", "name": "act", "symbol": "fusert_test_act", "buffers": [2, 3]},
      {"kind": "conv", "name": "cv", "x": 4, "w": 5, "y": 6,
       "x_shape": ["batch", 4, "seq"], "w_shape": [4, 4, 1],
       "y_shape": ["batch", 4, "seq"], "pads": [0, 0], "strides": [1],
       "dilations": [1], "group": 1, "dtype": "f32"}
    ],
    "kernels": ["act"]
  })");
}

TEST(ManifestTest, ParsesDynamicCudaManifest) {
  Manifest m;
  Status s = parse(dynamicCudaManifest(), m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(m.dynamic());
  // Loaded evaluated at every symbol's minimum (batch = seq = 1).
  const GemmDesc &g = m.steps[0].gemm;
  EXPECT_EQ(g.m, 1);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.strideA, 16);
  EXPECT_EQ(g.strideB, 0);
  EXPECT_EQ(g.strideC, 0); // absent: 0, as in a static manifest
  EXPECT_EQ(g.strideD, 32);
  EXPECT_FALSE(g.extents.m.isStatic());
  EXPECT_TRUE(g.extents.n.isStatic());
  EXPECT_EQ(m.steps[2].conv.xShape, (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(m.steps[2].conv.yShape, (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(m.steps[2].conv.wShape, (std::vector<int64_t>{4, 4, 1}));
}

TEST(ManifestTest, ApplyBindingEvaluatesGemmAndConv) {
  Manifest m;
  ASSERT_TRUE(parse(dynamicCudaManifest(), m).ok());
  Status s = applyBinding(m, {3, 5}); // batch = 3, seq = 5
  ASSERT_TRUE(s.ok()) << s.message();
  const GemmDesc &g = m.steps[0].gemm;
  EXPECT_EQ(g.m, 5);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.batch, 3);
  EXPECT_EQ(g.strideA, 80);
  EXPECT_EQ(g.strideB, 0);
  EXPECT_EQ(g.strideD, 160);
  EXPECT_EQ(m.steps[2].conv.xShape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(m.steps[2].conv.yShape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(m.buffers[2].bytes, 1920u);
  EXPECT_EQ(m.arenaBytes, 2048u); // 256-byte aligned
  // And back: every binding is evaluated from the fields as written.
  ASSERT_TRUE(applyBinding(m, {1, 64}).ok());
  EXPECT_EQ(m.steps[0].gemm.m, 64);
  EXPECT_EQ(m.steps[0].gemm.batch, 1);
  EXPECT_EQ(m.steps[2].conv.xShape, (std::vector<int64_t>{1, 4, 64}));
}

TEST(ManifestTest, ApplyBindingChecksGemmAndConvPerBinding) {
  // stride_a 32*seq fits A at batch = 1 (what parseManifest checks) but
  // not at batch = 3: A would be read past its end.
  Json j = dynamicCudaManifest();
  j["steps"][0]["stride_a"] = "32*seq";
  Manifest m;
  Status s = parse(j, m);
  ASSERT_TRUE(s.ok()) << s.message();
  s = applyBinding(m, {3, 5});
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("steps[0] 'mm': 'a' needs 400 elements but buffer 0 has 240"));
  // A conv whose y_shape stops matching x_shape at a larger binding.
  j = dynamicCudaManifest();
  j["steps"][2]["y_shape"] = {"batch", 4, 1};
  j["buffers"][6]["shape"] = {"batch", 4, 1};
  j["buffers"][6]["bytes"] = "16*batch";
  j["outputs"][1]["shape"] = {"batch", 4, 1};
  ASSERT_TRUE(parse(j, m).ok());
  s = applyBinding(m, {2, 7});
  EXPECT_THAT(s.message(), HasSubstr("steps[2] 'cv': y_shape [2, 4, 1] does not match"));
}

TEST(ManifestTest, RejectsBadDynamicGemmAndConvFields) {
  Json j = dynamicCudaManifest();
  j["steps"][0]["m"] = "seq*foo";
  expectInvalid(j, "steps[0] 'mm': m 'seq*foo' names 'foo', which is not one of the manifest's symbols");
  j = dynamicCudaManifest();
  j["steps"][0]["stride_d"] = "32*seq+1";
  expectInvalid(j, "names 'seq+1'");
  j = dynamicCudaManifest();
  j["steps"][0]["batch"] = -2;
  expectInvalid(j, "steps[0] 'mm': negative batch -2");
  j = dynamicCudaManifest();
  j["steps"][0]["k"] = 1.5;
  expectInvalid(j, "k must be an integer or a product of symbols");
  j = dynamicCudaManifest();
  j["steps"][2]["w_shape"] = {"batch", 4, 1};
  expectInvalid(j, "steps[2] 'cv': 'w_shape' names symbols; only a conv's x_shape and y_shape may");
  j = dynamicCudaManifest();
  j["steps"][2]["pads"] = {0, "seq"};
  expectInvalid(j, "'pads' names symbols");
  j = dynamicCudaManifest();
  j["steps"][2]["group"] = "batch";
  expectInvalid(j, "'group' names symbols");
  j = dynamicCudaManifest();
  j["steps"][2]["x_shape"] = {"batch", 4, "len"};
  expectInvalid(j, "x_shape 'len' names 'len'");
  // Symbolic fields need "symbols": a static manifest keeps integers.
  j = validManifest();
  j["steps"][2]["m"] = "m";
  expectInvalid(j, "field 'm' must be an integer");
  // Dynamic shapes run on cpu and cuda artifacts only.
  j = dynamicCudaManifest();
  j["target"] = "nki";
  expectInvalid(j, "'symbols' (dynamic shapes) in a nki artifact");
}

// --- bindTensors: the checks fusert_run makes on caller tensors. ---

class BindTest : public ::testing::Test {
protected:
  void SetUp() override {
    Status s = parse(validManifest(), m_);
    ASSERT_TRUE(s.ok()) << s.message();
    in_ = {"x", FUSERT_F32, 2, xShape_, &xData_};
    out_ = {"y", FUSERT_F32, 1, yShape_, &yData_};
  }
  Status bind() {
    return bindTensors(m_, &in_, 1, &out_, 1, inPtrs_, outPtrs_);
  }

  Manifest m_;
  int64_t xShape_[2] = {4, 250};
  int64_t yShape_[1] = {1000};
  float xData_ = 0, yData_ = 0; // never dereferenced
  fusert_tensor in_{}, out_{};
  std::vector<void *> inPtrs_, outPtrs_;
};

TEST_F(BindTest, BindsByName) {
  Status s = bind();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(inPtrs_[0], &xData_);
  EXPECT_EQ(outPtrs_[0], &yData_);
}

TEST_F(BindTest, WrongName) {
  in_.name = "input_ids";
  Status s = bind();
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("unknown input 'input_ids'"));
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  in_.name = nullptr;
  EXPECT_THAT(bind().message(), HasSubstr("NULL name"));
}

TEST_F(BindTest, WrongDType) {
  out_.dtype = FUSERT_F16;
  Status s = bind();
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("output 'y': dtype f16, expected f32"));
}

TEST_F(BindTest, WrongShape) {
  in_.rank = 1;
  EXPECT_THAT(bind().message(), HasSubstr("input 'x': rank 1, expected 2"));
  in_.rank = 2;
  xShape_[1] = 251;
  EXPECT_THAT(bind().message(),
              HasSubstr("input 'x': shape [4, 251], expected [4, 250]"));
  xShape_[1] = 250;
  in_.shape = nullptr;
  EXPECT_THAT(bind().message(), HasSubstr("NULL shape"));
}

TEST_F(BindTest, NullData) {
  out_.data = nullptr;
  Status s = bind();
  EXPECT_EQ(s.code(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(s.message(), HasSubstr("output 'y': NULL data pointer"));
}

TEST_F(BindTest, WrongCounts) {
  EXPECT_THAT(bindTensors(m_, &in_, 0, &out_, 1, inPtrs_, outPtrs_).message(),
              HasSubstr("expected 1 inputs, got 0"));
  fusert_tensor twice[2] = {out_, out_};
  EXPECT_THAT(bindTensors(m_, &in_, 1, twice, 2, inPtrs_, outPtrs_).message(),
              HasSubstr("expected 1 outputs, got 2"));
  EXPECT_THAT(bindTensors(m_, nullptr, 1, &out_, 1, inPtrs_, outPtrs_).message(),
              HasSubstr("input array is NULL"));
}

TEST_F(BindTest, RepeatedName) {
  // A model with two inputs given the same one twice.
  Json j = validManifest();
  j["buffers"].push_back({{"id", 6}, {"name", "x2"}, {"dtype", "f32"},
                          {"shape", {1}}, {"bytes", 4}, {"storage", "input"},
                          {"index", 1}});
  j["inputs"].push_back(
      {{"name", "x2"}, {"dtype", "f32"}, {"shape", {1}}, {"buffer", 6}});
  Manifest m;
  ASSERT_TRUE(parse(j, m).ok());
  fusert_tensor ins[2] = {in_, in_};
  Status s = bindTensors(m, ins, 2, &out_, 1, inPtrs_, outPtrs_);
  EXPECT_THAT(s.message(), HasSubstr("input 'x' given twice"));
}

} // namespace
} // namespace fusec::rt
