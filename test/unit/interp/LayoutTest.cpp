//===- LayoutTest.cpp - Tests of the layout reference functions -----------===//
//
// The tricky corners of interp/ops/Layout.cpp: negative axes, Slice with
// negative steps and clamping, Reshape 0 / -1 / allowzero, GatherND
// batch_dims, uneven Split, Pad modes, Trilu k and batch dims, Range, and
// the errors for bad inputs.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "interp/Interpreter.h"
#include "ir/Graph.h"

namespace fusec::interp {
namespace {

using ir::DType;
using ir::Tensor;

Tensor f32(ir::Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(DType::kF32, std::move(shape), v);
}
Tensor i64(ir::Shape shape, std::vector<int64_t> v) {
  return Tensor::fromInts(DType::kI64, std::move(shape), v);
}
Tensor vec(std::vector<int64_t> v) { return Tensor::vectorI64(v); }
/// 0, 1, 2, ... as f32 of \p shape.
Tensor iota(ir::Shape shape) {
  std::vector<double> v(ir::numElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return f32(std::move(shape), v);
}

/// Evaluates one node of op \p op on \p inputs (nullopt = omitted optional).
absl::StatusOr<std::vector<Tensor>> run(const std::string &op,
                                        std::vector<std::optional<Tensor>> inputs,
                                        ir::AttributeMap attrs = {}, int numOutputs = 1) {
  ir::Graph g;
  std::vector<ir::Value *> values;
  std::vector<const Tensor *> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      values.push_back(nullptr);
      continue;
    }
    values.push_back(g.addConstant("in" + std::to_string(i), *inputs[i]));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < numOutputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node *n = g.addNode(op, values, outs, std::move(attrs));
  for (ir::Value *v : values) ptrs.push_back(v ? v->constant() : nullptr);
  return evaluateNode(*n, ptrs);
}

Tensor run1(const std::string &op, std::vector<std::optional<Tensor>> inputs,
            ir::AttributeMap attrs = {}) {
  auto r = run(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok() || r->empty()) return Tensor();
  return (*r)[0];
}

void expectError(const absl::StatusOr<std::vector<Tensor>> &r, const std::string &substr) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(std::string(r.status().message()).find(substr), std::string::npos) << r.status();
}

TEST(LayoutTest, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor t = run1("Reshape", {iota({2, 3, 4}), vec({0, -1})});
  EXPECT_EQ(t.shape(), (ir::Shape{2, 12}));
  EXPECT_EQ(t.toDoubles(), iota({2, 3, 4}).toDoubles());
}

TEST(LayoutTest, ReshapeAllowZero) {
  Tensor t = run1("Reshape", {iota({0, 3}), vec({3, 0})}, {{"allowzero", int64_t{1}}});
  EXPECT_EQ(t.shape(), (ir::Shape{3, 0}));
  // Without allowzero, 0 copies dim 1 (3) -> [3, 3] does not match 0 elements.
  expectError(run("Reshape", {iota({0, 3}), vec({3, 0})}), "cannot reshape");
  expectError(run("Reshape", {iota({2, 3}), vec({0, -1})}, {{"allowzero", int64_t{1}}}),
              "both 0 and -1");
}

TEST(LayoutTest, ReshapeErrors) {
  expectError(run("Reshape", {iota({2, 3}), vec({4, -1})}), "cannot reshape");
  expectError(run("Reshape", {iota({2, 3}), vec({-1, -1})}), "more than one -1");
  expectError(run("Reshape", {iota({2, 3}), vec({5})}), "cannot reshape");
  expectError(run("Reshape", {iota({6}), vec({2, 0})}), "does not have");
}

TEST(LayoutTest, TransposeDefaultAndPerm) {
  Tensor t = run1("Transpose", {iota({2, 3})});
  EXPECT_EQ(t.shape(), (ir::Shape{3, 2}));
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor u = run1("Transpose", {iota({2, 3, 4})}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  EXPECT_EQ(u.shape(), (ir::Shape{3, 4, 2}));
  EXPECT_EQ(u.toDoubles()[1], 12.0);  // [0,0,1] = x[1,0,0]
  expectError(run("Transpose", {iota({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}),
              "not a permutation");
}

TEST(LayoutTest, FlattenNegativeAxis) {
  EXPECT_EQ(run1("Flatten", {iota({2, 3, 4})}, {{"axis", int64_t{-1}}}).shape(),
            (ir::Shape{6, 4}));
  EXPECT_EQ(run1("Flatten", {iota({2, 3, 4})}, {{"axis", int64_t{0}}}).shape(),
            (ir::Shape{1, 24}));
  expectError(run("Flatten", {iota({2, 3})}, {{"axis", int64_t{3}}}), "out of range");
}

TEST(LayoutTest, SqueezeUnsqueeze) {
  EXPECT_EQ(run1("Squeeze", {iota({1, 3, 1}), std::nullopt}).shape(), (ir::Shape{3}));
  EXPECT_EQ(run1("Squeeze", {iota({1, 3, 1}), vec({-1})}).shape(), (ir::Shape{1, 3}));
  expectError(run("Squeeze", {iota({1, 3, 1}), vec({1})}), "not 1");
  EXPECT_EQ(run1("Unsqueeze", {iota({3, 4}), vec({3, -5, 1})}).shape(),
            (ir::Shape{1, 1, 3, 1, 4}));
  expectError(run("Unsqueeze", {iota({3}), vec({0, 0})}), "repeats");
  expectError(run("Unsqueeze", {iota({3}), vec({2})}), "out of range");
}

TEST(LayoutTest, ConcatNegativeAxis) {
  Tensor t = run1("Concat", {iota({2, 1}), f32({2, 2}, {7, 8, 9, 10})}, {{"axis", int64_t{-1}}});
  EXPECT_EQ(t.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{0, 7, 8, 1, 9, 10}));
  expectError(run("Concat", {iota({2, 1}), iota({3, 1})}, {{"axis", int64_t{1}}}),
              "differs from input 0");
}

TEST(LayoutTest, SplitUnevenAndSizes) {
  auto r = run("Split", {iota({7}), std::nullopt}, {{"num_outputs", int64_t{3}}}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].toDoubles(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ((*r)[1].toDoubles(), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ((*r)[2].toDoubles(), (std::vector<double>{6}));
  auto s = run("Split", {iota({2, 5}), vec({1, 0, 4})}, {{"axis", int64_t{-1}}}, 3);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0].shape(), (ir::Shape{2, 1}));
  EXPECT_EQ((*s)[1].shape(), (ir::Shape{2, 0}));
  EXPECT_EQ((*s)[2].toDoubles(), (std::vector<double>{1, 2, 3, 4, 6, 7, 8, 9}));
  expectError(run("Split", {iota({5}), vec({2, 2})}, {}, 2), "does not sum to 5");
}

TEST(LayoutTest, SliceNegativeStepsAndClamping) {
  // x[::-1] over a 1-D tensor, with INT64_MIN as end.
  Tensor t = run1("Slice", {iota({5}), vec({-1}), vec({std::numeric_limits<int64_t>::min()}),
                            vec({0}), vec({-1})});
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{4, 3, 2, 1, 0}));
  // Start beyond the end clamps to dim - 1 for a negative step: x[10:1:-2].
  Tensor u = run1("Slice", {iota({5}), vec({10}), vec({1}), std::nullopt, vec({-2})});
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{4, 2}));
  // INT64_MAX end, negative axis, step 2 over the last dim.
  Tensor v = run1("Slice", {iota({2, 5}), vec({1}), vec({std::numeric_limits<int64_t>::max()}),
                            vec({-1}), vec({2})});
  EXPECT_EQ(v.shape(), (ir::Shape{2, 2}));
  EXPECT_EQ(v.toDoubles(), (std::vector<double>{1, 3, 6, 8}));
  // Empty result when start is past the end.
  EXPECT_EQ(run1("Slice", {iota({5}), vec({7}), vec({9})}).shape(), (ir::Shape{0}));
  // Huge negative step still selects one element.
  Tensor w = run1("Slice", {iota({5}), vec({3}), vec({-100}), std::nullopt,
                            vec({std::numeric_limits<int64_t>::min()})});
  EXPECT_EQ(w.toDoubles(), (std::vector<double>{3}));
  // Starts before the axis with a negative step clamp to 0 (the spec's
  // [0, dim-1]; ONNX Runtime and shape inference agree): one element.
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor m = run1("Slice", {iota({2, 4}), vec({kMin}), vec({kMin}), vec({1}), vec({kMin})});
  EXPECT_EQ(m.shape(), (ir::Shape{2, 1}));
  EXPECT_EQ(m.toDoubles(), (std::vector<double>{0, 4}));
  Tensor z = run1("Slice", {iota({0}), vec({kMin}), vec({kMin}), std::nullopt, vec({-1})});
  EXPECT_EQ(z.shape(), (ir::Shape{0}));
  expectError(run("Slice", {iota({5}), vec({0}), vec({5}), vec({0}), vec({0})}), "is 0");
  expectError(run("Slice", {iota({5}), vec({0}), vec({5}), vec({1})}), "out of range");
}

TEST(LayoutTest, GatherNegativeAndOutOfRange) {
  Tensor t = run1("Gather", {iota({3, 2}), i64({2}, {-1, 0})});
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{4, 5, 0, 1}));
  Tensor u = run1("Gather", {iota({3, 2}), i64({}, {1})}, {{"axis", int64_t{-1}}});
  EXPECT_EQ(u.shape(), (ir::Shape{3}));
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{1, 3, 5}));
  expectError(run("Gather", {iota({3, 2}), i64({1}, {3})}), "out of range");
  expectError(run("Gather", {iota({3, 2}), i64({1}, {-4})}), "out of range");
}

TEST(LayoutTest, GatherElements) {
  Tensor t = run1("GatherElements", {iota({2, 2}), i64({2, 2}, {0, 0, 1, -2})},
                  {{"axis", int64_t{1}}});
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{0, 0, 3, 2}));
  expectError(run("GatherElements", {iota({2, 2}), i64({1, 1}, {2})}), "out of range");
}

TEST(LayoutTest, GatherNDBatchDims) {
  // data [2,2,2], indices [2,1] with batch_dims=1: out[b] = data[b, idx[b]].
  Tensor t = run1("GatherND", {iota({2, 2, 2}), i64({2, 1}, {1, 0})},
                  {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(t.shape(), (ir::Shape{2, 2}));
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{2, 3, 4, 5}));
  Tensor u = run1("GatherND", {iota({2, 2}), i64({2, 2}, {0, 0, 1, 1})});
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{0, 3}));
  expectError(run("GatherND", {iota({2, 2}), i64({1, 3}, {0, 0, 0})}), "last dim");
  expectError(run("GatherND", {iota({2, 2}), i64({1, 2}, {0, 2})}), "out of range");
}

TEST(LayoutTest, ExpandAndTile) {
  Tensor t = run1("Expand", {iota({3, 1}), vec({2, 1, 2})});
  EXPECT_EQ(t.shape(), (ir::Shape{2, 3, 2}));
  EXPECT_EQ(t.toDoubles()[3], 1.0);
  expectError(run("Expand", {iota({3}), vec({2})}), "cannot broadcast");
  Tensor u = run1("Tile", {iota({2}), vec({3})});
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{0, 1, 0, 1, 0, 1}));
}

TEST(LayoutTest, TriluKAndBatch) {
  // Upper with k=1 on a batch of two 3x3 matrices.
  Tensor t = run1("Trilu", {iota({2, 3, 3}), i64({}, {1})});
  std::vector<double> e = {0, 1, 2, 0, 0, 5, 0, 0, 0, 0, 10, 11, 0, 0, 14, 0, 0, 0};
  EXPECT_EQ(t.toDoubles(), e);
  Tensor u = run1("Trilu", {iota({3, 2}), i64({}, {-1})}, {{"upper", int64_t{0}}});
  EXPECT_EQ(u.toDoubles(), (std::vector<double>{0, 0, 2, 0, 4, 5}));
  expectError(run("Trilu", {iota({3})}), "rank >= 2");
}

TEST(LayoutTest, PadModes) {
  auto pad = [](const std::string &mode, std::vector<int64_t> pads) {
    return run1("Pad", {iota({3}), vec(pads)}, {{"mode", mode}}).toDoubles();
  };
  EXPECT_EQ(pad("constant", {2, 1}), (std::vector<double>{0, 0, 0, 1, 2, 0}));
  EXPECT_EQ(pad("reflect", {2, 2}), (std::vector<double>{2, 1, 0, 1, 2, 1, 0}));
  EXPECT_EQ(pad("edge", {2, 1}), (std::vector<double>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(pad("wrap", {2, 1}), (std::vector<double>{1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(pad("constant", {-1, 0}), (std::vector<double>{1, 2}));
  // constant_value and axes inputs.
  Tensor t = run1("Pad", {iota({2, 2}), vec({1, 0}), f32({}, {9}), vec({-1})});
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{9, 0, 1, 9, 2, 3}));
  expectError(run("Pad", {iota({3}), vec({1})}), "pads has 1 entries");
  expectError(run("Pad", {iota({3}), vec({-2, -2})}), "below zero");
}

TEST(LayoutTest, ShapeSizeConstantOfShape) {
  EXPECT_EQ(run1("Shape", {iota({2, 3, 4})}, {{"start", int64_t{-2}}}).toInts(),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(run1("Shape", {iota({2, 3, 4})}, {{"start", int64_t{-10}}, {"end", int64_t{10}}})
                .toInts(),
            (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(run1("Size", {iota({2, 3, 4})}).toInts(), (std::vector<int64_t>{24}));
  Tensor c = run1("ConstantOfShape", {vec({2, 2})});
  EXPECT_EQ(c.dtype(), DType::kF32);
  EXPECT_EQ(c.toDoubles(), (std::vector<double>{0, 0, 0, 0}));
  Tensor d = run1("ConstantOfShape", {vec({3})}, {{"value", i64({1}, {7})}});
  EXPECT_EQ(d.dtype(), DType::kI64);
  EXPECT_EQ(d.toInts(), (std::vector<int64_t>{7, 7, 7}));
  expectError(run("ConstantOfShape", {vec({-1})}), "negative");
}

TEST(LayoutTest, RangeFloatAndInt) {
  Tensor f = run1("Range", {f32({}, {1}), f32({}, {2}), f32({}, {0.3})});
  ASSERT_EQ(f.numElements(), 4);
  EXPECT_NEAR(f.toDoubles()[3], 1.9, 1e-6);
  Tensor i = run1("Range", {Tensor::scalarInt(DType::kI32, 10), Tensor::scalarInt(DType::kI32, 4),
                            Tensor::scalarInt(DType::kI32, -3)});
  EXPECT_EQ(i.dtype(), DType::kI32);
  EXPECT_EQ(i.toInts(), (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(run1("Range", {i64({}, {5}), i64({}, {1}), i64({}, {1})}).numElements(), 0);
  expectError(run("Range", {i64({}, {0}), i64({}, {1}), i64({}, {0})}), "delta is 0");
}

TEST(LayoutTest, ConstantAttributes) {
  EXPECT_EQ(run1("Constant", {}, {{"value_ints", std::vector<int64_t>{1, 2}}}).toInts(),
            (std::vector<int64_t>{1, 2}));
  Tensor f = run1("Constant", {}, {{"value_float", 2.5f}});
  EXPECT_EQ(f.dtype(), DType::kF32);
  EXPECT_EQ(f.rank(), 0);
  expectError(run("Constant", {}, {}), "exactly one");
}

TEST(LayoutTest, HugeValuesAreErrorsNotOverflows) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  expectError(run("Split", {iota({4}), vec({kMax, kMax})}, {}, 2), "does not sum to 4");
  expectError(run("ConstantOfShape", {vec({int64_t{1} << 40, kMax, 0})}), "elements");
  expectError(run("Expand", {iota({1}), vec({int64_t{1} << 40, int64_t{1} << 40})}), "elements");
  expectError(run("Tile", {iota({2}), vec({kMax})}), "too large");
  expectError(run("Range", {i64({}, {0}), i64({}, {kMax}), i64({}, {1})}), "too many");
  expectError(run("Reshape", {iota({4}), vec({kMax, kMax, 0})}, {{"allowzero", int64_t{1}}}),
              "elements");
}

TEST(LayoutTest, StringsMoveAsElements) {
  Tensor s(DType::kString, {3});
  s.strings() = {"a", "b", "c"};
  Tensor t = run1("Slice", {s, vec({-1}), vec({-4}), std::nullopt, vec({-1})});
  EXPECT_EQ(t.strings(), (std::vector<std::string>{"c", "b", "a"}));
}

// Issue 10: a 100-byte ConstantOfShape model asked for 8 GiB (2^31 f32) and
// the interpreter allowed 2^32 elements. The limit is ir::kMaxTensorBytes /
// kMaxTensorElements, checked before allocating.
TEST(LayoutTest, ConstantOfShapeOverSizeLimitIsAnError) {
  auto r = run("ConstantOfShape", {vec({int64_t{1} << 16, int64_t{1} << 15})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("size limit"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("ConstantOfShape"), std::string::npos) << r.status();
  EXPECT_EQ(run("ConstantOfShape", {vec({int64_t{1} << 40, int64_t{1} << 40})}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
