//===- CpuBackend.cpp - The host CPU backend behind codegen::Backend ------===//
//
// Module: one LLVM module (CpuCodegen.h) with one entry point per unique
// kernel spec (fusec_k<i>), per distinct GEMM (fusec_gemm<i>) and per
// distinct convolution (fusec_conv<i>), optimised for the --arch CPU and
// compiled to an object in emit(); build() links it into libmodel.so with
// lld in-process. GEMM and conv steps become kernel steps whose buffers are
// their operands (docs/ARTIFACT.md, "cpu artifacts": only kernel and copy
// steps), so the runtime needs no knowledge of an op.
//
// Legality: a group lowers for cpu when the target-neutral lowering accepts
// it and each work item passes checkCpuKernel / checkCpuGemm /
// checkCpuConv, the checks addKernel / addGemm / addConv run first.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/Backend.h"
#include "codegen/cpu/CpuCodegen.h"
#include "passes/Pipeline.h"
#include "program/Program.h"
#include "runtime/ArtifactFormat.h"
#include "support/Status.h"

namespace fusec::codegen {
namespace {

namespace fs = std::filesystem;
using program::Step;
using program::WorkItem;

constexpr const char *kLibrary = "libmodel.so";
/// FUSERT_CPU_ABI_VERSION of runtime/include/fusert/fusert_cpu_kernel.h.
constexpr int kCpuAbiVersion = 2;

absl::Status checkItem(const WorkItem &item) {
  switch (item.kind) {
    case WorkItem::Kind::kKernel: return cpu::checkCpuKernel(item.spec);
    case WorkItem::Kind::kGemm: return cpu::checkCpuGemm(item.gemm);
    case WorkItem::Kind::kConv: return cpu::checkCpuConv(item.conv);
  }
  return absl::InternalError("unknown work item");
}

/// The lowering the cpu backend emits and checks: GEMM and convolution
/// epilogues are generated loops over each output tile (addGemm, addConv),
/// so elementwise chains after them fold in.
program::LoweringOptions cpuLoweringOptions() {
  program::LoweringOptions lo;
  lo.generatedGemmEpilogue = true;
  lo.generatedConvEpilogue = true;
  return lo;
}

std::string symbolicKey(const std::map<std::string, program::SymExtent> &m) {
  std::string k;
  for (const auto &[f, e] : m) absl::StrAppend(&k, " ", f, "=", e.str());
  return k;
}

std::string epilogueKey(const program::GemmEpilogue &e) {
  return e.empty() ? std::string("none") : absl::StrCat(program::canonicalKey(e.spec), "|value=", e.value);
}

std::string gemmKey(const program::GemmParams &g) {
  return absl::StrCat("m=", g.m, " n=", g.n, " k=", g.k, " batch=", g.batch, " sa=", g.strideA, " sb=", g.strideB,
                      " sc=", g.strideC, " sd=", g.strideD, " ta=", g.transA, " tb=", g.transB, " alpha=", g.alpha,
                      " beta=", g.beta, " c=", g.c != nullptr, " bias=", g.bias != nullptr,
                      " dtype=", static_cast<int>(g.dtype), " epi=", epilogueKey(g.epilogue), symbolicKey(g.symbolic));
}

std::string convKey(const program::ConvParams &c) {
  return absl::StrCat("x=", absl::StrJoin(c.xShape, ","), " w=", absl::StrJoin(c.wShape, ","),
                      " y=", absl::StrJoin(c.yShape, ","), " pads=", absl::StrJoin(c.pads, ","),
                      " strides=", absl::StrJoin(c.strides, ","), " dil=", absl::StrJoin(c.dilations, ","),
                      " group=", c.group, " bias=", c.bias != nullptr, " dtype=", static_cast<int>(c.dtype),
                      " epi=", epilogueKey(c.epilogue), symbolicKey(c.symbolic));
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

class CpuBackend final : public Backend {
 public:
  const char *name() const override { return "cpu"; }

  std::vector<std::string> passPipeline() const override { return passes::defaultPipeline("cpu"); }

  absl::StatusOr<std::string> resolveArch(const std::string &requested, const passes::TargetSpec &) const override {
    // The device (a roofline for the cost model) does not choose the CPU:
    // --arch does, else the host.
    FUSEC_ASSIGN_OR_RETURN(cpu::CpuTarget t, cpu::resolveCpuTarget(requested));
    return t.cpu;
  }

  absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                          const program::GraphIndex &index, const passes::TargetSpec &) const override {
    FUSEC_ASSIGN_OR_RETURN(std::vector<WorkItem> items,
                           program::lowerGroupItems(graph, members, index, cpuLoweringOptions()));
    for (const WorkItem &item : items) {
      absl::Status st = checkItem(item);
      if (!st.ok())
        return absl::UnimplementedError(absl::StrCat(
            item.nodes.empty() ? std::string("group") : item.nodes.front()->describe(), ": ", st.message()));
    }
    return absl::OkStatus();
  }

  program::GroupNote describeGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                                   const program::GraphIndex &index, const passes::TargetSpec &) const override {
    absl::StatusOr<std::vector<WorkItem>> items =
        program::lowerGroupItems(graph, members, index, cpuLoweringOptions());
    if (!items.ok()) return {};
    program::GroupNote note = program::libraryEpilogueNote(graph, members, index, *items);
    if (items->size() == 2 && items->front().kind == WorkItem::Kind::kConv)
      note.text = "2 steps: the convolution, then the epilogue as a generated loop over its result (not "
                  "folded into the convolution's output tiles)";
    if (items->size() != 1 || items->front().kind != WorkItem::Kind::kConv) return note;
    const size_t ops = std::count_if(members.begin(), members.end(), [](const ir::Node *n) {
      return !program::isViewNode(*n) && n->kind() != ir::OpKind::kConstant;
    });
    // One step for the convolution and ops after it: they were folded.
    if (ops > 1) note.text = "the epilogue runs inside the convolution's output tiles (one step)";
    return note;
  }

  absl::StatusOr<BackendModule> emit(const ir::Graph &graph, const std::vector<std::string> &kernelNames,
                                     const BackendOptions &opts) const override {
    FUSEC_ASSIGN_OR_RETURN(cpu::CpuTarget target, cpu::resolveCpuTarget(opts.arch));
    const program::LoweringOptions lo = cpuLoweringOptions();
    // Dynamic shapes: the program every probe agrees on, its integers that
    // vary as symbolic forms (program/Symbolic.h).
    FUSEC_ASSIGN_OR_RETURN(program::Program prog, opts.probes ? program::buildSymbolicProgram(*opts.probes, lo)
                                                              : program::buildProgram(graph, kernelNames, lo));
    cpu::CpuModuleBuilder mb(target, opts.modelName.empty() ? std::string("model") : opts.modelName);
    if (opts.probes) {
      std::vector<std::string> names;
      for (const program::ShapeSymbol &s : opts.probes->symbols) names.push_back(s.name);
      mb.setSymbols(std::move(names));
    }
    std::vector<std::string> symbols(prog.kernels.size());
    std::map<std::string, std::string> gemms, convs;
    for (size_t s = 0; s < prog.steps.size(); ++s) {
      Step &step = prog.steps[s];
      const WorkItem &item = prog.items[s];
      auto where = [&](const absl::Status &st) {
        return absl::Status(st.code(), absl::StrCat("cpu: '", item.name, "'",
                                                    item.nodes.empty() ? "" : absl::StrCat(" (", item.nodes.front()->describe(), ")"),
                                                    ": ", st.message()));
      };
      switch (step.kind) {
        case Step::Kind::kKernel: {
          const int k = prog.kernelOfStep[s];
          if (symbols[k].empty()) {
            symbols[k] = absl::StrCat("fusec_k", k);
            absl::Status st = mb.addKernel(item.spec, symbols[k]);
            if (!st.ok()) return where(st);
          }
          step.symbol = symbols[k];
          break;
        }
        case Step::Kind::kGemm: {
          const std::string key = gemmKey(step.gemm);
          auto it = gemms.find(key);
          if (it == gemms.end()) {
            it = gemms.emplace(key, absl::StrCat("fusec_gemm", gemms.size())).first;
            absl::Status st = mb.addGemm(step.gemm, it->second);
            if (!st.ok()) return where(st);
          }
          step.buffers = cpu::gemmStepBuffers(step.gemm);
          step.symbol = it->second;
          step.kind = Step::Kind::kKernel;
          break;
        }
        case Step::Kind::kConv: {
          const std::string key = convKey(step.conv);
          auto it = convs.find(key);
          if (it == convs.end()) {
            it = convs.emplace(key, absl::StrCat("fusec_conv", convs.size())).first;
            absl::Status st = mb.addConv(step.conv, it->second);
            if (!st.ok()) return where(st);
          }
          step.buffers = cpu::convStepBuffers(step.conv);
          step.symbol = it->second;
          step.kind = Step::Kind::kKernel;
          break;
        }
        case Step::Kind::kCopy: break;
      }
    }
    // The artifact writer substitutes the manifest's digest into the object.
    mb.addConstantString(artifact_format::kManifestDigestSymbol, artifact_format::kManifestDigestPlaceholder);
    BackendModule out;
    out.steps = std::move(prog.steps);
    out.kernelNames = std::move(prog.kernelNames);
    if (opts.checkOnly) return out;  // everything that can refuse has run; no object code
    FUSEC_ASSIGN_OR_RETURN(cpu::CpuObject obj, mb.finish(/*wantIr=*/opts.emitIr));
    out.numKernels = static_cast<int>(prog.kernels.size() + gemms.size() + convs.size());
    out.library = kLibrary;
    out.libraryRunsLibraryCalls = true;
    out.recordsManifestDigest = true;
    out.buildInput = std::move(obj.object);
    if (opts.emitIr) out.files.emplace_back("model.ll", std::move(obj.ir));
    std::vector<std::string> feats;
    for (const std::string &f : target.features) feats.push_back(jsonString(f));
    out.manifestFields = {{"cpu_abi", std::to_string(kCpuAbiVersion)},
                          {"cpu_features", absl::StrCat("[", absl::StrJoin(feats, ", "), "]")},
                          {"workspace_bytes_per_thread", std::to_string(obj.workspaceBytesPerThread)}};
    out.buildCommand = "(in-process: LLVM O3 for " + target.cpu + ", lld -shared)";
    return out;
  }

  absl::Status build(const BackendModule &module, const std::string &workDir, const std::string &,
                     const BackendOptions &opts, BuildOutcome *outcome) const override {
    if (!opts.buildLibrary) {
      outcome->warnings.push_back("libmodel.so not built (building disabled)");
      return absl::OkStatus();
    }
    FUSEC_RETURN_IF_ERROR(
        cpu::linkSharedLibrary(module.buildInput, workDir, (fs::path(workDir) / kLibrary).string()));
    outcome->built = true;
    return absl::OkStatus();
  }
};

}  // namespace

const Backend &cpuBackend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace fusec::codegen
