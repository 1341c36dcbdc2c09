//===- Status.h - Status macros and error helpers ---------------*- C++ -*-===//
//
// fusec reports errors as absl::Status / absl::StatusOr<T>. The Abseil we
// build against (20220623) has no status macros, so we define our own.
//
// Status codes used across the project:
//   InvalidArgument  bad models, bad flags, bad runtime inputs
//   Unimplemented    unsupported ONNX ops or opsets (message names op, opset)
//   NotFound         missing files
//   Internal         broken compiler invariants (FUSEC_RET_CHECK)
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_STATUS_H
#define FUSEC_SUPPORT_STATUS_H

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace fusec {

/// Returns \p status with \p prefix prepended to its message ("prefix: msg").
/// An OK status is returned unchanged.
inline absl::Status withContext(const absl::Status &status,
                                absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, ": ", status.message()));
}

namespace internal {
inline absl::Status asStatus(const absl::Status &s) { return s; }
template <typename T>
absl::Status asStatus(const absl::StatusOr<T> &s) { return s.status(); }
}  // namespace internal

}  // namespace fusec

#define FUSEC_CONCAT_IMPL(a, b) a##b
#define FUSEC_CONCAT(a, b) FUSEC_CONCAT_IMPL(a, b)

/// Returns from the enclosing function if \p expr (a Status or StatusOr)
/// is not OK.
#define FUSEC_RETURN_IF_ERROR(expr)                                         \
  do {                                                                      \
    absl::Status fusec_status_ = ::fusec::internal::asStatus(expr);         \
    if (!fusec_status_.ok()) return fusec_status_;                          \
  } while (0)

/// As FUSEC_RETURN_IF_ERROR, and prefixes the message with the StrCat of the
/// remaining arguments: FUSEC_RETURN_IF_ERROR_CTX(s, "importing node '", n, "'").
#define FUSEC_RETURN_IF_ERROR_CTX(expr, ...)                                \
  do {                                                                      \
    absl::Status fusec_status_ = ::fusec::internal::asStatus(expr);         \
    if (!fusec_status_.ok())                                                \
      return ::fusec::withContext(fusec_status_, absl::StrCat(__VA_ARGS__)); \
  } while (0)

#define FUSEC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                         \
  auto tmp = (expr);                                                        \
  if (!tmp.ok()) return tmp.status();                                       \
  lhs = std::move(tmp).value()

/// Evaluates \p expr (a StatusOr), returns its status on error, otherwise
/// assigns the value to \p lhs (which may be a declaration: `auto x`).
#define FUSEC_ASSIGN_OR_RETURN(lhs, expr) \
  FUSEC_ASSIGN_OR_RETURN_IMPL(FUSEC_CONCAT(fusec_so_, __LINE__), lhs, expr)

/// Returns an Internal error naming file and line if \p cond is false; the
/// remaining arguments are StrCat'ed into the message.
#define FUSEC_RET_CHECK(cond, ...)                                          \
  do {                                                                      \
    if (!(cond))                                                            \
      return absl::InternalError(absl::StrCat(__FILE__, ":", __LINE__,      \
                                              ": check failed: " #cond " ", \
                                              ##__VA_ARGS__));              \
  } while (0)

#endif  // FUSEC_SUPPORT_STATUS_H
