//===- CudaPointwise.cpp - Pointwise KernelSpecs to CUDA --------------------===//
//
// One thread per output point (grid-stride), a 16-byte vectorised variant when the innermost extent allows.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaKernelCommon.h"

namespace fusec::codegen::cuda_detail {
namespace {

//===----------------------------------------------------------------------===//
// Pointwise kernels.
//===----------------------------------------------------------------------===//

struct PointwisePlan {
  int vec = 1;
  std::set<int> vecLoads;   ///< expr ids
  std::set<int> vecStores;  ///< store indices
  std::set<int> vecBuffers;
  /// Dynamic shapes: a launcher condition (over `symbols`) under which the
  /// vector kernel is valid, the innermost extent a multiple of vec; empty
  /// when it always is.
  std::string extentGuard;
};

PointwisePlan planPointwise(const KernelSpec &s, const Analysis &a, const SymText *sym) {
  PointwisePlan p;
  if (s.dims.empty()) return p;
  const int last = static_cast<int>(s.dims.size()) - 1;
  const int64_t ext = s.dims[last].extent;
  if (ext <= 1) return p;
  // Dynamic shapes: an innermost extent bound at run time gets the vector
  // kernel behind a guard (a multiple of the width, as the static plan
  // requires); the scalar kernel takes every other extent.
  const bool symInner = dimSymbolic(s, last, sym);
  const SymExtent inner = s.dims[last].symbolic;
  int lastIdx = -1;
  for (size_t i = 0; i < s.exprs.size(); ++i)
    if (s.exprs[i].kind == ExprKind::kIndex && s.exprs[i].ival == last) lastIdx = static_cast<int>(i);
  auto ok = [&](int buffer, const std::vector<int> &idx) {
    const BufferDesc &b = s.buffers[buffer];
    // A load whose index count is not the buffer's rank is never vectorised
    // (the lowering reads scalar operands at rank-many zero indices).
    if (b.shape.empty() || idx.size() != b.shape.size() || b.shape.back() != ext || idx.back() != lastIdx)
      return false;
    const SymExtent bl = bufferDim(s, buffer, b.shape.size() - 1, sym);
    if (symInner ? bl != inner : !bl.isConstant()) return false;
    for (size_t i = 0; i + 1 < idx.size(); ++i)
      if (a.dependsOnDim[idx[i]]) return false;
    return true;
  };
  int64_t maxSize = 0;
  std::set<int> loads, stores;
  for (size_t i = 0; i < s.stores.size(); ++i) {
    const Store &st = s.stores[i];
    if (st.guard < 0 && ok(st.buffer, st.index)) {
      stores.insert(static_cast<int>(i));
      maxSize = std::max(maxSize, ir::dtypeSize(s.buffers[st.buffer].dtype));
    }
  }
  if (stores.empty()) return p;
  for (size_t i = 0; i < s.exprs.size(); ++i) {
    const Expr &e = s.exprs[i];
    if (e.kind == ExprKind::kLoad && e.guard < 0 && ok(static_cast<int>(e.ival), e.operands)) {
      loads.insert(static_cast<int>(i));
      maxSize = std::max(maxSize, ir::dtypeSize(s.buffers[e.ival].dtype));
    }
  }
  int vec = static_cast<int>(std::min<int64_t>(8, 16 / std::max<int64_t>(maxSize, 1)));
  if (symInner) {
    if (inner.offset() != 0 || vec <= 1) return p;
    if (inner.coeff() % vec != 0) p.extentGuard = absl::StrCat("(", sym->of(inner, "symbols"), " % ", vec, " == 0)");
  } else {
    while (vec > 1 && ext % vec != 0) vec /= 2;
  }
  if (vec <= 1) return p;
  p.vec = vec;
  p.vecLoads = loads;
  p.vecStores = stores;
  for (int l : loads) p.vecBuffers.insert(static_cast<int>(s.exprs[l].ival));
  for (int st : stores) p.vecBuffers.insert(s.stores[st].buffer);
  return p;
}

/// The number of points of \p s's domain as index arithmetic (a literal
/// when static, else read from the symbols array \p arr).
std::string domainSize(const KernelSpec &s, const SymText *sym, const std::string &arr) {
  SymExtent total = SymExtent::constant(1);
  for (int d = 0; d < static_cast<int>(s.dims.size()); ++d)
    total = total * (dimSymbolic(s, d, sym) ? s.dims[d].symbolic : SymExtent::constant(s.dims[d].extent));
  return total.isConstant() ? absl::StrCat(total.coeff(), "LL") : sym->of(total, arr);
}

std::string emitPointwiseKernel(const KernelSpec &s, const std::string &kname,
                                const PointwisePlan &p, const Analysis &a, const SymText *sym) {
  const int rank = static_cast<int>(s.dims.size());
  const int last = rank - 1;
  const int vec = p.vec;
  ExprPrinter pr(s, sym);
  for (size_t i = 0; i < s.exprs.size(); ++i)
    if (s.exprs[i].kind == ExprKind::kIndex) pr.name(static_cast<int>(i)) = absl::StrCat("i", s.exprs[i].ival);
  std::vector<int> roots;
  for (const Store &st : s.stores) {
    roots.push_back(st.value);
    roots.insert(roots.end(), st.index.begin(), st.index.end());
    if (st.guard >= 0) roots.push_back(st.guard);
  }
  std::set<int> needed = collect(s, roots, [](int) { return false; });
  std::string out;
  absl::StrAppend(&out, "__global__ void __launch_bounds__(256) ", kname, "(", kernelParams(s, sym), ") {\n");
  absl::StrAppend(&out, "  typedef ", needsWideIndex(s, sym) ? "long long" : "int", " idx_t;\n");
  if (sym && sym->dynamic()) {
    absl::StrAppend(&out, "  const idx_t total = (idx_t)(", domainSize(s, sym, "sy.v"), " / ", vec, ");\n");
  } else {
    int64_t total = 1;
    for (const LoopDim &d : s.dims) total *= d.extent;
    absl::StrAppend(&out, "  const idx_t total = (idx_t)", total / vec, ";\n");
  }
  absl::StrAppend(&out, "  for (idx_t t = (idx_t)blockIdx.x * 256 + (idx_t)threadIdx.x; t < total; "
                        "t += (idx_t)gridDim.x * 256) {\n");
  absl::StrAppend(&out, "    const idx_t flat = t * (idx_t)", vec, ";\n");
  if (rank > 0) out += decompose(s, "flat", 0, rank, last, sym);
  // Lane-invariant exprs.
  for (int id : needed) {
    const Expr &e = s.exprs[id];
    if (e.kind == ExprKind::kIndex || e.kind == ExprKind::kConst) continue;
    if (rank > 0 && a.dependsOnDim[id]) continue;
    if (p.vecLoads.count(id)) continue;
    absl::StrAppend(&out, "    ", pr.stmt(id), "\n");
  }
  std::map<int, std::string> lane0;
  if (rank > 0) {
    for (size_t i = 0; i < s.exprs.size(); ++i)
      if (s.exprs[i].kind == ExprKind::kIndex && s.exprs[i].ival == last)
        lane0[static_cast<int>(i)] = absl::StrCat("i", last, "base");
  }
  if (vec > 1) {
    for (int id : p.vecLoads) {
      if (!needed.count(id)) continue;
      const Expr &e = s.exprs[id];
      const char *st = cudaStorageType(s.buffers[e.ival].dtype);
      absl::StrAppend(&out, "    const fx::Vec<", st, ", ", vec, "> v", id,
                      " = *reinterpret_cast<const fx::Vec<", st, ", ", vec, "> *>(b", e.ival, " + (",
                      pr.offset(static_cast<int>(e.ival), e.operands, lane0), "));\n");
    }
    for (int si : p.vecStores) {
      const char *st = cudaStorageType(s.buffers[s.stores[si].buffer].dtype);
      absl::StrAppend(&out, "    fx::Vec<", st, ", ", vec, "> o", si, ";\n");
    }
  }
  absl::StrAppend(&out, "#pragma unroll\n    for (int v = 0; v < ", vec, "; ++v) {\n");
  if (rank > 0 && (s.dims[last].extent != 1 || dimSymbolic(s, last, sym)))
    absl::StrAppend(&out, "      [[maybe_unused]] const idx_t i", last, " = i", last, "base + (idx_t)v;\n");
  for (int id : needed) {
    const Expr &e = s.exprs[id];
    if (e.kind == ExprKind::kIndex || e.kind == ExprKind::kConst) continue;
    if (p.vecLoads.count(id)) {
      absl::StrAppend(&out, "      const ", cType(e.type), " ", pr.name(id), " = fx::cvt(v", id, ".v[v]);\n");
      continue;
    }
    if (rank == 0 || !a.dependsOnDim[id]) continue;
    absl::StrAppend(&out, "      ", pr.stmt(id), "\n");
  }
  for (size_t si = 0; si < s.stores.size(); ++si) {
    const Store &st = s.stores[si];
    if (p.vecStores.count(static_cast<int>(si))) {
      absl::StrAppend(&out, "      o", si, ".v[v] = fx::to<", cudaStorageType(s.buffers[st.buffer].dtype),
                      ">(", pr.ref(st.value), ");\n");
      continue;
    }
    std::string w = absl::StrCat("fx::st(b", st.buffer, ", ", pr.offset(st.buffer, st.index), ", ",
                                 pr.ref(st.value), ");");
    if (st.guard >= 0) w = absl::StrCat("if (", pr.ref(st.guard), ") ", w);
    absl::StrAppend(&out, "      ", w, "\n");
  }
  absl::StrAppend(&out, "    }\n");
  for (int si : p.vecStores) {
    const Store &st = s.stores[si];
    const char *ty = cudaStorageType(s.buffers[st.buffer].dtype);
    absl::StrAppend(&out, "    *reinterpret_cast<fx::Vec<", ty, ", ", vec, "> *>(b", st.buffer, " + (",
                    pr.offset(st.buffer, st.index, lane0), ")) = o", si, ";\n");
  }
  absl::StrAppend(&out, "  }\n}\n\n");
  return out;
}


}  // namespace

absl::StatusOr<std::string> emitPointwise(const KernelSpec &s, const std::string &symbol, const SymText *sym) {
  const int rank = static_cast<int>(s.dims.size());
  const Analysis a = analyse(s, rank - 1);
  const PointwisePlan vp = planPointwise(s, a, sym);
  int64_t total = 1;
  for (const LoopDim &d : s.dims) total *= d.extent;
  const bool dyn = sym && sym->dynamic();
  std::string out = emitPointwiseKernel(s, symbol + "_scalar", PointwisePlan{}, a, sym);
  if (vp.vec > 1) out += emitPointwiseKernel(s, symbol + "_vec", vp, a, sym);
  auto grid = [&](int64_t n, int vec) -> std::string {
    if (dyn) return absl::StrCat("grid", vec);
    return absl::StrCat(std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 1 << 20)));
  };
  out += launcherHead(symbol, sym);
  if (total == 0 && !dyn) {
    absl::StrAppend(&out, "  (void)buffers; (void)stream;\n  return 0;\n}\n\n");
    return out;
  }
  if (dyn) {
    // Extents bound at run time: an empty domain launches nothing; grids
    // as the static launcher sizes them (256 threads, at most 2^20 blocks).
    absl::StrAppend(&out, "  const long long total = ", domainSize(s, sym, "symbols"), ";\n",
                    "  if (total <= 0) return 0;\n");
    for (int v = 1; v <= vp.vec; v *= 2) {
      if (v != 1 && v != vp.vec) continue;
      absl::StrAppend(&out, "  [[maybe_unused]] const unsigned grid", v, " = (unsigned)(((total / ", v,
                      " + 255) / 256) < (1LL << 20) ? (total / ", v, " + 255) / 256 : (1LL << 20));\n");
    }
  }
  if (vp.vec > 1) {
    std::vector<std::string> checks;
    if (!vp.extentGuard.empty()) checks.push_back(vp.extentGuard);
    for (int b : vp.vecBuffers)
      checks.push_back(absl::StrCat("(reinterpret_cast<uintptr_t>(buffers[", b, "]) % ",
                                    vp.vec * ir::dtypeSize(s.buffers[b].dtype), " == 0)"));
    absl::StrAppend(&out, "  if (", absl::StrJoin(checks, " && "), ") {\n    ", symbol, "_vec<<<",
                    grid(total / vp.vec, vp.vec), ", 256, 0, stream>>>(", launcherArgs(s, sym),
                    ");\n  } else {\n  ");
  }
  absl::StrAppend(&out, "  ", symbol, "_scalar<<<", grid(total, 1), ", 256, 0, stream>>>(", launcherArgs(s, sym),
                  ");\n");
  if (vp.vec > 1) absl::StrAppend(&out, "  }\n");
  absl::StrAppend(&out, "  return static_cast<int>(cudaGetLastError());\n}\n\n");
  return out;
}


}  // namespace fusec::codegen::cuda_detail
