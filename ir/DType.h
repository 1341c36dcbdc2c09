//===- DType.h - Element types of tensors -----------------------*- C++ -*-===//
//
// The element types the IR knows, with their ONNX TensorProto codes, text
// names (as printed in the text IR) and sizes, plus IEEE half / bfloat16
// conversions used by the interpreter and the frontend, and the narrow
// formats of ONNX's quantisation: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ,
// E8M0), float4 (E2M1) and the 4- and 2-bit integers.
//
// Narrow dtypes are storage formats: ONNX defines Cast, QuantizeLinear /
// DequantizeLinear and the data-movement ops on them, not arithmetic, so
// isFloat() / isInteger() leave them out (an Add on f8e4m3fn is refused as
// ONNX refuses it). In memory (ir::Tensor, the interpreter) every element
// takes one byte: a float8 / float4 element holds its code (float4 in the
// low nibble), an i4 / i2 element its value sign-extended to 8 bits, a u4 /
// u2 element its value. Only the ONNX serialisation packs the 4-bit types
// two per byte and the 2-bit types four per byte, low bits first
// (dtypeBits(); frontend/onnx/internal/OnnxTensor.cpp).
//
// The float conversions follow the formats' definitions (ONNX's Float8 and
// Float4 documents, onnx.ai/onnx/technical/float8.html and float4.html):
// round to nearest even on the exact value, then the format's overflow
// rule (encodeNarrowFloat).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_DTYPE_H
#define FUSEC_IR_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace fusec::ir {

/// Element type. Values match onnx.TensorProto.DataType so that conversion
/// from ONNX is a cast checked by dtypeFromOnnx().
enum class DType : int32_t {
  kUndefined = 0,
  kF32 = 1,
  kU8 = 2,
  kI8 = 3,
  kU16 = 4,
  kI16 = 5,
  kI32 = 6,
  kI64 = 7,
  kString = 8,
  kBool = 9,
  kF16 = 10,
  kF64 = 11,
  kU32 = 12,
  kU64 = 13,
  kBF16 = 16,
  kF8E4M3FN = 17,    ///< float8: 4-bit exponent (bias 7), no Inf, NaN = S.1111.111, max 448
  kF8E4M3FNUZ = 18,  ///< float8: bias 8, no Inf, no -0, NaN = 0x80, max 240
  kF8E5M2 = 19,      ///< float8: IEEE-like binary8 (bias 15, Inf, NaN), max 57344
  kF8E5M2FNUZ = 20,  ///< float8: bias 16, no Inf, no -0, NaN = 0x80, max 57344
  kU4 = 21,          ///< unsigned 4-bit integer, 0..15
  kI4 = 22,          ///< signed 4-bit integer, -8..7
  kF4E2M1 = 23,      ///< float4: 2-bit exponent (bias 1), no Inf / NaN, max 6
  kF8E8M0 = 24,      ///< float8: exponent only (2^(e-127)), no sign, no 0, NaN = 0xff
  kU2 = 25,          ///< unsigned 2-bit integer, 0..3
  kI2 = 26,          ///< signed 2-bit integer, -2..1
};

/// \returns the DType for an ONNX TensorProto.DataType code, or nullopt for
/// codes fusec does not support (complex, float6).
std::optional<DType> dtypeFromOnnx(int32_t code);

/// \returns the text-IR name: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64
/// bool string, and for the narrow dtypes f8e4m3fn f8e4m3fnuz f8e5m2
/// f8e5m2fnuz f8e8m0 f4e2m1 i4 u4 i2 u2 (ONNX's spelling, lower case).
const char *dtypeName(DType t);

/// Parses a text-IR dtype name; nullopt if unknown.
std::optional<DType> dtypeFromName(std::string_view name);

/// \returns the size in bytes of one element in memory (0 for string /
/// undefined; 1 for every narrow dtype, see the file comment).
int64_t dtypeSize(DType t);
/// \returns the bits of one element in ONNX's serialisation: 4 for i4 / u4 /
/// f4e2m1, 2 for i2 / u2, else 8 * dtypeSize(t).
int64_t dtypeBits(DType t);

bool isFloat(DType t);     ///< f16, bf16, f32, f64
bool isInteger(DType t);   ///< signed or unsigned integers of 8 bits or more (not bool)
bool isSigned(DType t);    ///< signed integers and floats (narrow ones included)
bool isNarrowFloat(DType t);  ///< the five float8 formats and f4e2m1
bool isNarrowInt(DType t);    ///< i4, u4, i2, u2
/// isNarrowFloat || isNarrowInt: dtypes that are stored, cast and
/// (de)quantised, never computed in.
inline bool isNarrow(DType t) { return isNarrowFloat(t) || isNarrowInt(t); }

/// The value range of a narrow integer dtype (i4: -8..7, u4: 0..15, i2:
/// -2..1, u2: 0..3); false for other dtypes.
bool narrowIntRange(DType t, int64_t *lo, int64_t *hi);
/// \returns \p v wrapped to narrow integer dtype \p t (two's complement, as
/// ONNX's integer-to-integer Cast discards the higher bits).
int64_t wrapNarrowInt(DType t, int64_t v);

/// Rounding of a cast to f8e8m0 (Cast's round_mode, opset 24+): "up" rounds
/// away from zero (the default), "down" toward zero, "nearest" to the nearer
/// power of two, ties up.
enum class E8M0Rounding { kUp, kDown, kNearest };

/// The value of code \p code of narrow float dtype \p t (NaN for NaN codes,
/// +-Inf for f8e5m2's).
double decodeNarrowFloat(DType t, uint8_t code);
/// The code of narrow float dtype \p t for \p v: round to nearest even on
/// the exact value (f8e8m0: \p e8m0 rounding), then, when the rounded
/// magnitude exceeds the largest finite value or \p v is infinite: with
/// \p saturate the largest finite value of v's sign; without it NaN for
/// E4M3FN and the FNUZ formats and +-Inf for E5M2 (ONNX Cast's two tables).
/// NaN gives the format's NaN (sign kept where the format has one). FNUZ
/// formats have no -0: a negative value that rounds to zero gives +0.
/// f4e2m1 has no Inf / NaN: it always saturates and NaN gives +6 (ONNX's
/// Float4 document). f8e8m0 ignores the sign (ONNX: negative input is
/// undefined) and gives NaN for zero, and for values below 2^-127 unless
/// they round up, when not saturating (2^-127 when saturating).
uint8_t encodeNarrowFloat(DType t, double v, bool saturate = true,
                          E8M0Rounding e8m0 = E8M0Rounding::kUp);
/// The largest finite value of narrow float dtype \p t.
double narrowFloatMax(DType t);

/// IEEE 754 binary16 <-> float, round to nearest even.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
/// bfloat16 <-> float, round to nearest even (NaN stays NaN).
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

}  // namespace fusec::ir

#endif  // FUSEC_IR_DTYPE_H
