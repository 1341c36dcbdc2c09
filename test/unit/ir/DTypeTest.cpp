//===- DTypeTest.cpp - Tests of the narrow dtypes' conversions ------------===//
//
// ir/DType.cpp: names and ONNX codes of the float8 / float4 / int4 / int2
// dtypes, and encodeNarrowFloat / decodeNarrowFloat at the formats'
// boundaries (largest finite value, saturate on and off, NaN, Inf, -0,
// subnormals, ties to even), f8e8m0's three roundings, the narrow integers'
// wrapping and Tensor's one-byte storage of them. Each float format is also
// checked exhaustively: every code decodes and encodes back to itself.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "ir/DType.h"
#include "ir/Tensor.h"

namespace fusec::ir {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

uint8_t enc(DType t, double v, bool saturate = true) { return encodeNarrowFloat(t, v, saturate); }

TEST(DTypeTest, NamesCodesAndSizes) {
  struct Row { DType t; int32_t code; const char *name; int64_t bits; };
  for (const Row &r : {Row{DType::kF8E4M3FN, 17, "f8e4m3fn", 8}, Row{DType::kF8E4M3FNUZ, 18, "f8e4m3fnuz", 8},
                       Row{DType::kF8E5M2, 19, "f8e5m2", 8}, Row{DType::kF8E5M2FNUZ, 20, "f8e5m2fnuz", 8},
                       Row{DType::kU4, 21, "u4", 4}, Row{DType::kI4, 22, "i4", 4},
                       Row{DType::kF4E2M1, 23, "f4e2m1", 4}, Row{DType::kF8E8M0, 24, "f8e8m0", 8},
                       Row{DType::kU2, 25, "u2", 2}, Row{DType::kI2, 26, "i2", 2}}) {
    EXPECT_EQ(dtypeFromOnnx(r.code), r.t);
    EXPECT_STREQ(dtypeName(r.t), r.name);
    EXPECT_EQ(dtypeFromName(r.name), r.t);
    EXPECT_EQ(dtypeSize(r.t), 1) << r.name;  // one element per byte in memory
    EXPECT_EQ(dtypeBits(r.t), r.bits) << r.name;
    EXPECT_TRUE(isNarrow(r.t));
    EXPECT_FALSE(isFloat(r.t) || isInteger(r.t)) << r.name << " is storage only";
  }
  EXPECT_EQ(dtypeBits(DType::kF32), 32);
  EXPECT_FALSE(dtypeFromOnnx(27).has_value());  // FLOAT6E2M3: not supported
}

TEST(DTypeTest, EveryCodeRoundTrips) {
  for (DType t : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E5M2, DType::kF8E5M2FNUZ,
                  DType::kF8E8M0, DType::kF4E2M1}) {
    const int codes = t == DType::kF4E2M1 ? 16 : 256;
    for (int c = 0; c < codes; ++c) {
      const double v = decodeNarrowFloat(t, static_cast<uint8_t>(c));
      if (std::isnan(v)) continue;
      EXPECT_EQ(enc(t, v, false), c) << dtypeName(t) << " code " << c;
      if (std::isinf(v)) continue;  // (saturated to the largest finite value)
      EXPECT_EQ(enc(t, v), c) << dtypeName(t) << " code " << c << " value " << v;
    }
  }
}

TEST(DTypeTest, E4M3FN) {
  const DType t = DType::kF8E4M3FN;
  EXPECT_EQ(narrowFloatMax(t), 448);
  EXPECT_EQ(decodeNarrowFloat(t, 0x7e), 448);
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 0x7f)));
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 0xff)));
  EXPECT_EQ(decodeNarrowFloat(t, 0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(decodeNarrowFloat(t, 0x08), std::ldexp(1.0, -6));  // smallest normal
  // 464 is the tie between 448 (mantissa 110) and 480 (111, the NaN code): even.
  EXPECT_EQ(enc(t, 464), 0x7e);
  EXPECT_EQ(enc(t, 464, false), 0x7e);
  EXPECT_EQ(enc(t, 465), 0x7e);        // saturate
  EXPECT_EQ(enc(t, 465, false), 0x7f);  // rounds past the largest finite: NaN
  EXPECT_EQ(enc(t, -1e6), 0xfe);
  EXPECT_EQ(enc(t, -1e6, false), 0xff);
  EXPECT_EQ(enc(t, kInf), 0x7e);  // Inf saturates to FLT_MAX
  EXPECT_EQ(enc(t, -kInf), 0xfe);
  EXPECT_EQ(enc(t, kInf, false), 0x7f);
  EXPECT_EQ(enc(t, kNaN), 0x7f);
  EXPECT_EQ(enc(t, -0.0), 0x80);
  EXPECT_EQ(enc(t, -1e-7), 0x80);  // underflow keeps the sign
  // Subnormals: 2^-10 is the tie between 0 and 2^-9: even (0); above it, 2^-9.
  EXPECT_EQ(enc(t, std::ldexp(1.0, -10)), 0x00);
  EXPECT_EQ(enc(t, std::ldexp(1.5, -10)), 0x01);
  EXPECT_EQ(enc(t, std::ldexp(3.0, -10)), 0x02);  // 1.5 * 2^-9: tie, to even 2
  // Normal ties: 100 lies between 96 (1.100b) and 104 (1.101b): 96.
  EXPECT_EQ(decodeNarrowFloat(t, enc(t, 100)), 96);
  EXPECT_EQ(decodeNarrowFloat(t, enc(t, 100.0001)), 104);
  EXPECT_EQ(decodeNarrowFloat(t, enc(t, 0.47892547)), 0.46875);
}

TEST(DTypeTest, E4M3FNUZ) {
  const DType t = DType::kF8E4M3FNUZ;
  EXPECT_EQ(narrowFloatMax(t), 240);
  EXPECT_EQ(decodeNarrowFloat(t, 0x7f), 240);
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 0x80)));  // the one NaN
  EXPECT_EQ(decodeNarrowFloat(t, 0xff), -240);
  EXPECT_EQ(decodeNarrowFloat(t, 0x01), std::ldexp(1.0, -10));
  EXPECT_EQ(enc(t, 248), 0x7f);  // tie between 240 and 256: even is 256 -> overflow
  EXPECT_EQ(enc(t, 248, false), 0x80);
  EXPECT_EQ(enc(t, 247.9, false), 0x7f);
  EXPECT_EQ(enc(t, kInf), 0x7f);
  EXPECT_EQ(enc(t, -kInf), 0xff);
  EXPECT_EQ(enc(t, -kInf, false), 0x80);
  EXPECT_EQ(enc(t, kNaN), 0x80);
  EXPECT_EQ(enc(t, -0.0), 0x00);   // no -0
  EXPECT_EQ(enc(t, -1e-7), 0x00);  // (0x80 would be NaN)
}

TEST(DTypeTest, E5M2) {
  const DType t = DType::kF8E5M2;
  EXPECT_EQ(narrowFloatMax(t), 57344);
  EXPECT_EQ(decodeNarrowFloat(t, 0x7c), kInf);
  EXPECT_EQ(decodeNarrowFloat(t, 0xfc), -kInf);
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 0x7d)));
  EXPECT_EQ(decodeNarrowFloat(t, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(enc(t, 61439), 0x7b);
  EXPECT_EQ(enc(t, 61440), 0x7b);         // tie: even would be 2^16, overflow -> saturate
  EXPECT_EQ(enc(t, 61440, false), 0x7c);  // Inf
  EXPECT_EQ(enc(t, -1e6, false), 0xfc);
  EXPECT_EQ(enc(t, kInf), 0x7b);  // saturate: Inf -> FLT_MAX
  EXPECT_EQ(enc(t, kInf, false), 0x7c);
  EXPECT_EQ(enc(t, -kInf, false), 0xfc);
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, enc(t, kNaN))));
  EXPECT_EQ(enc(t, -0.0), 0x80);
}

TEST(DTypeTest, E5M2FNUZ) {
  const DType t = DType::kF8E5M2FNUZ;
  EXPECT_EQ(decodeNarrowFloat(t, 0x7f), 57344);
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 0x80)));
  EXPECT_EQ(decodeNarrowFloat(t, 0x01), std::ldexp(1.0, -17));
  EXPECT_EQ(enc(t, 1e6), 0x7f);
  EXPECT_EQ(enc(t, 1e6, false), 0x80);
  EXPECT_EQ(enc(t, -kInf), 0xff);
  EXPECT_EQ(enc(t, kInf, false), 0x80);
  EXPECT_EQ(enc(t, -0.0), 0x00);
  EXPECT_EQ(enc(t, std::ldexp(1.0, -18)), 0x00);  // tie to even zero, not -0 / NaN
  EXPECT_EQ(enc(t, -std::ldexp(1.0, -17)), 0x81);
}

TEST(DTypeTest, F4E2M1) {
  const DType t = DType::kF4E2M1;
  const double values[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(decodeNarrowFloat(t, static_cast<uint8_t>(c)), values[c]);
    EXPECT_EQ(decodeNarrowFloat(t, static_cast<uint8_t>(c | 8)), -values[c]);
  }
  EXPECT_EQ(enc(t, 0.25), 0x0);  // tie between 0 and 0.5: even
  EXPECT_EQ(enc(t, 0.75), 0x2);  // tie between 0.5 and 1: even (1)
  EXPECT_EQ(enc(t, 2.5), 0x4);   // tie between 2 and 3: even (2)
  EXPECT_EQ(enc(t, 5), 0x6);     // tie between 4 and 6: even (4)
  EXPECT_EQ(enc(t, 1.05), 0x2);
  EXPECT_EQ(enc(t, -3.5), 0xe);  // tie between 3 and 4: even (4)
  EXPECT_EQ(enc(t, 9, false), 0x7);  // always saturates
  EXPECT_EQ(enc(t, -kInf), 0xf);
  EXPECT_EQ(enc(t, kNaN), 0x7);  // +6 (ONNX's Float4 document)
  EXPECT_EQ(enc(t, -0.0), 0x8);
}

TEST(DTypeTest, E8M0Roundings) {
  const DType t = DType::kF8E8M0;
  auto e = [&](double v, E8M0Rounding r, bool sat = true) { return encodeNarrowFloat(t, v, sat, r); };
  using R = E8M0Rounding;
  EXPECT_EQ(decodeNarrowFloat(t, 127), 1.0);
  EXPECT_EQ(decodeNarrowFloat(t, 0), std::ldexp(1.0, -127));
  EXPECT_EQ(decodeNarrowFloat(t, 254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(decodeNarrowFloat(t, 255)));
  EXPECT_EQ(e(1.1, R::kUp), 128);
  EXPECT_EQ(e(1.1, R::kDown), 127);
  EXPECT_EQ(e(1.1, R::kNearest), 127);
  EXPECT_EQ(e(1.5, R::kNearest), 128);  // ties up
  EXPECT_EQ(e(2.0, R::kUp), 128);       // exact
  EXPECT_EQ(e(0.124, R::kUp), 124);     // 2^-3
  EXPECT_EQ(e(0.0, R::kUp), 0);         // saturate: E8M0_MIN
  EXPECT_EQ(e(0.0, R::kNearest, false), 255);
  EXPECT_EQ(e(kInf, R::kUp), 254);
  EXPECT_EQ(e(kInf, R::kUp, false), 255);
  EXPECT_EQ(e(std::ldexp(1.5, 127), R::kUp), 254);  // would be 2^128: saturate
  EXPECT_EQ(e(std::ldexp(1.5, 127), R::kUp, false), 255);
  EXPECT_EQ(e(kNaN, R::kUp), 255);
}

TEST(DTypeTest, NarrowIntegers) {
  EXPECT_EQ(wrapNarrowInt(DType::kI4, 8), -8);
  EXPECT_EQ(wrapNarrowInt(DType::kI4, -9), 7);
  EXPECT_EQ(wrapNarrowInt(DType::kU4, 17), 1);
  EXPECT_EQ(wrapNarrowInt(DType::kI2, 2), -2);
  EXPECT_EQ(wrapNarrowInt(DType::kU2, -1), 3);
  Tensor i4 = Tensor::fromInts(DType::kI4, {3}, {-8, 7, 9});
  EXPECT_EQ(i4.byteSize(), 3);
  EXPECT_EQ(i4.toInts(), (std::vector<int64_t>{-8, 7, -7}));
  // From floats: truncation, and 0 out of range (as onnx.reference).
  Tensor u4 = Tensor::fromDoubles(DType::kU4, {4}, {15.9, -1, 16, kNaN});
  EXPECT_EQ(u4.toInts(), (std::vector<int64_t>{15, 0, 0, 0}));
  Tensor f8 = Tensor::fromDoubles(DType::kF8E4M3FN, {2}, {1e9, -0.3});
  EXPECT_EQ(f8.toDoubles(), (std::vector<double>{448, -0.3125}));
}

}  // namespace
}  // namespace fusec::ir
