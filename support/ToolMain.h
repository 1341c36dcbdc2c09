//===- ToolMain.h - The tools' main: large stack, no escaping exceptions -*- C++ -*-===//
//
// runToolMain() runs a tool's main (fusec, fusec-opt, fusec-run) on a thread
// with a large stack (runWithLargeStack, support/Stack.h) and turns an
// exception that escapes it into an error line and exit status 1 instead of
// std::terminate's abort: std::bad_alloc (a model, its external data or test
// data larger than the memory the process may use) and any other
// std::exception (a library's stream or parse error). The compiler reports
// errors as absl::Status; this is the backstop for what still throws.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_TOOLMAIN_H
#define FUSEC_SUPPORT_TOOLMAIN_H

#include <cstdio>
#include <exception>
#include <functional>
#include <new>

#include "support/Escape.h"
#include "support/Stack.h"

namespace fusec::support {

/// Runs \p fn as the main of the tool \p tool; \returns its exit status, or
/// 1 after printing "TOOL: error: ..." to stderr when it throws.
inline int runToolMain(const char *tool, const std::function<int()> &fn) {
  return runWithLargeStack([&]() -> int {
    try {
      return fn();
    } catch (const std::bad_alloc &) {
      std::fprintf(stderr,
                   "%s: error: out of memory: the model, its external data or the test data needs more memory "
                   "than this process may use\n",
                   tool);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "%s: error: %s\n", tool, printable(e.what()).c_str());
    } catch (...) {
      std::fprintf(stderr, "%s: error: unexpected exception\n", tool);
    }
    std::fflush(stdout);
    return 1;
  });
}

}  // namespace fusec::support

#endif  // FUSEC_SUPPORT_TOOLMAIN_H
