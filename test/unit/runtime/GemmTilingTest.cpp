//===- GemmTilingTest.cpp - gemm steps as tiles on aligned operands -------===//
//
// gemmTiles() and wantedBCopies() (runtime/internal/GemmTiling.h) are pure
// arithmetic: these tests run anywhere. Each tiling must cover D exactly
// once; main tiles must start D rows at 16-byte boundaries with a leading
// dimension and width spanning multiples of 16 bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/GemmTiling.h"

#include <vector>

#include "gtest/gtest.h"

namespace fusec::rt {
namespace {

GemmDesc gemm(int64_t m, int64_t n, int64_t k, fusert_dtype dtype, fusert_dtype dDtype) {
  GemmDesc g;
  g.a = 0;
  g.b = 1;
  g.d = 2;
  g.m = m;
  g.n = n;
  g.k = k;
  g.strideA = m * k;
  g.strideB = k * n;
  g.strideD = m * n;
  g.dtype = dtype;
  g.dDtype = dDtype;
  return g;
}

/// Every element of D in exactly one tile; main tiles aligned (D's base
/// taken as 16-byte aligned).
void expectExactAlignedCover(const GemmDesc &g, const std::vector<GemmTile> &tiles) {
  std::vector<int> hits(static_cast<size_t>(g.m * g.n), 0);
  const int64_t eD = static_cast<int64_t>(fusert_dtype_size(g.dDtype));
  const int64_t eAB = static_cast<int64_t>(fusert_dtype_size(g.dtype));
  for (const GemmTile &t : tiles) {
    ASSERT_GT(t.rows, 0);
    ASSERT_GT(t.cols, 0);
    ASSERT_GE(t.rowStep, 1);
    ASSERT_LE(t.row0 + (t.rows - 1) * t.rowStep, g.m - 1);
    ASSERT_LE(t.col0 + t.cols, g.n);
    for (int64_t i = 0; i < t.rows; ++i)
      for (int64_t j = 0; j < t.cols; ++j)
        ++hits[static_cast<size_t>((t.row0 + i * t.rowStep) * g.n + t.col0 + j)];
    if (t.main && tiles.size() > 1) {
      EXPECT_EQ(((t.row0 * g.n + t.col0) * eD) % kGemmAlignBytes, 0) << "row0 " << t.row0;
      EXPECT_EQ((t.rowStep * g.n * eD) % kGemmAlignBytes, 0) << "row0 " << t.row0;
      EXPECT_EQ((t.cols * eAB) % kGemmAlignBytes, 0) << "row0 " << t.row0;
    }
  }
  for (size_t i = 0; i < hits.size(); ++i)
    ASSERT_EQ(hits[i], 1) << "element " << i / g.n << "," << i % g.n;
}

TEST(GemmTiling, PaddedLeadingDim) {
  EXPECT_EQ(paddedLeadingDim(50257, 2), 50264);
  EXPECT_EQ(paddedLeadingDim(50264, 2), 50264);
  EXPECT_EQ(paddedLeadingDim(1, 4), 4);
  EXPECT_EQ(paddedLeadingDim(7, 8), 8);
  EXPECT_EQ(paddedLeadingDim(33, 1), 48);
  EXPECT_EQ(paddedLeadingDim(0, 2), 0);
  EXPECT_EQ(paddedLeadingDim(5, 3), 5);  // 3 does not divide 16: unchanged
}

TEST(GemmTiling, AlignedRowsAreOneTile) {
  const GemmDesc g = gemm(8192, 50264, 768, FUSERT_BF16, FUSERT_BF16);
  const std::vector<GemmTile> t = gemmTiles(g);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rows, 8192);
  EXPECT_EQ(t[0].cols, 50264);
  EXPECT_TRUE(wantedBCopies(g, t).empty());
}

/// GPT-2's LM head with f32 D (the folded Cast): rows of 50257 * 4 bytes
/// start at 4 offsets modulo 16, so 4 row classes, each a main tile and
/// narrow edges.
TEST(GemmTiling, Gpt2HeadF32DIsFourRowClasses) {
  const GemmDesc g = gemm(8192, 50257, 768, FUSERT_BF16, FUSERT_F32);
  const std::vector<GemmTile> t = gemmTiles(g);
  int mains = 0;
  int64_t mainCols = 0;
  for (const GemmTile &x : t) {
    EXPECT_EQ(x.rowStep, 4);
    EXPECT_EQ(x.rows, 2048);
    if (x.main) {
      ++mains;
      mainCols += x.cols;
      EXPECT_GE(x.cols, 50248);
    } else {
      EXPECT_LT(x.cols, 8);
    }
  }
  EXPECT_EQ(mains, 4);
  EXPECT_GT(mainCols, 4 * 50240);
  // Row classes 0..3 start their aligned part at columns 0, 3, 2, 1.
  std::vector<int64_t> firstAligned;
  for (const GemmTile &x : t)
    if (x.main) firstAligned.push_back(x.col0);
  EXPECT_EQ(firstAligned, (std::vector<int64_t>{0, 3, 2, 1}));
  // Row-major B [768, 50257]: a copy per main tile (its ld 50257 is odd).
  const std::vector<GemmBCopy> copies = wantedBCopies(g, t);
  ASSERT_EQ(copies.size(), 4u);
  EXPECT_EQ(copies[1].shift, 3);
  EXPECT_EQ(copies[1].ld, 50256);  // 50254 columns, padded to 8
  // Transposed B [50257, 768]: k = 768 spans whole 16-byte units, no copy.
  GemmDesc tb = g;
  tb.transB = true;
  EXPECT_TRUE(wantedBCopies(tb, gemmTiles(tb)).empty());
  tb.k = 767;
  const std::vector<GemmBCopy> padded = wantedBCopies(tb, gemmTiles(tb));
  ASSERT_EQ(padded.size(), 1u);
  EXPECT_EQ(padded[0].shift, 0);
  EXPECT_EQ(padded[0].ld, 768);
}

TEST(GemmTiling, CoversDExactlyForOddN) {
  for (fusert_dtype d : {FUSERT_F32, FUSERT_BF16, FUSERT_F16})
    for (int64_t n : {1, 7, 8, 9, 15, 16, 33, 50257 % 97 + 100}) {
      for (int64_t m : {1, 3, 64, 255, 256, 257, 1031}) {
        const GemmDesc g = gemm(m, n, 16, d == FUSERT_F32 ? FUSERT_BF16 : d, d);
        SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " d=" << fusert_dtype_name(d));
        expectExactAlignedCover(g, gemmTiles(g));
      }
    }
}

TEST(GemmTiling, Bf16DOddNIsEightRowClasses) {
  const GemmDesc g = gemm(1024, 33, 64, FUSERT_BF16, FUSERT_BF16);
  const std::vector<GemmTile> t = gemmTiles(g);
  expectExactAlignedCover(g, t);
  for (const GemmTile &x : t) EXPECT_EQ(x.rowStep, 8);
}

TEST(GemmTiling, AlignedRowsButRaggedWidthSplitsColumnsOnly) {
  // f32 D rows of 50260 * 4 bytes are aligned; 50260 bf16 columns of B are
  // not a multiple of 8: one main tile of 50256 columns and a 4-column edge.
  const GemmDesc g = gemm(512, 50260, 64, FUSERT_BF16, FUSERT_F32);
  const std::vector<GemmTile> t = gemmTiles(g);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].rowStep, 1);
  EXPECT_EQ(t[0].cols, 50256);
  EXPECT_TRUE(t[0].main);
  EXPECT_EQ(t[1].col0, 50256);
  EXPECT_EQ(t[1].cols, 4);
  EXPECT_FALSE(t[1].main);
}

TEST(GemmTiling, StepsThatCannotSplitStayWhole) {
  const GemmDesc base = gemm(8192, 50257, 768, FUSERT_BF16, FUSERT_F32);
  GemmDesc batched = base;
  batched.batch = 2;
  batched.strideB = 0;
  GemmDesc transA = base;
  transA.transA = true;
  GemmDesc bias = base;
  bias.bias = 3;
  bias.epilogue = Epilogue::kBias;
  GemmDesc small = base;
  small.m = 4 * kMinTileRows - 1;
  GemmDesc narrow = base;
  narrow.n = 15;
  narrow.m = 4096;
  for (const GemmDesc *g : {&batched, &transA, &bias, &small}) {
    const std::vector<GemmTile> t = gemmTiles(*g);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].rows, g->m);
    EXPECT_EQ(t[0].cols, g->n);
    EXPECT_TRUE(wantedBCopies(*g, t).empty());
  }
  EXPECT_EQ(gemmTiles(narrow).size(), 1u);  // under two 16-byte spans of B
  // A C (laid out like D) is tiled like D.
  GemmDesc withC = base;
  withC.c = 4;
  withC.beta = 1.0;
  EXPECT_GT(gemmTiles(withC).size(), 1u);
}

}  // namespace
}  // namespace fusec::rt
