//===- ManifestFuzzer.cpp - libFuzzer harness: the runtime's manifest loader -===//
//
// manifest.json text -> fusec::rt::parseManifest -> checkManifest. This is
// the runtime's only parser of artifact metadata and runs before any CUDA
// call; a manifest it accepts must be safe to load (every id, offset and size
// in range), so it must return a Status for anything else, never crash.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/internal/Manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::rt::Manifest m;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (fusec::rt::parseManifest(text, m).ok()) (void)fusec::rt::checkManifest(m);
  return 0;
}
