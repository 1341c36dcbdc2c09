//===- RuntimeTest.cpp - libfusert's C API on hand-written artifacts -===//
//
// Each test writes an artifact folder (manifest.json, weights.bin and a copy
// of the nvcc-built test kernel library) and loads it through the C API.
// Load-error tests need no GPU: fusert_load checks manifest, library, symbols
// and weights file before touching the device. Execution tests GTEST_SKIP
// with "SKIPPED: no CUDA device" when there is none.
//
//===----------------------------------------------------------------------===//
#include "fusert/fusert.h"
#include "fusert/fusert.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/unit/runtime/ArtifactFixture.h"

extern "C" int fusertCHeaderCheck(void); // CHeaderCheck.c

namespace {

using namespace fusert_test;  // NOLINT: the shared artifact fixture
using ::testing::HasSubstr;

// --- Load errors: no GPU needed. ---

TEST_F(RuntimeTest, NullArguments) {
  EXPECT_EQ(fusert_load(nullptr, &model_), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("artifact_dir is NULL"));
  EXPECT_EQ(fusert_load(dir_.c_str(), nullptr), FUSERT_INVALID_ARGUMENT);
  EXPECT_EQ(fusert_run(nullptr, nullptr, 0, nullptr, 0, nullptr),
            FUSERT_INVALID_ARGUMENT);
  EXPECT_EQ(fusert_enable_cuda_graph(nullptr, 1), FUSERT_INVALID_ARGUMENT);
  EXPECT_EQ(fusert_fill_arena(nullptr, 0xFF, nullptr), FUSERT_INVALID_ARGUMENT);
  EXPECT_EQ(fusert_input_info(nullptr, 0, nullptr, nullptr, nullptr, nullptr),
            FUSERT_INVALID_ARGUMENT);
  EXPECT_EQ(fusert_num_inputs(nullptr), 0u);
  fusert_unload(nullptr);
  EXPECT_STREQ(fusert_status_name(FUSERT_CUDNN_ERROR), "FUSERT_CUDNN_ERROR");
}

TEST(RuntimeCApiTest, UsableFromC) { EXPECT_EQ(fusertCHeaderCheck(), 0); }

TEST_F(RuntimeTest, MissingManifest) {
  EXPECT_EQ(load(), FUSERT_NOT_FOUND);
  EXPECT_THAT(fusert_last_error(), HasSubstr("manifest.json"));
  EXPECT_EQ(model_, nullptr);
}

TEST_F(RuntimeTest, MalformedManifest) {
  Pipeline p;
  write(p.manifest, p.weights);
  std::ofstream(dir_ / "manifest.json") << "{\"format\": \"fusec-artifact\",";
  EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("not valid JSON"));

  p.manifest["steps"][0]["kind"] = "fused_attention";
  write(p.manifest, p.weights);
  EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("unknown step kind"));
}

TEST_F(RuntimeTest, MissingLibrary) {
  Pipeline p;
  write(p.manifest, p.weights, /*withLibrary=*/false);
  EXPECT_EQ(load(), FUSERT_NOT_FOUND);
  EXPECT_THAT(fusert_last_error(), HasSubstr("libmodel.so not found"));
}

TEST_F(RuntimeTest, MissingSymbol) {
  Pipeline p;
  p.manifest["steps"][1]["symbol"] = "fusec_k42";
  write(p.manifest, p.weights);
  EXPECT_EQ(load(), FUSERT_NOT_FOUND);
  EXPECT_THAT(fusert_last_error(),
              HasSubstr("step 1 'scale': symbol 'fusec_k42' not found"));
}

TEST_F(RuntimeTest, WeightsTooShort) {
  Pipeline p;
  std::vector<char> shortWeights(p.weights.begin(), p.weights.end() - 4);
  write(p.manifest, shortWeights);
  EXPECT_EQ(load(), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(),
              HasSubstr("has 4252 bytes, the manifest says 4256"));
}

TEST_F(RuntimeTest, MissingWeights) {
  Pipeline p;
  write(p.manifest, p.weights);
  fs::remove(dir_ / "weights.bin");
  EXPECT_EQ(load(), FUSERT_NOT_FOUND);
  EXPECT_THAT(fusert_last_error(), HasSubstr("weights.bin not found"));
}

TEST_F(RuntimeTest, NoDeviceIsAnError) {
  if (hasCudaDevice())
    GTEST_SKIP() << "has a CUDA device; this test covers the no-device path";
  Pipeline p;
  write(p.manifest, p.weights);
  EXPECT_EQ(load(), FUSERT_CUDA_ERROR);
  EXPECT_THAT(fusert_last_error(), HasSubstr("no CUDA device"));
}

// --- Execution: needs a GPU. ---

TEST_F(RuntimeTest, PipelineThroughArenaAndAlias) {
  REQUIRE_CUDA_DEVICE();
  Pipeline p;
  write(p.manifest, p.weights);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  ASSERT_EQ(fusert_num_inputs(model_), 1u);
  const char *name = nullptr;
  fusert_dtype dtype;
  int rank = 0;
  const int64_t *shape = nullptr;
  ASSERT_EQ(fusert_input_info(model_, 0, &name, &dtype, &rank, &shape),
            FUSERT_OK);
  EXPECT_STREQ(name, "x");
  EXPECT_EQ(dtype, FUSERT_F32);
  ASSERT_EQ(rank, 2);
  EXPECT_EQ(shape[1], 250);

  std::vector<float> x = iota(kN, 0.5f, -2.0f);
  DeviceFloats dx(x), dy(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN};
  fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
  fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> want(kN);
  for (int i = 0; i < kN; ++i)
    want[i] = 2.0f * (x[i] + p.w[i]);
  expectNear(dy.get(), want, 0.0f);
}

TEST_F(RuntimeTest, RunRejectsBadInputs) {
  REQUIRE_CUDA_DEVICE();
  Pipeline p;
  write(p.manifest, p.weights);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  DeviceFloats dx(kN), dy(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN};
  fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
  fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
  in.name = "input";
  EXPECT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr),
            FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("unknown input 'input'"));
  in.name = "x";
  in.dtype = FUSERT_I64;
  EXPECT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr),
            FUSERT_INVALID_ARGUMENT);
  in.dtype = FUSERT_F32;
  out.data = nullptr;
  EXPECT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr),
            FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("NULL data pointer"));
}

TEST_F(RuntimeTest, CopyStepsThroughArenaAndAliasOffset) {
  REQUIRE_CUDA_DEVICE();
  // y[500] = second half of x, via an arena copy and an alias 2000 bytes in.
  Json m = skeleton(0, kN * 4);
  m.erase("weights");
  m.erase("library");
  m["buffers"] = {buffer(0, "x", {kN}, "input", 0),
                  buffer(1, "t", {kN}, "arena", 0),
                  buffer(2, "t_hi", {kN / 2}, "alias", 2000, 1),
                  buffer(3, "y", {kN / 2}, "output", 0)};
  m["inputs"] = {tensor("x", {kN}, 0)};
  m["outputs"] = {tensor("y", {kN / 2}, 3)};
  m["steps"] = {{{"kind", "copy"}, {"name", "in"}, {"src", 0}, {"dst", 1},
                 {"bytes", kN * 4}},
                {{"kind", "copy"}, {"name", "out"}, {"src", 2}, {"dst", 3},
                 {"bytes", kN * 2}}};
  write(m, {}, /*withLibrary=*/false);
  fs::remove(dir_ / "weights.bin");
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  fusert::Model wrapped; // also exercise the C++ wrapper
  ASSERT_TRUE(wrapped.load(dir_.string()).ok());
  std::vector<fusert::TensorInfo> ins = wrapped.inputs(), outs = wrapped.outputs();
  ASSERT_EQ(ins.size(), 1u);
  EXPECT_EQ(ins[0].bytes(), size_t{kN * 4});
  std::vector<float> x = iota(kN, 1.0f, 0.5f);
  DeviceFloats dx(x), dy(kN / 2);
  std::vector<fusert_tensor> in = {ins[0].bind(dx.ptr())};
  std::vector<fusert_tensor> out = {outs[0].bind(dy.ptr())};
  fusert::Status s = wrapped.run(in, out);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectNear(dy.get(), std::vector<float>(x.begin() + kN / 2, x.end()), 0.0f);
}

/// Row-major reference: D = epi(alpha * op(A) op(B) + beta * C + bias).
std::vector<float> referenceGemm(const std::vector<float> &a,
                                 const std::vector<float> &b,
                                 const std::vector<float> *c,
                                 const std::vector<float> *bias, int batch,
                                 int m, int n, int k, int64_t sa, int64_t sb,
                                 int64_t sc, bool ta, bool tb, float alpha,
                                 float beta, bool relu) {
  std::vector<float> d(static_cast<size_t>(batch) * m * n);
  for (int p = 0; p < batch; ++p)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int l = 0; l < k; ++l) {
          float av = a[p * sa + (ta ? l * m + i : i * k + l)];
          float bv = b[p * sb + (tb ? j * k + l : l * n + j)];
          acc += static_cast<double>(av) * bv;
        }
        double v = alpha * acc;
        if (c)
          v += beta * (*c)[p * sc + i * n + j];
        if (bias)
          v += (*bias)[j];
        if (relu && v < 0)
          v = 0;
        d[(static_cast<size_t>(p) * m + i) * n + j] = static_cast<float>(v);
      }
  return d;
}

TEST_F(RuntimeTest, GemmBatchedTransBBias) {
  REQUIRE_CUDA_DEVICE();
  const int batch = 3, m = 5, n = 6, k = 7;
  std::vector<float> a = iota(batch * m * k, 0.125f, 0.0f);
  std::vector<float> b = iota(batch * n * k, -0.25f, 0.5f); // [batch, n, k]
  std::vector<float> bias = iota(n, 1.0f, 0.0f);
  std::vector<char> weights;
  put(weights, 0, b);
  put(weights, 1024, bias);
  Json man = skeleton(weights.size(), 0);
  man.erase("library");
  man["buffers"] = {buffer(0, "a", {batch, m, k}, "input", 0),
                    buffer(1, "b", {batch, n, k}, "weight", 0),
                    buffer(2, "bias", {n}, "weight", 1024),
                    buffer(3, "d", {batch, m, n}, "output", 0)};
  man["inputs"] = {tensor("a", {batch, m, k}, 0)};
  man["outputs"] = {tensor("d", {batch, m, n}, 3)};
  man["steps"] = {{{"kind", "gemm"},   {"name", "mm"},      {"a", 0},
                   {"b", 1},           {"d", 3},            {"bias", 2},
                   {"m", m},           {"n", n},            {"k", k},
                   {"batch", batch},   {"stride_a", m * k}, {"stride_b", n * k},
                   {"stride_d", m * n}, {"trans_a", false}, {"trans_b", true},
                   {"alpha", 1.5},     {"beta", 0.0},       {"epilogue", "bias"},
                   {"dtype", "f32"},   {"compute", "f32"}}};
  write(man, weights, /*withLibrary=*/false);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  DeviceFloats da(a), dd(batch * m * n);
  int64_t aShape[] = {batch, m, k}, dShape[] = {batch, m, n};
  fusert_tensor in{"a", FUSERT_F32, 3, aShape, da.ptr()};
  fusert_tensor out{"d", FUSERT_F32, 3, dShape, dd.ptr()};
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectNear(dd.get(),
             referenceGemm(a, b, nullptr, &bias, batch, m, n, k, m * k, n * k,
                           0, false, true, 1.5f, 0.0f, false),
             1e-5f);
}

// Dynamic shapes (ARTIFACT.md "Dynamic shapes"): h = x * w as a gemm
// batched over "batch" with m = seq and symbolic strides, then a kernel that
// reads the bound symbols, y = 2 * h. Runs through a CUDA graph at bindings
// that alternate (cached plans and graphs), grow the arena (graphs dropped)
// and go back to a smaller one.
TEST_F(RuntimeTest, DynamicGemmAndKernelAcrossBindings) {
  const int n = 32, k = 16;
  std::vector<float> w = iota(k * n, 0.125f, -1.0f);
  std::vector<char> weights;
  put(weights, 0, w);
  Json man = skeleton(weights.size(), 256);
  man["symbols"] = {{{"name", "batch"}, {"min", 1}, {"max", 8}},
                    {{"name", "seq"}, {"min", 1}, {"max", 64}}};
  auto dynBuffer = [](int id, const char *name, int64_t last, const char *bytes,
                      const char *storage, int64_t indexOrOffset) {
    Json b = {{"id", id},           {"name", name},
              {"dtype", "f32"},     {"shape", {"batch", "seq", last}},
              {"bytes", bytes},     {"storage", storage}};
    b[std::string(storage) == "arena" ? "offset" : "index"] = indexOrOffset;
    return b;
  };
  Json h = dynBuffer(2, "h", n, "128*batch*seq", "arena", 0);
  h["live"] = {0, 1};
  man["buffers"] = {dynBuffer(0, "x", k, "64*batch*seq", "input", 0),
                    buffer(1, "w", {k, n}, "weight", 0), h,
                    dynBuffer(3, "y", n, "128*batch*seq", "output", 0)};
  man["inputs"] = {{{"name", "x"}, {"dtype", "f32"}, {"shape", {"batch", "seq", k}}, {"buffer", 0}}};
  man["outputs"] = {{{"name", "y"}, {"dtype", "f32"}, {"shape", {"batch", "seq", n}}, {"buffer", 3}}};
  man["steps"] = {{{"kind", "gemm"}, {"name", "mm"}, {"a", 0}, {"b", 1}, {"d", 2},
                   {"m", "seq"}, {"n", n}, {"k", k}, {"batch", "batch"},
                   {"stride_a", "16*seq"}, {"stride_b", 0}, {"stride_d", "32*seq"},
                   {"dtype", "f32"}},
                  {{"kind", "kernel"}, {"name", "scale"}, {"symbol", "fusert_test_dyn_scale"},
                   {"buffers", {2, 3}}}};
  write(man, weights);
  if (!hasCudaDevice()) {
    // The manifest and the library pass every check made before the device.
    EXPECT_EQ(load(), FUSERT_CUDA_ERROR);
    EXPECT_THAT(fusert_last_error(), HasSubstr("no CUDA device"));
    GTEST_SKIP() << "SKIPPED: no CUDA device";
  }
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_cuda_graph(model_, 1), FUSERT_OK);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  auto runAt = [&](int batch, int seq) {
    SCOPED_TRACE(testing::Message() << "batch=" << batch << " seq=" << seq);
    std::vector<float> x = iota(static_cast<size_t>(batch) * seq * k, 0.0625f, 0.5f * batch - seq);
    DeviceFloats dx(x), dy(static_cast<size_t>(batch) * seq * n);
    int64_t xShape[] = {batch, seq, k}, yShape[] = {batch, seq, n};
    fusert_tensor in{"x", FUSERT_F32, 3, xShape, dx.ptr()};
    ASSERT_EQ(fusert_bind_shapes(model_, &in, 1), FUSERT_OK) << fusert_last_error();
    const int64_t *shape = nullptr;
    ASSERT_EQ(fusert_output_info(model_, 0, nullptr, nullptr, nullptr, &shape), FUSERT_OK);
    EXPECT_EQ(shape[0], batch);
    EXPECT_EQ(shape[1], seq);
    fusert_tensor out{"y", FUSERT_F32, 3, yShape, dy.ptr()};
    // Twice: a capture, then a replay (same pointers).
    for (int rep = 0; rep < 2; ++rep) {
      ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK) << fusert_last_error();
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      std::vector<float> want = referenceGemm(x, w, nullptr, nullptr, batch, seq, n, k, seq * k,
                                              0, 0, false, false, 2.0f, 0.0f, false);
      expectNear(dy.get(), want, 1e-5f);
    }
  };
  runAt(1, 4);
  runAt(3, 17);
  runAt(1, 4);  // cached plans and graph of an earlier binding
  runAt(8, 64); // grows the arena: every graph re-captured
  runAt(3, 17);
  runAt(2, 1);
  // Outside the compiled range: refused, naming the symbol.
  std::vector<float> x(9 * 16, 0.0f);
  DeviceFloats dx(x);
  int64_t xShape[] = {9, 1, k};
  fusert_tensor in{"x", FUSERT_F32, 3, xShape, dx.ptr()};
  EXPECT_EQ(fusert_bind_shapes(model_, &in, 1), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("('batch') is 9, outside the range 1..8"));
  runAt(3, 17);
  cudaStreamDestroy(stream);
}

TEST_F(RuntimeTest, GemmTransABroadcastBWithCAndReluBias) {
  REQUIRE_CUDA_DEVICE();
  const int batch = 2, m = 3, n = 5, k = 4;
  std::vector<float> a = iota(batch * k * m, 0.5f, 0.25f); // [batch, k, m]
  std::vector<float> b = iota(k * n, 0.75f, -0.5f);         // [k, n], shared
  std::vector<float> c = iota(batch * m * n, -1.0f, 0.0f);
  std::vector<float> bias = iota(n, 0.5f, -1.0f);
  std::vector<char> weights;
  put(weights, 0, b);
  put(weights, 256, bias);
  Json man = skeleton(weights.size(), 0);
  man.erase("library");
  man["buffers"] = {buffer(0, "a", {batch, k, m}, "input", 0),
                    buffer(1, "c", {batch, m, n}, "input", 1),
                    buffer(2, "b", {k, n}, "weight", 0),
                    buffer(3, "bias", {n}, "weight", 256),
                    buffer(4, "d", {batch, m, n}, "output", 0)};
  man["inputs"] = {tensor("a", {batch, k, m}, 0), tensor("c", {batch, m, n}, 1)};
  man["outputs"] = {tensor("d", {batch, m, n}, 4)};
  man["steps"] = {{{"kind", "gemm"},     {"name", "mm"},       {"a", 0},
                   {"b", 2},             {"c", 1},             {"d", 4},
                   {"bias", 3},          {"m", m},             {"n", n},
                   {"k", k},             {"batch", batch},     {"stride_a", k * m},
                   {"stride_b", 0},      {"stride_c", m * n},  {"stride_d", m * n},
                   {"trans_a", true},    {"trans_b", false},   {"alpha", 0.5},
                   {"beta", 2.0},        {"epilogue", "relu_bias"},
                   {"dtype", "f32"}}};
  write(man, weights, /*withLibrary=*/false);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  DeviceFloats da(a), dc(c), dd(batch * m * n);
  int64_t aShape[] = {batch, k, m}, cShape[] = {batch, m, n};
  fusert_tensor ins[2] = {{"c", FUSERT_F32, 3, cShape, dc.ptr()},
                          {"a", FUSERT_F32, 3, aShape, da.ptr()}}; // any order
  fusert_tensor out{"d", FUSERT_F32, 3, cShape, dd.ptr()};
  ASSERT_EQ(fusert_run(model_, ins, 2, &out, 1, nullptr), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectNear(dd.get(),
             referenceGemm(a, b, &c, &bias, batch, m, n, k, k * m, 0, m * n,
                           true, false, 0.5f, 2.0f, true),
             1e-5f);
}

// --- f16/bf16 GEMMs with f32 or half D and odd n (GemmTiling.h). ---

/// The f16/bf16 bits of \p v (round to nearest even).
uint16_t halfBits(float v, fusert_dtype t) {
  if (t == FUSERT_BF16) {
    const __nv_bfloat16_raw r = __float2bfloat16(v);
    return r.x;
  }
  const __half_raw r = __float2half(v);
  return r.x;
}

float halfValue(uint16_t bits, fusert_dtype t) {
  if (t == FUSERT_BF16) {
    __nv_bfloat16_raw r;
    r.x = bits;
    return __bfloat162float(__nv_bfloat16(r));
  }
  __half_raw r;
  r.x = bits;
  return __half2float(__half(r));
}

Json typedBuffer(int id, const std::string &name, std::vector<int64_t> shape,
                 fusert_dtype t, const std::string &storage, int64_t indexOrOffset) {
  Json b = buffer(id, name, shape, storage, indexOrOffset);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  b["dtype"] = fusert_dtype_name(t);
  b["bytes"] = n * static_cast<int64_t>(fusert_dtype_size(t));
  return b;
}

struct HalfGemmCase {
  fusert_dtype dtype;   ///< of A and B
  bool f32D;            ///< "d_dtype": "f32" (a folded output Cast)
  int64_t m, n, k;
  bool transB;
  bool weightB;         ///< B a weight (the runtime may copy it) or an input
};

std::string halfGemmName(const ::testing::TestParamInfo<HalfGemmCase> &info) {
  const HalfGemmCase &c = info.param;
  return std::string(fusert_dtype_name(c.dtype)) + (c.f32D ? "_f32d" : "_halfd") + "_m" +
         std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) +
         (c.transB ? "_tb" : "") + (c.weightB ? "_wb" : "_ib");
}

class RuntimeHalfGemmTest : public RuntimeTest,
                            public ::testing::WithParamInterface<HalfGemmCase> {};

/// D = A B (or A B^T) with A, B in f16/bf16 and D in f32 or the same half
/// type: every element of a poisoned D is written, and matches an f64
/// reference over the rounded inputs. The n values (1, 7, 33, 50257) leave
/// D's rows unaligned, so the step runs as row-class tiles where it can.
TEST_P(RuntimeHalfGemmTest, MatchesReference) {
  REQUIRE_CUDA_DEVICE();
  const HalfGemmCase &c = GetParam();
  const fusert_dtype dT = c.f32D ? FUSERT_F32 : c.dtype;
  const size_t e = 2, eD = fusert_dtype_size(dT);
  std::vector<uint16_t> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n));
  std::vector<float> av(a.size()), bv(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = halfBits(0.125f * static_cast<float>(static_cast<int>((i * 7) % 13) - 6), c.dtype);
    av[i] = halfValue(a[i], c.dtype);
  }
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = halfBits(0.0625f * static_cast<float>(static_cast<int>((i * 5) % 11) - 5), c.dtype);
    bv[i] = halfValue(b[i], c.dtype);
  }
  std::vector<char> weights(b.size() * e);
  std::memcpy(weights.data(), b.data(), weights.size());
  const std::vector<int64_t> aShape = {c.m, c.k}, dShape = {c.m, c.n};
  const std::vector<int64_t> bShape = c.transB ? std::vector<int64_t>{c.n, c.k}
                                               : std::vector<int64_t>{c.k, c.n};
  Json man = skeleton(c.weightB ? weights.size() : 0, 0);
  man.erase("library");
  if (!c.weightB)
    man.erase("weights");
  man["buffers"] = {typedBuffer(0, "a", aShape, c.dtype, "input", 0),
                    typedBuffer(1, "b", bShape, c.dtype, c.weightB ? "weight" : "input",
                                c.weightB ? 0 : 1),
                    typedBuffer(2, "d", dShape, dT, "output", 0)};
  Json aT = tensor("a", aShape, 0), bT = tensor("b", bShape, 1), dTensor = tensor("d", dShape, 2);
  aT["dtype"] = bT["dtype"] = fusert_dtype_name(c.dtype);
  dTensor["dtype"] = fusert_dtype_name(dT);
  man["inputs"] = c.weightB ? Json::array({aT}) : Json::array({aT, bT});
  man["outputs"] = {dTensor};
  Json step = {{"kind", "gemm"}, {"name", "head"}, {"a", 0}, {"b", 1}, {"d", 2},
               {"m", c.m}, {"n", c.n}, {"k", c.k}, {"trans_a", false},
               {"trans_b", c.transB}, {"alpha", 1.0}, {"beta", 0.0},
               {"dtype", fusert_dtype_name(c.dtype)}};
  if (c.f32D)
    step["d_dtype"] = "f32";
  man["steps"] = {step};
  write(man, c.weightB ? weights : std::vector<char>(), /*withLibrary=*/false);
  if (!c.weightB)
    fs::remove(dir_ / "weights.bin");
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  void *da = nullptr, *db = nullptr, *dd = nullptr;
  const size_t dBytes = static_cast<size_t>(c.m * c.n) * eD;
  ASSERT_EQ(cudaMalloc(&da, a.size() * e), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size() * e), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dd, dBytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da, a.data(), a.size() * e, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.data(), b.size() * e, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dd, 0xFF, dBytes), cudaSuccess); // NaN in every dtype
  fusert_tensor ins[2] = {{"a", c.dtype, 2, aShape.data(), da},
                          {"b", c.dtype, 2, bShape.data(), db}};
  fusert_tensor out{"d", dT, 2, dShape.data(), dd};
  ASSERT_EQ(fusert_run(model_, ins, c.weightB ? 1 : 2, &out, 1, nullptr), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<char> got(dBytes);
  ASSERT_EQ(cudaMemcpy(got.data(), dd, dBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);

  // Products of these inputs are exact in f32; sums of k of them round
  // once per add at most: 1e-5 relative covers f32 D, a half ulp the rest.
  const float tol = c.f32D ? 1e-5f : (c.dtype == FUSERT_BF16 ? 8e-3f : 1e-3f);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < c.k; ++l)
        acc += static_cast<double>(av[i * c.k + l]) *
               bv[c.transB ? j * c.k + l : l * c.n + j];
      const size_t at = static_cast<size_t>(i * c.n + j);
      float v;
      if (c.f32D) {
        std::memcpy(&v, got.data() + at * 4, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, got.data() + at * 2, 2);
        v = halfValue(h, dT);
      }
      ASSERT_NEAR(v, acc, tol * (1.0 + std::fabs(acc))) << "d[" << i << "," << j << "]";
    }
}

INSTANTIATE_TEST_SUITE_P(
    OddN, RuntimeHalfGemmTest,
    ::testing::Values(HalfGemmCase{FUSERT_BF16, true, 512, 50257, 32, false, true},
                      HalfGemmCase{FUSERT_BF16, true, 512, 50257, 32, true, true},
                      HalfGemmCase{FUSERT_F16, true, 300, 50257, 24, false, false},
                      HalfGemmCase{FUSERT_BF16, true, 1031, 1, 40, false, true},
                      HalfGemmCase{FUSERT_BF16, true, 1031, 7, 40, false, true},
                      HalfGemmCase{FUSERT_F16, true, 1031, 33, 40, false, true},
                      HalfGemmCase{FUSERT_F16, true, 1031, 33, 40, true, false},
                      HalfGemmCase{FUSERT_BF16, true, 257, 33, 17, false, true},
                      HalfGemmCase{FUSERT_BF16, false, 1031, 33, 40, false, true},
                      HalfGemmCase{FUSERT_F16, false, 600, 50257, 16, false, true},
                      HalfGemmCase{FUSERT_BF16, true, 8, 64, 16, false, true}),
    halfGemmName);

// fusert_fill_arena (what fusec-run does before its checked run): a poisoned
// arena does not change a correct run, and an intermediate that no step
// writes reads as NaN instead of a stale value.
TEST_F(RuntimeTest, FillArenaPoisonsUnwrittenIntermediates) {
  REQUIRE_CUDA_DEVICE();
  for (bool dropWriter : {false, true}) {
    SCOPED_TRACE(dropWriter ? "the step writing 't' dropped" : "both steps");
    Pipeline p;
    if (dropWriter) {
      Json scaleOnly = Json::array();
      scaleOnly.push_back(p.manifest["steps"][1]);
      p.manifest["steps"] = scaleOnly;
    }
    write(p.manifest, p.weights);
    ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
    EXPECT_EQ(fusert_fill_arena(model_, 256, nullptr), FUSERT_INVALID_ARGUMENT);
    EXPECT_EQ(fusert_fill_arena(model_, -1, nullptr), FUSERT_INVALID_ARGUMENT);
    ASSERT_EQ(fusert_fill_arena(model_, 0xFF, nullptr), FUSERT_OK) << fusert_last_error();
    std::vector<float> x = iota(kN, 0.5f, 0.0f);
    DeviceFloats dx(x), dy(kN);
    int64_t xShape[] = {4, 250}, yShape[] = {kN};
    fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
    fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
    ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK) << fusert_last_error();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> y = dy.get();
    for (int i = 0; i < kN; ++i) {
      if (dropWriter)
        ASSERT_TRUE(std::isnan(y[i])) << "element " << i << " = " << y[i];
      else
        ASSERT_FLOAT_EQ(y[i], 2.0f * (x[i] + p.w[i])) << "element " << i;
    }
    fusert_unload(model_);
    model_ = nullptr;
  }
}

TEST_F(RuntimeTest, CudaGraphReplaysAndRecaptures) {
  REQUIRE_CUDA_DEVICE();
  Pipeline p;
  write(p.manifest, p.weights);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_cuda_graph(model_, 1), FUSERT_OK);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);

  std::vector<float> x1 = iota(kN, 0.5f, 0.0f), x2 = iota(kN, -1.0f, 3.0f);
  DeviceFloats dx(x1), dy(kN), dy2(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN};
  fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
  fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
  auto want = [&](const std::vector<float> &x) {
    std::vector<float> y(kN);
    for (int i = 0; i < kN; ++i)
      y[i] = 2.0f * (x[i] + p.w[i]);
    return y;
  };

  // First run captures, second replays the same pointers: same result.
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectNear(dy.get(), want(x1), 0.0f);
  dy.set(std::vector<float>(kN, 0.0f));
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectNear(dy.get(), want(x1), 0.0f);

  // The replay reads the buffers' current contents.
  dx.set(x2);
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectNear(dy.get(), want(x2), 0.0f);

  // New output pointer: re-capture, write there.
  out.data = dy2.ptr();
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expectNear(dy2.get(), want(x2), 0.0f);

  // The legacy default stream cannot be captured: runs directly.
  dy.set(std::vector<float>(kN, 0.0f));
  out.data = dy.ptr();
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectNear(dy.get(), want(x2), 0.0f);
  cudaStreamDestroy(stream);
}

// Guarded steps on the GPU (RUNTIME.md "Guarded steps"): `scale` runs only
// when the bool input `cond` is true; the runtime copies the byte to the
// host after the steps before it, never captures a CUDA graph for such an
// artifact (even with graphs on), and refuses to join a caller's capture.
TEST_F(RuntimeTest, GuardedStepRunsOnlyWhenItsConditionHolds) {
  REQUIRE_CUDA_DEVICE();
  Pipeline p;
  Json cond = buffer(6, "cond", {1}, "input", 1);
  cond["dtype"] = "bool";
  cond["bytes"] = 1;
  p.manifest["buffers"].push_back(cond);
  Json condIn = tensor("cond", {1}, 6);
  condIn["dtype"] = "bool";
  p.manifest["inputs"].push_back(condIn);
  p.manifest["steps"][1]["guard"] = Json::parse(R"([{"buffer": 6, "when": true}])");
  write(p.manifest, p.weights);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_cuda_graph(model_, 1), FUSERT_OK);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void *dcond = nullptr;
  ASSERT_EQ(cudaMalloc(&dcond, 1), cudaSuccess);
  std::vector<float> x = iota(kN, 0.5f, 1.0f);
  DeviceFloats dx(x), dy(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN}, cShape[] = {1};
  fusert_tensor in[2] = {{"x", FUSERT_F32, 2, xShape, dx.ptr()},
                         {"cond", FUSERT_BOOL, 1, cShape, dcond}};
  fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
  std::vector<float> want(kN), untouched(kN, -1.0f);
  for (int i = 0; i < kN; ++i)
    want[i] = 2.0f * (x[i] + p.w[i]);
  for (int round = 0; round < 2; ++round) {
    for (unsigned char c : {1, 0, 1}) {
      ASSERT_EQ(cudaMemset(dcond, c, 1), cudaSuccess);
      dy.set(untouched);
      ASSERT_EQ(fusert_run(model_, in, 2, &out, 1, stream), FUSERT_OK) << fusert_last_error();
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      expectNear(dy.get(), c ? want : untouched, 0.0f);
    }
  }
  // A caller capturing the stream: a host decision cannot be captured.
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(fusert_run(model_, in, 2, &out, 1, stream), FUSERT_INVALID_ARGUMENT);
  EXPECT_THAT(fusert_last_error(), HasSubstr("cannot join the caller's CUDA graph capture"));
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  if (graph)
    cudaGraphDestroy(graph);
  cudaFree(dcond);
  cudaStreamDestroy(stream);
}

TEST_F(RuntimeTest, ProfilingNullArguments) {
  EXPECT_EQ(fusert_enable_profiling(nullptr, 1), FUSERT_INVALID_ARGUMENT);
  size_t needed = 0;
  EXPECT_EQ(fusert_profile_report(nullptr, nullptr, 0, &needed),
            FUSERT_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, ProfilingTimesEachStep) {
  REQUIRE_CUDA_DEVICE();
  Pipeline p;
  write(p.manifest, p.weights);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_cuda_graph(model_, 1), FUSERT_OK);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  std::vector<float> x = iota(kN, 0.5f, 0.0f);
  DeviceFloats dx(x), dy(kN);
  int64_t xShape[] = {4, 250}, yShape[] = {kN};
  fusert_tensor in{"x", FUSERT_F32, 2, xShape, dx.ptr()};
  fusert_tensor out{"y", FUSERT_F32, 1, yShape, dy.ptr()};
  // A warm-up run before profiling is turned on is not counted.
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK);
  ASSERT_EQ(fusert_enable_profiling(model_, 1), FUSERT_OK) << fusert_last_error();
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK)
        << fusert_last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> want(kN);
  for (int i = 0; i < kN; ++i)
    want[i] = 2.0f * (x[i] + p.w[i]);
  expectNear(dy.get(), want, 0.0f);

  size_t needed = 0;
  ASSERT_EQ(fusert_profile_report(model_, nullptr, 0, &needed), FUSERT_OK);
  ASSERT_GT(needed, 1u);
  std::string small(needed - 1, '\0');
  EXPECT_EQ(fusert_profile_report(model_, small.data(), small.size(), nullptr),
            FUSERT_INVALID_ARGUMENT);
  std::string text(needed, '\0');
  ASSERT_EQ(fusert_profile_report(model_, text.data(), text.size(), nullptr),
            FUSERT_OK);
  Json r = Json::parse(text.c_str());
  EXPECT_EQ(r["runs"], 3);
  ASSERT_EQ(r["steps"].size(), 2u);
  EXPECT_EQ(r["steps"][0]["name"], "add");
  EXPECT_EQ(r["steps"][0]["bytes"], 3 * kN * 4);
  EXPECT_EQ(r["steps"][1]["bytes"], 2 * kN * 4);
  EXPECT_GT(r["steps"][0]["median_us"].get<double>(), 0.0);
  EXPECT_GT(r["steps"][1]["median_us"].get<double>(), 0.0);

  // FUSERT_PROFILE_JSON: the report is written on unload.
  fs::path json = dir_ / "profile.json";
  ASSERT_EQ(setenv("FUSERT_PROFILE_JSON", json.c_str(), 1), 0);
  fusert_unload(model_);
  model_ = nullptr;
  unsetenv("FUSERT_PROFILE_JSON");
  std::ifstream f(json);
  ASSERT_TRUE(f.good());
  Json onDisk = Json::parse(f);
  EXPECT_EQ(onDisk["runs"], 3);

  // Turning profiling off returns to the CUDA graph path.
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_profiling(model_, 1), FUSERT_OK);
  ASSERT_EQ(fusert_enable_profiling(model_, 0), FUSERT_OK);
  ASSERT_EQ(fusert_enable_cuda_graph(model_, 1), FUSERT_OK);
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, stream), FUSERT_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(fusert_profile_report(model_, nullptr, 0, &needed), FUSERT_OK);
  std::string empty(needed, '\0');
  ASSERT_EQ(fusert_profile_report(model_, empty.data(), empty.size(), nullptr),
            FUSERT_OK);
  EXPECT_EQ(Json::parse(empty.c_str())["runs"], 0);
  cudaStreamDestroy(stream);
}

#ifdef FUSERT_TEST_HAVE_CUDNN
TEST_F(RuntimeTest, ConvWithBias) {
  REQUIRE_CUDA_DEVICE();
  // x [1,2,5,5], w [3,2,3,3], pads 1, strides 2 -> y [1,3,3,3].
  const int cin = 2, cout = 3, h = 5, kh = 3, oh = 3;
  std::vector<float> x = iota(cin * h * h, 0.5f, 0.0f);
  std::vector<float> w = iota(cout * cin * kh * kh, 0.25f, 0.125f);
  std::vector<float> bias = {1.0f, -2.0f, 0.5f};
  std::vector<char> weights;
  put(weights, 0, w);
  put(weights, 512, bias);
  Json man = skeleton(weights.size(), 0);
  man.erase("library");
  man["buffers"] = {buffer(0, "x", {1, cin, h, h}, "input", 0),
                    buffer(1, "w", {cout, cin, kh, kh}, "weight", 0),
                    buffer(2, "bias", {cout}, "weight", 512),
                    buffer(3, "y", {1, cout, oh, oh}, "output", 0)};
  man["inputs"] = {tensor("x", {1, cin, h, h}, 0)};
  man["outputs"] = {tensor("y", {1, cout, oh, oh}, 3)};
  man["steps"] = {{{"kind", "conv"}, {"name", "conv"}, {"x", 0}, {"w", 1},
                   {"bias", 2}, {"y", 3}, {"x_shape", {1, cin, h, h}},
                   {"w_shape", {cout, cin, kh, kh}},
                   {"y_shape", {1, cout, oh, oh}}, {"pads", {1, 1, 1, 1}},
                   {"strides", {2, 2}}, {"dilations", {1, 1}}, {"group", 1},
                   {"dtype", "f32"}}};
  write(man, weights, /*withLibrary=*/false);
  ASSERT_EQ(load(), FUSERT_OK) << fusert_last_error();

  DeviceFloats dx(x), dy(cout * oh * oh);
  int64_t xShape[] = {1, cin, h, h}, yShape[] = {1, cout, oh, oh};
  fusert_tensor in{"x", FUSERT_F32, 4, xShape, dx.ptr()};
  fusert_tensor out{"y", FUSERT_F32, 4, yShape, dy.ptr()};
  ASSERT_EQ(fusert_run(model_, &in, 1, &out, 1, nullptr), FUSERT_OK)
      << fusert_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> want(cout * oh * oh);
  for (int o = 0; o < cout; ++o)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < oh; ++j) {
        double acc = bias[o];
        for (int c = 0; c < cin; ++c)
          for (int u = 0; u < kh; ++u)
            for (int v = 0; v < kh; ++v) {
              int yi = i * 2 - 1 + u, xj = j * 2 - 1 + v;
              if (yi < 0 || yi >= h || xj < 0 || xj >= h)
                continue;
              acc += static_cast<double>(x[(c * h + yi) * h + xj]) *
                     w[((o * cin + c) * kh + u) * kh + v];
            }
        want[(o * oh + i) * oh + j] = static_cast<float>(acc);
      }
  expectNear(dy.get(), want, 1e-5f);
}
#endif

} // namespace
