//===- Tensor.cpp - Dense tensor values -----------------------------------===//
#include "ir/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace fusec::ir {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::Status checkTensorSize(DType dtype, const Shape &shape, const char *what) {
  auto text = [&] {
    std::string t = "[";
    for (size_t i = 0; i < shape.size(); ++i) t += (i ? "," : "") + std::to_string(shape[i]);
    return t + "]";
  };
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0)
      return absl::InvalidArgumentError(std::string(what) + " shape " + text() + " has a negative dim");
  for (int64_t d : shape) {
    if (d == 0) return absl::OkStatus();
    if (n > kMaxTensorElements / d) {
      n = kMaxTensorElements + 1;
      break;
    }
    n *= d;
  }
  const int64_t elemBytes = dtype == DType::kString ? 1 : std::max<int64_t>(1, dtypeSize(dtype));
  if (n > kMaxTensorElements || n > kMaxTensorBytes / elemBytes)
    return absl::InvalidArgumentError(
        std::string(what) + " " + dtypeName(dtype) + text() + " exceeds the tensor size limit (" +
        std::to_string(kMaxTensorElements) + " elements, " + std::to_string(kMaxTensorBytes) +
        " bytes; ir/Tensor.h)");
  return absl::OkStatus();
}

Shape rowMajorStrides(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  if (dtype_ == DType::kString)
    strings_.resize(fusec::ir::numElements(shape_));
  else
    data_.assign(fusec::ir::numElements(shape_) * dtypeSize(dtype_), 0);
}

namespace {
template <typename T>
T load(const uint8_t *p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store(uint8_t *p, int64_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}
// Float-to-integer conversion that is defined for every input (NaN -> 0,
// out-of-range saturates), so that the interpreter never hits UB.
template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
}  // namespace

double Tensor::getDouble(int64_t i) const {
  const uint8_t *p = data_.data();
  switch (dtype_) {
    case DType::kF32: return load<float>(p, i);
    case DType::kF64: return load<double>(p, i);
    case DType::kF16: return halfToFloat(load<uint16_t>(p, i));
    case DType::kBF16: return bf16ToFloat(load<uint16_t>(p, i));
    case DType::kI8: return load<int8_t>(p, i);
    case DType::kI16: return load<int16_t>(p, i);
    case DType::kI32: return load<int32_t>(p, i);
    case DType::kI64: return static_cast<double>(load<int64_t>(p, i));
    case DType::kU8: return load<uint8_t>(p, i);
    case DType::kU16: return load<uint16_t>(p, i);
    case DType::kU32: return load<uint32_t>(p, i);
    case DType::kU64: return static_cast<double>(load<uint64_t>(p, i));
    case DType::kBool: return load<uint8_t>(p, i) ? 1.0 : 0.0;
    case DType::kI4: case DType::kI2: return load<int8_t>(p, i);
    case DType::kU4: case DType::kU2: return load<uint8_t>(p, i);
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ: case DType::kF8E8M0: case DType::kF4E2M1:
      return decodeNarrowFloat(dtype_, load<uint8_t>(p, i));
    case DType::kString: case DType::kUndefined: return 0.0;
  }
  return 0.0;
}

int64_t Tensor::getInt(int64_t i) const {
  const uint8_t *p = data_.data();
  switch (dtype_) {
    case DType::kI8: return load<int8_t>(p, i);
    case DType::kI16: return load<int16_t>(p, i);
    case DType::kI32: return load<int32_t>(p, i);
    case DType::kI64: return load<int64_t>(p, i);
    case DType::kU8: return load<uint8_t>(p, i);
    case DType::kU16: return load<uint16_t>(p, i);
    case DType::kU32: return load<uint32_t>(p, i);
    case DType::kU64: return static_cast<int64_t>(load<uint64_t>(p, i));
    case DType::kBool: return load<uint8_t>(p, i) ? 1 : 0;
    case DType::kI4: case DType::kI2: return load<int8_t>(p, i);
    case DType::kU4: case DType::kU2: return load<uint8_t>(p, i);
    default: return saturate<int64_t>(getDouble(i));
  }
}

void Tensor::setDouble(int64_t i, double v) {
  uint8_t *p = data_.data();
  switch (dtype_) {
    case DType::kF32: store<float>(p, i, static_cast<float>(v)); return;
    case DType::kF64: store<double>(p, i, v); return;
    case DType::kF16: store<uint16_t>(p, i, floatToHalf(static_cast<float>(v))); return;
    case DType::kBF16: store<uint16_t>(p, i, floatToBf16(static_cast<float>(v))); return;
    case DType::kBool: store<uint8_t>(p, i, v != 0.0 ? 1 : 0); return;
    case DType::kI8: store<int8_t>(p, i, saturate<int8_t>(v)); return;
    case DType::kI16: store<int16_t>(p, i, saturate<int16_t>(v)); return;
    case DType::kI32: store<int32_t>(p, i, saturate<int32_t>(v)); return;
    case DType::kI64: store<int64_t>(p, i, saturate<int64_t>(v)); return;
    case DType::kU8: store<uint8_t>(p, i, saturate<uint8_t>(v)); return;
    case DType::kU16: store<uint16_t>(p, i, saturate<uint16_t>(v)); return;
    case DType::kU32: store<uint32_t>(p, i, saturate<uint32_t>(v)); return;
    case DType::kU64: store<uint64_t>(p, i, saturate<uint64_t>(v)); return;
    case DType::kI4: case DType::kU4: case DType::kI2: case DType::kU2: {
      // Out of range (NaN included) gives 0, as onnx.reference (ml_dtypes)
      // does; ONNX leaves a float -> integer cast out of range undefined.
      int64_t lo = 0, hi = 0;
      narrowIntRange(dtype_, &lo, &hi);
      const double t = std::trunc(v);
      const int64_t x = t >= static_cast<double>(lo) && t <= static_cast<double>(hi)
                            ? static_cast<int64_t>(t) : 0;
      store<int8_t>(p, i, static_cast<int8_t>(x));
      return;
    }
    case DType::kF8E4M3FN: case DType::kF8E4M3FNUZ: case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ: case DType::kF8E8M0: case DType::kF4E2M1:
      store<uint8_t>(p, i, encodeNarrowFloat(dtype_, v));
      return;
    case DType::kString: case DType::kUndefined: return;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  uint8_t *p = data_.data();
  switch (dtype_) {
    // Integer-to-integer conversion wraps (two's complement), as in C and numpy.
    case DType::kI8: store<int8_t>(p, i, static_cast<int8_t>(v)); return;
    case DType::kI16: store<int16_t>(p, i, static_cast<int16_t>(v)); return;
    case DType::kI32: store<int32_t>(p, i, static_cast<int32_t>(v)); return;
    case DType::kI64: store<int64_t>(p, i, v); return;
    case DType::kU8: store<uint8_t>(p, i, static_cast<uint8_t>(v)); return;
    case DType::kU16: store<uint16_t>(p, i, static_cast<uint16_t>(v)); return;
    case DType::kU32: store<uint32_t>(p, i, static_cast<uint32_t>(v)); return;
    case DType::kU64: store<uint64_t>(p, i, static_cast<uint64_t>(v)); return;
    case DType::kBool: store<uint8_t>(p, i, v != 0 ? 1 : 0); return;
    case DType::kI4: case DType::kU4: case DType::kI2: case DType::kU2:
      store<int8_t>(p, i, static_cast<int8_t>(wrapNarrowInt(dtype_, v)));
      return;
    default: setDouble(i, static_cast<double>(v)); return;
  }
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(numElements());
  for (int64_t i = 0; i < numElements(); ++i) out[i] = getDouble(i);
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(numElements());
  for (int64_t i = 0; i < numElements(); ++i) out[i] = getInt(i);
  return out;
}

Tensor Tensor::fromDoubles(DType dtype, Shape shape, const std::vector<double> &values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.setDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::fromInts(DType dtype, Shape shape, const std::vector<int64_t> &values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.setInt(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalarInt(DType dtype, int64_t v) { return fromInts(dtype, {}, {v}); }
Tensor Tensor::scalarDouble(DType dtype, double v) { return fromDoubles(dtype, {}, {v}); }
Tensor Tensor::vectorI64(const std::vector<int64_t> &values) {
  return fromInts(DType::kI64, {static_cast<int64_t>(values.size())}, values);
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace fusec::ir
