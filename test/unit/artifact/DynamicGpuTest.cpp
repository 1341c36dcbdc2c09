//===- DynamicGpuTest.cpp - One cuda artifact, any binding of its symbols --===//
//
// Shared models compiled for cuda with their symbolic dims left dynamic
// (program/Symbolic.h; nvcc builds the library), loaded once through
// libfusert and run on the GPU at many shapes in one process: larger,
// smaller, one, and back, so the arena is re-planned and grown, the
// cuBLASLt plans are re-made or taken from their per-binding cache and one
// CUDA graph is captured per binding. Outputs are poisoned (0xFF: NaN)
// before every run and compared with the reference interpreter on the
// unbound imported graph at that shape; each shape runs twice (graph
// capture, then replay). Skips without nvcc or a CUDA device.
//
//===----------------------------------------------------------------------===//
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/Nvcc.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "fusert/fusert.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "test/unit/DynamicTestUtil.h"
#include "test/unit/TestModels.h"

namespace fusec {
namespace {

namespace fs = std::filesystem;
using testutil::feedsAt;
using testutil::range;
using testutil::TempDir;

bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Loaded {
  fusert_model *model = nullptr;
  ~Loaded() { fusert_unload(model); }
};

/// Device memory freed with the object.
struct DeviceBuffer {
  void *p = nullptr;
  explicit DeviceBuffer(size_t bytes) { cudaMalloc(&p, std::max<size_t>(bytes, 1)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

fusert_dtype fusertDtype(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return FUSERT_F32;
    case ir::DType::kF16: return FUSERT_F16;
    case ir::DType::kBF16: return FUSERT_BF16;
    case ir::DType::kI32: return FUSERT_I32;
    case ir::DType::kBool: return FUSERT_BOOL;
    default: return FUSERT_I64;
  }
}

/// Runs \p m (a dynamic cuda artifact) on \p feeds on \p stream: binds the
/// shapes, sizes the outputs from fusert_output_info, poisons outputs and
/// arena, runs, copies the outputs back (f32 artifacts).
absl::StatusOr<std::vector<ir::Tensor>> runDynamic(fusert_model *m, const std::map<std::string, ir::Tensor> &feeds,
                                                   cudaStream_t stream) {
  std::vector<std::unique_ptr<DeviceBuffer>> mem;
  std::vector<fusert_tensor> in;
  for (const auto &[name, t] : feeds) {
    mem.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(t.byteSize())));
    if (t.byteSize() > 0)
      cudaMemcpy(mem.back()->p, t.data(), static_cast<size_t>(t.byteSize()), cudaMemcpyHostToDevice);
    in.push_back({name.c_str(), fusertDtype(t.dtype()), static_cast<int>(t.rank()), t.shape().data(), mem.back()->p});
  }
  if (fusert_bind_shapes(m, in.data(), in.size()) != FUSERT_OK) return absl::InvalidArgumentError(fusert_last_error());
  std::vector<ir::Tensor> outs;
  std::vector<std::string> names;
  std::vector<fusert_tensor> out;
  for (size_t i = 0; i < fusert_num_outputs(m); ++i) {
    const char *name;
    fusert_dtype dt;
    int rank;
    const int64_t *shape;
    if (fusert_output_info(m, i, &name, &dt, &rank, &shape) != FUSERT_OK)
      return absl::InternalError(fusert_last_error());
    if (dt != FUSERT_F32) return absl::InternalError("the test reads f32 outputs only");
    ir::Shape s(shape, shape + rank);
    for (int64_t d : s)
      if (d < 0) return absl::InternalError("an output dim is still -1 after binding");
    outs.emplace_back(ir::DType::kF32, s);
    names.push_back(name);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    mem.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(outs[i].byteSize())));
    cudaMemset(mem.back()->p, 0xFF, static_cast<size_t>(std::max<int64_t>(outs[i].byteSize(), 1)));
    out.push_back({names[i].c_str(), FUSERT_F32, static_cast<int>(outs[i].rank()), outs[i].shape().data(),
                   mem.back()->p});
  }
  if (fusert_fill_arena(m, 0xFF, stream) != FUSERT_OK) return absl::InternalError(fusert_last_error());
  if (fusert_run(m, in.data(), in.size(), out.data(), out.size(), stream) != FUSERT_OK)
    return absl::InternalError(fusert_last_error());
  if (cudaStreamSynchronize(stream) != cudaSuccess) return absl::InternalError("cudaStreamSynchronize failed");
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].byteSize() > 0)
      cudaMemcpy(outs[i].data(), out[i].data, static_cast<size_t>(outs[i].byteSize()), cudaMemcpyDeviceToHost);
  return outs;
}

class DynamicModelOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicModelOnGpu, OneArtifactManyShapes) {
  const std::string name = GetParam();
  const fs::path model = testing::sharedModelsDir() / name / "model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found";
  if (codegen::findNvcc("").empty()) GTEST_SKIP() << "nvcc not found";
  if (!haveDevice()) GTEST_SKIP() << "no CUDA device";
  TempDir tmp;
  auto ref = frontend::importOnnxModel(model.string());
  ASSERT_TRUE(ref.ok()) << ref.status();
  driver::CompileOptions o;
  o.target = "cuda";
  o.output = (tmp.path / "out").string();
  // Symbolic dims within 1..64 (the tiny models have 128 positions).
  for (const ir::Value *v : (*ref)->inputs()) {
    if (v->isConstant()) continue;
    std::vector<driver::DimRange> dims;
    bool symbolic = false;
    for (const ir::Dim &d : v->type().shape) {
      symbolic = symbolic || d.isSymbolic();
      dims.push_back(d.isStatic() ? range(d.value, d.value) : range(1, 64));
    }
    if (symbolic) o.inputRanges[v->name()] = dims;
  }
  auto c = driver::compile(model.string(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_FALSE(c->dynamicSymbols.empty());
  Loaded l;
  ASSERT_EQ(fusert_load(o.output.c_str(), &l.model), FUSERT_OK) << fusert_last_error();
  ASSERT_EQ(fusert_enable_cuda_graph(l.model, 1), FUSERT_OK);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::set<std::string> symbols;
  for (const ir::Value *v : (*ref)->inputs())
    for (const ir::Dim &d : v->type().shape)
      if (d.isSymbolic()) symbols.insert(d.symbol);
  std::mt19937 rng(7);
  // Large, small, one, then large again: the arena grows and is re-planned;
  // a shape seen before takes its cached plans and graph.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{5, 37}, {2, 3}, {1, 1}, {4, 64}, {5, 37}, {3, 17}};
  for (const auto &[b, s] : shapes) {
    std::map<std::string, int64_t> binding;
    int k = 0;
    for (const std::string &sym : symbols) binding[sym] = k++ == 0 ? b : s;
    SCOPED_TRACE(absl::StrCat(name, " at b=", b, " s=", s));
    auto feeds = feedsAt(**ref, binding, rng);
    auto want = interp::runGraph(**ref, feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    for (int rep = 0; rep < 2; ++rep) {  // capture, then replay
      auto got = runDynamic(l.model, feeds, stream);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i) {
        interp::Tolerance tol{2e-4, 2e-3};
        interp::CompareResult r = interp::compareTensors((*got)[i], (*want)[i], &tol);
        EXPECT_TRUE(r.pass) << "output " << i << " (run " << rep << "): " << r.message;
      }
    }
  }
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Shared, DynamicModelOnGpu,
                         ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const std::string &n : testing::sharedModelNames(true))
                             if (n == "mlp_ln_gelu" || n == "gpt2_tiny" || n == "bert_tiny" ||
                                 n == "vit_tiny_dynamo" || n == "attn_causal_sdpa")
                               names.push_back(n);
                           return names;
                         }()),
                         [](const auto &info) { return testing::testParamName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DynamicModelOnGpu);

}  // namespace
}  // namespace fusec
