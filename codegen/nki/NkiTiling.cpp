//===- NkiTiling.cpp - Tiles of an NKI kernel, and the ops it prints ----===//
//
// See NkiTiling.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/nki/NkiTiling.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/Status.h"

namespace fusec::codegen::nki {

using program::BinaryOp;
using program::Expr;
using program::ExprKind;
using program::KernelSpec;
using program::ReduceKind;
using program::ScalarType;
using program::UnaryOp;

std::string number(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  std::string s = absl::StrFormat("%.9g", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

const char *activationOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp: return "nl.exp";
    case UnaryOp::kLog: return "nl.log";
    case UnaryOp::kSqrt: return "nl.sqrt";
    case UnaryOp::kRsqrt: return "nl.rsqrt";
    case UnaryOp::kRecip: return "nl.reciprocal";
    case UnaryOp::kErf: return "nl.erf";
    case UnaryOp::kTanh: return "nl.tanh";
    case UnaryOp::kSigmoid: return "nl.sigmoid";
    case UnaryOp::kAbs: return "nl.abs";
    case UnaryOp::kSign: return "nl.sign";
    default: return nullptr;
  }
}

const char *aluOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "nl.add";
    case BinaryOp::kSub: return "nl.subtract";
    case BinaryOp::kMul: return "nl.multiply";
    case BinaryOp::kDiv: return "nl.divide";
    case BinaryOp::kMod: return "nl.mod";
    case BinaryOp::kFmod: return "nl.fmod";
    case BinaryOp::kPow: return "nl.power";
    case BinaryOp::kMax: return "nl.maximum";
    case BinaryOp::kMin: return "nl.minimum";
    case BinaryOp::kEq: return "nl.equal";
    case BinaryOp::kNe: return "nl.not_equal";
    case BinaryOp::kLt: return "nl.less";
    case BinaryOp::kLe: return "nl.less_equal";
    case BinaryOp::kGt: return "nl.greater";
    case BinaryOp::kGe: return "nl.greater_equal";
    case BinaryOp::kAnd: return "nl.logical_and";
    case BinaryOp::kOr: return "nl.logical_or";
    case BinaryOp::kXor: return "nl.logical_xor";
    case BinaryOp::kShl: case BinaryOp::kShr: case BinaryOp::kBitAnd: case BinaryOp::kBitOr: case BinaryOp::kBitXor:
    case BinaryOp::kDivU: case BinaryOp::kModU: case BinaryOp::kMaxU: case BinaryOp::kMinU: case BinaryOp::kLtU:
    case BinaryOp::kLeU: case BinaryOp::kGtU: case BinaryOp::kGeU: case BinaryOp::kShrU:
      return nullptr;  // not printed: the group is refused
  }
  return nullptr;
}

bool isIntegerType(ScalarType t) { return t == ScalarType::kI64 || t == ScalarType::kIdx; }

/// Checks the ops of the body (what the printer can emit).
absl::Status checkOps(const KernelSpec &spec) {
  for (int id = 0; id < static_cast<int>(spec.exprs.size()); ++id) {
    const Expr &e = spec.expr(id);
    if (e.type == ScalarType::kF64)
      return absl::UnimplementedError("f64 arithmetic has no NKI engine type");
    if (e.kind == ExprKind::kUnary) {
      auto op = static_cast<UnaryOp>(e.op);
      if (activationOf(op) || op == UnaryOp::kNeg || op == UnaryOp::kNot || op == UnaryOp::kIsNaN ||
          op == UnaryOp::kLog1p || op == UnaryOp::kRoundBF16 || op == UnaryOp::kRoundF16 ||
          op == UnaryOp::kFloor || op == UnaryOp::kCeil || op == UnaryOp::kSin || op == UnaryOp::kCos ||
          op == UnaryOp::kIsPosInf || op == UnaryOp::kIsNegInf)
        continue;
      return absl::UnimplementedError(absl::StrCat(
          "unary '", program::unaryOpName(op),
          "' is not lowered for nki yet"));
    }
    if (e.kind == ExprKind::kBinary && !aluOf(static_cast<BinaryOp>(e.op)))
      return absl::UnimplementedError(absl::StrCat(
          "binary '", program::binaryOpName(static_cast<BinaryOp>(e.op)),
          "' is not lowered for nki yet"));
  }
  for (const program::BufferDesc &b : spec.buffers)
    if (nlDType(b.dtype).empty())
      return absl::UnimplementedError(
          absl::StrCat("buffer dtype ", ir::dtypeName(b.dtype), " has no NKI dtype"));
  return absl::OkStatus();
}

/// True when expr \p id reads the loop index of one of \p dims.
bool usesDims(const KernelSpec &spec, int id, const std::vector<int> &dims) {
  const Expr &e = spec.expr(id);
  if (e.kind == ExprKind::kIndex) return std::count(dims.begin(), dims.end(), static_cast<int>(e.ival)) != 0;
  for (int o : e.operands)
    if (usesDims(spec, o, dims)) return true;
  return e.guard >= 0 && usesDims(spec, e.guard, dims);
}


/// Row reductions: a whole row per partition when the row's tiles fit the
/// SBUF budget (one read of the inputs), otherwise chunks of the row
/// streamed through SBUF (every input read once per pass). The tiles are
/// bounded by the fp32 element tiles the body may hold at once: one per
/// expression that varies along the row (two per load: raw and fp32),
/// plus one. Errors: Unimplemented for arg reductions of a row that does
/// not fit, and for bodies whose tiles exceed the budget even for a chunk
/// of kFreeTile elements.
absl::Status chooseRowChunk(const KernelSpec &spec, const Limits &lim, Tiling &t) {
  int64_t tiles = 0;
  for (int id = 0; id < static_cast<int>(spec.exprs.size()); ++id)
    if (spec.expr(id).kind != ExprKind::kConst && spec.dependsOnReducedDim(id))
      tiles += spec.expr(id).kind == ExprKind::kLoad ? 2 : 1;
  const int64_t bytesPerElem = 4 * (tiles + 1);  // per partition, per row element
  const int64_t budget = sbufBudgetBytes(lim);
  if (t.cols == 0)
    return absl::UnimplementedError(
        "a reduction over an empty axis (0 elements; its result is the reduction's identity) is not "
        "lowered for nki yet");
  t.freeTile = t.cols;
  if (bytesPerElem * t.cols <= budget && t.cols <= kMaxEngineFree) return absl::OkStatus();
  for (const program::Reduction &r : spec.reductions)
    if (r.kind == ReduceKind::kArgMax || r.kind == ReduceKind::kArgMin)
      return absl::UnimplementedError(absl::StrCat(
          "ArgMax/ArgMin over a row of ", t.cols, " elements, which needs ", bytesPerElem * t.cols,
          " bytes of SBUF per partition (budget ", budget, "): arg reductions are not streamed in chunks yet"));
  // The loads alone fit (one fp32 row per load, at most half the budget):
  // keep them resident, so the passes read SBUF, not HBM (NKI.md: one HBM
  // read of the data); the chunks get the rest of the budget.
  int64_t loads = 0;
  for (int id = 0; id < static_cast<int>(spec.exprs.size()); ++id)
    if (spec.expr(id).kind == ExprKind::kLoad && spec.dependsOnReducedDim(id)) ++loads;
  const int64_t resident = 4 * t.cols * loads;
  if (loads > 0 && resident <= budget / 2) {
    const int64_t rchunk = std::min(kMaxEngineFree, (budget - resident) / bytesPerElem) / kFreeTile * kFreeTile;
    if (rchunk >= kFreeTile) {
      t.chunked = true;
      t.residentLoads = true;
      t.freeTile = rchunk;
      return absl::OkStatus();
    }
  }
  const int64_t chunk = std::min(kMaxEngineFree, budget / bytesPerElem) / kFreeTile * kFreeTile;
  if (chunk < kFreeTile)
    return absl::UnimplementedError(absl::StrCat("a row reduction whose body holds ", tiles,
                                                 " row tiles does not fit the SBUF budget (", budget,
                                                 " bytes per partition) even in chunks of ", kFreeTile));
  t.chunked = true;
  t.freeTile = chunk;
  return absl::OkStatus();
}

absl::StatusOr<Tiling> chooseTiling(const KernelSpec &spec, AccessPlan &plan, const Limits &lim) {
  Tiling t;
  t.reduce = spec.kind == program::SpecKind::kReduce;
  std::vector<int> par, red;
  for (int i = 0; i < static_cast<int>(plan.dims.size()); ++i)
    (plan.dims[i].reduced ? red : par).push_back(i);
  if (t.reduce) {
    if (red.size() > 1)
      return absl::UnimplementedError(
          "the reduced axes are not contiguous in every buffer: not lowered for nki yet");
    if (!red.empty()) t.free = red[0];
    if (!par.empty()) {
      t.partition = par.back();
      par.pop_back();
    }
    t.outer = par;
  } else {
    // One long dim: split it into rows of a divisor <= FREE_TILE so that the
    // partitions are used (a split keeps every access affine).
    if (par.size() == 1 && !plan.dims[par[0]].valueUsed && plan.dims[par[0]].extent > kFreeTile) {
      TileDim d = plan.dims[par[0]];
      // Prefer the largest free size that still leaves 128 rows (all
      // partitions busy), else the largest divisor <= FREE_TILE.
      int64_t f = 0;
      for (int64_t c = kFreeTile; c >= 16 && !f; --c)
        if (d.extent % c == 0 && d.extent / c >= lim.partitions) f = c;
      if (!f) {
        f = kFreeTile;
        while (d.extent % f != 0) --f;
      }
      if (f >= 16) {
        TileDim inner = d, outer = d;
        outer.extent = d.extent / f;
        inner.extent = f;
        for (size_t i = 0; i < d.stride.size(); ++i) outer.stride[i] = d.stride[i] * f;
        plan.dims[par[0]] = outer;
        plan.dims.insert(plan.dims.begin() + par[0] + 1, inner);
        par.push_back(par[0] + 1);
      }
    }
    if (!par.empty()) {
      t.free = par.back();
      par.pop_back();
    }
    if (!par.empty()) {
      t.partition = par.back();
      par.pop_back();
    }
    t.outer = par;
  }
  if (t.partition >= 0) t.rows = plan.dims[t.partition].extent;
  if (t.free >= 0) t.cols = plan.dims[t.free].extent;
  t.freeTile = std::min(t.cols, kFreeTile);
  if (t.reduce) FUSEC_RETURN_IF_ERROR(chooseRowChunk(spec, lim, t));
  return t;
}

}  // namespace fusec::codegen::nki
