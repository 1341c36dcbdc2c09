//===- ResizeTest.cpp - Tests of the Resize reference function ------------===//
//
// interp/ops/Resize.cpp (geometry and taps from ir/Resample.cpp): nearest
// with each nearest_mode, linear with half_pixel / align_corners, cubic,
// tf_crop_and_resize extrapolation, sizes with axes and
// keep_aspect_ratio_policy, antialias, integer data, empty tensors, and the
// errors; GridSample (every mode and padding mode, 2-D and 3-D, points
// outside the input, batches, empty grids) and RoiAlign (avg / max, both
// coordinate modes, adaptive and fixed sampling). Expected values marked
// "onnx.reference" were computed with
// onnx 1.23.2's ReferenceEvaluator on the same inputs.
//
//===----------------------------------------------------------------------===//
#include <limits>
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

// GridSample: X = 1..6 as [1, 1, 2, 3]; six grid points, several outside
// [-1, 1] (expected values: onnx.reference).
Tensor gsGrid() {
  return f32({1, 2, 3, 2}, {-1.2, -1.0, 0.3, 0.9, 1.4, -0.6, 0.0, 0.0, -0.7, 1.3, 2.5, -2.2});
}

TEST(GridSampleTest, LinearPaddingModes) {
  auto gs = [&](const char *pad, int64_t ac) {
    return run1("GridSample", {x23(), gsGrid()}, {{"padding_mode", S(pad)}, {"align_corners", I(ac)}});
  };
  expectNear(gs("zeros", 0), DType::kF32, {1, 1, 2, 3}, {0.0999999642, 3.26999998, 0, 3.5, 0.760000229, 0});
  expectNear(gs("zeros", 1), DType::kF32, {1, 1, 2, 3}, {0.799999952, 5.15000057, 2.15999961, 3.5, 3.65500021, 0});
  expectNear(gs("border", 0), DType::kF32, {1, 1, 2, 3}, {1, 5.44999981, 3, 3.5, 4, 3});
  expectNear(gs("border", 1), DType::kF32, {1, 1, 2, 3}, {1, 5.15000057, 3.5999999, 3.5, 4.30000019, 3});
  expectNear(gs("reflection", 0), DType::kF32, {1, 1, 2, 3}, {1, 5.44999981, 2.89999986, 3.5, 4, 3.35000014});
  expectNear(gs("reflection", 1), DType::kF32, {1, 1, 2, 3},
             {1.20000005, 5.15000057, 3.19999981, 3.5, 3.85000014, 3.29999995});
  // opset 16's name for linear.
  expectNear(run1("GridSample", {x23(), gsGrid()}, {{"mode", S("bilinear")}}), DType::kF32, {1, 1, 2, 3},
             {0.0999999642, 3.26999998, 0, 3.5, 0.760000229, 0});
}

TEST(GridSampleTest, NearestAndCubic) {
  auto gs = [&](const char *mode, const char *pad, int64_t ac) {
    return run1("GridSample", {x23(), gsGrid()},
                {{"mode", S(mode)}, {"padding_mode", S(pad)}, {"align_corners", I(ac)}});
  };
  expectNear(gs("nearest", "zeros", 0), DType::kF32, {1, 1, 2, 3}, {0, 5, 0, 2, 0, 0});
  expectNear(gs("nearest", "zeros", 1), DType::kF32, {1, 1, 2, 3}, {1, 5, 3, 2, 4, 0});
  expectNear(gs("nearest", "reflection", 0), DType::kF32, {1, 1, 2, 3}, {1, 5, 3, 2, 4, 4});
  expectNear(gs("cubic", "zeros", 0), DType::kF32, {1, 1, 2, 3},
             {0.0265000388, 4.05188465, -0.156233832, 4.15625, 0.739537954, 0});
  expectNear(gs("cubic", "border", 1), DType::kF32, {1, 1, 2, 3},
             {1, 5.27131319, 3.52800179, 3.5, 4.23175097, 3});
  expectNear(gs("bicubic", "reflection", 0), DType::kF32, {1, 1, 2, 3},
             {0.317499816, 6.08590651, 2.72225046, 3.5, 4.32437277, 3.35440755});
}

TEST(GridSampleTest, VolumetricBatchesAndEdges) {
  // 3-D: X = 0..7 as [1, 1, 2, 2, 2], two points (onnx.reference).
  Tensor x = f32({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor g = f32({1, 1, 1, 2, 3}, {0.1, -0.3, 0.5, 1.2, 0.4, -1.1});
  expectNear(run1("GridSample", {x, g}), DType::kF32, {1, 1, 1, 1, 2}, {5, 0.335999936});
  expectNear(run1("GridSample", {x, g}, {{"padding_mode", S("border")}}), DType::kF32, {1, 1, 1, 1, 2},
             {5, 2.79999971});
  expectNear(run1("GridSample", {x, g}, {{"mode", S("nearest")}}), DType::kF32, {1, 1, 1, 1, 2}, {5, 0});
  // Batch 2 of 1x1 images: each batch reads its own image; a 1-pixel axis
  // with align_corners reflects onto its only pixel.
  Tensor one = f32({2, 1, 1, 1}, {7, -2});
  Tensor g2 = f32({2, 1, 2, 2}, {0.2, 0.9, -3.0, 0.0, 0.0, 0.0, 1.0, 1.0});
  expectNear(run1("GridSample", {one, g2}), DType::kF32, {2, 1, 1, 2}, {3.46499991, 0, -2, -0.5});
  expectNear(run1("GridSample", {one, g2}, {{"padding_mode", S("reflection")}, {"align_corners", I(1)}}),
             DType::kF32, {2, 1, 1, 2}, {7, 7, -2, -2});
  // An empty grid gives an empty result.
  expectNear(run1("GridSample", {x23(), f32({1, 0, 3, 2}, {})}), DType::kF32, {1, 1, 0, 3}, {});
  // Errors: cubic on 3-D, a grid of the wrong width, an unknown mode.
  EXPECT_EQ(code("GridSample", {x, g}, {{"mode", S("cubic")}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("GridSample", {x23(), f32({1, 1, 1, 3}, {0, 0, 0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("GridSample", {x23(), gsGrid()}, {{"mode", S("area")}}), StatusCode::kInvalidArgument);
}

// RoiAlign: X = (0..24) / 3 as [1, 1, 5, 5], three regions (one past the
// image), 2 x 3 bins (expected values: onnx.reference).
TEST(RoiAlignTest, ModesAndSampling) {
  std::vector<double> xv(25);
  for (int i = 0; i < 25; ++i) xv[i] = i / 3.0;
  Tensor x = f32({1, 1, 5, 5}, xv);
  Tensor rois = f32({3, 4}, {0, 0, 4, 4, 1.5, 0.5, 3.2, 4.9, -2, -1, 7, 8});
  Tensor bi = i64({3}, {0, 0, 0});
  auto ra = [&](const char *mode, const char *ctm, int64_t sr) {
    return run1("RoiAlign", {x, rois, bi},
                {{"mode", S(mode)}, {"coordinate_transformation_mode", S(ctm)}, {"output_height", I(2)},
                 {"output_width", I(3)}, {"sampling_ratio", I(sr)}});
  };
  expectNear(ra("avg", "half_pixel", 0), DType::kF32, {3, 1, 2, 3},
             {0.916666627, 1.33333325, 1.77777779, 4.25, 4.66666698, 5.11111116, 2.26111126, 2.45000005,
              2.63888884, 5.9092598, 6.09814835, 6.2870369, 1.10000002, 2.18333364, 1.81111121, 1.65555549,
              2.75, 2.01111126});
  expectNear(ra("avg", "output_half_pixel", 2), DType::kF32, {3, 1, 2, 3},
             {1.88888896, 2.33333325, 2.77777791, 5.22222233, 5.66666698, 6.11111116, 3.26111126, 3.45000005,
              3.63888884, 6.63611126, 6.82499981, 7.01388884, 1.08333337, 2.91666675, 1.70833325, 1.6875, 3.75,
              2});
  expectNear(ra("max", "half_pixel", 2), DType::kF32, {3, 1, 2, 3},
             {1.66666663, 1.94444442, 2.22222209, 5, 4.72222233, 4.99999952, 2.04569483, 2.57833338,
              1.88500071, 5.10708427, 6.18138933, 4.51916838, 2.91666651, 2.84375, 4.08333302, 6.66666651,
              5.75, 8});
  // No regions: an empty result; a batch index outside X is an error.
  expectNear(run1("RoiAlign", {x, f32({0, 4}, {}), i64({0}, {})}), DType::kF32, {0, 1, 1, 1}, {});
  EXPECT_EQ(code("RoiAlign", {x, f32({1, 4}, {0, 0, 1, 1}), i64({1}, {1})}), StatusCode::kInvalidArgument);
}

// Red team s26: grid and region coordinates of NaN, +-inf or 1e30 were
// converted to int64 undefined (UBSan: signed overflow in GridSample's cubic
// taps and RoiAlign's tap index; -fno-sanitize-recover aborts the ASan
// build), and an adaptive RoiAlign over a 1e7-pixel region allocated 1e14
// samples. Far or NaN positions now read as outside; the huge grid is an
// error naming the region.
TEST(GridSampleTest, NonFiniteAndHugeCoordinatesAreOutside) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor g = f32({1, 2, 3, 2}, {nan, 0.0, -inf, 0.0, inf, 0.0, 1e30, 0.0, -1e30, 0.0, 0.0, nan});
  for (const char *mode : {"linear", "nearest", "cubic"}) {
    Tensor t = run1("GridSample", {x23(), g}, {{"mode", S(mode)}});
    ASSERT_EQ(t.numElements(), 6) << mode;
    for (int i = 1; i < 5; ++i) EXPECT_EQ(t.getDouble(i), 0.0) << mode << " point " << i;
    for (const char *pad : {"border", "reflection"})
      EXPECT_EQ(code("GridSample", {x23(), g}, {{"mode", S(mode)}, {"padding_mode", S(pad)}}),
                absl::StatusCode::kOk)
          << mode << " " << pad;
  }
}

TEST(RoiAlignTest, NonFiniteRegionsAndHugeAdaptiveGrids) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = f32({1, 1, 5, 5}, std::vector<double>(25, 1.0));
  Tensor rois = f32({3, 4}, {nan, 0, 2, 2, 0, 0, inf, 2, -1e30, -1e30, 1e30, 1e30});
  Tensor bi = i64({3}, {0, 0, 0});
  EXPECT_EQ(run1("RoiAlign", {x, rois, bi}, {{"sampling_ratio", I(2)}}).numElements(), 3);
  // sampling_ratio 0: the infinite and the 1e30 regions would take more than 2^20 samples per bin.
  auto r = run("RoiAlign", {x, rois, bi}, {{"sampling_ratio", I(0)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("more than 2^20"), std::string::npos) << r.status();
  Tensor t = run1("RoiAlign", {x, f32({1, 4}, {0, 0, 2, 2}), i64({1}, {0})},
                  {{"spatial_scale", F(nan)}, {"sampling_ratio", I(2)}});
  ASSERT_EQ(t.numElements(), 1);
  EXPECT_EQ(t.getDouble(0), 0.0);
  EXPECT_EQ(code("RoiAlign", {x, f32({1, 4}, {0, 0, 1e7, 1e7}), i64({1}, {0})},
                 {{"sampling_ratio", I(0)}, {"output_height", I(1)}, {"output_width", I(1)}}),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
