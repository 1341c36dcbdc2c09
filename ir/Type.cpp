//===- Type.cpp - Tensor types with symbolic dimensions -------------------===//
#include "ir/Type.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fusec::ir {

std::string Dim::str() const {
  if (isStatic()) return absl::StrCat(value);
  if (isSymbolic()) return symbol;
  return "?";
}

bool TensorType::isStatic() const {
  if (!rankKnown) return false;
  for (const Dim &d : shape)
    if (!d.isStatic()) return false;
  return true;
}

Shape TensorType::staticShape() const {
  Shape s;
  s.reserve(shape.size());
  for (const Dim &d : shape) s.push_back(d.value);
  return s;
}

std::optional<int64_t> TensorType::numElements() const {
  if (!isStatic()) return std::nullopt;
  return fusec::ir::numElements(staticShape());
}

std::string TensorType::str() const {
  if (!rankKnown) return absl::StrCat(dtypeName(dtype), "[*]");
  return absl::StrCat(dtypeName(dtype), "[",
                      absl::StrJoin(shape, ",", [](std::string *out, const Dim &d) {
                        out->append(d.str());
                      }),
                      "]");
}

}  // namespace fusec::ir
