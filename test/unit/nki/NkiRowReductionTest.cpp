//===- NkiRowReductionTest.cpp - Row reductions and target limits on NKI ===//
//
// LayerNorm, RMSNorm and softmax rows at hidden sizes 2048-8192 and a
// 50257-wide softmax, fp32 and bf16, through the NumPy model of NKI: rows
// that fit the SBUF budget are reduced whole (ScalarE's fused add-reduction
// where the body is an activation), longer ones are streamed from HBM in
// chunks, one pass per level of reductions plus one for the stores. Also:
// the device's limits (trn1 vs trn2 SBUF) shape the kernels, exact GEMM
// constants, bf16 GEMM and attention, and conv epilogues refused.
//
//===----------------------------------------------------------------------===//
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/nki/NkiKernel.h"
#include "gtest/gtest.h"
#include "ir/Graph.h"
#include "test/unit/nki/NkiTestUtil.h"

namespace fusec::codegen::nki {
namespace {

using program::BinaryOp;
using program::KernelSpec;
using program::ReduceKind;
using program::UnaryOp;

enum class Norm { kLayerNorm, kRMSNorm, kSoftmax };

/// y = LayerNorm / RMSNorm (gamma, and beta for LayerNorm; eps 1e-5) or
/// softmax over rows of \p cols elements of dtype \p dt (statistics fp32).
KernelSpec normSpec(Norm norm, int64_t rows, int64_t cols, ir::DType dt) {
  KernelSpec s;
  s.kind = program::SpecKind::kReduce;
  int r = s.addDim(rows, false), c = s.addDim(cols, true);
  int x = s.addBuffer(dt, {rows, cols}, false);
  int g = norm == Norm::kSoftmax ? -1 : s.addBuffer(dt, {cols}, false);
  int bt = norm == Norm::kLayerNorm ? s.addBuffer(dt, {cols}, false) : -1;
  int o = s.addBuffer(dt, {rows, cols}, true);
  int xv = s.load(x, {s.index(r), s.index(c)});
  int inv = s.constF(1.0 / static_cast<double>(cols));
  int y = -1;
  if (norm == Norm::kSoftmax) {
    int mx = s.reduceResult(s.addReduction(ReduceKind::kMax, xv));
    int e = s.unary(UnaryOp::kExp, s.binary(BinaryOp::kSub, xv, mx));
    y = s.binary(BinaryOp::kDiv, e, s.reduceResult(s.addReduction(ReduceKind::kSum, e)));
  } else if (norm == Norm::kRMSNorm) {
    int ms = s.binary(BinaryOp::kMul, s.reduceResult(s.addReduction(ReduceKind::kSum, s.binary(BinaryOp::kMul, xv, xv))),
                      inv);
    int rs = s.unary(UnaryOp::kRsqrt, s.binary(BinaryOp::kAdd, ms, s.constF(1e-5)));
    y = s.binary(BinaryOp::kMul, s.binary(BinaryOp::kMul, xv, rs), s.load(g, {s.index(c)}));
  } else {
    int mean = s.binary(BinaryOp::kMul, s.reduceResult(s.addReduction(ReduceKind::kSum, xv)), inv);
    int d = s.binary(BinaryOp::kSub, xv, mean);
    int var = s.binary(BinaryOp::kMul, s.reduceResult(s.addReduction(ReduceKind::kSum, s.binary(BinaryOp::kMul, d, d))),
                       inv);
    int rs = s.unary(UnaryOp::kRsqrt, s.binary(BinaryOp::kAdd, var, s.constF(1e-5)));
    y = s.binary(BinaryOp::kAdd, s.binary(BinaryOp::kMul, s.binary(BinaryOp::kMul, d, rs), s.load(g, {s.index(c)})),
                 s.load(bt, {s.index(c)}));
  }
  s.addStore(o, {s.index(r), s.index(c)}, y);
  return s;
}

/// Python that calls kernel k on random inputs and compares with NumPy.
std::string normCheck(Norm norm, int64_t rows, int64_t cols, bool bf16, const char *target = "trn2") {
  const char *ref = norm == Norm::kSoftmax ? "e = np.exp(x - x.max(axis=1, keepdims=True)); want = e / e.sum(axis=1, keepdims=True)"
                    : norm == Norm::kRMSNorm
                        ? "want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g"
                        : "mu = x.mean(axis=1, keepdims=True); want = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, "
                          "keepdims=True) + 1e-5) * g + b";
  const char *args = norm == Norm::kSoftmax ? "x" : norm == Norm::kRMSNorm ? "x, g" : "x, g, b";
  return absl::StrCat(R"(
nki.model.set_target(")", target, R"(")
rs = np.random.RandomState(0)
R, C, BF16 = )", rows, ", ", cols, ", ", bf16 ? "True" : "False", R"(
x = (rs.randn(R, C) * 3 + 1).astype(np.float32)
g = rs.randn(C).astype(np.float32)
b = rs.randn(C).astype(np.float32)
arr = (lambda t: nki.model.typed(t, nl.bfloat16)) if BF16 else (lambda t: t)
got = np.asarray(k(*[arr(t) for t in ()", args, R"(,)]), dtype=np.float64)
if BF16:  # the reference sees the bf16-rounded inputs
    x, g, b = [np.asarray(k_round(t), dtype=np.float64) for t in (x, g, b)]
else:
    x, g, b = [t.astype(np.float64) for t in (x, g, b)]
)", ref, R"(
np.testing.assert_allclose(got, want, rtol=2e-2 if BF16 else 2e-5, atol=2e-2 if BF16 else 2e-6)
)");
}

/// bf16 rounding of a float32 array (round to nearest even), for references.
const char *kRoundBf16 = R"(
def k_round(t):
    u = np.asarray(t, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)
)";

struct NormCase {
  Norm norm;
  int64_t rows, cols;
  ir::DType dt;
};

std::string caseName(const ::testing::TestParamInfo<NormCase> &info) {
  const NormCase &c = info.param;
  return absl::StrCat(c.norm == Norm::kSoftmax ? "Softmax" : c.norm == Norm::kRMSNorm ? "RMSNorm" : "LayerNorm",
                      c.rows, "x", c.cols, c.dt == ir::DType::kBF16 ? "Bf16" : "F32");
}

class NkiNormRows : public ::testing::TestWithParam<NormCase> {};

TEST_P(NkiNormRows, MatchesNumPyThroughTheModel) {
  const NormCase &c = GetParam();
  KernelSpec spec = normSpec(c.norm, c.rows, c.cols, c.dt);
  ASSERT_TRUE(checkNkiKernel(spec, trn2()).ok()) << checkNkiKernel(spec, trn2());
  auto text = printNkiKernel(spec, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  // Softmax's exp(x - max) and the sums of squares run on ScalarE with the
  // row sum fused (bias = -max for softmax).
  EXPECT_TRUE(absl::StrContains(*text, "reduce_op=nl.add, reduce_res=")) << *text;
  if (c.norm == Norm::kSoftmax) {
    EXPECT_TRUE(absl::StrContains(*text, "op=nl.exp, data=")) << *text;
  }
  if (c.cols >= 8192) {
    EXPECT_TRUE(absl::StrContains(*text, "NCHUNKS")) << "streamed: " << *text;
  }
  EXPECT_RUNS(*text, absl::StrCat(kRoundBf16, normCheck(c.norm, c.rows, c.cols, c.dt == ir::DType::kBF16)));
}

std::vector<NormCase> normCases() {
  std::vector<NormCase> v;
  for (Norm n : {Norm::kLayerNorm, Norm::kRMSNorm, Norm::kSoftmax})
    for (int64_t cols : {2048, 4096, 8192})
      for (ir::DType dt : {ir::DType::kF32, ir::DType::kBF16})
        v.push_back({n, cols == 2048 ? 130 : 8, cols, dt});  // 130 rows: a partial second row tile
  for (ir::DType dt : {ir::DType::kF32, ir::DType::kBF16}) v.push_back({Norm::kSoftmax, 3, 50257, dt});
  v.push_back({Norm::kLayerNorm, 2, 50257, ir::DType::kF32});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Sizes, NkiNormRows, ::testing::ValuesIn(normCases()), caseName);

/// The device's SBUF decides: a 3584-wide softmax row fits trn2's budget
/// whole (one read of x) but is streamed on trn1's smaller SBUF; both run
/// on the model of their own target.
TEST(NkiLimits, Trn1AndTrn2DifferByTheirSbuf) {
  KernelSpec spec = normSpec(Norm::kSoftmax, 130, 3584, ir::DType::kF32);
  auto t2 = printNkiKernel(spec, trn2(), "k", {});
  auto t1 = printNkiKernel(spec, trn1(), "k", {});
  ASSERT_TRUE(t2.ok() && t1.ok()) << t2.status() << t1.status();
  EXPECT_TRUE(absl::StrContains(*t2, "FREE_TILE = 3584  # a whole row")) << *t2;
  EXPECT_TRUE(absl::StrContains(*t1, "NCHUNKS")) << *t1;
  EXPECT_RUNS(*t1, absl::StrCat(kRoundBf16, normCheck(Norm::kSoftmax, 130, 3584, false, "trn1")));
  EXPECT_RUNS(*t2, absl::StrCat(kRoundBf16, normCheck(Norm::kSoftmax, 130, 3584, false, "trn2")));
}

/// A softmax row too wide for its intermediate tiles but whose input fits
/// half the SBUF budget (trn2: 4 bytes x 13311 columns <= 53246) is read
/// from HBM once into an SBUF-resident row, and the max / sum / normalise
/// passes read chunks of it; one column more and every pass streams from
/// HBM again. Both sides of the boundary run on the model.
TEST(NkiLimits, SoftmaxRowStaysResidentWhenItsInputFits) {
  auto count = [](const std::string &hay, const std::string &needle) {
    int n = 0;
    for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
    return n;
  };
  for (int64_t cols : {8192, 13311, 13312}) {
    SCOPED_TRACE(cols);
    KernelSpec spec = normSpec(Norm::kSoftmax, cols == 8192 ? 130 : 3, cols, ir::DType::kF32);
    ASSERT_TRUE(checkNkiKernel(spec, trn2()).ok()) << checkNkiKernel(spec, trn2());
    auto text = printNkiKernel(spec, trn2(), "k", {});
    ASSERT_TRUE(text.ok()) << text.status();
    ASSERT_TRUE(absl::StrContains(*text, "NCHUNKS")) << *text;
    const bool resident = cols <= 13311;
    EXPECT_EQ(absl::StrContains(*text, "resident in SBUF"), resident) << *text;
    EXPECT_EQ(count(*text, "src=b0.ap("), resident ? 1 : 3) << *text;  // HBM reads of x: one, or one per pass
    EXPECT_RUNS(*text, absl::StrCat(kRoundBf16, normCheck(Norm::kSoftmax, cols == 8192 ? 130 : 3, cols, false)));
  }
}

TEST(NkiLimits, TargetSpecCarriesThePartitionLimits) {
  EXPECT_EQ(trn2().partitions, 128);
  EXPECT_EQ(trn2().sbufBytesPerPartition, 224 * 1024);
  EXPECT_EQ(trn1().sbufBytesPerPartition, 192 * 1024);
  EXPECT_EQ(trn2().sbufUsableBytesPerPartition, 212984);
  EXPECT_EQ(trn1().sbufUsableBytesPerPartition, 180224);
  EXPECT_EQ(trn2().psumBanks * trn2().psumBankBytes, trn2().psumBytesPerPartition);
  EXPECT_EQ(trn2().psumBytesPerPartition, 16 * 1024);
  EXPECT_EQ(trn2().matmulStationaryFreeMax, 128);
  EXPECT_EQ(trn2().matmulMovingFreeMax, 512);
  auto h200 = passes::loadBuiltinTarget("h200");
  ASSERT_TRUE(h200.ok());
  EXPECT_FALSE(h200->partitioned.present());
  EXPECT_EQ(h200->onChipRowBytes(), h200->onChipBytesPerUnit);
  auto t = passes::loadBuiltinTarget("trn2");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->onChipRowBytes(), 212984);  // a row lies on one partition
}

/// alpha = 1/3 and beta = 0.1 are printed exactly (not 0.333333); bf16
/// operands accumulate in fp32 PSUM and round once on the way out.
TEST(NkiGemm, Bf16WithExactAlphaBeta) {
  ir::Graph g;
  ir::Value *d = g.addInput("d", ir::TensorType(ir::DType::kBF16, {70, 200}));
  program::GemmParams p;
  p.d = d;
  p.c = d;
  p.m = 70;
  p.n = 200;
  p.k = 260;
  p.strideA = 70 * 260;
  p.strideB = 260 * 200;
  p.strideD = 70 * 200;
  p.alpha = 1.0 / 3.0;
  p.beta = 0.1;
  p.dtype = ir::DType::kBF16;
  p.dDtype = ir::DType::kBF16;
  p.epilogue = program::GemmEpilogue::identity(p.m, p.n);
  auto text = printNkiGemm(p, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "ALPHA, BETA = 0.33333333333333331, 0.10000000000000001")) << *text;
  EXPECT_RUNS(*text, absl::StrCat(kRoundBf16, R"(
rs = np.random.RandomState(0)
a = k_round(rs.randn(70, 260).astype(np.float32))
b = k_round(rs.randn(260, 200).astype(np.float32))
c = k_round(rs.randn(70, 200).astype(np.float32))
bf = lambda t: nki.model.typed(t, nl.bfloat16)
got = np.asarray(k(bf(a), bf(b), bf(c)), np.float64)
want = (a.astype(np.float64) @ b) / 3 + 0.1 * c
np.testing.assert_allclose(got, want, rtol=1e-2, atol=5e-2)
)"));
}

/// bf16 flash attention: P is rounded to bf16 for the P V matmul.
TEST(NkiAttention, Bf16HeadDim64) {
  program::AttentionSpec a;
  a.batch = 1;
  a.numHeads = 2;
  a.kvHeads = 2;
  a.seqQ = 130;
  a.seqK = 200;
  a.headDim = 64;
  a.headDimV = 64;
  a.scale = 0.125f;
  a.qType = a.kType = a.vType = a.oType = ir::DType::kBF16;
  a.setDenseStrides();
  auto text = printNkiAttention(a, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, absl::StrCat(kRoundBf16, R"(
rs = np.random.RandomState(0)
q, kk, v = [k_round(rs.randn(1, 2, n, 64).astype(np.float32)) for n in (130, 200, 200)]
bf = lambda t: nki.model.typed(t, nl.bfloat16)
got = np.asarray(k(bf(q), bf(kk), bf(v)), np.float64)
s = 0.125 * np.einsum('bhqd,bhkd->bhqk', q.astype(np.float64), kk)
p = np.exp(s - s.max(axis=-1, keepdims=True))
want = np.einsum('bhqk,bhkd->bhqd', p / p.sum(axis=-1, keepdims=True), v)
np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
)"));
}

/// A conv epilogue the NKI conv does not apply (here relu after the bias)
/// is refused with a reason, never dropped.
TEST(NkiConv, RefusesAnEpilogueBeyondItsBias) {
  ir::Graph g;
  ir::Value *x = g.addInput("x", ir::TensorType(ir::DType::kF32, {1, 4, 8, 8}));
  program::ConvParams c;
  c.x = x;
  c.bias = x;
  c.xShape = {1, 4, 8, 8};
  c.wShape = {4, 4, 3, 3};
  c.yShape = {1, 4, 6, 6};
  c.pads = {0, 0, 0, 0};
  c.strides = {1, 1};
  c.dilations = {1, 1};
  c.epilogue = program::GemmEpilogue::identity(36, 4);
  const int withBias = c.epilogue.spec.binary(BinaryOp::kAdd, c.epilogue.accumulator(), c.epilogue.addBias(c.dtype));
  c.epilogue.value = withBias;
  EXPECT_TRUE(checkNkiConv(c, trn2()).ok()) << checkNkiConv(c, trn2());
  c.epilogue.value = program::buildRelu(c.epilogue.spec, withBias);
  absl::Status st = checkNkiConv(c, trn2());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(st.message(), "epilogue other than its bias")) << st;
  EXPECT_FALSE(printNkiConv(c, trn2(), "k", {}).ok());
}

}  // namespace
}  // namespace fusec::codegen::nki
