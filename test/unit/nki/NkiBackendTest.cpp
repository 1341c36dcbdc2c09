//===- NkiBackendTest.cpp - NKI emission, run through the NumPy model of NKI ===//
//
// Each kernel kind is printed by codegen/nki and executed by python3 on
// python/nki_model (the project's NumPy model of the NKI API), against a
// NumPy reference, at the boundaries: rows not a multiple of 128, rows
// longer than one free tile, K not a multiple of 128. Tests that execute
// are skipped when python3 or numpy is missing.
//
//===----------------------------------------------------------------------===//
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/Backend.h"
#include "codegen/nki/NkiKernel.h"
#include "test/unit/nki/NkiTestUtil.h"
#include "gtest/gtest.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/ScoreExpr.h"
#include "passes/cost/TargetSpec.h"
#include "program/Legality.h"

namespace fusec::codegen::nki {
namespace {

namespace fs = std::filesystem;
using program::BinaryOp;
using program::KernelSpec;
using program::ReduceKind;
using program::UnaryOp;

/// out[r, c] = exp(x[r, c] + bias[c]) * 0.5: broadcast load, ScalarE
/// activation, VectorE scalar op. 300 rows (not a multiple of 128), 700
/// columns (longer than one 512-element free tile).
KernelSpec pointwiseSpec(int64_t rows, int64_t cols, ir::DType dt) {
  KernelSpec s;
  s.kind = program::SpecKind::kPointwise;
  int r = s.addDim(rows, false), c = s.addDim(cols, false);
  int x = s.addBuffer(dt, {rows, cols}, false);
  int b = s.addBuffer(dt, {cols}, false);
  int o = s.addBuffer(dt, {rows, cols}, true);
  int ir = s.index(r), ic = s.index(c);
  int v = s.binary(BinaryOp::kAdd, s.load(x, {ir, ic}), s.load(b, {ic}));
  v = s.binary(BinaryOp::kMul, s.unary(UnaryOp::kExp, v), s.constF(0.5));
  s.addStore(o, {ir, ic}, v);
  return s;
}

TEST(NkiKernel, PointwiseTextIsCurrentDialectWithNamedTiles) {
  auto text = printNkiKernel(pointwiseSpec(300, 700, ir::DType::kF32), trn2(), "fusec_k0", {"kernel k0", "  ONNX node 'add0' (Add)"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "# kernel k0\n#   ONNX node 'add0' (Add)\n@nki.jit\ndef fusec_k0(b0, b1):"));
  EXPECT_TRUE(absl::StrContains(*text, "P_TILE = 128"));
  EXPECT_TRUE(absl::StrContains(*text, "FREE_TILE = 512"));
  EXPECT_TRUE(absl::StrContains(*text, "buffer=nl.shared_hbm"));
  EXPECT_TRUE(absl::StrContains(*text, "nisa.activation(dst="));
  // The bias row is a partition-stride-0 (broadcast) DMA.
  EXPECT_TRUE(absl::StrContains(*text, "b1.ap(pattern=[[0, ps], [1, fs]]"));
  EXPECT_FALSE(absl::StrContains(*text, "nl.arange")) << "old dialect";
}

TEST(NkiKernel, PointwiseRunsAtTileBoundaries) {
  auto text = printNkiKernel(pointwiseSpec(300, 700, ir::DType::kF32), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.random.RandomState(0).randn(300, 700).astype(np.float32)
b = np.random.RandomState(1).randn(700).astype(np.float32)
got = k(x, b)
np.testing.assert_allclose(got, np.exp(x + b) * 0.5, rtol=1e-5, atol=1e-6)
)");
}

TEST(NkiKernel, PointwiseBf16RoundsOnStore) {
  auto text = printNkiKernel(pointwiseSpec(130, 64, ir::DType::kBF16), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.random.RandomState(0).randn(130, 64).astype(np.float32)
b = np.random.RandomState(1).randn(64).astype(np.float32)
got = k(nki.model.typed(x, nl.bfloat16), nki.model.typed(b, nl.bfloat16))
np.testing.assert_allclose(got, np.exp(x + b) * 0.5, rtol=2e-2, atol=1e-2)
)");
}

/// softmax over rows of `cols` elements: max, sum of exp(x - max), divide.
KernelSpec softmaxSpec(int64_t rows, int64_t cols) {
  KernelSpec s;
  s.kind = program::SpecKind::kReduce;
  int r = s.addDim(rows, false), c = s.addDim(cols, true);
  int x = s.addBuffer(ir::DType::kF32, {rows, cols}, false);
  int o = s.addBuffer(ir::DType::kF32, {rows, cols}, true);
  int xv = s.load(x, {s.index(r), s.index(c)});
  int mx = s.reduceResult(s.addReduction(ReduceKind::kMax, xv));
  int e = s.unary(UnaryOp::kExp, s.binary(BinaryOp::kSub, xv, mx));
  int sum = s.reduceResult(s.addReduction(ReduceKind::kSum, e));
  s.addStore(o, {s.index(r), s.index(c)}, s.binary(BinaryOp::kDiv, e, sum));
  return s;
}

TEST(NkiKernel, SoftmaxRowsOnPartitions) {
  auto text = printNkiKernel(softmaxSpec(200, 1000), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "nisa.tensor_reduce(dst="));
  EXPECT_TRUE(absl::StrContains(*text, "op=nl.maximum"));
  EXPECT_RUNS(*text, R"(
x = np.random.RandomState(0).randn(200, 1000).astype(np.float32) * 4
got = k(x)
e = np.exp(x - x.max(axis=1, keepdims=True))
np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
)");
}

/// LayerNorm over the last axis with gamma/beta; also writes the per-row
/// mean (a row-level store).
KernelSpec layerNormSpec(int64_t rows, int64_t cols) {
  KernelSpec s;
  s.kind = program::SpecKind::kReduce;
  int r = s.addDim(rows, false), c = s.addDim(cols, true);
  int x = s.addBuffer(ir::DType::kF32, {rows, cols}, false);
  int g = s.addBuffer(ir::DType::kF32, {cols}, false);
  int bt = s.addBuffer(ir::DType::kF32, {cols}, false);
  int o = s.addBuffer(ir::DType::kF32, {rows, cols}, true);
  int mo = s.addBuffer(ir::DType::kF32, {rows}, true);
  int xv = s.load(x, {s.index(r), s.index(c)});
  int inv = s.constF(1.0 / static_cast<double>(cols));
  int mean = s.binary(BinaryOp::kMul, s.reduceResult(s.addReduction(ReduceKind::kSum, xv)), inv);
  int d = s.binary(BinaryOp::kSub, xv, mean);
  int var = s.binary(BinaryOp::kMul,
                     s.reduceResult(s.addReduction(ReduceKind::kSum, s.binary(BinaryOp::kMul, d, d))), inv);
  int rs = s.unary(UnaryOp::kRsqrt, s.binary(BinaryOp::kAdd, var, s.constF(1e-5)));
  int y = s.binary(BinaryOp::kAdd, s.binary(BinaryOp::kMul, s.binary(BinaryOp::kMul, d, rs),
                                            s.load(g, {s.index(c)})),
                   s.load(bt, {s.index(c)}));
  s.addStore(o, {s.index(r), s.index(c)}, y);
  s.addStore(mo, {s.index(r)}, mean);
  return s;
}

TEST(NkiKernel, LayerNormWithRowStore) {
  auto text = printNkiKernel(layerNormSpec(129, 640), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
x = rs.randn(129, 640).astype(np.float32) + 3
g = rs.randn(640).astype(np.float32)
b = rs.randn(640).astype(np.float32)
y, m = k(x, g, b)
mu = x.mean(axis=1, keepdims=True)
v = ((x - mu) ** 2).mean(axis=1, keepdims=True)
np.testing.assert_allclose(y, (x - mu) / np.sqrt(v + 1e-5) * g + b, rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(m, mu[:, 0], rtol=1e-5)
)");
}

/// A row longer than the SBUF budget (and than the engines' 64K free size)
/// is streamed through SBUF in chunks; an arg reduction over it is refused.
TEST(NkiKernel, RowLongerThanSbufIsStreamed) {
  auto text = printNkiKernel(softmaxSpec(8, 70000), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "for jf in nl.sequential_range(NCHUNKS):")) << *text;
  EXPECT_RUNS(*text, R"(
x = np.random.RandomState(0).randn(8, 70000).astype(np.float32) * 4
e = np.exp(x - x.max(axis=1, keepdims=True))
np.testing.assert_allclose(k(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-9)
)");
  KernelSpec s;
  s.kind = program::SpecKind::kReduce;
  int r = s.addDim(8, false), c = s.addDim(70000, true);
  int x = s.addBuffer(ir::DType::kF32, {8, 70000}, false);
  int o = s.addBuffer(ir::DType::kI64, {8}, true);
  s.addStore(o, {s.index(r)}, s.reduceResult(s.addReduction(ReduceKind::kArgMax, s.load(x, {s.index(r), s.index(c)}))));
  absl::Status st = checkNkiKernel(s, trn2());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(st.message(), "bytes of SBUF per partition")) << st;
}

/// out[j, i] = x[i, j]: a transpose is a strided DMA (partition stride 1).
TEST(NkiKernel, TransposeIsAStridedDma) {
  KernelSpec s;
  int i = s.addDim(70, false), j = s.addDim(130, false);
  int x = s.addBuffer(ir::DType::kF32, {130, 70}, false);
  int o = s.addBuffer(ir::DType::kF32, {70, 130}, true);
  s.addStore(o, {s.index(i), s.index(j)}, s.load(x, {s.index(j), s.index(i)}));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.arange(130 * 70, dtype=np.float32).reshape(130, 70)
np.testing.assert_array_equal(k(x), x.T)
)");
}

/// A reshape of a transposed view is not affine: out[i, j] = x[i % 4, i / 4, j]
/// becomes an element gather with the offsets computed on tiles.
TEST(NkiKernel, NonAffineIndexMapIsAnElementGather) {
  KernelSpec s;
  int i = s.addDim(24, false), j = s.addDim(5, false);
  int x = s.addBuffer(ir::DType::kF32, {4, 6, 5}, false);
  int o = s.addBuffer(ir::DType::kF32, {24, 5}, true);
  int four = s.constI(4);
  s.addStore(o, {s.index(i), s.index(j)},
             s.load(x, {s.binary(BinaryOp::kMod, s.index(i), four), s.binary(BinaryOp::kDiv, s.index(i), four),
                        s.index(j)}));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "vector_offset="));
  EXPECT_RUNS(*text, R"(
x = np.arange(120, dtype=np.float32).reshape(4, 6, 5)
np.testing.assert_array_equal(k(x), x.transpose(1, 0, 2).reshape(24, 5))
)");
}

/// Concat along the last axis: two guarded loads (boxes) and a Split-like
/// guarded store.
TEST(NkiKernel, GuardedLoadsAreBoxes) {
  KernelSpec s;
  int r = s.addDim(150, false), c = s.addDim(100, false);
  int a = s.addBuffer(ir::DType::kF32, {150, 40}, false);
  int b = s.addBuffer(ir::DType::kF32, {150, 60}, false);
  int o = s.addBuffer(ir::DType::kF32, {150, 100}, true);
  int ir = s.index(r), ic = s.index(c);
  int inA = s.binary(BinaryOp::kLt, ic, s.constI(40));
  int inB = s.binary(BinaryOp::kGe, ic, s.constI(40));
  int va = s.load(a, {ir, ic}, inA);
  int vb = s.load(b, {ir, s.binary(BinaryOp::kSub, ic, s.constI(40))}, inB);
  s.addStore(o, {ir, ic}, s.binary(BinaryOp::kAdd, va, vb));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
a = rs.randn(150, 40).astype(np.float32)
b = rs.randn(150, 60).astype(np.float32)
np.testing.assert_array_equal(k(a, b), np.concatenate([a, b], axis=1))
)");
}

/// Integer division truncates toward zero; float-to-integer casts truncate.
TEST(NkiKernel, IntegerDivisionAndTruncatingCasts) {
  KernelSpec s;
  int i = s.addDim(200, false);
  int x = s.addBuffer(ir::DType::kI32, {200}, false);
  int y = s.addBuffer(ir::DType::kF32, {200}, false);
  int q = s.addBuffer(ir::DType::kI32, {200}, true);
  int t = s.addBuffer(ir::DType::kI32, {200}, true);
  s.addStore(q, {s.index(i)},
             s.binary(BinaryOp::kDiv, s.load(x, {s.index(i)}), s.constI(3, program::ScalarType::kI64)));
  s.addStore(t, {s.index(i)}, s.cast(s.load(y, {s.index(i)}), program::ScalarType::kI64));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.arange(-100, 100, dtype=np.int32)
y = np.linspace(-5.5, 5.5, 200).astype(np.float32)
q, t = k(x, y)
np.testing.assert_array_equal(q, np.trunc(x / 3).astype(np.int32))
np.testing.assert_array_equal(t, np.trunc(y).astype(np.int32))
)");
}

/// ArgMax over rows (first index of the maximum) and Floor / Ceil.
TEST(NkiKernel, ArgMaxFloorCeil) {
  KernelSpec s;
  s.kind = program::SpecKind::kReduce;
  int r = s.addDim(130, false), c = s.addDim(77, true);
  int x = s.addBuffer(ir::DType::kF32, {130, 77}, false);
  int am = s.addBuffer(ir::DType::kI64, {130}, true);
  int fl = s.addBuffer(ir::DType::kF32, {130, 77}, true);
  int xv = s.load(x, {s.index(r), s.index(c)});
  int idx = s.reduceResult(s.addReduction(ReduceKind::kArgMax, xv));
  s.addStore(am, {s.index(r)}, idx);
  s.addStore(fl, {s.index(r), s.index(c)},
             s.binary(BinaryOp::kAdd, s.unary(UnaryOp::kFloor, xv), s.unary(UnaryOp::kCeil, xv)));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.round(np.random.RandomState(0).randn(130, 77) * 3, 1).astype(np.float32)
x[5, 10] = x[5, 40] = 100.0  # ties: the first index wins
a, f = k(x)
np.testing.assert_array_equal(a, np.argmax(x, axis=1))
np.testing.assert_array_equal(f, np.floor(x) + np.ceil(x))
)");
}

/// Sin / Cos with argument reduction to ScalarE's [-pi, pi]; IsInf.
TEST(NkiKernel, SinCosReducedArgumentAndIsInf) {
  KernelSpec s;
  int i = s.addDim(300, false);
  int x = s.addBuffer(ir::DType::kF32, {300}, false);
  int o = s.addBuffer(ir::DType::kF32, {300}, true);
  int xv = s.load(x, {s.index(i)});
  int v = s.binary(BinaryOp::kAdd, s.unary(UnaryOp::kSin, xv), s.binary(BinaryOp::kMul, s.unary(UnaryOp::kCos, xv), s.constF(2.0)));
  v = s.binary(BinaryOp::kAdd, v, s.cast(s.unary(UnaryOp::kIsPosInf, s.binary(BinaryOp::kMul, xv, s.constF(1e38))), program::ScalarType::kF32));
  s.addStore(o, {s.index(i)}, v);
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.linspace(-40, 40, 300).astype(np.float32)
with np.errstate(over="ignore"):
    inf = np.isposinf(x * np.float32(1e38)).astype(np.float32)
np.testing.assert_allclose(k(x), np.sin(x) + 2 * np.cos(x) + inf, atol=2e-5)
)");
}

/// Embedding lookup: out[r, c] = table[ids[r], c] (row gather by DMA).
TEST(NkiKernel, EmbeddingGather) {
  KernelSpec s;
  int r = s.addDim(200, false), c = s.addDim(96, false);
  int ids = s.addBuffer(ir::DType::kI64, {200}, false);
  int table = s.addBuffer(ir::DType::kF32, {50, 96}, false);
  int o = s.addBuffer(ir::DType::kF32, {200, 96}, true);
  int id = s.cast(s.load(ids, {s.index(r)}), program::ScalarType::kIdx);
  s.addStore(o, {s.index(r), s.index(c)}, s.load(table, {id, s.index(c)}));
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "vector_offset="));
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
ids = rs.randint(0, 50, size=200).astype(np.int32)
t = rs.randn(50, 96).astype(np.float32)
np.testing.assert_array_equal(k(ids, t), t[ids])
)");
}

/// GEMM: K = 300 (not a multiple of 128: three accumulating K tiles),
/// M = 150 (two stationary tiles), N = 600 (two PSUM banks' worth), batch 2,
/// B transposed, beta * C, bias and relu on the way out of PSUM.
TEST(NkiGemm, TensorEngineWithEpilogue) {
  ir::Graph g;
  ir::Value *d = g.addInput("d", ir::TensorType(ir::DType::kF32, {2, 150, 600}));
  program::GemmParams p;
  p.d = d;
  p.m = 150;
  p.n = 600;
  p.k = 300;
  p.batch = 2;
  p.strideA = 150 * 300;
  p.strideB = 600 * 300;
  p.strideC = 0;
  p.strideD = 150 * 600;
  p.transB = true;
  p.alpha = 0.5;
  p.beta = 2.0;
  p.c = d;
  p.bias = d;
  p.epilogue = program::GemmEpilogue::identity(p.m, p.n);
  p.epilogue.value = program::buildRelu(
      p.epilogue.spec, p.epilogue.spec.binary(program::BinaryOp::kAdd, p.epilogue.accumulator(),
                                              p.epilogue.addBias(p.dtype)));
  auto text = printNkiGemm(p, trn2(), "k", {"GEMM k1"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "nisa.nc_matmul(dst=acc"));
  EXPECT_TRUE(absl::StrContains(*text, "buffer=nl.psum"));
  EXPECT_TRUE(absl::StrContains(*text, "K_TILE = 128"));
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
a = rs.randn(2, 150, 300).astype(np.float32)
b = rs.randn(2, 600, 300).astype(np.float32)
c = rs.randn(150, 600).astype(np.float32)
bias = rs.randn(600).astype(np.float32)
want = np.maximum(0.5 * a @ b.transpose(0, 2, 1) + 2.0 * c + bias, 0)
np.testing.assert_allclose(k(a, b, c, bias), want, rtol=1e-4, atol=1e-3)
)");
}

/// Conv: padding 2/1, stride 2/1, dilation 1/2, 2 groups, 130 input
/// channels per group (two K tiles), bias; output rows wider than half a bank.
TEST(NkiConv, TapsAccumulateInPsumWithPadding) {
  ir::Graph g;
  ir::Value *x = g.addInput("x", ir::TensorType(ir::DType::kF32, {2, 260, 9, 300}));
  program::ConvParams c;
  c.x = x;
  c.bias = x;
  c.xShape = {2, 260, 9, 300};
  c.wShape = {6, 130, 3, 3};
  c.pads = {2, 1, 2, 1};
  c.strides = {2, 1};
  c.dilations = {1, 2};
  c.group = 2;
  c.yShape = {2, 6, (9 + 4 - 3) / 2 + 1, (300 + 2 - 5) / 1 + 1};
  // The lowering's epilogue of a conv with a bias: acc + bias[channel].
  c.epilogue = program::GemmEpilogue::identity(c.yShape[0] * c.yShape[2] * c.yShape[3], c.yShape[1]);
  c.epilogue.value = c.epilogue.spec.binary(program::BinaryOp::kAdd, c.epilogue.accumulator(),
                                            c.epilogue.addBias(ir::DType::kF32));
  auto text = printNkiConv(c, trn2(), "k", {"Conv k2"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "nisa.nc_matmul(dst=acc"));
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
x = rs.randn(2, 260, 9, 300).astype(np.float32)
w = rs.randn(6, 130, 3, 3).astype(np.float32)
b = rs.randn(6).astype(np.float32)
xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (1, 1)))
OH, OW = 6, 298
want = np.zeros((2, 6, OH, OW), np.float64)
for o in range(6):
    gi = o // 3
    for kh in range(3):
        for kw in range(3):
            patch = xp[:, gi * 130:(gi + 1) * 130, kh:kh + 2 * OH:2, 2 * kw:2 * kw + OW]
            want[:, o] += np.einsum('nchw,c->nhw', patch, w[o, :, kh, kw])
want += b[None, :, None, None]
np.testing.assert_allclose(k(x, w, b), want, rtol=1e-4, atol=1e-3)
)");
}

/// One attention case: sizes, score_mod / mask text, an optional bias
/// ([B, 1, 1, Sk] key padding, f32 0 / -inf) and the NumPy reference.
struct AttentionCase {
  int64_t b, hq, hkv, sq, sk, d;
  std::string scoreMod, mask;
  bool paddingBias = false;
  std::string maskNumpy = "True";   ///< over qi [Sq,1], ki [1,Sk], h
  std::string modNumpy = "s";       ///< over s, qi, ki, h
  std::string biasFill = "-np.inf";  ///< masked keys of the padding bias
  bool meanRows = false;             ///< masked_rows "mean"
};

void runAttention(const AttentionCase &c) {
  program::AttentionSpec a;
  a.batch = c.b;
  a.numHeads = c.hq;
  a.kvHeads = c.hkv;
  a.seqQ = c.sq;
  a.seqK = c.sk;
  a.headDim = c.d;
  a.headDimV = c.d;
  a.scale = 0.125f;
  a.setDenseStrides();
  ir::ScoreExprContext ctx;
  ctx.numBiases = c.paddingBias ? 1 : 0;
  ctx.tables = {"slope"};
  a.tables["slope"] = std::vector<float>(c.hq, 0.0f);
  for (int64_t h = 0; h < c.hq; ++h) a.tables["slope"][h] = 0.25f / static_cast<float>(h + 1);
  auto mod = ir::parseScoreExpr(c.scoreMod, ctx);
  ASSERT_TRUE(mod.ok()) << mod.status();
  a.scoreMod = *mod;
  ir::ScoreExprContext mctx;
  mctx.allowScore = false;
  mctx.allowTables = false;
  auto mask = ir::parseScoreExpr(c.mask, mctx);
  ASSERT_TRUE(mask.ok()) << mask.status();
  a.mask = *mask;
  a.maskedRowsMean = c.meanRows;
  if (c.paddingBias) {
    program::AttentionBias bias;
    bias.shape = {c.b, 1, 1, c.sk};
    bias.strides = {c.sk, 0, 0, 1};
    a.biases.push_back(bias);
  }
  auto text = printNkiAttention(a, trn2(), "k", {"attention"});
  ASSERT_TRUE(text.ok()) << text.status();
  std::string check = absl::StrCat(R"(
B, HQ, HKV, SQ, SK, D = )", c.b, ", ", c.hq, ", ", c.hkv, ", ", c.sq, ", ", c.sk, ", ", c.d, R"(
rs = np.random.RandomState(0)
q = rs.randn(B, HQ, SQ, D).astype(np.float32)
kk = rs.randn(B, HKV, SK, D).astype(np.float32)
v = rs.randn(B, HKV, SK, D).astype(np.float32)
bias = np.zeros((B, 1, 1, SK), np.float32)
for bi in range(B):
    bias[bi, 0, 0, max(0, SK - 3 * bi):] = )", c.biasFill, R"(
slope = [0.25 / (h + 1) for h in range(HQ)]
want = np.zeros((B, HQ, SQ, D))
qi = np.arange(SQ)[:, None]
ki = np.arange(SK)[None, :]
for bi in range(B):
    for h in range(HQ):
        s = 0.125 * (q[bi, h] @ kk[bi, h // (HQ // HKV)].T)
        s = )", c.modNumpy, R"(
        s = np.where()", c.maskNumpy, R"(, s, -np.inf)
        if )", c.paddingBias ? "True" : "False", R"(:
            s = (s.astype(np.float32) + bias[bi, 0]).astype(np.float32)
        with np.errstate(invalid="ignore"):
            p = np.exp(s - s.max(axis=1, keepdims=True))
            want[bi, h] = (p / p.sum(axis=1, keepdims=True)) @ v[bi, h // (HQ // HKV)]
        if )", c.meanRows ? "True" : "False", R"(:
            empty = np.all(np.isneginf(s), axis=1)
            want[bi, h][empty] = v[bi, h // (HQ // HKV)].mean(axis=0)
args = (q, kk, v, bias) if )", c.paddingBias ? "True" : "False", R"( else (q, kk, v)
np.testing.assert_allclose(k(*args), want, rtol=1e-4, atol=1e-4)
)");
  EXPECT_RUNS(*text, check);
}

TEST(NkiAttention, CausalMultiTileSkipsMaskedKeyTiles) {
  // 300 queries and keys: 3 tiles each; key tiles above the diagonal skipped.
  AttentionCase c{1, 2, 2, 300, 300, 64, "score", "k <= q"};
  c.maskNumpy = "ki <= qi";
  runAttention(c);
}

TEST(NkiAttention, HeadDim80GqaQueryShorterThanKeys) {
  AttentionCase c{2, 4, 2, 70, 200, 80, "score", ""};
  runAttention(c);
}

TEST(NkiAttention, HeadDim128SlidingWindowSoftCapAlibiPadding) {
  AttentionCase c{2, 2, 1, 150, 150, 128, "((30 * tanh(score / 30)) + (slope[h] * (k - q))) + bias0",
                  "(k <= q) && ((q - k) < 40)"};
  c.maskNumpy = "(ki <= qi) & ((qi - ki) < 40)";
  c.modNumpy = "30 * np.tanh(s / 30) + np.array(slope)[h] * (ki - qi)";
  c.paddingBias = true;
  runAttention(c);
}

/// An additive finfo.min padding mask that covers every key of batch 1:
/// those rows stay uniform (finite scores), they must not become NaN.
TEST(NkiAttention, FullyPaddedRowsWithFiniteMaskStayUniform) {
  AttentionCase c{2, 1, 1, 5, 3, 64, "score + bias0", ""};
  c.paddingBias = true;
  c.biasFill = "np.finfo(np.float32).min";
  runAttention(c);
}

/// masked_rows "mean" (an HF export's finfo.min fill after attention-rewrite):
/// rows every key of which is masked (all of batch 2, whose 5 keys are all
/// padding) give the mean of V over all keys; the others are unchanged.
TEST(NkiAttention, FullyMaskedRowsMeanOfV) {
  AttentionCase c{3, 2, 1, 5, 5, 64, "score + bias0", "k <= q"};
  c.maskNumpy = "ki <= qi";
  c.paddingBias = true;
  c.meanRows = true;
  runAttention(c);
}

TEST(NkiBackend, RefusesWhatItCannotLowerWithReason) {
  program::ConvParams c;
  c.xShape = {1, 3, 4, 4, 8};  // 3-D convolution
  c.wShape = {4, 3, 3, 3, 3};
  c.yShape = {1, 4, 2, 2, 6};
  absl::Status st = checkNkiConv(c, trn2());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(st.message(), "1-D (NCW) and 2-D (NCHW)")) << st;
  KernelSpec att;
  att.kind = program::SpecKind::kAttention;
  att.attention.headDim = 256;
  st = checkNkiKernel(att, trn2());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(st.message(), "head dim > 128")) << st;
  auto backend = backendFor("nki");
  ASSERT_TRUE(backend.ok());
  EXPECT_STREQ((*backend)->name(), "nki");
}

/// The work items of \p text's non-view nodes lowered as one group (what
/// the NKI legality checks), the graph kept alive in \p graph.
std::vector<program::WorkItem> lowerAll(const std::string &text, std::unique_ptr<ir::Graph> *graph) {
  auto g = ir::parseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  *graph = std::move(*g);
  std::vector<const ir::Node *> members;
  for (const ir::Node *n : (*graph)->nodes()) members.push_back(n);
  auto items = program::lowerGroupItems(**graph, members, program::GraphIndex(**graph));
  EXPECT_TRUE(items.ok()) << items.status();
  return items.ok() ? *items : std::vector<program::WorkItem>{};
}

/// The NumPy reference of MaxPool / AveragePool (NCHW, pads [t, l, b, r]).
const char *kPoolReference = R"(
def pool_ref(x, k, s, p, mode, include_pad=False):
    n, c, h, w = x.shape
    oh = (h + p[0] + p[2] - k[0]) // s[0] + 1
    ow = (w + p[1] + p[3] - k[1]) // s[1] + 1
    fill = -np.inf if mode == 'max' else 0.0
    xp = np.full((n, c, h + p[0] + p[2], w + p[1] + p[3]), fill, np.float64)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    ones = np.zeros(xp.shape[2:]); ones[p[0]:p[0] + h, p[1]:p[1] + w] = 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            if mode == 'max':
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = k[0] * k[1] if include_pad else ones[i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum()
                y[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return y
)";

/// MaxPool 3x3, stride 2, padding 1 on 130 channels of 9x11 (650 output
/// rows: not a multiple of 128; the first and last rows and columns read the
/// padding): the window unrolled into guarded strided tap loads.
TEST(NkiPool, MaxPoolPaddedStridedRunsOnTheModel) {
  std::unique_ptr<ir::Graph> g;
  auto items = lowerAll(R"(graph @p(%x: f32[1,130,9,11]) -> (%y) {
  %y = "MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,130,5,6] loc("pool1")
  return %y
})", &g);
  ASSERT_EQ(items.size(), 1u);
  ASSERT_TRUE(checkNkiKernel(items[0].spec, trn2()).ok()) << checkNkiKernel(items[0].spec, trn2());
  auto text = printNkiKernel(items[0].spec, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "window reduction over 9 taps")) << *text;
  EXPECT_RUNS(*text, absl::StrCat(kPoolReference, R"(
x = np.random.RandomState(0).randn(1, 130, 9, 11).astype(np.float32)
np.testing.assert_array_equal(k(x), pool_ref(x, (3, 3), (2, 2), (1, 1, 1, 1), 'max').astype(np.float32))
)"));
}

/// AveragePool 3x2, stride 1x3, asymmetric padding (top 1, left 0, bottom
/// 2, right 1), with and without count_include_pad; 2x3 images of 50x300:
/// 306 output rows (not a multiple of 128) of 100 columns.
TEST(NkiPool, AveragePoolCountsPaddingAsAsked) {
  for (int include : {0, 1}) {
    SCOPED_TRACE(include);
    std::unique_ptr<ir::Graph> g;
    auto items = lowerAll(absl::StrCat(R"(graph @p(%x: f32[2,3,50,300]) -> (%y) {
  %y = "AveragePool"(%x) {count_include_pad = )", include,
                                       R"(, kernel_shape = [3, 2], pads = [1, 0, 2, 1], strides = [1, 3]} : f32[2,3,51,100] loc("avg")
  return %y
})"), &g);
    ASSERT_EQ(items.size(), 1u);
    auto text = printNkiKernel(items[0].spec, trn2(), "k", {});
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_RUNS(*text, absl::StrCat(kPoolReference, R"(
x = np.random.RandomState(1).randn(2, 3, 50, 300).astype(np.float32)
want = pool_ref(x, (3, 2), (1, 3), (1, 0, 2, 1), 'avg', include_pad=)", include ? "True" : "False", R"()
np.testing.assert_allclose(k(x), want, rtol=1e-5, atol=1e-6)
)"));
  }
}

/// Conv1d (NCW) through the 2-D TensorE path with a unit height: 130 input
/// channels (two K tiles), padding 1/2, stride 2, dilation 2, bias.
TEST(NkiConv, Conv1dIsConv2dWithAUnitHeight) {
  ir::Graph g;
  ir::Value *x = g.addInput("x", ir::TensorType(ir::DType::kF32, {2, 130, 300}));
  program::ConvParams c;
  c.x = x;
  c.bias = x;
  c.xShape = {2, 130, 300};
  c.wShape = {5, 130, 3};
  c.pads = {1, 2};
  c.strides = {2};
  c.dilations = {2};
  c.yShape = {2, 5, (300 + 3 - 5) / 2 + 1};
  c.epilogue = program::GemmEpilogue::identity(c.yShape[0] * c.yShape[2], c.yShape[1]);
  c.epilogue.value = c.epilogue.spec.binary(program::BinaryOp::kAdd, c.epilogue.accumulator(),
                                            c.epilogue.addBias(ir::DType::kF32));
  ASSERT_TRUE(checkNkiConv(c, trn2()).ok()) << checkNkiConv(c, trn2());
  auto text = printNkiConv(c, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
rs = np.random.RandomState(0)
x = rs.randn(2, 130, 300).astype(np.float32)
w = rs.randn(5, 130, 3).astype(np.float32)
b = rs.randn(5).astype(np.float32)
xp = np.pad(x, ((0, 0), (0, 0), (1, 2)))
OW = 150
want = np.zeros((2, 5, OW))
for kw in range(3):
    want += np.einsum('ncw,oc->now', xp[:, :, 2 * kw:2 * kw + 2 * OW:2], w[:, :, kw])
want += b[None, :, None]
np.testing.assert_allclose(k(x, w, b).reshape(2, 5, OW), want, rtol=1e-4, atol=1e-3)
)");
}

/// Refusals name the ONNX node and op, never only a kernel or buffer id:
/// an op refusal names the nodes of that op; an access refusal the value
/// bound to the buffer and the node reading it.
TEST(NkiBackend, RefusalsNameOnnxNodes) {
  std::unique_ptr<ir::Graph> g;
  auto items = lowerAll(R"(graph @r(%x: f32[4,8]) -> (%y) {
  %a = "Relu"(%x) : f32[4,8] loc("relu1")
  %y = "Round"(%a) : f32[4,8] loc("round1")
  return %y
})", &g);
  ASSERT_EQ(items.size(), 1u);
  absl::Status st = checkNkiKernel(items[0].spec, trn2());
  ASSERT_FALSE(st.ok());
  std::string msg = refusalMessage(items[0], st.message());
  EXPECT_TRUE(absl::StartsWith(msg, "nki: node 'round1' (Round) (in the fused group of 'relu1' (Relu), "
                                    "'round1' (Round)): unary 'round'"))
      << msg;
  auto backend = backendFor("nki");
  ASSERT_TRUE(backend.ok());
  absl::StatusOr<passes::TargetSpec> trn2Spec = passes::loadBuiltinTarget("trn2");
  ASSERT_TRUE(trn2Spec.ok());
  const std::vector<ir::Node *> nodes = g->nodes();
  std::vector<const ir::Node *> members(nodes.begin(), nodes.end());
  st = (*backend)->checkGroup(*g, members, program::GraphIndex(*g), *trn2Spec);
  EXPECT_TRUE(absl::StrContains(st.message(), "node 'round1' (Round)")) << st;
  EXPECT_FALSE(absl::StrContains(st.message(), "k0")) << st;

  program::WorkItem item = items[0];
  msg = refusalMessage(item, "the load of buffer 0 has a guard that is not a box of the loop indices");
  EXPECT_TRUE(absl::StrContains(msg, "node 'relu1' (Relu) (in the fused group of")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "the load of 'x' (buffer 0) has a guard")) << msg;
  msg = refusalMessage(item, "the store to buffer 1 is a scatter");
  EXPECT_TRUE(absl::StrContains(msg, "node 'round1' (Round) (in the fused group of")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "the store to 'y' (buffer 1)")) << msg;
  msg = refusalMessage(item, "the kernel needs 300000 bytes of SBUF per partition");
  EXPECT_TRUE(absl::StartsWith(msg, "nki: nodes 'relu1' (Relu), 'round1' (Round): the kernel needs")) << msg;
}

}  // namespace
}  // namespace fusec::codegen::nki
