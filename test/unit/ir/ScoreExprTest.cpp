//===- ScoreExprTest.cpp - ScoreExpr integer semantics --------------------===//
//
// Integer arithmetic of the attention expression language (ir/ScoreExpr.h):
// exact 64-bit values beyond 2^53, two's complement wrapping, and no trap on
// INT64_MIN / -1 or division by zero (issue 10: the product wrapped through
// a double and the division killed the interpreter and the compiler with
// SIGFPE).
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "ir/ScoreExpr.h"

namespace fusec::ir {
namespace {

double eval(const std::string &text, int64_t q = 0, int64_t k = 0) {
  auto e = parseScoreExpr(text, ScoreExprContext{});
  EXPECT_TRUE(e.ok()) << e.status();
  ScoreEnv env;
  env.q = q;
  env.k = k;
  return evalScoreExpr(*e, env);
}

constexpr double kMin = static_cast<double>(std::numeric_limits<int64_t>::min());

TEST(ScoreExprInt, ProductWrappingToMinDividedByMinusOneWraps) {
  // (2^15)^4 * 8 = 2^63 wraps to INT64_MIN; INT64_MIN / -1 wraps to itself.
  EXPECT_EQ(eval("(k * k * k * k * 8) / -1", 0, 32768), kMin);
  EXPECT_EQ(eval("(k * k * k * k * 8) / -1 != 0", 0, 32768), 1.0);
  EXPECT_EQ(eval("-(k * k * k * k * 8)", 0, 32768), kMin);
}

TEST(ScoreExprInt, DivisionByZeroIsZero) {
  EXPECT_EQ(eval("q / 0", 7), 0.0);
  EXPECT_EQ(eval("q / (k - k)", 7, 3), 0.0);
}

TEST(ScoreExprInt, ExactBeyondTwoToThe53) {
  // 2^53 + 1 is not a double; the int path keeps it exact until the root.
  EXPECT_EQ(eval("(k * k * k + 1) - k * k * k", 0, 1 << 18), 1.0);
  // Wrapping addition: INT64_MAX + 1 = INT64_MIN.
  EXPECT_EQ(eval("(k * k * k * k * 8 - 1) + 1", 0, 32768), kMin);
}

TEST(ScoreExprInt, ComparisonsAreExact) {
  // 2^54 + 1 and 2^54 are the same double but different int64 values.
  EXPECT_EQ(eval("k * k * k + 1 != k * k * k", 0, 1 << 18), 1.0);
  EXPECT_EQ(eval("k * k * k + 1 > k * k * k", 0, 1 << 18), 1.0);
  EXPECT_EQ(eval("k <= q", 3, 2), 1.0);
}

TEST(ScoreExprInt, TruncatesTowardZero) {
  EXPECT_EQ(eval("(k - q) / 2", 3, 0), -1.0);
  EXPECT_EQ(eval("abs(k - q)", 3, 0), 3.0);
}

// --- mask structure (diagonalBound, diagonalInterval) ----------------------
// Every classification is checked against evaluation on a grid: what the
// rewrite writes and the generators skip tiles from must mean what the
// expression means.

ScoreExpr mask(const std::string &text) {
  ScoreExprContext ctx;
  ctx.allowScore = false;
  ctx.allowTables = false;
  auto e = parseScoreExpr(text, ctx);
  EXPECT_TRUE(e.ok()) << e.status();
  return *e;
}

TEST(ScoreExprMask, DiagonalBoundsInEveryForm) {
  struct Case {
    const char *text;
    DiagonalBound::Kind kind;
    int64_t bound;
    const char *canonical;
  } cases[] = {
      {"k <= q", DiagonalBound::kUpper, 0, "k <= q"},
      {"q >= k", DiagonalBound::kUpper, 0, "k <= q"},
      {"k < q + 8", DiagonalBound::kUpper, 7, "k <= q + 7"},
      {"(q + 200) >= k", DiagonalBound::kUpper, 200, "k <= q + 200"},
      {"!(k > q - 3)", DiagonalBound::kUpper, -3, "k <= q - 3"},
      {"(q + 200) - k < 1024", DiagonalBound::kWindow, 824, "q - k < 824"},
      {"k - q > -4", DiagonalBound::kWindow, 4, "q - k < 4"},
      {"!(q - k >= 4)", DiagonalBound::kWindow, 4, "q - k < 4"},
      {"2 * q - (q + k) <= 5", DiagonalBound::kWindow, 6, "q - k < 6"},
  };
  for (const Case &c : cases) {
    const ScoreExpr e = mask(c.text);
    const std::optional<DiagonalBound> d = diagonalBound(e, e.root);
    ASSERT_TRUE(d.has_value()) << c.text;
    EXPECT_EQ(d->kind, c.kind) << c.text;
    EXPECT_EQ(d->bound, c.bound) << c.text;
    EXPECT_EQ(diagonalBoundText(*d), c.canonical) << c.text;
    const ScoreExpr canon = mask(c.canonical);
    ScoreEnv env;
    for (env.q = 0; env.q < 40; ++env.q)
      for (env.k = 0; env.k < 260; ++env.k)
        ASSERT_EQ(evalScoreExpr(e, env), evalScoreExpr(canon, env)) << c.text << " at " << env.q << "," << env.k;
  }
}

TEST(ScoreExprMask, NotDiagonal) {
  for (const char *text : {"q / 8 == k / 8", "k <= 2 * q", "k == q", "k <= q || k == 0", "h < 2", "k < 5"}) {
    const ScoreExpr e = mask(text);
    EXPECT_FALSE(diagonalBound(e, e.root).has_value()) << text;
  }
}

TEST(ScoreExprMask, IntervalOfConjunctsMatchesEvaluation) {
  struct Case {
    const char *text;
    bool diagonal;
  } cases[] = {{"k <= q", true},
               {"(k <= q) && (q - k < 4)", true},
               {"(k <= q + 200) && ((q - k) < 824) && (k <= q + 300)", true},
               {"(q - k < 3) && (k <= q - 5)", true},  // empty: lo 5 > hi 2
               {"(k <= q) && (q / 8 == k / 8)", false}};
  for (const Case &c : cases) {
    const ScoreExpr e = mask(c.text);
    const auto band = diagonalInterval(e);
    ASSERT_EQ(band.has_value(), c.diagonal) << c.text;
    if (!band) continue;
    ScoreEnv env;
    for (env.q = 0; env.q < 50; ++env.q)
      for (env.k = 0; env.k < 300; ++env.k) {
        const bool in = env.q - env.k >= band->first && env.q - env.k <= band->second;
        ASSERT_EQ(evalScoreExpr(e, env) != 0, in) << c.text << " at " << env.q << "," << env.k;
      }
  }
  EXPECT_FALSE(diagonalInterval(ScoreExpr{}).has_value());
}

TEST(ScoreExprMask, IndexLinear) {
  const ScoreExpr e = mask("3 * (q - 2) - -k + 7 > 0");
  const auto l = indexLinear(e, e.node(e.root).a);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->cq, 3);
  EXPECT_EQ(l->ck, 1);
  EXPECT_EQ(l->c0, 1);
  EXPECT_FALSE(indexLinear(mask("q * k > 0"), mask("q * k > 0").node(mask("q * k > 0").root).a).has_value());
}

}  // namespace
}  // namespace fusec::ir
