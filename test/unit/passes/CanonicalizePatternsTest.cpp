//===- CanonicalizePatternsTest.cpp - Numerics of every lit pass test case -===//
//
// The lit tests in test/lit/passes check the *structure* each pass produces;
// this test checks that every one of those cases (matches and near misses)
// computes the same thing before and after the pass. It reads each .fir
// file, takes the pass list from its RUN line (--passes=...), splits it at
// `// -----`, and for every chunk whose inputs have static shapes runs the
// reference interpreter on deterministic pseudo-random inputs before and
// after the passes, comparing with the default tolerances (interp/Compare.h).
//
//===----------------------------------------------------------------------===//
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "ir/Parser.h"
#include "passes/Pass.h"
#include "passes/Pipeline.h"

namespace fusec::passes {
namespace {

namespace fs = std::filesystem;

fs::path litDir() {
#ifdef FUSEC_SOURCE_DIR
  // Absolute (with ccache's base_dir, __FILE__ is relative to the build).
  return fs::path(FUSEC_SOURCE_DIR) / "test" / "lit" / "passes";
#else
  return fs::path(__FILE__).parent_path() / ".." / ".." / "lit" / "passes";
#endif
}

/// The lit cases of the passes, except those that are invalid IR on purpose
/// (run with --no-verify: the pass must refuse them, there is no numerics
/// to keep).
std::vector<std::string> firFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(litDir(), ec)) {
    if (e.path().extension() != ".fir") continue;
    std::ifstream f(e.path());
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (text.find("--no-verify") != std::string::npos) continue;
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Deterministic inputs: floats in [-2, 2], integers in [0, 4), random bools.
ir::Tensor randomInput(const ir::TensorType &ty, std::mt19937 &rng) {
  ir::Tensor t(ty.dtype, ty.staticShape());
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> small(0, 3);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (ir::isFloat(ty.dtype)) {
      t.setDouble(i, real(rng));
    } else {
      t.setInt(i, small(rng) % (ty.dtype == ir::DType::kBool ? 2 : 4));
    }
  }
  return t;
}

class LitCaseNumerics : public ::testing::TestWithParam<std::string> {};

TEST_P(LitCaseNumerics, SameOutputsBeforeAndAfter) {
  std::ifstream f(litDir() / GetParam());
  ASSERT_TRUE(f) << "cannot open " << GetParam();
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  size_t at = text.find("--passes=");
  ASSERT_NE(at, std::string::npos) << "no --passes= in the RUN line";
  size_t end = text.find_first_of(" \n", at);
  std::string pipeline = text.substr(at + 9, end - at - 9);

  int checked = 0;
  std::vector<std::string> chunks;
  std::string cur;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StripAsciiWhitespace(line) == "// -----") {
      chunks.push_back(cur);
      cur.clear();
    } else {
      cur += std::string(line) + "\n";
    }
  }
  chunks.push_back(cur);
  for (size_t c = 0; c < chunks.size(); ++c) {
    SCOPED_TRACE("chunk " + std::to_string(c));
    auto graph = ir::parseGraph(chunks[c]);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ir::Graph &g = **graph;
    bool allStatic = true;
    std::mt19937 rng(1234 + static_cast<unsigned>(c));
    std::map<std::string, ir::Tensor> inputs;
    for (const ir::Value *in : g.inputs()) {
      if (!in->type().isStatic()) allStatic = false;
      if (allStatic) inputs[in->name()] = randomInput(in->type(), rng);
    }
    if (!allStatic) continue;
    auto before = interp::runGraph(g, inputs);
    ASSERT_TRUE(before.ok()) << before.status();
    auto passes = parsePipeline(pipeline);
    ASSERT_TRUE(passes.ok()) << passes.status();
    PassContext ctx;
    absl::Status st = runPasses(g, ctx, *passes);
    ASSERT_TRUE(st.ok()) << st;
    auto after = interp::runGraph(g, inputs);
    ASSERT_TRUE(after.ok()) << after.status();
    ASSERT_EQ(after->size(), before->size());
    for (size_t i = 0; i < after->size(); ++i) {
      interp::CompareResult r = interp::compareTensors((*after)[i], (*before)[i]);
      EXPECT_TRUE(r.pass) << g.name() << " output " << i << ": " << r.message;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(LitPasses, LitCaseNumerics, ::testing::ValuesIn(firFiles()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string n = info.param.substr(0, info.param.size() - 4);
                           for (char &ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LitCaseNumerics);

}  // namespace
}  // namespace fusec::passes
