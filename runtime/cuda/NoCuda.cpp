//===- NoCuda.cpp - The "cuda" target in a libfusert built without CUDA -===//
//
// Linked instead of CudaExecutor.cpp when CMake found no CUDA toolkit: a
// cuda artifact is then a clear load error, and cpu artifacts still run.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/Model.h"

namespace fusec::rt {

Status makeCudaExecutor(std::unique_ptr<Executor> &out) {
  out.reset();
  return invalidArgument("this is a cuda artifact, and this libfusert was built without the "
                         "CUDA toolkit: it runs only cpu artifacts (fusec --target cpu)");
}

} // namespace fusec::rt
