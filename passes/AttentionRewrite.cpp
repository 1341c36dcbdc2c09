//===- AttentionRewrite.cpp - Softmax attention to one FusedAttention ---===//
//
// DESIGN.md "Attention rewrite". Attention is found by dataflow, starting at
// every Softmax:
//   1. softmax:  axis is the last axis of rank-4 scores [B, H, Sq, Sk].
//   2. output:   the Softmax result (through float Casts, one use each) is
//                the left operand of a MatMul P·V.
//   3. scores:   walking back from the Softmax input through one-use
//                elementwise ops reaches a MatMul Q·Kᵀ. The ops on the way
//                become the score expression (ir/ScoreExpr.h):
//                 - Mul/Div by a splat constant right after the MatMul (and
//                   on Q or on K, e.g. SDPA's sqrt(scale) on both) fold into
//                   `scale`;
//                 - Add/Sub/Mul/Div with a splat constant become literals,
//                   with any other tensor a bias input (`biasN`);
//                 - a constant bias of 0 / -inf that equals an index pattern
//                   (causal "k <= q", shifted diagonals, sliding windows
//                   "k <= q && (q - k) < W") becomes the `mask`;
//                 - a constant bias equal to slope[h] * (k - q) or slope[h] * k
//                   (ALiBi; BLOOM's per-key form), exactly as the f32
//                   product, with -inf entries as a mask, becomes that
//                   expression with a constant table;
//                 - Where(cond, score, fill) / Where(cond, fill, score): a
//                   constant cond matching an index pattern with fill -inf is
//                   a mask; otherwise "cond ? score : fill" with cond inline
//                   (index pattern) or a bias input and fill a literal or a
//                   bias input — finite fills stay finite (exporter's exact
//                   semantics for fully masked rows);
//                 - Tanh/Exp/Log/Abs/Sqrt/Neg as functions; float Casts are
//                   dropped (the op computes scores in f32).
//                 - a mask computed at run time (MaskTerms, below): the
//                   elementwise subgraph that builds it from constants and
//                   the padding input is translated back into an
//                   expression, constants into verified index patterns and
//                   small run-time tensors (the [B,1,1,Sk] padding vector)
//                   into bias inputs, so no [B,1,Sq,Sk] mask is read.
//                   Position aranges (Range folded to [Sq,1] / [1,Sk]
//                   constants, checked element by element) become the index
//                   terms "q + c" / "k", so a mask too large to fold
//                   (Sq*Sk > 2^22) is still recognised; its index-only
//                   conjuncts become the structural `mask`, diagonal bounds
//                   in canonical form (ir::diagonalBound: "k <= q + c",
//                   "q - k < w"), which the kernels skip tiles from. When
//                   it is the last op and has the form C ? 0 : F (Where, or
//                   (1 - C) * F) with F = -inf or a finite F <= -1e30
//                   (finfo.min), C's constant conjuncts become `mask` (key
//                   tiles skipped), the rest "(R ? score : -inf)", and a
//                   finite F sets masked_rows "mean" (ir/Ops.def): the
//                   graph's uniform result on rows F fills entirely.
//                 - key mask (key_mask, ir/Ops.def): a conjunct of C that
//                   is a run-time bool per key ([B,1,1,Sk], the padding
//                   vector; or x in a masked reason Equal(x, 0)) becomes
//                   the kernel's per-key mask operand (read once per key
//                   tile, tiles it empties skipped) instead of a bias read
//                   at every score; a constant [B,1,Sq,Sk] mask with the
//                   padding folded in is split into an index pattern times
//                   a constant [B,1,1,Sk] key mask (decomposeKeyMask; the
//                   product is checked against every element). A condition
//                   of masked reasons (Where(Or(r..), F, score)) is the And
//                   of their negations (De Morgan). Combinations of additive
//                   masks split when every masked entry holds the same F
//                   (fully masked rows stay uniform): Where(C, F, M2),
//                   Min(M1, M2), Add(M1, M2) of -inf masks (splitMask).
//                 - index patterns (indexPattern, each candidate evaluated on
//                   every element): causal with a diagonal offset (Sq != Sk:
//                   prefill after a cache), sliding windows, bands,
//                   chunked "q / C == k / C" (with or without causal).
//                 - fills that act as -inf: -inf and finite F <= -1e30 (f32
//                   and bf16 finfo.min), F <= -65504 on f16 scores; other
//                   two-valued constants ({0, -1e4}) become the exact
//                   expression "(pattern ? a : b)", not a bias input.
//                A mask is kept in `mask` only while every later op maps
//                -inf to -inf; otherwise it is applied inline in score_mod
//                as "(mask ? s : -inf)".
//   4. q/k/v:    K comes from the MatMul's right operand: a Transpose that
//                swaps its last two axes is dropped, any other permutation
//                becomes one Transpose to [B, Hkv, Sk, D]. GQA repeats
//                Reshape(Expand(Unsqueeze(x, 2), [B,Hkv,g,S,D]), [B,Hkv*g,S,D])
//                of K and V (the same g on both) are removed and recorded as
//                kv_num_heads. RoPE and projections stay outside.
// A candidate that fails a step is left alone and recorded as a refusal in
// ctx.fusionPlan.refusals: producer = the Q·Kᵀ MatMul (or the Softmax when
// no MatMul was reached), consumer = the Softmax, reason "attention rewrite:
// <step> failed: <why>"; the same text is left on the Softmax as attribute
// "fusec.attention_refused" (so fusec-opt output shows it). Statistic
// "attention-rewrite.fused".
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ScoreExpr.h"
#include "ir/ShapeInference.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/utils/PatternUtils.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

/// Attribute the pass leaves on a Softmax it refused (visible in text IR).
constexpr const char *kRefusalAttr = "fusec.attention_refused";

struct Failure {
  std::string step;
  std::string why;
};

/// A matched attention, ready to be rewritten.
struct Match {
  Node *softmax = nullptr;
  Node *qk = nullptr;
  Node *pv = nullptr;
  Value *q = nullptr;
  Value *kSrc = nullptr;            ///< K before the layout fix-up
  std::vector<int64_t> kPerm;       ///< perm applied to kSrc ([] = identity)
  std::string kName;                ///< name of the exporter's K Transpose, if any
  Value *v = nullptr;
  int64_t hq = 0, hkv = 0;
  double scale = 1.0;
  std::string scoreMod = "score";
  std::vector<std::string> masks;
  std::vector<Value *> biases;
  std::map<std::string, std::vector<float>> tables;
  std::vector<Node *> matched;
  bool maskedRowsMean = false;  ///< masked_rows "mean" (a finite exporter fill, splitMask)
  /// The per-key mask operand (key_mask): a run-time bool [.., 1, 1, Sk]
  /// value, or a constant one built from a folded mask (keyMaskConst).
  Value *keyMask = nullptr;
  std::optional<ir::Tensor> keyMaskConst;
};

std::string quoted(const Node *n) { return absl::StrCat("'", n->name(), "' (", n->opType(), ")"); }
std::string quotedV(const Value *v) { return absl::StrCat("'", v->name(), "'"); }

bool isFloatCast(const Node *n) {
  return n->kind() == OpKind::kCast &&
         ir::isFloat(static_cast<ir::DType>(n->getInt("to", 0)));
}

int64_t staticDim(const Value *v, int64_t d) {
  const ir::TensorType &t = v->type();
  if (!t.rankKnown || d >= t.rank()) return -1;
  return t.shape[d].isStatic() ? t.shape[d].value : -1;
}

/// The value's static shape, or nullopt.
std::optional<std::vector<int64_t>> staticShape(const Value *v) {
  const ir::TensorType &t = v->type();
  if (!t.rankKnown) return std::nullopt;
  std::vector<int64_t> s;
  for (const ir::Dim &d : t.shape) {
    if (!d.isStatic()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

std::string lit(double c) { return ir::scoreFloatLiteral(static_cast<float>(c)); }

/// Keep-pattern of a constant over [.., Sq, Sk]: element (q, k) of the last
/// two axes. Leading axes must repeat the same [Sq, Sk] slice.
struct KeepGrid {
  int64_t sq = 0, sk = 0;
  std::vector<char> keep;  ///< sq * sk
  /// Empty = every element counts; else 0 marks an element either value
  /// fits (a key no batch keeps, decomposeKeyMask).
  std::vector<char> care;
};

std::optional<KeepGrid> keepGrid(const ir::Tensor &t, int64_t sq, int64_t sk,
                                 const std::function<bool(double)> &isKeep) {
  if (t.rank() < 2 || sq <= 0 || sk <= 0) return std::nullopt;
  if (t.shape()[t.rank() - 2] != sq || t.shape()[t.rank() - 1] != sk) return std::nullopt;
  KeepGrid g{sq, sk, std::vector<char>(sq * sk), {}};
  const int64_t slice = sq * sk, n = t.numElements();
  for (int64_t i = 0; i < slice; ++i) g.keep[i] = isKeep(t.getDouble(i));
  for (int64_t i = slice; i < n; ++i)
    if (static_cast<char>(isKeep(t.getDouble(i))) != g.keep[i % slice]) return std::nullopt;
  return g;
}

bool verifyPattern(const KeepGrid &g, const std::string &text) {
  ir::ScoreExprContext ctx;
  ctx.allowScore = false;
  ctx.allowTables = false;
  auto e = ir::parseScoreExpr(text, ctx);
  if (!e.ok() || e->empty()) return false;
  ir::ScoreEnv env;
  for (int64_t q = 0; q < g.sq; ++q)
    for (int64_t k = 0; k < g.sk; ++k) {
      env.q = q;
      env.k = k;
      if (!g.care.empty() && !g.care[q * g.sk + k]) continue;
      if ((ir::evalScoreExpr(*e, env) != 0) != (g.keep[q * g.sk + k] != 0)) return false;
    }
  return true;
}

std::string offsetTerm(const char *var, int64_t d) {
  if (d == 0) return var;
  return d > 0 ? absl::StrCat(var, " + ", d) : absl::StrCat(var, " - ", -d);
}

/// An index-only expression equal to \p g: "" when everything is kept,
/// nullopt when no candidate matches.
std::optional<std::string> indexPattern(const KeepGrid &g) {
  bool allKept = true;
  for (size_t i = 0; i < g.keep.size() && allKept; ++i) allKept = g.keep[i] || (!g.care.empty() && !g.care[i]);
  if (allKept) return std::string();
  // Row intervals.
  int64_t firstRow = -1;
  int64_t hi0 = -1, lo0 = -1, loLast = -1, lastRow = -1;
  for (int64_t q = 0; q < g.sq; ++q) {
    int64_t lo = -1, hi = -1;
    for (int64_t k = 0; k < g.sk; ++k)
      if (g.keep[q * g.sk + k]) {
        if (lo < 0) lo = k;
        hi = k;
      }
    if (lo < 0) continue;
    if (firstRow < 0) { firstRow = q; hi0 = hi; lo0 = lo; }
    lastRow = q;
    loLast = lo;
  }
  if (firstRow < 0) return std::nullopt;  // everything masked: not an index pattern we emit
  std::vector<std::string> cands;
  const int64_t d = hi0 - firstRow;  // keep k <= q + d
  const std::string causal = absl::StrCat("k <= ", offsetTerm("q", d));
  cands.push_back(causal);
  const int64_t w = lastRow - loLast + 1;  // keep q - k < w
  cands.push_back(absl::StrCat(causal, " && q - k < ", w));
  cands.push_back(absl::StrCat("q - k < ", w));
  cands.push_back(absl::StrCat("k >= ", offsetTerm("q", lo0 - firstRow)));
  // A band around the diagonal (bidirectional local attention).
  cands.push_back(absl::StrCat("k <= ", offsetTerm("q", d), " && k >= ", offsetTerm("q", loLast - lastRow)));
  // Chunked (local) attention: blocks of C queries see the keys of their own
  // block (Llama-4 style), causal within it or not. C = the first row > 0
  // that starts a new block.
  for (int64_t q = 1; q < g.sq; ++q) {
    int64_t lo = -1;
    for (int64_t k = 0; k < g.sk && lo < 0; ++k)
      if (g.keep[q * g.sk + k]) lo = k;
    if (lo == q && firstRow == 0 && lo0 == 0) {
      cands.push_back(absl::StrCat("k <= q && q / ", q, " == k / ", q));
      cands.push_back(absl::StrCat("q / ", q, " == k / ", q));
      break;
    }
  }
  for (const std::string &c : cands)
    if (verifyPattern(g, c)) return c;
  return std::nullopt;
}

/// A constant keep-pattern over [B, 1, Sq, Sk] whose batches differ (the
/// padding vector folded into the mask): keep[b, q, k] == P(q, k) &&
/// KM[b, k] with P an index pattern (indexPattern) and KM a [B, 1, 1, Sk]
/// bool key mask. P is the OR of the batches' slices, KM the OR of each
/// batch's rows; the product is checked against every element.
struct KeyDecomposition {
  std::string pattern;  ///< "" = every (q, k) kept
  ir::Tensor keyMask;   ///< bool [B, 1, 1, Sk]
};

std::optional<KeyDecomposition> decomposeKeyMask(const ir::Tensor &t, int64_t batch, int64_t sq, int64_t sk,
                                                 const std::function<bool(double)> &isKeep) {
  if (t.rank() != 4 || batch <= 1 || sq <= 0 || sk <= 0) return std::nullopt;
  if (t.shape()[0] != batch || t.shape()[1] != 1 || t.shape()[2] != sq || t.shape()[3] != sk) return std::nullopt;
  const int64_t slice = sq * sk;
  std::vector<char> keep(batch * slice), km(batch * sk, 0);
  KeepGrid p{sq, sk, std::vector<char>(slice, 0), {}};
  for (int64_t i = 0; i < batch * slice; ++i) {
    keep[i] = isKeep(t.getDouble(i));
    if (!keep[i]) continue;
    p.keep[i % slice] = 1;
    km[(i / slice) * sk + i % sk] = 1;
  }
  for (int64_t i = 0; i < batch * slice; ++i)
    if (keep[i] != (p.keep[i % slice] && km[(i / slice) * sk + i % sk])) return std::nullopt;
  if (std::all_of(km.begin(), km.end(), [](char c) { return c != 0; })) return std::nullopt;  // not per key
  // Keys no batch keeps are free in P (the key mask zeroes them anyway).
  p.care.assign(slice, 0);
  for (int64_t i = 0; i < slice; ++i)
    for (int64_t b = 0; b < batch && !p.care[i]; ++b) p.care[i] = km[b * sk + i % sk];
  std::optional<std::string> pat = indexPattern(p);
  if (!pat) return std::nullopt;
  KeyDecomposition d{*pat, ir::Tensor(ir::DType::kBool, {batch, 1, 1, sk})};
  for (int64_t i = 0; i < batch * sk; ++i) d.keyMask.setDouble(i, km[i]);
  return d;
}

/// ALiBi: \p c (right-aligned against [B, H, Sq, Sk], leading dims 1)
/// equals slope[h] * (k - q) where finite; -inf entries form an index mask.
struct Alibi {
  std::vector<float> slopes;  ///< one per head (or one)
  std::string mask;           ///< "" = none
  bool keyOnly = false;       ///< slope[h] * k instead of slope[h] * (k - q)
};

std::optional<Alibi> matchAlibiAt(const ir::Tensor &c, int64_t hq, int64_t sq, int64_t sk, bool keyOnly) {
  const int64_t r = c.rank();
  if (r < 2 || c.shape()[r - 2] != sq || c.shape()[r - 1] != sk) return std::nullopt;
  int64_t heads = 1;
  if (r >= 3) heads = c.shape()[r - 3];
  if (heads != 1 && heads != hq) return std::nullopt;
  for (int64_t i = 0; i + 3 < r; ++i)
    if (c.shape()[i] != 1) return std::nullopt;
  auto dist = [&](int64_t q, int64_t k) { return keyOnly ? k : k - q; };
  Alibi a;
  a.keyOnly = keyOnly;
  bool anyNonZero = false;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t base = h * sq * sk;
    // Slope from the finite entry with the largest |distance|.
    int64_t best = 0;
    double slope = 0;
    bool found = false;
    for (int64_t q = 0; q < sq; ++q)
      for (int64_t k = 0; k < sk; ++k) {
        const double x = c.getDouble(base + q * sk + k);
        if (!std::isfinite(x) || dist(q, k) == 0) continue;
        if (std::llabs(dist(q, k)) > best) {
          best = std::llabs(dist(q, k));
          slope = x / static_cast<double>(dist(q, k));
          found = true;
        }
      }
    if (!found) return std::nullopt;
    // Exact: every finite entry is the f32 product the expression computes.
    const float s = static_cast<float>(slope);
    for (int64_t q = 0; q < sq; ++q)
      for (int64_t k = 0; k < sk; ++k) {
        const double x = c.getDouble(base + q * sk + k);
        if (std::isinf(x) && x < 0) continue;
        if (!std::isfinite(x)) return std::nullopt;
        const float want = s * static_cast<float>(dist(q, k));
        if (x != static_cast<double>(want)) return std::nullopt;
        if (x != 0) anyNonZero = true;
      }
    a.slopes.push_back(s);
  }
  if (!anyNonZero) return std::nullopt;
  auto g = keepGrid(c, sq, sk, [](double x) { return !(std::isinf(x) && x < 0); });
  if (!g) return std::nullopt;
  auto m = indexPattern(*g);
  if (!m) return std::nullopt;
  a.mask = *m;
  return a;
}

/// matchAlibiAt for slope[h] * (k - q), then slope[h] * k (BLOOM's form).
std::optional<Alibi> matchAlibi(const ir::Tensor &c, int64_t hq, int64_t sq, int64_t sk) {
  if (auto a = matchAlibiAt(c, hq, sq, sk, false)) return a;
  return matchAlibiAt(c, hq, sq, sk, true);
}


// --- masks computed in the graph ---------------------------------------------
//
// Exporters build the additive attention mask at run time from the padding
// input (HF: Where(And(causal, padding[b, k]), 0, finfo.min) over
// [B, 1, Sq, Sk], or (1 - mask) * finfo.min). Constant folding leaves the
// index part (causal, sliding window) a constant and the padding part a
// small runtime tensor, so the mask reaches the Add as a materialised
// [B, 1, Sq, Sk] tensor. MaskTerms translates the elementwise graph that
// computes it back into a score expression over the index variables and
// small bias inputs (the padding vector), checking every constant against
// the index pattern it is replaced by (indexPattern/verifyPattern above),
// never assuming one.

/// True if \p t broadcasts to the scores type \p st ([B, H, Sq, Sk]):
/// rank <= 4, right-aligned, each dim 1 or equal to the scores' dim.
bool broadcastsToScores(const ir::TensorType &t, const ir::TensorType &st) {
  if (!t.rankKnown || t.rank() > 4) return false;
  for (int64_t d = 0; d < t.rank(); ++d) {
    const ir::Dim &bd = t.shape[d];
    if (bd.isStatic() && bd.value == 1) continue;
    if (!(bd == st.shape[4 - t.rank() + d])) return false;
  }
  return true;
}

/// True if \p v is a run-time bool (\p anyDtype: or integer) value that can
/// be the key mask: shape [.., 1, 1, Sk] against the scores \p st (1 at Hq
/// and Sq, static).
bool perKeyBool(const Value *v, const ir::TensorType &st, bool anyDtype = false) {
  const ir::TensorType &t = v->type();
  if (v->isConstant() || !t.rankKnown || t.rank() > 4 || t.rank() < 1) return false;
  // Integers too with anyDtype, not floats: lower-precision casts float
  // operands of the attention, and f16 would round tiny values to 0.
  if (anyDtype ? !(ir::isInteger(t.dtype) || t.dtype == ir::DType::kBool) : t.dtype != ir::DType::kBool)
    return false;
  if (!broadcastsToScores(t, st)) return false;
  for (int64_t d = 0; d < t.rank(); ++d) {
    const int64_t pos = 4 - t.rank() + d;
    if ((pos == 1 || pos == 2) && !(t.shape[d].isStatic() && t.shape[d].value == 1)) return false;
  }
  return true;
}

/// One translated subgraph: ScoreExpr text, its type, and whether it reads a
/// bias input (run-time data).
struct MaskTerm {
  std::string text;
  ir::ScoreType type = ir::ScoreType::kFloat;
  bool readsBias = false;
};

class MaskTerms {
 public:
  /// \p scores: the [B, H, Sq, Sk] score type; \p addBias makes a bias input
  /// of a run-time leaf ("biasN") or fails for one that does not broadcast.
  MaskTerms(const ir::TensorType &scores, int64_t sq, int64_t sk,
            std::function<std::optional<std::string>(Value *)> addBias)
      : st_(scores), sq_(sq), sk_(sk), addBias_(std::move(addBias)) {}

  /// The expression of \p v, or nullopt when a node on the way is not
  /// translated exactly (other float dtypes than f32, integer division by
  /// anything but a non-zero literal,
  /// integer arithmetic on run-time data, a constant that is not splat or an
  /// index pattern, a run-time leaf as large as the score matrix, more than
  /// 64 nodes).
  std::optional<MaskTerm> term(Value *v, int depth = 0) {
    if (++visited_ > 64 || depth > 32 || !v) return std::nullopt;
    const ir::TensorType &t = v->type();
    const ir::DType dt = t.dtype;
    const bool isFloat = ir::isFloat(dt);
    if (isFloat && dt != ir::DType::kF32) return std::nullopt;
    if (!isFloat && dt != ir::DType::kBool && dt != ir::DType::kI64) return std::nullopt;
    if (!broadcastsToScores(t, st_)) return std::nullopt;
    const ir::ScoreType type = isFloat ? ir::ScoreType::kFloat
                               : dt == ir::DType::kBool ? ir::ScoreType::kBool : ir::ScoreType::kInt;
    if (v->constant()) return constantTerm(*v->constant(), type);
    if (std::optional<MaskTerm> r = rangeTerm(v, type)) return r;
    Node *p = v->producer();
    if (!p) return leaf(v, type);
    auto in = [&](int i) { return term(p->input(i), depth + 1); };
    auto bin = [&](const char *op, ir::ScoreType ty) -> std::optional<MaskTerm> {
      auto a = in(0), b = in(1);
      if (!a || !b) return std::nullopt;
      return MaskTerm{absl::StrCat("(", a->text, " ", op, " ", b->text, ")"), ty, a->readsBias || b->readsBias};
    };
    switch (p->kind()) {
      case OpKind::kIdentity: return in(0);
      case OpKind::kWhere: {
        auto c = in(0), a = in(1), b = in(2);
        if (!c || !a || !b) return std::nullopt;
        return MaskTerm{absl::StrCat("(", c->text, " ? ", a->text, " : ", b->text, ")"), type,
                        c->readsBias || a->readsBias || b->readsBias};
      }
      case OpKind::kAnd: return bin("&&", ir::ScoreType::kBool);
      case OpKind::kOr: return bin("||", ir::ScoreType::kBool);
      case OpKind::kXor: {
        auto a = in(0), b = in(1);
        if (!a || !b) return std::nullopt;
        return MaskTerm{absl::StrCat("((", a->text, " != 0) != (", b->text, " != 0))"), ir::ScoreType::kBool,
                        a->readsBias || b->readsBias};
      }
      case OpKind::kNot: {
        auto a = in(0);
        if (!a) return std::nullopt;
        return MaskTerm{absl::StrCat("(!", a->text, ")"), ir::ScoreType::kBool, a->readsBias};
      }
      case OpKind::kEqual: return bin("==", ir::ScoreType::kBool);
      case OpKind::kLess: return bin("<", ir::ScoreType::kBool);
      case OpKind::kLessOrEqual: return bin("<=", ir::ScoreType::kBool);
      case OpKind::kGreater: return bin(">", ir::ScoreType::kBool);
      case OpKind::kGreaterOrEqual: return bin(">=", ir::ScoreType::kBool);
      case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: {
        const char *sym = p->kind() == OpKind::kAdd ? "+" : p->kind() == OpKind::kSub ? "-" : "*";
        auto r = bin(sym, type);
        // int64 arithmetic is exact in the expression only on integer
        // literals; bias inputs are read as f32.
        if (r && type != ir::ScoreType::kFloat && r->readsBias) return std::nullopt;
        return r;
      }
      case OpKind::kDiv: {
        if (type == ir::ScoreType::kFloat) return bin("/", type);
        // Integer division by a non-zero literal (a chunk index q / C):
        // ONNX, the interpreter and ScoreExpr all truncate toward zero. A
        // divisor read at run time (0 is an error in ONNX, 0 in ScoreExpr)
        // is not translated.
        const std::optional<double> d = splatConstant(p->input(1));
        if (!d || *d == 0 || *d != std::trunc(*d)) return std::nullopt;
        auto r = bin("/", type);
        if (r && r->readsBias) return std::nullopt;
        return r;
      }
      case OpKind::kNeg: {
        auto a = in(0);
        if (!a || (type != ir::ScoreType::kFloat && a->readsBias)) return std::nullopt;
        return MaskTerm{absl::StrCat("(-", a->text, ")"), type, a->readsBias};
      }
      case OpKind::kMin: case OpKind::kMax: {
        if (p->numInputs() != 2) return leaf(v, type);
        auto a = in(0), b = in(1);
        if (!a || !b) return std::nullopt;
        return MaskTerm{absl::StrCat(p->kind() == OpKind::kMin ? "min(" : "max(", a->text, ", ", b->text, ")"),
                        type, a->readsBias || b->readsBias};
      }
      case OpKind::kCast: {
        const ir::DType from = p->input(0)->type().dtype;
        auto a = in(0);
        if (!a) return std::nullopt;
        if (dt == ir::DType::kBool) return MaskTerm{absl::StrCat("(", a->text, " != 0)"), type, a->readsBias};
        if (isFloat) {  // bool/int -> f32 (bias reads are f32 already), f32 -> f32
          if (a->type == ir::ScoreType::kFloat) return a;
          if (a->readsBias) return MaskTerm{a->text, type, true};
          return MaskTerm{absl::StrCat("(", a->text, " + 0.0)"), type, false};
        }
        // -> int64: exact from bool or int only.
        if (ir::isFloat(from) || a->readsBias) return std::nullopt;
        return MaskTerm{absl::StrCat("(", a->text, " + 0)"), type, false};
      }
      // Views and broadcasts that keep every element at its right-aligned
      // position (a mask kept from folding under dynamic shapes reaches the
      // scores through them: HF's mask[None, None].expand(B, 1, -1, -1)).
      case OpKind::kExpand: return in(0);
      case OpKind::kUnsqueeze: case OpKind::kSqueeze: case OpKind::kReshape: case OpKind::kFlatten: {
        if (!sameTrailingDims(p->input(0)->type(), t)) return leaf(v, type);
        return in(0);
      }
      case OpKind::kConstantOfShape: {
        const ir::Attribute *a = p->attr("value");
        const double x = a && a->kind() == ir::Attribute::Kind::kTensor && a->t().numElements() == 1
                             ? a->t().getDouble(0) : 0.0;
        return constantTerm(ir::Tensor::fromDoubles(dt, {1}, {x}), type);
      }
      case OpKind::kTrilu: {
        // Trilu(x, K): x where k - q <= K (lower) or k - q >= K (upper), 0
        // elsewhere, over the last two axes (q, k).
        if (t.rank() < 2) return std::nullopt;
        int64_t kd = 0;
        if (p->numInputs() > 1 && p->input(1)) {
          const std::optional<double> c = splatConstant(p->input(1));
          if (!c) return std::nullopt;
          kd = static_cast<int64_t>(*c);
        }
        auto x = in(0);
        if (!x) return std::nullopt;
        const std::string cond = p->attrI("upper") ? absl::StrCat("(k >= (q + ", kd, "))")
                                                   : absl::StrCat("(k <= (q + ", kd, "))");
        if (type == ir::ScoreType::kBool && x->text == "1") return MaskTerm{cond, type, false};
        const std::string zero = type == ir::ScoreType::kFloat ? "0.0" : "0";
        return MaskTerm{absl::StrCat("(", cond, " ? ", x->text, " : ", zero, ")"), type, x->readsBias};
      }
      default:
        return leaf(v, type);
    }
  }

 private:
  /// A position arange computed at run time (under dynamic shapes the
  /// Range of the positions is kept from folding, for the position ids it
  /// also feeds): \p v has one non-unit dim, at the query or the key axis,
  /// and views (Unsqueeze, Reshape, Squeeze, Flatten, Identity) and integer
  /// Casts lead back to a Range with constant start and delta, so element
  /// i along that axis is start + i * delta: "(start + delta * q)".
  std::optional<MaskTerm> rangeTerm(Value *v, ir::ScoreType type) const {
    if (type == ir::ScoreType::kBool) return std::nullopt;
    const ir::TensorType &t = v->type();
    if (!t.rankKnown || t.rank() < 1 || t.rank() > 4 || !t.isStatic()) return std::nullopt;
    int axis = -1;
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (t.shape[d].value == 1) continue;
      const int pos = static_cast<int>(4 - t.rank() + d);
      if (axis >= 0 || (pos != 2 && pos != 3)) return std::nullopt;
      axis = pos;
    }
    if (axis < 0) return std::nullopt;
    const Value *x = v;
    for (int hops = 0; hops < 16 && x && x->producer(); ++hops) {
      const Node *n = x->producer();
      switch (n->kind()) {
        case OpKind::kUnsqueeze: case OpKind::kReshape: case OpKind::kSqueeze: case OpKind::kFlatten:
        case OpKind::kIdentity:
          x = n->input(0);
          continue;
        case OpKind::kCast:
          if (!ir::isInteger(n->input(0)->type().dtype) || !ir::isInteger(x->type().dtype)) return std::nullopt;
          x = n->input(0);
          continue;
        case OpKind::kRange: {
          const std::optional<double> start = splatConstant(n->input(0)), delta = splatConstant(n->input(2));
          if (!start || !delta || *delta == 0 || *start != std::trunc(*start) || *delta != std::trunc(*delta) ||
              std::abs(*start) > 1e9 || std::abs(*delta) > 1e9)
            return std::nullopt;
          const char *var = axis == 2 ? "q" : "k";
          const int64_t a = static_cast<int64_t>(*delta), b = static_cast<int64_t>(*start);
          std::string text = a == 1 ? var : absl::StrCat("(", a, " * ", var, ")");
          if (b != 0) text = absl::StrCat("(", text, " + ", b, ")");
          if (type == ir::ScoreType::kFloat) {
            if (!ir::isFloat(x->type().dtype)) return std::nullopt;  // a Cast int -> float stops the walk above
            text = absl::StrCat("(", text, " + 0.0)");
          }
          return MaskTerm{text, type, false};
        }
        default: return std::nullopt;
      }
    }
    return std::nullopt;
  }

  /// True if \p a and \p b (static) are the same shape once their leading
  /// 1s are dropped: a view that only adds or removes leading unit axes,
  /// so every element keeps its right-aligned position.
  static bool sameTrailingDims(const ir::TensorType &a, const ir::TensorType &b) {
    if (!a.rankKnown || !b.rankKnown || !a.isStatic() || !b.isStatic()) return false;
    auto strip = [](const ir::TensorType &t) {
      std::vector<int64_t> d;
      for (const ir::Dim &x : t.shape) {
        if (d.empty() && x.value == 1) continue;
        d.push_back(x.value);
      }
      return d;
    };
    return strip(a) == strip(b);
  }

  /// A run-time tensor read as a bias input: only one smaller than the score
  /// matrix per (b, h) (the padding vector [B, 1, 1, Sk]); a full
  /// [.., Sq, Sk] leaf would be the materialised mask again.
  std::optional<MaskTerm> leaf(Value *v, ir::ScoreType type) {
    const ir::TensorType &t = v->type();
    auto dimOf = [&](int64_t fromEnd) -> int64_t {  // 1 = broadcast
      const int64_t d = t.rank() - fromEnd;
      if (d < 0) return 1;
      return t.shape[d].isStatic() ? t.shape[d].value : -1;
    };
    if (dimOf(2) != 1 && dimOf(1) != 1 && sq_ != 1 && sk_ != 1) return std::nullopt;
    if (type == ir::ScoreType::kInt) return std::nullopt;  // read as f32: exact only for small values
    auto b = addBias_(v);
    if (!b) return std::nullopt;
    return MaskTerm{*b, ir::ScoreType::kFloat, true};
  }

  std::optional<MaskTerm> constantTerm(const ir::Tensor &c, ir::ScoreType type) {
    auto literal = [&](double x) {
      if (type == ir::ScoreType::kFloat) return lit(x);
      if (type == ir::ScoreType::kBool) return std::string(x != 0 ? "1" : "0");
      return absl::StrCat(static_cast<int64_t>(x));
    };
    if (c.numElements() == 0) return std::nullopt;
    if (std::optional<MaskTerm> a = affineIndexTerm(c, type)) return a;
    std::vector<double> values;
    for (int64_t i = 0; i < c.numElements() && values.size() <= 2; ++i) {
      const double x = c.getDouble(i);
      if (std::find(values.begin(), values.end(), x) == values.end() &&
          !(std::isnan(x) && std::any_of(values.begin(), values.end(), [](double y) { return std::isnan(y); })))
        values.push_back(x);
    }
    if (values.size() == 1) return MaskTerm{literal(values[0]), type, false};
    if (values.size() != 2 || std::isnan(values[0]) || std::isnan(values[1])) return std::nullopt;
    if (type == ir::ScoreType::kBool) {
      auto g = keepGrid(c, sq_, sk_, [](double x) { return x != 0; });
      std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt;
      if (!pat || pat->empty()) return std::nullopt;
      return MaskTerm{absl::StrCat("(", *pat, ")"), type, false};
    }
    // Two values over [.., Sq, Sk]: an index pattern choosing between them.
    const double a = values[0], b = values[1];
    auto g = keepGrid(c, sq_, sk_, [&](double x) { return x == a; });
    if (!g) return std::nullopt;
    std::optional<std::string> pat = indexPattern(*g);
    if (!pat || pat->empty()) {
      // Try the complement (the first value may be the masked one).
      auto g2 = keepGrid(c, sq_, sk_, [&](double x) { return x == b; });
      std::optional<std::string> pat2 = g2 ? indexPattern(*g2) : std::nullopt;
      if (!pat2 || pat2->empty()) return std::nullopt;
      return MaskTerm{absl::StrCat("((", *pat2, ") ? ", literal(b), " : ", literal(a), ")"), type, false};
    }
    return MaskTerm{absl::StrCat("((", *pat, ") ? ", literal(a), " : ", literal(b), ")"), type, false};
  }

  /// A constant that varies along the query or the key axis only (every
  /// other dim 1, right-aligned against [B, H, Sq, Sk]) as a*i + b with
  /// integers a != 0 and b, checked on every element: the positions an
  /// exporter builds with Range (HF's cache_position and kv_idx aranges,
  /// folded to [S, 1] and [1, S] constants when the [S, S] mask itself is
  /// too large to fold) as "(a * q + b)" / "(a * k + b)"; integer chunk
  /// indices (q + o) / C + b as such. Float constants only while every
  /// value is an integer below 2^24 (exact in f32).
  std::optional<MaskTerm> affineIndexTerm(const ir::Tensor &c, ir::ScoreType type) const {
    if (type == ir::ScoreType::kBool) return std::nullopt;
    const int64_t r = c.rank();
    if (r < 1 || r > 4) return std::nullopt;
    int axis = -1;  // 2 = q, 3 = k (position in [B, H, Sq, Sk])
    for (int64_t d = 0; d < r; ++d) {
      if (c.shape()[d] == 1) continue;
      const int pos = static_cast<int>(4 - r + d);
      if (axis >= 0 || (pos != 2 && pos != 3)) return std::nullopt;
      axis = pos;
    }
    if (axis < 0) return std::nullopt;
    const int64_t n = c.numElements();
    if (n < 2 || n != (axis == 2 ? sq_ : sk_)) return std::nullopt;
    const double limit = type == ir::ScoreType::kFloat ? 16777216.0 : 9007199254740992.0;
    const char *var = axis == 2 ? "q" : "k";
    const double b = c.getDouble(0), a = c.getDouble(1) - b;
    bool affine = a != 0 && a == std::trunc(a) && b == std::trunc(b) && std::abs(a) <= 1e9 && std::abs(b) <= 1e9;
    for (int64_t i = 0; affine && i < n; ++i) {
      const double x = c.getDouble(i);
      affine = x == a * static_cast<double>(i) + b && std::abs(x) < limit;
    }
    if (affine) {
      std::string text = a == 1 ? var : absl::StrCat("(", static_cast<int64_t>(a), " * ", var, ")");
      if (b != 0) text = absl::StrCat("(", text, " + ", static_cast<int64_t>(b), ")");
      if (type == ir::ScoreType::kFloat) text = absl::StrCat("(", text, " + 0.0)");
      return MaskTerm{text, type, false};
    }
    // A chunk index (an arange divided by C and folded, as chunked
    // attention builds it): (i + o) / C + b with runs of C equal values
    // rising by 1, the first run C - o long; checked on every element.
    if (type != ir::ScoreType::kInt) return std::nullopt;
    int64_t first = 0;
    while (first < n && c.getDouble(first) == b) ++first;
    if (first == n) return std::nullopt;
    int64_t chunk = 0;
    while (first + chunk < n && c.getDouble(first + chunk) == b + 1) ++chunk;
    if (chunk < 2 || first > chunk || (first + chunk < n && c.getDouble(first + chunk) != b + 2)) return std::nullopt;
    const int64_t o = chunk - first, bi = static_cast<int64_t>(b);
    for (int64_t i = 0; i < n; ++i)
      if (c.getDouble(i) != static_cast<double>((i + o) / chunk + bi)) return std::nullopt;
    std::string text = absl::StrCat("(", o ? absl::StrCat("(", var, " + ", o, ")") : std::string(var), " / ", chunk, ")");
    if (bi != 0) text = absl::StrCat("(", text, " + ", bi, ")");
    return MaskTerm{text, type, false};
  }

  const ir::TensorType &st_;
  int64_t sq_, sk_;
  std::function<std::optional<std::string>(Value *)> addBias_;
  int visited_ = 0;
};

/// An index-only keep condition \p text (a translated term that reads no
/// bias input, over q and k) as structural mask conjuncts: each conjunct
/// that bounds the diagonal in the canonical text indexPattern writes
/// ("k <= q + 8", "q - k < 4"; ir::diagonalBound), others as printed. The
/// translation is exact op by op, so the conjuncts need no check against
/// a materialised tensor, which for [S, S] beyond the folding limit does
/// not exist. nullopt when \p text reads neither q nor k (a literal) or
/// does not parse as a mask.
std::optional<std::vector<std::string>> indexConjuncts(const std::string &text) {
  ir::ScoreExprContext ctx;
  ctx.allowScore = false;
  ctx.allowTables = false;
  absl::StatusOr<ir::ScoreExpr> e = ir::parseScoreExpr(text, ctx);
  if (!e.ok() || e->empty() || (!e->usesIndex(ir::ScoreOp::kQ) && !e->usesIndex(ir::ScoreOp::kK)))
    return std::nullopt;
  // A comparison of two linear forms that holds at every q, k >= 0 (HF's
  // bidirectional "q >= 0") keeps everything: dropped, as a folded
  // all-true constant would be.
  auto alwaysTrue = [&](int id) {
    const ir::ScoreNode &n = e->node(id);
    ir::ScoreOp op = n.op;
    if (op != ir::ScoreOp::kGe && op != ir::ScoreOp::kGt && op != ir::ScoreOp::kLe && op != ir::ScoreOp::kLt)
      return false;
    auto a = ir::indexLinear(*e, n.a), b = ir::indexLinear(*e, n.b);
    if (!a || !b) return false;
    if (op == ir::ScoreOp::kLe || op == ir::ScoreOp::kLt) {  // b - a >= 0 / > 0
      std::swap(a, b);
      op = op == ir::ScoreOp::kLe ? ir::ScoreOp::kGe : ir::ScoreOp::kGt;
    }
    const ir::IndexLinear d{a->cq - b->cq, a->ck - b->ck, a->c0 - b->c0};
    return d.cq >= 0 && d.ck >= 0 && (op == ir::ScoreOp::kGe ? d.c0 >= 0 : d.c0 > 0);
  };
  std::vector<std::string> out;
  for (int id : ir::scoreConjuncts(*e, e->root)) {
    if (alwaysTrue(id)) continue;
    if (std::optional<ir::DiagonalBound> d = ir::diagonalBound(*e, id)) {
      out.push_back(ir::diagonalBoundText(*d));
      continue;
    }
    ir::ScoreExpr sub = *e;
    sub.root = id;
    out.push_back(sub.str());
  }
  return out;
}

/// The structural split of an additive mask M (the Add's other operand):
/// M = C ? 0 : F with C a conjunction, F = -inf or F <= -1e30. Index-only
/// conjuncts (constant patterns) become `mask` conjuncts, so whole key tiles
/// are skipped; the rest stays in score_mod as "(R ? score : -inf)".
struct MaskSplit {
  std::vector<std::string> structural;  ///< index-only conjuncts (verified patterns)
  std::vector<std::string> residual;    ///< conjuncts that read bias inputs
  bool finiteFill = false;              ///< F is finite: masked_rows "mean"
  double fill = 0;                      ///< F (every masked entry holds it)
  /// A conjunct that is a per-key bool (perKeyBool): the key_mask operand.
  Value *keyMask = nullptr;
  /// A constant conjunct over [B, 1, Sq, Sk] split into an index pattern
  /// (in structural) and this [B, 1, 1, Sk] key mask (decomposeKeyMask).
  std::optional<ir::Tensor> keyMaskConst;
};

/// Finite fills at or below this act as -inf in f32 softmax, and make a fully
/// masked row uniform (every score + F rounds to F while |score| < 1e22).
constexpr double kFillAsNegInf = -1e30;

/// Whether an exporter's fill \p f acts as -inf on scores of dtype \p dt:
/// f <= -1e30 (f32 and bf16: finfo.min, -3.4e38, and the -inf that f32
/// finfo.min becomes in bf16/f16), for f16 scores f <= -65504 (its
/// finfo.min, what saturating f32 finfo.min gives). -1e4, -1e9 do not (they
/// stay exact expressions).
bool fillActsAsNegInf(double f, ir::DType dt) {
  return dt == ir::DType::kF16 ? f <= -65504.0 : f <= kFillAsNegInf;
}

/// The leaves of the \p kind trees (Or, And) rooted at \p roots, left to
/// right; at most 16 leaves are expanded (the rest stay as they are).
std::vector<Value *> treeLeaves(std::vector<Value *> roots, OpKind kind) {
  std::vector<Value *> leaves;
  while (!roots.empty()) {
    Value *c = roots.back();
    roots.pop_back();
    if (Node *t = producerOf(c, kind); t && leaves.size() + roots.size() < 16) {
      roots.push_back(t->input(1));
      roots.push_back(t->input(0));
    } else {
      leaves.push_back(c);
    }
  }
  return leaves;
}

/// The split of "cond ? score : fill" (\p keepIsTrue; else "cond ? fill :
/// score"), or nullopt when fill is not -inf or <= -1e30 or a conjunct does
/// not translate.
std::optional<MaskSplit> splitCondition(Value *cond, bool keepIsTrue, double fill, int64_t sq, int64_t sk,
                                        const ir::TensorType &st, MaskTerms &terms) {
  if (!fillActsAsNegInf(fill, st.dtype)) return std::nullopt;  // -inf, or finite and huge
  MaskSplit split;
  split.finiteFill = std::isfinite(fill);
  split.fill = fill;
  const int64_t batch = st.rank() == 4 && st.shape[0].isStatic() ? st.shape[0].value : -1;
  if (cond->constant()) {
    // A folded condition: an index pattern, or one times a key mask.
    auto isKeep = [&](double x) { return (x != 0) == keepIsTrue; };
    auto g = keepGrid(*cond->constant(), sq, sk, isKeep);
    if (std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt) {
      if (!pat->empty()) split.structural.push_back(*pat);
      return split;
    }
    auto d = decomposeKeyMask(*cond->constant(), batch, sq, sk, isKeep);
    if (!d) return std::nullopt;
    if (!d->pattern.empty()) split.structural.push_back(d->pattern);
    split.keyMaskConst = std::move(d->keyMask);
    return split;
  }
  // Values whose truth is a keep conjunct.
  std::vector<Value *> conj;
  if (keepIsTrue) {
    conj.push_back(cond);
  } else if (Node *n = producerOf(cond, OpKind::kNot)) {
    conj.push_back(n->input(0));
  } else {
    // cond says "masked": an Or tree of reasons; keep is the And of their
    // negations (De Morgan). Not(x) gives x; Equal(x, 0) with x per key the
    // key mask x (kept where x != 0); a constant its zeros as a pattern.
    std::vector<Value *> reasons = treeLeaves({cond}, OpKind::kOr);
    for (Value *r : reasons) {
      if (Node *n = producerOf(r, OpKind::kNot)) {
        conj.push_back(n->input(0));
        continue;
      }
      if (Node *eq = producerOf(r, OpKind::kEqual); eq && !split.keyMask && !split.keyMaskConst) {
        Value *x = nullptr;
        for (int i = 0; i < 2 && !x; ++i)
          if (auto z = splatConstant(eq->input(1 - i)); z && *z == 0 && perKeyBool(eq->input(i), st, true))
            x = eq->input(i);
        if (x) {
          split.keyMask = x;
          continue;
        }
      }
      if (r->constant() && !splatConstant(r)) {
        auto isKeep = [](double x) { return x == 0; };
        auto g = keepGrid(*r->constant(), sq, sk, isKeep);
        if (std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt) {
          if (!pat->empty()) split.structural.push_back(*pat);
          continue;
        }
        if (!split.keyMask && !split.keyMaskConst) {
          if (auto d = decomposeKeyMask(*r->constant(), batch, sq, sk, isKeep)) {
            if (!d->pattern.empty()) split.structural.push_back(d->pattern);
            split.keyMaskConst = std::move(d->keyMask);
            continue;
          }
        }
      }
      auto t = terms.term(r);
      if (!t) return std::nullopt;
      const std::string keep = absl::StrCat("(!", t->text, ")");
      if (std::optional<std::vector<std::string>> idx = t->readsBias ? std::nullopt : indexConjuncts(keep)) {
        split.structural.insert(split.structural.end(), idx->begin(), idx->end());
        continue;
      }
      split.residual.push_back(keep);
    }
  }
  // Conjuncts of an And tree.
  std::vector<Value *> leaves = treeLeaves(std::move(conj), OpKind::kAnd);
  for (Value *c : leaves) {
    if (c->constant() && !splatConstant(c)) {
      auto g = keepGrid(*c->constant(), sq, sk, [](double x) { return x != 0; });
      std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt;
      if (pat) {
        if (!pat->empty()) split.structural.push_back(*pat);
        continue;
      }
      if (!split.keyMask && !split.keyMaskConst) {
        if (auto d = decomposeKeyMask(*c->constant(), batch, sq, sk, [](double x) { return x != 0; })) {
          if (!d->pattern.empty()) split.structural.push_back(d->pattern);
          split.keyMaskConst = std::move(d->keyMask);
          continue;
        }
      }
    }
    if (!split.keyMask && !split.keyMaskConst && perKeyBool(c, st)) {
      split.keyMask = c;
      continue;
    }
    auto t = terms.term(c);
    if (!t) return std::nullopt;
    if (t->text == "1") continue;
    if (std::optional<std::vector<std::string>> idx = t->readsBias ? std::nullopt : indexConjuncts(t->text)) {
      split.structural.insert(split.structural.end(), idx->begin(), idx->end());
      continue;
    }
    split.residual.push_back(t->text);
  }
  return split;
}

/// \p a && \p b into \p a (same fill); false when both carry a key mask.
bool mergeSplits(MaskSplit &a, MaskSplit &&b) {
  if ((a.keyMask || a.keyMaskConst) && (b.keyMask || b.keyMaskConst)) return false;
  a.structural.insert(a.structural.end(), b.structural.begin(), b.structural.end());
  a.residual.insert(a.residual.end(), b.residual.begin(), b.residual.end());
  if (b.keyMask) a.keyMask = b.keyMask;
  if (b.keyMaskConst) a.keyMaskConst = std::move(b.keyMaskConst);
  return true;
}

/// splitCondition of an additive mask M: Where(C, 0, F), Where(C, F, 0) or
/// (1 - Cast(C, float)) * F with C bool; and combinations whose masked
/// entries all hold the same F, so that fully masked rows stay uniform:
/// Where(C, F, M2) / Where(C, M2, F) (HF's masked_fill of a padding mask
/// with the causal one), Min(M1, M2) with one F, Add(M1, M2) with F = -inf.
std::optional<MaskSplit> splitMask(Value *m, int64_t sq, int64_t sk, const ir::TensorType &st, MaskTerms &terms,
                                   int depth = 0) {
  if (!ir::isFloat(m->type().dtype)) return std::nullopt;
  if (const ir::Tensor *c = m->constant(); c && depth > 0 && broadcastsToScores(m->type(), st)) {
    // A folded operand of a combination: entries 0 and one F.
    double f = 0;
    for (int64_t i = 0; i < c->numElements(); ++i) {
      const double x = c->getDouble(i);
      if (x == 0) continue;
      if (f == 0) f = x;
      if (x != f) return std::nullopt;
    }
    if (f == 0 || !fillActsAsNegInf(f, st.dtype)) return std::nullopt;
    MaskSplit split;
    split.fill = f;
    split.finiteFill = std::isfinite(f);
    const int64_t batch = st.shape[0].isStatic() ? st.shape[0].value : -1;
    auto isKeep = [](double x) { return x == 0; };
    auto g = keepGrid(*c, sq, sk, isKeep);
    if (std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt) {
      if (!pat->empty()) split.structural.push_back(*pat);
      return split;
    }
    auto d = decomposeKeyMask(*c, batch, sq, sk, isKeep);
    if (!d) return std::nullopt;
    if (!d->pattern.empty()) split.structural.push_back(d->pattern);
    split.keyMaskConst = std::move(d->keyMask);
    return split;
  }
  Node *p = m->producer();
  if (!p) return std::nullopt;
  Value *cond = nullptr;
  bool keepIsTrue = true;
  double fill = 0;
  if (p->kind() == OpKind::kWhere) {
    auto a = splatConstant(p->input(1)), b = splatConstant(p->input(2));
    if (a && *a == 0 && b && *b != 0) { cond = p->input(0); fill = *b; }
    else if (b && *b == 0 && a && *a != 0) { cond = p->input(0); fill = *a; keepIsTrue = false; }
  } else if (p->kind() == OpKind::kMul) {
    // (1 - Cast(c, float)) * F, either operand order.
    for (int i = 0; i < 2 && !cond; ++i) {
      auto f = splatConstant(p->input(1 - i));
      Node *s = producerOf(p->input(i), OpKind::kSub);
      if (!f || *f == 0 || !s) continue;
      auto one = splatConstant(s->input(0));
      Node *cast = producerOf(s->input(1), OpKind::kCast);
      if (!one || *one != 1 || !cast || cast->input(0)->type().dtype != ir::DType::kBool) continue;
      cond = cast->input(0);
      fill = *f;
    }
  }
  if (cond) return splitCondition(cond, keepIsTrue, fill, sq, sk, st, terms);
  if (depth >= 8) return std::nullopt;
  if (p->kind() == OpKind::kWhere) {
    for (int side : {1, 2}) {
      auto f = splatConstant(p->input(side));
      if (!f || *f == 0) continue;
      auto inner = splitMask(p->input(3 - side), sq, sk, st, terms, depth + 1);
      if (!inner || inner->fill != *f) continue;
      auto outer = splitCondition(p->input(0), /*keepIsTrue=*/side == 2, *f, sq, sk, st, terms);
      if (outer && mergeSplits(*outer, std::move(*inner))) return outer;
    }
    return std::nullopt;
  }
  const bool isMin = p->kind() == OpKind::kMin && p->numInputs() == 2;
  if (isMin || p->kind() == OpKind::kAdd) {
    auto a = splitMask(p->input(0), sq, sk, st, terms, depth + 1);
    if (!a) return std::nullopt;
    auto b = splitMask(p->input(1), sq, sk, st, terms, depth + 1);
    if (!b || a->fill != b->fill || (!isMin && !std::isinf(a->fill))) return std::nullopt;
    if (!mergeSplits(*a, std::move(*b))) return std::nullopt;
    return a;
  }
  return std::nullopt;
}

class AttentionRewrite : public Pass {
 public:
  const char *name() const override { return "attention-rewrite"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    bool changed = false;
    int64_t fused = 0;
    // Drop this pass's refusals from an earlier run.
    auto &refusals = ctx.fusionPlan.refusals;
    refusals.erase(std::remove_if(refusals.begin(), refusals.end(),
                                  [](const Refusal &r) {
                                    return r.reason.rfind("attention rewrite:", 0) == 0;
                                  }),
                   refusals.end());
    // The matcher reads operands by position: on unverified IR (fusec-opt
    // --no-verify) a node with a missing operand is an error, not a crash.
    for (const Node *n : graph.nodes())
      FUSEC_RETURN_IF_ERROR(withContext(ir::verifyNodeArity(*n), "attention-rewrite"));
    std::vector<Node *> softmaxes;
    for (Node *n : graph.nodes())
      if (n->kind() == OpKind::kSoftmax) softmaxes.push_back(n);
    std::set<const Node *> erased;
    for (Node *sm : softmaxes) {
      if (erased.count(sm)) continue;
      UseInfo uses(graph);
      Match m;
      m.softmax = sm;
      Failure f;
      bool looksLikeAttention = false;
      if (!match(graph, uses, m, f, looksLikeAttention)) {
        if (looksLikeAttention) {
          refusals.push_back({m.qk ? m.qk->name() : sm->name(), sm->name(),
                              absl::StrCat("attention rewrite: ", f.step, " failed: ", f.why)});
          sm->setAttr(kRefusalAttr, ir::Attribute(refusals.back().reason));
          if (ctx.debugEnabled("attention-rewrite"))
            std::fprintf(stderr, "[attention-rewrite] %s\n", printable(refusals.back().reason).c_str());
        }
        continue;
      }
      FUSEC_ASSIGN_OR_RETURN(bool ok, rewrite(graph, m, f, erased));
      if (!ok) {
        refusals.push_back({m.qk->name(), sm->name(),
                            absl::StrCat("attention rewrite: ", f.step, " failed: ", f.why)});
        sm->setAttr(kRefusalAttr, ir::Attribute(refusals.back().reason));
        continue;
      }
      changed = true;
      ++fused;
    }
    ctx.statistics["attention-rewrite.fused"] += fused;
    return changed;
  }

 private:
  // --- matching ------------------------------------------------------------

  static bool fail(Failure &f, std::string step, std::string why) {
    f.step = std::move(step);
    f.why = std::move(why);
    return false;
  }

  /// True if \p v leads (through one-use elementwise ops) to a MatMul.
  static bool reachesMatMul(const Value *v, const UseInfo &uses, int depth = 0) {
    if (depth > 32 || !v || v->isConstant()) return false;
    const Node *p = v->producer();
    if (!p) return false;
    if (p->kind() == OpKind::kMatMul) return true;
    if (!uses.hasOneUse(v) || !isChainOp(p)) return false;
    for (const Value *in : p->inputs())
      if (reachesMatMul(in, uses, depth + 1)) return true;
    return false;
  }

  /// How the score chain translates an op between Q·Kᵀ and Softmax (kNone: not allowed).
  enum class ChainStep { kNone, kSkip, kUnary, kNeg, kArith, kWhere };
  static ChainStep chainStep(const Node *p) {
    switch (p->kind()) {
      case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
        return ChainStep::kArith;
      case OpKind::kTanh: case OpKind::kExp: case OpKind::kLog: case OpKind::kAbs:
      case OpKind::kSqrt:
        return ChainStep::kUnary;
      case OpKind::kNeg: return ChainStep::kNeg;
      case OpKind::kWhere: return ChainStep::kWhere;
      case OpKind::kIdentity: return ChainStep::kSkip;
      case OpKind::kCast: return isFloatCast(p) ? ChainStep::kSkip : ChainStep::kNone;
      case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kSigmoid: case OpKind::kRelu:
      case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid: case OpKind::kSoftplus: case OpKind::kSwish:
      case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos: case OpKind::kFloor:
      case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
      case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
      case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign: case OpKind::kNot:
      case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kDropout: case OpKind::kClip:
      case OpKind::kPow: case OpKind::kMod: case OpKind::kMax: case OpKind::kMin: case OpKind::kSum:
      case OpKind::kMean: case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual:
      case OpKind::kGreater: case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr:
      case OpKind::kXor: case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv:
      case OpKind::kSoftmax: case OpKind::kLogSoftmax: case OpKind::kLayerNormalization:
      case OpKind::kRMSNormalization: case OpKind::kBatchNormalization: case OpKind::kReduceMean:
      case OpKind::kReduceSum: case OpKind::kReduceMax: case OpKind::kReduceMin:
      case OpKind::kReduceProd: case OpKind::kReduceSumSquare: case OpKind::kReduceL2:
      case OpKind::kArgMax: case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
      case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kReshape:
      case OpKind::kTranspose: case OpKind::kFlatten: case OpKind::kSqueeze:
      case OpKind::kUnsqueeze: case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice:
      case OpKind::kGather: case OpKind::kGatherElements: case OpKind::kGatherND:
      case OpKind::kExpand: case OpKind::kTile: case OpKind::kTrilu: case OpKind::kPad:
      case OpKind::kShape: case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange:
      case OpKind::kConstant: case OpKind::kFusedAttention: case OpKind::kUnregistered:
      case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
      case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
      case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
        return ChainStep::kNone;
    }
    return ChainStep::kNone;
  }
  static bool isChainOp(const Node *p) { return chainStep(p) != ChainStep::kNone; }

  /// Index of the chain operand of \p p (the one leading to the MatMul).
  static int chainOperand(const Node *p, const UseInfo &uses) {
    for (int i = 0; i < p->numInputs(); ++i) {
      if (p->kind() == OpKind::kWhere && i == 0) continue;
      if (reachesMatMul(p->input(i), uses)) return i;
    }
    return -1;
  }

  /// Peels Mul/Div by a splat constant (one use) off \p v into \p scale.
  static Value *peelScale(Value *v, const UseInfo &uses, double &scale, Match &m) {
    while (v && v->producer() && uses.hasOneUse(v)) {
      Node *p = v->producer();
      if (p->kind() != OpKind::kMul && p->kind() != OpKind::kDiv) break;
      const double c1 = splatConstant(p->input(1)).value_or(0.0);
      const double c0 = p->kind() == OpKind::kMul ? splatConstant(p->input(0)).value_or(0.0) : 0.0;
      if (c1 != 0 && !p->input(0)->isConstant() && std::isfinite(c1)) {
        scale = p->kind() == OpKind::kMul ? scale * c1 : scale / c1;
        m.matched.push_back(p);
        v = p->input(0);
      } else if (c0 != 0 && !p->input(1)->isConstant() && std::isfinite(c0)) {
        scale *= c0;
        m.matched.push_back(p);
        v = p->input(1);
      } else {
        break;
      }
    }
    return v;
  }

  /// GQA repeat: Reshape(Expand(Unsqueeze(x, [2]), [B,Hkv,g,S,D]), [B,Hkv*g,S,D]).
  /// \returns x (and its head count) or nullptr.
  static Value *peelRepeat(Value *v, const UseInfo &uses, std::vector<Node *> &nodes) {
    Node *rs = producerOf(v, OpKind::kReshape);
    if (!rs || !uses.hasOneUse(v)) return nullptr;
    Node *ex = producerOf(rs->input(0), OpKind::kExpand);
    if (!ex || !uses.hasOneUse(rs->input(0))) return nullptr;
    Node *un = producerOf(ex->input(0), OpKind::kUnsqueeze);
    if (!un) return nullptr;
    Value *x = un->input(0);
    auto xs = staticShape(x), es = staticShape(ex->output(0)), rss = staticShape(v);
    auto us = staticShape(un->output(0));
    if (!xs || !es || !rss || !us || xs->size() != 4 || es->size() != 5 || rss->size() != 4)
      return nullptr;
    const std::vector<int64_t> wantU{(*xs)[0], (*xs)[1], 1, (*xs)[2], (*xs)[3]};
    if (*us != wantU) return nullptr;
    if ((*es)[0] != (*xs)[0] || (*es)[1] != (*xs)[1] || (*es)[3] != (*xs)[2] || (*es)[4] != (*xs)[3])
      return nullptr;
    const std::vector<int64_t> wantR{(*xs)[0], (*xs)[1] * (*es)[2], (*xs)[2], (*xs)[3]};
    if (*rss != wantR) return nullptr;
    nodes.push_back(rs);
    nodes.push_back(ex);
    if (uses.hasOneUse(un->output(0))) nodes.push_back(un);
    return x;
  }

  bool match(ir::Graph &graph, const UseInfo &uses, Match &m, Failure &f, bool &looksLike) {
    (void)graph;
    Node *sm = m.softmax;
    Value *scores = sm->input(0);
    // Output side first: does the softmax feed a MatMul?
    Value *p = sm->output(0);
    std::vector<Node *> outCasts;
    while (true) {
      const auto &us = uses.users(p);
      if (us.size() == 1 && !uses.isGraphOutput(p) && isFloatCast(us[0])) {
        outCasts.push_back(us[0]);
        p = us[0]->output(0);
        continue;
      }
      break;
    }
    const auto &pUsers = uses.users(p);
    Node *pv = pUsers.size() == 1 && pUsers[0]->kind() == OpKind::kMatMul ? pUsers[0] : nullptr;
    const bool reaches = reachesMatMul(scores, uses) ||
                         (scores->producer() && scores->producer()->kind() == OpKind::kMatMul);
    looksLike = pv != nullptr || reaches;
    if (!looksLike) {
      for (Node *u : pUsers) looksLike |= u->kind() == OpKind::kMatMul;
    }
    // Step 1: softmax axis.
    const ir::TensorType &st = scores->type();
    if (!st.rankKnown || st.rank() != 4)
      return fail(f, "softmax", absl::StrCat("scores ", quotedV(scores), " are not rank 4 [B, H, Sq, Sk]"));
    // The softmax row must be the last axis (ir/Ops.def's Row column).
    if (!ir::rowAxes(*sm))
      return fail(f, "softmax", absl::StrCat("axis ", sm->attrI("axis"),
                                             " is not the last axis of the rank-4 scores"));
    // Scores chain back to the Q·Kᵀ MatMul.
    std::vector<Node *> chain;
    Value *cur = scores;
    while (true) {
      Node *pn = cur->producer();
      if (!pn || cur->isConstant())
        return fail(f, "scores", absl::StrCat("softmax input does not come from a Q·Kᵀ MatMul"));
      if (!uses.hasOneUse(cur))
        return fail(f, "scores", absl::StrCat("score value ", quotedV(cur), " has ",
                                              uses.users(cur).size() + uses.isGraphOutput(cur),
                                              " uses (also used outside the attention)"));
      if (pn->kind() == OpKind::kMatMul) {
        m.qk = pn;
        break;
      }
      if (!isChainOp(pn))
        return fail(f, "scores", absl::StrCat("unsupported op ", quoted(pn), " between Q·Kᵀ and Softmax"));
      const int ci = chainOperand(pn, uses);
      if (ci < 0)
        return fail(f, "scores", absl::StrCat("no operand of ", quoted(pn), " leads to a Q·Kᵀ MatMul"));
      chain.push_back(pn);
      cur = pn->input(ci);
      if (chain.size() > 64) return fail(f, "scores", "more than 64 ops between Q·Kᵀ and Softmax");
    }
    // Step 2: P·V.
    if (!pv) {
      if (pUsers.size() != 1 || uses.isGraphOutput(p))
        return fail(f, "output", absl::StrCat("softmax result has ", pUsers.size() + uses.isGraphOutput(p),
                                              " uses; expected one MatMul with V"));
      return fail(f, "output", absl::StrCat("softmax result feeds ", quoted(pUsers[0]), ", not a MatMul with V"));
    }
    if (pv->input(0) != p) return fail(f, "output", "the softmax result is the right operand of the MatMul, not P in P·V");
    if (!uses.hasOneUse(sm->output(0)) && outCasts.empty())
      return fail(f, "output", "softmax result has several uses");
    m.pv = pv;
    // Step 3: score expression.
    std::vector<std::string> pending;  // masks not yet applied
    auto flush = [&] {
      if (pending.empty()) return;
      m.scoreMod = absl::StrCat("((", absl::StrJoin(pending, ") && ("), ") ? ", m.scoreMod, " : -inf)");
      pending.clear();
    };
    const int64_t sq = staticDim(scores, 2), sk = staticDim(scores, 3);
    const int64_t hq = staticDim(scores, 1);
    auto addBias = [&](Value *b) -> std::optional<std::string> {
      if (!broadcastsToScores(b->type(), st)) return std::nullopt;
      for (size_t i = 0; i < m.biases.size(); ++i)
        if (m.biases[i] == b) return absl::StrCat("bias", i);
      m.biases.push_back(b);
      return absl::StrCat("bias", m.biases.size() - 1);
    };
    bool atStart = true;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      Node *n = *it;
      m.matched.push_back(n);
      const int ci = chainOperand(n, uses);
      const std::string E = m.scoreMod;
      switch (chainStep(n)) {
        case ChainStep::kSkip:
          continue;
        case ChainStep::kUnary: {
          flush();
          const char *fn = n->kind() == OpKind::kTanh ? "tanh" : n->kind() == OpKind::kExp ? "exp"
                           : n->kind() == OpKind::kLog ? "log" : n->kind() == OpKind::kAbs ? "abs" : "sqrt";
          m.scoreMod = absl::StrCat(fn, "(", m.scoreMod, ")");
          atStart = false;
          continue;
        }
        case ChainStep::kNeg:
          flush();
          m.scoreMod = absl::StrCat("-(", m.scoreMod, ")");
          atStart = false;
          continue;
        case ChainStep::kArith: {
          Value *side = n->input(1 - ci);
          const OpKind k = n->kind();
          std::optional<double> c = splatConstant(side);
          if (c && atStart && ci == 0 && (k == OpKind::kMul || k == OpKind::kDiv) && *c != 0 &&
              std::isfinite(*c)) {
            m.scale = k == OpKind::kMul ? m.scale * *c : m.scale / *c;
            continue;
          }
          if (c && ci == 1 && k == OpKind::kMul && atStart && *c != 0 && std::isfinite(*c)) {
            m.scale *= *c;
            continue;
          }
          atStart = false;
          const char *sym = k == OpKind::kAdd ? "+" : k == OpKind::kSub ? "-" : k == OpKind::kMul ? "*" : "/";
          // -inf preserved: Add/Sub of a finite term with the score on the
          // left (or Add on either side); Mul/Div by a positive constant.
          const bool preserves = (k == OpKind::kAdd || (k == OpKind::kSub && ci == 0))
                                     ? true
                                     : (c && *c > 0 && ci == 0) || (c && *c > 0 && k == OpKind::kMul);
          if (!preserves) flush();
          std::string term;
          if (c) {
            if (*c == 0 && (k == OpKind::kAdd || (k == OpKind::kSub && ci == 0))) continue;
            term = lit(*c);
          } else if (k == OpKind::kAdd && side->constant() && sq > 0 && sk > 0) {
            const ir::Tensor &t = *side->constant();
            bool allZero = true, zeroOrNegInf = true;
            for (int64_t i = 0; i < t.numElements(); ++i) {
              const double x = t.getDouble(i);
              allZero &= x == 0;
              zeroOrNegInf &= x == 0 || (std::isinf(x) && x < 0);
            }
            if (allZero && broadcastsToScores(side->type(), st)) continue;  // adding zeros: drop the Add
            // A constant {0, F} mask with a finite F <= -1e30 (finfo.min) as
            // the last op: the structural mask with masked_rows "mean".
            double fillF = 0;
            bool zeroOrFill = std::next(it) == chain.rend() && pending.empty() && E == "score";
            for (int64_t i = 0; zeroOrFill && i < t.numElements(); ++i) {
              const double x = t.getDouble(i);
              if (x == 0) continue;
              if (fillF == 0 && std::isfinite(x) && fillActsAsNegInf(x, st.dtype)) fillF = x;
              zeroOrFill = x == fillF;
            }
            const bool lastOp = std::next(it) == chain.rend() && pending.empty() && E == "score";
            const int64_t batch = st.shape[0].isStatic() ? st.shape[0].value : -1;
            if (zeroOrFill && fillF != 0 && broadcastsToScores(side->type(), st)) {
              auto g = keepGrid(t, sq, sk, [](double x) { return x == 0; });
              std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt;
              if (pat && !pat->empty()) {
                pending.push_back(*pat);
                m.maskedRowsMean = true;
                continue;
              }
              if (auto d = decomposeKeyMask(t, batch, sq, sk, [](double x) { return x == 0; })) {
                if (!d->pattern.empty()) pending.push_back(d->pattern);
                m.keyMaskConst = std::move(d->keyMask);
                m.maskedRowsMean = true;
                continue;
              }
            }
            if (zeroOrNegInf && broadcastsToScores(side->type(), st)) {
              auto g = keepGrid(t, sq, sk, [](double x) { return x == 0; });
              std::optional<std::string> pat = g ? indexPattern(*g) : std::nullopt;
              if (pat) {
                if (!pat->empty()) pending.push_back(*pat);
                continue;
              }
              if (lastOp) {
                if (auto d = decomposeKeyMask(t, batch, sq, sk, [](double x) { return x == 0; })) {
                  if (!d->pattern.empty()) pending.push_back(d->pattern);
                  m.keyMaskConst = std::move(d->keyMask);
                  continue;
                }
              }
            }
            if (hq > 0) {
              if (auto a = matchAlibi(t, hq, sq, sk)) {
                std::string slope;
                bool same = std::all_of(a->slopes.begin(), a->slopes.end(),
                                        [&](float s) { return s == a->slopes[0]; });
                if (same) {
                  slope = lit(a->slopes[0]);
                } else {
                  std::string name = "slope";
                  for (int i = 1; m.tables.count(name); ++i) name = absl::StrCat("slope", i);
                  m.tables[name] = a->slopes;
                  slope = absl::StrCat(name, "[h]");
                }
                m.scoreMod = absl::StrCat("(", E, " + ", slope, a->keyOnly ? " * k)" : " * (k - q))");
                if (!a->mask.empty()) pending.push_back(a->mask);
                continue;
              }
            }
          }
          if (term.empty() && k == OpKind::kAdd && !side->constant() && sq > 0 && sk > 0) {
            // A mask computed in the graph (MaskTerms): the structural split
            // when the Add is the last op on the scores, else the expression.
            const size_t nb = m.biases.size();
            const bool last = std::next(it) == chain.rend();
            if (last && pending.empty() && E == "score") {
              MaskTerms terms(st, sq, sk, addBias);
              if (std::optional<MaskSplit> split = splitMask(side, sq, sk, st, terms)) {
                pending.insert(pending.end(), split->structural.begin(), split->structural.end());
                m.keyMask = split->keyMask;
                m.keyMaskConst = std::move(split->keyMaskConst);
                if (!split->residual.empty())
                  m.scoreMod = absl::StrCat("((", absl::StrJoin(split->residual, ") && ("), ") ? ", E, " : -inf)");
                m.maskedRowsMean = split->finiteFill;
                continue;
              }
              m.biases.resize(nb);
            }
            MaskTerms terms(st, sq, sk, addBias);
            if (std::optional<MaskTerm> t = terms.term(side)) term = t->text;
            else m.biases.resize(nb);
          }
          if (term.empty() && side->constant() && sq > 0 && sk > 0) {
            // Any other constant of two values chosen by an index pattern
            // (a finite fill such as -1e4): "(pattern ? a : b)", no bias read.
            const size_t nb = m.biases.size();
            MaskTerms terms(st, sq, sk, addBias);
            if (std::optional<MaskTerm> t = terms.term(side); t && !t->readsBias) term = t->text;
            else m.biases.resize(nb);
          }
          if (term.empty()) {
            auto b = addBias(side);
            if (!b) return fail(f, "scores", absl::StrCat("operand ", quotedV(side), " of ", quoted(n),
                                                          " does not broadcast to the scores"));
            term = *b;
          }
          m.scoreMod = ci == 0 ? absl::StrCat("(", E, " ", sym, " ", term, ")")
                               : absl::StrCat("(", term, " ", sym, " ", E, ")");
          continue;
        }
        case ChainStep::kWhere: {
          atStart = false;
          Value *cond = n->input(0);
          Value *other = n->input(ci == 1 ? 2 : 1);
          const bool keepIsTrue = ci == 1;
          std::optional<std::string> keepExpr;
          if (cond->constant() && sq > 0 && sk > 0) {
            auto g = keepGrid(*cond->constant(), sq, sk,
                              [&](double x) { return (x != 0) == keepIsTrue; });
            if (g && broadcastsToScores(cond->type(), st)) keepExpr = indexPattern(*g);
          }
          std::optional<double> fill = splatConstant(other);
          if (fill && std::next(it) == chain.rend() && pending.empty() && E == "score" &&
              broadcastsToScores(cond->type(), st)) {
            // Where(And(causal, padding), score, finfo.min): the structural split.
            const size_t nb = m.biases.size();
            MaskTerms terms(st, sq, sk, addBias);
            if (std::optional<MaskSplit> split = splitCondition(cond, keepIsTrue, *fill, sq, sk, st, terms)) {
              pending.insert(pending.end(), split->structural.begin(), split->structural.end());
              m.keyMask = split->keyMask;
              m.keyMaskConst = std::move(split->keyMaskConst);
              if (!split->residual.empty())
                m.scoreMod = absl::StrCat("((", absl::StrJoin(split->residual, ") && ("), ") ? ", E, " : -inf)");
              m.maskedRowsMean = split->finiteFill;
              continue;
            }
            m.biases.resize(nb);
          }
          if (keepExpr && keepExpr->empty()) continue;  // always keeps the score
          if (keepExpr && fill && std::isinf(*fill) && *fill < 0) {
            pending.push_back(*keepExpr);
            continue;
          }
          const bool fillIsNegInf = fill && std::isinf(*fill) && *fill < 0;
          if (!fillIsNegInf) flush();
          std::string condText;
          if (keepExpr) {
            condText = *keepExpr;
          } else {
            auto b = addBias(cond);
            if (!b) return fail(f, "scores", absl::StrCat("Where condition ", quotedV(cond),
                                                          " does not broadcast to the scores"));
            condText = keepIsTrue ? *b : absl::StrCat("!", *b);
          }
          std::string fillText;
          if (fill) {
            fillText = lit(*fill);
          } else {
            auto b = addBias(other);
            if (!b) return fail(f, "scores", absl::StrCat("Where operand ", quotedV(other),
                                                          " does not broadcast to the scores"));
            fillText = *b;
          }
          m.scoreMod = absl::StrCat("((", condText, ") ? ", E, " : ", fillText, ")");
          continue;
        }
        case ChainStep::kNone:
          return fail(f, "scores", absl::StrCat("unsupported op ", quoted(n)));
      }
    }
    m.masks = pending;
    m.matched.push_back(sm);
    for (Node *c : outCasts) m.matched.push_back(c);
    m.matched.push_back(m.qk);
    m.matched.push_back(pv);
    // Step 4: Q, K, V.
    Value *q = peelScale(m.qk->input(0), uses, m.scale, m);
    Value *kt = peelScale(m.qk->input(1), uses, m.scale, m);
    std::vector<int64_t> perm{0, 1, 3, 2};
    if (Node *tr = producerOf(kt, OpKind::kTranspose)) {
      std::vector<int64_t> p = tr->getInts("perm");
      if (p.size() == 4) {
        if (uses.hasOneUse(kt)) m.matched.push_back(tr);
        m.kName = tr->name();
        std::swap(p[2], p[3]);
        perm = p;
        kt = peelScale(tr->input(0), uses, m.scale, m);
      }
    }
    if (perm == std::vector<int64_t>{0, 1, 2, 3}) perm.clear();
    Value *v = pv->input(1);
    for (Value *x : {q, kt, v})
      if (!x->type().rankKnown || x->type().rank() != 4)
        return fail(f, "q/k/v", absl::StrCat(quotedV(x), " is not rank 4"));
    // GQA repeats (only without a K permutation, on both K and V).
    if (perm.empty()) {
      std::vector<Node *> kn, vn;
      Value *k0 = peelRepeat(kt, uses, kn);
      Value *v0 = peelRepeat(v, uses, vn);
      if (k0 && v0 && staticDim(k0, 1) == staticDim(v0, 1)) {
        kt = k0;
        v = v0;
        m.matched.insert(m.matched.end(), kn.begin(), kn.end());
        m.matched.insert(m.matched.end(), vn.begin(), vn.end());
      }
    }
    m.q = q;
    m.kSrc = kt;
    m.kPerm = perm;
    m.v = v;
    const ir::DType dt = q->type().dtype;
    if (!ir::isFloat(dt) || kt->type().dtype != dt || v->type().dtype != dt ||
        pv->output(0)->type().dtype != dt)
      return fail(f, "q/k/v", absl::StrCat("Q, K, V and the output do not share one float dtype (Q is ",
                                           ir::dtypeName(dt), ")"));
    // Head counts and shapes.
    auto kd = [&](int64_t i) { return staticDim(kt, perm.empty() ? i : perm[i]); };
    const int64_t b = staticDim(q, 0), hQ = staticDim(q, 1), d = staticDim(q, 3);
    const int64_t hK = kd(1), dK = kd(3), skK = kd(2);
    const int64_t hV = staticDim(v, 1), skV = staticDim(v, 2);
    if (b < 0 || hQ < 0 || d < 0 || hK < 0 || dK < 0 || hV < 0 || skK < 0 || skV < 0)
      return fail(f, "q/k/v", "shapes are not static (bind them with --shape)");
    if (d != dK) return fail(f, "q/k/v", absl::StrCat("Q head dim ", d, " != K head dim ", dK));
    if (hK != hV || skK != skV)
      return fail(f, "q/k/v", absl::StrCat("K [", hK, " heads, ", skK, " keys] and V [", hV, " heads, ",
                                           skV, " keys] disagree"));
    if (kd(0) != b || staticDim(v, 0) != b)
      return fail(f, "q/k/v", "Q, K and V batch sizes differ (batch broadcasting is not supported)");
    if (hK <= 0 || hQ % hK != 0)
      return fail(f, "q/k/v", absl::StrCat(hQ, " query heads are not a multiple of ", hK, " kv heads"));
    m.hq = hQ;
    m.hkv = hK;
    return true;
  }

  // --- rewriting -----------------------------------------------------------

  absl::StatusOr<bool> rewrite(ir::Graph &graph, Match &m, Failure &f, std::set<const Node *> &erased) {
    // Canonical expressions.
    ir::ScoreExprContext sctx;
    sctx.numBiases = static_cast<int>(m.biases.size());
    for (const auto &[name, vals] : m.tables) sctx.tables.push_back(name);
    sctx.allowTables = !sctx.tables.empty();
    auto se = ir::parseScoreExpr(m.scoreMod, sctx);
    if (!se.ok()) return fail(f, "expression", std::string(se.status().message()));
    std::string scoreMod = se->str();
    if (scoreMod == "score") scoreMod.clear();
    std::string mask;
    if (!m.masks.empty()) {
      ir::ScoreExprContext mctx;
      mctx.allowScore = false;
      mctx.allowTables = false;
      auto me = ir::parseScoreExpr(absl::StrCat("(", absl::StrJoin(m.masks, ") && ("), ")"), mctx);
      if (!me.ok()) return fail(f, "expression", std::string(me.status().message()));
      mask = me->str();
    }
    Value *k = m.kSrc;
    if (!m.kPerm.empty()) {
      FUSEC_ASSIGN_OR_RETURN(Node * tr, createNodeBefore(graph, m.pv, "Transpose", {m.kSrc},
                                                         {{"perm", ir::Attribute(m.kPerm)}}));
      // Located at the Q·Kᵀ MatMul, not at the P·V MatMul it precedes.
      tr->setName(m.kName.empty() ? m.qk->name() : m.kName);
      k = tr->output(0);
    }
    std::vector<Value *> inputs{m.q, k, m.v};
    inputs.insert(inputs.end(), m.biases.begin(), m.biases.end());
    int64_t keyMask = -1;
    if (m.keyMaskConst) {
      m.keyMask = graph.addConstant(graph.uniqueName(absl::StrCat(m.softmax->name(), "_key_mask")),
                                    std::move(*m.keyMaskConst));
    }
    if (m.keyMask) {
      keyMask = static_cast<int64_t>(inputs.size()) - 3;
      inputs.push_back(m.keyMask);
    }
    ir::AttributeMap attrs;
    attrs["num_heads"] = ir::Attribute(m.hq);
    attrs["kv_num_heads"] = ir::Attribute(m.hkv);
    attrs["scale"] = ir::Attribute(static_cast<float>(m.scale));
    attrs["score_mod"] = ir::Attribute(scoreMod);
    attrs["mask"] = ir::Attribute(mask);
    if (m.maskedRowsMean) attrs["masked_rows"] = ir::Attribute(std::string("mean"));
    if (keyMask >= 0) attrs["key_mask"] = ir::Attribute(keyMask);
    if (!m.tables.empty()) {
      std::vector<std::string> names;
      for (const auto &[name, vals] : m.tables) {
        names.push_back(name);
        attrs["table_" + name] = ir::Attribute(vals);
      }
      attrs["tables"] = ir::Attribute(names);
    }
    auto att = createNodeBefore(graph, m.pv, "FusedAttention", inputs, std::move(attrs));
    if (!att.ok()) return fail(f, "rewrite", std::string(att.status().message()));
    if (!replaceValue(graph, m.pv->output(0), (*att)->output(0), /*takeName=*/true)) {
      graph.eraseNode(*att);
      return fail(f, "rewrite", "the output could not take the MatMul result's name");
    }
    // Drop the matched nodes that are now dead.
    bool again = true;
    while (again) {
      again = false;
      UseInfo uses(graph);
      for (Node *n : m.matched) {
        if (erased.count(n)) continue;
        bool dead = true;
        for (const Value *o : n->outputs()) dead &= uses.users(o).empty() && !uses.isGraphOutput(o);
        if (dead) {
          erased.insert(n);
          graph.eraseNode(n);
          again = true;
        }
      }
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createAttentionRewrite() { return std::make_unique<AttentionRewrite>(); }

}  // namespace fusec::passes
