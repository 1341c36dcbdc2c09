//===- CudaKernelCommon.h - Shared pieces of the CUDA kernel printers -*- C++ -*-===//
//
// Internal to codegen/cuda: the scalar-expression printer (one printer for
// every KernelSpec expression), per-expression analyses and the argument
// lists that the pointwise (CudaPointwise.cpp) and row-reduction
// (CudaReduce.cpp) kernel printers share. See CudaEmitter.cpp for the
// mapping to the GPU.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_CUDAKERNELCOMMON_H
#define FUSEC_CODEGEN_CUDA_CUDAKERNELCOMMON_H

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
#include "codegen/cuda/CudaEmitter.h"
#include "codegen/cuda/SymText.h"

namespace fusec::codegen::cuda_detail {

inline const char *cType(ScalarType t) {
  switch (t) {
    case ScalarType::kBool: return "bool";
    case ScalarType::kI64: return "long long";
    case ScalarType::kIdx: return "idx_t";
    case ScalarType::kF32: return "float";
    case ScalarType::kF64: return "double";
  }
  return "float";
}

inline std::string literal(const Expr &e) {
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

using ::fusec::codegen::SymText;

/// Dim \p d's extent of \p s as index arithmetic: a literal, or (dynamic
/// shapes) its symbolic form read from `sy`.
inline std::string dimExtent(const KernelSpec &s, int d, const SymText *sym) {
  if (sym && sym->dynamic() && !s.dims[d].symbolic.isConstant())
    return absl::StrCat("(idx_t)", sym->of(s.dims[d].symbolic));
  return absl::StrCat("(idx_t)", s.dims[d].extent);
}
/// True if loop dim \p d is bound at run time.
inline bool dimSymbolic(const KernelSpec &s, int d, const SymText *sym) {
  return sym && sym->dynamic() && !s.dims[d].symbolic.isConstant();
}
/// Buffer \p b's dim \p d as a symbolic form (constant when static).
inline SymExtent bufferDim(const KernelSpec &s, int b, size_t d, const SymText *sym) {
  const BufferDesc &bd = s.buffers[b];
  if (sym && sym->dynamic() && d < bd.symbolicShape.size()) return bd.symbolicShape[d];
  return SymExtent::constant(bd.shape[d]);
}

/// Emits expressions of one spec as C statements.
class ExprPrinter {
 public:
  explicit ExprPrinter(const KernelSpec &s, const SymText *sym = nullptr)
      : s_(s), sym_(sym), name_(s.exprs.size()) {
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
    SymExtent stride = SymExtent::constant(1);
    for (size_t i = shape.size(); i-- > 0;) {
      int64_t v;
      const bool isc = s_.isConst(idx[i], &v);
      if (!(isc && v == 0)) {
        std::string op = over.count(idx[i]) ? over.at(idx[i]) : ref(idx[i]);
        if (isc) op = absl::StrCat("(idx_t)", v);
        const std::string st = stride.isConstant() ? absl::StrCat("(idx_t)", stride.coeff())
                                                   : absl::StrCat("(idx_t)", sym_->of(stride));
        terms.push_back(stride == SymExtent::constant(1) ? op : absl::StrCat(op, " * ", st));
      }
      stride = stride * bufferDim(s_, b, i, sym_);
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
          case BinaryOp::kShl: return infix("<<");
          case BinaryOp::kShr: return infix(">>");
          case BinaryOp::kBitAnd: return infix("&");
          case BinaryOp::kBitOr: return infix("|");
          case BinaryOp::kBitXor: return infix("^");
          default:
            return absl::StrCat("fx::", binaryOpName(bo), "(", a, ", ", b, ")");
        }
      }
      case ExprKind::kSelect:
        return absl::StrCat("(", op(0), " ? ", op(1), " : ", op(2), ")");
      case ExprKind::kSymbol:
        if (!sym_ || !sym_->dynamic() || e.ival < 0 || e.ival >= static_cast<int64_t>(s_.symbolics.size()))
          return "0 /* unbound symbolic extent */";
        return absl::StrCat("(", cType(e.type), ")", sym_->of(s_.symbolics[e.ival]));
      case ExprKind::kCast:
        if (e.ival == 1)  // castU64: the integer side's i64 bits are a u64
          return e.type == ScalarType::kF32 || e.type == ScalarType::kF64
                     ? absl::StrCat("static_cast<", cType(e.type), ">((fx::u64_t)", op(0), ")")
                     : absl::StrCat("static_cast<long long>((fx::u64_t)", op(0), ")");
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
  const SymText *sym_;
  std::vector<std::string> name_;
};

/// Per-expr analyses.
struct Analysis {
  std::vector<bool> elem;          ///< depends on a reduced dim
  std::vector<bool> dependsOnDim;  ///< depends on the dim `dim` (pointwise: innermost)
  std::vector<std::set<int>> reds; ///< reductions used (transitively)
};

inline Analysis analyse(const KernelSpec &s, int dim) {
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

inline std::vector<int> operandsOf(const Expr &e) {
  std::vector<int> ops = e.operands;
  if (e.guard >= 0) ops.push_back(e.guard);
  return ops;
}

/// All exprs reachable from \p roots, stopping at \p stop.
inline std::set<int> collect(const KernelSpec &s, const std::vector<int> &roots,
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

inline std::string kernelParams(const KernelSpec &s, const SymText *sym = nullptr) {
  std::vector<std::string> ps;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const BufferDesc &b = s.buffers[i];
    ps.push_back(absl::StrCat(b.written ? "" : "const ", cudaStorageType(b.dtype), " *__restrict__ b", i));
  }
  if (sym && sym->dynamic()) ps.push_back("const fx::Syms sy");
  return absl::StrJoin(ps, ", ");
}

inline std::string launcherArgs(const KernelSpec &s, const SymText *sym = nullptr) {
  std::vector<std::string> as;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const BufferDesc &b = s.buffers[i];
    as.push_back(absl::StrCat("static_cast<", b.written ? "" : "const ", cudaStorageType(b.dtype),
                              " *>(buffers[", i, "])"));
  }
  if (sym && sym->dynamic()) as.push_back("sy");
  return absl::StrJoin(as, ", ");
}

/// The launcher's signature: (buffers, stream), or in a dynamic artifact
/// (buffers, symbols, stream) with `fx::Syms sy` filled from `symbols`.
inline std::string launcherHead(const std::string &symbol, const SymText *sym) {
  if (!(sym && sym->dynamic()))
    return absl::StrCat("extern \"C\" int ", symbol, "(void *const *buffers, cudaStream_t stream) {\n");
  return absl::StrCat("extern \"C\" int ", symbol,
                      "(void *const *buffers, const int64_t *symbols, cudaStream_t stream) {\n"
                      "  fx::Syms sy;\n  for (int i = 0; i < ", sym->names.size(),
                      "; ++i) sy.v[i] = (long long)symbols[i];\n");
}

inline bool needsWideIndex(const KernelSpec &s, const SymText *sym = nullptr) {
  const bool dyn = sym && sym->dynamic();
  auto ext = [&](const SymExtent &e, int64_t v) { return dyn && !e.isConstant() ? sym->upper(e) : v; };
  auto mul = [](int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
  };
  int64_t maxN = 1;
  for (const LoopDim &d : s.dims) maxN = std::max(maxN, ext(d.symbolic, d.extent));
  int64_t dom = 1;
  for (const LoopDim &d : s.dims) dom = mul(dom, ext(d.symbolic, d.extent));
  maxN = std::max(maxN, dom);
  for (const BufferDesc &b : s.buffers) {
    int64_t n = 1;
    for (size_t k = 0; k < b.shape.size(); ++k)
      n = mul(n, ext(k < b.symbolicShape.size() ? b.symbolicShape[k] : SymExtent::constant(b.shape[k]), b.shape[k]));
    maxN = std::max(maxN, n);
  }
  for (const SymExtent &e : s.symbolics)
    if (dyn) maxN = std::max(maxN, sym->upper(e));
  return maxN >= (int64_t{1} << 30);
}

/// Decomposes \p flat over dims [begin, end) into `i<d>` variables.
inline std::string decompose(const KernelSpec &s, const std::string &flat, int begin, int end,
                      int skipInner = -1, const SymText *sym = nullptr) {
  std::string out;
  SymExtent inner = SymExtent::constant(1);
  std::vector<std::string> lines;
  for (int d = end - 1; d >= begin; --d) {
    const bool symbolic = dimSymbolic(s, d, sym);
    if (symbolic || s.dims[d].extent != 1) {
      const std::string innerText =
          inner.isConstant() ? absl::StrCat("(idx_t)", inner.coeff()) : absl::StrCat("(idx_t)", sym->of(inner));
      std::string q = inner == SymExtent::constant(1) ? flat : absl::StrCat(flat, " / ", innerText);
      std::string v = d == begin ? q : absl::StrCat("(", q, ") % ", dimExtent(s, d, sym));
      lines.push_back(absl::StrCat("    [[maybe_unused]] const idx_t i", d, d == skipInner ? "base" : "", " = ", v, ";\n"));
    }
    inner = inner * (symbolic ? s.dims[d].symbolic : SymExtent::constant(s.dims[d].extent));
  }
  std::reverse(lines.begin(), lines.end());
  for (auto &l : lines) out += l;
  return out;
}


/// The pointwise kernel (+ vectorised variant) and launcher for \p s.
absl::StatusOr<std::string> emitPointwise(const KernelSpec &s, const std::string &symbol,
                                          const SymText *sym = nullptr);
/// The row-reduction kernel (+ vectorised variant) and launcher for \p s.
absl::StatusOr<std::string> emitReduce(const KernelSpec &s, const std::string &symbol,
                                       const CudaOptions &opts, const SymText *sym = nullptr);

}  // namespace fusec::codegen::cuda_detail

#endif  // FUSEC_CODEGEN_CUDA_CUDAKERNELCOMMON_H
