//===- TileTable.cpp - Per-arch tile sizes for generated attention -===//
//
// Rows are (minimum SM version, dtype class, largest head dim, tile). The
// first row whose SM version is <= the target's and whose head-dim limit
// covers the request wins.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/attention/TileTable.h"

#include "absl/strings/str_cat.h"

namespace fusec::codegen::attention {
namespace {

struct Row {
  int minSm;
  bool f32;  // exact fp32 SIMT path (blockM = query rows per CTA)
  int64_t maxHeadDim;
  AttentionTile tile;
};

// Half precision (bf16/fp16) rows: 16 query rows per warp on mma.sync.
// fp32 rows: SIMT kernel, 4 query rows per warp, blockN fixed to 32.
constexpr Row kRows[] = {
    // sm_90, measured on an H200 (bench/attention, B=4 H=16 S=4096 bf16):
    // D=128 plain 128x128x8w 293 TFLOP/s vs 128x64 282, 64x64x4w 270,
    // 128x32 (2 CTAs/SM, spills) 250; causal 268 vs 254. D=64: 128x64 (2
    // CTAs/SM) 282 vs 64x64x4w 280 vs 128x128 255.
    {90, false, 64, {128, 64, 8, 2, true, 2}},
    {90, false, 128, {128, 128, 8, 2, true, 1}},
    {90, false, 256, {64, 32, 4, 2, false, 1}},
    {90, true, 256, {16, 32, 4, 1, false, 1}},
    // sm_80 defaults.
    {0, false, 64, {128, 64, 8, 2, true, 2}},
    {0, false, 128, {128, 64, 8, 2, true, 1}},
    {0, false, 256, {64, 32, 4, 2, false, 1}},
    {0, true, 256, {16, 32, 4, 1, false, 1}},
};

}  // namespace

AttentionTile lookupAttentionTile(int smVersion, AttnElemType dtype, int64_t headDim) {
  const bool f32 = dtype == AttnElemType::kF32;
  for (const Row &r : kRows) {
    if (r.minSm <= smVersion && r.f32 == f32 && headDim <= r.maxHeadDim) return r.tile;
  }
  // Larger head dims than any row: the smallest tiles.
  if (f32) return AttentionTile{16, 32, 4, 1, false, 1};
  return AttentionTile{64, 32, 4, 2, false, 1};
}

AttentionTile lookupHopperTile(AttnElemType, int64_t headDim) {
  // Two consumer warpgroups of 64 query rows; 128 keys per stage up to head
  // dim 128 (Q 32 KiB + 2 x (K 32 + V 32) KiB at D = 128), 64 keys above
  // (D = 256: 64 + 2 x (32 + 32) KiB), as FlashAttention-3 chooses.
  AttentionTile t;
  t.blockM = 128;
  t.blockN = headDim <= 128 ? 128 : 64;
  t.warps = 12;
  t.stages = 2;
  t.qInRegisters = false;
  t.minBlocksPerSm = 1;
  t.warpSpecialized = true;
  return t;
}

std::string describeTile(const AttentionTile &t) {
  return absl::StrCat(t.blockM, "x", t.blockN, "x", t.warps, "w s", t.stages,
                      t.qInRegisters ? " qreg" : " qsmem", " mb", t.minBlocksPerSm, t.warpSpecialized ? " ws" : "",
                      t.pingPong ? " pp" : "", t.intraOverlap ? " ov" : "");
}

}  // namespace fusec::codegen::attention
