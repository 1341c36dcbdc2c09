//===- NkiConv.cpp - A 1-D / 2-D convolution as TensorE matmuls over taps ===//
//
// y[n, o, oh, ow] = bias[o] + sum_{c, kh, kw} w[o, c, kh, kw] *
//                   x[n, c, oh*SH + kh*DH - PH, ow*SW + kw*DW - PW]   (zero outside)
// computed per kernel tap (kh, kw) as a matmul (NKI.md section 4,
// nc_matmul): stationary = w[o tile, c tile, kh, kw]^T ([channels, outputs]),
// moving = the input pixels that tap reads for a tile of output rows
// ([channels, rows * OW], loaded by one strided DMA; rows/columns that fall
// into the padding stay zero). Every tap and channel tile accumulates into
// one PSUM bank; the bias is added by ScalarE on the way out of PSUM. The
// epilogue must be exactly that bias (checkNkiConv refuses any other). Tile
// sizes are the device's limits (Limits). A 1-D convolution (NCW) is the
// 2-D one with a unit height (as2d).
//
//===----------------------------------------------------------------------===//
#include "absl/strings/str_cat.h"
#include "codegen/nki/NkiKernel.h"

namespace fusec::codegen::nki {

namespace {

/// OK when \p c's epilogue is what printNkiConv applies: acc + bias[channel]
/// when the convolution has a bias, the accumulator unchanged otherwise
/// (rebuilt in a copy: hash-consing gives the epilogue's id when equal).
absl::Status checkEpilogue(const program::ConvParams &c) {
  if (c.epilogue.empty() || !c.epilogue.hasBias()) {
    if (c.bias) return absl::UnimplementedError("a convolution whose bias is not in its epilogue");
    if (c.epilogue.empty()) return absl::OkStatus();
  }
  program::GemmEpilogue e = c.epilogue;
  int applied = e.accumulator();
  if (c.bias) applied = e.spec.binary(program::BinaryOp::kAdd, applied, e.addBias(e.spec.buffers[1].dtype));
  if (c.epilogue.value == applied) return absl::OkStatus();
  return absl::UnimplementedError(
      "a convolution epilogue other than its bias (acc + bias[channel]) has no NKI lowering");
}

/// \p c as a 2-D convolution: a 1-D one (NCW, xShape rank 3) gets a unit
/// height (H = KH = OH = 1, no padding, stride and dilation 1 along it),
/// which has the same memory layout, so the 2-D TensorE path computes it.
program::ConvParams as2d(const program::ConvParams &c) {
  if (c.xShape.size() != 3 || c.wShape.size() != 3 || c.yShape.size() != 3) return c;
  program::ConvParams d = c;
  d.xShape = {c.xShape[0], c.xShape[1], 1, c.xShape[2]};
  d.wShape = {c.wShape[0], c.wShape[1], 1, c.wShape[2]};
  d.yShape = {c.yShape[0], c.yShape[1], 1, c.yShape[2]};
  auto at = [](const std::vector<int64_t> &v, size_t i, int64_t dflt) { return i < v.size() ? v[i] : dflt; };
  d.pads = {0, at(c.pads, 0, 0), 0, at(c.pads, 1, 0)};
  d.strides = {1, at(c.strides, 0, 1)};
  d.dilations = {1, at(c.dilations, 0, 1)};
  return d;
}

absl::Status check2d(const program::ConvParams &c, const Limits &lim) {
  if (c.xShape.size() != 4 || c.wShape.size() != 4 || c.yShape.size() != 4 || c.pads.size() < 2 ||
      c.strides.size() < 2 || c.dilations.size() < 2)
    return absl::UnimplementedError("only 1-D (NCW) and 2-D (NCHW) convolutions are lowered for nki");
  if (c.dtype != ir::DType::kF32 && c.dtype != ir::DType::kBF16 && c.dtype != ir::DType::kF16)
    return absl::UnimplementedError(
        absl::StrCat("convolution in ", ir::dtypeName(c.dtype), " has no TensorE lowering"));
  if (c.yShape[3] > matmulFreeMax(lim))
    return absl::UnimplementedError(absl::StrCat("a convolution output row wider than one matmul result (",
                                                 matmulFreeMax(lim), " fp32, one PSUM bank) is not tiled yet"));
  return checkEpilogue(c);
}

}  // namespace

absl::Status checkNkiConv(const program::ConvParams &c, const Limits &lim) { return check2d(as2d(c), lim); }

absl::StatusOr<std::string> printNkiConv(const program::ConvParams &conv, const Limits &lim,
                                         const std::string &symbol, const std::vector<std::string> &comment) {
  const program::ConvParams c = as2d(conv);
  if (auto st = check2d(c, lim); !st.ok()) return st;
  const std::string dt = nlDType(c.dtype);
  const int64_t N = c.xShape[0], C = c.xShape[1], H = c.xShape[2], W = c.xShape[3];
  const int64_t O = c.wShape[0], CG = c.wShape[1], KH = c.wShape[2], KW = c.wShape[3];
  const int64_t OH = c.yShape[2], OW = c.yShape[3];
  std::string s;
  for (const std::string &line : comment) s += absl::StrCat("# ", line, "\n");
  s += absl::StrCat("@nki.jit\ndef ", symbol, "(x, w", c.bias ? ", bias" : "", "):\n");
  s += absl::StrCat("    N, C, H, W = ", N, ", ", C, ", ", H, ", ", W, "\n");
  s += absl::StrCat("    O, CG, KH, KW = ", O, ", ", CG, ", ", KH, ", ", KW, "  # CG: input channels per group\n");
  s += absl::StrCat("    OH, OW, GROUPS = ", OH, ", ", OW, ", ", c.group, "\n");
  s += "    OG = O // GROUPS\n";
  s += absl::StrCat("    SH, SW, DH, DW, PH, PW = ", c.strides[0], ", ", c.strides[1], ", ", c.dilations[0], ", ",
                    c.dilations[1], ", ", c.pads[0], ", ", c.pads[1], "\n");
  s += absl::StrCat("    M_TILE = ", lim.matmulStationaryFreeMax,
                    "  # output channels per tile (stationary free size)\n");
  s += absl::StrCat("    K_TILE = ", lim.partitions, "  # input channels per matmul (contraction on the partitions)\n");
  s += absl::StrCat("    ROWS_TILE = max(1, ", matmulFreeMax(lim),
                    " // OW)  # output rows per tile: ROWS_TILE * OW fp32 fit one PSUM bank\n");
  s += absl::StrCat("    y = nl.ndarray((N, O, OH, OW), dtype=", dt, ", buffer=nl.shared_hbm)\n");
  s += "    for n in nl.affine_range(N):\n";
  s += "        for gi in nl.affine_range(GROUPS):\n";
  s += "            for io in nl.affine_range((OG + M_TILE - 1) // M_TILE):\n";
  s += "                o0 = io * M_TILE\n";
  s += "                os_ = min(M_TILE, OG - o0)\n";
  s += "                bias_t = nl.ndarray((M_TILE, 1), dtype=nl.float32, buffer=nl.sbuf)\n";
  if (c.bias) {
    s += absl::StrCat("                bias_raw = nl.ndarray((M_TILE, 1), dtype=", dt, ", buffer=nl.sbuf)\n");
    s += "                nisa.dma_copy(dst=bias_raw[0:os_, 0:1], src=bias.ap(pattern=[[1, os_], [1, 1]], "
         "offset=gi * OG + o0))\n";
    s += "                nisa.tensor_copy(dst=bias_t[0:os_, 0:1], src=bias_raw[0:os_, 0:1])\n";
  } else {
    s += "                nisa.memset(dst=bias_t[0:os_, 0:1], value=0.0)\n";
  }
  s += "                for ir in nl.affine_range((OH + ROWS_TILE - 1) // ROWS_TILE):\n";
  s += "                    r0 = ir * ROWS_TILE\n";
  s += "                    rs = min(ROWS_TILE, OH - r0)\n";
  s += "                    acc = nl.ndarray((M_TILE, ROWS_TILE * OW), dtype=nl.float32, buffer=nl.psum)\n";
  s += "                    for kh in nl.affine_range(KH):\n";
  s += "                        for kw in nl.affine_range(KW):\n";
  s += "                            # output rows [a, b) and columns [cl, ch) of this tap read inside the image\n";
  s += "                            a = max(r0, -((kh * DH - PH) // SH))\n";
  s += "                            b = min(r0 + rs, (H - 1 + PH - kh * DH) // SH + 1)\n";
  s += "                            cl = max(0, -((kw * DW - PW) // SW))\n";
  s += "                            ch = min(OW, (W - 1 + PW - kw * DW) // SW + 1)\n";
  s += "                            for ic in nl.affine_range((CG + K_TILE - 1) // K_TILE):\n";
  s += "                                c0 = ic * K_TILE\n";
  s += "                                cs = min(K_TILE, CG - c0)\n";
  s += absl::StrCat("                                wt = nl.ndarray((K_TILE, M_TILE), dtype=", dt,
                    ", buffer=nl.sbuf)\n");
  s += "                                nisa.dma_copy(dst=wt[0:cs, 0:os_], src=w.ap(pattern=[[KH * KW, cs], "
       "[CG * KH * KW, os_]], offset=(gi * OG + o0) * CG * KH * KW + c0 * KH * KW + kh * KW + kw))\n";
  s += absl::StrCat("                                mv = nl.ndarray((K_TILE, ROWS_TILE * OW), dtype=", dt,
                    ", buffer=nl.sbuf)\n");
  s += "                                nisa.memset(dst=mv[0:cs, 0:rs * OW], value=0)  # zero padding\n";
  s += "                                if a < b and cl < ch:\n";
  s += "                                    nisa.dma_copy(dst=mv.ap(pattern=[[ROWS_TILE * OW, cs], [OW, b - a], "
       "[1, ch - cl]], offset=(a - r0) * OW + cl),\n";
  s += "                                                  src=x.ap(pattern=[[H * W, cs], [SH * W, b - a], "
       "[SW, ch - cl]], offset=n * C * H * W + (gi * CG + c0) * H * W + (a * SH + kh * DH - PH) * W + "
       "cl * SW + kw * DW - PW))\n";
  s += "                                nisa.nc_matmul(dst=acc[0:os_, 0:rs * OW], stationary=wt[0:cs, 0:os_], "
       "moving=mv[0:cs, 0:rs * OW])\n";
  s += "                    res = nl.ndarray((M_TILE, ROWS_TILE * OW), dtype=nl.float32, buffer=nl.sbuf)\n";
  s += "                    nisa.activation(dst=res[0:os_, 0:rs * OW], op=nl.copy, data=acc[0:os_, 0:rs * OW], "
       "bias=bias_t[0:os_, 0:1])\n";
  if (dt != "nl.float32") {
    s += absl::StrCat("                    out_t = nl.ndarray((M_TILE, ROWS_TILE * OW), dtype=", dt,
                      ", buffer=nl.sbuf)\n");
    s += "                    nisa.tensor_copy(dst=out_t[0:os_, 0:rs * OW], src=res[0:os_, 0:rs * OW])\n";
  } else {
    s += "                    out_t = res\n";
  }
  s += "                    nisa.dma_copy(dst=y.ap(pattern=[[OH * OW, os_], [1, rs * OW]], offset=n * O * OH * OW + "
       "(gi * OG + o0) * OH * OW + r0 * OW), src=out_t[0:os_, 0:rs * OW])\n";
  s += "    return y\n";
  return s;
}

}  // namespace fusec::codegen::nki
