//===- Stack.h - Stack depth checks and a large-stack runner ----*- C++ -*-===//
//
// The compiler's walks over the graph and over a kernel's expressions are
// iterative where a long model makes them deep (program/lowering's
// lowerOperandsFirst, the NKI printer's operand order, the kernel order). The
// recursion that remains (layout and reduction ops nested inside one kernel,
// a few graph walks whose depth is a chain of views) is bounded by two
// backstops, as clang does with its own deep recursion:
//
//  - stackNearlyExhausted(): true when the calling thread has less than
//    kStackReserve bytes of stack left. A recursive lowering checks it and
//    returns a clear error naming the node instead of overflowing.
//  - runWithLargeStack(): the tools (fusec, fusec-opt, fusec-run) run their
//    whole main on a thread with kToolStackBytes of stack (address space,
//    only touched pages cost memory), so a valid model deep enough to need
//    more than the default 8 MiB still compiles. FUSEC_STACK_MB=N in the
//    environment gives that thread N MiB instead (the long-model test runs
//    with 8, proving the iterative walks need no more than a default stack).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_STACK_H
#define FUSEC_SUPPORT_STACK_H

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>

namespace fusec::support {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr size_t kStackReserve = size_t{4} << 20;  // ASan frames are several times larger
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr size_t kStackReserve = size_t{4} << 20;
#else
inline constexpr size_t kStackReserve = size_t{512} << 10;
#endif
#else
inline constexpr size_t kStackReserve = size_t{512} << 10;
#endif

/// Stack of the threads runWithLargeStack() starts.
inline constexpr size_t kToolStackBytes = size_t{1} << 30;

/// Bytes of stack left below the caller's frame; SIZE_MAX when the thread's
/// stack bounds are unknown.
inline size_t stackLeft() {
  thread_local uintptr_t lowest = 0;
  thread_local bool known = false;
  if (!known) {
    known = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void *addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) lowest = reinterpret_cast<uintptr_t>(addr);
      pthread_attr_destroy(&attr);
    }
  }
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (lowest == 0 || here < lowest) return SIZE_MAX;
  return here - lowest;
}

/// True when a recursive walk should stop with an error rather than recurse.
inline bool stackNearlyExhausted() { return stackLeft() < kStackReserve; }

/// Runs \p fn on a thread with \p bytes of stack and returns its result;
/// runs it on the calling thread if no such thread can be started.
inline int runWithLargeStack(const std::function<int()> &fn, size_t bytes = kToolStackBytes) {
  if (const char *mb = std::getenv("FUSEC_STACK_MB"); mb && std::atoi(mb) > 0)
    bytes = static_cast<size_t>(std::atoi(mb)) << 20;
  struct Call {
    const std::function<int()> *fn;
    int result;
  } call{&fn, 0};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = false;
  if (pthread_attr_init(&attr) == 0) {
    started = pthread_attr_setstacksize(&attr, bytes) == 0 &&
              pthread_create(&thread, &attr, [](void *p) -> void * {
                Call *c = static_cast<Call *>(p);
                c->result = (*c->fn)();
                return nullptr;
              }, &call) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) return fn();
  pthread_join(thread, nullptr);
  return call.result;
}

}  // namespace fusec::support

#endif  // FUSEC_SUPPORT_STACK_H
