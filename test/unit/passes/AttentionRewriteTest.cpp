//===- AttentionRewriteTest.cpp - Attention rewrite on the shared models -===//
//
// For every exported model in ../shared/models (FUSEC_SHARED_MODELS
// overrides): imports it, runs the reference interpreter on
// test_data_set_0, runs the default pipeline (attention-rewrite included,
// shapes bound from the data) and checks that
//   - the rewrite fired the expected number of times (one FusedAttention
//     per attention layer) and left no Softmax behind in those models;
//   - the outputs match the unoptimised run and the stored expected outputs
//     (default tolerances, interp/Compare.h);
//   - fusion made one "attention" kernel per FusedAttention carrying the
//     score_mod / mask strings.
// Also unit tests of the expression language (ir/ScoreExpr.h).
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "ir/ScoreExpr.h"
#include "passes/Pass.h"
#include "passes/Pipeline.h"
#include "passes/cost/ArithmeticIntensity.h"
#include "test/unit/TestModels.h"
#include "ir/Parser.h"
#include "ir/ShapeInference.h"

namespace fusec::passes {
namespace {

namespace fs = std::filesystem;

/// Attention layers per shared model (README.md of the models).
const std::map<std::string, int> &expectedAttention() {
  static const auto *m = new std::map<std::string, int>{
      {"gpt2_tiny", 2}, {"bert_tiny", 2}, {"llama_tiny_dynamo", 2}, {"vit_tiny_dynamo", 2},
      {"attn_causal_sdpa", 1}, {"attn_alibi", 1}, {"mlp_ln_gelu", 0}};
  return *m;
}

class AttentionModels : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionModels, FiresAndKeepsOutputs) {
  auto model = testing::loadSharedModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  ir::Graph &g = *model->graph;
  const std::map<std::string, ir::Tensor> &inputs = model->feeds;
  const std::vector<ir::Tensor> &expected = model->expected;
  auto before = interp::runGraph(g, inputs);
  ASSERT_TRUE(before.ok()) << before.status();

  PassContext ctx;
  absl::Status st = testing::runPipeline(*model, ctx);
  ASSERT_TRUE(st.ok()) << st;

  int fused = 0, softmax = 0;
  for (const ir::Node *n : g.nodes()) {
    fused += n->kind() == ir::OpKind::kFusedAttention;
    softmax += n->kind() == ir::OpKind::kSoftmax;
  }
  auto it = expectedAttention().find(GetParam());
  if (it != expectedAttention().end()) {
    EXPECT_EQ(fused, it->second) << "FusedAttention nodes";
    EXPECT_EQ(ctx.statistics["attention-rewrite.fused"], it->second);
    if (it->second > 0) {
      EXPECT_EQ(softmax, 0) << "a Softmax survived";
    }
  }
  int attnKernels = 0;
  for (const Kernel &k : ctx.fusionPlan.kernels)
    if (k.kind == KernelKind::kAttention) {
      ++attnKernels;
      std::cout << "[attention] " << GetParam() << " " << k.name << ": score_mod '" << k.scoreMod
                << "' mask '" << k.mask << "'\n";
    }
  EXPECT_EQ(attnKernels, fused);
  for (const Refusal &r : ctx.fusionPlan.refusals)
    EXPECT_EQ(r.reason.rfind("attention rewrite:", 0), std::string::npos)
        << r.producer << " -> " << r.consumer << ": " << r.reason;

  auto after = interp::runGraph(g, inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < after->size(); ++i) {
    interp::CompareResult c = interp::compareTensors((*after)[i], (*before)[i]);
    EXPECT_TRUE(c.pass) << "output " << i << " vs unoptimised: " << c.message;
    if (i < expected.size()) {
      interp::CompareResult e = interp::compareTensors((*after)[i], expected[i]);
      EXPECT_TRUE(e.pass) << "output " << i << " vs expected: " << e.message;
    }
  }
}

/// Masks computed in the graph (issue: masks from the graph, whatever the
/// exporter did): with the padding input replaced by left padding (batch 0:
/// the first keys padded, so its first query rows see no key), all padding
/// (batch 1: every row fully masked) and none, the fused graph computes what
/// the unfused one does; in the causal LMs the causal part is the structural
/// mask and the exporter's finite fill makes fully masked rows the mean of V.
TEST_P(AttentionModels, PaddingMasksFromTheGraphKeepOutputs) {
  auto model = testing::loadSharedModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  auto mask = model->feeds.find("attention_mask");
  if (mask == model->feeds.end()) GTEST_SKIP() << "no attention_mask input";
  ir::Tensor &am = mask->second;
  ASSERT_EQ(am.rank(), 2);
  const int64_t B = am.shape()[0], S = am.shape()[1];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      am.setInt(b * S + s, b == 0 ? (s >= S / 3 ? 1 : 0) : b == 1 ? 0 : (s < S - 2 ? 1 : 0));
  ir::Graph &g = *model->graph;
  auto before = interp::runGraph(g, model->feeds);
  ASSERT_TRUE(before.ok()) << before.status();
  PassContext ctx;
  absl::Status st = testing::runPipeline(*model, ctx);
  ASSERT_TRUE(st.ok()) << st;
  for (const ir::Node *n : g.nodes()) {
    if (n->kind() != ir::OpKind::kFusedAttention) continue;
    std::cout << "[attention] " << GetParam() << ": score_mod '" << n->getString("score_mod", "") << "' mask '"
              << n->getString("mask", "") << "' masked_rows '" << n->getString("masked_rows", "") << "'\n";
    // No input of the node is a materialised [.., Sq, Sk] mask any more.
    for (int i = 3; i < n->numInputs(); ++i) {
      const ir::TensorType &t = n->input(i)->type();
      ASSERT_TRUE(t.rankKnown);
      const int64_t r = t.rank();
      EXPECT_TRUE(r < 2 || t.shape[r - 2].value == 1 || t.shape[r - 1].value == 1)
          << "bias " << i - 3 << " of " << n->name() << " is a full score-sized tensor";
    }
    if (GetParam() == "gpt2_tiny" || GetParam() == "llama_tiny_dynamo") {
      EXPECT_EQ(n->getString("mask", ""), "k <= q") << n->name();
      EXPECT_EQ(n->getString("masked_rows", ""), "mean") << n->name();
    }
  }
  auto after = interp::runGraph(g, model->feeds);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < after->size(); ++i) {
    interp::CompareResult c = interp::compareTensors((*after)[i], (*before)[i]);
    EXPECT_TRUE(c.pass) << "output " << i << " vs unoptimised: " << c.message;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, AttentionModels,
                         ::testing::ValuesIn(testing::sharedModelNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AttentionModels);

TEST(AttentionOp, CostShapeAndInterpreterErrors) {
  auto g = ir::parseGraph(R"(graph @a(%q: f32[2,4,16,64], %k: f32[2,2,32,64], %v: f32[2,2,32,64], %b: f32[2,1,1,32]) -> (%y) {
  %y = "FusedAttention"(%q, %k, %v, %b) {kv_num_heads = 2, mask = "k <= q + 16", num_heads = 4, scale = 0.125, score_mod = "score + bias0"} : f32[2,4,16,64]
  return %y
})");
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Node *n = (*g)->nodes()[0];
  OpCost c = opCost(*n);
  ASSERT_TRUE(c.known);
  EXPECT_EQ(c.flops, 4.0 * 2 * 4 * 16 * 32 * 64);  // 4·B·H·Sq·Sk·D
  EXPECT_EQ(c.bytesRead, 4.0 * (2 * 4 * 16 * 64 + 2 * 2 * 32 * 64 * 2 + 2 * 32));
  EXPECT_EQ(c.bytesWritten, 4.0 * 2 * 4 * 16 * 64);
  // Shape inference agrees with the declared type.
  auto t = ir::computeNodeTypes(*n);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0], n->output(0)->type());
  // The interpreter rejects a bad expression and a head count mismatch.
  ir::Tensor q(ir::DType::kF32, {1, 3, 2, 4}), kv(ir::DType::kF32, {1, 2, 2, 4});
  std::vector<const ir::Tensor *> ins{&q, &kv, &kv};
  ir::Graph g2;
  ir::Value *vq = g2.addInput("q", ir::TensorType(ir::DType::kF32, {1, 3, 2, 4}));
  ir::Value *vk = g2.addInput("k", ir::TensorType(ir::DType::kF32, {1, 2, 2, 4}));
  ir::Node *bad = g2.addNode("FusedAttention", {vq, vk, vk}, {"y"}, {{"score_mod", ir::Attribute(std::string("score +"))}});
  auto r = interp::evaluateNode(*bad, ins);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  bad->setAttr("score_mod", ir::Attribute(std::string("")));
  r = interp::evaluateNode(*bad, ins);  // 3 query heads, 2 kv heads
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

// The key mask operand (key_mask): the interpreter drops the keys it masks,
// and a key_mask that names no bias or a bias that is not per key is a clear
// error, not a crash.
TEST(AttentionOp, KeyMaskOperand) {
  auto g = ir::parseGraph(R"(graph @a(%q: f32[2,1,3,4], %k: f32[2,1,5,4], %v: f32[2,1,5,4], %m: bool[2,1,1,5]) -> (%y) {
  %y = "FusedAttention"(%q, %k, %v, %m) {key_mask = 0, kv_num_heads = 1, mask = "", num_heads = 1, scale = 0.5, score_mod = ""} : f32[2,1,3,4]
  return %y
})");
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Node *n = (*g)->nodes()[0];
  ir::Tensor q(ir::DType::kF32, {2, 1, 3, 4}), k(ir::DType::kF32, {2, 1, 5, 4}), v(ir::DType::kF32, {2, 1, 5, 4});
  for (int64_t i = 0; i < q.numElements(); ++i) q.setDouble(i, 0.1 * (i % 7) - 0.3);
  for (int64_t i = 0; i < k.numElements(); ++i) k.setDouble(i, 0.05 * (i % 5));
  for (int64_t i = 0; i < v.numElements(); ++i) v.setDouble(i, (i / 4) % 5 >= 3 ? 1000.0 : static_cast<double>(i));
  ir::Tensor m(ir::DType::kBool, {2, 1, 1, 5});
  const int keep[10] = {1, 1, 1, 0, 0, 0, 0, 0, 0, 0};  // batch 1: every key masked
  for (int i = 0; i < 10; ++i) m.setDouble(i, keep[i]);
  auto r = interp::evaluateNode(*n, {&q, &k, &v, &m});
  ASSERT_TRUE(r.ok()) << r.status();
  const ir::Tensor &o = (*r)[0];
  // Batch 0 reads keys 0..2 only (rows 3, 4 of V hold 1000): outputs < 12.
  for (int64_t i = 0; i < 3 * 4; ++i) EXPECT_LT(o.getDouble(i), 12.0) << i;
  // Batch 1: no live key, NaN (masked_rows "" as the unfused softmax).
  EXPECT_TRUE(std::isnan(o.getDouble(3 * 4)));
  // Errors.
  ir::Node *bad = (*g)->nodes()[0];
  bad->setAttr("key_mask", ir::Attribute(int64_t{1}));
  EXPECT_EQ(interp::evaluateNode(*bad, {&q, &k, &v, &m}).status().code(), absl::StatusCode::kInvalidArgument);
  auto g2 = ir::parseGraph(R"(graph @a(%q: f32[2,1,3,4], %k: f32[2,1,5,4], %v: f32[2,1,5,4], %m: bool[2,1,3,5]) -> (%y) {
  %y = "FusedAttention"(%q, %k, %v, %m) {key_mask = 0, kv_num_heads = 1, mask = "", num_heads = 1, scale = 0.5, score_mod = ""} : f32[2,1,3,4]
  return %y
})");
  ASSERT_TRUE(g2.ok()) << g2.status();
  auto at = ir::readAttentionAttrs(*(*g2)->nodes()[0]);
  ASSERT_FALSE(at.ok());
  EXPECT_NE(std::string(at.status().message()).find("not per key"), std::string::npos) << at.status();
}

// --- expression language ---------------------------------------------------

ir::ScoreExpr parse(const std::string &s, int biases = 2, std::vector<std::string> tables = {"slope"}) {
  ir::ScoreExprContext ctx;
  ctx.numBiases = biases;
  ctx.tables = std::move(tables);
  auto e = ir::parseScoreExpr(s, ctx);
  EXPECT_TRUE(e.ok()) << s << ": " << e.status();
  return e.ok() ? *e : ir::ScoreExpr{};
}

TEST(ScoreExpr, RoundTripsCanonicalText) {
  for (const char *s : {"tanh(score / 30) * 30", "score + bias0", "score + slope[h] * (k - q)",
                        "k <= q && q - k < 256", "bias1 ? score : -inf", "where(k > q, -1e30, score)",
                        "-score", "!(k == q) || b != 0", "max(score, -5.5) - min(q, k) / 2",
                        "abs(k - q) * 0.5 + exp(log(sqrt(2.0)))"}) {
    ir::ScoreExpr e = parse(s);
    const std::string c = e.str();
    ir::ScoreExpr e2 = parse(c);
    EXPECT_EQ(e2.str(), c) << s;
  }
  EXPECT_EQ(parse("tanh(score / 30) * 30").str(), "tanh((score / 30)) * 30");
  EXPECT_EQ(parse("score + slope[h] * (k - q)").str(), "score + (slope[h] * (k - q))");
  EXPECT_TRUE(parse("  ").empty());
}

TEST(ScoreExpr, EvaluatesWithF32AndIntegerSemantics) {
  std::map<std::string, std::vector<float>> tables{{"slope", {0.5f, 0.25f}}};
  ir::ScoreEnv env;
  env.score = 2.0f;
  env.h = 1;
  env.q = 5;
  env.k = 2;
  env.tables = &tables;
  env.bias = [](int i) { return i == 0 ? 1.5f : 0.0f; };
  EXPECT_FLOAT_EQ(ir::evalScoreExpr(parse("score + slope[h] * (k - q)"), env), 2.0f - 0.75f);
  EXPECT_EQ(ir::evalScoreExpr(parse("k <= q"), env), 1.0);
  EXPECT_EQ(ir::evalScoreExpr(parse("(k - q) / 2"), env), -1.0);  // truncates toward zero
  EXPECT_EQ(ir::evalScoreExpr(parse("q / 0"), env), 0.0);
  EXPECT_FLOAT_EQ(ir::evalScoreExpr(parse("score + bias0"), env), 3.5f);
  EXPECT_TRUE(std::isinf(ir::evalScoreExpr(parse("bias1 ? score : -inf"), env)));
  EXPECT_FLOAT_EQ(ir::evalScoreExpr(parse("tanh(score / 30) * 30"), env),
                  static_cast<float>(std::tanh(2.0f / 30.0f) * 30.0f));
  EXPECT_TRUE(std::isnan(ir::evalScoreExpr(parse("slope[q]"), env)));  // out of range
}

TEST(ScoreExpr, RejectsBadText) {
  ir::ScoreExprContext ctx;
  ctx.numBiases = 1;
  ctx.tables = {"alibi"};
  for (const char *s : {"score +", "(score", "bias1", "foo", "tanh(score, 2)", "slope[h]",
                        "score ? ", "1e", "99999999999999999", "k <= q)", "score[1]"}) {
    auto e = ir::parseScoreExpr(s, ctx);
    EXPECT_FALSE(e.ok()) << s;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << s;
    }
  }
  ir::ScoreExprContext mask;
  mask.allowScore = false;
  mask.allowTables = false;
  EXPECT_FALSE(ir::parseScoreExpr("score > 0", mask).ok());
  std::string deep(500, '(');
  EXPECT_FALSE(ir::parseScoreExpr(deep + "score" + std::string(500, ')'), ctx).ok());
}

}  // namespace
}  // namespace fusec::passes
