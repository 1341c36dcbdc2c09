//===- CodegenTest.cpp - Lowering to KernelSpecs and CUDA emission --------===//
#include <cstdlib>
#include <map>
#include <string>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/fusion/Fusible.h"
#include "program/KernelSpec.h"
#include "program/Lowering.h"
#include "codegen/cuda/CublasEpilogue.h"
#include "codegen/cuda/CudaEmitter.h"
#include "gtest/gtest.h"
#include "interp/Interpreter.h"
#include "test/unit/codegen/CodegenCorpus.h"
#include "test/unit/codegen/CodegenTestUtil.h"

namespace fusec::codegen {
namespace {

using testing::parseAndFuse;

struct Lowered {
  std::unique_ptr<testing::Fused> fused;
  std::vector<WorkItem> items;
};

Lowered lower(const std::string &text, const LoweringOptions &opts = {}) {
  Lowered l;
  auto f = parseAndFuse(text);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return l;
  l.fused = std::move(*f);
  auto items = lowerGraph(*l.fused->graph, passes::kernelNames(l.fused->ctx.fusionPlan), opts);
  EXPECT_TRUE(items.ok()) << items.status();
  if (items.ok()) l.items = std::move(*items);
  return l;
}

CudaModule cuda(const std::string &text) {
  auto f = parseAndFuse(text);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return {};
  auto m = lowerToCuda(*(*f)->graph, (*f)->ctx.fusionPlan, {});
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : CudaModule{};
}

int count(const std::string &hay, const std::string &needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(KernelSpecTest, HashConsingAndFolding) {
  KernelSpec s;
  int d0 = s.addDim(4, false), d1 = s.addDim(1, false);
  int b = s.addBuffer(ir::DType::kF32, {4}, false);
  int i0 = s.index(d0);
  EXPECT_EQ(s.index(d0), i0);
  EXPECT_TRUE(s.isConst(s.index(d1)));  // extent-1 dims index as 0
  EXPECT_EQ(s.binary(BinaryOp::kMul, i0, s.constI(1)), i0);
  EXPECT_EQ(s.binary(BinaryOp::kAdd, s.constI(0), i0), i0);
  int64_t v = 0;
  EXPECT_TRUE(s.isConst(s.binary(BinaryOp::kMul, s.constI(3), s.constI(5)), &v));
  EXPECT_EQ(v, 15);
  EXPECT_EQ(s.load(b, {i0}), s.load(b, {i0}));
  EXPECT_EQ(s.constF(NAN), s.constF(NAN));
  EXPECT_NE(s.constF(1.0), s.constF(2.0));
}

/// With mergeIntConstants off (how buildSymbolicProgram builds the kernel
/// of each probe binding), equal integer constants stay distinct, so the
/// spec's structure does not depend on which extents coincide: a stride
/// equal to a head count at one binding only made HF LLaMA, Mistral, Qwen2
/// and Gemma-2 exports fail to compile with dynamic dims.
TEST(KernelSpecTest, DistinctIntConstantsKeepTheStructure) {
  auto build = [](int64_t a, int64_t b) {
    KernelSpec s;
    s.mergeIntConstants = false;
    int d0 = s.addDim(8, false);
    int buf = s.addBuffer(ir::DType::kF32, {64}, false);
    int i0 = s.index(d0);
    int x = s.load(buf, {s.binary(BinaryOp::kMul, i0, s.constI(a))});
    int y = s.load(buf, {s.binary(BinaryOp::kMul, i0, s.constI(b))});
    s.binary(BinaryOp::kAdd, x, y);
    return s;
  };
  const KernelSpec differ = build(3, 5), equal = build(7, 7);
  EXPECT_EQ(differ.exprs.size(), equal.exprs.size());
  // Merged (the default), the equal pair collapses: one load fewer.
  KernelSpec merged;
  int d0 = merged.addDim(8, false);
  int buf = merged.addBuffer(ir::DType::kF32, {64}, false);
  int i0 = merged.index(d0);
  EXPECT_EQ(merged.load(buf, {merged.binary(BinaryOp::kMul, i0, merged.constI(7))}),
            merged.load(buf, {merged.binary(BinaryOp::kMul, i0, merged.constI(7))}));
  // Bool and float constants are merged either way.
  KernelSpec s;
  s.mergeIntConstants = false;
  EXPECT_NE(s.constI(4), s.constI(4));
  EXPECT_EQ(s.constB(true), s.constB(true));
  EXPECT_EQ(s.constF(0.5), s.constF(0.5));
}

TEST(KernelSpecTest, PrinterAndKey) {
  KernelSpec a, b;
  for (KernelSpec *s : {&a, &b}) {
    int d = s->addDim(8, false);
    int in = s->addBuffer(ir::DType::kBF16, {8}, false);
    int out = s->addBuffer(ir::DType::kBF16, {8}, true);
    int x = s->load(in, {s->index(d)});
    s->addStore(out, {s->index(d)}, s->unary(UnaryOp::kExp, x));
  }
  EXPECT_EQ(canonicalKey(a), canonicalKey(b));
  const std::string text = printKernelSpec(a);
  EXPECT_TRUE(absl::StrContains(text, "buffer b0 : bf16[8] in")) << text;
  EXPECT_TRUE(absl::StrContains(text, "exp f32")) << text;
  b.exprs[b.exprs.size() - 1].op = static_cast<int>(UnaryOp::kLog);
  EXPECT_NE(canonicalKey(a), canonicalKey(b));
}

TEST(LoweringTest, ElementwiseChainIsOnePointwiseKernel) {
  Lowered l = lower(testing::chainGraph("f32", 4, 256));
  ASSERT_EQ(l.items.size(), 1u);
  const WorkItem &it = l.items[0];
  EXPECT_EQ(it.kind, WorkItem::Kind::kKernel);
  EXPECT_EQ(it.spec.kind, SpecKind::kPointwise);
  EXPECT_EQ(it.spec.buffers.size(), 4u);  // x, b, r, y
  EXPECT_EQ(it.spec.stores.size(), 1u);
  EXPECT_EQ(it.nodes.size(), 3u);
  const std::string text = printKernelSpec(it.spec);
  // The bias is broadcast over rows: indexed by the inner dim only.
  EXPECT_TRUE(absl::StrContains(text, "load f32 b1[%1]")) << text;
  EXPECT_TRUE(absl::StrContains(text, "erf f32")) << text;
}

TEST(LoweringTest, SoftmaxIsMaxThenSum) {
  Lowered l = lower(testing::softmaxGraph("bf16", 3, 1000));
  ASSERT_EQ(l.items.size(), 1u);
  const KernelSpec &s = l.items[0].spec;
  EXPECT_EQ(s.kind, SpecKind::kReduce);
  ASSERT_EQ(s.reductions.size(), 2u);
  EXPECT_EQ(s.reductions[0].kind, ReduceKind::kMax);
  EXPECT_EQ(s.reductions[1].kind, ReduceKind::kSum);
  EXPECT_TRUE(s.dependsOnReduction(s.reductions[1].body));
  EXPECT_EQ(s.parallelSize(), 3);
  EXPECT_EQ(s.reducedSize(), 1000);
}

TEST(LoweringTest, LayerNormTwoPassWithResidualOutput) {
  Lowered l = lower(testing::layerNormGraph("f32", 3, 64));
  ASSERT_EQ(l.items.size(), 1u);
  const KernelSpec &s = l.items[0].spec;
  ASSERT_EQ(s.reductions.size(), 2u);
  EXPECT_EQ(s.reductions[0].kind, ReduceKind::kSum);
  EXPECT_EQ(s.reductions[1].kind, ReduceKind::kSum);
  EXPECT_TRUE(s.dependsOnReduction(s.reductions[1].body));  // (x - mean)^2
  EXPECT_EQ(s.stores.size(), 2u);  // y and the residual sum h
}

TEST(LoweringTest, IdenticalLayersShareOneKernel) {
  CudaModule m = cuda(R"(graph @two(%x: f32[4,64], %z: f32[4,64], %b: f32[64]) -> (%y1, %y2) {
  %a1 = "Add"(%x, %b) : f32[4,64] loc("l0.add")
  %t1 = "Tanh"(%a1) : f32[4,64] loc("l0.tanh")
  %y1 = "Softmax"(%t1) {axis = -1} : f32[4,64] loc("l0.softmax")
  %a2 = "Add"(%z, %b) : f32[4,64] loc("l1.add")
  %t2 = "Tanh"(%a2) : f32[4,64] loc("l1.tanh")
  %y2 = "Softmax"(%t2) {axis = -1} : f32[4,64] loc("l1.softmax")
  return %y1, %y2
})");
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].kind, Step::Kind::kKernel);
  EXPECT_EQ(m.steps[0].symbol, m.steps[1].symbol);
  EXPECT_NE(m.steps[0].buffers, m.steps[1].buffers);
  EXPECT_EQ(m.symbols.size(), 1u);
  EXPECT_EQ(m.kernelNames.size(), 2u);
  EXPECT_EQ(count(m.source, "extern \"C\" int fusec_k0("), 1);
  EXPECT_EQ(count(m.source, "fusec_k1"), 0);
  EXPECT_TRUE(absl::StrContains(m.source, "also runs k1_reduction")) << m.source;
}

TEST(LoweringTest, GemmBiasReluUsesLibraryEpilogue) {
  Lowered l = lower(testing::corpus()[15].text);
  ASSERT_EQ(l.items.size(), 1u);
  const GemmParams &g = l.items[0].gemm;
  EXPECT_EQ(l.items[0].kind, WorkItem::Kind::kGemm);
  ASSERT_FALSE(g.epilogue.empty());
  EXPECT_EQ(g.epilogue.spec.buffers.size(), 2u);  // accumulator, bias
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(g.epilogue).value()), "relu_bias");
  EXPECT_EQ(g.m, 8);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.k, 64);
  EXPECT_EQ(g.d->name(), "y");
  EXPECT_EQ(g.bias->name(), "b");
}

/// A residual Add after the bias is the library's C (beta = 1): BERT's
/// output projections are one cuBLASLt call, no epilogue kernel.
TEST(LoweringTest, ResidualAddIsTheGemmsC) {
  Lowered l = lower(R"(graph @res(%a: f32[2,5,16], %w: f32[16,8], %b: f32[8], %r: f32[2,5,8]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[2,5,8]
  %mb = "Add"(%m, %b) : f32[2,5,8]
  %y = "Add"(%r, %mb) : f32[2,5,8]
  return %y
})");
  ASSERT_EQ(l.items.size(), 1u);
  const GemmParams &g = l.items[0].gemm;
  EXPECT_EQ(g.m, 10);
  ASSERT_NE(g.c, nullptr);
  EXPECT_EQ(g.c->name(), "r");
  EXPECT_EQ(g.beta, 1.0);
  EXPECT_EQ(g.strideC, 80);
  ASSERT_NE(g.bias, nullptr);
  EXPECT_EQ(g.bias->name(), "b");
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(g.epilogue).value()), "bias");
  EXPECT_EQ(g.d->name(), "y");
}

/// GPT-2's Conv1D: a 2-D Gemm with its bias as C, reshaped to 3-D, then
/// the residual Add or the tanh GELU: through the view, still one call.
TEST(LoweringTest, EpilogueThroughAViewOfTheGemm) {
  Lowered res = lower(R"(graph @g(%a: f32[10,16], %w: f32[16,8], %b: f32[8], %r: f32[2,5,8]) -> (%y) {
  %s = constant i64[3] dense<[2, 5, 8]>
  %m = "Gemm"(%a, %w, %b) : f32[10,8]
  %v = "Reshape"(%m, %s) : f32[2,5,8]
  %y = "Add"(%v, %r) : f32[2,5,8]
  return %y
})");
  ASSERT_EQ(res.items.size(), 1u);
  ASSERT_NE(res.items[0].gemm.c, nullptr);
  EXPECT_EQ(res.items[0].gemm.c->name(), "r");
  EXPECT_EQ(res.items[0].gemm.d->name(), "y");
  Lowered gelu = lower(R"(graph @g(%a: f32[10,16], %w: f32[16,8], %b: f32[8]) -> (%y) {
  %s = constant i64[3] dense<[2, 5, 8]>
  %m = "Gemm"(%a, %w, %b) : f32[10,8]
  %v = "Reshape"(%m, %s) : f32[2,5,8]
  %y = "Gelu"(%v) {approximate = "tanh"} : f32[2,5,8]
  return %y
})");
  ASSERT_EQ(gelu.items.size(), 1u);
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(gelu.items[0].gemm.epilogue).value()), "gelu_bias");
  EXPECT_EQ(gelu.items[0].gemm.d->name(), "y");
}

/// Not C: a residual that broadcasts, or a batch of GEMMs (one C per
/// matrix is not matched): the Add stays a generated epilogue kernel.
TEST(LoweringTest, BroadcastOrBatchedResidualIsNotC) {
  Lowered bcast = lower(R"(graph @g(%a: f32[10,16], %w: f32[16,8], %r: f32[1,8]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[10,8]
  %y = "Add"(%m, %r) : f32[10,8]
  return %y
})");
  ASSERT_EQ(bcast.items.size(), 1u);  // [1,8] is a bias
  EXPECT_EQ(bcast.items[0].gemm.c, nullptr);
  Lowered bcast2 = lower(R"(graph @g(%a: f32[10,16], %w: f32[16,8], %r: f32[10,1]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[10,8]
  %y = "Add"(%m, %r) : f32[10,8]
  return %y
})");
  ASSERT_EQ(bcast2.items.size(), 2u);
  EXPECT_EQ(bcast2.items[0].gemm.c, nullptr);
  Lowered batched = lower(R"(graph @g(%a: f32[3,10,16], %w: f32[3,16,8], %r: f32[3,10,8]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[3,10,8]
  %y = "Add"(%m, %r) : f32[3,10,8]
  return %y
})");
  ASSERT_EQ(batched.items.size(), 2u);
  EXPECT_EQ(batched.items[0].gemm.c, nullptr);
}

TEST(LoweringTest, CublasLtEpilogueFromExpression) {
  using program::BinaryOp;
  auto name = [](const GemmEpilogue &e) {
    absl::StatusOr<const char *> n = codegen::cublasLtEpilogue(e);
    return n.ok() ? std::string(*n) : std::string("error");
  };
  GemmEpilogue none = GemmEpilogue::identity(4, 8);
  EXPECT_EQ(name(none), "none");
  GemmEpilogue relu = GemmEpilogue::identity(4, 8);
  relu.value = program::buildRelu(relu.spec, relu.accumulator());
  EXPECT_EQ(name(relu), "relu");
  GemmEpilogue gelu = GemmEpilogue::identity(4, 8);
  gelu.value = program::buildGeluTanh(gelu.spec, gelu.accumulator());
  EXPECT_EQ(name(gelu), "gelu");
  GemmEpilogue bias = GemmEpilogue::identity(4, 8);
  bias.value = bias.spec.binary(BinaryOp::kAdd, bias.accumulator(), bias.addBias(ir::DType::kBF16));
  EXPECT_EQ(name(bias), "bias");
  GemmEpilogue geluBias = bias;
  geluBias.value = program::buildGeluTanh(geluBias.spec, bias.value);
  EXPECT_EQ(name(geluBias), "gelu_bias");
  // Anything else (here acc * 2, and relu of acc with an unused bias) is no
  // cuBLASLt epilogue.
  GemmEpilogue scaled = GemmEpilogue::identity(4, 8);
  scaled.value = scaled.spec.binary(BinaryOp::kMul, scaled.accumulator(), scaled.spec.constF(2.0));
  EXPECT_EQ(codegen::cublasLtEpilogue(scaled).status().code(), absl::StatusCode::kUnimplemented);
  GemmEpilogue reluOnly = bias;
  reluOnly.value = program::buildRelu(reluOnly.spec, reluOnly.accumulator());
  EXPECT_EQ(name(reluOnly), "error");
}

TEST(LoweringTest, ConvBiasIsAnEpilogueExpression) {
  Lowered l = lower(R"(graph @cv(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %b: f32[4]) -> (%y) {
  %y = "Conv"(%x, %w, %b) {pads = [1, 1, 1, 1]} : f32[2,4,8,8]
  return %y
})");
  ASSERT_EQ(l.items.size(), 1u);
  ASSERT_EQ(l.items[0].kind, WorkItem::Kind::kConv);
  const GemmEpilogue &e = l.items[0].conv.epilogue;
  // Implicit-GEMM view: M = 2 * 8 * 8 output pixels, N = 4 channels.
  ASSERT_EQ(e.spec.dims.size(), 2u);
  EXPECT_EQ(e.spec.dims[0].extent, 128);
  EXPECT_EQ(e.spec.dims[1].extent, 4);
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(e).value()), "bias");
}

TEST(LoweringTest, GemmExactGeluNeedsEpilogueKernel) {
  Lowered l = lower(testing::corpus()[16].text);
  ASSERT_EQ(l.items.size(), 2u);
  EXPECT_EQ(l.items[0].kind, WorkItem::Kind::kGemm);
  EXPECT_TRUE(l.items[0].gemm.epilogue.empty());
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(l.items[0].gemm.epilogue).value()), "none");
  EXPECT_EQ(l.items[0].gemm.d->name(), "m");
  EXPECT_EQ(l.items[1].kind, WorkItem::Kind::kKernel);
  ASSERT_EQ(l.items[1].buffers.size(), 2u);
  EXPECT_EQ(l.items[1].buffers[0]->name(), "m");
  EXPECT_EQ(l.items[1].buffers[1]->name(), "y");
}

/// A batch of A matrices times one shared B is one GEMM over all the rows.
TEST(LoweringTest, SharedBBatchedMatMulIsOneGemmOfAllRows) {
  Lowered l = lower(R"(graph @bmm(%a: f32[2,3,8,16], %b: f32[16,4]) -> (%y) {
  %y = "MatMul"(%a, %b) : f32[2,3,8,4]
  return %y
})");
  ASSERT_EQ(l.items.size(), 1u);
  const GemmParams &g = l.items[0].gemm;
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.m, 2 * 3 * 8);
  EXPECT_EQ(g.n, 4);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.strideA, 48 * 16);
  EXPECT_EQ(g.strideD, 48 * 4);
  EXPECT_EQ(g.epilogue.spec.dims[0].extent, 48);
}

/// B batched too (or A broadcast over B's batch): stays a strided batch.
TEST(LoweringTest, BatchedMatMulBroadcastStrides) {
  Lowered l = lower(R"(graph @bmm(%a: f32[8,16], %b: f32[6,16,4]) -> (%y) {
  %y = "MatMul"(%a, %b) : f32[6,8,4]
  return %y
})");
  ASSERT_EQ(l.items.size(), 1u);
  const GemmParams &g = l.items[0].gemm;
  EXPECT_EQ(g.batch, 6);
  EXPECT_EQ(g.strideA, 0);
  EXPECT_EQ(g.strideB, 16 * 4);
  EXPECT_EQ(g.strideD, 8 * 4);
  Lowered both = lower(R"(graph @bmm(%a: f32[6,8,16], %b: f32[6,16,4]) -> (%y) {
  %y = "MatMul"(%a, %b) : f32[6,8,4]
  return %y
})");
  ASSERT_EQ(both.items.size(), 1u);
  EXPECT_EQ(both.items[0].gemm.batch, 6);
  EXPECT_EQ(both.items[0].gemm.m, 8);
}

constexpr const char *kHeadWithCast = R"(graph @head(%x: bf16[4,8,32], %w: bf16[32,33]) -> (%y) {
  %m = "MatMul"(%x, %w) : bf16[4,8,33]
  %y = "Cast"(%m) {to = 1} : f32[4,8,33]
  return %y
})";

/// The CUDA target's options fold the output Cast: one GEMM writing f32.
TEST(LoweringTest, OutputCastFoldsIntoGemmWhenTheTargetAllows) {
  Lowered l = lower(kHeadWithCast, cudaLoweringOptions(false));
  ASSERT_EQ(l.items.size(), 1u);
  const GemmParams &g = l.items[0].gemm;
  EXPECT_EQ(l.items[0].kind, WorkItem::Kind::kGemm);
  EXPECT_EQ(g.dtype, ir::DType::kBF16);
  EXPECT_EQ(g.dDtype, ir::DType::kF32);
  EXPECT_EQ(g.d->name(), "y");
  EXPECT_EQ(g.m, 32);
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(g.epilogue).value()), "none");
}

/// Without the option (the cpu and nki backends), the Cast is a kernel.
TEST(LoweringTest, OutputCastStaysAKernelWithoutTheOption) {
  Lowered l = lower(kHeadWithCast);
  ASSERT_EQ(l.items.size(), 2u);
  EXPECT_EQ(l.items[0].gemm.dDtype, ir::DType::kBF16);
  EXPECT_EQ(l.items[0].gemm.d->name(), "m");
  EXPECT_EQ(l.items[1].kind, WorkItem::Kind::kKernel);
}

/// The lowering's own check (not only fusion's): a group {MatMul, Cast}
/// whose GEMM result is read elsewhere too keeps the GEMM's bf16 result.
TEST(LoweringTest, NoFoldWhenTheCastInputHasAnotherConsumer) {
  auto f = parseAndFuse(R"(graph @two(%x: bf16[64,32], %w: bf16[32,33]) -> (%y, %r) {
  %m = "MatMul"(%x, %w) : bf16[64,33]
  %y = "Cast"(%m) {to = 1} : f32[64,33]
  %r = "Relu"(%m) : bf16[64,33]
  return %y, %r
})", /*fuse=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  const ir::Graph &g = *(*f)->graph;
  std::vector<const ir::Node *> members;
  for (const ir::Node *n : g.nodes())
    if (n->kind() == ir::OpKind::kMatMul || n->kind() == ir::OpKind::kCast) members.push_back(n);
  ASSERT_EQ(members.size(), 2u);
  auto items = program::lowerGroupItems(g, members, program::GraphIndex(g), cudaLoweringOptions(false));
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].gemm.dDtype, ir::DType::kBF16);
  EXPECT_EQ((*items)[0].gemm.d->name(), "m");
  EXPECT_EQ((*items)[1].kind, WorkItem::Kind::kKernel);
}

/// A bias epilogue would read the bias as f32 with an f32 D: no fold; the
/// GEMM writes its bf16 result and a kernel adds the bias and casts.
TEST(LoweringTest, NoFoldWithABiasEpilogue) {
  Lowered l = lower(R"(graph @bias(%x: bf16[64,32], %w: bf16[32,33], %b: bf16[33]) -> (%y) {
  %m = "MatMul"(%x, %w) : bf16[64,33]
  %a = "Add"(%m, %b) : bf16[64,33]
  %y = "Cast"(%a) {to = 1} : f32[64,33]
  return %y
})", cudaLoweringOptions(false));
  ASSERT_EQ(l.items.size(), 2u);
  EXPECT_EQ(l.items[0].gemm.dDtype, ir::DType::kBF16);
  EXPECT_EQ(l.items[0].gemm.d->name(), "m");
  EXPECT_EQ(l.items[1].kind, WorkItem::Kind::kKernel);
}

/// tanh GELU then the Cast: the gelu epilogue runs in f32 and D is f32.
TEST(LoweringTest, FoldAfterAnActivationEpilogue) {
  Lowered l = lower(R"(graph @gelu(%x: f16[64,32], %w: f16[32,40]) -> (%y) {
  %m = "MatMul"(%x, %w) : f16[64,40]
  %g = "Gelu"(%m) {approximate = "tanh"} : f16[64,40]
  %y = "Cast"(%g) {to = 1} : f32[64,40]
  return %y
})", cudaLoweringOptions(false));
  ASSERT_EQ(l.items.size(), 1u);
  EXPECT_EQ(l.items[0].gemm.dDtype, ir::DType::kF32);
  EXPECT_EQ(std::string(codegen::cublasLtEpilogue(l.items[0].gemm.epilogue).value()), "gelu");
}

/// Why a Cast is not folded, as foldableOutputCast() says it.
TEST(LoweringTest, FoldableOutputCastReasons) {
  auto f = parseAndFuse(R"(graph @c(%x: f32[4,8], %h: bf16[4,8]) -> (%y, %z, %u) {
  %y = "Cast"(%x) {to = 16} : bf16[4,8]
  %z = "Cast"(%h) {to = 1} : f32[4,8]
  %u = "Cast"(%h) {to = 10} : f16[4,8]
  return %y, %z, %u
})", /*fuse=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<const ir::Node *> casts;
  for (const ir::Node *n : (*f)->graph->nodes()) casts.push_back(n);
  ASSERT_EQ(casts.size(), 3u);
  GemmParams bf16;
  bf16.dtype = bf16.dDtype = ir::DType::kBF16;
  GemmParams f32;
  const LoweringOptions on = cudaLoweringOptions(false), off;
  EXPECT_TRUE(program::foldableOutputCast(bf16, *casts[1], on).ok());
  auto why = [](const absl::Status &st) { return std::string(st.message()); };
  EXPECT_TRUE(absl::StrContains(why(program::foldableOutputCast(bf16, *casts[1], off)), "the target"));
  EXPECT_TRUE(absl::StrContains(why(program::foldableOutputCast(f32, *casts[1], on)), "dtype is f32"));
  EXPECT_TRUE(absl::StrContains(why(program::foldableOutputCast(bf16, *casts[2], on)), "not f32"));
  GemmParams withC = bf16;
  withC.c = casts[0]->output(0);
  EXPECT_TRUE(absl::StrContains(why(program::foldableOutputCast(withC, *casts[1], on)), "beta * C"));
}

TEST(LoweringTest, UnstridableBatchFallsBackToGeneratedKernel) {
  Lowered l = lower(testing::corpus()[12].text);
  ASSERT_EQ(l.items.size(), 1u);
  EXPECT_EQ(l.items[0].kind, WorkItem::Kind::kKernel);
  EXPECT_EQ(l.items[0].spec.kind, SpecKind::kReduce);
  EXPECT_EQ(l.items[0].spec.reducedSize(), 6);
}

TEST(LoweringTest, ViewsAreNotSteps) {
  Lowered l = lower(R"(graph @v(%x: f32[2,6]) -> (%z) {
  %shp = constant i64[2] dense<[3, 4]>
  %r = "Reshape"(%x, %shp) : f32[3,4]
  %z = "Exp"(%r) : f32[3,4]
  return %z
})");
  ASSERT_EQ(l.items.size(), 1u);
  // The view is loaded directly (the artifact writer aliases it).
  EXPECT_EQ(l.items[0].buffers[0]->name(), "r");
}

TEST(LoweringTest, UnsupportedOpNamesNodeAndOp) {
  auto f = parseAndFuse(R"(graph @u(%x: f32[4]) -> (%y) {
  %y = "FrobnicateOp"(%x) : f32[4] loc("my node")
  return %y
})");
  ASSERT_TRUE(f.ok()) << f.status();
  auto m = lowerToCuda(*(*f)->graph, (*f)->ctx.fusionPlan, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "my node")) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "FrobnicateOp")) << m.status();
}

TEST(LoweringTest, NonStaticShapeIsInvalidArgument) {
  auto f = parseAndFuse(R"(graph @d(%x: f32[n,4]) -> (%y) {
  %y = "Exp"(%x) : f32[n,4]
  return %y
})");
  ASSERT_TRUE(f.ok()) << f.status();
  auto m = lowerToCuda(*(*f)->graph, (*f)->ctx.fusionPlan, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
}

// Issue 10: an operand the lowering reads as a scalar (Clip's bounds, Pad's
// constant_value) that is a tensor made a load without indices, and the CUDA
// printer crashed. Shape inference refuses such a graph first; lowered
// without it (here: parsed, not inferred) the lowering reports an error.
TEST(LoweringTest, NonScalarScalarOperandIsAnErrorNotACrash) {
  for (const char *text : {R"(graph @c(%x: f32[8], %lo: f32[8]) -> (%y) {
  %y = "Clip"(%x, %lo) : f32[8] loc("my node")
  return %y
})",
                           R"(graph @p(%x: f32[8], %v: f32[2]) -> (%y) {
  %pads = constant i64[2] dense<[1, 1]>
  %y = "Pad"(%x, %pads, %v) : f32[10] loc("my node")
  return %y
})"}) {
    auto g = ir::parseGraph(text);
    ASSERT_TRUE(g.ok()) << g.status();
    auto m = lowerToCuda(**g, passes::FusionPlan{}, {});
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
    EXPECT_TRUE(absl::StrContains(m.status().message(), "'my node'")) << m.status();
    EXPECT_TRUE(absl::StrContains(m.status().message(), "must be a scalar")) << m.status();
  }
}

TEST(CudaEmitterTest, HostileNodeNameIsEscaped) {
  CudaModule m = cuda(R"(graph @h(%x: f32[4]) -> (%y) {
  %y = "Exp"(%x) : f32[4] loc("evil */ int pwned; /* \n#define X")
  return %y
})");
  EXPECT_FALSE(absl::StrContains(m.source, "evil */")) << m.source;
  EXPECT_FALSE(absl::StrContains(m.source, "\n#define X")) << m.source;
  EXPECT_TRUE(absl::StrContains(m.source, "evil *\\/ int pwned; /\\* \\n#define X")) << m.source;
  EXPECT_EQ(escapeComment("a*/b\nc/*d\\"), "a*\\/b\\nc/\\*d\\\\");
}

TEST(CudaEmitterTest, VectorisedWhenInnerExtentAllows) {
  CudaModule m = cuda(testing::chainGraph("bf16", 5, 4096));
  EXPECT_TRUE(absl::StrContains(m.source, "fx::Vec<__nv_bfloat16, 8>")) << m.source;
  EXPECT_TRUE(absl::StrContains(m.source, "% 16 == 0")) << m.source;  // alignment check
  CudaModule odd = cuda(testing::chainGraph("f32", 3, 7));
  EXPECT_FALSE(absl::StrContains(odd.source, "fx::Vec<float")) << odd.source;
}

TEST(CudaEmitterTest, LongRowsLoopOverGlobalMemory) {
  CudaModule m = cuda(testing::softmaxGraph("f32", 3, 65536));
  // Scalar fallback: one element per access; vector kernel: 4 floats per access.
  EXPECT_TRUE(absl::StrContains(m.source, "for (idx_t c = (idx_t)lane; c < (idx_t)65536; c += G)"))
      << m.source;
  EXPECT_TRUE(absl::StrContains(m.source, "for (idx_t c = (idx_t)lane; c < (idx_t)16384; c += G)"))
      << m.source;
  CudaModule s = cuda(testing::softmaxGraph("f32", 3, 4096));
  EXPECT_TRUE(absl::StrContains(s.source, "c0[8]")) << s.source;  // row kept in registers
}

TEST(CudaEmitterTest, RowKernelsMove16BytesPerAccess) {
  // bf16 LayerNorm of 4096: 256 threads x two 8-element (16-byte) accesses for
  // every row operand, the per-column gamma/beta included; the launcher
  // checks alignment and falls back to the scalar kernel.
  CudaModule m = cuda(testing::layerNormGraph("bf16", 3, 4096));
  EXPECT_TRUE(absl::StrContains(m.source, "__launch_bounds__(256) fusec_k0_vec(")) << m.source;
  EXPECT_TRUE(absl::StrContains(m.source, "constexpr int V = 8;")) << m.source;
  EXPECT_EQ(count(m.source, "= *reinterpret_cast<const fx::Vec<__nv_bfloat16, V> *>(b"), 4) << m.source;
  EXPECT_EQ(count(m.source, "*reinterpret_cast<fx::Vec<__nv_bfloat16, V> *>(b"), 2) << m.source;  // y, h
  EXPECT_TRUE(absl::StrContains(m.source, "(reinterpret_cast<uintptr_t>(buffers[2]) % 16 == 0)")) << m.source;
  EXPECT_TRUE(absl::StrContains(m.source, "fusec_k0_kernel<<<")) << m.source;
  // f32 softmax: 4 floats per access, 512 threads; 1 / sum once per row.
  CudaModule f = cuda(testing::softmaxGraph("f32", 3, 4096));
  EXPECT_TRUE(absl::StrContains(f.source, "constexpr int V = 4;")) << f.source;
  EXPECT_TRUE(absl::StrContains(f.source, "__launch_bounds__(512) fusec_k0_vec(")) << f.source;
  EXPECT_TRUE(absl::StrContains(f.source, " = (float)1 / red1;")) << f.source;
  // A row length no vector divides stays scalar only.
  CudaModule o = cuda(testing::layerNormGraph("bf16", 3, 7));
  EXPECT_FALSE(absl::StrContains(o.source, "fusec_k0_vec")) << o.source;
  // 1000 bf16: 125 accesses of 8, one warp per row.
  CudaModule w = cuda(testing::rmsNormGraph("bf16", 1, 1000));
  EXPECT_TRUE(absl::StrContains(w.source, "constexpr int V = 8;")) << w.source;
  EXPECT_TRUE(absl::StrContains(w.source, "__launch_bounds__(128) fusec_k0_vec(")) << w.source;
}

TEST(CudaEmitterTest, PointwiseBf16Moves16BytesPerAccess) {
  CudaModule m = cuda(testing::chainGraph("bf16", 5, 4096));
  EXPECT_TRUE(absl::StrContains(m.source, "fx::Vec<__nv_bfloat16, 8>")) << m.source;
}

// ---------------------------------------------------------------------------
// Slice and Concat as index arithmetic (issue 13): RoPE's rotate_half is one
// elementwise kernel; a Concat is a select over its inputs along its axis.

/// The plan's kernels, "name kind" each, for messages.
std::string planText(const passes::FusionPlan &plan) {
  std::string out;
  for (const passes::Kernel &k : plan.kernels)
    absl::StrAppend(&out, k.name, " [", absl::StrJoin(k.ops, ", "), "] why: ", k.reason, "\n");
  for (const passes::Refusal &r : plan.refusals) absl::StrAppend(&out, r.producer, " -> ", r.consumer, ": ", r.reason, "\n");
  return out;
}

TEST(FusionDecisionTest, RotateHalfIsOneElementwiseKernel) {
  for (int64_t d : {64, 128, 6}) {
    SCOPED_TRACE(d);
    auto f = parseAndFuse(testing::ropeGraph("f32", 2, 4, 24, d));
    ASSERT_TRUE(f.ok()) << f.status();
    const passes::FusionPlan &plan = (*f)->ctx.fusionPlan;
    ASSERT_EQ(plan.kernels.size(), 1u) << planText(plan);
    const passes::Kernel &k = plan.kernels[0];
    EXPECT_EQ(k.kind, passes::KernelKind::kElementwise) << planText(plan);
    EXPECT_EQ(k.ops.size(), 8u) << planText(plan);  // heads .. rope: every node
    EXPECT_TRUE(absl::StrContains(k.reason, "Slice folded into the load index (x2)")) << k.reason;
    EXPECT_TRUE(absl::StrContains(k.reason, "Concat as a select over axis 3 (2 inputs)")) << k.reason;
    EXPECT_TRUE(plan.refusals.empty()) << planText(plan);
    EXPECT_TRUE(k.refused.empty()) << k.refused;
  }
}

TEST(LoweringTest, RotateHalfReadsXAtThreeOffsets) {
  Lowered l = lower(testing::ropeGraph("f32", 2, 4, 24, 64));
  ASSERT_EQ(l.items.size(), 1u);
  const KernelSpec &s = l.items[0].spec;
  EXPECT_EQ(s.kind, SpecKind::kPointwise);
  // x, cos, sin and y: no intermediate (the Transpose, Slices and Concat are
  // index arithmetic); x [2,24,4,64] read through the heads' permutation.
  ASSERT_EQ(s.buffers.size(), 4u) << printKernelSpec(s);
  EXPECT_EQ(s.buffers[0].shape, (std::vector<int64_t>{2, 24, 4, 64}));
  EXPECT_EQ(s.stores.size(), 1u);
  int loadsOfX = 0, selects = 0;
  for (const program::Expr &e : s.exprs) {
    loadsOfX += e.kind == program::ExprKind::kLoad && e.ival == 0;
    selects += e.kind == program::ExprKind::kSelect;
  }
  // x at d (x * cos), at d + 32 (the first half's -x2) and at d - 32 (x1).
  EXPECT_EQ(loadsOfX, 3) << printKernelSpec(s);
  EXPECT_GE(selects, 1) << printKernelSpec(s);
}

TEST(FusionDecisionTest, ConcatOfManyInputsRunsOnItsOwn) {
  std::string in, names, args;
  for (int i = 0; i < 9; ++i) {
    absl::StrAppend(&in, i ? ", " : "", "%a", i, ": f32[2,3]");
    absl::StrAppend(&args, i ? ", " : "", "%a", i);
  }
  auto f = parseAndFuse(absl::StrCat("graph @many(", in, ") -> (%y) {\n  %c = \"Concat\"(", args,
                                     ") {axis = 1} : f32[2,27] loc(\"cat\")\n  %y = \"Relu\"(%c) : f32[2,27] loc(\"relu\")\n"
                                     "  return %y\n}"));
  ASSERT_TRUE(f.ok()) << f.status();
  const passes::FusionPlan &plan = (*f)->ctx.fusionPlan;
  ASSERT_EQ(plan.kernels.size(), 2u) << planText(plan);
  EXPECT_EQ(plan.kernels[0].kind, passes::KernelKind::kLayout);
  ASSERT_EQ(plan.refusals.size(), 1u) << planText(plan);
  EXPECT_EQ(plan.refusals[0].reason,
            "Concat 'cat' of 9 inputs runs as its own kernel: folded, every output element would evaluate a "
            "select over 9 values (at most 8 fold)");
}

TEST(FusionDecisionTest, LayoutReadBySeveralKernelsIsReGatheredInEach) {
  // The Transpose feeds the Slice (elementwise kernel) and a row reduction
  // (another kernel). Both take it as index arithmetic, so it is cloned into
  // the second (duplicateSharedLayouts) and no layout kernel is left.
  auto f = parseAndFuse(R"(graph @g(%x: f32[6,40]) -> (%y, %z) {
  %t = "Transpose"(%x) {perm = [1, 0]} : f32[40,6] loc("t")
  %st = constant i64[1] dense<[-30]>
  %en = constant i64[1] dense<[1000]>
  %ax = constant i64[1] dense<[0]>
  %sp = constant i64[1] dense<[2]>
  %s = "Slice"(%t, %st, %en, %ax, %sp) : f32[15,6] loc("slice")
  %y = "Mul"(%s, %s) : f32[15,6] loc("square")
  %z = "Softmax"(%t) {axis = -1} : f32[40,6] loc("softmax")
  return %y, %z
})");
  ASSERT_TRUE(f.ok()) << f.status();
  const passes::FusionPlan &plan = (*f)->ctx.fusionPlan;
  ASSERT_EQ(plan.kernels.size(), 2u) << planText(plan);
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"t", "slice", "square"}));
  EXPECT_TRUE(absl::StrContains(plan.kernels[0].reason, "Slice folded into the load index")) << planText(plan);
  EXPECT_TRUE(absl::StrContains(plan.kernels[0].reason, "Transpose re-gathered here and in each of the 2 kernels"))
      << planText(plan);
  EXPECT_EQ(plan.kernels[1].ops, (std::vector<std::string>{"t/regathered_1", "softmax"}));
  EXPECT_EQ(plan.kernels[1].kind, passes::KernelKind::kReduction);
  EXPECT_FALSE(absl::StrContains(planText(plan), "layout op has")) << planText(plan);
  EXPECT_EQ((*f)->ctx.statistics["fusion.layout-clones"], 1);
}

TEST(FusionDecisionTest, LayoutReadByALibraryCallIsStoredOnce) {
  // One reader is a GEMM, which reads its operands from memory: the
  // Transpose is stored once by a layout kernel, and the refusal says why.
  auto f = parseAndFuse(R"(graph @g(%x: f32[6,40], %w: f32[6,8]) -> (%y, %z) {
  %t = "Transpose"(%x) {perm = [1, 0]} : f32[40,6] loc("t")
  %y = "Exp"(%t) : f32[40,6] loc("exp")
  %z = "MatMul"(%t, %w) : f32[40,8] loc("gemm")
  return %y, %z
})");
  ASSERT_TRUE(f.ok()) << f.status();
  const passes::FusionPlan &plan = (*f)->ctx.fusionPlan;
  ASSERT_EQ(plan.kernels.size(), 3u) << planText(plan);
  EXPECT_EQ(plan.kernels[0].ops, (std::vector<std::string>{"t"}));
  EXPECT_EQ(plan.kernels[0].kind, passes::KernelKind::kLayout);
  EXPECT_TRUE(absl::StrContains(planText(plan), "t -> exp: layout op has 2 consumers; it is materialised once"))
      << planText(plan);
  EXPECT_EQ((*f)->ctx.statistics.count("fusion.layout-clones"), 0u);
}

TEST(FusionDecisionTest, SliceWithRunTimeBoundsIsNotIndexArithmetic) {
  auto g = ir::parseGraph(R"(graph @g(%x: f32[6,40], %st: i64[1]) -> (%s) {
  %en = constant i64[1] dense<[1000]>
  %s = "Slice"(%x, %st, %en) : f32[?,40] loc("slice")
  return %s
})");
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Node *slice = (*g)->nodes().back();
  passes::FusionDecision d = passes::foldsAsIndexArithmetic(*slice);
  EXPECT_FALSE(d);
  EXPECT_EQ(d.reason(), "Slice 'slice' has its starts known only at run time; the load index needs them at compile "
                        "time, so it runs as its own kernel");
  EXPECT_EQ(passes::describeFoldedLayout(*slice), "Slice folded into the load index");
}

// Every corpus graph lowers, and its source compiles with nvcc (sm_90).
class NvccCompileTest : public ::testing::TestWithParam<testing::Case> {};

TEST_P(NvccCompileTest, Compiles) {
  const testing::Case &c = GetParam();
  CudaModule m = cuda(c.text);
  ASSERT_FALSE(m.source.empty());
  if (testing::findNvcc().empty()) GTEST_SKIP() << "nvcc not found: generated CUDA not compiled";
  char dir[] = "/tmp/fusec_codegen_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const char *arch = c.name.find("bf16") != std::string::npos ? "sm_80" : "sm_90";
  auto r = testing::nvccCompile(m.source, dir, "k", arch, false);
  EXPECT_TRUE(r.ok()) << r.status() << "\n" << m.source;
  if (r.ok()) std::system(absl::StrCat("rm -rf ", dir).c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, NvccCompileTest, ::testing::ValuesIn(testing::corpus()),
                         [](const ::testing::TestParamInfo<testing::Case> &i) { return i.param.name; });

}  // namespace
}  // namespace fusec::codegen

namespace fusec::codegen {
namespace {

// The GPU test's oracle: the reference interpreter runs every corpus graph.
class ReferenceTest : public ::testing::TestWithParam<testing::Case> {};

TEST_P(ReferenceTest, InterpreterRuns) {
  auto f = testing::parseAndFuse(GetParam().text);
  ASSERT_TRUE(f.ok()) << f.status();
  std::map<std::string, ir::Tensor> inputs;
  for (const ir::Value *in : (*f)->graph->inputs()) {
    ir::Tensor t(in->type().dtype, in->type().staticShape());
    for (int64_t k = 0; k < t.numElements(); ++k) t.setDouble(k, (k % 5) * 0.25);
    inputs[in->name()] = t;
  }
  auto r = interp::runGraph(*(*f)->graph, inputs);
  ASSERT_TRUE(r.ok()) << r.status();
}

INSTANTIATE_TEST_SUITE_P(Corpus, ReferenceTest, ::testing::ValuesIn(testing::corpus()),
                         [](const ::testing::TestParamInfo<testing::Case> &i) { return i.param.name; });

}  // namespace
}  // namespace fusec::codegen
