//===- Backend.cpp - Finding a backend by its --target name -------------===//
#include "codegen/Backend.h"

#include "absl/strings/str_cat.h"

namespace fusec::codegen {

const Backend &nkiBackend();  // codegen/nki/NkiBackend.cpp

absl::StatusOr<const Backend *> backendFor(const std::string &target) {
  if (target == "cuda") return &cudaBackend();
  if (target == "nki") return &nkiBackend();
  if (target == "cpu") return &cpuBackend();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", target, "' (expected: cuda, nki, cpu)"));
}

}  // namespace fusec::codegen
