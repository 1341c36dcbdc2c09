//===- Fusion.cpp - Group memory-bound ops into kernels -------------------===//
//
// Decides which nodes become one kernel. The driver owns only the visit order
// and the bookkeeping; what may be fused is decided by canFuse()
// (passes/fusion/Fusible.cpp), which gives a reason for every refusal.
//
// Algorithm: every node except views starts as its own group, seeded by its
// role (GEMM, row reduction, elementwise, layout). Consumers are visited in
// topological order; for each data input, the group of its producer (found
// through views, which move no data) is merged into the consumer's group if
// canFuse() agrees and the merged group stays convex (no path leaves the group
// and re-enters it, which would make the kernel depend on itself). A producer
// with several consumers may join one of them as an extra kernel output
// (multi-output kernel: e.g. a residual Add that feeds LayerNorm and the next
// residual is written once by the LayerNorm kernel). After grouping, each
// group is costed with the roofline model and recorded in ctx.fusionPlan, and
// each member node gets the attribute "fusec.kernel" = its kernel name.
//
// The one legality rule (program/Legality.h): with a backend legality in
// the context, a merge happens only if the backend lowers the merged group,
// and every final group that no accepted merge vouched for (a node on its
// own) is asked too. A group the lowering refuses cannot be split further;
// it is kept in the plan with the refusal (Kernel::refused), which
// --dump-fusion shows and which stops an artifact from being written.
//
// This is the producer-consumer greedy fusion of XLA's instruction fusion
// and TVM's operator fusion (Chen et al., "TVM", OSDI 2018, section 3),
// restricted to one anchor (GEMM or row reduction) per kernel, except that
// row reductions over the same rows may share one (LayerNorm's mean and
// variance, softmax's max and sum).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/Pass.h"
#include "passes/cost/ArithmeticIntensity.h"
#include "passes/fusion/Fusible.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

struct Group {
  GroupShape shape;
  std::set<int> members;  // node indices (topological), sorted
  bool alive = true;
  bool lowers = false;    // the backend accepted exactly these members
};

class Fusion : public Pass {
 public:
  const char *name() const override { return "fusion"; }
  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override;

 private:
  // Per-run state.
  std::vector<ir::Node *> nodes_;
  absl::flat_hash_map<const ir::Node *, int> index_;
  std::vector<Role> roles_;
  std::vector<int> groupOf_;  // -1 for views
  std::vector<Group> groups_;
  absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>> users_;

  /// The node that really produces \p v's data, looking through views.
  const ir::Node *realProducer(const ir::Value *v) const;
  /// Non-view consumers of \p v (looking through views), and whether \p v (or
  /// a view of it) is a graph output.
  int64_t realUsers(const ir::Graph &g, const ir::Value *v, bool *isOutput) const;
  /// True if merging groups \p a and \p b keeps the group convex; otherwise
  /// \p via names a node on a path that leaves and re-enters.
  bool staysConvex(int a, int b, std::string *via) const;
  void merge(int into, int from);
  /// The one legality rule: asks the backend (PassContext::legality)
  /// whether the union of groups \p a and \p b can be lowered as one kernel.
  /// Refuses with the lowering's reason (Unimplemented); a non-static shape
  /// (InvalidArgument: shapes not bound yet) is not a refusal.
  FusionDecision backendAccepts(const ir::Graph &graph, const PassContext &ctx, int a,
                                int b) const;
  /// Why the backend refuses final group \p g ("" when it lowers, when no
  /// legality is set, or when an accepted merge already vouched for it).
  std::string backendRefuses(const ir::Graph &graph, const PassContext &ctx, const Group &g) const;
  std::string describeKernel(const Group &g, const TargetSpec &target) const;
};

const ir::Node *Fusion::realProducer(const ir::Value *v) const {
  while (v && v->producer()) {
    const ir::Node *p = v->producer();
    auto it = index_.find(p);
    if (it == index_.end()) return nullptr;
    if (roles_[it->second] != Role::kView) return p;
    v = p->input(0);
  }
  return nullptr;
}

int64_t Fusion::realUsers(const ir::Graph &g, const ir::Value *v, bool *isOutput) const {
  int64_t n = 0;
  if (g.isGraphOutput(v)) *isOutput = true;
  auto it = users_.find(v);
  if (it == users_.end()) return 0;
  for (const ir::Node *u : it->second) {
    if (roles_[index_.at(u)] == Role::kView && u->input(0) == v)
      n += realUsers(g, u->output(0), isOutput);
    else
      ++n;
  }
  return n;
}

bool Fusion::staysConvex(int a, int b, std::string *via) const {
  std::set<int> u = groups_[a].members;
  u.insert(groups_[b].members.begin(), groups_[b].members.end());
  const int lo = *u.begin(), hi = *u.rbegin();
  // state: 0 unvisited, 1 inside (member or transparent view of a member), 2 outside-reached
  std::vector<int> state(nodes_.size(), 0);
  for (int i : u) state[i] = 1;
  for (int i = lo; i <= hi; ++i) {
    if (state[i] == 1) continue;
    const ir::Node *n = nodes_[i];
    bool fromInside = false, fromReached = false;
    for (const ir::Value *in : n->inputs()) {
      if (!in || !in->producer()) continue;
      auto it = index_.find(in->producer());
      if (it == index_.end()) continue;
      if (state[it->second] == 1) fromInside = true;
      if (state[it->second] == 2) fromReached = true;
    }
    if (roles_[i] == Role::kView && fromInside && !fromReached) {
      state[i] = 1;  // a view of a member: as good as inside
    } else if (fromInside || fromReached) {
      state[i] = 2;
    }
  }
  // Any member fed by an outside node that the group reaches is a cycle.
  for (int i : u) {
    for (const ir::Value *in : nodes_[i]->inputs()) {
      if (!in || !in->producer()) continue;
      auto it = index_.find(in->producer());
      if (it != index_.end() && state[it->second] == 2) {
        *via = nodes_[it->second]->name();
        return false;
      }
    }
  }
  return true;
}

FusionDecision Fusion::backendAccepts(const ir::Graph &graph, const PassContext &ctx, int a,
                                      int b) const {
  if (!ctx.legality) return FusionDecision::yes();
  std::vector<const ir::Node *> members;
  for (int g : {a, b})
    for (int m : groups_[g].members) members.push_back(nodes_[m]);
  absl::Status st = ctx.legality->canLowerGroup(graph, members);
  if (st.ok() || st.code() != absl::StatusCode::kUnimplemented) return FusionDecision::yes();
  return FusionDecision::no(absl::StrCat("lowering refuses the merged group: ", st.message()));
}

std::string Fusion::backendRefuses(const ir::Graph &graph, const PassContext &ctx, const Group &g) const {
  if (!ctx.legality || g.lowers) return "";
  std::vector<const ir::Node *> members;
  for (int m : g.members) members.push_back(nodes_[m]);
  absl::Status st = ctx.legality->canLowerGroup(graph, members);
  if (st.ok() || st.code() != absl::StatusCode::kUnimplemented) return "";
  return std::string(st.message());
}

void Fusion::merge(int into, int from) {
  Group &g = groups_[into], &f = groups_[from];
  for (int m : f.members) {
    g.members.insert(m);
    groupOf_[m] = into;
  }
  auto rank = [](KernelKind k) {
    switch (k) {
      case KernelKind::kGemm: case KernelKind::kConv: case KernelKind::kAttention: return 4;
      case KernelKind::kReduction: return 3;
      case KernelKind::kElementwise: return 2;
      case KernelKind::kLayout: return 1;
      default: return 0;
    }
  };
  if (rank(f.shape.kind) > rank(g.shape.kind)) g.shape.kind = f.shape.kind;
  // Elementwise ops joined with layout ops make an elementwise kernel.
  if (g.shape.kind == KernelKind::kLayout) g.shape.kind = KernelKind::kElementwise;
  if (!g.shape.anchor || (f.shape.anchor && index_.at(f.shape.anchor) < index_.at(g.shape.anchor)))
    g.shape.anchor = f.shape.anchor ? f.shape.anchor : g.shape.anchor;
  g.shape.reductions += f.shape.reductions;
  g.lowers = true;  // merges are asked first (backendAccepts)
  f.alive = false;
  f.members.clear();
}

std::string Fusion::describeKernel(const Group &g, const TargetSpec &target) const {
  std::vector<std::string> others;
  const ir::Node *anchor = g.shape.anchor;
  for (int m : g.members)
    if (nodes_[m] != anchor) others.push_back(nodes_[m]->opType());
  std::string rest = absl::StrJoin(others, ", ");
  switch (g.shape.kind) {
    case KernelKind::kGemm:
    case KernelKind::kConv:
      if (others.empty() && target.backend == "nki")
        return absl::StrCat(anchor->opType(), " as a generated TensorE kernel (nc_matmul into PSUM)");
      return others.empty() ? absl::StrCat(anchor->opType(), " through the vendor library")
                            : absl::StrCat(anchor->opType(), " with epilogue ", rest);
    case KernelKind::kReduction:
      if (g.shape.reductions > 1)
        return absl::StrCat(g.shape.reductions, " row reductions over the same rows in one pass: ",
                            absl::StrJoin(g.members, ", ", [&](std::string *o, int m) {
                              o->append(nodes_[m]->opType());
                            }));
      return others.empty() ? absl::StrCat("row reduction ", anchor->opType())
                            : absl::StrCat("row reduction ", anchor->opType(), " with ", rest);
    case KernelKind::kElementwise:
      return g.members.size() == 1 ? "single elementwise op"
                                   : absl::StrCat("elementwise chain of ", g.members.size(),
                                                  " ops, one pass over the output");
    case KernelKind::kLayout:
      return "data movement";
    case KernelKind::kAttention:
      return "fused attention (online softmax over keys; scores never reach memory)";
    default:
      return "runs on its own";
  }
}

absl::StatusOr<bool> Fusion::run(ir::Graph &graph, PassContext &ctx) {
  if (ctx.target.name.empty()) {
    FUSEC_ASSIGN_OR_RETURN(ctx.target, loadBuiltinTarget("h200"));
  }
  nodes_ = graph.nodes();
  index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i]] = static_cast<int>(i);
  users_ = graph.userMap();
  roles_.assign(nodes_.size(), Role::kOpaque);
  groupOf_.assign(nodes_.size(), -1);
  groups_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i]->attrs().erase(kKernelAttr);
    roles_[i] = roleOf(*nodes_[i]);
    if (roles_[i] == Role::kView) continue;
    Group g;
    g.shape.kind = seedKind(roles_[i], *nodes_[i]);
    if (roles_[i] == Role::kContraction || roles_[i] == Role::kRowReduction)
      g.shape.anchor = nodes_[i];
    g.shape.reductions = roles_[i] == Role::kRowReduction ? 1 : 0;
    g.members.insert(static_cast<int>(i));
    groupOf_[i] = static_cast<int>(groups_.size());
    groups_.push_back(std::move(g));
  }

  FusionPlan &plan = ctx.fusionPlan;
  plan.target = ctx.target.name;
  plan.kernels.clear();
  // Refusals recorded by the attention rewrite (it runs earlier) stay.
  plan.refusals.erase(std::remove_if(plan.refusals.begin(), plan.refusals.end(),
                                     [](const Refusal &r) {
                                       return r.reason.rfind("attention rewrite:", 0) != 0;
                                     }),
                      plan.refusals.end());
  std::set<std::pair<std::string, std::string>> refused;
  const bool debug = ctx.debugEnabled("fusion");

  for (size_t ci = 0; ci < nodes_.size(); ++ci) {
    if (roles_[ci] == Role::kView) continue;
    ir::Node *consumer = nodes_[ci];
    for (const ir::Value *in : consumer->inputs()) {
      if (!in || in->isConstant()) continue;
      const ir::Node *producer = realProducer(in);
      if (!producer) continue;
      const int pi = index_.at(producer);
      const int pg = groupOf_[pi], cg = groupOf_[ci];
      if (pg == cg) continue;
      // The producer's own result that the consumer reads (through views).
      const ir::Value *value = in;
      while (value->producer() != producer) value = value->producer()->input(0);
      bool isOutput = false;
      int64_t users = realUsers(graph, value, &isOutput);
      FusionDecision d = canFuse(groups_[pg].shape, *producer, groups_[cg].shape, *consumer,
                                 *value, users, isOutput, ctx.target);
      std::string via;
      if (d && !staysConvex(pg, cg, &via))
        d = FusionDecision::no(absl::StrCat("fusing would create a cycle through '", via, "'"));
      if (d) d = backendAccepts(graph, ctx, pg, cg);
      if (d) {
        merge(cg, pg);
        continue;
      }
      if (refused.insert({producer->name(), consumer->name()}).second) {
        plan.refusals.push_back({producer->name(), consumer->name(), d.reason()});
        if (debug)
          std::fprintf(stderr, "[fusion] not fusing '%s' into '%s': %s\n", producer->name().c_str(),
                       consumer->name().c_str(), d.reason().c_str());
      }
    }
  }

  // Number kernels in topological order of their first member.
  std::vector<int> order;
  for (size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i].alive && !groups_[i].members.empty()) order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return *groups_[a].members.begin() < *groups_[b].members.begin();
  });
  plan.hbmBytesFused = plan.hbmBytesUnfused = 0;
  int64_t refusedKernels = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const Group &g = groups_[order[k]];
    // Shape computations left behind (unbound dims) are not device kernels.
    if (g.members.size() == 1 && roles_[*g.members.begin()] == Role::kShape) continue;
    Kernel kernel;
    kernel.kind = g.shape.kind;
    kernel.name = absl::StrCat("k", plan.kernels.size(), "_", kernelKindName(kernel.kind));
    std::vector<const ir::Node *> members;
    for (int m : g.members) {
      members.push_back(nodes_[m]);
      kernel.ops.push_back(nodes_[m]->name());
      kernel.opTypes.push_back(nodes_[m]->opType());
      nodes_[m]->setAttr(kKernelAttr, ir::Attribute(kernel.name));
    }
    fillKernelCost(groupCost(graph, members, ctx.target, users_), kernel);
    if (kernel.kind == KernelKind::kAttention)
      for (const ir::Node *m : members)
        if (m->kind() == ir::OpKind::kFusedAttention) {
          kernel.scoreMod = m->getString("score_mod", "");
          kernel.mask = m->getString("mask", "");
        }
    kernel.reason = describeKernel(g, ctx.target);
    kernel.refused = backendRefuses(graph, ctx, g);
    if (!kernel.refused.empty()) {
      ++refusedKernels;
      if (debug)
        std::fprintf(stderr, "[fusion] the lowering refuses kernel '%s': %s\n", kernel.name.c_str(),
                     kernel.refused.c_str());
    }
    plan.hbmBytesFused += kernel.bytes;
    plan.hbmBytesUnfused += kernel.bytesUnfused;
    plan.kernels.push_back(std::move(kernel));
  }
  // The whole-graph baseline is the op-by-op graph before canonicalisation,
  // when the cost model saw it; otherwise the members' own bytes.
  if (ctx.unfusedHbmBytes >= 0) plan.hbmBytesUnfused = ctx.unfusedHbmBytes;
  ctx.statistics["fusion.kernels"] = static_cast<int64_t>(plan.kernels.size());
  ctx.statistics["fusion.refusals"] = static_cast<int64_t>(plan.refusals.size());
  ctx.statistics["fusion.refused-kernels"] = refusedKernels;
  return true;
}

}  // namespace

std::unique_ptr<Pass> createFusion() { return std::make_unique<Fusion>(); }

}  // namespace fusec::passes
