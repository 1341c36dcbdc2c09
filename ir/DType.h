//===- DType.h - Element types of tensors -----------------------*- C++ -*-===//
//
// The element types the IR knows, with their ONNX TensorProto codes, text
// names (as printed in the text IR) and sizes, plus IEEE half / bfloat16
// conversions used by the interpreter and the frontend.
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
};

/// \returns the DType for an ONNX TensorProto.DataType code, or nullopt for
/// codes fusec does not support (complex, float8, int4, ...).
std::optional<DType> dtypeFromOnnx(int32_t code);

/// \returns the text-IR name: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64
/// bool string.
const char *dtypeName(DType t);

/// Parses a text-IR dtype name; nullopt if unknown.
std::optional<DType> dtypeFromName(std::string_view name);

/// \returns the size in bytes of one element (0 for string / undefined).
int64_t dtypeSize(DType t);

bool isFloat(DType t);     ///< f16, bf16, f32, f64
bool isInteger(DType t);   ///< signed or unsigned integers (not bool)
bool isSigned(DType t);    ///< signed integers and floats

/// IEEE 754 binary16 <-> float, round to nearest even.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
/// bfloat16 <-> float, round to nearest even (NaN stays NaN).
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

}  // namespace fusec::ir

#endif  // FUSEC_IR_DTYPE_H
