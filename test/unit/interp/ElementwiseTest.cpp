//===- ElementwiseTest.cpp - Tests of the elementwise reference functions -===//
//
// interp/ops/Elementwise.cpp: unary math and activations (incl. Gelu none /
// tanh), Round half-to-even, Cast truncation, Dropout / Clip optionals,
// binary arithmetic with broadcasting (scalars, size-1 dims, rank mismatch,
// empty tensors), integer division / mod semantics, mixed-dtype Pow, the
// variadic ops, comparisons, logic and Where, f16 / bf16 rounding, and the
// errors for bad inputs.
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

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, AbsAndNegOnFloatsAndInts) {
  expectNear(run1("Abs", {f32({3}, {-1.5, 0, 2})}), DType::kF32, {3}, {1.5, 0, 2});
  expectInts(run1("Abs", {it(DType::kI32, {3}, {-7, 0, 7})}), DType::kI32, {3}, {7, 0, 7});
  expectNear(run1("Neg", {f32({2}, {-1.5, 2})}), DType::kF32, {2}, {1.5, -2});
  // Two's complement: -(-128) wraps to -128 in i8, as in numpy.
  expectInts(run1("Neg", {it(DType::kI8, {2}, {-128, 5})}), DType::kI8, {2}, {-128, -5});
}

TEST(ElementwiseTest, TranscendentalFunctions) {
  Tensor x = f32({3}, {0.5, 1, 4});
  expectNear(run1("Exp", {x}), DType::kF32, {3}, {std::exp(0.5), std::exp(1.0), std::exp(4.0)}, 1e-4);
  expectNear(run1("Log", {x}), DType::kF32, {3}, {std::log(0.5), 0, std::log(4.0)});
  expectNear(run1("Sqrt", {x}), DType::kF32, {3}, {std::sqrt(0.5), 1, 2});
  expectNear(run1("Reciprocal", {x}), DType::kF32, {3}, {2, 1, 0.25});
  expectNear(run1("Erf", {x}), DType::kF32, {3}, {std::erf(0.5), std::erf(1.0), std::erf(4.0)});
  expectNear(run1("Tanh", {x}), DType::kF32, {3}, {std::tanh(0.5), std::tanh(1.0), std::tanh(4.0)});
  expectNear(run1("Sin", {x}), DType::kF32, {3}, {std::sin(0.5), std::sin(1.0), std::sin(4.0)});
  expectNear(run1("Cos", {x}), DType::kF32, {3}, {std::cos(0.5), std::cos(1.0), std::cos(4.0)});
  expectNear(run1("Log", {f32({2}, {0, -1})}), DType::kF32, {2}, {-kInf, kNaN});
  // Trigonometry and its inverses, with the domain edges (NaN outside, +-inf at
  // Atanh(+-1), exact 0 at Acosh(1)).
  Tensor u = f32({4}, {-0.5, 0, 0.25, 1});
  expectNear(run1("Tan", {u}), DType::kF32, {4}, {std::tan(-0.5), 0, std::tan(0.25), std::tan(1.0)});
  expectNear(run1("Asin", {u}), DType::kF32, {4}, {std::asin(-0.5), 0, std::asin(0.25), std::asin(1.0)});
  expectNear(run1("Acos", {u}), DType::kF32, {4}, {std::acos(-0.5), std::acos(0.0), std::acos(0.25), 0});
  expectNear(run1("Atan", {x}), DType::kF32, {3}, {std::atan(0.5), std::atan(1.0), std::atan(4.0)});
  expectNear(run1("Sinh", {x}), DType::kF32, {3}, {std::sinh(0.5), std::sinh(1.0), std::sinh(4.0)}, 1e-4);
  expectNear(run1("Cosh", {x}), DType::kF32, {3}, {std::cosh(0.5), std::cosh(1.0), std::cosh(4.0)}, 1e-4);
  expectNear(run1("Asinh", {u}), DType::kF32, {4}, {std::asinh(-0.5), 0, std::asinh(0.25), std::asinh(1.0)});
  expectNear(run1("Acosh", {f32({3}, {1, 2, 0.5})}), DType::kF32, {3}, {0, std::acosh(2.0), kNaN});
  expectNear(run1("Atanh", {u}), DType::kF32, {4}, {std::atanh(-0.5), 0, std::atanh(0.25), kInf});
  expectNear(run1("Asin", {f32({1}, {2})}), DType::kF32, {1}, {kNaN});
}

TEST(ElementwiseTest, ActivationsWithDefaultsAndAttributes) {
  Tensor x = f32({4}, {-2, -0.5, 0, 3});
  expectNear(run1("Relu", {x}), DType::kF32, {4}, {0, 0, 0, 3});
  expectInts(run1("Relu", {it(DType::kI8, {2}, {-3, 4})}), DType::kI8, {2}, {0, 4});
  expectNear(run1("LeakyRelu", {x}), DType::kF32, {4}, {-0.02, -0.005, 0, 3});
  expectNear(run1("LeakyRelu", {x}, {{"alpha", F(0.5f)}}), DType::kF32, {4}, {-1, -0.25, 0, 3});
  expectNear(run1("Elu", {x}), DType::kF32, {4}, {std::exp(-2.0) - 1, std::exp(-0.5) - 1, 0, 3});
  expectNear(run1("Elu", {x}, {{"alpha", F(2.0f)}}), DType::kF32, {4},
             {2 * (std::exp(-2.0) - 1), 2 * (std::exp(-0.5) - 1), 0, 3});
  expectNear(run1("HardSigmoid", {x}), DType::kF32, {4}, {0.1, 0.4, 0.5, 1});
  expectNear(run1("HardSigmoid", {x}, {{"alpha", F(0.5f)}, {"beta", F(0.25f)}}), DType::kF32, {4},
             {0, 0, 0.25, 1});
}

TEST(ElementwiseTest, SigmoidAndSoftplusAreStableForLargeInputs) {
  Tensor x = f32({4}, {-1000, -1, 0, 1000});
  expectNear(run1("Sigmoid", {x}), DType::kF32, {4}, {0, 1 / (1 + std::exp(1.0)), 0.5, 1});
  expectNear(run1("Softplus", {x}), DType::kF32, {4}, {0, std::log1p(std::exp(-1.0)), std::log(2.0), 1000});
}

TEST(ElementwiseTest, Swish) {
  // x * sigmoid(alpha x): SiLU at the default alpha = 1 (ONNX Swish-24).
  Tensor x = f32({5}, {-1000, -1, 0, 2, 1000});
  auto silu = [](double v, double a) { return v / (1 + std::exp(-a * v)); };
  expectNear(run1("Swish", {x}), DType::kF32, {5}, {0, silu(-1, 1), 0, silu(2, 1), 1000});
  expectNear(run1("Swish", {x}, {{"alpha", F(1.702f)}}), DType::kF32, {5},
             {0, silu(-1, 1.702f), 0, silu(2, 1.702f), 1000});
  Tensor inf = f32({3}, {-kInf, kInf, kNaN});
  expectNear(run1("Swish", {inf}), DType::kF32, {3}, {kNaN, kInf, kNaN});
}

TEST(ElementwiseTest, GeluExactAndTanh) {
  // Expected values from onnxruntime 1.32 (Gelu-20) on f32.
  Tensor x = f32({7}, {-3, -1, -0.5, 0, 0.5, 1, 3});
  expectNear(run1("Gelu", {x}), DType::kF32, {7},
             {-0.0040496885776519775, -0.15865525603294373, -0.1542687714099884, 0.0,
              0.3457312285900116, 0.8413447141647339, 2.995950222015381});
  expectNear(run1("Gelu", {x}, {{"approximate", S("tanh")}}), DType::kF32, {7},
             {-0.0036375224590301514, -0.15880796313285828, -0.1542859971523285, 0.0,
              0.3457140028476715, 0.8411920070648193, 2.9963626861572266});
  // f16 in, f16 out, one rounding of the double result.
  Tensor h = run1("Gelu", {ft(DType::kF16, {2}, {1, 3})});
  EXPECT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.getDouble(0), static_cast<double>(ir::halfToFloat(ir::floatToHalf(0.8413447f))));
  EXPECT_EQ(code("Gelu", {x}, {{"approximate", S("fast")}}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, RoundingFunctions) {
  Tensor x = f32({8}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6});
  expectNear(run1("Round", {x}), DType::kF32, {8}, {-2, -2, -0, 0, 2, 2, 2, -3});
  expectNear(run1("Floor", {x}), DType::kF32, {8}, {-3, -2, -1, 0, 1, 2, 2, -3});
  expectNear(run1("Ceil", {x}), DType::kF32, {8}, {-2, -1, -0, 1, 2, 3, 3, -2});
}

TEST(ElementwiseTest, SignNotIsNaNIsInf) {
  expectNear(run1("Sign", {f32({4}, {-3, 0, 2, kNaN})}), DType::kF32, {4}, {-1, 0, 1, kNaN});
  expectInts(run1("Sign", {it(DType::kI32, {3}, {-9, 0, 4})}), DType::kI32, {3}, {-1, 0, 1});
  expectInts(run1("Not", {boolT({2}, {0, 1})}), DType::kBool, {2}, {1, 0});
  EXPECT_EQ(code("Not", {f32({1}, {1})}), StatusCode::kInvalidArgument);
  Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  expectInts(run1("IsNaN", {x}), DType::kBool, {4}, {0, 1, 0, 0});
  expectInts(run1("IsInf", {x}), DType::kBool, {4}, {0, 0, 1, 1});
  expectInts(run1("IsInf", {x}, {{"detect_negative", I(0)}}), DType::kBool, {4}, {0, 0, 1, 0});
  expectInts(run1("IsInf", {x}, {{"detect_positive", I(0)}}), DType::kBool, {4}, {0, 0, 0, 1});
}

TEST(ElementwiseTest, FloatOnlyOpsRejectIntegers) {
  EXPECT_EQ(code("Exp", {i64({1}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Sqrt", {boolT({1}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Abs", {boolT({1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, UnaryOnEmptyAndScalarTensors) {
  expectNear(run1("Exp", {f32({0, 3}, {})}), DType::kF32, {0, 3}, {});
  expectNear(run1("Neg", {f32({}, {2})}), DType::kF32, {}, {-2});
}

//===----------------------------------------------------------------------===//
// Cast, Identity, Dropout, Clip
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, CastTruncatesFloatToInt) {
  Tensor x = f32({5}, {-1.7, 2.9, 0.2, -0.2, 1e10});
  expectInts(run1("Cast", {x}, {{"to", I(6)}}), DType::kI32, {5},
             {-1, 2, 0, 0, std::numeric_limits<int32_t>::max()});
  expectInts(run1("Cast", {x}, {{"to", I(9)}}), DType::kBool, {5}, {1, 1, 1, 1, 1});
  expectInts(run1("Cast", {f32({2}, {0, kNaN})}, {{"to", I(9)}}), DType::kBool, {2}, {0, 1});
}

TEST(ElementwiseTest, CastBetweenFloatAndIntDtypes) {
  expectNear(run1("Cast", {i64({3}, {-3, 0, 2049})}, {{"to", I(10)}}), DType::kF16, {3}, {-3, 0, 2048});
  expectInts(run1("Cast", {i64({2}, {300, -1})}, {{"to", I(2)}}), DType::kU8, {2}, {44, 255});
  Tensor b = run1("Cast", {f32({2}, {1.00390625, -3})}, {{"to", I(16)}});
  expectNear(b, DType::kBF16, {2}, {1.0, -3});
  expectNear(run1("Cast", {b}, {{"to", I(11)}}), DType::kF64, {2}, {1.0, -3});
}

TEST(ElementwiseTest, CastErrors) {
  EXPECT_EQ(code("Cast", {f32({1}, {1})}, {{"to", I(8)}}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Cast", {f32({1}, {1})}, {{"to", I(14)}}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Cast", {f32({1}, {1})}), StatusCode::kInvalidArgument);
}

// Narrow dtypes (ir/DType.h): Cast with saturate / round_mode, to and from
// the 4- and 2-bit integers, QuantizeLinear / DequantizeLinear.
TEST(ElementwiseTest, CastToFloat8SaturateOrNot) {
  Tensor x = f32({5}, {1e6, -kInf, kNaN, 0.47892547, -1e-7});
  Tensor sat = run1("Cast", {x}, {{"to", I(17)}});  // f8e4m3fn, saturate = 1
  expectNear(sat, DType::kF8E4M3FN, {5}, {448, -448, kNaN, 0.46875, 0}, 0);
  EXPECT_EQ(sat.data()[4], 0x80);  // -0 kept
  expectNear(run1("Cast", {x}, {{"to", I(17)}, {"saturate", I(0)}}), DType::kF8E4M3FN, {5},
             {kNaN, kNaN, kNaN, 0.46875, 0}, 0);
  expectNear(run1("Cast", {x}, {{"to", I(19)}, {"saturate", I(0)}}), DType::kF8E5M2, {5},
             {kInf, -kInf, kNaN, 0.5, 0}, 0);
  Tensor fnuz = run1("Cast", {x}, {{"to", I(18)}, {"saturate", I(0)}});
  expectNear(fnuz, DType::kF8E4M3FNUZ, {5}, {kNaN, kNaN, kNaN, 0.46875, 0}, 0);
  EXPECT_EQ(fnuz.data()[4], 0x00);  // FNUZ: no -0
  // Back to f16 and f32 exactly; f8 -> f8 through the exact value.
  expectNear(run1("Cast", {sat}, {{"to", I(10)}}), DType::kF16, {5}, {448, -448, kNaN, 0.46875, 0}, 0);
  expectNear(run1("Cast", {sat}, {{"to", I(20)}}), DType::kF8E5M2FNUZ, {5}, {448, -448, kNaN, 0.5, 0}, 0);
  EXPECT_EQ(code("Cast", {x}, {{"to", I(24)}, {"round_mode", S("odd")}}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, CastToE8M0RoundModes) {
  Tensor x = f32({4}, {0.124, 1.1, 1.5, 8});
  expectNear(run1("Cast", {x}, {{"to", I(24)}}), DType::kF8E8M0, {4}, {0.125, 2, 2, 8}, 0);
  expectNear(run1("Cast", {x}, {{"to", I(24)}, {"round_mode", S("down")}}), DType::kF8E8M0, {4},
             {0.0625, 1, 1, 8}, 0);
  expectNear(run1("Cast", {x}, {{"to", I(24)}, {"round_mode", S("nearest")}}), DType::kF8E8M0, {4},
             {0.125, 1, 2, 8}, 0);
}

TEST(ElementwiseTest, CastNarrowIntegers) {
  // Float -> i4 / u2: truncation, out of range 0 (onnx.reference's choice).
  expectInts(run1("Cast", {f32({5}, {-9, -8, 7.9, 8, -1.5})}, {{"to", I(22)}}), DType::kI4, {5},
             {0, -8, 7, 0, -1});
  expectInts(run1("Cast", {f32({4}, {-1, 0, 3, 4})}, {{"to", I(25)}}), DType::kU2, {4}, {0, 0, 3, 0});
  // Integer -> i4: wraps (ONNX: higher bits discarded); i4 -> i8 / f32 exact.
  Tensor i4 = run1("Cast", {it(DType::kI8, {4}, {8, -9, 23, -1})}, {{"to", I(22)}});
  expectInts(i4, DType::kI4, {4}, {-8, 7, 7, -1});
  expectInts(run1("Cast", {i4}, {{"to", I(3)}}), DType::kI8, {4}, {-8, 7, 7, -1});
  expectNear(run1("Cast", {i4}, {{"to", I(1)}}), DType::kF32, {4}, {-8, 7, 7, -1}, 0);
  expectInts(run1("Cast", {i4}, {{"to", I(21)}}), DType::kU4, {4}, {8, 7, 7, 15});
}

TEST(ElementwiseTest, QuantizeToNarrowDtypes) {
  Tensor x = f32({2, 3}, {0, 2.5, 30, -30, 5, 3});
  Tensor scale = f32({2}, {2, 1});
  // i4 per axis with zero point 1: round half even, then clamp to [-8, 7].
  expectInts(run1("QuantizeLinear", {x, scale, it(DType::kI4, {2}, {1, 1})}, {{"axis", I(0)}}),
             DType::kI4, {2, 3}, {1, 2, 7, -8, 6, 4});
  expectInts(run1("QuantizeLinear", {x, scale, it(DType::kU2, {2}, {0, 0})}, {{"axis", I(0)}}),
             DType::kU2, {2, 3}, {0, 1, 3, 0, 3, 3});
  // float8: x / scale rounded to nearest even, saturating (or not).
  Tensor zp8 = ft(DType::kF8E4M3FN, {2}, {0, 0});
  expectNear(run1("QuantizeLinear", {f32({2, 3}, {200, 1e6, -1e6, 1, 2, 3}), scale, zp8}, {{"axis", I(0)}}),
             DType::kF8E4M3FN, {2, 3}, {96, 448, -448, 1, 2, 3}, 0);
  expectNear(run1("QuantizeLinear", {f32({2, 3}, {200, 1e6, -1e6, 1, 2, 3}), scale, zp8},
                  {{"axis", I(0)}, {"saturate", I(0)}}),
             DType::kF8E4M3FN, {2, 3}, {96, kNaN, kNaN, 1, 2, 3}, 0);
  // float4 by output_dtype (no zero point): 2.5 / 2 = 1.25, a tie: 1.
  expectNear(run1("QuantizeLinear", {x, scale}, {{"axis", I(0)}, {"output_dtype", I(23)}}), DType::kF4E2M1,
             {2, 3}, {0, 1, 6, -6, 4, 3}, 0);
}

TEST(ElementwiseTest, DequantizeFromNarrowDtypes) {
  expectNear(run1("DequantizeLinear", {it(DType::kI4, {4}, {-8, -1, 0, 7}), f32({}, {2}), it(DType::kI4, {}, {1})}),
             DType::kF32, {4}, {-18, -4, -2, 12}, 0);
  expectNear(run1("DequantizeLinear", {ft(DType::kF8E5M2, {3}, {49152, -96, 0.5}), f32({}, {2})}), DType::kF32,
             {3}, {98304, -192, 1}, 0);
  expectNear(run1("DequantizeLinear", {ft(DType::kF4E2M1, {3}, {6, -1.5, 0.5}), ft(DType::kF16, {}, {4})}),
             DType::kF16, {3}, {24, -6, 2}, 0);
  // An f8e8m0 scale (microscaling) needs output_dtype.
  Tensor e8 = ft(DType::kF8E8M0, {}, {0.25});
  expectNear(run1("DequantizeLinear", {it(DType::kU4, {2}, {3, 15}), e8}, {{"output_dtype", I(1)}}),
             DType::kF32, {2}, {0.75, 3.75}, 0);
  EXPECT_EQ(code("DequantizeLinear", {it(DType::kU4, {2}, {3, 15}), e8}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, ArithmeticOnNarrowDtypesIsRefused) {
  Tensor a = ft(DType::kF8E4M3FN, {2}, {1, 2});
  EXPECT_EQ(code("Add", {a, a}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Abs", {it(DType::kI4, {1}, {-3})}), StatusCode::kInvalidArgument);
  // Data movement works on them: Where copies element bytes.
  Tensor w = run1("Where", {boolT({2}, {1, 0}), a, ft(DType::kF8E4M3FN, {2}, {-4, -8})});
  expectNear(w, DType::kF8E4M3FN, {2}, {1, -8}, 0);
}

TEST(ElementwiseTest, IdentityCopies) {
  Tensor x = i64({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run1("Identity", {x}), x);
}

TEST(ElementwiseTest, DropoutInferenceAndMask) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  auto r = run("Dropout", {x}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], x);
  expectInts((*r)[1], DType::kBool, {2, 2}, {1, 1, 1, 1});
  // training_mode with ratio 0 is still the identity.
  auto z = run("Dropout", {x, f32({}, {0}), boolT({}, {1})}, {}, 2);
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ((*z)[0], x);
  EXPECT_EQ(code("Dropout", {x, f32({}, {0.5}), boolT({}, {1})}), StatusCode::kUnimplemented);
  // training_mode false with a ratio: identity.
  EXPECT_EQ(run1("Dropout", {x, f32({}, {0.5}), boolT({}, {0})}), x);
}

TEST(ElementwiseTest, ClipWithOptionalBounds) {
  Tensor x = f32({5}, {-3, -1, 0, 2, kNaN});
  expectNear(run1("Clip", {x, f32({}, {-1.5}), f32({}, {1})}), DType::kF32, {5}, {-1.5, -1, 0, 1, kNaN});
  expectNear(run1("Clip", {x, f32({}, {-1.5})}), DType::kF32, {5}, {-1.5, -1, 0, 2, kNaN});
  expectNear(run1("Clip", {x, std::nullopt, f32({}, {0})}), DType::kF32, {5}, {-3, -1, 0, 0, kNaN});
  expectNear(run1("Clip", {x}), DType::kF32, {5}, {-3, -1, 0, 2, kNaN});
  Tensor q = it(DType::kI8, {4}, {-128, -5, 5, 127});
  expectInts(run1("Clip", {q, it(DType::kI8, {}, {-10}), it(DType::kI8, {}, {10})}), DType::kI8, {4},
             {-10, -5, 5, 10});
  EXPECT_EQ(code("Clip", {x, f32({2}, {0, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Clip", {x, i64({}, {0})}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Binary arithmetic and broadcasting
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, AddBroadcastsRowVector) {
  expectNear(run1("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}), DType::kF32,
             {2, 3}, {11, 22, 33, 14, 25, 36});
}

TEST(ElementwiseTest, AddBroadcastsScalarBothWays) {
  expectNear(run1("Add", {f32({}, {1}), f32({2, 2}, {1, 2, 3, 4})}), DType::kF32, {2, 2}, {2, 3, 4, 5});
  expectNear(run1("Sub", {f32({2, 2}, {1, 2, 3, 4}), f32({}, {1})}), DType::kF32, {2, 2}, {0, 1, 2, 3});
  expectNear(run1("Mul", {f32({}, {3}), f32({}, {4})}), DType::kF32, {}, {12});
}

TEST(ElementwiseTest, BroadcastSizeOneDimsAndRankMismatch) {
  // [2,1,3] x [4,1] -> [2,4,3]
  Tensor a = f32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({4, 1}, {0, 10, 20, 30});
  Tensor r = run1("Add", {a, b});
  ASSERT_EQ(r.shape(), (ir::Shape{2, 4, 3}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back((i * 3 + k + 1) + j * 10);
  expectNear(r, DType::kF32, {2, 4, 3}, want);
  // Both sides size-1 in different dims: [3,1] * [1,2] -> [3,2].
  expectNear(run1("Mul", {f32({3, 1}, {1, 2, 3}), f32({1, 2}, {1, -1})}), DType::kF32, {3, 2},
             {1, -1, 2, -2, 3, -3});
}

TEST(ElementwiseTest, BroadcastWithEmptyDims) {
  expectNear(run1("Add", {f32({0, 3}, {}), f32({3}, {1, 2, 3})}), DType::kF32, {0, 3}, {});
  expectNear(run1("Add", {f32({2, 1}, {1, 2}), f32({0}, {})}), DType::kF32, {2, 0}, {});
  EXPECT_EQ(code("Add", {f32({2}, {1, 2}), f32({0}, {})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, BadBroadcastAndDtypeMismatch) {
  EXPECT_EQ(code("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Mul", {f32({2}, {1, 2}), i64({2}, {1, 2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Add", {f32({2}, {1, 2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Add", {boolT({1}, {1}), boolT({1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, IntegerArithmeticWraps) {
  Tensor a = it(DType::kI32, {2}, {2147483647, -5});
  expectInts(run1("Add", {a, it(DType::kI32, {}, {1})}), DType::kI32, {2}, {-2147483648LL, -4});
  expectInts(run1("Mul", {it(DType::kU8, {2}, {200, 3}), it(DType::kU8, {}, {2})}), DType::kU8, {2},
             {144, 6});
  expectInts(run1("Sub", {it(DType::kU8, {1}, {1}), it(DType::kU8, {1}, {2})}), DType::kU8, {1}, {255});
}

TEST(ElementwiseTest, IntegerDivisionTruncatesTowardZero) {
  Tensor a = i64({4}, {7, -7, 7, -7});
  Tensor b = i64({4}, {2, 2, -2, -2});
  expectInts(run1("Div", {a, b}), DType::kI64, {4}, {3, -3, -3, 3});
  expectInts(run1("Div", {i64({1}, {std::numeric_limits<int64_t>::min()}), i64({1}, {-1})}), DType::kI64,
             {1}, {std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(code("Div", {a, i64({2, 1}, {1, 0})}), StatusCode::kInvalidArgument);
  // Float division by zero is IEEE.
  expectNear(run1("Div", {f32({3}, {1, -1, 0}), f32({}, {0})}), DType::kF32, {3}, {kInf, -kInf, kNaN});
}

TEST(ElementwiseTest, ModSignFollowsDivisorUnlessFmod) {
  Tensor a = i64({4}, {7, -7, 7, -7});
  Tensor b = i64({4}, {3, 3, -3, -3});
  expectInts(run1("Mod", {a, b}), DType::kI64, {4}, {1, 2, -2, -1});
  expectInts(run1("Mod", {a, b}, {{"fmod", I(1)}}), DType::kI64, {4}, {1, -1, 1, -1});
  expectNear(run1("Mod", {f32({2}, {-4.5, 4.5}), f32({}, {2})}, {{"fmod", I(1)}}), DType::kF32, {2},
             {-0.5, 0.5});
  expectNear(run1("Mod", {f32({2}, {-4.5, 4.5}), f32({}, {2})}), DType::kF32, {2}, {1.5, 0.5});
  EXPECT_EQ(code("Mod", {a, i64({}, {0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Mod", {a, b}, {{"fmod", I(2)}}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, PowWithMixedDtypes) {
  expectNear(run1("Pow", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}), DType::kF32, {3}, {1, 32, 729});
  // Output dtype is the base dtype.
  expectInts(run1("Pow", {it(DType::kI32, {3}, {1, 2, 3}), f32({3}, {4, 5, 6})}), DType::kI32, {3},
             {1, 32, 729});
  expectNear(run1("Pow", {f32({3}, {1, 2, 3}), i64({3}, {4, 5, 6})}), DType::kF32, {3}, {1, 32, 729});
  expectInts(run1("Pow", {i64({4}, {2, -3, 2, -1}), i64({4}, {62, 3, -1, -3})}), DType::kI64, {4},
             {int64_t{1} << 62, -27, 0, -1});
  expectNear(run1("Pow", {f32({2}, {4, 9}), f32({}, {0.5})}), DType::kF32, {2}, {2, 3});
  expectInts(run1("Pow", {it(DType::kI32, {2}, {2, 3}), f32({}, {0.5})}), DType::kI32, {2}, {1, 1});
}

TEST(ElementwiseTest, HalfPrecisionRoundsOnce) {
  // 1 + 2^-11 is not representable in f16; the exact sum rounds to even (1).
  Tensor a = ft(DType::kF16, {2}, {1, 2048});
  Tensor b = ft(DType::kF16, {2}, {0.00048828125, 1});
  expectNear(run1("Add", {a, b}), DType::kF16, {2}, {1, 2048});
  Tensor c = ft(DType::kBF16, {2}, {1, 3});
  expectNear(run1("Mul", {c, ft(DType::kBF16, {}, {1.5})}), DType::kBF16, {2}, {1.5, 4.5});
}

//===----------------------------------------------------------------------===//
// Variadic
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, VariadicBroadcastAcrossInputs) {
  Tensor a = f32({3}, {1, 5, 3});
  Tensor b = f32({2, 1}, {2, 4});
  Tensor c = f32({}, {0});
  expectNear(run1("Max", {a, b, c}), DType::kF32, {2, 3}, {2, 5, 3, 4, 5, 4});
  expectNear(run1("Min", {a, b}), DType::kF32, {2, 3}, {1, 2, 2, 1, 4, 3});
  expectNear(run1("Sum", {a, b, c}), DType::kF32, {2, 3}, {3, 7, 5, 5, 9, 7});
  expectNear(run1("Mean", {a, b}), DType::kF32, {2, 3}, {1.5, 3.5, 2.5, 2.5, 4.5, 3.5});
}

TEST(ElementwiseTest, VariadicSingleInputIntegersAndNaN) {
  expectNear(run1("Sum", {f32({2}, {1, 2})}), DType::kF32, {2}, {1, 2});
  expectInts(run1("Max", {it(DType::kU8, {2}, {3, 250}), it(DType::kU8, {2}, {200, 1})}), DType::kU8,
             {2}, {200, 250});
  expectInts(run1("Min", {it(DType::kI16, {2}, {-3, 5}), it(DType::kI16, {1}, {0})}), DType::kI16, {2},
             {-3, 0});
  expectNear(run1("Max", {f32({2}, {kNaN, 1}), f32({2}, {0, 2})}), DType::kF32, {2}, {kNaN, 2});
  EXPECT_EQ(code("Max", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Max", {f32({2}, {1, 2}), i64({2}, {1, 2})}), StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Comparisons, logic, Where
//===----------------------------------------------------------------------===//

TEST(ElementwiseTest, Comparisons) {
  Tensor a = f32({2, 2}, {1, 2, 3, kNaN});
  Tensor b = f32({2}, {2, 2});
  expectInts(run1("Equal", {a, b}), DType::kBool, {2, 2}, {0, 1, 0, 0});
  expectInts(run1("Less", {a, b}), DType::kBool, {2, 2}, {1, 0, 0, 0});
  expectInts(run1("LessOrEqual", {a, b}), DType::kBool, {2, 2}, {1, 1, 0, 0});
  expectInts(run1("Greater", {a, b}), DType::kBool, {2, 2}, {0, 0, 1, 0});
  expectInts(run1("GreaterOrEqual", {a, b}), DType::kBool, {2, 2}, {0, 1, 1, 0});
  // Large int64 values compare exactly (not through double).
  int64_t big = (int64_t{1} << 60) + 1;
  expectInts(run1("Equal", {i64({1}, {big}), i64({1}, {big - 1})}), DType::kBool, {1}, {0});
  expectInts(run1("Equal", {boolT({2}, {1, 0}), boolT({}, {1})}), DType::kBool, {2}, {1, 0});
  EXPECT_EQ(code("Less", {boolT({1}, {1}), boolT({1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, LogicOps) {
  Tensor a = boolT({2, 2}, {0, 0, 1, 1});
  Tensor b = boolT({2}, {0, 1});
  expectInts(run1("And", {a, b}), DType::kBool, {2, 2}, {0, 0, 0, 1});
  expectInts(run1("Or", {a, b}), DType::kBool, {2, 2}, {0, 1, 1, 1});
  expectInts(run1("Xor", {a, b}), DType::kBool, {2, 2}, {0, 1, 1, 0});
  EXPECT_EQ(code("And", {i64({1}, {1}), i64({1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, WhereBroadcastsAllThree) {
  Tensor c = boolT({2, 1}, {1, 0});
  Tensor x = i64({3}, {1, 2, 3});
  Tensor y = i64({}, {-1});
  expectInts(run1("Where", {c, x, y}), DType::kI64, {2, 3}, {1, 2, 3, -1, -1, -1});
  Tensor xf = ft(DType::kF16, {1}, {0.5});
  Tensor yf = ft(DType::kF16, {2}, {1, 2});
  expectNear(run1("Where", {boolT({2}, {0, 1}), xf, yf}), DType::kF16, {2}, {1, 0.5});
  EXPECT_EQ(code("Where", {f32({1}, {1}), x, y}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Where", {c, x, f32({}, {1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Where", {boolT({2}, {1, 0}), x, y}), StatusCode::kInvalidArgument);
}

// Issue 10: broadcasting two small tensors can ask for a huge result
// ([65536,1] + [1,65536] = 2^32 elements from 512 KiB); the size limit of
// ir/Tensor.h is checked before allocating.
TEST(ElementwiseTest, PReluBroadcastsSlopeToX) {
  Tensor x = f32({2, 3}, {-2, -0.5, 0, 3, -4, 1});
  // A scalar-like slope, a per-row slope [2,1] (NCHW's [C,1,1] form) and a
  // full-shape slope.
  expectNear(run1("PRelu", {x, f32({1}, {0.1})}), DType::kF32, {2, 3}, {-0.2, -0.05, 0, 3, -0.4, 1});
  expectNear(run1("PRelu", {x, f32({2, 1}, {0.5, 2})}), DType::kF32, {2, 3}, {-1, -0.25, 0, 3, -8, 1});
  expectNear(run1("PRelu", {x, f32({2, 3}, {1, 2, 3, 4, 5, 6})}), DType::kF32, {2, 3},
             {-2, -1, 0, 3, -20, 1});
  expectInts(run1("PRelu", {it(DType::kI32, {3}, {-3, 0, 4}), it(DType::kI32, {1}, {2})}), DType::kI32,
             {3}, {-6, 0, 4});
  expectNear(run1("PRelu", {f32({0, 3}, {}), f32({3}, {1, 2, 3})}), DType::kF32, {0, 3}, {});
  // Unidirectional: the slope may not enlarge x, and must share its dtype.
  EXPECT_EQ(code("PRelu", {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 1, 1, 1, 1, 1})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("PRelu", {x, f32({2}, {1, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("PRelu", {x, it(DType::kI32, {1}, {1})}), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, BroadcastOverSizeLimitIsAnError) {
  Tensor a(DType::kF32, {65536, 1}), b(DType::kF32, {1, 65536});
  auto r = run("Add", {a, b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("size limit"), std::string::npos) << r.status();
  auto m = run("MatMul", {a, b});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("size limit"), std::string::npos) << m.status();
}


TEST(ElementwiseTest, BitShiftWidthsSignsAndCounts) {
  // Unsigned: bits leave the width; a count >= the width gives 0.
  expectInts(run1("BitShift", {it(DType::kU8, {4}, {200, 1, 255, 16}), it(DType::kU8, {4}, {1, 7, 8, 2})},
                  {{"direction", S("LEFT")}}),
             DType::kU8, {4}, {144, 128, 0, 64});
  expectInts(run1("BitShift", {it(DType::kU8, {4}, {200, 1, 255, 16}), it(DType::kU8, {1}, {3})},
                  {{"direction", S("RIGHT")}}),
             DType::kU8, {4}, {25, 0, 31, 2});
  expectInts(run1("BitShift", {it(DType::kU32, {2}, {0xffffffff, 3}), it(DType::kU32, {2}, {4, 31})},
                  {{"direction", S("RIGHT")}}),
             DType::kU32, {2}, {0x0fffffff, 0});
  // Signed (opset 28): arithmetic right shift; out-of-range counts give the sign fill.
  expectInts(run1("BitShift", {it(DType::kI8, {5}, {-128, -1, 5, 64, -9}), it(DType::kI8, {5}, {1, 9, -1, 1, 2})},
                  {{"direction", S("LEFT")}}),
             DType::kI8, {5}, {0, 0, 0, -128, -36});
  expectInts(run1("BitShift", {it(DType::kI32, {4}, {-9, -1, 1000, -5}), it(DType::kI32, {4}, {2, 40, 3, -2})},
                  {{"direction", S("RIGHT")}}),
             DType::kI32, {4}, {-3, -1, 125, -1});
  EXPECT_EQ(code("BitShift", {f32({1}, {1}), f32({1}, {1})}, {{"direction", S("LEFT")}}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code("BitShift", {i64({1}, {1}), i64({1}, {1})}, {{"direction", S("UP")}}),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusec::interp
