//===- DynamicTestUtil.h - Helpers of the dynamic-shape tests -----*- C++ -*-===//
//
// What the dynamic-shape tests (cpu/DynamicShapesTest, codegen/
// CudaDynamicTest, artifact/DynamicGpuTest) share: a --shape range, a
// temporary folder removed with the object, and the random feeds of a
// graph's inputs at one binding of its symbols. Header-only; links
// fusec_driver (driver::DimRange) and fusec_ir.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_DYNAMICTESTUTIL_H
#define FUSEC_TEST_UNIT_DYNAMICTESTUTIL_H

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "driver/CommandLine.h"
#include "ir/Graph.h"

namespace fusec::testutil {

/// --shape NAME=MIN..MAX for one dim.
inline driver::DimRange range(int64_t min, int64_t max) {
  driver::DimRange r;
  r.min = min;
  r.max = max;
  return r;
}

/// A fresh folder under the system temp dir (named after \p tag, the
/// process and the object), removed with everything in it on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string &tag = "fusec_dyn") {
    path = std::filesystem::temp_directory_path() /
           absl::StrCat(tag, "_", ::getpid(), "_", reinterpret_cast<uintptr_t>(this));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/// Inputs for \p g's graph inputs at \p binding (symbol -> extent): floats
/// uniform in [-1, 1), attention masks of ones, BERT segment ids
/// ("token_type") 0 (they index a table of 2), other integers (token ids)
/// uniform in [0, 100).
inline std::map<std::string, ir::Tensor> feedsAt(const ir::Graph &g, const std::map<std::string, int64_t> &binding,
                                                 std::mt19937 &rng) {
  std::map<std::string, ir::Tensor> feeds;
  for (const ir::Value *v : g.inputs()) {
    if (v->isConstant()) continue;
    ir::Shape shape;
    for (const ir::Dim &d : v->type().shape) shape.push_back(d.isStatic() ? d.value : binding.at(d.symbol));
    ir::Tensor t(v->type().dtype, shape);
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (v->type().dtype == ir::DType::kF32)
        t.setDouble(i, std::uniform_real_distribution<double>(-1, 1)(rng));
      else if (v->name().find("mask") != std::string::npos)
        t.setInt(i, 1);
      else if (v->name().find("token_type") != std::string::npos)
        t.setInt(i, 0);
      else
        t.setInt(i, std::uniform_int_distribution<int64_t>(0, 99)(rng));
    }
    feeds.emplace(v->name(), std::move(t));
  }
  return feeds;
}

}  // namespace fusec::testutil

#endif  // FUSEC_TEST_UNIT_DYNAMICTESTUTIL_H
