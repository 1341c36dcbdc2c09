//===- CudaBackend.cpp - The CUDA backend behind codegen::Backend -------===//
//
// Module: model.cu (CudaEmitter.h: one __global__ kernel + launcher per
// unique kernel), built by nvcc into libmodel.so (Nvcc.h). Library calls
// run through cuBLASLt (GEMM, with its fused epilogues) and cuDNN (conv)
// in the runtime; the manifest's gemm/conv steps name them.
//
//===----------------------------------------------------------------------===//
#include <cctype>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/Backend.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/CublasEpilogue.h"
#include "codegen/cuda/CudaEmitter.h"
#include "codegen/cuda/Nvcc.h"
#include "passes/Pipeline.h"
#include "program/Program.h"
#include "program/Symbolic.h"
#include "runtime/ArtifactFormat.h"
#include "support/Status.h"

namespace fusec::codegen {
namespace {

namespace fs = std::filesystem;

constexpr const char *kLibrary = "libmodel.so";
constexpr const char *kSource = "model.cu";

bool validArch(const std::string &arch) {
  if (arch.empty()) return false;
  for (char c : arch)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

/// GEMM epilogues run inside cuBLASLt: each must be one it fuses;
/// convolutions (cuDNN) add at most their bias. \p gemm / \p conv: the
/// library call of a step or work item named \p name (either may be null).
absl::Status checkLibraryEpilogue(const program::GemmParams *gemm, const program::ConvParams *conv,
                                  const std::string &name) {
  if (gemm) FUSEC_RETURN_IF_ERROR(cublasLtEpilogue(gemm->epilogue).status());
  if (conv) {
    absl::StatusOr<const char *> e = cublasLtEpilogue(conv->epilogue);
    if (!e.ok() || std::string(*e) != (conv->bias ? "bias" : "none"))
      return absl::UnimplementedError(
          absl::StrCat("codegen: convolution ", name, " with an epilogue other than its bias"));
  }
  return absl::OkStatus();
}

class CudaBackend final : public Backend {
 public:
  const char *name() const override { return "cuda"; }

  std::vector<std::string> passPipeline() const override {
    return passes::defaultPipeline("cuda");
  }

  absl::StatusOr<std::string> resolveArch(const std::string &requested,
                                          const passes::TargetSpec &target) const override {
    // `--arch sm_90a` opts into Hopper's wgmma/TMA attention kernel (the
    // code then runs on compute capability 9.0 only). It is not the default
    // until it has passed the shared models on a GPU (docs/CUDA_ATTENTION.md).
    std::string arch = requested;
    if (arch.empty()) arch = target.arch.rfind("sm_", 0) == 0 ? target.arch : "sm_90";
    if (!validArch(arch))
      return absl::InvalidArgumentError(absl::StrCat("invalid --arch '", arch, "' (e.g. sm_90)"));
    return arch;
  }

  absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                          const program::GraphIndex &index, const passes::TargetSpec &) const override {
    FUSEC_ASSIGN_OR_RETURN(std::vector<program::WorkItem> items,
                           program::lowerGroupItems(graph, members, index,
                                                    cudaLoweringOptions(/*allowTf32=*/false)));
    for (const program::WorkItem &item : items)
      FUSEC_RETURN_IF_ERROR(checkLibraryEpilogue(item.kind == program::WorkItem::Kind::kGemm ? &item.gemm : nullptr,
                                                 item.kind == program::WorkItem::Kind::kConv ? &item.conv : nullptr,
                                                 item.name));
    return absl::OkStatus();
  }

  program::GroupNote describeGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                   const program::GraphIndex &index, const passes::TargetSpec &device) const override {
    absl::StatusOr<std::vector<program::WorkItem>> items =
        program::lowerGroupItems(graph, members, index, cudaLoweringOptions(/*allowTf32=*/false));
    if (!items.ok()) return {};
    for (const program::WorkItem &item : *items)
      if (item.kind == program::WorkItem::Kind::kKernel && item.spec.kind == program::SpecKind::kAttention)
        return {describeAttentionKernel(item.spec.attention, device.arch)};
    std::vector<std::string> notes;
    for (const program::WorkItem &item : *items)
      if (item.kind == program::WorkItem::Kind::kGemm && item.gemm.dDtype != item.gemm.dtype)
        notes.push_back(absl::StrCat("Cast folded into the GEMM: cuBLASLt writes D as ",
                                     ir::dtypeName(item.gemm.dDtype), " from ", ir::dtypeName(item.gemm.dtype),
                                     " operands"));
    // A library call whose epilogue the library does not fuse: the rest of
    // the group is a generated kernel over the call's output, one more
    // launch and one more pass over it (the plan's bytes count it).
    program::GroupNote note = program::libraryEpilogueNote(graph, members, index, *items);
    for (size_t i = 0; i + 1 < items->size(); ++i) {
      const program::WorkItem &lib = (*items)[i], &next = (*items)[i + 1];
      if (next.kind != program::WorkItem::Kind::kKernel) continue;
      if (lib.kind == program::WorkItem::Kind::kConv)
        notes.push_back(absl::StrCat("2 launches: the cuDNN convolution", lib.conv.bias ? " (bias fused)" : "",
                                     ", then the epilogue as a generated kernel over its output (cuDNN fuses "
                                     "only the bias here)"));
      else if (lib.kind == program::WorkItem::Kind::kGemm)
        notes.push_back("2 launches: the cuBLASLt GEMM, then the epilogue as a generated kernel over its output "
                        "(cuBLASLt fuses bias, ReLU and the tanh GELU only)");
    }
    note.text = absl::StrJoin(notes, "; ");
    return note;
  }

  absl::StatusOr<BackendModule> emit(const ir::Graph &graph,
                                     const std::vector<std::string> &kernelNames,
                                     const BackendOptions &opts) const override {
    CudaOptions copts;
    copts.arch = opts.arch;
    copts.allowTf32 = opts.allowTf32;
    // Dynamic shapes: the program every probe agrees on, its integers that
    // vary as symbolic forms (program/Symbolic.h); kernels read them from
    // the symbols their launchers take.
    if (opts.probes)
      for (const program::ShapeSymbol &s : opts.probes->symbols) {
        copts.symbolNames.push_back(s.name);
        copts.symbolMax.push_back(s.max);
      }
    // Every kernel takes all the symbols by value (fx::Syms): a model with
    // more is refused once, for the whole artifact, naming them.
    if (static_cast<int>(copts.symbolNames.size()) > kMaxCudaSymbols)
      return absl::UnimplementedError(absl::StrCat(
          "cuda: the model has ", copts.symbolNames.size(), " symbolic dims left for run time (",
          absl::StrJoin(copts.symbolNames, ", "), "); a cuda artifact takes at most ", kMaxCudaSymbols,
          ": bind some with --shape (a fixed extent, or the name of a symbol the dim equals)"));
    FUSEC_ASSIGN_OR_RETURN(program::Program prog,
                           opts.probes ? program::buildSymbolicProgram(*opts.probes, cudaLoweringOptions(opts.allowTf32))
                                       : program::buildProgram(graph, kernelNames, cudaLoweringOptions(opts.allowTf32)));
    for (const program::Step &s : prog.steps) {
      // cuBLASLt and cuDNN plans are made per binding by the runtime; a
      // convolution may vary only in its batch.
      if (s.kind != program::Step::Kind::kConv) continue;
      for (const auto &[field, e] : s.conv.symbolic)
        if (field.rfind("xShape[0]", 0) != 0 && field.rfind("yShape[0]", 0) != 0)
          return absl::UnimplementedError(absl::StrCat("dynamic shapes: convolution '", s.name, "' has ", field, " = ",
                                                       e.str(), " (only its batch may be bound at run time on cuda); "
                                                       "bind the dims with --shape"));
    }
    for (const program::Step &s : prog.steps)
      FUSEC_RETURN_IF_ERROR(checkLibraryEpilogue(s.kind == program::Step::Kind::kGemm ? &s.gemm : nullptr,
                                                 s.kind == program::Step::Kind::kConv ? &s.conv : nullptr, s.name));
    FUSEC_ASSIGN_OR_RETURN(CudaModule mod, printCudaModule(prog, copts));
    BackendModule out;
    out.steps = std::move(mod.steps);
    out.kernelNames = std::move(mod.kernelNames);
    out.numKernels = static_cast<int>(mod.symbols.size());
    out.library = kLibrary;
    out.recordsManifestDigest = true;
    const std::string nvcc = opts.buildLibrary ? findNvcc(opts.toolPath) : std::string();
    out.libraryBuiltByHand = nvcc.empty();
    out.buildCommand =
        shellQuote(nvccCommand(nvcc.empty() ? "nvcc" : nvcc, opts.arch, kSource, kLibrary));
    out.files.emplace_back(
        kSource, absl::StrCat("/* Generated by fusec for model '", escapeComment(opts.modelName),
                              "', target ", escapeComment(opts.arch),
                              ".\n * Build: ", escapeComment(out.buildCommand), "\n */\n",
                              mod.source,
                              "\n// The manifest this library was built for (runtime/ArtifactFormat.h);\n"
                              "// the artifact writer substitutes its digest.\n"
                              "extern \"C\" __attribute__((visibility(\"default\"))) const char ",
                              artifact_format::kManifestDigestSymbol, "[] = \"",
                              artifact_format::kManifestDigestPlaceholder, "\";\n"));
    return out;
  }

  absl::Status build(const BackendModule &module, const std::string &workDir,
                     const std::string &finalDir, const BackendOptions &opts,
                     BuildOutcome *outcome) const override {
    const std::string buildHint =
        absl::StrCat("cd ", shellQuote({finalDir}), " && ", module.buildCommand);
    const std::string nvcc = opts.buildLibrary ? findNvcc(opts.toolPath) : std::string();
    if (!opts.buildLibrary) {
      outcome->warnings.push_back(
          absl::StrCat("libmodel.so not built (nvcc disabled); build it with: ", buildHint));
      return absl::OkStatus();
    }
    if (nvcc.empty()) {
      outcome->warnings.push_back(absl::StrCat(
          "nvcc not found on PATH (nor in $CUDA_HOME/bin or /usr/local/cuda/bin): libmodel.so "
          "not built; build it with: ",
          buildHint));
      return absl::OkStatus();
    }
    std::string log;
    absl::Status st =
        runCommand(nvccCommand(nvcc, opts.arch, kSource, kLibrary), workDir, &log);
    if (!st.ok()) {
      if (absl::IsNotFound(st))
        return absl::NotFoundError(absl::StrCat("cannot run nvcc: ", st.message()));
      return absl::InternalError(absl::StrCat("nvcc failed building libmodel.so for model '",
                                              opts.modelName, "': ", st.message(), "\n", log));
    }
    std::error_code ec;
    if (!fs::exists(fs::path(workDir) / kLibrary, ec))
      return absl::InternalError(absl::StrCat("nvcc succeeded but wrote no ", kLibrary, ":\n", log));
    outcome->built = true;
    return absl::OkStatus();
  }
};

}  // namespace

const Backend &cudaBackend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace fusec::codegen
