//===- DType.cpp - Element types of tensors -------------------------------===//
#include "ir/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fusec::ir {

std::optional<DType> dtypeFromOnnx(int32_t code) {
  switch (code) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
    case 10: case 11: case 12: case 13: case 16: case 17: case 18: case 19: case 20:
    case 21: case 22: case 23: case 24: case 25: case 26:
      return static_cast<DType>(code);
    default:
      return std::nullopt;
  }
}

const char *dtypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "i8";
    case DType::kI16: return "i16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kU64: return "u64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kF8E4M3FN: return "f8e4m3fn";
    case DType::kF8E4M3FNUZ: return "f8e4m3fnuz";
    case DType::kF8E5M2: return "f8e5m2";
    case DType::kF8E5M2FNUZ: return "f8e5m2fnuz";
    case DType::kF8E8M0: return "f8e8m0";
    case DType::kF4E2M1: return "f4e2m1";
    case DType::kI4: return "i4";
    case DType::kU4: return "u4";
    case DType::kI2: return "i2";
    case DType::kU2: return "u2";
    case DType::kUndefined: return "undef";
  }
  return "undef";
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI8,
                  DType::kI16, DType::kI32, DType::kI64, DType::kU8, DType::kU16,
                  DType::kU32, DType::kU64, DType::kBool, DType::kString, DType::kF8E4M3FN,
                  DType::kF8E4M3FNUZ, DType::kF8E5M2, DType::kF8E5M2FNUZ, DType::kF8E8M0,
                  DType::kF4E2M1, DType::kI4, DType::kU4, DType::kI2, DType::kU2}) {
    if (dtypeName(t) == name) return t;
  }
  return std::nullopt;
}

int64_t dtypeSize(DType t) {
  switch (t) {
    case DType::kF64: case DType::kI64: case DType::kU64: return 8;
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ: case DType::kF8E8M0: case DType::kF4E2M1: case DType::kI4:
    case DType::kU4: case DType::kI2: case DType::kU2: return 1;
    case DType::kString: case DType::kUndefined: return 0;
  }
  return 0;
}

int64_t dtypeBits(DType t) {
  switch (t) {
    case DType::kI4: case DType::kU4: case DType::kF4E2M1: return 4;
    case DType::kI2: case DType::kU2: return 2;
    default: return 8 * dtypeSize(t);
  }
}

bool isFloat(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}
bool isInteger(DType t) {
  switch (t) {
    case DType::kI8: case DType::kI16: case DType::kI32: case DType::kI64:
    case DType::kU8: case DType::kU16: case DType::kU32: case DType::kU64:
      return true;
    default:
      return false;
  }
}
bool isSigned(DType t) {
  return isFloat(t) || t == DType::kI8 || t == DType::kI16 || t == DType::kI32 ||
         t == DType::kI64 || t == DType::kI4 || t == DType::kI2 ||
         (isNarrowFloat(t) && t != DType::kF8E8M0);
}
bool isNarrowFloat(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ: case DType::kF8E8M0: case DType::kF4E2M1:
      return true;
    default:
      return false;
  }
}
bool isNarrowInt(DType t) {
  return t == DType::kI4 || t == DType::kU4 || t == DType::kI2 || t == DType::kU2;
}

bool narrowIntRange(DType t, int64_t *lo, int64_t *hi) {
  switch (t) {
    case DType::kI4: *lo = -8; *hi = 7; return true;
    case DType::kU4: *lo = 0; *hi = 15; return true;
    case DType::kI2: *lo = -2; *hi = 1; return true;
    case DType::kU2: *lo = 0; *hi = 3; return true;
    default: return false;
  }
}

int64_t wrapNarrowInt(DType t, int64_t v) {
  const int64_t bits = dtypeBits(t);
  const auto w = static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t{1} << bits) - 1));
  if (t == DType::kI4 || t == DType::kI2) {
    const int64_t half = int64_t{1} << (bits - 1);
    return w >= half ? w - 2 * half : w;
  }
  return w;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  }
  if (absx >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // overflow
  if (absx < 0x38800000) {  // subnormal half or zero: round absx * 2^24
    float a;
    std::memcpy(&a, &absx, 4);
    float scaled = a * 16777216.0f;  // exact: a < 2^-14
    auto m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: rebias exponent and round mantissa to 10 bits, nearest even.
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h += 1;
  return static_cast<uint16_t>(sign | h);
}

float bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

namespace {

/// A narrow float format with a sign, an exponent and a mantissa (every
/// narrow float but f8e8m0).
struct MiniFloat {
  int mantBits;       ///< explicit mantissa bits
  int expBits;        ///< exponent field width
  int bias;           ///< the smallest normal is 2^(1 - bias)
  double maxFinite;   ///< largest finite value
  bool hasInf;        ///< E5M2: exponent all ones with mantissa 0 is Inf
  bool fnuz;          ///< one NaN, code 0x80 (the would-be -0); no -0
  uint8_t nanCode;    ///< the positive NaN code written (0 when none)
  int minExp() const { return 1 - bias; }
  int signShift() const { return expBits + mantBits; }
};

const MiniFloat &miniFloat(DType t) {
  static const MiniFloat kE4M3FN{3, 4, 7, 448.0, false, false, 0x7f};
  static const MiniFloat kE4M3FNUZ{3, 4, 8, 240.0, false, true, 0x80};
  static const MiniFloat kE5M2{2, 5, 15, 57344.0, true, false, 0x7e};
  static const MiniFloat kE5M2FNUZ{2, 5, 16, 57344.0, false, true, 0x80};
  static const MiniFloat kE2M1{1, 2, 1, 6.0, false, false, 0};
  switch (t) {
    case DType::kF8E4M3FN: return kE4M3FN;
    case DType::kF8E4M3FNUZ: return kE4M3FNUZ;
    case DType::kF8E5M2: return kE5M2;
    case DType::kF8E5M2FNUZ: return kE5M2FNUZ;
    default: return kE2M1;
  }
}

/// The code (without sign) of \p mag: finite, >= 0 and exactly
/// representable in \p f.
uint8_t magnitudeCode(const MiniFloat &f, double mag) {
  if (mag == 0) return 0;
  int e = 0;
  const double frac = std::frexp(mag, &e);  // mag = frac * 2^e, frac in [0.5, 1)
  const int exp = e - 1;
  if (exp < f.minExp())  // subnormal: a multiple of 2^(minExp - mantBits)
    return static_cast<uint8_t>(std::ldexp(mag, f.mantBits - f.minExp()));
  const auto mant = static_cast<unsigned>(std::ldexp(2 * frac - 1, f.mantBits));
  return static_cast<uint8_t>((static_cast<unsigned>(exp + f.bias) << f.mantBits) | mant);
}

uint8_t encodeE8M0(double v, bool saturate, E8M0Rounding mode) {
  if (std::isnan(v)) return 0xff;
  const double mag = std::fabs(v);  // the sign is ignored (negative input: undefined)
  if (std::isinf(mag)) return saturate ? 0xfe : 0xff;
  if (mag < std::ldexp(1.0, -127)) {
    // Below the smallest value 2^-127: "up" reaches it; otherwise it is an
    // underflow (zero included), E8M0_MIN when saturating, else NaN.
    if (mag > 0 && mode == E8M0Rounding::kUp) return 0x00;
    return saturate ? 0x00 : 0xff;
  }
  int e = 0;
  const double frac = std::frexp(mag, &e);  // mag = (2 frac) * 2^(e-1), 2 frac in [1, 2)
  int exp = e - 1;
  if (mode == E8M0Rounding::kUp && frac != 0.5) exp += 1;
  if (mode == E8M0Rounding::kNearest && 2 * frac >= 1.5) exp += 1;
  if (exp > 127) return saturate ? 0xfe : 0xff;
  return static_cast<uint8_t>(exp + 127);
}

}  // namespace

double narrowFloatMax(DType t) {
  if (t == DType::kF8E8M0) return std::ldexp(1.0, 127);
  return miniFloat(t).maxFinite;
}

double decodeNarrowFloat(DType t, uint8_t code) {
  if (t == DType::kF8E8M0)
    return code == 0xff ? NAN : std::ldexp(1.0, static_cast<int>(code) - 127);
  const MiniFloat &f = miniFloat(t);
  const unsigned signBit = 1u << f.signShift();
  const unsigned c = code & (2 * signBit - 1);
  if (f.fnuz && c == signBit) return NAN;
  const unsigned expField = (c >> f.mantBits) & ((1u << f.expBits) - 1);
  const unsigned mant = c & ((1u << f.mantBits) - 1);
  const unsigned expMax = (1u << f.expBits) - 1;
  double v;
  if (t == DType::kF8E4M3FN && expField == expMax && mant == (1u << f.mantBits) - 1) {
    v = NAN;
  } else if (f.hasInf && expField == expMax) {
    v = mant ? NAN : INFINITY;
  } else if (expField == 0) {
    v = std::ldexp(static_cast<double>(mant), f.minExp() - f.mantBits);
  } else {
    v = std::ldexp(static_cast<double>(mant | (1u << f.mantBits)),
                   static_cast<int>(expField) - f.bias - f.mantBits);
  }
  return (c & signBit) ? -v : v;
}

uint8_t encodeNarrowFloat(DType t, double v, bool saturate, E8M0Rounding e8m0) {
  if (t == DType::kF8E8M0) return encodeE8M0(v, saturate, e8m0);
  const MiniFloat &f = miniFloat(t);
  const bool isF4 = t == DType::kF4E2M1;
  if (isF4) saturate = true;  // no Inf / NaN to overflow to
  const auto signBit = static_cast<uint8_t>(1u << f.signShift());
  if (std::isnan(v)) {
    if (isF4) return 0x7;  // +6 (ONNX's Float4 document)
    if (f.fnuz) return 0x80;
    return static_cast<uint8_t>(f.nanCode | (std::signbit(v) ? signBit : 0));
  }
  const uint8_t sign = std::signbit(v) ? signBit : 0;
  const double mag = std::fabs(v);
  const auto maxCode = static_cast<uint8_t>(sign | magnitudeCode(f, f.maxFinite));
  // Without saturation an overflow is NaN, or Inf for E5M2.
  const uint8_t overflow = f.fnuz     ? uint8_t{0x80}
                           : f.hasInf ? static_cast<uint8_t>(sign | 0x7c)
                                      : static_cast<uint8_t>(sign | f.nanCode);
  if (std::isinf(mag)) return saturate ? maxCode : overflow;
  // Round to nearest even at the quantum of mag's binade (the subnormal
  // quantum below the normal range); mag / quantum is exact in double and
  // the default rounding mode of nearbyint is to nearest even.
  int e = 0;
  std::frexp(mag, &e);
  const int exp = std::max(e - 1, f.minExp());
  const double quantum = std::ldexp(1.0, exp - f.mantBits);
  const double rounded = std::nearbyint(mag / quantum) * quantum;
  if (rounded > f.maxFinite) return saturate ? maxCode : overflow;
  const uint8_t code = magnitudeCode(f, rounded);
  if (code == 0 && f.fnuz) return 0;  // no -0
  return static_cast<uint8_t>(sign | code);
}

}  // namespace fusec::ir
