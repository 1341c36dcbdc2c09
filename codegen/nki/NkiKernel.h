//===- NkiKernel.h - KernelSpecs and GEMMs as NKI kernels (Python) -*- C++ -*-===//
//
// The NKI lowering of one generated kernel (program::KernelSpec) and of one
// GEMM library call, printed as a `@nki.jit` function in the current NKI
// dialect (NKI 0.3+: `import nki`, `nki.language as nl`, `nki.isa as nisa`,
// every nisa call writes into `dst=`; /work/shared/docs/NKI.md sections 2-4).
//
// Tiling (NKI.md section 2, "the memories"): a kernel's loop domain is first
// reduced by merging adjacent dims that every load and store walks
// contiguously. Pointwise kernels put the last dim on the free axis (tiles
// of FREE_TILE elements) and the dim before it on the partitions (tiles of
// 128 rows); row reductions put the last parallel dim on the partitions and
// the (single, merged) reduced dim on the free axis, a whole row per
// partition in SBUF with fp32 statistics. Outer dims are Python loops.
// Every load and store is one DMA whose access pattern (tensor.ap) is the
// buffer's index map: strides per tile axis (0 = broadcast), so transposes,
// slices and broadcasts are strided DMAs. Guarded accesses (Pad, Concat,
// Split) are boxes; gathers and loads whose index map is not affine are
// indirect DMAs (NkiAccess.h).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_NKI_NKIKERNEL_H
#define FUSEC_CODEGEN_NKI_NKIKERNEL_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/cost/TargetSpec.h"
#include "program/KernelSpec.h"
#include "program/Lowering.h"

namespace fusec::codegen::nki {

/// The device limits the NKI lowering tiles for: the resolved device's
/// TargetSpec::partitioned (targets/trn1.textproto, trn2.textproto; NKI.md
/// section 3). The one source of these numbers; trn1 and trn2 kernels
/// differ where the limits do (usable SBUF).
using Limits = passes::PartitionLimits;

/// Bytes per partition a kernel may keep live in SBUF: half the device's
/// usable SBUF (nl.tile_size.total_available_sbuf_size), because a tile
/// allocated in a loop may be live twice (double buffering).
inline int64_t sbufBudgetBytes(const Limits &l) { return l.sbufUsableBytesPerPartition / 2; }
/// fp32 elements per partition in one PSUM bank (512 for 2 KiB banks).
inline int64_t psumBankFp32(const Limits &l) { return l.psumBankBytes / 4; }
/// The largest matmul result free size: within the moving operand's limit
/// and one PSUM bank of fp32.
inline int64_t matmulFreeMax(const Limits &l) { return std::min(l.matmulMovingFreeMax, psumBankFp32(l)); }
/// Free-axis tile of pointwise kernels, in elements (a choice: it equals
/// nl.tile_size.bn_stats_fmax and one PSUM bank of fp32).
inline constexpr int64_t kFreeTile = 512;

/// OK when \p spec has an NKI lowering; otherwise Unimplemented naming
/// what is not lowered (e.g. "index map of buffer 2 is a gather").
absl::Status checkNkiKernel(const program::KernelSpec &spec, const Limits &limits);

/// The `@nki.jit def <symbol>(in..)` text of \p spec: inputs are the
/// buffers not written, in buffer order; it returns the written buffers
/// (tuple, in buffer order) allocated in nl.shared_hbm. i64 buffers are
/// passed as int32 and bool as uint8 (the host driver converts).
/// \p comment lines are printed above the function. Errors as checkNkiKernel().
absl::StatusOr<std::string> printNkiKernel(const program::KernelSpec &spec, const Limits &limits,
                                           const std::string &symbol,
                                           const std::vector<std::string> &comment);

/// OK when \p g has an NKI lowering (f32/f16/bf16 operands).
absl::Status checkNkiGemm(const program::GemmParams &g, const Limits &limits);

/// The `@nki.jit def <symbol>(a, b[, c][, bias])` text of \p g:
/// D = epilogue(alpha * op(A) op(B) + beta * C + bias) as TensorE matmuls
/// (stationary = op(A)^T tile [K_TILE, M_TILE], moving = op(B) tile
/// [K_TILE, N_TILE], accumulated over K tiles in one PSUM bank), the
/// epilogue applied on the way out of PSUM (NKI.md section 4, nc_matmul).
absl::StatusOr<std::string> printNkiGemm(const program::GemmParams &g, const Limits &limits,
                                         const std::string &symbol,
                                         const std::vector<std::string> &comment);

/// OK when \p c has an NKI lowering (2-D, f32/f16/bf16, OW <= matmulFreeMax,
/// an epilogue that is at most its bias).
absl::Status checkNkiConv(const program::ConvParams &c, const Limits &limits);

/// The `@nki.jit def <symbol>(x, w[, bias])` text of \p c: per kernel tap a
/// TensorE matmul of the weights (stationary) with the pixels the tap reads
/// (moving, zero where it reads padding), accumulated in PSUM; see NkiConv.cpp.
absl::StatusOr<std::string> printNkiConv(const program::ConvParams &c, const Limits &limits,
                                         const std::string &symbol,
                                         const std::vector<std::string> &comment);

/// OK when \p a has an NKI lowering (head dim <= partitions, value head dim
/// <= matmulFreeMax,
/// one dtype for Q/K/V, table indices that are expressions of b and h).
absl::Status checkNkiAttention(const program::AttentionSpec &a, const Limits &limits);

/// The flash-attention `@nki.jit def <symbol>(q, k, v, bias0..)` text of
/// \p a; see NkiAttention.cpp.
absl::StatusOr<std::string> printNkiAttention(const program::AttentionSpec &a, const Limits &limits,
                                              const std::string &symbol,
                                              const std::vector<std::string> &comment);

/// The text of a refusal of work item \p item (from checkNkiKernel /
/// checkNkiGemm / checkNkiConv / the printers) for users: "nki: node
/// 'pool1' (MaxPool) (in the fused group of ...): <reason>", naming the
/// ONNX node(s) and op a refusal is about. An access reason ("the load of
/// buffer 2 ...") names the value bound to the buffer and the member node
/// that reads or writes it; any other reason names every node of the item.
std::string refusalMessage(const program::WorkItem &item, absl::string_view reason);

/// The nl dtype spelling of \p t as the kernel sees it ("nl.float32"; i64 ->
/// "nl.int32", bool -> "nl.uint8"); empty when NKI has none.
std::string nlDType(ir::DType t);

}  // namespace fusec::codegen::nki

#endif  // FUSEC_CODEGEN_NKI_NKIKERNEL_H
