//===- CpuAttention.cpp - Fused attention as a tiled online-softmax loop nest ---===//
//
// One entry point per attention spec (program/AttentionSpec.h; buffers Q, K,
// V, bias0.., O). The score matrix is never materialised: the online
// softmax of Milakov & Gimelshein ("Online normalizer calculation for
// softmax", 2018), tiled as in Dao et al. ("FlashAttention", 2022):
//
//   parallel_for over tasks (b, h, query tile of QT rows), grain 1:
//     Qt = Q[b, h, q0 : q0+QT, :]          (as f32: converted into the workspace when bf16/f16)
//     m[i] = -inf, l[i] = 0, O[i, :] = 0   (f32, in the worker's workspace)
//     for each key tile [k0, k0+KT) whose tile state is not "fully masked":
//       S = scale * Qt Ktᵀ                  (ctx->sgemm, [QT x KT] f32)
//       per row i, in vectors of W keys:
//         x = mask(b,h,q,k) ? scoreMod(S, b, h, q, k, bias.., tables) : -inf
//         m' = max(m[i], max_k x); a = exp(m[i] - m'); p = exp(x - m')
//         l[i] = a l[i] + sum_k p; O[i, :] *= a; S[i, :] = p
//       O += S Vt                           (ctx->sgemm, beta = 1)
//     O[b, h, q, :] = O[i, :] / l[i]       (stored in O's dtype)
//
// Tile states: the mask is index-only, so for static shapes the compiler
// evaluates it on every (query tile, key tile) pair (per (b, h) as well when
// the mask reads b or h) and writes a constant table: 0 = every element
// masked (the tile is skipped: no GEMM, no exp), 1 = partial (the mask is
// evaluated per element), 2 = every element live (no mask code). A mask of
// diagonal bounds only (causal, sliding windows: ir::diagonalInterval) gets
// its states from each tile's range of q - k, at any size; for any other,
// past kMaxMaskEvaluations evaluations every tile is "partial".
//
// Key mask (AttentionSpec::keyMask, a [B, Sk] operand): once per (task, key
// tile) its kr values at batch b are read into the workspace as 0 / 1 and
// OR-reduced; a tile with no live key is skipped like a fully masked one
// (run-time data, so this is decided at run time), otherwise the row loop
// selects -inf where the workspace copy is 0.
//
// A row whose x are all -inf ends with l = 0 and O = 0, so O / l is NaN, as
// the spec defines it (softmax of all -inf), or with maskedRowsMean the sum
// of V over all keys divided by Sk; masked elements contribute an exact 0 (p
// is selected, not exp(-inf - m') computed).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/CpuIr.h"
#include "support/Status.h"

namespace fusec::codegen::cpu {

using ir::ScoreExpr;
using ir::ScoreNode;
using ir::ScoreOp;
using ir::ScoreType;
using program::AttentionSpec;

namespace {

/// Query rows per task and keys per tile. A 64 x 128 f32 score tile is
/// 32 KB (L1/L2 resident between the GEMM, the softmax passes and P·V); with
/// D <= 256 the f32 K/V tiles are <= 128 KB each.
constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 128;
/// Compile-time mask evaluations allowed for the tile-state table.
constexpr int64_t kMaxMaskEvaluations = int64_t{1} << 24;  // 4096 x 4096

absl::Status bad(const std::string &why) { return absl::UnimplementedError(absl::StrCat("cpu: ", why)); }

/// Field \p name of \p a (AttentionSpec::symbolic: "seqK", "qStrides[0]",
/// "biases[1].strides[2]") in the current function: \p value when static,
/// else its symbolic form evaluated at run time.
llvm::Value *attnField(CpuModuleBuilder::Impl &I, const AttentionSpec &a, const std::string &name, int64_t value) {
  auto it = a.symbolic.find(name);
  return it == a.symbolic.end() ? I.c64(value) : I.ext(it->second);
}

bool qkvType(ir::DType d) { return d == ir::DType::kF32 || d == ir::DType::kF16 || d == ir::DType::kBF16; }

bool biasType(ir::DType d) {
  switch (d) {
    case ir::DType::kF32: case ir::DType::kF64: case ir::DType::kF16: case ir::DType::kBF16:
    case ir::DType::kU8: case ir::DType::kI8: case ir::DType::kBool: case ir::DType::kU16:
    case ir::DType::kI16: case ir::DType::kU32: case ir::DType::kI32: case ir::DType::kI64:
    case ir::DType::kU64:
      return true;
    default: return false;
  }
}

/// Node-level checks of one expression: operands exist and precede the
/// node, biases and tables are known, a mask reads indices only.
absl::Status checkExpr(const ScoreExpr &e, const AttentionSpec &a, bool isMask, const char *what) {
  if (e.empty()) return absl::OkStatus();
  const int n = static_cast<int>(e.nodes.size());
  if (e.root < 0 || e.root >= n) return bad(absl::StrCat("attention ", what, " without a root"));
  for (int i = 0; i < n; ++i) {
    const ScoreNode &x = e.nodes[i];
    for (int o : {x.a, x.b, x.c})
      if (o >= i) return bad(absl::StrCat("attention ", what, ": node ", i, " has a bad operand"));
    int arity = 0;
    switch (x.op) {
      case ScoreOp::kConst: case ScoreOp::kScore: case ScoreOp::kB: case ScoreOp::kH: case ScoreOp::kQ:
      case ScoreOp::kK: case ScoreOp::kBias:
        arity = 0;
        break;
      case ScoreOp::kTable: case ScoreOp::kNeg: case ScoreOp::kNot: case ScoreOp::kTanh: case ScoreOp::kExp:
      case ScoreOp::kLog: case ScoreOp::kAbs: case ScoreOp::kSqrt:
        arity = 1;
        break;
      case ScoreOp::kSelect: arity = 3; break;
      default: arity = 2; break;
    }
    if ((arity >= 1 && x.a < 0) || (arity >= 2 && x.b < 0) || (arity >= 3 && x.c < 0))
      return bad(absl::StrCat("attention ", what, ": node ", i, " lacks an operand"));
    if (isMask && (x.op == ScoreOp::kScore || x.op == ScoreOp::kBias || x.op == ScoreOp::kTable))
      return bad("attention mask reads the score, a bias or a table (masks are index-only)");
    if (x.op == ScoreOp::kBias && (x.index < 0 || x.index >= static_cast<int>(a.biases.size())))
      return bad(absl::StrCat("attention ", what, " reads bias", x.index, " of ", a.biases.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status checkCpuAttention(const AttentionSpec &a) {
  const std::pair<const char *, ir::DType> types[] = {{"Q", a.qType}, {"K", a.kType}, {"V", a.vType}, {"O", a.oType}};
  for (const auto &[name, t] : types)
    if (!qkvType(t))
      return bad(absl::StrCat("attention with ", name, " of dtype ", ir::dtypeName(t), " (f32, f16 and bf16)"));
  if (a.batch < 0 || a.numHeads < 1 || a.kvHeads < 1 || a.seqQ < 0 || a.seqK < 0 || a.headDim < 1 ||
      a.headDimV < 1)
    return bad("attention with bad sizes (batch, heads, sequence lengths or head dims)");
  if (a.numHeads % a.kvHeads != 0) return bad("attention whose kv heads do not divide its query heads");
  for (const auto *s : {&a.qStrides, &a.kStrides, &a.vStrides, &a.oStrides})
    if ((*s)[3] != 1) return bad("attention operand whose innermost stride is not 1");
  for (size_t i = 0; i < a.biases.size(); ++i)
    if (!biasType(a.biases[i].dtype))
      return bad(absl::StrCat("attention bias", i, " of dtype ", ir::dtypeName(a.biases[i].dtype)));
  FUSEC_RETURN_IF_ERROR(checkExpr(a.scoreMod, a, false, "score_mod"));
  return checkExpr(a.mask, a, true, "mask");
}

namespace {

/// Evaluates a score expression (ir/ScoreExpr.h semantics) on W keys at once:
/// int nodes are <W x i64> (wrapping), float nodes <W x f32>, bool <W x i1>.
struct ScoreLanes {
  CpuModuleBuilder::Impl &I;
  const AttentionSpec &a;
  int W;
  llvm::Value *score = nullptr;  ///< <W x f32> (null for the mask)
  llvm::Value *b = nullptr, *h = nullptr, *q = nullptr;  ///< i64 scalars
  llvm::Value *kBase = nullptr;  ///< i64 scalar: the key of lane 0
  llvm::Value *lanes = nullptr;  ///< <W x i1> active lanes, or null
  const std::vector<llvm::Value *> *biasPtrs = nullptr;
  std::map<std::string, llvm::GlobalVariable *> *tables = nullptr;

  struct V {
    ScoreType t;
    llvm::Value *v;
  };

  llvm::Value *splat(llvm::Value *s) { return I.B.CreateVectorSplat(W, s); }
  llvm::Value *kVec() { return I.B.CreateAdd(splat(kBase), iota(I, W)); }

  llvm::Value *asF(const V &x) {
    switch (x.t) {
      case ScoreType::kFloat: return x.v;
      case ScoreType::kInt: return I.B.CreateSIToFP(x.v, llvm::FixedVectorType::get(I.f32, W));
      case ScoreType::kBool: return I.B.CreateUIToFP(x.v, llvm::FixedVectorType::get(I.f32, W));
    }
    return x.v;
  }
  llvm::Value *asI(const V &x) {
    llvm::Type *vt = llvm::FixedVectorType::get(I.i64, W);
    switch (x.t) {
      case ScoreType::kInt: return x.v;
      case ScoreType::kBool: return I.B.CreateZExt(x.v, vt);
      case ScoreType::kFloat:  // saturating, NaN -> 0
        return I.B.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {vt, x.v->getType()}, {x.v});
    }
    return x.v;
  }
  llvm::Value *asB(const V &x) {
    switch (x.t) {
      case ScoreType::kBool: return x.v;
      case ScoreType::kInt: return I.B.CreateICmpNE(x.v, splatI(I, I.i64, W, 0));
      case ScoreType::kFloat: return I.B.CreateFCmpUNE(x.v, splatF(I, I.f32, W, 0.0));  // NaN is true
    }
    return x.v;
  }

  llvm::Value *bias(int i) {
    auto &B = I.B;
    const program::AttentionBias &bd = a.biases[i];
    llvm::Type *st = storageType(I, bd.dtype);
    llvm::Type *vt = llvm::FixedVectorType::get(st, W);
    const llvm::Align al(std::max<unsigned>(1, st->getScalarSizeInBits() / 8));
    auto stride = [&](int k) { return attnField(I, a, absl::StrCat("biases[", i, "].strides[", k, "]"), bd.strides[k]); };
    llvm::Value *base = B.CreateAdd(B.CreateAdd(B.CreateMul(b, stride(0)), B.CreateMul(h, stride(1))),
                                    B.CreateMul(q, stride(2)));
    llvm::Value *ptr = (*biasPtrs)[i];
    llvm::Value *raw;
    // Dynamic shapes: a symbolic key stride takes the gather below.
    const bool symK = a.symbolic.count(absl::StrCat("biases[", i, "].strides[3]")) > 0;
    const int64_t sk = symK ? -1 : bd.strides[3];
    if (sk == 0) {
      raw = B.CreateVectorSplat(W, B.CreateAlignedLoad(st, B.CreateGEP(st, ptr, base), al));
    } else if (sk == 1) {
      llvm::Value *p = B.CreateBitCast(B.CreateGEP(st, ptr, B.CreateAdd(base, kBase)), llvm::PointerType::getUnqual(vt));
      raw = lanes ? static_cast<llvm::Value *>(B.CreateMaskedLoad(vt, p, al, lanes, llvm::Constant::getNullValue(vt)))
                  : static_cast<llvm::Value *>(B.CreateAlignedLoad(vt, p, al));
    } else {
      llvm::Value *off = B.CreateAdd(splat(base), B.CreateMul(kVec(), splat(stride(3))));
      llvm::Value *m = lanes ? lanes : llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(I.i1, W));
      raw = B.CreateMaskedGather(vt, B.CreateGEP(st, ptr, off), al, m, llvm::Constant::getNullValue(vt));
    }
    const program::ScalarType ct = program::computeTypeOf(bd.dtype);
    return convertScalar(I, widenStorage(I, raw, bd.dtype), ct, program::ScalarType::kF32);
  }

  llvm::Value *table(const ScoreNode &n, const V &index) {
    auto &B = I.B;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto it = a.tables.find(n.name);
    if (it == a.tables.end() || it->second.empty()) return splatF(I, I.f32, W, nan);
    llvm::GlobalVariable *&g = (*tables)[n.name];
    if (!g) {
      llvm::Constant *init = llvm::ConstantDataArray::get(I.ctx, llvm::ArrayRef<float>(it->second));
      g = new llvm::GlobalVariable(*I.mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                   "fusec.table." + n.name);
    }
    llvm::Value *idx = asI(index);
    const int64_t size = static_cast<int64_t>(it->second.size());
    llvm::Value *valid = B.CreateAnd(B.CreateICmpSGE(idx, splatI(I, I.i64, W, 0)),
                                     B.CreateICmpSLT(idx, splatI(I, I.i64, W, size)));
    if (index.t == ScoreType::kFloat) valid = B.CreateAnd(valid, B.CreateFCmpORD(index.v, index.v));
    if (lanes) valid = B.CreateAnd(valid, lanes);
    llvm::Value *safe = B.CreateSelect(valid, idx, splatI(I, I.i64, W, 0));
    llvm::Value *base = B.CreateBitCast(g, llvm::PointerType::getUnqual(I.f32));
    llvm::Type *vt = llvm::FixedVectorType::get(I.f32, W);
    return B.CreateMaskedGather(vt, B.CreateGEP(I.f32, base, safe), llvm::Align(4), valid, splatF(I, I.f32, W, nan));
  }

  /// int64 a / b truncating, x / 0 = 0, INT64_MIN / -1 = INT64_MIN (wraps).
  llvm::Value *intDiv(llvm::Value *x, llvm::Value *y) {
    auto &B = I.B;
    llvm::Value *zero = splatI(I, I.i64, W, 0), *minus1 = splatI(I, I.i64, W, -1);
    llvm::Value *bz = B.CreateICmpEQ(y, zero), *bm = B.CreateICmpEQ(y, minus1);
    llvm::Value *safe = B.CreateSelect(B.CreateOr(bz, bm), splatI(I, I.i64, W, 1), y);
    return B.CreateSelect(bz, zero, B.CreateSelect(bm, B.CreateSub(zero, x), B.CreateSDiv(x, safe)));
  }

  V eval(const ScoreExpr &e) {
    auto &B = I.B;
    std::vector<V> v(e.nodes.size(), V{ScoreType::kFloat, nullptr});
    for (size_t id = 0; id < e.nodes.size(); ++id) {
      const ScoreNode &n = e.nodes[id];
      const ScoreType t = n.type;
      auto A = [&] { return v[n.a]; };
      auto Bv = [&] { return v[n.b]; };
      auto idxVar = [&](llvm::Value *scalarOrVec) {
        llvm::Value *x = scalarOrVec->getType()->isVectorTy() ? scalarOrVec : splat(scalarOrVec);
        return t == ScoreType::kFloat ? V{t, asF(V{ScoreType::kInt, x})} : V{ScoreType::kInt, x};
      };
      V r{t, nullptr};
      switch (n.op) {
        case ScoreOp::kConst:
          if (t == ScoreType::kInt) {
            const double c = n.value;
            const int64_t iv = std::isnan(c) ? 0
                               : c >= 9223372036854775807.0 ? std::numeric_limits<int64_t>::max()
                               : c <= -9223372036854775808.0 ? std::numeric_limits<int64_t>::min()
                                                             : static_cast<int64_t>(c);
            r.v = splatI(I, I.i64, W, iv);
          } else if (t == ScoreType::kBool) {
            r.v = B.CreateVectorSplat(W, llvm::ConstantInt::get(I.i1, n.value != 0));
          } else {
            r.v = splatF(I, I.f32, W, static_cast<float>(n.value));
          }
          break;
        case ScoreOp::kScore: r.v = score ? score : splatF(I, I.f32, W, 0.0); break;
        case ScoreOp::kB: r = idxVar(b); break;
        case ScoreOp::kH: r = idxVar(h); break;
        case ScoreOp::kQ: r = idxVar(q); break;
        case ScoreOp::kK: r = idxVar(kVec()); break;
        case ScoreOp::kBias: r.v = bias(n.index); break;
        case ScoreOp::kTable: r.v = table(n, A()); break;
        case ScoreOp::kNeg:
          r.v = t == ScoreType::kInt ? B.CreateSub(splatI(I, I.i64, W, 0), asI(A())) : B.CreateFNeg(asF(A()));
          break;
        case ScoreOp::kNot: r.v = B.CreateNot(asB(A())); break;
        case ScoreOp::kAdd: case ScoreOp::kSub: case ScoreOp::kMul: case ScoreOp::kDiv:
          if (t == ScoreType::kInt) {
            llvm::Value *x = asI(A()), *y = asI(Bv());
            r.v = n.op == ScoreOp::kAdd   ? B.CreateAdd(x, y)
                  : n.op == ScoreOp::kSub ? B.CreateSub(x, y)
                  : n.op == ScoreOp::kMul ? B.CreateMul(x, y)
                                          : intDiv(x, y);
          } else {
            llvm::Value *x = asF(A()), *y = asF(Bv());
            r.v = n.op == ScoreOp::kAdd   ? B.CreateFAdd(x, y)
                  : n.op == ScoreOp::kSub ? B.CreateFSub(x, y)
                  : n.op == ScoreOp::kMul ? B.CreateFMul(x, y)
                                          : B.CreateFDiv(x, y);
          }
          break;
        case ScoreOp::kLt: case ScoreOp::kLe: case ScoreOp::kGt: case ScoreOp::kGe: case ScoreOp::kEq:
        case ScoreOp::kNe: {
          r.t = ScoreType::kBool;
          if (A().t == ScoreType::kInt && Bv().t == ScoreType::kInt) {
            llvm::Value *x = A().v, *y = Bv().v;
            r.v = n.op == ScoreOp::kLt   ? B.CreateICmpSLT(x, y)
                  : n.op == ScoreOp::kLe ? B.CreateICmpSLE(x, y)
                  : n.op == ScoreOp::kGt ? B.CreateICmpSGT(x, y)
                  : n.op == ScoreOp::kGe ? B.CreateICmpSGE(x, y)
                  : n.op == ScoreOp::kEq ? B.CreateICmpEQ(x, y)
                                         : B.CreateICmpNE(x, y);
          } else {
            llvm::Value *x = asF(A()), *y = asF(Bv());
            r.v = n.op == ScoreOp::kLt   ? B.CreateFCmpOLT(x, y)
                  : n.op == ScoreOp::kLe ? B.CreateFCmpOLE(x, y)
                  : n.op == ScoreOp::kGt ? B.CreateFCmpOGT(x, y)
                  : n.op == ScoreOp::kGe ? B.CreateFCmpOGE(x, y)
                  : n.op == ScoreOp::kEq ? B.CreateFCmpOEQ(x, y)
                                         : B.CreateFCmpUNE(x, y);
          }
          break;
        }
        case ScoreOp::kAnd: r.t = ScoreType::kBool; r.v = B.CreateAnd(asB(A()), asB(Bv())); break;
        case ScoreOp::kOr: r.t = ScoreType::kBool; r.v = B.CreateOr(asB(A()), asB(Bv())); break;
        case ScoreOp::kSelect: {
          llvm::Value *c = asB(A());
          const V &x = Bv(), &y = v[n.c];
          if (t == ScoreType::kInt) r.v = B.CreateSelect(c, asI(x), asI(y));
          else if (t == ScoreType::kBool) r.v = B.CreateSelect(c, asB(x), asB(y));
          else r.v = B.CreateSelect(c, asF(x), asF(y));
          break;
        }
        case ScoreOp::kTanh: r.v = mathUnary(I, program::UnaryOp::kTanh, asF(A())); break;
        case ScoreOp::kExp: r.v = mathUnary(I, program::UnaryOp::kExp, asF(A())); break;
        case ScoreOp::kLog: r.v = mathUnary(I, program::UnaryOp::kLog, asF(A())); break;
        case ScoreOp::kSqrt: r.v = B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, asF(A())); break;
        case ScoreOp::kAbs:
          if (t == ScoreType::kInt) {
            llvm::Value *x = asI(A());
            r.v = B.CreateSelect(B.CreateICmpSLT(x, splatI(I, I.i64, W, 0)), B.CreateSub(splatI(I, I.i64, W, 0), x), x);
          } else {
            r.v = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, asF(A()));
          }
          break;
        case ScoreOp::kMin: case ScoreOp::kMax:
          if (t == ScoreType::kInt) {
            llvm::Value *x = asI(A()), *y = asI(Bv());
            r.v = n.op == ScoreOp::kMin ? B.CreateSelect(B.CreateICmpSLT(x, y), x, y)
                                        : B.CreateSelect(B.CreateICmpSGT(x, y), x, y);
          } else {  // fmin / fmax: a NaN operand gives the other
            r.v = B.CreateBinaryIntrinsic(n.op == ScoreOp::kMin ? llvm::Intrinsic::minnum : llvm::Intrinsic::maxnum,
                                          asF(A()), asF(Bv()));
          }
          break;
      }
      // A node's declared type wins (e.g. an int-typed select of floats).
      if (r.t != t && t != ScoreType::kBool) r = V{t, t == ScoreType::kInt ? asI(r) : asF(r)};
      else if (r.t != t) r = V{t, asB(r)};
      v[id] = r;
    }
    return v[e.root];
  }
};

/// Tile states (see the file comment) in the order [(b, h,)] iq, jk; empty
/// when every tile is fully live (no mask). \p perHead: indexed by (b, h) too.
std::vector<uint8_t> tileStates(const AttentionSpec &a, int64_t QT, int64_t KT, int64_t nQ, int64_t nK,
                                bool *perHead) {
  *perHead = false;
  if (a.mask.empty()) return {};
  const bool bh = a.mask.usesIndex(ScoreOp::kB) || a.mask.usesIndex(ScoreOp::kH);
  const int64_t heads = bh ? a.batch * a.numHeads : 1;
  std::vector<uint8_t> st(static_cast<size_t>(heads * nQ * nK), 1);
  if (const auto band = ir::diagonalInterval(a.mask)) {  // causal / windows: from q - k's range, any size
    for (int64_t iq = 0; iq < nQ; ++iq)
      for (int64_t jk = 0; jk < nK; ++jk) {
        const int64_t q0 = iq * QT, q1 = std::min(a.seqQ, q0 + QT) - 1;
        const int64_t k0 = jk * KT, k1 = std::min(a.seqK, k0 + KT) - 1;
        const int64_t dlo = q0 - k1, dhi = q1 - k0;
        st[iq * nK + jk] = std::max(band->first, dlo) > std::min(band->second, dhi)   ? 0
                           : band->first <= dlo && dhi <= band->second ? 2
                                                                       : 1;
      }
    return st;
  }
  if (heads * a.seqQ * a.seqK > kMaxMaskEvaluations) return st;
  *perHead = bh;
  for (int64_t bhi = 0; bhi < heads; ++bhi)
    for (int64_t iq = 0; iq < nQ; ++iq)
      for (int64_t jk = 0; jk < nK; ++jk) {
        int64_t live = 0, total = 0;
        ir::ScoreEnv env;
        env.b = bh ? bhi / a.numHeads : 0;
        env.h = bh ? bhi % a.numHeads : 0;
        for (int64_t q = iq * QT; q < std::min(a.seqQ, (iq + 1) * QT); ++q)
          for (int64_t k = jk * KT; k < std::min(a.seqK, (jk + 1) * KT); ++k) {
            env.q = q;
            env.k = k;
            live += ir::evalScoreExpr(a.mask, env) != 0;
            ++total;
          }
        st[(bhi * nQ + iq) * nK + jk] = live == 0 ? 0 : live == total ? 2 : 1;
      }
  return st;
}

}  // namespace

absl::Status addAttention(CpuModuleBuilder::Impl &I, const AttentionSpec &a, const std::string &symbol) {
  FUSEC_RETURN_IF_ERROR(checkCpuAttention(a));
  auto &B = I.B;
  const int W = I.lanes;
  const int64_t Hq = a.numHeads, Sq = a.seqQ, Sk = a.seqK, D = a.headDim, Dv = a.headDimV, G = a.groupSize();
  // Dynamic shapes: batch, sequence lengths and strides may be symbolic;
  // heads and head dims size the workspace and must be static.
  for (const char *f : {"numHeads", "kvHeads", "headDim", "headDimV"})
    if (a.symbolic.count(f))
      return bad(absl::StrCat("dynamic shapes: attention ", f, " = ", a.symbolic.at(f).str(),
                              " (heads and head dims must be static; bind them with --shape)"));
  const bool dyn = !a.symbolic.empty();
  auto F = [&](const std::string &name, int64_t value) { return attnField(I, a, name, value); };
  const bool dynQ = a.symbolic.count("seqQ"), dynK = a.symbolic.count("seqK");
  const int64_t QT = dynQ ? kQueryTile : std::max<int64_t>(1, std::min(Sq, kQueryTile));
  const int64_t KT = dynK ? kKeyTile : std::max<int64_t>(1, std::min(Sk, kKeyTile));
  const int64_t nQ = (Sq + QT - 1) / QT, nK = (Sk + KT - 1) / KT;
  const int64_t tasks = a.batch * Hq * nQ;
  const bool convQ = a.qType != ir::DType::kF32, convK = a.kType != ir::DType::kF32,
             convV = a.vType != ir::DType::kF32;

  // Workspace (f32, 64-byte aligned pieces): S, O, m, l, then converted Q/K/V tiles.
  uint64_t off = 0;
  auto take = [&](int64_t floats) {
    const uint64_t at = off;
    off += align64(uint64_t(floats) * 4);
    return at / 4;
  };
  const uint64_t sAt = take(QT * KT), oAt = take(QT * Dv), mAt = take(QT), lAt = take(QT);
  const uint64_t qAt = convQ ? take(QT * D) : 0, kAt = convK ? take(KT * D) : 0, vAt = convV ? take(KT * Dv) : 0;
  const bool keyMask = a.keyMask >= 0;
  const uint64_t kmAt = keyMask ? take(KT) : 0;
  I.workspace = std::max(I.workspace, off);

  bool perHead = false;
  // Dynamic shapes: no compile-time table (every tile partial).
  const std::vector<uint8_t> states = dyn ? std::vector<uint8_t>{} : tileStates(a, QT, KT, nQ, nK, &perHead);
  llvm::GlobalVariable *stateTable = nullptr;
  if (!states.empty()) {
    llvm::Constant *init = llvm::ConstantDataArray::get(I.ctx, llvm::ArrayRef<uint8_t>(states));
    stateTable = new llvm::GlobalVariable(*I.mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                          symbol + ".tiles");
  }

  llvm::Function *body = I.beginBody(symbol);
  llvm::Value *qb = I.bufferPtr(0, storageType(I, a.qType));
  llvm::Value *kb = I.bufferPtr(1, storageType(I, a.kType));
  llvm::Value *vb = I.bufferPtr(2, storageType(I, a.vType));
  std::vector<llvm::Value *> biasPtrs;
  for (size_t i = 0; i < a.biases.size(); ++i)
    biasPtrs.push_back(I.bufferPtr(3 + static_cast<int>(i), storageType(I, a.biases[i].dtype)));
  llvm::Value *ob = I.bufferPtr(a.outputBuffer(), storageType(I, a.oType));
  // Plain variables, not a structured binding: C++17 lambdas cannot capture those.
  llvm::Value *sgemm, *ws;
  std::tie(sgemm, ws) = sgemmAndWorkspace(I, body);
  llvm::Value *S = B.CreateGEP(I.f32, ws, I.c64(sAt));
  llvm::Value *O = B.CreateGEP(I.f32, ws, I.c64(oAt));
  llvm::Value *M = B.CreateGEP(I.f32, ws, I.c64(mAt));
  llvm::Value *L = B.CreateGEP(I.f32, ws, I.c64(lAt));
  llvm::Value *Qf = B.CreateGEP(I.f32, ws, I.c64(qAt));
  llvm::Value *Kf = B.CreateGEP(I.f32, ws, I.c64(kAt));
  llvm::Value *Vf = B.CreateGEP(I.f32, ws, I.c64(vAt));
  llvm::Value *KM = B.CreateGEP(I.f32, ws, I.c64(kmAt));
  llvm::Value *kmAny = keyMask ? I.stackSlot(llvm::FixedVectorType::get(I.f32, W), "keylive") : nullptr;
  llvm::Value *mx = I.stackSlot(llvm::FixedVectorType::get(I.f32, W), "rowmax");
  llvm::Value *sum = I.stackSlot(llvm::FixedVectorType::get(I.f32, W), "rowsum");
  std::map<std::string, llvm::GlobalVariable *> tables;
  const float ninf = -std::numeric_limits<float>::infinity();

  // Copies rows [0, rows) x [0, cols) of \p src (dtype, row stride ld) to f32 dst (row stride cols).
  auto convertTile = [&](llvm::Value *src, ir::DType dt, llvm::Value *srcOff, llvm::Value *ld, llvm::Value *rows,
                         int64_t cols, llvm::Value *dst) {
    I.loop(I.c64(0), rows, 1, [&](llvm::Value *r) {
      dynVectorLoop(I, I.c64(cols), W, [&](llvm::Value *j, llvm::Value *mask) {
        llvm::Value *v = loadF32(I, src, dt, B.CreateAdd(B.CreateAdd(srcOff, B.CreateMul(r, ld)), j), W, mask);
        storeFrom(I, v, dst, ir::DType::kF32, B.CreateAdd(B.CreateMul(r, I.c64(cols)), j), mask);
      });
    }, "cvt");
  };

  // Sizes and strides in the body (run-time values under dynamic shapes).
  llvm::Value *SqV = F("seqQ", Sq), *SkV = F("seqK", Sk);
  llvm::Value *nQV = B.CreateSDiv(B.CreateAdd(SqV, I.c64(QT - 1)), I.c64(QT));
  llvm::Value *nKV = B.CreateSDiv(B.CreateAdd(SkV, I.c64(KT - 1)), I.c64(KT));
  std::array<llvm::Value *, 4> qS, kS, vS, oS;
  for (int k = 0; k < 4; ++k) {
    qS[k] = F(absl::StrCat("qStrides[", k, "]"), a.qStrides[k]);
    kS[k] = F(absl::StrCat("kStrides[", k, "]"), a.kStrides[k]);
    vS[k] = F(absl::StrCat("vStrides[", k, "]"), a.vStrides[k]);
    oS[k] = F(absl::StrCat("oStrides[", k, "]"), a.oStrides[k]);
  }

  I.loop(body->getArg(1), body->getArg(2), 1, [&](llvm::Value *t) {
    llvm::Value *bi = B.CreateSDiv(t, B.CreateMul(I.c64(Hq), nQV));
    llvm::Value *h = B.CreateSRem(B.CreateSDiv(t, nQV), I.c64(Hq));
    llvm::Value *iq = B.CreateSRem(t, nQV);
    llvm::Value *q0 = B.CreateMul(iq, I.c64(QT));
    llvm::Value *qr = smin(I, I.c64(QT), B.CreateSub(SqV, q0));
    llvm::Value *kh = B.CreateSDiv(h, I.c64(G));
    llvm::Value *qOff = B.CreateAdd(B.CreateAdd(B.CreateMul(bi, qS[0]), B.CreateMul(h, qS[1])), B.CreateMul(q0, qS[2]));
    llvm::Value *kOff0 = B.CreateAdd(B.CreateMul(bi, kS[0]), B.CreateMul(kh, kS[1]));
    llvm::Value *vOff0 = B.CreateAdd(B.CreateMul(bi, vS[0]), B.CreateMul(kh, vS[1]));
    llvm::Value *qPtr;
    llvm::Value *lda;
    if (convQ) {
      convertTile(qb, a.qType, qOff, qS[2], qr, D, Qf);
      qPtr = Qf;
      lda = I.c64(D);
    } else {
      qPtr = B.CreateGEP(I.f32, qb, qOff);
      lda = qS[2];
    }
    B.CreateMemSet(O, llvm::ConstantInt::get(I.i8, 0), uint64_t(QT * Dv) * 4, llvm::MaybeAlign(64));
    I.loop(I.c64(0), qr, 1, [&](llvm::Value *i) {
      B.CreateAlignedStore(llvm::ConstantFP::get(I.f32, ninf), B.CreateGEP(I.f32, M, i), llvm::Align(4));
      B.CreateAlignedStore(llvm::ConstantFP::get(I.f32, 0.0), B.CreateGEP(I.f32, L, i), llvm::Align(4));
    }, "init");

    I.loop(I.c64(0), nKV, 1, [&](llvm::Value *jk) {
      llvm::Value *k0 = B.CreateMul(jk, I.c64(KT));
      llvm::Value *kr = smin(I, I.c64(KT), B.CreateSub(SkV, k0));
      llvm::Value *state = I.c32(2);
      if (stateTable) {
        llvm::Value *idx = B.CreateAdd(B.CreateMul(iq, I.c64(nK)), jk);
        if (perHead)
          idx = B.CreateAdd(B.CreateMul(B.CreateAdd(B.CreateMul(bi, I.c64(Hq)), h), I.c64(nQ * nK)), idx);
        llvm::Value *p = B.CreateInBoundsGEP(stateTable->getValueType(), stateTable, {I.c64(0), idx});
        state = B.CreateZExt(B.CreateLoad(I.i8, p, "tile.state"), I.i32);
      }
      llvm::Value *visit = B.CreateICmpNE(state, I.c32(0));
      if (keyMask) {
        // The key mask of this tile into the workspace (0 / 1), and whether any key is live.
        B.CreateStore(splatF(I, I.f32, W, 0.0), kmAny);
        I.ifThen(visit, [&] {
          dynVectorLoop(I, kr, W, [&](llvm::Value *j, llvm::Value *lm) {
            ScoreLanes kl{I, a, W, nullptr, bi, I.c64(0), I.c64(0), B.CreateAdd(k0, j), lm, &biasPtrs, &tables};
            llvm::Value *keep = kl.asB(ScoreLanes::V{ScoreType::kFloat, kl.bias(a.keyMask)});
            if (lm) keep = B.CreateAnd(keep, lm);
            llvm::Value *f = B.CreateUIToFP(keep, llvm::FixedVectorType::get(I.f32, W));
            storeFrom(I, f, KM, ir::DType::kF32, j, lm);
            llvm::Value *cur = B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), kmAny);
            B.CreateStore(B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, cur, f), kmAny);
          });
        });
        llvm::Value *any = B.CreateFPMaxReduce(B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), kmAny));
        visit = B.CreateAnd(visit, B.CreateFCmpOGT(any, llvm::ConstantFP::get(I.f32, 0.0)));
      }
      I.ifThen(visit, [&] {
        llvm::Value *kOff = B.CreateAdd(kOff0, B.CreateMul(k0, kS[2]));
        llvm::Value *vOff = B.CreateAdd(vOff0, B.CreateMul(k0, vS[2]));
        llvm::Value *kPtr, *vPtr;
        llvm::Value *ldk, *ldv;
        if (convK) {
          convertTile(kb, a.kType, kOff, kS[2], kr, D, Kf);
          kPtr = Kf;
          ldk = I.c64(D);
        } else {
          kPtr = B.CreateGEP(I.f32, kb, kOff);
          ldk = kS[2];
        }
        if (convV) {
          convertTile(vb, a.vType, vOff, vS[2], kr, Dv, Vf);
          vPtr = Vf;
          ldv = I.c64(Dv);
        } else {
          vPtr = B.CreateGEP(I.f32, vb, vOff);
          ldv = vS[2];
        }
        // S = scale * Qt Ktᵀ.
        B.CreateCall(I.sgemmTy, sgemm,
                     {I.c32(0), I.c32(1), qr, kr, I.c64(D), llvm::ConstantFP::get(I.f32, a.scale), qPtr, lda,
                      kPtr, ldk, llvm::ConstantFP::get(I.f32, 0.0), S, I.c64(KT)});
        // The online-softmax update of each row; the mask only in partial tiles.
        auto rows = [&](bool masked) {
          I.loop(I.c64(0), qr, 1, [&](llvm::Value *i) {
            llvm::Value *q = B.CreateAdd(q0, i);
            llvm::Value *rowOff = B.CreateMul(i, I.c64(KT));
            B.CreateStore(splatF(I, I.f32, W, ninf), mx);
            dynVectorLoop(I, kr, W, [&](llvm::Value *j, llvm::Value *lm) {
              llvm::Value *s = loadF32(I, S, ir::DType::kF32, B.CreateAdd(rowOff, j), W, lm);
              ScoreLanes sl{I, a, W, s, bi, h, q, B.CreateAdd(k0, j), lm, &biasPtrs, &tables};
              llvm::Value *x = a.scoreMod.empty() ? s : sl.asF(sl.eval(a.scoreMod));
              if (masked) {
                ScoreLanes ml{I, a, W, nullptr, bi, h, q, B.CreateAdd(k0, j), lm, &biasPtrs, &tables};
                x = B.CreateSelect(ml.asB(ml.eval(a.mask)), x, splatF(I, I.f32, W, ninf));
              }
              if (keyMask) {
                llvm::Value *live = loadF32(I, KM, ir::DType::kF32, j, W, lm);
                x = B.CreateSelect(B.CreateFCmpONE(live, splatF(I, I.f32, W, 0.0)), x, splatF(I, I.f32, W, ninf));
              }
              if (lm) x = B.CreateSelect(lm, x, splatF(I, I.f32, W, ninf));
              storeFrom(I, x, S, ir::DType::kF32, B.CreateAdd(rowOff, j), lm);
              llvm::Value *cur = B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), mx);
              B.CreateStore(B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, cur, x), mx);
            });
            llvm::Value *tileMax = B.CreateFPMaxReduce(B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), mx));
            llvm::Value *mp = B.CreateGEP(I.f32, M, i), *lp = B.CreateGEP(I.f32, L, i);
            llvm::Value *mOld = B.CreateAlignedLoad(I.f32, mp, llvm::Align(4));
            llvm::Value *mNew = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, mOld, tileMax);
            llvm::Value *isNinf = B.CreateFCmpOEQ(mNew, llvm::ConstantFP::get(I.f32, ninf));
            llvm::Value *mSafe = B.CreateSelect(isNinf, llvm::ConstantFP::get(I.f32, 0.0), mNew);
            llvm::Value *alpha1 = mathUnary(I, program::UnaryOp::kExp,
                                            B.CreateVectorSplat(1, B.CreateFSub(mOld, mSafe)));
            llvm::Value *alpha = B.CreateExtractElement(alpha1, uint64_t{0});
            B.CreateAlignedStore(mNew, mp, llvm::Align(4));
            B.CreateStore(splatF(I, I.f32, W, 0.0), sum);
            dynVectorLoop(I, kr, W, [&](llvm::Value *j, llvm::Value *lm) {
              llvm::Value *x = loadF32(I, S, ir::DType::kF32, B.CreateAdd(rowOff, j), W, lm);
              llvm::Value *p = mathUnary(I, program::UnaryOp::kExp, B.CreateFSub(x, B.CreateVectorSplat(W, mSafe)));
              p = B.CreateSelect(B.CreateFCmpOEQ(x, splatF(I, I.f32, W, ninf)), splatF(I, I.f32, W, 0.0), p);
              storeFrom(I, p, S, ir::DType::kF32, B.CreateAdd(rowOff, j), lm);
              if (lm) p = B.CreateSelect(lm, p, splatF(I, I.f32, W, 0.0));
              llvm::Value *cur = B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), sum);
              B.CreateStore(B.CreateFAdd(cur, p), sum);
            });
            llvm::Value *rowSum = B.CreateFAddReduce(llvm::ConstantFP::get(I.f32, 0.0),
                                                     B.CreateLoad(llvm::FixedVectorType::get(I.f32, W), sum));
            llvm::Value *lOld = B.CreateAlignedLoad(I.f32, lp, llvm::Align(4));
            B.CreateAlignedStore(B.CreateFAdd(B.CreateFMul(lOld, alpha), rowSum), lp, llvm::Align(4));
            I.ifThen(B.CreateFCmpUNE(alpha, llvm::ConstantFP::get(I.f32, 1.0)), [&] {
              llvm::Value *av = B.CreateVectorSplat(W, alpha);
              dynVectorLoop(I, I.c64(Dv), W, [&](llvm::Value *j, llvm::Value *lm) {
                llvm::Value *at = B.CreateAdd(B.CreateMul(i, I.c64(Dv)), j);
                llvm::Value *o = loadF32(I, O, ir::DType::kF32, at, W, lm);
                storeFrom(I, B.CreateFMul(o, av), O, ir::DType::kF32, at, lm);
              });
            });
          }, "row");
        };
        if (stateTable && !a.mask.empty()) {
          I.ifThen(B.CreateICmpEQ(state, I.c32(1)), [&] { rows(true); });
          I.ifThen(B.CreateICmpEQ(state, I.c32(2)), [&] { rows(false); });
        } else {
          rows(!a.mask.empty());
        }
        // O += P Vt.
        B.CreateCall(I.sgemmTy, sgemm,
                     {I.c32(0), I.c32(0), qr, I.c64(Dv), kr, llvm::ConstantFP::get(I.f32, 1.0), S, I.c64(KT), vPtr,
                      ldv, llvm::ConstantFP::get(I.f32, 1.0), O, I.c64(Dv)});
      });
    }, "ktile");

    // O / l in the output dtype (l = 0: a fully masked row, NaN; with
    // masked_rows "mean" the row becomes the mean of V over all keys).
    I.loop(I.c64(0), qr, 1, [&](llvm::Value *i) {
      if (a.maskedRowsMean) {
        llvm::Value *lp = B.CreateGEP(I.f32, L, i);
        I.ifThen(B.CreateFCmpOEQ(B.CreateAlignedLoad(I.f32, lp, llvm::Align(4)), llvm::ConstantFP::get(I.f32, 0.0)),
                 [&] {
                   I.loop(I.c64(0), SkV, 1, [&](llvm::Value *kk) {
                     llvm::Value *vRow = B.CreateAdd(vOff0, B.CreateMul(kk, vS[2]));
                     dynVectorLoop(I, I.c64(Dv), W, [&](llvm::Value *j, llvm::Value *lm) {
                       llvm::Value *at = B.CreateAdd(B.CreateMul(i, I.c64(Dv)), j);
                       llvm::Value *o = loadF32(I, O, ir::DType::kF32, at, W, lm);
                       llvm::Value *v = loadF32(I, vb, a.vType, B.CreateAdd(vRow, j), W, lm);
                       storeFrom(I, B.CreateFAdd(o, v), O, ir::DType::kF32, at, lm);
                     });
                   }, "vmean");
                   B.CreateAlignedStore(B.CreateSIToFP(SkV, I.f32), lp, llvm::Align(4));
                 });
      }
      llvm::Value *l = B.CreateAlignedLoad(I.f32, B.CreateGEP(I.f32, L, i), llvm::Align(4));
      llvm::Value *inv = B.CreateVectorSplat(W, B.CreateFDiv(llvm::ConstantFP::get(I.f32, 1.0), l));
      llvm::Value *oOff = B.CreateAdd(B.CreateAdd(B.CreateMul(bi, oS[0]), B.CreateMul(h, oS[1])),
                                      B.CreateMul(B.CreateAdd(q0, i), oS[2]));
      dynVectorLoop(I, I.c64(Dv), W, [&](llvm::Value *j, llvm::Value *lm) {
        llvm::Value *o = loadF32(I, O, ir::DType::kF32, B.CreateAdd(B.CreateMul(i, I.c64(Dv)), j), W, lm);
        storeFrom(I, B.CreateFMul(o, inv), ob, a.oType, B.CreateAdd(oOff, j), lm);
      });
    }, "out");
  }, "task");
  B.CreateRetVoid();
  if (!dyn) {
    I.emitEntry(symbol, body, tasks, 1, tasks * QT * Sk * (D + Dv));
    return absl::OkStatus();
  }
  auto tasksV = [&] {
    llvm::Value *nq = B.CreateSDiv(B.CreateAdd(F("seqQ", Sq), I.c64(QT - 1)), I.c64(QT));
    return B.CreateMul(B.CreateMul(F("batch", a.batch), I.c64(Hq)), nq);
  };
  I.emitEntry(symbol, body, tasksV, [&] { return I.c64(1); },
              [&] { return B.CreateMul(B.CreateMul(tasksV(), I.c64(QT * (D + Dv))), F("seqK", Sk)); });
  return absl::OkStatus();
}

}  // namespace fusec::codegen::cpu
