//===- FunctionExpansion.cpp - ONNX function ops as op-table ops ----------===//
//
// ONNX gives these ops no function body (ONNX functions are expanded
// from the library's bodies instead: OnnxFunctions.h), so they are written
// here from the op's formula in the spec (https://onnx.ai/onnx/operators/);
// constants take the input's dtype, so f16/bf16 models stay in their
// precision.
//
//   LpNormalization(x; axis, p in {1, 2})
//                            x / n with n = ReduceSum(|x|, [axis]) or ReduceL2(x, [axis])
//                            (keepdims), n = 0 replaced by 1 so a zero vector stays 0
//   InstanceNormalization(x, scale, B; epsilon)
//                            (x - mean) / Sqrt(var + epsilon) * scale[c] + B[c] over the
//                            spatial axes [2, rank), var = E[(x - mean)^2]
//
//   Einsum(inputs...; equation)
//                            canonical ops (the "Einsum" section below: diagonals
//                            by Reshape + Slice, sums by ReduceSum, contractions
//                            by Transpose + Reshape + MatMul, outer products by Mul)
//
//   DepthToSpace(x[N,C,H,W]; blocksize b, mode DCR|CRD)
//                            Reshape to [N,b,b,C/b^2,H,W] (DCR) or [N,C/b^2,b,b,H,W] (CRD),
//                            Transpose [0,3,4,1,5,2] (DCR) or [0,1,4,2,5,3] (CRD),
//                            Reshape to [N,C/b^2,H*b,W*b]
//   SpaceToDepth(x[N,C,H,W]; blocksize b, mode DCR|CRD (opset 25))
//                            Reshape to [N,C,H/b,b,W/b,b], Transpose [0,3,5,1,2,4] (DCR)
//                            or [0,1,3,5,2,4] (CRD),
//                            Reshape to [N,C*b^2,H/b,W/b]
//                            (the target shapes are computed from Shape(x), so symbolic
//                            dims stay symbolic until --shape binds them and they fold)
//   EyeLike(x[R,C]; dtype, k)
//                            Cast(Range(0,R)[:,None] + k == Range(0,C)[None,:], dtype)
//
// RotaryEmbedding (opset 23) and SimplifiedLayerNormalization (ONNX Runtime's,
// in the default domain) are written by ContribOps.cpp, with the contrib
// ops of the same name.
//
// Reductions are written in their opset-18 form (axes as input 1).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/FunctionExpansion.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/internal/ContribOps.h"
#include "frontend/onnx/internal/QuantizedOps.h"
#include "frontend/onnx/internal/RecurrentOps.h"
#include "frontend/onnx/internal/ExpansionBuilder.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

using ir::Attribute;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Value;

// RotaryEmbedding (ai.onnx opset 23, whose ONNX body is context-dependent and
// not built by the linked onnx library) and SimplifiedLayerNormalization (not
// an ONNX op: ONNX Runtime registers it in the default domain, and its
// transformer optimiser writes it there) share the contrib ops' mappings
// (ContribOps.h).
// Attention (opsets 23-25, context-dependent body as well) is written there
// too, next to the contrib attention mappings whose helpers it shares. LSTM,
// GRU and RNN are unrolled over their static sequence length (RecurrentOps.h).
// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv are written as
// i32 GEMMs plus the f64 requantisation (QuantizedOps.h). CastLike is its
// ONNX body, one Cast to input 1's dtype, written here because the linked
// library builds only CastLike-15's, which lacks the saturate (19) and
// round_mode (24) attributes and the float8 / float4 / int4 / int2 types.
constexpr std::string_view kExpanded[] = {"LpNormalization", "InstanceNormalization",
                                          "RotaryEmbedding", "SimplifiedLayerNormalization",
                                          "Einsum", "DepthToSpace", "SpaceToDepth", "EyeLike",
                                          "Attention", "LSTM", "GRU", "RNN", "MatMulInteger",
                                          "ConvInteger", "QLinearMatMul", "QLinearConv", "CastLike"};

using Builder = ExpansionBuilder;

/// Input \p i, which must be present and have a known dtype.
absl::StatusOr<Value *> input(const NodeSpec &spec, size_t i) { return requiredInput(spec, i); }

//===----------------------------------------------------------------------===//
// Einsum
//
// The equation's labels (a-z, A-Z, and one label per dim an ellipsis covers,
// right-aligned across the operands as numpy broadcasts them) become, in
// order: per operand, the diagonal of each repeated label (the two axes
// moved last, merged by Reshape, every (n+1)-th element taken by Slice:
// exact, and needs the dim static); a ReduceSum over the labels no other
// operand and not the output has; then the operands left to right, pairwise:
// labels in both that the output or a later operand needs are batch dims,
// the other shared labels are contracted by a MatMul of the operands
// transposed to [batch, free, contracted] / [batch, contracted, free] and
// reshaped to [batch, M, K] / [batch, K, N] (a Mul with broadcasting when
// nothing is contracted); last a Transpose to the output order. The implicit
// output (no "->") is numpy's: the ellipsis dims, then the labels that occur
// once, in ASCII order.
//===----------------------------------------------------------------------===//

/// Ellipsis labels start here (letters are 0..51).
constexpr int kEllipsisLabel = 100;

char labelChar(int l) { return l < 26 ? static_cast<char>('a' + l) : static_cast<char>('A' + l - 26); }
/// ASCII order of letters (uppercase first); ellipsis labels before letters.
int labelOrder(int l) { return l >= kEllipsisLabel ? l - 1000 : static_cast<int>(labelChar(l)); }

struct EinsumOperand {
  Value *v = nullptr;
  std::vector<int> labels;
};

class EinsumExpander {
 public:
  EinsumExpander(NodeSpec &spec, Builder &b, std::string eq) : spec_(spec), b_(b), eq_(std::move(eq)) {}

  absl::StatusOr<std::vector<Node *>> run() {
    std::string e;
    for (char ch : eq_)
      if (ch != ' ') e += ch;
    std::string lhs = e, rhs;
    const size_t arrow = e.find("->");
    const bool explicitOut = arrow != std::string::npos;
    if (explicitOut) {
      lhs = e.substr(0, arrow);
      rhs = e.substr(arrow + 2);
    }
    std::vector<std::string> terms = absl::StrSplit(lhs, ',');
    if (terms.size() != spec_.inputs.size())
      return fail(absl::StrCat("has ", terms.size(), " operand terms for ", spec_.inputs.size(), " inputs"));
    // Ellipsis ranks first (labels are right-aligned across operands).
    std::vector<int64_t> ell(terms.size(), 0);
    int64_t maxEll = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      FUSEC_ASSIGN_OR_RETURN(Value * v, input(spec_, i));
      if (!v->type().rankKnown) return fail(absl::StrCat("input ", i, " has an unknown rank"));
      int64_t letters = 0;
      bool hasEll = false;
      for (size_t c = 0; c < terms[i].size(); ++c) {
        if (terms[i].compare(c, 3, "...") == 0) {
          if (hasEll) return fail("an operand has two ellipses");
          hasEll = true;
          c += 2;
        } else if (std::isalpha(static_cast<unsigned char>(terms[i][c]))) {
          ++letters;
        } else {
          return fail(absl::StrCat("'", std::string(1, terms[i][c]), "' is not a label"));
        }
      }
      const int64_t rank = v->type().rank();
      if (letters > rank || (!hasEll && letters != rank))
        return fail(absl::StrCat("operand ", i, " '", terms[i], "' does not match input rank ", rank));
      ell[i] = rank - letters;
      maxEll = std::max(maxEll, ell[i]);
    }
    std::map<int, int> count;
    for (size_t i = 0; i < terms.size(); ++i) {
      EinsumOperand op;
      op.v = spec_.inputs[i];
      FUSEC_ASSIGN_OR_RETURN(op.labels, parse(terms[i], ell[i], maxEll));
      for (size_t d = 0; d < op.labels.size(); ++d) {
        FUSEC_RETURN_IF_ERROR(noteDim(op.labels[d], op.v->type().shape[d]));
        ++count[op.labels[d]];
      }
      ops_.push_back(std::move(op));
    }
    if (explicitOut) {
      FUSEC_ASSIGN_OR_RETURN(out_, parse(rhs, maxEll, maxEll));
      std::set<int> seen;
      for (int l : out_) {
        if (!count.count(l) && l < kEllipsisLabel)
          return fail(absl::StrCat("output label '", std::string(1, labelChar(l)), "' is in no operand"));
        if (!seen.insert(l).second) return fail("an output label repeats");
      }
    } else {
      for (int64_t k = 0; k < maxEll; ++k) out_.push_back(kEllipsisLabel + static_cast<int>(k));
      std::vector<int> once;
      for (const auto &[l, n] : count)
        if (l < kEllipsisLabel && n == 1) once.push_back(l);
      std::sort(once.begin(), once.end(), [](int a, int b) { return labelOrder(a) < labelOrder(b); });
      out_.insert(out_.end(), once.begin(), once.end());
    }
    for (EinsumOperand &op : ops_) FUSEC_RETURN_IF_ERROR(diagonals(op));
    for (size_t i = 0; i < ops_.size(); ++i) FUSEC_RETURN_IF_ERROR(sumUnshared(i));
    EinsumOperand cur = ops_[0];
    for (size_t i = 1; i < ops_.size(); ++i) {
      std::set<int> later(out_.begin(), out_.end());
      for (size_t j = i + 1; j < ops_.size(); ++j) later.insert(ops_[j].labels.begin(), ops_[j].labels.end());
      FUSEC_ASSIGN_OR_RETURN(cur, combine(cur, ops_[i], later));
    }
    // Labels the output does not name (a single operand's), then the output order.
    std::vector<int64_t> axes;
    std::vector<int> kept;
    for (size_t d = 0; d < cur.labels.size(); ++d) {
      if (std::count(out_.begin(), out_.end(), cur.labels[d])) kept.push_back(cur.labels[d]);
      else axes.push_back(static_cast<int64_t>(d));
    }
    if (!axes.empty()) {
      cur.v = b_.op("ReduceSum", {cur.v, b_.ints(axes)}, {{"keepdims", Attribute(int64_t{0})}});
      cur.labels = kept;
    }
    std::vector<int> order;
    for (int l : out_)
      if (std::count(cur.labels.begin(), cur.labels.end(), l)) order.push_back(l);
    if (order.size() != out_.size()) return fail("the output names a dim no operand has");
    cur = transposed(cur, order);
    return b_.finish("Identity", {cur.v});
  }

 private:
  absl::Status fail(const std::string &why) const {
    return absl::UnimplementedError(
        absl::StrCat("Einsum '", spec_.name, "' equation '", eq_, "': ", why));
  }

  /// Labels of one term; its ellipsis covers \p e dims, right-aligned in \p maxEll.
  absl::StatusOr<std::vector<int>> parse(const std::string &t, int64_t e, int64_t maxEll) const {
    std::vector<int> ls;
    for (size_t c = 0; c < t.size(); ++c) {
      if (t.compare(c, 3, "...") == 0) {
        for (int64_t k = 0; k < e; ++k) ls.push_back(kEllipsisLabel + static_cast<int>(maxEll - e + k));
        c += 2;
      } else if (t[c] >= 'a' && t[c] <= 'z') {
        ls.push_back(t[c] - 'a');
      } else if (t[c] >= 'A' && t[c] <= 'Z') {
        ls.push_back(26 + t[c] - 'A');
      } else {
        return fail(absl::StrCat("'", std::string(1, t[c]), "' is not a label"));
      }
    }
    return ls;
  }

  /// Records dim \p d of label \p l (a 1 broadcasts against another size).
  absl::Status noteDim(int l, const ir::Dim &d) {
    auto it = dims_.find(l);
    if (it == dims_.end()) {
      dims_[l] = d;
      return absl::OkStatus();
    }
    ir::Dim &cur = it->second;
    if (cur.isStatic() && d.isStatic()) {
      if (d.value == cur.value || d.value == 1) return absl::OkStatus();
      if (cur.value == 1) {
        cur = d;
        return absl::OkStatus();
      }
      return fail(absl::StrCat("label '", l < kEllipsisLabel ? std::string(1, labelChar(l)) : "...",
                               "' has sizes ", cur.value, " and ", d.value));
    }
    if ((cur.isStatic() && cur.value == 1) || (!cur.isStatic() && d.isStatic() && d.value != 1)) cur = d;
    return absl::OkStatus();
  }

  EinsumOperand transposed(EinsumOperand op, const std::vector<int> &order) {
    std::vector<int64_t> perm;
    bool identity = true;
    for (size_t i = 0; i < order.size(); ++i) {
      const auto at = std::find(op.labels.begin(), op.labels.end(), order[i]) - op.labels.begin();
      perm.push_back(at);
      identity &= at == static_cast<int64_t>(i);
    }
    if (!identity) op.v = b_.op("Transpose", {op.v}, {{"perm", Attribute(perm)}});
    op.labels = order;
    return op;
  }

  absl::Status diagonals(EinsumOperand &op) {
    for (;;) {
      int p = -1, q = -1;
      for (size_t i = 0; i < op.labels.size() && p < 0; ++i)
        for (size_t j = i + 1; j < op.labels.size(); ++j)
          if (op.labels[i] == op.labels[j]) {
            p = static_cast<int>(i);
            q = static_cast<int>(j);
            break;
          }
      if (p < 0) return absl::OkStatus();
      const int l = op.labels[p];
      const ir::Dim d = dims_[l];
      if (!d.isStatic())
        return fail(absl::StrCat("the diagonal of label '", l < kEllipsisLabel ? std::string(1, labelChar(l)) : "...",
                                 "' over a dim that is not static"));
      // Move axes p and q last (the labels as positions: the duplicate is
      // tracked by index, so build the permutation directly).
      std::vector<int64_t> perm;
      std::vector<int> rest;
      for (size_t i = 0; i < op.labels.size(); ++i)
        if (static_cast<int>(i) != p && static_cast<int>(i) != q) {
          perm.push_back(static_cast<int64_t>(i));
          rest.push_back(op.labels[i]);
        }
      perm.push_back(p);
      perm.push_back(q);
      bool identity = true;
      for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
      Value *v = identity ? op.v : b_.op("Transpose", {op.v}, {{"perm", Attribute(perm)}});
      const int64_t n = d.value, r = static_cast<int64_t>(rest.size());
      if (n == 0) return fail("the diagonal of an empty dim");
      // The leading dims are copied (0), the two last merged.
      std::vector<int64_t> flat(static_cast<size_t>(r), 0);
      flat.push_back(n * n);
      v = b_.op("Reshape", {v, b_.ints(flat)});
      v = b_.op("Slice", {v, b_.ints({0}), b_.ints({n * n}), b_.ints({r}), b_.ints({n + 1})});
      rest.push_back(l);
      op.v = v;
      op.labels = rest;
    }
  }

  /// Sums operand \p i's labels that neither the output nor another operand has.
  absl::Status sumUnshared(size_t i) {
    EinsumOperand &op = ops_[i];
    std::vector<int64_t> axes;
    std::vector<int> kept;
    for (size_t d = 0; d < op.labels.size(); ++d) {
      const int l = op.labels[d];
      bool needed = std::count(out_.begin(), out_.end(), l) != 0;
      for (size_t j = 0; j < ops_.size() && !needed; ++j)
        needed = j != i && std::count(ops_[j].labels.begin(), ops_[j].labels.end(), l);
      if (needed) kept.push_back(l);
      else axes.push_back(static_cast<int64_t>(d));
    }
    if (axes.empty()) return absl::OkStatus();
    op.v = b_.op("ReduceSum", {op.v, b_.ints(axes)}, {{"keepdims", Attribute(int64_t{0})}});
    op.labels = kept;
    return absl::OkStatus();
  }

  /// A Reshape target entry for the merged \p group at target position \p at:
  /// 1 when empty; 0 (copy) when it is one dim already at that position; its
  /// static product; or -1 (at most one per target, counted in \p unknowns).
  int64_t entry(const std::vector<int> &group, int64_t at, int64_t sourceAt, int *unknowns, bool *zero) {
    if (group.empty()) return 1;
    if (group.size() == 1 && sourceAt == at && !(dims_[group[0]].isStatic() && dims_[group[0]].value == 0))
      return 0;
    int64_t p = 1;
    for (int l : group) {
      if (!dims_[l].isStatic()) {
        ++*unknowns;
        return -1;
      }
      p *= dims_[l].value;
    }
    if (p == 0) *zero = true;
    return p;
  }

  /// Reshape of \p v to [batch..., groups...]; batch dims are copied (0).
  absl::StatusOr<Value *> merged(Value *v, int64_t srcRank, const std::vector<int> &batch,
                                 const std::vector<std::vector<int>> &groups,
                                 const std::vector<int64_t> &sourceAt) {
    std::vector<int64_t> target;
    int unknowns = 0;
    bool zero = false;
    for (size_t i = 0; i < batch.size(); ++i) target.push_back(0);
    for (size_t g = 0; g < groups.size(); ++g)
      target.push_back(entry(groups[g], static_cast<int64_t>(batch.size() + g), sourceAt[g], &unknowns, &zero));
    if (unknowns > 1) return fail("a contraction merges several dims that are not static");
    ir::AttributeMap attrs;
    if (zero) {
      // An empty group: 0 must be literal, so every copied dim must be static.
      for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] != 0) continue;
        const int l = i < batch.size() ? batch[i] : groups[i - batch.size()][0];
        if (!dims_[l].isStatic()) return fail("an empty contraction beside a dim that is not static");
        target[i] = dims_[l].value;
      }
      attrs["allowzero"] = Attribute(int64_t{1});
    }
    bool identity = !zero && static_cast<int64_t>(target.size()) == srcRank;
    for (size_t g = 0; g < groups.size() && identity; ++g)
      identity = target[batch.size() + g] == 0;
    if (identity) return v;
    return b_.op("Reshape", {v, b_.ints(target)}, attrs);
  }

  absl::StatusOr<EinsumOperand> combine(EinsumOperand a, EinsumOperand b, const std::set<int> &later) {
    auto has = [](const EinsumOperand &o, int l) {
      return std::count(o.labels.begin(), o.labels.end(), l) != 0;
    };
    std::vector<int> batch, con, aOnly, bOnly;
    for (int l : a.labels) {
      if (has(b, l)) (later.count(l) ? batch : con).push_back(l);
      else aOnly.push_back(l);
    }
    for (int l : b.labels)
      if (!has(a, l)) bOnly.push_back(l);
    auto cat = [](std::vector<int> x, const std::vector<int> &y) {
      x.insert(x.end(), y.begin(), y.end());
      return x;
    };
    EinsumOperand r;
    r.labels = cat(cat(batch, aOnly), bOnly);
    const int64_t nb = static_cast<int64_t>(batch.size());
    if (con.empty()) {
      // Outer / elementwise product: a broadcasting Mul.
      a = transposed(a, cat(batch, aOnly));
      b = transposed(b, cat(batch, bOnly));
      Value *av = a.v, *bv = b.v;
      std::vector<int64_t> ua, ub;
      for (size_t i = 0; i < bOnly.size(); ++i) ua.push_back(nb + static_cast<int64_t>(aOnly.size() + i));
      for (size_t i = 0; i < aOnly.size(); ++i) ub.push_back(nb + static_cast<int64_t>(i));
      if (!ua.empty()) av = b_.op("Unsqueeze", {av, b_.ints(ua)});
      if (!ub.empty()) bv = b_.op("Unsqueeze", {bv, b_.ints(ub)});
      r.v = b_.op("Mul", {av, bv});
      return r;
    }
    a = transposed(a, cat(cat(batch, aOnly), con));
    b = transposed(b, cat(cat(batch, con), bOnly));
    const int64_t na = static_cast<int64_t>(aOnly.size()), nc = static_cast<int64_t>(con.size());
    // Where a one-dim group already sits in the operand (for a copy entry).
    auto pos = [&](const std::vector<int> &g, int64_t start) { return g.size() == 1 ? start : -1; };
    const int64_t nbo = static_cast<int64_t>(bOnly.size());
    FUSEC_ASSIGN_OR_RETURN(Value * am, merged(a.v, nb + na + nc, batch, {aOnly, con},
                                              {pos(aOnly, nb), pos(con, nb + na)}));
    FUSEC_ASSIGN_OR_RETURN(Value * bm, merged(b.v, nb + nc + nbo, batch, {con, bOnly},
                                              {pos(con, nb), pos(bOnly, nb + nc)}));
    Value *c = b_.op("MatMul", {am, bm});
    // [batch, M, N] back to [batch, aOnly..., bOnly...].
    std::vector<std::vector<int>> groups;
    std::vector<int64_t> at;
    for (int l : aOnly) groups.push_back({l});
    for (int l : bOnly) groups.push_back({l});
    for (size_t g = 0; g < groups.size(); ++g) {
      // C's dim nb is M (aOnly when it is one label), nb + 1 is N.
      const int64_t src = g < aOnly.size() ? (aOnly.size() == 1 ? nb : -1)
                                           : (bOnly.size() == 1 ? nb + 1 : -1);
      at.push_back(src);
    }
    FUSEC_ASSIGN_OR_RETURN(r.v, merged(c, nb + 2, batch, groups, at));
    return r;
  }

  NodeSpec &spec_;
  Builder &b_;
  std::string eq_;
  std::vector<EinsumOperand> ops_;
  std::vector<int> out_;
  std::map<int, ir::Dim> dims_;
};

absl::StatusOr<std::vector<Node *>> expand(Graph &graph, NodeSpec &spec, int64_t opset,
                                           Builder &b) {
  const std::string &op = spec.opType;
  if (op == "RotaryEmbedding" || op == "SimplifiedLayerNormalization" || op == "Attention")
    return expandContribOp(spec, b);
  if (isRecurrentOp(op)) return expandRecurrentOp(spec, b);
  if (isQuantizedOp(op)) return expandQuantizedOp(spec, b);
  if (spec.outputs.size() != 1)
    return absl::InvalidArgumentError(absl::StrCat(op, " expects one output"));
  if (op == "Einsum") {
    auto it = spec.attrs.find("equation");
    if (it == spec.attrs.end() || it->second.kind() != Attribute::Kind::kString)
      return absl::InvalidArgumentError("Einsum needs the string attribute 'equation'");
    if (spec.inputs.empty()) return absl::InvalidArgumentError("Einsum needs at least one input");
    return EinsumExpander(spec, b, it->second.s()).run();
  }
  FUSEC_ASSIGN_OR_RETURN(Value * x, input(spec, 0));
  const DType dt = x->type().dtype;

  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    FUSEC_ASSIGN_OR_RETURN(int64_t bs, intAttr(spec, "blocksize", 0));
    if (bs < 1 || bs > (int64_t{1} << 20))
      return absl::InvalidArgumentError(absl::StrCat(op, " needs a blocksize in [1, 2^20], has ", bs));
    FUSEC_ASSIGN_OR_RETURN(std::string mode, stringAttr(spec, "mode", "DCR"));
    if (mode != "DCR" && mode != "CRD")
      return absl::InvalidArgumentError(absl::StrCat(op, " mode must be DCR or CRD, is '", mode, "'"));
    if (!x->type().rankKnown || x->type().rank() != 4)
      return absl::InvalidArgumentError(absl::StrCat(op, " needs a 4-D input [N, C, H, W]"));
    const ir::Dim &c = x->type().shape[1];
    if (op == "DepthToSpace" && c.isStatic() && c.value % (bs * bs) != 0)
      return absl::InvalidArgumentError(absl::StrCat("DepthToSpace: the channel count ", c.value,
                                                     " is not a multiple of blocksize^2 = ", bs * bs));
    for (int a : {2, 3})
      if (op == "SpaceToDepth" && x->type().shape[a].isStatic() && x->type().shape[a].value % bs != 0)
        return absl::InvalidArgumentError(absl::StrCat("SpaceToDepth: dim ", a, " (", x->type().shape[a].value,
                                                       ") is not a multiple of the blocksize ", bs));
    Value *shape = b.op("Shape", {x});
    auto dim = [&](int64_t a) { return b.op("Slice", {shape, b.ints({a}), b.ints({a + 1})}); };
    Value *n = dim(0), *ch = dim(1), *h = dim(2), *w = dim(3), *blk = b.ints({bs});
    ir::AttributeMap cat = {{"axis", Attribute(int64_t{0})}};
    if (op == "DepthToSpace") {
      Value *cOut = b.op("Div", {ch, b.ints({bs * bs})});
      const bool dcr = mode == "DCR";
      Value *split = dcr ? b.op("Concat", {n, blk, blk, cOut, h, w}, cat) : b.op("Concat", {n, cOut, blk, blk, h, w}, cat);
      Value *t = b.op("Transpose", {b.op("Reshape", {x, split})},
                      {{"perm", Attribute(dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                                              : std::vector<int64_t>{0, 1, 4, 2, 5, 3})}});
      Value *out = b.op("Concat", {n, cOut, b.op("Mul", {h, blk}), b.op("Mul", {w, blk})}, cat);
      return b.finish("Reshape", {t, out});
    }
    Value *hOut = b.op("Div", {h, blk}), *wOut = b.op("Div", {w, blk});
    Value *split = b.op("Concat", {n, ch, hOut, blk, wOut, blk}, cat);
    Value *t = b.op("Transpose", {b.op("Reshape", {x, split})},
                    {{"perm", Attribute(mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                                                      : std::vector<int64_t>{0, 1, 3, 5, 2, 4})}});
    Value *out = b.op("Concat", {n, b.op("Mul", {ch, b.ints({bs * bs})}), hOut, wOut}, cat);
    return b.finish("Reshape", {t, out});
  }
  if (op == "EyeLike") {
    FUSEC_ASSIGN_OR_RETURN(int64_t k, intAttr(spec, "k", 0));
    FUSEC_ASSIGN_OR_RETURN(int64_t code, intAttr(spec, "dtype", static_cast<int64_t>(dt)));
    if (code < INT32_MIN || code > INT32_MAX || !ir::dtypeFromOnnx(static_cast<int32_t>(code)))
      return absl::InvalidArgumentError(absl::StrCat("EyeLike: unsupported dtype ", code));
    if (!x->type().rankKnown || x->type().rank() != 2)
      return absl::InvalidArgumentError("EyeLike needs a 2-D input");
    Value *shape = b.op("Shape", {x});
    auto extent = [&](int64_t a) { return b.op("Gather", {shape, b.scalar(DType::kI64, static_cast<double>(a))}); };
    Value *zero = b.scalar(DType::kI64, 0), *one = b.scalar(DType::kI64, 1);
    Value *rows = b.op("Range", {zero, extent(0), one}), *cols = b.op("Range", {zero, extent(1), one});
    Value *diag = b.op("Add", {b.op("Unsqueeze", {rows, b.ints({1})}), b.scalar(DType::kI64, static_cast<double>(k))});
    Value *eq = b.op("Equal", {diag, b.op("Unsqueeze", {cols, b.ints({0})})});
    return b.finish("Cast", {eq}, {{"to", Attribute(code)}});
  }

  if (op == "CastLike") {
    FUSEC_ASSIGN_OR_RETURN(Value * like, input(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(int64_t saturate, intAttr(spec, "saturate", 1));
    ir::AttributeMap attrs = {{"to", Attribute(static_cast<int64_t>(like->type().dtype))},
                              {"saturate", Attribute(saturate)}};
    if (auto it = spec.attrs.find("round_mode"); it != spec.attrs.end()) attrs.emplace("round_mode", it->second);
    return b.finish("Cast", {x}, attrs);
  }

  if (op == "LpNormalization") {
    FUSEC_ASSIGN_OR_RETURN(int64_t axis, intAttr(spec, "axis", -1));
    FUSEC_ASSIGN_OR_RETURN(int64_t p, intAttr(spec, "p", 2));
    if (p != 1 && p != 2)
      return absl::InvalidArgumentError(absl::StrCat("LpNormalization p must be 1 or 2, is ", p));
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *norm = p == 2 ? b.op("ReduceL2", {x, b.ints({axis})}, keep)
                         : b.op("ReduceSum", {b.op("Abs", {x}), b.ints({axis})}, keep);
    // A zero vector stays zero (onnx's reference), not 0/0.
    Value *isZero = b.op("Equal", {norm, b.scalar(dt, 0.0)});
    Value *safe = b.op("Where", {isZero, b.scalar(dt, 1.0), norm});
    return b.finish("Div", {x, safe});
  }
  if (op == "MeanVarianceNormalization") {
    std::vector<int64_t> axes = {0, 2, 3};
    if (auto it = spec.attrs.find("axes"); it != spec.attrs.end()) {
      if (it->second.kind() != Attribute::Kind::kInts)
        return absl::InvalidArgumentError("attribute 'axes' must be a list of ints");
      axes = it->second.ints();
    }
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *mean = b.op("ReduceMean", {x, b.ints(axes)}, keep);
    Value *meanSq = b.op("Mul", {mean, mean});
    Value *sqMean = b.op("ReduceMean", {b.op("Mul", {x, x}), b.ints(axes)}, keep);
    Value *stdev = b.op("Sqrt", {b.op("Sub", {sqMean, meanSq})});
    Value *den = b.op("Add", {stdev, b.scalar(dt, 1e-9)});
    return b.finish("Div", {b.op("Sub", {x, mean}), den});
  }
  if (op == "InstanceNormalization") {
    FUSEC_ASSIGN_OR_RETURN(Value * scale, input(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(Value * bias, input(spec, 2));
    FUSEC_ASSIGN_OR_RETURN(double eps, floatAttr(spec, "epsilon", 1e-5));
    if (!x->type().rankKnown || x->type().rank() < 3)
      return absl::InvalidArgumentError(
          "InstanceNormalization needs an input of known rank >= 3 (N, C, spatial...)");
    const int64_t rank = x->type().rank();
    std::vector<int64_t> spatial, perChannel;
    for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
    for (int64_t a = 1; a < rank - 1; ++a) perChannel.push_back(a);  // [C] -> [C,1,..,1]
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *mean = b.op("ReduceMean", {x, b.ints(spatial)}, keep);
    Value *centered = b.op("Sub", {x, mean});
    Value *var = b.op("ReduceMean", {b.op("Mul", {centered, centered}), b.ints(spatial)}, keep);
    Value *inv = b.op("Sqrt", {b.op("Add", {var, b.scalar(dt, eps)})});
    Value *normed = b.op("Div", {centered, inv});
    Value *s = b.op("Unsqueeze", {scale, b.ints(perChannel)});
    Value *bb = b.op("Unsqueeze", {bias, b.ints(perChannel)});
    return b.finish("Add", {b.op("Mul", {normed, s}), bb});
  }
  return absl::InternalError(absl::StrCat("no expansion for ", op));
}

}  // namespace

bool isExpandedFunctionOp(std::string_view opType) {
  for (std::string_view e : kExpanded)
    if (e == opType) return true;
  return false;
}

absl::StatusOr<std::vector<ir::Node *>> expandFunctionOp(
    ir::Graph &graph, NodeSpec spec, int64_t opset,
    const std::function<std::string(const std::string &)> &uniqueNodeName) {
  Builder b(graph, spec, uniqueNodeName);
  return expand(graph, spec, opset, b);
}

}  // namespace fusec::frontend::internal
