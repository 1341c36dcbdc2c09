//===- NkiGemm.cpp - A GEMM library call as a TensorE kernel ------------===//
//
// D[b, m, n] = epilogue(alpha * sum_k op(A)[b, m, k] op(B)[b, k, n]
//                       + beta * C[b, m, n] + bias[n])
// nisa.nc_matmul computes stationary^T @ moving with the contraction on the
// partitions (NKI.md section 4): stationary = op(A)^T tile [K_TILE, M_TILE]
// and moving = op(B) tile [K_TILE, N_TILE], both loaded by strided DMA;
// K tiles accumulate in one PSUM bank ([M_TILE, N_TILE] fp32 within one
// bank per partition). The tile sizes are the device's limits (Limits:
// K_TILE = partitions, M_TILE = the stationary free size, N_TILE = the
// moving free size and one bank of fp32; 128, 128, 512 on trn1/trn2).
// The epilogue runs on the way out of PSUM: ScalarE applies alpha while
// copying to SBUF, VectorE adds beta*C and the bias (a [1, N] row broadcast
// over partitions by a partition-stride-0 DMA), ScalarE applies relu /
// tanh-gelu.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codegen/nki/NkiKernel.h"
#include "support/Status.h"

namespace fusec::codegen::nki {

namespace {

/// The ScalarE activation that finishes epilogue \p e after the bias tile
/// is added (nullptr: none). The epilogue expression (program/Lowering.h)
/// must be x, relu(x) or the tanh GELU of x, x = acc or acc + bias[n];
/// candidates are rebuilt in a copy and compared by hash-consed id.
/// Errors: Unimplemented for any other expression.
absl::StatusOr<const char *> activationOf(const program::GemmEpilogue &e) {
  if (e.empty()) return nullptr;
  program::GemmEpilogue c = e;
  int x = c.accumulator();
  if (c.hasBias()) x = c.spec.binary(program::BinaryOp::kAdd, x, c.addBias(c.spec.buffers[1].dtype));
  if (e.value == x) return nullptr;
  if (e.value == program::buildRelu(c.spec, x)) return "nl.relu";
  if (e.value == program::buildGeluTanh(c.spec, x)) return "nl.gelu_apprx_tanh";
  return absl::UnimplementedError("GEMM epilogue other than bias, relu or tanh GELU has no NKI lowering");
}

/// \p v as a Python float literal that reads back as the same double
/// (alpha = 1/3 must not become 0.333333).
std::string pyFloat(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  std::string s = absl::StrFormat("%.17g", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

absl::Status checkNkiGemm(const program::GemmParams &g, const Limits &) {
  if (g.dtype != ir::DType::kF32 && g.dtype != ir::DType::kBF16 && g.dtype != ir::DType::kF16)
    return absl::UnimplementedError(
        absl::StrCat("GEMM in ", ir::dtypeName(g.dtype), " has no TensorE lowering"));
  if (g.dDtype != g.dtype)  // NKI lowers without LoweringOptions::foldGemmOutputCast
    return absl::UnimplementedError(absl::StrCat("GEMM of ", ir::dtypeName(g.dtype), " writing ",
                                                 ir::dtypeName(g.dDtype), " (an output Cast folded in)"));
  if (absl::StatusOr<const char *> act = activationOf(g.epilogue); !act.ok()) return act.status();
  return absl::OkStatus();
}

absl::StatusOr<std::string> printNkiGemm(const program::GemmParams &g, const Limits &lim, const std::string &symbol,
                                         const std::vector<std::string> &comment) {
  if (auto st = checkNkiGemm(g, lim); !st.ok()) return st;
  const std::string dt = nlDType(g.dtype);
  std::vector<std::string> args = {"a", "b"};
  if (g.c) args.push_back("c");
  if (g.bias) args.push_back("bias");
  std::vector<std::string> dshape;
  for (const ir::Dim &d : g.d->type().shape) dshape.push_back(std::to_string(d.value));
  // Element strides of op(A)[m, k] and op(B)[k, n] in the dense operands.
  const int64_t aM = g.transA ? 1 : g.k, aK = g.transA ? g.m : 1;
  const int64_t bK = g.transB ? 1 : g.n, bN = g.transB ? g.k : 1;
  std::string s;
  for (const std::string &c : comment) s += absl::StrCat("# ", c, "\n");
  s += absl::StrCat("@nki.jit\ndef ", symbol, "(", absl::StrJoin(args, ", "), "):\n");
  s += absl::StrCat("    M, N, K, BATCH = ", g.m, ", ", g.n, ", ", g.k, ", ", g.batch, "\n");
  s += absl::StrCat("    M_TILE = ", lim.matmulStationaryFreeMax,
                    "  # stationary free size (nl.tile_size.gemm_stationary_fmax)\n");
  s += absl::StrCat("    N_TILE = ", matmulFreeMax(lim),
                    "  # moving free size, one PSUM bank of fp32 (nl.tile_size.gemm_moving_fmax)\n");
  s += absl::StrCat("    K_TILE = ", lim.partitions, "  # contraction on the partitions (nl.tile_size.pmax)\n");
  s += absl::StrCat("    ALPHA, BETA = ", pyFloat(g.alpha), ", ", pyFloat(g.beta), "\n");
  s += absl::StrCat("    d = nl.ndarray((", absl::StrJoin(dshape, ", "), dshape.size() == 1 ? "," : "",
                    "), dtype=", dt, ", buffer=nl.shared_hbm)\n");
  s += "    for bi in nl.affine_range(BATCH):\n";
  s += "        for im in nl.affine_range((M + M_TILE - 1) // M_TILE):\n";
  s += "            m0 = im * M_TILE\n";
  s += "            ms = min(M_TILE, M - m0)\n";
  s += "            for jn in nl.affine_range((N + N_TILE - 1) // N_TILE):\n";
  s += "                n0 = jn * N_TILE\n";
  s += "                ns = min(N_TILE, N - n0)\n";
  s += "                acc = nl.ndarray((M_TILE, N_TILE), dtype=nl.float32, buffer=nl.psum)\n";
  s += "                for kk in nl.affine_range((K + K_TILE - 1) // K_TILE):\n";
  s += "                    k0 = kk * K_TILE\n";
  s += "                    ks = min(K_TILE, K - k0)\n";
  s += absl::StrCat("                    at = nl.ndarray((K_TILE, M_TILE), dtype=", dt, ", buffer=nl.sbuf)\n");
  s += absl::StrCat("                    nisa.dma_copy(dst=at[0:ks, 0:ms], src=a.ap(pattern=[[", aK, ", ks], [",
                    aM, ", ms]], offset=bi * ", g.strideA, " + k0 * ", aK, " + m0 * ", aM, "))\n");
  s += absl::StrCat("                    bt = nl.ndarray((K_TILE, N_TILE), dtype=", dt, ", buffer=nl.sbuf)\n");
  s += absl::StrCat("                    nisa.dma_copy(dst=bt[0:ks, 0:ns], src=b.ap(pattern=[[", bK, ", ks], [",
                    bN, ", ns]], offset=bi * ", g.strideB, " + k0 * ", bK, " + n0 * ", bN, "))\n");
  s += "                    nisa.nc_matmul(dst=acc[0:ms, 0:ns], stationary=at[0:ks, 0:ms], moving=bt[0:ks, 0:ns])\n";
  s += "                res = nl.ndarray((M_TILE, N_TILE), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += "                nisa.activation(dst=res[0:ms, 0:ns], op=nl.copy, data=acc[0:ms, 0:ns], scale=ALPHA)\n";
  auto addTile = [&](const std::string &what, const std::string &src, const std::string &pattern,
                     const std::string &offset, const char *scaleOp) {
    s += absl::StrCat("                ", what, "_raw = nl.ndarray((M_TILE, N_TILE), dtype=", dt,
                      ", buffer=nl.sbuf)\n");
    s += absl::StrCat("                nisa.dma_copy(dst=", what, "_raw[0:ms, 0:ns], src=", src,
                      ".ap(pattern=", pattern, ", offset=", offset, "))\n");
    s += absl::StrCat("                ", what, "_f = nl.ndarray((M_TILE, N_TILE), dtype=nl.float32, buffer=nl.sbuf)\n");
    if (scaleOp)
      s += absl::StrCat("                nisa.tensor_scalar(dst=", what, "_f[0:ms, 0:ns], data=", what,
                        "_raw[0:ms, 0:ns], op0=nl.multiply, operand0=BETA)\n");
    else
      s += absl::StrCat("                nisa.tensor_copy(dst=", what, "_f[0:ms, 0:ns], src=", what,
                        "_raw[0:ms, 0:ns])\n");
    s += absl::StrCat("                nisa.tensor_tensor(dst=res[0:ms, 0:ns], data1=res[0:ms, 0:ns], data2=",
                      what, "_f[0:ms, 0:ns], op=nl.add)\n");
  };
  if (g.c)
    addTile("ct", "c", "[[N, ms], [1, ns]]", absl::StrCat("bi * ", g.strideC, " + m0 * N + n0"), "beta");
  if (g.bias) addTile("bias_t", "bias", "[[0, ms], [1, ns]]", "n0", nullptr);
  // The epilogue expression, applied on the way out of PSUM: the bias tile
  // was added above; an activation on top of it maps to one ScalarE op.
  const char *act = nullptr;
  FUSEC_ASSIGN_OR_RETURN(act, activationOf(g.epilogue));
  if (act)
    s += absl::StrCat("                nisa.activation(dst=res[0:ms, 0:ns], op=", act, ", data=res[0:ms, 0:ns])\n");
  if (dt != "nl.float32") {
    s += absl::StrCat("                out_t = nl.ndarray((M_TILE, N_TILE), dtype=", dt, ", buffer=nl.sbuf)\n");
    s += "                nisa.tensor_copy(dst=out_t[0:ms, 0:ns], src=res[0:ms, 0:ns])\n";
  } else {
    s += "                out_t = res\n";
  }
  s += absl::StrCat("                nisa.dma_copy(dst=d.ap(pattern=[[N, ms], [1, ns]], offset=bi * ", g.strideD,
                    " + m0 * N + n0), src=out_t[0:ms, 0:ns])\n");
  s += "    return d\n";
  return s;
}

}  // namespace fusec::codegen::nki
