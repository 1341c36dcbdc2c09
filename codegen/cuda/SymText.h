//===- SymText.h - Symbolic extents as C expressions --------------*- C++ -*-===//
//
// Dynamic shapes in the CUDA generator: a symbolic extent (program/
// SymExtent.h) printed as long long arithmetic over the bound symbols, for
// the pointwise and row kernels (CudaKernelCommon.h) and the tiled
// attention launcher (attention/TiledAttention.cpp) alike.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_SYMTEXT_H
#define FUSEC_CODEGEN_CUDA_SYMTEXT_H

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "program/SymExtent.h"

namespace fusec::codegen {

using ::fusec::program::SymExtent;

/// Dynamic shapes (program/Symbolic.h): how generated code reads the
/// extents bound at run time. Kernels of a dynamic artifact take the bound
/// symbols by value as their last parameter (`const fx::Syms sy`, in
/// manifest "symbols" order); their launchers take them as
/// `const int64_t *symbols` (docs/ARTIFACT.md). Empty names: a static
/// artifact, every extent a literal.
struct SymText {
  std::vector<std::string> names;  ///< symbol order (the manifest's)
  std::vector<int64_t> max;        ///< each symbol's largest value (index width)
  bool dynamic() const { return !names.empty(); }
  /// \p e as a C expression of type long long over array \p arr
  /// ("sy.v" in kernels, "symbols" in launchers); a literal when constant.
  std::string of(const SymExtent &e, const std::string &arr = "sy.v") const {
    if (e.isConstant()) return absl::StrCat("(", e.coeff(), "LL)");
    std::string out = absl::StrCat("(", e.coeff(), "LL");
    for (const std::string &n : e.symbols()) {
      const auto it = std::find(names.begin(), names.end(), n);
      absl::StrAppend(&out, " * (long long)", arr, "[", it == names.end() ? -1 : it - names.begin(), "]");
    }
    if (e.offset() != 0) absl::StrAppend(&out, " + (", e.offset(), "LL)");
    return out + ")";
  }
  /// \p e at every symbol's maximum (an upper bound of its value).
  int64_t upper(const SymExtent &e) const {
    std::map<std::string, int64_t> b;
    for (size_t i = 0; i < names.size(); ++i) b[names[i]] = i < max.size() ? max[i] : INT32_MAX;
    return e.evaluate(b).value_or(INT64_MAX);
  }
  /// True if every symbol of \p e is one of names (checked before printing).
  bool knows(const SymExtent &e) const {
    for (const std::string &n : e.symbols())
      if (std::find(names.begin(), names.end(), n) == names.end()) return false;
    return true;
  }
};

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_CUDA_SYMTEXT_H
