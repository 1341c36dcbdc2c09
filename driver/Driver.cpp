//===- Driver.cpp - compile(model, options): the one compile flow ---------===//
//
// Import, target resolution, passes, and the backend's emission. The
// backend dispatch (emitArtifact) is the driver's only contact with
// codegen.
//
//===----------------------------------------------------------------------===//
#include "driver/Driver.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/Backend.h"
#include "codegen/artifact/ArtifactWriter.h"
#include "frontend/onnx/OnnxImporter.h"
#include "passes/Pipeline.h"
#include "support/Status.h"

namespace fusec::driver {
namespace {

/// True when \p target has a backend that writes artifacts.
bool hasBackend(const std::string &target) { return codegen::backendFor(target).ok(); }

absl::Status backendMissing(const std::string &target) {
  // The targets table knows every target; only the cpu backend can be left
  // out of a build (-DFUSEC_CPU_BACKEND=OFF: no LLVM, as the GPU staging
  // build is configured).
  return absl::UnimplementedError(absl::StrCat(
      "this fusec was built without the ", target, " backend",
      target == "cpu" ? " (configure with -DFUSEC_CPU_BACKEND=ON, which needs LLVM's development package)"
                      : ""));
}

/// Lowering, backend emission and the artifact folder: the one call into
/// codegen.
absl::Status emitArtifact(const std::string &modelPath, const CompileOptions &options,
                          Compilation &c) {
  if (!hasBackend(c.target.target)) return backendMissing(c.target.target);
  artifact::ArtifactOptions ao;
  ao.target = c.target.target;
  // The arch the user named; without --arch the backend picks its default
  // from the device (cuda, nki) or the host (cpu: the host CPU, not the
  // roofline device's arch).
  ao.arch = options.arch.empty() && c.target.target == "cpu" ? std::string() : c.target.arch;
  ao.precision = options.precision;
  ao.allowTf32 = options.allowTf32;
  ao.runNvcc = options.runNvcc;
  ao.emitIr = options.emitIr;
  ao.modelPath = modelPath;
  for (const auto &[name, t] : c.boundValues)
    ao.boundInputs.push_back({name, ir::dtypeName(t.dtype()), t.shape(), artifact::boundValueDigest(t)});
  ao.modelName = !options.modelName.empty()
                     ? options.modelName
                     : std::filesystem::path(modelPath).parent_path().filename().string();
  artifact::ArtifactSummary summary;
  FUSEC_RETURN_IF_ERROR(artifact::writeArtifact(*c.graph, c.context.fusionPlan, c.context.target,
                                                ao, options.output, &summary));
  c.wroteArtifact = true;
  c.artifact.warnings = c.graph->importWarnings();
  c.artifact.warnings.insert(c.artifact.warnings.end(), summary.warnings.begin(), summary.warnings.end());
  c.artifact.builtLibrary = summary.builtLibrary;
  c.artifact.numSteps = summary.numSteps;
  c.artifact.numGuardedSteps = summary.numGuardedSteps;
  c.artifact.guardedRanges = summary.guardedRanges;
  c.artifact.numKernels = summary.numKernels;
  c.artifact.weightsBytes = summary.weightsBytes;
  c.artifact.arenaBytes = summary.arenaBytes;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<passes::ResolvedTarget> resolveOptions(const CompileOptions &options) {
  if (options.precision != "fp32" && options.precision != "fp16" && options.precision != "bf16")
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --precision '", options.precision, "' (expected: fp32, fp16, bf16)"));
  return passes::resolveTarget(options.target, options.arch, options.device);
}

std::vector<std::string> pipelineFor(const CompileOptions &options,
                                     const passes::ResolvedTarget &target) {
  if (options.passes.empty()) return passes::defaultPipeline(target.target);
  std::vector<std::string> names;
  for (absl::string_view p : absl::StrSplit(options.passes, ',', absl::SkipWhitespace()))
    names.emplace_back(p);
  return names;
}

absl::Status optimize(ir::Graph &graph, const CompileOptions &options,
                      const passes::ResolvedTarget &target, passes::PassContext &ctx) {
  ctx.inputShapes = options.inputShapes;
  ctx.debugOnly = options.debugOnly;
  ctx.verifyEach = options.verifyEach;
  ctx.precision = options.precision;
  ctx.target = target.device;
  // One legality rule: fusion asks the backend's lowering for this device
  // before merging and for every final group (none for backends that are
  // not available yet).
  if (auto backend = codegen::backendFor(target.target); backend.ok())
    ctx.legality = codegen::legalityFor(**backend, target.device);
  ctx.fusionPlan.onnxNodes = graph.onnxNodeCount();
  FUSEC_ASSIGN_OR_RETURN(
      auto pipeline, passes::parsePipeline(passes::pipelineString(pipelineFor(options, target))));
  return passes::runPasses(graph, ctx, pipeline);
}

absl::Status optimize(ir::Graph &graph, const CompileOptions &options, passes::PassContext &ctx) {
  FUSEC_ASSIGN_OR_RETURN(passes::ResolvedTarget target, resolveOptions(options));
  return optimize(graph, options, target, ctx);
}

absl::StatusOr<Compilation> compile(const std::string &modelPath, const CompileOptions &options) {
  Compilation c;
  FUSEC_ASSIGN_OR_RETURN(c.target, resolveOptions(options));
  const bool writeArtifact = options.stopAfter == Stage::kArtifact && !options.output.empty();
  // Refuse a missing backend before any work, so nothing is half-written.
  if (writeArtifact && !hasBackend(c.target.target)) return backendMissing(c.target.target);
  frontend::ImportOptions io;
  io.inputShapes = options.inputShapes;
  io.inputValues = options.inputValues;
  FUSEC_ASSIGN_OR_RETURN(c.graph, frontend::importOnnxModel(modelPath, io));
  for (const auto &[name, given] : options.inputValues) {
    // As compiled: converted to the input's dtype and shape by the importer.
    const ir::Value *v = c.graph->findValue(name);
    c.boundValues.emplace(name, v && v->isConstant() ? *v->constant() : given);
  }
  if (options.onImported) options.onImported(*c.graph);
  if (options.stopAfter == Stage::kImport) return c;

  c.pipeline = pipelineFor(options, c.target);
  FUSEC_RETURN_IF_ERROR(optimize(*c.graph, options, c.target, c.context));
  if (options.onOptimized) options.onOptimized(*c.graph, c.context);
  if (!writeArtifact) return c;
  FUSEC_RETURN_IF_ERROR(emitArtifact(modelPath, options, c));
  return c;
}

}  // namespace fusec::driver
