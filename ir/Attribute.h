//===- Attribute.h - Node attributes ----------------------------*- C++ -*-===//
//
// Attributes follow ONNX AttributeProto: int, float, string, tensor, and lists
// of ints, floats and strings. Graph-valued attributes (If/Loop bodies) are
// not supported by fusec. A node keeps its attributes sorted by name so that
// printing is deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_ATTRIBUTE_H
#define FUSEC_IR_ATTRIBUTE_H

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/Tensor.h"

namespace fusec::ir {

class Attribute {
 public:
  enum class Kind { kInt, kFloat, kString, kTensor, kInts, kFloats, kStrings };

  Attribute() : value_(int64_t{0}) {}
  Attribute(int64_t v) : value_(v) {}                        // NOLINT
  Attribute(float v) : value_(v) {}                          // NOLINT
  Attribute(std::string v) : value_(std::move(v)) {}         // NOLINT
  Attribute(Tensor v) : value_(std::move(v)) {}              // NOLINT
  Attribute(std::vector<int64_t> v) : value_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<float> v) : value_(std::move(v)) {}    // NOLINT
  Attribute(std::vector<std::string> v) : value_(std::move(v)) {}  // NOLINT

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  int64_t i() const { return std::get<int64_t>(value_); }
  float f() const { return std::get<float>(value_); }
  const std::string &s() const { return std::get<std::string>(value_); }
  const Tensor &t() const { return std::get<Tensor>(value_); }
  const std::vector<int64_t> &ints() const { return std::get<std::vector<int64_t>>(value_); }
  const std::vector<float> &floats() const { return std::get<std::vector<float>>(value_); }
  const std::vector<std::string> &strings() const {
    return std::get<std::vector<std::string>>(value_);
  }

  bool operator==(const Attribute &o) const { return value_ == o.value_; }

 private:
  // Order must match Kind.
  std::variant<int64_t, float, std::string, Tensor, std::vector<int64_t>,
               std::vector<float>, std::vector<std::string>>
      value_;
};

/// Attributes by name, sorted.
using AttributeMap = std::map<std::string, Attribute>;

/// Name of an attribute kind as written in the text IR ("int", "ints", ...).
const char *attributeKindName(Attribute::Kind k);

}  // namespace fusec::ir

#endif  // FUSEC_IR_ATTRIBUTE_H
