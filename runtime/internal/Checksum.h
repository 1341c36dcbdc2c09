//===- Checksum.h - Integrity checksums of artifact files -------*- C++ -*-===//
//
// The artifact writer records a checksum of weights.bin and of the backend's
// library in manifest.json ("checksums": {"<file>": "fnv1a64:<16 hex>"}); the
// runtime's loader recomputes them before it dlopens or uploads anything, so
// a truncated, bit-flipped or swapped file is an error at load time, not
// wrong numbers or a crash later. Shared by the writer (compiler) and the
// runtime: header-only, standard library only.
//
// The hash is 64-bit FNV-1a (Fowler, Noll, Vo; offset basis 0xcbf29ce484222325,
// prime 0x100000001b3). It detects accidental corruption and mix-ups; it is
// not a cryptographic signature and does not authenticate an artifact.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_CHECKSUM_H
#define FUSEC_RUNTIME_INTERNAL_CHECKSUM_H

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace fusec::artifact_checksum {

/// Incremental 64-bit FNV-1a.
class Fnv1a64 {
 public:
  void update(const void *data, size_t size) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
  }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

/// The manifest text of a digest: "fnv1a64:" and 16 lower-case hex digits.
inline std::string checksumText(uint64_t digest) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fnv1a64:%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

/// checksumText() of the \p size bytes at \p data (null when size is 0).
inline std::string bytesChecksum(const void *data, size_t size) {
  Fnv1a64 h;
  if (size > 0) h.update(data, size);
  return checksumText(h.digest());
}

/// True if \p text has the form checksumText() writes.
inline bool isChecksumText(const std::string &text) {
  if (text.size() != 24 || text.compare(0, 8, "fnv1a64:") != 0) return false;
  for (size_t i = 8; i < text.size(); ++i) {
    char c = text[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// Checksum of the whole file at \p path, read in 1 MiB chunks.
/// \returns false if the file cannot be opened or read.
inline bool fileChecksum(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  Fnv1a64 h;
  std::vector<char> buf(1u << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n > 0) h.update(buf.data(), static_cast<size_t>(n));
  }
  if (in.bad()) return false;
  text = checksumText(h.digest());
  return true;
}

}  // namespace fusec::artifact_checksum

#endif  // FUSEC_RUNTIME_INTERNAL_CHECKSUM_H
