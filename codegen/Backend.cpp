//===- Backend.cpp - Finding a backend by its --target name -------------===//
#include "codegen/Backend.h"

#include "absl/strings/str_cat.h"

namespace fusec::codegen {

const Backend &nkiBackend();  // codegen/nki/NkiBackend.cpp

absl::StatusOr<const Backend *> backendFor(const std::string &target) {
  if (target == "cuda") return &cudaBackend();
  if (target == "nki") return &nkiBackend();
#if FUSEC_HAVE_CPU_BACKEND
  if (target == "cpu") return &cpuBackend();
#else
  if (target == "cpu")
    return absl::UnimplementedError(
        "this fusec was built without the cpu backend (-DFUSEC_CPU_BACKEND=OFF); "
        "rebuild with it ON (needs llvm-14-dev and liblld-14-dev) to use --target cpu");
#endif
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", target, "' (expected: cuda, nki, cpu)"));
}

}  // namespace fusec::codegen
