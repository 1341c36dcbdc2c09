//===- DType.cpp - Names and sizes of fusert_dtype values -===//
//
// Kept apart from Runtime.cpp because it needs no CUDA library: the manifest
// parser and its CPU-only tests use it too.
//
//===----------------------------------------------------------------------===//
#include "fusert/fusert.h"

extern "C" {

const char *fusert_dtype_name(fusert_dtype dtype) {
  switch (dtype) {
  case FUSERT_F32:
    return "f32";
  case FUSERT_F16:
    return "f16";
  case FUSERT_BF16:
    return "bf16";
  case FUSERT_F64:
    return "f64";
  case FUSERT_I64:
    return "i64";
  case FUSERT_I32:
    return "i32";
  case FUSERT_I8:
    return "i8";
  case FUSERT_U8:
    return "u8";
  case FUSERT_BOOL:
    return "bool";
  case FUSERT_I16:
    return "i16";
  case FUSERT_U16:
    return "u16";
  case FUSERT_U32:
    return "u32";
  case FUSERT_U64:
    return "u64";
  case FUSERT_F8E4M3FN:
    return "f8e4m3fn";
  case FUSERT_F8E4M3FNUZ:
    return "f8e4m3fnuz";
  case FUSERT_F8E5M2:
    return "f8e5m2";
  case FUSERT_F8E5M2FNUZ:
    return "f8e5m2fnuz";
  }
  return "?";
}

size_t fusert_dtype_size(fusert_dtype dtype) {
  switch (dtype) {
  case FUSERT_F64:
  case FUSERT_I64:
  case FUSERT_U64:
    return 8;
  case FUSERT_F32:
  case FUSERT_I32:
  case FUSERT_U32:
    return 4;
  case FUSERT_F16:
  case FUSERT_BF16:
  case FUSERT_I16:
  case FUSERT_U16:
    return 2;
  case FUSERT_I8:
  case FUSERT_U8:
  case FUSERT_BOOL:
  case FUSERT_F8E4M3FN:
  case FUSERT_F8E4M3FNUZ:
  case FUSERT_F8E5M2:
  case FUSERT_F8E5M2FNUZ:
    return 1;
  }
  return 0;
}

} // extern "C"
