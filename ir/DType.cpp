//===- DType.cpp - Element types of tensors -------------------------------===//
#include "ir/DType.h"

#include <cmath>
#include <cstring>

namespace fusec::ir {

std::optional<DType> dtypeFromOnnx(int32_t code) {
  switch (code) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
    case 10: case 11: case 12: case 13: case 16:
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
    case DType::kUndefined: return "undef";
  }
  return "undef";
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI8,
                  DType::kI16, DType::kI32, DType::kI64, DType::kU8, DType::kU16,
                  DType::kU32, DType::kU64, DType::kBool, DType::kString}) {
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
    case DType::kString: case DType::kUndefined: return 0;
  }
  return 0;
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
         t == DType::kI64;
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

}  // namespace fusec::ir
