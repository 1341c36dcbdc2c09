//===- Driver.h - compile(model, options): the one compile flow -*- C++ -*-===//
//
// The flow every user of the compiler goes through:
//
//   import (ONNX) -> target resolution (targets/Targets.def) -> passes (the
//   target's pipeline, shapes bound from CompileOptions::inputShapes) ->
//   lowering + backend emission + artifact (only with an output folder)
//
// fusec runs all of it; `fusec-run --reference --optimize` runs optimize()
// on a graph it imported and interprets the result; the tests use the same
// functions (test/unit/TestModels.h). The driver is the only code of the
// tools that calls into codegen (emitArtifact in Driver.cpp).
//
// Errors (absl::Status): InvalidArgument for bad options and models (unknown
// or mismatched --target/--arch/--device, --shape naming a non-input,
// unbound symbolic dims when writing an artifact, an unknown pass name);
// Unimplemented for ONNX ops fusec lacks and for a target whose backend this
// build left out ("this fusec was built without the cpu backend", returned before
// any file is written); NotFound for a missing model file; Internal for
// compiler bugs and a failing nvcc. Messages name what failed.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_DRIVER_DRIVER_H
#define FUSEC_DRIVER_DRIVER_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "driver/CommandLine.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"
#include "passes/Pass.h"
#include "passes/cost/TargetSpec.h"

namespace fusec::driver {

/// Where compile() stops.
enum class Stage {
  kImport,    ///< import only (fusec --emit=ir)
  kPasses,    ///< import and run the pipeline (--dump-fusion, --emit=optimized-ir)
  kArtifact,  ///< and write the artifact to CompileOptions::output
};

/// Everything that selects what compile() does. Defaults give fusec's
/// defaults: target cuda on the h200 roofline, fp32, the target's pipeline.
struct CompileOptions {
  /// --target: "cuda", "nki", "cpu"; empty = implied by device/arch, else
  /// the table's default (passes::resolveTarget).
  std::string target;
  /// --arch: the arch to generate code for ("sm_90"); empty = the device's.
  std::string arch;
  /// --device: the TargetSpec (roofline) the cost model and fusion decide
  /// with ("h200"); empty = the arch's or target's default device.
  std::string device;
  /// --shape: input name -> static dims (elements per dim), bound by
  /// shape-specialize before the other passes.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// --shape NAME=1..64x1..4096: inputs whose dims stay dynamic within a
  /// range (the static dims among them are bound). With an output folder,
  /// symbols that no --shape binds are dynamic: the artifact runs every
  /// binding in their ranges (program/Symbolic.h; --target cpu).
  RangeMap inputRanges;
  /// Values const-fold keeps (PassContext::noFold); set by the dynamic
  /// compile for the data it computes from the shapes.
  std::set<std::string> noFold;
  /// --input-value: input name -> the value it is compiled with (a constant;
  /// the artifact has no such input; the manifest lists it under
  /// "bound_inputs"). Bound while importing, like inputShapes
  /// (frontend::ImportOptions).
  std::map<std::string, ir::Tensor> inputValues;
  /// --precision: storage dtype of activations and weights, "fp32", "fp16"
  /// or "bf16" (the lower-precision pass; GEMMs accumulate in fp32).
  std::string precision = "fp32";
  /// --allow-tf32: f32 GEMMs may use TF32 tensor cores (cuda).
  bool allowTf32 = false;
  /// --passes: comma-separated pass names run instead of the target's
  /// default pipeline (passes::defaultPipeline); empty = the default.
  std::string passes;
  /// --debug-only: pass names whose debug output goes to stderr.
  std::vector<std::string> debugOnly;
  /// Run the IR verifier after every pass (--no-verify clears it).
  bool verifyEach = true;
  /// Stage::kArtifact: the artifact folder to write (replaced atomically).
  std::string output;
  /// Build the backend's library (cuda: nvcc -> libmodel.so); false = write
  /// the sources and the build command only (--no-nvcc).
  bool runNvcc = true;
  /// --emit-llvm: also write the backend's intermediate form (cpu: model.ll).
  bool emitIr = false;
  /// Manifest "model" name; empty = the name of the model file's folder.
  std::string modelName;
  /// Where to stop; compile() never goes past kPasses without `output`.
  Stage stopAfter = Stage::kArtifact;
  /// Called after import, before any pass (fusec --emit=ir prints here).
  std::function<void(const ir::Graph &)> onImported;
  /// Called after the passes, before the artifact is written (fusec prints
  /// --emit=optimized-ir and --dump-fusion here, so they appear even when
  /// writing the artifact fails).
  std::function<void(const ir::Graph &, const passes::PassContext &)> onOptimized;
};

/// What the artifact step did (counts; bytes are bytes).
struct ArtifactReport {
  std::vector<std::string> warnings;  ///< e.g. "nvcc not found: build with ..."
  bool builtLibrary = false;          ///< the backend's library was built
  int numSteps = 0;                   ///< steps in the manifest
  int numGuardedSteps = 0;            ///< of them, steps with a guard (ARTIFACT.md)
  std::vector<std::string> guardedRanges;  ///< ArtifactSummary::guardedRanges
  int numKernels = 0;                 ///< unique generated kernels
  int64_t weightsBytes = 0;           ///< size of weights.bin
  int64_t arenaBytes = 0;             ///< activation arena after the memory plan
};

/// The result of compile().
struct Compilation {
  std::unique_ptr<ir::Graph> graph;  ///< after the last stage run
  passes::ResolvedTarget target;     ///< target, arch and device used
  std::vector<std::string> pipeline; ///< the pass names run (empty at kImport)
  passes::PassContext context;       ///< fusion plan, statistics, bound symbols
  /// --input-value bindings as compiled (the input's dtype and shape).
  std::map<std::string, ir::Tensor> boundValues;
  bool wroteArtifact = false;
  ArtifactReport artifact;           ///< valid when wroteArtifact
  /// Dynamic shapes: the symbols left for run time ("batch 1..64"), empty
  /// for a static artifact; and the probe bindings compiled.
  std::vector<std::string> dynamicSymbols;
  int probes = 0;
  /// The values kept for run time although they fold at every probe
  /// (CompileOptions::noFold).
  std::vector<std::string> keptForRunTime;
  /// A plan-only compile (no -o) of a model with dynamic dims whose probing
  /// failed: why (the plan returned is then over the symbolic shapes).
  std::string dynamicPlanError;
  /// A plan-only compile of a model with dynamic dims whose probing worked,
  /// but whose artifact -o would refuse (the backend's own limits at run-time
  /// shapes, e.g. a convolution whose height is dynamic on cuda): why. The
  /// plan is checked as writeArtifact would (ArtifactOptions::checkOnly).
  std::string dynamicArtifactError;
};

/// Resolves options.target/arch/device (passes::resolveTarget) and checks
/// the precision. Errors: InvalidArgument.
absl::StatusOr<passes::ResolvedTarget> resolveOptions(const CompileOptions &options);

/// The pass names compile() runs for \p options and \p target: the
/// --passes list if given, else passes::defaultPipeline(target.target).
std::vector<std::string> pipelineFor(const CompileOptions &options,
                                     const passes::ResolvedTarget &target);

/// The passes part of the flow, on a graph the caller imported or built:
/// fills \p ctx (target device, shapes, precision, debug, verification) from
/// \p options and \p target, then runs pipelineFor(). \p ctx keeps what the
/// passes recorded (fusion plan, statistics). Errors: see the file comment.
absl::Status optimize(ir::Graph &graph, const CompileOptions &options,
                      const passes::ResolvedTarget &target, passes::PassContext &ctx);

/// Same, resolving the target from \p options first.
absl::Status optimize(ir::Graph &graph, const CompileOptions &options, passes::PassContext &ctx);

/// The whole flow for the ONNX model at \p modelPath, up to
/// options.stopAfter (the artifact stage only runs when options.output is
/// set). For a target without a backend, Unimplemented before the passes
/// when an artifact is asked for, and no file is written.
absl::StatusOr<Compilation> compile(const std::string &modelPath, const CompileOptions &options);

}  // namespace fusec::driver

#endif  // FUSEC_DRIVER_DRIVER_H
