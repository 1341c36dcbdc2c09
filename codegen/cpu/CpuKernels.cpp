//===- CpuKernels.cpp - Entry points for kernels, GEMMs and convolutions ---===//
//
// Loop structure (docs/CPU_BACKEND.md):
//  - pointwise: rows = the parallel dims but the innermost, split over
//    parallel_for; per row the innermost dim in vectors of W lanes (W =
//    vector register bits / 32), the remainder as one masked vector.
//  - reduce: rows = all parallel dims; per row one pass over the reduced
//    dims per "stage" of reductions (a reduction whose body reads another's
//    result runs a stage later: softmax = max, then sum of exp), each with
//    W-lane accumulators folded at the end of the row; then the stores.
//    A row is re-read by each stage while it is in cache. Rows run in
//    pairs when the first pass reads a row-invariant operand along the row
//    (a bias before a LayerNorm): per vector both rows, the invariant
//    loads (bias, gamma, beta) once; a chunk's odd row runs alone.
//  - GEMM / conv: tiles of the output over parallel_for; ctx->sgemm per
//    tile into the per-thread workspace; the epilogue as a vector loop over
//    the tile, stored in the output dtype.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/CpuIr.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "support/Status.h"

namespace fusec::codegen::cpu {

using program::Expr;
using program::ExprKind;
using program::KernelSpec;
using program::ReduceKind;
using program::ScalarType;

namespace {

/// Elements per parallel_for chunk (~32 KB of f32): big enough to hide the
/// dispatch, small enough to balance.
constexpr int64_t kChunkElements = 8192;

bool storable(ir::DType d) {
  switch (d) {
    case ir::DType::kF32: case ir::DType::kF64: case ir::DType::kF16: case ir::DType::kBF16:
    case ir::DType::kU8: case ir::DType::kI8: case ir::DType::kBool: case ir::DType::kU16:
    case ir::DType::kI16: case ir::DType::kU32: case ir::DType::kI32: case ir::DType::kI64:
    case ir::DType::kU64: case ir::DType::kF8E4M3FN: case ir::DType::kF8E4M3FNUZ: case ir::DType::kF8E5M2:
    case ir::DType::kF8E5M2FNUZ:
      return true;
    default: return false;
  }
}

bool isFloat(ScalarType t) { return t == ScalarType::kF32 || t == ScalarType::kF64; }

absl::Status bad(const std::string &why) { return absl::UnimplementedError(absl::StrCat("cpu: ", why)); }

}  // namespace

absl::Status checkCpuKernel(const KernelSpec &s) {
  if (s.kind == program::SpecKind::kAttention) return checkCpuAttention(s.attention);
  bool reduced = false;
  for (const program::LoopDim &d : s.dims) {
    if (d.extent < 0) return bad("negative loop extent");
    if (!d.reduced && reduced) return bad("a parallel dim after a reduced dim");
    reduced |= d.reduced;
  }
  for (size_t b = 0; b < s.buffers.size(); ++b)
    if (!storable(s.buffers[b].dtype))
      return bad(absl::StrCat("buffer ", b, " has dtype ", ir::dtypeName(s.buffers[b].dtype),
                              ", which the cpu backend does not load or store"));
  const int n = static_cast<int>(s.exprs.size());
  for (int i = 0; i < n; ++i) {
    const Expr &e = s.exprs[i];
    for (int o : e.operands)
      if (o < 0 || o >= i) return bad(absl::StrCat("expression ", i, " has a bad operand"));
    if (e.guard >= i) return bad(absl::StrCat("expression ", i, " has a bad guard"));
    switch (e.kind) {
      case ExprKind::kIndex:
        if (e.ival < 0 || e.ival >= static_cast<int64_t>(s.dims.size())) return bad("index of an unknown dim");
        break;
      case ExprKind::kLoad:
        if (e.ival < 0 || e.ival >= static_cast<int64_t>(s.buffers.size()) ||
            e.operands.size() != s.buffers[e.ival].shape.size())
          return bad(absl::StrCat("load ", i, " does not match its buffer"));
        break;
      case ExprKind::kReduceResult:
        if (e.ival < 0 || e.ival >= static_cast<int64_t>(s.reductions.size())) return bad("unknown reduction result");
        break;
      case ExprKind::kUnary:
        if (e.op < 0 || e.op > static_cast<int>(program::UnaryOp::kRoundF8E5M2FNUZNoSat) || e.operands.size() != 1)
          return bad(absl::StrCat("unknown unary op ", e.op));
        break;
      case ExprKind::kBinary:
        if (e.op < 0 || e.op > static_cast<int>(program::BinaryOp::kShrU) || e.operands.size() != 2)
          return bad(absl::StrCat("unknown binary op ", e.op));
        break;
      case ExprKind::kSelect:
        if (e.operands.size() != 3) return bad("select without three operands");
        break;
      case ExprKind::kCast:
        if (e.operands.size() != 1) return bad("cast without an operand");
        break;
      case ExprKind::kConst: break;
      case ExprKind::kSymbol:
        if (e.ival < 0 || e.ival >= static_cast<int64_t>(s.symbolics.size())) return bad("unknown symbolic extent");
        break;
    }
  }
  for (const program::Reduction &r : s.reductions)
    if (r.body < 0 || r.body >= n) return bad("reduction without a body");
  for (const program::Store &st : s.stores) {
    if (st.buffer < 0 || st.buffer >= static_cast<int>(s.buffers.size()) ||
        st.index.size() != s.buffers[st.buffer].shape.size() || st.value < 0 || st.value >= n)
      return bad("store does not match its buffer");
  }
  return absl::OkStatus();
}

namespace {

absl::Status checkEpilogue(const program::GemmEpilogue &e, const char *what) {
  if (e.empty()) return absl::OkStatus();
  absl::Status st = checkCpuKernel(e.spec);
  if (!st.ok()) return bad(absl::StrCat(what, " epilogue: ", st.message()));
  if (e.spec.dims.size() != 2 || e.spec.buffers.empty() || e.value < 0 ||
      e.value >= static_cast<int>(e.spec.exprs.size()) || !e.spec.reductions.empty())
    return bad(absl::StrCat(what, " epilogue is not a [m, n] expression"));
  return absl::OkStatus();
}

bool gemmDType(ir::DType d) { return d == ir::DType::kF32 || d == ir::DType::kF16 || d == ir::DType::kBF16; }

}  // namespace

absl::Status checkCpuGemm(const program::GemmParams &g) {
  if (!gemmDType(g.dtype))
    return bad(absl::StrCat("GEMM of dtype ", ir::dtypeName(g.dtype), " (f32, f16 and bf16 run through sgemm)"));
  if (g.dDtype != g.dtype)  // the cpu backend lowers without LoweringOptions::foldGemmOutputCast
    return bad(absl::StrCat("GEMM of ", ir::dtypeName(g.dtype), " writing ", ir::dtypeName(g.dDtype),
                            " (an output Cast folded in)"));
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return bad("GEMM with negative sizes");
  if (!g.a || !g.b || !g.d) return bad("GEMM without its operands");
  if (g.epilogue.hasBias() != (g.bias != nullptr) ||
      g.epilogue.numInputs() != static_cast<int>(g.epilogueInputs.size()))
    return bad("GEMM epilogue buffers do not match its bias and inputs");
  return checkEpilogue(g.epilogue, "GEMM");
}

absl::Status checkCpuConv(const program::ConvParams &c) {
  if (!gemmDType(c.dtype))
    return bad(absl::StrCat("convolution of dtype ", ir::dtypeName(c.dtype), " (f32, f16 and bf16)"));
  const size_t r = c.xShape.size();
  if (r != 3 && r != 4) return bad(absl::StrCat("convolution of rank ", r, " (1-D and 2-D only)"));
  const size_t sp = r - 2;
  if (c.wShape.size() != r || c.yShape.size() != r || c.strides.size() != sp || c.dilations.size() != sp ||
      c.pads.size() != 2 * sp || c.group < 1)
    return bad("convolution parameters do not match its rank");
  if (c.xShape[1] % c.group || c.wShape[0] % c.group || c.wShape[1] * c.group != c.xShape[1])
    return bad("convolution channels do not divide into its groups");
  if (!c.x || !c.w || !c.y) return bad("convolution without its operands");
  if (c.epilogue.hasBias() != (c.bias != nullptr) ||
      c.epilogue.numInputs() != static_cast<int>(c.epilogueInputs.size()))
    return bad("convolution epilogue buffers do not match its bias and inputs");
  return checkEpilogue(c.epilogue, "convolution");
}

std::vector<const ir::Value *> gemmStepBuffers(const program::GemmParams &g) {
  std::vector<const ir::Value *> b = {g.a, g.b};
  if (g.c) b.push_back(g.c);
  if (g.bias) b.push_back(g.bias);
  b.insert(b.end(), g.epilogueInputs.begin(), g.epilogueInputs.end());
  b.push_back(g.d);
  return b;
}

std::vector<const ir::Value *> convStepBuffers(const program::ConvParams &c) {
  std::vector<const ir::Value *> b = {c.x, c.w};
  if (c.bias) b.push_back(c.bias);
  b.insert(b.end(), c.epilogueInputs.begin(), c.epilogueInputs.end());
  b.push_back(c.y);
  return b;
}

// ---------------------------------------------------------------------------
// Pointwise and reduce kernels

namespace {

struct KernelEmitter {
  CpuModuleBuilder::Impl &I;
  const KernelSpec &s;
  std::vector<llvm::Value *> bufs;
  int W;

  llvm::Value *splat(llvm::Value *scalar) { return I.B.CreateVectorSplat(W, scalar); }

  /// Dynamic shapes: some extent is known at run time only.
  bool dyn() const { return s.hasSymbolicExtents(); }
  /// The extent of dim \p d in the current function (a constant when static).
  llvm::Value *extV(int d) {
    return s.dims[d].symbolic.isConstant() ? I.c64(s.dims[d].extent) : I.ext(s.dims[d].symbolic);
  }
  bool symbolicDim(int d) const { return !s.dims[d].symbolic.isConstant(); }
  /// The product of the extents of dims [b, e) in the current function.
  llvm::Value *extProduct(int b, int e) {
    llvm::Value *v = I.c64(1);
    for (int d = b; d < e; ++d) v = I.B.CreateMul(v, extV(d));
    return v;
  }
  /// Scalar indices of dims [b, e) from flat \p r, row-major, extents at run time.
  std::vector<llvm::Value *> delinearizeDims(llvm::Value *r, int b, int e) {
    std::vector<llvm::Value *> out(e - b);
    for (int d = e; d-- > b;) {
      if (d == b) {
        out[d - b] = r;
        break;
      }
      llvm::Value *x = extV(d);
      out[d - b] = I.B.CreateURem(r, x);
      r = I.B.CreateUDiv(r, x);
    }
    return out;
  }

  /// Scalar indices of \p dims (their extents) from flat \p r, row-major.
  std::vector<llvm::Value *> delinearize(llvm::Value *r, const std::vector<int64_t> &exts) {
    std::vector<llvm::Value *> out(exts.size());
    for (size_t d = exts.size(); d-- > 0;) {
      if (d == 0) {
        out[d] = r;
        break;
      }
      out[d] = I.B.CreateURem(r, I.c64(exts[d]));
      r = I.B.CreateUDiv(r, I.c64(exts[d]));
    }
    return out;
  }

  /// Runs \p fn(base, mask) over [0, n) in vectors of W (the last one
  /// masked), n static.
  void vectorLoop(int64_t n, const std::function<void(llvm::Value *, llvm::Value *)> &fn) {
    const int64_t main = n / W * W;
    if (main > 0) I.loop(I.c64(0), I.c64(main), W, [&](llvm::Value *i) { fn(i, nullptr); }, "vec");
    if (n % W) fn(I.c64(main), prefixMask(I, W, I.c64(n % W)));
  }

  /// Runs \p fn(base, mask, u) over [0, n) (n static) in vectors of W:
  /// groups of \p unroll vectors per loop iteration (u = 0..unroll-1), the
  /// vectors left after the last group straight-line (u = 0, 1, ...), then
  /// the remainder as one masked vector (u = 0).
  void vectorLoopUnrolled(int64_t n, int unroll, const std::function<void(llvm::Value *, llvm::Value *, int)> &fn) {
    const int64_t step = int64_t(unroll) * W;
    const int64_t main = n / step * step;
    if (main > 0)
      I.loop(I.c64(0), I.c64(main), step, [&](llvm::Value *i) {
        for (int u = 0; u < unroll; ++u) fn(I.B.CreateAdd(i, I.c64(int64_t(u) * W)), nullptr, u);
      }, "vec");
    int u = 0;
    for (int64_t b = main; b + W <= n; b += W) fn(I.c64(b), nullptr, u++);
    if (n % W) fn(I.c64(n / W * W), prefixMask(I, W, I.c64(n % W)), 0);
  }

  void pointwise(const std::string &symbol) {
    const int np = s.numParallelDims();
    std::vector<int64_t> outerExt;
    int64_t rows = 1;
    for (int d = 0; d + 1 < np; ++d) {
      outerExt.push_back(s.dims[d].extent);
      rows *= s.dims[d].extent;
    }
    const int64_t inner = np > 0 ? s.dims[np - 1].extent : 1;
    if (np == 0) W = 1;
    auto emitBody = [&](const std::string &name, const std::vector<int> *streamed) {
      bufs.clear();
      llvm::Function *body = I.beginBody(name);
      for (size_t b = 0; b < s.buffers.size(); ++b) bufs.push_back(I.bufferPtr(b, storageType(I, s.buffers[b].dtype)));
      I.loop(body->getArg(1), body->getArg(2), 1, [&](llvm::Value *r) {
        std::vector<llvm::Value *> outer = dyn() ? delinearizeDims(r, 0, std::max(0, np - 1)) : delinearize(r, outerExt);
        auto lanes = [&](llvm::Value *base, llvm::Value *mask) {
          std::vector<llvm::Value *> dims(s.dims.size(), nullptr);
          for (int d = 0; d + 1 < np; ++d) dims[d] = splat(outer[d]);
          if (np > 0) dims[np - 1] = I.B.CreateAdd(splat(base), iota(I, W));
          Lanes L(I, s, bufs, dims, np - 1, W, mask);
          L.setStreamedBuffers(streamed);
          for (const program::Store &st : s.stores) L.store(st);
        };
        if (np == 0) lanes(I.c64(0), nullptr);
        else if (symbolicDim(np - 1)) dynVectorLoop(I, extV(np - 1), W, lanes);
        else vectorLoop(inner, lanes);
      }, "row");
      if (streamed) I.endStreamingStores();
      I.B.CreateRetVoid();
      return body;
    };
    llvm::Function *body = emitBody(symbol, nullptr);
    int64_t align = 0;
    const std::vector<int> streamed = streamedBuffers([](const program::Store &) { return true; }, &align);
    if (!streamed.empty()) I.setStreamingVariant(emitBody(symbol + ".nt", &streamed), streamed, align);
    if (!dyn()) {
      I.emitEntry(symbol, body, rows, kChunkElements / std::max<int64_t>(1, inner), rows * inner);
      return;
    }
    auto innerV = [&] { return np > 0 ? extV(np - 1) : I.c64(1); };
    I.emitEntry(symbol, body, [&] { return extProduct(0, std::max(0, np - 1)); },
                [&] { return I.B.CreateSDiv(I.c64(kChunkElements), smax1(innerV())); },
                [&] { return extProduct(0, np); });
  }

  llvm::Value *smax1(llvm::Value *v) {
    return I.B.CreateSelect(I.B.CreateICmpSGT(v, I.c64(1)), v, I.c64(1));
  }

  /// The buffers whose element stores may be streaming stores
  /// (CpuTarget::streamingStoreBytes): x86, every store to the buffer is an
  /// element store (\p isElem), unguarded, with the identity index map
  /// over the whole domain, and the innermost extent a multiple of W, so
  /// that every full vector starts at a multiple of W elements (rows that
  /// are not have no aligned vectors to stream); a vector of 16, 32 or 64
  /// bytes; and the buffers together at least streamingStoreBytes. Empty
  /// when there are none. \p align: the alignment the stores need (the
  /// largest vector size among them).
  template <typename IsElem>
  std::vector<int> streamedBuffers(const IsElem &isElem, int64_t *align) {
    *align = 0;
    // Dynamic shapes: sizes unknown here; plain stores.
    if (dyn() || !I.target.x86 || W < 2 || s.dims.empty() || s.dims.back().extent % W != 0) return {};
    std::map<int, bool> ok;
    for (const program::Store &st : s.stores) {
      const program::BufferDesc &b = s.buffers[st.buffer];
      bool good = isElem(st) && st.guard < 0 && b.shape.size() == s.dims.size();
      for (size_t k = 0; good && k < b.shape.size(); ++k) {
        const Expr &ix = s.exprs[st.index[k]];
        const bool isDim = ix.kind == ExprKind::kIndex && ix.ival == static_cast<int64_t>(k);
        // KernelSpec::index(d) of a dim of extent 1 is the constant 0.
        const bool unitDim = s.dims[k].extent == 1 && ix.kind == ExprKind::kConst && ix.ival == 0;
        good = b.shape[k] == s.dims[k].extent && (isDim || unitDim);
      }
      const int64_t vb = int64_t(W) * storageType(I, b.dtype)->getScalarSizeInBits() / 8;
      good = good && (vb == 16 || vb == 32 || vb == 64);
      auto it = ok.find(st.buffer);
      ok[st.buffer] = good && (it == ok.end() || it->second);
    }
    std::vector<int> out;
    int64_t bytes = 0;
    for (const auto &[b, good] : ok) {
      if (!good) continue;
      const int64_t eb = storageType(I, s.buffers[b].dtype)->getScalarSizeInBits() / 8;
      int64_t n = eb;
      for (int64_t d : s.buffers[b].shape) n *= d;
      bytes += n;
      *align = std::max<int64_t>(*align, int64_t(W) * eb);
      out.push_back(b);
    }
    if (out.empty() || bytes < I.target.streamingStoreBytes) return {};
    return out;
  }

  /// Reduce kernels: the input buffers a pass after the first prefetches
  /// for the next row: read buffers loaded with the identity index map
  /// over the whole domain (so that the next row's element is the current
  /// one plus the reduced size), together at least
  /// CpuTarget::streamingStoreBytes (rows that come from memory, not from
  /// the cache).
  std::vector<int> prefetchedBuffers() {
    if (dyn()) return {};  // dynamic shapes: row sizes known at run time only
    std::map<int, bool> ok;
    for (const Expr &e : s.exprs) {
      if (e.kind != ExprKind::kLoad) continue;
      const program::BufferDesc &b = s.buffers[e.ival];
      bool good = !b.written && e.guard < 0 && b.shape.size() == s.dims.size();
      for (size_t k = 0; good && k < b.shape.size(); ++k) {
        const Expr &ix = s.exprs[e.operands[k]];
        const bool isDim = ix.kind == ExprKind::kIndex && ix.ival == static_cast<int64_t>(k);
        const bool unitDim = s.dims[k].extent == 1 && ix.kind == ExprKind::kConst && ix.ival == 0;
        good = b.shape[k] == s.dims[k].extent && (isDim || unitDim);
      }
      if (good) ok[static_cast<int>(e.ival)] = true;
    }
    std::vector<int> out;
    int64_t bytes = 0;
    for (const auto &[b, good] : ok) {
      int64_t n = storageType(I, s.buffers[b].dtype)->getScalarSizeInBits() / 8;
      for (int64_t d : s.buffers[b].shape) n *= d;
      bytes += n;
      out.push_back(b);
    }
    if (out.empty() || bytes < I.target.streamingStoreBytes) return {};
    return out;
  }

  /// A prefetch into L2 (llvm.prefetch, read, locality 2) of the element
  /// of buffers \p buffers at row \p nextRow and reduced offset lane 0 of
  /// \p flat (rows of \p redSize elements); one per vector, so every
  /// cache line of a row of 4-byte elements with 16 lanes gets one.
  void prefetchNextRow(const std::vector<int> &buffers, llvm::Value *nextRow, int64_t redSize, llvm::Value *flat) {
    auto &B = I.B;
    llvm::Value *at = B.CreateAdd(B.CreateMul(nextRow, I.c64(redSize)), B.CreateExtractElement(flat, uint64_t{0}));
    llvm::Function *pf = llvm::Intrinsic::getDeclaration(I.mod.get(), llvm::Intrinsic::prefetch, {I.i8p});
    for (int b : buffers) {
      llvm::Value *p = B.CreateGEP(storageType(I, s.buffers[b].dtype), bufs[b], at);
      B.CreateCall(pf, {B.CreateBitCast(p, I.i8p), B.getInt32(0), B.getInt32(2), B.getInt32(1)});
    }
  }

  // Reductions.
  /// Accumulators per reduction: a row pass is unrolled over kAccumulators
  /// vectors, each with its own accumulator, so the loop-carried chain (an
  /// FADD, or a max's compare and blend, 4-6 cycles) is kAccumulators times
  /// shorter than the pass; they are combined lane-wise at the end of the
  /// pass, then the lanes in a tree (log2 W steps).
  static constexpr int kAccumulators = 4;
  struct Acc {
    std::vector<llvm::Value *> val, idx;           // allocas (<W x T>, <W x i64>), one per accumulator
    llvm::Type *t = nullptr;                      // element type of the body
    ScalarType st = ScalarType::kF32;
  };

  llvm::Value *neutral(ReduceKind k, ScalarType t, int w) {
    llvm::Type *et = computeType(I, t);
    const double inf = std::numeric_limits<double>::infinity();
    if (isFloat(t)) {
      switch (k) {
        case ReduceKind::kSum: return splatF(I, et, w, 0.0);
        case ReduceKind::kProd: return splatF(I, et, w, 1.0);
        case ReduceKind::kMax: case ReduceKind::kArgMax: return splatF(I, et, w, -inf);
        default: return splatF(I, et, w, inf);
      }
    }
    switch (k) {
      case ReduceKind::kSum: return splatI(I, et, w, 0);
      case ReduceKind::kProd: return splatI(I, et, w, 1);
      case ReduceKind::kMax: case ReduceKind::kArgMax: return splatI(I, et, w, std::numeric_limits<int64_t>::min());
      default: return splatI(I, et, w, std::numeric_limits<int64_t>::max());
    }
  }

  /// The AVX-512 VMAXPS / VMINPS intrinsic for \p k on \p t (<16 x float>
  /// on an avx512f target), else not_intrinsic.
  llvm::Intrinsic::ID x86MinMax(ReduceKind k, llvm::Type *t) const {
    auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
    if (!I.target.x86 || !vt || vt->getNumElements() != 16 || !vt->getElementType()->isFloatTy() ||
        !I.target.hasFeature("avx512f"))
      return llvm::Intrinsic::not_intrinsic;
    return k == ReduceKind::kMax ? llvm::Intrinsic::x86_avx512_max_ps_512 : llvm::Intrinsic::x86_avx512_min_ps_512;
  }

  /// acc (op) v, lanes of \p mask only.
  llvm::Value *combine(ReduceKind k, ScalarType t, llvm::Value *acc, llvm::Value *v, llvm::Value *mask) {
    auto &B = I.B;
    const bool f = isFloat(t);
    llvm::Value *r;
    switch (k) {
      case ReduceKind::kSum: r = f ? B.CreateFAdd(acc, v) : B.CreateAdd(acc, v); break;
      case ReduceKind::kProd: r = f ? B.CreateFMul(acc, v) : B.CreateMul(acc, v); break;
      // Float max/min propagate NaN from either side. With AVX-512 f32:
      // VMAXPS v, acc (v > acc ? v : acc, which keeps a NaN acc), then v
      // where v is NaN: three operations a vector instead of the generic
      // form's four (LLVM merges the two selects of the generic form back
      // into one compare-or-compare blend).
      case ReduceKind::kMax:
      case ReduceKind::kMin:
      default:  // (arg reductions take argTake, not this)
        if (!f) {
          r = k == ReduceKind::kMax ? B.CreateSelect(B.CreateICmpSGT(acc, v), acc, v)
                                    : B.CreateSelect(B.CreateICmpSLT(acc, v), acc, v);
        } else if (llvm::Intrinsic::ID id = x86MinMax(k, v->getType()); id != llvm::Intrinsic::not_intrinsic) {
          llvm::Value *m = B.CreateCall(llvm::Intrinsic::getDeclaration(I.mod.get(), id), {v, acc, B.getInt32(4)});
          r = B.CreateSelect(B.CreateFCmpUNO(v, v), v, m);
        } else {
          r = B.CreateSelect(B.CreateOr(B.CreateFCmpUNO(acc, acc),
                                        k == ReduceKind::kMax ? B.CreateFCmpOGT(acc, v) : B.CreateFCmpOLT(acc, v)),
                             acc, v);
        }
        break;
    }
    return mask ? B.CreateSelect(mask, r, acc) : r;
  }

  /// Whether candidate (bv, bi) replaces (av, ai) in an arg reduction.
  llvm::Value *argTake(const program::Reduction &rd, ScalarType t, llvm::Value *av, llvm::Value *ai, llvm::Value *bv,
                       llvm::Value *bi, int w) {
    auto &B = I.B;
    const bool isMax = rd.kind == ReduceKind::kArgMax;
    const bool f = isFloat(t);
    llvm::Value *zero = splatI(I, I.i64, w, 0);
    llvm::Value *better = f ? (isMax ? B.CreateFCmpOGT(bv, av) : B.CreateFCmpOLT(bv, av))
                            : (isMax ? B.CreateICmpSGT(bv, av) : B.CreateICmpSLT(bv, av));
    llvm::Value *eq = f ? B.CreateFCmpOEQ(bv, av) : B.CreateICmpEQ(bv, av);
    llvm::Value *tie = B.CreateAnd(eq, rd.selectLastIndex ? B.CreateICmpSGT(bi, ai) : B.CreateICmpSLT(bi, ai));
    llvm::Value *byValue = B.CreateOr(better, tie);
    if (f) {
      // NaN is the extreme of either kind and the first NaN wins (the reference, numpy).
      llvm::Value *an = B.CreateFCmpUNO(av, av), *bn = B.CreateFCmpUNO(bv, bv);
      llvm::Value *byNan = B.CreateSelect(an, B.CreateAnd(bn, B.CreateICmpSLT(bi, ai)), bn);
      byValue = B.CreateSelect(B.CreateOr(an, bn), byNan, byValue);
    }
    llvm::Value *take = B.CreateOr(B.CreateICmpSLT(ai, zero), byValue);
    return B.CreateAnd(B.CreateICmpSGE(bi, zero), take);
  }

  /// Values a later pass over the row would recompute (docs/CPU_BACKEND.md,
  /// "row cache"): f32 expressions that depend on the reduced dims, cost a
  /// few operations (a transcendental counts 20) and are read by a pass
  /// after the one that first computes them. That pass stores them into the
  /// worker's workspace ([slots x reduced size] f32, the row is in cache);
  /// the later passes load them instead (softmax: exp(x - max) once, not
  /// twice; LayerNorm after a GELU: the GELU once, not three times).
  struct RowCache {
    std::map<int, int> slot;                 ///< expr -> slot
    std::map<int, int> first;                ///< expr -> the pass that computes and stores it
    std::map<int, std::set<int>> readers;    ///< expr -> passes that load it
  };
  static constexpr int kMinCachedCost = 4;
  static constexpr int64_t kMaxRowCacheBytes = 256 * 1024;

  template <typename StoreIsElem>
  RowCache planRowCache(const std::vector<int> &stage, int numStages, const std::vector<bool> &elem,
                        const StoreIsElem &storeIsElem) {
    RowCache rc;
    for (int d = s.numParallelDims(); d < static_cast<int>(s.dims.size()); ++d)
      if (symbolicDim(d)) return rc;  // dynamic shapes: a row's size is known at run time only
    const int n = static_cast<int>(s.exprs.size());
    const int passes = numStages + 1;
    // Roots of each pass.
    std::vector<std::vector<int>> roots(passes);
    for (size_t j = 0; j < s.reductions.size(); ++j) roots[stage[j]].push_back(s.reductions[j].body);
    for (const program::Store &st : s.stores)
      if (storeIsElem(st)) {
        roots[numStages].push_back(st.value);
        if (st.guard >= 0) roots[numStages].push_back(st.guard);
        for (int i : st.index) roots[numStages].push_back(i);
      }
    auto children = [&](int id) {
      std::vector<int> c(s.exprs[id].operands.begin(), s.exprs[id].operands.end());
      if (s.exprs[id].guard >= 0) c.push_back(s.exprs[id].guard);
      return c;
    };
    // Cost of each expr's tree (capped) and the first pass reaching it.
    // The cost of expr i itself: a math function 20, an operation 1, a leaf 0.
    auto selfCost = [&](int i) {
      const Expr &e = s.exprs[i];
      return e.kind == ExprKind::kUnary && isMathUnary(static_cast<program::UnaryOp>(e.op)) ? 20
             : (e.kind == ExprKind::kConst || e.kind == ExprKind::kIndex || e.kind == ExprKind::kLoad ||
                e.kind == ExprKind::kReduceResult) ? 0 : 1;
    };
    // Visits each expr reached from pass p's roots once; visit(id) says
    // whether to go on into its operands.
    auto walk = [&](int p, const std::function<bool(int)> &visit) {
      std::vector<int> todo = roots[p];
      std::vector<char> seen(n, 0);
      while (!todo.empty()) {
        int id = todo.back();
        todo.pop_back();
        if (seen[id]) continue;
        seen[id] = 1;
        if (visit(id))
          for (int c : children(id)) todo.push_back(c);
      }
    };
    std::vector<int> cost(n, 0), first(n, passes);
    for (int i = 0; i < n; ++i) {
      int c = selfCost(i);
      for (int o : children(i)) c += cost[o];
      cost[i] = std::min(c, 1000);
    }
    for (int p = 0; p < passes; ++p)
      walk(p, [&](int id) {
        first[id] = std::min(first[id], p);
        return true;
      });
    std::vector<char> blocked(n, 0);
    auto candidate = [&](int id) {
      return !blocked[id] && elem[id] && s.exprs[id].type == ScalarType::kF32 && cost[id] >= kMinCachedCost;
    };
    // Each later pass: walk from its roots, stopping at candidates computed
    // earlier. Then a cached value whose cost beyond the other cached values
    // it reads is small (LayerNorm's x - mean over the cached x: one
    // subtract) is recomputed instead (a store in its pass and a load in
    // each reader cost more than the subtract): blocked, and the walk redone.
    for (;;) {
      rc = RowCache{};
      for (int p = 1; p < passes; ++p)
        walk(p, [&](int id) {
          if (!(candidate(id) && first[id] < p)) return true;
          rc.first[id] = first[id];
          rc.readers[id].insert(p);
          return false;
        });
      // Cost of each expr with the cached ones counted as loads.
      std::vector<int> own(n, 0);
      bool changed = false;
      for (int i = 0; i < n; ++i) {
        int c = selfCost(i);
        for (int o : children(i)) c += rc.first.count(o) ? 0 : own[o];
        own[i] = std::min(c, 1000);
        if (rc.first.count(i) && own[i] < kMinCachedCost) {
          blocked[i] = 1;
          changed = true;
        }
      }
      if (!changed) break;
    }
    int next = 0;
    for (const auto &[id, f] : rc.first) rc.slot[id] = next++;
    if (int64_t(next) * s.reducedSize() * 4 > kMaxRowCacheBytes) return RowCache{};
    return rc;
  }

  /// Exprs whose value is the same for every row: they read no parallel
  /// dim's index, no reduction result and no buffer the kernel writes.
  std::vector<bool> rowInvariant() const {
    const int n = static_cast<int>(s.exprs.size()), np = s.numParallelDims();
    std::vector<bool> inv(n, false);
    for (int i = 0; i < n; ++i) {
      const Expr &e = s.exprs[i];
      bool v = e.guard < 0 || inv[e.guard];
      for (int o : e.operands) v = v && inv[o];
      switch (e.kind) {
        case ExprKind::kIndex: v = v && e.ival >= np; break;
        case ExprKind::kReduceResult: v = false; break;
        case ExprKind::kLoad: v = v && !s.buffers[e.ival].written; break;
        default: break;
      }
      inv[i] = v;
    }
    return inv;
  }

  /// Rows per block of the reduce kernel's row loop: 2 when the first pass
  /// over the row (the reductions of stage 0, \p stage) loads some operand
  /// along the row that is row-invariant (\p inv: a bias before a
  /// LayerNorm; loaded once per vector for both rows, as are the later
  /// passes' invariant operands, gamma and beta) and a block's rows stay
  /// well inside L2 (kMaxBlockBytes: the row-dependent buffers' rows and
  /// the row cache, twice, with the invariant rows once); static shapes
  /// only. Else 1. Where only a later pass reads such an operand (RMSNorm's
  /// weight, a plain LayerNorm's gamma and beta) pairs were measured slower
  /// (RMSNorm 8192 x 4096, 2 threads: 10.7 -> 11.7 ms; in L2, 1 thread:
  /// 0.475 -> 0.519 us a row) or no faster (LayerNorm: 14.3 / 14.6 ms).
  static constexpr int64_t kMaxBlockBytes = 512 * 1024;
  int rowBlock(const std::vector<bool> &inv, const std::vector<bool> &elem, const std::vector<int> &stage,
               const RowCache &cache) const {
    if (dyn() || s.reducedSize() <= 0) return 1;
    int64_t rows = 1;
    for (int d = 0; d < s.numParallelDims(); ++d) rows *= s.dims[d].extent;
    if (rows < 2) return 1;
    // Exprs the first pass evaluates.
    std::vector<char> first(s.exprs.size(), 0);
    std::vector<int> todo;
    for (size_t j = 0; j < s.reductions.size(); ++j)
      if (stage[j] == 0) todo.push_back(s.reductions[j].body);
    while (!todo.empty()) {
      const int id = todo.back();
      todo.pop_back();
      if (first[id]) continue;
      first[id] = 1;
      for (int o : s.exprs[id].operands) todo.push_back(o);
      if (s.exprs[id].guard >= 0) todo.push_back(s.exprs[id].guard);
    }
    bool shared = false;
    std::map<int, bool> varying;  // buffer read or written along the row -> differs per row
    for (size_t i = 0; i < s.exprs.size(); ++i) {
      const Expr &e = s.exprs[i];
      if (e.kind != ExprKind::kLoad || !elem[i]) continue;
      shared |= inv[i] && first[i];
      varying[static_cast<int>(e.ival)] |= !inv[i];
    }
    if (!shared) return 1;
    for (const program::Store &st : s.stores) varying[st.buffer] = true;
    int64_t bytes = 2 * int64_t(cache.slot.size()) * s.reducedSize() * 4;
    for (const auto &[b, v] : varying)
      bytes += (v ? 2 : 1) * s.reducedSize() * (storageType(I, s.buffers[b].dtype)->getScalarSizeInBits() / 8);
    return bytes <= kMaxBlockBytes ? 2 : 1;
  }

  void reduce(const std::string &symbol) {
    auto &B = I.B;
    const int np = s.numParallelDims();
    const int nd = static_cast<int>(s.dims.size());
    std::vector<int64_t> parExt;
    int64_t rows = 1;
    for (int d = 0; d < np; ++d) {
      parExt.push_back(s.dims[d].extent);
      rows *= s.dims[d].extent;
    }
    // Stages: a reduction runs after those whose results its body reads.
    const int nr = static_cast<int>(s.reductions.size());
    std::vector<int> stage(nr, 0);
    int numStages = 0;
    for (int j = 0; j < nr; ++j) {
      stage[j] = 0;
      // Recompute with the stages of earlier reductions known.
      std::vector<int> st(s.exprs.size(), -1);
      for (int i = 0; i <= s.reductions[j].body; ++i) {
        const Expr &e = s.exprs[i];
        int m = -1;
        for (int o : e.operands) m = std::max(m, st[o]);
        if (e.guard >= 0) m = std::max(m, st[e.guard]);
        if (e.kind == ExprKind::kReduceResult) m = std::max(m, stage[e.ival]);
        st[i] = m;
      }
      stage[j] = st[s.reductions[j].body] + 1;
      numStages = std::max(numStages, stage[j] + 1);
    }
    const std::vector<bool> elem = s.reducedDimDependence();
    auto storeIsElem = [&](const program::Store &st) {
      bool e = elem[st.value] || (st.guard >= 0 && elem[st.guard]);
      for (int i : st.index) e = e || elem[i];
      return e;
    };

    bool anyElem = false;
    for (const program::Store &st : s.stores) anyElem |= storeIsElem(st);
    const RowCache cache = planRowCache(stage, numStages, elem, storeIsElem);

    // Rows that come from memory: the first pass waits for them while the
    // later passes only compute on the row in cache; the pass after the
    // first (stage 1, or the element stores when there is one stage)
    // prefetches the next row meanwhile (8192 x 4096, loaded machine,
    // median of 6 rounds: softmax 40 -> 28 ms, rmsnorm 28 -> 20 ms). When
    // the first pass computes values worth caching (a transcendental: the
    // GELU before a LayerNorm), that first pass itself prefetches the next
    // row, one line per vector spread over its compute, so the next row
    // arrives while this one's later passes run: the bias + GELU + residual
    // + LayerNorm chain 15.1 / 15.6 / 14.7 -> 13.0 / 12.6 / 12.8 ms, same
    // sitting, 2 threads (two rows ahead: no better; four: worse). A burst
    // of the whole next row's prefetches in the short stage-1 pass was
    // slower there (54 -> 60 ms).
    const int64_t redSize = s.reducedSize();
    bool firstPassCaches = false;
    for (const auto &[id, pass] : cache.first) firstPassCaches |= pass == 0;
    const std::vector<int> prefetched = prefetchedBuffers();
    const int prefetchPass = prefetched.empty() || !(anyElem || numStages > 1) ? -1 : firstPassCaches ? 0 : 1;
    // Row blocking (rowBlock): rows in pairs when the first pass reads an
    // operand along the row that is the same for every row (a bias before
    // a LayerNorm), so that each vector of it, and of the later passes'
    // row-invariant operands (gamma, beta), is loaded once for both rows;
    // a chunk's odd row runs alone.
    const std::vector<bool> inv = rowInvariant();
    const int R = rowBlock(inv, elem, stage, cache);
    auto emitBody = [&](const std::string &name, const std::vector<int> *streamed) {
      bufs.clear();
      llvm::Function *body = I.beginBody(name);
      for (size_t b = 0; b < s.buffers.size(); ++b) bufs.push_back(I.bufferPtr(b, storageType(I, s.buffers[b].dtype)));
      llvm::Value *rowBuf = nullptr;
      // Row k of a block caches its values at k * rowCacheElems.
      const int64_t rowCacheElems = int64_t(cache.slot.size()) * redSize;
      if (!cache.slot.empty()) {
        I.workspace = std::max(I.workspace, align64(uint64_t(R) * uint64_t(rowCacheElems) * 4));
        llvm::Value *unusedSgemm;
        std::tie(unusedSgemm, rowBuf) = sgemmAndWorkspace(I, body);
      }
      // Pass p (stages, then the element stores = numStages) of row k of
      // the block: loads the cached values it reads, and stores those it
      // computes first.
      auto cachePass = [&](int pass, int k, Lanes &L, llvm::Value *flat, bool before) {
        for (const auto &[id, slot] : cache.slot) {
          llvm::Value *at = B.CreateAdd(B.CreateExtractElement(flat, uint64_t{0}),
                                        I.c64(slot * redSize + k * rowCacheElems));
          if (before && cache.first.at(id) < pass && cache.readers.at(id).count(pass))
            L.preset(id, loadF32(I, rowBuf, ir::DType::kF32, at, W, L.mask()));
          else if (!before && cache.first.at(id) == pass)
            storeFrom(I, L.emit(id), rowBuf, ir::DType::kF32, at, L.mask());
        }
      };
      // Per row of a block: the reductions' results and accumulators.
      std::vector<std::vector<llvm::Value *>> slots(R, std::vector<llvm::Value *>(nr));
      std::vector<std::vector<Acc>> acc(R, std::vector<Acc>(nr));
      for (int k = 0; k < R; ++k)
        for (int j = 0; j < nr; ++j) {
          const program::Reduction &rd = s.reductions[j];
          slots[k][j] = I.stackSlot(llvm::FixedVectorType::get(computeType(I, rd.type), 1), "red");
          ScalarType bt = s.exprs[rd.body].type;
          if (bt == ScalarType::kBool || bt == ScalarType::kIdx) bt = ScalarType::kI64;
          acc[k][j].st = bt;
          acc[k][j].t = computeType(I, bt);
          for (int u = 0; u < kAccumulators; ++u) {
            acc[k][j].val.push_back(I.stackSlot(llvm::FixedVectorType::get(acc[k][j].t, W), "acc"));
            if (rd.kind == ReduceKind::kArgMax || rd.kind == ReduceKind::kArgMin)
              acc[k][j].idx.push_back(I.stackSlot(llvm::FixedVectorType::get(I.i64, W), "acci"));
          }
        }
      // Reduced dims: strides of the flat reduced index (arg* results).
      std::vector<llvm::Value *> redStride(nd, nullptr);
      {
        llvm::Value *st = I.c64(1);
        for (int d = nd; d-- > np;) {
          redStride[d] = st;
          st = B.CreateMul(st, extV(d));
        }
      }
      llvm::Value *rowsV = dyn() ? extProduct(0, np) : I.c64(rows);

      // The rows \p rowIdx (one block, at most R): each pass over the
      // reduced dims handles every row of the block per vector.
      auto rowBlockBody = [&](const std::vector<llvm::Value *> &rowIdx) {
        const int n = static_cast<int>(rowIdx.size());
        std::vector<std::vector<llvm::Value *>> par(n);
        std::vector<llvm::Value *> nextRow(n);
        for (int k = 0; k < n; ++k) {
          par[k] = dyn() ? delinearizeDims(rowIdx[k], 0, np) : delinearize(rowIdx[k], parExt);
          // The row after the block (this one past the last row): what
          // prefetchNextRow reads.
          llvm::Value *next = B.CreateAdd(rowIdx[k], I.c64(n));
          nextRow[k] = B.CreateSelect(B.CreateICmpSLT(next, rowsV), next, rowIdx[k]);
        }
        // Runs fn(k, lanes, flat reduced index, accumulator) over the
        // reduced dims, the innermost in groups of `unroll` vectors; per
        // vector, rows k = 0..n-1 in turn, the later rows reusing the first
        // row's row-invariant values (one load of gamma for both rows).
        auto overReduced = [&](int unroll, const std::function<void(int, Lanes &, llvm::Value *, int)> &fn) {
          std::vector<llvm::Value *> idx(nd, nullptr);
          std::function<void(int)> rec = [&](int d) {
            if (d == nd - 1) {
              auto vec = [&](llvm::Value *base, llvm::Value *mask, int u) {
                llvm::Value *inner = B.CreateAdd(splat(base), iota(I, W));
                llvm::Value *flat = inner;
                for (int q = np; q < nd - 1; ++q)
                  flat = B.CreateAdd(flat, B.CreateMul(splat(idx[q]), splat(redStride[q])));
                std::map<int, llvm::Value *> shared;
                for (int k = 0; k < n; ++k) {
                  std::vector<llvm::Value *> dims(nd);
                  for (int p = 0; p < np; ++p) dims[p] = splat(par[k][p]);
                  for (int q = np; q < nd - 1; ++q) dims[q] = splat(idx[q]);
                  dims[nd - 1] = inner;
                  Lanes L(I, s, bufs, dims, nd - 1, W, mask);
                  L.setReductionSlots(&slots[k]);
                  for (const auto &[id, v] : shared) L.preset(id, v);
                  fn(k, L, flat, u);
                  if (k == 0 && n > 1)
                    for (const auto &[id, v] : L.values())
                      if (inv[id]) shared[id] = v;
                }
              };
              // Dynamic shapes: a run-time row, one accumulator.
              if (symbolicDim(d)) dynVectorLoop(I, extV(d), W, [&](llvm::Value *b, llvm::Value *m) { vec(b, m, 0); });
              else vectorLoopUnrolled(s.dims[d].extent, unroll, vec);
              return;
            }
            I.loop(I.c64(0), extV(d), 1, [&](llvm::Value *i) {
              idx[d] = i;
              rec(d + 1);
            }, "red");
          };
          rec(np);
        };
        for (int stg = 0; stg < numStages; ++stg) {
          std::vector<int> js;
          for (int j = 0; j < nr; ++j)
            if (stage[j] == stg) js.push_back(j);
          for (int k = 0; k < n; ++k)
            for (int j : js)
              for (int u = 0; u < kAccumulators; ++u) {
                B.CreateStore(neutral(s.reductions[j].kind, acc[k][j].st, W), acc[k][j].val[u]);
                if (!acc[k][j].idx.empty()) B.CreateStore(splatI(I, I.i64, W, -1), acc[k][j].idx[u]);
              }
          overReduced(kAccumulators, [&](int k, Lanes &L, llvm::Value *flat, int u) {
            cachePass(stg, k, L, flat, true);
            if (stg == prefetchPass) prefetchNextRow(prefetched, nextRow[k], redSize, flat);
            for (int j : js) {
              const program::Reduction &rd = s.reductions[j];
              const Expr &body = s.exprs[rd.body];
              const Acc &ac = acc[k][j];
              llvm::Value *a = B.CreateLoad(llvm::FixedVectorType::get(ac.t, W), ac.val[u]);
              // A float sum of products (LayerNorm's and RMSNorm's sums of
              // squares, x * x or pow(x, 2)): one llvm.fmuladd per vector
              // instead of a multiply and an add (one rounding instead of two).
              const bool square = body.kind == ExprKind::kBinary &&
                                  static_cast<program::BinaryOp>(body.op) == program::BinaryOp::kPow &&
                                  s.exprs[body.operands[1]].kind == ExprKind::kConst &&
                                  s.exprs[body.operands[1]].fval == 2.0;
              if (rd.kind == ReduceKind::kSum && isFloat(ac.st) && body.type == ac.st &&
                  body.kind == ExprKind::kBinary && s.exprs[body.operands[0]].type == ac.st &&
                  (square || (static_cast<program::BinaryOp>(body.op) == program::BinaryOp::kMul &&
                              s.exprs[body.operands[1]].type == ac.st))) {
                llvm::Value *x0 = L.emit(body.operands[0]);
                llvm::Value *f = B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()},
                                                   {x0, square ? x0 : L.emit(body.operands[1]), a});
                B.CreateStore(L.mask() ? B.CreateSelect(L.mask(), f, a) : f, ac.val[u]);
                continue;
              }
              llvm::Value *v = convertScalar(I, L.emit(rd.body), s.exprs[rd.body].type, ac.st);
              if (!ac.idx.empty()) {
                llvm::Value *ai = B.CreateLoad(llvm::FixedVectorType::get(I.i64, W), ac.idx[u]);
                llvm::Value *take = argTake(rd, ac.st, a, ai, v, flat, W);
                if (L.mask()) take = B.CreateAnd(take, L.mask());
                B.CreateStore(B.CreateSelect(take, v, a), ac.val[u]);
                B.CreateStore(B.CreateSelect(take, flat, ai), ac.idx[u]);
              } else {
                B.CreateStore(combine(rd.kind, ac.st, a, v, L.mask()), ac.val[u]);
              }
            }
            cachePass(stg, k, L, flat, false);
          });
          // Combine the accumulators lane-wise, then the lanes in a tree (the
          // low half with the high half, log2 W times); arg reductions keep
          // their index rule (argTake), whatever the order.
          for (int k = 0; k < n; ++k)
            for (int j : js) {
              const program::Reduction &rd = s.reductions[j];
              const Acc &ac = acc[k][j];
              const bool arg = !ac.idx.empty();
              llvm::Value *a = B.CreateLoad(llvm::FixedVectorType::get(ac.t, W), ac.val[0]);
              llvm::Value *ai = arg ? B.CreateLoad(llvm::FixedVectorType::get(I.i64, W), ac.idx[0]) : nullptr;
              auto merge = [&](llvm::Value *bv, llvm::Value *bi, int w) {
                if (arg) {
                  llvm::Value *take = argTake(rd, ac.st, a, ai, bv, bi, w);
                  a = B.CreateSelect(take, bv, a);
                  ai = B.CreateSelect(take, bi, ai);
                } else {
                  a = combine(rd.kind, ac.st, a, bv, nullptr);
                }
              };
              for (int u = 1; u < kAccumulators; ++u)
                merge(B.CreateLoad(llvm::FixedVectorType::get(ac.t, W), ac.val[u]),
                      arg ? B.CreateLoad(llvm::FixedVectorType::get(I.i64, W), ac.idx[u]) : nullptr, W);
              for (int w = W / 2; w >= 1; w /= 2) {
                std::vector<int> lo(w), hi(w);
                for (int l = 0; l < w; ++l) {
                  lo[l] = l;
                  hi[l] = w + l;
                }
                auto half = [&](llvm::Value *v, const std::vector<int> &m) {
                  return v ? B.CreateShuffleVector(v, llvm::UndefValue::get(v->getType()), m) : nullptr;
                };
                llvm::Value *bv = half(a, hi), *bi = half(ai, hi);
                a = half(a, lo);
                ai = half(ai, lo);
                merge(bv, bi, w);
              }
              llvm::Value *result = arg ? convertScalar(I, ai, ScalarType::kI64, rd.type)
                                        : convertScalar(I, a, ac.st, rd.type);
              B.CreateStore(result, slots[k][j]);
            }
        }
        if (anyElem)
          overReduced(1, [&](int k, Lanes &L, llvm::Value *flat, int) {
            cachePass(numStages, k, L, flat, true);
            if (numStages == prefetchPass) prefetchNextRow(prefetched, nextRow[k], redSize, flat);
            L.setStreamedBuffers(streamed);
            for (const program::Store &st : s.stores)
              if (storeIsElem(st)) L.store(st);
          });
        for (int k = 0; k < n; ++k) {
          std::vector<llvm::Value *> dims1(nd);
          for (int p = 0; p < np; ++p) dims1[p] = B.CreateVectorSplat(1, par[k][p]);
          Lanes L1(I, s, bufs, dims1, -1, 1, nullptr);
          L1.setReductionSlots(&slots[k]);
          for (const program::Store &st : s.stores)
            if (!storeIsElem(st)) L1.store(st);
        }
      };
      llvm::Value *begin = body->getArg(1), *end = body->getArg(2);
      if (R == 1) {
        I.loop(begin, end, 1, [&](llvm::Value *row) { rowBlockBody({row}); }, "row");
      } else {
        // Pairs, then the chunk's odd row.
        llvm::Value *pairsEnd = B.CreateAdd(begin, B.CreateAnd(B.CreateSub(end, begin), I.c64(-2)));
        I.loop(begin, pairsEnd, 2, [&](llvm::Value *row) { rowBlockBody({row, B.CreateAdd(row, I.c64(1))}); },
               "row2");
        I.ifThen(B.CreateICmpSLT(pairsEnd, end), [&] { rowBlockBody({pairsEnd}); });
      }
      if (streamed) I.endStreamingStores();
      B.CreateRetVoid();
      return body;
    };
    llvm::Function *body = emitBody(symbol, nullptr);
    int64_t align = 0;
    const std::vector<int> streamed = streamedBuffers(storeIsElem, &align);
    if (!streamed.empty()) I.setStreamingVariant(emitBody(symbol + ".nt", &streamed), streamed, align);
    if (!dyn()) {
      I.emitEntry(symbol, body, rows, kChunkElements / std::max<int64_t>(1, redSize), rows * redSize);
      return;
    }
    I.emitEntry(symbol, body, [&] { return extProduct(0, np); },
                [&] { return I.B.CreateSDiv(I.c64(kChunkElements), smax1(extProduct(np, nd))); },
                [&] { return extProduct(0, nd); });
  }
};

}  // namespace

llvm::Value *loadF32(CpuModuleBuilder::Impl &I, llvm::Value *base, ir::DType dtype, llvm::Value *off, int w,
                     llvm::Value *mask) {
  auto &B = I.B;
  llvm::Type *st = storageType(I, dtype);
  llvm::Type *vt = llvm::FixedVectorType::get(st, w);
  llvm::Value *p = B.CreateBitCast(B.CreateGEP(st, base, off), llvm::PointerType::getUnqual(vt));
  const llvm::Align al(st->getScalarSizeInBits() / 8);
  llvm::Value *raw = mask ? static_cast<llvm::Value *>(B.CreateMaskedLoad(vt, p, al, mask, llvm::Constant::getNullValue(vt)))
                          : static_cast<llvm::Value *>(B.CreateAlignedLoad(vt, p, al));
  return widenStorage(I, raw, dtype);
}

void storeFrom(CpuModuleBuilder::Impl &I, llvm::Value *v, llvm::Value *base, ir::DType dtype, llvm::Value *off,
               llvm::Value *mask) {
  auto &B = I.B;
  llvm::Type *st = storageType(I, dtype);
  llvm::Value *raw = narrowToStorage(I, v, ScalarType::kF32, dtype);
  llvm::Value *p = B.CreateBitCast(B.CreateGEP(st, base, off), llvm::PointerType::getUnqual(raw->getType()));
  const llvm::Align al(st->getScalarSizeInBits() / 8);
  if (mask) B.CreateMaskedStore(raw, p, al, mask);
  else B.CreateAlignedStore(raw, p, al);
}

void dynVectorLoop(CpuModuleBuilder::Impl &I, llvm::Value *n, int w,
                   const std::function<void(llvm::Value *, llvm::Value *)> &fn) {
  auto &B = I.B;
  llvm::Value *main = B.CreateMul(B.CreateSDiv(n, I.c64(w)), I.c64(w));
  I.loop(I.c64(0), main, w, [&](llvm::Value *j) { fn(j, nullptr); }, "vec");
  llvm::Value *rest = B.CreateSub(n, main);
  I.ifThen(B.CreateICmpSGT(rest, I.c64(0)), [&] { fn(main, prefixMask(I, w, rest)); });
}

llvm::Value *smin(CpuModuleBuilder::Impl &I, llvm::Value *a, llvm::Value *b) {
  return I.B.CreateSelect(I.B.CreateICmpSLT(a, b), a, b);
}

uint64_t align64(uint64_t b) { return (b + 63) / 64 * 64; }

std::pair<llvm::Value *, llvm::Value *> sgemmAndWorkspace(CpuModuleBuilder::Impl &I, llvm::Function *body) {
  auto &B = I.B;
  llvm::Value *ctx = I.bodyContext();
  llvm::Value *wsBase = B.CreateLoad(I.i8p, B.CreateStructGEP(I.ctxTy, ctx, 5));
  llvm::Value *wsBytes = B.CreateLoad(I.i64, B.CreateStructGEP(I.ctxTy, ctx, 6));
  llvm::Value *sgemm = B.CreateLoad(llvm::PointerType::getUnqual(I.sgemmTy), B.CreateStructGEP(I.ctxTy, ctx, 4));
  llvm::Value *ws = B.CreateGEP(I.i8, wsBase, B.CreateMul(B.CreateSExt(body->getArg(3), I.i64), wsBytes));
  return {sgemm, B.CreateBitCast(ws, llvm::PointerType::getUnqual(I.f32))};
}

absl::Status CpuModuleBuilder::addKernel(const KernelSpec &spec, const std::string &symbol) {
  FUSEC_RETURN_IF_ERROR(checkCpuKernel(spec));
  if (spec.kind == program::SpecKind::kAttention) return addAttention(*impl_, spec.attention, symbol);
  KernelEmitter k{*impl_, spec, {}, impl_->lanes};
  if (spec.numParallelDims() < static_cast<int>(spec.dims.size())) k.reduce(symbol);
  else k.pointwise(symbol);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// GEMM

absl::Status CpuModuleBuilder::addGemm(const program::GemmParams &g, const std::string &symbol) {
  FUSEC_RETURN_IF_ERROR(checkCpuGemm(g));
  Impl &I = *impl_;
  auto &B = I.B;
  const int W = I.lanes;
  const int64_t M = g.m, N = g.n, K = g.k;
  // Dynamic shapes (GemmParams::symbolic): a field's value in the current
  // function, a constant when static.
  auto field = [&](const char *name, int64_t v) -> llvm::Value * {
    auto it = g.symbolic.find(name);
    return it == g.symbolic.end() ? I.c64(v) : I.ext(it->second);
  };
  const bool dynM = g.symbolic.count("m"), dynN = g.symbolic.count("n");
  const bool dyn = !g.symbolic.empty();
  // Row tiles of up to 128 rows (a tile of at most 128 x 512 f32, 256 KB,
  // stays in L2 for the epilogue): each tile's sgemm call packs its B
  // panel again, so 64-row tiles packed the weights twice as often (8 x 128
  // bert_tiny / gpt2_tiny, 2 threads, 4 rounds each, same sitting: 7.19 ->
  // 6.87 ms and 8.00 -> 7.66 ms, 6.4 in a quiet round; 256 rows: 6.88 and
  // 7.53).
  int64_t MT = dynM ? 64 : std::max<int64_t>(1, std::min<int64_t>(M, 128));
  int64_t NT = dynN ? 256 : std::max<int64_t>(1, N <= 512 ? N : 256);
  const int64_t KT = 256;
  // Fewer than kMinGemmTasks tiles of a GEMM worth splitting (>= 2^19
  // multiply-adds per tile): halve the column tile (to >= 64); then, while
  // there are fewer than kMinRowSplitTasks, the row tile (to >= 16), so
  // that every worker of a small-batch GEMM gets tiles (48 x 1024 x 256:
  // 16 tiles of 48 x 64; 48 x 256 x 1024: 4 tiles of 48 x 64). Narrow
  // column tiles cost OpenBLAS little (single thread, this host, best of
  // 300: 48 x 1024 x 256 in 48 x 64 tiles 233 us, as one call 311 us), but
  // halving the rows does (48 x 256 x 1024 in 24 x 64 tiles 308 us, in
  // 48 x 64 tiles 277 us: B is packed once per row tile); the claimed
  // chunks of the pool balance 4 tiles over 2 workers.
  constexpr int64_t kMinGemmTasks = 16, kMinRowSplitTasks = 4;
  auto tilesOf = [&] { return g.batch * ((M + MT - 1) / MT) * ((N + NT - 1) / NT); };
  while (!dyn && tilesOf() < kMinGemmTasks && MT * NT * K >= (int64_t{1} << 19)) {
    if (NT >= 128) NT = (NT / 2 + 15) / 16 * 16;
    else if (MT >= 32 && tilesOf() < kMinRowSplitTasks) MT = (MT / 2 + 7) / 8 * 8;
    else break;
  }
  const int64_t mT = (M + MT - 1) / MT, nT = (N + NT - 1) / NT;
  const int64_t tasks = M > 0 && N > 0 ? g.batch * mT * nT : 0;
  const bool f32 = g.dtype == ir::DType::kF32;
  const uint64_t tileBytes = align64(uint64_t(MT * NT) * 4);
  const uint64_t aBytes = f32 ? 0 : align64(uint64_t(MT * KT) * 4);
  const uint64_t bBytes = f32 ? 0 : align64(uint64_t(KT * NT) * 4);
  I.workspace = std::max(I.workspace, tileBytes + aBytes + bBytes);

  llvm::Function *body = I.beginBody(symbol);
  const bool hasC = g.c != nullptr, hasBias = g.bias != nullptr;
  int bi = 0;
  llvm::Value *a = I.bufferPtr(bi++, storageType(I, g.dtype));
  llvm::Value *b = I.bufferPtr(bi++, storageType(I, g.dtype));
  llvm::Value *c = hasC ? I.bufferPtr(bi++, storageType(I, g.dtype)) : nullptr;
  llvm::Value *bias = nullptr;
  if (hasBias) {
    const ir::DType bt = g.epilogue.hasBias() ? g.epilogue.spec.buffers[1].dtype : g.dtype;
    bias = I.bufferPtr(bi++, storageType(I, bt));
  }
  // Epilogue buffer i: 0 the tile (overridden), 1 the bias, then the inputs.
  std::vector<llvm::Value *> epiBufs = {nullptr, bias};
  const int firstInput = g.epilogue.hasBias() ? 2 : 1;
  epiBufs.resize(firstInput);
  for (int i = 0; i < g.epilogue.numInputs(); ++i)
    epiBufs.push_back(I.bufferPtr(bi++, storageType(I, g.epilogue.spec.buffers[firstInput + i].dtype)));
  llvm::Value *d = I.bufferPtr(bi++, storageType(I, g.dtype));
  // Plain variables, not a structured binding: C++17 lambdas cannot capture those.
  llvm::Value *sgemm, *tile;
  std::tie(sgemm, tile) = sgemmAndWorkspace(I, body);
  llvm::Value *af = B.CreateGEP(I.f32, tile, I.c64(tileBytes / 4));
  llvm::Value *bf = B.CreateGEP(I.f32, tile, I.c64((tileBytes + aBytes) / 4));
  // Sizes and strides in the body (run-time values under dynamic shapes).
  llvm::Value *Mv = field("m", M), *Nv = field("n", N), *Kv = field("k", K);
  llvm::Value *sA = field("strideA", g.strideA), *sB = field("strideB", g.strideB);
  llvm::Value *sC = field("strideC", g.strideC), *sD = field("strideD", g.strideD);
  llvm::Value *nTv = B.CreateSDiv(B.CreateAdd(Nv, I.c64(NT - 1)), I.c64(NT));
  llvm::Value *mTv = B.CreateSDiv(B.CreateAdd(Mv, I.c64(MT - 1)), I.c64(MT));
  llvm::Value *perBatch = B.CreateMul(mTv, nTv);

  I.loop(body->getArg(1), body->getArg(2), 1, [&](llvm::Value *t) {
    llvm::Value *bt = B.CreateSDiv(t, perBatch);
    llvm::Value *rem = B.CreateSRem(t, perBatch);
    llvm::Value *m0 = B.CreateMul(B.CreateSDiv(rem, nTv), I.c64(MT));
    llvm::Value *n0 = B.CreateMul(B.CreateSRem(rem, nTv), I.c64(NT));
    llvm::Value *mr = smin(I, I.c64(MT), B.CreateSub(Mv, m0));
    llvm::Value *nr = smin(I, I.c64(NT), B.CreateSub(Nv, n0));
    llvm::Value *aBase = B.CreateMul(bt, sA);
    llvm::Value *bBase = B.CreateMul(bt, sB);
    if (K == 0) {
      B.CreateMemSet(tile, llvm::ConstantInt::get(I.i8, 0), tileBytes, llvm::MaybeAlign(64));
    } else if (f32) {
      llvm::Value *ap = B.CreateGEP(I.f32, a, B.CreateAdd(aBase, g.transA ? m0 : B.CreateMul(m0, Kv)));
      llvm::Value *bp = B.CreateGEP(I.f32, b, B.CreateAdd(bBase, g.transB ? B.CreateMul(n0, Kv) : n0));
      B.CreateCall(I.sgemmTy, sgemm,
                   {I.c32(g.transA), I.c32(g.transB), mr, nr, Kv, llvm::ConstantFP::get(I.f32, g.alpha), ap,
                    g.transA ? Mv : Kv, bp, g.transB ? Kv : Nv, llvm::ConstantFP::get(I.f32, 0.0), tile,
                    I.c64(NT)});
    } else {
      I.loop(I.c64(0), Kv, KT, [&](llvm::Value *k0) {
        llvm::Value *kr = smin(I, I.c64(KT), B.CreateSub(Kv, k0));
        // A[m0 + i, k0 + kk] -> af[i * KT + kk]; B[k0 + kk, n0 + j] -> bf[kk * NT + j].
        I.loop(I.c64(0), mr, 1, [&](llvm::Value *i) {
          I.loop(I.c64(0), kr, 1, [&](llvm::Value *kk) {
            llvm::Value *row = B.CreateAdd(m0, i), *col = B.CreateAdd(k0, kk);
            llvm::Value *off = g.transA ? B.CreateAdd(B.CreateMul(col, Mv), row)
                                        : B.CreateAdd(B.CreateMul(row, Kv), col);
            llvm::Value *v = loadF32(I, a, g.dtype, B.CreateAdd(aBase, off), 1, nullptr);
            storeFrom(I, v, af, ir::DType::kF32, B.CreateAdd(B.CreateMul(i, I.c64(KT)), kk), nullptr);
          }, "cvta");
        }, "cvta");
        I.loop(I.c64(0), kr, 1, [&](llvm::Value *kk) {
          I.loop(I.c64(0), nr, 1, [&](llvm::Value *j) {
            llvm::Value *row = B.CreateAdd(k0, kk), *col = B.CreateAdd(n0, j);
            llvm::Value *off = g.transB ? B.CreateAdd(B.CreateMul(col, Kv), row)
                                        : B.CreateAdd(B.CreateMul(row, Nv), col);
            llvm::Value *v = loadF32(I, b, g.dtype, B.CreateAdd(bBase, off), 1, nullptr);
            storeFrom(I, v, bf, ir::DType::kF32, B.CreateAdd(B.CreateMul(kk, I.c64(NT)), j), nullptr);
          }, "cvtb");
        }, "cvtb");
        llvm::Value *beta = B.CreateSelect(B.CreateICmpEQ(k0, I.c64(0)), llvm::ConstantFP::get(I.f32, 0.0),
                                           llvm::ConstantFP::get(I.f32, 1.0));
        B.CreateCall(I.sgemmTy, sgemm,
                     {I.c32(0), I.c32(0), mr, nr, kr, llvm::ConstantFP::get(I.f32, g.alpha), af, I.c64(KT), bf,
                      I.c64(NT), beta, tile, I.c64(NT)});
      }, "ktile");
    }
    // Epilogue over the tile.
    I.loop(I.c64(0), mr, 1, [&](llvm::Value *i) {
      llvm::Value *row = B.CreateAdd(m0, i);
      dynVectorLoop(I, nr, W, [&](llvm::Value *j, llvm::Value *mask) {
        llvm::Value *acc = loadF32(I, tile, ir::DType::kF32, B.CreateAdd(B.CreateMul(i, I.c64(NT)), j), W, mask);
        llvm::Value *outOff = B.CreateAdd(B.CreateMul(row, Nv), B.CreateAdd(n0, j));
        if (hasC && g.beta != 0) {
          llvm::Value *cv = loadF32(I, c, g.dtype, B.CreateAdd(B.CreateMul(bt, sC), outOff), W, mask);
          acc = B.CreateFAdd(acc, B.CreateFMul(cv, splatF(I, I.f32, W, g.beta)));
        }
        llvm::Value *val = acc;
        if (!g.epilogue.empty()) {
          std::vector<llvm::Value *> dims = {B.CreateVectorSplat(W, row),
                                             B.CreateAdd(B.CreateVectorSplat(W, B.CreateAdd(n0, j)), iota(I, W))};
          Lanes L(I, g.epilogue.spec, epiBufs, dims, 1, W, mask);
          L.overrideBuffer0(acc);
          val = convertScalar(I, L.emit(g.epilogue.value), g.epilogue.spec.exprs[g.epilogue.value].type,
                              ScalarType::kF32);
        }
        storeFrom(I, val, d, g.dtype, B.CreateAdd(B.CreateMul(bt, sD), outOff), mask);
      });
    }, "epi");
  }, "task");
  B.CreateRetVoid();
  if (!dyn) {
    I.emitEntry(symbol, body, tasks, 1, g.batch * M * N * std::max<int64_t>(K, 1));
    return absl::OkStatus();
  }
  I.emitEntry(
      symbol, body,
      [&] {
        llvm::Value *m = field("m", M), *n = field("n", N);
        llvm::Value *mt = B.CreateSDiv(B.CreateAdd(m, I.c64(MT - 1)), I.c64(MT));
        llvm::Value *nt = B.CreateSDiv(B.CreateAdd(n, I.c64(NT - 1)), I.c64(NT));
        return B.CreateMul(field("batch", g.batch), B.CreateMul(mt, nt));
      },
      [&] { return I.c64(1); },
      [&] {
        llvm::Value *k = field("k", K);
        k = B.CreateSelect(B.CreateICmpSGT(k, I.c64(1)), k, I.c64(1));
        return B.CreateMul(B.CreateMul(field("batch", g.batch), field("m", M)), B.CreateMul(field("n", N), k));
      });
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Convolution

absl::Status CpuModuleBuilder::addConv(const program::ConvParams &cv, const std::string &symbol) {
  FUSEC_RETURN_IF_ERROR(checkCpuConv(cv));
  Impl &I = *impl_;
  auto &B = I.B;
  const int W = I.lanes;
  const bool two = cv.xShape.size() == 4;
  // Dynamic shapes: only the batch may be symbolic (one task per image).
  for (const auto &[f, e] : cv.symbolic)
    if (f != "xShape[0]" && f != "yShape[0]")
      return bad(absl::StrCat("dynamic shapes: convolution field ", f, " = ", e.str(),
                              "; only the batch dim of a convolution may be dynamic (bind the others with --shape)"));
  const int64_t Nb = cv.xShape[0], C = cv.xShape[1], H = two ? cv.xShape[2] : 1, Wd = cv.xShape.back();
  const int64_t Mo = cv.wShape[0], KH = two ? cv.wShape[2] : 1, KW = cv.wShape.back();
  const int64_t OH = two ? cv.yShape[2] : 1, OW = cv.yShape.back();
  const int64_t sh = two ? cv.strides[0] : 1, sw = cv.strides.back();
  const int64_t dh = two ? cv.dilations[0] : 1, dw = cv.dilations.back();
  const int64_t ph = two ? cv.pads[0] : 0, pw = two ? cv.pads[1] : cv.pads[0];
  const int64_t G = cv.group, Cg = C / G, Mg = Mo / G, Kd = Cg * KH * KW, P = OH * OW;
  int64_t PT = std::max<int64_t>(16, std::min<int64_t>(512, 32768 / std::max<int64_t>(1, Kd)) / 16 * 16);
  PT = std::max<int64_t>(1, std::min(PT, P));
  const int64_t pT = (P + PT - 1) / PT;
  const int64_t tasks = P > 0 && Mg > 0 ? Nb * G * pT : 0;
  const bool f32 = cv.dtype == ir::DType::kF32;
  const bool direct = KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && f32 &&
                      cv.pads == std::vector<int64_t>(cv.pads.size(), 0) && H == OH && Wd == OW;
  const uint64_t tileBytes = align64(uint64_t(Mg * PT) * 4);
  const uint64_t colBytes = direct ? 0 : align64(uint64_t(Kd * PT) * 4);
  const uint64_t wBytes = f32 ? 0 : align64(uint64_t(Mg * Kd) * 4);
  I.workspace = std::max(I.workspace, tileBytes + colBytes + wBytes);

  llvm::Function *body = I.beginBody(symbol);
  int bi = 0;
  llvm::Value *x = I.bufferPtr(bi++, storageType(I, cv.dtype));
  llvm::Value *w = I.bufferPtr(bi++, storageType(I, cv.dtype));
  llvm::Value *bias = nullptr;
  if (cv.bias) {
    const ir::DType bt = cv.epilogue.hasBias() ? cv.epilogue.spec.buffers[1].dtype : cv.dtype;
    bias = I.bufferPtr(bi++, storageType(I, bt));
  }
  // Epilogue buffer i: 0 the tile (overridden), 1 the bias, then the inputs.
  std::vector<llvm::Value *> epiBufs = {nullptr, bias};
  const int firstInput = cv.epilogue.hasBias() ? 2 : 1;
  epiBufs.resize(firstInput);
  for (int i = 0; i < cv.epilogue.numInputs(); ++i)
    epiBufs.push_back(I.bufferPtr(bi++, storageType(I, cv.epilogue.spec.buffers[firstInput + i].dtype)));
  llvm::Value *y = I.bufferPtr(bi++, storageType(I, cv.dtype));
  // Plain variables, not a structured binding: C++17 lambdas cannot capture those.
  llvm::Value *sgemm, *tile;
  std::tie(sgemm, tile) = sgemmAndWorkspace(I, body);
  llvm::Value *col = B.CreateGEP(I.f32, tile, I.c64(tileBytes / 4));
  llvm::Value *wf = B.CreateGEP(I.f32, tile, I.c64((tileBytes + colBytes) / 4));

  I.loop(body->getArg(1), body->getArg(2), 1, [&](llvm::Value *t) {
    llvm::Value *n = B.CreateSDiv(t, I.c64(G * pT));
    llvm::Value *rem = B.CreateSRem(t, I.c64(G * pT));
    llvm::Value *g = B.CreateSDiv(rem, I.c64(pT));
    llvm::Value *p0 = B.CreateMul(B.CreateSRem(rem, I.c64(pT)), I.c64(PT));
    llvm::Value *pr = smin(I, I.c64(PT), B.CreateSub(I.c64(P), p0));
    // x[n, g*Cg + c, ...]
    llvm::Value *xBase = B.CreateMul(B.CreateAdd(B.CreateMul(n, I.c64(C)), B.CreateMul(g, I.c64(Cg))), I.c64(H * Wd));
    llvm::Value *bmat, *ldb;
    if (direct) {
      bmat = B.CreateGEP(I.f32, x, B.CreateAdd(xBase, p0));
      ldb = I.c64(P);
    } else {
      I.loop(I.c64(0), I.c64(Kd), 1, [&](llvm::Value *ck) {
        llvm::Value *c = B.CreateSDiv(ck, I.c64(KH * KW));
        llvm::Value *kk = B.CreateSRem(ck, I.c64(KH * KW));
        llvm::Value *kh = B.CreateSDiv(kk, I.c64(KW)), *kw = B.CreateSRem(kk, I.c64(KW));
        I.loop(I.c64(0), pr, 1, [&](llvm::Value *j) {
          llvm::Value *p = B.CreateAdd(p0, j);
          llvm::Value *oh = B.CreateSDiv(p, I.c64(OW)), *ow = B.CreateSRem(p, I.c64(OW));
          llvm::Value *ih = B.CreateAdd(B.CreateSub(B.CreateMul(oh, I.c64(sh)), I.c64(ph)), B.CreateMul(kh, I.c64(dh)));
          llvm::Value *iw = B.CreateAdd(B.CreateSub(B.CreateMul(ow, I.c64(sw)), I.c64(pw)), B.CreateMul(kw, I.c64(dw)));
          llvm::Value *in = B.CreateAnd(B.CreateAnd(B.CreateICmpSGE(ih, I.c64(0)), B.CreateICmpSLT(ih, I.c64(H))),
                                        B.CreateAnd(B.CreateICmpSGE(iw, I.c64(0)), B.CreateICmpSLT(iw, I.c64(Wd))));
          llvm::Value *off = B.CreateAdd(xBase, B.CreateAdd(B.CreateMul(B.CreateAdd(B.CreateMul(c, I.c64(H)), ih), I.c64(Wd)), iw));
          off = B.CreateSelect(in, off, xBase);
          llvm::Value *v = loadF32(I, x, cv.dtype, off, 1, nullptr);
          v = B.CreateSelect(B.CreateVectorSplat(1, in), v, splatF(I, I.f32, 1, 0.0));
          storeFrom(I, v, col, ir::DType::kF32, B.CreateAdd(B.CreateMul(ck, I.c64(PT)), j), nullptr);
        }, "im2col");
      }, "im2col");
      bmat = col;
      ldb = I.c64(PT);
    }
    llvm::Value *wBase = B.CreateMul(g, I.c64(Mg * Kd));
    llvm::Value *amat;
    if (f32) {
      amat = B.CreateGEP(I.f32, w, wBase);
    } else {
      I.loop(I.c64(0), I.c64(Mg * Kd), 1, [&](llvm::Value *i) {
        storeFrom(I, loadF32(I, w, cv.dtype, B.CreateAdd(wBase, i), 1, nullptr), wf, ir::DType::kF32, i, nullptr);
      }, "cvtw");
      amat = wf;
    }
    if (Kd > 0) {
      B.CreateCall(I.sgemmTy, sgemm,
                   {I.c32(0), I.c32(0), I.c64(Mg), pr, I.c64(Kd), llvm::ConstantFP::get(I.f32, 1.0), amat, I.c64(Kd),
                    bmat, ldb, llvm::ConstantFP::get(I.f32, 0.0), tile, I.c64(PT)});
    } else {
      B.CreateMemSet(tile, llvm::ConstantInt::get(I.i8, 0), tileBytes, llvm::MaybeAlign(64));
    }
    I.loop(I.c64(0), I.c64(Mg), 1, [&](llvm::Value *mo) {
      llvm::Value *oc = B.CreateAdd(B.CreateMul(g, I.c64(Mg)), mo);
      dynVectorLoop(I, pr, W, [&](llvm::Value *j, llvm::Value *mask) {
        llvm::Value *acc = loadF32(I, tile, ir::DType::kF32, B.CreateAdd(B.CreateMul(mo, I.c64(PT)), j), W, mask);
        llvm::Value *val = acc;
        if (!cv.epilogue.empty()) {
          llvm::Value *mrow = B.CreateAdd(B.CreateMul(n, I.c64(P)), B.CreateAdd(p0, j));
          std::vector<llvm::Value *> dims = {B.CreateAdd(B.CreateVectorSplat(W, mrow), iota(I, W)),
                                             B.CreateVectorSplat(W, oc)};
          // The lanes are pixels of one image (p0 + j < P): m / P is the
          // same in each, m % P contiguous (a side input read as [image,
          // channel, pixel] is a vector load).
          Lanes L(I, cv.epilogue.spec, epiBufs, dims, 0, W, mask, /*vecBlock=*/P);
          L.overrideBuffer0(acc);
          val = convertScalar(I, L.emit(cv.epilogue.value), cv.epilogue.spec.exprs[cv.epilogue.value].type,
                              ScalarType::kF32);
        }
        llvm::Value *off = B.CreateAdd(B.CreateMul(B.CreateAdd(B.CreateMul(n, I.c64(Mo)), oc), I.c64(P)),
                                       B.CreateAdd(p0, j));
        storeFrom(I, val, y, cv.dtype, off, mask);
      });
    }, "epi");
  }, "task");
  B.CreateRetVoid();
  if (cv.symbolic.empty()) {
    I.emitEntry(symbol, body, tasks, 1, Nb * Mo * P * std::max<int64_t>(Kd, 1));
    return absl::OkStatus();
  }
  const program::SymExtent batch = cv.symbolic.at("xShape[0]");
  I.emitEntry(symbol, body, [&] { return B.CreateMul(I.ext(batch), I.c64(tasks / std::max<int64_t>(1, Nb))); },
              [&] { return I.c64(1); },
              [&] { return B.CreateMul(I.ext(batch), I.c64(Mo * P * std::max<int64_t>(Kd, 1))); });
  return absl::OkStatus();
}

}  // namespace fusec::codegen::cpu
