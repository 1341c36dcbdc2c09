//===- FusionDump.cpp - --dump-fusion as text, JSON or Graphviz dot -------===//
#include "passes/fusion/FusionDump.h"

#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/Escape.h"

namespace fusec::passes {
namespace {

std::string humanBytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.2f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

std::string humanFlops(double f) {
  if (f >= 1e12) return absl::StrFormat("%.2f T", f / 1e12);
  if (f >= 1e9) return absl::StrFormat("%.2f G", f / 1e9);
  if (f >= 1e6) return absl::StrFormat("%.2f M", f / 1e6);
  if (f >= 1e3) return absl::StrFormat("%.1f k", f / 1e3);
  return absl::StrFormat("%.0f", f);
}

/// Model-controlled names (ops, refusal reasons naming nodes) as printed in
/// the text dump: controls and bidi controls escaped (support/Escape.h).
std::string names(const std::vector<std::string> &v) {
  std::string out;
  for (const std::string &s : v) absl::StrAppend(&out, out.empty() ? "" : ", ", printable(s));
  return out;
}

/// Escapes a string for a double-quoted dot label (after printable()).
std::string dotEscape(const std::string &s) {
  std::string o;
  for (char c : printable(s)) {
    if (c == '"' || c == '\\') o.push_back('\\');
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o.push_back(c);
  }
  return o;
}

std::string guardText(const std::vector<std::pair<std::string, bool>> &g) {
  std::string out = "when ";
  for (size_t i = 0; i < g.size(); ++i)
    absl::StrAppend(&out, i ? " and " : "", g[i].second ? "" : "not ", "'", printable(g[i].first), "'");
  return out;
}

}  // namespace

std::string runtimeConditionsText(const FusionPlan &plan) {
  // Consecutive kernels with one guard form one range.
  std::string out;
  for (size_t i = 0; i < plan.kernels.size();) {
    size_t j = i;
    while (j + 1 < plan.kernels.size() && plan.kernels[j + 1].guard == plan.kernels[i].guard) ++j;
    if (!plan.kernels[i].guard.empty())
      out += absl::StrCat("  condition known at run time: kernels ",
                          i == j ? plan.kernels[i].name
                                 : absl::StrCat(plan.kernels[i].name, "..", plan.kernels[j].name),
                          " run ", guardText(plan.kernels[i].guard), "\n");
    i = j + 1;
  }
  if (out.empty()) return out;
  return absl::StrCat(
      "\nrun-time conditions (If branches; the runtime reads each condition once per run and "
      "skips the steps whose guard fails; a cuda artifact with guards runs without CUDA graph "
      "capture):\n",
      out);
}

std::string fusionPlanToText(const FusionPlan &plan, const TargetSpec &target) {
  std::string out = absl::StrFormat(
      "fusion plan for target %s: %.2f TB/s, ridge point %.0f FLOP/B (bf16 matrix), %.0f FLOP/B "
      "(f32 vector)\n\n",
      target.name, target.memoryBandwidth / 1e12, target.ridgePoint(ir::DType::kBF16),
      target.vectorFlops(ir::DType::kF32) / target.memoryBandwidth);
  out += absl::StrFormat("%-22s %-11s %10s %11s %11s %9s %-8s %11s  %s\n", "kernel", "kind",
                         "FLOPs", "bytes", "unfused", "FLOP/B", "bound", "roofline", "ops");
  for (const Kernel &k : plan.kernels) {
    out += absl::StrFormat("%-22s %-11s %10s %11s %11s %9.2f %-8s %9.2fus  %s\n", k.name,
                           kernelKindName(k.kind), humanFlops(k.flops), humanBytes(k.bytes),
                           humanBytes(k.bytesUnfused), k.arithmeticIntensity,
                           k.memoryBound ? "memory" : "compute", k.rooflineUs, names(k.ops));
    out += absl::StrFormat("%-22s   why: %s\n", "", printable(k.reason));
    if (!k.refused.empty())
      out += absl::StrFormat("%-22s   REFUSED by the %s lowering: %s\n", "", target.backend,
                             printable(k.refused));
    if (k.kind == KernelKind::kAttention)
      out += absl::StrFormat("%-22s   score_mod: %s; mask: %s%s\n", "",
                             k.scoreMod.empty() ? "score" : printable(k.scoreMod),
                             k.mask.empty() ? "none" : printable(k.mask),
                             k.maskedRowsMean ? "; fully masked rows: mean of V (exporter's finite fill)" : "");
    if (k.kind == KernelKind::kAttention && !k.keyMask.empty())
      out += absl::StrFormat("%-22s   key mask: %s\n", "", printable(k.keyMask));
    if (k.kind == KernelKind::kAttention && k.keyTiles > 0)
      out += absl::StrFormat("%-22s   key tiles skipped by the mask: %d of %d (at 128x128%s)\n", "",
                             k.skippedKeyTiles, k.keyTiles,
                             k.keyMask.empty() || k.keyMask.find("(constant)") == std::string::npos
                                 ? ""
                                 : ", per batch, with the key mask");
    if (!k.guard.empty())
      out += absl::StrFormat("%-22s   runs only %s (condition known at run time)\n", "",
                             guardText(k.guard));
  }
  if (!plan.gemmMerges.empty()) {
    out += absl::StrFormat("\nGEMMs sharing an input (gemm-merge, %d decisions):\n", plan.gemmMerges.size());
    for (const GemmMergeNote &g : plan.gemmMerges)
      out += absl::StrFormat("  %s %s: %s\n", g.merged ? "merged" : "not merged", names(g.gemms),
                             printable(g.reason));
  }
  out += absl::StrFormat("\nnot fused (%d pairs):\n", plan.refusals.size());
  for (const Refusal &r : plan.refusals)
    out += absl::StrFormat("  %s -> %s: %s\n", printable(r.producer), printable(r.consumer),
                           printable(r.reason));
  out += runtimeConditionsText(plan);
  const std::vector<const Kernel *> refused = refusedKernels(plan);
  if (!refused.empty())
    out += absl::StrFormat("\nrefused by the %s lowering (%d kernels; the model cannot be compiled):\n",
                           target.backend, refused.size());
  for (const Kernel *k : refused)
    out += absl::StrFormat("  %s (%s): %s\n", k->name, names(k->ops), printable(k->refused));
  double total = 0;
  int64_t launches = 0, split = 0;
  for (const Kernel &k : plan.kernels) {
    total += k.rooflineUs;
    launches += k.launches;
    split += k.launches > 1;
  }
  out += absl::StrFormat(
      "\nsummary: %d ONNX nodes -> %d kernels; HBM traffic %s unfused -> %s fused (%.2fx less); "
      "roofline total %.2f us%s\n",
      plan.onnxNodes, plan.kernels.size(), humanBytes(plan.hbmBytesUnfused),
      humanBytes(plan.hbmBytesFused),
      plan.hbmBytesFused > 0 ? plan.hbmBytesUnfused / plan.hbmBytesFused : 0.0, total,
      split ? absl::StrFormat("; %d launches (%d library calls with their epilogue as a second kernel)",
                              launches, split)
            : std::string());
  return out;
}

std::string fusionPlanToJson(const FusionPlan &plan, const TargetSpec &target) {
  nlohmann::ordered_json j;
  j["target"] = plan.target;
  j["memory_bandwidth_bytes_per_s"] = target.memoryBandwidth;
  j["ridge_point_bf16"] = target.ridgePoint(ir::DType::kBF16);
  j["kernels"] = nlohmann::ordered_json::array();
  for (const Kernel &k : plan.kernels) {
    nlohmann::ordered_json jk;
    jk["name"] = k.name;
    jk["kind"] = kernelKindName(k.kind);
    jk["ops"] = k.ops;
    jk["op_types"] = k.opTypes;
    jk["flops"] = k.flops;
    jk["bytes"] = k.bytes;
    jk["launches"] = k.launches;
    jk["bytes_unfused"] = k.bytesUnfused;
    jk["arithmetic_intensity"] = k.arithmeticIntensity;
    jk["bound"] = k.memoryBound ? "memory" : "compute";
    jk["roofline_us"] = k.rooflineUs;
    jk["reason"] = k.reason;
    if (!k.refused.empty()) jk["refused"] = k.refused;
    if (!k.guard.empty()) {
      jk["guard"] = nlohmann::ordered_json::array();
      for (const auto &[cond, when] : k.guard) jk["guard"].push_back({{"cond", cond}, {"when", when}});
    }
    if (k.kind == KernelKind::kAttention) {
      jk["score_mod"] = k.scoreMod.empty() ? "score" : k.scoreMod;
      jk["mask"] = k.mask;
      jk["masked_rows"] = k.maskedRowsMean ? "mean" : "nan";
      jk["key_mask"] = k.keyMask;
      jk["key_tiles"] = k.keyTiles;
      jk["key_tiles_skipped"] = k.skippedKeyTiles;
    }
    j["kernels"].push_back(jk);
  }
  j["refusals"] = nlohmann::ordered_json::array();
  for (const Refusal &r : plan.refusals)
    j["refusals"].push_back({{"producer", r.producer}, {"consumer", r.consumer}, {"reason", r.reason}});
  j["gemm_merges"] = nlohmann::ordered_json::array();
  for (const GemmMergeNote &g : plan.gemmMerges)
    j["gemm_merges"].push_back({{"gemms", g.gemms}, {"merged", g.merged}, {"reason", g.reason}});
  j["summary"] = {{"onnx_nodes", plan.onnxNodes},
                  {"kernels", plan.kernels.size()},
                  {"hbm_bytes_unfused", plan.hbmBytesUnfused},
                  {"hbm_bytes_fused", plan.hbmBytesFused},
                  {"refused_kernels", refusedKernels(plan).size()}};
  // ensure_ascii: controls and bidi controls in names become \uXXXX;
  // replace: a name that is not UTF-8 must not make dump() throw.
  return j.dump(2, ' ', true, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string fusionPlanToDot(const FusionPlan &plan, const ir::Graph &graph) {
  std::map<std::string, const Kernel *> kernelOf;  // node name -> kernel
  for (const Kernel &k : plan.kernels)
    for (const std::string &op : k.ops) kernelOf[op] = &k;
  std::map<std::string, std::string> nodeId;  // node name -> dot id
  std::vector<ir::Node *> nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) nodeId[nodes[i]->name()] = absl::StrCat("n", i);

  std::string out = "digraph fusion {\n  rankdir=TB;\n  node [shape=box, style=filled, fillcolor=white, fontname=\"Helvetica\"];\n";
  for (const Kernel &k : plan.kernels) {
    out += absl::StrFormat(
        "  subgraph cluster_%s {\n    style=filled; fillcolor=\"%s\";\n    label=\"%s\\n%s, %s, "
        "%.1f FLOP/B, %.2f us\";\n",
        k.name, !k.refused.empty() ? "#ea9999" : k.memoryBound ? "#cfe2f3" : "#f9cb9c",
        dotEscape(k.refused.empty() ? k.name : absl::StrCat(k.name, " REFUSED: ", k.refused)),
        kernelKindName(k.kind), k.memoryBound ? "memory-bound" : "compute-bound", k.arithmeticIntensity,
        k.rooflineUs);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      auto it = nodeId.find(k.ops[i]);
      if (it == nodeId.end()) continue;
      out += absl::StrFormat("    %s [label=\"%s\\n%s\"];\n", it->second, dotEscape(k.opTypes[i]),
                             dotEscape(k.ops[i]));
    }
    out += "  }\n";
  }
  // Nodes outside kernels (views) in grey.
  for (ir::Node *n : nodes)
    if (!kernelOf.count(n->name()))
      out += absl::StrFormat("  %s [label=\"%s\\n%s\", fillcolor=\"#eeeeee\", style=\"filled,dashed\"];\n",
                             nodeId[n->name()], dotEscape(n->opType()), dotEscape(n->name()));
  std::set<std::pair<std::string, std::string>> refused;
  for (const Refusal &r : plan.refusals) refused.insert({r.producer, r.consumer});
  for (ir::Node *n : nodes) {
    std::set<std::string> seen;
    for (const ir::Value *in : n->inputs()) {
      if (!in || !in->producer()) continue;
      const std::string &p = in->producer()->name();
      if (!seen.insert(p).second) continue;
      out += absl::StrFormat("  %s -> %s;\n", nodeId[p], nodeId[n->name()]);
    }
  }
  for (const Refusal &r : plan.refusals) {
    if (!nodeId.count(r.producer) || !nodeId.count(r.consumer)) continue;
    out += absl::StrFormat("  %s -> %s [style=dashed, color=red, constraint=false, tooltip=\"%s\"];\n",
                           nodeId[r.producer], nodeId[r.consumer], dotEscape(r.reason));
  }
  out += "}\n";
  return out;
}

}  // namespace fusec::passes
