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

TensorType boolScalar() { return TensorType::fromShape(DType::kBool, {}); }

// Guards (GuardTerm) name their condition like a use of their own: every
// mutation keeps Value::guardUsers() in step, the condition stays live and
// is ordered before the node, and operand uses do not count it.
TEST(Graph, GuardsFollowEveryMutation) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *s = g.addInput("s", f32({2}));
  Node *cmp = g.addNode("Greater", {x, s}, {"c0"});  // not scalar; the type is not checked here
  cmp->output(0)->setType(boolScalar());
  Value *c = cmp->output(0);
  Node *relu = g.addNode("Relu", {x}, {"r"});
  relu->setGuard({{c, true}, {c, false}});
  g.markOutput(relu->output(0));
  EXPECT_EQ(c->numUses(), 0);  // operand uses only
  EXPECT_EQ(c->guardUsers().size(), 2u);
  EXPECT_EQ(describeGuard(relu->guard()), "when 'c0' and not 'c0'");
  EXPECT_EQ(describeGuard({}), "always");

  // The condition is live through the guard alone.
  EXPECT_EQ(g.removeDeadNodes(), 0);
  EXPECT_EQ(g.numNodes(), 2);

  // replaceAllUsesWith moves guard terms too.
  Value *d = g.addInput("d", boolScalar());
  g.replaceAllUsesWith(c, d);
  EXPECT_TRUE(c->guardUsers().empty());
  EXPECT_EQ(d->guardUsers().size(), 2u);
  EXPECT_EQ(relu->guard()[0].cond, d);
  EXPECT_FALSE(relu->guard()[1].when);
  EXPECT_EQ(g.removeDeadNodes(), 1);  // the Greater is dead now

  // topoSort orders a node after its guard's producer.
  Node *late = g.addNode("Not", {d}, {"nd"});
  relu->setGuard({{late->output(0), true}});
  EXPECT_TRUE(d->guardUsers().empty());
  ASSERT_TRUE(g.topoSort().ok());
  EXPECT_EQ(g.nodes()[0], late);
  EXPECT_EQ(g.nodes()[1], relu);

  // Erasing or detaching a node drops its guard uses.
  g.detachDeadNode(relu);
  EXPECT_TRUE(late->output(0)->guardUsers().empty());
  relu->setGuard({{d, true}});
  g.eraseNode(relu);
  EXPECT_TRUE(d->guardUsers().empty());
}

// propagateGuards gives a node the guard of all its users (a rewrite made
// it unguarded), but not when a user runs always, when the node's result is
// a graph output, or when the condition is computed after it.
TEST(Graph, PropagateGuards) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *c = g.addInput("c", boolScalar());
  Node *a = g.addNode("Abs", {x}, {"a"});        // read only by guarded nodes
  Node *b = g.addNode("Neg", {a->output(0)}, {"b"});
  b->setGuard({{c, true}});
  Node *e = g.addNode("Exp", {a->output(0)}, {"e"});
  e->setGuard({{c, true}});
  Node *k = g.addNode("Relu", {x}, {"k"});       // read by an unguarded node too
  Node *w = g.addNode("Where", {c, b->output(0), k->output(0)}, {"w"});
  Node *s = g.addNode("Add", {w->output(0), e->output(0)}, {"s"});
  g.markOutput(s->output(0));
  EXPECT_EQ(propagateGuards(g), 1);  // a: its users b and e both run when 'c'
  EXPECT_EQ(a->guard().size(), 1u);
  EXPECT_EQ(a->guard()[0].cond, c);
  EXPECT_TRUE(k->guard().empty());  // read by the Where, which runs always
  EXPECT_TRUE(w->guard().empty());
  EXPECT_EQ(propagateGuards(g), 0);  // nothing left to do

  // A condition computed after the node cannot guard it.
  Graph h;
  Value *y = h.addInput("y", f32({2}));
  Node *p = h.addNode("Abs", {y}, {"p"});
  Node *cond = h.addNode("IsNaN", {y}, {"q"});
  cond->output(0)->setType(boolScalar());
  Node *u = h.addNode("Neg", {p->output(0)}, {"u"});
  u->setGuard({{cond->output(0), false}});
  h.markOutput(u->output(0));
  EXPECT_EQ(propagateGuards(h), 0);
  EXPECT_TRUE(p->guard().empty());
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
