//===- Status.h - Minimal status type for libfusert internals -===//
//
// libfusert does not link Abseil, so its internals return this small
// code + message pair; the C API turns it into a fusert_status and the
// thread-local last-error message.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_STATUS_H
#define FUSEC_RUNTIME_INTERNAL_STATUS_H

#include <sstream>
#include <string>
#include <utility>

#include "fusert/fusert.h"

namespace fusec::rt {

/// A status code with a message; default-constructed means success.
class Status {
public:
  Status() = default;
  Status(fusert_status code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == FUSERT_OK; }
  fusert_status code() const { return code_; }
  const std::string &message() const { return message_; }

  /// \returns a copy whose message is "\p prefix: <message>".
  Status withContext(const std::string &prefix) const {
    return ok() ? *this : Status(code_, prefix + ": " + message_);
  }

private:
  fusert_status code_ = FUSERT_OK;
  std::string message_;
};

/// Builds a message from streamable parts.
template <typename... Args> std::string strCat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args> Status invalidArgument(const Args &...args) {
  return Status(FUSERT_INVALID_ARGUMENT, strCat(args...));
}
template <typename... Args> Status notFound(const Args &...args) {
  return Status(FUSERT_NOT_FOUND, strCat(args...));
}
template <typename... Args> Status internalError(const Args &...args) {
  return Status(FUSERT_INTERNAL, strCat(args...));
}

} // namespace fusec::rt

#define FUSERT_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::fusec::rt::Status fusertStatus_ = (expr);                                \
    if (!fusertStatus_.ok())                                                   \
      return fusertStatus_;                                                    \
  } while (0)

#endif // FUSEC_RUNTIME_INTERNAL_STATUS_H
