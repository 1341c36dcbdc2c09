//===- Compare.h - Compare tensors with per-dtype tolerances ----*- C++ -*-===//
//
// One place that decides whether a computed tensor matches an expected one.
// An element passes when |a - e| <= atol + rtol * |e| (numpy.isclose form);
// NaN matches NaN, +-inf must match exactly. Integer and bool tensors must be
// equal.
//
// Default tolerances per dtype, chosen so that a correct implementation that
// differs from the producer of the expected data only in summation order and
// transcendental-function rounding passes, while one wrong term fails:
//   f64   atol 1e-7  rtol 1e-6
//   f32   atol 1e-4  rtol 1e-3   (models run ~1e3 accumulations in fp32:
//                                 a few ulp of 1.2e-7 each, with headroom)
//   f16   atol 1e-2  rtol 1e-2   (10-bit mantissa, eps 9.8e-4)
//   bf16  atol 5e-2  rtol 5e-2   (7-bit mantissa, eps 7.8e-3)
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_INTERP_COMPARE_H
#define FUSEC_INTERP_COMPARE_H

#include <string>

#include "ir/Tensor.h"

namespace fusec::interp {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// The default tolerance for comparing results of dtype \p t (see above).
Tolerance defaultTolerance(ir::DType t);

struct CompareResult {
  bool pass = false;
  double maxAbsError = 0;  ///< max |a - e| over finite elements
  double maxRelError = 0;  ///< max |a - e| / |e| over elements with e != 0
  int64_t mismatches = 0;  ///< elements outside tolerance
  std::string message;     ///< why it failed (shape, dtype, first mismatch)
};

/// Compares \p actual against \p expected. Dtypes must be equal and shapes
/// equal. Uses defaultTolerance(expected.dtype()) unless \p tol is given.
CompareResult compareTensors(const ir::Tensor &actual, const ir::Tensor &expected,
                             const Tolerance *tol = nullptr);

}  // namespace fusec::interp

#endif  // FUSEC_INTERP_COMPARE_H
