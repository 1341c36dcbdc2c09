//===- ReductionTest.cpp - Tests of the reduction reference functions -----===//
//
// interp/ops/Reduction.cpp: Reduce* with axes input / keepdims /
// noop_with_empty_axes / negative axes / empty sets, ArgMax / ArgMin with
// ties and select_last_index, Softmax / LogSoftmax stability and axes,
// LayerNormalization (with broadcast scale, bias, Mean / InvStdDev outputs)
// and RMSNormalization, f16 inputs, and the errors for bad inputs. Expected
// values for the 2x3x4 pattern tensor were computed with numpy.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "test/unit/interp/KernelTestUtil.h"

namespace fusec::interp {
namespace {

using namespace fusec::interp::testing;
using absl::StatusCode;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The 2x3x4 pattern tensor:
/// [-2.25, 2.25, 2, 1.75, 1.5, 1.25, 1, 0.75, 0.5, 0.25, 0, -0.25,
///  -0.5, -0.75, -1, -1.25, -1.5, -1.75, -2, -2.25, 2.25, 2, 1.75, 1.5]
Tensor x234() { return pattern({2, 3, 4}); }

//===----------------------------------------------------------------------===//
// Reduce*
//===----------------------------------------------------------------------===//

TEST(ReductionTest, ReduceSumKeepdimsOverTwoAxes) {
  expectNear(run1("ReduceSum", {x234(), i64({2}, {0, 2})}), DType::kF32, {1, 3, 1}, {0.25, -3, 8});
  expectNear(run1("ReduceSum", {x234(), i64({2}, {2, 0})}, {{"keepdims", I(0)}}), DType::kF32, {3},
             {0.25, -3, 8});
}

TEST(ReductionTest, ReduceMeanNegativeAxisNoKeepdims) {
  expectNear(run1("ReduceMean", {x234(), i64({1}, {-1})}, {{"keepdims", I(0)}}), DType::kF32, {2, 3},
             {0.9375, 1.125, 0.125, -0.875, -1.875, 1.875});
}

TEST(ReductionTest, ReduceMaxMinProd) {
  expectNear(run1("ReduceMax", {x234(), i64({1}, {1})}, {{"keepdims", I(0)}}), DType::kF32, {2, 4},
             {1.5, 2.25, 2, 1.75, 2.25, 2, 1.75, 1.5});
  expectNear(run1("ReduceMin", {x234()}), DType::kF32, {1, 1, 1}, {-2.25});
  expectNear(run1("ReduceProd", {x234(), i64({1}, {0})}, {{"keepdims", I(0)}}), DType::kF32, {3, 4},
             {1.125, -1.6875, -2, -2.1875, -2.25, -2.1875, -2, -1.6875, 1.125, 0.5, 0, -0.375});
}

TEST(ReductionTest, ReduceSumSquareAndL2) {
  expectNear(run1("ReduceSumSquare", {x234(), i64({1}, {2})}, {{"keepdims", I(0)}}), DType::kF32, {2, 3},
             {17.1875, 5.375, 0.375, 3.375, 14.375, 14.375});
  expectNear(run1("ReduceL2", {x234(), i64({2}, {0, 1})}), DType::kF32, {1, 1, 4},
             {3.8890872965260113, 3.783186487605389, 3.61420807370024, 3.5443617196894563});
}

TEST(ReductionTest, EmptyAxesReduceAllOrNoop) {
  Tensor x = f32({2, 2}, {1, -2, 3, 4});
  // Absent or empty axes: all axes.
  expectNear(run1("ReduceSum", {x}), DType::kF32, {1, 1}, {6});
  expectNear(run1("ReduceSum", {x, i64({0}, {})}, {{"keepdims", I(0)}}), DType::kF32, {}, {6});
  // noop_with_empty_axes: a reduction over no axes (the elementwise part
  // still applies, as the ONNX reference does for ReduceSumSquare).
  Tensor noop = run1("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", I(1)}});
  expectNear(noop, DType::kF32, {2, 2}, {1, -2, 3, 4});
  expectNear(run1("ReduceSumSquare", {x}, {{"noop_with_empty_axes", I(1)}}), DType::kF32, {2, 2},
             {1, 4, 9, 16});
  expectNear(run1("ReduceL2", {x}, {{"noop_with_empty_axes", I(1)}}), DType::kF32, {2, 2}, {1, 2, 3, 4});
}

TEST(ReductionTest, ReductionOverEmptySetGivesIdentity) {
  Tensor x = f32({2, 0}, {});
  Tensor axes = i64({1}, {1});
  expectNear(run1("ReduceSum", {x, axes}), DType::kF32, {2, 1}, {0, 0});
  expectNear(run1("ReduceProd", {x, axes}), DType::kF32, {2, 1}, {1, 1});
  expectNear(run1("ReduceMax", {x, axes}), DType::kF32, {2, 1}, {-kInf, -kInf});
  expectNear(run1("ReduceMin", {x, axes}), DType::kF32, {2, 1}, {kInf, kInf});
  expectNear(run1("ReduceMean", {x, axes}), DType::kF32, {2, 1}, {kNaN, kNaN});
  expectInts(run1("ReduceMax", {it(DType::kI8, {1, 0}, {}), axes}), DType::kI8, {1, 1}, {-128});
  // Reducing a non-empty axis of an empty tensor gives an empty result.
  expectNear(run1("ReduceSum", {x, i64({1}, {0})}, {{"keepdims", I(0)}}), DType::kF32, {0}, {});
}

TEST(ReductionTest, IntegerReductions) {
  Tensor x = it(DType::kI32, {2, 3}, {1, -2, 3, 4, 5, -7});
  Tensor axes = i64({1}, {1});
  expectInts(run1("ReduceSum", {x, axes}), DType::kI32, {2, 1}, {2, 2});
  expectInts(run1("ReduceMean", {x, axes}), DType::kI32, {2, 1}, {0, 0});
  expectInts(run1("ReduceMax", {x, axes}), DType::kI32, {2, 1}, {3, 5});
  expectInts(run1("ReduceMin", {x, axes}), DType::kI32, {2, 1}, {-2, -7});
  expectInts(run1("ReduceProd", {x, axes}), DType::kI32, {2, 1}, {-6, -140});
  expectInts(run1("ReduceSumSquare", {x, axes}), DType::kI32, {2, 1}, {14, 90});
  expectInts(run1("ReduceL2", {x, axes}), DType::kI32, {2, 1}, {3, 9});
}

TEST(ReductionTest, HalfPrecisionInput) {
  Tensor x = ft(DType::kF16, {2, 2}, {1, 2, 3, 4.5});
  expectNear(run1("ReduceMean", {x, i64({1}, {1})}), DType::kF16, {2, 1}, {1.5, 3.75});
}

TEST(ReductionTest, ReduceErrors) {
  EXPECT_EQ(code("ReduceSum", {x234(), i64({1}, {3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceSum", {x234(), i64({1}, {-4})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceSum", {x234(), i64({2}, {1, -2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceSum", {x234(), f32({1}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceSum", {boolT({1}, {1})}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

TEST(ReductionTest, ArgMaxArgMinAxes) {
  expectInts(run1("ArgMax", {x234()}, {{"axis", I(1)}, {"keepdims", I(0)}}), DType::kI64, {2, 4},
             {1, 0, 0, 0, 2, 2, 2, 2});
  expectInts(run1("ArgMin", {x234()}, {{"axis", I(-1)}}), DType::kI64, {2, 3, 1}, {0, 3, 3, 3, 3, 3});
  expectInts(run1("ArgMax", {f32({2, 2}, {1, 5, 7, 2})}), DType::kI64, {1, 2}, {1, 0});
}

TEST(ReductionTest, ArgMaxTiesAndSelectLastIndex) {
  Tensor x = f32({2, 3}, {2, 5, 5, 1, 1, 0});
  expectInts(run1("ArgMax", {x}, {{"axis", I(1)}}), DType::kI64, {2, 1}, {1, 0});
  expectInts(run1("ArgMax", {x}, {{"axis", I(1)}, {"select_last_index", I(1)}}), DType::kI64, {2, 1},
             {2, 1});
  expectInts(run1("ArgMin", {x}, {{"axis", I(1)}, {"select_last_index", I(1)}}), DType::kI64, {2, 1},
             {0, 2});
  expectInts(run1("ArgMin", {i64({4}, {3, -1, 7, -1})}, {{"keepdims", I(0)}}), DType::kI64, {}, {1});
}

TEST(ReductionTest, ArgMaxErrors) {
  EXPECT_EQ(code("ArgMax", {x234()}, {{"axis", I(3)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ArgMax", {f32({2, 0}, {})}, {{"axis", I(1)}}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

TEST(ReductionTest, SoftmaxAndLogSoftmaxAxis1) {
  expectNear(run1("Softmax", {x234()}, {{"axis", I(1)}}), DType::kF32, {2, 3, 4},
             {0.016902251977562115, 0.6652409557748218, 0.6652409557748218, 0.6652409557748218,
              0.7187020423236421, 0.24472847105479764, 0.24472847105479764, 0.24472847105479764,
              0.2643957056987957, 0.09003057317038046, 0.09003057317038046, 0.09003057317038046,
              0.05878718051874077, 0.05878718051874077, 0.05878718051874077, 0.05878718051874077,
              0.021626595117279053, 0.021626595117279053, 0.021626595117279053, 0.021626595117279053,
              0.9195862243639801, 0.9195862243639801, 0.9195862243639801, 0.9195862243639801});
  expectNear(run1("LogSoftmax", {x234()}, {{"axis", I(-2)}}), DType::kF32, {2, 3, 4},
             {-4.080308412820332, -0.40760596444438046, -0.40760596444438046, -0.40760596444438046,
              -0.3303084128203319, -1.4076059644443804, -1.4076059644443804, -1.4076059644443804,
              -1.330308412820332, -2.40760596444438, -2.40760596444438, -2.40760596444438,
              -2.833831466235782, -2.833831466235782, -2.833831466235782, -2.833831466235782,
              -3.833831466235782, -3.833831466235782, -3.833831466235782, -3.833831466235782,
              -0.08383146623578203, -0.08383146623578203, -0.08383146623578203,
              -0.08383146623578203},
             1e-4);
}

TEST(ReductionTest, SoftmaxIsStableForLargeValues) {
  Tensor x = f32({1, 3}, {10000, 10001, 10002});
  double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1;
  expectNear(run1("Softmax", {x}), DType::kF32, {1, 3}, {e0 / s, e1 / s, 1 / s});
  expectNear(run1("LogSoftmax", {x}), DType::kF32, {1, 3},
             {-2 - std::log(s), -1 - std::log(s), -std::log(s)});
  // A row of -inf except one element.
  expectNear(run1("Softmax", {f32({2}, {-kInf, 0})}), DType::kF32, {2}, {0, 1});
}

TEST(ReductionTest, SoftmaxErrors) {
  EXPECT_EQ(code("Softmax", {x234()}, {{"axis", I(3)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Softmax", {i64({2}, {1, 2})}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// LayerNormalization / RMSNormalization
//===----------------------------------------------------------------------===//

TEST(ReductionTest, LayerNormAxis1WithAllOutputs) {
  // Expected values from onnxruntime 1.32 (LayerNormalization-17), epsilon
  // 1e-3, scale [3,4] and bias [4] broadcast over the normalised [3,4].
  Tensor scale = pattern({3, 4}, 3, 5, 2, 2.0);
  Tensor bias = f32({4}, {0.1, 0.2, -0.3, 0.4});
  auto r = run("LayerNormalization", {x234(), scale, bias}, {{"axis", I(1)}, {"epsilon", F(1e-3f)}}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  expectNear((*r)[0], DType::kF32, {2, 3, 4},
             {2.635324001312256, 0.84712815284729, -0.8407509326934814, 1.268747329711914,
              0.10000000149011612, -0.2432384490966797, -0.1847580224275589, 0.39113524556159973,
              -0.09502491354942322, 0.20000000298023224, 0.320533812046051, -0.016644133254885674,
              0.22937677800655365, 0.05768554285168648, -0.0800594836473465, -0.19513317942619324,
              0.10000000149011612, 1.1056374311447144, -0.8304448127746582, 1.0080708265304565,
              1.6783967018127441, 0.20000000298023224, -1.5678924322128296, 0.9563201665878296});
  expectNear((*r)[1], DType::kF32, {2, 1, 1}, {0.7291666865348816, -0.2916666567325592});
  expectNear((*r)[2], DType::kF32, {2, 1, 1}, {0.8510178327560425, 0.621008574962616});
}

TEST(ReductionTest, LayerNormDefaultAxisNoBiasF16) {
  Tensor x = ft(DType::kF16, {2, 2}, {1, 3, -2, 2});
  Tensor scale = ft(DType::kF16, {2}, {1, 2});
  auto r = run("LayerNormalization", {x, scale}, {{"epsilon", F(0.0f)}}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF16, {2, 2}, {-1, 2, -1, 2});
  // Statistics are stored in f32 (stash_type = 1).
  expectNear((*r)[1], DType::kF32, {2, 1}, {2, 0});
  expectNear((*r)[2], DType::kF32, {2, 1}, {1, 0.5});
  // Only the outputs the node has are returned.
  auto one = run("LayerNormalization", {x, scale});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 1u);
}

TEST(ReductionTest, LayerNormErrors) {
  EXPECT_EQ(code("LayerNormalization", {x234(), f32({3}, {1, 1, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("LayerNormalization", {x234(), f32({4}, {1, 1, 1, 1})}, {{"axis", I(3)}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("LayerNormalization", {x234()}), StatusCode::kInvalidArgument);
}

TEST(ReductionTest, RmsNorm) {
  // Expected values from onnxruntime 1.32 (RMSNormalization-23).
  expectNear(run1("RMSNormalization", {pattern({2, 3}), f32({3}, {1, 0.5, 2})}), DType::kF32, {2, 3},
             {-1.036927580833435, 0.5184637904167175, 1.8434268236160278, 1.1560094356536865,
              0.49543261528015137, 1.651442050933838});
  // axis 0 over a [2,2] input with a scalar scale.
  expectNear(run1("RMSNormalization", {f32({2, 2}, {1, 1, 1, 1}), f32({}, {3})},
                  {{"axis", I(0)}, {"epsilon", F(0.0f)}}),
             DType::kF32, {2, 2}, {3, 3, 3, 3});
  EXPECT_EQ(code("RMSNormalization", {pattern({2, 3}), f32({2}, {1, 1})}), StatusCode::kInvalidArgument);
}

TEST(ReductionTest, CumSumModes) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor ax = i64({}, {0});
  expectNear(run1("CumSum", {x, ax}), DType::kF32, {4}, {1, 3, 6, 10});
  expectNear(run1("CumSum", {x, ax}, {{"exclusive", I(1)}}), DType::kF32, {4}, {0, 1, 3, 6});
  expectNear(run1("CumSum", {x, ax}, {{"reverse", I(1)}}), DType::kF32, {4}, {10, 9, 7, 4});
  expectNear(run1("CumSum", {x, ax}, {{"exclusive", I(1)}, {"reverse", I(1)}}), DType::kF32, {4},
             {9, 7, 4, 0});
}

TEST(ReductionTest, CumSumAxesDtypesAndEdges) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(run1("CumSum", {x, i64({}, {0})}), DType::kF32, {2, 3}, {1, 2, 3, 5, 7, 9});
  expectNear(run1("CumSum", {x, i64({1}, {-1})}), DType::kF32, {2, 3}, {1, 3, 6, 4, 9, 15});
  expectNear(run1("CumSum", {x, it(DType::kI32, {}, {1})}, {{"reverse", I(1)}}), DType::kF32, {2, 3},
             {6, 5, 3, 15, 11, 6});
  // int64 position ids from a padding mask (BLOOM / OPT exports).
  expectInts(run1("CumSum", {i64({2, 4}, {0, 1, 1, 1, 1, 1, 1, 0}), i64({}, {1})}), DType::kI64, {2, 4},
             {0, 1, 2, 3, 1, 2, 3, 3});
  expectNear(run1("CumSum", {f32({0, 3}, {}), i64({}, {0})}), DType::kF32, {0, 3}, {});
  expectNear(run1("CumSum", {f32({2, 1}, {5, 7}), i64({}, {1})}, {{"exclusive", I(1)}}), DType::kF32,
             {2, 1}, {0, 0});
  EXPECT_EQ(code("CumSum", {x, i64({}, {2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("CumSum", {x, i64({2}, {0, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("CumSum", {x, f32({}, {0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("CumSum", {f32({}, {1}), i64({}, {0})}), StatusCode::kInvalidArgument);
}


TEST(ReductionTest, CumProdModesAndDtypes) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor ax = i64({}, {0});
  expectNear(run1("CumProd", {x, ax}), DType::kF32, {4}, {1, 2, 6, 24});
  expectNear(run1("CumProd", {x, ax}, {{"exclusive", I(1)}}), DType::kF32, {4}, {1, 1, 2, 6});
  expectNear(run1("CumProd", {x, ax}, {{"reverse", I(1)}}), DType::kF32, {4}, {24, 24, 12, 4});
  expectNear(run1("CumProd", {x, ax}, {{"exclusive", I(1)}, {"reverse", I(1)}}), DType::kF32, {4},
             {24, 12, 4, 1});
  // Other axes, a zero, negatives, i32 (wrapping), empty and length-1 axes.
  expectNear(run1("CumProd", {f32({2, 3}, {1, -2, 0, 4, 5, 6}), i64({1}, {-1})}), DType::kF32, {2, 3},
             {1, -2, 0, 4, 20, 120});
  expectInts(run1("CumProd", {it(DType::kI32, {2}, {65536, 65536}), i64({}, {0})}), DType::kI32, {2},
             {65536, 0});
  expectNear(run1("CumProd", {f32({0, 3}, {}), i64({}, {0})}), DType::kF32, {0, 3}, {});
  expectNear(run1("CumProd", {f32({2, 1}, {5, 7}), i64({}, {1})}, {{"exclusive", I(1)}}), DType::kF32,
             {2, 1}, {1, 1});
  EXPECT_EQ(code("CumProd", {x, i64({}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("CumProd", {f32({}, {1}), i64({}, {0})}), StatusCode::kInvalidArgument);
}

TEST(ReductionTest, DetBatchedSingularAndEmpty) {
  // numpy.linalg.det: 27 and -3.
  expectNear(run1("Det", {f32({2, 3, 3}, {1.5, 2, -1, 0, 4, 2, 3, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 10})}),
             DType::kF32, {2}, {27, -3});
  // A pivot needed (zero leading entry), a singular matrix, 1x1 and 0x0.
  expectNear(run1("Det", {f32({2, 2}, {0, 1, 1, 0})}), DType::kF32, {}, {-1});
  expectNear(run1("Det", {f32({2, 2}, {1, 2, 2, 4})}), DType::kF32, {}, {0});
  expectNear(run1("Det", {f32({1, 1}, {-3.5})}), DType::kF32, {}, {-3.5});
  expectNear(run1("Det", {f32({0, 0}, {})}), DType::kF32, {}, {1});
  expectNear(run1("Det", {f32({0, 2, 2}, {})}), DType::kF32, {0}, {});
  EXPECT_EQ(code("Det", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Det", {f32({3}, {1, 2, 3})}), StatusCode::kInvalidArgument);
}

TEST(ReductionTest, TopKOrdersAndTies) {
  // Ties: the lower index first, largest and smallest; k = 0 and k = len.
  Tensor x = f32({2, 5}, {3, 1, 3, 2, 1, -1, 4, 4, 0, 4});
  auto r = run("TopK", {x, i64({1}, {3})}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {2, 3}, {3, 3, 2, 4, 4, 4});
  expectInts((*r)[1], DType::kI64, {2, 3}, {0, 2, 3, 1, 2, 4});
  r = run("TopK", {x, i64({1}, {2})}, {{"largest", I(0)}}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {2, 2}, {1, 1, -1, 0});
  expectInts((*r)[1], DType::kI64, {2, 2}, {1, 4, 0, 3});
  r = run("TopK", {x, i64({1}, {0})}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {2, 0}, {});
  // Axis 0, sorted = 0 (sorted anyway), i64 values.
  r = run("TopK", {i64({3, 2}, {5, -7, 5, 9, 6, -7}), i64({1}, {3})}, {{"axis", I(0)}, {"sorted", I(0)}}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectInts((*r)[0], DType::kI64, {3, 2}, {6, 9, 5, -7, 5, -7});
  expectInts((*r)[1], DType::kI64, {3, 2}, {2, 1, 0, 0, 1, 2});
  // NaN orders above every number (numpy's sort).
  r = run("TopK", {f32({3}, {1, kNaN, 2}), i64({1}, {2})}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectInts((*r)[1], DType::kI64, {2}, {1, 2});
  // Empty batch.
  r = run("TopK", {f32({0, 4}, {}), i64({1}, {2})}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {0, 2}, {});
}

TEST(ReductionTest, TopKErrors) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run("TopK", {x, i64({1}, {4})}, {}, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run("TopK", {x, i64({1}, {-1})}, {}, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run("TopK", {x, i64({2}, {1, 1})}, {}, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run("TopK", {x, i64({1}, {1})}, {{"axis", I(2)}}, 2).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(run("TopK", {f32({}, {1}), i64({1}, {1})}, {}, 2).status().code(), StatusCode::kInvalidArgument);
}

TEST(ReductionTest, HardmaxAxesTiesAndEdges) {
  expectNear(run1("Hardmax", {f32({2, 3}, {1, 3, 3, -1, -2, -5})}), DType::kF32, {2, 3}, {0, 1, 0, 1, 0, 0});
  expectNear(run1("Hardmax", {f32({2, 2}, {1, 3, 2, 0})}, {{"axis", I(0)}}), DType::kF32, {2, 2},
             {0, 1, 1, 0});
  expectNear(run1("Hardmax", {f32({3}, {1, kNaN, 2})}), DType::kF32, {3}, {0, 1, 0});
  expectNear(run1("Hardmax", {f32({2, 0}, {})}), DType::kF32, {2, 0}, {});
  expectNear(run1("Hardmax", {f32({1, 1}, {-kInf})}), DType::kF32, {1, 1}, {1});
  EXPECT_EQ(code("Hardmax", {f32({2}, {1, 2})}, {{"axis", I(1)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Hardmax", {i64({2}, {1, 2})}), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
