//===- ScatterTest.cpp - Tests of OneHot, ScatterND, ScatterElements -------===//
//
// interp/ops/Movement.cpp: OneHot (axes, negative and out-of-range indices,
// float indices, empty), ScatterElements and ScatterND with every reduction,
// duplicate and negative indices, empty updates, and the errors for bad
// inputs; Compress and NonMaxSuppression (results sized by the data);
// BitCast, Col2Im, Unique and TensorScatter.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "test/unit/interp/KernelTestUtil.h"

namespace fusec::interp {
namespace {

using namespace fusec::interp::testing;
using absl::StatusCode;

TEST(ScatterTest, OneHotAxesNegativeAndOutOfRange) {
  Tensor vals = f32({2}, {0, 1});
  expectNear(run1("OneHot", {i64({3}, {0, 2, -1}), f32({1}, {3}), vals}), DType::kF32, {3, 3},
             {1, 0, 0, 0, 0, 1, 0, 0, 1});
  expectNear(run1("OneHot", {i64({2}, {1, 5}), i64({}, {3}), f32({2}, {-2, 7})}, {{"axis", I(0)}}),
             DType::kF32, {3, 2}, {-2, -2, 7, -2, -2, -2});
  // Float indices truncate; i64 values; empty indices.
  expectInts(run1("OneHot", {f32({2}, {1.7, -0.5}), f32({}, {2.9}), i64({2}, {4, 9})}), DType::kI64, {2, 2},
             {4, 9, 9, 4});
  expectNear(run1("OneHot", {i64({0}, {}), i64({}, {4}), vals}), DType::kF32, {0, 4}, {});
  EXPECT_EQ(code("OneHot", {i64({2}, {0, 1}), i64({}, {0}), vals}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("OneHot", {i64({2}, {0, 1}), i64({}, {2}), f32({3}, {0, 1, 2})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("OneHot", {i64({2}, {0, 1}), i64({}, {2}), vals}, {{"axis", I(2)}}),
            StatusCode::kInvalidArgument);
}

TEST(ScatterTest, ScatterElementsReductions) {
  Tensor data = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor ind = i64({2, 2}, {2, 2, 0, -3});
  Tensor upd = f32({2, 2}, {10, 20, 30, 40});
  // Duplicates: none keeps the last write; add / mul / max / min combine in order.
  expectNear(run1("ScatterElements", {data, ind, upd}, {{"axis", I(1)}}), DType::kF32, {2, 3},
             {1, 2, 20, 40, 5, 6});
  expectNear(run1("ScatterElements", {data, ind, upd}, {{"axis", I(1)}, {"reduction", S("add")}}),
             DType::kF32, {2, 3}, {1, 2, 33, 74, 5, 6});
  expectNear(run1("ScatterElements", {data, ind, upd}, {{"axis", I(1)}, {"reduction", S("mul")}}),
             DType::kF32, {2, 3}, {1, 2, 600, 4800, 5, 6});
  expectNear(run1("ScatterElements", {data, i64({1, 2}, {0, 0}), f32({1, 2}, {-5, 0.5})},
                  {{"axis", I(1)}, {"reduction", S("max")}}),
             DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(run1("ScatterElements", {data, i64({1, 2}, {1, 0}), f32({1, 2}, {-5, 0.5})},
                  {{"axis", I(0)}, {"reduction", S("min")}}),
             DType::kF32, {2, 3}, {1, 0.5, 3, -5, 5, 6});
  // Empty updates: a copy; integers wrap.
  expectNear(run1("ScatterElements", {data, i64({0, 3}, {}), f32({0, 3}, {})}), DType::kF32, {2, 3},
             {1, 2, 3, 4, 5, 6});
  expectInts(run1("ScatterElements", {i64({2}, {1, 2}), i64({2}, {1, 1}), i64({2}, {3, 4})},
                  {{"reduction", S("add")}}),
             DType::kI64, {2}, {1, 9});
  EXPECT_EQ(code("ScatterElements", {data, i64({1, 1}, {3}), f32({1, 1}, {0})}, {{"axis", I(1)}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ScatterElements", {data, ind, upd}, {{"reduction", S("sum")}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ScatterElements", {data, ind, f32({2, 1}, {1, 2})}), StatusCode::kInvalidArgument);
}

TEST(ScatterTest, ScatterNDSlicesElementsAndReductions) {
  Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  // Row slices, duplicate index 0 (last write wins / added in order).
  Tensor ind = i64({2, 1}, {0, 0});
  Tensor upd = f32({2, 2}, {10, 20, 30, 40});
  expectNear(run1("ScatterND", {data, ind, upd}), DType::kF32, {3, 2}, {30, 40, 3, 4, 5, 6});
  expectNear(run1("ScatterND", {data, ind, upd}, {{"reduction", S("add")}}), DType::kF32, {3, 2},
             {41, 62, 3, 4, 5, 6});
  // Element indices, negative ones; max and min.
  Tensor el = i64({2, 2}, {-1, 1, 1, 0});
  expectNear(run1("ScatterND", {data, el, f32({2}, {0, 9})}, {{"reduction", S("max")}}), DType::kF32, {3, 2},
             {1, 2, 9, 4, 5, 6});
  expectNear(run1("ScatterND", {data, el, f32({2}, {0, 9})}, {{"reduction", S("min")}}), DType::kF32, {3, 2},
             {1, 2, 3, 4, 5, 0});
  expectNear(run1("ScatterND", {data, el, f32({2}, {2, 0.5})}, {{"reduction", S("mul")}}), DType::kF32,
             {3, 2}, {1, 2, 1.5, 4, 5, 12});
  // No tuples: a copy.
  expectNear(run1("ScatterND", {data, i64({0, 1}, {}), f32({0, 2}, {})}), DType::kF32, {3, 2},
             {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(code("ScatterND", {data, i64({1, 1}, {3}), f32({1, 2}, {0, 0})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ScatterND", {data, ind, f32({2, 3}, {0, 0, 0, 0, 0, 0})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ScatterND", {data, i64({1, 3}, {0, 0, 0}), f32({1}, {0})}),
            StatusCode::kInvalidArgument);
}


TEST(ScatterTest, CompressAxesAndShortCondition) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expectNear(run1("Compress", {x, boolT({3}, {0, 1, 1})}, {{"axis", I(0)}}), DType::kF32, {2, 2},
             {3, 4, 5, 6});
  expectNear(run1("Compress", {x, boolT({2}, {0, 1})}, {{"axis", I(-1)}}), DType::kF32, {3, 1}, {2, 4, 6});
  // No axis: the flattened input; a condition shorter than the axis.
  expectNear(run1("Compress", {x, boolT({4}, {1, 0, 0, 1})}), DType::kF32, {2}, {1, 4});
  expectNear(run1("Compress", {x, boolT({3}, {0, 0, 0})}, {{"axis", I(0)}}), DType::kF32, {0, 2}, {});
  expectInts(run1("Compress", {i64({2}, {7, 8}), boolT({2}, {1, 1})}), DType::kI64, {2}, {7, 8});
  EXPECT_EQ(code("Compress", {x, boolT({4}, {1, 1, 1, 1})}, {{"axis", I(0)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Compress", {x, boolT({1, 3}, {1, 1, 1})}, {{"axis", I(0)}}), StatusCode::kInvalidArgument);
}

TEST(ScatterTest, BitCastBytesAndNarrowCodes) {
  // 1.0f = 0x3F800000; -2.0f = 0xC0000000 (as i32: -1073741824).
  expectInts(run1("BitCast", {f32({2}, {1.0, -2.0})}, {{"to", I(6)}}), DType::kI32, {2}, {1065353216, -1073741824});
  expectNear(run1("BitCast", {it(DType::kI32, {}, {1065353216})}, {{"to", I(1)}}), DType::kF32, {}, {1.0});
  expectInts(run1("BitCast", {it(DType::kI8, {3}, {-1, -128, 5})}, {{"to", I(2)}}), DType::kU8, {3}, {255, 128, 5});
  expectInts(run1("BitCast", {f32({0, 3}, {})}, {{"to", I(12)}}), DType::kU32, {0, 3}, {});
  // Narrow: u4 15 -> i4 -1; i4 -8 -> u4 8; u2 3 -> i2 -1.
  expectInts(run1("BitCast", {it(DType::kU4, {3}, {15, 8, 7})}, {{"to", I(22)}}), DType::kI4, {3}, {-1, -8, 7});
  expectInts(run1("BitCast", {it(DType::kI4, {2}, {-8, -1})}, {{"to", I(21)}}), DType::kU4, {2}, {8, 15});
  expectInts(run1("BitCast", {it(DType::kU2, {2}, {3, 1})}, {{"to", I(26)}}), DType::kI2, {2}, {-1, 1});
  EXPECT_EQ(code("BitCast", {f32({2}, {1, 2})}, {{"to", I(7)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("BitCast", {f32({2}, {1, 2})}), StatusCode::kInvalidArgument);
}

TEST(ScatterTest, Col2ImBlocksPadsStridesAndRunTimeShapes) {
  // 1-D: image 5, block 3, stride 1: position p covers p..p+2; input[k, p] = 10 k + p.
  Tensor x = f32({1, 3, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22});
  expectNear(run1("Col2Im", {x, i64({1}, {5}), i64({1}, {3})}), DType::kF32, {1, 1, 5}, {0, 11, 33, 33, 22});
  // Pads 1 + 1, stride 2 on image 4 (odd block count (4 + 2 - 3) / 2 + 1 = 2): entries in the pad dropped.
  Tensor y = f32({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  expectNear(run1("Col2Im", {y, i64({1}, {4}), i64({1}, {3})}, {{"pads", Is({1, 1})}, {"strides", Is({2})}}),
             DType::kF32, {1, 1, 4}, {3, 5 + 2, 4, 6});
  // Dilation 2, 2-D, batch 2, C 1: block 1x2 spans columns j and j + 2.
  Tensor z = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectNear(run1("Col2Im", {z, i64({2}, {1, 4}), i64({2}, {1, 2})}, {{"dilations", Is({1, 2})}}), DType::kF32,
             {2, 1, 1, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Empty batch.
  expectNear(run1("Col2Im", {f32({0, 3, 3}, {}), i64({1}, {5}), i64({1}, {3})}), DType::kF32, {0, 1, 5}, {});
  EXPECT_EQ(code("Col2Im", {x, i64({1}, {5}), i64({1}, {2})}), StatusCode::kInvalidArgument);  // 3 % 2
  EXPECT_EQ(code("Col2Im", {x, i64({1}, {6}), i64({1}, {3})}), StatusCode::kInvalidArgument);  // 4 blocks
  EXPECT_EQ(code("Col2Im", {x, i64({2}, {5, 1}), i64({1}, {3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Col2Im", {f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), i64({1}, {5}), i64({1}, {3})}),
            StatusCode::kInvalidArgument);
}

TEST(ScatterTest, UniqueSortedUnsortedAxisAndEmpty) {
  auto r = run("Unique", {f32({6}, {2, 1, 1, 3, 4, 3})}, {}, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {4}, {1, 2, 3, 4});
  expectInts((*r)[1], DType::kI64, {4}, {1, 0, 3, 4});
  expectInts((*r)[2], DType::kI64, {6}, {1, 0, 0, 2, 3, 2});
  expectInts((*r)[3], DType::kI64, {4}, {2, 1, 2, 1});
  r = run("Unique", {f32({6}, {2, 1, 1, 3, 4, 3})}, {{"sorted", I(0)}}, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {4}, {2, 1, 3, 4});
  expectInts((*r)[1], DType::kI64, {4}, {0, 1, 3, 4});
  expectInts((*r)[2], DType::kI64, {6}, {0, 1, 1, 2, 3, 2});
  expectInts((*r)[3], DType::kI64, {4}, {1, 2, 2, 1});
  // Rows along axis 0 (lexicographic), and columns along axis -1.
  Tensor m = i64({3, 2}, {1, 0, 0, 5, 1, 0});
  r = run("Unique", {m}, {{"axis", I(0)}}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  expectInts((*r)[0], DType::kI64, {2, 2}, {0, 5, 1, 0});
  expectInts((*r)[2], DType::kI64, {3}, {1, 0, 1});
  expectInts(run1("Unique", {i64({2, 3}, {1, 1, 0, 2, 2, 0})}, {{"axis", I(-1)}}), DType::kI64, {2, 2}, {0, 1, 0, 2});
  // Length 1, a 2-D input without axis (flattened), NaN once, empty.
  expectNear(run1("Unique", {f32({1}, {7})}), DType::kF32, {1}, {7});
  expectNear(run1("Unique", {f32({2, 2}, {3, 3, 1, 3})}), DType::kF32, {2}, {1, 3});
  expectNear(run1("Unique", {f32({3}, {NAN, 1, NAN})}), DType::kF32, {2}, {1, NAN});
  r = run("Unique", {f32({0}, {})}, {}, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  expectNear((*r)[0], DType::kF32, {0}, {});
  expectInts((*r)[2], DType::kI64, {0}, {});
  EXPECT_EQ(code("Unique", {f32({}, {1})}, {{"axis", I(0)}}), StatusCode::kInvalidArgument);
}

TEST(ScatterTest, TensorScatterLinearCircularAndBounds) {
  // Cache [2, 3, 1] (batch, seq, 1), update [2, 2, 1], axis -2.
  Tensor cache = f32({2, 3, 1}, {0, 0, 0, 0, 0, 0});
  Tensor upd = f32({2, 2, 1}, {1, 2, 3, 4});
  expectNear(run1("TensorScatter", {cache, upd, i64({2}, {0, 1})}), DType::kF32, {2, 3, 1}, {1, 2, 0, 0, 3, 4});
  expectNear(run1("TensorScatter", {cache, upd, i64({2}, {2, 1})}, {{"mode", S("circular")}}), DType::kF32,
             {2, 3, 1}, {2, 0, 1, 0, 3, 4});
  // No write_indices: from 0; batch 1 with an axis between batch and seq; empty update.
  expectNear(run1("TensorScatter", {cache, upd}), DType::kF32, {2, 3, 1}, {1, 2, 0, 3, 4, 0});
  expectNear(run1("TensorScatter", {f32({1, 2, 2, 1}, {0, 0, 0, 0}), f32({1, 2, 1, 1}, {5, 6}), i64({1}, {1})}),
             DType::kF32, {1, 2, 2, 1}, {0, 5, 0, 6});
  expectNear(run1("TensorScatter", {cache, f32({2, 0, 1}, {}), i64({2}, {3, 3})}), DType::kF32, {2, 3, 1},
             {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(code("TensorScatter", {cache, upd, i64({2}, {2, 0})}), StatusCode::kInvalidArgument);  // past the end
  EXPECT_EQ(code("TensorScatter", {cache, upd, i64({2}, {0, 0})}, {{"axis", I(0)}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("TensorScatter", {cache, f32({2, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("TensorScatter", {cache, upd, i64({3}, {0, 0, 0})}), StatusCode::kInvalidArgument);
}

TEST(ScatterTest, NonMaxSuppressionThresholdsAndFormats) {
  // Class 0 keeps 3, 0, 5 (1 and 2 overlap 0; 4, flipped, overlaps 3);
  // class 1 keeps 5, 4, 2 above the score threshold (onnx.reference).
  Tensor boxes = f32({1, 6, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9, 0, 10, 1, 11, 1, 10.1, 0, 11.1,
                                  0, 100, 1, 101});
  Tensor scores = f32({1, 2, 6}, {0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  expectInts(run1("NonMaxSuppression", {boxes, scores, i64({1}, {3}), f32({1}, {0.5}), f32({1}, {0.25})}),
             DType::kI64, {6, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5, 0, 1, 5, 0, 1, 4, 0, 1, 2});
  // At most one per class; no limit given selects nothing.
  expectInts(run1("NonMaxSuppression", {boxes, scores, i64({1}, {1})}), DType::kI64, {2, 3},
             {0, 0, 3, 0, 1, 5});
  expectInts(run1("NonMaxSuppression", {boxes, scores}), DType::kI64, {0, 3}, {});
  // Centre format: two boxes of one centre overlap fully; ties keep the lower index.
  Tensor c = f32({1, 2, 4}, {0.5, 0.5, 1, 1, 0.5, 0.5, 1, 1});
  expectInts(run1("NonMaxSuppression", {c, f32({1, 1, 2}, {0.5, 0.5}), i64({1}, {5})},
                  {{"center_point_box", I(1)}}),
             DType::kI64, {1, 3}, {0, 0, 0});
  EXPECT_EQ(code("NonMaxSuppression", {boxes, f32({1, 2, 5}, std::vector<double>(10, 0.5))}),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
