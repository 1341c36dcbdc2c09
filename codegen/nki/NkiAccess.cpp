//===- NkiAccess.cpp - Index maps of a KernelSpec as affine DMA patterns --===//
#include "codegen/nki/NkiAccess.h"

#include <climits>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"

namespace fusec::codegen::nki {
namespace {

using program::BinaryOp;
using program::Expr;
using program::ExprKind;
using program::KernelSpec;

/// Integer value of index expression \p id at loop point \p pt; nullopt
/// when it reads memory or uses an op index maps do not need.
std::optional<int64_t> evalIndex(const KernelSpec &spec, int id, const std::vector<int64_t> &pt) {
  const Expr &e = spec.expr(id);
  switch (e.kind) {
    case ExprKind::kConst:
      return e.type == program::ScalarType::kF32 || e.type == program::ScalarType::kF64
                 ? static_cast<int64_t>(e.fval)
                 : e.ival;
    case ExprKind::kIndex: return pt[e.ival];
    case ExprKind::kCast: return evalIndex(spec, e.operands[0], pt);
    case ExprKind::kSelect: {
      auto c = evalIndex(spec, e.operands[0], pt);
      if (!c) return std::nullopt;
      return evalIndex(spec, e.operands[*c ? 1 : 2], pt);
    }
    case ExprKind::kBinary: {
      auto a = evalIndex(spec, e.operands[0], pt);
      auto b = evalIndex(spec, e.operands[1], pt);
      if (!a || !b) return std::nullopt;
      switch (static_cast<BinaryOp>(e.op)) {
        case BinaryOp::kAdd: return *a + *b;
        case BinaryOp::kSub: return *a - *b;
        case BinaryOp::kMul: return *a * *b;
        case BinaryOp::kDiv: return *b == 0 ? std::nullopt : std::optional<int64_t>(*a / *b);
        case BinaryOp::kMod: {
          if (*b == 0) return std::nullopt;
          int64_t r = *a % *b;
          if (r != 0 && ((r < 0) != (*b < 0))) r += *b;
          return r;
        }
        case BinaryOp::kMax: return std::max(*a, *b);
        case BinaryOp::kMin: return std::min(*a, *b);
        case BinaryOp::kEq: return int64_t(*a == *b);
        case BinaryOp::kNe: return int64_t(*a != *b);
        case BinaryOp::kLt: return int64_t(*a < *b);
        case BinaryOp::kLe: return int64_t(*a <= *b);
        case BinaryOp::kGt: return int64_t(*a > *b);
        case BinaryOp::kGe: return int64_t(*a >= *b);
        case BinaryOp::kAnd: return int64_t(*a && *b);
        case BinaryOp::kOr: return int64_t(*a || *b);
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

/// True when \p id (an index expression) reads a buffer.
bool readsMemory(const KernelSpec &spec, int id) {
  const Expr &e = spec.expr(id);
  if (e.kind == ExprKind::kLoad || e.kind == ExprKind::kReduceResult) return true;
  for (int o : e.operands)
    if (readsMemory(spec, o)) return true;
  return false;
}

/// Marks the loop dims whose kIndex is used as a value (not as an address).
void collectValueDims(const KernelSpec &spec, int id, std::set<int> &dims, std::set<int> &seen) {
  if (!seen.insert(id).second) return;
  const Expr &e = spec.expr(id);
  if (e.kind == ExprKind::kIndex) dims.insert(static_cast<int>(e.ival));
  if (e.kind == ExprKind::kLoad) return;  // its operands are the index map
  for (int o : e.operands) collectValueDims(spec, o, dims, seen);
}

}  // namespace

absl::StatusOr<AccessPlan> analyzeAccesses(const KernelSpec &spec) {
  AccessPlan plan;
  const int nd = static_cast<int>(spec.dims.size());
  std::vector<int64_t> ext(nd);
  int64_t points = 1;
  for (int d = 0; d < nd; ++d) {
    ext[d] = spec.dims[d].extent;
    points *= std::max<int64_t>(1, ext[d]);
  }
  auto describe = [&](const Access &a) {
    return a.store >= 0 ? absl::StrCat("the store to buffer ", a.buffer)
                        : absl::StrCat("the load of buffer ", a.buffer);
  };
  auto pointAt = [&](int64_t n, std::vector<int64_t> &p) {
    for (int d = nd - 1; d >= 0; --d) {
      p[d] = n % std::max<int64_t>(1, ext[d]);
      n /= std::max<int64_t>(1, ext[d]);
    }
  };
  std::set<int> indexDims;  // dims whose index a non-affine map reads as a value
  auto addAccess = [&](int buffer, int expr, int store, std::vector<int> index,
                       int guard) -> absl::Status {
    Access a;
    a.buffer = buffer;
    a.expr = expr;
    a.store = store;
    const std::vector<int64_t> &shape = spec.buffers[buffer].shape;
    const std::vector<int> origIndex = index;
    for (size_t i = 0; i < index.size(); ++i) {
      if (!readsMemory(spec, index[i])) continue;
      if (store >= 0 || guard >= 0)
        return absl::UnimplementedError(absl::StrCat(
            describe(a), " is a guarded gather or a scatter: not lowered for nki yet"));
      int64_t stride = 1;
      for (size_t j = i + 1; j < shape.size(); ++j) stride *= shape[j];
      if (a.gatherDim < 0) {
        a.gatherDim = static_cast<int>(i);
        a.gatherExpr = index[i];
        a.gatherStride = stride;
      }
      a.gathers.emplace_back(index[i], stride);
      index[i] = -1;
    }
    // The gathered dim (index -1) counts as 0: its rows come from gatherExpr.
    auto offsetAt = [&](const std::vector<int64_t> &p) -> std::optional<int64_t> {
      int64_t off = 0;
      for (size_t i = 0; i < index.size(); ++i) {
        int64_t v = 0;
        if (index[i] >= 0) {
          auto x = evalIndex(spec, index[i], p);
          if (!x || *x < 0 || *x >= shape[i]) return std::nullopt;
          v = *x;
        }
        off = off * shape[i] + v;
      }
      return off;
    };
    // The guard's box (every point where it holds), checked to be exact.
    std::vector<int64_t> p(nd, 0);
    if (guard >= 0) {
      if (points > (int64_t{1} << 20))
        return absl::UnimplementedError(absl::StrCat(describe(a), " is guarded on a domain over 2^20 points"));
      a.lo.assign(nd, 0);
      a.hi.assign(nd, 0);
      std::vector<int64_t> lo(nd, INT64_MAX), hi(nd, INT64_MIN);
      bool any = false;
      for (int64_t n = 0; n < points; ++n) {
        pointAt(n, p);
        auto g = evalIndex(spec, guard, p);
        if (!g) return absl::UnimplementedError(absl::StrCat(describe(a), " has a guard nki cannot evaluate"));
        if (!*g) continue;
        any = true;
        for (int d = 0; d < nd; ++d) {
          lo[d] = std::min(lo[d], p[d]);
          hi[d] = std::max(hi[d], p[d] + 1);
        }
      }
      if (!any) {
        a.dead = true;
        a.stride.assign(nd, 0);
        plan.accesses.push_back(std::move(a));
        return absl::OkStatus();
      }
      for (int64_t n = 0; n < points; ++n) {
        pointAt(n, p);
        bool in = true;
        for (int d = 0; d < nd; ++d) in = in && p[d] >= lo[d] && p[d] < hi[d];
        if (in != (*evalIndex(spec, guard, p) != 0))
          return absl::UnimplementedError(absl::StrCat(
              describe(a), " has a guard that is not a box of the loop indices: not lowered for nki yet"));
      }
      a.lo = lo;
      a.hi = hi;
    }
    std::vector<int64_t> lo = a.lo.empty() ? std::vector<int64_t>(nd, 0) : a.lo;
    std::vector<int64_t> hi = a.hi.empty() ? ext : a.hi;
    auto base = offsetAt(lo);
    if (!base)
      return absl::UnimplementedError(absl::StrCat(describe(a), " has an index map nki cannot evaluate"));
    a.stride.assign(nd, 0);
    for (int d = 0; d < nd; ++d) {
      if (hi[d] - lo[d] <= 1) continue;
      p = lo;
      p[d] += 1;
      auto o = offsetAt(p);
      if (!o) return absl::UnimplementedError(absl::StrCat(describe(a), " leaves its buffer"));
      a.stride[d] = *o - *base;
    }
    a.base = *base;
    for (int d = 0; d < nd; ++d) a.base -= a.stride[d] * lo[d];
    auto check = [&](const std::vector<int64_t> &q) -> bool {
      for (int d = 0; d < nd; ++d)
        if (q[d] < lo[d] || q[d] >= hi[d]) return true;
      auto o = offsetAt(q);
      int64_t want = a.base;
      for (int d = 0; d < nd; ++d) want += a.stride[d] * q[d];
      return o && *o == want;
    };
    bool affine = true;
    if (points <= (int64_t{1} << 18)) {
      for (int64_t n = 0; n < points; ++n) {
        pointAt(n, p);
        if (!check(p)) {
          affine = false;
          break;
        }
      }
    } else {
      uint64_t s = 88172645463325252ull;
      for (int n = 0; n < 20000; ++n) {
        for (int d = 0; d < nd; ++d) {
          s ^= s << 13; s ^= s >> 7; s ^= s << 17;
          p[d] = n < nd ? (d == n ? ext[d] - 1 : 0)
                        : static_cast<int64_t>(s % uint64_t(std::max<int64_t>(1, ext[d])));
        }
        if (!check(p)) {
          affine = false;
          break;
        }
      }
    }
    if (!affine) {
      // Not affine (a reshape of a transposed view): an element gather
      // whose offsets are the index map evaluated on tiles (iota, div, mod).
      if (store >= 0 || guard >= 0)
        return absl::UnimplementedError(absl::StrCat(
            describe(a), " is not affine in the loop indices (a scatter): not lowered for nki yet"));
      a.base = 0;
      a.stride.assign(nd, 0);
      a.gathers.clear();
      for (size_t i = 0; i < origIndex.size(); ++i) {
        int64_t stride = 1;
        for (size_t j = i + 1; j < shape.size(); ++j) stride *= shape[j];
        a.gathers.emplace_back(origIndex[i], stride);
        std::set<int> seenIdx;
        collectValueDims(spec, origIndex[i], indexDims, seenIdx);
      }
      a.gatherDim = 0;
      a.gatherExpr = origIndex[0];
      a.gatherStride = a.gathers[0].second;
    }
    plan.accesses.push_back(std::move(a));
    return absl::OkStatus();
  };
  for (int id = 0; id < static_cast<int>(spec.exprs.size()); ++id) {
    const Expr &e = spec.expr(id);
    if (e.kind != ExprKind::kLoad) continue;
    if (auto st = addAccess(static_cast<int>(e.ival), id, -1, e.operands, e.guard); !st.ok()) return st;
  }
  for (int s = 0; s < static_cast<int>(spec.stores.size()); ++s) {
    const program::Store &st = spec.stores[s];
    if (auto r = addAccess(st.buffer, -1, s, st.index, st.guard); !r.ok()) return r;
  }

  std::set<int> valueDims, seen;
  for (const program::Store &st : spec.stores) collectValueDims(spec, st.value, valueDims, seen);
  for (const program::Reduction &r : spec.reductions) collectValueDims(spec, r.body, valueDims, seen);
  valueDims.insert(indexDims.begin(), indexDims.end());

  // Dims a guard box cuts keep their own loop (their bounds are tested).
  for (const Access &a : plan.accesses)
    for (int d = 0; d < static_cast<int>(a.lo.size()); ++d)
      if (a.lo[d] != 0 || a.hi[d] != ext[d]) valueDims.insert(d);
  // Merge adjacent dims of the same kind that every access walks
  // contiguously (stride of the outer == extent * stride of the inner).
  for (int d = 0; d < nd; ++d) {
    TileDim t;
    t.extent = ext[d];
    t.reduced = spec.dims[d].reduced;
    t.loopDims = {d};
    t.valueUsed = valueDims.count(d) != 0;
    for (const Access &a : plan.accesses) t.stride.push_back(a.stride[d]);
    if (t.extent == 1 && !t.valueUsed) continue;  // its index is always 0
    if (!plan.dims.empty()) {
      TileDim &prev = plan.dims.back();
      bool merge = prev.reduced == t.reduced && !prev.valueUsed && !t.valueUsed;
      for (size_t i = 0; merge && i < plan.accesses.size(); ++i)
        merge = prev.stride[i] == t.extent * t.stride[i];
      if (merge) {
        prev.extent *= t.extent;
        prev.loopDims.push_back(d);
        prev.stride = t.stride;
        continue;
      }
    }
    plan.dims.push_back(std::move(t));
  }
  return plan;
}

}  // namespace fusec::codegen::nki
