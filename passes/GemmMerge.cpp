//===- GemmMerge.cpp - Merge GEMMs that share their activation -------------===//
//
// GEMMs that read the same activation A with constant weights of the same K
// (BERT's separate Q, K and V projections, LLaMA's q/k/v and its SwiGLU gate
// and up projections) become one GEMM whose weight (and bias) is the
// members' concatenated along N at compile time, followed by Slices along
// the last axis (one per use of each member's result, so that each folds
// into its consumer's kernel); the consumers read their slices.
// One larger GEMM keeps the library's tiles fuller and launches once; the
// slices are index arithmetic that the consumers' kernels fold in (their
// index maps, program/lowering/Layout.cpp, or the attention operand
// strides, program/lowering/Orchestration.cpp).
//
// Forms (after canonicalisation):
//   MatMul(A, W)            A [..., K], W constant [K, N_i]; optionally its
//                           one user Add(., b_i) with b_i constant of N_i
//                           elements (shape [N_i] or [1, .., N_i]): the bias
//   Gemm(A, B, C)           transA = 0; B constant ([K, N_i], or [N_i, K]
//                           with transB = 1); C constant of N_i elements
//                           or absent; same transB, alpha and beta
// Members of one merge have the same form, A, dtype, K (and transB, alpha,
// beta for Gemm) and guard. A member without a bias gets zeros in the
// merged bias when another member has one. Weights are copied bytewise
// (exact in every dtype). The merged node sits before the first member in
// graph order, so A and every consumer stay in order.
//
// Each GEMM considered (a MatMul/Gemm whose A has another MatMul/Gemm
// reader) is recorded in ctx.fusionPlan.gemmMerges, merged or not, with the
// reason; --dump-fusion prints them. Statistics: "gemm-merge.merged" (GEMMs
// removed), "gemm-merge.groups".
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/Pass.h"
#include "passes/utils/PatternUtils.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

/// One GEMM that may join a merge.
struct Candidate {
  ir::Node *gemm = nullptr;
  ir::Node *biasAdd = nullptr;         ///< MatMul form: the Add that adds its bias, if any
  const ir::Tensor *bias = nullptr;    ///< constant bias (Add operand or Gemm C), if any
  int64_t k = 0, n = 0;
  bool transB = false;
};

/// What must agree for two candidates to merge (besides A).
struct MergeKey {
  ir::OpKind kind;
  ir::DType dtype;
  int64_t k;
  bool transB;
  float alpha, beta;
  bool operator<(const MergeKey &o) const {
    return std::tie(kind, dtype, k, transB, alpha, beta) < std::tie(o.kind, o.dtype, o.k, o.transB, o.alpha, o.beta);
  }
};

std::string gemmName(const ir::Node *n) { return n->name().empty() ? n->output(0)->name() : n->name(); }

class GemmMerge : public Pass {
 public:
  const char *name() const override { return "gemm-merge"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    // Collect: per activation, its GEMM readers in graph order.
    UseInfo uses(graph);
    std::vector<const ir::Value *> activations;
    std::map<const ir::Value *, std::vector<ir::Node *>> readers;
    for (ir::Node *n : graph.nodes()) {
      if (n->kind() != ir::OpKind::kMatMul && n->kind() != ir::OpKind::kGemm) continue;
      const ir::Value *a = n->input(0);
      if (!a) continue;
      if (!readers.count(a)) activations.push_back(a);
      readers[a].push_back(n);
    }
    std::vector<std::vector<Candidate>> merges;
    for (const ir::Value *a : activations) {
      const std::vector<ir::Node *> &rs = readers[a];
      if (rs.size() < 2) continue;
      // Partition the legal candidates by key; guards split a key further.
      std::vector<std::pair<MergeKey, std::vector<Candidate>>> parts;
      for (ir::Node *n : rs) {
        Candidate c;
        MergeKey key{};
        std::string why = check(*n, uses, c, key);
        if (!why.empty()) {
          note(ctx, {gemmName(n)}, false, absl::StrCat("reads '", a->name(), "' with another GEMM but ", why));
          continue;
        }
        bool placed = false;
        for (auto &[pk, members] : parts) {
          if (pk < key || key < pk || members.front().gemm->guard() != n->guard()) continue;
          members.push_back(c);
          placed = true;
          break;
        }
        if (!placed) parts.push_back({key, {c}});
      }
      for (auto &[key, members] : parts) {
        if (members.size() >= 2) {
          merges.push_back(members);
          continue;
        }
        // Say which property kept it apart from the other readers of A.
        note(ctx, {gemmName(members[0].gemm)}, false,
             absl::StrCat("reads '", a->name(), "' with other GEMMs but no other has the same form (",
                          members[0].gemm->opType(), "), dtype, K = ", key.k,
                          key.kind == ir::OpKind::kGemm ? ", transB, alpha and beta" : "",
                          " and guard; its weight is not concatenated"));
      }
    }
    if (merges.empty()) return false;

    // Mutate.
    int64_t removed = 0;
    for (const std::vector<Candidate> &m : merges) {
      std::vector<std::string> names;  // before the rewrite renames results
      for (const Candidate &c : m) names.push_back(gemmName(c.gemm));
      FUSEC_ASSIGN_OR_RETURN(std::string how, merge(graph, m));
      note(ctx, names, true, how);
      removed += static_cast<int64_t>(m.size()) - 1;
    }
    graph.removeDeadNodes();
    ctx.statistics["gemm-merge.merged"] += removed;
    ctx.statistics["gemm-merge.groups"] += static_cast<int64_t>(merges.size());
    return true;
  }

 private:
  static void note(PassContext &ctx, std::vector<std::string> gemms, bool merged, std::string reason) {
    ctx.fusionPlan.gemmMerges.push_back({std::move(gemms), merged, std::move(reason)});
  }

  /// Fills \p c and \p key for GEMM \p n; \returns "" if it may merge, else why not.
  static std::string check(const ir::Node &n, const UseInfo &uses, Candidate &c, MergeKey &key) {
    c.gemm = const_cast<ir::Node *>(&n);
    const ir::Value *a = n.input(0), *b = n.input(1), *y = n.output(0);
    if (!b || !b->constant()) return "its weight (input 1) is not a constant";
    const ir::Tensor &w = *b->constant();
    const ir::DType dt = a->type().dtype;
    if (!ir::isFloat(dt) || w.dtype() != dt || y->type().dtype != dt)
      return absl::StrCat("its dtypes are not one float type (A ", ir::dtypeName(dt), ", weight ",
                          ir::dtypeName(w.dtype()), ")");
    if (w.rank() != 2) return absl::StrCat("its weight has rank ", w.rank(), ", not 2 (a batched or vector weight)");
    key.kind = n.kind();
    key.dtype = dt;
    key.alpha = key.beta = 1.0f;
    if (n.kind() == ir::OpKind::kGemm) {
      if (n.getInt("transA", 0) != 0) return "it transposes A (transA = 1)";
      c.transB = n.getInt("transB", 0) != 0;
      key.alpha = n.getFloat("alpha", 1.0f);
      key.beta = n.getFloat("beta", 1.0f);
      c.k = c.transB ? w.shape()[1] : w.shape()[0];
      c.n = c.transB ? w.shape()[0] : w.shape()[1];
      if (const ir::Value *cv = n.input(2)) {
        if (!cv->constant()) return "its C (input 2) is not a constant";
        const ir::Tensor &ct = *cv->constant();
        if (ct.dtype() != dt || ct.numElements() != c.n || ct.rank() < 1 || ct.shape().back() != c.n)
          return "its C is not a bias of N elements along the last axis (a full [M, N] C cannot be concatenated)";
        c.bias = &ct;
      }
    } else {
      if (a->type().rankKnown && a->type().rank() < 2) return "its A is a vector (rank 1)";
      c.k = w.shape()[0];
      c.n = w.shape()[1];
      // A constant bias added by the one user.
      const std::vector<ir::Node *> &us = uses.users(y);
      if (us.size() == 1 && us[0]->kind() == ir::OpKind::kAdd && !uses.isGraphOutput(y) &&
          us[0]->guard() == n.guard()) {
        ir::Node *add = us[0];
        const ir::Value *other = add->input(0) == y ? add->input(1) : add->input(0);
        const ir::Tensor *bt = other && other != y ? other->constant() : nullptr;
        if (bt && bt->dtype() == dt && bt->numElements() == c.n && bt->rank() >= 1 && bt->shape().back() == c.n &&
            add->output(0)->type() == y->type()) {
          c.biasAdd = add;
          c.bias = bt;
        }
      }
    }
    key.k = c.k;
    key.transB = c.transB;
    const ir::TensorType &at = a->type();
    if (at.rankKnown && at.rank() >= 1 && at.shape.back().isStatic() && at.shape.back().value != c.k)
      return "its A's last dim does not match its weight's K";
    return "";
  }

  /// Concatenates the members' weights along N (bytewise).
  static ir::Tensor concatWeights(const std::vector<Candidate> &m, int64_t totalN) {
    const Candidate &f = m.front();
    const ir::DType dt = f.gemm->input(1)->constant()->dtype();
    const int64_t es = ir::dtypeSize(dt);
    const ir::Shape shape = f.transB ? ir::Shape{totalN, f.k} : ir::Shape{f.k, totalN};
    ir::Tensor out(dt, shape);
    uint8_t *dst = out.data();
    if (f.transB) {
      // [N_i, K] blocks stacked: each is contiguous.
      int64_t off = 0;
      for (const Candidate &c : m) {
        const ir::Tensor &w = *c.gemm->input(1)->constant();
        std::memcpy(dst + off, w.data(), static_cast<size_t>(w.byteSize()));
        off += w.byteSize();
      }
      return out;
    }
    // [K, N_i] blocks side by side: row r of the result is the members' rows r.
    for (int64_t r = 0; r < f.k; ++r) {
      int64_t col = 0;
      for (const Candidate &c : m) {
        const ir::Tensor &w = *c.gemm->input(1)->constant();
        std::memcpy(dst + (r * totalN + col) * es, w.data() + r * c.n * es, static_cast<size_t>(c.n * es));
        col += c.n;
      }
    }
    return out;
  }

  /// Concatenates the biases along N (zeros for a member without one), shape [totalN].
  static ir::Tensor concatBiases(const std::vector<Candidate> &m, ir::DType dt, int64_t totalN) {
    const int64_t es = ir::dtypeSize(dt);
    ir::Tensor out(dt, {totalN});
    std::memset(out.data(), 0, static_cast<size_t>(out.byteSize()));  // 0.0 in every float dtype
    int64_t col = 0;
    for (const Candidate &c : m) {
      if (c.bias) std::memcpy(out.data() + col * es, c.bias->data(), static_cast<size_t>(c.n * es));
      col += c.n;
    }
    return out;
  }

  /// Rewrites one merge; \returns the dump's description of it.
  static absl::StatusOr<std::string> merge(ir::Graph &graph, const std::vector<Candidate> &m) {
    const Candidate &f = m.front();
    ir::Node *first = f.gemm;
    const ir::DType dt = f.gemm->input(0)->type().dtype;
    int64_t totalN = 0;
    bool anyBias = false;
    std::vector<std::string> ns;
    for (const Candidate &c : m) {
      totalN += c.n;
      anyBias |= c.bias != nullptr;
      ns.push_back(absl::StrCat(c.n));
    }
    ir::Value *a = first->input(0);
    ir::Value *w = graph.addConstant(graph.uniqueName(absl::StrCat(first->input(1)->name(), ".merged")),
                                     concatWeights(m, totalN));
    ir::Value *merged = nullptr;
    if (first->kind() == ir::OpKind::kGemm) {
      std::vector<ir::Value *> ins = {a, w};
      if (anyBias)
        ins.push_back(graph.addConstant(graph.uniqueName(absl::StrCat(first->output(0)->name(), ".merged_c")),
                                        concatBiases(m, dt, totalN)));
      ir::AttributeMap attrs;
      for (const char *at : {"transB", "alpha", "beta"})
        if (const ir::Attribute *x = first->attr(at)) attrs[at] = *x;
      FUSEC_ASSIGN_OR_RETURN(ir::Node * g, createNodeBefore(graph, first, "Gemm", ins, attrs));
      g->setName(absl::StrCat(first->name(), ".merged"));
      g->setGuard(first->guard());
      merged = g->output(0);
    } else {
      FUSEC_ASSIGN_OR_RETURN(ir::Node * g, createNodeBefore(graph, first, "MatMul", {a, w}));
      g->setName(absl::StrCat(first->name(), ".merged"));
      g->setGuard(first->guard());
      merged = g->output(0);
      if (anyBias) {
        ir::Value *b = graph.addConstant(graph.uniqueName(absl::StrCat(first->output(0)->name(), ".merged_bias")),
                                         concatBiases(m, dt, totalN));
        FUSEC_ASSIGN_OR_RETURN(ir::Node * add, createNodeBefore(graph, first, "Add", {merged, b}));
        add->setName(absl::StrCat(first->name(), ".merged_bias"));
        add->setGuard(first->guard());
        merged = add->output(0);
      }
    }
    // One Slice per member along the last axis; its result replaces the
    // member's (bias Add's) result, under the member's name.
    int64_t off = 0;
    ir::Value *axes = graph.addConstant(graph.uniqueName("gemm_merge.axes"), ir::Tensor::vectorI64({-1}));
    for (const Candidate &c : m) {
      ir::Value *starts = graph.addConstant(graph.uniqueName("gemm_merge.start"), ir::Tensor::vectorI64({off}));
      ir::Value *ends = graph.addConstant(graph.uniqueName("gemm_merge.end"), ir::Tensor::vectorI64({off + c.n}));
      FUSEC_ASSIGN_OR_RETURN(ir::Node * s, createNodeBefore(graph, first, "Slice", {merged, starts, ends, axes}));
      s->setGuard(first->guard());
      ir::Node *last = c.biasAdd ? c.biasAdd : c.gemm;
      s->setName(absl::StrCat(last->name(), ".slice"));
      if (!replaceValue(graph, last->output(0), s->output(0), /*takeName=*/true))
        return absl::InternalError(absl::StrCat("gemm-merge: cannot replace the result of ", last->describe()));
      // One Slice per further use: fusion materialises a layout op with
      // several consumers, while a Slice of its own folds into each
      // consumer's index map (SwiGLU's gate feeds both Sigmoid and Mul).
      const std::vector<ir::Node *> users = s->output(0)->operandUsers();
      for (size_t u = 1; u < users.size(); ++u) {
        FUSEC_ASSIGN_OR_RETURN(ir::Node * su, createNodeBefore(graph, first, "Slice", {merged, starts, ends, axes}));
        su->setGuard(first->guard());
        su->setName(absl::StrCat(last->name(), ".slice_", u));
        graph.renameValue(su->output(0), graph.uniqueName(absl::StrCat(s->output(0)->name(), ".use")));
        for (int j = 0; j < users[u]->numInputs(); ++j)
          if (users[u]->input(j) == s->output(0)) {
            users[u]->setInput(j, su->output(0));
            break;
          }
      }
      off += c.n;
    }
    const bool transposed = f.transB;
    return absl::StrCat("same A '", a->name(), "', ", ir::dtypeName(dt), ", K = ", f.k,
                        transposed ? ", transB = 1" : "", ", constant weights: one ", first->opType(),
                        " of N = ", absl::StrJoin(ns, " + "), " = ", totalN,
                        anyBias ? ", biases concatenated" : "", ", then ", m.size(),
                        " slices along N that the consumers read");
  }
};

}  // namespace

std::unique_ptr<Pass> createGemmMerge() { return std::make_unique<GemmMerge>(); }

}  // namespace fusec::passes
