//===- ManifestBuilder.h - Manifest pieces for hand-written test artifacts -*- C++ -*-===//
//
// JSON builders for the runtime tests' artifacts (buffers, tensors, the
// manifest skeleton) and f32 weight bytes. No CUDA: the cpu executor's tests
// use them too. Test code only.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_RUNTIME_MANIFESTBUILDER_H
#define FUSEC_TEST_UNIT_RUNTIME_MANIFESTBUILDER_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "runtime/ArtifactFormat.h"
#include "runtime/internal/Checksum.h"
#include "runtime/internal/ManifestDigest.h"

namespace fusert_test {

using Json = nlohmann::json;

/// Copies the test kernel library \p from to \p to with the digest of
/// \p manifest where it holds the placeholder, as the artifact writer does
/// (runtime/ArtifactFormat.h kManifestDigestSymbol). \returns the number of
/// places substituted (1 for the test libraries).
inline int installLibrary(const std::string &from, const std::string &to, const Json &manifest) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string placeholder = fusec::artifact_format::kManifestDigestPlaceholder;
  const std::string digest = fusec::artifact_checksum::manifestDigest(manifest);
  int found = 0;
  for (size_t at = bytes.find(placeholder); at != std::string::npos;
       at = bytes.find(placeholder, at + placeholder.size())) {
    bytes.replace(at, placeholder.size(), digest);
    ++found;
  }
  std::ofstream(to, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return found;
}

/// Writes \p manifest to \p dir/manifest.json with "checksums" of the
/// library and the weights file it names, computed from the files already in
/// \p dir, as the artifact writer records them (the loader requires both).
/// A manifest that already has "checksums" is written as it is, and a named
/// file that does not exist gets no entry (the loader reports it missing).
inline void writeManifestWithChecksums(const std::string &dir, Json manifest) {
  if (!manifest.contains("checksums")) {
    Json sums = Json::object();
    for (const char *key : {"library", "weights"}) {
      const Json *name = nullptr;
      if (key == std::string("library") && manifest.contains("library") && manifest["library"].is_string())
        name = &manifest["library"];
      if (key == std::string("weights") && manifest.contains("weights") && manifest["weights"].is_object() &&
          manifest["weights"].contains("file") && manifest["weights"]["file"].is_string())
        name = &manifest["weights"]["file"];
      if (!name) continue;
      std::string sum;
      const std::string file = name->get<std::string>();
      if (!file.empty() && fusec::artifact_checksum::fileChecksum(dir + "/" + file, sum))
        sums[file] = sum;
    }
    manifest["checksums"] = sums;
  }
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << manifest.dump(2);
}

/// Bytes of \p values as little-endian f32.
inline std::vector<char> bytesOf(const std::vector<float> &values) {
  const char *p = reinterpret_cast<const char *>(values.data());
  return std::vector<char>(p, p + values.size() * sizeof(float));
}

/// Writes \p bytes into \p weights at \p offset, growing it as needed.
inline void put(std::vector<char> &weights, size_t offset,
         const std::vector<float> &values) {
  std::vector<char> b = bytesOf(values);
  if (weights.size() < offset + b.size())
    weights.resize(offset + b.size(), 0);
  std::copy(b.begin(), b.end(), weights.begin() + offset);
}

inline Json buffer(int id, const std::string &name, std::vector<int64_t> shape,
            const std::string &storage, int64_t indexOrOffset, int of = -1) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  Json b = {{"id", id},       {"name", name},       {"dtype", "f32"},
            {"shape", shape}, {"bytes", n * 4},     {"storage", storage}};
  if (storage == "input" || storage == "output")
    b["index"] = indexOrOffset;
  else
    b["offset"] = indexOrOffset;
  if (of >= 0)
    b["of"] = of;
  return b;
}

inline Json tensor(const std::string &name, std::vector<int64_t> shape, int id) {
  return {{"name", name}, {"dtype", "f32"}, {"shape", shape}, {"buffer", id}};
}

inline Json skeleton(uint64_t weightBytes, uint64_t arenaBytes) {
  return {{"format", "fusec-artifact"},
          {"version", 1},
          {"model", "test"},
          {"target", "cuda"},
          {"arch", "sm_90"},
          {"library", "libmodel.so"},
          {"weights", {{"file", "weights.bin"}, {"bytes", weightBytes}}},
          {"arena_bytes", arenaBytes},
          {"buffers", Json::array()},
          {"inputs", Json::array()},
          {"outputs", Json::array()},
          {"steps", Json::array()}};
}

inline std::vector<float> iota(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>(i % 17) - 8) + shift;
  return v;
}

}  // namespace fusert_test

#endif  // FUSEC_TEST_UNIT_RUNTIME_MANIFESTBUILDER_H
