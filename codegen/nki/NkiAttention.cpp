//===- NkiAttention.cpp - FusedAttention as a flash-attention NKI kernel ===//
//
// Per (batch, query head, tile of Q_TILE = 128 query rows on the
// partitions), the key/value tiles (K_TILE = 128 keys) are visited in order
// with the running row max m, row sum l and output accumulator in SBUF
// (fp32): S = scale * Q K^T (TensorE: stationary Q^T [D, q], moving
// K^T [D, k], one PSUM bank), the score modification and the mask of the
// AttentionSpec (ir/ScoreExpr.h, compiled to Vector/Scalar Engine tile ops),
// m' = max(m, rowmax S), P = exp(S - m') with its row sum fused into the
// ScalarE activation (reduce_op=nl.add), l = l * exp(m - m') + rowsum,
// O = O * exp(m - m') + P V (P^T by a TensorE transpose, then TensorE with
// V [k, Dv] moving). O / l is stored at the end. The mask is evaluated at
// compile time for every tile: fully masked key tiles are not visited,
// partially masked ones are predicated (-inf where the mask is false),
// fully live ones skip the mask. m starts at -FLT_MAX instead of -inf: a
// row masked (-inf) in every visited tile keeps l = 0 and gives 0/0 = NaN,
// as the op's reference semantics say, while a row of finite scores at
// -FLT_MAX (additive finfo.min masks) stays uniform.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codegen/nki/NkiKernel.h"
#include "ir/ScoreExpr.h"
#include "support/Status.h"

namespace fusec::codegen::nki {
namespace {

using ir::ScoreExpr;
using ir::ScoreNode;
using ir::ScoreOp;
using ir::ScoreType;

/// Query rows per tile: the partitions of S and the stationary free size of
/// Q K^T and of P^T V.
int64_t queryTile(const Limits &l) { return std::min(l.partitions, l.matmulStationaryFreeMax); }
/// Keys per tile: S's free axis (one PSUM bank of fp32, the moving free
/// size) and P^T's partitions.
int64_t keyTile(const Limits &l) { return std::min(l.partitions, matmulFreeMax(l)); }

std::string lit(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  std::string s = absl::StrFormat("%.9g", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

/// A Python integer expression for \p id when it depends on b/h and
/// constants only (table indices).
bool intExpr(const ScoreExpr &e, int id, std::string *out) {
  const ScoreNode &n = e.node(id);
  std::string a, b;
  switch (n.op) {
    case ScoreOp::kConst: *out = std::to_string(static_cast<int64_t>(n.value)); return n.type == ScoreType::kInt;
    case ScoreOp::kB: *out = "b"; return true;
    case ScoreOp::kH: *out = "h"; return true;
    case ScoreOp::kAdd:
    case ScoreOp::kSub:
    case ScoreOp::kMul:
      if (!intExpr(e, n.a, &a) || !intExpr(e, n.b, &b)) return false;
      *out = absl::StrCat("(", a, n.op == ScoreOp::kAdd ? " + " : n.op == ScoreOp::kSub ? " - " : " * ", b, ")");
      return true;
    default: return false;
  }
}

const char *aluName(ScoreOp op) {
  switch (op) {
    case ScoreOp::kAdd: return "nl.add";
    case ScoreOp::kSub: return "nl.subtract";
    case ScoreOp::kMul: return "nl.multiply";
    case ScoreOp::kDiv: return "nl.divide";
    case ScoreOp::kLt: return "nl.less";
    case ScoreOp::kLe: return "nl.less_equal";
    case ScoreOp::kGt: return "nl.greater";
    case ScoreOp::kGe: return "nl.greater_equal";
    case ScoreOp::kEq: return "nl.equal";
    case ScoreOp::kNe: return "nl.not_equal";
    case ScoreOp::kAnd: return "nl.logical_and";
    case ScoreOp::kOr: return "nl.logical_or";
    case ScoreOp::kMin: return "nl.minimum";
    case ScoreOp::kMax: return "nl.maximum";
    default: return nullptr;
  }
}

const char *actName(ScoreOp op) {
  switch (op) {
    case ScoreOp::kTanh: return "nl.tanh";
    case ScoreOp::kExp: return "nl.exp";
    case ScoreOp::kLog: return "nl.log";
    case ScoreOp::kAbs: return "nl.abs";
    case ScoreOp::kSqrt: return "nl.sqrt";
    default: return nullptr;
  }
}

absl::Status checkExpr(const ScoreExpr &e) {
  for (int id = 0; id < static_cast<int>(e.nodes.size()); ++id) {
    const ScoreNode &n = e.node(id);
    std::string s;
    if (n.op == ScoreOp::kTable && !intExpr(e, n.a, &s))
      return absl::UnimplementedError("a table index that is not an integer expression of b and h");
    if (n.op == ScoreOp::kDiv && n.type == ScoreType::kInt)
      return absl::UnimplementedError("integer division in a score expression");
  }
  return absl::OkStatus();
}

/// Prints ScoreExpr nodes as tile ops on [Q_TILE, K_TILE] fp32 tiles.
class ExprPrinter {
 public:
  ExprPrinter(const program::AttentionSpec &a, std::string *out, std::string indent)
      : a_(a), out_(out), ind_(std::move(indent)) {}

  /// \returns a number literal or "name" of a tile holding \p id.
  std::string value(const ScoreExpr &e, int id) {
    auto key = std::make_pair(&e, id);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const ScoreNode &n = e.node(id);
    std::string r;
    switch (n.op) {
      case ScoreOp::kConst: r = lit(n.value); break;
      case ScoreOp::kScore: r = "s"; break;
      case ScoreOp::kB: r = "float(b)"; break;
      case ScoreOp::kH: r = "float(h)"; break;
      case ScoreOp::kQ:
      case ScoreOp::kK: {
        std::string it = alloc("nl.int32");
        bool q = n.op == ScoreOp::kQ;
        line(absl::StrCat("nisa.iota(dst=", it, "[0:qs, 0:ks], pattern=[[", q ? 0 : 1, ", ks]], offset=",
                          q ? "q0" : "k0", ", channel_multiplier=", q ? 1 : 0, ")"));
        r = alloc();
        line(absl::StrCat("nisa.tensor_copy(dst=", r, "[0:qs, 0:ks], src=", it, "[0:qs, 0:ks])"));
        break;
      }
      case ScoreOp::kBias: {
        const program::AttentionBias &bias = a_.biases[n.index];
        const std::string dt = nlDType(bias.dtype);
        std::string raw = alloc(dt);
        line(absl::StrCat("nisa.dma_copy(dst=", raw, "[0:qs, 0:ks], src=bias", n.index, ".ap(pattern=[[",
                          bias.strides[2], ", qs], [", bias.strides[3], ", ks]], offset=b * ", bias.strides[0],
                          " + h * ", bias.strides[1], " + q0 * ", bias.strides[2], " + k0 * ", bias.strides[3],
                          "))"));
        if (dt == "nl.float32") {
          r = raw;
        } else {
          r = alloc();
          line(absl::StrCat("nisa.tensor_copy(dst=", r, "[0:qs, 0:ks], src=", raw, "[0:qs, 0:ks])"));
        }
        break;
      }
      case ScoreOp::kTable: {
        std::string idx;
        intExpr(e, n.a, &idx);
        r = absl::StrCat("TABLE_", n.name, "[", idx, "]");
        break;
      }
      case ScoreOp::kNeg: r = scalarOp(value(e, n.a), "nl.multiply", "-1.0", false); break;
      case ScoreOp::kNot: r = scalarOp(value(e, n.a), "nl.equal", "0.0", false); break;
      case ScoreOp::kSelect: {
        std::string c = tile(value(e, n.a)), x = value(e, n.b), y = tile(value(e, n.c));
        std::string pred = alloc("nl.uint8");
        line(absl::StrCat("nisa.tensor_copy(dst=", pred, "[0:qs, 0:ks], src=", c, "[0:qs, 0:ks])"));
        r = alloc();
        line(absl::StrCat("nisa.tensor_copy(dst=", r, "[0:qs, 0:ks], src=", y, "[0:qs, 0:ks])"));
        line(absl::StrCat("nisa.tensor_copy_predicated(dst=", r, "[0:qs, 0:ks], src=",
                          isTile(x) ? absl::StrCat(x, "[0:qs, 0:ks]") : x, ", predicate=", pred, "[0:qs, 0:ks])"));
        break;
      }
      default:
        if (const char *act = actName(n.op)) {
          std::string x = tile(value(e, n.a));
          r = alloc();
          line(absl::StrCat("nisa.activation(dst=", r, "[0:qs, 0:ks], op=", act, ", data=", x, "[0:qs, 0:ks])"));
        } else {
          std::string x = value(e, n.a), y = value(e, n.b);
          const char *op = aluName(n.op);
          if (isTile(x) && isTile(y)) {
            r = alloc();
            line(absl::StrCat("nisa.tensor_tensor(dst=", r, "[0:qs, 0:ks], data1=", x, "[0:qs, 0:ks], data2=", y,
                              "[0:qs, 0:ks], op=", op, ")"));
          } else if (isTile(x)) {
            r = scalarOp(x, op, y, false);
          } else if (isTile(y)) {
            r = scalarOp(y, op, x, true);
          } else {
            r = scalarOp(tile(x), op, y, false);
          }
        }
    }
    memo_[key] = r;
    return r;
  }

  std::string tile(const std::string &v) {
    if (isTile(v)) return v;
    std::string t = alloc();
    line(absl::StrCat("nisa.memset(dst=", t, "[0:qs, 0:ks], value=", v, ")"));
    return t;
  }
  void line(const std::string &s) { *out_ += ind_ + s + "\n"; }

 private:
  static bool isTile(const std::string &v) { return !v.empty() && (v[0] == 't' || v == "s"); }
  std::string alloc(const std::string &dt = "nl.float32") {
    std::string n = absl::StrCat("t", next_++);
    line(absl::StrCat(n, " = nl.ndarray((Q_TILE, K_TILE), dtype=", dt, ", buffer=nl.sbuf)"));
    return n;
  }
  std::string scalarOp(const std::string &t, const char *op, const std::string &operand, bool reverse) {
    std::string r = alloc();
    line(absl::StrCat("nisa.tensor_scalar(dst=", r, "[0:qs, 0:ks], data=", t, "[0:qs, 0:ks], op0=", op,
                      ", operand0=", operand, reverse ? ", reverse0=True)" : ")"));
    return r;
  }

  const program::AttentionSpec &a_;
  std::string *out_;
  std::string ind_;
  int next_ = 0;
  std::map<std::pair<const ScoreExpr *, int>, std::string> memo_;
};

}  // namespace

absl::Status checkNkiAttention(const program::AttentionSpec &a0, const Limits &lim) {
  // The key mask is applied element-wise here (program::foldKeyMask).
  program::AttentionSpec a = a0;
  FUSEC_RETURN_IF_ERROR(program::foldKeyMask(a));
  if (a.headDim > lim.partitions)
    return absl::UnimplementedError(absl::StrCat("attention head dim > ", lim.partitions,
                                                 " (the contraction spans one partition tile)"));
  if (a.headDimV > matmulFreeMax(lim))
    return absl::UnimplementedError(
        absl::StrCat("attention value head dim > ", matmulFreeMax(lim), " (one matmul result, one PSUM bank)"));
  if (a.qType != a.kType || a.kType != a.vType)
    return absl::UnimplementedError("attention with Q, K, V of different dtypes");
  for (ir::DType t : {a.qType, a.oType})
    if (t != ir::DType::kF32 && t != ir::DType::kBF16 && t != ir::DType::kF16)
      return absl::UnimplementedError(absl::StrCat("attention in ", ir::dtypeName(t)));
  for (const program::AttentionBias &b : a.biases)
    if (nlDType(b.dtype).empty())
      return absl::UnimplementedError(absl::StrCat("attention bias in ", ir::dtypeName(b.dtype)));
  if (auto st = checkExpr(a.scoreMod); !st.ok()) return st;
  return checkExpr(a.mask);
}

absl::StatusOr<std::string> printNkiAttention(const program::AttentionSpec &a0, const Limits &lim,
                                              const std::string &symbol, const std::vector<std::string> &comment) {
  if (auto st = checkNkiAttention(a0, lim); !st.ok()) return st;
  // The key mask is applied element-wise in the score tile (program::foldKeyMask).
  program::AttentionSpec a = a0;
  FUSEC_RETURN_IF_ERROR(program::foldKeyMask(a));
  const int64_t qTile = queryTile(lim), kTile = keyTile(lim);
  const int64_t nq = (a.seqQ + qTile - 1) / qTile, nk = (a.seqK + kTile - 1) / kTile;
  // Tile liveness from the mask at compile time: 0 = fully masked, 1 = partial, 2 = fully live.
  std::map<std::vector<int64_t>, int> state;  // {b, h, iq, jk}
  bool perHead = false;
  const bool evaluate = !a.mask.empty() && a.batch * a.numHeads * a.seqQ * a.seqK <= (int64_t{1} << 22);
  if (evaluate) {
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.numHeads; ++h)
        for (int64_t iq = 0; iq < nq; ++iq)
          for (int64_t jk = 0; jk < nk; ++jk) {
            int live = 0, total = 0;
            for (int64_t q = iq * qTile; q < std::min(a.seqQ, (iq + 1) * qTile); ++q)
              for (int64_t k = jk * kTile; k < std::min(a.seqK, (jk + 1) * kTile); ++k) {
                ir::ScoreEnv env;
                env.b = b;
                env.h = h;
                env.q = q;
                env.k = k;
                live += ir::evalScoreExpr(a.mask, env) != 0;
                ++total;
              }
            int s = live == 0 ? 0 : live == total ? 2 : 1;
            state[{b, h, iq, jk}] = s;
            if (s != state[{0, 0, iq, jk}]) perHead = true;
          }
  }
  auto tilesOf = [&](int64_t b, int64_t h, int64_t iq, int want) {
    std::vector<std::string> v;
    for (int64_t jk = 0; jk < nk; ++jk) {
      int s = evaluate ? state[{b, h, iq, jk}] : (a.mask.empty() ? 2 : 1);
      if ((want == 3 && s != 0) || s == want) v.push_back(std::to_string(jk));
    }
    return absl::StrCat("(", absl::StrJoin(v, ", "), v.size() == 1 ? ",)" : ")");
  };
  auto table = [&](int want) {
    std::vector<std::string> rows;
    for (int64_t b = 0; b < (perHead ? a.batch : 1); ++b)
      for (int64_t h = 0; h < (perHead ? a.numHeads : 1); ++h)
        for (int64_t iq = 0; iq < nq; ++iq)
          rows.push_back(absl::StrCat(perHead ? absl::StrCat("(", b, ", ", h, ", ", iq, ")") : std::to_string(iq),
                                      ": ", tilesOf(b, h, iq, want)));
    return absl::StrCat("{", absl::StrJoin(rows, ", "), "}");
  };
  const std::string key = perHead ? "(b, h, iq)" : "iq";
  const std::string qdt = nlDType(a.qType), odt = nlDType(a.oType);
  std::vector<std::string> args = {"q", "k", "v"};
  for (size_t i = 0; i < a.biases.size(); ++i) args.push_back(absl::StrCat("bias", i));
  std::string s;
  for (const std::string &c : comment) s += absl::StrCat("# ", c, "\n");
  s += absl::StrCat("# score_mod: ", a.scoreMod.empty() ? "score" : a.scoreMod.str(),
                    "; mask: ", a.mask.empty() ? "none" : a.mask.str(), "\n");
  s += absl::StrCat("@nki.jit\ndef ", symbol, "(", absl::StrJoin(args, ", "), "):\n");
  s += absl::StrCat("    B, HQ, HKV, SQ, SK, D, DV = ", a.batch, ", ", a.numHeads, ", ", a.kvHeads, ", ", a.seqQ,
                    ", ", a.seqK, ", ", a.headDim, ", ", a.headDimV, "\n");
  s += "    GROUP = HQ // HKV  # query heads per key/value head (GQA)\n";
  s += absl::StrCat("    Q_TILE = ", qTile, "  # query rows per tile (partitions)\n");
  s += absl::StrCat("    K_TILE = ", kTile, "  # keys per tile: scores [Q_TILE, K_TILE] fp32 in one PSUM bank\n");
  s += absl::StrCat("    SCALE = ", lit(a.scale), "\n");
  for (const auto &[name, values] : a.tables) {
    std::vector<std::string> v;
    for (float x : values) v.push_back(lit(x));
    s += absl::StrCat("    TABLE_", name, " = (", absl::StrJoin(v, ", "), v.size() == 1 ? ",)\n" : ")\n");
  }
  s += absl::StrCat("    KEY_TILES = ", table(3), "  # key tiles with a live score (the others are skipped)\n");
  s += absl::StrCat("    MASKED_TILES = ", table(1), "  # key tiles the mask cuts (predicated)\n");
  s += absl::StrCat("    o = nl.ndarray((B, HQ, SQ, DV), dtype=", odt, ", buffer=nl.shared_hbm)\n");
  s += "    for b in nl.affine_range(B):\n";
  s += "        for h in nl.affine_range(HQ):\n";
  s += "            kh = h // GROUP\n";
  s += "            for iq in nl.affine_range((SQ + Q_TILE - 1) // Q_TILE):\n";
  s += "                q0 = iq * Q_TILE\n";
  s += "                qs = min(Q_TILE, SQ - q0)\n";
  s += absl::StrCat("                qt = nl.ndarray((D, Q_TILE), dtype=", qdt, ", buffer=nl.sbuf)\n");
  s += absl::StrCat("                nisa.dma_copy(dst=qt[0:D, 0:qs], src=q.ap(pattern=[[", a.qStrides[3], ", D], [",
                    a.qStrides[2], ", qs]], offset=b * ", a.qStrides[0], " + h * ", a.qStrides[1], " + q0 * ",
                    a.qStrides[2], "))\n");
  s += "                m = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)  # running row max\n";
  s += "                nisa.memset(dst=m[0:qs, 0:1], value=-3.40282347e+38)  # -FLT_MAX: below every finite score\n";
  s += "                l = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)  # running row sum\n";
  s += "                nisa.memset(dst=l[0:qs, 0:1], value=0.0)\n";
  s += "                acc = nl.ndarray((Q_TILE, DV), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += "                nisa.memset(dst=acc[0:qs, 0:DV], value=0.0)\n";
  s += absl::StrCat("                for jk in KEY_TILES[", key, "]:  # in order: m, l, acc carry over\n");
  const std::string in = "                    ";
  // The V tile [ks, DV] of keys k0.. (b, kh) into SBUF, at indentation \p ind.
  auto vTile = [&](const std::string &ind) {
    return absl::StrCat(ind, "vt = nl.ndarray((K_TILE, DV), dtype=", qdt, ", buffer=nl.sbuf)\n", ind,
                        "nisa.dma_copy(dst=vt[0:ks, 0:DV], src=v.ap(pattern=[[", a.vStrides[2], ", ks], [",
                        a.vStrides[3], ", DV]], offset=b * ", a.vStrides[0], " + kh * ", a.vStrides[1],
                        " + k0 * ", a.vStrides[2], "))\n");
  };
  s += in + "k0 = jk * K_TILE\n";
  s += in + "ks = min(K_TILE, SK - k0)\n";
  s += in + absl::StrCat("kt = nl.ndarray((D, K_TILE), dtype=", qdt, ", buffer=nl.sbuf)\n");
  s += in + absl::StrCat("nisa.dma_copy(dst=kt[0:D, 0:ks], src=k.ap(pattern=[[", a.kStrides[3], ", D], [",
                         a.kStrides[2], ", ks]], offset=b * ", a.kStrides[0], " + kh * ", a.kStrides[1],
                         " + k0 * ", a.kStrides[2], "))\n");
  s += in + "s_ps = nl.ndarray((Q_TILE, K_TILE), dtype=nl.float32, buffer=nl.psum)\n";
  s += in + "nisa.nc_matmul(dst=s_ps[0:qs, 0:ks], stationary=qt[0:D, 0:qs], moving=kt[0:D, 0:ks])\n";
  s += in + "s = nl.ndarray((Q_TILE, K_TILE), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.activation(dst=s[0:qs, 0:ks], op=nl.copy, data=s_ps[0:qs, 0:ks], scale=SCALE)\n";
  if (!a.scoreMod.empty()) {
    ExprPrinter p(a, &s, in);
    std::string r = p.tile(p.value(a.scoreMod, a.scoreMod.root));
    p.line(absl::StrCat("nisa.tensor_copy(dst=s[0:qs, 0:ks], src=", r, "[0:qs, 0:ks])  # score_mod"));
  }
  if (!a.mask.empty()) {
    s += in + absl::StrCat("if jk in MASKED_TILES[", key, "]:\n");
    ExprPrinter p(a, &s, in + "    ");
    std::string mk = p.tile(p.value(a.mask, a.mask.root));
    p.line("pred = nl.ndarray((Q_TILE, K_TILE), dtype=nl.uint8, buffer=nl.sbuf)");
    p.line(absl::StrCat("nisa.tensor_copy(dst=pred[0:qs, 0:ks], src=", mk, "[0:qs, 0:ks])"));
    p.line("nisa.tensor_copy_predicated(dst=s[0:qs, 0:ks], src=-float(\"inf\"), predicate=pred[0:qs, 0:ks], "
           "reverse_pred=True)");
  }
  s += in + "rmax = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.tensor_reduce(dst=rmax[0:qs, 0:1], op=nl.maximum, data=s[0:qs, 0:ks], axis=1)\n";
  s += in + "m_new = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.tensor_tensor(dst=m_new[0:qs, 0:1], data1=m[0:qs, 0:1], data2=rmax[0:qs, 0:1], op=nl.maximum)\n";
  s += in + "neg_m = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.tensor_scalar(dst=neg_m[0:qs, 0:1], data=m_new[0:qs, 0:1], op0=nl.multiply, operand0=-1.0)\n";
  s += in + "p = nl.ndarray((Q_TILE, K_TILE), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "rsum = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.activation(dst=p[0:qs, 0:ks], op=nl.exp, data=s[0:qs, 0:ks], bias=neg_m[0:qs, 0:1], "
            "reduce_op=nl.add, reduce_res=rsum[0:qs, 0:1], reduce_cmd=nisa.reduce_cmd.reset_reduce)\n";
  s += in + "corr = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += in + "nisa.activation(dst=corr[0:qs, 0:1], op=nl.exp, data=m[0:qs, 0:1], bias=neg_m[0:qs, 0:1])\n";
  s += in + "nisa.scalar_tensor_tensor(dst=l[0:qs, 0:1], data=l[0:qs, 0:1], op0=nl.multiply, "
            "operand0=corr[0:qs, 0:1], op1=nl.add, operand1=rsum[0:qs, 0:1])\n";
  s += in + "nisa.tensor_scalar(dst=acc[0:qs, 0:DV], data=acc[0:qs, 0:DV], op0=nl.multiply, "
            "operand0=corr[0:qs, 0:1])\n";
  s += in + "nisa.tensor_copy(dst=m[0:qs, 0:1], src=m_new[0:qs, 0:1])\n";
  s += in + "pt_ps = nl.ndarray((K_TILE, Q_TILE), dtype=nl.float32, buffer=nl.psum)\n";
  s += in + "nisa.nc_transpose(dst=pt_ps[0:ks, 0:qs], data=p[0:qs, 0:ks])  # P^T on TensorE\n";
  s += in + absl::StrCat("pt = nl.ndarray((K_TILE, Q_TILE), dtype=", qdt, ", buffer=nl.sbuf)\n");
  s += in + "nisa.tensor_copy(dst=pt[0:ks, 0:qs], src=pt_ps[0:ks, 0:qs])\n";
  s += vTile(in);
  s += in + "pv = nl.ndarray((Q_TILE, DV), dtype=nl.float32, buffer=nl.psum)\n";
  s += in + "nisa.nc_matmul(dst=pv[0:qs, 0:DV], stationary=pt[0:ks, 0:qs], moving=vt[0:ks, 0:DV])\n";
  s += in + "nisa.tensor_tensor(dst=acc[0:qs, 0:DV], data1=acc[0:qs, 0:DV], data2=pv[0:qs, 0:DV], op=nl.add)\n";
  std::string lDiv = "l";
  if (a.maskedRowsMean) {
    // masked_rows "mean": a row with no live key (l = 0, acc = 0) takes the
    // mean of V over all SK keys. With e = (l == 0): O = (acc + e * mean) / (l + e).
    const std::string i2 = "                ";
    s += i2 + "# masked_rows \"mean\": rows with no live key take the mean of V over all keys\n";
    s += i2 + absl::StrCat("ones = nl.ndarray((K_TILE, Q_TILE), dtype=", qdt, ", buffer=nl.sbuf)\n");
    s += i2 + "nisa.memset(dst=ones[0:K_TILE, 0:Q_TILE], value=1.0)\n";
    s += i2 + "vmean = nl.ndarray((Q_TILE, DV), dtype=nl.float32, buffer=nl.sbuf)\n";
    s += i2 + "nisa.memset(dst=vmean[0:qs, 0:DV], value=0.0)\n";
    s += i2 + "for jv in nl.sequential_range((SK + K_TILE - 1) // K_TILE):\n";
    s += i2 + "    k0 = jv * K_TILE\n";
    s += i2 + "    ks = min(K_TILE, SK - k0)\n";
    s += vTile(i2 + "    ");
    s += i2 + "    vs_ps = nl.ndarray((Q_TILE, DV), dtype=nl.float32, buffer=nl.psum)\n";
    s += i2 + "    nisa.nc_matmul(dst=vs_ps[0:qs, 0:DV], stationary=ones[0:ks, 0:qs], moving=vt[0:ks, 0:DV])\n";
    s += i2 + "    nisa.tensor_tensor(dst=vmean[0:qs, 0:DV], data1=vmean[0:qs, 0:DV], data2=vs_ps[0:qs, 0:DV], "
              "op=nl.add)\n";
    s += i2 + "nisa.tensor_scalar(dst=vmean[0:qs, 0:DV], data=vmean[0:qs, 0:DV], op0=nl.multiply, "
              "operand0=1.0 / SK)\n";
    s += i2 + "empty = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
    s += i2 + "nisa.tensor_scalar(dst=empty[0:qs, 0:1], data=l[0:qs, 0:1], op0=nl.equal, operand0=0.0)\n";
    s += i2 + "nisa.scalar_tensor_tensor(dst=acc[0:qs, 0:DV], data=vmean[0:qs, 0:DV], op0=nl.multiply, "
              "operand0=empty[0:qs, 0:1], op1=nl.add, operand1=acc[0:qs, 0:DV])\n";
    s += i2 + "l_e = nl.ndarray((Q_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
    s += i2 + "nisa.tensor_tensor(dst=l_e[0:qs, 0:1], data1=l[0:qs, 0:1], data2=empty[0:qs, 0:1], op=nl.add)\n";
    lDiv = "l_e";
  }
  s += "                res = nl.ndarray((Q_TILE, DV), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += absl::StrCat("                nisa.tensor_scalar(dst=res[0:qs, 0:DV], data=acc[0:qs, 0:DV], op0=nl.divide, "
                    "operand0=", lDiv, "[0:qs, 0:1])  # a row with no live score: 0 / 0 = NaN\n");
  if (odt != "nl.float32") {
    s += absl::StrCat("                out_t = nl.ndarray((Q_TILE, DV), dtype=", odt, ", buffer=nl.sbuf)\n");
    s += "                nisa.tensor_copy(dst=out_t[0:qs, 0:DV], src=res[0:qs, 0:DV])\n";
  } else {
    s += "                out_t = res\n";
  }
  s += absl::StrCat("                nisa.dma_copy(dst=o.ap(pattern=[[", a.oStrides[2], ", qs], [", a.oStrides[3],
                    ", DV]], offset=b * ", a.oStrides[0], " + h * ", a.oStrides[1], " + q0 * ", a.oStrides[2],
                    "), src=out_t[0:qs, 0:DV])\n");
  s += "    return o\n";
  return s;
}

}  // namespace fusec::codegen::nki
