//===- BuiltinTargets.h - Target files compiled into fusec ------*- C++ -*-===//
//
// The text of each targets/<name>.textproto, embedded by
// passes/cost/CMakeLists.txt into a generated BuiltinTargets.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_COST_INTERNAL_BUILTINTARGETS_H
#define FUSEC_PASSES_COST_INTERNAL_BUILTINTARGETS_H

#include <vector>

namespace fusec::passes::internal {

struct BuiltinTargetText {
  const char *name;  ///< file stem: "h200"
  const char *text;  ///< file contents, protobuf text format
};

/// The built-in target files, sorted by name.
const std::vector<BuiltinTargetText> &builtinTargetTexts();

}  // namespace fusec::passes::internal

#endif  // FUSEC_PASSES_COST_INTERNAL_BUILTINTARGETS_H
