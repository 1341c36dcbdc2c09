//===- Type.h - Tensor types with symbolic dimensions -----------*- C++ -*-===//
//
// TensorType = dtype + shape, where each dimension is a static extent, a named
// symbol (ONNX dim_param, e.g. "batch") or unknown. Text form:
//   f32[2,batch,?]     a rank-3 f32 tensor; "?" is an unknown dimension
//   i64[]              a scalar
//   f32[*]             unknown rank (only before shape inference)
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_TYPE_H
#define FUSEC_IR_TYPE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/DType.h"
#include "ir/Tensor.h"

namespace fusec::ir {

/// One dimension: static (value >= 0), symbolic (symbol non-empty) or unknown.
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from an extent is natural.
  static Dim symbolic(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  static Dim unknown() { return Dim(); }

  bool isStatic() const { return value >= 0; }
  bool isSymbolic() const { return value < 0 && !symbol.empty(); }
  bool isUnknown() const { return value < 0 && symbol.empty(); }

  bool operator==(const Dim &o) const { return value == o.value && symbol == o.symbol; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  /// Text form: the integer, the symbol, or "?".
  std::string str() const;
};

struct TensorType {
  DType dtype = DType::kUndefined;
  std::vector<Dim> shape;
  bool rankKnown = true;

  TensorType() = default;
  TensorType(DType t, std::vector<Dim> s) : dtype(t), shape(std::move(s)) {}
  static TensorType fromShape(DType t, const Shape &s) {
    return TensorType(t, std::vector<Dim>(s.begin(), s.end()));
  }
  static TensorType unranked(DType t) {
    TensorType tt(t, {});
    tt.rankKnown = false;
    return tt;
  }

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// True if the rank and every dimension are static.
  bool isStatic() const;
  /// The static shape; only valid when isStatic().
  Shape staticShape() const;
  /// Number of elements if static, otherwise nullopt.
  std::optional<int64_t> numElements() const;

  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape && rankKnown == o.rankKnown;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  /// Text form, e.g. "f32[2,batch,?]".
  std::string str() const;
};

}  // namespace fusec::ir

#endif  // FUSEC_IR_TYPE_H
