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
// Cost (near-linear; a 20k-node chain or a 200k-node Add tree is one group):
// groups keep their neighbour groups (succs/preds, views looked through), so
// the convexity check searches the group graph from the producer's other
// successors only, pruned by topological position; a merge moves the
// smaller group into the larger. The backend is asked about every merge
// while the merged group has at most kEagerLegalityLimit nodes; larger
// merges are checked once, on the final group, and a final group the backend
// refuses is split and fused again with every merge checked.
//
// The one legality rule (program/Legality.h): with a backend legality in
// the context, a merge happens only if the backend lowers the merged group,
// and every final group that no accepted merge vouched for (a node on its
// own) is asked too. A group the lowering refuses cannot be split further;
// it is kept in the plan with the refusal (Kernel::refused), which
// --dump-fusion shows and which stops an artifact from being written.
//
// Layout ops (Transpose, Slice, Concat, Gather) become index arithmetic of
// the kernel that reads them. One read by several kernels is cloned once per
// reading kernel when each of them takes it (duplicateSharedLayouts), and
// fusion runs again: each kernel re-reads the layout op's input at the
// points it needs instead of a layout kernel writing the whole result for
// the others to read back (GPT-NeoX's heads Transpose under the q/k/v
// Slices; an embedding Gather read by a norm and a residual Add). XLA's
// instruction fusion duplicates cheap producers into several consumers the
// same way.
//
// This is the producer-consumer greedy fusion of XLA's instruction fusion
// and TVM's operator fusion (Chen et al., "TVM", OSDI 2018, section 3),
// restricted to one anchor (GEMM or row reduction) per kernel, except that
// row reductions over the same rows may share one (LayerNorm's mean and
// variance, softmax's max and sum).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <optional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ScoreExpr.h"
#include "passes/Pass.h"
#include "passes/cost/ArithmeticIntensity.h"
#include "passes/fusion/Fusible.h"
#include "program/Legality.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

/// Key tiles the structural mask cuts entirely, at the nominal tile of
/// kNominalTile x kNominalTile (query rows x keys; each backend's own tile
/// differs), for the dump: a mask of diagonal bounds (ir::diagonalBound)
/// from its interval of q - k at any size; any other mask evaluated on the
/// [Sq, Sk] grid at b = h = 0 when Sq * Sk <= 2^24 (4096 x 4096), else not
/// counted.
constexpr int64_t kNominalTile = 128;
void countSkippedKeyTiles(const ir::Node &att, Kernel &kernel) {
  const int64_t km = att.attrI("key_mask");
  const ir::Value *kmv = km >= 0 && km + 3 < att.numInputs() ? att.input(3 + static_cast<int>(km)) : nullptr;
  if (kmv)
    kernel.keyMask = absl::StrCat("'", kmv->name(), "' ", kmv->type().str(),
                                  kmv->constant() ? " (constant)" : " (run time: key tiles it empties are skipped)");
  const ir::Tensor *kc = kmv ? kmv->constant() : nullptr;
  if (att.numInputs() < 2 || (kernel.mask.empty() && !kc)) return;
  const ir::TensorType &qt = att.input(0)->type(), &kt = att.input(1)->type();
  if (!qt.rankKnown || !kt.rankKnown || qt.rank() != 4 || kt.rank() != 4 || !qt.shape[2].isStatic() ||
      !kt.shape[2].isStatic())
    return;
  const int64_t sq = qt.shape[2].value, sk = kt.shape[2].value;
  if (sq <= 0 || sk <= 0) return;
  ir::ScoreExprContext ctx;
  ctx.allowScore = false;
  ctx.allowTables = false;
  auto e = ir::parseScoreExpr(kernel.mask, ctx);
  if (!e.ok()) return;
  const int64_t nq = (sq + kNominalTile - 1) / kNominalTile, nk = (sk + kNominalTile - 1) / kNominalTile;
  // A mask of diagonal bounds only (causal, windows) keeps q - k in
  // [lo, hi]: a tile is live when its range of q - k meets that interval,
  // at any size. Other masks are evaluated element by element up to 2^24.
  const std::optional<std::pair<int64_t, int64_t>> band = ir::diagonalInterval(*e);
  const bool diagonal = band.has_value();
  if (!diagonal && sq * sk > (int64_t{1} << 24)) return;
  std::vector<char> live(nq * nk, 0);
  if (diagonal) {
    for (int64_t iq = 0; iq < nq; ++iq)
      for (int64_t jk = 0; jk < nk; ++jk) {
        const int64_t q0 = iq * kNominalTile, q1 = std::min(sq, q0 + kNominalTile) - 1;
        const int64_t k0 = jk * kNominalTile, k1 = std::min(sk, k0 + kNominalTile) - 1;
        live[iq * nk + jk] = std::max(band->first, q0 - k1) <= std::min(band->second, q1 - k0);
      }
  } else {
    ir::ScoreEnv env;
    for (int64_t q = 0; q < sq; ++q)
      for (int64_t k = 0; k < sk; ++k) {
        char &l = live[(q / kNominalTile) * nk + k / kNominalTile];
        if (l) continue;
        env.q = q;
        env.k = k;
        if (e->empty() || ir::evalScoreExpr(*e, env) != 0) l = 1;
      }
  }
  // A constant key mask [B, 1, 1, Sk] (dense, row-major): per batch.
  int64_t batches = 1;
  if (kc && kc->rank() >= 1 && kc->shape().back() == sk) batches = kc->numElements() / sk;
  else kc = nullptr;
  kernel.keyTiles = batches * nq * nk;
  kernel.skippedKeyTiles = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t jk = 0; jk < nk; ++jk) {
      bool keyLive = !kc;
      for (int64_t k = jk * kNominalTile; kc && k < std::min(sk, (jk + 1) * kNominalTile) && !keyLive; ++k)
        keyLive = kc->getDouble(b * sk + k) != 0;
      for (int64_t iq = 0; iq < nq; ++iq) kernel.skippedKeyTiles += !(keyLive && live[iq * nk + jk]);
    }
}

struct Group {
  GroupShape shape;
  std::set<int> members;  // node indices (topological), sorted
  bool alive = true;
  /// Groups this one reads from / is read by (data edges, through views).
  absl::flat_hash_set<int> preds, succs;
  /// A merge into this group was not checked with the backend yet.
  bool unchecked = false;
  /// The backend accepted exactly these members (a checked merge, or the
  /// final check): the final group need not be asked again.
  bool lowers = false;
};

/// Merged groups up to this many nodes are checked with the backend at
/// every merge; larger ones once, when fusion is done (each check lowers
/// the whole group, so checking every merge of a long chain is quadratic).
constexpr size_t kEagerLegalityLimit = 32;

/// Set by duplicateSharedLayouts() on a layout op and its clones: the
/// number of kernels that re-gather it.
constexpr const char *kRegatheredAttr = "fusec.regathered_in";

// The most nodes one fused group may hold. The code generators' time for one
// kernel grows faster than linearly in its expressions (LLVM's passes over one
// 7,000-op loop body took 45 s), while a kernel boundary in an elementwise
// chain costs one extra write and read of one tensor: at 512 ops per kernel
// that is well under 1% of the chain's own arithmetic. Real models' groups
// hold tens of nodes.
constexpr size_t kMaxGroupNodes = 512;

class Fusion : public Pass {
 public:
  const char *name() const override { return "fusion"; }
  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override;

 private:
  /// One round of fusion over the whole graph; a round that clones layout
  /// ops (duplicateSharedLayouts) runs the next one.
  absl::StatusOr<bool> runRound(ir::Graph &graph, PassContext &ctx, int round);

  // Per-run state.
  std::vector<ir::Node *> nodes_;
  absl::flat_hash_map<const ir::Node *, int> index_;
  std::vector<Role> roles_;
  std::vector<int> groupOf_;  // -1 for views
  std::vector<Group> groups_;
  absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>> users_;
  /// Non-view nodes that non-view node i reads (through views), and the reverse.
  std::vector<std::vector<int>> realPreds_, realSuccs_;
  mutable absl::flat_hash_map<const ir::Value *, std::pair<int64_t, bool>> realUsersMemo_;
  std::optional<program::GraphIndex> graphIndex_;
  std::set<std::pair<std::string, std::string>> refused_;
  bool debug_ = false;

  /// A new group holding only non-view node \p i.
  int newGroup(int i);
  /// Adds the group-graph edges of node \p i's group to its neighbours.
  void linkNode(int i);
  /// Drops the recorded refusals whose consumer is \p consumer (before it is
  /// visited again; those still refused are recorded again).
  void forgetRefusalsInto(PassContext &ctx, const std::string &consumer) {
    for (auto it = refused_.begin(); it != refused_.end();)
      it = it->second == consumer ? refused_.erase(it) : std::next(it);
    auto &r = ctx.fusionPlan.refusals;
    r.erase(std::remove_if(r.begin(), r.end(), [&](const Refusal &x) { return x.consumer == consumer; }), r.end());
  }
  /// Tries to merge the groups of consumer \p ci's producers into its own
  /// (the body of the greedy loop). With \p within, only producers in it;
  /// with \p eager, every merge is checked with the backend.
  void visitConsumer(ir::Graph &graph, PassContext &ctx, size_t ci, const std::set<int> *within,
                     bool eager);
  /// True if group \p from reaches group \p to other than by a direct edge.
  bool reachesIndirectly(int from, int to, std::string *via) const;

  /// The node that really produces \p v's data, looking through views.
  const ir::Node *realProducer(const ir::Value *v) const;
  /// Non-view consumers of \p v (looking through views), and whether \p v (or
  /// a view of it) is a graph output.
  int64_t realUsers(const ir::Graph &g, const ir::Value *v, bool *isOutput) const;
  /// The non-view consumers of \p v (looking through views), as node indices.
  std::vector<int> realUserNodes(const ir::Value *v) const;
  /// Layout ops refused because they had several consumers, whose consumers
  /// have all joined one group since: asks again (they are re-gathered there).
  void regatherLayouts(ir::Graph &graph, PassContext &ctx);
  /// Layout kernels left after fusion (a Transpose, Slice, Gather or Concat
  /// group read by several kernels) whose every consumer kernel would take
  /// it as index arithmetic: clones the layout op once per consumer kernel
  /// (rewiring that kernel's reads), so the next fusion round folds each
  /// clone where it is read and the layout kernel disappears. Each consumer
  /// then re-reads the layout op's input instead of one kernel writing the
  /// whole result and the consumers reading it back (one write and a launch
  /// saved; the reads are the same lines). Asks the same legality as a merge
  /// (canFuse with one user, convexity, the backend). \returns the number
  /// of clones made (0: the graph is unchanged).
  int duplicateSharedLayouts(ir::Graph &graph, PassContext &ctx);
  /// True if merging groups \p a and \p b keeps the group convex; otherwise
  /// \p via names a node on a path that leaves and re-enters.
  bool staysConvex(int a, int b, std::string *via) const;
  /// Merges group \p from into the group of consumer \p into (the smaller
  /// set of members moves); \returns the surviving group.
  int merge(int into, int from);
  /// The one legality rule: asks the backend (PassContext::legality)
  /// whether the union of groups \p a and \p b can be lowered as one kernel.
  /// Refuses with the lowering's reason (Unimplemented); a non-static shape
  /// (InvalidArgument: shapes not bound yet) is not a refusal.
  FusionDecision backendAccepts(const ir::Graph &graph, const PassContext &ctx, int a,
                                int b) const;
  /// Why the backend refuses final group \p g ("" when it lowers, when no
  /// legality is set, or when an accepted merge already vouched for it).
  std::string backendRefuses(const ir::Graph &graph, const PassContext &ctx, const Group &g) const;
  /// Why group \p g is one kernel, for the dump: its kind's reason, then
  /// how its layout ops became index arithmetic.
  std::string describeKernel(const Group &g, const TargetSpec &target) const;
  std::string describeGroupKind(const Group &g, const TargetSpec &target) const;
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
  if (auto it = realUsersMemo_.find(v); it != realUsersMemo_.end()) {
    if (it->second.second) *isOutput = true;
    return it->second.first;
  }
  int64_t n = 0;
  bool output = false;
  std::vector<const ir::Value *> work = {v};  // v and the views of it
  while (!work.empty()) {
    const ir::Value *w = work.back();
    work.pop_back();
    if (g.isGraphOutput(w)) output = true;
    auto it = users_.find(w);
    if (it == users_.end()) continue;
    for (const ir::Node *u : it->second) {
      if (roles_[index_.at(u)] == Role::kView && u->input(0) == w)
        work.push_back(u->output(0));
      else
        ++n;
    }
  }
  realUsersMemo_[v] = {n, output};
  if (output) *isOutput = true;
  return n;
}

std::vector<int> Fusion::realUserNodes(const ir::Value *v) const {
  std::vector<int> out;
  std::vector<const ir::Value *> work = {v};  // v and the views of it
  while (!work.empty()) {
    const ir::Value *w = work.back();
    work.pop_back();
    auto it = users_.find(w);
    if (it == users_.end()) continue;
    for (const ir::Node *u : it->second) {
      const int ui = index_.at(u);
      if (roles_[ui] == Role::kView && u->input(0) == w)
        work.push_back(u->output(0));
      else
        out.push_back(ui);
    }
  }
  return out;
}

void Fusion::regatherLayouts(ir::Graph &graph, PassContext &ctx) {
  // Consumers first: a layout op read by a Slice and by the kernel that
  // Slice re-gathers into sees both readers in that kernel (GPT-NeoX's
  // rotary: Slice -> Slice_3, Slice_4).
  for (size_t pi = nodes_.size(); pi-- > 0;) {
    if (roles_[pi] != Role::kLayout || nodes_[pi]->numOutputs() != 1) continue;
    const std::vector<int> users = realUserNodes(nodes_[pi]->output(0));
    if (users.size() < 2) continue;
    const int cg = groupOf_[users.front()];
    if (cg == groupOf_[pi] || cg < 0) continue;
    if (!std::all_of(users.begin(), users.end(), [&](int u) { return groupOf_[u] == cg; })) continue;
    // Ask again from the first consumer; its other producers are asked again
    // too (their refusals are recorded afresh).
    forgetRefusalsInto(ctx, nodes_[users.front()]->name());
    visitConsumer(graph, ctx, static_cast<size_t>(users.front()), nullptr, /*eager=*/false);
  }
}

int Fusion::duplicateSharedLayouts(ir::Graph &graph, PassContext &ctx) {
  struct Candidate {
    ir::Node *layout;
    std::vector<std::vector<ir::Node *>> readers;  // per consumer kernel, in node order
  };
  std::vector<Candidate> candidates;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group &g = groups_[gi];
    if (!g.alive || g.members.size() != 1 || g.shape.kind != KernelKind::kLayout) continue;
    const int li = *g.members.begin();
    ir::Node *layout = nodes_[li];
    if (roles_[li] != Role::kLayout || layout->numOutputs() != 1 || layout->guarded()) continue;
    const ir::Value *out = layout->output(0);
    if (graph.isGraphOutput(out) || !out->guardUsers().empty() || !foldsAsIndexArithmetic(*layout))
      continue;
    auto it = users_.find(out);
    if (it == users_.end()) continue;
    // Consumer kernels in the order of their first reader; only direct
    // readers (a view in between would have to be cloned as well).
    std::vector<int> order;
    absl::flat_hash_map<int, std::vector<ir::Node *>> readers;
    bool ok = true;
    for (ir::Node *u : it->second) {
      const int ui = index_.at(u), cg = groupOf_[ui];
      if (roles_[ui] == Role::kView || cg < 0 || cg == static_cast<int>(gi)) {
        ok = false;
        break;
      }
      auto &r = readers[cg];
      if (r.empty()) order.push_back(cg);
      if (std::find(r.begin(), r.end(), u) == r.end()) r.push_back(u);
    }
    if (!ok || order.size() < 2) continue;
    // Each consumer kernel must take the layout op as one of its own: the
    // merge rules with a single reader, then the backend's lowering of the
    // union. A clone reads only the layout op's inputs, which every
    // consumer kernel already follows, so the union stays acyclic.
    for (int cg : order) {
      const ir::Node &reader = *readers[cg].front();
      FusionDecision d = canFuse(g.shape, *layout, groups_[cg].shape, reader, *out, /*producerUsers=*/1,
                                 /*usersOutside=*/0, /*producerIsGraphOutput=*/false, ctx.target);
      if (d && groups_[cg].members.size() + 1 > kMaxGroupNodes) d = FusionDecision::no("group too large");
      if (d && graphIndex_) {
        // As the clone: read by this kernel's readers only, so not one of
        // the kernel's outputs.
        std::vector<ir::Node *> &users = graphIndex_->users[out];
        std::vector<ir::Node *> all = users;
        users = readers[cg];
        d = backendAccepts(graph, ctx, static_cast<int>(gi), cg);
        users = std::move(all);
      }
      if (!d) {
        if (debug_)
          std::fprintf(stderr, "[fusion] not re-gathering '%s' in each consumer: into '%s': %s\n",
                       printable(layout->name()).c_str(), printable(reader.name()).c_str(),
                       printable(d.reason()).c_str());
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    Candidate c{layout, {}};
    for (int cg : order) {
      auto &r = readers[cg];
      std::sort(r.begin(), r.end(), [&](ir::Node *a, ir::Node *b) { return index_.at(a) < index_.at(b); });
      c.readers.push_back(std::move(r));
    }
    candidates.push_back(std::move(c));
  }
  // The first consumer kernel keeps the original; every other one gets a
  // clone placed before its first reader.
  int clones = 0;
  for (Candidate &c : candidates) {
    ir::Value *out = c.layout->output(0);
    // For the dump (describeKernel): how many kernels re-gather it.
    c.layout->setAttr(kRegatheredAttr, ir::Attribute(static_cast<int64_t>(c.readers.size())));
    for (size_t k = 1; k < c.readers.size(); ++k) {
      ir::Node *first = c.readers[k].front();
      ir::Node *clone = graph.addNode(c.layout->opType(), c.layout->inputs(), {graph.uniqueName(out->name())},
                                      c.layout->attrs(), absl::StrCat(c.layout->name(), "/regathered_", k),
                                      first, c.layout->domain());
      clone->output(0)->setType(out->type());
      for (ir::Node *u : c.readers[k])
        for (int i = 0; i < u->numInputs(); ++i)
          if (u->input(i) == out) u->setInput(i, clone->output(0));
      ++clones;
    }
  }
  return clones;
}

bool Fusion::reachesIndirectly(int from, int to, std::string *via) const {
  // Depth-first over the group graph; a group whose first member comes
  // after the last member of `to` cannot reach it.
  const int limit = *groups_[to].members.rbegin();
  std::vector<int> work;
  absl::flat_hash_set<int> seen;
  for (int s : groups_[from].succs)
    if (s != to && seen.insert(s).second) work.push_back(s);
  while (!work.empty()) {
    const int x = work.back();
    work.pop_back();
    if (*groups_[x].members.begin() > limit) continue;
    if (groups_[x].succs.count(to)) {
      *via = nodes_[*groups_[x].members.begin()]->name();
      return true;
    }
    for (int s : groups_[x].succs)
      if (s != to && seen.insert(s).second) work.push_back(s);
  }
  return false;
}

bool Fusion::staysConvex(int a, int b, std::string *via) const {
  // No path may leave the merged group and re-enter it: in the group graph
  // (kernels run as units), neither group reaches the other through a third.
  return !reachesIndirectly(a, b, via) && !reachesIndirectly(b, a, via);
}

FusionDecision Fusion::backendAccepts(const ir::Graph &graph, const PassContext &ctx, int a,
                                      int b) const {
  if (!ctx.legality) return FusionDecision::yes();
  std::vector<const ir::Node *> members;
  for (int g : {a, b})
    if (g >= 0)
      for (int m : groups_[g].members) members.push_back(nodes_[m]);
  absl::Status st = ctx.legality->checkGroup(graph, members, *graphIndex_);
  if (st.ok() || st.code() != absl::StatusCode::kUnimplemented) return FusionDecision::yes();
  return FusionDecision::no(absl::StrCat("lowering refuses the merged group: ", st.message()));
}

std::string Fusion::backendRefuses(const ir::Graph &graph, const PassContext &ctx, const Group &g) const {
  if (!ctx.legality || g.lowers) return "";
  std::vector<const ir::Node *> members;
  for (int m : g.members) members.push_back(nodes_[m]);
  absl::Status st = graphIndex_ ? ctx.legality->checkGroup(graph, members, *graphIndex_)
                                : ctx.legality->canLowerGroup(graph, members);
  if (st.ok() || st.code() != absl::StatusCode::kUnimplemented) return "";
  return std::string(st.message());
}

int Fusion::merge(int into, int from) {
  const GroupShape consumerShape = groups_[into].shape, producerShape = groups_[from].shape;
  int keep = into, drop = from;
  auto weight = [&](int g) {
    return groups_[g].members.size() + groups_[g].preds.size() + groups_[g].succs.size();
  };
  if (weight(from) > weight(into)) std::swap(keep, drop);
  Group &k = groups_[keep], &d = groups_[drop];
  for (int m : d.members) {
    k.members.insert(m);
    groupOf_[m] = keep;
  }
  for (int s : d.succs) {
    groups_[s].preds.erase(drop);
    if (s != keep) {
      groups_[s].preds.insert(keep);
      k.succs.insert(s);
    }
  }
  for (int p : d.preds) {
    groups_[p].succs.erase(drop);
    if (p != keep) {
      groups_[p].succs.insert(keep);
      k.preds.insert(p);
    }
  }
  k.unchecked = k.unchecked || d.unchecked;
  d.alive = false;
  d.members.clear();
  d.preds.clear();
  d.succs.clear();
  k.shape = consumerShape;
  GroupShape &g = k.shape;
  const GroupShape &f = producerShape;
  auto rank = [](KernelKind k) {
    switch (k) {
      case KernelKind::kGemm: case KernelKind::kConv: case KernelKind::kAttention: return 4;
      case KernelKind::kReduction: return 3;
      case KernelKind::kElementwise: return 2;
      case KernelKind::kLayout: return 1;
      default: return 0;
    }
  };
  if (rank(f.kind) > rank(g.kind)) g.kind = f.kind;
  // Elementwise ops joined with layout ops make an elementwise kernel.
  if (g.kind == KernelKind::kLayout) g.kind = KernelKind::kElementwise;
  if (!g.anchor || (f.anchor && index_.at(f.anchor) < index_.at(g.anchor)))
    g.anchor = f.anchor ? f.anchor : g.anchor;
  g.reductions += f.reductions;
  k.lowers = true;  // merges are asked first (backendAccepts); a deferred one resets it
  return keep;
}

std::string Fusion::describeKernel(const Group &g, const TargetSpec &target) const {
  std::string why = describeGroupKind(g, target);
  // Layout ops that became index arithmetic of a computing kernel.
  if (g.shape.kind == KernelKind::kElementwise || g.shape.kind == KernelKind::kReduction ||
      (g.shape.kind == KernelKind::kLayout && g.members.size() > 1)) {
    std::vector<std::pair<std::string, int>> notes;
    for (int m : g.members) {
      std::string note = describeFoldedLayout(*nodes_[m]);
      if (note.empty()) continue;
      auto it = std::find_if(notes.begin(), notes.end(), [&](const auto &n) { return n.first == note; });
      if (it == notes.end()) notes.push_back({note, 1});
      else ++it->second;
    }
    for (const auto &[note, count] : notes)
      absl::StrAppend(&why, "; ", note, count > 1 ? absl::StrCat(" (x", count, ")") : "");
  }
  for (int m : g.members)
    if (const ir::Attribute *a = nodes_[m]->attr(kRegatheredAttr))
      absl::StrAppend(&why, "; ", nodes_[m]->opType(), " re-gathered here and in each of the ", a->i(),
                      " kernels that read it, instead of one layout kernel storing it");
  return why;
}

std::string Fusion::describeGroupKind(const Group &g, const TargetSpec &target) const {
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
    case KernelKind::kAttention: {
      std::vector<std::string> folded;
      for (int m : g.members)
        if (nodes_[m]->kind() != ir::OpKind::kFusedAttention) folded.push_back(nodes_[m]->opType());
      return absl::StrCat("fused attention (online softmax over keys; scores never reach memory)",
                          folded.empty() ? ""
                                         : absl::StrCat("; ", absl::StrJoin(folded, ", "),
                                                        " folded into its operand strides (no layout kernel)"));
    }
    default:
      return "runs on its own";
  }
}

int Fusion::newGroup(int i) {
  Group g;
  g.shape.kind = seedKind(roles_[i], *nodes_[i]);
  if (roles_[i] == Role::kContraction || roles_[i] == Role::kRowReduction)
    g.shape.anchor = nodes_[i];
  g.shape.reductions = roles_[i] == Role::kRowReduction ? 1 : 0;
  g.members.insert(i);
  groupOf_[i] = static_cast<int>(groups_.size());
  groups_.push_back(std::move(g));
  return groupOf_[i];
}

void Fusion::linkNode(int i) {
  const int g = groupOf_[i];
  for (int p : realPreds_[i])
    if (groupOf_[p] != g) {
      groups_[groupOf_[p]].succs.insert(g);
      groups_[g].preds.insert(groupOf_[p]);
    }
  for (int c : realSuccs_[i])
    if (groupOf_[c] != g) {
      groups_[g].succs.insert(groupOf_[c]);
      groups_[groupOf_[c]].preds.insert(g);
    }
}

void Fusion::visitConsumer(ir::Graph &graph, PassContext &ctx, size_t ci,
                           const std::set<int> *within, bool eager) {
  ir::Node *consumer = nodes_[ci];
  for (const ir::Value *in : consumer->inputs()) {
    if (!in || in->isConstant()) continue;
    const ir::Node *producer = realProducer(in);
    if (!producer) continue;
    const int pi = index_.at(producer);
    if (within && !within->count(pi)) continue;
    const int pg = groupOf_[pi], cg = groupOf_[ci];
    if (pg == cg) continue;
    // The producer's own result that the consumer reads (through views).
    const ir::Value *value = in;
    while (value->producer() != producer) value = value->producer()->input(0);
    bool isOutput = false;
    int64_t users = realUsers(graph, value, &isOutput);
    int64_t outside = 0;
    if (users > 1)
      for (int u : realUserNodes(value)) outside += groupOf_[u] != cg;
    FusionDecision d = canFuse(groups_[pg].shape, *producer, groups_[cg].shape, *consumer, *value,
                               users, outside, isOutput, ctx.target);
    std::string via;
    if (d && groups_[pg].members.size() + groups_[cg].members.size() > kMaxGroupNodes)
      d = FusionDecision::no(absl::StrCat("the group would exceed ", kMaxGroupNodes,
                                          " nodes (one kernel's compile time grows faster than its size)"));
    if (d && !staysConvex(pg, cg, &via))
      d = FusionDecision::no(absl::StrCat("fusing would create a cycle through '", via, "'"));
    const bool deferred =
        !eager && groups_[pg].members.size() + groups_[cg].members.size() > kEagerLegalityLimit;
    if (d && !deferred) d = backendAccepts(graph, ctx, pg, cg);
    if (d) {
      const int g = merge(cg, pg);
      if (deferred) {
        groups_[g].unchecked = true;
        groups_[g].lowers = false;  // asked once, on the final group
      }
      // A layout op folded into an attention's operand strides: its own
      // producers (a Split before the head Transpose) were asked before it
      // joined; ask again now that it is part of the attention.
      if (groups_[g].shape.kind == KernelKind::kAttention && producer->kind() != ir::OpKind::kFusedAttention) {
        forgetRefusalsInto(ctx, producer->name());
        visitConsumer(graph, ctx, pi, within, eager);
      }
      continue;
    }
    if (refused_.insert({producer->name(), consumer->name()}).second) {
      ctx.fusionPlan.refusals.push_back({producer->name(), consumer->name(), d.reason()});
      if (debug_)
        std::fprintf(stderr, "[fusion] not fusing '%s' into '%s': %s\n",
                     printable(producer->name()).c_str(), printable(consumer->name()).c_str(),
                     printable(d.reason()).c_str());
    }
  }
}

/// Rounds of layout duplication at most: a clone's own producer (a
/// Transpose under a Slice) becomes shared by the clones and is cloned in
/// the next round; four covers Gather/Transpose -> Split -> Slice chains.
constexpr int kMaxLayoutRounds = 4;

absl::StatusOr<bool> Fusion::run(ir::Graph &graph, PassContext &ctx) { return runRound(graph, ctx, 0); }

absl::StatusOr<bool> Fusion::runRound(ir::Graph &graph, PassContext &ctx, int round) {
  if (ctx.target.name.empty()) {
    FUSEC_ASSIGN_OR_RETURN(ctx.target, loadBuiltinTarget("h200"));
  }
  // Guards that earlier rewrites dropped (ir::propagateGuards), so that a
  // branch's rewritten nodes (a Gemm from MatMul + Add) still run only
  // when their branch is taken.
  if (int64_t n = ir::propagateGuards(graph)) ctx.statistics["fusion.guards-propagated"] += n;
  nodes_ = graph.nodes();
  index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i]] = static_cast<int>(i);
  users_ = graph.userMap();
  realUsersMemo_.clear();
  graphIndex_.reset();
  if (ctx.legality) graphIndex_.emplace(graph);
  roles_.assign(nodes_.size(), Role::kOpaque);
  groupOf_.assign(nodes_.size(), -1);
  groups_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i]->attrs().erase(kKernelAttr);
    roles_[i] = roleOf(*nodes_[i]);
    if (roles_[i] != Role::kView) newGroup(static_cast<int>(i));
  }
  // The data edges between non-view nodes, views looked through (every
  // input of a view: its data and, say, a computed shape), and the guard
  // edges: a guarded node runs after its conditions are computed, so a
  // group holding a condition's producer and a reader of the guarded node
  // (the If's Where) would be a cycle, which staysConvex() then refuses.
  realPreds_.assign(nodes_.size(), {});
  realSuccs_.assign(nodes_.size(), {});
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (roles_[i] == Role::kView) continue;
    std::vector<const ir::Value *> work(nodes_[i]->inputs().begin(), nodes_[i]->inputs().end());
    for (const ir::GuardTerm &t : nodes_[i]->guard()) work.push_back(t.cond);
    absl::flat_hash_set<int> seen;
    while (!work.empty()) {
      const ir::Value *in = work.back();
      work.pop_back();
      if (!in || !in->producer()) continue;
      auto it = index_.find(in->producer());
      if (it == index_.end()) continue;
      const int p = it->second;
      if (roles_[p] == Role::kView) {
        for (const ir::Value *vin : nodes_[p]->inputs()) work.push_back(vin);
      } else if (seen.insert(p).second) {
        realPreds_[i].push_back(p);
        realSuccs_[p].push_back(static_cast<int>(i));
      }
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (roles_[i] != Role::kView) linkNode(static_cast<int>(i));

  FusionPlan &plan = ctx.fusionPlan;
  plan.target = ctx.target.name;
  plan.kernels.clear();
  // Refusals recorded by the attention rewrite (it runs earlier) stay.
  plan.refusals.erase(std::remove_if(plan.refusals.begin(), plan.refusals.end(),
                                     [](const Refusal &r) {
                                       return r.reason.rfind("attention rewrite:", 0) != 0;
                                     }),
                      plan.refusals.end());
  refused_.clear();
  debug_ = ctx.debugEnabled("fusion");

  for (size_t ci = 0; ci < nodes_.size(); ++ci)
    if (roles_[ci] != Role::kView) visitConsumer(graph, ctx, ci, nullptr, /*eager=*/false);
  regatherLayouts(graph, ctx);

  // Groups merged beyond the eager limit: one check of the final group; a
  // refused one is split into its nodes and fused again, every merge checked.
  for (size_t gi = 0, n = groups_.size(); gi < n; ++gi) {
    if (!groups_[gi].alive || !groups_[gi].unchecked) continue;
    groups_[gi].unchecked = false;
    if (backendAccepts(graph, ctx, static_cast<int>(gi), -1)) {
      groups_[gi].lowers = true;
      continue;
    }
    const std::set<int> members = groups_[gi].members;
    for (int p : groups_[gi].preds) groups_[p].succs.erase(static_cast<int>(gi));
    for (int s : groups_[gi].succs) groups_[s].preds.erase(static_cast<int>(gi));
    groups_[gi] = Group();
    groups_[gi].alive = false;
    for (int m : members) newGroup(m);
    for (int m : members) linkNode(m);
    for (int m : members) visitConsumer(graph, ctx, m, &members, /*eager=*/true);
  }

  if (round < kMaxLayoutRounds)
    if (int clones = duplicateSharedLayouts(graph, ctx)) {
      ctx.statistics["fusion.layout-clones"] += clones;
      return runRound(graph, ctx, round + 1);
    }

  // A pair refused early and joined later (a Split asked before its head
  // Transposes folded into an attention, ir order) is no refusal.
  {
    absl::flat_hash_map<std::string, int> groupOfName;
    for (size_t i = 0; i < nodes_.size(); ++i) groupOfName[nodes_[i]->name()] = groupOf_[i];
    auto &r = plan.refusals;
    r.erase(std::remove_if(r.begin(), r.end(),
                           [&](const Refusal &x) {
                             auto p = groupOfName.find(x.producer), c = groupOfName.find(x.consumer);
                             return x.reason.rfind("attention rewrite:", 0) != 0 && !x.producer.empty() &&
                                    p != groupOfName.end() && c != groupOfName.end() &&
                                    p->second == c->second && p->second >= 0;
                           }),
            r.end());
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
    GroupCost cost = groupCost(graph, members, ctx.target, users_);
    // What the lowering adds (a second launch for an epilogue the library
    // does not fuse, and its pass over the result), when it lowers.
    const bool describe = ctx.legality && graphIndex_ &&
                          (g.shape.kind == KernelKind::kGemm || g.shape.kind == KernelKind::kConv ||
                           g.shape.kind == KernelKind::kAttention);
    std::string refusal = backendRefuses(graph, ctx, g);
    program::GroupNote note;
    if (describe && refusal.empty()) note = ctx.legality->describeGroup(graph, members, *graphIndex_);
    addLoweringBytes(cost, note.extraBytes, ctx.target);
    fillKernelCost(cost, kernel);
    kernel.launches = std::max(1, note.launches);
    if (kernel.kind == KernelKind::kAttention)
      for (const ir::Node *m : members)
        if (m->kind() == ir::OpKind::kFusedAttention) {
          kernel.scoreMod = m->getString("score_mod", "");
          kernel.mask = m->getString("mask", "");
          kernel.maskedRowsMean = m->getString("masked_rows", "") == "mean";
          countSkippedKeyTiles(*m, kernel);
        }
    kernel.reason = describeKernel(g, ctx.target);
    if (!members.empty())
      for (const ir::GuardTerm &t : members.front()->guard())
        kernel.guard.push_back({t.cond->name(), t.when});
    kernel.refused = std::move(refusal);
    if (!note.text.empty()) absl::StrAppend(&kernel.reason, "; ", note.text);
    if (!kernel.refused.empty()) {
      ++refusedKernels;
      if (debug_)
        std::fprintf(stderr, "[fusion] the lowering refuses kernel '%s': %s\n", kernel.name.c_str(),
                     printable(kernel.refused).c_str());
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
