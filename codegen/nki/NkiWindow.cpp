//===- NkiWindow.cpp - Small-window reductions as unrolled pointwise taps ===//
//
// Pooling (MaxPool, AveragePool) reaches the backend as a row reduction
// whose reduced dims are the window (kh, kw) and whose padding is a guard
// on the input load: x[n, c, oh*s + kh*d - p, ow*s + kw*d - p] where
// 0 <= oh*s + kh*d - p < H. Over the whole domain that guard is not a box
// of the loop indices, and the reduced dims do not merge into one free
// axis, so the row-reduction lowering refuses it. For one fixed tap
// (kh, kw), though, the load is a strided DMA whose guard is a box of the
// output indices (the rows and columns that read inside the image).
//
// unrollWindow() therefore rewrites a reduction with a small reduced
// domain into a pointwise spec: every reduced index becomes a constant
// per tap, each reduction result is the tap values combined in order
// (sum: add, prod: mul, max, min), and the epilogue reads that. The
// pointwise printer then tiles the output (128 rows on the partitions),
// loads each tap as one guarded DMA (zeros outside the box) and applies the
// padding predicate of the body (select(valid, x, -inf) for MaxPool,
// select(valid, x, 0) and the element count for AveragePool) on
// VectorE. The windowed reduction is the running combination over taps
// in SBUF (NKI.md section 2: tiles of 128 partitions x a free size).
//
//===----------------------------------------------------------------------===//
#include <map>
#include <optional>

#include "codegen/nki/NkiTiling.h"

namespace fusec::codegen::nki {

using program::BinaryOp;
using program::Expr;
using program::ExprKind;
using program::KernelSpec;
using program::ReduceKind;

namespace {

class Unroller {
 public:
  Unroller(const KernelSpec &in, int64_t taps) : in_(in), taps_(taps), tapMemo_(taps) {
    dependsOnReduced_ = in.reducedDimDependence();
    numParallel_ = in.numParallelDims();
  }

  std::optional<KernelSpec> run() {
    out_.kind = program::SpecKind::kPointwise;
    for (int d = 0; d < numParallel_; ++d) {
      out_.addDim(in_.dims[d].extent, false);
      out_.setSymbolicExtent(d, in_.dims[d].symbolic);
      out_.dims[d].name = in_.dims[d].name;
    }
    out_.buffers = in_.buffers;
    for (const program::Store &s : in_.stores) {
      std::vector<int> idx;
      for (int i : s.index) {
        if (dependsOnReduced_[i]) return std::nullopt;  // a store inside the row
        idx.push_back(clone(i, 0));
      }
      if (dependsOnReduced_[s.value] || (s.guard >= 0 && dependsOnReduced_[s.guard])) return std::nullopt;
      const int value = clone(s.value, 0);
      const int guard = s.guard >= 0 ? clone(s.guard, 0) : -1;
      if (failed_) return std::nullopt;
      out_.addStore(s.buffer, idx, value, guard);
    }
    if (failed_) return std::nullopt;
    return std::move(out_);
  }

 private:
  /// The reduced indices of tap \p t (row-major over the reduced dims).
  int64_t tapIndex(int dim, int64_t t) const {
    for (int d = static_cast<int>(in_.dims.size()) - 1; d > dim; --d) t /= in_.dims[d].extent;
    return t % in_.dims[dim].extent;
  }

  int clone(int id, int64_t tap) {
    if (failed_) return 0;
    std::map<int, int> &memo = dependsOnReduced_[id] ? tapMemo_[tap] : rowMemo_;
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const Expr &e = in_.expr(id);
    std::vector<int> ops;
    for (int o : e.operands) ops.push_back(clone(o, tap));
    int r = 0;
    switch (e.kind) {
      case ExprKind::kConst:
        r = (e.type == program::ScalarType::kF32 || e.type == program::ScalarType::kF64) ? out_.constF(e.fval, e.type)
                                                                                       : out_.constI(e.ival, e.type);
        break;
      case ExprKind::kIndex:
        r = e.ival < numParallel_ ? out_.index(static_cast<int>(e.ival))
                                  : out_.constI(tapIndex(static_cast<int>(e.ival), tap));
        break;
      case ExprKind::kLoad:
        r = out_.load(static_cast<int>(e.ival), ops, e.guard >= 0 ? clone(e.guard, tap) : -1);
        break;
      case ExprKind::kUnary: r = out_.unary(static_cast<program::UnaryOp>(e.op), ops[0]); break;
      case ExprKind::kBinary: r = out_.binary(static_cast<BinaryOp>(e.op), ops[0], ops[1]); break;
      case ExprKind::kSelect: r = out_.select(ops[0], ops[1], ops[2]); break;
      case ExprKind::kCast: r = e.ival == 1 ? out_.castU64(ops[0], e.type) : out_.cast(ops[0], e.type); break;
      case ExprKind::kReduceResult: r = reduction(static_cast<int>(e.ival)); break;
      case ExprKind::kSymbol: failed_ = true; break;  // dynamic shapes: refused by NkiBackend::emit
    }
    if (!failed_ && out_.expr(r).type != e.type) failed_ = true;  // a builder retyped it: do not guess
    memo[id] = r;
    return r;
  }

  /// Reduction \p r as its body's tap values combined in tap order.
  int reduction(int r) {
    if (auto it = reductions_.find(r); it != reductions_.end()) return it->second;
    const program::Reduction &red = in_.reductions[r];
    BinaryOp op = BinaryOp::kAdd;
    switch (red.kind) {
      case ReduceKind::kSum: op = BinaryOp::kAdd; break;
      case ReduceKind::kProd: op = BinaryOp::kMul; break;
      case ReduceKind::kMax: op = BinaryOp::kMax; break;
      case ReduceKind::kMin: op = BinaryOp::kMin; break;
      default: failed_ = true; return 0;  // arg* keep an index: not a tap combination
    }
    int acc = clone(red.body, 0);
    for (int64_t t = 1; t < taps_ && !failed_; ++t) acc = out_.binary(op, acc, clone(red.body, t));
    reductions_[r] = acc;
    return acc;
  }

  const KernelSpec &in_;
  const int64_t taps_;
  KernelSpec out_;
  std::vector<bool> dependsOnReduced_;
  int numParallel_ = 0;
  std::map<int, int> rowMemo_;
  std::vector<std::map<int, int>> tapMemo_;
  std::map<int, int> reductions_;
  bool failed_ = false;
};

}  // namespace

std::optional<KernelSpec> unrollWindow(const KernelSpec &spec, int64_t maxTaps) {
  if (spec.kind != program::SpecKind::kReduce || spec.reductions.empty()) return std::nullopt;
  const int64_t taps = spec.reducedSize();
  if (taps < 1 || taps > maxTaps || spec.numParallelDims() == static_cast<int>(spec.dims.size()))
    return std::nullopt;
  return Unroller(spec, taps).run();
}

}  // namespace fusec::codegen::nki
