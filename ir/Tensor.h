//===- Tensor.h - Dense tensor values ---------------------------*- C++ -*-===//
//
// A Tensor is a dense, row-major (C order) array with a dtype and a static
// shape. It holds weights (ONNX initializers and Constant nodes) in the IR and
// every value the reference interpreter computes. Elements are stored in their
// own dtype, little-endian; strings are stored separately.
//
// The interpreter works on two "wide" views: float dtypes as double, integer
// and bool dtypes as int64 (uint64 values above INT64_MAX wrap; fusec does not
// support such values). Narrow dtypes (ir/DType.h) take one byte per element
// here: a float8 / float4 code, or a 4- / 2-bit integer's value; getDouble
// decodes them and setDouble rounds to nearest even and saturates (Cast's
// default); setInt wraps a narrow integer to its width.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_TENSOR_H
#define FUSEC_IR_TENSOR_H

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/DType.h"

namespace fusec::ir {

using Shape = std::vector<int64_t>;

/// \returns the number of elements of \p shape (1 for a scalar).
int64_t numElements(const Shape &shape);

/// Largest tensor fusec materialises on the host (the reference interpreter,
/// constant folding) and accepts in a type (shape inference): 2^31 elements
/// and 2^32 bytes (4 GiB). Far above any real model's largest weight or
/// activation, far below what makes a host allocation abort.
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
constexpr int64_t kMaxTensorBytes = int64_t{1} << 32;

/// Checks that \p shape has no negative dim and at most kMaxTensorElements
/// elements and kMaxTensorBytes bytes of \p dtype (strings count 1 byte),
/// computing the product without overflow. \returns InvalidArgument naming
/// \p what and the shape otherwise. Call it BEFORE allocating.
absl::Status checkTensorSize(DType dtype, const Shape &shape, const char *what = "tensor");

/// \returns the row-major strides of \p shape, in elements.
Shape rowMajorStrides(const Shape &shape);

class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled tensor of the given dtype and shape.
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const { return fusec::ir::numElements(shape_); }
  int64_t byteSize() const { return static_cast<int64_t>(data_.size()); }

  /// Raw element bytes, numElements() * dtypeSize(dtype()) long.
  const uint8_t *data() const { return data_.data(); }
  uint8_t *data() { return data_.data(); }
  std::vector<uint8_t> &bytes() { return data_; }
  const std::vector<uint8_t> &bytes() const { return data_; }
  /// String elements (dtype string only).
  std::vector<std::string> &strings() { return strings_; }
  const std::vector<std::string> &strings() const { return strings_; }

  /// Element \p i as a double (any numeric or bool dtype).
  double getDouble(int64_t i) const;
  /// Element \p i as an int64 (floats truncate toward zero).
  int64_t getInt(int64_t i) const;
  /// Stores \p v into element \p i, converting to dtype() (round to nearest
  /// for f16/bf16, C++ conversion for integers, v != 0 for bool).
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  /// All elements as doubles / int64s.
  std::vector<double> toDoubles() const;
  std::vector<int64_t> toInts() const;

  /// Builds a tensor of \p dtype from wide values (converted per setDouble /
  /// setInt). \p values must have numElements(shape) entries.
  static Tensor fromDoubles(DType dtype, Shape shape, const std::vector<double> &values);
  static Tensor fromInts(DType dtype, Shape shape, const std::vector<int64_t> &values);
  /// A scalar (rank 0) or 1-D int64 tensor.
  static Tensor scalarInt(DType dtype, int64_t v);
  static Tensor scalarDouble(DType dtype, double v);
  static Tensor vectorI64(const std::vector<int64_t> &values);

  /// Same data, new shape (element count must match; checked by caller).
  Tensor reshaped(Shape shape) const;

  bool operator==(const Tensor &o) const {
    return dtype_ == o.dtype_ && shape_ == o.shape_ && data_ == o.data_ &&
           strings_ == o.strings_;
  }

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::vector<uint8_t> data_;
  std::vector<std::string> strings_;
};

}  // namespace fusec::ir

#endif  // FUSEC_IR_TENSOR_H
