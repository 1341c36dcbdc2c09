//===- NkiBackend.cpp - The Trainium (NKI) backend behind codegen::Backend ===//
//
// Module: kernels.py (one @nki.jit function per unique generated kernel and
// per distinct GEMM and convolution, NkiKernel.h) and run.py (the host driver, RunPy.h) that
// executes the manifest's steps in order on NumPy arrays. Nothing is built:
// the Neuron compiler traces the kernels when they are first called
// (docs/NKI_BACKEND.md); here they run on the NumPy model of NKI
// (python/nki_model).
//
// Legality: a group lowers for nki on a device when the target-neutral
// lowering accepts it and each of its work items has an NKI lowering within
// the device's limits (checkNkiKernel, which covers fused attention, /
// checkNkiGemm / checkNkiConv with TargetSpec::partitioned). emit() prints
// with the same limits (BackendOptions::device), so what fusion accepted
// lowers.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <map>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/Backend.h"
#include "codegen/nki/NkiKernel.h"
#include "codegen/nki/RunPy.h"
#include "passes/Pipeline.h"
#include "program/Program.h"
#include "support/Status.h"

namespace fusec::codegen {
namespace {

/// Model-controlled text as one line of a Python comment.
std::string commentText(const std::string &s) {
  std::string out;
  for (char c : s) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

std::vector<std::string> commentFor(const std::string &what, const std::string &name,
                                    const std::vector<const ir::Node *> &nodes) {
  std::vector<std::string> lines = {commentText(absl::StrCat(what, " ", name))};
  for (const ir::Node *n : nodes)
    lines.push_back(commentText(absl::StrCat("  ONNX node '", n->name(), "' (", n->opType(), ")")));
  return lines;
}

/// True when \p from reaches \p to through at most 8 producers that are
/// not members of the item (views between a kernel's buffer and its nodes).
bool reachesThroughViews(const ir::Value *from, const ir::Value *to,
                         const std::vector<const ir::Node *> &members) {
  for (int steps = 0; from && steps < 8; ++steps) {
    if (from == to) return true;
    const ir::Node *p = from->producer();
    if (!p || std::find(members.begin(), members.end(), p) != members.end() || p->numInputs() == 0) return false;
    from = p->input(0);
  }
  return false;
}

/// "'a' (Add), 'b' (Mul)": the nodes, at most 6 of them and a count of the rest.
std::string describeNodes(const std::vector<const ir::Node *> &nodes) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < nodes.size() && i < 6; ++i) parts.push_back(nodes[i]->describe());
  std::string out = absl::StrJoin(parts, ", ");
  if (nodes.size() > 6) absl::StrAppend(&out, " and ", nodes.size() - 6, " more");
  return out;
}

}  // namespace

std::string nki::refusalMessage(const program::WorkItem &item, absl::string_view reason) {
  // An access message names a spec buffer ("the load of buffer 2"): name the
  // value bound to it and the member node that reads (load) or writes
  // (store) it.
  static const std::regex bufferRef("(load of|store to) buffer ([0-9]+)");
  std::string text(reason);
  std::vector<const ir::Node *> culprits;
  std::smatch m;
  if (std::regex_search(text, m, bufferRef)) {
    const bool store = m[1].str() == "store to";
    const size_t b = std::stoul(m[2].str());
    if (b < item.buffers.size() && item.buffers[b]) {
      const ir::Value *v = item.buffers[b];
      for (const ir::Node *n : item.nodes) {
        bool hit = false;
        if (store) {
          for (const ir::Value *o : n->outputs()) hit = hit || (o && reachesThroughViews(v, o, item.nodes));
        } else {
          for (const ir::Value *in : n->inputs()) hit = hit || (in && reachesThroughViews(in, v, item.nodes));
        }
        if (hit) culprits.push_back(n);
      }
      text = absl::StrCat(m.prefix().str(), m[1].str(), " '", commentText(v->name()), "' (buffer ", b, ")",
                          m.suffix().str());
    }
  }
  // An op refusal ("unary 'round' is not lowered") names the nodes of that op.
  static const std::regex unaryRef("unary '([A-Za-z0-9_]+)'");
  if (culprits.empty() && std::regex_search(text, m, unaryRef)) {
    for (const ir::Node *n : item.nodes)
      if (absl::AsciiStrToLower(n->opType()) == m[1].str()) culprits.push_back(n);
  }
  if (culprits.empty()) culprits = item.nodes;
  std::string where = culprits.empty() ? absl::StrCat("kernel '", item.name, "'")
                                       : absl::StrCat(culprits.size() == 1 ? "node " : "nodes ",
                                                      describeNodes(culprits));
  if (culprits.size() < item.nodes.size())
    absl::StrAppend(&where, " (in the fused group of ", describeNodes(item.nodes), ")");
  return absl::StrCat("nki: ", where, ": ", text);
}

namespace {

absl::Status checkItem(const program::WorkItem &item, const nki::Limits &lim) {
  switch (item.kind) {
    case program::WorkItem::Kind::kKernel: return nki::checkNkiKernel(item.spec, lim);
    case program::WorkItem::Kind::kGemm: return nki::checkNkiGemm(item.gemm, lim);
    case program::WorkItem::Kind::kConv: return nki::checkNkiConv(item.conv, lim);
  }
  return absl::InternalError("unknown work item");
}

/// How the NKI backend lowers groups: its attention kernel reads dense Q, K,
/// V and O (no AttentionSpec strides), so layout ops stay kernels of their own.
program::LoweringOptions nkiLoweringOptions() {
  program::LoweringOptions lo;
  lo.foldAttentionLayouts = false;
  return lo;
}

/// The NKI limits of \p device. Errors: InvalidArgument for a device that
/// has none (not a NeuronCore: resolveTarget never pairs one with nki).
absl::StatusOr<nki::Limits> limitsOf(const passes::TargetSpec &device) {
  if (!device.partitioned.present())
    return absl::InvalidArgumentError(absl::StrCat("nki: device '", device.name,
                                                   "' has no partition limits (not a Trainium target)"));
  return device.partitioned;
}

class NkiBackend final : public Backend {
 public:
  const char *name() const override { return "nki"; }

  std::vector<std::string> passPipeline() const override { return passes::defaultPipeline("nki"); }

  absl::StatusOr<std::string> resolveArch(const std::string &requested,
                                          const passes::TargetSpec &target) const override {
    // The archs of targets/Targets.def, where passes::resolveTarget checks
    // them first; this guards direct callers.
    std::string arch = requested.empty() ? target.arch : requested;
    if (arch.empty()) arch = "trn2";
    if (arch != "trn1" && arch != "trn2")
      return absl::InvalidArgumentError(absl::StrCat("invalid NKI target '", arch, "' (expected trn1 or trn2)"));
    return arch;
  }

  absl::Status checkGroup(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                          const program::GraphIndex &index,
                          const passes::TargetSpec &device) const override {
    FUSEC_ASSIGN_OR_RETURN(const nki::Limits lim, limitsOf(device));
    FUSEC_ASSIGN_OR_RETURN(std::vector<program::WorkItem> items,
                           program::lowerGroupItems(graph, members, index, nkiLoweringOptions()));
    for (const program::WorkItem &item : items) {
      absl::Status st = checkItem(item, lim);
      if (!st.ok()) return absl::UnimplementedError(nki::refusalMessage(item, st.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<BackendModule> emit(const ir::Graph &graph,
                                     const std::vector<std::string> &kernelNames,
                                     const BackendOptions &opts) const override {
    if (opts.probes)
      return absl::UnimplementedError(absl::StrCat(name(), ": dynamic shapes are compiled for --target cpu only so far; "
                                                   "bind every dim with --shape"));
    FUSEC_ASSIGN_OR_RETURN(const nki::Limits lim, limitsOf(opts.device));
    FUSEC_ASSIGN_OR_RETURN(program::Program prog,
                           program::buildProgram(graph, kernelNames, nkiLoweringOptions()));
    BackendModule out;
    std::string kernels = absl::StrCat(
        "# Generated by fusec for model '", commentText(opts.modelName), "', NKI target ", opts.arch,
        " (device ", commentText(opts.device.name), ": ", lim.partitions, " partitions, ",
        lim.sbufUsableBytesPerPartition, " usable SBUF bytes per partition, ", lim.psumBanks, " PSUM banks of ",
        lim.psumBankBytes, " bytes).\n# One @nki.jit kernel per unique fused group and per distinct GEMM; run.py calls them.\n"
        "# Dialect: NKI 0.3+ (import nki; every nisa call writes into dst=).\n"
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n");
    std::vector<std::string> symbols(prog.kernels.size());
    std::map<std::string, std::string> outputs;   // symbol -> python tuple of output positions
    std::map<std::string, std::string> gemmText;  // kernel text (symbol placeholder) -> symbol
    std::vector<std::pair<std::string, std::string>> gemmOfStep;
    std::map<std::string, std::string> convText;  // same for convolutions
    std::vector<std::pair<std::string, std::string>> convOfStep;
    for (size_t s = 0; s < prog.steps.size(); ++s) {
      program::Step &step = prog.steps[s];
      const program::WorkItem &item = prog.items[s];
      if (step.kind == program::Step::Kind::kKernel) {
        int k = prog.kernelOfStep[s];
        if (symbols[k].empty()) {
          symbols[k] = absl::StrCat("fusec_k", k);
          auto text = nki::printNkiKernel(item.spec, lim, symbols[k],
                                          commentFor("kernel", item.name, item.nodes));
          if (!text.ok())
            return absl::UnimplementedError(nki::refusalMessage(item, text.status().message()));
          absl::StrAppend(&kernels, *text, "\n\n");
          std::vector<std::string> pos;
          for (size_t b = 0; b < item.spec.buffers.size(); ++b)
            if (item.spec.buffers[b].written) pos.push_back(std::to_string(b));
          outputs[symbols[k]] = absl::StrCat("(", absl::StrJoin(pos, ", "), ",)");
        }
        step.symbol = symbols[k];
      } else if (step.kind == program::Step::Kind::kGemm) {
        auto key = nki::printNkiGemm(item.gemm, lim, "@SYMBOL@", {});
        if (!key.ok())
          return absl::UnimplementedError(nki::refusalMessage(item, key.status().message()));
        auto it = gemmText.find(*key);
        if (it == gemmText.end()) {
          std::string sym = absl::StrCat("fusec_gemm", gemmText.size());
          it = gemmText.emplace(*key, sym).first;
          FUSEC_ASSIGN_OR_RETURN(std::string text,
                                 nki::printNkiGemm(item.gemm, lim, sym, commentFor("GEMM", item.name, item.nodes)));
          absl::StrAppend(&kernels, text, "\n\n");
        }
        gemmOfStep.emplace_back(step.name, it->second);
      } else if (step.kind == program::Step::Kind::kConv) {
        auto key = nki::printNkiConv(item.conv, lim, "@SYMBOL@", {});
        if (!key.ok())
          return absl::UnimplementedError(nki::refusalMessage(item, key.status().message()));
        auto it = convText.find(*key);
        if (it == convText.end()) {
          std::string sym = absl::StrCat("fusec_conv", convText.size());
          it = convText.emplace(*key, sym).first;
          FUSEC_ASSIGN_OR_RETURN(std::string text,
                                 nki::printNkiConv(item.conv, lim, sym, commentFor("Conv", item.name, item.nodes)));
          absl::StrAppend(&kernels, text, "\n\n");
        }
        convOfStep.emplace_back(step.name, it->second);
      } else {
        return absl::UnimplementedError(nki::refusalMessage(item, "step kind not lowered"));
      }
    }
    kernels += "# Positions of the buffers each generated kernel returns (the others are its arguments).\n";
    kernels += "KERNEL_OUTPUTS = {\n";
    for (const auto &[sym, pos] : outputs) absl::StrAppend(&kernels, "    \"", sym, "\": ", pos, ",\n");
    kernels += "}\n# The GEMM kernel of each gemm step (by step name).\nGEMM_KERNELS = {\n";
    for (const auto &[stepName, sym] : gemmOfStep)
      absl::StrAppend(&kernels, "    \"", commentText(stepName), "\": ", sym, ",\n");
    kernels += "}\n# The convolution kernel of each conv step (by step name).\nCONV_KERNELS = {\n";
    for (const auto &[stepName, sym] : convOfStep)
      absl::StrAppend(&kernels, "    \"", commentText(stepName), "\": ", sym, ",\n");
    kernels += "}\n";
    out.steps = std::move(prog.steps);
    out.kernelNames = std::move(prog.kernelNames);
    out.numKernels = static_cast<int>(prog.kernels.size() + gemmText.size() + convText.size());
    out.library = nki::kKernelsFile;
    out.libraryRunsLibraryCalls = true;  // GEMM_KERNELS / CONV_KERNELS live in kernels.py
    out.files.emplace_back(nki::kKernelsFile, std::move(kernels));
    out.files.emplace_back(nki::kRunFile, nki::runPySource());
    return out;
  }

  absl::Status build(const BackendModule &, const std::string &, const std::string &,
                     const BackendOptions &, BuildOutcome *outcome) const override {
    // Nothing to build: NKI kernels are compiled by the Neuron compiler when
    // first called (or executed by the NumPy model).
    outcome->built = false;
    return absl::OkStatus();
  }
};

}  // namespace

const Backend &nkiBackend() {
  static const NkiBackend backend;
  return backend;
}

}  // namespace fusec::codegen
