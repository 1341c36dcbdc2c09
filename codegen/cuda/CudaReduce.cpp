//===- CudaReduce.cpp - Row-reduction KernelSpecs to CUDA -------------------===//
//
// One row per thread group (warp or block): reductions, then the row epilogue; rows cached in registers when they fit.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaKernelCommon.h"

namespace fusec::codegen::cuda_detail {
namespace {

//===----------------------------------------------------------------------===//
// Reduce kernels.
//===----------------------------------------------------------------------===//

/// How a row kernel moves the elements of its innermost (reduced) dim.
/// vec > 1: each thread access covers `vec` consecutive innermost elements
/// (one 16-byte access for 8 x bf16 / 4 x f32); loads and stores listed here
/// move as one fx::Vec, the rest stay scalar inside the unrolled lane loop.
struct RowVecPlan {
  int vec = 1;
  std::set<int> vecLoads;   ///< load expr ids
  std::set<int> vecStores;  ///< element-level store indices
  std::set<int> vecBuffers;
  std::set<int> hoisted;    ///< elem-level index exprs computed before the lane loop
};

/// True if \p id is index arithmetic over kIndex/kConst only, not using dim \p last.
bool pureIndexNotOn(const KernelSpec &s, const Analysis &a, int id) {
  if (a.dependsOnDim[id]) return false;
  std::set<int> seen = collect(s, {id}, [](int) { return false; });
  for (int x : seen) {
    const Expr &e = s.exprs[x];
    if (e.kind == ExprKind::kIndex || e.kind == ExprKind::kConst) continue;
    if (e.kind == ExprKind::kBinary && e.type == ScalarType::kIdx && e.guard < 0) continue;
    return false;
  }
  return true;
}

RowVecPlan planRowVec(const KernelSpec &s, const Analysis &a, const std::vector<int> &elemStores,
                      const SymText *sym) {
  RowVecPlan p;
  const int rank = static_cast<int>(s.dims.size());
  if (rank == 0 || !s.dims[rank - 1].reduced) return p;
  const int last = rank - 1;
  for (int d = 0; d < rank; ++d)
    if (s.dims[d].reduced && dimSymbolic(s, d, sym)) return p;  // a row's length is known at run time only
  const int64_t ext = s.dims[last].extent;
  if (ext <= 1) return p;
  int lastIdx = -1;
  for (size_t i = 0; i < s.exprs.size(); ++i)
    if (s.exprs[i].kind == ExprKind::kIndex && s.exprs[i].ival == last) lastIdx = static_cast<int>(i);
  if (lastIdx < 0) return p;
  auto ok = [&](int buffer, const std::vector<int> &idx) {
    const BufferDesc &b = s.buffers[buffer];
    if (b.shape.empty() || idx.size() != b.shape.size() || idx.back() != lastIdx ||
        !bufferDim(s, buffer, b.shape.size() - 1, sym).isConstant())
      return false;
    for (size_t i = 0; i + 1 < idx.size(); ++i)
      if (!pureIndexNotOn(s, a, idx[i])) return false;
    return true;
  };
  std::map<int, int> loadBuf, storeBuf;  // candidate -> buffer
  int64_t maxSize = 0;
  for (size_t i = 0; i < s.exprs.size(); ++i) {
    const Expr &e = s.exprs[i];
    if (e.kind == ExprKind::kLoad && e.guard < 0 && ok(static_cast<int>(e.ival), e.operands)) {
      loadBuf[static_cast<int>(i)] = static_cast<int>(e.ival);
      maxSize = std::max(maxSize, ir::dtypeSize(s.buffers[e.ival].dtype));
    }
  }
  for (int si : elemStores) {
    const Store &st = s.stores[si];
    if (st.guard < 0 && ok(st.buffer, st.index)) {
      storeBuf[si] = st.buffer;
      maxSize = std::max(maxSize, ir::dtypeSize(s.buffers[st.buffer].dtype));
    }
  }
  if (loadBuf.empty() && storeBuf.empty()) return p;
  int vec = static_cast<int>(std::min<int64_t>(8, 16 / std::max<int64_t>(maxSize, 1)));
  while (vec > 1 && ext % vec != 0) vec /= 2;
  if (vec <= 1) return p;
  // A buffer whose rows are not a multiple of vec elements cannot keep every
  // vector access aligned: it stays scalar.
  auto rowsOk = [&](int b) { return s.buffers[b].shape.back() % vec == 0; };
  std::vector<int> idxRoots;
  for (const auto &[l, b] : loadBuf)
    if (rowsOk(b)) {
      p.vecLoads.insert(l);
      p.vecBuffers.insert(b);
      const auto &ops = s.exprs[l].operands;
      idxRoots.insert(idxRoots.end(), ops.begin(), ops.end() - 1);
    }
  for (const auto &[si, b] : storeBuf)
    if (rowsOk(b)) {
      p.vecStores.insert(si);
      p.vecBuffers.insert(b);
      const auto &ops = s.stores[si].index;
      idxRoots.insert(idxRoots.end(), ops.begin(), ops.end() - 1);
    }
  if (p.vecBuffers.empty()) return RowVecPlan{};
  p.vec = vec;
  for (int id : collect(s, idxRoots, [](int) { return false; }))
    if (a.elem[id] && s.exprs[id].kind != ExprKind::kIndex && s.exprs[id].kind != ExprKind::kConst)
      p.hoisted.insert(id);
  return p;
}

/// Threads per row (G), threads per block, chunks per thread and whether the
/// row is held in registers, for one row kernel variant.
struct RowShape {
  int g = 32, block = 128, vec = 1;
  int64_t chunks = 0;  ///< vec-element accesses per row
  /// Dynamic shapes: `chunks` as index arithmetic when the row's length is
  /// bound at run time (empty: the literal `chunks`).
  std::string chunksText;
  int64_t items = 0;   ///< accesses per thread (ceil(chunks / g))
  bool cached = false;
};

/// Register budget (values per thread) for the row cache.
constexpr int64_t kRowCacheValues = 32;

RowShape chooseRowShape(int64_t len, int vec, size_t cacheEntries, int maxThreads) {
  RowShape r;
  r.vec = vec;
  r.chunks = len / vec;
  auto fits = [&](int g) {
    const int64_t items = (r.chunks + g - 1) / g;
    // Small blocks may hold more per thread (more registers each).
    const int64_t budget = g <= 128 ? 2 * kRowCacheValues : kRowCacheValues;
    return cacheEntries > 0 && len > 0 && items * vec * static_cast<int64_t>(cacheEntries) <= budget;
  };
  if (vec == 1) {
    // Scalar rows (the fallback, and rows whose length no vector divides).
    if (len <= 256) {
      r.g = 32;
      r.block = 128;
    } else {
      int64_t want = (len + 7) / 8;
      want = (want + 31) / 32 * 32;
      r.g = static_cast<int>(std::clamp<int64_t>(want, 64, std::max(64, maxThreads > 0 ? maxThreads : 1024)));
      r.block = r.g;
    }
  } else if (r.chunks <= 128) {
    // Short rows: one warp per row, four rows per block.
    r.g = 32;
    r.block = 128;
  } else {
    // One block per row: up to `cap` threads, more when the row would not
    // fit in registers anyway. Two accesses per thread by default (measured on the H200, rows of
    // 4096: bf16 256 threads 1.1-1.3x faster than 512; f32 512 best).
    const int cap = maxThreads > 0 ? maxThreads : 512;
    const int64_t want = maxThreads > 0 ? r.chunks : (r.chunks + 1) / 2;
    int g = static_cast<int>(std::min<int64_t>(cap, (want + 31) / 32 * 32));
    if (!fits(g) && maxThreads <= 0)
      g = static_cast<int>(std::min<int64_t>(1024, (r.chunks + 31) / 32 * 32));
    r.g = std::max(32, g);
    r.block = r.g;
  }
  r.items = (r.chunks + r.g - 1) / r.g;
  r.cached = fits(r.g);
  return r;
}

const char *combineName(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "fx::Sum";
    case ReduceKind::kProd: return "fx::Prod";
    case ReduceKind::kMax: return "fx::Max";
    case ReduceKind::kMin: return "fx::Min";
    default: return "";
  }
}

std::string initValue(ReduceKind k, ScalarType t) {
  const bool f = t == ScalarType::kF32 || t == ScalarType::kF64;
  const std::string ty = cType(t);
  // bool: false / true (an int64 extreme converts to true for both).
  if (t == ScalarType::kBool && (k == ReduceKind::kMax || k == ReduceKind::kMin))
    return k == ReduceKind::kMax ? "false" : "true";
  switch (k) {
    case ReduceKind::kSum: return absl::StrCat("(", ty, ")0");
    case ReduceKind::kProd: return absl::StrCat("(", ty, ")1");
    case ReduceKind::kMax:
    case ReduceKind::kArgMax:
      return f ? absl::StrCat("-fx::inf<", ty, ">()") : "fx::lowest<long long>()";
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
      return f ? absl::StrCat("fx::inf<", ty, ">()") : "fx::highest<long long>()";
  }
  return "0";
}

/// The structure shared by both variants of a row kernel.
struct RowLayout {
  int np = 0, rank = 0;
  int64_t rows = 0, len = 0;
  /// Dynamic shapes: rows and row length as symbolic forms.
  SymExtent rowsSym = SymExtent::constant(0), lenSym = SymExtent::constant(0);
  std::vector<int> stageOf;
  int numStages = 0;
  std::vector<std::vector<int>> loopRoots;  ///< per stage, then the epilogue
  std::vector<int> elemStores, rowStores;
  std::vector<int> cache;  ///< element-level values re-read by later loops
  std::map<int, int> fillLoop;  ///< cache entry -> the loop that computes and stores it
};

/// True for the operations worth keeping in registers rather than redoing.
bool isCostly(const Expr &e) {
  if (e.kind == ExprKind::kBinary) return static_cast<BinaryOp>(e.op) == BinaryOp::kPow;
  if (e.kind != ExprKind::kUnary) return false;
  switch (static_cast<UnaryOp>(e.op)) {
    case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kErf: case UnaryOp::kTanh:
    case UnaryOp::kSigmoid: case UnaryOp::kSin: case UnaryOp::kCos: case UnaryOp::kLog1p:
    case UnaryOp::kTan: case UnaryOp::kAsin: case UnaryOp::kAcos: case UnaryOp::kAtan: case UnaryOp::kSinh:
    case UnaryOp::kCosh: case UnaryOp::kAsinh: case UnaryOp::kAcosh: case UnaryOp::kAtanh:
      return true;
    default:
      return false;
  }
}

/// \p reuseLater: a later loop also re-reads costly values (exp(x - max))
/// that an earlier loop after the first computed, instead of recomputing
/// them from the first loop's values.
RowLayout layoutRows(const KernelSpec &s, const Analysis &a, bool reuseLater) {
  RowLayout L;
  L.np = s.numParallelDims();
  L.rank = static_cast<int>(s.dims.size());
  L.rows = s.parallelSize();
  L.len = s.reducedSize();
  L.rowsSym = SymExtent::constant(1);
  L.lenSym = SymExtent::constant(1);
  for (const LoopDim &d : s.dims) (d.reduced ? L.lenSym : L.rowsSym) = (d.reduced ? L.lenSym : L.rowsSym) * d.symbolic;
  // Stages: a stage's bodies use only earlier stages' results.
  L.stageOf.assign(s.reductions.size(), 0);
  for (size_t r = 0; r < s.reductions.size(); ++r) {
    int st = 0;
    for (int dep : a.reds[s.reductions[r].body]) st = std::max(st, L.stageOf[dep] + 1);
    L.stageOf[r] = st;
    L.numStages = std::max(L.numStages, st + 1);
  }
  // Roots of each loop: stage bodies, then the epilogue's element-level stores.
  L.loopRoots.assign(L.numStages + 1, {});
  for (size_t r = 0; r < s.reductions.size(); ++r)
    L.loopRoots[L.stageOf[r]].push_back(s.reductions[r].body);
  for (size_t i = 0; i < s.stores.size(); ++i) {
    const Store &st = s.stores[i];
    bool elem = a.elem[st.value] || (st.guard >= 0 && a.elem[st.guard]);
    for (int x : st.index) elem = elem || a.elem[x];
    (elem ? L.elemStores : L.rowStores).push_back(static_cast<int>(i));
    if (elem) {
      auto &lr = L.loopRoots[L.numStages];
      lr.push_back(st.value);
      lr.insert(lr.end(), st.index.begin(), st.index.end());
      if (st.guard >= 0) lr.push_back(st.guard);
    }
  }
  // Values re-read by later loops: element-level, reduction-free frontier.
  // Loads that no parallel dim indexes (per-column vectors such as gamma and
  // beta, the same for every row) are re-loaded instead: they hit in cache,
  // and registers go to the row itself.
  auto rowInvariantLoad = [&](int id) {
    const Expr &e = s.exprs[id];
    if (L.rows <= 1 || e.kind != ExprKind::kLoad || e.guard >= 0) return false;
    for (int x : collect(s, e.operands, [](int) { return false; }))
      if (s.exprs[x].kind == ExprKind::kIndex && s.exprs[x].ival < L.np) return false;
    return true;
  };
  auto plain = [&](int id) {
    return a.elem[id] && s.exprs[id].kind != ExprKind::kIndex && s.exprs[id].kind != ExprKind::kConst;
  };
  std::set<int> c;
  if (!reuseLater) {
    for (int l = 1; l <= L.numStages; ++l) {
      collect(s, L.loopRoots[l], [&](int id) {
        if (plain(id) && a.reds[id].empty()) {
          if (!rowInvariantLoad(id)) {
            c.insert(id);
            L.fillLoop[id] = 0;
          }
          return true;
        }
        return false;
      });
    }
  } else {
    std::map<int, int> computedIn;  // element-level value -> first loop computing it
    auto record = [&](int l, const std::set<int> &ids, const std::set<int> &except) {
      for (int id : ids)
        if (plain(id) && !except.count(id) && !computedIn.count(id)) computedIn[id] = l;
    };
    record(0, collect(s, L.loopRoots[0], [&](int id) { return !a.elem[id]; }), {});
    for (int l = 1; l <= L.numStages; ++l) {
      std::set<int> stops;
      std::set<int> got = collect(s, L.loopRoots[l], [&](int id) {
        if (!a.elem[id]) return true;
        auto it = computedIn.find(id);
        if (!plain(id) || it == computedIn.end()) return false;
        if (rowInvariantLoad(id)) return true;  // re-loaded
        // Costly: something in its recomputation (down to the first loop's
        // values) is a transcendental.
        bool costly = false;
        if (it->second > 0)
          for (int x : collect(s, {id}, [&](int y) {
                 return !a.elem[y] || (y != id && computedIn.count(y) && computedIn[y] == 0);
               }))
            costly = costly || (a.elem[x] && isCostly(s.exprs[x]) && !(computedIn.count(x) && computedIn[x] == 0));
        if (it->second == 0 || costly) {
          stops.insert(id);
          return true;
        }
        return false;
      });
      for (int id : stops) {
        c.insert(id);
        L.fillLoop[id] = computedIn[id];
      }
      record(l, got, stops);
    }
  }
  L.cache.assign(c.begin(), c.end());
  return L;
}

/// Emits one __global__ row kernel named \p kname: shape \p sh, vector plan
/// \p vp (vp.vec == sh.vec; vec 1 is the scalar kernel, correct for any
/// alignment and row length).
std::string emitRowKernel(const KernelSpec &s, const std::string &kname, const Analysis &a,
                          const RowLayout &L, const RowShape &sh, const RowVecPlan &vp, const SymText *sym) {
  const bool dyn = sym && sym->dynamic();
  const std::string rowsText =
      dyn && !L.rowsSym.isConstant() ? absl::StrCat("(idx_t)", sym->of(L.rowsSym)) : absl::StrCat("(idx_t)", L.rows);
  const std::string chunksText = sh.chunksText.empty() ? absl::StrCat("(idx_t)", sh.chunks) : sh.chunksText;
  const int np = L.np, rank = L.rank, last = rank - 1;
  const int g = sh.g, block = sh.block, V = sh.vec;
  const int64_t items = sh.items;
  const bool cached = sh.cached;
  ExprPrinter pr(s, sym);
  int lastIdx = -1;
  for (size_t i = 0; i < s.exprs.size(); ++i) {
    const Expr &e = s.exprs[i];
    if (e.kind == ExprKind::kIndex) pr.name(static_cast<int>(i)) = absl::StrCat("i", e.ival);
    if (e.kind == ExprKind::kIndex && e.ival == last) lastIdx = static_cast<int>(i);
    if (e.kind == ExprKind::kReduceResult) pr.name(static_cast<int>(i)) = absl::StrCat("red", e.ival);
  }
  // Element-level divisions by a row-level value (softmax's 1 / sum) become
  // one reciprocal per row and a multiplication per element (<= 1.5 ulp).
  std::map<int, std::set<int>> divisions;  // divisor -> element-level divisions
  for (size_t i = 0; i < s.exprs.size(); ++i) {
    const Expr &e = s.exprs[i];
    if (e.kind == ExprKind::kBinary && static_cast<BinaryOp>(e.op) == BinaryOp::kDiv &&
        (e.type == ScalarType::kF32 || e.type == ScalarType::kF64) && a.elem[i] &&
        !a.elem[e.operands[1]] && !s.isConst(e.operands[1])) {
      pr.reciprocalOf.insert(e.operands[1]);
      divisions[e.operands[1]].insert(static_cast<int>(i));
    }
  }
  std::set<int> rcpDone;
  std::map<int, std::string> base;  // vector accesses index the first lane
  if (lastIdx >= 0) base[lastIdx] = absl::StrCat("i", last, "base");
  std::map<int, int> cacheSlot;
  if (cached)
    for (size_t i = 0; i < L.cache.size(); ++i) cacheSlot[L.cache[i]] = static_cast<int>(i);

  std::string out;
  absl::StrAppend(&out, "__global__ void __launch_bounds__(", block, ") ", kname, "(", kernelParams(s, sym),
                  ") {\n");
  absl::StrAppend(&out, "  typedef ", needsWideIndex(s, sym) ? "long long" : "int", " idx_t;\n");
  absl::StrAppend(&out, "  constexpr int G = ", g, ";\n");
  if (V > 1) absl::StrAppend(&out, "  constexpr int V = ", V, ";  // elements per vector access\n");
  absl::StrAppend(&out, "  [[maybe_unused]] const idx_t row = (idx_t)blockIdx.x * ", block / g,
                  " + (idx_t)(threadIdx.x / G);\n");
  absl::StrAppend(&out, "  [[maybe_unused]] const int lane = threadIdx.x % G;\n");
  if (block / g > 1) absl::StrAppend(&out, "  if (row >= ", rowsText, ") return;\n");
  std::string dec = decompose(s, "row", 0, np, -1, sym);
  for (auto &line : absl::StrSplit(dec, '\n'))
    if (!line.empty()) absl::StrAppend(&out, "  ", absl::StripLeadingAsciiWhitespace(line), "\n");
  if (cached)
    for (size_t i = 0; i < L.cache.size(); ++i)
      absl::StrAppend(&out, "  ", cType(s.exprs[L.cache[i]].type), " c", i, "[", items * V, "];\n");

  std::vector<bool> outer(s.exprs.size(), false);
  auto emitOuter = [&](const std::vector<int> &roots, const std::string &indent) {
    std::set<int> need = collect(s, roots, [&](int id) { return outer[id]; });
    std::string o;
    for (int id : need) {
      const Expr &e = s.exprs[id];
      if (a.elem[id] || outer[id] || e.kind == ExprKind::kIndex || e.kind == ExprKind::kConst ||
          e.kind == ExprKind::kReduceResult)
        continue;
      outer[id] = true;
      absl::StrAppend(&o, indent, pr.stmt(id), "\n");
    }
    return o;
  };
  auto indentLines = [](const std::string &text, const std::string &indent) {
    std::string o;
    for (auto &line : absl::StrSplit(text, '\n'))
      if (!line.empty()) absl::StrAppend(&o, indent, absl::StripLeadingAsciiWhitespace(line), "\n");
    return o;
  };
  // A loop over the row's elements computing \p roots; \p tail appends the
  // per-element statements that use them (`j` is the flat reduced index,
  // `v` the lane of the current vector access).
  auto emitLoop = [&](const std::vector<int> &roots, int loop, const std::vector<int> &stores,
                      const std::function<std::string(void)> &tail) {
    std::string o = emitOuter(roots, "  ");
    {
      std::set<int> reach = collect(s, roots, [&](int id) { return !a.elem[id]; });
      for (const auto &[d, divs] : divisions) {
        if (rcpDone.count(d)) continue;
        bool used = false;
        for (int dv : divs) used = used || reach.count(dv);
        if (!used) continue;
        rcpDone.insert(d);
        const char *t = cType(s.exprs[d].type);
        absl::StrAppend(&o, "  const ", t, " rcp", d, " = (", t, ")1 / ", pr.ref(d), ";\n");
      }
    }
    const bool unrolled = cached;
    if (unrolled) {
      absl::StrAppend(&o, "#pragma unroll\n  for (int k = 0; k < ", items, "; ++k) {\n");
      absl::StrAppend(&o, "    const idx_t c = (idx_t)lane + (idx_t)k * G;\n");
      if (items * g != sh.chunks) absl::StrAppend(&o, "    if (c < (idx_t)", sh.chunks, ") {\n");
      else absl::StrAppend(&o, "    {\n");
    } else {
      absl::StrAppend(&o, "#pragma unroll 4\n  for (idx_t c = (idx_t)lane; c < ", chunksText,
                      "; c += G) {\n    {\n");
    }
    // Cache entries: read those an earlier loop stored, store those this
    // loop computes.
    auto fromCache = [&](int id) { return cacheSlot.count(id) && L.fillLoop.at(id) < loop; };
    std::vector<int> fills;
    for (const auto &[id, slot] : cacheSlot)
      if (L.fillLoop.at(id) == loop) fills.push_back(id);
    std::vector<int> all = roots;
    all.insert(all.end(), fills.begin(), fills.end());
    std::set<int> need = collect(s, all, [&](int id) { return !a.elem[id] || fromCache(id); });
    std::string in = "      ";
    if (V == 1) {
      absl::StrAppend(&o, "      [[maybe_unused]] const idx_t j = c;\n");
      o += indentLines(decompose(s, "j", np, rank, -1, sym), "      ");
    } else {
      absl::StrAppend(&o, "      const idx_t jbase = c * (idx_t)V;\n");
      o += indentLines(decompose(s, "jbase", np, rank, last, sym), "      ");
      // Index arithmetic of the vector accesses, then the 16-byte loads.
      for (int id : need)
        if (vp.hoisted.count(id)) absl::StrAppend(&o, "      ", pr.stmt(id), "\n");
      for (int id : need) {
        if (!vp.vecLoads.count(id) || fromCache(id)) continue;
        const Expr &e = s.exprs[id];
        const char *st = cudaStorageType(s.buffers[e.ival].dtype);
        absl::StrAppend(&o, "      const fx::Vec<", st, ", V> v", id, " = *reinterpret_cast<const fx::Vec<", st,
                        ", V> *>(b", e.ival, " + (", pr.offset(static_cast<int>(e.ival), e.operands, base),
                        "));\n");
      }
      for (int si : stores)
        if (vp.vecStores.count(si))
          absl::StrAppend(&o, "      fx::Vec<", cudaStorageType(s.buffers[s.stores[si].buffer].dtype), ", V> o", si,
                          ";\n");
      absl::StrAppend(&o, "#pragma unroll\n      for (int v = 0; v < V; ++v) {\n");
      absl::StrAppend(&o, "        [[maybe_unused]] const idx_t j = jbase + (idx_t)v;\n");
      absl::StrAppend(&o, "        [[maybe_unused]] const idx_t i", last, " = i", last, "base + (idx_t)v;\n");
      in = "        ";
    }
    const std::string slot = V == 1 ? "k" : "k * V + v";
    for (int id : need) {
      const Expr &e = s.exprs[id];
      if (!a.elem[id] || e.kind == ExprKind::kIndex || vp.hoisted.count(id)) continue;
      if (fromCache(id)) {
        absl::StrAppend(&o, in, "const ", cType(e.type), " ", pr.name(id), " = c", cacheSlot[id], "[", slot,
                        "];\n");
        continue;
      }
      if (vp.vecLoads.count(id)) {
        absl::StrAppend(&o, in, "const ", cType(e.type), " ", pr.name(id), " = fx::cvt(v", id, ".v[v]);\n");
        continue;
      }
      absl::StrAppend(&o, in, pr.stmt(id), "\n");
    }
    for (int id : fills) absl::StrAppend(&o, in, "c", cacheSlot[id], "[", slot, "] = ", pr.ref(id), ";\n");
    o += indentLines(tail(), in);
    if (V > 1) {
      absl::StrAppend(&o, "      }\n");
      for (int si : stores) {
        if (!vp.vecStores.count(si)) continue;
        const Store &st = s.stores[si];
        absl::StrAppend(&o, "      *reinterpret_cast<fx::Vec<", cudaStorageType(s.buffers[st.buffer].dtype),
                        ", V> *>(b", st.buffer, " + (", pr.offset(st.buffer, st.index, base), ")) = o", si,
                        ";\n");
      }
    }
    absl::StrAppend(&o, "    }\n  }\n");
    return o;
  };

  for (int st = 0; st < L.numStages; ++st) {
    std::vector<int> reds;
    for (size_t r = 0; r < s.reductions.size(); ++r)
      if (L.stageOf[r] == st) reds.push_back(static_cast<int>(r));
    for (int r : reds) {
      const Reduction &rd = s.reductions[r];
      const ScalarType bt = s.exprs[rd.body].type;
      absl::StrAppend(&out, "  ", cType(bt), " acc", r, " = ", initValue(rd.kind, bt), ";\n");
      if (rd.kind == ReduceKind::kArgMax || rd.kind == ReduceKind::kArgMin)
        absl::StrAppend(&out, "  long long arg", r, " = -1;\n");
    }
    out += emitLoop(L.loopRoots[st], st, {}, [&]() {
      std::string t;
      for (int r : reds) {
        const Reduction &rd = s.reductions[r];
        if (rd.kind == ReduceKind::kArgMax || rd.kind == ReduceKind::kArgMin) {
          absl::StrAppend(&t, "fx::argUpdate<", rd.kind == ReduceKind::kArgMax ? "true" : "false", ", ",
                          rd.selectLastIndex ? "true" : "false", ">(acc", r, ", arg", r, ", ",
                          pr.ref(rd.body), ", (long long)j);\n");
        } else {
          absl::StrAppend(&t, "acc", r, " = ", combineName(rd.kind), "()(acc", r, ", ", pr.ref(rd.body),
                          ");\n");
        }
      }
      return t;
    });
    for (int r : reds) {
      const Reduction &rd = s.reductions[r];
      if (rd.kind == ReduceKind::kArgMax || rd.kind == ReduceKind::kArgMin) {
        absl::StrAppend(&out, "  fx::groupArgReduce<G, ", rd.kind == ReduceKind::kArgMax ? "true" : "false", ", ",
                        rd.selectLastIndex ? "true" : "false", ">(acc", r, ", arg", r, ");\n");
        absl::StrAppend(&out, "  const long long red", r, " = arg", r, " < 0 ? 0 : arg", r, ";\n");
      } else {
        absl::StrAppend(&out, "  const ", cType(rd.type), " red", r, " = fx::groupReduce<G>(acc", r, ", ",
                        combineName(rd.kind), "());\n");
      }
    }
  }
  // Epilogue: row-level stores, then element-level stores.
  if (!L.rowStores.empty()) {
    std::vector<int> roots;
    for (int si : L.rowStores) {
      const Store &st = s.stores[si];
      roots.push_back(st.value);
      roots.insert(roots.end(), st.index.begin(), st.index.end());
      if (st.guard >= 0) roots.push_back(st.guard);
    }
    out += emitOuter(roots, "  ");
    absl::StrAppend(&out, "  if (lane == 0) {\n");
    for (int si : L.rowStores) {
      const Store &st = s.stores[si];
      std::string w = absl::StrCat("fx::st(b", st.buffer, ", ", pr.offset(st.buffer, st.index), ", ",
                                   pr.ref(st.value), ");");
      if (st.guard >= 0) w = absl::StrCat("if (", pr.ref(st.guard), ") ", w);
      absl::StrAppend(&out, "    ", w, "\n");
    }
    absl::StrAppend(&out, "  }\n");
  }
  if (!L.elemStores.empty()) {
    out += emitLoop(L.loopRoots[L.numStages], L.numStages, L.elemStores, [&]() {
      std::string t;
      for (int si : L.elemStores) {
        const Store &st = s.stores[si];
        if (vp.vecStores.count(si)) {
          absl::StrAppend(&t, "o", si, ".v[v] = fx::to<", cudaStorageType(s.buffers[st.buffer].dtype), ">(",
                          pr.ref(st.value), ");\n");
          continue;
        }
        std::string w = absl::StrCat("fx::st(b", st.buffer, ", ", pr.offset(st.buffer, st.index), ", ",
                                     pr.ref(st.value), ");");
        if (st.guard >= 0) w = absl::StrCat("if (", pr.ref(st.guard), ") ", w);
        absl::StrAppend(&t, w, "\n");
      }
      return t;
    });
  }
  absl::StrAppend(&out, "}\n\n");
  return out;
}


}  // namespace

absl::StatusOr<std::string> emitReduce(const KernelSpec &s, const std::string &symbol,
                                       const CudaOptions &opts, const SymText *sym) {
  const int rank = static_cast<int>(s.dims.size());
  const Analysis a = analyse(s, rank - 1);
  // Two register plans: also keeping later loops' costly values (softmax's
  // exp) when they fit, else only the first loop's values.
  const RowLayout reuse = layoutRows(s, a, true), first = layoutRows(s, a, false);
  const RowLayout &L = first;
  const RowVecPlan vp = planRowVec(s, a, L.elemStores, sym);
  const bool dyn = sym && sym->dynamic();
  const bool dynLen = dyn && !L.lenSym.isConstant();
  auto pick = [&](int vec, RowShape *sh) -> const RowLayout & {
    if (dynLen) {
      // A row's length is bound at run time: one block of 256 threads per
      // row, every stage re-reading the row (correct for any length).
      *sh = RowShape{};
      sh->g = sh->block = 256;
      sh->vec = 1;
      sh->chunks = L.len;
      sh->chunksText = absl::StrCat("(idx_t)", sym->of(L.lenSym));
      sh->items = 0;
      sh->cached = false;
      return first;
    }
    *sh = chooseRowShape(L.len, vec, reuse.cache.size(), opts.rowMaxThreads);
    if (sh->cached) return reuse;
    *sh = chooseRowShape(L.len, vec, first.cache.size(), opts.rowMaxThreads);
    return first;
  };
  RowShape scalar, vector;
  const RowLayout &ls = pick(1, &scalar);
  std::string out = emitRowKernel(s, symbol + "_kernel", a, ls, scalar, RowVecPlan{}, sym);
  if (vp.vec > 1) {
    const RowLayout &lv = pick(vp.vec, &vector);
    out += emitRowKernel(s, symbol + "_vec", a, lv, vector, vp, sym);
  }
  out += launcherHead(symbol, sym);
  const bool dynRows = dyn && !L.rowsSym.isConstant();
  if (L.rows == 0 && !dynRows) {
    absl::StrAppend(&out, "  (void)buffers; (void)stream;\n  return 0;\n}\n\n");
    return out;
  }
  if (dynRows)
    absl::StrAppend(&out, "  const long long rows = ", sym->of(L.rowsSym, "symbols"), ";\n",
                    "  if (rows <= 0) return 0;\n");
  auto launch = [&](const std::string &kname, const RowShape &sh) -> absl::StatusOr<std::string> {
    const int per = sh.block / sh.g;
    if (dynRows) {
      if (sym->upper(L.rowsSym) / per > INT32_MAX)
        return absl::UnimplementedError(absl::StrCat("codegen: up to ", sym->upper(L.rowsSym),
                                                     " rows exceed the grid limit"));
      return absl::StrCat(kname, "<<<(unsigned)((rows + ", per - 1, ") / ", per, "), ", sh.block,
                          ", 0, stream>>>(", launcherArgs(s, sym), ");\n");
    }
    const int64_t grid = (L.rows + per - 1) / per;
    if (grid > INT32_MAX)
      return absl::UnimplementedError(absl::StrCat("codegen: ", L.rows, " rows exceed the grid limit"));
    return absl::StrCat(kname, "<<<", grid, ", ", sh.block, ", 0, stream>>>(", launcherArgs(s, sym), ");\n");
  };
  FUSEC_ASSIGN_OR_RETURN(std::string scalarLaunch, launch(symbol + "_kernel", scalar));
  if (vp.vec > 1) {
    FUSEC_ASSIGN_OR_RETURN(std::string vecLaunch, launch(symbol + "_vec", vector));
    std::vector<std::string> checks;
    for (int b : vp.vecBuffers)
      checks.push_back(absl::StrCat("(reinterpret_cast<uintptr_t>(buffers[", b, "]) % ",
                                    vp.vec * ir::dtypeSize(s.buffers[b].dtype), " == 0)"));
    absl::StrAppend(&out, "  if (", absl::StrJoin(checks, " && "), ") {\n    ", vecLaunch, "  } else {\n    ",
                    scalarLaunch, "  }\n");
  } else {
    absl::StrAppend(&out, "  ", scalarLaunch);
  }
  absl::StrAppend(&out, "  return static_cast<int>(cudaGetLastError());\n}\n\n");
  return out;
}

}  // namespace fusec::codegen::cuda_detail
