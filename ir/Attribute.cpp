//===- Attribute.cpp - Node attributes ------------------------------------===//
#include "ir/Attribute.h"

namespace fusec::ir {

const char *attributeKindName(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
  }
  return "int";
}

}  // namespace fusec::ir
