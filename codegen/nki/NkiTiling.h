//===- NkiTiling.h - Tiles of an NKI kernel, and the ops it prints -*- C++ -*-===//
//
// Internal to codegen/nki: how a KernelSpec's loop domain maps onto NKI
// tiles (NkiKernel.h describes the scheme), the checks of what the printer
// can emit, and the spellings of engine ops and constants.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_NKI_NKITILING_H
#define FUSEC_CODEGEN_NKI_NKITILING_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/nki/NkiAccess.h"
#include "codegen/nki/NkiKernel.h"
#include "program/KernelSpec.h"

namespace fusec::codegen::nki {

/// \p v as a Python float literal (%.9g: exact for fp32).
std::string number(double v);
/// The ScalarE activation function of \p op ("nl.exp"), or nullptr.
const char *activationOf(program::UnaryOp op);
/// The ALU operator of \p op ("nl.add").
const char *aluOf(program::BinaryOp op);
bool isIntegerType(program::ScalarType t);
/// Checks the ops of the body (what the printer can emit).
absl::Status checkOps(const program::KernelSpec &spec);
/// True when expr \p id reads the loop index of one of \p dims.
bool usesDims(const program::KernelSpec &spec, int id, const std::vector<int> &dims);

/// Roles of the tiled dims.
struct Tiling {
  std::vector<int> outer;  ///< TileDim indices looped in Python
  int partition = -1;      ///< TileDim on the partitions (-1: a virtual dim of extent 1)
  int free = -1;           ///< TileDim on the free axis (-1: virtual)
  int64_t rows = 1, cols = 1;
  int64_t freeTile = 1;    ///< FREE_TILE: pointwise tile, whole row or row chunk (reduce)
  bool reduce = false;
  /// reduce: the row does not fit the SBUF budget and is streamed from HBM
  /// in chunks of freeTile, one pass per level of reductions plus one for
  /// the stores (see chooseRowChunk).
  bool chunked = false;
  /// chunked: the row's element loads fit SBUF (at most half the budget)
  /// although its intermediate tiles do not: the loads are read from HBM
  /// once into SBUF-resident rows, and every pass reads chunks of those.
  bool residentLoads = false;
};

/// Largest free size of a Vector/Scalar Engine operand in SBUF (NKI.md
/// section 3: 64K elements per partition).
inline constexpr int64_t kMaxEngineFree = 65536;

/// Row reductions: whole row or streamed chunks (Tiling::chunked).
absl::Status chooseRowChunk(const program::KernelSpec &spec, const Limits &lim, Tiling &t);
/// The tiling of \p spec for \p lim; may split \p plan's one long dim of a
/// pointwise kernel into rows. Errors: Unimplemented (see chooseRowChunk).
absl::StatusOr<Tiling> chooseTiling(const program::KernelSpec &spec, AccessPlan &plan, const Limits &lim);

/// \p body (a printed kernel body) with dead SBUF tiles reused: each
/// `tN = nl.ndarray((P_TILE, X), dtype=D, buffer=nl.sbuf)` takes a tile of
/// the same (X, D) whose last reader has been printed, when one is in scope,
/// instead of a new one (NkiTileReuse.cpp). \p peakBytes, if set, receives
/// the SBUF bytes per partition of the tiles that remain (X = FREE_TILE is
/// \p freeTile elements): the kernel's peak, every tile live to the end.
std::string reuseDeadTiles(const std::string &body, int64_t freeTile, int64_t *peakBytes);

/// SBUF bytes per partition that \p line allocates when it is a printer
/// tile allocation as reuseDeadTiles() reads them (`tN = nl.ndarray((P_TILE,
/// X), dtype=D, buffer=nl.sbuf)`, X = FREE_TILE counted as \p freeTile
/// elements); 0 for any other line. Summed over a body: the SBUF the kernel
/// would need with no tile reused, an upper bound of reuseDeadTiles' peak.
int64_t tileAllocationBytes(const std::string &line, int64_t freeTile);

/// Most taps (reduced-domain points) a window reduction is unrolled over.
inline constexpr int64_t kMaxWindowTaps = 64;

/// \p spec (a row reduction over at most \p maxTaps reduced points, e.g.
/// a pooling window) as a pointwise spec: each reduced index a constant per
/// tap, each sum / prod / max / min the tap values combined in order
/// (NkiWindow.cpp). nullopt when it does not apply: not a reduction, too
/// many taps, ArgMax/ArgMin, or a store inside the row.
std::optional<program::KernelSpec> unrollWindow(const program::KernelSpec &spec, int64_t maxTaps);

}  // namespace fusec::codegen::nki

#endif  // FUSEC_CODEGEN_NKI_NKITILING_H
