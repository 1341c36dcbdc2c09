//===- Compare.cpp - Compare tensors with per-dtype tolerances ------------===//
#include "interp/Compare.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fusec::interp {

Tolerance defaultTolerance(ir::DType t) {
  switch (t) {
    case ir::DType::kF64: return {1e-7, 1e-6};
    case ir::DType::kF32: return {1e-4, 1e-3};
    case ir::DType::kF16: return {1e-2, 1e-2};
    case ir::DType::kBF16: return {5e-2, 5e-2};
    default: return {0, 0};
  }
}

Tolerance loweredModelTolerance(ir::DType low) {
  switch (low) {
    case ir::DType::kBF16: return {0.05, 0.02};
    case ir::DType::kF16: return {0.01, 0.005};
    default: return defaultTolerance(ir::DType::kF32);
  }
}

CompareResult compareTensors(const ir::Tensor &actual, const ir::Tensor &expected,
                             const Tolerance *tol) {
  CompareResult r;
  // No element-wise error exists when dtype or shape differ: NaN, so that a
  // caller printing it does not show 0 (red team s28 L3).
  const double none = std::numeric_limits<double>::quiet_NaN();
  if (actual.dtype() != expected.dtype()) {
    r.maxAbsError = r.maxRelError = none;
    r.message = absl::StrCat("dtype ", ir::dtypeName(actual.dtype()), ", expected ",
                             ir::dtypeName(expected.dtype()));
    return r;
  }
  if (actual.shape() != expected.shape()) {
    r.maxAbsError = r.maxRelError = none;
    r.message = absl::StrCat("shape [", absl::StrJoin(actual.shape(), ","), "], expected [",
                             absl::StrJoin(expected.shape(), ","), "]");
    return r;
  }
  if (expected.dtype() == ir::DType::kString) {
    r.pass = actual.strings() == expected.strings();
    if (!r.pass) r.message = "string elements differ";
    return r;
  }
  Tolerance t = tol ? *tol : defaultTolerance(expected.dtype());
  // Integers and bool compare as integers; narrow floats (float8 / float4)
  // by value at tolerance 0 (their codes differ for -0 / 0 and NaN payloads).
  const bool exact = !ir::isFloat(expected.dtype()) && !ir::isNarrowFloat(expected.dtype());
  int64_t firstBad = -1;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    bool ok;
    if (exact) {
      int64_t a = actual.getInt(i), e = expected.getInt(i);
      ok = a == e;
      double d = std::fabs(static_cast<double>(a) - static_cast<double>(e));
      r.maxAbsError = std::max(r.maxAbsError, d);
      if (e != 0) r.maxRelError = std::max(r.maxRelError, d / std::fabs(static_cast<double>(e)));
    } else {
      double a = actual.getDouble(i), e = expected.getDouble(i);
      if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) {
        ok = (std::isnan(e) && std::isnan(a)) || a == e;
        // A NaN or an infinity where another value is expected: an
        // unbounded error, not one that leaves the maxima at 0.
        if (!ok) r.maxAbsError = r.maxRelError = std::numeric_limits<double>::infinity();
      } else {
        double d = std::fabs(a - e);
        ok = d <= t.atol + t.rtol * std::fabs(e);
        r.maxAbsError = std::max(r.maxAbsError, d);
        if (e != 0) r.maxRelError = std::max(r.maxRelError, d / std::fabs(e));
      }
    }
    if (!ok) {
      ++r.mismatches;
      if (firstBad < 0) firstBad = i;
    }
  }
  r.pass = r.mismatches == 0;
  if (!r.pass)
    r.message = absl::StrCat(r.mismatches, " of ", expected.numElements(),
                             " elements out of tolerance (atol ", t.atol, ", rtol ", t.rtol,
                             "); first at flat index ", firstBad, ": got ",
                             actual.getDouble(firstBad), ", expected ",
                             expected.getDouble(firstBad));
  return r;
}

}  // namespace fusec::interp
