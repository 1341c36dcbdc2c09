//===- AttentionNaive.cpp - Simple online-softmax attention in CUDA -------===//
//
// The correctness-first CUDA kernel for an AttentionSpec (Attention.h). No
// tensor cores, no shared-memory tiling:
//  - one warp per query row (b, h, q); a block holds kRows = 4 warps (4
//    consecutive query rows of one (b, h)); grid (ceil(Sq/4), Hq, B);
//  - lane l keeps Q[d] for d = l, l+32, ... and the output accumulator for
//    e = l, l+32, ... in registers (sizes are compile-time constants);
//  - for every key k (whose mask is true): the dot product is a per-lane
//    partial sum plus a warp all-reduce, s = scale * dot (f32); then
//    x = score_mod(s, ...), and the online softmax update (running max m,
//    running sum l, accumulator rescaled by exp(m_old - m_new));
//  - O = acc / l, so a row with no finite x gives 0/0 = NaN, matching the
//    decomposed Softmax of an all -inf row.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/CudaEmitter.h"
#include "codegen/cuda/attention/TiledAttention.h"
#include "support/Status.h"

namespace fusec::codegen {

namespace {

std::string floatLit(double v) {
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = ir::scoreFloatLiteral(f);
  return absl::StrCat("(", s, "f)");
}

std::string printCuda(const ir::ScoreExpr &e, int id, const ScoreCudaNames &nm) {
  const ir::ScoreNode &n = e.node(id);
  auto A = [&] { return printCuda(e, n.a, nm); };
  auto B = [&] { return printCuda(e, n.b, nm); };
  const bool fl = n.type == ir::ScoreType::kFloat;
  using ir::ScoreOp;
  switch (n.op) {
    case ScoreOp::kConst:
      return fl ? floatLit(n.value) : absl::StrCat("(", static_cast<int64_t>(n.value), "LL)");
    case ScoreOp::kScore: return nm.score;
    case ScoreOp::kB: return nm.b;
    case ScoreOp::kH: return nm.h;
    case ScoreOp::kQ: return nm.q;
    case ScoreOp::kK: return nm.k;
    case ScoreOp::kBias:
      return n.index < static_cast<int>(nm.bias.size()) ? nm.bias[n.index] : std::string("0.0f");
    case ScoreOp::kTable:
      return absl::StrCat("fa_tab(", nm.tablePrefix, n.name, ", (long long)(", A(), "))");
    case ScoreOp::kNeg: return absl::StrCat("(-", A(), ")");
    case ScoreOp::kNot: return absl::StrCat("(!", A(), ")");
    case ScoreOp::kAdd: return absl::StrCat("(", fl ? "(float)" : "", A(), " + ", B(), ")");
    case ScoreOp::kSub: return absl::StrCat("(", fl ? "(float)" : "", A(), " - ", B(), ")");
    case ScoreOp::kMul: return absl::StrCat("(", fl ? "(float)" : "", A(), " * ", B(), ")");
    case ScoreOp::kDiv:
      return fl ? absl::StrCat("((float)", A(), " / ", B(), ")")
                : absl::StrCat("fa_idiv(", A(), ", ", B(), ")");
    case ScoreOp::kLt: return absl::StrCat("(", A(), " < ", B(), ")");
    case ScoreOp::kLe: return absl::StrCat("(", A(), " <= ", B(), ")");
    case ScoreOp::kGt: return absl::StrCat("(", A(), " > ", B(), ")");
    case ScoreOp::kGe: return absl::StrCat("(", A(), " >= ", B(), ")");
    case ScoreOp::kEq: return absl::StrCat("(", A(), " == ", B(), ")");
    case ScoreOp::kNe: return absl::StrCat("(", A(), " != ", B(), ")");
    case ScoreOp::kAnd: return absl::StrCat("(", A(), " && ", B(), ")");
    case ScoreOp::kOr: return absl::StrCat("(", A(), " || ", B(), ")");
    case ScoreOp::kSelect: {
      const char *cast = fl ? "(float)" : n.type == ir::ScoreType::kInt ? "(long long)" : "(bool)";
      return absl::StrCat("(", printCuda(e, n.a, nm), " ? ", cast, B(), " : ", cast,
                          printCuda(e, n.c, nm), ")");
    }
    case ScoreOp::kTanh: return absl::StrCat("tanhf((float)", A(), ")");
    case ScoreOp::kExp: return absl::StrCat("expf((float)", A(), ")");
    case ScoreOp::kLog: return absl::StrCat("logf((float)", A(), ")");
    case ScoreOp::kSqrt: return absl::StrCat("sqrtf((float)", A(), ")");
    case ScoreOp::kAbs:
      return fl ? absl::StrCat("fabsf((float)", A(), ")") : absl::StrCat("llabs(", A(), ")");
    case ScoreOp::kMin:
      return fl ? absl::StrCat("fminf((float)", A(), ", (float)", B(), ")")
                : absl::StrCat("fa_imin(", A(), ", ", B(), ")");
    case ScoreOp::kMax:
      return fl ? absl::StrCat("fmaxf((float)", A(), ", (float)", B(), ")")
                : absl::StrCat("fa_imax(", A(), ", ", B(), ")");
  }
  return "0";
}

/// Helpers shared by every attention kernel of one .cu (guarded).
const char *kHelpers = R"CUDA(#ifndef FUSEC_ATTENTION_HELPERS
#define FUSEC_ATTENTION_HELPERS
__device__ __forceinline__ long long fa_idiv(long long a, long long b) { return b == 0 ? 0 : a / b; }
__device__ __forceinline__ long long fa_imin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long fa_imax(long long a, long long b) { return a > b ? a : b; }
template <int N>
__device__ __forceinline__ float fa_tab(const float (&t)[N], long long i) {
  return (i >= 0 && i < N) ? t[i] : __int_as_float(0x7fc00000);
}
__device__ __forceinline__ float fa_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
#endif
)CUDA";

}  // namespace

std::string scoreExprToCuda(const ir::ScoreExpr &e, const ScoreCudaNames &names, bool asBool) {
  if (e.empty()) return asBool ? "true" : names.score;
  std::string s = printCuda(e, e.root, names);
  return asBool ? absl::StrCat("((bool)", s, ")") : absl::StrCat("((float)", s, ")");
}

absl::StatusOr<std::string> emitAttentionKernelNaive(const AttentionSpec &spec,
                                                     const std::string &symbol) {
  // The key mask is applied element-wise in this kernel (program::foldKeyMask).
  AttentionSpec s = spec;
  FUSEC_RETURN_IF_ERROR(foldKeyMask(s));
  for (int64_t d : {s.batch, s.numHeads, s.kvHeads, s.seqQ, s.seqK, s.headDim, s.headDimV})
    if (d <= 0) return absl::InvalidArgumentError("codegen: attention with a zero or negative extent");
  if (s.numHeads % s.kvHeads != 0)
    return absl::InvalidArgumentError(absl::StrCat("codegen: attention with ", s.numHeads,
                                                   " query heads and ", s.kvHeads, " kv heads"));
  const char *qT = cudaStorageType(s.qType), *kT = cudaStorageType(s.kType), *vT = cudaStorageType(s.vType),
             *oT = cudaStorageType(s.oType);
  if (!qT || !kT || !vT || !oT)
    return absl::UnimplementedError("codegen: attention storage dtype without a CUDA type");
  for (const AttentionBias &b : s.biases)
    if (!cudaStorageType(b.dtype)) return absl::UnimplementedError("codegen: attention bias dtype without a CUDA type");
  if (s.scoreMod.numBiasesUsed() > static_cast<int>(s.biases.size()))
    return absl::InvalidArgumentError("codegen: score_mod reads a bias input the spec lacks");
  for (const std::string &t : s.scoreMod.tablesUsed())
    if (!s.tables.count(t)) return absl::InvalidArgumentError(absl::StrCat("codegen: no table '", t, "'"));

  const int64_t dq = (s.headDim + 31) / 32, dv = (s.headDimV + 31) / 32;
  const int kRows = 4;
  std::string out = kHelpers;
  const std::string k = absl::StrCat(symbol, "_kernel");
  // Tables.
  for (const auto &[name, vals] : s.tables) {
    std::vector<std::string> lits;
    for (float f : vals) lits.push_back(floatLit(f));
    if (lits.empty()) lits.push_back("0.0f");
    absl::StrAppend(&out, "__device__ const float ", symbol, "_tab_", name, "[", lits.size(), "] = {",
                    absl::StrJoin(lits, ", "), "};\n");
  }
  ScoreCudaNames nm;
  nm.tablePrefix = absl::StrCat(symbol, "_tab_");
  for (size_t i = 0; i < s.biases.size(); ++i) {
    const auto &st = s.biases[i].strides;
    nm.bias.push_back(absl::StrFormat(
        "((float)fx::cvt(bias%d[b * %dLL + h * %dLL + q * %dLL + k * %dLL]))", i, st[0], st[1], st[2], st[3]));
  }
  std::string params = absl::StrCat("const ", qT, " *__restrict__ Q, const ", kT, " *__restrict__ K, const ",
                                    vT, " *__restrict__ V");
  for (size_t i = 0; i < s.biases.size(); ++i)
    absl::StrAppend(&params, ", const ", cudaStorageType(s.biases[i].dtype), " *__restrict__ bias", i);
  absl::StrAppend(&params, ", ", oT, " *__restrict__ O");

  absl::StrAppend(&out, "__global__ void __launch_bounds__(", 32 * kRows, ") ", k, "(", params, ") {\n");
  absl::StrAppend(&out, "  const int lane = threadIdx.x & 31;\n");
  absl::StrAppend(&out, "  const long long q = (long long)blockIdx.x * ", kRows, " + (threadIdx.x >> 5);\n");
  absl::StrAppend(&out, "  const long long h = blockIdx.y, b = blockIdx.z;\n");
  absl::StrAppend(&out, "  if (q >= ", s.seqQ, "LL) return;\n");
  absl::StrAppend(&out, "  const long long kh = h / ", s.groupSize(), "LL;\n");
  absl::StrAppend(&out, "  const ", qT, " *qp = Q + b * ", s.qStrides[0], "LL + h * ", s.qStrides[1],
                  "LL + q * ", s.qStrides[2], "LL;\n");
  absl::StrAppend(&out, "  const ", kT, " *kp = K + b * ", s.kStrides[0], "LL + kh * ", s.kStrides[1], "LL;\n");
  absl::StrAppend(&out, "  const ", vT, " *vp = V + b * ", s.vStrides[0], "LL + kh * ", s.vStrides[1], "LL;\n");
  absl::StrAppend(&out, "  float qr[", dq, "];\n  float acc[", dv, "];\n");
  absl::StrAppend(&out, "#pragma unroll\n  for (int i = 0; i < ", dq, "; ++i) { const int d = lane + 32 * i; qr[i] = d < ",
                  s.headDim, " ? (float)fx::cvt(qp[d]) : 0.0f; }\n");
  absl::StrAppend(&out, "#pragma unroll\n  for (int i = 0; i < ", dv, "; ++i) acc[i] = 0.0f;\n");
  absl::StrAppend(&out, "  float m = __int_as_float(0xff800000), l = 0.0f;\n");
  absl::StrAppend(&out, "  for (long long k = 0; k < ", s.seqK, "LL; ++k) {\n");
  if (!s.mask.empty())
    absl::StrAppend(&out, "    if (!", scoreExprToCuda(s.mask, nm, true), ") continue;\n");
  absl::StrAppend(&out, "    const ", kT, " *kr = kp + k * ", s.kStrides[2], "LL;\n");
  absl::StrAppend(&out, "    float part = 0.0f;\n");
  absl::StrAppend(&out, "#pragma unroll\n    for (int i = 0; i < ", dq, "; ++i) { const int d = lane + 32 * i; if (d < ",
                  s.headDim, ") part += qr[i] * (float)fx::cvt(kr[d]); }\n");
  absl::StrAppend(&out, "    const float s = ", floatLit(s.scale), " * fa_warp_sum(part);\n");
  absl::StrAppend(&out, "    const float x = ", scoreExprToCuda(s.scoreMod, nm, false), ";\n");
  absl::StrAppend(&out, "    (void)s; (void)b; (void)h; (void)q;\n");
  absl::StrAppend(&out, "    const float mNew = fmaxf(m, x);\n");
  absl::StrAppend(&out, "    if (mNew == __int_as_float(0xff800000)) continue;  // x and m are -inf\n");
  absl::StrAppend(&out, "    const float corr = expf(m - mNew), p = expf(x - mNew);\n");
  absl::StrAppend(&out, "    l = l * corr + p;\n");
  absl::StrAppend(&out, "    const ", vT, " *vr = vp + k * ", s.vStrides[2], "LL;\n");
  absl::StrAppend(&out, "#pragma unroll\n    for (int i = 0; i < ", dv, "; ++i) { const int e = lane + 32 * i; acc[i] = acc[i] * corr + (e < ",
                  s.headDimV, " ? p * (float)fx::cvt(vr[e]) : 0.0f); }\n");
  absl::StrAppend(&out, "    m = mNew;\n  }\n");
  absl::StrAppend(&out, "  ", oT, " *op = O + b * ", s.oStrides[0], "LL + h * ", s.oStrides[1], "LL + q * ",
                  s.oStrides[2], "LL;\n");
  if (s.maskedRowsMean) {
    // masked_rows "mean": a row with no live key is the mean of V over all keys.
    absl::StrAppend(&out, "  if (!(l > 0.0f)) {\n");
    absl::StrAppend(&out, "#pragma unroll\n    for (int i = 0; i < ", dv, "; ++i) { const int e = lane + 32 * i; acc[i] = 0.0f;\n",
                    "      if (e < ", s.headDimV, ") for (long long k = 0; k < ", s.seqK, "LL; ++k) acc[i] += (float)fx::cvt(vp[k * ",
                    s.vStrides[2], "LL + e]); }\n");
    absl::StrAppend(&out, "    l = ", s.seqK, ".0f;\n  }\n");
  }
  absl::StrAppend(&out, "#pragma unroll\n  for (int i = 0; i < ", dv, "; ++i) { const int e = lane + 32 * i; if (e < ",
                  s.headDimV, ") op[e] = fx::to<", oT, ">(acc[i] / l); }\n");
  absl::StrAppend(&out, "}\n\n");
  // Launcher.
  absl::StrAppend(&out, "extern \"C\" int ", symbol, "(void *const *buffers, cudaStream_t stream) {\n");
  std::vector<std::string> args{absl::StrCat("(const ", qT, " *)buffers[0]"),
                                absl::StrCat("(const ", kT, " *)buffers[1]"),
                                absl::StrCat("(const ", vT, " *)buffers[2]")};
  for (size_t i = 0; i < s.biases.size(); ++i)
    args.push_back(absl::StrCat("(const ", cudaStorageType(s.biases[i].dtype), " *)buffers[", 3 + i, "]"));
  args.push_back(absl::StrCat("(", oT, " *)buffers[", s.outputBuffer(), "]"));
  absl::StrAppend(&out, "  dim3 grid(", (s.seqQ + kRows - 1) / kRows, ", ", s.numHeads, ", ", s.batch, ");\n");
  absl::StrAppend(&out, "  ", k, "<<<grid, ", 32 * kRows, ", 0, stream>>>(", absl::StrJoin(args, ", "), ");\n");
  absl::StrAppend(&out, "  return (int)cudaGetLastError();\n}\n");
  return out;
}

std::string describeAttentionKernel(const AttentionSpec &spec, const std::string &arch) {
  ScoreCudaNames names;
  for (size_t i = 0; i < spec.biases.size(); ++i) names.bias.push_back(absl::StrCat("bias", i));
  names.tablePrefix = "tab_";
  auto print = [&](const ir::ScoreExpr &e, bool asBool) { return scoreExprToCuda(e, names, asBool); };
  absl::StatusOr<attention::FlashAttentionSpec> f = attention::toFlashSpec(spec, print);
  if (!f.ok()) return absl::StrCat("attention kernel: simple (the tiled kernel declines: ", f.status().message(), ")");
  attention::FlashEmitOptions opt;
  opt.smVersion = 90;
  opt.hopper = arch == "sm_90a";
  return absl::StrCat("attention kernel: ", attention::describeFlashKernel(*f, opt));
}

absl::StatusOr<std::string> emitAttentionKernel(const AttentionSpec &spec, const std::string &symbol,
                                                const std::vector<std::string> &symbolNames,
                                                const std::string &arch) {
  // The tiled tensor-core kernel (codegen/cuda/attention, FlashAttention-2
  // structure) covers bf16/f16 (and an exact fp32 SIMT path); anything it
  // declines (Unimplemented) gets the simple kernel, which is correct for
  // every valid spec.
  ScoreCudaNames names;
  for (size_t i = 0; i < spec.biases.size(); ++i) names.bias.push_back(absl::StrCat("bias", i));
  names.tablePrefix = "tab_";
  auto print = [&](const ir::ScoreExpr &e, bool asBool) { return scoreExprToCuda(e, names, asBool); };
  attention::TiledAttentionOptions topts;
  topts.symbolNames = symbolNames;
  topts.hopper = arch == "sm_90a";
  absl::StatusOr<std::string> tiled = attention::emitTiledAttention(spec, symbol, print, topts);
  // The printed expressions call the fa_* helpers (tables, integer ops).
  if (tiled.ok()) return absl::StrCat(kHelpers, *tiled);
  if (tiled.status().code() != absl::StatusCode::kUnimplemented) return tiled.status();
  if (!symbolNames.empty())
    return absl::UnimplementedError(absl::StrCat("dynamic shapes: attention needs the tiled kernel, which declines "
                                                 "this one (", tiled.status().message(), ")"));
  return emitAttentionKernelNaive(spec, symbol);
}

}  // namespace fusec::codegen
