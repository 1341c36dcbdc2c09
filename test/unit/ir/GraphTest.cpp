//===- GraphTest.cpp - Use lists and names of the graph IR -----------------===//
#include "ir/Graph.h"

#include "gtest/gtest.h"

namespace fusec::ir {
namespace {

TensorType f32(std::vector<int64_t> shape) {
  return TensorType::fromShape(DType::kF32, shape);
}

TEST(Graph, UseListsFollowEveryMutation) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *y = g.addInput("y", f32({2}));
  Node *add = g.addNode("Add", {x, x}, {"a"});
  Node *relu = g.addNode("Relu", {add->output(0)}, {"r"});
  g.markOutput(relu->output(0));
  EXPECT_EQ(x->numUses(), 2);  // one per operand slot
  EXPECT_EQ(add->output(0)->numUses(), 1);

  add->setInput(1, y);
  EXPECT_EQ(x->numUses(), 1);
  EXPECT_EQ(y->numUses(), 1);

  g.replaceAllUsesWith(x, y);
  EXPECT_EQ(x->numUses(), 0);
  EXPECT_EQ(y->numUses(), 2);
  EXPECT_EQ(add->input(0), y);

  // The graph output and the Relu's operand both move.
  Node *neg = g.addNode("Neg", {add->output(0)}, {"n"}, {}, "", relu);
  g.replaceAllUsesWith(add->output(0), neg->output(0));  // neg reads itself for a moment
  EXPECT_EQ(add->output(0)->numUses(), 0);
  neg->setInputs({y});
  EXPECT_EQ(neg->output(0)->numUses(), 1);
  EXPECT_EQ(y->numUses(), 3);

  // add is dead: removeDeadNodes drops its uses of y.
  EXPECT_EQ(g.removeDeadNodes(), 1);
  EXPECT_EQ(y->numUses(), 1);

  g.replaceAllUsesWith(relu->output(0), y);  // the graph output becomes y
  EXPECT_EQ(g.outputs()[0], y);
  g.detachDeadNode(relu);
  EXPECT_EQ(neg->output(0)->numUses(), 0);
  g.eraseNode(relu);
  g.eraseNode(neg);
  EXPECT_EQ(y->numUses(), 0);
  EXPECT_EQ(g.numNodes(), 0);
}

TEST(Graph, UniqueNameIsLinearAndNeverReuses) {
  Graph g;
  g.addInput("t", f32({1}));
  std::string last;
  for (int i = 1; i <= 20000; ++i) {
    last = g.uniqueName("t");
    g.addInput(last, f32({1}));
  }
  EXPECT_EQ(last, "t_20000");
  EXPECT_EQ(g.uniqueName("u"), "u");
  // A suffix taken by someone else is skipped.
  g.addInput("v", f32({1}));
  g.addInput("v_1", f32({1}));
  EXPECT_EQ(g.uniqueName("v"), "v_2");
}

}  // namespace
}  // namespace fusec::ir
