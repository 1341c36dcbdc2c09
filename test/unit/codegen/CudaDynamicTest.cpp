//===- CudaDynamicTest.cpp - Dynamic shapes in the CUDA code generator ---===//
//
// Shared models compiled for cuda with their symbolic dims left dynamic
// (no nvcc here; DynamicGpuTest runs them): every launcher takes the bound
// symbols (docs/ARTIFACT.md), kernels read symbolic extents from them, the
// tiled attention kernel reads its sequence lengths and strides from a
// Dims parameter, and no probe binding's extents are baked into a kernel.
// With nvcc present (label nvcc) the library is built as well.
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/cuda/Nvcc.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/unit/DynamicTestUtil.h"
#include "test/unit/TestModels.h"

namespace fusec {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;

std::string readFile(const fs::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Compiles shared model \p name for cuda with every symbolic input dim
/// dynamic in 1..64 (dims an exporter named twice unified by position, as
/// test/run_shared_model.py does).
absl::StatusOr<driver::Compilation> compileDynamic(const std::string &name, const fs::path &out, bool nvcc,
                                                   const std::string &precision = "fp32") {
  const fs::path model = testing::sharedModelsDir() / name / "model.onnx";
  auto ref = frontend::importOnnxModel(model.string());
  if (!ref.ok()) return ref.status();
  driver::CompileOptions o;
  o.target = "cuda";
  o.precision = precision;
  o.output = out.string();
  o.runNvcc = nvcc;
  std::map<size_t, std::string> byAxis;  // first symbol seen at each axis
  for (const ir::Value *v : (*ref)->inputs()) {
    if (v->isConstant()) continue;
    std::vector<driver::DimRange> dims;
    bool symbolic = false;
    for (size_t a = 0; a < v->type().shape.size(); ++a) {
      const ir::Dim &d = v->type().shape[a];
      driver::DimRange r;
      if (d.isStatic()) {
        r.min = r.max = d.value;
      } else {
        symbolic = true;
        r.min = 1;
        r.max = 64;
        auto it = byAxis.find(a);
        if (it != byAxis.end() && it->second != d.symbol) r.same = it->second;
        byAxis.emplace(a, d.symbol);
      }
      dims.push_back(r);
    }
    if (symbolic) o.inputRanges[v->name()] = dims;
  }
  return driver::compile(model.string(), o);
}

class CudaDynamicModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaDynamicModel, LaunchersReadTheBoundSymbols) {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  auto c = compileDynamic(GetParam(), out, /*nvcc=*/false);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_FALSE(c->dynamicSymbols.empty());
  const std::string cu = readFile(out / "model.cu");
  int launchers = 0;
  for (absl::string_view line : absl::StrSplit(cu, '\n')) {
    if (!absl::StartsWith(line, "extern \"C\" int fusec_k")) continue;
    ++launchers;
    EXPECT_NE(line.find("const int64_t *symbols"), absl::string_view::npos) << line;
  }
  EXPECT_GT(launchers, 0);
  EXPECT_TRUE(cu.find("sy.v[") != std::string::npos || cu.find("symbols[") != std::string::npos)
      << "no kernel reads a symbol";
  const nlohmann::json m = nlohmann::json::parse(readFile(out / "manifest.json"));
  ASSERT_TRUE(m.contains("symbols"));
  EXPECT_EQ(m["symbols"].size(), c->dynamicSymbols.size());
  // Every symbolic extent the manifest writes names a declared symbol.
  std::set<std::string> names;
  for (const auto &s : m["symbols"]) names.insert(s["name"].get<std::string>());
  for (const auto &b : m["buffers"]) {
    for (const auto &d : b["shape"]) {
      if (!d.is_string()) continue;
      for (absl::string_view f : absl::StrSplit(d.get<std::string>(), '*')) {
        if (f.empty() || std::isdigit(static_cast<unsigned char>(f[0]))) continue;
        EXPECT_TRUE(names.count(std::string(f))) << d;
      }
    }
  }
}

TEST_P(CudaDynamicModel, NvccBuildsTheLibrary) {
  if (codegen::findNvcc("").empty()) GTEST_SKIP() << "nvcc not found";
  TempDir tmp;
  for (const char *precision : {"fp32", "bf16"}) {
    const fs::path out = tmp.path / precision;
    auto c = compileDynamic(GetParam(), out, /*nvcc=*/true, precision);
    ASSERT_TRUE(c.ok()) << precision << ": " << c.status();
    EXPECT_TRUE(fs::exists(out / "libmodel.so")) << precision;
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, CudaDynamicModel,
                         ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const std::string &n : testing::sharedModelNames(true))
                             if (n != "none") names.push_back(n);
                           return names;
                         }()),
                         [](const auto &info) { return testing::testParamName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaDynamicModel);

TEST(CudaDynamic, AttentionReadsSequenceLengthsAtRunTime) {
  if (!fs::exists(testing::sharedModelsDir() / "attn_causal_sdpa")) GTEST_SKIP() << "shared models not found";
  TempDir tmp;
  auto c = compileDynamic("attn_causal_sdpa", tmp.path / "out", /*nvcc=*/false, "bf16");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string cu = readFile(tmp.path / "out" / "model.cu");
  // The tiled kernel: its sequence lengths come from the Dims parameter
  // (macros over the kernel's __shared__ copy), undefined after it.
  EXPECT_NE(cu.find("#define kSq ((int)gDims.v["), std::string::npos);
  EXPECT_NE(cu.find("#define kSk ((int)gDims.v["), std::string::npos);
  EXPECT_NE(cu.find("#undef kSq"), std::string::npos);
  EXPECT_EQ(cu.find("constexpr int kSq"), std::string::npos);
  EXPECT_NE(cu.find("P.v[0] = "), std::string::npos);
}

TEST(CudaDynamic, SymbolicInnermostGetsAGuardedVectorPath) {
  if (!fs::exists(testing::sharedModelsDir() / "gpt2_tiny")) GTEST_SKIP() << "shared models not found";
  TempDir tmp;
  auto c = compileDynamic("gpt2_tiny", tmp.path / "out", /*nvcc=*/false);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string cu = readFile(tmp.path / "out" / "model.cu");
  // The position-id kernel's innermost extent is seq: its 16-byte path runs
  // only when seq is a multiple of the width (and the pointer aligned), the
  // scalar kernel otherwise (a shape bucket chosen at run time).
  EXPECT_NE(cu.find("(long long)symbols[1]) % 2 == 0) && (reinterpret_cast<uintptr_t>"), std::string::npos);
  EXPECT_NE(cu.find("_vec<<<grid2"), std::string::npos);
  EXPECT_NE(cu.find("_scalar<<<grid1"), std::string::npos);
}

}  // namespace
}  // namespace fusec
