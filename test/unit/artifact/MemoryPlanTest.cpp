//===- MemoryPlanTest.cpp - Storage classes and arena planning -------------===//
//
// planArena on hand-made live ranges (disjoint lifetimes share memory,
// overlapping ones never do, best-fit gap choice, alignment), and planMemory
// on small hand-built graphs with hand-made steps (no codegen involved):
// inputs/outputs/weights/aliases/arena, output copies, views of outputs,
// liveness extended through aliases, static-shape errors.
//
//===----------------------------------------------------------------------===//
#include "program/MemoryPlan.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/Graph.h"

namespace fusec::program {
namespace {

using ir::DType;
using ir::TensorType;
using ir::Value;

bool overlapsInMemory(int64_t o1, int64_t b1, int64_t o2, int64_t b2) {
  return o1 < o2 + b2 && o2 < o1 + b1;
}

/// Checks the planArena invariants for \p r.
void checkArena(const std::vector<LiveRange> &r, const std::vector<int64_t> &off, int64_t total) {
  ASSERT_EQ(off.size(), r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(off[i] % kBufferAlignment, 0) << i;
    EXPECT_LE(off[i] + r[i].bytes, total) << i;
    for (size_t j = i + 1; j < r.size(); ++j) {
      bool timeOverlap = !(r[i].lastStep < r[j].firstStep || r[j].lastStep < r[i].firstStep);
      if (timeOverlap && r[i].bytes > 0 && r[j].bytes > 0) {
        EXPECT_FALSE(overlapsInMemory(off[i], r[i].bytes, off[j], r[j].bytes)) << i << " " << j;
      }
    }
  }
}

TEST(PlanArena, Empty) {
  int64_t total = -1;
  EXPECT_TRUE(planArena({}, 256, &total).empty());
  EXPECT_EQ(total, 0);
}

TEST(PlanArena, DisjointLifetimesShareMemory) {
  std::vector<LiveRange> r = {{1000, 0, 1}, {1000, 2, 3}, {800, 4, 5}};
  int64_t total = 0;
  auto off = planArena(r, 256, &total);
  checkArena(r, off, total);
  EXPECT_EQ(off[0], 0);
  EXPECT_EQ(off[1], 0);
  EXPECT_EQ(off[2], 0);
  EXPECT_EQ(total, 1024);
}

TEST(PlanArena, OverlappingLifetimesAreDisjointAndAligned) {
  std::vector<LiveRange> r = {{1000, 0, 2}, {100, 1, 3}, {300, 2, 4}};
  int64_t total = 0;
  auto off = planArena(r, 256, &total);
  checkArena(r, off, total);
  EXPECT_EQ(off[0], 0);     // biggest first
  EXPECT_EQ(off[2], 1024);  // after the 1000-byte buffer, aligned
  EXPECT_EQ(off[1], 1024 + 512);
  EXPECT_EQ(total, 1024 + 512 + 256);
}

TEST(PlanArena, BestFitPicksSmallestGap) {
  // Live all along: A (512 @0), hole, B ... built so that two gaps exist.
  // big0 [0,9] 1024, small gap made by a short-lived buffer freed early.
  std::vector<LiveRange> r = {
      {4096, 0, 0},  // early, gives room at offset 0 for later short ones
      {1024, 1, 9},  // long-lived
      {512, 1, 9},   // long-lived
      {256, 5, 6},   // fits in a gap
  };
  int64_t total = 0;
  auto off = planArena(r, 256, &total);
  checkArena(r, off, total);
  // The early 4096 buffer is placed first at 0; the long-lived ones overlap
  // each other but not it, so they also start at 0.
  EXPECT_EQ(off[0], 0);
  EXPECT_EQ(off[1], 0);
  EXPECT_EQ(off[2], 1024);
  EXPECT_EQ(off[3], 1536);
  EXPECT_EQ(total, 4096);
}

TEST(PlanArena, BestFitPrefersTightGapOverFirstGap) {
  // Blockers B1, B2 die at step 4; P1, P2 live on. At step 5 the live
  // buffers leave two holes: [0,1024) and [1280,1536). Q (200 bytes) takes
  // the tight one (best fit), not the first one (first fit).
  std::vector<LiveRange> r = {
      {1024, 0, 4},  // B1 @0
      {256, 0, 9},   // P1 @1024
      {256, 0, 4},   // B2 @1280
      {256, 0, 9},   // P2 @1536
      {200, 5, 5},   // Q
  };
  int64_t total = 0;
  auto off = planArena(r, 256, &total);
  checkArena(r, off, total);
  EXPECT_EQ(off, (std::vector<int64_t>{0, 1024, 1280, 1536, 1280}));
  EXPECT_EQ(total, 1792);
}

TEST(PlanArena, ZeroSizedBuffers) {
  std::vector<LiveRange> r = {{0, 0, 3}, {512, 0, 3}, {0, 1, 1}};
  int64_t total = 0;
  auto off = planArena(r, 256, &total);
  checkArena(r, off, total);
  EXPECT_EQ(total, 512);
}

TEST(PlanArena, RandomisedInvariants) {
  uint64_t seed = 12345;
  auto next = [&]() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>(seed >> 33);
  };
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<LiveRange> r;
    int64_t naive = 0;
    for (int i = 0; i < 40; ++i) {
      int a = static_cast<int>(next() % 30), b = static_cast<int>(next() % 30);
      r.push_back({next() % 5000, std::min(a, b), std::max(a, b)});
      naive += alignUp(r.back().bytes, 256);
    }
    int64_t total = 0;
    auto off = planArena(r, 256, &total);
    checkArena(r, off, total);
    EXPECT_LE(total, naive);
  }
}

//===----------------------------------------------------------------------===//
// planMemory on hand-built graphs
//===----------------------------------------------------------------------===//

TensorType f32(std::vector<int64_t> s) {
  return TensorType::fromShape(DType::kF32, s);
}

Value *node(ir::Graph &g, const std::string &op, std::vector<Value *> in, const std::string &out,
            TensorType t) {
  ir::Node *n = g.addNode(op, std::move(in), {out});
  n->output(0)->setType(std::move(t));
  return n->output(0);
}

Step kernel(const std::string &name, std::vector<const Value *> bufs) {
  Step s;
  s.kind = Step::Kind::kKernel;
  s.name = name;
  s.symbol = "fusec_" + name;
  s.buffers = std::move(bufs);
  return s;
}

const PlannedBuffer &buf(const MemoryPlan &p, const Value *v) {
  int id = p.bufferId(v);
  EXPECT_GE(id, 0) << v->name();
  return p.buffers.at(id < 0 ? 0 : id);
}

TEST(PlanMemory, StorageClassesAndAlias) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({4, 64}));                         // 1024 bytes
  Value *w = g.addConstant("w", ir::Tensor(DType::kF32, {4, 64}));  // read
  Value *unused = g.addConstant("unused", ir::Tensor(DType::kF32, {100}));
  Value *shape = g.addConstant("shape", ir::Tensor::vectorI64({256}));
  Value *a = node(g, "Add", {x, w}, "a", f32({4, 64}));
  Value *v = node(g, "Reshape", {a, shape}, "v", f32({256}));
  Value *y = node(g, "Exp", {v}, "y", f32({256}));
  Value *z = node(g, "Relu", {unused}, "z", f32({100}));  // not named by any step
  (void)z;
  g.markOutput(y);

  auto plan = planMemory(g, {kernel("k0", {x, w, a}), kernel("k1", {v, y})});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MemoryPlan &p = *plan;
  EXPECT_EQ(buf(p, x).storage, Storage::kInput);
  EXPECT_EQ(buf(p, x).index, 0);
  EXPECT_EQ(buf(p, w).storage, Storage::kWeight);
  EXPECT_EQ(buf(p, w).offset, 0);
  EXPECT_EQ(p.bufferId(unused), -1);  // only constants a step reads
  EXPECT_EQ(p.bufferId(shape), -1);
  EXPECT_EQ(buf(p, a).storage, Storage::kArena);
  EXPECT_EQ(buf(p, v).storage, Storage::kAlias);
  EXPECT_EQ(buf(p, v).of, p.bufferId(a));
  EXPECT_EQ(buf(p, v).offset, 0);
  EXPECT_EQ(buf(p, y).storage, Storage::kOutput);
  EXPECT_EQ(buf(p, y).index, 0);
  // a lives until k1 reads it through the alias.
  EXPECT_EQ(buf(p, a).firstStep, 0);
  EXPECT_EQ(buf(p, a).lastStep, 1);
  EXPECT_EQ(p.arenaBytes, 1024);
  EXPECT_EQ(p.weightsBytes, 1024);
  EXPECT_EQ(p.inputs, std::vector<int>{p.bufferId(x)});
  EXPECT_EQ(p.outputs, std::vector<int>{p.bufferId(y)});
  EXPECT_TRUE(p.copies.empty());
  EXPECT_NE(p.summary().find("1 alias"), std::string::npos) << p.summary();
}

TEST(PlanMemory, ArenaReusesMemoryOfDeadBuffers) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({1024}));  // 4 KiB each
  Value *a = node(g, "Exp", {x}, "a", f32({1024}));
  Value *b = node(g, "Exp", {a}, "b", f32({1024}));
  Value *c = node(g, "Exp", {b}, "c", f32({1024}));
  Value *d = node(g, "Exp", {c}, "d", f32({1024}));
  Value *y = node(g, "Exp", {d}, "y", f32({1024}));
  g.markOutput(y);
  auto plan = planMemory(g, {kernel("k0", {x, a}), kernel("k1", {a, b}), kernel("k2", {b, c}),
                             kernel("k3", {c, d}), kernel("k4", {d, y})});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // a,b,c,d: each overlaps only its neighbours -> two slots.
  EXPECT_EQ(plan->arenaNaiveBytes, 4 * 4096);
  EXPECT_EQ(plan->arenaBytes, 2 * 4096);
  EXPECT_NE(buf(*plan, a).offset, buf(*plan, b).offset);
  EXPECT_EQ(buf(*plan, a).offset, buf(*plan, c).offset);
  EXPECT_EQ(buf(*plan, b).offset, buf(*plan, d).offset);
}

TEST(PlanMemory, OutputsNeverInArena) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({8}));
  Value *k = g.addConstant("k", ir::Tensor(DType::kF32, {8}));
  Value *shape = g.addConstant("shape", ir::Tensor::vectorI64({2, 4}));
  Value *a = node(g, "Exp", {x}, "a", f32({8}));
  Value *view1 = node(g, "Reshape", {a, shape}, "view1", f32({2, 4}));  // output: claims a
  Value *view2 = node(g, "Flatten", {view1}, "view2", f32({2, 4}));     // output: copy from a
  Value *b = node(g, "Exp", {a}, "b", f32({8}));  // also an output, written directly
  Value *idv = node(g, "Identity", {x}, "idv", f32({8}));  // view of an input
  g.markOutput(view1);
  g.markOutput(view2);
  g.markOutput(b);
  g.markOutput(x);    // an input as output
  g.markOutput(k);    // a constant as output
  g.markOutput(idv);  // a view of an input
  auto plan = planMemory(g, {kernel("k0", {x, a}), kernel("k1", {view2, b})});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MemoryPlan &p = *plan;
  ASSERT_EQ(p.outputs.size(), 6u);
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const PlannedBuffer &o = p.buffers[p.outputs[i]];
    EXPECT_EQ(o.storage, Storage::kOutput);
    EXPECT_EQ(o.index, static_cast<int>(i));
  }
  for (const PlannedBuffer &b : p.buffers) {
    if (b.storage == Storage::kArena) ADD_FAILURE() << "arena buffer " << b.name;
    if (b.storage == Storage::kAlias) {
      EXPECT_NE(p.buffers[b.of].storage, Storage::kAlias) << "alias chains resolve to the root";
    }
  }
  // a became an alias of output view1: the kernel writes the caller's buffer.
  EXPECT_EQ(buf(p, a).storage, Storage::kAlias);
  EXPECT_EQ(buf(p, a).of, p.outputs[0]);
  EXPECT_EQ(p.arenaBytes, 0);
  // Copies: view2 (from a), x (input), k (weight), idv (from x).
  ASSERT_EQ(p.copies.size(), 4u);
  EXPECT_EQ(p.copies[0].dst, p.outputs[1]);
  EXPECT_EQ(p.buffers[p.copies[0].src].value, a);
  EXPECT_EQ(p.copies[1].dst, p.outputs[3]);
  EXPECT_EQ(p.buffers[p.copies[1].src].storage, Storage::kInput);
  EXPECT_EQ(p.copies[2].dst, p.outputs[4]);
  EXPECT_EQ(p.buffers[p.copies[2].src].storage, Storage::kWeight);
  EXPECT_EQ(p.copies[3].dst, p.outputs[5]);
  EXPECT_EQ(p.buffers[p.copies[3].src].storage, Storage::kInput);
  for (const auto &c : p.copies) EXPECT_EQ(c.bytes, 32);
  // view2's own buffer (read by k1) is an alias of the output view1.
  EXPECT_EQ(buf(p, view2).storage, Storage::kAlias);
  EXPECT_EQ(buf(p, view2).of, p.outputs[0]);
}

TEST(PlanMemory, CopySourceStaysLiveUntilTheCopy) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({64}));
  Value *shape = g.addConstant("shape", ir::Tensor::vectorI64({8, 8}));
  Value *a = node(g, "Exp", {x}, "a", f32({64}));
  Value *b = node(g, "Exp", {a}, "b", f32({64}));
  Value *va = node(g, "Reshape", {a, shape}, "va", f32({8, 8}));
  Value *c = node(g, "Exp", {b}, "c", f32({64}));
  Value *d = node(g, "Exp", {c}, "d", f32({64}));
  g.markOutput(a);   // written directly
  g.markOutput(va);  // view of an output: copy, a is not claimable
  g.markOutput(d);
  auto plan = planMemory(g, {kernel("k0", {x, a}), kernel("k1", {a, b}), kernel("k2", {b, c}),
                             kernel("k3", {c, d})});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->copies.size(), 1u);
  EXPECT_EQ(plan->copies[0].src, plan->outputs[0]);
  EXPECT_EQ(plan->copies[0].dst, plan->outputs[1]);
  EXPECT_EQ(plan->copies[0].name, "copy_va");
  // b [1,2] and c [2,3] overlap at step 2.
  EXPECT_NE(buf(*plan, b).offset, buf(*plan, c).offset);
}

TEST(PlanMemory, WeightsAreAlignedInFirstUseOrder) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({3}));
  Value *w1 = g.addConstant("w1", ir::Tensor(DType::kF32, {3}));   // 12 bytes
  Value *w2 = g.addConstant("w2", ir::Tensor(DType::kI64, {70}));  // 560 bytes
  Value *w3 = g.addConstant("w3", ir::Tensor(DType::kF32, {3}));
  Value *a = node(g, "Add", {x, w2}, "a", f32({3}));
  Value *y = node(g, "Add", {a, w1}, "y", f32({3}));
  (void)w3;
  g.markOutput(y);
  auto plan = planMemory(g, {kernel("k0", {x, w2, a}), kernel("k1", {a, w1, w3, y})});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(buf(*plan, w2).offset, 0);
  EXPECT_EQ(buf(*plan, w1).offset, 768);
  EXPECT_EQ(buf(*plan, w3).offset, 1024);
  EXPECT_EQ(plan->weightsBytes, 1024 + 12);
  EXPECT_EQ(plan->weights.size(), 3u);
}

TEST(PlanMemory, GemmOperandsAreNamed) {
  ir::Graph g;
  Value *x = g.addInput("x", f32({4, 8}));
  Value *w = g.addConstant("w", ir::Tensor(DType::kF32, {8, 16}));
  Value *bias = g.addConstant("bias", ir::Tensor(DType::kF32, {16}));
  Value *y = node(g, "MatMul", {x, w}, "y", f32({4, 16}));
  g.markOutput(y);
  Step s;
  s.kind = Step::Kind::kGemm;
  s.name = "k0_gemm";
  s.gemm.a = x;
  s.gemm.b = w;
  s.gemm.bias = bias;
  s.gemm.d = y;
  auto plan = planMemory(g, {s});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(buf(*plan, bias).storage, Storage::kWeight);
  EXPECT_EQ(buf(*plan, bias).offset, 512);
  EXPECT_EQ(buf(*plan, y).storage, Storage::kOutput);
}

TEST(PlanMemory, QuantisedDTypes) {
  // i16 / u16 / u32 / u64 (and u8 / i8) tensors are planned with their
  // manifest names and element sizes (they used to be refused as not in the
  // artifact format).
  for (const auto &[dt, name] : std::vector<std::pair<DType, std::string>>{
           {DType::kI16, "i16"}, {DType::kU16, "u16"}, {DType::kU32, "u32"}, {DType::kU64, "u64"},
           {DType::kU8, "u8"}, {DType::kI8, "i8"}}) {
    ir::Graph g;
    Value *x = g.addInput("x", TensorType::fromShape(dt, {3, 5}));
    Value *y = node(g, "Neg", {x}, "y", TensorType::fromShape(dt, {3, 5}));
    g.markOutput(y);
    auto plan = planMemory(g, {kernel("k0", {x, y})});
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status();
    ASSERT_EQ(plan->buffers.size(), 2u);
    EXPECT_EQ(plan->buffers[0].bytes, 15 * ir::dtypeSize(dt)) << name;
    EXPECT_EQ(manifestDTypeName(dt), name);
  }
}

TEST(PlanMemory, Errors) {
  {
    ir::Graph g;
    Value *x = g.addInput("x", TensorType(DType::kF32, {ir::Dim::symbolic("batch"), 4}));
    Value *y = node(g, "Exp", {x}, "y", TensorType(DType::kF32, {ir::Dim::symbolic("batch"), 4}));
    g.markOutput(y);
    auto plan = planMemory(g, {kernel("k0", {x, y})});
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find("'x'"), std::string::npos) << plan.status();
  }
  {
    ir::Graph g;
    Value *x = g.addInput("x", TensorType::fromShape(DType::kString, {4}));
    g.markOutput(node(g, "Identity", {x}, "y", TensorType::fromShape(DType::kString, {4})));
    auto plan = planMemory(g, {});
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented) << plan.status();
    EXPECT_NE(plan.status().message().find("string"), std::string::npos) << plan.status();
  }
  {
    ir::Graph g;
    Value *x = g.addInput("x", f32({4}));
    Value *y = node(g, "Exp", {x}, "y", f32({4}));
    g.markOutput(y);
    auto plan = planMemory(g, {});  // nothing writes y
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal) << plan.status();
  }
  {
    ir::Graph g;
    Value *x = g.addInput("x", f32({4}));
    Value *y = node(g, "Exp", {x}, "y", f32({4}));
    g.markOutput(y);
    g.markOutput(y);
    auto plan = planMemory(g, {kernel("k0", {x, y})});
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  }
}

}  // namespace
}  // namespace fusec::program
