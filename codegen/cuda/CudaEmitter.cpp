//===- CudaEmitter.cpp - KernelSpecs to CUDA C++ --------------------------===//
//
// Mapping to the GPU:
//  - Pointwise specs: a grid-stride loop over the domain, VEC consecutive
//    innermost elements per thread. Loads and stores whose innermost index is
//    the innermost loop index (and whose other indices do not depend on it)
//    move 16 bytes at a time (float4, 8 x bf16); the launcher falls back to
//    a scalar kernel when a pointer is not aligned. Indices are decomposed
//    from the flat index with constant extents (all shapes are static).
//  - Reduce specs: one group of G threads per row (G = 32, one warp, for
//    rows <= 256 elements, else one block of up to 1024 threads). Reductions
//    run in stages (a stage's bodies use only earlier stages' results: max
//    then sum for softmax, mean then variance for norms), each a loop over
//    the row, then a warp-shuffle + shared-memory combine. When the values
//    later stages re-read fit in registers (ITEMS = ceil(L/G) per thread)
//    they are kept there; otherwise every stage re-reads the row from global
//    memory, which is correct for any row length.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/cuda/Attention.h"
#include "support/Status.h"

namespace fusec::codegen {

namespace {


const char *cType(ScalarType t) {
  switch (t) {
    case ScalarType::kBool: return "bool";
    case ScalarType::kI64: return "long long";
    case ScalarType::kIdx: return "idx_t";
    case ScalarType::kF32: return "float";
    case ScalarType::kF64: return "double";
  }
  return "float";
}

std::string literal(const Expr &e) {
  switch (e.type) {
    case ScalarType::kF32:
    case ScalarType::kF64: {
      const char *suffix = e.type == ScalarType::kF32 ? "f" : "";
      if (std::isnan(e.fval)) return e.type == ScalarType::kF32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
      if (std::isinf(e.fval))
        return e.fval > 0 ? (e.type == ScalarType::kF32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)")
                          : (e.type == ScalarType::kF32 ? "__int_as_float(0xff800000)" : "__longlong_as_double(0xfff0000000000000LL)");
      std::string s = e.type == ScalarType::kF32 ? absl::StrFormat("%.9g", e.fval)
                                                 : absl::StrFormat("%.17g", e.fval);
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return absl::StrCat("(", s, suffix, ")");
    }
    case ScalarType::kBool: return e.ival ? "true" : "false";
    case ScalarType::kI64:
      if (e.ival == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return absl::StrCat("(", e.ival, "LL)");
    case ScalarType::kIdx: return absl::StrCat("((idx_t)", e.ival, e.ival > INT32_MAX || e.ival < INT32_MIN ? "LL" : "", ")");
  }
  return "0";
}

/// Emits expressions of one spec as C statements.
class ExprPrinter {
 public:
  explicit ExprPrinter(const KernelSpec &s) : s_(s), name_(s.exprs.size()) {
    for (size_t i = 0; i < s.exprs.size(); ++i) name_[i] = absl::StrCat("e", i);
  }
  std::string &name(int id) { return name_[id]; }
  /// Element-level float divisions whose divisor is this name's expression
  /// print as a multiplication by the reciprocal `rcp<divisor>` (computed
  /// once per row by the caller).
  std::set<int> reciprocalOf;

  /// Flat offset of a load/store with index operands \p idx into buffer \p b.
  std::string offset(int b, const std::vector<int> &idx, const std::map<int, std::string> &over = {}) {
    const std::vector<int64_t> &shape = s_.buffers[b].shape;
    std::vector<std::string> terms;
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      int64_t v;
      const bool isc = s_.isConst(idx[i], &v);
      if (!(isc && v == 0)) {
        std::string op = over.count(idx[i]) ? over.at(idx[i]) : ref(idx[i]);
        if (isc) op = absl::StrCat("(idx_t)", v);
        terms.push_back(stride == 1 ? op : absl::StrCat(op, " * (idx_t)", stride));
      }
      stride *= shape[i];
    }
    if (terms.empty()) return "0";
    std::reverse(terms.begin(), terms.end());
    return absl::StrJoin(terms, " + ");
  }

  std::string ref(int id) {
    const Expr &e = s_.exprs[id];
    if (e.kind == ExprKind::kConst) return literal(e);
    return name_[id];
  }

  /// The right-hand side for expr \p id (not for kIndex / kReduceResult).
  std::string rhs(int id) {
    const Expr &e = s_.exprs[id];
    auto op = [&](int i) { return ref(e.operands[i]); };
    switch (e.kind) {
      case ExprKind::kConst: return literal(e);
      case ExprKind::kLoad: {
        std::string ld = absl::StrCat("fx::ld(b", e.ival, ", ", offset(static_cast<int>(e.ival), e.operands), ")");
        if (e.guard >= 0) return absl::StrCat("(", ref(e.guard), " ? ", ld, " : (", cType(e.type), ")0)");
        return ld;
      }
      case ExprKind::kUnary: {
        const std::string a = op(0);
        switch (static_cast<UnaryOp>(e.op)) {
          case UnaryOp::kNeg: return absl::StrCat("(-", a, ")");
          case UnaryOp::kNot: return absl::StrCat("(!", a, ")");
          default: return absl::StrCat("fx::", unaryOpName(static_cast<UnaryOp>(e.op)), "(", a, ")");
        }
      }
      case ExprKind::kBinary: {
        const std::string a = op(0), b = op(1);
        const BinaryOp bo = static_cast<BinaryOp>(e.op);
        const bool idx = s_.exprs[e.operands[0]].type == ScalarType::kIdx;
        auto infix = [&](const char *o) { return absl::StrCat("(", a, " ", o, " ", b, ")"); };
        switch (bo) {
          case BinaryOp::kAdd: return infix("+");
          case BinaryOp::kSub: return infix("-");
          case BinaryOp::kMul: return infix("*");
          case BinaryOp::kDiv:
            if (reciprocalOf.count(e.operands[1]))
              return absl::StrCat("(", a, " * rcp", e.operands[1], ")");
            return infix("/");
          case BinaryOp::kMod: return idx ? infix("%") : absl::StrCat("fx::imod(", a, ", ", b, ")");
          case BinaryOp::kEq: return infix("==");
          case BinaryOp::kNe: return infix("!=");
          case BinaryOp::kLt: return infix("<");
          case BinaryOp::kLe: return infix("<=");
          case BinaryOp::kGt: return infix(">");
          case BinaryOp::kGe: return infix(">=");
          case BinaryOp::kAnd: return infix("&&");
          case BinaryOp::kOr: return infix("||");
          case BinaryOp::kXor: return infix("!=");
          default:
            return absl::StrCat("fx::", binaryOpName(bo), "(", a, ", ", b, ")");
        }
      }
      case ExprKind::kSelect:
        return absl::StrCat("(", op(0), " ? ", op(1), " : ", op(2), ")");
      case ExprKind::kCast:
        return absl::StrCat("static_cast<", cType(e.type), ">(", op(0), ")");
      default:
        return "0";
    }
  }

  std::string stmt(int id) {
    return absl::StrCat("const ", cType(s_.exprs[id].type), " ", name_[id], " = ", rhs(id), ";");
  }

 private:
  const KernelSpec &s_;
  std::vector<std::string> name_;
};

/// Per-expr analyses.
struct Analysis {
  std::vector<bool> elem;          ///< depends on a reduced dim
  std::vector<bool> dependsOnDim;  ///< depends on the dim `dim` (pointwise: innermost)
  std::vector<std::set<int>> reds; ///< reductions used (transitively)
};

Analysis analyse(const KernelSpec &s, int dim) {
  Analysis a;
  const size_t n = s.exprs.size();
  a.elem.assign(n, false);
  a.dependsOnDim.assign(n, false);
  a.reds.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    const Expr &e = s.exprs[i];
    if (e.kind == ExprKind::kIndex) {
      a.elem[i] = s.dims[e.ival].reduced;
      a.dependsOnDim[i] = e.ival == dim;
    }
    if (e.kind == ExprKind::kReduceResult) a.reds[i].insert(static_cast<int>(e.ival));
    std::vector<int> ops = e.operands;
    if (e.guard >= 0) ops.push_back(e.guard);
    for (int o : ops) {
      a.elem[i] = a.elem[i] || a.elem[o];
      a.dependsOnDim[i] = a.dependsOnDim[i] || a.dependsOnDim[o];
      a.reds[i].insert(a.reds[o].begin(), a.reds[o].end());
    }
  }
  return a;
}

std::vector<int> operandsOf(const Expr &e) {
  std::vector<int> ops = e.operands;
  if (e.guard >= 0) ops.push_back(e.guard);
  return ops;
}

/// All exprs reachable from \p roots, stopping at \p stop.
std::set<int> collect(const KernelSpec &s, const std::vector<int> &roots,
                      const std::function<bool(int)> &stop) {
  std::set<int> seen;
  std::vector<int> work = roots;
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    if (stop(id)) continue;
    for (int o : operandsOf(s.exprs[id])) work.push_back(o);
  }
  return seen;
}

std::string kernelParams(const KernelSpec &s) {
  std::vector<std::string> ps;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const BufferDesc &b = s.buffers[i];
    ps.push_back(absl::StrCat(b.written ? "" : "const ", cudaStorageType(b.dtype), " *__restrict__ b", i));
  }
  return absl::StrJoin(ps, ", ");
}

std::string launcherArgs(const KernelSpec &s) {
  std::vector<std::string> as;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const BufferDesc &b = s.buffers[i];
    as.push_back(absl::StrCat("static_cast<", b.written ? "" : "const ", cudaStorageType(b.dtype),
                              " *>(buffers[", i, "])"));
  }
  return absl::StrJoin(as, ", ");
}

bool needsWideIndex(const KernelSpec &s) {
  int64_t maxN = 1;
  for (const LoopDim &d : s.dims) maxN = std::max(maxN, d.extent);
  int64_t dom = 1;
  for (const LoopDim &d : s.dims) dom *= d.extent;
  maxN = std::max(maxN, dom);
  for (const BufferDesc &b : s.buffers) {
    int64_t n = 1;
    for (int64_t e : b.shape) n *= e;
    maxN = std::max(maxN, n);
  }
  return maxN >= (int64_t{1} << 30);
}

/// Decomposes \p flat over dims [begin, end) into `i<d>` variables.
std::string decompose(const KernelSpec &s, const std::string &flat, int begin, int end,
                      int skipInner = -1) {
  std::string out;
  int64_t inner = 1;
  std::vector<std::string> lines;
  for (int d = end - 1; d >= begin; --d) {
    const int64_t e = s.dims[d].extent;
    if (e != 1) {
      std::string q = inner == 1 ? flat : absl::StrCat(flat, " / (idx_t)", inner);
      std::string v = d == begin ? q : absl::StrCat("(", q, ") % (idx_t)", e);
      lines.push_back(absl::StrCat("    [[maybe_unused]] const idx_t i", d, d == skipInner ? "base" : "", " = ", v, ";\n"));
    }
    inner *= e;
  }
  std::reverse(lines.begin(), lines.end());
  for (auto &l : lines) out += l;
  return out;
}

//===----------------------------------------------------------------------===//
// Pointwise kernels.
//===----------------------------------------------------------------------===//

struct PointwisePlan {
  int vec = 1;
  std::set<int> vecLoads;   ///< expr ids
  std::set<int> vecStores;  ///< store indices
  std::set<int> vecBuffers;
};

PointwisePlan planPointwise(const KernelSpec &s, const Analysis &a) {
  PointwisePlan p;
  if (s.dims.empty()) return p;
  const int last = static_cast<int>(s.dims.size()) - 1;
  const int64_t ext = s.dims[last].extent;
  if (ext <= 1) return p;
  int lastIdx = -1;
  for (size_t i = 0; i < s.exprs.size(); ++i)
    if (s.exprs[i].kind == ExprKind::kIndex && s.exprs[i].ival == last) lastIdx = static_cast<int>(i);
  auto ok = [&](int buffer, const std::vector<int> &idx) {
    const BufferDesc &b = s.buffers[buffer];
    if (b.shape.empty() || b.shape.back() != ext || idx.back() != lastIdx) return false;
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
  while (vec > 1 && ext % vec != 0) vec /= 2;
  if (vec <= 1) return p;
  p.vec = vec;
  p.vecLoads = loads;
  p.vecStores = stores;
  for (int l : loads) p.vecBuffers.insert(static_cast<int>(s.exprs[l].ival));
  for (int st : stores) p.vecBuffers.insert(s.stores[st].buffer);
  return p;
}

std::string emitPointwiseKernel(const KernelSpec &s, const std::string &kname,
                                const PointwisePlan &p, const Analysis &a) {
  const int rank = static_cast<int>(s.dims.size());
  const int last = rank - 1;
  const int vec = p.vec;
  int64_t total = 1;
  for (const LoopDim &d : s.dims) total *= d.extent;
  ExprPrinter pr(s);
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
  absl::StrAppend(&out, "__global__ void __launch_bounds__(256) ", kname, "(", kernelParams(s), ") {\n");
  absl::StrAppend(&out, "  typedef ", needsWideIndex(s) ? "long long" : "int", " idx_t;\n");
  absl::StrAppend(&out, "  const idx_t total = (idx_t)", total / vec, ";\n");
  absl::StrAppend(&out, "  for (idx_t t = (idx_t)blockIdx.x * 256 + (idx_t)threadIdx.x; t < total; "
                        "t += (idx_t)gridDim.x * 256) {\n");
  absl::StrAppend(&out, "    const idx_t flat = t * (idx_t)", vec, ";\n");
  if (rank > 0) out += decompose(s, "flat", 0, rank, last);
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
  if (rank > 0 && s.dims[last].extent != 1)
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

absl::StatusOr<std::string> emitPointwise(const KernelSpec &s, const std::string &symbol) {
  const int rank = static_cast<int>(s.dims.size());
  const Analysis a = analyse(s, rank - 1);
  const PointwisePlan vp = planPointwise(s, a);
  int64_t total = 1;
  for (const LoopDim &d : s.dims) total *= d.extent;
  std::string out = emitPointwiseKernel(s, symbol + "_scalar", PointwisePlan{}, a);
  if (vp.vec > 1) out += emitPointwiseKernel(s, symbol + "_vec", vp, a);
  auto grid = [](int64_t n) { return std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, 1 << 20)); };
  absl::StrAppend(&out, "extern \"C\" int ", symbol, "(void *const *buffers, cudaStream_t stream) {\n");
  if (total == 0) {
    absl::StrAppend(&out, "  (void)buffers; (void)stream;\n  return 0;\n}\n\n");
    return out;
  }
  if (vp.vec > 1) {
    std::vector<std::string> checks;
    for (int b : vp.vecBuffers)
      checks.push_back(absl::StrCat("(reinterpret_cast<uintptr_t>(buffers[", b, "]) % ",
                                    vp.vec * ir::dtypeSize(s.buffers[b].dtype), " == 0)"));
    absl::StrAppend(&out, "  if (", absl::StrJoin(checks, " && "), ") {\n    ", symbol, "_vec<<<",
                    grid(total / vp.vec), ", 256, 0, stream>>>(", launcherArgs(s), ");\n  } else {\n  ");
  }
  absl::StrAppend(&out, "  ", symbol, "_scalar<<<", grid(total), ", 256, 0, stream>>>(", launcherArgs(s),
                  ");\n");
  if (vp.vec > 1) absl::StrAppend(&out, "  }\n");
  absl::StrAppend(&out, "  return static_cast<int>(cudaGetLastError());\n}\n\n");
  return out;
}

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

RowVecPlan planRowVec(const KernelSpec &s, const Analysis &a, const std::vector<int> &elemStores) {
  RowVecPlan p;
  const int rank = static_cast<int>(s.dims.size());
  if (rank == 0 || !s.dims[rank - 1].reduced) return p;
  const int last = rank - 1;
  const int64_t ext = s.dims[last].extent;
  if (ext <= 1) return p;
  int lastIdx = -1;
  for (size_t i = 0; i < s.exprs.size(); ++i)
    if (s.exprs[i].kind == ExprKind::kIndex && s.exprs[i].ival == last) lastIdx = static_cast<int>(i);
  if (lastIdx < 0) return p;
  auto ok = [&](int buffer, const std::vector<int> &idx) {
    const BufferDesc &b = s.buffers[buffer];
    if (b.shape.empty() || idx.size() != b.shape.size() || idx.back() != lastIdx) return false;
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
                          const RowLayout &L, const RowShape &sh, const RowVecPlan &vp) {
  const int np = L.np, rank = L.rank, last = rank - 1;
  const int g = sh.g, block = sh.block, V = sh.vec;
  const int64_t items = sh.items;
  const bool cached = sh.cached;
  ExprPrinter pr(s);
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
  absl::StrAppend(&out, "__global__ void __launch_bounds__(", block, ") ", kname, "(", kernelParams(s),
                  ") {\n");
  absl::StrAppend(&out, "  typedef ", needsWideIndex(s) ? "long long" : "int", " idx_t;\n");
  absl::StrAppend(&out, "  constexpr int G = ", g, ";\n");
  if (V > 1) absl::StrAppend(&out, "  constexpr int V = ", V, ";  // elements per vector access\n");
  absl::StrAppend(&out, "  [[maybe_unused]] const idx_t row = (idx_t)blockIdx.x * ", block / g,
                  " + (idx_t)(threadIdx.x / G);\n");
  absl::StrAppend(&out, "  [[maybe_unused]] const int lane = threadIdx.x % G;\n");
  if (block / g > 1) absl::StrAppend(&out, "  if (row >= (idx_t)", L.rows, ") return;\n");
  std::string dec = decompose(s, "row", 0, np);
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
      absl::StrAppend(&o, "#pragma unroll 4\n  for (idx_t c = (idx_t)lane; c < (idx_t)", sh.chunks,
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
      o += indentLines(decompose(s, "j", np, rank), "      ");
    } else {
      absl::StrAppend(&o, "      const idx_t jbase = c * (idx_t)V;\n");
      o += indentLines(decompose(s, "jbase", np, rank, last), "      ");
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

absl::StatusOr<std::string> emitReduce(const KernelSpec &s, const std::string &symbol,
                                       const CudaOptions &opts) {
  const int rank = static_cast<int>(s.dims.size());
  const Analysis a = analyse(s, rank - 1);
  // Two register plans: also keeping later loops' costly values (softmax's
  // exp) when they fit, else only the first loop's values.
  const RowLayout reuse = layoutRows(s, a, true), first = layoutRows(s, a, false);
  const RowLayout &L = first;
  const RowVecPlan vp = planRowVec(s, a, L.elemStores);
  auto pick = [&](int vec, RowShape *sh) -> const RowLayout & {
    *sh = chooseRowShape(L.len, vec, reuse.cache.size(), opts.rowMaxThreads);
    if (sh->cached) return reuse;
    *sh = chooseRowShape(L.len, vec, first.cache.size(), opts.rowMaxThreads);
    return first;
  };
  RowShape scalar, vector;
  const RowLayout &ls = pick(1, &scalar);
  std::string out = emitRowKernel(s, symbol + "_kernel", a, ls, scalar, RowVecPlan{});
  if (vp.vec > 1) {
    const RowLayout &lv = pick(vp.vec, &vector);
    out += emitRowKernel(s, symbol + "_vec", a, lv, vector, vp);
  }
  absl::StrAppend(&out, "extern \"C\" int ", symbol, "(void *const *buffers, cudaStream_t stream) {\n");
  if (L.rows == 0) {
    absl::StrAppend(&out, "  (void)buffers; (void)stream;\n  return 0;\n}\n\n");
    return out;
  }
  auto launch = [&](const std::string &kname, const RowShape &sh) -> absl::StatusOr<std::string> {
    const int64_t grid = (L.rows + sh.block / sh.g - 1) / (sh.block / sh.g);
    if (grid > INT32_MAX)
      return absl::UnimplementedError(absl::StrCat("codegen: ", L.rows, " rows exceed the grid limit"));
    return absl::StrCat(kname, "<<<", grid, ", ", sh.block, ", 0, stream>>>(", launcherArgs(s), ");\n");
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

}  // namespace

std::string escapeComment(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch == '*' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "*\\/";
      ++i;
    } else if (ch == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      out += "/\\*";
      ++i;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch < 0x20 || ch == 0x7f || ch == '\\') {
      out += ch == '\\' ? std::string("\\\\") : absl::StrFormat("\\x%02x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string cudaPrelude() {
  return R"CUDA(// Generated by fusec. Do not edit.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace fx {
// Storage <-> compute conversions.
__device__ __forceinline__ float cvt(float x) { return x; }
__device__ __forceinline__ double cvt(double x) { return x; }
__device__ __forceinline__ float cvt(__half x) { return __half2float(x); }
__device__ __forceinline__ float cvt(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bool cvt(bool x) { return x; }
__device__ __forceinline__ long long cvt(int64_t x) { return (long long)x; }
__device__ __forceinline__ long long cvt(int32_t x) { return x; }
__device__ __forceinline__ long long cvt(int16_t x) { return x; }
__device__ __forceinline__ long long cvt(int8_t x) { return x; }
__device__ __forceinline__ long long cvt(uint8_t x) { return x; }
__device__ __forceinline__ long long cvt(uint16_t x) { return x; }
__device__ __forceinline__ long long cvt(uint32_t x) { return x; }
__device__ __forceinline__ long long cvt(uint64_t x) { return (long long)x; }
template <class T> struct Conv { template <class V> __device__ static T to(V v) { return static_cast<T>(v); } };
template <> struct Conv<__half> { template <class V> __device__ static __half to(V v) { return __float2half_rn((float)v); } };
template <> struct Conv<__nv_bfloat16> { template <class V> __device__ static __nv_bfloat16 to(V v) { return __float2bfloat16_rn((float)v); } };
template <class T, class V> __device__ __forceinline__ T to(V v) { return Conv<T>::to(v); }
template <class T, class I> __device__ __forceinline__ auto ld(const T *p, I i) -> decltype(cvt(p[0])) { return cvt(p[i]); }
template <class T, class I, class V> __device__ __forceinline__ void st(T *p, I i, V v) { p[i] = to<T>(v); }
template <class T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

template <class T> __device__ __forceinline__ T inf();
template <> __device__ __forceinline__ float inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <class T> __device__ __forceinline__ T lowest() { return (T)(-9223372036854775807LL - 1); }
template <class T> __device__ __forceinline__ T highest() { return (T)9223372036854775807LL; }

// Math on the compute types (float, double; integers through double).
#define FX_UNARY(name, ff, df)                                                      \
  __device__ __forceinline__ float name(float x) { return ff(x); }                \
  __device__ __forceinline__ double name(double x) { return df(x); }              \
  __device__ __forceinline__ long long name(long long x) { return (long long)df((double)x); }
FX_UNARY(exp, expf, ::exp)
FX_UNARY(log, logf, ::log)
FX_UNARY(sqrt, sqrtf, ::sqrt)
FX_UNARY(rsqrt, rsqrtf, ::rsqrt)
FX_UNARY(erf, erff, ::erf)
FX_UNARY(tanh, tanhf, ::tanh)
FX_UNARY(sin, sinf, ::sin)
FX_UNARY(cos, cosf, ::cos)
FX_UNARY(floor, floorf, ::floor)
FX_UNARY(ceil, ceilf, ::ceil)
FX_UNARY(round, rintf, ::rint)
FX_UNARY(log1p, log1pf, ::log1p)
#undef FX_UNARY
__device__ __forceinline__ float abs(float x) { return fabsf(x); }
__device__ __forceinline__ double abs(double x) { return ::fabs(x); }
__device__ __forceinline__ long long abs(long long x) { return x < 0 ? -x : x; }
template <class T> __device__ __forceinline__ T recip(T x) { return (T)1 / x; }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
template <class T> __device__ __forceinline__ T sign(T x) { return (T)((x > (T)0) - (x < (T)0)); }
template <class T> __device__ __forceinline__ bool isnan(T x) { return x != x; }
__device__ __forceinline__ bool isnan(long long) { return false; }
template <class T> __device__ __forceinline__ bool isposinf(T x) { return x == inf<T>(); }
template <class T> __device__ __forceinline__ bool isneginf(T x) { return x == -inf<T>(); }
__device__ __forceinline__ bool isposinf(long long) { return false; }
__device__ __forceinline__ bool isneginf(long long) { return false; }
__device__ __forceinline__ float round_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
template <class T> __device__ __forceinline__ T max(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> __device__ __forceinline__ T min(T a, T b) { return (a != a || a < b) ? a : b; }
__device__ __forceinline__ float fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double fmod(double a, double b) { return ::fmod(a, b); }
__device__ __forceinline__ long long fmod(long long a, long long b) { return b == 0 ? 0 : a % b; }
__device__ __forceinline__ long long imod(long long a, long long b) {
  if (b == 0) return 0;
  long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
__device__ __forceinline__ long long pow(long long a, long long b) {
  long long r = 1;
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
  return r;
}

// Reductions within a group of G threads (G = 32: one warp; else the block).
struct Sum { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct Prod { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct Max { template <class T> __device__ T operator()(T a, T b) const { return fx::max(a, b); } };
struct Min { template <class T> __device__ T operator()(T a, T b) const { return fx::min(a, b); } };
template <int G, class T, class Op> __device__ __forceinline__ T groupReduce(T v, Op op) {
#pragma unroll
  for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (G > 32) {
    __shared__ T buf[32];
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x / 32] = v;
    __syncthreads();
    v = buf[0];
    for (int i = 1; i < G / 32; ++i) v = op(v, buf[i]);
    __syncthreads();
  }
  return v;
}
template <bool IsMax, bool Last, class T>
__device__ __forceinline__ bool argBetter(T av, long long ai, T bv, long long bi) {
  if (bi < 0) return false;
  if (ai < 0) return true;
  if (IsMax ? bv > av : bv < av) return true;
  if (bv == av) return Last ? bi > ai : bi < ai;
  return false;
}
template <bool IsMax, bool Last, class T>
__device__ __forceinline__ void argUpdate(T &v, long long &i, T x, long long j) {
  if (argBetter<IsMax, Last>(v, i, x, j)) { v = x; i = j; }
}
template <int G, bool IsMax, bool Last, class T>
__device__ __forceinline__ void groupArgReduce(T &v, long long &i) {
#pragma unroll
  for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) {
    T ov = __shfl_xor_sync(0xffffffffu, v, o);
    long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    argUpdate<IsMax, Last>(v, i, ov, oi);
  }
  if (G > 32) {
    __shared__ T bv[32];
    __shared__ long long bi[32];
    if ((threadIdx.x & 31) == 0) { bv[threadIdx.x / 32] = v; bi[threadIdx.x / 32] = i; }
    __syncthreads();
    v = bv[0];
    i = bi[0];
    for (int w = 1; w < G / 32; ++w) argUpdate<IsMax, Last>(v, i, bv[w], bi[w]);
    __syncthreads();
  }
}
}  // namespace fx

)CUDA";
}

absl::StatusOr<std::string> emitCudaKernel(const KernelSpec &spec, const std::string &symbol,
                                           const std::string &comment, const CudaOptions &opts) {
  for (const BufferDesc &b : spec.buffers)
    if (!cudaStorageType(b.dtype))
      return absl::UnimplementedError(absl::StrCat("codegen: no CUDA storage type for dtype ",
                                                   ir::dtypeName(b.dtype)));
  std::string out = absl::StrCat("/* ", escapeComment(comment), " */\n");
  switch (spec.kind) {
    case SpecKind::kPointwise: {
      FUSEC_ASSIGN_OR_RETURN(std::string body, emitPointwise(spec, symbol));
      return out + body;
    }
    case SpecKind::kReduce: {
      FUSEC_ASSIGN_OR_RETURN(std::string body, emitReduce(spec, symbol, opts));
      return out + body;
    }
    case SpecKind::kAttention: {
      FUSEC_ASSIGN_OR_RETURN(std::string body, emitAttentionKernel(spec.attention, symbol));
      return out + body;
    }
  }
  return absl::InternalError("codegen: unknown spec kind");
}

absl::StatusOr<CudaModule> lowerToCuda(const ir::Graph &graph, const passes::FusionPlan &plan,
                                       const CudaOptions &opts) {
  LoweringOptions lo;
  lo.allowTf32 = opts.allowTf32;
  FUSEC_ASSIGN_OR_RETURN(Program prog, buildProgram(graph, passes::kernelNames(plan), lo));
  return printCudaModule(prog, opts);
}

absl::StatusOr<CudaModule> printCudaModule(const Program &prog, const CudaOptions &opts) {
  CudaModule mod;
  mod.source = cudaPrelude();
  absl::StrAppend(&mod.source, "// target: ", escapeComment(opts.arch), "\n\n");
  mod.kernelNames = prog.kernelNames;
  mod.steps = prog.steps;
  for (size_t i = 0; i < mod.steps.size(); ++i)
    if (prog.kernelOfStep[i] >= 0) mod.steps[i].symbol = cudaKernelSymbol(prog.kernelOfStep[i]);
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const UniqueKernel &uk = prog.kernels[k];
    const WorkItem *it = &prog.items[uk.firstItem];
    const std::string sym = cudaKernelSymbol(static_cast<int>(k));
    mod.symbols.push_back(sym);
    std::vector<std::string> lines;
    std::string head = absl::StrCat(sym, ": ", it->name, " (", specKindName(it->spec.kind), ")");
    if (uk.uses.size() > 1)
      absl::StrAppend(&head, "; also runs ", absl::StrJoin(uk.uses.begin() + 1, uk.uses.end(), ", "));
    lines.push_back(head);
    lines.push_back("ONNX nodes:");
    for (const ir::Node *n : it->nodes)
      lines.push_back(absl::StrCat("  ", n->opType(), " '", n->name(), "'"));
    std::string escaped;
    for (const std::string &line : lines) {
      if (!escaped.empty()) escaped += "\n * ";
      escaped += escapeComment(line);
    }
    std::string body;
    {
      auto k = emitCudaKernel(it->spec, sym, "", opts);
      if (!k.ok()) return withContext(k.status(), absl::StrCat("kernel ", it->name));
      body = *k;
    }
    // Replace the empty comment with the escaped multi-line one.
    body = absl::StrCat("/* ", escaped, "\n */\n", body.substr(body.find('\n') + 1));
    mod.source += body;
  }
  return mod;
}

std::string cudaKernelSymbol(int kernel) { return absl::StrCat("fusec_k", kernel); }

const char *cudaStorageType(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return "float";
    case ir::DType::kF64: return "double";
    case ir::DType::kF16: return "__half";
    case ir::DType::kBF16: return "__nv_bfloat16";
    case ir::DType::kI64: return "int64_t";
    case ir::DType::kI32: return "int32_t";
    case ir::DType::kI16: return "int16_t";
    case ir::DType::kI8: return "int8_t";
    case ir::DType::kU8: return "uint8_t";
    case ir::DType::kU16: return "uint16_t";
    case ir::DType::kU32: return "uint32_t";
    case ir::DType::kU64: return "uint64_t";
    case ir::DType::kBool: return "bool";
    default: return nullptr;
  }
}

}  // namespace fusec::codegen
