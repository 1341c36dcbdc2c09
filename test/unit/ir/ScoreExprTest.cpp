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

}  // namespace
}  // namespace fusec::ir
