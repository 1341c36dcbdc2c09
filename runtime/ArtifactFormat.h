/*===- ArtifactFormat.h - Names of the artifact format (ARTIFACT.md) -----===*
 *
 * The spellings the compiler's artifact writer writes and the runtime's
 * manifest loader reads, in one place: the format tag and version, the
 * fixed file names, the storage classes and the step kinds. Header-only,
 * no dependencies (the runtime includes nothing of the compiler; the
 * compiler may include this).
 *
 *===---------------------------------------------------------------------===*/
#ifndef FUSEC_RUNTIME_ARTIFACTFORMAT_H
#define FUSEC_RUNTIME_ARTIFACTFORMAT_H

namespace fusec::artifact_format {

/// manifest.json "format" and "version".
inline constexpr const char *kFormat = "fusec-artifact";
inline constexpr int kVersion = 1;

/// Files of the artifact folder.
inline constexpr const char *kManifestFile = "manifest.json";
inline constexpr const char *kWeightsFile = "weights.bin";
inline constexpr const char *kFusionFile = "fusion.json";

/// Buffer "storage" classes.
inline constexpr const char *kStorageInput = "input";
inline constexpr const char *kStorageOutput = "output";
inline constexpr const char *kStorageWeight = "weight";
inline constexpr const char *kStorageArena = "arena";
inline constexpr const char *kStorageAlias = "alias";

/// Step "kind"s.
inline constexpr const char *kStepKernel = "kernel";
inline constexpr const char *kStepGemm = "gemm";
inline constexpr const char *kStepConv = "conv";
inline constexpr const char *kStepCopy = "copy";

/// A step's optional "guard": an array of {"buffer": id, "when": bool}; the
/// step runs only when every term's buffer (a bool of one element) holds
/// `when`, the terms read in order (ARTIFACT.md "guard").
inline constexpr const char *kStepGuard = "guard";
inline constexpr const char *kGuardBuffer = "buffer";
inline constexpr const char *kGuardWhen = "when";

/// The library's record of the manifest it was built for: a NUL-terminated
/// string "fnv1a64:<16 hex>" (runtime/internal/ManifestDigest.h) defined by
/// the library under this C symbol. A backend that builds a library defines
/// it with the value kManifestDigestPlaceholder (the same length); the
/// artifact writer substitutes the manifest's digest into the library's
/// sources or object before building, and the loader compares it with the
/// manifest it reads. So a manifest edited consistently (its checksums
/// recomputed) no longer matches the compiled code that trusts it.
inline constexpr const char *kManifestDigestSymbol = "fusec_manifest_digest";
inline constexpr const char *kManifestDigestPlaceholder = "fnv1a64:@@manifest@@@@@@";

}  // namespace fusec::artifact_format

#endif  // FUSEC_RUNTIME_ARTIFACTFORMAT_H
