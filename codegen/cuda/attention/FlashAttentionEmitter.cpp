//===- FlashAttentionEmitter.cpp - Tiled online-softmax attention kernels -===//
//
// The kernels are fixed CUDA templates whose compile-time constants (tile
// shape, sizes, strides, scale, mask structure) and expression bodies are
// substituted here; see FlashAttentionEmitter.h for the algorithm
// (FlashAttention-2, Dao 2023) and the semantics.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/attention/FlashAttentionEmitter.h"

#include <cctype>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "codegen/cuda/attention/HopperKernel.h"
#include "support/Status.h"

namespace fusec::codegen::attention {
namespace {

const char *cudaType(AttnElemType t) {
  switch (t) {
    case AttnElemType::kBF16: return "__nv_bfloat16";
    case AttnElemType::kF16: return "__half";
    case AttnElemType::kF32: return "float";
  }
  return "float";
}

std::string floatLit(double v) {
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  return absl::StrFormat("%.9ef", v);
}

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Shared helpers, emitted once per translation unit.
constexpr const char *kPrelude = R"CUDA(#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
)CUDA";

constexpr const char *kHelpers = R"CUDA(#ifndef FUSEC_FLASH_HELPERS
#define FUSEC_FLASH_HELPERS
namespace fusec_flash {
__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cpAsync16(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smemAddr(p)));
}
__device__ __forceinline__ void ldsm4t(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smemAddr(p)));
}
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}
__device__ __forceinline__ float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
/// tanh with the hardware approximation (max rel. error ~2^-11): for bf16/fp16 kernels.
__device__ __forceinline__ float fastTanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float toF(float x) { return x; }
__device__ __forceinline__ float toF(double x) { return static_cast<float>(x); }
__device__ __forceinline__ float toF(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float toF(__half x) { return __half2float(x); }
__device__ __forceinline__ float toF(bool x) { return x ? 1.0f : 0.0f; }
template <typename I> __device__ __forceinline__ float toF(I x) { return static_cast<float>(x); }
}  // namespace fusec_flash
#endif  // FUSEC_FLASH_HELPERS
)CUDA";

// Constants and expression functions common to both kernels.
constexpr const char *kCommon = R"CUDA(
namespace @NS@ {
using namespace fusec_flash;
typedef @T@ T;
constexpr int kHq = @HQ@, kGroup = @GROUP@;
constexpr int kD = @D@, kDV = @DV@;
@DIMDECLS@constexpr float kScale = @SCALE@;
constexpr bool kRawScores = @RAW@;   // no score mod: fold scale*log2(e) into exp2
constexpr float kF = @FACTOR@;        // multiplier from the kept score to log2 units
constexpr bool kCausal = @CAUSAL@;
constexpr long long kOff = @OFF@, kWindow = @WINDOW@;
constexpr bool kMaskExpr = @HASMASK@;
constexpr float kEmptyRow = @EMPTYROW@;
constexpr bool kMeanRows = @MEANROWS@;  // a row with no live key: mean of V over all keys
// Column d of the mean of V[b, kvh, :, :] over all kSk keys (the rare
// fully masked rows of masked_rows "mean"; gV points at V[b, kvh, 0, 0]).
__device__ __noinline__ float meanOfV(const T *gV, int d) {
  float s = 0.0f;
  for (int k = 0; k < kSk; ++k) s += toF(gV[(long long)k * kVs + d]);
  return s / (float)kSk;
}
// The output pair (columns col, col + 1) of a row that no key reached
// (its softmax denominator is 0): the mean of V, or kEmptyRow.
__device__ __forceinline__ void emptyRowPair(float &x, float &y, const T *gV, int col) {
  if constexpr (kMeanRows) {
    x = col < kDV ? meanOfV(gV, col) : 0.0f;
    y = col + 1 < kDV ? meanOfV(gV, col + 1) : 0.0f;
  } else {
    x = y = kEmptyRow;
  }
}
@TABLES@@BIASLOADERS@
__device__ __forceinline__ float scoreMod(float s, long long b, long long h, long long q, long long k@BIASPARAMS@) {
  (void)s; (void)b; (void)h; (void)q; (void)k;
@BIASVALUES@  return (float)(@MOD@);
}
__device__ __forceinline__ bool keepExpr(long long b, long long h, long long q, long long k@BIASPARAMS@) {
  (void)b; (void)h; (void)q; (void)k;
@BIASVALUES@  return (bool)(@MASK@);
}
constexpr bool kKeyMask = @HASKEYMASK@;  // a per-key mask operand (keyLive)
/// The per-key mask at (b, k): true = keep (a bias read as != 0; NaN keeps).
__device__ __forceinline__ bool keyLive(long long b, long long k@BIASPARAMS@) {
  (void)b; (void)k;
  return @KEYLIVE@;
}
/// Whether key tile j (keys [j*BN, j*BN+BN)) has a live key in batch b. Every
/// thread of the block calls it; the result is the same in all of them.
template <int BN, int NT>
__device__ __forceinline__ bool tileLive(int j, int tid, long long b@BIASPARAMS@) {
  if constexpr (!kKeyMask) return true;
  bool any = false;
  for (int c = tid; c < BN; c += NT) {
    const long long k = (long long)j * BN + c;
    any = any || (k < kSk && keyLive(b, k@BIASARGS@));
  }
  return __syncthreads_or(any ? 1 : 0) != 0;
}
/// Structural + expression mask for one element.
__device__ __forceinline__ bool keep(long long b, long long h, long long q, long long k@BIASPARAMS@) {
  bool ok = k < kSk;
  if (kCausal) ok = ok && k <= q + kOff;
  if (kCausal && kWindow > 0) ok = ok && q + kOff - k < kWindow;
  if (kMaskExpr) ok = ok && keepExpr(b, h, q, k@BIASARGS@);
  return ok;
}
)CUDA";

// Tensor-core kernel (bf16/fp16), FlashAttention-2 structure.
constexpr const char *kTensorKernel = R"CUDA(
constexpr int kBM = @BM@, kBN = @BN@, kNW = @NW@, kNT = kNW * 32, kMinBlocks = @MINB@;
constexpr int kDP = @DP@, kDVP = @DVP@;
constexpr int kSQ = kDP + 8, kSV = kDVP + 8;  // shared row strides (elements): +16 B against bank conflicts
constexpr bool kQReg = @QREG@;
constexpr bool kVec = @VEC@;                 // 16-byte cp.async loads (dims and strides multiples of 8)
constexpr int kSmemQ = kBM * (kSQ > kSV ? kSQ : kSV);
constexpr int kSmemElems = kSmemQ + 2 * kBN * kSQ + 2 * kBN * kSV;

// ROWS x COLSP tile of rows [0, validRows) x cols [0, COLS) from g (row stride rs)
// into s (row stride SROW); everything else is zero-filled.
template <int ROWS, int COLS, int COLSP, int SROW>
__device__ __forceinline__ void loadTile(T *s, const T *g, long long rs, int validRows, int tid) {
  if constexpr (kVec) {
    constexpr int kCpr = COLSP / 8;
    constexpr int kChunks = ROWS * kCpr;
#pragma unroll
    for (int i = 0; i < (kChunks + kNT - 1) / kNT; ++i) {
      const int c = tid + i * kNT;
      if (kChunks % kNT == 0 || c < kChunks) {
        const int r = c / kCpr, cc = (c % kCpr) * 8;
        const bool ok = r < validRows && cc < COLS;
        cpAsync16(s + r * SROW + cc, ok ? static_cast<const void *>(g + r * rs + cc) : static_cast<const void *>(g),
                  ok ? 16 : 0);
      }
    }
  } else {
    for (int c = tid; c < ROWS * COLSP; c += kNT) {
      const int r = c / COLSP, cc = c % COLSP;
      s[r * SROW + cc] = (r < validRows && cc < COLS) ? g[r * rs + cc] : T(0.0f);
    }
  }
}

__global__ void __launch_bounds__(kNT, kMinBlocks)
kernel(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V@BIASKPARAMS@, T *__restrict__ O@DIMSPARAM@) {
  extern __shared__ __align__(128) unsigned char smemRaw[];@DIMSINIT@
  T *sQ = reinterpret_cast<T *>(smemRaw);
  T *sK = sQ + kSmemQ;
  T *sV = sK + 2 * kBN * kSQ;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int mBlock = gridDim.x - 1 - blockIdx.x;  // heaviest (causal) tiles first
  const int h = blockIdx.y, b = blockIdx.z, kvh = h / kGroup;
  const int q0 = mBlock * kBM;
  const int qLast = min(q0 + kBM, kSq) - 1;
  const T *gQ = Q + b * kQb + h * kQh + q0 * kQs;
  const T *gK = K + b * kKb + kvh * kKh;
  const T *gV = V + b * kVb + kvh * kVh;

  // Key range this query tile can see; tiles outside it are never touched.
  long long kBegin = 0, kEnd = kSk;
  if (kCausal) {
    kEnd = min((long long)kSk, (long long)qLast + kOff + 1);
    if (kWindow > 0) kBegin = max(0LL, (long long)q0 + kOff - kWindow + 1);
  }
  const int jBegin = (int)(kBegin / kBN);
  const int jEnd = kEnd > kBegin ? (int)((kEnd + kBN - 1) / kBN) : jBegin;

  float accO[kDVP / 8][4];
#pragma unroll
  for (int i = 0; i < kDVP / 8; ++i) accO[i][0] = accO[i][1] = accO[i][2] = accO[i][3] = 0.0f;
  float rowM[2] = {-INFINITY, -INFINITY}, rowL[2] = {0.0f, 0.0f};
  uint32_t qf[kQReg ? kDP / 16 : 1][4];
  const int rowInTile = warp * 16 + (lane >> 2);
  const long long qRow[2] = {q0 + rowInTile, q0 + rowInTile + 8};

  // Key tiles the key mask leaves without a live key (for this batch) are
  // neither loaded nor computed.
  auto nextLive = [&](int jj) {
    while (jj < jEnd && !tileLive<kBN, kNT>(jj, tid, b@BIASARGS@)) ++jj;
    return jj;
  };
  const int jFirst = nextLive(jBegin);
  if (jEnd > jFirst) {
    loadTile<kBM, kD, kDP, kSQ>(sQ, gQ, kQs, kSq - q0, tid);
    loadTile<kBN, kD, kDP, kSQ>(sK, gK + (long long)jFirst * kBN * kKs, kKs, kSk - jFirst * kBN, tid);
    cpAsyncCommit();
    loadTile<kBN, kDV, kDVP, kSV>(sV, gV + (long long)jFirst * kBN * kVs, kVs, kSk - jFirst * kBN, tid);
    cpAsyncCommit();
  }
  for (int j = jFirst, it = 0; j < jEnd; ++it) {
    const int buf = it & 1;
    const int k0 = j * kBN;
    const int jNext = nextLive(j + 1);
    if (jNext < jEnd) {  // prefetch the next live K/V tile into the other stage
      const int nk0 = jNext * kBN;
      loadTile<kBN, kD, kDP, kSQ>(sK + (buf ^ 1) * kBN * kSQ, gK + (long long)nk0 * kKs, kKs, kSk - nk0, tid);
      cpAsyncCommit();
      loadTile<kBN, kDV, kDVP, kSV>(sV + (buf ^ 1) * kBN * kSV, gV + (long long)nk0 * kVs, kVs, kSk - nk0, tid);
      cpAsyncCommit();
    } else {
      cpAsyncCommit();
      cpAsyncCommit();
    }
    cpAsyncWait<3>();  // K(j) landed
    __syncthreads();
    const T *tK = sK + buf * kBN * kSQ;
    const T *tV = sV + buf * kBN * kSV;
    if constexpr (kQReg) {
      if (it == 0) {
#pragma unroll
        for (int kk = 0; kk < kDP / 16; ++kk) ldsm4(qf[kk], sQ + (warp * 16 + (lane & 15)) * kSQ + kk * 16 + (lane >> 4) * 8);
      }
    }
    // S = Q K^T (16 x kBN per warp, fp32 accumulators).
    float accS[kBN / 8][4];
#pragma unroll
    for (int i = 0; i < kBN / 8; ++i) accS[i][0] = accS[i][1] = accS[i][2] = accS[i][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kDP / 16; ++kk) {
      uint32_t a[4];
      if constexpr (kQReg) {
        a[0] = qf[kk][0]; a[1] = qf[kk][1]; a[2] = qf[kk][2]; a[3] = qf[kk][3];
      } else {
        ldsm4(a, sQ + (warp * 16 + (lane & 15)) * kSQ + kk * 16 + (lane >> 4) * 8);
      }
#pragma unroll
      for (int nt = 0; nt < kBN / 16; ++nt) {
        uint32_t kb[4];
        ldsm4(kb, tK + (nt * 16 + (lane & 7) + ((lane >> 4) << 3)) * kSQ + kk * 16 + ((lane >> 3) & 1) * 8);
        mma(accS[2 * nt], a, kb[0], kb[1], T());
        mma(accS[2 * nt + 1], a, kb[2], kb[3], T());
      }
    }
    // Score modification and masking in registers.
    // The key mask of this thread's columns, read once per tile.
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
    const bool needMask = kMaskExpr || kKeyMask || k0 + kBN > kSk || (kCausal && (long long)k0 + kBN - 1 > (long long)q0 + kOff) ||
                          (kCausal && kWindow > 0 && (long long)k0 < (long long)qLast + kOff - kWindow + 1);
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long qi = qRow[e >> 1];
        const long long ki = k0 + nt * 8 + (lane & 3) * 2 + (e & 1);
        float t = accS[nt][e];
        if constexpr (!kRawScores) t = scoreMod(t * kScale, b, h, qi, ki@BIASARGS@) * 1.44269504088896340736f;
        if (needMask && !keep(b, h, qi, ki@BIASARGS@)) t = -INFINITY;
        if constexpr (kKeyMask) {
          if (!kmv[nt][e & 1]) t = -INFINITY;
        }
        accS[nt][e] = t;
      }
    }
    // Online softmax: running max / sum per row (2 rows per thread, quad-shared).
    float mx[2] = {rowM[0], rowM[1]};
#pragma unroll
    for (int nt = 0; nt < kBN / 8; ++nt) {
      mx[0] = fmaxf(mx[0], fmaxf(accS[nt][0], accS[nt][1]));
      mx[1] = fmaxf(mx[1], fmaxf(accS[nt][2], accS[nt][3]));
    }
    float mOff[2], alpha[2];
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
    for (int nt = 0; nt < kBN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = fastExp2(fmaf(accS[nt][e], kF, -mOff[e >> 1]));
        accS[nt][e] = p;
        rowL[e >> 1] += p;
      }
    }
#pragma unroll
    for (int i = 0; i < kDVP / 8; ++i) {
      accO[i][0] *= alpha[0]; accO[i][1] *= alpha[0];
      accO[i][2] *= alpha[1]; accO[i][3] *= alpha[1];
    }
    cpAsyncWait<2>();  // V(j) landed
    __syncthreads();
    // O += P V: P re-packed from the S accumulators as A fragments.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack2(accS[2 * kk][0], accS[2 * kk][1], T());
      a[1] = pack2(accS[2 * kk][2], accS[2 * kk][3], T());
      a[2] = pack2(accS[2 * kk + 1][0], accS[2 * kk + 1][1], T());
      a[3] = pack2(accS[2 * kk + 1][2], accS[2 * kk + 1][3], T());
#pragma unroll
      for (int dt = 0; dt < kDVP / 16; ++dt) {
        uint32_t vb[4];
        ldsm4t(vb, tV + (kk * 16 + (lane & 15)) * kSV + dt * 16 + (lane >> 4) * 8);
        mma(accO[2 * dt], a, vb[0], vb[1], T());
        mma(accO[2 * dt + 1], a, vb[2], vb[3], T());
      }
    }
    __syncthreads();  // the next prefetch overwrites this stage
    j = jNext;
  }

  // Normalise, stage through shared memory, store coalesced.
  float inv[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    rowL[i] += __shfl_xor_sync(0xffffffffu, rowL[i], 1);
    rowL[i] += __shfl_xor_sync(0xffffffffu, rowL[i], 2);
    inv[i] = rowL[i] > 0.0f ? 1.0f / rowL[i] : 0.0f;
  }
  T *sO = sQ;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kDVP / 8; ++i) {
    const int col = i * 8 + (lane & 3) * 2;
    float v0 = accO[i][0] * inv[0], v1 = accO[i][1] * inv[0];
    float v2 = accO[i][2] * inv[1], v3 = accO[i][3] * inv[1];
    if (rowL[0] == 0.0f) emptyRowPair(v0, v1, gV, col);
    if (rowL[1] == 0.0f) emptyRowPair(v2, v3, gV, col);
    *reinterpret_cast<uint32_t *>(sO + rowInTile * kSV + col) = pack2(v0, v1, T());
    *reinterpret_cast<uint32_t *>(sO + (rowInTile + 8) * kSV + col) = pack2(v2, v3, T());
  }
  __syncthreads();
  T *gO = O + b * kOb + h * kOh + q0 * kOs;
  const int validRows = kSq - q0;
  if constexpr (kVec) {
    constexpr int kCpr = kDVP / 8;
    for (int c = tid; c < kBM * kCpr; c += kNT) {
      const int r = c / kCpr, cc = (c % kCpr) * 8;
      if (r < validRows && cc < kDV)
        *reinterpret_cast<uint4 *>(gO + r * kOs + cc) = *reinterpret_cast<const uint4 *>(sO + r * kSV + cc);
    }
  } else {
    for (int c = tid; c < kBM * kDV; c += kNT) {
      const int r = c / kDV, cc = c % kDV;
      if (r < validRows) gO[r * kOs + cc] = sO[r * kSV + cc];
    }
  }
}
}  // namespace @NS@

@LAUNCHHEAD@
  using namespace @NS@;
  constexpr int kSmemBytes = kSmemElems * (int)sizeof(T);
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }
@GRID@
  kernel<<<grid, kNT, kSmemBytes, stream>>>(static_cast<const T *>(buffers[0]), static_cast<const T *>(buffers[1]),
                                            static_cast<const T *>(buffers[2])@BIASLAUNCH@, static_cast<T *>(buffers[@OUTIDX@])@DIMSARG@);
  return (int)cudaGetLastError();
}
@UNDEFS@)CUDA";

// Exact fp32 SIMT kernel: 4 query rows per warp, one key per lane per tile of 32.
constexpr const char *kSimtKernel = R"CUDA(
constexpr int kNW = @NW@, kNT = kNW * 32, kR = 4, kBM = kNW * kR, kBN = 32;
constexpr int kSKs = kD + 1;  // padded K rows: lane j reads row j without bank conflicts
constexpr int kDVT = (kDV + 31) / 32;
constexpr int kSmemElems = kBM * kD + kBN * kSKs + kBN * kDV;

__global__ void __launch_bounds__(kNT)
kernel(const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V@BIASKPARAMS@, T *__restrict__ O@DIMSPARAM@) {
  extern __shared__ __align__(16) unsigned char smemRaw[];@DIMSINIT@
  float *sQ = reinterpret_cast<float *>(smemRaw);
  float *sK = sQ + kBM * kD;
  float *sV = sK + kBN * kSKs;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int mBlock = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, kvh = h / kGroup;
  const int q0 = mBlock * kBM;
  const int qLast = min(q0 + kBM, kSq) - 1;
  const T *gQ = Q + b * kQb + h * kQh;
  const T *gK = K + b * kKb + kvh * kKh;
  const T *gV = V + b * kVb + kvh * kVh;
  long long kBegin = 0, kEnd = kSk;
  if (kCausal) {
    kEnd = min((long long)kSk, (long long)qLast + kOff + 1);
    if (kWindow > 0) kBegin = max(0LL, (long long)q0 + kOff - kWindow + 1);
  }
  const int jBegin = (int)(kBegin / kBN);
  const int jEnd = kEnd > kBegin ? (int)((kEnd + kBN - 1) / kBN) : jBegin;

  for (int c = tid; c < kBM * kD; c += kNT) {
    const int r = c / kD, d = c % kD;
    sQ[c] = q0 + r < kSq ? toF(gQ[(long long)(q0 + r) * kQs + d]) : 0.0f;
  }
  float o[kR][kDVT];
  float m[kR], l[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDVT; ++i) o[r][i] = 0.0f;
  }
  // Key tiles the key mask leaves without a live key are skipped.
  auto nextLive = [&](int jj) {
    while (jj < jEnd && !tileLive<kBN, kNT>(jj, tid, b@BIASARGS@)) ++jj;
    return jj;
  };
  for (int j = nextLive(jBegin); j < jEnd; j = nextLive(j + 1)) {
    const int k0 = j * kBN;
    __syncthreads();
    for (int c = tid; c < kBN * kD; c += kNT) {
      const int r = c / kD, d = c % kD;
      sK[r * kSKs + d] = k0 + r < kSk ? toF(gK[(long long)(k0 + r) * kKs + d]) : 0.0f;
    }
    for (int c = tid; c < kBN * kDV; c += kNT) {
      const int r = c / kDV, d = c % kDV;
      sV[c] = k0 + r < kSk ? toF(gV[(long long)(k0 + r) * kVs + d]) : 0.0f;
    }
    __syncthreads();
    float s[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) s[r] = 0.0f;
    for (int d = 0; d < kD; ++d) {
      const float kv = sK[lane * kSKs + d];
#pragma unroll
      for (int r = 0; r < kR; ++r) s[r] = fmaf(sQ[(warp * kR + r) * kD + d], kv, s[r]);
    }
    const long long ki = k0 + lane;
    const bool kmLane = !kKeyMask || (ki < kSk && keyLive(b, ki@BIASARGS@));  // once per tile
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const long long qi = q0 + warp * kR + r;
      float t = s[r] * kScale;
      if constexpr (!kRawScores) t = scoreMod(t, b, h, qi, ki@BIASARGS@);
      if (!keep(b, h, qi, ki@BIASARGS@) || !kmLane) t = -INFINITY;
      float mx = t;
#pragma unroll
      for (int w = 16; w > 0; w >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
      const float mNew = fmaxf(m[r], mx);
      const float mUse = mNew == -INFINITY ? 0.0f : mNew;
      const float alpha = expf(m[r] - mUse);
      const float p = expf(t - mUse);
      m[r] = mNew;
      l[r] = l[r] * alpha + p;
#pragma unroll
      for (int i = 0; i < kDVT; ++i) o[r][i] *= alpha;
      for (int jj = 0; jj < kBN; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int i = 0; i < kDVT; ++i) {
          const int d = lane + 32 * i;
          if (d < kDV) o[r][i] = fmaf(pj, sV[jj * kDV + d], o[r][i]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    float sum = l[r];
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, w);
    const int qi = q0 + warp * kR + r;
    if (qi >= kSq) continue;
    T *gO = O + b * kOb + h * kOh + (long long)qi * kOs;
#pragma unroll
    for (int i = 0; i < kDVT; ++i) {
      const int d = lane + 32 * i;
      if (d < kDV) gO[d] = sum > 0.0f ? o[r][i] / sum : kMeanRows ? meanOfV(gV, d) : kEmptyRow;
    }
  }
}
}  // namespace @NS@

@LAUNCHHEAD@
  using namespace @NS@;
  constexpr int kSmemBytes = kSmemElems * (int)sizeof(float);
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }
@GRID@
  kernel<<<grid, kNT, kSmemBytes, stream>>>(static_cast<const T *>(buffers[0]), static_cast<const T *>(buffers[1]),
                                            static_cast<const T *>(buffers[2])@BIASLAUNCH@, static_cast<T *>(buffers[@OUTIDX@])@DIMSARG@);
  return (int)cudaGetLastError();
}
@UNDEFS@)CUDA";

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

FlashLayout denseLayout(const FlashLayout &l, int64_t heads, int64_t seq, int64_t dim) {
  if (l.strideB != 0 || l.strideH != 0 || l.strideS != 0) return l;
  return FlashLayout{heads * seq * dim, seq * dim, dim};
}

// Whether every head dim and stride is a multiple of 8 elements (a
// stride bound at run time: when its form's coefficient is).
bool multiplesOf8(const FlashAttentionSpec &spec) {
  const FlashLayout q = denseLayout(spec.q, spec.headsQ, spec.seqQ, spec.headDim);
  const FlashLayout k = denseLayout(spec.k, spec.headsKv, spec.seqK, spec.headDim);
  const FlashLayout v = denseLayout(spec.v, spec.headsKv, spec.seqK, spec.headDimV);
  const FlashLayout o = denseLayout(spec.o, spec.headsQ, spec.seqQ, spec.headDimV);
  const auto m8 = [&](const std::string &field, int64_t x) {
    auto it = spec.dynamic.find(field);
    return it == spec.dynamic.end() ? x % 8 == 0 : it->second.multipleOf % 8 == 0;
  };
  bool ok = spec.headDim % 8 == 0 && spec.headDimV % 8 == 0;
  for (const auto &[name, l] : {std::pair<const char *, FlashLayout>{"q", q}, {"k", k}, {"v", v}, {"o", o}})
    ok = ok && m8(absl::StrCat(name, ".strideB"), l.strideB) && m8(absl::StrCat(name, ".strideH"), l.strideH) &&
         m8(absl::StrCat(name, ".strideS"), l.strideS);
  return ok;
}

// Shared memory of the sm_90a kernel: 1 KiB alignment slack, Q, the K/V
// ring of 64-column swizzle blocks, the mbarriers.
int64_t hopperSharedBytes(const FlashAttentionSpec &spec, const AttentionTile &t) {
  const int64_t db = (roundUp(spec.headDim, 16) + 63) / 64, dvb = (roundUp(spec.headDimV, 16) + 63) / 64;
  return 1024 + t.blockM * 128 * db + t.stages * (t.blockN * 128 * db + t.blockN * 128 * dvb) +
         8 * (1 + 4 * t.stages);
}

AttentionTile chosenTile(const FlashAttentionSpec &spec, const FlashEmitOptions &options, bool hopper) {
  if (options.override) return *options.override;
  const int64_t d = std::max(spec.headDim, spec.headDimV);
  return hopper ? lookupHopperTile(spec.dtype, d) : lookupAttentionTile(options.smVersion, spec.dtype, d);
}

}  // namespace

std::string hopperDecline(const FlashAttentionSpec &spec, const FlashEmitOptions &options) {
  if (!options.hopper) return "the target is not sm_90a";
  if (spec.dtype == AttnElemType::kF32) return "fp32 keeps the exact SIMT kernel";
  if (spec.headDim % 8 != 0 || spec.headDimV % 8 != 0)
    return absl::StrCat("head dims ", spec.headDim, "/", spec.headDimV,
                        " are not multiples of 8 (TMA rows need 16-byte strides)");
  if (!multiplesOf8(spec)) return "a Q/K/V/O stride is not a multiple of 8 elements (TMA needs 16-byte strides)";
  if (options.override && !options.override->warpSpecialized) return "a tile override for the sm_80 kernel";
  const AttentionTile t = chosenTile(spec, options, true);
  if (hopperSharedBytes(spec, t) > 227 * 1024)
    return absl::StrCat("tile ", describeTile(t), " needs ", hopperSharedBytes(spec, t), " bytes of shared memory");
  return "";
}

std::string describeFlashKernel(const FlashAttentionSpec &spec, const FlashEmitOptions &options) {
  const std::string decline = hopperDecline(spec, options);
  const AttentionTile t = chosenTile(spec, options, decline.empty());
  if (decline.empty()) return absl::StrCat("sm_90a warp-specialised (TMA + wgmma), tile ", describeTile(t));
  if (spec.dtype == AttnElemType::kF32)
    return absl::StrCat("exact fp32 SIMT, tile ", describeTile(t), " (sm_90a kernel declined: ", decline, ")");
  return absl::StrCat("sm_80 mma.sync, tile ", describeTile(t), " (sm_90a kernel declined: ", decline, ")");
}

int64_t flashSharedBytes(const FlashAttentionSpec &spec, const AttentionTile &tile) {
  if (tile.warpSpecialized) return hopperSharedBytes(spec, tile);
  if (spec.dtype == AttnElemType::kF32) {
    const int64_t bm = tile.warps * 4;
    return 4 * (bm * spec.headDim + 32 * (spec.headDim + 1) + 32 * spec.headDimV);
  }
  const int64_t sq = roundUp(spec.headDim, 16) + 8, sv = roundUp(spec.headDimV, 16) + 8;
  return 2 * (tile.blockM * std::max(sq, sv) + 2 * tile.blockN * sq + 2 * tile.blockN * sv);
}

absl::StatusOr<std::string> emitFlashAttention(const FlashAttentionSpec &spec, const std::string &symbol,
                                               const FlashEmitOptions &options) {
  if (!isIdentifier(symbol)) return absl::InvalidArgumentError(absl::StrCat("bad kernel symbol '", symbol, "'"));
  if (spec.batch < 1 || spec.headsQ < 1 || spec.headsKv < 1 || spec.seqQ < 1 || spec.seqK < 1 ||
      spec.headDim < 1 || spec.headDimV < 1)
    return absl::InvalidArgumentError("attention: every extent must be >= 1");
  if (spec.headsQ % spec.headsKv != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("attention: query heads ", spec.headsQ, " not a multiple of kv heads ", spec.headsKv));
  if (spec.headDim > 256 || spec.headDimV > 256)
    return absl::UnimplementedError("attention: head dims above 256");
  if (spec.keyMask < -1 || spec.keyMask >= static_cast<int>(spec.biases.size()))
    return absl::InvalidArgumentError("attention: the key mask names no bias");
  if (spec.window < 0 || (spec.window > 0 && !spec.causal))
    return absl::InvalidArgumentError("attention: a sliding window needs the causal structure (window > 0)");
  if (spec.batch > 65535 || spec.headsQ > 65535 || spec.seqQ > (int64_t{1} << 30) || spec.seqK > (int64_t{1} << 30))
    return absl::UnimplementedError("attention: grid too large");
  const bool f32 = spec.dtype == AttnElemType::kF32;
  if (f32 && spec.allowTf32) return absl::UnimplementedError("attention: TF32 path not implemented");

  const bool hopper = hopperDecline(spec, options).empty();
  if (options.override && options.override->warpSpecialized && !hopper)
    return absl::InvalidArgumentError(absl::StrCat("attention: warp-specialised tile ", describeTile(*options.override),
                                                   " but ", hopperDecline(spec, options)));
  const AttentionTile tile = chosenTile(spec, options, hopper);
  if (hopper) {
    if (tile.blockM != 128 || tile.warps != 12 || tile.blockN < 16 || tile.blockN > 256 || tile.blockN % 16 != 0 ||
        tile.stages < 2 || tile.stages > 4 || hopperSharedBytes(spec, tile) > 227 * 1024)
      return absl::InvalidArgumentError(absl::StrCat("attention: bad warp-specialised tile ", describeTile(tile)));
  } else if (!f32) {
    if (tile.warps < 1 || tile.blockM != tile.warps * 16 || tile.blockN < 16 || tile.blockN % 16 != 0 ||
        tile.stages != 2)
      return absl::InvalidArgumentError(absl::StrCat("attention: bad tensor-core tile ", describeTile(tile)));
  } else if (tile.warps < 1 || tile.warps > 32) {
    return absl::InvalidArgumentError(absl::StrCat("attention: bad fp32 tile ", describeTile(tile)));
  }
  if (!hopper && flashSharedBytes(spec, tile) > 227 * 1024)
    return absl::UnimplementedError(absl::StrCat("attention: tile ", describeTile(tile), " needs ",
                                                 flashSharedBytes(spec, tile), " bytes of shared memory"));

  const FlashLayout q = denseLayout(spec.q, spec.headsQ, spec.seqQ, spec.headDim);
  const FlashLayout k = denseLayout(spec.k, spec.headsKv, spec.seqK, spec.headDim);
  const FlashLayout v = denseLayout(spec.v, spec.headsKv, spec.seqK, spec.headDimV);
  const FlashLayout o = denseLayout(spec.o, spec.headsQ, spec.seqQ, spec.headDimV);

  // Dynamic shapes: the fields bound at run time, (name in the kernel, C
  // expression over the launcher's `symbols`), read from a __shared__
  // copy of the kernel's Dims parameter; the others stay constexpr.
  std::vector<std::pair<std::string, std::string>> dyn;
  for (const auto &[field, expr] : spec.dynamic) {
    static const std::set<std::string> known = {"seqQ", "seqK", "batch", "q.strideB", "q.strideH", "q.strideS",
                                                "k.strideB", "k.strideH", "k.strideS", "v.strideB", "v.strideH",
                                                "v.strideS", "o.strideB", "o.strideH", "o.strideS"};
    if (!known.count(field) && field.rfind("biases[", 0) != 0)
      return absl::UnimplementedError(absl::StrCat("attention: the tiled kernel cannot bind ", field, " at run time"));
  }
  // Biases: loaders, parameters, values.
  const int nb = static_cast<int>(spec.biases.size());
  std::string loaders, params, args, values, kparams, launch;
  for (int i = 0; i < nb; ++i) {
    const FlashBias &bi = spec.biases[i];
    const std::string bt = bi.cType.empty() ? std::string(cudaType(bi.dtype)) : bi.cType;
    auto bs = [&](const char *f, int64_t v) {
      auto it = spec.dynamic.find(absl::StrCat("biases[", i, "].", f));
      if (it == spec.dynamic.end()) return absl::StrCat(v, "LL");
      dyn.emplace_back(absl::StrCat("kB", i, f), it->second.expr);
      return absl::StrCat("kB", i, f);
    };
    absl::StrAppend(&loaders, "__device__ __forceinline__ float loadBias", i, "(const ", bt,
                    " *p, long long b, long long h, long long q, long long k) {\n  q = q < kSq ? q : kSq - 1;\n",
                    "  k = k < kSk ? k : kSk - 1;\n  return toF(p[b * ", bs("strideB", bi.strideB), " + h * ",
                    bs("strideH", bi.strideH), " + q * ", bs("strideQ", bi.strideQ), " + k * ",
                    bs("strideK", bi.strideK), "]);\n}\n");
    absl::StrAppend(&params, ", const ", bt, " *__restrict__ biasp", i);
    absl::StrAppend(&args, ", biasp", i);
    absl::StrAppend(&values, "  const float bias", i, " = loadBias", i, "(biasp", i, ", b, h, q, k);\n  (void)bias",
                    i, ";\n");
    absl::StrAppend(&launch, ", static_cast<const ", bt, " *>(buffers[", 3 + i, "])");
  }
  kparams = params;
  std::string tables;
  for (const auto &[name, vals] : spec.tables) {
    if (!isIdentifier(name)) return absl::InvalidArgumentError(absl::StrCat("attention: bad table name '", name, "'"));
    std::vector<std::string> lits;
    for (float x : vals) lits.push_back(floatLit(x));
    if (lits.empty()) lits.push_back("0.0f");
    absl::StrAppend(&tables, "__constant__ float tab_", name, "[", lits.size(), "] = {", absl::StrJoin(lits, ", "),
                    "};\n");
  }

  // The extents and strides: constexpr literals, or (dynamic shapes)
  // macros reading gDims, which the kernel fills from its Dims parameter.
  std::string dimDecls, undefs, grid, dimsStruct, dimsFill;
  std::map<std::string, std::string> host;  // launcher-side value of each extent/stride (sm_90a tensor maps)
  {
    struct Field {
      const char *name, *key, *type;
      int64_t value;
    };
    const std::vector<Field> fields = {
        {"kSq", "seqQ", "int", spec.seqQ},         {"kSk", "seqK", "int", spec.seqK},
        {"kBatch", "batch", "int", spec.batch},     {"kQb", "q.strideB", "long long", q.strideB},
        {"kQh", "q.strideH", "long long", q.strideH}, {"kQs", "q.strideS", "long long", q.strideS},
        {"kKb", "k.strideB", "long long", k.strideB}, {"kKh", "k.strideH", "long long", k.strideH},
        {"kKs", "k.strideS", "long long", k.strideS}, {"kVb", "v.strideB", "long long", v.strideB},
        {"kVh", "v.strideH", "long long", v.strideH}, {"kVs", "v.strideS", "long long", v.strideS},
        {"kOb", "o.strideB", "long long", o.strideB}, {"kOh", "o.strideH", "long long", o.strideH},
        {"kOs", "o.strideS", "long long", o.strideS}};
    std::vector<std::pair<std::string, std::string>> all;  // (macro, expr)
    for (const Field &f : fields) {
      auto it = spec.dynamic.find(f.key);
      if (it == spec.dynamic.end()) {
        absl::StrAppend(&dimDecls, "constexpr ", f.type, " ", f.name, " = ", f.value,
                        std::string(f.type) == "int" ? "" : "LL", ";\n");
      } else {
        all.emplace_back(f.name, it->second.expr);
      }
    }
    all.insert(all.end(), dyn.begin(), dyn.end());
    dyn = all;
    if (!dyn.empty()) {
      absl::StrAppend(&dimDecls, "struct Dims { long long v[", dyn.size(), "]; };\n__shared__ Dims gDims;\n");
      for (size_t i = 0; i < dyn.size(); ++i) {
        const bool isInt = dyn[i].first == "kSq" || dyn[i].first == "kSk" || dyn[i].first == "kBatch";
        absl::StrAppend(&dimDecls, "#define ", dyn[i].first, isInt ? " ((int)gDims.v[" : " (gDims.v[", i, "])\n");
        absl::StrAppend(&undefs, "#undef ", dyn[i].first, "\n");
        absl::StrAppend(&dimsFill, "  P.v[", i, "] = ", dyn[i].second, ";\n");
      }
    }
    auto launchValue = [&](const char *name, int64_t v) {
      for (size_t i = 0; i < dyn.size(); ++i)
        if (dyn[i].first == name) return absl::StrCat("P.v[", i, "]");
      return absl::StrCat(v, "LL");
    };
    for (const Field &f : fields) host[f.name] = launchValue(f.name, f.value);
    if (dyn.empty()) {
      grid = "  dim3 grid((kSq + kBM - 1) / kBM, kHq, kBatch);";
    } else {
      const std::string sq = launchValue("kSq", spec.seqQ), sk = launchValue("kSk", spec.seqK),
                        bt = launchValue("kBatch", spec.batch);
      // gDims is a namespace-scope name the macros expand to; the launcher
      // computes the same values into P.
      grid = absl::StrCat("  Dims P;\n", dimsFill, "  if (", sq, " <= 0 || ", bt, " <= 0) return 0;\n  if (", sk,
                          " <= 0 || ", bt, " > 65535 || ", sq, " > (1LL << 30) || ", sk,
                          " > (1LL << 30)) return (int)cudaErrorInvalidValue;\n",
                          "  dim3 grid((unsigned)((", sq, " + kBM - 1) / kBM), kHq, (unsigned)", bt, ");");
    }
  }
  const bool raw = spec.scoreMod.empty() && spec.scale > 0 && !f32;
  const double log2e = 1.4426950408889634;
  const std::string ns = absl::StrCat("fa_", symbol);
  std::vector<std::pair<std::string, std::string>> subs = {
      {"@NS@", ns},
      {"@SYM@", symbol},
      {"@T@", cudaType(spec.dtype)},
      {"@HQ@", absl::StrCat(spec.headsQ)},
      {"@GROUP@", absl::StrCat(spec.headsQ / spec.headsKv)},
      {"@D@", absl::StrCat(spec.headDim)},
      {"@DV@", absl::StrCat(spec.headDimV)},
      {"@DIMDECLS@", dimDecls},
      {"@DIMSPARAM@", dyn.empty() ? "" : ", const Dims P"},
      {"@DIMSINIT@", dyn.empty() ? "" : "\n  if (threadIdx.x == 0) gDims = P;\n  __syncthreads();"},
      {"@DIMSARG@", dyn.empty() ? "" : ", P"},
      {"@LAUNCHHEAD@", dyn.empty() && !options.symbolsParam ? absl::StrCat("extern \"C\" int ", symbol, "(void *const *buffers, cudaStream_t stream) {")
                                   : absl::StrCat("extern \"C\" int ", symbol,
                                                  "(void *const *buffers, const int64_t *symbols, cudaStream_t stream) {\n  (void)symbols;")},
      {"@GRID@", grid},
      {"@UNDEFS@", undefs},
      {"@SCALE@", floatLit(spec.scale)},
      {"@RAW@", raw ? "true" : "false"},
      {"@FACTOR@", floatLit(raw ? spec.scale * log2e : 1.0)},
      {"@CAUSAL@", spec.causal ? "true" : "false"},
      {"@OFF@", absl::StrCat(spec.causalOffset, "LL")},
      {"@WINDOW@", absl::StrCat(spec.window, "LL")},
      {"@HASMASK@", spec.maskExpr.empty() ? "false" : "true"},
      {"@HASKEYMASK@", spec.keyMask >= 0 ? "true" : "false"},
      {"@KEYLIVE@", spec.keyMask >= 0 ? absl::StrCat("loadBias", spec.keyMask, "(biasp", spec.keyMask, ", b, 0, 0, k) != 0.0f")
                                      : std::string("true")},
      {"@EMPTYROW@", spec.fullyMaskedNaN ? "NAN" : "0.0f"},
      {"@MEANROWS@", spec.fullyMaskedMean ? "true" : "false"},
      {"@TABLES@", tables},
      {"@BIASLOADERS@", loaders},
      {"@BIASPARAMS@", params},
      {"@BIASKPARAMS@", kparams},
      {"@BIASARGS@", args},
      {"@BIASVALUES@", values},
      {"@BIASLAUNCH@", launch},
      {"@OUTIDX@", absl::StrCat(3 + nb)},
      {"@MOD@", spec.scoreMod.empty() ? "s" : spec.scoreMod},
      {"@MASK@", spec.maskExpr.empty() ? "true" : spec.maskExpr},
      {"@BM@", absl::StrCat(tile.blockM)},
      {"@BN@", absl::StrCat(tile.blockN)},
      {"@NW@", absl::StrCat(tile.warps)},
      {"@MINB@", absl::StrCat(std::max(1, tile.minBlocksPerSm))},
      {"@DP@", absl::StrCat(roundUp(spec.headDim, 16))},
      {"@DVP@", absl::StrCat(roundUp(spec.headDimV, 16))},
      {"@QREG@", tile.qInRegisters ? "true" : "false"},
  };
  const bool vec = multiplesOf8(spec);  // 16-byte cp.async loads
  subs.push_back({"@VEC@", vec ? "true" : "false"});

  std::string fallback;
  if (hopper) {
    // The sm_80 kernel beside it, for operands TMA cannot address.
    FlashEmitOptions fo = options;
    fo.hopper = false;
    fo.override = nullptr;
    fo.includePrelude = false;
    FUSEC_ASSIGN_OR_RETURN(fallback, emitFlashAttention(spec, symbol + "_sm80", fo));
    const bool syms = !dyn.empty() || options.symbolsParam;
    const std::string ptx = spec.dtype == AttnElemType::kBF16 ? "bf16" : "f16";
    subs.push_back({"@STAGES@", absl::StrCat(tile.stages)});
    subs.push_back({"@PINGPONG@", tile.pingPong ? "true" : "false"});
    subs.push_back({"@OVERLAP@", tile.intraOverlap ? "true" : "false"});
    subs.push_back({"@PREG@", "40"});
    subs.push_back({"@CREG@", "232"});
    subs.push_back({"@WGMMA@", wgmmaWrappers(tile.blockN, static_cast<int>(roundUp(spec.headDimV, 16)), ptx)});
    // V is MN-major for O += P V: the leading byte offset steps between
    // 64-column blocks of the head dim, the stride byte offset between
    // groups of 8 keys.
    subs.push_back({"@VLBO@", "kBN * 128"});
    subs.push_back({"@VSBO@", "1024"});
    subs.push_back({"@TMTYPE@", spec.dtype == AttnElemType::kBF16 ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                                                                    : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"});
    for (const auto &[tag, name] : std::vector<std::pair<std::string, std::string>>{
             {"@HSQ@", "kSq"}, {"@HSK@", "kSk"}, {"@HB@", "kBatch"}, {"@HQS@", "kQs"}, {"@HQH@", "kQh"},
             {"@HQB@", "kQb"}, {"@HKS@", "kKs"}, {"@HKH@", "kKh"}, {"@HKB@", "kKb"}, {"@HVS@", "kVs"},
             {"@HVH@", "kVh"}, {"@HVB@", "kVb"}})
      subs.push_back({tag, host.at(name)});
    subs.push_back({"@FALLBACK@", absl::StrCat("\n#ifdef FUSEC_ATTN_REQUIRE_TMA\n  (int)cudaErrorNotSupported;\n#else\n  ",
                                               symbol, "_sm80(buffers, ", syms ? "symbols, " : "", "stream);\n#endif\n")});
  }

  // Expressions are substituted last so that their text is never rescanned.
  std::string text = absl::StrCat(
      "// fusec tiled attention (", hopper ? "FlashAttention-3" : "FlashAttention-2", " structure): ",
      spec.dynamic.empty() ? "" : "dynamic shapes, at the first probe ", "B=", spec.batch, " Hq=", spec.headsQ,
      " Hkv=", spec.headsKv, " Sq=", spec.seqQ, " Sk=", spec.seqK, " D=", spec.headDim, " Dv=", spec.headDimV,
      f32      ? " fp32 exact SIMT"
      : hopper ? " sm_90a warp-specialised (TMA + wgmma m64nNk16)"
               : " tensor cores (mma.sync m16n8k16)",
      ", tile ", describeTile(tile), "\n", options.includePrelude ? kPrelude : "", kHelpers,
      hopper ? absl::StrCat(fallback, kHopperHelpers) : std::string(), kCommon,
      f32 ? kSimtKernel : hopper ? kHopperKernel : kTensorKernel);
  std::vector<std::pair<std::string, std::string>> first, last;
  for (auto &s : subs) (s.first == "@MOD@" || s.first == "@MASK@" ? last : first).push_back(s);
  text = absl::StrReplaceAll(text, first);
  text = absl::StrReplaceAll(text, last);
  return text;
}

}  // namespace fusec::codegen::attention
