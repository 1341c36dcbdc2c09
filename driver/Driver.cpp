//===- Driver.cpp - compile(model, options): the one compile flow ---------===//
//
// Import, target resolution, passes, and the backend's emission. The
// backend dispatch (emitArtifact) is the driver's only contact with
// codegen.
//
//===----------------------------------------------------------------------===//
#include "driver/Driver.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/Backend.h"
#include "codegen/artifact/ArtifactWriter.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/OpTable.h"
#include "passes/Pipeline.h"
#include "program/Symbolic.h"
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
                          Compilation &c, const program::ShapeProbes *probes = nullptr, bool checkOnly = false) {
  if (!hasBackend(c.target.target)) return backendMissing(c.target.target);
  artifact::ArtifactOptions ao;
  ao.target = c.target.target;
  // The arch the user named; without --arch the backend picks its default
  // from the device (cuda: sm_90a for a Hopper device; nki) or the host
  // (cpu: the host CPU, not the roofline device's arch).
  ao.arch = options.arch.empty() && c.target.target != "nki" ? std::string() : c.target.arch;
  ao.precision = options.precision;
  ao.allowTf32 = options.allowTf32;
  ao.runNvcc = options.runNvcc;
  ao.emitIr = options.emitIr;
  ao.modelPath = modelPath;
  ao.probes = probes;
  ao.checkOnly = checkOnly;
  for (const auto &[name, t] : c.boundValues)
    ao.boundInputs.push_back({name, ir::dtypeName(t.dtype()), t.shape(), artifact::boundValueDigest(t)});
  ao.modelName = !options.modelName.empty()
                     ? options.modelName
                     : std::filesystem::path(modelPath).parent_path().filename().string();
  artifact::ArtifactSummary summary;
  FUSEC_RETURN_IF_ERROR(artifact::writeArtifact(*c.graph, c.context.fusionPlan, c.context.target,
                                                ao, options.output, &summary));
  if (checkOnly) return absl::OkStatus();
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

/// Backends that compile dynamic shapes (program/Symbolic.h).
bool supportsDynamicShapes(const std::string &target) { return target == "cpu" || target == "cuda"; }

/// True when a graph input that needs data has a dim that is a symbol.
bool hasSymbolicInputs(const ir::Graph &g) {
  for (const ir::Value *v : g.inputs()) {
    if (v->isConstant() || !v->type().rankKnown) continue;
    for (const ir::Dim &d : v->type().shape)
      if (d.isSymbolic()) return true;
  }
  return false;
}

/// The symbols of \p g's inputs that stay dynamic, with their ranges from
/// --shape NAME=MIN..MAX; \p fixed gets the symbols a range pins (N..N).
absl::StatusOr<std::vector<program::ShapeSymbol>> dynamicSymbolsOf(const ir::Graph &g, const CompileOptions &o,
                                                                   std::map<std::string, int64_t> &fixed,
                                                                   std::map<std::string, std::string> &same) {
  std::vector<program::ShapeSymbol> syms;
  std::vector<bool> ranged;            // some --shape gave the symbol a range
  std::vector<std::string> rangedAt;   // the input dim that gave it first
  std::vector<const DimRange *> firstRange;  // and the range it gave
  std::map<std::string, size_t> pos;
  for (const auto &[name, ranges] : o.inputRanges) {
    const ir::Value *v = g.findValue(name);
    bool isInput = false;
    for (const ir::Value *in : g.inputs()) isInput = isInput || in == v;
    if (!v || !isInput)
      return absl::InvalidArgumentError(absl::StrCat("--shape names '", name, "', which is not a graph input"));
    if (v->type().rankKnown && v->type().rank() != static_cast<int64_t>(ranges.size()))
      return absl::InvalidArgumentError(absl::StrCat("--shape ", name, ": ", ranges.size(), " dims given, the input has ",
                                                     v->type().rank(), " (", v->type().str(), ")"));
  }
  for (const ir::Value *v : g.inputs()) {
    if (v->isConstant()) continue;
    if (!v->type().rankKnown)
      return absl::InvalidArgumentError(absl::StrCat("input '", v->name(), "' has no known rank; bind it with --shape"));
    auto given = o.inputRanges.find(v->name());
    for (size_t i = 0; i < v->type().shape.size(); ++i) {
      const ir::Dim &d = v->type().shape[i];
      const DimRange *r = given == o.inputRanges.end() ? nullptr : &given->second[i];
      if (d.isStatic()) {
        if (r && (r->min > d.value || r->max < d.value))
          return absl::InvalidArgumentError(absl::StrCat("--shape ", v->name(), ": dim ", i, " is ", d.value,
                                                         " in the model, outside ", r->min, "..", r->max));
        continue;
      }
      if (!d.isSymbolic())
        return absl::InvalidArgumentError(absl::StrCat("input '", v->name(), "' dim ", i,
                                                       " has no name to bind at run time; bind it with --shape"));
      if (r && !r->same.empty()) {
        if (r->same != d.symbol) same[d.symbol] = r->same;
        continue;
      }
      auto it = pos.find(d.symbol);
      if (it == pos.end()) {
        it = pos.emplace(d.symbol, syms.size()).first;
        program::ShapeSymbol fresh{d.symbol};
        fresh.max = program::kMaxSymbolExtent;  // narrowed by ranges, else the default below
        syms.push_back(fresh);
        ranged.push_back(false);
        rangedAt.emplace_back();
        firstRange.push_back(nullptr);
      }
      program::ShapeSymbol &s = syms[it->second];
      if (!r) continue;
      if (r->max > program::kMaxSymbolExtent)
        return absl::InvalidArgumentError(absl::StrCat("--shape ", v->name(), ": dim ", i, " ('", s.name,
                                                       "') ranges up to ", r->max, "; at most ",
                                                       program::kMaxSymbolExtent));
      // Two --shape options that range one symbol must agree: a silent
      // intersection would compile a narrower range than one of them asks
      // for, and the artifact would refuse shapes the user meant to allow.
      const std::string where = absl::StrCat(v->name(), " dim ", i);
      auto show = [](int64_t lo, int64_t hi, int64_t opt) {
        return absl::StrCat(lo, "..", hi, opt ? absl::StrCat("@", opt) : "");
      };
      if (ranged[it->second]) {
        const DimRange &first = *firstRange[it->second];
        if (first.min != r->min || first.max != r->max || (r->opt && first.opt && r->opt != first.opt))
          return absl::InvalidArgumentError(absl::StrCat(
              "--shape: symbol '", s.name, "' is given two ranges, ", show(first.min, first.max, first.opt), " (",
              rangedAt[it->second], ") and ", show(r->min, r->max, r->opt), " (", where,
              "); give the same range for every dim that shares it"));
      } else {
        rangedAt[it->second] = where;
        firstRange[it->second] = r;
      }
      ranged[it->second] = true;
      s.min = std::max(s.min, r->min);
      s.max = std::min(s.max, r->max);
      if (r->opt) s.opt = r->opt;
      if (s.min > s.max)
        return absl::InvalidArgumentError(
            absl::StrCat("--shape: the range given for symbol '", s.name, "' is empty"));
    }
  }
  // NAME=s72x...: the dim's own symbol is s72 (an exporter named one dim
  // twice); every name must then be a symbol some other dim has.
  for (const auto &[alias, target] : same) {
    if (!pos.count(target))
      return absl::InvalidArgumentError(absl::StrCat("--shape: '", target, "' (for symbol '", alias,
                                                     "') is not a symbolic dim of another input"));
    // An alias drops the symbol's own range: refuse one that was ranged
    // (input_ids=1..8x1..512 with attention_mask=seqx...: 'batch' made
    // equal to 'seq' would lose 1..8).
    if (auto it = pos.find(alias); it != pos.end() && ranged[it->second])
      return absl::InvalidArgumentError(absl::StrCat(
          "--shape: symbol '", alias, "' is given as equal to '", target, "', but ", rangedAt[it->second],
          " gives '", alias, "' its own range; give one or the other"));
    if (auto it = pos.find(alias); it != pos.end()) {
      syms[it->second].name.clear();  // merged into target
      pos.erase(it);
    }
  }
  for (size_t i = 0; i < syms.size(); ++i)
    if (!ranged[i]) syms[i].max = program::kDefaultSymbolMax;
  std::vector<program::ShapeSymbol> out;
  for (const program::ShapeSymbol &s : syms) {
    if (s.name.empty()) continue;
    if (s.max > program::kMaxSymbolExtent)
      return absl::InvalidArgumentError(absl::StrCat("symbol '", s.name, "': at most ", program::kMaxSymbolExtent));
    if (s.min == s.max) fixed[s.name] = s.min;
    else out.push_back(s);
  }
  return out;
}

/// The values upstream of \p names in \p g (themselves included) that are
/// computed from a graph input or its shape (through Shape or Size), as
/// opposed to from constants only; one walk shares its memo across names.
std::vector<std::string> shapeDerivedAncestors(const ir::Graph &g, const std::vector<std::string> &names) {
  std::map<const ir::Value *, bool> memo;
  std::vector<std::string> out;
  std::function<bool(const ir::Value *)> derived = [&](const ir::Value *v) -> bool {
    if (!v || v->isConstant()) return false;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    memo[v] = false;  // cycles cannot happen in a DAG; this only stops re-entry
    const ir::Node *p = v->producer();
    bool d = !p;  // a graph input
    if (p) {
      if (p->kind() == ir::OpKind::kShape || p->kind() == ir::OpKind::kSize || p->kind() == ir::OpKind::kRange)
        d = true;
      // A ConstantOfShape whose shape is computed: its size follows the
      // shapes (the [S, S] a causal Trilu starts from).
      if (p->kind() == ir::OpKind::kConstantOfShape && p->numInputs() > 0 && p->input(0) &&
          !p->input(0)->isConstant())
        d = true;
      // Metadata operands (a Range's limit, a Reshape's shape) fold per
      // probe and decide only shapes: the walk does not enter them.
      for (int i = 0; i < static_cast<int>(p->inputs().size()); ++i)
        if (!ir::isMetadataOperand(p->kind(), i) && p->kind() != ir::OpKind::kRange)
          d = derived(p->inputs()[i]) || d;
    }
    memo[v] = d;
    if (d && p) out.push_back(v->name());
    return d;
  };
  for (const std::string &name : names)
    if (const ir::Value *v = g.findValue(name)) derived(v);
  return out;
}

/// "input_ids=<batch>x<seq>": a --shape for the first input with symbolic dims.
std::string exampleShape(const ir::Graph &g) {
  for (const ir::Value *v : g.inputs()) {
    if (v->isConstant()) continue;
    std::vector<std::string> dims;
    bool symbolic = false;
    for (const ir::Dim &d : v->type().shape) {
      symbolic = symbolic || d.isSymbolic();
      dims.push_back(d.isStatic() ? std::to_string(d.value) : absl::StrCat("<", d.symbol, ">"));
    }
    if (symbolic) return absl::StrCat(v->name(), "=", absl::StrJoin(dims, "x"));
  }
  return "INPUT=DIMS";
}

/// The --shape map that binds every input of \p g: symbols from \p binding.
std::map<std::string, std::vector<int64_t>> shapesFor(const ir::Graph &g,
                                                      const std::map<std::string, int64_t> &binding,
                                                      const std::map<std::string, std::string> &same,
                                                      const CompileOptions &o) {
  std::map<std::string, std::vector<int64_t>> shapes = o.inputShapes;
  for (const ir::Value *v : g.inputs()) {
    if (v->isConstant() || shapes.count(v->name())) continue;
    std::vector<int64_t> dims;
    for (const ir::Dim &d : v->type().shape) {
      auto alias = same.find(d.symbol);
      dims.push_back(d.isStatic() ? d.value : binding.at(alias == same.end() ? d.symbol : alias->second));
    }
    shapes[v->name()] = dims;
  }
  return shapes;
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
  ctx.noFold = options.noFold;
  ctx.debugOnly = options.debugOnly;
  ctx.verifyEach = options.verifyEach;
  ctx.precision = options.precision;
  ctx.target = target.device;
  // One legality rule: fusion asks the backend's lowering for this device
  // before merging and for every final group (none for backends that are
  // not available yet).
  // The legality sees the arch the code will be built for (--arch, or the
  // backend's default for the device): lowering choices depend on it.
  if (auto backend = codegen::backendFor(target.target); backend.ok()) {
    passes::TargetSpec device = target.device;
    absl::StatusOr<std::string> arch = (*backend)->resolveArch(options.arch, device);
    // An --arch the backend refuses is an error in every mode (--dump-fusion
    // too, not only -o; red team, stop 32).
    if (!arch.ok() && !options.arch.empty()) return arch.status();
    if (arch.ok()) device.arch = *arch;
    ctx.legality = codegen::legalityFor(**backend, std::move(device));
  }
  ctx.fusionPlan.onnxNodes = graph.onnxNodeCount();
  FUSEC_ASSIGN_OR_RETURN(
      auto pipeline, passes::parsePipeline(passes::pipelineString(pipelineFor(options, target))));
  return passes::runPasses(graph, ctx, pipeline);
}

absl::Status optimize(ir::Graph &graph, const CompileOptions &options, passes::PassContext &ctx) {
  FUSEC_ASSIGN_OR_RETURN(passes::ResolvedTarget target, resolveOptions(options));
  return optimize(graph, options, target, ctx);
}

/// The number of elements Slice keeps on an axis of extent \p d with
/// constant \p start, \p end and \p step (ONNX Slice's clamping).
static int64_t sliceLength(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (step == 0) return 0;
  auto norm = [&](int64_t v) { return v < 0 ? v + d : v; };
  int64_t s = norm(start), e = norm(end);
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    return e > s ? (e - s + step - 1) / step : 0;
  }
  s = std::clamp<int64_t>(s, -1, d - 1);
  e = std::clamp<int64_t>(e, -1, d - 1);
  return s > e ? (s - e + (-step) - 1) / (-step) : 0;
}

/// Slices whose length on a symbolic axis is clamped inside the symbol's
/// range (x[:, :3] on seq in 1..64 keeps min(seq, 3) positions) must be
/// refused: the fit sees only the probes, and a clamp at or below the
/// smallest probe looks constant there. A Slice's length is accepted when
/// it is the axis' extent, or one constant, at every extent of the range
/// (checked up to the probes' cap); anything else names the Slice and the
/// extent from which it is constant.
static absl::Status checkSliceClamps(const ir::Graph &g, const std::vector<program::ShapeSymbol> &symbols,
                              const std::map<std::string, std::string> &same) {
  std::map<std::string, const program::ShapeSymbol *> byName;
  for (const program::ShapeSymbol &s : symbols) byName[s.name] = &s;
  auto ints = [](const ir::Value *v) -> std::optional<std::vector<int64_t>> {
    if (!v || !v->isConstant()) return std::nullopt;
    return v->constant()->toInts();
  };
  for (const ir::Node *n : g.nodes()) {
    if (n->kind() != ir::OpKind::kSlice || n->inputs().size() < 3 || !n->inputs()[0]) continue;
    const ir::Value *x = n->inputs()[0];
    if (!x->type().rankKnown) continue;
    auto starts = ints(n->inputs()[1]), ends = ints(n->inputs()[2]);
    if (!starts || !ends || starts->size() != ends->size()) continue;
    std::vector<int64_t> axes, steps(starts->size(), 1);
    if (n->inputs().size() > 3 && n->inputs()[3]) {
      auto a = ints(n->inputs()[3]);
      if (!a) continue;
      axes = *a;
    } else {
      for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (n->inputs().size() > 4 && n->inputs()[4]) {
      auto st = ints(n->inputs()[4]);
      if (!st) continue;
      steps = *st;
    }
    if (axes.size() != starts->size() || steps.size() != starts->size()) continue;
    const int64_t rank = static_cast<int64_t>(x->type().shape.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (axis < 0 || axis >= rank) continue;
      const ir::Dim &dim = x->type().shape[axis];
      if (!dim.isSymbolic()) continue;
      std::string name = dim.symbol;
      if (auto it = same.find(name); it != same.end()) name = it->second;
      auto it = byName.find(name);
      if (it == byName.end()) continue;
      const program::ShapeSymbol &s = *it->second;
      const int64_t hi = std::min(s.max, program::kMaxProbeExtent);
      bool identity = true, constant = true;
      const int64_t first = sliceLength(s.min, (*starts)[i], (*ends)[i], steps[i]);
      for (int64_t d = s.min; d <= hi; ++d) {
        const int64_t len = sliceLength(d, (*starts)[i], (*ends)[i], steps[i]);
        identity = identity && len == d;
        constant = constant && len == first;
        if (!identity && !constant) break;
      }
      if (identity || constant) continue;
      // The extent from which the length stops changing (a clamp's K).
      int64_t from = hi;
      const int64_t last = sliceLength(hi, (*starts)[i], (*ends)[i], steps[i]);
      while (from > s.min && sliceLength(from - 1, (*starts)[i], (*ends)[i], steps[i]) == last) --from;
      if (last == hi || from >= hi)
        continue;  // grows with the extent (x[:, 1:]): the fit decides, and refuses what is no product
      return absl::FailedPreconditionError(absl::StrCat(
          "dynamic shapes: ", n->describe(), " keeps ", last, " positions of axis ", axis, " ('", s.name,
          "') only when '", s.name, "' >= ", from, ", fewer below (its range is ", s.min, "..", s.max,
          "); give '", s.name, "' a minimum of at least ", from, " with --shape INPUT=...", from, "..", s.max,
          "..., or bind it"));
    }
  }
  return absl::OkStatus();
}

/// FusedAttention nodes (by name) whose recognised mask or score
/// expression differs between the probe graphs \p sp: a mask folded from
/// the shapes can look different at small extents (a sliding window as
/// wide as the sequence is plain causal there).
static std::vector<std::string> attentionsThatDiffer(const program::ShapeProbes &sp) {
  std::vector<std::string> out;
  if (sp.graphs.empty()) return out;
  for (const ir::Node *n : sp.graphs[0]->nodes()) {
    if (n->opType() != "FusedAttention") continue;
    for (size_t p = 1; p < sp.graphs.size(); ++p) {
      const ir::Node *o = nullptr;
      for (const ir::Node *m : sp.graphs[p]->nodes())
        if (m->name() == n->name() && m->opType() == "FusedAttention") o = m;
      if (o && (o->attrS("mask") != n->attrS("mask") || o->attrS("score_mod") != n->attrS("score_mod") ||
                o->attrS("masked_rows") != n->attrS("masked_rows"))) {
        out.push_back(n->name());
        break;
      }
    }
  }
  return out;
}

/// The values of \p g's elementwise and Trilu ops of rank >= 2 that feed
/// the scores of the attention whose Softmax is \p softmax (the mask an
/// exporter builds from positions: LessOrEqual, Sub, Less, And, Where of
/// [S, 1] and [1, S] aranges, or Trilu of a ConstantOfShape), up to the
/// Q·Kᵀ MatMul.
static std::vector<std::string> maskOpsOfSoftmax(const ir::Node *softmax) {
  std::vector<std::string> out;
  std::set<const ir::Value *> seen;
  std::vector<const ir::Value *> stack{softmax->input(0)};
  while (!stack.empty() && seen.size() < 4096) {
    const ir::Value *v = stack.back();
    stack.pop_back();
    if (!v || !seen.insert(v).second || !v->producer()) continue;
    const ir::Node *n = v->producer();
    if (n->kind() == ir::OpKind::kMatMul) continue;  // Q·Kᵀ and what computes Q and K
    if ((ir::opInfo(n->kind()).fusionClass == ir::FusionClass::kElementwise || n->kind() == ir::OpKind::kTrilu) &&
        v->type().rankKnown && v->type().rank() >= 2)
      out.push_back(v->name());
    for (const ir::Value *in : n->inputs()) stack.push_back(in);
  }
  return out;
}

/// The Softmax of the attention whose P·V MatMul is named \p pvName in
/// \p g (through float Casts), or null.
static const ir::Node *softmaxOfPv(const ir::Graph &g, const std::string &pvName) {
  const ir::Node *pv = nullptr;
  for (const ir::Node *n : g.nodes())
    if (n->name() == pvName && n->kind() == ir::OpKind::kMatMul) pv = n;
  if (!pv) return nullptr;
  const ir::Value *p = pv->input(0);
  while (p && p->producer() && p->producer()->kind() == ir::OpKind::kCast) p = p->producer()->input(0);
  const ir::Node *softmax = p ? p->producer() : nullptr;
  return softmax && softmax->kind() == ir::OpKind::kSoftmax ? softmax : nullptr;
}

static std::vector<std::string> maskOpsOf(const ir::Graph &g, const std::string &pvName) {
  const ir::Node *softmax = softmaxOfPv(g, pvName);
  return softmax ? maskOpsOfSoftmax(softmax) : std::vector<std::string>{};
}

/// The mask ops (maskOpsOfSoftmax) of every Softmax of \p g that feeds a
/// MatMul, restricted to those computed from the shapes or a graph input.
/// Under dynamic shapes they are kept from folding from the first probe
/// on: a mask folded at the probes' extents and matched as a pattern is
/// proven only at those extents (a sliding window wider than every probe
/// folds to plain causal everywhere, and would be dropped), while the op by
/// op translation holds at every extent. What does not translate stays a
/// mask computed at run time (correct, no tiles skipped).
static std::vector<std::string> shapeDerivedMaskOps(const ir::Graph &g) {
  std::vector<std::string> ops;
  for (const ir::Node *n : g.nodes()) {
    if (n->kind() != ir::OpKind::kSoftmax) continue;
    bool feedsMatMul = false;
    for (const ir::Node *u : n->output(0)->operandUsers())
      feedsMatMul = feedsMatMul || u->kind() == ir::OpKind::kMatMul || u->kind() == ir::OpKind::kCast;
    if (!feedsMatMul) continue;
    for (std::string &v : maskOpsOfSoftmax(n)) ops.push_back(std::move(v));
  }
  if (ops.empty()) return ops;
  const std::vector<std::string> derived = shapeDerivedAncestors(g, ops);
  const std::set<std::string> keep(derived.begin(), derived.end());
  std::vector<std::string> out;
  for (const std::string &v : ops)
    if (keep.count(v)) out.push_back(v);
  return out;
}

static absl::StatusOr<Compilation> compileDynamic(const std::string &modelPath, const CompileOptions &options,
                                                  const Compilation &imported) {
  std::map<std::string, int64_t> fixed;
  std::map<std::string, std::string> same;  // symbol -> the symbol it equals (--shape NAME=s72x...)
  FUSEC_ASSIGN_OR_RETURN(std::vector<program::ShapeSymbol> symbols,
                         dynamicSymbolsOf(*imported.graph, options, fixed, same));
  FUSEC_RETURN_IF_ERROR(checkSliceClamps(*imported.graph, symbols, same));
  FUSEC_ASSIGN_OR_RETURN(auto bindings, program::probeBindings(symbols, program::staticDimsOf(*imported.graph)));
  CompileOptions po = options;
  po.inputRanges.clear();
  po.output.clear();
  po.stopAfter = Stage::kPasses;
  po.onImported = nullptr;
  po.onOptimized = nullptr;
  for (const std::string &v : shapeDerivedMaskOps(*imported.graph)) po.noFold.insert(v);
  // Rounds: compile every probe; data that folds to different constants at
  // different probes is kept for run time, and the probes are compiled
  // again, until no such constant is left (each round moves one step up
  // the chain that computes it from the shapes).
  constexpr int kMaxRounds = 8;
  std::vector<Compilation> probes;
  program::ShapeProbes sp;
  for (int round = 0;; ++round) {
    probes.clear();
    sp = program::ShapeProbes{};
    sp.symbols = symbols;
    sp.modelDims = program::staticDimsOf(*imported.graph);
    sp.bindings = bindings;
    for (const auto &b : bindings) {
      std::map<std::string, int64_t> all = b;
      all.insert(fixed.begin(), fixed.end());
      po.inputShapes = shapesFor(*imported.graph, all, same, options);
      absl::StatusOr<Compilation> pc = compile(modelPath, po);
      if (!pc.ok())
        return absl::Status(
            pc.status().code(),
            absl::StrCat("dynamic shapes: compiling for ", absl::StrJoin(b, ", ", absl::PairFormatter("=")), ": ",
                         pc.status().message(),
                         "\n(the model is compiled at several extents of its dynamic dims to check that one "
                         "artifact serves them all; if it only works for some, bind the dims with --shape "
                         "INPUT=DIMS, e.g. --shape ", exampleShape(*imported.graph), ", or give a range "
                         "INPUT=MIN..MAX per dim)"));
      probes.push_back(std::move(*pc));
    }
    for (const Compilation &pc : probes) {
      sp.graphs.push_back(pc.graph.get());
      sp.kernelNames.push_back(passes::kernelNames(pc.context.fusionPlan));
    }
    std::vector<std::string> dependent = program::bindingDependentConstants(sp);
    // Attention masks recognised differently at different probes: keep
    // their elementwise ops from folding, once, so that the rewrite
    // translates them op by op instead of matching folded constants.
    std::vector<std::string> maskOps;
    for (const std::string &a : attentionsThatDiffer(sp))
      for (const std::string &v : maskOpsOf(*imported.graph, a))
        if (!po.noFold.count(v)) maskOps.push_back(v);
    if (std::find(options.debugOnly.begin(), options.debugOnly.end(), "dynamic-shapes") != options.debugOnly.end())
      std::fprintf(stderr, "[dynamic-shapes] round %d: %zu probes; data folded differently: %s; mask ops kept: %s\n",
                   round, bindings.size(), dependent.empty() ? "none" : absl::StrJoin(dependent, ", ").c_str(),
                   maskOps.empty() ? "none" : absl::StrJoin(maskOps, ", ").c_str());
    if (dependent.empty() && maskOps.empty()) break;
    if (round + 1 == kMaxRounds)
      return absl::FailedPreconditionError(absl::StrCat(
          "dynamic shapes: constants still depend on the shapes after ", kMaxRounds, " rounds: '",
          absl::StrJoin(dependent, "', '"), "'; bind the dims with --shape"));
    // Keep the whole chain that computes them from the shapes (the nodes
    // between them and a Shape, Size or graph input in the imported
    // graph), not one link per round.
    if (!dependent.empty())
      for (const std::string &up : shapeDerivedAncestors(*imported.graph, dependent)) po.noFold.insert(up);
    po.noFold.insert(dependent.begin(), dependent.end());
    po.noFold.insert(maskOps.begin(), maskOps.end());
  }
  Compilation c = std::move(probes[0]);
  c.boundValues = imported.boundValues;
  for (const program::ShapeSymbol &s : symbols)
    c.dynamicSymbols.push_back(absl::StrCat(s.name, " ", s.min, "..", s.max, s.opt ? absl::StrCat("@", s.opt) : ""));
  c.probes = static_cast<int>(bindings.size());
  c.keptForRunTime.assign(po.noFold.begin(), po.noFold.end());
  if (options.onOptimized) options.onOptimized(*c.graph, c.context);
  if (options.output.empty()) {
    // --dump-fusion / --emit: the plan only, and whether -o would write it
    // (the backend's own limits on what may vary at run time).
    if (hasBackend(c.target.target))
      if (absl::Status st = emitArtifact(modelPath, options, c, &sp, /*checkOnly=*/true); !st.ok())
        c.dynamicArtifactError = std::string(st.message());
    return c;
  }
  FUSEC_RETURN_IF_ERROR(emitArtifact(modelPath, options, c, &sp));
  return c;
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

  if (writeArtifact && supportsDynamicShapes(c.target.target) &&
      (hasSymbolicInputs(*c.graph) || !options.inputRanges.empty()))
    return compileDynamic(modelPath, options, c);
  // The plan without an artifact (--dump-fusion, --emit=optimized-ir) of a
  // model whose dims stay dynamic: the plan the artifact would get (its
  // first probe's), so the dump explains what -o writes. Where probing
  // fails, the plan over the symbolic shapes, as before (it says what is
  // refused for want of static shapes).
  const bool planOnly = options.stopAfter == Stage::kArtifact && options.output.empty();
  if (planOnly && supportsDynamicShapes(c.target.target) && hasSymbolicInputs(*c.graph)) {
    // The flags themselves (ranges, aliases) are checked first: an error in
    // them is the user's to fix, not a reason to fall back.
    std::map<std::string, int64_t> fixed;
    std::map<std::string, std::string> same;
    FUSEC_RETURN_IF_ERROR(dynamicSymbolsOf(*c.graph, options, fixed, same).status());
    absl::StatusOr<Compilation> d = compileDynamic(modelPath, options, c);
    if (d.ok()) return d;
    c.dynamicPlanError = std::string(d.status().message());
  }
  c.pipeline = pipelineFor(options, c.target);
  FUSEC_RETURN_IF_ERROR(optimize(*c.graph, options, c.target, c.context));
  if (options.onOptimized) options.onOptimized(*c.graph, c.context);
  // A target without dynamic shapes (nki): the dump says that -o refuses
  // the dims left unbound, as it does for the others' refusals.
  if (planOnly && !supportsDynamicShapes(c.target.target) && hasBackend(c.target.target) &&
      hasSymbolicInputs(*c.graph))
    if (absl::Status st = emitArtifact(modelPath, options, c, nullptr, /*checkOnly=*/true); !st.ok())
      c.dynamicArtifactError = std::string(st.message());
  if (!writeArtifact) return c;
  FUSEC_RETURN_IF_ERROR(emitArtifact(modelPath, options, c));
  return c;
}

}  // namespace fusec::driver
