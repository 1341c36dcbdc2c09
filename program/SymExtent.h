//===- SymExtent.h - Symbolic loop extents and buffer dims -------*- C++ -*-===//
//
// An extent that may depend on symbolic dims of the model (an ONNX dim_param
// such as "batch" or "seq"): a product of symbols times a positive constant,
// coeff * s1 * s2 * ... (e.g. 4*batch*seq). This is the form every extent of
// a fused kernel takes: each domain dim and each buffer dim is one model dim,
// or a flattened product of model dims (reshape, flatten, rows of a
// reduction). A static extent has no symbols.
//
// KernelSpec carries one per loop dim and per buffer dim next to the integer
// the CUDA backend specialises to; dynamic shapes and other backends read
// the symbols (DESIGN.md, "Symbolic shapes").
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_SYMEXTENT_H
#define FUSEC_PROGRAM_SYMEXTENT_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fusec::program {

class SymExtent {
 public:
  /// The static extent \p value (>= 0).
  static SymExtent constant(int64_t value);
  /// The symbol \p name (coefficient 1).
  static SymExtent symbol(const std::string &name);

  SymExtent() = default;
  bool isConstant() const { return symbols_.empty(); }
  int64_t coeff() const { return coeff_; }
  /// A small constant added to the product (index bounds such as
  /// batch*seq - 1); 0 for the extents of loops and buffers.
  int64_t offset() const { return offset_; }
  /// This form plus \p d (a constant stays a constant).
  SymExtent plus(int64_t d) const;
  /// Symbols, sorted, repeated for powers (seq*seq).
  const std::vector<std::string> &symbols() const { return symbols_; }

  /// The product (symbol lists merge, coefficients multiply). Both must
  /// have offset 0 (a product with an offset is not of this form).
  SymExtent operator*(const SymExtent &other) const;
  bool operator==(const SymExtent &other) const {
    return coeff_ == other.coeff_ && symbols_ == other.symbols_ && offset_ == other.offset_;
  }
  bool operator!=(const SymExtent &other) const { return !(*this == other); }

  /// The integer value with \p bindings (symbol -> extent); nullopt if a
  /// symbol is unbound.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t> &bindings) const;

  /// Text form: "48", "seq", "4*batch*seq", "batch*seq-1" (coefficient
  /// first, omitted when 1; the offset last).
  std::string str() const;

 private:
  int64_t coeff_ = 1;
  std::vector<std::string> symbols_;
  int64_t offset_ = 0;
};

/// The product of \p dims[b, e) (1 for an empty range).
SymExtent product(const std::vector<SymExtent> &dims, size_t b = 0, size_t e = SIZE_MAX);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_SYMEXTENT_H
