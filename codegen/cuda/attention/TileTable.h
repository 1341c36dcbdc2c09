//===- TileTable.h - Per-arch tile sizes for generated attention -*- C++ -*-===//
//
// Tile shapes for the tiled online-softmax attention kernels emitted by
// FlashAttentionEmitter.h, per (SM version, element type, head dimension).
// The numbers for sm_90 were chosen by measurement on an H200 (see
// bench/attention/); other architectures fall back to the sm_80 rows.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_ATTENTION_TILETABLE_H
#define FUSEC_CODEGEN_CUDA_ATTENTION_TILETABLE_H

#include <cstdint>
#include <string>

namespace fusec::codegen::attention {

/// Element type of Q, K, V and O.
enum class AttnElemType { kBF16, kF16, kF32 };

/// Tile configuration of one attention kernel.
struct AttentionTile {
  int blockM = 128;          ///< query rows per CTA (16 per warp on the tensor-core path)
  int blockN = 64;           ///< keys per K/V tile (multiple of 16)
  int warps = 8;             ///< warps per CTA
  int stages = 2;            ///< K/V shared-memory stages (2 = cp.async double buffering)
  bool qInRegisters = true;  ///< keep the Q fragments in registers for the whole key loop
  int minBlocksPerSm = 1;    ///< __launch_bounds__ minimum CTAs per SM (register cap)
  /// The sm_90a warp-specialised kernel (HopperKernel.h): warps = 4 x (1
  /// producer + blockM / 64 consumer warpgroups), stages = depth of the
  /// K/V shared-memory ring.
  bool warpSpecialized = false;
  /// Warp-specialised only: the consumer warpgroups take turns issuing their
  /// S = Q K^T (ping-pong), so one's softmax overlaps the other's GEMMs.
  bool pingPong = false;
  /// Warp-specialised only: S(j+1) = Q K(j+1)^T and O += P(j) V(j) are in
  /// flight while softmax(j+1) runs (two GEMMs overlap within a warpgroup).
  bool intraOverlap = false;
};

/// Returns the tile configuration for \p smVersion (e.g. 90 for sm_90),
/// element type \p dtype and head dimension \p headDim (the larger of the QK
/// and V head dims). Always returns a usable configuration.
AttentionTile lookupAttentionTile(int smVersion, AttnElemType dtype, int64_t headDim);

/// The tile of the sm_90a warp-specialised kernel (TMA + wgmma) for \p dtype
/// (bf16 or fp16) and head dimension \p headDim (<= 256).
AttentionTile lookupHopperTile(AttnElemType dtype, int64_t headDim);

/// "BMxBNxWw Ss q{reg|smem} mbN" (plus " ws" when warp-specialised), for
/// logs and kernel comments.
std::string describeTile(const AttentionTile &t);

}  // namespace fusec::codegen::attention

#endif  // FUSEC_CODEGEN_CUDA_ATTENTION_TILETABLE_H
