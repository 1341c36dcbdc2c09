//===- NnTest.cpp - Tests of the contraction / conv / pool reference functions -===//
//
// interp/ops/Nn.cpp: MatMul 1-D promotion and batch broadcasting (float and
// int), Gemm transposes / alpha / beta / C broadcasting, Conv 1-D / 2-D / 3-D
// with groups, dilations, strides, asymmetric pads and auto_pad, MaxPool and
// AveragePool with ceil_mode, pads, dilations, count_include_pad and the
// Indices output, the global pools and BatchNormalization, and the errors for
// bad inputs. Expected values for the pattern tensors were computed with
// onnxruntime 1.32 (and agree with the onnx 1.23 reference evaluator).
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

/// 0, 1, 2, ... divided by \p div.
Tensor ramp(ir::Shape shape, double div = 1.0) {
  std::vector<double> v(ir::numElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / div;
  return f32(std::move(shape), v);
}

//===----------------------------------------------------------------------===//
// MatMul / Gemm
//===----------------------------------------------------------------------===//

TEST(NnTest, MatMul2D) {
  expectNear(run1("MatMul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {1, 0, 0, 1, 1, 1})}),
             DType::kF32, {2, 2}, {4, 5, 10, 11});
}

TEST(NnTest, MatMulBatchBroadcastAndVectors) {
  Tensor a = ramp({2, 1, 3, 4}, 4);
  std::vector<int64_t> bv(24);
  for (int i = 0; i < 24; ++i) bv[i] = i % 7 - 3;
  Tensor b = Tensor::fromInts(DType::kF32, {3, 4, 2}, bv);
  expectNear(run1("MatMul", {a, b}), DType::kF32, {2, 3, 3, 2},
             {2.5,   -1.25, 2.5,   -4.25, 2.5,   -7.25, -1.25,  0.25,  -4.25, 1.25,  -7.25, 2.25,
              0.25,  -1.75, 1.25,  -3.75, 2.25,  -5.75, 2.5,    -10.25, 2.5,  -13.25, 2.5,  -16.25,
              -10.25, 3.25, -13.25, 4.25, -16.25, 5.25, 3.25,   -7.75, 4.25,  -9.75, 5.25,  -11.75});
  Tensor v = f32({4}, {1, 2, 3, 4});
  expectNear(run1("MatMul", {v, b}), DType::kF32, {3, 2}, {10, -8, -8, 2, 2, -9});
  expectNear(run1("MatMul", {a, v}), DType::kF32, {2, 1, 3}, {5, 15, 25, 35, 45, 55});
  expectNear(run1("MatMul", {v, v}), DType::kF32, {}, {30});
}

TEST(NnTest, MatMulIntegersAndHalf) {
  expectInts(run1("MatMul", {it(DType::kI32, {1, 2}, {3, -4}), it(DType::kI32, {2, 1}, {5, 6})}),
             DType::kI32, {1, 1}, {-9});
  expectInts(run1("MatMul", {it(DType::kU8, {1, 2}, {200, 100}), it(DType::kU8, {2, 1}, {1, 1})}),
             DType::kU8, {1, 1}, {44});  // 300 wraps in u8
  expectNear(run1("MatMul", {ft(DType::kF16, {1, 2}, {0.5, 2}), ft(DType::kF16, {2, 1}, {2, 0.25})}),
             DType::kF16, {1, 1}, {1.5});
}

TEST(NnTest, MatMulEmptyAndErrors) {
  expectNear(run1("MatMul", {f32({2, 0}, {}), f32({0, 3}, {})}), DType::kF32, {2, 3}, {0, 0, 0, 0, 0, 0});
  expectNear(run1("MatMul", {f32({0, 2}, {}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}), DType::kF32, {0, 3}, {});
  EXPECT_EQ(code("MatMul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MatMul", {ramp({2, 1, 2}), ramp({3, 2, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MatMul", {f32({}, {1}), f32({1}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MatMul", {f32({1}, {1}), i64({1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(NnTest, GemmTransposesAlphaBetaAndBias) {
  Tensor a = f32({3, 2}, {1, 2, 3, 4, 5, 6});  // A^T = [[1,3,5],[2,4,6]]
  Tensor b = f32({2, 3}, {1, 0, 1, 0, 1, 1});  // B^T = [[1,0],[0,1],[1,1]]
  // op(A) = A^T [2,3], op(B) = B^T [3,2] -> [[6,8],[8,10]]
  expectNear(run1("Gemm", {a, b}, {{"transA", I(1)}, {"transB", I(1)}}), DType::kF32, {2, 2},
             {6, 8, 8, 10});
  expectNear(run1("Gemm", {a, b, f32({2}, {1, -1})},
                  {{"transA", I(1)}, {"transB", I(1)}, {"alpha", F(0.5f)}, {"beta", F(2.0f)}}),
             DType::kF32, {2, 2}, {5, 2, 6, 3});
  // Plain A [3,2] x B [2,3] with a scalar C.
  expectNear(run1("Gemm", {a, b, f32({}, {1})}), DType::kF32, {3, 3},
             {2, 3, 4, 4, 5, 8, 6, 7, 12});
  // C of shape [3,1] broadcasts along columns.
  expectNear(run1("Gemm", {a, b, f32({3, 1}, {0, 10, 20})}, {{"beta", F(1.0f)}}), DType::kF32, {3, 3},
             {1, 2, 3, 13, 14, 17, 25, 26, 31});
  expectInts(run1("Gemm", {it(DType::kI64, {1, 2}, {2, 3}), it(DType::kI64, {2, 1}, {4, 5})}),
             DType::kI64, {1, 1}, {23});
}

TEST(NnTest, GemmErrors) {
  Tensor a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(code("Gemm", {a, a}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gemm", {a, a, f32({2}, {1, 2})}, {{"transB", I(1)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gemm", {f32({3}, {1, 2, 3}), a}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

TEST(NnTest, Conv2DGroupsDilationsStridesAsymmetricPads) {
  Tensor x = pattern({1, 4, 5, 5});
  Tensor w = pattern({4, 2, 3, 3}, 11, 7, 3, 2.0);
  Tensor b = f32({4}, {0.5, -1, 0.25, 2});
  expectNear(run1("Conv", {x, w, b},
                  {{"group", I(2)}, {"dilations", Is({2, 1})}, {"strides", Is({1, 2})},
                   {"pads", Is({1, 0, 2, 1})}}),
             DType::kF32, {1, 4, 4, 2},
             {5.25, 4.5, 0.625, -13.125, -3.875, -3.625, 6.25, 4.125, -5.375, -5.125, 8.375,
              3.875, 2.125, 3.375, -4.25, -0.625, -3.375, 5.0, 8.875, 6.5, 2.75, 1.5, -2.75,
              -4.0, 4.5, 3.25, -0.625, -5.625, -2.5, -9.875, 1.625, 6.125});
}

TEST(NnTest, Conv1DSameLower) {
  Tensor x = pattern({1, 2, 7});
  Tensor w = pattern({3, 2, 2}, 5, 7, 3, 2.0);
  expectNear(run1("Conv", {x, w}, {{"auto_pad", S("SAME_LOWER")}, {"strides", Is({2})}}), DType::kF32,
             {1, 3, 4}, {-3.0, -1.625, -0.875, -0.125, -2.25, 3.75, 3.75, 3.75, 1.125, 2.125, 1.375, 0.625});
}

TEST(NnTest, Conv3DSameUpper) {
  Tensor x = pattern({1, 1, 3, 4, 4});
  Tensor w = pattern({2, 1, 2, 2, 2}, 3, 5, 2, 1.0);
  expectNear(run1("Conv", {x, w}, {{"auto_pad", S("SAME_UPPER")}, {"strides", Is({1, 2, 2})}}),
             DType::kF32, {1, 2, 3, 2, 2},
             {11.5, 3.0, -3.5, -2.5, 5.25, 1.5, -5.0, -4.0, -1.75, 7.75, -1.75, -1.75,
              -12.25, -2.75, 2.0, 2.0, -2.75, -12.25, 2.0, 2.0, 0.0, 4.25, 2.75, 2.25});
}

TEST(NnTest, ConvValidAndKernelShapeAttr) {
  // 1x1x3x3 all ones, 2x2 kernel of ones: each output = 4.
  Tensor x = f32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expectNear(run1("Conv", {x, w}, {{"auto_pad", S("VALID")}, {"kernel_shape", Is({2, 2})}}),
             DType::kF32, {1, 1, 2, 2}, {4, 4, 4, 4});
  // Batch of 2 with f16 data.
  Tensor xh = ft(DType::kF16, {2, 1, 1, 2}, {1, 2, 3, 4});
  Tensor wh = ft(DType::kF16, {1, 1, 1, 2}, {0.5, 0.25});
  expectNear(run1("Conv", {xh, wh}), DType::kF16, {2, 1, 1, 1}, {1, 2.5});
}

TEST(NnTest, ConvErrors) {
  Tensor x = pattern({1, 4, 5, 5});
  EXPECT_EQ(code("Conv", {x, pattern({2, 3, 3, 3})}), StatusCode::kInvalidArgument);  // channels
  EXPECT_EQ(code("Conv", {x, pattern({2, 2, 3, 3})}, {{"group", I(3)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 7, 7})}), StatusCode::kInvalidArgument);  // too big
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 3, 3}), f32({3}, {1, 2, 3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 3, 3})}, {{"strides", Is({1})}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 3, 3})}, {{"strides", Is({0, 1})}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 3, 3})}, {{"kernel_shape", Is({2, 2})}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, pattern({2, 4, 3, 3})}, {{"auto_pad", S("SAME")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {f32({4, 5}, std::vector<double>(20, 0)), pattern({2, 4})}),
            StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

TEST(NnTest, MaxPoolCeilModeWithPadsAndIndices) {
  auto r = run("MaxPool", {pattern({1, 2, 6, 6})},
               {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"pads", Is({1, 1, 1, 1})},
                {"ceil_mode", I(1)}},
               2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {1, 2, 4, 4},
             {2.25, 2.25, 1.75, 1.25, 1.0, 2.25, 2.0, 1.5, 1.25, 2.25, 2.0, 1.5, -0.25, -0.5, -1.0,
              -1.5, 1.5, 2.25, 2.25, 1.75, 1.5, 1.25, 2.25, 2.0, 1.75, 1.5, 2.25, 2.0, 0.25, 0.0,
              -0.5, -1.0});
  expectInts((*r)[1], DType::kI64, {1, 2, 4, 4},
             {1, 1, 3, 5, 6, 20, 21, 23, 24, 20, 21, 23, 30, 31, 33, 35,
              42, 39, 39, 41, 42, 43, 58, 59, 60, 61, 58, 59, 66, 67, 69, 71});
}

TEST(NnTest, MaxPoolDilationsColumnMajorIndices) {
  auto r = run("MaxPool", {pattern({1, 2, 6, 6})},
               {{"kernel_shape", Is({2, 2})}, {"dilations", Is({2, 2})}, {"storage_order", I(1)}}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {1, 2, 4, 4},
             {2.0, 2.25, 2.0, 1.75, 2.25, 2.0, 2.25, 2.0, 1.25, 1.0, 0.75, 0.5, 2.25, 2.0, 2.25, 2.0,
              0.0, 2.25, 2.0, 2.25, 1.5, 1.25, 2.25, 2.0, 1.75, 1.5, 1.25, 1.0, 0.25, 0.0, 2.25, 2.0});
  expectInts((*r)[1], DType::kI64, {1, 2, 4, 4},
             {12, 6, 12, 18, 15, 21, 15, 21, 4, 10, 16, 22, 15, 21, 15, 21,
              38, 54, 60, 54, 37, 43, 63, 69, 40, 46, 52, 58, 41, 47, 63, 69});
}

TEST(NnTest, MaxPoolOnnxCeilExampleAndUint8) {
  // test_maxpool_2d_ceil: 4x4 input, kernel 3, stride 2, ceil_mode -> 2x2.
  Tensor x = ramp({1, 1, 4, 4});
  expectNear(run1("MaxPool", {x}, {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"ceil_mode", I(1)}}),
             DType::kF32, {1, 1, 2, 2}, {10, 11, 14, 15});
  expectNear(run1("MaxPool", {x}, {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}}), DType::kF32,
             {1, 1, 1, 1}, {10});
  Tensor q = it(DType::kU8, {1, 1, 2, 2}, {1, 200, 3, 4});
  expectInts(run1("MaxPool", {q}, {{"kernel_shape", Is({2, 2})}}), DType::kU8, {1, 1, 1, 1}, {200});
}

TEST(NnTest, MaxPool1DSameUpper) {
  Tensor x = f32({1, 1, 5}, {1, 5, 2, 4, 3});
  expectNear(run1("MaxPool", {x}, {{"kernel_shape", Is({2})}, {"auto_pad", S("SAME_UPPER")}}), DType::kF32,
             {1, 1, 5}, {5, 5, 4, 4, 3});
  expectNear(run1("MaxPool", {x}, {{"kernel_shape", Is({2})}, {"auto_pad", S("SAME_LOWER")}}), DType::kF32,
             {1, 1, 5}, {1, 5, 5, 4, 4});
}

TEST(NnTest, AveragePoolCeilModeCountIncludePad) {
  Tensor x = pattern({1, 2, 6, 6});
  expectNear(run1("AveragePool", {x},
                  {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"pads", Is({1, 1, 1, 1})},
                   {"ceil_mode", I(1)}, {"count_include_pad", I(1)}}),
             DType::kF32, {1, 2, 4, 4},
             {0.1944444477558136, 0.8333333134651184, 0.5, 0.1666666716337204, -0.4166666567325592,
              0.0555555559694767, 0.0833333358168602, -0.0833333358168602, -0.3055555522441864,
              0.2222222238779068, 0.25, 0.0, -0.125, -0.375, -0.625, -0.375, -0.1111111119389534,
              0.1111111119389534, 0.8333333134651184, 0.3333333432674408, -0.0833333358168602, -0.5,
              0.0555555559694767, 0.1666666716337204, 0.02777777798473835, -0.3333333432674408,
              0.2222222238779068, 0.25, 0.0416666679084301, -0.125, -0.375, -0.25});
  expectNear(run1("AveragePool", {x},
                  {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"pads", Is({0, 0, 1, 1})},
                   {"ceil_mode", I(1)}}),
             DType::kF32, {1, 2, 3, 3},
             {0.2222222238779068, 0.25, -0.125, -0.1388888955116272, 0.4166666567325592,
              0.0416666679084301, 0.25, -0.25, -0.625, -0.3333333432674408, 0.2222222238779068,
              0.375, -0.1666666716337204, -0.1388888955116272, 0.5416666865348816, 0.75, 0.25,
              -0.125});
}

TEST(NnTest, AveragePoolPadsExcludedByDefault) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  ir::AttributeMap attrs{{"kernel_shape", Is({2, 2})}, {"pads", Is({1, 1, 0, 0})}};
  expectNear(run1("AveragePool", {x}, attrs), DType::kF32, {1, 1, 2, 2}, {1, 1.5, 2, 2.5});
  attrs["count_include_pad"] = I(1);
  expectNear(run1("AveragePool", {x}, attrs), DType::kF32, {1, 1, 2, 2}, {0.25, 0.75, 1, 2.5});
}

TEST(NnTest, PoolErrors) {
  Tensor x = pattern({1, 1, 4, 4});
  EXPECT_EQ(code("MaxPool", {x}), StatusCode::kInvalidArgument);  // no kernel_shape
  EXPECT_EQ(code("MaxPool", {x}, {{"kernel_shape", Is({2})}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("AveragePool", {x}, {{"kernel_shape", Is({5, 5})}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("AveragePool", {x}, {{"kernel_shape", Is({2, 2})}, {"pads", Is({1, 1})}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("AveragePool", {it(DType::kI32, {1, 1, 2, 2}, {1, 2, 3, 4})}, {{"kernel_shape", Is({2, 2})}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MaxPool", {f32({2, 2}, {1, 2, 3, 4})}, {{"kernel_shape", Is({})}}),
            StatusCode::kInvalidArgument);
}

TEST(NnTest, GlobalPools) {
  Tensor x = ramp({2, 2, 2, 2});
  expectNear(run1("GlobalAveragePool", {x}), DType::kF32, {2, 2, 1, 1}, {1.5, 5.5, 9.5, 13.5});
  expectNear(run1("GlobalMaxPool", {x}), DType::kF32, {2, 2, 1, 1}, {3, 7, 11, 15});
  expectNear(run1("GlobalAveragePool", {ramp({1, 2, 3})}), DType::kF32, {1, 2, 1}, {1, 4});
  expectNear(run1("GlobalMaxPool", {ft(DType::kF16, {1, 1, 3}, {-1, 0.5, -2})}), DType::kF16, {1, 1, 1},
             {0.5});
  EXPECT_EQ(code("GlobalAveragePool", {f32({2}, {1, 2})}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// BatchNormalization
//===----------------------------------------------------------------------===//

TEST(NnTest, BatchNormInference) {
  Tensor x = f32({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  Tensor scale = f32({2}, {1, 2});
  Tensor bias = f32({2}, {0, 1});
  Tensor mean = f32({2}, {0, 3});
  Tensor var = f32({2}, {1, 4});
  double s0 = 1 / std::sqrt(1 + 1e-5), s1 = 2 / std::sqrt(4 + 1e-5);
  expectNear(run1("BatchNormalization", {x, scale, bias, mean, var}), DType::kF32, {1, 2, 1, 3},
             {-s0, 0, s0, 1 - s1, 1, 1 + s1});
  expectNear(run1("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", F(3.0f)}}),
             DType::kF32, {1, 2, 1, 3}, {-0.5, 0, 0.5, 1 - 2 / std::sqrt(7.0), 1, 1 + 2 / std::sqrt(7.0)});
  // Rank-2 input [N, C].
  expectNear(run1("BatchNormalization", {f32({2, 2}, {0, 3, 1, 5}), scale, bias, mean, var},
                  {{"epsilon", F(0.0f)}}),
             DType::kF32, {2, 2}, {0, 1, 1, 3});
}

TEST(NnTest, BatchNormErrors) {
  Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  Tensor p = f32({2}, {1, 1});
  EXPECT_EQ(code("BatchNormalization", {x, p, p, p, p}, {{"training_mode", I(1)}}),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code("BatchNormalization", {x, f32({3}, {1, 1, 1}), p, p, p}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("BatchNormalization", {x, p, p, p}), StatusCode::kInvalidArgument);
}

// Issue 10: a Conv with 2^40 padding aborted the interpreter on
// std::bad_alloc; INT64_MAX pads or dilations overflowed. Sizes are checked
// against ir::kMaxTensorElements before allocating, with an error.
TEST(NnTest, ConvHugePaddingIsAnErrorNotAnAbort) {
  Tensor x = pattern({1, 1, 4, 4}), w = pattern({1, 1, 3, 3});
  const int64_t p40 = int64_t{1} << 40, big = std::numeric_limits<int64_t>::max();
  auto r = run("Conv", {x, w}, {{"pads", Is({p40, p40, p40, p40})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Conv"), std::string::npos) << r.status();
  EXPECT_EQ(code("Conv", {x, w}, {{"pads", Is({big, big, big, big})}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", {x, w}, {{"dilations", Is({big, big})}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MaxPool", {x}, {{"kernel_shape", Is({2, 2})}, {"pads", Is({p40, 0, p40, 0})}}),
            StatusCode::kInvalidArgument);
}

TEST(NnTest, ConvTransposeStridesPadsOutputPaddingBias) {
  // onnx.reference: a 2x2 kernel at stride 2 (a DBNet upsampling layer).
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<double> up = {1, 2, 2, 4, 3, 6, 3, 4, 6, 8, 9, 12,
                                  4, 8, 5, 10, 6, 12, 12, 16, 15, 20, 18, 24};
  expectNear(run1("ConvTranspose", {x, w}, {{"strides", Is({2, 2})}}), DType::kF32, {1, 1, 4, 6}, up);
  // SAME_UPPER: output = input * stride, here the same as above.
  expectNear(run1("ConvTranspose", {x, w}, {{"strides", Is({2, 2})}, {"auto_pad", S("SAME_UPPER")}}),
             DType::kF32, {1, 1, 4, 6}, up);
  // onnx.reference: 1-d, two output channels, pads [1, 0], output_padding 1, bias.
  Tensor x1 = f32({1, 1, 3}, {1, 2, 3});
  Tensor w1 = f32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(run1("ConvTranspose", {x1, w1, f32({2}, {0.5, -1})},
                  {{"pads", Is({1, 0})}, {"strides", Is({2})}, {"output_padding", Is({1})}}),
             DType::kF32, {1, 2, 7}, {2.5, 5.5, 4.5, 9.5, 6.5, 9.5, 0.5, 4, 13, 9, 23, 14, 17, -1});
  // onnx.reference: dilation 2.
  expectNear(run1("ConvTranspose", {x1, w1}, {{"dilations", Is({2})}}), DType::kF32, {1, 2, 7},
             {1, 2, 5, 4, 9, 6, 9, 4, 8, 17, 10, 21, 12, 18});
  // output_shape larger than the natural extent: the tail gets only the bias.
  expectNear(run1("ConvTranspose", {x1, w1, f32({2}, {0.5, -1})}, {{"output_shape", Is({6})}}),
             DType::kF32, {1, 2, 6}, {1.5, 4.5, 10.5, 12.5, 9.5, 0.5, 3, 12, 27, 26, 17, -1});
}

TEST(NnTest, ConvTransposeGroupsAndEdges) {
  // group 2, C = 4, M/group = 1 (a direct scatter, computed by hand).
  Tensor x = f32({1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<double> wv;
  for (int i = 1; i <= 12; ++i) wv.push_back(0.5 * i);
  expectNear(run1("ConvTranspose", {x, f32({4, 1, 3}, wv)}, {{"group", I(2)}}), DType::kF32, {1, 2, 4},
             {6.5, 17.5, 22.5, 15, 52.5, 119.5, 132.5, 75});
  // Batch 0 and an empty spatial axis.
  expectNear(run1("ConvTranspose", {f32({0, 1, 3}, {}), f32({1, 2, 3}, {1, 2, 3, 4, 5, 6})}), DType::kF32,
             {0, 2, 5}, {});
  EXPECT_EQ(code("ConvTranspose", {x, f32({3, 1, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1})}),
            StatusCode::kInvalidArgument);  // W's dim 0 != C
  EXPECT_EQ(code("ConvTranspose", {x, f32({4, 1, 3}, wv)}, {{"group", I(3)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ConvTranspose", {x, f32({4, 1, 3}, wv)}, {{"pads", Is({3, 3})}}),
            StatusCode::kInvalidArgument);  // pads beyond the output
  EXPECT_EQ(code("ConvTranspose", {x, f32({4, 1, 3}, wv)}, {{"output_padding", Is({2})}}),
            StatusCode::kInvalidArgument);  // output_padding >= stride and dilation
  EXPECT_EQ(code("ConvTranspose", {x, f32({4, 1, 3}, wv)}, {{"auto_pad", S("SAME")}}),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
