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
//   LRN(x; size, alpha, beta, bias)
//                            x / (bias + alpha * mean)^beta, mean = AveragePool of x^2 over
//                            the channel window (x viewed as [N, 1, C, rest], zero pads counted)
//   LpPool(x; p, kernel_shape, strides, pads, dilations, auto_pad)
//                            (AveragePool(|x|^p, count_include_pad=1) * prod(kernel_shape))^(1/p)
//                            (ceil_mode = 1 refused)
//   ReverseSequence(x, sequence_lens; batch_axis, time_axis)
//                            GatherElements(x, Expand(Where(t < len, len - 1 - t, t)), time_axis)
//   GroupNormalization(x, scale, bias; num_groups, epsilon)
//                            x viewed as [N, G, -1], (v - mean) / Sqrt(var + epsilon), then
//                            scale / bias per group (opsets 18-20, [G]) or per channel (21, [C])
//   CenterCropPad(x, shape; axes)
//                            Pad (zeros, max(shape - len, 0), the floor half first) then
//                            Slice of the centre (max(len - shape, 0), the floor half first)
//                            along axes; the target may arrive at run time
//   MaxUnpool(X, I, output_shape?; kernel_shape, strides, pads)
//                            Reshape(ScatterElements(zeros, I flat, X flat)) to the unpooled
//                            shape [N, C, (in - 1) * stride + kernel - pads], zero-padded at
//                            the end to output_shape when given
//   Upsample(X, scales; mode)  Resize(X, [], scales) with asymmetric coordinates, floor
//                            rounding for nearest (opsets 7-9; scales an attribute before 9)
//   DFT(x, dft_length?, axis?; inverse, onesided)
//                            MatMuls against constant cos / sin matrices (the "DFT" section);
//                            axis and dft_length must be constants
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
                                          "ConvInteger", "QLinearMatMul", "QLinearConv", "CastLike",
                                          "LRN", "LpPool", "ReverseSequence", "GroupNormalization",
                                          "CenterCropPad", "MaxUnpool", "Upsample", "DFT",
                                          "ReduceLogSumExp"};

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

//===----------------------------------------------------------------------===//
// DFT
//
// x [..., N at axis, ..., c] (c = 1 real, 2 complex): the signal axis is
// moved next to the last, the real and imaginary parts split off, and the
// transform is two MatMuls per part against constant cos / sin matrices of
// dft_length L (the input truncated, or zero-padded by leaving rows out):
// Y_re = re C - im S, Y_im = re S + im C with C[n, k] = cos(2 pi k n / L),
// S[n, k] = -+sin(2 pi k n / L) (forward / inverse, inverse scaled by 1/L),
// k < L/2 + 1 when onesided. The inverse of a onesided spectrum (irfft) is
// real: x[n] = sum_k w_k (re_k cos - im_k sin) / L with w_k = 2 except at 0
// and L/2. axis and dft_length must be constants.
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Node *>> expandDft(NodeSpec &spec, int64_t opset, Builder &b, Value *x) {
  FUSEC_ASSIGN_OR_RETURN(int64_t inverse, intAttr(spec, "inverse", 0));
  FUSEC_ASSIGN_OR_RETURN(int64_t onesided, intAttr(spec, "onesided", 0));
  const ir::TensorType &t = x->type();
  if (!t.rankKnown || t.rank() < 2 || !t.isStatic())
    return absl::InvalidArgumentError("DFT needs a static input of rank >= 2 ([..., signal, 1 or 2])");
  const int64_t rank = t.rank(), c = t.shape[rank - 1].value;
  if (c != 1 && c != 2)
    return absl::InvalidArgumentError(absl::StrCat("DFT input's last dim must be 1 (real) or 2 (complex), is ", c));
  int64_t axis = opset >= 20 ? -2 : 1;
  if (opset >= 20) {
    if (Value *a = optionalInput(spec, 2)) {
      if (!a->isConstant() || a->constant()->numElements() != 1)
        return absl::UnimplementedError("DFT's axis (input 2) arrives at run time; fusec expands DFT along an "
                                        "axis known at compile time");
      axis = a->constant()->getInt(0);
    }
  } else {
    FUSEC_ASSIGN_OR_RETURN(axis, intAttr(spec, "axis", 1));
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank - 2)
    return absl::InvalidArgumentError(absl::StrCat("DFT axis is out of range for an input of rank ", rank));
  const int64_t n = t.shape[axis].value;
  const bool inv = inverse != 0, half = onesided != 0;
  int64_t len = inv && half ? 2 * (n - 1) : n;
  if (Value *l = optionalInput(spec, 1)) {
    if (!l->isConstant() || l->constant()->numElements() != 1)
      return absl::UnimplementedError("DFT's dft_length (input 1) arrives at run time; fusec expands DFT with a "
                                      "constant length");
    len = l->constant()->getInt(0);
  }
  if (len < 1 || n < 1) return absl::InvalidArgumentError(absl::StrCat("DFT length ", len, " must be >= 1"));
  const DType dt = t.dtype;
  // Move the signal axis next to the last one.
  std::vector<int64_t> perm, back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  for (int64_t d = 0; d < rank; ++d) back[static_cast<size_t>(perm[d])] = d;
  Value *xt = b.op("Transpose", {x}, {{"perm", Attribute(perm)}});
  const int64_t used = std::min(n, inv && half ? n : len);  // input samples that reach the output
  auto part = [&](int64_t i) {
    Value *p = b.op("Slice", {xt, b.ints({i}), b.ints({i + 1}), b.ints({rank - 1})});
    p = b.op("Squeeze", {p, b.ints({rank - 1})});
    if (used < n) p = b.op("Slice", {p, b.ints({0}), b.ints({used}), b.ints({rank - 2})});
    return p;
  };
  Value *re = part(0), *im = c == 2 ? part(1) : nullptr;
  const double pi = std::acos(-1.0);
  const double sign = inv ? 1.0 : -1.0, scale = inv ? 1.0 / static_cast<double>(len) : 1.0;
  auto matrix = [&](int64_t rows, int64_t cols, bool sine, auto weight) {
    ir::Tensor m(dt, {rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        // r indexes the input (sample or bin), k the output.
        const double th = 2 * pi * static_cast<double>((r * k) % len) / static_cast<double>(len);
        m.setDouble(r * cols + k, weight(r) * (sine ? sign * std::sin(th) : std::cos(th)));
      }
    return b.constant(std::move(m), sine ? "_sin" : "_cos");
  };
  std::vector<Value *> outs;
  if (inv && half) {
    // irfft: real output of length len from `used` bins.
    auto w = [&](int64_t k) {
      if (2 * k > len) return 0.0;
      return (k == 0 || 2 * k == len ? 1.0 : 2.0) * scale;
    };
    Value *y = b.op("MatMul", {re, matrix(used, len, false, w)});
    if (im) y = b.op("Sub", {y, b.op("MatMul", {im, matrix(used, len, true, w)})});
    outs.push_back(y);
  } else {
    const int64_t k = half ? len / 2 + 1 : len;
    auto w = [&](int64_t) { return scale; };
    Value *cm = matrix(used, k, false, w), *sm = matrix(used, k, true, w);
    Value *yr = b.op("MatMul", {re, cm}), *yi = b.op("MatMul", {re, sm});
    if (im) {
      yr = b.op("Sub", {yr, b.op("MatMul", {im, sm})});
      yi = b.op("Add", {yi, b.op("MatMul", {im, cm})});
    }
    outs = {yr, yi};
  }
  std::vector<Value *> parts;
  for (Value *o : outs) parts.push_back(b.op("Unsqueeze", {o, b.ints({rank - 1})}));
  Value *y = parts.size() == 1 ? parts[0] : b.op("Concat", parts, {{"axis", Attribute(rank - 1)}});
  return b.finish("Transpose", {y}, {{"perm", Attribute(back)}});
}

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

  if (op == "LRN") {
    // square_sum over the channel window [c - floor((size-1)/2), c + ceil((size-1)/2)]
    // as an AveragePool of x^2 over [N, 1, C, rest] counting the zero pads
    // (the mean is square_sum / size), then x / (bias + alpha * mean)^beta.
    FUSEC_ASSIGN_OR_RETURN(int64_t size, intAttr(spec, "size", 0));
    FUSEC_ASSIGN_OR_RETURN(double alpha, floatAttr(spec, "alpha", 1e-4));
    FUSEC_ASSIGN_OR_RETURN(double beta, floatAttr(spec, "beta", 0.75));
    FUSEC_ASSIGN_OR_RETURN(double bias, floatAttr(spec, "bias", 1.0));
    if (size < 1) return absl::InvalidArgumentError(absl::StrCat("LRN needs the attribute size >= 1, has ", size));
    if (!x->type().rankKnown || x->type().rank() < 3)
      return absl::InvalidArgumentError("LRN needs an input of known rank >= 3 (N, C, spatial...)");
    Value *sq = b.op("Mul", {x, x});
    Value *rows = b.op("Reshape", {b.op("Unsqueeze", {sq, b.ints({1})}), b.ints({0, 0, 0, -1})});
    Value *mean = b.op("AveragePool", {rows},
                       {{"kernel_shape", Attribute(std::vector<int64_t>{size, 1})},
                        {"pads", Attribute(std::vector<int64_t>{(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0})},
                        {"count_include_pad", Attribute(int64_t{1})}});
    Value *back = b.op("Reshape", {mean, b.op("Shape", {x})});
    Value *den = b.op("Pow", {b.op("Add", {b.op("Mul", {back, b.scalar(dt, alpha)}), b.scalar(dt, bias)}),
                              b.scalar(dt, beta)});
    return b.finish("Div", {x, den});
  }
  if (op == "LpPool") {
    // (sum over the window of |x|^p)^(1/p): an AveragePool of |x|^p that
    // counts the zero pads, times the window size.
    FUSEC_ASSIGN_OR_RETURN(int64_t p, intAttr(spec, "p", 2));
    if (p < 1) return absl::InvalidArgumentError(absl::StrCat("LpPool needs p >= 1, has ", p));
    auto ks = spec.attrs.find("kernel_shape");
    if (ks == spec.attrs.end() || ks->second.kind() != Attribute::Kind::kInts || ks->second.ints().empty())
      return absl::InvalidArgumentError("LpPool needs the attribute kernel_shape");
    double window = 1;
    for (int64_t k : ks->second.ints()) window *= static_cast<double>(k);
    ir::AttributeMap attrs;
    for (const char *a : {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"})
      if (auto it = spec.attrs.find(a); it != spec.attrs.end()) attrs[a] = it->second;
    if (auto it = spec.attrs.find("ceil_mode"); it != spec.attrs.end() && it->second.kind() == Attribute::Kind::kInt &&
                                                it->second.i() != 0)
      return absl::UnimplementedError("LpPool with ceil_mode = 1 is not supported (a window past the "
                                      "padding would be averaged over fewer elements)");
    attrs["count_include_pad"] = Attribute(int64_t{1});
    Value *a = b.op("Abs", {x});
    Value *ap = p == 1 ? a : p == 2 ? b.op("Mul", {a, a}) : b.op("Pow", {a, b.scalar(dt, static_cast<double>(p))});
    Value *sum = b.op("Mul", {b.op("AveragePool", {ap}, attrs), b.scalar(dt, window)});
    if (p == 1) return b.finish("Identity", {sum});
    if (p == 2) return b.finish("Sqrt", {sum});
    return b.finish("Pow", {sum, b.scalar(dt, 1.0 / static_cast<double>(p))});
  }
  if (op == "ReverseSequence") {
    // y = GatherElements(x, idx, time_axis) with idx[t, b] = t < len[b] ? len[b] - 1 - t : t
    // (t along time_axis, b along batch_axis, broadcast to x's shape).
    FUSEC_ASSIGN_OR_RETURN(Value * lens, input(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(int64_t batchAxis, intAttr(spec, "batch_axis", 1));
    FUSEC_ASSIGN_OR_RETURN(int64_t timeAxis, intAttr(spec, "time_axis", 0));
    if (!x->type().rankKnown || x->type().rank() < 2)
      return absl::InvalidArgumentError("ReverseSequence needs an input of known rank >= 2");
    const int64_t rank = x->type().rank();
    if (batchAxis < 0) batchAxis += rank;
    if (timeAxis < 0) timeAxis += rank;
    if (batchAxis < 0 || batchAxis > 1 || timeAxis < 0 || timeAxis > 1 || batchAxis == timeAxis)
      return absl::InvalidArgumentError(absl::StrCat("ReverseSequence batch_axis and time_axis must be 0 and 1 "
                                                     "(one each), are ", batchAxis, " and ", timeAxis));
    auto allBut = [&](int64_t keep) {
      std::vector<int64_t> axes;
      for (int64_t a = 0; a < rank; ++a)
        if (a != keep) axes.push_back(a);
      return axes;
    };
    Value *shape = b.op("Shape", {x});
    Value *len = b.op("Gather", {shape, b.scalar(DType::kI64, static_cast<double>(timeAxis))});
    Value *t = b.op("Unsqueeze", {b.op("Range", {b.scalar(DType::kI64, 0), len, b.scalar(DType::kI64, 1)}),
                                  b.ints(allBut(timeAxis))});
    Value *l = b.op("Unsqueeze", {b.op("Cast", {lens}, {{"to", Attribute(int64_t{7})}}), b.ints(allBut(batchAxis))});
    Value *rev = b.op("Sub", {b.op("Sub", {l, b.scalar(DType::kI64, 1)}), t});
    Value *idx = b.op("Where", {b.op("Less", {t, l}), rev, t});
    return b.finish("GatherElements", {x, b.op("Expand", {idx, shape})}, {{"axis", Attribute(timeAxis)}});
  }
  if (op == "GroupNormalization") {
    // Per (n, group): mean and variance over the group's channels and the
    // spatial axes of x viewed as [N, G, -1]; then scale and bias, per group
    // before opset 21 ([G]) and per channel from 21 ([C]).
    FUSEC_ASSIGN_OR_RETURN(Value * scale, input(spec, 1));
    FUSEC_ASSIGN_OR_RETURN(Value * bias, input(spec, 2));
    FUSEC_ASSIGN_OR_RETURN(double eps, floatAttr(spec, "epsilon", 1e-5));
    FUSEC_ASSIGN_OR_RETURN(int64_t groups, intAttr(spec, "num_groups", 0));
    if (groups < 1)
      return absl::InvalidArgumentError(absl::StrCat("GroupNormalization needs num_groups >= 1, has ", groups));
    if (!x->type().rankKnown || x->type().rank() < 2)
      return absl::InvalidArgumentError("GroupNormalization needs an input of known rank >= 2 (N, C, ...)");
    const int64_t rank = x->type().rank();
    const ir::Dim &c = x->type().shape[1];
    if (c.isStatic() && c.value % groups != 0)
      return absl::InvalidArgumentError(absl::StrCat("GroupNormalization: ", c.value, " channels do not split into ",
                                                     groups, " groups"));
    ir::AttributeMap keep = {{"keepdims", Attribute(int64_t{1})}};
    Value *g = b.op("Reshape", {x, b.ints({0, groups, -1})});
    Value *mean = b.op("ReduceMean", {g, b.ints({2})}, keep);
    Value *centered = b.op("Sub", {g, mean});
    Value *var = b.op("ReduceMean", {b.op("Mul", {centered, centered}), b.ints({2})}, keep);
    Value *normed = b.op("Div", {centered, b.op("Sqrt", {b.op("Add", {var, b.scalar(dt, eps)})})});
    std::vector<int64_t> trailing;
    if (opset < 21) {
      Value *s = b.op("Unsqueeze", {scale, b.ints({1})}), *bb = b.op("Unsqueeze", {bias, b.ints({1})});
      Value *affine = b.op("Add", {b.op("Mul", {normed, s}), bb});
      return b.finish("Reshape", {affine, b.op("Shape", {x})});
    }
    for (int64_t a = 1; a < rank - 1; ++a) trailing.push_back(a);  // [C] -> [C, 1, .., 1]
    Value *back = b.op("Reshape", {normed, b.op("Shape", {x})});
    Value *s = trailing.empty() ? scale : b.op("Unsqueeze", {scale, b.ints(trailing)});
    Value *bb = trailing.empty() ? bias : b.op("Unsqueeze", {bias, b.ints(trailing)});
    return b.finish("Add", {b.op("Mul", {back, s}), bb});
  }
  if (op == "ReduceLogSumExp") {
    // max + log(sum(exp(x - max))) in f64, as ONNX's reference computes it
    // (ONNX's body, log(sum(exp(x))), overflows for |x| around 1000 even in
    // f64). An infinite max is replaced by 0 so that all -inf gives -inf and
    // a +inf gives +inf, not NaN.
    FUSEC_ASSIGN_OR_RETURN(int64_t keepdims, intAttr(spec, "keepdims", 1));
    FUSEC_ASSIGN_OR_RETURN(int64_t noop, intAttr(spec, "noop_with_empty_axes", 0));
    Value *axes = spec.inputs.size() > 1 ? optionalInput(spec, 1) : nullptr;
    if (auto it = spec.attrs.find("axes"); it != spec.attrs.end()) {  // before opset 18
      if (it->second.kind() != Attribute::Kind::kInts)
        return absl::InvalidArgumentError("attribute 'axes' must be a list of ints");
      axes = b.ints(it->second.ints());
    }
    auto reduce = [&](const char *r, Value *v, int64_t keep) {
      ir::AttributeMap attrs = {{"keepdims", Attribute(keep)}, {"noop_with_empty_axes", Attribute(noop)}};
      return axes ? b.op(r, {v, axes}, attrs) : b.op(r, {v}, attrs);
    };
    auto finite = [&](Value *m) {
      return b.op("Where", {b.op("IsInf", {m}), b.scalar(DType::kF64, 0.0), m});
    };
    Value *xd = b.op("Cast", {x}, {{"to", Attribute(static_cast<int64_t>(DType::kF64))}});
    Value *m = finite(reduce("ReduceMax", xd, 1));
    Value *sum = reduce("ReduceSum", b.op("Exp", {b.op("Sub", {xd, m})}), keepdims);
    Value *mOut = keepdims != 0 ? m : finite(reduce("ReduceMax", xd, 0));
    return b.finish("Cast", {b.op("Add", {b.op("Log", {sum}), mOut})},
                    {{"to", Attribute(static_cast<int64_t>(dt))}});
  }
  if (op == "CenterCropPad") {
    // Per listed axis: pad (max(target - len, 0), split as floor half before)
    // with zeros, then crop the centre (max(len - target, 0), floor half
    // before); the target arrives as input 1, so both may be run-time.
    FUSEC_ASSIGN_OR_RETURN(Value * target, input(spec, 1));
    if (!x->type().rankKnown) return absl::InvalidArgumentError("CenterCropPad needs an input of known rank");
    std::vector<int64_t> axes;
    if (auto it = spec.attrs.find("axes"); it != spec.attrs.end()) {
      if (it->second.kind() != Attribute::Kind::kInts)
        return absl::InvalidArgumentError("attribute 'axes' must be a list of ints");
      axes = it->second.ints();
    } else {
      for (int64_t a = 0; a < x->type().rank(); ++a) axes.push_back(a);
    }
    Value *tgt = b.op("Cast", {target}, {{"to", Attribute(int64_t{7})}});
    Value *zero = b.scalar(DType::kI64, 0), *two = b.scalar(DType::kI64, 2);
    Value *len = b.op("Gather", {b.op("Shape", {x}), b.ints(axes)});
    Value *padAll = b.op("Max", {b.op("Sub", {tgt, len}), zero});
    Value *padBegin = b.op("Div", {padAll, two});
    Value *pads = b.op("Concat", {padBegin, b.op("Sub", {padAll, padBegin})}, {{"axis", Attribute(int64_t{0})}});
    Value *padded = b.op("Pad", {x, pads, b.scalar(dt, 0), b.ints(axes)});
    Value *plen = b.op("Gather", {b.op("Shape", {padded}), b.ints(axes)});
    Value *start = b.op("Div", {b.op("Max", {b.op("Sub", {plen, tgt}), zero}), two});
    return b.finish("Slice", {padded, start, b.op("Add", {start, tgt}), b.ints(axes)});
  }
  if (op == "MaxUnpool") {
    // The values scattered into zeros at their flat indices (MaxPool's
    // Indices: offsets into the whole output), then shaped as output_shape
    // (input 2) or [N, C, (in - 1) * stride + kernel - pads].
    FUSEC_ASSIGN_OR_RETURN(Value * idx, input(spec, 1));
    auto ks = spec.attrs.find("kernel_shape");
    if (ks == spec.attrs.end() || ks->second.kind() != Attribute::Kind::kInts)
      return absl::InvalidArgumentError("MaxUnpool needs the attribute kernel_shape");
    const std::vector<int64_t> k = ks->second.ints();
    const size_t r = k.size();
    if (!x->type().isStatic() || x->type().rank() != static_cast<int64_t>(r) + 2)
      return absl::InvalidArgumentError("MaxUnpool needs a static X of rank 2 + len(kernel_shape)");
    std::vector<int64_t> strides(r, 1), pads(2 * r, 0);
    if (auto it = spec.attrs.find("strides"); it != spec.attrs.end() && it->second.kind() == Attribute::Kind::kInts)
      strides = it->second.ints();
    if (auto it = spec.attrs.find("pads"); it != spec.attrs.end() && it->second.kind() == Attribute::Kind::kInts)
      pads = it->second.ints();
    if (strides.size() != r || pads.size() != 2 * r)
      return absl::InvalidArgumentError("MaxUnpool strides / pads do not match kernel_shape");
    // The indices address the unpooled shape [N, C, (in - 1) * stride + kernel - pads].
    std::vector<int64_t> dims = {x->type().shape[0].value, x->type().shape[1].value};
    int64_t total = dims[0] * dims[1];
    for (size_t d = 0; d < r; ++d) {
      dims.push_back((x->type().shape[2 + d].value - 1) * strides[d] + k[d] - pads[d] - pads[d + r]);
      if (dims.back() < 0) return absl::InvalidArgumentError("MaxUnpool's unpooled shape is negative");
      total *= dims.back();
    }
    Value *zeros = b.op("Expand", {b.scalar(dt, 0), b.ints({total})});
    Value *flat = b.op("ScatterElements", {zeros, b.op("Reshape", {idx, b.ints({-1})}), b.op("Reshape", {x, b.ints({-1})})},
                       {{"axis", Attribute(int64_t{0})}});
    Value *unpooled = b.op("Reshape", {flat, b.ints(dims)});
    Value *oshape = optionalInput(spec, 2);
    if (!oshape) return b.finish("Identity", {unpooled});
    // output_shape: the unpooled tensor at its start, zeros after (Pad at the end).
    Value *more = b.op("Sub", {b.op("Cast", {oshape}, {{"to", Attribute(int64_t{7})}}), b.ints(dims)});
    Value *padsIn = b.op("Concat", {b.ints(std::vector<int64_t>(r + 2, 0)), more}, {{"axis", Attribute(int64_t{0})}});
    return b.finish("Pad", {unpooled, padsIn});
  }
  if (op == "Upsample") {
    // Deprecated (opset 10); nearest repeats each element (asymmetric
    // coordinates, floor), linear interpolates asymmetrically: Resize.
    FUSEC_ASSIGN_OR_RETURN(std::string mode, stringAttr(spec, "mode", "nearest"));
    if (mode != "nearest" && mode != "linear" && mode != "bilinear")
      return absl::InvalidArgumentError(absl::StrCat("Upsample mode must be nearest or linear, is '", mode, "'"));
    Value *scales = optionalInput(spec, 1);
    if (!scales) {
      auto it = spec.attrs.find("scales");
      if (it == spec.attrs.end() || it->second.kind() != Attribute::Kind::kFloats)
        return absl::InvalidArgumentError("Upsample needs scales (input 1, or the attribute before opset 9)");
      const std::vector<float> &f = it->second.floats();
      ir::Tensor t(DType::kF32, {static_cast<int64_t>(f.size())});
      for (size_t i = 0; i < f.size(); ++i) t.setDouble(static_cast<int64_t>(i), f[i]);
      scales = b.constant(std::move(t), "_scales");
    }
    Value *roi = b.constant(ir::Tensor(DType::kF32, {0}), "_roi");
    return b.finish("Resize", {x, roi, scales},
                    {{"mode", Attribute(std::string(mode == "nearest" ? "nearest" : "linear"))},
                     {"coordinate_transformation_mode", Attribute(std::string("asymmetric"))},
                     {"nearest_mode", Attribute(std::string("floor"))}});
  }
  if (op == "DFT") {
    return expandDft(spec, opset, b, x);
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
