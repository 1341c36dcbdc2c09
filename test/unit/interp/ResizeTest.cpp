//===- ResizeTest.cpp - Tests of the Resize reference function ------------===//
//
// interp/ops/Resize.cpp (geometry and taps from ir/Resample.cpp): nearest
// with each nearest_mode, linear with half_pixel / align_corners, cubic,
// tf_crop_and_resize extrapolation, sizes with axes and
// keep_aspect_ratio_policy, antialias, integer data, empty tensors, and the
// errors. Expected values marked "onnx.reference" were computed with
// onnx 1.23.2's ReferenceEvaluator on the same inputs.
//
//===----------------------------------------------------------------------===//
#include <vector>

#include "gtest/gtest.h"
#include "test/unit/interp/KernelTestUtil.h"

namespace fusec::interp {
namespace {

using namespace fusec::interp::testing;
using absl::StatusCode;

Tensor x23() { return f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(ResizeTest, NearestModes) {
  Tensor x = f32({1, 1, 1, 2}, {1, 2});
  Tensor s = f32({4}, {1, 1, 1, 2});
  // half_pixel x2: sources -0.25, 0.25, 0.75, 1.25.
  expectNear(run1("Resize", {x, std::nullopt, s}, {{"mode", S("nearest")}}), DType::kF32, {1, 1, 1, 4},
             {1, 1, 2, 2});
  // asymmetric floor (YOLO upsample): 0, 0.5, 1, 1.5 -> 0 0 1 1.
  expectNear(run1("Resize", {x, std::nullopt, s},
                  {{"coordinate_transformation_mode", S("asymmetric")}, {"nearest_mode", S("floor")}}),
             DType::kF32, {1, 1, 1, 4}, {1, 1, 2, 2});
  // asymmetric round_prefer_ceil: 0.5 rounds up.
  expectNear(run1("Resize", {x, std::nullopt, s},
                  {{"coordinate_transformation_mode", S("asymmetric")}, {"nearest_mode", S("round_prefer_ceil")}}),
             DType::kF32, {1, 1, 1, 4}, {1, 2, 2, 2});
  // asymmetric ceil.
  expectNear(run1("Resize", {x, std::nullopt, s},
                  {{"coordinate_transformation_mode", S("asymmetric")}, {"nearest_mode", S("ceil")}}),
             DType::kF32, {1, 1, 1, 4}, {1, 2, 2, 2});
}

TEST(ResizeTest, LinearHalfPixelAndAlignCorners) {
  // The ONNX operator page's resize_upsample_scales_linear example.
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor s = f32({4}, {1, 1, 2, 2});
  expectNear(run1("Resize", {x, std::nullopt, s}, {{"mode", S("linear")}}), DType::kF32, {1, 1, 4, 4},
             {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  Tensor sizes = i64({4}, {1, 1, 3, 3});
  expectNear(run1("Resize", {x, std::nullopt, std::nullopt, sizes},
                  {{"mode", S("linear")}, {"coordinate_transformation_mode", S("align_corners")}}),
             DType::kF32, {1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
}

TEST(ResizeTest, CubicAndHalfPixelSymmetric) {
  // onnx.reference.
  expectNear(run1("Resize", {x23(), std::nullopt, f32({4}, {1, 1, 1.5, 1.6})},
                  {{"mode", S("cubic")}, {"coordinate_transformation_mode", S("half_pixel_symmetric")}}),
             DType::kF32, {1, 1, 3, 4},
             {0.7865197062492371, 1.336446762084961, 2.14272141456604, 2.692648410797119,
              2.54693603515625, 3.09686279296875, 3.90313720703125, 4.45306396484375,
              4.30735445022583, 4.857281684875488, 5.663556098937988, 6.2134833335876465});
}

TEST(ResizeTest, Antialias) {
  // onnx.reference: linear to [1,2] and cubic by [0.5, 0.7], antialias = 1.
  expectNear(run1("Resize", {x23(), std::nullopt, std::nullopt, i64({4}, {1, 1, 1, 2})},
                  {{"mode", S("linear")}, {"antialias", I(1)}}),
             DType::kF32, {1, 1, 1, 2}, {2.8333332538604736, 4.166666507720947});
  expectNear(run1("Resize", {x23(), std::nullopt, f32({4}, {1, 1, 0.5, 0.7})},
                  {{"mode", S("cubic")}, {"antialias", I(1)}}),
             DType::kF32, {1, 1, 1, 2}, {2.718437910079956, 4.1717848777771});
  EXPECT_EQ(code("Resize", {x23(), std::nullopt, f32({4}, {1, 1, 2, 2})},
                 {{"mode", S("nearest")}, {"antialias", I(1)}}),
            StatusCode::kInvalidArgument);
}

TEST(ResizeTest, SizesWithAxesAndKeepAspectRatio) {
  // onnx.reference: not_larger keeps the smaller scale (4/3 of 4/2, 4/3):
  // [2,3] -> [3,4].
  expectNear(run1("Resize", {x23(), std::nullopt, std::nullopt, i64({2}, {4, 4})},
                  {{"axes", Is({2, 3})}, {"keep_aspect_ratio_policy", S("not_larger")}}),
             DType::kF32, {1, 1, 3, 4}, {1, 2, 2, 3, 4, 5, 5, 6, 4, 5, 5, 6});
  // not_smaller: the larger scale 2 -> [4,6].
  Tensor y = run1("Resize", {x23(), std::nullopt, std::nullopt, i64({2}, {4, 4})},
                  {{"axes", Is({2, 3})}, {"keep_aspect_ratio_policy", S("not_smaller")}});
  EXPECT_EQ(y.shape(), (ir::Shape{1, 1, 4, 6}));
  // Negative axes count from the end.
  y = run1("Resize", {x23(), std::nullopt, std::nullopt, i64({1}, {5})}, {{"axes", Is({-1})}});
  EXPECT_EQ(y.shape(), (ir::Shape{1, 1, 2, 5}));
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  Tensor x = f32({1, 1, 1, 3}, {1, 2, 3});
  Tensor roi = f32({8}, {0, 0, 0, -0.5, 1, 1, 1, 1});
  // Width: x = y * 1.5 * 2 / 2 - 1 for y = 0, 1, 2: -1 (outside), 0.5, 2.
  expectNear(run1("Resize", {x, roi, std::nullopt, i64({4}, {1, 1, 1, 3})},
                  {{"mode", S("linear")}, {"coordinate_transformation_mode", S("tf_crop_and_resize")},
                   {"extrapolation_value", F(-7.0f)}}),
             DType::kF32, {1, 1, 1, 3}, {-7, 1.5, 3});
  EXPECT_EQ(code("Resize", {x, std::nullopt, std::nullopt, i64({4}, {1, 1, 1, 3})},
                 {{"coordinate_transformation_mode", S("tf_crop_and_resize")}}),
            StatusCode::kInvalidArgument);
}

TEST(ResizeTest, IntegerDataRoundsAndSaturates) {
  // u8 cubic overshoots at a step edge: rounded half to even, clamped to [0, 255].
  Tensor x = it(DType::kU8, {1, 4}, {0, 0, 255, 255});
  Tensor y = run1("Resize", {x, std::nullopt, f32({2}, {1, 2})}, {{"mode", S("cubic")}});
  ASSERT_EQ(y.shape(), (ir::Shape{1, 8}));
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_GE(y.getInt(i), 0);
    EXPECT_LE(y.getInt(i), 255);
  }
  expectInts(run1("Resize", {it(DType::kI32, {1, 2}, {5, -3}), std::nullopt, f32({2}, {1, 2})}),
             DType::kI32, {1, 4}, {5, 5, -3, -3});
}

TEST(ResizeTest, EmptyAndIdentity) {
  Tensor e = f32({0, 3}, {});
  expectNear(run1("Resize", {e, std::nullopt, f32({2}, {1, 2})}), DType::kF32, {0, 6}, {});
  // Downscale to zero elements along an axis.
  expectNear(run1("Resize", {f32({1, 3}, {1, 2, 3}), std::nullopt, f32({2}, {1, 0.2f})}), DType::kF32,
             {1, 0}, {});
  // Scale 1 everywhere is a copy.
  expectNear(run1("Resize", {x23(), std::nullopt, f32({4}, {1, 1, 1, 1})}, {{"mode", S("cubic")}}),
             DType::kF32, {1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // An empty roi / scales input stands for an absent one (opset 11 form).
  expectNear(run1("Resize", {x23(), f32({0}, {}), f32({0}, {}), i64({4}, {1, 1, 2, 3})}), DType::kF32,
             {1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(ResizeTest, Errors) {
  Tensor x = x23();
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({4}, {1, 1, 2, 2}), i64({4}, {1, 1, 4, 6})}),
            StatusCode::kInvalidArgument);  // both scales and sizes
  EXPECT_EQ(code("Resize", {x}), StatusCode::kInvalidArgument);  // neither
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({3}, {1, 2, 2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({4}, {1, 1, 0, 2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, std::nullopt, i64({4}, {1, 1, -1, 2})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({4}, {1, 1, 2, 2})}, {{"mode", S("area")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({4}, {1, 1, 2, 2})},
                 {{"coordinate_transformation_mode", S("center")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, f32({4}, {1, 1, 2, 2})}, {{"nearest_mode", S("up")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, std::nullopt, i64({2}, {4, 4})},
                 {{"axes", Is({2, 2})}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {x, std::nullopt, std::nullopt, i64({2}, {4, 4})},
                 {{"axes", Is({2, 3})}, {"keep_aspect_ratio_policy", S("fit")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Resize", {f32({0, 3}, {}), std::nullopt, std::nullopt, i64({2}, {2, 3})}),
            StatusCode::kInvalidArgument);  // an empty axis resized to 2
}

}  // namespace
}  // namespace fusec::interp
