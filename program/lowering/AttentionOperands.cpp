//===- AttentionOperands.cpp - Layout chains folded into attention strides -===//
//
// An attention group (one FusedAttention plus Transpose / Slice / Split
// members, fusion's attention-layout rule) is one attention kernel: each of
// Q, K and V is read where its chain of members and views starts (the
// "root", a Value some other step writes, an input or a weight), through
// the affine map that the chain composes (StridedView: an element offset and
// one stride per dim), and the output is written straight into the result of
// a member Transpose of it. So GPT-2's Split of the fused QKV projection and
// the head Transposes, and the Slices that gemm-merge leaves, cost no layout
// kernel: the attention kernel's Q/K/V/O strides (AttentionSpec) say it.
//
// A strided operand whose offset is not 0 is bound as a StridedAlias (the
// chain's last Value, an alias of the root at that offset; MemoryPlan).
// Reshape on a strided view follows NumPy's no-copy rule
// (numpy/core/src/multiarray/shape.c, _attempt_nocopy_reshape): each group
// of input dims merged or split by the reshape must be contiguous within
// itself; otherwise the group is refused and fusion keeps the layout kernel.
//
//===----------------------------------------------------------------------===//
#include "program/AttentionSpec.h"
#include "program/lowering/GroupLowering.h"

#include <algorithm>

namespace fusec::program::lowering {

namespace {

/// A tensor of `shape` as a view of a dense buffer: element (i_0, .., i_r-1)
/// lives at offset + sum_d strides[d] * i_d (elements).
struct StridedView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  static StridedView dense(const Shape &s) {
    StridedView v;
    v.shape = s;
    v.strides.assign(s.size(), 0);
    int64_t st = 1;
    for (size_t d = s.size(); d-- > 0;) {
      v.strides[d] = st;
      st *= s[d];
    }
    return v;
  }
};

/// \p v reshaped to \p to without moving data (NumPy's no-copy rule; a dim
/// of extent 1 gets the stride of the dims inside it times their extent). Errors: Unimplemented naming \p n when a merged
/// or split group of dims is not contiguous.
absl::Status reshapeView(const Node &n, const Shape &to, StridedView &v) {
  if (prod(v.shape) != prod(to) || prod(to) == 0) return unimplemented(n, "reshape of a different or empty size");
  std::vector<int64_t> oldShape, oldStrides;
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1) {
      oldShape.push_back(v.shape[d]);
      oldStrides.push_back(v.strides[d]);
    }
  std::vector<size_t> newIdx;  // dims of `to` with extent != 1
  for (size_t d = 0; d < to.size(); ++d)
    if (to[d] != 1) newIdx.push_back(d);
  std::vector<int64_t> ns(to.size(), 0);
  size_t oi = 0, ni = 0;
  while (oi < oldShape.size() && ni < newIdx.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = oldShape[oi], np = to[newIdx[ni]];
    while (op != np) {
      if (op < np) op *= oldShape[oj++];
      else np *= to[newIdx[nj++]];
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (oldStrides[k] != oldStrides[k + 1] * oldShape[k + 1])
        return unimplemented(n, "the reshape merges dims that are not contiguous in the operand's layout");
    int64_t st = oldStrides[oj - 1];
    for (size_t k = nj; k-- > ni;) {
      ns[newIdx[k]] = st;
      st *= to[newIdx[k]];
    }
    oi = oj;
    ni = nj;
  }
  // Dims of extent 1 are never advanced; give them the stride a dense
  // layout would (libraries check leading dimensions, e.g. BLAS lda >= cols).
  for (size_t d = to.size(); d-- > 0;)
    if (to[d] == 1) ns[d] = d + 1 < to.size() ? ns[d + 1] * to[d + 1] : 1;
  v.shape = to;
  v.strides = std::move(ns);
  return absl::OkStatus();
}

/// \p v, the view of \p n's data input, becomes the view of \p n's result
/// \p out. Errors: Unimplemented for other ops and non-constant bounds.
absl::Status applyLayoutNode(const Node &n, const Value *out, StridedView &v) {
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(out));
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  auto norm = [&](int64_t a) { return a < 0 ? a + rank : a; };
  if (isViewNode(n)) return reshapeView(n, os, v);
  switch (n.kind()) {
    case OpKind::kTranspose: {
      std::vector<int64_t> perm = n.getInts("perm");
      if (perm.empty())
        for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      StridedView t = v;
      for (int64_t i = 0; i < rank; ++i) {
        t.shape[i] = v.shape[perm[i]];
        t.strides[i] = v.strides[perm[i]];
      }
      v = std::move(t);
      return absl::OkStatus();
    }
    case OpKind::kSlice: {
      FUSEC_ASSIGN_OR_RETURN(std::vector<SliceAxis> sliced, constSliceAxes(n, v.shape));
      for (const SliceAxis &sa : sliced) {
        if (os[sa.axis] > 0) v.offset += sa.start * v.strides[sa.axis];
        v.strides[sa.axis] *= sa.step;
      }
      v.shape = os;
      return absl::OkStatus();
    }
    case OpKind::kSplit: {
      const int64_t a = norm(n.getInt("axis", 0));
      int64_t start = 0;
      for (int k = 0; k < n.numOutputs() && n.output(k) != out; ++k) {
        FUSEC_ASSIGN_OR_RETURN(Shape ks, staticShape(n.output(k)));
        start += ks[a];
      }
      v.offset += start * v.strides[a];
      v.shape = os;
      return absl::OkStatus();
    }
    default:
      return unimplemented(n, "not a layout op that folds into attention strides");
  }
}

}  // namespace

absl::StatusOr<std::vector<WorkItem>> lowerAttentionGroup(
    const std::string &name, const std::vector<const Node *> &members, const LoweringOptions &opts,
    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users,
    const std::vector<const Value *> &graphOutputs) {
  const Node *att = nullptr;
  for (const Node *n : members)
    if (n->kind() == OpKind::kFusedAttention) {
      if (att) return unimplemented(*n, "two attentions in one kernel");
      att = n;
    }
  if (!att) return absl::InternalError("lowerAttentionGroup: no FusedAttention member");
  const std::set<const Node *> inGroup(members.begin(), members.end());
  for (const Node *n : members) {
    if (n == att) continue;
    if (!opts.foldAttentionLayouts)
      return unimplemented(*n, "the target's attention kernel reads dense Q, K, V and O; layout ops run as kernels");
    if (n->kind() != OpKind::kTranspose && n->kind() != OpKind::kSlice && n->kind() != OpKind::kSplit)
      return unimplemented(*n, "only Transpose, Slice and Split fold into an attention kernel's operand strides");
  }
  auto isOutput = [&](const Value *v) {
    return std::find(graphOutputs.begin(), graphOutputs.end(), v) != graphOutputs.end();
  };
  auto usersOf = [&](const Value *v) -> const std::vector<Node *> & {
    static const std::vector<Node *> none;
    auto it = users.find(v);
    return it == users.end() ? none : it->second;
  };
  // The output: written densely into a member Transpose's result.
  const Node *outT = nullptr;
  for (const Node *u : usersOf(att->output(0)))
    if (inGroup.count(u)) outT = u;
  if (outT && (usersOf(att->output(0)).size() != 1 || isOutput(att->output(0))))
    return unimplemented(*outT, "the attention's own result is also read elsewhere; it is stored as is");
  // Every other member result stays inside the chains (through views): it
  // is never stored.
  std::function<absl::Status(const Value *)> inside = [&](const Value *v) -> absl::Status {
    if (isOutput(v)) return unimplemented(*v->producer(), absl::StrCat("'", v->name(), "' is a graph output"));
    for (const Node *u : usersOf(v)) {
      if (u == att || inGroup.count(u)) continue;
      if (isViewNode(*u) && u->input(0) == v) {
        FUSEC_RETURN_IF_ERROR(inside(u->output(0)));
        continue;
      }
      return unimplemented(*u, absl::StrCat("it reads '", v->name(),
                                            "', a layout folded into an attention kernel (never stored)"));
    }
    return absl::OkStatus();
  };
  for (const Node *n : members) {
    if (n == att || n == outT) continue;
    for (const Value *o : n->outputs())
      if (o) FUSEC_RETURN_IF_ERROR(inside(o));
  }

  WorkItem it;
  it.kind = WorkItem::Kind::kKernel;
  it.name = name;
  it.nodes = members;
  FUSEC_ASSIGN_OR_RETURN(it.spec.attention, attentionSpecFor(*att));
  it.spec.kind = SpecKind::kAttention;
  AttentionSpec &a = it.spec.attention;
  std::array<int64_t, 4> *strides[3] = {&a.qStrides, &a.kStrides, &a.vStrides};
  for (int i = 0; i < att->numInputs(); ++i) {
    const Value *in = att->input(i);
    it.spec.addBuffer(in->type().dtype, in->type().staticShape(), false);
    it.buffers.push_back(in);
    if (i >= 3) {
      // The bias and the mask are read densely: a member producing one
      // would leave it unwritten (no step stores a folded layout).
      if (in->producer() && inGroup.count(in->producer()))
        return unimplemented(*in->producer(), "only Q, K and V fold into an attention kernel's operand strides");
      continue;
    }
    // The chain up to the root: members and views.
    std::vector<std::pair<const Node *, const Value *>> chain;  // (node, its result on the path)
    const Value *root = in;
    bool folds = false;
    while (root->producer() && (inGroup.count(root->producer()) || isViewNode(*root->producer()))) {
      folds |= inGroup.count(root->producer()) != 0;
      chain.push_back({root->producer(), root});
      root = root->producer()->input(0);
    }
    if (!folds) continue;  // dense as before (views of a stored tensor)
    FUSEC_ASSIGN_OR_RETURN(Shape rs, staticShape(root));
    StridedView v = StridedView::dense(rs);
    for (size_t c = chain.size(); c-- > 0;) FUSEC_RETURN_IF_ERROR(applyLayoutNode(*chain[c].first, chain[c].second, v));
    if (v.shape.size() != 4) return unimplemented(*att, "a folded operand is not rank 4");
    if (v.shape[3] == 1) v.strides[3] = 1;
    if (v.strides[3] != 1)
      return unimplemented(*chain.front().first, "the folded operand's head dim is not contiguous");
    // 16-byte-aligned starts for every dtype (the CUDA kernels' vector loads).
    if (v.offset % 8 != 0)
      return unimplemented(*chain.front().first,
                           absl::StrCat("the folded operand starts at element ", v.offset,
                                        " of its root, not a multiple of 8"));
    if (v.offset + prod(v.shape) > prod(rs))
      return unimplemented(*chain.front().first, "the folded operand's span leaves its root");
    for (int d = 0; d < 4; ++d) (*strides[i])[d] = v.strides[d];
    it.aliases.push_back({in, root, v.offset});
  }
  const Value *o = att->output(0);
  if (outT) {
    o = outT->output(0);
    std::vector<int64_t> perm = outT->getInts("perm", {3, 2, 1, 0});
    if (perm.size() != 4 || perm[3] != 3)
      return unimplemented(*outT, "the transpose of the attention's result moves its head dim");
    const StridedView dense = StridedView::dense(o->type().staticShape());
    // T[j] = O[perm[j]]: O's dim perm[j] advances T's dim j.
    for (int j = 0; j < 4; ++j) a.oStrides[perm[j]] = dense.strides[j];
  }
  it.spec.addBuffer(o->type().dtype, o->type().staticShape(), true);
  it.buffers.push_back(o);
  return std::vector<WorkItem>{std::move(it)};
}

}  // namespace fusec::program::lowering
