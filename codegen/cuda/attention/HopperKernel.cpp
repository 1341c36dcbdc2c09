//===- HopperKernel.cpp - sm_90a warp-specialised attention template -===//
//
// See HopperKernel.h. PTX references: the PTX ISA 8.x sections on
// mbarrier, cp.async.bulk.tensor, wgmma.mma_async (register fragments and
// the shared-memory matrix descriptor) and setmaxnreg.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/attention/HopperKernel.h"

#include "absl/strings/str_cat.h"

namespace fusec::codegen::attention {

const char *const kHopperHelpers = R"CUDA(#ifndef FUSEC_HOPPER_HELPERS
#define FUSEC_HOPPER_HELPERS
#include <cuda.h>
#include <cudaTypedefs.h>
namespace fusec_hopper {
using fusec_flash::smemAddr;
__device__ __forceinline__ void mbarInit(uint64_t *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smemAddr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void fenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
/// Arrives once and adds \p bytes to the barrier's expected transaction count.
__device__ __forceinline__ void mbarExpectTx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smemAddr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarArrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smemAddr(bar)) : "memory");
}
/// Waits until the phase with parity \p parity of \p bar has completed.
__device__ __forceinline__ void mbarWait(uint64_t *bar, int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "FUSEC_MBAR_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra FUSEC_MBAR_WAIT;\n"
      "}\n" ::"r"(smemAddr(bar)),
      "r"(parity)
      : "memory");
}
/// TMA: the box at coordinates (c0 innermost .. c3) of \p map into \p dst,
/// completing \p bytes of \p bar's transaction count.
__device__ __forceinline__ void tmaLoad4(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1, int c2,
                                         int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(smemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smemAddr(bar))
      : "memory");
}
/// Rows [row, row + box) of head h, batch b, columns [col, col + 64), of a
/// makeTensorMap() map (\p headsInner: its dims are (D, H, S, B)).
__device__ __forceinline__ void tmaLoadRows(void *dst, const CUtensorMap *map, uint64_t *bar, int col, int row, int h,
                                           int b, int headsInner) {
  if (headsInner)
    tmaLoad4(dst, map, bar, col, h, row, b);
  else
    tmaLoad4(dst, map, bar, col, row, h, b);
}
__device__ __forceinline__ void tmaPrefetchMap(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
__device__ __forceinline__ void wgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/// Keeps the compiler from moving accesses of \p r across an asynchronous wgmma.
template <int N> __device__ __forceinline__ void regFence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
/// Shared-memory matrix descriptor, 128-byte swizzle: start address,
/// leading- and stride-dimension byte offsets (bytes; multiples of 16).
__device__ __forceinline__ uint64_t gmmaDesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
template <int M, int N> __device__ __forceinline__ void regFence(uint32_t (&r)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}
template <int R> __device__ __forceinline__ void regAlloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R> __device__ __forceinline__ void regDealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
/// cuTensorMapEncodeTiled from the driver, through the runtime (no -lcuda).
static PFN_cuTensorMapEncodeTiled_v12000 tensorMapEncoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}
/// A 4-d map over the [B][H][S][D] view at \p base (elements of
/// \p elemBytes; strides in elements) with boxes of 64 x boxRows, 128-byte
/// swizzle, zero fill out of bounds. The head and sequence dims are listed
/// in increasing stride order (a fused QKV projection's [B, S, 3, H, D] view
/// has the heads inside the rows): \p headsInner says the map's dims are
/// (D, H, S, B) rather than (D, S, H, B). False where TMA cannot address it
/// (alignment, stride range).
static bool makeTensorMap(CUtensorMap *m, CUtensorMapDataType type, int elemBytes, const void *base, long long d,
                          long long s, long long h, long long b, long long strideS, long long strideH,
                          long long strideB, int boxRows, bool *headsInner) {
  PFN_cuTensorMapEncodeTiled_v12000 enc = tensorMapEncoder();
  if (enc == nullptr || (reinterpret_cast<uintptr_t>(base) & 15) != 0) return false;
  // The stride of a dim of extent 1 addresses nothing: give it a valid one.
  if (h == 1) strideH = strideS * s;
  if (b == 1) strideB = strideS * s * h + strideH * h;
  *headsInner = h > 1 && strideH < strideS;
  const long long st[3] = {(*headsInner ? strideH : strideS) * elemBytes, (*headsInner ? strideS : strideH) * elemBytes,
                           strideB * elemBytes};
  for (long long x : st)
    if (x <= 0 || x % 16 != 0 || x >= (1LL << 40)) return false;
  cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)(*headsInner ? h : s), (cuuint64_t)(*headsInner ? s : h),
                        (cuuint64_t)b};
  cuuint64_t strides[3] = {(cuuint64_t)st[0], (cuuint64_t)st[1], (cuuint64_t)st[2]};
  cuuint32_t box[4] = {64, *headsInner ? 1u : (cuuint32_t)boxRows, *headsInner ? (cuuint32_t)boxRows : 1u, 1};
  cuuint32_t elemStrides[4] = {1, 1, 1, 1};
  return enc(m, type, 4, const_cast<void *>(base), dims, strides, box, elemStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
}  // namespace fusec_hopper
#endif  // FUSEC_HOPPER_HELPERS
)CUDA";

const char *const kHopperKernel = R"CUDA(
using namespace fusec_hopper;
constexpr int kBM = @BM@, kBN = @BN@, kStages = @STAGES@;
constexpr int kCW = kBM / 64;          // consumer warpgroups, 64 query rows each
constexpr int kNT = (kCW + 1) * 128;   // + the producer warpgroup
constexpr bool kPingPong = @PINGPONG@;  // consumers take turns issuing their S GEMMs
constexpr bool kOverlap = @OVERLAP@;    // S(j+1) and P(j)V(j) in flight during softmax(j+1)
constexpr int kDP = @DP@, kDVP = @DVP@;  // head dims rounded up to 16: the MMA K and N extents
constexpr int kDB = (kDP + 63) / 64, kDVB = (kDVP + 63) / 64;  // 64-column (128-byte) swizzle blocks
constexpr int kQBytes = kBM * 128 * kDB, kKBytes = kBN * 128 * kDB, kVBytes = kBN * 128 * kDVB;
constexpr int kSmemBytes = 1024 + kQBytes + kStages * (kKBytes + kVBytes) + 8 * (1 + 4 * kStages);
@WGMMA@
/// Whether key tile j has a live key in batch b: a vote of the calling warp
/// (all 32 lanes), the same in every warp.
__device__ __forceinline__ bool tileLiveWarp(int j, int lane, long long b@BIASPARAMS@) {
  if constexpr (!kKeyMask) return true;
  bool any = false;
  for (int c = lane; c < kBN; c += 32) {
    const long long k = (long long)j * kBN + c;
    any = any || (k < kSk && keyLive(b, k@BIASARGS@));
  }
  return __any_sync(0xffffffffu, any) != 0;
}
__device__ __forceinline__ void namedBarSync(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void namedBarArrive(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }

__global__ void __launch_bounds__(kNT, 1)
kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
       const __grid_constant__ CUtensorMap tmV, const int headsInner, const T *__restrict__ V@BIASKPARAMS@,
       T *__restrict__ O@DIMSPARAM@) {
  // nvcc -arch=sm_90a also embeds compute_90 PTX, where wgmma and setmaxnreg
  // do not exist; the launcher only starts this kernel on a 9.0 device.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smemRaw[];@DIMSINIT@
  unsigned char *smem = smemRaw + ((1024 - (smemAddr(smemRaw) & 1023)) & 1023);
  unsigned char *sQ = smem;
  unsigned char *sK = sQ + kQBytes;
  unsigned char *sV = sK + kStages * kKBytes;
  // Barriers: Q landed; per stage K landed, V landed, K free, V free.
  uint64_t *barQ = reinterpret_cast<uint64_t *>(sV + kStages * kVBytes);
  uint64_t *fullK = barQ + 1, *fullV = fullK + kStages, *emptyK = fullV + kStages, *emptyV = emptyK + kStages;
  const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int mBlock = gridDim.x - 1 - blockIdx.x;  // heaviest (causal) tiles first
  const int h = blockIdx.y, b = blockIdx.z, kvh = h / kGroup;
  const int q0 = mBlock * kBM;
  const int qLast = min(q0 + kBM, kSq) - 1;
  if (tid == 0) {
    tmaPrefetchMap(&tmQ);
    tmaPrefetchMap(&tmK);
    tmaPrefetchMap(&tmV);
    mbarInit(barQ, 1);
    for (int s = 0; s < kStages; ++s) {
      mbarInit(fullK + s, 1);
      mbarInit(fullV + s, 1);
      mbarInit(emptyK + s, kCW * 4);  // one arrival per consumer warp
      mbarInit(emptyV + s, kCW * 4);
    }
    fenceBarrierInit();
  }
  __syncthreads();

  // Key range this query tile can see; tiles outside it are never touched.
  long long kBegin = 0, kEnd = kSk;
  if (kCausal) {
    kEnd = min((long long)kSk, (long long)qLast + kOff + 1);
    if (kWindow > 0) kBegin = max(0LL, (long long)q0 + kOff - kWindow + 1);
  }
  const int jBegin = (int)(kBegin / kBN);
  const int jEnd = kEnd > kBegin ? (int)((kEnd + kBN - 1) / kBN) : jBegin;
  auto nextLive = [&](int jj) {
    while (jj < jEnd && !tileLiveWarp(jj, lane, b@BIASARGS@)) ++jj;
    return jj;
  };

  if (wg == 0) {  // producer: one warp issues every TMA load
    regDealloc<@PREG@>();
    if (warp == 0) {
      const int jFirst = nextLive(jBegin);
      if (lane == 0 && jFirst < jEnd) {
        mbarExpectTx(barQ, kQBytes);
#pragma unroll
        for (int c = 0; c < kDB; ++c) tmaLoadRows(sQ + c * kBM * 128, &tmQ, barQ, c * 64, q0, h, b, headsInner & 1);
      }
      int it = 0;
      for (int j = jFirst; j < jEnd; j = nextLive(j + 1), ++it) {
        const int st = it % kStages, ph = (it / kStages) & 1;
        if (lane == 0) {
          mbarWait(emptyK + st, ph ^ 1);
          mbarExpectTx(fullK + st, kKBytes);
#pragma unroll
          for (int c = 0; c < kDB; ++c)
            tmaLoadRows(sK + st * kKBytes + c * kBN * 128, &tmK, fullK + st, c * 64, j * kBN, kvh, b, headsInner & 2);
          mbarWait(emptyV + st, ph ^ 1);
          mbarExpectTx(fullV + st, kVBytes);
#pragma unroll
          for (int c = 0; c < kDVB; ++c)
            tmaLoadRows(sV + st * kVBytes + c * kBN * 128, &tmV, fullV + st, c * 64, j * kBN, kvh, b, headsInner & 4);
        }
        __syncwarp();
      }
    }
    return;
  }

  // Consumers: warpgroup cw owns query rows [q0 + 64 cw, q0 + 64 cw + 64).
  regAlloc<@CREG@>();
  const int cw = wg - 1;
  const int rowInTile = cw * 64 + warp * 16 + (lane >> 2);
  const long long qRow[2] = {q0 + rowInTile, q0 + rowInTile + 8};
  const long long qFirstW = q0 + cw * 64, qLastW = min(qFirstW + 63, (long long)kSq - 1);
  const T *gV = V + b * kVb + kvh * kVh;
  float accO[kDVP / 2];
#pragma unroll
  for (int i = 0; i < kDVP / 2; ++i) accO[i] = 0.0f;
  float rowM[2] = {-INFINITY, -INFINITY}, rowL[2] = {0.0f, 0.0f};
  const uint32_t qAddr = smemAddr(sQ) + cw * 64 * 128;

  // S = Q K^T for the tile in stage st (64 x kBN per warpgroup, fp32), issued
  // and committed, not waited for.
  auto issueS = [&](float (&accS)[kBN / 2], int st) {
    const uint32_t kAddr = smemAddr(sK + st * kKBytes);
#pragma unroll
    for (int kk = 0; kk < kDP / 16; ++kk)
      wgmmaSS(accS, gmmaDesc(qAddr + (kk / 4) * kBM * 128 + (kk % 4) * 32, 16, 1024),
              gmmaDesc(kAddr + (kk / 4) * kBN * 128 + (kk % 4) * 32, 16, 1024), kk > 0 ? 1 : 0);
    wgCommit();
  };
  // O += P V for the tile in stage st: V (keys x head dim, the head dim
  // contiguous) read transposed (MN-major). Issued and committed.
  auto issuePV = [&](const uint32_t (&pa)[kBN / 16][4], int st) {
    const uint32_t vAddr = smemAddr(sV + st * kVBytes);
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmmaRS(accO, pa[kk], gmmaDesc(vAddr + kk * 16 * 128, @VLBO@, @VSBO@));
    wgCommit();
  };
  // Score modification, masks and the online softmax of the tile at key
  // k0, on the fragments: element (nt, e) of this thread is row
  // qRow[e >> 1], key k0 + 8 nt + 2 (lane & 3) + (e & 1). Leaves
  // exp2(score - max) in accS, updates rowM / rowL, returns the factor the
  // earlier accumulators are rescaled by.
  auto softmaxTile = [&](float (&accS)[kBN / 2], int k0, float (&alpha)[2]) {
    bool kmv[kKeyMask ? kBN / 8 : 1][2];
    (void)kmv;
    if constexpr (kKeyMask) {
#pragma unroll
      for (int nt = 0; nt < kBN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const long long ki = k0 + nt * 8 + (lane & 3) * 2 + e;
          kmv[nt][e] = ki < kSk && keyLive(b, ki@BIASARGS@);
        }
    }
    const bool needMask = kMaskExpr || kKeyMask || k0 + kBN > kSk ||
                          (kCausal && (long long)k0 + kBN - 1 > qFirstW + kOff) ||
                          (kCausal && kWindow > 0 && (long long)k0 < qLastW + kOff - kWindow + 1);
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long qi = qRow[e >> 1];
        const long long ki = k0 + nt * 8 + (lane & 3) * 2 + (e & 1);
        float t = accS[nt * 4 + e];
        if constexpr (!kRawScores) t = scoreMod(t * kScale, b, h, qi, ki@BIASARGS@) * 1.44269504088896340736f;
        if (needMask && !keep(b, h, qi, ki@BIASARGS@)) t = -INFINITY;
        if constexpr (kKeyMask) {
          if (!kmv[nt][e & 1]) t = -INFINITY;
        }
        accS[nt * 4 + e] = t;
      }
    }
    float mx[2] = {rowM[0], rowM[1]};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
      mx[0] = fmaxf(mx[0], fmaxf(accS[nt * 4 + 0], accS[nt * 4 + 1]));
      mx[1] = fmaxf(mx[1], fmaxf(accS[nt * 4 + 2], accS[nt * 4 + 3]));
    }
    float mOff[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      const float mUse = mx[i] == -INFINITY ? 0.0f : mx[i];
      alpha[i] = fastExp2((rowM[i] - mUse) * kF);
      mOff[i] = mUse * kF;
      rowM[i] = mx[i];
      rowL[i] *= alpha[i];
    }
#pragma unroll
    for (int i = 0; i < kBN / 2; ++i) {
      const float p = fastExp2(fmaf(accS[i], kF, -mOff[(i >> 1) & 1]));
      accS[i] = p;
      rowL[(i >> 1) & 1] += p;
    }
  };
  auto rescaleO = [&](const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < kDVP / 8; ++i) {
      accO[i * 4 + 0] *= alpha[0]; accO[i * 4 + 1] *= alpha[0];
      accO[i * 4 + 2] *= alpha[1]; accO[i * 4 + 3] *= alpha[1];
    }
  };
  // P as wgmma A fragments (16 keys per k-step), in the element type.
  auto packP = [&](const float (&accS)[kBN / 2], uint32_t (&pa)[kBN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) pa[kk][r] = pack2(accS[kk * 8 + 2 * r], accS[kk * 8 + 2 * r + 1], T());
  };
  // Ping-pong: warpgroup cw issues its S GEMM after the other one has
  // issued its own (named barriers 1 and 2); warpgroup 0 starts.
  auto turnBegin = [&] {
    if constexpr (kPingPong) namedBarSync(1 + cw);
  };
  auto turnEnd = [&] {
    if constexpr (kPingPong) namedBarArrive(1 + (cw ^ 1));
  };
  if constexpr (kPingPong) {
    if (cw == 1) namedBarArrive(1);
  }

  int it = 0;
  const int jFirst = nextLive(jBegin);
  if (jFirst < jEnd) mbarWait(barQ, 0);
  uint32_t pa[kBN / 16][4];
  int stPrev = -1, phPrev = 0;  // kOverlap: the tile whose P V is still to issue
  // kOverlap: issues and completes the pending P V (stage stp), frees its stage.
  auto flushPV = [&](int &stp, int php) {
    if (stp < 0) return;
    mbarWait(fullV + stp, php);
    regFence(accO);
    regFence(pa);
    wgFence();
    issuePV(pa, stp);
    wgWait<0>();
    regFence(accO);
    if (lane == 0) mbarArrive(emptyV + stp);
    stp = -1;
  };
  for (int j = jFirst; j < jEnd; j = nextLive(j + 1), ++it) {
    const int st = it % kStages, ph = (it / kStages) & 1;
    const int k0 = j * kBN;
    // A tile whose keys this warpgroup's rows cannot see (above the causal
    // diagonal; every later tile too): consumed without computing, after
    // the pending P V (whose stage the producer needs back).
    const bool skip = kCausal && (long long)k0 > qLastW + kOff;
    if (kOverlap && skip) flushPV(stPrev, phPrev);
    mbarWait(fullK + st, ph);
    if (skip) {
      turnBegin();
      turnEnd();
      mbarWait(fullV + st, ph);
      if (lane == 0) {
        mbarArrive(emptyK + st);
        mbarArrive(emptyV + st);
      }
      continue;
    }
    float accS[kBN / 2];
    float alpha[2];
    if constexpr (kOverlap) {
      turnBegin();
      regFence(accO);
      regFence(pa);
      wgFence();
      issueS(accS, st);
      if (stPrev >= 0) {
        mbarWait(fullV + stPrev, phPrev);
        issuePV(pa, stPrev);
      }
      turnEnd();
      if (stPrev >= 0) wgWait<1>(); else wgWait<0>();
      regFence(accS);
      if (lane == 0) mbarArrive(emptyK + st);
      softmaxTile(accS, k0, alpha);
      if (stPrev >= 0) {
        wgWait<0>();
        regFence(accO);
        regFence(pa);
        if (lane == 0) mbarArrive(emptyV + stPrev);
      }
      rescaleO(alpha);
      packP(accS, pa);
      stPrev = st;
      phPrev = ph;
    } else {
      turnBegin();
      wgFence();
      issueS(accS, st);
      turnEnd();
      wgWait<0>();
      regFence(accS);
      if (lane == 0) mbarArrive(emptyK + st);
      softmaxTile(accS, k0, alpha);
      rescaleO(alpha);
      packP(accS, pa);
      mbarWait(fullV + st, ph);
      regFence(accO);
      regFence(pa);
      wgFence();
      issuePV(pa, st);
      wgWait<0>();
      regFence(accO);
      if (lane == 0) mbarArrive(emptyV + st);
    }
  }
  if constexpr (kOverlap) flushPV(stPrev, phPrev);  // the last tile's P V

  // Normalise and store (rows past kSq are not written).
  float inv[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    rowL[i] += __shfl_xor_sync(0xffffffffu, rowL[i], 1);
    rowL[i] += __shfl_xor_sync(0xffffffffu, rowL[i], 2);
    inv[i] = rowL[i] > 0.0f ? 1.0f / rowL[i] : 0.0f;
  }
  T *gO = O + b * kOb + h * kOh;
#pragma unroll
  for (int i = 0; i < kDVP / 8; ++i) {
    const int col = i * 8 + (lane & 3) * 2;
    if (col >= kDV) continue;
    float v0 = accO[i * 4 + 0] * inv[0], v1 = accO[i * 4 + 1] * inv[0];
    float v2 = accO[i * 4 + 2] * inv[1], v3 = accO[i * 4 + 3] * inv[1];
    if (rowL[0] == 0.0f) emptyRowPair(v0, v1, gV, col);
    if (rowL[1] == 0.0f) emptyRowPair(v2, v3, gV, col);
    if (qRow[0] < kSq) *reinterpret_cast<uint32_t *>(gO + qRow[0] * kOs + col) = pack2(v0, v1, T());
    if (qRow[1] < kSq) *reinterpret_cast<uint32_t *>(gO + qRow[1] * kOs + col) = pack2(v2, v3, T());
  }
#else
  __trap();
#endif
}
}  // namespace @NS@

@LAUNCHHEAD@
  using namespace @NS@;
@GRID@
  // The sm_90a code runs on compute capability 9.0 only.
  static const bool sm90 = [] {
    int dev = 0, major = 0, minor = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
           minor == 0;
  }();
  CUtensorMap tq, tk, tv;
  bool hq = false, hk = false, hv = false;
  const bool tma = sm90 &&
      makeTensorMap(&tq, @TMTYPE@, (int)sizeof(T), buffers[0], kD, @HSQ@, kHq, @HB@, @HQS@, @HQH@, @HQB@, kBM, &hq) &&
      makeTensorMap(&tk, @TMTYPE@, (int)sizeof(T), buffers[1], kD, @HSK@, kHq / kGroup, @HB@, @HKS@, @HKH@, @HKB@, kBN, &hk) &&
      makeTensorMap(&tv, @TMTYPE@, (int)sizeof(T), buffers[2], kDV, @HSK@, kHq / kGroup, @HB@, @HVS@, @HVH@, @HVB@, kBN, &hv);
  // Another device, or operands TMA cannot address (misaligned views): the sm_80 kernel.
  if (!tma) return @FALLBACK@;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }
  kernel<<<grid, kNT, kSmemBytes, stream>>>(tq, tk, tv, (hq ? 1 : 0) | (hk ? 2 : 0) | (hv ? 4 : 0),
                                            static_cast<const T *>(buffers[2])@BIASLAUNCH@,
                                            static_cast<T *>(buffers[@OUTIDX@])@DIMSARG@);
  return (int)cudaGetLastError();
}
@UNDEFS@)CUDA";

std::string wgmmaWrappers(int nS, int nO, const std::string &ptxType) {
  auto regs = [](int n, int first) {
    std::string s;
    for (int i = 0; i < n; ++i) absl::StrAppend(&s, i ? ", " : "", "%", first + i);
    return s;
  };
  auto outs = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) absl::StrAppend(&s, i ? ", " : "", "\"+f\"(d[", i, "])");
    return s;
  };
  std::string out;
  const int rS = nS / 2, rO = nO / 2;
  absl::StrAppend(&out, "__device__ __forceinline__ void wgmmaSS(float (&d)[", rS,
                  "], uint64_t descA, uint64_t descB, int accumulate) {\n  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %",
                  rS + 2, ", 0;\\nwgmma.mma_async.sync.aligned.m64n", nS, "k16.f32.", ptxType, ".", ptxType, " {",
                  regs(rS, 0), "}, %", rS, ", %", rS + 1, ", p, 1, 1, 0, 0;\\n}\\n\"\n      : ", outs(rS),
                  "\n      : \"l\"(descA), \"l\"(descB), \"r\"(accumulate));\n}\n");
  absl::StrAppend(&out, "__device__ __forceinline__ void wgmmaRS(float (&d)[", rO,
                  "], const uint32_t (&a)[4], uint64_t descB) {\n  asm volatile(\"wgmma.mma_async.sync.aligned.m64n", nO,
                  "k16.f32.", ptxType, ".", ptxType, " {", regs(rO, 0), "}, {", regs(4, rO), "}, %", rO + 4,
                  ", 1, 1, 1, 1;\\n\"\n      : ", outs(rO),
                  "\n      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(descB));\n}\n");
  return out;
}

}  // namespace fusec::codegen::attention
