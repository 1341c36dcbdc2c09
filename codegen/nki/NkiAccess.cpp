//===- NkiAccess.cpp - Index maps of a KernelSpec as affine DMA patterns --===//
#include "codegen/nki/NkiAccess.h"

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

/// Flat element offset of \p index (one expr per dim of \p shape) at \p pt.
std::optional<int64_t> flatOffset(const KernelSpec &spec, const std::vector<int> &index,
                                  const std::vector<int64_t> &shape, const std::vector<int64_t> &pt) {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    auto v = evalIndex(spec, index[i], pt);
    if (!v || *v < 0 || *v >= shape[i]) return std::nullopt;
    off = off * shape[i] + *v;
  }
  return off;
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
  auto addAccess = [&](int buffer, int expr, int store, const std::vector<int> &index,
                       int guard) -> absl::Status {
    Access a;
    a.buffer = buffer;
    a.expr = expr;
    a.store = store;
    if (guard >= 0)
      return absl::UnimplementedError(absl::StrCat(
          describe(a), " is guarded (Pad/Concat/pooling window): not lowered for nki yet"));
    for (int i : index)
      if (readsMemory(spec, i))
        return absl::UnimplementedError(absl::StrCat(
            describe(a), " is a gather (its index is read from memory): not lowered for nki yet"));
    const std::vector<int64_t> &shape = spec.buffers[buffer].shape;
    std::vector<int64_t> pt(nd, 0);
    auto base = flatOffset(spec, index, shape, pt);
    if (!base)
      return absl::UnimplementedError(absl::StrCat(describe(a), " has an index map nki cannot evaluate"));
    a.base = *base;
    a.stride.assign(nd, 0);
    for (int d = 0; d < nd; ++d) {
      if (ext[d] <= 1) continue;
      pt.assign(nd, 0);
      pt[d] = 1;
      auto o = flatOffset(spec, index, shape, pt);
      if (!o) return absl::UnimplementedError(absl::StrCat(describe(a), " leaves its buffer"));
      a.stride[d] = *o - a.base;
    }
    // Check the affine form: every point when the domain is small, else a
    // deterministic sample (a linear congruential sequence) plus the corners.
    auto check = [&](const std::vector<int64_t> &p) -> bool {
      auto o = flatOffset(spec, index, shape, p);
      int64_t want = a.base;
      for (int d = 0; d < nd; ++d) want += a.stride[d] * p[d];
      return o && *o == want;
    };
    std::vector<int64_t> p(nd, 0);
    if (points <= (int64_t{1} << 18)) {
      for (int64_t n = 0; n < points; ++n) {
        int64_t r = n;
        for (int d = nd - 1; d >= 0; --d) {
          p[d] = r % std::max<int64_t>(1, ext[d]);
          r /= std::max<int64_t>(1, ext[d]);
        }
        if (!check(p))
          return absl::UnimplementedError(absl::StrCat(
              describe(a), " is not affine in the loop indices (a reshape of a transposed view): "
                           "not lowered for nki yet"));
      }
    } else {
      uint64_t s = 88172645463325252ull;
      for (int n = 0; n < 20000; ++n) {
        for (int d = 0; d < nd; ++d) {
          s ^= s << 13; s ^= s >> 7; s ^= s << 17;
          p[d] = n < nd ? (d == n ? ext[d] - 1 : 0) : static_cast<int64_t>(s % uint64_t(std::max<int64_t>(1, ext[d])));
        }
        if (!check(p))
          return absl::UnimplementedError(absl::StrCat(
              describe(a), " is not affine in the loop indices: not lowered for nki yet"));
      }
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
