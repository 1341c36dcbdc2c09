//===- CompareTest.cpp - compareTensors' verdicts and error maxima --------===//
#include <cmath>

#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "ir/Tensor.h"

namespace fusec::interp {
namespace {

ir::Tensor f32(std::vector<float> v) {
  ir::Tensor t(ir::DType::kF32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.setDouble(static_cast<int64_t>(i), v[i]);
  return t;
}

TEST(Compare, WithinToleranceReportsTheMaxima) {
  CompareResult r = compareTensors(f32({1, 2}), f32({1, 2.5f}));
  EXPECT_FALSE(r.pass);
  EXPECT_DOUBLE_EQ(r.maxAbsError, 0.5);
  EXPECT_EQ(r.mismatches, 1);
}

// A NaN or infinity where a number is expected is an unbounded error: the
// maxima used to stay at 0 ("max abs err 0 ... MISMATCH", red team s28 L3).
TEST(Compare, NanOrInfinityWhereANumberIsExpectedIsUnbounded) {
  const float nan = std::nanf(""), inf = INFINITY;
  CompareResult r = compareTensors(f32({nan, nan}), f32({1, 2}));
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_TRUE(std::isinf(r.maxAbsError));
  EXPECT_TRUE(std::isinf(compareTensors(f32({inf}), f32({1})).maxAbsError));
  EXPECT_FALSE(compareTensors(f32({-inf}), f32({inf})).pass);
  CompareResult same = compareTensors(f32({nan, inf, 3}), f32({nan, inf, 3}));
  EXPECT_TRUE(same.pass);
  EXPECT_EQ(same.maxAbsError, 0);
}

TEST(Compare, ShapeOrDtypeMismatchHasNoElementError) {
  CompareResult r = compareTensors(f32({1, 2}), f32({1, 2, 3}));
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(std::isnan(r.maxAbsError));
  EXPECT_NE(r.message.find("shape [2], expected [3]"), std::string::npos) << r.message;
  ir::Tensor i(ir::DType::kI32, {2});
  EXPECT_TRUE(std::isnan(compareTensors(i, f32({1, 2})).maxAbsError));
}

}  // namespace
}  // namespace fusec::interp
