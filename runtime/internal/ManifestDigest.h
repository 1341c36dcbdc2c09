//===- ManifestDigest.h - The digest a library records of its manifest -*- C++ -*-===//
//
// The artifact writer and the runtime's loader compute the same digest of a
// manifest: 64-bit FNV-1a (Checksum.h) of its compact, key-sorted JSON text
// (nlohmann::json::dump()) without the two fields the writer adds after the
// library is built ("checksums", "files"). The writer embeds it in the
// library (ArtifactFormat.h kManifestDigestSymbol); the loader recomputes it
// from the manifest it parsed and refuses a library that records another.
// Not a cryptographic check: it binds a manifest to its library against
// accidents and hand edits, as the file checksums do (docs/RUNTIME.md).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_MANIFESTDIGEST_H
#define FUSEC_RUNTIME_INTERNAL_MANIFESTDIGEST_H

#include <nlohmann/json.hpp>

#include <string>

#include "runtime/internal/Checksum.h"

namespace fusec::artifact_checksum {

/// "fnv1a64:<16 hex>" of \p manifest (a JSON object) as described above.
inline std::string manifestDigest(nlohmann::json manifest) {
  if (manifest.is_object()) {
    manifest.erase("checksums");
    manifest.erase("files");
  }
  const std::string text = manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Fnv1a64 h;
  h.update(text.data(), text.size());
  return checksumText(h.digest());
}

}  // namespace fusec::artifact_checksum

#endif  // FUSEC_RUNTIME_INTERNAL_MANIFESTDIGEST_H
