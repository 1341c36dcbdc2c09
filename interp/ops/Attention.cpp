//===- Attention.cpp - Reference FusedAttention -----------------------------===//
//
// The reference function of fusec's FusedAttention op (ir/Ops.def; the
// expression language is ir/ScoreExpr.h). It follows the decomposition the
// rewrite replaced, one query row at a time:
//   s = f32(scale * f32(Q·K))           (dot product in f64, rounded like MatMul)
//   x = (mask && keymask[b,k] != 0) ? score_mod(s, ...) : -inf
//                                        (f32, ScoreExpr semantics)
//   p = softmax over k (f64, max-subtracted; a row of all -inf is NaN, or
//       with masked_rows "mean" uniform over all Sk keys)
//   O = sum_k p * V                       (f64, stored in Q's dtype)
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "interp/internal/KernelUtil.h"
#include "interp/internal/Kernels.h"
#include "ir/ScoreExpr.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::Tensor;

absl::StatusOr<std::vector<Tensor>> fusedAttention(const KernelArgs &args) {
  const Tensor *q = args.in(0), *k = args.in(1), *v = args.in(2);
  if (!q || !k || !v) return invalidArg("FusedAttention needs Q, K and V");
  for (const Tensor *t : {q, k, v}) {
    if (t->rank() != 4) return invalidArg("FusedAttention: Q, K and V must be rank 4, got ", shapeStr(t->shape()));
    if (!ir::isFloat(t->dtype())) return invalidArg("FusedAttention: Q, K and V must be floating point");
  }
  const int64_t B = q->shape()[0], Hq = q->shape()[1], Sq = q->shape()[2], D = q->shape()[3];
  const int64_t Hkv = k->shape()[1], Sk = k->shape()[2], Dv = v->shape()[3];
  if (k->shape()[0] != B || v->shape()[0] != B || v->shape()[1] != Hkv || v->shape()[2] != Sk ||
      k->shape()[3] != D)
    return invalidArg("FusedAttention: shapes Q ", shapeStr(q->shape()), ", K ", shapeStr(k->shape()),
                      ", V ", shapeStr(v->shape()), " do not fit [B,Hq,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv]");
  if (Hkv <= 0 || Hq % Hkv != 0)
    return invalidArg("FusedAttention: ", Hq, " query heads are not a multiple of ", Hkv, " kv heads");
  FUSEC_ASSIGN_OR_RETURN(ir::AttentionAttrs at, ir::readAttentionAttrs(args.node));
  if ((at.numHeads && at.numHeads != Hq) || (at.kvHeads && at.kvHeads != Hkv))
    return invalidArg("FusedAttention: num_heads ", at.numHeads, " / kv_num_heads ", at.kvHeads,
                      " disagree with Q/K heads ", Hq, " / ", Hkv);
  // Bias strides for (b, h, q, k), right-aligned broadcast.
  const int64_t full[4] = {B, Hq, Sq, Sk};
  std::vector<const Tensor *> biases;
  std::vector<std::array<int64_t, 4>> strides;
  for (size_t i = 3; i < args.inputs.size(); ++i) {
    const Tensor *t = args.in(i);
    if (!t) return invalidArg("FusedAttention: bias input ", i - 3, " is missing");
    if (t->rank() > 4) return invalidArg("FusedAttention: bias ", i - 3, " has rank > 4");
    std::array<int64_t, 4> st{0, 0, 0, 0};
    const ir::Shape rs = ir::rowMajorStrides(t->shape());
    const int64_t off = 4 - t->rank();
    for (int64_t d = 0; d < t->rank(); ++d) {
      const int64_t n = t->shape()[d];
      if (n != 1 && n != full[off + d])
        return invalidArg("FusedAttention: bias ", i - 3, " shape ", shapeStr(t->shape()),
                          " does not broadcast to [", B, ",", Hq, ",", Sq, ",", Sk, "]");
      st[off + d] = n == 1 ? 0 : rs[d];
    }
    biases.push_back(t);
    strides.push_back(st);
  }
  const int64_t g = Hq / Hkv;
  Tensor out(q->dtype(), {B, Hq, Sq, Dv});
  std::vector<double> x(Sk), acc(Dv), qrow(D);
  ir::ScoreEnv env;
  env.tables = &at.tables;
  int64_t bb = 0, hh = 0, qq = 0, kk = 0;
  env.bias = [&](int i) -> float {
    const auto &st = strides[i];
    return static_cast<float>(biases[i]->getDouble(bb * st[0] + hh * st[1] + qq * st[2] + kk * st[3]));
  };
  const double kNegInf = -std::numeric_limits<double>::infinity();
  for (bb = 0; bb < B; ++bb) {
    for (hh = 0; hh < Hq; ++hh) {
      const int64_t kh = hh / g;
      const int64_t kBase = (bb * Hkv + kh) * Sk;
      for (qq = 0; qq < Sq; ++qq) {
        const int64_t qBase = ((bb * Hq + hh) * Sq + qq) * D;
        for (int64_t d = 0; d < D; ++d) qrow[d] = q->getDouble(qBase + d);
        double mx = kNegInf;
        for (kk = 0; kk < Sk; ++kk) {
          env.b = bb; env.h = hh; env.q = qq; env.k = kk;
          if ((!at.mask.empty() && ir::evalScoreExpr(at.mask, env) == 0) ||
              (at.keyMask >= 0 && env.bias(at.keyMask) == 0)) {
            x[kk] = kNegInf;
            continue;
          }
          double dot = 0;
          const int64_t kOff = (kBase + kk) * D;
          for (int64_t d = 0; d < D; ++d) dot += qrow[d] * k->getDouble(kOff + d);
          const float s = static_cast<float>(at.scale * static_cast<float>(dot));
          if (at.scoreMod.empty()) {
            x[kk] = s;
          } else {
            env.score = s;
            x[kk] = static_cast<float>(ir::evalScoreExpr(at.scoreMod, env));
          }
          mx = std::max(mx, x[kk]);
        }
        if (std::isinf(mx)) mx = 0;  // all -inf: exp(-inf)/0 = NaN, as Softmax
        double sum = 0;
        for (kk = 0; kk < Sk; ++kk) sum += std::exp(x[kk] - mx);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (kk = 0; kk < Sk; ++kk) {
          // Softmax output is stored as f32 in the decomposition.
          const double p = static_cast<float>(std::exp(x[kk] - mx) / sum);
          if (p == 0) continue;
          const int64_t vOff = (kBase + kk) * Dv;
          for (int64_t e = 0; e < Dv; ++e) acc[e] += p * v->getDouble(vOff + e);
        }
        if (!(sum > 0) && at.maskedRowsMean && Sk > 0) {
          // Every key masked: the exporter's finite fill made the row uniform.
          std::fill(acc.begin(), acc.end(), 0.0);
          for (kk = 0; kk < Sk; ++kk) {
            const int64_t vOff = (kBase + kk) * Dv;
            for (int64_t e = 0; e < Dv; ++e) acc[e] += v->getDouble(vOff + e);
          }
          for (double &a : acc) a /= static_cast<double>(Sk);
        } else if (!(sum > 0)) {
          std::fill(acc.begin(), acc.end(), std::numeric_limits<double>::quiet_NaN());
        }
        const int64_t oBase = ((bb * Hq + hh) * Sq + qq) * Dv;
        for (int64_t e = 0; e < Dv; ++e) out.setDouble(oBase + e, acc[e]);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void registerAttentionKernels(KernelTable &table) {
  table[static_cast<size_t>(ir::OpKind::kFusedAttention)] = fusedAttention;
}

}  // namespace fusec::interp
