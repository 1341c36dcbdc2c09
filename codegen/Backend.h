//===- Backend.h - The interface every code generation target implements -*- C++ -*-===//
//
// A backend turns the target-neutral program (program/) into the target's
// module (DESIGN.md, "Layers below the passes"). Each backend states:
//   - its name (the --target spelling) and its pass pipeline;
//   - its fusion legality: whether a group of nodes can be lowered as one
//     kernel for a device (canLowerGroup; the fusion pass asks it through
//     PassContext::legality = legalityFor(backend, device), so that fusion
//     never forms or keeps a group lowering refuses);
//   - its mapping of library calls (e.g. CUDA: cuBLASLt epilogues) and its
//     emission: the files of the artifact (ARTIFACT.md) that hold the module,
//     and how the module's library is built from them.
// The artifact writer (codegen/artifact) is target-neutral: it plans
// memory, writes the manifest, weights and the backend's files, and asks
// the backend to build.
//
// Nothing outside codegen/<backend>/ includes a backend's own headers;
// backends are found by name through backendFor().
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_BACKEND_H
#define FUSEC_CODEGEN_BACKEND_H

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "passes/cost/TargetSpec.h"
#include "program/Legality.h"
#include "program/Lowering.h"
#include "program/Symbolic.h"

namespace fusec::codegen {

/// What emission needs besides the graph.
struct BackendOptions {
  std::string arch;          ///< resolved by Backend::resolveArch()
  /// The resolved device: its limits shape the kernels (NKI: partitions,
  /// SBUF/PSUM per partition, matmul tile sizes; TargetSpec::partitioned).
  passes::TargetSpec device;
  bool allowTf32 = false;    ///< f32 GEMMs may use TF32 tensor cores
  std::string modelName;     ///< for headers / comments
  bool buildLibrary = true;  ///< build the module's library (e.g. nvcc) when the tool is found
  std::string toolPath;      ///< the build tool to run (e.g. nvcc); empty = search
  /// Also write the module's intermediate form for reading (cpu: the
  /// optimised LLVM IR as model.ll).
  bool emitIr = false;
  /// Dynamic shapes: the compiled probes (program/Symbolic.h); null for
  /// static shapes. A backend without dynamic shapes refuses a non-null one.
  const program::ShapeProbes *probes = nullptr;
  /// Only check that the model lowers (every refusal emit() would give);
  /// the module may be left incomplete (cpu: no object code is generated).
  bool checkOnly = false;
};

/// The backend's module of one model.
struct BackendModule {
  std::vector<program::Step> steps;      ///< in execution order, symbols filled
  std::vector<std::string> kernelNames;  ///< plan kernel names in step order (unique)
  int numKernels = 0;                    ///< unique generated kernels
  /// Files written into the artifact folder (name relative to it, contents).
  std::vector<std::pair<std::string, std::string>> files;
  std::string library;  ///< file the build produces (manifest "library")
  /// The library also runs the gemm and conv steps (NKI: kernels.py holds
  /// their TensorE kernels), not only the kernel steps (CUDA: cuBLASLt and
  /// cuDNN run them); then a model of library calls only still needs it.
  bool libraryRunsLibraryCalls = false;
  /// The library defines the manifest digest symbol with its placeholder
  /// (runtime/ArtifactFormat.h) in `files` or `buildInput`, for the writer to
  /// fill in; libfusert refuses a library that does not (cuda, cpu).
  bool recordsManifestDigest = false;
  /// The backend will not build the library (building disabled, or its
  /// tool not found): the user builds it from the files with buildCommand,
  /// so the writer records "library_build": "by hand" instead of a checksum.
  bool libraryBuiltByHand = false;
  /// The build command, rendered for messages ("" when the backend has none).
  std::string buildCommand;
  /// What build() consumes besides `files`, kept in memory and never
  /// written into the artifact (cpu: the ELF object that lld links).
  std::string buildInput;
  /// Top-level manifest fields of this backend, in order: key and value as
  /// JSON text (cpu: cpu_abi, cpu_features, workspace_bytes_per_thread,
  /// docs/ARTIFACT.md). The writer adds them after the common fields; a key
  /// the writer owns is an error.
  std::vector<std::pair<std::string, std::string>> manifestFields;
};

/// What Backend::build() did.
struct BuildOutcome {
  bool built = false;
  std::vector<std::string> warnings;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// The --target spelling: "cuda", "nki", "cpu".
  virtual const char *name() const = 0;
  /// The default pass pipeline (pass names in --passes syntax).
  virtual std::vector<std::string> passPipeline() const = 0;
  /// The architecture to compile for: \p requested when given, else from
  /// \p target. Errors: InvalidArgument for an architecture the backend
  /// cannot name.
  virtual absl::StatusOr<std::string> resolveArch(const std::string &requested,
                                                  const passes::TargetSpec &target) const = 0;
  /// The one legality rule (program/Legality.h): OK when \p members (nodes
  /// of \p graph, one fused group, any order) can be lowered as one kernel
  /// for \p device by this backend's emit(); otherwise its refusal
  /// (Unimplemented) naming the node and why. emit() with
  /// BackendOptions::device = \p device refuses nothing this accepts.
  absl::Status canLowerGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                             const passes::TargetSpec &device) const {
    return checkGroup(graph, members, program::GraphIndex(graph), device);
  }
  /// canLowerGroup() with the graph's index built by the caller (the fusion
  /// pass builds it once per graph; program/Legality.h).
  virtual absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                  const program::GraphIndex &index,
                                  const passes::TargetSpec &device) const = 0;
  /// GroupLegality::describeGroup() of this backend for \p device: what its
  /// lowering of an accepted group does beyond the group's ops ("" = none).
  virtual program::GroupNote describeGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                           const program::GraphIndex &index,
                                           const passes::TargetSpec &device) const {
    return {};
  }
  /// Lowers the fused \p graph (nodes carry fusec.kernel; \p kernelNames are
  /// the plan's kernel names) and prints the module. Errors: Unimplemented
  /// for what cannot be lowered; InvalidArgument for non-static shapes.
  virtual absl::StatusOr<BackendModule> emit(const ir::Graph &graph,
                                             const std::vector<std::string> &kernelNames,
                                             const BackendOptions &opts) const = 0;
  /// Builds BackendModule::library in \p workDir, where emit()'s files have
  /// been written; \p finalDir is where the artifact will live (for the
  /// "build it with" hints). A missing or disabled tool is a warning, a
  /// failing build an error (Internal; NotFound when BackendOptions::toolPath
  /// cannot be run).
  virtual absl::Status build(const BackendModule &module, const std::string &workDir,
                             const std::string &finalDir, const BackendOptions &opts,
                             BuildOutcome *outcome) const = 0;
};

/// The backend for --target \p target: cuda, nki or cpu. Errors:
/// InvalidArgument for unknown names.
absl::StatusOr<const Backend *> backendFor(const std::string &target);

/// A backend's legality bound to one device (what legalityFor() returns).
class DeviceLegality final : public program::GroupLegality {
 public:
  DeviceLegality(const Backend &backend, passes::TargetSpec device)
      : backend_(backend), device_(std::move(device)) {}
  absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                          const program::GraphIndex &index) const override {
    return backend_.checkGroup(graph, members, index, device_);
  }
  program::GroupNote describeGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                   const program::GraphIndex &index) const override {
    return backend_.describeGroup(graph, members, index, device_);
  }

 private:
  const Backend &backend_;
  passes::TargetSpec device_;
};

/// The legality the fusion pass asks (passes::PassContext::legality):
/// \p backend's canLowerGroup() for \p device.
inline std::shared_ptr<const program::GroupLegality> legalityFor(const Backend &backend,
                                                                 passes::TargetSpec device) {
  return std::make_shared<DeviceLegality>(backend, std::move(device));
}

/// The CUDA backend (defined in codegen/cuda; reached through backendFor()).
const Backend &cudaBackend();
/// The host CPU backend through LLVM (codegen/cpu, docs/CPU_BACKEND.md).
const Backend &cpuBackend();

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_BACKEND_H
