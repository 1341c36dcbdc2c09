//===- HopperKernel.h - sm_90a warp-specialised attention template -*- C++ -*-===//
//
// The CUDA text of the Hopper (sm_90a) attention kernel that
// FlashAttentionEmitter.cpp specialises. Structure (after FlashAttention-3,
// Shah et al. 2024, "FlashAttention-3: Fast and Accurate Attention with
// Asynchrony and Low-precision"):
//  - one CTA per 128-query tile, (kCW + 1) warpgroups: warpgroup 0 is the
//    producer (one warp issues TMA loads, setmaxnreg gives its registers
//    away), warpgroups 1..kCW are consumers of 64 query rows each;
//  - Q once, then K and V tiles into a kStages-deep shared-memory ring of
//    128-byte-swizzled 64-column blocks, each stage guarded by mbarriers:
//    fullK / fullV (transaction counts of the TMA bytes) and empty (one
//    arrival per consumer warp);
//  - S = Q K^T by wgmma (both operands in shared memory, K-major), the score
//    modification, masks and online softmax on the accumulator fragments in
//    registers, then O += P V by wgmma with P from registers and V in
//    shared memory (MN-major, transposed by the descriptor);
//  - key tiles outside the structural mask range, and tiles the key mask
//    leaves empty (a warp vote, evaluated identically by the producer and
//    every consumer warp), are neither loaded nor computed.
// Placeholders (@NAME@) are those of FlashAttentionEmitter.cpp plus
// @WGMMA@ (the wgmma wrappers of wgmmaWrappers()), @STAGES@, @PREG@/@CREG@
// (setmaxnreg counts) and the host-side extents @H...@.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_ATTENTION_HOPPERKERNEL_H
#define FUSEC_CODEGEN_CUDA_ATTENTION_HOPPERKERNEL_H

#include <string>

namespace fusec::codegen::attention {

/// mbarrier, TMA, wgmma-fence and descriptor helpers (include-guarded).
extern const char *const kHopperHelpers;
/// The kernel and its launcher.
extern const char *const kHopperKernel;

/// Device functions `wgmmaSS(float (&d)[nS / 2], uint64_t descA, uint64_t
/// descB, int accumulate)` (m64 n\p nS k16, A and B K-major in shared
/// memory) and `wgmmaRS(float (&d)[nO / 2], const uint32_t (&a)[4], uint64_t
/// descB)` (m64 n\p nO k16, A from registers, B transposed: MN-major), for
/// element type \p ptxType ("bf16" or "f16"), fp32 accumulators.
/// \p nS, \p nO: multiples of 8 in [8, 256].
std::string wgmmaWrappers(int nS, int nO, const std::string &ptxType);

}  // namespace fusec::codegen::attention

#endif  // FUSEC_CODEGEN_CUDA_ATTENTION_HOPPERKERNEL_H
