//===- AttentionSpec.cpp - Target-neutral attention kernel description ---===//
#include "program/AttentionSpec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/Graph.h"
#include "support/Status.h"

namespace fusec::program {

void AttentionSpec::setDenseStrides() {
  auto dense = [](std::array<int64_t, 4> &st, int64_t h, int64_t s, int64_t d) {
    st = {h * s * d, s * d, d, 1};
  };
  dense(qStrides, numHeads, seqQ, headDim);
  dense(kStrides, kvHeads, seqK, headDim);
  dense(vStrides, kvHeads, seqK, headDimV);
  dense(oStrides, numHeads, seqQ, headDimV);
}

std::string printAttentionSpec(const AttentionSpec &s) {
  std::string out;
  absl::StrAppend(&out, "  attention B=", s.batch, " Hq=", s.numHeads, " Hkv=", s.kvHeads,
                  " Sq=", s.seqQ, " Sk=", s.seqK, " D=", s.headDim, " Dv=", s.headDimV, "\n");
  absl::StrAppend(&out, "  dtypes q=", ir::dtypeName(s.qType), " k=", ir::dtypeName(s.kType),
                  " v=", ir::dtypeName(s.vType), " o=", ir::dtypeName(s.oType), "\n");
  absl::StrAppend(&out, "  strides q=[", absl::StrJoin(s.qStrides, ","), "] k=[",
                  absl::StrJoin(s.kStrides, ","), "] v=[", absl::StrJoin(s.vStrides, ","),
                  "] o=[", absl::StrJoin(s.oStrides, ","), "]\n");
  absl::StrAppend(&out, "  scale ", ir::scoreFloatLiteral(s.scale), "\n");
  absl::StrAppend(&out, "  score_mod ", s.scoreMod.empty() ? "score" : s.scoreMod.str(), "\n");
  absl::StrAppend(&out, "  mask ", s.mask.empty() ? "none" : s.mask.str(), "\n");
  if (s.maskedRowsMean) absl::StrAppend(&out, "  masked_rows mean\n");
  for (size_t i = 0; i < s.biases.size(); ++i)
    absl::StrAppend(&out, "  bias", i, " ", ir::dtypeName(s.biases[i].dtype), "[",
                    absl::StrJoin(s.biases[i].shape, ","), "] strides=[",
                    absl::StrJoin(s.biases[i].strides, ","), "]\n");
  if (s.keyMask >= 0) absl::StrAppend(&out, "  key_mask bias", s.keyMask, "\n");
  for (const auto &[name, vals] : s.tables) {
    std::vector<std::string> v;
    for (float f : vals) v.push_back(ir::scoreFloatLiteral(f));
    absl::StrAppend(&out, "  table ", name, " = [", absl::StrJoin(v, ", "), "]\n");
  }
  for (const auto &[field, e] : s.symbolic) absl::StrAppend(&out, "  symbolic ", field, " = ", e.str(), "\n");
  return out;
}

absl::StatusOr<AttentionSpec> attentionSpecFor(const ir::Node &node) {
  auto bad = [&](const std::string &why) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: ", node.describe(), ": ", why));
  };
  if (node.numInputs() < 3 || node.numOutputs() != 1) return bad("FusedAttention needs Q, K, V and one output");
  auto shapeOf = [&](const ir::Value *v, std::vector<int64_t> &out) -> bool {
    if (!v || !v->type().isStatic()) return false;
    out = v->type().staticShape();
    return true;
  };
  std::vector<int64_t> q, k, v, o;
  if (!shapeOf(node.input(0), q) || !shapeOf(node.input(1), k) || !shapeOf(node.input(2), v) ||
      !shapeOf(node.output(0), o))
    return bad("shapes are not static (bind them with --shape)");
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || o.size() != 4) return bad("Q, K, V must be rank 4");
  AttentionSpec s;
  s.batch = q[0];
  s.numHeads = q[1];
  s.seqQ = q[2];
  s.headDim = q[3];
  s.kvHeads = k[1];
  s.seqK = k[2];
  s.headDimV = v[3];
  if (k[0] != s.batch || v[0] != s.batch || k[3] != s.headDim || v[1] != s.kvHeads || v[2] != s.seqK ||
      o != std::vector<int64_t>{s.batch, s.numHeads, s.seqQ, s.headDimV})
    return bad("Q/K/V/O shapes do not fit [B,Hq,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv], [B,Hq,Sq,Dv]");
  if (s.kvHeads <= 0 || s.numHeads % s.kvHeads != 0) return bad("Hq is not a multiple of Hkv");
  for (int64_t d : {s.batch, s.numHeads, s.seqQ, s.seqK, s.headDim, s.headDimV})
    if (d <= 0) return bad("zero-sized attention");
  s.qType = node.input(0)->type().dtype;
  s.kType = node.input(1)->type().dtype;
  s.vType = node.input(2)->type().dtype;
  s.oType = node.output(0)->type().dtype;
  s.setDenseStrides();
  FUSEC_ASSIGN_OR_RETURN(ir::AttentionAttrs at, ir::readAttentionAttrs(node));
  s.scale = at.scale;
  s.scoreMod = std::move(at.scoreMod);
  s.mask = std::move(at.mask);
  s.maskedRowsMean = at.maskedRowsMean;
  s.tables = std::move(at.tables);
  const int64_t full[4] = {s.batch, s.numHeads, s.seqQ, s.seqK};
  for (int i = 3; i < node.numInputs(); ++i) {
    const ir::Value *b = node.input(i);
    std::vector<int64_t> bs;
    if (!shapeOf(b, bs) || bs.size() > 4) return bad(absl::StrCat("bias ", i - 3, " is not static of rank <= 4"));
    AttentionBias ab;
    ab.dtype = b->type().dtype;
    ab.shape = bs;
    const int64_t off = 4 - static_cast<int64_t>(bs.size());
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(bs.size()) - 1; d >= 0; --d) {
      if (bs[d] != 1 && bs[d] != full[off + d])
        return bad(absl::StrCat("bias ", i - 3, " does not broadcast to [B,Hq,Sq,Sk]"));
      ab.strides[off + d] = bs[d] == 1 ? 0 : stride;
      stride *= bs[d];
    }
    s.biases.push_back(std::move(ab));
  }
  s.keyMask = at.keyMask;
  if (s.keyMask >= 0) {
    const AttentionBias &km = s.biases[s.keyMask];
    if ((km.strides[1] != 0 && s.numHeads != 1) || (km.strides[2] != 0 && s.seqQ != 1))
      return bad("the key mask varies over heads or queries");
  }
  return s;
}

absl::Status foldKeyMask(AttentionSpec &spec) {
  if (spec.keyMask < 0) return absl::OkStatus();
  ir::ScoreExprContext ctx;
  ctx.numBiases = static_cast<int>(spec.biases.size());
  for (const auto &[name, vals] : spec.tables) ctx.tables.push_back(name);
  ctx.allowTables = !ctx.tables.empty();
  const std::string mod = spec.scoreMod.empty() ? "score" : spec.scoreMod.str();
  auto e = ir::parseScoreExpr(absl::StrCat("(bias", spec.keyMask, " != 0) ? (", mod, ") : -inf"), ctx);
  if (!e.ok()) return e.status();
  spec.scoreMod = std::move(*e);
  spec.keyMask = -1;
  return absl::OkStatus();
}

}  // namespace fusec::program
