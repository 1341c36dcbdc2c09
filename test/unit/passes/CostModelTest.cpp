//===- CostModelTest.cpp - Target specs, op/group costs, cost-model pass --===//
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/Graph.h"
#include "ir/Printer.h"
#include "passes/Pass.h"
#include "passes/cost/ArithmeticIntensity.h"
#include "passes/cost/TargetSpec.h"

namespace fusec::passes {
std::unique_ptr<Pass> createCostModel();

namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;

TensorType ty(DType t, std::vector<Dim> dims) { return TensorType(t, std::move(dims)); }
TensorType f32(std::vector<Dim> dims) { return ty(DType::kF32, std::move(dims)); }

/// Adds \p op with typed results (shape inference is not needed here).
ir::Node *add(ir::Graph &g, const std::string &op, std::vector<ir::Value *> in,
              std::vector<TensorType> outTypes, ir::AttributeMap attrs = {}) {
  std::vector<std::string> names;
  for (size_t i = 0; i < outTypes.size(); ++i) names.push_back(g.uniqueName(op + "_out"));
  ir::Node *n = g.addNode(op, std::move(in), names, std::move(attrs), g.uniqueName(op));
  for (size_t i = 0; i < outTypes.size(); ++i) n->output(static_cast<int>(i))->setType(outTypes[i]);
  return n;
}

TargetSpec target(const std::string &name) {
  auto t = loadBuiltinTarget(name);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : TargetSpec{};
}

//===----------------------------------------------------------------------===//
// Target specs
//===----------------------------------------------------------------------===//

TEST(TargetSpecTest, BuiltinNames) {
  EXPECT_EQ(builtinTargetNames(),
            (std::vector<std::string>{"a100", "epyc9654", "h100", "h200", "trn1", "trn2"}));
}

TEST(TargetSpecTest, AllBuiltinsLoadWithSaneValues) {
  for (const std::string &name : builtinTargetNames()) {
    SCOPED_TRACE(name);
    TargetSpec t = target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_FALSE(t.arch.empty());
    EXPECT_GE(t.datasheetMemoryBandwidth, t.memoryBandwidth);
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      EXPECT_GE(t.matrixFlops(d), t.vectorFlops(d)) << ir::dtypeName(d);
      if (t.peakMatrixFlops.count(d)) {
        EXPECT_GE(t.datasheetMatrixFlops.at(d), t.peakMatrixFlops.at(d));
      }
    }
    EXPECT_GT(t.numUnits, 0);
    EXPECT_GE(t.sources.size(), 2u);
    if (t.backend == "cpu") {
      // A host CPU: DDR bandwidth and SIMD rates, a low ridge point.
      EXPECT_GT(t.memoryBandwidth, 5e10);
      EXPECT_LT(t.memoryBandwidth, 2e12);
      EXPECT_GT(t.matrixFlops(DType::kF32), 1e11);
      EXPECT_GT(t.ridgePoint(DType::kF32), 1);
      EXPECT_LT(t.ridgePoint(DType::kF32), 100);
      continue;
    }
    bool gpu = name[0] != 't';
    EXPECT_EQ(t.backend, gpu ? "cuda" : "nki");
    EXPECT_GT(t.memoryBandwidth, 5e11);
    EXPECT_LT(t.memoryBandwidth, 1e13);
    for (DType d : {DType::kBF16, DType::kF16, DType::kF32}) {
      EXPECT_GT(t.matrixFlops(d), 1e13) << ir::dtypeName(d);
      EXPECT_LT(t.matrixFlops(d), 3e15) << ir::dtypeName(d);
      EXPECT_GT(t.vectorFlops(d), 1e12) << ir::dtypeName(d);
    }
    EXPECT_GT(t.matrixFlops(DType::kBF16), t.matrixFlops(DType::kF32));
    // Contractions in bf16 need 100-300 FLOP/byte on all of these parts.
    EXPECT_GT(t.ridgePoint(DType::kBF16), 100);
    EXPECT_LT(t.ridgePoint(DType::kBF16), 300);
    EXPECT_GT(t.onChipBytesPerUnit, 100 * 1024);
    EXPECT_EQ(t.l2Bytes > 0, gpu);
  }
}

TEST(TargetSpecTest, H200UsesMeasuredCeilings) {
  TargetSpec t = target("h200");
  EXPECT_DOUBLE_EQ(t.memoryBandwidth, 4.25e12);
  EXPECT_DOUBLE_EQ(t.datasheetMemoryBandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(t.matrixFlops(DType::kBF16), 685e12);
  EXPECT_NEAR(t.ridgePoint(DType::kBF16), 161.2, 0.1);
  EXPECT_NEAR(t.datasheetMatrixFlops.at(DType::kBF16) / t.datasheetMemoryBandwidth, 206, 1);
  EXPECT_EQ(t.numUnits, 132);
  EXPECT_EQ(t.arch, "sm_90");
}

TEST(TargetSpecTest, FlopsFallBackToF32) {
  TargetSpec t = target("trn1");
  EXPECT_DOUBLE_EQ(t.matrixFlops(DType::kI64), t.matrixFlops(DType::kF32));
  EXPECT_DOUBLE_EQ(t.vectorFlops(DType::kF64), t.vectorFlops(DType::kF32));
  TargetSpec empty;
  EXPECT_EQ(empty.matrixFlops(DType::kF32), 0);
}

TEST(TargetSpecTest, UnknownTargetListsKnownNames) {
  auto t = loadBuiltinTarget("v100");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  std::string msg(t.status().message());
  EXPECT_NE(msg.find("'v100'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a100, epyc9654, h100, h200, trn1, trn2"), std::string::npos) << msg;
}

TEST(TargetSpecTest, ParseErrors) {
  const std::string good =
      "name: \"x\" backend: \"cuda\" arch: \"sm_90\" memory_bandwidth: 1e12 "
      "matrix { dtype: \"bf16\" flops: 1e14 } vector { dtype: \"f32\" flops: 1e13 }";
  auto ok = parseTargetSpec(good);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_DOUBLE_EQ(ok->ridgePoint(DType::kBF16), 100);
  EXPECT_DOUBLE_EQ(ok->vectorRidgePoint(DType::kBF16), 10);  // falls back to f32
  EXPECT_DOUBLE_EQ(ok->datasheetMemoryBandwidth, 1e12);       // defaults to achievable

  for (const std::string &bad : {
           std::string("name: \"x\" bogus_field: 1"),
           std::string("name: \"x\" memory_bandwidth: "),
           std::string("backend: \"cuda\""),
           std::string("name: \"x\" backend: \"rocm\" memory_bandwidth: 1e12"),
           std::string("name: \"x\" backend: \"cuda\" memory_bandwidth: 0 "
                       "matrix { dtype: \"bf16\" flops: 1 } vector { dtype: \"f32\" flops: 1 }"),
           std::string("name: \"x\" backend: \"cuda\" memory_bandwidth: 1 "
                       "matrix { dtype: \"fp8\" flops: 1 } vector { dtype: \"f32\" flops: 1 }"),
           std::string("name: \"x\" backend: \"cuda\" memory_bandwidth: 1 "
                       "vector { dtype: \"f32\" flops: 1 }"),
           std::string("name: \"x\" backend: \"cuda\" memory_bandwidth: 1 "
                       "matrix { dtype: \"f32\" flops: 1 } matrix { dtype: \"f32\" flops: 2 } "
                       "vector { dtype: \"f32\" flops: 1 }"),
       }) {
    auto t = parseTargetSpec(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
  auto syntax = parseTargetSpec("name: \"x\"\nmemory_bandwidth: oops");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(std::string(syntax.status().message()).find("2:"), std::string::npos)
      << syntax.status();
}

//===----------------------------------------------------------------------===//
// Per-op costs, checked by hand
//===----------------------------------------------------------------------===//

TEST(OpCostTest, MatMulBatched) {
  ir::Graph g;
  auto *a = g.addInput("a", f32({2, 3, 4}));
  auto *b = g.addInput("b", f32({4, 5}));
  ir::Node *n = add(g, "MatMul", {a, b}, {f32({2, 3, 5})});
  OpCost c = opCost(*n);
  ASSERT_TRUE(c.known);
  EXPECT_TRUE(c.contraction);
  EXPECT_EQ(c.flops, 2 * 2 * 3 * 5 * 4);             // 2*M*N*K*batch = 240
  EXPECT_EQ(c.bytesRead, (24 + 20) * 4);
  EXPECT_EQ(c.bytesWritten, 30 * 4);
}

TEST(OpCostTest, MatMulVector) {
  ir::Graph g;
  auto *a = g.addInput("a", f32({4}));
  auto *b = g.addInput("b", f32({4, 5}));
  OpCost c = opCost(*add(g, "MatMul", {a, b}, {f32({5})}));
  EXPECT_EQ(c.flops, 2 * 5 * 4);
}

TEST(OpCostTest, Gemm) {
  ir::Graph g;
  auto *a = g.addInput("a", f32({3, 4}));
  auto *b = g.addInput("b", f32({4, 5}));
  auto *c = g.addInput("c", f32({5}));
  OpCost plain = opCost(*add(g, "Gemm", {a, b, c}, {f32({3, 5})}));
  EXPECT_EQ(plain.flops, 2 * 3 * 5 * 4 + 15);  // GEMM + bias add
  EXPECT_EQ(plain.bytes(), (12 + 20 + 5 + 15) * 4);
  OpCost scaled = opCost(*add(g, "Gemm", {a, b, c}, {f32({3, 5})},
                              {{"alpha", 2.0f}, {"beta", 0.5f}}));
  EXPECT_EQ(scaled.flops, 120 + 15 + 15 + 15);  // + alpha scale, beta scale
  OpCost noBias = opCost(*add(g, "Gemm", {a, b}, {f32({3, 5})}));
  EXPECT_EQ(noBias.flops, 120);
  auto *at = g.addInput("at", f32({4, 3}));
  OpCost trans = opCost(*add(g, "Gemm", {at, b}, {f32({3, 5})}, {{"transA", int64_t{1}}}));
  EXPECT_EQ(trans.flops, 120);  // K = A.shape[0] when transposed
}

TEST(OpCostTest, GroupedConvWithBias) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({1, 2, 5, 5}));
  auto *w = g.addConstant("w", ir::Tensor(DType::kF32, {4, 1, 3, 3}));
  auto *b = g.addConstant("b", ir::Tensor(DType::kF32, {4}));
  OpCost c = opCost(*add(g, "Conv", {x, w, b}, {f32({1, 4, 3, 3})}, {{"group", int64_t{2}}}));
  ASSERT_TRUE(c.known);
  // 2 * N*Cout*outspatial (36) * Cin/group (1) * kernel (9), + bias 36.
  EXPECT_EQ(c.flops, 2 * 36 * 1 * 9 + 36);
  EXPECT_EQ(c.bytesRead, (50 + 36 + 4) * 4);  // weights count as HBM reads
  EXPECT_EQ(c.bytesWritten, 36 * 4);
}

TEST(OpCostTest, SoftmaxAndLayerNorm) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({4, 8}));
  OpCost sm = opCost(*add(g, "Softmax", {x}, {f32({4, 8})}));
  EXPECT_EQ(sm.flops, 5 * 32);
  EXPECT_EQ(sm.bytes(), 2 * 32 * 4);
  auto *s = g.addConstant("scale", ir::Tensor(DType::kF32, {8}));
  auto *b = g.addConstant("bias", ir::Tensor(DType::kF32, {8}));
  OpCost ln = opCost(*add(g, "LayerNormalization", {x, s, b}, {f32({4, 8})}));
  EXPECT_EQ(ln.flops, 8 * 32);
  EXPECT_EQ(ln.bytes(), (32 + 8 + 8 + 32) * 4);
  EXPECT_FALSE(ln.contraction);
}

TEST(OpCostTest, PReluCumSumAndResize) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({2, 3, 4, 4}));
  auto *slope = g.addConstant("slope", ir::Tensor(DType::kF32, {3, 1, 1}));
  OpCost pr = opCost(*add(g, "PRelu", {x, slope}, {f32({2, 3, 4, 4})}));
  EXPECT_EQ(pr.flops, 2 * 96);
  EXPECT_EQ(pr.bytes(), (96 + 3 + 96) * 4);
  auto *axis = g.addConstant("axis", ir::Tensor::vectorI64({3}));
  OpCost cs = opCost(*add(g, "CumSum", {x, axis}, {f32({2, 3, 4, 4})}));
  EXPECT_EQ(cs.flops, 96);
  EXPECT_EQ(cs.bytesRead, 96 * 4);  // the axis is metadata
  auto *scales = g.addConstant("scales", ir::Tensor::fromDoubles(DType::kF32, {4}, {1, 1, 2, 2}));
  ir::Node *lin = add(g, "Resize", {x, nullptr, scales}, {f32({2, 3, 8, 8})});
  lin->setAttr("mode", ir::Attribute(std::string("linear")));
  OpCost rl = opCost(*lin);
  EXPECT_EQ(rl.flops, 2 * 4 * 384);  // 4 taps (2 axes resized), a multiply-add each
  EXPECT_EQ(rl.bytesRead, 96 * 4);
  ir::Node *cub = add(g, "Resize", {x, nullptr, scales}, {f32({2, 3, 8, 8})});
  cub->setAttr("mode", ir::Attribute(std::string("cubic")));
  EXPECT_EQ(opCost(*cub).flops, 2 * 16 * 384);
  // Nearest is a gather: no FLOPs; a downscale reads only what it uses.
  auto *half = g.addConstant("half", ir::Tensor::fromDoubles(DType::kF32, {4}, {1, 1, 0.5, 0.5}));
  OpCost rn = opCost(*add(g, "Resize", {x, nullptr, half}, {f32({2, 3, 2, 2})}));
  EXPECT_EQ(rn.flops, 0);
  EXPECT_EQ(rn.bytesRead, 24 * 4);
}

TEST(OpCostTest, GridSampleRoiAlignScansAndDet) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({2, 3, 4, 4}));
  auto *grid = g.addInput("grid", f32({2, 5, 5, 2}));
  ir::Node *lin = add(g, "GridSample", {x, grid}, {f32({2, 3, 5, 5})});
  EXPECT_EQ(opCost(*lin).flops, 2 * 4 * 150);  // 2^2 taps, a multiply-add each
  ir::Node *cub = add(g, "GridSample", {x, grid}, {f32({2, 3, 5, 5})});
  cub->setAttr("mode", ir::Attribute(std::string("cubic")));
  EXPECT_EQ(opCost(*cub).flops, 2 * 16 * 150);
  ir::Node *nn = add(g, "GridSample", {x, grid}, {f32({2, 3, 5, 5})});
  nn->setAttr("mode", ir::Attribute(std::string("nearest")));
  EXPECT_EQ(opCost(*nn).flops, 0);
  auto *rois = g.addInput("rois", f32({3, 4}));
  auto *bi = g.addInput("bi", ir::TensorType(DType::kI64, {ir::Dim(3)}));
  ir::Node *ra = add(g, "RoiAlign", {x, rois, bi}, {f32({3, 3, 2, 2})});
  ra->setAttr("sampling_ratio", ir::Attribute(int64_t{2}));
  EXPECT_EQ(opCost(*ra).flops, 8 * 4 * 36);  // 4 samples of 4 taps per output element
  auto *axis = g.addConstant("axis", ir::Tensor::vectorI64({1}));
  EXPECT_EQ(opCost(*add(g, "CumProd", {x, axis}, {f32({2, 3, 4, 4})})).flops, 96);
  auto *m = g.addInput("m", f32({5, 3, 3}));
  EXPECT_EQ(opCost(*add(g, "Det", {m}, {f32({5})})).flops, 45 * 3);
}

TEST(OpCostTest, ConvTransposeCountsTapsPerInputElement) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({1, 4, 5, 5}));
  auto *w = g.addConstant("w", ir::Tensor(DType::kF32, {4, 3, 2, 2}));
  auto *b = g.addConstant("b", ir::Tensor(DType::kF32, {3}));
  ir::Node *n = add(g, "ConvTranspose", {x, w, b}, {f32({1, 3, 10, 10})});
  n->setAttr("strides", ir::Attribute(std::vector<int64_t>{2, 2}));
  OpCost c = opCost(*n);
  EXPECT_EQ(c.flops, 2 * 100 * 3 * 4 + 300);
  EXPECT_TRUE(c.contraction);
  EXPECT_EQ(c.bytesRead, (100 + 48 + 3) * 4);
}

TEST(OpCostTest, TopKHardmaxOneHotScatters) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({4, 100}));
  auto *k = g.addConstant("k", ir::Tensor::vectorI64({5}));
  OpCost t = opCost(*add(g, "TopK", {x, k}, {f32({4, 5}), ty(DType::kI64, {4, 5})}));
  EXPECT_EQ(t.flops, 2 * 100 * 20);  // 2 * (axis length) per output element
  EXPECT_EQ(t.bytesRead, 400 * 4);   // k is metadata
  EXPECT_EQ(opCost(*add(g, "Hardmax", {x}, {f32({4, 100})})).flops, 2 * 400);
  auto *ids = g.addInput("ids", ty(DType::kI64, {8}));
  auto *depth = g.addConstant("depth", ir::Tensor::vectorI64({10}));
  auto *vals = g.addConstant("vals", ir::Tensor(DType::kF32, {2}));
  OpCost oh = opCost(*add(g, "OneHot", {ids, depth, vals}, {f32({8, 10})}));
  EXPECT_EQ(oh.flops, 0);  // index arithmetic, as the layout ops
  EXPECT_EQ(oh.bytesRead, 8 * 8 + 2 * 4);
  auto *idx = g.addInput("idx", ty(DType::kI64, {4, 3}));
  auto *upd = g.addInput("upd", f32({4, 3}));
  ir::Node *se = add(g, "ScatterElements", {x, idx, upd}, {f32({4, 100})});
  EXPECT_EQ(opCost(*se).flops, 0);  // none: data movement
  se->setAttr("reduction", ir::Attribute(std::string("add")));
  EXPECT_EQ(opCost(*se).flops, 12);
  EXPECT_EQ(opCost(*se).bytesRead, (400 + 12) * 4 + 12 * 8);
}

TEST(OpCostTest, GatherReadsOnlyTheRowsItUses) {
  ir::Graph g;
  auto *table = g.addConstant("table", ir::Tensor(DType::kF32, {100, 16}));
  auto *idx = g.addInput("idx", ty(DType::kI64, {3}));
  ir::Node *n = add(g, "Gather", {table, idx}, {f32({3, 16})});
  OpCost c = opCost(*n);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytesRead, 3 * 16 * 4 + 3 * 8);
  EXPECT_EQ(c.bytesWritten, 3 * 16 * 4);
  EXPECT_EQ(operandReadBytes(*n, 0), 3 * 16 * 4);
  EXPECT_EQ(operandReadBytes(*n, 1), 3 * 8);
}

TEST(OpCostTest, SliceReadsOnlyTheSliceAndNoParameters) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({10, 10}));
  auto *st = g.addConstant("starts", ir::Tensor::vectorI64({2}));
  auto *en = g.addConstant("ends", ir::Tensor::vectorI64({4}));
  auto *ax = g.addConstant("axes", ir::Tensor::vectorI64({0}));
  OpCost c = opCost(*add(g, "Slice", {x, st, en, ax}, {f32({2, 10})}));
  EXPECT_EQ(c.bytesRead, 80);
  EXPECT_EQ(c.bytesWritten, 80);
}

TEST(OpCostTest, ShapeReadsNoDataEvenWhenSymbolic) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({Dim::symbolic("batch"), 3}));
  OpCost c = opCost(*add(g, "Shape", {x}, {ty(DType::kI64, {2})}));
  ASSERT_TRUE(c.known);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytesRead, 0);
  EXPECT_EQ(c.bytesWritten, 16);
}

TEST(OpCostTest, RepeatedInputIsReadOnce) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({8}));
  OpCost c = opCost(*add(g, "Mul", {x, x}, {f32({8})}));
  EXPECT_EQ(c.bytesRead, 32);
  EXPECT_EQ(c.flops, 8);
}

TEST(OpCostTest, DynamicShapesAreUnknownNotErrors) {
  ir::Graph g;
  auto *x = g.addInput("x", f32({Dim::symbolic("n"), 4}));
  auto *y = g.addInput("y", f32({Dim::unknown(), 4}));
  ir::Node *a = add(g, "Add", {x, y}, {f32({Dim::symbolic("n"), 4})});
  EXPECT_FALSE(opCost(*a).known);
  EXPECT_FALSE(nodeCost(*a, target("h200")).known);
  EXPECT_FALSE(groupCost(g, {a}, target("h200")).known);
  auto *s = g.addInput("s", f32({4}));
  ir::Node *unranked = add(g, "Relu", {s}, {TensorType::unranked(DType::kF32)});
  EXPECT_FALSE(opCost(*unranked).known);
  ir::Node *custom = add(g, "MyCustomOp", {s}, {f32({4})});
  EXPECT_FALSE(opCost(*custom).known);
}

/// Every op in ir/Ops.def has a defined cost on a small static example.
TEST(OpCostTest, EveryOpHasACost) {
  for (const ir::OpInfo &info : ir::allOps()) {
    SCOPED_TRACE(info.name);
    ir::Graph g;
    std::vector<ir::Value *> in;
    for (int i = 0; i < info.minInputs; ++i)
      in.push_back(g.addInput("in" + std::to_string(i), f32({2, 3})));
    std::vector<TensorType> out(std::max(1, info.minOutputs), f32({2, 3}));
    ir::Node *n = add(g, info.name, in, out);
    ASSERT_EQ(n->kind(), info.kind);
    OpCost c = opCost(*n);
    ASSERT_TRUE(c.known);
    EXPECT_TRUE(std::isfinite(c.flops) && c.flops >= 0);
    EXPECT_GE(c.bytesRead, 0);
    EXPECT_EQ(c.bytesWritten, 6 * 4 * static_cast<double>(out.size()));
    EXPECT_EQ(c.contraction, info.fusionClass == ir::FusionClass::kContraction);
    switch (info.fusionClass) {
      case ir::FusionClass::kContraction:
      case ir::FusionClass::kReduction:
        EXPECT_GT(c.flops, 0);
        break;
      case ir::FusionClass::kInjective:
      case ir::FusionClass::kShape:
        EXPECT_EQ(c.flops, 0);
        break;
      case ir::FusionClass::kElementwise: {
        std::string name = info.name;
        bool copy = name == "Cast" || name == "Identity" || name == "Dropout" ||
                    ((name == "Max" || name == "Min" || name == "Sum") && info.minInputs == 1) ||
                    (name == "Clip" && info.minInputs == 1);
        EXPECT_EQ(c.flops > 0, !copy);
        break;
      }
      case ir::FusionClass::kOpaque:
        break;
    }
    GroupCost gc = nodeCost(*n, target("h200"));
    EXPECT_TRUE(gc.known);
    EXPECT_GT(gc.rooflineUs, 0);
  }
}

//===----------------------------------------------------------------------===//
// Group costs and the roofline
//===----------------------------------------------------------------------===//

/// y = Relu(x + b) * x, f32[1024]: x is read by Add and Mul.
struct Chain {
  ir::Graph g;
  ir::Value *x, *b;
  ir::Node *addN, *relu, *mul;
  Chain() {
    x = g.addInput("x", f32({1024}));
    b = g.addConstant("b", ir::Tensor(DType::kF32, {1024}));
    addN = add(g, "Add", {x, b}, {f32({1024})});
    relu = add(g, "Relu", {addN->output(0)}, {f32({1024})});
    mul = add(g, "Mul", {relu->output(0), x}, {f32({1024})});
    g.markOutput(mul->output(0));
  }
};

TEST(GroupCostTest, FusedChainReadsSharedInputOnce) {
  Chain c;
  GroupCost gc = groupCost(c.g, {c.addN, c.relu, c.mul}, target("h200"));
  ASSERT_TRUE(gc.known);
  constexpr double kV = 1024 * 4;  // one f32[1024] value
  EXPECT_EQ(gc.flops, 3 * 1024);
  EXPECT_EQ(gc.bytes, 3 * kV);                               // x, b in; y out
  EXPECT_EQ(gc.bytesUnfused, 3 * kV + 2 * kV + 3 * kV);      // Add + Relu + Mul
  EXPECT_LT(gc.bytes, gc.bytesUnfused);
  EXPECT_DOUBLE_EQ(gc.arithmeticIntensity, 3 * 1024 / (3 * kV));
  EXPECT_FALSE(gc.hasContraction);
  EXPECT_EQ(gc.dtype, DType::kF32);
  EXPECT_TRUE(gc.memoryBound);
  TargetSpec h200 = target("h200");
  EXPECT_DOUBLE_EQ(gc.ridgePoint, h200.vectorRidgePoint(DType::kF32));
  EXPECT_NEAR(gc.rooflineUs, 3 * kV / 4.25e12 * 1e6, 1e-9);
}

TEST(GroupCostTest, IntermediateUsedOutsideIsWritten) {
  Chain c;
  c.g.markOutput(c.addN->output(0));  // the sum is also a graph output
  EXPECT_EQ(groupCost(c.g, {c.addN, c.relu, c.mul}, target("h200")).bytes, 4 * 1024 * 4);
  // Add and Relu alone: x, b in; Relu's result leaves (Mul is outside) and so
  // does the sum (graph output).
  EXPECT_EQ(groupCost(c.g, {c.addN, c.relu}, target("h200")).bytes, 4 * 1024 * 4);
  // Relu and Mul: the sum and x enter, y leaves.
  EXPECT_EQ(groupCost(c.g, {c.relu, c.mul}, target("h200")).bytes, 3 * 1024 * 4);
}

TEST(GroupCostTest, SingleNodeGroupMatchesNodeCost) {
  Chain c;
  GroupCost one = groupCost(c.g, {c.mul}, target("h200"));
  GroupCost node = nodeCost(*c.mul, target("h200"));
  EXPECT_EQ(one.bytes, node.bytes);
  EXPECT_EQ(one.flops, node.flops);
  EXPECT_EQ(one.bytesUnfused, node.bytesUnfused);
}

TEST(GroupCostTest, BigGemmIsComputeBoundAndAddIsMemoryBoundOnH200) {
  TargetSpec h200 = target("h200");
  ir::Graph g;
  const int64_t n = 4096;
  auto *a = g.addInput("a", ty(DType::kBF16, {n, n}));
  auto *b = g.addInput("b", ty(DType::kBF16, {n, n}));
  ir::Node *mm = add(g, "MatMul", {a, b}, {ty(DType::kBF16, {n, n})});
  GroupCost gemm = nodeCost(*mm, h200);
  ASSERT_TRUE(gemm.known);
  EXPECT_DOUBLE_EQ(gemm.flops, 2.0 * n * n * n);
  EXPECT_DOUBLE_EQ(gemm.bytes, 3.0 * n * n * 2);
  EXPECT_EQ(gemm.dtype, DType::kBF16);
  EXPECT_NEAR(gemm.ridgePoint, 161.2, 0.1);
  EXPECT_NEAR(gemm.arithmeticIntensity, n / 3.0, 1e-6);
  EXPECT_FALSE(gemm.memoryBound);
  EXPECT_NEAR(gemm.rooflineUs, 2.0 * n * n * n / 685e12 * 1e6, 1e-6);  // ~200.6 us

  ir::Node *sum = add(g, "Add", {a, b}, {ty(DType::kBF16, {n, n})});
  GroupCost addC = nodeCost(*sum, h200);
  EXPECT_TRUE(addC.memoryBound);
  EXPECT_NEAR(addC.arithmeticIntensity, 1.0 / 6, 1e-12);
  EXPECT_NEAR(addC.rooflineUs, 3.0 * n * n * 2 / 4.25e12 * 1e6, 1e-6);  // ~23.7 us

  Kernel k;
  fillKernelCost(gemm, k);
  EXPECT_EQ(k.flops, gemm.flops);
  EXPECT_FALSE(k.memoryBound);
  EXPECT_EQ(k.rooflineUs, gemm.rooflineUs);
}

//===----------------------------------------------------------------------===//
// The cost-model pass
//===----------------------------------------------------------------------===//

TEST(CostModelPassTest, AnnotatesStaticNodesOnce) {
  ir::Graph g;
  auto *a = g.addInput("a", f32({2, 3, 4}));
  auto *b = g.addInput("b", f32({4, 5}));
  ir::Node *mm = add(g, "MatMul", {a, b}, {f32({2, 3, 5})});
  auto *d = g.addInput("d", f32({Dim::symbolic("n")}));
  ir::Node *dyn = add(g, "Relu", {d}, {f32({Dim::symbolic("n")})});
  g.markOutput(mm->output(0));
  g.markOutput(dyn->output(0));

  auto pass = createCostModel();
  EXPECT_STREQ(pass->name(), "cost-model");
  PassContext ctx;  // no target: h200
  auto changed = pass->run(g, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_NE(mm->attr("fusec.flops"), nullptr);
  EXPECT_EQ(mm->attr("fusec.flops")->i(), 240);
  EXPECT_EQ(mm->attr("fusec.bytes")->i(), 296);
  EXPECT_FLOAT_EQ(mm->attr("fusec.intensity")->f(), 240.0f / 296.0f);
  EXPECT_EQ(mm->attr("fusec.bound")->s(), "memory");
  EXPECT_FALSE(dyn->hasAttr("fusec.flops"));
  EXPECT_FALSE(dyn->hasAttr("fusec.bound"));
  EXPECT_EQ(ctx.statistics["cost-model.annotated"], 1);
  EXPECT_EQ(ctx.statistics["cost-model.unknown"], 1);

  auto again = pass->run(g, ctx);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);

  // The annotations show in the text IR.
  std::string text = ir::printGraph(g);
  EXPECT_NE(text.find("fusec.flops"), std::string::npos) << text;
  EXPECT_NE(text.find("240"), std::string::npos) << text;
  EXPECT_NE(text.find("\"memory\""), std::string::npos) << text;
}

TEST(CostModelPassTest, UsesContextTarget) {
  // A bf16 600^3 GEMM has AI = 200 FLOP/byte: above h200's measured ridge
  // (161), below trn1's (232).
  ir::Graph g2;
  auto *x = g2.addInput("x", ty(DType::kBF16, {600, 600}));
  auto *y = g2.addInput("y", ty(DType::kBF16, {600, 600}));
  ir::Node *p = add(g2, "MatMul", {x, y}, {ty(DType::kBF16, {600, 600})});
  g2.markOutput(p->output(0));

  auto pass = createCostModel();
  PassContext onH200;
  onH200.target = target("h200");
  ASSERT_TRUE(pass->run(g2, onH200).ok());
  EXPECT_EQ(p->attr("fusec.bound")->s(), "compute");
  PassContext onTrn1;
  onTrn1.target = target("trn1");
  auto changed = pass->run(g2, onTrn1);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);  // the bound changed
  EXPECT_EQ(p->attr("fusec.bound")->s(), "memory");
  EXPECT_NEAR(p->attr("fusec.intensity")->f(), 200.0f, 1e-3);
}

}  // namespace
}  // namespace fusec::passes
