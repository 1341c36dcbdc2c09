//===- Pooling.cpp - Pooling windows and the fallback MatMul ----------------===//
//
// AveragePool / MaxPool windows as guarded reductions; a MatMul the library cannot run as a K reduction.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

#include "ir/ConvGeometry.h"

#include <algorithm>
#include <limits>

namespace fusec::program::lowering {

absl::StatusOr<int> GroupLowering::poolAt(const Node &n, const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  if (anchor_ != &n) return unimplemented(n, "pooling must be the kernel's only reduction");
  const size_t k = xs.size() - 2;
  std::vector<int64_t> ks = n.getInts("kernel_shape");
  if (ks.size() != k) return unimplemented(n, "kernel_shape missing or of wrong rank");
  std::vector<int64_t> strides = n.getInts("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dil = n.getInts("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.getInts("pads", std::vector<int64_t>(2 * k, 0));
  const std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t total = std::max<int64_t>(0, (os[i + 2] - 1) * strides[i] + (ks[i] - 1) * dil[i] + 1 - xs[i + 2]);
      int64_t small = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      pads[i + k] = total - pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  // idx is the output point = the kernel's current row; window dims are reduced.
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] != domainIdx_[d]) return unimplemented(n, "pool output read at another point");
  const ScalarType t = computeTypeOf(n.input(0)->type().dtype);
  std::vector<int> xi = {idx[0], idx[1]};
  int valid = spec_.constB(true), inPadded = spec_.constB(true);
  for (size_t i = 0; i < k; ++i) {
    int p = bin(BinaryOp::kAdd,
                bin(BinaryOp::kSub, bin(BinaryOp::kMul, idx[i + 2], spec_.constI(strides[i])),
                    spec_.constI(pads[i])),
                bin(BinaryOp::kMul, domainIdx_[numParallel_ + i], spec_.constI(dil[i])));
    valid = bin(BinaryOp::kAnd, valid,
                bin(BinaryOp::kAnd, bin(BinaryOp::kGe, p, spec_.constI(0)),
                    bin(BinaryOp::kLt, p, spec_.constI(xs[i + 2]))));
    inPadded = bin(BinaryOp::kAnd, inPadded,
                   bin(BinaryOp::kLt, p, spec_.constI(xs[i + 2] + pads[i + k])));
    xi.push_back(p);
  }
  FUSEC_ASSIGN_OR_RETURN(int x, guardedAt(n.input(0), xi, valid));
  auto &reds = nodeReductions_[&n];
  if (reds.empty()) {
    if (n.kind() == OpKind::kMaxPool) {
      int lowest = isFloatCompute(t) ? c(-INFINITY, t) : spec_.constI(std::numeric_limits<int64_t>::min(), t);
      reds = {spec_.reduceResult(spec_.addReduction(ReduceKind::kMax, spec_.select(valid, x, lowest)))};
    } else {
      int sum = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, spec_.select(valid, x, c(0, t))));
      int cond = n.getInt("count_include_pad", 0) ? inPadded : valid;
      int cnt = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, spec_.select(cond, c(1, t), c(0, t))));
      reds = {bin(BinaryOp::kDiv, sum, cnt)};
    }
  }
  return reds[0];
}

absl::StatusOr<int> GroupLowering::matmulAt(const Node &n, const std::vector<int> &idx) {
  // Naive contraction: the K loop is the kernel's reduced dim.
  if (anchor_ != &n) return unimplemented(n, "MatMul must be the kernel's only reduction");
  FUSEC_ASSIGN_OR_RETURN(Shape as, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape bs, staticShape(n.input(1)));
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] != domainIdx_[d]) return unimplemented(n, "MatMul output read at another point");
  const int kk = domainIdx_[numParallel_];
  std::vector<int> ai, bi;
  if (n.kind() == OpKind::kGemm) {
    const bool ta = n.getInt("transA", 0), tb = n.getInt("transB", 0);
    ai = ta ? std::vector<int>{kk, idx[0]} : std::vector<int>{idx[0], kk};
    bi = tb ? std::vector<int>{idx[1], kk} : std::vector<int>{kk, idx[1]};
  } else {
    const size_t orank = os.size();
    // Output coordinates: batch..., [m], [n] (m absent if A is 1-D, n if B is 1-D).
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    const int mIdx = a1 ? -1 : idx[orank - (b1 ? 1 : 2)];
    const int nIdx = b1 ? -1 : idx[orank - 1];
    const size_t nb = orank - (a1 ? 0 : 1) - (b1 ? 0 : 1);
    auto batchOf = [&](const Shape &s, size_t mat) {
      std::vector<int> r;
      const size_t sb = s.size() - mat;
      for (size_t d = 0; d < sb; ++d) r.push_back(s[d] == 1 ? spec_.constI(0) : idx[nb - sb + d]);
      return r;
    };
    if (a1) ai = {kk};
    else { ai = batchOf(as, 2); ai.push_back(mIdx); ai.push_back(kk); }
    if (b1) bi = {kk};
    else { bi = batchOf(bs, 2); bi.push_back(kk); bi.push_back(nIdx); }
  }
  auto &reds = nodeReductions_[&n];
  if (reds.empty()) {
    FUSEC_ASSIGN_OR_RETURN(int a, valueAt(n.input(0), ai));
    FUSEC_ASSIGN_OR_RETURN(int b, valueAt(n.input(1), bi));
    int r = spec_.reduceResult(spec_.addReduction(ReduceKind::kSum, bin(BinaryOp::kMul, a, spec_.cast(b, typeOf(a)))));
    if (n.kind() == OpKind::kGemm) {
      const ScalarType t = typeOf(r);
      r = bin(BinaryOp::kMul, r, c(n.getFloat("alpha", 1.0f), t));
      if (n.input(2)) {
        FUSEC_ASSIGN_OR_RETURN(int cv, bcastInput(n, 2, idx, os));
        r = bin(BinaryOp::kAdd, r, bin(BinaryOp::kMul, spec_.cast(cv, t), c(n.getFloat("beta", 1.0f), t)));
      }
    }
    reds = {r};
  }
  return reds[0];
}


absl::StatusOr<int> GroupLowering::convTransposeAt(const Node &n, const std::vector<int> &idx) {
  // A generated kernel: the domain is Y's points, the reduced dims the
  // input channels of the output channel's group and the kernel taps
  // (setupReductionDomain); a tap contributes where
  // (o + padBegin - t * dilation) is a multiple of the stride inside X.
  if (anchor_ != &n) return unimplemented(n, "ConvTranspose must be the kernel's only reduction");
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape ws, staticShape(n.input(1)));
  absl::StatusOr<ir::ConvTransposeGeometry> g = ir::convTransposeGeometry(n, xs, ws);
  if (!g.ok()) return unimplemented(n, std::string(g.status().message()));
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] != domainIdx_[d]) return unimplemented(n, "ConvTranspose output read at another point");
  const size_t k = xs.size() - 2;
  const int64_t cg = g->inChannels / g->group, mg = g->outChannels / g->group;
  const int ci = domainIdx_[numParallel_];
  const int grp = bin(BinaryOp::kDiv, idx[1], spec_.constI(mg));
  const int chan = bin(BinaryOp::kAdd, bin(BinaryOp::kMul, grp, spec_.constI(cg)), ci);
  std::vector<int> xi = {idx[0], chan};
  std::vector<int> wi = {chan, bin(BinaryOp::kMod, idx[1], spec_.constI(mg))};
  int valid = spec_.constB(true);
  for (size_t d = 0; d < k; ++d) {
    const int t = domainIdx_[numParallel_ + 1 + d];
    const int64_t s = g->strides[d];
    const int num = bin(BinaryOp::kSub, bin(BinaryOp::kAdd, idx[d + 2], spec_.constI(g->padBegin[d])),
                        bin(BinaryOp::kMul, t, spec_.constI(g->dilations[d])));
    int ok = bin(BinaryOp::kGe, num, spec_.constI(0));
    int i = num;
    if (s != 1) {
      ok = bin(BinaryOp::kAnd, ok, bin(BinaryOp::kEq, bin(BinaryOp::kMod, num, spec_.constI(s)), spec_.constI(0)));
      i = bin(BinaryOp::kDiv, num, spec_.constI(s));
    }
    ok = bin(BinaryOp::kAnd, ok, bin(BinaryOp::kLt, i, spec_.constI(xs[d + 2])));
    valid = bin(BinaryOp::kAnd, valid, ok);
    xi.push_back(i);
    wi.push_back(t);
  }
  auto &reds = nodeReductions_[&n];
  if (reds.empty()) {
    FUSEC_ASSIGN_OR_RETURN(int x, guardedAt(n.input(0), xi, valid));
    FUSEC_ASSIGN_OR_RETURN(int w, valueAt(n.input(1), wi));
    const ScalarType t = typeOf(x);
    int r = spec_.reduceResult(spec_.addReduction(
        ReduceKind::kSum, spec_.select(valid, bin(BinaryOp::kMul, x, spec_.cast(w, t)), c(0, t))));
    if (n.input(2)) {
      FUSEC_ASSIGN_OR_RETURN(int b, valueAt(n.input(2), {idx[1]}));
      r = bin(BinaryOp::kAdd, r, spec_.cast(b, t));
    }
    reds = {r};
  }
  return reds[0];
}

}  // namespace fusec::program::lowering
