//===- VerifierTest.cpp - Verifier diagnostics ----------------------------===//
#include "ir/Verifier.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/Parser.h"
#include "test/unit/ir/TestUtil.h"

namespace fusec::ir {
namespace {

std::string verifyText(const std::string &text) {
  auto g = parseGraph(text);
  if (!g.ok()) return absl::StrCat("parse error: ", g.status().message());
  absl::Status s = verifyGraph(**g);
  return s.ok() ? "ok" : std::string(s.message());
}

TEST(Verifier, AcceptsWellFormedGraphs) {
  EXPECT_EQ(verifyText(testing::graphText(
                "%x: f32[b,4], %y: f32[4]",
                "%a = \"Add\"(%x, %y) : f32[b,4] loc(\"add\")\n"
                "%sh = \"Shape\"(%a) : i64[2]\n"
                "%out = \"Reshape\"(%a, %sh) : f32[b,4]\n"
                "%t = \"test.Anything\"(%out, %out, %out) : f32[9]")),
            "ok");
  // Unknown or symbolic result dims are compatible with static inferred ones.
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2,4]", "%out = \"Relu\"(%x) : f32[n,?]")),
            "ok");
}

TEST(Verifier, Arity) {
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2]", "%out = \"Add\"(%x) : f32[2] loc(\"a\")")),
            "node 'a' (Add): has 1 inputs, expected 2");
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2]",
                                          "%out, %o2 = \"Relu\"(%x) : f32[2], f32[2]")),
            "node '' (Relu): has 2 results, expected 1");
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2]", "%out = \"Gemm\"(%x, _) : f32[2]")),
            "node '' (Gemm): required input 1 is missing");
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2]", "%out = \"Concat\"() {axis = 0} : f32[2]")),
            "node '' (Concat): has 0 inputs, expected at least 1");
}

TEST(Verifier, ResultTypesMustAgreeWithInference) {
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2,4]",
                                          "%out = \"Relu\"(%x) : f32[2,5] loc(\"r\")")),
            "node 'r' (Relu): result 0 (%out) has type f32[2,5] but shape inference gives "
            "f32[2,4]");
  EXPECT_TRUE(absl::StrContains(
      verifyText(testing::graphText("%x: f32[2,4]", "%out = \"Less\"(%x, %x) : f32[2,4]")),
      "has type f32[2,4] but shape inference gives bool[2,4]"));
  EXPECT_TRUE(absl::StrContains(
      verifyText(testing::graphText("%x: f32[2,4]", "%out = \"Relu\"(%x) : f32[2,4,1]")),
      "but shape inference gives"));
  // Inconsistent inputs surface as the inference error, naming the node.
  EXPECT_EQ(verifyText(testing::graphText("%x: f32[2,4], %y: f32[3]",
                                          "%out = \"Add\"(%x, %y) : f32[*] loc(\"bad\")")),
            "'bad' (Add): cannot broadcast dimensions 4 and 3");
}

TEST(Verifier, StructuralErrors) {
  // Use before definition, in a graph built directly (the parser rejects it).
  Graph g;
  Value *x = g.addInput("x", TensorType(DType::kF32, {Dim(2)}));
  Node *late = g.addNode("Neg", {x}, {"late"}, {}, "late");
  Node *early = g.addNode("Neg", {late->output(0)}, {"early"}, {}, "early", late);
  g.markOutput(early->output(0));
  absl::Status s = verifyGraph(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'early' (Neg): input 0 (%late) is used before it is defined");

  // Duplicate names.
  Graph d;
  Value *a = d.addInput("a", TensorType(DType::kF32, {Dim(2)}));
  Node *n = d.addNode("Neg", {a}, {"a"}, {}, "dup");
  d.markOutput(n->output(0));
  EXPECT_EQ(verifyGraph(d).message(), "value name 'a' is defined more than once");

  // Graph output whose producer was erased.
  Graph o;
  Value *i = o.addInput("i", TensorType(DType::kF32, {Dim(2)}));
  Node *m = o.addNode("Neg", {i}, {"gone"});
  o.markOutput(m->output(0));
  o.eraseNode(m);
  EXPECT_EQ(verifyGraph(o).message(), "graph output %gone is not defined");
}

}  // namespace
}  // namespace fusec::ir
