//===- MemoryPlan.cpp - Buffers, storage classes and the activation arena -===//
//
// See MemoryPlan.h. The arena placement is the greedy-by-size strategy of
// TensorFlow Lite's arena planner ("Efficient Memory Management for Deep
// Neural Net Inference", Pisarchyk and Lee, 2020, section 4.3): biggest
// buffers first, each at the best-fitting gap among the buffers already
// placed whose lifetimes intersect its own.
//
//===----------------------------------------------------------------------===//
#include "program/MemoryPlan.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "program/Lowering.h"
#include "runtime/ArtifactFormat.h"
#include "support/Status.h"

namespace fusec::program {

using ir::Value;

const char *storageName(Storage s) {
  switch (s) {
    case Storage::kInput: return artifact_format::kStorageInput;
    case Storage::kOutput: return artifact_format::kStorageOutput;
    case Storage::kWeight: return artifact_format::kStorageWeight;
    case Storage::kArena: return artifact_format::kStorageArena;
    case Storage::kAlias: return artifact_format::kStorageAlias;
  }
  return "?";
}

const char *manifestDTypeName(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return "f32";
    case ir::DType::kF16: return "f16";
    case ir::DType::kBF16: return "bf16";
    case ir::DType::kF64: return "f64";
    case ir::DType::kI64: return "i64";
    case ir::DType::kI32: return "i32";
    case ir::DType::kI8: return "i8";
    case ir::DType::kU8: return "u8";
    case ir::DType::kBool: return "bool";
    case ir::DType::kI16: return "i16";
    case ir::DType::kU16: return "u16";
    case ir::DType::kU32: return "u32";
    case ir::DType::kU64: return "u64";
    case ir::DType::kF8E4M3FN: return "f8e4m3fn";
    case ir::DType::kF8E4M3FNUZ: return "f8e4m3fnuz";
    case ir::DType::kF8E5M2: return "f8e5m2";
    case ir::DType::kF8E5M2FNUZ: return "f8e5m2fnuz";
    default: return nullptr;
  }
}

int64_t alignUp(int64_t n, int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

int MemoryPlan::bufferId(const Value *v) const {
  auto it = idOf.find(v);
  return it == idOf.end() ? -1 : it->second;
}

namespace {

std::string mib(int64_t bytes) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace

std::string MemoryPlan::summary() const {
  int counts[5] = {0, 0, 0, 0, 0};
  for (const PlannedBuffer &b : buffers) ++counts[static_cast<int>(b.storage)];
  double saved = arenaNaiveBytes > 0
                     ? 100.0 * (1.0 - static_cast<double>(arenaBytes) /
                                          static_cast<double>(arenaNaiveBytes))
                     : 0.0;
  return absl::StrFormat(
      "arena %s (%d bytes) planned vs %s unplanned (%.1f%% saved); weights %s; buffers: "
      "%d input, %d output, %d weight, %d arena, %d alias; %d copy steps",
      mib(arenaBytes), arenaBytes, mib(arenaNaiveBytes), saved, mib(weightsBytes),
      counts[static_cast<int>(Storage::kInput)], counts[static_cast<int>(Storage::kOutput)],
      counts[static_cast<int>(Storage::kWeight)], counts[static_cast<int>(Storage::kArena)],
      counts[static_cast<int>(Storage::kAlias)], static_cast<int>(copies.size()));
}

std::vector<int64_t> planArena(const std::vector<LiveRange> &ranges, int64_t alignment,
                               int64_t *totalBytes) {
  std::vector<int64_t> offsets(ranges.size(), 0);
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (ranges[a].bytes != ranges[b].bytes) return ranges[a].bytes > ranges[b].bytes;
    return ranges[a].firstStep < ranges[b].firstStep;
  });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t r : order) {
    const LiveRange &cur = ranges[r];
    std::vector<size_t> conflicts;
    for (size_t p : placed) {
      const LiveRange &o = ranges[p];
      if (o.lastStep < cur.firstStep || cur.lastStep < o.firstStep) continue;
      conflicts.push_back(p);
    }
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t a, size_t b) {
      return offsets[a] != offsets[b] ? offsets[a] < offsets[b] : a < b;
    });
    int64_t best = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    int64_t prevEnd = 0;
    for (size_t c : conflicts) {
      int64_t start = alignUp(prevEnd, alignment);
      int64_t gap = offsets[c] - start;
      if (gap >= cur.bytes && gap < bestGap) {
        best = start;
        bestGap = gap;
      }
      prevEnd = std::max(prevEnd, offsets[c] + ranges[c].bytes);
    }
    if (best < 0) best = alignUp(prevEnd, alignment);
    offsets[r] = best;
    total = std::max(total, best + cur.bytes);
    placed.push_back(r);
  }
  *totalBytes = alignUp(total, alignment);
  return offsets;
}

namespace {

/// Follows views back to the Value that owns the bytes.
const Value *viewRoot(const Value *v) {
  // A view chain cannot be longer than the graph; the bound guards cycles.
  for (int guard = 0; guard < 1 << 20; ++guard) {
    const ir::Node *p = v->producer();
    if (!p || !isViewNode(*p) || !p->input(0)) return v;
    v = p->input(0);
  }
  return v;
}

bool isView(const Value *v) {
  return v->producer() && isViewNode(*v->producer()) && v->producer()->input(0);
}

/// Builds the plan; one instance per planMemory call.
class Planner {
 public:
  Planner(const ir::Graph &graph, MemoryPlan &plan) : graph_(graph), plan_(plan) {}

  absl::Status run() {
    for (const Value *v : graph_.inputs())
      if (!v->isConstant()) graphInputs_.insert(v);

    // Inputs first, in graph order.
    for (const Value *v : graph_.inputs()) {
      if (v->isConstant()) continue;
      FUSEC_ASSIGN_OR_RETURN(int id, newBuffer(v, Storage::kInput));
      plan_.buffers[id].index = static_cast<int>(plan_.inputs.size());
      plan_.inputs.push_back(id);
      plan_.idOf[v] = id;
    }
    FUSEC_RETURN_IF_ERROR(planOutputs());
    // Strided aliases (Lowering.h StridedAlias): views of their root at an
    // offset that only their kernel reads.
    for (const Step &s : plan_.steps)
      for (const StridedAlias &a : s.aliases) strided_[a.value] = a;
    // Every Value a step names, in step order.
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      for (const Value *v : named(plan_.steps[i])) {
        if (!v)
          return absl::InternalError(absl::StrCat("step ", i, " '", plan_.steps[i].name,
                                                  "' names a null buffer"));
        FUSEC_RETURN_IF_ERROR(ensure(v).status());
      }
    }
    for (auto &[k, src] : pendingCopies_) {
      FUSEC_ASSIGN_OR_RETURN(int srcId, ensure(src));
      MemoryPlan::Copy c;
      const PlannedBuffer &dst = plan_.buffers[plan_.outputs[k]];
      c.name = absl::StrCat("copy_", dst.name);
      c.src = srcId;
      c.dst = dst.id;
      c.bytes = dst.bytes;
      plan_.copies.push_back(std::move(c));
    }
    FUSEC_RETURN_IF_ERROR(checkOutputsWritten());
    planWeights();
    planArenaOffsets();
    return absl::OkStatus();
  }

 private:
  /// The Values step \p s names: its operands, then its guard's conditions
  /// (read before it runs, so they stay live until it has).
  static std::vector<const Value *> named(const Step &s) {
    std::vector<const Value *> v = operands(s);
    for (const ir::GuardTerm &t : s.guard) v.push_back(t.cond);
    return v;
  }
  static std::vector<const Value *> operands(const Step &s) {
    using K = Step::Kind;
    switch (s.kind) {
      case K::kKernel: return s.buffers;
      case K::kGemm: {
        std::vector<const Value *> v = {s.gemm.a, s.gemm.b};
        if (s.gemm.c) v.push_back(s.gemm.c);
        if (s.gemm.bias) v.push_back(s.gemm.bias);
        v.insert(v.end(), s.gemm.epilogueInputs.begin(), s.gemm.epilogueInputs.end());
        v.push_back(s.gemm.d);
        return v;
      }
      case K::kConv: {
        std::vector<const Value *> v = {s.conv.x, s.conv.w};
        if (s.conv.bias) v.push_back(s.conv.bias);
        v.insert(v.end(), s.conv.epilogueInputs.begin(), s.conv.epilogueInputs.end());
        v.push_back(s.conv.y);
        return v;
      }
      case K::kCopy: return {s.src, s.dst};
    }
    return {};
  }

  absl::StatusOr<int> newBuffer(const Value *v, Storage storage) {
    const ir::TensorType &t = v->type();
    if (!t.rankKnown || !t.isStatic())
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", v->name(), "' has a non-static shape ", t.str(),
                       "; bind symbolic dims with --shape"));
    const char *dt = manifestDTypeName(t.dtype);
    if (!dt)
      return absl::UnimplementedError(absl::StrCat("tensor '", v->name(), "' has dtype ",
                                                   ir::dtypeName(t.dtype),
                                                   ", which the artifact format does not support"));
    PlannedBuffer b;
    b.id = static_cast<int>(plan_.buffers.size());
    b.value = v;
    b.name = v->name();
    b.dtype = t.dtype;
    b.shape = t.staticShape();
    b.bytes = ir::numElements(b.shape) * ir::dtypeSize(t.dtype);
    b.storage = storage;
    plan_.buffers.push_back(std::move(b));
    return plan_.buffers.back().id;
  }

  /// The non-alias buffer that \p id's bytes belong to.
  int resolve(int id) const {
    while (plan_.buffers[id].storage == Storage::kAlias) id = plan_.buffers[id].of;
    return id;
  }

  /// An alias of \p of's bytes from \p offset on (bytes past of's own
  /// offset into its root, when of is itself an alias).
  absl::StatusOr<int> newAlias(const Value *v, int of, int64_t offset = 0) {
    FUSEC_ASSIGN_OR_RETURN(int id, newBuffer(v, Storage::kAlias));
    for (int cur = of; plan_.buffers[cur].storage == Storage::kAlias; cur = plan_.buffers[cur].of)
      offset += plan_.buffers[cur].offset;
    of = resolve(of);
    if (offset + plan_.buffers[id].bytes > plan_.buffers[of].bytes)
      return absl::InternalError(absl::StrCat("view '", v->name(), "' (", plan_.buffers[id].bytes,
                                              " bytes) is larger than its root '",
                                              plan_.buffers[of].name, "' (",
                                              plan_.buffers[of].bytes, " bytes)"));
    plan_.buffers[id].of = of;
    plan_.buffers[id].offset = offset;
    return id;
  }

  /// Output buffers, and for outputs that a step does not write directly,
  /// either a root claimed as an alias of the output or a pending copy.
  absl::Status planOutputs() {
    absl::flat_hash_set<const Value *> outputs(graph_.outputs().begin(), graph_.outputs().end());
    absl::flat_hash_set<const Value *> seen;
    for (const Value *o : graph_.outputs()) {
      if (!o) return absl::InternalError("graph output is null");
      if (!seen.insert(o).second)
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", o->name(),
                         "' is listed more than once; the artifact format needs distinct outputs"));
      const int k = static_cast<int>(plan_.outputs.size());
      FUSEC_ASSIGN_OR_RETURN(int id, newBuffer(o, Storage::kOutput));
      plan_.buffers[id].index = k;
      plan_.outputs.push_back(id);
      if (o->isConstant() || graphInputs_.count(o)) {
        pendingCopies_.emplace_back(k, o);  // the input / weight buffer is made later
        continue;
      }
      if (!o->producer())
        return absl::InternalError(absl::StrCat("graph output '", o->name(),
                                                "' is neither an input, a constant nor a result"));
      if (!isView(o)) {
        plan_.idOf[o] = id;
        continue;
      }
      const Value *root = viewRoot(o);
      const bool claimable = !root->isConstant() && !graphInputs_.count(root) &&
                             root->producer() && !outputs.count(root) && !claimed_.count(root);
      if (claimable) {
        claimed_.insert(root);
        plan_.idOf[o] = id;
        FUSEC_ASSIGN_OR_RETURN(int aid, newAlias(root, id));
        plan_.idOf[root] = aid;
      } else {
        pendingCopies_.emplace_back(k, root);
      }
    }
    return absl::OkStatus();
  }

  /// The buffer of \p v, created on first use.
  absl::StatusOr<int> ensure(const Value *v) {
    auto it = plan_.idOf.find(v);
    if (it != plan_.idOf.end()) return it->second;
    int id = -1;
    if (auto sa = strided_.find(v); sa != strided_.end()) {
      if (graphInputs_.count(v) || v->isConstant())
        return absl::InternalError(absl::StrCat("strided alias '", v->name(), "' is an input or a constant"));
      FUSEC_ASSIGN_OR_RETURN(int rootId, ensure(sa->second.root));
      FUSEC_ASSIGN_OR_RETURN(id, newAlias(v, rootId, sa->second.offset * ir::dtypeSize(v->type().dtype)));
    } else if (isView(v)) {
      FUSEC_ASSIGN_OR_RETURN(int rootId, ensure(viewRoot(v)));
      FUSEC_ASSIGN_OR_RETURN(id, newAlias(v, rootId));
    } else if (v->isConstant()) {
      FUSEC_ASSIGN_OR_RETURN(id, newBuffer(v, Storage::kWeight));
    } else if (v->producer()) {
      FUSEC_ASSIGN_OR_RETURN(id, newBuffer(v, Storage::kArena));
    } else {
      return absl::InternalError(absl::StrCat(
          "a step names '", v->name(), "', which is neither a graph input, a constant nor a result"));
    }
    plan_.idOf[v] = id;
    return id;
  }

  /// Step indices naming each non-alias buffer (aliases count for their root).
  std::vector<std::pair<int, int>> liveRanges() const {
    std::vector<std::pair<int, int>> r(plan_.buffers.size(), {-1, -1});
    auto touch = [&](int id, int step) {
      id = resolve(id);
      if (r[id].first < 0) r[id].first = step;
      r[id].second = std::max(r[id].second, step);
    };
    for (size_t i = 0; i < plan_.steps.size(); ++i)
      for (const Value *v : named(plan_.steps[i])) touch(plan_.idOf.at(v), static_cast<int>(i));
    for (size_t j = 0; j < plan_.copies.size(); ++j) {
      const int step = static_cast<int>(plan_.steps.size() + j);
      touch(plan_.copies[j].src, step);
      touch(plan_.copies[j].dst, step);
    }
    return r;
  }

  absl::Status checkOutputsWritten() const {
    std::vector<std::pair<int, int>> r = liveRanges();
    // An empty output (zero elements) has nothing to write: the steps over
    // its empty domain are no launch, and the output still exists (0 bytes).
    for (int id : plan_.outputs)
      if (r[id].first < 0 && plan_.buffers[id].bytes != 0)
        return absl::InternalError(absl::StrCat("graph output '", plan_.buffers[id].name,
                                                "' is not written by any step"));
    return absl::OkStatus();
  }

  void planWeights() {
    int64_t end = 0;
    for (PlannedBuffer &b : plan_.buffers) {
      if (b.storage != Storage::kWeight) continue;
      b.offset = alignUp(end, kBufferAlignment);
      end = b.offset + b.bytes;
      plan_.weights.push_back(b.id);
    }
    plan_.weightsBytes = end;
  }

  void planArenaOffsets() {
    std::vector<std::pair<int, int>> r = liveRanges();
    std::vector<int> ids;
    std::vector<LiveRange> ranges;
    for (PlannedBuffer &b : plan_.buffers) {
      if (b.storage != Storage::kArena) continue;
      b.firstStep = r[b.id].first;
      b.lastStep = r[b.id].second;
      ids.push_back(b.id);
      ranges.push_back({b.bytes, b.firstStep, b.lastStep});
      plan_.arenaNaiveBytes += alignUp(b.bytes, kBufferAlignment);
    }
    std::vector<int64_t> offsets = planArena(ranges, kBufferAlignment, &plan_.arenaBytes);
    for (size_t i = 0; i < ids.size(); ++i) plan_.buffers[ids[i]].offset = offsets[i];
  }

  const ir::Graph &graph_;
  MemoryPlan &plan_;
  absl::flat_hash_set<const Value *> graphInputs_;
  absl::flat_hash_set<const Value *> claimed_;
  absl::flat_hash_map<const Value *, StridedAlias> strided_;
  std::vector<std::pair<int, const Value *>> pendingCopies_;  ///< (output index, source)
};

}  // namespace

absl::StatusOr<MemoryPlan> planMemory(const ir::Graph &graph, std::vector<Step> steps) {
  MemoryPlan plan;
  plan.steps = std::move(steps);
  Planner planner(graph, plan);
  FUSEC_RETURN_IF_ERROR(planner.run());
  return plan;
}

}  // namespace fusec::program
