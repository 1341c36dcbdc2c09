//===- ArtifactWriter.h - Writes the fusec artifact folder ------*- C++ -*-===//
//
// writeArtifact() turns a fused graph into the folder of docs/ARTIFACT.md:
//
//   manifest.json  buffers (MemoryPlan.h), inputs, outputs, steps, kernels
//   the module     the backend's files (CUDA: model.cu, codegen/Backend.h)
//   weights.bin    every constant a step reads, 256-byte aligned, in its dtype
//   fusion.json    the --dump-fusion=json plan
//   libmodel.so    model.cu built by nvcc (Nvcc.h), unless disabled/absent
//
// Replacement is atomic: everything is written into a fresh sibling folder
// OUT.tmp-XXXXXX (same parent, so renames stay on one file system); only
// when it is complete is the old OUT renamed away, the new one renamed into
// place and the old one deleted. On any failure OUT is left as it was and
// the temporary folder is removed. OUT.tmp-XXXXXX holds kOwnerMarkerFile
// from its creation until just before it becomes OUT, and the old OUT gets
// one once moved aside to OUT.old-XXXXXX; a later run removes such a
// sibling only when it holds that marker and nothing but plain files (so a
// user's OUT.old-backup is kept).
//
// Which OUT folders may be replaced (checked before any work):
//   - a path that does not exist (missing parents are created);
//   - an empty directory;
//   - a directory holding a previous artifact (manifest.json whose "format"
//     is "fusec-artifact").
// Refused with InvalidArgument: an empty path; "/" or "."-like paths that
// resolve to the current directory or one of its parents; a path that is a
// file or a symlink; a non-empty directory that is not an artifact (e.g.
// the model's own folder); a folder containing ArtifactOptions::modelPath.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
#define FUSEC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "program/MemoryPlan.h"
#include "program/Symbolic.h"
#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "passes/fusion/FusionPlan.h"

namespace fusec::artifact {

using namespace ::fusec::program;

/// The marker of a temporary sibling folder that is fusec's own (see the
/// file comment), and its exact contents. Never part of an artifact.
inline constexpr const char *kOwnerMarkerFile = ".fusec-owned";
inline constexpr const char *kOwnerMarkerText =
    "fusec: a temporary artifact folder; a later fusec run removes it if it is left behind\n";

/// A graph input compiled as a constant (fusec --input-value): the manifest
/// lists it under "bound_inputs" so that a caller who still has the value
/// can check it is the one compiled in (fusec-run refuses data that
/// differs). docs/ARTIFACT.md.
struct BoundInput {
  std::string name;
  std::string dtype;           ///< ir::dtypeName ("i64")
  std::vector<int64_t> shape;
  std::string digest;          ///< "fnv1a64:<16 hex>" of the value's bytes (row-major, little-endian)
};

/// The digest BoundInput::digest records for \p t.
std::string boundValueDigest(const ir::Tensor &t);

struct ArtifactOptions {
  std::string target = "cuda";  ///< the backend (codegen::backendFor): only "cuda" today
  /// GPU architecture for nvcc -arch; empty = the TargetSpec's arch, else sm_90.
  std::string arch = "sm_90";
  std::string modelName;        ///< manifest "model"; empty = the graph's name
  /// fusion.json contents; empty = passes::fusionPlanToJson(plan, target).
  std::string fusionJson;
  bool runNvcc = true;          ///< build libmodel.so (when nvcc is found)
  /// nvcc to run; empty = findNvcc(""). A path given here must work: when it
  /// cannot be executed writeArtifact fails instead of warning.
  std::string nvccPath;
  /// "fp32" (or empty), "fp16" or "bf16": the precision the graph was
  /// lowered to by the lower-precision pass (the writer emits the graph's
  /// own dtypes; this only validates the flag). Other values: InvalidArgument.
  std::string precision = "fp32";
  bool allowTf32 = false;       ///< GEMMs may use TF32 tensor cores for f32
  /// The model file the graph came from, if any: OUT may not contain it.
  std::string modelPath;
  /// Also write the backend's intermediate form (cpu: model.ll, the
  /// optimised LLVM IR); codegen::BackendOptions::emitIr.
  bool emitIr = false;
  /// Graph inputs compiled as constants (fusec --input-value).
  std::vector<BoundInput> boundInputs;
  /// Dynamic shapes (program/Symbolic.h): the compiled probes, the first
  /// of which is the graph written; null for a static artifact. The
  /// manifest then lists "symbols", symbolic buffer shapes and sizes, and
  /// the arena buffers' live ranges (docs/ARTIFACT.md, "dynamic shapes").
  const program::ShapeProbes *probes = nullptr;
  /// Make every check writeArtifact makes (the backend's lowering and
  /// emission, the memory plan, the dynamic shapes) and write nothing: the
  /// output folder is ignored and no library is built. What --dump-fusion
  /// runs to say whether -o would refuse the plan.
  bool checkOnly = false;
};

/// What writeArtifact did, for the driver to print.
struct ArtifactSummary {
  std::vector<std::string> warnings;  ///< e.g. "nvcc not found: build with ..."
  std::string nvccCommand;            ///< the command line (run or to run), in OUT
  bool builtLibrary = false;          ///< libmodel.so was built
  int64_t arenaBytes = 0;
  int64_t arenaNaiveBytes = 0;
  int64_t weightsBytes = 0;
  int numSteps = 0;
  int numGuardedSteps = 0;             ///< steps with a guard (an If chosen at run time)
  /// One line per run of consecutive manifest steps with the same guard:
  /// "condition known at run time: steps 1..2 (k1_conv..k1_conv) run when 'c'".
  std::vector<std::string> guardedRanges;
  int numKernels = 0;                 ///< unique launcher symbols in model.cu
  std::string memorySummary;          ///< MemoryPlan::summary()
};

/// Writes the artifact of \p graph (fused: nodes carry fusec.kernel, see
/// \p plan) into \p outDir, replacing it atomically (see the file comment).
/// Errors: InvalidArgument for a refused \p outDir, symbolic or unknown dims
/// (the message lists each input and its dims to bind with --shape
/// NAME=AxB), or a graph that has no outputs; Unimplemented for a target
/// whose backend is not available yet (codegen::backendFor) and what codegen cannot
/// lower; NotFound when ArtifactOptions::nvccPath cannot be run; Internal
/// when nvcc fails (the message ends with nvcc's output verbatim) or a file
/// cannot be written.
absl::Status writeArtifact(const ir::Graph &graph, const passes::FusionPlan &plan,
                           const passes::TargetSpec &target, const ArtifactOptions &opts,
                           const std::string &outDir, ArtifactSummary *summary = nullptr);

/// The manifest.json text for a planned model (exposed for tests).
/// \p kernelNames are the plan kernel names in step order (unique);
/// \p library is the module's library file ("" = none needed).
/// \p backendFields: the backend's own top-level fields (key, JSON text;
/// codegen::BackendModule::manifestFields), written after "arch"; a value
/// that is not JSON is written as a string. Dynamic shapes: a gemm's
/// symbolic m, n, k, batch and strides and a conv's symbolic x_shape and
/// y_shape dims are written as products of symbols. Errors:
/// FailedPrecondition naming the step and field for any other symbolic conv
/// field and for a symbolic form that is not a product of symbols.
absl::StatusOr<std::string> manifestJson(const MemoryPlan &mem, const std::vector<std::string> &kernelNames,
                         const std::string &modelName, const std::string &target,
                         const std::string &arch, const std::string &library,
                         const std::vector<std::pair<std::string, std::string>> &backendFields = {});

/// Checks that no dim of a graph input or output is symbolic or unknown.
/// Errors: InvalidArgument listing every such input ("input 'ids' has
/// shape i64[batch,seq]") and a --shape example with the dims to bind.
absl::Status checkStaticShapes(const ir::Graph &graph);

}  // namespace fusec::artifact

#endif  // FUSEC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
