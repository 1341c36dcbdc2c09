//===- FlashAttentionEmitter.h - Tiled online-softmax attention kernels -*- C++ -*-===//
//
// Generates CUDA C++ for one fused attention
//   O[b,h,q,:] = softmax_k( mod(scale * Q[b,h,q,:] . K[b,kvh,k,:]) | mask ) . V[b,kvh,k,:]
// following FlashAttention-2 (Dao, 2023): one CTA per (query tile, head,
// batch); the key loop keeps the running row max m and row sum l in fp32,
// rescales the O accumulator in registers and writes O once after the loop.
//
// bf16/fp16: S = Q.K^T and O += P.V on tensor cores (mma.sync m16n8k16 fed by
// ldmatrix), K/V tiles double-buffered with cp.async, 16 query rows per warp.
// fp32: an exact SIMT path (fp32 FMA, expf), one key per lane.
//
// Semantics:
//  - kvh = h / (Hq / Hkv) (grouped-query attention).
//  - Structural masks (used to skip whole K/V tiles): causal keeps key k for
//    query q iff k <= q + causalOffset; a window W > 0 additionally keeps only
//    q + causalOffset - k < W (W keys including the diagonal). causalOffset 0
//    is top-left alignment (PyTorch is_causal); Sk - Sq is bottom-right.
//  - scoreMod: C++ expression (float) over `s` (the scaled score, fp32),
//    ints `b`, `h` (query head), `q`, `k` (absolute positions) and floats
//    `bias0`, `bias1`, ... (bias i at [b,h,q,k] through its strides, 0 =
//    broadcast). Empty = `s`. A result of -INFINITY masks the key.
//  - maskExpr: C++ bool expression over the same names, true = keep; empty =
//    keep all. Evaluated element-wise on every tile (cannot skip tiles).
//  - keyMask: bias i is a per-key mask [b, k] (true = keep), read once per
//    key tile; a tile with no live key in batch b is skipped (a block-wide
//    __syncthreads_or over the tile's keys).
//  - A row whose keys are all masked (every x = -inf) produces O = 0, NaN
//    when fullyMaskedNaN is set, or the mean of V over all keys when
//    fullyMaskedMean is set (the FusedAttention op's semantics: softmax
//    of all -inf, codegen/AttentionSpec.h).
//  - `q`, `k`, `b`, `h` are long long in the expressions; constant tables
//    are `tab_NAME[i]` (__constant__ float arrays emitted from `tables`).
//  - Launcher: extern "C" int SYMBOL(void *const *buffers, cudaStream_t):
//    buffers = Q, K, V, bias0.., O; returns a cudaError_t (0 = success).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_ATTENTION_FLASHATTENTIONEMITTER_H
#define FUSEC_CODEGEN_CUDA_ATTENTION_FLASHATTENTIONEMITTER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/cuda/attention/TileTable.h"

namespace fusec::codegen::attention {

/// Strides (in elements) of a [B, H, S, D] operand whose last dim is
/// contiguous. All zero = dense row-major [B, H, S, D].
struct FlashLayout {
  int64_t strideB = 0, strideH = 0, strideS = 0;
};

/// An additive/score-mod bias input, read as `bias<i>` at [b, h, q, k].
struct FlashBias {
  AttnElemType dtype = AttnElemType::kF32;
  int64_t strideB = 0, strideH = 0, strideQ = 0, strideK = 1;  ///< elements; 0 = broadcast
  std::string cType;  ///< when set, the element's C type (e.g. "bool", "long long") instead of dtype's
};

/// Everything the generator needs (static shapes).
struct FlashAttentionSpec {
  int64_t batch = 1, headsQ = 1, headsKv = 1;  ///< headsQ % headsKv == 0
  int64_t seqQ = 1, seqK = 1;                   ///< >= 1
  int64_t headDim = 64, headDimV = 64;          ///< 1..256
  AttnElemType dtype = AttnElemType::kBF16;
  bool allowTf32 = false;  ///< fp32 only: TF32 tensor cores (not implemented: Unimplemented)
  double scale = 0.125;    ///< applied to Q.K before scoreMod
  FlashLayout q, k, v, o;  ///< default: dense [B,H,S,D]
  bool causal = false;
  int64_t causalOffset = 0;  ///< key k kept iff k <= q + causalOffset
  int64_t window = 0;        ///< > 0: also keep only q + causalOffset - k < window (needs causal)
  std::string scoreMod;      ///< C++ float expression; empty = s
  std::string maskExpr;      ///< C++ bool expression, true = keep; empty = keep all
  std::vector<FlashBias> biases;
  /// -1 = none, else biases[keyMask] is a per-key mask (its h and q strides 0;
  /// key k of batch b kept where it reads != 0): read once per key tile, and
  /// key tiles with no live key are skipped (neither loaded nor computed).
  int keyMask = -1;
  std::map<std::string, std::vector<float>> tables;  ///< emitted as tab_NAME[]
  bool fullyMaskedNaN = false;  ///< all-masked rows: NaN instead of 0
  /// All-masked rows: the mean of V over all seqK keys (overrides
  /// fullyMaskedNaN; the FusedAttention op's masked_rows "mean").
  bool fullyMaskedMean = false;
  /// Dynamic shapes: fields bound at run time ("seqQ", "seqK", "batch",
  /// "q.strideB" ... "o.strideS", "biases[i].strideB" ... "strideK") as C
  /// expressions (long long) over the launcher's `const int64_t *symbols`;
  /// the integer fields above hold one binding's values. Non-empty: the
  /// launcher is `int SYMBOL(void *const *buffers, const int64_t *symbols,
  /// cudaStream_t)` and the kernel reads those fields from a parameter.
  struct DynamicField {
    std::string expr;
    int64_t multipleOf = 1;  ///< every value is a multiple of this
  };
  std::map<std::string, DynamicField> dynamic;
};

/// Options for emission.
struct FlashEmitOptions {
  int smVersion = 90;                       ///< target SM (selects the TileTable row)
  const AttentionTile *override = nullptr;  ///< use this tile instead of the table's
  bool includePrelude = true;               ///< emit the #includes and shared helpers
  /// The launcher takes the bound symbols (a dynamic artifact's ABI,
  /// docs/ARTIFACT.md), even when this kernel reads none of them.
  bool symbolsParam = false;
  /// The code is compiled for sm_90a: bf16/fp16 specs get the
  /// warp-specialised TMA + wgmma kernel (HopperKernel.h) where
  /// hopperDecline() is empty, with the sm_80 kernel beside it as the
  /// launcher's fallback for operands TMA cannot address at run time
  /// (a base pointer not 16-byte aligned). Needs -arch=sm_90a.
  bool hopper = false;
};

/// Why \p spec does not get the sm_90a kernel under \p options ("" = it
/// does): not an sm_90a target, fp32, a head dim or stride that is not a
/// multiple of 8 elements (TMA rows need 16-byte strides), an overriding
/// tile that is not warp-specialised, or shared memory.
std::string hopperDecline(const FlashAttentionSpec &spec, const FlashEmitOptions &options);

/// One line for dumps: which kernel emitFlashAttention() generates for
/// \p spec under \p options and why, e.g. "sm_90a warp-specialised
/// (TMA + wgmma), tile 128x128x12w s2 qsmem mb1 ws" or "sm_80 mma.sync,
/// tile ... (sm_90a kernel declined: fp32)".
std::string describeFlashKernel(const FlashAttentionSpec &spec, const FlashEmitOptions &options);

/// Returns CUDA C++ source defining the kernel and the extern "C" launcher
/// \p symbol (a C identifier). InvalidArgument for inconsistent shapes,
/// Unimplemented for TF32 or head dims > 256.
absl::StatusOr<std::string> emitFlashAttention(const FlashAttentionSpec &spec, const std::string &symbol,
                                               const FlashEmitOptions &options = {});

/// Dynamic shared memory (bytes) the kernel for \p spec with \p tile uses.
int64_t flashSharedBytes(const FlashAttentionSpec &spec, const AttentionTile &tile);

}  // namespace fusec::codegen::attention

#endif  // FUSEC_CODEGEN_CUDA_ATTENTION_FLASHATTENTIONEMITTER_H
