//===- DynamicShapesTest.cpp - One cpu artifact, any binding of its symbols -===//
//
// Shared models compiled with their symbolic dims left dynamic (no
// --shape; program/Symbolic.h), loaded once through libfusert and run at
// several shapes in one process (the arena re-planned and grown between
// them, outputs poisoned with NaN), each run compared with the reference
// interpreter on the unbound imported graph at that shape. Also the
// fitting itself (probe bindings, monomials) and the runtime's refusals: a
// dim outside its range, two dims that contradict, a symbol no input binds.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "fusert/fusert.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "program/Symbolic.h"
#include "test/unit/DynamicTestUtil.h"
#include "test/unit/TestModels.h"

namespace fusec {
namespace {

namespace fs = std::filesystem;
using program::ShapeSymbol;
using program::SymExtent;
using testutil::feedsAt;
using testutil::range;
using testutil::TempDir;

// ---------------------------------------------------------------------------
// Fitting.

TEST(ProbeBindings, DistinctPrimesInsideRanges) {
  auto p = program::probeBindings({ShapeSymbol{"batch", 1, 64}, ShapeSymbol{"seq", 1, 4096}});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 7u);  // base, one per symbol, verification; small; one large per symbol
  std::set<int64_t> seen;
  for (size_t i = 0; i < 4; ++i)
    for (const auto &[name, v] : (*p)[i]) {
      EXPECT_GE(v, 2);
      seen.insert(v);
    }
  EXPECT_EQ(seen.size(), 6u);  // three values per symbol, none shared
  EXPECT_EQ((*p)[4].at("batch"), 2);  // both ends of the ranges
  EXPECT_EQ((*p)[4].at("seq"), 3);
  EXPECT_EQ((*p)[5].at("batch"), 61);  // largest prime <= 64
  EXPECT_EQ((*p)[5].at("seq"), 3);
  EXPECT_EQ((*p)[6].at("seq"), 4093);  // largest prime <= 4096
  EXPECT_NE((*p)[0].at("batch"), (*p)[1].at("batch"));
  EXPECT_EQ((*p)[0].at("seq"), (*p)[1].at("seq"));
  EXPECT_NE((*p)[0].at("seq"), (*p)[2].at("seq"));
  EXPECT_NE((*p)[3].at("seq"), (*p)[0].at("seq"));
  // A narrow range still gets three values inside it.
  auto narrow = program::probeBindings({ShapeSymbol{"b", 2, 4}});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  for (const auto &b : *narrow) {
    EXPECT_GE(b.at("b"), 2);
    EXPECT_LE(b.at("b"), 4);
  }
  // Too narrow: refused, naming the symbol.
  auto refused = program::probeBindings({ShapeSymbol{"seq", 1, 2}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'seq'"), std::string::npos);
}

program::ShapeProbes probesFor(const std::vector<ShapeSymbol> &syms) {
  program::ShapeProbes p;
  p.symbols = syms;
  p.bindings = *program::probeBindings(syms);
  return p;
}

std::vector<int64_t> valuesOf(const program::ShapeProbes &p, const std::function<int64_t(int64_t, int64_t)> &f) {
  std::vector<int64_t> v;
  for (const auto &b : p.bindings) v.push_back(f(b.at("batch"), b.at("seq")));
  return v;
}

TEST(FitMonomial, ProductsPowersAndConstants) {
  const program::ShapeProbes p = probesFor({ShapeSymbol{"batch"}, ShapeSymbol{"seq"}});
  auto e = program::fitMonomial(valuesOf(p, [](int64_t b, int64_t s) { return 4 * b * s; }), p);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->str(), "4*batch*seq");
  e = program::fitMonomial(valuesOf(p, [](int64_t b, int64_t s) { return 3 * s * s; }), p);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->str(), "3*seq*seq");
  EXPECT_EQ(*e->evaluate({{"seq", 10}}), 300);
  e = program::fitMonomial(valuesOf(p, [](int64_t, int64_t) { return 128; }), p);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->isConstant());
  // seq - 1 is no monomial; neither is batch + seq.
  // The refusal names the sum (a KV cache's P + S, x[:, 5:]'s S - 5).
  auto sm1 = program::fitMonomial(valuesOf(p, [](int64_t, int64_t s) { return s - 1; }), p);
  ASSERT_FALSE(sm1.ok());
  EXPECT_TRUE(absl::StrContains(sm1.status().message(), "it is seq - 1, a sum of symbols")) << sm1.status();
  auto bs = program::fitMonomial(valuesOf(p, [](int64_t b, int64_t s) { return b + 2 * s; }), p);
  ASSERT_FALSE(bs.ok());
  EXPECT_TRUE(absl::StrContains(bs.status().message(), "it is batch + 2*seq, a sum")) << bs.status();
  auto neg = program::fitMonomial(valuesOf(p, [](int64_t b, int64_t s) { return 100 - s; }), p);
  ASSERT_FALSE(neg.ok());
  EXPECT_TRUE(absl::StrContains(neg.status().message(), "it is -seq + 100, a sum")) << neg.status();
  // A clamp min(seq, 64) looks like seq at the middle probes; the large
  // probe refuses it, and min(seq, 8) is refused by the small one.
  EXPECT_FALSE(program::fitMonomial(valuesOf(p, [](int64_t, int64_t s) { return std::min<int64_t>(s, 64); }), p).ok());
  EXPECT_FALSE(program::fitMonomial(valuesOf(p, [](int64_t, int64_t s) { return std::min<int64_t>(s, 8); }), p).ok());
  // Offsets print and evaluate (index bounds: batch*seq - 1).
  SymExtent off = (SymExtent::symbol("batch") * SymExtent::symbol("seq")).plus(-1);
  EXPECT_EQ(off.str(), "batch*seq-1");
  EXPECT_EQ(*off.evaluate({{"batch", 2}, {"seq", 24}}), 47);
}

// ---------------------------------------------------------------------------
// End to end through libfusert.

struct Loaded {
  fusert_model *model = nullptr;
  ~Loaded() { fusert_unload(model); }
};

/// Runs \p m (a dynamic artifact) on \p feeds: binds the shapes, sizes the
/// outputs from fusert_output_info, poisons them, runs.
absl::StatusOr<std::vector<ir::Tensor>> runDynamic(fusert_model *m, const std::map<std::string, ir::Tensor> &feeds) {
  std::vector<fusert_tensor> in;
  for (const auto &[name, t] : feeds)
    in.push_back({name.c_str(), t.dtype() == ir::DType::kF32 ? FUSERT_F32 : FUSERT_I64,
                  static_cast<int>(t.rank()), t.shape().data(), const_cast<uint8_t *>(t.data())});
  if (fusert_bind_shapes(m, in.data(), in.size()) != FUSERT_OK)
    return absl::InvalidArgumentError(fusert_last_error());
  std::vector<ir::Tensor> outs;
  std::vector<std::string> names;
  for (size_t i = 0; i < fusert_num_outputs(m); ++i) {
    const char *name;
    fusert_dtype dt;
    int rank;
    const int64_t *shape;
    if (fusert_output_info(m, i, &name, &dt, &rank, &shape) != FUSERT_OK)
      return absl::InternalError(fusert_last_error());
    ir::Shape s(shape, shape + rank);
    for (int64_t d : s)
      if (d < 0) return absl::InternalError("an output dim is still -1 after binding");
    outs.emplace_back(ir::DType::kF32, s);
    std::memset(outs.back().data(), 0xFF, static_cast<size_t>(outs.back().byteSize()));  // NaN
    names.push_back(name);
  }
  std::vector<fusert_tensor> out;
  for (size_t i = 0; i < outs.size(); ++i)
    out.push_back({names[i].c_str(), FUSERT_F32, static_cast<int>(outs[i].rank()), outs[i].shape().data(),
                   outs[i].data()});
  if (fusert_fill_arena(m, 0xFF, nullptr) != FUSERT_OK) return absl::InternalError(fusert_last_error());
  if (fusert_run(m, in.data(), in.size(), out.data(), out.size(), nullptr) != FUSERT_OK)
    return absl::InternalError(fusert_last_error());
  return outs;
}

class DynamicModel : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicModel, OneArtifactManyShapes) {
  const std::string name = GetParam();
  const fs::path model = testing::sharedModelsDir() / name / "model.onnx";
  TempDir tmp;
  auto ref = frontend::importOnnxModel(model.string());
  ASSERT_TRUE(ref.ok()) << ref.status();
  driver::CompileOptions o;
  o.target = "cpu";
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
  // Inputs show -1 for their symbolic dims.
  const int64_t *shape = nullptr;
  int rank = 0;
  ASSERT_EQ(fusert_input_info(l.model, 0, nullptr, nullptr, &rank, &shape), FUSERT_OK);
  bool anyDynamic = false;
  for (int k = 0; k < rank; ++k) anyDynamic = anyDynamic || shape[k] == -1;
  EXPECT_TRUE(anyDynamic);
  std::set<std::string> symbols;
  for (const ir::Value *v : (*ref)->inputs())
    for (const ir::Dim &d : v->type().shape)
      if (d.isSymbolic()) symbols.insert(d.symbol);
  std::mt19937 rng(7);
  // Large, small, one, then large again: the arena grows and is re-planned.
  for (int64_t b : {5, 2, 1, 4})
    for (int64_t s : {37, 3, 1, 64}) {
      std::map<std::string, int64_t> binding;
      int k = 0;
      for (const std::string &sym : symbols) binding[sym] = k++ == 0 ? b : s;
      SCOPED_TRACE(absl::StrCat(name, " at b=", b, " s=", s));
      auto feeds = feedsAt(**ref, binding, rng);
      auto want = interp::runGraph(**ref, feeds);
      ASSERT_TRUE(want.ok()) << want.status();
      auto got = runDynamic(l.model, feeds);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i) {
        interp::Tolerance tol{2e-4, 2e-3};
        interp::CompareResult r = interp::compareTensors((*got)[i], (*want)[i], &tol);
        EXPECT_TRUE(r.pass) << "output " << i << ": " << r.message;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Shared, DynamicModel,
                         ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const std::string &n : testing::sharedModelNames(true))
                             if (n == "mlp_ln_gelu" || n == "gpt2_tiny" || n == "vit_tiny_dynamo") names.push_back(n);
                           return names;
                         }()),
                         [](const auto &info) { return testing::testParamName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DynamicModel);

TEST(DynamicRuntime, RefusesShapesOutsideTheCompiledOnes) {
  const fs::path model = testing::sharedModelsDir() / "gpt2_tiny" / "model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found";
  TempDir tmp;
  driver::CompileOptions o;
  o.target = "cpu";
  o.output = (tmp.path / "out").string();
  driver::DimRange seq = range(1, 64);
  seq.opt = 32;
  o.inputRanges["input_ids"] = {range(1, 8), seq};
  auto c = driver::compile(model.string(), o);
  ASSERT_TRUE(c.ok()) << c.status();
  Loaded l;
  ASSERT_EQ(fusert_load(o.output.c_str(), &l.model), FUSERT_OK) << fusert_last_error();
  auto bind = [&](std::vector<int64_t> ids, std::vector<int64_t> mask) {
    fusert_tensor in[2] = {{"input_ids", FUSERT_I64, 2, ids.data(), nullptr},
                           {"attention_mask", FUSERT_I64, 2, mask.data(), nullptr}};
    fusert_status s = fusert_bind_shapes(l.model, in, 2);
    return s == FUSERT_OK ? std::string() : std::string(fusert_last_error());
  };
  EXPECT_EQ(bind({2, 24}, {2, 24}), "");
  const int64_t *shape = nullptr;
  int rank = 0;
  ASSERT_EQ(fusert_output_info(l.model, 0, nullptr, nullptr, &rank, &shape), FUSERT_OK);
  ASSERT_EQ(rank, 3);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 24);
  EXPECT_NE(bind({2, 65}, {2, 65}).find("outside the range 1..64"), std::string::npos);
  EXPECT_NE(bind({9, 8}, {9, 8}).find("outside the range 1..8"), std::string::npos);
  EXPECT_NE(bind({2, 24}, {2, 25}).find("already 24"), std::string::npos);
  EXPECT_NE(bind({2, 24}, {3, 24}).find("already 2"), std::string::npos);
}

TEST(DynamicCompile, RefusalsNameTheCause) {
  const fs::path model = testing::sharedModelsDir() / "mlp_ln_gelu" / "model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "shared models not found";
  TempDir tmp;
  driver::CompileOptions o;
  o.output = (tmp.path / "out").string();
  o.target = "nki";
  auto c = driver::compile(model.string(), o);  // nki: not dynamic; bind with --shape
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--shape"), std::string::npos);
  o.target = "cpu";
  o.inputRanges["x"] = {range(1, 2), range(1, 64), range(256, 256)};
  c = driver::compile(model.string(), o);  // batch 1..2: too few extents to fit
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("'batch'"), std::string::npos) << c.status();
  EXPECT_FALSE(fs::exists(o.output));
  o.inputRanges["x"] = {range(1, 8), range(1, 64), range(128, 128)};
  c = driver::compile(model.string(), o);  // a static dim given another extent
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("256"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace fusec
